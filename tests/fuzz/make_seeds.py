#!/usr/bin/env python3
# make_seeds.py - writes the small seed corpus of the fuzz targets
# (corpus/fuzz_pprof, corpus/fuzz_push, corpus/fuzz_pushbound, corpus/fuzz_multipart,
# corpus/fuzz_symcache)
# with hand-rolled protobuf and symbol-cache encoders, so it needs nothing but
# the Python standard library.
import base64, gzip, json, os, struct, sys, zlib

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "integration", "fixtures"))
from pbwire import varint

def key(field, wire):
    return varint(field << 3 | wire)

def vint(field, v):
    return key(field, 0) + varint(v & (2**64 - 1))

def ld(field, data):
    return key(field, 2) + varint(len(data)) + data

def packed(field, vals):
    return ld(field, b"".join(varint(v & (2**64 - 1)) for v in vals))

def profile(native=True, labels=False, unpacked=False):
    strings = ["", "samples", "count", "cpu", "nanoseconds", "/usr/bin/app",
               "abcdef0123456789", "main", "main.c", "work", "endpoint", "/api"]
    s = {x: i for i, x in enumerate(strings)}
    out = b""
    out += ld(1, vint(1, s["samples"]) + vint(2, s["count"]))
    out += ld(1, vint(1, s["cpu"]) + vint(2, s["nanoseconds"]))
    samples = [([1, 2], [3, 30000000]), ([2], [1, 10000000])]
    for i, (locs, vals) in enumerate(samples):
        body = b""
        if unpacked:
            body += b"".join(vint(1, l) for l in locs) + b"".join(vint(2, v) for v in vals)
        else:
            body += packed(1, locs) + packed(2, vals)
        if labels and i == 0:
            body += ld(3, vint(1, s["endpoint"]) + vint(2, s["/api"]))
        out += ld(2, body)
    out += ld(3, vint(1, 1) + vint(2, 0x400000) + vint(3, 0x500000) + vint(4, 0x1000)
              + vint(5, s["/usr/bin/app"]) + vint(6, s["abcdef0123456789"])
              + (b"" if native else vint(7, 1)))
    for lid, fid, addr in ((1, 1, 0x400100), (2, 2, 0x400200)):
        loc = vint(1, lid) + vint(2, 1) + vint(3, addr)
        if not native:
            loc += ld(4, vint(1, fid) + vint(2, 10 * lid))
        out += ld(4, loc)
    if not native:
        out += ld(5, vint(1, 1) + vint(2, s["work"]) + vint(3, s["work"]) + vint(4, s["main.c"]))
        out += ld(5, vint(1, 2) + vint(2, s["main"]) + vint(3, s["main"]) + vint(4, s["main.c"]))
    for x in strings:
        out += ld(6, x.encode())
    out += vint(9, 1700000000000000000) + vint(10, 10000000000)
    out += ld(11, vint(1, s["cpu"]) + vint(2, s["nanoseconds"])) + vint(12, 10000000)
    return out

def push_binary(pprof):
    lab = ld(1, ld(1, b"__name__") + ld(2, b"process_cpu")) + \
          ld(1, ld(1, b"service_name") + ld(2, b"seed"))
    return ld(1, lab + ld(2, ld(1, pprof) + ld(2, b"id-1")))

def push_json(pprof, url=False):
    enc = base64.urlsafe_b64encode if url else base64.b64encode
    doc = {"series": [{"labels": [{"name": "__name__", "value": "process_cpu"},
                                  {"name": "service_name", "value": "seed"}],
                       "samples": [{"rawProfile" if not url else "raw_profile":
                                    enc(pprof).decode(), "ID": "x"}]}]}
    return json.dumps(doc).encode()

def multipart(boundary, fields, nl=b"\r\n", close=True, preamble=b""):
    # fuzz_multipart's input: the Content-Type line, then the body.
    out = preamble
    for name, filename, data in fields:
        disp = b'form-data; name="%s"' % name
        if filename:
            disp += b'; filename="%s"' % filename
        out += b"--" + boundary + nl + b"Content-Disposition: " + disp + nl
        out += b"Content-Type: application/octet-stream" + nl + nl + data + nl
    if close:
        out += b"--" + boundary + b"--" + nl
    ct = b"multipart/form-data; boundary=" + boundary
    if b" " in boundary:
        ct = b'multipart/form-data; boundary="' + boundary + b'"'
    return ct + b"\n" + out

here = os.path.dirname(os.path.abspath(__file__))
def write(target, name, data):
    d = os.path.join(here, "corpus", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)

native, go = profile(True), profile(False, labels=True)
write("fuzz_pprof", "native_raw.pb", native)
write("fuzz_pprof", "native.pb.gz", gzip.compress(native, mtime=0))
write("fuzz_pprof", "go_labels_raw.pb", go)
write("fuzz_pprof", "unpacked_raw.pb", profile(True, unpacked=True))
write("fuzz_push", "binary.bin", b"\x00" + push_binary(gzip.compress(go, mtime=0)))
write("fuzz_push", "json.json", b"\x01" + push_json(gzip.compress(native, mtime=0)))
write("fuzz_push", "json_urlsafe.json", b"\x01" + push_json(native, url=True))
write("fuzz_pushbound", "gzip.bin", push_binary(gzip.compress(go, mtime=0)))
write("fuzz_pushbound", "raw.bin", push_binary(native))
# Two samples, the second's raw_profile given twice (the last one counts).
write("fuzz_pushbound", "two_samples.bin",
      ld(1, ld(2, ld(1, gzip.compress(native, mtime=0))) +
            ld(2, ld(1, b"x") + ld(1, gzip.compress(go, mtime=0)) + ld(2, b"id-2"))))
pyroscope = [(b"profile", b"profile.pprof", gzip.compress(native, mtime=0)),
             (b"sample_type_config", b"sample_type_config.json",
              b'{"cpu":{"units":"nanoseconds","display-name":"cpu"}}')]
write("fuzz_multipart", "pyroscope.txt", multipart(b"a1b2c3d4e5", pyroscope))
write("fuzz_multipart", "quoted_lf.txt",
      multipart(b"with space", [(b"profile", None, native)], nl=b"\n",
                preamble=b"preamble line\r\n"))
write("fuzz_multipart", "unclosed.txt", multipart(b"x", [(b"profile", None, b"abc")], close=False))

# fuzz_symcache: symbol-cache values (debuginfo/debuginfo_int.h): version 1,
# a count, then per frame flags, line, column, function and file.
def symcache(frames):
    out = b"\x01" + varint(len(frames))
    for flags, line, col, fn, path in frames:
        out += varint(flags) + varint(line) + varint(col)
        out += varint(len(fn)) + fn + varint(len(path)) + path
    return out

write("fuzz_symcache", "none.bin", symcache([]))
write("fuzz_symcache", "leaf.bin", symcache([(0, 16, 5, b"work", b"/src/prog.c")]))
write("fuzz_symcache", "inline_chain.bin", symcache([
    (1, 3, 9, b"leaf", b"/src/inl.h"), (1, 7, 11, b"mid", b"/src/prog.c"),
    (1, 12, 9, b"top", b"/src/prog.c"), (0, 16, 9, b"work", b"/src/prog.c")]))
write("fuzz_symcache", "symtab_only.bin", symcache([(2, 0, 0, b"std::vector<int>::push_back(int&&)", b"")]))

# fuzz_symindex: symbol indexes (symbolize/symbolize_int.h, version 2): the
# 128-byte header, range starts and locations, 24-byte locations, strtab;
# the CRC-32 covers the header's first 124 bytes and everything after it.
def symindex(base, ranges, locs, strtab, build_id=b"\x4a\x5a\x9b\x0a" * 5):
    none = 0xffffffff
    n_r, n_l = len(ranges), len(locs)
    r = 128
    rl = r + 4 * n_r
    l = rl + 4 * n_r
    s = l + 24 * n_l
    size = s + len(strtab)
    body = b"".join(struct.pack("<I", a) for a, _ in ranges)
    body += b"".join(struct.pack("<I", none if i is None else i) for _, i in ranges)
    for fn, path, line, col, parent, flags in locs:
        body += struct.pack("<6I", none if fn is None else fn, none if path is None else path,
                            line, col, none if parent is None else parent, flags)
    body += strtab
    head = b"UNHXSYMI" + struct.pack("<IIQIIII", 2, 128, base, n_r, n_l, len(strtab),
                                     len(build_id))
    head += build_id.ljust(64, b"\0") + struct.pack("<5I", r, rl, l, s, size)
    crc = zlib.crc32(body, zlib.crc32(head))
    return head + struct.pack("<I", crc) + body

write("fuzz_symindex", "inline_chain.bin", symindex(
    0x1000, [(0, 1), (0x10, 0), (0x20, None)],
    [(0, 5, 16, 9, None, 0), (17, 22, 3, 5, 0, 1)],
    b"work\0/src/prog.c\0leaf\0/src/inl.h\0"))
write("fuzz_symindex", "empty.bin", symindex(0, [(0, None)], [], b"\0"))

# fuzz_bucketidx: bucket index objects (storage/storage_int.h section 12);
# the target sets the CRC itself.
def uv(v):
    out = b""
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])

def sv(v):
    return uv((v << 1) ^ (v >> 63) if v >= 0 else ((-v) << 1) - 1)

def bkt_block(hi, lo, level, covers, mark=0):
    bid = bytes([hi]) + bytes(14) + bytes([lo])
    out = bid + uv(level) + sv(1700006400 * 10**9) + uv(600 * 10**9) + uv(10**9) + uv(5 * 10**9)
    out += uv(4096) + uv(3) + uv(10) + uv(77) + uv(len(covers))
    for h, l in covers:
        out += bytes([h]) + bytes(14) + bytes([l])
    out += uv(mark) + (sv(1700006400 * 10**9) if mark else b"")
    return out

def bkt_index(tenants):
    body = sv(1700006400 * 10**9) + uv(len(tenants))
    for name, blocks in tenants:
        body += uv(len(name)) + name + uv(len(blocks)) + b"".join(blocks)
    return b"UNHXBKTI" + bytes([1, 0, 0, 0]) + bytes(4) + body

write("fuzz_bucketidx", "empty.bin", bkt_index([]))
write("fuzz_bucketidx", "compacted.bin", bkt_index([
    (b"a", [bkt_block(0, 1, 0, [], 1), bkt_block(0, 2, 0, [], 1),
            bkt_block(5, 1, 1, [(0, 1), (0, 2)]), bkt_block(5, 2, 1, [(0, 1), (0, 2)], 2)]),
    (b"tenant%2F2", [bkt_block(0, 3, 0, [])])]))

# fuzz_direfs: debuginfo-refs objects (storage/storage_int.h section 13);
# the target sets the CRC itself.
def direfs(ids, tenants):
    body = sv(1700006400 * 10**9) + uv(len(ids))
    for bid, last in ids:
        body += uv(len(bid)) + bid + sv(last)
    body += uv(len(tenants))
    for name, blocks in tenants:
        body += uv(len(name)) + name + uv(len(blocks))
        for lo, refs in blocks:
            body += bytes(15) + bytes([lo]) + uv(len(refs))
            prev = None
            for r in refs:
                body += uv(r if prev is None else r - prev - 1)
                prev = r
    return b"UNHXDIRF" + bytes([1, 0, 0, 0]) + bytes(4) + body

write("fuzz_direfs", "empty.bin", direfs([], []))
write("fuzz_direfs", "two.bin", direfs(
    [(b"aa00", 1700006400 * 10**9), (b"bb01", 1700006500 * 10**9), (b"cc", -5)],
    [(b"t", [(1, [0, 2]), (2, [])]), (b"u", [(1, [1])])]))

# fuzz_headreq: head-block request bodies (storage/storage_int.h section
# 13); the first byte is the format.
def bid(hi, lo):
    return struct.pack(">QQ", hi, lo)

def headreq(ids, labels):
    body = uv(len(ids)) + b"".join(ids) + uv(len(labels))
    for name, value in labels:
        body += uv(len(name)) + name + uv(len(value)) + value
    return b"\x02" + body

write("fuzz_headreq", "ids.bin", b"\x01" + bid(1, 1) + bid(1, 2) + bid(7, 0))
write("fuzz_headreq", "empty.bin", b"\x01")
write("fuzz_headreq", "service.bin", headreq([bid(1, 1), bid(2, 0)],
    [(b"service_name", b"api")]))
write("fuzz_headreq", "selector.bin", headreq([],
    [(b"__profile_type__", b"process_cpu:cpu:nanoseconds:cpu:nanoseconds"),
     (b"pod", b"p0"), (b"service_name", b"api"), (b"service_name", b"db")]))

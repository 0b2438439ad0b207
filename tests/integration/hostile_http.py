#!/usr/bin/env python3
"""hostile_http.py - raw-socket probes of tests/integration/hostile_http.sh.

Each subcommand prints one line of key=value results that the shell script
asserts on; none of them judges timing against a tight bound.
"""
import socket
import statistics
import sys
import time


def read_response(f):
    """Status, headers (lower-case names) and body of one HTTP/1.1 response."""
    line = f.readline()
    if not line:
        return None, {}, b""
    status = int(line.split()[1])
    headers = {}
    while True:
        h = f.readline()
        if h in (b"\r\n", b"\n", b""):
            break
        k, _, v = h.decode("latin-1").partition(":")
        headers[k.strip().lower()] = v.strip()
    body = f.read(int(headers.get("content-length", "0")))
    return status, headers, body


def keepalive(port, n):
    """n GET /ready on one connection: the median and 99th percentile in ms."""
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    req = b"GET /ready HTTP/1.1\r\nHost: t\r\n\r\n"
    times = []
    for _ in range(n):
        t = time.perf_counter()
        s.sendall(req)
        status, _, body = read_response(f)
        times.append(time.perf_counter() - t)
        if status != 200 or body != b"ready\n":
            print("status=%s body=%r" % (status, body))
            return
    times.sort()
    print("status=200 median_ms=%.3f p99_ms=%.3f" %
          (statistics.median(times) * 1000, times[int(n * 0.99) - 1] * 1000))


FRAMING = {
    # The first Content-Length would frame 5 bytes and leave a second
    # request on the connection (smuggling behind a proxy that used the last).
    "dup_cl": b"POST /ingest?name=a.cpu HTTP/1.1\r\nHost: t\r\nContent-Length: 5\r\n"
              b"Content-Length: 44\r\n\r\nhelloGET /ready HTTP/1.1\r\nHost: t\r\n\r\n",
    "cl_chunked": b"POST /ingest?name=a.cpu HTTP/1.1\r\nHost: t\r\nContent-Length: 4\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "chunked_cl": b"POST /ingest?name=a.cpu HTTP/1.1\r\nHost: t\r\nTransfer-Encoding: chunked"
                  b"\r\nContent-Length: 4\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    "bare_lf": b"GET /ready HTTP/1.1\nHost: t\nAccept: */*\n\n",
    "bare_lf_header": b"GET /ready HTTP/1.1\r\nHost: t\nAccept: */*\r\n\r\n",
    "cl_list": b"POST /ingest?name=a.cpu HTTP/1.1\r\nHost: t\r\nContent-Length: 5, 5\r\n"
               b"\r\nhello",
    "cl_junk": b"POST /ingest?name=a.cpu HTTP/1.1\r\nHost: t\r\nContent-Length: 5x\r\n\r\nhello",
    "no_host": b"GET /ready HTTP/1.1\r\n\r\n",
    "good": b"GET /ready HTTP/1.1\r\nHost: t\r\n\r\n",
}


def framing(port, name):
    """Sends one framing probe: its status, message, and whether the server
    then closed the connection (a second request must get nothing)."""
    s = socket.create_connection(("127.0.0.1", port), timeout=30)
    s.sendall(FRAMING[name])
    f = s.makefile("rb")
    status, headers, body = read_response(f)
    try:
        s.sendall(b"GET /ready HTTP/1.1\r\nHost: t\r\n\r\n")
        again, _, _ = read_response(f)
    except OSError:
        again = None
    print("status=%s closed=%d message=%s" %
          (status, again is None, body.decode("utf-8", "replace").strip().replace(" ", "_")))


def connect_from(port, src):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((src, 0))
    s.connect(("127.0.0.1", port))
    return s


def peer_closed(s):
    """None while the server keeps s open, else what it sent before closing
    (b"" for nothing, or a reset)."""
    try:
        s.setblocking(False)
        data = s.recv(4096)
    except BlockingIOError:
        return None
    except OSError:
        return b""
    finally:
        s.setblocking(True)
    if data:
        s.settimeout(2)
        try:
            while True:
                more = s.recv(4096)
                if not more:
                    break
                data += more
        except OSError:
            pass
    return data


def trickle(port, n, mode, interval, duration):
    """n connections, one per source address 127.0.0.2.., each sending one
    byte every `interval` s for at most `duration` s: of the request's
    headers (mode "header") or, after complete headers declaring 1000 bytes,
    of its body (mode "body").  Prints how many the server ended, and how
    many it answered 408."""
    conns, pending, ended, got408 = [], [], 0, 0
    head = (b"POST /ingest?name=trickle.cpu HTTP/1.1\r\nHost: t\r\n"
            b"Content-Length: 1000\r\n\r\n")
    for i in range(n):
        s = connect_from(port, "127.0.0.%d" % (2 + i % 250))
        if mode == "body":
            s.sendall(head)
            pending.append(b"x" * 1000)
        else:
            pending.append(head)
        conns.append(s)
    print("opened=%d" % n, file=sys.stderr, flush=True)
    alive = set(range(n))
    t0 = time.monotonic()
    while alive and time.monotonic() - t0 < duration:
        for i in list(alive):
            s = conns[i]
            data = peer_closed(s)
            if data is not None:
                if b" 408 " in data[:16]:
                    got408 += 1
                ended += 1
                alive.discard(i)
                continue
            try:
                s.setblocking(True)
                s.sendall(pending[i][:1])
                pending[i] = pending[i][1:] or pending[i]
            except OSError:
                ended += 1
                alive.discard(i)
        time.sleep(interval)
    print("ended=%d of=%d got408=%d seconds=%.1f" % (ended, n, got408, time.monotonic() - t0))


def cap(port, src, n):
    """n kept-alive connections from address src, each asking GET /ready
    once and staying open: how many got 200 and how many 429."""
    conns, codes = [], {}
    for _ in range(n):
        s = connect_from(port, src)
        s.sendall(b"GET /ready HTTP/1.1\r\nHost: t\r\n\r\n")
        status, _, _ = read_response(s.makefile("rb"))
        codes[status] = codes.get(status, 0) + 1
        conns.append(s)
    print("ok=%d refused=%d of=%d" % (codes.get(200, 0), codes.get(429, 0), n))


def idle(port, limit):
    """One request on a connection, then silence: after how many seconds the
    server closes it (gives up after `limit` s)."""
    s = socket.create_connection(("127.0.0.1", port))
    f = s.makefile("rb")
    s.sendall(b"GET /ready HTTP/1.1\r\nHost: t\r\n\r\n")
    status, _, _ = read_response(f)
    t0 = time.monotonic()
    s.settimeout(limit)
    try:
        data = s.recv(1)
    except socket.timeout:
        data = None
    except OSError:
        data = b""
    print("status=%s closed=%d after=%.1f" % (status, data == b"", time.monotonic() - t0))


def membomb(port, n, mib, gz):
    """n concurrent POST /ingest of `mib` MiB of empty pprof string-table
    entries (the most memory per body byte, issue 15), gzipped when gz.
    Prints the statuses and whether every 503 said Retry-After."""
    import gzip
    import http.client
    import threading
    body = b"\x32\x00" * (mib << 19)
    if gz:
        body = gzip.compress(body, 1)
    results = []

    def one():
        try:
            c = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            c.request("POST", "/ingest?name=bomb.cpu&format=pprof", body=body)
            r = c.getresponse()
            r.read()
            results.append((r.status, r.getheader("Retry-After")))
        except OSError as e:
            results.append((0, str(e)))

    threads = [threading.Thread(target=one) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    codes = {}
    for st, _ in results:
        codes[st] = codes.get(st, 0) + 1
    retry = all(ra for st, ra in results if st == 503)
    print("codes=%s retry_after=%d" %
          (",".join("%d:%d" % kv for kv in sorted(codes.items())), retry))


def main():
    cmd, port = sys.argv[1], int(sys.argv[2])
    if cmd == "keepalive":
        keepalive(port, int(sys.argv[3]))
    elif cmd == "framing":
        framing(port, sys.argv[3])
    elif cmd == "trickle":
        trickle(port, int(sys.argv[3]), sys.argv[4], float(sys.argv[5]), float(sys.argv[6]))
    elif cmd == "cap":
        cap(port, sys.argv[3], int(sys.argv[4]))
    elif cmd == "idle":
        idle(port, float(sys.argv[3]))
    elif cmd == "membomb":
        membomb(port, int(sys.argv[3]), int(sys.argv[4]), sys.argv[5] == "gz")
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()

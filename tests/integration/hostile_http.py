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


def main():
    cmd, port = sys.argv[1], int(sys.argv[2])
    if cmd == "keepalive":
        keepalive(port, int(sys.argv[3]))
    elif cmd == "framing":
        framing(port, sys.argv[3])
    else:
        sys.exit("unknown command " + cmd)


if __name__ == "__main__":
    main()

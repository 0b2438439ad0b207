#!/usr/bin/env bash
# hostile_http.sh - the HTTP layer under hostile load (issue 15), on the real
# server: kept-alive connections answer at once (no Nagle/delayed-ACK wait);
# ambiguous framing (two Content-Lengths, Content-Length with chunked, bare LF)
# is refused and the connection closed.
# The probes are raw sockets in hostile_http.py; assertions are on outcomes
# (statuses, "served at all"), with bounds far from what a loaded machine
# could miss.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
PROBE="python3 $HERE/hostile_http.py"

start_server "$WORK/data"

# ---- keep-alive: 500 GET /ready on one connection.  Before TCP_NODELAY and
# one write per response each took 44 ms (Nagle meets delayed ACK); the bound
# of 20 ms is that signature halved, far above the sub-millisecond normal.
out=$($PROBE keepalive "$PORT" 500)
note "keep-alive /ready: $out"
[[ $out =~ status=200\ median_ms=([0-9.]+) ]] || fail "keep-alive probe: $out"
awk -v m="${BASH_REMATCH[1]}" 'BEGIN { exit !(m < 20) }' ||
	fail "keep-alive /ready median ${BASH_REMATCH[1]} ms: responses wait for a delayed ACK"

# ---- strict framing: what two parsers could read differently gets 400 with
# a message, and the connection is closed (nothing after it is served).
for probe in dup_cl cl_chunked chunked_cl bare_lf bare_lf_header cl_list cl_junk no_host; do
	out=$($PROBE framing "$PORT" $probe)
	note "framing $probe: $out"
	[[ $out =~ ^status=400\ closed=1\ message=.+ ]] || fail "framing probe $probe: $out"
done
out=$($PROBE framing "$PORT" good)
[[ $out == "status=200 closed=0 message=ready" ]] || fail "a well-framed request: $out"

stop_server
note "hostile_http: all probes bounded"

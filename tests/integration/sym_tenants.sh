#!/usr/bin/env bash
# sym_tenants.sh - per-tenant symbolization settings end to end
# (docs/symbolization.md, "Per-tenant settings"): a real C program built
# with -g, split and stripped, profiled for real; its debug file served by
# a real elfutils debuginfod on loopback, behind a small reverse proxy
# (python3 http.server) that answers 401 to requests without the expected
# Authorization header and forwards the others, logging which tenant's
# probe header each request carried (never the secret).  The limits file
# gives:
#   ta  the proxy as its own upstream, with the header   -> names
#   tb  the proxy as its own upstream, without a header  -> upstream_error,
#       the proxy's refusal, and not A's copy
#   tc  symbolization=off (its own list and headers too) -> disabled, hex,
#       nothing fetched, not tracked as unsymbolizable
#   te  debuginfod_urls=none                             -> not_found, not
#       A's copy
#   td  no line: the server's --debuginfod-urls (the debuginfod itself,
#       with --debuginfod-headers-file)                  -> names
# The proxy's log proves tc and the server's upstreams never reached it,
# and the secret appears neither in the server's log nor in /metrics nor
# in any answer.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need PERF2PPROF
need_cmd debuginfod "package debuginfod"
need_cmd python3

PROXY_PID=
stop_proxy() {
	if [ -n "$PROXY_PID" ]; then
		kill "$PROXY_PID" 2>/dev/null || true
		wait "$PROXY_PID" 2>/dev/null || true
		PROXY_PID=
	fi
}
# set +e: under errexit `(exit $rc)` would end the trap before cleanup.
trap 'rc=$?; stop_proxy; stop_debuginfod; set +e; (exit $rc); cleanup' EXIT

SECRET="s3cr3t-$RANDOM$RANDOM-tenant-a"

# ---- a real program, split and stripped, profiled for real
{
	cat <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
__attribute__((noinline)) unsigned tenant_hot_loop(unsigned x)
{
	unsigned s = 0;
	for (unsigned i = 0; i < 20000; i++)
		s += (i ^ x) * 2654435761u + (s >> 3);
	return s;
}
__attribute__((noinline)) static unsigned tenant_caller(volatile unsigned *p)
{
	return *p + tenant_hot_loop(*p);
}
EOF
	c_timed_main 1 'acc += tenant_caller(&v);' 'v++;'
} >"$WORK/tprog.c"
cc -g -O2 -Wl,--build-id -o "$WORK/tprog" "$WORK/tprog.c"
split_debug "$WORK/tprog"
ID=$(build_id "$WORK/tprog")
[ -n "$ID" ] || fail "tprog has no build ID"
profile_to_pprof "$WORK/tprog.pb.gz" "$WORK/tprog.stripped" 1
note "build ID $ID"

# ---- the upstream: a real debuginfod, and the authenticating proxy before it
mkdir -p "$WORK/upstream"
cp "$WORK/tprog.debug" "$WORK/upstream/"
start_debuginfod "$WORK/upstream" "$ID"

cat >"$WORK/proxy.py" <<'EOF'
# A reverse proxy that wants "Authorization: Bearer <secret>": 401 without
# it, else the upstream's answer.  One log line per request: the path, the
# X-Tenant-Probe header, whether Authorization matched, the status.
import http.server, sys, urllib.error, urllib.request

upstream, secret, port_file, log_file = sys.argv[1:5]
want = "Bearer " + secret

class Proxy(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        got = self.headers.get("Authorization")
        auth = "none" if got is None else ("ok" if got == want else "wrong")
        probe = self.headers.get("X-Tenant-Probe", "-")
        code, body = 401, b"credentials required\n"
        if auth == "ok":
            try:
                with urllib.request.urlopen(upstream + self.path, timeout=30) as r:
                    code, body = r.status, r.read()
            except urllib.error.HTTPError as e:
                code, body = e.code, b""
        with open(log_file, "a") as f:
            f.write("%s probe=%s auth=%s code=%d\n" % (self.path, probe, auth, code))
        self.send_response(code)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass

srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Proxy)
with open(port_file + ".tmp", "w") as f:
    f.write(str(srv.server_address[1]))
import os
os.rename(port_file + ".tmp", port_file)
srv.serve_forever()
EOF
: >"$WORK/proxy.log"
python3 "$WORK/proxy.py" "$DURL" "$SECRET" "$WORK/proxy.port" "$WORK/proxy.log" \
	2>"$WORK/proxy.err" &
PROXY_PID=$!
for i in $(seq 1 100); do
	[ -s "$WORK/proxy.port" ] && break
	kill -0 "$PROXY_PID" 2>/dev/null || fail "proxy exited: $(cat "$WORK/proxy.err")"
	sleep 0.1
done
[ -s "$WORK/proxy.port" ] || fail "the proxy did not start"
PURL="http://127.0.0.1:$(cat "$WORK/proxy.port")"
code=$(curl -s -o /dev/null -w '%{http_code}' "$PURL/buildid/$ID/debuginfo")
[ "$code" = 401 ] || fail "the proxy let a request without credentials through: $code"
code=$(curl -s -o /dev/null -w '%{http_code}' -H "Authorization: Bearer $SECRET" \
	"$PURL/buildid/$ID/debuginfo")
[ "$code" = 200 ] || fail "the proxy refused the credentials: $code"
: >"$WORK/proxy.log"
note "proxy on $PURL in front of $DURL"

# ---- the settings
umask 077
printf 'Authorization: Bearer %s\nX-Tenant-Probe: a\n' "$SECRET" >"$WORK/a.headers"
printf 'Authorization: Bearer %s\nX-Tenant-Probe: c\n' "$SECRET" >"$WORK/c.headers"
printf 'X-Tenant-Probe: server\n' >"$WORK/server.headers"
umask 022
cat >"$WORK/limits" <<EOF
tenant ta debuginfod_urls=$PURL debuginfod_headers_file=$WORK/a.headers
tenant tb debuginfod_urls=$PURL
tenant tc symbolization=off debuginfod_urls=$PURL debuginfod_headers_file=$WORK/c.headers
tenant te debuginfod_urls=none
EOF

# A bad line stops the server, naming it.
printf 'tenant tx debuginfod_urls=ftp://nowhere\n' >"$WORK/limits.bad"
if timeout 60 "$UNHEX" serve --data "$WORK/bad" --listen 127.0.0.1:0 --limits-file "$WORK/limits.bad" \
	>/dev/null 2>"$WORK/bad.err"; then
	fail "a limits file with an ftp upstream was accepted"
fi
grep -q 'limits file, line 1: debuginfod_urls wants' "$WORK/bad.err" ||
	fail "the refusal does not name the line: $(cat "$WORK/bad.err")"
printf 'Authorization Bearer %s\n' "$SECRET" >"$WORK/bad.headers"
printf 'tenant tx debuginfod_urls=%s debuginfod_headers_file=%s\n' "$PURL" "$WORK/bad.headers" \
	>"$WORK/limits.bad"
if timeout 60 "$UNHEX" serve --data "$WORK/bad" --listen 127.0.0.1:0 --limits-file "$WORK/limits.bad" \
	>/dev/null 2>"$WORK/bad.err"; then
	fail "a malformed headers file was accepted"
fi
grep -q "bad.headers, line 1" "$WORK/bad.err" || fail "headers file refusal: $(cat "$WORK/bad.err")"
! grep -q "$SECRET" "$WORK/bad.err" || fail "the refusal of a headers file shows its secret"
note "bad settings refused: $(tail -1 "$WORK/bad.err")"

start_server "$WORK/data" --limits-file "$WORK/limits" --debuginfod-urls "$DURL" \
	--debuginfod-headers-file "$WORK/server.headers" --symbolize-budget 20s
# ingest_for TENANT...: the profile, stored for each TENANT.
ingest_for() {
	local t
	for t in "$@"; do
		"$UNHEX" ingest --server "$URL" --tenant "$t" --name tprog.cpu "$WORK/tprog.pb.gz" \
			>/dev/null || fail "ingest for $t"
	done
}
# ta first, alone: otherwise ingest's background check could fetch the file
# through the server's upstreams for td (every tenant's, then) before ta
# asks its own, and ta's request would never reach the proxy.
ingest_for ta
http GET "/pyroscope/label-values?label=__profile_type__" -H "X-Scope-OrgID: ta"
TYPE=$(jq -r '.[]' <<<"$BODY" | grep -m1 ':cpu:nanoseconds' || jq -r '.[0]' <<<"$BODY")
Q=$(selector "$TYPE" tprog)
ANSWERS="$WORK/answers"
: >"$ANSWERS"

# render_for TENANT: BODY is the tenant's flame graph once nothing is pending.
render_for() {
	wait_symbolized "$Q" now-1h now -H "X-Scope-OrgID: $1"
	echo "$BODY" >>"$ANSWERS"
}
# status_of: the status and reason of tprog's build ID in $BODY.
status_of() {
	jq -r --arg id "$ID" '[.symbolization.buildIds[]? | select(.buildId == $id)][0] |
		"\(.status // "none")\t\(.reason // "")"' <<<"$BODY"
}
named() {
	jq -e '.flamebearer.names | index("tenant_hot_loop") != null' <<<"$BODY" >/dev/null
}

# ---- A: its own upstream, with the header: names
render_for ta
named || fail "ta: tenant_hot_loop not named: $(jq -c .symbolization <<<"$BODY")"
grep -q "^/buildid/$ID/debuginfo probe=a auth=ok code=200$" "$WORK/proxy.log" ||
	fail "ta's fetch did not go through the proxy with its header: $(cat "$WORK/proxy.log")"
note "ta: named through the authenticated upstream"
ingest_for tb tc td te
http GET "/api/v1/debuginfo/$ID" -H "X-Scope-OrgID: ta"
expect_status 200 '"source":"debuginfod"' "ta sees the record"
jq -e '.shared == false' <<<"$BODY" >/dev/null || fail "ta's fetched file is shared: $BODY"
echo "$BODY" >>"$ANSWERS"

# ---- B: the same upstream without the header: the refusal, not A's copy
render_for tb
! named || fail "tb got names from ta's copy"
IFS=$'\t' read -r st reason < <(status_of)
[ "$st" = upstream_error ] || fail "tb: status $st ($reason), want upstream_error"
case "$reason" in
*"refused the request (HTTP 401)"*) ;;
*) fail "tb: reason does not say the upstream refused: $reason" ;;
esac
grep -q "^/buildid/$ID/debuginfo probe=- auth=none code=401$" "$WORK/proxy.log" ||
	fail "tb's request did not reach the proxy without credentials: $(cat "$WORK/proxy.log")"
note "tb: $st: $reason"

# ---- E: no upstream at all: not found, not A's copy
render_for te
! named || fail "te got names from ta's copy"
IFS=$'\t' read -r st reason < <(status_of)
[ "$st" = not_found ] || fail "te: status $st ($reason), want not_found"
case "$reason" in *"no debuginfod upstream"*) ;; *) fail "te: reason $reason" ;; esac
note "te: $st: $reason"

# ---- C: symbolization off: disabled, frames as stored, nothing fetched
render_for tc
! named || fail "tc got names with symbolization off"
jq -e '.symbolization.disabled == true' <<<"$BODY" >/dev/null ||
	fail "tc: the answer does not say symbolization is disabled: $(jq -c .symbolization <<<"$BODY")"
IFS=$'\t' read -r st reason < <(status_of)
[ "$st" = disabled ] || fail "tc: status $st ($reason), want disabled"
case "$reason" in *"symbolization=off"*) ;; *) fail "tc: reason $reason" ;; esac
jq -e '[.flamebearer.names[] | select(startswith("tprog.stripped+0x"))] | length > 0' \
	<<<"$BODY" >/dev/null || fail "tc: tprog's frames are not the stored addresses"
http GET "/api/v1/symbolization?query=$Q&from=now-1h&until=now" -H "X-Scope-OrgID: tc"
expect_status 200 '"status":"disabled"' "tc's symbolization status"
echo "$BODY" >>"$ANSWERS"
note "tc: $st: $reason"

# ---- D: the server's upstreams (the debuginfod itself): names
render_for td
named || fail "td: not named through the server's upstream: $(jq -c .symbolization <<<"$BODY")"
note "td: named through the server's upstream"

# ---- ingest's tracker: C's binaries are never judged unsymbolizable
for i in $(seq 1 120); do
	http GET "/api/v1/debuginfo?unsymbolizable=1"
	[ "$STATUS" = 200 ] || fail "unsymbolizable list: $STATUS $BODY"
	[ "$(jq --arg id "$ID" '[.[] | select(.tenant == "te" and .buildId == $id and .status == "not_found")] | length' <<<"$BODY")" -ge 1 ] && break
	sleep 0.5
done
echo "$BODY" >>"$ANSWERS"
[ "$(jq '[.[] | select(.tenant == "te")] | length' <<<"$BODY")" -ge 1 ] ||
	fail "te's binaries are not tracked: $BODY"
[ "$(jq '[.[] | select(.tenant == "tc")] | length' <<<"$BODY")" = 0 ] ||
	fail "tc (symbolization off) is tracked as unsymbolizable: $BODY"
http GET /metrics
METRICS=$BODY
echo "$BODY" >>"$ANSWERS"
! grep -q 'unhex_unsymbolizable_profiles_total{tenant="tc"' <<<"$METRICS" ||
	fail "tc counted as unsymbolizable: $(grep 'tenant="tc"' <<<"$METRICS")"
note "ingest tracks te's binaries, not tc's"

# ---- the proxy never saw C or the server's upstreams; the secret leaked nowhere
! grep -q "probe=c" "$WORK/proxy.log" || fail "tc reached the upstream: $(grep probe=c "$WORK/proxy.log")"
! grep -q "probe=server" "$WORK/proxy.log" ||
	fail "the server's upstreams reached the proxy: $(grep probe=server "$WORK/proxy.log")"
! grep -q "auth=wrong" "$WORK/proxy.log" || fail "a wrong credential was sent"
note "proxy log: $(wc -l <"$WORK/proxy.log") requests, $(grep -c 'probe=a auth=ok' "$WORK/proxy.log") with ta's header, $(grep -c 'auth=none' "$WORK/proxy.log") without"
stop_server
! grep -q "$SECRET" "$WORK/server.$SERVER_N.log" "$WORK/server.$SERVER_N.out" ||
	fail "the secret is in the server's log"
! grep -q "$SECRET" <<<"$METRICS" || fail "the secret is in /metrics"
! grep -q "$SECRET" "$ANSWERS" || fail "the secret is in an API answer"
note "the secret appears in no log, metric or answer"
echo "PASS sym_tenants"

#!/usr/bin/env bash
# https.sh - the CLI over https://.  The server has no TLS of its own, so a
# TLS endpoint (socat, with a self-signed certificate made here) forwards to
# the real server on 127.0.0.1.  Checked:
#   - without --cacert the CLI refuses the unknown certificate (exit 1, a TLS
#     message): verification is on;
#   - with --cacert, ingest, upload (a debug file streamed over TLS, then
#     found already uploaded), query top/folded and stats complete through
#     the handshake, and their answers equal those over plain http;
#   - https:// to the plain-http port fails with a TLS message, exit 1.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../integration/lib.sh"
need UNHEX
need WORKLOAD
need_cmd socat ".ci/deps.sh installs it"
need_cmd openssl

TLS_PID=
stop_tls() {
	if [ -n "$TLS_PID" ] && kill -0 "$TLS_PID" 2>/dev/null; then
		kill "$TLS_PID" 2>/dev/null || true
		wait "$TLS_PID" 2>/dev/null || true
	fi
	TLS_PID=
}
# set +e: under errexit `(exit $rc)` would end the trap before cleanup.
trap 'rc=$?; stop_tls; set +e; (exit $rc); cleanup' EXIT

# ---- a certificate for 127.0.0.1, trusted only through --cacert
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
	-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
	-keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>"$WORK/openssl.log" ||
	fail "openssl req: $(cat "$WORK/openssl.log")"

# ---- data: one workload profile, a small debug file
WL="$WORK/workload"
"$WORKLOAD" --out "$WL" --services 1 --instances 1 --minutes 1 --end now --quiet
PROFILE="$WL/$(awk -F'\t' '!/^#/ && NF { print $1; exit }' "$WL/manifest.tsv")"
[ -s "$PROFILE" ] || fail "no workload profile"
printf 'int f(int x) { return x * 3; }\nint main(void) { return f(1) - 3; }\n' >"$WORK/prog.c"
cc -g -O1 -Wl,--build-id -o "$WORK/prog" "$WORK/prog.c"
objcopy --only-keep-debug "$WORK/prog" "$WORK/prog.debug"

start_server "$WORK/data"

# ---- the TLS endpoint in front of it, on a port that was free a moment ago
for attempt in 1 2 3 4 5; do
	TPORT=$(free_port)
	socat "OPENSSL-LISTEN:$TPORT,bind=127.0.0.1,reuseaddr,fork,cert=$WORK/cert.pem,key=$WORK/key.pem,verify=0" \
		"TCP:127.0.0.1:$PORT" 2>"$WORK/socat.log" &
	TLS_PID=$!
	for i in $(seq 1 50); do
		if (exec 3<>"/dev/tcp/127.0.0.1/$TPORT") 2>/dev/null; then
			break 2
		fi
		kill -0 "$TLS_PID" 2>/dev/null || break
		sleep 0.1
	done
	stop_tls
done
[ -n "$TLS_PID" ] || fail "socat did not listen: $(cat "$WORK/socat.log")"
TURL="https://127.0.0.1:$TPORT"
CA=(--cacert "$WORK/cert.pem")
note "TLS endpoint $TURL -> $URL"

# ---- verification is on: an unknown certificate is refused
set +e
"$UNHEX" stats --server "$TURL" >"$WORK/out" 2>"$WORK/err"
rc=$?
set -e
[ $rc -eq 1 ] || fail "stats over https without --cacert exited $rc: $(cat "$WORK/out" "$WORK/err")"
grep -q "TLS" "$WORK/err" || fail "no TLS message without --cacert: $(cat "$WORK/err")"
note "without --cacert: $(cat "$WORK/err")"

# ---- ingest over TLS, then the same answers over TLS and plain http
OUT=$("$UNHEX" ingest --server "$TURL" "${CA[@]}" --tenant tls --name 'tlsapp.cpu{env=test}' \
	"$PROFILE") || fail "ingest over https: $OUT"
case "$OUT" in *"1 of 1 files accepted"*) ;; *) fail "ingest over https: $OUT" ;; esac
note "$OUT"

S_TLS=$("$UNHEX" stats --server "$TURL" "${CA[@]}" --tenant tls --json) || fail "stats over https"
S_PLAIN=$("$UNHEX" stats --server "$URL" --tenant tls --json) || fail "stats over http"
[ "$(counts "$S_TLS")" = "$(counts "$S_PLAIN")" ] || fail "stats differ: $S_TLS vs $S_PLAIN"
[ "$(field "$S_TLS" samples)" -gt 0 ] || fail "no samples stored over https: $S_TLS"

http GET "/pyroscope/label-values?label=__profile_type__" -H 'X-Scope-OrgID: tls'
PT=$(jq -r '.[]' <<<"$BODY" | grep -m1 ':cpu:' || jq -r '.[0]' <<<"$BODY")
[ -n "$PT" ] && [ "$PT" != null ] || fail "no profile type for tenant tls"
Q="$PT{service_name=\"tlsapp\"}"
for sub in top folded; do
	"$UNHEX" query "$sub" --server "$TURL" "${CA[@]}" --tenant tls --query "$Q" --from now-1d \
		--until now >"$WORK/$sub.tls" || fail "query $sub over https"
	"$UNHEX" query "$sub" --server "$URL" --tenant tls --query "$Q" --from now-1d \
		--until now >"$WORK/$sub.plain" || fail "query $sub over http"
	[ -s "$WORK/$sub.tls" ] || fail "query $sub over https printed nothing"
	cmp -s "$WORK/$sub.tls" "$WORK/$sub.plain" || fail "query $sub differs over https"
done
note "query top and folded: the same over https and http ($(wc -l <"$WORK/folded.tls") stacks)"

# ---- a debug file streamed over TLS, then found there
OUT=$("$UNHEX" upload --server "$TURL" "${CA[@]}" "$WORK/prog.debug") || fail "upload over https: $OUT"
case "$OUT" in *" uploaded ("*) ;; *) fail "upload over https: $OUT" ;; esac
ID=$(build_id "$WORK/prog")
http GET "/api/v1/debuginfo/$ID"
expect_status 200 '"status":"ok"' "the debug file uploaded over https"
OUT=$("$UNHEX" upload --server "$TURL" "${CA[@]}" "$WORK/prog.debug") || fail "re-upload over https: $OUT"
case "$OUT" in *"already uploaded"*) ;; *) fail "re-upload over https not skipped: $OUT" ;; esac

# ---- https:// to the plain-http port: a TLS failure, not a hang or a crash
set +e
"$UNHEX" stats --server "https://127.0.0.1:$PORT" "${CA[@]}" >"$WORK/out" 2>"$WORK/err"
rc=$?
set -e
[ $rc -eq 1 ] && grep -q "TLS" "$WORK/err" || fail "https to plain http: exit $rc $(cat "$WORK/err")"

stop_tls
stop_server
echo "PASS https"

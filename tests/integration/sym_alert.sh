#!/usr/bin/env bash
# sym_alert.sh - profiles that cannot be symbolized are counted at ingest,
# with no query (docs/symbolization.md, "Alerting before anyone looks").
# Real C programs built -g, split with objcopy and stripped, profiled with
# perf (profile_to_pprof), ingested into the real server:
#   - app, whose debug file is nowhere (a real elfutils debuginfod upstream
#     answers 404): /metrics counts its profiles as not_found and the gauge
#     lists it, although nothing was queried; `unhex upload` of its .debug
#     flips it to ok and the gauge drops it, still with no query;
#   - served, whose .debug only the upstream has: looked up in the
#     background and ok, never counted;
#   - nobid, linked with --build-id=none: no_build_id;
#   - app again on a server whose upstream is unreachable: upstream_error.
# Also: docs/monitoring/alerts.yml passes `promtool check rules`, and
# `promtool test rules` runs its unit test (fixtures/alerts_test.yml).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need PERF2PPROF
# set +e: under errexit `(exit $rc)` would end the trap before cleanup.
trap 'rc=$?; stop_debuginfod; set +e; (exit $rc); cleanup' EXIT

# ---- the alert rules
need_promtool
promtool check rules "$HERE/../../docs/monitoring/alerts.yml" >"$WORK/promtool.out" 2>&1 ||
	fail "promtool check rules: $(cat "$WORK/promtool.out")"
(cd "$HERE/fixtures" && promtool test rules alerts_test.yml) >"$WORK/promtool.out" 2>&1 ||
	fail "promtool test rules: $(cat "$WORK/promtool.out")"
note "promtool: $(tr '\n' ' ' <"$WORK/promtool.out")"

# ---- three real programs, stripped, profiled
cat >"$WORK/app.c" <<'CEOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifndef ROUNDS
#define ROUNDS 2000
#endif
__attribute__((noinline)) static unsigned spin(unsigned x)
{
	for (int i = 0; i < ROUNDS; i++)
		x = x * 2654435761u + (unsigned)i;
	return x;
}
CEOF
c_timed_main 7 'acc += spin(acc + v);' >>"$WORK/app.c"
cc -g -O2 -Wl,--build-id -o "$WORK/app" "$WORK/app.c"
cc -g -O2 -Wl,--build-id -DROUNDS=2001 -o "$WORK/served" "$WORK/app.c"
cc -g -O2 -Wl,--build-id=none -o "$WORK/nobid" "$WORK/app.c"
for p in app served nobid; do
	split_debug "$WORK/$p"
	profile_to_pprof "$WORK/$p.pb.gz" "$WORK/$p.stripped" 1
done
ID_APP=$(build_id "$WORK/app")
ID_SERVED=$(build_id "$WORK/served")
[ -n "$ID_APP" ] && [ -n "$ID_SERVED" ] && [ "$ID_APP" != "$ID_SERVED" ] ||
	fail "build IDs: app '$ID_APP', served '$ID_SERVED'"
[ -z "$(build_id "$WORK/nobid")" ] || fail "nobid has a build ID"

mkdir -p "$WORK/upstream"
cp "$WORK/served.debug" "$WORK/upstream/"
start_debuginfod "$WORK/upstream" "$ID_SERVED"
start_server "$WORK/data" --debuginfod-urls "$DURL"

for p in app served nobid; do
	"$UNHEX" ingest --server "$URL" --name "$p.cpu" "$WORK/$p.pb.gz" >/dev/null ||
		fail "ingest of $p"
done

# metric NAME [LABELS]: its value in $METRICS, 0 when absent.
metric() {
	local v series=$1
	[ -z "${2:-}" ] || series="$1{$2}"
	v=$(grep -F "$series " <<<"$METRICS" | grep -v '^#' | awk '{print $2}' | head -1)
	echo "${v:-0}"
}

# entry SERVICE BUILD_ID FIELD: a field of the tracked binary, from $LIST.
entry() {
	jq -r --arg s "$1" --arg b "$2" \
		'[.[] | select(.service == $s and .buildId == $b)][0].'"$3"' // "absent"' <<<"$LIST"
}

# scrape: METRICS and LIST, the server's view now.
scrape() {
	http GET /metrics
	[ "$STATUS" = 200 ] || fail "/metrics: $STATUS"
	METRICS=$BODY
	http GET "/api/v1/debuginfo?unsymbolizable=1"
	[ "$STATUS" = 200 ] || fail "unsymbolizable list: $STATUS $BODY"
	LIST=$BODY
}

# The gauge counts each binary lacking debug info once, by reason.
check_gauge() {
	local reason want got
	for reason in not_found no_build_id upstream_error; do
		want=$(jq --arg r "$reason" \
			'[.[] | select(.status == $r) | if .buildId == "" then .tenant + "/" + .service + "/" + .binary else .buildId end] | unique | length' <<<"$LIST")
		got=$(metric unhex_unsymbolizable_build_ids "reason=\"$reason\"")
		[ "$got" = "$want" ] || fail "gauge of $reason is $got, the list has $want: $LIST"
	done
}

# wait_for WHAT CONDITION: re-scrapes until the bash CONDITION holds (60 s).
wait_for() {
	local i
	for i in $(seq 1 120); do
		scrape
		eval "$2" && return 0
		sleep 0.5
	done
	fail "$1: not after 60 s: $LIST"
}

T='tenant="anonymous"'
wait_for "every binary checked, app counted as not_found" \
	'[ "$(pending_binaries "$LIST")" = 0 ] && [ "$(entry app "$ID_APP" status)" = not_found ] && [ "$(entry served "$ID_SERVED" status)" = ok ] &&
	 [ "$(metric unhex_unsymbolizable_profiles_total "$T,service=\"app\",reason=\"not_found\"")" -ge 1 ]'
note "app: $(entry app "$ID_APP" reason)"
note "tracked: $(jq -c '[.[] | [.service, .binary, .status, .profiles]]' <<<"$LIST")"
[ "$(metric unhex_unsymbolizable_samples_total "$T,service=\"app\",reason=\"not_found\"")" -ge 1 ] ||
	fail "no samples of app counted: $(grep unsymbolizable <<<"$METRICS")"
[ "$(entry app "$ID_APP" binary)" = app.stripped ] || fail "app's binary: $LIST"
[ "$(entry served "$ID_SERVED" profiles)" = 0 ] || fail "served was counted: $LIST"
[ "$(metric unhex_unsymbolizable_lookups_total)" -ge 2 ] ||
	fail "the checks did not look app and served up upstream: $(grep lookups <<<"$METRICS")"
[ "$(entry nobid "" status)" = no_build_id ] || fail "nobid: $LIST"
[ "$(metric unhex_unsymbolizable_profiles_total "$T,service=\"nobid\",reason=\"no_build_id\"")" -ge 1 ] ||
	fail "nobid not counted as no_build_id: $(grep unsymbolizable <<<"$METRICS")"
[ "$(metric unhex_unsymbolizable_build_ids 'reason="not_found"')" -ge 1 ] || fail "gauge of not_found"
# wait_for's last scrape read /metrics before the list: compare on a fresh one.
scrape
check_gauge
# Nothing was queried: no query asked for symbols, none took time.
grep -q '^unhex_symbolize_unresolved_locations_total{status="not_found"} 0$' <<<"$METRICS" ||
	fail "a query symbolized: $(grep unresolved_locations <<<"$METRICS")"
[ "$(metric unhex_http_request_duration_seconds_count 'kind="query"')" = 0 ] ||
	fail "a query ran: $(grep 'duration_seconds_count' <<<"$METRICS")"
note "counted with no query: $(grep '^unhex_unsymbolizable_profiles_total' <<<"$METRICS" | tr '\n' ' ')"

# ---- the upload flips app to ok, with no query
NF_BEFORE=$(metric unhex_unsymbolizable_build_ids 'reason="not_found"')
APP_PROFILES=$(entry app "$ID_APP" profiles)
OUT=$("$UNHEX" upload --server "$URL" "$WORK/app.debug") || fail "upload: $OUT"
wait_for "app ok after its upload" '[ "$(entry app "$ID_APP" status)" = ok ]'
# wait_for's last scrape read /metrics before the list, maybe before the flip:
# the gauge and the list are compared on a scrape taken after it.
scrape
check_gauge
[ "$(metric unhex_unsymbolizable_build_ids 'reason="not_found"')" = $((NF_BEFORE - 1)) ] ||
	fail "the not_found gauge did not drop by one from $NF_BEFORE: $(grep build_ids <<<"$METRICS")"
# Another binary of app's profiles still lacks debug info (libc, the
# kernel's or [vdso]'s, when perf recorded them): a profile counts once per
# reason, however many such binaries its stacks have.
OTHER=$(jq -r '[.[] | select(.service == "app" and .status == "not_found")][0].buildId // ""' <<<"$LIST")
ROW=$(metric unhex_unsymbolizable_profiles_total "$T,service=\"app\",reason=\"not_found\"")
[ -z "$OTHER" ] || OTHER_PROFILES=$(entry app "$OTHER" profiles)
"$UNHEX" ingest --server "$URL" --name "app.cpu" "$WORK/app.pb.gz" >/dev/null || fail "ingest again"
scrape
[ "$(entry app "$ID_APP" profiles)" = "$APP_PROFILES" ] ||
	fail "app counted after its upload: $APP_PROFILES then $(entry app "$ID_APP" profiles)"
if [ -n "$OTHER" ]; then
	d_row=$(($(metric unhex_unsymbolizable_profiles_total "$T,service=\"app\",reason=\"not_found\"") - ROW))
	d_other=$(($(entry app "$OTHER" profiles) - OTHER_PROFILES))
	((d_other > 0 && d_row == d_other)) ||
		fail "one more profile of app: the row grew by $d_row, binary $OTHER by $d_other: $LIST"
	note "a profile with $(jq '[.[] | select(.service == "app" and .status == "not_found")] | length' <<<"$LIST") binaries lacking debug info counted once: +$d_row"
fi
note "after the upload: app ok, not_found gauge $NF_BEFORE -> $(metric unhex_unsymbolizable_build_ids 'reason="not_found"')"
stop_server

# ---- an upstream that does not answer: upstream_error
CLOSED=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
start_server "$WORK/data2" --debuginfod-urls "http://127.0.0.1:$CLOSED"
"$UNHEX" ingest --server "$URL" --name "app.cpu" "$WORK/app.pb.gz" >/dev/null || fail "ingest on data2"
# app's other binaries (libc, ld.so, ...) are looked up too, a few per check:
# the gauge is compared once none is pending, on a scrape taken after that.
wait_for "app as upstream_error, nothing pending" \
	'[ "$(entry app "$ID_APP" status)" = upstream_error ] && [ "$(pending_binaries "$LIST")" = 0 ]'
[ "$(metric unhex_unsymbolizable_profiles_total "$T,service=\"app\",reason=\"upstream_error\"")" -ge 1 ] ||
	fail "app not counted as upstream_error: $(grep unsymbolizable <<<"$METRICS")"
scrape
check_gauge
note "unreachable upstream: $(entry app "$ID_APP" reason)"
stop_server
note "sym_alert: counted at ingest, flipped by the upload, rules checked"

#!/usr/bin/env bash
# restart.sh - durability across restarts: what the server acknowledged is
# what it serves after a clean SIGTERM restart and after kill -9; --preload
# skips a store that has data, and ingests in-process exactly what the same
# files sent over HTTP store.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need WORKLOAD

WL="$WORK/workload"
"$WORKLOAD" --out "$WL" --services 2 --instances 2 --minutes 2 --end now --quiet
[ -s "$WL/manifest.tsv" ] || fail "the workload generator wrote no manifest"
NFILES=$(grep -vc '^#' "$WL/manifest.tsv")
note "workload: $NFILES profiles"

DATA="$WORK/data"
start_server "$DATA"
ingest_manifest "$WL"
S1=$(counts "$(tenant_stats anonymous)")
note "after ingest: $S1"
[ "$(field "$S1" samples)" -gt 0 ] || fail "nothing stored"

# ---- clean restart: identical, and --preload skips a store with data
stop_server
DISK=$("$UNHEX" stats --data "$DATA" --json | jq -cS '.tenants[] | select(.tenant == "anonymous") | del(.bytes, .head_profiles, .blocks, .retention)')
[ "$DISK" = "$S1" ] || fail "on disk after SIGTERM: $DISK, served before: $S1"
start_server "$DATA" --preload "$WL"
S2=$(counts "$(tenant_stats anonymous)")
[ "$S2" = "$S1" ] || fail "after restart: $S2, before: $S1"
grep -q "preload: the store already holds data" "$WORK/server.$SERVER_N.log" ||
	fail "preload did not say it skipped"

# ---- an acknowledged write survives kill -9
first=$(awk -F'\t' '!/^#/ && NF { print $1; exit }' "$WL/manifest.tsv")
http POST "/ingest?name=restart.cpu%7Bcase%3Dkill9%7D&format=pprof" --data-binary @"$WL/$first"
expect_status 200 '"samples":' "ingest before kill -9"
kill_server
ADD_SAMPLES=$(field "$BODY" samples)
ADD_PROFILES=$(field "$BODY" profiles)
start_server "$DATA"
S3=$(counts "$(tenant_stats anonymous)")
note "after kill -9: $S3"
[ "$(field "$S3" samples)" = $(($(field "$S1" samples) + ADD_SAMPLES)) ] ||
	fail "samples after kill -9: $(field "$S3" samples), want $(field "$S1" samples) + $ADD_SAMPLES"
[ "$(field "$S3" profiles)" = $(($(field "$S1" profiles) + ADD_PROFILES)) ] ||
	fail "profiles after kill -9: $(field "$S3" profiles), want $(field "$S1" profiles) + $ADD_PROFILES"
[ "$(field "$S3" series)" -gt "$(field "$S1" series)" ] || fail "the new series is missing"
stop_server

# ---- --preload into an empty store equals the same files over HTTP
start_server "$WORK/data2" --preload "$WL"
S4=$(counts "$(tenant_stats anonymous)")
[ "$S4" = "$S1" ] || fail "preload stored $S4, HTTP ingest stored $S1"
grep -q "preload: $NFILES files" "$WORK/server.$SERVER_N.log" ||
	fail "preload log line missing: $(grep preload "$WORK/server.$SERVER_N.log")"
stop_server
echo "PASS restart ($NFILES files, $(field "$S1" samples) samples)"

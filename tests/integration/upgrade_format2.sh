#!/usr/bin/env bash
# upgrade_format2.sh - a store written by the release before runs of symbols
# (format 2, fixtures/store-format2.tar.gz, made as its README says) opens
# with every profile it acknowledged: read-only as it is, then upgraded by a
# server.  New profiles of the same services add their symbols as runs after
# the old records of the same partitions, and a restart reads both kinds back
# with every answer unchanged (storage/storage_int.h, section 5).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX WORKLOAD
fixture_store store-format2
OLD='{"locations":1699,"mappings":14,"profiles":120,"samples":6240,"series":8,"stacks":19904}'

symbol_counts() {
	jq -cS '{series, profiles, samples, stacks, locations, mappings}' <<<"$1"
}

ticks() {
	http GET "/pyroscope/render?query=$(selector "$CPU" "$1")&from=$FROM&until=$UNTIL"
	[ "$STATUS" = 200 ] || fail "render $1: $STATUS $BODY"
	jq -r .flamebearer.numTicks <<<"$BODY"
}

# ---- read-only, as it is (a read-only open writes nothing)
[ "$(symbol_counts "$("$UNHEX" stats --data "$DATA" --json | jq -c '.tenants[0]')")" = "$OLD" ] ||
	fail "format 2 store, read-only: $("$UNHEX" stats --data "$DATA" --json)"
"$UNHEX" verify --data "$DATA" >/dev/null || fail "verify of the format 2 store"

# ---- a server upgrades it at open and answers what the old one did
start_server "$DATA" --maintain-interval 1000h
grep -q "upgraded from format 2" "$WORK/server.$SERVER_N.log" || fail "no upgrade logged"
S=$(tenant_stats anonymous)
[ "$(symbol_counts "$S")" = "$OLD" ] || fail "upgraded store: $S"
[ "$(ticks checkout)" = 1734200000000 ] || fail "checkout ticks after the upgrade"
[ "$(ticks shop-api)" = 1811200000000 ] || fail "shop-api ticks after the upgrade"

# ---- new profiles of the same services: other functions, so new strings,
# locations and stack nodes follow the old records of the same partitions
"$WORKLOAD" --out "$WORK/new" --services 2 --instances 1 --minutes 10 --interval 60 \
	--functions 300 --hz 5 --seed 7 --end "$END" --quiet
ingest_manifest "$WORK/new"
S=$(tenant_stats anonymous)
jq -e '.stacks > 19904 and .locations > 1699 and .profiles > 120' <<<"$S" >/dev/null ||
	fail "the new profiles added no symbols: $S"
NEW=$(symbol_counts "$S")
answers "$WORK/before"
stop_server

# ---- a restart loads each partition from its old records and its runs
[ "$(symbol_counts "$("$UNHEX" stats --data "$DATA" --json | jq -c '.tenants[0]')")" = "$NEW" ] ||
	fail "read-only after the upgrade: $("$UNHEX" stats --data "$DATA" --json)"
"$UNHEX" verify --data "$DATA" >"$WORK/verify" || fail "verify: $(cat "$WORK/verify")"
start_server "$DATA" --maintain-interval 1000h
grep -q "upgraded from format" "$WORK/server.$SERVER_N.log" && fail "upgraded twice"
answers "$WORK/after"
for f in "$WORK"/before/*; do
	cmp -s "$f" "$WORK/after/$(basename "$f")" || fail "$(basename "$f") changed with the restart"
done
note "$NEW"
echo "PASS upgrade_format2"

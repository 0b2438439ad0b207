#!/usr/bin/env bash
# upgrade.sh - a store written by the release before time blocks (format 1,
# fixtures/store-format1.tar.gz, made as its README says) opens with every
# profile it acknowledged: read-only as it is, then upgraded by a server,
# whose maintenance seals its data into blocks; the answers stay those the
# old server gave, before and after sealing, and new profiles join them.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX WORKLOAD
fixture_store store-format1

expect_counts() {
	local s=$1 what=$2
	[ "$(jq -c '{series, profiles, samples}' <<<"$s")" = '{"series":8,"profiles":120,"samples":6240}' ] ||
		fail "$what: $s"
}

ticks() {
	local q
	q=$(selector "$CPU" "$1")
	http GET "/pyroscope/render?query=$q&from=$FROM&until=$UNTIL"
	[ "$STATUS" = 200 ] || fail "render $1: $STATUS $BODY"
	jq -c 'del(.symbolization)' <<<"$BODY" >"$WORK/render.$1.$2"
	jq -r .flamebearer.numTicks <<<"$BODY"
}

# ---- read-only, as it is (nothing is written to a format 1 store)
LOCAL=$("$UNHEX" stats --data "$DATA" --json | jq -c '.tenants[0]')
expect_counts "$LOCAL" "format 1 store, read-only"
"$UNHEX" verify --data "$DATA" >/dev/null || fail "verify of a store without blocks"

# ---- a server upgrades it at open; nothing is sealed yet
start_server "$DATA" --maintain-interval 1000h --block-range 10m
grep -q "upgraded from format 1" "$WORK/server.$SERVER_N.log" || fail "no upgrade logged"
expect_counts "$(tenant_stats anonymous)" "upgraded store"
[ "$(ticks checkout head)" = 1734200000000 ] || fail "checkout ticks after the upgrade"
[ "$(ticks shop-api head)" = 1811200000000 ] || fail "shop-api ticks after the upgrade"
stop_server

# ---- maintenance seals the old data (30 minutes: two ranges end before
# the newest profile; the third stays in the head) without changing an answer
start_server "$DATA" --maintain-interval 1s --block-range 10m
# The pass seals one range after the other: wait until two level-0 blocks
# stay (two minutes at most: an ASan build on a loaded machine), then read
# the stats the checks are on.
wait_settled 2 '[0,0]'
S=$(tenant_stats anonymous)
[ "$(jq -r .blocks.count <<<"$S")" = 2 ] || fail "the old data was not sealed: $S"
expect_counts "$S" "sealed"
[ "$(ticks checkout blocks)" = 1734200000000 ] || fail "checkout ticks after sealing"
[ "$(ticks shop-api blocks)" = 1811200000000 ] || fail "shop-api ticks after sealing"
for svc in checkout shop-api; do
	cmp -s "$WORK/render.$svc.head" "$WORK/render.$svc.blocks" ||
		fail "$svc: the flame graph changed with sealing"
done
note "sealed: $(jq -c '{head_profiles, blocks: [.blocks.list[] | {level, profiles}]}' <<<"$S")"

# ---- new profiles go to the new epoch, next to the old data
"$WORKLOAD" --out "$WORK/new" --services 1 --instances 1 --minutes 1 --interval 60 --end "$END" --quiet
NEW=$(awk -F'\t' '!/^#/ && NF { print $1; exit }' "$WORK/new/manifest.tsv")
http POST "/ingest?name=checkout.cpu%7Bnew%3Dyes%7D&format=pprof&from=$((END - 30))" \
	--data-binary @"$WORK/new/$NEW"
expect_status 200 '"samples":' "ingest into the upgraded store"
ADDED=$(field "$BODY" profiles)
S=$(tenant_stats anonymous)
[ "$(field "$S" profiles)" = $((120 + ADDED)) ] || fail "profiles after a new ingest: $S"
stop_server
"$UNHEX" verify --data "$DATA" >"$WORK/verify" || fail "verify: $(cat "$WORK/verify")"
note "$(tail -1 "$WORK/verify")"
[ "$("$UNHEX" stats --data "$DATA" --json | jq -r '.tenants[0].profiles')" = $((120 + ADDED)) ] ||
	fail "profiles after a restart"
echo "PASS upgrade"

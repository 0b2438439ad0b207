#!/usr/bin/env bash
# blocks.sh - the head and its blocks on the real server:
#   - sealing and compaction run (every second) while profiles are ingested
#     and queried; afterwards every answer equals a server that never
#     sealed: render (flamebearer bytes), pprof export totals, stats counts;
#   - kill -9 at each crash point of sealing and compaction (the store's
#     UNHEX_CRASHPOINT hook), then a restart: nothing acknowledged is lost,
#     nothing is counted twice, no temporary file is left;
#   - retention deletes exactly the blocks past it, and the stats say so;
#   - a corrupted block is reported by `unhex verify`, skipped by queries,
#     and the rest stays queryable and writable.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need WORKLOAD
need PPROFINFO

block_workload 120 60 --debug-dir "$WORK/workload/debug"
NFILES=$(grep -vc '^#' "$WL/manifest.tsv")
# The store's clock: the newest profile (the wall clock is far ahead).
NEWEST=$(awk -F'\t' '!/^#/ && NF && $3 > m { m = $3 } END { print m }' "$WL/manifest.tsv")
note "workload: $NFILES profiles over 120 minutes, the newest at $NEWEST"

# Every answer this test compares, into DIR: stats counts, render (the
# flamebearer bytes) and the sums of the pprof export per service.
answers() {
	local dir=$1 svc q
	mkdir -p "$dir"
	jq -cS '{profiles, samples, series}' <<<"$(tenant_stats anonymous)" >"$dir/stats"
	for svc in $(jq -r '.[]' <<<"$(curl -s "$URL/pyroscope/label-values?label=service_name")"); do
		q=$(selector "$CPU" "$svc")
		http GET "/pyroscope/render?query=$q&from=$FROM&until=$UNTIL&maxNodes=65536"
		[ "$STATUS" = 200 ] || fail "render $svc: $STATUS $BODY"
		jq -c 'del(.symbolization)' <<<"$BODY" >"$dir/render.$svc"
		curl -s -o "$WORK/export.pb.gz" "$URL/api/v1/pprof?query=$q&from=$FROM&until=$UNTIL"
		"$PPROFINFO" --json "$WORK/export.pb.gz" | jq -c '[.sample_types[] | .sum]' >"$dir/pprof.$svc"
	done
}

# ---- the reference: a server that never seals
start_server "$WORK/ref" --maintain-interval 1000h
ingest_manifest "$WL"
answers "$WORK/expect"
REF_PROFILES=$(jq -r .profiles "$WORK/expect/stats")
stop_server
note "reference: $(cat "$WORK/expect/stats")"

# ---- seal and compact while ingesting and querying
DATA="$WORK/data"
start_server "$DATA" --maintain-interval 1s --block-range 10m
ingest_manifest "$WL" &
ING=$!
Q=$(selector "$CPU" shop-api)
while kill -0 "$ING" 2>/dev/null; do
	http GET "/pyroscope/render?query=$Q&from=$FROM&until=$UNTIL"
	[ "$STATUS" = 200 ] || fail "render during ingest: $STATUS $BODY"
done
wait "$ING" || fail "ingest failed"
# 12 ranges of 10 minutes: the last is still open (the clock is the newest
# profile); the first hour's six are compacted into one block (level 1),
# the second hour's five stay (their hour is not over).
wait_settled 6 '[0,0,0,0,0,1]'
answers "$WORK/got"
for f in "$WORK/expect"/*; do
	cmp -s "$f" "$WORK/got/$(basename "$f")" || {
		[[ $f == *.gz ]] && cmp -s <(zcat "$f" | md5sum) <(zcat "$WORK/got/$(basename "$f")" | md5sum)
	} || fail "$(basename "$f") differs after sealing: $(head -c 300 "$f") vs $(head -c 300 "$WORK/got/$(basename "$f")")"
done
S=$(tenant_stats anonymous)
note "sealed: $(jq -c '{head_profiles, blocks: (.blocks | {count, list: [.list[] | {level, profiles}]})}' <<<"$S")"
[ "$(jq -c '[.blocks.list[].level] | sort' <<<"$S")" = "[0,0,0,0,0,1]" ] || fail "levels: $S"
[ "$(jq -r .head_profiles <<<"$S")" -gt 0 ] || fail "the open range was sealed: $S"
# No debug info was uploaded: every build ID of the workload is history that stays hex.
http GET "/api/v1/debuginfo?missing=1"
NBID=$(grep -c . "$WL/debug/manifest.tsv")
[ "$(jq length <<<"$BODY")" = "$NBID" ] || fail "missing debug info: $BODY, want $NBID build IDs"
grep -q "^unhex_debuginfo_missing_build_ids $NBID\$" <<<"$(curl -s "$URL/metrics")" ||
	fail "metrics of missing debug info"
grep -q '^unhex_store_blocks{tenant="anonymous"} 6$' <<<"$(curl -s "$URL/metrics")" || fail "metrics"
# The memory gauges (docs/api.md): the six blocks' footers are in memory.
M=$(curl -s "$URL/metrics")
for g in memtable_bytes table_readers_bytes block_cache_bytes block_cache_pinned_bytes \
	symbol_cache_bytes head_partitions head_partitions_retired blocks_referenced; do
	grep -q "^unhex_store_$g [0-9][0-9]*\$" <<<"$M" || fail "metrics: no unhex_store_$g"
done
[ "$(awk '$1 == "unhex_store_blocks_referenced" {print $2}' <<<"$M")" -ge 6 ] ||
	fail "metrics: $(grep '^unhex_store_blocks_referenced' <<<"$M")"
# The page cache: the answers above read the blocks' pages and kept them.
grep -q '^unhex_store_page_cache_bytes{state="cap"} 67108864$' <<<"$M" || fail "metrics: page cache cap"
[ "$(awk '$1 == "unhex_store_page_cache_requests_total{result=\"miss\"}" {print $2}' <<<"$M")" -gt 0 ] &&
	[ "$(awk '$1 == "unhex_store_page_cache_entries" {print $2}' <<<"$M")" -gt 0 ] ||
	fail "metrics: $(grep '^unhex_store_page_cache' <<<"$M")"
for r in hit miss; do
	grep -q "^unhex_store_page_cache_head_requests_total{result=\"$r\"} [0-9][0-9]*\$" <<<"$M" ||
		fail "metrics: no head $r count"
done
# glibc's heap (docs/operations.md, "Memory: the allocator").
for g in in_use_bytes free_bytes mmapped_bytes top_bytes; do
	grep -q "^unhex_malloc_$g [0-9][0-9]*\$" <<<"$M" || fail "metrics: no unhex_malloc_$g"
done
stop_server
"$UNHEX" verify --data "$DATA" >"$WORK/verify" || fail "verify: $(cat "$WORK/verify")"
note "verify: $(tail -1 "$WORK/verify")"
start_server "$DATA" --maintain-interval 1s --block-range 10m
answers "$WORK/got2"
diff -r "$WORK/got" "$WORK/got2" >/dev/null || fail "answers changed across a restart"
stop_server

# ---- kill -9 at each crash point, then a restart: exact counts
crash_at() {
	local point=$1 dir=$2 i
	cp -a "$WORK/ref" "$dir" # everything in the head, as the reference server left it
	UNHEX_CRASHPOINT=$point start_server "$dir" --maintain-interval 1s --block-range 10m
	for i in $(seq 1 300); do
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	wait "$SERVER_PID" 2>/dev/null || true
	SERVER_PID=
	grep -q "crash point $point reached" "$WORK/server.$SERVER_N.log" ||
		fail "$point: the server did not crash there: $(tail -5 "$WORK/server.$SERVER_N.log")"
	start_server "$dir" --maintain-interval 1s --block-range 10m
	wait_settled 6 '[0,0,0,0,0,1]'
	answers "$WORK/crash-$point"
	diff -r "$WORK/expect" "$WORK/crash-$point" >/dev/null ||
		fail "$point: answers differ after the crash: $(diff "$WORK/expect/stats" "$WORK/crash-$point/stats")"
	[ -z "$(find "$dir/blocks" -name '*.tmp')" ] || fail "$point: temporary files left"
	stop_server
	note "kill -9 at $point: nothing lost, nothing doubled"
}
crash_at block-synced "$WORK/crash1"
crash_at seal-before-head-delete "$WORK/crash2"
crash_at compact-output-written "$WORK/crash3"

# ---- retention 45m: the hour block and the first 10 minutes of the next
# hold nothing newer than the cutoff (the newest profile - 45 minutes).
# Debug info of every build ID is uploaded; --debuginfo-retention 1s then
# deletes what only the expired blocks used, and keeps what retained ones use.
start_server "$DATA" --maintain-interval 1s --block-range 10m --retention 45m \
	--debuginfo-retention 1s --preload-debuginfo "$WL/debug"
wait_stats '.retention.expired_blocks >= 2' 600
note "after retention: $(jq -c '{profiles, retention, blocks: [.blocks.list[] | {level, max_time_ns}]}' <<<"$S")"
[ "$(jq -r .retention.expired_blocks <<<"$S")" = 2 ] || fail "retention expired: $S"
CUTOFF=$(((NEWEST - 45 * 60) * 1000000000))
jq -e --argjson c "$CUTOFF" '[.blocks.list[] | .max_time_ns >= $c] | all' <<<"$S" >/dev/null ||
	fail "a block past retention stayed: $S"
[ "$(($(jq -r .profiles <<<"$S") + $(jq -r .retention.expired_profiles <<<"$S")))" = "$REF_PROFILES" ] ||
	fail "retained + expired profiles != ingested: $S"
[ "$(jq '.blocks.list | length' <<<"$S")" = 4 ] || fail "blocks after retention: $S"
# The releases of the retained profiles (the oldest retained block's range on).
RET_FROM=$(jq '[.blocks.list[].range_start_ns] | min / 1000000000 | floor' <<<"$S")
RELEASES=$(awk -F'\t' -v f="$RET_FROM" '!/^#/ && NF && $3 >= f {
	match($2, /version=[0-9.]+/); print substr($2, RSTART + 8, RLENGTH - 8) }' "$WL/manifest.tsv" | sort -u)
KEEP=() DROP=()
while IFS=$'\t' read -r _ bid _ rel; do
	used=0
	for r in $RELEASES; do [[ ",$rel," == *",$r,"* ]] && used=1; done
	if [ $used = 1 ]; then KEEP+=("$bid"); else DROP+=("$bid"); fi
done <"$WL/debug/manifest.tsv"
note "releases retained: $(echo $RELEASES); debug info kept ${#KEEP[@]}, deleted ${#DROP[@]}"
[ ${#DROP[@]} -gt 0 ] && [ ${#KEEP[@]} -gt 0 ] || fail "the workload gives nothing to tell apart"
for i in $(seq 1 150); do
	gone=0
	for b in "${DROP[@]}"; do
		[ "$(curl -s -o /dev/null -w '%{http_code}' "$URL/api/v1/debuginfo/$b")" = 404 ] && gone=$((gone + 1))
	done
	[ $gone = ${#DROP[@]} ] && break
	sleep 0.2
done
[ $gone = ${#DROP[@]} ] || fail "debug info only expired blocks used is still there ($gone of ${#DROP[@]} gone)"
for b in "${KEEP[@]}"; do
	http GET "/api/v1/debuginfo/$b"
	[ "$STATUS" = 200 ] && [ "$(jq -r .debuginfo <<<"$BODY")" = true ] ||
		fail "debug info a retained block uses was deleted: $b: $STATUS $BODY"
	[ "$(jq -r .lastProfile <<<"$BODY")" -gt 0 ] || fail "no lastProfile: $BODY"
done
http GET "/api/v1/debuginfo?missing=1"
[ "$BODY" = "[]" ] || fail "missing debug info after the uploads: $BODY"
stop_server

# ---- a corrupted block: reported, skipped, the rest works
BLK=$(find "$DATA/blocks" -name '*.blk' | sort | tail -1)
printf '\xff\xff\xff\xff' | dd of="$BLK" bs=1 seek=100 conv=notrunc status=none
if "$UNHEX" verify --data "$DATA" >"$WORK/verify2"; then
	fail "verify did not notice the corruption: $(cat "$WORK/verify2")"
fi
grep -q "^BAD " "$WORK/verify2" || fail "verify output: $(cat "$WORK/verify2")"
note "verify: $(grep '^BAD' "$WORK/verify2")"
start_server "$DATA" --maintain-interval 1000h --retention 45m
http GET "/pyroscope/render?query=$Q&from=$FROM&until=$UNTIL"
expect_status 200 "" "render with a corrupt block"
# A query that meets the corrupt bytes (the first pages of the samples
# section: the first service's) skips the block and says which in its
# answer; one that reads only intact pages answers in full, without warning.
BADID=$(basename "$BLK" .blk)
WARNED=
for svc in checkout shop-api; do
	http GET "/pyroscope/render?query=$(selector "$CPU" "$svc")&from=$FROM&until=$UNTIL"
	expect_status 200 "" "render of $svc with a corrupt block"
	if jq -e --arg id "$BADID" '[(.warnings // [])[] | select(contains($id))] | length == 1' \
		<<<"$BODY" >/dev/null; then
		WARNED="$WARNED $svc"
		note "$svc: $(jq -r '.warnings[0]' <<<"$BODY")"
	fi
done
[ -n "$WARNED" ] || fail "no render warned about block $BADID"
http POST "/ingest?name=shop-api.cpu%7Bafter%3Dcorrupt%7D&format=pprof&from=$END" \
	--data-binary @"$WL/$(awk -F'\t' '!/^#/ && NF { print $1; exit }' "$WL/manifest.tsv")"
expect_status 200 '"samples":' "ingest next to a corrupt block"
S=$(tenant_stats anonymous)
[ "$(jq -r .blocks.unreadable <<<"$S")" -le 1 ] || fail "unreadable: $S"
stop_server
echo "PASS blocks ($NFILES files, $REF_PROFILES profiles)"

#!/usr/bin/env bash
# objstore_blocks.sh - `unhex serve --storage.backend s3` against a real
# Ceph RGW on loopback: the blocks sealing and compaction write are
# uploaded, each byte-identical to its local file under the key of its path
# in the data directory; a restarted server finds them there (create-once
# conflict, same size) and uploads nothing twice; answers are those of a
# local-only server.  With the block files deleted, a restart reads the
# blocks from the bucket (the sections and pages each query needs, never a
# whole block) through a capped cache and answers the same; with RGW then
# stopped, every answer warns of the blocks whose pieces are not cached
# (never a 503).  Skips (77) only when the Ceph packages are missing.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
. "$HERE/rgw.sh"
need UNHEX
need WORKLOAD
need_rgw
# set +e: under errexit `(exit $rc)` would end the trap before cleanup.
trap 'rc=$?; rgw_stop; set +e; (exit $rc); cleanup' EXIT

block_workload 120 60

rgw_start
rgw_s3 unhex-blocks

# maint ACTION: the server's unhex_store_maintenance_total of ACTION.
maint() {
	curl -s "$URL/metrics" | awk -v a="action=\"$1\"" 'index($0, "unhex_store_maintenance_total{" a "}") == 1 { print $2 }'
}

# objm SERIES: the value of one unhex_objstore_* series of /metrics (labels as printed).
objm() {
	curl -s "$URL/metrics" | awk -v k="$1" 'index($0, k " ") == 1 { print $2 }'
}

# all_uploaded DATA: every live block of the server (not those compaction
# replaced, whose files stay for the readers' grace period) is in the
# bucket, byte for byte.
all_uploaded() {
	local data=$1 id key n=0
	for id in $(jq -r '.blocks.list[].id' <<<"$(tenant_stats anonymous)"); do
		key=blocks/anonymous/$id.blk
		[ "$(rgw_request GET "unhex-blocks/$key" "$WORK/obj")" = 200 ] || return 1
		cmp -s "$data/$key" "$WORK/obj" || fail "$key differs from its local file"
		n=$((n + 1))
	done
	[ $n -gt 0 ] || return 1
	UPLOADED_FILES=$n
}

# ---- the reference: local only, never sealed
start_server "$WORK/ref" --maintain-interval 1000h
ingest_manifest "$WL"
answers "$WORK/expect"
stop_server

# ---- sealed, compacted and uploaded
DATA="$WORK/data"
start_server "$DATA" --maintain-interval 1s --block-range 10m "${S3[@]}"
ingest_manifest "$WL"
wait_settled 6 '[0,0,0,0,0,1]'
for i in $(seq 1 300); do
	all_uploaded "$DATA" && break
	sleep 0.2
done
all_uploaded "$DATA" || fail "the blocks of $DATA are not all in the bucket"
answers "$WORK/got"
diff -r "$WORK/expect" "$WORK/got" >/dev/null || fail "answers differ with --storage.backend s3"
UP=$(maint uploaded_blocks)
[ "$UP" -ge "$UPLOADED_FILES" ] || fail "uploaded_blocks $UP < $UPLOADED_FILES block files"
[ "$(maint upload_failures)" = 0 ] || fail "upload failures: $(maint upload_failures)"
note "$UPLOADED_FILES block files in the bucket, byte-identical ($UP uploads, compacted ones included)"
# Each upload is one create-once PUT into an empty bucket (blocks under 16 MiB);
# the other PUTs are the bucket index, rewritten at every maintenance pass.
# Both counters move with each pass: compare them within one scrape.
for i in $(seq 1 50); do
	curl -s "$URL/metrics" >"$WORK/metrics.txt"
	PUTS=$(awk 'index($0, "unhex_objstore_requests_total{op=\"put\",result=\"ok\"} ") == 1 { print $2 }' "$WORK/metrics.txt")
	IDX=$(awk 'index($0, "unhex_bucket_index_total{event=\"writes\"} ") == 1 { print $2 }' "$WORK/metrics.txt")
	[ "$((PUTS - IDX))" = "$UP" ] && break
	sleep 0.1
done
[ "$((PUTS - IDX))" = "$UP" ] || fail "objstore put ok $PUTS, want one per upload ($UP) and index write ($IDX)"
[ "$(objm 'unhex_objstore_bytes_total{op="put",direction="out"}')" -ge "$(maint uploaded_bytes)" ] ||
	fail "objstore put bytes under uploaded_bytes $(maint uploaded_bytes)"
"$UNHEX" stats --server "$URL" >"$WORK/stats.txt" || fail "unhex stats --server"
grep -q '^object store s3' "$WORK/stats.txt" || fail "unhex stats shows no object store: $(cat "$WORK/stats.txt")"
awk -v n="$UP" '$1 == "put" && $2 >= n { ok = 1 } END { exit !ok }' "$WORK/stats.txt" ||
	fail "unhex stats: no put row of at least $UP ok requests: $(cat "$WORK/stats.txt")"
stop_server

# ---- a restart: every live block is found in the bucket, none uploaded again
start_server "$DATA" --maintain-interval 1s --block-range 10m "${S3[@]}"
NFILES=$(jq -r '.blocks.count' <<<"$(tenant_stats anonymous)")
for i in $(seq 1 300); do
	[ "$(maint upload_found)" -ge "$NFILES" ] && break
	sleep 0.2
done
[ "$(maint upload_found)" = "$NFILES" ] || fail "upload_found $(maint upload_found), want $NFILES"
[ "$(maint uploaded_blocks)" = 0 ] || fail "a restart uploaded blocks again: $(maint uploaded_blocks)"
# Each block found: its PUT answered 412, then a HEAD compared the size.
[ "$(objm 'unhex_objstore_requests_total{op="put",result="conflict"}')" = "$NFILES" ] ||
	fail "objstore put conflicts: $(curl -s "$URL/metrics" | grep '^unhex_objstore')"
[ "$(objm 'unhex_objstore_requests_total{op="head",result="ok"}')" = "$NFILES" ] ||
	fail "objstore heads: $(curl -s "$URL/metrics" | grep '^unhex_objstore')"
[ "$(maint upload_failures)" = 0 ] || fail "upload failures after a restart: $(grep upload "$WORK/server.$SERVER_N.log")"
answers "$WORK/got2"
diff -r "$WORK/expect" "$WORK/got2" >/dev/null || fail "answers changed across a restart"
stop_server

# ---- the block files lost: the blocks are read from the bucket, through a
# cache smaller than all of them (so copies are evicted while queries run)
BLK="$DATA/blocks/anonymous"
MAX=0 TOTAL=0 NBLK=0
for f in "$BLK"/*.blk; do
	n=$(stat -c %s "$f")
	TOTAL=$((TOTAL + n)) NBLK=$((NBLK + 1))
	[ "$n" -gt "$MAX" ] && MAX=$n
done
# Room for the pieces one render pins across every block, yet under the
# blocks' total, so that not every piece of every block fits.
CAP=$(((TOTAL + MAX) / 2))
[ "$TOTAL" -gt "$CAP" ] || fail "$NBLK blocks of $TOTAL bytes fit in a cache of $CAP bytes"
rm -f "$BLK"/*.blk
# cache_bytes: what the s3 cache holds now (every file; temporary ones too).
cache_bytes() {
	find "$DATA/s3cache" -type f -printf '%s\n' | awk '{ s += $1 } END { print s + 0 }'
}
start_server "$DATA" --maintain-interval 1000h --block-range 10m "${S3[@]}" \
	--storage.s3.cache-size "$CAP"
[ "$(jq -r '.blocks.count' <<<"$(tenant_stats anonymous)")" = "$NFILES" ] ||
	fail "blocks listed without their files: $(tenant_stats anonymous)"
answers "$WORK/got4"
diff -r "$WORK/expect" "$WORK/got4" >/dev/null ||
	fail "answers differ when the blocks are read from the bucket: $(diff -r "$WORK/expect" "$WORK/got4" | head -c 2000)"
USED=$(cache_bytes)
[ "$USED" -gt 0 ] || fail "nothing in the s3 cache"
[ "$USED" -le "$CAP" ] || fail "the s3 cache holds $USED bytes, over its cap of $CAP"
# bucket_reads WHAT KIND: unhex_store_bucket_read_WHAT_total{kind=KIND}.
bucket_reads() {
	curl -s "$URL/metrics" | awk -v m="unhex_store_bucket_read_$1_total{kind=\"$2\"}" 'index($0, m) == 1 { print $2 }'
}
[ "$(bucket_reads bytes whole)" = 0 ] || fail "a query downloaded whole blocks: $(bucket_reads bytes whole) bytes"
for k in index symbols pages; do
	[ "$(bucket_reads bytes $k)" -gt 0 ] || fail "no $k read from the bucket"
	[ "$(bucket_reads bytes $k)" -le $((2 * $(bucket_reads needed_bytes $k))) ] ||
		fail "$k: $(bucket_reads bytes $k) bytes fetched for $(bucket_reads needed_bytes $k) needed"
done
grep -q '^unhex_store_bucket_cache_hit_ratio 0\.[0-9]*[1-9]' <<<"$(curl -s "$URL/metrics")" ||
	fail "no cache hit ratio above 0 in /metrics after the answers read twice"
ls "$BLK"/*.blk >/dev/null 2>&1 && fail "block files came back in $BLK"
note "$NBLK blocks ($TOTAL bytes) read from the bucket by sections: same answers; cache $USED <= $CAP bytes; pages $(bucket_reads bytes pages) bytes for $(bucket_reads needed_bytes pages) needed"

# RGW stopped under a running server: every answer is quick to come and
# warns of the blocks whose pieces are not cached (never a 503, never a crash)
rgw_stop
# render_all WHAT: renders every service, each a 200; counts the warnings naming a block.
render_all() {
	local svc q W
	WARNED=0
	for svc in $(cd "$WORK/expect" && ls render.* | sed 's/^render\.//'); do
		q=$(selector "$CPU" "$svc")
		STATUS=$(curl -sS -o "$WORK/body" -w '%{http_code}' --max-time 300 \
			"$URL/pyroscope/render?query=$q&from=$FROM&until=$UNTIL&maxNodes=65536") ||
			fail "render $svc $1: curl failed"
		[ "$STATUS" = 200 ] || fail "render $svc $1: $STATUS $(cat "$WORK/body")"
		W=$(jq -r '(.warnings // [])[]' "$WORK/body")
		if [ -n "$W" ]; then
			grep -Eq 'block [0-9a-f]{32} .* is skipped' <<<"$W" || fail "warning without a block: $W"
			WARNED=$((WARNED + 1))
			note "$svc $1: $(head -n1 <<<"$W")"
		fi
	done
}
render_all "with RGW stopped"
[ "$WARNED" -gt 0 ] || fail "no answer warned of the blocks the stopped bucket cannot give"
grep -q 'the bucket: ' "$WORK/server.$SERVER_N.log" || fail "no log line names the bucket's error"
[ "$(cache_bytes)" -le "$CAP" ] || fail "the s3 cache went over its cap while RGW was down"
stop_server

# A restart with RGW stopped: the blocks cannot be found, so every answer
# warns of them by id (the server starts all the same)
start_server "$DATA" --maintain-interval 1000h --block-range 10m "${S3[@]}" \
	--storage.s3.cache-size "$CAP"
render_all "after a restart with RGW stopped"
[ "$WARNED" -gt 0 ] || fail "no answer warned of the blocks missing from a stopped bucket"
grep -q 'its file is missing, and the bucket: ' "$WORK/server.$SERVER_N.log" ||
	fail "no log line says why the blocks are missing"
stop_server

# ---- RGW stopped: the server still starts, ingests and answers; uploads wait
rgw_stop
start_server "$WORK/down" --maintain-interval 1s --block-range 10m "${S3[@]}"
ingest_manifest "$WL"
answers "$WORK/got3"
diff -r "$WORK/expect" "$WORK/got3" >/dev/null || fail "answers differ while the bucket is down"
for i in $(seq 1 300); do
	[ "$(maint upload_failures)" -gt 0 ] && break
	sleep 0.2
done
[ "$(maint upload_failures)" -gt 0 ] || fail "no upload failure counted with RGW stopped"
grep -q 'retried at the next maintenance pass' "$WORK/server.$SERVER_N.log" ||
	fail "no log line for the failed upload"
stop_server
note "objstore blocks: ok"

#!/usr/bin/env bash
# s3_query.sh - a 24 h query of one service of a 20-instance workload read
# from a bucket (a real Ceph RGW on loopback, tests/integration/rgw.sh),
# cold cache and warm, against the same query on local disk; with the
# bytes the bucket gave per kind (index, symbols, pages) next to the bytes
# of the sections and pages the query needed and the size of the blocks in
# its range.  Prints a Markdown table for bench/RESULTS.md ("Queries from
# the bucket").  Issue 12's targets: cold <= 10x and warm <= 1.5x local,
# bytes fetched <= 2x the sections needed.
#
#   bash bench/s3_query.sh BUILD_DIR [OUT_DIR]      (OUT_DIR: bench/out-s3)
#   env: INSTANCES=20 SERVICES=2 MINUTES=1440 INTERVAL=60 RUNS=5
#        WORKLOAD=DIR   reuse an unhex-workload directory
# Needs the Ceph packages (ceph-mon ceph-osd radosgw), curl and jq.
set -euo pipefail

B=$(cd "${1:?usage: s3_query.sh BUILD_DIR [OUT_DIR]}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib_bench.sh
. "$HERE/lib_bench.sh"
OUT=${2:-$HERE/out-s3}
INSTANCES=${INSTANCES:-20}
SERVICES=${SERVICES:-2}
MINUTES=${MINUTES:-1440}
INTERVAL=${INTERVAL:-60}
RUNS=${RUNS:-5}
END=1767225600
PTYPE=process_cpu:cpu:nanoseconds:cpu:nanoseconds

bench_need_built s3_query.sh bench/unhex-workload cli/unhex
for c in curl jq; do
	command -v "$c" >/dev/null || { echo "s3_query.sh: $c is needed" >&2; exit 1; }
done
# shellcheck source=bench/lib_rgw.sh
. "$HERE/lib_rgw.sh"
trap 'rc=$?; bench_stop_server; rgw_stop; set +e; (exit $rc); cleanup' EXIT

if [ -n "${WORKLOAD:-}" ]; then
	WL=$(cd "$WORKLOAD" && pwd)
else
	WL=$OUT/workload
	echo "== workload: $SERVICES services, $INSTANCES instances each, $MINUTES minutes every ${INTERVAL}s" >&2
	"$B/bench/unhex-workload" --out "$WL" --services "$SERVICES" --instances "$INSTANCES" \
		--minutes "$MINUTES" --interval "$INTERVAL" --end "$END" --seed 1 --quiet
fi
SERVICE=$(awk -F'\t' 'NR == 1 {sub(/\..*/, "", $2); print $2}' "$WL/manifest.tsv")
FROM=$(awk -F'\t' 'NR == 1 || $3 < m {m = $3} END {print m}' "$WL/manifest.tsv")
UNTIL=$(awk -F'\t' 'NR == 1 || $3 > m {m = $3} END {print m + 10}' "$WL/manifest.tsv")
echo "   $(wc -l <"$WL/manifest.tsv") files; the query: service $SERVICE over [$FROM, $UNTIL)" >&2

echo "== RGW on loopback" >&2
rgw_start
rgw_s3 unhex-bench

# metric NAME KIND: a sample of /metrics ("" KIND: the unlabelled one).
metric() {
	local m=$1
	[ -z "${2:-}" ] || m="$1{kind=\"$2\"}"
	curl -s "$URL/metrics" | awk -v m="$m" 'index($0, m " ") == 1 { print $2 }'
}
blocks() { curl -s "$URL/api/v1/stats" | jq -r '.blocks.count'; }

echo "== ingest, seal, compact, upload" >&2
DATA=$OUT/data
bench_start_server "$DATA" "$OUT/serve-ingest.log" --maintain-interval 1s "${S3[@]}"
bench_ingest "$WL" "$WL/manifest.tsv" all 2
echo "   $INGEST_PAIRS pairs in ${INGEST_S}s" >&2
# Settled: one block count twice 5 s apart, and every block uploaded.
prev=
for _ in $(seq 1 600); do
	n=$(blocks)
	up=$(curl -s "$URL/metrics" | awk 'index($0, "unhex_store_maintenance_total{action=\"uploaded_blocks\"}") == 1 { print $2 }')
	[ -n "$prev" ] && [ "$n" = "$prev" ] && [ "${up:-0}" -ge "$n" ] && break
	prev=$n
	sleep 5
done
bench_stop_server
BLOCKS_BYTES=$(find "$DATA/blocks" -name '*.blk' -printf '%s\n' | awk '{s += $1} END {print s + 0}')
NBLK=$(find "$DATA/blocks" -name '*.blk' | wc -l)
echo "   $NBLK blocks, $BLOCKS_BYTES bytes" >&2

# render TAG: one render of SERVICE; sets MS (wall ms).
render() {
	local t
	t=$(curl -sS -o "$OUT/$1.json" -w '%{time_total}' --fail --get \
		--data-urlencode "query=$PTYPE{service_name=\"$SERVICE\"}" \
		--data-urlencode "from=$FROM" --data-urlencode "until=$UNTIL" "$URL/pyroscope/render")
	MS=$(awk -v t="$t" 'BEGIN {printf "%.1f", t * 1000}')
}
# loop TAG: RUNS warm renders; sets WARM_MS (median).
loop() {
	: >"$OUT/$1.times"
	for i in $(seq 1 "$RUNS"); do
		render "$1"
		echo "$MS" >>"$OUT/$1.times"
	done
	WARM_MS=$(median <"$OUT/$1.times")
}
# fetched: bytes the GETs of queries fetched so far (index, symbols, pages, whole).
fetched() {
	local s=0 k
	for k in index symbols pages whole; do s=$((s + $(metric unhex_store_bucket_read_bytes_total $k))); done
	echo $s
}

echo "== local disk: the first render after a start, then $RUNS" >&2
bench_start_server "$DATA" "$OUT/serve-local.log" --maintain-interval 1000h
render local_first
LOCAL_COLD=$MS
loop local
LOCAL_WARM=$WARM_MS
bench_stop_server
jq -c 'del(.timeline, .symbolization)' "$OUT/local.json" >"$OUT/local.cmp"

echo "== from the bucket: block files removed, cold cache, then $RUNS warm" >&2
find "$DATA/blocks" -name '*.blk' -delete
bench_start_server "$DATA" "$OUT/serve-s3.log" --maintain-interval 1000h "${S3[@]}"
FOOTER=$(metric unhex_store_bucket_read_bytes_total footer)
render s3_cold
S3_COLD=$MS
COLD_BYTES=$(fetched)
declare -A GOT NEED GETS
for k in index symbols pages whole; do
	GOT[$k]=$(metric unhex_store_bucket_read_bytes_total $k)
	NEED[$k]=$(metric unhex_store_bucket_read_needed_bytes_total $k)
	GETS[$k]=$(metric unhex_store_bucket_read_requests_total $k)
done
loop s3_warm
S3_WARM=$WARM_MS
WARM_BYTES=$(($(fetched) - COLD_BYTES))
RATIO=$(metric unhex_store_bucket_cache_hit_ratio)
bench_stop_server
jq -c 'del(.timeline, .symbolization)' "$OUT/s3_cold.json" >"$OUT/s3.cmp"
SAME=yes
cmp -s "$OUT/local.cmp" "$OUT/s3.cmp" || SAME=NO

NEEDED=$((NEED[index] + NEED[symbols] + NEED[pages]))
cat <<EOF

| query: 1 service of $SERVICES × $INSTANCES instances, $((MINUTES / 60)) h | ms | bytes from the bucket |
|---|---:|---:|
| local disk, first render after a start | $LOCAL_COLD | – |
| local disk, warm (median of $RUNS) | $LOCAL_WARM | – |
| bucket, cold cache | $S3_COLD | $COLD_BYTES |
| bucket, warm cache (median of $RUNS) | $S3_WARM | $WARM_BYTES |

| kind | GETs | bytes fetched | bytes needed (stored sizes) |
|---|---:|---:|---:|
| index sections | ${GETS[index]} | ${GOT[index]} | ${NEED[index]} |
| symbol sections | ${GETS[symbols]} | ${GOT[symbols]} | ${NEED[symbols]} |
| sample pages | ${GETS[pages]} | ${GOT[pages]} | ${NEED[pages]} |
| whole blocks | ${GETS[whole]} | ${GOT[whole]} | – |
| footers (at start, not per query) | – | $FOOTER | – |

Cold: $COLD_BYTES bytes fetched for $NEEDED bytes of sections and pages needed
($(awk -v a="$COLD_BYTES" -v b="$NEEDED" 'BEGIN {printf "%.2f", b ? a / b : 0}')×; target ≤ 2×), of $BLOCKS_BYTES bytes in $NBLK blocks.
Cold / local warm: $(awk -v a="$S3_COLD" -v b="$LOCAL_WARM" 'BEGIN {printf "%.1f", a / b}')× (target ≤ 10×);
warm / local warm: $(awk -v a="$S3_WARM" -v b="$LOCAL_WARM" 'BEGIN {printf "%.2f", a / b}')× (target ≤ 1.5×).
Cache hit ratio after the warm renders: $RATIO.  Same flame graph as local: $SAME.
EOF

#!/usr/bin/env bash
# month_rss.sh - a short reproducer of the month row of bench_storage.sh
# (issue 11: "server RSS flat from day 8 on"): a month-shaped workload with
# a release a day, ingested day by day into one `unhex serve --retention`,
# printing after each day the server's VmRSS, VmHWM, RssAnon, RocksDB's
# memtables, the head's stack nodes, the blocks and the last day's render
# time; and in OUT_DIR/memory.md, where that memory is: glibc's heap
# (in use, free, mapped chunks), RocksDB's memtables, block cache and table
# readers, the symbol cache, the ingest pool, the symbolization memo, the
# head's partitions and the block footers referenced.  Fewer profiles
# than the full month (a coarser cadence) and fewer days, so it runs in
# about a quarter of an hour here and shows the same per-day growth.
#
#   bash bench/month_rss.sh BUILD_DIR [OUT_DIR]     (OUT_DIR: bench/out-month-rss)
#   env: DAYS=16  CADENCE=900  RETENTION=7d  PARALLEL=8
#        DAY_SECONDS=50   each simulated day lasts at least this long in wall
#                 clock (sleeping after its ingest), as a day of the full
#                 month does here: maintenance runs every minute and replaced
#                 partitions wait for readers in wall-clock time, so the pace
#                 decides how many days of them are in memory at once
#        WL=DIR   reuse a workload generated with the same DAYS and CADENCE
#        SERVE_ARGS="..."  more `unhex serve` flags
set -euo pipefail

B=$(cd "${1:?usage: month_rss.sh BUILD_DIR [OUT_DIR]}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${2:-$HERE/out-month-rss}
DAYS=${DAYS:-16}
CADENCE=${CADENCE:-900}
RETENTION=${RETENTION:-7d}
DAY_SECONDS=${DAY_SECONDS:-50}
PARALLEL=${PARALLEL:-8}
END=1767225600 # the generator's default end: fixed query ranges
PTYPE=process_cpu:cpu:nanoseconds:cpu:nanoseconds

for c in curl jq; do
	command -v "$c" >/dev/null || { echo "month_rss.sh: $c is needed" >&2; exit 1; }
done
mkdir -p "$OUT"
# shellcheck source=bench/lib_bench.sh
. "$HERE/lib_bench.sh"
trap bench_stop_server EXIT
kib() { awk -v f="$2" '$1 == f":" {print $2}' "/proc/$1/status"; }
mib() { awk -v k="$1" 'BEGIN {printf "%.1f", k / 1024}'; }

WL=${WL:-$OUT/workload}
if [ ! -s "$WL/manifest.tsv" ]; then
	t0=$(now_ns)
	"$B/bench/unhex-workload" --out "$WL" --shape month --days "$DAYS" --cadence "$CADENCE" \
		--quiet
	echo "generated in $(secs "$t0" "$(now_ns)") s" >&2
fi
SERVICE=$(awk -F'\t' 'NR == 1 {sub(/\..*/, "", $2); print $2}' "$WL/manifest.tsv")
data=$OUT/server-data
rm -rf "$data"
# shellcheck disable=SC2086
bench_start_server "$data" "$OUT/serve.log" --retention "$RETENTION" ${SERVE_ARGS:-}
echo "| day | VmRSS MiB | VmHWM MiB | RssAnon MiB | memtables MiB | head stack nodes | blocks | expired blocks | last 24 h warm ms |"
echo "|---|---|---|---|---|---|---|---|---|"
# memory_row DAY: one row of OUT/memory.md from /metrics (docs/api.md), in
# MiB; "RSS - heap" is VmRSS less what glibc has handed out (arenas' chunks
# in use and mapped chunks): the binary, thread stacks, and heap pages the
# allocator keeps.
memory_row() {
	local m=$OUT/metrics-day$1.txt rss
	curl -s "$URL/metrics" >"$m"
	rss=$(kib "$SERVER_PID" VmRSS)
	awk -v d="$1" -v rss="$rss" -v nodes="$(json_num "$OUT/stats-day$1.json" stacks)" '
		$1 ~ /^unhex_/ && NF == 2 {v[$1] = $2}
		function m(k) {return sprintf("%.1f", v[k] / 1048576)}
		END {
			heap = v["unhex_malloc_in_use_bytes"] + v["unhex_malloc_mmapped_bytes"]
			printf "| %d | %.1f | %s | %s | %s | %.1f | %s | %s | %s | %s | %s | %s | %d (%d) | %d | %d |\n",
				d, rss / 1024, m("unhex_malloc_in_use_bytes"), m("unhex_malloc_mmapped_bytes"),
				m("unhex_malloc_free_bytes"), rss / 1024 - heap / 1048576,
				m("unhex_store_memtable_bytes"), m("unhex_store_block_cache_bytes"),
				m("unhex_store_table_readers_bytes"), m("unhex_store_symbol_cache_bytes"),
				m("unhex_ingest_pool_bytes"), m("unhex_symbolize_memo_bytes"),
				v["unhex_store_head_partitions"], v["unhex_store_head_partitions_retired"],
				v["unhex_store_blocks_referenced"], nodes
		}' "$m"
}
{
	echo "| day | VmRSS | malloc in use | mmapped | malloc free | RSS - heap | memtables |" \
		"block cache | table readers | symbol cache | ingest pool | symbolize memo |" \
		"head partitions (retired) | blocks referenced | head stack nodes |"
	echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
} >"$OUT/memory.md"
start=$((END - DAYS * 86400))
for d in $(seq 1 "$DAYS"); do
	lo=$((start + (d - 1) * 86400))
	hi=$((lo + 86400))
	awk -F'\t' -v lo="$lo" -v hi="$hi" '$3 >= lo && $3 < hi' "$WL/manifest.tsv" >"$OUT/day$d.tsv"
	t_day=$(now_ns)
	bench_ingest "$WL" "$OUT/day$d.tsv" "day$d" "$PARALLEL"
	[ "$INGEST_FAILED" = 0 ] || echo "day $d: $INGEST_FAILED files failed" >&2
	bench_render "day$d" "$lo" "$hi" 3
	left=$(awk -v a="$t_day" -v b="$(now_ns)" -v d="$DAY_SECONDS" 'BEGIN {l = d - (b - a) / 1e9; print (l > 0 ? l : 0)}')
	sleep "$left"
	st=$OUT/stats-day$d.json
	"$B/cli/unhex" stats --server "$URL" --json >"$st"
	# RocksDB's memtables (docs/api.md): the head's writes since the last seal
	mt=$(curl -s "$URL/metrics" | awk '$1 == "unhex_store_memtable_bytes" {print $2 / 1024}')
	echo "| $d | $(mib "$(kib "$SERVER_PID" VmRSS)") | $(mib "$(kib "$SERVER_PID" VmHWM)") |" \
		"$(mib "$(kib "$SERVER_PID" RssAnon)") | $(mib "${mt:-0}") | $(json_num "$st" stacks) |" \
		"$(jq -r .blocks.count "$st") | $(jq -r .retention.expired_blocks "$st") | $WARM |"
	memory_row "$d" >>"$OUT/memory.md"
done
echo
cat "$OUT/memory.md"

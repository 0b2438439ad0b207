#!/usr/bin/env bash
# bench_storage.sh - baselines of issue 11 (storage that can run for a
# year) on today's store, for the shapes of unhex-workload:
#
#   bench    the bench workload (1 h, 20 instances, ~100 distinct stacks per
#            profile), as bench/run.sh and bench/bench_query.sh use it
#   diverse  --shape diverse: ~590,000 pprof samples over ~187,000 distinct
#            stacks and 30,000 functions
#   month    --shape month: 30 days of 20 instances with a release a day,
#            one profile per instance every 5 minutes (the month scaled by
#            1/30), ingested day by day
#
# For bench and diverse: generation time; in-process ingest (bench-ingest);
# ingest through `unhex serve` + `unhex ingest` with the server's CPU time
# (pprof samples per server CPU-second) and memory (VmRSS, VmHWM) before,
# during and after; bytes on disk after `store_compact()` against the
# gzipped input; bytes per stack-trie node and per location of the symbols
# column family (`ldb approxsize` per record kind when rocksdb-tools is
# installed, else the family's total over both); the merged flame graph of
# the first QUERY_SAMPLES pprof samples (files in time order) over HTTP and
# in process, cold and warm, before and after compaction, with callgrind
# instruction counts per warm render; and `go tool pprof -proto` merging the
# same files.  For month: per simulated day the server's RSS, HWM and CPU,
# the data directory's bytes, the symbols' counts and bytes, and the render
# of the last 24 h; then the same 24 h on a fresh store that holds only
# them.  Prints Markdown for bench/RESULTS.md ("Storage baselines (issue
# 11)"); everything else is in OUT_DIR.
#
#   bash bench/bench_storage.sh BUILD_DIR [OUT_DIR]    (OUT_DIR: bench/out-storage)
#   env: SHAPES="bench diverse month"  RUNS=10
#        PARALLEL=8             concurrent `unhex ingest` (one per series
#                               name at a time); each keep-alive connection
#                               waits ~40 ms per file for the response body
#                               (Nagle against delayed ACK: see RESULTS.md),
#                               so wall time depends on it, server CPU not
#        QUERY_SAMPLES=300000   pprof samples the merged flame graph covers
#        GO_PPROF=0             skip go tool pprof
#        CALLGRIND=0            skip the callgrind instruction counts
#        MONTH_DAYS=30  MONTH_CADENCE=300   (MONTH_CADENCE=10 is the real month)
#        MONTH_INPROC=0         skip bench-ingest over the whole month
#                               (it holds every file in memory: ~3 GB)
#        MONTH_RETENTION=7d     the month's server runs with --retention
#                               this ("" for none); the blocks and what
#                               retention removed are reported per day
set -euo pipefail

B=$(cd "${1:?usage: bench_storage.sh BUILD_DIR [OUT_DIR]}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib_bench.sh
. "$HERE/lib_bench.sh"
OUT=${2:-$HERE/out-storage}
SHAPES=${SHAPES:-bench diverse month}
RUNS=${RUNS:-10}
PARALLEL=${PARALLEL:-8}
QUERY_SAMPLES=${QUERY_SAMPLES:-300000}
GO_PPROF=${GO_PPROF:-1}
CALLGRIND=${CALLGRIND:-1}
MONTH_DAYS=${MONTH_DAYS:-30}
MONTH_CADENCE=${MONTH_CADENCE:-300}
MONTH_INPROC=${MONTH_INPROC:-1}
MONTH_RETENTION=${MONTH_RETENTION:-7d}
END=1767225600 # 2026-01-01T00:00:00Z, the generator's default: fixed query ranges
PTYPE=process_cpu:cpu:nanoseconds:cpu:nanoseconds
TICK=$(getconf CLK_TCK)

bench_need_built bench_storage.sh bench/unhex-workload bench/bench-ingest bench/bench-query cli/unhex tools/pprofinfo
command -v curl >/dev/null || { echo "bench_storage.sh: curl is needed" >&2; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT"
trap bench_stop_server EXIT

log() { echo "$*" >&2; }
calc() { awk "BEGIN {printf \"$1\", $2}"; } # calc FORMAT EXPR
kib() { awk -v f="$2" '$1 == f":" {print $2}' "/proc/$1/status"; } # kib PID VmRSS
cpu_s() { awk -v t="$TICK" '{sub(/.*\) /, ""); printf "%.2f", ($12 + $13) / t}' "/proc/$1/stat"; }
mib() { calc "%.1f" "$1 / 1024"; }
mb() { calc "%.2f" "$1 / 1e6"; }
field() { tr ' ' '\n' <"$1" | sed -n "s/^$2=//p"; } # field FILE KEY: every value, in order
sst_bytes() { find "$1" -name '*.sst' -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }

# symbols_per_kind DATA TAG: bytes of stack nodes (kind 5) and locations
# (kind 4) of tenant 1 in the symbols family, by `ldb approxsize` on a copy
# (ldb opens the store for writing); sets STACK_BYTES and LOC_BYTES, or
# leaves them empty without ldb.
symbols_per_kind() {
	STACK_BYTES='' LOC_BYTES=''
	command -v ldb >/dev/null || return 0
	rm -rf "$OUT/ldb-$2"
	cp -r "$1" "$OUT/ldb-$2"
	local p kind sum
	for kind in 4 5; do
		sum=0
		for p in $(seq 1 8); do
			sum=$((sum + $(ldb --db="$OUT/ldb-$2" --column_family=symbols approxsize --hex \
				--from="$(printf '0x00000001%08x%02x' "$p" "$kind")" \
				--to="$(printf '0x00000001%08x%02x' "$p" $((kind + 1)))" 2>/dev/null || echo 0)))
		done
		if [ "$kind" = 4 ]; then LOC_BYTES=$sum; else STACK_BYTES=$sum; fi
	done
	rm -rf "$OUT/ldb-$2"
}

# render_instructions DATA FROM UNTIL TAG: callgrind instructions per warm
# in-process render, ((1 cold + 3 warm) - (1 cold + 1 warm)) / 2, in
# millions; sets R_INSTR ("deadline" when a render under callgrind runs past
# the 30 s query deadline, which bench-query cannot lift).
render_instructions() {
	R_INSTR=''
	[ "$CALLGRIND" = 1 ] && command -v valgrind >/dev/null || return 0
	local n t1 t3
	for n in 1 3; do
		if ! valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.render.$4.$n" \
			--toggle-collect=query_render "$B/bench/bench-query" --data "$1" \
			--query "$PTYPE{service_name=\"$SERVICE\"}" --from "$2" --until "$3" --runs "$n" \
			>/dev/null 2>"$OUT/callgrind.render.$4.$n.log"; then
			R_INSTR=deadline
			return 0
		fi
	done
	t1=$(sed -n 's/^summary: //p' "$OUT/callgrind.render.$4.1")
	t3=$(sed -n 's/^summary: //p' "$OUT/callgrind.render.$4.3")
	R_INSTR=$(calc "%.1f" "($t3 - $t1) / 2 / 1e6")
}

# ingest_instructions WL TAG: callgrind instructions inside ingest_legacy()
# over every file of WL into a fresh store (bench-ingest); sets I_INSTR (total).
ingest_instructions() {
	I_INSTR=''
	[ "$CALLGRIND" = 1 ] && command -v valgrind >/dev/null || return 0
	rm -rf "$OUT/cg-data-$2"
	valgrind --tool=callgrind --callgrind-out-file="$OUT/callgrind.ingest.$2" \
		--toggle-collect=ingest_legacy "$B/bench/bench-ingest" --manifest "$1" \
		--data "$OUT/cg-data-$2" >/dev/null 2>"$OUT/callgrind.ingest.$2.log" || return 0
	I_INSTR=$(sed -n 's/^summary: //p' "$OUT/callgrind.ingest.$2")
	rm -rf "$OUT/cg-data-$2"
}

# go_merge WL FILES TAG: go tool pprof -proto over FILES (one invocation);
# sets GO_S, GO_RSS (MiB), GO_TOTAL (cpu ns of the merged profile).
go_merge() {
	GO_S='' GO_RSS='' GO_TOTAL=''
	[ "$GO_PPROF" = 1 ] && command -v go >/dev/null || return 0
	export GOFLAGS='' GOTOOLCHAIN=local
	local t0
	mapfile -t GO_FILES <"$2"
	t0=$(now_ns)
	(cd "$1" && /usr/bin/time -f '%M' -o "$OUT/go-$3.rss" \
		go tool pprof -proto "${GO_FILES[@]}" >"$OUT/merged-$3.pb.gz" 2>"$OUT/go-$3.log")
	GO_S=$(secs "$t0" "$(now_ns)")
	GO_RSS=$(awk '{printf "%.0f", $1 / 1024}' "$OUT/go-$3.rss")
	GO_TOTAL=$(go tool pprof -raw "$OUT/merged-$3.pb.gz" 2>/dev/null |
		awk '/^Samples:/ {on = 1; next} /^Locations/ {on = 0} on && $2 ~ /^[0-9]+:$/ {s += $2} END {printf "%.0f", s}')
}

# select_query WL TAG: the files of WL in time order up to QUERY_SAMPLES
# pprof samples (whole seconds: every file of the last second is in); writes
# OUT/query-TAG.files (paths) and sets Q_FROM, Q_UNTIL, Q_FILES, Q_SAMPLES.
select_query() {
	sort -t$'\t' -k3,3n "$1/manifest.tsv" >"$OUT/sorted-$2.tsv"
	local path t n total=0 last=
	: >"$OUT/query-$2.files"
	while IFS=$'\t' read -r path _ t; do
		if [ "$total" -ge "$QUERY_SAMPLES" ] && [ "$t" != "$last" ]; then
			break
		fi
		n=$("$B/tools/pprofinfo" --json "$1/$path" | grep -o '"samples":[0-9]*' | head -1 | cut -d: -f2)
		total=$((total + n))
		last=$t
		echo "$path" >>"$OUT/query-$2.files"
	done <"$OUT/sorted-$2.tsv"
	Q_FROM=$(head -1 "$OUT/sorted-$2.tsv" | cut -f3)
	Q_UNTIL=$((last + 1))
	Q_FILES=$(wc -l <"$OUT/query-$2.files")
	Q_SAMPLES=$total
}

echo "== machine" >&2
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
log "   $CPU, nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg)"
REPORT=$OUT/report.md
{
	echo "machine: $CPU, nproc $(nproc); commit $(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo unknown)"
	echo
} >"$REPORT"

# ---- bench and diverse ------------------------------------------------------

static_shape() { # static_shape NAME GENERATOR-ARGS...
	local shape=$1 wl=$OUT/$1/workload
	shift
	mkdir -p "$OUT/$shape"
	local load0 t0 gen_s gz files
	load0=$(load1)
	log "== $shape: unhex-workload $*"
	t0=$(now_ns)
	"$B/bench/unhex-workload" --out "$wl" "$@" 2>"$OUT/$shape/gen.log"
	gen_s=$(secs "$t0" "$(now_ns)")
	cat "$OUT/$shape/gen.log" >&2
	files=$(wc -l <"$wl/manifest.tsv")
	gz=$(cut -f1 "$wl/manifest.tsv" | (cd "$wl" && xargs stat -c %s) | awk '{s += $1} END {print s}')
	SERVICE=$(awk -F'\t' 'NR == 1 {sub(/\..*/, "", $2); print $2}' "$wl/manifest.tsv")

	log "== $shape: bench-ingest (one thread, in process)"
	"$B/bench/bench-ingest" --manifest "$wl" --data "$OUT/$shape/inproc-data" >"$OUT/$shape/bench-ingest.txt"
	grep -v '^RESULT' "$OUT/$shape/bench-ingest.txt" >&2
	local bi=$OUT/$shape/bench-ingest.txt pprof_samples
	pprof_samples=$(field "$bi" pprof_samples)

	log "== $shape: unhex serve + unhex ingest x$PARALLEL"
	local data=$OUT/$shape/server-data rss0 cpu0 cpu1 hwm_ingest rss_ingest
	bench_start_server "$data" "$OUT/$shape/serve1.log"
	rss0=$(kib "$SERVER_PID" VmRSS)
	cpu0=$(cpu_s "$SERVER_PID")
	bench_ingest "$wl" "$wl/manifest.tsv" "$shape" "$PARALLEL"
	cpu1=$(cpu_s "$SERVER_PID")
	hwm_ingest=$(kib "$SERVER_PID" VmHWM)
	sleep 2
	rss_ingest=$(kib "$SERVER_PID" VmRSS)
	local srv_cpu
	srv_cpu=$(calc "%.2f" "$cpu1 - $cpu0")
	log "   $INGEST_PAIRS pairs in ${INGEST_S}s, server CPU ${srv_cpu}s, $INGEST_FAILED failed files; HWM $(mib "$hwm_ingest") MiB"

	log "== $shape: query of the first $QUERY_SAMPLES pprof samples"
	select_query "$wl" "$shape"
	log "   $Q_FILES files, $Q_SAMPLES pprof samples, [$Q_FROM, $Q_UNTIL)"
	bench_render "$shape-http-before" "$Q_FROM" "$Q_UNTIL" "$RUNS"
	local h1_cold=$COLD h1_warm=$WARM h1_min=$WARM_MIN h1_bytes=$BYTES h1_ticks=$TICKS
	local rss_query hwm_query
	rss_query=$(kib "$SERVER_PID" VmRSS)
	hwm_query=$(kib "$SERVER_PID" VmHWM)
	log "   HTTP cold $h1_cold ms, warm $h1_warm ms (min $h1_min), $h1_bytes bytes; RSS $(mib "$rss_query") MiB, HWM $(mib "$hwm_query") MiB"
	bench_stop_server
	local disk_stop
	disk_stop=$(du -sb "$data" | cut -f1)

	log "== $shape: bench-query (in process) before and after store_compact"
	"$B/bench/bench-query" --data "$data" --query "$PTYPE{service_name=\"$SERVICE\"}" \
		--from "$Q_FROM" --until "$Q_UNTIL" --runs "$RUNS" --compact --out "$OUT/$shape/inproc.json" \
		>"$OUT/$shape/bench-query.txt"
	cat "$OUT/$shape/bench-query.txt" >&2
	local bq=$OUT/$shape/bench-query.txt disk_comp sst_comp
	disk_comp=$(du -sb "$data" | cut -f1)
	sst_comp=$(sst_bytes "$data")
	"$B/cli/unhex" stats --data "$data" --json >"$OUT/$shape/stats.json"
	local st=$OUT/$shape/stats.json stacks locs sym_bytes sample_bytes
	stacks=$(json_num "$st" stacks)
	locs=$(json_num "$st" locations)
	sym_bytes=$(json_num "$st" symbols)
	sample_bytes=$(json_num "$st" samples)

	log "== $shape: server on the compacted store"
	bench_start_server "$data" "$OUT/$shape/serve2.log"
	bench_render "$shape-http-after" "$Q_FROM" "$Q_UNTIL" "$RUNS"
	local h2_cold=$COLD h2_warm=$WARM h2_min=$WARM_MIN
	bench_stop_server

	log "== $shape: callgrind, go tool pprof, symbols per kind"
	render_instructions "$data" "$Q_FROM" "$Q_UNTIL" "$shape"
	ingest_instructions "$wl" "$shape"
	go_merge "$wl" "$OUT/query-$shape.files" "$shape"
	symbols_per_kind "$data" "$shape"

	log "== $shape: blocks (bench-blocks: everything sealed, then compacted)"
	local bb=$OUT/$shape/bench-blocks.txt bdata=$OUT/$shape/blocks-data
	"$B/bench/bench-blocks" --manifest "$wl" --data "$bdata" >"$bb"
	grep -v '^RESULT' "$bb" >&2
	"$B/bench/bench-query" --data "$bdata" --query "$PTYPE{service_name=\"$SERVICE\"}" \
		--from "$Q_FROM" --until "$Q_UNTIL" --runs "$RUNS" --out "$OUT/$shape/inproc-blocks.json" \
		>"$OUT/$shape/bench-query-blocks.txt"
	local bqb=$OUT/$shape/bench-query-blocks.txt
	bench_start_server "$bdata" "$OUT/$shape/serve3.log"
	bench_render "$shape-http-blocks" "$Q_FROM" "$Q_UNTIL" "$RUNS"
	local h3_cold=$COLD h3_warm=$WARM h3_min=$WARM_MIN h3_ticks=$TICKS same=differs
	local hwm_blocks
	hwm_blocks=$(kib "$SERVER_PID" VmHWM)
	bench_stop_server
	cmp -s <(jq -cS 'del(.symbolization, .timeline)' "$OUT/$shape-http-before.json") \
		<(jq -cS 'del(.symbolization, .timeline)' "$OUT/$shape-http-blocks.json") && same=identical
	local b_total b_l1 b_head ratio_b
	b_l1=$(field "$bb" l1_block_bytes)
	b_head=$(field "$bb" l1_head_bytes)
	b_total=$((b_l1 + b_head))
	[ -z "$GO_S" ] || ratio_b=$(calc "%.0f" "$GO_S * 1000 / $h3_warm")
	local load_end
	load_end=$(load1)

	local per_node per_stack per_loc ratio_w ratio_c ratio_i
	per_node=$(calc "%.1f" "$sym_bytes / ($stacks + $locs)")
	per_stack=${STACK_BYTES:+$(calc "%.1f" "$STACK_BYTES / $stacks")}
	per_loc=${LOC_BYTES:+$(calc "%.1f" "$LOC_BYTES / $locs")}
	if [ -n "$GO_S" ]; then
		ratio_w=$(calc "%.0f" "$GO_S * 1000 / $h1_warm")
		ratio_c=$(calc "%.0f" "$GO_S * 1000 / $h1_cold")
		ratio_i=$(calc "%.0f" "$GO_S * 1000 / $(field "$bq" warm_median_ms | head -1)")
	fi
	{
		echo "### $shape: \`unhex-workload $*\`"
		echo
		echo "load average (1 min) $load0 -> $load_end"
		echo
		echo "| measure | value |"
		echo "|---|---|"
		echo "| workload | $files profiles, $(mb "$gz") MB gzipped, $pprof_samples pprof samples = $(field "$bi" samples) stored pairs; generated in ${gen_s} s ($(tail -1 "$OUT/$shape/gen.log" | sed 's/^unhex-workload: //')) |"
		echo "| in process (bench-ingest), one thread | $(field "$bi" pprof_samples_per_s) pprof samples/s wall, $(field "$bi" pprof_samples_per_cpu_s) per thread CPU-second ($(field "$bi" cpu_s) s CPU, $(field "$bi" wall_s) s wall); peak RSS $(mib "$(field "$bi" peak_rss_kib)") MiB with the input held |"
		echo "| in process: disk after flush + close (no compaction) | $(mb "$(field "$bi" disk_close)") MB = $(calc "%.1f" "100 * $(field "$bi" disk_close) / $gz") % of gz |"
		echo "| server ingest (unhex ingest x$PARALLEL) | $INGEST_S s wall, $INGEST_PAIRS stored pairs, $INGEST_FAILED failed files; server CPU $srv_cpu s = **$(calc "%.0f" "$pprof_samples / $srv_cpu") pprof samples per server CPU-second** ($(calc "%.0f" "$pprof_samples / $INGEST_S") per wall second) |"
		echo "| server memory | idle $(mib "$rss0") MiB; **VmHWM after ingest $(mib "$hwm_ingest") MiB**; VmRSS after ingest $(mib "$rss_ingest") MiB; after $((RUNS + 1)) renders VmRSS $(mib "$rss_query") MiB, VmHWM $(mib "$hwm_query") MiB |"
		echo "| server data dir after stop (no compaction) | $(mb "$disk_stop") MB = $(calc "%.1f" "100 * $disk_stop / $gz") % of gz |"
		echo "| **after store_compact()** | **$(mb "$disk_comp") MB = $(calc "%.1f" "100 * $disk_comp / $gz") % of gz** (SST files $(mb "$sst_comp") MB = $(calc "%.1f" "100 * $sst_comp / $gz") %); symbols $(mb "$sym_bytes") MB ($(calc "%.0f" "100 * $sym_bytes / ($sym_bytes + $sample_bytes)") % of symbols + samples), samples $(mb "$sample_bytes") MB |"
		echo "| symbols | $stacks stack-trie nodes, $locs locations; $per_node B per (node + location)${per_stack:+; **$per_stack B per stack node, $per_loc B per location** (ldb approxsize)} |"
		echo "| query | first $Q_SAMPLES pprof samples: $Q_FILES files, from=$Q_FROM until=$Q_UNTIL; numTicks $h1_ticks, response $h1_bytes bytes |"
		echo "| HTTP render before compaction | cold $h1_cold ms; warm median $h1_warm ms, min $h1_min ms |"
		echo "| in process before compaction | cold $(field "$bq" cold_ms | head -1) ms; warm median $(field "$bq" warm_median_ms | head -1) ms, min $(field "$bq" warm_min_ms | head -1) ms (thread CPU median $(field "$bq" warm_cpu_median_ms | head -1) ms) |"
		echo "| store_compact() | $(field "$bq" compact_ms) ms |"
		echo "| in process after compaction | cold $(field "$bq" cold_ms | tail -1) ms; warm median $(field "$bq" warm_median_ms | tail -1) ms, min $(field "$bq" warm_min_ms | tail -1) ms (thread CPU median $(field "$bq" warm_cpu_median_ms | tail -1) ms) |"
		echo "| HTTP render after compaction (restarted) | cold $h2_cold ms; warm median $h2_warm ms, min $h2_min ms |"
		case "$R_INSTR" in
		'') ;;
		deadline) echo "| instructions per warm in-process render (callgrind) | not measured: under callgrind a render passes the 30 s query deadline |" ;;
		*) echo "| instructions per warm in-process render (callgrind) | $R_INSTR M |" ;;
		esac
		[ -z "$I_INSTR" ] || echo "| instructions in ingest_legacy() (callgrind, bench-ingest) | $(calc "%.0f" "$I_INSTR / 1e6") M = $(calc "%.0f" "$I_INSTR / $pprof_samples") per pprof sample |"
		[ -z "$GO_S" ] || echo "| go tool pprof -proto, same $Q_FILES files | $GO_S s wall, peak RSS $GO_RSS MiB, merged cpu total $GO_TOTAL ns; **go / HTTP warm = ${ratio_w}x** (cold ${ratio_c}x, in-process warm ${ratio_i}x) |"
		echo "| **blocks** (bench-blocks: sealed at 1 h ranges, compacted) | **$(mb "$b_total") MB = $(calc "%.1f" "100 * $b_total / $gz") % of gz** ($(field "$bb" l1_blocks) blocks $(mb "$b_l1") MB: symbols $(mb "$(field "$bb" l1_symbol_bytes)") MB, samples $(mb "$(field "$bb" l1_sample_bytes)") MB, index $(mb "$(field "$bb" l1_index_bytes)") MB; head left $(mb "$b_head") MB); level 0 before compaction $(mb "$(($(field "$bb" l0_block_bytes) + $(field "$bb" l0_head_bytes)))") MB; the head alone, RocksDB-compacted, $(mb "$(field "$bb" head_only_bytes)") MB; seal $(field "$bb" seal_s) s, compaction $(field "$bb" compact_s) s |"
		echo "| symbols in blocks | $(field "$bb" l1_stacks) stack-trie nodes, **$(calc "%.2f" "$(field "$bb" l1_stack_bytes) / $(field "$bb" l1_stacks)") B per stack node**; $(field "$bb" l1_locations) locations, **$(calc "%.2f" "$(field "$bb" l1_location_bytes) / $(field "$bb" l1_locations)") B per location** (each column set compressed alone) |"
		echo "| HTTP render from blocks (same query) | cold $h3_cold ms; warm median $h3_warm ms, min $h3_min ms; numTicks $h3_ticks, flame graph $same to the head's; server VmHWM $(mib "$hwm_blocks") MiB${ratio_b:+; **go / HTTP warm from blocks = ${ratio_b}x**} |"
		echo "| in process from blocks | cold $(field "$bqb" cold_ms | head -1) ms; warm median $(field "$bqb" warm_median_ms | head -1) ms, min $(field "$bqb" warm_min_ms | head -1) ms (thread CPU median $(field "$bqb" warm_cpu_median_ms | head -1) ms)${GO_S:+; go / in-process warm $(calc "%.0f" "$GO_S * 1000 / $(field "$bqb" warm_median_ms | head -1)")x} |"
		echo
	} | tee -a "$REPORT"
}

# ---- month ----------------------------------------------------------------------

month_shape() {
	local wl=$OUT/month/workload days=$MONTH_DAYS
	local start=$((END - days * 86400)) load0 t0 gen_s
	mkdir -p "$OUT/month"
	load0=$(load1)
	local args=(--shape month --days "$days" --cadence "$MONTH_CADENCE" --debug-dir "$OUT/month/debug")
	log "== month: unhex-workload ${args[*]}"
	t0=$(now_ns)
	"$B/bench/unhex-workload" --out "$wl" "${args[@]}" 2>"$OUT/month/gen.log"
	gen_s=$(secs "$t0" "$(now_ns)")
	tail -3 "$OUT/month/gen.log" >&2
	local files gz
	files=$(wc -l <"$wl/manifest.tsv")
	gz=$(cut -f1 "$wl/manifest.tsv" | (cd "$wl" && xargs stat -c %s) | awk '{s += $1} END {print s}')
	SERVICE=$(awk -F'\t' 'NR == 1 {sub(/\..*/, "", $2); print $2}' "$wl/manifest.tsv")
	{
		echo "### month: \`unhex-workload ${args[*]/$OUT\//OUT/}\`"
		echo
		echo "$files profiles, $(mb "$gz") MB gzipped, generated in ${gen_s} s ($(tail -1 "$OUT/month/gen.log" | sed 's/^unhex-workload: //')); $(ls "$OUT/month/debug"/*.debug | wc -l) symbol files. Ingested day by day into one \`unhex serve\` (unhex ingest x$PARALLEL); after each day: the server's VmRSS and VmHWM, its CPU time for the day, the data directory's bytes (du: SSTs, WAL, logs; no forced compaction) and its SST files' bytes, the counters of \`unhex stats\`, and the render of that day (the last 24 h), cold and the median of 3 warm. Pprof samples are the stored pairs over 2 (two sample types, no zero values in this workload)."
		echo
		echo "Server: \`unhex serve${MONTH_RETENTION:+ --retention $MONTH_RETENTION}\` (default block range 1 h, seal delay 15 min, maintenance every minute; the store's clock is its newest profile, so a backfilled day is sealed and expired as if it had been live). Blocks: count, bytes of the block files, and the blocks retention has deleted so far; series, stack nodes and locations are the head's."
		echo
		echo "| day | profiles | pprof samples | ingest s | server CPU s | pprof samples per server CPU-s | VmRSS MiB | VmHWM MiB | data dir MB (SST MB) | blocks (MB) | expired blocks | series | stack nodes | locations | last 24 h cold / warm ms |"
		echo "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
	} | tee -a "$REPORT"

	local data=$OUT/month/server-data d cpu0 cpu1 lo hi day_pairs rss hwm du_b st
	local sargs=()
	[ -z "$MONTH_RETENTION" ] || sargs=(--retention "$MONTH_RETENTION")
	bench_start_server "$data" "$OUT/month/serve.log" "${sargs[@]}"
	local rss_idle
	rss_idle=$(kib "$SERVER_PID" VmRSS)
	for d in $(seq 1 "$days"); do
		lo=$((start + (d - 1) * 86400))
		hi=$((lo + 86400))
		awk -F'\t' -v lo="$lo" -v hi="$hi" '$3 >= lo && $3 < hi' "$wl/manifest.tsv" >"$OUT/month/day$d.tsv"
		cpu0=$(cpu_s "$SERVER_PID")
		bench_ingest "$wl" "$OUT/month/day$d.tsv" "month-day$d" "$PARALLEL"
		cpu1=$(cpu_s "$SERVER_PID")
		day_pairs=$INGEST_PAIRS
		bench_render "month-day$d" "$lo" "$hi" 3
		rss=$(kib "$SERVER_PID" VmRSS)
		hwm=$(kib "$SERVER_PID" VmHWM)
		du_b=$(du -sb "$data" | cut -f1)
		st=$OUT/month/stats-day$d.json
		"$B/cli/unhex" stats --server "$URL" --json >"$st"
		echo "| $d | $(wc -l <"$OUT/month/day$d.tsv") | $((day_pairs / 2)) | $INGEST_S | $(calc "%.2f" "$cpu1 - $cpu0") | $(calc "%.0f" "$day_pairs / 2 / ($cpu1 - $cpu0)") | $(mib "$rss") | $(mib "$hwm") | $(mb "$du_b") ($(mb "$(sst_bytes "$data")")) | $(jq -r '.blocks.count' "$st") ($(mb "$(find "$data/blocks" -name '*.blk' -printf '%s\n' 2>/dev/null | awk '{s += $1} END {print s + 0}')")) | $(jq -r '.retention.expired_blocks' "$st") | $(json_num "$st" series) | $(json_num "$st" stacks) | $(json_num "$st" locations) | $COLD / $WARM |" |
			tee -a "$REPORT"
		[ "$INGEST_FAILED" = 0 ] || log "   day $d: $INGEST_FAILED files failed"
	done
	bench_stop_server
	local disk_stop last_lo=$((END - 86400))
	disk_stop=$(du -sb "$data" | cut -f1)
	log "== month: bench-query on the last 24 h, before and after store_compact"
	"$B/bench/bench-query" --data "$data" --query "$PTYPE{service_name=\"$SERVICE\"}" \
		--from "$last_lo" --until "$END" --runs "$RUNS" --compact >"$OUT/month/bench-query.txt"
	local bq=$OUT/month/bench-query.txt disk_comp
	disk_comp=$(du -sb "$data" | cut -f1)
	"$B/cli/unhex" stats --data "$data" --json >"$OUT/month/stats.json"
	symbols_per_kind "$data" month
	local stacks locs sym_bytes
	stacks=$(json_num "$OUT/month/stats.json" stacks)
	locs=$(json_num "$OUT/month/stats.json" locations)
	sym_bytes=$(json_num "$OUT/month/stats.json" symbols)

	log "== month: the last 24 h alone on a fresh store"
	bench_start_server "$OUT/month/fresh-data" "$OUT/month/serve-fresh.log"
	ingest "$wl" "$OUT/month/day$days.tsv" month-fresh
	render month-fresh "$last_lo" "$END" "$RUNS"
	local f_cold=$COLD f_warm=$WARM f_hwm
	f_hwm=$(kib "$SERVER_PID" VmHWM)
	bench_stop_server
	bench_start_server "$data" "$OUT/month/serve-after.log" "${sargs[@]}"
	render month-after "$last_lo" "$END" "$RUNS"
	local a_cold=$COLD a_warm=$WARM a_hwm
	a_hwm=$(kib "$SERVER_PID" VmHWM)
	bench_stop_server
	"$B/bench/bench-query" --data "$OUT/month/fresh-data" --query "$PTYPE{service_name=\"$SERVICE\"}" \
		--from "$last_lo" --until "$END" --runs "$RUNS" >"$OUT/month/bench-query-fresh.txt"
	local bf=$OUT/month/bench-query-fresh.txt

	local inproc=
	if [ "$MONTH_INPROC" = 1 ]; then
		log "== month: bench-ingest over the whole month (in process)"
		"$B/bench/bench-ingest" --manifest "$wl" --data "$OUT/month/inproc-data" >"$OUT/month/bench-ingest.txt"
		inproc=$OUT/month/bench-ingest.txt
	fi
	{
		echo
		echo "load average (1 min) $load0 -> $(load1); server idle RSS at start $(mib "$rss_idle") MiB"
		echo
		echo "| measure | value |"
		echo "|---|---|"
		echo "| data dir after the last day (server stopped) | $(mb "$disk_stop") MB = $(calc "%.1f" "100 * $disk_stop / $gz") % of gz |"
		echo "| after store_compact() | $(mb "$disk_comp") MB = $(calc "%.1f" "100 * $disk_comp / $gz") % of gz; symbols $(mb "$sym_bytes") MB: $stacks stack nodes, $locs locations, $(calc "%.1f" "$sym_bytes / ($stacks + $locs)") B per (node + location)${STACK_BYTES:+; $(calc "%.1f" "$STACK_BYTES / $stacks") B per stack node, $(calc "%.1f" "$LOC_BYTES / $locs") B per location (ldb approxsize)} |"
		echo "| last 24 h, HTTP, 30-day store (restarted, compacted) | cold $a_cold ms; warm median $a_warm ms; server VmHWM $(mib "$a_hwm") MiB |"
		echo "| last 24 h, HTTP, fresh store of that day only | cold $f_cold ms; warm median $f_warm ms; server VmHWM $(mib "$f_hwm") MiB |"
		echo "| last 24 h, in process, 30-day store before / after compaction | warm median $(field "$bq" warm_median_ms | head -1) / $(field "$bq" warm_median_ms | tail -1) ms (thread CPU $(field "$bq" warm_cpu_median_ms | head -1) / $(field "$bq" warm_cpu_median_ms | tail -1) ms); cold $(field "$bq" cold_ms | head -1) / $(field "$bq" cold_ms | tail -1) ms |"
		echo "| last 24 h, in process, fresh store | warm median $(field "$bf" warm_median_ms) ms (thread CPU $(field "$bf" warm_cpu_median_ms) ms); cold $(field "$bf" cold_ms) ms |"
		echo "| ratio 30-day / fresh, warm | HTTP $(calc "%.2f" "$a_warm / $f_warm")x, in process CPU $(calc "%.2f" "$(field "$bq" warm_cpu_median_ms | tail -1) / $(field "$bf" warm_cpu_median_ms)")x |"
		if [ -n "$inproc" ]; then
			echo "| bench-ingest, whole month, one thread | $(field "$inproc" pprof_samples) pprof samples: $(field "$inproc" pprof_samples_per_s) /s wall, $(field "$inproc" pprof_samples_per_cpu_s) per CPU-second; disk after close $(mb "$(field "$inproc" disk_close)") MB; peak RSS $(mib "$(field "$inproc" peak_rss_kib)") MiB with $(mb "$gz") MB of input held |"
		fi
		echo
	} | tee -a "$REPORT"
}

for s in $SHAPES; do
	case "$s" in
	bench) static_shape bench --services 1 --instances 20 --minutes 60 --end "$END" --seed 1 ;;
	diverse) static_shape diverse --shape diverse ;;
	month) month_shape ;;
	*) log "bench_storage.sh: unknown shape $s"; exit 2 ;;
	esac
done
log "== report: $REPORT"

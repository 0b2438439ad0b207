#!/usr/bin/env bash
# bench_query.sh - the query benchmark: one merged flame graph over one hour
# of a 20-instance service, timed through the real server (curl, cold and
# warm, before and after a full compaction), in process (bench-query, to
# separate HTTP), and against `go tool pprof -proto` merging the same pprof
# files.  Prints a Markdown table for bench/RESULTS.md (section "Query").
#
#   bash bench/bench_query.sh BUILD_DIR [OUT_DIR]      (OUT_DIR: bench/out-query)
#   env: INSTANCES=20 MINUTES=60 RUNS=10 PARALLEL=4
#        WORKLOAD=DIR  reuse an unhex-workload directory instead of making one
#        GO_PPROF=0    skip the go tool pprof comparison
#        PERF=1        perf record -g the server during a second warm loop
#                      (OUT_DIR/perf.data, report in OUT_DIR/perf.txt)
set -euo pipefail

B=$(cd "${1:?usage: bench_query.sh BUILD_DIR [OUT_DIR]}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib_bench.sh
. "$HERE/lib_bench.sh"
OUT=${2:-$HERE/out-query}
INSTANCES=${INSTANCES:-20}
MINUTES=${MINUTES:-60}
RUNS=${RUNS:-10}
PARALLEL=${PARALLEL:-4}
GO_PPROF=${GO_PPROF:-1}
PERF=${PERF:-0}
PTYPE=process_cpu:cpu:nanoseconds:cpu:nanoseconds

bench_need_built bench_query.sh bench/unhex-workload bench/bench-query cli/unhex
command -v curl >/dev/null || { echo "bench_query.sh: curl is needed" >&2; exit 1; }
rm -rf "$OUT"
mkdir -p "$OUT"
trap bench_stop_server EXIT

echo "== machine" >&2
CPU=$(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)
echo "   $CPU, nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2
LOAD_BEGIN=$(load1)

if [ -n "${WORKLOAD:-}" ]; then
	WL=$(cd "$WORKLOAD" && pwd)
	echo "== workload: reusing $WL" >&2
else
	WL=$OUT/workload
	echo "== workload: 1 service, $INSTANCES instances, $MINUTES minutes" >&2
	"$B/bench/unhex-workload" --out "$WL" --services 1 --instances "$INSTANCES" \
		--minutes "$MINUTES" --end now --seed 1 --quiet
fi
FILES=$(wc -l <"$WL/manifest.tsv")
SERVICE=$(awk -F'\t' 'NR == 1 {sub(/\..*/, "", $2); print $2}' "$WL/manifest.tsv")
FROM=$(awk -F'\t' 'NR == 1 || $3 < m {m = $3} END {print m}' "$WL/manifest.tsv")
UNTIL=$(awk -F'\t' 'NR == 1 || $3 > m {m = $3} END {print m + 10}' "$WL/manifest.tsv")
echo "   $FILES files, service $SERVICE, [$FROM, $UNTIL)" >&2

echo "== ingest through unhex serve" >&2
bench_start_server "$OUT/server-data" "$OUT/serve1.log"
bench_ingest "$WL" "$WL/manifest.tsv" all "$PARALLEL"
PAIRS=$INGEST_PAIRS
echo "   $PAIRS stored pairs in ${INGEST_S}s" >&2

echo "== server, before compaction: cold + $RUNS warm" >&2
bench_render http_before "$FROM" "$UNTIL" "$RUNS"
H1_COLD=$COLD H1_WARM=$WARM H1_MIN=$WARM_MIN H1_BYTES=$BYTES H1_TICKS=$TICKS
echo "   cold ${COLD} ms, warm median ${WARM} ms (min $WARM_MIN), $BYTES bytes, numTicks $TICKS" >&2
if [ "$PERF" = 1 ] && command -v perf >/dev/null; then
	echo "== perf record -g on the server during a warm loop" >&2
	perf record -g -o "$OUT/perf.data" -p "$SERVER_PID" 2>"$OUT/perf.log" &
	PERF_PID=$!
	sleep 0.5
	bench_render http_perf "$FROM" "$UNTIL" "$RUNS"
	kill -INT "$PERF_PID"
	wait "$PERF_PID" || true
	perf report -i "$OUT/perf.data" --no-children --percent-limit 1 --stdio \
		>"$OUT/perf.txt" 2>/dev/null || true
fi
bench_stop_server

echo "== in process (bench-query): before compaction, store_compact, after" >&2
"$B/bench/bench-query" --data "$OUT/server-data" --query "$PTYPE{service_name=\"$SERVICE\"}" \
	--from "$FROM" --until "$UNTIL" --runs "$RUNS" --compact --out "$OUT/inproc.json" \
	| tee "$OUT/bench-query.txt" >&2
field() { # field PHASE KEY
	grep "phase=$1 " "$OUT/bench-query.txt" | tr ' ' '\n' | sed -n "s/^$2=//p"
}
I_TICKS=$(grep -o '"numTicks":[0-9]*' "$OUT/inproc.json" | head -1 | cut -d: -f2)

echo "== server after compaction (restarted): cold + $RUNS warm" >&2
bench_start_server "$OUT/server-data" "$OUT/serve2.log"
bench_render http_after "$FROM" "$UNTIL" "$RUNS"
H2_COLD=$COLD H2_WARM=$WARM H2_MIN=$WARM_MIN H2_BYTES=$BYTES H2_TICKS=$TICKS
echo "   cold ${COLD} ms, warm median ${WARM} ms (min $WARM_MIN), $BYTES bytes, numTicks $TICKS" >&2
bench_stop_server
DISK=$(du -sb "$OUT/server-data" | cut -f1)

GO_S= GO_RSS= GO_TOTAL= RATIO_W= RATIO_C=
if [ "$GO_PPROF" = 1 ] && command -v go >/dev/null; then
	echo "== go tool pprof -proto over the same $FILES files" >&2
	export GOFLAGS= GOTOOLCHAIN=local
	(cd "$WL" && cut -f1 manifest.tsv >"$OUT/files.txt")
	t0=$(now_ns)
	# All files on one command line (one merge; xargs would split it).
	mapfile -t GO_FILES <"$OUT/files.txt"
	(cd "$WL" && /usr/bin/time -f '%M' -o "$OUT/go.rss" \
		go tool pprof -proto "${GO_FILES[@]}" >"$OUT/merged.pb.gz" 2>"$OUT/go.log")
	GO_S=$(secs "$t0" "$(now_ns)")
	GO_RSS=$(awk '{printf "%.0f", $1 / 1024}' "$OUT/go.rss")
	GO_TOTAL=$(go tool pprof -raw "$OUT/merged.pb.gz" 2>/dev/null |
		awk '/^Samples:/ {on = 1; next} /^Locations/ {on = 0} on && $2 ~ /^[0-9]+:$/ {s += $2} END {printf "%.0f", s}')
	RATIO_W=$(awk -v g="$GO_S" -v q="$H1_WARM" 'BEGIN {printf "%.0f", g * 1000 / q}')
	RATIO_C=$(awk -v g="$GO_S" -v q="$H1_COLD" 'BEGIN {printf "%.0f", g * 1000 / q}')
	echo "   ${GO_S}s, peak RSS $GO_RSS MiB, ratio warm ${RATIO_W}x cold ${RATIO_C}x" >&2
fi
LOAD_END=$(load1)

ok() { awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN { r = (op == ">=") ? v >= t : v < t; print r ? "met" : "NOT met" }'; }
cat <<EOT

machine: $CPU, nproc $(nproc); load average (1 min) $LOAD_BEGIN -> $LOAD_END
workload: $FILES pprof files, service $SERVICE, $INSTANCES instances, [$FROM, $UNTIL); ingested $PAIRS stored pairs in ${INGEST_S}s; store ${DISK} bytes after compaction

| measure | cold (first) | warm (median of $RUNS; min) | target | |
|---|---|---|---|---|
| HTTP render, before compaction (curl time_total) | $H1_COLD ms | $H1_WARM ms; $H1_MIN ms | < 100 ms warm | $(ok "$H1_WARM" "<" 100) |
| in process query_render, before compaction | $(field before_compact cold_ms) ms ($(field before_compact cold_cpu_ms) ms CPU) | $(field before_compact warm_median_ms) ms; $(field before_compact warm_min_ms) ms (CPU median $(field before_compact warm_cpu_median_ms) ms) | | |
| store_compact | $(field compact compact_ms) ms | | | |
| in process query_render, after compaction | $(field after_compact cold_ms) ms ($(field after_compact cold_cpu_ms) ms CPU) | $(field after_compact warm_median_ms) ms; $(field after_compact warm_min_ms) ms (CPU median $(field after_compact warm_cpu_median_ms) ms) | | |
| HTTP render, after compaction (server restarted) | $H2_COLD ms | $H2_WARM ms; $H2_MIN ms | < 100 ms warm | $(ok "$H2_WARM" "<" 100) |
EOT
echo
echo "response: $H1_BYTES bytes (after compaction $H2_BYTES, in process $(field after_compact bytes)); numTicks HTTP $H1_TICKS / $H2_TICKS, in process $I_TICKS; bench-query peak RSS $(field end peak_rss_kib) KiB"
if [ -n "$GO_S" ]; then
	echo
	echo "| go tool pprof -proto, $FILES files, one invocation | ${GO_S} s wall, peak RSS $GO_RSS MiB, merged cpu total $GO_TOTAL ns | ratio to HTTP warm before compaction: ${RATIO_W}x, to HTTP cold: ${RATIO_C}x | >= 30x | $(ok "$RATIO_W" ">=" 30) |"
fi

#!/usr/bin/env bash
# run.sh - the unhex benchmark (`make bench`): one hour of a 20-instance
# service, ingested (1) in process on one thread by bench-ingest and (2) end
# to end through the real server with `unhex ingest`.  Prints a Markdown table
# for bench/RESULTS.md.  Usage: bench/run.sh BUILD_DIR [OUT_DIR]
set -euo pipefail

B=$(cd "${1:?usage: run.sh BUILD_DIR [OUT_DIR]}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib_bench.sh
. "$HERE/lib_bench.sh"
OUT=${2:-$HERE/out}
INSTANCES=${INSTANCES:-20}
MINUTES=${MINUTES:-60}
PARALLEL=${PARALLEL:-4}

bench_need_built run.sh bench/unhex-workload bench/bench-ingest cli/unhex
rm -rf "$OUT"
mkdir -p "$OUT"
trap bench_stop_server EXIT
field() { # field KEY: value of KEY=... in the RESULT line
	tr ' ' '\n' <"$OUT/bench-ingest.txt" | sed -n "s/^$1=//p" | tail -1
}

echo "== workload: 1 service, $INSTANCES instances, $MINUTES minutes" >&2
t0=$(now_ns)
"$B/bench/unhex-workload" --out "$OUT/workload" --services 1 --instances "$INSTANCES" \
	--minutes "$MINUTES" --end now --seed 1 --quiet
gen_s=$(awk -v a="$t0" -v b="$(now_ns)" 'BEGIN {printf "%.1f", (b - a) / 1e9}')
files=$(wc -l <"$OUT/workload/manifest.tsv")
gz_bytes=$(cut -f1 "$OUT/workload/manifest.tsv" | (cd "$OUT/workload" && xargs stat -c %s) |
	awk '{s += $1} END {print s}')
echo "   $files files, $gz_bytes bytes gzipped, generated in ${gen_s}s" >&2

echo "== bench-ingest (one thread, in process)" >&2
"$B/bench/bench-ingest" --manifest "$OUT/workload" --data "$OUT/bench-data" | tee "$OUT/bench-ingest.txt" >&2

echo "== end to end: unhex serve + unhex ingest (parallel $PARALLEL)" >&2
bench_start_server "$OUT/server-data" "$OUT/serve.log"
rss_idle=$(awk '/^VmRSS:/ {print $2}' "/proc/$SERVER_PID/status")

# One `unhex ingest` per series name (instance x version), several at once.
bench_ingest "$OUT/workload" "$OUT/workload/manifest.tsv" e2e "$PARALLEL"
e2e_s=$INGEST_S
hwm=$(awk '/^VmHWM:/ {print $2}' "/proc/$SERVER_PID/status")
e2e_samples=$(sed -n 's/.*profiles, \([0-9]*\) samples.*/\1/p' "$OUT/ingest-e2e.txt" | awk '{s += $1} END {print s + 0}')
e2e_profiles=$(sed -n 's/.*: \([0-9]*\) profiles,.*/\1/p' "$OUT/ingest-e2e.txt" | awk '{s += $1} END {print s + 0}')
e2e_failed=$(sed -n 's/.*: \([0-9]*\) failed.*/\1/p' "$OUT/ingest-e2e.txt" | awk '{s += $1} END {print s + 0}')
bench_stop_server
server_disk=$(du -sb "$OUT/server-data" | cut -f1)

samples=$(field samples)
pprof_samples=$(field pprof_samples)
ingest_sps=$(field samples_per_s)
pprof_sps=$(field pprof_samples_per_s)
pprof_cpu_sps=$(field pprof_samples_per_cpu_s)
disk=$(field disk_close)
pct=$(awk -v a="$disk" -v b="$gz_bytes" 'BEGIN {printf "%.1f", 100 * a / b}')
spct=$(awk -v a="$server_disk" -v b="$gz_bytes" 'BEGIN {printf "%.1f", 100 * a / b}')
cpu_sps=$(awk -v s="$samples" -v c="$(field cpu_s)" 'BEGIN {printf "%.0f", s / c}')
e2e_sps=$(awk -v s="$e2e_samples" -v t="$e2e_s" 'BEGIN {printf "%.0f", s / t}')
hwm_mib=$(awk -v k="$hwm" 'BEGIN {printf "%.1f", k / 1024}')
ok() { awk -v v="$1" -v op="$2" -v t="$3" 'BEGIN { r = (op == ">=") ? v >= t : v <= t; print r ? "met" : "NOT met" }'; }

cat <<EOT

| measure | value | target | |
|---|---|---|---|
| workload | $files profiles, $(awk -v b="$gz_bytes" 'BEGIN {printf "%.1f", b / 1e6}') MB gzipped pprof: $pprof_samples pprof samples (Sample messages) = $samples stored pairs ((stack, value) per sample type after aggregation), generated in ${gen_s}s | 1 h, $INSTANCES instances | |
| ingest, one thread (bench-ingest), pprof samples | $pprof_sps pprof samples/s wall, $pprof_cpu_sps per CPU-second of the thread ($(field cpu_s) s CPU in $(field wall_s) s wall) | >= 300000 pprof samples/s | $(ok "$pprof_sps" ">=" 300000) |
| ingest, one thread (bench-ingest), stored pairs | $ingest_sps stored pairs/s, $cpu_sps per CPU-second; $(field profiles_per_s) stored profiles/s, $(field mb_per_s) MB/s gz | | |
| on disk after flush + close | $(awk -v a="$disk" 'BEGIN {printf "%.2f", a / 1e6}') MB = $pct % of gz input, $(awk -v a="$disk" -v s="$samples" 'BEGIN {printf "%.2f", a / s}') bytes/sample | <= 25 % | $(ok "$pct" "<=" 25) |
| bench-ingest peak RSS | $(awk -v k="$(field peak_rss_kib)" 'BEGIN {printf "%.1f", k / 1024}') MiB (input held: $(awk -v b="$gz_bytes" 'BEGIN {printf "%.1f", b / 1048576}') MiB) | | |
| end to end (unhex ingest x$PARALLEL -> unhex serve) | $e2e_sps stored pairs/s, $e2e_profiles profiles, $e2e_samples samples in ${e2e_s}s, $e2e_failed failed files | | |
| server on disk after stop | $(awk -v a="$server_disk" 'BEGIN {printf "%.2f", a / 1e6}') MB = $spct % of gz input | <= 25 % | $(ok "$spct" "<=" 25) |
| server peak memory (VmHWM) | $hwm_mib MiB (idle RSS $(awk -v k="$rss_idle" 'BEGIN {printf "%.1f", k / 1024}') MiB) | <= 512 MiB | $(ok "$hwm_mib" "<=" 512) |
EOT
if [ "$e2e_samples" != "$samples" ]; then
	echo
	echo "note: the server stored $e2e_samples pairs, bench-ingest $samples"
fi

#!/usr/bin/env bash
# ingest_server.sh - the server's CPU per pprof sample of an ingest, end to
# end: `unhex serve` on a fresh data directory, every file of a workload
# through `unhex ingest` (one process per series name, PARALLEL at once),
# and the server's user + system CPU time (/proc/PID/stat) over that ingest.
# CPU time, not wall time: the machine may be shared.
#
#   bash bench/ingest_server.sh BUILD_DIR WORKLOAD_DIR [OUT_DIR]
#   env: PARALLEL=8    concurrent `unhex ingest`
#        BATCH=N       `unhex ingest --batch N`: N files of a series per
#                      push.v1 request (default 1: one /ingest request per
#                      file); stored pairs are then read from /api/v1/stats
#        PERF=1        perf record -g the server during the ingest
#                      (OUT/perf.data)
#        PPROF_SAMPLES=N  the workload's pprof samples, when known (else
#                      counted with tools/pprofinfo)
#        SERVER_CPU=K  the server (and its RocksDB threads) on CPU K alone,
#                      the clients on the other CPUs: the target's "per
#                      core", without the clients preempting the server
#
# WORKLOAD_DIR is a directory made by unhex-workload, e.g.
#   unhex-workload --out WL --services 1 --instances 20 --minutes 60 \
#                  --end 1767225600 --seed 1 --quiet
# Prints one line: files, stored pairs, pprof samples (tools/pprofinfo),
# server CPU seconds, pprof samples per server CPU-second and the
# server's minor page faults over the ingest (about 13 µs each on the
# VM of bench/RESULTS.md).
set -euo pipefail

B=$(cd "${1:?usage: ingest_server.sh BUILD_DIR WORKLOAD_DIR [OUT_DIR]}" && pwd)
WL=$(cd "${2:?usage: ingest_server.sh BUILD_DIR WORKLOAD_DIR [OUT_DIR]}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib_bench.sh
. "$HERE/lib_bench.sh"
OUT=${3:-$HERE/out-ingest-server}
PARALLEL=${PARALLEL:-8}
PERF=${PERF:-0}
TICK=$(getconf CLK_TCK)

bench_need_built ingest_server.sh cli/unhex tools/pprofinfo
rm -rf "$OUT"
mkdir -p "$OUT"
PERF_PID=
stop_all() {
	if [ -n "$PERF_PID" ]; then
		kill -INT "$PERF_PID" 2>/dev/null || true
		wait "$PERF_PID" 2>/dev/null || true
	fi
	bench_stop_server
}
trap stop_all EXIT

# pprof samples of the workload: the Sample messages of every file.
pprof_samples=${PPROF_SAMPLES:-$(cd "$WL" && cut -f1 manifest.tsv | xargs "$B/tools/pprofinfo" --json |
	grep -o '"samples":[0-9]*' | cut -d: -f2 | awk '{s += $1} END {print s + 0}')}

if [ -n "${SERVER_CPU:-}" ]; then
	others=$(seq 0 $(($(nproc) - 1)) | grep -vx "$SERVER_CPU" | paste -sd,)
	[ -n "$others" ] || { echo "ingest_server.sh: SERVER_CPU needs two CPUs" >&2; exit 1; }
	SERVER_TASKSET=$SERVER_CPU
fi
bench_start_server "$OUT/data" "$OUT/serve.log"
[ -z "${SERVER_CPU:-}" ] || taskset -pc "$others" $$ >/dev/null
if [ "$PERF" = 1 ]; then
	perf record -g -o "$OUT/perf.data" -p "$SERVER_PID" >"$OUT/perf.log" 2>&1 &
	PERF_PID=$!
	sleep 1
fi
t0=$(cpu_ticks "$SERVER_PID")
f0=$(minor_faults "$SERVER_PID")
bench_ingest "$WL" "$WL/manifest.tsv" run "$PARALLEL"
t1=$(cpu_ticks "$SERVER_PID")
f1=$(minor_faults "$SERVER_PID")
if [ "${BATCH:-1}" -gt 1 ]; then
	INGEST_PAIRS=$(curl -sS --fail "$URL/api/v1/stats" | grep -o '"samples":[0-9]*' | head -1 | cut -d: -f2)
fi
awk -v f="$(wc -l <"$WL/manifest.tsv")" -v p="$INGEST_PAIRS" -v s="$pprof_samples" \
	-v fail="$INGEST_FAILED" -v c="$((t1 - t0))" -v mf="$((f1 - f0))" -v t="$TICK" -v w="$INGEST_S" 'BEGIN {
	cpu = c / t
	printf "files %d, failed %d, stored pairs %d, pprof samples %d, wall %.2f s, server CPU %.2f s = %.0f pprof samples per server CPU-second, %d minor faults\n",
		f, fail, p, s, w, cpu, (cpu > 0 ? s / cpu : 0), mf
}'

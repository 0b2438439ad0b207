#!/usr/bin/env bash
# cold_render.sh - what a render costs the server when it finds its pools
# and caches empty (the first query after a start, or after a quiet spell
# in which the pools let go), against the same render warm: `unhex serve`
# on a fresh copy of DATA_DIR, one render as soon as it is ready, then WARM
# more; server user + system CPU and minor page faults from /proc/PID/stat
# around each.  With several builds, they alternate round by round.
#
#   bash bench/cold_render.sh DATA_DIR BUILD_DIR...
#   env: FROM, UNTIL  the render's range, unix seconds (required)
#        QUERY        default process_cpu:cpu:nanoseconds:cpu:nanoseconds
#                     {service_name="shop-api"}
#        ROUNDS=3, WARM=5
#
# DATA_DIR is a server's data directory, e.g. bench_storage.sh's
# OUT/SHAPE/blocks-data; it is copied, never written.  One line per round
# and build: cold CPU ms, faults and wall ms, then the warm renders' mean
# CPU ms and faults.  CPU is counted in clock ticks (10 ms on Linux), so
# compare rounds, not single renders.
set -euo pipefail

DATA=$(cd "${1:?usage: cold_render.sh DATA_DIR BUILD_DIR...}" && pwd)
shift
[ $# -gt 0 ] || { echo "usage: cold_render.sh DATA_DIR BUILD_DIR..." >&2; exit 2; }
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib_bench.sh
. "$HERE/lib_bench.sh"
: "${FROM:?set FROM and UNTIL}" "${UNTIL:?set FROM and UNTIL}"
QUERY=${QUERY:-'process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="shop-api"}'}
ROUNDS=${ROUNDS:-3}
WARM=${WARM:-5}
TICK=$(getconf CLK_TCK)
WORK=$(mktemp -d)
trap 'bench_stop_server; rm -rf "$WORK"' EXIT

faults() { awk '{sub(/.*\) /, ""); print $8}' "/proc/$1/stat"; }
render() {
	curl -sS --fail -o /dev/null -G "$URL/pyroscope/render" --data-urlencode "query=$QUERY" \
		--data-urlencode "from=$FROM" --data-urlencode "until=$UNTIL" --data-urlencode "format=json"
}

for round in $(seq 1 "$ROUNDS"); do
	for b in "$@"; do
		B=$(cd "$b" && pwd)
		bench_need_built cold_render.sh cli/unhex
		rm -rf "$WORK/data"
		cp -a "$DATA" "$WORK/data"
		bench_start_server "$WORK/data" "$WORK/serve.log"
		for _ in $(seq 1 100); do
			curl -sf -o /dev/null "$URL/ready" && break
			sleep 0.1
		done
		c0=$(cpu_ticks "$SERVER_PID")
		f0=$(faults "$SERVER_PID")
		t0=$(now_ns)
		render
		t1=$(now_ns)
		c1=$(cpu_ticks "$SERVER_PID")
		f1=$(faults "$SERVER_PID")
		for _ in $(seq 1 "$WARM"); do render; done
		c2=$(cpu_ticks "$SERVER_PID")
		f2=$(faults "$SERVER_PID")
		bench_stop_server
		awk -v r="$round" -v b="$b" -v t="$TICK" -v w="$WARM" -v c0="$c0" -v c1="$c1" \
			-v c2="$c2" -v f0="$f0" -v f1="$f1" -v f2="$f2" -v ms="$(((t1 - t0) / 1000000))" 'BEGIN {
			printf "round %d %s: cold %.0f ms CPU, %d faults, %d ms wall; warm %.1f ms CPU, %.0f faults per render\n",
				r, b, (c1 - c0) * 1000 / t, f1 - f0, ms, (c2 - c1) * 1000 / t / w, (f2 - f1) / w
		}'
	done
done

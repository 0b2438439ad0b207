# shellcheck shell=bash
# lib_store.sh - sourced by bench/callgrind.sh and bench/query_mem.sh: the
# fixed workload and the stores their measurements run on, made with the
# programs of the build being measured, so that two builds measure the
# same inputs.
#
#   lib_store_dirs SCRIPT ARGS...  sets B (BUILD_DIR) and OUT (OUT_DIR, made)
#   fixed_workload BUILD DIR       DIR/workload (+ manifest.tsv), DIR/debug
#   fixed_store BUILD WORKLOAD DATA [DEBUG_DIR]
#   fixed_stores                   both stores of $B's build in $OUT, the
#                                  workload in WL ($WORKLOAD, else $OUT)
#   lib_store_cleanup              for the caller's EXIT trap: stops the
#                                  server fixed_store may have running
#
# The workload is the bench shape of bench/RESULTS.md with a fixed end:
# `unhex-workload --services 1 --instances 20 --minutes 60 --end 1767225600
# --seed 1 --debug-dir` (7,200 raw-address pprofs; symbol files for the 7
# build IDs).  A store is a fresh data dir filled by `bench-ingest` (one
# thread, manifest order, tenant anonymous, then flushed and closed).  With
# DEBUG_DIR, every symbol file in it is stored as if uploaded (`unhex serve
# --preload-debuginfo`).  Then `bench-query` runs the hour's render until
# nothing is pending, so the not_found records, indexes and symbol cache
# exist before anything is measured.  Callers set `set -euo pipefail`.

WL_END=1767225600                 # 2026-01-01T00:00:00Z
WL_FROM=$((WL_END - 3600))
WL_QUERY='process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name="shop-api"}'
LIB_SERVER_PID=

lib_store_cleanup() {
	if [ -n "$LIB_SERVER_PID" ] && kill -0 "$LIB_SERVER_PID" 2>/dev/null; then
		kill -KILL "$LIB_SERVER_PID" 2>/dev/null || true
		wait "$LIB_SERVER_PID" 2>/dev/null || true
	fi
	LIB_SERVER_PID=
}

# lib_store_dirs SCRIPT BUILD_DIR OUT_DIR: the arguments every caller takes;
# sets B and OUT to them, absolute (OUT made), or exits with SCRIPT's usage.
lib_store_dirs() {
	[ -n "${2:-}" ] && [ -n "${3:-}" ] || { echo "usage: $1 BUILD_DIR OUT_DIR" >&2; exit 1; }
	B=$(cd "$2" && pwd)
	mkdir -p "$3"
	OUT=$(cd "$3" && pwd)
}

# fixed_workload BUILD DIR: reuses DIR when it holds this exact workload.
fixed_workload() {
	local b=$1 dir=$2 params
	params="services=1 instances=20 minutes=60 end=$WL_END seed=1"
	if [ -f "$dir/workload/manifest.tsv" ] && [ "$(cat "$dir/workload.params" 2>/dev/null)" = "$params" ]; then
		echo "== workload: reusing $dir/workload" >&2
		return 0
	fi
	echo "== workload: $params, with symbol files" >&2
	rm -rf "$dir/workload" "$dir/debug" "$dir/workload.params"
	mkdir -p "$dir"
	"$b/bench/unhex-workload" --out "$dir/workload" --debug-dir "$dir/debug" --services 1 \
		--instances 20 --minutes 60 --end "$WL_END" --seed 1 --quiet
	echo "$params" >"$dir/workload.params"
}

# fixed_store BUILD WORKLOAD DATA [DEBUG_DIR]
fixed_store() {
	local b=$1 wl=$2 data=$3 debug=${4:-}
	echo "== store $data: bench-ingest${debug:+, symbol files preloaded}" >&2
	rm -rf "$data"
	"$b/bench/bench-ingest" --manifest "$wl" --data "$data" >"$data.ingest.txt" 2>&1 ||
		{ cat "$data.ingest.txt" >&2; return 1; }
	if [ -n "$debug" ]; then
		preload_debuginfo "$b" "$data" "$debug" || return 1
	fi
	# One render first: it records the build IDs it found nowhere and, with
	# symbol files, builds the indexes and the symbol cache; measurements
	# then start from the same state every time.
	for _ in $(seq 1 30); do
		"$b/bench/bench-query" --data "$data" --query "$WL_QUERY" --from "$WL_FROM" \
			--until "$WL_END" --runs 1 --out "$data.render.json" >"$data.warm.txt" 2>&1 ||
			{ cat "$data.warm.txt" >&2; return 1; }
		grep -q '"pending":true' "$data.render.json" || return 0
		sleep 1
	done
	echo "lib_store.sh: symbolization of $data still pending" >&2
	return 1
}

# fixed_stores: the fixed workload in WL (WORKLOAD, else OUT; reused when it
# is there) and the two stores the callers measure: OUT/store-raw (no
# symbol files) and OUT/store-sym (every symbol file preloaded).
fixed_stores() {
	WL=${WORKLOAD:-$OUT}
	fixed_workload "$B" "$WL"
	fixed_store "$B" "$WL/workload" "$OUT/store-raw"
	fixed_store "$B" "$WL/workload" "$OUT/store-sym" "$WL/debug"
}

# preload_debuginfo BUILD DATA DEBUG_DIR: `unhex serve --preload-debuginfo`,
# stopped as soon as it listens.
preload_debuginfo() {
	local b=$1 data=$2 debug=$3 pid url
	"$b/cli/unhex" serve --data "$data" --listen 127.0.0.1:0 --debuginfod-urls "" \
		--preload-debuginfo "$debug" >"$data.serve.out" 2>"$data.serve.log" &
	pid=$!
	LIB_SERVER_PID=$pid
	url=
	for _ in $(seq 1 600); do
		url=$(sed -n 's/^unhex: listening on //p' "$data.serve.out")
		[ -n "$url" ] && break
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -TERM "$pid" 2>/dev/null || true
	wait "$pid" || { cat "$data.serve.log" >&2; return 1; }
	LIB_SERVER_PID=
	[ -n "$url" ] || { echo "lib_store.sh: the server did not start" >&2; return 1; }
}

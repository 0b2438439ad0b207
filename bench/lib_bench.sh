# shellcheck shell=bash
# lib_bench.sh - sourced by the bench/ scripts: the check that the build
# has their programs; for bench/bench_query.sh and bench/bench_storage.sh
# the server they measure, timing helpers, manifest ingest and the timed
# render.  The caller sets B (the build dir), OUT (its output dir), PTYPE,
# and before render SERVICE; it runs under `set -euo pipefail` and traps
# EXIT to bench_stop_server.
#
#   bench_need_built SCRIPT BIN...               exits 1 unless $B/BIN exist
#   bench_build_source                           sets SRC and PROTO_DIR
#   bench_start_server DATA LOG [SERVE-ARGS...]  sets SERVER_PID and URL (env
#                                                SERVER_CGROUP: run it in that cgroup)
#   bench_stop_server                            SIGTERM and wait
#   bench_ingest WL MANIFEST TAG PARALLEL [URLS] sets INGEST_S, INGEST_PAIRS,
#                                                INGEST_PROFILES, INGEST_FAILED
#   cpu_ticks PID                                user + system CPU of PID, in ticks
#   bench_render TAG FROM UNTIL N                sets COLD, WARM (median),
#                                                WARM_MIN (ms), BYTES, TICKS

SERVER_PID=

# bench_need_built SCRIPT BIN...: exits 1, naming SCRIPT, unless every BIN
# (a path inside the build dir $B) is built.
bench_need_built() {
	local name=$1 bin
	shift
	for bin in "$@"; do
		[ -x "$B/$bin" ] || { echo "$name: $B/$bin is missing; build first" >&2; exit 1; }
	done
}

# bench_build_source: sets SRC to the source tree the build in $B was
# configured from ("" when its CMakeCache.txt does not say) and PROTO_DIR to
# that tree's proto/ (this checkout's when it has none), absolute, so that
# protoc speaks the messages of the build being measured.
bench_build_source() {
	SRC=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$B/CMakeCache.txt" 2>/dev/null || true)
	PROTO_DIR=${SRC:+$SRC/proto}
	[ -f "${PROTO_DIR:-/nonexistent}/querier.proto" ] || PROTO_DIR=$(dirname "${BASH_SOURCE[0]}")/../proto
	PROTO_DIR=$(cd "$PROTO_DIR" && pwd)
}

now_ns() { date +%s%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", (b - a) / 1e9}'; }
load1() { cut -d' ' -f1 /proc/loadavg; }
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
json_num() { grep -o "\"$2\":[0-9]*" "$1" | head -1 | cut -d: -f2; } # json_num FILE KEY

bench_stop_server() {
	if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	SERVER_PID=
}

# With SERVER_CGROUP (a cgroup-v1 directory) the server's process moves
# itself into that cgroup before it execs the server, so that all of the
# server's CPU is charged there.  With SERVER_TASKSET (a taskset CPU list)
# the server runs on those CPUs only.
bench_start_server() {
	(
		[ -z "${SERVER_CGROUP:-}" ] || echo "$BASHPID" >"$SERVER_CGROUP/cgroup.procs"
		exec ${SERVER_TASKSET:+taskset -c "$SERVER_TASKSET"} "$B/cli/unhex" serve \
			--listen 127.0.0.1:0 --data "$1" --debuginfod-urls "" "${@:3}"
	) >"$2" 2>&1 &
	SERVER_PID=$!
	URL=
	for _ in $(seq 1 300); do
		URL=$(grep -o 'http://127\.0\.0\.1:[0-9]*' "$2" | head -1 || true)
		[ -n "$URL" ] && return 0
		kill -0 "$SERVER_PID" 2>/dev/null || break
		sleep 0.1
	done
	echo "$(basename "$0"): the server did not start" >&2
	cat "$2" >&2
	exit 1
}

cpu_ticks() { awk '{sub(/.*\) /, ""); print $12 + $13}' "/proc/$1/stat"; }
# minor_faults PID: the process's minor page faults so far.
minor_faults() { awk '{sub(/.*\) /, ""); print $8}' "/proc/$1/stat"; }

# Every file of MANIFEST (lines of WL/manifest.tsv) through `unhex ingest`,
# one process per series name, PARALLEL at once; to $URL, or with URLS
# (servers' URLs, space-separated) the k-th series name to the (k mod n)-th.
# With BATCH=N > 1, `unhex ingest --batch N` (push.v1, N files per request),
# whose summary has no profile and sample counts: INGEST_PAIRS and
# INGEST_PROFILES are then 0 and the caller reads the store's.
bench_ingest() {
	local lists=$OUT/lists-$3 urls=${5:-$URL} t0
	rm -rf "$lists"
	mkdir -p "$lists"
	awk -F'\t' -v d="$lists" '{
		if (!($2 in id)) { id[$2] = ++n; print $2 > (d "/" n ".name") }
		print $1 >> (d "/" id[$2] ".files")
	}' "$2"
	t0=$(now_ns)
	# shellcheck disable=SC2016,SC2011
	ls "$lists"/*.name | xargs -P "$4" -I{} bash -c '
		list=${1%.name}.files
		read -ra url <<<"$4"
		k=$(basename "$1" .name)
		cd "$2" && xargs "$3" ingest --server "${url[k % ${#url[@]}]}" --name "$(cat "$1")" \
			--batch "$5" <"$list" 2>/dev/null
	' _ {} "$1" "$B/cli/unhex" "$urls" "${BATCH:-1}" >"$OUT/ingest-$3.txt" || true
	INGEST_S=$(secs "$t0" "$(now_ns)")
	INGEST_PAIRS=$(sed -n 's/.*profiles, \([0-9]*\) samples.*/\1/p' "$OUT/ingest-$3.txt" | awk '{s += $1} END {print s + 0}')
	INGEST_PROFILES=$(sed -n 's/.*: \([0-9]*\) profiles, .*/\1/p' "$OUT/ingest-$3.txt" | awk '{s += $1} END {print s + 0}')
	INGEST_FAILED=$(sed -n 's/.*: \([0-9]*\) of \([0-9]*\) files.*/\1 \2/p' "$OUT/ingest-$3.txt" |
		awk '{f += $2 - $1} END {print f + 0}')
}

# One cold and N warm GET /pyroscope/render of SERVICE over [FROM, UNTIL).
bench_render() {
	local t
	: >"$OUT/$1.times"
	for _ in $(seq 0 "$4"); do
		t=$(curl -sS -o "$OUT/$1.json" -w '%{time_total}' --fail --get \
			--data-urlencode "query=$PTYPE{service_name=\"$SERVICE\"}" \
			--data-urlencode "from=$2" --data-urlencode "until=$3" "$URL/pyroscope/render")
		echo "$t" >>"$OUT/$1.times"
	done
	COLD=$(head -1 "$OUT/$1.times" | awk '{printf "%.1f", $1 * 1000}')
	WARM=$(tail -n +2 "$OUT/$1.times" | median | awk '{printf "%.1f", $1 * 1000}')
	WARM_MIN=$(tail -n +2 "$OUT/$1.times" | sort -g | head -1 | awk '{printf "%.1f", $1 * 1000}')
	BYTES=$(stat -c %s "$OUT/$1.json")
	TICKS=$(json_num "$OUT/$1.json" numTicks)
}

#!/usr/bin/env bash
# callgrind.sh - instruction counts of a warm render and of ingest, the "no
# slowdown" measure of issue 9 (within +2 % of the baseline).  Instruction
# counts from callgrind do not move with the load of a shared machine the
# way times do; run both builds with this same script.
#
#   bash bench/callgrind.sh BUILD_DIR OUT_DIR
#   env: WORKLOAD=DIR  reuse DIR/workload and DIR/debug of an earlier run
#                      (lib_store.sh's fixed workload) instead of making them
#
# On lib_store.sh's fixed workload (1 service, 20 instances, 1 hour ending
# 1767225600, seed 1; 7,200 raw-address pprofs):
#
#  render  the hour's flame graph, in process (`bench-query`: store open,
#          symbolization service with the memo, no upstream), on two stores
#          of the whole workload:
#            raw         no symbol files: frames stay binary+0x..., every
#                        build ID not_found (the store of bench/RESULTS.md)
#            symbolized  all 7 symbol files stored: every frame named at
#                        query time (through the memo when warm)
#          Instructions per warm render, as bench/RESULTS.md measures them:
#          (total of 1 + 5 queries - total of 1 + 1 queries) / 4, each total
#          one callgrind run of `bench-query --runs N` (every thread), with
#          the query deadline lifted (--timeout-s) where bench-query has it.
#  ingest  `bench-ingest` into a fresh store of the first 10 minutes of the
#          hour (1,200 pprofs of all 20 instances, about 120,000 pprof
#          samples), counting only inside ingest_legacy() (callgrind
#          --toggle-collect, on the ingesting thread): decode, validation,
#          normalization, symbol dedup and the RocksDB writes, not the file
#          loading, store open or flush.  Reported per pprof file (one
#          ingest call) and per pprof sample (Sample message).  Two runs on
#          the same input differed by 0.01 %.
#
# Prints a Markdown table; the callgrind outputs stay in OUT_DIR.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib_bench.sh
. "$HERE/lib_bench.sh"
. "$HERE/lib_store.sh"
lib_store_dirs callgrind.sh "$@"
bench_need_built callgrind.sh bench/unhex-workload bench/bench-ingest bench/bench-query cli/unhex
command -v valgrind >/dev/null || { echo "callgrind.sh: valgrind is not installed" >&2; exit 1; }
trap lib_store_cleanup EXIT

fixed_stores

# The server's 30 s query deadline can cut a query short under callgrind on
# a busy machine; bench-query lifts it where it can (not before golden).
TMO=()
usage=$("$B/bench/bench-query" 2>&1 || true)
if [[ $usage == *--timeout-s* ]]; then
	TMO=(--timeout-s 3600)
else
	echo "callgrind.sh: this bench-query has no --timeout-s; a busy machine may hit the 30 s deadline" >&2
fi

# render_instr STORE -> instructions per warm render
render_instr() {
	local store=$1 r t=()
	for r in 1 5; do
		valgrind --tool=callgrind --callgrind-out-file="$store.cg.$r" "$B/bench/bench-query" \
			--data "$store" --query "$WL_QUERY" --from "$WL_FROM" --until "$WL_END" --runs $r \
			"${TMO[@]}" >"$store.cg.$r.txt" 2>"$store.cg.$r.log" ||
			{ tail "$store.cg.$r.log" >&2; return 1; }
		t+=("$(sed -n 's/^summary: //p' "$store.cg.$r")")
	done
	echo "${t[0]} ${t[1]}" >"$store.cg.totals"
	awk -v a="${t[0]}" -v b="${t[1]}" 'BEGIN {printf "%.0f", (b - a) / 4}'
}
echo "== callgrind: render, raw store" >&2
raw=$(render_instr "$OUT/store-raw")
echo "== callgrind: render, symbolized store" >&2
sym=$(render_instr "$OUT/store-sym")
names_raw=$(jq '.flamebearer.names | length' "$OUT/store-raw.render.json")
names_sym=$(jq '.flamebearer.names | length' "$OUT/store-sym.render.json")
hex_sym=$(jq '[.flamebearer.names[] | select(test("\\+0x"))] | length' "$OUT/store-sym.render.json")

echo "== callgrind: ingest of the first 10 minutes" >&2
SUB=$OUT/ingest-subset
rm -rf "$SUB" "$OUT/store-ingest"
mkdir -p "$SUB"
# Paths relative to SUB, which bench-ingest reads them from.
rel=$(realpath --relative-to="$SUB" "$WL/workload")
awk -F'\t' -v f="$((WL_FROM + 600))" -v r="$rel" '$3 < f {print r "/" $0}' \
	"$WL/workload/manifest.tsv" >"$SUB/manifest.tsv"
valgrind --tool=callgrind --callgrind-out-file="$OUT/ingest.cg" --toggle-collect=ingest_legacy \
	"$B/bench/bench-ingest" --manifest "$SUB" --data "$OUT/store-ingest" \
	>"$OUT/ingest.cg.txt" 2>"$OUT/ingest.cg.log" || { tail "$OUT/ingest.cg.log" >&2; exit 1; }
ing=$(sed -n 's/^summary: //p' "$OUT/ingest.cg")
field() { tr ' ' '\n' <"$OUT/ingest.cg.txt" | sed -n "s/^$1=//p" | tail -1; }
files=$(field files)
psamples=$(field pprof_samples)
pairs=$(field samples)

group() { echo "$1" | sed ':a; s/\B[0-9]\{3\}\>/,&/; ta'; }
per_file=$(awk -v t="$ing" -v n="$files" 'BEGIN {printf "%.0f", t / n}')
per_sample=$(awk -v t="$ing" -v n="$psamples" 'BEGIN {printf "%.0f", t / n}')
src=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$B/CMakeCache.txt" 2>/dev/null || true)
cat <<EOT

build: $(git -C "${src:-.}" describe --always --dirty 2>/dev/null || echo '?') ($(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$B/CMakeCache.txt" 2>/dev/null)); valgrind $(valgrind --version | sed 's/^valgrind-//')

| measure | instructions |
|---|---|
| warm render of the hour, raw store ($names_raw names) | $(group "$raw") |
| warm render of the hour, symbolized store ($names_sym names, $hex_sym hex) | $(group "$sym") |
| ingest, per pprof file ($files files, $psamples pprof samples, $pairs stored pairs; $(group "$ing") in ingest_legacy) | $(group "$per_file") |
| ingest, per pprof sample | $(group "$per_sample") |
EOT

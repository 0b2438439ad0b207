#!/usr/bin/env bash
# bench_sym.sh - the symbolization benchmarks of bench/RESULTS.md
# ("Symbolization"), in one run on the same binaries and addresses:
#
#   1. engines on 100,000 addresses of two real programs: cppcheck (C++,
#      built from the Debian source package with -O2 -g) and the Go
#      compiler (cmd/compile from /usr/lib/go/src, uncompressed DWARF):
#        - our raw DWARF resolver (sym_dwarf_open + sym_dwarf_resolve),
#        - our per-build-ID index (sym_index_open + sym_index_lookup; the
#          build is timed separately: it happens once per build ID, ever),
#        - llvm-symbolizer --inlining --demangle (the reference),
#      each in its own process under /usr/bin/time -v (wall, peak RSS), on
#      two address sets: profile-like (Zipf s=1 over 2000 distinct
#      addresses inside functions) and uniform over .text;
#   2. the query path: the synthetic workload with --debug-dir, ingested,
#      its symbol files uploaded; the render query once (symbolizes) and
#      again (cached), against the same profiles ingested already named
#      (bench-sym name-pprof, through the same engine) in another tenant.
#
#   bash bench/bench_sym.sh BUILD_DIR [OUT_DIR]      (Release build)
#
# Built programs are cached in OUT_DIR (default bench/out/sym, git-ignored).
# Needs: apt deb-src access on the first run (root or sudo), go, python3,
# llvm-symbolizer, /usr/bin/time.  Prints a Markdown summary on stdout.
set -euo pipefail

B=$(cd "${1:?usage: bench_sym.sh BUILD_DIR [OUT_DIR]}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${2:-$HERE/out/sym}
N=${N:-100000}
DISTINCT=${DISTINCT:-2000}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
BS=$B/bench/bench-sym
UNHEX=$B/cli/unhex
WL=$B/bench/unhex-workload
for t in "$BS" "$UNHEX" "$WL"; do
	[ -x "$t" ] || { echo "bench_sym.sh: $t is missing; build first" >&2; exit 1; }
done
for t in llvm-symbolizer python3 go curl jq; do
	command -v $t >/dev/null || { echo "bench_sym.sh: $t is not installed" >&2; exit 1; }
done
[ -x /usr/bin/time ] || { echo "bench_sym.sh: /usr/bin/time is missing (package time)" >&2; exit 1; }
log() { echo "== $*" >&2; }
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO=sudo

# ---- the programs -----------------------------------------------------------
CPPCHECK=$OUT/cppcheck
if [ ! -x "$CPPCHECK" ] && [[ " ${PROGS:-cppcheck} " == *" cppcheck "* ]]; then
	log "building cppcheck from the Debian source package (once; cached in $OUT)"
	if ! grep -rqs '^Types:.*deb-src' /etc/apt/sources.list.d/ &&
		! grep -qs '^deb-src' /etc/apt/sources.list; then
		sed 's/^Types: deb$/Types: deb-src/' /etc/apt/sources.list.d/debian.sources |
			$SUDO tee /etc/apt/sources.list.d/unhex-deb-src.sources >/dev/null
	fi
	$SUDO apt-get update -qq
	rm -rf "$OUT/src"
	mkdir -p "$OUT/src"
	(cd "$OUT/src" && apt-get source -qq cppcheck)
	src=$(ls -d "$OUT"/src/cppcheck-*/ | head -1)
	make -C "$src" -j2 CXXFLAGS="-O2 -g" LDFLAGS="-Wl,--build-id" cppcheck >"$OUT/cppcheck-build.log" 2>&1
	cp "$src/cppcheck" "$CPPCHECK"
fi
GOBIN=$OUT/go-compile
if [ ! -x "$GOBIN" ]; then
	log "building cmd/compile with uncompressed DWARF and a GNU build ID"
	# Go 1.19 writes a GNU build ID only with -B 0x<hex> (-B gobuildid is 1.20+).
	H=$(go version | sha1sum | cut -c1-40)
	(cd /usr/lib/go/src && GOCACHE="$OUT/gocache" GOPATH="$OUT/gopath" GOFLAGS=-buildvcs=false \
		go build -o "$GOBIN" -ldflags="-compressdwarf=false -B 0x$H" cmd/compile)
fi

# ---- addresses -------------------------------------------------------------
# gen ELF KIND -> file of hex ELF vaddrs (fixed seed): zipf = Zipf(s=1) over
# DISTINCT random addresses inside FUNC symbols; uniform = uniform over .text.
gen() {
	python3 - "$1" "$2" "$N" "$DISTINCT" <<'EOF'
import random, subprocess, sys, bisect
elf, kind, n, distinct = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
rng = random.Random(20240601)
if kind == "uniform":
    for l in subprocess.run(["readelf", "-SW", elf], capture_output=True, text=True).stdout.splitlines():
        f = l.replace("[ ", "[").split()
        if len(f) > 5 and f[1] == ".text":
            lo, size = int(f[3], 16), int(f[5], 16)
    for _ in range(n):
        print("0x%x" % (lo + rng.randrange(size)))
    sys.exit(0)
syms = []
for l in subprocess.run(["nm", "-S", "--defined-only", elf], capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if len(f) >= 4 and f[2] in ("t", "T") and int(f[1], 16) > 0:
        syms.append((int(f[0], 16), int(f[1], 16)))
pool = [a + rng.randrange(s) for a, s in rng.sample(syms, min(distinct, len(syms)))]
cdf, t = [], 0.0
for r in range(len(pool)):
    t += 1.0 / (r + 1)
    cdf.append(t)
for _ in range(n):
    print("0x%x" % pool[bisect.bisect_left(cdf, rng.random() * t)])
EOF
}

# timed NAME CMD... : runs under /usr/bin/time -v; sets WALL (s) and RSS (MB).
timed() {
	local name=$1
	shift
	/usr/bin/time -v -o "$OUT/$name.time" "$@" >"$OUT/$name.out" 2>"$OUT/$name.err"
	WALL=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, a, ":"); s = 0;
		for (i = 1; i <= n; i++) s = s * 60 + a[i]; print s}' "$OUT/$name.time")
	RSS=$(awk -F': ' '/Maximum resident set size/ {printf "%.1f", $2 / 1024}' "$OUT/$name.time")
}
kv() { tr ' ' '\n' <"$OUT/$1.out" | sed -n "s/^$2=//p" | tail -1; }

ROWS=()
TARGETS=()
for prog in ${PROGS:-cppcheck go-compile}; do
	elf=$OUT/$prog
	size=$(stat -c %s "$elf")
	log "$prog: $((size / 1048576)) MiB, build ID $(readelf -n "$elf" | awk '/Build ID/{print $3}')"
	timed "$prog.index-build" "$BS" index-build "$elf" "$OUT/$prog.index"
	ib=$(kv "$prog.index-build" build_s)
	imb=$(kv "$prog.index-build" file_mb)
	ROWS+=("| $prog | index build (once per build ID) | all | ${ib} s | | | ${RSS} MB | index file ${imb} MB |")
	for kind in zipf uniform; do
		a=$OUT/$prog.$kind.txt
		gen "$elf" "$kind" >"$a"
		log "$prog $kind: llvm-symbolizer"
		timed "$prog.$kind.llvm" llvm-symbolizer --obj="$elf" --inlining --demangle <"$a"
		lw=$WALL lr=$RSS
		lrate=$(awk -v n="$N" -v w="$lw" 'BEGIN {printf "%.0f", n / w}')
		ROWS+=("| $prog | llvm-symbolizer --inlining --demangle | $kind | $lw s | $lrate | | $lr MB | |")
		log "$prog $kind: raw DWARF"
		timed "$prog.$kind.dwarf" "$BS" dwarf "$elf" "$a"
		dw=$WALL dr=$RSS
		drate=$(awk -v n="$N" -v w="$dw" 'BEGIN {printf "%.0f", n / w}')
		dspeed=$(awk -v a="$lw" -v b="$dw" 'BEGIN {printf "%.1f", a / b}')
		ROWS+=("| $prog | unhex raw DWARF (sym_dwarf_resolve) | $kind | $dw s | $drate | ${dspeed}x | $dr MB | open $(kv "$prog.$kind.dwarf" open_s) s, resolve $(kv "$prog.$kind.dwarf" resolve_s) s, in-process $(kv "$prog.$kind.dwarf" addr_per_s)/s |")
		log "$prog $kind: index"
		timed "$prog.$kind.index" "$BS" index "$OUT/$prog.index" "$a" 5
		xw=$WALL xr=$RSS
		xspeed=$(awk -v a="$lw" -v b="$xw" 'BEGIN {printf "%.1f", a / b}')
		ROWS+=("| $prog | unhex index (sym_index_lookup) | $kind | $xw s | $(kv "$prog.$kind.index" addr_per_s) | ${xspeed}x | $xr MB | open $(kv "$prog.$kind.index" open_s) s; first round incl. open $(kv "$prog.$kind.index" addr_per_s_first)/s |")
		TARGETS+=("$prog $kind: raw DWARF ${dspeed}x llvm-symbolizer (target >= 3x: $(awk -v s="$dspeed" 'BEGIN {print (s >= 3 ? "met" : "MISSED")}')); index $(kv "$prog.$kind.index" addr_per_s) addr/s (target >= 1,000,000: $(awk -v s="$(kv "$prog.$kind.index" addr_per_s)" 'BEGIN {print (s >= 1000000 ? "met" : "MISSED")}')); peak RSS DWARF $dr MB / index $xr MB vs llvm $lr MB (target <=: $(awk -v a="$dr" -v b="$xr" -v l="$lr" 'BEGIN {print (a <= l && b <= l ? "met" : "MISSED")}'))")
		# both engines must have named the addresses llvm named
		log "$prog $kind: frames dwarf=$(kv "$prog.$kind.dwarf" frames) index=$(kv "$prog.$kind.index" frames) llvm=$(grep -c . "$OUT/$prog.$kind.llvm.out" | awk '{print int($1 / 2)}')"
	done
done

# ---- the query path --------------------------------------------------------
log "query path: workload with symbol files"
W=$OUT/workload
rm -rf "$W" "$OUT/debug" "$OUT/server-data" "$OUT/named" "$OUT/ingest.log"
"$WL" --out "$W" --debug-dir "$OUT/debug" --services 1 --instances ${INSTANCES:-10} \
	--minutes ${MINUTES:-30} --end now --seed 7 --quiet
mkdir -p "$OUT/named"
while IFS=$'\t' read -r rel name ts; do
	mkdir -p "$(dirname "$OUT/named/$rel")"
	"$BS" name-pprof "$W/$rel" "$OUT/named/$rel" "$OUT/debug"
done <"$W/manifest.tsv"
# shellcheck source=bench/lib_bench.sh
. "$HERE/lib_bench.sh"
trap bench_stop_server EXIT
bench_start_server "$OUT/server-data" "$OUT/serve.log" --symbolize-budget 60s
ingest_dir() { # DIR TENANT: one `unhex ingest` per series name
	local dir=$1 tenant=$2 name
	cut -f2 "$W/manifest.tsv" | sort -u | while IFS= read -r name; do
		awk -F'\t' -v n="$name" '$2 == n {print $1}' "$W/manifest.tsv" |
			(cd "$dir" && xargs "$UNHEX" ingest --server "$URL" --tenant "$tenant" --name "$name") \
			>/dev/null 2>>"$OUT/ingest.log" || { echo "ingest of $dir ($name) failed" >&2; exit 1; }
	done
}
ingest_dir "$W" raw
ingest_dir "$OUT/named" named
"$UNHEX" upload --server "$URL" "$OUT"/debug/*.debug >"$OUT/upload.out" 2>&1
SVC=$(awk -F'\t' 'NR == 1 {print $2}' "$W/manifest.tsv" | sed -E 's/\{.*//; s/\.[a-z_]+$//')
Q=$(jq -rn --arg s "process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"$SVC\"}" '$s|@uri')
FROM=$(($(date +%s) - 7200))
UNTIL=$(($(date +%s) + 600))
render() { # TENANT -> seconds
	curl -sf -o "$OUT/render.json" -w '%{time_total}' -H "X-Scope-OrgID: $1" \
		"$URL/pyroscope/render?query=$Q&from=$FROM&until=$UNTIL"
}
median() { sort -g | awk '{v[NR] = $1} END {print v[int((NR + 1) / 2)]}'; }
first=$(render raw)
jq -e '.symbolization.pending != true' "$OUT/render.json" >/dev/null ||
	echo "WARNING: the first query is still pending" >&2
hex=$(jq '[.flamebearer.names[] | select(test("\\+0x"))] | length' "$OUT/render.json")
total=$(jq '.flamebearer.names | length' "$OUT/render.json")
cp "$OUT/render.json" "$OUT/render-first.json"
second=$(render raw)
cmp -s "$OUT/render.json" "$OUT/render-first.json" ||
	echo "WARNING: the second raw response differs from the first" >&2
named_first=$(render named)
# Same flame graph either way: only the symbolization object may differ.
cmp -s <(jq -S 'del(.symbolization)' "$OUT/render.json") \
	<(jq -S 'del(.symbolization)' "$OUT/render-first.json") ||
	echo "WARNING: the raw and named flame graphs differ" >&2
# Interleaved (raw, named) pairs, so load changes on a shared machine hit
# both alike; every raw query here is a repeated (cached) one.
PAIRS=${PAIRS:-15}
for i in $(seq 1 "$PAIRS"); do echo "$(render raw) $(render named)"; done >"$OUT/pairs.txt"
raw_med=$(awk '{print $1}' "$OUT/pairs.txt" | median)
named_med=$(awk '{print $2}' "$OUT/pairs.txt" | median)
pair_med=$(awk '{printf "%.3f\n", $1 / $2}' "$OUT/pairs.txt" | median)
ratio2=$(awk -v a="$second" -v b="$named_med" 'BEGIN {printf "%.2f", a / b}')
ratio=$(awk -v a="$raw_med" -v b="$named_med" 'BEGIN {printf "%.2f", a / b}')
profiles=$(wc -l <"$W/manifest.tsv")
bench_stop_server
# In process, on the stopped server's store: thread CPU time of warm
# query_render calls, which moves less than wall time on a shared machine.
inproc() { # TENANT [FLAGS] -> warm CPU median, ms
	"$B/bench/bench-query" --data "$OUT/server-data" --tenant "$1" "${@:2}" --runs 15 \
		--query "process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"$SVC\"}" \
		--from now-2h --until now | tr ' ' '\n' | sed -n 's/^warm_cpu_median_ms=//p' | head -1
}
cpu_raw=$(inproc raw)
cpu_named=$(inproc named)
cpu_nomemo=$(inproc raw --no-memo)
cpu_ratio=$(awk -v a="$cpu_raw" -v b="$cpu_named" 'BEGIN {printf "%.2f", a / b}')
# Instructions of one warm query (callgrind; exact, unlike time on a shared
# machine): the total of 1 + 5 queries minus that of 1 + 1, divided by 4.
instr() { # TENANT [FLAGS] -> instructions per warm query
	local r t=()
	# One query outside callgrind first: whatever it leaves on disk (symbol
	# cache records, indexes) would otherwise be written by the 1-query run
	# only, and the difference of the two runs would lose it.
	"$B/bench/bench-query" --data "$OUT/server-data" --tenant "$1" "${@:2}" --runs 1 \
		--query "process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"$SVC\"}" \
		--from now-2h --until now >/dev/null 2>&1
	for r in 1 5; do
		valgrind --tool=callgrind --callgrind-out-file="$OUT/cg.$1.$r" "$B/bench/bench-query" \
			--data "$OUT/server-data" --tenant "$1" "${@:2}" --runs $r \
			--query "process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"$SVC\"}" \
			--from now-2h --until now >/dev/null 2>&1
		t+=("$(sed -n 's/^summary: //p' "$OUT/cg.$1.$r")")
	done
	awk -v a="${t[0]}" -v b="${t[1]}" 'BEGIN {printf "%.0f", (b - a) / 4}'
}
if command -v valgrind >/dev/null; then
	ins_raw=$(instr raw)
	ins_named=$(instr named)
	ins_nomemo=$(instr raw --no-memo)
else
	ins_raw=n/a ins_named=n/a ins_nomemo=n/a
fi

echo "### Engines ($N addresses; wall and peak RSS from /usr/bin/time -v, one process per run)"
echo
echo "| program | engine | addresses | wall | addresses/s | vs llvm | peak RSS | notes |"
echo "|---|---|---|---|---|---|---|---|"
printf '%s\n' "${ROWS[@]}"
echo
echo "Targets:"
printf -- '- %s\n' "${TARGETS[@]}"
echo
echo "### Query path ($profiles workload profiles, 1 service; render of the whole range)"
echo
echo "| query | seconds |"
echo "|---|---|"
echo "| raw tenant, first (symbolizes: index builds + resolution) | $first |"
echo "| raw tenant, second (cached) | $second |"
echo "| named tenant, first | $named_first |"
echo "| raw tenant, median of $PAIRS more (interleaved with named) | $raw_med |"
echo "| named tenant, median of $PAIRS (interleaved with raw) | $named_med |"
echo "| in process, warm CPU median: raw / named / raw without the memo (ms) | $cpu_raw / $cpu_named / $cpu_nomemo |"
echo "| in process, instructions per warm query: raw / named / raw without the memo | $ins_raw / $ins_named / $ins_nomemo |"
echo
echo "Second raw query / named median: ${ratio2}; raw median / named median: ${ratio};" \
	"median of per-pair ratios: ${pair_med}; in-process CPU raw / named: ${cpu_ratio};" \
	"instructions raw / named: $(awk -v a="$ins_raw" -v b="$ins_named" 'BEGIN {if (b > 0) printf "%.3f", a / b; else print "n/a"}')" \
	"(target <= 1.2 for the repeated query: $(awk -v a="$ratio" -v b="$cpu_ratio" 'BEGIN {print (a <= 1.2 && b <= 1.2 ? "met" : "MISSED")}'))." \
	"Names after symbolization: $total, still hex: $hex. Load average: $(cut -d' ' -f1-3 /proc/loadavg)."

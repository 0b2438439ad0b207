#!/usr/bin/env bash
# sym_dwz.sh - query-time symbolization of DWZ-processed debug info, end to
# end.  Two C and two C++ programs sharing a header of inline functions are
# built with -g -O2 and split (objcopy --only-keep-debug); `dwz -m` moves
# their common DWARF (types, the abstract instances of the shared inline
# functions, their names) into one alt file, which every .debug file then
# references by a .gnu_debugaltlink (name + build ID) and DW_FORM_GNU_ref_alt
# / DW_FORM_GNU_strp_alt values.  The name recorded in the link is an
# absolute path that does not exist, as a Debian /usr/lib/debug/.dwz path on
# another machine would not: the server must find the alt file by its build
# ID.  The STRIPPED binaries are profiled for real and ingested, then:
#   A. every .debug file AND the alt file uploaded with `unhex upload`, no
#      upstream: the alt file comes from the store;
#   B. a fresh server whose only source of the alt file is a real elfutils
#      debuginfod on loopback configured as upstream (one program's .debug is
#      served only there too; the others are uploaded);
#   C. a fresh server with the .debug files but no alt file anywhere: no
#      frame resolves and the status names the missing alt file (so A and B
#      cannot pass without it); once the alt file is uploaded the names
#      come out right with nothing re-sent (nothing built without the alt
#      file was kept; the build IDs waiting for it are retried at once).
# In A, B and C-after-upload every location of /api/v1/pprof (names, file
# basenames, lines, whole inline chains) must equal `llvm-symbolizer
# --inlining` on the unstripped binaries (sym_compare), and /pyroscope/render
# has no `+0x` frame that the debug info can name.
#
# A third C program, dwzc3, makes one role deterministic that perf only
# samples by luck elsewhere: the first instruction of first_touch() stores to
# a fresh page, so most of its samples are taken in the kernel's page-fault
# handler, and below the kernel frames perf reports the PC the fault came
# from: first_touch's entry, right after alignment padding.  That frame is
# the interrupted PC, not a return address: looked up at PC - 1 it lands in
# the padding or the previous function (a ctest run once showed dwzx1's
# std::__introsort_loop entry, hit by a timer interrupt, stay hex).
# sym_compare judges such frames in the PC role.  Every FUNC symbol of the
# dwz'd C++ binaries is compared with llvm-symbolizer, sampled or not, by
# the unit tests (test_dwarf test_dwz_shared_templates, test_index
# test_roundtrip_dwz).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need PERF2PPROF
need SYM_COMPARE
for t in dwz debuginfod llvm-symbolizer readelf objcopy; do
	command -v $t >/dev/null || fail "$t is not installed (see .ci/deps.sh)"
done
# set +e: under errexit `(exit $rc)` would end the trap before cleanup.
trap 'rc=$?; stop_debuginfod; set +e; (exit $rc); cleanup' EXIT

# ---- the programs: C pair and C++ pair, each pair sharing a header
cat >"$WORK/shared.h" <<'EOF'
struct dwz_state {
	unsigned seed, rounds;
};
static inline __attribute__((always_inline)) unsigned dwz_leaf(unsigned x)
{
	return x * 2654435761u + (x >> 3);
}
static inline __attribute__((always_inline)) unsigned dwz_mid(const struct dwz_state *s, unsigned x)
{
	unsigned acc = 0;
	for (unsigned i = 0; i < s->rounds; i++)
		acc += dwz_leaf(i ^ x ^ s->seed);
	return acc;
}
EOF
{
	cat <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "shared.h"
__attribute__((noinline)) unsigned hash_pass(unsigned x)
{
	struct dwz_state s = { x, 20000 };
	return dwz_mid(&s, x) + dwz_leaf(x);
}
EOF
	c_timed_main 1 'acc += hash_pass(v++);'
} >"$WORK/dwzc1.c"
{
	cat <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "shared.h"
static inline __attribute__((always_inline)) unsigned twice(const struct dwz_state *s, unsigned x)
{
	return dwz_mid(s, x) ^ dwz_mid(s, x + 7);
}
__attribute__((noinline)) unsigned mix_pass(volatile unsigned *p)
{
	struct dwz_state s = { *p, 9000 };
	return twice(&s, *p);
}
EOF
	c_timed_main 3 'acc += mix_pass(&v);' 'v++;'
} >"$WORK/dwzc2.c"
cat >"$WORK/shared.hh" <<'EOF'
#include <algorithm>
#include <map>
#include <string>
#include <vector>
namespace dwz {
template <typename T> struct Acc {
	T v{};
	__attribute__((always_inline)) void add(T x) { v += x * 2 + (x >> 1); }
};
template <typename T> __attribute__((noinline)) T total(const std::vector<T> &xs)
{
	Acc<T> a;
	for (auto x : xs)
		a.add(x);
	return a.v;
}
inline size_t keys(int n)
{
	std::map<std::string, int> m;
	for (int i = 0; i < n; i++)
		m[std::to_string(i)] = i;
	size_t r = 0;
	for (auto &kv : m)
		r += kv.first.size();
	return r;
}
} // namespace dwz
EOF
{
	cat <<'EOF'
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include "shared.hh"
__attribute__((noinline)) int order(std::vector<int> &v)
{
	std::sort(v.begin(), v.end(), [](int a, int b) { return a % 7919 < b % 7919; });
	return v[0];
}
EOF
	cxx_timed_main 'std::vector<int> v(20000);' '(int)(i * 2654435761u + (unsigned)acc)' \
		'acc += order(v) + dwz::total<long>(std::vector<long>(v.begin(), v.end())) +
       (long)dwz::keys(1500);'
} >"$WORK/dwzx1.cc"
{
	cat <<'EOF'
#include <ctime>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include "shared.hh"
__attribute__((noinline)) long reverse_order(std::vector<long> &v)
{
	std::sort(v.begin(), v.end(), [](long a, long b) { return a % 104729 > b % 104729; });
	return v[0];
}
EOF
	cxx_timed_main 'std::vector<long> v(20000);
std::function<long(int)> f = [](int k) { return (long)dwz::keys(k); };' \
		'(long)(i * 40503u + (unsigned long)acc)' \
		'acc += reverse_order(v) + dwz::total<long>(v) + f(1200);'
} >"$WORK/dwzx2.cc"
cat >"$WORK/dwzc3.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include "shared.h"
__attribute__((noinline, aligned(64))) unsigned first_touch(char *p)
{
	*p = 1;
	return (unsigned)p[64];
}
int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	size_t len = (size_t)64 << 20;
	struct timespec t0, t;
	unsigned acc = 0;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		char *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (m == MAP_FAILED)
			return 1;
		madvise(m, len, MADV_NOHUGEPAGE);
		for (size_t i = 0; i < len; i += 4096)
			acc += dwz_leaf(first_touch(m + i));
		munmap(m, len);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	printf("%u\n", acc);
	return 0;
}
EOF
PROGS="dwzc1 dwzc2 dwzc3 dwzx1 dwzx2"
for p in dwzc1 dwzc2 dwzc3; do
	cc -g -O2 -Wl,--build-id -o "$WORK/$p" "$WORK/$p.c"
done
for p in dwzx1 dwzx2; do
	c++ -g -O2 -Wl,--build-id -o "$WORK/$p" "$WORK/$p.cc"
done

# ---- split, then dwz the debug files (before the debuglinks: their CRC
# covers the final .debug files, as distributions do it).  The recorded alt
# name is a path that does not exist here.
ALT_NAME=/usr/lib/debug/.dwz/unhex-sym-dwz-test/common.debug
[ ! -e "$ALT_NAME" ] || fail "$ALT_NAME exists; the test needs it absent"
for p in $PROGS; do
	split_debug "$WORK/$p"
done
(cd "$WORK" && dwz -m common.debug -M "$ALT_NAME" dwzc1.debug dwzc2.debug dwzc3.debug \
	dwzx1.debug dwzx2.debug) ||
	fail "dwz failed"
for p in $PROGS; do
	objcopy --add-gnu-debuglink="$WORK/$p.debug" "$WORK/$p.stripped"
done

# ---- the DWARF really depends on the alt file
ID_ALT=$(build_id "$WORK/common.debug")
[ -n "$ID_ALT" ] || fail "dwz wrote no build ID into common.debug"
for p in $PROGS; do
	declare "ID_$p=$(build_id "$WORK/$p")"
	id=ID_$p
	[ "$(build_id "$WORK/$p.debug")" = "${!id}" ] || fail "$p.debug lost the build ID"
	objcopy --dump-section .gnu_debugaltlink="$WORK/$p.altlink" "$WORK/$p.debug" "$WORK/$p.scratch" &&
		rm -f "$WORK/$p.scratch" || fail "$p.debug has no .gnu_debugaltlink"
	[ -s "$WORK/$p.altlink" ] || fail "$p.debug has no .gnu_debugaltlink: dwz changed nothing"
	link=$(od -An -v -tx1 "$WORK/$p.altlink" | tr -d ' \n')
	[ "${link: -${#ID_ALT}}" = "$ID_ALT" ] || fail "$p.debug links to $link, not $ID_ALT"
	IFS= read -r -d '' name <"$WORK/$p.altlink" || true
	[ "$name" = "$ALT_NAME" ] || fail "$p.debug names $name, not $ALT_NAME"
	readelf --debug-dump=abbrev "$WORK/$p.debug" >"$WORK/$p.abbrev" 2>/dev/null || true
	grep -q DW_FORM_GNU_strp_alt "$WORK/$p.abbrev" || fail "$p.debug uses no DW_FORM_GNU_strp_alt"
	grep -q DW_FORM_GNU_ref_alt "$WORK/$p.abbrev" || fail "$p.debug uses no DW_FORM_GNU_ref_alt"
	# The abstract origins of inlined code live in the alt file.
	readelf --debug-dump=info "$WORK/$p.debug" >"$WORK/$p.info" 2>/dev/null || true
	n=$(grep -A1 'DW_TAG_inlined_subroutine' "$WORK/$p.info" |
		grep -c 'DW_AT_abstract_origin: <alt 0x' || true)
	[ "$n" -gt 0 ] || fail "no inlined subroutine of $p.debug has its origin in the alt file"
	note "$p: build ID ${!id}, $n inlined subroutines with origins in the alt file"
done
readelf --debug-dump=info "$WORK/common.debug" >"$WORK/common.info" 2>/dev/null || true
grep -q 'DW_AT_name .*: dwz_leaf$' "$WORK/common.info" ||
	fail "the shared inline function dwz_leaf was not moved to the alt file"
note "alt file common.debug: build ID $ID_ALT, recorded as $ALT_NAME"

# ---- profile the stripped binaries for real
for p in $PROGS; do
	profile_to_pprof "$WORK/$p.pb.gz" "$WORK/$p.stripped" 1.2
done
# dwzc3: perf must have reported first_touch's entry right below kernel
# frames (the page faults), or the role check tests nothing.  The gperftools
# fallback has no kernel frames at all.
if [ -s "$WORK/dwzc3.perf.data" ]; then
	FT=$(nm "$WORK/dwzc3" | awk '$3 == "first_touch" {print $1}' | sed 's/^0*//')
	[ -n "$FT" ] || fail "dwzc3 has no first_touch symbol"
	n=$(perf script -i "$WORK/dwzc3.perf.data" -F ip,dso 2>/dev/null | awk -v ft="$FT" '
		/^[[:space:]]*$/ { k = 0; next }
		{ kern = ($0 ~ /kernel/); if (!kern && k && $1 == ft && $0 ~ /dwzc3/) n++; k = kern }
		END { print n + 0 }')
	[ "$n" -gt 0 ] || fail "no dwzc3 sample has first_touch's entry (0x$FT) below kernel frames"
	note "dwzc3: $n samples entered the kernel at first_touch's entry 0x$FT"
else
	note "dwzc3: not profiled with perf; the kernel-entry role is not exercised"
fi

FROM=$(($(date +%s) - 86400))
UNTIL=$(($(date +%s) + 3600))

ingest_all() {
	local p
	for p in $PROGS; do
		"$UNHEX" ingest --server "$URL" --name "$p.cpu" "$WORK/$p.pb.gz" >/dev/null ||
			fail "ingest of $p"
	done
	PT=$(cpu_type dwzc1)
}

# check_all WHAT: names of every program against llvm-symbolizer.
check_all() {
	local what=$1 p id mode names
	for p in $PROGS; do
		wait_symbolized "$(selector "$PT" "$p")" "$FROM" "$UNTIL"
		check_hex "$p" "$BODY"
		names=$(jq -r '.flamebearer.names[]' <<<"$BODY")
		case $p in
		dwzc1) grep -qx 'dwz_leaf' <<<"$names" || fail "$what: no dwz_leaf frame in $p" ;;
		dwzc2) grep -qx 'dwz_mid' <<<"$names" || fail "$what: no dwz_mid frame in $p" ;;
		dwzx2) grep -q '^reverse_order(' <<<"$names" || fail "$what: no reverse_order in $p" ;;
		dwzc3)
			grep -qx 'first_touch' <<<"$names" || fail "$what: no first_touch frame in $p"
			! grep -qx 'frame_dummy' <<<"$names" ||
				fail "$what: $p names frame_dummy: a kernel-entry PC looked up at PC - 1"
			;;
		esac
		curl -sS -o "$WORK/$p.$what.pb.gz" \
			"$URL/api/v1/pprof?query=$(selector "$PT" "$p")&from=$FROM&until=$UNTIL"
		id=ID_$p
		mode=
		case $p in dwzx*) mode=:loose ;; esac
		"$SYM_COMPARE" "$WORK/$p.$what.pb.gz" "${!id}=$WORK/$p$mode" ||
			fail "$what: $p names differ from llvm-symbolizer"
		note "$what: $p matches llvm-symbolizer ($(wc -l <<<"$names") names)"
	done
}

# ---- A: the alt file uploaded like any debug file, no upstream
start_server "$WORK/data-a" --debuginfod-urls "" --symbolize-budget 20s
ingest_all
OUT=$("$UNHEX" upload --server "$URL" "$WORK/common.debug") || fail "upload of the alt file: $OUT"
case "$OUT" in *"$ID_ALT uploaded"*) ;; *) fail "upload did not report $ID_ALT: $OUT" ;; esac
OUT=$("$UNHEX" upload --server "$URL" "$WORK"/dwz[cx][123].debug) || fail "upload: $OUT"
http GET "/api/v1/debuginfo/$ID_ALT"
expect_status 200 "$ID_ALT" "the uploaded alt file"
check_all A
stop_server

# ---- B: the alt file (and dwzx2.debug) only on a real debuginfod upstream
mkdir -p "$WORK/upstream"
cp "$WORK/common.debug" "$WORK/dwzx2.debug" "$WORK/upstream/"
start_debuginfod "$WORK/upstream" "$ID_ALT" "$ID_dwzx2"
start_server "$WORK/data-b" --debuginfod-urls "$DURL" --symbolize-budget 20s
ingest_all
OUT=$("$UNHEX" upload --server "$URL" "$WORK/dwzc1.debug" "$WORK/dwzc2.debug" "$WORK/dwzc3.debug" \
	"$WORK/dwzx1.debug") || fail "upload: $OUT"
check_all B
http GET /metrics
grep -q 'unhex_debuginfod_fetches_total{result="ok"} [1-9]' <<<"$BODY" || fail "fetch metric"
stop_server
stop_debuginfod

# ---- C: no alt file anywhere: no index is built without it (it would lack
# the names for good); the status says why (not_found, alt_not_found); once
# the alt file is uploaded, the next queries give the right names (the
# build IDs that waited for it are retried at once, nothing re-sent).
start_server "$WORK/data-c" --debuginfod-urls "" --symbolize-budget 20s
ingest_all
OUT=$("$UNHEX" upload --server "$URL" "$WORK"/dwz[cx][123].debug) || fail "upload: $OUT"
for p in $PROGS; do
	id=ID_$p
	wait_symbolized "$(selector "$PT" "$p")" "$FROM" "$UNTIL"
	grep -q "^$p.stripped+0x" <<<"$(jq -r '.flamebearer.names[]' <<<"$BODY")" ||
		fail "C: $p has names without its alt file: $(jq -c .flamebearer.names <<<"$BODY")"
	http GET "/api/v1/symbolization?query=$(selector "$PT" "$p")&from=$FROM&until=$UNTIL"
	expect_status 200 "" "C: symbolization status of $p"
	jq -e --arg id "${!id}" '.buildIds[] | select(.buildId == $id and .status == "not_found" and
		(.reason | test("alt_not_found.*'"$ID_ALT"'")))' <<<"$BODY" >/dev/null ||
		fail "C: $p does not report the missing alt file: $BODY"
done
OUT=$("$UNHEX" upload --server "$URL" "$WORK/common.debug") || fail "upload of the alt file: $OUT"
check_all C
http GET /metrics
grep -q '^unhex_symbolize_index_builds_total 5$' <<<"$BODY" ||
	fail "C: expected exactly 5 index builds: $(grep index_builds <<<"$BODY")"
stop_server
note "sym_dwz: ok"

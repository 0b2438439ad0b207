#!/usr/bin/env bash
# sym_native.sh - query-time symbolization end to end, on real programs:
# C with always_inline chains and C++ with templates, lambdas and the
# inlined standard library, built with -g -O2, split (objcopy
# --only-keep-debug, strip, --add-gnu-debuglink), the STRIPPED binaries
# profiled for real (perf, or gperftools when perf is refused), ingested;
# the C debug file uploaded with `unhex upload`, the C++ one served only by
# a real elfutils debuginfod on loopback configured as the upstream.  Then:
#   - every location of /api/v1/pprof (inline chains, files, lines) equals
#     llvm-symbolizer --inlining on the unstripped binaries (sym_compare);
#   - /pyroscope/render has no `+0x` frame for either binary (format=dot names
#     them too);
#   - a wrong build uploaded under the C build ID is refused with 409;
#   - a never-uploaded build ID reports not_found (symbolization API and render);
#   - debuginfod-find against unhex fetches a byte-identical debug file;
#   - a repeated query is answered by the symbolization memo, and replacing
#     the debug info of a build ID (other names, then the original) shows
#     at the next query; queries update the build ID's lastUsed;
#   - after a restart, queries resolve from the persisted cache and index
#     (no DWARF index build: unhex_symbolize_index_builds_total 0).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need PERF2PPROF
need SYM_COMPARE
need_cmd debuginfod "package debuginfod"
need_cmd debuginfod-find
need_cmd llvm-symbolizer

# set +e: under errexit `(exit $rc)` would end the trap before cleanup.
trap 'rc=$?; stop_debuginfod; set +e; (exit $rc); cleanup' EXIT

cat >"$WORK/inl.h" <<'EOF'
static inline __attribute__((always_inline)) unsigned leaf(unsigned x)
{
	return x * 2654435761u + (x >> 3);
}
EOF
{
	cat <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "inl.h"
static inline __attribute__((always_inline)) unsigned mid(unsigned x)
{
	unsigned s = 0;
	for (unsigned i = 0; i < 20000; i++)
		s += leaf(i ^ x);
	return s;
}
static inline __attribute__((always_inline)) unsigned top(unsigned x)
{
	return mid(x) + mid(x + 1) * 3;
}
__attribute__((noinline)) unsigned work(unsigned x)
{
	return top(x) * 3 + leaf(x);
}
__attribute__((noinline)) static unsigned helper(volatile unsigned *p)
{
	return *p + work(*p);
}
EOF
	c_timed_main 1 'acc += helper(&v);' 'v++;'
} >"$WORK/progc.c"
{
	cat <<'EOF'
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <string>
#include <vector>
#include <ctime>
namespace ns {
template <typename T> struct Acc {
	T v{};
	__attribute__((always_inline)) void add(T x) { v += x * 2 + (x >> 1); }
};
template <typename T> __attribute__((noinline)) T sum(const std::vector<T> &xs)
{
	Acc<T> a;
	for (auto x : xs)
		a.add(x);
	return a.v;
}
} // namespace ns
__attribute__((noinline)) int sorter(std::vector<int> &v)
{
	std::sort(v.begin(), v.end(), [](int a, int b) { return a % 7919 < b % 7919; });
	return v[0];
}
__attribute__((noinline)) size_t mapper(int n)
{
	std::map<std::string, int> m;
	for (int i = 0; i < n; i++)
		m[std::to_string(i)] = i;
	size_t r = 0;
	for (auto &kv : m)
		r += kv.first.size();
	return r;
}
EOF
	cxx_timed_main 'std::vector<int> v(20000);
std::function<long(int)> f = [&](int k) { return (long)mapper(k); };' \
		'(int)(i * 2654435761u + (unsigned)acc)' \
		'acc += sorter(v) + ns::sum<long>(std::vector<long>(v.begin(), v.end())) + f(2000);'
} >"$WORK/progcc.cc"
cp "$WORK/progc.c" "$WORK/orphan.c"
cc -g -O2 -Wl,--build-id -o "$WORK/progc" "$WORK/progc.c"
c++ -g -O2 -Wl,--build-id -o "$WORK/progcc" "$WORK/progcc.cc"
cc -g -O2 -Wl,--build-id -DORPHAN=1 -o "$WORK/orphan" "$WORK/orphan.c"
for p in progc progcc orphan; do
	split_debug "$WORK/$p"
	objcopy --add-gnu-debuglink="$WORK/$p.debug" "$WORK/$p.stripped"
done
ID_C=$(build_id "$WORK/progc")
ID_CC=$(build_id "$WORK/progcc")
ID_O=$(build_id "$WORK/orphan")
note "build IDs: C $ID_C, C++ $ID_CC, orphan $ID_O"
[ "$ID_C" != "$ID_O" ] || fail "orphan must be a different build"

# ---- profile the stripped binaries for real
profile() { # NAME SECONDS -> $WORK/NAME.pb.gz
	profile_to_pprof "$WORK/$1.pb.gz" "$WORK/$1.stripped" "$2"
}
profile progc 1.5
profile progcc 1.5
profile orphan 0.5

# ---- a real elfutils debuginfod serving only the C++ debug file
mkdir -p "$WORK/upstream"
cp "$WORK/progcc.debug" "$WORK/upstream/"
start_debuginfod "$WORK/upstream" "$ID_CC"

DATA="$WORK/data"
start_server "$DATA" --debuginfod-urls "$DURL" --symbolize-budget 20s

for p in progc progcc orphan; do
	"$UNHEX" ingest --server "$URL" --name "$p.cpu" "$WORK/$p.pb.gz" >/dev/null ||
		fail "ingest of $p"
done

# ---- uploads
OUT=$("$UNHEX" upload --server "$URL" "$WORK/progc.debug") || fail "upload: $OUT"
note "upload: $OUT"
case "$OUT" in *"$ID_C uploaded"*) ;; *) fail "upload did not report $ID_C: $OUT" ;; esac
OUT=$("$UNHEX" upload --server "$URL" "$WORK/progc.debug") || fail "re-upload: $OUT"
case "$OUT" in *"already uploaded"*) ;; *) fail "re-upload not skipped: $OUT" ;; esac
http POST "/api/v1/debuginfo/$ID_C" --data-binary "@$WORK/orphan.debug"
expect_status 409 "build ID mismatch" "wrong build under the C build ID"
http POST "/api/v1/debuginfo/$ID_C" --data-binary "@$WORK/progc.c"
expect_status 400 "invalid_elf" "not an ELF"
if "$UNHEX" upload --server "$URL" "$WORK/progc.c" 2>"$WORK/up.err"; then
	fail "unhex upload accepted a C source file"
fi
http GET /api/v1/debuginfo
expect_status 200 "$ID_C" "debuginfo list"

# ---- queries
FROM=$(($(date +%s) - 86400))
UNTIL=$(($(date +%s) + 3600))
PT=$(cpu_type progc)
note "profile type: $PT"
q() { # SERVICE -> urlencoded query
	selector "$PT" "$1"
}

# Wait until nothing is pending (the C++ file comes from upstream).
wait_symbolized "$(q progcc)" "$FROM" "$UNTIL"
for p in progc progcc; do
	http GET "/pyroscope/render?query=$(q $p)&from=$FROM&until=$UNTIL"
	[ "$STATUS" = 200 ] || fail "render $p: $STATUS $BODY"
	check_hex "$p" "$BODY"
	names=$(jq -r '.flamebearer.names | length' <<<"$BODY")
	note "render $p: $names names, symbolization $(jq -c '.symbolization // {}' <<<"$BODY" | head -c 300)"
done
NAMES=$(jq -r ".flamebearer.names[]" <<<"$BODY")
grep -q "^sorter(" <<<"$NAMES" || fail "no sorter frame in the C++ render"
grep -q "lambda" <<<"$NAMES" || fail "no lambda frame in the C++ render"
# format=dot draws the same names, resolved at query time.
http GET "/pyroscope/render?query=$(q progcc)&from=$FROM&until=$UNTIL&format=dot&max-nodes=1000"
[ "$STATUS" = 200 ] || fail "render progcc format=dot: $STATUS $BODY"
grep -q '^N[0-9]* \[label="sorter(' <<<"$BODY" || fail "no sorter node in the C++ call graph"

curl -sS -o "$WORK/c.pb.gz" "$URL/api/v1/pprof?query=$(q progc)&from=$FROM&until=$UNTIL"
curl -sS -o "$WORK/cc.pb.gz" "$URL/api/v1/pprof?query=$(q progcc)&from=$FROM&until=$UNTIL"
"$SYM_COMPARE" "$WORK/c.pb.gz" "$ID_C=$WORK/progc" || fail "C names differ from llvm-symbolizer"
"$SYM_COMPARE" "$WORK/cc.pb.gz" "$ID_CC=$WORK/progcc:loose" ||
	fail "C++ names differ from llvm-symbolizer"

# ---- a never-uploaded build ID
http GET "/api/v1/symbolization?query=$(q orphan)&from=$FROM&until=$UNTIL"
expect_status 200 "" "symbolization status"
jq -e --arg id "$ID_O" '.buildIds[] | select(.buildId == $id and .status == "not_found")' \
	<<<"$BODY" >/dev/null || fail "orphan build ID is not reported not_found: $BODY"
jq -e '.unsymbolizedShare > 0.5' <<<"$BODY" >/dev/null || fail "orphan share: $BODY"
http GET "/pyroscope/render?query=$(q orphan)&from=$FROM&until=$UNTIL"
jq -e --arg id "$ID_O" '.symbolization.buildIds[] | select(.buildId == $id and .status == "not_found")' \
	<<<"$BODY" >/dev/null || fail "render does not say not_found: $(jq -c .symbolization <<<"$BODY")"

# ---- unhex as a debuginfod server
GOT=$(DEBUGINFOD_URLS="$URL" DEBUGINFOD_CACHE_PATH="$WORK/client-cache" \
	debuginfod-find -v debuginfo "$ID_C" 2>"$WORK/find.err") ||
	fail "debuginfod-find failed: $(cat "$WORK/find.err")"
cmp "$GOT" "$WORK/progc.debug" || fail "debuginfod-find fetched a different file"
note "debuginfod-find fetched $GOT, identical to the upload"
http GET "/buildid/$ID_O/debuginfo"
expect_status 404 "" "unknown build ID over the debuginfod protocol"

# ---- replacing a build ID's debug info renames its frames at once
# The memo holds the C frames by now (a repeated query answered from it);
# a file with other names under the same build ID (symbols only, `work`
# renamed) must show at the next query, and the real file again after it.
http GET "/pyroscope/render?query=$(q progc)&from=$FROM&until=$UNTIL"
http GET /metrics
grep -q 'unhex_symbolize_memo_lookups_total{result="hit"} [1-9]' <<<"$BODY" ||
	fail "a repeated query did not use the memo: $(grep memo <<<"$BODY")"
objcopy --strip-debug --redefine-sym work=work_renamed "$WORK/progc" "$WORK/progc.renamed"
[ "$(build_id "$WORK/progc.renamed")" = "$ID_C" ] || fail "the renamed copy changed the build ID"
names_of() { # SERVICE -> the render's frame names, one per line
	http GET "/pyroscope/render?query=$(q "$1")&from=$FROM&until=$UNTIL"
	[ "$STATUS" = 200 ] || fail "render $1: $STATUS $BODY"
	jq -r '.flamebearer.names[]' <<<"$BODY"
}
grep -qx 'work' <<<"$(names_of progc)" || fail "no work frame before the replacement"
OUT=$("$UNHEX" upload --force --server "$URL" "$WORK/progc.renamed") || fail "upload of the renamed copy: $OUT"
NAMES=$(names_of progc)
grep -qx 'work_renamed' <<<"$NAMES" || fail "the replaced debug info is not used: $NAMES"
! grep -qx 'work' <<<"$NAMES" || fail "frames of the replaced debug info survived"
OUT=$("$UNHEX" upload --force --server "$URL" "$WORK/progc.debug") || fail "upload back: $OUT"
NAMES=$(names_of progc)
grep -qx 'work' <<<"$NAMES" || fail "no work frame after uploading the debug file back"
! grep -qx 'work_renamed' <<<"$NAMES" || fail "frames of the renamed copy survived"
curl -sS -o "$WORK/c3.pb.gz" "$URL/api/v1/pprof?query=$(q progc)&from=$FROM&until=$UNTIL"
"$SYM_COMPARE" "$WORK/c3.pb.gz" "$ID_C=$WORK/progc" || fail "C names differ after the replacements"
http GET /api/v1/debuginfo
jq -e --arg id "$ID_C" '.[] | select(.buildId == $id) | .lastUsed >= .uploaded' <<<"$BODY" \
	>/dev/null || fail "lastUsed of $ID_C not updated by queries: $BODY"

http GET /metrics
grep -q 'unhex_debuginfo_uploads_total{result="ok"} [1-9]' <<<"$BODY" || fail "upload metric"
grep -q 'unhex_debuginfod_fetches_total{result="ok"} [1-9]' <<<"$BODY" || fail "fetch metric"
grep -q 'unhex_debuginfo_build_ids{status="not_found"} [1-9]' <<<"$BODY" ||
	fail "the orphan build ID is not counted not_found: $(grep build_ids <<<"$BODY")"
grep -q 'unhex_debuginfo_build_ids{status="ok"} [2-9]' <<<"$BODY" || fail "ok build IDs metric"
grep -q 'unhex_symbolize_unresolved_locations_total{status="not_found"} [1-9]' <<<"$BODY" ||
	fail "hex frames of the orphan are not counted: $(grep unresolved <<<"$BODY")"

# ---- restart: names come from the persisted cache and index
stop_server
start_server "$DATA" --debuginfod-urls "$DURL"
for p in progc progcc; do
	http GET "/pyroscope/render?query=$(q $p)&from=$FROM&until=$UNTIL"
	check_hex "$p" "$BODY"
done
curl -sS -o "$WORK/c2.pb.gz" "$URL/api/v1/pprof?query=$(q progc)&from=$FROM&until=$UNTIL"
"$SYM_COMPARE" "$WORK/c2.pb.gz" "$ID_C=$WORK/progc" || fail "C names differ after restart"
http GET /metrics
grep -q '^unhex_symbolize_index_builds_total 0$' <<<"$BODY" ||
	fail "an index was rebuilt after the restart: $(grep index_builds <<<"$BODY")"
grep -q 'unhex_symbolize_cache_lookups_total{result="hit"} [1-9]' <<<"$BODY" ||
	fail "no persisted cache hits after the restart"
stop_server
stop_debuginfod
note "sym_native: ok"

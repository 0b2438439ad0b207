#!/usr/bin/env bash
# sym_doctor.sh - unwinding told apart from symbolization (docs/symbolization.md,
# "Unwinding or symbolization").  One real C program built twice, with and
# without frame pointers, both stripped and profiled by perf with
# frame-pointer unwinding (--call-graph fp).  Without frame pointers the
# stacks are cut short: their roots are the program's own functions or
# addresses read from junk, never _start or __libc_start_main.
#
# With both .debug files uploaded (so the program's frames are named):
#   - /api/v1/symbolization says "truncated" for nofp.stripped in its
#     "unwinding" array, and nothing of the kind for withfp.stripped;
#   - `unhex doctor --query` names unwinding as the broken stage for nofp,
#     and symbolization (libc's debug info is not there) for withfp;
#   - `unhex doctor FILE` reaches the same verdicts from the pprof files.
# Exit 77 (CTest "skipped") when perf cannot record here.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need PERF2PPROF
if ! perf record -q -o "$WORK/probe.data" -- true >/dev/null 2>&1; then
	note "perf cannot record here: skipped"
	trap - EXIT
	rm -rf "$WORK"
	exit 77
fi

cat >"$WORK/deep.c" <<'CEOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
__attribute__((noinline)) static unsigned leafwork(unsigned x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 2654435761u + (unsigned)i;
	return x;
}
__attribute__((noinline)) static unsigned mid(unsigned x)
{
	unsigned s = 0;
	for (int i = 0; i < 50; i++)
		s += leafwork(x + (unsigned)i);
	return s;
}
__attribute__((noinline)) static unsigned top(unsigned x)
{
	return mid(x) ^ mid(x + 1);
}
CEOF
c_timed_main 1 'acc += top(acc + v);' >>"$WORK/deep.c"

for p in nofp withfp; do
	flags=-fomit-frame-pointer
	[ $p = withfp ] && flags=-fno-omit-frame-pointer
	cc -g -O2 $flags -o "$WORK/$p" "$WORK/deep.c"
	split_debug "$WORK/$p"
	perf record -q -F 999 --call-graph fp -o "$WORK/$p.data" "$WORK/$p.stripped" 1.5 \
		>/dev/null 2>"$WORK/perf.err" || fail "perf record: $(head -c 300 "$WORK/perf.err")"
	"$PERF2PPROF" -i "$WORK/$p.data" -o "$WORK/$p.pb.gz" --quiet
done

# doctor ARGS... -> $DOC (its output) and $DRC (its exit status)
doctor() {
	DRC=0
	DOC=$("$UNHEX" doctor "$@") || DRC=$?
}

# From the files alone: the verdict needs no server.
doctor "$WORK/nofp.pb.gz"
[ $DRC = 3 ] && grep -q '^verdict: unwinding is broken' <<<"$DOC" ||
	fail "doctor nofp.pb.gz (exit $DRC) does not blame unwinding: $DOC"
doctor "$WORK/withfp.pb.gz"
[ $DRC = 0 ] || fail "doctor withfp.pb.gz (exit $DRC) finds a problem without a server: $DOC"
note "doctor FILE: nofp -> unwinding, withfp -> nothing wrong in the file itself"

start_server "$WORK/data" --debuginfod-urls "" --symbolize-budget 20s
for p in nofp withfp; do
	"$UNHEX" ingest --server "$URL" --name "$p.cpu" "$WORK/$p.pb.gz" >/dev/null ||
		fail "ingest of $p"
	"$UNHEX" upload --server "$URL" "$WORK/$p.debug" >/dev/null || fail "upload of $p.debug"
done
FROM=$(($(date +%s) - 86400))
UNTIL=$(($(date +%s) + 3600))
SEL_nofp="process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"nofp\"}"
SEL_withfp="process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"withfp\"}"

for p in nofp withfp; do
	Q=$(selector "$(cpu_type "$p")" "$p")
	wait_symbolized "$Q" "$FROM" "$UNTIL"
	http GET "/api/v1/symbolization?query=$Q&from=$FROM&until=$UNTIL"
	expect_status 200 "" "symbolization of $p"
	verdict=$(jq -r --arg b "$p.stripped" '.unwinding[] | select(.binary == $b) | .verdict' <<<"$BODY")
	status=$(jq -r --arg b "$p.stripped" '.buildIds[] | select(.binary == $b) | .status' <<<"$BODY")
	[ "$status" = ok ] || fail "$p: the program's debug info is $status: $BODY"
	case $p in
	nofp)
		[ "$verdict" = truncated ] || fail "nofp: unwinding verdict '$verdict': $BODY"
		jq -e '.unwinding[] | select(.binary == "nofp.stripped") | .fix | test("frame-pointer")' \
			<<<"$BODY" >/dev/null || fail "nofp: the fix does not name frame pointers: $BODY"
		;;
	withfp)
		[ "$verdict" = ok ] || [ -z "$verdict" ] || fail "withfp: unwinding verdict '$verdict': $BODY"
		# The program's own stacks and those of any binary with a real share of
		# the samples; a sample or two that perf took while ld.so was still
		# loading the program (stacks truncated there, in any build) do not count.
		jq -e '(.buildIds | map({key: .buildId, value: .samplesShare}) | from_entries) as $sh |
			[.unwinding[] | select(.verdict != "ok" and
				(.binary == "withfp.stripped" or ($sh[.buildId] // 1) >= 0.01))] | length == 0' \
			<<<"$BODY" >/dev/null || fail "withfp: an unwinding problem is reported: $BODY"
		;;
	esac
	note "$p: program debug info ok, unwinding verdict ${verdict:-none}"
done
# The render of nofp carries the same verdict, without asking for it.
http GET "/pyroscope/render?query=$(selector "$(cpu_type nofp)" nofp)&from=$FROM&until=$UNTIL"
jq -e '.symbolization.unwinding[] | select(.binary == "nofp.stripped" and .verdict == "truncated")' \
	<<<"$BODY" >/dev/null || fail "the render of nofp lacks the unwinding verdict: $(jq -c .symbolization <<<"$BODY")"

doctor --server "$URL" --query "$SEL_nofp" --from "$FROM" --until "$UNTIL"
[ $DRC = 3 ] && grep -q '^verdict: unwinding is broken' <<<"$DOC" ||
	fail "doctor --query nofp (exit $DRC) does not blame unwinding: $DOC"
grep -q 'symbols *nofp.stripped .*: ok' <<<"$DOC" || fail "doctor --query nofp: program symbols not ok: $DOC"
doctor --server "$URL" --query "$SEL_withfp" --from "$FROM" --until "$UNTIL"
if grep -q '^ *unwinding .*truncated' <<<"$DOC" || ! grep -q '^verdict: symbolization is broken' <<<"$DOC"; then
	fail "doctor --query withfp (exit $DRC) should blame libc's missing symbols only: $DOC"
fi
doctor --server "$URL" "$WORK/withfp.pb.gz"
[ $DRC = 3 ] && grep -q 'libc.*' <<<"$DOC" && grep -q '^verdict: symbolization is broken' <<<"$DOC" ||
	fail "doctor --server withfp.pb.gz (exit $DRC) should find libc's debug info missing: $DOC"
note "doctor: nofp -> unwinding, withfp -> symbolization (libc)"
stop_server
note "sym_doctor: ok"

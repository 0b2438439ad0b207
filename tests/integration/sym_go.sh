#!/usr/bin/env bash
# sym_go.sh - the roots of Go stacks, end to end (docs/symbolization.md,
# "Callers: the return-address rule").  A real Go program, built with a
# GNU build ID (-ldflags -B), split and stripped, runs goroutines that
# spin for 3 s of CPU time; the stripped binary is profiled three ways:
#
#   fp      perf --call-graph fp: raw return addresses (goexit + 1 at the
#           root of every goroutine)
#   fpcall  the same recording with every caller moved into its call
#           instruction (perf2pprof --callers-in-call), as pprof producers
#           that follow Location.address's convention send them: the
#           goroutine's root becomes goexit's first byte
#   goruntime  the Go runtime's own CPU profile (runtime/pprof), with its
#           names removed (pprofstrip: has_functions false)
#
# With the .debug file uploaded, every goroutine stack of fp and fpcall
# must end in runtime.goexit (not app+0x...), and goruntime's stacks must
# name exactly the functions the Go runtime named itself.
# Exit 77 (CTest "skipped") without a Go toolchain or a usable perf.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need_go_perf

go_spin_program >"$WORK/gospin.go" <<'GOEOF'
//go:noinline
func spin(x uint64) uint64 {
	for i := 0; i < 200000; i++ {
		x = x*6364136223846793005 + 1442695040888963407
	}
	return x
}
GOEOF
note "Go: $("$GO" version)"
ID=$(go_build_with_id "$WORK/gospin.go" "$WORK/gospin")
split_debug "$WORK/gospin"
[ "$(build_id "$WORK/gospin.stripped")" = "$ID" ] || fail "strip changed the build ID"
! readelf -SW "$WORK/gospin.stripped" | grep -q '\.debug_info\|\.symtab' ||
	fail "gospin.stripped still has symbols"

# ---- three profiles of the stripped binary
go_profiles "$WORK/gospin.stripped"

start_server "$WORK/data" --debuginfod-urls "" --symbolize-budget 20s
ingest_go_profiles go
FROM=$(($(date +%s) - 86400))
UNTIL=$(($(date +%s) + 3600))

# One tenant, one binary, a profile with names and one without: the store
# keeps one mapping (has_functions as first seen, here true), and the raw
# frames must still be symbolized, with a reason while they cannot be.
"$UNHEX" ingest --server "$URL" --tenant mixed --name gomixed.cpu \
	"$WORK/goruntime.named.pprof" >/dev/null || fail "ingest of the named profile"
"$UNHEX" ingest --server "$URL" --tenant mixed --name gomixed.cpu "$WORK/goruntime.pb.gz" \
	>/dev/null || fail "ingest of the raw profile"
http GET "/pyroscope/label-values?label=__profile_type__" -H 'X-Scope-OrgID: mixed'
MQ=$(selector "$(jq -r '.[]' <<<"$BODY" | grep -m1 ':cpu:nanoseconds')" gomixed)
http GET "/api/v1/symbolization?query=$MQ&from=$FROM&until=$UNTIL" -H 'X-Scope-OrgID: mixed'
expect_status 200 "" "symbolization of the mixed tenant before the upload"
jq -e --arg id "$ID" '.buildIds[] | select(.buildId == $id and .status == "not_found" and .samplesShare > 0)' \
	<<<"$BODY" >/dev/null || fail "mixed: the raw frames' reason is missing: $BODY"

OUT=$("$UNHEX" upload --server "$URL" "$WORK/gospin.debug") || fail "upload: $OUT"
wait_symbolized "$MQ" "$FROM" "$UNTIL" -H 'X-Scope-OrgID: mixed'
if jq -r '.flamebearer.names[]' <<<"$BODY" | grep -q 'gospin\.stripped+0x'; then
	fail "mixed: raw frames stay hex next to named ones: $(jq -c .flamebearer.names <<<"$BODY")"
fi
note "mixed: named and raw profiles of one binary, the raw frames named"

for p in fp fpcall goruntime; do
	export_traces "go$p" "$WORK/$p"
	# go tool pprof shows a location without a name as [binary].  The
	# frame below a signal handler (runtime.sigtramp) returns to the
	# restorer's first byte, which no real producer moves (libdw marks
	# signal frames; Go's runtime never moves an entry PC): the blanket
	# move of --callers-in-call puts it in the padding before the
	# restorer, where nothing can be named, so fpcall skips those stacks:
	# the unnamed frame right below runtime.sigtramp, or below
	# runtime.sigtrampgo when perf's frame-pointer walk did not record
	# sigtramp (seen once in CI, in 1 ms of a 6 s profile).
	skip_re='^$'
	[ $p = fpcall ] && skip_re='runtime\.sigtramp(go)?;\[gospin\.stripped\];'
	if grep -Ev "$skip_re" "$WORK/$p.traces" | grep -q 'gospin\.stripped'; then
		fail "$p: unnamed frames of gospin remain: $(grep 'gospin' "$WORK/$p.traces" | head -5)"
	fi
done

# Every goroutine stack that perf unwound through main.worker ends in
# runtime.goexit, in both address forms.
for p in fp fpcall; do
	n=$(grep -c 'main\.spin' "$WORK/$p.traces" || true)
	[ "$n" -gt 0 ] || fail "$p: no stack through main.spin: $(head -5 "$WORK/$p.traces")"
	bad=$(grep 'main\.spin' "$WORK/$p.traces" | grep -v ';runtime\.goexit$' || true)
	[ -z "$bad" ] || fail "$p: goroutine stacks whose root is not runtime.goexit: $(head -3 <<<"$bad")"
	note "$p: $n goroutine stacks, every root runtime.goexit"
done

# The Go runtime's profile, named by unhex, names what the runtime named.
pprof_traces "$WORK/goruntime.named.pprof" | awk -F'\t' '{print $2}' | sort -u >"$WORK/want"
awk -F'\t' '{print $2}' "$WORK/goruntime.traces" | sort -u >"$WORK/got"
diff "$WORK/want" "$WORK/got" >"$WORK/diff" ||
	fail "goruntime: stacks differ from the Go runtime's names: $(head -20 "$WORK/diff")"
note "goruntime: $(wc -l <"$WORK/got") distinct stacks, named as the Go runtime named them"
stop_server
note "sym_go: ok"

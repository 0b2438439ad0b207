#!/usr/bin/env bash
# sym_gopcln.sh - a Go executable with no debug file at all names its
# frames from its own .gopclntab (docs/symbolization.md, "Go without debug
# info").  A real Go program, built with a GNU build ID and with
# -ldflags="-s -w" (no DWARF, no symbol table), spins in two goroutines
# through inlined calls for a bounded amount of its own CPU time, and is
# profiled three ways, as tests/integration/sym_go.sh does:
#
#   fp         perf --call-graph fp (raw return addresses)
#   fpcall     the same with callers moved into their call instruction
#   goruntime  the Go runtime's CPU profile with its names removed
#
# Only the executable is uploaded (--type executable).  Then: the build
# ID's record says its frames are named from .gopclntab; goruntime's stacks,
# inline frames included, are exactly those the Go runtime named itself;
# every goroutine stack of fp and fpcall ends in runtime.goexit; at least
# 99.5% of each profile's weight is on stacks whose every frame is named,
# with the inlined functions of the hot path among them.  A second server
# fetches the same executable from a real debuginfod (which serves it as
# an `executable` only) and names it the same.
# Exit 77 (CTest "skipped") without a Go toolchain or a usable perf.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need_go_perf
trap 'stop_debuginfod; cleanup' EXIT

# mix and fold are small enough to be inlined into spin (and mix into fold):
# perf samples land in their code, which only the inline tree names.
go_spin_program >"$WORK/gopcln.go" <<'GOEOF'
func mix(x uint64) uint64 { return x*6364136223846793005 + 1442695040888963407 }

func fold(x uint64) uint64 { return mix(x) ^ mix(x>>7) }

//go:noinline
func spin(x uint64) uint64 {
	for i := 0; i < 200000; i++ {
		x = fold(x)
	}
	return x
}
GOEOF
note "Go: $("$GO" version)"
ID=$(go_build_with_id "$WORK/gopcln.go" "$WORK/gopcln" "-s -w")
! readelf -SW "$WORK/gopcln" | grep -q '\.debug_\|\.symtab' || fail "gopcln still has DWARF or symbols"
readelf -SW "$WORK/gopcln" | grep -q '\.gopclntab' || fail "gopcln has no .gopclntab"

# ---- three profiles of the stripped binary (3 s of CPU time over 2 goroutines)
go_profiles "$WORK/gopcln"

start_server "$WORK/data" --debuginfod-urls "" --symbolize-budget 20s
ingest_go_profiles gopcln
FROM=$(($(date +%s) - 86400))
UNTIL=$(($(date +%s) + 3600))

OUT=$("$UNHEX" upload --server "$URL" --type executable "$WORK/gopcln") || fail "upload: $OUT"

# check_profiles PREFIX: the three profiles of $URL, named from the table.
check_profiles() {
	local p total named share
	for p in fp fpcall goruntime; do
		export_traces "gopcln$p" "$WORK/$1$p"
		# Weight on stacks with an unnamed frame of the program (go tool
		# pprof shows those as [gopcln]).  fpcall's frames under a signal
		# handler return to the restorer's first byte, which the blanket
		# move of --callers-in-call puts before it (sym_go.sh says why).
		read -r total named < <(awk -F'\t' -v call=$([ $p = fpcall ] && echo 1 || echo 0) '
			{ v = $1 + 0
			  if ($1 ~ /ns$/) v /= 1e9; else if ($1 ~ /(us|µs)$/) v /= 1e6
			  else if ($1 ~ /ms$/) v /= 1e3; else if ($1 ~ /min$/) v *= 60
			  else if ($1 ~ /h$/) v *= 3600
			  t += v
			  if ($2 !~ /gopcln/ || (call && $2 ~ /runtime\.sigtramp;/)) n += v }
			END { printf "%.6f %.6f\n", t, n }' "$WORK/$1$p.traces")
		share=$(awk -v t="$total" -v n="$named" 'BEGIN { printf "%.4f", (t > 0 ? n / t : 0) }')
		awk -v s="$share" 'BEGIN { exit !(s >= 0.995) }' ||
			fail "$1$p: only $share of the weight is on fully named stacks: $(grep gopcln "$WORK/$1$p.traces" | head -3)"
		note "$1$p: $share of the weight on stacks whose every frame is named"
	done
	# The inlined calls of the hot path are frames of their own.  (perf's
	# frame-pointer walk skips the caller of a leaf that keeps no frame,
	# main.worker here: that is the unwinder's doing, as in sym_go.sh.)
	for p in fp fpcall; do
		grep -q 'main\.mix;main\.fold;main\.spin;.*runtime\.goexit$' "$WORK/$1$p.traces" ||
			fail "$1$p: no stack names the inlined main.mix and main.fold: $(head -3 "$WORK/$1$p.traces")"
		bad=$(grep 'main\.spin' "$WORK/$1$p.traces" | grep -v ';runtime\.goexit$' || true)
		[ -z "$bad" ] || fail "$1$p: goroutine stacks whose root is not runtime.goexit: $(head -3 <<<"$bad")"
	done
	# What the Go runtime named, frame by frame, inline frames included.
	awk -F'\t' '{print $2}' "$WORK/$1goruntime.traces" | sort -u >"$WORK/$1got"
	diff "$WORK/want" "$WORK/$1got" >"$WORK/$1diff" ||
		fail "$1goruntime: stacks differ from the Go runtime's names: $(head -20 "$WORK/$1diff")"
	note "$1goruntime: $(wc -l <"$WORK/$1got") distinct stacks, named as the Go runtime named them"
}

pprof_traces "$WORK/goruntime.named.pprof" | awk -F'\t' '{print $2}' | sort -u >"$WORK/want"
grep -q 'main\.mix;main\.fold;main\.spin' "$WORK/want" ||
	fail "the Go runtime's own profile shows no inlined main.mix: $(head -3 "$WORK/want")"
check_profiles ""
http GET "/api/v1/debuginfo/$ID"
expect_status 200 "" "record of $ID"
jq -e '.status == "ok" and (.reason | startswith("named from .gopclntab (Go 1.18-1.19 layout)"))' \
	<<<"$BODY" >/dev/null || fail "the record does not say .gopclntab named the frames: $BODY"
stop_server

# ---- the same executable from a debuginfod upstream, which has no debug info for it
mkdir -p "$WORK/upstream"
cp "$WORK/gopcln" "$WORK/upstream/"
DEBUGINFOD_WAIT=executable start_debuginfod "$WORK/upstream" "$ID"
code=$(curl -s -o /dev/null -w '%{http_code}' "$DURL/buildid/$ID/debuginfo" || true)
[ "$code" = 404 ] || fail "debuginfod serves debuginfo for a binary without DWARF (HTTP $code)"
start_server "$WORK/data2" --debuginfod-urls "$DURL" --symbolize-budget 30s
ingest_go_profiles gopcln
check_profiles "d."
http GET "/api/v1/debuginfo/$ID"
jq -e '.source == "debuginfod" and .status == "ok"' <<<"$BODY" >/dev/null ||
	fail "the fetched executable's record: $BODY"
stop_server
note "sym_gopcln: ok"

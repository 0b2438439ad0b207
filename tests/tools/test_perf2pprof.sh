#!/usr/bin/env bash
# test_perf2pprof.sh - round trip of perf2pprof and pprofinfo against
# independent readers: a -g -O2 program is profiled by `perf record
# --call-graph dwarf` and by gperftools; the converted pprof must be read by
# `go tool pprof`, symbolize (through our mappings and runtime addresses) to
# the program's own functions, and agree with perf's and gperftools' totals.
# Usage: test_perf2pprof.sh PERF2PPROF PPROFINFO.  Exit 77 = skipped.
set -euo pipefail

P2P=$1
INFO=$2
T=$(mktemp -d /tmp/unhex-tools.XXXXXX)
trap '[ -n "${KEEP:-}" ] || rm -rf "$T"' EXIT
export HOME=$T PPROF_TMPDIR=$T/pprof PPROF_BINARY_PATH=$T/none

fail() { echo "FAIL: $*" >&2; exit 1; }
json_num() { # json_num KEY FILE: first numeric value of "KEY":
	grep -o "\"$1\":[0-9-]*" "$2" | head -1 | cut -d: -f2
}

command -v perf >/dev/null || { echo "SKIP: no perf"; exit 77; }
command -v go >/dev/null || { echo "SKIP: no go"; exit 77; }

cat >"$T/hot.c" <<'C'
#include <stdio.h>
#include <stdlib.h>
__attribute__((noinline)) static double spin_leaf(double x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 1.0000001 + 0.5;
	return x;
}
__attribute__((noinline)) static double spin_mid(double x) { return spin_leaf(x) + spin_leaf(x + 1); }
__attribute__((noinline)) static double spin_top(double x, int n)
{
	double s = 0;
	for (int i = 0; i < n; i++)
		s += spin_mid(x + i);
	return s;
}
int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100000;
	printf("%f\n", spin_top(n * 0.5, n));
	return 0;
}
C
gcc -g -O2 -o "$T/hot" "$T/hot.c"

# ---- perf ---------------------------------------------------------------
if ! perf record -q -F 999 -g --call-graph dwarf -o "$T/perf.data" "$T/hot" 300000 \
	>/dev/null 2>"$T/record.err"; then
	cat "$T/record.err"
	echo "SKIP: perf record is not allowed here"
	exit 77
fi
"$P2P" -i "$T/perf.data" -o "$T/perf.pb.gz"
"$P2P" -i "$T/perf.data" -o "$T/perf.pb" --raw --quiet
gunzip -c "$T/perf.pb.gz" | cmp - "$T/perf.pb" || fail "--raw differs from the gzipped output"

"$INFO" --json "$T/perf.pb.gz" >"$T/info.json"
cat "$T/info.json"
n_events=$(perf script -i "$T/perf.data" -F period -G 2>/dev/null | grep -c '[0-9]')
sum_period=$(perf script -i "$T/perf.data" -F period -G 2>/dev/null | awk '{s += $1} END {print s}')
got_count=$(grep -o '"type":"samples","unit":"count","nonzero_samples":[0-9]*,"sum":[0-9]*' "$T/info.json" | sed 's/.*"sum"://')
got_cpu=$(grep -o '"type":"cpu","unit":"nanoseconds","nonzero_samples":[0-9]*,"sum":[0-9]*' "$T/info.json" | sed 's/.*"sum"://')
[ "$got_count" = "$n_events" ] || fail "samples/count sum $got_count, perf has $n_events samples"
[ "$got_cpu" = "$sum_period" ] || fail "cpu/nanoseconds sum $got_cpu, perf periods sum to $sum_period"
[ "$(json_num functions "$T/info.json")" = 0 ] || fail "functions present in a raw-address profile"
[ "$(json_num time_nanos "$T/info.json")" -gt 1000000000000000000 ] || fail "time_nanos not set"

go tool pprof -raw "$T/perf.pb.gz" >"$T/raw.txt" 2>"$T/raw.err" || { cat "$T/raw.err"; fail "pprof -raw"; }
grep -q '^PeriodType: cpu nanoseconds' "$T/raw.txt" || fail "period type"
grep -q 'thread:\[hot\]' "$T/raw.txt" || fail "no thread label"
bid=$(readelf -n "$T/hot" | awk '/Build ID/ {print $3}')
# The mapping of hot: runtime start/limit, file offset of its r-xp segment, build ID.
perf script -i "$T/perf.data" --show-mmap-events >"$T/script.txt" 2>/dev/null
start=$(awk -v f="$T/hot" '/PERF_RECORD_MMAP2/ && $NF == f && $(NF-1) ~ /x/ {print; exit}' "$T/script.txt" |
	sed 's/.*\[0x\([0-9a-f]*\)(.*/\1/')
grep -q "^[0-9]*: 0x$start/0x[0-9a-f]*/0x[0-9a-f]* $T/hot $bid" "$T/raw.txt" ||
	fail "mapping of hot (start 0x$start, build ID $bid) not in pprof -raw"

go tool pprof -symbolize=local -top "$T/perf.pb.gz" >"$T/top.txt" 2>&1 || { cat "$T/top.txt"; fail "pprof -top"; }
cat "$T/top.txt"
flat_fn=$(awk '/flat%/ {getline; print $NF; exit}' "$T/top.txt")
[ "$flat_fn" = spin_leaf ] || fail "hottest function is '$flat_fn', want spin_leaf"
grep -q ' spin_mid$' "$T/top.txt" && grep -q ' spin_top$' "$T/top.txt" || fail "callers missing"

# Identical (stack, thread) samples are aggregated: fewer samples than events.
[ "$(json_num samples "$T/info.json")" -lt "$n_events" ] || fail "samples not aggregated"

# ---- gperftools -----------------------------------------------------------
if [ -e /usr/lib/x86_64-linux-gnu/libprofiler.so ] || ldconfig -p | grep -q libprofiler.so; then
	gcc -g -O2 -o "$T/hot_gp" "$T/hot.c" -Wl,--no-as-needed -lprofiler
	CPUPROFILE="$T/gp.prof" CPUPROFILE_FREQUENCY=500 "$T/hot_gp" 300000 >/dev/null 2>&1
	"$P2P" --gperftools "$T/gp.prof" -o "$T/gp.pb.gz"
	"$INFO" --json "$T/gp.pb.gz" >"$T/gp.json"
	cat "$T/gp.json"
	# go tool pprof reads the legacy format itself: both must print the same table.
	go tool pprof -symbolize=local -top "$T/hot_gp" "$T/gp.prof" 2>/dev/null | sed -n '/flat%/,$p' >"$T/gp_ref.txt"
	go tool pprof -symbolize=local -top "$T/gp.pb.gz" 2>/dev/null | sed -n '/flat%/,$p' >"$T/gp_ours.txt"
	diff "$T/gp_ref.txt" "$T/gp_ours.txt" || fail "gperftools conversion differs from pprof's own reading"
	grep -q ' spin_leaf$' "$T/gp_ours.txt" || fail "gperftools: spin_leaf missing"
	gbid=$(readelf -n "$T/hot_gp" | awk '/Build ID/ {print $3}')
	go tool pprof -raw "$T/gp.pb.gz" 2>/dev/null | grep -q " $T/hot_gp $gbid" ||
		fail "gperftools: build ID $gbid not read from the ELF note"
else
	echo "note: libprofiler not installed, gperftools part skipped"
fi

# ---- bad input gets an error, not a crash ----------------------------------
head -c 100 "$T/perf.pb" >"$T/trunc.pb"
if "$INFO" "$T/trunc.pb" 2>"$T/trunc.err"; then fail "pprofinfo accepted a truncated pprof"; fi
grep -q invalid "$T/trunc.err" || fail "no clear error for a truncated pprof: $(cat "$T/trunc.err")"
head -c 3000 /dev/urandom >"$T/junk.prof"
if "$P2P" --gperftools "$T/junk.prof" -o "$T/junk.pb.gz" 2>"$T/junk.err"; then
	fail "perf2pprof accepted a random gperftools file"
fi
grep -q invalid "$T/junk.err" || fail "no clear error for a bad gperftools file"
echo "PASS"

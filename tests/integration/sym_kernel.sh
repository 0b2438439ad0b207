#!/usr/bin/env bash
# sym_kernel.sh - kernel frames named from the kernel's symbol map
# (docs/symbolization.md, "Kernel frames").  A real C program that spends
# its time in write(2) and getppid(2) is recorded by perf with kernel call
# chains, converted by perf2pprof (the [kernel.kallsyms] mapping carries the
# running kernel's build ID, from perf buildid-list) and ingested.  Before
# any upload the kernel's build ID says "kernel symbols not uploaded"; a
# corrupt map is refused with the line it breaks at; then /proc/kallsyms,
# every address slid by 256 MiB (another boot's KASLR), is uploaded for that
# build ID, and every kernel frame must carry the name perf script gives
# it, with the same leaf weights.
# Exit 77 (CTest "skipped") when perf cannot record kernel call chains here
# or /proc/kallsyms hides its addresses.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need PERF2PPROF

skip() {
	note "$*: skipped"
	exit 77
}

cat >"$WORK/sys.c" <<'CEOF'
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static int fd;
__attribute__((noinline)) static unsigned churn(unsigned k)
{
	char b[256] = { 0 };
	unsigned s = 0;
	for (unsigned i = 0; i < k; i++)
		s += (unsigned)write(fd, b, sizeof(b)) + (unsigned)getppid();
	return s;
}
CEOF
c_timed_main 1 'if (!fd) fd = open("/dev/null", O_WRONLY); acc += churn(2000 + (v & 1));' \
	>>"$WORK/sys.c"
cc -g -O2 -fno-omit-frame-pointer -o "$WORK/sys" "$WORK/sys.c"

perf record -q -F 999 -g -o "$WORK/sys.perf.data" "$WORK/sys" 1.5 >/dev/null \
	2>"$WORK/perf.err" || skip "perf cannot record here ($(head -c 200 "$WORK/perf.err"))"
KID=$(perf buildid-list -i "$WORK/sys.perf.data" 2>/dev/null | awk '$2=="[kernel.kallsyms]"{print $1; exit}')
[ -n "$KID" ] || skip "perf reports no kernel build ID"
# "PERIOD NAME" of every sample's leaf kernel frame, and every kernel name.
perf script -i "$WORK/sys.perf.data" -F period,ip,sym,dso 2>/dev/null | awk '
	/^ *[0-9]+ *$/ { period = $1; leaf = 1; next }
	/^\t/ { if ($NF == "([kernel.kallsyms])") { if (leaf) print period, $2 > "/dev/stderr"; print $2 } leaf = 0 }
' 2>"$WORK/perf.leaves" | sort -u >"$WORK/perf.names"
[ -s "$WORK/perf.leaves" ] || skip "perf recorded no kernel frames (perf_event_paranoid $(cat /proc/sys/kernel/perf_event_paranoid))"
grep -qv '^\[unknown\]$' "$WORK/perf.names" || skip "perf names no kernel frame"
awk '$3=="_text"{found=1; if ($1 ~ /^0+$/) exit 1} END{exit !found}' /proc/kallsyms ||
	skip "/proc/kallsyms hides its addresses here"
note "kernel $KID: $(wc -l <"$WORK/perf.leaves") samples with kernel leaves, $(wc -l <"$WORK/perf.names") kernel names"

"$PERF2PPROF" -i "$WORK/sys.perf.data" -o "$WORK/sys.pb.gz"
start_server "$WORK/data" --debuginfod-urls "" --symbolize-budget 20s
FROM=$(($(date +%s) - 86400))
UNTIL=$(($(date +%s) + 3600))
"$UNHEX" ingest --server "$URL" --name "sys.cpu" "$WORK/sys.pb.gz" >/dev/null || fail "ingest"
Q=$(selector "$(cpu_type sys)" sys)

# Before the upload: the kernel's frames are hex, and its status says why.
wait_symbolized "$Q" "$FROM" "$UNTIL"
ST=$(jq -c --arg id "$KID" '.symbolization.buildIds[] | select(.buildId == $id)' <<<"$BODY")
[ "$(jq -r .status <<<"$ST")" = not_found ] || fail "kernel status before upload: $ST"
grep -q "^kernel symbols not uploaded: unhex upload --kallsyms" <<<"$(jq -r .reason <<<"$ST")" ||
	fail "kernel reason before upload: $ST"
grep -q '^\[kernel\.kallsyms\]+0x' <<<"$(jq -r '.flamebearer.names[]' <<<"$BODY")" ||
	fail "no hex kernel frame before upload: $(jq -c .flamebearer.names <<<"$BODY" | head -c 400)"
note "before upload: $(jq -r .reason <<<"$ST" | head -c 120)"
# unhex doctor gives the kernel's fix, not the .debug upload of programs.
DOC=$("$UNHEX" doctor --server "$URL" --query "$(cpu_type sys){service_name=\"sys\"}" \
	--from "$FROM" --until "$UNTIL") || true
grep -q "fix: unhex upload --kallsyms" <<<"$(grep -A1 "symbols *\[kernel\.kallsyms\] .*not_found" <<<"$DOC")" ||
	fail "unhex doctor does not give the kernel's fix: $DOC"

# An agent that does not know the kernel's build ID: perf2pprof through a
# perf whose buildid-list leaves the kernel out.
cat >"$WORK/perf-nokid" <<'SEOF'
#!/bin/sh
if [ "$1" = buildid-list ]; then
	perf "$@" | grep -v '\[kernel\.kallsyms\]'
else
	exec perf "$@"
fi
SEOF
chmod +x "$WORK/perf-nokid"
"$PERF2PPROF" --perf "$WORK/perf-nokid" -i "$WORK/sys.perf.data" -o "$WORK/nokid.pb.gz"
"$UNHEX" ingest --server "$URL" --name "nokid.cpu" "$WORK/nokid.pb.gz" >/dev/null || fail "ingest nokid"
wait_symbolized "$(selector "$(cpu_type nokid)" nokid)" "$FROM" "$UNTIL"
ST=$(jq -c '.symbolization.buildIds[] | select(.binary == "[kernel.kallsyms]")' <<<"$BODY")
[ "$(jq -r '.status,.buildId' <<<"$ST" | tr '\n' ' ')" = "no_build_id  " ] ||
	fail "kernel mapping without a build ID: $ST"
grep -q "^no build ID for the kernel mapping" <<<"$(jq -r .reason <<<"$ST")" ||
	fail "kernel mapping without a build ID: $ST"
note "no kernel build ID: $(jq -r .reason <<<"$ST" | head -c 100)"

# A corrupt map is refused with the line that breaks it, and stores nothing.
printf 'ffffffff81000000 T _text\nffffffff81000040 T ok\nffffffff8100 Tbroken\n' >"$WORK/bad.map"
http POST "/api/v1/debuginfo/$KID?type=kallsyms" --data-binary "@$WORK/bad.map"
expect_status 400 "line 3" "corrupt kernel symbol map"
if "$UNHEX" upload --server "$URL" --kallsyms "$WORK/bad.map" --build-id "$KID" \
	2>"$WORK/up.err" >/dev/null; then fail "unhex upload accepted a corrupt map"; fi
grep -q "line 3" "$WORK/up.err" || fail "unhex upload: $(cat "$WORK/up.err")"
http GET "/api/v1/debuginfo/$KID"
[ "$(jq -r .kallsyms <<<"$BODY")" != true ] || fail "a refused map was stored: $BODY"
# A map never renames a program's frames: not for a build ID with an ELF file.
"$UNHEX" upload --server "$URL" "$WORK/sys" >/dev/null || fail "upload of sys"
SID=$(build_id "$WORK/sys")
http POST "/api/v1/debuginfo/$SID?type=kallsyms" --data-binary @/proc/kallsyms
expect_status 409 "kernel symbol map is for the build ID of a kernel" "a map for a program's build ID"

# Another boot's map: every address 256 MiB higher.  Only offsets from
# _text are kept, so it must name this boot's frames all the same.
python3 -c '
import sys
for line in open("/proc/kallsyms"):
    a, rest = line.split(" ", 1)
    v = int(a, 16)
    sys.stdout.write("%016x %s" % (v + 0x10000000 if v else 0, rest))
' >"$WORK/slid.map"
"$UNHEX" upload --server "$URL" --kallsyms "$WORK/slid.map" --build-id "$KID" >/dev/null ||
	fail "upload of the kernel symbol map"
http GET "/api/v1/debuginfo/$KID"
[ "$(jq -r '.kallsyms,.status' <<<"$BODY" | tr '\n' ' ')" = "true ok " ] ||
	fail "kernel build ID after upload: $BODY"

wait_symbolized "$Q" "$FROM" "$UNTIL"
jq -r '.flamebearer.names[]' <<<"$BODY" >"$WORK/names"
if grep '^\[kernel\.kallsyms\]+0x' "$WORK/names" >"$WORK/hex"; then
	fail "kernel frames still hex: $(head -5 "$WORK/hex" | tr '\n' ' ') $(jq -c .symbolization <<<"$BODY" | head -c 600)"
fi
# Every kernel name perf gives is shown, and no kernel leaf is named otherwise.
while read -r n; do
	[ "$n" = "[unknown]" ] || grep -qxF "$n" "$WORK/names" || fail "perf names kernel frame $n; unhex does not"
done <"$WORK/perf.names"
# Leaf weights: unhex's self value per name (flamebearer levels are
# [offset, total, self, name] quadruples) against perf's periods, as shares.
jq -r '.flamebearer as $f | [$f.levels[] | range(0; length; 4) as $i | .[$i + 2:$i + 4]] |
	map(select(.[0] > 0)) | group_by(.[1]) | map("\($f.names[.[0][1]]) \(map(.[0]) | add)")[]' \
	<<<"$BODY" >"$WORK/self"
total=$(jq '.flamebearer.numTicks' <<<"$BODY")
ptotal=$(perf script -i "$WORK/sys.perf.data" -F period 2>/dev/null | awk '{s += $1} END {print s}')
awk '{w[$2] += $1} END {for (n in w) print n, w[n]}' "$WORK/perf.leaves" | sort >"$WORK/perf.self"
checked=0
while read -r n w; do
	[ "$n" = "[unknown]" ] && continue
	u=$(awk -v n="$n" '$1 == n {print $2}' "$WORK/self")
	awk -v u="${u:-0}" -v t="$total" -v w="$w" -v p="$ptotal" -v n="$n" 'BEGIN {
		d = u / t - w / p; if (d < 0) d = -d
		if (d > 0.001) { printf "%s: unhex share %.4f, perf %.4f\n", n, u / t, w / p; exit 1 } }' ||
		fail "leaf weight of kernel function $n differs"
	checked=$((checked + 1))
done <"$WORK/perf.self"
[ "$checked" -gt 0 ] || fail "no named kernel leaf to compare"
note "kernel leaves: $checked names with perf's weights; e.g. $(sort -k2 -nr "$WORK/perf.self" | head -3 | cut -d' ' -f1 | tr '\n' ' ')"
stop_server
note "sym_kernel: ok"

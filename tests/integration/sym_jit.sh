#!/usr/bin/env bash
# sym_jit.sh - JIT frames named from a perf map (docs/symbolization.md,
# "JIT runtimes").  A real Node.js runs a hot JavaScript function with
# --perf-basic-prof (it writes /tmp/perf-PID.map as it compiles), profiled
# by perf with frame pointers and converted by perf2pprof, which names the
# anonymous executable memory /tmp/perf-PID.map as perf does.  Before the
# map is uploaded the JIT frames are hex and the symbolization object says
# "no perf map for process PID"; a malformed map is refused naming its
# line; after `unhex upload --perf-map` the hot function is named.  Then
# the bounds: past the limits file's max_perfmaps the oldest map is evicted, and past
# --perfmap-retention the maintenance pass deletes it (both in /metrics);
# the frames are hex again with the reason.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need PERF2PPROF
need_cmd node "Debian's nodejs, .ci/deps.sh"

# Runs hotJitLoop for 1.5 s of its own CPU time (not wall time: the
# machine may be loaded), then writes its pid for the test to find the map.
cat >"$WORK/hot.js" <<'JSEOF'
function hotJitLoop(n) {
	let s = 0;
	for (let i = 0; i < n; i++)
		s = (s + i * i) % 1000003;
	return s;
}
const t0 = process.cpuUsage();
let acc = 0;
for (;;) {
	acc += hotJitLoop(200000);
	const u = process.cpuUsage(t0);
	if (u.user + u.system > 1500000)
		break;
}
require('fs').writeFileSync(process.argv[2], String(process.pid));
console.log(acc);
JSEOF

perf record -q -F 999 -g -o "$WORK/node.perf.data" node --perf-basic-prof "$WORK/hot.js" \
	"$WORK/node.pid" >/dev/null 2>"$WORK/perf.err" ||
	fail "perf record of node failed: $(head -c 300 "$WORK/perf.err")"
NPID=$(cat "$WORK/node.pid")
# The runtime's map: moved out of /tmp so nothing else reads it.
[ -s "/tmp/perf-$NPID.map" ] || fail "node wrote no /tmp/perf-$NPID.map"
mv "/tmp/perf-$NPID.map" "$WORK/perf-$NPID.map"
grep -q ' JS:.*hotJitLoop' "$WORK/perf-$NPID.map" || fail "the map does not name hotJitLoop"
"$PERF2PPROF" -i "$WORK/node.perf.data" -o "$WORK/node.pb.gz" || fail "perf2pprof failed"

# unhex doctor on the file: the JIT frames need the process's perf map.
DRC=0
DOC=$("$UNHEX" doctor "$WORK/node.pb.gz") || DRC=$?
[ $DRC != 0 ] && grep -q "JIT code of process $NPID" <<<"$DOC" &&
	grep -q "unhex upload --perf-map /tmp/perf-$NPID.map" <<<"$DOC" ||
	fail "doctor node.pb.gz (exit $DRC) does not ask for the perf map: $DOC"

start_server "$WORK/data" --debuginfod-urls "" --symbolize-budget 20s
FROM=$(($(date +%s) - 86400))
UNTIL=$(($(date +%s) + 3600))
"$UNHEX" ingest --server "$URL" --name "node.cpu" "$WORK/node.pb.gz" >/dev/null ||
	fail "ingest of the node profile"
Q=$(selector "$(cpu_type node)" node)

# Before the map: the JIT frames are hex, and the reason says why.
# (grep -q reads here-strings, not pipes: under pipefail a grep that stops
# early fails the writer.)
wait_symbolized "$Q" "$FROM" "$UNTIL"
NAMES=$(jq -r '.flamebearer.names[]' <<<"$BODY")
grep -q "^perf-$NPID\.map+0x" <<<"$NAMES" ||
	fail "no hex JIT frame before the map: $(tr '\n' ' ' <<<"$NAMES" | head -c 1500)"
! grep -q hotJitLoop <<<"$NAMES" || fail "hotJitLoop named before its map was uploaded"
G=$(jq -c --arg b "perf-$NPID.map" '.symbolization.buildIds[] | select(.binary == $b)' <<<"$BODY")
[ "$(jq -r .status <<<"$G")" = not_found ] || fail "JIT group before the map: $G"
[[ $(jq -r .reason <<<"$G") == "no perf map for process $NPID"* ]] || fail "JIT reason: $G"
note "before the map: $(jq -r .reason <<<"$G" | head -c 120)"

# Malformed maps are refused whole, naming the first bad line.
printf '7f0000001000 40 good\n7f00000010zz 40 bad\n' >"$WORK/bad.map"
http POST "/api/v1/perfmap/$NPID" --data-binary "@$WORK/bad.map"
[ "$STATUS" = 400 ] && grep -q 'line 2' <<<"$BODY" || fail "malformed map: $STATUS $BODY"
printf '7f0000001000 40 cut' >"$WORK/cut.map"
http POST "/api/v1/perfmap/$NPID" --data-binary "@$WORK/cut.map"
[ "$STATUS" = 400 ] && grep -q 'line 1: cut short' <<<"$BODY" || fail "cut map: $STATUS $BODY"
http POST "/api/v1/perfmap/0" --data-binary "@$WORK/perf-$NPID.map"
[ "$STATUS" = 400 ] || fail "pid 0: $STATUS $BODY"
# Past 8 MiB: refused by the declared length, and while reading a chunked body.
head -c $((8 * 1024 * 1024 + 1)) /dev/zero | tr '\0' a >"$WORK/huge.map"
http POST "/api/v1/perfmap/$NPID" --data-binary "@$WORK/huge.map"
[ "$STATUS" = 413 ] || fail "oversized map: $STATUS $BODY"
http POST "/api/v1/perfmap/$NPID" -H 'Transfer-Encoding: chunked' --data-binary "@$WORK/huge.map"
[ "$STATUS" = 413 ] || fail "oversized chunked map: $STATUS $BODY"
wait_symbolized "$Q" "$FROM" "$UNTIL"
NAMES=$(jq -r '.flamebearer.names[]' <<<"$BODY")
! grep -q hotJitLoop <<<"$NAMES" || fail "a refused map named frames"

# The map, uploaded: the hot function is named, the reason gone.
"$UNHEX" upload --server "$URL" --perf-map "$WORK/perf-$NPID.map" >/dev/null ||
	fail "unhex upload --perf-map"
wait_symbolized "$Q" "$FROM" "$UNTIL"
NAMES=$(jq -r '.flamebearer.names[]' <<<"$BODY")
grep -q '^JS:\*hotJitLoop ' <<<"$NAMES" ||
	fail "hotJitLoop (optimized) not named: $(tr '\n' ' ' <<<"$NAMES" | head -c 1500)"
G=$(jq -c --arg b "perf-$NPID.map" '.symbolization.buildIds[]? | select(.binary == $b)' <<<"$BODY")
[ -z "$G" ] || [ "$(jq -r .status <<<"$G")" = ok ] || fail "JIT group after the map: $G"
# Most samples are in hotJitLoop: the leaf-heavy name carries real weight.
note "after the map: $(grep -c . <<<"$NAMES") names, $(grep -c '^JS:' <<<"$NAMES") JS frames, $(grep -c "^perf-$NPID\.map+0x" <<<"$NAMES") JIT frames still hex"

# /api/v1/pprof gives JIT locations back at their runtime addresses, inside
# the map's entry of the function it names them after (a caller's at - 1).
curl -sS -o "$WORK/export.pb.gz" "$URL/api/v1/pprof?query=$Q&from=$FROM&until=$UNTIL" ||
	fail "GET /api/v1/pprof"
go tool pprof -raw -symbolize=none "$WORK/export.pb.gz" >"$WORK/export.raw" 2>"$WORK/raw.err" ||
	fail "go tool pprof -raw: $(head -c 300 "$WORK/raw.err")"
checked=0
while read -r addr; do
	a=$((addr))
	ok=0
	while read -r start size name; do
		s=$((0x$start))
		if { ((s <= a && a < s + 0x$size)) || ((s <= a - 1 && a - 1 < s + 0x$size)); } &&
			[[ $name == *hotJitLoop* ]]; then
			ok=1
			break
		fi
	done < <(grep ' JS:.*hotJitLoop' "$WORK/perf-$NPID.map")
	[ $ok = 1 ] || fail "exported location $addr named hotJitLoop is outside its map entries"
	checked=$((checked + 1))
done < <(sed -n 's/^ *[0-9]*: \(0x[0-9a-f]*\) M=[0-9]* JS:[*~^]*hotJitLoop .*/\1/p' "$WORK/export.raw")
[ $checked -gt 0 ] || fail "no hotJitLoop location in /api/v1/pprof: $(grep -m5 hotJitLoop "$WORK/export.raw")"
note "/api/v1/pprof: $checked hotJitLoop locations inside the map's entries"
stop_server

# perf_deleted REASON: unhex_perfmap_deleted_total{reason=REASON} now.
perf_deleted() {
	http GET /metrics
	[ "$STATUS" = 200 ] || fail "/metrics: $STATUS"
	sed -n "s/^unhex_perfmap_deleted_total{reason=\"$1\"} //p" <<<"$BODY"
}
# jit_reason: the JIT group's status and reason, after a settled query.
jit_reason() {
	wait_symbolized "$Q" "$FROM" "$UNTIL"
	NAMES=$(jq -r '.flamebearer.names[]' <<<"$BODY")
	G=$(jq -c --arg b "perf-$NPID.map" '.symbolization.buildIds[]? | select(.binary == $b)' <<<"$BODY")
}

# jit_gone HOW: with the node's map HOW (evicted, expired), its frames are
# hex again and its JIT group says there is no perf map for the process.
jit_gone() {
	jit_reason
	! grep -q hotJitLoop <<<"$NAMES" || fail "hotJitLoop named from an $1 map"
	[ "$(jq -r .status <<<"$G")" = not_found ] &&
		[[ $(jq -r .reason <<<"$G") == "no perf map for process $NPID"* ]] ||
		fail "JIT group, map $1: $G"
}

# The cap (docs/symbolization.md, "How many, how long"): two maps per
# tenant (the limits file's max_perfmaps over the flag's default); two other
# processes' maps evict the node's, the oldest.
echo 'default max_perfmaps=2' >"$WORK/limits"
start_server "$WORK/data" --debuginfod-urls "" --symbolize-budget 20s --perfmap-max 50 \
	--limits-file "$WORK/limits"
printf '1000 10 other\n' >"$WORK/other.map"
for p in 900001 900002; do
	http POST "/api/v1/perfmap/$p" --data-binary "@$WORK/other.map"
	[ "$STATUS" = 201 ] || fail "map of $p: $STATUS $BODY"
done
[ "$(perf_deleted evicted)" = 1 ] || fail "evictions after a third map: $(perf_deleted evicted)"
jit_gone evicted
# Uploaded again: named again (900001, now the oldest, goes).
"$UNHEX" upload --server "$URL" --perf-map "$WORK/perf-$NPID.map" >/dev/null ||
	fail "unhex upload --perf-map after eviction"
[ "$(perf_deleted evicted)" = 2 ] || fail "evictions: $(perf_deleted evicted)"
jit_reason
grep -q '^JS:\*hotJitLoop ' <<<"$NAMES" || fail "hotJitLoop not named after uploading again"
note "cap: $(perf_deleted evicted) maps evicted, the node's named again"
stop_server

# Expiry: with a 2 s retention the maintenance pass (every second) deletes
# both maps (the node's and 900002), counted; the frames are hex again.
start_server "$WORK/data" --debuginfod-urls "" --symbolize-budget 20s \
	--perfmap-retention 2s --maintain-interval 1s
for i in $(seq 1 120); do
	[ "$(perf_deleted expired)" -ge 2 ] && break
	sleep 0.5
done
[ "$(perf_deleted expired)" = 2 ] || fail "maps expired: $(perf_deleted expired)"
jit_gone expired
grep -q "perf map of process $NPID deleted" "$WORK/server.$SERVER_N.log" ||
	fail "the server log does not say the map expired"
note "expiry: $(perf_deleted expired) maps deleted, reason: $(jq -r .reason <<<"$G" | head -c 60)"
stop_server
note "sym_jit: ok"

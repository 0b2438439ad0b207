#!/usr/bin/env bash
# query_dot.sh - Pyroscope's `format=dot` (/pyroscope/render and Connect's
# SelectMergeStacktraces PROFILE_FORMAT_DOT) against real clients:
#   - Graphviz's own `dot -Tsvg` parses every answer, and renders hostile
#     function names (quotes, backslashes, Graphviz escapes, newlines,
#     invalid UTF-8, DOT syntax) as the names themselves;
#   - differential, on those profiles and on a real Go program's CPU profile:
#     `go tool pprof` on /api/v1/pprof of the same query gives
#     the same graph: every function's flat and cum (-top), every edge's
#     weight and its inline mark (-dot), and the total, exactly; trimmed to
#     max-nodes, the kept functions are the top ones by cum, with the values
#     of the whole graph, and agree with pprof -dot's trimmed graph;
#   - content types as Pyroscope's, an empty answer for no samples, Connect's
#     `dot` and `unhex query dot` equal to render's, the query memory budget
#     enforced.
# The profiles are pprof files encoded here by protoc from text (so stacks,
# recursion, inline frames and names are exactly what the test says).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need_cmd dot "Graphviz, package graphviz"
need_cmd go "package golang-go"
need_protoc
need_cmd jq
need_cmd python3
export GOCACHE="$WORK/gocache" GOPATH="$WORK/gopath" HOME="$WORK"
NOW=$(date +%s)
FROM=$((NOW - 600))
UNTIL=$((NOW + 600))

# gen KIND: the text of a pprof Profile (cpu nanoseconds) whose stacks are
# KIND's; "handle+helper" is one location with helper inlined into handle.
gen() {
	python3 - "$1" "$NOW" <<'EOF'
import sys
kind, now = sys.argv[1], int(sys.argv[2])
ms = 10000000
if kind == "calls":
    samples = [
        (["main", "serve", "handle+helper"], 30),
        (["main", "serve", "handle", "parse"], 20),
        (["main", "serve", "handle", "parse", "helper"], 3),
        (["main", "fib", "fib", "fib", "fib"], 15),
        (["main", "fib", "fib", "leaf"], 5),
        (["main", "a", "b", "a", "b"], 7),
        (["main", "a", "c", "a", "c", "d"], 6),
        (["main", "ns::Foo::bar", "memcpy"], 9),
        (["main", "gc"], 4),
        (["main"], 2),
        (["main", "serve", "log", "fmt", "write"], 11),
        (["main", "serve", "log", "write"], 1),
    ]
else:
    names = ['q"uote', 'back\\slash', 'a\\Nb\\G\\l', 'line\nbreak', b'\xff\xfebad',
             'x" -> y [label="z"', '}{<html>&amp;', 'w' * 2000]
    samples = [(["main", n], i + 1) for i, n in enumerate(names)]
strings, funcs, locs = [b""], {}, {}
def s(x):
    x = x if isinstance(x, bytes) else x.encode()
    if x not in strings:
        strings.append(x)
    return strings.index(x)
def f(name):
    return funcs.setdefault(name if isinstance(name, bytes) else name.encode(), len(funcs) + 1)
def loc(frame):
    return locs.setdefault(frame, len(locs) + 1)
print('sample_type { type: %d unit: %d }' % (s("cpu"), s("nanoseconds")))
for stack, v in samples:
    ids = " ".join("location_id: %d" % loc(fr) for fr in reversed(stack))
    print('sample { %s value: %d }' % (ids, v * ms))
print('mapping { id: 1 memory_start: 4096 memory_limit: 1048576 filename: %d has_functions: true }'
      % s("/usr/bin/app"))
for fr, i in locs.items():
    if isinstance(fr, str) and "+" in fr:
        outer, inner = fr.split("+")
        lines = 'line { function_id: %d line: 7 } line { function_id: %d line: 42 }' % (f(inner), f(outer))
    else:
        lines = 'line { function_id: %d line: 10 }' % f(fr)
    print('location { id: %d mapping_id: 1 address: %d %s }' % (i, 4096 + 16 * i, lines))
for name, i in funcs.items():
    print('function { id: %d name: %d filename: %d }' % (i, s(name), s("app.c")))
print('period_type { type: %d unit: %d } period: %d' % (s("cpu"), s("nanoseconds"), ms))
print('time_nanos: %d duration_nanos: 10000000000' % (now * 1000000000))
for x in strings:
    print('string_table: "%s"' % "".join(chr(c) if 32 <= c < 127 and c not in b'"\\' else "\\%03o" % c for c in x))
EOF
}

# A real Go program's CPU profile (Go's own inlining, recursion, runtime
# frames), written by runtime/pprof; it runs until it has used a second of
# CPU time, however loaded the machine.
mkdir -p "$WORK/goprog"
cat >"$WORK/goprog/main.go" <<'EOF'
package main

import (
	"os"
	"runtime/pprof"
	"syscall"
	"time"
)

func fib(n int) int {
	if n < 2 {
		return n
	}
	return fib(n-1) + fib(n-2)
}

func mix(x uint64) uint64 { x ^= x >> 33; x *= 0xff51afd7ed558ccd; return x ^ x>>29 }

func hash(n int) (h uint64) {
	for i := 0; i < n; i++ {
		h = mix(h + uint64(i))
	}
	return h
}

func cpu() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func work(d time.Duration) (r uint64) {
	for start := cpu(); cpu()-start < d; {
		r += uint64(fib(22)) + hash(100000)
	}
	return r
}

func main() {
	f, err := os.Create(os.Args[1])
	if err != nil {
		panic(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		panic(err)
	}
	println(work(time.Second))
	pprof.StopCPUProfile()
	f.Close()
}
EOF
printf 'module dotprog\n\ngo 1.19\n' >"$WORK/goprog/go.mod"
(cd "$WORK/goprog" && go build -o prog . && ./prog "$WORK/go.pb.gz") >/dev/null 2>"$WORK/go.err" ||
	fail "building or running the Go program: $(cat "$WORK/go.err")"

start_server "$WORK/data"
"$UNHEX" ingest --server "$URL" --name "dotgo.cpu{}" --from "$NOW" "$WORK/go.pb.gz" >/dev/null ||
	fail "ingest the Go profile"
for kind in calls hostile; do
	gen $kind >"$WORK/$kind.txt"
	protoc --proto_path="$PROTO_DIR" --encode=perftools.profiles.Profile profile.proto \
		<"$WORK/$kind.txt" 2>"$WORK/protoc.err" | gzip >"$WORK/$kind.pb.gz" || fail "protoc --encode $kind"
	"$UNHEX" ingest --server "$URL" --name "dot$kind.cpu{}" --from "$NOW" "$WORK/$kind.pb.gz" \
		>/dev/null || fail "ingest $kind"
done

dotq() { # SERVICE [curl args]: the render's DOT of SERVICE in BODY, headers in $WORK/h
	local svc=$1
	shift
	STATUS=$(curl -sS -o "$WORK/body" -D "$WORK/h" -w '%{http_code}' -G "$URL/pyroscope/render" \
		--data-urlencode "query=$CPU{service_name=\"$svc\"}" -d "from=$FROM" -d "until=$UNTIL" \
		-d format=dot "$@") || fail "curl render format=dot"
	BODY=$(cat "$WORK/body")
}
svg() { # FILE: Graphviz parses and lays out FILE, silently
	dot -Tsvg "$1" >"$1.svg" 2>"$1.err" || fail "dot -Tsvg $1: $(cat "$1.err")"
	[ ! -s "$1.err" ] || fail "dot -Tsvg $1 warned: $(cat "$1.err")"
}
# ours FILE: "N<tab>name<tab>flat<tab>cum" per node, "E<tab>src<tab>dst<tab>w<tab>inline"
# per edge, "T<tab>total", from the exact values of our tooltips.
ours() {
	python3 - "$1" <<'EOF'
import re, sys
names = {}
for line in open(sys.argv[1], encoding="utf-8"):
    m = re.match(r'(N\d+) \[label=.* tooltip="(.*) \(flat (-?\d+), cum (-?\d+) nanoseconds\)"\]$', line)
    if m:
        names[m.group(1)] = m.group(2)
        print("N\t%s\t%s\t%s" % m.group(2, 3, 4))
    m = re.match(r'(N\d+) -> (N\d+) \[label=" [^"]*?(\\n \(inline\))?" .* tooltip=".* \((-?\d+) nanoseconds\)"\]$', line)
    if m:
        print("E\t%s\t%s\t%s\t%d" % (names[m.group(1)], names[m.group(2)], m.group(4), m.group(3) is not None))
    m = re.search(r'"legend" .* tooltip="total (-?\d+) nanoseconds"', line)
    if m:
        print("T\t%s" % m.group(1))
EOF
}

PP=(go tool pprof -unit=ns -nodefraction=0 -edgefraction=0)
# differential SERVICE: render's untrimmed DOT of SERVICE and go tool pprof's
# -top and -dot of /api/v1/pprof of the same query agree on every function's
# flat and cum, every edge's weight and inline mark, and the total.  Leaves
# $WORK/SERVICE.{dot,ours,theirs,pb.gz}.
differential() {
	local svc=$1 w="$WORK/$1"
	dotq "$svc" -d max-nodes=100000
	[ "$STATUS" = 200 ] || fail "render format=dot of $svc: HTTP $STATUS $BODY"
	grep -qi '^content-type: text/plain; charset=utf-8' "$WORK/h" ||
		fail "content type: $(grep -i content-type "$WORK/h")"
	cp "$WORK/body" "$w.dot"
	svg "$w.dot"
	ours "$w.dot" | sort >"$w.ours"
	curl -sS -o "$w.pb.gz" -G "$URL/api/v1/pprof" \
		--data-urlencode "query=$CPU{service_name=\"$svc\"}" -d "from=$FROM" -d "until=$UNTIL" ||
		fail "GET /api/v1/pprof"
	"${PP[@]}" -nodecount=100000 -top "$w.pb.gz" >"$w.top" 2>"$WORK/pprof.err" ||
		fail "go tool pprof -top: $(cat "$WORK/pprof.err")"
	"${PP[@]}" -nodecount=100000 -dot "$w.pb.gz" >"$w.pprof.dot" 2>"$WORK/pprof.err" ||
		fail "go tool pprof -dot: $(cat "$WORK/pprof.err")"
	# pprof's: "N name flat cum" from -top, "E src dst w inline" from -dot, "T total".
	python3 - "$w.top" "$w.pprof.dot" <<'EOF' | sort >"$w.theirs"
import re, sys
for line in open(sys.argv[1]):
    m = re.match(r'\s*(\d+)(?:ns)?\s+\S+\s+\S+\s+(\d+)(?:ns)?\s+\S+\s+(.*?)( \((?:partial-)?inline\))?$', line)
    if m:
        print("N\t%s\t%s\t%s" % (m.group(3), m.group(1), m.group(2)))
    m = re.search(r'of (\d+)ns total', line)
    if m:
        print("T\t%s" % m.group(1))
for line in open(sys.argv[2]):
    m = re.match(r'N\d+ -> N\d+ \[label=" \d+ns(\\n \(inline\))?" .* tooltip="(.*) -> (.*) \((\d+)ns\)" ', line)
    if m:
        print("E\t%s\t%s\t%s\t%d" % (m.group(2), m.group(3), m.group(4), m.group(1) is not None))
EOF
	[ "$(grep -c ^E "$w.theirs")" -ge 3 ] || fail "pprof's graph of $svc has too few edges: $(cat "$w.theirs")"
	diff "$w.theirs" "$w.ours" >"$WORK/diff.txt" ||
		fail "$svc: the call graph differs from go tool pprof's (< pprof, > unhex): $(cat "$WORK/diff.txt")"
	note "$svc: go tool pprof -top/-dot agree on $(grep -c ^N "$w.ours") functions, $(grep -c ^E "$w.ours") edges and the total"
}

# ---- the call graphs, untrimmed, against go tool pprof
differential dotcalls
grep -q $'^E\thandle\thelper\t300000000\t1$' "$WORK/dotcalls.theirs" ||
	fail "pprof sees no inline edge: $(cat "$WORK/dotcalls.theirs")"
grep -q $'^E\tparse\thelper\t30000000\t0$' "$WORK/dotcalls.theirs" ||
	fail "pprof sees no call parse -> helper: $(cat "$WORK/dotcalls.theirs")"
differential dotgo
grep -q $'^N\tmain.fib\t' "$WORK/dotgo.ours" || fail "the Go profile has no main.fib"
grep -q $'^E\t[^\t]*\t[^\t]*\t[0-9]*\t1$' "$WORK/dotgo.ours" || fail "the Go profile has no inline edge"

# ---- trimmed to max-nodes (and Drilldown's maxNodes spelling)
dotq dotcalls -d max-nodes=8
[ "$STATUS" = 200 ] || fail "render max-nodes=8: HTTP $STATUS $BODY"
cp "$WORK/body" "$WORK/eight.dot"
svg "$WORK/eight.dot"
dotq dotcalls -d maxNodes=8
cmp -s "$WORK/body" "$WORK/eight.dot" || fail "maxNodes=8 and max-nodes=8 differ"
ours "$WORK/eight.dot" | sort >"$WORK/eight.txt"
[ "$(grep -c ^N "$WORK/eight.txt")" = 8 ] || fail "max-nodes=8 kept $(grep -c ^N "$WORK/eight.txt") nodes"
grep -q 'Showing top 8 nodes out of 17' "$WORK/eight.dot" || fail "legend: $(grep legend "$WORK/eight.dot")"
grep -q 'style="dashed"' "$WORK/eight.dot" || fail "no residual edge across dropped functions"
# Kept: values of the whole graph, and no dropped function has a larger cum.
grep ^N "$WORK/eight.txt" | while IFS=$'\t' read -r _ name flat cum; do
	grep -qxF "$(printf 'N\t%s\t%s\t%s' "$name" "$flat" "$cum")" "$WORK/dotcalls.theirs" ||
		fail "kept $name flat $flat cum $cum is not pprof's"
done
MINCUM=$(awk -F'\t' '$1 == "N" { print $4 }' "$WORK/eight.txt" | sort -n | head -1)
awk -F'\t' -v m="$MINCUM" '$1 == "N" && $4 > m' "$WORK/dotcalls.theirs" | while IFS=$'\t' read -r _ name _ _; do
	grep -q "^N	$name	" "$WORK/eight.txt" || fail "$name has a cum above $MINCUM but was dropped"
done
# pprof -dot trimmed the same way: its node tooltips give cum; the nodes both keep agree.
"${PP[@]}" -nodecount=8 -dot "$WORK/dotcalls.pb.gz" >"$WORK/pprof8.dot" 2>"$WORK/pprof.err" ||
	fail "go tool pprof -dot -nodecount=8: $(cat "$WORK/pprof.err")"
BOTH=0
while IFS=$'\t' read -r name cum; do
	want=$(awk -F'\t' -v n="$name" '$1 == "N" && $2 == n { print $4 }' "$WORK/eight.txt")
	[ -z "$want" ] && continue
	[ "$want" = "$cum" ] || fail "trimmed: $name cum $want, pprof -dot says $cum"
	BOTH=$((BOTH + 1))
done < <(sed -n 's/^N[0-9]* \[label=.* tooltip="\(.*\) (\([0-9]*\)ns)".*/\1\t\2/p' "$WORK/pprof8.dot")
[ $BOTH -ge 3 ] || fail "only $BOTH nodes in common with pprof -dot -nodecount=8"
note "max-nodes=8: 8 nodes by cum, $BOTH shared with pprof -dot -nodecount=8 agree"

# Default: Pyroscope's 100 (all 17 here).
dotq dotcalls
[ "$(grep -c '^N[0-9]* \[' <<<"$BODY")" = 17 ] || fail "default max-nodes: $(grep -c '^N[0-9]* \[' <<<"$BODY") nodes"

# ---- Connect's PROFILE_FORMAT_DOT: the same graph in `dot`
for body in "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{service_name=\\\"dotcalls\\\"}\",\"start\":$((FROM * 1000)),\"end\":$((UNTIL * 1000)),\"maxNodes\":8,\"format\":\"PROFILE_FORMAT_DOT\"}" \
	"{\"profile_typeID\":\"$CPU\",\"label_selector\":\"{service_name=\\\"dotcalls\\\"}\",\"start\":$((FROM * 1000)),\"end\":$((UNTIL * 1000)),\"max_nodes\":8,\"format\":3}"; do
	http POST /querier.v1.QuerierService/SelectMergeStacktraces -H 'Content-Type: application/json' \
		-H 'Connect-Protocol-Version: 1' --data-binary "$body"
	[ "$STATUS" = 200 ] || fail "SelectMergeStacktraces DOT: HTTP $STATUS $BODY"
	jq -j .dot <<<"$BODY" >"$WORK/connect.dot"
	cmp -s "$WORK/connect.dot" "$WORK/eight.dot" || fail "Connect's dot differs from render's: $(head -c 300 "$WORK/connect.dot")"
done
note "Connect SelectMergeStacktraces format DOT equals render's"
"$UNHEX" query dot --server "$URL" --query "$CPU{service_name=\"dotcalls\"}" --from "$FROM" \
	--until "$UNTIL" --limit 8 >"$WORK/cli.dot" || fail "unhex query dot"
cmp -s "$WORK/cli.dot" "$WORK/eight.dot" || fail "unhex query dot differs from render's"

# ---- no samples: an empty answer, as Pyroscope's
dotq nosuchservice
[ "$STATUS" = 200 ] && [ -z "$BODY" ] || fail "no samples: HTTP $STATUS, body $(head -c 100 <<<"$BODY")"
grep -qi '^content-type: text/plain'$'\r'"\$" "$WORK/h" || fail "empty content type: $(grep -i content-type "$WORK/h")"

# ---- hostile names: Graphviz shows each name as it is
dotq dothostile
[ "$STATUS" = 200 ] || fail "hostile render: HTTP $STATUS $BODY"
cp "$WORK/body" "$WORK/hostile.dot"
svg "$WORK/hostile.dot"
python3 - "$WORK/hostile.dot.svg" <<'EOF' || fail "hostile names are not rendered as themselves"
import sys, xml.etree.ElementTree as ET
ns = "{http://www.w3.org/2000/svg}"
root = ET.parse(sys.argv[1]).getroot()
texts = {t.text for t in root.iter(ns + "text")}
titles = {a.get("{http://www.w3.org/1999/xlink}title") for a in root.iter(ns + "a")}
want = ['q"uote', 'back\\slash', 'a\\Nb\\G\\l', 'line\\x0abreak', '\ufffd\ufffdbad',
        'x" -> y [label="z"', '}{<html>&amp;', 'w' * 2000]
bad = [w for w in want if w not in texts]
bad += [w for w in want if not any(t and t.startswith(w + " (flat ") for t in titles)]
if bad:
    print("missing:", bad, sorted(t for t in texts if t)[:40], file=sys.stderr)
    sys.exit(1)
EOF
note "hostile names: dot -Tsvg shows all 8 as they are, in labels and tooltips"

# ---- the query memory budget: a query that cannot afford the graph is refused
stop_server
start_server "$WORK/data" --query-max-bytes 4096
dotq dotcalls
[ "$STATUS" = 413 ] || fail "a 4 KiB query budget: HTTP $STATUS $(head -c 200 <<<"$BODY")"
note "query budget: HTTP $STATUS $(head -c 120 <<<"$BODY")"
echo "ok: format=dot"

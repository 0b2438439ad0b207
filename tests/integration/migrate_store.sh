#!/usr/bin/env bash
# migrate_store.sh - a store written by an unhex from before Pyroscope's
# profile type names (UNHEX_OLD: its binary, e.g. built from a commit
# before the profile-types.v1 migration) opened by this one: the old names
# that can only have come from the old rule are renamed (Go heap ->
# memory, Node.js wall -> wall, .NET cpu -> process_cpu), the ambiguous
# ones kept (contentions, goroutine), totals unchanged, new data under the
# new names joins the renamed series, a second open changes nothing, and
# maintenance seals the renamed series into a block (the store of the old
# binary is also the format before time blocks) with every answer unchanged.
# Exits 77 (skipped) when UNHEX_OLD is not set.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
if [ -z "${UNHEX_OLD:-}" ]; then
	echo "migrate_store: SKIPPED (set UNHEX_OLD to an unhex binary from before the migration)" >&2
	exit 77
fi
source "$HERE/lib.sh"
need UNHEX_OLD
for tool in go python3 jq curl; do
	command -v "$tool" >/dev/null 2>&1 || fail "$tool is not installed"
done
NOW=$(date +%s)
# The profiles are stamped half an hour back, so that one profile stamped
# now moves the store's clock past the end of their block range.
OLD=$((NOW - 1800))
FROM=$((NOW - 3600))
UNTIL=$((NOW + 600))

# The profiles: Go's heap, goroutine and mutex from runtime/pprof, and a
# Node.js wall and a .NET CPU profile written by hand as those agents lay
# them out (sample types, period types).
mkdir -p "$WORK/go" "$WORK/p"
cat >"$WORK/go/main.go" <<'EOF'
package main

import (
	"os"
	"runtime"
	"runtime/pprof"
	"sync"
	"time"
)

var keep [][]byte

func main() {
	runtime.MemProfileRate = 1
	runtime.SetMutexProfileFraction(1)
	for i := 0; i < 1000; i++ {
		keep = append(keep, make([]byte, 128))
	}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 20; i++ {
				mu.Lock()
				time.Sleep(100 * time.Microsecond)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for _, p := range []string{"heap", "goroutine", "mutex"} {
		f, _ := os.Create(os.Args[1] + "/" + p + ".pb.gz")
		pprof.Lookup(p).WriteTo(f, 0)
		f.Close()
	}
}
EOF
(cd "$WORK/go" && GOPATH="$WORK/gopath" GOCACHE="$WORK/gocache" GO111MODULE=off GOPROXY=off \
	go run main.go "$WORK/p") || fail "go run"
python3 - "$WORK/p" "$OLD" "$NOW" <<'EOF'
import gzip, sys
d, old, now = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
def v(x):
    o = bytearray()
    while x >= 0x80: o.append(x & 0x7f | 0x80); x >>= 7
    o.append(x); return bytes(o)
def ld(f, b): return v(f << 3 | 2) + v(len(b)) + b
def vi(f, x): return v(f << 3) + v(x)
def uv(b, i):
    x = s = 0
    while True:
        c = b[i]; i += 1; x |= (c & 0x7f) << s; s += 7
        if c < 0x80: return x, i
def restamp(path, t):
    # Go's runtime stamps time_nanos (field 9) itself: rewrite it.
    b, i, out = gzip.decompress(open(path, "rb").read()), 0, bytearray()
    while i < len(b):
        j = i
        k, i = uv(b, i)
        if k & 7 == 0: _, i = uv(b, i)
        elif k & 7 == 2: n, i = uv(b, i); i += n
        elif k & 7 == 1: i += 8
        elif k & 7 == 5: i += 4
        else: raise SystemExit("restamp: wire type %d" % (k & 7))
        if k >> 3 != 9: out += b[j:i]
    open(path, "wb").write(gzip.compress(bytes(out) + vi(9, t * 10**9)))
def pprof(types, period, samples, now=old):
    st = [""]
    def s(x):
        if x not in st: st.append(x)
        return st.index(x)
    out = b"".join(ld(1, vi(1, s(t)) + vi(2, s(u))) for t, u in types)
    out += ld(11, vi(1, s(period[0])) + vi(2, s(period[1]))) + vi(12, 1)
    for i, (name, vals) in enumerate(samples, 1):
        out += ld(5, vi(1, i) + vi(2, s(name)))
        out += ld(4, vi(1, i) + ld(4, vi(1, i)))
        out += ld(2, ld(1, v(i)) + ld(2, b"".join(v(x) for x in vals)))
    out += vi(9, now * 10**9)
    return out + b"".join(ld(6, x.encode()) for x in st)
for p in ("heap", "goroutine", "mutex"):
    restamp(d + "/" + p + ".pb.gz", old)
open(d + "/late.pb", "wb").write(pprof([("cpu", "nanoseconds")], ("cpu", "nanoseconds"),
    [("late", [10000000])], now))
open(d + "/nodewall.pb", "wb").write(pprof([("samples", "count"), ("wall", "microseconds")],
    ("wall", "microseconds"), [("work", [3, 30000]), ("idle", [1, 10000])]))
open(d + "/dotnet.pb", "wb").write(pprof([("cpu", "nanoseconds"), ("alloc_samples", "count")],
    ("", "nanoseconds"), [("Program.Work", [20000000, 2]), ("Program.Main", [10000000, 1])]))
EOF

ingest_all() { # the name parameter
	for f in heap.pb.gz goroutine.pb.gz mutex.pb.gz nodewall.pb dotnet.pb; do
		http POST "/ingest?name=$1&from=$((OLD - 10))&until=$OLD&format=pprof" --data-binary @"$WORK/p/$f"
		[ "$STATUS" = 200 ] || fail "ingest $f: HTTP $STATUS $BODY"
	done
}
types() { profile_types "$FROM" "$UNTIL"; }
total() { render_total "$1{service_name=\"$2\"}" "$FROM" "$UNTIL"; } # TYPE SERVICE

# Written by the old binary.
NEW=$UNHEX
UNHEX=$UNHEX_OLD
start_server "$WORK/data"
ingest_all app
types >"$WORK/old.types"
note "old names: $(tr '\n' ' ' <"$WORK/old.types")"
OLD_HEAP=$(total alloc_objects:alloc_space:bytes:space:bytes app)
OLD_WALL=$(total samples:wall:microseconds:wall:microseconds app)
OLD_MUTEX=$(total contentions:delay:nanoseconds:contentions:count app)
stop_server
grep -qx 'alloc_objects:alloc_space:bytes:space:bytes' "$WORK/old.types" ||
	fail "the old binary does not write the old names; is UNHEX_OLD from before the migration?"

# Opened by this one.
UNHEX=$NEW
start_server "$WORK/data"
grep -q 'profile-types.v1: 8 series renamed' "$WORK/server.$SERVER_N.log" ||
	fail "no migration in the log: $(cat "$WORK/server.$SERVER_N.log")"
types >"$WORK/new.types"
cat >"$WORK/want.types" <<'EOF'
contentions:contentions:count:contentions:count
contentions:delay:nanoseconds:contentions:count
goroutine:goroutine:count:goroutine:count
memory:alloc_objects:count:space:bytes
memory:alloc_space:bytes:space:bytes
memory:inuse_objects:count:space:bytes
memory:inuse_space:bytes:space:bytes
process_cpu:alloc_samples:count::nanoseconds
process_cpu:cpu:nanoseconds::nanoseconds
wall:samples:count:wall:microseconds
wall:wall:microseconds:wall:microseconds
EOF
diff "$WORK/want.types" "$WORK/new.types" >&2 || fail "renamed types differ (above)"
[ "$(total memory:alloc_space:bytes:space:bytes app)" = "$OLD_HEAP" ] || fail "heap total changed"
[ "$(total wall:wall:microseconds:wall:microseconds app)" = "$OLD_WALL" ] || fail "wall total changed"
[ "$(total contentions:delay:nanoseconds:contentions:count app)" = "$OLD_MUTEX" ] ||
	fail "the kept contentions series changed"
note "renamed, totals unchanged: heap $OLD_HEAP, wall $OLD_WALL, contentions $OLD_MUTEX"
# New data under the new names lands in the renamed series.
ingest_all app
[ "$(total memory:alloc_space:bytes:space:bytes app)" = "$((OLD_HEAP * 2))" ] ||
	fail "new heap data did not join the renamed series"
types >"$WORK/new2.types"
stop_server
# A second open changes nothing.
start_server "$WORK/data"
grep -q 'renamed' "$WORK/server.$SERVER_N.log" && fail "the migration ran twice"
types | diff - "$WORK/new2.types" >&2 || fail "types changed on the second open"
render_all() { # render_all TAG: every flame graph of app that a selector can name
	for t in $(grep -v '::' "$WORK/new2.types"); do
		http GET /pyroscope/render -G --data-urlencode "query=$t{service_name=\"app\"}" \
			-d "from=$FROM" -d "until=$UNTIL"
		[ "$STATUS" = 200 ] || fail "render $t: HTTP $STATUS $BODY"
		jq -cS 'del(.symbolization)' <<<"$BODY" >"$WORK/render.$t.$1"
	done
}
render_all head
stop_server

# Sealed: a profile stamped now moves the clock past the renamed data's
# range, which maintenance then writes into a block under the new names.
start_server "$WORK/data" --block-range 10m --maintain-interval 1s
http POST "/ingest?name=late.cpu&from=$((NOW - 10))&until=$NOW&format=pprof" --data-binary @"$WORK/p/late.pb"
[ "$STATUS" = 200 ] || fail "ingest late.pb: HTTP $STATUS $BODY"
# Two minutes at most: the 1 s pass of an ASan build on a loaded machine.
wait_stats '.head_profiles == 1' 600
[ "$(jq -r .head_profiles <<<"$S")" = 1 ] || fail "the renamed data was not sealed: $S"
[ "$(jq -r .blocks.count <<<"$S")" -ge 1 ] || fail "no block: $S"
types | grep -vx "process_cpu:cpu:nanoseconds:cpu:nanoseconds" | diff - "$WORK/new2.types" >&2 ||
	fail "types changed with sealing"
render_all blocks
for t in $(grep -v '::' "$WORK/new2.types"); do
	cmp -s "$WORK/render.$t.head" "$WORK/render.$t.blocks" || fail "$t: the flame graph changed with sealing"
done
stop_server
"$UNHEX" verify --data "$WORK/data" >"$WORK/verify" || fail "verify: $(cat "$WORK/verify")"
note "sealed: $(jq -c '{head_profiles, blocks: .blocks.count}' <<<"$S"), every flame graph unchanged"
note "migrate_store: ok"

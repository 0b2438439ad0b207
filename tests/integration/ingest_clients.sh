#!/usr/bin/env bash
# ingest_clients.sh - Pyroscope's agents against the real server, each
# request encoded exactly as the real client encodes it, and every stored
# profile type checked against Pyroscope's ID with exact totals and top
# frames from an independent reader of the same bytes:
#
#   go      runtime/pprof CPU, heap, goroutine, mutex and block profiles of
#           a Go program compiled here, sent the way pyroscope-go's
#           upstream/remote sends them (the same mime/multipart calls,
#           part names, sample_type_config JSON and query parameters);
#           reference: `go tool pprof -raw` of the same files.  Mutex and
#           block must land in two series.
#   java    a JFR recording of a Java program compiled here (jdk.ExecutionSample,
#           jdk.ObjectAllocationSample, jdk.ObjectAllocationInNewTLAB/OutsideTLAB,
#           jdk.JavaMonitorEnter, jdk.ThreadPark), sent as pyroscope-java's
#           PyroscopeExporter sends it (OkHttp's multipart form, gzipped "jfr"
#           and "labels" parts, format=jfr); reference: the JDK's own
#           `jfr print --json`, summed with jq.
#   legacy  folded text as pyroscope-rs 0.5 sent it, lines, the first Go
#           agent's transport trie (a radix trie, binary/octet-stream+trie),
#           a serialized tree and speedscope JSON; reference: the bodies'
#           own counts, computed here.
#   node    @pyroscope/nodejs from npm (its native addon ships in the npm
#           package) profiling a Node.js script; reference: the pprofs the
#           SDK uploaded, captured on their way out and read with
#           `go tool pprof -raw`.  Skipped with a note when npm cannot
#           install it.
#
# Queries use the existing routes: /pyroscope/render (totals), /api/v1/top
# (self per frame) and Connect JSON ProfileTypes / LabelNames.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
source "$HERE/lib.sh"

for tool in go javac java jfr jq python3 curl; do
	command -v "$tool" >/dev/null 2>&1 || fail "$tool is not installed (.ci/deps.sh)"
done

start_server "$WORK/data"
NOW=$(date +%s)
FROM=$((NOW - 3600))
UNTIL=$((NOW + 600))

# total TYPE SELECTOR: the merged total of a profile type ("" when absent).
total() { render_total "$1$2" "$FROM" "$UNTIL"; }

# top_self TYPE SELECTOR N: "self name" of the N biggest self values.
top_self() {
	http GET /api/v1/top -G --data-urlencode "query=$1$2" -d "from=$FROM" -d "until=$UNTIL"
	[ "$STATUS" = 200 ] || fail "top $1$2: HTTP $STATUS $BODY"
	awk 'NR > 1 && $1 > 0 { n = $5; for (i = 6; i <= NF; i++) n = n " " $i; print $1, n }' \
		<<<"$BODY" | sort -k1,1nr | head -n "$3"
}

# types: the profile type IDs the server has, sorted.
types() { profile_types "$FROM" "$UNTIL"; }

# check WHAT GOT WANT
check() {
	[ "$2" = "$3" ] || fail "$1: got $2, want $3"
	note "$1: $2"
}

# ---- the reference reader of pprof files ------------------------------------------

cat >"$WORK/pprof_ref.py" <<'EOF'
# pprof_ref.py FILE...: totals and leaf-function self values per sample
# type, summed over the files, read from `go tool pprof -raw`.  Prints
# "total TYPE VALUE", "self TYPE VALUE FUNCTION" and "id TYPE
# TYPE:UNIT:PERIOD_TYPE:PERIOD_UNIT" lines (the profile type ID without
# its name).
import collections, re, subprocess, sys

totals = collections.Counter()
selfv = collections.defaultdict(collections.Counter)
ids = {}
for path in sys.argv[1:]:
    out = subprocess.run(["go", "tool", "pprof", "-raw", path], check=True,
                         capture_output=True, text=True).stdout.splitlines()
    i = out.index("Samples:")
    types = [t.split("/")[0] for t in out[i + 1].split()]
    period = next((l.split()[1:3] for l in out if l.startswith("PeriodType:")), ["", ""])
    for t in out[i + 1].split():
        ids[t.split("/")[0]] = ":".join(t.split("/", 1) + (period + ["", ""])[:2])
    samples, locs, section = [], {}, "samples"
    for line in out[i + 2:]:
        if line.startswith("Locations"):
            section = "locations"
            continue
        if line.startswith("Mappings"):
            break
        if section == "samples":
            m = re.match(r"^\s+([-\d ]+):((?: \d+)*)\s*$", line)
            if m:
                samples.append(([int(v) for v in m.group(1).split()],
                                [int(x) for x in m.group(2).split()]))
        else:
            m = re.match(r"^\s+(\d+): 0x[0-9a-f]+ (?:M=\d+ )?(\S+)", line)
            if m:
                locs[int(m.group(1))] = m.group(2)
    for vals, stack in samples:
        for t, v in zip(types, vals):
            totals[t] += v
            if stack:
                selfv[t][locs.get(stack[0], "?")] += v
for t, v in sorted(totals.items()):
    print("total", t, v)
    print("id", t, ids[t])
for t, c in sorted(selfv.items()):
    for f, v in c.items():
        print("self", t, v, f)
EOF

# ref FILE... : the reference lines for a set of pprof files.
ref_total() { awk -v t="$2" '$1 == "total" && $2 == t { print $3 }' "$1"; }
ref_top() { awk -v t="$2" '$1 == "self" && $2 == t && $3 > 0 { print $3, $4 }' "$1" | sort -k1,1nr | head -n "$3"; }

# ---- go -------------------------------------------------------------------------

note "go: building the client ($(go version | awk '{print $3}'))"
mkdir -p "$WORK/go" "$WORK/gopath" "$WORK/gocache" "$WORK/goprof"
cat >"$WORK/go/main.go" <<'EOF'
// goclient makes runtime/pprof profiles of its own work and sends them to
// /ingest exactly as pyroscope-go's upstream/remote does: the same
// mime/multipart calls, part and file names, sample_type_config JSON
// (upstream.SampleType, tag for tag) and query parameters.
//
//	goclient gen DIR            writes DIR/{cpu,heap,goroutine,mutex,block}.pb.gz
//	goclient send URL DIR NAME  sends them, one request each, as session.go does
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"sync"
	"time"
)

var sink int
var keep [][]byte

//go:noinline
func burnA(n int) int {
	x := 0
	for i := 0; i < n; i++ {
		x += i*7 ^ (x >> 3)
	}
	return x
}

//go:noinline
func burnB(n int) int { return burnA(n) + burnA(n/2) }

//go:noinline
func allocSmall() []byte { return make([]byte, 64) }

//go:noinline
func allocBig() []byte { return make([]byte, 32<<10) }

func write(dir, name string) {
	f, err := os.Create(filepath.Join(dir, name+".pb.gz"))
	if err != nil {
		panic(err)
	}
	if err := pprof.Lookup(name).WriteTo(f, 0); err != nil {
		panic(err)
	}
	f.Close()
}

func gen(dir string) {
	runtime.MemProfileRate = 1
	runtime.SetMutexProfileFraction(1)
	runtime.SetBlockProfileRate(1)
	f, _ := os.Create(filepath.Join(dir, "cpu.pb.gz"))
	pprof.StartCPUProfile(f)
	end := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(end) {
		sink += burnA(200000) + burnB(300000)
	}
	pprof.StopCPUProfile()
	f.Close()
	for i := 0; i < 2000; i++ {
		keep = append(keep, allocSmall())
		if i%10 == 0 {
			keep = append(keep, allocBig())
		}
	}
	runtime.GC()
	write(dir, "heap")
	var mu sync.Mutex
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 30; i++ {
				mu.Lock()
				time.Sleep(100 * time.Microsecond)
				sink += burnA(2000)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	ch := make(chan int)
	for g := 0; g < 4; g++ {
		go func() {
			for i := 0; i < 50; i++ {
				ch <- i
			}
		}()
	}
	for i := 0; i < 200; i++ {
		time.Sleep(50 * time.Microsecond)
		<-ch
	}
	write(dir, "mutex")
	write(dir, "block")
	park := make(chan struct{})
	for g := 0; g < 25; g++ {
		go func() { <-park }()
	}
	time.Sleep(50 * time.Millisecond)
	write(dir, "goroutine")
	close(park)
}

type SampleType struct {
	Units       string `json:"units,omitempty"`
	Aggregation string `json:"aggregation,omitempty"`
	DisplayName string `json:"display-name,omitempty"`
	Sampled     bool   `json:"sampled,omitempty"`
	Cumulative  bool   `json:"cumulative,omitempty"`
}

type job struct {
	file, units, agg string
	rate             int
	stc              map[string]*SampleType
}

var jobs = []job{
	{"cpu", "samples", "sum", 100, nil},
	{"heap", "", "", 100, map[string]*SampleType{
		"alloc_objects": {Units: "objects"},
		"alloc_space":   {Units: "bytes"},
		"inuse_space":   {Units: "bytes", Aggregation: "average"},
		"inuse_objects": {Units: "objects", Aggregation: "average"},
	}},
	{"goroutine", "goroutines", "average", 0, map[string]*SampleType{
		"goroutine": {DisplayName: "goroutines", Units: "goroutines", Aggregation: "average"},
	}},
	{"mutex", "", "", 0, map[string]*SampleType{
		"contentions": {DisplayName: "mutex_count", Units: "lock_samples"},
		"delay":       {DisplayName: "mutex_duration", Units: "lock_nanoseconds"},
	}},
	{"block", "", "", 0, map[string]*SampleType{
		"contentions": {DisplayName: "block_count", Units: "lock_samples"},
		"delay":       {DisplayName: "block_duration", Units: "lock_nanoseconds"},
	}},
}

func send(address, dir, name string) {
	now := time.Now()
	for _, j := range jobs {
		profile, err := os.ReadFile(filepath.Join(dir, j.file+".pb.gz"))
		if err != nil {
			panic(err)
		}
		body := &bytes.Buffer{}
		writer := multipart.NewWriter(body)
		fw, _ := writer.CreateFormFile("profile", "profile.pprof")
		_, _ = fw.Write(profile)
		if j.stc != nil {
			fw, _ = writer.CreateFormFile("sample_type_config", "sample_type_config.json")
			b, _ := json.Marshal(j.stc)
			_, _ = fw.Write(b)
		}
		writer.Close()
		u, _ := url.Parse(address)
		q := u.Query()
		q.Set("name", name)
		q.Set("from", strconv.FormatInt(now.Add(-10*time.Second).UnixNano(), 10))
		q.Set("until", strconv.FormatInt(now.UnixNano(), 10))
		q.Set("spyName", "gospy")
		q.Set("sampleRate", strconv.Itoa(j.rate))
		q.Set("units", j.units)
		q.Set("aggregationType", j.agg)
		u.Path = path.Join(u.Path, "ingest")
		u.RawQuery = q.Encode()
		req, _ := http.NewRequest(http.MethodPost, u.String(), body)
		req.Header.Set("Content-Type", writer.FormDataContentType())
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			panic(err)
		}
		rb, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			fmt.Fprintf(os.Stderr, "%s: HTTP %d %s\n", j.file, resp.StatusCode, rb)
			os.Exit(1)
		}
		fmt.Printf("%s: %s", j.file, rb)
	}
}

func main() {
	switch os.Args[1] {
	case "gen":
		gen(os.Args[2])
	case "send":
		send(os.Args[2], os.Args[3], os.Args[4])
	}
}
EOF
(cd "$WORK/go" && GOPATH="$WORK/gopath" GOCACHE="$WORK/gocache" GO111MODULE=off GOPROXY=off \
	go build -o goclient main.go) || fail "go build"
"$WORK/go/goclient" gen "$WORK/goprof"
# The name as pyroscope-go's semconv builds it: sorted labels, a session id.
GONAME="goapp{__session_id__=5f2d1a3c4b6e7f80,env=ci,otel.scope.name=com.grafana.pyroscope/go,process.runtime.name=go,process.runtime.version=$(go env GOVERSION)}"
"$WORK/go/goclient" send "$URL" "$WORK/goprof" "$GONAME" >&2 || fail "pyroscope-go's requests were refused"
SEL='{service_name="goapp"}'
# Pyroscope's IDs: heap is memory, goroutines is goroutines, mutex and block apart.
types | grep -E '^(process_cpu|memory|goroutines|mutex|block):' >"$WORK/go.types"
cat >"$WORK/go.want" <<'EOF'
block:contentions:count:contentions:count
block:delay:nanoseconds:contentions:count
goroutines:goroutine:count:goroutine:count
memory:alloc_objects:count:space:bytes
memory:alloc_space:bytes:space:bytes
memory:inuse_objects:count:space:bytes
memory:inuse_space:bytes:space:bytes
mutex:contentions:count:contentions:count
mutex:delay:nanoseconds:contentions:count
process_cpu:cpu:nanoseconds:cpu:nanoseconds
process_cpu:samples:count:cpu:nanoseconds
EOF
diff "$WORK/go.want" "$WORK/go.types" >&2 || fail "go: profile types differ from Pyroscope's (above)"
note "go: the 11 profile types are Pyroscope's"
for p in cpu heap goroutine mutex block; do
	python3 "$WORK/pprof_ref.py" "$WORK/goprof/$p.pb.gz" >"$WORK/go.$p.ref"
done
gocheck() { # FILE SAMPLE_TYPE PROFILE_TYPE
	local want got
	want=$(ref_total "$WORK/go.$1.ref" "$2")
	got=$(total "$3" "$SEL")
	check "go $1 $3 total" "$got" "$want"
	want=$(ref_top "$WORK/go.$1.ref" "$2" 1)
	got=$(top_self "$3" "$SEL" 1)
	check "go $1 $3 top frame" "$got" "$want"
}
gocheck cpu samples process_cpu:samples:count:cpu:nanoseconds
gocheck cpu cpu process_cpu:cpu:nanoseconds:cpu:nanoseconds
gocheck heap alloc_objects memory:alloc_objects:count:space:bytes
gocheck heap alloc_space memory:alloc_space:bytes:space:bytes
gocheck heap inuse_objects memory:inuse_objects:count:space:bytes
gocheck heap inuse_space memory:inuse_space:bytes:space:bytes
gocheck goroutine goroutine goroutines:goroutine:count:goroutine:count
gocheck mutex contentions mutex:contentions:count:contentions:count
gocheck mutex delay mutex:delay:nanoseconds:contentions:count
gocheck block contentions block:contentions:count:contentions:count
gocheck block delay block:delay:nanoseconds:contentions:count
[ "$(ref_total "$WORK/go.mutex.ref" delay)" != "$(ref_total "$WORK/go.block.ref" delay)" ] ||
	fail "go: the mutex and block profiles have the same totals; the test cannot tell them apart"
# Labels: the client's, pyroscope_spy, no __session_id__.
http POST /querier.v1.QuerierService/LabelNames -H 'Content-Type: application/json' \
	-d "{\"matchers\":[\"$(sed 's/"/\\"/g' <<<"$SEL")\"],\"start\":$((FROM * 1000)),\"end\":$((UNTIL * 1000))}"
for l in env otel.scope.name process.runtime.name pyroscope_spy service_name; do
	jq -e --arg l "$l" '.names | index($l)' <<<"$BODY" >/dev/null || fail "go: no label $l: $BODY"
done
jq -e '.names | index("__session_id__") | not' <<<"$BODY" >/dev/null || fail "go: __session_id__ stored"
note "go: labels $(jq -c .names <<<"$BODY")"

# ---- java ---------------------------------------------------------------------------

note "java: compiling and recording ($(java -version 2>&1 | head -n 1))"
mkdir -p "$WORK/java"
cat >"$WORK/java/Load.java" <<'EOF'
import java.util.ArrayList;
import java.util.concurrent.locks.LockSupport;

public class Load {
    static final Object lock = new Object();
    static volatile long sink;

    static long spin(long n) {
        long x = 0;
        for (long i = 0; i < n; i++) x += i * 31 ^ (x >>> 3);
        return x;
    }

    static void allocate() {
        ArrayList<byte[]> keep = new ArrayList<>();
        for (int i = 0; i < 2000; i++) {
            keep.add(new byte[1024 * (1 + i % 64)]);
            if (keep.size() > 100) keep.clear();
        }
        sink += keep.size();
    }

    static void contend() {
        synchronized (lock) {
            sink += spin(200_000);
        }
    }

    public static void main(String[] args) throws Exception {
        long end = System.nanoTime() + Long.parseLong(args[0]) * 1_000_000L;
        Thread[] ts = new Thread[4];
        for (int t = 0; t < ts.length; t++) {
            ts[t] = new Thread(() -> {
                while (System.nanoTime() < end) {
                    sink += spin(1_000_000);
                    allocate();
                    contend();
                    LockSupport.parkNanos(200_000);
                }
            }, "worker-" + t);
            ts[t].start();
        }
        for (Thread t : ts) t.join();
    }
}
EOF
cat >"$WORK/java/rec.jfc" <<'EOF'
<?xml version="1.0" encoding="UTF-8"?>
<configuration version="2.0" label="unhex-test">
  <event name="jdk.ExecutionSample"><setting name="enabled">true</setting><setting name="period">10 ms</setting></event>
  <event name="jdk.ObjectAllocationSample"><setting name="enabled">true</setting><setting name="throttle">1000/s</setting><setting name="stackTrace">true</setting></event>
  <event name="jdk.ObjectAllocationInNewTLAB"><setting name="enabled">true</setting><setting name="stackTrace">true</setting></event>
  <event name="jdk.ObjectAllocationOutsideTLAB"><setting name="enabled">true</setting><setting name="stackTrace">true</setting></event>
  <event name="jdk.JavaMonitorEnter"><setting name="enabled">true</setting><setting name="stackTrace">true</setting><setting name="threshold">0 ms</setting></event>
  <event name="jdk.ThreadPark"><setting name="enabled">true</setting><setting name="stackTrace">true</setting><setting name="threshold">0 ms</setting></event>
</configuration>
EOF
(cd "$WORK/java" && javac Load.java &&
	java -XX:StartFlightRecording=filename=rec.jfr,settings="$WORK/java/rec.jfc",dumponexit=true \
		Load 3000 >/dev/null 2>&1) || fail "java: compile or record"
# pyroscope-java's body: OkHttp's MultipartBody.FORM, a gzipped "jfr" part
# (no content type) and a gzipped LabelsSnapshot "labels" part.
python3 - "$WORK/java" <<'EOF'
import gzip, sys, uuid
d = sys.argv[1]
jfr = gzip.compress(open(d + "/rec.jfr", "rb").read(), 1)
# LabelsSnapshot{contexts: {1: {labels: {1: 2}}}, strings: {1: "controller", 2: "slow"}}
def v(x):
    o = bytearray()
    while x >= 0x80: o.append(x & 0x7f | 0x80); x >>= 7
    o.append(x); return bytes(o)
def ld(f, b): return v(f << 3 | 2) + v(len(b)) + b
def vi(f, x): return v(f << 3) + v(x)
ctx = ld(1, vi(1, 1) + vi(2, 2))
snap = ld(1, vi(1, 1) + ld(2, ctx)) + ld(2, vi(1, 1) + ld(2, b"controller")) + ld(2, vi(1, 2) + ld(2, b"slow"))
labels = gzip.compress(snap, 1)
b = str(uuid.uuid4()).encode()
body = b"--" + b + b"\r\n" + b'Content-Disposition: form-data; name="jfr"; filename="jfr"\r\n\r\n' + jfr + b"\r\n"
body += b"--" + b + b"\r\n" + b'Content-Disposition: form-data; name="labels"; filename="labels"\r\n'
body += b"Content-Type: application/x-protobuf\r\n\r\n" + labels + b"\r\n--" + b + b"--\r\n"
open(d + "/body", "wb").write(body)
open(d + "/boundary", "wb").write(b)
EOF
JNAME="javaapp{env=ci,otel.scope.name=com.grafana.pyroscope/java,process.runtime.name=OpenJDK Runtime Environment}"
T0=$(date +%s%N)
http POST "/ingest?name=$(jq -rn --arg n "$JNAME" '$n|@uri')&units=samples&aggregationType=sum&from=$((NOW - 10))&until=$NOW&spyName=javaspy&sampleRate=100&format=jfr" \
	-H "Content-Type: multipart/form-data; boundary=$(cat "$WORK/java/boundary")" \
	--data-binary @"$WORK/java/body"
expect_status 200 '"profiles":' "java: pyroscope-java's multipart JFR"
T1=$(date +%s%N)
JSIZE=$(stat -c %s "$WORK/java/rec.jfr")
note "java: $JSIZE bytes of JFR ($(stat -c %s "$WORK/java/body") bytes sent) ingested in $(((T1 - T0) / 1000000)) ms"
jfr print --json --stack-depth 2048 "$WORK/java/rec.jfr" >"$WORK/java/rec.json"
# The reference: events with a stack trace, summed as Pyroscope sums them.
jq -r '
def secs: sub("^PT"; "") | (if test("H") then (split("H")[0] | tonumber * 3600) else 0 end) as $h
  | sub("^[0-9.]*H"; "") | (if test("M") then (split("M")[0] | tonumber * 60) else 0 end) as $m
  | sub("^[0-9.]*M"; "") | (sub("S$"; "") | if . == "" then 0 else tonumber end) + $h + $m;
def frame: .values.stackTrace.frames[0].method | "\(.type.name).\(.name)";
[.recording.events[] | select(.values.stackTrace != null)] as $e
| def of(t): [$e[] | select(.type == t)];
  def line(id; xs; v): "\(id) \(xs | map(v) | add // 0)",
                       (xs | group_by(frame) | map({f: (.[0] | frame), v: (map(v) | add)})
                        | sort_by(-.v) | .[0] | "top \(id) \(.v) \(.f)");
  line("process_cpu:cpu:nanoseconds:cpu:nanoseconds";
       [of("jdk.ExecutionSample")[] | select(.values.state != "STATE_SLEEPING")]; 10000000),
  line("memory:alloc_sample_objects:count:space:bytes"; of("jdk.ObjectAllocationSample"); 1),
  line("memory:alloc_sample_bytes:bytes:space:bytes"; of("jdk.ObjectAllocationSample"); .values.weight),
  line("memory:alloc_in_new_tlab_objects:count:space:bytes"; of("jdk.ObjectAllocationInNewTLAB"); 1),
  line("memory:alloc_in_new_tlab_bytes:bytes:space:bytes"; of("jdk.ObjectAllocationInNewTLAB"); .values.tlabSize),
  line("memory:alloc_outside_tlab_objects:count:space:bytes"; of("jdk.ObjectAllocationOutsideTLAB"); 1),
  line("memory:alloc_outside_tlab_bytes:bytes:space:bytes"; of("jdk.ObjectAllocationOutsideTLAB"); .values.allocationSize),
  line("mutex:contentions:count:mutex:count"; of("jdk.JavaMonitorEnter"); 1),
  line("mutex:delay:nanoseconds:mutex:count"; of("jdk.JavaMonitorEnter"); .values.duration | secs * 1e9 | round),
  line("block:contentions:count:block:count"; of("jdk.ThreadPark"); 1),
  line("block:delay:nanoseconds:block:count"; of("jdk.ThreadPark"); .values.duration | secs * 1e9 | round)
' "$WORK/java/rec.json" >"$WORK/java/ref"
JSEL='{service_name="javaapp"}'
while read -r id want; do
	[ "$id" = top ] && continue
	[ "$want" != 0 ] || { note "java: no $id events in this recording"; continue; }
	check "java $id total" "$(total "$id" "$JSEL")" "$want"
done <"$WORK/java/ref"
while read -r _ id v f; do
	[ "$v" != 0 ] || continue
	got=$(top_self "$id" "$JSEL" 1)
	# Frame names are "<class>.<method>" with the class in its internal form.
	check "java $id top frame" "$got" "$v $f"
done < <(grep '^top ' "$WORK/java/ref" | grep -v 'null$')

# ---- legacy formats -------------------------------------------------------------------

python3 - "$WORK" <<'EOF'
import json, sys
w = sys.argv[1]
stacks = [("main;net/http.(*conn).serve;handler;work", 37), ("main;net/http.(*conn).serve;handler", 5),
          ("main;gc;mark", 11), ("main;worker;spin;spin", 23), ("main;worker", 2)]
open(w + "/folded.txt", "w").write("".join("%s %d\n" % s for s in stacks))
open(w + "/lines.txt", "w").write("".join((s + "\n") * n for s, n in stacks))
def uv(x):
    o = bytearray()
    while x >= 0x80: o.append(x & 0x7f | 0x80); x >>= 7
    o.append(x); return bytes(o)
# The first Go agent's transport trie: a radix trie of the stack strings,
# split at common byte prefixes, serialized in preorder.
class Node:
    def __init__(s, name): s.name, s.value, s.kids = name, 0, []
def insert(t, key, val):
    while key:
        lead = next((k for k in t.kids if k.name[:1] == key[:1]), None)
        if lead is None:
            n = Node(key); n.value = val; t.kids.append(n); t.kids.sort(key=lambda k: k.name); return
        i = 0
        while i < len(key) and i < len(lead.name) and key[i] == lead.name[i]: i += 1
        if i == len(lead.name):
            t, key = lead, key[i:]; continue
        mid = Node(lead.name[:i]); lead.name = lead.name[i:]; mid.kids = [lead]
        t.kids[t.kids.index(lead)] = mid; t, key = mid, key[i:]
    t.value += val
def ser(t):
    return uv(len(t.name)) + t.name + uv(t.value) + uv(len(t.kids)) + b"".join(ser(k) for k in t.kids)
root = Node(b"")
for s, n in stacks: insert(root, s.encode(), n)
open(w + "/trie.bin", "wb").write(ser(root))
# A serialized tree: the root, then each node's children in preorder.
tree = {}
for s, n in stacks:
    node = tree
    for f in s.split(";"): node = node.setdefault(f, {"": 0})
    node[""] = node.get("", 0) + n
def tser(name, node):
    kids = [(k, v) for k, v in node.items() if k != ""]
    return uv(len(name)) + name + uv(node.get("", 0)) + uv(len(kids)) + b"".join(tser(k.encode(), v) for k, v in kids)
open(w + "/tree.bin", "wb").write(tser(b"", dict(tree, **{"": 0})))
# speedscope: one sampled profile in milliseconds.
frames = sorted({f for s, _ in stacks for f in s.split(";")})
ix = {f: i for i, f in enumerate(frames)}
doc = {"$schema": "https://www.speedscope.app/file-format-schema.json",
       "shared": {"frames": [{"name": f} for f in frames]},
       "profiles": [{"type": "sampled", "name": "main thread", "unit": "milliseconds",
                     "startValue": 0, "endValue": 100,
                     "samples": [[ix[f] for f in s.split(";")] for s, _ in stacks],
                     "weights": [n for _, n in stacks]}],
       "name": "ci", "exporter": "test"}
open(w + "/speedscope.json", "w").write(json.dumps(doc))
EOF
LSUM=$(python3 -c 'print(37+5+11+23+2)')
# legacy WHAT PARAMS FILE [curl args...]: FILE sent to /ingest?PARAMS over the
# last 10 s is stored as one profile.
legacy() {
	local what=$1 params=$2 file=$3
	shift 3
	http POST "/ingest?$params&from=$((NOW - 10))&until=$NOW" "$@" --data-binary @"$WORK/$file"
	expect_status 200 '"profiles":1' "legacy: $what"
}
# pyroscope-rs 0.5 (pyspy, rbspy): folded text, binary/octet-stream, 100 Hz.
legacy "folded (pyroscope-rs)" "name=pyapp%7Benv%3Dci%7D&format=folded&sampleRate=100&spyName=pyspy" \
	folded.txt -H 'Content-Type: binary/octet-stream'
check "legacy folded total" "$(total "$CPU" '{service_name="pyapp"}')" "$((LSUM * 10000000))"
check "legacy folded top" "$(top_self "$CPU" '{service_name="pyapp"}' 1)" "370000000 work"
legacy lines "name=linesapp.cpu&format=lines&sampleRate=100" lines.txt
check "legacy lines total" "$(total "$CPU" '{service_name="linesapp"}')" "$((LSUM * 10000000))"
# The first Go agent: the trie named by its content type alone, itimer at 100 Hz.
legacy trie "name=trieapp.itimer&sampleRate=100&spyName=gospy" trie.bin \
	-H 'Content-Type: binary/octet-stream+trie'
check "legacy trie total" "$(total "$CPU" '{service_name="trieapp"}')" "$((LSUM * 10000000))"
check "legacy trie top" "$(top_self "$CPU" '{service_name="trieapp"}' 1)" "370000000 work"
legacy tree "name=treeapp.wall&format=tree&sampleRate=100" tree.bin
check "legacy tree total" "$(total wall:wall:nanoseconds:cpu:nanoseconds '{service_name="treeapp"}')" \
	"$((LSUM * 10000000))"
legacy speedscope "name=ssapp&format=speedscope" speedscope.json -H 'Content-Type: application/json'
check "legacy speedscope total (ms -> ns)" "$(total "$CPU" '{service_name="ssapp"}')" "$((LSUM * 1000000))"
# Kinds without a period keep Pyroscope's empty parts.
legacy "folded without a format (Pyroscope's default)" "name=memapp.inuse_space" folded.txt
types | grep -qx 'memory:inuse_space:bytes::' || fail "legacy: memory:inuse_space:bytes:: not listed"
# ... and are queried by them (not time-based: the values as sent).
check "legacy memory total (empty parts)" "$(total 'memory:inuse_space:bytes::' '{service_name="memapp"}')" "$LSUM"
check "legacy memory top (empty parts)" "$(top_self 'memory:inuse_space:bytes::' '{service_name="memapp"}' 1)" "37 work"

# ---- node -----------------------------------------------------------------------------

if ! command -v npm >/dev/null 2>&1 || ! command -v node >/dev/null 2>&1; then
	note "node: SKIPPED (no node/npm installed)"
elif ! (cd "$WORK" && echo '{"name":"t","version":"1.0.0","private":true}' >package.json &&
	timeout 300 npm install --no-audit --no-fund --ignore-scripts @pyroscope/nodejs@0.6 \
		>"$WORK/npm.log" 2>&1); then
	note "node: SKIPPED (npm could not install @pyroscope/nodejs: $(tail -n 1 "$WORK/npm.log"))"
else
	mkdir -p "$WORK/nodeprof"
	cat >"$WORK/client.mjs" <<'EOF'
// Profiles itself with @pyroscope/nodejs; every upload's pprof is kept on
// its way out (the request itself is the SDK's, untouched).  The SDK's
// releases send the gzipped pprof as the body (format=pprof), its newer
// sources as the "profile" part of a multipart form: both are kept.
import fs from 'node:fs';
import Pyroscope from '@pyroscope/nodejs';
const [url, dir] = process.argv.slice(2);
const realFetch = globalThis.fetch;
let n = 0;
globalThis.fetch = async (u, opts) => {
  const b = opts.body;
  const bytes = typeof b.get === 'function' ? Buffer.from(await b.get('profile').arrayBuffer())
                                            : Buffer.from(b);
  const kind = new URL(u).searchParams.has('sampleRate') ? 'wall' : 'heap';
  fs.writeFileSync(`${dir}/${kind}-${n++}.pb`, bytes);
  const r = await realFetch(u, opts);
  if (!r.ok) { console.error(`${kind}: HTTP ${r.status} ${await r.text()}`); process.exit(1); }
  return r;
};
function spin(ms) { const end = Date.now() + ms; let x = 0; while (Date.now() < end) x += Math.sqrt(x + 1); return x; }
function churn() { const a = []; for (let i = 0; i < 20000; i++) a.push({ i, s: 'x'.repeat(64) }); return a.length; }
Pyroscope.init({ serverAddress: url, appName: 'nodeapp', flushIntervalMs: 1000, tags: { env: 'ci' } });
Pyroscope.start();
Pyroscope.startHeapProfiling();
const keep = [];
const end = Date.now() + 3000;
while (Date.now() < end) { spin(50); keep.push(churn()); await new Promise((r) => setTimeout(r, 1)); }
await Pyroscope.stop();
EOF
	(cd "$WORK" && node client.mjs "$URL" "$WORK/nodeprof") || fail "node: the SDK's uploads were refused"
	NSEL='{service_name="nodeapp"}'
	ls "$WORK"/nodeprof/wall-*.pb >/dev/null 2>&1 || fail "node: the SDK sent no wall profile"
	python3 "$WORK/pprof_ref.py" "$WORK"/nodeprof/wall-*.pb >"$WORK/node.wall.ref"
	NT=$(types)
	# Pyroscope's names: wall for the wall profile, memory for the heap.
	for t in $(awk '$1 == "total" { print $2 }' "$WORK/node.wall.ref"); do
		id=wall:$(awk -v t="$t" '$1 == "id" && $2 == t { print $3 }' "$WORK/node.wall.ref")
		grep -qx "$id" <<<"$NT" || fail "node: no profile type $id (have: $NT)"
		check "node $id total" "$(total "$id" "$NSEL")" "$(ref_total "$WORK/node.wall.ref" "$t")"
	done
	if ls "$WORK"/nodeprof/heap-*.pb >/dev/null 2>&1; then
		python3 "$WORK/pprof_ref.py" "$WORK"/nodeprof/heap-*.pb >"$WORK/node.heap.ref"
		for t in $(awk '$1 == "total" { print $2 }' "$WORK/node.heap.ref"); do
			id=memory:$(awk -v t="$t" '$1 == "id" && $2 == t { print $3 }' "$WORK/node.heap.ref")
			grep -qx "$id" <<<"$NT" || fail "node: no profile type $id (have: $NT)"
			# The heap is a snapshot per upload: the merge adds them up.
			check "node $id total" "$(total "$id" "$NSEL")" "$(ref_total "$WORK/node.heap.ref" "$t")"
		done
	fi
fi

stop_server
note "ingest_clients: ok"

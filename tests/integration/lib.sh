# lib.sh - shared helpers of the integration tests: a scratch directory, the
# real `unhex serve` on 127.0.0.1:0 with a fresh data dir, curl wrappers and
# assertions.  Sourced by the test scripts; everything started here is
# stopped and removed by the EXIT trap.
#
# Environment: UNHEX (required), PERF2PPROF, PPROFINFO, WORKLOAD (per test).

set -euo pipefail

: "${UNHEX:?UNHEX must point to the unhex binary}"
WORK=$(mktemp -d /tmp/unhex-it.XXXXXX)
SERVER_PID=
SERVER_N=0
# The profile type ID of the CPU profiles the workload generator writes
# (Pyroscope's name for Go's cpu profile), which most tests query.
CPU='process_cpu:cpu:nanoseconds:cpu:nanoseconds'

cleanup() {
	local rc=$?
	if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -KILL "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	if [ $rc -ne 0 ]; then
		for f in "$WORK"/server.*.log; do
			[ -f "$f" ] || continue
			echo "---- $f (last 30 lines)" >&2
			tail -n 30 "$f" >&2
		done
	fi
	rm -rf "$WORK"
	exit $rc
}
trap cleanup EXIT

fail() {
	echo "FAIL: $*" >&2
	exit 1
}

note() {
	echo "-- $*" >&2
}

# A developer's shell may name debuginfod servers (Fedora and Ubuntu set
# DEBUGINFOD_URLS in every login shell): `unhex serve` would take them as
# its default upstream.  A test that wants an upstream passes
# --debuginfod-urls.
unset DEBUGINFOD_URLS

# free_port [N]: N (default 1) distinct TCP ports of 127.0.0.1 that nothing
# listens on right now, one per line.  They lie below the kernel's
# ephemeral range, so no client socket takes one before its server binds
# it; another test's server still may, so a caller retries where it can.
free_port() {
	python3 - "${1:-1}" <<'EOF'
import random, socket, sys
lo = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
lo, hi = (10000, lo) if lo > 11000 else (lo, 65536)
held = []
while len(held) < int(sys.argv[1]):
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", random.randrange(lo, hi)))
        held.append(s)
    except OSError:
        s.close()
print("\n".join(str(s.getsockname()[1]) for s in held))
EOF
}

# need VAR...: fails unless every VAR names an executable.
need() {
	local var
	for var in "$@"; do
		[ -n "${!var:-}" ] && [ -x "${!var}" ] ||
			fail "$var is not set to an executable (${!var:-unset})"
	done
}

# need_cmd CMD [HINT]: fails unless the command CMD is on PATH; HINT says
# where it comes from ("package protobuf-compiler").
need_cmd() {
	command -v "$1" >/dev/null || fail "$1 is not installed${2:+ ($2)}"
}

# need_protoc: fails unless protoc is installed; sets PROTO_DIR to the
# tree's proto/ (the messages protoc encodes and decodes, as connect_go).
need_protoc() {
	need_cmd protoc "package protobuf-compiler"
	PROTO_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/../../proto" && pwd)
}

# need_promtool: installs promtool (Debian package prometheus) when it is
# missing, as CI's .ci/deps.sh would.
need_promtool() {
	local sudo=
	command -v promtool >/dev/null && return 0
	note "installing promtool (Debian package prometheus)"
	[ "$(id -u)" -eq 0 ] || sudo=sudo
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
		prometheus >/dev/null 2>&1 ||
		{ $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive \
			apt-get install -y -qq --no-install-recommends prometheus >/dev/null; } ||
		fail "cannot install promtool (apt-get install prometheus)"
}

# start_server DATA_DIR [serve flags...]: sets SERVER_PID, PORT, URL.
start_server() {
	local data=$1 out line i
	shift
	SERVER_N=$((SERVER_N + 1))
	out="$WORK/server.$SERVER_N.out"
	"$UNHEX" serve --data "$data" --listen 127.0.0.1:0 "$@" \
		>"$out" 2>"$WORK/server.$SERVER_N.log" &
	SERVER_PID=$!
	for i in $(seq 1 600); do
		line=$(head -n 1 "$out" 2>/dev/null || true)
		if [[ $line =~ ^unhex:\ listening\ on\ http://127\.0\.0\.1:([0-9]+)$ ]]; then
			PORT=${BASH_REMATCH[1]}
			URL="http://127.0.0.1:$PORT"
			return 0
		fi
		kill -0 "$SERVER_PID" 2>/dev/null || {
			wait "$SERVER_PID" || true
			SERVER_PID=
			fail "server exited before listening: $(cat "$WORK/server.$SERVER_N.log")"
		}
		sleep 0.1
	done
	fail "server did not print its listening line in 60 s"
}

# stop_server: SIGTERM, and the exit status must be 0 (LeakSanitizer
# reports make it non-zero under ASan).
stop_server() {
	local rc=0
	kill -TERM "$SERVER_PID"
	wait "$SERVER_PID" || rc=$?
	SERVER_PID=
	[ $rc -eq 0 ] || fail "server exited with $rc after SIGTERM: $(tail -n 40 "$WORK/server.$SERVER_N.log")"
}

# kill_server: kill -9, no questions asked.
kill_server() {
	kill -KILL "$SERVER_PID"
	wait "$SERVER_PID" 2>/dev/null || true
	SERVER_PID=
}

# http METHOD PATH [curl args...]: sets STATUS and BODY.
http() {
	local method=$1 path=$2
	shift 2
	STATUS=$(curl -sS -o "$WORK/body" -w '%{http_code}' -X "$method" "$@" "$URL$path") ||
		fail "curl $method $path failed"
	BODY=$(cat "$WORK/body")
}

# expect_status CODE SUBSTRING WHAT: checks the last http call.
expect_status() {
	local code=$1 sub=$2 what=$3
	[ "$STATUS" = "$code" ] || fail "$what: expected HTTP $code, got $STATUS: $BODY"
	if [ -n "$sub" ]; then
		case "$BODY" in
		*"$sub"*) ;;
		*) fail "$what: HTTP $code body lacks \"$sub\": $BODY" ;;
		esac
	fi
	note "$what: HTTP $STATUS $(head -c 160 <<<"$BODY" | tr "\n" " ")"
}

# burst N TENANT PATH NAME [MAX_TIME]: N GETs of PATH as TENANT sent at once
# in the background, each body into $WORK/NAME.<i> and its HTTP status
# into $WORK/NAME.<i>.code (i from 1); burst_wait WHAT waits for them all.
burst() {
	local i
	BURST_PIDS=()
	for i in $(seq 1 "$1"); do
		curl -sS -o "$WORK/$4.$i" -w '%{http_code}' --max-time "${5:-60}" \
			-H "X-Scope-OrgID: $2" "$URL$3" >"$WORK/$4.$i.code" &
		BURST_PIDS+=($!)
	done
}

burst_wait() {
	local p
	for p in "${BURST_PIDS[@]}"; do wait "$p" || fail "$1 did not finish"; done
}

# tenant_stats TENANT: the server's /api/v1/stats JSON for TENANT.
tenant_stats() {
	http GET /api/v1/stats -H "X-Scope-OrgID: $1"
	[ "$STATUS" = 200 ] || fail "stats for $1: HTTP $STATUS $BODY"
	echo "$BODY"
}

# counts JSON: the stats without the byte sizes (which change with flushes),
# where profiles are (head or blocks, which changes with sealing) and the
# server's bucket requests (with --storage.backend s3).
counts() {
	jq -cS 'del(.bytes, .head_profiles, .blocks, .retention, .objstore)' <<<"$1"
}

# wait_stats FILTER [TRIES]: polls the tenant anonymous's stats every 0.2 s
# until the jq FILTER holds of them (TRIES times at most, 150 unless
# given); the last stats are in S either way, for the caller's check.
wait_stats() {
	local i
	for i in $(seq 1 "${2:-150}"); do
		S=$(tenant_stats anonymous)
		jq -e "$1" <<<"$S" >/dev/null && return 0
		sleep 0.2
	done
	return 0
}

# wait_settled N [LEVELS]: until the tenant anonymous has N blocks (whose
# sorted levels are the JSON array LEVELS, when given), twice 2 s apart
# (two minutes at most).  A pass seals its ranges one after another and
# compacts only after: the count alone may pass through N while sealing,
# LEVELS names the final shape.
wait_settled() {
	local want=$1 levels=${2:-null} i s
	local settled='.blocks.count == $n and ($l == null or ([.blocks.list[].level] | sort) == $l)'
	for i in $(seq 1 600); do
		s=$(tenant_stats anonymous)
		if jq -e --argjson n "$want" --argjson l "$levels" "$settled" <<<"$s" >/dev/null; then
			sleep 2
			s=$(tenant_stats anonymous)
			jq -e --argjson n "$want" --argjson l "$levels" "$settled" <<<"$s" >/dev/null && return 0
		fi
		sleep 0.2
	done
	fail "blocks did not settle at $want${2:+ $2}: $(jq -c '.blocks | {count, list: [.list[] | {level, range_start_ns}]}' <<<"$s")"
}

# pending_binaries JSON: how many binaries of a GET
# /api/v1/debuginfo?unsymbolizable=1 answer the background check has not
# looked up yet.
pending_binaries() {
	jq '[.[] | select(.status == "pending")] | length' <<<"$1"
}

# field JSON NAME
field() {
	jq -r ".$2" <<<"$1"
}

# profile_to_pprof OUT CMD [ARGS...]: runs CMD under perf record with DWARF
# call graphs, or under the gperftools CPU profiler when the kernel refuses
# perf, and converts the recording with perf2pprof into the raw-address pprof
# OUT (gzipped; its .pb.gz suffix is replaced for the intermediate files).
profile_to_pprof() {
	local out=$1 base=${1%.pb.gz} lib
	shift
	if perf record -q -F 999 -g --call-graph dwarf -o "$base.perf.data" "$@" \
		>/dev/null 2>"$base.perf.err" && [ -s "$base.perf.data" ]; then
		note "profiled $(basename "$1") with perf"
		"$PERF2PPROF" -i "$base.perf.data" -o "$out"
	else
		note "perf refused ($(head -c 200 "$base.perf.err")); using the gperftools profiler"
		lib=$(ls /usr/lib/*/libprofiler.so* /usr/lib/libprofiler.so* 2>/dev/null | sed -n 1p || true)
		[ -n "$lib" ] || fail "neither perf nor libprofiler.so is usable"
		LD_PRELOAD="$lib" CPUPROFILE="$base.cpu.prof" CPUPROFILE_FREQUENCY=999 "$@" >/dev/null
		"$PERF2PPROF" --gperftools "$base.cpu.prof" -o "$out"
	fi
	[ -s "$out" ] || fail "perf2pprof wrote no profile to $out"
}

# section_of ELF VADDR: the name of the section holding VADDR, if any.
section_of() {
	local name type addr off size rest
	while read -r name type addr off size rest; do
		[[ $addr =~ ^[0-9a-f]+$ && $size =~ ^[0-9a-f]+$ ]] || continue
		if ((0x$addr <= $2 && $2 < 0x$addr + 0x$size)); then
			echo "$name"
			return
		fi
	done < <(readelf -SW "$1" | sed -n 's/^ *\[ *[0-9]*\] *//p')
}

# check_hex PROG RENDER_JSON: a frame of $WORK/PROG may stay hex only where the
# debug info knows nothing either (PLT stubs): llvm-symbolizer says "??".
check_hex() {
	local p=$1 body=$2 off seg poff pvaddr va fn sec
	seg=$(readelf -lW "$WORK/$p" | awk '$1=="LOAD" && $7 ~ /E/ {print $2, $3; exit}')
	poff=$((${seg%% *}))
	pvaddr=$((${seg##* }))
	for off in $(jq -r '.flamebearer.names[]' <<<"$body" | sed -n "s/^$p\.stripped+0x//p"); do
		va=$((0x$off - poff + pvaddr))
		sec=$(section_of "$WORK/$p" "$va")
		fn=$(llvm-symbolizer --obj="$WORK/$p" "$(printf '0x%x' "$va")" | head -1)
		case "$sec" in .plt*) fn="??" ;; esac
		[ "$fn" = "??" ] || fail "$p+0x$off ($sec) stayed hex, but llvm-symbolizer names it $fn"
		note "$p+0x$off stays hex: in $sec, no function there"
	done
}

# start_debuginfod DIR BUILD_ID...: a real elfutils debuginfod on loopback
# serving the ELF files of DIR (-F scan); returns once every BUILD_ID is
# served as debuginfo.  Sets DPID, DPORT, DURL.  The caller's EXIT trap must
# call stop_debuginfod (the lib's cleanup does not know about it).
# DEBUGINFOD_WAIT=executable waits for the executables instead (binaries
# without debug info are served only as such).
DPID=
start_debuginfod() {
	local dir=$1 id code i try kind=${DEBUGINFOD_WAIT:-debuginfo}
	shift
	# Another test's server may take the port first: a debuginfod that
	# cannot bind exits, and the next try takes another port.
	for try in 1 2 3 4 5; do
		DPORT=$(free_port)
		debuginfod -F "$dir" -p "$DPORT" -d "$WORK/debuginfod.$DPORT.sqlite" \
			>"$WORK/debuginfod.$DPORT.log" 2>&1 &
		DPID=$!
		for i in $(seq 1 50); do
			kill -0 "$DPID" 2>/dev/null || break
			grep -q "started http server on" "$WORK/debuginfod.$DPORT.log" && break 2
			sleep 0.1
		done
		kill -0 "$DPID" 2>/dev/null && break
		note "debuginfod could not start on $DPORT: $(tail -1 "$WORK/debuginfod.$DPORT.log")"
	done
	DURL="http://127.0.0.1:$DPORT"
	for id in "$@"; do
		code=
		for i in $(seq 1 150); do
			code=$(curl -s -o /dev/null -w '%{http_code}' "$DURL/buildid/$id/$kind" || true)
			[ "$code" = 200 ] && break
			kill -0 "$DPID" 2>/dev/null ||
				fail "debuginfod exited: $(tail -5 "$WORK/debuginfod.$DPORT.log")"
			sleep 0.2
		done
		[ "$code" = 200 ] || fail "debuginfod on $DPORT does not serve $id's $kind (HTTP $code)"
	done
	note "debuginfod on port $DPORT serves $*"
}

stop_debuginfod() {
	if [ -n "$DPID" ]; then
		kill "$DPID" 2>/dev/null || true
		wait "$DPID" 2>/dev/null || true
		DPID=
	fi
}

# skip_test REASON: ends the test as skipped (exit 77, CTest's SKIP_RETURN_CODE).
skip_test() {
	note "$1: skipped"
	trap - EXIT
	rm -rf "$WORK"
	exit 77
}

# need_go_perf: what a test of Go programs under perf needs: PERF2PPROF and
# PPROFSTRIP, GO set to a working Go toolchain ($GO, else go on PATH), and
# perf able to record here; skips the test (77) without the last two.
need_go_perf() {
	need PERF2PPROF
	need PPROFSTRIP
	GO=${GO:-$(command -v go || true)}
	[ -n "$GO" ] && "$GO" version >/dev/null 2>&1 ||
		skip_test "no working go toolchain (package golang-go)"
	perf record -q -o "$WORK/probe.data" -- true >/dev/null 2>&1 ||
		skip_test "perf cannot record here"
}

# go_spin_program: the Go source of a program that runs spin(x uint64)
# uint64 (defined on stdin, with its helpers; no imports of its own) in a
# loop in two goroutines until the process has used argv[1] seconds of CPU
# time (both goroutines count), like the C programs above; with argv[2],
# the Go runtime writes its CPU profile there.  main.worker calls spin.
go_spin_program() {
	cat <<'EOF'
package main

import (
	"fmt"
	"os"
	"runtime/pprof"
	"strconv"
	"sync"
	"syscall"
)

EOF
	cat
	cat <<'EOF'

// cpuSeconds is the process's CPU time (user + system), not wall time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

//go:noinline
func worker(id int, secs float64, out *uint64, wg *sync.WaitGroup) {
	defer wg.Done()
	x := uint64(id)
	for cpuSeconds() < secs {
		x = spin(x)
	}
	*out = x
}

func main() {
	secs, _ := strconv.ParseFloat(os.Args[1], 64)
	if len(os.Args) > 2 {
		f, err := os.Create(os.Args[2])
		if err != nil {
			panic(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	var wg sync.WaitGroup
	res := make([]uint64, 2)
	for i := range res {
		wg.Add(1)
		go worker(i, secs, &res[i], &wg)
	}
	wg.Wait()
	fmt.Println(res[0] ^ res[1])
}
EOF
}

# go_build_with_id SRC OUT [LDFLAGS]: builds the Go file SRC into OUT ($GO,
# caches in $WORK) with a GNU build ID, the SHA-1 of SRC, which it prints.
go_build_with_id() {
	local src=$1 out=$2 ldflags=${3:-} h id
	h=$(sha1sum "$src" | cut -c1-40)
	(cd "$(dirname "$src")" && GOCACHE="$WORK/gocache" GOPATH="$WORK/gopath" \
		GOFLAGS=-buildvcs=false GO111MODULE=off \
		"$GO" build -ldflags="$ldflags -B 0x$h" -o "$out" "$(basename "$src")") ||
		fail "go build of $src failed"
	id=$(build_id "$out")
	[ "$id" = "$h" ] || fail "$out has build ID '$id', not $h"
	echo "$id"
}

# go_profiles BIN: three CPU profiles of the Go program BIN (go_spin_program,
# run for 3 s of CPU time each), in $WORK: fp.pb.gz (perf --call-graph fp,
# raw return addresses), fpcall.pb.gz (the same, callers moved into their
# call instruction) and goruntime.pb.gz (the Go runtime's own profile,
# goruntime.named.pprof, with its names removed).
go_profiles() {
	perf record -q -F 999 --call-graph fp -o "$WORK/fp.data" "$1" 3 \
		>/dev/null 2>"$WORK/perf.err" || fail "perf record: $(head -c 300 "$WORK/perf.err")"
	"$PERF2PPROF" -i "$WORK/fp.data" -o "$WORK/fp.pb.gz" --quiet
	"$PERF2PPROF" -i "$WORK/fp.data" -o "$WORK/fpcall.pb.gz" --quiet --callers-in-call
	"$1" 3 "$WORK/goruntime.named.pprof" >/dev/null
	"$PPROFSTRIP" "$WORK/goruntime.named.pprof" "$WORK/goruntime.pb.gz"
}

# ingest_go_profiles PREFIX: go_profiles' three files to $URL as the
# services PREFIXfp, PREFIXfpcall and PREFIXgoruntime.
ingest_go_profiles() {
	local p
	for p in fp fpcall goruntime; do
		"$UNHEX" ingest --server "$URL" --name "$1$p.cpu" "$WORK/$p.pb.gz" >/dev/null ||
			fail "ingest of $p"
	done
}

# pprof_traces FILE: one line per stack of a pprof file, "value<TAB>leaf;...;root",
# from `go tool pprof -traces` ($GO; inline markers dropped, inline frames
# kept; the first sample type).
pprof_traces() {
	"$GO" tool pprof -traces "$1" 2>/dev/null | awk '
		/^-+\+-+$/ { if (s != "") print v "\t" s; s = ""; v = ""; next }
		/^ +[0-9.]+[a-zµ]*s? +[^ ]/ && v == "" && s == "" { v = $1; $1 = ""; sub(/^ +/, ""); s = $0; next }
		v != "" { sub(/^ +/, ""); sub(/ \(inline\)$/, ""); s = s ";" $0 }
		END { if (s != "") print v "\t" s }' | sed 's/ (inline)//g'
}

# export_traces SERVICE OUT: waits until the cpu profiles of SERVICE on $URL
# ($FROM..$UNTIL) are symbolized, exports them (/api/v1/pprof) to OUT.pb.gz
# and writes their pprof_traces to OUT.traces; fails when there are none.
export_traces() {
	local q
	q=$(selector "$(cpu_type "$1")" "$1")
	wait_symbolized "$q" "$FROM" "$UNTIL"
	curl -sS -o "$2.pb.gz" "$URL/api/v1/pprof?query=$q&from=$FROM&until=$UNTIL" ||
		fail "pprof export of $1"
	pprof_traces "$2.pb.gz" >"$2.traces"
	[ -s "$2.traces" ] || fail "$1: no stacks in the export"
}

# split_debug BIN: BIN's debug info alone in BIN.debug (objcopy
# --only-keep-debug) and BIN without symbols or debug info in BIN.stripped,
# as distributions ship them.
split_debug() {
	objcopy --only-keep-debug "$1" "$1.debug"
	cp "$1" "$1.stripped"
	strip --strip-all "$1.stripped"
}

# build_id ELF: the GNU build ID of ELF, in hex.
build_id() {
	readelf -n "$1" 2>/dev/null | awk '/Build ID/{print $3; exit}'
}

# cpu_type SERVICE: the cpu profile type (__profile_type__) of SERVICE on $URL.
cpu_type() {
	http GET "/pyroscope/label-values?label=__profile_type__&match%5B%5D=%7Bservice_name%3D%22$1%22%7D"
	jq -r '.[]' <<<"$BODY" | grep -m1 ':cpu:nanoseconds' || jq -r '.[0]' <<<"$BODY"
}

# profile_types FROM UNTIL: the profile type IDs the server has between
# FROM and UNTIL (seconds), sorted.
profile_types() {
	http POST /querier.v1.QuerierService/ProfileTypes -H 'Content-Type: application/json' \
		-d "{\"start\":$(($1 * 1000)),\"end\":$(($2 * 1000))}"
	[ "$STATUS" = 200 ] || fail "ProfileTypes: HTTP $STATUS $BODY"
	jq -r '.profileTypes[].ID' <<<"$BODY" | sort
}

# render_total QUERY FROM UNTIL: the merged total of QUERY between FROM and
# UNTIL (seconds) by /pyroscope/render ("" when absent).
render_total() {
	http GET /pyroscope/render -G --data-urlencode "query=$1" -d "from=$2" -d "until=$3"
	[ "$STATUS" = 200 ] || fail "render $1: HTTP $STATUS $BODY"
	jq -r '.flamebearer.numTicks' <<<"$BODY"
}

# proto_file TYPE: the file of proto/ that defines the message TYPE.
proto_file() {
	case "$1" in querier.*) echo querier.proto ;; types.*) echo types.proto ;;
	settings.*) echo settings.proto ;; debuginfo.*) echo debuginfo.proto ;;
	perftools.*) echo profile.proto ;; esac
}

# connect_go PATH REQ_TYPE RESP_TYPE TEXT [curl args...]: a unary call as
# connect-go sends it (binary protobuf, Connect-Protocol-Version, its
# User-Agent, gzip accepted): TEXT encoded by protoc from $PROTO_DIR (see
# need_protoc), the answer, which must be a 200, decoded into $WORK/pb.txt.
connect_go() {
	local path=$1 req=$2 resp=$3 text=$4
	shift 4
	printf '%s\n' "$text" | protoc --proto_path="$PROTO_DIR" --encode="$req" "$(proto_file "$req")" \
		>"$WORK/req.bin" || fail "protoc --encode $req"
	http POST "$path" -H 'Content-Type: application/proto' \
		-H 'Connect-Protocol-Version: 1' -H 'User-Agent: connect-go/1.18.1 (go1.24.0)' \
		-H 'Accept-Encoding: gzip' --compressed --data-binary "@$WORK/req.bin" "$@"
	[ "$STATUS" = 200 ] || fail "proto $path: HTTP $STATUS $(head -c 300 "$WORK/body")"
	protoc --proto_path="$PROTO_DIR" --decode="$resp" "$(proto_file "$resp")" \
		<"$WORK/body" >"$WORK/pb.txt" || fail "proto $path: the answer is not a $resp"
}

# selector TYPE SERVICE: the urlencoded query TYPE{service_name="SERVICE"}.
selector() {
	jq -rn --arg s "$1{service_name=\"$2\"}" '$s|@uri'
}

# wait_symbolized QUERY FROM UNTIL [curl args...]: polls /pyroscope/render
# until the response no longer says symbolization is pending (at most 60 s);
# BODY is then the last render.
wait_symbolized() {
	local q=$1 from=$2 until=$3 i
	shift 3
	for i in $(seq 1 60); do
		http GET "/pyroscope/render?query=$q&from=$from&until=$until" "$@"
		[ "$STATUS" = 200 ] || fail "render: $STATUS $BODY"
		jq -e '.symbolization.pending == true' <<<"$BODY" >/dev/null || return 0
		sleep 1
	done
	fail "symbolization still pending after 60 s: $(jq -c .symbolization <<<"$BODY")"
}

# The profiled test programs run their work in a loop for argv[1] seconds
# (default 1) of their own CPU time (CLOCK_PROCESS_CPUTIME_ID), not of wall
# time: on a loaded machine a wall-time loop gets few samples, and a check
# that some inlined frame was sampled at all fails by chance.  These print
# that main() for C and C++ sources.

# c_timed_main INIT STATEMENT...: a C main() running the STATEMENTs (on
# `volatile unsigned v = INIT` and `unsigned acc`) until the time is up,
# then printing acc.  Needs <stdio.h>, <stdlib.h> and <time.h>.
c_timed_main() {
	local init=$1 st
	shift
	cat <<EOF
int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	struct timespec t0, t;
	volatile unsigned v = $init;
	unsigned acc = 0;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
EOF
	for st in "$@"; do
		printf '\t\t%s\n' "$st"
	done
	cat <<'EOF'
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	printf("%u\n", acc);
	return 0;
}
EOF
}

# cxx_timed_main SETUP ELEM STEP: a C++ main() that runs SETUP (lines that
# declare the vector v) once, then until the time is up sets every v[i] to
# ELEM (an expression of i and `long acc`) and runs STEP (lines); then
# prints acc.  Needs <ctime> and <cstdio>.
cxx_timed_main() {
	local setup=$1 elem=$2 step=$3
	cat <<EOF
int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.0;
	std::clock_t t0 = std::clock();
	long acc = 0;
$(sed 's/^/\t/' <<<"$setup")
	while ((double)(std::clock() - t0) / CLOCKS_PER_SEC < secs) {
		for (size_t i = 0; i < v.size(); i++)
			v[i] = $elem;
$(sed 's/^/\t\t/' <<<"$step")
	}
	std::printf("%ld\n", acc);
	return 0;
}
EOF
}

# ingest_manifest WL [unhex ingest args...]: every file of the workload WL
# (WL/manifest.tsv) through `unhex ingest` to $URL, one file at a time with
# its series name and time; fails the test if any is rejected.
ingest_manifest() {
	local wl=$1 path name secs failed=0
	shift
	while IFS=$'\t' read -r path name secs; do
		case "$path" in '' | '#'*) continue ;; esac
		"$UNHEX" ingest --server "$URL" "$@" --name "$name" --from "$secs" "$wl/$path" \
			>/dev/null || failed=$((failed + 1))
	done <"$wl/manifest.tsv"
	[ $failed -eq 0 ] || fail "$failed workload files were rejected"
}

# fixture_store NAME: the data directory fixtures/NAME.tar.gz (a store an
# older release wrote, as fixtures/NAME.README says) in DATA ($WORK/data);
# sets END, the fixtures' workload's end, and FROM and UNTIL an hour before
# and ten minutes after it.
fixture_store() {
	END=1767225600
	FROM=$((END - 3600))
	UNTIL=$((END + 600))
	DATA="$WORK/data"
	mkdir -p "$DATA"
	tar xzf "$(dirname "${BASH_SOURCE[0]}")/fixtures/$1.tar.gz" -C "$DATA"
}

# block_workload MINUTES INTERVAL [GENERATOR ARGS...]: the workload of the
# block tests in WL ($WORK/workload): 2 services x 2 instances, a profile
# every INTERVAL seconds for MINUTES up to END, a fixed time (the store's
# clock follows the data, not the wall clock); sets END, and FROM and UNTIL
# three hours before and ten minutes after END.  Needs WORKLOAD.
block_workload() {
	local minutes=$1 interval=$2
	shift 2
	END=1767225600 # 2026-01-01T00:00:00Z
	WL="$WORK/workload"
	"$WORKLOAD" --out "$WL" --services 2 --instances 2 --minutes "$minutes" \
		--interval "$interval" --end "$END" "$@" --quiet
	FROM=$((END - 3 * 3600))
	UNTIL=$((END + 600))
}

# answers DIR: $URL's stats of the tenant anonymous and every service's
# $CPU flame graph from $FROM to $UNTIL (the caller's), one file each, into DIR.
answers() {
	local dir=$1 svc q
	mkdir -p "$dir"
	jq -cS '{profiles, samples, series}' <<<"$(tenant_stats anonymous)" >"$dir/stats"
	http GET "/pyroscope/label-values?label=service_name&from=$FROM&until=$UNTIL"
	[ "$STATUS" = 200 ] || fail "label-values: $STATUS $BODY"
	for svc in $(jq -r '.[]' <<<"$BODY"); do
		q=$(selector "$CPU" "$svc")
		http GET "/pyroscope/render?query=$q&from=$FROM&until=$UNTIL&maxNodes=65536"
		[ "$STATUS" = 200 ] || fail "render $svc: $STATUS $BODY"
		jq -c 'del(.symbolization)' <<<"$BODY" >"$dir/render.$svc"
	done
	ls "$dir"/render.* >/dev/null 2>&1 || fail "no service to compare in $dir: $BODY"
}

# build_two_mapping_prog DIR: a real C program DIR/prog, built -g -O2, whose
# time goes to its own functions and to DIR/libwork.so (two mappings, stacks
# through both); it runs for argv[1] seconds (default 1.5).
build_two_mapping_prog() {
	local dir=$1
	cat >"$dir/work.c" <<'EOF'
#include <stdlib.h>
#include <string.h>
static int cmp(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return x < y ? -1 : x > y;
}
__attribute__((noinline)) unsigned work_hash(const unsigned *v, size_t n)
{
	unsigned h = 2166136261u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ v[i]) * 16777619u;
	return h;
}
unsigned work_sort(size_t n, unsigned seed)
{
	unsigned *v = malloc(n * sizeof(*v)), h;
	for (size_t i = 0; i < n; i++)
		v[i] = seed = seed * 1103515245u + 12345u;
	qsort(v, n, sizeof(*v), cmp);
	h = work_hash(v, n);
	free(v);
	return h;
}
EOF
	cat >"$dir/main.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
unsigned work_sort(size_t n, unsigned seed);
__attribute__((noinline)) static unsigned spin(unsigned x)
{
	for (int i = 0; i < 2000000; i++)
		x = x * 2654435761u + (unsigned)i;
	return x;
}
__attribute__((noinline)) static unsigned level2(unsigned s)
{
	return work_sort(20000, s) ^ spin(s);
}
__attribute__((noinline)) static unsigned level1(unsigned s)
{
	return level2(s) + spin(s + 1);
}
int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 1.5;
	struct timespec t0, t;
	unsigned acc = 0, s = 1;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		acc += level1(s++);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	printf("%u\n", acc);
	return 0;
}
EOF
	cc -g -O2 -fPIC -shared -o "$dir/libwork.so" "$dir/work.c"
	cc -g -O2 -o "$dir/prog" "$dir/main.c" -L"$dir" -lwork -Wl,-rpath,"$dir"
}

#!/usr/bin/env bash
# otlp.sh - OTLP profiles over OTLP/HTTP (POST /v1development/profiles)
# against the real server, with requests encoded by an independent real
# encoder: protoc --encode from protobuf text format.
#   - a real C program built with -g -O2 is split and stripped; real ELF
#     virtual addresses of its functions (objdump: an instruction of the
#     leaf, return addresses - 1 for the callers, as the eBPF profiler
#     sends them) become native frames of a mapping with the program's GNU
#     build ID in process.executable.build_id.gnu and ELF-VA bounds of its
#     executable PT_LOAD; an interpreted frame with a Line is the root;
#   - raw and gzipped POSTs give 200 with an empty binary
#     ExportProfilesServiceResponse; the same request in the OTLP JSON
#     encoding (written by hand below: protoc cannot emit JSON), raw and
#     gzipped, gives 200 with {} and stores exactly what protobuf does
#     (stats, labels, folded stacks); labels and the profile type follow
#     docs/ingest.md (service.name, host.name; no process.pid);
#   - after `unhex upload` of the debug file, /api/v1/folded names every
#     native frame as llvm-symbolizer --inlining does on the unstripped
#     binary, with value = timestamps x period;
#   - hostile requests get 400/413/415 with a google.rpc.Status body
#     (decoded with protoc --decode; JSON for JSON requests, naming the
#     JSON path) that names the problem, and the server
#     stays up; /metrics counts the endpoint.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need_protoc
need_cmd llvm-symbolizer
REQ=opentelemetry.proto.collector.profiles.v1development.ExportProfilesServiceRequest
PERIOD=50000000

encode() { # TEXTFILE OUT
	protoc --proto_path="$PROTO_DIR" --encode="$REQ" otlp_profiles_service.proto <"$1" >"$2" ||
		fail "protoc --encode of $1"
}

decode_status() { # FILE -> google.rpc.Status as text
	protoc --proto_path="$PROTO_DIR" --decode=google.rpc.Status otlp_status.proto <"$1" ||
		fail "response is not a google.rpc.Status: $(od -c "$1" | head -5)"
}

post() { # FILE TENANT [curl args...]
	local f=$1 t=$2
	shift 2
	http POST /v1development/profiles -H "X-Scope-OrgID: $t" \
		-H "Content-Type: application/x-protobuf" --data-binary "@$f" -D "$WORK/headers" "$@"
}

# ---- a real program, split and stripped
cat >"$WORK/prog.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) unsigned long leaf_work(unsigned long n)
{
	unsigned long s = 0;

	for (unsigned long i = 0; i < n; i++)
		s += (i * i) ^ (s >> 3);
	return s;
}

__attribute__((noinline)) unsigned long middle_step(unsigned long n)
{
	unsigned long r = leaf_work(n);

	sink = r;
	return r + 1;
}

__attribute__((noinline)) unsigned long outer_loop(unsigned long n)
{
	unsigned long t = 0;

	for (int k = 0; k < 3; k++)
		t += middle_step(n + (unsigned long)k);
	sink = t;
	return t * 2;
}

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 1000;

	printf("%lu\n", outer_loop(n));
	return 0;
}
EOF
# -no-pie puts the text at ELF VA 0x40xxxx while its file offset is 0x1xxx,
# so an address read as a file offset instead of a vaddr would not resolve.
gcc -g -O2 -no-pie -Wl,--build-id -o "$WORK/prog" "$WORK/prog.c" || fail "gcc"
split_debug "$WORK/prog"
ID=$(build_id "$WORK/prog.stripped")
[ -n "$ID" ] || fail "no build ID in prog"
note "prog build ID $ID"

# The executable PT_LOAD: offset, vaddr, memsz (the mapping in ELF VA space).
readelf -lW "$WORK/prog" >"$WORK/prog.phdrs" || fail "readelf"
read -r SEG_OFF SEG_VA SEG_MEM < <(awk '$1=="LOAD" && $0 ~ / R E / {print $2, $3, $6; exit}' "$WORK/prog.phdrs")
[ -n "$SEG_VA" ] || fail "no executable PT_LOAD in prog"
MAP_START=$((SEG_VA))
MAP_LIMIT=$((SEG_VA + SEG_MEM))
((SEG_VA != SEG_OFF)) || fail "text vaddr equals its file offset; the test would not tell them apart"

# addr_after_call CALLER CALLEE: the return address of CALLER's call to CALLEE.
# (awk reads a file: an early exit must not SIGPIPE a writer under pipefail)
objdump -d --no-show-raw-insn "$WORK/prog" >"$WORK/prog.dis" || fail "objdump"
addr_after_call() {
	awk -v f="<$1>:" -v c="<$2>" '
		$2 == f {inside = 1; next}
		inside && /^$/ {exit}
		inside && found {sub(":", "", $1); print $1; exit}
		inside && $0 ~ c && /call/ {found = 1}' "$WORK/prog.dis"
}
insn_in() { # FUNCTION N: the address of the N-th instruction of FUNCTION
	awk -v f="<$1>:" -v n="$2" '
		$2 == f {inside = 1; next}
		inside && /^$/ {exit}
		inside && ++k == n {sub(":", "", $1); print $1; exit}' "$WORK/prog.dis"
}
A_LEAF=$((0x$(insn_in leaf_work 3)))
A_MID=$((0x$(addr_after_call middle_step leaf_work) - 1))
A_OUT=$((0x$(addr_after_call outer_loop middle_step) - 1))
A_MAIN=$((0x$(addr_after_call main outer_loop) - 1))
for a in A_LEAF A_MID A_OUT A_MAIN; do
	((${!a} > MAP_START && ${!a} < MAP_LIMIT)) || fail "$a=${!a} outside the text segment"
done

# What llvm-symbolizer calls the frames of one address, outermost first.
names_of() {
	llvm-symbolizer --inlining --functions=linkage --obj="$WORK/prog" "$(printf '0x%x' "$1")" |
		awk 'NF && NR % 2 == 1' | tac | paste -sd';'
}
EXPECTED="python_main;$(names_of $A_MAIN);$(names_of $A_OUT);$(names_of $A_MID);$(names_of $A_LEAF)"
note "expected stack: $EXPECTED"
case "$EXPECTED" in *"??"*) fail "llvm-symbolizer does not name every frame: $EXPECTED" ;; esac

NOW=$(($(date +%s) * 1000000000))
# ---- the request, in protobuf text format (ExportProfilesServiceRequest)
cat >"$WORK/req.txt" <<EOF
dictionary {
  mapping_table {}
  mapping_table {
    memory_start: $MAP_START memory_limit: $MAP_LIMIT file_offset: $((SEG_OFF))
    filename_strindex: 1 attribute_indices: [1]
  }
  location_table {}
  location_table { mapping_index: 1 address: $A_LEAF attribute_indices: [2] }
  location_table { mapping_index: 1 address: $A_MID attribute_indices: [2] }
  location_table { mapping_index: 1 address: $A_OUT attribute_indices: [2] }
  location_table { mapping_index: 1 address: $A_MAIN attribute_indices: [2] }
  location_table { lines { function_index: 1 line: 7 } attribute_indices: [3] }
  function_table {}
  function_table { name_strindex: 9 filename_strindex: 10 }
  link_table {}
  string_table: ""
  string_table: "prog.stripped"
  string_table: "process.executable.build_id.gnu"
  string_table: "profile.frame.type"
  string_table: "native"
  string_table: "samples"
  string_table: "count"
  string_table: "cpu"
  string_table: "nanoseconds"
  string_table: "python_main"
  string_table: "app.py"
  string_table: "cpython"
  string_table: "thread.id"
  attribute_table {}
  attribute_table { key_strindex: 2 value { string_value: "$ID" } }
  attribute_table { key_strindex: 3 value { string_value_strindex: 4 } }
  attribute_table { key_strindex: 3 value { string_value_strindex: 11 } }
  attribute_table { key_strindex: 12 value { int_value: 4711 } }
  stack_table {}
  stack_table { location_indices: [1, 2, 3, 4, 5] }
  stack_table { location_indices: [3, 4, 5] }
}
resource_profiles {
  resource {
    attributes { key: "service.name" value { string_value: "otlp-app" } }
    attributes { key: "host.name" value { string_value: "node-1" } }
    attributes { key: "process.pid" value { int_value: 1234 } }
  }
  scope_profiles {
    scope { name: "go.opentelemetry.io/ebpf-profiler" version: "v0.0.0" }
    profiles {
      sample_type { type_strindex: 5 unit_strindex: 6 }
      period_type { type_strindex: 7 unit_strindex: 8 }
      period: $PERIOD
      time_unix_nano: $NOW
      duration_nano: 5000000000
      samples { stack_index: 1 attribute_indices: [4] timestamps_unix_nano: [$NOW, $((NOW + 1)), $((NOW + 2))] }
      samples { stack_index: 2 timestamps_unix_nano: [$NOW] }
    }
  }
}
EOF
encode "$WORK/req.txt" "$WORK/req.pb"
gzip -c "$WORK/req.pb" >"$WORK/req.pb.gz"

# ---- the same request in the OTLP/HTTP JSON encoding, written by hand
# (protoc cannot emit JSON): lowerCamelCase names, 64-bit integers as
# decimal strings, except the addresses, as numbers (both are allowed).
cat >"$WORK/req.json" <<EOF
{
  "resourceProfiles": [{
    "resource": {"attributes": [
      {"key": "service.name", "value": {"stringValue": "otlp-app"}},
      {"key": "host.name", "value": {"stringValue": "node-1"}},
      {"key": "process.pid", "value": {"intValue": "1234"}}
    ]},
    "scopeProfiles": [{
      "scope": {"name": "go.opentelemetry.io/ebpf-profiler", "version": "v0.0.0"},
      "profiles": [{
        "sampleType": {"typeStrindex": 5, "unitStrindex": 6},
        "periodType": {"typeStrindex": 7, "unitStrindex": 8},
        "period": "$PERIOD",
        "timeUnixNano": "$NOW",
        "durationNano": "5000000000",
        "samples": [
          {"stackIndex": 1, "attributeIndices": [4],
           "timestampsUnixNano": ["$NOW", "$((NOW + 1))", "$((NOW + 2))"]},
          {"stackIndex": 2, "timestampsUnixNano": ["$NOW"]}
        ]
      }]
    }]
  }],
  "dictionary": {
    "mappingTable": [{}, {"memoryStart": "$MAP_START", "memoryLimit": "$MAP_LIMIT",
      "fileOffset": "$((SEG_OFF))", "filenameStrindex": 1, "attributeIndices": [1]}],
    "locationTable": [{},
      {"mappingIndex": 1, "address": $A_LEAF, "attributeIndices": [2]},
      {"mappingIndex": 1, "address": $A_MID, "attributeIndices": [2]},
      {"mappingIndex": 1, "address": $A_OUT, "attributeIndices": [2]},
      {"mappingIndex": 1, "address": $A_MAIN, "attributeIndices": [2]},
      {"lines": [{"functionIndex": 1, "line": "7"}], "attributeIndices": [3]}],
    "functionTable": [{}, {"nameStrindex": 9, "filenameStrindex": 10}],
    "linkTable": [{}],
    "stringTable": ["", "prog.stripped", "process.executable.build_id.gnu",
      "profile.frame.type", "native", "samples", "count", "cpu", "nanoseconds",
      "python_main", "app.py", "cpython", "thread.id"],
    "attributeTable": [{},
      {"keyStrindex": 2, "value": {"stringValue": "$ID"}},
      {"keyStrindex": 3, "value": {"stringValueStrindex": 4}},
      {"keyStrindex": 3, "value": {"stringValueStrindex": 11}},
      {"keyStrindex": 12, "value": {"intValue": "4711"}}],
    "stackTable": [{}, {"locationIndices": [1, 2, 3, 4, 5]}, {"locationIndices": [3, 4, 5]}]
  }
}
EOF
jq -e . "$WORK/req.json" >/dev/null || fail "req.json is not JSON"
gzip -c "$WORK/req.json" >"$WORK/req.json.gz"

post_json() { # FILE TENANT [curl args...]
	local f=$1 t=$2
	shift 2
	http POST /v1development/profiles -H "X-Scope-OrgID: $t" \
		-H "Content-Type: application/json; charset=utf-8" --data-binary "@$f" \
		-D "$WORK/headers" "$@"
}

DATA="$WORK/data"
start_server "$DATA" --symbolize-budget 20s

post "$WORK/req.pb" t1
expect_status 200 "" "OTLP request"
[ ! -s "$WORK/body" ] || fail "success body is not an empty ExportProfilesServiceResponse: $(od -c "$WORK/body" | head)"
grep -qi '^Content-Type: application/x-protobuf' "$WORK/headers" || fail "success Content-Type: $(cat "$WORK/headers")"
post "$WORK/req.pb.gz" t2 -H "Content-Encoding: gzip"
expect_status 200 "" "gzipped OTLP request"
post_json "$WORK/req.json" t3
expect_status 200 "" "OTLP JSON request"
[ "$BODY" = "{}" ] || fail "JSON success body is not {}: $BODY"
grep -qi '^Content-Type: application/json' "$WORK/headers" ||
	fail "JSON success Content-Type: $(cat "$WORK/headers")"
post_json "$WORK/req.json.gz" t4 -H "Content-Encoding: gzip"
expect_status 200 "{}" "gzipped OTLP JSON request"
for t in t1 t2 t3 t4; do
	[ "$(field "$(tenant_stats $t)" profiles)" = 1 ] || fail "tenant $t: not one stored profile"
done
PB_STATS=$(counts "$(tenant_stats t1)" | jq -c 'del(.tenant)')
for t in t3 t4; do
	[ "$(counts "$(tenant_stats $t)" | jq -c 'del(.tenant)')" = "$PB_STATS" ] ||
		fail "tenant $t (JSON) stats differ from t1 (protobuf): $(tenant_stats $t) vs $PB_STATS"
done

http GET "/pyroscope/label-values?label=__profile_type__" -H "X-Scope-OrgID: t1"
expect_status 200 "process_cpu:cpu:nanoseconds:cpu:nanoseconds" "profile type"
http GET "/pyroscope/labels" -H "X-Scope-OrgID: t1"
expect_status 200 "host.name" "label names"
case "$BODY" in *process.pid* | *thread.id*) fail "per-process attributes became labels: $BODY" ;; esac

# ---- query-time symbolization of the native frames
OUT=$("$UNHEX" upload --server "$URL" "$WORK/prog.debug") || fail "upload: $OUT"
note "upload: $OUT"
FROM=$(($(date +%s) - 3600))
UNTIL=$(($(date +%s) + 3600))
Q=$(selector process_cpu:cpu:nanoseconds:cpu:nanoseconds otlp-app)
for t in t1 t2 t3 t4; do
	wait_symbolized "$Q" "$FROM" "$UNTIL" -H "X-Scope-OrgID: $t"
	NAMES=$(jq -r '.flamebearer.names[]' <<<"$BODY")
	if grep -q '+0x' <<<"$NAMES"; then
		fail "tenant $t: hex frames left: $(jq -c '.flamebearer.names, .symbolization' <<<"$BODY")"
	fi
	http GET "/api/v1/folded?query=$Q&from=$FROM&until=$UNTIL" -H "X-Scope-OrgID: $t"
	expect_status 200 "" "folded ($t)"
	grep -qxF "$EXPECTED $((3 * PERIOD))" "$WORK/body" ||
		fail "tenant $t: no folded line '$EXPECTED $((3 * PERIOD))' in: $BODY"
	SHORT="python_main;$(names_of $A_MAIN);$(names_of $A_OUT) $PERIOD"
	grep -qxF "$SHORT" "$WORK/body" || fail "tenant $t: no folded line '$SHORT' in: $BODY"
	cp "$WORK/body" "$WORK/folded.$t"
	http GET "/pyroscope/labels" -H "X-Scope-OrgID: $t"
	cp "$WORK/body" "$WORK/labels.$t"
done
# The JSON tenants store exactly what the protobuf ones do.
for t in t3 t4; do
	cmp -s "$WORK/folded.t1" "$WORK/folded.$t" ||
		fail "folded stacks of $t (JSON) differ from t1: $(diff "$WORK/folded.t1" "$WORK/folded.$t")"
	cmp -s "$WORK/labels.t1" "$WORK/labels.$t" ||
		fail "labels of $t (JSON) differ from t1: $(cat "$WORK/labels.$t")"
done

# ---- hostile requests: 4xx with google.rpc.Status, the server stays up
head -c 40 "$WORK/req.pb" >"$WORK/trunc.pb"
post "$WORK/trunc.pb" t1
expect_status 400 "" "truncated request"
grep -qi '^Content-Type: application/x-protobuf' "$WORK/headers" || fail "error Content-Type"
ST=$(decode_status "$WORK/body")
grep -q '^code: 3$' <<<"$ST" || fail "truncated: status $ST"
grep -q 'not a valid ExportProfilesServiceRequest' <<<"$ST" || fail "truncated: status $ST"

# rejected WHAT SED_SCRIPT MESSAGE: the request edited by SED_SCRIPT gets a
# 400 whose google.rpc.Status contains MESSAGE.
rejected() {
	local what=$1 st
	sed "$2" "$WORK/req.txt" >"$WORK/bad.txt"
	! cmp -s "$WORK/req.txt" "$WORK/bad.txt" || fail "$what: the edit $2 changed nothing"
	encode "$WORK/bad.txt" "$WORK/bad.pb"
	post "$WORK/bad.pb" t1
	expect_status 400 "" "$what"
	st=$(decode_status "$WORK/body")
	grep -qF "$3" <<<"$st" || fail "$what: status $st"
	note "status: $(tr '\n' ' ' <<<"$st")"
}
rejected "bad stack_index" 's/samples { stack_index: 2 /samples { stack_index: 99 /' \
	'resource 0: scope 0: profile 0: sample 1: stack_index 99 out of range (stack_table has 3)'
rejected "bad location index" 's/location_indices: \[3, 4, 5\]/location_indices: [3, 4, 50]/' \
	'dictionary: stack 2: location_indices[2] 50 out of range (location_table has 6)'
rejected "string_table[0] not empty" 's/^  string_table: ""$/  string_table: "x"/' \
	'string_table[0] must be'

head -c 100000000 /dev/zero | gzip -c >"$WORK/bomb.gz"
post "$WORK/bomb.gz" t1 -H "Content-Encoding: gzip"
expect_status 413 "" "gzip bomb"
ST=$(decode_status "$WORK/body")
grep -q 'inflates past the limit' <<<"$ST" || fail "bomb: $ST"

# JSON errors: a google.rpc.Status in JSON whose message names the JSON path.
jq '.resourceProfiles[0].scopeProfiles[0].profiles[0].samples[1].stackIndex = "x"' \
	"$WORK/req.json" >"$WORK/bad.json"
post_json "$WORK/bad.json" t1
expect_status 400 "" "JSON request with a bad integer"
grep -qi '^Content-Type: application/json' "$WORK/headers" || fail "JSON error Content-Type"
[ "$(jq -r .code <<<"$BODY")" = 3 ] || fail "JSON error: status $BODY"
jq -r .message <<<"$BODY" | grep -qF \
	'resourceProfiles[0].scopeProfiles[0].profiles[0].samples[1].stackIndex: not an integer' ||
	fail "JSON error: status $BODY"
jq '.resourceProfiles[0].scopeProfiles[0].profiles[0].samples[1].stackIndex = 99' \
	"$WORK/req.json" >"$WORK/bad.json"
post_json "$WORK/bad.json" t1
expect_status 400 "resource 0: scope 0: profile 0: sample 1: stack_index 99 out of range" \
	"JSON request with a bad stack index"
head -c 100 "$WORK/req.json" >"$WORK/trunc.json"
post_json "$WORK/trunc.json" t1
expect_status 400 "json: " "truncated JSON request"
[ "$(jq -r .code <<<"$BODY")" = 3 ] || fail "truncated JSON: status $BODY"
http POST /v1development/profiles -H "Content-Type: text/plain" --data-binary "@$WORK/req.pb"
expect_status 415 "" "text/plain request"
http GET /v1development/profiles
expect_status 405 "" "GET"

http GET /ready
expect_status 200 "ready" "server still up"
for t in t1 t2 t3 t4; do
	[ "$(field "$(tenant_stats $t)" profiles)" = 1 ] || fail "tenant $t: rejected requests wrote profiles"
done
http GET /metrics
grep -q 'unhex_ingest_requests_total{endpoint="/v1development/profiles",code="200"} 4' "$WORK/body" ||
	fail "metrics: $(grep v1development "$WORK/body")"
grep -q 'unhex_ingest_requests_total{endpoint="/v1development/profiles",code="400"} 7' "$WORK/body" ||
	fail "metrics: $(grep v1development "$WORK/body")"
stop_server
echo "otlp: ok"

#!/usr/bin/env bash
# ingest_perf.sh - a real profile end to end: build a program and a shared
# library with -g -O2, profile them with perf (or the gperftools profiler when
# the kernel refuses perf), convert with perf2pprof, ingest the pprof three
# ways (unhex ingest, curl multipart, push.v1 JSON) into separate tenants, and
# check that the stored counts equal what pprofinfo says must be stored, in
# the running server and, after a clean shutdown, in the store on disk.
# Also: tenants do not see each other's data; /metrics, /ready and / answer.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need PERF2PPROF
need PPROFINFO

NAME='perftest.cpu{env=test,host=a}'

# ---- a program with several mappings: main binary, libwork.so, libc, ld.so
build_two_mapping_prog "$WORK"

# ---- profile it for real
PPROF="$WORK/out.pb.gz"
profile_to_pprof "$PPROF" "$WORK/prog" 1.5
INFO=$("$PPROFINFO" --json "$PPROF")
note "pprofinfo: $INFO"
STORED=$(field "$INFO" stored_samples)
NTYPES=$(jq '.sample_types | length' <<<"$INFO")
[ "$STORED" -gt 0 ] || fail "the profile holds no samples"
[ "$NTYPES" -ge 2 ] || fail "expected samples/count and cpu/nanoseconds, got $NTYPES types"
[ "$(field "$INFO" mappings)" -ge 3 ] || fail "expected main, libwork.so and libc mappings"

DATA="$WORK/data"
start_server "$DATA"

http GET /ready
expect_status 200 ready "GET /ready"
http GET /
expect_status 200 unhex "GET /"

# ---- 1. unhex ingest (tenant perf-cli)
OUT=$("$UNHEX" ingest --server "$URL" --tenant perf-cli --name "$NAME" "$PPROF") ||
	fail "unhex ingest failed: $OUT"
note "unhex ingest: $OUT"
case "$OUT" in *"1 of 1 files accepted"*", $STORED samples"*) ;;
*) fail "unhex ingest summary does not report $STORED samples: $OUT" ;;
esac

# ---- 2. curl, raw body (tenant perf-raw): the response body counts
ENC_NAME=$(jq -rn --arg n "$NAME" '$n|@uri')
http POST "/ingest?name=$ENC_NAME&format=pprof&from=now-10s&until=now" \
	-H 'X-Scope-OrgID: perf-raw' --data-binary @"$PPROF"
expect_status 200 '"samples":' "raw /ingest"
[ "$(field "$BODY" samples)" = "$STORED" ] || fail "raw /ingest stored $(field "$BODY" samples), want $STORED"
PROFILES=$(field "$BODY" profiles)
[ "$PROFILES" -ge "$NTYPES" ] || fail "expected at least $NTYPES profiles, got $PROFILES"

# ---- 3. curl multipart, as Pyroscope clients send it (tenant perf-mp)
http POST "/pyroscope/ingest?name=$ENC_NAME&spyName=perf&sampleRate=999" \
	-H 'X-Scope-OrgID: perf-mp' -F "profile=@$PPROF" -F 'sample_type_config={}'
expect_status 200 '"samples":' "multipart /pyroscope/ingest"
[ "$(field "$BODY" samples)" = "$STORED" ] || fail "multipart stored $(field "$BODY" samples), want $STORED"
[ "$(field "$BODY" profiles)" = "$PROFILES" ] || fail "multipart profiles differ"

# ---- 4. push.v1 Connect JSON (tenant perf-push)
base64 -w0 "$PPROF" >"$WORK/b64"
jq -n --rawfile p "$WORK/b64" '{series:[{labels:[
	{name:"__name__",value:"process_cpu"},{name:"service_name",value:"perftest"},
	{name:"env",value:"test"},{name:"host",value:"a"}],
	samples:[{rawProfile:$p,ID:"6a3c5e1e-0000-4000-8000-000000000001"}]}]}' >"$WORK/push.json"
http POST /push.v1.PusherService/Push -H 'X-Scope-OrgID: perf-push' \
	-H 'Content-Type: application/json' --data-binary @"$WORK/push.json"
expect_status 200 '{}' "push.v1 JSON"

# ---- 5. push.v1 binary protobuf, gzipped on the wire (tenant perf-pushbin)
varint() {
	local n=$1
	while [ "$n" -ge 128 ]; do
		printf "\\x$(printf %02x $(((n & 127) | 128)))"
		n=$((n >> 7))
	done
	printf "\\x$(printf %02x "$n")"
}
ld() { # TAG FILE: a length-delimited protobuf field
	printf "\\x$1"
	varint "$(stat -c %s "$2")"
	cat "$2"
}
: >"$WORK/series.bin"
for kv in __name__=process_cpu service_name=perftest env=test host=a; do
	printf '%s' "${kv%%=*}" >"$WORK/k"
	printf '%s' "${kv#*=}" >"$WORK/v"
	{ ld 0a "$WORK/k"; ld 12 "$WORK/v"; } >"$WORK/pair.bin"
	ld 0a "$WORK/pair.bin" >>"$WORK/series.bin"
done
ld 0a "$PPROF" >"$WORK/sample.bin"
ld 12 "$WORK/sample.bin" >>"$WORK/series.bin"
ld 0a "$WORK/series.bin" | gzip -c >"$WORK/push.bin.gz"
http POST /push.v1.PusherService/Push -H 'X-Scope-OrgID: perf-pushbin' \
	-H 'Content-Type: application/proto' -H 'Content-Encoding: gzip' --data-binary @"$WORK/push.bin.gz"
expect_status 200 '' "push.v1 binary, gzipped"
[ -z "$BODY" ] || fail "binary push answered with a body: $BODY"
# The server holds for what a binary push's profiles say they inflate to
# (their gzip trailers), not 16 times the body: a trailer that understates
# its profile is refused, nothing stored (tenant perf-liar).
cp "$PPROF" "$WORK/liar.pb.gz"
printf '\x10\x00\x00\x00' | dd of="$WORK/liar.pb.gz" bs=1 seek=$(($(stat -c %s "$PPROF") - 4)) conv=notrunc 2>/dev/null
ld 0a "$WORK/liar.pb.gz" >"$WORK/sample.bin"
: >"$WORK/lseries.bin"
for kv in __name__=process_cpu service_name=perftest; do
	printf '%s' "${kv%%=*}" >"$WORK/k"
	printf '%s' "${kv#*=}" >"$WORK/v"
	{ ld 0a "$WORK/k"; ld 12 "$WORK/v"; } >"$WORK/pair.bin"
	ld 0a "$WORK/pair.bin" >>"$WORK/lseries.bin"
done
ld 12 "$WORK/sample.bin" >>"$WORK/lseries.bin"
ld 0a "$WORK/lseries.bin" >"$WORK/liar.bin"
http POST /push.v1.PusherService/Push -H 'X-Scope-OrgID: perf-liar' \
	-H 'Content-Type: application/proto' --data-binary @"$WORK/liar.bin"
expect_status 413 '' "push.v1 of a pprof whose gzip trailer understates it"
note "understated trailer: $BODY"

# ---- 6. unhex ingest --batch 2 (tenant perf-batch): three copies of the
# pprof in two push.v1 requests (2 + 1), into the series /ingest gives NAME
for i in 1 2 3; do cp "$PPROF" "$WORK/copy$i.pb.gz"; done
OUT=$("$UNHEX" ingest --server "$URL" --tenant perf-batch --name "$NAME" --batch 2 \
	"$WORK"/copy1.pb.gz "$WORK"/copy2.pb.gz "$WORK"/copy3.pb.gz) || fail "unhex ingest --batch: $OUT"
note "unhex ingest --batch 2: $OUT"
case "$OUT" in *"3 of 3 files accepted"*"in 2 push.v1 requests"*) ;;
*) fail "unhex ingest --batch summary: $OUT" ;;
esac
S=$(tenant_stats perf-batch)
[ "$(field "$S" samples)" = $((3 * STORED)) ] || fail "perf-batch: samples $(field "$S" samples), want 3 x $STORED"
[ "$(field "$S" profiles)" = $((3 * PROFILES)) ] || fail "perf-batch: profiles $(field "$S" profiles)"
series_of() {
	http POST /querier.v1.QuerierService/Series -H 'Content-Type: application/json' \
		-H "X-Scope-OrgID: $1" -d '{"matchers":["{}"],"start":0,"end":4102444800000}'
	[ "$STATUS" = 200 ] || fail "Series of $1: $STATUS $BODY"
	jq -cS '.labelsSet | map(.labels | sort_by(.name)) | sort' <<<"$BODY"
}
[ "$(series_of perf-batch)" = "$(series_of perf-cli)" ] ||
	fail "--batch series differ from /ingest's: $(series_of perf-batch) vs $(series_of perf-cli)"
# A request is stored whole or not at all: a batch with a broken file is refused.
head -c 100 "$PPROF" >"$WORK/broken.pb.gz"
rc=0
OUT=$("$UNHEX" ingest --server "$URL" --tenant perf-batch --name "$NAME" --batch 2 \
	"$WORK"/copy1.pb.gz "$WORK"/broken.pb.gz 2>&1) || rc=$?
[ "$rc" = 1 ] && grep -q "0 of 2 files accepted" <<<"$OUT" && grep -q 'HTTP 4' <<<"$OUT" ||
	fail "a batch with a broken file: exit $rc, $OUT"
[ "$(field "$(tenant_stats perf-batch)" samples)" = $((3 * STORED)) ] || fail "the refused batch stored samples"
rc=0
OUT=$("$UNHEX" ingest --server "$URL" --name "$NAME" --batch 2 --from 1700000000 "$PPROF" 2>&1) || rc=$?
[ "$rc" = 2 ] && grep -q -- '--from needs --batch 1' <<<"$OUT" || fail "--batch with --from: exit $rc, $OUT"
rc=0
OUT=$("$UNHEX" ingest --server "$URL" --name "$NAME" --batch 1025 "$PPROF" 2>&1) || rc=$?
[ "$rc" = 2 ] || fail "--batch 1025: exit $rc, $OUT"

# ---- stats per tenant equal what pprofinfo says
declare -A SEEN
for t in perf-cli perf-raw perf-mp perf-push perf-pushbin; do
	S=$(tenant_stats "$t")
	note "stats $t: $S"
	[ "$(field "$S" samples)" = "$STORED" ] || fail "$t: stats samples $(field "$S" samples), want $STORED"
	[ "$(field "$S" profiles)" = "$PROFILES" ] || fail "$t: stats profiles $(field "$S" profiles), want $PROFILES"
	[ "$(field "$S" series)" -ge "$NTYPES" ] || fail "$t: expected at least $NTYPES series"
	[ "$(field "$S" mappings)" -ge 3 ] || fail "$t: expected at least 3 mappings"
	[ "$(field "$S" locations)" -gt 0 ] || fail "$t: no locations"
	[ "$(field "$S" stacks)" -ge "$(field "$INFO" distinct_stacks)" ] ||
		fail "$t: fewer stack nodes than distinct stacks"
	SEEN[$t]=$(counts "$S")
done
# The three /ingest paths stored the same thing.
same() { [ "$(jq -c 'del(.tenant)' <<<"${SEEN[$1]}")" = "$(jq -c 'del(.tenant)' <<<"${SEEN[$2]}")" ]; }
same perf-cli perf-raw || fail "cli and raw differ: ${SEEN[perf-cli]} ${SEEN[perf-raw]}"
same perf-mp perf-raw || fail "multipart and raw differ: ${SEEN[perf-mp]} ${SEEN[perf-raw]}"

# ---- tenants are isolated
http POST "/ingest?name=$ENC_NAME&format=pprof" -H 'X-Scope-OrgID: a' --data-binary @"$PPROF"
expect_status 200 '"samples":' "tenant a ingest"
A=$(tenant_stats a)
B=$(tenant_stats b)
[ "$(field "$A" samples)" = "$STORED" ] || fail "tenant a does not see its data"
[ "$(counts "$B")" = '{"functions":0,"locations":0,"mappings":0,"profiles":0,"samples":0,"series":0,"stacks":0,"tenant":"b"}' ] ||
	fail "tenant b sees data: $B"
ANON=$(tenant_stats anonymous)
[ "$(field "$ANON" samples)" = 0 ] || fail "anonymous sees data: $ANON"

# ---- the CLI's remote stats and the metrics agree
OUT=$("$UNHEX" stats --server "$URL" --tenant perf-cli)
grep -Eq "samples +$STORED\$" <<<"$OUT" || fail "unhex stats --server: $OUT"
http GET /metrics
expect_status 200 unhex_ingest_samples_total "GET /metrics"
grep -q "^unhex_ingest_samples_total $((STORED * 9))\$" <<<"$BODY" || fail "metrics samples: $BODY"
grep -q '^unhex_ingest_requests_total{endpoint="/push.v1.PusherService/Push",code="200"} 4$' <<<"$BODY" ||
	fail "metrics push count: $BODY"
grep -q '^unhex_build_info{version="' <<<"$BODY" || fail "no build info"
# Nine profiles of one pprof in seven requests: the later ones' arena blocks come from the pool.
grep -Eq '^unhex_ingest_pool_blocks_total\{from="pool"\} [1-9]' <<<"$BODY" ||
	fail "no arena block reused: $(grep unhex_ingest_pool <<<"$BODY")"
grep -Eq '^unhex_ingest_pool_bytes [1-9]' <<<"$BODY" || fail "the pool holds nothing: $(grep unhex_ingest_pool <<<"$BODY")"

# ---- after a clean shutdown the store on disk says the same
stop_server
LOCAL=$("$UNHEX" stats --data "$DATA" --json)
note "unhex stats --data: $LOCAL"
for t in perf-cli perf-raw perf-mp perf-push perf-pushbin; do
	got=$(jq -cS --arg t "$t" '.tenants[] | select(.tenant == $t) | del(.bytes, .head_profiles, .blocks, .retention)' <<<"$LOCAL")
	[ "$got" = "${SEEN[$t]}" ] || fail "$t on disk: $got, served: ${SEEN[$t]}"
done
"$UNHEX" stats --data "$DATA" | grep -q "tenant perf-push" || fail "human stats lack perf-push"

# ---- the allocator flags: sizes out of range are refused; "dynamic" serves
for flag_bad in mmap:1K mmap:64M mmap:0 mmap:many trim:64K trim:128M trim:0 trim:many; do
	flag=--malloc-${flag_bad%%:*}-threshold bad=${flag_bad#*:} rc=0
	ERR=$("$UNHEX" serve --data "$WORK/never" --listen 127.0.0.1:0 "$flag" "$bad" 2>&1) || rc=$?
	[ "$rc" = 2 ] && grep -q -- "$flag" <<<"$ERR" || fail "$flag $bad: exit $rc, $ERR"
done
# ---- and `unhex ingest` retries what the server asks it to retry: tenant
# slow takes a quarter of a file per second, so the first leaves a debt of
# 3 s (more than a slow run's round trip) and the second and third files get
# 429 (Retry-After) first and are accepted on a later try.
SIZE=$(stat -c %s "$PPROF")
printf 'tenant slow ingest_bytes_per_s=%d burst_s=1\n' $((SIZE / 4 + 1)) >"$WORK/limits"
start_server "$DATA" --malloc-mmap-threshold dynamic --limits-file "$WORK/limits"
OUT=$("$UNHEX" ingest --server "$URL" --tenant perf-dyn --name "$NAME" "$PPROF") ||
	fail "ingest with a dynamic threshold: $OUT"
[ "$(field "$(tenant_stats perf-dyn)" samples)" = "$STORED" ] || fail "perf-dyn: $(tenant_stats perf-dyn)"
OUT=$("$UNHEX" ingest --server "$URL" --tenant slow --name "$NAME" \
	"$WORK"/copy1.pb.gz "$WORK"/copy2.pb.gz "$WORK"/copy3.pb.gz 2>&1) || fail "ingest past a rate: $OUT"
grep -q "3 of 3 files accepted" <<<"$OUT" || fail "ingest past a rate: $OUT"
[ "$(field "$(tenant_stats slow)" samples)" = $((3 * STORED)) ] || fail "slow: $(tenant_stats slow)"
http GET /metrics
grep -Eq '^unhex_ingest_requests_total\{endpoint="/ingest",code="429"\} [1-9]' <<<"$BODY" ||
	fail "no 429 was retried: $(grep unhex_ingest_requests_total <<<"$BODY")"
stop_server
echo "PASS ingest_perf ($STORED samples, $PROFILES profiles per ingest)"

#!/usr/bin/env bash
# debuginfo_bucket.sh - debug info shared through the bucket by two
# `unhex serve --storage.backend s3` processes on one real Ceph RGW
# (docs/object-storage.md, "Debug info in the bucket").  A C program built
# with -g, its debug info split off, the STRIPPED binary profiled for real
# (perf, or gperftools).  The .debug file is uploaded to server A only: A
# puts it in the bucket under debuginfo/<build id>/debuginfo, byte for
# byte, and once a query on A built the index, the index too.  Server B
# (its own data dir, nothing uploaded to it, no debuginfod) ingests the
# profile and names every frame A names, from the bucket: one lookup, the
# file and the index downloaded, no index built.  A build ID in nobody's
# bucket reports not_found with a reason naming the bucket.  A, which
# writes the bucket index, keeps debuginfo-refs, and marks the build ID
# its profiles use (the deletion itself needs the block range, 10 minutes
# at least, to pass: tests/debuginfo/test_bucketgc.c).  Skips (77)
# only when the Ceph packages are missing.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
. "$HERE/rgw.sh"
need UNHEX
need PERF2PPROF
need_rgw
A_PID=
# set +e: under errexit `(exit $rc)` would end the trap before cleanup.
trap 'rc=$?; [ -z "$A_PID" ] || kill -KILL "$A_PID" 2>/dev/null; rgw_stop; set +e; (exit $rc); cleanup' EXIT

{
	cat <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifndef SALT
#define SALT 3
#endif
static inline __attribute__((always_inline)) unsigned mix(unsigned x)
{
	return x * 2654435761u + (x >> SALT);
}
__attribute__((noinline)) unsigned bucket_work(unsigned x)
{
	unsigned s = 0;
	for (unsigned i = 0; i < 20000; i++)
		s += mix(i ^ x);
	return s;
}
__attribute__((noinline)) static unsigned bucket_caller(volatile unsigned *p)
{
	return *p + bucket_work(*p);
}
EOF
	c_timed_main 1 'acc += bucket_caller(&v);' 'v++;'
} >"$WORK/prog.c"
cc -g -O2 -Wl,--build-id -o "$WORK/prog" "$WORK/prog.c"
cc -g -O2 -Wl,--build-id -DSALT=5 -o "$WORK/orphan" "$WORK/prog.c"
for p in prog orphan; do
	split_debug "$WORK/$p"
done
ID=$(build_id "$WORK/prog")
ID_O=$(build_id "$WORK/orphan")
[ -n "$ID" ] && [ "$ID" != "$ID_O" ] || fail "build IDs: prog '$ID', orphan '$ID_O'"
profile_to_pprof "$WORK/prog.pb.gz" "$WORK/prog.stripped" 1.5
profile_to_pprof "$WORK/orphan.pb.gz" "$WORK/orphan.stripped" 0.5

rgw_start
rgw_bucket unhex-debuginfo
export AWS_ACCESS_KEY_ID=$RGW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$RGW_SECRET_KEY
unset AWS_SESSION_TOKEN AWS_PROFILE
FLAGS=(--storage.backend s3 --storage.s3.endpoint "$RGW_URL" --storage.s3.bucket unhex-debuginfo
	--storage.s3.path-style --debuginfod-urls "" --symbolize-budget 20s)
FROM=$(($(date +%s) - 86400))
UNTIL=$(($(date +%s) + 3600))

# metric SERIES: its value on the server at $URL (0 when absent).
metric() {
	curl -s "$URL/metrics" | awk -v s="$1" 'index($0, s " ") == 1 { v = $2 } END { print v + 0 }'
}

# wait_metric SERIES MIN: until SERIES >= MIN on $URL (60 s at most).
wait_metric() {
	local i
	for i in $(seq 1 300); do
		[ "$(metric "$1")" -ge "$2" ] && return 0
		sleep 0.2
	done
	fail "$1 is $(metric "$1") on $URL after 60 s, want >= $2: $(grep -i bucket "$WORK/server.$SERVER_N.log" | tail -5)"
}

# names_of RENDER_JSON: the sorted frame names of a render.
names_of() {
	jq -r '.flamebearer.names[]' <<<"$1" | sort -u
}

PUT_FILE='unhex_debuginfo_bucket_puts_total{object="file",result="stored"}'
PUT_INDEX='unhex_debuginfo_bucket_puts_total{object="index",result="stored"}'

# ---- server A: the upload, put in the bucket
# A writes the bucket index (--target all) and keeps debug info an hour
# past its last use ("Debug info leaves the bucket").
start_server "$WORK/a" "${FLAGS[@]}" --debuginfo-retention 1h --maintain-interval 2s
A_PID=$SERVER_PID A_URL=$URL A_N=$SERVER_N
"$UNHEX" upload --server "$URL" "$WORK/prog.debug" >/dev/null || fail "upload to A"
wait_metric "$PUT_FILE" 1
[ "$(rgw_request GET "unhex-debuginfo/debuginfo/$ID/debuginfo" "$WORK/obj")" = 200 ] || fail "debuginfo/$ID/debuginfo is not in the bucket"
cmp -s "$WORK/obj" "$WORK/prog.debug" || fail "the bucket's debuginfo/$ID/debuginfo differs from the upload"
note "A put debuginfo/$ID/debuginfo, byte-identical"

# A names the frames (building the index), then puts the index.
"$UNHEX" ingest --server "$URL" --name prog.cpu "$WORK/prog.pb.gz" >/dev/null || fail "ingest to A"
Q=$(selector "$(cpu_type prog)" prog)
wait_symbolized "$Q" "$FROM" "$UNTIL"
A_NAMES=$(names_of "$BODY")
grep -qx bucket_work <<<"$A_NAMES" || fail "A does not name bucket_work: $(tr '\n' ' ' <<<"$A_NAMES")"
check_hex prog "$BODY"
wait_metric "$PUT_INDEX" 1
[ "$(metric unhex_symbolize_index_builds_total)" = 1 ] || fail "A built $(metric unhex_symbolize_index_builds_total) indexes"
note "A: $(wc -l <<<"$A_NAMES") names, the index put"

# A's own profiles use the build ID: its retention pass marks it used in
# the bucket, and its index pass writes debuginfo-refs; nothing is deleted.
wait_metric unhex_debuginfo_bucket_use_marks_total 1
code=$(rgw_request GET "unhex-debuginfo/?list-type=2&prefix=debuginfo%2F$ID%2Fused%2F" "$WORK/used.xml")
[ "$code" = 200 ] && grep -q "<Key>debuginfo/$ID/used/[0-9]*</Key>" "$WORK/used.xml" ||
	fail "no use marker of $ID in the bucket (HTTP $code): $(head -c 600 "$WORK/used.xml")"
for i in $(seq 1 150); do
	[ "$(rgw_request GET unhex-debuginfo/debuginfo-refs "$WORK/refs")" = 200 ] && break
	sleep 0.2
done
[ "$(head -c 8 "$WORK/refs")" = UNHXDIRF ] || fail "no debuginfo-refs object: $(head -c 200 "$WORK/refs")"
[ "$(metric 'unhex_debuginfo_bucket_deleted_total{object="build_id"}')" = 0 ] || fail "A deleted debug info in use"
[ "$(rgw_request HEAD "unhex-debuginfo/debuginfo/$ID/debuginfo" "$WORK/head")" = 200 ] || fail "debuginfo/$ID/debuginfo went"
note "A marked $ID used and wrote debuginfo-refs; nothing deleted"

# ---- server B: nothing uploaded to it, running at the same time as A
start_server "$WORK/b" "${FLAGS[@]}"
"$UNHEX" ingest --server "$URL" --name prog.cpu "$WORK/prog.pb.gz" >/dev/null || fail "ingest to B"
"$UNHEX" ingest --server "$URL" --name orphan.cpu "$WORK/orphan.pb.gz" >/dev/null || fail "ingest of orphan to B"
T_INGEST=$SECONDS
wait_symbolized "$Q" "$FROM" "$UNTIL"
B_NAMES=$(names_of "$BODY")
[ "$B_NAMES" = "$A_NAMES" ] || fail "B names differ from A's: $(diff <(echo "$A_NAMES") <(echo "$B_NAMES") | head -20)"
check_hex prog "$BODY"
[ "$(metric 'unhex_debuginfo_bucket_lookups_total{result="hit"}')" = 1 ] || fail "B: bucket hits $(metric 'unhex_debuginfo_bucket_lookups_total{result="hit"}')"
[ "$(metric 'unhex_debuginfo_bucket_downloads_total{object="file",result="stored"}')" = 1 ] || fail "B downloaded no file"
[ "$(metric 'unhex_debuginfo_bucket_downloads_total{object="index",result="stored"}')" = 1 ] || fail "B downloaded no index"
[ "$(metric unhex_symbolize_index_builds_total)" = 0 ] || fail "B built an index instead of downloading A's"
[ "$(metric 'unhex_debuginfo_uploads_total{result="ok"}')" = 0 ] || fail "B counts uploads"
http GET "/api/v1/debuginfo/$ID"
expect_status 200 '"status":"ok"' "B's record of $ID"
note "B names what A names from the bucket: 1 lookup, file and index downloaded, 0 builds"

# A build ID nobody uploaded: not_found, saying where it was looked for.
QO=$(selector "$(cpu_type orphan)" orphan)
wait_symbolized "$QO" "$FROM" "$UNTIL"
http GET "/api/v1/debuginfo/$ID_O"
expect_status 200 'sharing its bucket' "B's record of the orphan $ID_O"
# The background check asks the bucket about every binary of the profiles
# too, a few per check: count once it has, and while no miss is 60 s old
# (then the bucket is asked again, by design).
for i in $(seq 1 300); do
	http GET "/api/v1/debuginfo?unsymbolizable=1"
	[ "$STATUS" = 200 ] && [ "$(pending_binaries "$BODY")" = 0 ] && break
	sleep 0.2
done
misses=$(metric 'unhex_debuginfo_bucket_lookups_total{result="miss"}')
wait_symbolized "$QO" "$FROM" "$UNTIL"
if [ $((SECONDS - T_INGEST)) -lt 50 ]; then
	[ "$(metric 'unhex_debuginfo_bucket_lookups_total{result="miss"}')" = "$misses" ] ||
		fail "a repeated query of the orphan asked the bucket again"
else
	note "the orphan's repeated query came $((SECONDS - T_INGEST)) s after the ingest: its miss count is not compared"
fi
[ "$(metric 'unhex_debuginfo_bucket_puts_total{object="any",result="error"}')" = 0 ] || fail "B: put errors"
stop_server

SERVER_PID=$A_PID URL=$A_URL SERVER_N=$A_N
A_PID=
[ "$(metric 'unhex_debuginfo_bucket_puts_total{object="any",result="error"}')" = 0 ] || fail "A: put errors"
stop_server
note "debuginfo_bucket: ok"

#!/usr/bin/env bash
# objstore_blocks.sh - `unhex serve --storage.backend s3` against a real
# Ceph RGW on loopback: the blocks sealing and compaction write are
# uploaded, each byte-identical to its local file under the key of its path
# in the data directory; a restarted server finds them there (create-once
# conflict, same size) and uploads nothing twice; answers are those of a
# local-only server.  Skips (77) only when the Ceph packages are missing.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
. "$HERE/rgw.sh"
need UNHEX
need WORKLOAD
need_rgw
# set +e: under errexit `(exit $rc)` would end the trap before cleanup.
trap 'rc=$?; rgw_stop; set +e; (exit $rc); cleanup' EXIT

CPU='process_cpu:cpu:nanoseconds:cpu:nanoseconds'
END=1767225600
WL="$WORK/workload"
"$WORKLOAD" --out "$WL" --services 2 --instances 2 --minutes 120 --interval 60 --end "$END" \
	--quiet
FROM=$((END - 3 * 3600))
UNTIL=$((END + 600))

rgw_start
rgw_bucket unhex-blocks
export AWS_ACCESS_KEY_ID=$RGW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$RGW_SECRET_KEY
unset AWS_SESSION_TOKEN AWS_PROFILE
S3=(--storage.backend s3 --storage.s3.endpoint "$RGW_URL" --storage.s3.bucket unhex-blocks
	--storage.s3.path-style)

# s3_get KEY OUT: the object KEY of the bucket into OUT; prints the HTTP status.
s3_get() {
	curl -s -o "$2" -w '%{http_code}' --max-time 30 \
		--aws-sigv4 "aws:amz:$RGW_REGION:s3" --user "$RGW_ACCESS_KEY:$RGW_SECRET_KEY" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$RGW_URL/unhex-blocks/$1" || true
}

# maint ACTION: the server's unhex_store_maintenance_total of ACTION.
maint() {
	curl -s "$URL/metrics" | awk -v a="action=\"$1\"" 'index($0, "unhex_store_maintenance_total{" a "}") == 1 { print $2 }'
}

# all_uploaded DATA: every live block of the server (not those compaction
# replaced, whose files stay for the readers' grace period) is in the
# bucket, byte for byte.
all_uploaded() {
	local data=$1 id key n=0
	for id in $(jq -r '.blocks.list[].id' <<<"$(tenant_stats anonymous)"); do
		key=blocks/anonymous/$id.blk
		[ "$(s3_get "$key" "$WORK/obj")" = 200 ] || return 1
		cmp -s "$data/$key" "$WORK/obj" || fail "$key differs from its local file"
		n=$((n + 1))
	done
	[ $n -gt 0 ] || return 1
	UPLOADED_FILES=$n
}

answers() {
	local dir=$1 svc q
	mkdir -p "$dir"
	jq -cS '{profiles, samples, series}' <<<"$(tenant_stats anonymous)" >"$dir/stats"
	for svc in $(jq -r '.[]' <<<"$(curl -s "$URL/pyroscope/label-values?label=service_name")"); do
		q=$(selector "$CPU" "$svc")
		http GET "/pyroscope/render?query=$q&from=$FROM&until=$UNTIL&maxNodes=65536"
		[ "$STATUS" = 200 ] || fail "render $svc: $STATUS $BODY"
		jq -c 'del(.symbolization)' <<<"$BODY" >"$dir/render.$svc"
	done
}

# ---- the reference: local only, never sealed
start_server "$WORK/ref" --maintain-interval 1000h
ingest_manifest "$WL"
answers "$WORK/expect"
stop_server

# ---- sealed, compacted and uploaded
DATA="$WORK/data"
start_server "$DATA" --maintain-interval 1s --block-range 10m "${S3[@]}"
ingest_manifest "$WL"
wait_settled 6
for i in $(seq 1 300); do
	all_uploaded "$DATA" && break
	sleep 0.2
done
all_uploaded "$DATA" || fail "the blocks of $DATA are not all in the bucket"
answers "$WORK/got"
diff -r "$WORK/expect" "$WORK/got" >/dev/null || fail "answers differ with --storage.backend s3"
UP=$(maint uploaded_blocks)
[ "$UP" -ge "$UPLOADED_FILES" ] || fail "uploaded_blocks $UP < $UPLOADED_FILES block files"
[ "$(maint upload_failures)" = 0 ] || fail "upload failures: $(maint upload_failures)"
note "$UPLOADED_FILES block files in the bucket, byte-identical ($UP uploads, compacted ones included)"
stop_server

# ---- a restart: every live block is found in the bucket, none uploaded again
start_server "$DATA" --maintain-interval 1s --block-range 10m "${S3[@]}"
NFILES=$(jq -r '.blocks.count' <<<"$(tenant_stats anonymous)")
for i in $(seq 1 300); do
	[ "$(maint upload_found)" -ge "$NFILES" ] && break
	sleep 0.2
done
[ "$(maint upload_found)" = "$NFILES" ] || fail "upload_found $(maint upload_found), want $NFILES"
[ "$(maint uploaded_blocks)" = 0 ] || fail "a restart uploaded blocks again: $(maint uploaded_blocks)"
[ "$(maint upload_failures)" = 0 ] || fail "upload failures after a restart: $(grep upload "$WORK/server.$SERVER_N.log")"
answers "$WORK/got2"
diff -r "$WORK/expect" "$WORK/got2" >/dev/null || fail "answers changed across a restart"
stop_server

# ---- RGW stopped: the server still starts, ingests and answers; uploads wait
rgw_stop
start_server "$WORK/down" --maintain-interval 1s --block-range 10m "${S3[@]}"
ingest_manifest "$WL"
answers "$WORK/got3"
diff -r "$WORK/expect" "$WORK/got3" >/dev/null || fail "answers differ while the bucket is down"
for i in $(seq 1 300); do
	[ "$(maint upload_failures)" -gt 0 ] && break
	sleep 0.2
done
[ "$(maint upload_failures)" -gt 0 ] || fail "no upload failure counted with RGW stopped"
grep -q 'retried at the next maintenance pass' "$WORK/server.$SERVER_N.log" ||
	fail "no log line for the failed upload"
stop_server
note "objstore blocks: ok"

#!/usr/bin/env bash
# objstore_rgw.sh - the S3 client of objstore/ against a real Ceph RGW on
# loopback: every operation (tests/objstore/rgw_check.c "ops"), then RGW
# paused (SIGSTOP: connections accepted, nothing answered) and stopped
# (connections refused): each request retries a bounded number of times
# and fails with a clear error, never hangs.  Skips (77) only when the
# Ceph packages are not installed.
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/rgw.sh"
need RGW_CHECK
need_rgw
# set +e: under errexit `(exit $rc)` would end the trap before cleanup.
trap 'rc=$?; rgw_stop; set +e; (exit $rc); cleanup' EXIT

rgw_start
rgw_bucket unhex-it
export S3_ENDPOINT=$RGW_URL S3_BUCKET=unhex-it
export AWS_ACCESS_KEY_ID=$RGW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$RGW_SECRET_KEY
unset AWS_SESSION_TOKEN AWS_PROFILE AWS_SHARED_CREDENTIALS_FILE
# Virtual-host style: libcurl resolves every *.localhost name to loopback.
export S3_VHOST_ENDPOINT="http://localhost:$RGW_PORT"

"$RGW_CHECK" ops || fail "operations against RGW"

note "RGW paused: requests must time out after their retries"
rgw_pause
timeout 120 "$RGW_CHECK" down || fail "a paused RGW (rc $?)"
rgw_resume
"$RGW_CHECK" ops >/dev/null || fail "operations after RGW resumed"

note "RGW stopped: connections refused, retried, then a clear error"
rgw_stop
timeout 120 "$RGW_CHECK" down || fail "a stopped RGW (rc $?)"
note "objstore against RGW: ok"

# roles.sh - `unhex serve` roles as separate processes, for the tests on a
# real Ceph RGW (objstore_roles.sh, objstore_faults.sh).  Sourced after
# lib.sh and rgw.sh; sets the EXIT trap (every role killed, RGW stopped,
# $WORK removed).
#
#   start_role NAME DATA ARGS...  `unhex serve` as NAME (start_server's args)
#   use NAME                      points the lib's http helpers at NAME
#   stop_role NAME                SIGTERM, and it must exit 0
#   kill_role NAME                SIGKILL, no questions asked
#   bucket EVENT                  unhex_bucket_index_total{event=EVENT} (or
#                                 the gauge unhex_bucket_EVENT) of $URL
#   maint ACTION                  unhex_store_maintenance_total{action=ACTION}
#   until_ok SECONDS CMD...       runs CMD until it succeeds, false after SECONDS
#   roles_bucket NAME             starts RGW, creates bucket NAME, sets S3 (the
#                                 flags naming it) and ROLE (S3, 1 s passes,
#                                 10-minute blocks)

# The roles run at once: their pids, by name, stopped by the EXIT trap.
declare -A PIDS URLS LOGS
stop_roles() {
	local r
	for r in "${!PIDS[@]}"; do
		kill -KILL "${PIDS[$r]}" 2>/dev/null || true
		wait "${PIDS[$r]}" 2>/dev/null || true
	done
}
# set +e: under errexit `(exit $rc)` would end the trap before cleanup.
trap 'rc=$?; stop_roles; rgw_stop; set +e; (exit $rc); cleanup' EXIT

start_role() {
	local name=$1
	shift
	start_server "$@"
	PIDS[$name]=$SERVER_PID
	URLS[$name]=$URL
	LOGS[$name]=$WORK/server.$SERVER_N.log
	SERVER_PID=
}
use() {
	URL=${URLS[$1]}
}
stop_role() {
	local rc=0
	kill -TERM "${PIDS[$1]}"
	wait "${PIDS[$1]}" || rc=$?
	unset "PIDS[$1]"
	[ $rc -eq 0 ] || fail "$1 exited with $rc after SIGTERM"
}
kill_role() {
	kill -KILL "${PIDS[$1]}"
	wait "${PIDS[$1]}" 2>/dev/null || true
	unset "PIDS[$1]"
}

bucket() {
	curl -s "$URL/metrics" | awk -v e="$1" '
		index($0, "unhex_bucket_index_total{event=\"" e "\"}") == 1 { print $2 }
		$1 == "unhex_bucket_" e { print $2 }'
}
maint() {
	curl -s "$URL/metrics" | awk -v a="action=\"$1\"" 'index($0, "unhex_store_maintenance_total{" a "}") == 1 { print $2 }'
}
# The roles work at their own pace (a loaded machine, a sanitizer build):
# wait on what they report, never on the clock.
until_ok() {
	local end=$((SECONDS + $1))
	shift
	while ! "$@"; do
		[ $SECONDS -lt $end ] || return 1
		sleep 0.2
	done
}

roles_bucket() {
	rgw_start
	rgw_bucket "$1"
	export AWS_ACCESS_KEY_ID=$RGW_ACCESS_KEY AWS_SECRET_ACCESS_KEY=$RGW_SECRET_KEY
	unset AWS_SESSION_TOKEN AWS_PROFILE
	S3=(--storage.backend s3 --storage.s3.endpoint "$RGW_URL" --storage.s3.bucket "$1"
		--storage.s3.path-style --storage.s3.sync-interval 1s --storage.s3.delete-delay 5s)
	ROLE=(--maintain-interval 1s --block-range 10m "${S3[@]}")
}

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
#   answers DIR                   $URL's stats of the tenant anonymous and every
#                                 service's $CPU flame graph from $FROM to
#                                 $UNTIL, one file each, into DIR

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

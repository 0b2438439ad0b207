# roles.sh - `unhex serve` roles as separate processes, for the tests on a
# real Ceph RGW (objstore_roles.sh, objstore_faults.sh, objstore_outage.sh).
# Sourced after lib.sh and rgw.sh; needs UNHEX and WORKLOAD, skips (77)
# without the Ceph packages; sets the EXIT trap (every role killed, RGW
# stopped, $WORK removed).
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
#   roles_workload MINUTES        WL: 2 services x 2 instances, a profile a
#                                 minute for MINUTES up to END; END, FROM, UNTIL
#   move_clocks ROLE...           a profile two hours after END to each ROLE
#                                 (tenant clock): the workload's ranges are over
#   converged                     $URL's tenant anonymous holds $WORK/expect/stats
#   round_robin A B               WL's files alternately to roles A and B (all
#                                 must be accepted); SENT: how many
#
# What the client saw acknowledged (objstore_faults.sh, objstore_outage.sh):
#   acked_init                    ACKED: an empty workload of WL's files;
#                                 LINES, N: WL's manifest lines
#   send ROLE DIR LINE ARGS...    one file of workload DIR to ROLE; 0 when 200
#   push ROLE LINE                send; an acknowledged file joins ACKED,
#                                 ACK_PROFILES and ACK_SAMPLES
#   push_range FROM TO            LINES[FROM, TO) round-robin to ing1, ing2
#   reference                     $WORK/expect: one local server's answers
#                                 over ACKED, checked against the ACK_ counts
need UNHEX
need WORKLOAD
need_rgw

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
	rgw_s3 "$1"
	S3+=(--storage.s3.sync-interval 1s --storage.s3.delete-delay 20s)
	ROLE=(--maintain-interval 1s --block-range 10m "${S3[@]}")
}

roles_workload() {
	block_workload "$1" 60
	FROM=$((END - 60 * $1 - 3600))
}

# A profile of another tenant two hours after the workload moves an
# ingester's clock: every range of the workload is over and sealed (the
# ingesters' heads are not queried: docs/object-storage.md, "Freshness").
round_robin() {
	local path name secs
	SENT=0
	while IFS=$'\t' read -r path name secs; do
		case "$path" in '' | '#'*) continue ;; esac
		if [ $((SENT % 2)) = 0 ]; then use "$1"; else use "$2"; fi
		"$UNHEX" ingest --server "$URL" --name "$name" --from "$secs" "$WL/$path" >/dev/null ||
			fail "$path was rejected"
		SENT=$((SENT + 1))
	done <"$WL/manifest.tsv"
}

move_clocks() {
	local r line
	[ -d "$WORK/later" ] ||
		"$WORKLOAD" --out "$WORK/later" --services 1 --instances 1 --minutes 1 --interval 60 \
			--end $((END + 7200)) --quiet
	for r in "$@"; do
		while IFS= read -r line; do
			case "$line" in '' | '#'*) continue ;; esac
			send "$r" "$WORK/later" "$line" --tenant clock ||
				fail "$r did not acknowledge the later profile: $(tail -n 3 "$WORK/push.err")"
		done <"$WORK/later/manifest.tsv"
	done
}

converged() {
	[ "$(jq -cS '{profiles, samples, series}' <<<"$(tenant_stats anonymous)")" = "$(cat "$WORK/expect/stats")" ]
}

acked_init() {
	ACKED="$WORK/acked"
	cp -rs "$WL" "$ACKED"
	rm "$ACKED/manifest.tsv" # a link to the workload's own
	: >"$ACKED/manifest.tsv"
	mapfile -t LINES < <(grep -v -e '^#' -e '^$' "$WL/manifest.tsv")
	N=${#LINES[@]}
	[ "$N" -ge 12 ] || fail "the workload has $N files"
	ACK_PROFILES=0
	ACK_SAMPLES=0
}

# A push that takes 120 s is a hang.
send() {
	local role=$1 dir=$2 path name secs rc=0
	IFS=$'\t' read -r path name secs <<<"$3"
	shift 3
	use "$role"
	timeout 120 "$UNHEX" ingest --server "$URL" "$@" --name "$name" --from "$secs" "$dir/$path" \
		>"$WORK/push.out" 2>>"$WORK/push.err" || rc=$?
	[ $rc -ne 124 ] || fail "a push to $role hung: $path"
	return $rc
}
push() {
	local p s
	send "$1" "$WL" "$2" || return 1
	printf '%s\n' "$2" >>"$ACKED/manifest.tsv"
	read -r p s < <(sed -n 's/.*: \([0-9]*\) profiles, \([0-9]*\) samples$/\1 \2/p' "$WORK/push.out")
	[ -n "$s" ] || fail "unhex ingest said: $(cat "$WORK/push.out")"
	ACK_PROFILES=$((ACK_PROFILES + p))
	ACK_SAMPLES=$((ACK_SAMPLES + s))
}
push_range() {
	local i r
	for ((i = $1; i < $2; i++)); do
		if [ $((i % 2)) = 0 ]; then r=ing1; else r=ing2; fi
		push $r "${LINES[$i]}" || fail "$r rejected ${LINES[$i]}: $(tail -n 3 "$WORK/push.err")"
	done
}

reference() {
	start_server "$WORK/ref" --maintain-interval 1000h
	ingest_manifest "$ACKED"
	answers "$WORK/expect"
	stop_server
	[ "$(jq -c '[.profiles, .samples]' "$WORK/expect/stats")" = "[$ACK_PROFILES,$ACK_SAMPLES]" ] ||
		fail "the reference holds $(cat "$WORK/expect/stats"), not the $ACK_PROFILES profiles and $ACK_SAMPLES samples acknowledged"
	note "reference: $(cat "$WORK/expect/stats")"
}

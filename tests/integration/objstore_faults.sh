#!/usr/bin/env bash
# objstore_faults.sh - faults in a scale-out deployment on a real Ceph RGW
# (two ingesters, a compactor, two queriers, as separate processes; helpers
# in roles.sh).  The client counts what was acknowledged (each push's HTTP
# status); after the faults the queriers answer exactly that:
#   1. an ingester killed with SIGKILL between two acknowledged pushes and
#      restarted later on the same data directory loses nothing of what it
#      acknowledged (its WAL) and doubles nothing;
#   2. radosgw paused (SIGSTOP) while the ingesters take profiles and seal
#      blocks: every push is still answered 200 (none hangs), uploads fail
#      and are counted, blocks wait as pending, and once RGW is back they
#      are uploaded by themselves;
#   3. two queriers answer byte for byte the same flame graphs, equal to
#      those of one local server that ingested exactly the acknowledged
#      profiles.
# Skips (77) only when the Ceph packages are missing.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
. "$HERE/rgw.sh"
. "$HERE/roles.sh"
need UNHEX
need WORKLOAD
need_rgw

CPU='process_cpu:cpu:nanoseconds:cpu:nanoseconds'
END=1767225600
WL="$WORK/workload"
"$WORKLOAD" --out "$WL" --services 2 --instances 2 --minutes 60 --interval 60 --end "$END" \
	--quiet
FROM=$((END - 2 * 3600))
UNTIL=$((END + 600))
# What the ingesters acknowledged, as a workload of its own (same files).
ACKED="$WORK/acked"
cp -rs "$WL" "$ACKED"
rm "$ACKED/manifest.tsv" # a link to the workload's own
: >"$ACKED/manifest.tsv"
mapfile -t LINES < <(grep -v -e '^#' -e '^$' "$WL/manifest.tsv")
N=${#LINES[@]}
[ "$N" -ge 12 ] || fail "the workload has $N files"

# send ROLE DIR LINE ARGS...: sends the file of manifest LINE of workload
# DIR to ROLE; 0 when it was acknowledged (HTTP 200).  A push that takes
# 120 s is a hang.
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
# push ROLE LINE: send; an acknowledged file goes into $ACKED, the profiles
# and samples the ingester said it took into ACK_PROFILES and ACK_SAMPLES.
ACK_PROFILES=0
ACK_SAMPLES=0
push() {
	local p s
	send "$1" "$WL" "$2" || return 1
	printf '%s\n' "$2" >>"$ACKED/manifest.tsv"
	read -r p s < <(sed -n 's/.*: \([0-9]*\) profiles, \([0-9]*\) samples$/\1 \2/p' "$WORK/push.out")
	[ -n "$s" ] || fail "unhex ingest said: $(cat "$WORK/push.out")"
	ACK_PROFILES=$((ACK_PROFILES + p))
	ACK_SAMPLES=$((ACK_SAMPLES + s))
}
# push_range FROM TO: lines [FROM, TO) round-robin over ing1 and ing2, each
# of which must acknowledge.
push_range() {
	local i r
	for ((i = $1; i < $2; i++)); do
		if [ $((i % 2)) = 0 ]; then r=ing1; else r=ing2; fi
		push $r "${LINES[$i]}" || fail "$r rejected ${LINES[$i]}: $(tail -n 3 "$WORK/push.err")"
	done
}

roles_bucket unhex-faults
start_role ing1 "$WORK/ing1" --target ingester "${ROLE[@]}"
start_role ing2 "$WORK/ing2" --target ingester "${ROLE[@]}"
start_role comp "$WORK/comp" --target compactor "${ROLE[@]}"
start_role qry1 "$WORK/qry1" --target querier "${ROLE[@]}"
start_role qry2 "$WORK/qry2" --target querier "${ROLE[@]}"

A=$((N / 3))
B=$((2 * N / 3))
MID=$(((A + B) / 2))

# ---- 1. ingester 1 killed in the middle of the ingest, restarted later
push_range 0 $A
use ing1
# Its head holds acknowledged profiles that are in no block yet: only its
# WAL has them (the final totals say whether they survived).
ING1=$(jq -r .head_profiles <<<"$(tenant_stats anonymous)")
[ "$ING1" -gt 0 ] || fail "ing1's head is empty: nothing to lose"
kill_role ing1
REFUSED=0
for ((i = A; i < MID; i++)); do
	if [ $((i % 2)) = 0 ]; then
		# Nothing listens on ing1's port: refused, not acknowledged.
		! push ing1 "${LINES[$i]}" || fail "a killed ingester acknowledged a push"
		REFUSED=$((REFUSED + 1))
	else
		push ing2 "${LINES[$i]}" || fail "ing2 rejected ${LINES[$i]}"
	fi
done
start_role ing1 "$WORK/ing1" --target ingester "${ROLE[@]}"
push_range $MID $B
note "ing1 killed with $ING1 profiles in its head, restarted; $REFUSED pushes refused meanwhile"

# ---- 2. RGW paused while the ingesters take profiles and seal blocks
failures() {
	[ "$(maint upload_failures)" -gt 0 ] && [ "$(bucket upload_pending_blocks)" -gt 0 ]
}
rgw_pause
push_range $B $N
# A profile of another tenant two hours later moves each ingester's clock:
# every range of the workload is over, sealed, and its upload fails.
"$WORKLOAD" --out "$WORK/later" --services 1 --instances 1 --minutes 1 --interval 60 \
	--end $((END + 7200)) --quiet
for r in ing1 ing2; do
	while IFS= read -r line; do
		case "$line" in '' | '#'*) continue ;; esac
		send $r "$WORK/later" "$line" --tenant clock ||
			fail "$r did not acknowledge the later profile with RGW paused: $(tail -n 3 "$WORK/push.err")"
	done <"$WORK/later/manifest.tsv"
done
for r in ing1 ing2; do
	use $r
	until_ok 300 failures ||
		fail "$r counts no failed upload with RGW paused: failures $(maint upload_failures), pending $(bucket upload_pending_blocks): $(tail -n 5 "${LOGS[$r]}")"
	note "$r with RGW paused: $(maint upload_failures) failed uploads, $(bucket upload_pending_blocks) blocks pending"
done
rgw_resume
ACK=$(wc -l <"$ACKED/manifest.tsv")
[ "$ACK" -eq $((N - REFUSED)) ] || fail "$ACK pushes acknowledged of $((N - REFUSED))"
note "$ACK of $N pushes acknowledged ($ACK_PROFILES profiles, $ACK_SAMPLES samples); RGW resumed"

# ---- the reference: one local server that ingested what was acknowledged
start_server "$WORK/ref" --maintain-interval 1000h
ingest_manifest "$ACKED"
answers "$WORK/expect"
stop_server
[ "$(jq -c '[.profiles, .samples]' "$WORK/expect/stats")" = "[$ACK_PROFILES,$ACK_SAMPLES]" ] ||
	fail "the reference holds $(cat "$WORK/expect/stats"), not the $ACK_PROFILES profiles and $ACK_SAMPLES samples acknowledged"
note "reference: $(cat "$WORK/expect/stats")"

uploaded() {
	[ "$(bucket upload_pending_blocks)" = 0 ]
}
for r in ing1 ing2; do
	use $r
	until_ok 300 uploaded || fail "$r still has $(bucket upload_pending_blocks) blocks pending with RGW back"
done
converged() {
	[ "$(jq -cS '{profiles, samples, series}' <<<"$(tenant_stats anonymous)")" = "$(cat "$WORK/expect/stats")" ]
}
for r in qry1 qry2; do
	use $r
	until_ok 400 converged ||
		fail "$r holds $(jq -cS '{profiles, samples, series, blocks: .blocks.count}' <<<"$(tenant_stats anonymous)"), not $(cat "$WORK/expect/stats")"
done
note "both queriers hold exactly what was acknowledged after ${SECONDS}s of the test"

# ---- 3. two queriers, the same exact answers
use qry1
answers "$WORK/got1"
use qry2
answers "$WORK/got2"
for d in got1 got2; do
	diff -r "$WORK/expect" "$WORK/$d" >/dev/null ||
		fail "$d differs from one server's answers: $(diff -r "$WORK/expect" "$WORK/$d" | head -c 2000)"
done
# Byte for byte, as the queriers send them.
use qry1
for svc in $(jq -r '.[]' <<<"$(curl -s "$URL/pyroscope/label-values?label=service_name&from=$FROM&until=$UNTIL")"); do
	q=$(selector "$CPU" "$svc")
	for r in qry1 qry2; do
		use $r
		http GET "/pyroscope/render?query=$q&from=$FROM&until=$UNTIL&maxNodes=65536"
		[ "$STATUS" = 200 ] || fail "render $svc on $r: $STATUS $BODY"
		cp "$WORK/body" "$WORK/raw.$r.$svc"
	done
	cmp -s "$WORK/raw.qry1.$svc" "$WORK/raw.qry2.$svc" ||
		fail "the queriers' flame graphs of $svc differ: $(diff <(jq -S . "$WORK/raw.qry1.$svc") <(jq -S . "$WORK/raw.qry2.$svc") | head -c 1500)"
done
note "two queriers: byte-identical flame graphs, equal to one server's"

for r in qry1 qry2 comp ing1 ing2; do stop_role $r; done

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

roles_workload 60
acked_init

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
# Every range of the workload is sealed, and its upload fails.
move_clocks ing1 ing2
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
reference

uploaded() {
	[ "$(bucket upload_pending_blocks)" = 0 ]
}
for r in ing1 ing2; do
	use $r
	until_ok 300 uploaded || fail "$r still has $(bucket upload_pending_blocks) blocks pending with RGW back"
done
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

#!/usr/bin/env bash
# objstore_outage.sh - the compactor and the bucket going away in a
# scale-out deployment on a real Ceph RGW (two ingesters, a compactor, two
# queriers, as separate processes; helpers in roles.sh).  The client counts
# what was acknowledged; after each fault the queriers answer exactly that:
#   1. the compactor killed with SIGKILL mid-compaction, at the crash point
#      between its output's rename and the record that publishes it
#      (UNHEX_CRASHPOINT=compact-output-written), with the output then put
#      in the bucket as an upload would have (the state of a kill after the
#      upload, before the index write): restarted on its data directory, it
#      adopts the output, finds it in the bucket (create-once: nothing put
#      twice), indexes it in place of its sources, and the queriers count
#      every profile once;
#   2. radosgw terminated (connections refused, not the stall of
#      objstore_faults' SIGSTOP) for at least 30 s while the ingesters take
#      profiles and seal blocks: every push is answered 200 (ingest never
#      waits on the bucket; `unhex ingest` does not retry), the ingesters
#      count failed uploads and pending blocks, the compactor failed index
#      writes, the queriers failed index reads and keep what they held;
#      radosgw started again on the same data, everything pending is
#      uploaded and indexed by itself;
#   3. both queriers then answer what one local server that ingested the
#      acknowledged profiles answers: nothing lost, nothing doubled.
# Skips (77) only when the Ceph packages are missing.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
. "$HERE/rgw.sh"
. "$HERE/roles.sh"

# Two hours: the first is compacted once the ingesters' blocks reach 30
# minutes into the second (the compactor's clock is the newest profile it
# knows, and a slot is compacted --seal-delay, 15 min, after it ended); the
# second hour is never over, so there is exactly one compaction.
roles_workload 120
acked_init
A=$((3 * N / 4))

roles_bucket unhex-outage
start_role ing1 "$WORK/ing1" --target ingester "${ROLE[@]}"
start_role ing2 "$WORK/ing2" --target ingester "${ROLE[@]}"
start_role qry1 "$WORK/qry1" --target querier "${ROLE[@]}"
start_role qry2 "$WORK/qry2" --target querier "${ROLE[@]}"

# acked: $URL's tenant anonymous holds what the client saw acknowledged.
acked() {
	[ "$(jq -c '[.profiles, .samples]' <<<"$(tenant_stats anonymous)")" = "[$ACK_PROFILES,$ACK_SAMPLES]" ]
}

# ---- 1. the compactor killed between its output and the output's record
push_range 0 $A
move_clocks ing1 ing2
# The compactor starts once every block is in the bucket, so that its first
# compaction takes them all and the restarted one has nothing left to merge.
sealed() {
	[ "$(jq -r .head_profiles <<<"$(tenant_stats anonymous)")" = 0 ] &&
		[ "$(bucket upload_pending_blocks)" = 0 ] && [ "$(maint uploaded_blocks)" -gt 0 ]
}
for r in ing1 ing2; do
	use $r
	until_ok 300 sealed || fail "$r did not seal and upload its blocks: $(tail -n 5 "${LOGS[$r]}")"
done
UNHEX_CRASHPOINT=compact-output-written start_role comp "$WORK/comp" --target compactor "${ROLE[@]}"
crashed() {
	grep -q 'crash point compact-output-written reached' "${LOGS[comp]}"
}
until_ok 300 crashed || fail "the compactor never reached its crash point: $(tail -n 20 "${LOGS[comp]}")"
rc=0
wait "${PIDS[comp]}" || rc=$?
unset "PIDS[comp]"
[ $rc = 137 ] || fail "the compactor exited with $rc at its crash point, not SIGKILL's 137"
mapfile -t OUTPUT < <(cd "$WORK/comp" && find blocks -name '*.blk')
[ ${#OUTPUT[@]} = 1 ] || fail "the compactor left ${#OUTPUT[@]} block files: ${OUTPUT[*]}"
ORPHAN=$(basename "${OUTPUT[0]}" .blk)
code=$(rgw_request PUT "unhex-outage/${OUTPUT[0]}" "$WORK/put.out" -T "$WORK/comp/${OUTPUT[0]}")
[ "$code" = 200 ] || fail "cannot put ${OUTPUT[0]} (HTTP $code): $(cat "$WORK/put.out")"
# The index the compactor wrote before it compacted counts the sources;
# the output in the bucket is in no index.
for r in qry1 qry2; do
	use $r
	until_ok 400 acked ||
		fail "$r holds $(jq -cS '{profiles, samples, blocks: .blocks.count}' <<<"$(tenant_stats anonymous)") with the compactor down, not the $ACK_PROFILES profiles and $ACK_SAMPLES samples acknowledged"
	! jq -e --arg id "$ORPHAN" '[.blocks.list[].id] | index($id) != null' <<<"$(tenant_stats anonymous)" >/dev/null ||
		fail "$r lists the output $ORPHAN that no index holds"
done
note "the compactor was killed after writing ${OUTPUT[0]}; put in the bucket, not indexed; the queriers count its sources"

start_role comp "$WORK/comp" --target compactor "${ROLE[@]}"
# counted: $URL counts the output, in place of its sources (one sync may
# drop the sources before it has read the output's footer: wait for both).
counted() {
	local s
	s=$(tenant_stats anonymous)
	[ "$(jq -c '[.profiles, .samples]' <<<"$s")" = "[$ACK_PROFILES,$ACK_SAMPLES]" ] &&
		jq -e --arg id "$ORPHAN" '[.blocks.list[].id] | index($id) != null' <<<"$s" >/dev/null
}
use comp
found() {
	[ "$(maint upload_found)" -gt 0 ] && [ "$(bucket upload_pending_blocks)" = 0 ] &&
		[ "$(bucket writes)" -gt 0 ] && [ "$(bucket deletion_marks)" -gt 0 ]
}
until_ok 300 found ||
	fail "the restarted compactor did not take its output over: found $(maint upload_found), pending $(bucket upload_pending_blocks), index writes $(bucket writes), marks $(bucket deletion_marks): $(tail -n 10 "${LOGS[comp]}")"
[ "$(maint uploaded_blocks)" = 0 ] || fail "the compactor uploaded its output again: $(maint uploaded_blocks) blocks"
for r in qry1 qry2; do
	use $r
	until_ok 400 counted ||
		fail "$r holds $(jq -cS '{profiles, samples, blocks: [.blocks.list[].id]}' <<<"$(tenant_stats anonymous)"), not the $ACK_PROFILES profiles and $ACK_SAMPLES samples acknowledged with the compactor's output $ORPHAN"
done
use comp
note "the restarted compactor found its output in the bucket and indexed it ($(bucket deletion_marks) blocks marked); both queriers count $ACK_PROFILES profiles, $ACK_SAMPLES samples"

# ---- 2. radosgw terminated for at least 30 s while the ingesters take profiles
use comp
WRITE_FAILURES=$(bucket write_failures)
declare -A FAILED UPLOADED SYNC_FAILURES
for r in ing1 ing2 qry1 qry2; do
	use $r
	FAILED[$r]=$(maint upload_failures)
	UPLOADED[$r]=$(maint uploaded_blocks)
	SYNC_FAILURES[$r]=$(bucket sync_failures)
done
P1_PROFILES=$ACK_PROFILES
P1_SAMPLES=$ACK_SAMPLES
failing() {
	[ "$(maint upload_failures)" -gt "${FAILED[$1]}" ] && [ "$(bucket upload_pending_blocks)" -gt 0 ]
}
rgw_down
DOWN=$SECONDS
# Every push answered 200: push_range fails the test on any other answer.
push_range $A $N
for r in ing1 ing2; do
	use $r
	until_ok 300 failing $r ||
		fail "$r counts no failed upload with RGW down: failures $(maint upload_failures), pending $(bucket upload_pending_blocks): $(tail -n 5 "${LOGS[$r]}")"
done
use comp
index_failing() {
	[ "$(bucket write_failures)" -gt "$WRITE_FAILURES" ]
}
until_ok 300 index_failing || fail "the compactor counts no failed index write with RGW down"
# The queriers keep the index they read last: what was acknowledged before.
sync_failing() {
	[ "$(bucket sync_failures)" -gt "${SYNC_FAILURES[$1]}" ]
}
for r in qry1 qry2; do
	use $r
	until_ok 300 sync_failing $r || fail "$r counts no failed index read with RGW down"
	[ "$(jq -c '[.profiles, .samples]' <<<"$(tenant_stats anonymous)")" = "[$P1_PROFILES,$P1_SAMPLES]" ] ||
		fail "$r with RGW down holds $(jq -c '[.profiles, .samples]' <<<"$(tenant_stats anonymous)"), not the [$P1_PROFILES,$P1_SAMPLES] it held before"
done
# The outage lasts 30 s at least, whatever the pushes took.
[ $((SECONDS - DOWN)) -ge 30 ] || sleep $((30 - (SECONDS - DOWN)))
for r in ing1 ing2; do
	use $r
	note "$r with RGW down: $(($(maint upload_failures) - FAILED[$r])) failed uploads, $(bucket upload_pending_blocks) blocks pending"
done
rgw_up
note "radosgw down for $((SECONDS - DOWN)) s, started again"
ACK=$(wc -l <"$ACKED/manifest.tsv")
[ "$ACK" -eq "$N" ] || fail "$ACK pushes acknowledged of $N"

# ---- 3. everything uploaded by itself; the queriers hold what was acknowledged
reference
uploaded() {
	[ "$(bucket upload_pending_blocks)" = 0 ] && [ "$(maint uploaded_blocks)" -gt "${UPLOADED[$1]}" ]
}
for r in ing1 ing2; do
	use $r
	until_ok 300 uploaded $r ||
		fail "$r still has $(bucket upload_pending_blocks) blocks pending with RGW back"
done
for r in qry1 qry2; do
	use $r
	until_ok 400 converged ||
		fail "$r holds $(jq -cS '{profiles, samples, series, blocks: .blocks.count}' <<<"$(tenant_stats anonymous)"), not $(cat "$WORK/expect/stats")"
	answers "$WORK/got.$r"
	diff -r "$WORK/expect" "$WORK/got.$r" >/dev/null ||
		fail "$r differs from one server's answers: $(diff -r "$WORK/expect" "$WORK/got.$r" | head -c 2000)"
done
note "both queriers answer exactly what was acknowledged after ${SECONDS}s of the test"

for r in qry1 qry2 comp ing1 ing2; do stop_role $r; done

#!/usr/bin/env bash
# objstore_roles.sh - a scale-out deployment on a real Ceph RGW, as separate
# processes: two ingesters (--target ingester), a compactor and a querier.
# Profiles go round-robin to the ingesters; the querier, which holds no data
# of its own, finds the blocks through the bucket index and answers exactly
# what one server that ingested everything answers, before and after the
# compactor merged the ingesters' blocks (nothing counted twice).  The
# querier refuses ingest naming its role; the ingesters drop the blocks the
# compactor merged; a querier started on an empty data directory answers
# the same.  Skips (77) only when the Ceph packages are missing.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
. "$HERE/rgw.sh"
. "$HERE/roles.sh"

roles_workload 120

# ---- the reference: one local server that ingests everything
start_server "$WORK/ref" --maintain-interval 1000h
ingest_manifest "$WL"
answers "$WORK/expect"
stop_server
note "reference: $(cat "$WORK/expect/stats")"

roles_bucket unhex-roles

start_role ing1 "$WORK/ing1" --target ingester "${ROLE[@]}"
start_role ing2 "$WORK/ing2" --target ingester "${ROLE[@]}"
start_role comp "$WORK/comp" --target compactor "${ROLE[@]}"
start_role qry "$WORK/qry" --target querier "${ROLE[@]}"

# ---- the querier and the compactor accept no profiles, and say why
use qry
http POST "/ingest?name=app.cpu&from=$END" --data-binary @/dev/null
expect_status 503 "querier" "ingest to the querier"
use comp
http POST "/ingest?name=app.cpu&from=$END" --data-binary @/dev/null
expect_status 503 "compactor" "ingest to the compactor"

# ---- profiles round-robin over the two ingesters
round_robin ing1 ing2
move_clocks ing1 ing2
note "$SENT workload files sent round-robin to two ingesters"

# ---- the querier converges on the reference, then stays there while the
# compactor merges the ingesters' blocks and deletes what it replaced
use qry
until_ok 400 converged ||
	fail "the querier holds $(jq -cS '{profiles, samples, series, blocks: .blocks.count}' <<<"$(tenant_stats anonymous)"), not $(cat "$WORK/expect/stats"); ingesters: $(for r in ing1 ing2; do use $r; jq -c '{head_profiles, blocks: .blocks.count}' <<<"$(tenant_stats anonymous)"; bucket upload_pending_blocks; done)"
note "the querier converged after ${SECONDS}s of the test"
answers "$WORK/got"
diff -r "$WORK/expect" "$WORK/got" >/dev/null ||
	fail "the querier's answers differ from one server's: $(cat "$WORK/got/stats"), not $(cat "$WORK/expect/stats"): $(diff -r "$WORK/expect" "$WORK/got" | head -c 2000)"
compacted() {
	[ "$(maint compactions)" -gt 0 ] && [ "$(bucket deleted_blocks)" -gt 0 ]
}
use comp
until_ok 300 compacted || true
COMPACTIONS=$(maint compactions)
DELETED=$(bucket deleted_blocks)
[ "$COMPACTIONS" -gt 0 ] || fail "the compactor compacted nothing: $(tail -n 20 "${LOGS[comp]}")"
[ "$DELETED" -gt 0 ] || fail "the compactor deleted nothing from the bucket"
[ "$(bucket write_failures)" = 0 ] || fail "index writes failed: $(grep 'bucket index' "${LOGS[comp]}" | tail -n 5)"
# The querier has read an index written after those deletions.
WRITES=$(bucket writes)
use qry
SYNCS=$(bucket syncs)
synced() {
	[ "$(bucket syncs)" -gt $((SYNCS + 1)) ]
}
until_ok 120 synced || fail "the querier does not sync: $(tail -n 5 "${LOGS[qry]}")"
[ "$(bucket unlisted_blocks)" -gt 0 ] || fail "the querier never unlisted a replaced block"
answers "$WORK/got2"
diff -r "$WORK/expect" "$WORK/got2" >/dev/null ||
	fail "after compaction the querier's answers differ: $(diff -r "$WORK/expect" "$WORK/got2" | head -c 2000)"
note "compactor: $COMPACTIONS compactions, $DELETED blocks deleted, $WRITES index writes; querier: $(bucket discovered_blocks) blocks discovered, $(bucket unlisted_blocks) unlisted, same answers"

# ---- the ingesters dropped the blocks the compactor merged
pruned() {
	[ "$(bucket unlisted_blocks)" -gt 0 ]
}
use ing1
until_ok 120 pruned ||
	fail "ingester 1 kept every block the compactor merged: $(jq -c .blocks.count <<<"$(tenant_stats anonymous)")"
[ "$(maint compactions)" = 0 ] || fail "an ingester compacted"

# ---- a querier with an empty data directory finds everything at open
stop_role qry
start_role qry2 "$WORK/qry2" --target querier "${ROLE[@]}"
use qry2
answers "$WORK/got3"
diff -r "$WORK/expect" "$WORK/got3" >/dev/null ||
	fail "a new querier's answers differ: $(diff -r "$WORK/expect" "$WORK/got3" | head -c 2000)"
note "a querier started empty answers the same"
stop_role qry2
stop_role comp
stop_role ing1
stop_role ing2

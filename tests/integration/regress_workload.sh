#!/usr/bin/env bash
# regress_workload.sh - the regression report on the synthetic workload's
# two releases, whose changes the generator knows: unhex-workload --truth
# writes every function's expected self and total share per release (1.4,
# then 1.5 with a few hot call paths swapped with warm ones).  With every
# symbol file preloaded, `unhex regress --service shop-api --baseline 1.4
# --candidate 1.5` must:
#   - flag, in the right direction, every function whose expected share
#     (self or total) reaches 1% on a side and changes by 30% or more;
#   - flag no function whose expected share changes by less than 2%;
#   - name every row (no `+0x` frame: all debug info is there);
# and 1.4 against itself (two halves of its instances) flags nothing.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need WORKLOAD
command -v c++filt >/dev/null || fail "c++filt (binutils) is not installed"

"$WORKLOAD" --out "$WORK/profiles" --services 1 --instances 4 --minutes 20 --end now \
	--debug-dir "$WORK/debug" --truth "$WORK/truth.tsv" --quiet
mkdir -p "$WORK/debuginfo"
cut -f1 "$WORK/debug/manifest.tsv" | while read -r f; do cp "$WORK/debug/$f" "$WORK/debuginfo/"; done
start_server "$WORK/data" --preload "$WORK/profiles" --preload-debuginfo "$WORK/debuginfo"

# Expected: per demangled function, self and total share in 1.4 and 1.5.
cut -f3 "$WORK/truth.tsv" | c++filt >"$WORK/names"
paste <(cut -f1,2 "$WORK/truth.tsv") "$WORK/names" <(cut -f4,5 "$WORK/truth.tsv") |
	jq -R -s 'split("\n") | map(select(length > 0) | split("\t")) |
		reduce .[] as $r ({}; .[$r[2]][$r[1]] = {self: ($r[3] | tonumber), total: ($r[4] | tonumber)})' \
		>"$WORK/truth.json"

set +e
"$UNHEX" regress --server "$URL" --service shop-api --baseline 1.4 --candidate 1.5 \
	--from now-1h --until now --limit 100000 --format json >"$WORK/r.json"
RC=$?
set -e
[ $RC = 0 ] || fail "unhex regress exited $RC without --fail-on"
note "$(jq -c '{baseline: .baseline.profiles, candidate: .candidate.profiles, k, tests, regressed, functions}' "$WORK/r.json")"
! jq -e '.rows[] | select(.function | test("\\+0x"))' "$WORK/r.json" >/dev/null ||
	fail "a frame is still hex: $(jq -c '[.rows[] | select(.function | test("\\+0x")) | .function][:3]' "$WORK/r.json")"

# Compare, per measure: what must be flagged and what must not.
jq -n --slurpfile t "$WORK/truth.json" --slurpfile r "$WORK/r.json" '
	($r[0].rows | map({key: .function, value: .}) | from_entries) as $rows |
	[ $t[0] | to_entries[] | .key as $f | .value as $v | ("self", "total") as $m |
	  (($v["1.4"][$m]) // 0) as $a | (($v["1.5"][$m]) // 0) as $b |
	  {f: $f, m: $m, a: $a, b: $b,
	   rel: (if $a > 0 then ($b - $a) / $a else 1e9 end),
	   got: ($rows[$f][$m].verdict // "absent")} ] as $all |
	{ missed: [ $all[] | select(([.a, .b] | max) >= 0.01 and (.rel >= 0.3 or .rel <= -0.3)) |
		select(if .rel > 0 then (.got != "regressed" and .got != "new")
		       else (.got != "improved" and .got != "gone") end) ],
	  false: [ $all[] | select(.rel < 0.02 and .rel > -0.02) |
		select(.got == "regressed" or .got == "improved" or .got == "new" or .got == "gone") ],
	  expected: [ $all[] | select(([.a, .b] | max) >= 0.01 and (.rel >= 0.3 or .rel <= -0.3)) ] | length,
	  flagged: [ $all[] | select(.got == "regressed" or .got == "improved" or .got == "new" or .got == "gone") ] | length }' \
	>"$WORK/cmp.json"
note "workload 1.4 -> 1.5: $(jq -c '{expected, flagged, missed: (.missed | length), false: (.false | length)}' "$WORK/cmp.json")"
[ "$(jq '.expected' "$WORK/cmp.json")" -ge 5 ] || fail "the generator changed fewer than 5 functions: $(cat "$WORK/cmp.json")"
[ "$(jq '.missed | length' "$WORK/cmp.json")" = 0 ] || fail "changed functions not flagged: $(jq -c '.missed[:5]' "$WORK/cmp.json")"
[ "$(jq '.false | length' "$WORK/cmp.json")" = 0 ] || fail "unchanged functions flagged: $(jq -c '.false[:5]' "$WORK/cmp.json")"

# 1.4 against itself: instances 1-2 against 3-4.
PT=$(cpu_type shop-api)
set +e
"$UNHEX" regress --server "$URL" --from now-1h --until now --format json \
	--baseline-query "$PT{service_name=\"shop-api\",version=\"1.4\",instance=~\"i-01|i-02\"}" \
	--candidate-query "$PT{service_name=\"shop-api\",version=\"1.4\",instance=~\"i-03|i-04\"}" \
	--fail-on 1% >"$WORK/same.json"
RC=$?
set -e
[ $RC = 0 ] || fail "1.4 against itself: exit $RC: $(jq -c '[.rows[] | select(.flagged) | .function][:5]' "$WORK/same.json")"
[ "$(jq '[.rows[] | select(.flagged)] | length' "$WORK/same.json")" = 0 ] ||
	fail "1.4 against itself flags $(jq -c '[.rows[] | select(.flagged) | .function][:5]' "$WORK/same.json")"
echo "PASS regress_workload ($(jq -c '{expected, flagged}' "$WORK/cmp.json"))"

#!/usr/bin/env bash
# grafana_hour.sh - issue 10's check: a 1-hour, 20-instance workload (one
# hour of profile timestamps) queried through every query method with
# Grafana's default parameters (no max_nodes; binary protobuf as connect-go
# sends it, JSON where Grafana's frontend and Drilldown send JSON).  Every
# call must answer 200; totals must equal a reference summed here from the
# raw pprof files (pprofinfo), and time-series points must lie on
# Pyroscope's request-aligned grid with the reference's values.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX WORKLOAD PPROFINFO
need_protoc
need_cmd jq

# One profile a minute per instance, each covering its minute: 20 x 60 files.
WL="$WORK/workload"
"$WORKLOAD" --out "$WL" --services 1 --instances 20 --minutes 60 --interval 60 --hz 10 \
	--end now --quiet
start_server "$WORK/data" --preload "$WL"

# ---- the reference: "secs cpu_total" per file (pprofinfo reads them all in one run)
awk -F'\t' '$1 != "" && $1 !~ /^#/ { print $3 }' "$WL/manifest.tsv" >"$WORK/secs"
awk -F'\t' -v d="$WL" '$1 != "" && $1 !~ /^#/ { print d "/" $1 }' "$WL/manifest.tsv" |
	xargs "$PPROFINFO" --json >"$WORK/info.json" || fail "pprofinfo"
jq -r '[.sample_types[] | select(.type == "cpu") | .sum] | add' "$WORK/info.json" |
	paste -d' ' "$WORK/secs" - >"$WORK/ref.txt"
N=$(wc -l <"$WORK/ref.txt")
[ "$N" = 1200 ] || fail "workload: $N profiles, want 1200"
MIN_S=$(awk 'NR == 1 || $1 < m { m = $1 } END { print m }' "$WORK/ref.txt")
MAX_S=$(awk '$1 > m { m = $1 } END { print m }' "$WORK/ref.txt")
TOTAL=$(awk '{ s += $2 } END { printf "%.0f\n", s }' "$WORK/ref.txt")
# Grafana's range: the last hour, to the millisecond, not aligned to anything.
E_MS=$((MAX_S * 1000 + 1234))
S_MS=$((E_MS - 3600 * 1000 - 60 * 1000))
MID_MS=$(((S_MS + E_MS) / 2))
STEP=15
note "reference: $N profiles, $MIN_S .. $MAX_S, total $TOTAL"

pb() { # METHOD REQ_TYPE RESP_TYPE TEXT: connect-go's unary call; decoded into $WORK/pb.txt
	connect_go "/querier.v1.QuerierService/$1" "$2" "$3" "$4"
}
js() { # METHOD JSON
	http POST "/querier.v1.QuerierService/$1" -H 'Content-Type: application/json' \
		-H 'Connect-Protocol-Version: 1' --data-binary "$2"
	[ "$STATUS" = 200 ] || fail "$1 (JSON): HTTP $STATUS $(head -c 300 <<<"$BODY")"
}
ref_sum() { # FROM_MS UNTIL_MS: reference total of the profiles in [from, until)
	awk -v f="$1" -v u="$2" '$1 * 1000 >= f && $1 * 1000 < u { s += $2 } END { printf "%.0f\n", s }' "$WORK/ref.txt"
}
SEL="profile_typeID: \"$CPU\" label_selector: \"{service_name=\\\"shop-api\\\"}\" start: $S_MS end: $E_MS"

# ---- metadata calls of the query editor and Drilldown
pb ProfileTypes querier.v1.ProfileTypesRequest querier.v1.ProfileTypesResponse "start: $S_MS end: $E_MS"
grep -q "ID: \"$CPU\"" "$WORK/pb.txt" || fail "ProfileTypes: $(cat "$WORK/pb.txt")"
js LabelNames "{\"matchers\":[\"{service_name=\\\"shop-api\\\"}\"],\"start\":$S_MS,\"end\":$E_MS}"
jq -e '.names | index("instance") != null' <<<"$BODY" >/dev/null || fail "LabelNames: $BODY"
js LabelValues "{\"name\":\"instance\",\"matchers\":[\"{}\"],\"start\":$S_MS,\"end\":$E_MS}"
[ "$(jq '.names | length' <<<"$BODY")" = 20 ] || fail "LabelValues instance: $BODY"
pb Series querier.v1.SeriesRequest querier.v1.SeriesResponse \
	"matchers: \"{}\" label_names: \"service_name\" label_names: \"__profile_type__\" start: $S_MS end: $E_MS"
grep -q 'value: "shop-api"' "$WORK/pb.txt" || fail "Series: $(head -20 "$WORK/pb.txt")"
js GetProfileStats '{}'
jq -e '.dataIngested' <<<"$BODY" >/dev/null || fail "GetProfileStats: $BODY"
note "metadata: ProfileTypes, LabelNames, LabelValues (20 instances), Series, GetProfileStats"

# ---- the flame graph panel: SelectMergeStacktraces without max_nodes, and its TREE form
pb SelectMergeStacktraces querier.v1.SelectMergeStacktracesRequest querier.v1.SelectMergeStacktracesResponse "$SEL"
GOT=$(awk '/^  total:/ { print $2 }' "$WORK/pb.txt")
[ "$GOT" = "$TOTAL" ] || fail "SelectMergeStacktraces total $GOT, want $TOTAL"
pb SelectMergeStacktraces querier.v1.SelectMergeStacktracesRequest querier.v1.SelectMergeStacktracesResponse \
	"$SEL format: PROFILE_FORMAT_TREE"
grep -q '^tree: ' "$WORK/pb.txt" || fail "SelectMergeStacktraces TREE: no tree"
pb SelectMergeSpanProfile querier.v1.SelectMergeSpanProfileRequest querier.v1.SelectMergeSpanProfileResponse "$SEL"
[ "$(awk '/^  total:/ { print $2 }' "$WORK/pb.txt")" = "$TOTAL" ] || fail "SelectMergeSpanProfile (no spans selected) total"
note "SelectMergeStacktraces: total $TOTAL exact, no max_nodes; TREE; SelectMergeSpanProfile"

# ---- profilecli query merge: SelectMergeProfile's pprof sums to the reference
pb SelectMergeProfile querier.v1.SelectMergeProfileRequest perftools.profiles.Profile "$SEL"
GOT=$(awk '/^sample \{/ { s = 1 } s && /^  value:/ { t += $2 } /^}/ { s = 0 }
	END { printf "%.0f\n", t }' "$WORK/pb.txt")
[ "$GOT" = "$TOTAL" ] || fail "SelectMergeProfile cpu sum $GOT, want $TOTAL"
note "SelectMergeProfile: pprof cpu values sum to $TOTAL"

# ---- the time series panel: SelectSeries on Pyroscope's grid, sum and average
ref_points() { # AGG: "timestamp value" per point of the grid of (S_MS, STEP)
	awk -v s="$S_MS" -v e="$E_MS" -v step=$((STEP * 1000)) -v agg="$1" '
	{ t = $1 * 1000; k = 0
	  if (t > s) { k = int((t - s) / step); if (k * step < t - s) k++ }
	  ts = s + k * step; if (ts > e) next
	  key = sprintf("%.0f", ts); sum[key] += $2; n[key]++ }
	END { for (k in sum) printf "%s %.3f\n", k, agg == "avg" ? sum[k] / n[k] : sum[k] }' \
		"$WORK/ref.txt" | sort
}
ref_points sum >"$WORK/want.sum"
ref_points avg >"$WORK/want.avg"
pb SelectSeries querier.v1.SelectSeriesRequest querier.v1.SelectSeriesResponse "$SEL step: $STEP"
awk '/^    value:/ { v = $2 } /^    timestamp:/ { printf "%s %.3f\n", $2, v }' "$WORK/pb.txt" | sort >"$WORK/got"
diff -u "$WORK/want.sum" "$WORK/got" >"$WORK/diff" || fail "SelectSeries sum: $(head -20 "$WORK/diff")"
awk -v s="$S_MS" -v step=$((STEP * 1000)) '($1 - s) % step != 0 { bad++ } END { exit bad > 0 }' "$WORK/got" ||
	fail "SelectSeries: points off the request-aligned grid"
js SelectSeries "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":$S_MS,\"end\":$E_MS,\"step\":$STEP,\"groupBy\":[],\"aggregation\":\"TIME_SERIES_AGGREGATION_TYPE_AVERAGE\"}"
jq -r '.series[].points[] | "\(.timestamp) \(.value)"' <<<"$BODY" | awk '{ printf "%s %.3f\n", $1, $2 }' |
	sort >"$WORK/got"
diff -u "$WORK/want.avg" "$WORK/got" >"$WORK/diff" || fail "SelectSeries average: $(head -20 "$WORK/diff")"
note "SelectSeries: $(wc -l <"$WORK/got") points on the grid of start $S_MS step ${STEP}s, sum and average exact"

# ---- Drilldown: heatmap, diff
js SelectHeatmap "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":$S_MS,\"end\":$E_MS,\"step\":$STEP,\"queryType\":\"HEATMAP_QUERY_TYPE_INDIVIDUAL\"}"
[ "$(jq '[.series[].slots[].counts[] | tonumber] | add' <<<"$BODY")" = "$N" ] ||
	fail "SelectHeatmap: $(jq '[.series[].slots[].counts[] | tonumber] | add' <<<"$BODY") profiles, want $N"
LEFT=$(ref_sum "$S_MS" "$MID_MS")
RIGHT=$(ref_sum "$MID_MS" "$E_MS")
pb Diff querier.v1.DiffRequest querier.v1.DiffResponse \
	"left { profile_typeID: \"$CPU\" label_selector: \"{}\" start: $S_MS end: $MID_MS } right { profile_typeID: \"$CPU\" label_selector: \"{}\" start: $MID_MS end: $E_MS }"
grep -q "^  leftTicks: $LEFT\$" "$WORK/pb.txt" && grep -q "^  rightTicks: $RIGHT\$" "$WORK/pb.txt" ||
	fail "Diff ticks: $(grep -E 'Ticks' "$WORK/pb.txt" | paste -sd' '), want $LEFT / $RIGHT"
note "SelectHeatmap: $N profiles; Diff: $LEFT / $RIGHT exact"

# ---- /pyroscope/render and render-diff, as Grafana's legacy and Pyroscope's UI call them
Q=$(printf '%s{service_name="shop-api"}' "$CPU" | jq -sRr @uri)
http GET "/pyroscope/render?query=$Q&from=$((S_MS / 1000))&until=$((E_MS / 1000))"
[ "$STATUS" = 200 ] || fail "render: HTTP $STATUS"
[ "$(jq .flamebearer.numTicks <<<"$BODY")" = "$TOTAL" ] || fail "render: numTicks $(jq .flamebearer.numTicks <<<"$BODY"), want $TOTAL"
# Pyroscope's timeline: SelectSeries' points (15 s for an hour) from the
# start aligned down to the step, as timeline.New writes them.
WANT_TL=$(awk -v s="$((S_MS / 1000 * 1000))" -v e="$((E_MS / 1000 * 1000))" -v step=15000 '
	{ t = $1 * 1000; k = 0
	  if (t > s) { k = int((t - s) / step); if (k * step < t - s) k++ }
	  ts = s + k * step; if (ts > e) next; v[sprintf("%.0f", ts)] += $2 }
	END { s0 = int(s / step) * step; e0 = int(e / step) * step; n = int((e0 - s0) / step)
	  for (k in v) { ts = k + 0; if (ts >= s0 && ts < e0) out[int((int(ts / 1000) - s0 / 1000) / 15)] += v[k] }
	  for (i = 0; i < n; i++) printf "%s%.0f", i ? "," : "", out[i] + 0; print "" }' "$WORK/ref.txt")
[ "$(jq -r '.timeline.samples | map(tostring) | join(",")' <<<"$BODY")" = "$WANT_TL" ] ||
	fail "render timeline differs from Pyroscope's: $(jq -c '.timeline.samples[:8]' <<<"$BODY") ..., want ${WANT_TL:0:120} ..."
http GET "/pyroscope/render-diff?leftQuery=$Q&rightQuery=$Q&leftFrom=$((S_MS / 1000))&leftUntil=$((MID_MS / 1000))&rightFrom=$((MID_MS / 1000))&rightUntil=$((E_MS / 1000))"
[ "$STATUS" = 200 ] || fail "render-diff: HTTP $STATUS"
jq -e --argjson l "$(ref_sum "$((S_MS / 1000 * 1000))" "$((MID_MS / 1000 * 1000))")" \
	--argjson r "$(ref_sum "$((MID_MS / 1000 * 1000))" "$((E_MS / 1000 * 1000))")" \
	'.leftTicks == $l and .rightTicks == $r' <<<"$BODY" >/dev/null ||
	fail "render-diff ticks: $(jq -c '{leftTicks, rightTicks}' <<<"$BODY")"
note "render: numTicks $TOTAL, Pyroscope's timeline (15 s, aligned start); render-diff exact"
note "grafana_hour: all checks passed"

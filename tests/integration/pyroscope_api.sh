#!/usr/bin/env bash
# pyroscope_api.sh - conformance of the query side with Pyroscope's
# semantics, as Grafana's data source, Profiles Drilldown and profilecli call
# it.  Workload-generator profiles are ingested; the answers of every method
# below are compared value by value with a reference computed here from the
# raw pprof files (pprofinfo's per-file totals and the manifest's times),
# not from the server:
#   - SelectSeries on Pyroscope's grid (point k = start + k*step holds the
#     profiles of (t - step, t]), sum and average, groupBy, with an
#     unaligned start; sent as connect-go sends it (binary protobuf encoded
#     by protoc from proto/querier.proto, Connect headers) and as JSON in
#     both field name styles (lowerCamel, snake_case);
#   - AnalyzeQuery's profiles, samples (pprofinfo's nonzero samples) and
#     series;
#   - ProfileTypes with and without a range; Series with labelNames (each
#     distinct set once); GetProfileStats (oldest and newest profile);
#   - /pyroscope/render's max-nodes and maxNodes, metadata, format=dot, render-diff's
#     leftTicks/rightTicks beside the flamebearer;
#   - settings.v1 Get/Set/Delete in JSON and protobuf, kept per tenant
#     across a restart, with Pyroscope's conflict on an older modifiedAt;
#   - debuginfo.v1alpha1 as profilecli uploads: the file lands in unhex's
#     debug-info store;
#   - span ids from pprof span_id labels: SelectMergeSpanProfile and
#     SelectMergeStacktraces' spanSelector against per-span sums of the raw
#     samples, and the span heatmap's points;
#   - profile ids and exemplars: the files pushed again through push.v1 with
#     IDs; SelectSeries' exemplars (Pyroscope's pick per point: the largest
#     profile, its id, time, value and labels), profileIdSelector on
#     SelectMergeStacktraces and SelectMergeProfile, and the exemplars of
#     both heatmaps, against the per-file totals;
#   - with node and npm, the real connect-es client (tests/integration/
#     connect_es) calls the same methods in both codecs.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX WORKLOAD PPROFINFO
need_protoc
need_cmd jq
T=wl

WL="$WORK/workload"
"$WORKLOAD" --out "$WL" --services 2 --instances 2 --minutes 3 --end now --quiet
start_server "$WORK/data"
ingest_manifest "$WL" --tenant $T

# ---- the reference: one line per file, "service secs cpu_total"
while IFS=$'\t' read -r path name secs; do
	case "$path" in '' | '#'*) continue ;; esac
	v=$("$PPROFINFO" --json "$WL/$path" |
		jq '[.sample_types[] | select(.type == "cpu" and .unit == "nanoseconds") | .sum] | add // 0')
	echo "${name%%.*} $secs $v"
	echo "$path $v" >>"$WORK/cpu_by_file.txt"
done <"$WL/manifest.tsv" >"$WORK/ref.txt"
MIN_S=$(awk 'NR == 1 || $2 < m { m = $2 } END { print m }' "$WORK/ref.txt")
MAX_S=$(awk '$2 > m { m = $2 } END { print m }' "$WORK/ref.txt")
SERVICES=$(awk '{ print $1 }' "$WORK/ref.txt" | sort -u | paste -sd' ')
note "reference: $(wc -l <"$WORK/ref.txt") profiles of $SERVICES, $MIN_S .. $MAX_S"

# Pyroscope's grid: an unaligned start 7.679 s before the first profile.
S_MS=$((MIN_S * 1000 - 7679))
E_MS=$(((MAX_S + 100) * 1000))
STEP=10

# ref_series AGG: "service timestamp value" per point, values with 3 decimals.
ref_series() {
	awk -v s="$S_MS" -v e="$E_MS" -v step=$((STEP * 1000)) -v agg="$1" '
	{ t = $2 * 1000; k = 0
	  if (t > s) { k = int((t - s) / step); if (k * step < t - s) k++ }
	  ts = s + k * step; if (ts > e) next
	  key = $1 " " sprintf("%.0f", ts); sum[key] += $3; n[key]++ }
	END { for (key in sum) printf "%s %.3f\n", key, agg == "avg" ? sum[key] / n[key] : sum[key] }' \
		"$WORK/ref.txt" | sort
}

js() { # PATH JSON [tenant]: POSTs JSON as Grafana's JSON clients do; the answer in BODY
	http POST "$1" -H "X-Scope-OrgID: ${3:-$T}" -H 'Content-Type: application/json' \
		-H 'Connect-Protocol-Version: 1' --data-binary "$2"
}

# pb PATH REQ_TYPE RESP_TYPE TEXT: connect_go as tenant $T.
pb() { connect_go "$@" -H "X-Scope-OrgID: $T"; }

# The exemplars' profile ids of the last pb answer, sorted.
pb_profile_ids() { sed -n 's/^ *profile_id: "\(.*\)"$/\1/p' "$WORK/pb.txt" | sort; }

# Points of a SelectSeries JSON answer grouped by service_name: "service ts value".
json_points() {
	jq -r '.series[] | (.labels[] | select(.name == "service_name") | .value) as $s |
		.points[] | "\($s) \(.timestamp) \(.value)"' <<<"$BODY" |
		awk '{ printf "%s %s %.3f\n", $1, $2, $3 }' | sort
}

same() { # WHAT GOT WANT
	diff -u "$3" "$2" >"$WORK/diff" || fail "$1 differs from the reference: $(head -20 "$WORK/diff")"
	[ -s "$2" ] || fail "$1: empty"
	note "$1: $(wc -l <"$2") values equal to the reference"
}

# ---- SelectSeries: sum and average, JSON in both name styles, protobuf
ref_series sum >"$WORK/want.sum"
ref_series avg >"$WORK/want.avg"
js /querier.v1.QuerierService/SelectSeries "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":$S_MS,\"end\":$E_MS,\"step\":$STEP,\"groupBy\":[\"service_name\"]}"
[ "$STATUS" = 200 ] || fail "SelectSeries: HTTP $STATUS $BODY"
json_points >"$WORK/got"
same "SelectSeries sum (JSON)" "$WORK/got" "$WORK/want.sum"
# Series are ordered by total, largest first (Pyroscope's TopSeries).
jq -e '[.series[] | [.points[].value] | add] | . == (sort | reverse)' <<<"$BODY" >/dev/null ||
	fail "SelectSeries: series not ordered by total"
js /querier.v1.QuerierService/SelectSeries "{\"profile_typeID\":\"$CPU\",\"label_selector\":\"{}\",\"start\":\"$S_MS\",\"end\":\"$E_MS\",\"step\":$STEP,\"group_by\":[\"service_name\"],\"aggregation\":\"TIME_SERIES_AGGREGATION_TYPE_AVERAGE\"}"
[ "$STATUS" = 200 ] || fail "SelectSeries snake_case: HTTP $STATUS $BODY"
json_points >"$WORK/got"
same "SelectSeries average (snake_case JSON)" "$WORK/got" "$WORK/want.avg"
pb /querier.v1.QuerierService/SelectSeries querier.v1.SelectSeriesRequest querier.v1.SelectSeriesResponse \
	"profile_typeID: \"$CPU\" label_selector: \"{}\" start: $S_MS end: $E_MS step: $STEP group_by: \"service_name\""
awk '/^  labels \{/ { l = 1; next } l && /value:/ { gsub(/"/, "", $2); s = $2; l = 0 }
     /^    value:/ { v = $2 } /^    timestamp:/ { printf "%s %s %.3f\n", s, $2, v }' "$WORK/pb.txt" |
	sort >"$WORK/got"
same "SelectSeries sum (connect-go protobuf)" "$WORK/got" "$WORK/want.sum"
# limit keeps the largest; no point lies off the grid.
js /querier.v1.QuerierService/SelectSeries "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":$S_MS,\"end\":$E_MS,\"step\":$STEP,\"groupBy\":[\"service_name\"],\"limit\":1}"
[ "$(jq '.series | length' <<<"$BODY")" = 1 ] || fail "SelectSeries limit 1: $(head -c 200 <<<"$BODY")"
TOP=$(awk '{ s[$1] += $3 } END { for (k in s) print s[k], k }' "$WORK/want.sum" | sort -rn | awk 'NR == 1 { print $2 }')
[ "$(jq -r '.series[0].labels[0].value' <<<"$BODY")" = "$TOP" ] || fail "SelectSeries limit 1: not $TOP"

# ---- AnalyzeQuery: series, profiles and samples the query reads, head and blocks
awk -F'\t' -v d="$WL" '$1 != "" && $1 !~ /^#/ { print d "/" $1 }' "$WL/manifest.tsv" |
	xargs "$PPROFINFO" --json | jq -s '[.[].sample_types[] | select(.type == "cpu") | .nonzero_samples] | add' >"$WORK/aq.samples"
AQ_SERIES=$(awk -F'\t' '$1 != "" && $1 !~ /^#/ { print $2 }' "$WL/manifest.tsv" | sort -u | wc -l)
js /querier.v1.QuerierService/AnalyzeQuery "{\"start\":$S_MS,\"end\":$E_MS,\"query\":\"$CPU{}\"}"
[ "$STATUS" = 200 ] || fail "AnalyzeQuery: HTTP $STATUS $BODY"
jq -e --argjson p "$(wc -l <"$WORK/ref.txt")" --argjson s "$(cat "$WORK/aq.samples")" --argjson n "$AQ_SERIES" '
	[.queryScopes[].componentType] == ["Short term storage", "Long term storage"] and
	([.queryScopes[].profileCount | tonumber] | add) == $p and
	([.queryScopes[].sampleCount | tonumber] | add) == $s and
	(.queryImpact.totalQueriedSeries | tonumber) == $n and
	(.queryImpact.totalBytesInTimeRange | tonumber) > 0' <<<"$BODY" >/dev/null ||
	fail "AnalyzeQuery: $BODY, want $(wc -l <"$WORK/ref.txt") profiles, $(cat "$WORK/aq.samples") samples, $AQ_SERIES series"
pb /querier.v1.QuerierService/AnalyzeQuery querier.v1.AnalyzeQueryRequest querier.v1.AnalyzeQueryResponse \
	"start: $S_MS end: $E_MS query: \"{service_name=\\\"nobody\\\"}\""
grep -q "total_queried_series" "$WORK/pb.txt" && fail "AnalyzeQuery of no series: $(cat "$WORK/pb.txt")"
note "AnalyzeQuery: $(wc -l <"$WORK/ref.txt") profiles, $(cat "$WORK/aq.samples") samples, $AQ_SERIES series, as the reference"

# ---- ProfileTypes: the range counts
js /querier.v1.QuerierService/ProfileTypes "{\"start\":$S_MS,\"end\":$E_MS}"
jq -e --arg t "$CPU" '[.profileTypes[].ID] | index($t) != null' <<<"$BODY" >/dev/null || fail "ProfileTypes lacks $CPU: $BODY"
js /querier.v1.QuerierService/ProfileTypes "{\"start\":1000,\"end\":2000}"
[ "$BODY" = '{"profileTypes":[]}' ] || fail "ProfileTypes of 1970: $BODY"
js /querier.v1.QuerierService/ProfileTypes '{}'
jq -e --arg t "$CPU" '[.profileTypes[].ID] | index($t) != null' <<<"$BODY" >/dev/null || fail "ProfileTypes (last hour) lacks $CPU: $BODY"
note "ProfileTypes: range honoured"

# ---- Series with labelNames: the distinct services, once each
js /querier.v1.QuerierService/Series "{\"matchers\":[\"{}\"],\"labelNames\":[\"service_name\"],\"start\":$S_MS,\"end\":$E_MS}"
jq -r '.labelsSet[].labels[] | .value' <<<"$BODY" | sort | paste -sd' ' >"$WORK/got"
echo "$SERVICES" >"$WORK/want"
same "Series labelNames" "$WORK/got" "$WORK/want"

# ---- GetProfileStats: oldest and newest profile, none for a new tenant
js /querier.v1.QuerierService/GetProfileStats '{}'
jq -e --arg o "$((MIN_S * 1000))" --arg n "$((MAX_S * 1000))" \
	'.dataIngested == true and .oldestProfileTime == $o and .newestProfileTime == $n' <<<"$BODY" >/dev/null ||
	fail "GetProfileStats: $BODY, want $((MIN_S * 1000)) .. $((MAX_S * 1000))"
pb /querier.v1.QuerierService/GetProfileStats types.v1.GetProfileStatsRequest types.v1.GetProfileStatsResponse ""
grep -q "newest_profile_time: $((MAX_S * 1000))" "$WORK/pb.txt" || fail "GetProfileStats (protobuf): $(cat "$WORK/pb.txt")"
js /querier.v1.QuerierService/GetProfileStats '{}' nobody
[ "$BODY" = '{"dataIngested":false,"oldestProfileTime":"0","newestProfileTime":"0"}' ] ||
	fail "GetProfileStats of an empty tenant: $BODY"
note "GetProfileStats: $((MIN_S * 1000)) .. $((MAX_S * 1000))"

# ---- /pyroscope/render: max-nodes as maxNodes, Pyroscope's metadata
Q=$(printf '%s{}' "$CPU" | jq -sRr @uri)
RENDER="/pyroscope/render?query=$Q&from=$((S_MS / 1000))&until=$((E_MS / 1000))"
nodes() { jq '[.flamebearer.levels[] | length / 4] | add' <<<"$BODY"; }
http GET "$RENDER" -H "X-Scope-OrgID: $T"
ALL=$(nodes)
WANT=$(awk '{ s += $3 } END { printf "%.0f\n", s }' "$WORK/ref.txt")
[ "$(jq .flamebearer.numTicks <<<"$BODY")" = "$WANT" ] || fail "render numTicks $(jq .flamebearer.numTicks <<<"$BODY"), want $WANT"
jq -e '.metadata.name == "cpu" and .metadata.units == "samples" and .metadata.sampleRate == 1000000000' <<<"$BODY" >/dev/null ||
	fail "render metadata: $(jq -c .metadata <<<"$BODY")"
http GET "$RENDER&max-nodes=8" -H "X-Scope-OrgID: $T"
DASH=$(nodes)
[ "$(jq .flamebearer.numTicks <<<"$BODY")" = "$WANT" ] || fail "render max-nodes=8 lost totals"
http GET "$RENDER&maxNodes=8" -H "X-Scope-OrgID: $T"
[ "$(nodes)" = "$DASH" ] || fail "max-nodes=8 gives $DASH nodes, maxNodes=8 $(nodes)"
[ "$DASH" -lt "$ALL" ] || fail "max-nodes=8 keeps $DASH of $ALL nodes"
note "render: $ALL nodes, max-nodes=8 and maxNodes=8 both $DASH; numTicks $WANT"
# The timeline as Pyroscope computes it: SelectSeries with its point interval
# (range / 1500, at least 15 s) on the request's grid, then timeline.New's
# samples from the start aligned down to the step; groups per service.
ref_timeline() { # SERVICE|"": the samples, comma-separated
	awk -v s="$((S_MS / 1000 * 1000))" -v e="$((E_MS / 1000 * 1000))" -v step=15000 -v svc="$1" '
	svc == "" || $1 == svc { t = $2 * 1000; k = 0
	  if (t > s) { k = int((t - s) / step); if (k * step < t - s) k++ }
	  ts = s + k * step; if (ts > e) next; v[sprintf("%.0f", ts)] += $3 }
	END { s0 = int(s / step) * step; e0 = int(e / step) * step; n = int((e0 - s0) / step)
	  for (k in v) { ts = k + 0; if (ts >= s0 && ts < e0) out[int((int(ts / 1000) - s0 / 1000) / 15)] += v[k] }
	  for (i = 0; i < n; i++) printf "%s%.0f", i ? "," : "", out[i] + 0; print "" }' "$WORK/ref.txt"
}
http GET "$RENDER" -H "X-Scope-OrgID: $T"
[ "$(jq -r '.timeline.samples | map(tostring) | join(",")' <<<"$BODY")" = "$(ref_timeline "")" ] ||
	fail "render timeline: $(jq -c .timeline <<<"$BODY"), want $(ref_timeline "")"
[ "$(jq -r '.timeline.startTime' <<<"$BODY")" = "$((S_MS / 1000 / 15 * 15))" ] &&
	[ "$(jq -r '.timeline.durationDelta, .groups' <<<"$BODY" | paste -sd' ')" = "15 null" ] ||
	fail "render timeline start/step/groups: $(jq -c '{s: .timeline.startTime, d: .timeline.durationDelta, g: .groups}' <<<"$BODY")"
http GET "$RENDER&groupBy=service_name&aggregation=sum" -H "X-Scope-OrgID: $T"
for svc in $SERVICES; do
	[ "$(jq -r --arg s "$svc" '.groups[$s].samples | map(tostring) | join(",")' <<<"$BODY")" = "$(ref_timeline "$svc")" ] ||
		fail "render groups[$svc]: $(jq -c --arg s "$svc" '.groups[$s]' <<<"$BODY")"
done
[ "$(jq -r '.groups | keys | join(" ")' <<<"$BODY")" = "$SERVICES" ] || fail "render groups keys: $(jq -c '.groups | keys' <<<"$BODY")"
jq -e '[.timeline.samples[]] | all(. == 0)' <<<"$BODY" >/dev/null || fail "render with groups: the main timeline is not Pyroscope's zeros"
http GET "$RENDER$(printf '&groupBy=l%d' $(seq 1 17))" -H "X-Scope-OrgID: $T"
expect_status 413 "more than 16 groupBy" "render with 17 groupBy"
note "render timeline: Pyroscope's (15 s, aligned start), groupBy groups per service, equal to the reference"
http GET "$RENDER&format=dot" -H "X-Scope-OrgID: $T"
expect_status 200 'digraph "unhex" {' "render format=dot (checked by query_dot.sh)"
http GET "/pyroscope/render-diff?leftQuery=$Q&rightQuery=$Q&leftFrom=$((S_MS / 1000))&leftUntil=$((E_MS / 1000))&rightFrom=$((S_MS / 1000))&rightUntil=$((E_MS / 1000))" \
	-H "X-Scope-OrgID: $T"
jq -e --argjson n "$WANT" '.leftTicks == $n and .rightTicks == $n and (.flamebearer | has("leftTicks") | not)' <<<"$BODY" >/dev/null ||
	fail "render-diff ticks: $(jq -c '{leftTicks, rightTicks}' <<<"$BODY")"

# ---- stackTraceSelector (Grafana's function details): the subtree of a call site
js /querier.v1.QuerierService/SelectMergeStacktraces "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":$S_MS,\"end\":$E_MS,\"maxNodes\":1000000}"
[ "$(jq -r .flamegraph.total <<<"$BODY")" = "$WANT" ] || fail "SelectMergeStacktraces total, want $WANT"
# The first child of the root, and its total.
read -r SITE SITE_TOTAL < <(jq -r '.flamegraph as $g | $g.levels[1].values as $v | "\($g.names[$v[3] | tonumber]) \($v[1])"' <<<"$BODY")
js /querier.v1.QuerierService/SelectMergeStacktraces "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":$S_MS,\"end\":$E_MS,\"stackTraceSelector\":{\"callSite\":[{\"name\":\"$SITE\"}]}}"
[ "$(jq -r .flamegraph.total <<<"$BODY")" = "$SITE_TOTAL" ] ||
	fail "stackTraceSelector $SITE: total $(jq -r .flamegraph.total <<<"$BODY"), want $SITE_TOTAL"
note "stackTraceSelector: $SITE keeps $SITE_TOTAL of $WANT"

# ---- settings.v1: per tenant, Pyroscope's conflict rule, kept on disk
SET=/settings.v1.SettingsService
js $SET/Get '{}'
[ "$BODY" = '{"settings":[]}' ] || fail "settings Get (none): $BODY"
js $SET/Set '{"setting":{"name":"pluginSettings","value":"{\"collapsed\":true}","modifiedAt":"1700000000000"}}'
[ "$STATUS" = 200 ] || fail "settings Set: HTTP $STATUS $BODY"
js $SET/Set '{"setting":{"name":"pluginSettings","value":"old","modifiedAt":"1600000000000"}}'
expect_status 409 "newer update already written" "settings Set older"
js $SET/Set '{"setting":{"name":"other","value":"x"}}'
jq -e '.setting.modifiedAt | tonumber > 1700000000000' <<<"$BODY" >/dev/null || fail "settings Set without modifiedAt: $BODY"
js $SET/Get '{}' other-tenant
[ "$BODY" = '{"settings":[]}' ] || fail "settings leak across tenants: $BODY"
stop_server
start_server "$WORK/data"
pb $SET/Get settings.v1.GetSettingsRequest settings.v1.GetSettingsResponse ""
grep -q 'value: "{\\"collapsed\\":true}"' "$WORK/pb.txt" || fail "settings after restart (protobuf): $(cat "$WORK/pb.txt")"
[ "$(grep -c 'name:' "$WORK/pb.txt")" = 2 ] || fail "settings Get: $(cat "$WORK/pb.txt")"
js $SET/Delete '{"name":"other"}'
[ "$STATUS" = 200 ] || fail "settings Delete: HTTP $STATUS $BODY"
js $SET/Get '{}'
jq -e '[.settings[].name] == ["pluginSettings"]' <<<"$BODY" >/dev/null || fail "settings after Delete: $BODY"
js $SET/Nope '{}'
expect_status 404 "no method" "settings unknown method"
note "settings.v1: Get/Set/Delete, per tenant, conflict, restart"

# ---- debuginfo.v1alpha1, as profilecli's `debuginfo upload` calls it
printf 'int main(void) { return 0; }\n' >"$WORK/tiny.c"
cc -g -O0 -Wl,--build-id -o "$WORK/tiny" "$WORK/tiny.c" || fail "cc tiny"
BID=$(build_id "$WORK/tiny")
DI=/debuginfo.v1alpha1.DebuginfoService
pb $DI/ShouldInitiateUpload debuginfo.v1alpha1.ShouldInitiateUploadRequest \
	debuginfo.v1alpha1.ShouldInitiateUploadResponse "file { gnu_build_id: \"$BID\" name: \"tiny\" type: TYPE_EXECUTABLE_FULL }"
grep -q 'should_initiate_upload: true' "$WORK/pb.txt" || fail "ShouldInitiateUpload (new): $(cat "$WORK/pb.txt")"
http POST "$DI/Upload/$BID" -H "X-Scope-OrgID: $T" --data-binary "@$WORK/tiny"
expect_status 200 "$BID" "debuginfo.v1alpha1 Upload"
pb $DI/UploadFinished debuginfo.v1alpha1.UploadFinishedRequest debuginfo.v1alpha1.UploadFinishedResponse "gnu_build_id: \"$BID\""
pb $DI/ShouldInitiateUpload debuginfo.v1alpha1.ShouldInitiateUploadRequest \
	debuginfo.v1alpha1.ShouldInitiateUploadResponse "file { gnu_build_id: \"$BID\" }"
grep -q 'should_initiate_upload' "$WORK/pb.txt" && fail "ShouldInitiateUpload after the upload: $(cat "$WORK/pb.txt")"
grep -q 'already exists' "$WORK/pb.txt" || fail "ShouldInitiateUpload reason: $(cat "$WORK/pb.txt")"
js $DI/ListDebuginfo '{}'
jq -e --arg id "$BID" '[.object[].file.gnuBuildId] | index($id) != null' <<<"$BODY" >/dev/null ||
	fail "ListDebuginfo lacks $BID: $BODY"
http GET "/api/v1/debuginfo/$BID"
jq -e '.status == "ok"' <<<"$BODY" >/dev/null || fail "the upload is not in unhex's store: $BODY"
note "debuginfo.v1alpha1: ShouldInitiateUpload, Upload, UploadFinished, ListDebuginfo; $BID stored"

# ---- span ids: traces to profiles (SelectMergeSpanProfile, spanSelector, span heatmaps)
# Samples labelled span_id as Pyroscope's SDKs label them; the reference is
# each file's raw samples per span_id label value (pprofinfo --label).
SP=spans
SWL="$WORK/workload-spans"
"$WORKLOAD" --out "$SWL" --services 1 --instances 2 --minutes 2 --end now --spans 3 --seed 5 --quiet
ingest_manifest "$SWL" --tenant $SP
while IFS=$'\t' read -r path name secs; do
	case "$path" in '' | '#'*) continue ;; esac
	"$PPROFINFO" --label span_id "$SWL/$path" |
		awk -v f="$path" '$2 == "cpu" { s[$1] += $3 } END { for (k in s) printf "%s %s %.0f\n", f, k, s[k] }'
done <"$SWL/manifest.tsv" >"$WORK/spans.txt"
SPAN_ALL=$(while IFS=$'\t' read -r path name secs; do
	case "$path" in '' | '#'*) continue ;; esac
	"$PPROFINFO" --json "$SWL/$path" | jq '[.sample_types[] | select(.type == "cpu") | .sum] | add'
done <"$SWL/manifest.tsv" | awk '{ s += $1 } END { printf "%.0f\n", s }')
read -r SPAN1 SPAN2 < <(awk '{ print $2 }' "$WORK/spans.txt" | sort -u | head -2 | paste -sd' ')
SPAN_WANT=$(awk -v a="$SPAN1" -v b="$SPAN2" '$2 == a || $2 == b { s += $3 } END { printf "%.0f\n", s }' "$WORK/spans.txt")
SS_MS=$((($(date +%s) - 600) * 1000))
SE_MS=$((($(date +%s) + 60) * 1000))
note "span reference: $(wc -l <"$WORK/spans.txt") (file, span) sums; $SPAN1 + $SPAN2 = $SPAN_WANT of $SPAN_ALL"
span_req() { # FIELD-STYLE SPANS...: a SelectMergeSpanProfile JSON body
	local sel
	sel=$(printf '"%s",' "${@:2}")
	if [ "$1" = camel ]; then
		echo "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"spanSelector\":[${sel%,}],\"start\":$SS_MS,\"end\":$SE_MS}"
	else
		echo "{\"profile_typeID\":\"$CPU\",\"label_selector\":\"{}\",\"span_selector\":[${sel%,}],\"start\":\"$SS_MS\",\"end\":\"$SE_MS\"}"
	fi
}
js /querier.v1.QuerierService/SelectMergeSpanProfile "$(span_req camel "$SPAN1" "$SPAN2")" $SP
[ "$STATUS" = 200 ] || fail "SelectMergeSpanProfile: HTTP $STATUS $BODY"
[ "$(jq -r .flamegraph.total <<<"$BODY")" = "$SPAN_WANT" ] ||
	fail "SelectMergeSpanProfile total $(jq -r .flamegraph.total <<<"$BODY"), want $SPAN_WANT"
# Upper-case hex names the same span (Pyroscope decodes the hex).
js /querier.v1.QuerierService/SelectMergeSpanProfile "$(span_req snake "${SPAN1^^}" "$SPAN2")" $SP
[ "$(jq -r .flamegraph.total <<<"$BODY")" = "$SPAN_WANT" ] || fail "SelectMergeSpanProfile (snake_case, upper-case id): $BODY"
T=$SP pb /querier.v1.QuerierService/SelectMergeSpanProfile querier.v1.SelectMergeSpanProfileRequest \
	querier.v1.SelectMergeSpanProfileResponse \
	"profile_typeID: \"$CPU\" label_selector: \"{}\" span_selector: \"$SPAN1\" span_selector: \"$SPAN2\" start: $SS_MS end: $SE_MS"
grep -q "^  total: $SPAN_WANT\$" "$WORK/pb.txt" || fail "SelectMergeSpanProfile (protobuf): $(grep total "$WORK/pb.txt")"
js /querier.v1.QuerierService/SelectMergeStacktraces "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"spanSelector\":[\"$SPAN1\",\"$SPAN2\"],\"start\":$SS_MS,\"end\":$SE_MS}" $SP
[ "$(jq -r .flamegraph.total <<<"$BODY")" = "$SPAN_WANT" ] || fail "SelectMergeStacktraces spanSelector: $(head -c 300 <<<"$BODY")"
js /querier.v1.QuerierService/SelectMergeSpanProfile "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"spanSelector\":[],\"start\":$SS_MS,\"end\":$SE_MS}" $SP
[ "$(jq -r .flamegraph.total <<<"$BODY")" = "$SPAN_ALL" ] || fail "SelectMergeSpanProfile without spans: $(jq -r .flamegraph.total <<<"$BODY"), want $SPAN_ALL"
js /querier.v1.QuerierService/SelectMergeSpanProfile "$(span_req camel 0000000000000001)" $SP
[ "$(jq -r .flamegraph.total <<<"$BODY")" = 0 ] || fail "SelectMergeSpanProfile of an unknown span: $BODY"
js /querier.v1.QuerierService/SelectMergeSpanProfile "$(span_req camel abc)" $SP
expect_status 400 "invalid span id length" "SelectMergeSpanProfile bad id"
# Span heatmap: one point per (profile, span), its value the span's samples.
js /querier.v1.QuerierService/SelectHeatmap "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":$SS_MS,\"end\":$SE_MS,\"step\":15,\"queryType\":\"HEATMAP_QUERY_TYPE_SPAN\"}" $SP
[ "$STATUS" = 200 ] || fail "SelectHeatmap SPAN: HTTP $STATUS $BODY"
jq -e --argjson n "$(wc -l <"$WORK/spans.txt")" --argjson lo "$(awk 'NR == 1 || $3 < m { m = $3 } END { print m }' "$WORK/spans.txt")" \
	'[.series[].slots[].counts[] | tonumber] | add == $n' <<<"$BODY" >/dev/null ||
	fail "SelectHeatmap SPAN: $(jq '[.series[].slots[].counts[] | tonumber] | add' <<<"$BODY") points, want $(wc -l <"$WORK/spans.txt")"
jq -e --argjson lo "$(awk 'NR == 1 || $3 < m { m = $3 } END { print m }' "$WORK/spans.txt")" \
	'.series[0].slots[0].yMin[0] == $lo' <<<"$BODY" >/dev/null || fail "SelectHeatmap SPAN: smallest bucket $(jq '.series[0].slots[0].yMin[0]' <<<"$BODY")"
note "spans: SelectMergeSpanProfile (JSON both styles, protobuf), spanSelector, span heatmap equal to the reference"

# ---- profile ids and exemplars (Grafana's exemplars, "open exemplar")
# The workload's files pushed again through push.v1 (tenant ex), file k with
# the ID 0000000k-0000-4000-8000-00000000000k, which becomes its profile id.
# The reference, per file from the raw pprofs: "id service instance secs cpu".
EX=ex
k=0
while IFS=$'\t' read -r path name secs; do
	case "$path" in '' | '#'*) continue ;; esac
	k=$((k + 1))
	id=$(printf '%08x-0000-4000-8000-%012x' $k $k)
	inst=${name#*instance=}
	inst=${inst%%,*}
	v=$(awk -v f="$path" '$1 == f { print $2 }' "$WORK/cpu_by_file.txt")
	echo "$id ${name%%.*} $inst $secs $v"
	jq -n --arg id "$id" --arg s "${name%%.*}" --arg i "$inst" --rawfile p <(base64 -w0 "$WL/$path") \
		'{labels:[{name:"__name__",value:"process_cpu"},{name:"service_name",value:$s},
		  {name:"instance",value:$i}],samples:[{rawProfile:$p,ID:$id}]}' >"$WORK/ex.series.$k"
done <"$WL/manifest.tsv" >"$WORK/ex.ref"
jq -s '{series:.}' "$WORK"/ex.series.* >"$WORK/ex.push.json"
http POST /push.v1.PusherService/Push -H "X-Scope-OrgID: $EX" -H 'Content-Type: application/json' \
	--data-binary @"$WORK/ex.push.json"
expect_status 200 '{}' "push.v1 of $k files with IDs"
# Pyroscope's exemplar of a point: the profile of largest total, ties to the
# smallest id; labels: the series' own without the groupBy ones.
awk -v s="$S_MS" -v e="$E_MS" -v step=$((STEP * 1000)) '
	{ t = $4 * 1000; k = 0
	  if (t > s) { k = int((t - s) / step); if (k * step < t - s) k++ }
	  ts = s + k * step; if (ts > e) next
	  key = $2 " " sprintf("%.0f", ts)
	  if (!(key in best) || $5 > val[key] || ($5 == val[key] && $1 < best[key])) {
	    best[key] = $1; val[key] = $5; at[key] = t; inst[key] = $3 } }
	END { for (key in best) printf "%s %s %.0f %.0f instance=%s\n", key, best[key], at[key], val[key], inst[key] }' \
	"$WORK/ex.ref" | sort >"$WORK/want.ex"
ex_points() { # the exemplars of a SelectSeries answer: "service ts id time value labels"
	jq -r '.series[] | (.labels[] | select(.name == "service_name") | .value) as $s |
		.points[] | .timestamp as $ts | .exemplars[] |
		"\($s) \($ts) \(.profileId) \(.timestamp) \(.value) " +
		([.labels[] | select(.name == "instance" or .name == "service_name") | "\(.name)=\(.value)"] | join(","))' <<<"$BODY" | sort
}
js /querier.v1.QuerierService/SelectSeries "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":$S_MS,\"end\":$E_MS,\"step\":$STEP,\"groupBy\":[\"service_name\"],\"exemplarType\":\"EXEMPLAR_TYPE_INDIVIDUAL\"}" $EX
[ "$STATUS" = 200 ] || fail "SelectSeries exemplars: HTTP $STATUS $BODY"
ex_points >"$WORK/got"
same "SelectSeries exemplars (JSON)" "$WORK/got" "$WORK/want.ex"
[ "$(jq '[.series[].points[] | select((.exemplars | length) != 1)] | length' <<<"$BODY")" = 0 ] ||
	fail "SelectSeries: a point without exactly one exemplar"
jq -e '[.series[].points[].exemplars[] | .spanId == "" and
	([.labels[].name] | index("__name__") != null)] | all' <<<"$BODY" >/dev/null ||
	fail "SelectSeries exemplars: span id or labels: $(head -c 400 <<<"$BODY")"
json_points >"$WORK/got"
ref_series sum >"$WORK/want.ex.sum"
same "SelectSeries with exemplars: values" "$WORK/got" "$WORK/want.ex.sum"
js /querier.v1.QuerierService/SelectSeries "{\"profile_typeID\":\"$CPU\",\"label_selector\":\"{}\",\"start\":\"$S_MS\",\"end\":\"$E_MS\",\"step\":$STEP,\"group_by\":[\"service_name\"],\"exemplar_type\":2}" $EX
ex_points >"$WORK/got"
same "SelectSeries exemplars (snake_case JSON)" "$WORK/got" "$WORK/want.ex"
T=$EX pb /querier.v1.QuerierService/SelectSeries querier.v1.SelectSeriesRequest querier.v1.SelectSeriesResponse \
	"profile_typeID: \"$CPU\" label_selector: \"{}\" start: $S_MS end: $E_MS step: $STEP group_by: \"service_name\" exemplar_type: EXEMPLAR_TYPE_INDIVIDUAL"
pb_profile_ids >"$WORK/got"
awk '{ print $3 }' "$WORK/want.ex" | sort >"$WORK/want"
same "SelectSeries exemplar ids (connect-go protobuf)" "$WORK/got" "$WORK/want"
js /querier.v1.QuerierService/SelectSeries "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":$S_MS,\"end\":$E_MS,\"step\":$STEP,\"exemplarType\":\"EXEMPLAR_TYPE_SPAN\"}" $EX
expect_status 400 "EXEMPLAR_TYPE_SPAN" "SelectSeries span exemplars"
# Profiles ingested without an ID (tenant wl, /ingest) get a version 4 UUID each.
js /querier.v1.QuerierService/SelectSeries "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":$S_MS,\"end\":$E_MS,\"step\":$STEP,\"exemplarType\":2}"
jq -e '[.series[].points[] | (.exemplars | length) == 1 and
	(.exemplars[0].profileId | test("^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$"))] | all' \
	<<<"$BODY" >/dev/null || fail "generated profile ids: $(head -c 400 <<<"$BODY")"
note "SelectSeries exemplars: Pyroscope's per-point pick equal to the reference (JSON both styles, protobuf); generated ids are UUID v4"

# Opening an exemplar: profileIdSelector restricts the merge to those profiles.
read -r ID1 V1 < <(sort -k5,5nr -k1,1 "$WORK/ex.ref" | awk 'NR == 1 { print $1, $5 }')
read -r ID2 V2 < <(sort -k5,5n "$WORK/ex.ref" | awk 'NR == 1 { print $1, $5 }')
sel_req() { echo "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":$S_MS,\"end\":$E_MS,\"$1\":[$2]}"; }
js /querier.v1.QuerierService/SelectMergeStacktraces "$(sel_req profileIdSelector "\"$ID1\"")" $EX
[ "$(jq -r .flamegraph.total <<<"$BODY")" = "$V1" ] || fail "profileIdSelector $ID1: $(jq -r .flamegraph.total <<<"$BODY"), want $V1"
js /querier.v1.QuerierService/SelectMergeStacktraces "$(sel_req profile_id_selector "\"${ID1^^}\",\"${ID2//-/}\"")" $EX
[ "$(jq -r .flamegraph.total <<<"$BODY")" = "$((V1 + V2))" ] || fail "profile_id_selector of two: $(jq -r .flamegraph.total <<<"$BODY"), want $((V1 + V2))"
js /querier.v1.QuerierService/SelectMergeProfile "$(sel_req profileIdSelector "\"$ID2\"")" $EX
[ "$(jq '[.sample[].value[0] | tonumber] | add' <<<"$BODY")" = "$V2" ] || fail "SelectMergeProfile profileIdSelector: $(head -c 300 <<<"$BODY")"
T=$EX pb /querier.v1.QuerierService/SelectMergeStacktraces querier.v1.SelectMergeStacktracesRequest \
	querier.v1.SelectMergeStacktracesResponse \
	"profile_typeID: \"$CPU\" label_selector: \"{}\" start: $S_MS end: $E_MS profile_id_selector: \"$ID1\""
grep -q "^  total: $V1\$" "$WORK/pb.txt" || fail "profile_id_selector (protobuf): $(grep total "$WORK/pb.txt")"
js /querier.v1.QuerierService/SelectMergeStacktraces "$(sel_req profileIdSelector '"not-a-uuid"')" $EX
expect_status 400 "is not a UUID" "profileIdSelector of a non-UUID"
note "profileIdSelector: $ID1 alone $V1, with $ID2 $((V1 + V2)) (JSON both styles, protobuf, SelectMergeProfile)"

# Heatmap exemplars: per cell the largest profile, each one a file of the reference.
js /querier.v1.QuerierService/SelectHeatmap "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":$S_MS,\"end\":$E_MS,\"step\":15,\"queryType\":\"HEATMAP_QUERY_TYPE_INDIVIDUAL\",\"exemplarType\":\"EXEMPLAR_TYPE_INDIVIDUAL\"}" $EX
[ "$STATUS" = 200 ] || fail "SelectHeatmap exemplars: HTTP $STATUS $BODY"
jq -e '[.series[].slots[] | ([.counts[] | select(. > 0)] | length) == (.exemplars | length)] | all' <<<"$BODY" >/dev/null ||
	fail "SelectHeatmap: not one exemplar per non-empty cell"
jq -r '.series[].slots[].exemplars[] | "\(.profileId) \(.timestamp) \(.value)"' <<<"$BODY" | sort >"$WORK/got"
awk '{ printf "%s %.0f %.0f\n", $1, $4 * 1000, $5 }' "$WORK/ex.ref" | sort >"$WORK/ex.files"
comm -23 "$WORK/got" "$WORK/ex.files" >"$WORK/bad"
[ ! -s "$WORK/bad" ] || fail "SelectHeatmap exemplars not in the reference: $(head -3 "$WORK/bad")"
grep -q "^$ID1 " "$WORK/got" || fail "SelectHeatmap: the largest profile $ID1 is no exemplar"
[ "$(jq '[.series[].slots[].counts[]] | add' <<<"$BODY")" = "$k" ] || fail "SelectHeatmap: $(jq '[.series[].slots[].counts[]] | add' <<<"$BODY") points, want $k"
T=$EX pb /querier.v1.QuerierService/SelectHeatmap querier.v1.SelectHeatmapRequest querier.v1.SelectHeatmapResponse \
	"profile_typeID: \"$CPU\" label_selector: \"{}\" start: $S_MS end: $E_MS step: 15 query_type: HEATMAP_QUERY_TYPE_INDIVIDUAL exemplar_type: EXEMPLAR_TYPE_INDIVIDUAL"
pb_profile_ids >"$WORK/got.pb"
awk '{ print $1 }' "$WORK/got" | sort >"$WORK/want"
same "SelectHeatmap exemplar ids (connect-go protobuf)" "$WORK/got.pb" "$WORK/want"
js /querier.v1.QuerierService/SelectHeatmap "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":$SS_MS,\"end\":$SE_MS,\"step\":15,\"queryType\":\"HEATMAP_QUERY_TYPE_SPAN\",\"exemplarType\":\"EXEMPLAR_TYPE_SPAN\"}" $SP
[ "$STATUS" = 200 ] || fail "SelectHeatmap span exemplars: HTTP $STATUS $BODY"
jq -r '.series[].slots[].exemplars[] | select(.profileId == "") | "\(.spanId) \(.value)"' <<<"$BODY" | sort >"$WORK/got"
awk '{ print $2, $3 }' "$WORK/spans.txt" | sort >"$WORK/span.pairs"
comm -23 "$WORK/got" "$WORK/span.pairs" >"$WORK/bad"
[ -s "$WORK/got" ] && [ ! -s "$WORK/bad" ] || fail "SelectHeatmap span exemplars not in the reference: $(head -3 "$WORK/bad")"
grep -q "^$(sort -k3,3nr "$WORK/spans.txt" | awk 'NR == 1 { print $2, $3 }')\$" "$WORK/got" ||
	fail "SelectHeatmap: the largest span is no exemplar"
js /querier.v1.QuerierService/SelectHeatmap "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":$SS_MS,\"end\":$SE_MS,\"step\":15,\"queryType\":1,\"exemplarType\":3}" $SP
expect_status 400 "span exemplars only" "SelectHeatmap mismatched exemplar type"
note "SelectHeatmap exemplars: one per non-empty cell, each a profile (or a span) of the reference, the largest among them"

# ---- connect-es, the real Connect client of JavaScript (npm)
if command -v node >/dev/null && command -v npm >/dev/null; then
	bash "$HERE/connect_es/run.sh" "$URL" "$T" "$PROTO_DIR" "$S_MS" "$E_MS" "$STEP" "$WORK" ||
		fail "connect-es client"
	sort "$WORK/es.sum.json" >"$WORK/got"
	same "SelectSeries sum (connect-es, JSON)" "$WORK/got" "$WORK/want.sum"
	sort "$WORK/es.sum.proto" >"$WORK/got"
	same "SelectSeries sum (connect-es, binary)" "$WORK/got" "$WORK/want.sum"
else
	note "connect-es: node/npm not installed, skipped"
fi
note "pyroscope_api: all checks passed"

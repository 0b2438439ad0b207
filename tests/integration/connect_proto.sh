#!/usr/bin/env bash
# connect_proto.sh - the Connect binary protobuf codec of
# querier.v1.QuerierService (what Grafana's Pyroscope data source and
# profilecli send) against the real server, with an independent encoder and
# decoder: protoc --encode/--decode from protobuf text format with
# proto/querier.proto and proto/types.proto.  Workload-generator profiles
# are ingested; then for every method the protobuf answer, decoded by
# protoc, has the same content as the JSON answer of the same query (names,
# levels, totals, labels, points, pprof samples); gzip request bodies,
# the three protobuf media types, and errors (400 with a Connect JSON body
# for malformed protobuf, 415 for other media types) are checked.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX WORKLOAD
need_protoc
need_cmd jq

NOW_MS=$(($(date +%s) * 1000))
FROM_MS=$((NOW_MS - 3 * 3600 * 1000))
UNTIL_MS=$((NOW_MS + 3600 * 1000))

WL="$WORK/workload"
"$WORKLOAD" --out "$WL" --services 1 --instances 2 --minutes 3 --end now --quiet
start_server "$WORK/data"
ingest_manifest "$WL" --tenant wl

# pb METHOD REQ_TYPE RESP_TYPE TEXT [curl args...]: encodes TEXT, POSTs it as
# application/proto and leaves the decoded response text in $WORK/pb.txt.
pb() {
	local method=$1 req=$2 resp=$3 text=$4 file=types.proto
	shift 4
	case "$req" in querier.*) file=querier.proto ;; esac
	printf '%s\n' "$text" | protoc --proto_path="$PROTO_DIR" --encode="$req" "$file" \
		>"$WORK/req.bin" || fail "protoc --encode $req"
	http POST "/querier.v1.QuerierService/$method" -H 'X-Scope-OrgID: wl' \
		-H 'Content-Type: application/proto' -H 'Connect-Protocol-Version: 1' \
		--data-binary "@$WORK/req.bin" -D "$WORK/pb.hdr" "$@"
	[ "$STATUS" = 200 ] || fail "proto $method: HTTP $STATUS $BODY"
	grep -qi '^content-type: application/proto' "$WORK/pb.hdr" ||
		fail "proto $method: wrong Content-Type: $(grep -i content-type "$WORK/pb.hdr")"
	file=querier.proto
	case "$resp" in types.*) file=types.proto ;; perftools.*) file=profile.proto ;; esac
	protoc --proto_path="$PROTO_DIR" --decode="$resp" "$file" <"$WORK/body" >"$WORK/pb.txt" ||
		fail "proto $method: the response is not a $resp: $(od -c "$WORK/body" | head -3)"
}

js() { # METHOD JSON: the JSON answer in $WORK/js.json
	http POST "/querier.v1.QuerierService/$1" -H 'X-Scope-OrgID: wl' \
		-H 'Content-Type: application/json' --data-binary "$2"
	[ "$STATUS" = 200 ] || fail "json $1: HTTP $STATUS $BODY"
	cp "$WORK/body" "$WORK/js.json"
}

# Strings of the text format lines "<indent>KEY: "..."", unescaped.
text_strings() { # KEY
	sed -n "s/^ *$1: \"\\(.*\\)\"\$/\\1/p" "$WORK/pb.txt" | sed 's/\\"/"/g; s/\\\\/\\/g'
}

same() { # WHAT FILE_A FILE_B
	diff -u "$2" "$3" >"$WORK/diff" || fail "$1 differs (protobuf vs JSON): $(head -20 "$WORK/diff")"
	[ -s "$2" ] || fail "$1: empty on both sides"
	note "$1: $(wc -l <"$2") lines equal"
}

# Levels: one line per level, its numbers space-separated.
text_levels() {
	awk '/^  levels \{/ { l = ""; inl = 1; next }
	     inl && /^  \}/ { print l; inl = 0; next }
	     inl && /values:/ { l = (l == "" ? $2 : l " " $2) }' "$WORK/pb.txt"
}

# ---- ProfileTypes
pb ProfileTypes querier.v1.ProfileTypesRequest querier.v1.ProfileTypesResponse ""
text_strings ID >"$WORK/a"
js ProfileTypes '{}'
jq -r '.profileTypes[].ID' "$WORK/js.json" >"$WORK/b"
same "ProfileTypes IDs" "$WORK/a" "$WORK/b"
grep -qx "$CPU" "$WORK/a" || fail "ProfileTypes lacks $CPU"
text_strings sample_unit >"$WORK/a"
jq -r '.profileTypes[].sampleUnit' "$WORK/js.json" >"$WORK/b"
same "ProfileTypes sample units" "$WORK/a" "$WORK/b"

# ---- LabelNames, LabelValues
pb LabelNames types.v1.LabelNamesRequest types.v1.LabelNamesResponse \
	"start: $FROM_MS end: $UNTIL_MS"
text_strings names >"$WORK/a"
js LabelNames "{\"start\":$FROM_MS,\"end\":$UNTIL_MS}"
jq -r '.names[]' "$WORK/js.json" >"$WORK/b"
same "LabelNames" "$WORK/a" "$WORK/b"
grep -qx service_name "$WORK/a" || fail "LabelNames lacks service_name"

pb LabelValues types.v1.LabelValuesRequest types.v1.LabelValuesResponse \
	"name: \"__profile_type__\" matchers: \"{service_name!=\\\"\\\"}\""
text_strings names >"$WORK/a"
js LabelValues '{"name":"__profile_type__","matchers":["{service_name!=\"\"}"]}'
jq -r '.names[]' "$WORK/js.json" >"$WORK/b"
same "LabelValues" "$WORK/a" "$WORK/b"

# ---- Series: one line per label set, name=value joined by commas
pb Series querier.v1.SeriesRequest querier.v1.SeriesResponse \
	"matchers: \"{}\" label_names: \"service_name\" label_names: \"__profile_type__\" start: $FROM_MS end: $UNTIL_MS"
awk '/^labels_set \{/ { s = ""; next }
     /^\}/ { print s; next }
     / name:/ { n = $2 }
     / value:/ { v = $2; s = (s == "" ? "" : s ",") n "=" v }' "$WORK/pb.txt" | tr -d '"' >"$WORK/a"
js Series "{\"matchers\":[\"{}\"],\"labelNames\":[\"service_name\",\"__profile_type__\"],\"start\":$FROM_MS,\"end\":$UNTIL_MS}"
jq -r '.labelsSet[] | [.labels[] | "\(.name)=\(.value)"] | join(",")' "$WORK/js.json" >"$WORK/b"
same "Series" "$WORK/a" "$WORK/b"

# ---- SelectMergeStacktraces: names, levels, total, maxSelf (also gzipped)
SEL="profile_typeID: \"$CPU\" label_selector: \"{}\" start: $FROM_MS end: $UNTIL_MS max_nodes: 200"
JSEL="\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":$FROM_MS,\"end\":$UNTIL_MS,\"maxNodes\":200"
check_flamegraph() { # WHAT
	text_strings names >"$WORK/a"
	jq -r '.flamegraph.names[]' "$WORK/js.json" >"$WORK/b"
	same "$1 names" "$WORK/a" "$WORK/b"
	text_levels >"$WORK/a"
	jq -r '.flamegraph.levels[] | .values | join(" ")' "$WORK/js.json" >"$WORK/b"
	same "$1 levels" "$WORK/a" "$WORK/b"
	for k in total:total max_self:maxSelf leftTicks:leftTicks rightTicks:rightTicks; do
		local t=${k%%:*} j=${k#*:} a b
		a=$(sed -n "s/^  $t: //p" "$WORK/pb.txt")
		b=$(jq -r ".flamegraph.$j // empty" "$WORK/js.json")
		[ "${a:-0}" = "${b:-0}" ] || fail "$1 $t: protobuf $a, JSON $b"
	done
}
pb SelectMergeStacktraces querier.v1.SelectMergeStacktracesRequest \
	querier.v1.SelectMergeStacktracesResponse "$SEL"
js SelectMergeStacktraces "{$JSEL}"
check_flamegraph SelectMergeStacktraces
TOTAL=$(jq -r .flamegraph.total "$WORK/js.json")
[ "$TOTAL" -gt 0 ] || fail "SelectMergeStacktraces: total is $TOTAL"
note "SelectMergeStacktraces: total $TOTAL"
cp "$WORK/pb.txt" "$WORK/plain.txt"
printf '%s\n' "$SEL" | protoc --proto_path="$PROTO_DIR" \
	--encode=querier.v1.SelectMergeStacktracesRequest querier.proto | gzip -c >"$WORK/req.gz"
for hdr in 'Content-Encoding: gzip' 'Connect-Content-Encoding: gzip'; do
	http POST /querier.v1.QuerierService/SelectMergeStacktraces -H 'X-Scope-OrgID: wl' \
		-H 'Content-Type: application/proto' -H "$hdr" --data-binary "@$WORK/req.gz"
	[ "$STATUS" = 200 ] || fail "gzipped proto request ($hdr): HTTP $STATUS $BODY"
	protoc --proto_path="$PROTO_DIR" --decode=querier.v1.SelectMergeStacktracesResponse \
		querier.proto <"$WORK/body" >"$WORK/pb.txt"
	cmp -s "$WORK/pb.txt" "$WORK/plain.txt" || fail "gzipped request ($hdr) answers differently"
done
for ct in application/protobuf application/x-protobuf 'application/proto; charset=utf-8'; do
	pb SelectMergeStacktraces querier.v1.SelectMergeStacktracesRequest \
		querier.v1.SelectMergeStacktracesResponse "$SEL" -H "Content-Type: $ct"
	cmp -s "$WORK/pb.txt" "$WORK/plain.txt" || fail "Content-Type $ct answers differently"
done

# ---- Diff of the instances' halves: 7-number levels and both tick counts
pb Diff querier.v1.DiffRequest querier.v1.DiffResponse \
	"left { $SEL } right { profile_typeID: \"$CPU\" start: $FROM_MS end: $UNTIL_MS }"
js Diff "{\"left\":{$JSEL},\"right\":{\"profileTypeID\":\"$CPU\",\"start\":$FROM_MS,\"end\":$UNTIL_MS}}"
check_flamegraph Diff
[ "$(jq -r .flamegraph.leftTicks "$WORK/js.json")" = "$TOTAL" ] || fail "Diff: leftTicks is not $TOTAL"

# ---- SelectSeries: per point "labels value timestamp"
pb SelectSeries querier.v1.SelectSeriesRequest querier.v1.SelectSeriesResponse \
	"profile_typeID: \"$CPU\" label_selector: \"{}\" start: $FROM_MS end: $UNTIL_MS step: 60 group_by: \"service_name\""
awk '/^series \{/ { s = ""; next }
     /^  labels \{/ { inl = 1; next }
     inl && /^    name:/ { n = $2 }
     inl && /^    value:/ { s = (s == "" ? "" : s ",") n "=" $2 }
     /^  points \{/ { inp = 1; v = 0; t = 0; next }
     inp && /^    value:/ { v = $2 }
     inp && /^    timestamp:/ { t = $2 }
     /^  \}/ { if (inp) printf "%s %.0f %s\n", s, v, t; inl = 0; inp = 0 }' "$WORK/pb.txt" | tr -d '"' >"$WORK/a"
js SelectSeries "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\",\"start\":$FROM_MS,\"end\":$UNTIL_MS,\"step\":60,\"groupBy\":[\"service_name\"]}"
jq -r '.series[] | ([.labels[] | "\(.name)=\(.value)"] | join(",")) as $l | .points[] | "\($l) \(.value) \(.timestamp)"' \
	"$WORK/js.json" | awk '{ printf "%s %.0f %s\n", $1, $2, $3 }' >"$WORK/b"
same "SelectSeries points" "$WORK/a" "$WORK/b"
SUM=$(awk '{ s += $2 } END { printf "%.0f", s }' "$WORK/a")
[ "$SUM" = "$TOTAL" ] || fail "SelectSeries: points sum to $SUM, the flame graph total is $TOTAL"

# ---- SelectMergeProfile: a pprof; samples and strings as in the JSON form
pb SelectMergeProfile querier.v1.SelectMergeProfileRequest perftools.profiles.Profile "$SEL"
awk '/^sample \{/ { ins = 1; k = 0; next }
     ins && /^\}/ { ins = 0; next }
     ins && /^  value:/ { if (k++ == 0) s += $2 }
     END { printf "%.0f\n", s }' "$WORK/pb.txt" >"$WORK/a"
js SelectMergeProfile "{$JSEL}"
jq -r '[.sample[].value[0] | tonumber] | add' "$WORK/js.json" | awk '{ printf "%.0f\n", $1 }' >"$WORK/b"
same "SelectMergeProfile sample sum" "$WORK/a" "$WORK/b"
[ "$(cat "$WORK/a")" = "$TOTAL" ] || fail "SelectMergeProfile: samples sum to $(cat "$WORK/a"), not $TOTAL"
[ "$(grep -c '^string_table:' "$WORK/pb.txt")" = "$(jq '.stringTable | length' "$WORK/js.json")" ] ||
	fail "SelectMergeProfile: string tables differ in length"
[ "$(grep -c '^sample {' "$WORK/pb.txt")" = "$(jq '.sample | length' "$WORK/js.json")" ] ||
	fail "SelectMergeProfile: sample counts differ"

# ---- errors: Connect JSON bodies whatever the request codec
printf '\x0a\x40ab' >"$WORK/bad.bin"
http POST /querier.v1.QuerierService/SelectMergeStacktraces -H 'X-Scope-OrgID: wl' \
	-H 'Content-Type: application/proto' --data-binary "@$WORK/bad.bin" -D "$WORK/err.hdr"
expect_status 400 'not a valid protobuf' "malformed protobuf"
grep -qi '^content-type: application/json' "$WORK/err.hdr" || fail "error body is not JSON"
[ "$(jq -r .code <<<"$BODY")" = invalid_argument ] || fail "malformed protobuf: code $(jq -r .code <<<"$BODY")"
pb LabelValues types.v1.LabelValuesRequest types.v1.LabelValuesResponse "name: \"nope\""
[ ! -s "$WORK/pb.txt" ] || fail "LabelValues of an unknown label: $(cat "$WORK/pb.txt")"
printf 'start: 5 end: 1' | protoc --proto_path="$PROTO_DIR" \
	--encode=querier.v1.SelectMergeStacktracesRequest querier.proto >"$WORK/req.bin"
http POST /querier.v1.QuerierService/SelectMergeStacktraces -H 'X-Scope-OrgID: wl' \
	-H 'Content-Type: application/proto' --data-binary "@$WORK/req.bin"
expect_status 400 'end must be after start' "protobuf request with end before start"
http POST /querier.v1.QuerierService/NoSuchMethod -H 'Content-Type: application/proto' \
	--data-binary ''
expect_status 404 'NoSuchMethod' "unknown method (protobuf)"
http POST /querier.v1.QuerierService/LabelNames -H 'Content-Type: text/plain' --data-binary 'x'
expect_status 415 'application/proto' "text/plain"
http GET /ready
[ "$STATUS" = 200 ] || fail "server not ready after the errors: HTTP $STATUS"
stop_server
note "connect_proto: ok"

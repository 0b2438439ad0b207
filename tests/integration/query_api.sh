#!/usr/bin/env bash
# query_api.sh - the read API end to end on real profiles: workload-generator
# profiles and a perf-recorded profile of a program built here are ingested
# into a fresh server; then
#   - /pyroscope/render numTicks equals the sum pprofinfo reports per type;
#   - `unhex query folded` equals a reference merge computed here from the
#     same files with `go tool pprof -raw` (addresses normalized to
#     <basename>+0x<file offset>, merged with awk): same stacks, same values;
#   - `go tool pprof -raw` and `-top` read /api/v1/pprof (URL and download)
#     and report the same totals;
#   - Connect responses have the shapes of Pyroscope's querier.v1;
#   - a diff of a profile against itself changes nothing;
#   - bad selectors, times and parameters are 400 with a message;
#   - the UI is served from the binary with the right types.
HERE=$(cd "$(dirname "$0")" && pwd)
SRC=$(cd "$HERE/../.." && pwd)
. "$HERE/lib.sh"
need UNHEX PERF2PPROF PPROFINFO WORKLOAD
need_cmd go "go tool pprof is the reference reader"
export GOCACHE="$WORK/gocache" GOPATH="$WORK/gopath" HOME="$WORK" PPROF_TMPDIR="$WORK/pprof"

NOW=$(date +%s)
FROM=$((NOW - 3 * 3600))
UNTIL=$((NOW + 3600))

# ---- real profiles: the workload generator ...
WL="$WORK/workload"
"$WORKLOAD" --out "$WL" --services 1 --instances 2 --minutes 3 --end now --quiet
WL_FILES=()
while IFS=$'\t' read -r path name secs; do
	case "$path" in '' | '#'*) continue ;; esac
	WL_FILES+=("$WL/$path")
done <"$WL/manifest.tsv"
note "workload: ${#WL_FILES[@]} profiles"

# ... and a program profiled for real (perf, else the gperftools profiler).
build_two_mapping_prog "$WORK"
PERF_PB="$WORK/perf.pb.gz"
profile_to_pprof "$PERF_PB" "$WORK/prog" 1.0

# sum_of TYPE UNIT FILE...: the sum of one sample type over files (pprofinfo).
sum_of() {
	local type=$1 unit=$2 f s=0 v
	shift 2
	for f in "$@"; do
		v=$("$PPROFINFO" --json "$f" | jq --arg t "$type" --arg u "$unit" \
			'[.sample_types[] | select(.type == $t and .unit == $u) | .sum] | add // 0')
		s=$((s + v))
	done
	echo "$s"
}

# reference_folded TYPE UNIT FILE...: every sample's stack, root first, each
# frame <mapping basename>+0x<address - start + offset> (or the function
# names of a symbolized location, outermost inline first), summed by stack.
reference_folded() {
	local type=$1 unit=$2 f
	shift 2
	for f in "$@"; do
		go tool pprof -raw -symbolize=none "$f" 2>/dev/null |
			awk -v want="$type/$unit" '
			function hex(s,   i, v) {
				v = 0; s = tolower(s); sub(/^0x/, "", s)
				for (i = 1; i <= length(s); i++) v = v * 16 + index("0123456789abcdef", substr(s, i, 1)) - 1
				return v
			}
			function tohex(v, w,   o) {
				o = ""
				do { o = substr("0123456789abcdef", v % 16 + 1, 1) o; v = int(v / 16) } while (v > 0)
				while (length(o) < w) o = "0" o
				return o
			}
			# 64-bit values as two exact 32-bit halves (awk numbers are doubles).
			function hi(s) { s = tolower(s); sub(/^0x/, "", s); return length(s) > 8 ? hex(substr(s, 1, length(s) - 8)) : 0 }
			function lo(s) { s = tolower(s); sub(/^0x/, "", s); return hex(length(s) > 8 ? substr(s, length(s) - 7) : s) }
			function norm(a, st, off,   h, l) {
				l = lo(a) - lo(st) + lo(off); h = hi(a) - hi(st) + hi(off)
				while (l < 0) { l += 4294967296; h-- }
				while (l >= 4294967296) { l -= 4294967296; h++ }
				h = (h % 4294967296 + 4294967296) % 4294967296
				return h ? tohex(h, 0) tohex(l, 8) : tohex(l, 0)
			}
			/^Samples:/ { sec = "hdr"; next }
			/^Locations/ { sec = "loc"; next }
			/^Mappings/ { sec = "map"; next }
			sec == "hdr" {
				for (i = 1; i <= NF; i++) { t = $i; sub(/\[dflt\]$/, "", t); if (t == want) col = i }
				sec = "smp"; next
			}
			sec == "smp" && /^ *[0-9]+( +[0-9]+)*: / {
				split($0, parts, ":"); split(parts[1], vals, " ")
				n++; sval[n] = vals[col]; sloc[n] = substr($0, index($0, ":") + 2); next
			}
			sec == "loc" && /^ *[0-9]+: 0x/ {
				id = $1; sub(":", "", id); cur = id; laddr[id] = $2; lmap[id] = ""
				if ($3 ~ /^M=/) { lmap[id] = substr($3, 3); rest = 4 } else rest = 3
				nl[id] = 0
				if (NF >= rest) { nl[id] = 1; lname[id, 1] = $rest }
				next
			}
			sec == "loc" && /^             [^ ]/ { nl[cur]++; lname[cur, nl[cur]] = $1; next }
			sec == "map" && /^[0-9]+: 0x/ {
				id = $1; sub(":", "", id); split($2, r, "/")
				mstart[id] = r[1]; moff[id] = r[3]; file = $3
				if (file == "" || file ~ /^[0-9a-f]+$/ && NF == 3) file = "[unknown]"
				sub(/.*\//, "", file); mfile[id] = file
			}
			END {
				if (!col) { print "no sample type " want > "/dev/stderr"; exit 1 }
				for (s = 1; s <= n; s++) {
					if (sval[s] == 0) continue
					k = split(sloc[s], ids, " "); st = ""
					for (j = k; j >= 1; j--) {
						id = ids[j]
						if (nl[id] > 0) {
							for (m = nl[id]; m >= 1; m--) st = st (st == "" ? "" : ";") lname[id, m]
							continue
						}
						mp = lmap[id]
						if (mp == "") fr = "[unknown]+0x" norm(laddr[id], "0", "0")
						else fr = mfile[mp] "+0x" norm(laddr[id], mstart[mp], moff[mp])
						st = st (st == "" ? "" : ";") fr
					}
					printf "%s\t%s\n", st, sval[s]
				}
			}'
	done | awk -F'\t' '{ v[$1] += $2 } END { for (s in v) if (v[s]) printf "%s %.0f\n", s, v[s] }' | LC_ALL=C sort
}

DATA="$WORK/data"
start_server "$DATA"

# ---- ingest: workload into tenant wl, the perf profile into tenant perf
ingest_manifest "$WL" --tenant wl
"$UNHEX" ingest --server "$URL" --tenant perf --name 'perftest.cpu{env=test}' "$PERF_PB" >/dev/null ||
	fail "the perf profile was rejected"

connect() { # TENANT METHOD JSON
	http POST "/querier.v1.QuerierService/$2" -H "X-Scope-OrgID: $1" \
		-H 'Content-Type: application/json' --data-binary "$3"
	[ "$STATUS" = 200 ] || fail "Connect $2 ($1): HTTP $STATUS $BODY"
}
render() { # TENANT QUERY [extra curl args]
	local t=$1 q=$2
	shift 2
	http GET /pyroscope/render -G -H "X-Scope-OrgID: $t" --data-urlencode "query=$q" \
		-d "from=$FROM" -d "until=$UNTIL" -d format=json "$@"
}

# The perf profile's CPU type as the server names it.
connect perf ProfileTypes '{}'
PERF_TYPE=$(jq -r '[.profileTypes[] | select(.sampleType == "cpu")][0].ID' <<<"$BODY")
[ -n "$PERF_TYPE" ] && [ "$PERF_TYPE" != null ] || fail "no cpu profile type in tenant perf: $BODY"
PERF_UNIT=$(jq -r '[.profileTypes[] | select(.sampleType == "cpu")][0].sampleUnit' <<<"$BODY")
note "perf profile type: $PERF_TYPE"

check_dataset() { # TENANT TYPE UNIT FILE...
	local t=$1 ptype=$2 unit=$3 want got
	shift 3
	want=$(sum_of cpu "$unit" "$@")
	[ "$want" -gt 0 ] || fail "$t: the input holds no cpu samples"
	render "$t" "$ptype{}"
	expect_status 200 numTicks "$t: render"
	got=$(jq '.flamebearer.numTicks' <<<"$BODY")
	[ "$got" = "$want" ] || fail "$t: render numTicks $got, pprofinfo sum $want"
	[ "$(jq -r '.flamebearer.names[0]' <<<"$BODY")" = total ] || fail "$t: names[0] is not total"
	note "$t: numTicks $got = sum of ingested cpu values"

	reference_folded cpu "$unit" "$@" >"$WORK/$t.ref"
	"$UNHEX" query folded --server "$URL" --tenant "$t" --query "$ptype{}" --from "$FROM" \
		--until "$UNTIL" | LC_ALL=C sort >"$WORK/$t.got" || fail "$t: unhex query folded failed"
	[ -s "$WORK/$t.ref" ] || fail "$t: empty reference merge"
	if ! cmp -s "$WORK/$t.ref" "$WORK/$t.got"; then
		diff "$WORK/$t.ref" "$WORK/$t.got" | head -n 20 >&2
		fail "$t: unhex query folded differs from the reference merge ($(wc -l <"$WORK/$t.ref") vs $(wc -l <"$WORK/$t.got") stacks)"
	fi
	[ "$(awk '{ s += $NF } END { printf "%.0f\n", s }' "$WORK/$t.got")" = "$want" ] || fail "$t: folded does not sum to $want"
	note "$t: folded equals the reference merge ($(wc -l <"$WORK/$t.got") stacks)"
}
check_dataset wl "$CPU" nanoseconds "${WL_FILES[@]}"
check_dataset perf "$PERF_TYPE" "$PERF_UNIT" "$PERF_PB"

# ---- go tool pprof on /api/v1/pprof: URL and downloaded file agree with the render total
WANT=$(sum_of cpu nanoseconds "${WL_FILES[@]}")
PQ=$(jq -rn --arg q "$CPU{service_name=\"shop-api\"}" '$q|@uri')
PURL="$URL/api/v1/pprof?query=$PQ&from=$FROM&until=$UNTIL"
curl -sS -D "$WORK/pprof.hdr" -o "$WORK/dl.pb.gz" -H 'X-Scope-OrgID: wl' "$PURL"
grep -qi '^content-type: application/octet-stream' "$WORK/pprof.hdr" || fail "pprof content type: $(cat "$WORK/pprof.hdr")"
grep -qi '^content-disposition: attachment; filename=profile.pb.gz' "$WORK/pprof.hdr" || fail "pprof disposition"
[ "$(head -c 2 "$WORK/dl.pb.gz" | od -An -tx1 | tr -d ' ')" = 1f8b ] || fail "pprof download is not gzip"
raw_total() { awk '/^Samples:/{s=1;getline;next} /^Locations/{s=0} s && /^ *[0-9]+( +[0-9]+)*: / {t += $1} END{printf "%.0f\n", t}'; }
# go tool pprof sends no X-Scope-OrgID: the same files go to tenant anonymous too.
"$UNHEX" ingest --server "$URL" --name 'shop-api.cpu' "${WL_FILES[@]}" >/dev/null 2>&1 ||
	fail "ingest as anonymous failed"
RAW_FILE=$(go tool pprof -raw -symbolize=none "$WORK/dl.pb.gz" 2>/dev/null | raw_total)
[ "$RAW_FILE" = "$WANT" ] || fail "go tool pprof -raw (file) total $RAW_FILE, want $WANT"
RAW_URL=$(go tool pprof -raw -symbolize=none "$PURL" 2>/dev/null | raw_total)
[ "$RAW_URL" = "$WANT" ] || fail "go tool pprof -raw (URL) total $RAW_URL, want $WANT"
go tool pprof -top "$PURL" >"$WORK/top.url" 2>"$WORK/top.url.err" || fail "go tool pprof -top URL: $(cat "$WORK/top.url.err")"
go tool pprof -top "$WORK/dl.pb.gz" >"$WORK/top.file" 2>/dev/null || fail "go tool pprof -top file failed"
T_URL=$(grep -o 'of [^ ]* total' "$WORK/top.url") || fail "-top (URL) has no total: $(head "$WORK/top.url")"
T_FILE=$(grep -o 'of [^ ]* total' "$WORK/top.file") || fail "-top (file) has no total"
[ "$T_URL" = "$T_FILE" ] || fail "-top totals differ: URL '$T_URL', file '$T_FILE'"
note "go tool pprof: -raw total $RAW_URL (URL) = $RAW_FILE (file); -top '$T_URL' for both"

# ---- Connect shapes (querier.v1)
S_MS=$((FROM * 1000))
E_MS=$((UNTIL * 1000))
SEL='{service_name=\"shop-api\"}'
connect wl ProfileTypes "{\"start\":$S_MS,\"end\":$E_MS}"
jq -e '.profileTypes[0].ID | type == "string"' <<<"$BODY" >/dev/null || fail "ProfileTypes shape: $BODY"
jq -e --arg t "$CPU" '[.profileTypes[].ID] | index($t) != null' <<<"$BODY" >/dev/null || fail "ProfileTypes lacks $CPU"
connect wl LabelNames "{\"matchers\":[\"$SEL\"],\"start\":$S_MS,\"end\":$E_MS}"
jq -e '.names | type == "array" and index("service_name") != null and index("version") != null' <<<"$BODY" >/dev/null ||
	fail "LabelNames shape: $BODY"
connect wl LabelValues "{\"name\":\"service_name\",\"matchers\":[],\"start\":$S_MS,\"end\":$E_MS}"
jq -e '.names == ["shop-api"]' <<<"$BODY" >/dev/null || fail "LabelValues service_name: $BODY"
connect wl Series "{\"matchers\":[\"$SEL\"],\"start\":$S_MS,\"end\":$E_MS}"
jq -e '.labelsSet[0].labels[0].name | type == "string"' <<<"$BODY" >/dev/null || fail "Series shape: $BODY"
connect wl SelectMergeStacktraces "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"$SEL\",\"start\":$S_MS,\"end\":$E_MS}"
jq -e '(.flamegraph.names | type == "array") and (.flamegraph.levels[0].values | type == "array") and (.flamegraph.total | type == "string")' \
	<<<"$BODY" >/dev/null || fail "SelectMergeStacktraces shape: $(head -c 300 <<<"$BODY")"
[ "$(jq -r .flamegraph.total <<<"$BODY")" = "$WANT" ] || fail "SelectMergeStacktraces total $(jq -r .flamegraph.total <<<"$BODY"), want $WANT"
connect wl SelectMergeProfile "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"$SEL\",\"start\":$S_MS,\"end\":$E_MS}"
jq -e '(.sample | length > 0) and (.stringTable | type == "array") and (.sampleType | length == 1)' <<<"$BODY" >/dev/null ||
	fail "SelectMergeProfile shape: $(head -c 300 <<<"$BODY")"
connect wl SelectSeries "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"$SEL\",\"start\":$S_MS,\"end\":$E_MS,\"step\":60}"
jq -e '.series[0].points[0].timestamp != null' <<<"$BODY" >/dev/null || fail "SelectSeries shape: $(head -c 300 <<<"$BODY")"
[ "$(jq '[.series[].points[].value] | add' <<<"$BODY")" = "$WANT" ] || fail "SelectSeries points do not sum to $WANT"
SIDE="{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"$SEL\",\"start\":$S_MS,\"end\":$E_MS}"
connect wl Diff "{\"left\":$SIDE,\"right\":$SIDE}"
jq -e '(.flamegraph.levels[0].values | length == 7) and (.flamegraph.leftTicks == .flamegraph.rightTicks)' <<<"$BODY" >/dev/null ||
	fail "Diff shape: $(head -c 300 <<<"$BODY")"
http POST /querier.v1.QuerierService/SelectMergeStacktraces -H 'X-Scope-OrgID: wl' \
	-H 'Content-Type: application/json' --data-binary '{"profileTypeID":'
expect_status 400 '"code":"invalid_argument"' "Connect: truncated JSON"
http POST /querier.v1.QuerierService/NoSuchMethod -H 'Content-Type: application/json' --data-binary '{}'
expect_status 404 '"code":"not_found"' "Connect: unknown method"
http POST /querier.v1.QuerierService/ProfileTypes -H 'Content-Type: text/plain' --data-binary '{}'
expect_status 415 '"code":"invalid_argument"' "Connect: wrong content type"
note "Connect: every method answers with querier.v1 shapes"

# ---- a diff against itself: no change anywhere
Q="$CPU{service_name=\"shop-api\"}"
render wl "$Q"
SINGLE=$(jq '.flamebearer.numTicks' <<<"$BODY")
http GET /pyroscope/render-diff -G -H 'X-Scope-OrgID: wl' --data-urlencode "leftQuery=$Q" \
	--data-urlencode "rightQuery=$Q" -d "leftFrom=$FROM" -d "leftUntil=$UNTIL" \
	-d "rightFrom=$FROM" -d "rightUntil=$UNTIL" -d format=json
expect_status 200 leftTicks "render-diff self vs self"
jq -e --argjson n "$SINGLE" '.leftTicks == $n and .rightTicks == $n and .metadata.format == "double" and (.flamebearer | has("leftTicks") | not)' \
	<<<"$BODY" >/dev/null || fail "self diff ticks (beside the flamebearer, as Pyroscope): $(jq -c '{leftTicks, rightTicks}' <<<"$BODY"), want $SINGLE"
BAD=$(jq '[.flamebearer.levels[] | . as $l | range(0; length; 7) | select($l[. + 1] != $l[. + 4] or $l[. + 2] != $l[. + 5])] | length' <<<"$BODY")
NT=$(jq '[.flamebearer.levels[] | length / 7] | add' <<<"$BODY")
[ "$BAD" = 0 ] || fail "self diff: $BAD of $NT nodes differ between left and right"
DT=$("$UNHEX" query diff --server "$URL" --tenant wl --left "$Q" --right "$Q" --from "$FROM" --until "$UNTIL" --limit 0) ||
	fail "unhex query diff failed"
NZ=$(awk 'NR > 2 && ($3 + 0 != 0 || $6 + 0 != 0)' <<<"$DT" | wc -l)
[ "$NZ" = 0 ] || fail "unhex query diff self vs self shows $NZ changes: $(head -n 5 <<<"$DT")"
[ "$(awk 'NR > 2' <<<"$DT" | wc -l)" -gt 10 ] || fail "unhex query diff printed too few functions"
note "self diff: $NT nodes, every ltotal == rtotal and lself == rself; CLI diff all zero"

# ---- the two releases differ; the CLI diff says which way (absolute and relative)
V14="$CPU{service_name=\"shop-api\",version=\"1.4\"}"
V15="$CPU{service_name=\"shop-api\",version=\"1.5\"}"
for mode in relative absolute; do
	DT=$("$UNHEX" query diff --server "$URL" --tenant wl --left "$V14" --right "$V15" \
		--from "$FROM" --until "$UNTIL" --mode "$mode" --limit 5) || fail "diff --mode $mode failed"
	head -n 1 <<<"$DT" | grep -q "mode $mode" || fail "diff --mode $mode header: $DT"
	[ "$(awk 'NR > 2' <<<"$DT" | wc -l)" = 5 ] || fail "diff --limit 5 printed: $DT"
done

# ---- top: totals and shares add up
TOP=$("$UNHEX" query top --server "$URL" --tenant wl --query "$Q" --from "$FROM" --until "$UNTIL" --limit 0) ||
	fail "unhex query top failed"
[ "$(awk 'NR > 1 { s += $1 } END { printf "%.0f\n", s }' <<<"$TOP")" = "$WANT" ] || fail "top self column does not sum to $WANT"
TOP5=$("$UNHEX" query top --server "$URL" --tenant wl --query "$Q" --from "$FROM" --until "$UNTIL" --limit 5 --sort total)
[ "$(wc -l <<<"$TOP5")" = 6 ] || fail "top --limit 5: $TOP5"
awk 'NR > 2 && prev < $3 { exit 1 } NR > 1 { prev = $3 }' <<<"$TOP5" || fail "top --sort total is not sorted: $TOP5"
"$UNHEX" query pprof --server "$URL" --tenant wl --query "$Q" --from "$FROM" --until "$UNTIL" -o "$WORK/cli.pb.gz" ||
	fail "unhex query pprof failed"
[ "$(go tool pprof -raw -symbolize=none "$WORK/cli.pb.gz" 2>/dev/null | raw_total)" = "$WANT" ] || fail "unhex query pprof total"

# ---- errors: 400 with a message naming the problem
http GET /pyroscope/render -G --data-urlencode "query=$CPU{service_name=\"x\"" -d from=now-1h
expect_status 400 "selector" "render: unterminated selector"
http GET /pyroscope/render -G --data-urlencode "query=$Q" -d from=yesterday
expect_status 400 "from" "render: bad from"
http GET /pyroscope/render -G --data-urlencode "query=$Q" -d from=now -d until=now-1h
expect_status 400 "until" "render: until before from"
http GET /pyroscope/render -G -d from=now-1h
expect_status 400 "missing parameter query" "render: no query"
http GET /pyroscope/render -G --data-urlencode "query=$Q" -d maxNodes=abc
expect_status 400 "maxNodes" "render: bad maxNodes"
http GET /pyroscope/render-diff -G --data-urlencode "leftQuery=$Q" --data-urlencode "rightQuery=$Q" -d rightUntil=now-99x
expect_status 400 "rightUntil" "render-diff: bad rightUntil"
http GET '/api/v1/pprof?query=%zz'
expect_status 400 "query" "pprof: bad escape"
http GET /api/v1/top -G --data-urlencode "query=$Q" -d sort=sideways
expect_status 400 "sort" "top: bad sort"
http GET /api/v1/diff-top -G --data-urlencode "leftQuery=$Q" --data-urlencode "rightQuery=$Q" -d mode=weird
expect_status 400 "mode" "diff-top: bad mode"
http GET /pyroscope/render -G --data-urlencode "query=$Q" -H 'X-Scope-OrgID: bad tenant'
expect_status 400 "X-Scope-OrgID" "render: bad tenant"
if "$UNHEX" query top --server "$URL" --query "$CPU{oops" 2>"$WORK/cli.err"; then
	fail "unhex query top accepted a bad selector"
fi
grep -q "HTTP 400: selector" "$WORK/cli.err" || fail "unhex query error: $(cat "$WORK/cli.err")"

# ---- legacy label routes
http GET /pyroscope/labels -H 'X-Scope-OrgID: wl'
expect_status 200 service_name "GET /pyroscope/labels"
http GET '/pyroscope/label-values?label=version' -H 'X-Scope-OrgID: wl'
expect_status 200 '' "GET /pyroscope/label-values"
jq -e '. == ["1.4","1.5"]' <<<"$BODY" >/dev/null || fail "label-values version: $BODY"

# ---- the UI, embedded in the binary
for f in index.html app.js style.css; do
	curl -sS -D "$WORK/h" -o "$WORK/f" "$URL/$f"
	cmp -s "$WORK/f" "$SRC/web/ui/$f" || fail "GET /$f differs from web/ui/$f"
	grep -qi '^cache-control: no-cache' "$WORK/h" || fail "/$f: no Cache-Control: no-cache"
done
http GET /
expect_status 200 '<html' "GET /"
curl -sS -D "$WORK/h" -o /dev/null "$URL/app.js"
grep -qi '^content-type: text/javascript; charset=utf-8' "$WORK/h" || fail "app.js content type: $(cat "$WORK/h")"
curl -sS -D "$WORK/h" -o /dev/null "$URL/style.css"
grep -qi '^content-type: text/css; charset=utf-8' "$WORK/h" || fail "style.css content type"
curl -sS -D "$WORK/h" -o /dev/null "$URL/"
grep -qi '^content-type: text/html; charset=utf-8' "$WORK/h" || fail "/ content type"
http GET /no-such-file.js
expect_status 404 '' "unknown static path"
http GET /../../etc/passwd
[ "$STATUS" = 404 ] || [ "$STATUS" = 400 ] || fail "path traversal answered $STATUS"

stop_server
echo "ok: query API"

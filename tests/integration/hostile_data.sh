#!/usr/bin/env bash
# hostile_data.sh - hostile data against the real server (issue 15): regex
# bombs in selectors answer 4xx with the server's memory bounded and other
# tenants still served; invalid UTF-8, negative values and extreme times
# are refused (or replaced where docs/ingest.md says so), so every answer is
# valid JSON and none is a 500; per-tenant limits from a limits file
# (docs/limits.md): one tenant's flood leaves another served, new tenants
# past the cap are refused, /metrics counts each refusal.  Every answer is checked for what it says, never
# for how fast it came (curl's --max-time is a generous bound against hangs).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX

DATA="$WORK/data"
# A query's tables may grow to --query-max-bytes, each step taken from the
# server's --max-inflight-bytes budget (docs/operations.md): small enough
# here that twelve bombs at once always fit, so each is answered by the
# regex bounds, not by load shedding.
start_server "$DATA" --query-max-bytes 128M

# rss_kib: the server's resident set, in KiB.
rss_kib() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$SERVER_PID/status"
}

# json_ok WHAT: the last BODY parses as JSON (python3's strict parser).
json_ok() {
	python3 -c 'import json,sys; json.loads(sys.stdin.buffer.read().decode("utf-8"))' \
		<"$WORK/body" || fail "$1: the answer is not valid UTF-8 JSON: $(head -c 300 "$WORK/body")"
}

uri() { jq -rn --arg s "$1" '$s|@uri'; }

# A series whose label k is 200 'a's, for tenant bomb, and an ordinary one
# for tenant calm.
A200=$(printf 'a%.0s' $(seq 200))
printf 'main;work;spin 100\nmain;idle 5\n' >"$WORK/folded.txt"
NOW=$(date +%s)
http POST "/ingest?name=$(uri "app.cpu{k=$A200}")&from=$((NOW - 10))&until=$NOW&format=folded" \
	-H 'X-Scope-OrgID: bomb' --data-binary @"$WORK/folded.txt"
expect_status 200 "" "ingest for tenant bomb"
http POST "/ingest?name=$(uri 'calm.cpu{env=prod}')&from=$((NOW - 10))&until=$NOW&format=folded" \
	-H 'X-Scope-OrgID: calm' --data-binary @"$WORK/folded.txt"
expect_status 200 "" "ingest for tenant calm"
TYPE=process_cpu:cpu:nanoseconds:cpu:nanoseconds
RANGE="from=$((NOW - 3600))&until=$((NOW + 60))"

# render TENANT SELECTOR: GET /pyroscope/render, at most 60 s.
render() {
	http GET "/pyroscope/render?query=$(uri "$TYPE$2")&$RANGE" -H "X-Scope-OrgID: $1" \
		--max-time 60
}

render bomb '{service_name="app"}'
expect_status 200 '"numTicks":1050000000' "tenant bomb's data"
render calm '{env=~"pro.|x"}'
expect_status 200 '"numTicks":1050000000' "a regex for tenant calm"

# ---- 1. regex bombs: 400 with a message, memory bounded.
RSS0=$(rss_kib)
render bomb '{service_name=~"(((a{0,32767}){0,32767}){0,32767})"}'
expect_status 400 "too large" "nested repeat counts (compile-size bomb)"
render bomb '{k=~"(a*)*\\2\\2\\2b"}'
expect_status 400 "label k: bad regex" "back-references against a 200-byte value"
render bomb '{k=~"(?<x>a*)*\\k<x>b"}'
expect_status 400 "back-references are not supported" "a named back-reference"
render bomb '{k=~"(?:a|aa)*[bc]"}'
expect_status 400 "label k: regex needs more than" "exponential backtracking on a 200-byte value"
render bomb '{k=~"(((a{1,1000}){1,1000}){1,1000})"}'
expect_status 400 "label k:" "nested repeat counts of 1000"
http GET "/pyroscope/render?query=$(uri "$TYPE{k=~\"$(printf 'a%.0s' $(seq 1100))\"}")&$RANGE" \
	-H 'X-Scope-OrgID: bomb'
expect_status 413 "regex of 1100 bytes" "a regex past the length limit"
# The Connect API runs the same selectors.
http POST /querier.v1.QuerierService/LabelValues -H 'X-Scope-OrgID: bomb' \
	-H 'Content-Type: application/json' --max-time 60 \
	--data "$(jq -cn '{name: "k", matchers: ["{k=~\"(?:a|aa)*[bc]\"}"]}')"
expect_status 400 "regex needs more than" "Connect LabelValues with a backtracking regex"

# Twelve at once (the issue's slot exhaustion): all refused, then the other
# tenant is served.
burst 12 bomb "/pyroscope/render?query=$(uri "$TYPE{k=~\"(?:a|aa)*[bc]\"}")&$RANGE" par
burst_wait "a concurrent bomb query"
# Each is refused: 400 by the regex's step budget, or 429 by the tenant's
# query limit (8) when more than eight are in flight at once (slow builds).
for i in $(seq 1 12); do
	case "$(cat "$WORK/par.$i.code")" in
	400 | 429) ;;
	*) fail "concurrent bomb $i: HTTP $(cat "$WORK/par.$i.code") $(cat "$WORK/par.$i")" ;;
	esac
done
grep -qx 400 "$WORK"/par.*.code || fail "no concurrent bomb was judged by its regex"
note "12 concurrent backtracking bombs: all refused (HTTP 400, or 429 past the query limit)"
render calm '{env=~"prod"}'
expect_status 200 '"numTicks":1050000000' "tenant calm after the bombs"
RSS1=$(rss_kib)
note "RSS before the bombs ${RSS0} KiB, after ${RSS1} KiB"
[ $((RSS1 - RSS0)) -lt $((100 * 1024)) ] || fail "RSS grew by $((RSS1 - RSS0)) KiB (limit 100 MiB)"

# A tenant without data compiles nothing: an empty answer, whatever the regex.
render nodata '{service_name=~"(((a{0,32767}){0,32767}){0,32767})"}'
expect_status 200 '"numTicks":0' "a compile bomb for a tenant without data"

# ---- 2. clean inputs: invalid UTF-8, negative values, extreme times.
MKPPROF="$HERE/fixtures/mkpprof.py"
PP="/ingest?name=$(uri 'utf.cpu{env=x}')&from=$((NOW - 10))&until=$NOW&format=pprof"
post_pprof() { # TENANT [mkpprof args]
	local t=$1
	shift
	python3 "$MKPPROF" "$@" >"$WORK/p.pb"
	http POST "$PP" -H "X-Scope-OrgID: $t" --data-binary @"$WORK/p.pb"
}
post_pprof clean
expect_status 200 '"samples":' "a clean pprof"
post_pprof clean --func 'bad\xff\xc0name' --file '\xe2\x82.c'
expect_status 200 '"samples":' "invalid UTF-8 in a function and a file name (replaced)"
post_pprof clean --label 'pod=\xff\xfe'
expect_status 400 "its value is not UTF-8" "invalid UTF-8 in a sample label value"
post_pprof clean --type 'cp\xffu'
expect_status 400 "not UTF-8" "invalid UTF-8 in a sample type"
post_pprof clean --value -990
expect_status 400 "negative value -990" "a negative cpu value"
post_pprof clean --type alloc_space --unit bytes --value2 -5
expect_status 400 "negative value -5" "a negative bytes value"
post_pprof gauge --type temperature --unit celsius --value -3
expect_status 200 '"samples":' "a negative value of a unit that may be negative"
http POST "/ingest?name=$(uri 'utf.cpu{env=a')%FF%FE$(uri '}')&format=folded" \
	-H 'X-Scope-OrgID: clean' --data-binary @"$WORK/folded.txt"
expect_status 400 "not UTF-8" "invalid UTF-8 in an /ingest name label"
printf 'main;b\xffad;leaf 7\n' >"$WORK/badfold.txt"
http POST "/ingest?name=$(uri 'fold.cpu{env=x}')&from=$((NOW - 10))&until=$NOW&format=folded" \
	-H 'X-Scope-OrgID: clean' --data-binary @"$WORK/badfold.txt"
expect_status 200 "" "invalid UTF-8 in a folded frame (replaced)"

# Every answer about tenant clean is valid JSON, the replaced names included.
check_json() { # WHAT: 200 and valid JSON
	[ "$STATUS" = 200 ] || fail "$1: HTTP $STATUS $BODY"
	json_ok "$1"
	note "$1: HTTP 200, valid JSON"
}
http GET "/pyroscope/render?query=$(uri "$TYPE{service_name=\"utf\"}")&$RANGE" -H 'X-Scope-OrgID: clean'
check_json "render with replaced names"
python3 -c 'import json,sys; n=json.load(sys.stdin)["flamebearer"]["names"]; sys.exit(0 if any("bad\ufffd\ufffdname" == x for x in n) else 1)' \
	<"$WORK/body" || fail "render: the replaced name is not bad\\ufffd\\ufffdname: $BODY"
http GET "/pyroscope/render?query=$(uri "$TYPE{service_name=\"fold\"}")&$RANGE" -H 'X-Scope-OrgID: clean'
check_json "render of the folded profile"
for lbl in service_name env __profile_type__; do
	http GET "/pyroscope/label-values?label=$lbl&$RANGE" -H 'X-Scope-OrgID: clean'
	check_json "label-values $lbl"
done
http GET "/pyroscope/labels?$RANGE" -H 'X-Scope-OrgID: clean'
check_json "labels"
for m in LabelNames ProfileTypes; do
	http POST "/querier.v1.QuerierService/$m" -H 'X-Scope-OrgID: clean' \
		-H 'Content-Type: application/json' --data '{}'
	check_json "Connect $m"
done
http POST /querier.v1.QuerierService/SelectMergeStacktraces -H 'X-Scope-OrgID: clean' \
	-H 'Content-Type: application/json' \
	--data "$(jq -cn --arg t "$TYPE" '{profileTypeID: $t, labelSelector: "{service_name=\"utf\"}", start: "0", end: "0"}')"
check_json "Connect SelectMergeStacktraces"
http GET "/pyroscope/render?query=$(uri 'process_cpu:temperature:celsius:temperature:celsius{service_name="utf"}')&$RANGE" \
	-H 'X-Scope-OrgID: gauge'
check_json "render of a gauge with a negative value"
grep -q "\"numTicks\":7" "$WORK/body" || fail "gauge: numTicks is not -3 + 10: $BODY"

# Extreme times: 200 or 400, never a 500 (and no UBSan report under ASan).
I64=9223372036854775807
for q in "from=0&until=$I64" "from=$I64&until=$I64" "from=$((I64 - 1))&until=$I64" \
	"from=0&until=99999999999999999999" "from=now-9999999999w&until=now" "from=-1&until=now" \
	"from=now-106751d&until=$I64"; do
	for route in "/pyroscope/render?query=$(uri "$TYPE{}")&$q" "/pyroscope/label-values?label=env&$q" \
		"/pyroscope/labels?$q" "/pyroscope/render-diff?leftQuery=$(uri "$TYPE{}")&rightQuery=$(uri "$TYPE{}")&left${q//&/&left}&right${q//&/&right}"; do
		http GET "$route" -H 'X-Scope-OrgID: clean'
		case "$STATUS" in
		200) json_ok "$route" ;;
		400) ;;
		*) fail "$route: HTTP $STATUS $BODY" ;;
		esac
	done
	note "times $q: every route 200 (valid JSON) or 400"
done
http POST "/ingest?name=$(uri 'edge.cpu{}')&from=0&until=$I64&format=folded" -H 'X-Scope-OrgID: clean' \
	--data-binary @"$WORK/folded.txt"
case "$STATUS" in 200 | 400) ;; *) fail "ingest with until=INT64_MAX: HTTP $STATUS $BODY" ;; esac
note "ingest with from=0 until=INT64_MAX: HTTP $STATUS"
for se in '"start": "0", "end": "9223372036854775807"' '"start": "9223372036854775806", "end": "9223372036854775807"' \
	'"start": "-5", "end": "10"'; do
	for m in SelectMergeStacktraces SelectSeries LabelValues; do
		http POST "/querier.v1.QuerierService/$m" -H 'X-Scope-OrgID: clean' \
			-H 'Content-Type: application/json' \
			--data "{\"profileTypeID\": \"$TYPE\", \"labelSelector\": \"{}\", \"name\": \"env\", \"step\": 9.2e18, $se}"
		case "$STATUS" in
		200 | 400) json_ok "Connect $m $se" ;;
		*) fail "Connect $m $se: HTTP $STATUS $BODY" ;;
		esac
	done
	note "Connect with $se: 200 or 400, valid JSON"
done

# ---- 3. per-tenant limits from a limits file.
stop_server
cat >"$WORK/limits" <<'EOF'
# hostile_data.sh: tiny limits, so each is reached at once
global max_tenants=3
default max_queries=1
tenant calm max_queries=2
tenant wide max_series=20
tenant flood ingest_bytes_per_s=1K burst_s=1
EOF
start_server "$WORK/data2" --threads 8 --limits-file "$WORK/limits"
ing() { # TENANT NAME FILE [curl args]: POST a folded profile
	local t=$1 n=$2 f=$3
	shift 3
	http POST "/ingest?name=$(uri "$n")&from=$((NOW - 10))&until=$NOW&format=folded" \
		-H "X-Scope-OrgID: $t" --data-binary @"$f" "$@"
}
ing calm 'calm.cpu{env=prod}' "$WORK/folded.txt"
expect_status 200 "" "tenant calm ingests"

# A flood of bytes: the first large body is admitted (a debt), the next is 429.
for i in $(seq 1 3000); do echo "main;flood;f$i 1"; done >"$WORK/big.txt"
ing flood 'flood.cpu{}' "$WORK/big.txt"
expect_status 200 "" "tenant flood's first large body"
ing flood 'flood.cpu{}' "$WORK/folded.txt" -D "$WORK/h429"
expect_status 429 'more than its 1024 bytes/s (limits file: ingest_bytes_per_s)' "tenant flood past its bytes/s"
RA=$(tr -d '\r' <"$WORK/h429" | awk -F': ' 'tolower($1) == "retry-after" { print $2 }')
[ -n "$RA" ] && [ "$RA" -ge 1 ] || fail "429 without a Retry-After: $(cat "$WORK/h429")"
note "Retry-After: $RA"
http POST /push.v1.PusherService/Push -H 'X-Scope-OrgID: flood' -H 'Content-Type: application/json' \
	--data '{"series":[]}'
expect_status 429 '"code":"resource_exhausted"' "tenant flood's Connect push past its bytes/s"
ing calm 'calm.cpu{env=prod}' "$WORK/folded.txt"
expect_status 200 "" "tenant calm ingests during the flood"

# Series: 20 for tenant wide, then only existing label sets.
for i in $(seq 1 20); do
	ing wide "wide.cpu{k=v$i}" "$WORK/folded.txt"
	[ "$STATUS" = 200 ] || fail "series $i of tenant wide: HTTP $STATUS $BODY"
done
ing wide 'wide.cpu{k=v21}' "$WORK/folded.txt"
expect_status 413 "series limit of 20 reached" "tenant wide's 21st series"
ing wide 'wide.cpu{k=v3}' "$WORK/folded.txt"
expect_status 200 "" "tenant wide's existing series"
ing wide "wide.cpu{k=$(printf 'x%.0s' $(seq 1100))}" "$WORK/folded.txt"
expect_status 413 "longer than 1024 bytes" "a label value past max_label_bytes"

# The tenant cap: calm, flood and wide are served; a fourth is refused.
ing newbie 'new.cpu{}' "$WORK/folded.txt"
expect_status 403 'tenant "newbie" is new and this server already serves its maximum of 3 tenants' \
	"a tenant past max_tenants"
http GET "/pyroscope/render?query=$(uri "$TYPE{}")&$RANGE" -H 'X-Scope-OrgID: newbie'
expect_status 200 '"numTicks":0' "a query of the refused tenant (no data, no state)"

# Queries: flood may run one at a time; its burst leaves tenant calm served.
burst 24 flood "/pyroscope/render?query=$(uri "$TYPE{service_name=~\"fl.*\"}")&$RANGE" fq 120
for i in $(seq 1 10); do
	http GET "/pyroscope/render?query=$(uri "$TYPE{service_name=\"calm\"}")&$RANGE" \
		-H 'X-Scope-OrgID: calm' --max-time 120
	[ "$STATUS" = 200 ] || fail "tenant calm's query $i during flood's burst: HTTP $STATUS $BODY"
done
note "tenant calm: 10 queries during tenant flood's burst of 24, all HTTP 200"
burst_wait "a query of tenant flood"
ok=0
limited=0
for i in $(seq 1 24); do
	case "$(cat "$WORK/fq.$i.code")" in
	200) ok=$((ok + 1)) ;;
	429)
		grep -q "already runs 1 queries, its limit" "$WORK/fq.$i" ||
			fail "flood query $i: 429 without its reason: $(cat "$WORK/fq.$i")"
		limited=$((limited + 1))
		;;
	*) fail "flood query $i: HTTP $(cat "$WORK/fq.$i.code") $(cat "$WORK/fq.$i")" ;;
	esac
done
note "tenant flood's burst: $ok answered, $limited refused with 429"

# /metrics counts every refusal by tenant and reason.
http GET /metrics
[ "$STATUS" = 200 ] || fail "/metrics: HTTP $STATUS"
metric() { awk -v m="$1" '$1 == m { print $2 }' <<<"$BODY"; }
expect_metric() { # NAME VALUE
	[ "$(metric "$1")" = "$2" ] || fail "/metrics: $1 is not $2: $(grep -E 'refusals|^unhex_tenants' <<<"$BODY")"
}
expect_metric 'unhex_tenant_refusals_total{tenant="flood",reason="ingest_bytes"}' 2
expect_metric 'unhex_tenant_refusals_total{tenant="wide",reason="series"}' 1
expect_metric 'unhex_tenant_refusals_total{tenant="wide",reason="labels"}' 1
expect_metric 'unhex_tenant_refusals_total{tenant="",reason="tenant_cap"}' 1
[ "$limited" = 0 ] || expect_metric 'unhex_tenant_refusals_total{tenant="flood",reason="queries"}' "$limited"
expect_metric unhex_tenants 3
note "/metrics: $(grep -c '^unhex_tenant_refusals_total' <<<"$BODY") refusal series, as expected"

# A limits file that does not parse stops the server from starting.
stop_server
printf 'default max_series=0\n' >"$WORK/badlimits"
if "$UNHEX" serve --data "$WORK/data3" --listen 127.0.0.1:0 --limits-file "$WORK/badlimits" \
	>"$WORK/bad.out" 2>"$WORK/bad.err"; then
	fail "a bad limits file was accepted"
fi
grep -q "line 1: max_series wants a whole number" "$WORK/bad.err" ||
	fail "bad limits file: $(cat "$WORK/bad.err")"
note "a bad limits file: $(head -c 200 "$WORK/bad.err")"

note "hostile_data: ok"

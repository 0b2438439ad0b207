#!/usr/bin/env bash
# hostile_data.sh - hostile data against the real server (issue 15): regex
# bombs in selectors answer 4xx with the server's memory bounded and other
# tenants still served.  Every answer is checked for what it says, never
# for how fast it came (curl's --max-time is a generous bound against hangs).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX

DATA="$WORK/data"
start_server "$DATA"

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
pids=()
for i in $(seq 1 12); do
	curl -sS -o "$WORK/par.$i" -w '%{http_code}' --max-time 60 -H 'X-Scope-OrgID: bomb' \
		"$URL/pyroscope/render?query=$(uri "$TYPE{k=~\"(?:a|aa)*[bc]\"}")&$RANGE" \
		>"$WORK/par.$i.code" &
	pids+=($!)
done
for p in "${pids[@]}"; do wait "$p" || fail "a concurrent bomb query did not finish"; done
for i in $(seq 1 12); do
	[ "$(cat "$WORK/par.$i.code")" = 400 ] ||
		fail "concurrent bomb $i: HTTP $(cat "$WORK/par.$i.code") $(cat "$WORK/par.$i")"
done
note "12 concurrent backtracking bombs: all HTTP 400"
render calm '{env=~"prod"}'
expect_status 200 '"numTicks":1050000000' "tenant calm after the bombs"
RSS1=$(rss_kib)
note "RSS before the bombs ${RSS0} KiB, after ${RSS1} KiB"
[ $((RSS1 - RSS0)) -lt $((100 * 1024)) ] || fail "RSS grew by $((RSS1 - RSS0)) KiB (limit 100 MiB)"

# A tenant without data compiles nothing: an empty answer, whatever the regex.
render nodata '{service_name=~"(((a{0,32767}){0,32767}){0,32767})"}'
expect_status 200 '"numTicks":0' "a compile bomb for a tenant without data"

stop_server
note "hostile_data: ok"

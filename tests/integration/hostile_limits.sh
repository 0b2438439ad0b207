#!/usr/bin/env bash
# hostile_limits.sh - the limits issue 15 left open, on the real server
# (docs/limits.md, docs/operations.md): a query past its tenant's
# max_query_bytes is refused with 413 naming the limit while a narrower one
# is answered; a profile that would add a label name or value past
# max_label_names / max_label_values is refused with 413, existing series
# still stored, across a restart too; a push of hundreds of gzip bombs stops
# at the request's inflate budget (413) after a bounded amount of CPU
# instead of inflating each; /metrics counts every refusal by reason.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need_cmd jq

uri() { jq -rn --arg s "$1" '$s|@uri'; }
TYPE=process_cpu:cpu:nanoseconds:cpu:nanoseconds
NOW=$(date +%s)
printf 'main;work;spin 100\nmain;idle 5\n' >"$WORK/folded.txt"

cat >"$WORK/limits" <<'EOF'
# hostile_limits.sh: each limit small enough to be reached at once
tenant scan max_query_bytes=500
tenant lbl max_label_names=6 max_label_values=3
tenant dbg debuginfo_bytes_per_hour=1KiB
EOF
start_server "$WORK/data" --limits-file "$WORK/limits"

# ---- 0. debug-info bytes per hour: uploads and perf maps share them; the
# upload that crosses the allowance is taken, the next is refused with 429
# and the time to wait.
head -c 4096 /dev/urandom >"$WORK/blob"
http POST "/api/v1/debuginfo/0123456789abcdef0123456789abcdef01234567" \
	-H 'X-Scope-OrgID: dbg' --data-binary @"$WORK/blob"
[ "$STATUS" != 429 ] || fail "the first upload under the allowance was refused: $BODY"
for path in "/api/v1/debuginfo/0123456789abcdef0123456789abcdef01234568" "/api/v1/perfmap/42"; do
	http POST "$path" -H 'X-Scope-OrgID: dbg' --data-binary @"$WORK/blob" -D "$WORK/h429"
	expect_status 429 'debuginfo_bytes_per_hour' "$path past the tenant's debug-info bytes"
	grep -qi '^retry-after: [1-9]' "$WORK/h429" || fail "429 without Retry-After: $(cat "$WORK/h429")"
done

ing() { # TENANT NAME FROM [curl args]: POST the folded profile for [FROM, FROM+10)
	local t=$1 n=$2 f=$3
	shift 3
	http POST "/ingest?name=$(uri "$n")&from=$f&until=$((f + 10))&format=folded" \
		-H "X-Scope-OrgID: $t" --data-binary @"$WORK/folded.txt" "$@"
}
render() { # TENANT FROM UNTIL
	http GET "/pyroscope/render?query=$(uri "$TYPE{service_name=\"app\"}")&from=$2&until=$3" \
		-H "X-Scope-OrgID: $1" --max-time 60
}
metric() { awk -v m="$1" '$1 == m { print $2 }' <<<"$BODY"; }
expect_metric() { # NAME VALUE
	[ "$(metric "$1")" = "$2" ] ||
		fail "/metrics: $1 is not $2: $(grep -E 'refusals' <<<"$BODY")"
}

# ---- 1. max_query_bytes: ten profiles of two stacks, 88 bytes each
# (64 + 2 x 12, docs/limits.md); tenant scan may read 500 bytes per query.
T0=$((NOW - 1200))
for i in $(seq 0 9); do
	for t in scan calm; do
		ing $t 'app.cpu{env=prod}' $((T0 + i * 60))
		[ "$STATUS" = 200 ] || fail "profile $i of tenant $t: HTTP $STATUS $BODY"
	done
done
render scan $((T0 - 1)) $((T0 + 100))
expect_status 200 '"numTicks":210000000' "tenant scan: a range of 2 profiles (176 bytes)"
render scan $((T0 - 1)) $((NOW + 60))
expect_status 413 'reads more than its 500 bytes of samples (max_query_bytes' \
	"tenant scan: a range of 10 profiles (880 bytes)"
render calm $((T0 - 1)) $((NOW + 60))
expect_status 200 '"numTicks":1050000000' "tenant calm (default max_query_bytes): the same range"
CJ=(-H 'X-Scope-OrgID: scan' -H 'Content-Type: application/json')
RANGE_MS="\"start\": \"$(((T0 - 1) * 1000))\", \"end\": \"$(((NOW + 60) * 1000))\""
http POST /querier.v1.QuerierService/SelectMergeStacktraces "${CJ[@]}" \
	--data "{\"profileTypeID\": \"$TYPE\", \"labelSelector\": \"{}\", $RANGE_MS}"
expect_status 413 '"code":"resource_exhausted"' "Connect SelectMergeStacktraces past max_query_bytes"
http POST /querier.v1.QuerierService/SelectSeries "${CJ[@]}" \
	--data "{\"profileTypeID\": \"$TYPE\", \"labelSelector\": \"{}\", \"step\": 60, $RANGE_MS}"
expect_status 413 'max_query_bytes' "Connect SelectSeries past max_query_bytes"
# Label calls read no samples.
http POST /querier.v1.QuerierService/LabelNames "${CJ[@]}" --data "{$RANGE_MS}"
expect_status 200 '"env"' "Connect LabelNames of tenant scan"

# ---- 2. max_label_names=6, max_label_values=3 for tenant lbl.  Its first
# series has service_name, __name__, __profile_type__ and k: four names.
lbl() { # NAME CODE SUBSTRING WHAT: tenant lbl ingests series NAME, answered CODE
	ing lbl "$1" $((NOW - 10))
	expect_status "$2" "$3" "tenant lbl: $4"
}
for v in v1 v2 v3; do
	lbl "lbl.cpu{k=$v}" 200 "" "k=$v"
done
lbl 'lbl.cpu{k=v4}' 413 'label k has 3 values, its limit (limits file: max_label_values)' \
	"a fourth value of k"
lbl 'lbl.cpu{k=v2}' 200 "" "an existing series"
lbl 'lbl.cpu{k=v1,a=1}' 200 "" "a fifth name"
http GET "/pyroscope/labels?from=$((NOW - 3600))&until=$((NOW + 60))" -H 'X-Scope-OrgID: lbl'
NAMES=$(jq -r 'length' <<<"$BODY")
note "tenant lbl has $NAMES label names: $BODY"
# Fill the names up to the cap, then one more is refused.
i=0
while [ "$NAMES" -lt 6 ]; do
	i=$((i + 1))
	lbl "lbl.cpu{k=v1,n$i=1}" 200 "" "name n$i"
	NAMES=$((NAMES + 1))
done
lbl 'lbl.cpu{k=v1,zz=1}' 413 'label name limit of 6 reached for this tenant (limits file: max_label_names)' \
	"a seventh label name"
lbl 'lbl.cpu{k=v3,a=1}' 200 "" "a new series of existing names and values"

# ---- 3. a push of 480 gzip bombs (issue 15: 32 MiB, 28 GiB inflated,
# 17.7 s of CPU).  Each profile inflates to 60 MiB; the request may inflate
# 16 times its body (docs/operations.md), so the eighth profile stops it.
python3 "$HERE/fixtures/mkpush.py" 480 $((60 << 20)) >"$WORK/bombs.pb"
note "push of 480 gzip bombs: $(wc -c <"$WORK/bombs.pb") bytes"
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$SERVER_PID/stat"; }
C0=$(cpu_ticks)
http POST /push.v1.PusherService/Push -H 'X-Scope-OrgID: bombs' -H 'Content-Type: application/proto' \
	--data-binary @"$WORK/bombs.pb" --max-time 120
expect_status 413 'inflate budget, max_request_decoded_bytes' "a push of 480 gzip bombs"
C1=$(cpu_ticks)
HZ=$(getconf CLK_TCK)
note "server CPU for the push of bombs: $(((C1 - C0) * 1000 / HZ)) ms"
# A bound on work, not on time: inflating 16 x 29 MiB needs well under a
# CPU second; inflating all 480 (28 GiB) took 17.7 s.
[ $((C1 - C0)) -lt $((6 * HZ)) ] || fail "the push of bombs used $(((C1 - C0) / HZ)) s of CPU"
# A push of as many ordinary gzipped profiles is stored.
python3 "$HERE/fixtures/mkpush.py" 480 0 normal >"$WORK/normal.pb"
http POST /push.v1.PusherService/Push -H 'X-Scope-OrgID: bombs' -H 'Content-Type: application/proto' \
	--data-binary @"$WORK/normal.pb"
expect_status 200 "" "a push of 480 ordinary profiles"

# ---- /metrics counts each refusal by tenant and reason.
http GET /metrics
[ "$STATUS" = 200 ] || fail "/metrics: HTTP $STATUS"
expect_metric 'unhex_tenant_refusals_total{tenant="scan",reason="query_bytes"}' 3
expect_metric 'unhex_tenant_refusals_total{tenant="lbl",reason="label_values"}' 1
expect_metric 'unhex_tenant_refusals_total{tenant="lbl",reason="label_names"}' 1
note "/metrics: $(grep -E '^unhex_tenant_refusals_total' <<<"$BODY" | tr '\n' ' ')"

# ---- the label counts are rebuilt from the store after a restart.
stop_server
start_server "$WORK/data" --limits-file "$WORK/limits"
lbl 'lbl.cpu{k=v4}' 413 'label k has 3 values' "after a restart, a fourth value of k"
lbl 'lbl.cpu{k=v1,zz=1}' 413 'label name limit of 6 reached' "after a restart, a seventh label name"
lbl 'lbl.cpu{k=v2}' 200 "" "after a restart, an existing series"

# ---- 4. a query holds of --max-inflight-bytes what it uses: 16 MiB when
# admitted, more as its tables grow (docs/operations.md).  Under the
# defaults (--query-max-bytes 1G, --max-inflight-bytes 4G) twelve queries
# held at once are all admitted; with a fixed 1 GiB each, four were.
python3 -c 'for i in range(550):
	for j in range(550): print("main;a%d;b%d 1" % (i, j))' >"$WORK/wide.txt"
http POST "/ingest?name=wide.cpu&from=$((NOW - 10))&until=$NOW&format=folded" \
	-H 'X-Scope-OrgID: wide' --data-binary @"$WORK/wide.txt"
expect_status 200 "" "tenant wide: 302,500 distinct stacks"
stop_server
printf 'default max_queries=16\n' >"$WORK/limits4"
start_server "$WORK/data" --threads 32 --limits-file "$WORK/limits4"
HOLD=$((16 << 20))
jq -cn --arg t "$TYPE" '{profileTypeID: $t, labelSelector: "{}", start: "0", end: "0"}' >"$WORK/q.json"
python3 "$HERE/fixtures/held_queries.py" "$PORT" 12 $((12 * HOLD)) calm scan lbl <"$WORK/q.json" \
	>"$WORK/held.out" || fail "twelve held queries: $(cat "$WORK/held.out")"
SEEN=$(head -n 1 "$WORK/held.out")
[ "$SEEN" -ge $((12 * HOLD)) ] || fail "twelve held queries held only $SEEN bytes at once"
note "twelve Connect queries held at once: $SEEN bytes in flight, answers $(tail -n 1 "$WORK/held.out")"
inflight() { http GET /metrics; awk '$1 == "unhex_http_inflight_bytes" { print $2 }' <<<"$BODY"; }
# The answers are sent before the reservations are given back: wait for it.
for i in $(seq 1 600); do
	[ "$(inflight)" = 0 ] && break
	sleep 0.05
done
[ "$(inflight)" = 0 ] || fail "the queries' reservations were not given back: $(inflight)"

# A query whose tables outgrow what the budget has free: 503 + Retry-After.
stop_server
start_server "$WORK/data" --max-inflight-bytes 16M
render calm $((T0 - 1)) $((NOW + 60))
expect_status 200 '"numTicks":1050000000' "a small query under a 16 MiB budget"
http GET "/pyroscope/render?query=$(uri "$TYPE{}")&from=$((NOW - 3600))&until=$((NOW + 60))" \
	-H 'X-Scope-OrgID: wide' -D "$WORK/h503" --max-time 60
expect_status 503 "server busy: the query needs" "302,500 stacks under a 16 MiB budget"
grep -qi '^retry-after: 1' "$WORK/h503" || fail "503 without Retry-After: $(cat "$WORK/h503")"
http GET /metrics
[ "$(metric unhex_http_memory_refused_total)" -ge 1 ] || fail "/metrics: no memory refusal counted"

# ---- 5. --ingest-concurrency (docs/operations.md, "Ingest: one request
# per CPU at a time"): a cap from 1 to 1024, never 0; at 1, sixteen pushes
# sent at once all wait their turn and are all stored.
for bad in 0 1025 x; do
	if "$UNHEX" serve --data "$WORK/data-bad" --ingest-concurrency "$bad" >"$WORK/bad.log" 2>&1; then
		fail "--ingest-concurrency $bad was taken"
	fi
	grep -q 'ingest-concurrency' "$WORK/bad.log" || fail "--ingest-concurrency $bad: $(cat "$WORK/bad.log")"
done
stop_server
start_server "$WORK/data" --ingest-concurrency 1
http GET /metrics
expect_metric unhex_ingest_concurrency_limit 1
waited0=$(metric unhex_ingest_waited_total)
python3 -c 'for i in range(3000): print("main;f%d;g%d 1" % (i, i % 7))' >"$WORK/gate.txt"
pids=()
for i in $(seq 16); do
	curl -sS -o /dev/null -w '%{http_code}\n' -X POST -H 'X-Scope-OrgID: gate' \
		--data-binary @"$WORK/gate.txt" \
		"$URL/ingest?name=$(uri "app.cpu{i=$i}")&from=$((NOW - 10))&until=$NOW&format=folded" \
		>"$WORK/gate.$i" &
	pids+=($!)
done
wait "${pids[@]}" # not the server's
for i in $(seq 16); do
	[ "$(cat "$WORK/gate.$i")" = 200 ] || fail "push $i through a gate of one: $(cat "$WORK/gate.$i")"
done
render gate $((NOW - 60)) $((NOW + 60))
expect_status 200 '"numTicks":480000000000' "sixteen pushes through a gate of one, all stored"
http GET /metrics
expect_metric unhex_ingest_running 0
expect_metric unhex_ingest_waiting 0
note "through a gate of one: $(($(metric unhex_ingest_waited_total) - waited0)) of 16 pushes waited"

note "hostile_limits: ok"

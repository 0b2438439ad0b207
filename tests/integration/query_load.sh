#!/usr/bin/env bash
# query_load.sh - query limits and queries under ingest:
#   - with a tiny --query-max-bytes a query fails cleanly (413 with the
#     budget in the message) and the server keeps serving;
#   - with few workers (--threads 4), several loops of heavy queries run
#     while files are ingested one by one: every ingest succeeds, queries
#     (pprof exports and symbolization statuses, both merges)
#     either succeed or are refused at once with 503 "server busy", and at
#     least one query completes while ingest is going on.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX WORKLOAD

Q="$CPU{service_name=\"shop-api\"}"
WL="$WORK/workload"
"$WORKLOAD" --out "$WL" --services 1 --instances 4 --minutes 30 --end now --quiet
EXTRA="$WORK/extra"
"$WORKLOAD" --out "$EXTRA" --services 1 --instances 1 --minutes 3 --end now --seed 7 --quiet

# ---- a tiny query budget
start_server "$WORK/data" --preload "$WL" --query-max-bytes 64K --query-timeout 30s
http GET /pyroscope/render -G --data-urlencode "query=$Q" -d from=now-2h
expect_status 413 "budget" "render under a 64 KiB budget"
http POST /querier.v1.QuerierService/SelectMergeStacktraces -H 'Content-Type: application/json' \
	--data-binary "{\"profileTypeID\":\"$CPU\",\"labelSelector\":\"{}\"}"
expect_status 413 '"code":"resource_exhausted"' "Connect under a 64 KiB budget"
http GET /ready
expect_status 200 ready "the server is still up"
stop_server

# ---- usage errors of the flags
if "$UNHEX" serve --data "$WORK/x" --query-timeout soon 2>"$WORK/err"; then fail "--query-timeout soon accepted"; fi
grep -q "query-timeout" "$WORK/err" || fail "--query-timeout error: $(cat "$WORK/err")"

# ---- queries and ingest together on 4 workers
start_server "$WORK/data" --threads 4
STOP="$WORK/stop"
loop() { # N: run heavy queries until $STOP exists; log one status per line
	local n=$1 s ep=/api/v1/pprof
	# Odd loops ask for symbolization statuses: a merge too, also admitted.
	[ $((n % 2)) = 1 ] && ep=/api/v1/symbolization
	while [ ! -e "$STOP" ]; do
		s=$(curl -sS -o "$WORK/q.$n.body" -w '%{http_code}' -G "$URL$ep" \
			--data-urlencode "query=$Q" -d from=now-2h -d until=now) || s=curl-failed
		if [ "$s" = 503 ] && ! grep -q "server busy" "$WORK/q.$n.body"; then s="503-without-message"; fi
		echo "$s $(date +%s%N)" >>"$WORK/q.$n.log"
	done
}
PIDS=()
for n in 1 2 3 4 5 6; do
	loop "$n" &
	PIDS+=($!)
done
sleep 1
T0=$(date +%s%N)
failed=0
files=0
while IFS=$'\t' read -r path name secs; do
	case "$path" in '' | '#'*) continue ;; esac
	"$UNHEX" ingest --server "$URL" --name "$name" --from "$secs" --timeout 60 "$EXTRA/$path" \
		>/dev/null 2>>"$WORK/ingest.err" || failed=$((failed + 1))
	files=$((files + 1))
done <"$EXTRA/manifest.tsv"
T1=$(date +%s%N)
touch "$STOP"
wait "${PIDS[@]}"
[ $failed -eq 0 ] || fail "$failed of $files ingests failed while queries ran: $(head -n 3 "$WORK/ingest.err")"
cat "$WORK"/q.*.log >"$WORK/q.all"
OK=$(awk '$1 == 200' "$WORK/q.all" | wc -l)
BUSY=$(awk '$1 == 503' "$WORK/q.all" | wc -l)
OTHER=$(awk '$1 != 200 && $1 != 503' "$WORK/q.all" | wc -l)
DURING=$(awk -v a="$T0" -v b="$T1" '$1 == 200 && $2 > a && $2 < b' "$WORK/q.all" | wc -l)
note "$files ingests in $(((T1 - T0) / 1000000)) ms while 6 query loops ran: $OK queries ok, $BUSY refused busy, $OTHER other; $DURING finished during ingest"
[ "$OTHER" = 0 ] || fail "queries failed otherwise: $(awk '$1 != 200 && $1 != 503' "$WORK/q.all" | head -n 3)"
[ "$DURING" -gt 0 ] || fail "no query completed while ingest ran"
S=$(tenant_stats anonymous)
[ "$(field "$S" profiles)" -gt 0 ] || fail "nothing stored"
# The queries' large tables came back for the next queries, within the cap.
http GET /metrics
POOLED=$(awk '$1 == "unhex_query_pool_blocks_total{from=\"pool\"}" {print $2}' <<<"$BODY")
HELD=$(awk '$1 == "unhex_query_pool_bytes" {print $2}' <<<"$BODY")
note "query pool: $POOLED blocks reused, $HELD bytes held"
[ "${POOLED:-0}" -gt 0 ] || fail "no query table block was reused: $(grep unhex_query_pool <<<"$BODY")"
[ "${HELD:-0}" -gt 0 ] && [ "$HELD" -le $((128 << 20)) ] || fail "query pool holds $HELD bytes"
stop_server
echo "ok: query limits and concurrency"

#!/usr/bin/env bash
# objstore_fresh.sh - queriers see what ingesters hold (issue 12's freshness
# bound, docs/object-storage.md "Freshness"), on a real Ceph RGW: two
# ingesters, a compactor and a querier with --querier.ingesters.  Profiles
# sent round-robin to ingesters that seal nothing (a one-day seal delay)
# are in the querier's answers at once, exactly; then the ingesters' clocks
# move past the delay, their blocks are sealed, uploaded, indexed,
# compacted and dropped, and every answer the querier gives meanwhile is
# byte-identical to one local server's (nothing counted twice, nothing
# missing).  An ingester stopped: the answer is still 200, with a warning
# naming it.  Skips (77) only when the Ceph packages are missing.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
. "$HERE/rgw.sh"
. "$HERE/roles.sh"
need UNHEX
need WORKLOAD
need_rgw

block_workload 90 120

# renders DIR: the lib's answers without the stats (a querier's
# /api/v1/stats is its own store's, without the ingesters').
renders() {
	rm -rf "$1"
	answers "$1"
	rm -f "$1/stats"
}

# differs EXPECT GOT: what differs, in short (totals and warnings per service).
differs() {
	local f
	for f in "$1"/render.*; do
		cmp -s "$f" "$2/${f##*/}" && continue
		echo "${f##*/}: want $(jq -c '.flamebearer.numTicks' "$f"), got $(jq -c '{total: .flamebearer.numTicks, warnings}' "$2/${f##*/}" 2>/dev/null || echo none);"
		diff <(jq -S . "$f") <(jq -S . "$2/${f##*/}") | head -n 20
	done
	diff <(ls "$1") <(ls "$2") >/dev/null || echo "services: want $(ls "$1" | paste -sd ' '), got $(ls "$2" | paste -sd ' ')"
}

# services: the services of the reference, one a line.
services() {
	local f
	for f in "$WORK"/expect/render.*; do
		echo "${f##*/render.}"
	done
}

# render_svc SERVICE: its CPU flame graph into BODY.
render_svc() {
	http GET "/pyroscope/render?query=$(selector "$CPU" "$1")&from=$FROM&until=$UNTIL&maxNodes=65536"
	[ "$STATUS" = 200 ] || fail "render $1: $STATUS $BODY"
}

# renders_quick DIR: as renders, for the services of the reference.
renders_quick() {
	local dir=$1 svc
	rm -rf "$dir"
	mkdir -p "$dir"
	for svc in $(services); do
		render_svc "$svc"
		jq -c 'del(.symbolization)' <<<"$BODY" >"$dir/render.$svc"
	done
}

# series DIR: Connect Series of each service into DIR/series.<service>, by
# two selectors (a union: their common label is the service's); sorted, as
# Series lists them in the order of the store's series (a querier's:
# the order of its blocks).
series() {
	local dir=$1 svc
	rm -rf "$dir"
	mkdir -p "$dir"
	for svc in $(services); do
		http POST /querier.v1.QuerierService/Series -H 'Content-Type: application/json' \
			-d "$(jq -cn --arg a "{service_name=\"$svc\"}" --arg b "$CPU{service_name=\"$svc\"}" \
				--argjson s $((FROM * 1000)) --argjson e $((UNTIL * 1000)) \
				'{matchers: [$a, $b], start: $s, end: $e}')"
		[ "$STATUS" = 200 ] || fail "Series $svc: $STATUS $BODY"
		jq -S '.labelsSet | map(.labels | sort_by(.name)) | sort' <<<"$BODY" >"$dir/series.$svc"
		[ "$(jq length "$dir/series.$svc")" -gt 0 ] || fail "Series $svc: none: $BODY"
	done
}

# ---- the reference: one local server that ingests everything
start_server "$WORK/ref" --maintain-interval 1000h
ingest_manifest "$WL"
renders "$WORK/expect"
series "$WORK/expect-series"
stop_server
[ "$(ls "$WORK"/expect/render.* | wc -l)" = 2 ] || fail "reference services: $(ls "$WORK/expect")"
note "reference: $(for f in "$WORK"/expect/render.*; do jq -c '.flamebearer.numTicks' "$f"; done | paste -sd ' ')"

roles_bucket unhex-fresh
# Ingesters seal a range a day after it ended, by their clock (the newest
# profile they hold): the workload stays in their heads until a later one.
start_role ing1 "$WORK/ing1" --target ingester "${ROLE[@]}" --seal-delay 24h
start_role ing2 "$WORK/ing2" --target ingester "${ROLE[@]}" --seal-delay 24h
start_role comp "$WORK/comp" --target compactor "${ROLE[@]}"
start_role qry "$WORK/qry" --target querier "${ROLE[@]}" \
	--querier.ingesters "${URLS[ing1]},${URLS[ing2]}" --querier.ingester-timeout 120s

round_robin ing1 ing2
note "$SENT workload files sent round-robin to two ingesters"

# ---- fresh: nothing is sealed, the querier's store is empty, and it
# answers exactly from the ingesters' heads
for r in ing1 ing2; do
	use $r
	[ "$(maint sealed_blocks)" = 0 ] || fail "$r sealed a block already"
done
use qry
[ "$(jq -r .profiles <<<"$(tenant_stats anonymous)")" = 0 ] ||
	fail "the querier holds profiles of its own: $(tenant_stats anonymous)"
same() {
	renders "$WORK/got"
	diff -r "$WORK/expect" "$WORK/got" >/dev/null
}
until_ok 120 same ||
	fail "the querier's answers differ from one server's: $(differs "$WORK/expect" "$WORK/got")"
series "$WORK/got-series"
diff -r "$WORK/expect-series" "$WORK/got-series" >/dev/null ||
	fail "the querier's Series differ from one server's: $(diff -r "$WORK/expect-series" "$WORK/got-series" | head -n 30)"
note "fresh: the querier answers every profile (and Series) from the ingesters' heads"

# ---- what the ingesters send: a render asks them for its service's
# series only; a read of every series (LabelNames) for all, as every read
# did before requests carried the query's labels (format 2).  Per answer:
# bytes over requests of both ingesters.
head_sent() { # bytes and requests since the start
	curl -s "$URL/metrics" | awk '/^unhex_querier_ingester_bytes_total\{/ { b += $2 }
		/^unhex_querier_ingester_requests_total\{/ { n += $2 } END { printf "%d %d\n", b, n }'
}
per_answer() { # CMD...: runs it, prints the mean head-block answer it got
	local b0 n0 b1 n1
	read -r b0 n0 < <(head_sent)
	"$@"
	read -r b1 n1 < <(head_sent)
	[ "$n1" -gt "$n0" ] || fail "no head-block request for $*"
	echo $(((b1 - b0) / (n1 - n0)))
}
label_names() {
	http POST /querier.v1.QuerierService/LabelNames -H 'Content-Type: application/json' \
		-d "{\"start\":$((FROM * 1000)),\"end\":$((UNTIL * 1000))}"
	[ "$STATUS" = 200 ] || fail "LabelNames: $STATUS $BODY"
}
all=$(per_answer label_names)
per=()
for svc in $(services); do
	b=$(per_answer render_svc "$svc")
	[ "$b" -gt 0 ] && [ "$b" -lt "$all" ] ||
		fail "head-block answer of a render of $svc: $b bytes, of every series: $all"
	per+=("render of $svc $b")
done
# A render reads its flame graph and its timeline through one view: one
# head-block request to each ingester.
for svc in $(services); do
	read -r _ n0 < <(head_sent)
	render_svc "$svc"
	read -r _ n1 < <(head_sent)
	[ $((n1 - n0)) = 2 ] ||
		fail "a render of $svc asked the two ingesters $((n1 - n0)) times, want once each"
done
b=$(per_answer series "$WORK/got-series")
[ "$b" -gt 0 ] && [ "$b" -lt "$all" ] || fail "head-block answers of Series of one service: $b bytes"
per+=("Series of one service $b")
note "head-block bytes per answer: $(printf '%s; ' "${per[@]}")LabelNames (every series) $all"
# An ingester refuses an unknown format and a body that does not parse.
use ing1
http POST "/internal/v1/head-block?from_ns=0&until_ns=1&view_ns=0&format=3" \
	-H 'Content-Type: application/octet-stream' --data-binary ''
expect_status 400 "the formats are 1 and 2" "a head-block request of format 3"
printf '\001' >"$WORK/headreq"
http POST "/internal/v1/head-block?from_ns=0&until_ns=1&view_ns=0&format=2" \
	-H 'Content-Type: application/octet-stream' --data-binary @"$WORK/headreq"
expect_status 400 "the body ends before its 1 block ids" "a truncated head-block request"
use qry

# ---- the transition: a profile of another tenant a day and an hour later
# moves an ingester's clock; it seals, uploads, the compactor indexes,
# compacts and deletes, the ingester drops what it replaced.  First one
# ingester, while the other still holds everything in its head, then the
# other, whose blocks the compactor merges with its first output.  Every
# answer of the querier meanwhile is the reference's, byte for byte.
"$WORKLOAD" --out "$WORK/later" --services 1 --instances 1 --minutes 1 --interval 60 \
	--end $((END + 90000)) --quiet
polls=0
poll() {
	use qry
	# Two renders per poll (the services are known): as many polls as the
	# roles' passes allow.
	renders_quick "$WORK/poll"
	if ! diff -r "$WORK/expect" "$WORK/poll" >/dev/null; then
		# FRESH_KEEP=DIR keeps the logs and answers of a failure.
		[ -z "${FRESH_KEEP:-}" ] || { mkdir -p "$FRESH_KEEP" && cp -r "$WORK"/server.*.log "$WORK/poll" "$WORK/expect" "$FRESH_KEEP/"; }
		fail "poll $polls: the querier's answers differ from one server's during the transition: $(differs "$WORK/expect" "$WORK/poll")"
	fi
	polls=$((polls + 1))
}
state() {
	echo "compactor $(use comp; maint compactions) compactions, $(use comp; bucket deleted_blocks) deleted; $(for r in ing1 ing2; do use $r; echo "$r $(maint sealed_blocks) sealed $(bucket upload_pending_blocks) pending $(bucket unlisted_blocks) dropped"; done | paste -sd ';')"
}
poll_until() { # SECONDS WHAT CMD...: polls until CMD succeeds, then once more
	local end=$((SECONDS + $1)) what=$2
	shift 2
	while ! "$@"; do
		poll
		[ $SECONDS -lt $end ] || fail "$what did not happen: $(state)"
	done
	poll
}
dropped() { # ROLE: it dropped blocks the compactor merged, and uploaded all
	use "$1"
	[ "$(bucket unlisted_blocks)" -gt 0 ] && [ "$(bucket upload_pending_blocks)" = 0 ]
}
compacted() { # N: the compactor made N outputs and deleted a replaced block
	use comp
	[ "$(maint compactions)" -ge "$1" ] && [ "$(bucket deleted_blocks)" -gt 0 ]
}
synced() { # N: the querier read N more indexes since $SYNCS
	use qry
	[ "$(bucket syncs)" -gt $((SYNCS + $1)) ]
}
first_done() { compacted 1 && dropped ing1; }
all_done() { compacted 2 && dropped ing1 && dropped ing2 && synced 2; }
use ing1
ingest_manifest "$WORK/later" --tenant clock
poll_until 600 "ingester 1's seal, upload, compaction and drop" first_done
use ing2
[ "$(maint sealed_blocks)" = 0 ] || fail "ingester 2 sealed before its clock moved"
note "ingester 1 sealed, the compactor merged, ingester 1 dropped: $polls polls, $(state)"
ingest_manifest "$WORK/later" --tenant clock
use qry
SYNCS=$(bucket syncs)
poll_until 600 "ingester 2's seal, upload, compaction and drop" all_done
use qry
renders "$WORK/final"
diff -r "$WORK/expect" "$WORK/final" >/dev/null ||
	fail "after the transition the querier's answers differ: $(differs "$WORK/expect" "$WORK/final")"
[ "$(jq -r .profiles <<<"$(tenant_stats anonymous)")" -gt 0 ] ||
	fail "the querier never listed a block of the bucket"
ok=$(curl -s "$URL/metrics" | awk '/^unhex_querier_ingester_requests_total\{.*result="ok"\}/ { s += $2 } END { print s + 0 }')
[ "$ok" -gt 0 ] || fail "no ingester request counted as ok: $(curl -s "$URL/metrics" | grep unhex_querier_ingester)"
note "transition: $polls polls, every answer the reference's; $ok ingester requests answered"

# ---- an ingester down: 200, a warning naming it, the other's data kept
DOWN=${URLS[ing2]}
stop_role ing2
use qry
q=$(selector "$CPU" "$(ls "$WORK"/expect/render.* | head -n 1 | sed 's/.*render\.//')")
http GET "/pyroscope/render?query=$q&from=$FROM&until=$UNTIL"
expect_status 200 "flamebearer" "a render with an ingester down"
jq -r '.warnings[]?' <<<"$BODY" | grep -qF "ingester $DOWN" ||
	fail "no warning names the stopped ingester $DOWN: $(jq -c '.warnings' <<<"$BODY")"
failed=$(curl -s "$URL/metrics" | awk -v u="$DOWN" 'index($0, "unhex_querier_ingester_requests_total{ingester=\"" u "\",result=\"failed\"}") == 1 { print $2 }')
[ "${failed:-0}" -gt 0 ] || fail "the failed request to $DOWN is not counted: $(curl -s "$URL/metrics" | grep unhex_querier_ingester)"
note "an ingester down: 200 with the warning \"$(jq -r '.warnings[0]' <<<"$BODY" | head -c 120)...\""

stop_role qry
stop_role comp
stop_role ing1

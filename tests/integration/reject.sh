#!/usr/bin/env bash
# reject.sh - hostile input gets a 4xx with a message naming the problem, and
# changes nothing: malformed and truncated pprof, hand-assembled protobufs
# with a bad string index or an unknown location id, oversized and chunked
# bodies, gzip bombs (as a pprof and as Content-Encoding), bad names, formats,
# tenants, content types and methods.  The stats of every tenant involved
# are byte-for-byte the same afterwards, and the server still works.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need WORKLOAD

WL="$WORK/workload"
"$WORKLOAD" --out "$WL" --services 1 --instances 1 --minutes 1 --end now --quiet
GOOD="$WL/$(awk -F'\t' '!/^#/ && NF { print $1; exit }' "$WL/manifest.tsv")"
[ -s "$GOOD" ] || fail "no workload profile"

# ---- the hostile bodies
gzip -dc "$GOOD" >"$WORK/raw.pb" 2>/dev/null || cp "$GOOD" "$WORK/raw.pb"
gzip -9nc "$WORK/raw.pb" >"$WORK/good.pb.gz"
RAW_LEN=$(stat -c %s "$WORK/raw.pb")
GZ_LEN=$(stat -c %s "$WORK/good.pb.gz")
head -c $((RAW_LEN / 2)) "$WORK/raw.pb" >"$WORK/trunc.pb"
head -c $((GZ_LEN / 2)) "$WORK/good.pb.gz" >"$WORK/trunc.pb.gz"
# Byte 0 becomes 0xff: field 31 with wire type 7, which protobuf does not have.
{ printf '\377'; tail -c +2 "$WORK/raw.pb"; } >"$WORK/flipped.pb"
printf 'this is not a profile at all\n' >"$WORK/text.txt"
# sample_type {type: 5, unit: 0} with a string table of one entry: index 5 is out of range.
printf '\x0a\x04\x08\x05\x10\x00\x32\x00' >"$WORK/badstr.pb"
# sample_type {cpu, nanoseconds}, one sample at location 99, which does not exist.
printf '\x0a\x04\x08\x01\x10\x02\x12\x06\x0a\x01\x63\x12\x01\x01\x32\x00\x32\x03cpu\x32\x0bnanoseconds' \
	>"$WORK/badloc.pb"
# 64 MiB of zeros is ~64 KiB gzipped; the server below inflates at most 8 MiB.
head -c $((64 << 20)) /dev/zero | gzip -1 >"$WORK/bomb.gz"
# 2 MiB of random bytes: over the 1 MiB request cap below.
head -c $((2 << 20)) /dev/urandom >"$WORK/big.bin"

DATA="$WORK/data"
start_server "$DATA" --max-request-bytes 1M --max-decompressed-bytes 8M

NAME='reject.cpu%7Benv%3Dtest%7D'
ING="/ingest?name=$NAME&format=pprof"
http POST "$ING" --data-binary @"$WORK/good.pb.gz"
expect_status 200 '"samples":' "a valid profile"
GOOD_SAMPLES=$(field "$BODY" samples)
http POST "$ING" -H 'X-Scope-OrgID: victim' --data-binary @"$WORK/good.pb.gz"
expect_status 200 '"samples":' "a valid profile for tenant victim"
BEFORE_ANONYMOUS=$(tenant_stats anonymous)
BEFORE_VICTIM=$(tenant_stats victim)
BEFORE_FRESH=$(tenant_stats fresh)

post() { # FILE [curl args]: POST to /ingest as tenant victim
	local f=$1
	shift
	http POST "$ING" -H 'X-Scope-OrgID: victim' --data-binary @"$f" "$@"
}

post "$WORK/text.txt"
expect_status 400 "" "text body"
[ -n "$BODY" ] || fail "text body: empty message"
post "$WORK/trunc.pb"
expect_status 400 "" "truncated raw pprof"
post "$WORK/trunc.pb.gz"
expect_status 400 "" "truncated gzipped pprof"
post "$WORK/flipped.pb"
expect_status 400 "" "pprof with an invalid wire type"
post "$WORK/badstr.pb"
expect_status 400 "string" "pprof with a bad string index"
post "$WORK/badloc.pb"
expect_status 400 "location" "pprof with an unknown location id"
post "$WORK/bomb.gz"
expect_status 413 "" "gzip bomb as pprof"
http POST "$ING" -H 'X-Scope-OrgID: victim' -H 'Content-Encoding: gzip' --data-binary @"$WORK/bomb.gz"
expect_status 413 "limit" "gzip bomb as Content-Encoding"
http POST "$ING" -H 'X-Scope-OrgID: victim' -H 'Content-Encoding: br' --data-binary @"$WORK/good.pb.gz"
expect_status 400 "Content-Encoding" "unknown Content-Encoding"
post "$WORK/big.bin"
expect_status 413 "exceeds the limit of 1048576 bytes" "oversized body"
post "$WORK/big.bin" -H 'Transfer-Encoding: chunked'
expect_status 413 "exceeds the limit" "oversized chunked body"
http POST "$ING" -H 'X-Scope-OrgID: victim'
expect_status 400 "empty" "empty body"
# Multipart without the profile field, and with a broken structure.
http POST "$ING" -H 'X-Scope-OrgID: victim' -F 'jfr=@'"$WORK/good.pb.gz"
expect_status 400 '"profile"' "multipart without profile"
http POST "$ING" -H 'X-Scope-OrgID: victim' \
	-H 'Content-Type: multipart/form-data; boundary=XyZ' --data-binary @"$WORK/text.txt"
expect_status 400 "multipart" "malformed multipart"
http POST "$ING" -H 'X-Scope-OrgID: victim' -H 'Content-Type: multipart/form-data' \
	--data-binary @"$WORK/text.txt"
expect_status 400 "boundary" "multipart without boundary"

# refused QUERY TENANT WANT WHAT: the good profile sent to /ingest?QUERY as
# TENANT is answered 400 with WANT in the body.
refused() {
	http POST "/ingest?$1" -H "X-Scope-OrgID: $2" --data-binary @"$WORK/good.pb.gz"
	expect_status 400 "$3" "$4"
}

# Parameters.
refused "format=pprof" victim "name parameter is required" "missing name"
refused "name=&format=pprof" victim "name parameter is required" "empty name"
refused "name=app%7Benv%3D&format=pprof" victim "" "unterminated label set in name"
refused "name=%zz&format=pprof" victim "percent-encoding" "bad percent-encoding"
refused "name=$NAME&format=jfr" victim "jfr: no chunk magic" "a pprof sent as format=jfr"
refused "name=$NAME&format=xml" victim "format xml not supported" "format xml"
refused "name=$NAME&format=pprof&from=yesterday" victim "from" "bad from"
refused "name=$NAME&format=pprof&until=now-5parsecs" victim "until" "bad until"

# Tenants.
refused "name=$NAME&format=pprof" a/b "X-Scope-OrgID" "tenant with a slash"
refused "name=$NAME&format=pprof" .. "X-Scope-OrgID" "tenant .."
refused "name=$NAME&format=pprof" "$(printf 'x%.0s' $(seq 1 151))" "longer than 150" "tenant of 151 bytes"

# Connect push.
http POST /push.v1.PusherService/Push -H 'X-Scope-OrgID: victim' \
	-H 'Content-Type: application/json' --data-binary '{"series":[{"labels":['
expect_status 400 '"code":"invalid_argument"' "truncated push JSON"
http POST /push.v1.PusherService/Push -H 'X-Scope-OrgID: victim' \
	-H 'Content-Type: application/json' \
	--data-binary '{"series":[{"labels":[{"name":"service_name","value":"x"}],"samples":[{"rawProfile":"!!!"}]}]}'
expect_status 400 '"code":"invalid_argument"' "push JSON with bad base64"
http POST /push.v1.PusherService/Push -H 'X-Scope-OrgID: victim' \
	-H 'Content-Type: application/proto' --data-binary @"$WORK/flipped.pb"
expect_status 400 '"code":"invalid_argument"' "push proto garbage"
http POST /push.v1.PusherService/Push -H 'X-Scope-OrgID: victim' \
	-H 'Content-Type: application/proto' -H 'Content-Encoding: gzip' --data-binary @"$WORK/bomb.gz"
expect_status 413 '"code":"resource_exhausted"' "push gzip bomb"
http POST /push.v1.PusherService/Push -H 'X-Scope-OrgID: victim' \
	-H 'Content-Type: text/xml' --data-binary '<x/>'
expect_status 415 '"code":"invalid_argument"' "push with text/xml"
http POST /push.v1.PusherService/Push -H 'X-Scope-OrgID: a b' \
	-H 'Content-Type: application/json' --data-binary '{}'
expect_status 400 'X-Scope-OrgID' "push with a bad tenant"
http POST /push.v1.PusherService/Push -H 'X-Scope-OrgID: victim' \
	-H 'Content-Type: application/json' --data-binary @"$WORK/big.bin"
expect_status 413 '"code":"resource_exhausted"' "oversized push"

# Methods and routes.
http GET "$ING"
expect_status 405 "use POST" "GET /ingest"
http GET /no/such/route
expect_status 404 "no route" "unknown route"

# ---- nothing changed
for t in anonymous victim fresh; do
	before=BEFORE_$(tr a-z A-Z <<<"$t")
	now=$(tenant_stats "$t")
	[ "$now" = "${!before}" ] || fail "tenant $t changed: $now, before: ${!before}"
done

# The CLI reports the server's message and exits 1.
set +e
OUT=$("$UNHEX" ingest --server "$URL" --tenant clitest --name 'reject.cpu' "$WORK/good.pb.gz" "$WORK/text.txt" 2>&1)
rc=$?
set -e
[ $rc -eq 1 ] || fail "unhex ingest with one bad file exited $rc: $OUT"
grep -q "text.txt: HTTP 400" <<<"$OUT" || fail "unhex ingest did not print the server's message: $OUT"
set +e
"$UNHEX" ingest --server "ftp://127.0.0.1:$PORT" --name x "$WORK/good.pb.gz" 2>"$WORK/err"
rc=$?
set -e
[ $rc -eq 2 ] && grep -q "only http:// and https://" "$WORK/err" || fail "ftp URL: exit $rc $(cat "$WORK/err")"


http GET /metrics
expect_status 200 'unhex_ingest_rejected_total{reason="too_large"}' "metrics"
grep -q '^unhex_ingest_rejected_total{reason="tenant"} 4$' <<<"$BODY" || fail "tenant rejections: $BODY"
grep -q '^unhex_ingest_requests_total{endpoint="/ingest",code="413"} [1-9]' <<<"$BODY" ||
	fail "413s not counted: $BODY"
# Still healthy.
http POST "$ING" --data-binary @"$WORK/raw.pb"
expect_status 200 '"samples":' "a valid raw profile afterwards"
[ "$(field "$BODY" samples)" = "$GOOD_SAMPLES" ] ||
	fail "the same profile stored $(field "$BODY" samples) samples now, $GOOD_SAMPLES before"
stop_server
echo "PASS reject"

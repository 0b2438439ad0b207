#!/usr/bin/env bash
# regress_perf.sh - the worked example of docs/regressions.md, run by CTest
# (integration/regress_perf): a real C program built twice with -g, the
# second build with encode_output() made twice as slow; both stripped, their
# debug files uploaded with `unhex upload`; each build profiled by perf over
# several runs and ingested as releases 1 and 2 of service `regressdemo`.
#   - GET /api/v1/releases lists releases 1 and 2, each with its build ID,
#     symbolized (status ok);
#   - `unhex regress --fail-on 5%` flags encode_output on self, and only it,
#     its caller write_response on total (and no function that is not one of
#     its callers), and exits 1; the Markdown report says FAIL;
#   - 20 pairs of disjoint sets of runs of the SAME build flag nothing
#     (the false-positive rate is printed), and `unhex regress` exits 0.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/../../tests/integration/lib.sh"
need UNHEX
need PERF2PPROF

SVC=regressdemo
RUNS_A=24   # runs of build 1: release 1, and the same-build pairs
RUNS_B=10   # runs of build 2: release 2
SECS=0.8   # CPU seconds per run: samples per profile do not shrink when the machine is busy

# ---- a program with five leaf functions of distinct cost under a small call tree
cat >"$WORK/demo.c" <<'EOF'
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#ifndef SLOW
#define SLOW 1
#endif
/* Five leaves with different bodies, so the compiler cannot fold them. */
__attribute__((noinline)) unsigned parse_input(unsigned x)
{
	for (unsigned i = 0; i < 2000; i++)
		x = x * 2654435761u + (x >> 13) + i;
	return x;
}
__attribute__((noinline)) unsigned compress_block(unsigned x)
{
	for (unsigned i = 0; i < 2000; i++)
		x = (x ^ (x << 7)) + 0x9e3779b9u * i;
	return x;
}
__attribute__((noinline)) unsigned checksum(unsigned x)
{
	for (unsigned i = 0; i < 2000; i++)
		x = (x >> 3 | x << 29) ^ (i * 40503u);
	return x;
}
__attribute__((noinline)) unsigned encode_output(unsigned x)
{
	for (unsigned i = 0; i < 3000u * SLOW; i++)
		x = x * 1103515245u + 12345u + (x >> 17);
	return x;
}
__attribute__((noinline)) unsigned log_line(unsigned x)
{
	for (unsigned i = 0; i < 1000; i++)
		x += (x << 3) ^ (i + 0x7f4a7c15u);
	return x;
}
__attribute__((noinline)) unsigned process_payload(unsigned x)
{
	return compress_block(x) ^ checksum(x + 1);
}
__attribute__((noinline)) unsigned write_response(unsigned x)
{
	return encode_output(x) + 1;
}
__attribute__((noinline)) unsigned handle_request(unsigned x)
{
	unsigned r = parse_input(x);
	r ^= process_payload(r);
	r += write_response(r);
	return r ^ log_line(r);
}
__attribute__((noinline)) unsigned serve_loop(double secs)
{
	struct timespec t0, t;
	unsigned acc = 1;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t0);
	do {
		for (int k = 0; k < 64; k++)
			acc = handle_request(acc);
		clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
	} while ((double)(t.tv_sec - t0.tv_sec) + (double)(t.tv_nsec - t0.tv_nsec) / 1e9 < secs);
	return acc;
}
int main(int argc, char **argv)
{
	printf("%u\n", serve_loop(argc > 1 ? atof(argv[1]) : 1.0));
	return 0;
}
EOF
for b in 1 2; do
	# Aligned code, so that the other functions' speed does not move with the layout.
	cc -g -O2 -falign-functions=64 -falign-loops=64 -Wl,--build-id -DSLOW="$b" \
		-o "$WORK/demo$b" "$WORK/demo.c"
	objcopy --only-keep-debug "$WORK/demo$b" "$WORK/demo$b.debug"
	strip --strip-all -o "$WORK/demo$b.stripped" "$WORK/demo$b"
done
ID1=$(build_id "$WORK/demo1")
ID2=$(build_id "$WORK/demo2")
[ -n "$ID1" ] && [ "$ID1" != "$ID2" ] || fail "the two builds need two build IDs ($ID1, $ID2)"
note "build IDs: 1 $ID1, 2 $ID2"

# ---- profile every run of the STRIPPED binaries
for i in $(seq -w 1 $RUNS_A); do profile_to_pprof "$WORK/a$i.pb.gz" "$WORK/demo1.stripped" $SECS; done
for i in $(seq -w 1 $RUNS_B); do profile_to_pprof "$WORK/b$i.pb.gz" "$WORK/demo2.stripped" $SECS; done

start_server "$WORK/data"
T0=$(($(date +%s) - 3600))
FROM=$((T0 - 60))
UNTIL=$(($(date +%s) + 3600))
n=0
for f in "$WORK"/a*.pb.gz "$WORK"/b*.pb.gz; do
	base=$(basename "$f" .pb.gz)
	ver=1
	case "$base" in b*) ver=2 ;; esac
	n=$((n + 1))
	"$UNHEX" ingest --server "$URL" --name "$SVC.cpu{version=$ver,run=$base}" \
		--from $((T0 + 10 * n)) "$f" >/dev/null || fail "ingest $f"
done
OUT=$("$UNHEX" upload --server "$URL" "$WORK/demo1.debug" "$WORK/demo2.debug") || fail "upload: $OUT"
note "upload: $OUT"

# ---- the releases (of the CPU type: perf2pprof writes samples and cpu time)
PT=$(cpu_type $SVC)
http GET "/api/v1/releases?service=$SVC&from=$FROM&until=$UNTIL&type=$PT"
expect_status 200 '"releases"' "releases"
jq -e --arg id "$ID1" '[.releases[] | select(.name == "1" and .label == "version" and
	.profiles == 24 and (.buildIDs[] | .buildID == $id and .status == "ok"))] | length == 1' \
	<<<"$BODY" >/dev/null || fail "release 1 is not listed with $ID1 symbolized: $BODY"
jq -e --arg id "$ID2" '[.releases[] | select(.name == "2" and .profiles == 10 and
	(.buildIDs[] | .buildID == $id))] | length == 1' <<<"$BODY" >/dev/null ||
	fail "release 2 is not listed with $ID2: $BODY"

# ---- release 1 against release 2: the regression, and a CI gate that fails
set +e
"$UNHEX" regress --server "$URL" --service $SVC --baseline 1 --candidate 2 \
	--from $FROM --until $UNTIL --fail-on 5% --format json >"$WORK/r.json"
RC=$?
"$UNHEX" regress --server "$URL" --service $SVC --baseline 1 --candidate 2 \
	--from $FROM --until $UNTIL --fail-on 5% --format markdown >"$WORK/r.md"
RC_MD=$?
"$UNHEX" regress --server "$URL" --service $SVC --baseline 1 --candidate 2 \
	--from $FROM --until $UNTIL --fail-on 5% >"$WORK/r.txt"
set -e
cat "$WORK/r.txt" >&2
[ $RC = 1 ] && [ $RC_MD = 1 ] || fail "unhex regress --fail-on 5% exited $RC and $RC_MD, want 1"
SELF=$(jq -r '[.rows[] | select(.self.verdict == "regressed" or .self.verdict == "new" or
	.self.verdict == "gone" or .self.verdict == "improved") | .function] | sort | join(",")' "$WORK/r.json")
[ "$SELF" = encode_output ] || fail "flagged on self: '$SELF', want exactly encode_output"
jq -e '.rows[0].function == "encode_output" and .rows[0].self.confidence > 0.999 and
	(.rows[0].self.change > 0.6 and .rows[0].self.change < 1.6)' "$WORK/r.json" >/dev/null ||
	fail "encode_output is not first, confident, about 2x: $(jq -c '.rows[0]' "$WORK/r.json")"
TOTAL=$(jq -r '[.rows[] | select(.total.verdict == "regressed") | .function] | sort | join(",")' "$WORK/r.json")
note "flagged on total: $TOTAL"
case ",$TOTAL," in *",write_response,"*) ;; *) fail "the caller write_response is not flagged on total: $TOTAL" ;; esac
for f in $(tr , ' ' <<<"$TOTAL"); do
	case $f in encode_output | write_response | handle_request | serve_loop | main | _start) ;;
	*) fail "$f is flagged on total but does not call encode_output" ;;
	esac
done
grep -q '^\*\*FAIL\*\*' "$WORK/r.md" || fail "the Markdown report does not say FAIL: $(cat "$WORK/r.md")"
grep -q '| 🔴 regressed | `encode_output` |' "$WORK/r.md" || fail "Markdown lacks the encode_output row"
if [ -n "${REGRESS_EXAMPLE_OUT:-}" ]; then
	cp "$WORK/r.md" "$REGRESS_EXAMPLE_OUT"
fi

# ---- the same build against itself: 20 pairs of disjoint sets of 6 runs
flagged=0
for pair in $(seq 1 20); do
	# A fixed, different shuffle per pair: the first 6 runs against the next 6.
	mapfile -t runs < <(seq -w 1 $RUNS_A | awk -v s=$pair 'BEGIN{srand(s)} {print rand() "\t" $0}' |
		sort | cut -f2 | head -12)
	L=$(IFS='|'; echo "a${runs[*]:0:6}" | sed 's/|/|a/g')
	R=$(IFS='|'; echo "a${runs[*]:6:6}" | sed 's/|/|a/g')
	set +e
	"$UNHEX" regress --server "$URL" --from $FROM --until $UNTIL --fail-on 5% --format json \
		--baseline-query "$PT{service_name=\"$SVC\",run=~\"$L\"}" \
		--candidate-query "$PT{service_name=\"$SVC\",run=~\"$R\"}" >"$WORK/same.json"
	RC=$?
	set -e
	[ $RC = 0 ] || [ $RC = 1 ] || fail "same-build pair $pair: unhex regress exited $RC"
	if jq -e '[.rows[] | select(.flagged)] | length > 0' "$WORK/same.json" >/dev/null; then
		flagged=$((flagged + 1))
		note "same-build pair $pair flagged: $(jq -c '[.rows[] | select(.flagged) | .function]' "$WORK/same.json")"
	fi
	[ "$(jq '.baseline.profiles' "$WORK/same.json")" = 6 ] || fail "pair $pair: baseline is not 6 runs"
done
note "same build: $flagged of 20 pairs flagged a function"
[ $flagged -le 1 ] || fail "same-build pairs flagged functions in $flagged of 20 pairs"
echo "PASS regress_perf (encode_output flagged; same build: $flagged of 20 pairs flagged)"

#!/usr/bin/env bash
# golden.sh - a golden capture of every read API, to show that a refactor
# leaves the answers unchanged (issue 9): capture with the build before and
# the build after, then compare the two directories.
#
#   bash bench/golden.sh BUILD_DIR OUT_DIR          capture
#   bash bench/golden.sh --compare DIR_A DIR_B      compare two captures
#
# Capture, with BUILD_DIR's own programs only:
#   1. a deterministic workload: `unhex-workload --services 1 --instances 20
#      --minutes 60 --end 1767225600 --seed 1 --debug-dir` (the bench shape of
#      bench/RESULTS.md with a fixed end, so two builds get the same bytes);
#      the first 10 minutes of 5 instances are also named offline
#      (`bench-sym name-pprof`) for tenant "mixed";
#   2. `unhex serve --listen 127.0.0.1:0` (a free port) on a fresh data dir
#      with --preload of the workload (tenant anonymous, in manifest order);
#      `unhex ingest --tenant mixed` of the first 10 minutes, named files for
#      i-01..i-05 and raw ones for the rest (already-named and query-time
#      symbolized frames on one flame graph); `unhex upload` of every symbol
#      file except libssl's, whose frames stay hex with status not_found;
#   3. polls renders and /api/v1/symbolization until nothing is pending;
#   4. captures one answer per request into OUT_DIR:
#        NAME.body   the raw answer (NAME.req.json / NAME.req.bin: the
#                    Connect request bodies sent, reusable by other tools)
#        NAME.http   HTTP status and Content-Type (`exit N` for the CLI)
#        NAME.canon  the canonical form that --compare compares
#      and OUT_DIR/index.tsv (name, status, bytes, request).
#   Requests: /pyroscope/render and render-diff, the legacy label routes,
#   /api/v1/pprof, /api/v1/symbolization, /api/v1/top, /folded, /diff-top,
#   `unhex query top|folded|diff|pprof`, the debuginfo and stats routes,
#   /symbolz, /metrics, and the 8 querier.v1 methods in both Connect codecs
#   (JSON, and binary protobuf encoded by `protoc --encode` from the build
#   source's proto/ files), with and without max_nodes, one gzipped request
#   body per codec, plus error answers.
#
# Canonical forms: JSON through `jq -S .`; protobuf through `protoc --decode`
# to text format; pprof gunzipped and decoded as perftools.profiles.Profile,
# plus NAME.traces.canon, its samples as sorted "value;frame;..." lines
# (independent of id numbering); text as is; other binaries as sha256 and
# size.  Normalizations, each because the product's answer legitimately
# depends on the wall clock or on RocksDB's background work:
#   - /api/v1/debuginfo*: non-zero `uploaded`, `lastUsed`, `retryAt`
#     (milliseconds of the wall clock) become "<time>";
#   - /api/v1/stats: the `bytes` object (SST and memtable sizes, which move
#     with flushes and compactions) becomes "<bytes>";
#   - /metrics: counters become their increase over the capture, from a
#     snapshot taken after the symbolization polls (how many polls the
#     server needed depends on its speed); gauges stay as they are.
# Nothing else is normalized: every query passes explicit times.
#
# --compare prints `equal`, `DIFFERENT` (with the head of a unified diff of
# the canonical form and status), or `MISSING` per request, then a summary;
# exit status 1 on any difference.
#
# Needs: curl, jq, protoc (protobuf-compiler), gzip, sha256sum.  About a
# minute on an idle 2-core machine.  Env: KEEP_WORK=1 keeps the scratch
# directory (workload, data dir, server log) and prints where it is.
set -euo pipefail

usage() {
	echo "usage: golden.sh BUILD_DIR OUT_DIR | golden.sh --compare DIR_A DIR_B" >&2
	exit 2
}

# ---- compare -----------------------------------------------------------------

compare() {
	local a=$1 b=$2 name n=0 diffs=0
	[ -d "$a" ] && [ -d "$b" ] || usage
	while IFS= read -r name; do
		n=$((n + 1))
		if [ ! -f "$a/$name.http" ] || [ ! -f "$b/$name.http" ]; then
			echo "MISSING   $name (only in $([ -f "$a/$name.http" ] && echo "$a" || echo "$b"))"
			diffs=$((diffs + 1))
			continue
		fi
		if cmp -s "$a/$name.http" "$b/$name.http" && cmp -s "$a/$name.canon" "$b/$name.canon"; then
			echo "equal     $name"
			continue
		fi
		diffs=$((diffs + 1))
		echo "DIFFERENT $name"
		# diff exits 1 on a difference and head may close the pipe early:
		# neither may end the comparison under set -e -o pipefail.
		{
			diff -u --label "A/$name.http" --label "B/$name.http" "$a/$name.http" "$b/$name.http"
			diff -u --label "A/$name.canon" --label "B/$name.canon" "$a/$name.canon" "$b/$name.canon"
		} | head -n 24 | sed 's/^/    /' | cut -c1-200 || true
	done < <(find "$a" "$b" -maxdepth 1 -name '*.http' -printf '%f\n' | sed 's/\.http$//' | sort -u)
	echo "golden: $n requests, $((n - diffs)) equal, $diffs different or missing"
	for d in "$a" "$b"; do
		[ -f "$d/capture.txt" ] || { echo "golden: $d is not a finished capture (no capture.txt)"; diffs=1; }
	done
	[ "$n" -gt 0 ] && [ "$diffs" -eq 0 ]
}

if [ "${1:-}" = --compare ]; then
	[ $# -eq 3 ] || usage
	compare "$2" "$3"
	exit
fi
[ $# -eq 2 ] || usage

# ---- capture: setup ------------------------------------------------------------

B=$(cd "$1" && pwd)
mkdir -p "$2"
OUT=$(cd "$2" && pwd)
# Only the files a capture writes, so OUT_DIR may hold other things.
rm -f "$OUT"/*.body "$OUT"/*.http "$OUT"/*.canon "$OUT"/*.req.json "$OUT"/*.req.bin \
	"$OUT/index.tsv" "$OUT/capture.txt"
HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib_bench.sh
. "$HERE/lib_bench.sh"
bench_need_built golden.sh cli/unhex bench/unhex-workload bench/bench-sym
for t in curl jq protoc gzip sha256sum; do
	command -v $t >/dev/null || { echo "golden.sh: $t is not installed" >&2; exit 1; }
done
# The .proto files of the build's own source tree (CMake records it), so a
# capture decodes with the messages that build speaks.
bench_build_source
UNHEX=$B/cli/unhex

WORK=$(mktemp -d "${TMPDIR:-/tmp}/unhex-golden.XXXXXX")
SERVER_PID=
cleanup() {
	local rc=$?
	if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then
		kill -KILL "$SERVER_PID" 2>/dev/null || true
		wait "$SERVER_PID" 2>/dev/null || true
	fi
	if [ $rc -ne 0 ] && [ -f "$WORK/serve.log" ]; then
		echo "---- server log (last 20 lines)" >&2
		tail -n 20 "$WORK/serve.log" >&2
	fi
	if [ "${KEEP_WORK:-0}" = 1 ]; then
		echo "golden.sh: scratch kept in $WORK" >&2
	else
		rm -rf "$WORK"
	fi
	exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM
log() { echo "== $*" >&2; }

# The workload's time range, fixed: the hour before 2026-01-01T00:00:00Z.
END=1767225600
FROM=$((END - 3600))
UNTIL=$END
SUB_FROM=$((FROM + 1500))          # 10 minutes around the 1.4 -> 1.5 roll
SUB_UNTIL=$((FROM + 2100))
MIX_UNTIL=$((FROM + 600))          # tenant mixed holds the first 10 minutes
CPU=process_cpu:cpu:nanoseconds:cpu:nanoseconds
SMP=process_cpu:samples:count:cpu:nanoseconds
SVC='{service_name="shop-api"}'

# ---- capture: workload, server, ingest -----------------------------------------

log "workload: 1 service, 20 instances, 60 minutes ending $END, seed 1"
W=$WORK/workload D=$WORK/debug N=$WORK/named
"$B/bench/unhex-workload" --out "$W" --debug-dir "$D" --services 1 --instances 20 \
	--minutes 60 --end "$END" --seed 1 --quiet
# Tenant mixed: the first 10 minutes; instances i-01..i-05 already named.
: >"$WORK/mixed.tsv"
while IFS=$'\t' read -r rel name ts; do
	[ "$ts" -lt "$MIX_UNTIL" ] || continue
	f=$W/$rel
	if [[ $name == *instance=i-0[1-5],* ]]; then
		mkdir -p "$(dirname "$N/$rel")"
		"$B/bench/bench-sym" name-pprof "$W/$rel" "$N/$rel" "$D" >/dev/null
		f=$N/$rel
	fi
	printf '%s\t%s\n' "$name" "$f" >>"$WORK/mixed.tsv"
done <"$W/manifest.tsv"
mkdir -p "$WORK/upload"
awk -F'\t' '$3 !~ /libssl/ {print $1}' "$D/manifest.tsv" | while IFS= read -r f; do
	cp "$D/$f" "$WORK/upload/"
done

log "server: preload of $(wc -l <"$W/manifest.tsv") files into tenant anonymous"
"$UNHEX" serve --data "$WORK/data" --listen 127.0.0.1:0 --preload "$W" \
	--debuginfod-urls "" --symbolize-budget 60s >"$WORK/serve.out" 2>"$WORK/serve.log" &
SERVER_PID=$!
URL=
for _ in $(seq 1 3000); do
	URL=$(sed -n 's/^unhex: listening on //p' "$WORK/serve.out" | head -1)
	[ -n "$URL" ] && break
	kill -0 "$SERVER_PID" 2>/dev/null || { echo "golden.sh: the server exited" >&2; exit 1; }
	sleep 0.1
done
[ -n "$URL" ] || { echo "golden.sh: the server did not start in 300 s" >&2; exit 1; }
grep 'preload:' "$WORK/serve.log" | sed 's/^/   /' >&2 || true

log "ingest: tenant mixed ($(wc -l <"$WORK/mixed.tsv") files), sequentially in manifest order"
cut -f1 "$WORK/mixed.tsv" | awk '!seen[$0]++' | while IFS= read -r name; do
	awk -F'\t' -v n="$name" '$1 == n {print $2}' "$WORK/mixed.tsv" |
		xargs "$UNHEX" ingest --server "$URL" --tenant mixed --name "$name" 2>"$WORK/ingest.err" |
		sed 's/^/   /' >&2 || { cat "$WORK/ingest.err" >&2; exit 1; }
done
log "upload: $(ls "$WORK/upload" | wc -l) symbol files (all but libssl's)"
"$UNHEX" upload --server "$URL" "$WORK/upload"/*.debug >"$WORK/upload.out" 2>&1 ||
	{ cat "$WORK/upload.out" >&2; exit 1; }

log "waiting until symbolization is complete"
pending() { # TENANT QUERY FROM UNTIL: succeeds while anything is pending
	local t=$1 q=$2 f=$3 u=$4
	curl -sS -f -G -H "X-Scope-OrgID: $t" "$URL/pyroscope/render" --data-urlencode "query=$q" \
		-d from="$f" -d until="$u" -d maxNodes=16 -o "$WORK/poll.json" || return 0
	jq -e '.symbolization.pending == true' "$WORK/poll.json" >/dev/null && return 0
	curl -sS -f -G -H "X-Scope-OrgID: $t" "$URL/api/v1/symbolization" --data-urlencode "query=$q" \
		-d from="$f" -d until="$u" -o "$WORK/poll.json" || return 0
	jq -e '.pending == true' "$WORK/poll.json" >/dev/null
}
for i in $(seq 1 120); do
	busy=0
	for pt in "$CPU" "$SMP"; do
		pending anonymous "$pt$SVC" "$FROM" "$UNTIL" && busy=1
		pending mixed "$pt$SVC" "$FROM" "$MIX_UNTIL" && busy=1
	done
	POLLS=$i
	[ $busy = 0 ] && break
	[ "$i" -lt 120 ] || { echo "golden.sh: symbolization still pending after 120 polls" >&2; exit 1; }
	sleep 1
done

curl -sS -f "$URL/metrics" -o "$WORK/metrics.before"

# ---- capture: helpers -------------------------------------------------------------

# What every answer is computed from, compared like an answer: the same
# input bytes for both builds.
(cd "$W" && cut -f1 manifest.tsv | xargs sha256sum; sha256sum manifest.tsv) |
	sha256sum | sed 's/ .*//' >"$OUT/input.workload.canon"
(cd "$WORK" && cut -f2 mixed.tsv | sed "s|^$WORK/||" | xargs sha256sum) |
	sha256sum | sed 's/ .*//' >"$OUT/input.mixed.canon"
(cd "$WORK/upload" && sha256sum -- *.debug) >"$OUT/input.debug.canon"
for i in workload mixed debug; do echo "input" >"$OUT/input.$i.http"; done
NREQ=0

# Escapes a string for a protobuf text-format or JSON string literal (the
# same two escapes cover the selectors used here).
esc() { printf '%s' "$1" | sed 's/\\/\\\\/g; s/"/\\"/g'; }
ms() { echo $(($1 * 1000)); }

# The time-dependent fields, see the header.
norm_debuginfo='walk(if type == "object" then with_entries(if (.key == "uploaded" or .key == "lastUsed" or .key == "retryAt") and .value != 0 then .value = "<time>" else . end) else . end)'
norm_stats='walk(if type == "object" and has("bytes") then .bytes = "<bytes>" else . end)'

# canon KIND NAME: writes NAME.canon from NAME.body; KIND is json[:JQ],
# text, pprof, pb:MESSAGE, bin or metrics.  Non-200 answers are error bodies: JSON
# where they parse, else text.
canon() {
	local kind=$1 name=$2 body=$OUT/$2.body file
	if ! grep -qE '^(status 2[0-9][0-9]|exit 0)$' "$OUT/$name.http"; then
		jq -S . "$body" >"$OUT/$name.canon" 2>/dev/null || cp "$body" "$OUT/$name.canon"
		return
	fi
	case "$kind" in
	json) jq -S . "$body" >"$OUT/$name.canon" ;;
	json:*) jq -S "${kind#json:}" "$body" >"$OUT/$name.canon" ;;
	text) cp "$body" "$OUT/$name.canon" ;;
	metrics)
		# Counter samples minus their value in $WORK/metrics.before.
		awk 'FNR == NR { if ($1 !~ /^#/) before[$1] = $2; next }
		     $1 == "#" && $2 == "TYPE" { type[$3] = $4 }
		     $1 !~ /^#/ { n = $1; sub(/\{.*/, "", n)
		                  if (type[n] == "counter") $2 = sprintf("%.0f", $2 - before[$1]) }
		     { print }' "$WORK/metrics.before" "$body" >"$OUT/$name.canon" ;;
	bin) (sha256sum <"$body" | sed 's/ .*//'; stat -c '%s bytes' "$body") >"$OUT/$name.canon" ;;
	pprof)
		gzip -dc <"$body" >"$WORK/pprof.pb"
		protoc --proto_path="$PROTO_DIR" --decode=perftools.profiles.Profile profile.proto \
			<"$WORK/pprof.pb" >"$OUT/$name.canon"
		traces "$OUT/$name.canon" >"$WORK/traces"
		cp "$WORK/traces" "$OUT/$name.traces.canon"
		cp "$OUT/$name.http" "$OUT/$name.traces.http"
		;;
	pb:*)
		file=querier.proto
		case "${kind#pb:}" in types.*) file=types.proto ;; perftools.*) file=profile.proto ;; esac
		protoc --proto_path="$PROTO_DIR" --decode="${kind#pb:}" "$file" <"$body" >"$OUT/$name.canon"
		if [ "${kind#pb:}" = perftools.profiles.Profile ]; then
			traces "$OUT/$name.canon" >"$WORK/traces"
			cp "$WORK/traces" "$OUT/$name.traces.canon"
			cp "$OUT/$name.http" "$OUT/$name.traces.http"
		fi
		;;
	*) echo "golden.sh: unknown kind $kind" >&2; exit 1 ;;
	esac
}

# traces PROFILE_TEXT: the samples of a decoded pprof as sorted lines
# "v1 v2...;frame;frame..." (leaf first; a location's inline frames joined
# by "|" in the profile's order), frames as function names or as mapping
# file + decimal offset in it; a view
# that does not depend on how ids are numbered or samples ordered.
traces() {
	awk '
	function unq(s) { sub(/^[^"]*"/, "", s); sub(/"$/, "", s); return s }
	/^string_table:/ { str[ns++] = unq($0); next }
	/^(sample|mapping|location|function) \{/ { blk = $1; delete cur; nl = 0; nv = 0; nloc = 0; next }
	blk != "" && /^  line \{/ { inline_ = 1; next }
	blk != "" && inline_ && /^  \}/ { inline_ = 0; next }
	blk != "" && inline_ && /function_id:/ { lf[nl++] = $2; next }
	blk != "" && /^  value:/ { val[nv++] = $2; next }
	blk != "" && /^  location_id:/ { loc[nloc++] = $2; next }
	blk != "" && /^  [a-z_]+:/ { k = $1; sub(/:$/, "", k); cur[k] = $2; next }
	blk != "" && /^\}/ {
		if (blk == "sample") {
			s = ""; for (i = 0; i < nv; i++) s = s (i ? " " : "") val[i]
			t = ""; for (i = 0; i < nloc; i++) t = t (i ? ";" : "") loc[i]
			samples[nsamp++] = s "\t" t
		} else if (blk == "mapping") { mfile[cur["id"]] = cur["filename"]; mstart[cur["id"]] = cur["memory_start"]
		} else if (blk == "function") { fname[cur["id"]] = cur["name"]
		} else if (blk == "location") {
			id = cur["id"]; f = ""
			for (i = nl - 1; i >= 0; i--) f = f (f == "" ? "" : "|") "F" lf[i]
			if (f == "") f = "M" cur["mapping_id"] "@" cur["address"]
			lname[id] = f
		}
		blk = ""; next
	}
	END {
		for (i = 0; i < nsamp; i++) {
			split(samples[i], p, "\t"); n = split(p[2], ls, ";"); out = p[1]
			for (j = 1; j <= n; j++) {
				k = split(lname[ls[j]], fr, "|"); part = ""
				for (m = 1; m <= k; m++) {
					x = fr[m]
					if (x ~ /^F/) x = str[fname[substr(x, 2)]]
					else { split(substr(x, 2), ma, "@"); x = str[mfile[ma[1]]] "+" sprintf("%.0f", ma[2] - mstart[ma[1]]) }
					part = part (m > 1 ? "|" : "") x
				}
				out = out ";" part
			}
			print out
		}
	}' "$1" | LC_ALL=C sort
}

# record NAME KIND REQUEST_SUMMARY: after NAME.body and NAME.http exist.
record() {
	local name=$1 kind=$2 what=$3
	canon "$kind" "$name"
	printf '%s\t%s\t%s\t%s\n' "$name" "$(sed -n 's/^status //p; s/^exit /exit /p' "$OUT/$name.http")" \
		"$(stat -c %s "$OUT/$name.body")" "$what" >>"$OUT/index.tsv"
	NREQ=$((NREQ + 1))
}

# http NAME KIND TENANT METHOD PATH [curl args...]
http() {
	local name=$1 kind=$2 tenant=$3 method=$4 path=$5 w
	shift 5
	local hdr=()
	[ "$tenant" = anonymous ] || hdr=(-H "X-Scope-OrgID: $tenant")
	w=$(curl -sS --max-time 300 -X "$method" "${hdr[@]}" -o "$OUT/$name.body" \
		-w '%{http_code}\t%{content_type}' "$@" "$URL$path" 2>"$WORK/curl.err") || true
	[ -f "$OUT/$name.body" ] || : >"$OUT/$name.body"
	printf 'status %s\ncontent-type %s\n' "${w%%$'\t'*}" "${w#*$'\t'}" >"$OUT/$name.http"
	record "$name" "$kind" "$method $path $*"
}

# get NAME KIND TENANT PATH KEY=VALUE...: a GET with each pair %-encoded.
get() {
	local name=$1 kind=$2 tenant=$3 path=$4 a=()
	shift 4
	for kv in "$@"; do a+=(--data-urlencode "$kv"); done
	http "$name" "$kind" "$tenant" GET "$path" -G "${a[@]}"
}

# connect NAME TENANT METHOD TEXT JSON: the method once per codec, as
# NAME.json (request JSON) and NAME.pb (request TEXT, protobuf text format).
connect() {
	local name=$1 tenant=$2 method=$3 text=$4 json=$5 req resp file=querier.proto
	case $method in
	ProfileTypes | Series | SelectMergeStacktraces | SelectSeries | Diff)
		req=querier.v1.${method}Request resp=querier.v1.${method}Response ;;
	LabelNames | LabelValues)
		req=types.v1.${method}Request resp=types.v1.${method}Response file=types.proto ;;
	SelectMergeProfile)
		req=querier.v1.${method}Request resp=perftools.profiles.Profile ;;
	*) # an unknown method: any request message will do
		req=querier.v1.ProfileTypesRequest resp=querier.v1.ProfileTypesResponse ;;
	esac
	printf '%s' "$json" >"$OUT/$name.json.req.json"
	http "$name.json" json "$tenant" POST "/querier.v1.QuerierService/$method" \
		-H 'Content-Type: application/json' --data-binary "@$OUT/$name.json.req.json"
	printf '%s\n' "$text" | protoc --proto_path="$PROTO_DIR" --encode="$req" "$file" \
		>"$OUT/$name.pb.req.bin"
	http "$name.pb" "pb:$resp" "$tenant" POST "/querier.v1.QuerierService/$method" \
		-H 'Content-Type: application/proto' --data-binary "@$OUT/$name.pb.req.bin"
}

# sel PTYPE SELECTOR FROM UNTIL [MAX_NODES]: a SelectMergeStacktraces-shaped
# request; sets ST (text format) and SJ (JSON members, no braces).
sel() {
	local s
	s=$(esc "$2")
	ST="profile_typeID: \"$1\" label_selector: \"$s\" start: $(ms "$3") end: $(ms "$4")"
	SJ="\"profileTypeID\":\"$1\",\"labelSelector\":\"$s\",\"start\":$(ms "$3"),\"end\":$(ms "$4")"
	if [ -n "${5:-}" ]; then
		ST="$ST max_nodes: $5"
		SJ="$SJ,\"maxNodes\":$5"
	fi
}

# cli NAME KIND ARGS...: `unhex query ARGS --server URL`, stdout as the body.
cli() {
	local name=$1 kind=$2 rc=0
	shift 2
	"$UNHEX" query "$@" --server "$URL" >"$OUT/$name.body" 2>"$OUT/$name.stderr" || rc=$?
	printf 'exit %s\n' "$rc" >"$OUT/$name.http"
	[ $rc = 0 ] || cat "$OUT/$name.stderr" >>"$OUT/$name.body"
	rm -f "$OUT/$name.stderr"
	record "$name" "$kind" "unhex query $*"
}

# ---- capture: the requests ----------------------------------------------------------

log "capturing into $OUT"
H=(from="$FROM" until="$UNTIL")
S=(from="$SUB_FROM" until="$SUB_UNTIL")
M=(from="$FROM" until="$MIX_UNTIL")

# /pyroscope/render
get render.cpu.hour json anonymous /pyroscope/render query="$CPU$SVC" "${H[@]}"
for n in 1 8 64 1024 1048576; do
	get render.cpu.hour.max$n json anonymous /pyroscope/render query="$CPU$SVC" "${H[@]}" maxNodes=$n
done
get render.samples.hour json anonymous /pyroscope/render query="$SMP$SVC" "${H[@]}"
get render.cpu.sub json anonymous /pyroscope/render query="$CPU$SVC" "${S[@]}"
get render.cpu.sub.v15 json anonymous /pyroscope/render query="$CPU{service_name=\"shop-api\",version=\"1.5\"}" "${S[@]}" maxNodes=512
get render.cpu.hour.regex json anonymous /pyroscope/render query="$CPU{instance=~\"i-0[1-5]\"}" "${H[@]}" maxNodes=256
get render.cpu.hour.neq json anonymous /pyroscope/render query="$CPU{version!=\"1.4\",instance!~\"i-1.*\"}" "${H[@]}" maxNodes=256
get render.cpu.all json anonymous /pyroscope/render query="$CPU{}" "${H[@]}" maxNodes=128
get render.cpu.none json anonymous /pyroscope/render query="$CPU{service_name=\"nope\"}" "${H[@]}"
get render.cpu.unix-ms json anonymous /pyroscope/render query="$CPU$SVC" from="$(ms "$SUB_FROM")" until="$(ms "$SUB_UNTIL")" maxNodes=64
get render.mixed.cpu json mixed /pyroscope/render query="$CPU$SVC" "${M[@]}"
get render.mixed.cpu.max16 json mixed /pyroscope/render query="$CPU$SVC" "${M[@]}" maxNodes=16
get render.mixed.samples json mixed /pyroscope/render query="$SMP$SVC" "${M[@]}" maxNodes=1024
get render.err.selector json anonymous /pyroscope/render query="$CPU{service_name=}" "${H[@]}"
get render.err.missing json anonymous /pyroscope/render "${H[@]}"
get render.err.range json anonymous /pyroscope/render query="$CPU$SVC" from="$UNTIL" until="$FROM"
get render.err.maxnodes json anonymous /pyroscope/render query="$CPU$SVC" "${H[@]}" maxNodes=2000000
get render.err.time json anonymous /pyroscope/render query="$CPU$SVC" from=yesterday until="$UNTIL"
get render.err.tenant json 'bad/tenant' /pyroscope/render query="$CPU$SVC" "${H[@]}"

# /pyroscope/render-diff
V14="$CPU{service_name=\"shop-api\",version=\"1.4\"}"
V15="$CPU{service_name=\"shop-api\",version=\"1.5\"}"
get render-diff.versions json anonymous /pyroscope/render-diff leftQuery="$V14" rightQuery="$V15" \
	leftFrom="$FROM" leftUntil="$UNTIL" rightFrom="$FROM" rightUntil="$UNTIL"
get render-diff.versions.max32 json anonymous /pyroscope/render-diff leftQuery="$V14" rightQuery="$V15" \
	leftFrom="$FROM" leftUntil="$UNTIL" rightFrom="$FROM" rightUntil="$UNTIL" maxNodes=32
get render-diff.times json anonymous /pyroscope/render-diff leftQuery="$CPU$SVC" rightQuery="$CPU$SVC" \
	leftFrom="$FROM" leftUntil="$MIX_UNTIL" rightFrom="$SUB_FROM" rightUntil="$SUB_UNTIL" maxNodes=2048
get render-diff.mixed json mixed /pyroscope/render-diff leftQuery="$CPU{instance=~\"i-0[1-5]\"}" \
	rightQuery="$CPU{instance!~\"i-0[1-5]\"}" leftFrom="$FROM" leftUntil="$MIX_UNTIL" \
	rightFrom="$FROM" rightUntil="$MIX_UNTIL"
get render-diff.err.types json anonymous /pyroscope/render-diff leftQuery="$CPU$SVC" rightQuery="$SMP$SVC" \
	leftFrom="$FROM" leftUntil="$UNTIL" rightFrom="$FROM" rightUntil="$UNTIL"

# legacy label routes
get labels.hour json anonymous /pyroscope/labels "${H[@]}"
get labels.sel json anonymous /pyroscope/labels query='{version="1.5"}' "${S[@]}"
get labels.mixed json mixed /pyroscope/labels "${M[@]}"
for l in service_name instance version env __profile_type__ __name__ nope; do
	get label-values.$l json anonymous /pyroscope/label-values label=$l "${H[@]}"
done
get label-values.instance.sel json anonymous /pyroscope/label-values label=instance query='{version="1.4"}' "${S[@]}"
get label-values.err.missing json anonymous /pyroscope/label-values "${H[@]}"

# /api/v1/pprof
get pprof.cpu.hour pprof anonymous /api/v1/pprof query="$CPU$SVC" "${H[@]}"
get pprof.cpu.sub pprof anonymous /api/v1/pprof query="$CPU$SVC" "${S[@]}"
get pprof.samples.sub.v15 pprof anonymous /api/v1/pprof query="$SMP{version=\"1.5\"}" "${S[@]}"
get pprof.mixed.cpu pprof mixed /api/v1/pprof query="$CPU$SVC" "${M[@]}"
get pprof.cpu.none pprof anonymous /api/v1/pprof query="$CPU{service_name=\"nope\"}" "${H[@]}"
get pprof.err.selector text anonymous /api/v1/pprof query="nope" "${H[@]}"

# /api/v1/symbolization
get symbolization.cpu.hour json anonymous /api/v1/symbolization query="$CPU$SVC" "${H[@]}"
get symbolization.samples.sub json anonymous /api/v1/symbolization query="$SMP$SVC" "${S[@]}"
get symbolization.mixed json mixed /api/v1/symbolization query="$CPU$SVC" "${M[@]}"
get symbolization.none json anonymous /api/v1/symbolization query="$CPU{service_name=\"nope\"}" "${H[@]}"

# /api/v1/top, /api/v1/folded, /api/v1/diff-top
get top.cpu.hour text anonymous /api/v1/top query="$CPU$SVC" "${H[@]}"
get top.cpu.hour.total20 text anonymous /api/v1/top query="$CPU$SVC" "${H[@]}" sort=total limit=20
get top.samples.sub.limit10 text anonymous /api/v1/top query="$SMP$SVC" "${S[@]}" limit=10
get top.mixed.cpu text mixed /api/v1/top query="$CPU$SVC" "${M[@]}"
get top.err.sort text anonymous /api/v1/top query="$CPU$SVC" "${H[@]}" sort=name
get folded.cpu.hour text anonymous /api/v1/folded query="$CPU$SVC" "${H[@]}"
get folded.cpu.sub.v15 text anonymous /api/v1/folded query="$V15" "${S[@]}"
get folded.mixed.cpu text mixed /api/v1/folded query="$CPU$SVC" "${M[@]}"
get diff-top.versions text anonymous /api/v1/diff-top leftQuery="$V14" rightQuery="$V15" \
	leftFrom="$FROM" leftUntil="$UNTIL" rightFrom="$FROM" rightUntil="$UNTIL"
get diff-top.versions.absolute text anonymous /api/v1/diff-top leftQuery="$V14" rightQuery="$V15" \
	leftFrom="$FROM" leftUntil="$UNTIL" rightFrom="$FROM" rightUntil="$UNTIL" mode=absolute limit=0
get diff-top.mixed text mixed /api/v1/diff-top leftQuery="$CPU{instance=~\"i-0[1-5]\"}" \
	rightQuery="$CPU{instance!~\"i-0[1-5]\"}" leftFrom="$FROM" leftUntil="$MIX_UNTIL" \
	rightFrom="$FROM" rightUntil="$MIX_UNTIL" limit=0
get diff-top.err.mode text anonymous /api/v1/diff-top leftQuery="$V14" rightQuery="$V15" \
	leftFrom="$FROM" leftUntil="$UNTIL" rightFrom="$FROM" rightUntil="$UNTIL" mode=both

# `unhex query` (the CLI's own client and printing over the same routes)
cli cli.top text top --query "$CPU$SVC" --from "$FROM" --until "$UNTIL"
cli cli.top.total text top --query "$CPU$SVC" --from "$SUB_FROM" --until "$SUB_UNTIL" --sort total --limit 0
cli cli.folded text folded --query "$SMP$SVC" --from "$SUB_FROM" --until "$SUB_UNTIL"
cli cli.diff text diff --left "$V14" --right "$V15" --left-from "$FROM" --left-until "$UNTIL" \
	--right-from "$FROM" --right-until "$UNTIL"
cli cli.diff.absolute text diff --left "$V14" --right "$V15" --left-from "$FROM" --left-until "$UNTIL" \
	--right-from "$FROM" --right-until "$UNTIL" --mode absolute --limit 0
cli cli.pprof pprof pprof --query "$CPU$SVC" --from "$SUB_FROM" --until "$SUB_UNTIL" -o -
cli cli.top.mixed text top --tenant mixed --query "$CPU$SVC" --from "$FROM" --until "$MIX_UNTIL" --limit 0
cli cli.err.selector text top --query "$CPU{" --from "$FROM" --until "$UNTIL"

# querier.v1 in both codecs
connect connect.ProfileTypes anonymous ProfileTypes '' '{}'
connect connect.ProfileTypes.range anonymous ProfileTypes \
	"start: $(ms $FROM) end: $(ms $UNTIL)" "{\"start\":$(ms $FROM),\"end\":$(ms $UNTIL)}"
connect connect.ProfileTypes.mixed mixed ProfileTypes '' '{}'
connect connect.LabelNames.index anonymous LabelNames '' '{}'
connect connect.LabelNames.range anonymous LabelNames \
	"start: $(ms $FROM) end: $(ms $UNTIL)" "{\"start\":$(ms $FROM),\"end\":$(ms $UNTIL)}"
connect connect.LabelNames.matchers anonymous LabelNames \
	"matchers: \"$(esc '{version="1.5"}')\" start: $(ms $FROM) end: $(ms $SUB_UNTIL)" \
	"{\"matchers\":[\"$(esc '{version="1.5"}')\"],\"start\":$(ms $FROM),\"end\":$(ms $SUB_UNTIL)}"
connect connect.LabelValues.service_name anonymous LabelValues \
	"name: \"service_name\" start: $(ms $FROM) end: $(ms $UNTIL)" \
	"{\"name\":\"service_name\",\"start\":$(ms $FROM),\"end\":$(ms $UNTIL)}"
connect connect.LabelValues.instance anonymous LabelValues \
	"name: \"instance\" matchers: \"$(esc '{version="1.4"}')\" start: $(ms $SUB_FROM) end: $(ms $SUB_UNTIL)" \
	"{\"name\":\"instance\",\"matchers\":[\"$(esc '{version="1.4"}')\"],\"start\":$(ms $SUB_FROM),\"end\":$(ms $SUB_UNTIL)}"
connect connect.LabelValues.profile_type anonymous LabelValues \
	"name: \"__profile_type__\" matchers: \"$(esc '{service_name!=""}')\"" \
	"{\"name\":\"__profile_type__\",\"matchers\":[\"$(esc '{service_name!=""}')\"]}"
connect connect.LabelValues.nope anonymous LabelValues \
	"name: \"nope\" start: $(ms $FROM) end: $(ms $UNTIL)" "{\"name\":\"nope\",\"start\":$(ms $FROM),\"end\":$(ms $UNTIL)}"
connect connect.LabelValues.mixed mixed LabelValues \
	"name: \"instance\" start: $(ms $FROM) end: $(ms $UNTIL)" "{\"name\":\"instance\",\"start\":$(ms $FROM),\"end\":$(ms $UNTIL)}"
connect connect.Series.names anonymous Series \
	"matchers: \"{}\" label_names: \"service_name\" label_names: \"__profile_type__\" start: $(ms $FROM) end: $(ms $UNTIL)" \
	"{\"matchers\":[\"{}\"],\"labelNames\":[\"service_name\",\"__profile_type__\"],\"start\":$(ms $FROM),\"end\":$(ms $UNTIL)}"
connect connect.Series.all anonymous Series \
	"matchers: \"$(esc '{version="1.5"}')\" start: $(ms $SUB_FROM) end: $(ms $SUB_UNTIL)" \
	"{\"matchers\":[\"$(esc '{version="1.5"}')\"],\"start\":$(ms $SUB_FROM),\"end\":$(ms $SUB_UNTIL)}"
connect connect.Series.two anonymous Series \
	"matchers: \"$(esc '{instance="i-01"}')\" matchers: \"$(esc '{instance="i-02"}')\" label_names: \"instance\" label_names: \"version\" start: $(ms $FROM) end: $(ms $UNTIL)" \
	"{\"matchers\":[\"$(esc '{instance="i-01"}')\",\"$(esc '{instance="i-02"}')\"],\"labelNames\":[\"instance\",\"version\"],\"start\":$(ms $FROM),\"end\":$(ms $UNTIL)}"

for n in none 1 8 1024 16384; do
	mn=$n
	[ $n = none ] && mn=
	sel "$CPU" "$SVC" "$FROM" "$UNTIL" $mn
	connect connect.SelectMergeStacktraces.hour.max$n anonymous SelectMergeStacktraces "$ST" "{$SJ}"
done
sel "$SMP" '{version="1.5"}' "$SUB_FROM" "$SUB_UNTIL" 256
connect connect.SelectMergeStacktraces.samples.sub.max256 anonymous SelectMergeStacktraces "$ST" "{$SJ}"
sel "$CPU" '{service_name="nope"}' "$FROM" "$UNTIL"
connect connect.SelectMergeStacktraces.none anonymous SelectMergeStacktraces "$ST" "{$SJ}"
sel "$CPU" "$SVC" "$FROM" "$MIX_UNTIL"
connect connect.SelectMergeStacktraces.mixed.maxnone mixed SelectMergeStacktraces "$ST" "{$SJ}"
sel "$CPU" "$SVC" "$FROM" "$MIX_UNTIL" 64
connect connect.SelectMergeStacktraces.mixed.max64 mixed SelectMergeStacktraces "$ST" "{$SJ}"

sel "$CPU" "$SVC" "$SUB_FROM" "$SUB_UNTIL"
connect connect.SelectMergeProfile.sub.maxnone anonymous SelectMergeProfile "$ST" "{$SJ}"
sel "$CPU" "$SVC" "$SUB_FROM" "$SUB_UNTIL" 64
connect connect.SelectMergeProfile.sub.max64 anonymous SelectMergeProfile "$ST" "{$SJ}"
sel "$CPU" "$SVC" "$FROM" "$UNTIL"
connect connect.SelectMergeProfile.hour.maxnone anonymous SelectMergeProfile "$ST" "{$SJ}"
sel "$SMP" "$SVC" "$FROM" "$MIX_UNTIL"
connect connect.SelectMergeProfile.mixed mixed SelectMergeProfile "$ST" "{$SJ}"

sel "$CPU" "$SVC" "$FROM" "$UNTIL"
connect connect.SelectSeries.service.step60 anonymous SelectSeries \
	"$ST step: 60 group_by: \"service_name\"" "{$SJ,\"step\":60,\"groupBy\":[\"service_name\"]}"
connect connect.SelectSeries.instance.limit3 anonymous SelectSeries \
	"$ST step: 300 group_by: \"instance\" limit: 3" "{$SJ,\"step\":300,\"groupBy\":[\"instance\"],\"limit\":3}"
connect connect.SelectSeries.version.step600 anonymous SelectSeries \
	"$ST step: 600 group_by: \"version\" group_by: \"env\"" "{$SJ,\"step\":600,\"groupBy\":[\"version\",\"env\"]}"
sel "$SMP" "$SVC" "$SUB_FROM" "$SUB_UNTIL"
connect connect.SelectSeries.samples.default-step anonymous SelectSeries "$ST" "{$SJ}"
sel "$CPU" "$SVC" "$FROM" "$MIX_UNTIL"
connect connect.SelectSeries.mixed mixed SelectSeries \
	"$ST step: 60 group_by: \"instance\"" "{$SJ,\"step\":60,\"groupBy\":[\"instance\"]}"

diffreq() { # NAME TENANT L_SELECTOR R_SELECTOR FROM UNTIL [MAX_NODES]
	local lt lj
	sel "$CPU" "$3" "$5" "$6" ${7:-}
	lt=$ST lj=$SJ
	sel "$CPU" "$4" "$5" "$6" ${7:-}
	connect "$1" "$2" Diff "left { $lt } right { $ST }" "{\"left\":{$lj},\"right\":{$SJ}}"
}
diffreq connect.Diff.versions.maxnone anonymous '{version="1.4"}' '{version="1.5"}' "$FROM" "$UNTIL"
diffreq connect.Diff.versions.max64 anonymous '{version="1.4"}' '{version="1.5"}' "$FROM" "$UNTIL" 64
diffreq connect.Diff.mixed.maxnone mixed '{instance=~"i-0[1-5]"}' '{instance!~"i-0[1-5]"}' "$FROM" "$MIX_UNTIL"

# Request bodies gzipped (Content-Encoding), in both codecs
sel "$CPU" "$SVC" "$SUB_FROM" "$SUB_UNTIL" 64
printf '%s' "{$SJ}" | gzip -n >"$OUT/connect.SelectMergeStacktraces.sub.max64.gzip.json.req.json"
http connect.SelectMergeStacktraces.sub.max64.gzip.json json anonymous POST \
	/querier.v1.QuerierService/SelectMergeStacktraces -H 'Content-Type: application/json' \
	-H 'Content-Encoding: gzip' --data-binary "@$OUT/connect.SelectMergeStacktraces.sub.max64.gzip.json.req.json"
printf '%s\n' "$ST" | protoc --proto_path="$PROTO_DIR" --encode=querier.v1.SelectMergeStacktracesRequest \
	querier.proto | gzip -n >"$OUT/connect.SelectMergeStacktraces.sub.max64.gzip.pb.req.bin"
http connect.SelectMergeStacktraces.sub.max64.gzip.pb pb:querier.v1.SelectMergeStacktracesResponse anonymous \
	POST /querier.v1.QuerierService/SelectMergeStacktraces -H 'Content-Type: application/proto' \
	-H 'Connect-Content-Encoding: gzip' --data-binary "@$OUT/connect.SelectMergeStacktraces.sub.max64.gzip.pb.req.bin"

# Connect errors (JSON bodies in both codecs)
sel "$CPU" "$SVC" "$UNTIL" "$FROM"
connect connect.err.range anonymous SelectMergeStacktraces "$ST" "{$SJ}"
sel "$CPU" '{service_name=}' "$FROM" "$UNTIL"
connect connect.err.selector anonymous SelectMergeStacktraces "$ST" "{$SJ}"
connect connect.err.method anonymous NoSuchMethod '' '{}'
sel "$CPU" "$SVC" "$FROM" "$UNTIL"
connect connect.err.diff-types anonymous Diff "left { $ST } right { profile_typeID: \"$SMP\" start: $(ms $FROM) end: $(ms $UNTIL) }" \
	"{\"left\":{$SJ},\"right\":{\"profileTypeID\":\"$SMP\",\"start\":$(ms $FROM),\"end\":$(ms $UNTIL)}}"
printf '\x0a\x40ab' >"$OUT/connect.err.malformed.pb.req.bin"
http connect.err.malformed.pb json anonymous POST /querier.v1.QuerierService/SelectMergeStacktraces \
	-H 'Content-Type: application/proto' --data-binary "@$OUT/connect.err.malformed.pb.req.bin"
printf '{"start":' >"$OUT/connect.err.malformed.json.req.json"
http connect.err.malformed.json json anonymous POST /querier.v1.QuerierService/SelectMergeStacktraces \
	-H 'Content-Type: application/json' --data-binary "@$OUT/connect.err.malformed.json.req.json"
http connect.err.media-type json anonymous POST /querier.v1.QuerierService/LabelNames \
	-H 'Content-Type: text/plain' --data-binary '{}'

# debug info, stats, symbolz, metrics
get debuginfo.list "json:$norm_debuginfo" anonymous /api/v1/debuginfo
while IFS=$'\t' read -r f id path rel; do
	get "debuginfo.$(basename "$path").${rel/,/+}" "json:$norm_debuginfo" anonymous "/api/v1/debuginfo/$id"
done < <(awk -F'\t' '$3 ~ /shop-api$|libssl/' "$D/manifest.tsv")
id=$(awk -F'\t' '$3 ~ /libc\.so/ {print $2}' "$D/manifest.tsv")
get buildid.libc.debuginfo bin anonymous "/buildid/$id/debuginfo"
get buildid.libc.executable text anonymous "/buildid/$id/executable"
get stats.anonymous "json:$norm_stats" anonymous /api/v1/stats
get stats.mixed "json:$norm_stats" mixed /api/v1/stats
http symbolz text anonymous POST /symbolz --data-binary '0x401000'
get metrics metrics anonymous /metrics

log "stopping the server"
kill -TERM "$SERVER_PID"
rc=0
wait "$SERVER_PID" || rc=$?
SERVER_PID=
[ $rc = 0 ] || { echo "golden.sh: the server exited with $rc" >&2; exit 1; }
n200=$(awk -F'\t' '$2 == 200' "$OUT/index.tsv" | wc -l)
# Written last: --compare refuses a directory without it (an interrupted capture).
{
	echo "build: $B"
	echo "source: ${SRC:-unknown} $(git -C "${SRC:-.}" describe --always --dirty 2>/dev/null || echo '?')"
	echo "requests: $NREQ ($n200 answered 200)"
	echo "symbolization polls: $POLLS"
} >"$OUT/capture.txt"
echo "golden: $NREQ requests captured in $OUT ($n200 answered 200; $(ls "$OUT"/*.canon | wc -l) canonical files)" >&2
awk -F'\t' '$2 != 200 {printf "   %s: %s\n", $1, $2}' "$OUT/index.tsv" >&2

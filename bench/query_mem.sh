#!/usr/bin/env bash
# query_mem.sh - peak heap and answer size of the unbounded Connect queries
# of issue 9: "Binary SelectMergeStacktraces and Diff with no max_nodes on a
# 1-hour, 20-instance workload answer 200 with the exact total; peak memory
# of that query stays within 4x the size of its answer."
#
#   bash bench/query_mem.sh BUILD_DIR OUT_DIR
#   env: WORKLOAD=DIR  reuse DIR/workload and DIR/debug (lib_store.sh)
#        MASSIF=0      skip the valgrind massif cross-check
#
# On lib_store.sh's fixed workload, two stores of the whole hour: raw (no
# symbol files) and symbolized (all 7 stored).  Requests, in the build
# source's proto/ (binary, `protoc --encode`) and as Connect JSON:
#   smst       SelectMergeStacktraces of the hour, service shop-api, no max_nodes
#   diff       Diff, version 1.4 against 1.5 over the hour, no max_nodes
#   smst.max1, diff.max1
#              the same with max_nodes 1: the merge and tree with next to
#              nothing to encode, the floor of the query's own working
#              memory; the last column is (peak - floor) / answer, the
#              share of the encoding (0 when it stays under the merge's
#              own peak)
# Each runs in `bench-connect` (a cold call, then a warm one, in one
# process, with the server's limits: 1 GiB memory budget).  bench-connect
# counts the usable bytes of live heap blocks (it replaces malloc); "peak"
# below is the highest live heap during the call minus the live heap
# before it, the answer included.  The total of each answer is read back
# (protoc --decode, jq) and the binary answer's total must equal the JSON
# one's ("exact total").  With massif, the proto smst is run again under
# `valgrind --tool=massif` (one cold call) and the process's peak heap is
# printed beside bench-connect's own count of the same thing.
#
# Prints a Markdown table; requests, answers and logs stay in OUT_DIR.
set -euo pipefail

HERE=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=bench/lib_bench.sh
. "$HERE/lib_bench.sh"
. "$HERE/lib_store.sh"
lib_store_dirs query_mem.sh "$@"
bench_need_built query_mem.sh bench/unhex-workload bench/bench-ingest bench/bench-query bench/bench-connect cli/unhex
for t in protoc jq; do
	command -v $t >/dev/null || { echo "query_mem.sh: $t is not installed" >&2; exit 1; }
done
MASSIF=${MASSIF:-1}
command -v valgrind >/dev/null || MASSIF=0
bench_build_source
trap lib_store_cleanup EXIT

fixed_stores

# ---- requests ------------------------------------------------------------------
CPU=process_cpu:cpu:nanoseconds:cpu:nanoseconds
F=$((WL_FROM * 1000)) U=$((WL_END * 1000))
sel_text() { # SELECTOR [MAX_NODES]
	local s=${1//\"/\\\"}
	echo "profile_typeID: \"$CPU\" label_selector: \"$s\" start: $F end: $U${2:+ max_nodes: $2}"
}
sel_json() {
	local s=${1//\"/\\\"}
	echo "\"profileTypeID\":\"$CPU\",\"labelSelector\":\"$s\",\"start\":$F,\"end\":$U${2:+,\"maxNodes\":$2}"
}
encode() { # MESSAGE TEXT FILE
	printf '%s\n' "$2" | protoc --proto_path="$PROTO_DIR" --encode="querier.v1.$1" querier.proto >"$3"
}
R=$OUT/requests
mkdir -p "$R"
SVC='{service_name="shop-api"}'
encode SelectMergeStacktracesRequest "$(sel_text "$SVC")" "$R/smst.bin"
echo "{$(sel_json "$SVC")}" >"$R/smst.json"
encode SelectMergeStacktracesRequest "$(sel_text "$SVC" 1)" "$R/smst.max1.bin"
echo "{$(sel_json "$SVC" 1)}" >"$R/smst.max1.json"
for n in "" 1; do
	d=diff${n:+.max$n}
	encode DiffRequest "left { $(sel_text '{version="1.4"}' $n) } right { $(sel_text '{version="1.5"}' $n) }" "$R/$d.bin"
	echo "{\"left\":{$(sel_json '{version="1.4"}' $n)},\"right\":{$(sel_json '{version="1.5"}' $n)}}" >"$R/$d.json"
done

# ---- measurements ------------------------------------------------------------------
kv() { # LINE KEY
	tr ' ' '\n' <<<"$1" | sed -n "s/^$2=//p" | head -1
}
mib() { awk -v b="$1" 'BEGIN {printf "%.1f", b / 1048576}'; }
total_of() { # ANSWER_FILE CODEC METHOD -> the answer's total (Diff: left+right)
	local f=$1
	[ -s "$f" ] || { echo "-"; return; }
	if [ "$2" = json ]; then
		jq -r '.flamegraph | if .leftTicks then "\(.total) (left \(.leftTicks), right \(.rightTicks))" else .total end' "$f"
		return
	fi
	protoc --proto_path="$PROTO_DIR" --decode="querier.v1.$3Response" querier.proto <"$f" >"$f.txt"
	awk '/^  total:/ {t = $2} /^  leftTicks:/ {l = $2} /^  rightTicks:/ {r = $2}
	     END {if (l != "") printf "%s (left %s, right %s)\n", t, l, r; else print t}' "$f.txt"
}

declare -A STATUS BYTES TOTAL PEAK_C PEAK_W
measure() { # STORE REQ METHOD CODEC
	local store=$1 req=$2 method=$3 codec=$4 k=$1.$2.$4 flag='' body=$R/$2.bin c w
	if [ "$codec" = json ]; then
		flag=--json body=$R/$req.json
	fi
	echo "== $store $req $codec" >&2
	"$B/bench/bench-connect" --data "$OUT/store-$store" --method "$method" --body "$body" $flag \
		--runs 2 --out "$OUT/$k.answer" >"$OUT/$k.txt" 2>"$OUT/$k.log" ||
		{ cat "$OUT/$k.log" >&2; exit 1; }
	c=$(grep '^RESULT run=1 ' "$OUT/$k.txt")
	w=$(grep '^RESULT run=2 ' "$OUT/$k.txt")
	STATUS[$k]=$(kv "$w" status)
	[ "$(kv "$w" rc)" = 0 ] || STATUS[$k]="${STATUS[$k]} (${w#*msg=})"
	BYTES[$k]=$(kv "$w" bytes)
	TOTAL[$k]=$(total_of "$OUT/$k.answer" "$codec" "$method")
	PEAK_C[$k]=$(kv "$c" query_peak)
	PEAK_W[$k]=$(kv "$w" query_peak)
}
for store in raw sym; do
	for codec in proto json; do
		for req in smst smst.max1; do measure $store $req SelectMergeStacktraces $codec; done
		for req in diff diff.max1; do measure $store $req Diff $codec; done
	done
done

# ratio PEAK BYTES
ratio() { awk -v p="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.1fx", p / b; else print "-"}'; }
ROWS=()
for store in raw sym; do
	for req in smst diff smst.max1 diff.max1; do
		for codec in proto json; do
			k=$store.$req.$codec f=$store.${req%.max1}.max1.$codec
			if [ "$k" = "$f" ]; then
				r1="(floor)" r2="(floor)"
			else
				r1=$(ratio "${PEAK_W[$k]}" "${BYTES[$k]}")
				# 0 when the encoding stays under the merge's own peak
				over=$((PEAK_W[$k] - PEAK_W[$f]))
				r2=$(ratio "$((over > 0 ? over : 0))" "${BYTES[$k]}")
			fi
			ROWS+=("| $store | $req | $codec | ${STATUS[$k]} | ${BYTES[$k]} | ${TOTAL[$k]} | $(mib "${PEAK_C[$k]}") | $(mib "${PEAK_W[$k]}") | $r1 | $r2 |")
		done
	done
done

# "Exact total": the binary answers' totals against the JSON ones.
EXACT=()
for store in raw sym; do
	for req in smst diff; do
		p=${TOTAL[$store.$req.proto]} j=${TOTAL[$store.$req.json]}
		if [ "$p" = - ]; then
			EXACT+=("$store $req: no binary answer (JSON total $j)")
		elif [ "$p" = "$j" ]; then
			EXACT+=("$store $req: binary total $p = JSON total")
		else
			EXACT+=("$store $req: binary total $p != JSON total $j")
		fi
	done
done

MASSIF_LINE=
if [ "$MASSIF" = 1 ]; then
	echo "== massif: raw smst proto, one cold call" >&2
	valgrind --tool=massif --massif-out-file="$OUT/massif.raw.smst.proto" "$B/bench/bench-connect" \
		--data "$OUT/store-raw" --method SelectMergeStacktraces --body "$R/smst.bin" --runs 1 \
		>"$OUT/massif.raw.smst.proto.txt" 2>"$OUT/massif.raw.smst.proto.log" ||
		{ tail "$OUT/massif.raw.smst.proto.log" >&2; exit 1; }
	mpeak=$(awk -F= '/^mem_heap_B=/ {h = $2} /^mem_heap_extra_B=/ {if (h + $2 > m) m = h + $2} END {printf "%.0f", m}' \
		"$OUT/massif.raw.smst.proto")
	own=$(grep '^RESULT run=1 ' "$OUT/raw.smst.proto.txt")
	MASSIF_LINE="massif, raw smst proto, whole process: peak heap $(mib "$mpeak") MiB (bench-connect's count of the same cold call: $(mib "$(kv "$own" heap_peak)") MiB peak, of which $(mib "$(kv "$own" heap_before)") MiB before the call)"
fi

cat <<EOT

build: $(git -C "${SRC:-.}" describe --always --dirty 2>/dev/null || echo '?') ($(sed -n 's/^CMAKE_BUILD_TYPE:STRING=//p' "$B/CMakeCache.txt" 2>/dev/null))

| store | request | codec | status | answer bytes | total | peak, cold (MiB) | peak, warm (MiB) | warm peak / answer | (warm peak - floor) / answer |
|---|---|---|---|---|---|---|---|---|---|
$(printf '%s\n' "${ROWS[@]}")

$(printf -- '- %s\n' "${EXACT[@]}")
${MASSIF_LINE:+- $MASSIF_LINE}
EOT

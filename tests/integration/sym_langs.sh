#!/usr/bin/env bash
# sym_langs.sh - query-time symbolization end to end for Go and Rust, the
# pattern of sym_native.sh: a real program per language with inlining,
# built with debug info and optimizations, split (objcopy --only-keep-debug,
# strip, --add-gnu-debuglink), the STRIPPED binary profiled for real (perf,
# or gperftools when perf is refused), converted by perf2pprof (raw
# addresses, no names), ingested; the debug info uploaded with `unhex
# upload` (Go: the .debug file; Rust: the unstripped binary, which also
# gives the server the executable's program headers).  Then for every
# location of /api/v1/pprof, names, file basenames, lines and the whole
# inline chain must equal `llvm-symbolizer --inlining --demangle` on the
# unstripped binary (sym_compare; Rust in its `rust` mode: legacy-mangling
# hashes `::h<16 hex>` and `$LT$`-style escapes normalized, then loose as
# C++; Go names compared as they are), and /pyroscope/render must have no
# `+0x` frame the debug info can name.
#
#   Go:   go build -ldflags="-B 0x<sha1 of the source>"  (Go 1.19 writes a
#         GNU build ID only with -B; 1.20+ also accepts -B gobuildid);
#         GOCACHE/GOPATH in the scratch dir, GOFLAGS=-buildvcs=false.
#   Rust: rustc -g -C opt-level=2 (Debian 12: 1.63, legacy mangling);
#         generics, a trait method and #[inline(always)] chains.
#
# A language whose toolchain is missing is skipped with the reason; exit 77
# (CTest "skipped") when neither can run.  RUSTC / GO override the tools;
# RUST_DEBUG_ONLY=1 uploads the Rust .debug instead of the unstripped binary.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need PERF2PPROF
need SYM_COMPARE
need_cmd llvm-symbolizer

GO=${GO:-$(command -v go || true)}
RUSTC=${RUSTC:-$(command -v rustc || true)}
LANGS=()
if [ -n "$GO" ] && "$GO" version >/dev/null 2>&1; then
	LANGS+=(go)
else
	note "SKIP Go: no working go toolchain (package golang-go)"
fi
if [ -n "$RUSTC" ] && "$RUSTC" --version >/dev/null 2>&1; then
	LANGS+=(rust)
else
	note "SKIP Rust: no working rustc (package rustc)"
fi
if [ ${#LANGS[@]} -eq 0 ]; then
	note "neither Go nor Rust can be built here: skipped"
	trap - EXIT
	rm -rf "$WORK"
	exit 77
fi

# ---- the programs
cat >"$WORK/proggo.go" <<'EOF'
package main

import (
	"fmt"
	"os"
	"strconv"
	"time"
)

type shape interface{ area(k int) int }

type rect struct{ w, h int }

func (r rect) area(k int) int { return r.w*r.h + k }

// mix and inner are small enough for the Go compiler to inline.
func mix(x uint32) uint32 { return x*2654435761 + x>>3 }

func inner(x uint32) uint32 {
	s := uint32(0)
	for i := uint32(0); i < 20000; i++ {
		s += mix(i ^ x)
	}
	return s
}

//go:noinline
func work(x uint32) uint32 { return inner(x) + inner(x+1)*3 }

//go:noinline
func build(n int) map[string]int {
	m := make(map[string]int, n)
	for i := 0; i < n; i++ {
		m[strconv.Itoa(i)] = i
	}
	return m
}

//go:noinline
func areas(s []shape) int {
	t := 0
	for i, x := range s {
		t += x.area(i)
	}
	return t
}

func main() {
	secs := 1.0
	if len(os.Args) > 1 {
		secs, _ = strconv.ParseFloat(os.Args[1], 64)
	}
	shapes := make([]shape, 1000)
	for i := range shapes {
		shapes[i] = rect{i, i + 1}
	}
	t0 := time.Now()
	acc := uint32(0)
	for time.Since(t0).Seconds() < secs {
		acc += work(acc)
		acc += uint32(len(build(500)))
		acc += uint32(areas(shapes))
	}
	fmt.Println(acc)
}
EOF
cat >"$WORK/progrs.rs" <<'EOF'
use std::collections::HashMap;
use std::time::Instant;

trait Step {
    fn step(&self, x: u64) -> u64;
}

struct Mul(u64);

impl Step for Mul {
    #[inline(always)]
    fn step(&self, x: u64) -> u64 {
        x.wrapping_mul(self.0) ^ (x >> 7)
    }
}

#[inline(always)]
fn leaf<S: Step>(s: &S, x: u64) -> u64 {
    s.step(x).rotate_left(5)
}

#[inline(always)]
fn mid<S: Step>(s: &S, x: u64) -> u64 {
    let mut acc = 0u64;
    for i in 0..20000u64 {
        acc = acc.wrapping_add(leaf(s, i ^ x));
    }
    acc
}

#[inline(never)]
fn work<S: Step>(s: &S, x: u64) -> u64 {
    mid(s, x).wrapping_add(mid(s, x + 1).wrapping_mul(3))
}

#[inline(never)]
fn mapper(n: u64) -> usize {
    let mut m: HashMap<String, u64> = HashMap::new();
    for i in 0..n {
        m.insert(i.to_string(), i);
    }
    m.keys().map(|k| k.len()).sum()
}

#[inline(never)]
fn sorter(v: &mut Vec<u64>) -> u64 {
    v.sort_by_key(|a| *a % 7919);
    v[0]
}

fn main() {
    let secs: f64 = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(1.0);
    let t0 = Instant::now();
    let mut acc = 1u64;
    let m = Mul(0x9e3779b97f4a7c15);
    let mut v: Vec<u64> = (0..20000u64).collect();
    while t0.elapsed().as_secs_f64() < secs {
        acc = acc.wrapping_add(work(&m, acc));
        acc = acc.wrapping_add(mapper(2000) as u64);
        for (i, x) in v.iter_mut().enumerate() {
            *x = (i as u64).wrapping_mul(2654435761).wrapping_add(acc);
        }
        acc = acc.wrapping_add(sorter(&mut v));
    }
    println!("{}", acc);
}
EOF

declare -A ID
for l in "${LANGS[@]}"; do
	case $l in
	go)
		note "Go: $("$GO" version)"
		H=$(sha1sum "$WORK/proggo.go" | cut -c1-40)
		(cd "$WORK" && GOCACHE="$WORK/gocache" GOPATH="$WORK/gopath" GOFLAGS=-buildvcs=false \
			GO111MODULE=off "$GO" build -ldflags="-B 0x$H" -o "$WORK/proggo" proggo.go) ||
			fail "go build failed"
		;;
	rust)
		note "Rust: $("$RUSTC" --version)"
		"$RUSTC" -g -C opt-level=2 -C link-arg=-Wl,--build-id -o "$WORK/progrs" \
			"$WORK/progrs.rs" || fail "rustc failed"
		;;
	esac
	p=prog${l:0:2}
	[ "$l" = rust ] && p=progrs
	ID[$l]=$(build_id "$WORK/$p")
	[ -n "${ID[$l]}" ] || fail "$p has no GNU build ID"
	split_debug "$WORK/$p"
	objcopy --add-gnu-debuglink="$WORK/$p.debug" "$WORK/$p.stripped"
	[ "$(build_id "$WORK/$p.stripped")" = "${ID[$l]}" ] || fail "strip changed the build ID of $p"
	if readelf -SW "$WORK/$p.stripped" | grep -q '\.debug_info\|\.symtab'; then
		fail "$p.stripped still has symbols"
	fi
	note "$l: $p build ID ${ID[$l]}"
done
prog() { [ "$1" = go ] && echo proggo || echo progrs; }

# ---- profile the stripped binaries for real
profile() { # NAME SECONDS -> $WORK/NAME.pb.gz
	profile_to_pprof "$WORK/$1.pb.gz" "$WORK/$1.stripped" "$2"
}
for l in "${LANGS[@]}"; do
	profile "$(prog "$l")" 1.5
done

DATA="$WORK/data"
start_server "$DATA" --debuginfod-urls "" --symbolize-budget 20s

for l in "${LANGS[@]}"; do
	p=$(prog "$l")
	"$UNHEX" ingest --server "$URL" --name "$p.cpu" "$WORK/$p.pb.gz" >/dev/null ||
		fail "ingest of $p"
done

FROM=$(($(date +%s) - 86400))
UNTIL=$(($(date +%s) + 3600))
q() { # SERVICE -> urlencoded query
	selector "$PT" "$1"
}
PT=$(cpu_type "$(prog "${LANGS[0]}")")
note "profile type: $PT"

# Before any upload: the build IDs are not_found, every frame is hex.
for l in "${LANGS[@]}"; do
	p=$(prog "$l")
	http GET "/api/v1/symbolization?query=$(q "$p")&from=$FROM&until=$UNTIL"
	expect_status 200 "" "symbolization status of $p before the upload"
	jq -e --arg id "${ID[$l]}" '.buildIds[] | select(.buildId == $id and .status == "not_found")' \
		<<<"$BODY" >/dev/null || fail "$p is not not_found before the upload: $BODY"
done

# ---- uploads: Go's .debug file, Rust's unstripped binary
for l in "${LANGS[@]}"; do
	p=$(prog "$l")
	f="$WORK/$p.debug"
	[ "$l" = rust ] && [ -z "${RUST_DEBUG_ONLY:-}" ] && f="$WORK/$p"
	OUT=$("$UNHEX" upload --server "$URL" "$f") || fail "upload of $f: $OUT"
	case "$OUT" in *"${ID[$l]} uploaded"*) ;; *) fail "upload did not report ${ID[$l]}: $OUT" ;; esac
	note "upload: $OUT"
done


for l in "${LANGS[@]}"; do
	p=$(prog "$l")
	wait_symbolized "$(q "$p")" "$FROM" "$UNTIL"
	check_hex "$p" "$BODY"
	NAMES=$(jq -r '.flamebearer.names[]' <<<"$BODY")
	note "render $p: $(wc -l <<<"$NAMES") names, symbolization $(jq -c '.symbolization // {}' <<<"$BODY" | head -c 300)"
	case $l in
	go)
		# the inlined chain main.work -> main.inner (-> main.mix)
		for want in main.work main.inner; do
			grep -qx "$want" <<<"$NAMES" || fail "no $want frame in the Go render: $NAMES"
		done
		;;
	rust)
		# work -> mid -> leaf -> <Mul as Step>::step, inlined
		for want in 'progrs::work' 'progrs::mid' 'progrs::leaf'; do
			grep -q "^$want" <<<"$NAMES" || fail "no $want frame in the Rust render: $NAMES"
		done
		;;
	esac
	curl -sS -o "$WORK/$p.out.pb.gz" "$URL/api/v1/pprof?query=$(q "$p")&from=$FROM&until=$UNTIL" ||
		fail "pprof export of $p"
	mode=
	[ "$l" = rust ] && mode=:rust
	"$SYM_COMPARE" "$WORK/$p.out.pb.gz" "${ID[$l]}=$WORK/$p$mode" ||
		fail "$l names differ from llvm-symbolizer"
	note "$l: every location matches llvm-symbolizer"
done

http GET /api/v1/symbolization?query=$(q "$(prog "${LANGS[0]}")")\&from=$FROM\&until=$UNTIL
expect_status 200 "" "symbolization status after the uploads"
jq -e --arg id "${ID[${LANGS[0]}]}" '[.buildIds[]? | select(.buildId == $id and .status != "ok")] | length == 0' \
	<<<"$BODY" >/dev/null || fail "uploaded build ID still reported unresolved: $BODY"
stop_server
note "sym_langs: ok (${LANGS[*]})"

#!/usr/bin/env bash
# test_workload_debug.sh - unhex-workload --debug-dir end to end with the
# binutils/elfutils tools: every build ID in the profiles gets a symbol file
# that readelf, eu-readelf, eu-elflint and nm read without complaint, whose
# C++ names c++filt demangles, with the same names in releases 1.4 and 1.5;
# and the profiles are byte-identical with and without the flag.  The
# historical shape's output is pinned by checksums; the shapes of issue 11
# (a release a day with churn, high diversity) are checked for their symbol
# files, their renames and moves, their determinism and their diversity.
#   test_workload_debug.sh UNHEX_WORKLOAD
set -euo pipefail
workload=$1
for t in readelf eu-readelf eu-elflint nm c++filt; do
	command -v "$t" >/dev/null || { echo "skip: no $t"; exit 77; }
done
tmp=$(mktemp -d /tmp/unhex-wd-XXXXXX)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

args=(--services 2 --instances 2 --minutes 2 --functions 1500 --quiet)
"$workload" --out "$tmp/a" "${args[@]}"
"$workload" --out "$tmp/b" "${args[@]}" --debug-dir "$tmp/dbg"
diff -r "$tmp/a" "$tmp/b" >/dev/null || fail "profiles differ with --debug-dir"
if "$workload" --out "$tmp/c" "${args[@]}" --debug-dir "$tmp/c" 2>/dev/null; then
	fail "--debug-dir equal to --out accepted"
fi

# 2 services x (2 own binaries x 2 releases) + 3 shared libraries
n=$(ls "$tmp/dbg"/*.debug | wc -l)
[ "$n" -eq 11 ] || fail "expected 11 symbol files, got $n"
[ "$(wc -l < "$tmp/dbg/manifest.tsv")" -eq 11 ] || fail "manifest lines"

# The historical shape, pinned: sums taken with the generator as it was
# before the options of issue 11 (the benches and the golden comparisons
# depend on these bytes).  Profiles are summed decoded, so that a zlib whose
# deflate output differs cannot move them.
sum_profiles() {
	(cd "$1" && cat manifest.tsv && cut -f1 manifest.tsv | while read -r f; do gzip -dc "$f"; done) |
		sha256sum | cut -d' ' -f1
}
sum_debug() {
	# shellcheck disable=SC2046
	(cd "$1" && cat manifest.tsv $(cut -f1 manifest.tsv)) | sha256sum | cut -d' ' -f1
}
[ "$(sum_profiles "$tmp/b")" = ccc7978440df56e20cfad78057e4c6b8445088d76a47b1a0beffac44fed3559a ] ||
	fail "the historical shape's profiles changed"
[ "$(sum_debug "$tmp/dbg")" = f0ca2055c0f856cb585ab043d7cc14fe5e555efabc78ae9f95ee82aaa21338ec ] ||
	fail "the historical shape's symbol files changed"

check_symbol_files() { # DIR: every file of DIR/manifest.tsv
while IFS=$'\t' read -r file id bin rel; do
	f="$1/$file"
	[ -s "$f" ] || fail "$file missing"
	[ "$file" = "$id.debug" ] || fail "$file named for $id"
	[[ "$rel" =~ ^1\.[0-9]+(,1\.[0-9]+)*$ ]] || fail "release $rel"
	[ "$(stat -c %s "$f")" -lt 1000000 ] || fail "$file is large"
	err=$(readelf -W -n -S -l -s "$f" 2>&1 >/dev/null) || fail "readelf $file"
	[ -z "$err" ] || fail "readelf warns on $file: $err"
	grep -q "Build ID: $id" <<<"$(eu-readelf -n "$f")" || fail "eu-readelf: no build ID $id in $file"
	grep -q "No errors" <<<"$(eu-elflint --debuginfo "$f")" || fail "eu-elflint $file"
	grep -q 'LOAD .* R E ' <<<"$(readelf -W -l "$f")" || fail "no R+X PT_LOAD in $file"
	nm "$f" > "$tmp/nm"
	[ "$(wc -l < "$tmp/nm")" -gt 50 ] || fail "few symbols in $file ($bin)"
	awk '$2 != "T" { exit 1 }' "$tmp/nm" || fail "non-text symbol in $file"
	[ -z "$(awk '{print $3}' "$tmp/nm" | sort | uniq -d)" ] || fail "duplicate names in $file"
	bad=$(awk '$3 ~ /^_Z/ {print $3}' "$tmp/nm" | c++filt | grep -c '^_Z' || true)
	[ "$bad" -eq 0 ] || fail "$bad names in $file do not demangle"
	case "$bin" in
	*/libc.so.6) grep -q ' T memcpy$' "$tmp/nm" || fail "no memcpy in libc" ;;
	*/libssl.so.3) grep -q ' T SSL_read$' "$tmp/nm" || fail "no SSL_read in libssl" ;;
	*/libstdc++.so.6) grep -q ' T _Znwm$' "$tmp/nm" || fail "no operator new" ;;
	/usr/local/bin/*) grep -q ' T main$' "$tmp/nm" || fail "no main in $bin" ;;
	*/libservice.so)
		ns=$(echo "$bin" | cut -d/ -f3 | tr - _)
		nm -C "$f" > "$tmp/nmc"; grep -q " T ${ns}::" "$tmp/nmc" || fail "no ${ns}:: names in $bin" ;;
	esac
done < "$1/manifest.tsv"
}
check_symbol_files "$tmp/dbg"

# Names line up across releases: same set, with some functions moved.
for bin in $(awk -F'\t' '$4 == "1.4" {print $3}' "$tmp/dbg/manifest.tsv"); do
	f14=$(awk -F'\t' -v b="$bin" '$3 == b && $4 == "1.4" {print $1}' "$tmp/dbg/manifest.tsv")
	f15=$(awk -F'\t' -v b="$bin" '$3 == b && $4 == "1.5" {print $1}' "$tmp/dbg/manifest.tsv")
	nm "$tmp/dbg/$f14" | awk '{print $3}' | sort > "$tmp/n14"
	nm "$tmp/dbg/$f15" | awk '{print $3}' | sort > "$tmp/n15"
	cmp -s "$tmp/n14" "$tmp/n15" || fail "$bin: names differ between releases"
	nm "$tmp/dbg/$f14" | sort > "$tmp/a14"
	nm "$tmp/dbg/$f15" | sort > "$tmp/a15"
	! cmp -s "$tmp/a14" "$tmp/a15" || fail "$bin: no function moved in 1.5"
done

# A release a day with churn: three releases, each with its own build IDs
# for the service's two binaries; functions renamed and moved between them.
margs=(--services 1 --instances 2 --minutes 30 --releases 3 --churn 20 --functions 1500 --quiet)
"$workload" --out "$tmp/m" "${margs[@]}" --debug-dir "$tmp/mdbg"
"$workload" --out "$tmp/m2" "${margs[@]}"
diff -r "$tmp/m" "$tmp/m2" >/dev/null || fail "the churn shape is not deterministic"
[ "$(ls "$tmp/mdbg"/*.debug | wc -l)" -eq 9 ] || fail "expected 9 symbol files for 3 releases"
for v in 1.4 1.5 1.6; do
	grep -q "version=$v}" "$tmp/m/manifest.tsv" || fail "no profile of release $v"
done
grep -q $'\t1.4,1.5,1.6$' "$tmp/mdbg/manifest.tsv" || fail "shared libraries not listed for every release"
check_symbol_files "$tmp/mdbg"
for bin in /usr/local/bin/shop-api /opt/shop-api/lib/libservice.so; do
	f14=$(awk -F'\t' -v b="$bin" '$3 == b && $4 == "1.4" {print $1}' "$tmp/mdbg/manifest.tsv")
	f16=$(awk -F'\t' -v b="$bin" '$3 == b && $4 == "1.6" {print $1}' "$tmp/mdbg/manifest.tsv")
	nm "$tmp/mdbg/$f14" | awk '{print $3}' | sort > "$tmp/n14"
	nm "$tmp/mdbg/$f16" | awk '{print $3}' | sort > "$tmp/n16"
	[ "$(wc -l < "$tmp/n14")" -eq "$(wc -l < "$tmp/n16")" ] || fail "$bin: function count changed"
	! cmp -s "$tmp/n14" "$tmp/n16" || fail "$bin: nothing renamed by 1.6"
	[ "$(comm -12 "$tmp/n14" "$tmp/n16" | wc -l)" -gt "$(($(wc -l < "$tmp/n14") * 3 / 4))" ] ||
		fail "$bin: most names should survive two releases"
done

# High diversity, shortened: forked paths under a flat law give mostly
# distinct stacks (the generator counts them).
"$workload" --shape diverse --instances 2 --minutes 1 --out "$tmp/dv" 2>"$tmp/dv.log"
read -r samples stacks < <(sed -n 's/.*: \([0-9]*\) pprof samples over \([0-9]*\) distinct stacks.*/\1 \2/p' "$tmp/dv.log")
[ "${samples:-0}" -gt 5000 ] || fail "diverse: $samples pprof samples"
[ "$((stacks * 2))" -gt "$samples" ] || fail "diverse: only $stacks distinct stacks in $samples samples"
echo "ok: $n symbol files (+ 9 over three releases); diverse: $samples samples, $stacks stacks"

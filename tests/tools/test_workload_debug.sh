#!/usr/bin/env bash
# test_workload_debug.sh - unhex-workload --debug-dir end to end with the
# binutils/elfutils tools: every build ID in the profiles gets a symbol file
# that readelf, eu-readelf, eu-elflint and nm read without complaint, whose
# C++ names c++filt demangles, with the same names in releases 1.4 and 1.5;
# and the profiles are byte-identical with and without the flag.
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

while IFS=$'\t' read -r file id bin rel; do
	f="$tmp/dbg/$file"
	[ -s "$f" ] || fail "$file missing"
	[ "$file" = "$id.debug" ] || fail "$file named for $id"
	case "$rel" in 1.4|1.5|1.4,1.5) ;; *) fail "release $rel" ;; esac
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
done < "$tmp/dbg/manifest.tsv"

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
echo "ok: $n symbol files"

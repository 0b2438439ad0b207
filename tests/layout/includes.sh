#!/usr/bin/env bash
# includes.sh - the layering of README.md ("How it is built"), checked on
# every #include "dir/file.h" of the tree:
#
#   base -> proto -> objstore -> storage -> ingest, symbolize -> debuginfo -> query -> web -> cli
#
#   - a module includes headers of itself and of modules to its left only
#     (ingest and symbolize are side by side and include neither each other);
#   - another module's private headers (anything but its public header:
#     storage/storage.h, query/query.h and query/regress.h, ...; every base/*.h
#     and proto/pbjson.h is public)
#     are out of reach: a module's own files include its private header
#     by its bare name ("storage_int.h"), and the build gives no other
#     module a path to it;
#   - tests/<module>/ may include that module's private headers (white-box
#     tests), no other module's; tests/fuzz/ any module's (a fuzz target
#     drives one module's internal decoder); bench/ and tools/ only public
#     headers, except the white-box benchmarks listed in WHITEBOX below.
#
#   bash includes.sh SOURCE_DIR      exit 1 and one line per violation
set -euo pipefail
root=${1:?usage: includes.sh SOURCE_DIR}
cd "$root"

declare -A rank=([base]=0 [proto]=1 [objstore]=2 [storage]=3 [ingest]=4 [symbolize]=4
	[debuginfo]=5 [query]=6 [web]=7 [cli]=8)
declare -A public=([objstore]=objstore.h [storage]=storage.h [ingest]=ingest.h [symbolize]=symbolize.h
	[debuginfo]=debuginfo.h [query]="query.h regress.h" [web]=web.h [cli]=cli.h [proto]=pbjson.h)
# file -> the private header it may include anyway, and why
declare -A WHITEBOX=(
	["bench/bench_sym_quick.c"]="symbolize/symbolize_int.h" # draws addresses from the FUNC symbol table
	["bench/bench_blocks.c"]="storage/storage_int.h" # measures the head's partitions against its blocks
)

is_public() { # MODULE FILE
	[ "$1" = base ] && return 0
	case " ${public[$1]:-} " in *" $2 "*) return 0 ;; esac
	return 1
}

bad=0
violation() {
	echo "includes.sh: $1: #include \"$2\": $3"
	bad=1
}

while IFS= read -r f; do
	top=${f%%/*}
	case $top in
	tests) sub=${f#tests/}; owner=${sub%%/*}; kind=test ;;
	bench | tools) owner=$top; kind=program ;;
	*) owner=$top; kind=module ;;
	esac
	while IFS= read -r inc; do
		dir=${inc%%/*}
		[ "$dir" != "$inc" ] || continue # a bare name: the file's own directory
		[ -n "${rank[$dir]:-}" ] || continue # tests/, tools/, system headers
		name=${inc#*/}
		case $kind in
		module)
			if [ "$dir" = "$owner" ]; then
				is_public "$dir" "$name" ||
					violation "$f" "$inc" "include the module's own private header by its bare name (\"$name\")"
				continue
			fi
			if [ "${rank[$dir]}" -ge "${rank[$owner]}" ]; then
				violation "$f" "$inc" "$dir/ is not below $owner/ in the layering"
			elif ! is_public "$dir" "$name"; then
				violation "$f" "$inc" "a private header of $dir/"
			fi
			;;
		test)
			[ "$dir" = "$owner" ] || [ "$owner" = fuzz ] && continue
			is_public "$dir" "$name" ||
				violation "$f" "$inc" "a private header of $dir/ in tests/$owner/"
			;;
		program)
			is_public "$dir" "$name" || [ "${WHITEBOX[$f]:-}" = "$inc" ] ||
				violation "$f" "$inc" "a private header of $dir/"
			;;
		esac
	done < <(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$f")
done < <(git ls-files -- '*.c' '*.h' 2>/dev/null || find . -name '*.[ch]' | sed 's|^\./||')

[ $bad = 0 ] && echo "includes.sh: the layering holds"
exit $bad

#!/usr/bin/env bash
# symbols.sh - every global symbol a module's library defines carries the
# module's prefix (STYLE.md, "Names"): `store_` public and `store__`
# private, and so on, so two modules can never define the same name and a
# reader knows from a name where it lives.
#
#   bash symbols.sh REGEX LIB [REGEX LIB]...
#
# REGEX is an extended regular expression a name must match from its
# start (e.g. 'ingest_'); LIB a static library.  Prints every name that
# does not, with its object file; exits 1 if there is one.  Names that
# start with two underscores are the implementation's (the sanitizers'
# __odr_asan.*, for one) and are passed over.
set -euo pipefail
command -v nm >/dev/null || { echo "symbols.sh: nm is missing" >&2; exit 77; }
[ $# -ge 2 ] && [ $(($# % 2)) = 0 ] || { echo "usage: symbols.sh REGEX LIB..." >&2; exit 2; }
bad=0
while [ $# -gt 0 ]; do
	re=$1 lib=$2
	shift 2
	# nm -A: "lib.a:obj.o: ADDR TYPE NAME"; defined globals only.
	out=$(nm -A -g --defined-only "$lib" | awk -v re="^($re)" '
		NF >= 2 && $(NF) !~ re && $(NF) !~ /^__/ { f = $1; sub(/:[0-9a-f]*$/, "", f); sub(/^.*\.a:/, "", f); print "  " f " " $(NF) }')
	if [ -n "$out" ]; then
		echo "symbols.sh: $(basename "$lib"): globals without the prefix ^($re):"
		echo "$out"
		bad=1
	fi
done
[ $bad = 0 ] && echo "symbols.sh: every global has its module's prefix"
exit $bad

#!/usr/bin/env bash
# make_elf_seeds.sh - rebuilds the ELF seeds of fuzz_elf (corpus/fuzz_elf/)
# from elf_seed/tiny.c, or checks that the committed ones are what it builds.
#
#   bash tests/fuzz/make_elf_seeds.sh            rewrite corpus/fuzz_elf/
#   bash tests/fuzz/make_elf_seeds.sh --check    compare; exit 1 on a difference,
#                                                77 with another toolchain
#
# tiny.c is three lines in an unusual layout on purpose: an always-inline
# function called from a noinline one, so the seeds carry an inlined
# subroutine, location lists and call sites in a few hundred bytes of
# DWARF 5.  Its columns are in the line table, so reformatting it changes
# the seeds.  One compile, three seeds:
#
#   c_inline_full   gcc -g -O2 (the executable, DWARF and .symtab)
#   c_inline_debug  objcopy --only-keep-debug of it (a separate debug file:
#                   DWARF with the code sections NOBITS)
#   c_symtab_only   strip --strip-debug of it (.symtab, no DWARF)
#
# The bytes depend on the compiler and binutils: the committed seeds come
# from Debian 12's gcc 12.2.0 (Debian 12.2.0-14+deb12u1) and binutils 2.40,
# which give them byte for byte.  The build runs in a temporary directory
# mapped to the fixed DW_AT_comp_dir /tmp/symtry (the directory of the
# first build), so where the script runs does not matter.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=$here/corpus/fuzz_elf
check=0
case "${1:-}" in
--check) check=1 ;;
"") ;;
*) echo "usage: make_elf_seeds.sh [--check]" >&2; exit 2 ;;
esac

for t in gcc objcopy strip; do
	command -v $t >/dev/null || { echo "make_elf_seeds.sh: $t is missing" >&2; exit 77; }
done
want_gcc="gcc (Debian 12.2.0-14+deb12u1) 12.2.0"
have_gcc=$(gcc --version | head -1)

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$here/elf_seed/tiny.c" "$tmp/"
(cd "$tmp" &&
	gcc -g -O2 -fdebug-prefix-map="$tmp"=/tmp/symtry -o c_inline_full tiny.c &&
	objcopy --only-keep-debug c_inline_full c_inline_debug &&
	strip --strip-debug -o c_symtab_only c_inline_full)

if [ $check = 0 ]; then
	[ "$have_gcc" = "$want_gcc" ] ||
		echo "make_elf_seeds.sh: note: $have_gcc, not $want_gcc; the seeds will differ from the committed ones" >&2
	mkdir -p "$out"
	cp "$tmp"/c_inline_full "$tmp"/c_inline_debug "$tmp"/c_symtab_only "$out/"
	echo "make_elf_seeds.sh: wrote $out/{c_inline_full,c_inline_debug,c_symtab_only}"
	exit 0
fi
rc=0
for s in c_inline_full c_inline_debug c_symtab_only; do
	if cmp -s "$tmp/$s" "$out/$s"; then
		echo "make_elf_seeds.sh: $s: same bytes"
	else
		echo "make_elf_seeds.sh: $s: differs from the committed seed" >&2
		rc=1
	fi
done
if [ $rc != 0 ] && [ "$have_gcc" != "$want_gcc" ]; then
	echo "make_elf_seeds.sh: $have_gcc is not $want_gcc: a different toolchain, not a different recipe" >&2
	exit 77
fi
exit $rc

#!/usr/bin/env bash
# sym_plt.sh - PLT stubs named end to end (docs/symbolization.md, "PLT
# stubs").  A real C program whose hot loop calls memcmp through the PLT
# (-fno-builtin-memcmp, one byte per call, so a good share of the samples
# land in the stub itself), built twice (a lazy-binding .plt, and an IBT
# .plt.sec), split and stripped, profiled for real by perf (or gperftools);
# the .debug file and the stripped executable are uploaded.  Every sample
# perf recorded inside a PLT section must be named, "memcmp@plt" among
# them, exactly as objdump labels the entry; with the .debug file alone the
# same frames stay hex (a .debug file has no relocations to name them by).
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need PERF2PPROF

cat >"$WORK/plt.c" <<'CEOF'
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
__attribute__((noinline)) static int scan(const char *a, const char *b, int k)
{
	int s = 0;
	for (int i = 0; i < k; i++)
		s += memcmp(a + (i & 7), b + (i & 7), 1);
	return s;
}
CEOF
c_timed_main 1 'acc += (unsigned)scan("abcdefghabcdefgh", "abcdefghabcdefgh", 100000 + (int)(v & 1));' \
	>>"$WORK/plt.c"

start_server "$WORK/data" --debuginfod-urls "" --symbolize-budget 20s
FROM=$(($(date +%s) - 86400))
UNTIL=$(($(date +%s) + 3600))

for variant in lazy ibt; do
	flags=-fcf-protection=none
	[ $variant = ibt ] && flags="-fcf-protection -Wl,-z,ibtplt"
	p=plt$variant
	# shellcheck disable=SC2086
	cc -g -O2 -fno-builtin-memcmp $flags -o "$WORK/$p" "$WORK/plt.c"
	split_debug "$WORK/$p"
	id=$(build_id "$WORK/$p")
	# "vaddr name" of every entry objdump labels <name@plt> (16 bytes each)
	objdump -d -j .plt -j .plt.sec "$WORK/$p" |
		sed -n 's/^\([0-9a-f]*\) <\(.*@plt\)>:$/\1 \2/p' >"$WORK/$p.plt"
	grep -q ' memcmp@plt$' "$WORK/$p.plt" || fail "$p: objdump shows no memcmp@plt"
	profile_to_pprof "$WORK/$p.pb.gz" "$WORK/$p.stripped" 1.5
	"$UNHEX" ingest --server "$URL" --name "$p.cpu" "$WORK/$p.pb.gz" >/dev/null ||
		fail "ingest of $p"
	"$UNHEX" upload --server "$URL" "$WORK/$p.debug" >/dev/null || fail "upload of $p.debug"
	Q=$(selector "$(cpu_type "$p")" "$p")

	# The program's segment: its frames are "$p.stripped+0x<file offset>".
	seg=$(readelf -lW "$WORK/$p" | awk '$1=="LOAD" && $7 ~ /E/ {print $2, $3; exit}')
	poff=$((${seg%% *}))
	pvaddr=$((${seg##* }))
	# in_plt OFFSET -> the objdump name of the entry holding it, or nothing
	in_plt() {
		local va=$((0x$1 - poff + pvaddr)) a name
		while read -r a name; do
			if ((0x$a <= va && va < 0x$a + 16)); then
				echo "$name"
				return
			fi
		done <"$WORK/$p.plt"
	}

	# The .debug file alone: what perf sampled in the PLT is hex.
	wait_symbolized "$Q" "$FROM" "$UNTIL"
	hex_plt=0
	for off in $(jq -r '.flamebearer.names[]' <<<"$BODY" | sed -n "s/^$p\.stripped+0x//p"); do
		[ -n "$(in_plt "$off")" ] && hex_plt=$((hex_plt + 1))
	done
	[ $hex_plt -gt 0 ] || fail "$p: perf recorded no sample in a PLT stub: $(jq -c '.flamebearer.names' <<<"$BODY" | head -c 600)"
	note "$p: .debug alone: $hex_plt PLT frames hex"

	# With the executable: every one named as objdump names it.
	"$UNHEX" upload --server "$URL" --type executable "$WORK/$p.stripped" >/dev/null ||
		fail "upload of $p.stripped as executable"
	wait_symbolized "$Q" "$FROM" "$UNTIL"
	NAMES=$(jq -r '.flamebearer.names[]' <<<"$BODY")
	for off in $(sed -n "s/^$p\.stripped+0x//p" <<<"$NAMES"); do
		name=$(in_plt "$off")
		[ -z "$name" ] || fail "$p: $p.stripped+0x$off in $name stayed hex"
	done
	grep -qx 'memcmp@plt' <<<"$NAMES" || fail "$p: no memcmp@plt frame: $(tr '\n' ' ' <<<"$NAMES")"
	grep '@plt$' <<<"$NAMES" | while read -r n; do
		grep -q " $n\$" "$WORK/$p.plt" || fail "$p: $n is not an objdump PLT name"
	done
	note "$p: $(grep -c '@plt$' <<<"$NAMES") PLT names: $(grep '@plt$' <<<"$NAMES" | tr '\n' ' ')"
done
stop_server
note "sym_plt: ok"

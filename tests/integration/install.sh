#!/usr/bin/env bash
# install.sh - `make install`: the binary, the docs and the hardened systemd
# unit land under DESTDIR/PREFIX with the paths filled in, the installed
# binary runs, `make uninstall` removes them, and the unit passes
# `systemd-analyze verify` (and its security review) where systemd exists.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
SRC=$(cd "$HERE/../.." && pwd)

# ---- a packager's install: DESTDIR + the default PREFIX
make -s -C "$SRC" install DESTDIR="$WORK/root" UNHEX_BIN="$UNHEX" >"$WORK/make.out" 2>&1 ||
	fail "make install: $(cat "$WORK/make.out")"
R="$WORK/root/usr/local"
[ -x "$R/bin/unhex" ] || fail "no binary in $R/bin"
"$R/bin/unhex" version | grep -q '^unhex ' || fail "the installed binary does not run"
for f in README.md LICENSE operations.md security.md cli.md api.md; do
	[ -f "$R/share/doc/unhex/$f" ] || fail "doc $f not installed"
done
UNIT="$R/lib/systemd/system/unhex.service"
[ -f "$UNIT" ] || fail "no unit"
grep -q '@[A-Z]*@' "$UNIT" && fail "placeholders left in the unit: $(grep '@[A-Z]*@' "$UNIT")"
grep -q '^ExecStart=/usr/local/bin/unhex serve --data /var/lib/unhex ' "$UNIT" || fail "ExecStart: $(grep ExecStart "$UNIT")"
for want in DynamicUser=yes ProtectSystem=strict NoNewPrivileges=yes "StateDirectory=unhex unhex-backups" \
	ProtectHome=yes PrivateTmp=yes CapabilityBoundingSet= "RestrictAddressFamilies=AF_INET AF_INET6 AF_UNIX" \
	MemoryDenyWriteExecute=yes SystemCallFilter=@system-service; do
	grep -qx -- "$want" "$UNIT" || fail "the unit lacks $want"
done
make -s -C "$SRC" uninstall DESTDIR="$WORK/root" >/dev/null 2>&1 || fail "make uninstall"
[ -z "$(find "$WORK/root" -type f)" ] || fail "uninstall left: $(find "$WORK/root" -type f)"

# ---- systemd's own checks, on an install whose paths exist (no DESTDIR)
if command -v systemd-analyze >/dev/null 2>&1; then
	make -s -C "$SRC" install PREFIX="$WORK/pfx" UNHEX_BIN="$UNHEX" >/dev/null 2>&1 || fail "make install PREFIX"
	U="$WORK/pfx/lib/systemd/system/unhex.service"
	systemd-analyze verify "$U" >"$WORK/verify.out" 2>&1 || fail "systemd-analyze verify: $(cat "$WORK/verify.out")"
	grep -q "unhex.service" "$WORK/verify.out" && fail "systemd-analyze verify complains: $(cat "$WORK/verify.out")"
	if systemd-analyze security --offline=yes "$U" >"$WORK/security.out" 2>&1; then
		note "$(grep 'Overall exposure' "$WORK/security.out")"
		grep -Eq 'Overall exposure level for unhex.service: [0-2]\.[0-9]' "$WORK/security.out" ||
			fail "the unit is exposed: $(tail -n 5 "$WORK/security.out")"
	fi
else
	note "systemd-analyze is not installed: the unit was checked by content only"
fi
echo "PASS install"

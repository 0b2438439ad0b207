#!/usr/bin/env bash
# durability.sh - honest durability on the real server (issue 15, item 7):
# a write-ahead log damaged in the middle is refused with the file named and
# the recovery command; `unhex recover` says what it drops and opens the
# store again; `unhex verify` finds a flipped SST block.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need WORKLOAD

WL="$WORK/workload"
"$WORKLOAD" --out "$WL" --services 2 --instances 3 --minutes 2 --end now --quiet
NFILES=$(grep -vc '^#' "$WL/manifest.tsv")
note "workload: $NFILES profiles"

# flip FILE OFFSET: complements the 8 bytes at OFFSET.
flip() {
	python3 - "$1" "$2" <<'PY' || fail "cannot flip bytes of $1"
import sys
path, off = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    f.seek(off)
    b = f.read(8)
    f.seek(off)
    f.write(bytes(255 - x for x in b))
PY
}

# ---- 1. a WAL damaged in the middle refuses to open, names the file -------
DATA="$WORK/data"
start_server "$DATA"
ingest_manifest "$WL"
ACK=$(field "$(tenant_stats anonymous)" profiles)
note "acknowledged: $ACK profiles"
kill_server
WALF=$(ls "$DATA"/*.log | sort | tail -n 1)
SZ=$(stat -c %s "$WALF")
[ "$SZ" -gt 65536 ] || fail "the newest WAL $WALF holds only $SZ bytes"
flip "$WALF" $((SZ / 2))
note "flipped 8 bytes at $((SZ / 2)) of $(basename "$WALF") ($SZ bytes)"
cp "$WALF" "$WORK/damaged.log"

SERVER_N=$((SERVER_N + 1))
rc=0
"$UNHEX" serve --data "$DATA" --listen 127.0.0.1:0 >"$WORK/server.$SERVER_N.out" \
	2>"$WORK/server.$SERVER_N.log" || rc=$?
[ $rc -ne 0 ] || fail "the server started on a damaged WAL"
LOG=$(cat "$WORK/server.$SERVER_N.log")
for want in "$(basename "$WALF")" "damaged at byte" "unhex recover --data $DATA" "Nothing was changed"; do
	grep -qF -- "$want" <<<"$LOG" || fail "the refusal lacks \"$want\": $LOG"
done
note "refused: $(grep -o 'write-ahead log.*' <<<"$LOG" | head -c 300)"
rc=0
"$UNHEX" stats --data "$DATA" >/dev/null 2>"$WORK/stats.err" || rc=$?
[ $rc -ne 0 ] || fail "unhex stats read a store with a damaged WAL"
grep -qF "$(basename "$WALF")" "$WORK/stats.err" || fail "stats did not name the log: $(cat "$WORK/stats.err")"
rc=0
"$UNHEX" verify --data "$DATA" >"$WORK/verify.out" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "verify exited $rc on a damaged WAL: $(cat "$WORK/verify.out")"
grep -qF "$(basename "$WALF")" "$WORK/verify.out" || fail "verify did not name the log: $(cat "$WORK/verify.out")"

# ---- 2. recover: says what it drops, keeps a copy, opens again ------------
"$UNHEX" recover --data "$DATA" --dry-run >"$WORK/dry.out" || fail "recover --dry-run failed"
grep -q "^damage: .*$(basename "$WALF") at byte" "$WORK/dry.out" || fail "dry run: $(cat "$WORK/dry.out")"
ls -d "$DATA"/wal-damaged-* >/dev/null 2>&1 && fail "the dry run copied the logs"
"$UNHEX" stats --data "$DATA" >/dev/null 2>&1 && fail "the dry run changed the store"
"$UNHEX" recover --data "$DATA" >"$WORK/recover.out" || fail "recover failed: $(cat "$WORK/recover.out")"
cat "$WORK/recover.out" >&2
grep -q "^dropped: [1-9][0-9]* intact writes" "$WORK/recover.out" || fail "recover did not say what it dropped"
KEPT=$(sed -n 's/.* it holds \([0-9]*\) profiles.*/\1/p' "$WORK/recover.out")
[ -n "$KEPT" ] && [ "$KEPT" -lt "$ACK" ] || fail "recover kept \"$KEPT\" of $ACK profiles"
cmp -s "$WORK/damaged.log" "$(ls -d "$DATA"/wal-damaged-*)/$(basename "$WALF")" ||
	fail "the copy of the damaged log differs from it"
start_server "$DATA"
[ "$(field "$(tenant_stats anonymous)" profiles)" = "$KEPT" ] || fail "the server serves another count than recover reported"
ingest_manifest "$WL"
[ "$(field "$(tenant_stats anonymous)" profiles)" = $((KEPT + ACK)) ] || fail "ingest after recovery"
stop_server
"$UNHEX" verify --data "$DATA" >/dev/null || fail "verify after recovery"

# ---- 3. a log cut short by a crash opens: only the damaged tail is lost ---
DATA3="$WORK/data3"
start_server "$DATA3"
ingest_manifest "$WL"
kill_server
WALF=$(ls "$DATA3"/*.log | sort | tail -n 1)
truncate -s $(($(stat -c %s "$WALF") - 10)) "$WALF"
start_server "$DATA3"
[ "$(field "$(tenant_stats anonymous)" profiles)" -lt "$ACK" ] || fail "a cut-short write survived"
stop_server

# ---- 4. verify reads every SST block and every debug file ------------------
DATA4="$WORK/data4"
mkdir -p "$WORK/prog"
printf 'int main(void) { return 0; }\n' >"$WORK/prog/p.c"
gcc -g -O0 -Wl,--build-id -o "$WORK/prog/p" "$WORK/prog/p.c"
start_server "$DATA4"
ingest_manifest "$WL"
"$UNHEX" upload --server "$URL" "$WORK/prog/p" >/dev/null || fail "upload"
stop_server
"$UNHEX" verify --data "$DATA4" >"$WORK/verify4" || fail "verify of a sound store: $(cat "$WORK/verify4")"
grep -q "^ok  head/symbols: [1-9][0-9]* SST files" "$WORK/verify4" || fail "verify read no SST: $(cat "$WORK/verify4")"
grep -q "^ok  debuginfo/" "$WORK/verify4" || fail "verify checked no debug file: $(cat "$WORK/verify4")"
"$UNHEX" stats --data "$DATA4" >/dev/null || fail "stats of a sound store"
cp -a "$DATA4" "$WORK/data4-debug"

# A flipped data block of the largest SST file (the symbols of the head).
SST=$(ls -S "$DATA4"/*.sst | head -n 1)
flip "$SST" $(($(stat -c %s "$SST") / 3))
rc=0
"$UNHEX" verify --data "$DATA4" >"$WORK/verify5" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "verify exited $rc on a flipped SST block: $(cat "$WORK/verify5")"
grep -q "^BAD head/.*$(basename "$SST")" "$WORK/verify5" || fail "verify did not name $SST: $(cat "$WORK/verify5")"
note "$(grep '^BAD' "$WORK/verify5" | head -c 300)"
rc=0
"$UNHEX" stats --data "$DATA4" >/dev/null 2>"$WORK/stats5" || rc=$?
[ $rc -eq 1 ] || fail "stats exited $rc on a store with a flipped SST block"
grep -q "unhex verify" "$WORK/stats5" || fail "stats did not point to verify: $(cat "$WORK/stats5")"

# A debug file changed after it was stored.
DBG=$(find "$WORK/data4-debug/debuginfo" -name debuginfo -type f | head -n 1)
[ -n "$DBG" ] || fail "no stored debug file"
flip "$DBG" 200
rc=0
"$UNHEX" verify --data "$WORK/data4-debug" >"$WORK/verify6" 2>&1 || rc=$?
[ $rc -eq 1 ] || fail "verify exited $rc on a changed debug file: $(cat "$WORK/verify6")"
grep -q "^BAD debuginfo/.*SHA-256 mismatch" "$WORK/verify6" || fail "verify output: $(cat "$WORK/verify6")"
rm -f "$DBG"
"$UNHEX" verify --data "$WORK/data4-debug" >"$WORK/verify7" 2>&1 && fail "verify passed a missing debug file"
grep -q "^BAD debuginfo/.*cannot read it" "$WORK/verify7" || fail "verify output: $(cat "$WORK/verify7")"

# ---- 5. a retried push (same profile ID) is stored once, also after kill -9
DATA5="$WORK/data5"
PPROF=$(awk -F'\t' '!/^#/ && NF { print $1; exit }' "$WL/manifest.tsv")
base64 -w0 "$WL/$PPROF" >"$WORK/b64"
push_json() { # ID...: one push with one sample per ID
	jq -n --rawfile p "$WORK/b64" --args '{series:[{labels:[
		{name:"__name__",value:"process_cpu"},{name:"service_name",value:"retry"}],
		samples:[$ARGS.positional[] | {rawProfile:$p,ID:.}]}]}' "$@" >"$WORK/push.json"
	http POST /push.v1.PusherService/Push -H 'Content-Type: application/json' \
		--data-binary @"$WORK/push.json"
	expect_status 200 '{}' "push $*"
}
start_server "$DATA5"
push_json 6a3c5e1e-0000-4000-8000-00000000aaaa
ONE=$(counts "$(tenant_stats anonymous)")
[ "$(field "$ONE" profiles)" -gt 0 ] || fail "the push stored nothing"
push_json 6a3c5e1e-0000-4000-8000-00000000aaaa
[ "$(counts "$(tenant_stats anonymous)")" = "$ONE" ] || fail "a retried push was stored twice"
grep -q '^unhex_push_duplicates_total 1$' <<<"$(curl -s "$URL/metrics")" || fail "duplicates metric"
kill_server
start_server "$DATA5"
push_json 6a3c5e1e-0000-4000-8000-00000000aaaa
[ "$(counts "$(tenant_stats anonymous)")" = "$ONE" ] || fail "a retry after kill -9 was stored twice"
# A new ID is a new profile; a request naming an old and a new one stores the new one.
push_json 6a3c5e1e-0000-4000-8000-00000000aaaa 6a3c5e1e-0000-4000-8000-00000000bbbb
TWO=$(counts "$(tenant_stats anonymous)")
[ "$(field "$TWO" profiles)" = $((2 * $(field "$ONE" profiles))) ] || fail "a new ID: $TWO after $ONE"
# Without an ID every push is stored (nothing to recognize a retry by).
push_json ""
[ "$(field "$(tenant_stats anonymous)" profiles)" = $((3 * $(field "$ONE" profiles))) ] || fail "a push without ID"
stop_server

# ---- 6. an upload cut short by kill -9 leaves no temporary file behind
DATA6="$WORK/data6"
start_server "$DATA6"
head -c $((8 << 20)) /dev/urandom >"$WORK/big.debug"
curl -sS -o /dev/null --limit-rate 256k -X POST --data-binary @"$WORK/big.debug" \
	-H 'Content-Type: application/octet-stream' \
	"$URL/api/v1/debuginfo/0123456789abcdef0123456789abcdef01234567" 2>/dev/null &
CURL_PID=$!
for i in $(seq 1 300); do
	[ -n "$(ls -A "$DATA6/debuginfo/tmp" 2>/dev/null)" ] && break
	sleep 0.1
done
LEFT=$(ls -A "$DATA6/debuginfo/tmp")
[ -n "$LEFT" ] || fail "the upload wrote no temporary file"
kill_server
wait "$CURL_PID" 2>/dev/null || true
[ -n "$(ls -A "$DATA6/debuginfo/tmp")" ] || fail "kill -9 left nothing to clean"
note "left by kill -9: $LEFT"
start_server "$DATA6"
[ -z "$(ls -A "$DATA6/debuginfo/tmp")" ] || fail "temporary files survived a restart: $(ls "$DATA6/debuginfo/tmp")"
grep -q "debuginfo: removed 1 temporary files" "$WORK/server.$SERVER_N.log" || fail "the cleanup was not logged"
stop_server

# ---- 7. backup of a running server under ingest, restore, same totals ------
DATA7="$WORK/data7"
start_server "$DATA7"
ingest_manifest "$WL"
"$UNHEX" upload --server "$URL" "$WORK/prog/p" >/dev/null || fail "upload"
BEFORE=$(field "$(tenant_stats anonymous)" profiles)
# Ingest goes on while the backup runs (its own tenant, so the numbers of
# the first tenant are exact).
( while [ ! -e "$WORK/stop-ingest" ]; do
	"$UNHEX" ingest --server "$URL" --tenant busy --name busy.cpu "$WL/$PPROF" >/dev/null 2>&1 || true
done ) &
LOOP_PID=$!
until [ "$(curl -s -H 'X-Scope-OrgID: busy' "$URL/api/v1/stats" | jq -r .profiles)" -gt 0 ] 2>/dev/null; do
	sleep 0.1
done
BUSY0=$(field "$(tenant_stats busy)" profiles)
"$UNHEX" backup --server "$URL" --to "$WORK/bk" >"$WORK/bk.json" || fail "backup: $(cat "$WORK/bk.json")"
BUSY1=$(field "$(tenant_stats busy)" profiles)
touch "$WORK/stop-ingest"
wait "$LOOP_PID"
note "backup: $(cat "$WORK/bk.json")"
[ -d "$WORK/bk" ] && [ ! -e "$WORK/bk.partial" ] || fail "backup directory"
"$UNHEX" verify --data "$WORK/bk" --quiet >"$WORK/verify-bk" || fail "verify of the backup: $(cat "$WORK/verify-bk")"
grep -q "1 debug files: 1 ok" "$WORK/verify-bk" || fail "the backup lacks the debug file: $(cat "$WORK/verify-bk")"
"$UNHEX" restore --from "$WORK/bk" --data "$WORK/restored" >"$WORK/restore.out" || fail "restore"
note "$(cat "$WORK/restore.out")"
stop_server
start_server "$WORK/restored"
[ "$(field "$(tenant_stats anonymous)" profiles)" = "$BEFORE" ] || fail "restored anonymous: $(tenant_stats anonymous), want $BEFORE profiles"
BUSY=$(field "$(tenant_stats busy)" profiles)
[ "$BUSY" -ge "$BUSY0" ] && [ "$BUSY" -le "$BUSY1" ] ||
	fail "restored busy: $BUSY profiles, acknowledged $BUSY0 before the backup and $BUSY1 after"
note "busy: $BUSY0 acknowledged before the backup, $BUSY in it, $BUSY1 after"
http GET "/api/v1/debuginfo/$(readelf -n "$WORK/prog/p" | sed -n 's/.*Build ID: //p')"
expect_status 200 "" "the restored store knows the debug file"
stop_server
# A stopped store, backed up with --data, restores to exactly the same numbers.
DISK=$("$UNHEX" stats --data "$DATA7" --json | jq -cS '[.tenants[] | del(.bytes, .head_profiles, .blocks)]')
"$UNHEX" backup --data "$DATA7" --to "$WORK/bk-off" >/dev/null || fail "backup --data"
"$UNHEX" restore --from "$WORK/bk-off" --data "$WORK/restored-off" >/dev/null || fail "restore of bk-off"
[ "$("$UNHEX" stats --data "$WORK/restored-off" --json | jq -cS '[.tenants[] | del(.bytes, .head_profiles, .blocks)]')" = "$DISK" ] ||
	fail "an offline backup restored other numbers"
"$UNHEX" restore --from "$WORK/bk-off" --data "$WORK/restored-off" 2>/dev/null && fail "restore over an existing directory"

# ---- 8. kill -9 during a backup leaves both sides usable -------------------
UNHEX_CRASHPOINT=backup-before-rename start_server "$DATA7"
"$UNHEX" backup --server "$URL" --to "$WORK/bk2" >/dev/null 2>&1 && fail "the crash point did not fire"
wait "$SERVER_PID" 2>/dev/null || true
SERVER_PID=
[ ! -e "$WORK/bk2" ] || fail "a backup killed before its end left $WORK/bk2"
[ -d "$WORK/bk2.partial" ] || fail "no partial directory: was the backup killed where meant?"
start_server "$DATA7"
[ "$(field "$(tenant_stats anonymous)" profiles)" = "$BEFORE" ] || fail "the source after a killed backup"
"$UNHEX" backup --server "$URL" --to "$WORK/bk2" >/dev/null || fail "backup after a killed one"
[ ! -e "$WORK/bk2.partial" ] || fail "the partial directory survived the next backup"
stop_server
"$UNHEX" verify --data "$WORK/bk2" --quiet >/dev/null || fail "verify of the second backup"

echo "PASS durability ($ACK profiles)"

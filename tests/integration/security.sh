#!/usr/bin/env bash
# security.sh - the server as an attacker meets it (docs/security.md), on the
# real `unhex serve` with a token file, real profiles of a program compiled
# here, real debug files, a fake debuginfod that redirects, and TLS.
#
#   1. Every route x {no credentials, another tenant's token, a token without
#      the scope, a token removed before SIGHUP} answers 401/403 and reads or
#      writes nothing: the stats and debug-info listings of both tenants are
#      the same afterwards, and no answer carries their data.
#   2. Tenants: a bound token cannot be pointed at another tenant (header or
#      Basic user), a repeated X-Scope-OrgID or Authorization is 400, Basic
#      with the tenant as user works as Bearer does.
#   3. Debug info: a forged file under the same build ID and malformed ELFs
#      (e_shstrndx 0xfffe, e_phnum 0xffff, a note past its end) are refused,
#      replacing needs admin and ?replace=true, and the frames keep their real
#      names; tenant B cannot list, fetch or replace A's files, nor get its
#      frames named from them; errors carry no server path; refused uploads
#      leave no records.
#   4. Outbound: an upstream's 302 to another loopback port is not followed
#      (the target sees no request), and 40 unknown build IDs in one profile
#      start at most the budgeted number of upstream lookups (one query's
#      allowance, and the server's per minute).
#   5. SIGHUP: a removed token stops working, a new one starts, and a
#      keep-alive connection survives the reload.
#   6. Open mode: refused on 0.0.0.0 without --auth.disabled; --upload-token
#      is refused with the migration hint.
#   7. TLS: the CLI (ingest, upload, query, stats) over https:// against the
#      server's own TLS, --cacert required; openssl s_client gets no TLS 1.0
#      or 1.1, nor a cipher without forward secrecy.
HERE=$(cd "$(dirname "$0")" && pwd)
. "$HERE/lib.sh"
need UNHEX
need_cmd python3
need_cmd openssl

PIDS=()
stop_helpers() {
	local p
	for p in "${PIDS[@]}"; do
		kill "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
	PIDS=()
}
# set +e: under errexit `(exit $rc)` would end the trap before cleanup,
# leaving the server running and the scratch directory behind.
trap 'rc=$?; stop_helpers; set +e; (exit $rc); cleanup' EXIT

# ---- a program, its debug files, forged and malformed ones -----------------
cat >"$WORK/prog.c" <<'EOF'
#include <stdio.h>
__attribute__((noinline)) unsigned hot_loop(unsigned x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 2654435761u + (unsigned)i;
	return x;
}
int main(void) { printf("%u\n", hot_loop(1)); return 0; }
EOF
cc -g -O1 -Wl,--build-id -o "$WORK/prog" "$WORK/prog.c"
ID=$(build_id "$WORK/prog")
[ -n "$ID" ] || fail "no build ID in prog"
# The same build ID, other bytes: the function renamed.
objcopy --strip-debug --redefine-sym hot_loop=PWNED "$WORK/prog" "$WORK/prog.forged"
[ "$(build_id "$WORK/prog.forged")" = "$ID" ] || fail "the forged copy lost the build ID"
python3 - "$WORK/prog" "$WORK" <<'EOF'
import struct, sys
src, out = sys.argv[1], sys.argv[2]
img = bytearray(open(src, 'rb').read())
def patched(name, fn):
    c = bytearray(img); fn(c); open(f"{out}/{name}", 'wb').write(c)
shoff, = struct.unpack_from('<Q', img, 0x28)
shnum, shstrndx = struct.unpack_from('<HH', img, 0x3c)
stroff, = struct.unpack_from('<Q', img, shoff + 64 * shstrndx + 24)
def section(name):
    for i in range(shnum):
        sh = shoff + 64 * i
        n, = struct.unpack_from('<I', img, sh)
        if img[stroff + n:].split(b'\0', 1)[0] == name.encode():
            return sh
patched('prog.shstrndx', lambda c: struct.pack_into('<H', c, 0x3e, 0xfffe))
patched('prog.phnum', lambda c: struct.pack_into('<H', c, 0x38, 0xffff))
note = struct.unpack_from('<Q', img, section('.note.gnu.build-id') + 24)[0]
patched('prog.note', lambda c: struct.pack_into('<I', c, note + 4, 0x100000))
EOF

# ---- profiles: raw addresses in prog, and many build IDs nobody has --------
# mkpprof OUT BUILD_ID:FILE_OFFSET...: a gzipped pprof, one sample per
# argument (a leaf in that build ID at that file offset, 10 ms of cpu).
mkpprof() {
	python3 - "$@" <<'EOF'
import gzip, sys, time
def varint(v):
    out = bytearray()
    while True:
        b = v & 0x7f; v >>= 7
        out.append(b | 0x80 if v else b)
        if not v: return bytes(out)
def key(f, w): return varint(f << 3 | w)
def vint(f, v): return key(f, 0) + varint(v)
def ld(f, b): return key(f, 2) + varint(len(b)) + b
out, specs = sys.argv[1], sys.argv[2:]
strings = ["", "cpu", "nanoseconds", "prog"]
def s(x):
    if x not in strings: strings.append(x)
    return strings.index(x)
msg = ld(1, vint(1, s("cpu")) + vint(2, s("nanoseconds")))
maps, locs, samples = b"", b"", b""
base = 0x7f0000000000
for i, spec in enumerate(specs, 1):
    bid, off = spec.split(":")
    start = base + i * 0x10000000
    maps += ld(3, vint(1, i) + vint(2, start) + vint(3, start + 0x1000000) + vint(4, 0)
               + vint(5, s("prog")) + vint(6, s(bid)))
    locs += ld(4, vint(1, i) + vint(2, i) + vint(3, start + int(off, 16)))
    samples += ld(2, ld(1, varint(i)) + ld(2, varint(10000000)))
msg += samples + maps + locs
msg += b"".join(ld(6, x.encode()) for x in strings)
msg += vint(9, time.time_ns() - 5 * 10**9) + vint(10, 10**9)
msg += ld(11, vint(1, s("cpu")) + vint(2, s("nanoseconds"))) + vint(12, 10000000)
open(out, "wb").write(gzip.compress(msg))
EOF
}
# The file offset of hot_loop, a few bytes in: where its samples land.
HOT=$(python3 - "$WORK/prog" <<'EOF'
import subprocess, sys
p = sys.argv[1]
sym = [l.split() for l in subprocess.run(["readelf", "-sW", p], capture_output=True, text=True).stdout.splitlines()]
v = next(int(x[1], 16) for x in sym if len(x) > 7 and x[7] == "hot_loop")
for l in subprocess.run(["readelf", "-lW", p], capture_output=True, text=True).stdout.splitlines():
    f = l.split()
    if f and f[0] == "LOAD" and "E" in f[6:]:
        off, va, memsz = int(f[1], 16), int(f[2], 16), int(f[5], 16)
        if va <= v < va + memsz:
            print("%x" % (v - va + off + 4)); break
EOF
)
[ -n "$HOT" ] || fail "no file offset for hot_loop"
mkpprof "$WORK/hot.pb.gz" "$ID:$HOT"
RANDOM_IDS=()
for i in $(seq 1 40); do
	RANDOM_IDS+=("$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n'):1000")
done
mkpprof "$WORK/many.pb.gz" "${RANDOM_IDS[@]}"
FEW_IDS=()
for i in 1 2 3; do
	FEW_IDS+=("$(head -c 20 /dev/urandom | od -An -tx1 | tr -d ' \n'):1000")
done
mkpprof "$WORK/few.pb.gz" "${FEW_IDS[@]}"

# ---- a fake debuginfod that redirects, and the place it points at ----------
# redirector PORTFILE TARGET_URL: answers every request 302 to TARGET_URL and
# counts them in PORTFILE.hits; catcher PORTFILE: answers 200 and counts.
helper() {
	python3 - "$@" <<'EOF' &
import http.server, sys, socketserver
mode, portfile = sys.argv[1], sys.argv[2]
target = sys.argv[3] if len(sys.argv) > 3 else ""
hits = portfile + ".hits"
open(hits, "w").close()
class H(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        with open(hits, "a") as f: f.write(self.path + "\n")
        if mode == "redirect":
            self.send_response(302); self.send_header("Location", target)
            self.send_header("Content-Length", "0"); self.end_headers()
        else:
            body = b"internal secret\n"
            self.send_response(200); self.send_header("Content-Length", str(len(body)))
            self.end_headers(); self.wfile.write(body)
    def log_message(self, *a): pass
s = socketserver.ThreadingTCPServer(("127.0.0.1", 0), H)
open(portfile, "w").write(str(s.server_address[1]))
s.serve_forever()
EOF
	PIDS+=($!)
}
wait_file() {
	local i
	for i in $(seq 1 600); do
		[ -s "$1" ] && return 0
		sleep 0.1
	done
	fail "$1 never appeared"
}
helper catch "$WORK/catch.port"
wait_file "$WORK/catch.port"
CATCH=$(cat "$WORK/catch.port")
helper redirect "$WORK/redir.port" "http://127.0.0.1:$CATCH/internal"
wait_file "$WORK/redir.port"
REDIR=$(cat "$WORK/redir.port")
# The catcher is reachable and the redirect works for a client that follows it.
[ "$(curl -sSL "http://127.0.0.1:$REDIR/buildid/00/debuginfo")" = "internal secret" ] ||
	fail "the redirect helpers do not work"
: >"$WORK/catch.port.hits"
: >"$WORK/redir.port.hits"

# ---- tokens --------------------------------------------------------------
TOK="$WORK/tokens"
newtok() { "$UNHEX" token new --tenant "$1" --scopes "$2" --name "$3" --append "$TOK"; }
A_ALL=$(newtok team-a ingest,query,upload,admin a-all)
A_INGEST=$(newtok team-a ingest a-ingest)
A_QUERY=$(newtok team-a query a-query)
A_UPLOAD=$(newtok team-a upload a-upload)
B_ALL=$(newtok team-b ingest,query,upload,admin b-all)
GONE=$(newtok team-a ingest,query,upload,admin gone)
OPS=$(newtok '*' ingest,query,upload,admin ops)
[ "$(stat -c %a "$TOK")" = 600 ] || fail "the token file is not 0600"
grep -q "$A_ALL" "$TOK" && fail "a plain token is in the token file"
note "$(grep -c sha256= "$TOK") tokens"

# ---- the server ------------------------------------------------------------
start_server "$WORK/data" --auth.tokens "$TOK" --debuginfod-urls "http://127.0.0.1:$REDIR" \
	--debuginfod-fetches-per-minute 5 --symbolize-budget 3s
LOG="$WORK/server.$SERVER_N.log"
log_has() { # PATTERN: waits for the server log to have it (60 s detects a hang)
	local i
	for i in $(seq 1 600); do
		grep -q "$1" "$LOG" && return 0
		sleep 0.1
	done
	return 1
}
bearer() { printf 'Authorization: Bearer %s' "$1"; }

# Data of both tenants to leak: a profile each, A's debug file.
http POST "/ingest?name=secret-a.cpu&format=pprof" -H "$(bearer "$A_ALL")" \
	--data-binary @"$WORK/hot.pb.gz"
expect_status 200 '"samples":' "team-a's profile"
http POST "/ingest?name=secret-b.cpu&format=pprof" -H "$(bearer "$B_ALL")" \
	--data-binary @"$WORK/hot.pb.gz"
expect_status 200 '"samples":' "team-b's profile"
http POST "/api/v1/debuginfo/$ID" -H "$(bearer "$A_UPLOAD")" --data-binary @"$WORK/prog"
expect_status 201 "\"buildId\":\"$ID\"" "team-a's debug file"

http GET "/pyroscope/label-values?label=__profile_type__" -H "$(bearer "$A_QUERY")"
expect_status 200 "" "team-a's profile types"
PTYPE=$(jq -r '.[]' <<<"$BODY" | grep -m1 ':cpu:nanoseconds') || fail "no cpu profile type: $BODY"
Q=$(jq -rn --arg s "$PTYPE{service_name=\"secret-a\"}" '$s|@uri')
QB=$(jq -rn --arg s "$PTYPE{service_name=\"secret-b\"}" '$s|@uri')
names_a() { # the frame names of team-a's flame graph
	wait_symbolized "$Q" now-1h now -H "$(bearer "$A_QUERY")"
	jq -r '.flamebearer.names[]' <<<"$BODY"
}
grep -qx hot_loop <<<"$(names_a)" || fail "team-a's frames are not named: $(names_a)"
note "team-a's frame is named hot_loop"

snapshot() { # what an attacker must not change: stats and listings of both tenants
	local t
	for t in "$A_ALL" "$B_ALL"; do
		http GET /api/v1/stats -H "$(bearer "$t")"
		counts "$BODY"
		http GET /api/v1/debuginfo -H "$(bearer "$t")"
		jq -c '[.[] | {buildId, sha256, shared}]' <<<"$BODY"
	done
	http GET /api/v1/debuginfo -H "$(bearer "$OPS")"
	jq -c '[.[] | {buildId, sha256}]' <<<"$BODY"
}
BEFORE=$(snapshot)

# ---- 1. every route x every way to be refused ------------------------------
PUSH='{"series":[{"labels":[{"name":"__name__","value":"process_cpu"},{"name":"service_name","value":"evil"}],"samples":[{"rawProfile":"'$(base64 -w0 "$WORK/hot.pb.gz")'"}]}]}'
DIFFQ="leftQuery=$Q&leftFrom=now-1h&leftUntil=now&rightQuery=$Q&rightFrom=now-1h&rightUntil=now"
# METHOD|PATH|NEED|BODY(@file, or text, or empty)|CONTENT-TYPE
ROUTES=(
	"POST|/ingest?name=evil.cpu&format=pprof|ingest|@$WORK/hot.pb.gz|"
	"POST|/pyroscope/ingest?name=evil.cpu&format=pprof|ingest|@$WORK/hot.pb.gz|"
	"POST|/push.v1.PusherService/Push|ingest|$PUSH|application/json"
	"POST|/v1development/profiles|ingest|{\"resourceProfiles\":[]}|application/json"
	"GET|/api/v1/stats|query||"
	"GET|/metrics|admin||"
	"POST|/api/v1/admin/backup?to=$WORK/sec-backup|admin||"
	"POST|/internal/v1/head-block?from_ns=0&until_ns=1&view_ns=0|query||application/octet-stream"
	"GET|/pyroscope/render?query=$Q&from=now-1h&until=now|query||"
	"GET|/pyroscope/render-diff?$DIFFQ|query||"
	"GET|/pyroscope/labels|query||"
	"GET|/pyroscope/label-values?label=service_name|query||"
	"GET|/api/v1/pprof?query=$Q&from=now-1h&until=now|query||"
	"GET|/api/v1/top?query=$Q&from=now-1h&until=now|query||"
	"GET|/api/v1/folded?query=$Q&from=now-1h&until=now|query||"
	"GET|/api/v1/diff-top?$DIFFQ|query||"
	"POST|/symbolz|query|0x1000|text/plain"
	"GET|/api/v1/debuginfo|query||"
	"GET|/api/v1/debuginfo/$ID|query||"
	"POST|/api/v1/debuginfo/$ID|upload|@$WORK/prog.forged|application/octet-stream"
	"POST|/api/v1/debuginfo/$ID?replace=true|admin|@$WORK/prog.forged|application/octet-stream"
	"POST|/api/v1/perfmap/4242|upload|7f0000001000 40 JS:*evil\n|text/plain"
	"POST|/debuginfo.v1alpha1.DebuginfoService/Upload/$ID|upload|@$WORK/prog.forged|application/octet-stream"
	"POST|/debuginfo.v1alpha1.DebuginfoService/ShouldInitiateUpload|upload|{}|application/json"
	"POST|/settings.v1.SettingsService/Get|query|{}|application/json"
	"POST|/settings.v1.SettingsService/Set|query|{\"setting\":{\"name\":\"x\",\"value\":\"evil\"}}|application/json"
	"GET|/api/v1/symbolization?query=$Q|query||"
	"GET|/api/v1/releases?service=secret-a&from=now-1h&until=now|query||"
	"GET|/api/v1/regressions?service=secret-a&baseline=a&candidate=b&from=now-1h&until=now|query||"
	"GET|/buildid/$ID/debuginfo|query||"
	"GET|/buildid/$ID/executable|query||"
	"GET|/|any||"
)
# Every Connect method the query module serves (its table in query/connect.c),
# and one it does not: the prefix route decides before the method is looked up.
SRC=$(cd "$HERE/../.." && pwd)
CONNECT_METHODS=$(sed -n 's/^[[:space:]]*{ "\([A-Z][A-Za-z]*\)", &querier__v1__.*/\1/p; s/^[[:space:]]*{ "\([A-Z][A-Za-z]*\)", &types__v1__.*/\1/p' \
	"$SRC/query/connect.c" | sort -u)
[ "$(wc -l <<<"$CONNECT_METHODS")" -ge 4 ] ||
	fail "found no Connect method table in query/connect.c: '$CONNECT_METHODS'"
for m in $CONNECT_METHODS NoSuchMethod; do
	ROUTES+=("POST|/querier.v1.QuerierService/$m|query|{}|application/json")
done
# Every file of the UI (web/ui, embedded at build time).
for f in "$SRC"/web/ui/*; do
	ROUTES+=("GET|/${f##*/}|any||")
done

# The route table of web/server.c: a route added there without a line in
# ROUTES fails here, so no route escapes the matrix.  "*" routes need both
# a GET and a POST line; a prefix route (ending in /) any path under it.
TABLE=$(sed -n '/^} routes\[\] = {/,/^};/s/^[[:space:]]*{ "\(\/[^"]*\)", "\([A-Z*]*\)", R_[A-Z]*, .*, \([A-Z_| ]*\) },$/\2 \1 \3/p' \
	"$SRC/web/server.c")
[ "$(wc -l <<<"$TABLE")" -ge 15 ] || fail "cannot read the route table of web/server.c: '$TABLE'"
# The scope a line of ROUTES may say for a route of the table, by its
# scopes and method: the matrix's token "without the scope" must lack
# what the server demands, or a route whose scope changed would still pass.
needs_of() { # METHOD SCOPES
	case "$1 $2" in
	*" WEB_SCOPE_INGEST") echo ingest ;;
	*" WEB_SCOPE_QUERY") echo query ;;
	*" WEB_SCOPE_ADMIN") echo admin ;;
	*" WEB_SCOPE_QUERY | WEB_SCOPE_UPLOAD") echo query ;; # the token lacking query lacks both
	*" WEB_SCOPE_UPLOAD") echo upload ;;
	*" SCOPE_ANY_TOKEN") echo any ;;
	"GET SCOPE_BY_METHOD") echo query ;;
	"POST SCOPE_BY_METHOD") echo "upload admin" ;;
	*) echo "?" ;;
	esac
}
covered() { # METHOD PATH NEEDS: 0 when a ROUTES line is that route; its NEED must be one of NEEDS
	local r m p need hit=1
	for r in "${ROUTES[@]}"; do
		IFS='|' read -r m p need _ <<<"$r"
		p=${p%%\?*}
		[ "$m" = "$1" ] || continue
		case $2 in
		*/) [[ $p == "$2"* ]] || continue ;;
		*) [ "$p" = "$2" ] || continue ;;
		esac
		[[ " $3 " == *" $need "* ]] ||
			fail "ROUTES says $m $p needs $need; web/server.c gives $2 the scopes '$3'"
		hit=0
	done
	return $hit
}
n_table=0
while read -r method path scopes; do
	n_table=$((n_table + 1))
	if [ "$scopes" = SCOPE_PUBLIC ]; then
		# Public routes answer without a token; they are listed here by name.
		[ "$method $path" = "GET /ready" ] ||
			fail "route $method $path is public: add it to the security suite's public checks"
		continue
	fi
	[ "$method" = "*" ] && set -- GET POST || set -- "$method"
	for m in "$@"; do
		covered "$m" "$path" "$(needs_of "$m" "$scopes")" ||
			fail "route $m $path of web/server.c is not in the security matrix (ROUTES)"
	done
done <<<"$TABLE"
note "route table: $n_table routes of web/server.c, ${#ROUTES[@]} requests in the matrix"
# A team-a token without the scope a route needs.
lacking() {
	case $1 in
	ingest) echo "$A_QUERY" ;;
	query) echo "$A_INGEST" ;;
	upload) echo "$A_QUERY" ;;
	admin) echo "$A_UPLOAD" ;;
	esac
}
try() { # EXPECT WHAT METHOD PATH BODY CTYPE [curl args]: one refused request
	local want=$1 what=$2 method=$3 path=$4 body=$5 ctype=$6 args=()
	shift 6
	[ -n "$ctype" ] && args+=(-H "Content-Type: $ctype")
	[ -n "$body" ] && args+=(--data-binary "$body")
	http "$method" "$path" "${args[@]}" "$@"
	[ "$STATUS" = "$want" ] || fail "$method $path ($what): expected $want, got $STATUS: $BODY"
	case "$BODY" in
	*secret-a* | *secret-b* | *hot_loop* | *flamebearer* | *"$ID\""* | *ELF*)
		fail "$method $path ($what) answered with data: $(head -c 200 <<<"$BODY")" ;;
	esac
	if [ "$want" = 401 ]; then
		grep -qi '^WWW-Authenticate: Basic' "$WORK/headers" ||
			fail "$method $path ($what): 401 without a Basic challenge"
	fi
}
# The lib's http() with the response headers kept for the challenge check.
http() {
	local method=$1 path=$2
	shift 2
	STATUS=$(curl -sS -D "$WORK/headers" -o "$WORK/body" -w '%{http_code}' -X "$method" "$@" \
		"$URL$path") || fail "curl $method $path failed"
	BODY=$(cat "$WORK/body")
}
run_matrix() { # REMOVED_TOKEN_CASE: 1 after the SIGHUP, else 0
	local r method path need body ctype n=0
	for r in "${ROUTES[@]}"; do
		IFS='|' read -r method path need body ctype <<<"$r"
		if [ "$1" = 1 ]; then
			try 401 "removed token" "$method" "$path" "$body" "$ctype" -H "$(bearer "$GONE")"
			n=$((n + 1))
			continue
		fi
		try 401 "no credentials" "$method" "$path" "$body" "$ctype"
		try 401 "unknown token" "$method" "$path" "$body" "$ctype" -H "Authorization: Bearer uhx_nope"
		try 401 "Basic, unknown token" "$method" "$path" "$body" "$ctype" -u "team-a:uhx_nope"
		try 403 "team-b's token for team-a" "$method" "$path" "$body" "$ctype" \
			-H "$(bearer "$B_ALL")" -H 'X-Scope-OrgID: team-a'
		try 403 "team-b's token as Basic for team-a" "$method" "$path" "$body" "$ctype" \
			-u "team-a:$B_ALL"
		if [ "$need" != any ]; then
			try 403 "no $need scope" "$method" "$path" "$body" "$ctype" \
				-H "$(bearer "$(lacking "$need")")"
		fi
		n=$((n + 1))
	done
	note "matrix: $n routes refused as expected$([ "$1" = 1 ] && echo ' (removed token)')"
}
run_matrix 0
# The token that is about to go still works.
http GET /api/v1/stats -H "$(bearer "$GONE")"
expect_status 200 '"tenant":"team-a"' "the token before its removal"

# ---- 5. SIGHUP: the token goes, a new one comes, connections stay ----------
NEW_TOKEN=$("$UNHEX" token new --tenant team-b --scopes query --name new 2>/dev/null)
export NEW_TOKEN
python3 - "$PORT" "$GONE" "$TOK" "$SERVER_PID" "$UNHEX" <<'EOF' || fail "the reload dropped or mishandled a keep-alive connection"
import os, signal, socket, subprocess, sys, time
port, gone, tokfile, pid, unhex = int(sys.argv[1]), sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
s = socket.create_connection(("127.0.0.1", port))
def ask(tok):
    s.sendall(("GET /api/v1/stats HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n" % tok).encode())
    data = b""
    while b"\r\n\r\n" not in data:
        data += s.recv(65536)
    head, rest = data.split(b"\r\n\r\n", 1)
    n = int([l.split(b":")[1] for l in head.split(b"\r\n") if l.lower().startswith(b"content-length")][0])
    while len(rest) < n:
        rest += s.recv(65536)
    return int(head.split()[1])
assert ask(gone) == 200
lines = [l for l in open(tokfile) if "name=gone" not in l]
new_line = subprocess.run([unhex, "token", "hash", "--tenant", "team-b", "--scopes", "query", "--name", "new"],
                          input=os.environ["NEW_TOKEN"], capture_output=True, text=True, check=True).stdout
open(tokfile + ".tmp", "w").write("".join(lines) + new_line)
os.chmod(tokfile + ".tmp", 0o600)
os.rename(tokfile + ".tmp", tokfile)
os.kill(pid, signal.SIGHUP)
# The reload is asynchronous (the signal thread); 60 s only detects a hang.
for _ in range(600):
    time.sleep(0.1)
    if ask(gone) == 401:
        break
else:
    sys.exit("the removed token still works")
assert ask(os.environ["NEW_TOKEN"]) == 200
print("-- SIGHUP: same connection, removed token 401, new token 200", file=sys.stderr)
EOF
# The log line follows the reload: a client may see the new table first.
log_has "SIGHUP: 7 tokens" || fail "no reload in the log: $(grep SIGHUP "$LOG")"
run_matrix 1
# A broken token file keeps the tokens in use.
cp "$TOK" "$WORK/tokens.good"
echo "not a token line" >>"$TOK"
kill -HUP "$SERVER_PID"
log_has "tokens loaded before stay in use" || fail "a broken token file was not reported"
http GET /api/v1/stats -H "$(bearer "$A_QUERY")"
expect_status 200 '"tenant":"team-a"' "tokens after a broken reload"
cp "$WORK/tokens.good" "$TOK"
[ "$(grep -c 'SIGHUP: 7 tokens' "$LOG")" = 1 ] || fail "unexpected reloads: $(grep SIGHUP "$LOG")"
kill -HUP "$SERVER_PID"
for i in $(seq 1 600); do
	[ "$(grep -c 'SIGHUP: 7 tokens' "$LOG")" = 2 ] && break
	sleep 0.1
done
[ "$(grep -c 'SIGHUP: 7 tokens' "$LOG")" = 2 ] || fail "the good token file was not read again"

# ---- 2. tenants -------------------------------------------------------------
http GET /api/v1/stats -u "team-a:$A_QUERY"
expect_status 200 '"tenant":"team-a"' "Basic auth, tenant as user"
http GET /api/v1/stats -u ":$A_QUERY"
expect_status 200 '"tenant":"team-a"' "Basic auth without a user: the token's tenant"
http GET /api/v1/stats -H "$(bearer "$A_QUERY")" -H 'X-Scope-OrgID: team-a'
expect_status 200 '"tenant":"team-a"' "the bound tenant named again"
http GET /api/v1/stats -H "$(bearer "$A_QUERY")" -H 'X-Scope-OrgID: team-a' -H 'X-Scope-OrgID: team-b'
expect_status 400 "more than once" "X-Scope-OrgID twice"
http GET /api/v1/stats -H "$(bearer "$OPS")" -H 'X-Scope-OrgID: team-b' -H 'X-Scope-OrgID: team-a'
expect_status 400 "more than once" "X-Scope-OrgID twice, all-tenants token"
http GET /api/v1/stats -H "$(bearer "$A_QUERY")" -H "$(bearer "$B_ALL")"
expect_status 400 "more than once" "Authorization twice"
http GET /api/v1/stats -H "$(bearer "$OPS")" -H 'X-Scope-OrgID: team-b'
expect_status 200 '"tenant":"team-b"' "an all-tenants token picks the tenant by header"
http GET /api/v1/stats -u "team-b:$OPS"
expect_status 200 '"tenant":"team-b"' "an all-tenants token picks the tenant by Basic user"
http GET "/pyroscope/render?query=$QB&from=now-1h&until=now" -H "$(bearer "$A_QUERY")"
expect_status 200 "" "team-a asks for team-b's service"
jq -e '.flamebearer.numTicks == 0' <<<"$BODY" >/dev/null || fail "team-a saw team-b's samples: $BODY"
http GET /ready
expect_status 200 ready "/ready needs no token"

# ---- 3. debug info ----------------------------------------------------------
# A forged file under A's build ID: refused for everyone without the rights.
http POST "/api/v1/debuginfo/$ID" -H "$(bearer "$A_UPLOAD")" --data-binary @"$WORK/prog.forged"
expect_status 409 "first upload wins" "forged file, same build ID, no replace"
http POST "/api/v1/debuginfo/$ID?replace=true" -H "$(bearer "$A_UPLOAD")" --data-binary @"$WORK/prog.forged"
expect_status 403 "admin" "forged file, replace without admin"
http POST "/api/v1/debuginfo/$ID" -H "$(bearer "$B_ALL")" --data-binary @"$WORK/prog.forged"
expect_status 409 "" "team-b uploads over team-a's file"
http POST "/api/v1/debuginfo/$ID?replace=true" -H "$(bearer "$B_ALL")" --data-binary @"$WORK/prog.forged"
expect_status 403 "all-tenants admin" "team-b replaces team-a's file"
for bad in shstrndx:"e_shstrndx 0xfffe" phnum:"e_phnum" note:"runs past its end"; do
	http POST "/api/v1/debuginfo/$ID?replace=true" -H "$(bearer "$A_ALL")" \
		--data-binary @"$WORK/prog.${bad%%:*}"
	expect_status 400 "${bad#*:}" "malformed ELF (${bad%%:*}) replacing a good file"
	case "$BODY" in *"$WORK"* | */data/* | */tmp/*) fail "an error names a server path: $BODY" ;; esac
done
# Refused uploads for build IDs nobody has leave no records.
for i in $(seq 1 20); do
	http POST "/api/v1/debuginfo/$(printf 'ab%036d' "$i")" -H "$(bearer "$A_UPLOAD")" \
		--data-binary @"$WORK/prog.c"
	[ "$STATUS" = 400 ] || fail "garbage upload $i: $STATUS $BODY"
done
grep -qx hot_loop <<<"$(names_a)" || fail "team-a's names changed after the attempts"
names_a | grep -q PWNED && fail "a forged name reached team-a's flame graph"
note "after forged and malformed uploads team-a's frame is still hot_loop"
# Tenant B sees nothing of A's file.
http GET /api/v1/debuginfo -H "$(bearer "$B_ALL")"
expect_status 200 "" "team-b's listing"
jq -e --arg id "$ID" 'all(.[]; .buildId != $id)' <<<"$BODY" >/dev/null ||
	fail "team-b lists team-a's build ID: $BODY"
# The missing list names build IDs of every tenant's profiles: all-tenants tokens only.
http GET "/api/v1/debuginfo?missing=1" -H "$(bearer "$B_ALL")"
expect_status 403 "all tenants" "team-b lists the build IDs every tenant's profiles miss"
http GET "/api/v1/debuginfo?missing=1" -H "$(bearer "$OPS")"
expect_status 200 "" "the all-tenants token's missing list"
http GET "/api/v1/debuginfo/$ID" -H "$(bearer "$B_ALL")"
expect_status 404 "is not known" "team-b reads team-a's record"
http GET "/buildid/$ID/debuginfo" -H "$(bearer "$B_ALL")"
expect_status 404 "" "team-b fetches team-a's debug file"
http GET "/buildid/$ID/debuginfo" -u "team-b:$B_ALL"
expect_status 404 "" "team-b fetches team-a's debug file (Basic)"
# Nor do team-b's queries name frames from it: team-b's profile has the
# same build ID, and its frame stays hex, as for a build ID nobody has.
wait_symbolized "$QB" now-1h now -H "$(bearer "$B_ALL")"
jq -r '.flamebearer.names[]' <<<"$BODY" | grep -qx hot_loop &&
	fail "team-b's flame graph is named from team-a's private file: $BODY"
jq -e --arg id "$ID" '[.symbolization.buildIds[] | select(.buildId == $id)][0].status == "not_found"' \
	<<<"$BODY" >/dev/null || fail "team-b's status of team-a's build ID: $(jq -c .symbolization <<<"$BODY")"
# A sees and fetches its own, byte for byte.
curl -sS -f -H "$(bearer "$A_QUERY")" -o "$WORK/fetched" "$URL/buildid/$ID/debuginfo" ||
	fail "team-a cannot fetch its debug file"
cmp -s "$WORK/fetched" "$WORK/prog" || fail "team-a fetched other bytes"
http GET "/api/v1/debuginfo/$ID" -H "$(bearer "$A_QUERY")"
expect_status 200 '"shared":false' "team-a reads its record"
[ "$(jq -r .sha256 <<<"$BODY")" = "$(sha256sum "$WORK/prog" | cut -d' ' -f1)" ] ||
	fail "the record's sha256 is not the file's: $BODY"

# ---- 1 (end). nothing of any tenant changed ---------------------------------
AFTER=$(snapshot)
[ "$BEFORE" = "$AFTER" ] || fail "refused requests changed something:
before: $BEFORE
after:  $AFTER"
note "stats and listings unchanged by every refused request"

# The replacement, done right, is logged with who and both hashes.
http POST "/api/v1/debuginfo/$ID?replace=true" -H "$(bearer "$A_ALL")" --data-binary @"$WORK/prog.forged"
expect_status 201 "" "team-a's admin replaces its own file"
grep -q "REPLACED debuginfo of $ID by token a-all, tenant team-a, from 127.0.0.1 at [0-9]* ms: sha256 $(sha256sum "$WORK/prog" | cut -d' ' -f1) -> $(sha256sum "$WORK/prog.forged" | cut -d' ' -f1)" "$LOG" ||
	fail "the replacement is not logged: $(grep REPLACED "$LOG")"
grep -qx PWNED <<<"$(names_a)" || fail "the replacement did not take"
http POST "/api/v1/debuginfo/$ID?replace=true" -H "$(bearer "$A_ALL")" --data-binary @"$WORK/prog"
expect_status 201 "" "and back"
grep -qx hot_loop <<<"$(names_a)" || fail "the file put back is not used"

# ---- 4. outbound --------------------------------------------------------------
# A build ID nobody has: looked up upstream, whose 302 points at the catcher.
# Ingest looks the binaries of earlier profiles up too, in the background and
# within the same budget (docs/symbolization.md, "Alerting before anyone
# looks"): count from here.
HITS0=$(wc -l <"$WORK/redir.port.hits")
T_BUDGET=$SECONDS
http POST "/ingest?name=redirected.cpu&format=pprof" -H "$(bearer "$OPS")" \
	--data-binary @"$WORK/many.pb.gz"
expect_status 200 '"samples":' "a profile of 40 unknown build IDs"
QR=$(jq -rn --arg s "$PTYPE{service_name=\"redirected\"}" '$s|@uri')
for i in 1 2 3; do
	http GET "/pyroscope/render?query=$QR&from=now-1h&until=now" -H "$(bearer "$OPS")"
	[ "$STATUS" = 200 ] || fail "render of the unknown build IDs: $STATUS $BODY"
	sleep 2
done
# team-b's queries have their own allowance, but the server's 5 a minute are spent.
http POST "/ingest?name=redirected-b.cpu&format=pprof" -H "$(bearer "$B_ALL")" \
	--data-binary @"$WORK/few.pb.gz"
expect_status 200 '"samples":' "team-b's profile of 3 unknown build IDs"
QRB=$(jq -rn --arg s "$PTYPE{service_name=\"redirected-b\"}" '$s|@uri')
http GET "/pyroscope/render?query=$QRB&from=now-1h&until=now" -H "$(bearer "$B_ALL")"
[ "$STATUS" = 200 ] || fail "team-b's render of unknown build IDs: $STATUS $BODY"
UPSTREAM=$(($(wc -l <"$WORK/redir.port.hits") - HITS0))
[ "$UPSTREAM" -ge 1 ] || fail "the upstream was never asked"
# The budget is 5 at once, then one more every 12 s: a slow run earns more.
BUDGET=$((5 + (SECONDS - T_BUDGET) / 12))
[ "$UPSTREAM" -le "$BUDGET" ] ||
	fail "40 unknown build IDs made $UPSTREAM upstream lookups (budget $BUDGET)"
[ ! -s "$WORK/catch.port.hits" ] ||
	fail "the redirect to 127.0.0.1:$CATCH was followed: $(cat "$WORK/catch.port.hits")"
http GET /metrics -H "$(bearer "$OPS")"
grep -q '^unhex_debuginfod_redirects_refused_total [1-9]' <<<"$BODY" ||
	fail "refused redirects not counted: $(grep redirects <<<"$BODY")"
grep -q '^unhex_debuginfod_fetches_total{result="rate_limited"} [1-9]' <<<"$BODY" ||
	fail "the budget was never reached: $(grep fetches_total <<<"$BODY")"
grep -q '^unhex_debuginfod_fetches_total{result="deferred"} [1-9]' <<<"$BODY" ||
	fail "a query of 40 unknown build IDs was not held to its allowance: $(grep fetches_total <<<"$BODY")"
note "outbound: $UPSTREAM upstream lookups for 40 build IDs, none reached 127.0.0.1:$CATCH"
# Records of the lookups are there for the all-tenants view only.
http GET /api/v1/debuginfo -H "$(bearer "$B_ALL")"
jq -e 'all(.[]; .source != "none" and .status == "ok")' <<<"$BODY" >/dev/null ||
	fail "team-b lists lookups it did not make: $BODY"
stop_server

# ---- 6. open mode -------------------------------------------------------------
set +e
"$UNHEX" serve --data "$WORK/open" --listen 0.0.0.0:0 >"$WORK/open.out" 2>"$WORK/open.err"
rc=$?
set -e
[ $rc -ne 0 ] || fail "an open server listened on 0.0.0.0"
grep -q "refusing to listen on 0.0.0.0:0 without authentication" "$WORK/open.err" ||
	fail "no reason for the refusal: $(cat "$WORK/open.err")"
set +e
"$UNHEX" serve --data "$WORK/open" --upload-token s3cret >"$WORK/open.out" 2>"$WORK/open.err"
rc=$?
set -e
[ $rc -eq 2 ] || fail "--upload-token exited $rc"
grep -q "unhex token hash" "$WORK/open.err" || fail "no migration hint: $(cat "$WORK/open.err")"
"$UNHEX" serve --data "$WORK/open" --listen 0.0.0.0:0 --auth.disabled >"$WORK/open.out" \
	2>"$WORK/open.err" &
OPEN_PID=$!
PIDS+=("$OPEN_PID")
wait_file "$WORK/open.out"
grep -q "AUTHENTICATION IS OFF" "$WORK/open.err" || fail "an open server does not say so"
note "open mode: refused on 0.0.0.0, allowed with --auth.disabled, and said loudly"
kill "$OPEN_PID"
wait "$OPEN_PID" || fail "the open server did not stop cleanly"
KEEP=()
for p in "${PIDS[@]}"; do
	[ "$p" = "$OPEN_PID" ] || KEEP+=("$p")
done
PIDS=("${KEEP[@]}")

# ---- 7. TLS -------------------------------------------------------------------
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=127.0.0.1 \
	-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
	-keyout "$WORK/key.pem" -out "$WORK/cert.pem" 2>"$WORK/openssl.log" ||
	fail "openssl req: $(cat "$WORK/openssl.log")"
# The background job opens its own redirections after the fork: create the
# file first, so that the loop below never reads before it exists.
: >"$WORK/tls.out"
"$UNHEX" serve --data "$WORK/tls" --listen 127.0.0.1:0 --auth.tokens "$TOK" \
	--tls.cert "$WORK/cert.pem" --tls.key "$WORK/key.pem" >"$WORK/tls.out" 2>"$WORK/tls.err" &
SERVER_PID=$!
for i in $(seq 1 600); do
	TURL=$(sed -n 's/^unhex: listening on \(https:[^ ]*\)$/\1/p' "$WORK/tls.out")
	[ -n "$TURL" ] && break
	kill -0 "$SERVER_PID" 2>/dev/null || fail "the TLS server exited: $(cat "$WORK/tls.err")"
	sleep 0.1
done
[ -n "$TURL" ] || fail "the TLS server did not print an https:// URL"
TPORT=${TURL##*:}
printf '%s\n' "$A_ALL" >"$WORK/a.token"
chmod 600 "$WORK/a.token"
export UNHEX_TOKEN_FILE="$WORK/a.token"
set +e
"$UNHEX" stats --server "$TURL" >"$WORK/out" 2>"$WORK/err"
rc=$?
set -e
[ $rc -eq 1 ] && grep -q TLS "$WORK/err" || fail "https without --cacert: exit $rc $(cat "$WORK/err")"
OUT=$("$UNHEX" ingest --server "$TURL" --cacert "$WORK/cert.pem" --name 'tlsapp.cpu{env=test}' \
	"$WORK/hot.pb.gz") || fail "ingest over https: $OUT"
case "$OUT" in *"1 of 1 files accepted"*) ;; *) fail "ingest over https: $OUT" ;; esac
OUT=$("$UNHEX" upload --server "$TURL" --cacert "$WORK/cert.pem" "$WORK/prog") ||
	fail "upload over https: $OUT"
case "$OUT" in *"$ID uploaded"*) ;; *) fail "upload over https: $OUT" ;; esac
OUT=$("$UNHEX" upload --server "$TURL" --cacert "$WORK/cert.pem" "$WORK/prog") ||
	fail "second upload over https: $OUT"
case "$OUT" in *"already uploaded"*) ;; *) fail "second upload over https: $OUT" ;; esac
for i in $(seq 1 30); do
	OUT=$("$UNHEX" query top --server "$TURL" --cacert "$WORK/cert.pem" \
		--query "$PTYPE{service_name=\"tlsapp\"}" \
		--from now-1h) || fail "query over https: $OUT"
	grep -q hot_loop <<<"$OUT" && break
	sleep 1
done
grep -q hot_loop <<<"$OUT" || fail "query top over https lacks hot_loop: $OUT"
OUT=$("$UNHEX" stats --server "$TURL" --cacert "$WORK/cert.pem" --json) || fail "stats over https: $OUT"
[ "$(jq -r .tenant <<<"$OUT")" = team-a ] || fail "stats over https: $OUT"
unset UNHEX_TOKEN_FILE
STATUS=$(curl -sS -o /dev/null -w '%{http_code}' --cacert "$WORK/cert.pem" "$TURL/api/v1/stats")
[ "$STATUS" = 401 ] || fail "https without a token: $STATUS"
note "CLI over https: ingest, upload, query top and stats; 401 without a token"
for v in tls1 tls1_1; do
	if echo | timeout 60 openssl s_client -connect "127.0.0.1:$TPORT" "-$v" \
		-cipher 'DEFAULT@SECLEVEL=0' >"$WORK/s_client.$v" 2>&1; then
		grep -q 'Cipher is (NONE)' "$WORK/s_client.$v" ||
			fail "the server speaks $v: $(grep -E 'Protocol|Cipher' "$WORK/s_client.$v")"
	fi
	grep -qE 'alert protocol version|unsupported protocol' \
		"$WORK/s_client.$v" || fail "$v was not refused: $(tail -5 "$WORK/s_client.$v")"
done
for v in tls1_2 tls1_3; do
	echo | timeout 60 openssl s_client -connect "127.0.0.1:$TPORT" "-$v" \
		>"$WORK/s_client.$v" 2>&1 || fail "$v handshake failed: $(tail -5 "$WORK/s_client.$v")"
	note "$v: $(grep -m1 -oE 'Cipher is [^ ]+' "$WORK/s_client.$v")"
done
grep -q 'Cipher is ECDHE-' "$WORK/s_client.tls1_2" || fail "TLS 1.2 without ECDHE"
if echo | timeout 60 openssl s_client -connect "127.0.0.1:$TPORT" -tls1_2 \
	-cipher 'AES128-SHA:AES256-GCM-SHA384:@SECLEVEL=0' >"$WORK/s_client.rsa" 2>&1; then
	grep -q 'Cipher is (NONE)' "$WORK/s_client.rsa" || fail "a cipher without forward secrecy was accepted"
fi
note "openssl s_client: TLS 1.0 and 1.1 refused, RSA key exchange refused"
kill "$SERVER_PID"
wait "$SERVER_PID" || fail "the TLS server did not stop cleanly"
SERVER_PID=
note "security: all checks passed"

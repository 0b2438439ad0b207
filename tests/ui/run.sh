#!/usr/bin/env bash
# run.sh BUILD_DIR - the browser tests of the UI against the real server.
#
# Installs what the tests need (Debian chromium, playwright-core from
# package-lock.json), makes real profiles with the workload generator (two
# services, three instances, 20 minutes ending now: version 1.4 then 1.5, raw
# addresses, no debug info uploaded), starts `unhex serve` on 127.0.0.1:0 with
# a fresh data dir and --preload, runs ui.test.mjs with node's test runner,
# saves screenshots (to the temporary dir, so a test run leaves the checkout
# alone; SHOT_DIR=docs/img refreshes the documentation's), and always stops
# the server and removes the temporary files.  A second server with a token
# file serves the same profiles to auth.test.mjs (the UI behind Basic auth).
#   env: SHOT_DIR, CHROMIUM (default /usr/bin/chromium).
# The server serves the UI embedded in the binary at build time: rebuild
# after editing web/ui.
set -euo pipefail

# The server has no upstream: a shell's DEBUGINFOD_URLS would become its
# default (as in tests/integration/lib.sh).
unset DEBUGINFOD_URLS
BUILD=${1:?usage: tests/ui/run.sh BUILD_DIR}
BUILD=$(cd "$BUILD" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
UNHEX=$BUILD/cli/unhex
WORKLOAD=$BUILD/bench/unhex-workload

for b in "$UNHEX" "$WORKLOAD"; do
  [ -x "$b" ] || { echo "ui: $b not built" >&2; exit 1; }
done

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ -z "${CHROMIUM:-}" ]; then
  if ! command -v chromium >/dev/null 2>&1; then
    echo "ui: installing chromium (Debian package)" >&2
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends chromium >/dev/null
  fi
  CHROMIUM=$(command -v chromium)
fi
for tool in node npm; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "ui: installing nodejs and npm (Debian packages)" >&2
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends nodejs npm >/dev/null
  fi
done
if [ ! -f "$HERE/node_modules/playwright-core/package.json" ] ||
   ! grep -q "\"version\": \"$(sed -n 's/.*"playwright-core": "\(.*\)".*/\1/p' "$HERE/package.json")\"" \
        "$HERE/node_modules/playwright-core/package.json"; then
  (cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error)
fi

TMP=$(mktemp -d /tmp/unhex-ui.XXXXXX)
PID=""
AUTH_PID=""
stop() {
  if [ -n "$1" ] && kill -0 "$1" 2>/dev/null; then
    kill -TERM "$1" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$1" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$1" 2>/dev/null || true
  fi
}
cleanup() {
  stop "$PID"
  stop "$AUTH_PID"
  rm -rf "$TMP"
}
trap cleanup EXIT

# Symbol files for every binary but libssl, as `make run` does: named frames,
# and one build ID the banner must explain.
"$WORKLOAD" --out "$TMP/profiles" --services 2 --instances 3 --minutes 20 --end now \
  --debug-dir "$TMP/debug" --quiet
mkdir -p "$TMP/debuginfo"
awk -F'\t' '$3 !~ /libssl/ { print $1 }' "$TMP/debug/manifest.tsv" |
  while read -r f; do cp "$TMP/debug/$f" "$TMP/debuginfo/"; done

"$UNHEX" serve --listen 127.0.0.1:0 --data "$TMP/data" --preload "$TMP/profiles" \
  --preload-debuginfo "$TMP/debuginfo" >"$TMP/serve.out" 2>"$TMP/serve.err" &
PID=$!

# The same profiles behind a token file: one token for their tenant, one
# bound to another tenant.
AUTH_TOKEN=$("$UNHEX" token new --tenant anonymous --scopes query --name ui --append "$TMP/tokens")
OTHER_TOKEN=$("$UNHEX" token new --tenant other-team --scopes query --name other \
  --append "$TMP/tokens")
"$UNHEX" serve --listen 127.0.0.1:0 --data "$TMP/data-auth" --preload "$TMP/profiles" \
  --preload-debuginfo "$TMP/debuginfo" --auth.tokens "$TMP/tokens" \
  >"$TMP/auth.out" 2>"$TMP/auth.err" &
AUTH_PID=$!

url_of() { # OUT ERR PID: the URL a server printed
  local u=""
  for _ in $(seq 1 600); do
    u=$(sed -n 's/^unhex: listening on \(http:[^ ]*\).*/\1/p' "$1" | head -n1)
    [ -n "$u" ] && break
    kill -0 "$3" 2>/dev/null || { echo "ui: unhex serve exited:" >&2; cat "$2" >&2; exit 1; }
    sleep 0.1
  done
  [ -n "$u" ] || { echo "ui: unhex serve did not print its URL" >&2; cat "$2" >&2; exit 1; }
  echo "$u"
}
URL=$(url_of "$TMP/serve.out" "$TMP/serve.err" "$PID")
AUTH_URL=$(url_of "$TMP/auth.out" "$TMP/auth.err" "$AUTH_PID")
echo "ui: server at $URL, with a token file at $AUTH_URL" >&2

# Each test has its own bound in the files (T). --test-timeout bounds each
# test FILE as well as each test in it: the browser tests take ~15 s on an
# idle machine but several times that on a loaded 2-core one, so the bound
# is a hang detector, not a speed check (speed is measured in bench/, never
# asserted in tests).
set +e
UNHEX_URL="$URL" CHROMIUM="$CHROMIUM" SHOT_DIR="${SHOT_DIR:-$TMP/shots}" \
  UNHEX_AUTH_URL="$AUTH_URL" UNHEX_AUTH_TENANT=anonymous UNHEX_AUTH_TOKEN="$AUTH_TOKEN" \
  UNHEX_OTHER_TOKEN="$OTHER_TOKEN" \
  node --test --test-concurrency=1 --test-timeout=600000 "$HERE/model.test.mjs" "$HERE/ui.test.mjs" \
  "$HERE/auth.test.mjs"
rc=$?
set -e
if [ $rc -ne 0 ]; then
  echo "ui: server log (last 40 lines):" >&2
  tail -n 40 "$TMP/serve.err" >&2 || true
  echo "ui: log of the server with tokens (last 20 lines):" >&2
  tail -n 20 "$TMP/auth.err" >&2 || true
fi
exit $rc

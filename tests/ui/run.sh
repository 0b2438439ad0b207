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
# the server and removes the temporary files.
#   env: SHOT_DIR, CHROMIUM (default /usr/bin/chromium).
# The server serves the UI embedded in the binary at build time: rebuild
# after editing web/ui.
set -euo pipefail

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
cleanup() {
  if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then
    kill -TERM "$PID" 2>/dev/null || true
    for _ in $(seq 1 50); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
    kill -KILL "$PID" 2>/dev/null || true
  fi
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

URL=""
for _ in $(seq 1 600); do
  URL=$(sed -n 's/^unhex: listening on \(http:[^ ]*\).*/\1/p' "$TMP/serve.out" | head -n1)
  [ -n "$URL" ] && break
  kill -0 "$PID" 2>/dev/null || { echo "ui: unhex serve exited:" >&2; cat "$TMP/serve.err" >&2; exit 1; }
  sleep 0.1
done
[ -n "$URL" ] || { echo "ui: unhex serve did not print its URL" >&2; cat "$TMP/serve.err" >&2; exit 1; }
echo "ui: server at $URL" >&2

# --test-timeout bounds each test FILE as well as each test in it: the
# sixteen browser tests take ~15 s on an idle machine but several times
# that on a loaded 2-core one, so the bound is a hang detector, not a
# speed check (speed is measured in bench/, never asserted in tests).
set +e
UNHEX_URL="$URL" CHROMIUM="$CHROMIUM" SHOT_DIR="${SHOT_DIR:-$TMP/shots}" \
  node --test --test-concurrency=1 --test-timeout=600000 "$HERE/model.test.mjs" "$HERE/ui.test.mjs"
rc=$?
set -e
if [ $rc -ne 0 ]; then
  echo "ui: server log (last 40 lines):" >&2
  tail -n 40 "$TMP/serve.err" >&2 || true
fi
exit $rc

#!/usr/bin/env bash
# run.sh URL TENANT PROTO_DIR START_MS END_MS STEP WORK: installs the pinned
# connect-es packages (npm ci, once) and runs client.mjs against URL; the
# points land in WORK/es.sum.json and WORK/es.sum.proto.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
URL=$1 TENANT=$2 PROTO_DIR=$3 START=$4 END=$5 STEP=$6 WORK=$7
if [ ! -f "$HERE/node_modules/@connectrpc/connect/package.json" ]; then
	(cd "$HERE" && npm ci --no-audit --no-fund --loglevel=error) >&2
fi
protoc --proto_path="$PROTO_DIR" --proto_path="$HERE" --include_imports \
	--descriptor_set_out="$WORK/service.desc" "$HERE/service.proto"
node "$HERE/client.mjs" "$URL" "$TENANT" "$WORK/service.desc" "$START" "$END" "$STEP" "$WORK/es.sum"

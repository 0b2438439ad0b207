#!/usr/bin/env bash
# pprof_go.sh PROG - the exported pprof read by the real `go tool pprof`:
# -raw must list samples summing to the merged total, -top must succeed.
set -euo pipefail
prog=$1
dir=$(mktemp -d /tmp/unhex-pprof-go-XXXXXX)
trap 'rm -rf "$dir"' EXIT
export GOCACHE="$dir/gocache" GOPATH="$dir/gopath" HOME="$dir"
want=$("$prog" "$dir/merged.pb.gz")
go tool pprof -raw "$dir/merged.pb.gz" >"$dir/raw.txt"
got=$(awk '/^Samples:/{s=1;next} /^Locations/{s=0} s && $1 ~ /^[0-9]+:$/ {sub(":","",$1); t+=$1} END{print t+0}' "$dir/raw.txt")
grep -q "abcd01" "$dir/raw.txt" || { echo "build ID abcd01 missing from -raw"; exit 1; }
go tool pprof -top "$dir/merged.pb.gz" >"$dir/top.txt"
grep -q "serve" "$dir/top.txt" || { echo "-top lacks serve"; cat "$dir/top.txt"; exit 1; }
if [ "$got" != "$want" ]; then
  echo "go tool pprof -raw total $got, want $want"; cat "$dir/raw.txt"; exit 1
fi
echo "ok: go tool pprof total $got"

#!/usr/bin/env bash
# Installs every Debian package unhex builds, tests or benchmarks with.
# Idempotent: when everything is present it returns without touching apt.
set -euo pipefail

# ceph-mon, ceph-osd, radosgw: the throw-away Ceph RGW of the object-storage
# tests (tests/integration/rgw.sh).
# libssl-dev: libcrypto (SHA-256 of tokens and debug files) and the unversioned
# libssl.so / libcrypto.so that Debian's civetweb loads at run time for TLS.
PACKAGES=(
  build-essential cmake pkg-config git curl ca-certificates python3
  librocksdb-dev libprotobuf-c-dev protobuf-c-compiler libcivetweb-dev
  libpcre2-dev libdw-dev libelf-dev libdebuginfod-dev libzstd-dev zlib1g-dev libdeflate-dev libiberty-dev
  libcmocka-dev clang libclang-rt-14-dev libcurl4-gnutls-dev libssl-dev
  elfutils binutils linux-perf google-perftools libgoogle-perftools-dev
  golang-go jq g++ llvm debuginfod rustc time valgrind dwz protobuf-compiler socat openssl
  openjdk-17-jdk-headless prometheus graphviz nodejs
  ceph-mon ceph-osd radosgw
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "deps: installing ${missing[*]}"
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null

# shellcheck shell=bash
# lib_rgw.sh - sourced by the bench scripts that run against a real Ceph
# RGW on loopback (s3_query.sh, ingest_scale.sh) once B (the build dir),
# HERE (bench/) and OUT are set and their binaries checked: makes OUT
# afresh, sources tests/integration's lib.sh (WORK, fail, note) and rgw.sh
# (exits when the Ceph packages are missing) and lib_bench.sh, and prints
# the machine.  The caller then sets its EXIT trap (rgw_stop, then cleanup).

rm -rf "$OUT"
mkdir -p "$OUT"
# rgw.sh wants lib.sh's WORK, fail and note; lib.sh's EXIT trap removes WORK.
export UNHEX=$B/cli/unhex
# shellcheck source=tests/integration/lib.sh
. "$HERE/../tests/integration/lib.sh"
# shellcheck source=tests/integration/rgw.sh
. "$HERE/../tests/integration/rgw.sh"
need_rgw
# shellcheck source=bench/lib_bench.sh
. "$HERE/lib_bench.sh"

echo "== machine" >&2
echo "   $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), nproc $(nproc), load $(cut -d' ' -f1-3 /proc/loadavg)" >&2

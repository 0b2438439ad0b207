#!/usr/bin/env bash
# ingest_scale.sh - two ingesters against one (issue 12's target: two
# ingest >= 1.6x what one does).  The same pre-generated workload (gzipped
# pprof files of unhex-workload: the client only reads and sends them) is
# pushed as fast as PARALLEL `unhex ingest` processes can, (a) all to one
# `unhex serve --target ingester`, (b) series name by series name
# round-robin to two, each on a fresh data directory and a fresh bucket of
# a real Ceph RGW on loopback (tests/integration/rgw.sh).  The same number
# of client processes (connections) in both.  RUNS runs of each, alternated.
#
# Per run: wall time, acknowledged profiles and samples (the sums of the
# 200 answers) per second, each server's user + system CPU
# (/proc/PID/stat) and the samples per server CPU-second, the clients' CPU
# (the script's waited-for children, /proc/self/stat), the machine's idle
# time (/proc/stat) and load average; for the single ingester, its threads
# how many of them used CPU and the busiest one's share.  Prints Markdown
# for bench/RESULTS.md ("Two ingesters against one").
#
# With CPU_QUOTA=C each ingester gets a CPU budget of its own, as it would
# on its own machine or in a container with a CPU limit: it runs in a
# cgroup-v1 cpu cgroup of its own with a CFS quota of C cores (period
# 100 ms) and the largest cpu.shares, so that other work on the machine
# cannot take its budget away (the clients and RGW are not limited).  The
# script fails when it cannot make the cgroups (it needs root and cgroup v1
# at /sys/fs/cgroup/cpu), checks that each ingester runs in its cgroup,
# prints each one's throttled periods (cpu.stat) and share of its budget
# used, and removes the cgroups at exit.
#
#   bash bench/ingest_scale.sh BUILD_DIR [OUT_DIR]    (OUT_DIR: bench/out-scale)
#   env: RUNS=3 PARALLEL=8
#        WORKLOAD=DIR   reuse an unhex-workload directory (else the bench
#                       shape: 1 service x 20 instances, 60 minutes, seed 1)
#        CPU_QUOTA=C    cores per ingester, e.g. 0.5 (default: no limit)
# Needs the Ceph packages (ceph-mon ceph-osd radosgw) and curl.
set -euo pipefail

B=$(cd "${1:?usage: ingest_scale.sh BUILD_DIR [OUT_DIR]}" && pwd)
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${2:-$HERE/out-scale}
RUNS=${RUNS:-3}
PARALLEL=${PARALLEL:-8}
TICK=$(getconf CLK_TCK)

for bin in bench/unhex-workload cli/unhex; do
	[ -x "$B/$bin" ] || { echo "ingest_scale.sh: $B/$bin is missing; build first" >&2; exit 1; }
done
command -v curl >/dev/null || { echo "ingest_scale.sh: curl is needed" >&2; exit 1; }
QUOTA=${CPU_QUOTA:-}
CG_ROOT=/sys/fs/cgroup/cpu
CG_PREFIX=unhex-scale-$$
if [ -n "$QUOTA" ]; then
	awk -v q="$QUOTA" -v n="$(nproc)" 'BEGIN {exit !(q ~ /^[0-9]*\.?[0-9]+$/ && q >= 0.01 && q <= n)}' ||
		{ echo "ingest_scale.sh: CPU_QUOTA=$QUOTA: want cores per ingester, 0.01 to $(nproc)" >&2; exit 1; }
	if ! [ -f "$CG_ROOT/cpu.cfs_quota_us" ] || ! mkdir "$CG_ROOT/$CG_PREFIX-check" 2>/dev/null; then
		echo "ingest_scale.sh: CPU_QUOTA needs a writable cgroup-v1 cpu controller at $CG_ROOT (root, cgroup v1); it is not" >&2
		exit 1
	fi
	rmdir "$CG_ROOT/$CG_PREFIX-check"
fi
# shellcheck source=bench/lib_rgw.sh
. "$HERE/lib_rgw.sh"

# The ingesters of the current run, and with CPU_QUOTA their cgroups.
PIDS=()
CGROUPS=()
stop_ingesters() {
	local p
	for p in "${PIDS[@]}"; do
		SERVER_PID=$p
		bench_stop_server
	done
	PIDS=()
}
# remove_cgroups: ends what still runs in them (a server that did not
# start), then removes them.
remove_cgroups() {
	local cg p procs
	for cg in "${CGROUPS[@]}"; do
		[ -d "$cg" ] || continue
		mapfile -t procs <"$cg/cgroup.procs"
		for p in "${procs[@]}"; do
			kill "$p" 2>/dev/null || true
			wait "$p" 2>/dev/null || true
		done
		rmdir "$cg" 2>/dev/null || { sleep 1; rmdir "$cg"; } ||
			echo "ingest_scale.sh: could not remove the cgroup $cg" >&2
	done
	CGROUPS=()
}
trap 'rc=$?; set +e; stop_ingesters; remove_cgroups; rgw_stop; (exit $rc); cleanup' EXIT

# make_cgroup NAME: a cpu cgroup with the quota of CPU_QUOTA; sets
# SERVER_CGROUP to it.
make_cgroup() {
	local cg=$CG_ROOT/$CG_PREFIX-$1
	mkdir "$cg"
	CGROUPS+=("$cg")
	echo 100000 >"$cg/cpu.cfs_period_us"
	awk -v q="$QUOTA" 'BEGIN {printf "%d\n", q * 100000}' >"$cg/cpu.cfs_quota_us"
	# The largest weight: the budget is the ingester's whatever else runs.
	echo 262144 >"$cg/cpu.shares"
	SERVER_CGROUP=$cg
}
# in_cgroup PID CGROUP: exits 1 unless PID runs in CGROUP (/proc/PID/cgroup).
in_cgroup() {
	local at
	at=$(awk -F: '$2 ~ /(^|,)cpu(,|$)/ {print $3}' "/proc/$1/cgroup")
	[ "$CG_ROOT$at" = "$2" ] ||
		{ echo "ingest_scale.sh: ingester $1 runs in the cpu cgroup $at, not $2" >&2; exit 1; }
}
# throttled CGROUP: "throttled periods/periods throttled-seconds" of its cpu.stat.
throttled() {
	awk '{v[$1] = $2} END {printf "%d/%d %.2f", v["nr_throttled"], v["nr_periods"], v["throttled_time"] / 1e9}' "$1/cpu.stat"
}

if [ -n "${WORKLOAD:-}" ]; then
	WL=$(cd "$WORKLOAD" && pwd)
else
	WL=$OUT/workload
	echo "== workload: the bench shape" >&2
	"$B/bench/unhex-workload" --out "$WL" --services 1 --instances 20 --minutes 60 \
		--end 1767225600 --seed 1 --quiet
fi
FILES=$(grep -cv -e '^#' -e '^$' "$WL/manifest.tsv")
NAMES=$(cut -f2 "$WL/manifest.tsv" | sort -u | wc -l)
echo "   $FILES files, $NAMES series names, $PARALLEL clients at once" >&2

echo "== RGW on loopback" >&2
rgw_start

# children_ticks: the CPU of this script's waited-for children (the clients).
children_ticks() { awk '{sub(/.*\) /, ""); print $14 + $15}' /proc/$$/stat; }
# ceph_ticks: the CPU of the Ceph daemons (monitor, OSD, radosgw; they
# daemonize, so they are not the script's children).
ceph_ticks() {
	local f t=0
	for f in "$RGW_DIR"/run/*.pid; do t=$((t + $(cpu_ticks "$(cat "$f")"))); done
	echo "$t"
}
# machine_ticks: "busy idle" ticks of all CPUs (idle includes iowait).
machine_ticks() { awk '$1 == "cpu" {print $2 + $3 + $4 + $7 + $8 + $9, $5 + $6}' /proc/stat; }
# thread_ticks PID: "tid ticks" of each of its threads.
thread_ticks() {
	local t
	for t in /proc/"$1"/task/*; do
		echo "${t##*/} $(awk '{sub(/.*\) /, ""); print $12 + $13}' "$t/stat" 2>/dev/null || echo 0)"
	done
}

# run K N: ingest the workload into K ingesters (run number N); appends a
# row to $OUT/rows.tsv.
run() {
	local k=$1 n=$2 tag="k$1-r$2" i urls="" c0 c1 m0 m1 l0 g0 g1 s0=() s1=() cpu="" thr="" t
	rgw_s3 "unhex-scale-$tag"
	for i in $(seq 1 "$k"); do
		SERVER_CGROUP=
		[ -z "$QUOTA" ] || make_cgroup "$tag-$i"
		bench_start_server "$OUT/$tag-$i" "$OUT/$tag-$i.log" --target ingester "${S3[@]}"
		PIDS+=("$SERVER_PID")
		urls+="$URL "
		[ -z "$QUOTA" ] || in_cgroup "$SERVER_PID" "$SERVER_CGROUP"
	done
	SERVER_PID=
	SERVER_CGROUP=
	for i in "${!PIDS[@]}"; do s0[i]=$(cpu_ticks "${PIDS[i]}"); done
	[ "$k" != 1 ] || thread_ticks "${PIDS[0]}" >"$OUT/$tag.threads0"
	l0=$(load1)
	c0=$(children_ticks)
	g0=$(ceph_ticks)
	read -r m0 i0 < <(machine_ticks)
	bench_ingest "$WL" "$WL/manifest.tsv" "$tag" "$PARALLEL" "$urls"
	read -r m1 i1 < <(machine_ticks)
	g1=$(ceph_ticks)
	c1=$(children_ticks)
	for i in "${!PIDS[@]}"; do
		s1[i]=$(cpu_ticks "${PIDS[i]}")
		cpu+="$(awk -v a="${s0[i]}" -v b="${s1[i]}" -v t="$TICK" 'BEGIN {printf "%.2f", (b - a) / t}') "
	done
	# The cgroups are fresh, so their counters are the run's (and the
	# server's start, a few periods).
	for t in "${CGROUPS[@]}"; do thr+="$(throttled "$t"),"; done
	if [ "$k" = 1 ]; then
		thread_ticks "${PIDS[0]}" >"$OUT/$tag.threads1"
		# Threads that used CPU over the run, and the busiest one's share.
		BUSY=$(awk -v total="$((s1[0] - s0[0]))" 'NR == FNR {t0[$1] = $2; next}
			{d = $2 - t0[$1]; if (d > 0) n++; if (d > m) m = d}
			END {printf "%d used CPU, the busiest %.0f %% of it", n, (total > 0 ? 100 * m / total : 0)}' \
			"$OUT/$tag.threads0" "$OUT/$tag.threads1")
		THREADS=$(wc -l <"$OUT/$tag.threads1")
		echo "   one ingester: $THREADS threads, $BUSY" >&2
	fi
	stop_ingesters
	remove_cgroups
	rm -rf "$OUT/$tag"-*/
	printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$k" "$n" "$INGEST_S" \
		"$INGEST_FAILED" "$INGEST_PROFILES" "$INGEST_PAIRS" "$cpu" \
		"$((c1 - c0))" "$((m1 - m0))" "$((i1 - i0))" "$l0" "${thr%,}" "$((g1 - g0))" >>"$OUT/rows.tsv"
	echo "   $k ingester(s), run $n: ${INGEST_S}s, $INGEST_FAILED failed, $INGEST_PROFILES profiles, $INGEST_PAIRS samples, server CPU $cpu s, load $l0${QUOTA:+, throttled ${thr%,}}" >&2
}

: >"$OUT/rows.tsv"
for n in $(seq 1 "$RUNS"); do
	for k in 1 2; do
		echo "== $k ingester(s), run $n" >&2
		run "$k" "$n"
	done
done

# Markdown: one row per run, then the medians, ratios and spread.
awk -F'\t' -v t="$TICK" -v cores="$(nproc)" -v q="$QUOTA" '
function med(a, n,    i, j, x) {
	for (i = 2; i <= n; i++) { x = a[i]; for (j = i - 1; j >= 1 && a[j] > x; j--) a[j + 1] = a[j]; a[j + 1] = x }
	return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
{
	k = $1; n = ++runs[k]
	split($7, c, " "); scpu = 0; per = ""
	for (i in c) scpu += c[i]
	for (i = 1; i <= k; i++) per = per (i > 1 ? " + " : "") c[i]
	wall = $3; busy = $9 / t; idle = $10 / t
	sps[k, n] = $6 / wall; pps[k, n] = $5 / wall; spc[k, n] = scpu > 0 ? $6 / scpu : 0
	W[k, n] = wall; SC[k, n] = scpu; CC[k, n] = $8 / t; ID[k, n] = idle
	printf "| %d | %d | %.2f | %d | %d | %d | %.0f | %s | %.2f | %.0f | %.2f | %.2f | %.2f | %.1f |",
		k, n, wall, $4, $5, $6, $6 / wall, per, scpu, spc[k, n], $8 / t, busy - scpu - $8 / t, idle, $11
	# With CPU_QUOTA: throttled periods of all periods and throttled
	# seconds, per ingester, the share of the budgets used, and the CPU of
	# the Ceph daemons (part of "other").
	if (q != "") {
		gsub(/,/, " + ", $12)
		printf " %s | %.0f %% | %.2f |", $12, 100 * scpu / (k * q * wall), $13 / t
	}
	printf "\n"
}
END {
	for (k = 1; k <= 2; k++) {
		m = runs[k]
		for (i = 1; i <= m; i++) { a[i] = sps[k, i]; b[i] = spc[k, i]; w[i] = W[k, i]; s[i] = SC[k, i]; cc[i] = CC[k, i]; id[i] = ID[k, i] }
		lo = a[1]; hi = a[1]
		for (i = 1; i <= m; i++) { if (a[i] < lo) lo = a[i]; if (a[i] > hi) hi = a[i] }
		MS[k] = med(a, m); MB[k] = med(b, m); MW[k] = med(w, m); MSC[k] = med(s, m); MCC[k] = med(cc, m); MID[k] = med(id, m)
		LO[k] = lo; HI[k] = hi
	}
	printf "\n| ingesters | wall s | samples/s (min–max) | server CPU s | samples per server CPU-s | client CPU s | idle core-s |\n"
	printf "|---:|---:|---:|---:|---:|---:|---:|\n"
	for (k = 1; k <= 2; k++)
		printf "| %d | %.2f | %.0f (%.0f–%.0f) | %.2f | %.0f | %.2f | %.2f |\n",
			k, MW[k], MS[k], LO[k], HI[k], MSC[k], MB[k], MCC[k], MID[k]
	printf "\nTwo / one, samples per second (medians): %.2f× (target ≥ 1.6×); samples per server CPU-second: %.2f×; %d cores",
		MS[1] ? MS[2] / MS[1] : 0, MB[1] ? MB[2] / MB[1] : 0, cores
	if (q != "")
		printf "; a CPU budget of %s cores per ingester", q
	printf ".\n"
}' "$OUT/rows.tsv" >"$OUT/table.md"
{
	if [ -n "$QUOTA" ]; then
		echo "| ingesters | run | wall s | failed files | profiles | samples | samples/s | server CPU s | total | samples per server CPU-s | client CPU s | other CPU s | idle core-s | load | throttled periods, s | budget used | Ceph CPU s |"
		echo "|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|"
	else
		echo "| ingesters | run | wall s | failed files | profiles | samples | samples/s | server CPU s | total | samples per server CPU-s | client CPU s | other CPU s | idle core-s | load |"
		echo "|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|"
	fi
	cat "$OUT/table.md"
	echo
	echo "One ingester in its last run: $THREADS threads, $BUSY."
}

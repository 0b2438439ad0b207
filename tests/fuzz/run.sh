#!/usr/bin/env bash
# run.sh - runs every libFuzzer target of a fuzz build for a short while.
#   FUZZ_BUILD    build directory configured with -DUNHEX_FUZZ=ON (required)
#   FUZZ_SECONDS  total budget, split evenly over the targets (default 20)
# Each target starts from tests/fuzz/corpus/<target>/ (copied, so the
# committed seeds stay as they are).  Exits non-zero when any target finds
# a crash, leak or timeout; the reproducer is kept and its path printed.
set -u

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build="${FUZZ_BUILD:?set FUZZ_BUILD to a build directory configured with -DUNHEX_FUZZ=ON}"
total="${FUZZ_SECONDS:-20}"

mapfile -t targets < <(find "$build/tests/fuzz" -maxdepth 1 -type f -name 'fuzz_*' -perm -u+x 2>/dev/null | sort)
if [ "${#targets[@]}" -eq 0 ]; then
	echo "fuzz: no targets in $build/tests/fuzz (run: make fuzz FUZZ_BUILD=$build)" >&2
	exit 2
fi
share=$(( total / ${#targets[@]} ))
[ "$share" -ge 1 ] || share=1

work="$(mktemp -d /tmp/unhex-fuzz-XXXXXX)"
passed=0
failed=0
for bin in "${targets[@]}"; do
	name="$(basename "$bin")"
	corpus="$work/corpus-$name"
	mkdir -p "$corpus" "$work/artifacts-$name"
	[ -d "$here/corpus/$name" ] && cp -r "$here/corpus/$name/." "$corpus/"
	if "$bin" -max_total_time="$share" -timeout=10 -rss_limit_mb=2048 -print_final_stats=0 \
		-artifact_prefix="$work/artifacts-$name/" "$corpus" >"$work/$name.log" 2>&1; then
		echo "fuzz: $name: ok (${share}s, $(ls "$corpus" | wc -l) corpus files)"
		passed=$((passed + 1))
	else
		echo "fuzz: $name: FAILED; log $work/$name.log, reproducer in $work/artifacts-$name/"
		tail -n 30 "$work/$name.log"
		failed=$((failed + 1))
	fi
done
echo "fuzz: $passed passed, $failed failed"
if [ "$failed" -eq 0 ]; then
	rm -rf "$work"
	exit 0
fi
exit 1

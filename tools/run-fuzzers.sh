#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# run-fuzzers.sh - run every libFuzzer target in BUILD_DIR for N runs or N seconds each.
# Usage: tools/run-fuzzers.sh BUILD_DIR runs|seconds N
set -euo pipefail
build=$1 mode=$2 n=$3
top=$(cd "$(dirname "$0")/.." && pwd)
status=0
for bin in "$build"/tests/fuzz/fuzz_*; do
	[ -f "$bin" ] && [ -x "$bin" ] || continue
	name=$(basename "$bin")
	corpus_seed="$top/tests/fuzz/corpus/${name#fuzz_}"
	work="$build/fuzz-corpus/${name#fuzz_}"
	mkdir -p "$work" "$build/fuzz-artifacts"
	if [ "$mode" = runs ]; then limit=(-runs="$n"); else limit=(-max_total_time="$n"); fi
	echo "== $name (${mode} $n)"
	if ! "$bin" "${limit[@]}" -artifact_prefix="$build/fuzz-artifacts/$name-" -print_final_stats=1 \
		"$work" $( [ -d "$corpus_seed" ] && echo "$corpus_seed" ) >"$build/$name.log" 2>&1; then
		echo "FAIL: $name (see $build/$name.log)"; tail -40 "$build/$name.log"; status=1
	else
		grep -E "stat::number_of_executed_units|Done" "$build/$name.log" | tail -2
	fi
done
exit $status

#!/usr/bin/env bash
# Builds the libFuzzer targets (tests/fuzz/) with clang, AddressSanitizer and UBSan in their own
# build folder (torch-free), then runs one target, or all, on its seed corpus for SECONDS each.
# Usage: bash tools/fuzz.sh TARGET|all SECONDS [libFuzzer options...]
# Prints executions and crashes per target; exits 1 when any target crashed. New inputs go to
# BUILD/corpus/TARGET/ (the seeds in tests/fuzz/corpus/ stay as they are), crashing inputs to
# BUILD/findings/TARGET/. Reproduce one with: BUILD/tests/fuzz/fuzz_TARGET FILE
set -euo pipefail
cd "$(dirname "$0")/.."

TARGETS=(reply_parser config tokenizer safetensors golden protocol env_server)
BUILD_DIR="${TURNRL_FUZZ_BUILD_DIR:-build-fuzz}"

if [ $# -lt 2 ] || ! [[ "$2" =~ ^[0-9]+$ ]]; then
  echo "usage: bash tools/fuzz.sh TARGET|all SECONDS [libFuzzer options...]; targets: ${TARGETS[*]}" >&2
  exit 2
fi
target="$1" seconds="$2"
shift 2
if [ "$target" = all ]; then
  selected=("${TARGETS[@]}")
elif [[ " ${TARGETS[*]} " == *" $target "* ]]; then
  selected=("$target")
else
  echo "fuzz: unknown target '$target'; targets: ${TARGETS[*]}" >&2
  exit 2
fi

if [ ! -f "$BUILD_DIR/build.ninja" ]; then
  cmake -S . -B "$BUILD_DIR" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
    -DTURNRL_WITH_TORCH=OFF -DTURNRL_FUZZ=ON -DBUILD_TESTING=OFF
fi
cmake --build "$BUILD_DIR" -j "${TURNRL_FUZZ_JOBS:-$(nproc)}" --target "${selected[@]/#/fuzz_}"

failed=0
for name in "${selected[@]}"; do
  corpus="$BUILD_DIR/corpus/$name" findings="$BUILD_DIR/findings/$name"
  mkdir -p "$corpus" "$findings"
  log="$BUILD_DIR/fuzz_$name.log"
  status=0
  # -timeout: the slowest valid input (the largest Crafter world the registry allows) takes seconds.
  "$BUILD_DIR/tests/fuzz/fuzz_$name" -max_total_time="$seconds" -timeout=60 -print_final_stats=1 \
    -artifact_prefix="$findings/" "$@" "$corpus" "tests/fuzz/corpus/$name" >"$log" 2>&1 || status=$?
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  if [ "$status" -eq 0 ]; then
    echo "fuzz $name: ${runs:-?} executions in ${seconds} s, 0 crashes"
  else
    failed=1
    echo "fuzz $name: CRASH after ${runs:-?} executions (exit $status); log $log, input in $findings/:"
    grep -E "ERROR|runtime error|fuzz property failed|terminate called|what\(\)" "$log" | head -n 5 || true
    ls -t "$findings" | head -n 3
  fi
done
exit "$failed"

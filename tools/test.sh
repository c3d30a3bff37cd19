#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine, builds, and runs every test
# twice: in a normal build and under AddressSanitizer + UndefinedBehaviorSanitizer;
# a third build with MPI runs the distributed-run suite.
# Ends with one line "N passed, N failed" and exits non-zero when any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh || { echo "0 passed, 1 failed"; exit 1; }

passed=0
failed=0
run_suite() { # build-dir meson-setup-args...
  local dir=$1
  shift
  if [ ! -d "$dir" ]; then
    meson setup "$dir" "$@" >"$dir.setup.log" 2>&1 || { cat "$dir.setup.log"; failed=$((failed + 1)); return; }
  fi
  if ! ninja -C "$dir" >"$dir.build.log" 2>&1; then
    tail -50 "$dir.build.log"
    failed=$((failed + 1))
    return
  fi
  meson test -C "$dir" --print-errorlogs --num-processes 2 "${MESON_TEST_ARGS[@]}"
  local log="$dir/meson-logs/testlog.json"
  local p f
  p=$(grep -c '"result": "OK"' "$log" || true)
  f=$(grep -c -E '"result": "(FAIL|ERROR|TIMEOUT|UNEXPECTEDPASS)"' "$log" || true)
  passed=$((passed + p))
  failed=$((failed + f))
}

MESON_TEST_ARGS=()
run_suite build
# Distributed runs (docs/scale-out.md): a build with MPI, running only its
# own suite (everything else in it is the first build's code, tested there).
MESON_TEST_ARGS=(--suite mpi)
run_suite build-mpi -Dmpi=enabled -Denable_bench=false -Denable_examples=false
MESON_TEST_ARGS=()
# Sanitizers: every test again, any report fails it (halt_on_error).
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/test/lsan.supp
run_suite build-asan -Db_sanitize=address,undefined -Db_lundef=false -Denable_bench=false

# One integration run under valgrind memcheck: no errors, no leaks.
if command -v valgrind >/dev/null; then
  if valgrind --error-exitcode=9 --leak-check=full --errors-for-leak-kinds=definite \
      build/cmd/tokperf profile --mock -q --no-artifacts --concurrency 1,4 --request-count 8 \
      --output-tokens-mean 4 --tokenizer build/test/data/words.model >/dev/null 2>build/valgrind.log; then
    echo "ok - valgrind memcheck: a run against the mock is clean"
    passed=$((passed + 1))
  else
    echo "not ok - valgrind memcheck (see build/valgrind.log)"
    grep -E "ERROR SUMMARY|definitely lost" build/valgrind.log
    failed=$((failed + 1))
  fi
fi

# Every fuzz target under libFuzzer for a bounded time (FUZZ_SECONDS each).
if [ "${SKIP_FUZZ:-0}" != 1 ]; then
  fuzz_out=$(tools/fuzz.sh)
  echo "$fuzz_out"
  passed=$((passed + $(grep -c '^ok ' <<<"$fuzz_out" || true)))
  failed=$((failed + $(grep -c '^not ok ' <<<"$fuzz_out" || true)))
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

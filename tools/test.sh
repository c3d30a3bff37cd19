#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine, builds, and runs every test
# twice: in a normal build and under AddressSanitizer + UndefinedBehaviorSanitizer.
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
# Sanitizers: every test again, any report fails it (halt_on_error).
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/test/lsan.supp
run_suite build-asan -Db_sanitize=address,undefined -Db_lundef=false -Denable_bench=false

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]

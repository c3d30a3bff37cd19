#!/usr/bin/env bash
# Builds every fuzz target with clang's libFuzzer (and ASan+UBSan) and runs
# each for a bounded time on a copy of its seed corpus.  Prints one TAP line
# per target; a crash or a leak fails it and its reproducer is kept under
# build-fuzz/findings/.  FUZZ_SECONDS sets the time per target (default 45);
# FUZZ_TARGETS (names without the fuzz_ prefix, space-separated) picks a subset.
set -uo pipefail
cd "$(dirname "$0")/.."
secs=${FUZZ_SECONDS:-45}
if ! command -v clang >/dev/null; then
  echo "1..0 # SKIP clang not installed"
  exit 0
fi
if [ ! -d build-fuzz ]; then
  CC=clang CXX=clang++ meson setup build-fuzz -Dfuzzing_engine=libfuzzer -Db_sanitize=address,undefined \
    -Db_lundef=false -Denable_bench=false -Denable_examples=false >build-fuzz.setup.log 2>&1 ||
    { tail -20 build-fuzz.setup.log; echo "not ok 1 - fuzz build configured"; echo "1..1"; exit 1; }
fi
targets=$(ls test/fuzz/fuzz_*.c | sed 's#test/fuzz/##; s#\.c$##')
if [ -n "${FUZZ_TARGETS:-}" ]; then
  targets=$(for t in $FUZZ_TARGETS; do echo "fuzz_$t"; done)
fi
ninja -C build-fuzz $(for t in $targets; do echo test/fuzz/$t; done) >build-fuzz.build.log 2>&1 ||
  { tail -30 build-fuzz.build.log; echo "not ok 1 - fuzz targets built"; echo "1..1"; exit 1; }
n=0
fail=0
mkdir -p build-fuzz/corpus build-fuzz/findings
export ASAN_OPTIONS=detect_leaks=1:halt_on_error=1 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
for t in $targets; do
  name=${t#fuzz_}
  n=$((n + 1))
  corpus=build-fuzz/corpus/$name
  mkdir -p "$corpus"
  cp -r test/data/fuzz/$name/. "$corpus"/ 2>/dev/null
  log=build-fuzz/$t.log
  if build-fuzz/test/fuzz/$t -max_total_time="$secs" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
      -artifact_prefix=build-fuzz/findings/$name- "$corpus" >"$log" 2>&1; then
    runs=$(grep -oE '^Done [0-9]+ runs' "$log" | grep -oE '[0-9]+')
    echo "ok $n - $t: ${secs}s, ${runs:-?} executions, no finding"
  else
    fail=$((fail + 1))
    echo "not ok $n - $t: a finding (see build-fuzz/findings/ and $log)"
    grep -E "ERROR|SUMMARY|Test unit written" "$log" | head -5 | sed 's/^/#   /'
  fi
done
echo "1..$n"
[ "$fail" -eq 0 ]

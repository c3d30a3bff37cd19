#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine, builds, and runs every test
# twice: in a normal build and under AddressSanitizer + UndefinedBehaviorSanitizer;
# the integration suite a third time with two CPU hogs running (HOGS=N: N hogs,
# 0: none); a build with MPI runs the distributed-run suite.
# Ends with one line "N passed, N failed" and exits non-zero when any failed.
set -uo pipefail
cd "$(dirname "$0")/.."
# The build's packages (tools/deps.sh) and the tests' own peers: Python gRPC
# and HTTP peers, the Prometheus client's text parser (live metrics),
# nghttp2's client and server, chromium for the HTML report,
# the openssl tool for test certificates, clang and its runtime for libFuzzer,
# valgrind, and Open MPI (with iproute2, which its launcher uses) for the
# distributed-run suite.
test_pkgs=(
  python3 python3-grpcio python3-grpc-tools python3-aiohttp python3-prometheus-client
  nghttp2-client nghttp2-server openssl
  chromium clang libclang-rt-14-dev valgrind
  libopenmpi-dev openmpi-bin iproute2 man-db
)
tools/deps.sh "${test_pkgs[@]}" || { echo "0 passed, 1 failed"; exit 1; }

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
  meson test -C "$dir" --print-errorlogs --num-processes 2 --logbase "$LOGBASE" "${MESON_TEST_ARGS[@]}"
  local log="$dir/meson-logs/$LOGBASE.json"
  local p f
  p=$(grep -c '"result": "OK"' "$log" || true)
  f=$(grep -c -E '"result": "(FAIL|ERROR|TIMEOUT|UNEXPECTEDPASS)"' "$log" || true)
  passed=$((passed + p))
  failed=$((failed + f))
}

MESON_TEST_ARGS=()
LOGBASE=testlog
run_suite build
# The integration suite again with both cores kept busy by two CPU hogs, as
# on a shared CI runner: every timing check holds the client against the
# mock's own log of what it did, so a late mock or a preempted client must
# not fail a test, and a real misdating still does (HOGS=0 skips it).
if [ "${HOGS:-2}" -gt 0 ]; then
  hog_pids=()
  for _ in $(seq "${HOGS:-2}"); do
    (while :; do :; done) &
    hog_pids+=($!)
  done
  echo "# the integration suite with ${HOGS:-2} CPU hogs running"
  MESON_TEST_ARGS=(--suite integration)
  LOGBASE=testlog-hogs
  run_suite build
  kill "${hog_pids[@]}" 2>/dev/null
  wait "${hog_pids[@]}" 2>/dev/null
  LOGBASE=testlog
fi
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

# Installed like a real tool: `meson install` into a scratch root, then an
# example built by gcc from the installed header, library and pkg-config file
# alone (the prefix pointed into the scratch root), and run against the mock.
install_check() {
  local root pcdir prefix flags
  root=$(mktemp -d)
  meson install -C build --destdir "$root" >"$root/install.log" 2>&1 || { cat "$root/install.log"; return 1; }
  pcdir=$(dirname "$(find "$root" -name tokperf.pc -print -quit)")
  [ -f "$pcdir/tokperf.pc" ] || { echo "no tokperf.pc installed"; return 1; }
  prefix=$(PKG_CONFIG_PATH=$pcdir pkg-config --variable=prefix tokperf)
  flags=$(PKG_CONFIG_PATH=$pcdir pkg-config --define-variable=prefix="$root$prefix" --cflags --libs tokperf) || return 1
  [ -x "$root$prefix/bin/tokperf" ] || { echo "no tokperf binary installed"; return 1; }
  # The man page and the completions, generated from the option tables.
  local page
  page=$(find "$root" -name tokperf.1 -print -quit)
  [ -n "$page" ] || { echo "no man page installed"; return 1; }
  MANWIDTH=100 man -l "$page" 2>/dev/null | grep -q -- "--concurrency" || { echo "man -l $page: no --concurrency"; return 1; }
  [ -n "$(find "$root" -path '*bash-completion/completions/tokperf' -print -quit)" ] || { echo "no bash completion"; return 1; }
  [ -n "$(find "$root" -name _tokperf -print -quit)" ] || { echo "no zsh completion"; return 1; }
  gcc -std=c11 -Wall -o "$root/mock_sweep" examples/mock_sweep.c $flags || return 1
  (cd "$root" && timeout 120 ./mock_sweep) || return 1
  rm -rf "$root"
}
if install_check >build/install-check.log 2>&1; then
  echo "ok - meson install: man page, completions; an example builds with gcc against the installed pkg-config file and runs"
  passed=$((passed + 1))
else
  echo "not ok - meson install and an example built against it (see build/install-check.log)"
  tail -20 build/install-check.log
  failed=$((failed + 1))
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

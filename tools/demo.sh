#!/usr/bin/env bash
# Sets everything up on a fresh Debian 12 machine and runs a concurrency sweep
# against the built-in mock server, printing the report.  Extra arguments go
# to `tokperf profile`.
set -euo pipefail
cd "$(dirname "$0")/.."
tools/deps.sh
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
exec build/cmd/tokperf profile --mock --concurrency 1,4,16,64 \
  --tokenizer build/test/data/words.model --output-tokens-mean 64 "$@"

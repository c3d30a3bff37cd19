#!/usr/bin/env bash
# A CI smoke test: a short run that fails the job when performance regresses.
# Point URL at your server (here the built-in mock stands in for it); tokperf
# exits 1 when a gate fails, 2 on a usage error, 3 when it cannot start.
#
#   examples/ci_smoke.sh                      # against the mock
#   URL=triton:8001 MODEL=ensemble examples/ci_smoke.sh
set -euo pipefail
TOKPERF=${TOKPERF:-build/cmd/tokperf}
# Token gates need the model's tokenizer (the mock's words are counted by
# the word model the build makes).
TOKENIZER=${TOKENIZER:-build/test/data/words.model}
target=(--mock)
[ -n "${URL:-}" ] && target=(-u "$URL" -m "${MODEL:-ensemble}")

"$TOKPERF" profile "${target[@]}" -q \
  --tokenizer "$TOKENIZER" --concurrency 8 --request-count 64 --warmup-request-count 8 --output-tokens-mean 64 \
  --assert 'ttft.p99 <= 250ms' \
  --assert 'itl.p99 <= 50ms' \
  --assert 'output_token_throughput >= 500' \
  --max-error-rate 1% \
  --json smoke.json --artifact-dir smoke-artifacts

# Against the last good run, when there is one.
if [ -f baseline.json ]; then
  "$TOKPERF" compare baseline.json smoke.json --fail-on 'ttft.p99:+10%' --fail-on 'output_token_throughput:-10%' \
    --junit smoke-compare.xml
fi

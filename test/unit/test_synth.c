/* Synthetic prompts of exact length: for 1,000 drawn lengths, every prompt
 * encodes to exactly its drawn length, under a word-level and a BPE model. */
#include <stdlib.h>
#include <string.h>

#include "dataset/tp_synth.h"
#include "tp_test.h"
#include "util/tp_common.h"

static void check_model(const char *env, const char *name) {
  const char *path = getenv(env);
  if (!path) {
    printf("# %s not set: skipping %s\n", env, name);
    return;
  }
  tp_tok *tok = NULL;
  char err[512];
  CHECK_INT(tp_tok_load(&tok, path, err, sizeof(err)), 0, "tokenizer loads");
  if (!tok) return;
  tp_dataset ds;
  int rv = tp_synth_prompts(&ds, tok, 1000, 200, 80, 7, err, sizeof(err));
  CHECK(rv == 0, "%s: 1,000 prompts made (mean 200, stddev 80)%s%s", name, rv ? ": " : "", rv ? err : "");
  size_t exact = 0, shortest = SIZE_MAX, longest = 0;
  double sum = 0;
  for (size_t i = 0; i < ds.n; i++) {
    size_t n = 0;
    if (tp_tok_count(tok, ds.items[i].text, ds.items[i].text_len, &n) == 0 && (int64_t)n == ds.items[i].input_tokens)
      exact++;
    if (n < shortest) shortest = n;
    if (n > longest) longest = n;
    sum += (double)n;
  }
  CHECK_INT(ds.n, 1000, "every prompt present");
  CHECK_INT(exact, ds.n, "every prompt encodes to exactly its drawn length");
  CHECK_NEAR(sum / (double)ds.n, 200, 10, "lengths average near the mean");
  CHECK(shortest < 120 && longest > 280, "lengths spread with the stddev (%zu..%zu)", shortest, longest);

  /* Reproducible from the seed, different with another. */
  tp_dataset again, other;
  tp_synth_prompts(&again, tok, 20, 50, 10, 7, err, sizeof(err));
  tp_synth_prompts(&other, tok, 20, 50, 10, 8, err, sizeof(err));
  tp_dataset first;
  tp_synth_prompts(&first, tok, 20, 50, 10, 7, err, sizeof(err));
  int same = again.n == 20 && first.n == 20, differ = 0;
  for (size_t i = 0; same && i < 20; i++) same &= strcmp(again.items[i].text, first.items[i].text) == 0;
  for (size_t i = 0; i < 20 && i < other.n; i++) differ |= strcmp(again.items[i].text, other.items[i].text) != 0;
  CHECK(same, "%s: the same seed gives the same prompts", name);
  CHECK(differ, "%s: another seed gives other prompts", name);

  /* Real words, not random ids: the text is made of list words. */
  CHECK(strchr(first.items[0].text, ' ') != NULL, "%s: prompts are words separated by spaces", name);
  tp_dataset_free(&again);
  tp_dataset_free(&other);
  tp_dataset_free(&first);
  tp_dataset_free(&ds);

  char *t = NULL;
  size_t tl = 0;
  CHECK_INT(tp_synth_text(tok, 1, 3, &t, &tl), 0, "a one-token prompt");
  size_t n = 0;
  tp_tok_count(tok, t, tl, &n);
  CHECK_INT(n, 1, "is one token");
  free(t);
  tp_tok_free(tok);
}

int main(void) {
  check_model("TP_WORDS_MODEL", "word model");
  check_model("TP_PROSE_MODEL", "BPE model");
  return tp_test_done();
}

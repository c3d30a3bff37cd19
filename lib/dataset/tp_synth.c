#include "tp_synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/tp_common.h"
#include "util/tp_rng.h"
#include "util/tp_words.h"

/* Words joined by spaces until the text certainly holds `tokens` tokens
 * (every word is at least one token). */
static int draw_words(tp_rng *rng, size_t words, tp_buf *out) {
  tp_buf_reset(out);
  for (size_t i = 0; i < words; i++) {
    const char *w = tp_words[tp_rng_below(rng, tp_words_n)];
    if ((i && tp_buf_append(out, " ", 1)) || tp_buf_append_str(out, w)) return TP_ENOMEM;
  }
  return 0;
}

/* Decodes ids[0..n) and checks that the text encodes back to n tokens. */
static int try_cut(const tp_tok *tok, const int32_t *ids, size_t n, uint32_t want, char **text, size_t *len) {
  char *t = NULL;
  size_t tl = 0;
  int rv = tp_tok_decode(tok, ids, n, &t, &tl);
  if (rv) return rv;
  size_t count = 0;
  rv = tp_tok_count(tok, t, tl, &count);
  if (rv == 0 && count == want) {
    *text = t;
    *len = tl;
    return 0;
  }
  free(t);
  return rv ? rv : TP_EAGAIN;
}

int tp_synth_text(const tp_tok *tok, uint32_t tokens, uint64_t seed, char **text, size_t *len) {
  tp_rng rng;
  tp_rng_seed(&rng, seed);
  tp_buf words;
  tp_buf_init(&words);
  int rv = TP_EINVAL;
  for (int attempt = 0; attempt < 16; attempt++) {
    rv = draw_words(&rng, (size_t)tokens + 8, &words);
    if (rv) break;
    int32_t *ids = NULL;
    size_t n = 0;
    rv = tp_tok_encode(tok, (const char *)words.data, words.len, &ids, &n);
    if (rv) break;
    if (n < tokens) {
      free(ids);
      rv = TP_EINVAL;
      continue;
    }
    /* The exact cut first, then its neighbours: a cut whose last piece
     * merges differently once decoded may still land on the count. */
    static const int deltas[] = {0, -1, 1, -2, 2, -3, 3};
    rv = TP_EAGAIN;
    for (size_t d = 0; d < TP_ARRAY_LEN(deltas) && rv == TP_EAGAIN; d++) {
      long cut = (long)tokens + deltas[d];
      if (cut < 1 || (size_t)cut > n) continue;
      rv = try_cut(tok, ids, (size_t)cut, tokens, text, len);
    }
    free(ids);
    if (rv != TP_EAGAIN) break;
    rv = TP_EINVAL;
  }
  tp_buf_fini(&words);
  return rv;
}

int tp_synth_prompts(tp_dataset *ds, const tp_tok *tok, size_t n, uint32_t mean, uint32_t stddev,
                     uint64_t seed, char *err, size_t errlen) {
  memset(ds, 0, sizeof(*ds));
  ds->items = calloc(n ? n : 1, sizeof(*ds->items));
  ds->source = tp_strndup("synthetic", 9);
  if (!ds->items || !ds->source) return TP_ENOMEM;
  tp_rng rng;
  tp_rng_seed(&rng, seed);
  for (size_t i = 0; i < n; i++) {
    double draw = stddev ? (double)mean + (double)stddev * tp_rng_normal(&rng) : (double)mean;
    uint32_t want = draw < 1 ? 1 : (uint32_t)llround(draw);
    tp_prompt *p = &ds->items[i];
    int rv = tp_synth_text(tok, want, tp_rng_mix(seed, i + 1), &p->text, &p->text_len);
    if (rv) {
      tp_seterr(err, errlen,
                "cannot make a synthetic prompt of exactly %u tokens with this tokenizer (%s)", want,
                tp_strerror(rv));
      ds->n = i;
      return rv == TP_ENOMEM ? rv : TP_EINVAL;
    }
    p->max_tokens = -1;
    p->input_tokens = want;
    ds->n = i + 1;
  }
  return 0;
}

/* Accuracy of generated text against a reference (tp_accuracy.h). */
#include "tp_accuracy.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/tp_common.h"

static bool is_ws(unsigned char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

static void trim(const char **s, size_t *len) {
  const unsigned char *p = (const unsigned char *)*s;
  size_t n = *len;
  while (n && is_ws(*p)) p++, n--;
  while (n && is_ws(p[n - 1])) n--;
  *s = (const char *)p;
  *len = n;
}

bool tp_exact_match(const char *cand, size_t cand_len, const char *ref, size_t ref_len) {
  if (!cand) cand_len = 0, cand = "";
  if (!ref) ref_len = 0, ref = "";
  trim(&cand, &cand_len);
  trim(&ref, &ref_len);
  return cand_len == ref_len && memcmp(cand, ref, cand_len) == 0;
}

typedef struct tok {
  const char *p;
  size_t len;
  uint64_t hash;
} tok;

/* Splits s into whitespace-separated tokens.  Returns the count, or
 * SIZE_MAX when out of memory; *out is owned (free()). */
static size_t split_tokens(const char *s, size_t len, tok **out) {
  *out = NULL;
  size_t n = 0, cap = 0;
  tok *v = NULL;
  size_t i = 0;
  while (i < len) {
    while (i < len && is_ws((unsigned char)s[i])) i++;
    if (i >= len) break;
    size_t start = i;
    /* FNV-1a: equal tokens have equal hashes, so the LCS inner loop
     * compares bytes only when the hashes agree. */
    uint64_t h = 1469598103934665603ULL;
    while (i < len && !is_ws((unsigned char)s[i])) {
      h = (h ^ (unsigned char)s[i]) * 1099511628211ULL;
      i++;
    }
    if (n == cap) {
      size_t nc = cap ? cap * 2 : 64;
      tok *nv = realloc(v, nc * sizeof(*nv));
      if (!nv) {
        free(v);
        return SIZE_MAX;
      }
      v = nv;
      cap = nc;
    }
    v[n++] = (tok){s + start, i - start, h};
  }
  *out = v;
  return n;
}

static bool tok_eq(const tok *a, const tok *b) {
  return a->hash == b->hash && a->len == b->len && memcmp(a->p, b->p, a->len) == 0;
}

double tp_rouge_l_f1(const char *cand, size_t cand_len, const char *ref, size_t ref_len) {
  tok *c = NULL, *r = NULL;
  size_t nc = split_tokens(cand ? cand : "", cand ? cand_len : 0, &c);
  size_t nr = split_tokens(ref ? ref : "", ref ? ref_len : 0, &r);
  if (nc == SIZE_MAX || nr == SIZE_MAX) {
    free(c);
    free(r);
    return TP_ENOMEM;
  }
  double f1 = 0;
  if (nc && nr) {
    /* Two rows of the DP table over the reference: the LCS length only
     * needs the previous row. */
    uint32_t *prev = calloc(nr + 1, sizeof(*prev)), *cur = calloc(nr + 1, sizeof(*cur));
    if (!prev || !cur) {
      free(prev);
      free(cur);
      free(c);
      free(r);
      return TP_ENOMEM;
    }
    for (size_t i = 1; i <= nc; i++) {
      for (size_t j = 1; j <= nr; j++) {
        if (tok_eq(&c[i - 1], &r[j - 1]))
          cur[j] = prev[j - 1] + 1;
        else
          cur[j] = prev[j] > cur[j - 1] ? prev[j] : cur[j - 1];
      }
      uint32_t *t = prev;
      prev = cur;
      cur = t;
    }
    double lcs = prev[nr];
    if (lcs > 0) {
      double p = lcs / (double)nc, rc = lcs / (double)nr;
      f1 = 2 * p * rc / (p + rc);
    }
    free(prev);
    free(cur);
  }
  free(c);
  free(r);
  return f1;
}

void tp_accuracy_rates(tp_accuracy *a) {
  a->exact_match_rate = a->scored ? (double)a->exact / (double)a->scored : 0;
  a->rouge_l_f1 = a->scored ? a->rouge_l_f1_sum / (double)a->scored : 0;
}

void tp_accuracy_merge(tp_accuracy *a, const tp_accuracy *b) {
  a->scored += b->scored;
  a->exact += b->exact;
  a->rouge_l_f1_sum += b->rouge_l_f1_sum;
  tp_accuracy_rates(a);
}

/* The tokenizer.json loader: added tokens, their tries and ids. */
#include "tokenizer/tp_tok_hf_load.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Added tokens                                                             */

static int trie_node(tp__trie *t, uint8_t byte) {
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    tp__trie_node *v = realloc(t->nodes, cap * sizeof(*v));
    if (v == NULL) return -1;
    t->nodes = v;
    t->cap = cap;
  }
  t->nodes[t->n] = (tp__trie_node){.child = -1, .sibling = -1, .tok = -1, .byte = byte};
  return (int)t->n++;
}

/* Inserts s for token index tok; the first token of a string keeps it, as
 * the Aho-Corasick automaton reports the first of equal patterns. */
static int trie_add(tp__trie *t, const char *s, size_t n, int32_t tok) {
  if (n == 0) return 0;
  if (t->n == 0 && trie_node(t, 0) < 0) return TP_ENOMEM;
  int32_t cur = 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t b = (uint8_t)s[i];
    int32_t c = t->nodes[cur].child;
    while (c >= 0 && t->nodes[c].byte != b) c = t->nodes[c].sibling;
    if (c < 0) {
      int nn = trie_node(t, b);
      if (nn < 0) return TP_ENOMEM;
      c = nn;
      t->nodes[c].sibling = t->nodes[cur].child;
      t->nodes[cur].child = c;
    }
    cur = c;
  }
  if (t->nodes[cur].tok < 0) t->nodes[cur].tok = tok;
  t->first[(uint8_t)s[0]] = true;
  return 0;
}

typedef struct raw_added {
  uint32_t node;
  const char *content;
  size_t len;
  bool single_word, lstrip, rstrip, normalized, special;
} raw_added;

static int parse_added(loader *L, uint32_t e, size_t i, raw_added *r) {
  char path[64];
  snprintf(path, sizeof(path), "added_tokens[%zu]", i);
  if (tp__json_at(L->d, e)->type != TP_JSON_OBJECT)
    return tp__hfl_bad(L, path, "is %s, expected an object", tp__json_type_name(L->d, e));
  int rv;
  r->node = e;
  if ((rv = tp__hfl_get_str(L, e, "content", true, &r->content, &r->len, path)) ||
      (rv = tp__hfl_get_bool(L, e, "single_word", false, &r->single_word, path)) ||
      (rv = tp__hfl_get_bool(L, e, "lstrip", false, &r->lstrip, path)) ||
      (rv = tp__hfl_get_bool(L, e, "rstrip", false, &r->rstrip, path)) ||
      (rv = tp__hfl_get_bool(L, e, "special", false, &r->special, path)) ||
      (rv = tp__hfl_get_bool(L, e, "normalized", !r->special, &r->normalized, path)))
    return rv;
  uint32_t id = tp__json_get(L->d, e, "id");
  if (id && tp__json_at(L->d, id)->type != TP_JSON_NUMBER)
    return tp__hfl_bad(L, path, ".id is %s, expected a number", tp__json_type_name(L->d, id));
  return 0;
}

/* A content -> index map over raw[] for load_added: files with many
 * thousands of added tokens must not cost a quadratic scan (nor may a
 * hostile file). */
typedef struct content_index {
  int32_t *slot; /* index into raw[], -1: empty */
  size_t mask;
} content_index;

static bool same_content(const raw_added *a, const raw_added *b) {
  return a->len == b->len && memcmp(a->content, b->content, a->len) == 0;
}

/* The slot for r's content: the one holding an equal content, or the empty
 * one where it goes. */
static int32_t *index_slot(content_index *x, const raw_added *raw, const raw_added *r) {
  for (size_t i = tp__hash_bytes(r->content, r->len) & x->mask;; i = (i + 1) & x->mask)
    if (x->slot[i] < 0 || same_content(&raw[x->slot[i]], r)) return &x->slot[i];
}

/* Ids follow tokenizers' AddedVocabulary::add_tokens, which ignores the
 * "id" written in the file: a token in the model's vocabulary takes that
 * id; any other the next id after the vocabulary (or after the highest
 * added id, once that is past the vocabulary).  Real files agree with
 * their own ids; the rule matters for hand-edited ones. */
int tp__hfl_load_added(loader *L, uint32_t arr) {
  tp__hf *h = L->h;
  const tp__json *d = L->d;
  size_t count = tp__json_at(d, arr)->u.c.count;
  if (count == 0) return 0;
  raw_added *raw = calloc(count, sizeof(*raw));
  h->added = calloc(count, sizeof(*h->added));
  if (raw == NULL || h->added == NULL) {
    free(raw);
    return TP_ENOMEM;
  }
  int rv = 0;
  size_t i = 0;
  for (uint32_t e = tp__json_at(d, arr)->u.c.first; e && rv == 0; e = tp__json_at(d, e)->next, i++)
    rv = parse_added(L, e, i, &raw[i]);
  /* Two maps: content -> its first special entry (whose flags a content
   * marked special anywhere takes: tokenizers keeps special tokens in their
   * own list), and content -> its first entry (later ones are ignored). */
  content_index special = {0}, seen = {0};
  size_t slots = 16;
  while (slots < 2 * count) slots <<= 1;
  special.slot = malloc(slots * sizeof(int32_t));
  seen.slot = malloc(slots * sizeof(int32_t));
  if (rv == 0 && (special.slot == NULL || seen.slot == NULL)) rv = TP_ENOMEM;
  if (rv == 0) {
    special.mask = seen.mask = slots - 1;
    for (size_t k = 0; k < slots; k++) special.slot[k] = seen.slot[k] = -1;
    for (i = 0; i < count; i++) {
      int32_t *sl = index_slot(&special, raw, &raw[i]);
      if (raw[i].special && *sl < 0) *sl = (int32_t)i;
    }
  }
  int64_t max_added = -1;
  int64_t vsize = (int64_t)h->bpe.n_vocab;
  for (i = 0; i < count && rv == 0; i++) {
    const raw_added *r = &raw[i];
    if (r->len == 0) continue;
    int32_t *sl = index_slot(&seen, raw, r);
    if (*sl >= 0) continue;
    *sl = (int32_t)i;
    int64_t id = tp__bpe_lookup(&h->bpe, r->content, r->len);
    if (id < 0) id = max_added < 0 ? vsize : (max_added >= vsize || vsize == 0) ? max_added + 1 : vsize;
    if (id > INT32_MAX - 1) {
      rv = tp__hfl_bad(L, "added_tokens", "need ids past the 32-bit range");
      break;
    }
    if (id > max_added) max_added = id;
    int32_t sp = *index_slot(&special, raw, r);
    const raw_added *f = sp >= 0 ? &raw[sp] : r;
    tp__added *a = &h->added[h->n_added];
    a->content = tp_strndup(r->content, r->len);
    if (a->content == NULL) {
      rv = TP_ENOMEM;
      break;
    }
    a->len = r->len;
    a->match = a->content;
    a->match_len = a->len;
    a->id = (int32_t)id;
    a->single_word = f->single_word;
    a->lstrip = f->lstrip;
    a->rstrip = f->rstrip;
    a->normalized = f->normalized;
    a->special = f->special;
    h->n_added++;
  }
  free(special.slot);
  free(seen.slot);
  free(raw);
  return rv;
}

/* Builds the two tries (specials first, then the others, as tokenizers
 * orders its patterns), the normalized tokens' patterns, and the decode
 * table. */
int tp__hfl_index_added(loader *L) {
  tp__hf *h = L->h;
  int rv = 0;
  bool any_single = false;
  tp__hf_tls *tls = NULL;
  tp_buf nb;
  tp_buf_init(&nb);
  for (int pass = 0; pass < 2 && rv == 0; pass++) {
    for (size_t i = 0; i < h->n_added && rv == 0; i++) {
      tp__added *a = &h->added[i];
      if (a->special != (pass == 0)) continue;
      if (a->single_word) any_single = true;
      if (!a->normalized) {
        rv = trie_add(&h->raw, a->match, a->match_len, (int32_t)i);
        continue;
      }
      if (h->n_norms) {
        if (tls == NULL && (tls = tp__hf_tls_get(h)) == NULL) {
          rv = TP_ENOMEM;
          break;
        }
        if ((rv = tp__hf_normalize(h, tls, a->content, a->len, &nb)) != 0) break;
        a->match = tp_strndup(nb.data ? (char *)nb.data : "", nb.len);
        if (a->match == NULL) {
          a->match = a->content;
          rv = TP_ENOMEM;
          break;
        }
        a->match_len = nb.len;
      }
      rv = trie_add(&h->normalized, a->match, a->match_len, (int32_t)i);
    }
  }
  tp_buf_fini(&nb);
  if (rv) return rv;
  if (any_single) {
    /* Rust's char::is_alphanumeric (Alphabetic or Numeric) or '_'. */
    static const char wc[] = "[\\p{Alphabetic}\\p{Nd}\\p{Nl}\\p{No}_]";
    if ((rv = tp__hfl_compile(L, wc, sizeof(wc) - 1, false, &h->word_char, "added_tokens"))) return rv;
  }
  h->added_ids = malloc((h->n_added + 1) * sizeof(int32_t));
  h->added_idx = malloc((h->n_added + 1) * sizeof(size_t));
  if (h->added_ids == NULL || h->added_idx == NULL) return TP_ENOMEM;
  /* Insertion sort by id: a few hundred entries, once. */
  for (size_t i = 0; i < h->n_added; i++) {
    size_t k = i;
    while (k > 0 && h->added_ids[k - 1] > h->added[i].id) {
      h->added_ids[k] = h->added_ids[k - 1];
      h->added_idx[k] = h->added_idx[k - 1];
      k--;
    }
    h->added_ids[k] = h->added[i].id;
    h->added_idx[k] = i;
  }
  return 0;
}

/* The BPE model: loading its vocabulary and merges from tokenizer.json
 * into the hash tables tp_tok_hf_bpe.c reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tp_tok_hf_bpe.h"
#include "tokenizer/tp_tok_hf_bpe_tab.h"
#include "util/tp_common.h"
#include "util/tp_utf8.h"

/* Inserts or overwrites (serde builds a HashMap: the last duplicate key
 * wins).  Returns true when the key was new. */
static bool vocab_put(tp__bpe *m, uint32_t off, uint32_t len, int32_t id, uint64_t h) {
  const char *s = m->pool + off;
  uint32_t h32 = (uint32_t)(h >> 32);
  for (size_t i = h & m->vmask;; i = (i + 1) & m->vmask) {
    tp__vslot *v = &m->vtab[i];
    if (v->id < 0) {
      v->off = off;
      v->len = len;
      v->id = id;
      v->hash = h32;
      memcpy(v->inl, s, len < TP_VSLOT_INLINE ? len : TP_VSLOT_INLINE);
      return true;
    }
    if (slot_is(m, v, h32, s, len)) {
      v->id = id;
      return false;
    }
  }
}

static inline uint64_t merge_key(int32_t a, int32_t b) {
  return (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
}

static void merge_put(tp__bpe *m, uint64_t key, uint32_t rank, int32_t new_id) {
  uint64_t f = mix64(key) >> (64 - FILTER_BITS);
  m->mfilter[f >> 6] |= 1ULL << (f & 63);
  for (size_t i = mix64(key) & m->mmask;; i = (i + 1) & m->mmask) {
    tp__mslot *s = &m->mtab[i];
    if (s->key == UINT64_MAX || s->key == key) {
      /* A repeated pair takes the later rank, as a HashMap built from the
       * list in order does. */
      s->key = key;
      s->rank = rank;
      s->new_id = new_id;
      return;
    }
  }
}

/* Open-addressing table sizes: a power of two with a load factor of at
 * most 2/3 (linear probing stays short there; smaller tables miss the
 * cache less, at load time and in the merge loop alike). */
static size_t table_size(size_t n) {
  size_t p = 16;
  while (p < n + n / 2) p <<= 1;
  return p;
}

/* ------------------------------------------------------------------------ */
/* Loading                                                                  */

static int opt_string(const tp__json *d, uint32_t obj, const char *key, char **out, size_t *len, char *why,
                      size_t whylen) {
  uint32_t v = tp__json_get(d, obj, key);
  *out = NULL;
  *len = 0;
  if (v == 0 || tp__json_at(d, v)->type == TP_JSON_NULL) return 0;
  if (tp__json_at(d, v)->type != TP_JSON_STRING) {
    tp_seterr(why, whylen, "model.%s is %s, expected a string or null", key, tp__json_type_name(d, v));
    return TP_EINVAL;
  }
  size_t n = tp__json_strlen(d, v);
  if (n == 0) return 0; /* "" adds nothing, like no prefix at all */
  *out = tp_strndup(tp__json_str(d, v), n);
  if (*out == NULL) return TP_ENOMEM;
  *len = n;
  return 0;
}

static int opt_bool(const tp__json *d, uint32_t obj, const char *key, bool *out, char *why, size_t whylen) {
  uint32_t v = tp__json_get(d, obj, key);
  *out = false;
  if (v == 0 || tp__json_at(d, v)->type == TP_JSON_NULL) return 0;
  uint8_t t = tp__json_at(d, v)->type;
  if (t != TP_JSON_TRUE && t != TP_JSON_FALSE) {
    tp_seterr(why, whylen, "model.%s is %s, expected true or false", key, tp__json_type_name(d, v));
    return TP_EINVAL;
  }
  *out = t == TP_JSON_TRUE;
  return 0;
}

/* Loading works in batches: hash a batch of keys and prefetch their slots,
 * then use them.  The tables are far larger than the cache, so each lookup
 * is a cache miss; overlapping BATCH of them roughly halves load time. */
#define BATCH 32

/* Copies the vocabulary strings into the pool and fills the table. */
static int load_vocab(tp__bpe *m, const tp__json *d, uint32_t vocab, char *why, size_t whylen) {
  const tp__json_node *vn = tp__json_at(d, vocab);
  size_t count = vn->u.c.count, bytes = 0;
  for (uint32_t k = vn->u.c.first; k; k = tp__json_at(d, tp__json_at(d, k)->next)->next)
    bytes += tp__json_strlen(d, k);
  if (bytes >= UINT32_MAX) {
    tp_seterr(why, whylen, "model.vocab holds more than 4 GiB of token text");
    return TP_EINVAL;
  }
  m->pool = tp__json_big_alloc(bytes);
  m->vmask = table_size(count) - 1;
  m->vtab = tp__json_big_alloc((m->vmask + 1) * sizeof(*m->vtab));
  if (m->pool == NULL || m->vtab == NULL) return TP_ENOMEM;
  for (size_t i = 0; i <= m->vmask; i++) m->vtab[i].id = -1;
  m->max_id = -1;
  uint32_t keys[BATCH];
  uint64_t hashes[BATCH];
  uint32_t k = vn->u.c.first;
  while (k) {
    size_t nb = 0;
    for (; k && nb < BATCH; k = tp__json_at(d, tp__json_at(d, k)->next)->next) {
      keys[nb] = k;
      hashes[nb] = tp__hash_bytes(tp__json_str(d, k), tp__json_strlen(d, k));
      __builtin_prefetch(&m->vtab[hashes[nb] & m->vmask], 1);
      nb++;
    }
    for (size_t b = 0; b < nb; b++) {
      uint32_t key = keys[b], v = tp__json_at(d, key)->next;
      const tp__json_node *val = tp__json_at(d, v);
      size_t n = tp__json_strlen(d, key);
      if (val->type != TP_JSON_NUMBER || val->u.num < 0 || val->u.num > MAX_ID ||
          val->u.num != (double)(int32_t)val->u.num) {
        char q[256];
        tp_seterr(why, whylen, "model.vocab[\"%s\"] is %s, expected a token id (an integer from 0)",
                  tp__json_quote(q, sizeof(q), tp__json_str(d, key), n, 60),
                  val->type == TP_JSON_NUMBER ? "not a valid id" : tp__json_type_name(d, v));
        return TP_EINVAL;
      }
      int32_t id = (int32_t)val->u.num;
      memcpy(m->pool + m->pool_len, tp__json_str(d, key), n);
      if (vocab_put(m, (uint32_t)m->pool_len, (uint32_t)n, id, hashes[b])) m->n_vocab++;
      m->pool_len += n;
      if (id > m->max_id) m->max_id = id;
    }
  }
  /* The id table (for decoding) is as long as the highest id; real
   * vocabularies number their tokens densely from 0. */
  if ((size_t)m->max_id > 4 * count + 65536) {
    tp_seterr(why, whylen,
              "model.vocab ids are too sparse: the highest is %d for %zu tokens (expected ids "
              "numbered from 0)",
              m->max_id, count);
    return TP_EINVAL;
  }
  size_t nid = (size_t)(m->max_id + 1);
  m->id_off = malloc((nid ? nid : 1) * sizeof(uint32_t));
  m->id_len = malloc((nid ? nid : 1) * sizeof(uint32_t));
  if (m->id_off == NULL || m->id_len == NULL) return TP_ENOMEM;
  for (size_t i = 0; i < nid; i++) m->id_off[i] = UINT32_MAX;
  for (size_t i = 0; i <= m->vmask; i++) {
    const tp__vslot *v = &m->vtab[i];
    if (v->id < 0) continue;
    m->id_off[v->id] = v->off;
    m->id_len[v->id] = v->len;
  }
  return 0;
}

/* One merge in flight: its two tokens, the merged token (in the batch's
 * text buffer), their hashes and ids. */
typedef struct mjob {
  const char *a, *b;
  size_t an, bn, i;
  size_t ab_off, ab_len;
  uint64_t ha, hb, hab, key;
  uint32_t rank;
  int32_t new_id;
} mjob;

static int merge_error(char *why, size_t whylen, size_t i, const char *what, const char *tok, size_t n) {
  char q[256];
  tp_seterr(why, whylen, "model.merges[%zu]: %s \"%s\" is not in model.vocab", i, what,
            tp__json_quote(q, sizeof(q), tok, n, 60));
  return TP_EINVAL;
}

/* Resolves and inserts the batch, in order (a repeated pair takes its
 * later rank).  Returns 0 or TP_EINVAL for the first bad merge. */
static int run_batch(tp__bpe *m, mjob *jobs, size_t nb, const char *text, char *why, size_t whylen) {
  for (size_t b = 0; b < nb; b++) {
    mjob *j = &jobs[b];
    j->ha = tp__hash_bytes(j->a, j->an);
    j->hb = tp__hash_bytes(j->b, j->bn);
    j->hab = tp__hash_bytes(text + j->ab_off, j->ab_len);
    __builtin_prefetch(&m->vtab[j->ha & m->vmask]);
    __builtin_prefetch(&m->vtab[j->hb & m->vmask]);
    __builtin_prefetch(&m->vtab[j->hab & m->vmask]);
  }
  for (size_t b = 0; b < nb; b++) {
    mjob *j = &jobs[b];
    int32_t ia = lookup_h(m, j->a, j->an, j->ha), ib = lookup_h(m, j->b, j->bn, j->hb);
    if (ia < 0) return merge_error(why, whylen, j->i, "token", j->a, j->an);
    if (ib < 0) return merge_error(why, whylen, j->i, "token", j->b, j->bn);
    j->new_id = lookup_h(m, text + j->ab_off, j->ab_len, j->hab);
    if (j->new_id < 0) return merge_error(why, whylen, j->i, "the merged token", text + j->ab_off, j->ab_len);
    j->key = merge_key(ia, ib);
    __builtin_prefetch(&m->mtab[mix64(j->key) & m->mmask], 1);
  }
  for (size_t b = 0; b < nb; b++) merge_put(m, jobs[b].key, jobs[b].rank, jobs[b].new_id);
  return 0;
}

/* parse_merge's answer for an entry that is not a merge. */
#define SKIP_MERGE 1

/* Reads merges[i] (node e) into j's a and b; form is the type every entry
 * must share.  Returns 0, SKIP_MERGE, or TP_EINVAL with why set. */
static int parse_merge(const tp__json *d, uint32_t e, size_t i, uint8_t form, size_t prefix_len, mjob *j,
                       char *why, size_t whylen) {
  const tp__json_node *en = tp__json_at(d, e);
  int rv = 0;
  if (en->type != form || (form != TP_JSON_STRING && form != TP_JSON_ARRAY)) {
    tp_seterr(why, whylen,
              "model.merges[%zu] is %s; merges are either all strings \"a b\" or all "
              "pairs [\"a\", \"b\"]",
              i, tp__json_type_name(d, e));
    rv = TP_EINVAL;
  } else if (form == TP_JSON_STRING) {
    const char *s = tp__json_str(d, e);
    size_t n = tp__json_strlen(d, e);
    /* A merges.txt header line that was carried over. */
    if (n >= 8 && memcmp(s, "#version", 8) == 0) return SKIP_MERGE;
    const char *sp = memchr(s, ' ', n);
    if (sp == NULL || memchr(sp + 1, ' ', n - (size_t)(sp + 1 - s)) != NULL) {
      char q[256];
      tp_seterr(why, whylen, "model.merges[%zu] is \"%s\", expected two tokens separated by one space", i,
                tp__json_quote(q, sizeof(q), s, n, 60));
      rv = TP_EINVAL;
    } else {
      j->a = s;
      j->an = (size_t)(sp - s);
      j->b = sp + 1;
      j->bn = n - (size_t)(sp + 1 - s);
    }
  } else {
    uint32_t a = en->u.c.first, b = a ? tp__json_at(d, a)->next : 0;
    if (en->u.c.count != 2 || tp__json_at(d, a)->type != TP_JSON_STRING ||
        tp__json_at(d, b)->type != TP_JSON_STRING) {
      tp_seterr(why, whylen, "model.merges[%zu] is not a pair of two strings", i);
      rv = TP_EINVAL;
    } else {
      j->a = tp__json_str(d, a);
      j->an = tp__json_strlen(d, a);
      j->b = tp__json_str(d, b);
      j->bn = tp__json_strlen(d, b);
    }
  }
  /* The merged token drops the right part's continuing_subword_prefix. */
  if (rv == 0 && j->bn < prefix_len) {
    char q[256];
    tp_seterr(why, whylen, "model.merges[%zu]: \"%s\" is shorter than continuing_subword_prefix", i,
              tp__json_quote(q, sizeof(q), j->b, j->bn, 60));
    rv = TP_EINVAL;
  }
  return rv;
}

static int load_merges(tp__bpe *m, const tp__json *d, uint32_t merges, char *why, size_t whylen) {
  const tp__json_node *mn = tp__json_at(d, merges);
  m->mmask = table_size(mn->u.c.count) - 1;
  m->mtab = tp__json_big_alloc((m->mmask + 1) * sizeof(*m->mtab));
  m->mfilter = calloc((1u << FILTER_BITS) / 64, sizeof(uint64_t));
  if (m->mtab == NULL || m->mfilter == NULL) return TP_ENOMEM;
  for (size_t i = 0; i <= m->mmask; i++) m->mtab[i].key = UINT64_MAX;
  mjob jobs[BATCH];
  tp_buf text; /* the batch's merged tokens */
  tp_buf_init(&text);
  size_t nb = 0, i = 0;
  uint32_t rank = 0;
  int rv = 0;
  uint8_t form = 0; /* the type of the first entry: all must share it */
  for (uint32_t e = mn->u.c.first;; e = tp__json_at(d, e)->next, i++) {
    if (e == 0 || nb == BATCH) {
      if ((rv = run_batch(m, jobs, nb, (char *)text.data, why, whylen)) != 0) break;
      nb = 0;
      tp_buf_reset(&text);
      if (e == 0) break;
    }
    const tp__json_node *en = tp__json_at(d, e);
    if (form == 0) form = en->type;
    mjob *j = &jobs[nb];
    j->i = i;
    rv = parse_merge(d, e, i, form, m->prefix_len, j, why, whylen);
    if (rv == SKIP_MERGE) {
      rv = 0;
      continue;
    }
    if (rv) {
      /* The merges before this one are checked first, so the message
       * names the first bad merge in the file. */
      char keep[512];
      snprintf(keep, sizeof(keep), "%s", why);
      int r2 = run_batch(m, jobs, nb, (char *)text.data, why, whylen);
      if (r2 == 0) snprintf(why, whylen, "%s", keep);
      break;
    }
    j->ab_off = text.len;
    j->ab_len = j->an + j->bn - m->prefix_len;
    if (tp_buf_append(&text, j->a, j->an) ||
        tp_buf_append(&text, j->b + m->prefix_len, j->bn - m->prefix_len)) {
      rv = TP_ENOMEM;
      break;
    }
    j->rank = rank++;
    nb++;
  }
  m->n_merges = rank;
  tp_buf_fini(&text);
  if (rv == TP_ENOMEM) tp_seterr(why, whylen, "out of memory");
  return rv;
}

static void fill_fast_tables(tp__bpe *m) {
  for (size_t i = 0; i < 0x800; i++) m->small_cp[i] = -1;
  if (m->prefix == NULL && m->suffix == NULL) {
    for (size_t i = 0; i <= m->vmask; i++) {
      const tp__vslot *v = &m->vtab[i];
      if (v->id < 0 || v->len == 0 || v->len > 2) continue;
      const unsigned char *s = (const unsigned char *)m->pool + v->off;
      if (v->len == 1 && s[0] < 0x80)
        m->small_cp[s[0]] = v->id;
      else if (v->len == 2 && s[0] >= 0xC2 && s[0] < 0xE0 && (s[1] & 0xC0) == 0x80)
        m->small_cp[((s[0] & 0x1Fu) << 6) | (s[1] & 0x3Fu)] = v->id;
    }
  }
  for (int b = 0; b < 256; b++) {
    char name[8];
    snprintf(name, sizeof(name), "<0x%02X>", b);
    m->byte_tok[b] = tp__bpe_lookup(m, name, 6);
  }
}

void tp__bpe_set_bytelevel(tp__bpe *m) {
  m->bytelevel = true;
  m->bl_complete = m->prefix == NULL && m->suffix == NULL;
  for (int b = 0; b < 256; b++) {
    char c[4];
    size_t n = tp_utf8_put(c, tp__bytelevel_cp((uint8_t)b));
    m->bl_id[b] = tp__bpe_lookup(m, c, n);
    if (m->bl_id[b] < 0) m->bl_complete = false;
  }
}

int tp__bpe_load(tp__bpe *m, const tp__json *d, uint32_t model, char *why, size_t whylen) {
  int rv;
  memset(m, 0, sizeof(*m));
  m->unk_id = -1;
  m->max_id = -1;

  uint32_t v = tp__json_get(d, model, "dropout");
  if (v && tp__json_at(d, v)->type != TP_JSON_NULL &&
      (tp__json_at(d, v)->type != TP_JSON_NUMBER || tp__json_at(d, v)->u.num < 0 ||
       tp__json_at(d, v)->u.num > 1)) {
    tp_seterr(why, whylen, "model.dropout must be null or a number from 0 to 1");
    return TP_EINVAL;
  }
  /* A dropout > 0 makes the reference's encoding random (it is for
   * training); counting ignores it, as inference does. */
  if ((rv = opt_bool(d, model, "fuse_unk", &m->fuse_unk, why, whylen)) ||
      (rv = opt_bool(d, model, "byte_fallback", &m->byte_fallback, why, whylen)) ||
      (rv = opt_bool(d, model, "ignore_merges", &m->ignore_merges, why, whylen)))
    return rv;
  char *unk = NULL;
  size_t unk_len = 0;
  if ((rv = opt_string(d, model, "continuing_subword_prefix", &m->prefix, &m->prefix_len, why, whylen)) ||
      (rv = opt_string(d, model, "end_of_word_suffix", &m->suffix, &m->suffix_len, why, whylen)) ||
      (rv = opt_string(d, model, "unk_token", &unk, &unk_len, why, whylen)))
    goto out;

  uint32_t vocab = tp__json_get(d, model, "vocab");
  if (vocab == 0 || tp__json_at(d, vocab)->type != TP_JSON_OBJECT) {
    tp_seterr(why, whylen, "model.vocab is %s, expected an object mapping tokens to ids",
              vocab ? tp__json_type_name(d, vocab) : "missing");
    rv = TP_EINVAL;
    goto out;
  }
  uint32_t merges = tp__json_get(d, model, "merges");
  if (merges == 0 || tp__json_at(d, merges)->type != TP_JSON_ARRAY) {
    tp_seterr(why, whylen, "model.merges is %s, expected an array of merges",
              merges ? tp__json_type_name(d, merges) : "missing");
    rv = TP_EINVAL;
    goto out;
  }
  if ((rv = load_vocab(m, d, vocab, why, whylen)) != 0) goto out;
  if ((rv = load_merges(m, d, merges, why, whylen)) != 0) goto out;
  if (unk != NULL) {
    m->unk_id = tp__bpe_lookup(m, unk, unk_len);
    if (m->unk_id < 0) {
      char q[256];
      tp_seterr(why, whylen, "model.unk_token \"%s\" is not in model.vocab",
                tp__json_quote(q, sizeof(q), unk, unk_len, 60));
      rv = TP_EINVAL;
      goto out;
    }
  }
  fill_fast_tables(m);
out:
  free(unk);
  if (rv == TP_ENOMEM) tp_seterr(why, whylen, "out of memory");
  return rv;
}

void tp__bpe_fini(tp__bpe *m) {
  free(m->pool);
  free(m->vtab);
  free(m->mtab);
  free(m->mfilter);
  free(m->id_off);
  free(m->id_len);
  free(m->prefix);
  free(m->suffix);
  memset(m, 0, sizeof(*m));
}

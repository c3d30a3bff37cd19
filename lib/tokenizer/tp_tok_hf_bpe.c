/* The BPE model: hash tables built from tokenizer.json, and the merge loop.
 *
 * The merge loop is the classic one, picking the lowest-ranked adjacent
 * pair and the leftmost of equal ranks.  Short words keep the rank of each
 * pair in an array and scan it (a handful of integer compares beats a heap
 * there); long words use a binary heap of (rank, position) with stale
 * entries skipped on pop, so a 100 kB "word" (a base64 blob, a run of one
 * character) stays O(n log n). */
#include "tokenizer/tp_tok_hf_bpe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/tp_common.h"

/* Words of up to this many symbols use the scan; longer ones the heap. */
#define SCAN_MAX 48
/* The per-thread word cache: direct-mapped, words up to CACHE_WORD bytes
 * that give up to CACHE_IDS tokens (nearly every word of real text) in
 * fixed slots; longer words up to LONG_WORD bytes (the Rust library caches
 * words under 256 bytes too) in a smaller second table.  Without a
 * pre-tokenizer (sentencepiece-style files) a whole line is one word, and
 * a load generator counts the same prompts again and again.  The long
 * table is two-way set-associative (a line of a prompt file should not
 * evict another for sharing a slot).  Bounded: about 1.3 MB + 2.7 MB per
 * thread at most. */
#define CACHE_SLOTS 8192
#define CACHE_WORD 46
#define CACHE_IDS 24
#define LONG_SETS 1024 /* two ways each */
#define LONG_WORD 256
/* Ids must stay below this (real vocabularies are under 300k); it bounds
 * the id table and keeps the merge keys' empty marker free. */
#define MAX_ID 0x7FFFFFFE

typedef struct cslot {
  uint64_t hash;
  uint8_t wlen, nids;
  char w[CACHE_WORD];
  int32_t ids[CACHE_IDS];
} cslot;

typedef struct lslot {
  uint64_t hash;
  uint32_t wlen, nids;
  uint32_t stamp; /* recency within the set: the older way is replaced */
  char *buf;      /* the word, then (4-byte aligned) its ids */
  size_t cap;
} lslot;

/* A heap entry: rank << 32 | position, so that one integer compare
 * orders by rank, then leftmost. */
typedef uint64_t hent;
#define HENT(rank, pos) ((uint64_t)(rank) << 32 | (uint32_t)(pos))

struct tp__bpe_scratch {
  size_t cap;
  int32_t *id, *nid, *prev, *next;
  uint32_t *rank;
  hent *heap;
  size_t heap_cap;
  char *tmp; /* a character with prefix and suffix */
  size_t tmp_cap;
  char *map; /* a byte-level word mapped to its characters */
  size_t map_cap;
  cslot *cache; /* allocated on first use */
  lslot *longc; /* allocated on first use: LONG_SETS x 2 */
  uint32_t clock;
};

int tp__ids_reserve(tp__ids *x, size_t extra) {
  if (extra <= x->cap - x->n) return 0;
  size_t cap = x->cap ? x->cap : 64;
  while (cap - x->n < extra) {
    if (cap > SIZE_MAX / 2 / sizeof(int32_t)) return TP_ENOMEM;
    cap *= 2;
  }
  int32_t *v = realloc(x->v, cap * sizeof(int32_t));
  if (v == NULL) return TP_ENOMEM;
  x->v = v;
  x->cap = cap;
  return 0;
}

uint64_t tp__hash_bytes(const void *p, size_t n) {
  const unsigned char *s = p;
  uint64_t h = 0x9E3779B97F4A7C15ULL ^ ((uint64_t)n * 0xFF51AFD7ED558CCDULL);
  while (n >= 8) {
    uint64_t v;
    memcpy(&v, s, 8);
    h = (h ^ v) * 0xBF58476D1CE4E5B9ULL;
    h ^= h >> 31;
    s += 8;
    n -= 8;
  }
  if (n) {
    uint64_t v = 0;
    memcpy(&v, s, n);
    h = (h ^ v) * 0x94D049BB133111EBULL;
    h ^= h >> 29;
  }
  h ^= h >> 33;
  h *= 0xFF51AFD7ED558CCDULL;
  h ^= h >> 33;
  return h;
}

static inline uint64_t mix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xFF51AFD7ED558CCDULL;
  k ^= k >> 33;
  k *= 0xC4CEB9FE1A85EC53ULL;
  k ^= k >> 33;
  return k;
}

/* GPT-2's table: printable Latin-1 bytes stand for themselves, the other
 * 68 (0-32, 127-160, 173) for U+0100.. in byte order. */
uint32_t tp__bytelevel_cp(uint8_t b) {
  if (b <= 32) return 256u + b;
  if (b >= 127 && b <= 160) return 256u + 33u + (b - 127u);
  if (b == 173) return 256u + 33u + 34u;
  return b;
}

int tp__bytelevel_byte(uint32_t cp) {
  if (cp < 256) return (cp <= 32 || (cp >= 127 && cp <= 160) || cp == 173) ? -1 : (int)cp;
  if (cp < 256 + 33) return (int)(cp - 256);
  if (cp < 256 + 33 + 34) return (int)(cp - 256 - 33 + 127);
  if (cp == 256 + 33 + 34) return 173;
  return -1;
}

static size_t put_utf8(char *w, uint32_t cp) {
  if (cp < 0x80) {
    w[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    w[0] = (char)(0xC0 | (cp >> 6));
    w[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    w[0] = (char)(0xE0 | (cp >> 12));
    w[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    w[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  w[0] = (char)(0xF0 | (cp >> 18));
  w[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  w[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  w[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

static inline size_t char_len(unsigned char c) {
  return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* ------------------------------------------------------------------------ */
/* Tables                                                                   */

static inline bool slot_is(const tp__bpe *m, const tp__vslot *v, uint32_t h32, const char *s, size_t n) {
  if (v->hash != h32 || v->len != n) return false;
  if (n <= TP_VSLOT_INLINE) return memcmp(v->inl, s, n) == 0;
  return memcmp(v->inl, s, TP_VSLOT_INLINE) == 0 &&
         memcmp(m->pool + v->off + TP_VSLOT_INLINE, s + TP_VSLOT_INLINE, n - TP_VSLOT_INLINE) == 0;
}

/* Lookup with the hash already computed (tp__hash_bytes(s, n)). */
static inline int32_t lookup_h(const tp__bpe *m, const char *s, size_t n, uint64_t h) {
  uint32_t h32 = (uint32_t)(h >> 32);
  for (size_t i = h & m->vmask;; i = (i + 1) & m->vmask) {
    const tp__vslot *v = &m->vtab[i];
    if (v->id < 0) return -1;
    if (slot_is(m, v, h32, s, n)) return v->id;
  }
}

int32_t tp__bpe_lookup(const tp__bpe *m, const char *s, size_t n) {
  if (m->vtab == NULL) return -1;
  return lookup_h(m, s, n, tp__hash_bytes(s, n));
}

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

#define FILTER_BITS 20

static inline const tp__mslot *merge_get(const tp__bpe *m, int32_t a, int32_t b) {
  uint64_t key = (uint64_t)(uint32_t)a << 32 | (uint32_t)b;
  uint64_t h = mix64(key);
  uint64_t f = h >> (64 - FILTER_BITS);
  if (!(m->mfilter[f >> 6] >> (f & 63) & 1)) return NULL;
  for (size_t i = h & m->mmask;; i = (i + 1) & m->mmask) {
    const tp__mslot *s = &m->mtab[i];
    if (s->key == key) return s;
    if (s->key == UINT64_MAX) return NULL;
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

const char *tp__bpe_token(const tp__bpe *m, int32_t id, size_t *len) {
  if (id < 0 || id > m->max_id || m->id_off[id] == UINT32_MAX) return NULL;
  *len = m->id_len[id];
  return m->pool + m->id_off[id];
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
      if (n >= 8 && memcmp(s, "#version", 8) == 0) continue;
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
    if (rv == 0 && j->bn < m->prefix_len) {
      char q[256];
      tp_seterr(why, whylen, "model.merges[%zu]: \"%s\" is shorter than continuing_subword_prefix", i,
                tp__json_quote(q, sizeof(q), j->b, j->bn, 60));
      rv = TP_EINVAL;
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
    size_t n = put_utf8(c, tp__bytelevel_cp((uint8_t)b));
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

/* ------------------------------------------------------------------------ */
/* Encoding                                                                 */

tp__bpe_scratch *tp__bpe_scratch_new(void) {
  return calloc(1, sizeof(tp__bpe_scratch));
}

void tp__bpe_scratch_free(tp__bpe_scratch *s) {
  if (s == NULL) return;
  free(s->id);
  free(s->nid);
  free(s->prev);
  free(s->next);
  free(s->rank);
  free(s->heap);
  free(s->tmp);
  free(s->map);
  free(s->cache);
  if (s->longc)
    for (size_t i = 0; i < 2 * LONG_SETS; i++) free(s->longc[i].buf);
  free(s->longc);
  free(s);
}

static int reserve_syms(tp__bpe_scratch *s, size_t n) {
  if (n <= s->cap) return 0;
  size_t cap = s->cap ? s->cap : 64;
  while (cap < n) cap *= 2;
  int32_t *a = realloc(s->id, cap * sizeof(int32_t));
  if (a) s->id = a;
  int32_t *b = realloc(s->nid, cap * sizeof(int32_t));
  if (b) s->nid = b;
  int32_t *c = realloc(s->prev, cap * sizeof(int32_t));
  if (c) s->prev = c;
  int32_t *d = realloc(s->next, cap * sizeof(int32_t));
  if (d) s->next = d;
  uint32_t *e = realloc(s->rank, cap * sizeof(uint32_t));
  if (e) s->rank = e;
  if (!a || !b || !c || !d || !e) return TP_ENOMEM;
  s->cap = cap;
  return 0;
}

static int grow(char **buf, size_t *cap, size_t n) {
  if (n <= *cap) return 0;
  size_t c = *cap ? *cap : 256;
  while (c < n) c *= 2;
  char *p = realloc(*buf, c);
  if (p == NULL) return TP_ENOMEM;
  *buf = p;
  *cap = c;
  return 0;
}

static int reserve_tmp(tp__bpe_scratch *s, size_t n) {
  return grow(&s->tmp, &s->tmp_cap, n);
}

/* The rank and result of merging symbols i and next(i). */
static inline void set_pair(const tp__bpe *m, tp__bpe_scratch *s, int32_t i) {
  int32_t j = s->next[i];
  const tp__mslot *ms = j < 0 ? NULL : merge_get(m, s->id[i], s->id[j]);
  s->rank[i] = ms ? ms->rank : UINT32_MAX;
  s->nid[i] = ms ? ms->new_id : -1;
}

static inline void do_merge(tp__bpe_scratch *s, int32_t i) {
  int32_t j = s->next[i];
  s->id[i] = s->nid[i];
  s->next[i] = s->next[j];
  if (s->next[j] >= 0) s->prev[s->next[j]] = i;
  s->id[j] = -1; /* gone */
}

static void merge_scan(const tp__bpe *m, tp__bpe_scratch *s, int32_t n) {
  for (int32_t i = 0; i < n; i++) set_pair(m, s, i);
  for (;;) {
    uint32_t best = UINT32_MAX;
    int32_t bi = -1;
    for (int32_t i = 0; i >= 0; i = s->next[i])
      if (s->rank[i] < best) best = s->rank[i], bi = i; /* strict: leftmost wins ties */
    if (bi < 0) return;
    do_merge(s, bi);
    set_pair(m, s, bi);
    if (s->prev[bi] >= 0) set_pair(m, s, s->prev[bi]);
  }
}

static int heap_push(tp__bpe_scratch *s, size_t *hn, hent e) {
  if (*hn == s->heap_cap) {
    size_t cap = s->heap_cap ? s->heap_cap * 2 : 256;
    hent *h = realloc(s->heap, cap * sizeof(*h));
    if (h == NULL) return TP_ENOMEM;
    s->heap = h;
    s->heap_cap = cap;
  }
  size_t i = (*hn)++;
  while (i > 0) {
    size_t p = (i - 1) / 2;
    if (!(e < s->heap[p])) break;
    s->heap[i] = s->heap[p];
    i = p;
  }
  s->heap[i] = e;
  return 0;
}

static hent heap_pop(tp__bpe_scratch *s, size_t *hn) {
  hent top = s->heap[0];
  size_t n = --*hn;
  hent last = s->heap[n];
  /* A sentinel past the end lets the sift pick the smaller child without
   * a bounds test (c + 1 <= n always indexes the array). */
  s->heap[n] = UINT64_MAX;
  size_t i = 0;
  for (;;) {
    size_t c = 2 * i + 1;
    if (c >= n) break;
    c += s->heap[c + 1] < s->heap[c];
    if (s->heap[c] >= last) break;
    s->heap[i] = s->heap[c];
    i = c;
  }
  if (n) s->heap[i] = last;
  return top;
}

/* The heap holds (rank, position) of pairs as they were when pushed; an
 * entry is current when its left symbol is still there and its pair still
 * has that rank (a rank names one pair, so equal rank means same pair). */
static int merge_heap(const tp__bpe *m, tp__bpe_scratch *s, int32_t n) {
  size_t hn = 0;
  for (int32_t i = 0; i < n; i++) {
    set_pair(m, s, i);
    if (s->rank[i] != UINT32_MAX && heap_push(s, &hn, HENT(s->rank[i], i))) return TP_ENOMEM;
  }
  while (hn) {
    hent e = heap_pop(s, &hn);
    int32_t i = (int32_t)(uint32_t)e;
    if (s->id[i] < 0 || s->rank[i] != (uint32_t)(e >> 32)) continue;
    do_merge(s, i);
    set_pair(m, s, i);
    if (s->rank[i] != UINT32_MAX && heap_push(s, &hn, HENT(s->rank[i], i))) return TP_ENOMEM;
    int32_t p = s->prev[i];
    if (p >= 0) {
      set_pair(m, s, p);
      if (s->rank[p] != UINT32_MAX && heap_push(s, &hn, HENT(s->rank[p], p))) return TP_ENOMEM;
    }
  }
  return 0;
}

static inline int32_t char_id(const tp__bpe *m, tp__bpe_scratch *s, const char *c, size_t cl, bool first,
                              bool last, int *err) {
  if (m->prefix == NULL && m->suffix == NULL) {
    const unsigned char *u = (const unsigned char *)c;
    if (cl == 1) return m->small_cp[u[0]];
    if (cl == 2) return m->small_cp[((u[0] & 0x1Fu) << 6) | (u[1] & 0x3Fu)];
    return tp__bpe_lookup(m, c, cl);
  }
  size_t pl = first ? 0 : m->prefix_len, sl = last ? m->suffix_len : 0;
  if (reserve_tmp(s, pl + cl + sl)) {
    *err = TP_ENOMEM;
    return -1;
  }
  if (pl) memcpy(s->tmp, m->prefix, pl);
  memcpy(s->tmp + pl, c, cl);
  if (sl) memcpy(s->tmp + pl + cl, m->suffix, sl);
  return tp__bpe_lookup(m, s->tmp, pl + cl + sl);
}

/* One symbol per character of w (the model's string), with the byte
 * fallback and unk rules of tokenizers' BPE::merge_word, including its
 * quirk that byte-fallback symbols do not flush a pending unk. */
static int initial_symbols(const tp__bpe *m, tp__bpe_scratch *s, const char *w, size_t n, int32_t *count) {
  int32_t k = 0;
  int32_t unk = -1; /* a pending unk symbol: fused characters wait here */
  int err = 0;
  if (reserve_syms(s, n + 1)) return TP_ENOMEM;
  for (size_t i = 0; i < n;) {
    size_t cl = char_len((unsigned char)w[i]);
    if (cl > n - i) cl = n - i;
    int32_t id = char_id(m, s, w + i, cl, i == 0, i + cl == n, &err);
    if (err) return err;
    if (id >= 0) {
      if (unk >= 0) s->id[k++] = unk, unk = -1;
      s->id[k++] = id;
    } else {
      bool done = false;
      if (m->byte_fallback) {
        /* The character as the model saw it, prefix and suffix included. */
        const char *src = w + i;
        size_t sl = cl;
        if (m->prefix != NULL || m->suffix != NULL) {
          size_t pl = i == 0 ? 0 : m->prefix_len, xl = i + cl == n ? m->suffix_len : 0;
          src = s->tmp;
          sl = pl + cl + xl;
        }
        bool all = true;
        for (size_t b = 0; b < sl; b++)
          if (m->byte_tok[(unsigned char)src[b]] < 0) all = false;
        if (all) {
          if (reserve_syms(s, (size_t)k + sl + (n - i) + 1)) return TP_ENOMEM;
          for (size_t b = 0; b < sl; b++) s->id[k++] = m->byte_tok[(unsigned char)src[b]];
          done = true;
        }
      }
      if (!done && m->unk_id >= 0) {
        if (unk >= 0 && !m->fuse_unk) s->id[k++] = unk;
        unk = m->unk_id;
      }
    }
    i += cl;
  }
  if (unk >= 0) s->id[k++] = unk;
  *count = k;
  return 0;
}

static void cache_put(tp__bpe_scratch *s, uint64_t h, const char *w, size_t n, const int32_t *ids,
                      size_t nids) {
  if (n <= CACHE_WORD && nids <= CACHE_IDS) {
    if (s->cache == NULL) return;
    cslot *c = &s->cache[h & (CACHE_SLOTS - 1)];
    c->hash = h;
    c->wlen = (uint8_t)n;
    c->nids = (uint8_t)nids;
    memcpy(c->w, w, n);
    memcpy(c->ids, ids, nids * sizeof(int32_t));
    return;
  }
  if (n > LONG_WORD || nids > LONG_WORD || s->longc == NULL) return;
  lslot *set = &s->longc[2 * (h & (LONG_SETS - 1))];
  lslot *l = set[0].stamp <= set[1].stamp ? &set[0] : &set[1];
  size_t at = (n + 3) & ~(size_t)3, need = at + nids * sizeof(int32_t);
  if (need > l->cap) {
    char *b = realloc(l->buf, need);
    if (b == NULL) return; /* not cached: no harm */
    l->buf = b;
    l->cap = need;
  }
  l->hash = h;
  l->wlen = (uint32_t)n;
  l->nids = (uint32_t)nids;
  l->stamp = ++s->clock;
  memcpy(l->buf, w, n);
  memcpy(l->buf + at, ids, nids * sizeof(int32_t));
}

/* Appends the cached ids of w, if it is cached; 1 when it was. */
static int cache_get(tp__bpe_scratch *s, uint64_t h, const char *w, size_t n, tp__ids *out) {
  const int32_t *ids = NULL;
  size_t nids = 0;
  if (n <= CACHE_WORD) {
    const cslot *c = &s->cache[h & (CACHE_SLOTS - 1)];
    if (c->hash == h && c->wlen == n && memcmp(c->w, w, n) == 0) ids = c->ids, nids = c->nids;
  }
  if (ids == NULL && n > CACHE_WORD && s->longc != NULL) {
    lslot *set = &s->longc[2 * (h & (LONG_SETS - 1))];
    for (int k = 0; k < 2 && ids == NULL; k++) {
      lslot *l = &set[k];
      if (l->buf && l->hash == h && l->wlen == n && memcmp(l->buf, w, n) == 0) {
        ids = (const int32_t *)(const void *)(l->buf + ((n + 3) & ~(size_t)3));
        nids = l->nids;
        l->stamp = ++s->clock;
      }
    }
  }
  if (ids == NULL) return 0;
  if (tp__ids_reserve(out, nids)) return TP_ENOMEM;
  memcpy(out->v + out->n, ids, nids * sizeof(int32_t));
  out->n += nids;
  return 1;
}

int tp__bpe_word(const tp__bpe *m, tp__bpe_scratch *s, const char *w, size_t n, tp__ids *out) {
  if (n == 0) return 0;
  uint64_t h = 0;
  bool cacheable = n <= LONG_WORD;
  if (cacheable) {
    /* Allocated on first use; when that fails, words are not cached. */
    if (s->cache == NULL) s->cache = calloc(CACHE_SLOTS, sizeof(cslot));
    if (s->longc == NULL && n > CACHE_WORD) s->longc = calloc(2 * LONG_SETS, sizeof(lslot));
    cacheable = s->cache != NULL;
  }
  if (cacheable) {
    h = tp__hash_bytes(w, n);
    int hit = cache_get(s, h, w, n, out);
    if (hit) return hit < 0 ? hit : 0;
  }

  /* The model's string: byte-level words are mapped unless the table
   * gives every symbol directly and ignore_merges needs no lookup. */
  const char *ms = w;
  size_t mn = n;
  if (m->bytelevel && (!m->bl_complete || m->ignore_merges)) {
    /* Every byte becomes a character below U+0144: at most 2 bytes. */
    if (n > SIZE_MAX / 2 || grow(&s->map, &s->map_cap, 2 * n)) return TP_ENOMEM;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += put_utf8(s->map + k, tp__bytelevel_cp((uint8_t)w[i]));
    ms = s->map;
    mn = k;
  }
  int rv = 0;
  size_t start = out->n;
  if (m->ignore_merges) {
    int32_t id = tp__bpe_lookup(m, ms, mn);
    if (id >= 0) {
      rv = tp__ids_push(out, id) ? TP_ENOMEM : 0;
      goto done;
    }
  }
  int32_t count = 0;
  if (m->bytelevel && m->bl_complete) {
    if ((rv = reserve_syms(s, n + 1)) != 0) goto done;
    for (size_t i = 0; i < n; i++) s->id[i] = m->bl_id[(unsigned char)w[i]];
    count = (int32_t)n;
  } else if ((rv = initial_symbols(m, s, ms, mn, &count)) != 0) {
    goto done;
  }
  if (count == 0) goto done;
  for (int32_t i = 0; i < count; i++) {
    s->prev[i] = i - 1;
    s->next[i] = i + 1 < count ? i + 1 : -1;
  }
  if (count <= SCAN_MAX)
    merge_scan(m, s, count);
  else if ((rv = merge_heap(m, s, count)) != 0)
    goto done;
  {
    size_t nout = 0;
    for (int32_t i = 0; i >= 0; i = s->next[i]) nout++;
    if ((rv = tp__ids_reserve(out, nout)) != 0) goto done;
    for (int32_t i = 0; i >= 0; i = s->next[i]) out->v[out->n++] = s->id[i];
  }
done:
  if (rv == 0 && cacheable) cache_put(s, h, w, n, out->v + start, out->n - start);
  return rv;
}

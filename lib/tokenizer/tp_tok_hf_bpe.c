/* The BPE model: hash tables built from tokenizer.json, and the merge loop.
 *
 * The merge loop is the classic one, picking the lowest-ranked adjacent
 * pair and the leftmost of equal ranks.  Short words keep the rank of each
 * pair in an array and scan it (a handful of integer compares beats a heap
 * there); long words use a binary heap of (rank, position) with stale
 * entries skipped on pop, so a 100 kB "word" (a base64 blob, a run of one
 * character) stays O(n log n). */
#include "tokenizer/tp_tok_hf_bpe.h"
#include "tokenizer/tp_tok_hf_bpe_tab.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/tp_common.h"
#include "util/tp_utf8.h"

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

/* ------------------------------------------------------------------------ */
/* Tables                                                                   */

int32_t tp__bpe_lookup(const tp__bpe *m, const char *s, size_t n) {
  if (m->vtab == NULL) return -1;
  return lookup_h(m, s, n, tp__hash_bytes(s, n));
}

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

const char *tp__bpe_token(const tp__bpe *m, int32_t id, size_t *len) {
  if (id < 0 || id > m->max_id || m->id_off[id] == UINT32_MAX) return NULL;
  *len = m->id_len[id];
  return m->pool + m->id_off[id];
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
    size_t cl = tp_utf8_lead_len((unsigned char)w[i]);
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
    for (size_t i = 0; i < n; i++) k += tp_utf8_put(s->map + k, tp__bytelevel_cp((uint8_t)w[i]));
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

#include "tp_mock_engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/tp_words.h"
#include "tokperf/mock.h"

struct tp_mock_engine {
  /* Timing parameters converted once to nanoseconds (doubles, so that
   * fractional microseconds per token still add up). */
  double ttft_ns;
  double prefill_ns_per_token;
  double prefill_queue_ns;
  double itl_ns;
  double itl_ns_per_seq;
  uint32_t max_batch;
  uint32_t output_tokens;
  double eos_prob;
  uint64_t seed;

  tp_mock_admit_cb admit_cb;
  void *user_data;

  uint64_t next_number;
  uint32_t n_prefill, n_decode, n_queued;
  tp_mock_seq *qhead, *qtail;

  uint64_t tokens_total;
  uint64_t busy_ns, busy_since_ns; /* busy_since_ns valid while a slot is held */
  uint32_t block_words;
  uint64_t kv_used, kv_max;

  /* Prefix cache: a hash table of nodes (chained through hnext) with an LRU
   * list through prev/next; indices, NIL = none.  Nodes are never freed one
   * by one: a full cache reuses its least recently used node. */
  bool pc_on;
  struct pc_node {
    uint64_t hash;
    uint32_t prev, next, hnext;
  } *pc;
  uint32_t pc_cap, pc_n;
  uint32_t *pc_buckets;
  uint32_t pc_mask;
  uint32_t pc_head, pc_tail; /* most and least recently used */
  uint64_t pc_queries, pc_hits;
};

#define NIL UINT32_MAX

/* splitmix64: a tiny, well-mixed generator whose whole state is one word,
 * so every sequence can carry its own streams and the text of request n
 * does not depend on how requests interleave. */
static uint64_t splitmix64(uint64_t *state) {
  uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

static uint64_t derive(uint64_t seed, uint64_t number, uint64_t stream) {
  uint64_t s = seed ^ (stream * 0xd1b54a32d192ed03ULL);
  uint64_t a = splitmix64(&s);
  s = a ^ number;
  return splitmix64(&s);
}

static uint64_t ns_round(double ns) {
  return ns <= 0 ? 0 : (uint64_t)(ns + 0.5);
}

static int valid_time(double v) {
  return isfinite(v) && v >= 0;
}

/* ---- prefix cache ------------------------------------------------------------ */

static uint32_t pc_find(const tp_mock_engine *e, uint64_t h) {
  for (uint32_t i = e->pc_buckets[h & e->pc_mask]; i != NIL; i = e->pc[i].hnext)
    if (e->pc[i].hash == h) return i;
  return NIL;
}

static void lru_unlink(tp_mock_engine *e, uint32_t i) {
  struct pc_node *n = &e->pc[i];
  if (n->prev != NIL)
    e->pc[n->prev].next = n->next;
  else
    e->pc_head = n->next;
  if (n->next != NIL)
    e->pc[n->next].prev = n->prev;
  else
    e->pc_tail = n->prev;
  n->prev = n->next = NIL;
}

static void lru_push_front(tp_mock_engine *e, uint32_t i) {
  struct pc_node *n = &e->pc[i];
  n->prev = NIL;
  n->next = e->pc_head;
  if (e->pc_head != NIL) e->pc[e->pc_head].prev = i;
  e->pc_head = i;
  if (e->pc_tail == NIL) e->pc_tail = i;
}

static void pc_touch(tp_mock_engine *e, uint32_t i) {
  if (e->pc_head == i) return;
  lru_unlink(e, i);
  lru_push_front(e, i);
}

static void pc_insert(tp_mock_engine *e, uint64_t h) {
  uint32_t i = pc_find(e, h);
  if (i != NIL) {
    pc_touch(e, i);
    return;
  }
  if (e->pc_n < e->pc_cap) {
    i = e->pc_n++;
  } else {
    /* Evict the least recently used block: out of its bucket chain, then
     * out of the LRU list. */
    i = e->pc_tail;
    uint32_t *pp = &e->pc_buckets[e->pc[i].hash & e->pc_mask];
    while (*pp != i) pp = &e->pc[*pp].hnext;
    *pp = e->pc[i].hnext;
    lru_unlink(e, i);
  }
  struct pc_node *n = &e->pc[i];
  n->hash = h;
  n->hnext = e->pc_buckets[h & e->pc_mask];
  e->pc_buckets[h & e->pc_mask] = i;
  lru_push_front(e, i);
}

static bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* FNV-1a over the words of each block, chained: block i's key covers the
 * whole prefix up to and including it. */
static int hash_blocks(tp_mock_engine *e, tp_mock_seq *s, const char *p, size_t len) {
  uint32_t nb = s->prompt_tokens / e->block_words;
  if (nb == 0 || !p) return 0;
  s->block_hashes = malloc(sizeof(uint64_t) * nb);
  if (!s->block_hashes) return TP_ENOMEM;
  uint64_t h = 0xcbf29ce484222325ULL;
  uint32_t words = 0, b = 0;
  size_t i = 0;
  while (b < nb) {
    while (i < len && is_space(p[i])) i++;
    if (i >= len) break;
    while (i < len && !is_space(p[i])) {
      h = (h ^ (uint8_t)p[i++]) * 0x100000001b3ULL;
    }
    h = (h ^ 0x20) * 0x100000001b3ULL; /* word separator */
    if (++words == e->block_words) {
      s->block_hashes[b++] = h;
      words = 0;
    }
  }
  s->n_blocks = b;
  return 0;
}

static void drop_blocks(tp_mock_seq *s) {
  free(s->block_hashes);
  s->block_hashes = NULL;
  s->n_blocks = 0;
}

/* ---- engine ------------------------------------------------------------------ */

int tp_mock_engine_new(tp_mock_engine **out, const tp_mock_config *cfg, tp_mock_admit_cb admit_cb,
                       void *user_data) {
  *out = NULL;
  if (!valid_time(cfg->ttft_ms) || !valid_time(cfg->prefill_us_per_token) ||
      !valid_time(cfg->prefill_queue_ms) || !valid_time(cfg->itl_ms) || !valid_time(cfg->itl_us_per_seq) ||
      !(cfg->eos_prob >= 0 && cfg->eos_prob <= 1))
    return TP_EINVAL;
  if (cfg->prefix_cache && (cfg->prefix_cache_block_words == 0 || cfg->prefix_cache_blocks == 0 ||
                            cfg->prefix_cache_blocks > (1u << 28)))
    return TP_EINVAL;
  tp_mock_engine *e = calloc(1, sizeof(*e));
  if (!e) return TP_ENOMEM;
  e->block_words = cfg->prefix_cache_block_words ? cfg->prefix_cache_block_words : 16;
  e->kv_max = cfg->prefix_cache_blocks;
  e->pc_head = e->pc_tail = NIL;
  if (cfg->prefix_cache) {
    uint32_t nbuckets = 16;
    while (nbuckets < 2 * cfg->prefix_cache_blocks) nbuckets *= 2;
    e->pc = malloc(sizeof(*e->pc) * cfg->prefix_cache_blocks);
    e->pc_buckets = malloc(sizeof(uint32_t) * nbuckets);
    if (!e->pc || !e->pc_buckets) {
      free(e->pc);
      free(e->pc_buckets);
      free(e);
      return TP_ENOMEM;
    }
    memset(e->pc_buckets, 0xff, sizeof(uint32_t) * nbuckets);
    e->pc_mask = nbuckets - 1;
    e->pc_cap = cfg->prefix_cache_blocks;
    e->pc_on = true;
  }
  e->ttft_ns = cfg->ttft_ms * 1e6;
  e->prefill_ns_per_token = cfg->prefill_us_per_token * 1e3;
  e->prefill_queue_ns = cfg->prefill_queue_ms * 1e6;
  e->itl_ns = cfg->itl_ms * 1e6;
  e->itl_ns_per_seq = cfg->itl_us_per_seq * 1e3;
  e->max_batch = cfg->max_batch ? cfg->max_batch : 1;
  e->output_tokens = cfg->output_tokens;
  e->eos_prob = cfg->eos_prob;
  e->seed = cfg->seed;
  e->admit_cb = admit_cb;
  e->user_data = user_data;
  *out = e;
  return 0;
}

void tp_mock_engine_free(tp_mock_engine *e) {
  if (!e) return;
  free(e->pc);
  free(e->pc_buckets);
  free(e);
}

static uint32_t blocks_for(const tp_mock_engine *e, uint64_t tokens) {
  uint64_t b = (tokens + e->block_words - 1) / e->block_words;
  return b > UINT32_MAX ? UINT32_MAX : (uint32_t)b;
}

static void admit(tp_mock_engine *e, tp_mock_seq *s, uint64_t now_ns) {
  if (e->pc_on) {
    uint32_t hit = 0;
    while (hit < s->n_blocks && pc_find(e, s->block_hashes[hit]) != NIL) hit++;
    /* The last prompt token is always computed (its logits give the first
     * output token), so a fully cached prompt still prefills one block. */
    uint32_t limit = s->prompt_tokens ? (s->prompt_tokens - 1) / e->block_words : 0;
    if (hit > limit) hit = limit;
    for (uint32_t i = 0; i < hit; i++) pc_touch(e, pc_find(e, s->block_hashes[i]));
    s->cached_tokens = hit * e->block_words;
    e->pc_queries += s->prompt_tokens;
    e->pc_hits += s->cached_tokens;
  }
  /* Prefills already in flight share the GPU with this one: each adds
   * prefill_queue_ms, which is how a burst of arrivals stretches TTFT. */
  double d = e->ttft_ns + e->prefill_ns_per_token * (s->prompt_tokens - s->cached_tokens) +
             e->prefill_queue_ns * e->n_prefill;
  s->state = TP_MOCK_SEQ_PREFILL;
  s->admit_ns = now_ns;
  s->next_deadline_ns = now_ns + ns_round(d);
  s->kv_blocks = blocks_for(e, s->prompt_tokens);
  e->kv_used += s->kv_blocks;
  if (e->n_prefill + e->n_decode == 0) e->busy_since_ns = now_ns;
  e->n_prefill++;
  if (e->admit_cb) e->admit_cb(e, s, e->user_data);
}

static void admit_queued(tp_mock_engine *e, uint64_t now_ns) {
  while (e->qhead && e->n_prefill + e->n_decode < e->max_batch) {
    tp_mock_seq *s = e->qhead;
    e->qhead = s->qnext;
    if (!e->qhead) e->qtail = NULL;
    s->qnext = NULL;
    e->n_queued--;
    admit(e, s, now_ns);
  }
}

int tp_mock_engine_submit(tp_mock_engine *e, tp_mock_seq *s, const tp_mock_seq_params *p, uint64_t now_ns) {
  if (s->state != TP_MOCK_SEQ_IDLE) return TP_EINVAL;
  void *data = s->data;
  memset(s, 0, sizeof(*s));
  s->data = data;
  s->number = e->next_number++;
  s->arrival_ns = now_ns;
  s->prompt_tokens = p->prompt_tokens;
  if (p->endless) {
    s->max_tokens = UINT32_MAX;
    s->eos_enabled = false;
  } else if (e->output_tokens > 0) {
    s->max_tokens = e->output_tokens;
    s->eos_enabled = false;
  } else {
    s->max_tokens = p->max_tokens ? p->max_tokens : TP_MOCK_DEFAULT_MAX_TOKENS;
    s->eos_enabled = e->eos_prob > 0 && !p->ignore_eos;
  }
  s->min_tokens = p->min_tokens;
  s->word_rng = derive(e->seed, s->number, 1);
  s->eos_rng = derive(e->seed, s->number, 2);
  if (e->pc_on && hash_blocks(e, s, p->prompt, p->prompt_len) != 0) {
    e->next_number--;
    return TP_ENOMEM;
  }

  if (e->n_prefill + e->n_decode < e->max_batch && !e->qhead) {
    admit(e, s, now_ns);
  } else {
    /* FIFO: a newcomer never overtakes a waiting request. */
    s->state = TP_MOCK_SEQ_QUEUED;
    if (e->qtail)
      e->qtail->qnext = s;
    else
      e->qhead = s;
    e->qtail = s;
    e->n_queued++;
  }
  return 0;
}

static void leave_batch(tp_mock_engine *e, tp_mock_seq *s, uint64_t now_ns) {
  if (s->state == TP_MOCK_SEQ_PREFILL)
    e->n_prefill--;
  else if (s->state == TP_MOCK_SEQ_DECODE)
    e->n_decode--;
  s->state = TP_MOCK_SEQ_IDLE;
  e->kv_used -= s->kv_blocks;
  s->kv_blocks = 0;
  drop_blocks(s);
  if (e->n_prefill + e->n_decode == 0 && now_ns > e->busy_since_ns) e->busy_ns += now_ns - e->busy_since_ns;
}

int tp_mock_engine_next(tp_mock_engine *e, tp_mock_seq *s, uint64_t now_ns, tp_mock_token *tok) {
  if (s->state != TP_MOCK_SEQ_PREFILL && s->state != TP_MOCK_SEQ_DECODE) return TP_EINVAL;
  uint32_t k = s->tokens_out++;
  tok->index = k;
  tok->deadline_ns = s->next_deadline_ns;

  const char *w = tp_words[splitmix64(&s->word_rng) % tp_words_n];
  size_t wl = strlen(w);
  if (wl > sizeof(tok->text) - 2) wl = sizeof(tok->text) - 2;
  tok->text[0] = ' ';
  memcpy(tok->text + 1, w, wl);
  tok->text[wl + 1] = 0;
  tok->text_len = wl + 1;

  /* The end-of-sequence token is not shown as text by real servers; here
   * the token on which it is drawn is simply the last one, so the output
   * is never empty and every response carries a word. */
  bool last = s->tokens_out >= s->max_tokens;
  s->hit_length = last;
  if (!last && s->eos_enabled && s->tokens_out >= s->min_tokens) {
    double u = (double)(splitmix64(&s->eos_rng) >> 11) * 0x1.0p-53;
    if (u < e->eos_prob) last = true;
  }
  tok->last = last;
  e->tokens_total++;

  if (s->state == TP_MOCK_SEQ_PREFILL) {
    e->n_prefill--;
    e->n_decode++;
    s->state = TP_MOCK_SEQ_DECODE;
    /* The prefill is done: its full blocks are now reusable. */
    for (uint32_t i = 0; i < s->n_blocks; i++) pc_insert(e, s->block_hashes[i]);
    drop_blocks(s);
  }
  uint32_t need = blocks_for(e, (uint64_t)s->prompt_tokens + s->tokens_out);
  if (need > s->kv_blocks) {
    e->kv_used += need - s->kv_blocks;
    s->kv_blocks = need;
  }
  if (last) {
    leave_batch(e, s, now_ns);
    admit_queued(e, now_ns);
    return 0;
  }
  /* From the previous deadline, not from now_ns: a timer that fired late
   * does not push every later token back. */
  s->next_deadline_ns += ns_round(e->itl_ns + e->itl_ns_per_seq * e->n_decode);
  return 0;
}

void tp_mock_engine_cancel(tp_mock_engine *e, tp_mock_seq *s, uint64_t now_ns) {
  if (s->state == TP_MOCK_SEQ_QUEUED) {
    tp_mock_seq **pp = &e->qhead, *prev = NULL;
    while (*pp && *pp != s) {
      prev = *pp;
      pp = &(*pp)->qnext;
    }
    if (*pp) {
      *pp = s->qnext;
      if (e->qtail == s) e->qtail = prev;
      e->n_queued--;
    }
    s->qnext = NULL;
    s->state = TP_MOCK_SEQ_IDLE;
    drop_blocks(s);
    return;
  }
  if (s->state == TP_MOCK_SEQ_IDLE) return;
  leave_batch(e, s, now_ns);
  admit_queued(e, now_ns);
}

uint32_t tp_mock_engine_running(const tp_mock_engine *e) {
  return e->n_prefill + e->n_decode;
}
uint32_t tp_mock_engine_prefilling(const tp_mock_engine *e) {
  return e->n_prefill;
}
uint32_t tp_mock_engine_decoding(const tp_mock_engine *e) {
  return e->n_decode;
}
uint32_t tp_mock_engine_queued(const tp_mock_engine *e) {
  return e->n_queued;
}
uint64_t tp_mock_engine_next_number(const tp_mock_engine *e) {
  return e->next_number;
}
uint64_t tp_mock_engine_take_number(tp_mock_engine *e) {
  return e->next_number++;
}
uint64_t tp_mock_engine_tokens_total(const tp_mock_engine *e) {
  return e->tokens_total;
}
uint64_t tp_mock_engine_busy_ns(const tp_mock_engine *e, uint64_t now_ns) {
  uint64_t b = e->busy_ns;
  if (e->n_prefill + e->n_decode > 0 && now_ns > e->busy_since_ns) b += now_ns - e->busy_since_ns;
  return b;
}
uint64_t tp_mock_engine_kv_blocks_used(const tp_mock_engine *e) {
  return e->kv_used;
}
uint64_t tp_mock_engine_kv_blocks_max(const tp_mock_engine *e) {
  return e->kv_max;
}
uint64_t tp_mock_engine_prefix_queries_tokens(const tp_mock_engine *e) {
  return e->pc_queries;
}
uint64_t tp_mock_engine_prefix_hits_tokens(const tp_mock_engine *e) {
  return e->pc_hits;
}
uint32_t tp_mock_engine_prefix_cached_blocks(const tp_mock_engine *e) {
  return e->pc_n;
}

uint32_t tp_mock_count_words(const char *text, size_t len) {
  uint32_t n = 0;
  bool in_word = false;
  for (size_t i = 0; i < len; i++) {
    char c = text[i];
    bool space = c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
    if (!space && !in_word && n < UINT32_MAX) n++;
    in_word = !space;
  }
  return n;
}

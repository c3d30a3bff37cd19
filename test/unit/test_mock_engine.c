/* Unit tests for the mock server's timing model (mock/tp_mock_engine.c).
 * The clock is injected: every "now" below is a made-up time, so the
 * deadlines are exact. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock/tp_mock_engine.h"
#include "tp_test.h"
#include "util/tp_words.h"
#include "tokperf/tokperf.h"

#define MS 1000000ULL
#define US 1000ULL
#define T0 (1000 * MS) /* an arbitrary start time */

typedef struct admits {
  tp_mock_seq *order[64];
  uint64_t deadline[64];
  int n;
} admits;

static void on_admit(tp_mock_engine *e, tp_mock_seq *s, void *user_data) {
  admits *a = user_data;
  if (a->n < 64) {
    a->order[a->n] = s;
    a->deadline[a->n] = s->next_deadline_ns;
  }
  a->n++;
}

static tp_mock_config base_cfg(void) {
  tp_mock_config c;
  memset(&c, 0, sizeof(c));
  c.ttft_ms = 50;
  c.itl_ms = 10;
  c.max_batch = 256;
  c.seed = 1;
  return c;
}

static int is_word_token(const tp_mock_token *t) {
  if (t->text_len < 2 || t->text[0] != ' ' || strlen(t->text) != t->text_len) return 0;
  for (size_t i = 0; i < tp_words_n; i++)
    if (strcmp(t->text + 1, tp_words[i]) == 0) return 1;
  return 0;
}

static void test_fixed_timing(void) {
  tp_mock_config c = base_cfg();
  c.output_tokens = 32;
  admits a = {0};
  tp_mock_engine *e;
  CHECK_INT(tp_mock_engine_new(&e, &c, on_admit, &a), 0, "fixed: engine created");
  tp_mock_seq s = {0};
  tp_mock_seq_params p = {.prompt_tokens = 100, .max_tokens = 500};
  CHECK_INT(tp_mock_engine_submit(e, &s, &p, T0), 0, "fixed: submit");
  CHECK_INT(a.n, 1, "fixed: admitted at once");
  CHECK_INT(s.admit_ns, T0, "fixed: admit time = arrival");
  CHECK_INT(s.next_deadline_ns, T0 + 50 * MS, "fixed: first token at t0 + 50 ms");
  int exact = 1, words = 1, lasts = 0;
  uint32_t n = 0;
  tp_mock_token tok;
  while (s.state != TP_MOCK_SEQ_IDLE && n < 1000) {
    uint64_t want = T0 + 50 * MS + (uint64_t)n * 10 * MS;
    if (s.next_deadline_ns != want) exact = 0;
    /* Fire 3 ms late every time: deadlines must not drift. */
    if (tp_mock_engine_next(e, &s, s.next_deadline_ns + 3 * MS, &tok)) break;
    if (tok.index != n || tok.deadline_ns != want) exact = 0;
    if (!is_word_token(&tok)) words = 0;
    if (tok.last) lasts++;
    n++;
  }
  CHECK_INT(n, 32, "fixed: output_tokens = 32 wins over max_tokens");
  CHECK(exact, "fixed: token k due exactly at t0 + 50 ms + k x 10 ms, despite late firing");
  CHECK(words, "fixed: every token is ' ' + a word of tp_words");
  CHECK_INT(lasts, 1, "fixed: only the 32nd token is last");
  CHECK_INT(tp_mock_engine_running(e), 0, "fixed: batch empty at the end");
  CHECK_INT(tp_mock_engine_next(e, &s, T0, &tok), TP_EINVAL, "fixed: next on a finished seq");
  tp_mock_engine_free(e);
}

/* Runs s to its end, firing each token exactly on time; returns the count. */
static uint32_t drain(tp_mock_engine *e, tp_mock_seq *s, uint64_t *end_ns) {
  tp_mock_token tok;
  uint32_t n = 0;
  while (s->state != TP_MOCK_SEQ_IDLE && n < 100000) {
    uint64_t t = s->next_deadline_ns;
    if (tp_mock_engine_next(e, s, t, &tok)) break;
    if (end_ns) *end_ns = t;
    n++;
  }
  return n;
}

static void test_queueing(void) {
  tp_mock_config c = base_cfg();
  c.max_batch = 2;
  c.output_tokens = 4;
  admits a = {0};
  tp_mock_engine *e;
  tp_mock_engine_new(&e, &c, on_admit, &a);
  tp_mock_seq s[5];
  memset(s, 0, sizeof(s));
  tp_mock_seq_params p = {.prompt_tokens = 1};
  for (int i = 0; i < 5; i++) tp_mock_engine_submit(e, &s[i], &p, T0 + (uint64_t)i * US);
  CHECK_INT(a.n, 2, "queue: two admitted (max_batch 2)");
  CHECK_INT(tp_mock_engine_running(e), 2, "queue: two running");
  CHECK_INT(tp_mock_engine_queued(e), 3, "queue: three waiting");
  CHECK_INT(s[2].state, TP_MOCK_SEQ_QUEUED, "queue: third is queued");
  CHECK_INT(tp_mock_engine_submit(e, &s[2], &p, T0), TP_EINVAL, "queue: double submit refused");
  for (int i = 0; i < 5; i++) CHECK_INT(s[i].number, i, "queue: request numbers in order");

  /* Cancelling a queued request frees no slot. */
  tp_mock_engine_cancel(e, &s[3], T0 + 5 * MS);
  CHECK_INT(tp_mock_engine_queued(e), 2, "queue: cancel of a queued seq");
  CHECK_INT(a.n, 2, "queue: nobody admitted by it");
  CHECK_INT(s[3].state, TP_MOCK_SEQ_IDLE, "queue: cancelled seq idle");

  /* Finishing s[0] admits s[2] (FIFO) at the finishing time. */
  uint64_t end = 0;
  CHECK_INT(drain(e, &s[0], &end), 4, "queue: s0 makes 4 tokens");
  CHECK_INT(end, T0 + 50 * MS + 30 * MS, "queue: s0 last token at t0 + 80 ms");
  CHECK_INT(a.n, 3, "queue: a slot freed admits one");
  CHECK(a.order[2] == &s[2], "queue: FIFO, the oldest waiting one first");
  CHECK_INT(s[2].admit_ns, end, "queue: admitted when the slot freed");
  CHECK_INT(s[2].next_deadline_ns, end + 50 * MS, "queue: its TTFT counts from admission");

  /* Cancelling a running one admits the next waiting one (s[4]). */
  tp_mock_engine_cancel(e, &s[1], T0 + 90 * MS);
  CHECK_INT(a.n, 4, "queue: cancel of a running seq admits the next");
  CHECK(a.order[3] == &s[4], "queue: s4 admitted");
  CHECK_INT(s[4].admit_ns, T0 + 90 * MS, "queue: at the cancel time");
  CHECK_INT(tp_mock_engine_queued(e), 0, "queue: queue empty");
  tp_mock_engine_cancel(e, &s[1], T0 + 91 * MS); /* idle: no effect */
  CHECK_INT(tp_mock_engine_running(e), 2, "queue: second cancel is a no-op");
  tp_mock_engine_free(e);
}

static void test_itl_growth(void) {
  tp_mock_config c = base_cfg();
  c.itl_us_per_seq = 100;
  c.output_tokens = 3;
  admits a = {0};
  tp_mock_engine *e;
  tp_mock_engine_new(&e, &c, on_admit, &a);
  tp_mock_seq s[3];
  memset(s, 0, sizeof(s));
  tp_mock_seq_params p = {0};
  for (int i = 0; i < 3; i++) tp_mock_engine_submit(e, &s[i], &p, T0);
  for (int i = 0; i < 3; i++)
    CHECK_INT(s[i].next_deadline_ns, T0 + 50 * MS, "itl: first tokens due together");
  tp_mock_token tok;
  /* First tokens in order 0, 1, 2: the decoding count is 1, 2, 3. */
  for (int i = 0; i < 3; i++) tp_mock_engine_next(e, &s[i], T0 + 50 * MS, &tok);
  CHECK_INT(tp_mock_engine_decoding(e), 3, "itl: three decoding");
  CHECK_INT(s[0].next_deadline_ns, T0 + 60 * MS + 100 * US, "itl: 1 decoding: 10.1 ms");
  CHECK_INT(s[1].next_deadline_ns, T0 + 60 * MS + 200 * US, "itl: 2 decoding: 10.2 ms");
  CHECK_INT(s[2].next_deadline_ns, T0 + 60 * MS + 300 * US, "itl: 3 decoding: 10.3 ms");
  /* s0's second token with three decoding. */
  uint64_t d = s[0].next_deadline_ns;
  tp_mock_engine_next(e, &s[0], d, &tok);
  CHECK_INT(s[0].next_deadline_ns, d + 10 * MS + 300 * US, "itl: second gap with 3 decoding");
  /* s0 ends; s1's next gap sees only two decoding. */
  tp_mock_engine_next(e, &s[0], s[0].next_deadline_ns, &tok);
  CHECK(tok.last, "itl: s0 done after 3 tokens");
  d = s[1].next_deadline_ns;
  tp_mock_engine_next(e, &s[1], d, &tok);
  CHECK_INT(s[1].next_deadline_ns, d + 10 * MS + 200 * US, "itl: gap shrinks as sequences end");
  tp_mock_engine_free(e);
}

static void test_prefill_queue(void) {
  tp_mock_config c = base_cfg();
  c.prefill_queue_ms = 2;
  c.prefill_us_per_token = 100;
  admits a = {0};
  tp_mock_engine *e;
  tp_mock_engine_new(&e, &c, on_admit, &a);
  tp_mock_seq s[4];
  memset(s, 0, sizeof(s));
  uint32_t prompts[4] = {10, 10, 20, 10};
  for (int i = 0; i < 3; i++) {
    tp_mock_seq_params p = {.prompt_tokens = prompts[i]};
    tp_mock_engine_submit(e, &s[i], &p, T0);
  }
  CHECK_INT(tp_mock_engine_prefilling(e), 3, "prefill: three prefilling");
  CHECK_INT(s[0].next_deadline_ns, T0 + 50 * MS + 1 * MS, "prefill: none ahead: 50 + 10 x 0.1");
  CHECK_INT(s[1].next_deadline_ns, T0 + 50 * MS + 1 * MS + 2 * MS, "prefill: one ahead: + 2 ms");
  CHECK_INT(s[2].next_deadline_ns, T0 + 50 * MS + 2 * MS + 4 * MS, "prefill: two ahead, 20 tokens");
  /* Once s0's first token is out it no longer counts as a prefill. */
  tp_mock_token tok;
  tp_mock_engine_next(e, &s[0], s[0].next_deadline_ns, &tok);
  tp_mock_seq_params p = {.prompt_tokens = prompts[3]};
  uint64_t t1 = T0 + 60 * MS;
  tp_mock_engine_submit(e, &s[3], &p, t1);
  CHECK_INT(s[3].next_deadline_ns, t1 + 50 * MS + 1 * MS + 4 * MS, "prefill: only two still ahead");
  tp_mock_engine_free(e);
}

/* Generates request texts and lengths for n requests with one engine. */
static void generate(const tp_mock_config *c, const tp_mock_seq_params *p, int n, uint32_t *lens,
                     uint64_t *text_hash) {
  tp_mock_engine *e;
  tp_mock_engine_new(&e, c, NULL, NULL);
  tp_mock_seq s;
  tp_mock_token tok;
  for (int i = 0; i < n; i++) {
    memset(&s, 0, sizeof(s));
    tp_mock_engine_submit(e, &s, p, T0);
    uint64_t h = 1469598103934665603ULL;
    uint32_t len = 0;
    while (s.state != TP_MOCK_SEQ_IDLE && len < 100000) {
      tp_mock_engine_next(e, &s, s.next_deadline_ns, &tok);
      for (size_t k = 0; k < tok.text_len; k++) h = (h ^ (uint8_t)tok.text[k]) * 1099511628211ULL;
      len++;
    }
    lens[i] = len;
    text_hash[i] = h;
  }
  tp_mock_engine_free(e);
}

static void test_eos(void) {
  enum { N = 2000 };
  static uint32_t la[N], lb[N], lc[N];
  static uint64_t ha[N], hb[N], hc[N];
  tp_mock_config c = base_cfg();
  c.eos_prob = 0.1;
  c.seed = 42;
  tp_mock_seq_params p = {.max_tokens = 1000, .min_tokens = 5};
  generate(&c, &p, N, la, ha);
  generate(&c, &p, N, lb, hb);
  CHECK(memcmp(la, lb, sizeof(la)) == 0, "eos: same seed, same lengths");
  CHECK(memcmp(ha, hb, sizeof(ha)) == 0, "eos: same seed, same texts");
  double sum = 0;
  uint32_t mn = UINT32_MAX, mx = 0;
  for (int i = 0; i < N; i++) {
    sum += la[i];
    mn = la[i] < mn ? la[i] : mn;
    mx = la[i] > mx ? la[i] : mx;
  }
  /* Length = min_tokens + failures before the first EOS draw: mean
   * 5 + (1 - p) / p = 14; the standard error over 2000 is about 0.2. */
  printf("# eos p=0.1 min 5: mean %.2f, min %u, max %u\n", sum / N, mn, mx);
  CHECK_INT(mn, 5, "eos: never shorter than min_tokens, and often exactly that");
  CHECK(mx < 1000, "eos: max_tokens never reached at p = 0.1");
  CHECK_NEAR(sum / N, 14.0, 0.8, "eos: mean length matches the geometric model");

  c.seed = 43;
  generate(&c, &p, N, lc, hc);
  int same = 0;
  for (int i = 0; i < N; i++) same += ha[i] == hc[i];
  CHECK(same < N / 100, "eos: another seed gives other texts");

  tp_mock_seq_params q = p;
  q.ignore_eos = true;
  generate(&c, &q, 20, lc, hc);
  int all_max = 1;
  for (int i = 0; i < 20; i++) all_max &= lc[i] == 1000;
  CHECK(all_max, "eos: ignore_eos runs to max_tokens");

  tp_mock_seq_params r = {0};
  c.eos_prob = 0;
  generate(&c, &r, 3, lc, hc);
  CHECK_INT(lc[0], TP_MOCK_DEFAULT_MAX_TOKENS, "eos: absent max_tokens means 128");
  c.output_tokens = 7;
  c.eos_prob = 0.5;
  generate(&c, &p, 50, lc, hc);
  int all7 = 1;
  for (int i = 0; i < 50; i++) all7 &= lc[i] == 7;
  CHECK(all7, "eos: output_tokens fixes the length, no EOS");
}

static void test_words_and_config(void) {
  CHECK_INT(tp_mock_count_words("", 0), 0, "words: empty");
  CHECK_INT(tp_mock_count_words("  \t\n ", 5), 0, "words: blanks only");
  const char *t = "  What is\tmachine\nlearning?  ";
  CHECK_INT(tp_mock_count_words(t, strlen(t)), 4, "words: four words");
  CHECK_INT(tp_mock_count_words("a b c", 3), 2, "words: length is honoured");

  tp_mock_config c = base_cfg();
  tp_mock_engine *e = (tp_mock_engine *)&c;
  c.ttft_ms = -1;
  CHECK_INT(tp_mock_engine_new(&e, &c, NULL, NULL), TP_EINVAL, "config: negative ttft refused");
  CHECK(e == NULL, "config: out cleared on failure");
  c = base_cfg();
  c.eos_prob = 1.5;
  CHECK_INT(tp_mock_engine_new(&e, &c, NULL, NULL), TP_EINVAL, "config: eos_prob > 1 refused");
  c = base_cfg();
  c.itl_ms = NAN;
  CHECK_INT(tp_mock_engine_new(&e, &c, NULL, NULL), TP_EINVAL, "config: NaN refused");

  /* max_batch 0 behaves as 1. */
  c = base_cfg();
  c.max_batch = 0;
  CHECK_INT(tp_mock_engine_new(&e, &c, NULL, NULL), 0, "config: max_batch 0 accepted");
  tp_mock_seq s[2];
  memset(s, 0, sizeof(s));
  tp_mock_seq_params p = {0};
  tp_mock_engine_submit(e, &s[0], &p, T0);
  tp_mock_engine_submit(e, &s[1], &p, T0);
  CHECK_INT(tp_mock_engine_running(e), 1, "config: max_batch 0 runs one");
  tp_mock_engine_free(e);
}


/* n words "w0 w1 ..." starting at word `from` (a shared prefix is the same
 * `from`). */
static char *words_text(int from, int n) {
  static char bufs[8][4096];
  static int k = 0;
  char *b = bufs[k++ % 8];
  b[0] = 0;
  for (int i = 0; i < n; i++) {
    char w[16];
    snprintf(w, sizeof(w), "%sw%d", i ? " " : "", from + i);
    strcat(b, w);
  }
  return b;
}

/* Runs s to its end (tokens fired at their deadlines). */
static void run_out(tp_mock_engine *e, tp_mock_seq *s) {
  tp_mock_token tok;
  while (s->state == TP_MOCK_SEQ_PREFILL || s->state == TP_MOCK_SEQ_DECODE)
    if (tp_mock_engine_next(e, s, s->next_deadline_ns, &tok)) break;
}

static tp_mock_seq_params prompt_params(const char *text) {
  tp_mock_seq_params p = {0};
  p.prompt = text;
  p.prompt_len = strlen(text);
  p.prompt_tokens = tp_mock_count_words(text, p.prompt_len);
  p.max_tokens = 4;
  return p;
}

static void test_prefix_cache(void) {
  tp_mock_config c = base_cfg();
  c.ttft_ms = 10;
  c.prefill_us_per_token = 1000; /* 1 ms per uncached prompt word */
  c.prefix_cache = true;
  c.prefix_cache_block_words = 16;
  c.prefix_cache_blocks = 4;
  admits a = {0};
  tp_mock_engine *e;
  CHECK_INT(tp_mock_engine_new(&e, &c, on_admit, &a), 0, "prefix: engine created");
  const char *p40 = words_text(0, 40);
  tp_mock_seq s1 = {0}, s2 = {0}, s3 = {0}, s4 = {0}, s5 = {0};
  tp_mock_seq_params p = prompt_params(p40);
  CHECK_INT(p.prompt_tokens, 40, "prefix: 40 words");
  tp_mock_engine_submit(e, &s1, &p, T0);
  CHECK_INT(s1.cached_tokens, 0, "prefix: a cold cache hits nothing");
  CHECK_INT(s1.next_deadline_ns, T0 + 10 * MS + 40 * MS, "prefix: cold TTFT = 10 ms + 40 words x 1 ms");
  /* A second identical prompt while the first still prefills: its blocks
   * are not in the cache yet. */
  tp_mock_engine_submit(e, &s2, &p, T0);
  CHECK_INT(s2.cached_tokens, 0, "prefix: a prompt prefilled concurrently also misses");
  run_out(e, &s1);
  run_out(e, &s2);
  CHECK_INT(tp_mock_engine_prefix_cached_blocks(e), 2, "prefix: 40 words leave 2 full blocks of 16");
  uint64_t t1 = T0 + 500 * MS;
  tp_mock_engine_submit(e, &s3, &p, t1);
  CHECK_INT(s3.cached_tokens, 32, "prefix: a repeated prompt finds its 2 full blocks (32 words)");
  CHECK_INT(s3.next_deadline_ns, t1 + 10 * MS + 8 * MS, "prefix: warm TTFT = 10 ms + the 8 uncached words");
  run_out(e, &s3);
  /* A prompt of exactly 32 words: its last word is always computed, so
   * only the first block counts. */
  tp_mock_seq_params p32 = prompt_params(words_text(0, 32));
  tp_mock_engine_submit(e, &s4, &p32, t1);
  CHECK_INT(s4.cached_tokens, 16, "prefix: an exactly cached prompt still prefills its last block");
  run_out(e, &s4);
  /* A prompt sharing only the first block (then diverging). */
  char div[4096];
  snprintf(div, sizeof(div), "%s %s", words_text(0, 16), words_text(1000, 24));
  tp_mock_seq_params pd = prompt_params(div);
  tp_mock_engine_submit(e, &s5, &pd, t1);
  CHECK_INT(s5.cached_tokens, 16, "prefix: a prompt diverging after one block hits that block only");
  run_out(e, &s5);
  /* Whitespace does not matter, words do. */
  char spaced[4096];
  snprintf(spaced, sizeof(spaced), "  %s\n", words_text(0, 40));
  for (char *q = spaced; *q; q++)
    if (*q == ' ' && q[1] == 'w' && q > spaced + 5) *q = '\t';
  tp_mock_seq s6 = {0};
  tp_mock_seq_params ps = prompt_params(spaced);
  tp_mock_engine_submit(e, &s6, &ps, t1);
  CHECK_INT(s6.cached_tokens, 32, "prefix: the same words with other whitespace hit");
  run_out(e, &s6);
  /* Counters: tokens queried and hit, as vLLM counts them. */
  CHECK_INT(tp_mock_engine_prefix_queries_tokens(e), 40 + 40 + 40 + 32 + 40 + 40, "prefix: queries in tokens");
  CHECK_INT(tp_mock_engine_prefix_hits_tokens(e), 32 + 16 + 16 + 32, "prefix: hits in tokens");
  /* Capacity 4 blocks, LRU: blocks of p40 (2), the diverged block (1),
   * then a new 48-word prompt (3 blocks) evicts the least recently used. */
  tp_mock_seq s7 = {0}, s8 = {0};
  tp_mock_seq_params pn = prompt_params(words_text(5000, 48));
  tp_mock_engine_submit(e, &s7, &pn, t1);
  run_out(e, &s7);
  CHECK_INT(tp_mock_engine_prefix_cached_blocks(e), 4, "prefix: the cache holds at most 4 blocks");
  tp_mock_engine_submit(e, &s8, &pn, t1);
  CHECK_INT(s8.cached_tokens, 32, "prefix: the newest prompt is cached (limit: last block recomputed)");
  run_out(e, &s8);
  tp_mock_seq s9 = {0};
  tp_mock_engine_submit(e, &s9, &p, t1);
  CHECK(s9.cached_tokens < 32, "prefix: an old prompt lost blocks to eviction");
  run_out(e, &s9);
  CHECK_INT(tp_mock_engine_kv_blocks_used(e), 0, "prefix: no KV blocks held once every sequence ended");
  tp_mock_engine_free(e);

  /* Off: nothing is cached, counters stay 0. */
  c.prefix_cache = false;
  CHECK_INT(tp_mock_engine_new(&e, &c, NULL, NULL), 0, "prefix off: engine created");
  tp_mock_seq t = {0}, u = {0};
  tp_mock_engine_submit(e, &t, &p, T0);
  run_out(e, &t);
  tp_mock_engine_submit(e, &u, &p, T0 + 500 * MS);
  CHECK(u.cached_tokens == 0 && tp_mock_engine_prefix_queries_tokens(e) == 0, "prefix off: no hits, no queries");
  tp_mock_engine_cancel(e, &u, T0 + 500 * MS);
  tp_mock_engine_free(e);
  /* Invalid cache settings are refused. */
  c.prefix_cache = true;
  c.prefix_cache_block_words = 0;
  CHECK_INT(tp_mock_engine_new(&e, &c, NULL, NULL), TP_EINVAL, "prefix: block size 0 refused");
}

static void test_kv_busy_endless(void) {
  tp_mock_config c = base_cfg();
  c.ttft_ms = 10;
  c.itl_ms = 10;
  c.prefix_cache_block_words = 4;
  c.prefix_cache_blocks = 100;
  tp_mock_engine *e;
  tp_mock_engine_new(&e, &c, NULL, NULL);
  tp_mock_seq s = {0};
  tp_mock_seq_params p = {.prompt_tokens = 6, .max_tokens = 3};
  CHECK_INT(tp_mock_engine_kv_blocks_max(e), 100, "kv: pool size is prefix_cache_blocks");
  tp_mock_engine_submit(e, &s, &p, T0);
  CHECK_INT(tp_mock_engine_kv_blocks_used(e), 2, "kv: a 6-word prompt holds 2 blocks of 4");
  tp_mock_token tok;
  tp_mock_engine_next(e, &s, s.next_deadline_ns, &tok);
  tp_mock_engine_next(e, &s, s.next_deadline_ns, &tok);
  CHECK_INT(tp_mock_engine_kv_blocks_used(e), 2, "kv: 8 tokens still fit 2 blocks");
  tp_mock_engine_next(e, &s, s.next_deadline_ns, &tok);
  CHECK(tok.last && s.hit_length, "kv: ended at max_tokens (hit_length)");
  CHECK_INT(tp_mock_engine_kv_blocks_used(e), 0, "kv: released at the end");
  CHECK_INT(tp_mock_engine_busy_ns(e, T0 + 1000 * MS), 30 * MS, "busy: from admission to the last token (30 ms)");
  CHECK_INT(tp_mock_engine_tokens_total(e), 3, "tokens produced in total");
  /* endless overrides max_tokens and output_tokens. */
  tp_mock_seq x = {0};
  tp_mock_seq_params pe = {.prompt_tokens = 1, .max_tokens = 2, .endless = true};
  tp_mock_engine_submit(e, &x, &pe, T0 + 1000 * MS);
  int n = 0;
  while (n < 1000 && tp_mock_engine_next(e, &x, x.next_deadline_ns, &tok) == 0 && !tok.last) n++;
  CHECK_INT(n, 1000, "endless: 1000 tokens and no end");
  CHECK_INT(tp_mock_engine_busy_ns(e, x.next_deadline_ns) - 30 * MS, x.next_deadline_ns - (T0 + 1000 * MS),
            "busy: grows while a sequence runs");
  tp_mock_engine_cancel(e, &x, x.next_deadline_ns);
  /* take_number keeps numbering in arrival order. */
  uint64_t nx = tp_mock_engine_next_number(e);
  CHECK_INT(tp_mock_engine_take_number(e), nx, "take_number uses the next number");
  tp_mock_seq y = {0};
  tp_mock_engine_submit(e, &y, &p, T0);
  CHECK_INT(y.number, nx + 1, "the next submit gets the one after");
  tp_mock_engine_cancel(e, &y, T0);
  tp_mock_engine_free(e);
}

int main(void) {
  test_fixed_timing();
  test_queueing();
  test_itl_growth();
  test_prefill_queue();
  test_eos();
  test_words_and_config();
  test_prefix_cache();
  test_kv_busy_endless();
  return tp_test_done();
}

#include "tp_mock_engine.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "util/tp_words.h"

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
};

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

int tp_mock_engine_new(tp_mock_engine **out, const tp_mock_config *cfg, tp_mock_admit_cb admit_cb,
                       void *user_data) {
  *out = NULL;
  if (!valid_time(cfg->ttft_ms) || !valid_time(cfg->prefill_us_per_token) ||
      !valid_time(cfg->prefill_queue_ms) || !valid_time(cfg->itl_ms) || !valid_time(cfg->itl_us_per_seq) ||
      !(cfg->eos_prob >= 0 && cfg->eos_prob <= 1))
    return TP_EINVAL;
  tp_mock_engine *e = calloc(1, sizeof(*e));
  if (!e) return TP_ENOMEM;
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
  free(e);
}

static void admit(tp_mock_engine *e, tp_mock_seq *s, uint64_t now_ns) {
  /* Prefills already in flight share the GPU with this one: each adds
   * prefill_queue_ms, which is how a burst of arrivals stretches TTFT. */
  double d = e->ttft_ns + e->prefill_ns_per_token * s->prompt_tokens + e->prefill_queue_ns * e->n_prefill;
  s->state = TP_MOCK_SEQ_PREFILL;
  s->admit_ns = now_ns;
  s->next_deadline_ns = now_ns + ns_round(d);
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
  if (e->output_tokens > 0) {
    s->max_tokens = e->output_tokens;
    s->eos_enabled = false;
  } else {
    s->max_tokens = p->max_tokens ? p->max_tokens : TP_MOCK_DEFAULT_MAX_TOKENS;
    s->eos_enabled = e->eos_prob > 0 && !p->ignore_eos;
  }
  s->min_tokens = p->min_tokens;
  s->word_rng = derive(e->seed, s->number, 1);
  s->eos_rng = derive(e->seed, s->number, 2);

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

static void leave_batch(tp_mock_engine *e, tp_mock_seq *s) {
  if (s->state == TP_MOCK_SEQ_PREFILL)
    e->n_prefill--;
  else if (s->state == TP_MOCK_SEQ_DECODE)
    e->n_decode--;
  s->state = TP_MOCK_SEQ_IDLE;
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
  if (!last && s->eos_enabled && s->tokens_out >= s->min_tokens) {
    double u = (double)(splitmix64(&s->eos_rng) >> 11) * 0x1.0p-53;
    if (u < e->eos_prob) last = true;
  }
  tok->last = last;

  if (s->state == TP_MOCK_SEQ_PREFILL) {
    e->n_prefill--;
    e->n_decode++;
    s->state = TP_MOCK_SEQ_DECODE;
  }
  if (last) {
    leave_batch(e, s);
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
    return;
  }
  if (s->state == TP_MOCK_SEQ_IDLE) return;
  leave_batch(e, s);
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

/* Fuzz target: the engine protocols' reading of --extra-inputs
 * (tp_openai_parse_extra, then tp_engine_sampling_read) and the Generate
 * request built from it (tp_engine_build_generate).  The first byte picks
 * the protocol (even: vLLM, odd: SGLang) and the output lengths; the rest,
 * split at NUL bytes, is the list of --extra-inputs items.
 *
 * Checked besides "no crash, no leak":
 * - every refusal is TP_EINVAL with a message naming --extra-inputs (or
 *   TP_ENOMEM);
 * - accepted values lie in the ranges the reader promises (temperature
 *   >= 0, top_p in (0, 1], min_p in [0, 1], repetition_penalty > 0, top_k
 *   >= 0 for vLLM and -1 or >= 1 for SGLang, no seed for SGLang);
 * - the request built from them unpacks with protobuf-c, framed with its
 *   length, and carries them: the request id, the prompt ids, stream, the
 *   output lengths (--extra-inputs winning over the run's), ignore_eos,
 *   temperature (with its presence for vLLM), top_k, seed, stop strings and
 *   stop ids.
 * Any difference abort()s. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/tp_engine.h"
#include "api/tp_openai.h"
#include "sglang_scheduler.pb-c.h"
#include "transport/tp_grpc.h"
#include "vllm_engine.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ITEMS 16

static void check_values(tp_engine_proto p, const tp_engine_sampling *s) {
  if (s->has_temperature && !(s->temperature >= 0)) abort();
  if (s->has_top_p && !(s->top_p > 0 && s->top_p <= 1)) abort();
  if (s->has_min_p && !(s->min_p >= 0 && s->min_p <= 1)) abort();
  if (s->has_repetition_penalty && !(s->repetition_penalty > 0)) abort();
  if (s->has_top_k && (p == TP_ENGINE_VLLM ? s->top_k < 0 : (s->top_k < -1 || s->top_k == 0))) abort();
  if (p == TP_ENGINE_SGLANG && s->has_seed) abort();
  if (s->has_max_tokens && s->max_tokens == 0) abort();
  for (size_t i = 0; i < s->n_stop; i++)
    if (!s->stop[i]) abort();
}

static bool same_strs(char **a, size_t an, char **b, size_t bn) {
  if (an != bn) return false;
  for (size_t i = 0; i < an; i++)
    if (strcmp(a[i], b[i]) != 0) return false;
  return true;
}

static bool same_ids(const uint32_t *a, size_t an, const uint32_t *b, size_t bn) {
  return an == bn && (an == 0 || memcmp(a, b, an * sizeof(uint32_t)) == 0);
}

static void check_request(tp_engine_proto p, const tp_engine_sampling *s, const tp_engine_gen *g,
                          const tp_buf *b) {
  if (b->len < TP_GRPC_PREFIX_BYTES) abort();
  uint32_t len =
      (uint32_t)b->data[1] << 24 | (uint32_t)b->data[2] << 16 | (uint32_t)b->data[3] << 8 | b->data[4];
  if (b->data[0] != 0 || len != b->len - TP_GRPC_PREFIX_BYTES) abort();
  const uint8_t *m = b->data + TP_GRPC_PREFIX_BYTES;
  uint32_t want_max = s->has_max_tokens ? s->max_tokens : g->max_tokens;
  uint32_t want_min = s->has_min_tokens ? s->min_tokens : g->min_tokens;
  bool want_ignore = s->has_ignore_eos ? s->ignore_eos : g->min_tokens > 0;
  if (p == TP_ENGINE_VLLM) {
    Vllm__Grpc__Engine__GenerateRequest *r = vllm__grpc__engine__generate_request__unpack(NULL, len, m);
    if (!r || strcmp(r->request_id, g->id) != 0 || r->stream != g->stream ||
        r->input_case != VLLM__GRPC__ENGINE__GENERATE_REQUEST__INPUT_TOKENIZED ||
        !same_ids(r->tokenized->input_ids, r->tokenized->n_input_ids, (const uint32_t *)g->ids, g->n_ids))
      abort();
    const Vllm__Grpc__Engine__SamplingParams *sp = r->sampling_params;
    bool has_max = sp->opt_max_tokens_case == VLLM__GRPC__ENGINE__SAMPLING_PARAMS__OPT_MAX_TOKENS_MAX_TOKENS;
    bool has_t = sp->opt_temperature_case == VLLM__GRPC__ENGINE__SAMPLING_PARAMS__OPT_TEMPERATURE_TEMPERATURE;
    bool has_seed = sp->opt_seed_case == VLLM__GRPC__ENGINE__SAMPLING_PARAMS__OPT_SEED_SEED;
    if (has_max != (want_max > 0) || (has_max && sp->max_tokens != want_max) || sp->min_tokens != want_min ||
        sp->ignore_eos != want_ignore || has_t != s->has_temperature ||
        (has_t && sp->temperature != s->temperature) || has_seed != s->has_seed ||
        (has_seed && sp->seed != s->seed) || sp->top_k != (s->has_top_k ? (uint32_t)s->top_k : 0) ||
        !same_strs(sp->stop, sp->n_stop, s->stop, s->n_stop) ||
        !same_ids(sp->stop_token_ids, sp->n_stop_token_ids, s->stop_token_ids, s->n_stop_token_ids))
      abort();
    vllm__grpc__engine__generate_request__free_unpacked(r, NULL);
    return;
  }
  Sglang__Grpc__Scheduler__GenerateRequest *r =
      sglang__grpc__scheduler__generate_request__unpack(NULL, len, m);
  if (!r || strcmp(r->request_id, g->id) != 0 || r->stream != g->stream || !r->tokenized ||
      !same_ids(r->tokenized->input_ids, r->tokenized->n_input_ids, (const uint32_t *)g->ids, g->n_ids))
    abort();
  const Sglang__Grpc__Scheduler__SamplingParams *sp = r->sampling_params;
  bool has_max = sp->opt_max_new_tokens_case ==
                 SGLANG__GRPC__SCHEDULER__SAMPLING_PARAMS__OPT_MAX_NEW_TOKENS_MAX_NEW_TOKENS;
  if (has_max != (want_max > 0) ||
      (has_max && (uint32_t)sp->max_new_tokens != TP_MIN(want_max, (uint32_t)INT32_MAX)) ||
      (uint32_t)sp->min_new_tokens != TP_MIN(want_min, (uint32_t)INT32_MAX) ||
      sp->ignore_eos != want_ignore || sp->temperature != (s->has_temperature ? s->temperature : 1.0f) ||
      sp->top_k != (s->has_top_k ? s->top_k : -1) || sp->top_p != (s->has_top_p ? s->top_p : 1.0f) ||
      sp->n != 1 || !same_strs(sp->stop, sp->n_stop, s->stop, s->n_stop) ||
      !same_ids(sp->stop_token_ids, sp->n_stop_token_ids, s->stop_token_ids, s->n_stop_token_ids))
    abort();
  sglang__grpc__scheduler__generate_request__free_unpacked(r, NULL);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1 || size > 4096) return 0;
  tp_engine_proto p = data[0] & 1 ? TP_ENGINE_SGLANG : TP_ENGINE_VLLM;
  /* The items, NUL-terminated copies of the pieces between NUL bytes. */
  char *buf = malloc(size);
  if (!buf) abort();
  memcpy(buf, data + 1, size - 1);
  buf[size - 1] = 0;
  const char *items[MAX_ITEMS];
  size_t n = 0;
  for (size_t i = 0; i + 1 < size && n < MAX_ITEMS;) {
    items[n++] = buf + i;
    i += strlen(buf + i) + 1;
  }
  json_t *extra = NULL;
  char err[512] = "";
  tp_engine_sampling s;
  memset(&s, 0, sizeof(s));
  int rv = tp_openai_parse_extra(&extra, items, n, err, sizeof(err));
  if (rv == 0) {
    rv = tp_engine_sampling_read(&s, p, extra, err, sizeof(err));
    if (rv != 0 && rv != TP_EINVAL && rv != TP_ENOMEM) abort();
    if (rv == TP_EINVAL && !strstr(err, "--extra-inputs")) abort();
  }
  if (rv == 0) {
    check_values(p, &s);
    static const int32_t ids[] = {1, 17, 30000, 5};
    tp_engine_gen g;
    memset(&g, 0, sizeof(g));
    g.id = "req-7";
    g.ids = ids;
    g.n_ids = 4;
    g.stream = data[0] & 2;
    g.max_tokens = (data[0] >> 2) & 3 ? 16u << ((data[0] >> 2) & 3) : 0;
    g.min_tokens = data[0] & 0x10 ? g.max_tokens : 0;
    tp_buf b;
    tp_buf_init(&b);
    if (tp_engine_build_generate(&b, p, &g, &s) != 0) abort();
    check_request(p, &s, &g, &b);
    tp_buf_fini(&b);
  }
  tp_engine_sampling_fini(&s);
  json_decref(extra);
  free(buf);
  return 0;
}

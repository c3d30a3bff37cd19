/* The engine protocols' adapter (lib/api/tp_engine.h): Generate responses
 * decoded from bytes worked out by hand, requests built and read back with
 * protobuf-c, --extra-inputs read into sampling values, the preflight's
 * answers. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/tp_engine.h"
#include "api/tp_openai.h"
#include "sglang_scheduler.pb-c.h"
#include "tp_test.h"
#include "vllm_engine.pb-c.h"

/* ---- Generate responses ---------------------------------------------------- */

typedef struct dec_case {
  const char *what;
  tp_engine_proto p;
  const uint8_t *bytes;
  size_t len;
  int rv;
  tp_engine_kind kind;
  uint32_t n_ids;
  int64_t prompt, completion, cached;
  const char *finish, *request_id, *error, *status;
} dec_case;

#define B(...) (const uint8_t[]){__VA_ARGS__}, sizeof((const uint8_t[]){__VA_ARGS__})
#define V TP_ENGINE_VLLM
#define S TP_ENGINE_SGLANG
#define CHUNK TP_ENGINE_MSG_CHUNK
#define DONE TP_ENGINE_MSG_COMPLETE
#define ERR TP_ENGINE_MSG_ERROR
#define NONE TP_ENGINE_MSG_EMPTY

static const dec_case dec_cases[] = {
    /* chunk (1) { token_ids (1) packed [5, 300], prompt 20, completion 2, cached 16 } */
    {"vLLM chunk: packed ids and the counts", V,
     B(0x0a, 0x0b, 0x0a, 0x03, 0x05, 0xac, 0x02, 0x10, 0x14, 0x18, 0x02, 0x20, 0x10), 0, CHUNK, 2, 20, 2, 16,
     NULL, NULL, NULL, NULL},
    /* complete (2) { output_ids [7], finish_reason "stop", prompt 20, completion 1 } */
    {"vLLM complete: ids, finish_reason, counts", V,
     B(0x12, 0x0d, 0x0a, 0x01, 0x07, 0x12, 0x04, 's', 't', 'o', 'p', 0x18, 0x14, 0x20, 0x01), 0, DONE, 1, 20,
     1, 0, "stop", NULL, NULL, NULL},
    {"vLLM a zero tag byte: invalid", V, B(0x00), TP_EPROTO, NONE, 0, 0, 0, 0, NULL, NULL, NULL, NULL},
    {"vLLM zero bytes: the empty response", V, (const uint8_t *)"", 0, 0, NONE, 0, 0, 0, 0, NULL, NULL, NULL,
     NULL},
    /* ids unpacked, one varint each, and a count given twice: the last wins */
    {"vLLM ids as single varints; a repeated count keeps the last", V,
     B(0x0a, 0x0b, 0x08, 0x01, 0x08, 0x80, 0x01, 0x10, 0x03, 0x10, 0x04, 0x18, 0x02), 0, CHUNK, 2, 4, 2, 0,
     NULL, NULL, NULL, NULL},
    /* a uint32 count sent with 10 bytes (-1 as int64): the low 32 bits */
    {"vLLM uint32 count from a 10-byte varint: its low 32 bits", V,
     B(0x0a, 0x0b, 0x10, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), 0, CHUNK, 0,
     4294967295LL, 0, 0, NULL, NULL, NULL, NULL},
    /* chunk twice: protobuf-c keeps the second (a oneof member is replaced) */
    {"vLLM chunk given twice: the second replaces the first, as in protobuf-c", V,
     B(0x0a, 0x04, 0x0a, 0x02, 0x01, 0x02, 0x0a, 0x05, 0x0a, 0x01, 0x03, 0x10, 0x07), 0, CHUNK, 1, 7, 0, 0,
     NULL, NULL, NULL, NULL},
    {"vLLM chunk then complete: the last member wins", V,
     B(0x0a, 0x03, 0x0a, 0x01, 0x01, 0x12, 0x06, 0x0a, 0x02, 0x04, 0x05, 0x20, 0x02), 0, DONE, 2, 0, 2, 0,
     NULL, NULL, NULL, NULL},
    {"vLLM unknown fields are skipped", V, B(0x0a, 0x04, 0x38, 0x05, 0x2a, 0x00, 0x78, 0x01), 0, CHUNK, 0, 0,
     0, 0, NULL, NULL, NULL, NULL},
    {"vLLM member with a varint wire type: invalid", V, B(0x08, 0x01), TP_EPROTO, NONE, 0, 0, 0, 0, NULL,
     NULL, NULL, NULL},
    {"vLLM count as a length: invalid", V, B(0x0a, 0x03, 0x12, 0x01, 0x00), TP_EPROTO, NONE, 0, 0, 0, 0, NULL,
     NULL, NULL, NULL},
    {"vLLM message past its end: invalid", V, B(0x0a, 0x05, 0x08, 0x01), TP_EPROTO, NONE, 0, 0, 0, 0, NULL,
     NULL, NULL, NULL},
    {"vLLM packed ids cut inside a varint: invalid", V, B(0x0a, 0x03, 0x0a, 0x01, 0x80), TP_EPROTO, NONE, 0,
     0, 0, 0, NULL, NULL, NULL, NULL},
    {"vLLM a group wire type: invalid", V, B(0x0b, 0x0c), TP_EPROTO, NONE, 0, 0, 0, 0, NULL, NULL, NULL,
     NULL},
    /* request_id "r1", chunk (2) { ids [10, 11], prompt 20, completion 4, cached 16 } */
    {"SGLang chunk with its request id", S,
     B(0x0a, 0x02, 'r', '1', 0x12, 0x0a, 0x0a, 0x02, 0x0a, 0x0b, 0x10, 0x14, 0x18, 0x04, 0x20, 0x10), 0,
     CHUNK, 2, 20, 4, 16, NULL, "r1", NULL, NULL},
    /* complete (3) { output_ids [12], finish "length", completion 5 } */
    {"SGLang complete", S,
     B(0x1a, 0x0d, 0x0a, 0x01, 0x0c, 0x12, 0x06, 'l', 'e', 'n', 'g', 't', 'h', 0x20, 0x05), 0, DONE, 1, 0, 5,
     0, "length", NULL, NULL, NULL},
    /* error (4) { message "boom", http_status_code "500", details "x" } */
    {"SGLang error", S,
     B(0x22, 0x0e, 0x0a, 0x04, 'b', 'o', 'o', 'm', 0x12, 0x03, '5', '0', '0', 0x1a, 0x01, 'x'), 0, ERR, 0, 0,
     0, 0, NULL, NULL, "boom", "500"},
    /* int32 counts: negative on the wire is negative */
    {"SGLang int32 count: -2 is -2", S,
     B(0x12, 0x0b, 0x10, 0xfe, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01), 0, CHUNK, 0, -2, 0, 0,
     NULL, NULL, NULL, NULL},
    {"SGLang strings end at a NUL byte", S,
     B(0x0a, 0x03, 'a', 0x00, 'b', 0x22, 0x05, 0x0a, 0x03, 'x', 0x00, 'y'), 0, ERR, 0, 0, 0, 0, NULL, "a",
     "x", NULL},
    {"SGLang request id with a varint wire type: invalid", S, B(0x08, 0x01), TP_EPROTO, NONE, 0, 0, 0, 0,
     NULL, NULL, NULL, NULL},
    {"SGLang error then chunk: the chunk", S, B(0x22, 0x03, 0x0a, 0x01, 'e', 0x12, 0x03, 0x0a, 0x01, 0x01), 0,
     CHUNK, 1, 0, 0, 0, NULL, NULL, NULL, NULL},
};

static bool same_view(const char *got, size_t len, const char *want) {
  if (!want) return len == 0;
  return len == strlen(want) && memcmp(got, want, len) == 0;
}

static void test_decode(void) {
  for (size_t i = 0; i < sizeof(dec_cases) / sizeof(dec_cases[0]); i++) {
    const dec_case *c = &dec_cases[i];
    tp_engine_decoder d;
    tp_engine_decoder_init(&d);
    tp_engine_msg m;
    int rv = tp_engine_decode(&d, c->p, c->bytes, c->len, &m);
    CHECK(rv == c->rv, "decode: %s: result %d", c->what, rv);
    if (rv == 0 && c->rv == 0) {
      CHECK(m.kind == c->kind && m.n_ids == c->n_ids && m.prompt_tokens == c->prompt &&
                m.completion_tokens == c->completion && m.cached_tokens == c->cached,
            "decode: %s: kind %d, %u ids, counts %lld/%lld/%lld", c->what, (int)m.kind, m.n_ids,
            (long long)m.prompt_tokens, (long long)m.completion_tokens, (long long)m.cached_tokens);
      CHECK(same_view(m.finish_reason, m.finish_reason_len, c->finish) &&
                same_view(m.request_id, m.request_id_len, c->request_id) &&
                same_view(m.error, m.error_len, c->error) &&
                same_view(m.error_status, m.error_status_len, c->status),
            "decode: %s: strings", c->what);
    }
    tp_engine_decoder_fini(&d);
  }
}

/* ---- requests ---------------------------------------------------------------- */

static const uint8_t *body(const tp_buf *b, size_t *len) {
  uint32_t n =
      (uint32_t)b->data[1] << 24 | (uint32_t)b->data[2] << 16 | (uint32_t)b->data[3] << 8 | b->data[4];
  *len = n;
  return b->data + 5;
}

static void test_build_vllm(void) {
  static const int32_t ids[] = {1, 17, 30000};
  tp_engine_gen g = {.id = "c8-3",
                     .ids = ids,
                     .n_ids = 3,
                     .text = "a b",
                     .text_len = 3,
                     .max_tokens = 64,
                     .min_tokens = 64,
                     .stream = true};
  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_engine_build_generate(&b, TP_ENGINE_VLLM, &g, NULL), 0, "vLLM Generate built");
  CHECK(b.len > 5 && b.data[0] == 0, "vLLM Generate framed, uncompressed");
  size_t n;
  const uint8_t *m = body(&b, &n);
  CHECK_INT(n, b.len - 5, "vLLM Generate: the prefix gives its length");
  Vllm__Grpc__Engine__GenerateRequest *r = vllm__grpc__engine__generate_request__unpack(NULL, n, m);
  CHECK(r != NULL, "vLLM Generate unpacks");
  if (r) {
    CHECK_STR(r->request_id, "c8-3", "vLLM: the run's request id");
    CHECK(r->input_case == VLLM__GRPC__ENGINE__GENERATE_REQUEST__INPUT_TOKENIZED &&
              r->tokenized->n_input_ids == 3 && r->tokenized->input_ids[2] == 30000 &&
              r->tokenized->original_text[0] == 0,
          "vLLM: the ids, no original_text unless asked");
    CHECK(r->stream, "vLLM: stream");
    const Vllm__Grpc__Engine__SamplingParams *sp = r->sampling_params;
    CHECK(sp->opt_max_tokens_case == VLLM__GRPC__ENGINE__SAMPLING_PARAMS__OPT_MAX_TOKENS_MAX_TOKENS &&
              sp->max_tokens == 64 && sp->min_tokens == 64 && sp->ignore_eos,
          "vLLM: max_tokens, min_tokens and ignore_eos for an exact length");
    CHECK(sp->opt_temperature_case == VLLM__GRPC__ENGINE__SAMPLING_PARAMS__OPT_TEMPERATURE__NOT_SET &&
              sp->opt_seed_case == VLLM__GRPC__ENGINE__SAMPLING_PARAMS__OPT_SEED__NOT_SET,
          "vLLM: temperature and seed left unset (the engine's defaults)");
    vllm__grpc__engine__generate_request__free_unpacked(r, NULL);
  }
  /* Text, without a tokenizer; no output length. */
  tp_engine_gen t = {.id = "x", .text = "the water", .text_len = 9};
  tp_buf_reset(&b);
  CHECK_INT(tp_engine_build_generate(&b, TP_ENGINE_VLLM, &t, NULL), 0, "vLLM text Generate built");
  m = body(&b, &n);
  r = vllm__grpc__engine__generate_request__unpack(NULL, n, m);
  CHECK(r && r->input_case == VLLM__GRPC__ENGINE__GENERATE_REQUEST__INPUT_TEXT &&
            strcmp(r->text, "the water") == 0 &&
            r->sampling_params->opt_max_tokens_case ==
                VLLM__GRPC__ENGINE__SAMPLING_PARAMS__OPT_MAX_TOKENS__NOT_SET &&
            !r->stream,
        "vLLM: the prompt as text, max_tokens unset, not streaming");
  if (r) vllm__grpc__engine__generate_request__free_unpacked(r, NULL);
  /* Sampling values: temperature 0 is sent (its presence matters). */
  const char *items[] = {"temperature:0", "seed:-3", "stop:[\"a\",\"b\"]", "stop_token_ids:[2,7]",
                         "max_tokens:9"};
  json_t *extra = NULL;
  char err[256];
  tp_engine_sampling s;
  CHECK_INT(tp_openai_parse_extra(&extra, items, 5, err, sizeof(err)), 0, "extra inputs parse");
  CHECK_INT(tp_engine_sampling_read(&s, TP_ENGINE_VLLM, extra, err, sizeof(err)), 0,
            "vLLM sampling values read");
  tp_buf_reset(&b);
  CHECK_INT(tp_engine_build_generate(&b, TP_ENGINE_VLLM, &g, &s), 0, "vLLM Generate with sampling built");
  m = body(&b, &n);
  r = vllm__grpc__engine__generate_request__unpack(NULL, n, m);
  CHECK(r &&
            r->sampling_params->opt_temperature_case ==
                VLLM__GRPC__ENGINE__SAMPLING_PARAMS__OPT_TEMPERATURE_TEMPERATURE &&
            r->sampling_params->temperature == 0 && r->sampling_params->seed == -3 &&
            r->sampling_params->n_stop == 2 && strcmp(r->sampling_params->stop[1], "b") == 0 &&
            r->sampling_params->n_stop_token_ids == 2 && r->sampling_params->stop_token_ids[1] == 7 &&
            r->sampling_params->max_tokens == 9,
        "vLLM: temperature 0 present, seed, stop strings and ids, --extra-inputs max_tokens over the run's");
  if (r) vllm__grpc__engine__generate_request__free_unpacked(r, NULL);
  tp_engine_sampling_fini(&s);
  json_decref(extra);
  tp_buf_fini(&b);
}

static void test_build_sglang(void) {
  static const int32_t ids[] = {4, 5};
  tp_engine_gen g = {.id = "r9",
                     .ids = ids,
                     .n_ids = 2,
                     .text = "hi",
                     .text_len = 2,
                     .send_text = true,
                     .max_tokens = 32,
                     .stream = true};
  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_engine_build_generate(&b, TP_ENGINE_SGLANG, &g, NULL), 0, "SGLang Generate built");
  size_t n;
  const uint8_t *m = body(&b, &n);
  Sglang__Grpc__Scheduler__GenerateRequest *r = sglang__grpc__scheduler__generate_request__unpack(NULL, n, m);
  CHECK(r != NULL, "SGLang Generate unpacks");
  if (r) {
    const Sglang__Grpc__Scheduler__SamplingParams *sp = r->sampling_params;
    CHECK(strcmp(r->request_id, "r9") == 0 && r->tokenized->n_input_ids == 2 &&
              strcmp(r->tokenized->original_text, "hi") == 0 && r->stream,
          "SGLang: id, ids, original_text when asked, stream");
    CHECK(sp->max_new_tokens == 32 && sp->min_new_tokens == 0 && !sp->ignore_eos,
          "SGLang: max_new_tokens only");
    CHECK(sp->temperature == 1.0f && sp->top_p == 1.0f && sp->top_k == -1 && sp->repetition_penalty == 1.0f &&
              sp->n == 1 && sp->skip_special_tokens,
          "SGLang: the engine's defaults written out (its scheduler takes zeros as they are)");
    sglang__grpc__scheduler__generate_request__free_unpacked(r, NULL);
  }
  tp_engine_gen t = {.id = "x", .text = "text", .text_len = 4};
  tp_buf_reset(&b);
  CHECK_INT(tp_engine_build_generate(&b, TP_ENGINE_SGLANG, &t, NULL), TP_EINVAL, "SGLang takes no text");
  tp_buf_fini(&b);
}

static void test_build_abort(void) {
  const char *ids[] = {"a", "bb", "c"};
  tp_buf b;
  tp_buf_init(&b);
  size_t n;
  CHECK_INT(tp_engine_build_abort(&b, TP_ENGINE_VLLM, ids, 3, "why"), 0, "vLLM Abort built");
  const uint8_t *m = body(&b, &n);
  Vllm__Grpc__Engine__AbortRequest *v = vllm__grpc__engine__abort_request__unpack(NULL, n, m);
  CHECK(v && v->n_request_ids == 3 && strcmp(v->request_ids[1], "bb") == 0, "vLLM Abort names every id");
  if (v) vllm__grpc__engine__abort_request__free_unpacked(v, NULL);
  tp_buf_reset(&b);
  CHECK_INT(tp_engine_build_abort(&b, TP_ENGINE_SGLANG, ids + 1, 1, "why"), 0, "SGLang Abort built");
  m = body(&b, &n);
  Sglang__Grpc__Scheduler__AbortRequest *s = sglang__grpc__scheduler__abort_request__unpack(NULL, n, m);
  CHECK(s && strcmp(s->request_id, "bb") == 0 && strcmp(s->reason, "why") == 0,
        "SGLang Abort: id and reason");
  if (s) sglang__grpc__scheduler__abort_request__free_unpacked(s, NULL);
  CHECK_INT(tp_engine_build_abort(&b, TP_ENGINE_SGLANG, ids, 2, NULL), TP_EINVAL,
            "SGLang Abort names one id");
  tp_buf_reset(&b);
  CHECK_INT(tp_engine_build_empty(&b), 0, "the empty request");
  CHECK(b.len == 5 && memcmp(b.data, "\0\0\0\0\0", 5) == 0, "the empty request is a bare prefix");
  char path[96];
  tp_engine_path(TP_ENGINE_SGLANG, "Generate", path, sizeof(path));
  CHECK_STR(path, "/sglang.grpc.scheduler.SglangScheduler/Generate", "SGLang's Generate path");
  tp_engine_path(TP_ENGINE_VLLM, "Abort", path, sizeof(path));
  CHECK_STR(path, "/vllm.grpc.engine.VllmEngine/Abort", "vLLM's Abort path");
  CHECK_STR(tp_engine_name(TP_ENGINE_VLLM), "vllm-grpc", "vLLM's name");
  CHECK_STR(tp_engine_name((tp_engine_proto)9), "?", "no name out of range");
  tp_buf_fini(&b);
}

/* ---- --extra-inputs ------------------------------------------------------------ */

typedef struct samp_case {
  tp_engine_proto p;
  const char *item;
  int rv;
  const char *msg; /* in the error */
} samp_case;

static const samp_case samp_cases[] = {
    {V, "temperature:0.7", 0, NULL},
    {V, "temperature:-1", TP_EINVAL, "--extra-inputs 'temperature': expected a number >= 0"},
    {V, "temperature:\"hot\"", TP_EINVAL, "'temperature'"},
    {V, "top_p:0", TP_EINVAL, "(0, 1]"},
    {S, "top_p:1", 0, NULL},
    {V, "top_k:-1", TP_EINVAL, "0 = all tokens"},
    {S, "top_k:-1", 0, NULL},
    {S, "top_k:0", TP_EINVAL, "-1 (all tokens)"},
    {V, "seed:7", 0, NULL},
    {S, "seed:7", TP_EINVAL, "no seed field"},
    {V, "seed:99999999999", TP_EINVAL, "32-bit"},
    {V, "max_new_tokens:5", 0, NULL},
    {S, "max_tokens:0", TP_EINVAL, ">= 1"},
    {V, "ignore_eos:1", TP_EINVAL, "true or false"},
    {S, "ignore_eos:true", 0, NULL},
    {V, "stop:END", 0, NULL},
    {V, "stop:[\"a\",1]", TP_EINVAL, "a string or a list of strings"},
    {S, "stop_token_ids:[1,-2]", TP_EINVAL, "a list of token ids"},
    {V, "beam_width:4", TP_EINVAL, "'beam_width': vllm-grpc's SamplingParams has no such field"},
    {S, "{\"repetition_penalty\":1.1,\"min_p\":0.05}", 0, NULL},
    {S, "repetition_penalty:0", TP_EINVAL, "> 0"},
};

static void test_sampling(void) {
  for (size_t i = 0; i < sizeof(samp_cases) / sizeof(samp_cases[0]); i++) {
    const samp_case *c = &samp_cases[i];
    json_t *extra = NULL;
    char err[400] = "";
    tp_engine_sampling s;
    int rv = tp_openai_parse_extra(&extra, &c->item, 1, err, sizeof(err));
    if (rv == 0)
      rv = tp_engine_sampling_read(&s, c->p, extra, err, sizeof(err));
    else
      memset(&s, 0, sizeof(s));
    CHECK(rv == c->rv && (!c->msg || strstr(err, c->msg)), "sampling %s '%s': %d %s", tp_engine_name(c->p),
          c->item, rv, err);
    tp_engine_sampling_fini(&s);
    json_decref(extra);
  }
  tp_engine_sampling s;
  CHECK_INT(tp_engine_sampling_read(&s, TP_ENGINE_VLLM, NULL, NULL, 0), 0, "no --extra-inputs: nothing set");
  CHECK(!s.has_temperature && !s.n_stop, "no --extra-inputs: every value the protocol's default");
  tp_engine_sampling_fini(&s);
}

/* ---- the preflight's answers --------------------------------------------------- */

static void test_preflight(void) {
  bool healthy = false;
  char msg[64];
  /* healthy true, message "ok" */
  CHECK_INT(
      tp_engine_parse_health(TP_ENGINE_VLLM, B(0x08, 0x01, 0x12, 0x02, 'o', 'k'), &healthy, msg, sizeof(msg)),
      0, "HealthCheckResponse parses");
  CHECK(healthy && strcmp(msg, "ok") == 0, "healthy, with its message");
  CHECK_INT(tp_engine_parse_health(TP_ENGINE_SGLANG, B(0x12, 0x05, 'o'), &healthy, msg, sizeof(msg)),
            TP_EPROTO, "a cut HealthCheckResponse is refused");
  tp_engine_model_info mi;
  /* vLLM: model_path "m" (1), is_generation (2), max_context_length 4096 (3), vocab 32000 (4), served "s" (6)
   */
  CHECK_INT(
      tp_engine_parse_model_info(
          TP_ENGINE_VLLM,
          B(0x0a, 0x01, 'm', 0x10, 0x01, 0x18, 0x80, 0x20, 0x20, 0x80, 0xfa, 0x01, 0x32, 0x01, 's'), &mi),
      0, "vLLM GetModelInfoResponse parses");
  CHECK(strcmp(mi.model_path, "m") == 0 && mi.is_generation && mi.max_context_length == 4096 &&
            mi.vocab_size == 32000 && strcmp(mi.served_model_name, "s") == 0,
        "vLLM model info: path, generation, context, vocabulary, served name");
  /* SGLang: served_model_name (6), max_context_length (7) 8, vocab_size (8) -1 (not said), is_generation (3)
   */
  CHECK_INT(tp_engine_parse_model_info(TP_ENGINE_SGLANG,
                                       B(0x32, 0x01, 'q', 0x38, 0x08, 0x40, 0xff, 0xff, 0xff, 0xff, 0xff,
                                         0xff, 0xff, 0xff, 0xff, 0x01, 0x18, 0x01),
                                       &mi),
            0, "SGLang GetModelInfoResponse parses");
  CHECK(strcmp(mi.served_model_name, "q") == 0 && mi.max_context_length == 8 && mi.vocab_size == 0 &&
            mi.is_generation,
        "SGLang model info: a negative size is taken as not said");
}

int main(void) {
  test_decode();
  test_build_vllm();
  test_build_sglang();
  test_build_abort();
  test_sampling();
  test_preflight();
  return tp_test_done();
}

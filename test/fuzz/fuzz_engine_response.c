/* Fuzz target: decoding of the engine protocols' Generate responses
 * (tp_engine_decode, the in-place decoder) held to protobuf-c's unpack of
 * the same bytes with tokperf's proto/vllm_engine.proto and
 * proto/sglang_scheduler.proto.  The first byte picks the protocol (even:
 * vLLM, odd: SGLang); the rest is the message.
 *
 * Checked besides "no crash, no leak":
 * - both decoders agree on whether the bytes are valid, and on every field
 *   the decoder gives: the member of the response oneof, the number of ids,
 *   the three counts (uint32 for vLLM, int32 for SGLang), finish_reason,
 *   request_id, the error's message and http_status_code (as C strings:
 *   protobuf-c's end at a NUL byte);
 * - the result is 0 or TP_EPROTO;
 * - strings from the in-place path are views of the input;
 * - the input is not modified, and decoding twice gives the same message;
 * - protobuf-c's message packed again decodes to the same message.
 * Any difference abort()s. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/tp_engine.h"
#include "sglang_scheduler.pb-c.h"
#include "vllm_engine.pb-c.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_msg(const tp_engine_msg *a, const tp_engine_msg *b) {
  return a->kind == b->kind && a->n_ids == b->n_ids && a->prompt_tokens == b->prompt_tokens &&
         a->completion_tokens == b->completion_tokens && a->cached_tokens == b->cached_tokens &&
         a->finish_reason_len == b->finish_reason_len &&
         (!a->finish_reason_len || memcmp(a->finish_reason, b->finish_reason, a->finish_reason_len) == 0) &&
         a->request_id_len == b->request_id_len &&
         (!a->request_id_len || memcmp(a->request_id, b->request_id, a->request_id_len) == 0) &&
         a->error_len == b->error_len && (!a->error_len || memcmp(a->error, b->error, a->error_len) == 0) &&
         a->error_status_len == b->error_status_len &&
         (!a->error_status_len || memcmp(a->error_status, b->error_status, a->error_status_len) == 0);
}

/* protobuf-c's message, read into a tp_engine_msg the way the decoder
 * fills one.  Returns false when the bytes do not unpack. */
static bool reference(tp_engine_proto p, const uint8_t *d, size_t n, tp_engine_msg *m, uint8_t **packed,
                      size_t *packed_len) {
  memset(m, 0, sizeof(*m));
  *packed = NULL;
  *packed_len = 0;
  ProtobufCMessage *msg;
  if (p == TP_ENGINE_VLLM) {
    Vllm__Grpc__Engine__GenerateResponse *r = vllm__grpc__engine__generate_response__unpack(NULL, n, d);
    if (!r) return false;
    msg = &r->base;
    if (r->response_case == VLLM__GRPC__ENGINE__GENERATE_RESPONSE__RESPONSE_CHUNK) {
      m->kind = TP_ENGINE_MSG_CHUNK;
      m->n_ids = (uint32_t)r->chunk->n_token_ids;
      m->prompt_tokens = r->chunk->prompt_tokens;
      m->completion_tokens = r->chunk->completion_tokens;
      m->cached_tokens = r->chunk->cached_tokens;
    } else if (r->response_case == VLLM__GRPC__ENGINE__GENERATE_RESPONSE__RESPONSE_COMPLETE) {
      m->kind = TP_ENGINE_MSG_COMPLETE;
      m->n_ids = (uint32_t)r->complete->n_output_ids;
      m->prompt_tokens = r->complete->prompt_tokens;
      m->completion_tokens = r->complete->completion_tokens;
      m->cached_tokens = r->complete->cached_tokens;
      m->finish_reason = r->complete->finish_reason;
      m->finish_reason_len = strlen(r->complete->finish_reason);
    }
  } else {
    Sglang__Grpc__Scheduler__GenerateResponse *r =
        sglang__grpc__scheduler__generate_response__unpack(NULL, n, d);
    if (!r) return false;
    msg = &r->base;
    m->request_id = r->request_id;
    m->request_id_len = strlen(r->request_id);
    if (r->response_case == SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__RESPONSE_CHUNK) {
      m->kind = TP_ENGINE_MSG_CHUNK;
      m->n_ids = (uint32_t)r->chunk->n_token_ids;
      m->prompt_tokens = r->chunk->prompt_tokens;
      m->completion_tokens = r->chunk->completion_tokens;
      m->cached_tokens = r->chunk->cached_tokens;
    } else if (r->response_case == SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__RESPONSE_COMPLETE) {
      m->kind = TP_ENGINE_MSG_COMPLETE;
      m->n_ids = (uint32_t)r->complete->n_output_ids;
      m->prompt_tokens = r->complete->prompt_tokens;
      m->completion_tokens = r->complete->completion_tokens;
      m->cached_tokens = r->complete->cached_tokens;
      m->finish_reason = r->complete->finish_reason;
      m->finish_reason_len = strlen(r->complete->finish_reason);
    } else if (r->response_case == SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__RESPONSE_ERROR) {
      m->kind = TP_ENGINE_MSG_ERROR;
      m->error = r->error->message;
      m->error_len = strlen(r->error->message);
      m->error_status = r->error->http_status_code;
      m->error_status_len = strlen(r->error->http_status_code);
    }
  }
  /* The strings are compared before the message is freed: copy them. */
  size_t pn = protobuf_c_message_get_packed_size(msg);
  *packed = malloc(pn ? pn : 1);
  if (!*packed) abort();
  protobuf_c_message_pack(msg, *packed);
  *packed_len = pn;
  static char fr[512], rid[512], err[512], st[512];
  m->finish_reason_len = m->finish_reason_len < sizeof(fr) ? m->finish_reason_len : sizeof(fr) - 1;
  memcpy(fr, m->finish_reason ? m->finish_reason : "", m->finish_reason_len);
  m->request_id_len = m->request_id_len < sizeof(rid) ? m->request_id_len : sizeof(rid) - 1;
  memcpy(rid, m->request_id ? m->request_id : "", m->request_id_len);
  m->error_len = m->error_len < sizeof(err) ? m->error_len : sizeof(err) - 1;
  memcpy(err, m->error ? m->error : "", m->error_len);
  m->error_status_len = m->error_status_len < sizeof(st) ? m->error_status_len : sizeof(st) - 1;
  memcpy(st, m->error_status ? m->error_status : "", m->error_status_len);
  m->finish_reason = fr;
  m->request_id = rid;
  m->error = err;
  m->error_status = st;
  protobuf_c_message_free_unpacked(msg, NULL);
  return true;
}

/* Whether protobuf-c kept unknown fields in the message or the member of
 * its oneof: it accepts some it cannot read back once packed again (field
 * number 0 behind an over-long tag), so the round trip is held only to
 * messages without them. */
static bool has_unknown(tp_engine_proto p, const uint8_t *d, size_t n) {
  bool u = false;
  if (p == TP_ENGINE_VLLM) {
    Vllm__Grpc__Engine__GenerateResponse *r = vllm__grpc__engine__generate_response__unpack(NULL, n, d);
    if (!r) return false;
    u = r->base.n_unknown_fields ||
        (r->chunk && r->response_case == VLLM__GRPC__ENGINE__GENERATE_RESPONSE__RESPONSE_CHUNK &&
         r->chunk->base.n_unknown_fields) ||
        (r->response_case == VLLM__GRPC__ENGINE__GENERATE_RESPONSE__RESPONSE_COMPLETE &&
         r->complete->base.n_unknown_fields);
    vllm__grpc__engine__generate_response__free_unpacked(r, NULL);
    return u;
  }
  Sglang__Grpc__Scheduler__GenerateResponse *r =
      sglang__grpc__scheduler__generate_response__unpack(NULL, n, d);
  if (!r) return false;
  u = r->base.n_unknown_fields ||
      (r->response_case == SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__RESPONSE_CHUNK &&
       r->chunk->base.n_unknown_fields) ||
      (r->response_case == SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__RESPONSE_COMPLETE &&
       r->complete->base.n_unknown_fields) ||
      (r->response_case == SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__RESPONSE_ERROR &&
       r->error->base.n_unknown_fields);
  sglang__grpc__scheduler__generate_response__free_unpacked(r, NULL);
  return u;
}

/* The decoder's strings, cut to the reference's copy length. */
static void clip(tp_engine_msg *m) {
  if (m->finish_reason_len > 511) m->finish_reason_len = 511;
  if (m->request_id_len > 511) m->request_id_len = 511;
  if (m->error_len > 511) m->error_len = 511;
  if (m->error_status_len > 511) m->error_status_len = 511;
}

static bool view_ok(const char *s, size_t n, const uint8_t *d, size_t size) {
  if (!n) return true;
  const uint8_t *q = (const uint8_t *)s;
  return q >= d && q + n <= d + size;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  tp_engine_proto p = data[0] % 2 ? TP_ENGINE_SGLANG : TP_ENGINE_VLLM;
  const uint8_t *d = data + 1;
  size_t n = size - 1;
  uint8_t *copy = malloc(n ? n : 1);
  if (!copy) abort();
  if (n) memcpy(copy, d, n);

  tp_engine_decoder dec;
  tp_engine_decoder_init(&dec);
  tp_engine_msg m, again, ref;
  int rv = tp_engine_decode(&dec, p, copy, n, &m);
  if (rv != 0 && rv != TP_EPROTO) abort();
  /* In place, the strings are views of the input (the slow path's point
   * into its own message). */
  if (rv == 0 && !dec.slow &&
      (!view_ok(m.finish_reason, m.finish_reason_len, copy, n) ||
       !view_ok(m.request_id, m.request_id_len, copy, n) || !view_ok(m.error, m.error_len, copy, n) ||
       !view_ok(m.error_status, m.error_status_len, copy, n)))
    abort();
  if (n && memcmp(copy, d, n) != 0) abort();
  uint8_t *packed = NULL;
  size_t packed_len = 0;
  bool valid = reference(p, copy, n, &ref, &packed, &packed_len);
  if (valid != (rv == 0)) abort();
  if (valid) {
    tp_engine_msg mine = m;
    clip(&mine);
    if (!same_msg(&mine, &ref)) abort();
    if (tp_engine_decode(&dec, p, copy, n, &again) != 0) abort();
    clip(&again);
    if (!same_msg(&again, &ref)) abort();
    if (!has_unknown(p, copy, n)) {
      if (tp_engine_decode(&dec, p, packed, packed_len, &again) != 0) abort();
      clip(&again);
      if (!same_msg(&again, &ref)) abort();
    }
  }
  free(packed);
  tp_engine_decoder_fini(&dec);
  free(copy);
  return 0;
}

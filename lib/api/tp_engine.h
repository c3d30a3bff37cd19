/* The engines' own gRPC protocols: vLLM's VllmEngine and SGLang's
 * SglangScheduler (proto/vllm_engine.proto, proto/sglang_scheduler.proto).
 * Token ids in, token ids out: no chat template, no detokenization.
 *
 * Request messages out (framed with the gRPC prefix), response messages in;
 * no sockets here, so everything is tested with byte buffers.  The hot
 * path, a Generate response, is read in place without allocating; the
 * preflight's answers go through protobuf-c. */
#ifndef TP_ENGINE_H
#define TP_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/tp_common.h"

/* The protocols.  X-macro: value, name (the service kind's, in messages and
 * exports), the service's full name. */
#define TP_ENGINE_PROTOS(X)                                     \
  X(TP_ENGINE_VLLM, "vllm-grpc", "vllm.grpc.engine.VllmEngine") \
  X(TP_ENGINE_SGLANG, "sglang-grpc", "sglang.grpc.scheduler.SglangScheduler")

#define TP_ENGINE_ENUM(e, name, service) e,
typedef enum tp_engine_proto { TP_ENGINE_PROTOS(TP_ENGINE_ENUM) TP_ENGINE_PROTO_COUNT } tp_engine_proto;
#undef TP_ENGINE_ENUM

/* "vllm-grpc"; "?" out of range. */
const char *tp_engine_name(tp_engine_proto p);
/* "vllm.grpc.engine.VllmEngine"; "?" out of range. */
const char *tp_engine_service(tp_engine_proto p);
/* "/vllm.grpc.engine.VllmEngine/Generate" into out (truncated to outlen). */
void tp_engine_path(tp_engine_proto p, const char *method, char *out, size_t outlen);

/* ---- requests ------------------------------------------------------------ */

/* Sampling values beyond the output length, from --extra-inputs.  has_*
 * false: not given (the protocol's default, or for SGLang, whose server
 * takes zeros as they are, the engine's usual default: temperature 1,
 * top_p 1, top_k -1 (all), repetition_penalty 1). */
typedef struct tp_engine_sampling {
  bool has_temperature, has_top_p, has_top_k, has_min_p, has_frequency_penalty, has_presence_penalty,
      has_repetition_penalty, has_seed, has_ignore_eos, has_skip_special_tokens, has_max_tokens,
      has_min_tokens;
  float temperature, top_p, min_p, frequency_penalty, presence_penalty, repetition_penalty;
  int32_t top_k, seed;
  bool ignore_eos, skip_special_tokens;
  uint32_t max_tokens, min_tokens; /* instead of the run's (a fixed value for every request) */
  char **stop;                     /* owned */
  size_t n_stop;
  uint32_t *stop_token_ids; /* owned */
  size_t n_stop_token_ids;
} tp_engine_sampling;

/* Reads the extra fields (the JSON object tp_openai_parse_extra made from
 * --extra-inputs; NULL = none) into s, which it initialises.  Known names:
 * temperature, top_p, top_k, min_p, frequency_penalty, presence_penalty,
 * repetition_penalty, max_tokens (max_new_tokens), min_tokens
 * (min_new_tokens), ignore_eos, skip_special_tokens, stop (a string or a
 * list of strings), stop_token_ids (a list of ids), and for vLLM seed.
 * Returns 0, or TP_EINVAL with a message naming --extra-inputs and the
 * field (an unknown name, one the protocol has no field for, a value of
 * the wrong type or range), or TP_ENOMEM.  tp_engine_sampling_fini frees
 * it either way. */
int tp_engine_sampling_read(tp_engine_sampling *s, tp_engine_proto p, const json_t *extra, char *err,
                            size_t errlen);
void tp_engine_sampling_fini(tp_engine_sampling *s);

/* One Generate request. */
typedef struct tp_engine_gen {
  const char *id; /* request_id */
  /* The prompt as token ids (NULL: send text, which only vLLM accepts:
   * TP_EINVAL for SGLang).  Ids are the tokenizer's, all >= 0. */
  const int32_t *ids;
  size_t n_ids;
  /* The prompt's text: vLLM's `text` when ids is NULL; otherwise sent as
   * original_text only with send_text (servers use it for logs only, and it
   * doubles the request's size). */
  const char *text;
  size_t text_len;
  bool send_text;
  uint32_t max_tokens; /* 0 = not sent (the server's default) */
  uint32_t min_tokens; /* > 0: also ignore_eos, so the length is exact */
  bool stream;
} tp_engine_gen;

/* Appends a framed GenerateRequest to out.  The sampling values s (NULL =
 * none) override the run's.  Returns 0, TP_EINVAL (text for SGLang, or a
 * prompt longer than the protocol can carry) or TP_ENOMEM. */
int tp_engine_build_generate(tp_buf *out, tp_engine_proto p, const tp_engine_gen *g,
                             const tp_engine_sampling *s);
/* Appends a framed AbortRequest for n request ids to out: vLLM takes them
 * all in one message; SGLang's names one (n must be 1).  Returns 0,
 * TP_EINVAL or TP_ENOMEM. */
int tp_engine_build_abort(tp_buf *out, tp_engine_proto p, const char *const *ids, size_t n,
                          const char *reason);
/* The framed empty message (HealthCheckRequest and GetModelInfoRequest
 * have no fields in either protocol). */
int tp_engine_build_empty(tp_buf *out);

/* ---- Generate responses -------------------------------------------------- */

typedef enum tp_engine_kind {
  TP_ENGINE_MSG_EMPTY = 0, /* no member of the response oneof */
  TP_ENGINE_MSG_CHUNK,
  TP_ENGINE_MSG_COMPLETE,
  TP_ENGINE_MSG_ERROR /* SGLang's GenerateError */
} tp_engine_kind;

/* One decoded GenerateResponse.  Strings point into the caller's bytes
 * (or the decoder's copy, see tp_engine_decoder), are not NUL-terminated,
 * and end at their first NUL byte as protobuf-c's would. */
typedef struct tp_engine_msg {
  tp_engine_kind kind;
  uint32_t n_ids; /* token ids of the chunk (token_ids) or complete (output_ids) */
  /* The counts as sent: proto3 has no "absent", a count not sent is 0.
   * SGLang declares them int32 (negative on the wire = negative here). */
  int64_t prompt_tokens, completion_tokens, cached_tokens;
  const char *finish_reason; /* complete */
  size_t finish_reason_len;
  const char *request_id; /* SGLang only */
  size_t request_id_len;
  const char *error; /* error: message */
  size_t error_len;
  const char *error_status; /* error: http_status_code ("500", "499", ...) */
  size_t error_status_len;
} tp_engine_msg;

/* Holds what a rare message needed (see tp_engine_decode). */
typedef struct tp_engine_decoder {
  void *slow; /* a protobuf-c message, NULL = none */
  tp_engine_proto proto;
} tp_engine_decoder;

void tp_engine_decoder_init(tp_engine_decoder *d);
void tp_engine_decoder_fini(tp_engine_decoder *d);

/* Decodes one GenerateResponse (the gRPC message, without its prefix) of
 * protocol p.  Which messages are valid and what they hold is exactly what
 * protobuf-c makes of them with the .proto files (fuzz_engine_response
 * compares the two): the usual message, with each member of the response
 * oneof at most once, is read in place; one that names its members more
 * than once (protobuf-c keeps the last) is unpacked by protobuf-c, and *out then
 * points into d until the next decode or fini.  Returns 0 or TP_EPROTO. */
int tp_engine_decode(tp_engine_decoder *d, tp_engine_proto p, const uint8_t *data, size_t len,
                     tp_engine_msg *out);

/* ---- the preflight's answers -------------------------------------------- */

/* HealthCheckResponse.  message is copied (truncated) into msg. */
int tp_engine_parse_health(tp_engine_proto p, const uint8_t *data, size_t len, bool *healthy, char *msg,
                           size_t msglen);

typedef struct tp_engine_model_info {
  char model_path[256];
  char served_model_name[256];
  bool is_generation;
  int64_t max_context_length; /* 0 = not said */
  int64_t vocab_size;         /* 0 = not said */
} tp_engine_model_info;

/* GetModelInfoResponse.  Returns 0 or TP_EPROTO. */
int tp_engine_parse_model_info(tp_engine_proto p, const uint8_t *data, size_t len, tp_engine_model_info *out);

#endif

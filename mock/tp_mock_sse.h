/* What the mock's HTTP side writes: OpenAI-compatible streams in the
 * dialects of four servers, their non-streaming bodies and error bodies,
 * and Triton's generate JSON.
 *
 * Pure formatting: bytes out into a tp_buf, no I/O, no clock (`created` is
 * given), so the unit tests check every dialect's shapes exactly.
 *
 * Dialects, as the mock writes them:
 *   vllm          `data: {json}\n\n`; chat: a role-only first chunk
 *                 (`"role":"assistant","content":""`), chunks without a
 *                 usage key; completions: every chunk has `"usage":null`
 *                 and `stop_reason`; finish_reason on the last text chunk;
 *                 usage chunk (`"choices":[]`, with
 *                 prompt_tokens_details.cached_tokens) with include_usage;
 *                 `data: [DONE]`, also after an in-stream error.
 *   trtllm-serve  vLLM's schema without null fields; the role-only chat
 *                 chunk has no content and is written `data: {json} \n\n`
 *                 (one space after the JSON); include_usage defaults to
 *                 true once stream_options is present (the caller decides);
 *                 flat error objects.
 *   tgi           `data:{json}\n\n` (no space); chat chunks have id "",
 *                 system_fingerprint, role "assistant" in every delta and
 *                 no role-only chunk, `"usage":null`; keep-alive comments
 *                 (`:\n\n`); errors `{"error":"…","error_type":"…"}`, in a
 *                 stream `data:{"error":{"message":…,"http_status_code":…}}`.
 *   llamacpp      keys in llama-server's insertion order (choices first,
 *                 object last); role-only first chunk with content null;
 *                 the last text chunk is followed by a finish chunk (empty
 *                 delta / empty text) carrying finish_reason and `timings`;
 *                 usage chunk only with include_usage; in-stream errors as
 *                 an `error: {json}` field, which is not a data line. */
#ifndef TP_MOCK_SSE_H
#define TP_MOCK_SSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/tp_common.h"

/* X-macro: enum suffix, name. */
#define TP_MOCK_DIALECTS(X) \
  X(VLLM, "vllm")           \
  X(TRTLLM, "trtllm-serve") \
  X(TGI, "tgi")             \
  X(LLAMACPP, "llamacpp")

#define TP_MOCK_DIALECT_ENUM(name, str) TP_MOCK_DIALECT_##name,
typedef enum tp_mock_dialect { TP_MOCK_DIALECTS(TP_MOCK_DIALECT_ENUM) TP_MOCK_DIALECT_COUNT } tp_mock_dialect;
#undef TP_MOCK_DIALECT_ENUM

/* Returns 0 or TP_EINVAL for a name not in the table ("trtllm" is taken for
 * "trtllm-serve"). */
int tp_mock_dialect_parse(const char *name, tp_mock_dialect *out);
const char *tp_mock_dialect_name(tp_mock_dialect d);

typedef enum tp_mock_api { TP_MOCK_API_COMPLETIONS = 0, TP_MOCK_API_CHAT } tp_mock_api;

typedef struct tp_mock_usage {
  uint32_t prompt_tokens;
  uint32_t completion_tokens;
  uint32_t cached_tokens;
} tp_mock_usage;

/* llama-server's timings object. */
typedef struct tp_mock_timings {
  double prompt_ms;
  double predicted_ms;
} tp_mock_timings;

/* One OpenAI stream being written. */
typedef struct tp_mock_sse_writer {
  /* Set by the caller before the first token. */
  tp_mock_dialect dialect;
  tp_mock_api api;
  const char *id;    /* borrowed; "cmpl-…" or "chatcmpl-…" (TGI writes "") */
  const char *model; /* borrowed */
  uint64_t created;  /* Unix seconds */
  bool include_usage;
  bool continuous_usage; /* usage on every chunk (vLLM, trtllm-serve) */
  /* Chat streams: the first this many tokens go out as
   * `reasoning_content` deltas, the rest as `content`. */
  uint32_t reasoning_tokens;
  /* Tokens the next tp_mock_sse_token call's text holds (0 = one): a
   * chunk of several tokens counts them all. */
  uint32_t chunk_tokens;
  /* The last token's call leaves out the usage chunk and [DONE]:
   * tp_mock_sse_trailer writes them later. */
  bool trailer_later;
  /* State. */
  uint32_t tokens;
  bool done;
} tp_mock_sse_writer;

/* Appends the events for one generated token: the role-only chunk first
 * when the dialect has one, the text chunk, and when last is set the
 * finish, usage and [DONE] events the dialect sends.  finish_reason is
 * "length" or "stop" (used when last).  u holds the counts so far
 * (including this token); t is used by llamacpp's finish chunk (may be
 * NULL elsewhere).  text may hold any bytes (invalid UTF-8 is written as
 * is).  Returns 0 or TP_ENOMEM. */
int tp_mock_sse_token(tp_buf *out, tp_mock_sse_writer *w, const char *text, size_t len, bool last,
                      const char *finish_reason, const tp_mock_usage *u, const tp_mock_timings *t);

/* Appends what ends a stream whose last token went with trailer_later
 * set: the usage chunk (with include_usage) and [DONE].  Returns 0 or
 * TP_ENOMEM. */
int tp_mock_sse_trailer(tp_buf *out, tp_mock_sse_writer *w, const tp_mock_usage *u);

/* Appends an in-stream error event in the dialect's shape, then [DONE] for
 * the dialects that send it after errors (vllm, trtllm-serve), and ends the
 * writer. */
int tp_mock_sse_error(tp_buf *out, tp_mock_sse_writer *w, const char *message, int http_status);

/* Appends a keep-alive comment (`:\n\n`). */
int tp_mock_sse_keepalive(tp_buf *out);

/* Appends the non-streaming completion object (text_completion or
 * chat.completion) in the dialect's shape. */
int tp_mock_oai_body(tp_buf *out, const tp_mock_sse_writer *w, const char *text, size_t len,
                     const char *finish_reason, const tp_mock_usage *u, const tp_mock_timings *t);

/* Appends the dialect's error body for an HTTP error status. */
int tp_mock_oai_error_body(tp_buf *out, tp_mock_dialect d, const char *message, int http_status);

/* The error type name of an HTTP status ("BadRequestError" for 400, ...). */
const char *tp_mock_error_type(int http_status);

/* Triton generate: the response JSON, and the same
 * as one SSE event ("data: " + JSON + "\n\n").  id may be NULL (no key). */
int tp_mock_generate_json(tp_buf *out, const char *model, const char *id, const char *text, size_t len);
int tp_mock_generate_event(tp_buf *out, const char *model, const char *id, const char *text, size_t len);
/* {"error":"…"}, as a body or as an event. */
int tp_mock_generate_error(tp_buf *out, const char *message, bool as_event);

/* Appends s as a JSON string: quotes, backslash escapes for '"', '\\' and
 * control bytes; every other byte as it is. */
void tp_mock_json_str(tp_buf *b, const char *s, size_t n);

#endif

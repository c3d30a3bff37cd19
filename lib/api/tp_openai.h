/* HTTP JSON adapters: OpenAI-compatible completions and chat
 * and Triton's generate extension.  Request bodies
 * out, decoded chunks in; no sockets here, so everything is testable with
 * byte buffers.  JSON goes through jansson. */
#ifndef TP_OPENAI_H
#define TP_OPENAI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "util/tp_common.h"
#include "tokperf/tokperf.h"

/* The HTTP APIs.  X-macro: enum value, name (CLI and exports), default
 * path (NULL: built from the model name). */
#define TP_HTTP_APIS(X)                                                      \
  X(TP_HTTP_API_OPENAI_COMPLETIONS, "openai-completions", "/v1/completions") \
  X(TP_HTTP_API_OPENAI_CHAT, "openai-chat", "/v1/chat/completions")          \
  X(TP_HTTP_API_TRITON_GENERATE, "triton-generate", NULL)

#define TP_HTTP_API_ENUM(e, name, path) e,
typedef enum tp_http_api { TP_HTTP_APIS(TP_HTTP_API_ENUM) TP_HTTP_API_COUNT } tp_http_api;
#undef TP_HTTP_API_ENUM

/* "openai-chat" for TP_HTTP_API_OPENAI_CHAT; "?" out of range. */
const char *tp_http_api_name(tp_http_api api);
/* Reads a name of the table.  Returns 0 or TP_EINVAL. */
int tp_http_api_parse(const char *s, tp_http_api *out);
/* Writes the default request path into out (NUL-terminated, truncated to
 * outlen): "/v1/completions", "/v1/chat/completions", or for Triton
 * "/v2/models/M[/versions/V]/generate_stream" ("/generate" when not
 * streaming).  The model name is percent-encoded. */
void tp_http_api_path(tp_http_api api, const char *model, const char *version, bool streaming, char *out,
                      size_t outlen);

/* What goes into a request body. */
typedef struct tp_openai_opts {
  tp_http_api api;
  const char *model; /* OpenAI "model"; NULL = not sent.  Unused for Triton (in the path). */
  bool streaming;    /* "stream": true and an SSE reply */
  /* Streaming OpenAI requests ask for stream_options.include_usage so the
   * server's own token counts come back in a last chunk. */
  bool include_usage;
  /* Triton generate: the model's input layout.
   * TensorRT-LLM takes max_tokens/stream/min_length at the top level (they
   * are tensors); vLLM takes `stream` as a tensor and the sampling values
   * in "parameters". */
  tp_backend backend;
  bool trtllm_min_tokens; /* the TRT-LLM model calls it min_tokens, not min_length */
  bool exclude_input;     /* send exclude_input_in_output: true (the model has that input) */
  /* Extra fields merged into the body last, recursively (an object value
   * merges into an object of the same name, anything else replaces).
   * Borrowed; NULL = none. */
  const json_t *extra;
  /* Triton generate: the request's id, sent as "id" (the generate
   * extension returns it in every response); NULL = none.  OpenAI has no
   * such field: its id goes as the x-request-id header. */
  const char *request_id;
} tp_openai_opts;

/* Builds a request body into out (replacing its content): for OpenAI
 * {"model", "prompt" | "messages":[{"role":"user","content"}],
 * "max_tokens" (when > 0), "stream", "stream_options"} and, with
 * min_tokens > 0, "min_tokens" and "ignore_eos": true; for Triton
 * {"text_input", ...} (see tp_openai_opts).  Only those fields are sent:
 * strict servers (trtllm-serve) reject unknown ones.  Returns 0, TP_EINVAL
 * (the prompt is not valid UTF-8) or TP_ENOMEM.  messages (NULL = none) is
 * an input file's chat messages, a JSON array of {"role", "content"}
 * objects: sent as "messages" as they are to chat, their contents joined by
 * "\n" as the prompt elsewhere (prompt is then not used); TP_EINVAL when it
 * is not a non-empty array. */
int tp_openai_build_request(tp_buf *out, const tp_openai_opts *o, const char *prompt, size_t prompt_len,
                            const char *messages, uint32_t max_tokens, uint32_t min_tokens);

/* Reads extra request fields.  Each item is either a JSON object
 * ("{\"top_k\":1}") or NAME:VALUE, whose VALUE is taken as JSON when it
 * parses as JSON (numbers, true, false, null, "quoted", [..], {..}) and as a
 * plain string otherwise ("stop:END" gives "END").  Later items win.
 * Returns 0 with *out owned (json_decref; NULL when n is 0), or TP_EINVAL
 * with a message quoting the bad item, or TP_ENOMEM. */
int tp_openai_parse_extra(json_t **out, const char *const *items, size_t n, char *err, size_t errlen);

/* One decoded chunk (a streamed event's data) or whole non-streaming reply.
 * Pointers borrow from the decoder until the next decode or fini. */
typedef struct tp_openai_chunk {
  const uint8_t *text; /* choices[].text / delta.content / message.content / text_output */
  size_t text_len;
  const uint8_t *reasoning; /* delta.reasoning_content (or "reasoning"), chat only */
  size_t reasoning_len;
  bool has_choices;          /* a non-empty choices array was present */
  const char *finish_reason; /* first non-null finish_reason, or NULL */
  /* usage object (OpenAI); -1 when absent. */
  bool has_usage;
  int64_t prompt_tokens;
  int64_t completion_tokens;
  int64_t cached_tokens; /* usage.prompt_tokens_details.cached_tokens */
  int64_t output_tokens; /* Triton num_output_tokens (a delta), -1 = absent */
  const char *error;     /* in-band error message (an "error" key), or NULL */
  int64_t error_code;    /* error.code / http_status_code when numeric, else 0 */
  /* The document's "id" (OpenAI's completion id, Triton's request id
   * echoed), or NULL; valid until the next decode. */
  const char *id;
} tp_openai_chunk;

typedef struct tp_openai_decoder {
  json_t *root;
  tp_buf text;
  tp_buf reasoning;
  char error[256];
  char finish[64];
} tp_openai_decoder;

void tp_openai_decoder_init(tp_openai_decoder *d);
void tp_openai_decoder_fini(tp_openai_decoder *d);

/* Decodes one JSON document (a chunk's data or a whole reply) for `api`.
 * Text from several choices is joined in the order they appear.  Unknown
 * keys are ignored and null, absent and empty are all "nothing".  Returns
 * 0, or TP_EPROTO when the bytes are not a JSON object (then *out holds no
 * text and no error). */
int tp_openai_decode(tp_openai_decoder *d, tp_http_api api, const uint8_t *data, size_t len,
                     tp_openai_chunk *out);

/* True for the OpenAI end-of-stream sentinel "[DONE]" (surrounding spaces
 * allowed, as servers pad). */
bool tp_openai_is_done(const uint8_t *data, size_t len);

/* The message of an error body or error event: error.message, error (a
 * string), message, detail, or failing those the body itself; control bytes
 * become spaces and the result is cut to max_chars bytes (at a UTF-8
 * character boundary, "..." added).  out needs max_chars + 4 bytes; returns
 * out.  An empty body gives "(empty body)". */
char *tp_openai_error_text(const uint8_t *body, size_t len, size_t max_chars, char *out);

#endif

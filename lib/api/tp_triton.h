/* The Triton (KServe v2 gRPC) adapter: request bytes out, response events
 * in.  No sockets here; the transport hands over whole gRPC messages. */
#ifndef TP_TRITON_H
#define TP_TRITON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/tp_common.h"
#include "tokperf/tokperf.h"

#define TP_TRITON_SERVICE "/inference.GRPCInferenceService/"

typedef struct tp_triton_opts {
  const char *model;
  const char *version;
  tp_backend backend;
  bool streaming;
  /* Shapes: TensorRT-LLM models batch (max_batch_size > 0), so inputs carry a
   * leading batch dimension [1, 1]; vLLM models do not ([1]).  Filled from
   * ModelMetadata when the shapes there say otherwise. */
  bool batch_dim;
  bool has_stream_input;   /* the model declares a "stream" input */
  bool has_min_tokens;     /* TRT-LLM: "min_tokens" (else "min_length") */
  bool has_min_length;
  bool has_exclude_input;  /* "exclude_input_in_output" */
  /* The output holding the text: "text_output", or "TEXT" for the model of
   * vLLM's quick-deploy tutorial, whose every response is the prompt and
   * all the text so far (echo).  NULL = "text_output". */
  const char *text_output;
  bool echo;
} tp_triton_opts;

/* Completes req (the text output asked for; for streaming, the parameter
 * that keeps a flag-only final response) and appends it to out framed with
 * its 5-byte gRPC prefix: the tail shared by tokperf's own requests and an
 * input file's tensors.  Returns 0, TP_ETOOBIG or TP_ENOMEM. */
struct Inference__ModelInferRequest;
int tp__triton_pack_request(tp_buf *out, struct Inference__ModelInferRequest *req, const tp_triton_opts *o);

/* Builds one framed ModelInferRequest (5-byte gRPC prefix included) into
 * out.  max_tokens 0 = leave to the server; min_tokens > 0 asks the server
 * not to stop before that many (TRT-LLM min_length/min_tokens, vLLM
 * min_tokens + ignore_eos).  Returns 0 or TP_ENOMEM. */
int tp_triton_build_infer(tp_buf *out, const tp_triton_opts *o, const char *id,
                          const char *prompt, size_t prompt_len,
                          uint32_t max_tokens, uint32_t min_tokens);

/* One decoded response.  Every pointer is a view into the bytes given to
 * tp_triton_parse_response (borrowed: valid while they are), never a copy;
 * the strings are not NUL-terminated, so use their lengths. */
typedef struct tp_triton_event {
  /* The request id: NULL when a streamed response has no infer_response,
   * "" when it has none. */
  const char *id;
  size_t id_len;
  const uint8_t *text; /* text_output element 0, or NULL */
  size_t text_len;
  bool final; /* triton_final_response true, or a unary answer */
  bool has_final_param;
  const char *error;         /* in-band error_message, or NULL */
  size_t error_len;          /* > 0 whenever error is set */
  int64_t num_output_tokens; /* server-reported delta, -1 = absent */
} tp_triton_event;

/* Decodes a ModelStreamInferResponse (stream = true) or a
 * ModelInferResponse (stream = false) in place, reading the protobuf wire
 * format directly: nothing is allocated and nothing is copied.
 *
 * The event gets the last id, the triton_final_response parameter (the last
 * one with a bool_param), element 0 of the last "text_output" output that
 * carries data (raw_output_contents, whose BYTES elements have a 4-byte
 * little-endian length, or else contents.bytes_contents) and element 0 of
 * the last "num_output_tokens" output (UINT32/INT32, raw).  A streamed
 * error_message ends its request (final = true); a unary answer is always
 * final.
 *
 * Which byte strings are valid is exactly what protobuf-c 1.4 (the decoder
 * this replaces) accepts, down to its quirks (tp_triton.c lists them), so
 * that no server's answer is read differently than before; the fuzz target
 * holds the two to that.  Strings are read as C strings were, up to the
 * first NUL byte.
 *
 * Returns 0, or TP_EPROTO when the bytes are not a valid message or a
 * text_output element claims more bytes than it holds; the event then says
 * nothing (all NULL, 0 and false, num_output_tokens -1). */
int tp_triton_parse_response(tp_triton_event *ev, const uint8_t *data, size_t len, bool stream);

/* The decoder tp_triton_parse_response replaced: protobuf-c's unpack of the
 * whole message (one allocation per string, tensor, map entry and array),
 * then the same extraction.  Kept as the reference that the unit tests, the
 * fuzz target and the decode benchmark compare with; the client does not
 * use it.  The event's pointers borrow from r->msg, valid until
 * tp__triton_resp_free(r), which may be called after a failure too.
 * Returns 0 or TP_EPROTO as above (protobuf-c reports running out of memory
 * the same way as invalid bytes, so that is TP_EPROTO too). */
typedef struct tp_triton_resp {
  void *msg; /* the unpacked protobuf-c message, or NULL */
  bool stream;
} tp_triton_resp;

int tp__triton_parse_response_pbc(tp_triton_resp *r, tp_triton_event *ev, const uint8_t *data, size_t len,
                                  bool stream);
void tp__triton_resp_free(tp_triton_resp *r);

/* Health and metadata messages for the checks before a run. */
int tp_triton_build_model_request(tp_buf *out, const char *name, const char *version);
int tp_triton_parse_bool_response(const uint8_t *data, size_t len, bool *value);

typedef struct tp_triton_tensor_meta {
  char name[64];
  char datatype[16];
  int n_dims;
  int64_t dims[8];
} tp_triton_tensor_meta;

typedef struct tp_triton_model_meta {
  char platform[64];
  size_t n_inputs, n_outputs;
  tp_triton_tensor_meta inputs[64];
  tp_triton_tensor_meta outputs[64];
} tp_triton_model_meta;

int tp_triton_parse_model_metadata(const uint8_t *data, size_t len, tp_triton_model_meta *m);
/* Checks that the model offers what the backend needs and fills o's
 * capability fields.  Returns 0 or TP_EUNSUPPORTED with a message naming the
 * missing input and what the model has. */
int tp_triton_check_metadata(const tp_triton_model_meta *m, tp_triton_opts *o,
                             char *err, size_t errlen);

/* Builds one framed ModelInferRequest whose inputs an input file gives:
 * inputs_json is a JSON object mapping input names to a list of values,
 * {"content": [...], "shape": [...]} or {"b64": "..."} (perf_analyzer's
 * input data), each encoded with the datatype m declares for it
 * (tp_triton_inputs.c says how).  Asks for text_output, and for the empty
 * final response when streaming.  Returns 0, TP_EINVAL with a message
 * naming the input, TP_ETOOBIG or TP_ENOMEM. */
int tp_triton_build_infer_inputs(tp_buf *out, const tp_triton_opts *o, const tp_triton_model_meta *m,
                                 const char *id, const char *inputs_json, char *err, size_t errlen);
/* tp_triton_check_metadata for requests built from a file's inputs: the
 * model must answer in text_output; the inputs themselves are checked
 * when each request is built. */
int tp_triton_check_file_metadata(const tp_triton_model_meta *m, tp_triton_opts *o, char *err, size_t errlen);

/* One model's cumulative counters from a ModelStatisticsResponse. */
typedef struct tp_triton_model_counters {
  char name[128];
  char version[32];
  uint64_t inference_count, execution_count;
  uint64_t success_count, success_ns, fail_count, fail_ns;
  uint64_t queue_ns, compute_input_ns, compute_infer_ns, compute_output_ns;
  uint64_t cache_hit_count;
} tp_triton_model_counters;

/* Decodes a ModelStatisticsResponse into *out (returned owned, free()).
 * Returns 0, TP_EPROTO or TP_ENOMEM. */
int tp_triton_parse_model_statistics(const uint8_t *data, size_t len, tp_triton_model_counters **out,
                                     size_t *n);

#endif

#include "tp_triton.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_service.pb-c.h"
#include "transport/tp_grpc.h"
#include "tokperf/tokperf.h"

/* Request building.  Inputs always travel as raw_input_contents (what
 * Triton's own clients send), one entry per input in the
 * order of `inputs`. */

#define MAX_INPUTS 8

typedef struct req_builder {
  Inference__ModelInferRequest req;
  Inference__ModelInferRequest__InferInputTensor tensors[MAX_INPUTS];
  Inference__ModelInferRequest__InferInputTensor *tensor_ptrs[MAX_INPUTS];
  int64_t shapes[MAX_INPUTS][2];
  ProtobufCBinaryData raw[MAX_INPUTS];
  uint8_t small[MAX_INPUTS][8]; /* storage for scalar raw contents */
  size_t n;
} req_builder;

static void add_input(req_builder *b, const tp_triton_opts *o, const char *name,
                      const char *datatype, const uint8_t *raw, size_t raw_len) {
  size_t i = b->n++;
  Inference__ModelInferRequest__InferInputTensor *t = &b->tensors[i];
  inference__model_infer_request__infer_input_tensor__init(t);
  t->name = (char *)name;
  t->datatype = (char *)datatype;
  /* Batching models take [batch, 1]; others exactly [1]. */
  b->shapes[i][0] = 1;
  b->shapes[i][1] = 1;
  t->shape = b->shapes[i];
  t->n_shape = o->batch_dim ? 2 : 1;
  b->tensor_ptrs[i] = t;
  b->raw[i].data = (uint8_t *)raw;
  b->raw[i].len = raw_len;
}

static void add_scalar(req_builder *b, const tp_triton_opts *o, const char *name,
                       const char *datatype, uint32_t v, size_t bytes) {
  uint8_t *p = b->small[b->n];
  /* Little endian, as every raw tensor element is. */
  for (size_t k = 0; k < bytes; k++) p[k] = (uint8_t)(v >> (8 * k));
  add_input(b, o, name, datatype, p, bytes);
}

int tp__triton_pack_request(tp_buf *out, Inference__ModelInferRequest *req, const tp_triton_opts *o) {
  /* Ask for the text output only; otherwise every output (logits included)
   * may come back as empty tensors. */
  Inference__ModelInferRequest__InferRequestedOutputTensor want;
  Inference__ModelInferRequest__InferRequestedOutputTensor *wantp = &want;
  inference__model_infer_request__infer_requested_output_tensor__init(&want);
  want.name = (char *)(o->text_output ? o->text_output : "text_output");
  req->outputs = &wantp;
  req->n_outputs = 1;

  /* Without this parameter a flag-only final response is dropped by Triton
   * and the end of the request is never seen. */
  Inference__ModelInferRequest__ParametersEntry pe;
  Inference__ModelInferRequest__ParametersEntry *pep = &pe;
  Inference__InferParameter pv;
  if (o->streaming) {
    inference__model_infer_request__parameters_entry__init(&pe);
    inference__infer_parameter__init(&pv);
    pv.parameter_choice_case = INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM;
    pv.bool_param = 1;
    pe.key = "triton_enable_empty_final_response";
    pe.value = &pv;
    req->parameters = &pep;
    req->n_parameters = 1;
  }

  size_t len = inference__model_infer_request__get_packed_size(req);
  int rv = len > UINT32_MAX ? TP_ETOOBIG : tp_buf_reserve(out, TP_GRPC_PREFIX_BYTES + len);
  if (rv == 0) {
    tp_grpc_put_prefix(out->data + out->len, (uint32_t)len);
    inference__model_infer_request__pack(req, out->data + out->len + TP_GRPC_PREFIX_BYTES);
    out->len += TP_GRPC_PREFIX_BYTES + len;
    out->data[out->len] = 0;
  }
  /* The request points at this frame's locals no longer. */
  req->outputs = NULL;
  req->n_outputs = 0;
  req->parameters = NULL;
  req->n_parameters = 0;
  return rv;
}

int tp_triton_build_infer(tp_buf *out, const tp_triton_opts *o, const char *id,
                          const char *prompt, size_t prompt_len,
                          uint32_t max_tokens, uint32_t min_tokens) {
  req_builder b;
  memset(&b, 0, sizeof(b));
  inference__model_infer_request__init(&b.req);
  b.req.model_name = (char *)o->model;
  b.req.model_version = (char *)(o->version ? o->version : "");
  b.req.id = (char *)id;

  /* BYTES element: 4-byte little-endian length, then the bytes. */
  if (prompt_len > UINT32_MAX) return TP_ETOOBIG;
  uint8_t *text = malloc(prompt_len + 4);
  if (!text) return TP_ENOMEM;
  for (int k = 0; k < 4; k++) text[k] = (uint8_t)((uint64_t)prompt_len >> (8 * k));
  memcpy(text + 4, prompt, prompt_len);
  add_input(&b, o, "text_input", "BYTES", text, prompt_len + 4);

  char json[160];
  uint8_t *sp = NULL;
  if (o->backend == TP_BACKEND_TENSORRTLLM) {
    add_scalar(&b, o, "max_tokens", "INT32", max_tokens ? max_tokens : 128, 4);
    if (min_tokens && o->has_min_tokens)
      add_scalar(&b, o, "min_tokens", "INT32", min_tokens, 4);
    else if (min_tokens && o->has_min_length)
      add_scalar(&b, o, "min_length", "INT32", min_tokens, 4);
    if (o->has_stream_input) add_scalar(&b, o, "stream", "BOOL", o->streaming, 1);
    /* A non-streaming answer otherwise starts with the prompt, which would
     * be counted as generated text. */
    if (o->has_exclude_input) add_scalar(&b, o, "exclude_input_in_output", "BOOL", 1, 1);
  } else {
    if (o->has_stream_input) add_scalar(&b, o, "stream", "BOOL", o->streaming, 1);
    /* vLLM's default max_tokens is 16, so it is always sent.  Booleans must
     * be JSON true/false: the backend casts strings to bool truthily. */
    int n = snprintf(json, sizeof(json), "{\"max_tokens\":%u", max_tokens ? max_tokens : 128);
    if (min_tokens)
      n += snprintf(json + n, sizeof(json) - (size_t)n,
                    ",\"min_tokens\":%u,\"ignore_eos\":true", min_tokens);
    n += snprintf(json + n, sizeof(json) - (size_t)n, "}");
    sp = malloc((size_t)n + 4);
    if (!sp) {
      free(text);
      return TP_ENOMEM;
    }
    for (int k = 0; k < 4; k++) sp[k] = (uint8_t)((unsigned)n >> (8 * k));
    memcpy(sp + 4, json, (size_t)n);
    add_input(&b, o, "sampling_parameters", "BYTES", sp, (size_t)n + 4);
    /* Streaming vLLM rejects exclude_input_in_output=false; true keeps the
     * prompt out of non-streaming answers too. */
    if (o->has_exclude_input) add_scalar(&b, o, "exclude_input_in_output", "BOOL", 1, 1);
  }
  b.req.inputs = b.tensor_ptrs;
  b.req.n_inputs = b.n;
  b.req.raw_input_contents = b.raw;
  b.req.n_raw_input_contents = b.n;

  int rv = tp__triton_pack_request(out, &b.req, o);
  free(text);
  free(sp);
  return rv;
}

#include "tp_triton.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_service.pb-c.h"
#include "transport/tp_grpc.h"

/* Request building.  Inputs always travel as raw_input_contents (what
 * Triton's own clients send; protocols.md §3.3), one entry per input in the
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
  /* Batching models take [batch, 1]; others exactly [1] (protocols.md §2.6). */
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
     * be counted as generated text (protocols.md §4.5). */
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

  /* Ask for text_output only; otherwise every output (logits included) may
   * come back as empty tensors. */
  Inference__ModelInferRequest__InferRequestedOutputTensor want;
  Inference__ModelInferRequest__InferRequestedOutputTensor *wantp = &want;
  inference__model_infer_request__infer_requested_output_tensor__init(&want);
  want.name = "text_output";
  b.req.outputs = &wantp;
  b.req.n_outputs = 1;

  /* Without this parameter a flag-only final response is dropped by Triton
   * and the end of the request is never seen (protocols.md §4.2). */
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
    b.req.parameters = &pep;
    b.req.n_parameters = 1;
  }

  size_t len = inference__model_infer_request__get_packed_size(&b.req);
  int rv = len > UINT32_MAX ? TP_ETOOBIG : tp_buf_reserve(out, TP_GRPC_PREFIX_BYTES + len);
  if (rv == 0) {
    tp_grpc_put_prefix(out->data + out->len, (uint32_t)len);
    inference__model_infer_request__pack(&b.req, out->data + out->len + TP_GRPC_PREFIX_BYTES);
    out->len += TP_GRPC_PREFIX_BYTES + len;
    out->data[out->len] = 0;
  }
  free(text);
  free(sp);
  return rv;
}

/* Response decoding. */

static bool first_bytes_element(const ProtobufCBinaryData *raw, const uint8_t **p, size_t *n) {
  /* Walk the 4-byte prefix of element 0 instead of trusting the shape. */
  if (raw->len < 4) return false;
  uint32_t l = (uint32_t)raw->data[0] | (uint32_t)raw->data[1] << 8 |
               (uint32_t)raw->data[2] << 16 | (uint32_t)raw->data[3] << 24;
  if (l > raw->len - 4) return false;
  *p = raw->data + 4;
  *n = l;
  return true;
}

static int fill_from_infer_response(const Inference__ModelInferResponse *r, tp_triton_event *ev) {
  ev->id = r->id;
  for (size_t i = 0; i < r->n_parameters; i++) {
    const Inference__ModelInferResponse__ParametersEntry *e = r->parameters[i];
    if (e->key && strcmp(e->key, "triton_final_response") == 0 && e->value &&
        e->value->parameter_choice_case == INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM) {
      ev->has_final_param = true;
      ev->final = e->value->bool_param;
    }
  }
  for (size_t i = 0; i < r->n_outputs; i++) {
    const char *name = r->outputs[i]->name;
    if (!name) continue;
    const ProtobufCBinaryData *raw = i < r->n_raw_output_contents ? &r->raw_output_contents[i] : NULL;
    if (strcmp(name, "text_output") == 0) {
      if (raw && raw->len > 0) {
        if (!first_bytes_element(raw, &ev->text, &ev->text_len)) return TP_EPROTO;
      } else if (r->outputs[i]->contents && r->outputs[i]->contents->n_bytes_contents > 0) {
        /* Typed form: servers other than Triton may use it. */
        ev->text = r->outputs[i]->contents->bytes_contents[0].data;
        ev->text_len = r->outputs[i]->contents->bytes_contents[0].len;
      }
    } else if (strcmp(name, "num_output_tokens") == 0 && raw && raw->len >= 4) {
      ev->num_output_tokens = (int64_t)((uint32_t)raw->data[0] | (uint32_t)raw->data[1] << 8 |
                                        (uint32_t)raw->data[2] << 16 | (uint32_t)raw->data[3] << 24);
    }
  }
  return 0;
}

static int parse_response(tp_triton_resp *r, tp_triton_event *ev, const uint8_t *data, size_t len,
                          bool stream);

int tp_triton_parse_response(tp_triton_resp *r, tp_triton_event *ev,
                             const uint8_t *data, size_t len, bool stream) {
  int rv = parse_response(r, ev, data, len, stream);
  if (rv) {
    /* On error the event says nothing and nothing stays allocated. */
    tp_triton_resp_free(r);
    memset(ev, 0, sizeof(*ev));
    ev->num_output_tokens = -1;
  }
  return rv;
}

static int parse_response(tp_triton_resp *r, tp_triton_event *ev, const uint8_t *data, size_t len,
                          bool stream) {
  memset(ev, 0, sizeof(*ev));
  ev->num_output_tokens = -1;
  r->stream = stream;
  r->msg = NULL;
  if (stream) {
    Inference__ModelStreamInferResponse *m =
        inference__model_stream_infer_response__unpack(NULL, len, data);
    if (!m) return TP_EPROTO;
    r->msg = m;
    if (m->error_message && m->error_message[0]) ev->error = m->error_message;
    if (m->infer_response) {
      int rv = fill_from_infer_response(m->infer_response, ev);
      if (rv) return rv;
    }
    /* An error ends its request whether or not the backend marked it final. */
    if (ev->error) ev->final = true;
  } else {
    Inference__ModelInferResponse *m = inference__model_infer_response__unpack(NULL, len, data);
    if (!m) return TP_EPROTO;
    r->msg = m;
    int rv = fill_from_infer_response(m, ev);
    if (rv) return rv;
    ev->final = true; /* a unary answer is the whole answer */
  }
  return 0;
}

void tp_triton_resp_free(tp_triton_resp *r) {
  if (!r->msg) return;
  if (r->stream)
    inference__model_stream_infer_response__free_unpacked(r->msg, NULL);
  else
    inference__model_infer_response__free_unpacked(r->msg, NULL);
  r->msg = NULL;
}

/* Health and metadata. */

int tp_triton_build_model_request(tp_buf *out, const char *name, const char *version) {
  /* ModelReadyRequest and ModelMetadataRequest share one layout. */
  Inference__ModelReadyRequest m;
  inference__model_ready_request__init(&m);
  m.name = (char *)(name ? name : "");
  m.version = (char *)(version ? version : "");
  size_t len = inference__model_ready_request__get_packed_size(&m);
  int rv = tp_buf_reserve(out, TP_GRPC_PREFIX_BYTES + len);
  if (rv) return rv;
  tp_grpc_put_prefix(out->data + out->len, (uint32_t)len);
  inference__model_ready_request__pack(&m, out->data + out->len + TP_GRPC_PREFIX_BYTES);
  out->len += TP_GRPC_PREFIX_BYTES + len;
  return 0;
}

int tp_triton_parse_bool_response(const uint8_t *data, size_t len, bool *value) {
  /* ServerLive/ServerReady/ModelReady responses: one bool, field 1. */
  Inference__ServerLiveResponse *m = inference__server_live_response__unpack(NULL, len, data);
  if (!m) return TP_EPROTO;
  *value = m->live;
  inference__server_live_response__free_unpacked(m, NULL);
  return 0;
}

static void copy_meta(tp_triton_tensor_meta *dst, const Inference__ModelMetadataResponse__TensorMetadata *src) {
  memset(dst, 0, sizeof(*dst));
  snprintf(dst->name, sizeof(dst->name), "%s", src->name ? src->name : "");
  snprintf(dst->datatype, sizeof(dst->datatype), "%s", src->datatype ? src->datatype : "");
  dst->n_dims = (int)TP_MIN(src->n_shape, TP_ARRAY_LEN(dst->dims));
  for (int i = 0; i < dst->n_dims; i++) dst->dims[i] = src->shape[i];
}

int tp_triton_parse_model_metadata(const uint8_t *data, size_t len, tp_triton_model_meta *m) {
  Inference__ModelMetadataResponse *r = inference__model_metadata_response__unpack(NULL, len, data);
  if (!r) return TP_EPROTO;
  memset(m, 0, sizeof(*m));
  snprintf(m->platform, sizeof(m->platform), "%s", r->platform ? r->platform : "");
  m->n_inputs = TP_MIN(r->n_inputs, TP_ARRAY_LEN(m->inputs));
  for (size_t i = 0; i < m->n_inputs; i++) copy_meta(&m->inputs[i], r->inputs[i]);
  m->n_outputs = TP_MIN(r->n_outputs, TP_ARRAY_LEN(m->outputs));
  for (size_t i = 0; i < m->n_outputs; i++) copy_meta(&m->outputs[i], r->outputs[i]);
  inference__model_metadata_response__free_unpacked(r, NULL);
  return 0;
}

static const tp_triton_tensor_meta *find_input(const tp_triton_model_meta *m, const char *name) {
  for (size_t i = 0; i < m->n_inputs; i++)
    if (strcmp(m->inputs[i].name, name) == 0) return &m->inputs[i];
  return NULL;
}

static void list_inputs(const tp_triton_model_meta *m, char *buf, size_t len) {
  size_t o = 0;
  buf[0] = 0;
  for (size_t i = 0; i < m->n_inputs && o + 1 < len; i++) {
    int n = snprintf(buf + o, len - o, "%s%s", i ? ", " : "", m->inputs[i].name);
    if (n < 0) break;
    o += (size_t)n;
  }
  if (m->n_inputs == 0) snprintf(buf, len, "none");
}

int tp_triton_check_metadata(const tp_triton_model_meta *m, tp_triton_opts *o,
                             char *err, size_t errlen) {
  char have[512];
  list_inputs(m, have, sizeof(have));
  const char *backend = o->backend == TP_BACKEND_TENSORRTLLM ? "tensorrtllm" : "vllm";
  const tp_triton_tensor_meta *text = find_input(m, "text_input");
  if (!text) {
    tp_seterr(err, errlen,
              "model '%s' has no input 'text_input' (it has: %s); tokperf drives text-in models "
              "such as the TensorRT-LLM ensemble or the vLLM backend",
              o->model, have);
    return TP_EUNSUPPORTED;
  }
  if (strcmp(text->datatype, "BYTES") != 0) {
    tp_seterr(err, errlen, "model '%s': input 'text_input' is %s, expected BYTES", o->model,
              text->datatype);
    return TP_EUNSUPPORTED;
  }
  /* A leading -1 on a multi-dimensional shape is the batch dimension. */
  o->batch_dim = text->n_dims >= 2 && text->dims[0] == -1;
  o->has_stream_input = find_input(m, "stream") != NULL;
  o->has_min_tokens = find_input(m, "min_tokens") != NULL;
  o->has_min_length = find_input(m, "min_length") != NULL;
  o->has_exclude_input = find_input(m, "exclude_input_in_output") != NULL;
  if (o->backend == TP_BACKEND_TENSORRTLLM && !find_input(m, "max_tokens")) {
    tp_seterr(err, errlen,
              "model '%s' has no input 'max_tokens' (it has: %s); with --backend %s the model must "
              "take TensorRT-LLM ensemble inputs (is it a vLLM model? try --backend vllm)",
              o->model, have, backend);
    return TP_EUNSUPPORTED;
  }
  if (o->backend == TP_BACKEND_VLLM && !find_input(m, "sampling_parameters") &&
      find_input(m, "max_tokens")) {
    tp_seterr(err, errlen,
              "model '%s' takes 'max_tokens' but no 'sampling_parameters' (it has: %s); it looks like "
              "a TensorRT-LLM model: try --backend tensorrtllm",
              o->model, have);
    return TP_EUNSUPPORTED;
  }
  if (o->streaming && !o->has_stream_input && o->backend == TP_BACKEND_TENSORRTLLM) {
    tp_seterr(err, errlen,
              "model '%s' has no input 'stream' (it has: %s), so it cannot stream tokens; "
              "use --no-streaming to measure it with unary ModelInfer",
              o->model, have);
    return TP_EUNSUPPORTED;
  }
  return 0;
}

/* Statistics. */

static uint64_t dur_count(const Inference__StatisticDuration *d) { return d ? d->count : 0; }
static uint64_t dur_ns(const Inference__StatisticDuration *d) { return d ? d->ns : 0; }

int tp_triton_parse_model_statistics(const uint8_t *data, size_t len, tp_triton_model_counters **out,
                                     size_t *n) {
  *out = NULL;
  *n = 0;
  Inference__ModelStatisticsResponse *r = inference__model_statistics_response__unpack(NULL, len, data);
  if (!r) return TP_EPROTO;
  tp_triton_model_counters *v = calloc(r->n_model_stats ? r->n_model_stats : 1, sizeof(*v));
  if (!v) {
    inference__model_statistics_response__free_unpacked(r, NULL);
    return TP_ENOMEM;
  }
  for (size_t i = 0; i < r->n_model_stats; i++) {
    const Inference__ModelStatistics *m = r->model_stats[i];
    tp_triton_model_counters *c = &v[i];
    snprintf(c->name, sizeof(c->name), "%s", m->name ? m->name : "");
    snprintf(c->version, sizeof(c->version), "%s", m->version ? m->version : "");
    c->inference_count = m->inference_count;
    c->execution_count = m->execution_count;
    const Inference__InferStatistics *s = m->inference_stats;
    if (s) {
      c->success_count = dur_count(s->success);
      c->success_ns = dur_ns(s->success);
      c->fail_count = dur_count(s->fail);
      c->fail_ns = dur_ns(s->fail);
      c->queue_ns = dur_ns(s->queue);
      c->compute_input_ns = dur_ns(s->compute_input);
      c->compute_infer_ns = dur_ns(s->compute_infer);
      c->compute_output_ns = dur_ns(s->compute_output);
      c->cache_hit_count = dur_count(s->cache_hit);
    }
  }
  *n = r->n_model_stats;
  *out = v;
  inference__model_statistics_response__free_unpacked(r, NULL);
  return 0;
}

/* The Triton adapter's health, metadata and statistics messages (no I/O). */
#include "tp_triton.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_service.pb-c.h"
#include "transport/tp_grpc.h"

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

/* What the mock reads out of a ModelInferRequest: the model, the prompt,
 * the streaming flags, the sampling parameters and the fault asked for.
 * Bytes in, a parsed request out: no I/O and no server state, so the
 * whole of it is open to table tests and the fuzzer. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "grpc_service.pb-c.h"
#include "mock/tp_mock_infer_parse.h"
#include "mock/tp_mock_internal.h"
#include "mock/tp_mock_json.h"
#include "util/tp_common.h"

static uint32_t get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

typedef struct tensor_ref {
  const Inference__ModelInferRequest__InferInputTensor *in;
  const ProtobufCBinaryData *raw; /* NULL when the data is typed */
} tensor_ref;

static int tensor_bytes(const tensor_ref *t, const uint8_t **p, size_t *len, char *err, size_t errlen) {
  if (strcmp(t->in->datatype, "BYTES") != 0) {
    tp_seterr(err, errlen, "input '%s' has datatype %s, expected BYTES", t->in->name, t->in->datatype);
    return TP_EINVAL;
  }
  if (!t->raw) {
    const Inference__InferTensorContents *c = t->in->contents;
    if (!c->n_bytes_contents) goto empty;
    *p = c->bytes_contents[0].data;
    *len = c->bytes_contents[0].len;
    return 0;
  }
  if (t->raw->len < 4) goto empty;
  uint32_t n = get_le32(t->raw->data);
  if (n > t->raw->len - 4) {
    tp_seterr(err, errlen, "input '%s': BYTES element of %u bytes overruns the %zu bytes given", t->in->name,
              n, t->raw->len);
    return TP_EINVAL;
  }
  *p = t->raw->data + 4;
  *len = n;
  return 0;
empty:
  tp_seterr(err, errlen, "input '%s' holds no element", t->in->name);
  return TP_EINVAL;
}

static int tensor_int(const tensor_ref *t, int64_t *v, char *err, size_t errlen) {
  const char *dt = t->in->datatype;
  const Inference__InferTensorContents *c = t->in->contents;
  /* An empty raw content unpacks with data NULL: whether the data is raw
   * goes by t->raw, never by r. */
  const uint8_t *r = t->raw ? t->raw->data : NULL;
  size_t rl = t->raw ? t->raw->len : 0;
  if (!strcmp(dt, "INT32") || !strcmp(dt, "INT16") || !strcmp(dt, "INT8")) {
    size_t w = dt[3] == '3' ? 4 : dt[3] == '1' ? 2 : 1;
    if (t->raw) {
      if (rl < w) goto empty;
      uint32_t u = w == 4 ? get_le32(r) : w == 2 ? (uint32_t)(r[0] | r[1] << 8) : r[0];
      *v = w == 4 ? (int32_t)u : w == 2 ? (int16_t)u : (int8_t)u;
    } else {
      if (!c->n_int_contents) goto empty;
      *v = c->int_contents[0];
    }
  } else if (!strcmp(dt, "UINT32") || !strcmp(dt, "UINT16") || !strcmp(dt, "UINT8")) {
    size_t w = dt[4] == '3' ? 4 : dt[4] == '1' ? 2 : 1;
    if (t->raw) {
      if (rl < w) goto empty;
      *v = w == 4 ? get_le32(r) : w == 2 ? (uint32_t)(r[0] | r[1] << 8) : r[0];
    } else {
      if (!c->n_uint_contents) goto empty;
      *v = c->uint_contents[0];
    }
  } else if (!strcmp(dt, "INT64") || !strcmp(dt, "UINT64")) {
    if (t->raw) {
      if (rl < 8) goto empty;
      *v = (int64_t)((uint64_t)get_le32(r) | (uint64_t)get_le32(r + 4) << 32);
    } else if (dt[0] == 'I') {
      if (!c->n_int64_contents) goto empty;
      *v = c->int64_contents[0];
    } else {
      if (!c->n_uint64_contents) goto empty;
      *v = (int64_t)c->uint64_contents[0];
    }
  } else {
    tp_seterr(err, errlen, "input '%s' has datatype %s, expected an integer type", t->in->name, dt);
    return TP_EINVAL;
  }
  return 0;
empty:
  tp_seterr(err, errlen, "input '%s' holds no element", t->in->name);
  return TP_EINVAL;
}

static int tensor_bool(const tensor_ref *t, bool *v, char *err, size_t errlen) {
  if (strcmp(t->in->datatype, "BOOL") != 0) {
    tp_seterr(err, errlen, "input '%s' has datatype %s, expected BOOL", t->in->name, t->in->datatype);
    return TP_EINVAL;
  }
  if (t->raw) {
    if (t->raw->len < 1) goto empty;
    *v = t->raw->data[0] != 0;
  } else {
    if (!t->in->contents->n_bool_contents) goto empty;
    *v = t->in->contents->bool_contents[0];
  }
  return 0;
empty:
  tp_seterr(err, errlen, "input '%s' holds no element", t->in->name);
  return TP_EINVAL;
}

static int parse_sampling(tp__mock_infer_req *a, const uint8_t *p, size_t len, char *err, size_t errlen) {
  json_error_t je;
  json_t *root = json_loadb((const char *)p, len, 0, &je);
  if (!root || !json_is_object(root)) {
    tp_seterr(err, errlen, "sampling_parameters is not a JSON object: %s", root ? "wrong type" : je.text);
    json_decref(root);
    return TP_EINVAL;
  }
  int64_t v;
  json_t *j;
  if ((j = json_object_get(root, "max_tokens")) && !json_is_null(j)) {
    if (!tp__mock_json_int(j, &v, false)) goto bad_max;
    a->sp.max_tokens = tp__mock_clamp_u32(v);
    a->have_max_tokens = true;
  }
  if ((j = json_object_get(root, "min_tokens")) && tp__mock_json_int(j, &v, false))
    a->sp.min_tokens = tp__mock_clamp_u32(v);
  if ((j = json_object_get(root, "ignore_eos"))) a->sp.ignore_eos = tp__mock_json_truthy(j);
  json_decref(root);
  return 0;
bad_max:
  tp_seterr(err, errlen, "sampling_parameters: max_tokens is not a number");
  json_decref(root);
  return TP_EINVAL;
}

static bool param_int(const Inference__InferParameter *p, int64_t *v) {
  switch (p->parameter_choice_case) {
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM: *v = p->int64_param; return true;
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_UINT64_PARAM:
      *v = p->uint64_param > INT64_MAX ? INT64_MAX : (int64_t)p->uint64_param;
      return true;
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_DOUBLE_PARAM:
      return tp__mock_real_int(p->double_param, v);
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM: {
      char *end;
      long long x = strtoll(p->string_param, &end, 10);
      if (end == p->string_param) return false;
      *v = x;
      return true;
    }
    default: return false;
  }
}

static bool param_bool(const Inference__InferParameter *p) {
  switch (p->parameter_choice_case) {
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM: return p->bool_param;
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM: return p->int64_param != 0;
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM:
      return strcmp(p->string_param, "true") == 0 || strcmp(p->string_param, "1") == 0;
    default: return false;
  }
}

/* The model named, in version 1 or none. */
static int find_model(const Inference__ModelInferRequest *q, tp__mock_infer_req *a, char *err,
                      size_t errlen) {
  a->model = tp__mock_find_model(q->model_name);
  if (!a->model) {
    tp_seterr(err, errlen, "Request for unknown model: '%s' is not found", q->model_name);
    return TP_ENOTFOUND;
  }
  if (q->model_version[0] && strcmp(q->model_version, "1") != 0) {
    tp_seterr(err, errlen, "Request for unknown model: '%s' version %s is not found", q->model_name,
              q->model_version);
    return TP_ENOTFOUND;
  }
  return 0;
}

/* Where input number i's data is: its typed contents, or the next of
 * raw_input_contents (Triton takes them in the order of the inputs that
 * have no contents). */
static int locate_input(const Inference__ModelInferRequest *q, const tp__mock_infer_req *a, size_t i,
                        size_t *raw_next, tensor_ref *t, char *err, size_t errlen) {
  const Inference__ModelInferRequest__InferInputTensor *in = q->inputs[i];
  if (!tp__mock_model_has_input(a->model, in->name)) {
    tp_seterr(err, errlen, "[request id: %s] unexpected inference input '%s' for model '%s'", q->id, in->name,
              a->model->name);
    return TP_EINVAL;
  }
  t->in = in;
  t->raw = NULL;
  if (!in->contents) {
    if (*raw_next >= q->n_raw_input_contents) {
      tp_seterr(err, errlen, "unable to find data for input tensor '%s' in request", in->name);
      return TP_EINVAL;
    }
    t->raw = &q->raw_input_contents[(*raw_next)++];
  } else if (q->n_raw_input_contents) {
    tp_seterr(err, errlen,
              "contents field must not be specified when using raw_input_contents for '%s' "
              "for model '%s'",
              in->name, a->model->name);
    return TP_EINVAL;
  }
  return 0;
}

/* Reads one input the mock uses; other declared inputs (sampling knobs,
 * stop words) are accepted and have no effect on it. */
static int read_input(tp__mock_infer_req *a, const tensor_ref *t, bool *have_sampling, char *err,
                      size_t errlen) {
  const char *nm = t->in->name;
  int64_t v;
  int rv = 0;
  /* The tutorial's model spells the same inputs in upper case. */
  if (!strcmp(nm, "PROMPT"))
    nm = "text_input";
  else if (!strcmp(nm, "STREAM"))
    nm = "stream";
  else if (!strcmp(nm, "SAMPLING_PARAMETERS"))
    nm = "sampling_parameters";
  if (!strcmp(nm, "text_input")) {
    rv = tensor_bytes(t, &a->prompt, &a->prompt_len, err, errlen);
    a->have_prompt = rv == 0;
  } else if (!strcmp(nm, "stream")) {
    rv = tensor_bool(t, &a->stream, err, errlen);
  } else if (!strcmp(nm, "exclude_input_in_output")) {
    rv = tensor_bool(t, &a->exclude_input, err, errlen);
    a->exclude_input_set = rv == 0;
  } else if (!strcmp(nm, "return_num_output_tokens")) {
    rv = tensor_bool(t, &a->num_tokens, err, errlen);
  } else if (!strcmp(nm, "max_tokens")) {
    if ((rv = tensor_int(t, &v, err, errlen)) == 0) {
      a->sp.max_tokens = tp__mock_clamp_u32(v);
      a->have_max_tokens = true;
    }
  } else if (!strcmp(nm, "min_length")) {
    if ((rv = tensor_int(t, &v, err, errlen)) == 0) a->sp.min_tokens = tp__mock_clamp_u32(v);
  } else if (!strcmp(nm, "sampling_parameters")) {
    const uint8_t *p;
    size_t len;
    if ((rv = tensor_bytes(t, &p, &len, err, errlen)) == 0) {
      rv = parse_sampling(a, p, len, err, errlen);
      *have_sampling = true;
    }
  }
  return rv;
}

static int read_inputs(const Inference__ModelInferRequest *q, tp__mock_infer_req *a, bool *have_sampling,
                       char *err, size_t errlen) {
  size_t raw_next = 0;
  for (size_t i = 0; i < q->n_inputs; i++) {
    tensor_ref t;
    int rv = locate_input(q, a, i, &raw_next, &t, err, errlen);
    if (!rv) rv = read_input(a, &t, have_sampling, err, errlen);
    if (rv) return rv;
  }
  if (!a->have_prompt) {
    tp_seterr(err, errlen, "[request id: %s] input '%s' is required for model '%s'", q->id,
              a->model->inputs[0].name, a->model->name);
    return TP_EINVAL;
  }
  return 0;
}

/* tokperf_fault: per-request fault injection (tp_mock_faults.h has the
 * syntax). */
static int read_fault(const Inference__ModelInferRequest *q, const Inference__InferParameter *p,
                      tp__mock_infer_req *a, char *err, size_t errlen) {
  if (p->parameter_choice_case != INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM) {
    tp_seterr(err, errlen, "[request id: %s] parameter 'tokperf_fault' must be a string", q->id);
    return TP_EINVAL;
  }
  char ferr[400];
  if (tp_mock_fault_parse(p->string_param, strlen(p->string_param), &a->fault, ferr, sizeof(ferr))) {
    tp_seterr(err, errlen, "[request id: %s] parameter 'tokperf_fault': %s", q->id, ferr);
    return TP_EINVAL;
  }
  a->have_fault = true;
  return 0;
}

static int read_parameters(const Inference__ModelInferRequest *q, tp__mock_infer_req *a, bool have_sampling,
                           char *err, size_t errlen) {
  for (size_t i = 0; i < q->n_parameters; i++) {
    const char *k = q->parameters[i]->key;
    const Inference__InferParameter *p = q->parameters[i]->value;
    int64_t v;
    if (!p) continue;
    if (!strcmp(k, "triton_enable_empty_final_response")) {
      a->empty_final = param_bool(p);
    } else if (!strcmp(k, "tokperf_fault")) {
      int rv = read_fault(q, p, a, err, errlen);
      if (rv) return rv;
    } else if (!strcmp(k, "tokperf_fault_after")) {
      if (!param_int(p, &v) || v < 0) {
        tp_seterr(err, errlen, "[request id: %s] parameter 'tokperf_fault_after' must be a count >= 0",
                  q->id);
        return TP_EINVAL;
      }
      a->fault_after = v;
    } else if (!a->model->ensemble && !have_sampling) {
      /* Without a sampling_parameters tensor the vLLM backend serializes
       * the request parameters instead (what HTTP generate produces). */
      if (!strcmp(k, "max_tokens") && param_int(p, &v)) {
        a->sp.max_tokens = tp__mock_clamp_u32(v);
        a->have_max_tokens = true;
      } else if (!strcmp(k, "min_tokens") && param_int(p, &v)) {
        a->sp.min_tokens = tp__mock_clamp_u32(v);
      } else if (!strcmp(k, "ignore_eos")) {
        a->sp.ignore_eos = param_bool(p);
      }
    }
  }
  return 0;
}

int tp__mock_infer_parse(const uint8_t *data, size_t len, tp__mock_infer_req *a, char *err, size_t errlen) {
  memset(a, 0, sizeof(*a));
  a->fault_after = -1;
  a->id = "";
  a->version = "";
  a->msg = inference__model_infer_request__unpack(NULL, len, data);
  if (!a->msg) {
    tp_seterr(err, errlen, "cannot parse ModelInferRequest");
    return TP_EPROTO;
  }
  const Inference__ModelInferRequest *q = a->msg;
  a->id = q->id;
  a->version = q->model_version;
  bool have_sampling = false;
  int rv = find_model(q, a, err, errlen);
  if (!rv) rv = read_inputs(q, a, &have_sampling, err, errlen);
  if (rv) return rv;
  if (a->model->ensemble && !a->have_max_tokens) {
    tp_seterr(err, errlen, "[request id: %s] input 'max_tokens' is required for model '%s'", q->id,
              a->model->name);
    return TP_EINVAL;
  }
  rv = read_parameters(q, a, have_sampling, err, errlen);
  if (rv) return rv;
  if (!a->model->ensemble && a->stream && a->exclude_input_set && !a->exclude_input) {
    tp_seterr(err, errlen, "When streaming, `exclude_input_in_output` = False is not allowed.");
    return TP_EINVAL;
  }
  a->sp.prompt = (const char *)a->prompt;
  a->sp.prompt_len = a->prompt_len;
  a->sp.prompt_tokens = tp_mock_count_words((const char *)a->prompt, a->prompt_len);
  return 0;
}

void tp__mock_infer_req_fini(tp__mock_infer_req *a) {
  if (a->msg) inference__model_infer_request__free_unpacked(a->msg, NULL);
  a->msg = NULL;
  a->id = "";
  a->version = "";
  a->prompt = NULL;
  a->prompt_len = 0;
  a->sp.prompt = NULL;
  a->sp.prompt_len = 0;
}

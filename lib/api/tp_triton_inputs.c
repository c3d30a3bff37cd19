/* Requests whose tensors an input file gives (perf_analyzer's input data):
 * each value encoded with the datatype the model's metadata declares.
 *
 * Choices made here:
 * - A value is a list (nested lists flattened row-major), {"content": [...],
 *   "shape": [...]}, or {"b64": "..."} (raw little-endian bytes, sent as
 *   they are).  The shape is the given one, else [number of elements];
 *   like perf_analyzer, a batching model's leading -1 gets a batch of 1
 *   put in front.
 * - JSON values must fit the datatype: integers in range for INTn/UINTn,
 *   true/false (or 0/1) for BOOL, numbers for FP32/FP64, strings for BYTES.
 *   FP16 and BF16 are taken as b64 only: rounding them here would send
 *   other values than the file says.
 * - Only "text_output" is asked for, as for tokperf's own requests: that is
 *   where the generated text is read. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "api/tp_triton.h"
#include "util/tp_base64.h"
#include "grpc_service.pb-c.h"
#include "transport/tp_grpc.h"

#define MAX_FILE_INPUTS 64
#define MAX_DIMS 8

static const tp_triton_tensor_meta *meta_input(const tp_triton_model_meta *m, const char *name) {
  for (size_t i = 0; i < m->n_inputs; i++)
    if (strcmp(m->inputs[i].name, name) == 0) return &m->inputs[i];
  return NULL;
}

static size_t elem_size(const char *dt) {
  static const struct {
    const char *name;
    size_t size;
  } t[] = {{"BOOL", 1}, {"INT8", 1},  {"UINT8", 1},  {"INT16", 2}, {"UINT16", 2}, {"FP16", 2}, {"BF16", 2},
           {"INT32", 4}, {"UINT32", 4}, {"FP32", 4}, {"INT64", 8}, {"UINT64", 8}, {"FP64", 8}};
  for (size_t i = 0; i < TP_ARRAY_LEN(t); i++)
    if (strcmp(dt, t[i].name) == 0) return t[i].size;
  return 0; /* BYTES, or unknown */
}

static int put_le(tp_buf *b, uint64_t v, size_t n) {
  uint8_t x[8];
  for (size_t k = 0; k < n; k++) x[k] = (uint8_t)(v >> (8 * k));
  return tp_buf_append(b, x, n);
}

/* Appends the elements of a JSON list, depth first; counts them. */
static int flatten(const json_t *v, json_t **items, size_t cap, size_t *n, int depth) {
  if (depth > 32) return TP_EINVAL;
  if (!json_is_array(v)) {
    if (*n == cap) return TP_ETOOBIG;
    items[(*n)++] = (json_t *)v;
    return 0;
  }
  size_t i;
  json_t *e;
  json_array_foreach(v, i, e) {
    int rv = flatten(e, items, cap, n, depth + 1);
    if (rv) return rv;
  }
  return 0;
}

/* Encodes one JSON element as datatype dt.  Returns 0, 1 (does not fit) or
 * TP_ENOMEM. */
static int encode_elem(tp_buf *b, const char *dt, const json_t *e) {
  if (strcmp(dt, "BYTES") == 0) {
    if (!json_is_string(e)) return 1;
    size_t n = json_string_length(e);
    if (n > UINT32_MAX) return 1;
    return put_le(b, n, 4) || tp_buf_append(b, json_string_value(e), n) ? TP_ENOMEM : 0;
  }
  if (strcmp(dt, "BOOL") == 0) {
    int64_t v = json_is_boolean(e) ? json_is_true(e) : json_is_integer(e) ? json_integer_value(e) : -1;
    if (v != 0 && v != 1) return 1;
    return put_le(b, (uint64_t)v, 1) ? TP_ENOMEM : 0;
  }
  if (strcmp(dt, "FP32") == 0 || strcmp(dt, "FP64") == 0) {
    if (!json_is_number(e)) return 1;
    double d = json_number_value(e);
    if (dt[2] == '3') {
      float f = (float)d;
      uint32_t u;
      memcpy(&u, &f, 4);
      return put_le(b, u, 4) ? TP_ENOMEM : 0;
    }
    uint64_t u;
    memcpy(&u, &d, 8);
    return put_le(b, u, 8) ? TP_ENOMEM : 0;
  }
  size_t size = elem_size(dt);
  if (!size || dt[0] == 'F' || dt[0] == 'B' || !json_is_integer(e)) return 1; /* FP16, BF16: b64 only */
  int64_t v = json_integer_value(e);
  int bits = (int)size * 8;
  if (dt[0] == 'U') {
    if (v < 0 || (bits < 64 && (uint64_t)v >> bits)) return 1;
  } else if (bits < 64) {
    int64_t lim = (int64_t)1 << (bits - 1);
    if (v < -lim || v >= lim) return 1;
  }
  return put_le(b, (uint64_t)v, size) ? TP_ENOMEM : 0;
}

/* Elements in a raw BYTES tensor, or SIZE_MAX when the lengths do not add up. */
static size_t count_bytes_elems(const uint8_t *p, size_t n) {
  size_t count = 0, o = 0;
  while (o < n) {
    if (n - o < 4) return SIZE_MAX;
    size_t len = (size_t)p[o] | (size_t)p[o + 1] << 8 | (size_t)p[o + 2] << 16 | (size_t)p[o + 3] << 24;
    if (len > n - o - 4) return SIZE_MAX;
    o += 4 + len;
    count++;
  }
  return count;
}



typedef struct file_tensor {
  Inference__ModelInferRequest__InferInputTensor t;
  int64_t shape[MAX_DIMS + 1];
  tp_buf raw;
} file_tensor;

/* One input: its raw contents and shape.  Returns 0, TP_EINVAL with the
 * message, or TP_ENOMEM. */
/* Reads "shape" into dims; false when it is not a list of at most
 * MAX_DIMS non-negative integers. */
static bool read_shape(const json_t *shape, int64_t *dims, size_t *n_dims) {
  size_t i;
  json_t *d;
  if (!json_is_array(shape) || json_array_size(shape) > MAX_DIMS) return false;
  json_array_foreach(shape, i, d) {
    if (!json_is_integer(d) || json_integer_value(d) < 0) return false;
    dims[(*n_dims)++] = json_integer_value(d);
  }
  return true;
}

/* {"b64": "..."}: the tensor's raw bytes as they are. */
static int encode_b64(file_tensor *ft, const char *dt, const char *name, const json_t *b64, size_t *count,
                      char *err, size_t errlen) {
  unsigned char *raw;
  size_t len;
  int rv = tp_base64_decode(json_string_value(b64), json_string_length(b64), &raw, &len);
  if (rv == TP_ENOMEM) return rv;
  if (rv) {
    tp_seterr(err, errlen, "input \"%s\": \"b64\" is not valid base64", name);
    return TP_EINVAL;
  }
  rv = tp_buf_append(&ft->raw, raw, len) ? TP_ENOMEM : 0;
  free(raw);
  if (rv) return rv;
  size_t size = elem_size(dt);
  *count = size ? (len % size ? SIZE_MAX : len / size) : strcmp(dt, "BYTES") == 0 ? count_bytes_elems(ft->raw.data, len)
                                                                                   : SIZE_MAX;
  if (*count == SIZE_MAX) {
    tp_seterr(err, errlen, "input \"%s\": \"b64\" holds %zu bytes, not whole %s elements", name, len, dt);
    return TP_EINVAL;
  }
  return 0;
}

/* A (nested) list of values, each encoded as the model's datatype. */
static int encode_list(file_tensor *ft, const char *dt, const char *name, const json_t *content, size_t *count,
                       char *err, size_t errlen) {
  json_t *items[4096];
  *count = 0;
  int rv = json_is_array(content) ? flatten(content, items, TP_ARRAY_LEN(items), count, 0) : TP_EINVAL;
  if (rv) {
    tp_seterr(err, errlen, "input \"%s\": expected a list of values (at most %zu), {\"content\": [...], "
              "\"shape\": [...]} or {\"b64\": \"...\"}",
              name, TP_ARRAY_LEN(items));
    return TP_EINVAL;
  }
  for (size_t i = 0; i < *count; i++) {
    rv = encode_elem(&ft->raw, dt, items[i]);
    if (rv == TP_ENOMEM) return rv;
    if (rv) {
      tp_seterr(err, errlen, "input \"%s\": element %zu does not fit the model's datatype %s%s", name, i, dt,
                strcmp(dt, "FP16") == 0 || strcmp(dt, "BF16") == 0 ? " (give FP16/BF16 values as \"b64\")" : "");
      return TP_EINVAL;
    }
  }
  return 0;
}

static int encode_input(file_tensor *ft, const tp_triton_tensor_meta *mi, const char *name, const json_t *v,
                        char *err, size_t errlen) {
  const char *dt = mi->datatype;
  const json_t *content = v, *shape = NULL, *b64 = NULL;
  if (json_is_object(v)) {
    content = json_object_get(v, "content");
    shape = json_object_get(v, "shape");
    b64 = json_object_get(v, "b64");
  }
  size_t n_dims = 0;
  int64_t dims[MAX_DIMS];
  if (shape && !read_shape(shape, dims, &n_dims)) {
    tp_seterr(err, errlen, "input \"%s\": \"shape\" must be a list of at most %d non-negative integers", name,
              MAX_DIMS);
    return TP_EINVAL;
  }
  size_t count;
  int rv = json_is_string(b64) && !content ? encode_b64(ft, dt, name, b64, &count, err, errlen)
                                           : encode_list(ft, dt, name, content, &count, err, errlen);
  if (rv) return rv;
  if (!shape) dims[n_dims++] = (int64_t)count;
  uint64_t product = 1;
  for (size_t i = 0; i < n_dims; i++) {
    uint64_t d = (uint64_t)dims[i];
    product = d && product > UINT64_MAX / d ? UINT64_MAX : product * d; /* no wrap to a false match */
  }
  if (product != count) {
    tp_seterr(err, errlen, "input \"%s\": the shape holds %llu elements but %zu are given", name,
              (unsigned long long)product, count);
    return TP_EINVAL;
  }
  /* A batching model declares a leading -1 that the file leaves out. */
  size_t k = 0;
  if ((size_t)mi->n_dims == n_dims + 1 && mi->dims[0] == -1) ft->shape[k++] = 1;
  for (size_t i = 0; i < n_dims; i++) ft->shape[k++] = dims[i];
  inference__model_infer_request__infer_input_tensor__init(&ft->t);
  ft->t.name = (char *)mi->name;
  ft->t.datatype = (char *)mi->datatype;
  ft->t.shape = ft->shape;
  ft->t.n_shape = k;
  return 0;
}

int tp_triton_build_infer_inputs(tp_buf *out, const tp_triton_opts *o, const tp_triton_model_meta *m,
                                 const char *id, const char *inputs_json, char *err, size_t errlen) {
  json_t *root = json_loads(inputs_json, 0, NULL);
  if (!json_is_object(root) || json_object_size(root) == 0 || json_object_size(root) > MAX_FILE_INPUTS) {
    json_decref(root);
    tp_seterr(err, errlen, "expected an object of 1 to %d inputs", MAX_FILE_INPUTS);
    return TP_EINVAL;
  }
  file_tensor *fts = calloc(json_object_size(root), sizeof(*fts));
  Inference__ModelInferRequest__InferInputTensor *ptrs[MAX_FILE_INPUTS];
  ProtobufCBinaryData raws[MAX_FILE_INPUTS];
  if (!fts) {
    json_decref(root);
    return TP_ENOMEM;
  }
  size_t n = 0;
  int rv = 0;
  const char *key;
  json_t *v;
  json_object_foreach(root, key, v) {
    const tp_triton_tensor_meta *mi = meta_input(m, key);
    if (!mi) {
      tp_seterr(err, errlen, "input \"%s\": model '%s' has no such input", key, o->model);
      rv = TP_EINVAL;
      break;
    }
    tp_buf_init(&fts[n].raw);
    rv = encode_input(&fts[n], mi, key, v, err, errlen);
    n++;
    if (rv) break;
    ptrs[n - 1] = &fts[n - 1].t;
    raws[n - 1].data = fts[n - 1].raw.data ? fts[n - 1].raw.data : (uint8_t *)"";
    raws[n - 1].len = fts[n - 1].raw.len;
  }
  if (rv == 0) {
    Inference__ModelInferRequest req;
    inference__model_infer_request__init(&req);
    req.model_name = (char *)o->model;
    req.model_version = (char *)(o->version ? o->version : "");
    req.id = (char *)id;
    req.inputs = ptrs;
    req.n_inputs = n;
    req.raw_input_contents = raws;
    req.n_raw_input_contents = n;
    /* The requested output and the streaming parameter, as for
     * tokperf's own requests. */
    rv = tp__triton_pack_request(out, &req, o);
    if (rv) tp_seterr(err, errlen, "the request is too large");
  }
  for (size_t i = 0; i < n; i++) tp_buf_fini(&fts[i].raw);
  free(fts);
  json_decref(root);
  /* Input names are quoted: keep a file's control bytes off the terminal. */
  for (char *c = err; rv && rv != TP_ENOMEM && *c; c++)
    if ((unsigned char)*c < 0x20 || *c == 0x7f) *c = '?';
  return rv;
}

int tp_triton_check_file_metadata(const tp_triton_model_meta *m, tp_triton_opts *o, char *err, size_t errlen) {
  for (size_t i = 0; i < m->n_outputs; i++) {
    bool tutorial = strcmp(m->outputs[i].name, "TEXT") == 0;
    if (strcmp(m->outputs[i].name, "text_output") == 0 || tutorial) {
      /* vLLM's quick-deploy tutorial model answers on TEXT with the prompt
       * and all the text so far in every response; the client turns that
       * back into new text per response. */
      o->text_output = tutorial ? "TEXT" : "text_output";
      o->echo = tutorial;
      const tp_triton_tensor_meta *s = meta_input(m, tutorial ? "STREAM" : "stream");
      o->has_stream_input = s != NULL;
      return 0;
    }
  }
  tp_seterr(err, errlen, "model '%s' has no output 'text_output' (or 'TEXT'), where tokperf reads the generated text",
            o->model);
  return TP_EUNSUPPORTED;
}

/* Fuzz target: perf_analyzer's input data (lib/dataset/tp_dataset_formats.c)
 * and the detection of a file's form, from memory.
 *
 * The input is a whole input file.  Checked besides "no crash, no leak":
 * - the detecting loader returns 0, TP_EINVAL or TP_ENOMEM; a loaded data
 *   set is well formed (fuzz_inputs_common.h); an error names the file and
 *   holds no control bytes;
 * - when the input is one JSON object, the perf_analyzer reader called
 *   directly keeps the same contract, and agrees with the detecting
 *   loader whenever that one read the file as perf_analyzer's;
 * - the base64 decoder never writes more than 3 bytes per 4 characters;
 * - the Triton request built from an entry's tensors (and from the input
 *   itself taken as one entry), for a model with inputs of every kind of
 *   datatype, is either refused with TP_EINVAL / TP_ETOOBIG and a message,
 *   or a ModelInferRequest that protobuf-c reads back with one tensor and
 *   one raw content per input, whose shape holds as many elements as the
 *   raw bytes for fixed-size datatypes. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "api/tp_triton.h"
#include "dataset/tp_dataset_line.h"
#include "grpc_service.pb-c.h"
#include "fuzz_inputs_common.h"
#include "util/tp_base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static tp_triton_model_meta meta;

static void init_meta(void) {
  static const struct {
    const char *name, *dt;
    int n_dims;
  } in[] = {{"text_input", "BYTES", 2}, {"max_tokens", "INT32", 2}, {"stream", "BOOL", 2}, {"temperature", "FP32", 2},
            {"seed", "UINT64", 2},      {"i8", "INT8", 1},          {"half", "FP16", 2},   {"d", "FP64", 1},
            {"u16", "UINT16", 1},       {"PROMPT", "BYTES", 1}};
  if (meta.n_inputs) return;
  for (size_t i = 0; i < TP_ARRAY_LEN(in); i++) {
    tp_triton_tensor_meta *t = &meta.inputs[meta.n_inputs++];
    snprintf(t->name, sizeof(t->name), "%s", in[i].name);
    snprintf(t->datatype, sizeof(t->datatype), "%s", in[i].dt);
    t->n_dims = in[i].n_dims;
    t->dims[0] = -1;
    t->dims[1] = 1;
  }
}

static size_t dt_size(const char *dt) {
  if (!strcmp(dt, "BYTES")) return 0;
  if (!strcmp(dt, "BOOL") || !strcmp(dt, "INT8")) return 1;
  if (!strcmp(dt, "FP16") || !strcmp(dt, "UINT16")) return 2;
  if (!strcmp(dt, "INT32") || !strcmp(dt, "FP32")) return 4;
  return 8;
}

static void check_build(const char *inputs) {
  tp_triton_opts o;
  memset(&o, 0, sizeof(o));
  o.model = "m";
  o.streaming = true;
  tp_buf b;
  tp_buf_init(&b);
  char err[256] = "";
  int rv = tp_triton_build_infer_inputs(&b, &o, &meta, "id", inputs, err, sizeof(err));
  if (rv == 0) {
    Inference__ModelInferRequest *m = inference__model_infer_request__unpack(NULL, b.len - 5, b.data + 5);
    if (!m || m->n_inputs == 0 || m->n_inputs != m->n_raw_input_contents) abort();
    for (size_t i = 0; i < m->n_inputs; i++) {
      size_t sz = dt_size(m->inputs[i]->datatype);
      uint64_t elems = 1;
      for (size_t d = 0; d < m->inputs[i]->n_shape; d++) elems *= (uint64_t)m->inputs[i]->shape[d];
      if (sz && elems * sz != m->raw_input_contents[i].len) abort();
    }
    inference__model_infer_request__free_unpacked(m, NULL);
  } else if (rv == TP_EINVAL || rv == TP_ETOOBIG) {
    if (!err[0]) abort();
    for (const char *c = err; *c; c++)
      if ((unsigned char)*c < 0x20) abort();
  } else if (rv != TP_ENOMEM) {
    abort();
  }
  tp_buf_fini(&b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  init_meta();
  const char *text = (const char *)data;
  char err[512] = "";
  tp_dataset any;
  int rv = tp__dataset_parse_any(&any, "fuzz", text, size, err, sizeof(err));
  if (rv != 0 && rv != TP_EINVAL && rv != TP_ENOMEM) abort();
  if (rv == 0) fuzz_check_dataset(&any);
  if (rv == TP_EINVAL) fuzz_check_err(err);

  json_t *root = json_loadb(text, size, 0, NULL);
  if (json_is_object(root)) {
    tp_dataset ds;
    memset(&ds, 0, sizeof(ds));
    ds.source = strdup("fuzz");
    char err2[512] = "";
    int rv2 = tp__dataset_perf_analyzer(&ds, "fuzz", root, err2, sizeof(err2));
    if (rv2 != 0 && rv2 != TP_EINVAL && rv2 != TP_ENOMEM) abort();
    if (rv2 == 0) fuzz_check_dataset(&ds);
    if (rv2 == TP_EINVAL) fuzz_check_err(err2);
    bool pa = json_is_array(json_object_get(root, "data"));
    if (pa && rv != TP_ENOMEM && rv2 != TP_ENOMEM) {
      if (rv != rv2) abort();
      if (rv == 0 && (ds.n != any.n || strcmp(any.format, "perf_analyzer") != 0)) abort();
      for (size_t i = 0; rv == 0 && i < ds.n; i++)
        if (strcmp(ds.items[i].text, any.items[i].text) != 0 || ds.items[i].max_tokens != any.items[i].max_tokens)
          abort();
    }
    tp_dataset_free(&ds);
  }
  json_decref(root);
  for (size_t i = 0; rv == 0 && i < any.n; i++)
    if (any.items[i].inputs) check_build(any.items[i].inputs);
  tp_dataset_free(&any);
  char *whole = malloc(size + 1);
  if (whole) {
    memcpy(whole, data, size);
    whole[size] = 0;
    check_build(whole);
    free(whole);
  }

  unsigned char *out;
  size_t n;
  if (tp_base64_decode(text, size, &out, &n) == 0) {
    if (n > size / 4 * 3 + 2) abort();
    free(out);
  }
  return 0;
}

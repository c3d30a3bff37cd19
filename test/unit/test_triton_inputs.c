/* Tests for requests built from an input file's tensors
 * (lib/api/tp_triton_inputs.c): each case is one entry of perf_analyzer's
 * input data, and the request must carry exactly these tensors (name,
 * datatype, shape, raw bytes) or give exactly this error. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/tp_triton.h"
#include "grpc_service.pb-c.h"
#include "tp_test.h"

static tp_triton_model_meta meta;

static void add(const char *name, const char *dt, int n_dims, int64_t d0, int64_t d1) {
  tp_triton_tensor_meta *t = &meta.inputs[meta.n_inputs++];
  snprintf(t->name, sizeof(t->name), "%s", name);
  snprintf(t->datatype, sizeof(t->datatype), "%s", dt);
  t->n_dims = n_dims;
  t->dims[0] = d0;
  t->dims[1] = d1;
}

/* One expected tensor: shape as text ("1,2") and raw bytes as hex. */
typedef struct want_tensor {
  const char *name, *datatype, *shape, *hex;
} want_tensor;

typedef struct good_case {
  const char *what, *inputs;
  size_t n;
  want_tensor t[4];
} good_case;

static const good_case goods[] = {
  {"TRT-LLM ensemble inputs, batch of 1 put in front",
   "{\"text_input\": [\"hi\"], \"max_tokens\": [258], \"stream\": [true], \"temperature\": [0.5]}",
   4,
   {{"text_input", "BYTES", "1,1", "020000006869"},
    {"max_tokens", "INT32", "1,1", "02010000"},
    {"stream", "BOOL", "1,1", "01"},
    {"temperature", "FP32", "1,1", "0000003f"}}},
  {"content with a shape, nested lists, two strings",
   "{\"bad_words\": {\"content\": [[\"a\", \"bc\"]], \"shape\": [2]}, \"seed\": [[7]]}", 2,
   {{"bad_words", "BYTES", "1,2", "01000000610200000062 63"}, {"seed", "UINT64", "1,1", "0700000000000000"}}},
  {"no batch dimension: the shape as given", "{\"i8\": [-2, 127], \"stream\": [0]}", 2,
   {{"i8", "INT8", "2", "fe7f"}, {"stream", "BOOL", "1,1", "00"}}},
  {"b64 raw bytes as they are, FP16 too", "{\"half\": {\"b64\": \"ADw=\"}, \"text_input\": {\"b64\": \"AQAAAHg=\"}}", 2,
   {{"half", "FP16", "1,1", "003c"}, {"text_input", "BYTES", "1,1", "0100000078"}}},
};

typedef struct bad_case {
  const char *what, *inputs, *err;
} bad_case;

static const bad_case bads[] = {
  {"an input the model lacks", "{\"text_input\": [\"a\"], \"PROMPT\": [\"b\"]}",
   "input \"PROMPT\": model 'ensemble' has no such input"},
  {"INT8 out of range", "{\"i8\": [128]}", "input \"i8\": element 0 does not fit the model's datatype INT8"},
  {"UINT64 negative", "{\"seed\": [-1]}", "input \"seed\": element 0 does not fit the model's datatype UINT64"},
  {"BOOL from a string", "{\"stream\": [\"yes\"]}",
   "input \"stream\": element 0 does not fit the model's datatype BOOL"},
  {"INT32 from a real", "{\"max_tokens\": [1.5]}",
   "input \"max_tokens\": element 0 does not fit the model's datatype INT32"},
  {"BYTES from a number", "{\"text_input\": [1]}",
   "input \"text_input\": element 0 does not fit the model's datatype BYTES"},
  {"FP16 from JSON numbers", "{\"half\": [1.0]}",
   "input \"half\": element 0 does not fit the model's datatype FP16 (give FP16/BF16 values as \"b64\")"},
  {"shape and content disagree", "{\"text_input\": {\"content\": [\"a\"], \"shape\": [2]}}",
   "input \"text_input\": the shape holds 2 elements but 1 are given"},
  {"bad shape", "{\"text_input\": {\"content\": [\"a\"], \"shape\": [\"1\"]}}",
   "input \"text_input\": \"shape\" must be a list of at most 8 non-negative integers"},
  {"bad base64", "{\"text_input\": {\"b64\": \"**\"}}", "input \"text_input\": \"b64\" is not valid base64"},
  {"b64 BYTES lengths past the end", "{\"text_input\": {\"b64\": \"BQAAAHg=\"}}",
   "input \"text_input\": \"b64\" holds 5 bytes, not whole BYTES elements"},
  {"b64 INT32 not whole", "{\"max_tokens\": {\"b64\": \"AQID\"}}",
   "input \"max_tokens\": \"b64\" holds 3 bytes, not whole INT32 elements"},
  {"a value of no form", "{\"text_input\": \"a\"}",
   "input \"text_input\": expected a list of values (at most 4096), {\"content\": [...], \"shape\": [...]} or "
   "{\"b64\": \"...\"}"},
  {"not an object", "[1]", "expected an object of 1 to 64 inputs"},
};

static void hex_of(const uint8_t *p, size_t n, char *out, size_t outlen) {
  size_t o = 0;
  out[0] = 0;
  for (size_t i = 0; i < n && o + 3 < outlen; i++) o += (size_t)snprintf(out + o, outlen - o, "%02x", p[i]);
}

static void strip_spaces(const char *in, char *out) {
  for (; *in; in++)
    if (*in != ' ') *out++ = *in;
  *out = 0;
}

static void test_goods(tp_triton_opts *o) {
  for (size_t i = 0; i < TP_ARRAY_LEN(goods); i++) {
    const good_case *c = &goods[i];
    tp_buf b;
    tp_buf_init(&b);
    char err[256] = "";
    int rv = tp_triton_build_infer_inputs(&b, o, &meta, "id7", c->inputs, err, sizeof(err));
    CHECK(rv == 0, "%s: builds (%s)", c->what, err);
    Inference__ModelInferRequest *m =
        rv == 0 ? inference__model_infer_request__unpack(NULL, b.len - 5, b.data + 5) : NULL;
    CHECK(m != NULL, "%s: a valid ModelInferRequest", c->what);
    if (m) {
      CHECK_STR(m->id, "id7", c->what);
      CHECK_STR(m->model_name, "ensemble", c->what);
      CHECK_INT(m->n_inputs, c->n, c->what);
      CHECK_INT(m->n_raw_input_contents, c->n, c->what);
      CHECK(m->n_outputs == 1 && strcmp(m->outputs[0]->name, "text_output") == 0, "%s: text_output asked for",
            c->what);
      CHECK_INT(m->n_parameters, 1, "streaming: the empty final response asked for");
      for (size_t k = 0; k < c->n && k < m->n_inputs; k++) {
        const Inference__ModelInferRequest__InferInputTensor *t = m->inputs[k];
        char shape[64] = "", hex[128], want_hex[128];
        size_t so = 0;
        for (size_t d = 0; d < t->n_shape; d++)
          so += (size_t)snprintf(shape + so, sizeof(shape) - so, "%s%lld", d ? "," : "", (long long)t->shape[d]);
        hex_of(m->raw_input_contents[k].data, m->raw_input_contents[k].len, hex, sizeof(hex));
        strip_spaces(c->t[k].hex, want_hex);
        CHECK_STR(t->name, c->t[k].name, c->what);
        CHECK_STR(t->datatype, c->t[k].datatype, c->what);
        CHECK_STR(shape, c->t[k].shape, c->what);
        CHECK_STR(hex, want_hex, c->what);
      }
      inference__model_infer_request__free_unpacked(m, NULL);
    }
    tp_buf_fini(&b);
  }
}

static void test_bads(tp_triton_opts *o) {
  for (size_t i = 0; i < TP_ARRAY_LEN(bads); i++) {
    tp_buf b;
    tp_buf_init(&b);
    char err[256] = "";
    CHECK_INT(tp_triton_build_infer_inputs(&b, o, &meta, "x", bads[i].inputs, err, sizeof(err)), TP_EINVAL,
              bads[i].what);
    CHECK_STR(err, bads[i].err, bads[i].what);
    tp_buf_fini(&b);
  }
}

static void test_metadata(tp_triton_opts *o) {
  char err[256] = "";
  meta.n_outputs = 0;
  CHECK_INT(tp_triton_check_file_metadata(&meta, o, err, sizeof(err)), TP_EUNSUPPORTED, "no text_output refused");
  CHECK_STR(err, "model 'ensemble' has no output 'text_output' (or 'TEXT'), where tokperf reads the generated text",
            "the message says why");
  snprintf(meta.outputs[0].name, sizeof(meta.outputs[0].name), "text_output");
  meta.n_outputs = 1;
  o->has_stream_input = false;
  CHECK_INT(tp_triton_check_file_metadata(&meta, o, err, sizeof(err)), 0, "text_output suffices");
  CHECK(o->has_stream_input, "the stream input is noted");
  CHECK(!o->echo && strcmp(o->text_output, "text_output") == 0, "text_output: new text per response");
  /* vLLM's quick-deploy tutorial model: TEXT, echoing prompt and text so far. */
  snprintf(meta.outputs[0].name, sizeof(meta.outputs[0].name), "TEXT");
  CHECK_INT(tp_triton_check_file_metadata(&meta, o, err, sizeof(err)), 0, "TEXT is read too");
  CHECK(o->echo && strcmp(o->text_output, "TEXT") == 0, "TEXT: the answer echoes the prompt and all text so far");
  snprintf(meta.outputs[0].name, sizeof(meta.outputs[0].name), "text_output");
}

int main(void) {
  add("text_input", "BYTES", 2, -1, 1);
  add("max_tokens", "INT32", 2, -1, 1);
  add("stream", "BOOL", 2, -1, 1);
  add("temperature", "FP32", 2, -1, 1);
  add("bad_words", "BYTES", 2, -1, -1);
  add("seed", "UINT64", 2, -1, 1);
  add("i8", "INT8", 1, -1, 0);
  add("half", "FP16", 2, -1, 1);
  tp_triton_opts o;
  memset(&o, 0, sizeof(o));
  o.model = "ensemble";
  o.streaming = true;
  test_goods(&o);
  test_bads(&o);
  test_metadata(&o);
  return tp_test_done();
}

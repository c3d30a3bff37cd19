/* Unit tests for the mock's ModelInferRequest parser
 * (mock/tp_mock_infer_parse.c): a table of requests, built with protobuf-c
 * and packed to bytes, in the layouts the TensorRT-LLM ensemble, the vLLM
 * backend and the vLLM tutorial model take, and each malformed case with
 * the error it must give; then every truncation of a good request. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_service.pb-c.h"
#include "mock/tp_mock_infer_parse.h"
#include "tp_test.h"

/* How an input carries its data. */
enum {
  RB = 1, /* raw: one BYTES element, the 4-byte little-endian length then s */
  RX,     /* raw: the len bytes of s as they are */
  RN,     /* no contents and no raw content of its own */
  TB,     /* typed: bytes_contents = {s} */
  TE,     /* typed: contents without any element */
  TBOOL,  /* typed: bool_contents = {i} */
  TI32,   /* typed: int_contents = {i} */
  TI64,   /* typed: int64_contents = {i} */
  TU32,   /* typed: uint_contents = {i} */
  TU64,   /* typed: uint64_contents = {i} */
};

/* How a parameter is given. */
enum { PS = 1, PI, PU, PD, PB, PNAN, PHUGE }; /* PD: i as a double; PNAN, PHUGE: NaN, 1e300 */

typedef struct tin {
  const char *name, *datatype;
  int how;
  const char *s;
  size_t len; /* RX */
  int64_t i;
} tin;

typedef struct tparam {
  const char *key;
  int how;
  const char *s;
  int64_t i;
} tparam;

typedef struct want {
  const char *model;
  const char *prompt;
  bool stream, exclude_input, exclude_set, num_tokens, empty_final, have_max_tokens;
  uint32_t max_tokens, min_tokens;
  bool ignore_eos;
  const char *fault; /* the fault kind's name, NULL = none asked for */
  int64_t fault_after;
  uint32_t prompt_tokens;
} want;

typedef struct infer_case {
  const char *name;
  const char *model, *version, *id;
  tin in[7];
  tparam par[4];
  int rv;          /* 0 or the error code */
  const char *err; /* the error text; a trailing '*' matches a prefix */
  want w;
} infer_case;

#define I32_ZERO "\x00\x00\x00\x00", 4, 0

static const infer_case cases[] = {
    /* ---- good requests ---------------------------------------------------------------------- */
    {"TensorRT-LLM ensemble, raw contents as tokperf sends them",
     "ensemble",
     "",
     "r1",
     {{"text_input", "BYTES", RB, "tell me a story", 0, 0},
      {"max_tokens", "INT32", RX, "\x40\x00\x00\x00", 4, 0},
      {"stream", "BOOL", RX, "\x01", 1, 0},
      {"end_id", "INT32", RX, "\x02\x00\x00\x00", 4, 0},
      {"temperature", "FP32", RX, "\x00\x00\x80\x3f", 4, 0}},
     {{"triton_enable_empty_final_response", PB, NULL, 1}},
     0,
     NULL,
     {"ensemble", "tell me a story", true, false, false, false, true, true, 64, 0, false, NULL, -1, 4}},
    {"ensemble: min_length, version 1, INT64 max_tokens",
     "ensemble",
     "1",
     "r2",
     {{"text_input", "BYTES", RB, "a b", 0, 0},
      {"max_tokens", "INT64", RX, "\x00\x00\x00\x00\x01\x00\x00\x00", 8, 0},
      {"min_length", "INT16", RX, "\x05\x00", 2, 0}},
     {{0}},
     0,
     NULL,
     {"ensemble", "a b", false, false, false, false, false, true, UINT32_MAX, 5, false, NULL, -1, 2}},
    {"ensemble: a negative max_tokens counts as 0",
     "ensemble",
     "",
     "r3",
     {{"text_input", "BYTES", RB, "x", 0, 0}, {"max_tokens", "INT8", RX, "\xff", 1, 0}},
     {{0}},
     0,
     NULL,
     {"ensemble", "x", false, false, false, false, false, true, 0, 0, false, NULL, -1, 1}},
    {"ensemble: typed contents",
     "ensemble",
     "",
     "r4",
     {{"text_input", "BYTES", TB, "typed prompt here", 0, 0},
      {"max_tokens", "UINT32", TU32, NULL, 0, 7},
      {"stream", "BOOL", TBOOL, NULL, 0, 1}},
     {{0}},
     0,
     NULL,
     {"ensemble", "typed prompt here", true, false, false, false, false, true, 7, 0, false, NULL, -1, 3}},
    {"vLLM backend: sampling_parameters as JSON",
     "vllm_model",
     "",
     "v1",
     {{"text_input", "BYTES", RB, "hello there", 0, 0},
      {"stream", "BOOL", RX, "\x01", 1, 0},
      {"sampling_parameters", "BYTES", RB,
       "{\"max_tokens\": \"32\", \"min_tokens\": 4, \"ignore_eos\": \"false\"}", 0, 0},
      {"exclude_input_in_output", "BOOL", RX, "\x01", 1, 0},
      {"return_num_output_tokens", "BOOL", RX, "\x01", 1, 0}},
     {{0}},
     0,
     NULL,
     {"vllm_model", "hello there", true, true, true, true, false, true, 32, 4, true, NULL, -1, 2}},
    {"vLLM backend: request parameters stand in for sampling_parameters",
     "vllm_model",
     "",
     "v2",
     {{"text_input", "BYTES", RB, "one two three", 0, 0}},
     {{"max_tokens", PS, "12", 0}, {"min_tokens", PU, NULL, 3}, {"ignore_eos", PS, "true", 0}},
     0,
     NULL,
     {"vllm_model", "one two three", false, false, false, false, false, true, 12, 3, true, NULL, -1, 3}},
    {"vLLM backend: sampling_parameters wins over request parameters",
     "vllm_model",
     "",
     "v3",
     {{"text_input", "BYTES", RB, "p", 0, 0},
      {"sampling_parameters", "BYTES", RB, "{\"max_tokens\": null}", 0, 0}},
     {{"max_tokens", PI, NULL, 99}},
     0,
     NULL,
     {"vllm_model", "p", false, false, false, false, false, false, 0, 0, false, NULL, -1, 1}},
    {"vLLM backend: not streaming, exclude_input_in_output false",
     "vllm_model",
     "",
     "v4",
     {{"text_input", "BYTES", TB, "q", 0, 0}, {"exclude_input_in_output", "BOOL", TBOOL, NULL, 0, 0}},
     {{0}},
     0,
     NULL,
     {"vllm_model", "q", false, false, true, false, false, false, 0, 0, false, NULL, -1, 1}},
    {"vLLM tutorial model: upper-case inputs",
     "vllm",
     "",
     "t1",
     {{"PROMPT", "BYTES", RB, "what is up", 0, 0},
      {"STREAM", "BOOL", RX, "\x01", 1, 0},
      {"SAMPLING_PARAMETERS", "BYTES", RB, "{\"max_tokens\": 20.7}", 0, 0}},
     {{0}},
     0,
     NULL,
     {"vllm", "what is up", true, false, false, false, false, true, 20, 0, false, NULL, -1, 3}},
    {"a fault asked for, with its token count",
     "vllm_model",
     "",
     "f1",
     {{"text_input", "BYTES", RB, "z", 0, 0}},
     {{"tokperf_fault", PS, "grpc_status:8:busy", 0}, {"tokperf_fault_after", PD, NULL, 3}},
     0,
     NULL,
     {"vllm_model", "z", false, false, false, false, false, false, 0, 0, false, "grpc_status", 3, 1}},
    {"an empty prompt element",
     "vllm_model",
     "",
     "e1",
     {{"text_input", "BYTES", RX, "\x00\x00\x00\x00", 4, 0}},
     {{0}},
     0,
     NULL,
     {"vllm_model", "", false, false, false, false, false, false, 0, 0, false, NULL, -1, 0}},

    {"huge numbers saturate: a double parameter, a JSON real",
     "vllm_model",
     "",
     "h1",
     {{"text_input", "BYTES", RB, "big", 0, 0}},
     {{"max_tokens", PHUGE, NULL, 0}, {"tokperf_fault_after", PHUGE, NULL, 0}},
     0,
     NULL,
     {"vllm_model", "big", false, false, false, false, false, true, UINT32_MAX, 0, false, NULL, INT64_MAX,
      1}},
    {"a JSON real below any int64",
     "vllm_model",
     "",
     "h2",
     {{"text_input", "BYTES", RB, "small", 0, 0},
      {"sampling_parameters", "BYTES", RB, "{\"max_tokens\": -1e300, \"min_tokens\": 1e300}", 0, 0}},
     {{0}},
     0,
     NULL,
     {"vllm_model", "small", false, false, false, false, false, true, 0, UINT32_MAX, false, NULL, -1, 1}},

    /* ---- refused -------------------------------------------------------------------------------- */
    {"unknown model",
     "nope",
     "",
     "x1",
     {{0}},
     {{0}},
     TP_ENOTFOUND,
     "Request for unknown model: 'nope' is not found",
     {0}},
    {"unknown version",
     "ensemble",
     "2",
     "x2",
     {{0}},
     {{0}},
     TP_ENOTFOUND,
     "Request for unknown model: 'ensemble' version 2 is not found",
     {0}},
    {"an input the model does not declare",
     "ensemble",
     "",
     "x3",
     {{"text_input", "BYTES", RB, "a", 0, 0}, {"foo", "BYTES", RB, "b", 0, 0}},
     {{0}},
     TP_EINVAL,
     "[request id: x3] unexpected inference input 'foo' for model 'ensemble'",
     {0}},
    {"an input without data",
     "vllm_model",
     "",
     "x4",
     {{"text_input", "BYTES", RN, NULL, 0, 0}},
     {{0}},
     TP_EINVAL,
     "unable to find data for input tensor 'text_input' in request",
     {0}},
    {"typed contents beside raw ones",
     "vllm_model",
     "",
     "x5",
     {{"text_input", "BYTES", RB, "a", 0, 0}, {"stream", "BOOL", TBOOL, NULL, 0, 1}},
     {{0}},
     TP_EINVAL,
     "contents field must not be specified when using raw_input_contents for 'stream' for model 'vllm_model'",
     {0}},
    {"text_input of another datatype",
     "vllm_model",
     "",
     "x6",
     {{"text_input", "INT32", RX, I32_ZERO}},
     {{0}},
     TP_EINVAL,
     "input 'text_input' has datatype INT32, expected BYTES",
     {0}},
    {"a BYTES length past the end",
     "vllm_model",
     "",
     "x7",
     {{"text_input", "BYTES", RX,
       "\x10\x00\x00\x00"
       "ab",
       6, 0}},
     {{0}},
     TP_EINVAL,
     "input 'text_input': BYTES element of 16 bytes overruns the 6 bytes given",
     {0}},
    {"raw BYTES shorter than a length",
     "vllm_model",
     "",
     "x8",
     {{"text_input", "BYTES", RX, "\x01\x00", 2, 0}},
     {{0}},
     TP_EINVAL,
     "input 'text_input' holds no element",
     {0}},
    {"typed BYTES without an element",
     "vllm_model",
     "",
     "x9",
     {{"text_input", "BYTES", TE, NULL, 0, 0}},
     {{0}},
     TP_EINVAL,
     "input 'text_input' holds no element",
     {0}},
    {"stream of another datatype",
     "vllm_model",
     "",
     "x10",
     {{"text_input", "BYTES", RB, "a", 0, 0}, {"stream", "INT32", RX, I32_ZERO}},
     {{0}},
     TP_EINVAL,
     "input 'stream' has datatype INT32, expected BOOL",
     {0}},
    {"an empty BOOL",
     "vllm_model",
     "",
     "x11",
     {{"text_input", "BYTES", RB, "a", 0, 0}, {"stream", "BOOL", RX, "", 0, 0}},
     {{0}},
     TP_EINVAL,
     "input 'stream' holds no element",
     {0}},
    {"max_tokens as a float",
     "ensemble",
     "",
     "x12",
     {{"text_input", "BYTES", RB, "a", 0, 0}, {"max_tokens", "FP32", RX, "\x00\x00\x80\x3f", 4, 0}},
     {{0}},
     TP_EINVAL,
     "input 'max_tokens' has datatype FP32, expected an integer type",
     {0}},
    {"an INT32 of two bytes",
     "ensemble",
     "",
     "x13",
     {{"text_input", "BYTES", RB, "a", 0, 0}, {"max_tokens", "INT32", RX, "\x01\x00", 2, 0}},
     {{0}},
     TP_EINVAL,
     "input 'max_tokens' holds no element",
     {0}},
    {"typed INT64 without an element",
     "ensemble",
     "",
     "x14",
     {{"text_input", "BYTES", TB, "a", 0, 0}, {"max_tokens", "INT64", TE, NULL, 0, 0}},
     {{0}},
     TP_EINVAL,
     "input 'max_tokens' holds no element",
     {0}},
    {"no prompt",
     "ensemble",
     "",
     "x15",
     {{"max_tokens", "INT32", TI32, NULL, 0, 5}},
     {{0}},
     TP_EINVAL,
     "[request id: x15] input 'text_input' is required for model 'ensemble'",
     {0}},
    {"no prompt for the tutorial model",
     "vllm",
     "",
     "x16",
     {{0}},
     {{0}},
     TP_EINVAL,
     "[request id: x16] input 'PROMPT' is required for model 'vllm'",
     {0}},
    {"the ensemble without max_tokens",
     "ensemble",
     "",
     "x17",
     {{"text_input", "BYTES", RB, "a", 0, 0}},
     {{0}},
     TP_EINVAL,
     "[request id: x17] input 'max_tokens' is required for model 'ensemble'",
     {0}},
    {"sampling_parameters not JSON",
     "vllm_model",
     "",
     "x18",
     {{"text_input", "BYTES", RB, "a", 0, 0}, {"sampling_parameters", "BYTES", RB, "{max", 0, 0}},
     {{0}},
     TP_EINVAL,
     "sampling_parameters is not a JSON object: *",
     {0}},
    {"sampling_parameters a list",
     "vllm_model",
     "",
     "x19",
     {{"text_input", "BYTES", RB, "a", 0, 0}, {"sampling_parameters", "BYTES", RB, "[1]", 0, 0}},
     {{0}},
     TP_EINVAL,
     "sampling_parameters is not a JSON object: wrong type",
     {0}},
    {"sampling_parameters max_tokens not a number",
     "vllm_model",
     "",
     "x20",
     {{"text_input", "BYTES", RB, "a", 0, 0},
      {"sampling_parameters", "BYTES", RB, "{\"max_tokens\": \"many\"}", 0, 0}},
     {{0}},
     TP_EINVAL,
     "sampling_parameters: max_tokens is not a number",
     {0}},
    {"tokperf_fault not a string",
     "vllm_model",
     "",
     "x21",
     {{"text_input", "BYTES", RB, "a", 0, 0}},
     {{"tokperf_fault", PI, NULL, 3}},
     TP_EINVAL,
     "[request id: x21] parameter 'tokperf_fault' must be a string",
     {0}},
    {"tokperf_fault of no kind",
     "vllm_model",
     "",
     "x22",
     {{"text_input", "BYTES", RB, "a", 0, 0}},
     {{"tokperf_fault", PS, "bogus", 0}},
     TP_EINVAL,
     "[request id: x22] parameter 'tokperf_fault': *",
     {0}},
    {"tokperf_fault_after below 0",
     "vllm_model",
     "",
     "x23",
     {{"text_input", "BYTES", RB, "a", 0, 0}},
     {{"tokperf_fault_after", PI, NULL, -1}},
     TP_EINVAL,
     "[request id: x23] parameter 'tokperf_fault_after' must be a count >= 0",
     {0}},
    {"tokperf_fault_after not a number",
     "vllm_model",
     "",
     "x24",
     {{"text_input", "BYTES", RB, "a", 0, 0}},
     {{"tokperf_fault_after", PS, "soon", 0}},
     TP_EINVAL,
     "[request id: x24] parameter 'tokperf_fault_after' must be a count >= 0",
     {0}},
    {"vLLM streaming with the prompt in the output",
     "vllm_model",
     "",
     "x25",
     {{"text_input", "BYTES", RB, "a", 0, 0},
      {"stream", "BOOL", RX, "\x01", 1, 0},
      {"exclude_input_in_output", "BOOL", RX, "\x00", 1, 0}},
     {{0}},
     TP_EINVAL,
     "When streaming, `exclude_input_in_output` = False is not allowed.",
     {0}},
    {"tokperf_fault_after NaN",
     "vllm_model",
     "",
     "x26",
     {{"text_input", "BYTES", RB, "a", 0, 0}},
     {{"tokperf_fault_after", PNAN, NULL, 0}},
     TP_EINVAL,
     "[request id: x26] parameter 'tokperf_fault_after' must be a count >= 0",
     {0}},
    {"an empty raw INT32",
     "ensemble",
     "",
     "x27",
     {{"text_input", "BYTES", RB, "a", 0, 0}, {"max_tokens", "INT32", RX, "", 0, 0}},
     {{0}},
     TP_EINVAL,
     "input 'max_tokens' holds no element",
     {0}},
};

/* ---- building requests ------------------------------------------------------------------------- */

typedef struct built {
  Inference__ModelInferRequest q;
  Inference__ModelInferRequest__InferInputTensor ins[7], *pins[7];
  Inference__InferTensorContents contents[7];
  ProtobufCBinaryData raw[7], bytes[7];
  uint8_t rawbuf[7][256];
  bool bools[7];
  int32_t i32[7];
  int64_t i64[7];
  uint32_t u32[7];
  uint64_t u64[7];
  Inference__ModelInferRequest__ParametersEntry pe[4], *ppe[4];
  Inference__InferParameter pv[4];
} built;

static void set_contents(built *b, size_t k, const tin *t) {
  Inference__InferTensorContents *c = &b->contents[k];
  inference__infer_tensor_contents__init(c);
  b->ins[k].contents = c;
  switch (t->how) {
    case TB:
      b->bytes[k].data = (uint8_t *)t->s;
      b->bytes[k].len = strlen(t->s);
      c->n_bytes_contents = 1;
      c->bytes_contents = &b->bytes[k];
      break;
    case TBOOL:
      b->bools[k] = t->i != 0;
      c->n_bool_contents = 1;
      c->bool_contents = (protobuf_c_boolean *)&b->bools[k];
      break;
    case TI32:
      b->i32[k] = (int32_t)t->i;
      c->n_int_contents = 1;
      c->int_contents = &b->i32[k];
      break;
    case TI64:
      b->i64[k] = t->i;
      c->n_int64_contents = 1;
      c->int64_contents = &b->i64[k];
      break;
    case TU32:
      b->u32[k] = (uint32_t)t->i;
      c->n_uint_contents = 1;
      c->uint_contents = &b->u32[k];
      break;
    case TU64:
      b->u64[k] = (uint64_t)t->i;
      c->n_uint64_contents = 1;
      c->uint64_contents = &b->u64[k];
      break;
    default: break; /* TE: no element */
  }
}

static void set_raw(built *b, size_t k, const tin *t) {
  ProtobufCBinaryData *r = &b->raw[b->q.n_raw_input_contents++];
  if (t->how == RB) {
    size_t n = strlen(t->s);
    b->rawbuf[k][0] = (uint8_t)n;
    b->rawbuf[k][1] = (uint8_t)(n >> 8);
    b->rawbuf[k][2] = b->rawbuf[k][3] = 0;
    memcpy(b->rawbuf[k] + 4, t->s, n);
    r->len = 4 + n;
  } else {
    memcpy(b->rawbuf[k], t->s, t->len);
    r->len = t->len;
  }
  r->data = b->rawbuf[k];
}

static void set_param(built *b, size_t k, const tparam *p) {
  Inference__InferParameter *v = &b->pv[k];
  inference__infer_parameter__init(v);
  switch (p->how) {
    case PS:
      v->parameter_choice_case = INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM;
      v->string_param = (char *)p->s;
      break;
    case PI:
      v->parameter_choice_case = INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM;
      v->int64_param = p->i;
      break;
    case PU:
      v->parameter_choice_case = INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_UINT64_PARAM;
      v->uint64_param = (uint64_t)p->i;
      break;
    case PD:
      v->parameter_choice_case = INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_DOUBLE_PARAM;
      v->double_param = (double)p->i;
      break;
    case PNAN:
    case PHUGE:
      v->parameter_choice_case = INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_DOUBLE_PARAM;
      v->double_param = p->how == PNAN ? nan("") : 1e300;
      break;
    default:
      v->parameter_choice_case = INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM;
      v->bool_param = p->i != 0;
      break;
  }
  inference__model_infer_request__parameters_entry__init(&b->pe[k]);
  b->pe[k].key = (char *)p->key;
  b->pe[k].value = v;
  b->ppe[k] = &b->pe[k];
}

/* The case's request, packed; free the result. */
static uint8_t *pack_case(const infer_case *c, size_t *len) {
  built *b = calloc(1, sizeof(*b));
  if (!b) return NULL;
  inference__model_infer_request__init(&b->q);
  b->q.model_name = (char *)c->model;
  b->q.model_version = (char *)c->version;
  b->q.id = (char *)c->id;
  b->q.raw_input_contents = b->raw;
  for (size_t k = 0; k < TP_ARRAY_LEN(c->in) && c->in[k].name; k++) {
    const tin *t = &c->in[k];
    inference__model_infer_request__infer_input_tensor__init(&b->ins[k]);
    b->ins[k].name = (char *)t->name;
    b->ins[k].datatype = (char *)t->datatype;
    if (t->how == RB || t->how == RX)
      set_raw(b, k, t);
    else if (t->how != RN)
      set_contents(b, k, t);
    b->pins[k] = &b->ins[k];
    b->q.n_inputs = k + 1;
  }
  b->q.inputs = b->pins;
  for (size_t k = 0; k < TP_ARRAY_LEN(c->par) && c->par[k].key; k++) {
    set_param(b, k, &c->par[k]);
    b->q.n_parameters = k + 1;
  }
  b->q.parameters = b->ppe;
  *len = protobuf_c_message_get_packed_size(&b->q.base);
  uint8_t *out = malloc(*len ? *len : 1);
  if (out) protobuf_c_message_pack(&b->q.base, out);
  free(b);
  return out;
}

/* ---- the table ----------------------------------------------------------------------------------- */

static bool err_matches(const char *got, const char *expected) {
  size_t n = strlen(expected);
  if (n && expected[n - 1] == '*') return strncmp(got, expected, n - 1) == 0 && strlen(got) > n - 1;
  return strcmp(got, expected) == 0;
}

static void check_good(const infer_case *c, const tp__mock_infer_req *a) {
  const want *w = &c->w;
  char what[300];
#define WHAT(field) (snprintf(what, sizeof(what), "%s: %s", c->name, field), what)
  CHECK_STR(a->model ? a->model->name : NULL, w->model, WHAT("model"));
  CHECK_STR(a->id, c->id, WHAT("id"));
  CHECK_STR(a->version, c->version, WHAT("version"));
  CHECK(a->have_prompt, "%s", WHAT("has a prompt"));
  CHECK_MEM(a->prompt, a->prompt_len, w->prompt, strlen(w->prompt), WHAT("prompt"));
  CHECK(a->sp.prompt == (const char *)a->prompt && a->sp.prompt_len == a->prompt_len, "%s",
        WHAT("the sequence's prompt is the prompt"));
  CHECK_INT(a->sp.prompt_tokens, w->prompt_tokens, WHAT("prompt words"));
  CHECK_INT(a->stream, w->stream, WHAT("stream"));
  CHECK_INT(a->exclude_input, w->exclude_input, WHAT("exclude_input_in_output"));
  CHECK_INT(a->exclude_input_set, w->exclude_set, WHAT("exclude_input_in_output given"));
  CHECK_INT(a->num_tokens, w->num_tokens, WHAT("return_num_output_tokens"));
  CHECK_INT(a->empty_final, w->empty_final, WHAT("empty final response"));
  CHECK_INT(a->have_max_tokens, w->have_max_tokens, WHAT("max_tokens given"));
  CHECK_INT(a->sp.max_tokens, w->max_tokens, WHAT("max_tokens"));
  CHECK_INT(a->sp.min_tokens, w->min_tokens, WHAT("min_tokens"));
  CHECK_INT(a->sp.ignore_eos, w->ignore_eos, WHAT("ignore_eos"));
  CHECK_INT(a->have_fault, w->fault != NULL, WHAT("fault asked for"));
  if (w->fault) CHECK_STR(tp_mock_fault_name(a->fault.kind), w->fault, WHAT("fault kind"));
  CHECK_INT(a->fault_after, w->fault_after, WHAT("fault after"));
#undef WHAT
}

static void test_table(void) {
  for (size_t i = 0; i < TP_ARRAY_LEN(cases); i++) {
    const infer_case *c = &cases[i];
    size_t len;
    uint8_t *bytes = pack_case(c, &len);
    if (!bytes) {
      CHECK(0, "%s: packed", c->name);
      continue;
    }
    tp__mock_infer_req a;
    char err[512] = "";
    int rv = tp__mock_infer_parse(bytes, len, &a, err, sizeof(err));
    CHECK_INT(rv, c->rv, c->name);
    if (c->rv == 0 && rv == 0) check_good(c, &a);
    if (c->rv != 0) {
      CHECK(err_matches(err, c->err), "%s: the error says \"%s\"", c->name, c->err);
      if (!err_matches(err, c->err)) printf("#   got \"%s\"\n", err);
      CHECK_STR(a.id, c->id, "id kept for the error answer");
    }
    tp__mock_infer_req_fini(&a);
    CHECK(a.msg == NULL && a.prompt == NULL && a.sp.prompt == NULL && strcmp(a.id, "") == 0,
          "%s: fini leaves nothing behind", c->name);
    free(bytes);
  }
}

/* Bytes that are no ModelInferRequest: INTERNAL, with no id. */
static void test_not_protobuf(void) {
  static const struct {
    const char *name;
    const char *bytes;
    size_t len;
  } bad[] = {
      {"a field of wire type 7", "\x0f", 1},
      {"a string longer than the message",
       "\x0a\x05"
       "ab",
       4},
      {"a varint without end", "\x08\xff\xff\xff", 4},
      {"a parameter that is not a message", "\x22\x03\xff\xff\xff", 5},
      {"an input that is not a message", "\x2a\x02\x0a\x09", 4},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(bad); i++) {
    tp__mock_infer_req a;
    char err[256] = "";
    int rv = tp__mock_infer_parse((const uint8_t *)bad[i].bytes, bad[i].len, &a, err, sizeof(err));
    CHECK_INT(rv, TP_EPROTO, bad[i].name);
    CHECK_STR(err, "cannot parse ModelInferRequest", "its message");
    CHECK(a.msg == NULL && strcmp(a.id, "") == 0, "%s: nothing kept", bad[i].name);
    tp__mock_infer_req_fini(&a);
  }
  /* An empty message unpacks: no model named. */
  tp__mock_infer_req a;
  char err[256] = "";
  int rv = tp__mock_infer_parse((const uint8_t *)"", 0, &a, err, sizeof(err));
  CHECK_INT(rv, TP_ENOTFOUND, "an empty message names no model");
  CHECK_STR(err, "Request for unknown model: '' is not found", "its message");
  tp__mock_infer_req_fini(&a);
}

/* Every prefix of a good request gives a defined answer (a known code, a
 * message with each error); only the whole request parses, since each cut
 * loses or breaks one of its tensors. */
static void test_truncations(void) {
  size_t len;
  uint8_t *bytes = pack_case(&cases[0], &len);
  if (!bytes) {
    CHECK(0, "packed");
    return;
  }
  size_t odd = 0, parsed = 0;
  bool whole_ok = false;
  for (size_t n = 0; n <= len; n++) {
    uint8_t *cut = malloc(n ? n : 1);
    if (!cut) break;
    memcpy(cut, bytes, n);
    tp__mock_infer_req a;
    char err[512] = "";
    int rv = tp__mock_infer_parse(cut, n, &a, err, sizeof(err));
    if (rv != 0 && rv != TP_EPROTO && rv != TP_ENOTFOUND && rv != TP_EINVAL) odd++;
    if (rv != 0 && err[0] == 0) odd++;
    if (rv == 0) parsed++;
    if (rv == 0 && n == len)
      whole_ok =
          a.prompt_len == strlen(cases[0].w.prompt) && memcmp(a.prompt, cases[0].w.prompt, a.prompt_len) == 0;
    tp__mock_infer_req_fini(&a);
    free(cut);
  }
  CHECK_INT(odd, 0, "prefixes: only defined codes, each error with a message");
  CHECK_INT(parsed, 1, "prefixes: only the whole request parses");
  CHECK(whole_ok, "prefixes: the whole request gives its prompt");
  free(bytes);
}

int main(void) {
  test_table();
  test_not_protobuf();
  test_truncations();
  return tp_test_done();
}

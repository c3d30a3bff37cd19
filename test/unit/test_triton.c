/* The Triton adapter against the byte-exact worked examples of the KServe v2
 * wire format (protocols.md §2.3, §3.1, §5.6), decoded by hand here rather
 * than by the code under test. */
#include <stdlib.h>
#include <string.h>

#include "api/tp_triton.h"
#include "grpc_service.pb-c.h"
#include "tp_test.h"
#include "transport/tp_grpc.h"

static size_t unhex(const char *hex, uint8_t *out) {
  size_t n = 0;
  while (*hex) {
    while (*hex == ' ') hex++;
    if (!*hex) break;
    unsigned v;
    sscanf(hex, "%2x", &v);
    out[n++] = (uint8_t)v;
    hex += 2;
  }
  return n;
}

/* ModelStreamInferResponse carrying " me" (protocols.md §2.3), unframed. */
static size_t example_me(uint8_t *out) {
  uint8_t *p = out;
  p += unhex("12 52 0a 0a", p);
  memcpy(p, "vllm_model", 10), p += 10;
  p += unhex("12 01 31 1a 02 72 31 22 1b 0a 15", p);
  memcpy(p, "triton_final_response", 21), p += 21;
  p += unhex("12 02 08 00 2a 17 0a 0b", p);
  memcpy(p, "text_output", 11), p += 11;
  p += unhex("12 05", p);
  memcpy(p, "BYTES", 5), p += 5;
  p += unhex("1a 01 01 32 07 03 00 00 00 20 6d 65", p);
  return (size_t)(p - out);
}

static void test_parse_examples(void) {
  uint8_t buf[256];
  size_t n = example_me(buf);
  CHECK_INT(n, 84, "worked example: 84 bytes unframed (89 framed)");
  tp_triton_resp r;
  tp_triton_event ev;
  CHECK_INT(tp_triton_parse_response(&r, &ev, buf, n, true), 0, "delta response parses");
  CHECK_STR(ev.id, "r1", "id echoed");
  CHECK_MEM(ev.text, ev.text_len, " me", 3, "text_output element 0 is \" me\"");
  CHECK(ev.has_final_param && !ev.final, "triton_final_response=false");
  CHECK(ev.error == NULL, "no error");
  CHECK_INT(ev.num_output_tokens, -1, "no server token count");
  tp_triton_resp_free(&r);

  /* Empty final response: 47 bytes. */
  uint8_t *p = buf;
  p += unhex("12 2d 0a 0a", p);
  memcpy(p, "vllm_model", 10), p += 10;
  p += unhex("1a 02 72 31 22 1b 0a 15", p);
  memcpy(p, "triton_final_response", 21), p += 21;
  p += unhex("12 02 08 01", p);
  n = (size_t)(p - buf);
  CHECK_INT(n, 47, "empty final: 47 bytes");
  CHECK_INT(tp_triton_parse_response(&r, &ev, buf, n, true), 0, "empty final parses");
  CHECK(ev.final && ev.has_final_param, "final flag set");
  CHECK(ev.text == NULL && ev.text_len == 0, "no text");
  tp_triton_resp_free(&r);

  /* In-band error: 12 bytes. */
  n = unhex("0a 04 62 6f 6f 6d 12 04 1a 02 72 31", buf);
  CHECK_INT(tp_triton_parse_response(&r, &ev, buf, n, true), 0, "in-band error parses");
  CHECK_STR(ev.error, "boom", "error_message");
  CHECK(ev.final, "an error ends its request");
  CHECK_STR(ev.id, "r1", "error carries the id");
  tp_triton_resp_free(&r);

  /* Truncated message: an error, and the event says nothing. */
  n = example_me(buf);
  CHECK_INT(tp_triton_parse_response(&r, &ev, buf, n - 3, true), TP_EPROTO, "truncated message rejected");
  CHECK(ev.text == NULL && ev.id == NULL && !ev.final && r.msg == NULL, "nothing left after an error");
  tp_triton_resp_free(&r);

  /* The element's length prefix claims more than there is. */
  n = example_me(buf);
  buf[n - 7] = 0x30;
  CHECK_INT(tp_triton_parse_response(&r, &ev, buf, n, true), TP_EPROTO, "overlong BYTES element rejected");
  tp_triton_resp_free(&r);
}

static const Inference__ModelInferRequest__InferInputTensor *input(const Inference__ModelInferRequest *m,
                                                                   const char *name, size_t *idx) {
  for (size_t i = 0; i < m->n_inputs; i++)
    if (strcmp(m->inputs[i]->name, name) == 0) {
      *idx = i;
      return m->inputs[i];
    }
  return NULL;
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void test_build_trtllm(void) {
  tp_triton_opts o = {0};
  o.model = "ensemble";
  o.version = "";
  o.backend = TP_BACKEND_TENSORRTLLM;
  o.streaming = true;
  o.batch_dim = true;
  o.has_stream_input = true;
  o.has_min_length = true;
  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_triton_build_infer(&b, &o, "c1-7", "Hello world", 11, 128, 128), 0, "ensemble request built");
  uint32_t len = (uint32_t)b.data[1] << 24 | (uint32_t)b.data[2] << 16 | (uint32_t)b.data[3] << 8 | b.data[4];
  CHECK(b.data[0] == 0 && len + 5 == b.len, "gRPC prefix: uncompressed, big-endian length of the rest");
  Inference__ModelInferRequest *m = inference__model_infer_request__unpack(NULL, len, b.data + 5);
  CHECK(m != NULL, "the request is a valid ModelInferRequest");
  if (!m) return;
  CHECK_STR(m->model_name, "ensemble", "model_name");
  CHECK_STR(m->id, "c1-7", "id");
  CHECK_INT(m->n_raw_input_contents, m->n_inputs, "one raw entry per input");
  size_t i;
  const Inference__ModelInferRequest__InferInputTensor *t = input(m, "text_input", &i);
  CHECK(t && strcmp(t->datatype, "BYTES") == 0 && t->n_shape == 2 && t->shape[0] == 1 && t->shape[1] == 1,
        "text_input BYTES [1,1] (batching model)");
  if (t) {
    const ProtobufCBinaryData *raw = &m->raw_input_contents[i];
    CHECK(raw->len == 15 && le32(raw->data) == 11 && memcmp(raw->data + 4, "Hello world", 11) == 0,
          "text_input raw: 0b 00 00 00 + \"Hello world\" (little-endian length)");
  }
  t = input(m, "max_tokens", &i);
  CHECK(t && strcmp(t->datatype, "INT32") == 0 && m->raw_input_contents[i].len == 4 &&
            le32(m->raw_input_contents[i].data) == 128,
        "max_tokens INT32 80 00 00 00");
  t = input(m, "min_length", &i);
  CHECK(t && le32(m->raw_input_contents[i].data) == 128, "deterministic length through min_length");
  t = input(m, "stream", &i);
  CHECK(t && strcmp(t->datatype, "BOOL") == 0 && m->raw_input_contents[i].len == 1 &&
            m->raw_input_contents[i].data[0] == 1,
        "stream BOOL 01");
  CHECK(input(m, "exclude_input_in_output", &i) == NULL, "no exclude_input_in_output unless the model has it");
  CHECK(m->n_outputs == 1 && strcmp(m->outputs[0]->name, "text_output") == 0, "requests text_output only");
  CHECK(m->n_parameters == 1 && strcmp(m->parameters[0]->key, "triton_enable_empty_final_response") == 0 &&
            m->parameters[0]->value->parameter_choice_case ==
                INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM &&
            m->parameters[0]->value->bool_param,
        "triton_enable_empty_final_response = true");
  inference__model_infer_request__free_unpacked(m, NULL);
  tp_buf_fini(&b);
}

static void test_build_vllm(void) {
  tp_triton_opts o = {0};
  o.model = "vllm_model";
  o.backend = TP_BACKEND_VLLM;
  o.streaming = true;
  o.batch_dim = false;
  o.has_stream_input = true;
  o.has_exclude_input = true;
  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_triton_build_infer(&b, &o, "r1", "Hi", 2, 64, 64), 0, "vLLM request built");
  Inference__ModelInferRequest *m = inference__model_infer_request__unpack(NULL, b.len - 5, b.data + 5);
  CHECK(m != NULL, "valid message");
  if (!m) return;
  size_t i;
  const Inference__ModelInferRequest__InferInputTensor *t = input(m, "text_input", &i);
  CHECK(t && t->n_shape == 1 && t->shape[0] == 1, "text_input shape [1] (no batch dimension)");
  CHECK(t && m->raw_input_contents[i].len == 6 && memcmp(m->raw_input_contents[i].data, "\x02\0\0\0Hi", 6) == 0,
        "text_input raw 02 00 00 00 48 69");
  t = input(m, "sampling_parameters", &i);
  if (t) {
    const ProtobufCBinaryData *raw = &m->raw_input_contents[i];
    char json[200];
    snprintf(json, sizeof(json), "%.*s", (int)(raw->len - 4), (const char *)raw->data + 4);
    CHECK(le32(raw->data) == raw->len - 4, "sampling_parameters is one length-prefixed element");
    CHECK_STR(json, "{\"max_tokens\":64,\"min_tokens\":64,\"ignore_eos\":true}",
              "sampling_parameters JSON with a real boolean");
  } else {
    CHECK(0, "sampling_parameters present");
  }
  t = input(m, "exclude_input_in_output", &i);
  CHECK(t && m->raw_input_contents[i].data[0] == 1, "exclude_input_in_output true");
  inference__model_infer_request__free_unpacked(m, NULL);
  tp_buf_fini(&b);
}

static void test_metadata_check(void) {
  tp_triton_model_meta meta;
  memset(&meta, 0, sizeof(meta));
  snprintf(meta.platform, sizeof(meta.platform), "vllm");
  meta.n_inputs = 3;
  snprintf(meta.inputs[0].name, 64, "text_input");
  snprintf(meta.inputs[0].datatype, 16, "BYTES");
  meta.inputs[0].n_dims = 1;
  meta.inputs[0].dims[0] = 1;
  snprintf(meta.inputs[1].name, 64, "stream");
  snprintf(meta.inputs[2].name, 64, "sampling_parameters");
  tp_triton_opts o = {0};
  o.model = "vllm_model";
  o.backend = TP_BACKEND_TENSORRTLLM;
  o.streaming = true;
  char err[512];
  CHECK_INT(tp_triton_check_metadata(&meta, &o, err, sizeof(err)), TP_EUNSUPPORTED,
            "a vLLM model with --backend tensorrtllm is refused");
  CHECK(strstr(err, "max_tokens") && strstr(err, "--backend vllm"), "the message names the input and the fix");
  o.backend = TP_BACKEND_VLLM;
  CHECK_INT(tp_triton_check_metadata(&meta, &o, err, sizeof(err)), 0, "accepted as vLLM");
  CHECK(!o.batch_dim && o.has_stream_input && !o.has_exclude_input, "capabilities read from the metadata");
  meta.inputs[0].n_dims = 2;
  meta.inputs[0].dims[0] = -1;
  tp_triton_check_metadata(&meta, &o, err, sizeof(err));
  CHECK(o.batch_dim, "a leading -1 is the batch dimension");
  snprintf(meta.inputs[0].name, 64, "prompt");
  CHECK_INT(tp_triton_check_metadata(&meta, &o, err, sizeof(err)), TP_EUNSUPPORTED, "no text_input: refused");
  CHECK(strstr(err, "text_input") && strstr(err, "prompt"), "the message lists what the model has");
}

int main(void) {
  test_parse_examples();
  test_build_trtllm();
  test_build_vllm();
  test_metadata_check();
  return tp_test_done();
}

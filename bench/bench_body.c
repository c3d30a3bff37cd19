/* Writes the canned bodies of the client-ceiling benchmark (bench/run.sh).
 *
 * Usage: bench_body DIR [RESPONSES]
 *
 *   DIR/doc/inference.GRPCInferenceService/ModelStreamInfer
 *       RESPONSES (default 128) framed ModelStreamInferResponse messages, one
 *       one-word text delta each, the last with triton_final_response=true:
 *       what a TensorRT-LLM ensemble streams for one request.
 *   DIR/doc/inference.GRPCInferenceService/ModelInfer
 *       one framed ModelInferResponse holding the whole text (unary answer).
 *   DIR/doc/vllm.grpc.engine.VllmEngine/Generate
 *       RESPONSES framed GenerateResponse chunks, one token id each with
 *       vLLM's counts of the step, then the complete repeating the last: what
 *       vLLM's own gRPC server streams for one request.
 *   DIR/doc/sglang.grpc.scheduler.SglangScheduler/Generate
 *       RESPONSES - 1 chunks with SGLang's running counts, then the complete
 *       carrying the last token id.
 *   DIR/req_stream.bin, DIR/req_unary.bin
 *       one framed ModelInferRequest each, built by the same code tokperf
 *       sends with (tp_triton_build_infer), for h2load -d and the Python peer.
 *
 * nghttpd serves DIR/doc for any method, so every POST to one of the two RPC
 * paths is answered with the file: a server whose cost per response is a
 * memcpy, which leaves the client as the only thing being measured.  Its
 * --trailer option adds the grpc-status trailer the body lacks.
 *
 * The messages are built with the project's protobuf-c code, so their bytes
 * are exactly what the real adapter and the Python stubs parse; they carry
 * their text in raw_output_contents, as Triton does. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "api/tp_triton.h"
#include "grpc_service.pb-c.h"
#include "sglang_scheduler.pb-c.h"
#include "vllm_engine.pb-c.h"
#include "transport/tp_grpc.h"
#include "tokperf/tokperf.h"

static const char *const words[] = {" the", " of", " and", " to", " in", " is", " that", " it",
                                    " for", " was", " on", " are", " with", " as", " at", " be"};

/* Serializes one ModelInferResponse carrying `text` as a BYTES element
 * (4-byte little-endian length, then the bytes).  final < 0 leaves the
 * triton_final_response parameter out (a unary answer has none). */
static size_t pack_infer(uint8_t *out, size_t cap, const char *text, int final, int stream) {
  Inference__ModelInferResponse r;
  Inference__ModelInferResponse__InferOutputTensor t;
  Inference__ModelInferResponse__InferOutputTensor *tp = &t;
  Inference__ModelInferResponse__ParametersEntry pe;
  Inference__ModelInferResponse__ParametersEntry *pep = &pe;
  Inference__InferParameter pv;
  int64_t shape[2] = {1, 1};
  uint8_t raw_bytes[64];
  ProtobufCBinaryData raw;

  inference__model_infer_response__init(&r);
  r.model_name = "ensemble";
  r.model_version = "1";
  r.id = "bench";
  inference__model_infer_response__infer_output_tensor__init(&t);
  t.name = "text_output";
  t.datatype = "BYTES";
  t.shape = shape;
  t.n_shape = 2;
  r.outputs = &tp;
  r.n_outputs = 1;
  size_t n = strlen(text);
  if (n + 4 > sizeof(raw_bytes)) return 0;
  for (int k = 0; k < 4; k++) raw_bytes[k] = (uint8_t)(n >> (8 * k));
  memcpy(raw_bytes + 4, text, n);
  raw.data = raw_bytes;
  raw.len = n + 4;
  r.raw_output_contents = &raw;
  r.n_raw_output_contents = 1;
  if (final >= 0) {
    inference__model_infer_response__parameters_entry__init(&pe);
    inference__infer_parameter__init(&pv);
    pv.parameter_choice_case = INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM;
    pv.bool_param = final;
    pe.key = "triton_final_response";
    pe.value = &pv;
    r.parameters = &pep;
    r.n_parameters = 1;
  }

  size_t len;
  if (stream) {
    Inference__ModelStreamInferResponse s;
    inference__model_stream_infer_response__init(&s);
    s.infer_response = &r;
    len = inference__model_stream_infer_response__get_packed_size(&s);
    if (len + TP_GRPC_PREFIX_BYTES > cap) return 0;
    inference__model_stream_infer_response__pack(&s, out + TP_GRPC_PREFIX_BYTES);
  } else {
    len = inference__model_infer_response__get_packed_size(&r);
    if (len + TP_GRPC_PREFIX_BYTES > cap) return 0;
    inference__model_infer_response__pack(&r, out + TP_GRPC_PREFIX_BYTES);
  }
  tp_grpc_put_prefix(out, (uint32_t)len);
  return len + TP_GRPC_PREFIX_BYTES;
}

static int write_file(const char *dir, const char *name, const void *p, size_t n) {
  char path[4096];
  snprintf(path, sizeof(path), "%s/%s", dir, name);
  FILE *f = fopen(path, "wb");
  if (f == NULL || fwrite(p, 1, n, f) != n || fclose(f) != 0) {
    fprintf(stderr, "bench_body: cannot write %s: %s\n", path, strerror(errno));
    return -1;
  }
  return 0;
}

static int mkdir_p(const char *path) {
  if (mkdir(path, 0755) != 0 && errno != EEXIST) {
    fprintf(stderr, "bench_body: cannot create %s: %s\n", path, strerror(errno));
    return -1;
  }
  return 0;
}

static int write_request(const char *dir, const char *name, int streaming) {
  /* The same 64-word prompt shape as tokperf's synthetic default. */
  char prompt[1024] = "";
  for (int i = 0; i < 64; i++) strcat(prompt, words[(i * 7) % 16] + (i == 0));
  tp_triton_opts o;
  memset(&o, 0, sizeof(o));
  o.model = "ensemble";
  o.version = "";
  o.backend = TP_BACKEND_TENSORRTLLM;
  o.streaming = streaming;
  o.batch_dim = true;
  o.has_stream_input = true; /* as tokperf after ModelMetadata on the mock */
  tp_buf b;
  tp_buf_init(&b);
  if (tp_triton_build_infer(&b, &o, "bench-0", prompt, strlen(prompt), 128, 0) != 0) return -1;
  int rv = write_file(dir, name, b.data, b.len);
  tp_buf_fini(&b);
  return rv;
}

/* Appends msg framed with its gRPC prefix at body + *len. */
static int put_framed(uint8_t *body, size_t cap, size_t *len, const ProtobufCMessage *msg) {
  size_t n = protobuf_c_message_get_packed_size(msg);
  if (*len + TP_GRPC_PREFIX_BYTES + n > cap) return -1;
  tp_grpc_put_prefix(body + *len, (uint32_t)n);
  protobuf_c_message_pack(msg, body + *len + TP_GRPC_PREFIX_BYTES);
  *len += TP_GRPC_PREFIX_BYTES + n;
  return 0;
}

/* The engines' Generate streams of n tokens (see the header). */
static int write_engine_bodies(const char *doc, long n) {
  char dir[4200];
  size_t cap = (size_t)n * 64 + 256, len = 0;
  uint8_t *body = malloc(cap);
  if (body == NULL) return -1;
  uint32_t id = 0;
  for (long i = 0; i < n; i++) {
    id = 100 + (uint32_t)(i % 16);
    Vllm__Grpc__Engine__GenerateStreamChunk c = VLLM__GRPC__ENGINE__GENERATE_STREAM_CHUNK__INIT;
    c.n_token_ids = 1;
    c.token_ids = &id;
    c.prompt_tokens = 64;
    c.completion_tokens = 1;
    Vllm__Grpc__Engine__GenerateResponse r = VLLM__GRPC__ENGINE__GENERATE_RESPONSE__INIT;
    r.response_case = VLLM__GRPC__ENGINE__GENERATE_RESPONSE__RESPONSE_CHUNK;
    r.chunk = &c;
    if (put_framed(body, cap, &len, &r.base)) return -1;
  }
  Vllm__Grpc__Engine__GenerateComplete vc = VLLM__GRPC__ENGINE__GENERATE_COMPLETE__INIT;
  vc.n_output_ids = 1;
  vc.output_ids = &id;
  vc.finish_reason = "length";
  vc.prompt_tokens = 64;
  vc.completion_tokens = 1;
  Vllm__Grpc__Engine__GenerateResponse vr = VLLM__GRPC__ENGINE__GENERATE_RESPONSE__INIT;
  vr.response_case = VLLM__GRPC__ENGINE__GENERATE_RESPONSE__RESPONSE_COMPLETE;
  vr.complete = &vc;
  if (put_framed(body, cap, &len, &vr.base)) return -1;
  snprintf(dir, sizeof(dir), "%s/vllm.grpc.engine.VllmEngine", doc);
  if (mkdir_p(dir) || write_file(dir, "Generate", body, len)) return -1;

  len = 0;
  for (long i = 0; i < n; i++) {
    id = 100 + (uint32_t)(i % 16);
    Sglang__Grpc__Scheduler__GenerateResponse r = SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__INIT;
    Sglang__Grpc__Scheduler__GenerateStreamChunk c = SGLANG__GRPC__SCHEDULER__GENERATE_STREAM_CHUNK__INIT;
    Sglang__Grpc__Scheduler__GenerateComplete e = SGLANG__GRPC__SCHEDULER__GENERATE_COMPLETE__INIT;
    r.request_id = "bench-0";
    if (i < n - 1) {
      c.n_token_ids = 1;
      c.token_ids = &id;
      c.prompt_tokens = 64;
      c.completion_tokens = (int32_t)(i + 1);
      r.response_case = SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__RESPONSE_CHUNK;
      r.chunk = &c;
    } else {
      e.n_output_ids = 1;
      e.output_ids = &id;
      e.finish_reason = "length";
      e.prompt_tokens = 64;
      e.completion_tokens = (int32_t)n;
      r.response_case = SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__RESPONSE_COMPLETE;
      r.complete = &e;
    }
    if (put_framed(body, cap, &len, &r.base)) return -1;
  }
  snprintf(dir, sizeof(dir), "%s/sglang.grpc.scheduler.SglangScheduler", doc);
  int rv = mkdir_p(dir) || write_file(dir, "Generate", body, len) ? -1 : 0;
  free(body);
  return rv;
}

int main(int argc, char **argv) {
  if (argc < 2 || argc > 3) {
    fprintf(stderr, "usage: bench_body DIR [RESPONSES]\n");
    return 2;
  }
  const char *dir = argv[1];
  long n = argc == 3 ? strtol(argv[2], NULL, 10) : 128;
  if (n < 1 || n > 1000000) {
    fprintf(stderr, "bench_body: RESPONSES must be 1..1000000, not '%s'\n", argv[2]);
    return 2;
  }
  char doc[4096], svc[4200];
  snprintf(doc, sizeof(doc), "%s/doc", dir);
  snprintf(svc, sizeof(svc), "%s/inference.GRPCInferenceService", doc);
  if (mkdir_p(dir) || mkdir_p(doc) || mkdir_p(svc)) return 1;

  size_t cap = (size_t)n * 128, len = 0;
  uint8_t *body = malloc(cap);
  if (body == NULL) return 1;
  for (long i = 0; i < n; i++) {
    size_t m = pack_infer(body + len, cap - len, words[i % 16], i == n - 1, 1);
    if (m == 0) return 1;
    len += m;
  }
  if (write_file(svc, "ModelStreamInfer", body, len)) return 1;
  size_t stream_len = len;

  /* The unary answer: the same text in one response. */
  len = pack_infer(body, cap, " the", -1, 0);
  if (len == 0 || write_file(svc, "ModelInfer", body, len)) return 1;
  free(body);

  if (write_request(dir, "req_stream.bin", 1) || write_request(dir, "req_unary.bin", 0)) return 1;
  if (write_engine_bodies(doc, n)) return 1;
  printf("bench_body: %ld responses, %zu bytes streamed, %zu bytes unary, in %s\n", n, stream_len,
         len, svc);
  return 0;
}

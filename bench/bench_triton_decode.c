/* Decoding of Triton responses: the in-place decoder
 * (tp_triton_parse_response) against the protobuf-c unpack it replaced
 * (tp__triton_parse_response_pbc: unpack, the same extraction, free), on
 * the same messages, in one run.
 *
 * Usage: bench_triton_decode [SECONDS]   (per case and decoder, default 1)
 *
 * Cases: the responses tokperf reads most (a TensorRT-LLM ensemble's
 * one-word streamed delta, as bench_body writes them for bench/run.sh; the
 * final one; vLLM's empty final response; a delta carrying
 * num_output_tokens; a 128-word unary answer), and the 128-response stream
 * of bench/run.sh section a as a whole.  The messages are packed by
 * protobuf-c, so both decoders read the bytes a server sends.
 *
 * Each decoder runs in alternating slices of about SECONDS / 5 (so a
 * neighbour on a shared machine slows both alike); the figure kept for each
 * is the median slice.  Allocations are counted by wrapping malloc, calloc
 * and realloc for the whole process, so protobuf-c's own calls count too.
 * Both decoders' events are compared before timing. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "api/tp_triton.h"
#include "grpc_service.pb-c.h"

/* ---- allocation counter ------------------------------------------------ */

#include "tp_alloc_count.h"

/* ---- messages ---------------------------------------------------------- */

typedef struct msg {
  uint8_t bytes[2048];
  size_t len;
  bool stream;
} msg;

static const char *const words[] = {" the", " of",  " and", " to",  " in",   " is", " that", " it",
                                    " for", " was", " on",  " are", " with", " as", " at",   " be"};

/* One ModelInferResponse as the servers send it: text_output as one BYTES
 * element in raw_output_contents; final < 0 leaves the
 * triton_final_response parameter out, text NULL leaves the outputs out,
 * tokens >= 0 adds a num_output_tokens output (UINT32). */
static bool pack(msg *m, const char *model, const char *id, const char *text, int final, int tokens,
                 bool stream) {
  Inference__ModelInferResponse r;
  Inference__ModelInferResponse__InferOutputTensor t[2], *tp[2] = {&t[0], &t[1]};
  Inference__ModelInferResponse__ParametersEntry pe, *pep = &pe;
  Inference__InferParameter pv;
  int64_t shape[2] = {1, 1};
  static uint8_t raw_text[1024];
  uint8_t raw_tokens[4];
  ProtobufCBinaryData raw[2];

  inference__model_infer_response__init(&r);
  r.model_name = (char *)model;
  r.model_version = "1";
  r.id = (char *)id;
  if (text) {
    size_t n = strlen(text);
    if (n + 4 > sizeof(raw_text)) return false;
    for (int k = 0; k < 4; k++) raw_text[k] = (uint8_t)(n >> (8 * k));
    memcpy(raw_text + 4, text, n);
    inference__model_infer_response__infer_output_tensor__init(&t[0]);
    t[0].name = "text_output";
    t[0].datatype = "BYTES";
    t[0].shape = shape;
    t[0].n_shape = 2;
    raw[0].data = raw_text;
    raw[0].len = n + 4;
    r.n_outputs = r.n_raw_output_contents = 1;
    if (tokens >= 0) {
      inference__model_infer_response__infer_output_tensor__init(&t[1]);
      t[1].name = "num_output_tokens";
      t[1].datatype = "UINT32";
      t[1].shape = shape;
      t[1].n_shape = 1;
      for (int k = 0; k < 4; k++) raw_tokens[k] = (uint8_t)((unsigned)tokens >> (8 * k));
      raw[1].data = raw_tokens;
      raw[1].len = 4;
      r.n_outputs = r.n_raw_output_contents = 2;
    }
    r.outputs = tp;
    r.raw_output_contents = raw;
  }
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
  m->stream = stream;
  if (stream) {
    Inference__ModelStreamInferResponse s;
    inference__model_stream_infer_response__init(&s);
    s.infer_response = &r;
    m->len = inference__model_stream_infer_response__get_packed_size(&s);
    if (m->len > sizeof(m->bytes)) return false;
    inference__model_stream_infer_response__pack(&s, m->bytes);
  } else {
    m->len = inference__model_infer_response__get_packed_size(&r);
    if (m->len > sizeof(m->bytes)) return false;
    inference__model_infer_response__pack(&r, m->bytes);
  }
  return true;
}

/* ---- timing ------------------------------------------------------------ */

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static volatile size_t sink;

/* Decodes every message of ms once per round, `rounds` rounds; returns
 * seconds taken. */
static double run(const msg *ms, size_t n, long rounds, bool pbc) {
  size_t acc = 0;
  double t0 = now_s();
  for (long r = 0; r < rounds; r++)
    for (size_t i = 0; i < n; i++) {
      tp_triton_event ev;
      if (pbc) {
        tp_triton_resp resp;
        if (tp__triton_parse_response_pbc(&resp, &ev, ms[i].bytes, ms[i].len, ms[i].stream) == 0)
          acc += ev.text_len + ev.final;
        tp__triton_resp_free(&resp);
      } else if (tp_triton_parse_response(&ev, ms[i].bytes, ms[i].len, ms[i].stream) == 0) {
        acc += ev.text_len + ev.final;
      }
    }
  sink += acc;
  return now_s() - t0;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

#define SLICES 5

typedef struct result {
  double ns_per_msg[2]; /* [0] in place, [1] protobuf-c: median slice */
  double allocs_per_msg[2];
} result;

static bool same_events(const msg *ms, size_t n) {
  for (size_t i = 0; i < n; i++) {
    tp_triton_event a, b;
    tp_triton_resp resp;
    int ra = tp_triton_parse_response(&a, ms[i].bytes, ms[i].len, ms[i].stream);
    int rb = tp__triton_parse_response_pbc(&resp, &b, ms[i].bytes, ms[i].len, ms[i].stream);
    bool same = ra == rb && a.text_len == b.text_len &&
                (!a.text_len || !memcmp(a.text, b.text, a.text_len)) && a.final == b.final &&
                a.has_final_param == b.has_final_param && a.id_len == b.id_len &&
                a.num_output_tokens == b.num_output_tokens;
    tp__triton_resp_free(&resp);
    if (!same) return false;
  }
  return true;
}

static result measure(const msg *ms, size_t n, double seconds) {
  result res;
  /* Calibrate: rounds for about one slice of the in-place decoder. */
  long rounds[2];
  for (int d = 0; d < 2; d++) {
    long k = 1;
    double t;
    while ((t = run(ms, n, k, d)) < 0.02) k *= 2;
    rounds[d] = (long)((double)k * (seconds / SLICES) / t) + 1;
    unsigned long before = n_allocs;
    run(ms, n, 1, d);
    res.allocs_per_msg[d] = (double)(n_allocs - before) / (double)n;
  }
  double slice[2][SLICES];
  for (int s = 0; s < SLICES; s++)
    for (int d = 0; d < 2; d++)
      slice[d][s] = run(ms, n, rounds[d], d) * 1e9 / ((double)rounds[d] * (double)n);
  for (int d = 0; d < 2; d++) {
    qsort(slice[d], SLICES, sizeof(double), cmp_double);
    res.ns_per_msg[d] = slice[d][SLICES / 2];
  }
  return res;
}

int main(int argc, char **argv) {
  double seconds = argc > 1 ? atof(argv[1]) : 1.0;
  if (argc > 2 || seconds <= 0) {
    fprintf(stderr, "usage: bench_triton_decode [SECONDS]   (per case and decoder, default 1)\n");
    return 2;
  }
  static msg delta, last, empty_final, with_tokens, unary, stream128[128];
  char long_text[1024] = "";
  for (int i = 0; i < 128; i++) strcat(long_text, words[(i * 7) % 16]);
  bool ok = pack(&delta, "ensemble", "bench", " the", 0, -1, true) &&
            pack(&last, "ensemble", "bench", " be", 1, -1, true) &&
            pack(&empty_final, "vllm_model", "c3-1042", NULL, 1, -1, true) &&
            pack(&with_tokens, "vllm_model", "c3-1042", " and", 0, 1, true) &&
            pack(&unary, "ensemble", "bench", long_text, -1, -1, false);
  for (int i = 0; ok && i < 128; i++)
    ok = pack(&stream128[i], "ensemble", "bench", words[i % 16], i == 127, -1, true);
  if (!ok) {
    fprintf(stderr, "bench_triton_decode: a message did not fit its buffer\n");
    return 1;
  }
  static const struct {
    const char *name;
    const msg *ms;
    size_t n;
  } cases[] = {
      {"stream delta (TRT-LLM, one word)", &delta, 1},
      {"stream final with text", &last, 1},
      {"stream empty final (flag only)", &empty_final, 1},
      {"stream delta + num_output_tokens", &with_tokens, 1},
      {"unary answer, 128 words", &unary, 1},
      {"128-response stream (run.sh a)", stream128, 128},
  };
  printf("Triton response decoding: in place vs protobuf-c unpack, %.2g s per case and decoder\n", seconds);
  printf("%-34s %6s  %9s %9s  %10s %10s  %7s  %7s %7s\n", "case", "bytes", "new ns", "pb-c ns", "new msg/s",
         "pb-c msg/s", "speedup", "new al", "pb-c al");
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    if (!same_events(cases[c].ms, cases[c].n)) {
      fprintf(stderr, "bench_triton_decode: %s: the decoders disagree\n", cases[c].name);
      return 1;
    }
    size_t bytes = 0;
    for (size_t i = 0; i < cases[c].n; i++) bytes += cases[c].ms[i].len;
    result r = measure(cases[c].ms, cases[c].n, seconds);
    printf("%-34s %6.0f  %9.1f %9.1f  %10.3g %10.3g  %6.1fx  %7.2f %7.2f\n", cases[c].name,
           (double)bytes / (double)cases[c].n, r.ns_per_msg[0], r.ns_per_msg[1], 1e9 / r.ns_per_msg[0],
           1e9 / r.ns_per_msg[1], r.ns_per_msg[1] / r.ns_per_msg[0], r.allocs_per_msg[0],
           r.allocs_per_msg[1]);
  }
  printf("bytes: mean message size; ns: per message, median of %d slices; al: allocations per message%s\n",
         SLICES, TP_COUNT_ALLOCS ? "" : " (not counted: sanitizer build)");
  return 0;
}

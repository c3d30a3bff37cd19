/* The Prometheus text format parser on exposition text shaped like what
 * Triton, TensorRT-LLM and vLLM serve, plus the format's corner cases. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "api/tp_prom.h"
#include "tp_test.h"
#include "util/tp_common.h"

typedef struct got {
  size_t n;
  char names[64][96];
  double values[64];
  char labels[64][256];
  int64_t ts[64];
  int has_ts[64];
} got;

static int collect(void *ud, const tp_prom_sample *s) {
  got *g = ud;
  if (g->n >= 64) return 1;
  snprintf(g->names[g->n], 96, "%s", s->name);
  g->values[g->n] = s->value;
  g->labels[g->n][0] = 0;
  for (size_t i = 0; i < s->n_labels; i++) {
    size_t l = strlen(g->labels[g->n]);
    snprintf(g->labels[g->n] + l, 256 - l, "%s%s=%s", i ? "," : "", s->labels[i].name, s->labels[i].value);
  }
  g->ts[g->n] = s->timestamp_ms;
  g->has_ts[g->n] = s->has_timestamp;
  g->n++;
  return 0;
}

static const char triton[] =
    "# HELP nv_inference_request_success Number of successful inference requests, all batch sizes\n"
    "# TYPE nv_inference_request_success counter\n"
    "nv_inference_request_success{model=\"ensemble\",version=\"1\"} 1207\n"
    "nv_inference_request_success{model=\"tensorrt_llm\",version=\"1\"} 1207\n"
    "# HELP nv_gpu_utilization GPU utilization rate [0.0 - 1.0)\n"
    "# TYPE nv_gpu_utilization gauge\n"
    "nv_gpu_utilization{gpu_uuid=\"GPU-7b2f\"} 0.93\n"
    "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"used\",model=\"tensorrt_llm\",version=\"1\"} 412\n"
    "nv_energy_consumption{gpu_uuid=\"GPU-7b2f\"} 1.2e+06\n";

static const char vllm[] =
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\r\n"
    "# TYPE vllm:num_requests_running gauge\r\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"Qwen/Qwen3-8B\"} 64.0\r\n"
    "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"Qwen/Qwen3-8B\"} 0.4217\r\n"
    "# TYPE vllm:time_to_first_token_seconds histogram\r\n"
    "vllm:time_to_first_token_seconds_bucket{le=\"0.001\",model_name=\"m\"} 0.0\r\n"
    "vllm:time_to_first_token_seconds_bucket{le=\"+Inf\",model_name=\"m\"} 512.0\r\n"
    "vllm:time_to_first_token_seconds_sum{model_name=\"m\"} 25.6\r\n"
    "vllm:time_to_first_token_seconds_count{model_name=\"m\"} 512.0\r\n";

static const char corners[] =
    "\n"
    "   \n"
    "# a plain comment\n"
    "plain 1\n"
    "with_ts 2 1700000000123\n"
    "negative_ts 3 -5\n"
    "esc{path=\"C:\\\\dir\",quote=\"say \\\"hi\\\"\",nl=\"a\\nb\"} 4\n"
    "spaced { a = \"1\" , b=\"2\" , } 5\n"
    "nan NaN\n"
    "pinf +Inf\n"
    "ninf -Inf\n"
    "exp 1.5e-3\n"
    "empty_labels{} 7\n"
    "last_without_newline 8";

int main(void) {
  got g;
  char err[256];
  memset(&g, 0, sizeof(g));
  CHECK_INT(tp_prom_parse(triton, strlen(triton), collect, &g, err, sizeof(err)), 0, "Triton metrics parse");
  CHECK_INT(g.n, 5, "five samples, HELP/TYPE skipped");
  CHECK_STR(g.names[0], "nv_inference_request_success", "counter name");
  CHECK_STR(g.labels[0], "model=ensemble,version=1", "labels in order");
  CHECK_NEAR(g.values[0], 1207, 0, "counter value");
  CHECK_NEAR(g.values[2], 0.93, 1e-12, "gauge value");
  CHECK_STR(g.labels[3], "kv_cache_block_type=used,model=tensorrt_llm,version=1", "TensorRT-LLM KV-cache labels");
  CHECK_NEAR(g.values[4], 1.2e6, 0, "exponent value");

  memset(&g, 0, sizeof(g));
  CHECK_INT(tp_prom_parse(vllm, strlen(vllm), collect, &g, err, sizeof(err)), 0, "vLLM metrics (CRLF) parse");
  CHECK_INT(g.n, 6, "six samples");
  CHECK_STR(g.names[0], "vllm:num_requests_running", "names with colons");
  CHECK_STR(g.labels[3], "le=+Inf,model_name=m", "histogram +Inf bucket label");
  CHECK_NEAR(g.values[3], 512, 0, "bucket count");
  CHECK_STR(g.names[4], "vllm:time_to_first_token_seconds_sum", "_sum sample");

  memset(&g, 0, sizeof(g));
  CHECK_INT(tp_prom_parse(corners, strlen(corners), collect, &g, err, sizeof(err)), 0, "corner cases parse");
  CHECK_INT(g.n, 11, "eleven samples");
  CHECK(g.has_ts[1] && g.ts[1] == 1700000000123LL, "timestamp in ms");
  CHECK(g.has_ts[2] && g.ts[2] == -5, "negative timestamp");
  CHECK(!g.has_ts[0], "no timestamp");
  CHECK_STR(g.labels[3], "path=C:\\dir,quote=say \"hi\",nl=a\nb", "escapes \\\\, \\\" and \\n");
  CHECK_STR(g.labels[4], "a=1,b=2", "spaces and a trailing comma inside braces");
  CHECK(isnan(g.values[5]), "NaN");
  CHECK(isinf(g.values[6]) && g.values[6] > 0, "+Inf");
  CHECK(isinf(g.values[7]) && g.values[7] < 0, "-Inf");
  CHECK_NEAR(g.values[8], 0.0015, 1e-15, "1.5e-3");
  CHECK_STR(g.labels[9], "", "empty braces");
  CHECK_STR(g.names[10], "last_without_newline", "last line without newline");

  static const struct {
    const char *in;
    const char *msg;
  } bad[] = {
    {"9lives 1\n", "line 1: a sample must start with a metric name"},
    {"ok 1\nm{a=1} 2\n", "line 2: expected =\"value\" after label 'a'"},
    {"m{a=\"x} 2\n", "line 1: unterminated label value"},
    {"m 12abc\n", "line 1: '12abc' is not a sample value"},
    {"m inf\n", "line 1: 'inf' is not a sample value"},
    {"m\n", "line 1: '' is not a sample value"},
    {"m 1 2 3\n", "line 1: unexpected text after the timestamp"},
    {"m 1 x\n", "line 1: expected a timestamp in ms after the value"},
    {"m{=\"1\"} 1\n", "line 1: expected a label name or '}'"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    memset(&g, 0, sizeof(g));
    err[0] = 0;
    int rv = tp_prom_parse(bad[i].in, strlen(bad[i].in), collect, &g, err, sizeof(err));
    CHECK(rv == TP_EPROTO && strcmp(err, bad[i].msg) == 0, "rejects %s -> %s (got \"%s\")", bad[i].in, bad[i].msg, err);
  }
  memset(&g, 0, sizeof(g));
  tp_prom_parse("a 1\nb 2\n", 8, collect, &g, err, sizeof(err));
  CHECK_INT(g.n, 2, "samples before an error are delivered; the callback may stop the parse");

  /* Guard page: the body ends right before an unmapped page. */
  long page = sysconf(_SC_PAGESIZE);
  char *mem = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  mprotect(mem + page, page, PROT_NONE);
  const char *tail = "m{a=\"b\"} 1.5 123";
  size_t tl = strlen(tail);
  memcpy(mem + page - tl, tail, tl);
  memset(&g, 0, sizeof(g));
  CHECK_INT(tp_prom_parse(mem + page - tl, tl, collect, &g, err, sizeof(err)), 0, "guard page: parses to the edge");
  CHECK(g.n == 1 && g.has_ts[0] && g.ts[0] == 123, "guard page: sample complete");
  const char *cut = "m{a=\"b";
  memcpy(mem + page - strlen(cut), cut, strlen(cut));
  CHECK_INT(tp_prom_parse(mem + page - strlen(cut), strlen(cut), collect, &g, err, sizeof(err)), TP_EPROTO,
            "guard page: a cut label is an error, not a read past the end");
  munmap(mem, 2 * page);
  return tp_test_done();
}

#include <stdio.h>
#include <string.h>

#include <jansson.h>
#include <nghttp2/nghttp2ver.h>
#include <nghttp2/nghttp2.h>
#include <protobuf-c/protobuf-c.h>
#include <uv.h>

#include "config.h"
#include "util/tp_common.h"
#include "tokperf/tokperf.h"

const char *tp_version_long(void) {
  static char buf[256];
  if (!buf[0]) {
    nghttp2_info *ng = nghttp2_version(0);
    snprintf(buf, sizeof(buf),
             "tokperf %s (libuv %s, nghttp2 %s, protobuf-c %s, jansson %s, sentencepiece %s)",
             TP_VERSION, uv_version_string(), ng ? ng->version_str : NGHTTP2_VERSION,
             protobuf_c_version(), JANSSON_VERSION, TP_SPM_VERSION);
#if TP_HAVE_MPI
    /* Distributed runs: the Open MPI this build was made against. */
    size_t n = strlen(buf);
    if (n > 0 && n < sizeof(buf)) snprintf(buf + n - 1, sizeof(buf) - (n - 1), ", Open MPI %s)", TP_MPI_VERSION);
#endif
  }
  return buf;
}

void tp_config_default(tp_config *cfg) {
  static const uint32_t one = 1;
  memset(cfg, 0, sizeof(*cfg));
  cfg->server.url = "localhost:8001";
  cfg->server.model = "ensemble";
  cfg->server.model_version = "";
  cfg->server.service_kind = TP_SERVICE_TRITON;
  cfg->server.backend = TP_BACKEND_TENSORRTLLM;
  cfg->server.streaming = true;
  cfg->load.concurrency = &one;
  cfg->load.n_concurrency = 1;
  cfg->measure.warmup_request_count = 0;
  cfg->prompts.random_seed = 0;
  cfg->prompts.synthetic_input_words = 64;
  cfg->prompts.num_prompts = 100;
  cfg->output.progress = stderr;
  cfg->load.arrival = TP_ARRIVAL_CONSTANT;
  cfg->load.burstiness = 1;
  cfg->load.replay_speedup = 1;
  cfg->load.prefix_block_tokens = 512;
  cfg->measure.measure_mode = TP_MEASURE_COUNT;
  cfg->measure.measurement_interval_ms = 10000;
  cfg->measure.measurement_request_count = 50;
  cfg->measure.stability_percentage = 10;
  cfg->measure.steady_state_threshold = 0.95;
  cfg->measure.max_trials = 10;
  cfg->measure.max_error_rate = -1;
  cfg->prompts.num_prefixes = 1;
  cfg->server.metrics_interval_ms = 1000;
  cfg->server.max_response_bytes = 64ull << 20;
  cfg->server.max_consecutive_failures = 100;
  cfg->measure.grace_period_ms = 5000;
}

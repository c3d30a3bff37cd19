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
  cfg->url = "localhost:8001";
  cfg->model = "ensemble";
  cfg->model_version = "";
  cfg->service_kind = TP_SERVICE_TRITON;
  cfg->backend = TP_BACKEND_TENSORRTLLM;
  cfg->streaming = true;
  cfg->concurrency = &one;
  cfg->n_concurrency = 1;
  cfg->warmup_request_count = 0;
  cfg->random_seed = 0;
  cfg->synthetic_input_words = 64;
  cfg->num_prompts = 100;
  cfg->progress = stderr;
  cfg->arrival = TP_ARRIVAL_CONSTANT;
  cfg->burstiness = 1;
  cfg->replay_speedup = 1;
  cfg->prefix_block_tokens = 512;
  cfg->measure_mode = TP_MEASURE_COUNT;
  cfg->measurement_interval_ms = 10000;
  cfg->measurement_request_count = 50;
  cfg->stability_percentage = 10;
  cfg->max_trials = 10;
  cfg->max_error_rate = -1;
  cfg->num_prefixes = 1;
  cfg->metrics_interval_ms = 1000;
  cfg->max_response_bytes = 64ull << 20;
  cfg->grace_period_ms = 5000;
}

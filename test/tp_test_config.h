/* The library's default configuration, for the unit tests of layers below
 * the run (report/ and its exports take a tp_config as input but may not
 * link run/, where tp_config_default lives).  test_sweep_search, a test of
 * run/, holds this copy equal to tp_config_default field by field, so the
 * two cannot drift apart unnoticed. */
#ifndef TP_TEST_CONFIG_H
#define TP_TEST_CONFIG_H

#include <stdio.h>
#include <string.h>

#include "tokperf/tokperf.h"

static inline void tp_test_config_default(tp_config *cfg) {
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

#endif

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
  cfg->url = "localhost:8001";
  cfg->model = "ensemble";
  cfg->model_version = "";
  cfg->service_kind = TP_SERVICE_TRITON;
  cfg->backend = TP_BACKEND_TENSORRTLLM;
  cfg->streaming = true;
  cfg->concurrency = &one;
  cfg->n_concurrency = 1;
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

#endif

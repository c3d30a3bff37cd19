/* Unit tests for the mock's server-side statistics (mock/tp_mock_stats.c):
 * made-up request records in, exact ModelStatistics sums out; the
 * Prometheus text checked line by line (HELP and TYPE before samples,
 * cumulative buckets, +Inf = count); Triton's statistics JSON parsed back. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "mock/tp_mock_stats.h"
#include "tp_test.h"

static tp_mock_job_record rec(tp_mock_stats_model m, bool ok, uint64_t arrival, uint64_t admit, uint64_t first,
                              uint64_t end, uint32_t prompt, uint32_t out, uint32_t resp) {
  tp_mock_job_record r;
  memset(&r, 0, sizeof(r));
  r.model = m;
  r.ok = ok;
  r.arrival_ns = arrival;
  r.admit_ns = admit;
  r.first_response_ns = first;
  r.end_ns = end;
  r.prompt_tokens = prompt;
  r.output_tokens = out;
  r.responses = resp;
  r.wall_ms = 1700000000000ULL + end;
  r.hit_length = true;
  return r;
}

#define E TP_MOCK_SM_ENSEMBLE
#define V TP_MOCK_SM_VLLM

static tp_mock_statset fill(void) {
  tp_mock_statset s;
  tp_mock_statset_init(&s);
  tp_mock_job_record r;
  r = rec(E, true, 1000, 1500, 3000, 10000, 10, 5, 5);
  tp_mock_statset_record(&s, &r);
  r = rec(E, true, 2000, 2000, 2500, 4000, 4, 2, 2);
  r.hit_length = false;
  tp_mock_statset_record(&s, &r);
  r = rec(E, false, 100, 200, 300, 700, 6, 1, 1); /* failed after one response */
  tp_mock_statset_record(&s, &r);
  r = rec(E, false, 5000, 0, 0, 5050, 3, 0, 0); /* refused at arrival */
  tp_mock_statset_record(&s, &r);
  r = rec(V, true, 0, 10, 50, 100, 7, 3, 3);
  tp_mock_statset_record(&s, &r);
  r = rec(V, false, 0, 20, 30, 40, 8, 1, 1);
  r.cancelled = true;
  tp_mock_statset_record(&s, &r);
  tp_mock_statset_itl(&s, 20000000); /* 20 ms */
  return s;
}

static void test_arithmetic(void) {
  tp_mock_statset s = fill();
  const tp_mock_model_stats *ens = &s.models[E], *pre = &s.models[TP_MOCK_SM_PREPROCESSING],
                            *llm = &s.models[TP_MOCK_SM_TENSORRT_LLM], *post = &s.models[TP_MOCK_SM_POSTPROCESSING],
                            *vl = &s.models[V];
  /* Triton's reading: request = overhead + queue + compute input + infer +
   * output, with the ensemble's own overhead per request. */
  CHECK(ens->success.count == 2 &&
            ens->success.ns == ens->queue.ns + ens->compute_input.ns + ens->compute_infer.ns +
                                   ens->compute_output.ns + 2 * TP_MOCK_ENSEMBLE_OVERHEAD_NS,
        "ensemble: 2 successes, duration = overhead + queue + compute");
  CHECK(ens->success.ns > 9000 + 2000, "ensemble: duration covers end - arrival and the steps around the LLM");
  CHECK(ens->fail.count == 2 && ens->fail.ns == 600 + 50 && ens->cancelled == 0, "ensemble: 2 fails (one refused)");
  CHECK(ens->inference_count == 2 && ens->execution_count == 2, "ensemble: inferences and executions = successes");
  CHECK_INT(ens->last_inference_ms, 1700000000000ULL + 5050, "last_inference: the wall clock of the last record");
  /* Preprocessing ran for the three admitted requests. */
  uint64_t pre_infer = 3 * TP_MOCK_PRE_INFER_NS + TP_MOCK_PRE_INFER_NS_PER_WORD * (10 + 4 + 6);
  CHECK(pre->success.count == 3 && pre->inference_count == 3 && pre->execution_count == 3,
        "preprocessing: one execution per admitted request");
  CHECK(pre->compute_infer.ns == pre_infer && pre->queue.ns == 3 * TP_MOCK_PRE_QUEUE_NS &&
            pre->success.ns == 3 * (TP_MOCK_PRE_QUEUE_NS + TP_MOCK_PRE_INPUT_NS + TP_MOCK_PRE_OUTPUT_NS) + pre_infer,
        "preprocessing: tokenizing time grows with prompt words");
  CHECK(llm->success.count == 2 && llm->fail.count == 1 && llm->fail.ns == 600, "tensorrt_llm: 2 successes, 1 fail");
  CHECK(llm->queue.ns == 500 && llm->queue.count == 2, "tensorrt_llm: queue = admit - arrival (500 + 0 ns)");
  CHECK(llm->compute_infer.ns == 8500 + 2000, "tensorrt_llm: compute infer = end - admit (prefill + decode)");
  CHECK(llm->compute_output.ns == TP_MOCK_LLM_OUTPUT_NS_PER_RESPONSE * 7 &&
            llm->compute_input.ns == 2 * TP_MOCK_LLM_INPUT_NS,
        "tensorrt_llm: small input and per-response output times");
  CHECK(post->inference_count == 8 && post->execution_count == 8 && post->success.count == 8 &&
            post->compute_infer.ns == 8 * TP_MOCK_POST_INFER_NS,
        "postprocessing: one execution per response (5 + 2 + 1, the failed one's too)");
  CHECK(ens->queue.ns == 2 * TP_MOCK_PRE_QUEUE_NS + 500 + 7 * TP_MOCK_POST_QUEUE_NS,
        "ensemble: queue = its composing models' queues");
  CHECK(ens->compute_infer.ns == 2 * TP_MOCK_PRE_INFER_NS + TP_MOCK_PRE_INFER_NS_PER_WORD * 14 + 10500 +
                                     7 * TP_MOCK_POST_INFER_NS,
        "ensemble: compute infer = the composing models' sum");
  CHECK(vl->success.count == 1 && vl->success.ns == 100 && vl->queue.ns == 10 && vl->compute_infer.ns == 90 &&
            vl->compute_output.ns == 3 * TP_MOCK_LLM_OUTPUT_NS_PER_RESPONSE,
        "vllm_model: queue 10 ns, compute infer 90 ns");
  CHECK(vl->fail.count == 1 && vl->cancelled == 1 && vl->fail.ns == 40, "vllm_model: a cancelled request is a fail");
  CHECK_INT(s.prompt_tokens, 10 + 4 + 6 + 7 + 8, "prompt tokens of admitted requests");
  CHECK_INT(s.generation_tokens, 5 + 2 + 1 + 3 + 1, "generation tokens");
  CHECK(s.finished_length == 2 && s.finished_stop == 1 && s.finished_abort == 3, "finished reasons");
  CHECK(s.ttft_s.count == 5 && s.first_response_ms[0].count == 3 && s.first_response_ms[1].count == 2,
        "first-response histograms: 5 requests that sent something");
  CHECK(s.e2e_s.count == 3 && s.itl_s.count == 1, "e2e for successes, one ITL gap");
  /* The TTFT histogram (seconds): 2000, 500, 200, 50 and 30 ns all fall in
   * the first bucket (<= 1 ms). */
  CHECK(s.ttft_s.counts[0] == 5 && s.itl_s.counts[0] == 0 && s.itl_s.counts[1] == 1,
        "histogram buckets (<= 1 ms; 20 ms in <= 25 ms)");
}

/* A Prometheus family: name, type; samples must come after its HELP and
 * TYPE, and belong to it (name, or name_bucket/_sum/_count). */
static void test_metrics(void) {
  tp_mock_statset s = fill();
  tp_mock_gauges g;
  memset(&g, 0, sizeof(g));
  g.running = 3;
  g.waiting = 2;
  g.prefilling = 1;
  g.max_batch = 8;
  g.kv_blocks_used = 25;
  g.kv_blocks_max = 100;
  g.kv_tokens_per_block = 16;
  g.prefix_queries_tokens = 400;
  g.prefix_hits_tokens = 160;
  g.gpu_utilization = 0.5;
  g.power_w = 387.5;
  g.energy_j = 1234.5;
  g.gpu_memory_total_bytes = 85899345920ULL;
  g.gpu_memory_used_bytes = 40000000000ULL;
  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_mock_metrics_render(&b, &s, &g), 0, "metrics rendered");
  char *text = (char *)b.data;
  char fam[128] = "", type[32] = "";
  int helps = 0, orphan = 0, lines = 0, dup = 0;
  char seen[200][128];
  int n_seen = 0;
  for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
    lines++;
    if (strncmp(line, "# HELP ", 7) == 0) {
      sscanf(line + 7, "%127s", fam);
      for (int i = 0; i < n_seen; i++)
        if (!strcmp(seen[i], fam)) dup++;
      if (n_seen < 200) strcpy(seen[n_seen++], fam);
      helps++;
      type[0] = 0;
      continue;
    }
    if (strncmp(line, "# TYPE ", 7) == 0) {
      char f2[128];
      sscanf(line + 7, "%127s %31s", f2, type);
      if (strcmp(f2, fam) != 0) orphan++;
      continue;
    }
    size_t fl = strlen(fam);
    bool ok = type[0] && strncmp(line, fam, fl) == 0 &&
              (line[fl] == '{' || line[fl] == ' ' ||
               (!strcmp(type, "histogram") &&
                (!strncmp(line + fl, "_bucket{", 8) || !strncmp(line + fl, "_sum{", 5) || !strncmp(line + fl, "_count{", 7))));
    if (!ok) {
      orphan++;
      printf("#   sample outside its family: %s\n", line);
    }
  }
  CHECK(lines > 100 && helps >= 30, "metrics: %d lines, %d families", lines, helps);
  CHECK_INT(orphan, 0, "metrics: every sample follows its family's HELP and TYPE");
  CHECK_INT(dup, 0, "metrics: every family once");
  tp_buf_reset(&b);
  tp_mock_metrics_render(&b, &s, &g);
  text = (char *)b.data;
  static const char *const want[] = {
      "nv_inference_request_success{model=\"ensemble\",version=\"1\"} 2\n",
      "nv_inference_request_success{model=\"postprocessing\",version=\"1\"} 8\n",
      "nv_inference_request_failure{model=\"vllm_model\",reason=\"CANCELED\",version=\"1\"} 1\n",
      "nv_inference_request_failure{model=\"ensemble\",reason=\"BACKEND\",version=\"1\"} 2\n",
      "nv_inference_count{model=\"tensorrt_llm\",version=\"1\"} 2\n",
      "nv_inference_exec_count{model=\"preprocessing\",version=\"1\"} 3\n",
      "nv_inference_queue_duration_us{model=\"vllm_model\",version=\"1\"} 0\n",
      "nv_inference_pending_request_count{model=\"tensorrt_llm\",version=\"1\"} 2\n",
      "nv_gpu_utilization{gpu_uuid=",
      "nv_gpu_memory_total_bytes{gpu_uuid=\"GPU-746f6b70-6572-666d-6f63-6b0000000000\"} 85899345920\n",
      "nv_energy_consumption{gpu_uuid=\"GPU-746f6b70-6572-666d-6f63-6b0000000000\"} 1234.5\n",
      "nv_trt_llm_request_metrics{model=\"tensorrt_llm\",version=\"1\",request_type=\"waiting\"} 2\n",
      "nv_trt_llm_request_metrics{model=\"tensorrt_llm\",version=\"1\",request_type=\"context\"} 1\n",
      "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"free\",model=\"tensorrt_llm\",version=\"1\"} 75\n",
      "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"fraction\",model=\"tensorrt_llm\",version=\"1\"} 0.25\n",
      "vllm:num_requests_running{engine=\"0\",model_name=\"vllm_model\"} 3.0\n",
      "vllm:num_requests_waiting{engine=\"0\",model_name=\"vllm_model\"} 2.0\n",
      "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"vllm_model\"} 0.25\n",
      "vllm:gpu_cache_usage_perc{engine=\"0\",model_name=\"vllm_model\"} 0.25\n",
      "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"vllm_model\"} 400.0\n",
      "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"vllm_model\"} 160.0\n",
      "vllm:prompt_tokens_total{engine=\"0\",model_name=\"vllm_model\"} 35.0\n",
      "vllm:request_success_total{engine=\"0\",model_name=\"vllm_model\",finished_reason=\"length\"} 2.0\n",
      "# TYPE vllm:time_to_first_token_seconds histogram\n",
      "vllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"vllm_model\",le=\"0.001\"} 5.0\n",
      "vllm:time_to_first_token_seconds_bucket{engine=\"0\",model_name=\"vllm_model\",le=\"+Inf\"} 5.0\n",
      "vllm:time_to_first_token_seconds_count{engine=\"0\",model_name=\"vllm_model\"} 5.0\n",
      "nv_inference_first_response_histogram_ms_bucket{model=\"vllm_model\",version=\"1\",le=\"+Inf\"} 2\n",
      "nv_inference_first_response_histogram_ms_count{model=\"ensemble\",version=\"1\"} 3\n",
      "vllm:inter_token_latency_seconds_bucket{engine=\"0\",model_name=\"vllm_model\",le=\"0.025\"} 1.0\n",
      "vllm:inter_token_latency_seconds_sum{engine=\"0\",model_name=\"vllm_model\"} 0.02\n",
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(want); i++) {
    bool found = strstr(text, want[i]) != NULL;
    CHECK(found, "metrics hold: %.*s", (int)strcspn(want[i], "\n"), want[i]);
  }
  /* Buckets are cumulative and end at _count. */
  const char *h = strstr(text, "vllm:e2e_request_latency_seconds_bucket");
  double prev = -1;
  int mono = 1, nb = 0;
  while (h && !strncmp(h, "vllm:e2e_request_latency_seconds_bucket", 39)) {
    double v = atof(strrchr(strchr(h, '}'), ' ') + 1);
    if (v < prev) mono = 0;
    prev = v;
    nb++;
    h = strchr(h, '\n') + 1;
  }
  CHECK(mono && nb == 22 && prev == 3, "e2e buckets: 21 bounds + Inf, cumulative, +Inf = 3");
  tp_buf_fini(&b);
}

static void test_json(void) {
  tp_mock_statset s = fill();
  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_mock_stats_json(&b, &s, TP_MOCK_SM_COUNT), 0, "stats JSON written");
  json_error_t je;
  json_t *o = json_loads((const char *)b.data, 0, &je);
  json_t *ms = json_object_get(o, "model_stats");
  CHECK(json_array_size(ms) == 5, "stats JSON: five models");
  json_t *ens = json_array_get(ms, 0);
  json_t *is = json_object_get(ens, "inference_stats");
  CHECK(!strcmp(json_string_value(json_object_get(ens, "name")), "ensemble") &&
            json_integer_value(json_object_get(json_object_get(is, "success"), "count")) == 2 &&
            json_integer_value(json_object_get(json_object_get(is, "success"), "ns")) ==
                (json_int_t)s.models[E].success.ns &&
            json_integer_value(json_object_get(json_object_get(is, "fail"), "count")) == 2 &&
            json_integer_value(json_object_get(ens, "inference_count")) == 2,
        "stats JSON: the ensemble's counts and durations");
  json_t *bs = json_array_get(json_object_get(ens, "batch_stats"), 0);
  CHECK(json_integer_value(json_object_get(bs, "batch_size")) == 1 &&
            json_integer_value(json_object_get(json_object_get(bs, "compute_infer"), "count")) == 2,
        "stats JSON: batch_stats of batch size 1");
  json_decref(o);
  tp_buf_reset(&b);
  tp_mock_stats_json(&b, &s, TP_MOCK_SM_POSTPROCESSING);
  o = json_loads((const char *)b.data, 0, &je);
  ms = json_object_get(o, "model_stats");
  CHECK(json_array_size(ms) == 1 &&
            json_integer_value(json_object_get(json_array_get(ms, 0), "execution_count")) == 8,
        "stats JSON of one model: postprocessing, 8 executions");
  json_decref(o);
  tp_buf_fini(&b);
  CHECK_STR(tp_mock_stats_model_name(TP_MOCK_SM_TENSORRT_LLM), "tensorrt_llm", "model names");
}

int main(void) {
  test_arithmetic();
  test_metrics();
  test_json();
  return tp_test_done();
}

#include "tp_mock_stats.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#define TP_MOCK_SM_STR(name, str) str,
static const char *const model_names[] = {TP_MOCK_STATS_MODELS(TP_MOCK_SM_STR)};
#undef TP_MOCK_SM_STR

const char *tp_mock_stats_model_name(tp_mock_stats_model m) {
  return (unsigned)m < TP_MOCK_SM_COUNT ? model_names[m] : "?";
}

/* vLLM's bucket bounds (vllm/v1/metrics/loggers.py) and Triton's default
 * first-response buckets. */
static const double ttft_bounds[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,   0.25,  0.5,   0.75,
                                     1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
static const double e2e_bounds[] = {0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,  20.0,
                                    30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
static const double itl_bounds[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4, 0.5,
                                    0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0};
static const double first_response_bounds[] = {100, 500, 2000, 5000};

/* On a zeroed histogram (tp_mock_statset_init clears the whole set). */
static void hist_init(tp_mock_hist *h, const double *b, size_t n) {
  h->bounds = b;
  h->n_bounds = n;
}

void tp_mock_hist_observe(tp_mock_hist *h, double v) {
  size_t i = 0;
  while (i < h->n_bounds && v > h->bounds[i]) i++;
  h->counts[i]++;
  h->count++;
  h->sum += v;
}

void tp_mock_statset_init(tp_mock_statset *s) {
  memset(s, 0, sizeof(*s));
  hist_init(&s->ttft_s, ttft_bounds, TP_ARRAY_LEN(ttft_bounds));
  hist_init(&s->e2e_s, e2e_bounds, TP_ARRAY_LEN(e2e_bounds));
  hist_init(&s->itl_s, itl_bounds, TP_ARRAY_LEN(itl_bounds));
  for (int i = 0; i < 2; i++)
    hist_init(&s->first_response_ms[i], first_response_bounds, TP_ARRAY_LEN(first_response_bounds));
}

static void add(tp_mock_duration *d, uint64_t count, uint64_t ns) {
  d->count += count;
  d->ns += ns;
}

static uint64_t diff(uint64_t later, uint64_t earlier) {
  return later > earlier ? later - earlier : 0;
}

/* An admitted request of the ensemble, in the ensemble's own figures and
 * in those of the models it runs: preprocessing, tensorrt_llm and
 * postprocessing.  dur, queue and infer are the request's times. */
static void record_ensemble(tp_mock_statset *s, const tp_mock_job_record *r, uint64_t dur, uint64_t queue,
                            uint64_t infer) {
  tp_mock_model_stats *top = &s->models[TP_MOCK_SM_ENSEMBLE];
  uint64_t resp = r->responses;
  tp_mock_model_stats *pre = &s->models[TP_MOCK_SM_PREPROCESSING];
  tp_mock_model_stats *llm = &s->models[TP_MOCK_SM_TENSORRT_LLM];
  tp_mock_model_stats *post = &s->models[TP_MOCK_SM_POSTPROCESSING];
  uint64_t pre_infer = TP_MOCK_PRE_INFER_NS + TP_MOCK_PRE_INFER_NS_PER_WORD * r->prompt_tokens;
  /* Tokenizing ran whatever happened later. */
  pre->last_inference_ms = r->wall_ms;
  add(&pre->success, 1, TP_MOCK_PRE_QUEUE_NS + TP_MOCK_PRE_INPUT_NS + pre_infer + TP_MOCK_PRE_OUTPUT_NS);
  add(&pre->queue, 1, TP_MOCK_PRE_QUEUE_NS);
  add(&pre->compute_input, 1, TP_MOCK_PRE_INPUT_NS);
  add(&pre->compute_infer, 1, pre_infer);
  add(&pre->compute_output, 1, TP_MOCK_PRE_OUTPUT_NS);
  pre->inference_count++;
  pre->execution_count++;

  llm->last_inference_ms = r->wall_ms;
  if (r->ok) {
    add(&llm->success, 1, dur);
    add(&llm->queue, 1, queue);
    add(&llm->compute_input, 1, TP_MOCK_LLM_INPUT_NS);
    add(&llm->compute_infer, 1, infer);
    add(&llm->compute_output, 1, TP_MOCK_LLM_OUTPUT_NS_PER_RESPONSE * resp);
    llm->inference_count++;
    llm->execution_count++;
  } else {
    add(&llm->fail, 1, dur);
    if (r->cancelled) llm->cancelled++;
  }

  /* The ensemble runs postprocessing once per response tensorrt_llm
   * streams out, also for a request that fails later. */
  if (resp) {
    post->last_inference_ms = r->wall_ms;
    add(&post->success, resp,
        resp * (TP_MOCK_POST_QUEUE_NS + TP_MOCK_POST_INPUT_NS + TP_MOCK_POST_INFER_NS + TP_MOCK_POST_OUTPUT_NS));
    add(&post->queue, resp, resp * TP_MOCK_POST_QUEUE_NS);
    add(&post->compute_input, resp, resp * TP_MOCK_POST_INPUT_NS);
    add(&post->compute_infer, resp, resp * TP_MOCK_POST_INFER_NS);
    add(&post->compute_output, resp, resp * TP_MOCK_POST_OUTPUT_NS);
    post->inference_count += resp;
    post->execution_count += resp;
  }

  if (r->ok) {
    /* The ensemble's own duration holds its steps: preprocessing before
     * the LLM, postprocessing of every response, the LLM's input and
     * output copies, and a few microseconds of scheduling of its own, so
     * that request = overhead + queue + compute, as Triton reports it. */
    add(&top->success, 0,
        TP_MOCK_PRE_QUEUE_NS + TP_MOCK_PRE_INPUT_NS + pre_infer + TP_MOCK_PRE_OUTPUT_NS + TP_MOCK_LLM_INPUT_NS +
            resp * (TP_MOCK_LLM_OUTPUT_NS_PER_RESPONSE + TP_MOCK_POST_QUEUE_NS + TP_MOCK_POST_INPUT_NS +
                    TP_MOCK_POST_INFER_NS + TP_MOCK_POST_OUTPUT_NS) +
            TP_MOCK_ENSEMBLE_OVERHEAD_NS);
    add(&top->queue, 1, TP_MOCK_PRE_QUEUE_NS + queue + resp * TP_MOCK_POST_QUEUE_NS);
    add(&top->compute_input, 1, TP_MOCK_PRE_INPUT_NS + TP_MOCK_LLM_INPUT_NS + resp * TP_MOCK_POST_INPUT_NS);
    add(&top->compute_infer, 1, pre_infer + infer + resp * TP_MOCK_POST_INFER_NS);
    add(&top->compute_output, 1,
        TP_MOCK_PRE_OUTPUT_NS + resp * (TP_MOCK_LLM_OUTPUT_NS_PER_RESPONSE + TP_MOCK_POST_OUTPUT_NS));
  }
}

void tp_mock_statset_record(tp_mock_statset *s, const tp_mock_job_record *r) {
  tp_mock_stats_model mi = r->model == TP_MOCK_SM_VLLM ? TP_MOCK_SM_VLLM : TP_MOCK_SM_ENSEMBLE;
  tp_mock_model_stats *top = &s->models[mi];
  uint64_t dur = diff(r->end_ns, r->arrival_ns);
  bool admitted = r->admit_ns != 0;
  uint64_t queue = admitted ? diff(r->admit_ns, r->arrival_ns) : 0;
  uint64_t infer = admitted ? diff(r->end_ns, r->admit_ns) : 0;
  uint64_t resp = r->responses;

  top->last_inference_ms = r->wall_ms;
  if (r->ok) {
    add(&top->success, 1, dur);
    top->inference_count++;
    top->execution_count++;
  } else {
    add(&top->fail, 1, dur);
    if (r->cancelled) top->cancelled++;
  }

  if (mi == TP_MOCK_SM_ENSEMBLE && admitted) {
    record_ensemble(s, r, dur, queue, infer);
  } else if (mi == TP_MOCK_SM_VLLM && admitted && r->ok) {
    add(&top->queue, 1, queue);
    add(&top->compute_input, 1, TP_MOCK_LLM_INPUT_NS);
    add(&top->compute_infer, 1, infer);
    add(&top->compute_output, 1, TP_MOCK_LLM_OUTPUT_NS_PER_RESPONSE * resp);
  }

  if (admitted) s->prompt_tokens += r->prompt_tokens;
  s->generation_tokens += r->output_tokens;
  if (!r->ok)
    s->finished_abort++;
  else if (r->hit_length)
    s->finished_length++;
  else
    s->finished_stop++;
  if (r->first_response_ns) {
    uint64_t ttft = diff(r->first_response_ns, r->arrival_ns);
    tp_mock_hist_observe(&s->ttft_s, (double)ttft / 1e9);
    tp_mock_hist_observe(&s->first_response_ms[mi == TP_MOCK_SM_VLLM], (double)ttft / 1e6);
  }
  if (r->ok) tp_mock_hist_observe(&s->e2e_s, (double)dur / 1e9);
}

void tp_mock_statset_itl(tp_mock_statset *s, uint64_t gap_ns) {
  tp_mock_hist_observe(&s->itl_s, (double)gap_ns / 1e9);
}

/* ---- Prometheus text ----------------------------------------------------------- */

/* Python's float repr as prometheus_client writes it ("10.0", "0.25"). */
static void py_float(char *out, size_t n, double v) {
  if (isinf(v)) {
    snprintf(out, n, v > 0 ? "+Inf" : "-Inf");
    return;
  }
  snprintf(out, n, "%.15g", v);
  if (!strpbrk(out, ".eEn")) {
    size_t l = strlen(out);
    if (l + 2 < n) memcpy(out + l, ".0", 3);
  }
}

static int family(tp_buf *b, const char *name, const char *type, const char *help) {
  return tp_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Triton families: one sample per model. */
typedef uint64_t (*model_value_fn)(const tp_mock_model_stats *ms);
static uint64_t v_success(const tp_mock_model_stats *ms) { return ms->success.count; }
static uint64_t v_count(const tp_mock_model_stats *ms) { return ms->inference_count; }
static uint64_t v_exec(const tp_mock_model_stats *ms) { return ms->execution_count; }
static uint64_t v_req_us(const tp_mock_model_stats *ms) { return (ms->success.ns + ms->fail.ns) / 1000; }
static uint64_t v_queue_us(const tp_mock_model_stats *ms) { return ms->queue.ns / 1000; }
static uint64_t v_in_us(const tp_mock_model_stats *ms) { return ms->compute_input.ns / 1000; }
static uint64_t v_infer_us(const tp_mock_model_stats *ms) { return ms->compute_infer.ns / 1000; }
static uint64_t v_out_us(const tp_mock_model_stats *ms) { return ms->compute_output.ns / 1000; }

static int triton_family(tp_buf *b, const tp_mock_statset *s, const char *name, const char *help,
                         model_value_fn fn) {
  int rv = family(b, name, "counter", help);
  for (int i = 0; i < TP_MOCK_SM_COUNT && !rv; i++)
    rv = tp_buf_printf(b, "%s{model=\"%s\",version=\"1\"} %llu\n", name, model_names[i],
                       (unsigned long long)fn(&s->models[i]));
  return rv;
}

static int hist(tp_buf *b, const char *name, const char *labels, const tp_mock_hist *h, bool py) {
  uint64_t cum = 0;
  char num[48];
  int rv = 0;
  for (size_t i = 0; i <= h->n_bounds && !rv; i++) {
    cum += h->counts[i];
    if (i < h->n_bounds) {
      if (py)
        py_float(num, sizeof(num), h->bounds[i]);
      else
        snprintf(num, sizeof(num), "%g", h->bounds[i]);
    } else {
      snprintf(num, sizeof(num), "+Inf");
    }
    rv = tp_buf_printf(b, "%s_bucket{%s,le=\"%s\"} %llu%s\n", name, labels, num, (unsigned long long)cum,
                       py ? ".0" : "");
  }
  py_float(num, sizeof(num), h->sum);
  if (!rv) rv = tp_buf_printf(b, "%s_sum{%s} %s\n", name, labels, num);
  if (!rv)
    rv = tp_buf_printf(b, "%s_count{%s} %llu%s\n", name, labels, (unsigned long long)h->count, py ? ".0" : "");
  return rv;
}

#define GPU_LABEL "gpu_uuid=\"GPU-746f6b70-6572-666d-6f63-6b0000000000\""
#define LLM_LABELS "model=\"tensorrt_llm\",version=\"1\""
#define VLLM_LABELS "engine=\"0\",model_name=\"vllm_model\""

/* Triton core: per-model counters, durations and the first-response histogram. */
static int render_triton(tp_buf *b, const tp_mock_statset *s, const tp_mock_gauges *g) {
  int rv = 0;
  /* Triton core. */
  rv |= family(b, "nv_inference_request_success", "counter",
               "Number of successful inference requests, all batch sizes");
  for (int i = 0; i < TP_MOCK_SM_COUNT; i++)
    rv |= tp_buf_printf(b, "nv_inference_request_success{model=\"%s\",version=\"1\"} %llu\n", model_names[i],
                        (unsigned long long)v_success(&s->models[i]));
  rv |= family(b, "nv_inference_request_failure", "counter", "Number of failed inference requests, all batch sizes");
  for (int i = 0; i < TP_MOCK_SM_COUNT; i++) {
    const tp_mock_model_stats *ms = &s->models[i];
    rv |= tp_buf_printf(b, "nv_inference_request_failure{model=\"%s\",reason=\"BACKEND\",version=\"1\"} %llu\n",
                        model_names[i], (unsigned long long)(ms->fail.count - ms->cancelled));
    rv |= tp_buf_printf(b, "nv_inference_request_failure{model=\"%s\",reason=\"CANCELED\",version=\"1\"} %llu\n",
                        model_names[i], (unsigned long long)ms->cancelled);
  }
  rv |= triton_family(b, s, "nv_inference_count", "Number of inferences performed (does not include cached requests)",
                      v_count);
  rv |= triton_family(b, s, "nv_inference_exec_count",
                      "Number of model executions performed (does not include cached requests)", v_exec);
  rv |= triton_family(b, s, "nv_inference_request_duration_us",
                      "Cumulative inference request duration in microseconds (includes cached requests)", v_req_us);
  rv |= triton_family(b, s, "nv_inference_queue_duration_us",
                      "Cumulative inference queuing duration in microseconds (includes cached requests)",
                      v_queue_us);
  rv |= triton_family(b, s, "nv_inference_compute_input_duration_us",
                      "Cumulative compute input duration in microseconds (does not include cached requests)",
                      v_in_us);
  rv |= triton_family(b, s, "nv_inference_compute_infer_duration_us",
                      "Cumulative compute inference duration in microseconds (does not include cached requests)",
                      v_infer_us);
  rv |= triton_family(b, s, "nv_inference_compute_output_duration_us",
                      "Cumulative inference compute output duration in microseconds (does not include cached "
                      "requests)",
                      v_out_us);
  rv |= family(b, "nv_inference_pending_request_count", "gauge",
               "Instantaneous number of pending requests awaiting execution per-model.");
  for (int i = 0; i < TP_MOCK_SM_COUNT; i++) {
    bool llm = i == TP_MOCK_SM_ENSEMBLE || i == TP_MOCK_SM_TENSORRT_LLM || i == TP_MOCK_SM_VLLM;
    rv |= tp_buf_printf(b, "nv_inference_pending_request_count{model=\"%s\",version=\"1\"} %u\n", model_names[i],
                        llm ? g->waiting : 0);
  }
  rv |= family(b, "nv_inference_first_response_histogram_ms", "histogram",
               "Duration from request to first response in milliseconds");
  rv |= hist(b, "nv_inference_first_response_histogram_ms", "model=\"ensemble\",version=\"1\"",
             &s->first_response_ms[0], false);
  rv |= hist(b, "nv_inference_first_response_histogram_ms", "model=\"vllm_model\",version=\"1\"",
             &s->first_response_ms[1], false);
  return rv;
}

/* The GPU, as DCGM reports it through Triton. */
static int render_gpu(tp_buf *b, const tp_mock_gauges *g) {
  int rv = 0;
  char f[48];
  /* GPU (DCGM through Triton). */
  py_float(f, sizeof(f), g->gpu_utilization);
  rv |= family(b, "nv_gpu_utilization", "gauge", "GPU utilization rate [0.0 - 1.0)");
  rv |= tp_buf_printf(b, "nv_gpu_utilization{" GPU_LABEL "} %s\n", f);
  rv |= family(b, "nv_gpu_memory_total_bytes", "gauge", "GPU total memory, in bytes");
  rv |= tp_buf_printf(b, "nv_gpu_memory_total_bytes{" GPU_LABEL "} %llu\n",
                      (unsigned long long)g->gpu_memory_total_bytes);
  rv |= family(b, "nv_gpu_memory_used_bytes", "gauge", "GPU used memory, in bytes");
  rv |= tp_buf_printf(b, "nv_gpu_memory_used_bytes{" GPU_LABEL "} %llu\n",
                      (unsigned long long)g->gpu_memory_used_bytes);
  py_float(f, sizeof(f), g->power_w);
  rv |= family(b, "nv_gpu_power_usage", "gauge", "GPU power usage in watts");
  rv |= tp_buf_printf(b, "nv_gpu_power_usage{" GPU_LABEL "} %s\n", f);
  rv |= family(b, "nv_gpu_power_limit", "gauge", "GPU power management limit in watts");
  rv |= tp_buf_printf(b, "nv_gpu_power_limit{" GPU_LABEL "} 700\n");
  py_float(f, sizeof(f), g->energy_j);
  rv |= family(b, "nv_energy_consumption", "counter", "GPU energy consumption in joules since the Triton Server started");
  rv |= tp_buf_printf(b, "nv_energy_consumption{" GPU_LABEL "} %s\n", f);
  return rv;
}

/* The TensorRT-LLM backend: requests, KV cache blocks, the batcher. */
static int render_trtllm(tp_buf *b, const tp_mock_statset *s, const tp_mock_gauges *g) {
  int rv = 0;
  char f[48];
  uint64_t used = TP_MIN(g->kv_blocks_used, g->kv_blocks_max);
  /* TensorRT-LLM backend. */
  rv |= family(b, "nv_trt_llm_request_metrics", "gauge", "TRT LLM request metrics");
  const struct {
    const char *type;
    uint64_t v;
  } req[] = {
      {"active", g->running + g->waiting},
      {"context", g->prefilling},
      {"max", g->max_batch},
      {"scheduled", g->running},
      {"waiting", g->waiting},
      {"completed", s->models[TP_MOCK_SM_TENSORRT_LLM].success.count},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(req); i++)
    rv |= tp_buf_printf(b, "nv_trt_llm_request_metrics{" LLM_LABELS ",request_type=\"%s\"} %llu\n", req[i].type,
                        (unsigned long long)req[i].v);
  rv |= family(b, "nv_trt_llm_kv_cache_block_metrics", "gauge", "TRT LLM KV cache block metrics");
  rv |= tp_buf_printf(b, "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"max\"," LLM_LABELS "} %llu\n",
                      (unsigned long long)g->kv_blocks_max);
  rv |= tp_buf_printf(b, "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"free\"," LLM_LABELS "} %llu\n",
                      (unsigned long long)(g->kv_blocks_max - used));
  rv |= tp_buf_printf(b, "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"used\"," LLM_LABELS "} %llu\n",
                      (unsigned long long)used);
  rv |= tp_buf_printf(b, "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"tokens_per\"," LLM_LABELS "} %u\n",
                      g->kv_tokens_per_block);
  py_float(f, sizeof(f), g->kv_blocks_max ? (double)used / (double)g->kv_blocks_max : 0.0);
  rv |= tp_buf_printf(b, "nv_trt_llm_kv_cache_block_metrics{kv_cache_block_type=\"fraction\"," LLM_LABELS "} %s\n",
                      f);
  rv |= family(b, "nv_trt_llm_inflight_batcher_metrics", "gauge", "TRT LLM inflight_batcher-specific metrics");
  rv |= tp_buf_printf(b,
                      "nv_trt_llm_inflight_batcher_metrics{inflight_batcher_specific_metric=\"generation_requests\"," LLM_LABELS
                      "} %u\n",
                      g->running - g->prefilling);
  rv |= tp_buf_printf(b,
                      "nv_trt_llm_inflight_batcher_metrics{inflight_batcher_specific_metric=\"paused_requests\"," LLM_LABELS
                      "} 0\n");
  rv |= tp_buf_printf(b,
                      "nv_trt_llm_inflight_batcher_metrics{inflight_batcher_specific_metric=\"micro_batch_id\"," LLM_LABELS
                      "} 0\n");
  rv |= family(b, "nv_trt_llm_general_metrics", "gauge", "General TRT LLM metrics");
  rv |= tp_buf_printf(b, "nv_trt_llm_general_metrics{general_type=\"iteration_counter\"," LLM_LABELS "} %llu\n",
                      (unsigned long long)g->iterations);
  rv |= tp_buf_printf(b, "nv_trt_llm_general_metrics{general_type=\"timestamp\"," LLM_LABELS "} %llu\n",
                      (unsigned long long)g->wall_ms * 1000);
  return rv;
}

/* vLLM, formatted as prometheus_client does. */
static int render_vllm(tp_buf *b, const tp_mock_statset *s, const tp_mock_gauges *g) {
  int rv = 0;
  char f[48];
  uint64_t used = TP_MIN(g->kv_blocks_used, g->kv_blocks_max);
  /* vLLM (prometheus_client formatting: floats, _total counters). */
  rv |= family(b, "vllm:num_requests_running", "gauge", "Number of requests in model execution batches.");
  rv |= tp_buf_printf(b, "vllm:num_requests_running{" VLLM_LABELS "} %u.0\n", g->running);
  rv |= family(b, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.");
  rv |= tp_buf_printf(b, "vllm:num_requests_waiting{" VLLM_LABELS "} %u.0\n", g->waiting);
  py_float(f, sizeof(f), g->kv_blocks_max ? (double)used / (double)g->kv_blocks_max : 0.0);
  rv |= family(b, "vllm:gpu_cache_usage_perc", "gauge", "GPU KV-cache usage. 1 means 100 percent usage.");
  rv |= tp_buf_printf(b, "vllm:gpu_cache_usage_perc{" VLLM_LABELS "} %s\n", f);
  rv |= family(b, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.");
  rv |= tp_buf_printf(b, "vllm:kv_cache_usage_perc{" VLLM_LABELS "} %s\n", f);
  rv |= family(b, "vllm:prefix_cache_queries_total", "counter",
               "Prefix cache queries, in terms of number of queried tokens.");
  rv |= tp_buf_printf(b, "vllm:prefix_cache_queries_total{" VLLM_LABELS "} %llu.0\n",
                      (unsigned long long)g->prefix_queries_tokens);
  rv |= family(b, "vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.");
  rv |= tp_buf_printf(b, "vllm:prefix_cache_hits_total{" VLLM_LABELS "} %llu.0\n",
                      (unsigned long long)g->prefix_hits_tokens);
  rv |= family(b, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.");
  rv |= tp_buf_printf(b, "vllm:prompt_tokens_total{" VLLM_LABELS "} %llu.0\n", (unsigned long long)s->prompt_tokens);
  rv |= family(b, "vllm:generation_tokens_total", "counter", "Number of generation tokens processed.");
  rv |= tp_buf_printf(b, "vllm:generation_tokens_total{" VLLM_LABELS "} %llu.0\n",
                      (unsigned long long)s->generation_tokens);
  rv |= family(b, "vllm:request_success_total", "counter", "Count of successfully processed requests.");
  rv |= tp_buf_printf(b, "vllm:request_success_total{" VLLM_LABELS ",finished_reason=\"stop\"} %llu.0\n",
                      (unsigned long long)s->finished_stop);
  rv |= tp_buf_printf(b, "vllm:request_success_total{" VLLM_LABELS ",finished_reason=\"length\"} %llu.0\n",
                      (unsigned long long)s->finished_length);
  rv |= tp_buf_printf(b, "vllm:request_success_total{" VLLM_LABELS ",finished_reason=\"abort\"} %llu.0\n",
                      (unsigned long long)s->finished_abort);
  rv |= family(b, "vllm:time_to_first_token_seconds", "histogram", "Histogram of time to first token in seconds.");
  rv |= hist(b, "vllm:time_to_first_token_seconds", VLLM_LABELS, &s->ttft_s, true);
  rv |= family(b, "vllm:inter_token_latency_seconds", "histogram", "Histogram of inter-token latency in seconds.");
  rv |= hist(b, "vllm:inter_token_latency_seconds", VLLM_LABELS, &s->itl_s, true);
  rv |= family(b, "vllm:e2e_request_latency_seconds", "histogram", "Histogram of e2e request latency in seconds.");
  rv |= hist(b, "vllm:e2e_request_latency_seconds", VLLM_LABELS, &s->e2e_s, true);
  return rv;
}

int tp_mock_metrics_render(tp_buf *b, const tp_mock_statset *s, const tp_mock_gauges *g) {
  int rv = render_triton(b, s, g);
  rv |= render_gpu(b, g);
  rv |= render_trtllm(b, s, g);
  rv |= render_vllm(b, s, g);
  return rv ? TP_ENOMEM : 0;
}

/* ---- Triton's statistics JSON --------------------------------------------------- */

static int dur_json(tp_buf *b, const char *name, const tp_mock_duration *d, bool comma) {
  return tp_buf_printf(b, "\"%s\":{\"count\":%llu,\"ns\":%llu}%s", name, (unsigned long long)d->count,
                       (unsigned long long)d->ns, comma ? "," : "");
}

int tp_mock_stats_json(tp_buf *b, const tp_mock_statset *s, int which) {
  static const tp_mock_duration zero;
  int rv = tp_buf_append_str(b, "{\"model_stats\":[");
  bool first = true;
  for (int i = 0; i < TP_MOCK_SM_COUNT && !rv; i++) {
    if (which < TP_MOCK_SM_COUNT && which != i) continue;
    const tp_mock_model_stats *ms = &s->models[i];
    rv |= tp_buf_printf(b,
                        "%s{\"name\":\"%s\",\"version\":\"1\",\"last_inference\":%llu,\"inference_count\":%llu,"
                        "\"execution_count\":%llu,\"inference_stats\":{",
                        first ? "" : ",", model_names[i], (unsigned long long)ms->last_inference_ms,
                        (unsigned long long)ms->inference_count, (unsigned long long)ms->execution_count);
    first = false;
    rv |= dur_json(b, "success", &ms->success, true);
    rv |= dur_json(b, "fail", &ms->fail, true);
    rv |= dur_json(b, "queue", &ms->queue, true);
    rv |= dur_json(b, "compute_input", &ms->compute_input, true);
    rv |= dur_json(b, "compute_infer", &ms->compute_infer, true);
    rv |= dur_json(b, "compute_output", &ms->compute_output, true);
    rv |= dur_json(b, "cache_hit", &zero, true);
    rv |= dur_json(b, "cache_miss", &zero, false);
    rv |= tp_buf_append_str(b, "},\"response_stats\":{},\"batch_stats\":[");
    if (ms->execution_count) {
      rv |= tp_buf_append_str(b, "{\"batch_size\":1,");
      rv |= dur_json(b, "compute_input", &ms->compute_input, true);
      rv |= dur_json(b, "compute_infer", &ms->compute_infer, true);
      rv |= dur_json(b, "compute_output", &ms->compute_output, false);
      rv |= tp_buf_append_str(b, "}");
    }
    rv |= tp_buf_append_str(b, "],\"memory_usage\":[]}");
  }
  rv |= tp_buf_append_str(b, "]}");
  return rv ? TP_ENOMEM : 0;
}

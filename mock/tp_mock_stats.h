/* Server-side statistics of the mock, as Triton, TensorRT-LLM and vLLM
 * report them: per-model ModelStatistics (cumulative counts and durations in
 * ns), and the Prometheus text of GET /metrics.
 *
 * Pure arithmetic: the server hands over one record per finished request
 * (times from the timing model) plus a snapshot of its gauges; this file
 * does no I/O and reads no clock, so tests feed it made-up records and check
 * the sums exactly.
 *
 * How a request becomes statistics (the per-stage constants below are
 * synthetic but of the size real deployments show):
 *   - the requested model (ensemble or vllm_model) counts one success or
 *     fail, duration = end - arrival;
 *   - a request to the ensemble also runs its composing models:
 *     preprocessing once (tokenizing: PRE_* times), tensorrt_llm once (queue
 *     = admit - arrival, the wait for a batch slot; compute infer = end -
 *     admit, prefill + decode; small input/output times) and postprocessing
 *     once per response sent (detokenizing: POST_* times);
 *   - the ensemble's own queue and compute durations are the sums of its
 *     composing models', as Triton reports them;
 *   - vllm_model is one model: queue and compute as tensorrt_llm's;
 *   - a request that never reached a batch slot (refused at arrival)
 *     counts a fail on the requested model only; a cancelled one counts as
 *     a fail;
 *   - inference_count and execution_count count successful requests (one
 *     execution each: the mock does not batch at the Triton level). */
#ifndef TP_MOCK_STATS_H
#define TP_MOCK_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/tp_common.h"

/* X-macro: enum suffix, model name. */
#define TP_MOCK_STATS_MODELS(X)          \
  X(ENSEMBLE, "ensemble")                \
  X(PREPROCESSING, "preprocessing")      \
  X(TENSORRT_LLM, "tensorrt_llm")        \
  X(POSTPROCESSING, "postprocessing")    \
  X(VLLM, "vllm_model")

#define TP_MOCK_SM_ENUM(name, str) TP_MOCK_SM_##name,
typedef enum tp_mock_stats_model { TP_MOCK_STATS_MODELS(TP_MOCK_SM_ENUM) TP_MOCK_SM_COUNT } tp_mock_stats_model;
#undef TP_MOCK_SM_ENUM

const char *tp_mock_stats_model_name(tp_mock_stats_model m);

/* Synthetic per-stage times, in ns. */
#define TP_MOCK_PRE_QUEUE_NS 8000ULL
/* The ensemble scheduler's own time per request (its "overhead"). */
#define TP_MOCK_ENSEMBLE_OVERHEAD_NS 3000ULL
#define TP_MOCK_PRE_INPUT_NS 20000ULL
#define TP_MOCK_PRE_INFER_NS 150000ULL /* + TP_MOCK_PRE_INFER_NS_PER_WORD x prompt words */
#define TP_MOCK_PRE_INFER_NS_PER_WORD 500ULL
#define TP_MOCK_PRE_OUTPUT_NS 15000ULL
#define TP_MOCK_LLM_INPUT_NS 30000ULL
#define TP_MOCK_LLM_OUTPUT_NS_PER_RESPONSE 5000ULL
#define TP_MOCK_POST_QUEUE_NS 4000ULL
#define TP_MOCK_POST_INPUT_NS 10000ULL
#define TP_MOCK_POST_INFER_NS 40000ULL
#define TP_MOCK_POST_OUTPUT_NS 10000ULL

typedef struct tp_mock_duration {
  uint64_t count;
  uint64_t ns;
} tp_mock_duration;

typedef struct tp_mock_model_stats {
  uint64_t last_inference_ms; /* wall clock, ms since the Unix epoch; 0 = never */
  uint64_t inference_count;
  uint64_t execution_count;
  uint64_t cancelled; /* of the fails, those the client cancelled */
  tp_mock_duration success, fail, queue, compute_input, compute_infer, compute_output;
} tp_mock_model_stats;

/* A Prometheus histogram with fixed upper bounds (the +Inf bucket is
 * implicit).  counts[i] is per bucket, not cumulative. */
#define TP_MOCK_HIST_MAX_BOUNDS 24
typedef struct tp_mock_hist {
  const double *bounds;
  size_t n_bounds;
  uint64_t counts[TP_MOCK_HIST_MAX_BOUNDS + 1];
  uint64_t count;
  double sum;
} tp_mock_hist;

void tp_mock_hist_observe(tp_mock_hist *h, double v);

typedef struct tp_mock_statset {
  tp_mock_model_stats models[TP_MOCK_SM_COUNT];
  /* Engine-wide counters (vLLM and TensorRT-LLM metrics). */
  uint64_t prompt_tokens;
  uint64_t generation_tokens;
  uint64_t finished_stop, finished_length, finished_abort;
  /* Histograms: vLLM's (seconds) and Triton's first-response one (ms),
   * per requested model (ensemble, vllm_model). */
  tp_mock_hist ttft_s, e2e_s, itl_s;
  tp_mock_hist first_response_ms[2]; /* [0] ensemble, [1] vllm_model */
} tp_mock_statset;

void tp_mock_statset_init(tp_mock_statset *s);

/* One finished request. */
typedef struct tp_mock_job_record {
  tp_mock_stats_model model; /* ENSEMBLE or VLLM: what the client asked for */
  bool ok;
  bool cancelled;
  bool hit_length;       /* ended at max_tokens (else end of sequence) */
  uint64_t arrival_ns;
  uint64_t admit_ns;          /* 0 = never got a batch slot */
  uint64_t first_response_ns; /* 0 = nothing was sent */
  uint64_t end_ns;
  uint64_t wall_ms; /* wall clock at the end, ms since the epoch */
  uint32_t prompt_tokens;
  uint32_t output_tokens;
  uint32_t responses;
} tp_mock_job_record;

void tp_mock_statset_record(tp_mock_statset *s, const tp_mock_job_record *r);
/* One inter-token gap (vLLM's inter_token_latency histogram). */
void tp_mock_statset_itl(tp_mock_statset *s, uint64_t gap_ns);

/* Gauges of the moment, read by the server when /metrics is asked for. */
typedef struct tp_mock_gauges {
  uint32_t running;   /* sequences holding a batch slot */
  uint32_t waiting;   /* queued for one */
  uint32_t prefilling;
  uint32_t max_batch;
  uint64_t kv_blocks_used;
  uint64_t kv_blocks_max;
  uint32_t kv_tokens_per_block;
  uint64_t prefix_queries_tokens;
  uint64_t prefix_hits_tokens;
  double gpu_utilization; /* 0..1 over the last scrape interval */
  double power_w;
  double energy_j; /* since start */
  uint64_t gpu_memory_total_bytes;
  uint64_t gpu_memory_used_bytes;
  uint64_t iterations; /* TensorRT-LLM iteration counter: tokens produced */
  uint64_t wall_ms;
} tp_mock_gauges;

/* Appends the Prometheus text exposition (format 0.0.4): Triton's nv_*
 * metrics per model, TensorRT-LLM's nv_trt_llm_* and vLLM's vllm:* ones,
 * each family with its HELP and TYPE lines.  Returns 0 or TP_ENOMEM. */
int tp_mock_metrics_render(tp_buf *out, const tp_mock_statset *s, const tp_mock_gauges *g);

/* Appends Triton's HTTP statistics JSON ({"model_stats":[...]}) for one
 * model (which < TP_MOCK_SM_COUNT) or all (which = TP_MOCK_SM_COUNT). */
int tp_mock_stats_json(tp_buf *out, const tp_mock_statset *s, int which);

#endif

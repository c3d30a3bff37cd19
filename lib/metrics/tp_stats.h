/* Exact statistics over per-request records.
 *
 * Every figure is computed from the full list of values (no histogram, no
 * sampling).  The definitions are in docs/metrics.md; this file is their one
 * implementation, and every export reads the results from here. */
#ifndef TP_STATS_H
#define TP_STATS_H

#include <stddef.h>

#include "record/tp_record.h"
#include "tp_gaps.h"
#include "tokperf/tokperf.h"

/* Fills st from values[0..n) (the array is sorted in place).  Percentiles
 * use linear interpolation between closest ranks (rank = p/100 x (n-1)),
 * the definition numpy uses by default.  std is the population standard
 * deviation.  n == 0 gives st->n == 0 and zeroes. */
void tp_stat_compute(tp_stat *st, double *values, size_t n);

/* Computes every figure of a level from its records.  Warm-up records and
 * failed records are left out of the latency and token statistics; failed
 * ones are counted per class.  Returns 0 or TP_ENOMEM. */
int tp_level_compute(tp_level_result *out, const tp_record *recs, size_t n);

typedef struct tp_level_opts {
  /* When window_end_ns > window_start_ns, throughputs divide by this span
   * (perf_analyzer's windows) instead of first send to last completion. */
  uint64_t window_start_ns, window_end_ns;
  /* Goodput bounds in ms; 0 = no bound on that metric. */
  double goodput_ttft_ms, goodput_itl_ms, goodput_latency_ms;
  double goodput_tpot_ms; /* vLLM's TPOT and GenAI-Perf's inter_token_latency */
  double goodput_ttst_ms; /* time to second token (GenAI-Perf's time_to_second_token) */
  /* A floor in tokens/s on 1000 / ITL (GenAI-Perf's
   * output_token_throughput_per_user); 0 = none. */
  double goodput_tps_per_user_min;
  /* The measured requests' gaps between text responses, pooled as they
   * ended (itl_pooled_ms); NULL = not collected. */
  const tp_gap_pool *gaps;
  const tp_gap_pool *vllm_gaps; /* vLLM's pooled ITL (tp_gap_pool_add_vllm) */
} tp_level_opts;

/* tp_level_compute with options (NULL = none). */
int tp_level_compute_ex(tp_level_result *out, const tp_record *recs, size_t n, const tp_level_opts *o);

#endif

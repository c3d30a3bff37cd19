/* Exact statistics over per-request records.
 *
 * docs/metrics.md defines every figure; this file is the only place they are
 * computed.  When the two disagree, the document states the intent and this
 * file has the bug. */
#include "tp_stats.h"
#include "tp_fidelity.h"
#include "tp_request.h"
#include "tokperf/tokperf.h"

#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A local copy of the class names: the metrics layer links only tp_util,
 * and the X-macro keeps this table and tp_error_class_name in step. */
#define TP_CLASS_STR(name, str) [name] = str,
static const char *const class_names[TP_ERRCLASS_COUNT] = {
    TP_ERROR_CLASSES(TP_CLASS_STR)};
#undef TP_CLASS_STR

static const char *class_name(tp_error_class c) {
  if ((unsigned)c >= TP_ERRCLASS_COUNT) return "unknown";
  return class_names[c];
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The double's bits as an unsigned integer in the same order: negative
 * numbers have every bit flipped, the others only the sign bit. */
static inline uint64_t order_key(double d) {
  uint64_t u;
  memcpy(&u, &d, sizeof(u));
  return u >> 63 ? ~u : u | (1ULL << 63);
}

static inline double key_double(uint64_t k) {
  uint64_t u = k >> 63 ? k & ~(1ULL << 63) : ~k;
  double d;
  memcpy(&d, &u, sizeof(d));
  return d;
}

#define DIGIT_BITS 11
#define DIGITS 6 /* 6 x 11 bits cover 64 */
#define BUCKETS (1u << DIGIT_BITS)

/* Sorts v ascending.  A level of a million requests sorts fifteen arrays of
 * a million values, and qsort's merge sort through a comparison function
 * took ~10% of the time from the last request to the report; an LSD radix
 * sort over order_key takes a fraction of it.  A pass whose digit every key
 * shares (the sign and exponent of values of one scale) is skipped.  Small
 * arrays, or no memory for the scratch, go to qsort. */
static void sort_doubles(double *v, size_t n) {
  uint64_t *a = n >= 512 ? malloc(2 * n * sizeof(*a)) : NULL;
  size_t *count = a ? calloc((size_t)DIGITS * BUCKETS, sizeof(*count)) : NULL;
  if (!count) {
    free(a);
    qsort(v, n, sizeof(*v), cmp_double);
    return;
  }
  uint64_t *src = a, *dst = a + n;
  for (size_t i = 0; i < n; i++) {
    uint64_t k = order_key(v[i]);
    src[i] = k;
    for (unsigned d = 0; d < DIGITS; d++) count[d * BUCKETS + (k >> (d * DIGIT_BITS) & (BUCKETS - 1))]++;
  }
  for (unsigned d = 0; d < DIGITS; d++) {
    size_t *c = count + (size_t)d * BUCKETS;
    unsigned shift = d * DIGIT_BITS;
    if (c[src[0] >> shift & (BUCKETS - 1)] == n) continue;
    size_t sum = 0;
    for (unsigned b = 0; b < BUCKETS; b++) {
      size_t t = c[b];
      c[b] = sum;
      sum += t;
    }
    for (size_t i = 0; i < n; i++) dst[c[src[i] >> shift & (BUCKETS - 1)]++] = src[i];
    uint64_t *t = src;
    src = dst;
    dst = t;
  }
  for (size_t i = 0; i < n; i++) v[i] = key_double(src[i]);
  free(count);
  free(a);
}

/* Linear interpolation between the closest ranks of a sorted array, numpy's
 * default ("linear"): rank = p/100 x (n-1), then blend the two neighbours
 * by the fractional part of the rank. */
static double percentile(const double *sorted, size_t n, double p) {
  double rank = p / 100.0 * (double)(n - 1);
  size_t lo = (size_t)floor(rank);
  if (lo >= n - 1) return sorted[n - 1];
  double frac = rank - (double)lo;
  return sorted[lo] + (sorted[lo + 1] - sorted[lo]) * frac;
}

void tp_stat_compute(tp_stat *st, double *values, size_t n) {
  memset(st, 0, sizeof(*st));
  if (n == 0) return;
  sort_doubles(values, n);
  st->n = n;
  st->min = values[0];
  st->max = values[n - 1];

  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += values[i];
  double mean = sum / (double)n;
  /* Rounding in the sum can put the mean a hair outside [min, max] (three
   * copies of 0.1 do); a mean outside the data would look like a bug in a
   * report, so clamp it. */
  if (mean < st->min) mean = st->min;
  if (mean > st->max) mean = st->max;
  st->avg = mean;

  /* Two passes (mean first, then squared deviations) rather than the
   * sum-of-squares shortcut, which cancels catastrophically when the values
   * are large and close together, as nanosecond latencies are. */
  double ss = 0;
  for (size_t i = 0; i < n; i++) {
    double d = values[i] - mean;
    ss += d * d;
  }
  st->std = st->min == st->max ? 0 : sqrt(ss / (double)n);

  st->p1 = percentile(values, n, 1);
  st->p5 = percentile(values, n, 5);
  st->p10 = percentile(values, n, 10);
  st->p25 = percentile(values, n, 25);
  st->p50 = percentile(values, n, 50);
  st->p75 = percentile(values, n, 75);
  st->p90 = percentile(values, n, 90);
  st->p95 = percentile(values, n, 95);
  st->p99 = percentile(values, n, 99);
}

enum {
  V_TTFT, V_ITL, V_LAT, V_OUT, V_IN, V_TPS, V_RESP, V_LAG, V_PTTFT, V_PLAT, V_REASON,
  V_TTST, V_TPOT, V_TPS_ITL, V_TTFO, V_LAT_TEXT, V_GEN, V_VTTFT, V_VE2EL, V_VTPOT, V_VOUT, V_ITLA, V_TPSA, V_COUNT
};

/* A level's running totals while its records are walked. */
typedef struct level_acc {
  double *v[V_COUNT]; /* each metric's value list */
  size_t nv[V_COUNT];
  uint64_t min_sent_ns, max_done_ns, max_sent_ns, n_sent;
  uint64_t out_tokens_sum, in_tokens_sum;
  double out_diff_sum, in_diff_sum;
  const tp_record *first_failed;
  bool goodput;
} level_acc;

static inline void push(level_acc *a, int k, double x) {
  a->v[k][a->nv[k]++] = x;
}

/* Pushes x when the request has that figure (x >= 0). */
static inline void push_have(level_acc *a, int k, double x) {
  if (x >= 0) push(a, k, x);
}

/* Goodput: every set bound met; a bound on a figure the request does not
 * have (no first token, no ITL) is not met, except ITL for a request
 * counted at fewer than two tokens, which has no gaps to be slow in.  A
 * request without counted tokens, or whose text came in one response,
 * cannot show its ITL: it fails the bound and is counted as unjudged, so
 * the report can say the bound was not really tested. */
static void judge_goodput(tp_level_result *out, const tp_req_metrics *m, const tp_level_opts *o) {
  bool ok = true, unjudged = false;
  bool uncounted = m->output_tokens < 0 || m->generated_tokens >= 2;
  if (o->goodput_ttft_ms > 0) ok &= m->ttft_ms >= 0 && m->ttft_ms <= o->goodput_ttft_ms;
  if (o->goodput_itl_ms > 0) {
    if (m->itl_ms >= 0) {
      ok &= m->itl_ms <= o->goodput_itl_ms;
    } else if (uncounted) {
      ok = false;
      unjudged = true;
    }
  }
  if (o->goodput_latency_ms > 0) ok &= m->latency_ms >= 0 && m->latency_ms <= o->goodput_latency_ms;
  /* TPOT, time to second token and per-user throughput the same way as
   * ITL: no figure fails the bound, unjudged, unless the request was
   * counted at fewer than two tokens.  A request unjudged on several
   * bounds counts once. */
  if (o->goodput_tpot_ms > 0) {
    if (m->tpot_ms >= 0) {
      ok &= m->tpot_ms <= o->goodput_tpot_ms;
    } else if (uncounted) {
      ok = false;
      unjudged = true;
    }
  }
  if (o->goodput_ttst_ms > 0) {
    if (m->ttst_ms >= 0) {
      ok &= m->ttst_ms <= o->goodput_ttst_ms;
    } else if (uncounted) {
      ok = false;
      unjudged = true;
    }
  }
  /* A floor, not a ceiling (GenAI-Perf's throughput bounds). */
  if (o->goodput_tps_per_user_min > 0) {
    if (m->output_tps_per_user_itl >= 0) {
      ok &= m->output_tps_per_user_itl >= o->goodput_tps_per_user_min;
    } else if (uncounted) {
      ok = false;
      unjudged = true;
    }
  }
  if (unjudged) out->goodput_unjudged++;
  if (ok) out->goodput_requests++;
}

/* The server's own token counts beside the client's. */
static void add_usage(tp_level_result *out, level_acc *a, const tp_record *r, const tp_req_metrics *m) {
  if (r->server_counts & TP_RECORD_SERVER_OUTPUT) out->tokens_from_server_output++;
  if (r->server_counts & TP_RECORD_SERVER_INPUT) out->tokens_from_server_input++;
  if (r->server_output_tokens >= 0 || r->server_input_tokens >= 0) {
    out->usage_reported++;
    double d = m->usage_output_diff;
    if (d >= 0) {
      out->usage_output_compared++;
      a->out_diff_sum += d;
      if (d > out->usage_output_diff_max) out->usage_output_diff_max = d;
      if (d > 0) out->usage_output_mismatches++;
    }
    d = m->usage_input_diff;
    if (d >= 0) {
      out->usage_input_compared++;
      a->in_diff_sum += d;
      if (d > out->usage_input_diff_max) out->usage_input_diff_max = d;
      if (d > 0) out->usage_input_mismatches++;
    }
  }
  if (r->server_cached_tokens > 0) out->cached_tokens += (uint64_t)r->server_cached_tokens;
}

/* A successful request's figures into the level's lists. */
static void add_success(tp_level_result *out, level_acc *a, const tp_record *r, const tp_req_metrics *m,
                        const tp_level_opts *o) {
  out->succeeded++;
  push_have(a, V_LAT, m->latency_ms);
  push_have(a, V_LAT_TEXT, m->latency_last_text_ms);
  push_have(a, V_VTTFT, m->vllm_ttft_ms);
  push_have(a, V_VE2EL, m->vllm_e2el_ms);
  push_have(a, V_VTPOT, m->vllm_tpot_ms);
  push_have(a, V_VOUT, (double)m->vllm_output_tokens);
  push_have(a, V_TTFT, m->ttft_ms);
  push_have(a, V_TTST, m->ttst_ms);
  push_have(a, V_TTFO, m->ttfo_ms);
  push(a, V_RESP, (double)m->responses);
  push_have(a, V_PTTFT, m->ttft_from_planned_ms);
  push_have(a, V_PLAT, m->latency_from_planned_ms);
  /* ITL over responses of one time: marked, or (all at one time) none. */
  if (m->itl_all_merged)
    out->fidelity.itl_all_merged_requests++;
  else if (r->n_text_merged && m->itl_ms >= 0)
    out->fidelity.itl_merged_requests++;
  if (m->output_tokens >= 0) {
    out->tokens_available = true;
    a->out_tokens_sum += (uint64_t)m->output_tokens;
    push(a, V_OUT, (double)m->output_tokens);
    push(a, V_GEN, (double)m->generated_tokens);
    push_have(a, V_ITLA, m->itl_answer_ms);
    push_have(a, V_TPSA, m->output_tps_per_user_itl_answer);
    push_have(a, V_TPS, m->output_tps_per_user);
    push_have(a, V_ITL, m->itl_ms);
    push_have(a, V_TPS_ITL, m->output_tps_per_user_itl);
    push_have(a, V_TPOT, m->tpot_ms);
    if (m->length_mismatch) out->length_mismatches++;
  }
  if (a->goodput) judge_goodput(out, m, o);
  if (m->input_tokens >= 0) {
    a->in_tokens_sum += (uint64_t)m->input_tokens;
    push(a, V_IN, (double)m->input_tokens);
  }
  add_usage(out, a, r, m);
  push_have(a, V_REASON, (double)m->reasoning_tokens);
}

/* One measured record into the level. */
static void add_record(tp_level_result *out, level_acc *a, const tp_record *r, const tp_level_opts *o) {
  tp_req_metrics m;
  tp_request_metrics(r, &m);
  out->requests++;
  if (r->resends) out->reconnects++;
  /* Failed requests count towards the window too: the server was busy
   * with them, and leaving them out would flatter the throughput. */
  if (r->sent_ns && (!a->min_sent_ns || r->sent_ns < a->min_sent_ns)) a->min_sent_ns = r->sent_ns;
  if (r->sent_ns > a->max_sent_ns) a->max_sent_ns = r->sent_ns;
  if (r->done_ns > a->max_done_ns) a->max_done_ns = r->done_ns;
  if (r->sent_ns) a->n_sent++;
  if (r->sent_ns && ((r->first_resp_ns && r->first_resp_ns < r->sent_ns) || (r->done_ns && r->done_ns < r->sent_ns)))
    out->answers_before_send++;
  /* Every measured request's text responses, failed ones too: how the
   * client read is the question, not what the server answered.  A
   * response without text (a final flag, usage) often comes in one
   * segment with the last text: that hides no gap between tokens. */
  out->fidelity.merged_responses += r->n_text_merged;
  if (r->n_text_resp) out->fidelity.response_gaps += r->n_text_resp - 1;
  if (r->n_text_resp >= 2 && r->first_token_ns) {
    out->fidelity.first_pairs++;
    if (r->second_token_ns == r->first_token_ns) out->fidelity.first_merged++;
  }
  if (m.send_lag_ms >= 0) {
    push(a, V_LAG, m.send_lag_ms);
    if (m.send_lag_ms > 1.0) out->late_sends++;
  }
  if (m.ok) {
    add_success(out, a, r, &m, o);
    return;
  }
  out->failed++;
  /* A request with no error class that never finished (done_ns == 0) is
   * counted under "none", so that the classes always sum to `failed`. */
  unsigned c = (unsigned)r->err_class < TP_ERRCLASS_COUNT ? (unsigned)r->err_class : (unsigned)TP_ERRCLASS_NONE;
  out->errors_by_class[c]++;
  if (!a->first_failed || r->seq < a->first_failed->seq) a->first_failed = r;
}

static void compute_dists(tp_level_result *out, level_acc *a) {
  static const struct {
    int k;
    size_t off;
  } dists[] = {
      {V_TTFT, offsetof(tp_level_result, ttft_ms)},
      {V_ITL, offsetof(tp_level_result, itl_ms)},
      {V_LAT, offsetof(tp_level_result, latency_ms)},
      {V_OUT, offsetof(tp_level_result, output_tokens)},
      {V_IN, offsetof(tp_level_result, input_tokens)},
      {V_TPS, offsetof(tp_level_result, output_tps_per_user)},
      {V_RESP, offsetof(tp_level_result, responses)},
      {V_LAG, offsetof(tp_level_result, send_lag_ms)},
      {V_PTTFT, offsetof(tp_level_result, ttft_from_planned_ms)},
      {V_PLAT, offsetof(tp_level_result, latency_from_planned_ms)},
      {V_REASON, offsetof(tp_level_result, reasoning_tokens)},
      {V_TTST, offsetof(tp_level_result, ttst_ms)},
      {V_TTFO, offsetof(tp_level_result, ttfo_ms)},
      {V_TPOT, offsetof(tp_level_result, tpot_ms)},
      {V_TPS_ITL, offsetof(tp_level_result, output_tps_per_user_itl)},
      {V_LAT_TEXT, offsetof(tp_level_result, latency_last_text_ms)},
      {V_GEN, offsetof(tp_level_result, generated_tokens)},
      {V_VTTFT, offsetof(tp_level_result, vllm_ttft_ms)},
      {V_VE2EL, offsetof(tp_level_result, vllm_e2el_ms)},
      {V_VTPOT, offsetof(tp_level_result, vllm_tpot_ms)},
      {V_VOUT, offsetof(tp_level_result, vllm_output_tokens)},
      {V_ITLA, offsetof(tp_level_result, itl_answer_ms)},
      {V_TPSA, offsetof(tp_level_result, output_tps_per_user_itl_answer)},
  };
  for (size_t i = 0; i < sizeof(dists) / sizeof(dists[0]); i++)
    tp_stat_compute((tp_stat *)(void *)((char *)out + dists[i].off), a->v[dists[i].k], a->nv[dists[i].k]);
}

/* The level's rates, from its window and totals. */
static void compute_rates(tp_level_result *out, const level_acc *a, const tp_level_opts *o) {
  if (out->usage_output_compared) out->usage_output_diff_mean = a->out_diff_sum / (double)out->usage_output_compared;
  if (out->usage_input_compared) out->usage_input_diff_mean = a->in_diff_sum / (double)out->usage_input_compared;
  if (o && o->window_end_ns > o->window_start_ns)
    out->duration_s = (double)(o->window_end_ns - o->window_start_ns) / (double)TP_NS_PER_S;
  else if (a->min_sent_ns && a->max_done_ns > a->min_sent_ns)
    out->duration_s = (double)(a->max_done_ns - a->min_sent_ns) / (double)TP_NS_PER_S;
  if (a->n_sent >= 2 && a->max_sent_ns > a->min_sent_ns)
    out->achieved_send_rate =
        (double)(a->n_sent - 1) / ((double)(a->max_sent_ns - a->min_sent_ns) / (double)TP_NS_PER_S);
  if (out->requests) out->error_rate = (double)out->failed / (double)out->requests;
  if (a->goodput) {
    out->goodput_set = true;
    if (out->requests) out->goodput_fraction = (double)out->goodput_requests / (double)out->requests;
  }
  /* A zero-length window has no meaningful rate; 0 (shown as such) is
   * better than infinity. */
  if (out->duration_s > 0) {
    out->output_token_throughput = (double)a->out_tokens_sum / out->duration_s;
    out->input_token_throughput = (double)a->in_tokens_sum / out->duration_s;
    out->request_throughput = (double)out->succeeded / out->duration_s;
    if (a->goodput) out->goodput_rps = (double)out->goodput_requests / out->duration_s;
  }
}

static void first_error(tp_level_result *out, const tp_record *f) {
  if (!f) return;
  const char *name = f->err_class == TP_ERRCLASS_NONE ? "unfinished" : class_name(f->err_class);
  const char *msg = f->err_msg;
  if (msg && *msg)
    snprintf(out->first_error, sizeof(out->first_error), "%s: %s", name, msg);
  else if (f->err_class == TP_ERRCLASS_NONE)
    snprintf(out->first_error, sizeof(out->first_error), "%s: no final response", name);
  else
    snprintf(out->first_error, sizeof(out->first_error), "%s", name);
}

/* The fidelity figures the records give; those the run measures (loop
 * lag, reads, CPU) stay unmeasured (-1) until it sets them and judges
 * again. */
static void fidelity_figures(tp_level_result *out) {
  tp_fidelity *f = &out->fidelity;
  f->merged_pct = f->response_gaps ? 100.0 * (double)f->merged_responses / (double)f->response_gaps : NAN;
  f->first_merged_pct = f->first_pairs ? 100.0 * (double)f->first_merged / (double)f->first_pairs : NAN;
  f->wall_s = f->reads_per_s = f->client_cpu_pct = f->process_cpu_pct = -1;
  tp_fidelity_judge(out);
}

int tp_level_compute(tp_level_result *out, const tp_record *recs, size_t n) {
  return tp_level_compute_ex(out, recs, n, NULL);
}

int tp_level_compute_ex(tp_level_result *out, const tp_record *recs, size_t n, const tp_level_opts *o) {
  memset(out, 0, sizeof(*out));
  if (n == 0) {
    fidelity_figures(out);
    return 0;
  }

  /* One block holds every metric's value list: V_COUNT slices of n.  A
   * few records (report.html computes each request's own values through
   * here, a million calls for a million requests) use the stack. */
  if (n > SIZE_MAX / sizeof(double) / V_COUNT) return TP_ENOMEM;
  double small[4 * V_COUNT];
  double *block = n <= 4 ? small : malloc(n * V_COUNT * sizeof(double));
  if (!block) return TP_ENOMEM;
  level_acc a = {0};
  for (int k = 0; k < V_COUNT; k++) a.v[k] = block + (size_t)k * n;
  a.goodput = o && (o->goodput_ttft_ms > 0 || o->goodput_itl_ms > 0 || o->goodput_latency_ms > 0 ||
                    o->goodput_tpot_ms > 0 || o->goodput_ttst_ms > 0 || o->goodput_tps_per_user_min > 0);

  for (size_t i = 0; i < n; i++)
    if (!recs[i].warmup) add_record(out, &a, &recs[i], o);

  compute_dists(out, &a);
  if (block != small) free(block);
  compute_rates(out, &a, o);
  if (o) {
    tp_gap_pool_stat(o->gaps, &out->itl_pooled_ms);
    if (o->vllm_gaps) tp_gap_pool_stat(o->vllm_gaps, &out->vllm_itl_ms);
    out->fidelity.itl_pooled_merged_gaps = tp_gap_pool_merged(o->gaps);
  }
  first_error(out, a.first_failed);
  fidelity_figures(out);
  return 0;
}

/* Exact statistics over per-request records.
 *
 * docs/metrics.md defines every figure; this file is the only place they are
 * computed.  When the two disagree, the document states the intent and this
 * file has the bug. */
#include "tp_stats.h"
#include "tokperf/tokperf.h"

#include <math.h>
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

/* Milliseconds between two monotonic timestamps.  Returns false when either
 * did not happen (0) or they are out of order, so a half-recorded request
 * drops out of that one figure instead of adding a huge unsigned wrap. */
static bool span_ms(uint64_t from_ns, uint64_t to_ns, double *out) {
  if (!from_ns || !to_ns || to_ns < from_ns) return false;
  *out = (double)(to_ns - from_ns) / (double)TP_NS_PER_MS;
  return true;
}

/* Output tokens plus reasoning tokens (when the request had reasoning and
 * they were counted); -1 when the output was not counted. */
static int64_t generated_tokens(const tp_record *r) {
  if (r->output_tokens < 0) return -1;
  int64_t n = r->output_tokens;
  if (r->reasoning_tokens > 0 && tp_record_has_reasoning(r)) n += r->reasoning_tokens;
  return n;
}

/* The client tokenizer's counts, whichever counts the record reports
 * (--token-source); -1 = not counted. */
static int64_t client_input_tokens(const tp_record *r) {
  return r->server_counts & TP_RECORD_SERVER_INPUT ? r->client_input_tokens : r->input_tokens;
}

static int64_t client_generated_tokens(const tp_record *r) {
  int64_t n = r->server_counts & TP_RECORD_SERVER_OUTPUT ? r->client_output_tokens : r->output_tokens;
  if (n < 0) return -1;
  if (r->reasoning_tokens > 0 && tp_record_has_reasoning(r)) n += r->reasoning_tokens;
  return n;
}

enum {
  V_TTFT, V_ITL, V_LAT, V_OUT, V_IN, V_TPS, V_RESP, V_LAG, V_PTTFT, V_PLAT, V_REASON,
  V_TTST, V_TPOT, V_TPS_ITL, V_TTFO, V_COUNT
};

int tp_level_compute(tp_level_result *out, const tp_record *recs, size_t n) {
  return tp_level_compute_ex(out, recs, n, NULL);
}

int tp_level_compute_ex(tp_level_result *out, const tp_record *recs, size_t n, const tp_level_opts *o) {
  memset(out, 0, sizeof(*out));
  if (n == 0) return 0;

  /* One block holds every metric's value list: V_COUNT slices of n.  A
   * few records (report.html computes each request's own values through
   * here, a million calls for a million requests) use the stack. */
  if (n > SIZE_MAX / sizeof(double) / V_COUNT) return TP_ENOMEM;
  double small[4 * V_COUNT];
  double *block = n <= 4 ? small : malloc(n * V_COUNT * sizeof(double));
  if (!block) return TP_ENOMEM;
  double *v[V_COUNT];
  size_t nv[V_COUNT] = {0};
  for (int k = 0; k < V_COUNT; k++) v[k] = block + (size_t)k * n;

  uint64_t min_sent_ns = 0, max_done_ns = 0, max_sent_ns = 0;
  uint64_t n_sent = 0;
  bool goodput = o && (o->goodput_ttft_ms > 0 || o->goodput_itl_ms > 0 || o->goodput_latency_ms > 0 ||
                       o->goodput_tpot_ms > 0);
  uint64_t out_tokens_sum = 0, in_tokens_sum = 0;
  double out_diff_sum = 0, in_diff_sum = 0;
  const tp_record *first_failed = NULL;

  for (size_t i = 0; i < n; i++) {
    const tp_record *r = &recs[i];
    if (r->warmup) continue;
    out->requests++;
    if (r->resends) out->reconnects++;

    /* Failed requests count towards the window too: the server was busy
     * with them, and leaving them out would flatter the throughput. */
    if (r->sent_ns && (!min_sent_ns || r->sent_ns < min_sent_ns))
      min_sent_ns = r->sent_ns;
    if (r->sent_ns > max_sent_ns) max_sent_ns = r->sent_ns;
    if (r->done_ns > max_done_ns) max_done_ns = r->done_ns;
    if (r->sent_ns) n_sent++;
    /* Send lag: how late the client released the request against its plan
     * (scheduler jitter, a full in-flight cap, transport queueing). */
    if (r->sent_ns && r->planned_ns && r->sent_ns >= r->planned_ns) {
      double lag = (double)(r->sent_ns - r->planned_ns) / (double)TP_NS_PER_MS;
      v[V_LAG][nv[V_LAG]++] = lag;
      if (lag > 1.0) out->late_sends++;
    }

    if (!tp_record_ok(r)) {
      out->failed++;
      /* A request with no error class that never finished (done_ns == 0)
       * is counted under "none", so that the classes always sum to
       * `failed`. */
      unsigned c = (unsigned)r->err_class < TP_ERRCLASS_COUNT
                       ? (unsigned)r->err_class
                       : (unsigned)TP_ERRCLASS_NONE;
      out->errors_by_class[c]++;
      if (!first_failed || r->seq < first_failed->seq) first_failed = r;
      continue;
    }
    out->succeeded++;

    double lat_ms = 0, x;
    bool have_lat = span_ms(r->sent_ns, r->done_ns, &lat_ms);
    if (have_lat) v[V_LAT][nv[V_LAT]++] = lat_ms;
    double ttft = -1, itl = -1, tpot = -1;
    if (span_ms(r->sent_ns, r->first_token_ns, &x)) v[V_TTFT][nv[V_TTFT]++] = ttft = x;
    /* Time to second token: needs no tokenizer, only two text responses. */
    if (span_ms(r->first_token_ns, r->second_token_ns, &x)) v[V_TTST][nv[V_TTST]++] = x;
    /* The first answer token, after any reasoning: TTFT for other models. */
    if (span_ms(r->sent_ns, r->first_answer_ns, &x)) v[V_TTFO][nv[V_TTFO]++] = x;
    v[V_RESP][nv[V_RESP]++] = (double)r->n_resp;
    /* From the planned time: what a user arriving on schedule waited,
     * client queueing included (coordinated omission shows here). */
    if (span_ms(r->planned_ns, r->first_token_ns, &x)) v[V_PTTFT][nv[V_PTTFT]++] = x;
    if (span_ms(r->planned_ns, r->done_ns, &x)) v[V_PLAT][nv[V_PLAT]++] = x;

    /* Every generated token, reasoning and answer: the time from the first
     * to the last of either kind is spent generating all of them. */
    int64_t gen = generated_tokens(r);
    if (r->output_tokens >= 0) {
      out->tokens_available = true;
      out_tokens_sum += (uint64_t)r->output_tokens;
      v[V_OUT][nv[V_OUT]++] = (double)r->output_tokens;
      if (have_lat && lat_ms > 0)
        v[V_TPS][nv[V_TPS]++] = (double)r->output_tokens / (lat_ms / 1000.0);
      /* A unary answer brings all its text at once: it has no gaps between
       * tokens to measure, and a 0 would only drag the figure down. */
      if (gen >= 2 && r->n_text_resp >= 2 && span_ms(r->first_token_ns, r->last_token_ns, &x)) {
        v[V_ITL][nv[V_ITL]++] = itl = x / (double)(gen - 1);
        /* GenAI-Perf's per-user throughput: the rate of the decode phase. */
        if (itl > 0) v[V_TPS_ITL][nv[V_TPS_ITL]++] = 1000.0 / itl;
      }
      /* vLLM's TPOT: from the first token to the end of the request (a
       * trailing usage-only response included), over the tokens after the
       * first; a unary answer has one too, as vLLM gives it. */
      if (gen >= 2 && span_ms(r->first_token_ns, r->done_ns, &x))
        v[V_TPOT][nv[V_TPOT]++] = tpot = x / (double)(gen - 1);
      /* max_tokens bounds reasoning and answer together. */
      if (r->max_tokens > 0 && (uint64_t)gen != r->max_tokens) out->length_mismatches++;
    }
    /* Goodput: every set bound met; a bound on a figure the request does not
     * have (no first token, no ITL) is not met, except ITL for a request
     * counted at fewer than two tokens, which has no gaps to be slow in.  A
     * request without counted tokens, or whose text came in one response,
     * cannot show its ITL: it fails the bound and is counted as unjudged,
     * so the report can say the bound was not really tested. */
    if (goodput) {
      bool ok = true;
      if (o->goodput_ttft_ms > 0) ok &= ttft >= 0 && ttft <= o->goodput_ttft_ms;
      if (o->goodput_itl_ms > 0) {
        if (itl >= 0) {
          ok &= itl <= o->goodput_itl_ms;
        } else if (r->output_tokens < 0 || gen >= 2) {
          ok = false;
          out->goodput_unjudged++;
        }
      }
      if (o->goodput_latency_ms > 0) ok &= have_lat && lat_ms <= o->goodput_latency_ms;
      /* TPOT the same way as ITL: no count, no figure, unless fewer than
       * two tokens.  A request unjudged on both bounds counts once. */
      if (o->goodput_tpot_ms > 0) {
        if (tpot >= 0) {
          ok &= tpot <= o->goodput_tpot_ms;
        } else if (r->output_tokens < 0 || gen >= 2) {
          ok = false;
          if (!(o->goodput_itl_ms > 0 && itl < 0)) out->goodput_unjudged++;
        }
      }
      if (ok) out->goodput_requests++;
    }
    if (r->input_tokens >= 0) {
      in_tokens_sum += (uint64_t)r->input_tokens;
      v[V_IN][nv[V_IN]++] = (double)r->input_tokens;
    }
    if (r->server_counts & TP_RECORD_SERVER_OUTPUT) out->tokens_from_server_output++;
    if (r->server_counts & TP_RECORD_SERVER_INPUT) out->tokens_from_server_input++;
    /* The server's own counts beside the client's. */
    if (r->server_output_tokens >= 0 || r->server_input_tokens >= 0) {
      out->usage_reported++;
      /* A server's completion count includes the reasoning tokens. */
      int64_t cgen = client_generated_tokens(r), cin = client_input_tokens(r);
      if (r->server_output_tokens >= 0 && cgen >= 0) {
        double d = fabs((double)r->server_output_tokens - (double)cgen);
        out->usage_output_compared++;
        out_diff_sum += d;
        if (d > out->usage_output_diff_max) out->usage_output_diff_max = d;
        if (d > 0) out->usage_output_mismatches++;
      }
      if (r->server_input_tokens >= 0 && cin >= 0) {
        double d = fabs((double)r->server_input_tokens - (double)cin);
        out->usage_input_compared++;
        in_diff_sum += d;
        if (d > out->usage_input_diff_max) out->usage_input_diff_max = d;
        if (d > 0) out->usage_input_mismatches++;
      }
    }
    if (r->server_cached_tokens > 0) out->cached_tokens += (uint64_t)r->server_cached_tokens;
    if (r->reasoning_tokens >= 0 && tp_record_has_reasoning(r)) v[V_REASON][nv[V_REASON]++] = (double)r->reasoning_tokens;
  }

  if (out->usage_output_compared) out->usage_output_diff_mean = out_diff_sum / (double)out->usage_output_compared;
  if (out->usage_input_compared) out->usage_input_diff_mean = in_diff_sum / (double)out->usage_input_compared;
  tp_stat_compute(&out->ttft_ms, v[V_TTFT], nv[V_TTFT]);
  tp_stat_compute(&out->itl_ms, v[V_ITL], nv[V_ITL]);
  tp_stat_compute(&out->latency_ms, v[V_LAT], nv[V_LAT]);
  tp_stat_compute(&out->output_tokens, v[V_OUT], nv[V_OUT]);
  tp_stat_compute(&out->input_tokens, v[V_IN], nv[V_IN]);
  tp_stat_compute(&out->output_tps_per_user, v[V_TPS], nv[V_TPS]);
  tp_stat_compute(&out->responses, v[V_RESP], nv[V_RESP]);
  tp_stat_compute(&out->send_lag_ms, v[V_LAG], nv[V_LAG]);
  tp_stat_compute(&out->ttft_from_planned_ms, v[V_PTTFT], nv[V_PTTFT]);
  tp_stat_compute(&out->latency_from_planned_ms, v[V_PLAT], nv[V_PLAT]);
  tp_stat_compute(&out->reasoning_tokens, v[V_REASON], nv[V_REASON]);
  tp_stat_compute(&out->ttst_ms, v[V_TTST], nv[V_TTST]);
  tp_stat_compute(&out->ttfo_ms, v[V_TTFO], nv[V_TTFO]);
  tp_stat_compute(&out->tpot_ms, v[V_TPOT], nv[V_TPOT]);
  tp_stat_compute(&out->output_tps_per_user_itl, v[V_TPS_ITL], nv[V_TPS_ITL]);
  if (block != small) free(block);

  if (o && o->window_end_ns > o->window_start_ns)
    out->duration_s = (double)(o->window_end_ns - o->window_start_ns) / (double)TP_NS_PER_S;
  else if (min_sent_ns && max_done_ns > min_sent_ns)
    out->duration_s = (double)(max_done_ns - min_sent_ns) / (double)TP_NS_PER_S;
  if (n_sent >= 2 && max_sent_ns > min_sent_ns)
    out->achieved_send_rate = (double)(n_sent - 1) / ((double)(max_sent_ns - min_sent_ns) / (double)TP_NS_PER_S);
  if (out->requests) out->error_rate = (double)out->failed / (double)out->requests;
  if (goodput) {
    out->goodput_set = true;
    if (out->requests) out->goodput_fraction = (double)out->goodput_requests / (double)out->requests;
  }
  /* A zero-length window has no meaningful rate; 0 (shown as such) is
   * better than infinity. */
  if (out->duration_s > 0) {
    out->output_token_throughput = (double)out_tokens_sum / out->duration_s;
    out->input_token_throughput = (double)in_tokens_sum / out->duration_s;
    out->request_throughput = (double)out->succeeded / out->duration_s;
    if (goodput) out->goodput_rps = (double)out->goodput_requests / out->duration_s;
  }

  if (first_failed) {
    const char *name = first_failed->err_class == TP_ERRCLASS_NONE
                           ? "unfinished"
                           : class_name(first_failed->err_class);
    const char *msg = first_failed->err_msg;
    if (msg && *msg)
      snprintf(out->first_error, sizeof(out->first_error), "%s: %s", name, msg);
    else if (first_failed->err_class == TP_ERRCLASS_NONE)
      snprintf(out->first_error, sizeof(out->first_error),
               "%s: no final response", name);
    else
      snprintf(out->first_error, sizeof(out->first_error), "%s", name);
  }
  return 0;
}

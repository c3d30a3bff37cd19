/* A level's steady state (tp_steady.h). */
#include "tp_steady.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/tp_request.h"
#include "metrics/tp_stats.h"
#include "util/tp_common.h"

/* A window shorter than this many seconds, or than this share of the
 * level, is marked: a plateau of a few requests says little. */
#define STEADY_MIN_S 10.0
#define STEADY_MIN_SHARE 0.10

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

static bool counted(const tp_record *r) {
  return !r->warmup && tp_record_ok(r) && r->sent_ns && r->done_ns >= r->sent_ns;
}

/* The window's bounds from the sorted starts and ends: the first
 * up-crossing of k and the last down-crossing below it. */
static bool find_window(const uint64_t *st, const uint64_t *en, size_t m, uint32_t k, uint64_t *a, uint64_t *b,
                        uint32_t *peak) {
  size_t i = 0, j = 0;
  uint32_t c = 0;
  bool up = false, down = false;
  *peak = 0;
  while (i < m || j < m) {
    bool end = j < m && (i >= m || en[j] <= st[i]);
    if (end) {
      uint32_t before = c;
      c = c ? c - 1 : 0;
      if (before >= k && c < k) {
        *b = en[j];
        down = true;
      }
      j++;
    } else {
      uint32_t before = c++;
      if (c > *peak) *peak = c;
      if (before < k && c >= k && !up) {
        *a = st[i];
        up = true;
      }
      i++;
    }
  }
  if (up && !down) *b = en[m - 1]; /* cannot happen: the ends drain the count to 0 */
  return up;
}

/* Output tokens of r that arrived in [a, b).  A finished request keeps
 * the times of its first and last text, not of every response (docs/
 * metrics.md, "Memory over long runs"), so its tokens are placed evenly
 * over that span: token k of n at first + k (last - first) / (n - 1), all
 * at the first text when there is one token or one time.  At a steady
 * pace this is where a token per chunk arrives.  NaN: no count. */
static double tokens_in(const tp_record *r, const tp_req_metrics *m, uint64_t a, uint64_t b) {
  if (m->output_tokens < 0) return NAN;
  if (m->output_tokens == 0 || !r->first_token_ns) return 0;
  int64_t n = m->output_tokens;
  double f = (double)r->first_token_ns, l = (double)(r->last_token_ns ? r->last_token_ns : r->first_token_ns);
  if (n == 1 || l <= f) return f >= (double)a && f < (double)b ? (double)n : 0;
  double lo = (double)a, hi = (double)b, step = (l - f) / (double)(n - 1);
  if (l < lo || f >= hi) return 0;
  double sum = 0;
  for (int64_t k = 0; k < n; k++) {
    double t = f + (double)k * step;
    if (t >= hi) break;
    if (t >= lo) sum += 1;
  }
  return sum;
}

int tp_steady_compute(tp_steady *out, const tp_record *recs, size_t n, uint32_t target, double threshold,
                      double level_s) {
  memset(out, 0, sizeof(*out));
  out->target = target;
  out->threshold = threshold;
  out->request_throughput = out->input_token_throughput = out->output_token_throughput = NAN;
  out->duration_s = out->start_s = out->end_s = NAN;
  if (target == 0 || !(threshold > 0)) return 0;
  double kd = ceil(threshold * (double)target);
  out->threshold_abs = kd < 1 ? 1 : kd > (double)UINT32_MAX ? UINT32_MAX : (uint32_t)kd;

  size_t m = 0;
  for (size_t i = 0; i < n; i++) m += counted(&recs[i]);
  if (m == 0) return 0;
  uint64_t *st = malloc(2 * m * sizeof(*st));
  double *vals = malloc(3 * m * sizeof(*vals));
  if (!st || !vals) {
    free(st);
    free(vals);
    return TP_ENOMEM;
  }
  uint64_t *en = st + m;
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (counted(&recs[i])) {
      st[k] = recs[i].sent_ns;
      en[k++] = recs[i].done_ns;
    }
  qsort(st, m, sizeof(*st), cmp_u64);
  qsort(en, m, sizeof(*en), cmp_u64);
  uint64_t a = 0, b = 0, first = st[0], last = en[m - 1];
  out->found = find_window(st, en, m, out->threshold_abs, &a, &b, &out->peak);
  if (!out->found) goto done;

  double *ttft = vals, *tpot = vals + m, *lat = vals + 2 * m;
  size_t nt = 0, np = 0, nl = 0;
  double in_tokens = 0, out_tokens = 0;
  bool in_known = true;
  for (size_t i = 0; i < n; i++) {
    const tp_record *r = &recs[i];
    if (!counted(r)) continue;
    tp_req_metrics rm;
    tp_request_metrics(r, &rm);
    bool started = r->sent_ns >= a && r->sent_ns < b;
    if (r->done_ns >= a && r->done_ns < b) out->completed++;
    out_tokens += tokens_in(r, &rm, a, b);
    if (!started) continue;
    out->started++;
    if (rm.input_tokens >= 0)
      in_tokens += (double)rm.input_tokens;
    else
      in_known = false;
    if (rm.ttft_ms >= 0) ttft[nt++] = rm.ttft_ms;
    if (rm.tpot_ms >= 0) tpot[np++] = rm.tpot_ms;
    if (rm.latency_ms >= 0) lat[nl++] = rm.latency_ms;
  }
  if (out->started == 0 && out->completed == 0) {
    out->found = false;
    goto done;
  }
  out->start_s = (double)(a - first) / 1e9;
  out->end_s = (double)(b - first) / 1e9;
  out->duration_s = out->end_s - out->start_s;
  double span = out->duration_s > 0 ? out->duration_s : 1e-9;
  out->request_throughput = (double)out->completed / span;
  out->input_token_throughput = in_known ? in_tokens / span : NAN;
  out->output_token_throughput = out_tokens / span; /* NaN: a count was missing */
  tp_stat_compute(&out->ttft_ms, ttft, nt);
  tp_stat_compute(&out->tpot_ms, tpot, np);
  tp_stat_compute(&out->latency_ms, lat, nl);
  if (!(level_s > 0)) level_s = (double)(last - first) / 1e9;
  double min_s = STEADY_MIN_S > STEADY_MIN_SHARE * level_s ? STEADY_MIN_S : STEADY_MIN_SHARE * level_s;
  out->short_window = out->duration_s < min_s;
done:
  if (!out->found) {
    out->request_throughput = out->input_token_throughput = out->output_token_throughput = NAN;
    out->duration_s = out->start_s = out->end_s = NAN;
  }
  free(st);
  free(vals);
  return 0;
}

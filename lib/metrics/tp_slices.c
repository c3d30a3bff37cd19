/* A level's time series (tp_slices.h). */
#include "tp_slices.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/tp_request.h"
#include "metrics/tp_stats.h"

static bool counted(const tp_record *r) {
  return !r->warmup && r->sent_ns;
}

/* Values grouped by slice: a counting sort, so that each slice's values
 * lie together for tp_stat_compute. */
typedef struct grouped {
  size_t *off; /* n + 1 */
  double *v;
} grouped;

typedef struct cut {
  uint64_t t0, w, end;
  size_t n;
} cut;

static size_t slice_of(const cut *c, uint64_t t) {
  if (t <= c->t0) return 0;
  uint64_t i = (t - c->t0) / c->w;
  return i >= c->n ? c->n - 1 : (size_t)i;
}

/* The slice of a time that is not a whole nanosecond (a token placed
 * between two stamps): the same floor, in doubles. */
static size_t slice_of_d(const cut *c, double t) {
  double i = floor((t - (double)c->t0) / (double)c->w);
  if (!(i > 0)) return 0;
  return i >= (double)c->n ? c->n - 1 : (size_t)i;
}

/* The output tokens of r placed evenly over its text's span: token k of m
 * at first + k (last - first) / (m - 1), all at the first text when there
 * is one token or one time.  A finished record keeps only its first and
 * last text times (docs/metrics.md, "Memory over long runs"); at a steady
 * pace this is where a token per chunk arrives.  The same rule as the
 * steady state's (tp_steady.c). */
static void place_tokens(tp_slice *s, const cut *c, const tp_record *r, int64_t m) {
  uint64_t f = r->first_token_ns, l = r->last_token_ns ? r->last_token_ns : r->first_token_ns;
  if (m < 0) {
    for (size_t i = slice_of(c, f); i <= slice_of(c, l); i++) s[i].output_tokens = NAN;
    return;
  }
  if (m == 0) return;
  if (m == 1 || l <= f) {
    s[slice_of(c, f)].output_tokens += (double)m;
    return;
  }
  double fd = (double)f, step = ((double)l - fd) / (double)(m - 1);
  for (int64_t k = 0; k < m; k++) s[slice_of_d(c, fd + (double)k * step)].output_tokens += 1;
}

/* Nanoseconds of [a, b) within each slice, added to busy. */
static void add_in_flight(uint64_t *busy, const cut *c, uint64_t a, uint64_t b) {
  if (a < c->t0) a = c->t0;
  if (b > c->end) b = c->end;
  if (b <= a) return;
  for (size_t i = slice_of(c, a); i < c->n; i++) {
    uint64_t s0 = c->t0 + (uint64_t)i * c->w, s1 = i + 1 == c->n ? c->end : s0 + c->w;
    uint64_t lo = a > s0 ? a : s0, hi = b < s1 ? b : s1;
    if (hi > lo) busy[i] += hi - lo;
    if (b <= s1) break;
  }
}

int tp_slices_compute(tp_slice **out, size_t *n_out, const tp_record *recs, size_t n, uint64_t start_ns,
                      uint64_t *width_ns) {
  *out = NULL;
  *n_out = 0;
  if (!*width_ns) return TP_EINVAL;
  uint64_t end = 0;
  size_t m = 0;
  for (size_t i = 0; i < n; i++) {
    const tp_record *r = &recs[i];
    if (!counted(r)) continue;
    m++;
    uint64_t t[] = {r->sent_ns, r->first_token_ns, r->last_token_ns, r->done_ns};
    for (size_t k = 0; k < 4; k++)
      if (t[k] > end) end = t[k];
  }
  if (!m) return 0;
  if (end < start_ns) end = start_ns;
  /* Widen until the level fits in TP_SLICES_MAX slices. */
  while ((end - start_ns) / *width_ns >= TP_SLICES_MAX) *width_ns *= 2;
  cut c = {start_ns, *width_ns, end, 0};
  uint64_t span = end - start_ns;
  c.n = (size_t)(span / c.w + (span % c.w != 0));
  if (c.n == 0) c.n = 1;

  tp_slice *s = calloc(c.n, sizeof(*s));
  uint64_t *busy = calloc(c.n, sizeof(*busy));
  /* Three groups (TTFT, ITL, send lag): offsets and values. */
  size_t *off = calloc(3 * (c.n + 1), sizeof(*off));
  double *vals = malloc(3 * m * sizeof(*vals));
  if (!s || !busy || !off || !vals) {
    free(s);
    free(busy);
    free(off);
    free(vals);
    return TP_ENOMEM;
  }
  grouped g[3];
  for (int k = 0; k < 3; k++) {
    g[k].off = off + (size_t)k * (c.n + 1);
    g[k].v = vals + (size_t)k * m;
  }
  for (size_t i = 0; i < c.n; i++) {
    uint64_t s0 = (uint64_t)i * c.w, s1 = i + 1 == c.n ? span : s0 + c.w;
    s[i].start_s = (double)s0 / 1e9;
    s[i].end_s = (double)s1 / 1e9;
    s[i].send_lag_p99_ms = NAN;
  }

  /* First pass: the counts, the sums and the group sizes. */
  for (size_t i = 0; i < n; i++) {
    const tp_record *r = &recs[i];
    if (!counted(r)) continue;
    if (r->done_ns >= r->sent_ns) add_in_flight(busy, &c, r->sent_ns, r->done_ns);
    if (!tp_record_ok(r)) {
      s[slice_of(&c, r->done_ns ? r->done_ns : r->sent_ns)].failed++;
      continue;
    }
    tp_req_metrics rm;
    tp_request_metrics(r, &rm);
    if (r->done_ns) s[slice_of(&c, r->done_ns)].completed++;
    size_t si = slice_of(&c, r->sent_ns);
    s[si].sent++;
    s[si].input_tokens += rm.input_tokens >= 0 ? (double)rm.input_tokens : NAN;
    if (rm.send_lag_ms >= 0) g[2].off[si + 1]++;
    if (r->first_token_ns) {
      size_t fi = slice_of(&c, r->first_token_ns);
      s[fi].first_tokens++;
      if (rm.ttft_ms >= 0) g[0].off[fi + 1]++;
      if (rm.itl_ms >= 0) g[1].off[fi + 1]++;
      place_tokens(s, &c, r, rm.output_tokens);
    }
  }
  for (int k = 0; k < 3; k++)
    for (size_t i = 0; i < c.n; i++) g[k].off[i + 1] += g[k].off[i];
  /* Second pass: each value into its slice's place. */
  size_t *fill = calloc(3 * c.n, sizeof(*fill));
  if (!fill) {
    free(s);
    free(busy);
    free(off);
    free(vals);
    return TP_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    const tp_record *r = &recs[i];
    if (!counted(r) || !tp_record_ok(r)) continue;
    tp_req_metrics rm;
    tp_request_metrics(r, &rm);
    size_t si = slice_of(&c, r->sent_ns);
    if (rm.send_lag_ms >= 0) g[2].v[g[2].off[si] + fill[2 * c.n + si]++] = rm.send_lag_ms;
    if (!r->first_token_ns) continue;
    size_t fi = slice_of(&c, r->first_token_ns);
    if (rm.ttft_ms >= 0) g[0].v[g[0].off[fi] + fill[fi]++] = rm.ttft_ms;
    if (rm.itl_ms >= 0) g[1].v[g[1].off[fi] + fill[c.n + fi]++] = rm.itl_ms;
  }
  for (size_t i = 0; i < c.n; i++) {
    tp_stat_compute(&s[i].ttft_ms, g[0].v + g[0].off[i], g[0].off[i + 1] - g[0].off[i]);
    tp_stat_compute(&s[i].itl_ms, g[1].v + g[1].off[i], g[1].off[i + 1] - g[1].off[i]);
    tp_stat lag;
    tp_stat_compute(&lag, g[2].v + g[2].off[i], g[2].off[i + 1] - g[2].off[i]);
    if (lag.n) s[i].send_lag_p99_ms = lag.p99;
    uint64_t wi = (i + 1 == c.n ? span : (uint64_t)(i + 1) * c.w) - (uint64_t)i * c.w;
    s[i].in_flight_avg = wi ? (double)busy[i] / (double)wi : NAN;
  }
  free(fill);
  free(busy);
  free(off);
  free(vals);
  *out = s;
  *n_out = c.n;
  return 0;
}

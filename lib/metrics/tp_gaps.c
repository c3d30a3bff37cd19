/* The pooled gaps between text responses (tp_gaps.h). */
#include "tp_gaps.h"
#include "tp_request.h"
#include "tp_stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Log-linear buckets: a gap under 2^SUB_BITS ns has a bucket of its own;
 * above, each power of two is cut into 2^SUB_BITS equal buckets, so a
 * bucket is at most 1/1024 of the values it holds wide. */
#define SUB_BITS 10
#define SUB (1u << SUB_BITS)
#define N_BUCKETS (SUB + (64 - SUB_BITS) * SUB)

struct tp_gap_pool {
  /* Every gap too, while there are at most exact_max (raw_dropped once
   * there were more, or memory ran out): the figures are then exact. */
  uint64_t *raw;
  size_t n_raw, cap_raw, exact_max;
  bool raw_dropped;
  uint64_t n, min_ns, max_ns;
  uint64_t merged; /* gaps of 0 between responses of one time, left out */
  double mean, m2; /* Welford's running mean and squared deviations, in ms */
  uint64_t count[N_BUCKETS];
};

static size_t bucket_of(uint64_t v) {
  if (v < SUB) return (size_t)v;
  unsigned e = 63u - (unsigned)__builtin_clzll(v); /* >= SUB_BITS */
  uint64_t mant = (v >> (e - SUB_BITS)) & (SUB - 1);
  return SUB + (size_t)(e - SUB_BITS) * SUB + (size_t)mant;
}

/* The middle of bucket b, in ns. */
static double bucket_mid(size_t b) {
  if (b < SUB) return (double)b;
  unsigned e = (unsigned)((b - SUB) / SUB) + SUB_BITS;
  uint64_t mant = (b - SUB) % SUB;
  double width = ldexp(1.0, (int)(e - SUB_BITS));
  return (double)(SUB + mant) * width + (width - 1) / 2;
}

tp_gap_pool *tp_gap_pool_new(void) {
  tp_gap_pool *p = calloc(1, sizeof(*p));
  if (!p) return NULL;
  p->exact_max = TP_GAP_POOL_EXACT_MAX;
  return p;
}

void tp_gap_pool_free(tp_gap_pool *p) {
  if (p) free(p->raw);
  free(p);
}

void tp_gap_pool_set_exact_max(tp_gap_pool *p, size_t n) {
  p->exact_max = n;
}

void tp_gap_pool_reset(tp_gap_pool *p) {
  /* The kept gaps' buffer is reused level by level. */
  uint64_t *raw = p->raw;
  size_t cap = p->cap_raw, max = p->exact_max;
  memset(p, 0, sizeof(*p));
  p->raw = raw;
  p->cap_raw = cap;
  p->exact_max = max;
}

/* Keeps gap_ns while the level's gaps fit in exact_max. */
static void keep_raw(tp_gap_pool *p, uint64_t gap_ns) {
  if (p->raw_dropped) return;
  if (p->n_raw == p->cap_raw) {
    size_t cap = p->cap_raw ? 2 * p->cap_raw : 1024;
    if (cap > p->exact_max) cap = p->exact_max;
    uint64_t *r = cap > p->cap_raw ? realloc(p->raw, cap * sizeof(*r)) : NULL;
    if (!r) {
      /* Past exact_max (or out of memory): the buckets alone. */
      free(p->raw);
      p->raw = NULL;
      p->n_raw = p->cap_raw = 0;
      p->raw_dropped = true;
      return;
    }
    p->raw = r;
    p->cap_raw = cap;
  }
  p->raw[p->n_raw++] = gap_ns;
}

void tp_gap_pool_add(tp_gap_pool *p, uint64_t gap_ns) {
  keep_raw(p, gap_ns);
  if (!p->n || gap_ns < p->min_ns) p->min_ns = gap_ns;
  if (gap_ns > p->max_ns) p->max_ns = gap_ns;
  p->n++;
  p->count[bucket_of(gap_ns)]++;
  double x = (double)gap_ns / (double)TP_NS_PER_MS;
  double d = x - p->mean;
  p->mean += d / (double)p->n;
  p->m2 += d * (x - p->mean);
}

void tp_gap_pool_add_record(tp_gap_pool *p, const tp_record *r) {
  uint32_t i0, i1;
  if (!tp_request_text_span(r, &i0, &i1)) return;
  for (uint32_t i = i0 + 1; i <= i1; i++) {
    /* Two responses of one time came in one read (or one segment the
     * kernel merged): the client never saw the gap between them, and a 0
     * here would be presented as one the server left. */
    if (r->resp_ns[i] == r->resp_ns[i - 1])
      p->merged++;
    else if (r->resp_ns[i] > r->resp_ns[i - 1])
      tp_gap_pool_add(p, r->resp_ns[i] - r->resp_ns[i - 1]);
  }
}

void tp_gap_pool_add_vllm(tp_gap_pool *p, const tp_record *r) {
  if (!r->resp_ns || r->n_resp < 2) return;
  /* vLLM's chunks: up to the last one with choices, by count (a usage
   * chunk read with it shares its time); without choices marked, up to
   * the last text response. */
  uint32_t n = r->n_choice_resp;
  if (!n)
    while (n < r->n_resp && r->resp_ns[n] <= r->last_token_ns) n++;
  for (uint32_t i = 1; i < n; i++) {
    /* vLLM stamps each chunk as it parses it: chunks read together give
     * it gaps of a few microseconds, which it pools; a gap of 0 here is
     * such a gap, and goes in as vLLM's does. */
    if (r->resp_ns[i] == r->resp_ns[i - 1]) p->merged++;
    if (r->resp_ns[i] >= r->resp_ns[i - 1]) tp_gap_pool_add(p, r->resp_ns[i] - r->resp_ns[i - 1]);
  }
}

uint64_t tp_gap_pool_merged(const tp_gap_pool *p) {
  return p ? p->merged : 0;
}

/* The value of rank k (0-based) of the sorted gaps, in ns: the middle of
 * its bucket, kept inside the exact min and max. */
static double rank_value(const tp_gap_pool *p, uint64_t k) {
  if (k == 0) return (double)p->min_ns;
  if (k >= p->n - 1) return (double)p->max_ns;
  uint64_t seen = 0;
  size_t b = 0;
  for (; b < N_BUCKETS; b++) {
    seen += p->count[b];
    if (seen > k) break;
  }
  double v = bucket_mid(b);
  if (v < (double)p->min_ns) v = (double)p->min_ns;
  if (v > (double)p->max_ns) v = (double)p->max_ns;
  return v;
}

/* numpy's default percentile (tp_stat_compute's), over the buckets. */
static double percentile_ms(const tp_gap_pool *p, double pct) {
  double rank = pct / 100.0 * (double)(p->n - 1);
  uint64_t lo = (uint64_t)floor(rank);
  double v = rank_value(p, lo);
  if (lo + 1 < p->n) v += (rank_value(p, lo + 1) - v) * (rank - (double)lo);
  return v / (double)TP_NS_PER_MS;
}

void tp_gap_pool_stat(const tp_gap_pool *p, tp_stat *st) {
  memset(st, 0, sizeof(*st));
  if (!p || !p->n) return;
  if (!p->raw_dropped && p->n_raw == p->n) {
    /* Every gap is here: the same exact figures as any distribution. */
    double *v = malloc(p->n_raw * sizeof(*v));
    if (v) {
      for (size_t i = 0; i < p->n_raw; i++) v[i] = (double)p->raw[i] / (double)TP_NS_PER_MS;
      tp_stat_compute(st, v, p->n_raw);
      free(v);
      return;
    }
  }
  st->n = p->n;
  st->min = (double)p->min_ns / (double)TP_NS_PER_MS;
  st->max = (double)p->max_ns / (double)TP_NS_PER_MS;
  st->avg = p->mean < st->min ? st->min : p->mean > st->max ? st->max : p->mean;
  st->std = p->min_ns == p->max_ns ? 0 : sqrt(p->m2 / (double)p->n);
  st->p1 = percentile_ms(p, 1);
  st->p5 = percentile_ms(p, 5);
  st->p10 = percentile_ms(p, 10);
  st->p25 = percentile_ms(p, 25);
  st->p50 = percentile_ms(p, 50);
  st->p75 = percentile_ms(p, 75);
  st->p90 = percentile_ms(p, 90);
  st->p95 = percentile_ms(p, 95);
  st->p99 = percentile_ms(p, 99);
}

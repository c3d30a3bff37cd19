/* Arrival schedules: exact constant spacing, and random gaps checked against
 * their distributions with a Kolmogorov-Smirnov test at a fixed seed. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "sched/tp_sched.h"
#include "util/tp_common.h"
#include "tp_test.h"

#define N 20000

static int cmp_d(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Regularised lower incomplete gamma P(a, x): series for x < a + 1, a
 * continued fraction (Lentz) otherwise. */
static double gamma_p(double a, double x) {
  if (x <= 0) return 0;
  double gln = lgamma(a);
  if (x < a + 1) {
    double ap = a, sum = 1.0 / a, del = sum;
    for (int n = 0; n < 1000; n++) {
      ap += 1;
      del *= x / ap;
      sum += del;
      if (fabs(del) < fabs(sum) * 1e-15) break;
    }
    return sum * exp(-x + a * log(x) - gln);
  }
  double b = x + 1 - a, c = 1e300, d = 1 / b, h = d;
  for (int i = 1; i < 1000; i++) {
    double an = -i * (i - a);
    b += 2;
    d = an * d + b;
    if (fabs(d) < 1e-300) d = 1e-300;
    c = b + an / c;
    if (fabs(c) < 1e-300) c = 1e-300;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1) < 1e-15) break;
  }
  return 1 - exp(-x + a * log(x) - gln) * h;
}

/* KS statistic of the gaps against Gamma(shape, scale) (shape 1 = exponential). */
static double ks_gamma(const uint64_t *t, size_t n, double shape, double scale) {
  double *g = malloc(n * sizeof(double));
  uint64_t prev = 0;
  for (size_t i = 0; i < n; i++) {
    g[i] = (double)(t[i] - prev);
    prev = t[i];
  }
  qsort(g, n, sizeof(double), cmp_d);
  double dmax = 0;
  for (size_t i = 0; i < n; i++) {
    double f = gamma_p(shape, g[i] / scale);
    double lo = f - (double)i / n, hi = (double)(i + 1) / n - f;
    if (lo > dmax) dmax = lo;
    if (hi > dmax) dmax = hi;
  }
  free(g);
  return dmax;
}

static void test_constant(void) {
  uint64_t *t = malloc(1000 * sizeof(uint64_t));
  CHECK_INT(tp_sched_fill(t, 1000, 2000, TP_ARRIVAL_CONSTANT, 1, 7), 0, "constant schedule");
  int exact = 1;
  for (size_t i = 0; i < 1000; i++) exact &= t[i] == i * 500000ULL;
  CHECK(exact, "constant: request i at exactly i x 500 us (2,000/s)");
  CHECK_INT(tp_sched_fill(t, 3, 3, TP_ARRIVAL_CONSTANT, 1, 7), 0, "a rate whose gap is not whole ns");
  CHECK(t[1] == 333333333ULL && t[2] == 666666667ULL, "rounded per request, never drifting");
  CHECK_INT(tp_sched_fill(t, 3, 0, TP_ARRIVAL_POISSON, 1, 7), TP_EINVAL, "rate 0 rejected");
  CHECK_INT(tp_sched_fill(t, 3, 10, TP_ARRIVAL_GAMMA, 0, 7), TP_EINVAL, "burstiness 0 rejected");
  free(t);
}

static void test_random(const char *name, tp_arrival kind, double shape) {
  uint64_t *a = malloc(N * sizeof(uint64_t)), *b = malloc(N * sizeof(uint64_t));
  double rate = 1000;
  CHECK(tp_sched_fill(a, N, rate, kind, shape, 42) == 0, "%s: filled", name);
  tp_sched_fill(b, N, rate, kind, shape, 42);
  CHECK(memcmp(a, b, N * sizeof(uint64_t)) == 0, "%s: the same seed gives the same schedule", name);
  tp_sched_fill(b, N, rate, kind, shape, 43);
  CHECK(memcmp(a, b, N * sizeof(uint64_t)) != 0, "%s: another seed gives another schedule", name);
  int mono = 1;
  for (size_t i = 1; i < N; i++) mono &= a[i] >= a[i - 1];
  CHECK(mono, "%s: times never go back", name);
  double achieved = (double)N / (a[N - 1] / 1e9);
  CHECK(fabs(achieved / rate - 1.0) < 0.03, "%s: mean rate within 3%% over 20,000 gaps (%.4f)", name, achieved / rate);
  double k = kind == TP_ARRIVAL_POISSON ? 1.0 : shape;
  double d = ks_gamma(a, N, k, 1e9 / rate / k);
  /* Critical value at the 1% level: 1.628 / sqrt(n). */
  double crit = 1.628 / sqrt((double)N);
  printf("# %s: KS D = %.5f (critical %.5f)\n", name, d, crit);
  CHECK(d < crit, "%s: gaps follow Gamma(%.2g) by Kolmogorov-Smirnov at 1%%", name, k);
  /* And the test has teeth: the same gaps against the wrong shape fail. */
  double wrong = ks_gamma(a, N, k * 2, 1e9 / rate / (k * 2));
  CHECK(wrong > crit, "%s: the wrong shape is rejected (D = %.4f)", name, wrong);
  free(a);
  free(b);
}


/* vLLM's --ramp-up-strategy: the rate of request i at progress i/(n-1). */
static void test_ramp(void) {
  struct {
    tp_ramp ramp;
    double start, end, p, want;
  } rates[] = {
      {TP_RAMP_LINEAR, 2, 10, 0, 2},        {TP_RAMP_LINEAR, 2, 10, 0.5, 6},
      {TP_RAMP_LINEAR, 2, 10, 1, 10},       {TP_RAMP_EXPONENTIAL, 2, 8, 0, 2},
      {TP_RAMP_EXPONENTIAL, 2, 8, 0.5, 4},  {TP_RAMP_EXPONENTIAL, 2, 8, 1, 8},
      {TP_RAMP_EXPONENTIAL, 5, 5, 0.3, 5},
  };
  for (size_t i = 0; i < sizeof(rates) / sizeof(rates[0]); i++)
    CHECK(fabs(tp_sched_ramp_rate(rates[i].ramp, rates[i].start, rates[i].end, rates[i].p) - rates[i].want) < 1e-9,
          "ramp %d %g..%g at %g: %g/s", (int)rates[i].ramp, rates[i].start, rates[i].end, rates[i].p, rates[i].want);

  /* Constant gaps: every gap, the first included, at its request's rate. */
  uint64_t t[8];
  CHECK_INT(tp_sched_fill_ramp(t, 5, 0, TP_RAMP_LINEAR, 1, 5, TP_ARRIVAL_CONSTANT, 1, 7), 0, "linear 1..5/s");
  const uint64_t want[5] = {1000000000ULL, 1500000000ULL, 1833333333ULL, 2083333333ULL, 2283333333ULL};
  int same = 1;
  for (size_t i = 0; i < 5; i++) same &= t[i] == want[i];
  CHECK(same, "linear ramp: gaps of 1, 1/2, 1/3, 1/4, 1/5 s (%llu ... %llu)", (unsigned long long)t[0],
        (unsigned long long)t[4]);
  /* Two warm-up requests first, at the start rate; the ramp over the rest. */
  CHECK_INT(tp_sched_fill_ramp(t, 4, 2, TP_RAMP_EXPONENTIAL, 1, 4, TP_ARRIVAL_CONSTANT, 1, 7), 0, "with warm-up");
  CHECK(t[0] == 1000000000ULL && t[1] == 2000000000ULL && t[2] == 3000000000ULL && t[3] == 3250000000ULL,
        "warm-up at the start rate, then 1/s .. 4/s over the measured requests");
  CHECK_INT(tp_sched_fill_ramp(t, 1, 0, TP_RAMP_LINEAR, 3, 9, TP_ARRIVAL_CONSTANT, 1, 7), 0, "one request");
  CHECK(t[0] == 333333333ULL, "one request: the start rate");
  CHECK_INT(tp_sched_fill_ramp(t, 3, 0, TP_RAMP_LINEAR, 0, 9, TP_ARRIVAL_POISSON, 1, 7), TP_EINVAL,
            "start rate 0 refused (vLLM fails on it too)");
  CHECK_INT(tp_sched_fill_ramp(t, 3, 0, TP_RAMP_LINEAR, 9, 3, TP_ARRIVAL_POISSON, 1, 7), TP_EINVAL,
            "end below start refused");
  CHECK_INT(tp_sched_fill_ramp(t, 3, 0, TP_RAMP_LINEAR, 1, 3, TP_ARRIVAL_GAMMA, 0, 7), TP_EINVAL,
            "shape 0 refused");

  /* Random gaps: in each tenth of the requests the mean gap is the mean of
   * 1/rate over it, within 5% (2,000 gaps per tenth: the mean's relative
   * standard error is 1/sqrt(2000) = 2.2%, so 5% is over two of them). */
  size_t n = 20000;
  uint64_t *a = malloc(n * sizeof(uint64_t));
  CHECK_INT(tp_sched_fill_ramp(a, n, 0, TP_RAMP_LINEAR, 100, 1000, TP_ARRIVAL_POISSON, 1, 42), 0, "Poisson ramp");
  int ok = 1;
  double worst = 0;
  for (size_t d = 0; d < 10; d++) {
    size_t i0 = d * n / 10, i1 = (d + 1) * n / 10;
    double expect = 0;
    for (size_t i = i0; i < i1; i++)
      expect += 1e9 / tp_sched_ramp_rate(TP_RAMP_LINEAR, 100, 1000, (double)i / (double)(n - 1));
    double got = (double)(a[i1 - 1] - (i0 ? a[i0 - 1] : 0));
    double err = fabs(got / expect - 1);
    if (err > worst) worst = err;
    ok &= err < 0.05;
  }
  CHECK(ok, "Poisson ramp: each tenth's gaps at the ramp's rates (worst %.3f)", worst);
  free(a);
}

static void test_seeds(void) {
  CHECK(tp_sched_seed(1, 0) != tp_sched_seed(1, 1), "levels get different streams");
  CHECK(tp_sched_seed(1, 3) == tp_sched_seed(1, 3), "and the same seed repeats them");
  tp_rng r;
  tp_rng_seed(&r, 5);
  double sum = 0, sq = 0;
  for (int i = 0; i < 100000; i++) {
    double x = tp_rng_normal(&r);
    sum += x;
    sq += x * x;
  }
  CHECK_NEAR(sum / 100000, 0, 0.02, "normal draws: mean 0");
  CHECK_NEAR(sq / 100000, 1, 0.02, "normal draws: variance 1");
}

int main(void) {
  test_ramp();
  test_constant();
  test_random("poisson", TP_ARRIVAL_POISSON, 1);
  test_random("gamma k=0.5", TP_ARRIVAL_GAMMA, 0.5);
  test_random("gamma k=4", TP_ARRIVAL_GAMMA, 4);
  test_seeds();
  return tp_test_done();
}

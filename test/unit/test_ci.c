/* Confidence intervals over repeated runs: Student's t quantiles, the
 * interval of known samples, and the coverage of the true mean by 95%
 * intervals of normal samples drawn from a fixed seed. */
#include <math.h>
#include <stdio.h>

#include "metrics/tp_ci.h"
#include "tp_test.h"
#include "util/tp_rng.h"

int main(void) {
  /* Closed forms: df 1 is the Cauchy, tan(0.475 pi); df 2 is
   * (2p - 1) / sqrt(2 p (1 - p)); df 4 is 2 sqrt(q - 1) with
   * q = cos(acos(sqrt(a)) / 3) / sqrt(a), a = 4 p (1 - p). */
  const double pi = 3.14159265358979323846, p = 0.975, a4 = 4 * p * (1 - p);
  CHECK_NEAR(tp_t975(1) / tan(0.475 * pi), 1, 1e-13, "t(1) exact");
  CHECK_NEAR(tp_t975(2) / ((2 * p - 1) / sqrt(2 * p * (1 - p))), 1, 1e-13, "t(2) exact");
  CHECK_NEAR(tp_t975(4) / (2 * sqrt(cos(acos(sqrt(a4)) / 3) / sqrt(a4) - 1)), 1, 1e-13, "t(4) exact");
  /* Any df: the density integrated from 0 to t by Simpson's rule gives 0.475. */
  size_t dfs[] = {3, 7, 30, 31, 60, 120, 1000};
  for (size_t k = 0; k < sizeof dfs / sizeof dfs[0]; k++) {
    double d = (double)dfs[k], t = tp_t975(dfs[k]),
           c = exp(lgamma((d + 1) / 2) - lgamma(d / 2)) / sqrt(d * pi);
    size_t n = 20000;
    double h = t / (double)n, s = 0;
    for (size_t i = 0; i <= n; i++) {
      double x = h * (double)i, f = c * pow(1 + x * x / d, -(d + 1) / 2);
      s += f * (i == 0 || i == n ? 1 : i % 2 ? 4 : 2);
    }
    char what[64];
    snprintf(what, sizeof what, "t(%zu): the density integrates to 0.475", dfs[k]);
    CHECK_NEAR(s * h / 3, 0.475, 1e-12, what);
  }
  CHECK_NEAR(tp_t975(30), 2.0423, 1e-4, "t(30) agrees with the printed table");
  CHECK_NEAR(tp_t975(100000), 1.959963984540054, 1e-4, "t(large) tends to the normal quantile");

  tp_ci ci;
  double v[] = {10, 12, 14};
  tp_ci95(&ci, v, 3);
  CHECK_NEAR(ci.mean, 12, 1e-12, "mean");
  CHECK_NEAR(ci.sd, 2, 1e-12, "sample standard deviation");
  CHECK_NEAR(ci.half, tp_t975(2) * 2 / sqrt(3), 1e-12, "half-width t(2) s / sqrt(n)");
  tp_ci95(&ci, v, 1);
  CHECK(ci.half == 0 && ci.lo == 10 && ci.hi == 10, "one run: no interval");

  tp_ci a = {3, 10, 1, 1, 9, 11}, b = {3, 11.5, 1, 1, 10.5, 12.5}, c = {3, 13, 1, 1, 12, 14};
  CHECK(!tp_ci_apart(&a, &b), "overlapping intervals: within noise");
  CHECK(tp_ci_apart(&a, &c), "separate intervals: beyond noise");

  /* Coverage: 2,000 experiments of 5 runs from N(100, 15). */
  tp_rng rng;
  tp_rng_seed(&rng, 42);
  int covered = 0, reps = 2000;
  for (int r = 0; r < reps; r++) {
    double x[5];
    for (int i = 0; i < 5; i++) x[i] = 100 + 15 * tp_rng_normal(&rng);
    tp_ci95(&ci, x, 5);
    covered += ci.lo <= 100 && 100 <= ci.hi;
  }
  double cov = (double)covered / reps;
  CHECK(cov > 0.93 && cov < 0.97, "95%% intervals cover the true mean in 93-97%% of experiments (%.3f)", cov);
  return tp_test_done();
}

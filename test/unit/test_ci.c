/* Confidence intervals over repeated runs: Student's t quantiles, the
 * interval of known samples, and the coverage of the true mean by 95%
 * intervals of normal samples drawn from a fixed seed. */
#include <math.h>

#include "metrics/tp_ci.h"
#include "tp_test.h"
#include "util/tp_rng.h"

int main(void) {
  CHECK_NEAR(tp_t975(1), 12.7062, 1e-4, "t(1)");
  CHECK_NEAR(tp_t975(4), 2.7764, 1e-4, "t(4)");
  CHECK_NEAR(tp_t975(30), 2.0423, 1e-4, "t(30)");
  CHECK_NEAR(tp_t975(31), 2.0395, 2e-4, "t(31) by the expansion");
  CHECK_NEAR(tp_t975(60), 2.0003, 2e-4, "t(60)");
  CHECK_NEAR(tp_t975(120), 1.9799, 2e-4, "t(120)");
  CHECK_NEAR(tp_t975(100000), 1.96, 1e-3, "t(large) tends to the normal quantile");

  tp_ci ci;
  double v[] = {10, 12, 14};
  tp_ci95(&ci, v, 3);
  CHECK_NEAR(ci.mean, 12, 1e-12, "mean");
  CHECK_NEAR(ci.sd, 2, 1e-12, "sample standard deviation");
  CHECK_NEAR(ci.half, 4.3027 * 2 / sqrt(3), 1e-3, "half-width t(2) s / sqrt(n)");
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

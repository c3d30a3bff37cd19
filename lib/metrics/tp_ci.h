/* Confidence intervals over repeated runs (--num-profile-runs).
 *
 * Each run of a level gives one value of a figure (its p99 TTFT, its
 * throughput); over n runs the mean, the sample standard deviation and a
 * 95% confidence interval for the mean, Student's t with n - 1 degrees of
 * freedom (the runs are few, and their spread is estimated from them). */
#ifndef TP_CI_H
#define TP_CI_H

#include <stddef.h>

typedef struct tp_ci {
  size_t n;
  double mean;
  double sd;   /* sample standard deviation (n - 1); 0 when n < 2 */
  double half; /* half-width of the 95% interval; 0 when n < 2 (no interval) */
  double lo, hi;
} tp_ci;

/* The two-sided 95% quantile of Student's t with df degrees of freedom
 * (t_0.975), computed exactly: the root of the regularized incomplete beta
 * tail, to double precision for every df. df 0 gives 0. */
double tp_t975(size_t df);

/* Fills ci from v[0..n). */
void tp_ci95(tp_ci *ci, const double *v, size_t n);

/* Whether two intervals are apart: a difference beyond noise at about the
 * 95% level (the intervals do not overlap).  Intervals of a single run
 * (half 0) are apart whenever the values differ, so one run each behaves
 * as a plain comparison. */
int tp_ci_apart(const tp_ci *a, const tp_ci *b);

#endif

#include "tp_ci.h"

#include <math.h>

/* The regularized incomplete beta I_x(a, b) by its continued fraction
 * (modified Lentz), used on the side where it converges fast. */
static double beta_cf(double a, double b, double x) {
  const double tiny = 1e-300;
  double c = 1, d = 1 - (a + b) * x / (a + 1);
  if (fabs(d) < tiny) d = tiny;
  d = 1 / d;
  double h = d;
  for (int m = 1; m <= 1000; m++) {
    double m2 = 2.0 * m, num = m * (b - m) * x / ((a + m2 - 1) * (a + m2));
    d = 1 + num * d;
    if (fabs(d) < tiny) d = tiny;
    c = 1 + num / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    h *= d * c;
    num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + m2 + 1));
    d = 1 + num * d;
    if (fabs(d) < tiny) d = tiny;
    c = 1 + num / c;
    if (fabs(c) < tiny) c = tiny;
    d = 1 / d;
    double del = d * c;
    h *= del;
    if (fabs(del - 1) < 1e-16) break;
  }
  return h;
}

static double ibeta(double a, double b, double x) {
  if (x <= 0) return 0;
  if (x >= 1) return 1;
  double lfront = lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x);
  if (x < (a + 1) / (a + b + 2)) return exp(lfront) * beta_cf(a, b, x) / a;
  return 1 - exp(lfront) * beta_cf(b, a, 1 - x) / b;
}

/* Upper tail of Student's t with df degrees of freedom: P(T > t) for t >= 0. */
static double t_upper(double t, double df) {
  return 0.5 * ibeta(df / 2, 0.5, df / (df + t * t));
}

double tp_t975(size_t df) {
  if (df == 0) return 0;
  /* The exact quantile: the t whose upper tail is 0.025, found by bisection
   * to the last bit (the tail falls monotonically in t). The 0.975 quantile
   * lies between the normal's 1.96 and the Cauchy's 12.71 for every df. */
  double d = (double)df, lo = 1.9, hi = 12.8;
  for (int i = 0; i < 200 && hi - lo > 0; i++) {
    double mid = lo + (hi - lo) / 2;
    if (mid <= lo || mid >= hi) break;
    if (t_upper(mid, d) > 0.025)
      lo = mid;
    else
      hi = mid;
  }
  return lo + (hi - lo) / 2;
}

void tp_ci95(tp_ci *ci, const double *v, size_t n) {
  ci->n = n;
  ci->mean = ci->sd = ci->half = 0;
  if (n == 0) {
    ci->lo = ci->hi = 0;
    return;
  }
  double sum = 0;
  for (size_t i = 0; i < n; i++) sum += v[i];
  ci->mean = sum / (double)n;
  if (n > 1) {
    double ss = 0;
    for (size_t i = 0; i < n; i++) ss += (v[i] - ci->mean) * (v[i] - ci->mean);
    ci->sd = sqrt(ss / (double)(n - 1));
    ci->half = tp_t975(n - 1) * ci->sd / sqrt((double)n);
  }
  ci->lo = ci->mean - ci->half;
  ci->hi = ci->mean + ci->half;
}

int tp_ci_apart(const tp_ci *a, const tp_ci *b) { return a->hi < b->lo || b->hi < a->lo; }

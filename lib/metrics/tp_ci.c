#include "tp_ci.h"

#include <math.h>

/* t_0.975 for 1 to 30 degrees of freedom (the standard table). */
static const double t_table[30] = {12.7062, 4.3027, 3.1824, 2.7764, 2.5706, 2.4469, 2.3646, 2.3060, 2.2622, 2.2281,
                                   2.2010,  2.1788, 2.1604, 2.1448, 2.1314, 2.1199, 2.1098, 2.1009, 2.0930, 2.0860,
                                   2.0796,  2.0739, 2.0687, 2.0639, 2.0595, 2.0555, 2.0518, 2.0484, 2.0452, 2.0423};

double tp_t975(size_t df) {
  if (df == 0) return 0;
  if (df <= 30) return t_table[df - 1];
  /* Cornish-Fisher: t = z + g1/df + g2/df^2 + g3/df^3 around the normal
   * quantile z = 1.959964. */
  const double z = 1.959963984540054, z3 = z * z * z, z5 = z3 * z * z, z7 = z5 * z * z;
  double d = (double)df;
  return z + (z3 + z) / (4 * d) + (5 * z5 + 16 * z3 + 3 * z) / (96 * d * d) +
         (3 * z7 + 19 * z5 + 17 * z3 - 15 * z) / (384 * d * d * d);
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

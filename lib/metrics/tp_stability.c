/* The stability rule (tp_stability.h). */
#include "tp_stability.h"

#include <math.h>

/* max / min of the last three values within 1 + pct/100; written as a
 * product so that a tiny minimum cannot overflow the ratio. */
static bool within(const double *v, double pct) {
  double lo = v[0], hi = v[0];
  for (int i = 1; i < TP_STABILITY_WINDOWS; i++) {
    if (v[i] < lo) lo = v[i];
    if (v[i] > hi) hi = v[i];
  }
  if (!(lo > 0) || !isfinite(hi)) return false;
  return hi <= lo * (1 + pct / 100);
}

bool tp_windows_stable(const double *tput, const double *lat_ms, size_t n, double pct) {
  if (n < TP_STABILITY_WINDOWS) return false;
  return within(tput + n - TP_STABILITY_WINDOWS, pct) && within(lat_ms + n - TP_STABILITY_WINDOWS, pct);
}

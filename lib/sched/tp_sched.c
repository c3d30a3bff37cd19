#include "tp_sched.h"

#include <math.h>

#include "util/tp_common.h"
#include "util/tp_rng.h"

int tp_sched_fill(uint64_t *offsets_ns, size_t n, double rate, tp_arrival kind, double burstiness,
                  uint64_t seed) {
  if (!(rate > 0) || (kind == TP_ARRIVAL_GAMMA && !(burstiness > 0))) return TP_EINVAL;
  tp_rng r;
  tp_rng_seed(&r, seed);
  double mean_ns = 1e9 / rate;
  /* Accumulate in double and round each time, so rounding never drifts. */
  double t = 0;
  for (size_t i = 0; i < n; i++) {
    switch (kind) {
      case TP_ARRIVAL_CONSTANT:
        t = (double)i * mean_ns;
        break;
      case TP_ARRIVAL_POISSON:
        t += -log(tp_rng_uniform(&r)) * mean_ns;
        break;
      case TP_ARRIVAL_GAMMA:
        /* Shape k, scale mean/k: the mean gap stays 1/rate whatever k. */
        t += tp_rng_gamma(&r, burstiness) * mean_ns / burstiness;
        break;
    }
    offsets_ns[i] = (uint64_t)llround(t);
  }
  return 0;
}

double tp_sched_ramp_rate(tp_ramp ramp, double start_rps, double end_rps, double p) {
  if (ramp == TP_RAMP_EXPONENTIAL) return start_rps * pow(end_rps / start_rps, p);
  if (ramp == TP_RAMP_LINEAR) return start_rps + (end_rps - start_rps) * p;
  return start_rps;
}

int tp_sched_fill_ramp(uint64_t *offsets_ns, size_t n, size_t first, tp_ramp ramp, double start_rps,
                       double end_rps, tp_arrival kind, double burstiness, uint64_t seed) {
  if (!(start_rps > 0) || !(end_rps >= start_rps) || !isfinite(end_rps) ||
      (kind == TP_ARRIVAL_GAMMA && !(burstiness > 0)))
    return TP_EINVAL;
  tp_rng r;
  tp_rng_seed(&r, seed);
  size_t measured = n > first ? n - first : 0;
  double span = measured > 1 ? (double)(measured - 1) : 1;
  double t = 0;
  for (size_t i = 0; i < n; i++) {
    double p = i < first ? 0 : (double)(i - first) / span;
    double mean_ns = 1e9 / tp_sched_ramp_rate(ramp, start_rps, end_rps, p);
    /* Unlike a fixed rate, every gap is at its own rate, so nothing is
     * rescaled to a total afterwards (vLLM does not either). */
    switch (kind) {
      case TP_ARRIVAL_CONSTANT: t += mean_ns; break;
      case TP_ARRIVAL_POISSON: t += -log(tp_rng_uniform(&r)) * mean_ns; break;
      case TP_ARRIVAL_GAMMA: t += tp_rng_gamma(&r, burstiness) * mean_ns / burstiness; break;
    }
    offsets_ns[i] = (uint64_t)llround(t);
  }
  return 0;
}

uint64_t tp_sched_seed(uint64_t run_seed, uint64_t level) { return tp_rng_mix(run_seed, level); }

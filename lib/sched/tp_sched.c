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

uint64_t tp_sched_seed(uint64_t run_seed, uint64_t level) { return tp_rng_mix(run_seed, level); }

/* Arrival schedules for open-loop (rate) mode, computed ahead of time from a
 * seed so that a run can be repeated exactly.
 *
 * Times are offsets in nanoseconds from the start of a level; the run adds
 * its own start time.  No clock and no I/O here. */
#ifndef TP_SCHED_H
#define TP_SCHED_H

#include <stddef.h>
#include <stdint.h>

#include "tokperf/tokperf.h"
#include "util/tp_rng.h"

/* Fills offsets_ns[0..n) with the planned send times of n requests at
 * `rate` requests per second.  The first request goes at offset 0 for a
 * constant schedule, and after one drawn gap for the random ones (so every
 * gap, the first included, follows the distribution).  burstiness is the
 * gamma shape (1 = Poisson; below 1 burstier, above 1 smoother); it is
 * ignored for the other kinds.  Returns 0 or TP_EINVAL (rate <= 0, shape <=
 * 0). */
int tp_sched_fill(uint64_t *offsets_ns, size_t n, double rate, tp_arrival kind, double burstiness,
                  uint64_t seed);

/* As tp_sched_fill with a rate that moves (tp_ramp, not TP_RAMP_NONE):
 * request i's gap, the first one's included, is drawn at the ramp's rate at
 * progress (i - first) / (n - first - 1) (0 for the first `first`
 * requests, the warm-up), as vLLM's `bench serve` draws it.  A constant
 * arrival gives gaps of exactly 1/rate.  Returns 0 or TP_EINVAL (a start
 * rate <= 0, an end rate below the start, shape <= 0). */
int tp_sched_fill_ramp(uint64_t *offsets_ns, size_t n, size_t first, tp_ramp ramp, double start_rps,
                       double end_rps, tp_arrival kind, double burstiness, uint64_t seed);

/* The ramp's rate at progress p in [0, 1]. */
double tp_sched_ramp_rate(tp_ramp ramp, double start_rps, double end_rps, double p);

/* Mixes a level's seed from the run seed and the level index, so that
 * levels do not share a stream and the same seed repeats a run. */
uint64_t tp_sched_seed(uint64_t run_seed, uint64_t level);

#endif

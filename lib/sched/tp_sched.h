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

/* Mixes a level's seed from the run seed and the level index, so that
 * levels do not share a stream and the same seed repeats a run. */
uint64_t tp_sched_seed(uint64_t run_seed, uint64_t level);

#endif

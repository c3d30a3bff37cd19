/* Arrival schedules for open-loop (rate) mode, computed ahead of time from a
 * seed so that a run can be repeated exactly.
 *
 * Times are offsets in nanoseconds from the start of a level; the run adds
 * its own start time.  No clock and no I/O here. */
#ifndef TP_SCHED_H
#define TP_SCHED_H

#include <stddef.h>
#include <stdint.h>

typedef enum tp_arrival {
  TP_ARRIVAL_CONSTANT = 0, /* exactly 1/rate apart */
  TP_ARRIVAL_POISSON = 1,  /* exponential gaps with mean 1/rate */
  TP_ARRIVAL_GAMMA = 2     /* gamma gaps, shape k (burstiness), mean 1/rate */
} tp_arrival;

/* A small, fast, seedable generator (xoshiro256** seeded through
 * splitmix64).  Not for cryptography. */
typedef struct tp_rng {
  uint64_t s[4];
} tp_rng;

void tp_rng_seed(tp_rng *r, uint64_t seed);
uint64_t tp_rng_next(tp_rng *r);
/* Uniform in (0, 1): never exactly 0, so log() is always defined. */
double tp_rng_uniform(tp_rng *r);
/* Standard normal (Box-Muller on two uniforms). */
double tp_rng_normal(tp_rng *r);
/* Gamma(shape, scale = 1): Marsaglia and Tsang's method, with the boost
 * u^(1/shape) for shape < 1. */
double tp_rng_gamma(tp_rng *r, double shape);

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

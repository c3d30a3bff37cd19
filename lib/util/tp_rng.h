/* A small, fast, seedable random generator (xoshiro256** seeded through
 * splitmix64), with the draws the load generator needs.  Reproducible from
 * the seed on every machine; not for cryptography. */
#ifndef TP_RNG_H
#define TP_RNG_H

#include <stdint.h>

typedef struct tp_rng {
  uint64_t s[4];
} tp_rng;

void tp_rng_seed(tp_rng *r, uint64_t seed);
uint64_t tp_rng_next(tp_rng *r);
/* Uniform in (0, 1): never exactly 0, so log() is always defined. */
double tp_rng_uniform(tp_rng *r);
/* Uniform integer in [0, n) (n > 0). */
uint64_t tp_rng_below(tp_rng *r, uint64_t n);
/* Standard normal (Box-Muller on two uniforms). */
double tp_rng_normal(tp_rng *r);
/* Gamma(shape, scale = 1): Marsaglia and Tsang's method, with the boost
 * u^(1/shape) for shape < 1. */
double tp_rng_gamma(tp_rng *r, double shape);
/* Mixes a seed with an index (a level, a rank, a prompt) into a new seed. */
uint64_t tp_rng_mix(uint64_t seed, uint64_t index);

#endif

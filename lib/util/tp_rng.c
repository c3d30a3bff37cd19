#include "tp_rng.h"

#include <math.h>

static uint64_t splitmix64(uint64_t *x) {
  uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void tp_rng_seed(tp_rng *r, uint64_t seed) {
  uint64_t x = seed;
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&x);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t tp_rng_next(tp_rng *r) {
  uint64_t *s = r->s;
  uint64_t result = rotl(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return result;
}

double tp_rng_uniform(tp_rng *r) {
  /* 53 random bits, shifted off zero by half a step. */
  return ((double)(tp_rng_next(r) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

uint64_t tp_rng_below(tp_rng *r, uint64_t n) {
  /* Multiply-shift: unbiased enough for choosing words and prompts. */
  return (uint64_t)(((unsigned __int128)tp_rng_next(r) * n) >> 64);
}

double tp_rng_normal(tp_rng *r) {
  double u1 = tp_rng_uniform(r), u2 = tp_rng_uniform(r);
  return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double tp_rng_gamma(tp_rng *r, double shape) {
  if (shape < 1.0) {
    /* Gamma(k) = Gamma(k + 1) * U^(1/k). */
    double u = tp_rng_uniform(r);
    return tp_rng_gamma(r, shape + 1.0) * pow(u, 1.0 / shape);
  }
  double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
  for (;;) {
    double x, v;
    do {
      x = tp_rng_normal(r);
      v = 1.0 + c * x;
    } while (v <= 0);
    v = v * v * v;
    double u = tp_rng_uniform(r);
    if (u < 1.0 - 0.0331 * x * x * x * x) return d * v;
    if (log(u) < 0.5 * x * x + d * (1.0 - v + log(v))) return d * v;
  }
}

uint64_t tp_rng_mix(uint64_t seed, uint64_t index) {
  uint64_t x = seed ^ (index * 0xd1b54a32d192ed03ULL);
  return splitmix64(&x);
}

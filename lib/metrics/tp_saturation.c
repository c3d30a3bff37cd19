/* Over-saturation while a level runs (tp_saturation.h). */
#include "tp_saturation.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define N_SAMPLES (TP_SAT_WINDOW + 1)
/* A fit must explain this share of the load's variation: a steady climb,
 * not a burst. */
#define SAT_R2 0.7
/* The smallest rise that counts, as a share of the mean and in requests:
 * a Poisson arrival stream wanders by a few requests on its own. */
#define SAT_RISE_SHARE 0.25
#define SAT_RISE_MIN 4.0
/* Seconds of the window that need a TTFT (requests finished in them). */
#define SAT_TTFT_POINTS 3

typedef struct sample {
  uint64_t t_ns;
  double load;   /* in flight + held */
  double held;
  double ttft;   /* p50 of the TTFTs of the requests finished since the last sample; NaN: none */
} sample;

struct tp_saturation {
  sample ring[N_SAMPLES];
  size_t n; /* samples taken */
  double *ttft;
  size_t n_ttft, cap_ttft;
  uint64_t pending_ns; /* the sample before saw it too (0 = no) */
  bool detected;
  uint64_t at_ns;
  char why[192];
};

tp_saturation *tp_saturation_new(void) {
  return calloc(1, sizeof(tp_saturation));
}

void tp_saturation_free(tp_saturation *s) {
  if (!s) return;
  free(s->ttft);
  free(s);
}

void tp_saturation_done(tp_saturation *s, double ttft_ms) {
  if (!s || !(ttft_ms >= 0)) return;
  if (s->n_ttft == s->cap_ttft) {
    size_t cap = s->cap_ttft ? 2 * s->cap_ttft : 64;
    double *p = realloc(s->ttft, cap * sizeof(*p));
    if (!p) return; /* a value less: the median of the others stands */
    s->ttft = p;
    s->cap_ttft = cap;
  }
  s->ttft[s->n_ttft++] = ttft_ms;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median_and_reset(tp_saturation *s) {
  if (!s->n_ttft) return NAN;
  qsort(s->ttft, s->n_ttft, sizeof(double), cmp_double);
  size_t n = s->n_ttft;
  double m = n % 2 ? s->ttft[n / 2] : (s->ttft[n / 2 - 1] + s->ttft[n / 2]) / 2;
  s->n_ttft = 0;
  return m;
}

/* Least squares of y on x over the points with a finite y: slope, the
 * share of the variation it explains, the mean, and the count. */
typedef struct fit {
  double slope, r2, mean, span;
  size_t n;
  double first, last;
} fit;

static fit fit_of(const sample *w, size_t n, size_t field) {
  fit f = {0, 0, 0, 0, 0, NAN, NAN};
  double sx = 0, sy = 0;
  double x0 = 0, xs[N_SAMPLES], ys[N_SAMPLES];
  for (size_t i = 0; i < n; i++) {
    double y = *(const double *)(const void *)((const char *)&w[i] + field);
    if (!isfinite(y)) continue;
    double x = (double)(w[i].t_ns - w[0].t_ns) / 1e9;
    if (!f.n) {
      x0 = x;
      f.first = y;
    }
    f.last = y;
    xs[f.n] = x;
    ys[f.n++] = y;
    sx += x;
    sy += y;
  }
  if (f.n < 2) return f;
  f.span = xs[f.n - 1] - x0;
  double mx = sx / (double)f.n, my = sy / (double)f.n, sxx = 0, sxy = 0, syy = 0;
  for (size_t i = 0; i < f.n; i++) {
    sxx += (xs[i] - mx) * (xs[i] - mx);
    sxy += (xs[i] - mx) * (ys[i] - my);
    syy += (ys[i] - my) * (ys[i] - my);
  }
  f.mean = my;
  if (sxx <= 0) return f;
  f.slope = sxy / sxx;
  f.r2 = syy > 0 ? sxy * sxy / (sxx * syy) : 0;
  return f;
}

static bool rising(const fit *f, double min_abs) {
  double rise = f->slope * f->span, need = SAT_RISE_SHARE * f->mean;
  return f->slope > 0 && f->last > f->first && rise >= (need > min_abs ? need : min_abs);
}

bool tp_saturation_sample(tp_saturation *s, uint64_t now_ns, uint32_t in_flight, size_t held) {
  if (!s || s->detected) return false;
  sample cur = {now_ns, (double)in_flight + (double)held, (double)held, median_and_reset(s)};
  if (s->n >= N_SAMPLES) memmove(s->ring, s->ring + 1, (N_SAMPLES - 1) * sizeof(sample));
  s->ring[s->n < N_SAMPLES ? s->n : N_SAMPLES - 1] = cur;
  s->n++;
  if (s->n < N_SAMPLES) return false;

  fit load = fit_of(s->ring, N_SAMPLES, offsetof(sample, load));
  fit ttft = fit_of(s->ring, N_SAMPLES, offsetof(sample, ttft));
  fit hold = fit_of(s->ring, N_SAMPLES, offsetof(sample, held));
  bool load_up = load.r2 >= SAT_R2 && rising(&load, SAT_RISE_MIN);
  bool ttft_up = ttft.n >= SAT_TTFT_POINTS && rising(&ttft, 0);
  bool held_up = hold.last >= SAT_RISE_MIN && rising(&hold, SAT_RISE_MIN);
  if (!(load_up && (ttft_up || held_up))) {
    s->pending_ns = 0;
    return false;
  }
  if (!s->pending_ns) {
    s->pending_ns = now_ns;
    return false;
  }
  s->detected = true;
  s->at_ns = s->pending_ns;
  int k = snprintf(s->why, sizeof(s->why), "requests in the system %.0f -> %.0f over %.0f s", load.first, load.last,
                   load.span);
  if (k > 0 && (size_t)k < sizeof(s->why) && ttft_up)
    k += snprintf(s->why + k, sizeof(s->why) - (size_t)k, ", TTFT p50 %.1f -> %.1f ms", ttft.first, ttft.last);
  if (k > 0 && (size_t)k < sizeof(s->why) && held_up)
    snprintf(s->why + k, sizeof(s->why) - (size_t)k, ", %.0f due and held back by the in-flight cap", hold.last);
  return true;
}

bool tp_saturation_detected(const tp_saturation *s, uint64_t *at_ns, char *why, size_t len) {
  if (!s || !s->detected) return false;
  if (at_ns) *at_ns = s->at_ns;
  if (why && len) snprintf(why, len, "%s", s->why);
  return true;
}

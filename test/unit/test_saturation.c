/* Over-saturation (lib/metrics/tp_saturation.c, docs/metrics.md
 * "Saturation") on load histories made by hand, a sample a second: a
 * steady open loop with noise never trips it; a ramp up to a plateau at a
 * steady TTFT, nor long requests that finish only later, do not either; a
 * load and a TTFT that climb together do, dated at the first of the two
 * samples that agree; the in-flight cap holding back more and more due
 * requests does; a single sample that looks saturated does not. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/tp_saturation.h"
#include "tp_test.h"

#define SEC 1000000000ULL

/* A deterministic noise in [-1, 1]. */
static double noise(unsigned *state) {
  *state = *state * 1103515245u + 12345u;
  return (double)((*state >> 8) & 0xffff) / 32767.5 - 1.0;
}

static void finish(tp_saturation *s, int n, double ttft) {
  for (int i = 0; i < n; i++) tp_saturation_done(s, ttft);
}

static void test_steady_loads(void) {
  tp_saturation *s = tp_saturation_new();
  unsigned st = 7;
  bool hit = false;
  for (int k = 1; k <= 120; k++) {
    finish(s, 20, 50 + 10 * noise(&st));
    hit |= tp_saturation_sample(s, (uint64_t)k * SEC, (uint32_t)(20 + 6 * noise(&st)), 0);
  }
  CHECK(!hit && !tp_saturation_detected(s, NULL, NULL, 0), "a steady open loop with noise: never");
  tp_saturation_free(s);

  /* A ramp to a plateau of 40 at a steady TTFT: the load climbs, the
   * TTFT does not. */
  s = tp_saturation_new();
  hit = false;
  for (int k = 1; k <= 30; k++) {
    finish(s, k < 4 ? 0 : 20, 50);
    hit |= tp_saturation_sample(s, (uint64_t)k * SEC, (uint32_t)(k < 4 ? 10 * k : 40), 0);
  }
  CHECK(!hit, "a ramp up to a plateau at a steady TTFT: never");
  tp_saturation_free(s);

  /* Requests of 20 s: the load climbs for 20 s before anything finishes;
   * without TTFTs there is nothing to say the server is behind. */
  s = tp_saturation_new();
  hit = false;
  for (int k = 1; k <= 20; k++) hit |= tp_saturation_sample(s, (uint64_t)k * SEC, (uint32_t)(5 * k), 0);
  CHECK(!hit, "long requests still ramping, none finished: never");
  tp_saturation_free(s);
}

static void test_saturated(void) {
  /* From second 1 the load climbs by 10 a second and the TTFT by 100 ms:
   * the window is full at the 6th sample; the 7th agrees. */
  tp_saturation *s = tp_saturation_new();
  int confirmed = 0;
  for (int k = 1; k <= 10; k++) {
    finish(s, 5, 100.0 * k);
    if (tp_saturation_sample(s, (uint64_t)k * SEC, (uint32_t)(10 * k), 0) && !confirmed) confirmed = k;
  }
  uint64_t at = 0;
  char why[192] = "";
  CHECK(tp_saturation_detected(s, &at, why, sizeof(why)), "load and TTFT climbing together: detected");
  CHECK_INT(confirmed, 7, "confirmed by the 7th sample");
  CHECK(at == 6 * SEC, "dated at the 6th, the first that saw it");
  CHECK(strstr(why, "requests in the system 20 -> 70 over 5 s") && strstr(why, "TTFT p50 200.0 -> 700.0 ms"),
        "why, in words, over the window that confirmed it: %s", why);
  tp_saturation_free(s);

  /* The in-flight cap is full at 8; the due requests it holds back pile
   * up, the TTFT of those it lets through stays flat. */
  s = tp_saturation_new();
  for (int k = 1; k <= 10; k++) {
    finish(s, 8, 50);
    tp_saturation_sample(s, (uint64_t)k * SEC, 8, (size_t)(5 * k));
  }
  CHECK(tp_saturation_detected(s, NULL, why, sizeof(why)) && strstr(why, "held back by the in-flight cap"),
        "the cap holding back more and more: detected (%s)", why);
  tp_saturation_free(s);

  /* One sample that looks saturated, then calm: two must agree. */
  s = tp_saturation_new();
  static const uint32_t loads[] = {10, 10, 10, 10, 10, 40, 10, 10, 10};
  static const double ttfts[] = {50, 50, 50, 50, 50, 400, 50, 50, 50};
  for (int k = 0; k < 9; k++) {
    finish(s, 5, ttfts[k]);
    tp_saturation_sample(s, (uint64_t)(k + 1) * SEC, loads[k], 0);
  }
  CHECK(!tp_saturation_detected(s, NULL, NULL, 0), "a single spike: not detected");
  tp_saturation_free(s);
  CHECK(!tp_saturation_sample(NULL, SEC, 1, 0) && !tp_saturation_detected(NULL, NULL, NULL, 0),
        "no detector: nothing");
}

int main(void) {
  test_steady_loads();
  test_saturated();
  return tp_test_done();
}

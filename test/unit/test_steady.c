/* The steady state (lib/metrics/tp_steady.c, docs/metrics.md "Steady
 * state") on records made by hand: the window's bounds on a ramp, a
 * plateau and a drain; ties (an end before a start at one instant); a
 * level that never reaches the threshold, one without a target, failed and
 * warm-up requests left out; the figures over the window (requests ended
 * in it, tokens arrived in it, TTFT and TPOT of the requests sent in it). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/tp_steady.h"
#include "tp_test.h"

#define T0 1000000000000ULL
#define S(x) ((uint64_t)((x)*1e9))

/* A successful request sent at `at` s, lasting `len` s, with `tokens`
 * output tokens in as many text responses, the first at ttft s, the last
 * at the end. */
static void req(tp_record *r, double at, double len, double ttft, int tokens) {
  tp_record_init(r);
  r->planned_ns = r->sent_ns = T0 + S(at);
  r->done_ns = T0 + S(at + len);
  for (int k = 0; k < tokens; k++) {
    double t = tokens == 1 ? ttft : ttft + (len - ttft) * k / (tokens - 1);
    tp_record_add_response(r, T0 + S(at + t), true);
  }
  r->output_tokens = tokens;
  r->input_tokens = 100;
}

static void fini(tp_record *r, size_t n) {
  for (size_t i = 0; i < n; i++) tp_record_fini(&r[i]);
}

static void test_window(void) {
  /* Ten requests ramp in one per second, each 30 s long: ten in flight
   * from t=9 (the tenth send) to t=30 (the first end). */
  tp_record r[11];
  for (int i = 0; i < 10; i++) req(&r[i], i, 30, 1, 2);
  tp_steady s;
  CHECK_INT(tp_steady_compute(&s, r, 10, 10, 1.0, 0), 0, "computes");
  CHECK(s.found, "a plateau at the target is found");
  CHECK_INT(s.threshold_abs, 10, "threshold 1.0 of 10: 10");
  CHECK(fabs(s.start_s - 9) < 1e-9 && fabs(s.end_s - 30) < 1e-9, "window 9-30 s (got %.9f-%.9f)", s.start_s,
        s.end_s);
  CHECK(fabs(s.duration_s - 21) < 1e-9 && !s.short_window, "21 s long, not short");
  CHECK_INT(s.peak, 10, "peak 10");
  CHECK_INT(s.started, 1, "one request sent in [9, 30)");
  CHECK_INT(s.completed, 0, "none ended in [9, 30): the first end, at 30, is the bound");
  fini(r, 10);

  /* 0.95 of 10 is 10 (ceil); 0.85 of 10 is 9: the window opens at the
   * ninth send, t=8, and closes when the second request ends, t=31. */
  for (int i = 0; i < 10; i++) req(&r[i], i, 30, 1, 2);
  tp_steady_compute(&s, r, 10, 10, 0.95, 0);
  CHECK_INT(s.threshold_abs, 10, "ceil(0.95 x 10) = 10");
  tp_steady_compute(&s, r, 10, 10, 0.85, 0);
  CHECK(s.threshold_abs == 9 && fabs(s.start_s - 8) < 1e-9 && fabs(s.end_s - 31) < 1e-9,
        "threshold 0.85: 9 in flight, 8-31 s (got %u, %.9f-%.9f)", s.threshold_abs, s.start_s, s.end_s);
  fini(r, 10);
}

static void test_ties_and_exclusions(void) {
  /* Two requests end at t=5 as a third starts: the ends go first, so the
   * count never reaches 3. */
  tp_record r[6];
  req(&r[0], 0, 5, 1, 2);
  req(&r[1], 2, 3, 1, 2);
  req(&r[2], 5, 2, 1, 2);
  tp_steady s;
  tp_steady_compute(&s, r, 3, 2, 1.0, 0);
  CHECK(s.found && s.peak == 2, "an end and a start at one instant: peak 2, not 3");
  CHECK(fabs(s.start_s - 2) < 1e-9 && fabs(s.end_s - 5) < 1e-9, "window 2-5 s");

  /* Failed and warm-up requests are not in flight for the window. */
  req(&r[3], 2.5, 1, 0.5, 2);
  r[3].err_class = TP_ERRCLASS_TIMEOUT;
  req(&r[4], 2.5, 1, 0.5, 2);
  r[4].warmup = true;
  tp_steady_compute(&s, r, 5, 2, 1.0, 0);
  CHECK(s.peak == 2 && fabs(s.start_s - 2) < 1e-9, "failed and warm-up requests left out");
  fini(r, 5);

  /* Serial requests never reach 2 in flight; no target, no window. */
  req(&r[0], 0, 1, 0.1, 2);
  req(&r[1], 2, 1, 0.1, 2);
  tp_steady_compute(&s, r, 2, 2, 0.95, 0);
  CHECK(!s.found && s.peak == 1 && isnan(s.request_throughput) && s.ttft_ms.n == 0,
        "never 2 in flight: no steady state, its figures unavailable");
  tp_steady_compute(&s, r, 2, 0, 0.95, 0);
  CHECK(!s.found, "no target (an open-loop rate): none");
  tp_steady_compute(&s, r, 2, 1, 0, 0);
  CHECK(!s.found, "threshold 0: off");
  tp_steady_compute(&s, r, 0, 1, 0.95, 0);
  CHECK(!s.found, "no records: none");
  fini(r, 2);
}

static void test_figures(void) {
  /* Two in flight throughout: request pairs back to back, each 2 s with 5
   * tokens (TTFT 0.5 s, then 4 gaps of 0.375 s). */
  tp_record r[8];
  for (int i = 0; i < 4; i++) {
    req(&r[2 * i], 2.0 * i, 2, 0.5, 5);
    req(&r[2 * i + 1], 2.0 * i + 0.1, 2, 0.5, 5);
  }
  tp_steady s;
  tp_steady_compute(&s, r, 8, 2, 1.0, 0);
  /* Up at 0.1 (the second send); the last fall below 2 is at 8.0, when
   * request 6 ends and nothing replaces it. */
  CHECK(s.found && fabs(s.start_s - 0.1) < 1e-9 && fabs(s.end_s - 8.0) < 1e-9, "window 0.1-8.0 s (got %.9f-%.9f)",
        s.start_s, s.end_s);
  /* Sent in [0.1, 8): all but the first (7); ended in it: those ending at
   * 2.0, 2.1, 4.0, 4.1, 6.0, 6.1 (8.0 is the bound). */
  CHECK_INT(s.started, 7, "7 sent in the window");
  CHECK_INT(s.completed, 6, "6 ended in it");
  CHECK(fabs(s.request_throughput - 6 / 7.9) < 1e-12, "requests/s over the window");
  CHECK(fabs(s.input_token_throughput - 700 / 7.9) < 1e-9, "input tokens of those sent in it");
  /* Tokens arrived in [0.1, 8): all of requests 0-5 (30: request 0's
   * first is at 0.5), request 6's but its last (at 8.0, the bound: 4), and
   * request 7's but its last (at 8.1: 4). */
  CHECK(fabs(s.output_token_throughput - 38 / 7.9) < 1e-9, "output tokens arrived in it (got %.12f)",
        s.output_token_throughput * 7.9);
  CHECK(s.ttft_ms.n == 7 && fabs(s.ttft_ms.p50 - 500) < 1e-5, "TTFT of the 7 sent in it");
  CHECK(s.tpot_ms.n == 7 && fabs(s.tpot_ms.avg - 375) < 1e-5, "TPOT of the 7: (2 - 0.5) s / 4");
  CHECK(s.latency_ms.n == 7 && fabs(s.latency_ms.max - 2000) < 1e-5, "latency of the 7");
  CHECK(s.short_window, "7.9 s is short (under 10 s)");

  /* A missing token count makes the token rates unavailable. */
  r[3].output_tokens = -1;
  r[3].input_tokens = -1;
  tp_steady_compute(&s, r, 8, 2, 1.0, 0);
  CHECK(isnan(s.output_token_throughput) && isnan(s.input_token_throughput) && s.request_throughput > 0,
        "a request without counts: token rates unavailable, the request rate stands");
  fini(r, 8);
}

int main(void) {
  test_window();
  test_ties_and_exclusions();
  test_figures();
  return tp_test_done();
}

/* A level's time series (lib/metrics/tp_slices.c, docs/metrics.md "Time
 * series") on records made by hand: events on a slice's edge go to the
 * slice that starts there, a request spanning three slices has its tokens
 * spread over them and its time in flight split, an empty slice in the
 * middle has zeros and no percentiles, the last slice ends at the last
 * event; warm-up records are left out, failures counted apart; a long level
 * gets wider slices. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/tp_slices.h"
#include "tp_test.h"

#define T0 1000000000000ULL
#define S(x) ((uint64_t)llround((x)*1e9))

/* A successful request sent at `at` s, lasting `len` s, with `tokens`
 * output tokens in as many text responses, the first at `ttft` s after the
 * send, the last at the end. */
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

static void test_slices(void) {
  tp_record r[6];
  req(&r[0], 0.2, 0.6, 0.5, 1); /* all in slice 0 */
  req(&r[1], 0.5, 2.0, 0.5, 5); /* first token at 1.0 (an edge), tokens at 1, 1.375, 1.75, 2.125, 2.5 */
  r[1].planned_ns -= S(0.003);  /* sent 3 ms late */
  req(&r[2], 1.2, 0.2, 0.1, 1); /* fails */
  r[2].err_class = TP_ERRCLASS_HTTP_STATUS;
  req(&r[3], 0.1, 3.8, 0.5, 4); /* warm-up: left out, even of the level's end */
  r[3].warmup = true;
  req(&r[4], 4.5, 0.4, 0.1, 1); /* after an empty slice; the last event, at 4.9 */
  req(&r[5], 1.5, 0.5, 0.4, 1); /* ends at 2.0: an edge */
  tp_slice *s = NULL;
  size_t n = 0;
  uint64_t w = S(1);
  CHECK_INT(tp_slices_compute(&s, &n, r, 6, T0, &w), 0, "computes");
  CHECK_INT(n, 5, "0..4.9 s in 1 s slices: 5");
  CHECK_INT(w, S(1), "the width stays 1 s");
  if (n != 5) goto out;
  CHECK(s[4].start_s == 4 && fabs(s[4].end_s - 4.9) < 1e-12, "the last slice ends at the last event (%.9f)",
        s[4].end_s);
  CHECK(s[0].completed == 1 && s[1].completed == 0 && s[2].completed == 2 && s[3].completed == 0 &&
            s[4].completed == 1,
        "completions by end: an end at 2.0 s is slice 2's");
  CHECK(s[1].failed == 1 && s[0].failed + s[2].failed + s[3].failed + s[4].failed == 0,
        "the failure in slice 1 only");
  CHECK(s[0].sent == 2 && s[1].sent == 1 && s[4].sent == 1, "successful sends by slice");
  CHECK(s[0].first_tokens == 1 && s[1].first_tokens == 2 && s[4].first_tokens == 1,
        "a first token at 1.0 s is slice 1's");
  CHECK(s[0].output_tokens == 1 && s[1].output_tokens == 4 && s[2].output_tokens == 2 &&
            s[3].output_tokens == 0 && s[4].output_tokens == 1,
        "tokens placed evenly over first..last text: 1, 3+1, 2, 0, 1 (got %g %g %g %g %g)",
        s[0].output_tokens, s[1].output_tokens, s[2].output_tokens, s[3].output_tokens, s[4].output_tokens);
  CHECK(s[0].input_tokens == 200 && s[1].input_tokens == 100 && s[3].input_tokens == 0,
        "input tokens of the requests sent in the slice");
  CHECK(s[1].ttft_ms.n == 2 && fabs(s[1].ttft_ms.p50 - 450) < 1e-6, "slice 1 TTFT: 500 and 400 ms, p50 450");
  CHECK(s[1].itl_ms.n == 1 && fabs(s[1].itl_ms.p99 - 375) < 1e-6, "slice 1 ITL: 1.5 s / 4 = 375 ms");
  CHECK(fabs(s[0].send_lag_p99_ms - 2.97) < 1e-6, "slice 0 send lag p99 of 0 and 3 ms: 2.97 (got %.9f)",
        s[0].send_lag_p99_ms);
  CHECK(fabs(s[0].in_flight_avg - 1.1) < 1e-9 && fabs(s[1].in_flight_avg - 1.7) < 1e-9 &&
            fabs(s[2].in_flight_avg - 0.5) < 1e-9,
        "in flight, time-weighted: 0.6+0.5, 1+0.2+0.5 (the failure too), 0.5 (got %.9f %.9f %.9f)",
        s[0].in_flight_avg, s[1].in_flight_avg, s[2].in_flight_avg);
  CHECK(fabs(s[4].in_flight_avg - 0.4 / 0.9) < 1e-9, "the short last slice divides by its own 0.9 s");
  CHECK(s[3].sent == 0 && s[3].in_flight_avg == 0 && s[3].ttft_ms.n == 0 && s[3].itl_ms.n == 0 &&
            isnan(s[3].send_lag_p99_ms),
        "the empty slice: zeros, no percentiles");
  free(s);

  /* A missing count: the slices the request's text spans have no token
   * figure; the others keep theirs. */
  r[1].output_tokens = -1;
  w = S(1);
  tp_slices_compute(&s, &n, r, 6, T0, &w);
  CHECK(n == 5 && !isnan(s[0].output_tokens) && isnan(s[1].output_tokens) && isnan(s[2].output_tokens) &&
            s[4].output_tokens == 1,
        "a request without a count: slices 1 and 2 unavailable, 0 and 4 kept");
  free(s);
out:
  fini(r, 6);
}

static void test_edges(void) {
  tp_record r[2];
  tp_slice *s = (tp_slice *)1;
  size_t n = 7;
  uint64_t w = 0;
  req(&r[0], 0, 1, 0.5, 1);
  CHECK_INT(tp_slices_compute(&s, &n, r, 1, T0, &w), TP_EINVAL, "a width of 0 is refused");
  r[0].warmup = true;
  w = S(1);
  CHECK(tp_slices_compute(&s, &n, r, 1, T0, &w) == 0 && !s && n == 0, "only warm-up: no slices");
  tp_record_fini(&r[0]);

  /* 30000 s at 1 s is over TP_SLICES_MAX: the width doubles to 2 s. */
  req(&r[0], 0, 1, 0.5, 1);
  req(&r[1], 29999, 1, 0.5, 1);
  w = S(1);
  CHECK_INT(tp_slices_compute(&s, &n, r, 2, T0, &w), 0, "a long level computes");
  CHECK(w == S(2) && n == 15000, "width 2 s, 15000 slices (got %.3f s, %zu)", (double)w / 1e9, n);
  CHECK(n == 15000 && s[0].completed == 1 && s[14999].completed == 1, "one completion at each end");
  free(s);
  fini(r, 2);
}

int main(void) {
  test_slices();
  test_edges();
  return tp_test_done();
}

/* Unit tests for lib/metrics/tp_stats.c: the percentile definition against
 * values worked out by hand, and every metric of docs/metrics.md on records
 * whose timestamps are set by hand. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/tp_gaps.h"
#include "metrics/tp_request.h"
#include "metrics/tp_stats.h"
#include "tp_test.h"
#include "tokperf/tokperf.h"

#define EPS 1e-9
/* Far from zero, so "0 = did not happen" never collides with a real time. */
#define T0 1000000000000ULL
#define MS(x) ((uint64_t)((x) * 1000000.0))

static void check_stat(const tp_stat *st, size_t n, double avg, double min, double max,
                       double std, double p25, double p50, double p75, double p90,
                       double p95, double p99, const char *what) {
  char buf[160];
#define S(field, want)                                             \
  do {                                                             \
    snprintf(buf, sizeof(buf), "%s: " #field, what);               \
    CHECK_NEAR(st->field, want, EPS * (1 + fabs(want)), buf);      \
  } while (0)
  snprintf(buf, sizeof(buf), "%s: n", what);
  CHECK_INT(st->n, n, buf);
  S(avg, avg);
  S(min, min);
  S(max, max);
  S(std, std);
  S(p25, p25);
  S(p50, p50);
  S(p75, p75);
  S(p90, p90);
  S(p95, p95);
  S(p99, p99);
#undef S
}

static void test_stat_one_to_ten(void) {
  /* Shuffled, so the sort is part of what is tested.  By hand, rank =
   * p/100 x 9: p25 -> 2.25 -> 3 + 0.25; p50 -> 4.5 -> 5.5; p75 -> 6.75 ->
   * 7.75; p90 -> 8.1 -> 9.1; p95 -> 8.55 -> 9.55; p99 -> 8.91 -> 9.91.
   * Population variance = sum (i - 5.5)^2 / 10 = 82.5 / 10. */
  double v[] = {7, 3, 10, 1, 5, 9, 2, 8, 6, 4};
  tp_stat st;
  tp_stat_compute(&st, v, 10);
  check_stat(&st, 10, 5.5, 1, 10, sqrt(8.25), 3.25, 5.5, 7.75, 9.1, 9.55, 9.91, "1..10");
  CHECK(v[0] == 1 && v[9] == 10, "values are sorted in place");
}

static void test_stat_small(void) {
  tp_stat st;

  /* Mean 5, squared deviations 9+1+1+1+0+0+4+16 = 32, /8 = 4 -> std 2
   * (the sample std would be sqrt(32/7), so this pins "population").
   * p50: rank 3.5 -> (4 + 5) / 2; p90: rank 6.3 -> 7 + 0.3 x 2;
   * p25: rank 1.75 -> 4; p75: rank 5.25 -> 5 + 0.25 x 2;
   * p95: rank 6.65 -> 7 + 0.65 x 2; p99: rank 6.93 -> 7 + 0.93 x 2. */
  double a[] = {9, 2, 4, 5, 4, 7, 4, 5};
  tp_stat_compute(&st, a, 8);
  check_stat(&st, 8, 5, 2, 9, 2, 4, 4.5, 5.5, 7.6, 8.3, 8.86, "2,4,4,4,5,5,7,9");

  /* Two values: every percentile is a straight blend of them. */
  double b[] = {3, 1};
  tp_stat_compute(&st, b, 2);
  check_stat(&st, 2, 2, 1, 3, 1, 1.5, 2, 2.5, 2.8, 2.9, 2.98, "1,3");

  double c[] = {42};
  tp_stat_compute(&st, c, 1);
  check_stat(&st, 1, 42, 42, 42, 0, 42, 42, 42, 42, 42, 42, "single value");

  /* 0.1 + 0.1 + 0.1 is not 0.3 in binary; the mean of equal values must
   * still be that value, and their spread exactly 0. */
  double d[] = {0.1, 0.1, 0.1};
  tp_stat_compute(&st, d, 3);
  CHECK(st.avg == 0.1, "mean of equal values is the value exactly");
  CHECK(st.std == 0.0, "std of equal values is exactly 0");

  /* Large, close values (nanosecond scale): the sum-of-squares shortcut
   * loses everything here; two passes do not. */
  double e[] = {1e12 + 1, 1e12 + 2, 1e12 + 3};
  tp_stat_compute(&st, e, 3);
  CHECK_NEAR(st.std, sqrt(2.0 / 3.0), 1e-6, "std of large close values");

  tp_stat z;
  memset(&z, 0x5a, sizeof(z));
  tp_stat_compute(&z, NULL, 0);
  check_stat(&z, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, "n = 0");
}

/* A record that succeeded: sent at sent_ms, text responses at text_ms[],
 * done at done_ms, with token counts. */
static void make_ok(tp_record *r, uint64_t seq, double sent_ms, const double *text_ms,
                    size_t n_text, double done_ms, int64_t out_tokens, int64_t in_tokens) {
  tp_record_init(r);
  r->seq = seq;
  r->planned_ns = r->sent_ns = T0 + MS(sent_ms);
  for (size_t i = 0; i < n_text; i++) tp_record_add_response(r, T0 + MS(text_ms[i]), true);
  r->done_ns = T0 + MS(done_ms);
  r->output_tokens = out_tokens;
  r->input_tokens = in_tokens;
}

static void make_failed(tp_record *r, uint64_t seq, double sent_ms, double done_ms,
                        tp_error_class cls, const char *msg) {
  tp_record_init(r);
  r->seq = seq;
  /* sent_ms < 0: the request never left (e.g. a connect failure). */
  r->planned_ns = T0 + MS(sent_ms < 0 ? 0 : sent_ms);
  r->sent_ns = sent_ms < 0 ? 0 : T0 + MS(sent_ms);
  r->done_ns = T0 + MS(done_ms);
  tp_record_fail(r, cls, cls == TP_ERRCLASS_GRPC_STATUS ? 5 : -1, msg, msg ? strlen(msg) : 0);
}

static void free_recs(tp_record *recs, size_t n) {
  for (size_t i = 0; i < n; i++) tp_record_fini(&recs[i]);
}

/* The main level: three successes, two failures, two warm-ups whose values
 * would change every figure if they leaked in. */
static size_t build_level(tp_record *recs, bool with_tokens) {
  size_t n = 0;
  int64_t out1 = with_tokens ? 4 : -1, out2 = with_tokens ? 3 : -1, out3 = with_tokens ? 1 : -1;
  int64_t in1 = with_tokens ? 100 : -1, in2 = with_tokens ? 50 : -1, in3 = with_tokens ? 10 : -1;

  /* Warm-up: slow, huge, and one failed. */
  double w_text[] = {5000, 90000};
  make_ok(&recs[n++], 0, 0, w_text, 2, 100000, 1000, 1000);
  recs[n - 1].warmup = true;
  make_failed(&recs[n++], 1, 1, 2, TP_ERRCLASS_CONNECT, "warm-up failure");
  recs[n - 1].warmup = true;

  /* r1: a role-only response first (no text, does not start TTFT), then
   * text at 10, 20, 30 ms.  TTFT 10, ITL (30-10)/(4-1), latency 30. */
  tp_record *r = &recs[n++];
  make_ok(r, 2, 0, NULL, 0, 30, out1, in1);
  tp_record_add_response(r, T0 + MS(5), false);
  tp_record_add_response(r, T0 + MS(10), true);
  tp_record_add_response(r, T0 + MS(20), true);
  tp_record_add_response(r, T0 + MS(30), true);

  /* r2: sent at 10, text at 30 and 50, then a flag-only final response at
   * 60.  TTFT 20, ITL (50-30)/(3-1) = 10, latency 50. */
  double t2[] = {30, 50};
  r = &recs[n++];
  make_ok(r, 3, 10, t2, 2, 60, out2, in2);
  tp_record_add_response(r, T0 + MS(60), false);

  /* r3: one response with one token: TTFT 40, latency 40, no ITL. */
  double t3[] = {60};
  make_ok(&recs[n++], 4, 20, t3, 1, 60, out3, in3);

  /* Two failures, in array order seq 6 then seq 5: the sample error must
   * be seq 5's.  The later done time (100 ms) ends the window. */
  make_failed(&recs[n++], 6, 40, 90, TP_ERRCLASS_TIMEOUT, "deadline exceeded");
  make_failed(&recs[n++], 5, 30, 100, TP_ERRCLASS_GRPC_STATUS,
              "NOT_FOUND: model 'x' not found");
  return n;
}

static void test_level_metrics(void) {
  tp_record recs[8];
  size_t n = build_level(recs, true);
  tp_level_result lr;
  memset(&lr, 0x77, sizeof(lr));
  CHECK_INT(tp_level_compute(&lr, recs, n), 0, "level compute returns 0");

  CHECK_INT(lr.concurrency, 0, "concurrency left for the caller (zeroed)");
  CHECK_INT(lr.max_in_flight, 0, "max_in_flight left for the caller (zeroed)");
  CHECK_INT(lr.requests, 5, "warm-up excluded from requests");
  CHECK_INT(lr.succeeded, 3, "succeeded");
  CHECK_INT(lr.failed, 2, "failed");
  CHECK_INT(lr.errors_by_class[TP_ERRCLASS_GRPC_STATUS], 1, "grpc_status errors");
  CHECK_INT(lr.errors_by_class[TP_ERRCLASS_TIMEOUT], 1, "timeout errors");
  CHECK_INT(lr.errors_by_class[TP_ERRCLASS_CONNECT], 0, "warm-up connect error not counted");
  CHECK_INT(lr.errors_by_class[TP_ERRCLASS_NONE], 0, "no unfinished requests");
  CHECK_STR(lr.first_error, "grpc_status: NOT_FOUND: model 'x' not found",
            "first error is the lowest seq, prefixed by its class");

  /* Window: first measured send (0 ms) to last measured completion, the
   * failed request at 100 ms. */
  CHECK_NEAR(lr.duration_s, 0.1, EPS, "duration includes failed requests");
  CHECK(lr.tokens_available, "tokens available");

  /* TTFT {10, 20, 40}: mean 70/3; deviations -40/3, -10/3, 50/3 ->
   * variance (1600 + 100 + 2500) / 27. */
  check_stat(&lr.ttft_ms, 3, 70.0 / 3, 10, 40, sqrt(4200.0 / 27), 15, 20, 30, 36, 38, 39.6,
             "ttft_ms");
  /* ITL {20/3, 10}: r3 (one token) is left out. */
  double i1 = 20.0 / 3, i2 = 10;
  check_stat(&lr.itl_ms, 2, (i1 + i2) / 2, i1, i2, (i2 - i1) / 2, i1 + 0.25 * (i2 - i1),
             i1 + 0.5 * (i2 - i1), i1 + 0.75 * (i2 - i1), i1 + 0.9 * (i2 - i1),
             i1 + 0.95 * (i2 - i1), i1 + 0.99 * (i2 - i1), "itl_ms");
  /* Latency {30, 50, 40}. */
  check_stat(&lr.latency_ms, 3, 40, 30, 50, sqrt(200.0 / 3), 35, 40, 45, 48, 49, 49.8,
             "latency_ms");
  check_stat(&lr.output_tokens, 3, 8.0 / 3, 1, 4, sqrt((25.0 + 1 + 16) / 27), 2, 3, 3.5, 3.8,
             3.9, 3.98, "output_tokens");
  CHECK_INT(lr.input_tokens.n, 3, "input_tokens: n");
  CHECK_NEAR(lr.input_tokens.avg, 160.0 / 3, EPS, "input_tokens: avg");
  CHECK_NEAR(lr.input_tokens.max, 100, EPS, "input_tokens: max");
  /* Per user: 4 / 0.030 s, 3 / 0.050 s, 1 / 0.040 s = 133.3, 60, 25. */
  CHECK_INT(lr.output_tps_per_user.n, 3, "tps per user: n");
  CHECK_NEAR(lr.output_tps_per_user.max, 4 / 0.030, 1e-6, "tps per user: max");
  CHECK_NEAR(lr.output_tps_per_user.p50, 60, 1e-6, "tps per user: p50");
  CHECK_NEAR(lr.output_tps_per_user.min, 25, 1e-6, "tps per user: min");
  CHECK_NEAR(lr.output_tps_per_user.avg, (4 / 0.030 + 60 + 25) / 3, 1e-6, "tps per user: avg");
  /* Responses per request {4, 3, 1}, empty ones included. */
  CHECK_INT(lr.responses.n, 3, "responses: n");
  CHECK_NEAR(lr.responses.avg, 8.0 / 3, EPS, "responses: avg");
  CHECK_NEAR(lr.responses.max, 4, EPS, "responses: max");

  /* The low percentiles of TTFT {10, 20, 40}: ranks 0.02, 0.1, 0.2 of 2. */
  CHECK_NEAR(lr.ttft_ms.p1, 10.2, 1e-9, "ttft p1");
  CHECK_NEAR(lr.ttft_ms.p5, 11, 1e-9, "ttft p5");
  CHECK_NEAR(lr.ttft_ms.p10, 12, 1e-9, "ttft p10");
  /* Time to second token: r1 20 - 10, r2 50 - 30; r3 has one response. */
  CHECK_INT(lr.ttst_ms.n, 2, "ttst: n (a single-response request has none)");
  CHECK_NEAR(lr.ttst_ms.min, 10, 1e-9, "ttst: min");
  CHECK_NEAR(lr.ttst_ms.max, 20, 1e-9, "ttst: max");
  /* TPOT to the end of the request: r1 (30 - 10) / 3, r2 (60 - 30) / 2 (the
   * flag-only final response at 60 counts, unlike ITL's last text at 50). */
  CHECK_INT(lr.tpot_ms.n, 2, "tpot: n (one token has none)");
  CHECK_NEAR(lr.tpot_ms.min, 20.0 / 3, 1e-9, "tpot: min");
  CHECK_NEAR(lr.tpot_ms.max, 15, 1e-9, "tpot: max, past ITL's 10");
  /* Per user from ITL: 1000 / (20/3) = 150 and 1000 / 10 = 100. */
  CHECK_INT(lr.output_tps_per_user_itl.n, 2, "tps per user from ITL: n");
  CHECK_NEAR(lr.output_tps_per_user_itl.max, 150, 1e-9, "tps per user from ITL: max");
  CHECK_NEAR(lr.output_tps_per_user_itl.min, 100, 1e-9, "tps per user from ITL: min");

  /* Throughputs over the 0.1 s window, successful requests only. */
  CHECK_NEAR(lr.output_token_throughput, 8 / 0.1, 1e-6, "output token throughput");
  CHECK_NEAR(lr.input_token_throughput, 160 / 0.1, 1e-6, "input token throughput");
  CHECK_NEAR(lr.request_throughput, 3 / 0.1, 1e-6, "request throughput");
  free_recs(recs, n);
}

static void test_level_no_tokens(void) {
  tp_record recs[8];
  size_t n = build_level(recs, false);
  tp_level_result lr;
  CHECK_INT(tp_level_compute(&lr, recs, n), 0, "no tokens: returns 0");
  CHECK(!lr.tokens_available, "no tokens: tokens unavailable");
  CHECK_INT(lr.itl_ms.n, 0, "no tokens: ITL unavailable");
  CHECK_INT(lr.output_tokens.n, 0, "no tokens: output tokens unavailable");
  CHECK_INT(lr.input_tokens.n, 0, "no tokens: input tokens unavailable");
  CHECK_INT(lr.output_tps_per_user.n, 0, "no tokens: per-user throughput unavailable");
  CHECK_NEAR(lr.output_token_throughput, 0, 0, "no tokens: output throughput 0");
  CHECK_NEAR(lr.input_token_throughput, 0, 0, "no tokens: input throughput 0");
  /* Timing needs no tokenizer. */
  CHECK_INT(lr.ttft_ms.n, 3, "no tokens: TTFT still measured");
  CHECK_NEAR(lr.ttft_ms.p50, 20, EPS, "no tokens: TTFT p50");
  CHECK_INT(lr.latency_ms.n, 3, "no tokens: latency still measured");
  CHECK_NEAR(lr.request_throughput, 30, 1e-6, "no tokens: request throughput");
  free_recs(recs, n);
}

/* An ITL bound cannot be met by requests whose ITL nobody measured: no
 * tokenizer counted their tokens.  They fail it and are counted as unjudged;
 * a TTFT bound alone still judges them. */
static void test_goodput_unjudged(void) {
  tp_record recs[8];
  size_t n = build_level(recs, false);
  tp_level_result lr;
  tp_level_opts o = {0};
  o.goodput_itl_ms = 1000;
  CHECK_INT(tp_level_compute_ex(&lr, recs, n, &o), 0, "goodput without tokens: returns 0");
  CHECK(lr.goodput_set, "goodput is set");
  CHECK_INT(lr.goodput_requests, 0, "no request meets an ITL bound it cannot show");
  CHECK_INT(lr.goodput_unjudged, lr.succeeded, "every successful request is counted as unjudged");
  CHECK(lr.succeeded > 0, "there were successful requests to judge");
  memset(&o, 0, sizeof(o));
  o.goodput_ttft_ms = 1000;
  CHECK_INT(tp_level_compute_ex(&lr, recs, n, &o), 0, "TTFT bound only: returns 0");
  CHECK_INT(lr.goodput_requests, lr.succeeded, "a generous TTFT bound needs no tokenizer");
  CHECK_INT(lr.goodput_unjudged, 0, "and leaves nothing unjudged");
  free_recs(recs, n);
  /* With tokens counted, the ITL bound judges every request of 2+ tokens,
   * and the one-token request (r3) has no gaps to be slow in. */
  n = build_level(recs, true);
  memset(&o, 0, sizeof(o));
  o.goodput_itl_ms = 1000;
  CHECK_INT(tp_level_compute_ex(&lr, recs, n, &o), 0, "goodput with tokens: returns 0");
  CHECK_INT(lr.itl_ms.n, lr.succeeded - 1, "every request but the one-token one has an ITL");
  CHECK_INT(lr.goodput_unjudged, 0, "nothing is unjudged");
  CHECK_INT(lr.goodput_requests, lr.succeeded, "and the one-token request passes the ITL bound");
  free_recs(recs, n);
}

/* GenAI-Perf's time_to_second_token (a ceiling) and
 * output_token_throughput_per_user (a floor on 1000 / ITL): each request
 * judged on its own figure, one without it (the one-token request) passing
 * as it has no second token to be late. */
static void test_goodput_ttst_per_user(void) {
  tp_record recs[8];
  size_t n = build_level(recs, true);
  static const struct {
    double ttst_ms, tps_min;
  } cases[] = {{1e6, 0}, {1e-6, 0}, {0, 1e-6}, {0, 1e12}, {1e6, 1e-6}, {1e-6, 1e-6}};
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    tp_level_opts o = {0};
    o.goodput_ttst_ms = cases[c].ttst_ms;
    o.goodput_tps_per_user_min = cases[c].tps_min;
    tp_level_result lr;
    CHECK(tp_level_compute_ex(&lr, recs, n, &o) == 0, "case %zu: returns 0", c);
    uint64_t want = 0, unjudged = 0;
    for (size_t i = 0; i < n; i++) {
      tp_req_metrics m;
      tp_request_metrics(&recs[i], &m);
      if (recs[i].warmup || !m.ok) continue;
      bool one = m.generated_tokens >= 0 && m.generated_tokens < 2;
      bool ok = true, unj = false;
      if (o.goodput_ttst_ms > 0) {
        ok &= m.ttst_ms >= 0 ? m.ttst_ms <= o.goodput_ttst_ms : one;
        unj |= m.ttst_ms < 0 && !one;
      }
      if (o.goodput_tps_per_user_min > 0) {
        ok &= m.output_tps_per_user_itl >= 0 ? m.output_tps_per_user_itl >= o.goodput_tps_per_user_min : one;
        unj |= m.output_tps_per_user_itl < 0 && !one;
      }
      want += ok;
      unjudged += unj;
    }
    CHECK(lr.goodput_set && lr.goodput_requests == want && lr.goodput_unjudged == unjudged,
          "case %zu (ttst %g, per-user %g): %" PRIu64 " good of %" PRIu64 ", want %" PRIu64, c, cases[c].ttst_ms,
          cases[c].tps_min, lr.goodput_requests, lr.succeeded, want);
  }
  tp_level_opts o = {0};
  o.goodput_ttst_ms = 1e6;
  tp_level_result lr;
  tp_level_compute_ex(&lr, recs, n, &o);
  CHECK(lr.goodput_requests == lr.succeeded && lr.succeeded > 1, "a generous TTST bound: every request good");
  o.goodput_ttst_ms = 0;
  o.goodput_tps_per_user_min = 1e12;
  tp_level_compute_ex(&lr, recs, n, &o);
  CHECK(lr.goodput_requests == 1, "an unreachable per-user floor: only the one-token request passes (%" PRIu64 ")",
        lr.goodput_requests);
  free_recs(recs, n);
}

static void test_level_all_failed(void) {
  tp_record recs[3];
  /* A connect failure never sent (sent_ns 0) must not stretch the window
   * back to time 0.  It sits second in the array but has the lowest seq,
   * so it is also the sample error. */
  make_failed(&recs[0], 1, 10, 30, TP_ERRCLASS_STREAM_RESET, NULL);
  make_failed(&recs[1], 0, -1, 50, TP_ERRCLASS_CONNECT, "connection refused");
  make_failed(&recs[2], 2, 20, 40, TP_ERRCLASS_STREAM_RESET, "RST_STREAM");
  tp_level_result lr;
  CHECK_INT(tp_level_compute(&lr, recs, 3), 0, "all failed: returns 0");
  CHECK_INT(lr.requests, 3, "all failed: requests");
  CHECK_INT(lr.succeeded, 0, "all failed: succeeded");
  CHECK_INT(lr.failed, 3, "all failed: failed");
  CHECK_INT(lr.errors_by_class[TP_ERRCLASS_CONNECT], 1, "all failed: connect");
  CHECK_INT(lr.errors_by_class[TP_ERRCLASS_STREAM_RESET], 2, "all failed: stream_reset");
  CHECK_STR(lr.first_error, "connect: connection refused", "all failed: first error");
  CHECK_NEAR(lr.duration_s, 0.040, EPS, "all failed: window from first real send (10 ms)");
  CHECK(!lr.tokens_available, "all failed: no tokens");
  CHECK_INT(lr.ttft_ms.n, 0, "all failed: no TTFT");
  CHECK_INT(lr.latency_ms.n, 0, "all failed: no latency");
  CHECK_INT(lr.responses.n, 0, "all failed: no responses stat");
  CHECK_NEAR(lr.request_throughput, 0, 0, "all failed: request throughput 0");
  free_recs(recs, 3);

  /* A message-less failure is named by its class alone. */
  make_failed(&recs[0], 0, 0, 5, TP_ERRCLASS_PROTOCOL, NULL);
  CHECK_INT(tp_level_compute(&lr, recs, 1), 0, "no message: returns 0");
  CHECK_STR(lr.first_error, "protocol", "no message: class name only");
  free_recs(recs, 1);
}

static void test_level_edge_cases(void) {
  tp_record recs[3];
  tp_level_result lr;

  /* Only empty responses (role-only, then a flag-only final): the request
   * succeeded with 0 tokens but has no first token. */
  tp_record *r = &recs[0];
  make_ok(r, 0, 0, NULL, 0, 25, 0, 7);
  tp_record_add_response(r, T0 + MS(5), false);
  tp_record_add_response(r, T0 + MS(25), false);
  /* Never finished, no error recorded (e.g. still in flight at the end). */
  tp_record_init(&recs[1]);
  recs[1].seq = 1;
  recs[1].sent_ns = T0 + MS(1);
  /* Everything in one response (unary): 5 tokens but no gaps to measure ->
   * no ITL value at all, rather than a 0 that would drag the mean down. */
  double t[] = {12};
  make_ok(&recs[2], 2, 2, t, 1, 12, 5, 3);

  CHECK_INT(tp_level_compute(&lr, recs, 3), 0, "edge: returns 0");
  CHECK_INT(lr.succeeded, 2, "edge: succeeded");
  CHECK_INT(lr.failed, 1, "edge: unfinished counts as failed");
  CHECK_INT(lr.errors_by_class[TP_ERRCLASS_NONE], 1, "edge: unfinished counted under none");
  CHECK_STR(lr.first_error, "unfinished: no final response", "edge: unfinished sample error");
  CHECK_INT(lr.ttft_ms.n, 1, "edge: empty responses never give a first token");
  CHECK_NEAR(lr.ttft_ms.avg, 10, EPS, "edge: TTFT of the one-response request");
  CHECK_INT(lr.latency_ms.n, 2, "edge: latency for both successes");
  CHECK_INT(lr.output_tokens.n, 2, "edge: 0 tokens is a value, not unavailable");
  CHECK_NEAR(lr.output_tokens.min, 0, 0, "edge: 0 tokens");
  CHECK_INT(lr.itl_ms.n, 0, "edge: a single-response request has no ITL");
  CHECK_NEAR(lr.duration_s, 0.025, EPS, "edge: window 0..25 ms");
  CHECK_NEAR(lr.output_token_throughput, 5 / 0.025, 1e-6, "edge: output throughput");
  CHECK_NEAR(lr.input_token_throughput, 10 / 0.025, 1e-6, "edge: input throughput");
  free_recs(recs, 3);

  memset(&lr, 0x33, sizeof(lr));
  CHECK_INT(tp_level_compute(&lr, NULL, 0), 0, "empty: returns 0");
  CHECK(lr.requests == 0 && lr.duration_s == 0 && lr.ttft_ms.n == 0 && lr.first_error[0] == 0 &&
            !lr.tokens_available && lr.concurrency == 0,
        "empty: everything zeroed");

  /* Only warm-up records: nothing is measured. */
  double tw[] = {3};
  make_ok(&recs[0], 0, 0, tw, 1, 4, 2, 2);
  recs[0].warmup = true;
  CHECK_INT(tp_level_compute(&lr, recs, 1), 0, "warm-up only: returns 0");
  CHECK(lr.requests == 0 && lr.succeeded == 0 && lr.duration_s == 0 && lr.ttft_ms.n == 0,
        "warm-up only: nothing measured");
  free_recs(recs, 1);
}

static int cmp_ref(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Arrays large enough for the radix sort (512 values and more) give the
 * statistics a plain comparison sort gives: negative values, zeros of both
 * signs, infinities, ties, one value repeated, values of one scale (whose
 * high digits all keys share). */
static void test_stat_large_sorts(void) {
  static const size_t sizes[] = {511, 512, 513, 4096, 100000};
  uint64_t x = 88172645463325252ULL;
  for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
    for (int kind = 0; kind < 4; kind++) {
      size_t n = sizes[si];
      double *v = malloc(n * sizeof(double)), *ref = malloc(n * sizeof(double));
      for (size_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        double u = (double)(x >> 11) / 9007199254740992.0;
        v[i] = kind == 0   ? (u - 0.5) * 1e6
               : kind == 1 ? 20.0 + u /* one scale: ms close together */
               : kind == 2 ? (double)(x % 5)
                           : 7.25;
        if (kind == 0 && i % 97 == 0) v[i] = i % 2 ? -0.0 : 0.0;
        if (kind == 0 && i == 3) v[i] = INFINITY;
        if (kind == 0 && i == 4) v[i] = -INFINITY;
      }
      memcpy(ref, v, n * sizeof(double));
      qsort(ref, n, sizeof(double), cmp_ref);
      tp_stat st;
      tp_stat_compute(&st, v, n);
      int sorted = 1;
      for (size_t i = 0; i < n; i++)
        if (!(v[i] == ref[i])) sorted = 0;
      CHECK(sorted, "n=%zu kind %d: values sorted as a comparison sort sorts them", n, kind);
      double p50 = ref[(n - 1) / 2] + (ref[(n - 1) / 2 + ((n - 1) % 2 ? 1 : 0)] - ref[(n - 1) / 2]) * 0.5 * ((n - 1) % 2);
      CHECK(st.min == ref[0] && st.max == ref[n - 1] && (kind == 0 || fabs(st.p50 - p50) <= 1e-12 * fabs(p50)),
            "n=%zu kind %d: min, max and median (%g %g %g)", n, kind, st.min, st.max, st.p50);
      free(v);
      free(ref);
    }
  }
}

/* The exact statistics of gaps[] beside the pool's: n, min and max equal,
 * mean and std to rounding, each percentile within the bucket's 1/1024
 * (exact when every gap is under 1024 ns). */
static void check_pool_against(const tp_stat *got, const uint64_t *gaps, size_t n, bool exact, const char *what) {
  double *ms = malloc(n * sizeof(*ms));
  for (size_t i = 0; i < n; i++) ms[i] = (double)gaps[i] / 1e6;
  tp_stat want;
  tp_stat_compute(&want, ms, n);
  free(ms);
  CHECK_INT(got->n, want.n, what);
  CHECK_NEAR(got->min, want.min, 0, what);
  CHECK_NEAR(got->max, want.max, 0, what);
  CHECK_NEAR(got->avg, want.avg, 1e-9 * (1 + want.avg), what);
  CHECK_NEAR(got->std, want.std, 1e-9 * (1 + want.std), what);
  double tol = exact || want.max < 1024e-6 ? 0 : 1.0 / 1024;
  const double g[] = {got->p1, got->p5, got->p10, got->p25, got->p50, got->p75, got->p90, got->p95, got->p99};
  const double w[] = {want.p1, want.p5, want.p10, want.p25, want.p50, want.p75, want.p90, want.p95, want.p99};
  for (size_t i = 0; i < sizeof(g) / sizeof(g[0]); i++) CHECK_NEAR(g[i], w[i], tol * w[i] + 1e-12, what);
}

/* vLLM's ITL: every gap between consecutive text responses, pooled. */
static void test_gap_pool_records(void) {
  tp_record recs[6];
  /* Text at 10, 20, 30 after a role-only response at 5: gaps 10, 10. */
  double t0[] = {10, 20, 30};
  make_ok(&recs[0], 0, 0, NULL, 0, 35, 4, 10);
  tp_record_add_response(&recs[0], T0 + MS(5), false);
  for (int i = 0; i < 3; i++) tp_record_add_response(&recs[0], T0 + MS(t0[i]), true);
  /* Text at 30 and 70, then a usage-only response at 80: one gap, 40. */
  double t1[] = {30, 70};
  make_ok(&recs[1], 1, 0, t1, 2, 80, 2, 10);
  tp_record_add_response(&recs[1], T0 + MS(80), false);
  /* An empty delta at 15 between text at 10 and 22 splits the gap: 5, 7. */
  make_ok(&recs[2], 2, 0, NULL, 0, 22, 2, 10);
  tp_record_add_response(&recs[2], T0 + MS(10), true);
  tp_record_add_response(&recs[2], T0 + MS(15), false);
  tp_record_add_response(&recs[2], T0 + MS(22), true);
  /* Two text responses in one read (one stamp) then one at 13: the gap of
   * 0 is no gap the client saw (left out, counted), then 3; a text-less
   * response sharing the last stamp adds no gap. */
  double t3[] = {10, 10, 13};
  make_ok(&recs[3], 3, 0, t3, 3, 13, 3, 10);
  tp_record_add_response(&recs[3], T0 + MS(13), false);
  /* One text response: no gap.  A shed record: its times are gone. */
  double t4[] = {10};
  make_ok(&recs[4], 4, 0, t4, 1, 10, 1, 10);
  double t5[] = {10, 11};
  make_ok(&recs[5], 5, 0, t5, 2, 11, 2, 10);
  tp_record_shed(&recs[5], 0);

  tp_gap_pool *p = tp_gap_pool_new();
  CHECK(p != NULL, "gap pool allocated");
  if (!p) return;
  for (int i = 0; i < 6; i++) tp_gap_pool_add_record(p, &recs[i]);
  uint64_t want[] = {MS(10), MS(10), MS(40), MS(5), MS(7), MS(3)};
  tp_stat st;
  tp_gap_pool_stat(p, &st);
  check_pool_against(&st, want, 6, true, "pooled gaps of hand-made records");
  CHECK_NEAR(st.max, 40, 0, "largest gap 40 ms");
  CHECK_NEAR(st.avg, 75.0 / 6, 1e-12, "mean gap 75/6 ms");
  CHECK_INT(tp_gap_pool_merged(p), 1, "the gap of 0 between responses of one time is counted apart");

  /* Through the level: the pool passed in the options, per-request ITL
   * untouched (its mean differs: each request counts once there). */
  tp_level_opts o;
  memset(&o, 0, sizeof(o));
  o.gaps = p;
  tp_level_result lr;
  tp_level_compute_ex(&lr, recs, 6, &o);
  CHECK_INT(lr.itl_pooled_ms.n, 6, "level: pooled gaps");
  CHECK_INT(lr.fidelity.itl_pooled_merged_gaps, 1, "level: the gap of 0 left out is counted");
  CHECK_NEAR(lr.itl_pooled_ms.p50, st.p50, 0, "level: pooled median is the pool's");
  CHECK(lr.itl_ms.n == 5 && fabs(lr.itl_ms.avg - st.avg) > 0.1, "level: per-request ITL kept apart");
  tp_level_compute(&lr, recs, 6);
  CHECK_INT(lr.itl_pooled_ms.n, 0, "level without a pool: unavailable");

  tp_gap_pool_reset(p);
  tp_gap_pool_stat(p, &st);
  CHECK_INT(st.n, 0, "reset pool is empty");
  CHECK_INT(tp_gap_pool_merged(p), 0, "and has no merged gaps");
  tp_gap_pool_free(p);
  free_recs(recs, 6);
}

/* Many gaps over six orders of magnitude against the exact statistics,
 * and small ones (under 1024 ns) exactly: kept, every figure is exact;
 * past the pool's exact_max (here 1000 gaps, and 0), the buckets' are
 * within 1/1024. */
static void test_gap_pool_many(void) {
  tp_gap_pool *p = tp_gap_pool_new();
  CHECK(p != NULL, "gap pool allocated");
  if (!p) return;
  size_t n = 200000;
  uint64_t *g = malloc(n * sizeof(*g));
  uint64_t x = 88172645463325252ULL;
  static const size_t exact_max[] = {TP_GAP_POOL_EXACT_MAX, 1000, 0};
  for (int pass = 0; pass < 6; pass++) {
    tp_gap_pool_set_exact_max(p, exact_max[pass / 2]);
    tp_gap_pool_reset(p);
    for (size_t i = 0; i < n; i++) {
      x ^= x << 13, x ^= x >> 7, x ^= x << 17;
      g[i] = pass % 2 == 0 ? 1000 + x % 1000 * (1 + x / 1000 % 1000000) : x % 1024;
      tp_gap_pool_add(p, g[i]);
    }
    tp_stat st;
    tp_gap_pool_stat(p, &st);
    char what[96];
    snprintf(what, sizeof(what), "200000 gaps %s, %s", pass % 2 == 0 ? "1 us to 1 s" : "under 1024 ns",
             pass < 2 ? "kept: exact" : "past exact_max: the buckets");
    check_pool_against(&st, g, n, pass < 2, what);
  }
  free(g);
  tp_gap_pool_free(p);
}

int main(void) {
  test_stat_large_sorts();
  test_stat_one_to_ten();
  test_stat_small();
  test_level_metrics();
  test_level_no_tokens();
  test_goodput_unjudged();
  test_goodput_ttst_per_user();
  test_level_all_failed();
  test_level_edge_cases();
  test_gap_pool_records();
  test_gap_pool_many();
  return tp_test_done();
}

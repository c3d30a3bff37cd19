/* The fidelity verdict and the figures behind it (lib/metrics/tp_fidelity.c,
 * docs/metrics.md "Fidelity"), on inputs made by hand: each threshold on
 * both sides of its line, the client-bound rule (a busy core and a late
 * loop, never a busy core alone), figures that were not measured; and what
 * the records give: responses that share an arrival time are counted, and
 * a request whose text all came at one time has no ITL, TPOT or time to
 * second token rather than 0 ms. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/tp_fidelity.h"
#include "metrics/tp_metric.h"
#include "metrics/tp_request.h"
#include "metrics/tp_stats.h"
#include "tp_test.h"

#define T0 1000000000ULL
#define MS(x) ((uint64_t)((x)*1e6))

/* A level whose client figures are all well within their thresholds. */
static tp_level_result calm(void) {
  tp_level_result lr;
  memset(&lr, 0, sizeof(lr));
  lr.send_lag_ms.n = 100;
  lr.send_lag_ms.p50 = 0.02;
  lr.send_lag_ms.p99 = 0.2;
  lr.send_lag_ms.max = 0.5;
  lr.fidelity.loop_lag_ms.n = 1000;
  lr.fidelity.loop_lag_ms.p99 = 0.1;
  lr.fidelity.loop_lag_ms.max = 3;
  lr.fidelity.merged_pct = 0.2;
  lr.fidelity.client_cpu_pct = 20;
  lr.fidelity.process_cpu_pct = 45;
  lr.fidelity.reads_per_s = 900;
  return lr;
}

static void judge(tp_level_result *lr, uint64_t want, const char *want_reason, const char *what) {
  tp_fidelity_judge(lr);
  CHECK_STR(tp_fidelity_verdict_name(lr->fidelity.verdict), tp_fidelity_verdict_name(want), what);
  char w[200];
  snprintf(w, sizeof(w), "%s: reason", what);
  CHECK_STR(lr->fidelity.reason, want_reason, w);
}

static void test_verdict(void) {
  CHECK_STR(tp_fidelity_verdict_name(TP_FIDELITY_OK), "ok", "verdict names");
  CHECK_STR(tp_fidelity_verdict_name(TP_FIDELITY_DEGRADED), "degraded", "verdict names");
  CHECK_STR(tp_fidelity_verdict_name(TP_FIDELITY_CLIENT_BOUND), "client-bound", "verdict names");
  CHECK_STR(tp_fidelity_verdict_name(7), "?", "an unknown verdict");

  tp_level_result lr = calm();
  judge(&lr, TP_FIDELITY_OK, "", "every figure within its threshold: ok");

  /* A threshold is crossed only past it. */
  lr = calm();
  lr.send_lag_ms.p99 = TP_FIDELITY_SEND_LAG_P99_MS;
  lr.fidelity.loop_lag_ms.p99 = TP_FIDELITY_LOOP_LAG_P99_MS;
  lr.fidelity.merged_pct = TP_FIDELITY_MERGED_PCT;
  judge(&lr, TP_FIDELITY_OK, "", "figures on their thresholds: ok");

  lr = calm();
  lr.send_lag_ms.p99 = 3.2;
  judge(&lr, TP_FIDELITY_DEGRADED, "send lag p99 3.20 ms > 1 ms", "a late send: degraded, naming it");

  lr = calm();
  lr.fidelity.loop_lag_ms.p99 = 2.5;
  lr.fidelity.merged_pct = 12.34;
  judge(&lr, TP_FIDELITY_DEGRADED, "merged responses 12.3% > 1%",
        "a late loop and merged responses: degraded by what the merging did");
  lr = calm();
  lr.fidelity.first_merged_pct = 1.5;
  judge(&lr, TP_FIDELITY_DEGRADED, "first responses merged 1.5% > 1%",
        "first responses merged in over 1% of the requests (the TTFT p99 a token's gap late): degraded");
  lr = calm();
  lr.fidelity.loop_lag_ms.p99 = 7.2;
  judge(&lr, TP_FIDELITY_OK, "",
        "a late loop alone (a burst read one socket after another, every byte stamped) degrades nothing");
  lr = calm();
  lr.send_lag_ms.p99 = 2;
  lr.fidelity.merged_pct = 3;
  judge(&lr, TP_FIDELITY_DEGRADED, "send lag p99 2.00 ms > 1 ms; merged responses 3.0% > 1%",
        "two figures crossed: both named, in the report's order");

  /* Client-bound: the loop's core busy and the loop late. */
  lr = calm();
  lr.fidelity.client_cpu_pct = 99.5;
  lr.send_lag_ms.p99 = 40;
  judge(&lr, TP_FIDELITY_CLIENT_BOUND, "client CPU 99.5% of a core >= 90%; send lag p99 40.00 ms > 1 ms",
        "a busy core and late sends: client-bound");
  lr = calm();
  lr.fidelity.client_cpu_pct = TP_FIDELITY_CPU_PCT;
  lr.fidelity.loop_lag_ms.p99 = 5;
  judge(&lr, TP_FIDELITY_CLIENT_BOUND, "client CPU 90.0% of a core >= 90%; loop lag p99 5.00 ms > 1 ms",
        "at the CPU threshold and a late loop: client-bound");
  lr = calm();
  lr.fidelity.client_cpu_pct = 100;
  judge(&lr, TP_FIDELITY_OK, "",
        "a busy core alone (an open loop spinning for its deadlines) is not client-bound");
  lr = calm();
  lr.fidelity.client_cpu_pct = 100;
  lr.fidelity.merged_pct = 4;
  judge(&lr, TP_FIDELITY_DEGRADED, "merged responses 4.0% > 1%",
        "a busy core with merged responses but nothing late: degraded, not client-bound");
  lr = calm();
  lr.fidelity.client_cpu_pct = 50;
  lr.send_lag_ms.p99 = 700;
  judge(&lr, TP_FIDELITY_DEGRADED, "send lag p99 700.00 ms > 1 ms",
        "late with the core half idle (a busy machine, not the client): degraded");

  lr = calm();
  lr.answers_before_send = 2;
  judge(&lr, TP_FIDELITY_DEGRADED, "2 answers dated before their send",
        "an answer dated before its send (a clock error): degraded, naming the count");

  /* What was not measured crosses nothing. */
  tp_level_result none;
  memset(&none, 0, sizeof(none));
  none.fidelity.merged_pct = NAN;
  none.fidelity.client_cpu_pct = -1;
  none.send_lag_ms.p99 = 50; /* n = 0: no values */
  judge(&none, TP_FIDELITY_OK, "", "no figures measured: ok, with nothing to name");
  lr = calm();
  lr.fidelity.client_cpu_pct = NAN;
  lr.send_lag_ms.p99 = 9;
  judge(&lr, TP_FIDELITY_DEGRADED, "send lag p99 9.00 ms > 1 ms", "an unknown CPU never makes client-bound");
}

/* Repeated runs judged together: the mean's verdict, never better than the
 * worst run's. */
static void test_mean_runs(void) {
  tp_level_result runs[3] = {calm(), calm(), calm()};
  runs[2].send_lag_ms.p99 = 2.5; /* mean p99 (0.2 + 0.2 + 2.5) / 3 = 0.97: within */
  for (int i = 0; i < 3; i++) tp_fidelity_judge(&runs[i]);
  tp_level_result m;
  tp_metric_mean_runs(runs, 3, &m);
  CHECK_STR(tp_fidelity_verdict_name(m.fidelity.verdict), "degraded", "runs: the worst run's verdict stands");
  CHECK_STR(m.fidelity.reason, "a run was degraded", "runs: and says why");
  runs[2] = calm();
  tp_fidelity_judge(&runs[2]);
  tp_metric_mean_runs(runs, 3, &m);
  CHECK(m.fidelity.verdict == TP_FIDELITY_OK, "runs: all ok, the mean ok (a verdict is no count to sum)");
}

/* A record of text responses at the given times (ms after T0), with
 * tokens counted, sent at 0 and done at done_ms. */
static void make(tp_record *r, const double *at, size_t n, double done_ms, int32_t tokens) {
  tp_record_init(r);
  r->planned_ns = r->sent_ns = T0;
  for (size_t i = 0; i < n; i++) tp_record_add_response(r, T0 + MS(at[i]), true);
  r->done_ns = T0 + MS(done_ms);
  r->output_tokens = tokens;
}

static void test_records(void) {
  tp_record r[4];
  /* Three text responses in one read: no ITL, TPOT or second-token time. */
  make(&r[0], (double[]){10, 10, 10}, 3, 10, 3);
  /* Two reads: a, then b and c together; the ITL spans them, and is marked. */
  make(&r[1], (double[]){10, 20, 20}, 3, 20, 3);
  /* One read of text, and the final response later: a TPOT, no ITL. */
  make(&r[2], (double[]){10, 10}, 2, 30, 2);
  /* All apart. */
  make(&r[3], (double[]){10, 18, 26, 34}, 4, 34, 4);
  CHECK(r[0].n_text_merged == 2 && r[1].n_text_merged == 1 && r[2].n_text_merged == 1 &&
            r[3].n_text_merged == 0,
        "records count text responses sharing the time of the one before");
  tp_req_metrics m;
  tp_request_metrics(&r[0], &m);
  CHECK(m.itl_all_merged && m.itl_ms < 0 && m.tpot_ms < 0 && m.ttst_ms < 0 && m.output_tps_per_user_itl < 0,
        "all at one time: no ITL, TPOT or time to second token (not 0 ms)");
  CHECK(m.ttft_ms == 10 && m.latency_ms == 10, "its TTFT and latency stand");
  tp_request_metrics(&r[1], &m);
  CHECK(!m.itl_all_merged && m.itl_ms == 5 && m.ttst_ms == 10, "partly at one time: ITL over the span");
  tp_request_metrics(&r[2], &m);
  CHECK(m.itl_ms < 0 && m.tpot_ms == 20, "text at one time, the end later: a TPOT, no ITL");
  tp_request_metrics(&r[3], &m);
  CHECK(!m.itl_all_merged && fabs(m.itl_ms - 8) < 1e-9, "all apart: the ITL as ever");

  tp_level_result lr;
  tp_level_compute(&lr, r, 4);
  const tp_fidelity *f = &lr.fidelity;
  CHECK(f->merged_responses == 4 && f->response_gaps == 8,
        "level: 4 of 8 gaps between text responses unseen");
  CHECK(fabs(f->merged_pct - 50) < 1e-12, "level: merged share 50%%");
  CHECK(f->itl_all_merged_requests == 2 && f->itl_merged_requests == 1,
        "level: requests without an ITL, and with a marked one, counted");
  CHECK_INT(lr.itl_ms.n, 2, "level: the ITL distribution holds only measured gaps");
  CHECK(f->client_cpu_pct == -1 && f->reads_per_s == -1 && f->loop_lag_ms.n == 0,
        "level: the run's own figures stay unmeasured outside a run");
  CHECK_STR(tp_fidelity_verdict_name(f->verdict), "degraded", "level: judged on what the records say");
  CHECK(f->first_pairs == 4 && f->first_merged == 2 && fabs(f->first_merged_pct - 50) < 1e-12,
        "level: 2 of 4 requests with their first two text responses at one time");
  CHECK_STR(f->reason, "merged responses 50.0% > 1%; first responses merged 50.0% > 1%",
            "level: naming the merged shares, of every gap and of first responses");
  for (int i = 0; i < 4; i++) tp_record_fini(&r[i]);

  tp_level_compute(&lr, NULL, 0);
  CHECK(isnan(lr.fidelity.merged_pct) && lr.fidelity.verdict == TP_FIDELITY_OK,
        "an empty level: no share, ok");
}

/* The registry's fidelity rows: dotted names, their statistics, bounds in
 * percent. */
static void test_registry(void) {
  const char *st;
  size_t sl;
  const tp_metric *m = tp_metric_find_split("fidelity.merged_pct", 19, &st, &sl);
  CHECK(m && !strcmp(m->name, "fidelity.merged_pct") && st == NULL, "a dotted name, whole");
  m = tp_metric_find_split("fidelity.loop_lag.p99", 21, &st, &sl);
  CHECK(m && !strcmp(m->name, "fidelity.loop_lag") && st && sl == 3 && !strncmp(st, "p99", 3),
        "a dotted name and its statistic");
  m = tp_metric_find_split("ttft.p50", 8, &st, &sl);
  CHECK(m && !strcmp(m->name, "ttft") && st && !strncmp(st, "p50", sl), "a plain name and its statistic");
  CHECK(tp_metric_find_split("fidelity", 8, &st, &sl) == NULL, "the prefix alone is no row");
  CHECK_INT(tp_stat_find_n("p99x", 3), TP_STAT_P99, "a statistic by its first bytes");
  double v = 0;
  char err[128];
  m = tp_metric_find("fidelity.merged_pct");
  CHECK(m && m->unit == TP_UNIT_PERCENT, "the merged share is in percent");
  CHECK(m && tp_metric_parse_threshold(m, "1", &v, err, sizeof(err)) == 0 && v == 1, "a bound of 1 is 1%%");
  CHECK(m && tp_metric_parse_threshold(m, "2.5%", &v, err, sizeof(err)) == 0 && v == 2.5, "2.5%% is 2.5");
  CHECK(m && tp_metric_parse_threshold(m, "2 ms", &v, err, sizeof(err)) != 0, "a time is no share");
  tp_level_result lr = calm();
  CHECK(tp_metric_value(tp_metric_find("fidelity.loop_lag"), &lr, TP_STAT_P99, &v) && v == 0.1,
        "loop lag's p99 through the registry");
  lr.fidelity.client_cpu_pct = -1;
  CHECK(!tp_metric_available(tp_metric_find("fidelity.client_cpu_pct"), &lr),
        "an unmeasured CPU is unavailable");
  lr.fidelity.verdict = TP_FIDELITY_CLIENT_BOUND;
  CHECK(tp_metric_value(tp_metric_find("fidelity.verdict"), &lr, TP_STAT_AVG, &v) && v == 2,
        "the verdict as a number a gate reads");
  size_t n, fid = 0;
  const tp_metric *all = tp_metrics(&n);
  for (size_t i = 0; i < n; i++) fid += (all[i].flags & TP_MF_FIDELITY) != 0;
  CHECK_INT(fid, 7,
            "seven rows in the fidelity section: send lag, loop lag, merged, first merged, CPU, reads, verdict");
}

int main(void) {
  test_verdict();
  test_mean_runs();
  test_records();
  test_registry();
  return tp_test_done();
}

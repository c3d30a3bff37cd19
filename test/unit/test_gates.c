/* CI gates: each expression form passes on one level and fails on another,
 * failures name the bound, the measured value and the level, and bad
 * expressions are refused with a message. */
#include <stdlib.h>
#include <string.h>

#include "run/tp_gates.h"
#include "tp_test.h"
#include "tokperf/tokperf.h"

static tp_level_result level(double ttft_p99, double tput, uint64_t failed, uint64_t requests) {
  tp_level_result lv;
  memset(&lv, 0, sizeof(lv));
  lv.load_mode = TP_LOAD_CONCURRENCY;
  lv.concurrency = 8;
  lv.ttft_ms.n = 10;
  lv.ttft_ms.p99 = ttft_p99;
  lv.ttft_ms.avg = ttft_p99 / 2;
  lv.output_token_throughput = tput;
  lv.tokens_available = true;
  lv.requests = requests;
  lv.failed = failed;
  lv.succeeded = requests - failed;
  lv.error_rate = requests ? (double)failed / (double)requests : 0;
  return lv;
}

static int run(const char *expr, const tp_level_result *lv, double max_err, char *out, size_t outlen) {
  tp_gates *g = NULL;
  char err[1536];
  const char *e[1] = {expr};
  if (tp_gates_new(&g, e, expr ? 1 : 0, err, sizeof(err))) {
    snprintf(out, outlen, "PARSE: %s", err);
    return -1;
  }
  FILE *f = fmemopen(out, outlen, "w");
  int n = tp_gates_check(g, lv, 1, max_err, f);
  fclose(f);
  tp_gates_free(g);
  return n;
}

int main(void) {
  char out[1600];
  tp_level_result good = level(200, 1500, 0, 100), bad = level(300, 900, 5, 100);

  CHECK_INT(run("ttft.p99 <= 250ms", &good, -1, out, sizeof(out)), 0, "ttft.p99 <= 250ms holds at 200 ms");
  CHECK_INT(run("ttft.p99 <= 250ms", &bad, -1, out, sizeof(out)), 1, "and fails at 300 ms");
  CHECK(strstr(out, "ttft.p99 <= 250ms") && strstr(out, "measured 300 ms") && strstr(out, "concurrency 8"),
        "the failure names the bound, the value and the level: %s", out);
  CHECK_INT(run("ttft.p99 <= 0.25s", &bad, -1, out, sizeof(out)), 1, "seconds are converted");
  CHECK_INT(run("ttft <= 150", &good, -1, out, sizeof(out)), 0, "no statistic means avg (100 ms <= 150: holds)");
  CHECK_INT(run("ttft < 100", &good, -1, out, sizeof(out)), 1, "strict bounds are strict");
  CHECK_INT(run("output_token_throughput >= 1000", &good, -1, out, sizeof(out)), 0, "throughput >= 1000 holds");
  CHECK_INT(run("output_token_throughput >= 1000", &bad, -1, out, sizeof(out)), 1, "and fails at 900");
  CHECK(strstr(out, "tokens/s"), "with its unit: %s", out);
  CHECK_INT(run("error_rate <= 0.01", &good, -1, out, sizeof(out)), 0, "error_rate <= 0.01 holds at 0");
  CHECK_INT(run("error_rate <= 1%", &bad, -1, out, sizeof(out)), 1, "error_rate <= 1% fails at 5%");
  CHECK(strstr(out, "5.00%"), "shown as a percentage: %s", out);
  CHECK_INT(run(NULL, &bad, 0.10, out, sizeof(out)), 0, "--max-error-rate 0.10 holds at 5%");
  CHECK_INT(run(NULL, &bad, 0.01, out, sizeof(out)), 1, "--max-error-rate 0.01 fails at 5%");
  CHECK(strstr(out, "--max-error-rate"), "and says so: %s", out);
  tp_level_result dead = level(0, 0, 10, 10);
  dead.ttft_ms.n = 0;
  CHECK_INT(run(NULL, &dead, -1, out, sizeof(out)), 1, "a run where every request failed never passes");
  CHECK(strstr(out, "every one of the 10"), "and says why: %s", out);
  CHECK_INT(run("ttft.p99 <= 250ms", &dead, -1, out, sizeof(out)), 2, "an unavailable figure fails its bound too");
  CHECK(strstr(out, "unavailable"), "as unavailable: %s", out);

  /* A level --max-consecutive-failures ended (the server went away) fails
   * the run; an outage the level rode out does not. */
  tp_level_result gone = level(200, 1500, 0, 100);
  gone.server_outages = 1;
  gone.server_away_s = 2.01;
  gone.server_back_s = -1;
  gone.server_away_requests = 128;
  gone.server_gone = true;
  CHECK_INT(run(NULL, &gone, -1, out, sizeof(out)), 1, "a level the server went away from fails the run");
  CHECK(strstr(out, "server went away at concurrency 8") && strstr(out, "128 requests in a row") &&
            strstr(out, "2.01 s") && strstr(out, "--max-consecutive-failures"),
        "and says when, how many and which setting: %s", out);
  gone.server_gone = false;
  CHECK_INT(run(NULL, &gone, -1, out, sizeof(out)), 0, "an outage that did not end the level fails nothing");

  CHECK_INT(run("ttft.p42 <= 1", &good, -1, out, sizeof(out)), -1, "unknown statistic refused");
  CHECK(strstr(out, "p42") && strstr(out, "p99"), "naming it and the accepted ones: %s", out);
  CHECK_INT(run("speed >= 1", &good, -1, out, sizeof(out)), -1, "unknown metric refused");
  CHECK_INT(run("ttft.p99 ~ 1", &good, -1, out, sizeof(out)), -1, "unknown operator refused");
  CHECK(strstr(out, "METRIC[.STAT] OP VALUE"), "with the expected form: %s", out);
  CHECK_INT(run("ttft.p99 <= 5 parsecs", &good, -1, out, sizeof(out)), -1, "unknown unit refused");
  CHECK_INT(run("error_rate.p99 <= 1", &good, -1, out, sizeof(out)), -1, "a scalar takes no statistic");

  /* Every row of the metric registry can be asserted on. */
  tp_level_result notok = good;
  notok.tokens_available = false;
  CHECK_INT(run("output_token_throughput >= 1", &notok, -1, out, sizeof(out)), 1,
            "a token throughput without counted tokens fails its bound");
  CHECK(strstr(out, "unavailable"), "as unavailable, not as 0 tokens/s: %s", out);
  tp_level_result rec = good;
  rec.reconnects = 3;
  CHECK_INT(run("reconnects <= 2", &rec, -1, out, sizeof(out)), 1, "reconnects can be bounded");
  CHECK(strstr(out, "measured 3 requests"), "in its unit: %s", out);
  CHECK_INT(run("ttft.p99 <= 250000us", &good, -1, out, sizeof(out)), 0, "a time bound takes us");
  CHECK_INT(run("speed >= 1", &good, -1, out, sizeof(out)), -1, "unknown metric refused");
  CHECK(strstr(out, "reconnects") && strstr(out, "goodput_fraction"), "listing every registry row: %s", out);

  /* Without --max-error-rate, a failing server is said in one line (not a
   * failure) once a level's error rate is over TP_ERROR_RATE_WARN (10%). */
  tp_level_result lv3[3] = {level(200, 1500, 5, 100), level(200, 1500, 30, 100), level(200, 1500, 98, 100)};
  lv3[1].concurrency = 16;
  lv3[2].concurrency = 32;
  char note[512];
  CHECK_INT(tp_gates_error_rate_note(lv3, 1, -1, note, sizeof(note)), 0, "error-rate note: not at 5%");
  CHECK_INT(tp_gates_error_rate_note(lv3, 3, -1, note, sizeof(note)), 1, "error-rate note: at 30% and 98%");
  CHECK(strstr(note, "98.0% of the measured requests failed at concurrency 32 (98 of 100)") &&
            strstr(note, "and 1 more levels over 10%") && strstr(note, "--max-error-rate"),
        "error-rate note: the worst level, how many more, and the option: %s", note);
  CHECK(!strchr(note, '\n'), "error-rate note: one line");
  CHECK_INT(tp_gates_error_rate_note(lv3, 3, 0.5, note, sizeof(note)), 0,
            "error-rate note: none with --max-error-rate (the gate says it)");
  tp_level_result edge = level(200, 1500, 10, 100);
  CHECK_INT(tp_gates_error_rate_note(&edge, 1, -1, note, sizeof(note)), 0,
            "error-rate note: exactly 10% is not over");
  /* The client's own figures (docs/metrics.md, "Fidelity"): names with a
   * dot of their own, a share in percent, a distribution over reads. */
  tp_level_result fid = good;
  fid.fidelity.merged_pct = 0.5;
  fid.fidelity.loop_lag_ms.n = 100;
  fid.fidelity.loop_lag_ms.p99 = 0.25;
  fid.fidelity.client_cpu_pct = 40;
  CHECK_INT(run("fidelity.merged_pct <= 1", &fid, -1, out, sizeof(out)), 0, "fidelity.merged_pct <= 1 holds at 0.5%");
  CHECK_INT(run("fidelity.merged_pct <= 1%", &fid, -1, out, sizeof(out)), 0, "a percent bound may say %");
  fid.fidelity.merged_pct = 2.5;
  CHECK_INT(run("fidelity.merged_pct <= 1", &fid, -1, out, sizeof(out)), 1, "and fails at 2.5%");
  CHECK(strstr(out, "measured 2.5 %") && strstr(out, "concurrency 8"), "naming the value and the level: %s", out);
  CHECK_INT(run("fidelity.loop_lag.p99 <= 1ms", &fid, -1, out, sizeof(out)), 0, "a distribution of the block");
  CHECK_INT(run("fidelity.loop_lag.p99 <= 100us", &fid, -1, out, sizeof(out)), 1, "and fails past its bound");
  CHECK_INT(run("fidelity.loop_lag <= 1ms", &fid, -1, out, sizeof(out)), 0, "no statistic means avg");
  CHECK_INT(run("fidelity.verdict < 2", &fid, -1, out, sizeof(out)), 0, "the verdict as a number");
  fid.fidelity.verdict = TP_FIDELITY_CLIENT_BOUND;
  CHECK_INT(run("fidelity.verdict < 2", &fid, -1, out, sizeof(out)), 1, "fails when client-bound");
  fid.fidelity.client_cpu_pct = -1;
  CHECK_INT(run("fidelity.client_cpu_pct < 90", &fid, -1, out, sizeof(out)), 1, "an unmeasured CPU fails its bound");
  CHECK(strstr(out, "unavailable"), "as unavailable: %s", out);
  CHECK_INT(run("fidelity.loop_lag.p42 <= 1", &fid, -1, out, sizeof(out)), -1, "an unknown statistic of a dotted name");
  CHECK(strstr(out, "unknown statistic 'p42'"), "is named: %s", out);
  CHECK_INT(run("fidelity.merged <= 1", &fid, -1, out, sizeof(out)), -1, "an unknown dotted name");
  CHECK(strstr(out, "unknown metric 'fidelity.merged'"), "is named whole: %s", out);
  CHECK_INT(run("fidelity.merged_pct.p99 <= 1", &fid, -1, out, sizeof(out)), -1, "a share takes no statistic");
  return tp_test_done();
}

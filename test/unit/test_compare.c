/* Unit tests for lib/report/tp_compare.c: rule parsing, the side-by-side
 * table, rule results and return codes, and the JUnit file.  The two runs
 * are real --json documents written by tp_report_json from level results
 * with known figures.  (The JUnit file is also parsed by Python's
 * xml.etree in test/integration/results.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>

#include "report/tp_compare.h"
#include "report/tp_report.h"
#include "tp_test.h"
#include "tp_test_config.h"

static void set_stat(tp_stat *st, double base) {
  memset(st, 0, sizeof(*st));
  st->n = 100;
  st->min = base * 0.5;
  st->p25 = base * 0.8;
  st->p50 = base;
  st->avg = base * 1.05;
  st->p75 = base * 1.2;
  st->p90 = base * 1.5;
  st->p95 = base * 1.8;
  st->p99 = base * 2;
  st->max = base * 3;
  st->std = base * 0.3;
}

static void level(tp_level_result *lr, uint32_t conc, double ttft, double itl, double tput, uint64_t failed) {
  memset(lr, 0, sizeof(*lr));
  lr->concurrency = conc;
  lr->requests = 100;
  lr->failed = failed;
  lr->succeeded = 100 - failed;
  lr->errors_by_class[TP_ERRCLASS_TIMEOUT] = failed;
  lr->duration_s = 10;
  lr->tokens_available = true;
  set_stat(&lr->ttft_ms, ttft);
  set_stat(&lr->itl_ms, itl);
  set_stat(&lr->latency_ms, ttft + 127 * itl);
  set_stat(&lr->output_tokens, 128);
  set_stat(&lr->input_tokens, 200);
  lr->output_token_throughput = tput;
  lr->input_token_throughput = tput * 1.5;
  lr->request_throughput = tput / 128;
  lr->error_rate = (double)failed / 100; /* as tp_level_compute sets it */
  /* The client's own figures. */
  set_stat(&lr->send_lag_ms, 0.02);
  set_stat(&lr->fidelity.loop_lag_ms, 0.1);
  lr->fidelity.merged_pct = 0.5;
  lr->fidelity.client_cpu_pct = 30;
  lr->fidelity.process_cpu_pct = 45;
  lr->fidelity.reads_per_s = 1000;
}

static char tmpdir[] = "/tmp/tp_compare_XXXXXX";

static void write_doc(const char *name, const tp_level_result *lv, size_t n, char *path, size_t plen) {
  snprintf(path, plen, "%s/%s", tmpdir, name);
  static const uint32_t conc[] = {4, 8, 16};
  tp_config cfg;
  tp_test_config_default(&cfg);
  cfg.server.model = "ensemble";
  cfg.load.concurrency = conc;
  cfg.load.n_concurrency = 3;
  tp_report_input in = {.cfg = &cfg, .levels = lv, .n_levels = n};
  char err[256];
  if (tp_report_json(path, &in, err, sizeof(err))) fprintf(stderr, "# %s\n", err);
}

static char *slurp(FILE *f) {
  fflush(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  rewind(f);
  char *s = calloc(1, (size_t)n + 1);
  if (n > 0 && fread(s, 1, (size_t)n, f) != (size_t)n) s[0] = '\0';
  return s;
}

static void test_rules(void) {
  tp_compare_rule r;
  char err[256];
  CHECK_INT(tp_compare_parse_rule("ttft.p99:+10%", &r, err, sizeof(err)), 0, "ttft.p99:+10% parses");
  CHECK(r.metric == tp_metric_find("ttft") && r.stat == TP_STAT_P99 && r.bound_pct == 10 && r.direction == 1,
        "metric ttft, stat p99, bound 10, upward");
  CHECK_INT(tp_compare_parse_rule("output_token_throughput:-5%", &r, err, sizeof(err)), 0,
            "throughput rule parses");
  CHECK(r.metric == tp_metric_find("output_token_throughput") && r.bound_pct == 5 && r.direction == -1, "downward bound");
  CHECK_INT(tp_compare_parse_rule("itl.p50:7.5%", &r, err, sizeof(err)), 0, "unsigned bound parses");
  CHECK(r.direction == 1 && r.bound_pct == 7.5, "unsigned bound on a latency points up (worse)");
  CHECK_INT(tp_compare_parse_rule("request_throughput:3%", &r, err, sizeof(err)), 0,
            "unsigned throughput bound");
  CHECK(r.direction == -1, "unsigned bound on a throughput points down (worse)");
  CHECK_INT(tp_compare_parse_rule("error_rate.avg:+0%", &r, err, sizeof(err)), 0,
            ".avg accepted on a one-figure metric");
  CHECK(r.metric == tp_metric_find("error_rate") && r.bound_pct == 0 && r.direction == 1, "error_rate +0%%");
  CHECK_INT(tp_compare_parse_rule("latency.max:+1%", &r, err, sizeof(err)), 0, "latency.max parses");
  /* Every row of the metric registry, every statistic the report writes. */
  CHECK_INT(tp_compare_parse_rule("ttft.p25:+1%", &r, err, sizeof(err)), 0, "ttft.p25 parses");
  CHECK_INT(tp_compare_parse_rule("reconnects:5%", &r, err, sizeof(err)), 0, "reconnects parses");
  CHECK(r.metric == tp_metric_find("reconnects") && r.direction == 1, "more reconnects is the worse way");
  CHECK_INT(tp_compare_parse_rule("goodput:5%", &r, err, sizeof(err)), 0, "goodput parses");
  CHECK(r.direction == -1, "less goodput is the worse way");
  CHECK_INT(tp_compare_parse_rule("input_token_throughput:-1%", &r, err, sizeof(err)), 0,
            "input_token_throughput parses");
  /* The client's own figures: names with a dot of their own. */
  CHECK_INT(tp_compare_parse_rule("fidelity.loop_lag.p99:+50%", &r, err, sizeof(err)), 0, "fidelity.loop_lag.p99");
  CHECK(r.metric == tp_metric_find("fidelity.loop_lag") && r.stat == TP_STAT_P99 && r.direction == 1,
        "a dotted name and its statistic");
  CHECK_INT(tp_compare_parse_rule("fidelity.merged_pct:+100%", &r, err, sizeof(err)), 0, "fidelity.merged_pct");
  CHECK(r.metric == tp_metric_find("fidelity.merged_pct"), "a dotted name, whole");

  static const struct {
    const char *s, *msg;
  } bad[] = {
      {"ttft:+10%", "needs a statistic"},
      {"ttft.p42:+1%", "unknown statistic 'p42'"},
      {"tfft.p99:+1%", "unknown metric 'tfft'"},
      {"ttft.p99+10%", "missing ':'"},
      {"ttft.p99:+10", "bad bound '+10'"},
      {"ttft.p99:abc%", "bad bound"},
      {"ttft.p99:++1%", "bad bound"},
      {"ttft.p99:10 %", "bad bound"},
      {"request_throughput.p99:-1%", "takes no statistic"},
      {"fidelity.loop_lag:+1%", "needs a statistic"},
      {"fidelity.merged:+1%", "unknown metric 'fidelity.merged'"},
      {"fidelity.merged_pct.p99:+1%", "takes no statistic"},
      {"", "expected METRIC"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    err[0] = '\0';
    int rv = tp_compare_parse_rule(bad[i].s, &r, err, sizeof(err));
    CHECK(rv == TP_EINVAL && strstr(err, bad[i].msg), "'%s' rejected: %s", bad[i].s, err);
  }
}

static void test_compare(void) {
  char pa[512], pb[512], pc[512], pjunk[512], junit[512];
  tp_level_result a[2], b[3];
  level(&a[0], 4, 100, 10, 4000, 0);
  level(&a[1], 8, 150, 12, 7000, 0);
  level(&b[0], 4, 100, 10, 4000, 0);  /* unchanged */
  level(&b[1], 8, 180, 12, 6790, 2);  /* TTFT +20 %, throughput -3 %, 2 % errors */
  level(&b[2], 16, 300, 20, 9000, 0); /* only in B */
  b[1].itl_ms.n = 0;                  /* ITL unavailable in B at 8 */
  b[1].fidelity.merged_pct = 3;       /* B's client merged more at 8, and was degraded */
  b[1].fidelity.verdict = TP_FIDELITY_DEGRADED;
  b[0].fidelity.reads_per_s = 1500;   /* more reads at 4: neither better nor worse */
  write_doc("a.json", a, 2, pa, sizeof(pa));
  write_doc("b.json", b, 3, pb, sizeof(pb));
  snprintf(junit, sizeof(junit), "%s/junit.xml", tmpdir);

  char err[512] = "";
  FILE *out = tmpfile();
  const char *r1[] = {"ttft.p99:+10%"};
  int rv = tp_compare_run(pa, pb, r1, 1, out, junit, err, sizeof(err));
  CHECK_INT(rv, TP_COMPARE_FAILED, "TTFT p99 up 20 % fails a +10 % rule");
  CHECK(strstr(err, "ttft.p99 at concurrency 8: 300.00 ms -> 360.00 ms (+20.0%, bound +10%)") != NULL,
        "the failure names the metric, level, values and bound (%s)", err);
  char *s = slurp(out);
  CHECK(strstr(s, "Concurrency 4\n") && strstr(s, "Concurrency 8\n"), "a table per matched level");
  CHECK(strstr(s, "Concurrency 16: only in B") != NULL, "a level only in B is named");
  CHECK(
      strstr(s, "ttft.p99 (ms)") && strstr(s, "300.00") && strstr(s, "360.00") && strstr(s, "+20.0%  worse"),
      "the row shows A, B, the change and marks it worse");
  CHECK(strstr(s, "output_token_throughput (tokens/s)") && strstr(s, "-3.0%  worse"),
        "lower throughput is marked worse");
  CHECK(strstr(s, "error_rate (fraction)") && strstr(s, "+inf%  worse"), "errors from none: infinite change, worse");
  CHECK(strstr(s, "itl.p99 (ms)") && strstr(s, "n/a"), "a figure missing in B reads n/a");
  CHECK(strstr(s, "FAIL ttft.p99:+10%") && strstr(s, "ok   ttft.p99:+10%"), "rule results per level");
  CHECK(strstr(s, "1 rule check failed") != NULL, "a closing count");
  size_t rows = 0;
  for (const char *p = strstr(s, "Concurrency 4\n"); p && p < strstr(s, "Concurrency 8\n");
       p = strchr(p + 1, '\n'))
    if (p[1] == ' ' && p[2] == ' ' && p[3] != 'M') rows++;
  CHECK_INT(rows, 30,
            "every headline metric has a row (3 throughputs, error rate, 3 x 5 latency stats), then the "
            "client's own figures (send lag and loop lag p50, p99, max; merged, first merged, CPU, reads, verdict)");
  CHECK(strstr(s, "fidelity.merged_pct (%)") && strstr(s, "+500.0%  worse") && strstr(s, "fidelity.verdict ") &&
            strstr(s, "fidelity.loop_lag.max (ms)") && strstr(s, "send_lag.p99 (ms)"),
        "the fidelity rows: the merged share up, worse; the verdict without a unit");
  const char *rps = strstr(s, "fidelity.reads_per_s (reads/s)");
  const char *eol = rps ? strchr(rps, '\n') : NULL;
  CHECK(rps && eol && eol - rps > 40 && !memmem(rps, (size_t)(eol - rps), "better", 6) &&
            !memmem(rps, (size_t)(eol - rps), "worse", 5),
        "a figure with no better direction is marked neither way");
  free(s);
  fclose(out);

  FILE *jf = fopen(junit, "r");
  s = jf ? slurp(jf) : NULL;
  if (jf) fclose(jf);
  CHECK(s && !strncmp(s, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites", 50), "JUnit XML written");
  CHECK(s && strstr(s, "<testsuite name=\"tokperf.compare.rules\" tests=\"2\" failures=\"1\""),
        "rules suite: one test per rule and level, one failure");
  CHECK(
      s && strstr(
               s,
               "<failure type=\"regression\" message=\"ttft.p99 at concurrency 8: 300.00 ms -&gt; 360.00 ms"),
      "the failure element carries the message, escaped");
  CHECK(s && strstr(s, "<testsuite name=\"tokperf.compare.metrics\" tests=\"60\""),
        "metrics suite: 30 rows x 2 levels");
  free(s);

  out = tmpfile();
  const char *r2[] = {"ttft.p99:+25%", "output_token_throughput:-5%", "ttft.p50:21%"};
  rv = tp_compare_run(pa, pb, r2, 3, out, NULL, err, sizeof(err));
  CHECK_INT(rv, 0, "rules with room hold: +20 % within +25 %, -3 % within -5 %, +20 % within 21 %");
  s = slurp(out);
  CHECK(strstr(s, "All rules held") != NULL, "and it says so");
  free(s);
  fclose(out);

  const char *r3[] = {"output_token_throughput:-2%"};
  rv = tp_compare_run(pa, pb, r3, 1, NULL, NULL, err, sizeof(err));
  CHECK(rv == TP_COMPARE_FAILED && strstr(err,
                                          "output_token_throughput at concurrency 8: 7000.00 tokens/s -> "
                                          "6790.00 tokens/s (-3.0%, bound -2%)"),
        "throughput down 3 %% fails a -2 %% rule (%s)", err);
  const char *r4[] = {"error_rate:+50%"};
  rv = tp_compare_run(pa, pb, r4, 1, NULL, NULL, err, sizeof(err));
  CHECK(rv == TP_COMPARE_FAILED && strstr(err, "error_rate at concurrency 8: 0.0000 (0.00%) -> 0.0200 (2.00%) (+inf%"),
        "errors where there were none fail any + rule (%s)", err);
  const char *r5[] = {"itl.p99:+10%"};
  rv = tp_compare_run(pa, pb, r5, 1, NULL, NULL, err, sizeof(err));
  CHECK(rv == TP_COMPARE_FAILED && strstr(err, "in A but unavailable in B"),
        "a figure that vanished fails (%s)", err);
  const char *r6[] = {"ttft.p99:-10%"};
  rv = tp_compare_run(pb, pa, r6, 1, NULL, NULL, err, sizeof(err));
  CHECK(rv == TP_COMPARE_FAILED && strstr(err, "(-16.7%, bound -10%)"),
        "a - bound on a latency fails on a fall (%s)", err);
  const char *r7[] = {"fidelity.merged_pct:+100%"};
  rv = tp_compare_run(pa, pb, r7, 1, NULL, NULL, err, sizeof(err));
  CHECK(rv == TP_COMPARE_FAILED && strstr(err, "fidelity.merged_pct at concurrency 8: 0.50 % -> 3.00 % (+500.0%"),
        "a rule on a fidelity figure reads it from the level's \"fidelity\" object (%s)", err);
  rv = tp_compare_run(pa, pb, NULL, 0, NULL, NULL, err, sizeof(err));
  CHECK_INT(rv, 0, "no rules: comparison only, success");

  /* Both unavailable: skipped, not failed. */
  level(&a[1], 8, 150, 12, 7000, 0);
  a[1].itl_ms.n = 0;
  write_doc("c.json", a, 2, pc, sizeof(pc));
  rv = tp_compare_run(pc, pb, r5, 1, NULL, junit, err, sizeof(err));
  CHECK_INT(rv, 0, "unavailable in both: the rule is skipped");
  jf = fopen(junit, "r");
  s = jf ? slurp(jf) : NULL;
  if (jf) fclose(jf);
  CHECK(s && strstr(s, "<skipped message=\"itl.p99 at concurrency 8: unavailable in both runs\"/>"),
        "JUnit marks it skipped");
  free(s);

  /* error_rate is read from the document; without it, from the counts. */
  {
    json_error_t je;
    json_t *d = json_load_file(pb, 0, &je);
    size_t i;
    json_t *lv;
    json_array_foreach(json_object_get(d, "levels"), i, lv) json_object_del(lv, "error_rate");
    snprintf(pc, sizeof(pc), "%s/old.json", tmpdir);
    json_dump_file(d, pc, 0);
    json_decref(d);
    rv = tp_compare_run(pa, pc, r4, 1, NULL, NULL, err, sizeof(err));
    CHECK(rv == TP_COMPARE_FAILED && strstr(err, "error_rate at concurrency 8: 0.0000 (0.00%) -> 0.0200 (2.00%)"),
          "a document without error_rate: failed / requests (%s)", err);
    unlink(pc);
  }

  /* Levels match by sweep point: rate and swept lengths count. */
  {
    tp_level_result ra[3], rb[2];
    level(&ra[0], 8, 100, 10, 4000, 0);
    ra[0].input_tokens_mean = 128;
    level(&ra[1], 8, 150, 10, 4000, 0);
    ra[1].input_tokens_mean = 512;
    level(&ra[2], 64, 150, 10, 4000, 0);
    ra[2].load_mode = TP_LOAD_RATE;
    ra[2].request_rate = 2.5;
    rb[0] = ra[1];
    rb[0].ttft_ms.p99 *= 1.5;
    rb[1] = ra[2];
    rb[1].concurrency = 64;
    char px[512], py[512];
    write_doc("x.json", ra, 3, px, sizeof(px));
    write_doc("y.json", rb, 2, py, sizeof(py));
    out = tmpfile();
    rv = tp_compare_run(px, py, r1, 1, out, NULL, err, sizeof(err));
    s = slurp(out);
    fclose(out);
    CHECK(rv == TP_COMPARE_FAILED &&
              strstr(err, "ttft.p99 at concurrency 8, input 512 tokens: 300.00 ms -> 450.00 ms"),
          "the level with the same input length is compared (%s)", err);
    CHECK(strstr(s, "Concurrency 8, input 128 tokens: only in A") != NULL,
          "another input length is another level");
    CHECK(strstr(s, "Request rate 2.5/s\n") != NULL, "a rate level is matched by its rate");
    free(s);
    unlink(px);
    unlink(py);
  }

  /* Errors. */
  rv = tp_compare_run(pa, "/nonexistent/b.json", NULL, 0, NULL, NULL, err, sizeof(err));
  CHECK(rv == TP_ENOTFOUND && strstr(err, "cannot read /nonexistent/b.json"),
        "missing file: TP_ENOTFOUND (%s)", err);
  snprintf(pjunk, sizeof(pjunk), "%s/junk.json", tmpdir);
  FILE *f = fopen(pjunk, "w");
  fputs("{\"schema\": \"other/2\", \"levels\": []}", f);
  fclose(f);
  rv = tp_compare_run(pjunk, pb, NULL, 0, NULL, NULL, err, sizeof(err));
  CHECK(rv == TP_EINVAL && strstr(err, "is not a tokperf report (schema 'other/2'"),
        "another schema: TP_EINVAL (%s)", err);
  f = fopen(pjunk, "w");
  fputs("{\"schema\": ", f);
  fclose(f);
  rv = tp_compare_run(pa, pjunk, NULL, 0, NULL, NULL, err, sizeof(err));
  CHECK(rv == TP_EINVAL && strstr(err, "not valid JSON"), "broken JSON: TP_EINVAL with line and column (%s)",
        err);
  tp_level_result only16 = b[2];
  write_doc("d.json", &only16, 1, pc, sizeof(pc));
  rv = tp_compare_run(pa, pc, NULL, 0, NULL, NULL, err, sizeof(err));
  CHECK(rv == TP_EINVAL &&
            strstr(err, "no level in common (A: concurrency 4; concurrency 8. B: concurrency 16)"),
        "nothing in common (%s)", err);
  const char *bad[] = {"ttft:+10%"};
  rv = tp_compare_run(pa, pb, bad, 1, NULL, NULL, err, sizeof(err));
  CHECK(rv == TP_EINVAL && strstr(err, "--fail-on 'ttft:+10%': ttft needs a statistic"),
        "a bad rule: TP_EINVAL naming the option (%s)", err);
  rv = tp_compare_run(pa, pb, r1, 1, NULL, "/nonexistent/dir/j.xml", err, sizeof(err));
  CHECK(rv == TP_EIO && strstr(err, "cannot write /nonexistent/dir/j.xml"),
        "unwritable JUnit path: TP_EIO (%s)", err);

  /* The page of two or more runs: the levels all have in common (4 and 8,
   * not B's 16), a chart and table per headline metric. */
  char page[600];
  snprintf(page, sizeof(page), "%s/cmp.html", tmpdir);
  const char *three[] = {pa, pb, pa};
  rv = tp_compare_html(three, 3, page, err, sizeof(err));
  CHECK_INT(rv, 0, "a page of three runs is written");
  FILE *pf = fopen(page, "r");
  char *h = pf ? slurp(pf) : NULL;
  if (pf) fclose(pf);
  CHECK(h && strstr(h, "2 levels in common") && strstr(h, "<h2>ttft.p99 (ms)</h2>") &&
            strstr(h, "<h2>error_rate (fraction)</h2>") && strstr(h, "concurrency 8") && !strstr(h, "concurrency 16"),
        "it charts the registry's headline metrics over the levels in common");
  CHECK(h && strstr(h, "<td>360.00</td>") && strstr(h, "<td>300.00</td>"), "with the numbers in a table (ttft.p99 300 and 360)");
  free(h);
  unlink(page);
  const char *one[] = {pa};
  CHECK_INT(tp_compare_html(one, 1, page, err, sizeof(err)), TP_EINVAL, "one run is not a comparison");

  const char *names[] = {"a.json", "b.json", "c.json", "d.json", "junk.json", "junit.xml"};
  for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
    char p[600];
    snprintf(p, sizeof(p), "%s/%s", tmpdir, names[i]);
    unlink(p);
  }
}

/* A level an interruption cut short is compared all the same and flagged,
 * with how long it ran. */
static void test_partial(void) {
  char pa[512], pb[512], err[512] = "";
  tp_level_result a[2], b[2];
  level(&a[0], 4, 100, 10, 4000, 0);
  level(&a[1], 8, 150, 12, 7000, 0);
  level(&b[0], 4, 100, 10, 4000, 0);
  level(&b[1], 8, 150, 12, 7000, 0);
  b[1].partial = true;
  b[1].partial_ran_s = 2.3;
  b[1].partial_planned_s = 4;
  write_doc("pa.json", a, 2, pa, sizeof(pa));
  write_doc("pb.json", b, 2, pb, sizeof(pb));
  FILE *out = tmpfile();
  int rv = tp_compare_run(pa, pb, NULL, 0, out, NULL, err, sizeof(err));
  rewind(out);
  char *t = slurp(out);
  fclose(out);
  CHECK_INT(rv, 0, "partial: compared");
  CHECK(t && strstr(t, "Concurrency 8 (partial in B: it ran 2.3 of 4.0 s)\n") && strstr(t, "Concurrency 4\n"),
        "partial: the cut level is flagged with its time, the whole one not");
  CHECK(t && strstr(t, "Partial: 1 of the compared levels were cut short"),
        "partial: and counted at the end");
  free(t);
  unlink(pa);
  unlink(pb);
}

int main(void) {
  if (!mkdtemp(tmpdir)) {
    printf("not ok 1 - temporary directory\n1..1\n");
    return 1;
  }
  test_rules();
  test_compare();
  test_partial();
  rmdir(tmpdir);
  return tp_test_done();
}

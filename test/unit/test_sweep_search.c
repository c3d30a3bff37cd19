/* The capacity search over levels: settings refused with the setting's key named,
 * a level judged against every SLO (an unavailable figure and a level
 * where nothing succeeded fail), the search driven to a synthetic boundary
 * through judge(), and the interval over repeated runs per metric. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/tp_metric.h"
#include "report/tp_report_search.h"
#include "run/tp_sweep_search.h"
#include "tp_test.h"
#include "tp_test_config.h"

static tp_level_result level(double ttft_p99, uint64_t failed, uint64_t requests) {
  tp_level_result lv;
  memset(&lv, 0, sizeof(lv));
  lv.load_mode = TP_LOAD_CONCURRENCY;
  lv.ttft_ms.n = requests;
  lv.ttft_ms.p99 = ttft_p99;
  lv.ttft_ms.avg = ttft_p99 / 2;
  lv.requests = requests;
  lv.failed = failed;
  lv.succeeded = requests - failed;
  lv.error_rate = requests ? (double)failed / (double)requests : 0;
  return lv;
}

/* The copy of the defaults the tests below the run use equals the
 * library's, field by field (both start from zeroed memory, so the bytes
 * between fields agree too); only the list pointer differs by address. */
static void test_config_copy(void) {
  tp_config lib, copy;
  tp_config_default(&lib);
  tp_test_config_default(&copy);
  CHECK(lib.load.n_concurrency == 1 && copy.load.n_concurrency == 1 &&
            lib.load.concurrency[0] == copy.load.concurrency[0],
        "test config copy: one level of the same concurrency");
  copy.load.concurrency = lib.load.concurrency;
  /* The strings are equal literals of two translation units, merged into
   * one by the linker in a plain build but not under AddressSanitizer:
   * compared by content, then made the same pointers. */
  const char **strs[][2] = {{&lib.server.url, &copy.server.url},
                            {&lib.server.model, &copy.server.model},
                            {&lib.server.model_version, &copy.server.model_version}};
  for (size_t i = 0; i < sizeof(strs) / sizeof(strs[0]); i++) {
    CHECK(*strs[i][0] && *strs[i][1] && strcmp(*strs[i][0], *strs[i][1]) == 0, "test config copy: string %zu is '%s'",
          i, *strs[i][0] ? *strs[i][0] : "(null)");
    *strs[i][1] = *strs[i][0];
  }
  CHECK(memcmp(&lib, &copy, sizeof(lib)) == 0, "test config copy: equal to tp_config_default");
}

int main(void) {
  test_config_copy();
  tp_config c;
  tp_config_default(&c);
  char err[512];
  tp_sweep_search *s = NULL;
  c.load.search = TP_SEARCH_CONCURRENCY;
  CHECK(tp_sweep_search_new(&s, &c, err, sizeof(err)) != 0 && strstr(err, "search.slos"),
        "no SLO: refused, the key named (%s)", err);
  const char *slos[] = {"ttft.p99 <= 300ms", "error_rate <= 1%"};
  c.load.slos = slos;
  c.load.n_slos = 2;
  c.load.search_min = 1.5;
  CHECK(tp_sweep_search_new(&s, &c, err, sizeof(err)) != 0 && strstr(err, "whole"),
        "a fractional concurrency is refused (%s)", err);
  c.load.search_min = 1;
  c.load.search_max = 0.5;
  CHECK(tp_sweep_search_new(&s, &c, err, sizeof(err)) != 0 && strstr(err, "search.max"), "max below min (%s)",
        err);
  const char *bad[] = {"speed <= 3"};
  c.load.search_max = 64;
  c.load.slos = bad;
  c.load.n_slos = 1;
  CHECK(tp_sweep_search_new(&s, &c, err, sizeof(err)) != 0 && strncmp(err, "search.slos", 11) == 0,
        "a bad SLO names search.slos (%s)", err);
  c.load.slos = slos;
  c.load.n_slos = 2;
  c.load.search_abs_precision = 1;
  CHECK_INT(tp_sweep_search_new(&s, &c, err, sizeof(err)), 0, "a concurrency search from 1 to 64 starts");

  /* A server that holds ttft.p99 <= 300 ms up to 13 requests in flight. */
  double load;
  size_t n = 0;
  while (tp_sweep_search_next(s, &load) && n < 64) {
    tp_level_result lv = level(load <= 13 ? 200 : 400, 0, 100);
    tp_sweep_search_judge(s, load, &lv, n++, 120, 1.5);
  }
  const tp_search_summary *m = tp_sweep_search_summary(s);
  CHECK(strcmp(m->outcome, "found") == 0, "the search ends: %s", m->outcome);
  CHECK(m->have_pass && m->boundary == 13 && m->have_fail && m->first_fail == 14, "boundary 13, first failure 14 "
        "(%g, %g)", m->boundary, m->first_fail);
  CHECK_INT((long)m->n_probes, (long)n, "every probe is in the table");
  CHECK(m->probes[0].value[0] == 200 && m->probes[0].held[0] && m->probes[0].requests == 120,
        "a probe keeps its SLO figures and cost");
  tp_sweep_search_free(s);

  /* Judging one level. */
  c.load.search_abs_precision = 0;
  CHECK_INT(tp_sweep_search_new(&s, &c, err, sizeof(err)), 0, "again");
  tp_gates *g = NULL;
  CHECK_INT(tp_gates_new(&g, slos, 2, err, sizeof(err)), 0, "the SLOs parse as gates");
  tp_probe_row row;
  memset(&row, 0, sizeof(row));
  tp_level_result lv = level(200, 5, 100);
  CHECK(!tp_sweep_search_eval(g, 2, -1, &lv, &row) && row.held[0] && !row.held[1],
        "5%% errors fail error_rate <= 1%% while TTFT holds");
  lv = level(200, 0, 100);
  CHECK(tp_sweep_search_eval(g, 2, -1, &lv, &row), "a good level passes");
  CHECK(!tp_sweep_search_eval(g, 2, 0.0, &(tp_level_result){.requests = 0}, &row) && isnan(row.value[0]),
        "a level without figures fails (unavailable is no proof)");
  lv = level(200, 100, 100);
  lv.error_rate = 0; /* even if a bound on errors were missing */
  CHECK(!tp_sweep_search_eval(g, 2, -1, &lv, &row), "a level where nothing succeeded fails");
  lv = level(200, 0, 100);
  lv.saturation.detected = 1;
  CHECK(tp_sweep_search_eval(g, 2, -1, &lv, &row), "seen over-saturated, not stopped: its SLOs judge it");
  lv.saturation.stopped = true;
  CHECK(!tp_sweep_search_eval(g, 2, -1, &lv, &row) && row.held[0] && row.held[1],
        "stopped on over-saturation (--stop-on-saturation): fails though its figures held");
  tp_gates_free(g);
  tp_sweep_search_free(s);

  /* The interval over runs. */
  tp_level_result runs[4];
  double v[4] = {10, 12, 11, 13};
  for (int i = 0; i < 4; i++) runs[i] = level(v[i], 0, 10);
  tp_ci ci;
  tp_repeat_ci(runs, 0, 4, tp_metric_find("ttft"), TP_STAT_P99, &ci);
  CHECK(ci.n == 4 && fabs(ci.mean - 11.5) < 1e-9 && ci.lo < 11.5 && ci.hi > 11.5, "mean 11.5 over 4 runs");
  CHECK_NEAR(ci.half, tp_t975(3) * ci.sd / 2, 1e-9, "half width t(3) sd / sqrt(4)");
  tp_repeat_ci(runs, 1, 2, tp_metric_find("goodput"), TP_STAT_AVG, &ci);
  CHECK_INT((long)ci.n, 0, "an unavailable metric has no interval");
  return tp_test_done();
}

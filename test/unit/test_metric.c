/* The metric registry: rows are unique and well formed, availability and
 * values follow the level's figures, thresholds read in the row's unit,
 * and every row is defined in docs/metrics.md. */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/tp_metric.h"
#include "tp_test.h"

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *b = malloc((size_t)n + 1);
  if (b && fread(b, 1, (size_t)n, f) != (size_t)n) n = 0;
  if (b) b[n] = 0;
  fclose(f);
  return b;
}

/* Repeated runs judged together: means of values and of every statistic,
 * counts summed, a distribution's n the sum of the runs'. */
static void test_mean_runs(void) {
  tp_level_result runs[3];
  memset(runs, 0, sizeof(runs));
  for (int i = 0; i < 3; i++) {
    runs[i].ttft_ms.n = 10;
    runs[i].ttft_ms.avg = 10.0 * (i + 1);
    runs[i].ttft_ms.p99 = 100.0 + i;
    runs[i].request_throughput = 2.0 * (i + 1);
    runs[i].failed = (uint64_t)i;
    runs[i].error_rate = 0.1 * i;
  }
  runs[2].itl_ms.n = 5; /* only the last run has ITL values */
  runs[2].itl_ms.avg = 7;
  tp_level_result mean;
  tp_metric_mean_runs(runs, 3, &mean);
  CHECK_NEAR(mean.ttft_ms.avg, 20.0, 1e-9, "a distribution's mean is the mean of the runs' means");
  CHECK_NEAR(mean.ttft_ms.p99, 101.0, 1e-9, "its p99 the mean of the runs' p99");
  CHECK_INT(mean.ttft_ms.n, 30, "its n counts every run's values");
  CHECK_NEAR(mean.request_throughput, 4.0, 1e-9, "a value is the mean over the runs");
  CHECK_NEAR(mean.error_rate, 0.1, 1e-9, "the error rate too");
  CHECK_INT(mean.failed, 3, "a count is the sum: a failure in any run counts");
  CHECK(mean.itl_ms.n == 5 && mean.itl_ms.avg == 7, "a figure only one run has is that run's");
}

int main(void) {
  test_mean_runs();
  size_t n;
  const tp_metric *m = tp_metrics(&n);
  CHECK(n >= 20, "the registry has its rows (%zu)", n);
  bool unique = true, sane = true;
  for (size_t i = 0; i < n; i++) {
    for (size_t j = 0; j < i; j++)
      if (!strcmp(m[i].name, m[j].name) || !strcmp(m[i].json_key, m[j].json_key) ||
          (m[i].genai_key && m[j].genai_key && !strcmp(m[i].genai_key, m[j].genai_key)))
        unique = false;
    size_t sz = m[i].kind == TP_METRIC_DIST ? sizeof(tp_stat) : 8;
    if (m[i].offset + sz > sizeof(tp_level_result) || !m[i].label || !*m[i].label || m[i].better < -1 ||
        m[i].better > 1 || (unsigned)m[i].unit >= TP_UNIT_COUNT)
      sane = false;
    if (tp_metric_find(m[i].name) != &m[i]) sane = false;
  }
  CHECK(unique, "names, JSON keys and GenAI-Perf keys are unique");
  CHECK(sane, "every row lies inside tp_level_result, with a label, a direction and a unit");
  CHECK(tp_metric_find("nope") == NULL, "an unknown name is not found");
  CHECK(tp_stat_find("p99") == TP_STAT_P99 && tp_stat_find("p42") < 0, "statistics by name");
  CHECK(!strcmp(tp_unit_genai(TP_UNIT_TOKENS_PER_S), "tokens/sec"), "GenAI-Perf's unit spelling");

  /* Availability and values. */
  tp_level_result lr;
  memset(&lr, 0, sizeof(lr));
  lr.ttft_ms.n = 3;
  lr.ttft_ms.p99 = 42;
  lr.output_token_throughput = 500;
  lr.error_rate = 0.25;
  lr.failed = 7;
  lr.prefix_cache_hit_rate = -1;
  double v = -1;
  CHECK(tp_metric_value(tp_metric_find("ttft"), &lr, TP_STAT_P99, &v) && v == 42, "a distribution's statistic");
  CHECK(!tp_metric_value(tp_metric_find("itl"), &lr, TP_STAT_AVG, &v), "an empty distribution is unavailable");
  CHECK(!tp_metric_available(tp_metric_find("output_token_throughput"), &lr),
        "a token throughput without counted tokens is unavailable, not 0");
  lr.tokens_available = true;
  CHECK(tp_metric_value(tp_metric_find("output_token_throughput"), &lr, TP_STAT_AVG, &v) && v == 500,
        "with tokens counted it has its value");
  CHECK(!tp_metric_available(tp_metric_find("goodput"), &lr), "goodput without bounds is unavailable");
  CHECK(!tp_metric_available(tp_metric_find("prefix_cache_hit_rate"), &lr), "a negative hit rate is unavailable");
  CHECK(tp_metric_value(tp_metric_find("failed"), &lr, TP_STAT_AVG, &v) && v == 7, "a count");
  CHECK(tp_metric_value(tp_metric_find("error_rate"), &lr, TP_STAT_AVG, &v) && v == 0.25, "a fraction");

  /* Thresholds in the row's unit. */
  char err[200];
  struct {
    const char *metric, *text;
    double want;
    int rv;
  } th[] = {{"ttft", "250ms", 250, 0},       {"ttft", "0.25s", 250, 0},  {"ttft", "250", 250, 0},
            {"ttft", "500us", 0.5, 0},       {"ttft", "3h", 0, TP_EINVAL}, {"error_rate", "1%", 0.01, 0},
            {"error_rate", "0.02", 0.02, 0}, {"failed", "3", 3, 0},      {"failed", "3x", 0, TP_EINVAL},
            {"duration", "1500ms", 1.5, 0},  {"duration", "2", 2, 0},    {"ttft", "abc", 0, TP_EINVAL}};
  for (size_t i = 0; i < sizeof(th) / sizeof(th[0]); i++) {
    double got = -1;
    int rv = tp_metric_parse_threshold(tp_metric_find(th[i].metric), th[i].text, &got, err, sizeof(err));
    CHECK(rv == th[i].rv && (rv || got == th[i].want), "threshold %s for %s", th[i].text, th[i].metric);
  }

  /* Every row has its definition in docs/metrics.md, by label (the case
   * and a hyphen for a space aside: "Inter-token latency"). */
  const char *root = getenv("TP_SOURCE_ROOT");
  char path[1024];
  snprintf(path, sizeof(path), "%s/docs/metrics.md", root ? root : "..");
  char *doc = slurp(path);
  CHECK(doc != NULL, "docs/metrics.md is readable");
  for (char *p = doc; p && *p; p++) *p = *p == '-' ? ' ' : (char)tolower((unsigned char)*p);
  for (size_t i = 0; doc && i < n; i++) {
    char want[128];
    snprintf(want, sizeof(want), "%s", m[i].label);
    for (char *p = want; *p; p++) *p = *p == '-' ? ' ' : (char)tolower((unsigned char)*p);
    CHECK(strstr(doc, want) != NULL, "docs/metrics.md defines '%s' (%s)", m[i].label, m[i].name);
  }
  free(doc);
  return tp_test_done();
}

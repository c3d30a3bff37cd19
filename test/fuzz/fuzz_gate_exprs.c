/* Fuzz target: the expressions that name a figure of the metric registry:
 * an --assert / --slo gate (tp_gates_new, lib/run/tp_gates.c), a compare
 * --fail-on rule (tp_compare_parse_rule, lib/report/tp_compare.c), and the
 * lookup both use for names that may hold dots of their own
 * (tp_metric_find_split, lib/metrics/tp_metric.c).
 *
 * The input, cut at its first NUL, is each of them.  Checked, not only for
 * crashes:
 * - the lookup of every prefix of the input returns a row only when that
 *   prefix is the row's name, or the name, a dot and the statistic part it
 *   points at (a view inside the prefix);
 * - a gate that parses names (after leading spaces, its [A-Za-z0-9_.] run)
 *   a row the lookup finds the same way, with a statistic only on a
 *   distribution; judging it on an empty and on a filled level gives 0 or
 *   1, and NaN exactly when the figure is unavailable;
 * - a rule that parses has the row the lookup gives for the text before its
 *   ':', a bound >= 0 and a direction of +1 or -1;
 * - every refusal writes a non-empty, NUL-terminated message.
 * Any difference abort()s. */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/tp_metric.h"
#include "report/tp_compare.h"
#include "run/tp_gates.h"
#include "tokperf/tokperf.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_err(const char *err, size_t errlen) {
  if (!memchr(err, 0, errlen) || err[0] == 0) abort();
}

/* The lookup on s[0..len): what it returns is what the text says. */
static const tp_metric *lookup(const char *s, size_t len, const char **st, size_t *sl) {
  const tp_metric *m = tp_metric_find_split(s, len, st, sl);
  if (!m) return NULL;
  size_t nl = strlen(m->name);
  if (!*st) {
    if (nl != len || memcmp(m->name, s, len) != 0) abort();
  } else {
    if (*st < s || *st + *sl != s + len || nl + 1 + *sl != len || memcmp(m->name, s, nl) != 0 || s[nl] != '.')
      abort();
  }
  return m;
}

static void fuzz_gate(const char *s) {
  tp_gates *g = NULL;
  char err[4096];
  err[0] = 0;
  const char *e[1] = {s};
  int rv = tp_gates_new(&g, e, 1, err, sizeof(err));
  if (rv) {
    check_err(err, sizeof(err));
    return;
  }
  const char *p = s;
  while (isspace((unsigned char)*p)) p++;
  size_t n = 0;
  while (p[n] && (isalnum((unsigned char)p[n]) || p[n] == '_' || p[n] == '.')) n++;
  const char *st;
  size_t sl;
  const tp_metric *m = lookup(p, n, &st, &sl);
  if (!m) abort();
  if (st && (m->kind != TP_METRIC_DIST || tp_stat_find_n(st, sl) < 0)) abort();
  /* Judged on an empty level and on one with every figure there. */
  tp_level_result lv;
  memset(&lv, 0, sizeof(lv));
  for (int pass = 0; pass < 2; pass++) {
    double v = 0;
    int ok = tp_gate_eval(g, 0, &lv, &v);
    if (ok != 0 && ok != 1) abort();
    if (isnan(v) != !tp_metric_available(m, &lv)) abort();
    if (isnan(v) && ok) abort();
    /* Every figure: a distribution of ten values, numbers set. */
    size_t nm;
    const tp_metric *all = tp_metrics(&nm);
    for (size_t k = 0; k < nm; k++) {
      char *f = (char *)&lv + all[k].offset;
      if (all[k].kind == TP_METRIC_DIST)
        ((tp_stat *)(void *)f)->n = 10;
      else if (all[k].kind == TP_METRIC_VALUE)
        *(double *)(void *)f = 1;
      else
        *(uint64_t *)(void *)f = 1;
    }
    lv.tokens_available = lv.goodput_set = true;
    lv.accuracy_scored = 1;
    lv.input_tokens.n = 10;
  }
  tp_gates_free(g);
}

static void fuzz_rule(const char *s) {
  tp_compare_rule r;
  char err[4096];
  err[0] = 0;
  int rv = tp_compare_parse_rule(s, &r, err, sizeof(err));
  if (rv) {
    check_err(err, sizeof(err));
    return;
  }
  const char *colon = strchr(s, ':');
  if (!colon || !r.metric || !(r.bound_pct >= 0) || (r.direction != 1 && r.direction != -1)) abort();
  const char *st;
  size_t sl;
  if (lookup(s, (size_t)(colon - s), &st, &sl) != r.metric) abort();
  if (st && tp_stat_find_n(st, sl) != (int)r.stat) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = 0;
  size_t len = strlen(s);
  /* Every prefix through the lookup (a name is short: the first 120). */
  for (size_t k = 0; k <= len && k <= 120; k++) {
    const char *st;
    size_t sl;
    lookup(s, k, &st, &sl);
  }
  fuzz_gate(s);
  fuzz_rule(s);
  free(s);
  return 0;
}

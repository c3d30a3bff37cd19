#include "tp_gates.h"

#include <ctype.h>
#include <inttypes.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/tp_metric.h"
#include "tokperf/tokperf.h"

typedef enum op { OP_LE, OP_LT, OP_GE, OP_GT, OP_EQ } op;

/* A gate names a row of the metric registry (metrics/tp_metric.h): every
 * figure a level reports can be asserted on, in the unit the report shows
 * it in. */
typedef struct gate {
  char text[128];
  const tp_metric *m;
  tp_stat_id stat; /* for distributions */
  op op;
  double value; /* in the row's unit (ms for times, a fraction for rates of errors) */
} gate;

struct tp_gates {
  gate *g;
  size_t n;
};

static int parse_one(gate *g, const char *expr, char *err, size_t errlen) {
  memset(g, 0, sizeof(*g));
  snprintf(g->text, sizeof(g->text), "%s", expr);
  const char *p = expr;
  while (isspace((unsigned char)*p)) p++;
  const char *name = p;
  while (*p && (isalnum((unsigned char)*p) || *p == '_' || *p == '.')) p++;
  size_t nlen = (size_t)(p - name);
  if (nlen == 0 || nlen >= 96) goto bad;
  /* A name may hold dots itself ("fidelity.loop_lag.p99"). */
  const char *dot;
  size_t dlen;
  g->m = tp_metric_find_split(name, nlen, &dot, &dlen);
  char nm[96];
  snprintf(nm, sizeof(nm), "%.*s", (int)(dot && !g->m && tp_stat_find_n(dot, dlen) >= 0 ? nlen - dlen - 1 : nlen),
           name);
  if (!g->m) {
    char known[2048];
    tp_metric_names(known, sizeof(known), false);
    tp_seterr(err, errlen, "goals.asserts '%s': unknown metric '%s' (known: %s)", expr, nm, known);
    return TP_EINVAL;
  }
  snprintf(nm, sizeof(nm), "%s", g->m->name);
  g->stat = TP_STAT_AVG;
  if (g->m->kind == TP_METRIC_DIST) {
    int st = dot ? tp_stat_find_n(dot, dlen) : TP_STAT_AVG;
    if (st < 0) {
      char known[128] = "";
      for (int i = 0; i < TP_STAT_COUNT; i++)
        snprintf(known + strlen(known), sizeof(known) - strlen(known), "%s%s", i ? ", " : "",
                 tp_stat_name((tp_stat_id)i));
      tp_seterr(err, errlen, "goals.asserts '%s': unknown statistic '%.*s' (%s)", expr, (int)dlen, dot, known);
      return TP_EINVAL;
    }
    g->stat = (tp_stat_id)st;
  } else if (dot) {
    tp_seterr(err, errlen, "goals.asserts '%s': %s is one number per level and takes no statistic", expr, nm);
    return TP_EINVAL;
  }
  while (isspace((unsigned char)*p)) p++;
  if (p[0] == '<' && p[1] == '=') g->op = OP_LE, p += 2;
  else if (p[0] == '>' && p[1] == '=') g->op = OP_GE, p += 2;
  else if (p[0] == '=' && p[1] == '=') g->op = OP_EQ, p += 2;
  else if (p[0] == '<') g->op = OP_LT, p += 1;
  else if (p[0] == '>') g->op = OP_GT, p += 1;
  else goto bad;
  while (isspace((unsigned char)*p)) p++;
  char why[128];
  if (!*p) goto bad;
  if (tp_metric_parse_threshold(g->m, p, &g->value, why, sizeof(why))) {
    tp_seterr(err, errlen, "goals.asserts '%s': %s", expr, why);
    return TP_EINVAL;
  }
  return 0;
bad:
  tp_seterr(err, errlen,
            "goals.asserts '%s': expected METRIC[.STAT] OP VALUE[UNIT], like 'ttft.p99 <= 250ms', "
            "'output_token_throughput >= 1000' or 'error_rate <= 1%%'",
            expr);
  return TP_EINVAL;
}

int tp_gates_new(tp_gates **out, const char *const *exprs, size_t n, char *err, size_t errlen) {
  tp_gates *g = calloc(1, sizeof(*g));
  if (!g) return TP_ENOMEM;
  g->g = calloc(n ? n : 1, sizeof(gate));
  if (!g->g) {
    free(g);
    return TP_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    int rv = parse_one(&g->g[i], exprs[i], err, errlen);
    if (rv) {
      tp_gates_free(g);
      return rv;
    }
  }
  g->n = n;
  *out = g;
  return 0;
}

int tp_gate_eval(const tp_gates *gs, size_t i, const tp_level_result *lv, double *value) {
  const gate *g = &gs->g[i];
  double v;
  /* An unavailable figure (no requests measured, no tokens counted, no
   * goodput bounds) cannot prove a bound. */
  if (!tp_metric_value(g->m, lv, g->stat, &v)) {
    *value = NAN;
    return 0;
  }
  *value = v;
  switch (g->op) {
    case OP_LE: return v <= g->value;
    case OP_LT: return v < g->value;
    case OP_GE: return v >= g->value;
    case OP_GT: return v > g->value;
    case OP_EQ: return v == g->value;
  }
  return 0;
}

static void level_name(const tp_level_result *lv, char *buf, size_t len) {
  if (lv->load_mode == TP_LOAD_RATE)
    snprintf(buf, len, "request rate %g/s", lv->request_rate);
  else if (lv->load_mode == TP_LOAD_SCHEDULE)
    snprintf(buf, len, "the schedule");
  else
    snprintf(buf, len, "concurrency %u", lv->concurrency);
}

int tp_gates_check(const tp_gates *g, const tp_level_result *levels, size_t n_levels, double max_error_rate,
                   FILE *out) {
  int failures = 0;
  char where[64];
  uint64_t requests = 0, succeeded = 0;
  for (size_t l = 0; l < n_levels; l++) {
    const tp_level_result *lv = &levels[l];
    level_name(lv, where, sizeof(where));
    requests += lv->requests;
    succeeded += lv->succeeded;
    for (size_t i = 0; g && i < g->n; i++) {
      double v;
      if (tp_gate_eval(g, i, lv, &v)) continue;
      failures++;
      const gate *x = &g->g[i];
      if (isnan(v))
        fprintf(out, "tokperf: assertion failed: %s: %s is unavailable at %s\n", x->text, x->m->name, where);
      else if (x->m->unit == TP_UNIT_FRACTION)
        fprintf(out, "tokperf: assertion failed: %s: measured %.4g (%.2f%%) at %s\n", x->text, v, 100 * v, where);
      else
        fprintf(out, "tokperf: assertion failed: %s: measured %.4g %s at %s\n", x->text, v, tp_unit_name(x->m->unit),
                where);
    }
    /* A distributed level a rank failed in measured less load than asked:
     * its figures are kept and reported, but the run does not pass. */
    if (lv->incomplete) {
      failures++;
      fprintf(out, "tokperf: incomplete: %" PRIu32 " of %" PRIu32 " ranks failed at %s", lv->ranks - lv->ranks_reporting,
              lv->ranks, where);
      for (uint32_t k = 0; lv->rank_info && k < lv->ranks; k++)
        if (!lv->rank_info[k].ok)
          fprintf(out, "; rank %" PRIu32 " on %s: %s", k, lv->rank_info[k].host, lv->rank_info[k].failure);
      fputc('\n', out);
    }
    /* A level the server went away from ended early: its figures are
     * reported, but the run does not pass. */
    if (lv->server_gone) {
      failures++;
      fprintf(out,
              "tokperf: the server went away at %s: %" PRIu64 " requests in a row failed to reach it from %.2f s "
              "into the level, which ended there (--max-consecutive-failures)\n",
              where, lv->server_away_requests, lv->server_away_s);
    }
    if (max_error_rate >= 0 && lv->error_rate > max_error_rate) {
      failures++;
      fprintf(out, "tokperf: --max-error-rate %g exceeded: %.4g (%" PRIu64 " of %" PRIu64 " failed) at %s\n",
              max_error_rate, lv->error_rate, lv->failed, lv->requests, where);
    }
  }
  /* A run in which nothing succeeded never passes, whatever else was set. */
  if (requests > 0 && succeeded == 0) {
    failures++;
    fprintf(out, "tokperf: every one of the %" PRIu64 " measured requests failed\n", requests);
  }
  return failures;
}

int tp_gates_error_rate_note(const tp_level_result *levels, size_t n_levels, double max_error_rate, char *buf,
                             size_t len) {
  if (max_error_rate >= 0) return 0; /* the gate says it, and fails the run */
  const tp_level_result *worst = NULL;
  size_t over = 0;
  for (size_t l = 0; l < n_levels; l++) {
    const tp_level_result *lv = &levels[l];
    if (!lv->requests || !(lv->error_rate > TP_ERROR_RATE_WARN)) continue;
    over++;
    if (!worst || lv->error_rate > worst->error_rate) worst = lv;
  }
  if (!worst) return 0;
  char where[64], more[64] = "";
  level_name(worst, where, sizeof(where));
  if (over > 1)
    snprintf(more, sizeof(more), " (and %zu more levels over %g%%)", over - 1, 100 * TP_ERROR_RATE_WARN);
  snprintf(buf, len,
           "%.1f%% of the measured requests failed at %s (%" PRIu64 " of %" PRIu64
           ")%s, over the %g%% tokperf "
           "warns at; the figures describe a failing server (--max-error-rate R makes such a run fail)",
           100 * worst->error_rate, where, worst->failed, worst->requests, more, 100 * TP_ERROR_RATE_WARN);
  return 1;
}

void tp_gates_free(tp_gates *g) {
  if (!g) return;
  free(g->g);
  free(g);
}

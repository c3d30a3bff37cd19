#include "tp_gates.h"

#include <ctype.h>
#include <inttypes.h>
#include <stddef.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef enum op { OP_LE, OP_LT, OP_GE, OP_GT, OP_EQ } op;

typedef enum kind { K_TIME, K_COUNT, K_RATE, K_FRACTION } kind;

/* Where each metric lives in a level result: a tp_stat, or one double, or
 * one counter. */
typedef struct metric {
  const char *name;
  kind kind;
  size_t stat_off;   /* offset of a tp_stat, or SIZE_MAX */
  size_t scalar_off; /* offset of a double, or SIZE_MAX */
  size_t count_off;  /* offset of a uint64_t, or SIZE_MAX */
  const char *unit;  /* as printed */
} metric;

#define STAT(n, f, k, u) {n, k, offsetof(tp_level_result, f), SIZE_MAX, SIZE_MAX, u}
#define SCALAR(n, f, k, u) {n, k, SIZE_MAX, offsetof(tp_level_result, f), SIZE_MAX, u}
#define COUNT(n, f) {n, K_COUNT, SIZE_MAX, SIZE_MAX, offsetof(tp_level_result, f), "requests"}

static const metric metrics[] = {
  STAT("ttft", ttft_ms, K_TIME, "ms"),
  STAT("itl", itl_ms, K_TIME, "ms"),
  STAT("latency", latency_ms, K_TIME, "ms"),
  STAT("output_tokens", output_tokens, K_COUNT, "tokens"),
  STAT("input_tokens", input_tokens, K_COUNT, "tokens"),
  STAT("output_tps_per_user", output_tps_per_user, K_RATE, "tokens/s"),
  STAT("send_lag", send_lag_ms, K_TIME, "ms"),
  STAT("ttft_from_planned", ttft_from_planned_ms, K_TIME, "ms"),
  STAT("latency_from_planned", latency_from_planned_ms, K_TIME, "ms"),
  SCALAR("output_token_throughput", output_token_throughput, K_RATE, "tokens/s"),
  SCALAR("input_token_throughput", input_token_throughput, K_RATE, "tokens/s"),
  SCALAR("request_throughput", request_throughput, K_RATE, "requests/s"),
  SCALAR("goodput", goodput_rps, K_RATE, "requests/s"),
  SCALAR("goodput_fraction", goodput_fraction, K_FRACTION, ""),
  SCALAR("error_rate", error_rate, K_FRACTION, ""),
  SCALAR("achieved_send_rate", achieved_send_rate, K_RATE, "requests/s"),
  COUNT("failed", failed),
  COUNT("succeeded", succeeded),
};

static const char *const stat_names[] = {"avg", "min", "max", "std", "p25", "p50", "p75", "p90", "p95", "p99"};

typedef struct gate {
  char text[128];
  const metric *m;
  int stat; /* index into stat_names, -1 for scalars */
  op op;
  double value; /* in the metric's unit (ms for times, fraction for rates of errors) */
} gate;

struct tp_gates {
  gate *g;
  size_t n;
};

static double stat_value(const tp_stat *s, int i) {
  const double v[] = {s->avg, s->min, s->max, s->std, s->p25, s->p50, s->p75, s->p90, s->p95, s->p99};
  return v[i];
}

static int parse_one(gate *g, const char *expr, char *err, size_t errlen) {
  memset(g, 0, sizeof(*g));
  snprintf(g->text, sizeof(g->text), "%s", expr);
  const char *p = expr;
  while (isspace((unsigned char)*p)) p++;
  const char *name = p;
  while (*p && (isalnum((unsigned char)*p) || *p == '_' || *p == '.')) p++;
  size_t nlen = (size_t)(p - name);
  char nm[64];
  if (nlen == 0 || nlen >= sizeof(nm)) goto bad;
  memcpy(nm, name, nlen);
  nm[nlen] = 0;
  char *dot = strchr(nm, '.');
  if (dot) *dot = 0;
  for (size_t i = 0; i < TP_ARRAY_LEN(metrics); i++)
    if (strcmp(metrics[i].name, nm) == 0) g->m = &metrics[i];
  if (!g->m) {
    tp_seterr(err, errlen, "--assert '%s': unknown metric '%s' (known: ttft, itl, latency, output_tokens, "
              "input_tokens, output_tps_per_user, send_lag, ttft_from_planned, latency_from_planned, "
              "output_token_throughput, input_token_throughput, request_throughput, goodput, goodput_fraction, "
              "error_rate, achieved_send_rate, failed, succeeded)", expr, nm);
    return TP_EINVAL;
  }
  g->stat = -1;
  if (g->m->stat_off != SIZE_MAX) {
    const char *st = dot ? dot + 1 : "avg";
    for (int i = 0; i < (int)TP_ARRAY_LEN(stat_names); i++)
      if (strcmp(st, stat_names[i]) == 0) g->stat = i;
    if (g->stat < 0) {
      tp_seterr(err, errlen, "--assert '%s': unknown statistic '%s' (avg, min, max, std, p25, p50, p75, p90, "
                "p95, p99)", expr, st);
      return TP_EINVAL;
    }
  } else if (dot) {
    tp_seterr(err, errlen, "--assert '%s': %s is one number per level and takes no statistic", expr, nm);
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
  char *end;
  double v = strtod(p, &end);
  if (end == p || !isfinite(v)) goto bad;
  p = end;
  while (isspace((unsigned char)*p)) p++;
  if (g->m->kind == K_TIME) {
    if (!*p || strcmp(p, "ms") == 0) {
    } else if (strcmp(p, "s") == 0) v *= 1e3;
    else if (strcmp(p, "us") == 0) v /= 1e3;
    else if (strcmp(p, "ns") == 0) v /= 1e6;
    else {
      tp_seterr(err, errlen, "--assert '%s': a time takes ns, us, ms or s", expr);
      return TP_EINVAL;
    }
  } else if (*p == '%' && p[1] == 0 && g->m->kind == K_FRACTION) {
    v /= 100;
  } else if (*p) {
    tp_seterr(err, errlen, "--assert '%s': unexpected '%s' after the number", expr, p);
    return TP_EINVAL;
  }
  g->value = v;
  return 0;
bad:
  tp_seterr(err, errlen, "--assert '%s': expected METRIC[.STAT] OP VALUE[UNIT], like 'ttft.p99 <= 250ms', "
            "'output_token_throughput >= 1000' or 'error_rate <= 1%%'", expr);
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
  const char *base = (const char *)lv;
  double v;
  if (g->m->stat_off != SIZE_MAX) {
    const tp_stat *s = (const tp_stat *)(base + g->m->stat_off);
    /* An unavailable figure cannot prove a bound. */
    if (s->n == 0) {
      *value = NAN;
      return 0;
    }
    v = stat_value(s, g->stat);
  } else if (g->m->scalar_off != SIZE_MAX) {
    v = *(const double *)(base + g->m->scalar_off);
  } else {
    v = (double)*(const uint64_t *)(base + g->m->count_off);
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
      else if (x->m->kind == K_FRACTION)
        fprintf(out, "tokperf: assertion failed: %s: measured %.4g (%.2f%%) at %s\n", x->text, v, 100 * v, where);
      else
        fprintf(out, "tokperf: assertion failed: %s: measured %.4g %s at %s\n", x->text, v, x->m->unit, where);
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

void tp_gates_free(tp_gates *g) {
  if (!g) return;
  free(g->g);
  free(g);
}

/* tokperf compare: two --json documents side by side, --fail-on rules and
 * JUnit XML.  See tp_compare.h for the rule syntax and semantics. */
#include "tp_compare.h"

#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "metrics/tp_ci.h"
#include "metrics/tp_metric.h"
#include "report/tp_export.h"
#include "report/tp_compare_int.h"
#include "report/tp_html.h"
#include "report/tp_report_fidelity.h"

#define SCHEMA "tokperf.report/1"

/* Rules and table rows name rows of the metric registry
 * (metrics/tp_metric.h): a metric's JSON key, unit, statistics and better
 * direction come from there, so compare reads every figure the way the
 * report wrote it (fractions as fractions, as gates take them). */

static void stat_list(char *buf, size_t len) {
  buf[0] = 0;
  for (int i = 0; i < TP_STAT_COUNT; i++)
    snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", i ? ", " : "", tp_stat_name((tp_stat_id)i));
}

/* ------------------------------------------------------------------------ */
/* Rules                                                                    */

int tp_compare_parse_rule(const char *s, tp_compare_rule *out, char *err, size_t errlen) {
  memset(out, 0, sizeof(*out));
  if (!s || !*s) {
    tp_seterr(err, errlen, "expected METRIC[.STAT]:[+|-]N%% such as ttft.p99:+10%%");
    return TP_EINVAL;
  }
  snprintf(out->text, sizeof(out->text), "%s", s);
  const char *colon = strchr(s, ':');
  if (!colon) {
    tp_seterr(err, errlen,
              "missing ':' before the bound; expected METRIC[.STAT]:[+|-]N%% such as ttft.p99:+10%%");
    return TP_EINVAL;
  }
  /* A name may hold dots itself ("fidelity.loop_lag.p99"). */
  const char *dot;
  size_t sl;
  const tp_metric *m = tp_metric_find_split(s, (size_t)(colon - s), &dot, &sl);
  if (!m) {
    char known[2048];
    tp_metric_names(known, sizeof(known), false);
    size_t name_len = (size_t)(colon - s);
    if (dot && tp_stat_find_n(dot, sl) >= 0) name_len -= sl + 1;
    tp_seterr(err, errlen, "unknown metric '%.*s' (accepted: %s)", (int)name_len, s, known);
    return TP_EINVAL;
  }
  bool has_stat = m->kind == TP_METRIC_DIST;
  out->metric = m;
  out->stat = TP_STAT_AVG;
  char stats[128];
  stat_list(stats, sizeof(stats));
  if (dot) {
    int st = tp_stat_find_n(dot, sl);
    if (st < 0 || (!has_stat && st != TP_STAT_AVG)) {
      if (has_stat)
        tp_seterr(err, errlen, "unknown statistic '%.*s' for %s (accepted: %s)", (int)sl, dot, m->name,
                  stats);
      else
        tp_seterr(err, errlen, "%s is one figure per level and takes no statistic (write %s:-5%%)", m->name,
                  m->name);
      return TP_EINVAL;
    }
    out->stat = (tp_stat_id)st;
  } else if (has_stat) {
    tp_seterr(err, errlen, "%s needs a statistic, e.g. %s.p99 (one of %s)", m->name, m->name, stats);
    return TP_EINVAL;
  }

  const char *b = colon + 1;
  int dir = m->better > 0 ? -1 : 1; /* no sign: the worse way (up when neither is better) */
  if (*b == '+' || *b == '-') dir = *b++ == '+' ? 1 : -1;
  char *end;
  errno = 0;
  double v = strtod(b, &end);
  if (end == b || *b == '+' || *b == '-' || errno || !isfinite(v) || v < 0 || strcmp(end, "%") != 0) {
    tp_seterr(err, errlen,
              "bad bound '%s': expected a percentage with an optional sign, such as +10%% or -5%%",
              colon + 1);
    return TP_EINVAL;
  }
  out->bound_pct = v;
  out->direction = dir;
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Documents                                                                */


int tp__cmp_load_doc(doc *d, const char *path, char *err, size_t errlen) {
  memset(d, 0, sizeof(*d));
  d->path = path;
  FILE *f = fopen(path, "rb");
  if (!f) {
    int e = errno;
    tp_seterr(err, errlen, "cannot read %s: %s (give the files written by --json)", path, strerror(e));
    return e == ENOENT ? TP_ENOTFOUND : TP_EIO;
  }
  json_error_t je;
  d->root = json_loadf(f, 0, &je);
  fclose(f);
  if (!d->root) {
    tp_seterr(err, errlen, "%s:%d:%d: not valid JSON: %s", path, je.line, je.column, je.text);
    return TP_EINVAL;
  }
  const char *schema = json_string_value(json_object_get(d->root, "schema"));
  if (!schema || strcmp(schema, SCHEMA)) {
    tp_seterr(err, errlen, "%s is not a tokperf report (schema '%s', expected '%s'; write one with --json)",
              path, schema ? schema : "none", SCHEMA);
    return TP_EINVAL;
  }
  d->levels = json_object_get(d->root, "levels");
  d->repeats = json_object_get(d->root, "repeats");
  if (!json_is_array(d->repeats) || !json_array_size(d->repeats)) d->repeats = NULL;
  if (!json_is_array(d->levels)) {
    tp_seterr(err, errlen, "%s has no \"levels\" array", path);
    return TP_EINVAL;
  }
  json_t *cfg = json_object_get(d->root, "config"), *gen = json_object_get(d->root, "generator");
  const char *model = json_string_value(json_object_get(cfg, "model"));
  const char *ver = json_string_value(json_object_get(gen, "version"));
  snprintf(d->desc, sizeof(d->desc), "model %s, tokperf %s", model ? model : "n/a", ver ? ver : "n/a");
  return 0;
}

static bool num(json_t *v, double *out) {
  if (!json_is_number(v)) return false;
  *out = json_number_value(v);
  return isfinite(*out);
}

/* The value of a metric in one level of a document; false = unavailable
 * (null or missing; for error_rate, a level with no requests). */
bool tp__cmp_level_value(json_t *lv, const tp_metric *m, tp_stat_id st, double *out) {
  json_t *v = tp__json_key_get(lv, m->json_key);
  if (m->kind == TP_METRIC_DIST) v = json_object_get(v, tp_stat_name(st));
  if (num(v, out)) return true;
  if (strcmp(m->name, "error_rate") == 0) {
    /* Older documents have only the counts. */
    double req, failed;
    if (!num(json_object_get(lv, "requests"), &req) || !num(json_object_get(lv, "failed"), &failed) ||
        req <= 0)
      return false;
    *out = failed / req;
    return true;
  }
  return false;
}

/* A level's sweep point, read back into the fields tp__level_name uses.
 * Two levels match when every field is equal: for a concurrency sweep that
 * is the concurrency alone. */
void tp__cmp_level_point(json_t *lv, tp_level_result *p) {
  memset(p, 0, sizeof(*p));
  const char *mode = json_string_value(json_object_get(lv, "mode"));
  p->load_mode = mode && !strcmp(mode, "request_rate") ? TP_LOAD_RATE
                 : mode && !strcmp(mode, "schedule")   ? TP_LOAD_SCHEDULE
                                                       : TP_LOAD_CONCURRENCY;
  json_t *c = json_object_get(lv, "concurrency");
  p->concurrency = json_is_integer(c) ? (uint32_t)json_integer_value(c) : 0;
  double v;
  if (num(json_object_get(lv, "request_rate_rps"), &v)) p->request_rate = v;
  if (num(json_object_get(lv, "input_tokens_target"), &v)) p->input_tokens_mean = (uint32_t)v;
  if (num(json_object_get(lv, "output_tokens_target"), &v)) p->output_tokens_mean = (uint32_t)v;
}

bool tp__cmp_same_point(const tp_level_result *a, const tp_level_result *b) {
  return a->load_mode == b->load_mode && a->concurrency == b->concurrency &&
         a->request_rate == b->request_rate && a->input_tokens_mean == b->input_tokens_mean &&
         a->output_tokens_mean == b->output_tokens_mean;
}

static void level_name(json_t *lv, char *buf, size_t len) {
  tp_level_result p;
  tp__cmp_level_point(lv, &p);
  tp__level_name(&p, buf, len);
}

/* ------------------------------------------------------------------------ */
/* Comparison                                                               */

typedef struct result {
  char level[128]; /* "concurrency 8" */
  const tp_metric *metric;
  tp_stat_id stat;
  bool have_a, have_b;
  double a, b, change; /* change in percent, may be +-inf */
  bool worse;
  /* Repeated runs in both documents: a and b are means over runs, and a
   * change counts only when their 95% intervals are apart (tp_ci_apart);
   * noise: it went the worse way, but within the intervals. */
  bool use_ci, noise;
  tp_ci ca, cb;
  int rule; /* index of the rule, -1 = a table row */
  bool failed, skipped;
} result;

static double pct_change(double a, double b) {
  if (a == 0) return b == 0 ? 0 : b > 0 ? INFINITY : -INFINITY;
  return (b - a) / fabs(a) * 100;
}

/* A point's interval over repeated runs (docs/search.md): "metrics" ->
 * JSON key -> statistic ("value" for a level figure) -> mean, std, runs,
 * ci95_half_width.  False when the document has none for it. */
static bool repeat_value(json_t *g, const tp_metric *m, tp_stat_id st, tp_ci *ci) {
  json_t *v = json_object_get(json_object_get(g, "metrics"), m->json_key);
  v = json_object_get(v, m->kind == TP_METRIC_DIST ? tp_stat_name(st) : "value");
  double mean, runs, sd = 0, half = 0;
  if (!num(json_object_get(v, "mean"), &mean) || !num(json_object_get(v, "runs"), &runs)) return false;
  num(json_object_get(v, "std"), &sd);
  num(json_object_get(v, "ci95_half_width"), &half);
  memset(ci, 0, sizeof(*ci));
  ci->n = (size_t)runs;
  ci->mean = mean;
  ci->sd = sd;
  ci->half = half;
  ci->lo = mean - half;
  ci->hi = mean + half;
  return true;
}

static void eval(result *r, json_t *la, json_t *lb) {
  if (r->use_ci) {
    r->have_a = repeat_value(la, r->metric, r->stat, &r->ca);
    r->have_b = repeat_value(lb, r->metric, r->stat, &r->cb);
    r->a = r->ca.mean;
    r->b = r->cb.mean;
  } else {
    r->have_a = tp__cmp_level_value(la, r->metric, r->stat, &r->a);
    r->have_b = tp__cmp_level_value(lb, r->metric, r->stat, &r->b);
  }
  if (r->have_a && r->have_b) {
    r->change = pct_change(r->a, r->b);
    r->worse = r->metric->better < 0 ? r->b > r->a : r->metric->better > 0 ? r->b < r->a : false;
    if (r->use_ci && r->worse && !tp_ci_apart(&r->ca, &r->cb)) {
      r->worse = false;
      r->noise = true;
    }
  }
}

void tp__cmp_metric_label(char *buf, size_t len, const tp_metric *m, tp_stat_id st) {
  if (m->kind == TP_METRIC_DIST)
    snprintf(buf, len, "%s.%s", m->name, tp_stat_name(st));
  else
    snprintf(buf, len, "%s", m->name);
}

static void fmt_change(char *buf, size_t len, const result *r) {
  if (!r->have_a || !r->have_b)
    snprintf(buf, len, "n/a");
  else if (isinf(r->change))
    snprintf(buf, len, "%sinf%%", r->change > 0 ? "+" : "-");
  else
    snprintf(buf, len, "%+.1f%%", r->change);
}

/* Two decimals, or the registry's when it asks for more (fractions). */
static void fmt_val(char *buf, size_t len, const tp_metric *m, bool have, double v) {
  if (have)
    snprintf(buf, len, "%.*f", m->decimals > 2 ? m->decimals : 2, v);
  else
    snprintf(buf, len, "n/a");
}

/* The rows of the side-by-side table: the registry's rows marked for it,
 * a distribution as its average and upper percentiles. */
static const tp_stat_id table_stats[] = {TP_STAT_AVG, TP_STAT_P50, TP_STAT_P90, TP_STAT_P95, TP_STAT_P99};

typedef struct results {
  result *v;
  size_t n, cap;
} results;

static result *push(results *rs) {
  if (rs->n == rs->cap) {
    size_t nc = rs->cap ? rs->cap * 2 : 64;
    result *nv = realloc(rs->v, nc * sizeof(*nv));
    if (!nv) return NULL;
    rs->v = nv;
    rs->cap = nc;
  }
  result *r = &rs->v[rs->n++];
  memset(r, 0, sizeof(*r));
  r->rule = -1;
  return r;
}

static void print_row(FILE *out, const result *r) {
  char label[64], name[96], a[32], b[32], c[32];
  tp__cmp_metric_label(label, sizeof(label), r->metric, r->stat);
  if (*tp_unit_name(r->metric->unit))
    snprintf(name, sizeof(name), "%s (%s)", label, tp_unit_name(r->metric->unit));
  else
    snprintf(name, sizeof(name), "%s", label);
  fmt_val(a, sizeof(a), r->metric, r->have_a, r->a);
  fmt_val(b, sizeof(b), r->metric, r->have_b, r->b);
  fmt_change(c, sizeof(c), r);
  /* A figure with no better direction (reads per second) is neither. */
  const char *mark = !r->have_a || !r->have_b || !r->metric->better                ? ""
                     : r->worse                                                    ? "  worse"
                     : r->noise                                                    ? "  within noise"
                     : r->a != r->b && (!r->use_ci || tp_ci_apart(&r->ca, &r->cb)) ? "  better"
                     : r->use_ci && r->a != r->b                                   ? "  within noise"
                                                                                   : "";
  fprintf(out, "  %-34s %14s %14s %9s%s\n", name, a, b, c, mark);
}

/* ------------------------------------------------------------------------ */
/* JUnit XML                                                                */

static int xml_attr(tp_buf *o, const char *s) {
  return tp_html_escape(o, s, strlen(s));
}

/* "360.00 ms", or for a fraction "0.0200 (2.00%)". */
static void fmt_with_unit(char *buf, size_t len, const tp_metric *m, double v) {
  char n[32];
  fmt_val(n, sizeof(n), m, true, v);
  if (m->unit == TP_UNIT_FRACTION)
    snprintf(buf, len, "%s (%.2f%%)", n, 100 * v);
  else
    snprintf(buf, len, "%s %s", n, tp_unit_name(m->unit));
}

static void rule_message(char *buf, size_t len, const tp_compare_rule *rule, const result *r) {
  char label[64], a[48], b[48], c[32];
  tp__cmp_metric_label(label, sizeof(label), r->metric, r->stat);
  fmt_with_unit(a, sizeof(a), r->metric, r->a);
  fmt_with_unit(b, sizeof(b), r->metric, r->b);
  fmt_change(c, sizeof(c), r);
  if (r->skipped)
    snprintf(buf, len, "%s at %s: unavailable in both runs", label, r->level);
  else if (!r->have_b)
    snprintf(buf, len, "%s at %s: %s in A but unavailable in B", label, r->level, a);
  else if (!r->have_a)
    snprintf(buf, len, "%s at %s: unavailable in A, %s in B", label, r->level, b);
  else if (r->use_ci)
    snprintf(buf, len, "%s at %s: %s +- %.4g -> %s +- %.4g over %zu and %zu runs (%s, bound %c%g%%; %s)",
             label, r->level, a, r->ca.half, b, r->cb.half, r->ca.n, r->cb.n, c,
             rule->direction > 0 ? '+' : '-', rule->bound_pct,
             tp_ci_apart(&r->ca, &r->cb) ? "the 95% intervals are apart: beyond noise"
                                         : "within noise: the 95% "
                                           "intervals overlap");
  else
    snprintf(buf, len, "%s at %s: %s -> %s (%s, bound %c%g%%)", label, r->level, a, b, c,
             rule->direction > 0 ? '+' : '-', rule->bound_pct);
}

/* The JUnit test cases of the --fail-on checks. */
static int junit_rules(tp_buf *o, const tp_compare_rule *rules, const results *rs) {
  int rv = 0;
  for (size_t i = 0; i < rs->n && !rv; i++) {
    const result *r = &rs->v[i];
    if (r->rule < 0) continue;
    char name[256], msg[640];
    snprintf(name, sizeof(name), "%s at %s", rules[r->rule].text, r->level);
    rule_message(msg, sizeof(msg), &rules[r->rule], r);
    rv = tp_buf_append_str(o, "    <testcase classname=\"tokperf.compare.rules\" name=\"");
    if (!rv) rv = xml_attr(o, name);
    if (!rv) rv = tp_buf_append_str(o, "\" time=\"0\"");
    if (!rv && !r->failed && !r->skipped) {
      rv = tp_buf_append_str(o, "><system-out>");
      if (!rv) rv = xml_attr(o, msg);
      if (!rv) rv = tp_buf_append_str(o, "</system-out></testcase>\n");
      continue;
    }
    if (!rv)
      rv = tp_buf_append_str(
          o, r->failed ? ">\n      <failure type=\"regression\" message=\"" : ">\n      <skipped message=\"");
    if (!rv) rv = xml_attr(o, msg);
    if (!rv) rv = tp_buf_append_str(o, "\"/>\n    </testcase>\n");
  }
  return rv;
}

/* The JUnit test cases of the metric table: always passed, the figures in
 * their output. */
static int junit_metrics(tp_buf *o, const results *rs) {
  int rv = 0;
  for (size_t i = 0; i < rs->n && !rv; i++) {
    const result *r = &rs->v[i];
    if (r->rule >= 0) continue;
    char label[64], a[32], b[32], c[32];
    tp__cmp_metric_label(label, sizeof(label), r->metric, r->stat);
    fmt_val(a, sizeof(a), r->metric, r->have_a, r->a);
    fmt_val(b, sizeof(b), r->metric, r->have_b, r->b);
    fmt_change(c, sizeof(c), r);
    /* classname: the level as an identifier, "concurrency_8". */
    char cls[128];
    size_t k = 0;
    for (const char *q = r->level; *q && k + 1 < sizeof(cls); q++)
      cls[k++] = (*q >= 'a' && *q <= 'z') || (*q >= 'A' && *q <= 'Z') || (*q >= '0' && *q <= '9') ? *q : '_';
    cls[k] = '\0';
    rv = tp_buf_printf(
        o,
        "    <testcase classname=\"tokperf.compare.%s\" name=\"%s\" time=\"0\"><system-out>A %s, "
        "B %s %s, change %s%s</system-out></testcase>\n",
        cls, label, a, b, tp_unit_name(r->metric->unit), c,
        r->have_a && r->have_b && r->worse   ? " (worse)"
        : r->have_a && r->have_b && r->noise ? " (within noise)"
                                             : "");
  }
  return rv;
}

static int write_junit(const char *path, const char *pa, const char *pb, const tp_compare_rule *rules,
                       const results *rs, char *err, size_t errlen) {
  size_t nrule = 0, nfail = 0, nskip = 0, nrow = 0;
  for (size_t i = 0; i < rs->n; i++) {
    if (rs->v[i].rule < 0) {
      nrow++;
      continue;
    }
    nrule++;
    nfail += rs->v[i].failed;
    nskip += rs->v[i].skipped;
  }
  tp_buf o;
  tp_buf_init(&o);
  int rv = tp_buf_printf(&o,
                         "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                         "<testsuites name=\"tokperf compare\" tests=\"%zu\" failures=\"%zu\" "
                         "errors=\"0\" skipped=\"%zu\">\n"
                         "  <testsuite name=\"tokperf.compare.rules\" tests=\"%zu\" failures=\"%zu\" "
                         "errors=\"0\" skipped=\"%zu\">\n    <properties>\n"
                         "      <property name=\"baseline\" value=\"",
                         nrule + nrow, nfail, nskip, nrule, nfail, nskip);
  if (!rv) rv = xml_attr(&o, pa);
  if (!rv) rv = tp_buf_append_str(&o, "\"/>\n      <property name=\"candidate\" value=\"");
  if (!rv) rv = xml_attr(&o, pb);
  if (!rv) rv = tp_buf_append_str(&o, "\"/>\n    </properties>\n");
  if (!rv) rv = junit_rules(&o, rules, rs);
  if (!rv)
    rv = tp_buf_printf(&o,
                       "  </testsuite>\n  <testsuite name=\"tokperf.compare.metrics\" tests=\"%zu\" "
                       "failures=\"0\" errors=\"0\" skipped=\"0\">\n",
                       nrow);
  if (!rv) rv = junit_metrics(&o, rs);
  if (!rv) rv = tp_buf_append_str(&o, "  </testsuite>\n</testsuites>\n");
  if (!rv && tp__write_atomic(path, o.data, o.len)) {
    tp__write_err(err, errlen, path, errno, "see --junit");
    rv = TP_EIO;
  } else if (rv) {
    tp_seterr(err, errlen, "cannot write %s: out of memory", path);
  }
  tp_buf_fini(&o);
  return rv;
}

/* ------------------------------------------------------------------------ */

static void level_list(char *buf, size_t len, json_t *levels) {
  size_t o = 0;
  buf[0] = '\0';
  for (size_t i = 0; i < json_array_size(levels) && o + 1 < len; i++) {
    char name[128];
    level_name(json_array_get(levels, i), name, sizeof(name));
    int w = snprintf(buf + o, len - o, "%s%s", i ? "; " : "", name);
    if (w < 0) break;
    o += (size_t)w;
  }
  if (!json_array_size(levels)) snprintf(buf, len, "none");
}

/* Prints "\nConcurrency 8<suffix>" with the level's name capitalised. */
static void print_level_head(FILE *out, const char *name, const char *suffix) {
  fprintf(out, "\n%c%s%s", toupper((unsigned char)name[0]), name + 1, suffix);
}

static int parse_rules(const char *const *fail_on, size_t n, tp_compare_rule *rules, char *err,
                       size_t errlen) {
  for (size_t i = 0; i < n; i++) {
    char e[256];
    if (tp_compare_parse_rule(fail_on[i], &rules[i], e, sizeof(e))) {
      tp_seterr(err, errlen, "--fail-on '%s': %s", fail_on[i], e);
      return TP_EINVAL;
    }
  }
  return 0;
}

/* A level an interruption cut short (its "partial" is true): "partial in
 * A: it ran 2.1 of 4.0 s" into buf, else nothing (false). */
static bool partial_note(json_t *lv, const char *which, char *buf, size_t len) {
  if (!json_is_true(json_object_get(lv, "partial"))) return false;
  double ran = 0, planned = 0;
  num(json_object_get(lv, "partial_ran_s"), &ran);
  if (num(json_object_get(lv, "partial_planned_s"), &planned) && planned > 0)
    snprintf(buf, len, "partial in %s: it ran %.1f of %.1f s", which, ran, planned);
  else
    snprintf(buf, len, "partial in %s: interrupted after %.1f s", which, ran);
  return true;
}

/* The point of B that matches la's point pa and is not used yet (marked
 * used), or NULL. */
static json_t *match_point(json_t *pts_b, size_t nb, bool *used_b, const tp_level_result *pa) {
  for (size_t j = 0; j < nb; j++) {
    tp_level_result pb;
    tp__cmp_level_point(json_array_get(pts_b, j), &pb);
    if (!used_b[j] && tp__cmp_same_point(pa, &pb)) {
      used_b[j] = true;
      return json_array_get(pts_b, j);
    }
  }
  return NULL;
}

/* The client's own figures (docs/metrics.md, "Fidelity") close each
 * level's table: a distribution as its p50, p99 and max. */
static const tp_stat_id fidelity_stats[] = {TP_STAT_P50, TP_STAT_P99, TP_STAT_MAX};

/* The table rows of one matched level: every compared metric, then the
 * client's own figures. */
static int compare_metrics(results *rs, const char *name, json_t *la, json_t *lb, bool use_ci, FILE *out) {
  size_t nm;
  const tp_metric *all = tp_metrics(&nm);
  for (unsigned flag = TP_MF_COMPARE, pass = 0; pass < 2; pass++, flag = TP_MF_FIDELITY)
    for (size_t k = 0; k < nm; k++) {
      if (!(all[k].flags & flag)) continue;
      const tp_stat_id *sts = pass ? fidelity_stats : table_stats;
      size_t nst = all[k].kind != TP_METRIC_DIST ? 1 : pass ? TP_ARRAY_LEN(fidelity_stats) : TP_ARRAY_LEN(table_stats);
      for (size_t q = 0; q < nst; q++) {
        result *r = push(rs);
        if (!r) return TP_ENOMEM;
        snprintf(r->level, sizeof(r->level), "%s", name);
        r->metric = &all[k];
        r->stat = all[k].kind == TP_METRIC_DIST ? sts[q] : TP_STAT_AVG;
        r->use_ci = use_ci;
        eval(r, la, lb);
        if (out) print_row(out, r);
      }
    }
  return 0;
}

/* The --fail-on checks of one matched level; counts failures in *nfail
 * and keeps the first one's message. */
static int check_rules(results *rs, const tp_compare_rule *rules, size_t n, const char *name, json_t *la,
                       json_t *lb, bool use_ci, size_t *nfail, char *first_fail, size_t first_len) {
  for (size_t k = 0; k < n; k++) {
    result *r = push(rs);
    if (!r) return TP_ENOMEM;
    snprintf(r->level, sizeof(r->level), "%s", name);
    r->metric = rules[k].metric;
    r->stat = rules[k].stat;
    r->rule = (int)k;
    r->use_ci = use_ci;
    eval(r, la, lb);
    if (!r->have_a && !r->have_b)
      r->skipped = true;
    else if (r->have_a && !r->have_b)
      r->failed = true; /* a figure that vanished could hide a regression */
    else if (r->have_a && r->have_b)
      r->failed = rules[k].direction > 0 ? r->change > rules[k].bound_pct : r->change < -rules[k].bound_pct;
    /* Beyond the bound but within the runs' noise: not a regression. */
    if (r->failed && r->use_ci && r->have_a && r->have_b && !tp_ci_apart(&r->ca, &r->cb)) {
      r->failed = false;
      r->noise = true;
    }
    if (r->failed && !(*nfail)++) rule_message(first_fail, first_len, &rules[k], r);
  }
  return 0;
}

static void print_rules(FILE *out, const tp_compare_rule *rules, const results *rs) {
  fprintf(out, "\nRules\n");
  for (size_t i = 0; i < rs->n; i++) {
    const result *r = &rs->v[i];
    if (r->rule < 0) continue;
    char msg[640];
    rule_message(msg, sizeof(msg), &rules[r->rule], r);
    fprintf(out, "  %-4s %s: %s\n",
            r->failed    ? "FAIL"
            : r->skipped ? "skip"
                         : "ok",
            rules[r->rule].text, msg);
  }
}

/* What both runs hold, compared level by level. */
typedef struct run_cmp {
  json_t *pts_a, *pts_b;
  size_t na, nb;
  bool *used_b;
  bool use_ci;
  size_t matched, nfail;
  size_t partial; /* matched levels an interruption cut short in A or B */
  char first_fail[640];
} run_cmp;

static int compare_levels(run_cmp *c, results *rs, const tp_compare_rule *rules, size_t n, FILE *out) {
  int rv = 0;
  for (size_t i = 0; i < c->na && !rv; i++) {
    json_t *la = json_array_get(c->pts_a, i);
    tp_level_result pa;
    tp__cmp_level_point(la, &pa);
    char name[128];
    tp__level_name(&pa, name, sizeof(name));
    json_t *lb = match_point(c->pts_b, c->nb, c->used_b, &pa);
    if (!lb) {
      if (out) print_level_head(out, name, ": only in A\n");
      continue;
    }
    c->matched++;
    /* A level an interruption cut short is compared all the same, and
     * flagged: its figures cover less than the other's. */
    char pa_note[96], pb_note[96], suffix[240] = "\n";
    bool pa_part = partial_note(la, "A", pa_note, sizeof(pa_note));
    bool pb_part = partial_note(lb, "B", pb_note, sizeof(pb_note));
    if (pa_part || pb_part) {
      snprintf(suffix, sizeof(suffix), " (%s%s%s)\n", pa_part ? pa_note : "", pa_part && pb_part ? "; " : "",
               pb_part ? pb_note : "");
      c->partial++;
    }
    if (out) {
      print_level_head(out, name, suffix);
      fprintf(out, "  %-34s %14s %14s %9s\n", "Metric", "A", "B", "Change");
    }
    rv = compare_metrics(rs, name, la, lb, c->use_ci, out);
    if (!rv)
      rv =
          check_rules(rs, rules, n, name, la, lb, c->use_ci, &c->nfail, c->first_fail, sizeof(c->first_fail));
  }
  for (size_t j = 0; j < c->nb && !rv && out; j++)
    if (!c->used_b[j]) {
      char name[128];
      level_name(json_array_get(c->pts_b, j), name, sizeof(name));
      print_level_head(out, name, ": only in B\n");
    }
  return rv;
}

int tp_compare_run(const char *json_a, const char *json_b, const char *const *fail_on, size_t n, FILE *out,
                   const char *junit_path, char *err, size_t errlen) {
  tp_compare_rule *rules = calloc(n ? n : 1, sizeof(*rules));
  if (!rules) return TP_ENOMEM;
  int rv = parse_rules(fail_on, n, rules, err, errlen);
  doc a = {0}, b = {0};
  if (!rv) rv = tp__cmp_load_doc(&a, json_a, err, errlen);
  if (!rv) rv = tp__cmp_load_doc(&b, json_b, err, errlen);
  results rs = {0};
  run_cmp c = {0};
  /* Both with repeated runs: points are compared by their intervals. */
  c.use_ci = !rv && a.repeats && b.repeats;
  c.pts_a = c.use_ci ? a.repeats : a.levels, c.pts_b = c.use_ci ? b.repeats : b.levels;
  c.na = rv ? 0 : json_array_size(c.pts_a), c.nb = rv ? 0 : json_array_size(c.pts_b);
  c.used_b = calloc(c.nb ? c.nb : 1, sizeof(*c.used_b));
  if (!rv && !c.used_b) rv = TP_ENOMEM;

  if (!rv && out) fprintf(out, "A: %s (%s)\nB: %s (%s)\n", json_a, a.desc, json_b, b.desc);
  if (c.use_ci && out)
    fprintf(out,
            "Both ran every level repeatedly: A and B are means over runs, and a change is worse only when "
            "the 95%% confidence intervals are apart (else: within noise)\n");
  if (!rv) rv = compare_levels(&c, &rs, rules, n, out);

  if (!rv && !c.matched) {
    char la[256], lb[256];
    level_list(la, sizeof(la), a.levels);
    level_list(lb, sizeof(lb), b.levels);
    tp_seterr(err, errlen, "%s and %s have no level in common (A: %s. B: %s)", json_a, json_b, la, lb);
    rv = TP_EINVAL;
  }

  if (!rv && out && c.partial)
    fprintf(out,
            "\nPartial: %zu of the compared levels were cut short by an interruption; their figures cover "
            "less time than a whole level's\n",
            c.partial);
  if (!rv && out && n) print_rules(out, rules, &rs);
  if (!rv && junit_path) rv = write_junit(junit_path, json_a, json_b, rules, &rs, err, errlen);
  size_t nfail = c.nfail;
  if (!rv && nfail) {
    tp_seterr(err, errlen, "%zu rule check%s failed; first: %s", nfail, nfail == 1 ? "" : "s", c.first_fail);
    if (out) fprintf(out, "\n%zu rule check%s failed\n", nfail, nfail == 1 ? "" : "s");
    rv = TP_COMPARE_FAILED;
  } else if (!rv && out && n) {
    fprintf(out, "\nAll rules held\n");
  }

  free(c.used_b);
  free(rs.v);
  json_decref(a.root);
  json_decref(b.root);
  free(rules);
  return rv;
}

/* ------------------------------------------------------------------------ */
/* The comparison page (--html): two or more runs                           */


/* The per-level summary files of GenAI-Perf and AIPerf (tp_export.h), both
 * written by walking the metric registry: a row with the tool's key is
 * exported, under that key and in the tool's unit, so adding a metric to
 * these files is giving its row the key.  The two tools lay their files
 * out alike; where they differ (labels, number format) is in the small
 * table of dialects below. */
#include "tp_export_internal.h"

#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/tp_metric.h"
#include "report/tp_report_fidelity.h"

/* How one tool writes its summary. */
typedef struct dialect {
  const char *(*key)(const tp_metric *m);
  const char *(*unit)(tp_unit u);
  bool lower_to;        /* "Time to First Token" (AIPerf), not "Time To First Token" */
  bool tokens_unitless; /* a row in tokens has no "(tokens)" (GenAI-Perf) */
  bool counts_unitless; /* a count has no unit in its label (AIPerf: "Request Count") */
  bool thousands;       /* distribution values as "1,234.50" (GenAI-Perf) */
  bool json_keeps_first_token; /* the JSON of a run without streaming has TTFT (GenAI-Perf) */
} dialect;

static const char *genai_key(const tp_metric *m) {
  return m->genai_key;
}
static const char *aiperf_key(const tp_metric *m) {
  return m->aiperf_key;
}

static const dialect dialects[] = {
    [TP_EXPORT_GENAI_PERF] = {genai_key, tp_unit_genai, false, true, false, true, true},
    [TP_EXPORT_AIPERF] = {aiperf_key, tp_unit_aiperf, true, false, true, false, false},
};

/* The statistics of a distribution: in the JSON in the order both tools'
 * statistics dicts hold them, in the CSV in their header's order. */
static const tp_stat_id json_order[] = {TP_STAT_AVG, TP_STAT_P1,  TP_STAT_P5,  TP_STAT_P10, TP_STAT_P25,
                                        TP_STAT_P50, TP_STAT_P75, TP_STAT_P90, TP_STAT_P95, TP_STAT_P99,
                                        TP_STAT_MIN, TP_STAT_MAX, TP_STAT_STD};
static const tp_stat_id csv_order[] = {TP_STAT_AVG, TP_STAT_MIN, TP_STAT_MAX, TP_STAT_P1,  TP_STAT_P5,
                                       TP_STAT_P10, TP_STAT_P25, TP_STAT_P50, TP_STAT_P75, TP_STAT_P90,
                                       TP_STAT_P95, TP_STAT_P99, TP_STAT_STD};
_Static_assert(sizeof(json_order) / sizeof(json_order[0]) == TP_STAT_COUNT, "every statistic once");
_Static_assert(sizeof(csv_order) / sizeof(csv_order[0]) == TP_STAT_COUNT, "every statistic once");

/* Whether row m goes into tool's JSON (json) or CSV for level lr.  Without
 * streaming the timings between tokens are left out.  GenAI-Perf's JSON
 * keeps every figure it has, and a request answered in one response still
 * gives it a time to first token (the request's latency): only its CSV
 * leaves that out too.  AIPerf has no first-token time without streaming. */
static bool exported(const dialect *d, const tp_metric *m, const tp_level_result *lr, bool streaming,
                     bool json) {
  if (!d->key(m)) return false;
  if (!streaming && (m->flags & TP_MF_STREAMING) &&
      !(json && d->json_keeps_first_token && !strcmp(d->key(m), "time_to_first_token")))
    return false;
  return tp_metric_available(m, lr);
}

/* The order of each tool's CSV rows, by its keys (a row not named comes
 * after, in the registry's order): GenAI-Perf's current exporter writes
 * its time metrics, then the per-user rate, then the lengths; AIPerf's
 * its metrics' display order. */
static const char *const genai_csv_rows[] = {"time_to_first_token",
                                             "time_to_second_token",
                                             "request_latency",
                                             "inter_token_latency",
                                             "output_token_throughput_per_user",
                                             "output_sequence_length",
                                             "input_sequence_length",
                                             "output_token_throughput",
                                             "request_throughput",
                                             "request_goodput",
                                             "request_count",
                                             NULL};
static const char *const aiperf_csv_rows[] = {"time_to_first_token",
                                              "request_latency",
                                              "output_sequence_length",
                                              "input_sequence_length",
                                              "time_to_second_token",
                                              "inter_token_latency",
                                              "output_token_throughput_per_user",
                                              "request_throughput",
                                              "output_token_throughput",
                                              NULL};

static size_t csv_rank(const char *const *order, const char *key) {
  size_t i = 0;
  for (; order[i]; i++)
    if (!strcmp(order[i], key)) return i;
  return i;
}

/* More than the registry's rows with a tool's key (tests check the count). */
#define TP__MAX_ROWS 64

/* The exported rows of tool in its order: rank by rank of order, the rows
 * of one rank (and those it does not name, last) in the registry's order.
 * rows holds room for TP__MAX_ROWS; returns how many. */
static size_t ordered_rows(const dialect *d, const char *const *order, const tp_level_result *lr,
                           bool streaming, bool json, const tp_metric **rows) {
  size_t nm, n = 0, ranks = 0;
  const tp_metric *all = tp_metrics(&nm);
  while (order[ranks]) ranks++;
  for (size_t r = 0; r <= ranks; r++)
    for (size_t k = 0; k < nm; k++)
      if (n < TP__MAX_ROWS && exported(d, &all[k], lr, streaming, json) &&
          csv_rank(order, d->key(&all[k])) == r)
        rows[n++] = &all[k];
  return n;
}

static json_t *jreal(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

/* {"unit": ..., "avg": ..., then a distribution's other statistics}. */
static json_t *metric_json(const dialect *d, const tp_metric *m, const tp_level_result *lr) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = json_object_set_new(o, "unit", json_string(d->unit(m->unit)));
  size_t n = m->kind == TP_METRIC_DIST ? TP_STAT_COUNT : 1;
  for (size_t i = 0; i < n && !bad; i++) {
    double v = NAN;
    tp_metric_value(m, lr, json_order[i], &v);
    bad = json_object_set_new(o, tp_stat_name(json_order[i]), jreal(v));
  }
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

json_t *tp__summary_json(const tp_level_result *lr, tp_export_tool tool, bool streaming) {
  const dialect *d = &dialects[tool];
  json_t *doc = json_object();
  if (!doc) return NULL;
  /* Both tools' JSON holds the metrics in AIPerf's display order. */
  const tp_metric *rows[TP__MAX_ROWS];
  size_t n = ordered_rows(d, aiperf_csv_rows, lr, streaming, true, rows);
  for (size_t k = 0; k < n; k++) {
    if (json_object_set_new(doc, d->key(rows[k]), metric_json(d, rows[k], lr))) {
      json_decref(doc);
      return NULL;
    }
  }
  /* tokperf's own key, only on a level an interruption cut short (the
   * tools have no such level; their readers skip keys they do not know). */
  if (lr->partial &&
      json_object_set_new(
          doc, "tokperf_partial",
          json_pack("{s:f,s:o,s:o}", "ran_s", lr->partial_ran_s, "planned_s",
                    lr->partial_planned_s > 0 ? json_real(lr->partial_planned_s) : json_null(),
                    "planned_requests",
                    lr->partial_planned_requests ? json_integer((json_int_t)lr->partial_planned_requests)
                                                 : json_null()))) {
    json_decref(doc);
    return NULL;
  }
  return doc;
}

/* The row's label: its key in title case, then " (unit)". */
static void label(const dialect *d, const tp_metric *m, char *buf, size_t len) {
  const char *key = d->key(m);
  size_t o = 0;
  bool start = true;
  for (const char *p = key; *p && o + 1 < len; p++) {
    if (*p == '_') {
      buf[o++] = ' ';
      start = true;
      continue;
    }
    bool word_to = start && d->lower_to && p[0] == 't' && p[1] == 'o' && (p[2] == '_' || !p[2]);
    buf[o++] = start && !word_to ? (char)toupper((unsigned char)*p) : *p;
    start = false;
  }
  buf[o] = 0;
  const char *unit = d->unit(m->unit);
  bool bare = !*unit || (d->tokens_unitless && m->unit == TP_UNIT_TOKENS) ||
              (d->counts_unitless && m->kind == TP_METRIC_COUNT);
  if (!bare && o < len) snprintf(buf + o, len - o, " (%s)", unit);
}

/* Python's f"{v:,.2f}": two decimals, a comma between thousands. */
static void fmt_thousands(char *buf, size_t len, double v) {
  char raw[64];
  snprintf(raw, sizeof(raw), "%.2f", v);
  const char *digits = raw[0] == '-' ? raw + 1 : raw;
  size_t int_len = strcspn(digits, ".");
  char tmp[96];
  size_t o = 0;
  if (raw[0] == '-') tmp[o++] = '-';
  for (size_t i = 0; i < int_len && o + 2 < sizeof(tmp); i++) {
    if (i && (int_len - i) % 3 == 0) tmp[o++] = ',';
    tmp[o++] = digits[i];
  }
  snprintf(tmp + o, sizeof(tmp) - o, "%s", digits + int_len);
  snprintf(buf, len, "%s", tmp);
}

/* One CSV field, quoted when it holds a comma or a quote, as Python's csv
 * writer (QUOTE_MINIMAL) does. */
static int csv_field(tp_buf *out, const char *s, bool first) {
  int rv = first ? 0 : tp_buf_append(out, ",", 1);
  if (rv) return rv;
  if (strchr(s, ',') || strchr(s, '"')) {
    rv = tp_buf_append(out, "\"", 1);
    for (const char *p = s; *p && !rv; p++)
      rv = *p == '"' ? tp_buf_append(out, "\"\"", 2) : tp_buf_append(out, p, 1);
    if (!rv) rv = tp_buf_append(out, "\"", 1);
    return rv;
  }
  return tp_buf_append_str(out, s);
}

static int csv_dist_row(tp_buf *out, const dialect *d, const tp_metric *m, const tp_level_result *lr) {
  char name[160];
  label(d, m, name, sizeof(name));
  int rv = csv_field(out, name, true);
  for (size_t i = 0; i < TP_STAT_COUNT && !rv; i++) {
    double v = NAN;
    tp_metric_value(m, lr, csv_order[i], &v);
    char b[64];
    if (d->thousands)
      fmt_thousands(b, sizeof(b), v);
    else
      snprintf(b, sizeof(b), "%.2f", v);
    rv = csv_field(out, b, false);
  }
  return rv ? rv : tp_buf_append(out, "\r\n", 2);
}

static int csv_value_row(tp_buf *out, const dialect *d, const tp_metric *m, const tp_level_result *lr) {
  char name[160], b[64];
  label(d, m, name, sizeof(name));
  double v = NAN;
  tp_metric_value(m, lr, TP_STAT_AVG, &v);
  snprintf(b, sizeof(b), "%.2f", v);
  int rv = csv_field(out, name, true);
  if (!rv) rv = csv_field(out, b, false);
  return rv ? rv : tp_buf_append(out, "\r\n", 2);
}

/* GenAI-Perf's current CSV: percentiles from p99 down, no std. */
static const tp_stat_id genai_csv_stats[] = {TP_STAT_AVG, TP_STAT_MIN, TP_STAT_MAX, TP_STAT_P99,
                                             TP_STAT_P95, TP_STAT_P90, TP_STAT_P75, TP_STAT_P50,
                                             TP_STAT_P25, TP_STAT_P10, TP_STAT_P5,  TP_STAT_P1};

/* GenAI-Perf's current rows: every unit in its label, the lengths'
 * "(tokens)" included, the level's rates "per sec", every number
 * "{:,.2f}" (its exporter formats the Value column as the statistics). */
static void genai_label(const tp_metric *m, char *buf, size_t len) {
  label(&dialects[TP_EXPORT_GENAI_PERF], m, buf, len);
  if (m->unit == TP_UNIT_TOKENS && m->kind == TP_METRIC_DIST) {
    size_t o = strlen(buf);
    snprintf(buf + o, len - o, " (tokens)");
  } else if (m->unit == TP_UNIT_TOKENS_PER_S || m->unit == TP_UNIT_REQUESTS_PER_S) {
    char *paren = strstr(buf, " (");
    if (paren) snprintf(paren, len - (size_t)(paren - buf), " (per sec)");
  }
}

static int genai_csv_row(tp_buf *out, const tp_metric *m, const tp_level_result *lr) {
  char name[160];
  genai_label(m, name, sizeof(name));
  int rv = csv_field(out, name, true);
  size_t n = m->kind == TP_METRIC_DIST ? sizeof(genai_csv_stats) / sizeof(genai_csv_stats[0]) : 1;
  for (size_t i = 0; i < n && !rv; i++) {
    double v = NAN;
    tp_metric_value(m, lr, m->kind == TP_METRIC_DIST ? genai_csv_stats[i] : TP_STAT_AVG, &v);
    char b[64];
    fmt_thousands(b, sizeof(b), v);
    rv = csv_field(out, b, false);
  }
  return rv ? rv : tp_buf_append(out, "\r\n", 2);
}

int tp__summary_csv(tp_buf *out, const tp_level_result *lr, tp_export_tool tool, bool streaming) {
  const dialect *d = &dialects[tool];
  bool genai = tool == TP_EXPORT_GENAI_PERF;
  const char *const *order = genai ? genai_csv_rows : aiperf_csv_rows;
  int rv = tp_buf_append_str(out, "Metric");
  if (genai)
    for (size_t i = 0; i < sizeof(genai_csv_stats) / sizeof(genai_csv_stats[0]) && !rv; i++)
      rv = tp_buf_printf(out, ",%s", tp_stat_name(genai_csv_stats[i]));
  else
    for (size_t i = 0; i < TP_STAT_COUNT && !rv; i++)
      rv = tp_buf_printf(out, ",%s", tp_stat_name(csv_order[i]));
  if (!rv) rv = tp_buf_append(out, "\r\n", 2);
  /* Two blocks, distributions then the level's values, each in the
   * tool's order. */
  const tp_metric *rows[TP__MAX_ROWS];
  size_t n = ordered_rows(d, order, lr, streaming, false, rows);
  for (int block = 0; block < 2 && !rv; block++) {
    if (block) rv = tp_buf_append_str(out, "\r\nMetric,Value\r\n");
    for (size_t k = 0; k < n && !rv; k++) {
      const tp_metric *m = rows[k];
      if ((m->kind == TP_METRIC_DIST) == (block == 1)) continue;
      if (genai)
        rv = genai_csv_row(out, m, lr);
      else
        rv = m->kind == TP_METRIC_DIST ? csv_dist_row(out, d, m, lr) : csv_value_row(out, d, m, lr);
    }
  }
  return rv;
}

char *tp_export_aiperf_json(const tp_level_result *lr, bool streaming) {
  json_t *doc = tp__summary_json(lr, TP_EXPORT_AIPERF, streaming);
  /* tokperf's own: the client's figures (AIPerf reads none of it). */
  if (doc && json_object_set_new(doc, "tokperf_fidelity", tp__fidelity_export_json(lr))) {
    json_decref(doc);
    doc = NULL;
  }
  char *text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) : NULL;
  json_decref(doc);
  return text;
}

int tp_export_aiperf_csv(tp_buf *out, const tp_level_result *lr, bool streaming) {
  return tp__summary_csv(out, lr, TP_EXPORT_AIPERF, streaming);
}

/* ------------------------------------------------------------------------ */
/* AIPerf's timeslice files (--slice-duration): per slice of the level's
 * time series, the registry rows below under AIPerf's keys, each computed
 * over the slice as docs/metrics.md "Time series" defines it. */

static const char *const slice_rows[] = {
    "ttft", "itl", "requests", "failed", "request_throughput", "output_token_throughput", NULL};

/* A level result holding one slice's figures and nothing else, so that
 * the registry reads them as it reads a level's. */
static void slice_level(tp_level_result *x, const tp_slice *s) {
  memset(x, 0, sizeof(*x));
  double w = s->end_s - s->start_s;
  x->ttft_ms = s->ttft_ms;
  x->itl_ms = s->itl_ms;
  x->requests = s->completed + s->failed;
  x->succeeded = s->completed;
  x->failed = s->failed;
  x->tokens_available = isfinite(s->output_tokens);
  x->request_throughput = w > 0 ? (double)s->completed / w : NAN;
  x->output_token_throughput = w > 0 ? s->output_tokens / w : NAN;
}

/* The human name of a row, AIPerf's header: its label without the unit. */
static void header_of(const tp_metric *m, char *buf, size_t len) {
  label(&dialects[TP_EXPORT_AIPERF], m, buf, len);
  char *paren = strstr(buf, " (");
  if (paren) *paren = 0;
}

char *tp_export_aiperf_timeslices_json(const tp_level_result *lr, bool streaming) {
  const dialect *d = &dialects[TP_EXPORT_AIPERF];
  tp_level_result *x = malloc(sizeof(*x));
  json_t *doc = json_object(), *arr = json_array(), *bounds = json_array();
  int bad = !x || !doc || !arr || !bounds;
  for (size_t i = 0; i < lr->n_slices && !bad; i++) {
    slice_level(x, &lr->slices[i]);
    json_t *o = json_object();
    bad |= !o || json_object_set_new(o, "timeslice_index", json_integer((json_int_t)i));
    for (size_t k = 0; slice_rows[k] && !bad; k++) {
      const tp_metric *m = tp_metric_find(slice_rows[k]);
      if (!m || !exported(d, m, x, streaming, true)) continue;
      bad |= json_object_set_new(o, d->key(m), metric_json(d, m, x));
    }
    bad |= json_array_append_new(arr, o);
    bad |= json_array_append_new(bounds, json_pack("[f,f]", lr->slices[i].start_s, lr->slices[i].end_s));
  }
  free(x);
  bad |= json_object_set_new(doc, "timeslices", arr);
  /* tokperf's own keys: each slice's [start, end) in seconds from the
   * level's start (AIPerf's readers skip keys they do not know). */
  bad |= json_object_set_new(doc, "tokperf_slice_s", json_real(lr->slice_s));
  bad |= json_object_set_new(doc, "tokperf_slice_bounds_s", bounds);
  char *text = bad ? NULL : json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
  json_decref(doc);
  return text;
}

int tp_export_aiperf_timeslices_csv(tp_buf *out, const tp_level_result *lr, bool streaming) {
  const dialect *d = &dialects[TP_EXPORT_AIPERF];
  tp_level_result *x = malloc(sizeof(*x));
  if (!x) return TP_ENOMEM;
  int rv = tp_buf_append_str(out, "Timeslice,Metric,Unit,Stat,Value\r\n");
  for (size_t i = 0; i < lr->n_slices && !rv; i++) {
    slice_level(x, &lr->slices[i]);
    for (size_t k = 0; slice_rows[k] && !rv; k++) {
      const tp_metric *m = tp_metric_find(slice_rows[k]);
      if (!m || !exported(d, m, x, streaming, false)) continue;
      char name[160];
      header_of(m, name, sizeof(name));
      size_t ns = m->kind == TP_METRIC_DIST ? TP_STAT_COUNT : 1;
      for (size_t s = 0; s < ns && !rv; s++) {
        tp_stat_id id = m->kind == TP_METRIC_DIST ? csv_order[s] : TP_STAT_AVG;
        double v = NAN;
        tp_metric_value(m, x, id, &v);
        char b[64];
        snprintf(b, sizeof(b), "%zu", i);
        rv = csv_field(out, b, true);
        if (!rv) rv = csv_field(out, name, false);
        if (!rv) rv = csv_field(out, d->unit(m->unit), false);
        if (!rv) rv = csv_field(out, tp_stat_name(id), false);
        snprintf(b, sizeof(b), "%.2f", v);
        if (!rv) rv = csv_field(out, b, false);
        if (!rv) rv = tp_buf_append(out, "\r\n", 2);
      }
    }
  }
  free(x);
  return rv;
}

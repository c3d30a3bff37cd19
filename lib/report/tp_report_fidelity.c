/* The client's own figures in every report (tp_report_fidelity.h). */
#include "report/tp_report_fidelity.h"

#include <ctype.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "metrics/tp_fidelity.h"
#include "report/tp_export.h"
#include "report/tp_html_svg.h"
#include "tp_report_internal.h"

/* ------------------------------------------------------------------------ */
/* Keys with a dot                                                          */

int tp__json_key_set(json_t *obj, const char *key, json_t *v) {
  const char *dot = strchr(key, '.');
  if (!dot) return json_object_set_new(obj, key, v) ? -1 : 0;
  char outer[64];
  if ((size_t)(dot - key) >= sizeof(outer)) {
    json_decref(v);
    return -1;
  }
  snprintf(outer, sizeof(outer), "%.*s", (int)(dot - key), key);
  json_t *sub = json_object_get(obj, outer);
  if (!json_is_object(sub)) {
    sub = json_object();
    if (!sub || json_object_set_new(obj, outer, sub)) {
      json_decref(v);
      return -1;
    }
  }
  return json_object_set_new(sub, dot + 1, v) ? -1 : 0;
}

json_t *tp__json_key_get(json_t *obj, const char *key) {
  const char *dot = strchr(key, '.');
  if (!dot) return json_object_get(obj, key);
  char outer[64];
  if ((size_t)(dot - key) >= sizeof(outer)) return NULL;
  snprintf(outer, sizeof(outer), "%.*s", (int)(dot - key), key);
  return json_object_get(json_object_get(obj, outer), dot + 1);
}

/* ------------------------------------------------------------------------ */
/* The figures, once                                                        */

static json_t *real_or_null(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

static json_t *u64(uint64_t v) {
  return json_integer(v > (uint64_t)INT64_MAX ? INT64_MAX : (json_int_t)v);
}

/* The members every fidelity object has besides the registry's figures:
 * the verdict in words, the send lag the verdict read (the level's
 * send_lag_ms, in the fidelity block's three figures), the counts behind
 * the merged share and the marks on the ITL, the span, the thresholds. */
static int add_words(json_t *o, const tp_level_result *lr) {
  const tp_fidelity *f = &lr->fidelity;
  int bad = json_object_set_new(o, "verdict", json_string(tp_fidelity_verdict_name(f->verdict)));
  bad |= json_object_set_new(o, "reason", f->reason[0] ? json_string(f->reason) : json_null());
  bad |= json_object_set_new(o, "send_lag_ms",
                             lr->send_lag_ms.n ? json_pack("{s:f,s:f,s:f}", "p50", lr->send_lag_ms.p50, "p99",
                                                           lr->send_lag_ms.p99, "max", lr->send_lag_ms.max)
                                               : json_null());
  bad |= json_object_set_new(o, "merged_text_responses", u64(f->merged_responses));
  bad |= json_object_set_new(o, "text_response_gaps", u64(f->response_gaps));
  /* The ITL is marked when it spans responses of one time. */
  bad |= json_object_set_new(o, "itl_merged", json_boolean(f->itl_merged_requests > 0));
  bad |= json_object_set_new(o, "itl_merged_requests", u64(f->itl_merged_requests));
  bad |= json_object_set_new(o, "itl_all_merged_requests", u64(f->itl_all_merged_requests));
  bad |= json_object_set_new(o, "itl_pooled_merged_gaps", u64(f->itl_pooled_merged_gaps));
  bad |= json_object_set_new(o, "reads", u64(f->reads));
  bad |= json_object_set_new(o, "wall_s", f->wall_s >= 0 ? real_or_null(f->wall_s) : json_null());
  bad |= json_object_set_new(o, "thresholds",
                             json_pack("{s:f,s:f,s:f,s:f}", "send_lag_p99_ms", TP_FIDELITY_SEND_LAG_P99_MS,
                                       "loop_lag_p99_ms", TP_FIDELITY_LOOP_LAG_P99_MS, "merged_pct",
                                       TP_FIDELITY_MERGED_PCT, "client_cpu_pct", TP_FIDELITY_CPU_PCT));
  return bad ? -1 : 0;
}

/* The registry's fidelity figures ("fidelity.KEY" JSON keys) into o. */
static int add_registry(json_t *o, const tp_level_result *lr) {
  size_t nm;
  const tp_metric *all = tp_metrics(&nm);
  int bad = 0;
  for (size_t k = 0; k < nm; k++)
    if (!strncmp(all[k].json_key, "fidelity.", 9))
      bad |= json_object_set_new(o, all[k].json_key + 9, tp__report_metric_json(&all[k], lr)) ? -1 : 0;
  return bad;
}

int tp__report_fidelity_level_json(json_t *level, const tp_level_result *lr) {
  /* The registry's walk made the object where its rows come; it moves to
   * the level's end, where every report puts the client's own figures. */
  json_t *o = json_object_get(level, "fidelity");
  if (o)
    json_incref(o);
  else
    o = json_object();
  if (!o) return -1;
  json_object_del(level, "fidelity");
  int bad = add_registry(o, lr);
  bad |= add_words(o, lr);
  bad |= json_object_set_new(level, "fidelity", o) ? -1 : 0;
  return bad;
}

json_t *tp__report_fidelity_json(const tp_report_input *in) {
  json_t *o = json_object(), *levels = json_array();
  uint64_t worst = TP_FIDELITY_OK;
  int bad = !o || !levels;
  for (size_t i = 0; !bad && i < in->n_levels; i++) {
    const tp_level_result *lr = &in->levels[i];
    char name[128];
    tp__level_name(lr, name, sizeof(name));
    if (lr->fidelity.verdict > worst) worst = lr->fidelity.verdict;
    bad |= json_array_append_new(
        levels,
        json_pack("{s:s,s:s,s:o}", "level", name, "verdict", tp_fidelity_verdict_name(lr->fidelity.verdict),
                  "reason", lr->fidelity.reason[0] ? json_string(lr->fidelity.reason) : json_null()));
  }
  if (!bad) bad |= json_object_set_new(o, "verdict", json_string(tp_fidelity_verdict_name(worst)));
  if (!bad) {
    bad |= json_object_set_new(o, "levels", levels);
    levels = NULL;
  }
  json_decref(levels);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

json_t *tp__fidelity_export_json(const tp_level_result *lr) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = add_registry(o, lr);
  bad |= add_words(o, lr);
  /* What the exports did with responses that share a time, in words a
   * reader of another tool's files can act on. */
  char note[400];
  snprintf(note, sizeof(note),
           "written by tokperf: the client's own figures (docs/metrics.md, Fidelity). %" PRIu64 " of %" PRIu64
           " text responses shared their arrival time with the one before them (one read took both): "
           "profile_export.json gives responses of one time as one response, as perf_analyzer records events "
           "read together; gaps of 0 between them are left out of the inter-chunk latencies",
           lr->fidelity.merged_responses, lr->fidelity.response_gaps);
  bad |= json_object_set_new(o, "note", json_string(note));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

int tp__fidelity_export_member(tp_buf *out, const tp_level_result *lr) {
  json_t *o = tp__fidelity_export_json(lr);
  char *text = o ? json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(15)) : NULL;
  json_decref(o);
  int rv = text ? tp_buf_append_str(out, ",\"tokperf_fidelity\":") : TP_ENOMEM;
  if (!rv) rv = tp_buf_append_str(out, text);
  free(text);
  return rv;
}

/* ------------------------------------------------------------------------ */
/* Text and HTML                                                            */

enum { FID_COLS = 10, FID_CELL = 64 };
static const char *const fid_head[FID_COLS] = {
    "Level",           "Send lag p50 ms", "Send lag p99 ms", "Send lag max ms", "Loop lag p99 ms",
    "Loop lag max ms", "Merged %",        "Client CPU %",    "Reads/s",         "Verdict"};

/* One level's cells, in fid_head's order. */
static void fid_cells(const tp_level_result *lr, char cells[FID_COLS][FID_CELL]) {
  const tp_fidelity *f = &lr->fidelity;
  tp__level_name(lr, cells[0], FID_CELL);
  const double nan = NAN;
  double v[] = {
      lr->send_lag_ms.n ? lr->send_lag_ms.p50 : nan,    lr->send_lag_ms.n ? lr->send_lag_ms.p99 : nan,
      lr->send_lag_ms.n ? lr->send_lag_ms.max : nan,    f->loop_lag_ms.n ? f->loop_lag_ms.p99 : nan,
      f->loop_lag_ms.n ? f->loop_lag_ms.max : nan,      f->merged_pct,
      f->client_cpu_pct >= 0 ? f->client_cpu_pct : nan, f->reads_per_s >= 0 ? f->reads_per_s : nan};
  static const int dec[] = {3, 3, 3, 3, 3, 2, 1, 0};
  for (size_t i = 0; i < sizeof(v) / sizeof(v[0]); i++)
    tp__report_fmt_num(cells[i + 1], FID_CELL, v[i], dec[i]);
  snprintf(cells[FID_COLS - 1], FID_CELL, "%s", tp_fidelity_verdict_name(f->verdict));
}

/* The marks on a level's ITL, in words ("" when none). */
static void itl_marks(const tp_level_result *lr, char *buf, size_t len) {
  const tp_fidelity *f = &lr->fidelity;
  buf[0] = 0;
  size_t o = 0;
  if (f->itl_merged_requests && o < len)
    o += (size_t)snprintf(buf + o, len - o,
                          "the ITL of %" PRIu64 " requests spans responses that shared an arrival time",
                          f->itl_merged_requests);
  if (f->itl_all_merged_requests && o < len)
    o += (size_t)snprintf(buf + o, len - o, "%s%" PRIu64 " requests had all their text at one time (no ITL)",
                          o ? "; " : "", f->itl_all_merged_requests);
  if (f->itl_pooled_merged_gaps && o < len)
    snprintf(buf + o, len - o, "%s%" PRIu64 " gaps of 0 ms left out of the pooled ITL", o ? "; " : "",
             f->itl_pooled_merged_gaps);
}

void tp__report_fidelity_text(FILE *out, const tp_report_input *in) {
  if (!in->n_levels) return;
  size_t n = in->n_levels;
  char(*c)[FID_COLS][FID_CELL] = calloc(n, sizeof(*c));
  const char **cells = calloc(n * FID_COLS, sizeof(*cells));
  if (!c || !cells) {
    free(c);
    free(cells);
    fprintf(out, "(fidelity table omitted: out of memory)\n");
    return;
  }
  for (size_t i = 0; i < n; i++) {
    fid_cells(&in->levels[i], c[i]);
    for (size_t k = 0; k < FID_COLS; k++) cells[i * FID_COLS + k] = c[i][k];
  }
  fputc('\n', out);
  tp__report_table(out, "Fidelity: the client's own figures", fid_head, cells, FID_COLS, n);
  free(cells);
  free(c);
  for (size_t i = 0; i < n; i++) {
    const tp_level_result *lr = &in->levels[i];
    char name[128], marks[400];
    tp__level_name(lr, name, sizeof(name));
    fprintf(out, "Fidelity, %s: %s%s%s\n", name, tp_fidelity_verdict_name(lr->fidelity.verdict),
            lr->fidelity.reason[0] ? ": " : "", lr->fidelity.reason);
    itl_marks(lr, marks, sizeof(marks));
    if (marks[0]) fprintf(out, "  ITL, %s: %s\n", name, marks);
  }
  fprintf(out,
          "(ok: every figure within its threshold; degraded: the figures named crossed theirs; "
          "client-bound: the client's own core was the bottleneck. docs/metrics.md, \"Fidelity\")\n");
}

int tp__html_fidelity(tp_buf *o, const tp_html_input *in) {
  if (!in->n_levels) return 0;
  int rv = tp_buf_append_str(
      o,
      "<section><h2>Fidelity: the client's own figures</h2>\n"
      "<p class=\"meta\">How far the numbers above can be trusted (docs/metrics.md, &quot;Fidelity&quot;): "
      "ok, every figure within its threshold; degraded, the figures named crossed theirs; client-bound, "
      "the client's own core was the bottleneck.</p>\n<table class=\"summary\"><thead><tr>");
  for (size_t k = 0; k < FID_COLS && !rv; k++) rv = tp_buf_printf(o, "<th>%s</th>", fid_head[k]);
  if (!rv) rv = tp_buf_append_str(o, "</tr></thead><tbody>\n");
  for (size_t i = 0; i < in->n_levels && !rv; i++) {
    char c[FID_COLS][FID_CELL];
    const tp_level_result *lr = &in->levels[i].lr;
    fid_cells(lr, c);
    rv = tp_buf_append_str(o, "<tr class=\"fid\"><td class=\"lvl\">");
    if (!rv) rv = tp__html_esc(o, c[0]);
    if (!rv) rv = tp_buf_append_str(o, "</td>");
    for (size_t k = 1; k + 1 < FID_COLS && !rv; k++)
      rv = strcmp(c[k], "n/a") ? tp_buf_printf(o, "<td>%s</td>", c[k])
                               : tp_buf_append_str(o, "<td class=\"na fid\">n/a</td>");
    if (!rv)
      rv = tp_buf_printf(o, "<td class=\"lvl%s\">%s</td></tr>\n", lr->fidelity.verdict ? " err" : "",
                         c[FID_COLS - 1]);
  }
  if (!rv) rv = tp_buf_append_str(o, "</tbody></table>\n");
  for (size_t i = 0; i < in->n_levels && !rv; i++) {
    const tp_level_result *lr = &in->levels[i].lr;
    char name[128], marks[400];
    tp__level_name(lr, name, sizeof(name));
    itl_marks(lr, marks, sizeof(marks));
    if (!lr->fidelity.reason[0] && !marks[0]) continue;
    rv = tp_buf_printf(o, "<p class=\"%s\">%c%s: ", lr->fidelity.verdict ? "err" : "meta",
                       toupper((unsigned char)name[0]), name + 1);
    if (!rv && lr->fidelity.reason[0]) {
      rv = tp_buf_printf(o, "%s: ", tp_fidelity_verdict_name(lr->fidelity.verdict));
      if (!rv) rv = tp__html_esc(o, lr->fidelity.reason);
      if (!rv && marks[0]) rv = tp_buf_append_str(o, ". ");
    }
    if (!rv && marks[0]) rv = tp__html_esc(o, marks);
    if (!rv) rv = tp_buf_append_str(o, "</p>\n");
  }
  if (!rv) rv = tp_buf_append_str(o, "</section>\n");
  return rv;
}

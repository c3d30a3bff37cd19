/* Capacity search and repeated runs in the reports (tp_report_search.h). */
#include "tp_report_search.h"

#include <math.h>
#include <string.h>

const tp_stat_id tp_repeat_stats[TP_REPEAT_STATS] = {TP_STAT_AVG, TP_STAT_P50, TP_STAT_P99};

static const char *load_name(tp_search_mode m) {
  return m == TP_SEARCH_REQUEST_RATE ? "request rate" : "concurrency";
}

static const char *load_unit(tp_search_mode m) {
  return m == TP_SEARCH_REQUEST_RATE ? "requests/s" : "requests in flight";
}

/* The SLO's metric name, "ttft.p99" of "ttft.p99 <= 300ms". */
static void slo_head(char *buf, size_t len, const char *expr) {
  while (*expr == ' ') expr++;
  size_t n = strcspn(expr, " <>=");
  snprintf(buf, len, "%.*s", (int)n, expr);
}

static void fmt_fig(char *buf, size_t len, double v) {
  if (isnan(v)) snprintf(buf, len, "n/a");
  else snprintf(buf, len, "%.4g", v);
}

void tp_report_search_text(FILE *out, const tp_search_summary *s) {
  fprintf(out, "\nCapacity search: the highest %s at which every SLO holds\n", load_name(s->mode));
  fprintf(out, "  SLOs:");
  for (size_t i = 0; i < s->n_slos; i++) fprintf(out, "%s %s", i ? "," : "", s->slos[i]);
  if (s->max_error_rate >= 0) fprintf(out, "%s error_rate <= %g", s->n_slos ? "," : "", s->max_error_rate);
  fprintf(out, "\n  Range %g to %g %s, precision ", s->min, s->max, load_unit(s->mode));
  if (s->rel_precision > 0) fprintf(out, "%g%% of the passing load", 100 * s->rel_precision);
  else fprintf(out, "%g %s", s->abs_precision, load_unit(s->mode));
  fprintf(out, ", at most %u probes\n", s->max_probes);
  fprintf(out, "  %-6s %12s  %-6s", "Probe", s->mode == TP_SEARCH_REQUEST_RATE ? "Rate (r/s)" : "Concurrency",
          "Result");
  char head[64];
  for (size_t i = 0; i < s->n_slos; i++) {
    slo_head(head, sizeof(head), s->slos[i]);
    fprintf(out, " %14s", head);
  }
  fprintf(out, " %9s %9s\n", "Requests", "Time (s)");
  uint64_t requests = 0;
  double secs = 0;
  for (size_t p = 0; p < s->n_probes; p++) {
    const tp_probe_row *r = &s->probes[p];
    fprintf(out, "  %-6zu %12g  %-6s", p + 1, r->load, r->passed ? "pass" : "FAIL");
    for (size_t i = 0; i < s->n_slos; i++) {
      char v[32];
      fmt_fig(v, sizeof(v), r->value[i]);
      fprintf(out, " %13s%s", v, r->held[i] ? " " : "!");
    }
    fprintf(out, " %9llu %9.2f\n", (unsigned long long)r->requests, r->seconds);
    requests += r->requests;
    secs += r->seconds;
  }
  fprintf(out, "  Outcome: %s\n", s->outcome);
  if (s->have_pass)
    fprintf(out, "  Boundary: %g %s (the highest load that met every SLO)\n", s->boundary, load_unit(s->mode));
  else
    fprintf(out, "  Boundary: none (no probe met every SLO)\n");
  if (s->have_pass) fprintf(out, "  Last passing probe: %g\n", s->boundary);
  if (s->have_fail) fprintf(out, "  First failing probe: %g\n", s->first_fail);
  fprintf(out, "  Cost: %zu probes, %llu requests, %.1f s\n", s->n_probes, (unsigned long long)requests, secs);
}

json_t *tp_report_search_json(const tp_search_summary *s) {
  json_t *o = json_object(), *slos = json_array(), *probes = json_array();
  if (!o || !slos || !probes) {
    json_decref(o);
    json_decref(slos);
    json_decref(probes);
    return NULL;
  }
  uint64_t requests = 0;
  double secs = 0;
  for (size_t i = 0; i < s->n_slos; i++) json_array_append_new(slos, json_string(s->slos[i]));
  for (size_t p = 0; p < s->n_probes; p++) {
    const tp_probe_row *r = &s->probes[p];
    json_t *po = json_object(), *fig = json_object();
    for (size_t i = 0; i < s->n_slos; i++) {
      json_t *f = json_object();
      json_object_set_new(f, "value", isnan(r->value[i]) ? json_null() : json_real(r->value[i]));
      json_object_set_new(f, "held", json_boolean(r->held[i]));
      json_object_set_new(fig, s->slos[i], f);
    }
    json_object_set_new(po, "load", json_real(r->load));
    json_object_set_new(po, "passed", json_boolean(r->passed));
    json_object_set_new(po, "level", json_integer((json_int_t)r->level));
    json_object_set_new(po, "slos", fig);
    json_object_set_new(po, "error_rate_held", json_boolean(r->error_rate_held));
    json_object_set_new(po, "requests", json_integer((json_int_t)r->requests));
    json_object_set_new(po, "duration_s", json_real(r->seconds));
    json_array_append_new(probes, po);
    requests += r->requests;
    secs += r->seconds;
  }
  json_object_set_new(o, "mode", json_string(s->mode == TP_SEARCH_REQUEST_RATE ? "request_rate" : "concurrency"));
  json_object_set_new(o, "slos", slos);
  json_object_set_new(o, "max_error_rate", s->max_error_rate >= 0 ? json_real(s->max_error_rate) : json_null());
  json_object_set_new(o, "min", json_real(s->min));
  json_object_set_new(o, "max", json_real(s->max));
  json_object_set_new(o, "precision_relative", s->rel_precision > 0 ? json_real(s->rel_precision) : json_null());
  json_object_set_new(o, "precision_absolute", s->abs_precision > 0 ? json_real(s->abs_precision) : json_null());
  json_object_set_new(o, "max_probes", json_integer(s->max_probes));
  json_object_set_new(o, "outcome", json_string(s->outcome));
  json_object_set_new(o, "boundary", s->have_pass ? json_real(s->boundary) : json_null());
  json_object_set_new(o, "last_passing", s->have_pass ? json_real(s->boundary) : json_null());
  json_object_set_new(o, "first_failing", s->have_fail ? json_real(s->first_fail) : json_null());
  json_object_set_new(o, "requests", json_integer((json_int_t)requests));
  json_object_set_new(o, "duration_s", json_real(secs));
  json_object_set_new(o, "probes", probes);
  return o;
}

/* ---- repeated runs ---------------------------------------------------------- */

void tp_repeat_ci(const tp_level_result *levels, size_t first, size_t n, const tp_metric *m, tp_stat_id st,
                  tp_ci *ci) {
  double v[1024];
  size_t k = 0;
  for (size_t i = 0; i < n && k < sizeof(v) / sizeof(v[0]); i++)
    if (tp_metric_value(m, &levels[first + i], st, &v[k])) k++;
  memset(ci, 0, sizeof(*ci));
  if (k) tp_ci95(ci, v, k);
}

static size_t runs_of(const tp_report_input *in) {
  return in->cfg && in->cfg->measure.num_profile_runs > 1 ? in->cfg->measure.num_profile_runs : 1;
}

static void point_name(const tp_level_result *lr, char *buf, size_t len) {
  if (lr->load_mode == TP_LOAD_RATE) snprintf(buf, len, "request rate %g/s", lr->request_rate);
  else if (lr->load_mode == TP_LOAD_SCHEDULE) snprintf(buf, len, "the schedule");
  else snprintf(buf, len, "concurrency %u", lr->concurrency);
  size_t o = strlen(buf);
  if (lr->input_tokens_mean) o += (size_t)snprintf(buf + o, len - o, ", input %u", lr->input_tokens_mean);
  if (lr->output_tokens_mean && o < len) snprintf(buf + o, len - o, ", output %u", lr->output_tokens_mean);
}

void tp_report_repeats_text(FILE *out, const tp_report_input *in) {
  size_t nr = runs_of(in);
  if (nr < 2) return;
  size_t nm;
  const tp_metric *ms = tp_metrics(&nm);
  fprintf(out, "\nRepeated runs: %zu per level; mean, standard deviation and 95%% confidence interval of the "
               "mean over the runs (Student's t)\n", nr);
  for (size_t g = 0; g < in->n_levels; g += nr) {
    size_t n = in->n_levels - g < nr ? in->n_levels - g : nr;
    char name[128];
    point_name(&in->levels[g], name, sizeof(name));
    fprintf(out, "  %s (%zu runs)\n", name, n);
    fprintf(out, "    %-34s %12s %12s %27s\n", "Metric", "Mean", "Std dev", "95% CI");
    for (size_t i = 0; i < nm; i++) {
      const tp_metric *m = &ms[i];
      if (!(m->flags & (TP_MF_SUMMARY | TP_MF_COMPARE))) continue;
      size_t ns = m->kind == TP_METRIC_DIST ? TP_REPEAT_STATS : 1;
      for (size_t k = 0; k < ns; k++) {
        tp_stat_id st = m->kind == TP_METRIC_DIST ? tp_repeat_stats[k] : TP_STAT_AVG;
        tp_ci ci;
        tp_repeat_ci(in->levels, g, n, m, st, &ci);
        if (!ci.n) continue;
        char label[64], iv[64];
        if (m->kind == TP_METRIC_DIST) snprintf(label, sizeof(label), "%s.%s (%s)", m->name, tp_stat_name(st),
                                                tp_unit_name(m->unit));
        else snprintf(label, sizeof(label), "%s (%s)", m->name, tp_unit_name(m->unit));
        if (ci.n > 1) snprintf(iv, sizeof(iv), "[%.4g, %.4g]", ci.lo, ci.hi);
        else snprintf(iv, sizeof(iv), "n/a (one run)");
        fprintf(out, "    %-34s %12.4g %12.4g %27s\n", label, ci.mean, ci.sd, iv);
      }
    }
  }
}

static json_t *ci_json(const tp_ci *ci) {
  json_t *o = json_object();
  json_object_set_new(o, "runs", json_integer((json_int_t)ci->n));
  json_object_set_new(o, "mean", isfinite(ci->mean) ? json_real(ci->mean) : json_null());
  json_object_set_new(o, "std", json_real(ci->sd));
  json_object_set_new(o, "ci95_low", ci->n > 1 ? json_real(ci->lo) : json_null());
  json_object_set_new(o, "ci95_high", ci->n > 1 ? json_real(ci->hi) : json_null());
  json_object_set_new(o, "ci95_half_width", ci->n > 1 ? json_real(ci->half) : json_null());
  return o;
}

json_t *tp_report_repeats_json(const tp_report_input *in) {
  size_t nr = runs_of(in);
  if (nr < 2) return NULL;
  size_t nm;
  const tp_metric *ms = tp_metrics(&nm);
  json_t *arr = json_array();
  for (size_t g = 0; arr && g < in->n_levels; g += nr) {
    size_t n = in->n_levels - g < nr ? in->n_levels - g : nr;
    const tp_level_result *lr = &in->levels[g];
    json_t *o = json_object(), *mo = json_object();
    json_object_set_new(o, "mode", json_string(lr->load_mode == TP_LOAD_RATE       ? "request_rate"
                                               : lr->load_mode == TP_LOAD_SCHEDULE ? "schedule"
                                                                                   : "concurrency"));
    json_object_set_new(o, "concurrency", json_integer(lr->concurrency));
    /* The point's keys as a level spells them, so compare matches both alike. */
    json_object_set_new(o, "request_rate_rps", lr->load_mode == TP_LOAD_RATE ? json_real(lr->request_rate)
                                                                             : json_null());
    json_object_set_new(o, "input_tokens_target", lr->input_tokens_mean ? json_integer(lr->input_tokens_mean)
                                                                        : json_null());
    json_object_set_new(o, "output_tokens_target", lr->output_tokens_mean ? json_integer(lr->output_tokens_mean)
                                                                          : json_null());
    json_object_set_new(o, "first_level", json_integer((json_int_t)g));
    json_object_set_new(o, "runs", json_integer((json_int_t)n));
    for (size_t i = 0; i < nm; i++) {
      const tp_metric *m = &ms[i];
      json_t *so = json_object();
      size_t ns = m->kind == TP_METRIC_DIST ? TP_REPEAT_STATS : 1;
      for (size_t k = 0; k < ns; k++) {
        tp_stat_id st = m->kind == TP_METRIC_DIST ? tp_repeat_stats[k] : TP_STAT_AVG;
        tp_ci ci;
        tp_repeat_ci(in->levels, g, n, m, st, &ci);
        if (!ci.n) continue;
        json_object_set_new(so, m->kind == TP_METRIC_DIST ? tp_stat_name(st) : "value", ci_json(&ci));
      }
      if (json_object_size(so)) json_object_set_new(mo, m->json_key, so);
      else json_decref(so);
    }
    json_object_set_new(o, "metrics", mo);
    json_array_append_new(arr, o);
  }
  return arr;
}

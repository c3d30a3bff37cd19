/* report.html: the SVG charts of one run. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/tp_stats.h"
#include "report/tp_html_svg.h"
#include "tokperf/tokperf.h"

/* ------------------------------------------------------------------------ */
/* Throughput against latency                                               */

enum { SER_P50, SER_P99, SER_COUNT };
static const char *const ser_name[SER_COUNT] = {"p50", "p99"};
static const char *const ser_class[SER_COUNT] = {"s-p50", "s-p99"};

const tp_stat *tp__html_pick_stat(const tp_level_result *lr, bool itl) {
  return itl ? &lr->itl_ms : &lr->ttft_ms;
}

static bool all_tokens(const tp_html_input *in) {
  bool any = false;
  for (size_t i = 0; i < in->n_levels; i++) {
    if (!in->levels[i].lr.tokens_available) return false;
    any = true;
  }
  return any;
}

static double tput_of(const tp_level_result *lr, bool tokens) {
  return tokens ? lr->output_token_throughput : lr->request_throughput;
}

int tp__html_chart_tput(tp_buf *o, const tp_html_input *in, bool itl) {
  const char *name = itl ? "ITL" : "TTFT";
  bool tokens = all_tokens(in);
  double xmax = 0, ymax = 0;
  size_t npts = 0;
  for (size_t i = 0; i < in->n_levels; i++) {
    const tp_level_result *lr = &in->levels[i].lr;
    const tp_stat *st = tp__html_pick_stat(lr, itl);
    if (!st->n) continue;
    npts++;
    xmax = fmax(xmax, tput_of(lr, tokens));
    ymax = fmax(ymax, st->p99);
  }
  double xs, ys;
  frame f;
  tp__html_init_frame(&f, CW, CH, 0, tp__html_nice_top(xmax, &xs), 0, tp__html_nice_top(ymax, &ys));
  char title[160];
  snprintf(title, sizeof(title), "%s p50 and p99 against %s across the sweep", name,
           tokens ? "output token throughput" : "request throughput");
  char ylabel[32];
  snprintf(ylabel, sizeof(ylabel), "%s (ms)", name);
  int rv = tp__html_svg_open(o, itl ? "tput-itl" : "tput-ttft", CW, CH, title);
  if (!rv)
    rv = tp__html_axes(o, &f, xs, ys, true, true,
                       tokens ? "output token throughput (tokens/s)" : "request throughput (requests/s)",
                       ylabel);
  if (!rv && !npts)
    rv = tp__html_no_data(o, &f, itl ? "no ITL values (needs streaming and a tokenizer)" : "no TTFT values");
  for (int s = 0; s < SER_COUNT && npts && !rv; s++) {
    /* The curve joins the levels in sweep order: the path the server takes
     * as the load rises. */
    rv = tp_buf_printf(o, "<path class=\"series %s\" d=\"", ser_class[s]);
    const char *cmd = "M";
    for (size_t i = 0; i < in->n_levels && !rv; i++) {
      const tp_level_result *lr = &in->levels[i].lr;
      const tp_stat *st = tp__html_pick_stat(lr, itl);
      if (!st->n) continue;
      double y = s == SER_P50 ? st->p50 : st->p99;
      rv = tp_buf_printf(o, "%s%.1f %.1f ", cmd, tp__html_fx(&f, tput_of(lr, tokens)), tp__html_fy(&f, y));
      cmd = "L";
    }
    if (!rv) rv = tp_buf_append_str(o, "\"/>");
    for (size_t i = 0; i < in->n_levels && !rv; i++) {
      const tp_level_result *lr = &in->levels[i].lr;
      const tp_stat *st = tp__html_pick_stat(lr, itl);
      if (!st->n) continue;
      double y = s == SER_P50 ? st->p50 : st->p99;
      double px = tp__html_fx(&f, tput_of(lr, tokens)), py = tp__html_fy(&f, y);
      char lname[128], tag[64];
      tp__level_name(lr, lname, sizeof(lname));
      tp__level_tag(lr, tag, sizeof(tag));
      rv =
          tp_buf_printf(o,
                        "<circle class=\"pt %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"4\"><title>%s: %s %s %.3f ms at "
                        "%.2f %s</title></circle><text class=\"pt-label\" x=\"%.1f\" y=\"%.1f\">%s</text>",
                        ser_class[s], px, py, lname, name, ser_name[s], y, tput_of(lr, tokens),
                        tokens ? "tokens/s" : "requests/s", px + 6, py - 6, tag);
    }
  }
  /* Legend: line swatches, so that rect counts stay the data's. */
  for (int s = 0; s < SER_COUNT && !rv; s++) {
    double lx = f.px0 + 12 + s * 90, ly = f.py1 + 10;
    rv = tp_buf_printf(o,
                       "<g class=\"legend\"><line class=\"series %s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                       "y2=\"%.1f\"/><text x=\"%.1f\" y=\"%.1f\">%s %s</text></g>",
                       ser_class[s], lx, ly, lx + 22, ly, lx + 28, ly + 4, name, ser_name[s]);
  }
  if (!rv) rv = tp_buf_append_str(o, "</svg>\n");
  return rv;
}

/* ------------------------------------------------------------------------ */
/* Box plots from the level statistics                                      */

int tp__html_chart_box(tp_buf *o, const tp_html_input *in, bool itl) {
  const char *name = itl ? "ITL" : "TTFT";
  double ymax = 0;
  size_t nbox = 0;
  for (size_t i = 0; i < in->n_levels; i++) {
    const tp_stat *st = tp__html_pick_stat(&in->levels[i].lr, itl);
    if (st->n) ymax = fmax(ymax, st->max), nbox++;
  }
  double ys;
  frame f;
  size_t nl = in->n_levels ? in->n_levels : 1;
  tp__html_init_frame(&f, CW, CH, 0, (double)nl, 0, tp__html_nice_top(ymax, &ys));
  char title[128], ylabel[32];
  snprintf(title, sizeof(title),
           "%s per level: box p25 to p75, line at p50, whiskers min to max, tick at p99", name);
  snprintf(ylabel, sizeof(ylabel), "%s (ms)", name);
  int rv = tp__html_svg_open(o, itl ? "box-itl" : "box-ttft", CW, CH, title);
  bool all_conc = true;
  for (size_t i = 0; i < in->n_levels; i++)
    all_conc &= in->levels[i].lr.load_mode == TP_LOAD_CONCURRENCY && !in->levels[i].lr.input_tokens_mean &&
                !in->levels[i].lr.output_tokens_mean;
  if (!rv) rv = tp__html_axes(o, &f, 1, ys, false, true, all_conc ? "concurrency" : "level", ylabel);
  if (!rv && !nbox) rv = tp__html_no_data(o, &f, "no values");
  double slot = (f.px1 - f.px0) / (double)nl, bw = fmin(slot * 0.5, 60);
  for (size_t i = 0; i < in->n_levels && !rv; i++) {
    const tp_level_result *lr = &in->levels[i].lr;
    const tp_stat *st = tp__html_pick_stat(lr, itl);
    double cx = f.px0 + slot * ((double)i + 0.5);
    char lname[128], tag[64];
    tp__level_name(lr, lname, sizeof(lname));
    tp__level_tag(lr, tag, sizeof(tag));
    rv = tp_buf_printf(o, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", cx,
                       f.py0 + 16, tag);
    if (rv || !st->n) continue;
    double y25 = tp__html_fy(&f, st->p25), y75 = tp__html_fy(&f, st->p75);
    rv = tp_buf_printf(o,
                       "<g class=\"boxplot\"><title>%s: min %.3f, p25 %.3f, p50 %.3f, p75 %.3f, p99 %.3f, "
                       "max %.3f ms (n=%zu)</title>"
                       "<line class=\"whisker\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                       "<line class=\"whisker\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                       "<rect class=\"box\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>"
                       "<line class=\"median\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                       "<line class=\"p99\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>",
                       lname, st->min, st->p25, st->p50, st->p75, st->p99, st->max, st->n, cx,
                       tp__html_fy(&f, st->min), cx, y25, cx, y75, cx, tp__html_fy(&f, st->max), cx - bw / 2,
                       y75, bw, fmax(y25 - y75, 1.0), cx - bw / 2, tp__html_fy(&f, st->p50), cx + bw / 2,
                       tp__html_fy(&f, st->p50), cx - bw / 4, tp__html_fy(&f, st->p99), cx + bw / 4,
                       tp__html_fy(&f, st->p99));
  }
  if (!rv) rv = tp_buf_append_str(o, "</svg>\n");
  return rv;
}

/* ------------------------------------------------------------------------ */
/* Histograms of the per-request values                                     */

enum { HW = 360, HH = 220, NBINS = 20 };

int tp__html_chart_hist(tp_buf *o, const tp_html_level *lv, size_t index, bool itl) {
  const double *v = itl ? lv->itl_ms : lv->ttft_ms;
  size_t n = itl ? lv->n_itl : lv->n_ttft;
  const char *name = itl ? "ITL" : "TTFT";
  const tp_stat *st = tp__html_pick_stat(&lv->lr, itl);
  if (!n || !st->n) return 0;
  /* The range is the level's own min and max, so the histogram and the
   * statistics describe the same values. */
  double lo = st->min, hi = st->max;
  if (!(hi > lo)) {
    double pad = lo != 0 ? fabs(lo) * 0.05 : 0.5;
    lo -= pad;
    hi += pad;
  }
  size_t bins[NBINS] = {0};
  size_t top = 0;
  for (size_t i = 0; i < n; i++) {
    long b = (long)floor((v[i] - lo) / (hi - lo) * NBINS);
    if (b < 0) b = 0;
    if (b >= NBINS) b = NBINS - 1;
    if (++bins[b] > top) top = bins[b];
  }
  double ys;
  frame f;
  tp__html_init_frame(&f, HW, HH, lo, hi, 0, tp__html_nice_top((double)top, &ys));
  if (ys < 1) ys = 1;
  char chart[48], title[256], xlabel[32];
  char lname[128];
  tp__level_name(&lv->lr, lname, sizeof(lname));
  snprintf(chart, sizeof(chart), "hist-%s-%zu", itl ? "itl" : "ttft", index);
  snprintf(title, sizeof(title), "%s histogram, %s (%zu requests)", name, lname, n);
  snprintf(xlabel, sizeof(xlabel), "%s (ms)", name);
  int rv = tp__html_svg_open(o, chart, HW, HH, title);
  if (!rv) rv = tp__html_axes(o, &f, tp__html_nice_step(hi - lo), ys, false, true, xlabel, "requests");
  /* Only the two ends are labelled on x: twenty bins leave no room for
   * more, and the ends are the level's min and max. */
  if (!rv)
    rv = tp_buf_printf(o,
                       "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"start\">%.3g</text>"
                       "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%.3g</text>",
                       f.px0, f.py0 + 16, lo, f.px1, f.py0 + 16, hi);
  double bwpx = (f.px1 - f.px0) / NBINS;
  for (int b = 0; b < NBINS && !rv; b++) {
    if (!bins[b]) continue;
    double x = f.px0 + bwpx * b, y = tp__html_fy(&f, (double)bins[b]);
    double b0 = lo + (hi - lo) * b / NBINS, b1 = lo + (hi - lo) * (b + 1) / NBINS;
    rv = tp_buf_printf(o,
                       "<rect class=\"bar\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">"
                       "<title>%.3f to %.3f ms: %zu</title></rect>",
                       x + 0.5, y, fmax(bwpx - 1, 0.5), f.py0 - y, b0, b1, bins[b]);
  }
  if (!rv) rv = tp_buf_append_str(o, "</svg>\n");
  return rv;
}

/* ------------------------------------------------------------------------ */
/* Timeline                                                                 */

int tp__html_chart_timeline(tp_buf *o, const tp_html_level *lv) {
  size_t n = lv->n_timeline;
  double xmax = 0;
  for (size_t i = 0; i < n; i++) {
    const tp_html_req *t = &lv->timeline[i];
    xmax = fmax(xmax, fmax(t->send_ms, fmax(t->first_ms, t->done_ms)));
  }
  double row = n ? fmin(14, fmax(2, 600.0 / (double)n)) : 14;
  int h = (int)(MT + MB + row * (double)(n ? n : 1) + 0.5);
  double xs;
  frame f;
  tp__html_init_frame(&f, CW, h, 0, tp__html_nice_top(xmax, &xs), 0, (double)(n ? n : 1));
  char title[256], lname[128];
  tp__level_name(&lv->lr, lname, sizeof(lname));
  snprintf(title, sizeof(title), "Requests of %s from send to done, first token marked (%zu of %zu)", lname,
           n, lv->n_measured);
  int rv = tp__html_svg_open(o, "timeline", CW, h, title);
  if (!rv)
    rv = tp__html_axes(o, &f, xs, 1, true, false, "time since the level's first send (ms)",
                       "request, in send order");
  /* Rows run top to bottom in send order; label the first and the last. */
  if (!rv && n)
    rv = tp_buf_printf(o,
                       "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">1</text>"
                       "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%zu</text>",
                       f.px0 - 6, f.py1 + fmin(row, 10), f.px0 - 6, f.py0, n);
  if (!rv && !n) rv = tp__html_no_data(o, &f, "no requests");
  for (size_t i = 0; i < n && !rv; i++) {
    const tp_html_req *t = &lv->timeline[i];
    /* A request that never finished runs to the right edge, in the failure
     * colour, so it is seen rather than dropped. */
    double end = t->done_ms >= 0 ? t->done_ms : f.x1;
    double x0 = tp__html_fx(&f, t->send_ms), x1 = tp__html_fx(&f, end);
    double y = f.py1 + row * (double)i;
    rv = tp_buf_printf(o,
                       "<rect class=\"req%s\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"><title>"
                       "request %" PRIu64 ": sent at %.3f ms",
                       t->ok ? "" : " failed", x0, y, fmax(x1 - x0, 0.5), fmax(row - 1, 1), t->seq,
                       t->send_ms);
    if (!rv && t->first_ms >= 0)
      rv = tp_buf_printf(o, ", first token after %.3f ms", t->first_ms - t->send_ms);
    if (!rv && t->done_ms >= 0) rv = tp_buf_printf(o, ", done after %.3f ms", t->done_ms - t->send_ms);
    if (!rv && !t->ok) rv = tp_buf_append_str(o, ", failed");
    if (!rv && t->label) {
      rv = tp_buf_append_str(o, "; prompt: ");
      if (!rv) rv = tp__html_esc(o, t->label);
    }
    if (!rv) rv = tp_buf_append_str(o, "</title></rect>");
    if (!rv && t->first_ms >= 0) {
      double px = tp__html_fx(&f, t->first_ms);
      rv = tp_buf_printf(o, "<line class=\"ft\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>", px, y, px,
                         y + fmax(row - 1, 1));
    }
  }
  if (!rv) rv = tp_buf_append_str(o, "</svg>\n");
  return rv;
}

/* ------------------------------------------------------------------------ */
/* Capacity search (docs/search.md)                                         */

/* The probes in the order run: the load of each (green: every SLO held,
 * red: one failed), the boundary as a line; the numbers in a table
 * beside it. */
int tp__html_chart_search(tp_buf *o, const tp_search_summary *s) {
  bool rate = s->mode == TP_SEARCH_REQUEST_RATE;
  const char *unit = rate ? "request rate (requests/s)" : "concurrency";
  double ymax = 0;
  for (size_t i = 0; i < s->n_probes; i++) ymax = fmax(ymax, s->probes[i].load);
  double xs, ys;
  frame f;
  tp__html_init_frame(&f, CW, CH, 0, (double)s->n_probes + 1, 0, tp__html_nice_top(ymax, &ys));
  xs = tp__html_nice_step((double)s->n_probes + 1);
  if (xs < 1) xs = 1;
  int rv = tp_buf_append_str(o, "<section><h2>Capacity search</h2>\n<p class=\"meta\">SLOs: ");
  for (size_t i = 0; i < s->n_slos && !rv; i++) {
    if (i) rv = tp_buf_append_str(o, ", ");
    if (!rv) rv = tp__html_esc(o, s->slos[i]);
  }
  if (!rv && s->max_error_rate >= 0)
    rv = tp_buf_printf(o, "%serror_rate &lt;= %g", s->n_slos ? ", " : "", s->max_error_rate);
  if (!rv) rv = tp_buf_append_str(o, ". Outcome: ");
  if (!rv) rv = tp__html_esc(o, s->outcome ? s->outcome : "");
  if (!rv && s->have_pass) rv = tp_buf_printf(o, ". Boundary: %g", s->boundary);
  if (!rv && s->have_fail) rv = tp_buf_printf(o, ", first failing probe: %g", s->first_fail);
  if (!rv) rv = tp_buf_append_str(o, ".</p>\n<div class=\"hists\"><figure>");
  if (!rv) rv = tp__html_svg_open(o, "search", CW, CH, "Load of each probe, in the order probed");
  if (!rv) rv = tp__html_axes(o, &f, xs, ys, true, true, "probe", unit);
  if (!rv && s->have_pass)
    rv = tp_buf_printf(o,
                       "<line class=\"p99\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"><title>boundary "
                       "%g</title></line>",
                       f.px0, tp__html_fy(&f, s->boundary), f.px1, tp__html_fy(&f, s->boundary), s->boundary);
  for (size_t i = 0; i < s->n_probes && !rv; i++) {
    const tp_probe_row *p = &s->probes[i];
    rv = tp_buf_printf(o,
                       "<circle class=\"probe %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\"><title>probe %zu: %g, "
                       "%s</title></circle>",
                       p->passed ? "pass" : "fail", tp__html_fx(&f, (double)(i + 1)),
                       tp__html_fy(&f, p->load), i + 1, p->load, p->passed ? "passed" : "failed");
  }
  if (!rv)
    rv = tp_buf_append_str(o,
                           "</svg><figcaption>Green: every SLO held; red: one failed. Line: the "
                           "boundary.</figcaption></figure>\n<table class=\"summary\"><tr><th>Probe</th>"
                           "<th>Load</th><th>Result</th>");
  for (size_t i = 0; i < s->n_slos && !rv; i++) {
    rv = tp_buf_append_str(o, "<th>");
    if (!rv) rv = tp__html_esc(o, s->slos[i]);
    if (!rv) rv = tp_buf_append_str(o, "</th>");
  }
  if (!rv) rv = tp_buf_append_str(o, "<th>Requests</th><th>Time (s)</th></tr>\n");
  for (size_t i = 0; i < s->n_probes && !rv; i++) {
    const tp_probe_row *p = &s->probes[i];
    rv = tp_buf_printf(o, "<tr><td>%zu</td><td>%g</td><td>%s</td>", i + 1, p->load,
                       p->passed ? "pass" : "fail");
    for (size_t k = 0; k < s->n_slos && !rv; k++)
      rv = isnan(p->value[k]) ? tp_buf_append_str(o, "<td class=\"na\">n/a</td>")
                              : tp_buf_printf(o, "<td>%.4g%s</td>", p->value[k], p->held[k] ? "" : " ✗");
    if (!rv) rv = tp_buf_printf(o, "<td>%" PRIu64 "</td><td>%.2f</td></tr>\n", p->requests, p->seconds);
  }
  if (!rv) rv = tp_buf_append_str(o, "</table></div>\n</section>\n");
  return rv;
}

/* ------------------------------------------------------------------------ */
/* Multi-turn sessions (docs/sessions.md)                                   */

/* Time to first token by turn index, one line per level: a server that
 * reuses the cached history answers later turns sooner although their
 * prompts grow.  The numbers are in a table beside it. */
int tp__html_chart_turns(tp_buf *o, const tp_html_level *lv) {
  const tp_level_result *lr = &lv->lr;
  double ymax = 0;
  for (size_t i = 0; i < lr->n_turns; i++) ymax = fmax(ymax, lr->turns[i].ttft_ms_p99);
  double xs, ys;
  frame f;
  tp__html_init_frame(&f, CW, CH, 0.5, (double)lr->n_turns + 0.5, 0,
                      tp__html_nice_top(ymax > 0 ? ymax : 1, &ys));
  xs = tp__html_nice_step((double)lr->n_turns);
  if (xs < 1) xs = 1;
  char name[128];
  tp__level_name(lr, name, sizeof(name));
  int rv = tp_buf_append_str(o, "<section><h2>Per turn, ");
  if (!rv) rv = tp__html_esc(o, name);
  if (!rv)
    rv = tp_buf_printf(o,
                       "</h2>\n<p class=\"meta\">%" PRIu64 " sessions measured, %" PRIu64
                       " completed, %.2f turns each; %.3f s per session on average (think time "
                       "included).</p>\n<div class=\"hists\"><figure>",
                       lr->sessions.sessions, lr->sessions.completed, lr->sessions.turns_avg,
                       lr->sessions.time_s_avg);
  if (!rv) rv = tp__html_svg_open(o, "turns", CW, CH, "Time to first token by turn");
  if (!rv) rv = tp__html_axes(o, &f, xs, ys, true, true, "turn", "time to first token (ms)");
  for (int which = 0; which < 2 && !rv; which++) {
    /* avg as a line of points, p99 as open circles */
    for (size_t i = 0; i < lr->n_turns && !rv; i++) {
      const tp_turn_stats *t = &lr->turns[i];
      double v = which ? t->ttft_ms_p99 : t->ttft_ms_avg;
      if (!(v >= 0)) continue;
      rv = tp_buf_printf(o,
                         "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%d\"><title>turn %u: TTFT %s "
                         "%.2f ms</title></circle>",
                         which ? "probe fail" : "probe pass", tp__html_fx(&f, (double)t->turn + 1),
                         tp__html_fy(&f, v), which ? 3 : 5, t->turn + 1, which ? "p99" : "avg", v);
    }
  }
  if (!rv)
    rv = tp_buf_append_str(o,
                           "</svg><figcaption>Filled: average; small: p99.</figcaption></figure>\n"
                           "<table class=\"summary\"><tr><th>Turn</th><th>Requests</th><th>TTFT avg (ms)</th>"
                           "<th>TTFT p99 (ms)</th><th>ITL avg (ms)</th><th>Latency avg (ms)</th>"
                           "<th>Input tokens</th><th>Cached tokens</th><th>Output tokens</th></tr>\n");
  for (size_t i = 0; i < lr->n_turns && !rv; i++) {
    const tp_turn_stats *t = &lr->turns[i];
    rv = tp_buf_printf(o, "<tr><td>%u</td><td>%" PRIu64 "</td>", t->turn + 1, t->requests);
    const double v[] = {t->ttft_ms_avg,      t->ttft_ms_p99,       t->itl_ms_avg,       t->latency_ms_avg,
                        t->input_tokens_avg, t->cached_tokens_avg, t->output_tokens_avg};
    for (size_t k = 0; k < sizeof(v) / sizeof(v[0]) && !rv; k++)
      rv = tp__html_cell_num(o, v[k] >= 0, v[k], k < 4 ? 2 : 1);
    if (!rv) rv = tp_buf_append_str(o, "</tr>\n");
  }
  if (!rv) rv = tp_buf_append_str(o, "</table></div>\n</section>\n");
  return rv;
}

/* report.html: one timeline per level (docs/metrics.md, "Time series"): the
 * client's TTFT p50/p99 and output throughput per slice above the server's
 * queue and KV-cache usage as scraped, panels stacked on one time axis so
 * that a rise in one lines up with the other. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/tp_html_svg.h"
#include "tokperf/tokperf.h"

enum { PH = 130, GAP = 34 };

/* The server figures each panel draws, in order of preference per line:
 * the first that the level scraped is drawn. */
static const char *const waiting_names[] = {"vllm_requests_waiting", "sglang_requests_waiting",
                                            "triton_pending_requests", "trtllm_waiting_requests", NULL};
static const char *const running_names[] = {"vllm_requests_running", "sglang_requests_running",
                                            "trtllm_active_requests", NULL};
static const char *const kv_names[] = {"vllm_kv_cache_usage", "vllm_gpu_cache_usage", "sglang_token_usage",
                                       "trtllm_kv_cache_usage", NULL};
static const char *const gpu_names[] = {"gpu_utilization", "dcgm_gr_engine_active", NULL};

static const tp_server_series *find(const tp_level_result *lr, const char *const *names) {
  for (size_t k = 0; names[k]; k++)
    for (size_t i = 0; i < lr->n_server_series; i++)
      if (strcmp(lr->server_series[i].name, names[k]) == 0 && lr->server_series[i].n)
        return &lr->server_series[i];
  return NULL;
}

/* One line of a panel; NaN values break it. */
typedef struct line {
  const char *cls, *label;
  size_t n;
  const double *xs, *ys; /* server samples */
  const tp_slice *sl;    /* or the slices, through get */
  double (*get)(const tp_slice *s);
} line;

static double ttft_p50(const tp_slice *s) {
  return s->ttft_ms.n ? s->ttft_ms.p50 : NAN;
}
static double ttft_p99(const tp_slice *s) {
  return s->ttft_ms.n ? s->ttft_ms.p99 : NAN;
}
static double out_tps(const tp_slice *s) {
  double w = s->end_s - s->start_s;
  return w > 0 ? s->output_tokens / w : NAN;
}

static void point(const line *l, size_t i, double *x, double *y) {
  if (l->get) {
    *x = (l->sl[i].start_s + l->sl[i].end_s) / 2; /* a slice's figure at its middle */
    *y = l->get(&l->sl[i]);
  } else {
    *x = l->xs[i];
    *y = l->ys[i];
  }
}

static int panel(tp_buf *o, double x1, double top, int h, const char *ylabel, const char *xlabel,
                 const line *ls, size_t nl, double ymax_fixed, const char *none) {
  double ymax = 0;
  size_t pts = 0;
  for (size_t k = 0; k < nl; k++)
    for (size_t i = 0; i < ls[k].n; i++) {
      double x, y;
      point(&ls[k], i, &x, &y);
      if (isfinite(y)) ymax = fmax(ymax, y), pts++;
    }
  double xs, ys;
  frame f;
  double top_y = ymax_fixed > 0 ? fmax(ymax_fixed, ymax) : tp__html_nice_top(ymax, &ys);
  if (ymax_fixed > 0) ys = tp__html_nice_step(top_y);
  tp__html_init_frame(&f, CW, h, 0, tp__html_nice_top(x1, &xs), 0, top_y);
  f.py1 = top;
  f.py0 = top + PH;
  int rv = tp__html_axes(o, &f, xs, ys, true, true, xlabel, ylabel);
  if (!rv && !pts) rv = tp__html_no_data(o, &f, none);
  for (size_t k = 0; k < nl && !rv && pts; k++) {
    const line *l = &ls[k];
    if (!l->n) continue;
    rv = tp_buf_printf(o, "<path class=\"series %s\" data-series=\"%s\" d=\"", l->cls, l->label);
    const char *cmd = "M";
    for (size_t i = 0; i < l->n && !rv; i++) {
      double x, y;
      point(l, i, &x, &y);
      if (!isfinite(y) || x < f.x0 || x > f.x1) {
        cmd = "M";
        continue;
      }
      rv = tp_buf_printf(o, "%s%.1f %.1f ", cmd, tp__html_fx(&f, x), tp__html_fy(&f, y));
      cmd = "L";
    }
    if (!rv) rv = tp_buf_append_str(o, "\"/>");
    double lx = f.px1 - 190 * (double)(nl - k), ly = f.py1 + 10;
    if (!rv)
      rv = tp_buf_printf(o,
                         "<g class=\"legend\"><line class=\"series %s\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" "
                         "y2=\"%.1f\"/><text x=\"%.1f\" y=\"%.1f\">",
                         l->cls, lx, ly, lx + 22, ly, lx + 28, ly + 4);
    if (!rv) rv = tp__html_esc(o, l->label);
    if (!rv) rv = tp_buf_append_str(o, "</text></g>");
  }
  return rv;
}

static line server_line(const tp_server_series *s, const char *cls) {
  line l = {cls, s ? s->name : "", s ? s->n : 0, s ? s->t_s : NULL, s ? s->v : NULL, NULL, NULL};
  return l;
}

int tp__html_chart_series(tp_buf *o, const tp_html_level *lv, size_t index) {
  const tp_level_result *lr = &lv->lr;
  const tp_server_series *wait = find(lr, waiting_names), *run = find(lr, running_names),
                         *kv = find(lr, kv_names), *gpu = find(lr, gpu_names);
  double x1 = 0;
  for (size_t i = 0; i < lr->n_slices; i++) x1 = fmax(x1, lr->slices[i].end_s);
  const tp_server_series *all[] = {wait, run, kv, gpu};
  for (size_t k = 0; k < 4; k++)
    for (size_t i = 0; all[k] && i < all[k]->n; i++) x1 = fmax(x1, all[k]->t_s[i]);
  int panels = 4 + (gpu != NULL);
  int h = MT + panels * (PH + GAP) - GAP + MB;
  char chart[32], title[256], lname[128];
  tp__level_name(lr, lname, sizeof(lname));
  snprintf(chart, sizeof(chart), "series-%zu", index);
  snprintf(title, sizeof(title),
           "%s over time: the client's TTFT and output throughput per %.3g s slice above the server's queue "
           "and KV-cache usage",
           lname, lr->slice_s);
  int rv = tp__html_svg_open(o, chart, CW, h, title);
  double top = MT;
  line l1[] = {{"s-p50", "TTFT p50", lr->n_slices, NULL, NULL, lr->slices, ttft_p50},
               {"s-p99", "TTFT p99", lr->n_slices, NULL, NULL, lr->slices, ttft_p99}};
  if (!rv) rv = panel(o, x1, top, h, "TTFT (ms)", "", l1, 2, 0, "no first token");
  top += PH + GAP;
  line l2[] = {{"s-tps", "output tokens/s", lr->n_slices, NULL, NULL, lr->slices, out_tps}};
  if (!rv) rv = panel(o, x1, top, h, "tokens/s", "", l2, 1, 0, "no token counts");
  top += PH + GAP;
  line l3[] = {server_line(wait, "s-wait"), server_line(run, "s-run")};
  bool last = panels == 4;
  const char *xl = "time since the level's start (s)";
  if (!rv) rv = panel(o, x1, top, h, "requests", "", l3, 2, 0, "no queue figure scraped (--metrics-url)");
  top += PH + GAP;
  line l4[] = {server_line(kv, "s-kv")};
  if (!rv)
    rv = panel(o, x1, top, h, "KV cache (fraction)", last ? xl : "", l4, 1, 1, "no KV-cache figure scraped");
  top += PH + GAP;
  if (gpu) {
    line l5[] = {server_line(gpu, "s-gpu")};
    if (!rv) rv = panel(o, x1, top, h, "GPU busy (fraction)", xl, l5, 1, 1, "");
    top += PH + GAP;
  }
  /* The moment the level was seen over-saturated (docs/metrics.md,
   * "Saturation"), across every panel. */
  if (!rv && lr->saturation.detected && lr->saturation.at_s >= 0) {
    double xs;
    frame f;
    tp__html_init_frame(&f, CW, h, 0, tp__html_nice_top(x1, &xs), 0, 1);
    double px = tp__html_fx(&f, lr->saturation.at_s);
    rv = tp_buf_printf(o,
                       "<line class=\"sat\" x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%.1f\"/>"
                       "<text class=\"tick\" x=\"%.1f\" y=\"%d\">over-saturated (%.1f s)</text>",
                       px, MT, px, top - GAP, px + 4, MT + PH - 6, lr->saturation.at_s);
  }
  if (!rv) rv = tp_buf_append_str(o, "</svg>\n");
  return rv;
}

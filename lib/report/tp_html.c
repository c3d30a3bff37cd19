/* report.html: one self-contained page with inline SVG charts.
 *
 * The page loads nothing: no script, no link, no url() in the CSS, no
 * image; fonts are the reader's own (a generic family).  Tooltips are SVG
 * <title> elements, which need no script.  Every string that comes from
 * outside (model name, target, prompts, error messages) goes through
 * tp_html_escape. */
#include "tp_html.h"

#include "report/tp_report.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>
#include <time.h>

#include "metrics/tp_stats.h"
#include "tokperf/tokperf.h"

#define LABEL_MAX_BYTES 96

/* ------------------------------------------------------------------------ */
/* Escaping                                                                 */

int tp_html_escape(tp_buf *out, const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  int rv = 0;
  size_t i = 0;
  while (i < len && rv == 0) {
    unsigned c = p[i];
    switch (c) {
      case '&':
        rv = tp_buf_append_str(out, "&amp;");
        i++;
        continue;
      case '<':
        rv = tp_buf_append_str(out, "&lt;");
        i++;
        continue;
      case '>':
        rv = tp_buf_append_str(out, "&gt;");
        i++;
        continue;
      case '"':
        rv = tp_buf_append_str(out, "&quot;");
        i++;
        continue;
      case '\'':
        rv = tp_buf_append_str(out, "&#39;");
        i++;
        continue;
      default: break;
    }
    /* Control characters are parse errors in HTML and invalid in the SVG
     * (XML) parts; a tooltip loses nothing by showing a space. */
    if (c < 0x20 || c == 0x7f) {
      rv = tp_buf_append(out, " ", 1);
      i++;
      continue;
    }
    size_t ul = tp__utf8_len(p + i, len - i);
    if (!ul) {
      rv = tp_buf_append(out, "\xEF\xBF\xBD", 3);
      i++;
      continue;
    }
    rv = tp_buf_append(out, p + i, ul);
    i += ul;
  }
  return rv;
}

static int esc(tp_buf *out, const char *s) {
  return s ? tp_html_escape(out, s, strlen(s)) : 0;
}

/* ------------------------------------------------------------------------ */
/* Per-level digest                                                         */

static bool sent_measured(const tp_export_request *q) {
  return !q->rec->warmup && q->rec->sent_ns != 0;
}

/* A prompt excerpt cut at a character boundary, so the label stays valid
 * UTF-8 (invalid bytes are replaced when escaped). */
static char *excerpt(const char *s, size_t len) {
  if (!s || !len) return NULL;
  size_t cut = 0;
  while (cut < len) {
    size_t ul = tp__utf8_len((const unsigned char *)s + cut, len - cut);
    if (!ul) ul = 1;
    if (cut + ul > LABEL_MAX_BYTES) break;
    cut += ul;
  }
  size_t extra = cut < len ? 3 : 0;
  char *e = malloc(cut + extra + 1);
  if (!e) return NULL;
  memcpy(e, s, cut);
  if (extra) memcpy(e + cut, "...", 3);
  e[cut + extra] = '\0';
  return e;
}

void tp_html_level_fini(tp_html_level *lv) {
  free(lv->ttft_ms);
  free(lv->itl_ms);
  for (size_t i = 0; i < lv->n_timeline; i++) free(lv->timeline[i].label);
  free(lv->timeline);
  memset(lv, 0, sizeof(*lv));
}

int tp_html_level_init(tp_html_level *lv, const tp_level_result *lr, const tp_export_request *reqs, size_t n,
                       size_t timeline_max) {
  memset(lv, 0, sizeof(*lv));
  lv->lr = *lr;
  if (!timeline_max) timeline_max = 500;
  lv->ttft_ms = malloc((n ? n : 1) * sizeof(double));
  lv->itl_ms = malloc((n ? n : 1) * sizeof(double));
  if (!lv->ttft_ms || !lv->itl_ms) goto nomem;

  /* Per-request values from tp_level_compute over a one-record slice: the
   * same code, and so the same definition and the same exclusions, as the
   * level's own statistics.  A record left out of a statistic there (a
   * failed request, one with fewer than two tokens for ITL) yields n == 0
   * here and is left out too. */
  tp_level_result one;
  for (size_t i = 0; i < n; i++) {
    if (!reqs[i].rec || reqs[i].rec->warmup) continue;
    if (tp_level_compute(&one, reqs[i].rec, 1)) goto nomem;
    if (one.ttft_ms.n) lv->ttft_ms[lv->n_ttft++] = one.ttft_ms.avg;
    if (one.itl_ms.n) lv->itl_ms[lv->n_itl++] = one.itl_ms.avg;
  }

  size_t *idx;
  size_t k = tp__order_by_send(reqs, n, sent_measured, &idx);
  if (k == SIZE_MAX) goto nomem;
  lv->n_measured = k;
  size_t m = k < timeline_max ? k : timeline_max;
  lv->timeline = calloc(m ? m : 1, sizeof(*lv->timeline));
  if (!lv->timeline) {
    free(idx);
    goto nomem;
  }
  uint64_t base = k ? reqs[idx[0]].rec->sent_ns : 0;
  for (size_t j = 0; j < m; j++) {
    const tp_export_request *q = &reqs[idx[j]];
    const tp_record *r = q->rec;
    tp_html_req *t = &lv->timeline[j];
    t->seq = r->seq;
    t->send_ms = (double)(r->sent_ns - base) / 1e6;
    t->first_ms =
        r->first_token_ns >= r->sent_ns && r->first_token_ns ? (double)(r->first_token_ns - base) / 1e6 : -1;
    t->done_ms = r->done_ns >= r->sent_ns && r->done_ns ? (double)(r->done_ns - base) / 1e6 : -1;
    t->ok = tp_record_ok(r);
    if (q->prompt && q->prompt_len && !(t->label = excerpt(q->prompt, q->prompt_len))) {
      lv->n_timeline = j;
      free(idx);
      goto nomem;
    }
    lv->n_timeline = j + 1;
  }
  free(idx);
  return 0;

nomem:
  tp_html_level_fini(lv);
  lv->lr = *lr;
  return TP_ENOMEM;
}

/* ------------------------------------------------------------------------ */
/* Chart plumbing                                                           */

enum { CW = 720, CH = 340, ML = 70, MR = 20, MT = 20, MB = 52 };

typedef struct frame {
  double x0, x1, y0, y1;     /* data range */
  double px0, px1, py0, py1; /* pixels: py0 is the bottom */
} frame;

static double fx(const frame *f, double x) {
  return f->px0 + (x - f->x0) / (f->x1 - f->x0) * (f->px1 - f->px0);
}
static double fy(const frame *f, double y) {
  return f->py0 - (y - f->y0) / (f->y1 - f->y0) * (f->py0 - f->py1);
}

/* A step of 1, 2 or 5 times a power of ten, giving about five ticks. */
static double nice_step(double range) {
  if (!(range > 0) || !isfinite(range)) return 1;
  double raw = range / 5;
  double mag = pow(10, floor(log10(raw)));
  double r = raw / mag;
  return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
}

static double nice_top(double v, double *step) {
  if (!(v > 0) || !isfinite(v)) v = 1;
  *step = nice_step(v);
  return ceil(v / *step - 1e-9) * *step;
}

static void init_frame(frame *f, int w, int h, double x0, double x1, double y0, double y1) {
  f->x0 = x0;
  f->x1 = x1 > x0 ? x1 : x0 + 1;
  f->y0 = y0;
  f->y1 = y1 > y0 ? y1 : y0 + 1;
  f->px0 = ML;
  f->px1 = w - MR;
  f->py0 = h - MB;
  f->py1 = MT;
}

static int svg_open(tp_buf *o, const char *chart, int w, int h, const char *title) {
  int rv = tp_buf_printf(o,
                         "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" data-chart=\"%s\" "
                         "viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\"><title>",
                         chart, w, h, w, h);
  if (!rv) rv = esc(o, title);
  if (!rv) rv = tp_buf_append_str(o, "</title>");
  return rv;
}

static int fmt_tick(tp_buf *o, double v) {
  if (fabs(v) >= 1e6 || (fabs(v) < 1e-3 && v != 0)) return tp_buf_printf(o, "%.3g", v);
  return tp_buf_printf(o, "%.6g", v);
}

/* Axes, grid and labels.  x_ticks / y_ticks false: the chart draws its own
 * labels on that axis (categories, request rows). */
static int axes(tp_buf *o, const frame *f, double xstep, double ystep, bool x_ticks, bool y_ticks,
                const char *xlabel, const char *ylabel) {
  int rv = 0;
  for (double y = f->y0; y_ticks && y <= f->y1 + ystep * 1e-6 && !rv; y += ystep) {
    double py = fy(f, y);
    rv = tp_buf_printf(o,
                       "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                       "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">",
                       f->px0, py, f->px1, py, f->px0 - 6, py + 4);
    if (!rv) rv = fmt_tick(o, y);
    if (!rv) rv = tp_buf_append_str(o, "</text>");
  }
  for (double x = f->x0; x_ticks && x <= f->x1 + xstep * 1e-6 && !rv; x += xstep) {
    double px = fx(f, x);
    rv = tp_buf_printf(o,
                       "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                       "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                       px, f->py0, px, f->py1, px, f->py0 + 16);
    if (!rv) rv = fmt_tick(o, x);
    if (!rv) rv = tp_buf_append_str(o, "</text>");
  }
  if (!rv)
    rv = tp_buf_printf(o,
                       "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                       "<line class=\"axis\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                       "<text class=\"label\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                       f->px0, f->py0, f->px1, f->py0, f->px0, f->py0, f->px0, f->py1, (f->px0 + f->px1) / 2,
                       f->py0 + 38);
  if (!rv) rv = esc(o, xlabel);
  if (!rv)
    rv = tp_buf_printf(o,
                       "</text><text class=\"label\" transform=\"translate(16 %.1f) rotate(-90)\" "
                       "text-anchor=\"middle\">",
                       (f->py0 + f->py1) / 2);
  if (!rv) rv = esc(o, ylabel);
  if (!rv) rv = tp_buf_append_str(o, "</text>");
  return rv;
}

static int no_data(tp_buf *o, const frame *f, const char *what) {
  int rv = tp_buf_printf(o, "<text class=\"nodata\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                         (f->px0 + f->px1) / 2, (f->py0 + f->py1) / 2);
  if (!rv) rv = esc(o, what);
  if (!rv) rv = tp_buf_append_str(o, "</text>");
  return rv;
}

/* ------------------------------------------------------------------------ */
/* Throughput against latency                                               */

enum { SER_P50, SER_P99, SER_COUNT };
static const char *const ser_name[SER_COUNT] = {"p50", "p99"};
static const char *const ser_class[SER_COUNT] = {"s-p50", "s-p99"};

static const tp_stat *pick_stat(const tp_level_result *lr, bool itl) {
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

static int chart_tput(tp_buf *o, const tp_html_input *in, bool itl) {
  const char *name = itl ? "ITL" : "TTFT";
  bool tokens = all_tokens(in);
  double xmax = 0, ymax = 0;
  size_t npts = 0;
  for (size_t i = 0; i < in->n_levels; i++) {
    const tp_level_result *lr = &in->levels[i].lr;
    const tp_stat *st = pick_stat(lr, itl);
    if (!st->n) continue;
    npts++;
    xmax = fmax(xmax, tput_of(lr, tokens));
    ymax = fmax(ymax, st->p99);
  }
  double xs, ys;
  frame f;
  init_frame(&f, CW, CH, 0, nice_top(xmax, &xs), 0, nice_top(ymax, &ys));
  char title[160];
  snprintf(title, sizeof(title), "%s p50 and p99 against %s across the sweep", name,
           tokens ? "output token throughput" : "request throughput");
  char ylabel[32];
  snprintf(ylabel, sizeof(ylabel), "%s (ms)", name);
  int rv = svg_open(o, itl ? "tput-itl" : "tput-ttft", CW, CH, title);
  if (!rv)
    rv = axes(o, &f, xs, ys, true, true,
              tokens ? "output token throughput (tokens/s)" : "request throughput (requests/s)", ylabel);
  if (!rv && !npts)
    rv = no_data(o, &f, itl ? "no ITL values (needs streaming and a tokenizer)" : "no TTFT values");
  for (int s = 0; s < SER_COUNT && npts && !rv; s++) {
    /* The curve joins the levels in sweep order: the path the server takes
     * as the load rises. */
    rv = tp_buf_printf(o, "<path class=\"series %s\" d=\"", ser_class[s]);
    const char *cmd = "M";
    for (size_t i = 0; i < in->n_levels && !rv; i++) {
      const tp_level_result *lr = &in->levels[i].lr;
      const tp_stat *st = pick_stat(lr, itl);
      if (!st->n) continue;
      double y = s == SER_P50 ? st->p50 : st->p99;
      rv = tp_buf_printf(o, "%s%.1f %.1f ", cmd, fx(&f, tput_of(lr, tokens)), fy(&f, y));
      cmd = "L";
    }
    if (!rv) rv = tp_buf_append_str(o, "\"/>");
    for (size_t i = 0; i < in->n_levels && !rv; i++) {
      const tp_level_result *lr = &in->levels[i].lr;
      const tp_stat *st = pick_stat(lr, itl);
      if (!st->n) continue;
      double y = s == SER_P50 ? st->p50 : st->p99;
      double px = fx(&f, tput_of(lr, tokens)), py = fy(&f, y);
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

static int chart_box(tp_buf *o, const tp_html_input *in, bool itl) {
  const char *name = itl ? "ITL" : "TTFT";
  double ymax = 0;
  size_t nbox = 0;
  for (size_t i = 0; i < in->n_levels; i++) {
    const tp_stat *st = pick_stat(&in->levels[i].lr, itl);
    if (st->n) ymax = fmax(ymax, st->max), nbox++;
  }
  double ys;
  frame f;
  size_t nl = in->n_levels ? in->n_levels : 1;
  init_frame(&f, CW, CH, 0, (double)nl, 0, nice_top(ymax, &ys));
  char title[128], ylabel[32];
  snprintf(title, sizeof(title),
           "%s per level: box p25 to p75, line at p50, whiskers min to max, tick at p99", name);
  snprintf(ylabel, sizeof(ylabel), "%s (ms)", name);
  int rv = svg_open(o, itl ? "box-itl" : "box-ttft", CW, CH, title);
  bool all_conc = true;
  for (size_t i = 0; i < in->n_levels; i++)
    all_conc &= in->levels[i].lr.load_mode == TP_LOAD_CONCURRENCY && !in->levels[i].lr.input_tokens_mean &&
                !in->levels[i].lr.output_tokens_mean;
  if (!rv) rv = axes(o, &f, 1, ys, false, true, all_conc ? "concurrency" : "level", ylabel);
  if (!rv && !nbox) rv = no_data(o, &f, "no values");
  double slot = (f.px1 - f.px0) / (double)nl, bw = fmin(slot * 0.5, 60);
  for (size_t i = 0; i < in->n_levels && !rv; i++) {
    const tp_level_result *lr = &in->levels[i].lr;
    const tp_stat *st = pick_stat(lr, itl);
    double cx = f.px0 + slot * ((double)i + 0.5);
    char lname[128], tag[64];
    tp__level_name(lr, lname, sizeof(lname));
    tp__level_tag(lr, tag, sizeof(tag));
    rv = tp_buf_printf(o, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", cx,
                       f.py0 + 16, tag);
    if (rv || !st->n) continue;
    double y25 = fy(&f, st->p25), y75 = fy(&f, st->p75);
    rv = tp_buf_printf(o,
                       "<g class=\"boxplot\"><title>%s: min %.3f, p25 %.3f, p50 %.3f, p75 %.3f, p99 %.3f, "
                       "max %.3f ms (n=%zu)</title>"
                       "<line class=\"whisker\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                       "<line class=\"whisker\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                       "<rect class=\"box\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>"
                       "<line class=\"median\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                       "<line class=\"p99\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/></g>",
                       lname, st->min, st->p25, st->p50, st->p75, st->p99, st->max, st->n, cx,
                       fy(&f, st->min), cx, y25, cx, y75, cx, fy(&f, st->max), cx - bw / 2, y75, bw,
                       fmax(y25 - y75, 1.0), cx - bw / 2, fy(&f, st->p50), cx + bw / 2, fy(&f, st->p50),
                       cx - bw / 4, fy(&f, st->p99), cx + bw / 4, fy(&f, st->p99));
  }
  if (!rv) rv = tp_buf_append_str(o, "</svg>\n");
  return rv;
}

/* ------------------------------------------------------------------------ */
/* Histograms of the per-request values                                     */

enum { HW = 360, HH = 220, NBINS = 20 };

static int chart_hist(tp_buf *o, const tp_html_level *lv, size_t index, bool itl) {
  const double *v = itl ? lv->itl_ms : lv->ttft_ms;
  size_t n = itl ? lv->n_itl : lv->n_ttft;
  const char *name = itl ? "ITL" : "TTFT";
  const tp_stat *st = pick_stat(&lv->lr, itl);
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
  init_frame(&f, HW, HH, lo, hi, 0, nice_top((double)top, &ys));
  if (ys < 1) ys = 1;
  char chart[48], title[256], xlabel[32];
  char lname[128];
  tp__level_name(&lv->lr, lname, sizeof(lname));
  snprintf(chart, sizeof(chart), "hist-%s-%zu", itl ? "itl" : "ttft", index);
  snprintf(title, sizeof(title), "%s histogram, %s (%zu requests)", name, lname, n);
  snprintf(xlabel, sizeof(xlabel), "%s (ms)", name);
  int rv = svg_open(o, chart, HW, HH, title);
  if (!rv) rv = axes(o, &f, nice_step(hi - lo), ys, false, true, xlabel, "requests");
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
    double x = f.px0 + bwpx * b, y = fy(&f, (double)bins[b]);
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

static int chart_timeline(tp_buf *o, const tp_html_level *lv) {
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
  init_frame(&f, CW, h, 0, nice_top(xmax, &xs), 0, (double)(n ? n : 1));
  char title[256], lname[128];
  tp__level_name(&lv->lr, lname, sizeof(lname));
  snprintf(title, sizeof(title), "Requests of %s from send to done, first token marked (%zu of %zu)", lname,
           n, lv->n_measured);
  int rv = svg_open(o, "timeline", CW, h, title);
  if (!rv)
    rv = axes(o, &f, xs, 1, true, false, "time since the level's first send (ms)", "request, in send order");
  /* Rows run top to bottom in send order; label the first and the last. */
  if (!rv && n)
    rv = tp_buf_printf(o,
                       "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">1</text>"
                       "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%zu</text>",
                       f.px0 - 6, f.py1 + fmin(row, 10), f.px0 - 6, f.py0, n);
  if (!rv && !n) rv = no_data(o, &f, "no requests");
  for (size_t i = 0; i < n && !rv; i++) {
    const tp_html_req *t = &lv->timeline[i];
    /* A request that never finished runs to the right edge, in the failure
     * colour, so it is seen rather than dropped. */
    double end = t->done_ms >= 0 ? t->done_ms : f.x1;
    double x0 = fx(&f, t->send_ms), x1 = fx(&f, end);
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
      if (!rv) rv = esc(o, t->label);
    }
    if (!rv) rv = tp_buf_append_str(o, "</title></rect>");
    if (!rv && t->first_ms >= 0) {
      double px = fx(&f, t->first_ms);
      rv = tp_buf_printf(o, "<line class=\"ft\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\"/>", px, y, px,
                         y + fmax(row - 1, 1));
    }
  }
  if (!rv) rv = tp_buf_append_str(o, "</svg>\n");
  return rv;
}

/* ------------------------------------------------------------------------ */
/* Table and page                                                           */

static int cell_num(tp_buf *o, bool avail, double v, int decimals) {
  if (!avail || !isfinite(v)) return tp_buf_append_str(o, "<td class=\"na\">n/a</td>");
  return tp_buf_printf(o, "<td>%.*f</td>", decimals, v);
}

static int summary_table(tp_buf *o, const tp_html_input *in) {
  int rv =
      tp_buf_append_str(o,
                        "<table class=\"summary\"><thead><tr><th>Level</th><th>Requests</th><th>Failed</th>"
                        "<th>Request/s</th><th>Output tok/s</th><th>Input tok/s</th><th>TTFT avg ms</th>"
                        "<th>TTFT p50 ms</th><th>TTFT p99 ms</th><th>ITL avg ms</th><th>ITL p50 ms</th>"
                        "<th>ITL p99 ms</th><th>Latency avg ms</th><th>Latency p99 ms</th>");
  if (!rv && in->accuracy) rv = tp_buf_append_str(o, "<th>Exact match %</th><th>ROUGE-L F1</th>");
  if (!rv) rv = tp_buf_append_str(o, "</tr></thead><tbody>\n");
  for (size_t i = 0; i < in->n_levels && !rv; i++) {
    const tp_level_result *lr = &in->levels[i].lr;
    char lname[128];
    tp__level_name(lr, lname, sizeof(lname));
    rv = tp_buf_printf(o, "<tr><td class=\"lvl\">%s</td><td>%" PRIu64 "</td><td>%" PRIu64 "</td>", lname,
                       lr->requests, lr->failed);
    if (!rv) rv = cell_num(o, true, lr->request_throughput, 2);
    if (!rv) rv = cell_num(o, lr->tokens_available, lr->output_token_throughput, 2);
    if (!rv) rv = cell_num(o, lr->input_tokens.n > 0, lr->input_token_throughput, 2);
    if (!rv) rv = cell_num(o, lr->ttft_ms.n, lr->ttft_ms.avg, 2);
    if (!rv) rv = cell_num(o, lr->ttft_ms.n, lr->ttft_ms.p50, 2);
    if (!rv) rv = cell_num(o, lr->ttft_ms.n, lr->ttft_ms.p99, 2);
    if (!rv) rv = cell_num(o, lr->itl_ms.n, lr->itl_ms.avg, 2);
    if (!rv) rv = cell_num(o, lr->itl_ms.n, lr->itl_ms.p50, 2);
    if (!rv) rv = cell_num(o, lr->itl_ms.n, lr->itl_ms.p99, 2);
    if (!rv) rv = cell_num(o, lr->latency_ms.n, lr->latency_ms.avg, 2);
    if (!rv) rv = cell_num(o, lr->latency_ms.n, lr->latency_ms.p99, 2);
    if (!rv && in->accuracy) {
      const tp_accuracy *a = &in->accuracy[i];
      rv = cell_num(o, a->scored, a->exact_match_rate * 100, 1);
      if (!rv) rv = cell_num(o, a->scored, a->rouge_l_f1, 3);
    }
    if (!rv) rv = tp_buf_append_str(o, "</tr>\n");
  }
  if (!rv) rv = tp_buf_append_str(o, "</tbody></table>\n");
  for (size_t i = 0; i < in->n_levels && !rv; i++) {
    const tp_level_result *lr = &in->levels[i].lr;
    if (!lr->first_error[0]) continue;
    char lname[128];
    tp__level_name(lr, lname, sizeof(lname));
    rv = tp_buf_printf(o, "<p class=\"err\">%c%s, sample error: ", toupper((unsigned char)lname[0]),
                       lname + 1);
    if (!rv) rv = esc(o, lr->first_error);
    if (!rv) rv = tp_buf_append_str(o, "</p>\n");
  }
  return rv;
}

/* A distributed run (docs/scale-out.md): per level, who measured it, how
 * each rank's clock stood against rank 0's, and who failed. */
static int ranks_section(tp_buf *o, const tp_html_input *in) {
  int rv = 0;
  bool any = false;
  for (size_t i = 0; i < in->n_levels; i++) any |= in->levels[i].lr.ranks > 0;
  if (!any) return 0;
  rv = tp_buf_append_str(o,
                         "<section><h2>Ranks</h2>\n<p class=\"meta\">Each rank's clock offset from rank 0 was "
                         "measured before the level (shortest ping-pong round trip over MPI, the true offset "
                         "within &#177; half of it); the figures above come from the union of the reporting "
                         "ranks' records on rank 0's time line.</p>\n");
  for (size_t i = 0; i < in->n_levels && !rv; i++) {
    const tp_level_result *lr = &in->levels[i].lr;
    if (!lr->ranks) continue;
    char lname[128];
    tp__level_name(lr, lname, sizeof(lname));
    rv = tp_buf_printf(o,
                       "<h3>%c%s: %" PRIu32 " of %" PRIu32 " ranks reporting%s</h3>\n"
                       "<table class=\"summary\"><thead><tr><th>Rank</th><th>Host</th><th>Concurrency</th>"
                       "<th>Requests</th><th>Max in flight</th><th>Clock offset &#181;s</th>"
                       "<th>&#177; &#181;s</th><th>Status</th></tr></thead><tbody>\n",
                       toupper((unsigned char)lname[0]), lname + 1, lr->ranks_reporting, lr->ranks,
                       lr->incomplete ? " (incomplete)" : "");
    for (uint32_t k = 0; lr->rank_info && k < lr->ranks && !rv; k++) {
      const tp_rank_info *x = &lr->rank_info[k];
      rv = tp_buf_printf(o, "<tr><td>%" PRIu32 "</td><td class=\"lvl\">", x->rank);
      if (!rv) rv = esc(o, x->host);
      if (!rv)
        rv = tp_buf_printf(o, "</td><td>%" PRIu32 "</td><td>%" PRIu64 "</td><td>%" PRIu32 "</td>", x->concurrency,
                           x->requests, x->max_in_flight);
      if (!rv) rv = tp_buf_printf(o, "<td>%.1f</td><td>%.1f</td>", x->clock_offset_us, x->clock_uncertainty_us);
      if (!rv) rv = tp_buf_append_str(o, x->ok ? "<td class=\"lvl\">ok" : "<td class=\"lvl err\">failed: ");
      if (!rv && !x->ok) rv = esc(o, x->failure);
      if (!rv) rv = tp_buf_append_str(o, "</td></tr>\n");
    }
    if (!rv) rv = tp_buf_append_str(o, "</tbody></table>\n");
  }
  if (!rv) rv = tp_buf_append_str(o, "</section>\n");
  return rv;
}

static const char css[] =
    "body{font-family:system-ui,-apple-system,'Segoe UI',sans-serif;margin:24px auto;max-width:1000px;"
    "color:#222;background:#fff;padding:0 16px}"
    "h1{font-size:1.6em;margin-bottom:4px}h2{font-size:1.25em;border-bottom:1px solid "
    "#ccc;padding-bottom:4px;"
    "margin-top:32px}h3{font-size:1.05em;margin:16px 0 4px}"
    ".meta{color:#555;margin:2px 0}figure{margin:12px 0}figcaption{color:#555;font-size:.9em}"
    "svg.chart{max-width:100%;height:auto;background:#fff}"
    ".grid{stroke:#e6e6e6;stroke-width:1}.axis{stroke:#444;stroke-width:1}"
    ".tick{font-size:11px;fill:#444}.label{font-size:12px;fill:#222}.nodata{font-size:13px;fill:#888}"
    ".legend text{font-size:12px;fill:#222}.pt-label{font-size:10px;fill:#333}"
    "path.series{fill:none;stroke-width:2}.s-p50{stroke:#1f77b4;fill:#1f77b4}"
    ".s-p99{stroke:#d62728;fill:#d62728}path.s-p99,.legend line.s-p99{stroke-dasharray:6 3}.legend "
    "line{stroke-width:3}"
    ".box{fill:#9ecae1;stroke:#3182bd}.whisker{stroke:#3182bd}.median{stroke:#08306b;stroke-width:2}"
    ".p99{stroke:#d62728;stroke-width:2}.bar{fill:#6baed6}"
    ".req{fill:#9ecae1}.req.failed{fill:#fd8d3c}.ft{stroke:#08306b;stroke-width:1.5}"
    ".hists{display:flex;flex-wrap:wrap;gap:12px}.hists figure{margin:4px 0}"
    "table.summary{border-collapse:collapse;font-size:.85em;margin-top:8px}"
    "table.summary th,table.summary td{border:1px solid #ccc;padding:3px 6px;text-align:right}"
    "table.summary th{background:#f2f2f2}table.summary "
    "td.lvl{text-align:left}td.na{color:#999}.err{color:#a33;font-size:.9em}"
    ".probe.pass{fill:#2ca02c}.probe.fail{fill:#d62728}"
    "@media print{body{margin:0;max-width:none;font-size:10pt}figure,table{break-inside:avoid}"
    "h2{break-after:avoid}}";

static const char *backend_name(tp_backend b) {
  return b == TP_BACKEND_VLLM ? "vllm" : b == TP_BACKEND_TENSORRTLLM ? "tensorrtllm" : "unknown";
}

static int header(tp_buf *o, const tp_html_input *in) {
  const char *title = in->title ? in->title : "tokperf report";
  int rv = tp_buf_append_str(o,
                             "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                             "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                             "<title>");
  if (!rv) rv = esc(o, title);
  if (!rv && in->cfg && in->cfg->model) {
    rv = tp_buf_append_str(o, ": ");
    if (!rv) rv = esc(o, in->cfg->model);
  }
  if (!rv) rv = tp_buf_printf(o, "</title>\n<style>%s</style>\n</head>\n<body>\n<header><h1>", css);
  if (!rv) rv = esc(o, title);
  if (!rv) rv = tp_buf_append_str(o, "</h1>\n");
  if (!rv && in->cfg) {
    const tp_config *c = in->cfg;
    rv = tp_buf_append_str(o, "<p class=\"meta\">Model: ");
    if (!rv) rv = esc(o, c->model ? c->model : "n/a");
    if (!rv) rv = tp_buf_append_str(o, " · target: ");
    if (!rv) rv = esc(o, in->mock ? "built-in mock" : c->url ? c->url : "n/a");
    if (!rv)
      rv = tp_buf_printf(o, " · backend: %s · streaming: %s · tokenizer: ", backend_name(c->backend),
                         c->streaming ? "on" : "off");
    if (!rv) rv = esc(o, c->tokenizer ? c->tokenizer : "none");
    if (!rv && c->tokenizer && c->tokenizer_add_special_tokens)
      rv = tp_buf_append_str(o, " (input counted with special tokens)");
    if (!rv) rv = tp_buf_append_str(o, " · prompts: ");
    if (!rv) rv = esc(o, c->input_file ? c->input_file : "synthetic");
    if (!rv) rv = tp_buf_append_str(o, "</p>\n");
  }
  if (!rv) {
    char when[64] = "";
    if (in->start_wall_ns) {
      time_t t = (time_t)(in->start_wall_ns / 1000000000ULL);
      struct tm tm;
      if (gmtime_r(&t, &tm)) strftime(when, sizeof(when), " · started %Y-%m-%d %H:%M:%S UTC", &tm);
    }
    rv = tp_buf_printf(o, "<p class=\"meta\">tokperf %s%s · %zu level%s</p>\n</header>\n", tp_version(), when,
                       in->n_levels, in->n_levels == 1 ? "" : "s");
  }
  return rv;
}

/* ------------------------------------------------------------------------ */
/* Capacity search (docs/search.md)                                         */

/* The probes in the order run: the load of each (green: every SLO held,
 * red: one failed), the boundary as a line; the numbers in a table
 * beside it. */
static int chart_search(tp_buf *o, const tp_search_summary *s) {
  bool rate = s->mode == TP_SEARCH_REQUEST_RATE;
  const char *unit = rate ? "request rate (requests/s)" : "concurrency";
  double ymax = 0;
  for (size_t i = 0; i < s->n_probes; i++) ymax = fmax(ymax, s->probes[i].load);
  double xs, ys;
  frame f;
  init_frame(&f, CW, CH, 0, (double)s->n_probes + 1, 0, nice_top(ymax, &ys));
  xs = nice_step((double)s->n_probes + 1);
  if (xs < 1) xs = 1;
  int rv = tp_buf_append_str(o, "<section><h2>Capacity search</h2>\n<p class=\"meta\">SLOs: ");
  for (size_t i = 0; i < s->n_slos && !rv; i++) {
    if (i) rv = tp_buf_append_str(o, ", ");
    if (!rv) rv = esc(o, s->slos[i]);
  }
  if (!rv && s->max_error_rate >= 0)
    rv = tp_buf_printf(o, "%serror_rate &lt;= %g", s->n_slos ? ", " : "", s->max_error_rate);
  if (!rv) rv = tp_buf_append_str(o, ". Outcome: ");
  if (!rv) rv = esc(o, s->outcome ? s->outcome : "");
  if (!rv && s->have_pass) rv = tp_buf_printf(o, ". Boundary: %g", s->boundary);
  if (!rv && s->have_fail) rv = tp_buf_printf(o, ", first failing probe: %g", s->first_fail);
  if (!rv) rv = tp_buf_append_str(o, ".</p>\n<div class=\"hists\"><figure>");
  if (!rv) rv = svg_open(o, "search", CW, CH, "Load of each probe, in the order probed");
  if (!rv) rv = axes(o, &f, xs, ys, true, true, "probe", unit);
  if (!rv && s->have_pass)
    rv = tp_buf_printf(o, "<line class=\"p99\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"><title>boundary "
                          "%g</title></line>",
                       f.px0, fy(&f, s->boundary), f.px1, fy(&f, s->boundary), s->boundary);
  for (size_t i = 0; i < s->n_probes && !rv; i++) {
    const tp_probe_row *p = &s->probes[i];
    rv = tp_buf_printf(o,
                       "<circle class=\"probe %s\" cx=\"%.1f\" cy=\"%.1f\" r=\"5\"><title>probe %zu: %g, "
                       "%s</title></circle>",
                       p->passed ? "pass" : "fail", fx(&f, (double)(i + 1)), fy(&f, p->load), i + 1, p->load,
                       p->passed ? "passed" : "failed");
  }
  if (!rv) rv = tp_buf_append_str(o, "</svg><figcaption>Green: every SLO held; red: one failed. Line: the "
                                     "boundary.</figcaption></figure>\n<table class=\"summary\"><tr><th>Probe</th>"
                                     "<th>Load</th><th>Result</th>");
  for (size_t i = 0; i < s->n_slos && !rv; i++) {
    rv = tp_buf_append_str(o, "<th>");
    if (!rv) rv = esc(o, s->slos[i]);
    if (!rv) rv = tp_buf_append_str(o, "</th>");
  }
  if (!rv) rv = tp_buf_append_str(o, "<th>Requests</th><th>Time (s)</th></tr>\n");
  for (size_t i = 0; i < s->n_probes && !rv; i++) {
    const tp_probe_row *p = &s->probes[i];
    rv = tp_buf_printf(o, "<tr><td>%zu</td><td>%g</td><td>%s</td>", i + 1, p->load, p->passed ? "pass" : "fail");
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
static int chart_turns(tp_buf *o, const tp_html_level *lv) {
  const tp_level_result *lr = &lv->lr;
  double ymax = 0;
  for (size_t i = 0; i < lr->n_turns; i++) ymax = fmax(ymax, lr->turns[i].ttft_ms_p99);
  double xs, ys;
  frame f;
  init_frame(&f, CW, CH, 0.5, (double)lr->n_turns + 0.5, 0, nice_top(ymax > 0 ? ymax : 1, &ys));
  xs = nice_step((double)lr->n_turns);
  if (xs < 1) xs = 1;
  char name[128];
  tp__level_name(lr, name, sizeof(name));
  int rv = tp_buf_append_str(o, "<section><h2>Per turn, ");
  if (!rv) rv = esc(o, name);
  if (!rv)
    rv = tp_buf_printf(o, "</h2>\n<p class=\"meta\">%" PRIu64 " sessions measured, %" PRIu64
                          " completed, %.2f turns each; %.3f s per session on average (think time "
                          "included).</p>\n<div class=\"hists\"><figure>",
                       lr->sessions.sessions, lr->sessions.completed, lr->sessions.turns_avg,
                       lr->sessions.time_s_avg);
  if (!rv) rv = svg_open(o, "turns", CW, CH, "Time to first token by turn");
  if (!rv) rv = axes(o, &f, xs, ys, true, true, "turn", "time to first token (ms)");
  for (int which = 0; which < 2 && !rv; which++) {
    /* avg as a line of points, p99 as open circles */
    for (size_t i = 0; i < lr->n_turns && !rv; i++) {
      const tp_turn_stats *t = &lr->turns[i];
      double v = which ? t->ttft_ms_p99 : t->ttft_ms_avg;
      if (!(v >= 0)) continue;
      rv = tp_buf_printf(o,
                         "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%d\"><title>turn %u: TTFT %s "
                         "%.2f ms</title></circle>",
                         which ? "probe fail" : "probe pass", fx(&f, (double)t->turn + 1), fy(&f, v),
                         which ? 3 : 5, t->turn + 1, which ? "p99" : "avg", v);
    }
  }
  if (!rv)
    rv = tp_buf_append_str(o, "</svg><figcaption>Filled: average; small: p99.</figcaption></figure>\n"
                              "<table class=\"summary\"><tr><th>Turn</th><th>Requests</th><th>TTFT avg (ms)</th>"
                              "<th>TTFT p99 (ms)</th><th>ITL avg (ms)</th><th>Latency avg (ms)</th>"
                              "<th>Input tokens</th><th>Cached tokens</th><th>Output tokens</th></tr>\n");
  for (size_t i = 0; i < lr->n_turns && !rv; i++) {
    const tp_turn_stats *t = &lr->turns[i];
    rv = tp_buf_printf(o, "<tr><td>%u</td><td>%" PRIu64 "</td>", t->turn + 1, t->requests);
    const double v[] = {t->ttft_ms_avg,      t->ttft_ms_p99,       t->itl_ms_avg,      t->latency_ms_avg,
                        t->input_tokens_avg, t->cached_tokens_avg, t->output_tokens_avg};
    for (size_t k = 0; k < sizeof(v) / sizeof(v[0]) && !rv; k++) rv = cell_num(o, v[k] >= 0, v[k], k < 4 ? 2 : 1);
    if (!rv) rv = tp_buf_append_str(o, "</tr>\n");
  }
  if (!rv) rv = tp_buf_append_str(o, "</table></div>\n</section>\n");
  return rv;
}

int tp_html_render(tp_buf *o, const tp_html_input *in) {
  int rv = header(o, in);
  if (!rv)
    rv = tp_buf_append_str(
        o,
        "<section><h2>Throughput and latency across the sweep</h2>\n"
        "<p class=\"meta\">Each point is one level, labelled with its concurrency (or rate). "
        "Up and to the right: more throughput at a higher latency.</p>\n<figure>");
  if (!rv) rv = chart_tput(o, in, false);
  if (!rv) rv = tp_buf_append_str(o, "</figure>\n<figure>");
  if (!rv) rv = chart_tput(o, in, true);
  if (!rv)
    rv = tp_buf_append_str(o,
                           "</figure>\n</section>\n<section><h2>Distributions per level</h2>\n"
                           "<figure>");
  if (!rv) rv = chart_box(o, in, false);
  if (!rv)
    rv = tp_buf_append_str(o, "<figcaption>Time to first token per level.</figcaption></figure>\n<figure>");
  if (!rv) rv = chart_box(o, in, true);
  if (!rv) rv = tp_buf_append_str(o, "<figcaption>Inter-token latency per level.</figcaption></figure>\n");
  for (size_t i = 0; i < in->n_levels && !rv; i++) {
    const tp_html_level *lv = &in->levels[i];
    char lname[128];
    tp__level_name(&lv->lr, lname, sizeof(lname));
    rv =
        tp_buf_printf(o, "<h3>%c%s</h3>\n<div class=\"hists\">", toupper((unsigned char)lname[0]), lname + 1);
    for (int itl = 0; itl < 2 && !rv; itl++) {
      size_t n = itl ? lv->n_itl : lv->n_ttft;
      if (!n || !pick_stat(&lv->lr, itl)->n) {
        rv = tp_buf_printf(o, "<p class=\"meta\">No %s values at this level.</p>", itl ? "ITL" : "TTFT");
        continue;
      }
      rv = tp_buf_append_str(o, "<figure>");
      if (!rv) rv = chart_hist(o, lv, i, itl);
      if (!rv) rv = tp_buf_append_str(o, "</figure>");
    }
    if (!rv) rv = tp_buf_append_str(o, "</div>\n");
  }
  if (!rv) rv = tp_buf_append_str(o, "</section>\n");
  if (!rv && in->n_levels) {
    size_t tl = in->timeline_level < in->n_levels ? in->timeline_level : in->n_levels - 1;
    const tp_html_level *lv = &in->levels[tl];
    char lname[128];
    tp__level_name(&lv->lr, lname, sizeof(lname));
    rv = tp_buf_printf(o, "<section><h2>Request timeline, %s</h2>\n", lname);
    if (!rv && lv->n_timeline < lv->n_measured)
      rv = tp_buf_printf(o, "<p class=\"meta\">The first %zu of %zu requests, in send order.</p>\n",
                         lv->n_timeline, lv->n_measured);
    if (!rv) rv = tp_buf_append_str(o, "<figure>");
    if (!rv) rv = chart_timeline(o, lv);
    if (!rv)
      rv = tp_buf_append_str(o,
                             "<figcaption>Bar: send to final response (orange: failed). Dark mark: first "
                             "token.</figcaption></figure>\n</section>\n");
  }
  if (!rv && in->search) rv = chart_search(o, in->search);
  for (size_t i = 0; i < in->n_levels && !rv; i++)
    if (in->levels[i].lr.n_turns) rv = chart_turns(o, &in->levels[i]);
  if (!rv) rv = tp_buf_append_str(o, "<section><h2>Summary</h2>\n");
  if (!rv) rv = summary_table(o, in);
  if (!rv) rv = tp_buf_append_str(o, "</section>\n");
  if (!rv) rv = ranks_section(o, in);
  if (!rv) rv = tp_buf_append_str(o, "</body>\n</html>\n");
  return rv;
}

int tp_html_write(const char *path, const tp_html_input *in, char *err, size_t errlen) {
  tp_buf b;
  tp_buf_init(&b);
  int rv = tp_html_render(&b, in);
  if (rv) {
    tp_buf_fini(&b);
    tp_seterr(err, errlen, "cannot write %s: out of memory", path);
    return rv;
  }
  if (tp__write_atomic(path, b.data, b.len)) {
    tp_seterr(err, errlen, "cannot write %s: %s (check that the directory exists and is writable)", path,
              strerror(errno));
    rv = TP_EIO;
  }
  tp_buf_fini(&b);
  return rv;
}

/* ------------------------------------------------------------------------ */
/* Comparison of runs (tokperf compare --html)                              */

static const char *const run_colours[] = {"#4c78a8", "#f58518", "#54a24b", "#e45756", "#72b7b2", "#b279a2"};

static int chart_compare_metric(tp_buf *o, const tp_html_cmp *in, const tp_html_cmp_metric *m) {
  double ymax = 0;
  size_t nv = in->n_levels * in->n_runs;
  for (size_t i = 0; i < nv; i++)
    if (isfinite(m->values[i])) ymax = fmax(ymax, m->values[i]);
  double ys;
  frame f;
  init_frame(&f, CW, CH, 0, (double)in->n_levels, 0, nice_top(ymax > 0 ? ymax : 1, &ys));
  int rv = tp_buf_append_str(o, "<section><h2>");
  if (!rv) rv = esc(o, m->name);
  if (!rv) rv = tp_buf_printf(o, " (%s)</h2>\n<p class=\"meta\">%s</p>\n<div class=\"hists\"><figure>", m->unit,
                              m->better < 0   ? "Lower is better."
                              : m->better > 0 ? "Higher is better."
                                              : "");
  if (!rv) rv = svg_open(o, "compare", CW, CH, m->name);
  if (!rv) rv = axes(o, &f, 1e300, ys, false, true, "level", m->unit);
  double slot = (f.px1 - f.px0) / (double)(in->n_levels ? in->n_levels : 1);
  double bw = slot * 0.8 / (double)(in->n_runs ? in->n_runs : 1);
  for (size_t l = 0; l < in->n_levels && !rv; l++) {
    for (size_t r = 0; r < in->n_runs && !rv; r++) {
      double v = m->values[l * in->n_runs + r];
      if (!isfinite(v)) continue;
      double x = f.px0 + slot * (double)l + slot * 0.1 + bw * (double)r;
      double y = fy(&f, v);
      rv = tp_buf_printf(o, "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"><title>",
                         x, y, bw, f.py0 - y, run_colours[r % (sizeof(run_colours) / sizeof(run_colours[0]))]);
      if (!rv) rv = esc(o, in->runs[r]);
      if (!rv) rv = tp_buf_append_str(o, ", ");
      if (!rv) rv = esc(o, in->levels[l]);
      if (!rv) rv = tp_buf_printf(o, ": %.4g %s</title></rect>", v, m->unit);
    }
    if (!rv) {
      rv = tp_buf_printf(o, "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                         f.px0 + slot * ((double)l + 0.5), f.py0 + 16);
      if (!rv) rv = esc(o, in->levels[l]);
      if (!rv) rv = tp_buf_append_str(o, "</text>");
    }
  }
  if (!rv) rv = tp_buf_append_str(o, "</svg><figcaption>");
  for (size_t r = 0; r < in->n_runs && !rv; r++) {
    rv = tp_buf_printf(o, "%s<span style=\"color:%s\">&#9632;</span> ", r ? " · " : "",
                       run_colours[r % (sizeof(run_colours) / sizeof(run_colours[0]))]);
    if (!rv) rv = esc(o, in->runs[r]);
  }
  if (!rv) rv = tp_buf_append_str(o, "</figcaption></figure>\n<table class=\"summary\"><tr><th>Level</th>");
  for (size_t r = 0; r < in->n_runs && !rv; r++) {
    rv = tp_buf_append_str(o, "<th>");
    if (!rv) rv = esc(o, in->runs[r]);
    if (!rv) rv = tp_buf_append_str(o, "</th>");
  }
  if (!rv && in->n_runs >= 2) rv = tp_buf_append_str(o, "<th>Last vs first</th>");
  if (!rv) rv = tp_buf_append_str(o, "</tr>\n");
  for (size_t l = 0; l < in->n_levels && !rv; l++) {
    rv = tp_buf_append_str(o, "<tr><td>");
    if (!rv) rv = esc(o, in->levels[l]);
    if (!rv) rv = tp_buf_append_str(o, "</td>");
    for (size_t r = 0; r < in->n_runs && !rv; r++) {
      double v = m->values[l * in->n_runs + r];
      rv = cell_num(o, isfinite(v), v, 2);
    }
    if (!rv && in->n_runs >= 2) {
      double a = m->values[l * in->n_runs], b = m->values[l * in->n_runs + in->n_runs - 1];
      if (isfinite(a) && isfinite(b) && a != 0)
        rv = tp_buf_printf(o, "<td>%+.1f%%</td>", (b - a) / fabs(a) * 100);
      else
        rv = tp_buf_append_str(o, "<td class=\"na\">n/a</td>");
    }
    if (!rv) rv = tp_buf_append_str(o, "</tr>\n");
  }
  if (!rv) rv = tp_buf_append_str(o, "</table></div>\n</section>\n");
  return rv;
}

int tp_html_compare_render(tp_buf *o, const tp_html_cmp *in) {
  int rv = tp_buf_printf(o,
                         "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                         "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                         "<title>tokperf compare</title>\n<style>%s</style>\n</head>\n<body>\n<header><h1>tokperf "
                         "compare</h1>\n<p class=\"meta\">",
                         css);
  for (size_t r = 0; r < in->n_runs && !rv; r++) {
    rv = tp_buf_printf(o, "%sRun %zu: ", r ? " · " : "", r + 1);
    if (!rv) rv = esc(o, in->runs[r]);
  }
  if (!rv)
    rv = tp_buf_printf(o, "</p>\n<p class=\"meta\">tokperf %s · %zu level%s in common</p>\n</header>\n",
                       tp_version(), in->n_levels, in->n_levels == 1 ? "" : "s");
  for (size_t i = 0; i < in->n_metrics && !rv; i++) rv = chart_compare_metric(o, in, &in->metrics[i]);
  if (!rv) rv = tp_buf_append_str(o, "</body>\n</html>\n");
  return rv;
}

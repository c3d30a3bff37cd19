/* report.html: chart plumbing, the frame and axes every SVG chart draws in. */
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/tp_stats.h"
#include "report/tp_html_svg.h"
#include "tokperf/tokperf.h"

/* ------------------------------------------------------------------------ */
/* Chart plumbing                                                           */

double tp__html_fx(const frame *f, double x) {
  return f->px0 + (x - f->x0) / (f->x1 - f->x0) * (f->px1 - f->px0);
}
double tp__html_fy(const frame *f, double y) {
  return f->py0 - (y - f->y0) / (f->y1 - f->y0) * (f->py0 - f->py1);
}

/* A step of 1, 2 or 5 times a power of ten, giving about five ticks. */
double tp__html_nice_step(double range) {
  if (!(range > 0) || !isfinite(range)) return 1;
  double raw = range / 5;
  double mag = pow(10, floor(log10(raw)));
  double r = raw / mag;
  return (r <= 1 ? 1 : r <= 2 ? 2 : r <= 5 ? 5 : 10) * mag;
}

double tp__html_nice_top(double v, double *step) {
  if (!(v > 0) || !isfinite(v)) v = 1;
  *step = tp__html_nice_step(v);
  return ceil(v / *step - 1e-9) * *step;
}

void tp__html_init_frame(frame *f, int w, int h, double x0, double x1, double y0, double y1) {
  f->x0 = x0;
  f->x1 = x1 > x0 ? x1 : x0 + 1;
  f->y0 = y0;
  f->y1 = y1 > y0 ? y1 : y0 + 1;
  f->px0 = ML;
  f->px1 = w - MR;
  f->py0 = h - MB;
  f->py1 = MT;
}

int tp__html_svg_open(tp_buf *o, const char *chart, int w, int h, const char *title) {
  int rv = tp_buf_printf(o,
                         "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"chart\" data-chart=\"%s\" "
                         "viewBox=\"0 0 %d %d\" width=\"%d\" height=\"%d\" role=\"img\"><title>",
                         chart, w, h, w, h);
  if (!rv) rv = tp__html_esc(o, title);
  if (!rv) rv = tp_buf_append_str(o, "</title>");
  return rv;
}

static int fmt_tick(tp_buf *o, double v) {
  if (fabs(v) >= 1e6 || (fabs(v) < 1e-3 && v != 0)) return tp_buf_printf(o, "%.3g", v);
  return tp_buf_printf(o, "%.6g", v);
}

/* Axes, grid and labels.  x_ticks / y_ticks false: the chart draws its own
 * labels on that axis (categories, request rows). */
int tp__html_axes(tp_buf *o, const frame *f, double xstep, double ystep, bool x_ticks, bool y_ticks,
                  const char *xlabel, const char *ylabel) {
  int rv = 0;
  for (double y = f->y0; y_ticks && y <= f->y1 + ystep * 1e-6 && !rv; y += ystep) {
    double py = tp__html_fy(f, y);
    rv = tp_buf_printf(o,
                       "<line class=\"grid\" x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>"
                       "<text class=\"tick\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">",
                       f->px0, py, f->px1, py, f->px0 - 6, py + 4);
    if (!rv) rv = fmt_tick(o, y);
    if (!rv) rv = tp_buf_append_str(o, "</text>");
  }
  for (double x = f->x0; x_ticks && x <= f->x1 + xstep * 1e-6 && !rv; x += xstep) {
    double px = tp__html_fx(f, x);
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
  if (!rv) rv = tp__html_esc(o, xlabel);
  if (!rv)
    rv = tp_buf_printf(o,
                       "</text><text class=\"label\" transform=\"translate(16 %.1f) rotate(-90)\" "
                       "text-anchor=\"middle\">",
                       (f->py0 + f->py1) / 2);
  if (!rv) rv = tp__html_esc(o, ylabel);
  if (!rv) rv = tp_buf_append_str(o, "</text>");
  return rv;
}

int tp__html_no_data(tp_buf *o, const frame *f, const char *what) {
  int rv = tp_buf_printf(o, "<text class=\"nodata\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">",
                         (f->px0 + f->px1) / 2, (f->py0 + f->py1) / 2);
  if (!rv) rv = tp__html_esc(o, what);
  if (!rv) rv = tp_buf_append_str(o, "</text>");
  return rv;
}

/* report.html's internals shared by its files: tp_html.c (escaping, the
 * tables and the page), tp_html_svg.c (chart frames and axes) and
 * tp_html_charts.c (the charts of one run). */
#ifndef TP_HTML_SVG_H
#define TP_HTML_SVG_H

#include <stdbool.h>
#include <stddef.h>

#include "report/tp_html.h"
#include "report/tp_report.h"

enum { CW = 720, CH = 340, ML = 70, MR = 20, MT = 20, MB = 52 };

typedef struct frame {
  double x0, x1, y0, y1;     /* data range */
  double px0, px1, py0, py1; /* pixels: py0 is the bottom */
} frame;

/* Frames: data coordinates to pixels, and round axis steps. */
double tp__html_fx(const frame *f, double x);
double tp__html_fy(const frame *f, double y);
double tp__html_nice_step(double range);
double tp__html_nice_top(double v, double *step);
void tp__html_init_frame(frame *f, int w, int h, double x0, double x1, double y0, double y1);
int tp__html_svg_open(tp_buf *o, const char *chart, int w, int h, const char *title);
/* Draws the axes with ticks every xstep / ystep (and their labels when
 * asked); no_data writes a "no data" note in the frame. */
int tp__html_axes(tp_buf *o, const frame *f, double xstep, double ystep, bool x_ticks, bool y_ticks,
                  const char *xlabel, const char *ylabel);
int tp__html_no_data(tp_buf *o, const frame *f, const char *what);

/* The charts of a run (tp_html_charts.c). */
int tp__html_chart_tput(tp_buf *o, const tp_html_input *in, bool itl);
int tp__html_chart_box(tp_buf *o, const tp_html_input *in, bool itl);
int tp__html_chart_hist(tp_buf *o, const tp_html_level *lv, size_t index, bool itl);
int tp__html_chart_timeline(tp_buf *o, const tp_html_level *lv);
int tp__html_chart_search(tp_buf *o, const tp_search_summary *s);
int tp__html_chart_turns(tp_buf *o, const tp_html_level *lv);
/* The level's time series (tp_html_series.c), data-chart "series-<index>". */
int tp__html_chart_series(tp_buf *o, const tp_html_level *lv, size_t index);

/* The statistic the charts show for a level: ITL or TTFT. */
const tp_stat *tp__html_pick_stat(const tp_level_result *lr, bool itl);

/* The escaped string s (nothing for NULL), and a number cell ("n/a" when
 * !avail or not finite). */
int tp__html_esc(tp_buf *out, const char *s);
int tp__html_cell_num(tp_buf *o, bool avail, double v, int decimals);

#endif

/* report.html: one self-contained page for a sweep.
 *
 * No network: no script, no external style sheet, font or image; the CSS
 * is inline and every chart is an inline SVG drawn here.  The page holds
 *   - output token throughput against TTFT p50/p99 and against ITL p50/p99
 *     across the sweep (one curve per percentile, points labelled with the
 *     concurrency);
 *   - TTFT and ITL per level: box plots from the level's statistics
 *     (p25/p50/p75 box, min..max whiskers, p99 tick), and histograms of the
 *     per-request values;
 *   - a timeline of one level's requests (bar from send to done, a mark at
 *     the first token), at most timeline_max requests;
 *   - the summary table.
 * Every figure is read from tp_level_result; the per-request values of the
 * histograms come from tp_level_compute run over a one-record slice, so
 * their definitions are the ones in docs/metrics.md and nowhere else.
 *
 * Charts carry data-chart attributes ("tput-ttft", "tput-itl", "box-ttft",
 * "box-itl", "hist-ttft-<N>", "hist-itl-<N>", "timeline") so tests and
 * readers can find them. */
#ifndef TP_HTML_H
#define TP_HTML_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "report/tp_export.h"
#include "util/tp_common.h"
#include "tokperf/tokperf.h"

/* One request on the timeline, in ms from the level's first send. */
typedef struct tp_html_req {
  double send_ms;
  double first_ms; /* < 0 = no first token */
  double done_ms;  /* < 0 = never finished */
  bool ok;
  uint64_t seq;
  char *label; /* owned: prompt excerpt (sanitised UTF-8), or NULL */
} tp_html_req;

/* What the page needs of one level: its figures and a compact digest of
 * its records (two doubles per request and the capped timeline), so a run
 * can drop the records as soon as a level ends. */
typedef struct tp_html_level {
  tp_level_result lr; /* copy */
  double *ttft_ms;    /* owned, per successful request */
  size_t n_ttft;
  double *itl_ms; /* owned */
  size_t n_itl;
  tp_html_req *timeline; /* owned, in send order */
  size_t n_timeline;
  size_t n_measured; /* measured requests the timeline was taken from */
} tp_html_level;

/* Fills lv from the level's figures and requests: per-request TTFT and ITL
 * (through tp_level_compute on each record alone) and the timeline of the
 * first timeline_max measured requests by send time (0 = 500).  Returns 0
 * or TP_ENOMEM (lv is then empty but safe to fini). */
int tp_html_level_init(tp_html_level *lv, const tp_level_result *lr, const tp_export_request *reqs, size_t n,
                       size_t timeline_max);
void tp_html_level_fini(tp_html_level *lv);

typedef struct tp_html_input {
  const tp_config *cfg;        /* may be NULL */
  bool mock;                   /* the target is the built-in mock, started in-process */
  const char *title;           /* NULL = "tokperf report" */
  const tp_html_level *levels; /* in sweep order */
  size_t n_levels;
  size_t timeline_level;                  /* index into levels; SIZE_MAX = the last level */
  uint64_t start_wall_ns;                 /* wall clock of the run start, for the header; 0 = omit */
  const tp_accuracy *accuracy;            /* one per level, or NULL */
  const struct tp_search_summary *search; /* a capacity search's probes, or NULL */
} tp_html_input;

/* Renders the page into out.  Returns 0 or TP_ENOMEM. */
int tp_html_render(tp_buf *out, const tp_html_input *in);

/* Renders and writes the page to path (temporary file and rename).
 * Returns 0, TP_ENOMEM, or TP_EIO with "cannot write PATH: reason" in
 * err. */
int tp_html_write(const char *path, const tp_html_input *in, char *err, size_t errlen);

/* Appends s[0..len) with &, <, >, " and ' escaped, control characters
 * replaced by spaces and invalid UTF-8 by U+FFFD.  Returns 0 or TP_ENOMEM. */
int tp_html_escape(tp_buf *out, const char *s, size_t len);

/* A comparison page of two or more runs (tokperf compare --html): for each
 * metric, a bar per run at each level in common, and the numbers in a
 * table beside the chart. */
typedef struct tp_html_cmp_metric {
  char name[64];  /* "ttft.p99" */
  char unit[32];  /* "ms" */
  int better;     /* -1 lower, +1 higher, 0 neither */
  double *values; /* n_levels * n_runs, row per level; NAN = unavailable (owned by the caller) */
} tp_html_cmp_metric;

typedef struct tp_html_cmp {
  const char *const *runs; /* labels (file names) */
  size_t n_runs;
  const char *const *levels; /* "concurrency 8" */
  size_t n_levels;
  const tp_html_cmp_metric *metrics;
  size_t n_metrics;
} tp_html_cmp;

int tp_html_compare_render(tp_buf *o, const tp_html_cmp *in);

#endif

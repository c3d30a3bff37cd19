/* Capacity search: the highest load (request rate or concurrency) whose
 * level still meets the SLOs.
 *
 * The search brackets, then bisects.  From the start value it multiplies
 * by `growth` while probes pass (or divides while they fail) until one
 * passing and one failing value are known, then halves the gap until it is
 * within the precision.  Each probe is a full level, measured with its
 * warm-up, judged by the caller against the SLOs; this module only chooses
 * the next value, so it is pure and tested on synthetic thresholds.
 *
 * A server's pass/fail is monotone in load only up to noise.  The answer is
 * the highest passing value below the lowest failing one, so a passing
 * probe above a failure (noise) never raises it, and the report lists every
 * probe so such a case is visible. */
#ifndef TP_SEARCH_H
#define TP_SEARCH_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tp_search_opts {
  double start;       /* the first probe (> 0) */
  double min, max;    /* the range searched (min > 0) */
  double growth;      /* bracketing factor (> 1), e.g. 2 */
  /* Stop bisecting when first failing - last passing is at most this: a
   * fraction of the last passing value (relative), or a whole amount
   * (absolute), whichever is given (relative when both). */
  double rel_precision;
  double abs_precision;
  bool integer;       /* concurrency: whole values only (precision at least 1) */
  unsigned max_probes; /* a hard stop; the answer so far is reported */
} tp_search_opts;

typedef enum tp_search_state {
  TP_SEARCH_RUNNING,    /* probe tp_search_next's value */
  TP_SEARCH_FOUND,      /* a passing and a failing value within precision */
  TP_SEARCH_ALL_PASS,   /* max passed: the capacity is above the range */
  TP_SEARCH_ALL_FAIL,   /* min failed: the capacity is below the range */
  TP_SEARCH_OUT_OF_PROBES /* max_probes reached first; the bracket so far is reported */
} tp_search_state;

typedef struct tp_search_probe {
  double value;
  bool passed;
} tp_search_probe;

#define TP_SEARCH_MAX_PROBES 64

typedef struct tp_search {
  tp_search_opts o;
  tp_search_state state;
  double next;
  bool have_pass, have_fail;
  double best_pass;  /* highest passing value below the lowest failure */
  double low_fail;   /* lowest failing value */
  tp_search_probe probes[TP_SEARCH_MAX_PROBES];
  unsigned n_probes;
} tp_search;

/* Returns 0, or TP_EINVAL for options out of range. */
int tp_search_init(tp_search *s, const tp_search_opts *o);
/* The value to probe next; false when the search is over (see state). */
bool tp_search_next(const tp_search *s, double *value);
/* The outcome of probing value (the one tp_search_next gave). */
void tp_search_record(tp_search *s, double value, bool passed);
/* A phrase for the state: "found", "every probe passed", ... */
const char *tp_search_state_name(tp_search_state st);

#endif

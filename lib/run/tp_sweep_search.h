/* The capacity search as a sweep (docs/search.md): the run asks for the
 * next load, measures it as a full level (warm-up and stop rules as
 * configured), and hands the level back to be judged against the SLOs.
 * The choice of loads is tp_search's (bracket, then bisect); this part
 * holds the SLOs and the probe table for the reports. */
#ifndef TP_SWEEP_SEARCH_H
#define TP_SWEEP_SEARCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "report/tp_report.h"
#include "run/tp_gates.h"
#include "run/tp_search.h"
#include "util/tp_common.h"

typedef struct tp_sweep_search tp_sweep_search;

/* Checks the search settings of c (range, precision, probe budget, SLOs)
 * and starts the search.  Returns 0, or TP_EINVAL with a message naming
 * the option and what is accepted. */
int tp_sweep_search_new(tp_sweep_search **out, const tp_config *c, char *err, size_t errlen);
/* The probe budget: the most levels the search can run. */
size_t tp_sweep_search_max_levels(const tp_config *c);
/* The next load to probe; false when the search is over. */
bool tp_sweep_search_next(const tp_sweep_search *s, double *load);
/* Judges the level measured at load (index level in the report) against
 * every SLO; sent counts its requests (warm-up included), seconds its wall
 * time. */
void tp_sweep_search_judge(tp_sweep_search *s, double load, const tp_level_result *lv, size_t level,
                           uint64_t sent, double seconds);
/* A view of the search for the reports (valid while s lives). */
const tp_search_summary *tp_sweep_search_summary(const tp_sweep_search *s);
void tp_sweep_search_free(tp_sweep_search *s);
/* The run's CI gates under a search: probes above the capacity fail by
 * design, so --assert is checked at the boundary's level only, and a
 * search where no probe met every SLO fails.  Returns the failures, each
 * printed to out. */
int tp_sweep_search_check(const tp_sweep_search *s, const tp_gates *asserts, const tp_level_result *levels,
                          FILE *out);

/* Pure: whether a level meets the SLOs (gates from tp_gates_new, n of them)
 * and the error-rate bound (< 0 = none), filling row's figures. */
bool tp_sweep_search_eval(const tp_gates *gates, size_t n, double max_error_rate, const tp_level_result *lv,
                          tp_probe_row *row);

#endif

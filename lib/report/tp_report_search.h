/* The report's parts for a capacity search and for repeated runs
 * (docs/search.md): text sections and JSON members, beside tp_report.c's
 * per-level ones. */
#ifndef TP_REPORT_SEARCH_H
#define TP_REPORT_SEARCH_H

#include <jansson.h>
#include <stdio.h>

#include "metrics/tp_ci.h"
#include "metrics/tp_metric.h"
#include "report/tp_report.h"

/* The statistics of a distribution summarised over repeated runs (avg,
 * p50, p99); a level figure has one ("value"). */
#define TP_REPEAT_STATS 3
extern const tp_stat_id tp_repeat_stats[TP_REPEAT_STATS];

/* Levels [first, first + n) are runs of one point: fills ci with the
 * interval of metric m's statistic st over those of them where it is
 * available (ci->n = 0 when none). */
void tp_repeat_ci(const tp_level_result *levels, size_t first, size_t n, const tp_metric *m, tp_stat_id st,
                  tp_ci *ci);

void tp_report_search_text(FILE *out, const tp_search_summary *s);
void tp_report_repeats_text(FILE *out, const tp_report_input *in);
json_t *tp_report_search_json(const tp_search_summary *s);
/* NULL when the run had one run per level. */
json_t *tp_report_repeats_json(const tp_report_input *in);

#endif

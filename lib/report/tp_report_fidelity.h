/* The client's own figures in every report (docs/metrics.md, "Fidelity"):
 * the last section of the text report, the "fidelity" object that ends
 * each level of --json (and the run's verdict after the levels), the last
 * section of report.html, and "tokperf_fidelity" in the exports' metadata.
 * One module, so that every report says the same thing.  Private to
 * report/. */
#ifndef TP_REPORT_FIDELITY_H
#define TP_REPORT_FIDELITY_H

#include <jansson.h>

#include "metrics/tp_metric.h"
#include "report/tp_html.h"
#include "report/tp_report.h"
#include "util/tp_common.h"
#include "tokperf/tokperf.h"

/* A registry row's JSON key may name a member of an object of the level
 * ("fidelity.merged_pct": member merged_pct of the level's "fidelity").
 * Set (made when missing; consumes v, as json_object_set_new) and get
 * (NULL when missing). */
int tp__json_key_set(json_t *obj, const char *key, json_t *v);
json_t *tp__json_key_get(json_t *obj, const char *key);
/* A registry row's value as --json writes it (tp_report_json.c): a
 * distribution's statistics, a count, a figure; null when unavailable. */
json_t *tp__report_metric_json(const tp_metric *m, const tp_level_result *lr);

/* The level's "fidelity" object, moved to the level's end and completed
 * (the registry's figures are there already): the verdict in words, the
 * counts behind the merged share, the ITL's marks, the thresholds.
 * Returns 0 or -1 when out of memory. */
int tp__report_fidelity_level_json(json_t *level, const tp_level_result *lr);
/* The run's: the worst level's verdict and every level's, in words. */
json_t *tp__report_fidelity_json(const tp_report_input *in);
/* The same object for an export's metadata ("tokperf_fidelity"), with a
 * note on what the export did with responses that share a time. */
json_t *tp__fidelity_export_json(const tp_level_result *lr);
/* tp__fidelity_export_json as compact JSON text appended to out, after
 * ",\"tokperf_fidelity\":".  Returns 0 or TP_ENOMEM. */
int tp__fidelity_export_member(tp_buf *out, const tp_level_result *lr);
/* report.html's last section. */
int tp__html_fidelity(tp_buf *o, const tp_html_input *in);

#endif

/* tokperf compare's internals shared by its files: tp_compare.c (two runs,
 * their table, rules and JUnit) and tp_compare_html.c (many runs, one
 * page of charts). */
#ifndef TP_COMPARE_INT_H
#define TP_COMPARE_INT_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "metrics/tp_metric.h"
#include "report/tp_export.h"

/* A results document read from --json. */
typedef struct doc {
  const char *path;
  json_t *root;
  json_t *levels;  /* borrowed from root */
  json_t *repeats; /* --num-profile-runs: one entry per point with intervals (borrowed; NULL = none) */
  char desc[256];
} doc;

/* Reads a results document (err names the file and the problem). */
int tp__cmp_load_doc(doc *d, const char *path, char *err, size_t errlen);
/* A level's figure for metric m, statistic st; false when it has none. */
bool tp__cmp_level_value(json_t *lv, const tp_metric *m, tp_stat_id st, double *out);
/* A level's load point, and whether two points are the same load. */
void tp__cmp_level_point(json_t *lv, tp_level_result *p);
bool tp__cmp_same_point(const tp_level_result *a, const tp_level_result *b);
/* A metric's label: "name.stat" for a distribution, else its name. */
void tp__cmp_metric_label(char *buf, size_t len, const tp_metric *m, tp_stat_id st);

#endif

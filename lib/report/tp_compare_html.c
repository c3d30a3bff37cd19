/* tokperf compare --html: the levels that every run has, one chart per
 * headline metric. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/tp_compare.h"
#include "report/tp_compare_int.h"
#include "report/tp_html.h"

/* The levels of the first run that every other run has too: their rows
 * ([level][run]) and names.  Returns how many. */
static size_t common_levels(doc *docs, size_t n, size_t na, json_t **rows, char (*names)[128],
                            const char **level_names) {
  size_t nl = 0;
  for (size_t i = 0; i < na; i++) {
    json_t *la = json_array_get(docs[0].levels, i);
    tp_level_result pa, pb;
    tp__cmp_level_point(la, &pa);
    bool all = true;
    rows[nl * n] = la;
    for (size_t d = 1; d < n && all; d++) {
      json_t *found = NULL;
      for (size_t j = 0; j < json_array_size(docs[d].levels) && !found; j++) {
        tp__cmp_level_point(json_array_get(docs[d].levels, j), &pb);
        if (tp__cmp_same_point(&pa, &pb)) found = json_array_get(docs[d].levels, j);
      }
      rows[nl * n + d] = found;
      all = found != NULL;
    }
    if (!all) continue;
    tp__level_name(&pa, names[nl], sizeof(names[nl]));
    level_names[nl] = names[nl];
    nl++;
  }
  return nl;
}

/* A chart per headline metric of the registry: a distribution's average
 * and p99, a level figure as it is; values [level][run]. */
static int cmp_metrics(const tp_metric *all_m, size_t nm, json_t *const *rows, size_t nl, size_t n,
                       tp_html_cmp_metric *ms, size_t *nms) {
  for (size_t k = 0; k < nm; k++) {
    const tp_metric *m = &all_m[k];
    if (!(m->flags & TP_MF_COMPARE)) continue;
    static const tp_stat_id dist_stats[] = {TP_STAT_AVG, TP_STAT_P99};
    size_t nst = m->kind == TP_METRIC_DIST ? 2 : 1;
    for (size_t q = 0; q < nst; q++) {
      tp_html_cmp_metric *hm = &ms[*nms];
      tp__cmp_metric_label(hm->name, sizeof(hm->name), m, m->kind == TP_METRIC_DIST ? dist_stats[q] : TP_STAT_AVG);
      snprintf(hm->unit, sizeof(hm->unit), "%s", tp_unit_name(m->unit));
      hm->better = m->better;
      hm->values = malloc(nl * n * sizeof(double));
      if (!hm->values) return TP_ENOMEM;
      (*nms)++;
      for (size_t l = 0; l < nl; l++)
        for (size_t d = 0; d < n; d++) {
          double v;
          hm->values[l * n + d] =
              tp__cmp_level_value(rows[l * n + d], m, m->kind == TP_METRIC_DIST ? dist_stats[q] : TP_STAT_AVG, &v)
                  ? v
                  : NAN;
        }
    }
  }
  return 0;
}

static int write_html(const char *html_path, const tp_html_cmp *in, char *err, size_t errlen) {
  tp_buf o;
  tp_buf_init(&o);
  int rv = tp_html_compare_render(&o, in);
  if (!rv && tp__write_atomic(html_path, o.data, o.len)) {
    tp__write_err(err, errlen, html_path, errno, "see --html");
    rv = TP_EIO;
  } else if (rv) {
    tp_seterr(err, errlen, "cannot write %s: out of memory", html_path);
  }
  tp_buf_fini(&o);
  return rv;
}

int tp_compare_html(const char *const *paths, size_t n, const char *html_path, char *err, size_t errlen) {
  if (n < 2) {
    tp_seterr(err, errlen, "--html compares two or more --json documents");
    return TP_EINVAL;
  }
  doc *docs = calloc(n, sizeof(*docs));
  const char **runs = calloc(n, sizeof(*runs));
  if (!docs || !runs) {
    free(docs);
    free(runs);
    return TP_ENOMEM;
  }
  int rv = 0;
  for (size_t i = 0; i < n && !rv; i++) {
    rv = tp__cmp_load_doc(&docs[i], paths[i], err, errlen);
    runs[i] = paths[i];
  }
  /* The levels of the first run that every other run has too. */
  size_t na = rv ? 0 : json_array_size(docs[0].levels);
  json_t **rows = calloc((na ? na : 1) * n, sizeof(*rows)); /* [level][run] */
  char(*names)[128] = calloc(na ? na : 1, sizeof(*names));
  const char **level_names = calloc(na ? na : 1, sizeof(*level_names));
  if (!rv && (!rows || !names || !level_names)) rv = TP_ENOMEM;
  size_t nl = rv ? 0 : common_levels(docs, n, na, rows, names, level_names);
  if (!rv && !nl) {
    tp_seterr(err, errlen, "the documents have no level in common");
    rv = TP_EINVAL;
  }
  size_t nm;
  const tp_metric *all_m = tp_metrics(&nm);
  tp_html_cmp_metric *ms = calloc(nm * 2, sizeof(*ms));
  size_t nms = 0;
  if (!rv && !ms) rv = TP_ENOMEM;
  if (!rv) rv = cmp_metrics(all_m, nm, rows, nl, n, ms, &nms);
  if (!rv) {
    tp_html_cmp in = {runs, n, level_names, nl, ms, nms};
    rv = write_html(html_path, &in, err, errlen);
  }
  for (size_t i = 0; i < nms; i++) free(ms[i].values);
  free(ms);
  free(rows);
  free(names);
  free(level_names);
  for (size_t i = 0; i < n; i++) json_decref(docs[i].root);
  free(docs);
  free(runs);
  return rv;
}

/* The Prometheus text exposition format (version 0.0.4): a scrape body in,
 * one callback per sample out.  No I/O here.
 *
 * Accepted: "# HELP" and "# TYPE" lines (reported to the callback as types
 * for the family), other comments, blank lines, `name{label="value",...}
 * value [timestamp]` with the label escapes \\, \" and \n, values NaN, +Inf,
 * -Inf and decimal or exponent numbers, LF or CRLF line ends.  Histograms and
 * summaries arrive as their samples (_bucket{le=...}, _sum, _count). */
#ifndef TP_PROM_H
#define TP_PROM_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define TP_PROM_MAX_LABELS 16

typedef struct tp_prom_label {
  const char *name; /* borrowed, NUL-terminated, valid during the callback */
  const char *value;
} tp_prom_label;

typedef struct tp_prom_sample {
  const char *name;
  tp_prom_label labels[TP_PROM_MAX_LABELS];
  size_t n_labels;
  double value;
  bool has_timestamp;
  int64_t timestamp_ms;
} tp_prom_sample;

/* Called per sample.  Return 0 to go on, non-zero to stop (returned by
 * tp_prom_parse). */
typedef int (*tp_prom_sample_cb)(void *user_data, const tp_prom_sample *s);

/* Parses a whole body.  Returns 0, the callback's non-zero value, or
 * TP_EPROTO with "line N: what is wrong" in err for a malformed line (the
 * samples before it were delivered).  TP_ENOMEM on allocation failure. */
int tp_prom_parse(const char *body, size_t len, tp_prom_sample_cb cb, void *user_data, char *err,
                  size_t errlen);

/* Label lookup helper: the value of `name` in s, or NULL. */
const char *tp_prom_label_value(const tp_prom_sample *s, const char *name);

#endif

/* tokperf: value parsers for command lines (counts, durations, sizes,
 * fractions, lists).  Shared by the library's settings tables, the CLI and
 * other programs; depends only on tokperf/errors.h, so the bottom layer of
 * the library can declare them without the rest of the public API. */
#ifndef TOKPERF_PARSE_H
#define TOKPERF_PARSE_H

#include <stddef.h>
#include <stdint.h>

#include "tokperf/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Value parsers for command lines.  Each returns 0 or TP_EINVAL and writes
 * into err a phrase saying what was expected (the caller adds the option
 * name and the quoted value). */

/* Unsigned count with an optional k/M/G suffix (powers of 1000): "10k". */
TP_API int tp_parse_count(const char *s, uint64_t *out, char *err, size_t errlen);

/* Duration: a number with unit ns, us, ms, s, m or h ("500ms", "1.5s",
 * "2m").  A bare number takes default_unit_ns (e.g. 1e6 for ms). */
TP_API int tp_parse_duration_ns(const char *s, uint64_t default_unit_ns, uint64_t *out,
                                char *err, size_t errlen);

/* Non-negative decimal number ("0.5", "20"). */
TP_API int tp_parse_double(const char *s, double *out, char *err, size_t errlen);

/* A size in bytes with an optional k, M or G suffix, powers of 1024, and an
 * optional B ("64M", "16KiB", "4096"). */
TP_API int tp_parse_size(const char *s, uint64_t *out, char *err, size_t errlen);

/* A fraction from 0 to 1 ("0.05") or a percentage ("5%"). */
TP_API int tp_parse_fraction(const char *s, double *out, char *err, size_t errlen);

/* A list of positive integers: "1,4,8", a range "START:END[:STEP]" with an
 * additive step ("4:32:4", step 1 by default) or a multiplying one
 * ("1:64:x2"), or lists of those ("1,2,8:32:8").  Ranges include END when
 * the steps land on it.  At most max_values values; *vals is returned owned
 * (free()). */
TP_API int tp_parse_uint_list(const char *s, uint32_t **vals, size_t *n, size_t max_values,
                              char *err, size_t errlen);

/* A list of positive decimal numbers: "10,50,100", "0.5,2.5", a range
 * "START:END[:STEP]" with an additive step (1 by default; "1.0:4.0:0.1",
 * perf_analyzer's --request-rate-range) or a multiplying one ("1:64:x2"),
 * or lists of those.  Range values are START + k * STEP (not a running
 * sum) to twelve significant digits, and include END when a step lands on
 * it to within rounding.  Negative numbers, a zero step, END 0 (perf_
 * analyzer's open range) and START above END are refused with the number
 * named.  At most max_values values; *vals is returned owned (free()). */
TP_API int tp_parse_f64_list(const char *s, double **vals, size_t *n, size_t max_values, char *err,
                             size_t errlen);

#ifdef __cplusplus
}
#endif
#endif

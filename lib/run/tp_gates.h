/* CI gates: assertions on the report's figures, written as
 * "metric.stat OP value[unit]" ("ttft.p99 <= 250ms",
 * "output_token_throughput >= 1000", "error_rate <= 0.01" or "<= 1%").
 *
 * Metrics with statistics (stat: avg min max std p25 p50 p75 p90 p95 p99):
 * ttft, itl, latency (times), output_tokens, input_tokens,
 * output_tps_per_user, send_lag (time), ttft_from_planned,
 * latency_from_planned (times).  Scalars: output_token_throughput,
 * input_token_throughput, request_throughput, goodput (requests/s),
 * goodput_fraction, error_rate (fractions, or percent with %),
 * achieved_send_rate, failed, succeeded.  Times take ns, us, ms (default) or
 * s and are compared in ms.  A gate must hold at every level. */
#ifndef TP_GATES_H
#define TP_GATES_H

#include <stdio.h>

#include "util/tp_common.h"
#include "tokperf/tokperf.h"

typedef struct tp_gates tp_gates;

/* Parses the expressions (borrowed).  Returns 0, or TP_EINVAL with a message
 * that quotes the expression and says what is accepted. */
int tp_gates_new(tp_gates **out, const char *const *exprs, size_t n, char *err, size_t errlen);
/* Evaluates the gates at every level, plus max_error_rate (< 0 = none) and
 * the rule that a run whose every request failed never passes.  Prints one
 * line per failure to out; returns the number of failures. */
int tp_gates_check(const tp_gates *g, const tp_level_result *levels, size_t n_levels,
                   double max_error_rate, FILE *out);
void tp_gates_free(tp_gates *g);

/* Without max_error_rate (< 0), a run whose error rate exceeds
 * TP_ERROR_RATE_WARN at some level is said in one line (not a failure):
 * writes it into buf (no "tokperf:" prefix, no newline) and returns 1;
 * 0 when there is nothing to say. */
int tp_gates_error_rate_note(const tp_level_result *levels, size_t n_levels, double max_error_rate, char *buf,
                             size_t len);

/* For tests: evaluates one parsed gate on one level; returns 1 = holds,
 * 0 = fails, and the measured value in *value. */
int tp_gate_eval(const tp_gates *g, size_t i, const tp_level_result *lv, double *value);

#endif

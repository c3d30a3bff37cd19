/* tokperf compare: two runs' JSON documents side by side, regression rules
 * and JUnit XML.
 *
 * Reads documents written by --json (schema "tokperf.report/1"), matches
 * their levels by sweep point (mode, concurrency, request rate, swept input
 * and output lengths: for a concurrency sweep, the concurrency), and prints
 * for every matched level each headline metric (the metric registry's rows
 * marked TP_MF_COMPARE) of run A and run B with the change in percent,
 * marking the ones that got worse in the registry's direction.  No figure
 * is recomputed: every value is read from the documents under the
 * registry's JSON key, in the report's unit (error_rate is a fraction, as
 * gates take it; computed from the counts for documents without it).
 *
 * Rules (--fail-on), "METRIC[.STAT]:[+|-]N%":
 *   METRIC  any name of the metric registry; a distribution (ttft, itl,
 *           latency, ...) needs STAT (avg, min, max, p99, p95, p90, p75,
 *           p50, p25, std); a level figure (request_throughput,
 *           error_rate, reconnects, ...) takes none (".avg" is accepted)
 *   +N%     fails when B is more than N percent above A;
 *   -N%     fails when B is more than N percent below A;
 *   N%      (no sign) fails when B is more than N percent worse than A, in
 *           the metric's own direction (+ for latencies and error_rate, -
 *           for throughputs, + when neither is better).
 * A rule is checked at every matched level.  Against a baseline of 0 any
 * rise is an infinite change (so "error_rate:+50%" fails when A had no
 * errors and B has some).  A figure present in A but unavailable (null) in
 * B fails the rule; unavailable in both skips it. */
#ifndef TP_COMPARE_H
#define TP_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "util/tp_common.h"

/* Returned by tp_compare_run when at least one rule failed (the CLI maps it
 * to exit code 1). */
#define TP_COMPARE_FAILED 1

#include "metrics/tp_metric.h"

typedef struct tp_compare_rule {
  const tp_metric *metric; /* a row of the metric registry */
  tp_stat_id stat;         /* TP_STAT_AVG for metrics without statistics */
  double bound_pct; /* N, >= 0 */
  int direction;    /* +1: fails when B is more than N % above A; -1: below */
  char text[64];    /* the rule as written, for messages */
} tp_compare_rule;

/* Parses one --fail-on value.  Returns 0, or TP_EINVAL with a phrase in err
 * naming what was wrong and what is accepted (the caller adds the option
 * name and quotes the value). */
int tp_compare_parse_rule(const char *s, tp_compare_rule *out, char *err, size_t errlen);

/* Compares the documents at paths json_a (baseline) and json_b.  Prints the
 * side-by-side tables and then one line per rule result to out (may be
 * NULL); writes JUnit XML to junit_path when not NULL (a <testsuite> of the
 * rules, one <testcase> per rule and level with a <failure> when it failed,
 * and a <testsuite> of the comparisons, one <testcase> per level and
 * metric).  fail_on: n rule strings (borrowed).
 * Returns 0 when every rule held, TP_COMPARE_FAILED when one failed (the
 * names and values are in the output and in err), TP_EINVAL for a bad rule
 * or a document that is not a tokperf report or shares no level with the
 * other, TP_ENOTFOUND / TP_EIO when a document cannot be read or the
 * JUnit file cannot be written, TP_ENOMEM; the message is in err. */
int tp_compare_run(const char *json_a, const char *json_b, const char *const *fail_on, size_t n, FILE *out,
                   const char *junit_path, char *err, size_t errlen);

/* Writes html_path: a page comparing the documents at paths (two or
 * more, in order) level by level over the levels they all have, a chart
 * per headline metric with its numbers in a table.  Returns 0 or a
 * negative TP_E* code with a message in err. */
int tp_compare_html(const char *const *paths, size_t n, const char *html_path, char *err, size_t errlen);

#endif

/* The metric registry: the one list of the figures a level reports.
 *
 * A metric is one row: its name (as gates, compare rules and goodput
 * bounds write it), its label, kind and unit, where it lives in
 * tp_level_result, its key in tokperf's JSON document and in GenAI-Perf's
 * and AIPerf's exports, which direction is better, when it is unavailable, and where it
 * is shown.  Every report, export, gate and comparison walks these rows,
 * so adding a metric is one row here plus its computation in tp_stats.c.
 * Definitions are in docs/metrics.md, one per row. */
#ifndef TP_METRIC_H
#define TP_METRIC_H

#include <stdbool.h>
#include <stddef.h>

#include "tokperf/tokperf.h"

typedef enum tp_metric_kind {
  TP_METRIC_DIST,  /* a tp_stat: a distribution over requests (avg, percentiles) */
  TP_METRIC_VALUE, /* one double per level */
  TP_METRIC_COUNT  /* one uint64_t per level */
} tp_metric_kind;

/* Units.  A threshold (gate, goodput bound) may carry a unit of the same
 * family: "250ms" or "0.25s" for times, "1%" or "0.01" for fractions. */
/* Each unit: tokperf's spelling, then GenAI-Perf's and AIPerf's in their
 * exports.  A rate per user is tokens/s to tokperf, and a unit of its own
 * only because both tools spell it "tokens/sec/user". */
#define TP_UNITS(X)                                                              \
  X(TP_UNIT_MS, "ms", "ms", "ms")                                                \
  X(TP_UNIT_S, "s", "sec", "sec")                                                \
  X(TP_UNIT_TOKENS, "tokens", "tokens", "tokens")                                \
  X(TP_UNIT_TOKENS_PER_S, "tokens/s", "tokens/sec", "tokens/sec")                \
  X(TP_UNIT_TOKENS_PER_S_USER, "tokens/s", "tokens/sec/user", "tokens/sec/user") \
  X(TP_UNIT_REQUESTS, "requests", "count", "requests")                           \
  X(TP_UNIT_REQUESTS_PER_S, "requests/s", "requests/sec", "requests/sec")        \
  X(TP_UNIT_RESPONSES, "responses", "responses", "responses")                    \
  X(TP_UNIT_FRACTION, "fraction", "", "")                                        \
  X(TP_UNIT_PERCENT, "%", "%", "%")                                              \
  X(TP_UNIT_READS_PER_S, "reads/s", "reads/sec", "reads/sec")                    \
  X(TP_UNIT_NONE, "", "", "")

#define TP_UNIT_ENUM(e, s, g, a) e,
typedef enum tp_unit { TP_UNITS(TP_UNIT_ENUM) TP_UNIT_COUNT } tp_unit;
#undef TP_UNIT_ENUM

/* Row flags: when a figure is unavailable, and where it is shown. */
enum {
  TP_MF_TOKENS = 1,       /* unavailable unless a tokenizer counted output tokens */
  TP_MF_INPUT_TOKENS = 2, /* unavailable unless input tokens were counted */
  TP_MF_GOODPUT = 4,      /* unavailable unless goodput bounds were set */
  TP_MF_NONNEG = 8,       /* a negative value means unavailable */
  TP_MF_TABLE = 16,       /* a row of the per-level statistics table */
  TP_MF_SUMMARY = 32,     /* columns of the sweep summary (avg and p99 for a distribution) */
  TP_MF_ACCURACY = 64,    /* unavailable unless references were scored */
  TP_MF_COMPARE = 128,    /* a row of tokperf compare's side-by-side table */
  /* A timing between tokens (and TTFT): left out, in a run without
   * streaming, of GenAI-Perf's CSV and of AIPerf's files, as those tools
   * leave it out; GenAI-Perf's JSON keeps TTFT (equal to the latency), as
   * GenAI-Perf's JSON exporter does. */
  TP_MF_STREAMING = 256,
  /* The client's own figures (docs/metrics.md, "Fidelity"): the last
   * section of every report, and rows of tokperf compare (a distribution
   * as its p50, p99 and max). */
  TP_MF_FIDELITY = 512
};

typedef struct tp_metric {
  const char *name;  /* "ttft" */
  const char *label; /* "Time to first token" */
  tp_metric_kind kind;
  tp_unit unit;
  size_t offset;          /* of the tp_stat, double or uint64_t in tp_level_result */
  const char *json_key;   /* "time_to_first_token_ms" */
  const char *genai_key;  /* GenAI-Perf's name, or NULL */
  const char *aiperf_key; /* AIPerf's name, or NULL */
  int better;             /* -1 lower is better, +1 higher is better, 0 neither */
  int decimals;           /* shown in text tables */
  unsigned flags;         /* TP_MF_* */
  const char *abbrev;     /* the sweep summary's column head ("TTFT"); "" = the name */
} tp_metric;

/* The statistics of a distribution, in the order tables show them. */
#define TP_STATS(X)          \
  X(TP_STAT_AVG, "avg", avg) \
  X(TP_STAT_MIN, "min", min) \
  X(TP_STAT_MAX, "max", max) \
  X(TP_STAT_P99, "p99", p99) \
  X(TP_STAT_P95, "p95", p95) \
  X(TP_STAT_P90, "p90", p90) \
  X(TP_STAT_P75, "p75", p75) \
  X(TP_STAT_P50, "p50", p50) \
  X(TP_STAT_P25, "p25", p25) \
  X(TP_STAT_P10, "p10", p10) \
  X(TP_STAT_P5, "p5", p5)    \
  X(TP_STAT_P1, "p1", p1)    \
  X(TP_STAT_STD, "std", std)

#define TP_STAT_ENUM(e, s, f) e,
typedef enum tp_stat_id { TP_STATS(TP_STAT_ENUM) TP_STAT_COUNT } tp_stat_id;
#undef TP_STAT_ENUM

/* Every row, in report order. */
const tp_metric *tp_metrics(size_t *n);
/* The row named name, or NULL. */
const tp_metric *tp_metric_find(const char *name);
/* The row a gate or a rule names in its first len bytes, "METRIC" or
 * "METRIC.STAT" (a name may hold dots itself: "fidelity.merged_pct",
 * "fidelity.loop_lag.p99"): the whole text when it is a name, else the
 * text before its last dot, with *stat (and *stat_len) the text after it;
 * *stat = NULL when there is none.  NULL when no row matches (*stat then
 * points past the last dot, if any, so a message can say which part was
 * not known). */
const tp_metric *tp_metric_find_split(const char *s, size_t len, const char **stat, size_t *stat_len);
/* "avg" for TP_STAT_AVG; the statistic named name (-1 when none). */
const char *tp_stat_name(tp_stat_id id);
int tp_stat_find(const char *name);
/* tp_stat_find of the first len bytes of name. */
int tp_stat_find_n(const char *name, size_t len);
/* "ms", and GenAI-Perf's and AIPerf's spellings ("tokens/sec"). */
const char *tp_unit_name(tp_unit u);
const char *tp_unit_genai(tp_unit u);
const char *tp_unit_aiperf(tp_unit u);

/* The statistic id of st. */
double tp_stat_get(const tp_stat *st, tp_stat_id id);

/* The distribution of a DIST row in lr (NULL for other kinds). */
const tp_stat *tp_metric_stat(const tp_metric *m, const tp_level_result *lr);
/* Whether the row has a value in lr (a distribution with n > 0, a token
 * throughput with tokens counted, goodput with bounds set ...). */
bool tp_metric_available(const tp_metric *m, const tp_level_result *lr);
/* The row's value: the statistic st of a distribution (ignored for other
 * kinds).  Returns false when unavailable (*out untouched). */
bool tp_metric_value(const tp_metric *m, const tp_level_result *lr, tp_stat_id st, double *out);

/* One result standing for n repeated runs of a level (--num-profile-runs),
 * for judging them together: a copy of runs[0] in which every row's value
 * is the mean over the runs that have it (each statistic of a distribution
 * apart), and every count the sum (a failure in any run counts). */
void tp_metric_mean_runs(const tp_level_result *runs, size_t n, tp_level_result *out);

/* Reads a threshold in the row's unit: "250ms", "0.25s" or "250" (ms) for
 * times, "5%" or "0.05" for fractions, a plain number otherwise.  Returns 0
 * or TP_EINVAL with a phrase in err. */
int tp_metric_parse_threshold(const tp_metric *m, const char *s, double *out, char *err, size_t errlen);

/* A comma-separated list of every name, for messages ("ttft, itl, ..."). */
void tp_metric_names(char *out, size_t outlen, bool dist_only);

#endif

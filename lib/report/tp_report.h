/* Reports: the console tables and the JSON document.  Views of the level
 * results; nothing here computes a metric. */
#ifndef TP_REPORT_H
#define TP_REPORT_H

#include <stdio.h>

#include "util/tp_common.h"
#include "tokperf/tokperf.h"

/* A capacity search's outcome (docs/search.md), for the reports: every
 * probe with the figures its SLOs were judged on. */
#define TP_SLO_MAX 16
typedef struct tp_probe_row {
  double load;                /* requests/s or requests in flight */
  bool passed;
  size_t level;               /* its index among the report's levels */
  double value[TP_SLO_MAX];   /* the SLO's figure (NAN = unavailable) */
  bool held[TP_SLO_MAX];
  bool error_rate_held;       /* --max-error-rate (true when unset) */
  uint64_t requests;          /* sent, warm-up included */
  double seconds;             /* the level's wall time */
} tp_probe_row;

typedef struct tp_search_summary {
  tp_search_mode mode;
  const char *const *slos;    /* the --slo expressions (borrowed) */
  size_t n_slos;
  double max_error_rate;      /* < 0 = not an SLO */
  const tp_probe_row *probes;
  size_t n_probes;
  const char *outcome;        /* "found", "every probe passed", ... */
  bool have_pass, have_fail;
  double boundary;            /* the highest load that met every SLO */
  double first_fail;          /* the lowest load that did not */
  double min, max, rel_precision, abs_precision;
  unsigned max_probes;
} tp_search_summary;

typedef struct tp_report_input {
  const tp_config *cfg;          /* the effective configuration */
  const char *target;            /* "127.0.0.1:8001" (resolved server) */
  const char *tokenizer_desc;    /* "sentencepiece (path)" or NULL = none */
  const char *dataset_desc;      /* "prompts.jsonl (1376 prompts)" */
  const tp_level_result *levels; /* one per completed level */
  size_t n_levels;
  bool interrupted;              /* the sweep stopped early */
  const tp_mock_config *mock_config; /* the built-in mock the run measured, or NULL */
  bool have_mock_stats;              /* its counters after the sweep */
  tp_mock_stats mock_stats;
  const tp_search_summary *search; /* NULL = no capacity search */
} tp_report_input;

/* The per-level tables (one per level, GenAI-Perf-like, times in ms), then
 * one summary table with a row per level. */
void tp_report_text(FILE *out, const tp_report_input *in);

/* Writes the JSON document to path: {"schema": "tokperf.report/1",
 * "generator": {...}, "config": {...}, "levels": [...]} with every figure
 * carrying its unit in its key name (ttft_ms, output_token_throughput_tps).
 * Returns 0, or TP_EIO with "cannot write PATH: reason" in err. */
int tp_report_json(const char *path, const tp_report_input *in, char *err, size_t errlen);
/* The same document written to out (no file of its own: --format json on
 * stdout).  Returns 0, TP_ENOMEM or TP_EIO with a message in err. */
int tp_report_json_fp(FILE *out, const tp_report_input *in, char *err, size_t errlen);

/* perf_analyzer's latency report (its -f FILE) over levels (in sweep
 * order): the header and one row per level in increasing order of
 * throughput.  composing NULL: the target model's file, with the latency
 * percentiles (and with verbose the --verbose-csv columns); else the rows of
 * that composing model, as perf_analyzer writes beside the main file.
 * Returns 0 or TP_ENOMEM. */
int tp_report_pa_csv(tp_buf *out, const tp_level_result *levels, size_t n, const char *composing,
                     bool verbose);
/* Writes that report to path, and beside it one file per composing model
 * of an ensemble (dir/NAME_vVERSION.FILE, as perf_analyzer names them).
 * A path that is not a regular file (a FIFO, /dev/null) gets the report in
 * place and no neighbours: the composing files go to sibling_dir (the
 * artifact directory) instead, or, without one, are not written and err
 * says so while 0 is returned (err is "" otherwise).  Returns 0, or
 * TP_EIO / TP_ENOMEM with "cannot write PATH: reason" in err. */
int tp_report_pa_csv_files(const char *path, const char *sibling_dir, const tp_level_result *levels, size_t n,
                           bool verbose, char *err, size_t errlen);

#endif

/* Reports: the console tables and the JSON document.  Views of the level
 * results; nothing here computes a metric. */
#ifndef TP_REPORT_H
#define TP_REPORT_H

#include <stdio.h>

#include "util/tp_common.h"
#include "tokperf/tokperf.h"

typedef struct tp_report_input {
  const tp_config *cfg;          /* the effective configuration */
  const char *target;            /* "127.0.0.1:8001" (resolved server) */
  const char *tokenizer_desc;    /* "sentencepiece (path)" or NULL = none */
  const char *dataset_desc;      /* "prompts.jsonl (1376 prompts)" */
  const tp_level_result *levels; /* one per completed level */
  size_t n_levels;
  bool interrupted;              /* the sweep stopped early */
  bool have_mock_stats;
  tp_mock_stats mock_stats;
} tp_report_input;

/* The per-level tables (one per level, GenAI-Perf-like, times in ms), then
 * one summary table with a row per level. */
void tp_report_text(FILE *out, const tp_report_input *in);

/* Writes the JSON document to path: {"schema": "tokperf.report/1",
 * "generator": {...}, "config": {...}, "levels": [...]} with every figure
 * carrying its unit in its key name (ttft_ms, output_token_throughput_tps).
 * Returns 0, or TP_EIO with "cannot write PATH: reason" in err. */
int tp_report_json(const char *path, const tp_report_input *in, char *err, size_t errlen);

#endif

/* What the console tables (tp_report.c) and the JSON document
 * (tp_report_json.c) share: the names they both print.  Private to report/. */
#ifndef TP_REPORT_INTERNAL_H
#define TP_REPORT_INTERNAL_H

#include "tp_report.h"

const char *tp__report_backend_name(tp_backend b);
const char *tp__report_service_kind_name(tp_service_kind k);
/* What the reports call the backend: the tensor layout (tensorrtllm,
 * vllm) for Triton, which has one; for the other kinds, whose server's
 * engine the client cannot know, the API spoken (openai-chat, vllm-grpc). */
const char *tp__report_backend_label(const tp_config *cfg);
/* Where a level's output or input token counts came from: "server",
 * "client", "mixed" (some requests each), or "none" (nothing counted). */
const char *tp__report_token_source_name(const tp_level_result *lr, bool output);
/* A table of the console report's style (tp_report.c): ncols head cells,
 * nrows x ncols cells, row by row; at most 16 columns. */
void tp__report_table(FILE *out, const char *title, const char *const *head, const char *const *cells,
                      size_t ncols, size_t nrows);
/* v with decimals places and commas between thousands; "n/a" when not
 * finite. */
void tp__report_fmt_num(char *buf, size_t len, double v, int decimals);
/* The report's last section: the client's own figures per level and its
 * verdict on them (tp_report_fidelity.c). */
void tp__report_fidelity_text(FILE *out, const tp_report_input *in);

#endif

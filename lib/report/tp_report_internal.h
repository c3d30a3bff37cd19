/* What the console tables (tp_report.c) and the JSON document
 * (tp_report_json.c) share: the names they both print.  Private to report/. */
#ifndef TP_REPORT_INTERNAL_H
#define TP_REPORT_INTERNAL_H

#include "tp_report.h"

const char *tp__report_backend_name(tp_backend b);
const char *tp__report_service_kind_name(tp_service_kind k);
/* Where a level's output or input token counts came from: "server",
 * "client", "mixed" (some requests each), or "none" (nothing counted). */
const char *tp__report_token_source_name(const tp_level_result *lr, bool output);

#endif

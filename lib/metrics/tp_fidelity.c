/* The fidelity verdict (tp_fidelity.h). */
#include "tp_fidelity.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

const char *tp_fidelity_verdict_name(uint64_t verdict) {
  switch (verdict) {
    case TP_FIDELITY_OK: return "ok";
    case TP_FIDELITY_DEGRADED: return "degraded";
    case TP_FIDELITY_CLIENT_BOUND: return "client-bound";
  }
  return "?";
}

/* Appends "; " (after an earlier figure) and "WHAT V UNIT > LIMIT UNIT"
 * to buf (always terminated). */
static void add(char *buf, size_t len, const char *what, double v, const char *unit, double limit) {
  size_t o = strlen(buf);
  if (o + 1 >= len) return;
  snprintf(buf + o, len - o, "%s%s %.*f%s%s > %g%s%s", o ? "; " : "", what, *unit == '%' ? 1 : 2, v,
           *unit == '%' ? "" : " ", unit, limit, *unit == '%' ? "" : " ", unit);
}

void tp_fidelity_judge(tp_level_result *lr) {
  tp_fidelity *f = &lr->fidelity;
  char crossed[sizeof(f->reason)] = "";
  /* Late: the loop was behind its plan or its sockets. */
  bool late = false;
  if (lr->send_lag_ms.n && lr->send_lag_ms.p99 > TP_FIDELITY_SEND_LAG_P99_MS) {
    add(crossed, sizeof(crossed), "send lag p99", lr->send_lag_ms.p99, "ms", TP_FIDELITY_SEND_LAG_P99_MS);
    late = true;
  }
  /* A late loop alone degrades nothing that was stamped: every stamped
   * byte keeps its arrival time however late it is read (a burst of 256
   * answers read one after another is the common case, since a batching
   * server answers every sequence at once).  Its harm shows in the
   * figures that are counted, merged responses and late sends; it is named
   * when the client's own core was the bottleneck. */
  char loop[96] = "";
  if (f->loop_lag_ms.n && f->loop_lag_ms.p99 > TP_FIDELITY_LOOP_LAG_P99_MS) {
    add(loop, sizeof(loop), "loop lag p99", f->loop_lag_ms.p99, "ms", TP_FIDELITY_LOOP_LAG_P99_MS);
    late = true;
  }
  if (isfinite(f->merged_pct) && f->merged_pct > TP_FIDELITY_MERGED_PCT)
    add(crossed, sizeof(crossed), "merged responses", f->merged_pct, "%", TP_FIDELITY_MERGED_PCT);
  /* The same share of first responses matters more than the average: a
   * request in a hundred read late enough to merge its first two tokens
   * moves the TTFT p99 by a token's gap, while a third of a percent of
   * the gaps passes the bound above. */
  if (isfinite(f->first_merged_pct) && f->first_merged_pct > TP_FIDELITY_MERGED_PCT)
    add(crossed, sizeof(crossed), "first responses merged", f->first_merged_pct, "%", TP_FIDELITY_MERGED_PCT);
  /* A clock error of the client's own (docs/metrics.md, "The clock"):
   * never expected, always named. */
  if (lr->answers_before_send) {
    size_t o = strlen(crossed);
    if (o + 1 < sizeof(crossed))
      snprintf(crossed + o, sizeof(crossed) - o, "%s%llu answers dated before their send", o ? "; " : "",
               (unsigned long long)lr->answers_before_send);
  }
  bool busy = isfinite(f->client_cpu_pct) && f->client_cpu_pct >= TP_FIDELITY_CPU_PCT;
  f->reason[0] = 0;
  if (busy && late) {
    f->verdict = TP_FIDELITY_CLIENT_BOUND;
    snprintf(f->reason, sizeof(f->reason), "client CPU %.1f%% of a core >= %g%%; %s%s%s", f->client_cpu_pct,
             TP_FIDELITY_CPU_PCT, crossed, crossed[0] && loop[0] ? "; " : "", loop);
  } else if (crossed[0]) {
    f->verdict = TP_FIDELITY_DEGRADED;
    snprintf(f->reason, sizeof(f->reason), "%s", crossed);
  } else {
    f->verdict = TP_FIDELITY_OK;
  }
}

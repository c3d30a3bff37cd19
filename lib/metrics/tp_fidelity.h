/* The fidelity verdict: how far a level's numbers can be trusted, from the
 * client's own figures (docs/metrics.md, "Fidelity", says why each
 * threshold is where it is).
 *
 * A figure past its threshold makes the level "degraded" and is named in
 * the reason; "client-bound" is the client itself as the bottleneck: the
 * thread that runs its loop busy for most of the level and the loop late
 * (to its sends or to its reads).  A busy core alone is not enough: an
 * open loop above 50,000 requests/s spins between near deadlines on
 * purpose (util/tp_timer.c) and may keep its core busy while every
 * request leaves on time. */
#ifndef TP_FIDELITY_H
#define TP_FIDELITY_H

#include <stdint.h>

#include "tokperf/tokperf.h"

/* p99 send lag, ms: a request that leaves later than this after its
 * planned time is a "late send" (the report's count) already. */
#define TP_FIDELITY_SEND_LAG_P99_MS 1.0
/* p99 loop lag, ms: the error of every time the client takes from its own
 * clock (a socket without kernel stamps, a send) is bounded by it. */
#define TP_FIDELITY_LOOP_LAG_P99_MS 1.0
/* Merged responses, percent: above 1% of the gaps, the p99 of the pooled
 * ITL may be made of gaps the client could not see. */
#define TP_FIDELITY_MERGED_PCT 1.0
/* The loop's thread, percent of one core: at or above it, the client has
 * no room left to catch up. */
#define TP_FIDELITY_CPU_PCT 90.0

/* The verdict's name: tp_fidelity_verdict_name (tokperf.h). */
/* Sets lr->fidelity.verdict and .reason from the figures in lr (send lag,
 * and the fidelity block: loop lag, merged share, the loop's CPU); a
 * figure that is unavailable crosses nothing. */
void tp_fidelity_judge(tp_level_result *lr);

#endif

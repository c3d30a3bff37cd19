/* A level's steady state: the plateau where the requests in flight stay
 * near the target concurrency, and the figures over it, without the ramp
 * at the start and the drain at the end (docs/metrics.md, "Steady state").
 *
 * The window runs from the first moment the measured successful requests
 * in flight reach threshold_abs = ceil(threshold x target), at least 1, to
 * the last moment they fall below it; at one instant, ends are counted
 * before starts (a request that ends as another starts does not lift the
 * count).  Only the records are read, so the figures recompute from
 * records.jsonl. */
#ifndef TP_STEADY_H
#define TP_STEADY_H

#include <stddef.h>
#include <stdint.h>

#include "record/tp_record.h"
#include "tokperf/tokperf.h"

/* Fills out from recs[0..n) (warm-up records are skipped); target 0 or
 * threshold <= 0 leaves out->found false.  level_s is the level's length
 * in seconds (for the short-window mark; 0 = from the records).  Returns
 * 0, or TP_ENOMEM. */
int tp_steady_compute(tp_steady *out, const tp_record *recs, size_t n, uint32_t target, double threshold,
                      double level_s);

#endif

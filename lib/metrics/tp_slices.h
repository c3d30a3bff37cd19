/* A level's time series: its measured records cut into fixed slices of
 * time from the level's start (docs/metrics.md, "Time series").  Only the
 * records are read, so every slice recomputes from records.jsonl. */
#ifndef TP_SLICES_H
#define TP_SLICES_H

#include <stddef.h>
#include <stdint.h>

#include "record/tp_record.h"
#include "tokperf/tokperf.h"

/* A level is cut into at most this many slices: a longer level gets wider
 * slices (the width doubles until it fits), so memory stays bounded. */
#define TP_SLICES_MAX 20000

/* Cuts recs[0..n) (warm-up records left out) into slices of width_ns from
 * start_ns up to the last event of the records; *width_ns comes back
 * doubled as often as TP_SLICES_MAX needed.  *out is malloc'd (NULL and
 * *n_out 0 when no record was sent).  Returns 0, TP_EINVAL for a width of
 * 0, or TP_ENOMEM. */
int tp_slices_compute(tp_slice **out, size_t *n_out, const tp_record *recs, size_t n, uint64_t start_ns,
                      uint64_t *width_ns);

#endif

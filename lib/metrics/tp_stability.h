/* The stability rule of measurement windows, as perf_analyzer applies it.
 *
 * A level measured in windows (--measurement-interval or a request count
 * per window) is stable when its last three windows agree: the largest
 * throughput is at most (1 + pct/100) times the smallest, and the same for
 * the average latency.  A window with no throughput or no latency never
 * agrees (nothing finished in it).  Pure: no clock, no I/O. */
#ifndef TP_STABILITY_H
#define TP_STABILITY_H

#include <stdbool.h>
#include <stddef.h>

/* The number of trailing windows the rule looks at. */
#define TP_STABILITY_WINDOWS 3

/* tput[i], lat_ms[i]: window i's throughput and average latency, oldest
 * first; n windows so far.  False when n < TP_STABILITY_WINDOWS. */
bool tp_windows_stable(const double *tput, const double *lat_ms, size_t n, double pct);

#endif

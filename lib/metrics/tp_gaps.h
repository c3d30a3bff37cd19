/* The gaps between consecutive text responses of every request of a level,
 * pooled into one distribution (vLLM's ITL).
 *
 * A level of a million requests of a few hundred tokens has hundreds of
 * millions of gaps, and records let go of their response times once
 * written (tp_record_shed), so the gaps are not kept: each request's are
 * added as it ends, while its times are still in memory, into fixed-size
 * counts (440 KiB per run, reused level by level).  n, min, max, mean and
 * std are exact; a percentile is within 1/1024 of its value (gaps under
 * 1024 ns exactly).  Until a level has more than TP_GAP_POOL_EXACT_MAX gaps
 * they are kept as well (8 bytes each), and every figure is then computed
 * exactly from them (tp_stat_compute), as the other distributions are:
 * the buckets only take over for the rare level past that. */
#ifndef TP_GAPS_H
#define TP_GAPS_H

#include "record/tp_record.h"
#include "tokperf/tokperf.h"

typedef struct tp_gap_pool tp_gap_pool;

#define TP_GAP_POOL_EXACT_MAX ((size_t)1 << 20)

/* NULL when out of memory. */
tp_gap_pool *tp_gap_pool_new(void);
/* How many gaps a level may have and still get exact figures (default
 * TP_GAP_POOL_EXACT_MAX; 0 = buckets only); for tests of both paths. */
void tp_gap_pool_set_exact_max(tp_gap_pool *p, size_t n);
void tp_gap_pool_free(tp_gap_pool *p);
/* Empties the pool (a new level). */
void tp_gap_pool_reset(tp_gap_pool *p);
/* Adds one gap, in nanoseconds. */
void tp_gap_pool_add(tp_gap_pool *p, uint64_t gap_ns);
/* Adds the gaps of r, which must still hold its response times (a shed
 * record adds none): between consecutive responses of its text span
 * (tp_request_text_span).  A gap of exactly 0 (two responses sharing one
 * arrival time: one read brought both) is not added but counted
 * (tp_gap_pool_merged): the client could not see it (docs/metrics.md,
 * "Fidelity"). */
void tp_gap_pool_add_record(tp_gap_pool *p, const tp_record *r);
/* Adds the gaps vLLM's client pools (vllm bench serve's ITL): between
 * consecutive responses from the first response to the last one carrying
 * choices (tp_record.n_choice_resp; without it, the last text response),
 * a role-only first chat chunk and empty deltas included, a trailing
 * usage-only chunk left out.  Gaps of 0 go in too (and are counted):
 * vLLM's client pools the microseconds between chunks it read together. */
void tp_gap_pool_add_vllm(tp_gap_pool *p, const tp_record *r);
/* The gaps of 0 left out since the last reset. */
uint64_t tp_gap_pool_merged(const tp_gap_pool *p);
/* The distribution, in milliseconds (n == 0: no gaps). */
void tp_gap_pool_stat(const tp_gap_pool *p, tp_stat *out);

#endif

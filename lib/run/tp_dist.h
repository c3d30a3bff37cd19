/* The parts of a distributed run (docs/scale-out.md) that need no MPI: how
 * one level's load is split between ranks, the clock offset estimate, and
 * the byte format a rank's records travel in.  Pure functions: no clock, no
 * I/O, so each is tested with plain values (test/unit/test_dist.c) and the
 * record decoder is fuzzed (test/fuzz/fuzz_dist_records.c).  Built in every
 * build, so those tests run everywhere; only tp_mpi.c, which moves the
 * bytes, needs -Dmpi=enabled.  With one rank every split is the whole. */
#ifndef TP_DIST_H
#define TP_DIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "record/tp_record.h"
#include "util/tp_common.h"

/* The header that tells ranks apart in a level's payload. */
typedef struct tp_dist_level_head {
  uint32_t level;         /* sweep point index */
  uint32_t slots;         /* the rank's concurrency (or cap) share */
  uint32_t max_in_flight; /* highest in-flight count the rank saw */
  uint64_t n_records;
} tp_dist_level_head;

/* ---- splitting the load ---------------------------------------------------- */

/* Rank `rank`'s part of `total` slots (concurrency, or an in-flight cap)
 * over `size` ranks: total / size each, and the remainder one each to the
 * lowest ranks, so the parts sum to total exactly (7 over 2: 4 + 3). */
uint32_t tp_dist_share(uint32_t total, uint32_t rank, uint32_t size);

/* How many of the indices 0 .. n-1 fall to `rank` when the indices are
 * dealt out in turn (rank k takes k, k + size, k + 2 size, ...). */
uint64_t tp_dist_strided(uint64_t n, uint32_t rank, uint32_t size);

/* Rank `rank`'s part of `total` requests in proportion to its share of
 * `slots` (tp_dist_share), so that ranks with more slots get more requests
 * and every rank ends at about the same time.  Largest remainders take the
 * leftover requests (ties to the lower rank); the parts sum to total
 * exactly, and a rank with no slot gets none. */
uint64_t tp_dist_by_share(uint64_t total, uint32_t slots, uint32_t rank, uint32_t size);

/* ---- clock offsets ------------------------------------------------------------- */

/* The offset of a rank's clock from rank 0's, estimated from ping-pong
 * exchanges: rank 0 reads t0, sends, the rank reads t_remote and answers,
 * rank 0 reads t1.  The exchange with the smallest round trip is kept (the
 * least queueing); its offset is t_remote - (t0 + t1) / 2, and the true
 * offset lies within +/- (t1 - t0) / 2 of it whatever the path's asymmetry. */
typedef struct tp_clock_est {
  uint32_t samples;
  uint64_t rtt_ns;         /* the smallest round trip seen; UINT64_MAX before any */
  int64_t offset_ns;       /* remote clock minus rank 0's clock */
  uint64_t uncertainty_ns; /* half of rtt_ns, rounded up */
} tp_clock_est;

void tp_clock_est_init(tp_clock_est *e);
/* Adds one exchange; one with t1 < t0 is ignored. */
void tp_clock_est_add(tp_clock_est *e, uint64_t t0_ns, uint64_t t_remote_ns, uint64_t t1_ns);

/* Moves every timestamp of rec from a rank's clock to rank 0's time line
 * (t - offset_ns); 0 ("did not happen") stays 0. */
void tp_dist_shift_record(tp_record *rec, int64_t offset_ns);

/* ---- records on the wire ---------------------------------------------------------- */

/* What a rank sends rank 0 at the end of a level: a header and every record
 * of the level (warm-up included), each with everything the statistics and
 * the exports read (timestamps, every response time, text, reasoning,
 * counts, error).  Integers are little-endian and fixed-width, so ranks on
 * different machines agree.  Appends the header and recs[0..n) to out.
 * Returns 0 or TP_ENOMEM. */
int tp_dist_pack_level(tp_buf *out, const tp_dist_level_head *head, const tp_record *recs, size_t n);

/* Reads what tp_dist_pack_level wrote.  The header goes to *head and the
 * records to *recs (returned owned: tp_record_fini each, then free()).
 * Returns 0, TP_EPROTO for bytes that are not a whole, well-formed level
 * (nothing is returned then), or TP_ENOMEM. */
int tp_dist_unpack_level(const uint8_t *p, size_t len, tp_dist_level_head *head, tp_record **recs);

#endif

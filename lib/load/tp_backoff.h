/* Backing off a server that stopped answering (docs/metrics.md, "When the
 * server goes away").
 *
 * A request "fails to reach the server" when it ends without a byte of an
 * answer because the connection was refused, lost or timed out (classes
 * connect, tls, timeout).  Then:
 * - a closed loop's slot waits tp_backoff_delay_ns(k) before its next
 *   request, k being the slot's failures in a row (the pacer holds the
 *   slot, tp_pacer_done_hold);
 * - an open loop keeps its schedule, but while the server is away one
 *   request at a time (the probe) goes out, the first due after the back-off
 *   step ends; the others are counted as not sent;
 * - either way, once `limit` requests in a row failed to reach the server or
 *   were not sent, the level ends.
 * This module keeps the level's count (and, for the report, the longest run
 * of such requests: when it began and when the server answered again) and
 * the open loop's gate.  Pure logic: the caller passes every time. */
#ifndef TP_BACKOFF_H
#define TP_BACKOFF_H

#include <stdbool.h>
#include <stdint.h>

/* The first step and the largest (docs/metrics.md says why these). */
#define TP_BACKOFF_FIRST_NS 10000000ULL /* 10 ms */
#define TP_BACKOFF_MAX_NS 1000000000ULL /* 1 s */

typedef struct tp_backoff {
  uint64_t limit; /* the level ends after this many in a row (0 = never) */
  /* The run under way: requests in a row that failed to reach the server
   * or were not sent, and when its first one ended. */
  uint64_t streak, run_start_ns;
  bool limit_hit;
  /* Open loop: the failed probes in a row (0 = not backing off), when the
   * last one failed and when the next may leave, and whether one is out. */
  uint32_t step;
  uint64_t since_ns, until_ns;
  bool probe_out;
  /* The level's runs, and the longest one: its first failure, its length,
   * and the first answer after it (0 = none yet). */
  uint32_t runs;
  uint64_t away_ns, away_n, back_ns;
  bool longest_open; /* the longest run is the one under way */
} tp_backoff;

/* The wait after the k-th failure in a row (k >= 1): TP_BACKOFF_FIRST_NS,
 * doubled each time, at most TP_BACKOFF_MAX_NS. */
uint64_t tp_backoff_delay_ns(uint32_t k);

void tp_backoff_init(tp_backoff *b, uint64_t limit);

/* A request sent at sent_ns failed to reach the server at now_ns.  Returns
 * true once the limit is reached (and from then on). */
bool tp_backoff_failed(tp_backoff *b, uint64_t sent_ns, uint64_t now_ns);
/* A request due at now_ns was not sent (tp_backoff_may_send said no). */
bool tp_backoff_not_sent(tp_backoff *b, uint64_t now_ns);
/* The server answered a request sent at sent_ns: a byte of it arrived at
 * answer_ns.  An answer that began before the run under way began (a
 * stream cut off by the outage) ends nothing. */
void tp_backoff_answered(tp_backoff *b, uint64_t sent_ns, uint64_t answer_ns);
/* A request sent at sent_ns ended otherwise (cancelled before any answer):
 * it says nothing of the server, but a probe is no longer out. */
void tp_backoff_other(tp_backoff *b, uint64_t sent_ns);

/* Open loop: whether the request due at now_ns may leave.  Always, unless
 * the server is away: then only once the step has ended and no probe is
 * out (true makes it the probe); never once the limit is reached. */
bool tp_backoff_may_send(tp_backoff *b, uint64_t now_ns);

#endif

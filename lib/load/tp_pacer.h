/* The pacer: when each request of a level leaves.
 *
 * One interface for the three ways a level drives load:
 * - closed loop: `slots` requests in flight; a request leaves the moment a
 *   slot frees (and at the start, one per slot);
 * - open loop: requests are due at planned offsets from the level's start
 *   (an arrival schedule drawn ahead from the seed), at most `slots` in
 *   flight when a cap is set; a due request that finds the cap full waits,
 *   first come first served, and keeps its planned time, so the wait shows
 *   as send lag;
 * - trace replay: open loop with the trace's offsets.
 * and for both, sessions: a request may be one turn of a session whose next
 * turn is due a think time after the turn ends (a closed loop then counts
 * sessions in flight, an open loop starts sessions on the schedule).
 *
 * Pure logic: every call takes the time as an argument (the tp clock, in
 * ns) and nothing here reads a clock, arms a timer or touches a socket, so
 * the pacer is tested on an injected clock.  The level asks what is due
 * (tp_pacer_next) whenever it may send (at the start, on a timer, after a
 * completion), and arms one timer for tp_pacer_next_due. */
#ifndef TP_PACER_H
#define TP_PACER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum tp_pacer_mode {
  TP_PACER_CLOSED = 0, /* a fixed number in flight */
  TP_PACER_OPEN = 1    /* on a schedule of offsets */
} tp_pacer_mode;

/* The number of turns of session s and the think time before turn t (> 0)
 * of it; NULL = every session is one request. */
typedef struct tp_pacer_sessions {
  uint32_t (*turns)(void *ud, uint64_t session);
  uint64_t (*think_ns)(void *ud, uint64_t session, uint32_t turn);
  void *ud;
} tp_pacer_sessions;

typedef struct tp_pacer_opts {
  tp_pacer_mode mode;
  /* Closed loop: requests (or sessions) in flight.  Open loop: the cap on
   * requests in flight (0 = none). */
  uint32_t slots;
  /* Open loop: when each session (one request without sessions) is due,
   * in ns from the start, non-decreasing; borrowed, must outlive the
   * pacer. */
  const uint64_t *offsets;
  size_t n_offsets;
  /* How many sessions to start (UINT64_MAX: until tp_pacer_stop_at, or the
   * offsets run out). */
  uint64_t total;
  tp_pacer_sessions sessions;
} tp_pacer_opts;

/* One request the pacer releases. */
typedef struct tp_pacer_item {
  uint64_t seq;        /* requests released so far before this one: 0, 1, 2, ... */
  uint64_t session;    /* the session it belongs to: 0, 1, 2, ... in start order */
  uint32_t turn;       /* its turn within the session, from 0 */
  uint32_t turns;      /* the session's number of turns */
  uint64_t planned_ns; /* when it was meant to leave */
  /* Closed loop: the requests in a row that failed to reach the server in
   * the slot this one leaves in (tp_pacer_done_hold), so the next failure
   * backs off longer; 0 after an answer. */
  uint32_t backoff;
} tp_pacer_item;

typedef struct tp_pacer tp_pacer;

/* Returns 0, TP_EINVAL (a closed loop without slots, an open loop without
 * offsets) or TP_ENOMEM. */
int tp_pacer_new(tp_pacer **out, const tp_pacer_opts *o);
void tp_pacer_free(tp_pacer *p);

/* The level starts at t0_ns: closed-loop slots are due at once, offsets
 * count from here. */
void tp_pacer_start(tp_pacer *p, uint64_t t0_ns);

/* The next request that may leave at now_ns: true with *it filled, or false
 * when none may (nothing due yet, the cap full, or nothing left).  Call it
 * until it returns false each time the level may send. */
bool tp_pacer_next(tp_pacer *p, uint64_t now_ns, tp_pacer_item *it);

/* When the next request becomes due by time alone (a schedule offset, a
 * think time): the deadline to arm a timer for, or UINT64_MAX when only a
 * completion (or nothing) can release the next one. */
uint64_t tp_pacer_next_due(const tp_pacer *p);

/* A request released by tp_pacer_next has ended at now_ns: its slot (or
 * its session's) frees, and its session's next turn becomes due after the
 * think time. */
void tp_pacer_done(tp_pacer *p, const tp_pacer_item *it, uint64_t now_ns);

/* As tp_pacer_done, for a request that never reached the server (the
 * back-off, docs/metrics.md "When the server goes away"): in a closed loop
 * its slot stays taken until now_ns + hold_ns, and the session then
 * started in it is released with backoff set; a session with turns left
 * goes on as after tp_pacer_done (only its end frees a slot).  An open loop
 * keeps its schedule: the same as tp_pacer_done. */
void tp_pacer_done_hold(tp_pacer *p, const tp_pacer_item *it, uint64_t now_ns, uint64_t hold_ns, uint32_t backoff);

/* No session due at or after t_ns starts: the measured duration ends
 * there, or the windows have their answer, or the run was interrupted (t_ns
 * = now).  Sessions due earlier still start when the cap lets them (they
 * were planned before the end); in a closed loop a session is due when its
 * slot frees, so none starts from t_ns on.  Turns of sessions under way
 * still follow, unless drop_turns.  Calling it again moves the end only
 * earlier. */
void tp_pacer_stop_at(tp_pacer *p, uint64_t t_ns, uint64_t now_ns, bool drop_turns);

/* Takes every request that is due at now_ns but held back by the cap (a
 * session's first request or a pending turn) out of the pacer, as items
 * never sent, so the level can record them as not sent (an interruption).
 * Returns how many were written to out (at most cap); call again while it
 * returns cap. */
size_t tp_pacer_drop_waiting(tp_pacer *p, uint64_t now_ns, tp_pacer_item *out, size_t cap);

/* True when the pacer will release nothing more: stopped or out of
 * sessions, with no request waiting and no turn pending.  Requests in
 * flight do not count (the level waits for those). */
bool tp_pacer_finished(const tp_pacer *p);

/* Requests due and held back by the cap now. */
size_t tp_pacer_waiting(const tp_pacer *p, uint64_t now_ns);
/* Closed-loop slots held back by tp_pacer_done_hold now. */
uint32_t tp_pacer_held(const tp_pacer *p);
/* Requests released and not yet done. */
uint32_t tp_pacer_in_flight(const tp_pacer *p);
/* Sessions started so far. */
uint64_t tp_pacer_sessions_started(const tp_pacer *p);

#endif

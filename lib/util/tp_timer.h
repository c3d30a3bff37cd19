/* Precise timers on a libuv loop.
 *
 * libuv's own timers have millisecond resolution and fire relative to a
 * cached loop time; a mock that must send tokens exactly 10 ms apart, and a
 * scheduler that releases thousands of requests per second, need better.
 * These timers take absolute deadlines on the tp clock (CLOCK_MONOTONIC, in
 * nanoseconds), keep them in a binary min-heap, and arm one timerfd with the
 * earliest deadline (absolute, so no drift accumulates); the loop polls the
 * timerfd.  All calls must be made on the loop's thread. */
#ifndef TP_TIMER_H
#define TP_TIMER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

typedef struct tp_timers tp_timers;
typedef struct tp_timer tp_timer;
typedef void (*tp_timer_cb)(tp_timer *t, uint64_t now_ns);

struct tp_timer {
  uint64_t deadline_ns;
  size_t heap_index; /* SIZE_MAX when not armed */
  tp_timer_cb cb;
  void *data;
};

/* Returns 0, or a negative TP_E* code when the timerfd cannot be created. */
int tp_timers_new(tp_timers **out, uv_loop_t *loop);
/* Closes the poll handle; frees the set after libuv's close callback.  Armed
 * timers are dropped without their callbacks being called. */
void tp_timers_close(tp_timers *ts);

/* Deadlines closer than spin_ns are waited for by polling (the loop turns
 * without sleeping until they come) instead of arming the timerfd; 0, the
 * default, never polls.  Why: where a wake-up costs more than the gap
 * between deadlines (a virtual machine's timer interrupt and context
 * switch, 10-20 us, against 10 us between requests at 100,000/s), sleeping
 * costs the time it saves and makes every deadline late by a wake-up.  The
 * loop then uses its whole CPU while deadlines are that close. */
void tp_timers_set_spin(tp_timers *ts, uint64_t spin_ns);

/* Runs the callbacks of the timers already due, now, from wherever the
 * loop is: a long piece of work (a burst of answers read in one go) calls
 * it between its steps, so a deadline that falls during the work is served
 * on time instead of after it.  Returns whether any ran.  Inside a timer
 * callback it does nothing (those already run in deadline order). */
bool tp_timers_run_due(tp_timers *ts);

void tp_timer_init(tp_timer *t, tp_timer_cb cb, void *data);
/* Arms (or re-arms) t for the absolute time deadline_ns.  A deadline in the
 * past fires on the next loop iteration.  Callbacks run in deadline order;
 * a callback may arm or stop any timer, itself included. */
void tp_timer_start(tp_timers *ts, tp_timer *t, uint64_t deadline_ns);
void tp_timer_stop(tp_timers *ts, tp_timer *t);
static inline int tp_timer_active(const tp_timer *t) { return t->heap_index != (size_t)-1; }

#endif

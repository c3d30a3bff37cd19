/* Waiting on the loop for a condition, without missing the wake-up.
 *
 * uv_run's poll phase blocks until I/O is ready or the next libuv timer is
 * due.  A callback that makes a waited-for condition true may run in any
 * phase: a libuv timer's (libcurl's timeout, a deferred start), the pending
 * queue's (a write completion), the poll's.  Run in the timer phase, it is
 * followed by a poll of the same iteration that nothing has told to return:
 * the waiter's `while (!done) uv_run(...)` only looks at `done` after that
 * poll, which, with no socket and no timer left, never returns.
 *
 * Two tools close that gap:
 * - tp_wake(loop): the condition is true now; the coming poll returns at
 *   once (uv_stop makes uv_run's poll timeout 0 and uv_run return after
 *   this iteration), so the waiter's loop sees the condition.
 * - tp_defer: work to run after this iteration's poll (a uv_check handle),
 *   as Node's setImmediate does.  A check handle alone does not stop the
 *   poll from blocking; an idle handle, active exactly while work is
 *   queued, makes that poll non-blocking. */
#ifndef TP_WAKE_H
#define TP_WAKE_H

#include <stdbool.h>

#include <uv.h>

/* Makes the loop's next poll return at once and uv_run return after the
 * current iteration.  Call it from the callback that makes a waiter's
 * condition true; the waiter loops on its condition around uv_run. */
static inline void tp_wake(uv_loop_t *loop) { uv_stop(loop); }

typedef struct tp_defer tp_defer;
typedef void (*tp_defer_cb)(tp_defer *d);

struct tp_defer {
  uv_check_t check;
  uv_idle_t idle;
  tp_defer_cb cb;
  void *data;
  bool armed;
};

/* Initialises both handles on loop (they are not active yet). */
void tp_defer_init(tp_defer *d, uv_loop_t *loop, tp_defer_cb cb, void *data);
/* Runs cb once after the current (or next) poll phase, which will not
 * block.  Arming an armed defer does nothing. */
void tp_defer_arm(tp_defer *d);
/* Cancels a pending run (cb is not called). */
void tp_defer_disarm(tp_defer *d);
/* Closes both handles; the memory may be released once the loop has run
 * their close callbacks (uv_walk/uv_run at teardown). */
void tp_defer_close(tp_defer *d);

#endif

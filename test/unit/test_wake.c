/* tp_wake and tp_defer (issue #13): a condition made true in the timer
 * phase of the loop must not wait for an I/O event that never comes.
 *
 * Each case runs the loop with a watchdog: a 2 s libuv timer that keeps the
 * loop alive, as an open connection would, and fails the case if it fires
 * first.  A poll that blocks when it should not sleeps until the watchdog,
 * so the cases also check that the wait took well under its 2 s. */
#include <uv.h>

#include "tp_test.h"
#include "util/tp_common.h"
#include "util/tp_wake.h"

#define WATCHDOG_MS 2000

typedef struct ctx {
  uv_loop_t loop;
  uv_timer_t trigger, watchdog;
  tp_defer defer;
  bool done, deferred_ran, watchdog_fired;
  int defer_runs;
} ctx;

static void on_watchdog(uv_timer_t *t) {
  ctx *c = t->data;
  c->watchdog_fired = true;
  uv_stop(&c->loop);
}

static void on_deferred(tp_defer *d) {
  ctx *c = d->data;
  c->deferred_ran = true;
  c->defer_runs++;
  c->done = true;
  tp_wake(&c->loop);
}

/* Sets the waited-for flag from a timer callback: the timer phase comes
 * before the poll of the same iteration. */
static void on_trigger_wake(uv_timer_t *t) {
  ctx *c = t->data;
  c->done = true;
  tp_wake(&c->loop);
}

static void on_trigger_defer(uv_timer_t *t) {
  ctx *c = t->data;
  tp_defer_arm(&c->defer);
  tp_defer_arm(&c->defer); /* arming twice runs it once */
}

static void setup(ctx *c) {
  memset(c, 0, sizeof(*c));
  uv_loop_init(&c->loop);
  uv_timer_init(&c->loop, &c->trigger);
  uv_timer_init(&c->loop, &c->watchdog);
  c->trigger.data = c->watchdog.data = c;
  tp_defer_init(&c->defer, &c->loop, on_deferred, c);
  uv_timer_start(&c->watchdog, on_watchdog, WATCHDOG_MS, 0);
}

static void teardown(ctx *c) {
  uv_close((uv_handle_t *)&c->trigger, NULL);
  uv_close((uv_handle_t *)&c->watchdog, NULL);
  tp_defer_close(&c->defer);
  uv_run(&c->loop, UV_RUN_DEFAULT);
  CHECK(uv_loop_close(&c->loop) == 0, "the loop closes with no handle left");
}

int main(void) {
  ctx c;

  setup(&c);
  uv_timer_start(&c.trigger, on_trigger_wake, 5, 0);
  uint64_t t0 = tp_now_ns();
  while (!c.done && !c.watchdog_fired) uv_run(&c.loop, UV_RUN_ONCE);
  CHECK(c.done && !c.watchdog_fired, "tp_wake: a flag set in the timer phase ends the wait at once");
  CHECK((tp_now_ns() - t0) < 1000 * TP_NS_PER_MS, "tp_wake: the wait took under a second");
  teardown(&c);

  setup(&c);
  uv_timer_start(&c.trigger, on_trigger_defer, 5, 0);
  t0 = tp_now_ns();
  while (!c.done && !c.watchdog_fired) uv_run(&c.loop, UV_RUN_DEFAULT);
  CHECK(c.deferred_ran && !c.watchdog_fired, "tp_defer: work armed in the timer phase runs without an I/O event");
  CHECK_INT(c.defer_runs, 1, "tp_defer: armed twice, it runs once");
  CHECK((tp_now_ns() - t0) < 1000 * TP_NS_PER_MS, "tp_defer: it ran within a second");
  teardown(&c);

  setup(&c);
  tp_defer_arm(&c.defer);
  tp_defer_disarm(&c.defer);
  uv_timer_start(&c.trigger, on_trigger_wake, 5, 0);
  while (!c.done && !c.watchdog_fired) uv_run(&c.loop, UV_RUN_ONCE);
  CHECK(!c.deferred_ran, "tp_defer: a disarmed defer does not run");
  teardown(&c);
  return tp_test_done();
}

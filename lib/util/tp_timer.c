#include "tp_timer.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config.h"
#include "tp_common.h"

#if !TP_HAVE_TIMERFD
#error "tp_timer needs timerfd (Linux); no fallback is implemented"
#endif
#include <sys/timerfd.h>

/* A timer lives in one of three places, told apart by heap_index:
 *   SIZE_MAX              not armed;
 *   < RUNNING             a slot of the heap;
 *   RUNNING | i           slot i of the batch being dispatched right now.
 * The batch exists so that a timer started from a callback with a deadline
 * that has already passed waits for the next loop iteration, as the header
 * promises, instead of running in the same pass: a chain of late timers
 * then cannot starve the socket I/O that the loop has to do between them.
 * Keeping batch slots in heap_index lets tp_timer_stop take a timer out of
 * the batch in O(1), so a callback may stop, and then free, another timer
 * that was due in the same pass. */
#define RUNNING (((size_t)-1 >> 1) + 1)
#define NOT_ARMED ((size_t)-1)

struct tp_timers {
  uv_poll_t poll;
  uv_idle_t idle; /* running while the next deadline is polled for */
  bool idle_on;
  uint64_t spin_ns; /* see tp_timers_set_spin */
  int open_handles;
  int fd;
  tp_timer **heap;
  size_t n, cap;
  tp_timer **batch; /* timers due in the current dispatch */
  size_t batch_n, batch_cap;
  bool dispatching;
  bool closing;
  uint64_t armed_ns; /* deadline the timerfd is set to; 0 = disarmed */
};

/* ---- heap ---------------------------------------------------------------- */

static void heap_set(tp_timers *ts, size_t i, tp_timer *t) {
  ts->heap[i] = t;
  t->heap_index = i;
}

static void sift_up(tp_timers *ts, size_t i) {
  tp_timer *t = ts->heap[i];
  while (i > 0) {
    size_t parent = (i - 1) / 2;
    if (ts->heap[parent]->deadline_ns <= t->deadline_ns) break;
    heap_set(ts, i, ts->heap[parent]);
    i = parent;
  }
  heap_set(ts, i, t);
}

static void sift_down(tp_timers *ts, size_t i) {
  tp_timer *t = ts->heap[i];
  for (;;) {
    size_t l = 2 * i + 1;
    if (l >= ts->n) break;
    size_t c = l;
    if (l + 1 < ts->n && ts->heap[l + 1]->deadline_ns < ts->heap[l]->deadline_ns) c = l + 1;
    if (t->deadline_ns <= ts->heap[c]->deadline_ns) break;
    heap_set(ts, i, ts->heap[c]);
    i = c;
  }
  heap_set(ts, i, t);
}

static void heap_remove(tp_timers *ts, tp_timer *t) {
  size_t i = t->heap_index;
  t->heap_index = NOT_ARMED;
  ts->n--;
  if (i == ts->n) return;
  heap_set(ts, i, ts->heap[ts->n]);
  /* The moved element may belong above or below slot i. */
  if (i > 0 && ts->heap[(i - 1) / 2]->deadline_ns > ts->heap[i]->deadline_ns)
    sift_up(ts, i);
  else
    sift_down(ts, i);
}

static int grow(tp_timer ***arr, size_t *cap, size_t need) {
  if (need <= *cap) return 0;
  size_t c = *cap ? *cap * 2 : 64;
  while (c < need) c *= 2;
  tp_timer **p = realloc(*arr, c * sizeof(*p));
  if (!p) return TP_ENOMEM;
  *arr = p;
  *cap = c;
  return 0;
}

/* ---- timerfd ------------------------------------------------------------- */

static void on_idle(uv_idle_t *h);

/* Polls for the next deadline rather than sleeping when it is within
 * spin_ns (see tp_timers_set_spin); returns whether it does. */
static bool spin(tp_timers *ts) {
  bool near = ts->spin_ns && ts->n && ts->heap[0]->deadline_ns <= tp_now_ns() + ts->spin_ns;
  if (near && !ts->idle_on) uv_idle_start(&ts->idle, on_idle);
  if (!near && ts->idle_on) uv_idle_stop(&ts->idle);
  ts->idle_on = near;
  return near;
}

static void arm(tp_timers *ts) {
  /* A polled deadline leaves the timerfd as it is: a wake-up for an
   * earlier deadline finds nothing due and re-arms. */
  if (spin(ts)) return;
  /* An empty heap leaves the timerfd armed: a stray wake-up that finds
   * nothing due costs less than a second syscall per stop. */
  if (!ts->n) return;
  /* it_value zero would disarm the timerfd, so the earliest representable
   * deadline is 1 ns; any deadline in the past fires at once. */
  uint64_t want = ts->heap[0]->deadline_ns ? ts->heap[0]->deadline_ns : 1;
  if (want == ts->armed_ns) return;
  struct itimerspec its;
  memset(&its, 0, sizeof(its));
  its.it_value.tv_sec = (time_t)(want / TP_NS_PER_S);
  its.it_value.tv_nsec = (long)(want % TP_NS_PER_S);
  if (timerfd_settime(ts->fd, TFD_TIMER_ABSTIME, &its, NULL) == 0) ts->armed_ns = want;
}

static void dispatch(tp_timers *ts) {
  /* One clock read per wake-up: every callback of the batch gets the same
   * now_ns, the time the batch was found due. */
  uint64_t now = tp_now_ns();
  ts->batch_n = 0;
  while (ts->n && ts->heap[0]->deadline_ns <= now) {
    if (grow(&ts->batch, &ts->batch_cap, ts->batch_n + 1)) break; /* rest waits */
    tp_timer *t = ts->heap[0];
    heap_remove(ts, t);
    t->heap_index = RUNNING | ts->batch_n;
    ts->batch[ts->batch_n++] = t;
  }
  ts->dispatching = true;
  for (size_t i = 0; i < ts->batch_n && !ts->closing; i++) {
    tp_timer *t = ts->batch[i];
    if (!t) continue; /* stopped or re-armed by an earlier callback */
    ts->batch[i] = NULL;
    t->heap_index = NOT_ARMED;
    t->cb(t, now);
  }
  ts->dispatching = false;
  ts->batch_n = 0;
  if (!ts->closing) {
    /* If the allocation above failed, timers still due remain in the heap;
     * forcing a re-arm makes the timerfd fire again at once for them. */
    ts->armed_ns = 0;
    arm(ts);
  }
}

/* Each turn of the loop while a near deadline is polled for. */
static void on_idle(uv_idle_t *h) {
  tp_timers *ts = h->data;
  if (ts->closing) return;
  if (ts->n && ts->heap[0]->deadline_ns <= tp_now_ns()) {
    dispatch(ts);
    return;
  }
  ts->armed_ns = 0;
  arm(ts); /* the deadline moved away, or no timer is left: sleep again */
}

static void on_poll(uv_poll_t *p, int status, int events) {
  tp_timers *ts = p->data;
  (void)status;
  (void)events;
  dispatch(ts);
  /* Re-arming a timerfd resets its expiration count, which clears the
   * readable state: only a timerfd left as it fired (no timer left, or the
   * re-arm failed) needs the read, one system call less per wake-up.
   * EAGAIN just means another wake-up already consumed it. */
  if (!ts->closing && ts->armed_ns == 0) {
    uint64_t expirations;
    ssize_t r = read(ts->fd, &expirations, sizeof(expirations));
    (void)r;
  }
}

static void on_close(uv_handle_t *h) {
  tp_timers *ts = h->data;
  if (--ts->open_handles > 0) return;
  close(ts->fd);
  free(ts->heap);
  free(ts->batch);
  free(ts);
}

/* ---- API ----------------------------------------------------------------- */

int tp_timers_new(tp_timers **out, uv_loop_t *loop) {
  *out = NULL;
  tp_timers *ts = calloc(1, sizeof(*ts));
  if (!ts) return TP_ENOMEM;
  ts->fd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
  if (ts->fd < 0) {
    free(ts);
    return TP_EIO;
  }
  if (uv_poll_init(loop, &ts->poll, ts->fd) != 0) {
    close(ts->fd);
    free(ts);
    return TP_EIO;
  }
  ts->poll.data = ts;
  ts->open_handles = 1;
  if (uv_poll_start(&ts->poll, UV_READABLE, on_poll) != 0) {
    /* The handle is initialised, so it must go through uv_close. */
    uv_close((uv_handle_t *)&ts->poll, on_close);
    return TP_EIO;
  }
  uv_idle_init(loop, &ts->idle);
  ts->idle.data = ts;
  ts->open_handles = 2;
  *out = ts;
  return 0;
}

void tp_timers_close(tp_timers *ts) {
  if (!ts || ts->closing) return;
  /* The timers themselves are not touched: their owners may already have
   * freed them, and none of them will run again. */
  ts->closing = true;
  uv_poll_stop(&ts->poll);
  uv_close((uv_handle_t *)&ts->poll, on_close);
  uv_close((uv_handle_t *)&ts->idle, on_close);
}

bool tp_timers_run_due(tp_timers *ts) {
  if (ts->closing || ts->dispatching || !ts->n || ts->heap[0]->deadline_ns > tp_now_ns()) return false;
  dispatch(ts);
  return true;
}

void tp_timers_set_spin(tp_timers *ts, uint64_t spin_ns) {
  ts->spin_ns = spin_ns;
  if (!ts->closing) arm(ts);
}

void tp_timer_init(tp_timer *t, tp_timer_cb cb, void *data) {
  t->deadline_ns = 0;
  t->heap_index = NOT_ARMED;
  t->cb = cb;
  t->data = data;
}

void tp_timer_stop(tp_timers *ts, tp_timer *t) {
  if (t->heap_index == NOT_ARMED) return;
  if (t->heap_index & RUNNING)
    ts->batch[t->heap_index & ~RUNNING] = NULL;
  else
    heap_remove(ts, t);
  t->heap_index = NOT_ARMED;
  /* The timerfd may stay armed for the removed deadline; that wake-up finds
   * nothing due and re-arms for the new earliest one. */
}

void tp_timer_start(tp_timers *ts, tp_timer *t, uint64_t deadline_ns) {
  if (ts->closing) return;
  if (t->heap_index != NOT_ARMED && !(t->heap_index & RUNNING)) {
    uint64_t old = t->deadline_ns;
    t->deadline_ns = deadline_ns;
    if (deadline_ns < old)
      sift_up(ts, t->heap_index);
    else
      sift_down(ts, t->heap_index);
  } else {
    tp_timer_stop(ts, t);
    if (grow(&ts->heap, &ts->cap, ts->n + 1)) {
      /* Out of memory: there is no error path in this API, so the timer is
       * left unarmed; tp_timer_active tells the caller. */
      return;
    }
    t->deadline_ns = deadline_ns;
    heap_set(ts, ts->n, t);
    ts->n++;
    sift_up(ts, ts->n - 1);
  }
  /* During a dispatch the timerfd is re-armed once at the end. */
  if (!ts->dispatching && (ts->armed_ns == 0 || ts->heap[0]->deadline_ns < ts->armed_ns)) arm(ts);
}

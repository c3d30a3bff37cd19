#include "tp_wake.h"

static void on_idle(uv_idle_t *h) { (void)h; }

static void on_check(uv_check_t *h) {
  tp_defer *d = h->data;
  /* Disarmed first: the callback may arm it again for the next turn. */
  tp_defer_disarm(d);
  d->cb(d);
}

void tp_defer_init(tp_defer *d, uv_loop_t *loop, tp_defer_cb cb, void *data) {
  d->cb = cb;
  d->data = data;
  d->armed = false;
  uv_check_init(loop, &d->check);
  uv_idle_init(loop, &d->idle);
  d->check.data = d;
  d->idle.data = d;
}

void tp_defer_arm(tp_defer *d) {
  if (d->armed) return;
  d->armed = true;
  uv_check_start(&d->check, on_check);
  uv_idle_start(&d->idle, on_idle);
}

void tp_defer_disarm(tp_defer *d) {
  if (!d->armed) return;
  d->armed = false;
  uv_check_stop(&d->check);
  uv_idle_stop(&d->idle);
}

void tp_defer_close(tp_defer *d) {
  tp_defer_disarm(d);
  if (!uv_is_closing((uv_handle_t *)&d->check)) uv_close((uv_handle_t *)&d->check, NULL);
  if (!uv_is_closing((uv_handle_t *)&d->idle)) uv_close((uv_handle_t *)&d->idle, NULL);
}

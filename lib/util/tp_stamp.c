#include "tp_stamp.h"

#include <stdlib.h>

#include "tp_common.h"

#define STAMP_MAGIC 0x74707374616d70ULL

typedef struct stamp {
  uint64_t magic; /* loop->data may hold something else when not installed */
  uv_prepare_t prep;
  uint64_t ns;
} stamp;

static void on_prepare(uv_prepare_t *h) {
  stamp *s = h->data;
  s->ns = 0;
}

int tp_stamp_install(uv_loop_t *loop) {
  stamp *s = calloc(1, sizeof(*s));
  if (!s) return TP_ENOMEM;
  s->magic = STAMP_MAGIC;
  uv_prepare_init(loop, &s->prep);
  s->prep.data = s;
  uv_prepare_start(&s->prep, on_prepare);
  uv_unref((uv_handle_t *)&s->prep);
  loop->data = s;
  return 0;
}

static void on_closed(uv_handle_t *h) { free(h->data); }

void tp_stamp_uninstall(uv_loop_t *loop) {
  stamp *s = loop->data;
  if (!s || s->magic != STAMP_MAGIC) return;
  loop->data = NULL;
  s->magic = 0;
  uv_close((uv_handle_t *)&s->prep, on_closed);
}

uint64_t tp_stamp_now(uv_loop_t *loop) {
  stamp *s = loop->data;
  if (!s || s->magic != STAMP_MAGIC) return tp_now_ns();
  if (!s->ns) s->ns = tp_now_ns();
  return s->ns;
}

#include "transport/tp_http_share.h"

#include <stdbool.h>
#include <stdlib.h>

typedef struct share {
  CURLSH *sh;
  uint32_t refs; /* requests using it */
  bool ended;    /* the session said it is over */
} share;

static share *find(tp_u64map *m, uint64_t session) {
  uint64_t v = 0;
  return tp_u64map_get(m, session, &v) ? (share *)(uintptr_t)v : NULL;
}

static void drop(tp_u64map *m, uint64_t session, share *s) {
  tp_u64map_del(m, session, NULL);
  curl_share_cleanup(s->sh); /* closes the session's connection */
  free(s);
}

CURLSH *tp__http_share_take(tp_u64map *m, uint64_t session) {
  share *s = find(m, session);
  if (!s) {
    s = calloc(1, sizeof(*s));
    if (!s) return NULL;
    s->sh = curl_share_init();
    /* One loop thread uses it: no lock functions are needed. */
    if (!s->sh || curl_share_setopt(s->sh, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT) != CURLSHE_OK ||
        tp_u64map_put(m, session, (uint64_t)(uintptr_t)s)) {
      if (s->sh) curl_share_cleanup(s->sh);
      free(s);
      return NULL;
    }
  }
  s->refs++;
  s->ended = false; /* a session number used again is a new session */
  return s->sh;
}

void tp__http_share_put(tp_u64map *m, uint64_t session) {
  share *s = find(m, session);
  if (s && s->refs && --s->refs == 0 && s->ended) drop(m, session, s);
}

void tp__http_share_end(tp_u64map *m, uint64_t session) {
  share *s = find(m, session);
  if (!s) return;
  s->ended = true;
  if (s->refs == 0) drop(m, session, s);
}

void tp__http_shares_free(tp_u64map *m) {
  for (size_t i = 0; i < m->cap; i++)
    if (m->keys[i]) {
      share *s = (share *)(uintptr_t)m->vals[i];
      curl_share_cleanup(s->sh);
      free(s);
    }
  tp_u64map_fini(m);
}

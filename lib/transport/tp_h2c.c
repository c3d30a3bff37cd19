#include "tp_h2c.h"

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "tp_h2c_internal.h"

/* ---- dispatch ---------------------------------------------------------- */

void tp__h2c_pool_free(tp_h2c_pool *p) {
  if (p->ssl_ctx) SSL_CTX_free(p->ssl_ctx);
  tp_slab_free(p->slab); /* every session was deleted with its connection */
  tp_u64map_fini(&p->pins);
  free(p->authority);
  free(p);
}


static void on_retry(uv_timer_t *t) {
  tp_h2c_pool *p = t->data;
  p->retry_armed = false;
  tp__h2c_pool_dispatch(p);
  tp__h2c_pool_flush(p, NULL); /* connections opened for queued calls */
}

void tp__h2c_pool_dispatch(tp_h2c_pool *p) {
  if (p->closing) return;
  while (p->pending_head) {
    conn *best = NULL, *avoided = NULL, *pinned = NULL, *joined = NULL;
    bool connecting = false;
    uint64_t avoid = p->pending_head->avoid_serial, pin = 0;
    if (p->pending_head->session) tp_u64map_get(&p->pins, p->pending_head->session, &pin);
    for (conn *c = p->conns; c; c = c->next) {
      if (c->state == C_CONNECTING) connecting = true;
      if (c->state != C_READY || c->n_streams >= c->max_streams) continue;
      /* A re-send goes to another connection than the one that refused it. */
      if (c->serial == avoid) {
        avoided = c;
        continue;
      }
      if (pin && c->serial == pin) pinned = c;
      if (c == p->hold_conn) joined = c;
      if (!best || c->n_streams < best->n_streams) best = c;
    }
    /* Under the caller's hold, calls join the connection the hold's first
     * call took (the least busy then), so that they leave in one write
     * rather than one per connection; HOLD_JOIN_MAX at most, so that a
     * large batch (a closed loop's first thousands of requests) still
     * spreads over the connections instead of queueing behind one
     * connection's flow control. */
    bool join = p->held && joined && p->hold_joined < HOLD_JOIN_MAX;
    if (join) best = joined;
    /* A session's turn goes where its earlier turns went, while it can. */
    if (pinned) best = pinned;
    /* ...unless no other can be opened. */
    if (!best && avoided && !connecting && p->n_live >= p->opts.connections + MAX_EXTRA_CONNS) best = avoided;
    if (!best) {
      /* In backoff after a failed connect: try again when it is over. */
      uint64_t now = tp_now_ns();
      if (p->next_connect_ns > now) {
        if (!connecting && !p->retry_armed) {
          uv_timer_start(&p->retry, on_retry, (p->next_connect_ns - now + TP_NS_PER_MS - 1) / TP_NS_PER_MS, 0);
          p->retry_armed = true;
        }
        return;
      }
      /* Open the asked-for connections; beyond them, open another only when
       * every open one is at its peer's limit. */
      if (p->n_live < p->opts.connections) {
        while (p->n_live < p->opts.connections)
          if (tp__h2c_conn_open(p)) break;
      } else if (!connecting && p->n_live < p->opts.connections + MAX_EXTRA_CONNS) {
        tp__h2c_conn_open(p);
      }
      return;
    }
    tp_call *c = p->pending_head;
    tp__h2c_pending_remove(p, c);
    /* Out of memory only loses the pin: the next turn picks afresh. */
    if (c->session && best->serial != pin) (void)tp_u64map_put(&p->pins, c->session, best->serial);
    int rv = tp__h2c_call_submit(best, c);
    if (rv) {
      tp__h2c_call_set_local(c, TP_GRPC_INTERNAL, TP_ERRCLASS_PROTOCOL, "cannot start stream: %s",
                     nghttp2_strerror(rv));
      tp__h2c_call_finish(c, 0, false);
      continue;
    }
    if (p->held) {
      p->hold_joined = join ? p->hold_joined + 1 : 1;
      p->hold_conn = best;
    }
    tp__h2c_conn_maybe_flush_later(best);
  }
}

/* ---- deadlines --------------------------------------------------------- */

static void on_sweep(uv_timer_t *t) {
  tp_h2c_pool *p = t->data;
  uint64_t now = tp_now_ns();
  /* Nothing with a deadline left: stop until a call brings one again. */
  bool any = false;
  for (tp_call *c = p->pending_head; c && !any; c = c->next) any = c->deadline_ns != 0;
  for (tp_call *c = p->active; c && !any; c = c->next) any = c->deadline_ns != 0 && !c->local_failed;
  if (!any) {
    uv_timer_stop(&p->sweep);
    p->sweep_running = false;
    return;
  }
  tp_call *next;
  for (tp_call *c = p->pending_head; c; c = next) {
    next = c->next;
    if (c->deadline_ns && now >= c->deadline_ns) {
      tp__h2c_pending_remove(p, c);
      tp__h2c_call_set_local(c, TP_GRPC_DEADLINE_EXCEEDED, TP_ERRCLASS_TIMEOUT,
                     "no connection to %s before the request timeout", p->authority);
      tp__h2c_call_finish(c, 0, false);
    }
  }
  for (tp_call *c = p->active; c; c = c->next) {
    if (c->deadline_ns && now >= c->deadline_ns && !c->local_failed) {
      tp__h2c_call_set_local(c, TP_GRPC_DEADLINE_EXCEEDED, TP_ERRCLASS_TIMEOUT,
                     "request timed out%s (see --request-timeout)", "");
      nghttp2_submit_rst_stream(c->conn->session, NGHTTP2_FLAG_NONE, c->stream_id, NGHTTP2_CANCEL);
      c->conn->want_flush = true;
    }
  }
  tp__h2c_pool_flush(p, NULL);
}

/* ---- public ------------------------------------------------------------ */

/* nghttp2's allocator (nghttp2_mem) over the pool's slab. */
static void *slab_malloc(size_t size, void *ud) { return tp_slab_alloc(ud, size); }
static void slab_free(void *ptr, void *ud) { tp_slab_release(ud, ptr); }
static void *slab_calloc(size_t nmemb, size_t size, void *ud) { return tp_slab_calloc(ud, nmemb, size); }
static void *slab_realloc(void *ptr, size_t size, void *ud) { return tp_slab_realloc(ud, ptr, size); }

int tp_h2c_pool_new(tp_h2c_pool **out, uv_loop_t *loop, const tp_h2c_opts *o, char *err, size_t errlen) {
  tp_h2c_pool *p = calloc(1, sizeof(*p));
  if (!p) return TP_ENOMEM;
  p->loop = loop;
  p->opts = *o;
  if (p->opts.connections == 0) p->opts.connections = 1;
  if (p->opts.max_msg_bytes == 0) p->opts.max_msg_bytes = 64u << 20;
  p->authority = tp_strndup(o->authority, strlen(o->authority));
  if (!p->authority) {
    free(p);
    return TP_ENOMEM;
  }
  snprintf(p->user_agent, sizeof(p->user_agent), "tokperf/%s", TP_VERSION);
  p->slab = tp_slab_new();
  if (p->slab) p->mem = (nghttp2_mem){p->slab, slab_malloc, slab_free, slab_calloc, slab_realloc};
  if (o->reader_thread && tp_reader_new(&p->reader, loop, tp__h2c_on_chunk) != 0) {
    tp_slab_free(p->slab);
    free(p->authority);
    free(p);
    tp_seterr(err, errlen, "cannot start the socket reader thread (--reader-thread)");
    return TP_EIO;
  }
  if (o->tls) {
    int rv = tp__h2c_make_ssl_ctx(p, err, errlen);
    if (rv) {
      tp_reader_close(p->reader);
      tp_slab_free(p->slab);
      free(p->authority);
      free(p);
      return rv;
    }
  }
  uv_timer_init(loop, &p->sweep);
  p->sweep.data = p;
  uv_timer_init(loop, &p->retry);
  p->retry.data = p;
  p->open_handles = 2;
  *out = p;
  return 0;
}

int tp_h2c_call(tp_h2c_pool *p, const char *path, const uint8_t *body, size_t len,
                uint64_t timeout_ns, const tp_call_cbs *cbs, void *user_data, tp_call **out) {
  return tp_h2c_call_session(p, 0, path, body, len, timeout_ns, cbs, user_data, out);
}

void tp_h2c_session_end(tp_h2c_pool *p, uint64_t session) { tp_u64map_del(&p->pins, session, NULL); }

int tp_h2c_call_session(tp_h2c_pool *p, uint64_t session, const char *path, const uint8_t *body, size_t len,
                        uint64_t timeout_ns, const tp_call_cbs *cbs, void *user_data, tp_call **out) {
  return tp_h2c_call_traced(p, session, path, body, len, timeout_ns, NULL, cbs, user_data, out);
}

int tp_h2c_call_traced(tp_h2c_pool *p, uint64_t session, const char *path, const uint8_t *body, size_t len,
                       uint64_t timeout_ns, const char *traceparent, const tp_call_cbs *cbs, void *user_data,
                       tp_call **out) {
  if (p->closing || !cbs || !cbs->on_close || !cbs->on_message) return TP_EINVAL;
  /* The call, its path and its body in one block of the pool's slab. */
  size_t path_len = strlen(path);
  if (len > SIZE_MAX - sizeof(tp_call) - path_len - 1) return TP_ENOMEM;
  size_t size = sizeof(tp_call) + path_len + 1 + len;
  tp_call *c = p->slab ? tp_slab_alloc(p->slab, size) : malloc(size);
  if (!c) return TP_ENOMEM;
  memset(c, 0, sizeof(*c));
  c->pool = p;
  c->session = session;
  c->cbs = *cbs;
  c->user_data = user_data;
  c->grpc_status = -1;
  if (traceparent) snprintf(c->traceparent, sizeof(c->traceparent), "%s", traceparent);
  c->path = (char *)(c + 1);
  memcpy(c->path, path, path_len + 1);
  c->body = (uint8_t *)c->path + path_len + 1;
  if (len) memcpy(c->body, body, len);
  c->body_len = len;
  tp_grpc_reader_init(&c->reader, p->opts.max_msg_bytes);
  c->timeout_ns = timeout_ns;
  if (timeout_ns) {
    c->deadline_ns = tp_now_ns() + timeout_ns;
    if (!p->sweep_running) {
      uv_timer_start(&p->sweep, on_sweep, DEADLINE_SWEEP_MS, DEADLINE_SWEEP_MS);
      p->sweep_running = true;
    }
  }
  p->n_calls++;
  if (out) *out = c;
  tp__h2c_pending_push(p, c);
  tp__h2c_pool_dispatch(p);
  return 0;
}

void tp_h2c_cancel(tp_call *c) {
  tp_h2c_pool *p = c->pool;
  if (!c->in_active) {
    /* Still queued: nothing went on the wire. */
    tp__h2c_pending_remove(p, c);
    tp__h2c_call_set_local(c, TP_GRPC_CANCELLED, TP_ERRCLASS_CANCELLED, "cancelled%s", "");
    tp__h2c_call_finish(c, 0, false);
    return;
  }
  tp__h2c_call_set_local(c, TP_GRPC_CANCELLED, TP_ERRCLASS_CANCELLED, "cancelled%s", "");
  nghttp2_submit_rst_stream(c->conn->session, NGHTTP2_FLAG_NONE, c->stream_id, NGHTTP2_CANCEL);
  tp__h2c_conn_maybe_flush_later(c->conn);
}

void tp_h2c_pool_hold(tp_h2c_pool *p, bool hold) {
  if (hold) {
    p->held++;
    return;
  }
  if (p->held > 0 && --p->held == 0) {
    p->hold_conn = NULL;
    if (!p->closing) tp__h2c_pool_flush(p, NULL);
  }
}

void tp_h2c_cancel_all(tp_h2c_pool *p) {
  while (p->pending_head) {
    tp_call *c = p->pending_head;
    tp__h2c_pending_remove(p, c);
    tp__h2c_call_set_local(c, TP_GRPC_CANCELLED, TP_ERRCLASS_CANCELLED, "cancelled: the grace period ran out%s", "");
    tp__h2c_call_finish(c, 0, false);
  }
  for (tp_call *c = p->active; c; c = c->next) {
    if (c->local_failed) continue;
    tp__h2c_call_set_local(c, TP_GRPC_CANCELLED, TP_ERRCLASS_CANCELLED, "cancelled: the grace period ran out%s", "");
    nghttp2_submit_rst_stream(c->conn->session, NGHTTP2_FLAG_NONE, c->stream_id, NGHTTP2_CANCEL);
    c->conn->want_flush = true;
  }
  tp__h2c_pool_flush(p, NULL);
}

size_t tp_h2c_active_calls(const tp_h2c_pool *p) { return p->n_calls; }
uint32_t tp_h2c_max_streams_seen(const tp_h2c_pool *p) { return p->max_streams_seen; }
uint32_t tp_h2c_connections_opened(const tp_h2c_pool *p) { return p->conns_opened; }

static void on_sweep_closed(uv_handle_t *h) {
  tp_h2c_pool *p = h->data;
  if (--p->open_handles == 0) tp__h2c_pool_free(p);
}

void tp_h2c_pool_close(tp_h2c_pool *p) {
  p->closing = true;
  while (p->pending_head) {
    tp_call *c = p->pending_head;
    tp__h2c_pending_remove(p, c);
    tp__h2c_call_set_local(c, TP_GRPC_CANCELLED, TP_ERRCLASS_CANCELLED, "cancelled: the run is closing%s", "");
    tp__h2c_call_finish(c, 0, false);
  }
  while (p->active) {
    tp_call *c = p->active;
    tp__h2c_active_remove(p, c);
    nghttp2_session_set_stream_user_data(c->conn->session, c->stream_id, NULL);
    tp__h2c_call_set_local(c, TP_GRPC_CANCELLED, TP_ERRCLASS_CANCELLED, "cancelled: the run is closing%s", "");
    tp__h2c_call_finish(c, 0, false);
  }
  while (p->conns) tp__h2c_conn_fail(p->conns, "closing");
  /* Every socket is removed: the thread stops now, while its handle is
   * still the pool's to close. */
  tp_reader_close(p->reader);
  p->reader = NULL;
  uv_timer_stop(&p->sweep);
  uv_close((uv_handle_t *)&p->sweep, on_sweep_closed);
  uv_timer_stop(&p->retry);
  uv_close((uv_handle_t *)&p->retry, on_sweep_closed);
}

int tp_h2c_resolve(const char *host_port, struct sockaddr_storage *addr, char *err, size_t errlen) {
  const char *colon = strrchr(host_port, ':');
  char host[256];
  const char *port;
  if (host_port[0] == '[') {
    /* [v6addr]:port */
    const char *close = strchr(host_port, ']');
    if (!close || close[1] != ':' || (size_t)(close - host_port - 1) >= sizeof(host)) {
      tp_seterr(err, errlen, "cannot read address '%s': expected [IPv6]:PORT", host_port);
      return TP_EINVAL;
    }
    memcpy(host, host_port + 1, (size_t)(close - host_port - 1));
    host[close - host_port - 1] = 0;
    port = close + 2;
  } else {
    if (!colon || colon == host_port || (size_t)(colon - host_port) >= sizeof(host)) {
      tp_seterr(err, errlen, "cannot read address '%s': expected HOST:PORT, like localhost:8001",
                host_port);
      return TP_EINVAL;
    }
    memcpy(host, host_port, (size_t)(colon - host_port));
    host[colon - host_port] = 0;
    port = colon + 1;
  }
  if (!*port || strspn(port, "0123456789") != strlen(port) || atoi(port) <= 0 || atoi(port) > 65535) {
    tp_seterr(err, errlen, "cannot read address '%s': the port must be a number from 1 to 65535",
              host_port);
    return TP_EINVAL;
  }
  struct addrinfo hints, *res = NULL;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  int rv = getaddrinfo(host, port, &hints, &res);
  if (rv != 0 || !res) {
    tp_seterr(err, errlen, "cannot resolve '%s': %s (check the host name in --url)", host,
              gai_strerror(rv));
    return TP_ECONNECT;
  }
  memset(addr, 0, sizeof(*addr));
  memcpy(addr, res->ai_addr, res->ai_addrlen);
  freeaddrinfo(res);
  return 0;
}

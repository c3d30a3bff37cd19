/* A call's life on the HTTP/2 client: the pool's queues, its stream's
 * frames (nghttp2 callbacks), its end, and the re-send rule. */
#include "tp_h2c_internal.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- call lists --------------------------------------------------------- */

void tp__h2c_pending_push(tp_h2c_pool *p, tp_call *c) {
  c->next = NULL;
  c->prev = p->pending_tail;
  if (p->pending_tail)
    p->pending_tail->next = c;
  else
    p->pending_head = c;
  p->pending_tail = c;
}

/* A re-sent call goes first: it has waited longest. */
static void pending_push_front(tp_h2c_pool *p, tp_call *c) {
  c->prev = NULL;
  c->next = p->pending_head;
  if (p->pending_head)
    p->pending_head->prev = c;
  else
    p->pending_tail = c;
  p->pending_head = c;
}

void tp__h2c_pending_remove(tp_h2c_pool *p, tp_call *c) {
  if (c->prev) c->prev->next = c->next; else p->pending_head = c->next;
  if (c->next) c->next->prev = c->prev; else p->pending_tail = c->prev;
  c->prev = c->next = NULL;
}

static void active_push(tp_h2c_pool *p, tp_call *c) {
  c->prev = NULL;
  c->next = p->active;
  if (p->active) p->active->prev = c;
  p->active = c;
  c->in_active = true;
}

void tp__h2c_active_remove(tp_h2c_pool *p, tp_call *c) {
  if (c->prev) c->prev->next = c->next; else p->active = c->next;
  if (c->next) c->next->prev = c->prev;
  c->prev = c->next = NULL;
  c->in_active = false;
}

static void call_free(tp_call *c) {
  tp_grpc_reader_fini(&c->reader);
  free(c->grpc_message);
  /* One block with its path and body (tp_h2c_call_session). */
  if (c->pool->slab)
    tp_slab_release(c->pool->slab, c);
  else
    free(c);
}

void tp__h2c_call_set_local(tp_call *c, int status, tp_error_class cls, const char *fmt, ...) {
  if (c->local_failed) return;
  c->local_failed = true;
  c->local_status = status;
  c->local_class = cls;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(c->local_msg, sizeof(c->local_msg), fmt, ap);
  va_end(ap);
}

/* Ends a call: builds its result, runs on_close, frees it.  The call must
 * already be out of every list. */
void tp__h2c_call_finish(tp_call *c, uint32_t h2_error, bool conn_lost) {
  tp_h2c_pool *p = c->pool;
  tp_call_result res;
  memset(&res, 0, sizeof(res));
  res.sent_ns = c->sent_ns;
  res.end_ns = tp_now_ns();
  res.resends = c->resends;
  char msg[224];
  msg[0] = 0;
  if (c->local_failed) {
    res.grpc_status = c->local_status;
    res.err_class = c->local_class;
    res.message = c->local_msg;
  } else if (c->grpc_status >= 0) {
    res.grpc_status = c->grpc_status;
    res.err_class = c->grpc_status == 0 ? TP_ERRCLASS_NONE : TP_ERRCLASS_GRPC_STATUS;
    /* The server enforcing the deadline we sent is a timeout all the same,
     * whichever side's clock ran out first. */
    if (c->grpc_status == TP_GRPC_DEADLINE_EXCEEDED && c->timeout_ns) res.err_class = TP_ERRCLASS_TIMEOUT;
    if (c->grpc_status != 0) {
      snprintf(msg, sizeof(msg), "%s: %s", tp_grpc_status_name(c->grpc_status),
               c->grpc_message ? c->grpc_message : "(no grpc-message)");
      res.message = msg;
    } else {
      res.message = c->grpc_message ? c->grpc_message : "";
    }
    if (c->grpc_status == 0 && tp_grpc_reader_mid_message(&c->reader)) {
      res.grpc_status = TP_GRPC_INTERNAL;
      res.err_class = TP_ERRCLASS_PROTOCOL;
      res.message = "stream ended inside a gRPC message";
    }
  } else if (conn_lost) {
    res.grpc_status = TP_GRPC_UNAVAILABLE;
    res.err_class = c->local_class != TP_ERRCLASS_NONE ? c->local_class : TP_ERRCLASS_CONNECT;
    res.message = c->local_msg[0] ? c->local_msg : "connection lost";
  } else if (h2_error != NGHTTP2_NO_ERROR) {
    res.grpc_status = tp_grpc_status_from_rst(h2_error);
    res.err_class = TP_ERRCLASS_STREAM_RESET;
    snprintf(msg, sizeof(msg), "stream reset by %s: %s", p->authority,
             nghttp2_http2_strerror(h2_error));
    res.message = msg;
  } else if (c->http_status != 0 && c->http_status != 200) {
    res.grpc_status = tp_grpc_status_from_http(c->http_status);
    res.err_class = TP_ERRCLASS_PROTOCOL;
    snprintf(msg, sizeof(msg), "HTTP status %d without grpc-status from %s", c->http_status,
             p->authority);
    res.message = msg;
  } else {
    res.grpc_status = TP_GRPC_UNKNOWN;
    res.err_class = TP_ERRCLASS_PROTOCOL;
    snprintf(msg, sizeof(msg), "stream from %s ended without grpc-status", p->authority);
    res.message = msg;
  }
  p->n_calls--;
  c->cbs.on_close(c, &res, c->user_data);
  call_free(c);
}

/* Sends a call that ended unanswered again when the server certainly
 * did not process it (tp_grpc_may_resend): it goes back to the head of the
 * queue, as new, for another connection.  The call must already be out of
 * the active list.  Returns false when it must fail instead. */
bool tp__h2c_call_try_resend(conn *cn, tp_call *c, uint32_t rst_code, bool conn_lost) {
  tp_h2c_pool *p = cn->pool;
  tp_grpc_unanswered u = {
      .stream_id = c->stream_id,
      .on_wire = c->on_wire,
      .got_response = c->got_response,
      .local_failed = c->local_failed,
      .rst_code = rst_code,
      .conn_lost = conn_lost,
      .conn_reused = c->conn_reused,
      .goaway = cn->goaway,
      .goaway_last = cn->goaway_last,
      .resends = c->resends,
  };
  if (p->closing || !tp_grpc_may_resend(&u)) return false;
  c->resends++;
  c->avoid_serial = cn->serial;
  c->conn = NULL;
  c->stream_id = 0;
  c->body_off = 0;
  c->sent_ns = 0; /* the re-send's time is stamped when it leaves */
  c->on_wire = false;
  c->conn_reused = false;
  c->http_status = 0;
  c->grpc_status = -1;
  free(c->grpc_message);
  c->grpc_message = NULL;
  c->local_msg[0] = 0;
  c->local_class = TP_ERRCLASS_NONE;
  tp_grpc_reader_fini(&c->reader);
  tp_grpc_reader_init(&c->reader, p->opts.max_msg_bytes);
  pending_push_front(p, c);
  return true;
}

/* ---- nghttp2 callbacks -------------------------------------------------- */

static ssize_t body_read_cb(nghttp2_session *s, int32_t stream_id, uint8_t *buf, size_t length,
                            uint32_t *data_flags, nghttp2_data_source *source, void *user_data) {
  tp_call *c = source->ptr;
  size_t n = TP_MIN(length, c->body_len - c->body_off);
  memcpy(buf, c->body + c->body_off, n);
  c->body_off += n;
  /* END_STREAM on the frame carrying the last request byte (half-close). */
  if (c->body_off == c->body_len) *data_flags |= NGHTTP2_DATA_FLAG_EOF;
  return (ssize_t)n;
}

static int on_frame_send(nghttp2_session *s, const nghttp2_frame *f, void *user_data) {
  if (f->hd.type == NGHTTP2_HEADERS) {
    tp_call *c = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
    if (c) c->on_wire = true;
  }
  if ((f->hd.type == NGHTTP2_DATA || f->hd.type == NGHTTP2_HEADERS) &&
      (f->hd.flags & NGHTTP2_FLAG_END_STREAM)) {
    /* Stamped in tp__h2c_conn_flush when the bytes go to the socket: serializing
     * a wave of requests comes before writing any of them. */
    conn *cn = user_data;
    /* Where the frame ends in the write: the buffer's end so far, or, when
     * nghttp2 reports it within the call that returns its bytes, the end
     * of those bytes (tp__h2c_conn_flush moves it there). */
    sent_mark mk = {f->hd.stream_id, cn->wbuf.len};
    if (tp_buf_append(&cn->sent_ids, &mk, sizeof(mk))) return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  return 0;
}

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data) {
  if (f->hd.type != NGHTTP2_HEADERS) return 0;
  tp_call *c = nghttp2_session_get_stream_user_data(s, f->hd.stream_id);
  if (!c) return 0;
  c->got_response = true;
  /* grpc-status may come in the first block (Trailers-Only) or in trailers,
   * so both header categories are read the same way. */
  if (namelen == 7 && memcmp(name, ":status", 7) == 0) {
    int v = 0;
    for (size_t i = 0; i < valuelen && i < 3; i++) v = v * 10 + (value[i] - '0');
    c->http_status = v;
  } else if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0) {
    int st = tp_grpc_status_parse((const char *)value, valuelen);
    c->grpc_status = st < 0 ? TP_GRPC_UNKNOWN : st;
  } else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0) {
    free(c->grpc_message);
    c->grpc_message = malloc(valuelen + 1);
    if (c->grpc_message) tp_grpc_message_decode(c->grpc_message, (const char *)value, valuelen);
  }
  return 0;
}

typedef struct msg_ctx {
  tp_call *call;
  uint64_t arrival_ns;
} msg_ctx;

static int deliver_message(void *ud, const uint8_t *data, size_t len, bool compressed) {
  msg_ctx *m = ud;
  if (compressed) return TP_EUNSUPPORTED; /* we advertise identity only */
  m->call->cbs.on_message(m->call, data, len, m->arrival_ns, m->call->user_data);
  return 0;
}

static int on_data_chunk(nghttp2_session *s, uint8_t flags, int32_t stream_id, const uint8_t *data,
                         size_t len, void *user_data) {
  conn *cn = user_data;
  tp_call *c = nghttp2_session_get_stream_user_data(s, stream_id);
  if (c) c->got_response = true;
  if (!c || c->local_failed) return 0;
  msg_ctx m = {c, cn->read_ns};
  int rv = tp_grpc_reader_feed(&c->reader, data, len, deliver_message, &m);
  if (rv == TP_ETOOBIG) {
    tp__h2c_call_set_local(c, TP_GRPC_RESOURCE_EXHAUSTED, TP_ERRCLASS_PROTOCOL,
                   "response message larger than the %s limit", "receive");
  } else if (rv == TP_EUNSUPPORTED) {
    tp__h2c_call_set_local(c, TP_GRPC_INTERNAL, TP_ERRCLASS_PROTOCOL,
                   "compressed response although only identity was accepted%s", "");
  } else if (rv) {
    tp__h2c_call_set_local(c, TP_GRPC_INTERNAL, TP_ERRCLASS_PROTOCOL, "cannot read response: %s",
                   tp_strerror(rv));
  }
  if (rv) nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, stream_id, NGHTTP2_CANCEL);
  return 0;
}

static int on_frame_recv(nghttp2_session *s, const nghttp2_frame *f, void *user_data) {
  conn *cn = user_data;
  if (f->hd.type == NGHTTP2_SETTINGS && !(f->hd.flags & NGHTTP2_FLAG_ACK)) {
    cn->max_streams = nghttp2_session_get_remote_settings(s, NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS);
    if (cn->state == C_CONNECTING) cn->state = C_READY;
    cn->pool->backoff_ms = 0;
    cn->pool->next_connect_ns = 0;
    tp__h2c_pool_dispatch(cn->pool);
  } else if (f->hd.type == NGHTTP2_GOAWAY) {
    /* No new streams here; nghttp2 closes the streams above last-stream-id
     * (and those not sent yet) with REFUSED_STREAM, and they are sent again
     * elsewhere (tp__h2c_call_try_resend). */
    cn->state = C_DRAINING;
    cn->goaway = true;
    cn->goaway_last = f->goaway.last_stream_id;
    tp__h2c_pool_dispatch(cn->pool);
  }
  return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t stream_id, uint32_t error_code, void *user_data) {
  conn *cn = user_data;
  tp_call *c = nghttp2_session_get_stream_user_data(s, stream_id);
  if (!c) return 0;
  nghttp2_session_set_stream_user_data(s, stream_id, NULL);
  cn->n_streams--;
  tp__h2c_active_remove(cn->pool, c);
  if (c->got_response) cn->streams_answered++;
  if (!tp__h2c_call_try_resend(cn, c, error_code, false)) tp__h2c_call_finish(c, error_code, false);
  tp__h2c_pool_dispatch(cn->pool);
  return 0;
}


int tp__h2c_session_callbacks(nghttp2_session_callbacks **out) {
  nghttp2_session_callbacks *cbs;
  if (nghttp2_session_callbacks_new(&cbs)) return TP_ENOMEM;
  nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
  *out = cbs;
  return 0;
}

/* ---- starting a stream ------------------------------------------------- */

int tp__h2c_call_submit(conn *cn, tp_call *c) {
  tp_h2c_pool *p = cn->pool;
  char timeout[10];
  nghttp2_nv nv[16 + 32];
  size_t n = 0;
#define NV(nm, val)                                                                        \
  nv[n++] = (nghttp2_nv){(uint8_t *)(nm), (uint8_t *)(val), strlen(nm), strlen(val),     \
                         NGHTTP2_NV_FLAG_NO_COPY_NAME | NGHTTP2_NV_FLAG_NO_COPY_VALUE}
  NV(":method", "POST");
  NV(":scheme", p->ssl_ctx ? "https" : "http");
  NV(":path", c->path);
  NV(":authority", p->authority);
  if (c->timeout_ns) {
    /* grpc-timeout as early as possible: the call's
     * own, or for a re-send what is left of it. */
    uint64_t t = c->timeout_ns;
    if (c->resends) {
      uint64_t now = tp_now_ns();
      t = c->deadline_ns > now ? TP_MIN(c->deadline_ns - now, t) : 1;
    }
    tp_grpc_timeout_format(timeout, t);
    nv[n++] = (nghttp2_nv){(uint8_t *)"grpc-timeout", (uint8_t *)timeout, 12, strlen(timeout),
                           NGHTTP2_NV_FLAG_NO_COPY_NAME};
  }
  NV("te", "trailers");
  NV("content-type", "application/grpc");
  NV("grpc-accept-encoding", "identity");
  NV("user-agent", p->user_agent);
  for (size_t i = 0; i < p->opts.n_headers && n < TP_ARRAY_LEN(nv); i++)
    NV(p->opts.headers[2 * i], p->opts.headers[2 * i + 1]);
  if (c->traceparent[0] && n < TP_ARRAY_LEN(nv)) NV("traceparent", c->traceparent);
#undef NV
  nghttp2_data_provider prd;
  prd.source.ptr = c;
  prd.read_callback = body_read_cb;
  int32_t id = nghttp2_submit_request(cn->session, NULL, nv, n, &prd, c);
  if (id < 0) return id;
  c->stream_id = id;
  c->conn = cn;
  c->conn_reused = cn->streams_answered > 0;
  cn->n_streams++;
  if (cn->n_streams > p->max_streams_seen) p->max_streams_seen = cn->n_streams;
  active_push(p, c);
  return 0;
}

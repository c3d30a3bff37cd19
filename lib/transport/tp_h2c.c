#include "tp_h2c.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "config.h"
#include "transport/tp_grpc.h"
#include "util/tp_stamp.h"
#include "util/tp_u64map.h"

/* Flow-control windows.  Token streams are small, but hundreds of streams
 * share one connection window, which starts at 64 KiB. */
#define STREAM_WINDOW_BYTES (16 << 20)
#define CONN_WINDOW_BYTES (256 << 20)
#define READ_BUF_BYTES (256 << 10)
#define DEADLINE_SWEEP_MS 5
/* Connections opened beyond the asked number when every connection is at its
 * peer's stream limit. */
#define MAX_EXTRA_CONNS 64
/* Reconnect backoff after a failed connect: doubling from the first to the
 * last value.  Calls wait meanwhile (bounded by their own timeouts). */
#define BACKOFF_FIRST_MS 50
#define BACKOFF_MAX_MS 2000

typedef enum conn_state { C_CONNECTING, C_READY, C_DRAINING, C_CLOSED } conn_state;

typedef struct conn conn;

struct tp_call {
  tp_h2c_pool *pool;
  conn *conn; /* NULL while queued */
  int32_t stream_id;
  tp_call_cbs cbs;
  void *user_data;
  char *path;
  uint8_t *body;
  size_t body_len, body_off;
  uint64_t timeout_ns, deadline_ns;
  tp_grpc_reader reader;
  int http_status;
  int grpc_status; /* -1 until a grpc-status header arrives */
  char *grpc_message;
  uint64_t sent_ns;
  /* Set when the call is failed on our side (timeout, cancel, bad frame);
   * wins over whatever the stream close says. */
  bool local_failed;
  int local_status;
  tp_error_class local_class;
  char local_msg[160];
  tp_call *prev, *next; /* pool->pending or pool->active */
  bool in_active;
  /* For the re-send rule (tp_grpc_may_resend). */
  bool on_wire;           /* the HEADERS were serialized for the socket */
  bool got_response;      /* a byte of the answer came */
  bool conn_reused;       /* its connection had finished a stream before */
  uint32_t resends;
  uint64_t avoid_serial;  /* a re-send does not go back to this connection */
  uint64_t session;       /* 0, or the session whose connection it keeps to */
};

/* A request's last frame and where it ends in the connection's write. */
typedef struct sent_mark {
  int32_t stream_id;
  size_t end;
} sent_mark;

struct conn {
  tp_h2c_pool *pool;
  uv_tcp_t tcp;
  uv_connect_t connect_req;
  uv_write_t write_req;
  nghttp2_session *session;
  conn_state state;
  uint32_t n_streams;
  uint32_t max_streams;
  uint64_t read_ns; /* arrival time of the current socket read's bytes */
  int fd;           /* the socket, once it carries kernel receive stamps; else -1 */
  int busy;         /* inside mem_recv / mem_send: no flushing now */
  bool want_flush;
  bool writing;
  bool handle_open;
  tp_buf wbuf;
  /* Requests whose last byte was serialized since the last write (sent_ids)
   * or is in a write the socket has not taken in full (late_ids): their
   * send time is taken when the socket takes that byte (sent_mark). */
  tp_buf sent_ids, late_ids;
  /* TLS: the session writes and reads through memory BIOs; libuv moves
   * the ciphertext.  cbuf holds ciphertext while a write is in flight. */
  SSL *ssl;
  BIO *rbio, *wbio;
  bool hs_done;
  tp_buf cbuf;
  tp_error_class fail_class; /* class for calls failed with the connection */
  uint64_t serial;           /* 1, 2, ... in the order connections opened */
  uint64_t streams_answered; /* streams that got an answer here */
  bool goaway;               /* a GOAWAY came, with goaway_last */
  int32_t goaway_last;
  bool peer_closed;          /* the socket closed or failed (not our decision) */
  conn *next;
  uint8_t rbuf[READ_BUF_BYTES];
};

struct tp_h2c_pool {
  uv_loop_t *loop;
  tp_h2c_opts opts;
  char *authority;
  conn *conns; /* every connection not yet closed */
  uint32_t n_live;
  tp_call *pending_head, *pending_tail;
  tp_call *active; /* calls with a stream */
  size_t n_calls;
  uv_timer_t sweep;
  bool sweep_running;
  uv_timer_t retry;
  bool retry_armed;
  uint64_t backoff_ms;      /* 0 = connect at once */
  uint64_t next_connect_ns; /* no new connection before this */
  bool closing;
  int open_handles;
  uint32_t max_streams_seen;
  uint32_t conns_opened;
  char user_agent[48];
  SSL_CTX *ssl_ctx; /* NULL = plain h2c */
  /* Per session in flight, the serial of the connection its turns go to
   * (tp_h2c_call_session): a session keeps to one connection while that
   * connection lives, as a chat client holding its channel would. */
  tp_u64map pins;
};

static void pool_free(tp_h2c_pool *p) {
  if (p->ssl_ctx) SSL_CTX_free(p->ssl_ctx);
  tp_u64map_fini(&p->pins);
  free(p->authority);
  free(p);
}

static void conn_flush(conn *c);
static void conn_fail(conn *c, const char *why);
/* Short: it goes into a call's 160-byte message after the address. */
#define HTTP1_ANSWER \
  "answers HTTP/1.x, not HTTP/2: an HTTP port, not gRPC (try --service-kind openai or -i http)"
static void pool_dispatch(tp_h2c_pool *p);

/* ---- call lists --------------------------------------------------------- */

static void pending_push(tp_h2c_pool *p, tp_call *c) {
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

static void pending_remove(tp_h2c_pool *p, tp_call *c) {
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

static void active_remove(tp_h2c_pool *p, tp_call *c) {
  if (c->prev) c->prev->next = c->next; else p->active = c->next;
  if (c->next) c->next->prev = c->prev;
  c->prev = c->next = NULL;
  c->in_active = false;
}

static void call_free(tp_call *c) {
  tp_grpc_reader_fini(&c->reader);
  free(c->path);
  free(c->body);
  free(c->grpc_message);
  free(c);
}

__attribute__((format(printf, 4, 5)))
static void call_set_local(tp_call *c, int status, tp_error_class cls, const char *fmt, ...) {
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
static void call_finish(tp_call *c, uint32_t h2_error, bool conn_lost) {
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
static bool call_try_resend(conn *cn, tp_call *c, uint32_t rst_code, bool conn_lost) {
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
    /* Stamped in conn_flush when the bytes go to the socket: serializing
     * a wave of requests comes before writing any of them. */
    conn *cn = user_data;
    /* Where the frame ends in the write: the buffer's end so far, or, when
     * nghttp2 reports it within the call that returns its bytes, the end
     * of those bytes (conn_flush moves it there). */
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
    call_set_local(c, TP_GRPC_RESOURCE_EXHAUSTED, TP_ERRCLASS_PROTOCOL,
                   "response message larger than the %s limit", "receive");
  } else if (rv == TP_EUNSUPPORTED) {
    call_set_local(c, TP_GRPC_INTERNAL, TP_ERRCLASS_PROTOCOL,
                   "compressed response although only identity was accepted%s", "");
  } else if (rv) {
    call_set_local(c, TP_GRPC_INTERNAL, TP_ERRCLASS_PROTOCOL, "cannot read response: %s",
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
    pool_dispatch(cn->pool);
  } else if (f->hd.type == NGHTTP2_GOAWAY) {
    /* No new streams here; nghttp2 closes the streams above last-stream-id
     * (and those not sent yet) with REFUSED_STREAM, and they are sent again
     * elsewhere (call_try_resend). */
    cn->state = C_DRAINING;
    cn->goaway = true;
    cn->goaway_last = f->goaway.last_stream_id;
    pool_dispatch(cn->pool);
  }
  return 0;
}

static int on_stream_close(nghttp2_session *s, int32_t stream_id, uint32_t error_code, void *user_data) {
  conn *cn = user_data;
  tp_call *c = nghttp2_session_get_stream_user_data(s, stream_id);
  if (!c) return 0;
  nghttp2_session_set_stream_user_data(s, stream_id, NULL);
  cn->n_streams--;
  active_remove(cn->pool, c);
  if (c->got_response) cn->streams_answered++;
  if (!call_try_resend(cn, c, error_code, false)) call_finish(c, error_code, false);
  pool_dispatch(cn->pool);
  return 0;
}

/* ---- connections ------------------------------------------------------- */

static void conn_maybe_flush_later(conn *c) {
  if (c->busy)
    c->want_flush = true;
  else
    conn_flush(c);
}

static void on_handle_closed(uv_handle_t *h) {
  conn *c = h->data;
  tp_h2c_pool *p = c->pool;
  tp_buf_fini(&c->wbuf);
  tp_buf_fini(&c->cbuf);
  tp_buf_fini(&c->sent_ids);
  tp_buf_fini(&c->late_ids);
  free(c);
  if (--p->open_handles == 0 && p->closing) pool_free(p);
}

static void conn_unlink(conn *c) {
  tp_h2c_pool *p = c->pool;
  for (conn **pp = &p->conns; *pp; pp = &(*pp)->next) {
    if (*pp == c) {
      *pp = c->next;
      break;
    }
  }
  p->n_live--;
}

/* Tears a connection down: every call on it fails with UNAVAILABLE. */
static void conn_fail(conn *c, const char *why) {
  if (c->state == C_CLOSED) return;
  tp_h2c_pool *p = c->pool;
  bool never_ready = c->state == C_CONNECTING;
  c->state = C_CLOSED;
  conn_unlink(c);
  /* Calls on this connection. */
  tp_call *next;
  for (tp_call *call = p->active; call; call = next) {
    next = call->next;
    if (call->conn != c) continue;
    active_remove(p, call);
    if (call_try_resend(c, call, 0, c->peer_closed)) continue;
    snprintf(call->local_msg, sizeof(call->local_msg), "connection to %s lost: %s", p->authority, why);
    call->local_class = c->fail_class;
    call_finish(call, 0, true);
  }
  if (c->session) {
    nghttp2_session_del(c->session);
    c->session = NULL;
  }
  if (c->ssl) {
    SSL_free(c->ssl); /* frees both BIOs */
    c->ssl = NULL;
  }
  /* A server that cannot be reached fails the queued calls too, instead of
   * each being retried against it forever, and the next attempt waits. */
  if (never_ready && !p->closing) {
    p->backoff_ms = p->backoff_ms ? TP_MIN(p->backoff_ms * 2, (uint64_t)BACKOFF_MAX_MS) : BACKOFF_FIRST_MS;
    p->next_connect_ns = tp_now_ns() + p->backoff_ms * TP_NS_PER_MS;
    bool other = false;
    for (conn *o = p->conns; o; o = o->next) other |= o->state == C_READY;
    if (!other) {
      while (p->pending_head) {
        tp_call *call = p->pending_head;
        pending_remove(p, call);
        call_set_local(call, TP_GRPC_UNAVAILABLE, c->fail_class ? c->fail_class : TP_ERRCLASS_CONNECT, "%s", "");
        snprintf(call->local_msg, sizeof(call->local_msg), "%s%s: %s",
                 c->fail_class == TP_ERRCLASS_TLS ? "TLS with " : "cannot connect to ", p->authority, why);
        call_finish(call, 0, false);
      }
    }
  }
  if (c->handle_open) {
    c->handle_open = false;
    uv_close((uv_handle_t *)&c->tcp, on_handle_closed);
  } else {
    tp_buf_fini(&c->wbuf);
    tp_buf_fini(&c->sent_ids);
    tp_buf_fini(&c->late_ids);
    free(c);
    p->open_handles--;
  }
  if (!p->closing) pool_dispatch(p);
}

static void conn_check_done(conn *c) {
  if (c->state != C_CLOSED && c->session && !nghttp2_session_want_read(c->session) &&
      !nghttp2_session_want_write(c->session) && !c->writing)
    conn_fail(c, "session finished");
}

/* Sets the send time of the requests in marks whose last byte is within
 * the first `taken` bytes of the write (all of them when taken is SIZE_MAX)
 * and moves the others to `rest` (when not NULL).  Streams closed meanwhile
 * have no user data any more and are skipped. */
static void stamp_sent(conn *c, tp_buf *marks, size_t taken, uint64_t t_ns, tp_buf *rest) {
  size_t n = marks->len / sizeof(sent_mark);
  for (size_t i = 0; i < n; i++) {
    sent_mark mk;
    memcpy(&mk, marks->data + i * sizeof(mk), sizeof(mk));
    if (taken != SIZE_MAX && mk.end > taken) {
      if (rest && !tp_buf_append(rest, &mk, sizeof(mk))) continue;
    }
    tp_call *call = nghttp2_session_get_stream_user_data(c->session, mk.stream_id);
    if (call && !call->sent_ns) call->sent_ns = t_ns;
  }
  tp_buf_reset(marks);
}

static void on_write(uv_write_t *req, int status) {
  conn *c = req->data;
  c->writing = false;
  if (c->state == C_CLOSED) return;
  if (c->late_ids.len) stamp_sent(c, &c->late_ids, SIZE_MAX, tp_now_ns(), NULL);
  if (status < 0) {
    c->peer_closed = true;
    conn_fail(c, uv_strerror(status));
    return;
  }
  conn_flush(c);
}

/* Moves what the TLS session has written into cbuf (ciphertext). */
static int tls_drain(conn *c) {
  char tmp[16384];
  int n;
  while ((n = BIO_read(c->wbio, tmp, sizeof(tmp))) > 0)
    if (tp_buf_append(&c->cbuf, tmp, (size_t)n)) return TP_ENOMEM;
  return 0;
}

static void conn_flush(conn *c) {
  if (c->state == C_CLOSED || c->writing || !c->session) return;
  tp_buf_reset(&c->wbuf);
  c->busy++;
  /* Callbacks run inside mem_send may submit more frames (a closed stream's
   * owner starting the next request): keep going until nothing is left.
   * Over TLS nothing of HTTP/2 leaves before the handshake is done. */
  c->want_flush = !c->ssl || c->hs_done;
  while (c->want_flush) {
    c->want_flush = false;
    for (;;) {
      const uint8_t *data;
      size_t marked = c->sent_ids.len;
      ssize_t n = nghttp2_session_mem_send(c->session, &data);
      if (n < 0) {
        c->busy--;
        conn_fail(c, nghttp2_strerror((int)n));
        return;
      }
      if (n == 0) break;
      /* A DATA frame is reported sent within the call that returns its
       * bytes: a request marked during this call ends no later than them. */
      for (size_t off = marked; off < c->sent_ids.len; off += sizeof(sent_mark)) {
        sent_mark *mk = (sent_mark *)(void *)(c->sent_ids.data + off);
        mk->end = c->wbuf.len + (size_t)n;
      }
      if (tp_buf_append(&c->wbuf, data, (size_t)n)) {
        c->busy--;
        conn_fail(c, "out of memory");
        return;
      }
    }
  }
  c->busy--;
  tp_buf *out = &c->wbuf;
  if (c->ssl) {
    /* Memory BIOs never block: SSL_write takes everything at once. */
    if (c->wbuf.len && SSL_write(c->ssl, c->wbuf.data, (int)c->wbuf.len) <= 0) {
      conn_fail(c, "TLS write failed");
      return;
    }
    tp_buf_reset(&c->cbuf);
    if (tls_drain(c)) {
      conn_fail(c, "out of memory");
      return;
    }
    out = &c->cbuf;
  }
  if (out->len) {
    /* A request's send time is when the socket takes its last byte.
     * uv_write writes at once (one write at a time here), so the bytes it
     * took were taken now; the rest go as the peer reads, and their
     * requests are stamped when the write completes.  Over TLS the
     * plaintext offsets do not map onto the ciphertext: any shortfall
     * defers every request of the write. */
    uint64_t now = tp_now_ns();
    uv_buf_t b = uv_buf_init((char *)out->data, (unsigned)out->len);
    c->write_req.data = c;
    int rv = uv_write(&c->write_req, (uv_stream_t *)&c->tcp, &b, 1, on_write);
    if (rv < 0) {
      conn_fail(c, uv_strerror(rv));
      return;
    }
    c->writing = true;
    size_t left = uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp);
    size_t taken = left == 0 ? SIZE_MAX : c->ssl ? 0 : out->len - TP_MIN(left, out->len);
    stamp_sent(c, &c->sent_ids, taken, now, &c->late_ids);
  } else {
    conn_check_done(c);
  }
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  conn *c = h->data;
  (void)suggested;
  /* libuv reads right after this returns: the last moment the kernel's
   * receive stamp of the waiting bytes can be had (see tp_stamp_fd).  It is
   * the arrival time of everything this read returns, taken before parsing. */
  c->read_ns = c->fd >= 0 ? tp_stamp_fd(c->pool->loop, c->fd, sizeof(c->rbuf)) : tp_stamp_now(c->pool->loop);
  *buf = uv_buf_init((char *)c->rbuf, sizeof(c->rbuf));
}

/* Feeds plaintext to the HTTP/2 session; returns false when the connection
 * was failed. */
static bool feed_h2(conn *c, const uint8_t *data, size_t len) {
  /* An HTTP/1 server answers the client preface with a status line, which
   * HTTP/2 would read as a frame of 4.7 MB: say what the port speaks. */
  if (c->state == C_CONNECTING && len >= 7 && memcmp(data, "HTTP/1.", 7) == 0) {
    conn_fail(c, HTTP1_ANSWER);
    return false;
  }
  c->busy++;
  ssize_t rv = nghttp2_session_mem_recv(c->session, data, len);
  c->busy--;
  if (c->state == C_CLOSED) return false;
  if (rv < 0) {
    conn_fail(c, nghttp2_strerror((int)rv));
    return false;
  }
  return true;
}

/* Says why a handshake failed, in words a user can act on. */
static void tls_fail(conn *c) {
  char why[300];
  long vr = SSL_get_verify_result(c->ssl);
  if (vr != X509_V_OK)
    snprintf(why, sizeof(why), "certificate verification failed: %s (use --ca-file FILE, or --insecure)",
             X509_verify_cert_error_string(vr));
  else {
    unsigned long e = ERR_get_error();
    snprintf(why, sizeof(why), "handshake failed: %s", e ? ERR_reason_error_string(e) : "connection closed");
  }
  ERR_clear_error();
  c->fail_class = TP_ERRCLASS_TLS;
  conn_fail(c, why);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  conn *c = s->data;
  if (nread == 0) return; /* c->read_ns was set in on_alloc */
  if (nread < 0) {
    if (c->ssl && !c->hs_done) {
      tls_fail(c);
      return;
    }
    c->peer_closed = true;
    conn_fail(c, nread == UV_EOF ? "closed by the server" : uv_strerror((int)nread));
    return;
  }
  if (!c->ssl) {
    if (!feed_h2(c, (const uint8_t *)buf->base, (size_t)nread)) return;
  } else {
    BIO_write(c->rbio, buf->base, (int)nread);
    if (!c->hs_done) {
      int r = SSL_do_handshake(c->ssl);
      if (r != 1) {
        int e = SSL_get_error(c->ssl, r);
        if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) {
          tls_fail(c);
          return;
        }
      } else {
        const unsigned char *alpn = NULL;
        unsigned alpn_len = 0;
        SSL_get0_alpn_selected(c->ssl, &alpn, &alpn_len);
        if (alpn_len != 2 || memcmp(alpn, "h2", 2) != 0) {
          c->fail_class = TP_ERRCLASS_TLS;
          conn_fail(c, "the server did not agree to HTTP/2 (ALPN h2), which gRPC needs");
          return;
        }
        c->hs_done = true;
      }
    }
    if (c->hs_done) {
      uint8_t plain[16384];
      for (;;) {
        int n = SSL_read(c->ssl, plain, sizeof(plain));
        if (n > 0) {
          if (!feed_h2(c, plain, (size_t)n)) return;
          continue;
        }
        int e = SSL_get_error(c->ssl, n);
        if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) break;
        c->peer_closed = e == SSL_ERROR_ZERO_RETURN;
        conn_fail(c, e == SSL_ERROR_ZERO_RETURN ? "closed by the server (TLS close)" : "TLS read failed");
        return;
      }
    }
  }
  /* Flush this connection (replies, WINDOW_UPDATEs, new streams started by
   * callbacks, handshake records) and any other that callbacks queued work on. */
  tp_h2c_pool *p = c->pool;
  conn *next;
  for (conn *o = p->conns; o; o = next) {
    next = o->next;
    if (o == c || o->want_flush) conn_flush(o);
  }
}

static void on_connect(uv_connect_t *req, int status) {
  conn *c = req->data;
  if (c->state == C_CLOSED) return;
  if (status < 0) {
    conn_fail(c, uv_strerror(status));
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  uv_os_fd_t fd;
  if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 && tp_stamp_enable_fd(fd) == 0) c->fd = fd;
  int rv = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
  if (rv < 0) {
    conn_fail(c, uv_strerror(rv));
    return;
  }
  tp_h2c_pool *p = c->pool;
  if (p->ssl_ctx) {
    c->ssl = SSL_new(p->ssl_ctx);
    c->rbio = BIO_new(BIO_s_mem());
    c->wbio = BIO_new(BIO_s_mem());
    if (!c->ssl || !c->rbio || !c->wbio) {
      conn_fail(c, "out of memory");
      return;
    }
    SSL_set_bio(c->ssl, c->rbio, c->wbio);
    SSL_set_connect_state(c->ssl);
    if (p->opts.host && *p->opts.host) {
      /* An address is checked against the certificate's IP entries and
       * sent without SNI (which takes names only); a name gets both. */
      struct in6_addr a6;
      bool is_ip = inet_pton(AF_INET, p->opts.host, &a6) == 1 || inet_pton(AF_INET6, p->opts.host, &a6) == 1;
      if (is_ip) {
        if (!p->opts.insecure) X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(c->ssl), p->opts.host);
      } else {
        SSL_set_tlsext_host_name(c->ssl, p->opts.host);
        if (!p->opts.insecure) SSL_set1_host(c->ssl, p->opts.host);
      }
    }
    SSL_do_handshake(c->ssl); /* the ClientHello, sent by the flush below */
  }
  conn_flush(c); /* preface + SETTINGS (after the handshake over TLS) */
}

static int conn_open(tp_h2c_pool *p) {
  conn *c = calloc(1, sizeof(*c));
  if (!c) return TP_ENOMEM;
  c->pool = p;
  c->state = C_CONNECTING;
  c->fd = -1;
  tp_buf_init(&c->wbuf);
  tp_buf_init(&c->sent_ids);
  tp_buf_init(&c->late_ids);

  nghttp2_session_callbacks *cbs;
  if (nghttp2_session_callbacks_new(&cbs)) {
    free(c);
    return TP_ENOMEM;
  }
  nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
  int rv = nghttp2_session_client_new(&c->session, cbs, c);
  nghttp2_session_callbacks_del(cbs);
  if (rv) {
    free(c);
    return TP_ENOMEM;
  }
  nghttp2_settings_entry iv[] = {
    {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
    {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW_BYTES},
  };
  nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, iv, TP_ARRAY_LEN(iv));
  nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0, CONN_WINDOW_BYTES);

  uv_tcp_init(p->loop, &c->tcp);
  c->tcp.data = c;
  c->handle_open = true;
  p->open_handles++;
  c->next = p->conns;
  p->conns = c;
  p->n_live++;
  p->conns_opened++;
  c->serial = p->conns_opened;
  c->connect_req.data = c;
  rv = uv_tcp_connect(&c->connect_req, &c->tcp, (const struct sockaddr *)&p->opts.addr, on_connect);
  if (rv < 0) {
    conn_fail(c, uv_strerror(rv));
    return 0; /* the calls were failed as data */
  }
  return 0;
}

/* ---- dispatch ---------------------------------------------------------- */

static int call_submit(conn *cn, tp_call *c) {
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

static void on_retry(uv_timer_t *t) {
  tp_h2c_pool *p = t->data;
  p->retry_armed = false;
  pool_dispatch(p);
  /* Flush connections opened for queued calls. */
  conn *next;
  for (conn *c = p->conns; c; c = next) {
    next = c->next;
    if (c->want_flush) conn_flush(c);
  }
}

static void pool_dispatch(tp_h2c_pool *p) {
  if (p->closing) return;
  while (p->pending_head) {
    conn *best = NULL, *avoided = NULL, *pinned = NULL;
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
      if (!best || c->n_streams < best->n_streams) best = c;
    }
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
          if (conn_open(p)) break;
      } else if (!connecting && p->n_live < p->opts.connections + MAX_EXTRA_CONNS) {
        conn_open(p);
      }
      return;
    }
    tp_call *c = p->pending_head;
    pending_remove(p, c);
    /* Out of memory only loses the pin: the next turn picks afresh. */
    if (c->session && best->serial != pin) (void)tp_u64map_put(&p->pins, c->session, best->serial);
    int rv = call_submit(best, c);
    if (rv) {
      call_set_local(c, TP_GRPC_INTERNAL, TP_ERRCLASS_PROTOCOL, "cannot start stream: %s",
                     nghttp2_strerror(rv));
      call_finish(c, 0, false);
      continue;
    }
    conn_maybe_flush_later(best);
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
      pending_remove(p, c);
      call_set_local(c, TP_GRPC_DEADLINE_EXCEEDED, TP_ERRCLASS_TIMEOUT,
                     "no connection to %s before the request timeout", p->authority);
      call_finish(c, 0, false);
    }
  }
  for (tp_call *c = p->active; c; c = c->next) {
    if (c->deadline_ns && now >= c->deadline_ns && !c->local_failed) {
      call_set_local(c, TP_GRPC_DEADLINE_EXCEEDED, TP_ERRCLASS_TIMEOUT,
                     "request timed out%s (see --request-timeout)", "");
      nghttp2_submit_rst_stream(c->conn->session, NGHTTP2_FLAG_NONE, c->stream_id, NGHTTP2_CANCEL);
      c->conn->want_flush = true;
    }
  }
  conn *cnext;
  for (conn *c = p->conns; c; c = cnext) {
    cnext = c->next;
    if (c->want_flush) conn_flush(c);
  }
}

/* ---- public ------------------------------------------------------------ */

static int make_ssl_ctx(tp_h2c_pool *p, char *err, size_t errlen) {
  const tp_h2c_opts *o = &p->opts;
  SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());
  if (!ctx) return TP_ENOMEM;
  SSL_CTX_set_min_proto_version(ctx, TLS1_2_VERSION);
  /* gRPC runs over HTTP/2 only: offer exactly "h2". */
  static const unsigned char alpn[] = {2, 'h', '2'};
  SSL_CTX_set_alpn_protos(ctx, alpn, sizeof(alpn));
  if (o->insecure) {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
  } else {
    SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
    int ok = o->ca_file ? SSL_CTX_load_verify_locations(ctx, o->ca_file, NULL) : SSL_CTX_set_default_verify_paths(ctx);
    if (ok != 1) {
      tp_seterr(err, errlen, "cannot read the CA certificates %s (check --ca-file)", o->ca_file ? o->ca_file : "of the system");
      SSL_CTX_free(ctx);
      return TP_EINVAL;
    }
  }
  if (o->cert_file) {
    if (SSL_CTX_use_certificate_chain_file(ctx, o->cert_file) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, o->key_file ? o->key_file : o->cert_file, SSL_FILETYPE_PEM) != 1 ||
        SSL_CTX_check_private_key(ctx) != 1) {
      tp_seterr(err, errlen, "cannot use the client certificate %s with key %s (check --cert and --key)",
                o->cert_file, o->key_file ? o->key_file : o->cert_file);
      SSL_CTX_free(ctx);
      return TP_EINVAL;
    }
  }
  ERR_clear_error();
  p->ssl_ctx = ctx;
  return 0;
}

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
  if (o->tls) {
    int rv = make_ssl_ctx(p, err, errlen);
    if (rv) {
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
  if (p->closing || !cbs || !cbs->on_close || !cbs->on_message) return TP_EINVAL;
  tp_call *c = calloc(1, sizeof(*c));
  if (!c) return TP_ENOMEM;
  c->pool = p;
  c->session = session;
  c->cbs = *cbs;
  c->user_data = user_data;
  c->grpc_status = -1;
  c->path = tp_strndup(path, strlen(path));
  c->body = malloc(len ? len : 1);
  if (!c->path || !c->body) {
    free(c->path);
    free(c->body);
    free(c);
    return TP_ENOMEM;
  }
  memcpy(c->body, body, len);
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
  pending_push(p, c);
  pool_dispatch(p);
  return 0;
}

void tp_h2c_cancel(tp_call *c) {
  tp_h2c_pool *p = c->pool;
  if (!c->in_active) {
    /* Still queued: nothing went on the wire. */
    pending_remove(p, c);
    call_set_local(c, TP_GRPC_CANCELLED, TP_ERRCLASS_CANCELLED, "cancelled%s", "");
    call_finish(c, 0, false);
    return;
  }
  call_set_local(c, TP_GRPC_CANCELLED, TP_ERRCLASS_CANCELLED, "cancelled%s", "");
  nghttp2_submit_rst_stream(c->conn->session, NGHTTP2_FLAG_NONE, c->stream_id, NGHTTP2_CANCEL);
  conn_maybe_flush_later(c->conn);
}

void tp_h2c_cancel_all(tp_h2c_pool *p) {
  while (p->pending_head) {
    tp_call *c = p->pending_head;
    pending_remove(p, c);
    call_set_local(c, TP_GRPC_CANCELLED, TP_ERRCLASS_CANCELLED, "cancelled: the grace period ran out%s", "");
    call_finish(c, 0, false);
  }
  for (tp_call *c = p->active; c; c = c->next) {
    if (c->local_failed) continue;
    call_set_local(c, TP_GRPC_CANCELLED, TP_ERRCLASS_CANCELLED, "cancelled: the grace period ran out%s", "");
    nghttp2_submit_rst_stream(c->conn->session, NGHTTP2_FLAG_NONE, c->stream_id, NGHTTP2_CANCEL);
    c->conn->want_flush = true;
  }
  conn *next;
  for (conn *c = p->conns; c; c = next) {
    next = c->next;
    if (c->want_flush) conn_flush(c);
  }
}

size_t tp_h2c_active_calls(const tp_h2c_pool *p) { return p->n_calls; }
uint32_t tp_h2c_max_streams_seen(const tp_h2c_pool *p) { return p->max_streams_seen; }
uint32_t tp_h2c_connections_opened(const tp_h2c_pool *p) { return p->conns_opened; }

static void on_sweep_closed(uv_handle_t *h) {
  tp_h2c_pool *p = h->data;
  if (--p->open_handles == 0) pool_free(p);
}

void tp_h2c_pool_close(tp_h2c_pool *p) {
  p->closing = true;
  while (p->pending_head) {
    tp_call *c = p->pending_head;
    pending_remove(p, c);
    call_set_local(c, TP_GRPC_CANCELLED, TP_ERRCLASS_CANCELLED, "cancelled: the run is closing%s", "");
    call_finish(c, 0, false);
  }
  while (p->active) {
    tp_call *c = p->active;
    active_remove(p, c);
    nghttp2_session_set_stream_user_data(c->conn->session, c->stream_id, NULL);
    call_set_local(c, TP_GRPC_CANCELLED, TP_ERRCLASS_CANCELLED, "cancelled: the run is closing%s", "");
    call_finish(c, 0, false);
  }
  while (p->conns) conn_fail(p->conns, "closing");
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

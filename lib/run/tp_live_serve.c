/* The live metrics endpoint (tp_live_serve.h). */
#include "run/tp_live_serve.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* The request head                                                         */

/* The end of the head (the byte after its empty line), or 0. */
static size_t head_end(const char *buf, size_t len) {
  for (size_t i = 0; i < len; i++) {
    if (buf[i] != '\n') continue;
    if (i + 1 < len && buf[i + 1] == '\n') return i + 2;
    if (i + 2 < len && buf[i + 1] == '\r' && buf[i + 2] == '\n') return i + 3;
  }
  return 0;
}

tp_live_req tp_live_parse_request(const char *buf, size_t len, bool *head_only) {
  *head_only = false;
  if (!head_end(buf, len)) return TP_LIVE_REQ_MORE;
  /* method SP request-target SP HTTP-version (RFC 9112 section 3). */
  size_t i = 0;
  while (i < len && buf[i] >= 'A' && buf[i] <= 'Z') i++;
  size_t mlen = i;
  if (mlen == 0 || i >= len || buf[i] != ' ') return TP_LIVE_REQ_BAD;
  size_t t0 = ++i;
  while (i < len && buf[i] != ' ' && buf[i] != '\r' && buf[i] != '\n' && (unsigned char)buf[i] > 0x20) i++;
  size_t tlen = i - t0;
  if (tlen == 0 || i >= len || buf[i] != ' ') return TP_LIVE_REQ_BAD;
  i++;
  if (len - i < 8 || memcmp(buf + i, "HTTP/1.", 7) != 0 || (buf[i + 7] != '0' && buf[i + 7] != '1'))
    return TP_LIVE_REQ_BAD;
  i += 8;
  if (i < len && buf[i] == '\r') i++;
  if (i >= len || buf[i] != '\n') return TP_LIVE_REQ_BAD;
  bool get = mlen == 3 && memcmp(buf, "GET", 3) == 0;
  bool head = mlen == 4 && memcmp(buf, "HEAD", 4) == 0;
  if (!get && !head) return TP_LIVE_REQ_BAD_METHOD;
  /* The path, without its query: origin-form only (a proxy's absolute
   * form is not for this server). */
  const char *t = buf + t0;
  size_t plen = 0;
  while (plen < tlen && t[plen] != '?') plen++;
  if (t[0] != '/') return TP_LIVE_REQ_BAD;
  *head_only = head;
  if (plen == 8 && memcmp(t, "/metrics", 8) == 0) return TP_LIVE_REQ_METRICS;
  return TP_LIVE_REQ_NOT_FOUND;
}

/* ------------------------------------------------------------------------ */
/* The server                                                               */

typedef struct conn {
  tp_live_server *srv;
  uv_tcp_t tcp;
  uv_timer_t timer;
  uv_write_t wr;
  uv_shutdown_t sd;
  bool used;     /* a connection holds the slot (until its handle is closed) */
  bool closing;  /* its close has begun */
  bool answered; /* its answer is written: what it sends now is read and dropped */
  char in[TP_LIVE_REQ_MAX];
  size_t in_len;
  char hdr[256]; /* the status line and headers of its answer */
  tp_buf body;   /* reused from scrape to scrape */
} conn;

struct tp_live_server {
  uv_loop_t *loop;
  uv_tcp_t listener;
  tp_live_render_fn render;
  void *ctx;
  conn slots[TP_LIVE_SLOTS];
  bool waiting;     /* a connection waits to be accepted until a slot frees */
  bool stopping;    /* tp_live_server_close was called */
  int open_handles; /* handles not yet closed (the server is freed at 0 once stopping) */
  uint64_t scrapes;
};

static void handle_closed(uv_handle_t *h);

static void maybe_free(tp_live_server *s) {
  if (!s->stopping || s->open_handles) return;
  for (size_t i = 0; i < TP_LIVE_SLOTS; i++) tp_buf_fini(&s->slots[i].body);
  free(s);
}

static void close_handle(tp_live_server *s, uv_handle_t *h) {
  if (uv_is_closing(h)) return;
  h->data = s;
  uv_close(h, handle_closed);
}

static void accept_one(tp_live_server *s);

static void conn_closed(uv_handle_t *h) {
  conn *c = h->data;
  tp_live_server *s = c->srv;
  c->used = false;
  c->closing = false;
  s->open_handles--;
  if (s->stopping) {
    maybe_free(s);
    return;
  }
  /* A connection that waited for a slot takes this one. */
  if (s->waiting) accept_one(s);
}

static void conn_close(conn *c) {
  if (c->closing) return;
  c->closing = true;
  uv_timer_stop(&c->timer);
  /* Closing the handle cancels a write or a shutdown still pending
   * (a client that reads nothing): their callbacks see UV_ECANCELED. */
  uv_close((uv_handle_t *)&c->tcp, conn_closed);
}

static void on_timeout(uv_timer_t *t) {
  conn_close(t->data);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  (void)suggested;
  conn *c = h->data;
  /* After the answer, what the client still sends is read into the same
   * buffer and dropped. */
  if (c->answered) c->in_len = 0;
  *buf = uv_buf_init(c->in + c->in_len, (unsigned)(sizeof(c->in) - c->in_len));
}

static void on_shutdown(uv_shutdown_t *sd, int status) {
  conn *c = sd->data;
  /* The answer and its FIN are out: the connection closes once the
   * client closes its side (so unread bytes of its never turn the close
   * into a reset that could cut the answer), or at the timeout. */
  if (status < 0 || c->closing) {
    conn_close(c);
    return;
  }
}

static void on_written(uv_write_t *wr, int status) {
  conn *c = wr->data;
  if (status < 0 || c->closing) {
    conn_close(c); /* the client went away, or the timeout closed it */
    return;
  }
  c->sd.data = c;
  if (uv_shutdown(&c->sd, (uv_stream_t *)&c->tcp, on_shutdown)) conn_close(c);
}

static void answer(conn *c, tp_live_req what, bool head_only) {
  tp_live_server *s = c->srv;
  static const char *const reason[] = {"", "200 OK", "404 Not Found", "405 Method Not Allowed",
                                       "400 Bad Request"};
  const char *type = "text/plain; charset=utf-8";
  tp_buf_reset(&c->body);
  int rv = 0;
  switch (what) {
    case TP_LIVE_REQ_METRICS:
      rv = s->render(s->ctx, &c->body);
      type = "text/plain; version=0.0.4; charset=utf-8";
      break;
    case TP_LIVE_REQ_NOT_FOUND: rv = tp_buf_append_str(&c->body, "tokperf serves GET /metrics only\n"); break;
    case TP_LIVE_REQ_BAD_METHOD:
      rv = tp_buf_append_str(&c->body, "tokperf serves GET /metrics only\n");
      break;
    default: rv = tp_buf_append_str(&c->body, "bad request: expected GET /metrics HTTP/1.1\n"); break;
  }
  const char *status = reason[what < 5 ? what : 4];
  if (rv) {
    /* Out of memory: the answer says so rather than half an exposition. */
    tp_buf_reset(&c->body);
    status = "503 Service Unavailable";
  } else if (what == TP_LIVE_REQ_METRICS) {
    s->scrapes++;
  }
  size_t body_len = c->body.len;
  int n = snprintf(c->hdr, sizeof(c->hdr),
                   "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%sConnection: close\r\n\r\n",
                   status, type, body_len, what == TP_LIVE_REQ_BAD_METHOD ? "Allow: GET, HEAD\r\n" : "");
  uv_buf_t bufs[2] = {uv_buf_init(c->hdr, (unsigned)n),
                      uv_buf_init(c->body.data ? (char *)c->body.data : c->hdr, (unsigned)body_len)};
  c->answered = true;
  c->wr.data = c;
  if (uv_write(&c->wr, (uv_stream_t *)&c->tcp, bufs, head_only || !body_len ? 1 : 2, on_written))
    conn_close(c);
}

static void on_read(uv_stream_t *st, ssize_t nread, const uv_buf_t *buf) {
  (void)buf;
  conn *c = st->data;
  if (nread < 0) {
    conn_close(c); /* the client closed its side, or the connection failed */
    return;
  }
  if (c->answered || nread == 0) return;
  c->in_len += (size_t)nread;
  bool head_only;
  tp_live_req what = tp_live_parse_request(c->in, c->in_len, &head_only);
  if (what == TP_LIVE_REQ_MORE && c->in_len < sizeof(c->in)) return;
  answer(c, what == TP_LIVE_REQ_MORE ? TP_LIVE_REQ_BAD : what, head_only);
}

/* Takes the connection waiting on the listener into a free slot, if any. */
static void accept_one(tp_live_server *s) {
  conn *c = NULL;
  for (size_t i = 0; i < TP_LIVE_SLOTS && !c; i++)
    if (!s->slots[i].used) c = &s->slots[i];
  if (!c) {
    s->waiting = true; /* libuv stops reading the listener until it is accepted */
    return;
  }
  s->waiting = false;
  if (uv_tcp_init(s->loop, &c->tcp)) return;
  c->used = true;
  c->closing = false;
  c->answered = false;
  c->in_len = 0;
  c->tcp.data = c;
  s->open_handles++;
  uv_unref((uv_handle_t *)&c->tcp);
  if (uv_accept((uv_stream_t *)&s->listener, (uv_stream_t *)&c->tcp)) {
    conn_close(c);
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  uv_timer_start(&c->timer, on_timeout, TP_LIVE_CONN_TIMEOUT_MS, 0);
  if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read)) conn_close(c);
}

static void on_connection(uv_stream_t *l, int status) {
  tp_live_server *s = l->data;
  if (status < 0 || s->stopping) return;
  accept_one(s);
}

static void handle_closed(uv_handle_t *h) {
  tp_live_server *s = h->data;
  s->open_handles--;
  maybe_free(s);
}

int tp_live_server_start(tp_live_server **out, uv_loop_t *loop, const char *host, uint32_t port,
                         tp_live_render_fn fn, void *ctx, char *err, size_t errlen) {
  *out = NULL;
  struct sockaddr_storage addr;
  if (port == 0 || port > 65535) {
    tp_seterr(err, errlen, "--metrics-port %" PRIu32 ": expected a TCP port, 1 to 65535", port);
    return TP_EINVAL;
  }
  if (uv_ip4_addr(host, (int)port, (struct sockaddr_in *)&addr) &&
      uv_ip6_addr(host, (int)port, (struct sockaddr_in6 *)&addr)) {
    tp_seterr(err, errlen, "--metrics-host '%s': expected an IPv4 or IPv6 address, such as 127.0.0.1 or ::1",
              host);
    return TP_EINVAL;
  }
  tp_live_server *s = calloc(1, sizeof(*s));
  if (!s) return TP_ENOMEM;
  s->loop = loop;
  s->render = fn;
  s->ctx = ctx;
  uv_tcp_init(loop, &s->listener);
  s->listener.data = s;
  s->open_handles = 1;
  for (size_t i = 0; i < TP_LIVE_SLOTS; i++) {
    conn *c = &s->slots[i];
    c->srv = s;
    tp_buf_init(&c->body);
    uv_timer_init(loop, &c->timer);
    c->timer.data = c;
    uv_unref((uv_handle_t *)&c->timer);
    s->open_handles++;
  }
  uv_unref((uv_handle_t *)&s->listener);
  int rv = uv_tcp_bind(&s->listener, (const struct sockaddr *)&addr, 0);
  if (!rv) rv = uv_listen((uv_stream_t *)&s->listener, 16, on_connection);
  if (rv) {
    tp_seterr(err, errlen,
              "--metrics-port %" PRIu32 ": cannot listen on %s%s%s:%" PRIu32
              ": %s; choose another port "
              "(--metrics-port) or address (--metrics-host)",
              port, strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port, uv_strerror(rv));
    tp_live_server_close(s);
    return TP_EIO;
  }
  *out = s;
  return 0;
}

uint64_t tp_live_server_scrapes(const tp_live_server *s) {
  return s ? s->scrapes : 0;
}

void tp_live_server_close(tp_live_server *s) {
  if (!s || s->stopping) return;
  s->stopping = true;
  close_handle(s, (uv_handle_t *)&s->listener);
  for (size_t i = 0; i < TP_LIVE_SLOTS; i++) {
    conn *c = &s->slots[i];
    if (c->used) conn_close(c);
    close_handle(s, (uv_handle_t *)&c->timer);
  }
}

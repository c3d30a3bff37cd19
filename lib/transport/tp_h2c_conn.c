/* One connection of the HTTP/2 client: the socket, TLS over memory BIOs,
 * the nghttp2 session's reads and writes, and tearing it down. */
#include "tp_h2c_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/x509v3.h>

#include "util/tp_stamp.h"

/* Short: it goes into a call's 160-byte message after the address. */
#define HTTP1_ANSWER \
  "answers HTTP/1.x, not HTTP/2: an HTTP port, not gRPC (try --service-kind openai or -i http)"

/* ---- connections ------------------------------------------------------- */

void tp__h2c_conn_maybe_flush_later(conn *c) {
  if (c->busy || c->pool->held)
    c->want_flush = true;
  else
    tp__h2c_conn_flush(c);
}

static void on_handle_closed(uv_handle_t *h) {
  conn *c = h->data;
  if (--c->handles > 0) return;
  tp_h2c_pool *p = c->pool;
  tp_buf_fini(&c->wbuf);
  tp_buf_fini(&c->cbuf);
  tp_buf_fini(&c->sent_ids);
  tp_buf_fini(&c->late_ids);
  free(c);
  if (--p->open_handles == 0 && p->closing) tp__h2c_pool_free(p);
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
void tp__h2c_conn_fail(conn *c, const char *why) {
  if (c->state == C_CLOSED) return;
  tp_h2c_pool *p = c->pool;
  /* Before the socket closes: the reader never reads it again. */
  if (c->rsock) {
    tp_reader_remove(p->reader, c->rsock);
    c->rsock = NULL;
  }
  bool never_ready = c->state == C_CONNECTING;
  c->state = C_CLOSED;
  if (p->hold_conn == c) p->hold_conn = NULL;
  conn_unlink(c);
  /* Calls on this connection. */
  tp_call *next;
  for (tp_call *call = p->active; call; call = next) {
    next = call->next;
    if (call->conn != c) continue;
    tp__h2c_active_remove(p, call);
    if (tp__h2c_call_try_resend(c, call, 0, c->peer_closed)) continue;
    snprintf(call->local_msg, sizeof(call->local_msg), "connection to %s lost: %s", p->authority, why);
    call->local_class = c->fail_class;
    tp__h2c_call_finish(call, 0, true);
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
        tp__h2c_pending_remove(p, call);
        tp__h2c_call_set_local(call, TP_GRPC_UNAVAILABLE, c->fail_class ? c->fail_class : TP_ERRCLASS_CONNECT, "%s", "");
        snprintf(call->local_msg, sizeof(call->local_msg), "%s%s: %s",
                 c->fail_class == TP_ERRCLASS_TLS ? "TLS with " : "cannot connect to ", p->authority, why);
        tp__h2c_call_finish(call, 0, false);
      }
    }
  }
  if (c->rfd >= 0) {
    /* uv_close takes the descriptor out of the epoll set at once, so it
     * can close now (the socket ends with the TCP handle's close below). */
    uv_close((uv_handle_t *)&c->rpoll, on_handle_closed);
    close(c->rfd);
    c->rfd = -1;
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
  if (!p->closing) tp__h2c_pool_dispatch(p);
}

static void conn_check_done(conn *c) {
  if (c->state != C_CLOSED && c->session && !nghttp2_session_want_read(c->session) &&
      !nghttp2_session_want_write(c->session) && !c->writing)
    tp__h2c_conn_fail(c, "session finished");
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
    tp__h2c_conn_fail(c, uv_strerror(status));
    return;
  }
  tp__h2c_conn_flush(c);
}

/* Moves what the TLS session has written into cbuf (ciphertext). */
static int tls_drain(conn *c) {
  char tmp[16384];
  int n;
  while ((n = BIO_read(c->wbio, tmp, sizeof(tmp))) > 0)
    if (tp_buf_append(&c->cbuf, tmp, (size_t)n)) return TP_ENOMEM;
  return 0;
}

void tp__h2c_conn_flush(conn *c) {
  if (c->state == C_CLOSED || c->writing || !c->session) return;
  /* Inside this connection's mem_recv or mem_send (a callback there ended
   * a call, and the run's hold on writes was released): the frames go when
   * that returns, in order, instead of overtaking the ones being written. */
  if (c->busy) {
    c->want_flush = true;
    return;
  }
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
        tp__h2c_conn_fail(c, nghttp2_strerror((int)n));
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
        tp__h2c_conn_fail(c, "out of memory");
        return;
      }
    }
  }
  c->busy--;
  tp_buf *out = &c->wbuf;
  if (c->ssl) {
    /* Memory BIOs never block: SSL_write takes everything at once. */
    if (c->wbuf.len && SSL_write(c->ssl, c->wbuf.data, (int)c->wbuf.len) <= 0) {
      tp__h2c_conn_fail(c, "TLS write failed");
      return;
    }
    tp_buf_reset(&c->cbuf);
    if (tls_drain(c)) {
      tp__h2c_conn_fail(c, "out of memory");
      return;
    }
    out = &c->cbuf;
  }
  if (out->len) {
    /* A request's send time is when the socket takes its last byte.  The
     * socket is tried first (uv_try_write): what it takes was taken now, and
     * a write taken whole needs no request, no completion callback on the
     * next loop turn and no change to the epoll set (libuv's drain after a
     * completed uv_write costs an epoll_ctl each time, one per request at
     * an open loop's rates).  The rest goes with uv_write as the peer reads,
     * and its requests are stamped when that write completes.  Over TLS the
     * plaintext offsets do not map onto the ciphertext: any shortfall
     * defers every request of the write. */
    uint64_t now = tp_now_ns();
    int tw = uv_try_write((uv_stream_t *)&c->tcp, &(uv_buf_t){.base = (char *)out->data, .len = out->len}, 1);
    if (tw < 0 && tw != UV_EAGAIN) {
      c->peer_closed = true;
      tp__h2c_conn_fail(c, uv_strerror(tw));
      return;
    }
    size_t done = tw > 0 ? (size_t)tw : 0;
    if (done == out->len) {
      stamp_sent(c, &c->sent_ids, SIZE_MAX, now, NULL);
      conn_check_done(c); /* what the completion callback's flush would do */
      return;
    }
    uv_buf_t b = uv_buf_init((char *)out->data + done, (unsigned)(out->len - done));
    c->write_req.data = c;
    int rv = uv_write(&c->write_req, (uv_stream_t *)&c->tcp, &b, 1, on_write);
    if (rv < 0) {
      tp__h2c_conn_fail(c, uv_strerror(rv));
      return;
    }
    c->writing = true;
    size_t left = uv_stream_get_write_queue_size((uv_stream_t *)&c->tcp);
    size_t taken = left == 0 ? SIZE_MAX : c->ssl ? 0 : done + (b.len - TP_MIN(left, b.len));
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
  uint64_t prev = c->read_ns;
  c->read_ns = tp_stamp_fd_covered(c->pool->loop, c->fd, sizeof(c->rbuf), &c->read_covered);
  /* One TCP stream's bytes arrive in order: a stamp is never before the
   * time given to the bytes read before them (those past an earlier peek
   * were dated after their read, which can be a little later than the
   * arrival of the next bytes). */
  if (c->read_ns < prev) c->read_ns = prev;
  *buf = uv_buf_init((char *)c->rbuf, sizeof(c->rbuf));
}

static bool feed_h2_slice(conn *c, const uint8_t *data, size_t len);

/* Lets the loop's due timers run between two slices of input (see
 * tp_h2c_opts.yield_to); what they send leaves now.  Returns false when
 * the connection was failed meanwhile. */
static bool yield_between(conn *c) {
  tp_h2c_pool *p = c->pool;
  if (!p->opts.yield_to) return true;
  if (tp_timers_run_due(p->opts.yield_to) && !p->held) tp__h2c_pool_flush(p, NULL);
  return c->state != C_CLOSED;
}

/* Feeds plaintext to the HTTP/2 session, a slice at a time with the due
 * timers served in between; returns false when the connection was
 * failed. */
static bool feed_h2(conn *c, const uint8_t *data, size_t len) {
  while (len > FEED_SLICE_BYTES) {
    if (!feed_h2_slice(c, data, FEED_SLICE_BYTES) || !yield_between(c)) return false;
    data += FEED_SLICE_BYTES;
    len -= FEED_SLICE_BYTES;
  }
  return feed_h2_slice(c, data, len);
}

static bool feed_h2_slice(conn *c, const uint8_t *data, size_t len) {
  /* An HTTP/1 server answers the client preface with a status line, which
   * HTTP/2 would read as a frame of 4.7 MB: say what the port speaks. */
  if (c->state == C_CONNECTING && len >= 7 && memcmp(data, "HTTP/1.", 7) == 0) {
    tp__h2c_conn_fail(c, HTTP1_ANSWER);
    return false;
  }
  c->busy++;
  ssize_t rv = nghttp2_session_mem_recv(c->session, data, len);
  c->busy--;
  if (c->state == C_CLOSED) return false;
  if (rv < 0) {
    tp__h2c_conn_fail(c, nghttp2_strerror((int)rv));
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
  tp__h2c_conn_fail(c, why);
}

static void conn_input(conn *c, ssize_t nread, const uv_buf_t *buf);

void tp__h2c_pool_flush(tp_h2c_pool *p, conn *also) {
  conn *next;
  for (conn *o = p->conns; o; o = next) {
    next = o->next;
    if (o == also || o->want_flush) tp__h2c_conn_flush(o);
  }
}

/* Input, then a flush of the connection read (replies, WINDOW_UPDATEs,
 * new streams started by callbacks, handshake records) and of any other
 * that callbacks queued work on.  Reads do not hold other connections'
 * writes: holding a closed loop's refills until a whole read was parsed
 * saved writes but sent the requests later (at 1,000 streams the mock
 * received them 0.1-0.6 ms after their send time), and a send time is
 * what every latency starts from.  A connection failed by its input is
 * no longer in the list. */
static void conn_input_flush(conn *c, ssize_t nread, const uv_buf_t *buf) {
  tp_h2c_pool *p = c->pool;
  conn_input(c, nread, buf);
  if (!p->held)
    tp__h2c_pool_flush(p, c->state == C_CLOSED ? NULL : c);
  else if (c != p->hold_conn)
    tp__h2c_conn_flush(c); /* its replies; the held calls wait on hold_conn */
}

/* The socket is readable (rfd): reads until the kernel has no more, up to
 * a bound so that one busy connection cannot hold the loop. */
static void on_readable(uv_poll_t *h, int status, int events) {
  conn *c = h->data;
  (void)events;
  if (status < 0) {
    conn_input_flush(c, status, NULL);
    return;
  }
  for (int i = 0; i < READS_PER_WAKEUP && c->state != C_CLOSED; i++) {
    uint64_t at;
    ssize_t n = tp_stamp_recv(c->pool->loop, c->rfd, c->rbuf, sizeof(c->rbuf), &at);
    if (n == -EAGAIN || n == -EWOULDBLOCK) return;
    if (n <= 0) {
      conn_input_flush(c, n == 0 ? UV_EOF : n, NULL);
      return;
    }
    /* One TCP stream's bytes arrive in order (see on_alloc). */
    c->read_ns = at > c->read_ns ? at : c->read_ns;
    c->read_covered = (size_t)n; /* the stamp is the newest segment read */
    uv_buf_t b = uv_buf_init((char *)c->rbuf, (unsigned)n);
    conn_input_flush(c, n, &b);
    if ((size_t)n < sizeof(c->rbuf)) return; /* drained */
  }
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  if (nread == 0) return; /* c->read_ns was set in on_alloc */
  conn_input_flush(s->data, nread, buf);
}

/* A chunk from the pool's reader thread (tp_reader.h): bytes that arrived
 * at stamp_ns, or the end of the connection (n < 0). */
void tp__h2c_on_chunk(void *owner, const uint8_t *data, ssize_t n, uint64_t stamp_ns) {
  conn *c = owner;
  if (c->state == C_CLOSED) return;
  /* The loop's lag is how long the chunk waited for it here. */
  if (n > 0) tp_stamp_note_read(c->pool->loop, stamp_ns);
  /* One TCP stream's bytes arrive in order (see on_alloc). */
  if (stamp_ns > c->read_ns) c->read_ns = stamp_ns;
  c->read_covered = n > 0 ? (size_t)n : 0;
  uv_buf_t b = uv_buf_init((char *)(uintptr_t)data, n > 0 ? (unsigned)n : 0);
  conn_input_flush(c, n, &b);
}

/* Bytes read from the socket (nread > 0, dated c->read_ns), or its end. */
static void conn_input(conn *c, ssize_t nread, const uv_buf_t *buf) {
  if (nread < 0) {
    if (c->ssl && !c->hs_done) {
      tls_fail(c);
      return;
    }
    c->peer_closed = true;
    tp__h2c_conn_fail(c, nread == UV_EOF ? "closed by the server" : uv_strerror((int)nread));
    return;
  }
  if (!c->ssl) {
    /* Bytes past those the stamp covers reached the socket between the
     * peek and the read: dated now, a few microseconds late rather than
     * early. */
    size_t n = (size_t)nread, first = TP_MIN(n, c->read_covered);
    if (first && !feed_h2(c, (const uint8_t *)buf->base, first)) return;
    if (first < n) {
      c->read_ns = tp_now_ns();
      if (!feed_h2(c, (const uint8_t *)buf->base + first, n - first)) return;
    }
  } else {
    /* The records are decrypted as a whole: when some bytes came after the
     * peek, all are dated now (late by microseconds, never early). */
    if ((size_t)nread > c->read_covered) c->read_ns = tp_now_ns();
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
          tp__h2c_conn_fail(c, "the server did not agree to HTTP/2 (ALPN h2), which gRPC needs");
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
        tp__h2c_conn_fail(c, e == SSL_ERROR_ZERO_RETURN ? "closed by the server (TLS close)" : "TLS read failed");
        return;
      }
    }
  }
}

/* Polls a duplicate of the socket for reading (see conn.rfd); false when
 * that cannot be set up, and libuv reads instead. */
static bool start_own_reads(conn *c) {
  int fd = fcntl(c->fd, F_DUPFD_CLOEXEC, 0);
  if (fd < 0) return false;
  if (uv_poll_init(c->pool->loop, &c->rpoll, fd) != 0) {
    close(fd);
    return false;
  }
  c->rpoll.data = c;
  c->rfd = fd;
  c->handles++;
  if (uv_poll_start(&c->rpoll, UV_READABLE, on_readable) != 0) {
    /* Initialised: it goes through uv_close, and libuv reads. */
    uv_close((uv_handle_t *)&c->rpoll, on_handle_closed);
    close(fd);
    c->rfd = -1;
    return false;
  }
  return true;
}

static void on_connect(uv_connect_t *req, int status) {
  conn *c = req->data;
  if (c->state == C_CLOSED) return;
  if (status < 0) {
    tp__h2c_conn_fail(c, uv_strerror(status));
    return;
  }
  uv_tcp_nodelay(&c->tcp, 1);
  uv_os_fd_t fd;
  if (uv_fileno((uv_handle_t *)&c->tcp, &fd) == 0 && tp_stamp_enable_fd(fd) == 0) c->fd = fd;
  tp_h2c_pool *p = c->pool;
  int rv = 0;
  if (p->reader && c->fd >= 0) {
    /* The reader thread reads it; libuv only writes. */
    c->rsock = tp_reader_add(p->reader, c->fd, c);
    if (!c->rsock) rv = UV_ENOMEM;
  } else if (c->fd >= 0 && start_own_reads(c)) {
    rv = 0; /* on_readable reads it; libuv only writes */
  } else {
    rv = uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read);
  }
  if (rv < 0) {
    tp__h2c_conn_fail(c, uv_strerror(rv));
    return;
  }
  if (p->ssl_ctx) {
    c->ssl = SSL_new(p->ssl_ctx);
    c->rbio = BIO_new(BIO_s_mem());
    c->wbio = BIO_new(BIO_s_mem());
    if (!c->ssl || !c->rbio || !c->wbio) {
      tp__h2c_conn_fail(c, "out of memory");
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
  tp__h2c_conn_flush(c); /* preface + SETTINGS (after the handshake over TLS) */
}

int tp__h2c_conn_open(tp_h2c_pool *p) {
  conn *c = calloc(1, sizeof(*c));
  if (!c) return TP_ENOMEM;
  c->pool = p;
  c->state = C_CONNECTING;
  c->fd = -1;
  c->rfd = -1;
  tp_buf_init(&c->wbuf);
  tp_buf_init(&c->sent_ids);
  tp_buf_init(&c->late_ids);

  nghttp2_session_callbacks *cbs;
  if (tp__h2c_session_callbacks(&cbs)) {
    free(c);
    return TP_ENOMEM;
  }
  int rv = nghttp2_session_client_new3(&c->session, cbs, c, NULL, p->slab ? &p->mem : NULL);
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
  c->handles = 1;
  p->open_handles++;
  c->next = p->conns;
  p->conns = c;
  p->n_live++;
  p->conns_opened++;
  c->serial = p->conns_opened;
  c->connect_req.data = c;
  rv = uv_tcp_connect(&c->connect_req, &c->tcp, (const struct sockaddr *)&p->opts.addr, on_connect);
  if (rv < 0) {
    tp__h2c_conn_fail(c, uv_strerror(rv));
    return 0; /* the calls were failed as data */
  }
  return 0;
}

/* ---- TLS --------------------------------------------------------------- */

int tp__h2c_make_ssl_ctx(tp_h2c_pool *p, char *err, size_t errlen) {
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


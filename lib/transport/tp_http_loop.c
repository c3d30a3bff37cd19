/* The libcurl HTTP client on the libuv loop: one poll watcher per socket
 * libcurl asks for, its timer, ending requests (with the re-send rule),
 * work deferred out of libcurl's calls, and closing. */
#include "tp_http_internal.h"
#include "util/tp_stamp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

#include "transport/tp_http_share.h"

static void socket_action(tp_http *h, curl_socket_t fd, int flags);
static int tx_drain(tp_http *h, curl_socket_t fd);
static void tx_sweep(tp_http *h);
static bool rx_feed(tp_http *h, rx_conn *rx, curl_socket_t fd, uint64_t *counted, uint64_t *newest);
static void rx_lose(tp_http *h, rx_conn *rx);

/* How far into a readable socket an arrival stamp looks: at least what
 * libcurl reads at once (its buffer is 16 KiB by default). */
#define STAMP_PEEK_BYTES (256 * 1024)
/* How many waiting bytes one look feeds the arrival tracker: more than
 * libcurl reads at once, so that it never reads past them before the next
 * look. */
#define RX_PEEK_BYTES (256 * 1024)

/* ---- handles ------------------------------------------------------------ */

static void rx_conn_free(rx_conn *rx) {
  if (!rx) return;
  tp_http_raw_free(rx->raw);
  free(rx);
}

void tp__http_maybe_free(tp_http *h) {
  if (!h->closing || h->open_handles > 0) return;
  curl_slist_free_all(h->hdr_get);
  curl_slist_free_all(h->hdr_json);
  curl_slist_free_all(h->hdr_sse);
  free(h->base_url);
  free(h->ca_file);
  free(h->cert_file);
  free(h->key_file);
  for (size_t i = 0; i < h->n_txs; i++) rx_conn_free(h->txs[i].rx);
  free(h->txs);
  free(h->rx_buf);
  free(h);
}

static void on_handle_closed(uv_handle_t *hd) {
  tp_http *h = hd->data;
  h->open_handles--;
  tp__http_maybe_free(h);
}

static void on_sock_closed(uv_handle_t *hd) {
  sock_ctx *sc = hd->data;
  tp_http *h = sc->h;
  free(sc);
  h->open_handles--;
  tp__http_maybe_free(h);
}

static void sock_close(sock_ctx *sc) {
  tp_http *h = sc->h;
  if (sc->prev)
    sc->prev->next = sc->next;
  else
    h->socks = sc->next;
  if (sc->next) sc->next->prev = sc->prev;
  /* uv_close stops the watcher at once, so the descriptor number is free for
   * a new socket even before the close callback runs. */
  uv_close((uv_handle_t *)&sc->poll, on_sock_closed);
}

/* The local port of a connected socket, 0 when it has none yet. */
static int local_port_of(curl_socket_t fd) {
  struct sockaddr_storage ss;
  socklen_t len = sizeof(ss);
  if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0) return 0;
  if (ss.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&ss)->sin_port);
  if (ss.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
  return 0;
}

static void on_poll(uv_poll_t *p, int status, int events) {
  sock_ctx *sc = p->data;
  int flags = 0;
  /* A transmit stamp waiting on the error queue makes poll say "error", and
   * libuv then stops the watcher (UV_EBADF): read the stamps (another
   * socket's sweep may have read them since the poll returned), and when the
   * socket itself has no error, watch it again (level-triggered, so a
   * pending read is reported on the next turn, its bytes still carrying
   * their kernel stamps).  poll tells a real error without consuming it
   * (SO_ERROR would clear it before libcurl looks); a stamp taken by the
   * device just after the queue was read also says "error", so the queue
   * is read again while it yields stamps. */
  for (int tries = 0; status == UV_EBADF && tries < 8; tries++) {
    int n = tx_drain(sc->h, sc->fd);
    struct pollfd pf = {.fd = sc->fd, .events = POLLIN | POLLOUT, .revents = 0};
    if (poll(&pf, 1, 0) >= 0 && !(pf.revents & (POLLERR | POLLNVAL))) {
      if (sc->events) uv_poll_start(&sc->poll, sc->events, on_poll);
      tx_sweep(sc->h);
      return;
    }
    if (n == 0) break; /* "error" with no stamp waiting: a real one, for libcurl */
  }
  if (status < 0) {
    flags = CURL_CSELECT_ERR;
  } else {
    if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
  }
  /* Once per socket: a connection's port is fixed from its connect(). */
  if (!sc->local_port) sc->local_port = local_port_of(sc->fd);
  sc->h->action_port = sc->local_port;
  if (!sc->rx_looked) {
    sc->rx_looked = true;
    for (size_t i = 0; i < sc->h->n_txs; i++)
      if (sc->h->txs[i].fd == sc->fd) sc->rx = sc->h->txs[i].rx;
  }
  sc->h->action_rx = sc->rx;
  socket_action(sc->h, sc->fd, flags);
}

static int sock_cb(CURL *e, curl_socket_t s, int what, void *userp, void *socketp) {
  tp_http *h = userp;
  sock_ctx *sc = socketp;
  if (what == CURL_POLL_REMOVE) {
    if (sc) {
      curl_multi_assign(h->multi, s, NULL);
      sock_close(sc);
    }
    return 0;
  }
  if (!sc) {
    sc = calloc(1, sizeof(*sc));
    if (!sc) return -1;
    if (uv_poll_init_socket(h->loop, &sc->poll, s) < 0) {
      free(sc);
      return -1;
    }
    sc->h = h;
    sc->fd = s;
    sc->poll.data = sc;
    sc->next = h->socks;
    if (h->socks) h->socks->prev = sc;
    h->socks = sc;
    h->open_handles++;
    curl_multi_assign(h->multi, s, sc);
  }
  int ev = 0;
  if (what & CURL_POLL_IN) ev |= UV_READABLE;
  if (what & CURL_POLL_OUT) ev |= UV_WRITABLE;
  sc->events = ev;
  uv_poll_start(&sc->poll, ev, on_poll);
  return 0;
}

static void on_timeout(uv_timer_t *t) {
  socket_action(t->data, CURL_SOCKET_TIMEOUT, 0);
}

static int timer_cb(CURLM *m, long timeout_ms, void *userp) {
  tp_http *h = userp;
  if (h->closing) return 0;
  /* 0 means "as soon as possible"; calling socket_action from here would
   * recurse into libcurl, so the timer does it on the next loop turn. */
  if (timeout_ms < 0)
    uv_timer_stop(&h->timer);
  else
    uv_timer_start(&h->timer, on_timeout, (uint64_t)timeout_ms, 0);
  return 0;
}

void tp__http_watch_multi(tp_http *h) {
  curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
  curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
  curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
  curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
}

/* ---- ending requests ---------------------------------------------------- */

static void req_unlink(tp_http_req *r) {
  tp_http *h = r->h;
  if (r->prev)
    r->prev->next = r->next;
  else
    h->reqs = r->next;
  if (r->next) r->next->prev = r->prev;
  r->prev = r->next = NULL;
  h->n_reqs--;
}

/* ---- send stamps --------------------------------------------------------- */

/* A request's send time is the kernel's stamp of its last write (see
 * tp_stamp_enable_tx).  libcurl writes the request inside one of its calls
 * and reports the body taken only later (after serving its other
 * transfers), so the stamps are read from the socket after every libcurl
 * call and given to the requests being sent on it; the newest is the send
 * time once the body was taken and the kernel holds none of it unsent.  On
 * HTTP/1.1 one request at a time uses a connection, so the stamps read
 * between its start and its answer are its own.  On a multiplexed HTTP/2
 * connection another stream written in the same libcurl call can add a
 * later stamp: the time is then late by at most that call's other writes,
 * never early. */

static void tx_unlist(tp_http_req *r) {
  tp_http *h = r->h;
  if (!r->tx_listed) return;
  if (r->tx_prev)
    r->tx_prev->tx_next = r->tx_next;
  else
    h->tx_list = r->tx_next;
  if (r->tx_next) r->tx_next->tx_prev = r->tx_prev;
  r->tx_prev = r->tx_next = NULL;
  r->tx_listed = false;
}

/* Reads fd's transmit stamps and gives the newest to every request being
 * sent on it.  Returns how many stamps were read. */
static int tx_drain(tp_http *h, curl_socket_t fd) {
  struct timespec ts;
  int n = tp_stamp_tx_drain(fd, &ts);
  if (n <= 0) return n < 0 ? 0 : n;
  uint64_t t = tp_stamp_from_realtime(&ts);
  if (!t) return n;
  for (tp_http_req *r = h->tx_list; r; r = r->tx_next)
    if (r->tx_fd == fd && t > r->tx_ns) r->tx_ns = t;
  return n;
}

/* Fixes r's send time from what is known now and takes it off the list. */
static void tx_settle(tp_http_req *r) {
  tp_http *h = r->h;
  if (r->tx_ns) {
    r->sent_ns = r->tx_ns;
    r->sent_kernel = true;
    h->sends_kernel++;
  } else if (r->clock_sent_ns) {
    r->sent_ns = r->clock_sent_ns;
    h->sends_clock++;
  }
  tx_unlist(r);
}

static void tx_sweep(tp_http *h) {
  tp_http_req *next;
  for (tp_http_req *r = h->tx_list; r; r = next) {
    next = r->tx_next;
    if (!r->uploaded) continue;
    tx_drain(h, r->tx_fd);
    /* Bytes still unsent: the last write's stamp is yet to come (a full
     * congestion window); poll's "error" will bring it. */
    long unsent = tp_stamp_tcp_unsent(r->tx_fd);
    if (r->tx_ns && unsent == 0) tx_settle(r);
    else if (unsent < 0) tx_settle(r);
  }
}

static tx_sock *tx_sock_find(tp_http *h, int local_port) {
  if (local_port <= 0) return NULL;
  for (size_t i = 0; i < h->n_txs; i++) {
    tx_sock *t = &h->txs[i];
    if (!t->local_port) t->local_port = local_port_of(t->fd);
    if (t->local_port == local_port) return t;
  }
  return NULL;
}

void tp__http_tx_begin(tp_http_req *r, int local_port) {
  tp_http *h = r->h;
  tx_unlist(r);
  r->tx_ns = r->clock_sent_ns = 0;
  r->uploaded = r->sent_kernel = false;
  r->tx_fd = CURL_SOCKET_BAD;
  tx_sock *t = tx_sock_find(h, local_port);
  if (!t || !t->stamps) return;
  /* Stamps of earlier writes on this connection go to whoever wrote them. */
  tx_drain(h, t->fd);
  r->tx_fd = t->fd;
  r->tx_next = h->tx_list;
  if (h->tx_list) h->tx_list->tx_prev = r;
  h->tx_list = r;
  r->tx_listed = true;
}

void tp__http_tx_uploaded(tp_http_req *r, uint64_t now_ns) {
  if (r->uploaded) return;
  r->uploaded = true;
  r->clock_sent_ns = now_ns;
  /* No stamped socket: the clock is all there is. */
  if (!r->tx_listed && !r->sent_ns) {
    r->sent_ns = now_ns;
    r->h->sends_clock++;
  }
}

void tp__http_tx_final(tp_http_req *r) {
  if (!r->tx_listed) return;
  if (r->tx_fd != CURL_SOCKET_BAD) tx_drain(r->h, r->tx_fd);
  tx_settle(r);
}

/* Sends r again on a new connection when tp_http_should_resend says so.
 * Called only outside libcurl's calls, with r in the multi handle.  Returns
 * true when r is under way again (finish must not go on). */
static bool try_resend(tp_http_req *r, CURLcode code) {
  tp_http *h = r->h;
  if (r->finished || r->abort || r->local_failed || h->closing || h->in_curl || !r->added) return false;
  long conns = 0;
  curl_easy_getinfo(r->easy, CURLINFO_NUM_CONNECTS, &conns);
  if (!tp_http_should_resend(conns == 0, r->got_bytes, r->resends, (int)code)) return false;
  curl_multi_remove_handle(h->multi, r->easy);
  /* A fresh connection: another idle one may be as stale as the first. */
  curl_easy_setopt(r->easy, CURLOPT_FRESH_CONNECT, 1L);
  r->resends++;
  r->attempts = 0;
  r->sent_ns = 0; /* the record's send time is the re-send's */
  tx_unlist(r);
  r->tx_fd = CURL_SOCKET_BAD;
  r->tx_ns = r->clock_sent_ns = 0;
  r->uploaded = r->sent_kernel = false;
  r->rx = NULL;
  r->body_seen = 0;
  r->errbuf[0] = 0;
  if (curl_multi_add_handle(h->multi, r->easy) != CURLM_OK) {
    /* Not in the multi handle any more; finish reports the first failure. */
    r->added = false;
    h->n_pending_add++;
    return false;
  }
  return true;
}

static void finish(tp_http_req *r, CURLcode code, uint64_t end_ns) {
  tp_http *h = r->h;
  if (r->finished) return;
  if (code != CURLE_OK && try_resend(r, code)) return;
  r->finished = true;
  if (r->abort) h->n_aborts--;
  if (!r->added) h->n_pending_add--;
  tp_http_result res;
  memset(&res, 0, sizeof(res));
  char msg[1024];
  msg[0] = 0;
  long status = 0, version = 0, conns = 0;
  curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
  curl_easy_getinfo(r->easy, CURLINFO_HTTP_VERSION, &version);
  curl_easy_getinfo(r->easy, CURLINFO_NUM_CONNECTS, &conns);
  h->conns_opened += (uint32_t)conns;
  res.status = (int)status;
  res.http_version = version == CURL_HTTP_VERSION_2_0 ? 2 : version ? 1 : 0;
  if (r->local_failed) {
    res.err_class = r->local_class;
    snprintf(msg, sizeof(msg), "%s", r->local_msg);
  } else if (code != CURLE_OK) {
    res.err_class = tp__http_classify(h, r, code, msg, sizeof(msg));
  }
  if (r->resends && res.err_class != TP_ERRCLASS_NONE) {
    size_t ml = strlen(msg);
    snprintf(msg + ml, sizeof(msg) - ml, " (after a re-send on a fresh connection)");
  }
  res.message = msg;
  res.resends = r->resends;
  res.request_id = r->resp_request_id[0] ? r->resp_request_id : NULL;
  tp__http_tx_final(r);
  res.sent_ns = r->sent_ns;
  res.sent_kernel = r->sent_kernel;
  /* end_ns is when the last socket event began; the send may have happened
   * later inside that same libcurl call (a failure right after it). */
  res.end_ns = end_ns > r->sent_ns ? end_ns : r->sent_ns;
  if (r->added) curl_multi_remove_handle(h->multi, r->easy);
  curl_easy_cleanup(r->easy);
  r->easy = NULL;
  if (r->session) tp__http_share_put(&h->shares, r->session);
  req_unlink(r);
  r->cbs.on_done(r, &res, r->user_data);
  free(r);
}

uint64_t tp__http_arrival_ns(const tp_http_req *r) {
  const tp_http *h = r->h;
  /* Outside a socket event, or in a timer's call: bytes read in the call
   * came at some point during it (a request sent and answered in one call
   * against a fast server), so only the clock now is never early. */
  if (!h->action_ns || h->action_fd == CURL_SOCKET_BAD) return tp_now_ns();
  /* Another socket's bytes, read in this call: the clock, never early. */
  if (!r->local_port || r->local_port != h->action_port) return tp_now_ns();
  if (h->n_seg == 0) return h->action_ns;
  /* The newest byte libcurl has read (received and no longer waiting) is
   * in the first segment whose count is past it; one call suffices while
   * nothing came since the first stamp. */
  uint64_t received = 0, unread = 0;
  if (!tp_stamp_tcp_counts(h->action_fd, &received, NULL)) return tp_now_ns();
  if (received == h->seg[0].received) return h->seg[0].ns;
  if (!tp_stamp_tcp_counts(h->action_fd, &received, &unread)) return tp_now_ns();
  for (int k = 0; k < h->n_seg; k++)
    if (received - unread <= h->seg[k].received) return h->seg[k].ns;
  return tp_now_ns(); /* read after it came, with no stamp taken: the clock */
}

/* A callback shorter than this is not followed by a look at the socket:
 * bytes that came during it and that libcurl reads next are dated by the
 * clock, late by about this much at most, and the look (a system call) is
 * saved on every answer of a busy run. */
#define AFTER_BODY_LOOK_NS 20000

void tp__http_after_body(const tp_http_req *r, uint64_t began_ns) {
  tp_http *h = r->h;
  /* Bytes that came during the callback are fed before libcurl reads them
   * (it reads the socket again while it stays readable). */
  if (r->rx && r->rx == h->action_rx && r->rx->synced && r->local_port == h->action_port &&
      tp_now_ns() - began_ns >= AFTER_BODY_LOOK_NS) {
    uint64_t received = 0, counted = 0, newest = 0;
    if (!tp_stamp_tcp_counts(h->action_fd, &received, NULL))
      rx_lose(h, r->rx);
    else if (received != r->rx->fed)
      (void)rx_feed(h, r->rx, h->action_fd, &counted, &newest);
  }
  if (h->n_seg == 0 || h->n_seg == (int)(sizeof(h->seg) / sizeof(h->seg[0])) || r->local_port != h->action_port ||
      tp_now_ns() - began_ns < AFTER_BODY_LOOK_NS)
    return;
  uint64_t received = 0;
  if (!tp_stamp_tcp_counts(h->action_fd, &received, NULL) || received == h->seg[h->n_seg - 1].received) return;
  /* The count is taken first: the peek's stamp is that of the newest byte
   * waiting, which covers every byte counted. */
  h->seg[h->n_seg].received = received;
  h->seg[h->n_seg].ns = tp_stamp_fd(h->loop, h->action_fd, STAMP_PEEK_BYTES);
  h->n_seg++;
}

/* ---- arrival stamps by body position ------------------------------------ */

/* When the loop comes late to a socket, several answers (SSE events, each
 * its own chunk) wait in it, and libcurl reads them in one go: the stamp of
 * the newest would date them all, the first as late as the last.  On a
 * plaintext HTTP/1.1 connection the bytes are peeked before libcurl reads
 * them and fed to the tracker (tp_http_raw.h), which tells where each run
 * of body bytes ends; the kernel stamp of the segment holding that byte
 * dates the body up to it (rx_conn).  Over TLS the raw bytes are records,
 * and the stamp of the newest byte stays the arrival time. */

static void rx_lose(tp_http *h, rx_conn *rx) {
  if (!rx->synced) return;
  rx->synced = false;
  tp_http_raw_lose(rx->raw);
  h->rx_lost++;
}

static void rx_mark_push(rx_conn *rx, const rx_mark *m) {
  if (rx->n == RX_MARKS) {
    rx_mark *newest = &rx->marks[(rx->head + rx->n - 1) % RX_MARKS];
    if (newest->resp == m->resp) {
      /* No room (the body waits unread far behind): the newest mark covers
       * this piece too, so the bytes it covered get a later time, never an
       * earlier one. */
      newest->body_end = m->body_end;
      newest->ns = m->ns;
      return;
    }
    rx->head = (rx->head + 1) % RX_MARKS;
    rx->n--;
  }
  rx->marks[(rx->head + rx->n) % RX_MARKS] = *m;
  rx->n++;
}

/* The body runs of one feed; past the room, the last run is extended (the
 * runs between are dated by a later byte: late, never early). */
#define RX_PIECES 64
typedef struct rx_pieces {
  tp_http_raw_piece p[RX_PIECES];
  size_t n;
} rx_pieces;

static void on_rx_piece(void *ctx, const tp_http_raw_piece *p) {
  rx_pieces *ps = ctx;
  if (ps->n == RX_PIECES && ps->p[ps->n - 1].resp == p->resp) {
    ps->p[ps->n - 1].body_end = p->body_end;
    ps->p[ps->n - 1].raw_end = p->raw_end;
    return;
  }
  if (ps->n == RX_PIECES) return; /* a new response past the room: no mark, the fallback dates it */
  ps->p[ps->n++] = *p;
}

/* Feeds rx the bytes waiting in fd that it has not seen, and marks the end
 * of each body run among them with its segment's stamp.  Returns whether
 * it read the kernel's count: then *counted is the bytes received when it
 * looked, and *newest the stamp of the newest of them (0 when nothing new
 * was peeked). */
static bool rx_feed(tp_http *h, rx_conn *rx, curl_socket_t fd, uint64_t *counted, uint64_t *newest) {
  *newest = 0;
  if (!rx->synced) return false;
  if (!h->rx_buf && !(h->rx_buf = malloc(RX_PEEK_BYTES))) return false;
  /* A segment arriving between the looks makes the peek longer than the
   * queue was: look again (twice at most; then this turn feeds nothing, and
   * libcurl may read past what was fed, which the next look finds). */
  for (int tries = 0; tries < 2; tries++) {
    uint64_t head = 0, waiting = 0;
    uint32_t segs = 0;
    bool fin = false;
    /* Past a FIN the head is not known to the byte. */
    if (!tp_stamp_tcp_head(fd, &head, &waiting, &segs, &fin) || fin || rx->fed > head + waiting) {
      rx_lose(h, rx);
      return false;
    }
    *counted = head + waiting;
    /* fed < head: libcurl read bytes the tracker never saw (they came
     * between the last look and libcurl's read, or it read in a timer's
     * call).  When they were whole chunks (the body libcurl delivered past
     * the tracker's position makes up exactly their raw length), the
     * tracker goes on after them; while libcurl is still delivering them,
     * it waits; otherwise where the body lies is unknown until the next
     * response. */
    if (rx->fed < head) {
      if (rx->fed_between && rx->gap_raw == head - rx->fed) {
        tp_http_raw_resume_chunked(rx->raw, rx->fed_resp, rx->fed_body + rx->gap_body);
        rx->fed = head;
        rx->fed_body += rx->gap_body;
        rx->gap_body = rx->gap_raw = 0;
        rx->segs_ok = false;
        h->rx_resumed++;
      } else if (h->in_curl && rx->fed_between && rx->gap_raw < head - rx->fed) {
        return true;
      } else {
        rx_lose(h, rx);
        return false;
      }
    }
    if (rx->fed == head + waiting) {
      /* Nothing new; the count is of the bytes fed. */
      rx->segs = segs;
      rx->segs_ok = segs != 0;
      return true;
    }
    uint64_t at = 0;
    ssize_t got = tp_stamp_peek(h->loop, fd, h->rx_buf, RX_PEEK_BYTES, &at);
    if (got < 0) return true;
    if ((uint64_t)got != waiting) {
      if (waiting >= RX_PEEK_BYTES) return true; /* longer than a peek: not checkable, nothing fed */
      continue;
    }
    *newest = at;
    size_t off = (size_t)(rx->fed - head);
    rx_pieces ps;
    ps.n = 0;
    bool ok = tp_http_raw_feed(rx->raw, h->rx_buf + off, (size_t)got - off, on_rx_piece, &ps);
    /* All new bytes in one segment: one stamp, the newest, for every run. */
    bool one_segment = rx->segs_ok && segs == rx->segs + 1;
    rx->segs = segs;
    rx->segs_ok = segs != 0;
    rx->fed = head + (uint64_t)got;
    rx->fed_resp = tp_http_raw_resp(rx->raw);
    rx->fed_between = tp_http_raw_between_chunks(rx->raw, &rx->fed_body);
    rx->gap_body = rx->gap_raw = 0;
    if (!ok) {
      rx->synced = false;
      h->rx_lost++;
    }
    if (ps.n == 0) return true;
    size_t offs[RX_PIECES];
    uint64_t ns[RX_PIECES];
    for (size_t i = 0; i < ps.n; i++) offs[i] = off + ps.p[i].raw_end - 1;
    if (one_segment && at)
      for (size_t i = 0; i < ps.n; i++) ns[i] = at;
    else
      tp_stamp_fd_bytes(h->loop, fd, offs, ps.n, at, ns);
    for (size_t i = 0; i < ps.n; i++) {
      if (!ns[i]) continue; /* no stamp: the bytes up to there get the fallback */
      rx_mark m = {ps.p[i].resp, ps.p[i].body_end, ns[i]};
      rx_mark_push(rx, &m);
    }
    return true;
  }
  return true;
}

void tp__http_rx_begin(tp_http_req *r, int local_port) {
  tp_http *h = r->h;
  r->rx = NULL;
  r->body_seen = 0;
  tx_sock *t = tx_sock_find(h, local_port);
  if (!t || !t->rx) return;
  rx_conn *rx = t->rx;
  uint64_t received = 0, unread = 0;
  /* Between answers nothing waits: the next byte is this answer's first. */
  if (!tp_stamp_tcp_counts(t->fd, &received, &unread) || unread != 0) {
    rx_lose(h, rx);
    return;
  }
  rx->synced = true;
  rx->fed = received;
  rx->head = rx->n = 0;
  r->rx_resp = tp_http_raw_restart(rx->raw, false);
  rx->fed_resp = r->rx_resp;
  rx->fed_between = false;
  rx->fed_body = rx->gap_body = rx->gap_raw = 0;
  rx->segs_ok = false;
  r->rx = rx;
}

/* Hex digits of a chunk size. */
static unsigned hex_digits(uint64_t n) {
  unsigned d = 1;
  while (n >>= 4) d++;
  return d;
}

uint64_t tp__http_rx_body_ns(tp_http_req *r, size_t n) {
  rx_conn *rx = r->rx;
  if (!rx || n == 0) return 0;
  uint64_t first = r->body_seen, last = first + n - 1;
  /* Past what the tracker was fed: bytes libcurl read unseen, counted as
   * one chunk each ("SIZE\r\n" DATA "\r\n"), in order. */
  if (rx->synced && rx->fed_between && r->rx_resp == rx->fed_resp && first == rx->fed_body + rx->gap_body) {
    rx->gap_body += n;
    rx->gap_raw += hex_digits(n) + 4 + n;
  }
  /* Marks wholly before this piece are spent. */
  while (rx->n) {
    const rx_mark *m = &rx->marks[rx->head];
    if (!(m->resp < r->rx_resp || (m->resp == r->rx_resp && m->body_end <= first))) break;
    rx->head = (rx->head + 1) % RX_MARKS;
    rx->n--;
  }
  for (unsigned i = 0; i < rx->n; i++) {
    const rx_mark *m = &rx->marks[(rx->head + i) % RX_MARKS];
    if (m->resp != r->rx_resp) break;
    if (m->body_end > last) {
      r->h->rx_pieces_marked++;
      return m->ns;
    }
  }
  r->h->rx_pieces_fallback++;
  return 0;
}

static void check_multi_info(tp_http *h) {
  CURLMsg *m;
  int left;
  while ((m = curl_multi_info_read(h->multi, &left))) {
    if (m->msg != CURLMSG_DONE) continue;
    char *priv = NULL;
    curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, &priv);
    tp_http_req *r = (tp_http_req *)(void *)priv;
    /* The time of the socket event during which the transfer completed:
     * the arrival of its last bytes. */
    if (r) finish(r, m->data.result, tp__http_arrival_ns(r));
  }
}

/* Work that cannot be done inside a libcurl call: adding requests started
 * from its callbacks, and stopping requests failed from them. */
static void run_deferred(tp_http *h) {
  if (h->in_curl || h->closing) return;
  while (h->n_aborts > 0) {
    tp_http_req *r = h->reqs;
    while (r && !(r->abort && !r->finished)) r = r->next;
    if (!r) break;
    finish(r, CURLE_ABORTED_BY_CALLBACK, tp_now_ns());
  }
  if (h->n_pending_add > 0) {
    for (tp_http_req *r = h->reqs; r; r = r->next) {
      if (r->added || r->finished) continue;
      r->added = true;
      h->n_pending_add--;
      if (curl_multi_add_handle(h->multi, r->easy) != CURLM_OK) {
        r->added = false;
        h->n_pending_add++;
        tp_http_fail(r, TP_ERRCLASS_PROTOCOL, "cannot start the transfer (libcurl refused it)");
      }
    }
  }
}

static void on_defer(uv_timer_t *t) {
  run_deferred(t->data);
}

static void schedule_deferred(tp_http *h) {
  if (!h->in_curl && !h->closing) uv_timer_start(&h->defer, on_defer, 0, 0);
}

static void socket_action(tp_http *h, curl_socket_t fd, int flags) {
  if (h->closing) return;
  /* The arrival time of everything this call delivers, taken before libcurl
   * reads or parses anything: for a readable socket, the kernel's stamp of
   * the data waiting in it (or the poll batch's time when there is none), so
   * that the work done on sockets read earlier in a burst does not make this
   * one's answer look late; timer-driven calls run outside the poll phase
   * and read the clock. */
  h->n_seg = 0;
  h->action_ns = 0;
  if (flags & CURL_CSELECT_IN) {
    /* Plaintext: the waiting bytes' body runs get their own stamps first;
     * that look also gives the count and the newest byte's stamp. */
    uint64_t newest = 0;
    if (h->action_rx && rx_feed(h, h->action_rx, fd, &h->seg[0].received, &newest))
      h->n_seg = 1;
    else if (tp_stamp_tcp_counts(fd, &h->seg[0].received, NULL))
      h->n_seg = 1;
    h->action_ns = newest ? newest : tp_stamp_fd(h->loop, fd, STAMP_PEEK_BYTES);
  } else {
    h->action_ns = tp_now_ns();
  }
  h->seg[0].ns = h->action_ns;
  h->action_fd = (flags & CURL_CSELECT_IN) ? fd : CURL_SOCKET_BAD;
  int running = 0;
  h->in_curl++;
  curl_multi_socket_action(h->multi, fd, flags, &running);
  h->in_curl--;
  /* The writes of this call are stamped by now (loopback stamps inside the
   * write): settle the send times it completed before anything else runs. */
  tx_sweep(h);
  check_multi_info(h);
  h->action_ns = 0;
  h->action_fd = CURL_SOCKET_BAD;
  h->action_port = 0;
  h->action_rx = NULL;
  h->n_seg = 0;
  run_deferred(h);
}

/* ---- sockets libcurl opens and closes ----------------------------------- */

/* Every new connection carries kernel receive stamps (see socket_action)
 * and transmit stamps (send stamps, above), and is noted so that a request
 * can find its socket by local port. */
int tp__http_sockopt_cb(void *ud, curl_socket_t fd, curlsocktype purpose) {
  tp_http *h = ud;
  if (purpose != CURLSOCKTYPE_IPCXN) return CURL_SOCKOPT_OK;
  (void)tp_stamp_enable_fd(fd);
  if (!h) return CURL_SOCKOPT_OK;
  if (h->n_txs == h->cap_txs) {
    size_t cap = h->cap_txs ? h->cap_txs * 2 : 16;
    tx_sock *t = realloc(h->txs, cap * sizeof(*t));
    if (!t) return CURL_SOCKOPT_OK; /* no send stamps for this one: the clock */
    h->txs = t;
    h->cap_txs = cap;
  }
  rx_conn *rx = NULL;
  if (!h->tls && (rx = calloc(1, sizeof(*rx))) && !(rx->raw = tp_http_raw_new())) {
    free(rx);
    rx = NULL; /* no tracker: the newest byte's stamp, as over TLS */
  }
  h->txs[h->n_txs++] = (tx_sock){.fd = fd, .local_port = 0, .stamps = tp_stamp_enable_tx(fd) == 0, .rx = rx};
  return CURL_SOCKOPT_OK;
}

/* libcurl closes a socket: a connection of a session's share can be closed
 * when the share is cleaned up, outside any transfer of the multi handle,
 * and then nothing tells sock_cb to stop watching it.  The watcher goes
 * first, so a new socket given the same number is never watched by it. */
int tp__http_closesocket_cb(void *ud, curl_socket_t fd) {
  tp_http *h = ud;
  for (size_t i = 0; i < h->n_txs; i++)
    if (h->txs[i].fd == fd) {
      rx_conn *rx = h->txs[i].rx;
      if (rx) {
        for (tp_http_req *r = h->reqs; r; r = r->next)
          if (r->rx == rx) r->rx = NULL;
        if (h->action_rx == rx) h->action_rx = NULL;
        rx_conn_free(rx);
      }
      h->txs[i] = h->txs[--h->n_txs];
      break;
    }
  /* A request still waiting for this socket's stamps keeps what it read. */
  tx_drain(h, fd);
  tp_http_req *next;
  for (tp_http_req *r = h->tx_list; r; r = next) {
    next = r->tx_next;
    if (r->tx_fd == fd) tx_settle(r);
  }
  for (sock_ctx *sc = h->socks; sc; sc = sc->next)
    if (sc->fd == fd) {
      if (h->multi) curl_multi_assign(h->multi, fd, NULL);
      sock_close(sc);
      break;
    }
  return close(fd);
}
/* ---- failing and closing ----------------------------------------------- */

void tp_http_fail(tp_http_req *r, tp_error_class cls, const char *message) {
  if (r->finished || r->local_failed) return;
  r->local_failed = true;
  r->local_class = cls;
  snprintf(r->local_msg, sizeof(r->local_msg), "%s", message ? message : "");
  if (!r->abort) {
    r->abort = true;
    r->h->n_aborts++;
  }
  schedule_deferred(r->h);
}

void tp_http_close(tp_http *h) {
  /* First, so that on_done callbacks cannot start new requests. */
  h->closing = true;
  while (h->reqs) {
    tp_http_req *r = h->reqs;
    if (!r->local_failed) {
      r->local_failed = true;
      r->local_class = TP_ERRCLASS_CANCELLED;
      snprintf(r->local_msg, sizeof(r->local_msg), "cancelled: the run is closing");
    }
    finish(r, CURLE_ABORTED_BY_CALLBACK, tp_now_ns());
  }
  /* libcurl closes its cached connections here and tells sock_cb to stop
   * watching them. */
  curl_multi_cleanup(h->multi);
  h->multi = NULL;
  tp__http_shares_free(&h->shares);
  while (h->socks) sock_close(h->socks);
  uv_timer_stop(&h->timer);
  uv_timer_stop(&h->defer);
  uv_close((uv_handle_t *)&h->timer, on_handle_closed);
  uv_close((uv_handle_t *)&h->defer, on_handle_closed);
}

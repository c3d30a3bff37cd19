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
#include <sys/socket.h>

#include "transport/tp_http_share.h"

static void socket_action(tp_http *h, curl_socket_t fd, int flags);

/* How far into a readable socket an arrival stamp looks: at least what
 * libcurl reads at once (its buffer is 16 KiB by default). */
#define STAMP_PEEK_BYTES (256 * 1024)

/* ---- handles ------------------------------------------------------------ */

void tp__http_maybe_free(tp_http *h) {
  if (!h->closing || h->open_handles > 0) return;
  curl_slist_free_all(h->hdr_get);
  curl_slist_free_all(h->hdr_json);
  curl_slist_free_all(h->hdr_sse);
  free(h->base_url);
  free(h->ca_file);
  free(h->cert_file);
  free(h->key_file);
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
static int local_port(curl_socket_t fd) {
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
  if (status < 0) {
    flags = CURL_CSELECT_ERR;
  } else {
    if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
  }
  /* Once per socket: a connection's port is fixed from its connect(). */
  if (!sc->local_port) sc->local_port = local_port(sc->fd);
  sc->h->action_port = sc->local_port;
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
  res.sent_ns = r->sent_ns;
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
  if (!h->action_ns) return tp_now_ns();
  if (h->action_fd == CURL_SOCKET_BAD) return h->action_ns; /* a timer's call: its clock reading */
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
  h->n_seg = (flags & CURL_CSELECT_IN) && tp_stamp_tcp_counts(fd, &h->seg[0].received, NULL) ? 1 : 0;
  h->action_ns = (flags & CURL_CSELECT_IN) ? tp_stamp_fd(h->loop, fd, STAMP_PEEK_BYTES) : tp_now_ns();
  h->seg[0].ns = h->action_ns;
  h->action_fd = (flags & CURL_CSELECT_IN) ? fd : CURL_SOCKET_BAD;
  int running = 0;
  h->in_curl++;
  curl_multi_socket_action(h->multi, fd, flags, &running);
  h->in_curl--;
  check_multi_info(h);
  h->action_ns = 0;
  h->action_fd = CURL_SOCKET_BAD;
  h->action_port = 0;
  h->n_seg = 0;
  run_deferred(h);
}

/* ---- sockets libcurl opens and closes ----------------------------------- */

/* Every new connection carries kernel receive stamps (see socket_action). */
int tp__http_sockopt_cb(void *ud, curl_socket_t fd, curlsocktype purpose) {
  (void)ud;
  if (purpose == CURLSOCKTYPE_IPCXN) (void)tp_stamp_enable_fd(fd);
  return CURL_SOCKOPT_OK;
}

/* libcurl closes a socket: a connection of a session's share can be closed
 * when the share is cleaned up, outside any transfer of the multi handle,
 * and then nothing tells sock_cb to stop watching it.  The watcher goes
 * first, so a new socket given the same number is never watched by it. */
int tp__http_closesocket_cb(void *ud, curl_socket_t fd) {
  tp_http *h = ud;
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

#include "tp_http.h"
#include "util/tp_stamp.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>

#include "config.h"
#include "transport/tp_http_share.h"

/* One uv_poll per socket libcurl asks us to watch. */
typedef struct sock_ctx {
  tp_http *h;
  uv_poll_t poll;
  curl_socket_t fd;
  struct sock_ctx *prev, *next;
} sock_ctx;

struct tp_http_req {
  tp_http *h;
  CURL *easy;
  tp_http_req_cbs cbs;
  void *user_data;
  tp_http_req *prev, *next; /* h->reqs: every request not yet finished */
  size_t body_len;
  uint64_t sent_ns;
  bool added;     /* in the multi handle */
  bool responded; /* on_response was called */
  bool finished;
  bool got_bytes; /* a byte of the answer came (header or body) */
  uint32_t resends;  /* ours and libcurl's own */
  uint32_t attempts; /* times libcurl began to send it since it was (re-)added */
  bool abort; /* stop it at the next chance (tp_http_fail) */
  bool local_failed;
  tp_error_class local_class;
  char local_msg[256];
  char errbuf[CURL_ERROR_SIZE];
  uint64_t session; /* 0, or the session whose share (connection) it uses */
};

struct tp_http {
  uv_loop_t *loop;
  CURLM *multi;
  uv_timer_t timer;   /* libcurl's timeout */
  uv_timer_t defer;   /* work asked for outside libcurl's calls */
  int in_curl;        /* inside curl_multi_socket_action */
  uint64_t action_ns; /* when the current socket event was seen */
  tp_http_req *reqs;
  size_t n_reqs;
  size_t n_pending_add; /* started inside a libcurl call, not yet added */
  size_t n_aborts;      /* marked abort, not yet finished */
  sock_ctx *socks;
  struct curl_slist *hdr_get, *hdr_json, *hdr_sse;
  char *base_url;
  char authority[288];
  bool tls;
  char *ca_file, *cert_file, *key_file;
  bool insecure, http1_only;
  uint64_t connect_timeout_ns;
  uint32_t conns_opened;
  int open_handles;
  bool closing;
  char user_agent[48];
  tp_u64map shares; /* per session in flight: its connection (tp_http_share.h) */
};

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rv;
static void curl_init(void) {
  curl_init_rv = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static void socket_action(tp_http *h, curl_socket_t fd, int flags);

/* ---- handles ------------------------------------------------------------ */

static void maybe_free(tp_http *h) {
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
  maybe_free(h);
}

static void on_sock_closed(uv_handle_t *hd) {
  sock_ctx *sc = hd->data;
  tp_http *h = sc->h;
  free(sc);
  h->open_handles--;
  maybe_free(h);
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

static void on_poll(uv_poll_t *p, int status, int events) {
  sock_ctx *sc = p->data;
  int flags = 0;
  if (status < 0) {
    flags = CURL_CSELECT_ERR;
  } else {
    if (events & UV_READABLE) flags |= CURL_CSELECT_IN;
    if (events & UV_WRITABLE) flags |= CURL_CSELECT_OUT;
  }
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

/* libcurl's reason: its error buffer, or the code's phrase. */
static const char *curl_reason(const tp_http_req *r, CURLcode code) {
  return r->errbuf[0] ? r->errbuf : curl_easy_strerror(code);
}

/* Connected, but the TLS handshake never completed: the port may speak
 * plain HTTP (or something else).  A plaintext server answers a
 * ClientHello with an error page ("wrong version number") or waits for
 * the end of a request line that never comes (a timeout). */
static bool tls_not_spoken(const tp_http *h, const tp_http_req *r, CURLcode code) {
  curl_off_t connect_us = 0, tls_us = 0;
  if (!h->tls) return false;
  curl_easy_getinfo(r->easy, CURLINFO_CONNECT_TIME_T, &connect_us);
  curl_easy_getinfo(r->easy, CURLINFO_APPCONNECT_TIME_T, &tls_us);
  if (code == CURLE_SSL_CONNECT_ERROR) return true;
  return connect_us > 0 && tls_us == 0 &&
         (code == CURLE_OPERATION_TIMEDOUT || code == CURLE_RECV_ERROR || code == CURLE_GOT_NOTHING);
}

static tp_error_class classify(const tp_http *h, const tp_http_req *r, CURLcode code, char *msg,
                               size_t msglen) {
  const char *why = curl_reason(r, code);
  /* Messages name the whole URL the request used (scheme, host, port,
   * path): the one thing a user can compare with what they meant. */
  const char *eff = NULL;
  curl_easy_getinfo(r->easy, CURLINFO_EFFECTIVE_URL, &eff);
  /* Without the query, which may hold a key (?key=...). */
  char auth[512];
  snprintf(auth, sizeof(auth), "%.*s", eff ? (int)TP_MIN(strcspn(eff, "?"), 400) : 0, eff ? eff : "");
  if (!auth[0]) snprintf(auth, sizeof(auth), "%s", h->authority);
  if (tls_not_spoken(h, r, code)) {
    snprintf(msg, msglen,
             "TLS handshake with %s failed: %s (the port may not speak TLS: if it serves plain HTTP, use "
             "http:// in --url)",
             auth, why);
    return TP_HTTP_ERRCLASS_TLS;
  }
  switch (code) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
    case CURLE_COULDNT_CONNECT:
      snprintf(msg, msglen, "cannot connect to %s: %s", auth, why);
      return TP_ERRCLASS_CONNECT;
    case CURLE_OPERATION_TIMEDOUT:
      snprintf(msg, msglen, "request to %s timed out: %s (see --request-timeout)", auth, why);
      return TP_ERRCLASS_TIMEOUT;
    case CURLE_PEER_FAILED_VERIFICATION:
      snprintf(msg, msglen, "certificate verification failed for %s: %s (use --ca-file FILE, or --insecure)",
               auth, why);
      return TP_HTTP_ERRCLASS_TLS;
    case CURLE_SSL_CACERT_BADFILE:
      snprintf(msg, msglen, "cannot use the CA certificates for %s: %s (check --ca-file)", auth, why);
      return TP_HTTP_ERRCLASS_TLS;
    case CURLE_SSL_CERTPROBLEM:
      snprintf(msg, msglen, "client certificate problem with %s: %s (check --cert and --key)", auth, why);
      return TP_HTTP_ERRCLASS_TLS;
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_USE_SSL_FAILED:
    case CURLE_SSL_SHUTDOWN_FAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
      snprintf(msg, msglen, "TLS error with %s: %s", auth, why);
      return TP_HTTP_ERRCLASS_TLS;
    case CURLE_SEND_ERROR:
    case CURLE_RECV_ERROR:
    case CURLE_GOT_NOTHING:
    case CURLE_PARTIAL_FILE:
      snprintf(msg, msglen, "connection to %s lost: %s", auth, why);
      return TP_ERRCLASS_CONNECT;
    case CURLE_HTTP2:
    case CURLE_HTTP2_STREAM:
      snprintf(msg, msglen, "HTTP/2 stream to %s reset: %s", auth, why);
      return TP_ERRCLASS_STREAM_RESET;
    case CURLE_ABORTED_BY_CALLBACK:
    case CURLE_WRITE_ERROR: snprintf(msg, msglen, "cancelled"); return TP_ERRCLASS_CANCELLED;
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_WEIRD_SERVER_REPLY:
      /* An HTTP/2-only server (a gRPC port) answers an HTTP/1.1 request
       * with binary frames (SETTINGS, GOAWAY), which libcurl reads as
       * HTTP/0.9 or as a reply it cannot parse. */
      if (strstr(why, "HTTP/0.9") || code == CURLE_WEIRD_SERVER_REPLY) {
        snprintf(msg, msglen,
                 "%s did not answer in HTTP/1.x (%s): the port seems to speak gRPC/HTTP2; for Triton's gRPC "
                 "port use --service-kind triton, else give the server's HTTP port in --url",
                 auth, why);
        return TP_ERRCLASS_PROTOCOL;
      }
      snprintf(msg, msglen, "bad HTTP exchange with %s: %s", auth, why);
      return TP_ERRCLASS_PROTOCOL;
    default: snprintf(msg, msglen, "bad HTTP exchange with %s: %s", auth, why); return TP_ERRCLASS_PROTOCOL;
  }
}

bool tp_http_should_resend(bool reused, bool got_bytes, uint32_t resends, int curl_code) {
  if (!reused || got_bytes || resends > 0) return false;
  return curl_code == CURLE_SEND_ERROR || curl_code == CURLE_RECV_ERROR || curl_code == CURLE_GOT_NOTHING;
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
    res.err_class = classify(h, r, code, msg, sizeof(msg));
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
    if (r) finish(r, m->data.result, h->action_ns ? h->action_ns : tp_now_ns());
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

/* How far into a readable socket the arrival stamp looks: at least what
 * libcurl reads in one call (its buffer is 16 KiB by default), so that no
 * byte it reads arrived after the stamp. */
#define STAMP_PEEK_BYTES (256 * 1024)

static void socket_action(tp_http *h, curl_socket_t fd, int flags) {
  if (h->closing) return;
  /* The arrival time of everything this call delivers, taken before libcurl
   * reads or parses anything: for a readable socket, the kernel's stamp of
   * the data waiting in it (or the poll batch's time when there is none), so
   * that the work done on sockets read earlier in a burst does not make this
   * one's answer look late; timer-driven calls run outside the poll phase
   * and read the clock. */
  h->action_ns = (flags & CURL_CSELECT_IN) ? tp_stamp_fd(h->loop, fd, STAMP_PEEK_BYTES) : tp_now_ns();
  int running = 0;
  h->in_curl++;
  curl_multi_socket_action(h->multi, fd, flags, &running);
  h->in_curl--;
  check_multi_info(h);
  h->action_ns = 0;
  run_deferred(h);
}

/* ---- libcurl callbacks of one transfer ---------------------------------- */

/* Every new connection carries kernel receive stamps (see socket_action). */
static int sockopt_cb(void *ud, curl_socket_t fd, curlsocktype purpose) {
  (void)ud;
  if (purpose == CURLSOCKTYPE_IPCXN) (void)tp_stamp_enable_fd(fd);
  return CURL_SOCKOPT_OK;
}

/* libcurl closes a socket: a connection of a session's share can be closed
 * when the share is cleaned up, outside any transfer of the multi handle,
 * and then nothing tells sock_cb to stop watching it.  The watcher goes
 * first, so a new socket given the same number is never watched by it. */
static int closesocket_cb(void *ud, curl_socket_t fd) {
  tp_http *h = ud;
  for (sock_ctx *sc = h->socks; sc; sc = sc->next)
    if (sc->fd == fd) {
      if (h->multi) curl_multi_assign(h->multi, fd, NULL);
      sock_close(sc);
      break;
    }
  return close(fd);
}

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *ud) {
  tp_http_req *r = ud;
  size_t n = size * nmemb;
  r->got_bytes = true;
  if (r->abort || r->local_failed) return 0; /* libcurl ends it with WRITE_ERROR */
  uint64_t t = r->h->action_ns ? r->h->action_ns : tp_now_ns();
  if (!r->responded) {
    r->responded = true;
    if (r->cbs.on_response) {
      long status = 0;
      char *ct = NULL;
      curl_easy_getinfo(r->easy, CURLINFO_RESPONSE_CODE, &status);
      curl_easy_getinfo(r->easy, CURLINFO_CONTENT_TYPE, &ct);
      if (r->cbs.on_response(r, (int)status, ct, r->user_data) < 0 || r->abort) {
        if (!r->local_failed) tp_http_cancel(r);
        return 0;
      }
    }
  }
  if (n == 0) return 0;
  if (r->cbs.on_body(r, (const uint8_t *)ptr, n, t, r->user_data) < 0 || r->abort) {
    if (!r->local_failed) tp_http_cancel(r);
    return 0;
  }
  return n;
}

/* Only notes that the answer began: a request is re-sent only when not one
 * byte of it came (try_resend). */
static size_t header_cb(char *ptr, size_t size, size_t nmemb, void *ud) {
  tp_http_req *r = ud;
  (void)ptr;
  r->got_bytes = true;
  return size * nmemb;
}

#if LIBCURL_VERSION_NUM >= 0x075000
/* Called each time libcurl is about to send the request on a connection.
 * A second call for the same transfer is libcurl's own retry on a fresh
 * connection (a reused one died before the answer began): counted as a
 * re-send like ours, with the re-send's time. */
static int prereq_cb(void *ud, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
                     int conn_local_port) {
  tp_http_req *r = ud;
  (void)conn_primary_ip, (void)conn_local_ip, (void)conn_primary_port, (void)conn_local_port;
  if (++r->attempts > 1) {
    r->resends++;
    r->sent_ns = 0;
  }
  return CURL_PREREQFUNC_OK;
}
#endif

static int xferinfo_cb(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
  tp_http_req *r = ud;
  /* libcurl counts the body as sent once it is written to the socket (with
   * the headers, for small bodies); it calls this after every step. */
  if (!r->sent_ns && r->body_len && ulnow >= (curl_off_t)r->body_len) r->sent_ns = tp_now_ns();
  return r->abort || r->local_failed;
}

/* ---- public ------------------------------------------------------------- */

static bool is_tchar(unsigned char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
         (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool has_ctl(const char *s) {
  for (; *s; s++)
    if ((unsigned char)*s < 0x20 && *s != '\t') return true;
  return false;
}

/* Length of the header name of a "Name: value" line, 0 when malformed. */
static size_t header_name_len(const char *line) {
  size_t i = 0;
  while (is_tchar((unsigned char)line[i])) i++;
  return line[i] == ':' ? i : 0;
}

static bool user_has(const tp_http_opts *o, const char *name) {
  size_t n = strlen(name);
  for (size_t i = 0; i < o->n_headers; i++)
    if (header_name_len(o->headers[i]) == n && strncasecmp(o->headers[i], name, n) == 0) return true;
  return false;
}

static int slist_add(struct curl_slist **l, const char *line) {
  struct curl_slist *n = curl_slist_append(*l, line);
  if (!n) return TP_ENOMEM;
  *l = n;
  return 0;
}

/* The header list of one request kind: ours (unless the user names the same
 * header), the user's, and the key. */
static int build_headers(struct curl_slist **out, const tp_http_opts *o, const char *ctype,
                         const char *accept) {
  struct curl_slist *l = NULL;
  int rv = 0;
  char line[64];
  if (ctype && !user_has(o, "Content-Type")) {
    snprintf(line, sizeof(line), "Content-Type: %s", ctype);
    rv = slist_add(&l, line);
  }
  if (!rv && !user_has(o, "Accept")) {
    snprintf(line, sizeof(line), "Accept: %s", accept);
    rv = slist_add(&l, line);
  }
  /* No "Expect: 100-continue" round trip before large prompts. */
  if (!rv && ctype && !user_has(o, "Expect")) rv = slist_add(&l, "Expect:");
  for (size_t i = 0; !rv && i < o->n_headers; i++) rv = slist_add(&l, o->headers[i]);
  if (!rv && o->api_key && o->api_key[0]) {
    size_t n = strlen(o->api_key) + 32;
    char *a = malloc(n);
    if (!a) {
      rv = TP_ENOMEM;
    } else {
      snprintf(a, n, "Authorization: Bearer %s", o->api_key);
      rv = slist_add(&l, a);
      /* The key is not left behind in freed memory. */
      memset(a, 0, n);
      free(a);
    }
  }
  if (rv) {
    curl_slist_free_all(l);
    return rv;
  }
  *out = l;
  return 0;
}

static char *dup_or_null(const char *s, int *rv) {
  if (!s || !*s) return NULL;
  char *d = tp_strndup(s, strlen(s));
  if (!d) *rv = TP_ENOMEM;
  return d;
}

static int check_file(const char *path, const char *what, const char *opt, char *err, size_t errlen) {
  if (!path || !*path) return 0;
  if (access(path, R_OK) != 0) {
    tp_seterr(err, errlen, "cannot read the %s %s: %s (check %s)", what, path, strerror(errno), opt);
    return TP_EINVAL;
  }
  return 0;
}

int tp_http_new(tp_http **out, uv_loop_t *loop, const tp_http_opts *o, char *err, size_t errlen) {
  pthread_once(&curl_once, curl_init);
  if (curl_init_rv != CURLE_OK) {
    tp_seterr(err, errlen, "cannot initialise libcurl: %s", curl_easy_strerror(curl_init_rv));
    return TP_ENOMEM;
  }
  const char *url = o->base_url ? o->base_url : "";
  const char *sep = strstr(url, "://");
  bool tls = sep && sep - url == 5 && strncasecmp(url, "https", 5) == 0;
  if (!sep || !(tls || (sep - url == 4 && strncasecmp(url, "http", 4) == 0))) {
    tp_seterr(err, errlen, "cannot use URL '%s': expected http://HOST:PORT or https://HOST:PORT", url);
    return TP_EINVAL;
  }
  const char *hp = sep + 3;
  size_t alen = strcspn(hp, "/?#");
  if (alen == 0 || alen >= 256 || has_ctl(url)) {
    tp_seterr(err, errlen, "cannot use URL '%s': no host (expected http://HOST:PORT)", url);
    return TP_EINVAL;
  }
  for (size_t i = 0; i < o->n_headers; i++) {
    const char *line = o->headers[i];
    size_t nl = header_name_len(line);
    if (nl == 0 || has_ctl(line)) {
      /* Quote only the name part: a malformed line may still hold a secret. */
      size_t show = strcspn(line, ": \r\n");
      tp_seterr(err, errlen, "header '%.*s...' is not 'Name: value' on one line (like 'X-Team: a')",
                (int)TP_MIN(show, 40), line);
      return TP_EINVAL;
    }
    if (o->api_key && o->api_key[0] && nl == 13 && strncasecmp(line, "Authorization", 13) == 0) {
      tp_seterr(err, errlen, "both an API key and an Authorization header were given; use one");
      return TP_EINVAL;
    }
  }
  if (o->api_key && has_ctl(o->api_key)) {
    tp_seterr(err, errlen, "the API key holds a line break or control character");
    return TP_EINVAL;
  }
  int rv = check_file(o->ca_file, "CA file", "--ca-file", err, errlen);
  if (!rv) rv = check_file(o->cert_file, "certificate file", "--cert", err, errlen);
  if (!rv) rv = check_file(o->key_file, "key file", "--key", err, errlen);
  if (rv) return rv;

  tp_http *h = calloc(1, sizeof(*h));
  if (!h) return TP_ENOMEM;
  h->loop = loop;
  h->tls = tls;
  snprintf(h->authority, sizeof(h->authority), "%.*s", (int)alen, hp);
  h->insecure = o->insecure;
  h->http1_only = o->http1_only;
  h->connect_timeout_ns = o->connect_timeout_ns;
  snprintf(h->user_agent, sizeof(h->user_agent), "tokperf/%s", TP_VERSION);
  /* Without a trailing slash, so that paths append cleanly. */
  size_t ulen = strlen(url);
  while (ulen > 0 && url[ulen - 1] == '/') ulen--;
  h->base_url = tp_strndup(url, ulen);
  if (!h->base_url) rv = TP_ENOMEM;
  h->ca_file = dup_or_null(o->ca_file, &rv);
  h->cert_file = dup_or_null(o->cert_file, &rv);
  h->key_file = dup_or_null(o->key_file, &rv);
  if (!rv) rv = build_headers(&h->hdr_get, o, NULL, "application/json");
  if (!rv) rv = build_headers(&h->hdr_json, o, "application/json", "application/json");
  if (!rv) rv = build_headers(&h->hdr_sse, o, "application/json", "text/event-stream");
  if (!rv && !(h->multi = curl_multi_init())) rv = TP_ENOMEM;
  if (rv) {
    if (h->multi) curl_multi_cleanup(h->multi);
    h->closing = true;
    maybe_free(h);
    return rv;
  }
  curl_multi_setopt(h->multi, CURLMOPT_SOCKETFUNCTION, sock_cb);
  curl_multi_setopt(h->multi, CURLMOPT_SOCKETDATA, h);
  curl_multi_setopt(h->multi, CURLMOPT_TIMERFUNCTION, timer_cb);
  curl_multi_setopt(h->multi, CURLMOPT_TIMERDATA, h);
  curl_multi_setopt(h->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
  /* One connection per request in flight over HTTP/1.1: no cap unless asked. */
  curl_multi_setopt(h->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)o->max_host_connections);
  if (o->max_idle_connections)
    curl_multi_setopt(h->multi, CURLMOPT_MAXCONNECTS, (long)o->max_idle_connections);
  uv_timer_init(loop, &h->timer);
  h->timer.data = h;
  uv_timer_init(loop, &h->defer);
  h->defer.data = h;
  h->open_handles = 2;
  *out = h;
  return 0;
}

int tp_http_request(tp_http *h, const tp_http_req_opts *ro, const tp_http_req_cbs *cbs, void *user_data,
                    tp_http_req **out) {
  if (h->closing || !cbs || !cbs->on_body || !cbs->on_done || !ro->path) return TP_EINVAL;
  tp_http_req *r = calloc(1, sizeof(*r));
  if (!r) return TP_ENOMEM;
  r->h = h;
  r->cbs = *cbs;
  r->user_data = user_data;
  r->easy = curl_easy_init();
  tp_buf url;
  tp_buf_init(&url);
  bool full = strncasecmp(ro->path, "http://", 7) == 0 || strncasecmp(ro->path, "https://", 8) == 0;
  int rv = r->easy ? 0 : TP_ENOMEM;
  if (!rv)
    rv = full ? tp_buf_append_str(&url, ro->path)
              : tp_buf_printf(&url, "%s%s%s", h->base_url, ro->path[0] == '/' ? "" : "/", ro->path);
  if (rv) {
    if (r->easy) curl_easy_cleanup(r->easy);
    tp_buf_fini(&url);
    free(r);
    return rv;
  }
  CURL *e = r->easy;
  CURLcode c = CURLE_OK;
#define SET(opt, val) \
  if (c == CURLE_OK) c = curl_easy_setopt(e, opt, val)
  SET(CURLOPT_URL, (const char *)url.data);
  SET(CURLOPT_PRIVATE, (void *)r);
  SET(CURLOPT_NOSIGNAL, 1L);
  SET(CURLOPT_ERRORBUFFER, r->errbuf);
  SET(CURLOPT_WRITEFUNCTION, write_cb);
  SET(CURLOPT_WRITEDATA, (void *)r);
  SET(CURLOPT_HEADERFUNCTION, header_cb);
  SET(CURLOPT_HEADERDATA, (void *)r);
#if LIBCURL_VERSION_NUM >= 0x075000
  SET(CURLOPT_PREREQFUNCTION, prereq_cb);
  SET(CURLOPT_PREREQDATA, (void *)r);
#endif
  SET(CURLOPT_XFERINFOFUNCTION, xferinfo_cb);
  SET(CURLOPT_XFERINFODATA, (void *)r);
  SET(CURLOPT_NOPROGRESS, 0L);
  SET(CURLOPT_USERAGENT, h->user_agent);
  SET(CURLOPT_TCP_NODELAY, 1L);
  SET(CURLOPT_SOCKOPTFUNCTION, sockopt_cb);
  SET(CURLOPT_CLOSESOCKETFUNCTION, closesocket_cb);
  SET(CURLOPT_CLOSESOCKETDATA, (void *)h);
  if (ro->session) {
    /* Without a share (out of memory) the turn still goes, on any connection. */
    CURLSH *sh = tp__http_share_take(&h->shares, ro->session);
    if (sh) {
      SET(CURLOPT_SHARE, sh);
      r->session = ro->session;
    }
  }
  SET(CURLOPT_FOLLOWLOCATION, 0L);
  SET(CURLOPT_HTTP_VERSION, h->http1_only ? (long)CURL_HTTP_VERSION_1_1 : (long)CURL_HTTP_VERSION_2TLS);
  /* Over TLS, wait for the first connection's ALPN answer before opening
   * more: when it is HTTP/2 every request shares it. */
  if (h->tls && !h->http1_only) SET(CURLOPT_PIPEWAIT, 1L);
  if (ro->timeout_ns) SET(CURLOPT_TIMEOUT_MS, (long)((ro->timeout_ns + TP_NS_PER_MS - 1) / TP_NS_PER_MS));
  if (h->connect_timeout_ns)
    SET(CURLOPT_CONNECTTIMEOUT_MS, (long)((h->connect_timeout_ns + TP_NS_PER_MS - 1) / TP_NS_PER_MS));
  SET(CURLOPT_SSL_VERIFYPEER, h->insecure ? 0L : 1L);
  SET(CURLOPT_SSL_VERIFYHOST, h->insecure ? 0L : 2L);
  if (h->ca_file) SET(CURLOPT_CAINFO, h->ca_file);
  if (h->cert_file) SET(CURLOPT_SSLCERT, h->cert_file);
  if (h->key_file) SET(CURLOPT_SSLKEY, h->key_file);
  if (ro->post) {
    SET(CURLOPT_HTTPHEADER, ro->accept_sse ? h->hdr_sse : h->hdr_json);
    SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)ro->body_len);
    SET(CURLOPT_COPYPOSTFIELDS, ro->body_len ? (const char *)ro->body : "");
    r->body_len = ro->body_len;
  } else {
    SET(CURLOPT_HTTPHEADER, h->hdr_get);
    SET(CURLOPT_HTTPGET, 1L);
  }
#undef SET
  tp_buf_fini(&url); /* libcurl copied it */
  if (c != CURLE_OK) {
    curl_easy_cleanup(e);
    if (r->session) tp__http_share_put(&h->shares, r->session);
    free(r);
    return c == CURLE_OUT_OF_MEMORY ? TP_ENOMEM : TP_EINVAL;
  }
  if (h->in_curl) {
    /* Inside a libcurl callback: added when libcurl returns. */
    h->n_pending_add++;
  } else {
    if (curl_multi_add_handle(h->multi, e) != CURLM_OK) {
      curl_easy_cleanup(e);
      if (r->session) tp__http_share_put(&h->shares, r->session);
      free(r);
      return TP_EINVAL;
    }
    r->added = true;
  }
  r->next = h->reqs;
  if (h->reqs) h->reqs->prev = r;
  h->reqs = r;
  h->n_reqs++;
  if (out) *out = r;
  return 0;
}

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

void tp_http_cancel(tp_http_req *r) {
  tp_http_fail(r, TP_ERRCLASS_CANCELLED, "cancelled");
}

void tp_http_cancel_all(tp_http *h) {
  for (tp_http_req *r = h->reqs; r; r = r->next) tp_http_cancel(r);
}

tp_error_class tp_http_local_class(const tp_http_req *r) {
  return r->local_failed ? r->local_class : TP_ERRCLASS_NONE;
}

const char *tp_http_authority(const tp_http *h) {
  return h->authority;
}
uint32_t tp_http_connections_opened(const tp_http *h) {
  return h->conns_opened;
}
size_t tp_http_active(const tp_http *h) {
  return h->n_reqs;
}

void tp_http_session_end(tp_http *h, uint64_t session) {
  if (session) tp__http_share_end(&h->shares, session);
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

#include "tp_http_internal.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "config.h"
#include "transport/tp_http_share.h"

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rv;
static void curl_init(void) {
  curl_init_rv = curl_global_init(CURL_GLOBAL_DEFAULT);
}


/* ---- libcurl callbacks of one transfer ---------------------------------- */

static size_t write_cb(char *ptr, size_t size, size_t nmemb, void *ud) {
  tp_http_req *r = ud;
  size_t n = size * nmemb;
  /* The answer began: every byte of the request was sent. */
  if (!r->got_bytes) tp__http_tx_final(r);
  r->got_bytes = true;
  if (r->abort || r->local_failed) return 0; /* libcurl ends it with WRITE_ERROR */
  /* Body bytes are dated by the stamp of the segment that brought their
   * last byte when the connection's tracker saw them before libcurl read
   * them (tp_http_loop.c, "arrival stamps"); otherwise by the newest
   * stamp of what this call read.  Bytes of one answer arrive in order:
   * never dated before the ones delivered earlier (which may have had the
   * clock, when read past every stamp, and the next bytes an earlier stamp
   * taken after that). */
  uint64_t t = tp__http_rx_body_ns(r, n);
  if (!t) t = tp__http_arrival_ns(r);
  r->body_seen += n;
  if (t < r->last_arrival_ns) t = r->last_arrival_ns;
  r->last_arrival_ns = t;
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
  uint64_t began = tp_now_ns();
  if (r->cbs.on_body(r, (const uint8_t *)ptr, n, t, r->user_data) < 0 || r->abort) {
    if (!r->local_failed) tp_http_cancel(r);
    return 0;
  }
  tp__http_after_body(r, began);
  return n;
}

/* Notes that the answer began (a request is re-sent only when not one byte
 * of it came: try_resend), and keeps the reply's x-request-id. */
static size_t header_cb(char *ptr, size_t size, size_t nmemb, void *ud) {
  tp_http_req *r = ud;
  size_t n = size * nmemb;
  if (!r->got_bytes) tp__http_tx_final(r);
  r->got_bytes = true;
  static const char name[] = "x-request-id:";
  if (n > sizeof(name) - 1 && strncasecmp(ptr, name, sizeof(name) - 1) == 0) {
    size_t i = sizeof(name) - 1, e = n;
    while (i < e && (ptr[i] == ' ' || ptr[i] == '\t')) i++;
    while (e > i && (ptr[e - 1] == '\r' || ptr[e - 1] == '\n' || ptr[e - 1] == ' ' || ptr[e - 1] == '\t')) e--;
    size_t len = TP_MIN(e - i, sizeof(r->resp_request_id) - 1);
    memcpy(r->resp_request_id, ptr + i, len);
    r->resp_request_id[len] = 0;
  }
  return n;
}

#if LIBCURL_VERSION_NUM >= 0x075000
/* Called each time libcurl is about to send the request on a connection.
 * A second call for the same transfer is libcurl's own retry on a fresh
 * connection (a reused one died before the answer began): counted as a
 * re-send like ours, with the re-send's time. */
static int prereq_cb(void *ud, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port,
                     int conn_local_port) {
  tp_http_req *r = ud;
  (void)conn_primary_ip, (void)conn_local_ip, (void)conn_primary_port;
  r->local_port = conn_local_port;
  if (++r->attempts > 1) {
    r->resends++;
    r->sent_ns = 0;
  }
  tp__http_tx_begin(r, conn_local_port);
  tp__http_rx_begin(r, conn_local_port);
  return CURL_PREREQFUNC_OK;
}
#endif

static int xferinfo_cb(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow) {
  tp_http_req *r = ud;
  /* libcurl counts the body as sent once it is written to the socket (with
   * the headers, for small bodies); it calls this after every step, but
   * only after serving other transfers of the same call: the clock here is
   * a fallback, the kernel's stamp of the write is the send time. */
  if (!r->uploaded && r->body_len && ulnow >= (curl_off_t)r->body_len) tp__http_tx_uploaded(r, tp_now_ns());
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
/* The user's header lines and key: each one line, "Name: value", and not
 * both a key and an Authorization header. */
static int check_headers(const tp_http_opts *o, char *err, size_t errlen) {
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
  if (check_headers(o, err, errlen)) return TP_EINVAL;
  int rv = check_file(o->ca_file, "CA file", "--ca-file", err, errlen);
  if (!rv) rv = check_file(o->cert_file, "certificate file", "--cert", err, errlen);
  if (!rv) rv = check_file(o->key_file, "key file", "--key", err, errlen);
  if (rv) return rv;

  tp_http *h = calloc(1, sizeof(*h));
  if (!h) return TP_ENOMEM;
  h->loop = loop;
  h->action_fd = CURL_SOCKET_BAD;
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
  h->user_request_id = user_has(o, "x-request-id");
  h->user_traceparent = user_has(o, "traceparent");
  if (!rv) rv = build_headers(&h->hdr_get, o, NULL, "application/json");
  if (!rv) rv = build_headers(&h->hdr_json, o, "application/json", "application/json");
  if (!rv) rv = build_headers(&h->hdr_sse, o, "application/json", "text/event-stream");
  if (!rv && !(h->multi = curl_multi_init())) rv = TP_ENOMEM;
  if (rv) {
    if (h->multi) curl_multi_cleanup(h->multi);
    h->closing = true;
    tp__http_maybe_free(h);
    return rv;
  }
  tp__http_watch_multi(h);
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

/* Every libcurl option of one request; the first failure's code. */
static CURLcode set_options(tp_http_req *r, const tp_http_req_opts *ro, const char *url) {
  tp_http *h = r->h;
  CURL *e = r->easy;
  CURLcode c = CURLE_OK;
#define SET(opt, val) \
  if (c == CURLE_OK) c = curl_easy_setopt(e, opt, val)
  SET(CURLOPT_URL, url);
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
  SET(CURLOPT_SOCKOPTFUNCTION, tp__http_sockopt_cb);
  SET(CURLOPT_SOCKOPTDATA, (void *)h);
  SET(CURLOPT_CLOSESOCKETFUNCTION, tp__http_closesocket_cb);
  SET(CURLOPT_CLOSESOCKETDATA, (void *)h);
  if (ro->session) {
    /* Without a share (out of memory) the turn still goes, on any connection. */
    CURLSH *sh = tp__http_share_take(&h->shares, ro->session);
    if (sh) {
      SET(CURLOPT_SHARE, sh);
      r->session = ro->session;
    }
  }
  if (ro->own_connection) {
    SET(CURLOPT_FRESH_CONNECT, 1L);
    SET(CURLOPT_FORBID_REUSE, 1L);
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
    /* The request's own lines first, chained onto the shared list. */
    struct curl_slist *list = ro->accept_sse ? h->hdr_sse : h->hdr_json;
    const char *names[2] = {"x-request-id", "traceparent"};
    const char *vals[2] = {h->user_request_id ? NULL : ro->request_id, h->user_traceparent ? NULL : ro->traceparent};
    for (int i = 1; i >= 0; i--) {
      if (!vals[i] || !*vals[i]) continue;
      snprintf(r->xh_line[i], sizeof(r->xh_line[i]), "%s: %.*s", names[i], TP_HTTP_XH_MAX - 16, vals[i]);
      r->xh[i].data = r->xh_line[i];
      r->xh[i].next = list;
      list = &r->xh[i];
    }
    SET(CURLOPT_HTTPHEADER, list);
    SET(CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)ro->body_len);
    SET(CURLOPT_COPYPOSTFIELDS, ro->body_len ? (const char *)ro->body : "");
    r->body_len = ro->body_len;
  } else {
    SET(CURLOPT_HTTPHEADER, h->hdr_get);
    SET(CURLOPT_HTTPGET, 1L);
  }
#undef SET
  return c;
}

int tp_http_request(tp_http *h, const tp_http_req_opts *ro, const tp_http_req_cbs *cbs, void *user_data,
                    tp_http_req **out) {
  if (h->closing || !cbs || !cbs->on_body || !cbs->on_done || !ro->path) return TP_EINVAL;
  tp_http_req *r = calloc(1, sizeof(*r));
  if (!r) return TP_ENOMEM;
  r->h = h;
  r->cbs = *cbs;
  r->user_data = user_data;
  r->tx_fd = CURL_SOCKET_BAD;
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
  CURLcode c = set_options(r, ro, (const char *)url.data);
  CURL *e = r->easy;
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

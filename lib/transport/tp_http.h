/* HTTP requests on the run's libuv loop, through libcurl's multi-socket
 * interface: libcurl does HTTP/1.1 (keep-alive, chunked bodies), HTTPS
 * (OpenSSL) and HTTP/2 where the server offers it through ALPN; libuv tells
 * libcurl when its sockets are ready (one uv_poll per socket, one uv_timer
 * for libcurl's timeout).
 *
 * Connections: libcurl keeps finished connections open and reuses them, so
 * with HTTP/1.1 each request in flight has a connection of its own and a
 * closed-loop run reuses the same ones.  HTTP/2 multiplexes (up to libcurl's
 * 100 streams per connection, then another connection).  A request that
 * went out on a reused connection the server had just closed is sent again
 * on a fresh one (tp_http_should_resend) and counted in its result's
 * resends, not failed.  Proxies come from
 * the usual environment variables (http_proxy, https_proxy, no_proxy), as
 * libcurl does by default; nothing here turns that off.
 *
 * Timestamps: when a socket becomes readable the poll callback takes
 * tp_now_ns() before calling curl_multi_socket_action, and every body byte
 * libcurl delivers during that call carries that time.  Two limits: libcurl
 * (7.88) goes on reading inside one call while a zero-timeout poll says the
 * socket is readable, so bytes that land during the call (the first body
 * chunk right behind the headers) carry its start time, early by at most
 * the call's duration (under 1 ms on loopback); bytes libcurl had already
 * read and kept (TLS records decrypted ahead) are delivered on a timer call
 * and carry that call's time, late by at most one loop iteration.
 *
 * Secrets: the API key is written only into the Authorization request
 * header.  It never appears in messages, and libcurl's error buffer holds
 * no header text. */
#ifndef TP_HTTP_H
#define TP_HTTP_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "util/tp_common.h"

/* tokperf.h has no TLS or HTTP-status class yet; these stand in until the
 * proposed TP_ERRCLASS_TLS and TP_ERRCLASS_HTTP_STATUS exist (then define
 * them as those). */
#ifndef TP_HTTP_ERRCLASS_TLS
#define TP_HTTP_ERRCLASS_TLS TP_ERRCLASS_TLS
#endif
#ifndef TP_HTTP_ERRCLASS_HTTP_STATUS
#define TP_HTTP_ERRCLASS_HTTP_STATUS TP_ERRCLASS_HTTP_STATUS
#endif

typedef struct tp_http tp_http;
typedef struct tp_http_req tp_http_req;

typedef struct tp_http_opts {
  /* "http://host:port[/prefix]" or "https://..."; request paths are
   * appended.  Copied. */
  const char *base_url;
  /* "Name: value" lines sent on every request (copied).  One of ours
   * (Content-Type, Accept) is left out when a line names the same header;
   * "Name:" with nothing after it removes a header libcurl would send. */
  const char *const *headers;
  size_t n_headers;
  /* Sent as "Authorization: Bearer KEY" and nowhere else; NULL or "" =
   * none.  Copied. */
  const char *api_key;
  const char *ca_file;           /* PEM bundle to verify the server with; NULL = system CAs */
  const char *cert_file;         /* client certificate (PEM), NULL = none */
  const char *key_file;          /* its private key (PEM), NULL = in cert_file */
  bool insecure;                 /* skip certificate and host name verification */
  bool http1_only;               /* do not offer HTTP/2 through ALPN */
  uint32_t max_host_connections; /* 0 = no limit */
  uint32_t max_idle_connections; /* connection cache size, 0 = libcurl's (4 x transfers) */
  uint64_t connect_timeout_ns;   /* 0 = libcurl's default (300 s) */
} tp_http_opts;

typedef struct tp_http_result {
  /* TP_ERRCLASS_NONE when a whole response arrived, whatever its status;
   * otherwise why the transfer failed: CONNECT (cannot connect, or the
   * connection was lost mid-response), TP_HTTP_ERRCLASS_TLS, TIMEOUT,
   * STREAM_RESET (HTTP/2), PROTOCOL (not HTTP), CANCELLED, or the class
   * given to tp_http_fail. */
  tp_error_class err_class;
  int status;          /* HTTP status; 0 = none arrived */
  /* Why it failed ("" when it did not), naming the request's whole URL;
   * it says when the port seems to speak no TLS (https://) or gRPC/HTTP2
   * only (an HTTP/1.1 request answered with binary frames).  Borrowed. */
  const char *message;
  uint64_t sent_ns;    /* when the request's last byte went out; 0 = unknown */
  bool sent_kernel;    /* sent_ns is the kernel's transmit stamp (else the clock) */
  /* When the transfer ended: the time taken when the socket event that
   * completed it was seen (the end of the body), or when it failed. */
  uint64_t end_ns;
  int http_version; /* 1 or 2; 0 = no response */
  /* Times the request was sent again on a fresh connection (0 or 1; see
   * tp_http_should_resend); sent_ns is then the re-send's. */
  uint32_t resends;
  /* The reply's x-request-id header (the server's id of the request, or
   * the one sent, echoed), trimmed; NULL = none.  Borrowed. */
  const char *request_id;
} tp_http_result;

typedef struct tp_http_req_cbs {
  /* Status and Content-Type (NULL when absent), once, before the first body
   * byte; a response without a body reports its status in on_done only.
   * Return 0, or a negative code to abort (see on_body).  May be NULL. */
  int (*on_response)(tp_http_req *r, int status, const char *content_type, void *user_data);
  /* Body bytes with the transfer coding removed.  arrival_ns: see the file
   * comment.  Return 0, or a negative code to abort the transfer (after
   * tp_http_fail, which sets the class and message; otherwise the request
   * ends CANCELLED).  Must not start or finish requests synchronously other
   * than through tp_http_request / tp_http_fail, which defer their work. */
  int (*on_body)(tp_http_req *r, const uint8_t *data, size_t len, uint64_t arrival_ns, void *user_data);
  /* Called exactly once per successfully started request, last; the
   * request is freed after it returns.  May start new requests; must not
   * close the tp_http. */
  void (*on_done)(tp_http_req *r, const tp_http_result *res, void *user_data);
} tp_http_req_cbs;

typedef struct tp_http_req_opts {
  bool post;           /* POST body (Content-Type: application/json), else GET */
  const char *path;    /* appended to base_url; a full http(s):// URL is used as it is */
  const uint8_t *body; /* copied */
  size_t body_len;
  bool accept_sse;     /* Accept: text/event-stream (else application/json) */
  uint64_t timeout_ns; /* whole request, 0 = none */
  /* 0, or a session's number: the session's requests keep to one
   * connection of their own (tp_http_share.h) until tp_http_session_end. */
  uint64_t session;
  /* A connection of its own, closed when the request ends: no other request
   * ever goes out on it (a check before the measured requests, whose
   * connection a server may leave in a state that delays the next answer
   * on it: Nagle's algorithm against the client's delayed ACK). */
  bool own_connection;
  /* Per-request headers of a POST (docs/metrics.md, "Request ids"), each
   * NULL = none: "x-request-id: ID" and "traceparent: VALUE" (W3C Trace
   * Context).  A -H line naming the same header replaces them.  Copied;
   * cut at TP_HTTP_XH_MAX - 16 bytes. */
  const char *request_id;
  const char *traceparent;
} tp_http_req_opts;

#define TP_HTTP_XH_MAX 160

/* Creates the HTTP client.  Returns 0, or TP_EINVAL with a message (a bad
 * base URL, header line or API key, an unreadable CA, certificate or key
 * file) — the message never quotes the API key — or TP_ENOMEM. */
int tp_http_new(tp_http **out, uv_loop_t *loop, const tp_http_opts *o, char *err, size_t errlen);

/* Starts a request.  Returns 0 (on_done will be called, never from inside
 * this call), or TP_ENOMEM / TP_EINVAL (no callback).  Safe to call from
 * any callback of this module. */
int tp_http_request(tp_http *h, const tp_http_req_opts *ro, const tp_http_req_cbs *cbs, void *user_data,
                    tp_http_req **out);

/* Fails a request with a class and message of the caller's (copied, cut to
 * 255 bytes); the transfer is stopped and on_done follows (never from
 * inside this call).  Nothing happens when it already failed or ended. */
void tp_http_fail(tp_http_req *r, tp_error_class cls, const char *message);
/* tp_http_fail with TP_ERRCLASS_CANCELLED. */
void tp_http_cancel(tp_http_req *r);
/* tp_http_cancel on every request started and not yet ended. */
void tp_http_cancel_all(tp_http *h);
/* The class given to tp_http_fail / tp_http_cancel, TP_ERRCLASS_NONE when
 * the request was not failed locally.  Valid until on_done returns. */
tp_error_class tp_http_local_class(const tp_http_req *r);

/* Whether a transfer that ended with libcurl's code curl_code (a CURLcode)
 * is sent again on a fresh connection rather than failed: it went out on a
 * reused connection (CURLINFO_NUM_CONNECTS was 0: no attempt of it opened
 * a connection), not one byte of the answer (status line, header or body)
 * came back, it was re-sent fewer than TP_HTTP_MAX_RESENDS times, and the
 * code says the connection was lost (SEND_ERROR, RECV_ERROR, GOT_NOTHING).
 * A re-send goes out on a fresh connection, so one that is lost again
 * failed on a fresh connection and is never re-sent: a server that resets
 * new connections is refusing them (a full listen queue, a connection
 * limit), which is a failure to count, and trying again would only add to
 * its load.  Only libcurl's own retry can put a request on a second reused
 * connection (several kept-alive connections closed at once by an idle
 * timeout), which is why the bound is not 1.  That is a server closing a kept-alive
 * connection just as the request went out (llama-server closes after every
 * stream; many servers close idle ones after a few seconds), which almost
 * always means the server never read the request.  libcurl retries some
 * of these itself (a read error or an empty answer caught early) but not a
 * poll error on the socket, which is how a reset often shows; this makes
 * the retry explicit and counted.  Pure; the caller also leaves out
 * requests failed or cancelled locally. */
bool tp_http_should_resend(bool reused, bool got_bytes, uint32_t resends, int curl_code);
/* The most times one request is sent again (ours and libcurl's own). */
#define TP_HTTP_MAX_RESENDS 3

/* "host:port" of the base URL, for messages. */
const char *tp_http_authority(const tp_http *h);
/* Connections libcurl opened so far (counted as transfers end). */
uint32_t tp_http_connections_opened(const tp_http *h);
/* Requests started and not yet ended. */
size_t tp_http_active(const tp_http *h);

/* Fails every request with CANCELLED (their on_done runs inside this
 * call), closes every connection, and frees h once libuv has closed the
 * handles (the loop must run for that). */
void tp_http_close(tp_http *h);
/* A session is over: its connection closes once its last request ends. */
void tp_http_session_end(tp_http *h, uint64_t session);

#endif

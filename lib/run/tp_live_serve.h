/* The live metrics endpoint (--metrics-port, docs/metrics.md "Live
 * metrics"): a small HTTP/1.1 server on the run's libuv loop that answers
 * GET /metrics with what a render function writes, then closes the
 * connection.
 *
 * It never blocks the loop and allocates nothing per scrape: a fixed
 * number of connection slots, each with its own request buffer and a
 * response buffer that is reused (it grows only while the exposition
 * does).  A client that sends nothing, reads nothing or vanishes is closed
 * after a timeout; while every slot is busy, new connections wait in the
 * listen backlog (the listening socket is not read until a slot frees).
 * Its handles do not keep the loop alive: it answers while the run's loop
 * runs, that is while a level runs and while --metrics-hold holds it. */
#ifndef TP_LIVE_SERVE_H
#define TP_LIVE_SERVE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "util/tp_common.h"

typedef struct tp_live_server tp_live_server;

/* Appends the body of a scrape to out (empty on entry); 0 or an error. */
typedef int (*tp_live_render_fn)(void *ctx, tp_buf *out);

/* Slots of connections served at once, and how long one may take from its
 * accept to its close (a client that does not send its request or read
 * its answer in that time is dropped). */
#define TP_LIVE_SLOTS 4
#define TP_LIVE_CONN_TIMEOUT_MS 5000
/* A request head longer than this is refused (400). */
#define TP_LIVE_REQ_MAX 4096

/* Listens on host:port (host: an IPv4 or IPv6 address).  Returns 0, or
 * TP_EINVAL / TP_EIO with a message in err that names the address. */
int tp_live_server_start(tp_live_server **out, uv_loop_t *loop, const char *host, uint32_t port,
                         tp_live_render_fn fn, void *ctx, char *err, size_t errlen);
/* Scrapes answered with 200 so far. */
uint64_t tp_live_server_scrapes(const tp_live_server *s);
/* Closes the listener and every connection; the server is freed once the
 * loop has run their close callbacks.  NULL is ignored. */
void tp_live_server_close(tp_live_server *s);

/* What a request head asks (no I/O): the head is complete once an empty
 * line ends it (CRLF CRLF; a bare LF is accepted, RFC 9112 section 2.2). */
typedef enum tp_live_req {
  TP_LIVE_REQ_MORE,       /* the head is not complete yet */
  TP_LIVE_REQ_METRICS,    /* GET or HEAD of /metrics (any query) */
  TP_LIVE_REQ_NOT_FOUND,  /* GET or HEAD of another path: 404 */
  TP_LIVE_REQ_BAD_METHOD, /* another method: 405 */
  TP_LIVE_REQ_BAD         /* not an HTTP/1.x request line: 400 */
} tp_live_req;

/* head_only: set for a HEAD of a path (answered without a body, 200 or
 * 404).  Reads buf[0..len). */
tp_live_req tp_live_parse_request(const char *buf, size_t len, bool *head_only);

#endif

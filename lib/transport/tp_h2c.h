/* gRPC calls over a pool of HTTP/2 connections (h2c, prior knowledge),
 * driven by one libuv loop through nghttp2.
 *
 * Each call is one HTTP/2 stream: HEADERS, the request message(s) with
 * END_STREAM, then response messages until the trailers (one
 * ModelStreamInfer call per inference request).  The pool opens
 * up to `connections` connections, waits for each server's SETTINGS before
 * opening streams on it, never exceeds its MAX_CONCURRENT_STREAMS (further
 * calls wait in a FIFO queue, or go to another connection), and stops using
 * a connection after GOAWAY.  A call the server did not process (refused,
 * above a GOAWAY's last_stream_id, or lost with a reused connection before
 * any byte of its answer: tp_grpc_may_resend) is sent again on another
 * connection instead of failing.
 *
 * Timestamps: every message delivered from one socket read carries the time
 * that read returned, taken before any HTTP/2 or protobuf parsing. */
#ifndef TP_H2C_H
#define TP_H2C_H

#include <stdint.h>
#include <sys/socket.h>

#include <uv.h>

#include "util/tp_common.h"
#include "util/tp_timer.h"

typedef struct tp_h2c_pool tp_h2c_pool;
typedef struct tp_call tp_call;

typedef struct tp_call_result {
  int grpc_status;          /* 0 = OK; the synthesised status on transport failure */
  tp_error_class err_class; /* TP_ERRCLASS_NONE when grpc_status == 0 */
  const char *message;      /* decoded grpc-message or transport error; borrowed */
  uint64_t sent_ns;         /* when the request's last frame went to the socket; 0 = never */
  uint64_t end_ns;          /* when the call ended */
  /* Times the call was sent again on another connection because the server
   * had certainly not processed it (tp_grpc_may_resend); sent_ns is then
   * the last send's. */
  uint32_t resends;
} tp_call_result;

typedef struct tp_call_cbs {
  /* One complete gRPC message.  data is borrowed for the call; arrival_ns is
   * when the socket read that completed it returned.  May start new calls;
   * must not free the pool. */
  void (*on_message)(tp_call *c, const uint8_t *data, size_t len, uint64_t arrival_ns, void *user_data);
  /* Called exactly once per successfully started call, last.  The call is
   * freed after it returns. */
  void (*on_close)(tp_call *c, const tp_call_result *res, void *user_data);
} tp_call_cbs;

typedef struct tp_h2c_opts {
  struct sockaddr_storage addr; /* resolved server address */
  const char *authority;        /* "host:port" for :authority and messages */
  uint32_t connections;         /* connections to spread calls over (>= 1) */
  uint32_t max_msg_bytes;       /* largest response message accepted */
  /* Extra request headers, "name" / "value" pairs (borrowed, outlive the
   * pool); n_headers pairs. */
  const char *const *headers;
  size_t n_headers;
  /* TLS (grpcs://): ALPN h2, the server's certificate and host name
   * verified unless insecure.  host is the name to verify and send as SNI. */
  bool tls;
  const char *host;
  const char *ca_file;   /* PEM bundle; NULL = the system's */
  const char *cert_file; /* client certificate, NULL = none */
  const char *key_file;  /* its key; NULL = inside cert_file */
  bool insecure;
  /* Read the connections' sockets on a thread of their own (tp_reader.h),
   * which never waits on the loop's work: bytes keep their own arrival
   * times while the loop is busy with a wave of sends or answers. */
  bool reader_thread;
  /* Timers served between slices of a long read (NULL: none): a burst of
   * answers read at once is parsed a slice at a time, and a deadline due
   * meanwhile (the next request's send time) runs in between, its writes
   * leaving at once, instead of waiting for the whole burst. */
  tp_timers *yield_to;
} tp_h2c_opts;

/* Creates a pool; connections are opened as calls need them.  Returns 0,
 * TP_ENOMEM, or TP_EINVAL with a message in err when the TLS settings
 * cannot be used (an unreadable CA file or certificate). */
int tp_h2c_pool_new(tp_h2c_pool **out, uv_loop_t *loop, const tp_h2c_opts *o, char *err, size_t errlen);

/* Starts a call on `path` ("/package.Service/Method") sending `body` (one
 * or more framed messages, copied) and half-closing.  timeout_ns > 0 sends
 * grpc-timeout and fails the call locally with DEADLINE_EXCEEDED when it
 * passes.  Returns 0 (cbs->on_close will be called) or TP_ENOMEM /
 * TP_EINVAL (no callback will be called). */
int tp_h2c_call(tp_h2c_pool *p, const char *path, const uint8_t *body, size_t len,
                uint64_t timeout_ns, const tp_call_cbs *cbs, void *user_data, tp_call **out);

/* The same for one turn of a session (session != 0): its turns go to one
 * connection, the first turn's, while that connection stays open and has
 * room; a re-send or a closed connection moves the session to another,
 * which its later turns then keep to. */
int tp_h2c_call_session(tp_h2c_pool *p, uint64_t session, const char *path, const uint8_t *body, size_t len,
                        uint64_t timeout_ns, const tp_call_cbs *cbs, void *user_data, tp_call **out);
/* tp_h2c_call_session with the call's own "traceparent" metadata (W3C
 * Trace Context; NULL or "" = none; copied, at most 63 bytes). */
int tp_h2c_call_traced(tp_h2c_pool *p, uint64_t session, const char *path, const uint8_t *body, size_t len,
                       uint64_t timeout_ns, const char *traceparent, const tp_call_cbs *cbs, void *user_data,
                       tp_call **out);
/* The session is over: its connection is free for anyone. */
void tp_h2c_session_end(tp_h2c_pool *p, uint64_t session);

/* Cancels a call (RST_STREAM CANCEL); on_close follows with CANCELLED. */
void tp_h2c_cancel(tp_call *c);

/* Cancels every call, queued or open (grace period over, shutting down):
 * each on_close follows with CANCELLED.  Queued calls end at once. */
void tp_h2c_cancel_all(tp_h2c_pool *p);

/* Holds the writes of new calls while true (nested calls count): a caller
 * about to start several calls at once (an open loop that fell behind)
 * gets them into one write instead of one each (a held call joins a
 * connection whose write already waits).  Releasing the last hold writes
 * what waits. */
void tp_h2c_pool_hold(tp_h2c_pool *p, bool hold);

/* Calls queued or open. */
size_t tp_h2c_active_calls(const tp_h2c_pool *p);
/* The most streams open at once on one connection, and connections opened. */
uint32_t tp_h2c_max_streams_seen(const tp_h2c_pool *p);
uint32_t tp_h2c_connections_opened(const tp_h2c_pool *p);

/* Fails every call with CANCELLED, closes every connection, and frees the
 * pool once libuv has closed the handles (the loop must run for that). */
void tp_h2c_pool_close(tp_h2c_pool *p);

/* Resolves "host:port" (blocking; done once before a run).  Returns 0, or
 * TP_EINVAL / TP_ECONNECT with a message naming the address. */
int tp_h2c_resolve(const char *host_port, struct sockaddr_storage *addr,
                   char *err, size_t errlen);

#endif

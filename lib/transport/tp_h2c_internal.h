/* What the parts of the HTTP/2 client share (tp_h2c.c: the pool, dispatch
 * and deadlines; tp_h2c_call.c: a call's stream, its end and the re-send
 * rule; tp_h2c_conn.c: a connection's socket, TLS and HTTP/2 session).
 * Private to transport/. */
#ifndef TP_H2C_INTERNAL_H
#define TP_H2C_INTERNAL_H

#include "tp_h2c.h"

#include <nghttp2/nghttp2.h>
#include <openssl/ssl.h>

#include "transport/tp_grpc.h"
#include "util/tp_reader.h"
#include "util/tp_slab.h"
#include "util/tp_u64map.h"

/* Flow-control windows.  Token streams are small, but hundreds of streams
 * share one connection window, which starts at 64 KiB. */
#define STREAM_WINDOW_BYTES (16 << 20)
#define CONN_WINDOW_BYTES (256 << 20)
/* One read takes at most this much.  A read's stamp is the arrival of the
 * newest segment it took, and the requests its answers let go (a closed
 * loop's next ones) are written once it is parsed: a read that drains a
 * queue built up over a while dates its first answers late by the queue's
 * age and holds those requests back.  With 8 KiB reads, at 1,000 streams
 * the TTFT error against the mock's log (bench section c) was p99 31-58 us
 * where 256 KiB reads gave 75-107 us; the streaming ceiling against nghttpd
 * at 64 streams fell from about 6.2 to 3.9 million responses/s, still
 * far above what a server streams. */
#define READ_BUF_BYTES (8 << 10)
/* Reads of a connection per readiness: a socket that stays full yields
 * the loop after this many (the timers and other sockets go next). */
#define READS_PER_WAKEUP 32
/* Calls of one hold that share a connection (tp_h2c_pool_hold). */
#define HOLD_JOIN_MAX 8
/* Input is parsed this many bytes at a time, with the due timers served
 * in between (tp_h2c_opts.yield_to): about 25 short answers, some tens of
 * microseconds of work. */
#define FEED_SLICE_BYTES 4096
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
  char traceparent[64]; /* its own "traceparent" metadata, "" = none */
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
  size_t read_covered; /* how many of them read_ns covers (the rest came later) */
  tp_rsock *rsock;     /* the pool's reader thread reads the socket; NULL: libuv */
  /* The loop reads the socket itself through rfd, a duplicate of fd that
   * libuv polls apart from the TCP handle (which then only writes): one
   * recvmsg gives the bytes and their kernel stamp, where libuv's read
   * needs a peek before it for the stamp.  rfd is -1 when libuv reads. */
  uv_poll_t rpoll;
  int rfd;
  int handles; /* libuv handles of this connection still open (tcp, rpoll) */
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
  int held;        /* tp_h2c_pool_hold: new calls' writes wait */
  conn *hold_conn;      /* where the calls of the current hold go */
  uint32_t hold_joined; /* calls that went there */
  int open_handles;
  uint32_t max_streams_seen;
  uint32_t conns_opened;
  char user_agent[48];
  SSL_CTX *ssl_ctx; /* NULL = plain h2c */
  /* Per session in flight, the serial of the connection its turns go to
   * (tp_h2c_call_session): a session keeps to one connection while that
   * connection lives, as a chat client holding its channel would. */
  tp_u64map pins;
  /* nghttp2's allocations for every session of the pool (all on the
   * loop's thread), from free lists rather than malloc; NULL: malloc. */
  tp_slab *slab;
  nghttp2_mem mem;
  tp_reader *reader; /* opts.reader_thread: reads every connection's socket */
};

/* The pool (tp_h2c.c). */
void tp__h2c_pool_free(tp_h2c_pool *p);
void tp__h2c_pool_dispatch(tp_h2c_pool *p);

/* Calls and their streams (tp_h2c_call.c). */
void tp__h2c_pending_push(tp_h2c_pool *p, tp_call *c);
void tp__h2c_pending_remove(tp_h2c_pool *p, tp_call *c);
void tp__h2c_active_remove(tp_h2c_pool *p, tp_call *c);
__attribute__((format(printf, 4, 5)))
void tp__h2c_call_set_local(tp_call *c, int status, tp_error_class cls, const char *fmt, ...);
void tp__h2c_call_finish(tp_call *c, uint32_t h2_error, bool conn_lost);
bool tp__h2c_call_try_resend(conn *cn, tp_call *c, uint32_t rst_code, bool conn_lost);
int tp__h2c_call_submit(conn *cn, tp_call *c);
/* The session callbacks a connection's nghttp2 session runs, with the
 * connection as user data; nonzero when out of memory. */
int tp__h2c_session_callbacks(nghttp2_session_callbacks **out);

/* Connections (tp_h2c_conn.c). */
void tp__h2c_conn_flush(conn *c);
void tp__h2c_conn_fail(conn *c, const char *why);
void tp__h2c_conn_maybe_flush_later(conn *c);
/* Flushes every connection with writes waiting, and `also` (may be NULL). */
void tp__h2c_pool_flush(tp_h2c_pool *p, conn *also);
void tp__h2c_on_chunk(void *owner, const uint8_t *data, ssize_t n, uint64_t stamp_ns);
int tp__h2c_conn_open(tp_h2c_pool *p);
int tp__h2c_make_ssl_ctx(tp_h2c_pool *p, char *err, size_t errlen);

#endif

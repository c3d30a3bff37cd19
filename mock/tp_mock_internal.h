/* What the mock server's files share: the server object, the models, the
 * part of a request that is the same over gRPC and HTTP (its sequence in the
 * timing model, its token timer, its fault), the log and the counters.
 *
 * tp_mock.c owns the lifecycle, tp_mock_grpc*.c the gRPC side, tp_mock_http.c
 * the HTTP/1.1 side; both run on the server's one loop thread.  Only the
 * counters in `tp_mock` marked atomic are read from other threads
 * (tp_mock_get_stats). */
#ifndef TP_MOCK_INTERNAL_H
#define TP_MOCK_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <uv.h>

#include "mock/tp_mock_engine.h"
#include "mock/tp_mock_faults.h"
#include "mock/tp_mock_stats.h"
#include "util/tp_common.h"
#include "util/tp_timer.h"
#include "tokperf/mock.h"

/* The trickle fault: one byte per millisecond, on either side. */
#define TP__MOCK_TRICKLE_NS 1000000ull

/* ---- models ---------------------------------------------------------------- */

typedef struct tp__mock_tensor {
  const char *name;
  const char *datatype;
  size_t n_dims;
  int64_t dims[2];
} tp__mock_tensor;

typedef struct tp__mock_model {
  const char *name;
  const char *platform;
  bool ensemble; /* TensorRT-LLM style, else vLLM style */
  const tp__mock_tensor *inputs;
  size_t n_inputs;
  const tp__mock_tensor *outputs;
  size_t n_outputs;
  tp_mock_stats_model stats_model; /* where its requests are counted */
  /* The text output's name; echo: every response holds the prompt and all
   * the text so far (the vLLM quick-deploy tutorial's Python model, whose
   * inputs are PROMPT, STREAM and SAMPLING_PARAMETERS and output TEXT). */
  const char *text_output;
  bool echo;
} tp__mock_model;

/* The served model called name, or NULL. */
const tp__mock_model *tp__mock_find_model(const char *name);
/* Whether name is one of the comma-separated names of list (NULL: none):
 * the served names of tp_mock_config.served_model_name. */
bool tp__mock_name_in_list(const char *list, const char *name);
/* Sets the served names every tp__mock_find_model resolves (NULL: none). */
void tp__mock_set_served_names(const char *list);
/* Whether the model declares an input called name. */
bool tp__mock_model_has_input(const tp__mock_model *md, const char *name);

/* ---- the part of a request common to both transports ----------------------- */

typedef struct tp__mock_job {
  tp_mock_seq seq; /* seq.data points here */
  tp_timer timer;  /* token timer; its callback and data belong to the transport */
  const tp__mock_model *model;
  char *id;          /* owned; "" when the request had none */
  /* What the client said the request is (owned, NULL = not said): its
   * x-request-id header (HTTP) or the protocol's request id (gRPC), and
   * its W3C traceparent (header or metadata).  Logged with the request. */
  char *request_id;
  char *traceparent;
  tp_mock_fault fault; /* kind NONE = no fault */
  bool fault_fired;
  bool ended;        /* tp__mock_job_end ran */
  bool submitted;    /* handed to the engine */
  uint32_t responses; /* responses sent (token messages, events) */
  uint32_t tokens_sent;
  uint64_t first_response_ns;
  uint64_t last_response_ns;
} tp__mock_job;

/* How a request ended, for the statistics. */
typedef enum tp__mock_outcome {
  TP__MOCK_OK = 0,
  TP__MOCK_FAILED,   /* answered with an error or cut off by a fault */
  TP__MOCK_CANCELLED /* the client went away first */
} tp__mock_outcome;

/* ---- the server -------------------------------------------------------------- */

typedef struct conn conn;   /* a gRPC (HTTP/2) connection, tp_mock_grpc.h */
typedef struct hconn hconn; /* an HTTP/1.1 connection, tp_mock_http.c */

struct tp_mock {
  /* When the bytes being handled now arrived (the kernel's receive stamp,
   * else the read's poll batch), so a request's clock starts at its arrival,
   * not when the mock got round to parsing it; 0 outside a read. */
  uint64_t arrival_ns;
  uint64_t read_stamp_ns; /* taken in the alloc callback just before a read */
  tp_mock_config cfg;
  char *host;
  char *served_model_name; /* cfg.served_model_name, owned */
  char *log_path;
  char *fault_spec; /* copy of cfg.fault_kind */
  tp_mock_fault fault; /* parsed cfg.fault_kind; kind NONE when unset */
  bool threaded;
  uv_thread_t thread;

  uv_loop_t loop;
  uv_tcp_t listener;
  uv_tcp_t http_listener;
  bool http_on;
  uv_timer_t listen_timer; /* refuse_connections_ms: listening starts late */
  bool listening;
  uv_async_t stop_async;
  uv_check_t check;
  uv_idle_t idle;
  uv_signal_t sigint, sigterm;
  bool have_signals;
  bool idle_on;
  bool stopping;
  int port;
  int http_port;
  uint64_t start_ns;
  uint64_t last_scrape_ns, last_scrape_busy_ns; /* /metrics GPU utilization interval */
  int dialect; /* tp_mock_dialect of cfg.http_dialect, parsed at start */
  uint64_t refused_so_far; /* connections reset for refuse_connections */

  tp_timers *timers;
  /* Reads the gRPC connections on a thread of its own and hands the bytes
   * to the loop (tp_reader.h); NULL once closed. */
  struct tp_reader *reader;
  tp_mock_engine *engine;
  void *cbs; /* nghttp2_session_callbacks */
  conn *conns;
  conn *dirty;
  hconn *hconns;
  hconn *hdirty;
  uint32_t active_streams;

  tp_mock_statset stats; /* per-model statistics (loop thread only) */

  tp_buf scratch; /* BYTES element being built */
  tp_buf logbuf;  /* JSON lines not yet written to log */
  size_t log_blank; /* response times in logbuf still to fill (tp__mock_log_fill) */
  FILE *log;

  uint8_t readbuf[64 * 1024]; /* one read at a time on the loop */

  _Atomic uint64_t n_requests;
  _Atomic uint64_t n_responses;
  _Atomic uint32_t max_streams;
  _Atomic uint32_t max_seqs;
  _Atomic uint64_t n_faults;
  _Atomic uint64_t n_connections;
  _Atomic uint64_t n_refused;
  _Atomic uint64_t n_http_requests;
  _Atomic uint64_t n_prefix_queries_tokens;
  _Atomic uint64_t n_prefix_hits_tokens;
};

/* Single writer (the loop), many readers: a plain store of the new maximum
 * is enough. */
static inline void tp__mock_raise_max(_Atomic uint32_t *max, uint32_t v) {
  if (v > atomic_load_explicit(max, memory_order_relaxed)) atomic_store_explicit(max, v, memory_order_relaxed);
}
/* v in 0..UINT32_MAX: token counts asked for in a request. */
static inline uint32_t tp__mock_clamp_u32(int64_t v) {
  return v <= 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}
static inline void tp__mock_count(_Atomic uint64_t *c, uint64_t n) {
  atomic_fetch_add_explicit(c, n, memory_order_relaxed);
}

/* Marks the loop as having output to flush this iteration (the idle handle
 * keeps the next poll from blocking). */
void tp__mock_want_flush(tp_mock *m);

/* ---- jobs ---------------------------------------------------------------------- */

/* The timing model's admission callback: arms the admitted job's token
 * timer and notes the batch size and the prefix cache counters. */
void tp__mock_on_admit(tp_mock_engine *e, tp_mock_seq *s, void *user_data);

/* Decides j's fault: the per-request spec when one came (given = true; a
 * spec of "none" means no fault), else the server-wide fault_kind for the
 * drawn fraction fault_rate of requests.  after_tokens comes from the
 * request when it gave one (after >= 0), else from fault_after_tokens.  Call
 * before tp__mock_job_submit. */
void tp__mock_job_choose_fault(tp_mock *m, tp__mock_job *j, const tp_mock_fault *given, int64_t after);

/* Submits j to the timing model at now_ns (p borrowed), counts and logs
 * it.  j->seq.data and j->timer must be set up, the fault chosen.  A job
 * whose fault fires at arrival is not given to the timing model: its timer
 * is armed for now_ns instead, and its callback must fire the fault.
 * Returns 0 or TP_ENOMEM. */
int tp__mock_job_submit(tp_mock *m, tp__mock_job *j, tp_mock_seq_params *p, uint64_t now_ns);

/* Counts j's fault as injected, once, and logs it. */
void tp__mock_job_fault_fired(tp_mock *m, tp__mock_job *j, uint64_t now_ns);

/* True when j's discrete fault (one that ends the request: a reset, a
 * status, a stall ...) takes the place of the token about to be sent. */
bool tp__mock_job_fault_due(const tp__mock_job *j);

/* The text of the token about to be sent, altered by a per-token fault due
 * now: invalid UTF-8 puts two bytes that never occur in UTF-8 in front
 * (written into bad, which must hold tok->text_len + 2 bytes).  Returns true
 * when the trickle fault starts with this token (the transport then sends
 * one byte at a time).  Both count the fault as fired. */
bool tp__mock_job_token_text(tp_mock *m, tp__mock_job *j, const tp_mock_token *tok, char *bad, const char **text,
                             size_t *len, uint64_t now_ns);

/* What a token timer of a job found due. */
typedef enum tp__mock_tick {
  TP__MOCK_TICK_NONE = 0, /* nothing to send (the timing model has no token yet) */
  TP__MOCK_TICK_FAULT,    /* j's discrete fault is due: the transport fires it */
  TP__MOCK_TICK_TOKEN     /* a token to send, counted as sent */
} tp__mock_tick;

/* The first steps of a token timer's callback, the same on both
 * transports: j's due fault, else the next token from the timing model
 * (*tok) with its text as tp__mock_job_token_text gives it (*text, *len;
 * bad must hold sizeof(tok->text) + 2 bytes; *trickle set when the trickle
 * fault starts with this token). */
tp__mock_tick tp__mock_job_tick(tp_mock *m, tp__mock_job *j, uint64_t now_ns, tp_mock_token *tok, char *bad,
                               const char **text, size_t *len, bool *trickle);

/* Notes one response carrying tokens of j, queued at now_ns (first
 * response time, inter-token gaps, response count).  The responses counter
 * of tp_mock_stats is the transport's to count. */
void tp__mock_job_response(tp_mock *m, tp__mock_job *j, uint64_t now_ns);

/* Ends j: stops its timer, takes it out of the engine, and records its
 * statistics once.  Safe to call more than once. */
void tp__mock_job_end(tp_mock *m, tp__mock_job *j, tp__mock_outcome how, uint64_t now_ns);

/* Frees what tp__mock_job owns (the id); the struct itself is the caller's. */
void tp__mock_job_fini(tp__mock_job *j);

/* ---- log ------------------------------------------------------------------------- */

/* prompt (may be NULL) is written when cfg.log_prompts asks for it. */
void tp__mock_log_request(tp_mock *m, tp__mock_job *j, uint64_t t_ns, const char *prompt, size_t prompt_len);
/* With deferred_off NULL the line carries t_ns.  Otherwise the time is left
 * blank (a fixed-width field) and *deferred_off says where, for
 * tp__mock_log_fill once the response is handed to the socket; *deferred_off
 * is SIZE_MAX when there is no log.  While any field is blank the log is held
 * in memory. */
void tp__mock_log_response(tp_mock *m, tp__mock_job *j, uint32_t index, uint64_t t_ns, const char *text,
                           size_t len, bool final, size_t *deferred_off);
void tp__mock_log_fill(tp_mock *m, size_t off, uint64_t t_ns);
void tp__mock_log_error(tp_mock *m, const char *id, const char *msg, uint64_t t_ns);
/* Logs that j's fault fired. */
void tp__mock_log_fault(tp_mock *m, tp__mock_job *j, uint64_t t_ns);
/* Writes the log gathered in memory: with force, all of it; else once it
 * holds a large piece and no time is left blank. */
void tp__mock_log_flush(tp_mock *m, bool force);

/* ---- the connections of both sides (tp_mock_io.c) ---------------------------- */

/* A write of len bytes of data (malloc'ed; owned from here on, also when
 * the write cannot start) on tcp.  done(owner, len, status) runs once it
 * completed or was cancelled, data already freed.  Returns 0, or TP_ENOMEM /
 * TP_EIO when it did not start (done will not run). */
typedef void (*tp__mock_write_cb)(void *owner, size_t len, int status);
int tp__mock_write(uv_tcp_t *tcp, char *data, size_t len, void *owner, tp__mock_write_cb done);
/* The port a bound listener holds; 0 when unbound (or unknown). */
int tp__mock_bound_port(uv_tcp_t *t);
/* Sets the port of an IPv4 or IPv6 address. */
void tp__mock_set_port(struct sockaddr_storage *addr, int port);

/* Accepts a connection into tcp (initialised here, tcp->data already set
 * by the caller) for both listeners: counts it; resets the first
 * refuse_connections ones (both ports together); and gives the rest
 * TCP_NODELAY (tokens are tiny writes that must leave at once) and kernel
 * receive stamps.  Returns true when the connection is ready; false when it
 * was closed, with on_closed to follow. */
bool tp__mock_accept(tp_mock *m, uv_stream_t *server, uv_tcp_t *tcp, uv_close_cb on_closed);
/* The arrival time of the bytes about to be read from a connection into
 * readbuf, with how many to read so that all of them arrived then (see
 * tp_stamp_fd_group); called from the alloc callback, the last moment
 * before libuv reads. */
uint64_t tp__mock_read_stamp(tp_mock *m, uv_tcp_t *tcp, size_t *read_len);

/* ---- the HTTP side (tp_mock_http.c) --------------------------------------------- */

/* Checks the HTTP settings (dialect, keep-alive).  Returns 0 or TP_EINVAL
 * with a message. */
int tp__mock_http_check_config(tp_mock *m, char *err, size_t errlen);
/* Binds the HTTP listener to addr with port m->http_port; listening starts
 * with tp__mock_http_start_listening.  Returns 0 or TP_ECONNECT with a
 * message. */
int tp__mock_http_bind(tp_mock *m, const struct sockaddr *addr, char *err, size_t errlen);
/* Returns 0 or a libuv error code. */
int tp__mock_http_start_listening(tp_mock *m);
/* Writes what HTTP connections have queued (from the check handle). */
void tp__mock_http_flush(tp_mock *m);
/* Closes the listener and every HTTP connection. */
void tp__mock_http_shutdown(tp_mock *m);

#endif

/* What the gRPC side's files share: the connection, stream and request
 * objects, and the calls that cross between the connection and its output
 * (tp_mock_grpc.c, tp_mock_grpc_out.c) and the inference requests
 * (tp_mock_grpc_infer.c).  Everything here runs on the server's loop
 * thread. */
#ifndef TP_MOCK_GRPC_H
#define TP_MOCK_GRPC_H

#include <stdbool.h>
#include <stdint.h>

#include <nghttp2/nghttp2.h>
#include <protobuf-c/protobuf-c.h>
#include <uv.h>

#include "mock/tp_mock_internal.h"
#include "transport/tp_grpc.h"
#include "util/tp_common.h"
#include "util/tp_timer.h"

typedef enum method {
  M_UNKNOWN = 0,
  M_SERVER_LIVE,
  M_SERVER_READY,
  M_MODEL_READY,
  M_SERVER_METADATA,
  M_MODEL_METADATA,
  M_MODEL_INFER,
  M_MODEL_STREAM_INFER,
  M_MODEL_STATISTICS,
  /* The engines' own protocols (tp_mock_grpc_engine.c), on either
   * service: mstream.engine says which. */
  M_ENGINE_GENERATE,
  M_ENGINE_HEALTH,
  M_ENGINE_ABORT,
  M_ENGINE_MODEL_INFO,
} method;

typedef struct mstream mstream;
typedef struct mreq mreq;

/* One inference request (one ModelInferRequest message). */
struct mreq {
  tp__mock_job job; /* first member: the job is the request */
  mstream *st;
  mreq *prev, *next; /* in st->reqs */
  char *version;     /* as requested, echoed in an empty final response */
  bool stalled;      /* a stall or oversize fault fired: silent until the client leaves */
  bool unary;        /* answered as a ModelInferResponse */
  bool streaming;    /* delta text per token, else one response at the end */
  bool empty_final;  /* ensemble + triton_enable_empty_final_response */
  bool num_tokens;   /* vLLM return_num_output_tokens */
  tp_buf text;       /* whole text for non-streaming answers */
  uint32_t index;    /* responses queued so far */
  /* An engine protocol's Generate (tp_mock_grpc_engine.c): which one
   * (tp_mock_engine_proto, 0 = KServe), and what it reports. */
  int engine;
  uint32_t prompt_tokens;
  tp_buf ids; /* the output ids so far, uint32 each (a unary answer sends them all) */
};

struct mstream {
  conn *c;
  int32_t id;
  mstream *prev, *next; /* in c->streams */
  method method;
  char path[128];
  char traceparent[64]; /* its "traceparent" metadata, "" = none */
  bool path_too_long;
  bool bad_content_type;
  bool counted;          /* included in the active inference streams */
  bool remote_closed;    /* the client half-closed */
  bool got_message;      /* unary: the request message came */
  bool response_started; /* response HEADERS submitted with a data provider */
  bool finished;         /* final status decided (trailers queued or sent) */
  bool trailers_pending; /* send trailers once the queue drains */
  bool deferred;         /* the data provider returned DEFERRED */
  bool trickle;          /* trickle fault: one byte per TRICKLE_NS */
  bool trickle_ready;    /* the next byte may go */
  tp_timer trickle_timer;
  uint64_t zeros_left; /* oversize fault: body bytes still to make up, after `out` */
  int status;
  char *message;
  tp_grpc_reader reader;
  tp_buf out; /* framed messages not yet handed to nghttp2 */
  size_t out_off;
  /* Logged responses whose time is taken when their last byte goes to the
   * socket: blank_time entries from blanks_head on, in queue order. */
  tp_buf blanks;
  size_t blanks_head;
  uint64_t queued_total, sent_total; /* bytes of `out` ever queued / handed to nghttp2 */
  mreq *reqs;
  int engine; /* the engine protocol of an M_ENGINE_* method (tp_mock_engine_proto) */
};

struct conn {
  tp_mock *m;
  uv_tcp_t tcp; /* written on the loop; read by the reader thread (rsock) */
  struct tp_rsock *rsock; /* the reader's registration, NULL once removed */
  nghttp2_session *h2;
  conn *prev, *next; /* in m->conns */
  conn *dirty_next;  /* in m->dirty */
  bool dirty;
  bool closing;
  bool goaway_sent;
  int32_t goaway_last; /* the last_stream_id announced, once goaway_sent */
  int32_t last_id;     /* the highest stream taken for processing */
  uint32_t n_streams;  /* inference streams begun (goaway_after_streams) */
  /* idle_close_ms: armed while no stream is in progress. */
  tp_timer idle_timer;
  /* The session is over: our side is shut down and reads are discarded
   * until the client closes, or linger_timer runs out. */
  bool lingering;
  uv_shutdown_t shutdown_req;
  tp_timer linger_timer;
  size_t write_bytes; /* handed to uv_write, not yet completed */
  mstream *streams;
  tp_buf chunk_blanks; /* blank_time of responses serialized into the chunk being built */
};

/* A logged response waiting for its send time (tp__mock_log_fill). */
typedef struct blank_time {
  uint64_t end;       /* the stream's queued_total after its last byte */
  size_t off;         /* where in the log */
  uint64_t queued_ns; /* used instead if the bytes never leave */
} blank_time;

/* ---- connections (tp_mock_grpc.c) ------------------------------------------ */

/* Everything but the socket handle is released at once; the struct goes in
 * the close callback. */
void tp__mock_conn_close(conn *c);
/* The reader's handler (tp_reader_cb): a connection's bytes, or its
 * end. */
void tp__mock_grpc_on_chunk(void *owner, const uint8_t *data, ssize_t nread, uint64_t stamp_ns);
/* The listener's connection callback: accepts and starts an h2c session. */
void tp__mock_grpc_on_connection(uv_stream_t *server, int status);
/* The nghttp2 server callbacks every session uses (freed with
 * nghttp2_session_callbacks_del).  Returns 0 or TP_ENOMEM. */
int tp__mock_grpc_callbacks_new(void **out);

/* ---- connection output (tp_mock_grpc_out.c) --------------------------------- */

/* Puts c on the server's list of connections to flush this iteration. */
void tp__mock_conn_dirty(conn *c);
/* Hands what the session has to send to the socket, up to the high-water
 * mark; half-closes a session that is over. */
void tp__mock_conn_flush(conn *c);
/* Flushes every connection marked dirty (from the check handle). */
void tp__mock_grpc_flush(tp_mock *m);
/* GOAWAY naming `last` as the last stream this connection processes. */
void tp__mock_conn_goaway(conn *c, int32_t last);
/* linger_timer's callback: the client did not close in time. */
void tp__mock_on_linger_over(tp_timer *t, uint64_t now_ns);
/* Fills the times of blank entries [from, end of buf) with t_ns, or with
 * each one's queue time when t_ns is 0, and empties buf. */
void tp__mock_fill_blanks(tp_mock *m, tp_buf *buf, size_t from, uint64_t t_ns);

/* ---- stream output (tp_mock_grpc_out.c) ------------------------------------- */

/* trickle_timer's callback: the next byte may go. */
void tp__mock_on_trickle(tp_timer *t, uint64_t now_ns);
/* Submits the response HEADERS with the stream's data provider, once. */
int tp__mock_stream_start_response(mstream *st);
/* Packs msg with its gRPC prefix at the end of the stream's queue. */
int tp__mock_stream_queue_msg(mstream *st, const ProtobufCMessage *msg);
/* Queues bytes as they are (fault injection: broken framing). */
int tp__mock_stream_queue_raw(mstream *st, const void *p, size_t n);
/* Decides the stream's final status; requests still on it are cancelled. */
void tp__mock_stream_finish(mstream *st, int status, const char *message);
/* A unary answer: the message, then grpc-status 0. */
void tp__mock_stream_reply(mstream *st, const ProtobufCMessage *msg);
/* Ends a ModelStreamInfer stream once the client half-closed and no
 * request is left on it. */
void tp__mock_stream_maybe_done(mstream *st);

/* ---- inference responses (tp_mock_grpc_out.c) -------------------------------- */

/* Queues one response of request r; with_outputs false makes the empty
 * final response. */
int tp__mock_queue_response(mreq *r, const char *text, size_t len, bool with_outputs, bool final,
                            uint32_t n_tokens);
/* An in-band error on a ModelStreamInfer stream; the stream stays usable. */
void tp__mock_queue_stream_error(mstream *st, const char *id, const char *msg);
/* A backend error (the inband_error fault) with triton_final_response. */
int tp__mock_queue_backend_error(mreq *r, const char *msg);

/* ---- inference requests (tp_mock_grpc_infer.c) -------------------------------- */

/* Ends r's job as `how` and frees it, unlinking it from its stream. */
void tp__mock_req_free(mreq *r, tp__mock_outcome how);
/* Starts one inference request on st from a ModelInferRequest's bytes.
 * unary: ModelInfer. */
void tp__mock_start_infer(mstream *st, const uint8_t *data, size_t len, bool unary);
/* Carries out r's fault, which is due now.  May free r, its stream and its
 * connection. */
void tp__mock_req_fire_fault(mreq *r, uint64_t now_ns);

/* ---- the engines' own protocols (tp_mock_grpc_engine.c) --------------------- */

/* Which engine protocol: 0 none (KServe), else one of these. */
enum { TP_MOCK_ENGINE_VLLM = 1, TP_MOCK_ENGINE_SGLANG = 2 };

/* The engine method a request path names (M_UNKNOWN when none), with the
 * protocol in *engine. */
method tp__mock_engine_method(const char *path, int *engine);
/* A request message of an M_ENGINE_* method on st. */
void tp__mock_engine_message(mstream *st, const uint8_t *data, size_t len);
/* The inband_error fault of an engine request: SGLang's GenerateError
 * message, or for vLLM, whose errors are statuses, INTERNAL. */
void tp__mock_engine_inband_error(mreq *r, const char *msg);

#endif

/* What the HTTP/1.1 side's files share: the connection and request
 * objects, and the calls between the connection (tp_mock_http.c), its
 * output (tp_mock_http_out.c), the requests in progress
 * (tp_mock_http_req.c) and the request bodies (tp_mock_http_body.c).
 * Everything here runs on the server's loop thread. */
#ifndef TP_MOCK_HTTP_CONN_H
#define TP_MOCK_HTTP_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "mock/tp_mock_http_parse.h"
#include "mock/tp_mock_internal.h"
#include "mock/tp_mock_sse.h"
#include "util/tp_common.h"
#include "util/tp_timer.h"

typedef enum api_kind { API_COMPLETIONS, API_CHAT, API_GENERATE, API_GENERATE_STREAM } api_kind;

typedef struct hreq hreq;

/* A logged response waiting for its send time (tp__mock_log_fill). */
typedef struct http_blank {
  uint64_t end;       /* the stream position after its last byte */
  size_t off;         /* where in the log */
  uint64_t queued_ns; /* used instead if the bytes never leave */
} http_blank;

struct hconn {
  tp_mock *m;
  uv_tcp_t tcp;
  hconn *prev, *next; /* in m->hconns */
  hconn *dirty_next;  /* in m->hdirty */
  bool dirty;
  bool closing;
  bool close_after; /* close once the current response is out */
  /* close_after_stream: close once the current response is out although it
   * said keep-alive; requests that arrive meanwhile are dropped with it. */
  bool drop_after;
  bool reset_after; /* rst_stream fault: reset once what is queued is out */
  bool read_eof;
  bool http10;
  /* The request being answered: its x-request-id (echoed in the answer's
   * head) and traceparent, "" = none. */
  char req_id[128];
  char traceparent[128];
  tp_buf in; /* received, not consumed */
  size_t last_len;
  hreq *cur; /* the request being answered */
  uint32_t n_requests;
  tp_buf out; /* response bytes not yet written */
  size_t out_off;
  /* The log's send time of each response in out is when the write holding
   * its last byte is handed to the socket, as on the gRPC side: a busy
   * mock writes late, and a client is held against what it really did.
   * out_base is the stream position of out.data[0]; blanks holds
   * http_blank entries in stream order, from blanks_head on. */
  uint64_t out_base;
  tp_buf blanks;
  size_t blanks_head;
  size_t write_bytes; /* handed to uv_write, not completed */
  uint64_t fill_left; /* oversize fault: filler bytes still to write */
  bool trickle;
  bool trickle_ready;
  /* one_write: out is held back while the streamed response is being
   * made, then goes in one write. */
  bool hold;
  tp_timer trickle_timer;
  tp_timer idle_timer; /* idle_close_ms */
};

struct hreq {
  tp__mock_job job; /* first member */
  hconn *c;
  api_kind api;
  bool stream;
  bool head_sent;
  bool ended; /* the response is complete (or abandoned) */
  bool stalled;
  bool has_id; /* generate: the body had an id */
  bool exclude_input;
  tp_mock_sse_writer w;
  char oid[48];
  char *model_name; /* as the client named it, echoed */
  tp_buf text;      /* non-streaming text */
  uint32_t index;   /* responses queued */
  /* tokens_per_chunk: tokens whose text waits in `text` for their event. */
  uint32_t pending_tokens;
  bool trailer_due; /* usage_delay_ms: the job timer now brings the trailer */
  tp_timer keepalive;
  uint64_t keepalive_every_ns; /* 0 = no keep-alive comments */
  uint64_t created;
};

static inline tp_mock_dialect tp__mock_http_dialect(const tp_mock *m) {
  return (tp_mock_dialect)m->dialect;
}

/* ---- connections (tp_mock_http.c) -------------------------------------------------------- */

/* Everything but the socket goes at once; the struct goes in the close
 * callback.  reset: RST instead of FIN. */
void tp__mock_hconn_close(hconn *c, bool reset);
/* Starts idle_close_ms's clock for c (when it is set). */
void tp__mock_hconn_idle_arm(hconn *c, uint64_t now_ns);
/* Parses and answers buffered requests while none is in progress. */
void tp__mock_http_process_input(hconn *c);

/* ---- output (tp_mock_http_out.c) --------------------------------------------------------- */

/* Puts c on the server's list of connections to flush this iteration. */
void tp__mock_hconn_dirty(hconn *c);
/* trickle_timer's callback: the next byte may go. */
void tp__mock_http_on_trickle(tp_timer *t, uint64_t now_ns);
/* Queues a whole response with a Content-Length. */
void tp__mock_http_respond(hconn *c, int status, const char *ctype, const void *body, size_t len);
void tp__mock_http_respond_buf(hconn *c, int status, const char *ctype, const tp_buf *b);
/* Error bodies: Triton's {"error": ...}, or the OpenAI dialect's. */
void tp__mock_http_triton_error(hconn *c, int status, const char *msg);
void tp__mock_http_oai_error(hconn *c, tp_mock_dialect d, int status, const char *msg);
/* A streamed response: its head (once), pieces of its body, its end. */
void tp__mock_http_stream_head(hreq *r);
void tp__mock_http_stream_data(hreq *r, const void *p, size_t n);
void tp__mock_http_stream_end(hreq *r);
/* Logs a response whose bytes were just queued in r's connection, its time
 * filled in when they are written (queued_ns if they never are). */
void tp__mock_http_log_response(hreq *r, uint64_t queued_ns, const char *text, size_t len, bool final);
/* Fills the times of every response still waiting (the connection closes). */
void tp__mock_http_fill_blanks(hconn *c);

/* ---- requests (tp_mock_http_req.c) ------------------------------------------------------- */

/* A request of c for api, with its timers set up; NULL without memory. */
hreq *tp__mock_hreq_new(hconn *c, api_kind api);
/* Chooses the fault, submits the job and starts the response clock.  The
 * request becomes the connection's current one. */
void tp__mock_hreq_start(hreq *r, tp_mock_seq_params *sp, bool have_fault, const tp_mock_fault *f,
                         int64_t after);
/* Ends r's job as `how` and frees it. */
void tp__mock_hreq_free(hreq *r, tp__mock_outcome how);

/* ---- request bodies (tp_mock_http_body.c) ------------------------------------------------ */

/* Starts an OpenAI completions or chat request from its JSON body, or
 * answers it with the dialect's error. */
/* Keeps the request's x-request-id and traceparent (c->req_id,
 * c->traceparent) until the next request. */
void tp__mock_http_take_ids(hconn *c, const tp_mock_http_req *h);
/* The job's copies of them (NULL when not sent); false out of memory. */
bool tp__mock_http_job_ids(hconn *c, tp__mock_job *j);
void tp__mock_http_start_openai(hconn *c, const tp_mock_http_req *h, const uint8_t *body, size_t body_len,
                                api_kind api);
/* Starts a Triton generate (or generate_stream) request for md. */
void tp__mock_http_start_generate(hconn *c, const tp_mock_http_req *h, const tp__mock_model *md,
                                  const uint8_t *body, size_t body_len, bool stream_endpoint);

#endif

/* The built-in mock Triton server.
 *
 * One libuv loop (on a thread of its own, or the caller's) accepts h2c
 * connections, runs one nghttp2 server session per connection and answers
 * the KServe v2 gRPC methods a load generator uses.  Two models imitate the
 * TensorRT-LLM ensemble and the vLLM backend; the timing of every token
 * comes from tp_mock_engine and is kept with tp_timers, so the client sees
 * deadlines accurate to tens of microseconds.
 *
 * Writing: every gRPC stream has a queue of framed messages; an nghttp2
 * data provider serves it (NGHTTP2_ERR_DEFERRED when empty, resumed when a
 * message arrives) and ends it with trailers.  Connections whose session
 * has something to send are put on a dirty list that a uv_check handle
 * flushes once per loop iteration, so tokens due in the same wake-up leave
 * in one write per connection.
 *
 * The same loop serves HTTP/1.1 on a second port (tp_mock_http.c); both
 * sides share the timing model, the faults, the statistics and the log
 * through tp_mock_internal.h. */
#include "tokperf/mock.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <nghttp2/nghttp2.h>
#include <uv.h>

#include "config.h"
#include "grpc_service.pb-c.h"
#include "mock/tp_mock_engine.h"
#include "mock/tp_mock_internal.h"
#include "mock/tp_mock_sse.h"
#include "transport/tp_grpc.h"
#include "util/tp_common.h"
#include "util/tp_stamp.h"
#include "util/tp_timer.h"

#define SERVICE_PREFIX "/inference.GRPCInferenceService/"
#define MAX_MSG_BYTES (64u << 20)       /* larger requests: RESOURCE_EXHAUSTED */
#define STREAM_WINDOW_BYTES (16u << 20) /* SETTINGS_INITIAL_WINDOW_SIZE */
#define CONN_WINDOW_BYTES (64u << 20)   /* connection receive window */
#define MAX_CONCURRENT_STREAMS 1024u
#define WRITE_CHUNK_BYTES (256u << 10)    /* one uv_write gathers up to this */
#define WRITE_HIGH_WATER_BYTES (4u << 20) /* stop pulling from nghttp2 above */
#define LOG_FLUSH_BYTES (1u << 20)
#define TRICKLE_NS (1000000ull) /* trickle fault: one byte per ms */
/* A connection the mock closes (GOAWAY, then its half-close) waits this
 * long for the client to close its side before it is dropped. */
#define LINGER_NS (2000ull * 1000000ull)

/* ---- the two models ------------------------------------------------------ */

/* TensorRT-LLM's ensemble batches (max_batch_size > 0), so every shape has
 * a leading -1 batch dimension. */
static const tp__mock_tensor ensemble_inputs[] = {
    {"text_input", "BYTES", 2, {-1, 1}}, {"max_tokens", "INT32", 2, {-1, 1}},
    {"bad_words", "BYTES", 2, {-1, -1}}, {"stop_words", "BYTES", 2, {-1, -1}},
    {"end_id", "INT32", 2, {-1, 1}},     {"pad_id", "INT32", 2, {-1, 1}},
    {"top_k", "INT32", 2, {-1, 1}},      {"top_p", "FP32", 2, {-1, 1}},
    {"temperature", "FP32", 2, {-1, 1}}, {"min_length", "INT32", 2, {-1, 1}},
    {"stream", "BOOL", 2, {-1, 1}},      {"exclude_input_in_output", "BOOL", 2, {-1, 1}},
};
static const tp__mock_tensor ensemble_outputs[] = {{"text_output", "BYTES", 2, {-1, -1}}};

/* The vLLM backend forces max_batch_size 0: no batch dimension. */
static const tp__mock_tensor vllm_inputs[] = {
    {"text_input", "BYTES", 1, {1}},
    {"stream", "BOOL", 1, {1}},
    {"sampling_parameters", "BYTES", 1, {1}},
    {"exclude_input_in_output", "BOOL", 1, {1}},
    {"return_num_output_tokens", "BOOL", 1, {1}},
};
static const tp__mock_tensor vllm_outputs[] = {
    {"text_output", "BYTES", 1, {-1}},
    {"num_output_tokens", "UINT32", 1, {-1}},
};

/* The model of vLLM's quick-deploy tutorial for Triton (a Python model,
 * no batch dimension): upper-case names, and each response is the prompt
 * followed by all the text so far. */
static const tp__mock_tensor tutorial_inputs[] = {
    {"PROMPT", "BYTES", 1, {1}},
    {"STREAM", "BOOL", 1, {1}},
    {"SAMPLING_PARAMETERS", "BYTES", 1, {1}},
};
static const tp__mock_tensor tutorial_outputs[] = {{"TEXT", "BYTES", 1, {-1}}};

static const tp__mock_model models[] = {
    {"ensemble", "ensemble", true, ensemble_inputs, TP_ARRAY_LEN(ensemble_inputs), ensemble_outputs,
     TP_ARRAY_LEN(ensemble_outputs), TP_MOCK_SM_ENSEMBLE, "text_output", false},
    {"vllm_model", "vllm", false, vllm_inputs, TP_ARRAY_LEN(vllm_inputs), vllm_outputs,
     TP_ARRAY_LEN(vllm_outputs), TP_MOCK_SM_VLLM, "text_output", false},
    {"vllm", "python", false, tutorial_inputs, TP_ARRAY_LEN(tutorial_inputs), tutorial_outputs,
     TP_ARRAY_LEN(tutorial_outputs), TP_MOCK_SM_VLLM, "TEXT", true},
};

const tp__mock_model *tp__mock_find_model(const char *name) {
  for (size_t i = 0; i < TP_ARRAY_LEN(models); i++)
    if (strcmp(models[i].name, name) == 0) return &models[i];
  return NULL;
}

bool tp__mock_model_has_input(const tp__mock_model *md, const char *name) {
  for (size_t i = 0; i < md->n_inputs; i++)
    if (strcmp(md->inputs[i].name, name) == 0) return true;
  return false;
}

/* ---- objects --------------------------------------------------------------- */

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
} method;

static const struct {
  const char *name;
  method m;
} methods[] = {
    {"ServerLive", M_SERVER_LIVE},
    {"ServerReady", M_SERVER_READY},
    {"ModelReady", M_MODEL_READY},
    {"ServerMetadata", M_SERVER_METADATA},
    {"ModelMetadata", M_MODEL_METADATA},
    {"ModelInfer", M_MODEL_INFER},
    {"ModelStreamInfer", M_MODEL_STREAM_INFER},
    {"ModelStatistics", M_MODEL_STATISTICS},
};

typedef struct mstream mstream;
typedef struct mreq mreq;

/* One inference request (one ModelInferRequest message). */
struct mreq {
  tp__mock_job job; /* first member: the job is the request */
  mstream *st;
  mreq *prev, *next; /* in st->reqs */
  char *version;    /* as requested, echoed in an empty final response */
  bool stalled;     /* a stall or oversize fault fired: silent until the client leaves */
  bool unary;       /* answered as a ModelInferResponse */
  bool streaming;   /* delta text per token, else one response at the end */
  bool empty_final; /* ensemble + triton_enable_empty_final_response */
  bool num_tokens;  /* vLLM return_num_output_tokens */
  tp_buf text;      /* whole text for non-streaming answers */
  uint32_t index;   /* responses queued so far */
};

struct mstream {
  conn *c;
  int32_t id;
  mstream *prev, *next; /* in c->streams */
  method method;
  char path[128];
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
  uint64_t zeros_left;   /* oversize fault: body bytes still to make up, after `out` */
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
};

struct conn {
  tp_mock *m;
  uv_tcp_t tcp;
  nghttp2_session *h2;
  conn *prev, *next; /* in m->conns */
  conn *dirty_next;  /* in m->dirty */
  bool dirty;
  bool closing;
  bool goaway_sent;
  int32_t goaway_last; /* the last_stream_id announced, once goaway_sent */
  int32_t last_id;     /* the highest stream taken for processing */
  uint32_t n_streams; /* inference streams begun (goaway_after_streams) */
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

/* ---- send times in the log ------------------------------------------------------ */

/* The log's "true" send time of a response is when the write carrying its
 * last byte is handed to the socket, not when it was queued: a wave of
 * responses is queued one after another and written together after, and
 * the client cannot see a byte before that write. */
static void stream_add_blank(mstream *st, size_t off, uint64_t queued_ns) {
  if (off == SIZE_MAX) return;
  blank_time b = {st->queued_total, off, queued_ns};
  if (tp_buf_append(&st->blanks, &b, sizeof(b))) tp__mock_log_fill(st->c->m, off, queued_ns);
}

/* Moves the responses whose last byte nghttp2 has now taken to the chunk
 * the connection writes next. */
static void stream_take_blanks(mstream *st) {
  size_t n = st->blanks.len / sizeof(blank_time);
  while (st->blanks_head < n) {
    blank_time b;
    memcpy(&b, st->blanks.data + st->blanks_head * sizeof(b), sizeof(b));
    if (b.end > st->sent_total) break;
    if (tp_buf_append(&st->c->chunk_blanks, &b, sizeof(b))) tp__mock_log_fill(st->c->m, b.off, b.queued_ns);
    st->blanks_head++;
  }
  if (st->blanks_head == n) {
    tp_buf_reset(&st->blanks);
    st->blanks_head = 0;
  }
}

/* Fills the times of blank entries [from, end of buf) with t_ns, or with
 * each one's queue time when t_ns is 0, and empties buf. */
static void fill_blanks(tp_mock *m, tp_buf *buf, size_t from, uint64_t t_ns) {
  size_t n = buf->len / sizeof(blank_time);
  for (size_t i = from; i < n; i++) {
    blank_time b;
    memcpy(&b, buf->data + i * sizeof(b), sizeof(b));
    tp__mock_log_fill(m, b.off, t_ns ? t_ns : b.queued_ns);
  }
  tp_buf_reset(buf);
}

typedef struct wreq {
  uv_write_t req;
  conn *c;
  char *data;
  size_t len;
} wreq;

/* ---- small helpers ---------------------------------------------------------- */

static void put_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

static uint32_t get_le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* The log is gathered in memory and written in 1 MiB pieces, so the loop
 * never waits on the disk once per token; tp_mock_stop writes the rest. */
static void log_flush(tp_mock *m, bool force) {
  if (!m->log || m->logbuf.len == 0) return;
  if (!force && (m->logbuf.len < LOG_FLUSH_BYTES || m->log_blank)) return;
  fwrite(m->logbuf.data, 1, m->logbuf.len, m->log);
  tp_buf_reset(&m->logbuf);
}

void tp__mock_log_request(tp_mock *m, tp__mock_job *j, uint64_t t_ns, const char *prompt, size_t prompt_len) {
  if (!m->log) return;
  tp_buf *b = &m->logbuf;
  tp_buf_append_str(b, "{\"ev\":\"request\",\"id\":");
  tp_mock_json_str(b, j->id, strlen(j->id));
  tp_buf_append_str(b, ",\"model\":");
  tp_mock_json_str(b, j->model->name, strlen(j->model->name));
  tp_buf_printf(b, ",\"n\":%llu,\"t_ns\":%llu,\"prompt_tokens\":%u,\"max_tokens\":%u",
                (unsigned long long)j->seq.number, (unsigned long long)t_ns, j->seq.prompt_tokens,
                j->seq.max_tokens);
  if (j->fault.kind != TP_MOCK_FAULT_NONE)
    tp_buf_printf(b, ",\"fault\":\"%s\",\"fault_after\":%u", tp_mock_fault_name(j->fault.kind),
                  j->fault.after_tokens);
  if (m->cfg.log_prompts && prompt) {
    tp_buf_append_str(b, ",\"prompt\":");
    tp_mock_json_str(b, prompt, prompt_len);
  }
  tp_buf_append_str(b, "}\n");
  log_flush(m, false);
}

/* A blank time is LOG_TIME_WIDTH spaces, later overwritten in place by the
 * number right-aligned in the same width: JSON allows the spaces before it. */
#define LOG_TIME_WIDTH 20

void tp__mock_log_response(tp_mock *m, tp__mock_job *j, uint32_t index, uint64_t t_ns, const char *text,
                           size_t len, bool final, size_t *deferred_off) {
  if (deferred_off) *deferred_off = SIZE_MAX;
  if (!m->log) return;
  tp_buf *b = &m->logbuf;
  tp_buf_append_str(b, "{\"ev\":\"response\",\"id\":");
  tp_mock_json_str(b, j->id, strlen(j->id));
  tp_buf_printf(b, ",\"n\":%llu,\"index\":%u,\"t_ns\":", (unsigned long long)j->seq.number, index);
  if (deferred_off) {
    *deferred_off = b->len;
    tp_buf_printf(b, "%*s", LOG_TIME_WIDTH, "");
    m->log_blank++;
  } else {
    tp_buf_printf(b, "%llu", (unsigned long long)t_ns);
  }
  tp_buf_append_str(b, ",\"text\":");
  tp_mock_json_str(b, text, len);
  tp_buf_printf(b, ",\"final\":%s}\n", final ? "true" : "false");
  log_flush(m, false);
}

void tp__mock_log_fill(tp_mock *m, size_t off, uint64_t t_ns) {
  if (off == SIZE_MAX || !m->log) return;
  char num[LOG_TIME_WIDTH + 1];
  snprintf(num, sizeof(num), "%*llu", LOG_TIME_WIDTH, (unsigned long long)t_ns);
  memcpy(m->logbuf.data + off, num, LOG_TIME_WIDTH);
  m->log_blank--;
}

void tp__mock_log_error(tp_mock *m, const char *id, const char *msg, uint64_t t_ns) {
  if (!m->log) return;
  tp_buf *b = &m->logbuf;
  tp_buf_append_str(b, "{\"ev\":\"error\",\"id\":");
  tp_mock_json_str(b, id, strlen(id));
  tp_buf_printf(b, ",\"t_ns\":%llu,\"message\":", (unsigned long long)t_ns);
  tp_mock_json_str(b, msg, strlen(msg));
  tp_buf_append_str(b, "}\n");
  log_flush(m, false);
}

static void log_fault(tp_mock *m, tp__mock_job *j, uint64_t t_ns) {
  if (!m->log) return;
  tp_buf *b = &m->logbuf;
  tp_buf_append_str(b, "{\"ev\":\"fault\",\"id\":");
  tp_mock_json_str(b, j->id, strlen(j->id));
  tp_buf_printf(b, ",\"n\":%llu,\"t_ns\":%llu,\"kind\":\"%s\",\"after\":%u}\n",
                (unsigned long long)j->seq.number, (unsigned long long)t_ns, tp_mock_fault_name(j->fault.kind),
                j->fault.after_tokens);
  log_flush(m, false);
}

/* ---- connection output ------------------------------------------------------ */

static void conn_close(conn *c);
static void conn_flush(conn *c);

static void on_idle(uv_idle_t *h) {
  (void)h;
}

/* The idle handle only keeps the next poll from blocking while a flush is
 * pending (a write callback run in the pending phase may mark a connection
 * dirty after this iteration's check has passed). */
void tp__mock_want_flush(tp_mock *m) {
  if (!m->idle_on && !m->stopping) {
    uv_idle_start(&m->idle, on_idle);
    m->idle_on = true;
  }
}

static void mark_dirty(conn *c) {
  if (c->dirty || c->closing || c->lingering) return;
  tp_mock *m = c->m;
  c->dirty = true;
  c->dirty_next = m->dirty;
  m->dirty = c;
  tp__mock_want_flush(m);
}

static void on_check(uv_check_t *h) {
  tp_mock *m = h->data;
  while (m->dirty) {
    conn *c = m->dirty;
    m->dirty = c->dirty_next;
    c->dirty = false;
    c->dirty_next = NULL;
    conn_flush(c);
  }
  if (m->http_on) tp__mock_http_flush(m);
  if (m->idle_on) {
    uv_idle_stop(&m->idle);
    m->idle_on = false;
  }
  log_flush(m, false);
}

static void on_write(uv_write_t *req, int status) {
  wreq *w = (wreq *)req;
  conn *c = w->c;
  c->write_bytes -= w->len;
  free(w->data);
  free(w);
  if (c->closing) return;
  if (status < 0) {
    conn_close(c);
    return;
  }
  mark_dirty(c);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  (void)req;
  (void)status;
}

static void on_linger_over(tp_timer *t, uint64_t now_ns) {
  (void)now_ns;
  conn_close(t->data);
}

/* The session is over (GOAWAY sent, its streams done): half-close and let
 * the client close first.  Closing at once would make the kernel answer
 * bytes the client sent meanwhile (a request crossing the GOAWAY) with a
 * reset, which can reach the client before it has read the GOAWAY. */
static void conn_linger(conn *c) {
  if (c->lingering || c->closing) return;
  c->lingering = true;
  if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, on_shutdown) != 0 || !c->m->timers) {
    conn_close(c);
    return;
  }
  tp_timer_start(c->m->timers, &c->linger_timer, tp_now_ns() + LINGER_NS);
}

/* GOAWAY naming `last` as the last stream this connection processes: later
 * streams are refused (stream_begin) and the connection closes once the
 * streams up to `last` are done. */
static void conn_goaway(conn *c, int32_t last) {
  if (c->goaway_sent || c->closing || c->lingering) return;
  c->goaway_sent = true;
  c->goaway_last = last;
  nghttp2_submit_goaway(c->h2, NGHTTP2_FLAG_NONE, last, NGHTTP2_NO_ERROR, NULL, 0);
  mark_dirty(c);
}

static void conn_flush(conn *c) {
  if (c->lingering) return;
  while (!c->closing && c->write_bytes < WRITE_HIGH_WATER_BYTES) {
    tp_buf b;
    tp_buf_init(&b);
    while (b.len < WRITE_CHUNK_BYTES) {
      const uint8_t *p;
      ssize_t n = nghttp2_session_mem_send(c->h2, &p);
      if (n < 0) {
        tp_buf_fini(&b);
        conn_close(c);
        return;
      }
      if (n == 0) break;
      if (tp_buf_append(&b, p, (size_t)n)) {
        tp_buf_fini(&b);
        conn_close(c);
        return;
      }
    }
    if (b.len == 0) {
      tp_buf_fini(&b);
      break;
    }
    wreq *w = malloc(sizeof(*w));
    if (!w) {
      tp_buf_fini(&b);
      conn_close(c);
      return;
    }
    w->c = c;
    w->data = tp_buf_steal(&b, &w->len);
    if (c->chunk_blanks.len) fill_blanks(c->m, &c->chunk_blanks, 0, tp_now_ns());
    uv_buf_t ub = uv_buf_init(w->data, (unsigned)w->len);
    if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &ub, 1, on_write) != 0) {
      free(w->data);
      free(w);
      conn_close(c);
      return;
    }
    c->write_bytes += w->len;
  }
  /* Above the high-water mark the write callback flushes again. */
  if (!c->closing && !nghttp2_session_want_read(c->h2) && !nghttp2_session_want_write(c->h2) &&
      c->write_bytes == 0)
    conn_linger(c);
}

/* ---- stream output ----------------------------------------------------------- */

static void stream_resume(mstream *st) {
  if (st->response_started && st->deferred) {
    st->deferred = false;
    nghttp2_session_resume_data(st->c->h2, st->id);
  }
  mark_dirty(st->c);
}

static void on_trickle(tp_timer *t, uint64_t now_ns) {
  mstream *st = t->data;
  st->trickle_ready = true;
  stream_resume(st);
}

static ssize_t on_data_read(nghttp2_session *h2, int32_t sid, uint8_t *buf, size_t length, uint32_t *flags,
                            nghttp2_data_source *src, void *user_data) {
  mstream *st = src->ptr;
  size_t avail = st->out.len - st->out_off;
  if (avail == 0 && st->zeros_left) {
    /* The oversize message's body, made up as flow control lets it go. */
    size_t z = (size_t)TP_MIN((uint64_t)length, st->zeros_left);
    memset(buf, 0, z);
    st->zeros_left -= z;
    return (ssize_t)z;
  }
  size_t n = TP_MIN(avail, length);
  if (st->trickle && avail) {
    /* One byte per DATA frame, TRICKLE_NS apart. */
    if (!st->trickle_ready) {
      tp_mock *m = st->c->m;
      if (!tp_timer_active(&st->trickle_timer)) tp_timer_start(m->timers, &st->trickle_timer, tp_now_ns() + TRICKLE_NS);
      st->deferred = true;
      return NGHTTP2_ERR_DEFERRED;
    }
    st->trickle_ready = false;
    n = 1;
  }
  if (n) memcpy(buf, st->out.data + st->out_off, n);
  st->out_off += n;
  st->sent_total += n;
  if (st->blanks.len) stream_take_blanks(st);
  if (st->out_off < st->out.len) {
    /* Keep the queue from growing without bound behind a slow reader. */
    if (st->out_off >= (1u << 20)) {
      memmove(st->out.data, st->out.data + st->out_off, st->out.len - st->out_off);
      st->out.len -= st->out_off;
      st->out_off = 0;
    }
    return (ssize_t)n;
  }
  tp_buf_reset(&st->out);
  st->out_off = 0;
  if (st->trailers_pending) {
    st->trailers_pending = false;
    char status[12];
    snprintf(status, sizeof(status), "%d", st->status);
    size_t ml = st->message ? strlen(st->message) : 0;
    char *enc = ml ? malloc(3 * ml + 1) : NULL;
    size_t el = enc ? tp_grpc_message_encode(enc, st->message, ml) : 0;
    nghttp2_nv nv[2] = {
        {(uint8_t *)"grpc-status", (uint8_t *)status, 11, strlen(status), NGHTTP2_NV_FLAG_NONE},
        {(uint8_t *)"grpc-message", (uint8_t *)enc, 12, el, NGHTTP2_NV_FLAG_NONE},
    };
    int rv = nghttp2_submit_trailer(h2, sid, nv, enc ? 2 : 1);
    free(enc);
    if (rv != 0) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
    return (ssize_t)n;
  }
  if (n == 0) {
    st->deferred = true;
    return NGHTTP2_ERR_DEFERRED;
  }
  return (ssize_t)n;
}

static int stream_start_response(mstream *st) {
  if (st->response_started) return 0;
  nghttp2_nv nv[2] = {
      {(uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NONE},
      {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, NGHTTP2_NV_FLAG_NONE},
  };
  nghttp2_data_provider prd;
  prd.source.ptr = st;
  prd.read_callback = on_data_read;
  if (nghttp2_submit_response(st->c->h2, st->id, nv, 2, &prd) != 0) return TP_EPROTO;
  st->response_started = true;
  mark_dirty(st->c);
  return 0;
}

/* Packs msg with its gRPC prefix at the end of the stream's queue. */
static int stream_queue_msg(mstream *st, const ProtobufCMessage *msg) {
  size_t n = protobuf_c_message_get_packed_size(msg);
  if (n > UINT32_MAX) return TP_ETOOBIG;
  int rv = tp_buf_reserve(&st->out, TP_GRPC_PREFIX_BYTES + n);
  if (rv) return rv;
  uint8_t *p = st->out.data + st->out.len;
  tp_grpc_put_prefix(p, (uint32_t)n);
  protobuf_c_message_pack(msg, p + TP_GRPC_PREFIX_BYTES);
  st->out.len += TP_GRPC_PREFIX_BYTES + n;
  st->queued_total += TP_GRPC_PREFIX_BYTES + n;
  rv = stream_start_response(st);
  if (rv) return rv;
  stream_resume(st);
  return 0;
}

/* Queues bytes as they are (fault injection: broken framing). */
static int stream_queue_raw(mstream *st, const void *p, size_t n) {
  int rv = tp_buf_append(&st->out, p, n);
  if (rv) return rv;
  st->queued_total += n;
  rv = stream_start_response(st);
  if (rv) return rv;
  stream_resume(st);
  return 0;
}

static void req_free(mreq *r, tp__mock_outcome how);

/* Decides the stream's final status.  Requests still running on it are
 * cancelled.  Before any response HEADERS this is a Trailers-Only answer;
 * afterwards the trailers follow the queued messages. */
static void stream_finish(mstream *st, int status, const char *message) {
  if (st->finished) return;
  st->finished = true;
  /* The message may live in a request freed below (a fault's text). */
  free(st->message);
  st->message = message && *message ? strdup(message) : NULL;
  while (st->reqs) req_free(st->reqs, status == TP_GRPC_OK ? TP__MOCK_CANCELLED : TP__MOCK_FAILED);
  st->status = status;
  if (st->response_started) {
    st->trailers_pending = true;
    stream_resume(st);
    return;
  }
  char code[12];
  snprintf(code, sizeof(code), "%d", status);
  size_t ml = st->message ? strlen(st->message) : 0;
  char *enc = ml ? malloc(3 * ml + 1) : NULL;
  size_t el = enc ? tp_grpc_message_encode(enc, st->message, ml) : 0;
  nghttp2_nv nv[4] = {
      {(uint8_t *)":status", (uint8_t *)"200", 7, 3, NGHTTP2_NV_FLAG_NONE},
      {(uint8_t *)"content-type", (uint8_t *)"application/grpc", 12, 16, NGHTTP2_NV_FLAG_NONE},
      {(uint8_t *)"grpc-status", (uint8_t *)code, 11, strlen(code), NGHTTP2_NV_FLAG_NONE},
      {(uint8_t *)"grpc-message", (uint8_t *)enc, 12, el, NGHTTP2_NV_FLAG_NONE},
  };
  nghttp2_submit_response(st->c->h2, st->id, nv, enc ? 4 : 3, NULL);
  free(enc);
  mark_dirty(st->c);
}

/* A unary answer: the message, then grpc-status 0. */
static void stream_reply(mstream *st, const ProtobufCMessage *msg) {
  if (st->finished) return;
  if (stream_queue_msg(st, msg) != 0) {
    stream_finish(st, TP_GRPC_INTERNAL, "cannot queue the response");
    return;
  }
  stream_finish(st, TP_GRPC_OK, NULL);
}

/* ModelStreamInfer ends once the client half-closed and every request on it
 * has completed (Triton keeps the stream open until then). */
static void stream_maybe_done(mstream *st) {
  if (st->finished || st->reqs) return;
  if (st->method == M_MODEL_STREAM_INFER && st->remote_closed) stream_finish(st, TP_GRPC_OK, NULL);
}

/* ---- inference responses ----------------------------------------------------- */

static int bytes_element(tp_mock *m, const char *text, size_t len, ProtobufCBinaryData *out) {
  tp_buf_reset(&m->scratch);
  int rv = tp_buf_reserve(&m->scratch, 4 + len);
  if (rv) return rv;
  /* BYTES elements carry a 4-byte little-endian length (unlike the gRPC
   * prefix, which is big-endian). */
  put_le32(m->scratch.data, (uint32_t)len);
  if (len) memcpy(m->scratch.data + 4, text, len);
  m->scratch.len = 4 + len;
  out->data = m->scratch.data;
  out->len = m->scratch.len;
  return 0;
}

/* Queues one response of request r.  with_outputs false makes the empty
 * final response (no outputs, triton_final_response true).  t_ns for the
 * log is read right when the response is queued on the stream, before
 * nghttp2 frames it and before the socket write: it is the moment the mock
 * decides to send, which is what the client's arrival times are compared
 * with. */
static int queue_response(mreq *r, const char *text, size_t len, bool with_outputs, bool final,
                          uint32_t n_tokens) {
  mstream *st = r->st;
  tp_mock *m = st->c->m;
  Inference__InferParameter fp = INFERENCE__INFER_PARAMETER__INIT;
  fp.parameter_choice_case = INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM;
  fp.bool_param = final;
  Inference__ModelInferResponse__ParametersEntry pe = INFERENCE__MODEL_INFER_RESPONSE__PARAMETERS_ENTRY__INIT;
  pe.key = "triton_final_response";
  pe.value = &fp;
  Inference__ModelInferResponse__ParametersEntry *pes[1] = {&pe};

  int64_t shape[1] = {1};
  Inference__ModelInferResponse__InferOutputTensor ot =
      INFERENCE__MODEL_INFER_RESPONSE__INFER_OUTPUT_TENSOR__INIT;
  ot.name = (char *)r->job.model->text_output;
  ot.datatype = "BYTES";
  ot.n_shape = 1;
  ot.shape = shape;
  Inference__ModelInferResponse__InferOutputTensor on =
      INFERENCE__MODEL_INFER_RESPONSE__INFER_OUTPUT_TENSOR__INIT;
  on.name = "num_output_tokens";
  on.datatype = "UINT32";
  on.n_shape = 1;
  on.shape = shape;
  Inference__ModelInferResponse__InferOutputTensor *outs[2] = {&ot, &on};
  ProtobufCBinaryData raw[2];
  uint8_t ntok[4];
  put_le32(ntok, n_tokens);
  raw[1].data = ntok;
  raw[1].len = 4;

  Inference__ModelInferResponse resp = INFERENCE__MODEL_INFER_RESPONSE__INIT;
  resp.model_name = (char *)r->job.model->name;
  resp.id = r->job.id;
  if (with_outputs) {
    if (bytes_element(m, text, len, &raw[0])) return TP_ENOMEM;
    resp.model_version = "1";
    resp.n_outputs = r->num_tokens ? 2 : 1;
    resp.outputs = outs;
    resp.n_raw_output_contents = resp.n_outputs;
    resp.raw_output_contents = raw;
  } else {
    /* Triton copies the version from the request into an empty final
     * response, so it may be empty. */
    resp.model_version = r->version;
  }
  int rv;
  if (r->unary) {
    /* Unary ModelInfer answers carry no triton_final_response. */
    rv = stream_queue_msg(st, &resp.base);
  } else {
    resp.n_parameters = 1;
    resp.parameters = pes;
    Inference__ModelStreamInferResponse w = INFERENCE__MODEL_STREAM_INFER_RESPONSE__INIT;
    w.infer_response = &resp;
    rv = stream_queue_msg(st, &w.base);
  }
  if (rv) return rv;
  uint64_t now = tp_now_ns();
  tp__mock_count(&m->n_responses, 1);
  if (with_outputs) tp__mock_job_response(m, &r->job, now);
  size_t blank;
  tp__mock_log_response(m, &r->job, r->index++, now, text, with_outputs ? len : 0, final, &blank);
  stream_add_blank(st, blank, now);
  return 0;
}

/* An in-band error on a ModelStreamInfer stream: error_message and
 * infer_response.id only; the stream stays usable. */
static void queue_stream_error(mstream *st, const char *id, const char *msg) {
  Inference__ModelInferResponse resp = INFERENCE__MODEL_INFER_RESPONSE__INIT;
  resp.id = (char *)id;
  Inference__ModelStreamInferResponse w = INFERENCE__MODEL_STREAM_INFER_RESPONSE__INIT;
  w.error_message = (char *)msg;
  w.infer_response = &resp;
  if (stream_queue_msg(st, &w.base) != 0) {
    stream_finish(st, TP_GRPC_INTERNAL, "cannot queue the response");
    return;
  }
  tp__mock_log_error(st->c->m, id, msg, tp_now_ns());
}

/* A backend error (the inband_error fault): error_message, and an
 * infer_response with id, model name and version and triton_final_response
 * true, as the vLLM and TensorRT-LLM backends send it. */
static int queue_backend_error(mreq *r, const char *msg) {
  Inference__InferParameter fp = INFERENCE__INFER_PARAMETER__INIT;
  fp.parameter_choice_case = INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM;
  fp.bool_param = true;
  Inference__ModelInferResponse__ParametersEntry pe = INFERENCE__MODEL_INFER_RESPONSE__PARAMETERS_ENTRY__INIT;
  pe.key = "triton_final_response";
  pe.value = &fp;
  Inference__ModelInferResponse__ParametersEntry *pes[1] = {&pe};
  Inference__ModelInferResponse resp = INFERENCE__MODEL_INFER_RESPONSE__INIT;
  resp.model_name = (char *)r->job.model->name;
  resp.model_version = "1";
  resp.id = r->job.id;
  resp.n_parameters = 1;
  resp.parameters = pes;
  Inference__ModelStreamInferResponse w = INFERENCE__MODEL_STREAM_INFER_RESPONSE__INIT;
  w.error_message = (char *)msg;
  w.infer_response = &resp;
  int rv = stream_queue_msg(r->st, &w.base);
  if (!rv) tp__mock_log_error(r->st->c->m, r->job.id, msg, tp_now_ns());
  return rv;
}

/* ---- jobs: the part shared with the HTTP side ------------------------------------ */

static void on_admit(tp_mock_engine *e, tp_mock_seq *s, void *user_data) {
  tp_mock *m = user_data;
  tp__mock_job *j = s->data;
  tp_timer_start(m->timers, &j->timer, s->next_deadline_ns);
  tp__mock_raise_max(&m->max_seqs, tp_mock_engine_running(e));
  atomic_store_explicit(&m->n_prefix_queries_tokens, tp_mock_engine_prefix_queries_tokens(e),
                        memory_order_relaxed);
  atomic_store_explicit(&m->n_prefix_hits_tokens, tp_mock_engine_prefix_hits_tokens(e), memory_order_relaxed);
}

void tp__mock_job_choose_fault(tp_mock *m, tp__mock_job *j, const tp_mock_fault *given, int64_t after) {
  memset(&j->fault, 0, sizeof(j->fault));
  uint64_t number = tp_mock_engine_next_number(m->engine);
  if (given) {
    tp_mock_fault_pick(given, m->cfg.seed, number, &j->fault);
    j->fault.after_tokens = after > 0 ? (uint32_t)TP_MIN(after, (int64_t)UINT32_MAX) : 0;
  } else if (m->fault.kind != TP_MOCK_FAULT_NONE && tp_mock_fault_draw(m->cfg.seed, number, m->cfg.fault_rate)) {
    tp_mock_fault_pick(&m->fault, m->cfg.seed, number, &j->fault);
    j->fault.after_tokens = after >= 0 ? (uint32_t)TP_MIN(after, (int64_t)UINT32_MAX) : m->cfg.fault_after_tokens;
  }
}

/* Faults that answer at once are not given to the timing model: the
 * request never takes a batch slot, as a request refused at the door. */
static bool fault_at_arrival(const tp__mock_job *j) {
  return tp_mock_fault_is_discrete(j->fault.kind) && j->fault.after_tokens == 0;
}

int tp__mock_job_submit(tp_mock *m, tp__mock_job *j, tp_mock_seq_params *p, uint64_t now_ns) {
  if (j->fault.kind == TP_MOCK_FAULT_ENDLESS) p->endless = true;
  int rv = 0;
  if (fault_at_arrival(j)) {
    j->seq.number = tp_mock_engine_take_number(m->engine);
    j->seq.arrival_ns = now_ns;
    j->seq.prompt_tokens = p->prompt_tokens;
    j->seq.max_tokens = p->max_tokens ? p->max_tokens : TP_MOCK_DEFAULT_MAX_TOKENS;
    /* Fires on the next loop iteration, outside whatever callback
     * delivered the request. */
    tp_timer_start(m->timers, &j->timer, now_ns);
  } else {
    rv = tp_mock_engine_submit(m->engine, &j->seq, p, now_ns);
    if (rv) return rv;
    j->submitted = true;
  }
  tp__mock_count(&m->n_requests, 1);
  tp__mock_log_request(m, j, now_ns, p->prompt, p->prompt_len);
  if (j->fault.kind == TP_MOCK_FAULT_ENDLESS) tp__mock_job_fault_fired(m, j, now_ns);
  return 0;
}

void tp__mock_job_fault_fired(tp_mock *m, tp__mock_job *j, uint64_t now_ns) {
  if (j->fault_fired) return;
  j->fault_fired = true;
  tp__mock_count(&m->n_faults, 1);
  log_fault(m, j, now_ns);
}

bool tp__mock_job_fault_due(const tp__mock_job *j) {
  return j->fault.kind != TP_MOCK_FAULT_NONE && !j->fault_fired && tp_mock_fault_is_discrete(j->fault.kind) &&
         j->tokens_sent == j->fault.after_tokens;
}

bool tp__mock_job_token_text(tp_mock *m, tp__mock_job *j, const tp_mock_token *tok, char *bad, const char **text,
                             size_t *len, uint64_t now_ns) {
  *text = tok->text;
  *len = tok->text_len;
  if (j->fault.kind == TP_MOCK_FAULT_NONE || j->fault_fired || j->tokens_sent != j->fault.after_tokens) return false;
  if (j->fault.kind == TP_MOCK_FAULT_INVALID_UTF8) {
    /* 0xff and 0xfe never occur in UTF-8. */
    bad[0] = (char)0xff;
    bad[1] = (char)0xfe;
    memcpy(bad + 2, tok->text, tok->text_len);
    *text = bad;
    *len = tok->text_len + 2;
    tp__mock_job_fault_fired(m, j, now_ns);
    return false;
  }
  if (j->fault.kind == TP_MOCK_FAULT_TRICKLE) {
    tp__mock_job_fault_fired(m, j, now_ns);
    return true;
  }
  return false;
}

void tp__mock_job_response(tp_mock *m, tp__mock_job *j, uint64_t now_ns) {
  if (j->responses == 0)
    j->first_response_ns = now_ns;
  else if (now_ns > j->last_response_ns)
    tp_mock_statset_itl(&m->stats, now_ns - j->last_response_ns);
  j->last_response_ns = now_ns;
  j->responses++;
}

static uint64_t wall_ms(void) {
  uv_timeval64_t tv;
  if (uv_gettimeofday(&tv) != 0) return 0;
  return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

void tp__mock_job_end(tp_mock *m, tp__mock_job *j, tp__mock_outcome how, uint64_t now_ns) {
  if (j->ended) return;
  j->ended = true;
  if (m->timers) tp_timer_stop(m->timers, &j->timer);
  bool hit_length = j->seq.hit_length;
  if (j->submitted) tp_mock_engine_cancel(m->engine, &j->seq, now_ns);
  tp_mock_job_record rec;
  memset(&rec, 0, sizeof(rec));
  rec.model = j->model->stats_model;
  rec.ok = how == TP__MOCK_OK;
  rec.cancelled = how == TP__MOCK_CANCELLED;
  rec.hit_length = hit_length;
  rec.arrival_ns = j->seq.arrival_ns;
  rec.admit_ns = j->submitted ? j->seq.admit_ns : 0;
  rec.first_response_ns = j->first_response_ns;
  rec.end_ns = now_ns;
  rec.wall_ms = wall_ms();
  rec.prompt_tokens = j->seq.prompt_tokens;
  rec.output_tokens = j->tokens_sent;
  rec.responses = j->responses;
  tp_mock_statset_record(&m->stats, &rec);
}

void tp__mock_job_fini(tp__mock_job *j) {
  free(j->id);
  j->id = NULL;
}

/* ---- requests ------------------------------------------------------------------ */

static void req_free(mreq *r, tp__mock_outcome how) {
  mstream *st = r->st;
  tp_mock *m = st->c->m;
  tp__mock_job_end(m, &r->job, how, tp_now_ns());
  if (r->prev)
    r->prev->next = r->next;
  else
    st->reqs = r->next;
  if (r->next) r->next->prev = r->prev;
  tp_buf_fini(&r->text);
  tp__mock_job_fini(&r->job);
  free(r->version);
  free(r);
}

/* The request goes silent (stall, or after an oversize message): no more
 * tokens, its batch slot is given back, the stream stays open until the
 * client cancels it or the connection goes. */
static void req_stall(mreq *r, uint64_t now_ns) {
  tp_mock *m = r->st->c->m;
  r->stalled = true;
  tp_timer_stop(m->timers, &r->job.timer);
  if (r->job.submitted) tp_mock_engine_cancel(m->engine, &r->job.seq, now_ns);
}

/* After a request ended with its last response (or a fault that leaves the
 * stream usable), the call may be complete. */
static void req_done(mreq *r, tp__mock_outcome how) {
  mstream *st = r->st;
  bool unary = st->method != M_MODEL_STREAM_INFER;
  req_free(r, how);
  if (unary)
    stream_finish(st, TP_GRPC_OK, NULL);
  else
    stream_maybe_done(st);
}

/* Carries out r's fault, which is due now (in place of token number
 * after_tokens).  May free r, its stream and its connection. */
static void fire_fault(mreq *r, uint64_t now_ns) {
  mstream *st = r->st;
  conn *c = st->c;
  tp_mock *m = c->m;
  const tp_mock_fault *f = &r->job.fault;
  const char *msg = tp_mock_fault_message(f);
  tp__mock_job_fault_fired(m, &r->job, now_ns);
  switch (f->kind) {
    case TP_MOCK_FAULT_RST_STREAM:
      tp__mock_job_end(m, &r->job, TP__MOCK_FAILED, now_ns);
      /* The stream (and everything on it) goes in on_stream_close. */
      st->finished = true;
      nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, st->id, (uint32_t)f->code);
      mark_dirty(c);
      return;
    case TP_MOCK_FAULT_GRPC_STATUS:
    case TP_MOCK_FAULT_HTTP_STATUS:
      /* HEADERS first, then the status in trailers. */
      tp__mock_job_end(m, &r->job, TP__MOCK_FAILED, now_ns);
      if (stream_start_response(st) != 0) {
        stream_finish(st, TP_GRPC_INTERNAL, "cannot start the response");
        return;
      }
      stream_finish(st, tp_mock_fault_grpc_status(f), msg);
      return;
    case TP_MOCK_FAULT_TRAILERS_ONLY:
      /* One HEADERS block when nothing was sent yet, else trailers. */
      tp__mock_job_end(m, &r->job, TP__MOCK_FAILED, now_ns);
      stream_finish(st, tp_mock_fault_grpc_status(f), msg);
      return;
    case TP_MOCK_FAULT_INBAND_ERROR:
      tp__mock_job_end(m, &r->job, TP__MOCK_FAILED, now_ns);
      if (r->unary) {
        stream_finish(st, TP_GRPC_INTERNAL, msg);
        return;
      }
      if (queue_backend_error(r, msg) != 0) {
        stream_finish(st, TP_GRPC_INTERNAL, "cannot queue the response");
        return;
      }
      req_done(r, TP__MOCK_FAILED);
      return;
    case TP_MOCK_FAULT_STALL: req_stall(r, now_ns); return;
    case TP_MOCK_FAULT_MALFORMED: {
      /* A framed message whose protobuf is cut short: infer_response (field
       * 2) announces 127 bytes and six follow. */
      static const uint8_t garbage[] = {0x00, 0x00, 0x00, 0x00, 0x08, 0x12, 0x7f, 0x0a, 0x02, 'h', 'i', 0xff, 0xff};
      tp__mock_job_end(m, &r->job, TP__MOCK_FAILED, now_ns);
      if (stream_queue_raw(st, garbage, sizeof(garbage)) != 0) {
        stream_finish(st, TP_GRPC_INTERNAL, "cannot queue the response");
        return;
      }
      tp__mock_count(&m->n_responses, 1);
      req_done(r, TP__MOCK_FAILED);
      return;
    }
    case TP_MOCK_FAULT_OVERSIZE: {
      /* A message of size_bytes (zeros, which are not protobuf either):
       * a client with a smaller limit refuses it, from its prefix or once
       * it is in.  The request then goes silent; the stream is of no more
       * use, since its framing now holds the whole body. */
      uint8_t prefix[TP_GRPC_PREFIX_BYTES];
      tp_grpc_put_prefix(prefix, f->size_bytes);
      if (stream_queue_raw(st, prefix, sizeof(prefix)) != 0) {
        stream_finish(st, TP_GRPC_INTERNAL, "cannot queue the response");
        return;
      }
      st->zeros_left = f->size_bytes;
      tp__mock_count(&m->n_responses, 1);
      req_stall(r, now_ns);
      return;
    }
    case TP_MOCK_FAULT_CLOSE_CONN:
      tp__mock_job_end(m, &r->job, TP__MOCK_FAILED, now_ns);
      /* What is queued but not written yet is lost, as with a crash. */
      conn_close(c);
      return;
    case TP_MOCK_FAULT_GOAWAY: {
      /* A request that got nothing yet is declared unprocessed (its stream
       * id above last-stream-id: the client may retry it elsewhere). */
      int32_t last = r->job.responses ? st->id : TP_MAX(st->id - 2, 0);
      tp__mock_job_end(m, &r->job, TP__MOCK_FAILED, now_ns);
      st->finished = true;
      c->goaway_sent = true;
      c->goaway_last = last;
      nghttp2_session_terminate_session2(c->h2, last, (uint32_t)f->code);
      mark_dirty(c);
      return;
    }
    default: return;
  }
}

static void on_token(tp_timer *t, uint64_t now_ns) {
  mreq *r = t->data;
  mstream *st = r->st;
  tp_mock *m = st->c->m;
  tp__mock_job *j = &r->job;
  if (tp__mock_job_fault_due(j)) {
    fire_fault(r, now_ns);
    return;
  }
  tp_mock_token tok;
  if (tp_mock_engine_next(m->engine, &j->seq, now_ns, &tok) != 0) return;
  const char *text;
  size_t text_len;
  char bad[sizeof(tok.text) + 2];
  if (tp__mock_job_token_text(m, j, &tok, bad, &text, &text_len, now_ns)) {
    st->trickle = true;
    st->trickle_ready = true;
  }
  j->tokens_sent++;
  int rv = 0;
  if (r->streaming && j->model->echo) {
    /* The prompt and all the text so far, every time. */
    rv = tp_buf_append(&r->text, text, text_len);
    if (!rv) rv = queue_response(r, (const char *)r->text.data, r->text.len, true, tok.last, tok.index + 1);
  } else if (r->streaming) {
    /* The ensemble with empty final responses enabled sends the flag
     * separately, the way Triton's ensemble scheduler often does. */
    bool final_here = tok.last && !r->empty_final;
    rv = queue_response(r, text, text_len, true, final_here, 1);
    if (!rv && tok.last && r->empty_final) rv = queue_response(r, NULL, 0, false, true, 0);
  } else {
    rv = tp_buf_append(&r->text, text, text_len);
    if (!rv && tok.last)
      rv = queue_response(r, (const char *)r->text.data, r->text.len, true, true, tok.index + 1);
  }
  if (rv) {
    stream_finish(st, TP_GRPC_INTERNAL, "cannot queue the response");
    return;
  }
  if (!tok.last) {
    tp_timer_start(m->timers, t, j->seq.next_deadline_ns);
    return;
  }
  tp__mock_job_end(m, j, TP__MOCK_OK, now_ns);
  req_done(r, TP__MOCK_OK);
}

/* ---- request parsing ----------------------------------------------------------- */

typedef struct infer_args {
  const tp__mock_model *model;
  const uint8_t *prompt;
  size_t prompt_len;
  bool have_prompt;
  bool stream;
  bool exclude_input;
  bool exclude_input_set;
  bool num_tokens;
  bool empty_final;
  bool have_max_tokens;
  bool have_fault;    /* the request asked for a fault (tokperf_fault) */
  tp_mock_fault fault;
  int64_t fault_after; /* tokperf_fault_after, -1 = not given */
  tp_mock_seq_params sp;
} infer_args;

typedef struct tensor_ref {
  const Inference__ModelInferRequest__InferInputTensor *in;
  const ProtobufCBinaryData *raw; /* NULL when the data is typed */
} tensor_ref;

static int tensor_bytes(const tensor_ref *t, const uint8_t **p, size_t *len, char *err, size_t errlen) {
  if (strcmp(t->in->datatype, "BYTES") != 0) {
    tp_seterr(err, errlen, "input '%s' has datatype %s, expected BYTES", t->in->name, t->in->datatype);
    return TP_EINVAL;
  }
  if (!t->raw) {
    const Inference__InferTensorContents *c = t->in->contents;
    if (!c->n_bytes_contents) goto empty;
    *p = c->bytes_contents[0].data;
    *len = c->bytes_contents[0].len;
    return 0;
  }
  if (t->raw->len < 4) goto empty;
  uint32_t n = get_le32(t->raw->data);
  if (n > t->raw->len - 4) {
    tp_seterr(err, errlen, "input '%s': BYTES element of %u bytes overruns the %zu bytes given", t->in->name,
              n, t->raw->len);
    return TP_EINVAL;
  }
  *p = t->raw->data + 4;
  *len = n;
  return 0;
empty:
  tp_seterr(err, errlen, "input '%s' holds no element", t->in->name);
  return TP_EINVAL;
}

static int tensor_int(const tensor_ref *t, int64_t *v, char *err, size_t errlen) {
  const char *dt = t->in->datatype;
  const Inference__InferTensorContents *c = t->in->contents;
  const uint8_t *r = t->raw ? t->raw->data : NULL;
  size_t rl = t->raw ? t->raw->len : 0;
  if (!strcmp(dt, "INT32") || !strcmp(dt, "INT16") || !strcmp(dt, "INT8")) {
    size_t w = dt[3] == '3' ? 4 : dt[3] == '1' ? 2 : 1;
    if (r) {
      if (rl < w) goto empty;
      uint32_t u = w == 4 ? get_le32(r) : w == 2 ? (uint32_t)(r[0] | r[1] << 8) : r[0];
      *v = w == 4 ? (int32_t)u : w == 2 ? (int16_t)u : (int8_t)u;
    } else {
      if (!c->n_int_contents) goto empty;
      *v = c->int_contents[0];
    }
  } else if (!strcmp(dt, "UINT32") || !strcmp(dt, "UINT16") || !strcmp(dt, "UINT8")) {
    size_t w = dt[4] == '3' ? 4 : dt[4] == '1' ? 2 : 1;
    if (r) {
      if (rl < w) goto empty;
      *v = w == 4 ? get_le32(r) : w == 2 ? (uint32_t)(r[0] | r[1] << 8) : r[0];
    } else {
      if (!c->n_uint_contents) goto empty;
      *v = c->uint_contents[0];
    }
  } else if (!strcmp(dt, "INT64") || !strcmp(dt, "UINT64")) {
    if (r) {
      if (rl < 8) goto empty;
      *v = (int64_t)((uint64_t)get_le32(r) | (uint64_t)get_le32(r + 4) << 32);
    } else if (dt[0] == 'I') {
      if (!c->n_int64_contents) goto empty;
      *v = c->int64_contents[0];
    } else {
      if (!c->n_uint64_contents) goto empty;
      *v = (int64_t)c->uint64_contents[0];
    }
  } else {
    tp_seterr(err, errlen, "input '%s' has datatype %s, expected an integer type", t->in->name, dt);
    return TP_EINVAL;
  }
  return 0;
empty:
  tp_seterr(err, errlen, "input '%s' holds no element", t->in->name);
  return TP_EINVAL;
}

static int tensor_bool(const tensor_ref *t, bool *v, char *err, size_t errlen) {
  if (strcmp(t->in->datatype, "BOOL") != 0) {
    tp_seterr(err, errlen, "input '%s' has datatype %s, expected BOOL", t->in->name, t->in->datatype);
    return TP_EINVAL;
  }
  if (t->raw) {
    if (t->raw->len < 1) goto empty;
    *v = t->raw->data[0] != 0;
  } else {
    if (!t->in->contents->n_bool_contents) goto empty;
    *v = t->in->contents->bool_contents[0];
  }
  return 0;
empty:
  tp_seterr(err, errlen, "input '%s' holds no element", t->in->name);
  return TP_EINVAL;
}

static uint32_t clamp_u32(int64_t v) {
  return v <= 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* A JSON number, or a string holding one: the vLLM backend casts each
 * sampling parameter to its Python type, so "64" works as well as 64. */
static bool json_int(json_t *j, int64_t *v) {
  if (json_is_integer(j)) {
    *v = json_integer_value(j);
    return true;
  }
  if (json_is_real(j)) {
    *v = (int64_t)json_real_value(j);
    return true;
  }
  if (json_is_string(j)) {
    char *end;
    long long x = strtoll(json_string_value(j), &end, 10);
    if (end == json_string_value(j)) return false;
    *v = x;
    return true;
  }
  return false;
}

/* Python's bool() on the value, as the vLLM backend applies it: a non-empty
 * string, even "false", is true. */
static bool json_truthy(json_t *j) {
  if (json_is_boolean(j)) return json_is_true(j);
  if (json_is_string(j)) return json_string_length(j) > 0;
  if (json_is_integer(j)) return json_integer_value(j) != 0;
  if (json_is_real(j)) return json_real_value(j) != 0;
  return false;
}

static int parse_sampling(infer_args *a, const uint8_t *p, size_t len, char *err, size_t errlen) {
  json_error_t je;
  json_t *root = json_loadb((const char *)p, len, 0, &je);
  if (!root || !json_is_object(root)) {
    tp_seterr(err, errlen, "sampling_parameters is not a JSON object: %s", root ? "wrong type" : je.text);
    json_decref(root);
    return TP_EINVAL;
  }
  int64_t v;
  json_t *j;
  if ((j = json_object_get(root, "max_tokens")) && !json_is_null(j)) {
    if (!json_int(j, &v)) goto bad_max;
    a->sp.max_tokens = clamp_u32(v);
    a->have_max_tokens = true;
  }
  if ((j = json_object_get(root, "min_tokens")) && json_int(j, &v)) a->sp.min_tokens = clamp_u32(v);
  if ((j = json_object_get(root, "ignore_eos"))) a->sp.ignore_eos = json_truthy(j);
  json_decref(root);
  return 0;
bad_max:
  tp_seterr(err, errlen, "sampling_parameters: max_tokens is not a number");
  json_decref(root);
  return TP_EINVAL;
}

static bool param_int(const Inference__InferParameter *p, int64_t *v) {
  switch (p->parameter_choice_case) {
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM: *v = p->int64_param; return true;
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_UINT64_PARAM:
      *v = p->uint64_param > INT64_MAX ? INT64_MAX : (int64_t)p->uint64_param;
      return true;
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_DOUBLE_PARAM:
      *v = (int64_t)p->double_param;
      return true;
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM: {
      char *end;
      long long x = strtoll(p->string_param, &end, 10);
      if (end == p->string_param) return false;
      *v = x;
      return true;
    }
    default: return false;
  }
}

static bool param_bool(const Inference__InferParameter *p) {
  switch (p->parameter_choice_case) {
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM: return p->bool_param;
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_INT64_PARAM: return p->int64_param != 0;
    case INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM:
      return strcmp(p->string_param, "true") == 0 || strcmp(p->string_param, "1") == 0;
    default: return false;
  }
}

/* Reads what the mock needs out of a ModelInferRequest.  Returns 0, or
 * TP_ENOTFOUND (unknown model or version, grpc NOT_FOUND) / TP_EINVAL (bad
 * inputs, INVALID_ARGUMENT) with Triton-like text in err. */
static int parse_infer(const Inference__ModelInferRequest *q, infer_args *a, char *err, size_t errlen) {
  memset(a, 0, sizeof(*a));
  a->fault_after = -1;
  a->model = tp__mock_find_model(q->model_name);
  if (!a->model) {
    tp_seterr(err, errlen, "Request for unknown model: '%s' is not found", q->model_name);
    return TP_ENOTFOUND;
  }
  if (q->model_version[0] && strcmp(q->model_version, "1") != 0) {
    tp_seterr(err, errlen, "Request for unknown model: '%s' version %s is not found", q->model_name,
              q->model_version);
    return TP_ENOTFOUND;
  }
  const tp__mock_model *md = a->model;
  size_t raw_next = 0;
  bool have_sampling = false;
  int rv = 0;
  for (size_t i = 0; i < q->n_inputs && rv == 0; i++) {
    const Inference__ModelInferRequest__InferInputTensor *in = q->inputs[i];
    if (!tp__mock_model_has_input(md, in->name)) {
      tp_seterr(err, errlen, "[request id: %s] unexpected inference input '%s' for model '%s'", q->id,
                in->name, md->name);
      return TP_EINVAL;
    }
    tensor_ref t = {in, NULL};
    if (!in->contents) {
      if (raw_next >= q->n_raw_input_contents) {
        tp_seterr(err, errlen, "unable to find data for input tensor '%s' in request", in->name);
        return TP_EINVAL;
      }
      t.raw = &q->raw_input_contents[raw_next++];
    } else if (q->n_raw_input_contents) {
      tp_seterr(err, errlen,
                "contents field must not be specified when using raw_input_contents for '%s' "
                "for model '%s'",
                in->name, md->name);
      return TP_EINVAL;
    }
    const char *nm = in->name;
    int64_t v;
    /* The tutorial's model spells the same inputs in upper case. */
    if (!strcmp(nm, "PROMPT")) nm = "text_input";
    else if (!strcmp(nm, "STREAM")) nm = "stream";
    else if (!strcmp(nm, "SAMPLING_PARAMETERS")) nm = "sampling_parameters";
    if (!strcmp(nm, "text_input")) {
      rv = tensor_bytes(&t, &a->prompt, &a->prompt_len, err, errlen);
      a->have_prompt = rv == 0;
    } else if (!strcmp(nm, "stream")) {
      rv = tensor_bool(&t, &a->stream, err, errlen);
    } else if (!strcmp(nm, "exclude_input_in_output")) {
      rv = tensor_bool(&t, &a->exclude_input, err, errlen);
      a->exclude_input_set = rv == 0;
    } else if (!strcmp(nm, "return_num_output_tokens")) {
      rv = tensor_bool(&t, &a->num_tokens, err, errlen);
    } else if (!strcmp(nm, "max_tokens")) {
      if ((rv = tensor_int(&t, &v, err, errlen)) == 0) {
        a->sp.max_tokens = clamp_u32(v);
        a->have_max_tokens = true;
      }
    } else if (!strcmp(nm, "min_length")) {
      if ((rv = tensor_int(&t, &v, err, errlen)) == 0) a->sp.min_tokens = clamp_u32(v);
    } else if (!strcmp(nm, "sampling_parameters")) {
      const uint8_t *p;
      size_t len;
      if ((rv = tensor_bytes(&t, &p, &len, err, errlen)) == 0) {
        rv = parse_sampling(a, p, len, err, errlen);
        have_sampling = true;
      }
    }
    /* Other declared inputs (sampling knobs, stop words) are accepted and
     * have no effect on the mock. */
  }
  if (rv) return rv;
  if (!a->have_prompt) {
    tp_seterr(err, errlen, "[request id: %s] input '%s' is required for model '%s'", q->id, md->inputs[0].name,
              md->name);
    return TP_EINVAL;
  }
  if (md->ensemble && !a->have_max_tokens) {
    tp_seterr(err, errlen, "[request id: %s] input 'max_tokens' is required for model '%s'", q->id, md->name);
    return TP_EINVAL;
  }
  for (size_t i = 0; i < q->n_parameters; i++) {
    const char *k = q->parameters[i]->key;
    const Inference__InferParameter *p = q->parameters[i]->value;
    if (!p) continue;
    if (!strcmp(k, "triton_enable_empty_final_response")) {
      a->empty_final = param_bool(p);
    } else if (!strcmp(k, "tokperf_fault")) {
      /* Per-request fault injection (tp_mock_faults.h has the syntax). */
      if (p->parameter_choice_case != INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM) {
        tp_seterr(err, errlen, "[request id: %s] parameter 'tokperf_fault' must be a string", q->id);
        return TP_EINVAL;
      }
      char ferr[400];
      if (tp_mock_fault_parse(p->string_param, strlen(p->string_param), &a->fault, ferr, sizeof(ferr))) {
        tp_seterr(err, errlen, "[request id: %s] parameter 'tokperf_fault': %s", q->id, ferr);
        return TP_EINVAL;
      }
      a->have_fault = true;
    } else if (!strcmp(k, "tokperf_fault_after")) {
      int64_t v;
      if (!param_int(p, &v) || v < 0) {
        tp_seterr(err, errlen, "[request id: %s] parameter 'tokperf_fault_after' must be a count >= 0", q->id);
        return TP_EINVAL;
      }
      a->fault_after = v;
    } else if (!md->ensemble && !have_sampling) {
      /* Without a sampling_parameters tensor the vLLM backend serializes
       * the request parameters instead (what HTTP generate produces). */
      int64_t v;
      if (!strcmp(k, "max_tokens") && param_int(p, &v)) {
        a->sp.max_tokens = clamp_u32(v);
        a->have_max_tokens = true;
      } else if (!strcmp(k, "min_tokens") && param_int(p, &v)) {
        a->sp.min_tokens = clamp_u32(v);
      } else if (!strcmp(k, "ignore_eos")) {
        a->sp.ignore_eos = param_bool(p);
      }
    }
  }
  if (!md->ensemble && a->stream && a->exclude_input_set && !a->exclude_input) {
    tp_seterr(err, errlen, "When streaming, `exclude_input_in_output` = False is not allowed.");
    return TP_EINVAL;
  }
  a->sp.prompt_tokens = tp_mock_count_words((const char *)a->prompt, a->prompt_len);
  return 0;
}

/* Starts one inference request on st.  unary: ModelInfer. */
static void start_infer(mstream *st, const uint8_t *data, size_t len, bool unary) {
  tp_mock *m = st->c->m;
  Inference__ModelInferRequest *q = inference__model_infer_request__unpack(NULL, len, data);
  if (!q) {
    stream_finish(st, TP_GRPC_INTERNAL, "cannot parse ModelInferRequest");
    return;
  }
  char err[512];
  infer_args a;
  int rv = parse_infer(q, &a, err, sizeof(err));
  if (rv) {
    if (unary)
      stream_finish(st, rv == TP_ENOTFOUND ? TP_GRPC_NOT_FOUND : TP_GRPC_INVALID_ARGUMENT, err);
    else
      queue_stream_error(st, q->id, err);
    inference__model_infer_request__free_unpacked(q, NULL);
    return;
  }
  mreq *r = calloc(1, sizeof(*r));
  if (!r || !(r->job.id = strdup(q->id)) || !(r->version = strdup(q->model_version))) {
    if (r) free(r->job.id);
    free(r);
    inference__model_infer_request__free_unpacked(q, NULL);
    stream_finish(st, TP_GRPC_RESOURCE_EXHAUSTED, "out of memory");
    return;
  }
  tp_buf_init(&r->text);
  r->st = st;
  r->job.model = a.model;
  r->unary = unary;
  r->streaming = !unary && a.stream;
  r->empty_final = r->streaming && a.model->ensemble && a.empty_final;
  r->num_tokens = !a.model->ensemble && a.num_tokens;
  /* Non-streaming answers repeat the prompt unless the request excludes it
   * (both backends default to including it). */
  if ((!r->streaming || a.model->echo) && !a.exclude_input && a.prompt_len &&
      tp_buf_append(&r->text, a.prompt, a.prompt_len) != 0) {
    /* Not linked into the stream yet, so freed by hand. */
    tp_buf_fini(&r->text);
    tp__mock_job_fini(&r->job);
    free(r->version);
    free(r);
    inference__model_infer_request__free_unpacked(q, NULL);
    stream_finish(st, TP_GRPC_RESOURCE_EXHAUSTED, "out of memory");
    return;
  }
  r->next = st->reqs;
  if (st->reqs) st->reqs->prev = r;
  st->reqs = r;
  tp_timer_init(&r->job.timer, on_token, r);
  r->job.seq.data = &r->job;
  tp__mock_job_choose_fault(m, &r->job, a.have_fault ? &a.fault : NULL, a.fault_after);
  /* The response HEADERS go with the first request on the stream, unless
   * that request is to be answered Trailers-Only. */
  bool trailers_only = r->job.fault.kind == TP_MOCK_FAULT_TRAILERS_ONLY && r->job.fault.after_tokens == 0;
  if (!trailers_only && stream_start_response(st) != 0) {
    inference__model_infer_request__free_unpacked(q, NULL);
    stream_finish(st, TP_GRPC_INTERNAL, "cannot start the response");
    return;
  }
  a.sp.prompt = (const char *)a.prompt;
  a.sp.prompt_len = a.prompt_len;
  /* Submitting assigns the request number the log line carries; no
   * response can be queued before the first timer fires. */
  rv = tp__mock_job_submit(m, &r->job, &a.sp, m->arrival_ns ? m->arrival_ns : tp_now_ns());
  inference__model_infer_request__free_unpacked(q, NULL);
  if (rv) stream_finish(st, TP_GRPC_RESOURCE_EXHAUSTED, "out of memory");
}

/* ---- unary methods --------------------------------------------------------------- */

static void reply_bool(mstream *st, const ProtobufCMessageDescriptor *d, bool v) {
  /* ServerLive/ServerReady/ModelReady responses all are { bool = 1 }. */
  Inference__ServerLiveResponse live = INFERENCE__SERVER_LIVE_RESPONSE__INIT;
  Inference__ServerReadyResponse ready = INFERENCE__SERVER_READY_RESPONSE__INIT;
  Inference__ModelReadyResponse mready = INFERENCE__MODEL_READY_RESPONSE__INIT;
  if (d == &inference__server_live_response__descriptor) {
    live.live = v;
    stream_reply(st, &live.base);
  } else if (d == &inference__server_ready_response__descriptor) {
    ready.ready = v;
    stream_reply(st, &ready.base);
  } else {
    mready.ready = v;
    stream_reply(st, &mready.base);
  }
}

static void reply_model_metadata(mstream *st, const uint8_t *data, size_t len) {
  Inference__ModelMetadataRequest *q = inference__model_metadata_request__unpack(NULL, len, data);
  if (!q) {
    stream_finish(st, TP_GRPC_INTERNAL, "cannot parse ModelMetadataRequest");
    return;
  }
  const tp__mock_model *md = tp__mock_find_model(q->name);
  char err[256];
  if (!md || (q->version[0] && strcmp(q->version, "1") != 0)) {
    if (q->version[0] && md)
      snprintf(err, sizeof(err), "Request for unknown model: '%s' version %s is not found", q->name,
               q->version);
    else
      snprintf(err, sizeof(err), "Request for unknown model: '%s' is not found", q->name);
    inference__model_metadata_request__free_unpacked(q, NULL);
    stream_finish(st, TP_GRPC_NOT_FOUND, err);
    return;
  }
  inference__model_metadata_request__free_unpacked(q, NULL);
  Inference__ModelMetadataResponse__TensorMetadata tin[16], tout[4];
  Inference__ModelMetadataResponse__TensorMetadata *pin[16], *pout[4];
  for (size_t i = 0; i < md->n_inputs; i++) {
    Inference__ModelMetadataResponse__TensorMetadata t =
        INFERENCE__MODEL_METADATA_RESPONSE__TENSOR_METADATA__INIT;
    t.name = (char *)md->inputs[i].name;
    t.datatype = (char *)md->inputs[i].datatype;
    t.n_shape = md->inputs[i].n_dims;
    t.shape = (int64_t *)md->inputs[i].dims;
    tin[i] = t;
    pin[i] = &tin[i];
  }
  for (size_t i = 0; i < md->n_outputs; i++) {
    Inference__ModelMetadataResponse__TensorMetadata t =
        INFERENCE__MODEL_METADATA_RESPONSE__TENSOR_METADATA__INIT;
    t.name = (char *)md->outputs[i].name;
    t.datatype = (char *)md->outputs[i].datatype;
    t.n_shape = md->outputs[i].n_dims;
    t.shape = (int64_t *)md->outputs[i].dims;
    tout[i] = t;
    pout[i] = &tout[i];
  }
  char *versions[1] = {"1"};
  Inference__ModelMetadataResponse r = INFERENCE__MODEL_METADATA_RESPONSE__INIT;
  r.name = (char *)md->name;
  r.n_versions = 1;
  r.versions = versions;
  r.platform = (char *)md->platform;
  r.n_inputs = md->n_inputs;
  r.inputs = pin;
  r.n_outputs = md->n_outputs;
  r.outputs = pout;
  stream_reply(st, &r.base);
}

static void reply_model_ready(mstream *st, const uint8_t *data, size_t len) {
  Inference__ModelReadyRequest *q = inference__model_ready_request__unpack(NULL, len, data);
  if (!q) {
    stream_finish(st, TP_GRPC_INTERNAL, "cannot parse ModelReadyRequest");
    return;
  }
  bool ready = tp__mock_find_model(q->name) && (!q->version[0] || strcmp(q->version, "1") == 0);
  inference__model_ready_request__free_unpacked(q, NULL);
  reply_bool(st, &inference__model_ready_response__descriptor, ready);
}

static void reply_server_metadata(mstream *st) {
  char *ext[3] = {"parameters", "binary_tensor_data", "statistics"};
  Inference__ServerMetadataResponse r = INFERENCE__SERVER_METADATA_RESPONSE__INIT;
  r.name = "tokperf-mock";
  r.version = TP_VERSION;
  r.n_extensions = 3;
  r.extensions = ext;
  stream_reply(st, &r.base);
}

static void fill_duration(Inference__StatisticDuration *d, const tp_mock_duration *v) {
  inference__statistic_duration__init(d);
  d->count = v->count;
  d->ns = v->ns;
}

/* ModelStatistics: one entry per model, or the one asked for; the ensemble's
 * composing models (preprocessing, tensorrt_llm, postprocessing) are
 * listed too, as Triton lists every model it has loaded. */
static void reply_model_statistics(mstream *st, const uint8_t *data, size_t len) {
  tp_mock *m = st->c->m;
  Inference__ModelStatisticsRequest *q = inference__model_statistics_request__unpack(NULL, len, data);
  if (!q) {
    stream_finish(st, TP_GRPC_INTERNAL, "cannot parse ModelStatisticsRequest");
    return;
  }
  int which = TP_MOCK_SM_COUNT;
  if (q->name[0]) {
    for (int i = 0; i < TP_MOCK_SM_COUNT; i++)
      if (strcmp(q->name, tp_mock_stats_model_name((tp_mock_stats_model)i)) == 0) which = i;
  }
  if ((q->name[0] && which == TP_MOCK_SM_COUNT) || (q->version[0] && strcmp(q->version, "1") != 0)) {
    char err[300];
    if (q->version[0] && which != TP_MOCK_SM_COUNT)
      snprintf(err, sizeof(err), "requested model version is not available for model '%s'", q->name);
    else
      snprintf(err, sizeof(err), "requested model '%s' is not available", q->name);
    inference__model_statistics_request__free_unpacked(q, NULL);
    stream_finish(st, TP_GRPC_NOT_FOUND, err);
    return;
  }
  inference__model_statistics_request__free_unpacked(q, NULL);

  Inference__ModelStatistics ms[TP_MOCK_SM_COUNT], *pms[TP_MOCK_SM_COUNT];
  Inference__InferStatistics is[TP_MOCK_SM_COUNT];
  Inference__InferBatchStatistics bs[TP_MOCK_SM_COUNT], *pbs[TP_MOCK_SM_COUNT];
  Inference__StatisticDuration d[TP_MOCK_SM_COUNT][11];
  size_t n = 0;
  for (int i = 0; i < TP_MOCK_SM_COUNT; i++) {
    if (which != TP_MOCK_SM_COUNT && which != i) continue;
    const tp_mock_model_stats *v = &m->stats.models[i];
    static const tp_mock_duration zero;
    Inference__StatisticDuration *dd = d[n];
    fill_duration(&dd[0], &v->success);
    fill_duration(&dd[1], &v->fail);
    fill_duration(&dd[2], &v->queue);
    fill_duration(&dd[3], &v->compute_input);
    fill_duration(&dd[4], &v->compute_infer);
    fill_duration(&dd[5], &v->compute_output);
    fill_duration(&dd[6], &zero);
    fill_duration(&dd[7], &zero);
    fill_duration(&dd[8], &v->compute_input);
    fill_duration(&dd[9], &v->compute_infer);
    fill_duration(&dd[10], &v->compute_output);
    inference__infer_statistics__init(&is[n]);
    is[n].success = &dd[0];
    is[n].fail = &dd[1];
    is[n].queue = &dd[2];
    is[n].compute_input = &dd[3];
    is[n].compute_infer = &dd[4];
    is[n].compute_output = &dd[5];
    is[n].cache_hit = &dd[6];
    is[n].cache_miss = &dd[7];
    inference__infer_batch_statistics__init(&bs[n]);
    bs[n].batch_size = 1;
    bs[n].compute_input = &dd[8];
    bs[n].compute_infer = &dd[9];
    bs[n].compute_output = &dd[10];
    pbs[n] = &bs[n];
    inference__model_statistics__init(&ms[n]);
    ms[n].name = (char *)tp_mock_stats_model_name((tp_mock_stats_model)i);
    ms[n].version = "1";
    ms[n].last_inference = v->last_inference_ms;
    ms[n].inference_count = v->inference_count;
    ms[n].execution_count = v->execution_count;
    ms[n].inference_stats = &is[n];
    /* Every execution is a batch of one (no Triton-level batching). */
    ms[n].n_batch_stats = v->execution_count ? 1 : 0;
    ms[n].batch_stats = &pbs[n];
    pms[n] = &ms[n];
    n++;
  }
  Inference__ModelStatisticsResponse r = INFERENCE__MODEL_STATISTICS_RESPONSE__INIT;
  r.n_model_stats = n;
  r.model_stats = pms;
  stream_reply(st, &r.base);
}

static int on_message(void *user_data, const uint8_t *data, size_t len, bool compressed) {
  mstream *st = user_data;
  if (st->finished) return TP_ECANCELED;
  if (compressed) {
    /* No grpc-encoding is accepted (none is advertised either). */
    stream_finish(st, TP_GRPC_UNIMPLEMENTED, "compressed messages are not supported");
    return TP_EUNSUPPORTED;
  }
  if (st->method != M_MODEL_STREAM_INFER) {
    if (st->got_message) {
      stream_finish(st, TP_GRPC_INTERNAL, "more than one request message on a unary call");
      return TP_EPROTO;
    }
    st->got_message = true;
  }
  switch (st->method) {
    case M_SERVER_LIVE: reply_bool(st, &inference__server_live_response__descriptor, true); break;
    case M_SERVER_READY: reply_bool(st, &inference__server_ready_response__descriptor, true); break;
    case M_MODEL_READY: reply_model_ready(st, data, len); break;
    case M_SERVER_METADATA: reply_server_metadata(st); break;
    case M_MODEL_METADATA: reply_model_metadata(st, data, len); break;
    case M_MODEL_INFER: start_infer(st, data, len, true); break;
    case M_MODEL_STREAM_INFER: start_infer(st, data, len, false); break;
    case M_MODEL_STATISTICS: reply_model_statistics(st, data, len); break;
    default: break;
  }
  return 0;
}

/* ---- streams ------------------------------------------------------------------------ */

static void stream_free(mstream *st) {
  conn *c = st->c;
  tp_mock *m = c->m;
  if (m->timers) tp_timer_stop(m->timers, &st->trickle_timer);
  while (st->reqs) req_free(st->reqs, TP__MOCK_CANCELLED);
  if (st->counted) c->m->active_streams--;
  if (st->prev)
    st->prev->next = st->next;
  else
    c->streams = st->next;
  if (st->next) st->next->prev = st->prev;
  tp_grpc_reader_fini(&st->reader);
  tp_buf_fini(&st->out);
  fill_blanks(m, &st->blanks, st->blanks_head, 0);
  tp_buf_fini(&st->blanks);
  free(st->message);
  free(st);
}

static void stream_begin(mstream *st) {
  tp_mock *m = st->c->m;
  conn *c = st->c;
  if (c->goaway_sent && st->id > c->goaway_last) {
    /* Above the last_stream_id the GOAWAY announced (it crossed the
     * GOAWAY): never processed, so the client may send it again on another
     * connection (RFC 9113 section 6.8). */
    st->finished = true;
    nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, st->id, NGHTTP2_REFUSED_STREAM);
    mark_dirty(c);
    return;
  }
  if (st->id > c->last_id) c->last_id = st->id;
  if (st->bad_content_type) {
    nghttp2_nv nv[1] = {{(uint8_t *)":status", (uint8_t *)"415", 7, 3, NGHTTP2_NV_FLAG_NONE}};
    st->finished = true;
    nghttp2_submit_response(st->c->h2, st->id, nv, 1, NULL);
    mark_dirty(st->c);
    return;
  }
  size_t pl = strlen(SERVICE_PREFIX);
  if (!st->path_too_long && strncmp(st->path, SERVICE_PREFIX, pl) == 0) {
    for (size_t i = 0; i < TP_ARRAY_LEN(methods); i++)
      if (strcmp(st->path + pl, methods[i].name) == 0) st->method = methods[i].m;
  }
  if (st->method == M_UNKNOWN) {
    char msg[200];
    snprintf(msg, sizeof(msg), "Method not found: %s", st->path);
    stream_finish(st, TP_GRPC_UNIMPLEMENTED, msg);
    return;
  }
  if (st->method == M_MODEL_INFER || st->method == M_MODEL_STREAM_INFER) {
    st->counted = true;
    tp__mock_raise_max(&m->max_streams, ++m->active_streams);
    /* goaway_after_streams: this stream is the last one the connection
     * takes; later ones are refused and the connection closes once the
     * streams it has are done. */
    if (++c->n_streams == m->cfg.goaway_after_streams) conn_goaway(c, st->id);
  }
  /* A streaming call's response HEADERS go out with its first request
   * message (start_infer), before any response: gRPC servers send initial
   * metadata before the first message, and waiting for the request lets a
   * trailers_only fault answer with one HEADERS block. */
}

static void stream_remote_close(mstream *st) {
  if (st->remote_closed) return;
  st->remote_closed = true;
  if (st->finished) return;
  if (tp_grpc_reader_mid_message(&st->reader)) {
    stream_finish(st, TP_GRPC_INTERNAL, "the request stream ended inside a message");
    return;
  }
  if (st->method != M_MODEL_STREAM_INFER && !st->got_message) {
    stream_finish(st, TP_GRPC_INTERNAL, "missing request message");
    return;
  }
  stream_maybe_done(st);
}

/* ---- nghttp2 callbacks ----------------------------------------------------------------- */

/* idle_close_ms: a connection with no stream in progress for that long
 * gets a GOAWAY naming the last stream it processed, then closes. */
static void on_idle_close(tp_timer *t, uint64_t now_ns) {
  (void)now_ns;
  conn *c = t->data;
  if (!c->streams) conn_goaway(c, c->last_id);
}

static void conn_arm_idle(conn *c) {
  tp_mock *m = c->m;
  if (!m->cfg.idle_close_ms || c->streams || c->goaway_sent || c->closing || c->lingering || !m->timers) return;
  tp_timer_start(m->timers, &c->idle_timer, tp_now_ns() + m->cfg.idle_close_ms * TP_NS_PER_MS);
}

static int on_begin_headers(nghttp2_session *h2, const nghttp2_frame *f, void *user_data) {
  conn *c = user_data;
  if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  if (c->m->timers) tp_timer_stop(c->m->timers, &c->idle_timer);
  mstream *st = calloc(1, sizeof(*st));
  if (!st) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
  st->c = c;
  st->id = f->hd.stream_id;
  tp_grpc_reader_init(&st->reader, MAX_MSG_BYTES);
  tp_buf_init(&st->out);
  tp_buf_init(&st->blanks);
  tp_timer_init(&st->trickle_timer, on_trickle, st);
  st->next = c->streams;
  if (c->streams) c->streams->prev = st;
  c->streams = st;
  nghttp2_session_set_stream_user_data(h2, st->id, st);
  return 0;
}

static int on_header(nghttp2_session *h2, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user_data) {
  if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
  mstream *st = nghttp2_session_get_stream_user_data(h2, f->hd.stream_id);
  if (!st) return 0;
  if (namelen == 5 && memcmp(name, ":path", 5) == 0) {
    if (valuelen >= sizeof(st->path)) {
      st->path_too_long = true;
      valuelen = sizeof(st->path) - 1;
    }
    memcpy(st->path, value, valuelen);
    st->path[valuelen] = 0;
  } else if (namelen == 12 && memcmp(name, "content-type", 12) == 0) {
    st->bad_content_type = valuelen < 16 || memcmp(value, "application/grpc", 16) != 0;
  }
  return 0;
}

static int on_frame_recv(nghttp2_session *h2, const nghttp2_frame *f, void *user_data) {
  if (f->hd.type != NGHTTP2_HEADERS && f->hd.type != NGHTTP2_DATA) return 0;
  mstream *st = nghttp2_session_get_stream_user_data(h2, f->hd.stream_id);
  if (!st) return 0;
  if (f->hd.type == NGHTTP2_HEADERS && f->headers.cat == NGHTTP2_HCAT_REQUEST) {
    /* Stats: the inference stream counts from its request HEADERS. */
    stream_begin(st);
  }
  if (f->hd.flags & NGHTTP2_FLAG_END_STREAM) stream_remote_close(st);
  return 0;
}

static int on_data_chunk(nghttp2_session *h2, uint8_t flags, int32_t sid, const uint8_t *data, size_t len,
                         void *user_data) {
  mstream *st = nghttp2_session_get_stream_user_data(h2, sid);
  if (!st || st->finished) return 0;
  int rv = tp_grpc_reader_feed(&st->reader, data, len, on_message, st);
  if (rv == TP_ETOOBIG)
    stream_finish(st, TP_GRPC_RESOURCE_EXHAUSTED, "received message larger than max (64 MiB)");
  else if (rv == TP_ENOMEM)
    stream_finish(st, TP_GRPC_RESOURCE_EXHAUSTED, "out of memory");
  return 0;
}

/* A call that ends before the client half-closed is followed by
 * RST_STREAM(NO_ERROR) so both sides can free it (PROTOCOL-HTTP2.md). */
static int on_frame_send(nghttp2_session *h2, const nghttp2_frame *f, void *user_data) {
  if (f->hd.type != NGHTTP2_HEADERS || !(f->hd.flags & NGHTTP2_FLAG_END_STREAM)) return 0;
  mstream *st = nghttp2_session_get_stream_user_data(h2, f->hd.stream_id);
  if (st && !st->remote_closed)
    nghttp2_submit_rst_stream(h2, NGHTTP2_FLAG_NONE, f->hd.stream_id, NGHTTP2_NO_ERROR);
  return 0;
}

/* Every way a stream ends (completion or the client's RST_STREAM) comes
 * here; requests still running on it are cancelled and free their batch
 * slots. */
static int on_stream_close(nghttp2_session *h2, int32_t sid, uint32_t error_code, void *user_data) {
  conn *c = user_data;
  mstream *st = nghttp2_session_get_stream_user_data(h2, sid);
  if (!st) return 0;
  nghttp2_session_set_stream_user_data(h2, sid, NULL);
  stream_free(st);
  /* close_after_stream: one finished stream ends the connection, as a
   * server with a limit on streams per connection does; the streams
   * already taken still finish. */
  if (c->m->cfg.close_after_stream) conn_goaway(c, c->last_id);
  conn_arm_idle(c);
  return 0;
}

/* ---- connections --------------------------------------------------------------------- */

static void on_conn_closed(uv_handle_t *h) {
  free(h->data);
}

/* Everything but the socket handle is released at once, so nothing refers
 * to the connection's streams or requests once this returns; the struct
 * itself goes in the close callback, after libuv cancelled pending writes. */
static void conn_close(conn *c) {
  if (c->closing) return;
  tp_mock *m = c->m;
  c->closing = true;
  if (c->dirty) {
    conn **pp = &m->dirty;
    while (*pp && *pp != c) pp = &(*pp)->dirty_next;
    if (*pp) *pp = c->dirty_next;
    c->dirty = false;
  }
  if (m->timers) {
    tp_timer_stop(m->timers, &c->idle_timer);
    tp_timer_stop(m->timers, &c->linger_timer);
  }
  while (c->streams) {
    nghttp2_session_set_stream_user_data(c->h2, c->streams->id, NULL);
    stream_free(c->streams);
  }
  fill_blanks(m, &c->chunk_blanks, 0, 0);
  tp_buf_fini(&c->chunk_blanks);
  nghttp2_session_del(c->h2);
  c->h2 = NULL;
  if (c->prev)
    c->prev->next = c->next;
  else
    m->conns = c->next;
  if (c->next) c->next->prev = c->prev;
  uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
}

uint64_t tp__mock_read_stamp(tp_mock *m, uv_tcp_t *tcp, size_t *read_len) {
  uv_os_fd_t fd;
  *read_len = sizeof(m->readbuf);
  return uv_fileno((uv_handle_t *)tcp, &fd) == 0 ? tp_stamp_fd_group(&m->loop, fd, sizeof(m->readbuf), read_len)
                                                 : tp_stamp_now(&m->loop);
}

static void on_alloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  conn *c = h->data;
  (void)suggested;
  /* A read stops where bytes that arrived later begin; libuv reads on at
   * once when a read fills the buffer. */
  size_t n;
  c->m->read_stamp_ns = tp__mock_read_stamp(c->m, &c->tcp, &n);
  *buf = uv_buf_init((char *)c->m->readbuf, (unsigned)n);
}

static void on_read(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  conn *c = s->data;
  if (c->closing) return;
  if (nread < 0) {
    conn_close(c);
    return;
  }
  if (nread == 0 || c->lingering) return; /* nothing more is processed */
  c->m->arrival_ns = c->m->read_stamp_ns;
  ssize_t rv = nghttp2_session_mem_recv(c->h2, (const uint8_t *)buf->base, (size_t)nread);
  c->m->arrival_ns = 0;
  if (rv < 0) {
    /* A bad preface or a fatal protocol error: nghttp2 may have queued a
     * GOAWAY; try to send it, then the flush closes the connection. */
    conn_flush(c);
    conn_close(c);
    return;
  }
  mark_dirty(c);
}

bool tp__mock_accept(tp_mock *m, uv_stream_t *server, uv_tcp_t *tcp, uv_close_cb on_closed) {
  uv_tcp_init(&m->loop, tcp);
  if (uv_accept(server, (uv_stream_t *)tcp) != 0) {
    uv_close((uv_handle_t *)tcp, on_closed);
    return false;
  }
  tp__mock_count(&m->n_connections, 1);
  if (m->refused_so_far < m->cfg.refuse_connections) {
    /* refuse_connections: accepted, then reset (RST): the client's connect
     * succeeded and its first read fails with ECONNRESET. */
    m->refused_so_far++;
    tp__mock_count(&m->n_refused, 1);
    if (uv_tcp_close_reset(tcp, on_closed) != 0) uv_close((uv_handle_t *)tcp, on_closed);
    return false;
  }
  uv_tcp_nodelay(tcp, 1);
  uv_os_fd_t fd;
  if (uv_fileno((uv_handle_t *)tcp, &fd) == 0) (void)tp_stamp_enable_fd(fd);
  return true;
}

static void on_connection(uv_stream_t *server, int status) {
  tp_mock *m = server->data;
  if (status < 0 || m->stopping) return;
  conn *c = calloc(1, sizeof(*c));
  if (!c) return;
  c->m = m;
  c->tcp.data = c;
  tp_timer_init(&c->idle_timer, on_idle_close, c);
  tp_timer_init(&c->linger_timer, on_linger_over, c);
  if (!tp__mock_accept(m, server, &c->tcp, on_conn_closed)) return;
  nghttp2_session *h2;
  if (nghttp2_session_server_new(&h2, m->cbs, c) != 0) {
    uv_close((uv_handle_t *)&c->tcp, on_conn_closed);
    return;
  }
  c->h2 = h2;
  nghttp2_settings_entry iv[2] = {
      {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, MAX_CONCURRENT_STREAMS},
      {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, STREAM_WINDOW_BYTES},
  };
  nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, 2);
  /* SETTINGS only changes stream windows; the connection window grows by
   * WINDOW_UPDATE on stream 0, which this sends. */
  nghttp2_session_set_local_window_size(c->h2, NGHTTP2_FLAG_NONE, 0, CONN_WINDOW_BYTES);
  c->next = m->conns;
  if (m->conns) m->conns->prev = c;
  m->conns = c;
  if (uv_read_start((uv_stream_t *)&c->tcp, on_alloc, on_read) != 0) {
    conn_close(c);
    return;
  }
  conn_arm_idle(c);
  mark_dirty(c);
}

/* ---- lifecycle ----------------------------------------------------------------------- */

static void shutdown_loop(tp_mock *m) {
  tp_stamp_uninstall(&m->loop);
  if (m->stopping) return;
  m->stopping = true;
  uv_close((uv_handle_t *)&m->listener, NULL);
  uv_close((uv_handle_t *)&m->listen_timer, NULL);
  while (m->conns) conn_close(m->conns);
  tp__mock_http_shutdown(m);
  uv_close((uv_handle_t *)&m->check, NULL);
  uv_close((uv_handle_t *)&m->idle, NULL);
  uv_close((uv_handle_t *)&m->stop_async, NULL);
  if (m->have_signals) {
    uv_close((uv_handle_t *)&m->sigint, NULL);
    uv_close((uv_handle_t *)&m->sigterm, NULL);
  }
  /* Last: closing connections above cancels requests, which stops their
   * timers and may admit (and arm) queued ones. */
  tp_timers_close(m->timers);
  m->timers = NULL;
}

static void on_stop_async(uv_async_t *a) {
  shutdown_loop(a->data);
}

static void on_signal(uv_signal_t *s, int signum) {
  shutdown_loop(s->data);
}

static void mock_free(tp_mock *m) {
  if (!m) return;
  if (m->engine) tp_mock_engine_free(m->engine);
  if (m->cbs) nghttp2_session_callbacks_del(m->cbs);
  if (m->log) {
    log_flush(m, true);
    fclose(m->log);
  }
  tp_buf_fini(&m->logbuf);
  tp_buf_fini(&m->scratch);
  free(m->host);
  free(m->log_path);
  free(m->fault_spec);
  free(m);
}

/* Runs the loop until every handle closed, then closes it. */
static void run_loop(tp_mock *m) {
  uv_run(&m->loop, UV_RUN_DEFAULT);
  /* uv_run returns once every handle has closed, so this cannot fail
   * unless a handle leaked. */
  uv_loop_close(&m->loop);
}

static void host_port(char *out, size_t n, const char *host, int port) {
  if (strchr(host, ':'))
    snprintf(out, n, "[%s]:%d", host, port);
  else
    snprintf(out, n, "%s:%d", host, port);
}

static int bound_port(uv_tcp_t *t) {
  struct sockaddr_storage ss;
  int sl = sizeof(ss);
  if (uv_tcp_getsockname(t, (struct sockaddr *)&ss, &sl) != 0) return 0;
  return ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                  : ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

/* Binds the gRPC listener (and the HTTP one) without listening yet, so the
 * ports are known and taken even while refuse_connections_ms holds off
 * listening: a bound socket that does not listen answers connects with a
 * reset (ECONNREFUSED). */
static int bind_all(tp_mock *m, char *err, size_t errlen) {
  char hp[300];
  host_port(hp, sizeof(hp), m->host, m->cfg.grpc_port);
  if (m->cfg.grpc_port < 0 || m->cfg.grpc_port > 65535) {
    tp_seterr(err, errlen, "tokperf mock: invalid port %d (use 0..65535, 0 = any free port)",
              m->cfg.grpc_port);
    return TP_EINVAL;
  }
  struct addrinfo hints;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  uv_getaddrinfo_t gai;
  /* Without a callback uv_getaddrinfo resolves synchronously. */
  int rv = uv_getaddrinfo(&m->loop, &gai, NULL, m->host, "0", &hints);
  if (rv != 0) {
    tp_seterr(err, errlen, "tokperf mock: cannot listen on %s: %s (check the host name)", hp,
              uv_strerror(rv));
    return TP_ECONNECT;
  }
  struct sockaddr_storage addr;
  memset(&addr, 0, sizeof(addr));
  memcpy(&addr, gai.addrinfo->ai_addr, TP_MIN((size_t)gai.addrinfo->ai_addrlen, sizeof(addr)));
  uv_freeaddrinfo(gai.addrinfo);
  if (addr.ss_family == AF_INET6)
    ((struct sockaddr_in6 *)&addr)->sin6_port = htons((uint16_t)m->cfg.grpc_port);
  else
    ((struct sockaddr_in *)&addr)->sin_port = htons((uint16_t)m->cfg.grpc_port);
  rv = uv_tcp_bind(&m->listener, (const struct sockaddr *)&addr, 0);
  /* libuv keeps EADDRINUSE for listen() to report; an unbound socket shows
   * port 0, which tells it now. */
  if (rv == 0) m->port = bound_port(&m->listener);
  if (rv == 0 && (m->port == 0 || (m->cfg.grpc_port && m->port != m->cfg.grpc_port))) rv = UV_EADDRINUSE;
  if (rv != 0) {
    tp_seterr(err, errlen,
              "tokperf mock: cannot listen on %s: %s (is another server using the port? "
              "choose another port, or 0 for any free one)",
              hp, uv_strerror(rv));
    return TP_ECONNECT;
  }
  if (m->http_port >= 0) return tp__mock_http_bind(m, (const struct sockaddr *)&addr, err, errlen);
  return 0;
}

static int start_listening(tp_mock *m, char *err, size_t errlen) {
  if (m->listening || m->stopping) return 0;
  m->listening = true;
  int rv = uv_listen((uv_stream_t *)&m->listener, 1024, on_connection);
  if (rv == 0 && m->http_on) rv = tp__mock_http_start_listening(m);
  if (rv != 0) {
    char hp[300];
    host_port(hp, sizeof(hp), m->host, m->port);
    tp_seterr(err, errlen, "tokperf mock: cannot listen on %s: %s", hp, uv_strerror(rv));
    return TP_ECONNECT;
  }
  return 0;
}

static void on_listen_timer(uv_timer_t *t) {
  tp_mock *m = t->data;
  char err[400];
  if (start_listening(m, err, sizeof(err)) != 0 && !m->cfg.quiet) fprintf(stderr, "%s\n", err);
}

/* Builds everything up to a listening socket.  On failure the loop is
 * closed again and m freed. */
static int mock_setup(tp_mock **out, const tp_mock_config *cfg, char *err, size_t errlen) {
  *out = NULL;
  tp_mock *m = calloc(1, sizeof(*m));
  if (!m) return TP_ENOMEM;
  m->cfg = *cfg;
  m->host = strdup(cfg->host ? cfg->host : "127.0.0.1");
  m->log_path = cfg->log_path ? strdup(cfg->log_path) : NULL;
  m->fault_spec = cfg->fault_kind ? strdup(cfg->fault_kind) : NULL;
  m->cfg.host = m->host;
  m->cfg.log_path = m->log_path;
  m->cfg.fault_kind = m->fault_spec;
  m->http_port = cfg->http_port == TP_MOCK_HTTP_PORT_AUTO ? (cfg->grpc_port == 0 ? 0 : 8000) : cfg->http_port;
  m->start_ns = tp_now_ns();
  tp_mock_statset_init(&m->stats);
  tp_buf_init(&m->scratch);
  tp_buf_init(&m->logbuf);
  if (!m->host || (cfg->log_path && !m->log_path) || (cfg->fault_kind && !m->fault_spec)) {
    mock_free(m);
    return TP_ENOMEM;
  }
  if (m->fault_spec) {
    char ferr[400];
    if (tp_mock_fault_parse(m->fault_spec, strlen(m->fault_spec), &m->fault, ferr, sizeof(ferr)) != 0) {
      tp_seterr(err, errlen, "tokperf mock: fault_kind '%s': %s", m->fault_spec, ferr);
      mock_free(m);
      return TP_EINVAL;
    }
  }
  if (!(cfg->fault_rate >= 0 && cfg->fault_rate <= 1)) {
    tp_seterr(err, errlen, "tokperf mock: fault_rate %g is outside 0..1", cfg->fault_rate);
    mock_free(m);
    return TP_EINVAL;
  }
  if (m->http_port < -1 || m->http_port > 65535) {
    tp_seterr(err, errlen, "tokperf mock: invalid HTTP port %d (use 0..65535, 0 = any free port, -1 = no HTTP)",
              cfg->http_port);
    mock_free(m);
    return TP_EINVAL;
  }
  int rv = tp__mock_http_check_config(m, err, errlen);
  if (rv) {
    mock_free(m);
    return rv;
  }
  rv = tp_mock_engine_new(&m->engine, &m->cfg, on_admit, m);
  if (rv) {
    tp_seterr(err, errlen,
              "tokperf mock: invalid timing model (times must be finite and >= 0, "
              "eos_prob within 0..1, prefix cache block words and blocks > 0)");
    mock_free(m);
    return rv;
  }
  if (m->log_path) {
    m->log = fopen(m->log_path, "w");
    if (!m->log) {
      tp_seterr(err, errlen, "tokperf mock: cannot open the log '%s': %s", m->log_path, strerror(errno));
      mock_free(m);
      return TP_EIO;
    }
  }
  nghttp2_session_callbacks *cbs;
  if (nghttp2_session_callbacks_new(&cbs) != 0) {
    mock_free(m);
    return TP_ENOMEM;
  }
  m->cbs = cbs;
  nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
  nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
  nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
  nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);

  if (uv_loop_init(&m->loop) != 0 || tp_stamp_install(&m->loop) != 0) {
    mock_free(m);
    return TP_ENOMEM;
  }
  rv = tp_timers_new(&m->timers, &m->loop);
  if (rv) {
    tp_seterr(err, errlen, "tokperf mock: cannot create a timerfd: %s", strerror(errno));
    run_loop(m);
    mock_free(m);
    return rv;
  }
  uv_check_init(&m->loop, &m->check);
  m->check.data = m;
  uv_check_start(&m->check, on_check);
  uv_idle_init(&m->loop, &m->idle);
  m->idle.data = m;
  uv_async_init(&m->loop, &m->stop_async, on_stop_async);
  m->stop_async.data = m;
  uv_timer_init(&m->loop, &m->listen_timer);
  m->listen_timer.data = m;
  uv_tcp_init(&m->loop, &m->listener);
  m->listener.data = m;
  rv = bind_all(m, err, errlen);
  if (!rv) {
    if (m->cfg.refuse_connections_ms > 0)
      uv_timer_start(&m->listen_timer, on_listen_timer, m->cfg.refuse_connections_ms, 0);
    else
      rv = start_listening(m, err, errlen);
  }
  if (rv) {
    shutdown_loop(m);
    run_loop(m);
    mock_free(m);
    return rv;
  }
  *out = m;
  return 0;
}

void tp_mock_config_default(tp_mock_config *cfg) {
  memset(cfg, 0, sizeof(*cfg));
  cfg->host = "127.0.0.1";
  cfg->grpc_port = 8001;
  cfg->ttft_ms = 20;
  cfg->prefill_us_per_token = 20;
  cfg->prefill_queue_ms = 2;
  cfg->itl_ms = 8;
  cfg->itl_us_per_seq = 20;
  cfg->max_batch = 256;
  cfg->output_tokens = 0;
  cfg->eos_prob = 0;
  cfg->seed = 0;
  cfg->log_path = NULL;
  cfg->quiet = false;
  cfg->http_port = TP_MOCK_HTTP_PORT_AUTO;
  cfg->http_dialect = "vllm";
  cfg->sse_keepalive_ms = -1;
  cfg->fault_kind = NULL;
  cfg->fault_rate = 1.0;
  cfg->fault_after_tokens = 0;
  cfg->refuse_connections = 0;
  cfg->refuse_connections_ms = 0;
  cfg->goaway_after_streams = 0;
  cfg->prefix_cache = false;
  cfg->prefix_cache_block_words = 16;
  cfg->prefix_cache_blocks = 8192;
}

/* A client that goes away while the mock writes to it makes write() raise
 * SIGPIPE, which by default kills the whole process.  The signal is sent to
 * the thread that wrote, so blocking it in the loop's thread turns it into
 * a plain EPIPE without changing the process's signal dispositions. */
static void block_sigpipe(sigset_t *old) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &s, old);
}

/* Drops a SIGPIPE left pending by a blocked write, then restores the mask
 * (unblocking a pending SIGPIPE would deliver it). */
static void unblock_sigpipe(const sigset_t *old) {
  sigset_t s, pending;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  struct timespec zero = {0, 0};
  while (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) && !sigismember(old, SIGPIPE))
    if (sigtimedwait(&s, NULL, &zero) < 0) break;
  pthread_sigmask(SIG_SETMASK, old, NULL);
}

static void thread_main(void *arg) {
  sigset_t old;
  block_sigpipe(&old);
  run_loop(arg);
}

int tp_mock_start(tp_mock **out, const tp_mock_config *cfg, char *err, size_t errlen) {
  *out = NULL;
  tp_mock *m;
  int rv = mock_setup(&m, cfg, err, errlen);
  if (rv) return rv;
  m->threaded = true;
  /* Everything was set up on this thread before the loop thread exists;
   * from here on only the loop thread touches the loop. */
  if (uv_thread_create(&m->thread, thread_main, m) != 0) {
    tp_seterr(err, errlen, "tokperf mock: cannot start the server thread");
    shutdown_loop(m);
    run_loop(m);
    mock_free(m);
    return TP_ENOMEM;
  }
  *out = m;
  return 0;
}

int tp_mock_port(const tp_mock *m) {
  return m ? m->port : -1;
}

int tp_mock_http_port(const tp_mock *m) {
  return m && m->http_on ? m->http_port : -1;
}

void tp_mock_get_stats(tp_mock *m, tp_mock_stats *out) {
  memset(out, 0, sizeof(*out));
  if (!m) return;
  out->requests = atomic_load_explicit(&m->n_requests, memory_order_relaxed);
  out->responses = atomic_load_explicit(&m->n_responses, memory_order_relaxed);
  out->max_active_streams = atomic_load_explicit(&m->max_streams, memory_order_relaxed);
  out->max_active_sequences = atomic_load_explicit(&m->max_seqs, memory_order_relaxed);
  out->faults_injected = atomic_load_explicit(&m->n_faults, memory_order_relaxed);
  out->connections = atomic_load_explicit(&m->n_connections, memory_order_relaxed);
  out->connections_refused = atomic_load_explicit(&m->n_refused, memory_order_relaxed);
  out->http_requests = atomic_load_explicit(&m->n_http_requests, memory_order_relaxed);
  out->prefix_cache_queries_tokens = atomic_load_explicit(&m->n_prefix_queries_tokens, memory_order_relaxed);
  out->prefix_cache_hits_tokens = atomic_load_explicit(&m->n_prefix_hits_tokens, memory_order_relaxed);
}

void tp_mock_stop(tp_mock *m) {
  if (!m) return;
  if (m->threaded) {
    uv_async_send(&m->stop_async);
    uv_thread_join(&m->thread);
  }
  mock_free(m);
}

int tp_mock_run(const tp_mock_config *cfg, char *err, size_t errlen) {
  tp_mock *m;
  int rv = mock_setup(&m, cfg, err, errlen);
  if (rv) return rv;
  uv_signal_init(&m->loop, &m->sigint);
  uv_signal_init(&m->loop, &m->sigterm);
  m->sigint.data = m->sigterm.data = m;
  m->have_signals = true;
  uv_signal_start(&m->sigint, on_signal, SIGINT);
  uv_signal_start(&m->sigterm, on_signal, SIGTERM);
  if (!m->cfg.quiet) {
    char hp[300], hh[300];
    host_port(hp, sizeof(hp), m->host, m->port);
    if (m->http_on) {
      host_port(hh, sizeof(hh), m->host, m->http_port);
      fprintf(stderr, "tokperf mock: listening on %s (gRPC) and %s (HTTP, %s dialect) (models: ensemble, vllm_model)\n",
              hp, hh, m->cfg.http_dialect ? m->cfg.http_dialect : "vllm");
    } else {
      fprintf(stderr, "tokperf mock: listening on %s (models: ensemble, vllm_model)\n", hp);
    }
  }
  sigset_t old;
  block_sigpipe(&old);
  run_loop(m);
  unblock_sigpipe(&old);
  mock_free(m);
  return 0;
}

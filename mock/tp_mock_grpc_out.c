/* The gRPC side's output.
 *
 * Every gRPC stream has a queue of framed messages; an nghttp2 data
 * provider serves it (NGHTTP2_ERR_DEFERRED when empty, resumed when a
 * message arrives) and ends it with trailers.  Connections whose session
 * has something to send are put on a dirty list that a uv_check handle
 * flushes once per loop iteration, so tokens due in the same wake-up leave
 * in one write per connection. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>
#include <uv.h>

#include "grpc_service.pb-c.h"
#include "mock/tp_mock_engine.h"
#include "mock/tp_mock_grpc.h"
#include "mock/tp_mock_internal.h"
#include "transport/tp_grpc.h"
#include "util/tp_common.h"
#include "util/tp_timer.h"

#define WRITE_CHUNK_BYTES (256u << 10)    /* one uv_write gathers up to this */
#define WRITE_HIGH_WATER_BYTES (4u << 20) /* stop pulling from nghttp2 above */
/* A connection the mock closes (GOAWAY, then its half-close) waits this
 * long for the client to close its side before it is dropped. */
#define LINGER_NS (2000ull * 1000000ull)

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
void tp__mock_fill_blanks(tp_mock *m, tp_buf *buf, size_t from, uint64_t t_ns) {
  size_t n = buf->len / sizeof(blank_time);
  for (size_t i = from; i < n; i++) {
    blank_time b;
    memcpy(&b, buf->data + i * sizeof(b), sizeof(b));
    tp__mock_log_fill(m, b.off, t_ns ? t_ns : b.queued_ns);
  }
  tp_buf_reset(buf);
}

static void put_le32(uint8_t *p, uint32_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
  p[2] = (uint8_t)(v >> 16);
  p[3] = (uint8_t)(v >> 24);
}

/* ---- connection output ------------------------------------------------------ */

void tp__mock_conn_dirty(conn *c) {
  if (c->dirty || c->closing || c->lingering) return;
  tp_mock *m = c->m;
  c->dirty = true;
  c->dirty_next = m->dirty;
  m->dirty = c;
  tp__mock_want_flush(m);
}

void tp__mock_grpc_flush(tp_mock *m) {
  while (m->dirty) {
    conn *c = m->dirty;
    m->dirty = c->dirty_next;
    c->dirty = false;
    c->dirty_next = NULL;
    tp__mock_conn_flush(c);
  }
}

static void on_write(void *data, size_t len, int status) {
  conn *c = data;
  c->write_bytes -= len;
  if (c->closing) return;
  if (status < 0) {
    tp__mock_conn_close(c);
    return;
  }
  tp__mock_conn_dirty(c);
}

static void on_shutdown(uv_shutdown_t *req, int status) {
  (void)req;
  (void)status;
}

void tp__mock_on_linger_over(tp_timer *t, uint64_t now_ns) {
  (void)now_ns;
  tp__mock_conn_close(t->data);
}

/* The session is over (GOAWAY sent, its streams done): half-close and let
 * the client close first.  Closing at once would make the kernel answer
 * bytes the client sent meanwhile (a request crossing the GOAWAY) with a
 * reset, which can reach the client before it has read the GOAWAY. */
static void conn_linger(conn *c) {
  if (c->lingering || c->closing) return;
  c->lingering = true;
  if (uv_shutdown(&c->shutdown_req, (uv_stream_t *)&c->tcp, on_shutdown) != 0 || !c->m->timers) {
    tp__mock_conn_close(c);
    return;
  }
  tp_timer_start(c->m->timers, &c->linger_timer, tp_now_ns() + LINGER_NS);
}

/* GOAWAY naming `last` as the last stream this connection processes: later
 * streams are refused (stream_begin) and the connection closes once the
 * streams up to `last` are done. */
void tp__mock_conn_goaway(conn *c, int32_t last) {
  if (c->goaway_sent || c->closing || c->lingering) return;
  c->goaway_sent = true;
  c->goaway_last = last;
  nghttp2_submit_goaway(c->h2, NGHTTP2_FLAG_NONE, last, NGHTTP2_NO_ERROR, NULL, 0);
  tp__mock_conn_dirty(c);
}

void tp__mock_conn_flush(conn *c) {
  if (c->lingering) return;
  while (!c->closing && c->write_bytes < WRITE_HIGH_WATER_BYTES) {
    tp_buf b;
    tp_buf_init(&b);
    while (b.len < WRITE_CHUNK_BYTES) {
      const uint8_t *p;
      ssize_t n = nghttp2_session_mem_send(c->h2, &p);
      if (n < 0) {
        tp_buf_fini(&b);
        tp__mock_conn_close(c);
        return;
      }
      if (n == 0) break;
      if (tp_buf_append(&b, p, (size_t)n)) {
        tp_buf_fini(&b);
        tp__mock_conn_close(c);
        return;
      }
    }
    if (b.len == 0) {
      tp_buf_fini(&b);
      break;
    }
    size_t len;
    char *data = tp_buf_steal(&b, &len);
    if (c->chunk_blanks.len) tp__mock_fill_blanks(c->m, &c->chunk_blanks, 0, tp_now_ns());
    if (tp__mock_write(&c->tcp, data, len, c, on_write) != 0) {
      tp__mock_conn_close(c);
      return;
    }
    c->write_bytes += len;
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
  tp__mock_conn_dirty(st->c);
}

void tp__mock_on_trickle(tp_timer *t, uint64_t now_ns) {
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
    /* One byte per DATA frame, TP__MOCK_TRICKLE_NS apart. */
    if (!st->trickle_ready) {
      tp_mock *m = st->c->m;
      if (!tp_timer_active(&st->trickle_timer))
        tp_timer_start(m->timers, &st->trickle_timer, tp_now_ns() + TP__MOCK_TRICKLE_NS);
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

int tp__mock_stream_start_response(mstream *st) {
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
  tp__mock_conn_dirty(st->c);
  return 0;
}

/* Packs msg with its gRPC prefix at the end of the stream's queue. */
int tp__mock_stream_queue_msg(mstream *st, const ProtobufCMessage *msg) {
  size_t n = protobuf_c_message_get_packed_size(msg);
  if (n > UINT32_MAX) return TP_ETOOBIG;
  int rv = tp_buf_reserve(&st->out, TP_GRPC_PREFIX_BYTES + n);
  if (rv) return rv;
  uint8_t *p = st->out.data + st->out.len;
  tp_grpc_put_prefix(p, (uint32_t)n);
  protobuf_c_message_pack(msg, p + TP_GRPC_PREFIX_BYTES);
  st->out.len += TP_GRPC_PREFIX_BYTES + n;
  st->queued_total += TP_GRPC_PREFIX_BYTES + n;
  rv = tp__mock_stream_start_response(st);
  if (rv) return rv;
  stream_resume(st);
  return 0;
}

/* Queues bytes as they are (fault injection: broken framing). */
int tp__mock_stream_queue_raw(mstream *st, const void *p, size_t n) {
  int rv = tp_buf_append(&st->out, p, n);
  if (rv) return rv;
  st->queued_total += n;
  rv = tp__mock_stream_start_response(st);
  if (rv) return rv;
  stream_resume(st);
  return 0;
}

/* Decides the stream's final status.  Requests still running on it are
 * cancelled.  Before any response HEADERS this is a Trailers-Only answer;
 * afterwards the trailers follow the queued messages. */
void tp__mock_stream_finish(mstream *st, int status, const char *message) {
  if (st->finished) return;
  st->finished = true;
  /* The message may live in a request freed below (a fault's text). */
  free(st->message);
  st->message = message && *message ? strdup(message) : NULL;
  while (st->reqs) tp__mock_req_free(st->reqs, status == TP_GRPC_OK ? TP__MOCK_CANCELLED : TP__MOCK_FAILED);
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
  tp__mock_conn_dirty(st->c);
}

/* A unary answer: the message, then grpc-status 0. */
void tp__mock_stream_reply(mstream *st, const ProtobufCMessage *msg) {
  if (st->finished) return;
  if (tp__mock_stream_queue_msg(st, msg) != 0) {
    tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "cannot queue the response");
    return;
  }
  tp__mock_stream_finish(st, TP_GRPC_OK, NULL);
}

/* ModelStreamInfer ends once the client half-closed and every request on it
 * has completed (Triton keeps the stream open until then). */
void tp__mock_stream_maybe_done(mstream *st) {
  if (st->finished || st->reqs) return;
  if (st->method == M_MODEL_STREAM_INFER && st->remote_closed) tp__mock_stream_finish(st, TP_GRPC_OK, NULL);
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
int tp__mock_queue_response(mreq *r, const char *text, size_t len, bool with_outputs, bool final,
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
    rv = tp__mock_stream_queue_msg(st, &resp.base);
  } else {
    resp.n_parameters = 1;
    resp.parameters = pes;
    Inference__ModelStreamInferResponse w = INFERENCE__MODEL_STREAM_INFER_RESPONSE__INIT;
    w.infer_response = &resp;
    rv = tp__mock_stream_queue_msg(st, &w.base);
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
void tp__mock_queue_stream_error(mstream *st, const char *id, const char *msg) {
  Inference__ModelInferResponse resp = INFERENCE__MODEL_INFER_RESPONSE__INIT;
  resp.id = (char *)id;
  Inference__ModelStreamInferResponse w = INFERENCE__MODEL_STREAM_INFER_RESPONSE__INIT;
  w.error_message = (char *)msg;
  w.infer_response = &resp;
  if (tp__mock_stream_queue_msg(st, &w.base) != 0) {
    tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "cannot queue the response");
    return;
  }
  tp__mock_log_error(st->c->m, id, msg, tp_now_ns());
}

/* A backend error (the inband_error fault): error_message, and an
 * infer_response with id, model name and version and triton_final_response
 * true, as the vLLM and TensorRT-LLM backends send it. */
int tp__mock_queue_backend_error(mreq *r, const char *msg) {
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
  int rv = tp__mock_stream_queue_msg(r->st, &w.base);
  if (!rv) tp__mock_log_error(r->st->c->m, r->job.id, msg, tp_now_ns());
  return rv;
}

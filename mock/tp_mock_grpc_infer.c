/* The gRPC side's inference requests: started from a ModelInferRequest,
 * answered token by token as the timing model says, or cut short by their
 * fault. */
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
#include "mock/tp_mock_infer_parse.h"

/* ---- requests ------------------------------------------------------------------ */

void tp__mock_req_free(mreq *r, tp__mock_outcome how) {
  mstream *st = r->st;
  tp_mock *m = st->c->m;
  tp__mock_job_end(m, &r->job, how, tp_now_ns());
  if (r->prev)
    r->prev->next = r->next;
  else
    st->reqs = r->next;
  if (r->next) r->next->prev = r->prev;
  tp_buf_fini(&r->text);
  tp_buf_fini(&r->ids);
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
  tp__mock_req_free(r, how);
  if (unary)
    tp__mock_stream_finish(st, TP_GRPC_OK, NULL);
  else
    tp__mock_stream_maybe_done(st);
}

/* The malformed fault: a framed message whose protobuf is cut short:
 * infer_response (field 2) announces 127 bytes and six follow. */
static void fire_malformed(mreq *r, uint64_t now_ns) {
  static const uint8_t garbage[] = {0x00, 0x00, 0x00, 0x00, 0x08, 0x12, 0x7f,
                                    0x0a, 0x02, 'h',  'i',  0xff, 0xff};
  mstream *st = r->st;
  tp_mock *m = st->c->m;
  tp__mock_job_end(m, &r->job, TP__MOCK_FAILED, now_ns);
  if (tp__mock_stream_queue_raw(st, garbage, sizeof(garbage)) != 0) {
    tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "cannot queue the response");
    return;
  }
  tp__mock_count(&m->n_responses, 1);
  req_done(r, TP__MOCK_FAILED);
}

/* The oversize fault: a message of size_bytes (zeros, which are not
 * protobuf either): a client with a smaller limit refuses it, from its
 * prefix or once it is in.  The request then goes silent; the stream is of
 * no more use, since its framing now holds the whole body. */
static void fire_oversize(mreq *r, const tp_mock_fault *f, uint64_t now_ns) {
  mstream *st = r->st;
  uint8_t prefix[TP_GRPC_PREFIX_BYTES];
  tp_grpc_put_prefix(prefix, f->size_bytes);
  if (tp__mock_stream_queue_raw(st, prefix, sizeof(prefix)) != 0) {
    tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "cannot queue the response");
    return;
  }
  st->zeros_left = f->size_bytes;
  tp__mock_count(&st->c->m->n_responses, 1);
  req_stall(r, now_ns);
}

/* The goaway fault.  A request that got nothing yet is declared
 * unprocessed (its stream id above last-stream-id: the client may retry it
 * elsewhere). */
static void fire_goaway(mreq *r, const tp_mock_fault *f, uint64_t now_ns) {
  mstream *st = r->st;
  conn *c = st->c;
  int32_t last = r->job.responses ? st->id : TP_MAX(st->id - 2, 0);
  tp__mock_job_end(c->m, &r->job, TP__MOCK_FAILED, now_ns);
  st->finished = true;
  c->goaway_sent = true;
  c->goaway_last = last;
  nghttp2_session_terminate_session2(c->h2, last, (uint32_t)f->code);
  tp__mock_conn_dirty(c);
}

/* Carries out r's fault, which is due now (in place of token number
 * after_tokens).  May free r, its stream and its connection. */
void tp__mock_req_fire_fault(mreq *r, uint64_t now_ns) {
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
      tp__mock_conn_dirty(c);
      return;
    case TP_MOCK_FAULT_GRPC_STATUS:
    case TP_MOCK_FAULT_HTTP_STATUS:
      /* HEADERS first, then the status in trailers. */
      tp__mock_job_end(m, &r->job, TP__MOCK_FAILED, now_ns);
      if (tp__mock_stream_start_response(st) != 0) {
        tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "cannot start the response");
        return;
      }
      tp__mock_stream_finish(st, tp_mock_fault_grpc_status(f), msg);
      return;
    case TP_MOCK_FAULT_TRAILERS_ONLY:
      /* One HEADERS block when nothing was sent yet, else trailers. */
      tp__mock_job_end(m, &r->job, TP__MOCK_FAILED, now_ns);
      tp__mock_stream_finish(st, tp_mock_fault_grpc_status(f), msg);
      return;
    case TP_MOCK_FAULT_INBAND_ERROR:
      tp__mock_job_end(m, &r->job, TP__MOCK_FAILED, now_ns);
      if (r->engine) {
        tp__mock_engine_inband_error(r, msg);
        return;
      }
      if (r->unary) {
        tp__mock_stream_finish(st, TP_GRPC_INTERNAL, msg);
        return;
      }
      if (tp__mock_queue_backend_error(r, msg) != 0) {
        tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "cannot queue the response");
        return;
      }
      req_done(r, TP__MOCK_FAILED);
      return;
    case TP_MOCK_FAULT_STALL: req_stall(r, now_ns); return;
    case TP_MOCK_FAULT_MALFORMED: fire_malformed(r, now_ns); return;
    case TP_MOCK_FAULT_OVERSIZE: fire_oversize(r, f, now_ns); return;
    case TP_MOCK_FAULT_CLOSE_CONN:
      tp__mock_job_end(m, &r->job, TP__MOCK_FAILED, now_ns);
      /* What is queued but not written yet is lost, as with a crash. */
      tp__mock_conn_close(c);
      return;
    case TP_MOCK_FAULT_GOAWAY: fire_goaway(r, f, now_ns); return;
    default: return;
  }
}

static void on_token(tp_timer *t, uint64_t now_ns) {
  mreq *r = t->data;
  mstream *st = r->st;
  tp_mock *m = st->c->m;
  tp__mock_job *j = &r->job;
  tp_mock_token tok;
  char bad[sizeof(tok.text) + 2];
  const char *text;
  size_t text_len;
  bool trickle = false;
  tp__mock_tick k = tp__mock_job_tick(m, j, now_ns, &tok, bad, &text, &text_len, &trickle);
  if (k == TP__MOCK_TICK_FAULT) {
    tp__mock_req_fire_fault(r, now_ns);
    return;
  }
  if (k == TP__MOCK_TICK_NONE) return;
  if (trickle) {
    st->trickle = true;
    st->trickle_ready = true;
  }
  int rv = 0;
  if (r->streaming && j->model->echo) {
    /* The prompt and all the text so far, every time. */
    rv = tp_buf_append(&r->text, text, text_len);
    if (!rv)
      rv = tp__mock_queue_response(r, (const char *)r->text.data, r->text.len, true, tok.last, tok.index + 1);
  } else if (r->streaming) {
    /* The ensemble with empty final responses enabled sends the flag
     * separately, the way Triton's ensemble scheduler often does. */
    bool final_here = tok.last && !r->empty_final;
    rv = tp__mock_queue_response(r, text, text_len, true, final_here, 1);
    if (!rv && tok.last && r->empty_final) rv = tp__mock_queue_response(r, NULL, 0, false, true, 0);
  } else {
    rv = tp_buf_append(&r->text, text, text_len);
    if (!rv && tok.last)
      rv = tp__mock_queue_response(r, (const char *)r->text.data, r->text.len, true, true, tok.index + 1);
  }
  if (rv) {
    tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "cannot queue the response");
    return;
  }
  if (!tok.last) {
    tp_timer_start(m->timers, t, j->seq.next_deadline_ns);
    return;
  }
  tp__mock_job_end(m, j, TP__MOCK_OK, now_ns);
  req_done(r, TP__MOCK_OK);
}

/* Starts one inference request on st.  unary: ModelInfer. */
void tp__mock_start_infer(mstream *st, const uint8_t *data, size_t len, bool unary) {
  tp_mock *m = st->c->m;
  char err[512];
  tp__mock_infer_req a;
  int rv = tp__mock_infer_parse(data, len, &a, err, sizeof(err));
  if (rv) {
    if (rv == TP_EPROTO)
      tp__mock_stream_finish(st, TP_GRPC_INTERNAL, err);
    else if (unary)
      tp__mock_stream_finish(st, rv == TP_ENOTFOUND ? TP_GRPC_NOT_FOUND : TP_GRPC_INVALID_ARGUMENT, err);
    else
      tp__mock_queue_stream_error(st, a.id, err);
    tp__mock_infer_req_fini(&a);
    return;
  }
  mreq *r = calloc(1, sizeof(*r));
  if (!r || !(r->job.id = strdup(a.id)) || !(r->version = strdup(a.version)) ||
      (a.id[0] && !(r->job.request_id = strdup(a.id))) ||
      (st->traceparent[0] && !(r->job.traceparent = strdup(st->traceparent)))) {
    if (r) tp__mock_job_fini(&r->job);
    if (r) free(r->version);
    free(r);
    tp__mock_infer_req_fini(&a);
    tp__mock_stream_finish(st, TP_GRPC_RESOURCE_EXHAUSTED, "out of memory");
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
    tp__mock_infer_req_fini(&a);
    tp__mock_stream_finish(st, TP_GRPC_RESOURCE_EXHAUSTED, "out of memory");
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
  if (!trailers_only && tp__mock_stream_start_response(st) != 0) {
    tp__mock_infer_req_fini(&a);
    tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "cannot start the response");
    return;
  }
  /* Submitting assigns the request number the log line carries; no
   * response can be queued before the first timer fires. */
  rv = tp__mock_job_submit(m, &r->job, &a.sp, m->arrival_ns ? m->arrival_ns : tp_now_ns());
  tp__mock_infer_req_fini(&a);
  if (rv) tp__mock_stream_finish(st, TP_GRPC_RESOURCE_EXHAUSTED, "out of memory");
}

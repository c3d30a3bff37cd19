/* The HTTP/1.1 side's requests in progress: answered token by token as
 * the timing model says, or cut short by their fault. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "mock/tp_mock_http_conn.h"
#include "mock/tp_mock_http_parse.h"
#include "mock/tp_mock_internal.h"
#include "mock/tp_mock_sse.h"
#include "util/tp_common.h"
#include "util/tp_timer.h"
#include "tokperf/mock.h"

/* ---- requests ---------------------------------------------------------------------------- */

void tp__mock_hreq_free(hreq *r, tp__mock_outcome how) {
  hconn *c = r->c;
  tp_mock *m = c->m;
  uint64_t now = tp_now_ns();
  tp__mock_job_end(m, &r->job, how, now);
  if (m->timers) {
    tp_timer_stop(m->timers, &r->keepalive);
    tp_timer_stop(m->timers, &r->job.timer); /* a trailer still due */
  }
  if (c->cur == r) {
    c->cur = NULL;
    c->hold = false;
    if (!c->closing) tp__mock_hconn_idle_arm(c, now);
  }
  tp_buf_fini(&r->text);
  free(r->model_name);
  tp__mock_job_fini(&r->job);
  free(r);
}

/* The response is complete: the connection takes the next request. */
static void hreq_done(hreq *r, tp__mock_outcome how) {
  hconn *c = r->c;
  tp__mock_hreq_free(r, how);
  tp__mock_hconn_dirty(c);
}

static bool is_openai(const hreq *r) {
  return r->api == API_COMPLETIONS || r->api == API_CHAT;
}

static void usage_of(const hreq *r, tp_mock_usage *u) {
  u->prompt_tokens = r->job.seq.prompt_tokens;
  u->completion_tokens = r->job.tokens_sent;
  u->cached_tokens = r->job.seq.cached_tokens;
}

static void timings_of(const hreq *r, uint64_t now_ns, tp_mock_timings *t) {
  const tp_mock_seq *s = &r->job.seq;
  uint64_t first = r->job.first_response_ns ? r->job.first_response_ns : now_ns;
  t->prompt_ms = s->admit_ns && first > s->admit_ns ? (double)(first - s->admit_ns) / 1e6 : 0;
  t->predicted_ms = now_ns > first ? (double)(now_ns - first) / 1e6 : 0;
}

/* An error the client sees: a status with an error body while nothing of
 * the response is out, else an error event in the stream, which then
 * ends. */
static void hreq_error(hreq *r, int status, const char *msg, uint64_t now_ns) {
  hconn *c = r->c;
  tp_mock *m = c->m;
  tp__mock_log_error(m, r->job.id, msg, now_ns);
  if (!r->head_sent) {
    if (is_openai(r))
      tp__mock_http_oai_error(c, r->w.dialect, status, msg);
    else
      tp__mock_http_triton_error(c, status, msg);
  } else {
    tp_buf b;
    tp_buf_init(&b);
    if (is_openai(r))
      tp_mock_sse_error(&b, &r->w, msg, status);
    else
      tp_mock_generate_error(&b, msg, true);
    tp__mock_http_stream_data(r, b.data, b.len);
    tp_buf_fini(&b);
    tp__mock_http_stream_end(r);
  }
  hreq_done(r, TP__MOCK_FAILED);
}

static void hreq_stall(hreq *r, uint64_t now_ns) {
  tp_mock *m = r->c->m;
  r->stalled = true;
  r->c->hold = false; /* what was made goes out before the stall */
  tp_timer_stop(m->timers, &r->job.timer);
  tp_timer_stop(m->timers, &r->keepalive);
  if (r->job.submitted) tp_mock_engine_cancel(m->engine, &r->job.seq, now_ns);
}

/* The malformed fault: an event whose data is not JSON, or a body cut
 * short. */
static void http_fire_malformed(hreq *r, uint64_t now_ns) {
  hconn *c = r->c;
  tp_mock *m = c->m;
  tp__mock_job_end(m, &r->job, TP__MOCK_FAILED, now_ns);
  if (r->stream) {
    /* An event whose data is not JSON, then the stream ends as usual. */
    static const char garbage[] = "data: {\"choices\": [{\"text\": \"\\ud8\n\n";
    tp__mock_http_stream_data(r, garbage, sizeof(garbage) - 1);
    if (is_openai(r) && r->w.dialect != TP_MOCK_DIALECT_TGI) {
      static const char done[] = "data: [DONE]\n\n";
      tp__mock_http_stream_data(r, done, sizeof(done) - 1);
    }
    tp__mock_http_stream_end(r);
  } else {
    static const char garbage[] = "{\"id\":\"cmpl-broken\",\"choices\":[{\"text\":";
    tp__mock_http_respond(c, 200, "application/json", garbage, sizeof(garbage) - 1);
  }
  tp__mock_count(&m->n_responses, 1);
  hreq_done(r, TP__MOCK_FAILED);
}

/* The oversize fault: a chunk (or body) that declares size_bytes and
 * carries them, then nothing more. */
static void http_fire_oversize(hreq *r, const tp_mock_fault *f, uint64_t now_ns) {
  hconn *c = r->c;
  tp_mock *m = c->m;
  if (r->stream && !c->http10) {
    tp__mock_http_stream_head(r);
    tp_buf_printf(&c->out, "%x\r\ndata: ", (unsigned)f->size_bytes);
    c->fill_left = f->size_bytes > 6 ? f->size_bytes - 6 : 0;
  } else if (r->stream) {
    tp__mock_http_stream_head(r);
    tp_buf_append_str(&c->out, "data: ");
    c->fill_left = f->size_bytes > 6 ? f->size_bytes - 6 : 0;
  } else {
    tp_buf_printf(&c->out,
                  "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %u\r\n"
                  "Connection: keep-alive\r\n\r\n{\"text\":\"",
                  f->size_bytes);
    r->head_sent = true;
    c->fill_left = f->size_bytes > 9 ? f->size_bytes - 9 : 0;
  }
  tp__mock_count(&m->n_responses, 1);
  hreq_stall(r, now_ns);
  tp__mock_hconn_dirty(c);
}

/* Carries out r's fault, due now.  May free r and close its connection. */
static void http_fire(hreq *r, uint64_t now_ns) {
  hconn *c = r->c;
  tp_mock *m = c->m;
  const tp_mock_fault *f = &r->job.fault;
  const char *msg = tp_mock_fault_message(f);
  tp__mock_job_fault_fired(m, &r->job, now_ns);
  switch (f->kind) {
    case TP_MOCK_FAULT_RST_STREAM:
      /* HTTP/1.1 has no streams: reset the TCP connection once what is
       * queued is out. */
      tp__mock_job_end(m, &r->job, TP__MOCK_FAILED, now_ns);
      c->reset_after = true;
      hreq_stall(r, now_ns);
      tp__mock_hconn_dirty(c);
      return;
    case TP_MOCK_FAULT_GRPC_STATUS:
    case TP_MOCK_FAULT_TRAILERS_ONLY:
    case TP_MOCK_FAULT_HTTP_STATUS: hreq_error(r, tp_mock_fault_http_status(f), msg, now_ns); return;
    case TP_MOCK_FAULT_INBAND_ERROR:
      if (r->stream) tp__mock_http_stream_head(r);
      hreq_error(r, 500, msg, now_ns);
      return;
    case TP_MOCK_FAULT_STALL:
      /* A stream's head goes out first, as a server that accepted the
       * request and then hangs. */
      if (r->stream) tp__mock_http_stream_head(r);
      hreq_stall(r, now_ns);
      return;
    case TP_MOCK_FAULT_MALFORMED: http_fire_malformed(r, now_ns); return;
    case TP_MOCK_FAULT_OVERSIZE: http_fire_oversize(r, f, now_ns); return;
    case TP_MOCK_FAULT_CLOSE_CONN:
      /* FIN in the middle of the response, once what is queued is out;
       * nothing pipelined behind it is answered. */
      tp__mock_job_end(m, &r->job, TP__MOCK_FAILED, now_ns);
      c->close_after = true;
      tp_buf_reset(&c->in);
      hreq_done(r, TP__MOCK_FAILED);
      return;
    default: return;
  }
}

static void on_keepalive(tp_timer *t, uint64_t now_ns) {
  hreq *r = t->data;
  tp_buf b;
  tp_buf_init(&b);
  tp_mock_sse_keepalive(&b);
  tp__mock_http_stream_data(r, b.data, b.len);
  tp_buf_fini(&b);
  tp_timer_start(r->c->m->timers, t, now_ns + r->keepalive_every_ns);
}

/* The body of one response into b: a streamed token's event, or (whole)
 * the answer of a request that does not stream.  Notes the response. */
static int http_body(hreq *r, const char *text, size_t len, bool last, bool whole, uint64_t now_ns,
                     tp_buf *b) {
  tp__mock_job *j = &r->job;
  const char *finish = j->seq.hit_length ? "length" : "stop";
  tp__mock_job_response(r->c->m, j, now_ns);
  if (!is_openai(r))
    return whole ? tp_mock_generate_json(b, r->model_name, r->has_id ? j->id : NULL, text, len)
                 : tp_mock_generate_event(b, r->model_name, r->has_id ? j->id : NULL, text, len);
  tp_mock_usage u;
  tp_mock_timings tm;
  usage_of(r, &u);
  timings_of(r, now_ns, &tm);
  return whole ? tp_mock_oai_body(b, &r->w, text, len, finish, &u, &tm)
               : tp_mock_sse_token(b, &r->w, text, len, last, finish, &u, &tm);
}

/* Whether an OpenAI stream's usage chunk and [DONE] trail its last token
 * (usage_delay_ms). */
static bool trailer_later(const hreq *r) {
  return is_openai(r) && r->c->m->cfg.usage_delay_ms > 0;
}

/* The event carrying the tokens of a streamed answer (one, or with
 * tokens_per_chunk those gathered in r->text).  With a trailer to come,
 * the last token's event is not the final response: the trailer is. */
static int http_token_event(hreq *r, bool last, const char *text, size_t len, uint32_t ntok,
                            uint64_t now_ns) {
  tp_mock *m = r->c->m;
  tp_buf b;
  tp_buf_init(&b);
  bool later = last && trailer_later(r);
  r->w.chunk_tokens = ntok;
  r->w.trailer_later = later;
  int rv = http_body(r, text, len, last, false, now_ns, &b);
  if (!rv) {
    tp__mock_http_stream_data(r, b.data, b.len);
    tp__mock_count(&m->n_responses, 1);
    tp__mock_http_log_response(r, now_ns, text, len, last && !later);
    if (last && !later) tp__mock_http_stream_end(r);
  }
  tp_buf_fini(&b);
  return rv;
}

/* The tokens gathered for one event go out now. */
static int http_flush_pending(hreq *r, bool last, uint64_t now_ns) {
  uint32_t n = r->pending_tokens;
  r->pending_tokens = 0;
  int rv = http_token_event(r, last, (const char *)r->text.data, r->text.len, n, now_ns);
  tp_buf_reset(&r->text);
  return rv;
}

/* A streamed token: its own event, or with tokens_per_chunk gathered until
 * the event is full, the answer ends, or a chat answer's reasoning does
 * (reasoning and answer never share a chunk, as servers send them). */
static int http_stream_token(hreq *r, const tp_mock_token *tok, const char *text, size_t len,
                             uint64_t now_ns) {
  tp_mock *m = r->c->m;
  uint32_t per = m->cfg.tokens_per_chunk > 1 ? m->cfg.tokens_per_chunk : 1;
  if (per == 1) return http_token_event(r, tok->last, text, len, 1, now_ns);
  int rv = tp_buf_append(&r->text, text, len);
  if (rv) return rv;
  r->pending_tokens++;
  bool reasoning_ends =
      r->api == API_CHAT && r->w.reasoning_tokens && r->job.tokens_sent == r->w.reasoning_tokens;
  if (r->pending_tokens < per && !tok->last && !reasoning_ends) return 0;
  return http_flush_pending(r, tok->last, now_ns);
}

/* usage_delay_ms after the last token: the usage chunk and [DONE], the
 * stream's final response. */
static void http_trailer(hreq *r, uint64_t now_ns) {
  tp_mock *m = r->c->m;
  tp_mock_usage u;
  usage_of(r, &u);
  tp_buf b;
  tp_buf_init(&b);
  if (tp_mock_sse_trailer(&b, &r->w, &u)) {
    tp_buf_fini(&b);
    hreq_error(r, 500, "tokperf mock: out of memory", now_ns);
    return;
  }
  tp__mock_http_stream_data(r, b.data, b.len);
  tp_buf_fini(&b);
  tp__mock_count(&m->n_responses, 1);
  tp__mock_http_log_response(r, now_ns, "", 0, true);
  tp__mock_http_stream_end(r);
  hreq_done(r, TP__MOCK_OK);
}

/* The whole answer of a request that does not stream, once its last token
 * is in r->text. */
static int http_answer_whole(hreq *r, uint64_t now_ns) {
  tp_mock *m = r->c->m;
  tp_buf b;
  tp_buf_init(&b);
  int rv = http_body(r, (const char *)r->text.data, r->text.len, true, true, now_ns, &b);
  if (!rv) {
    if (r->api == API_GENERATE_STREAM) {
      /* generate_stream without the stream input: one event. */
      tp_buf ev;
      tp_buf_init(&ev);
      rv = tp_buf_append_str(&ev, "data: ");
      if (!rv) rv = tp_buf_append(&ev, b.data, b.len);
      if (!rv) rv = tp_buf_append(&ev, "\n\n", 2);
      if (!rv) {
        tp__mock_http_stream_data(r, ev.data, ev.len);
        tp__mock_http_stream_end(r);
      }
      tp_buf_fini(&ev);
    } else {
      tp__mock_http_respond_buf(r->c, 200, "application/json", &b);
    }
    tp__mock_count(&m->n_responses, 1);
    tp__mock_http_log_response(r, now_ns, (const char *)r->text.data, r->text.len, true);
  }
  tp_buf_fini(&b);
  return rv;
}

static void on_http_token(tp_timer *t, uint64_t now_ns) {
  hreq *r = t->data;
  hconn *c = r->c;
  tp_mock *m = c->m;
  tp__mock_job *j = &r->job;
  if (r->trailer_due) {
    http_trailer(r, now_ns);
    return;
  }
  tp_mock_token tok;
  char bad[sizeof(tok.text) + 2];
  const char *text;
  size_t len;
  bool trickle = false;
  tp__mock_tick k = tp__mock_job_tick(m, j, now_ns, &tok, bad, &text, &len, &trickle);
  if (k == TP__MOCK_TICK_FAULT) {
    /* Tokens made before the fault go out first, as they would have. */
    if (r->stream && r->pending_tokens && http_flush_pending(r, false, now_ns)) {
      hreq_error(r, 500, "tokperf mock: out of memory", now_ns);
      return;
    }
    http_fire(r, now_ns);
    return;
  }
  if (k == TP__MOCK_TICK_NONE) return;
  if (trickle) {
    c->trickle = true;
    c->trickle_ready = true;
  }
  int rv;
  if (r->stream) {
    rv = http_stream_token(r, &tok, text, len, now_ns);
  } else {
    rv = tp_buf_append(&r->text, text, len);
    if (!rv && tok.last) rv = http_answer_whole(r, now_ns);
  }
  if (rv) {
    hreq_error(r, 500, "tokperf mock: out of memory", now_ns);
    return;
  }
  if (!tok.last) {
    tp_timer_start(m->timers, t, j->seq.next_deadline_ns);
    return;
  }
  tp__mock_job_end(m, j, TP__MOCK_OK, now_ns);
  if (r->stream && trailer_later(r)) {
    /* The sequence is done (its batch slot free); the stream is not. */
    r->trailer_due = true;
    tp_timer_start(m->timers, t, now_ns + m->cfg.usage_delay_ms * TP_NS_PER_MS);
    return;
  }
  hreq_done(r, TP__MOCK_OK);
}

hreq *tp__mock_hreq_new(hconn *c, api_kind api) {
  hreq *r = calloc(1, sizeof(*r));
  if (!r) return NULL;
  r->c = c;
  r->api = api;
  tp_buf_init(&r->text);
  tp_timer_init(&r->job.timer, on_http_token, r);
  tp_timer_init(&r->keepalive, on_keepalive, r);
  r->job.seq.data = &r->job;
  uv_timeval64_t tv;
  r->created = uv_gettimeofday(&tv) == 0 ? (uint64_t)tv.tv_sec : 0;
  return r;
}

/* Chooses the fault, submits the job and starts the response clock.  The
 * request becomes the connection's current one. */
void tp__mock_hreq_start(hreq *r, tp_mock_seq_params *sp, bool have_fault, const tp_mock_fault *f,
                         int64_t after) {
  hconn *c = r->c;
  tp_mock *m = c->m;
  tp__mock_job_choose_fault(m, &r->job, have_fault ? f : NULL, after);
  /* goaway on HTTP/1.1: the answer is complete and carries Connection:
   * close; it does not take the place of a token. */
  bool goaway = r->job.fault.kind == TP_MOCK_FAULT_GOAWAY;
  if (goaway) {
    c->close_after = true;
    r->job.fault.kind = TP_MOCK_FAULT_NONE;
  }
  c->cur = r;
  c->hold = r->stream && m->cfg.one_write;
  if (m->timers) tp_timer_stop(m->timers, &c->idle_timer);
  uint64_t now = m->arrival_ns ? m->arrival_ns : tp_now_ns();
  if (tp__mock_job_submit(m, &r->job, sp, now) != 0) {
    hreq_error(r, 500, "tokperf mock: out of memory", now);
    return;
  }
  if (goaway) {
    r->job.fault.kind = TP_MOCK_FAULT_GOAWAY;
    tp__mock_job_fault_fired(m, &r->job, now);
  }
  if (r->stream && r->keepalive_every_ns)
    tp_timer_start(m->timers, &r->keepalive, now + r->keepalive_every_ns);
}

/* The mock's HTTP/1.1 side: OpenAI-compatible /v1 endpoints in four server
 * dialects, Triton's /v2 health, metadata, generate and statistics
 * endpoints, and Prometheus /metrics, on a second port of the same loop as
 * the gRPC side and on the same timing model.
 *
 * One request at a time per connection (pipelined requests wait in the
 * input buffer); keep-alive unless the client or a fault says otherwise.
 * Servers that drop kept-alive connections: close_after_stream closes the
 * connection once a streamed answer (which said keep-alive) is written,
 * dropping any request that came meanwhile; idle_close_ms closes one that
 * has had no request in progress for that long since its last answer.
 * Streams go out chunked (close-delimited for HTTP/1.0 clients).  Output is
 * gathered per connection and written once per loop iteration from the
 * server's check handle, as on the gRPC side, so tokens due in the same
 * wake-up leave in one write; the log's t_ns is the moment a response is
 * queued.
 *
 * Per-request faults: a JSON field "tokperf_fault" (and
 * "tokperf_fault_after") in the request body, or the headers
 * X-Tokperf-Fault / X-Tokperf-Fault-After (a header wins over the field).
 * How each fault looks on HTTP is in tp_mock_faults.h; error statuses go out
 * as the dialect's JSON error body while no byte of the response is out
 * yet, and as an in-stream error event once a stream has started. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "config.h"
#include "mock/tp_mock_http_parse.h"
#include "mock/tp_mock_internal.h"
#include "mock/tp_mock_sse.h"
#include "util/tp_stamp.h"
#include "tokperf/mock.h"

#define HTTP_MAX_BODY_BYTES (64u << 20)
#define HTTP_WRITE_HIGH_WATER_BYTES (4u << 20)
#define HTTP_FILL_PIECE_BYTES (64u << 10)
#define TRICKLE_NS 1000000ull /* trickle fault: one byte per ms */
#define TGI_KEEPALIVE_MS 15000
/* GPU figures of /metrics: an 80 GiB card, 75 W idle, 700 W flat out;
 * weights and the KV pool are allocated at start, as vLLM and TensorRT-LLM
 * do (128 KiB of KV per token, an 8B model in 16 bits). */
#define GPU_MEMORY_TOTAL_BYTES (80ull << 30)
#define GPU_WEIGHTS_BYTES (16ull << 30)
#define KV_BYTES_PER_TOKEN (128ull << 10)
#define GPU_IDLE_W 75.0
#define GPU_MAX_W 700.0

typedef enum api_kind { API_COMPLETIONS, API_CHAT, API_GENERATE, API_GENERATE_STREAM } api_kind;

typedef struct hreq hreq;

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
  tp_buf in; /* received, not consumed */
  size_t last_len;
  hreq *cur; /* the request being answered */
  uint32_t n_requests;
  tp_buf out; /* response bytes not yet written */
  size_t out_off;
  size_t write_bytes; /* handed to uv_write, not completed */
  uint64_t fill_left; /* oversize fault: filler bytes still to write */
  bool trickle;
  bool trickle_ready;
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
  tp_timer keepalive;
  uint64_t keepalive_every_ns; /* 0 = no keep-alive comments */
  uint64_t created;
};

typedef struct hwrite {
  uv_write_t req;
  hconn *c;
  char *data;
  size_t len;
} hwrite;

/* ---- output ------------------------------------------------------------------------------ */

static void hconn_close(hconn *c, bool reset);

static void mark_dirty(hconn *c) {
  if (c->dirty || c->closing) return;
  c->dirty = true;
  c->dirty_next = c->m->hdirty;
  c->m->hdirty = c;
  tp__mock_want_flush(c->m);
}

static const char *reason_phrase(int status) {
  switch (status) {
    case 200: return "OK";
    case 400: return "Bad Request";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 411: return "Length Required";
    case 413: return "Content Too Large";
    case 422: return "Unprocessable Content";
    case 429: return "Too Many Requests";
    case 431: return "Request Header Fields Too Large";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 502: return "Bad Gateway";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 505: return "HTTP Version Not Supported";
    default: return status < 500 ? "Client Error" : "Server Error";
  }
}

/* A whole response with a Content-Length body. */
static void respond(hconn *c, int status, const char *ctype, const void *body, size_t len) {
  tp_buf_printf(&c->out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n", status,
                reason_phrase(status), ctype, len);
  if (status == 405) tp_buf_append_str(&c->out, "Allow: GET, POST\r\n");
  tp_buf_append_str(&c->out, c->close_after ? "Connection: close\r\n\r\n" : "Connection: keep-alive\r\n\r\n");
  tp_buf_append(&c->out, body, len);
  mark_dirty(c);
}

static void respond_buf(hconn *c, int status, const char *ctype, const tp_buf *b) {
  respond(c, status, ctype, b->data ? b->data : (const uint8_t *)"", b->len);
}

/* Triton's error body ({"error":"…"}). */
static void respond_triton_error(hconn *c, int status, const char *msg) {
  tp_buf b;
  tp_buf_init(&b);
  tp_mock_generate_error(&b, msg, false);
  respond_buf(c, status, "application/json", &b);
  tp_buf_fini(&b);
}

static void respond_oai_error(hconn *c, tp_mock_dialect d, int status, const char *msg) {
  tp_buf b;
  tp_buf_init(&b);
  tp_mock_oai_error_body(&b, d, msg, status);
  respond_buf(c, status, "application/json", &b);
  tp_buf_fini(&b);
}

/* The head of a streamed response (chunked, or close-delimited for an
 * HTTP/1.0 client). */
static void stream_head(hreq *r) {
  if (r->head_sent) return;
  hconn *c = r->c;
  r->head_sent = true;
  tp_buf_append_str(&c->out, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
                             "Cache-Control: no-cache\r\n");
  if (c->http10) {
    c->close_after = true;
    tp_buf_append_str(&c->out, "Connection: close\r\n\r\n");
  } else {
    tp_buf_append_str(&c->out, c->close_after ? "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                                              : "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n");
  }
  mark_dirty(c);
}

/* One piece of a streamed body. */
static void stream_data(hreq *r, const void *p, size_t n) {
  hconn *c = r->c;
  if (n == 0) return;
  stream_head(r);
  if (c->http10) {
    tp_buf_append(&c->out, p, n);
  } else {
    tp_buf_printf(&c->out, "%zx\r\n", n);
    tp_buf_append(&c->out, p, n);
    tp_buf_append(&c->out, "\r\n", 2);
  }
  mark_dirty(c);
}

static void stream_end(hreq *r) {
  hconn *c = r->c;
  stream_head(r);
  /* As llama-server does: the head said keep-alive, the socket closes. */
  if (c->m->cfg.close_after_stream) c->drop_after = true;
  if (!c->http10) tp_buf_append(&c->out, "0\r\n\r\n", 5);
  mark_dirty(c);
}

static void on_hwrite(uv_write_t *req, int status) {
  hwrite *w = (hwrite *)req;
  hconn *c = w->c;
  c->write_bytes -= w->len;
  free(w->data);
  free(w);
  if (c->closing) return;
  if (status < 0) {
    hconn_close(c, false);
    return;
  }
  mark_dirty(c);
}

static int write_bytes(hconn *c, const uint8_t *p, size_t n) {
  hwrite *w = malloc(sizeof(*w));
  char *d = malloc(n);
  if (!w || !d) {
    free(w);
    free(d);
    return TP_ENOMEM;
  }
  memcpy(d, p, n);
  w->c = c;
  w->data = d;
  w->len = n;
  uv_buf_t ub = uv_buf_init(d, (unsigned)n);
  if (uv_write(&w->req, (uv_stream_t *)&c->tcp, &ub, 1, on_hwrite) != 0) {
    free(d);
    free(w);
    return TP_EIO;
  }
  c->write_bytes += n;
  return 0;
}

static void on_trickle(tp_timer *t, uint64_t now_ns) {
  hconn *c = t->data;
  c->trickle_ready = true;
  mark_dirty(c);
}

static void process_input(hconn *c);

/* Writes what is queued (one byte per ms when trickling; filler for the
 * oversize fault), then takes the next pipelined request or closes the
 * connection when the response is out and that was asked for. */
static void hconn_flush(hconn *c) {
  tp_mock *m = c->m;
  if (!c->cur && !c->close_after && !c->drop_after && !c->reset_after && c->in.len && !c->closing)
    process_input(c);
  while (!c->closing && c->write_bytes < HTTP_WRITE_HIGH_WATER_BYTES) {
    size_t avail = c->out.len - c->out_off;
    if (avail == 0 && c->fill_left) {
      /* The oversize body, made up as the socket takes it: one SSE data
       * line (or JSON string) of 'x'. */
      tp_buf_reset(&c->out);
      c->out_off = 0;
      size_t n = (size_t)TP_MIN((uint64_t)HTTP_FILL_PIECE_BYTES, c->fill_left);
      if (tp_buf_reserve(&c->out, n)) break;
      memset(c->out.data, 'x', n);
      c->out.len = n;
      c->out.data[n] = 0;
      c->fill_left -= n;
      avail = n;
    }
    if (avail == 0) break;
    size_t n = avail;
    if (c->trickle) {
      if (!c->trickle_ready) {
        if (!tp_timer_active(&c->trickle_timer)) tp_timer_start(m->timers, &c->trickle_timer, tp_now_ns() + TRICKLE_NS);
        break;
      }
      c->trickle_ready = false;
      n = 1;
    }
    if (write_bytes(c, c->out.data + c->out_off, n) != 0) {
      hconn_close(c, false);
      return;
    }
    c->out_off += n;
    if (c->trickle) break;
  }
  if (c->closing) return;
  if (c->out_off == c->out.len) {
    tp_buf_reset(&c->out);
    c->out_off = 0;
  } else if (c->out_off >= (1u << 20)) {
    memmove(c->out.data, c->out.data + c->out_off, c->out.len - c->out_off);
    c->out.len -= c->out_off;
    c->out_off = 0;
  }
  if (c->out.len == 0 && !c->fill_left && c->write_bytes == 0) {
    if (c->reset_after) {
      hconn_close(c, true);
      return;
    }
    if ((c->close_after || c->drop_after || c->read_eof) && !c->cur) {
      hconn_close(c, false);
      return;
    }
  }
}

void tp__mock_http_flush(tp_mock *m) {
  while (m->hdirty) {
    hconn *c = m->hdirty;
    m->hdirty = c->dirty_next;
    c->dirty = false;
    c->dirty_next = NULL;
    hconn_flush(c);
  }
}

/* ---- requests ---------------------------------------------------------------------------- */

static void idle_arm(hconn *c, uint64_t now_ns);

static void hreq_free(hreq *r, tp__mock_outcome how) {
  hconn *c = r->c;
  tp_mock *m = c->m;
  uint64_t now = tp_now_ns();
  tp__mock_job_end(m, &r->job, how, now);
  if (m->timers) tp_timer_stop(m->timers, &r->keepalive);
  if (c->cur == r) {
    c->cur = NULL;
    if (!c->closing) idle_arm(c, now);
  }
  tp_buf_fini(&r->text);
  free(r->model_name);
  tp__mock_job_fini(&r->job);
  free(r);
}

/* The response is complete: the connection takes the next request. */
static void hreq_done(hreq *r, tp__mock_outcome how) {
  hconn *c = r->c;
  hreq_free(r, how);
  mark_dirty(c);
}

static bool is_openai(const hreq *r) {
  return r->api == API_COMPLETIONS || r->api == API_CHAT;
}

static tp_mock_dialect dialect_of(const tp_mock *m) {
  return (tp_mock_dialect)m->dialect;
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
      respond_oai_error(c, r->w.dialect, status, msg);
    else
      respond_triton_error(c, status, msg);
  } else {
    tp_buf b;
    tp_buf_init(&b);
    if (is_openai(r))
      tp_mock_sse_error(&b, &r->w, msg, status);
    else
      tp_mock_generate_error(&b, msg, true);
    stream_data(r, b.data, b.len);
    tp_buf_fini(&b);
    stream_end(r);
  }
  hreq_done(r, TP__MOCK_FAILED);
}

static void hreq_stall(hreq *r, uint64_t now_ns) {
  tp_mock *m = r->c->m;
  r->stalled = true;
  tp_timer_stop(m->timers, &r->job.timer);
  tp_timer_stop(m->timers, &r->keepalive);
  if (r->job.submitted) tp_mock_engine_cancel(m->engine, &r->job.seq, now_ns);
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
      mark_dirty(c);
      return;
    case TP_MOCK_FAULT_GRPC_STATUS:
    case TP_MOCK_FAULT_TRAILERS_ONLY:
    case TP_MOCK_FAULT_HTTP_STATUS: hreq_error(r, tp_mock_fault_http_status(f), msg, now_ns); return;
    case TP_MOCK_FAULT_INBAND_ERROR:
      if (r->stream) stream_head(r);
      hreq_error(r, 500, msg, now_ns);
      return;
    case TP_MOCK_FAULT_STALL:
      /* A stream's head goes out first, as a server that accepted the
       * request and then hangs. */
      if (r->stream) stream_head(r);
      hreq_stall(r, now_ns);
      return;
    case TP_MOCK_FAULT_MALFORMED: {
      tp__mock_job_end(m, &r->job, TP__MOCK_FAILED, now_ns);
      if (r->stream) {
        /* An event whose data is not JSON, then the stream ends as usual. */
        static const char garbage[] = "data: {\"choices\": [{\"text\": \"\\ud8\n\n";
        stream_data(r, garbage, sizeof(garbage) - 1);
        if (is_openai(r) && r->w.dialect != TP_MOCK_DIALECT_TGI) {
          static const char done[] = "data: [DONE]\n\n";
          stream_data(r, done, sizeof(done) - 1);
        }
        stream_end(r);
      } else {
        static const char garbage[] = "{\"id\":\"cmpl-broken\",\"choices\":[{\"text\":";
        respond(c, 200, "application/json", garbage, sizeof(garbage) - 1);
      }
      tp__mock_count(&m->n_responses, 1);
      hreq_done(r, TP__MOCK_FAILED);
      return;
    }
    case TP_MOCK_FAULT_OVERSIZE:
      /* A chunk (or body) that declares size_bytes and carries them, then
       * nothing more. */
      if (r->stream && !c->http10) {
        stream_head(r);
        tp_buf_printf(&c->out, "%x\r\ndata: ", (unsigned)f->size_bytes);
        c->fill_left = f->size_bytes > 6 ? f->size_bytes - 6 : 0;
      } else if (r->stream) {
        stream_head(r);
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
      mark_dirty(c);
      return;
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
  stream_data(r, b.data, b.len);
  tp_buf_fini(&b);
  tp_timer_start(r->c->m->timers, t, now_ns + r->keepalive_every_ns);
}

static void on_http_token(tp_timer *t, uint64_t now_ns) {
  hreq *r = t->data;
  hconn *c = r->c;
  tp_mock *m = c->m;
  tp__mock_job *j = &r->job;
  if (tp__mock_job_fault_due(j)) {
    http_fire(r, now_ns);
    return;
  }
  tp_mock_token tok;
  if (tp_mock_engine_next(m->engine, &j->seq, now_ns, &tok) != 0) return;
  const char *text;
  size_t len;
  char bad[sizeof(tok.text) + 2];
  if (tp__mock_job_token_text(m, j, &tok, bad, &text, &len, now_ns)) {
    c->trickle = true;
    c->trickle_ready = true;
  }
  j->tokens_sent++;
  const char *finish = j->seq.hit_length ? "length" : "stop";
  tp_buf b;
  tp_buf_init(&b);
  int rv = 0;
  if (r->stream) {
    tp__mock_job_response(m, j, now_ns);
    if (is_openai(r)) {
      tp_mock_usage u;
      tp_mock_timings tm;
      usage_of(r, &u);
      timings_of(r, now_ns, &tm);
      rv = tp_mock_sse_token(&b, &r->w, text, len, tok.last, finish, &u, &tm);
    } else {
      rv = tp_mock_generate_event(&b, r->model_name, r->has_id ? j->id : NULL, text, len);
    }
    if (!rv) {
      stream_data(r, b.data, b.len);
      tp__mock_count(&m->n_responses, 1);
      tp__mock_log_response(m, j, r->index++, now_ns, text, len, tok.last, NULL);
      if (tok.last) stream_end(r);
    }
  } else {
    rv = tp_buf_append(&r->text, text, len);
    if (!rv && tok.last) {
      tp__mock_job_response(m, j, now_ns);
      if (is_openai(r)) {
        tp_mock_usage u;
        tp_mock_timings tm;
        usage_of(r, &u);
        timings_of(r, now_ns, &tm);
        rv = tp_mock_oai_body(&b, &r->w, (const char *)r->text.data, r->text.len, finish, &u, &tm);
      } else {
        rv = tp_mock_generate_json(&b, r->model_name, r->has_id ? j->id : NULL, (const char *)r->text.data,
                                   r->text.len);
      }
      if (!rv) {
        if (r->api == API_GENERATE_STREAM) {
          /* generate_stream without the stream input: one event. */
          tp_buf ev;
          tp_buf_init(&ev);
          rv = tp_buf_append_str(&ev, "data: ");
          if (!rv) rv = tp_buf_append(&ev, b.data, b.len);
          if (!rv) rv = tp_buf_append(&ev, "\n\n", 2);
          if (!rv) {
            stream_data(r, ev.data, ev.len);
            stream_end(r);
          }
          tp_buf_fini(&ev);
        } else {
          respond_buf(c, 200, "application/json", &b);
        }
        tp__mock_count(&m->n_responses, 1);
        tp__mock_log_response(m, j, r->index++, now_ns, (const char *)r->text.data, r->text.len, true,
                              NULL);
      }
    }
  }
  tp_buf_fini(&b);
  if (rv) {
    hreq_error(r, 500, "tokperf mock: out of memory", now_ns);
    return;
  }
  if (!tok.last) {
    tp_timer_start(m->timers, t, j->seq.next_deadline_ns);
    return;
  }
  tp__mock_job_end(m, j, TP__MOCK_OK, now_ns);
  hreq_done(r, TP__MOCK_OK);
}

/* ---- request bodies ---------------------------------------------------------------------- */

static bool jint(json_t *j, int64_t *v) {
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
    if (end == json_string_value(j) || *end) return false;
    *v = x;
    return true;
  }
  return false;
}

static uint32_t clamp_u32(int64_t v) {
  return v <= 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : (uint32_t)v;
}

/* The fault a request asks for: body field (or, for generate, a key in
 * "parameters"), then the header, which wins. */
static int request_fault(const tp_mock_http_req *h, json_t *body, json_t *params, bool *have, tp_mock_fault *f,
                         int64_t *after, char *err, size_t errlen) {
  *have = false;
  *after = -1;
  char ferr[400];
  json_t *jf = json_object_get(body, "tokperf_fault");
  if (!jf && params) jf = json_object_get(params, "tokperf_fault");
  if (jf) {
    if (!json_is_string(jf)) {
      tp_seterr(err, errlen, "tokperf_fault must be a string");
      return TP_EINVAL;
    }
    if (tp_mock_fault_parse(json_string_value(jf), json_string_length(jf), f, ferr, sizeof(ferr))) {
      tp_seterr(err, errlen, "tokperf_fault: %s", ferr);
      return TP_EINVAL;
    }
    *have = true;
  }
  const tp_mock_http_span *hv = tp_mock_http_header_get(h, "x-tokperf-fault");
  if (hv) {
    if (tp_mock_fault_parse(hv->p, hv->len, f, ferr, sizeof(ferr))) {
      tp_seterr(err, errlen, "X-Tokperf-Fault: %s", ferr);
      return TP_EINVAL;
    }
    *have = true;
  }
  json_t *ja = json_object_get(body, "tokperf_fault_after");
  if (!ja && params) ja = json_object_get(params, "tokperf_fault_after");
  int64_t v;
  if (ja) {
    if (!jint(ja, &v) || v < 0) {
      tp_seterr(err, errlen, "tokperf_fault_after must be a count >= 0");
      return TP_EINVAL;
    }
    *after = v;
  }
  hv = tp_mock_http_header_get(h, "x-tokperf-fault-after");
  if (hv) {
    char num[24];
    size_t n = TP_MIN(hv->len, sizeof(num) - 1);
    memcpy(num, hv->p, n);
    num[n] = 0;
    char *end;
    long long x = strtoll(num, &end, 10);
    if (n == 0 || *end || x < 0) {
      tp_seterr(err, errlen, "X-Tokperf-Fault-After must be a count >= 0");
      return TP_EINVAL;
    }
    *after = x;
  }
  return 0;
}

static hreq *hreq_new(hconn *c, api_kind api) {
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
static void hreq_start(hreq *r, tp_mock_seq_params *sp, bool have_fault, const tp_mock_fault *f, int64_t after) {
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
  if (r->stream && r->keepalive_every_ns) tp_timer_start(m->timers, &r->keepalive, now + r->keepalive_every_ns);
}

/* Words of a chat message's content: a string, or parts with "text". */
static void append_content(tp_buf *b, json_t *content) {
  if (json_is_string(content)) {
    tp_buf_append(b, json_string_value(content), json_string_length(content));
  } else if (json_is_array(content)) {
    size_t i;
    json_t *part;
    json_array_foreach(content, i, part) {
      json_t *t = json_object_get(part, "text");
      if (json_is_string(t)) {
        tp_buf_append(b, json_string_value(t), json_string_length(t));
        tp_buf_append(b, "\n", 1);
      }
    }
  }
  tp_buf_append(b, "\n", 1);
}

static void start_openai(hconn *c, const tp_mock_http_req *h, const uint8_t *body, size_t body_len, api_kind api) {
  tp_mock *m = c->m;
  tp_mock_dialect d = dialect_of(m);
  bool chat = api == API_CHAT;
  char err[512];
  json_error_t je;
  json_t *root = json_loadb((const char *)body, body_len, 0, &je);
  if (!root || !json_is_object(root)) {
    snprintf(err, sizeof(err), "the request body is not a JSON object%s%s", root ? "" : ": ", root ? "" : je.text);
    json_decref(root);
    respond_oai_error(c, d, 400, err);
    return;
  }
  /* The model: vLLM and trtllm-serve know their served names only; TGI
   * and llama-server answer whatever is asked. */
  const char *model = json_string_value(json_object_get(root, "model"));
  const tp__mock_model *md = model ? tp__mock_find_model(model) : NULL;
  if (model && !md && (d == TP_MOCK_DIALECT_VLLM || d == TP_MOCK_DIALECT_TRTLLM)) {
    snprintf(err, sizeof(err), "The model `%s` does not exist.", model);
    json_decref(root);
    respond_oai_error(c, d, 404, err);
    return;
  }
  if (!md) md = tp__mock_find_model(d == TP_MOCK_DIALECT_TRTLLM ? "ensemble" : "vllm_model");
  tp_buf prompt;
  tp_buf_init(&prompt);
  uint32_t prompt_tokens = 0;
  if (chat) {
    json_t *msgs = json_object_get(root, "messages");
    if (!json_is_array(msgs) || json_array_size(msgs) == 0) {
      json_decref(root);
      tp_buf_fini(&prompt);
      respond_oai_error(c, d, 400, "'messages' must be a non-empty array");
      return;
    }
    size_t i;
    json_t *msg;
    json_array_foreach(msgs, i, msg) append_content(&prompt, json_object_get(msg, "content"));
  } else {
    json_t *p = json_object_get(root, "prompt");
    if (json_is_array(p) && json_array_size(p) == 1 && json_is_string(json_array_get(p, 0))) p = json_array_get(p, 0);
    if (json_is_string(p)) {
      tp_buf_append(&prompt, json_string_value(p), json_string_length(p));
    } else if (json_is_array(p) && json_array_size(p) > 0 && json_is_integer(json_array_get(p, 0))) {
      /* Token ids: each counts as one word. */
      size_t i;
      json_t *e;
      json_array_foreach(p, i, e) tp_buf_printf(&prompt, "%lld ", (long long)json_integer_value(e));
    } else {
      json_decref(root);
      tp_buf_fini(&prompt);
      respond_oai_error(c, d, 400,
                        "'prompt' must be a string, a list of one string or a list of token ids "
                        "(the mock takes one prompt per request)");
      return;
    }
  }
  prompt_tokens = tp_mock_count_words((const char *)prompt.data, prompt.len);

  tp_mock_seq_params sp;
  memset(&sp, 0, sizeof(sp));
  sp.prompt_tokens = prompt_tokens;
  int64_t v;
  json_t *jm = chat ? json_object_get(root, "max_completion_tokens") : NULL;
  if (!jm || json_is_null(jm)) jm = json_object_get(root, "max_tokens");
  if (jm && !json_is_null(jm)) {
    if (!jint(jm, &v) || v < 0) {
      json_decref(root);
      tp_buf_fini(&prompt);
      respond_oai_error(c, d, 400, "max_tokens must be an integer >= 0");
      return;
    }
    sp.max_tokens = clamp_u32(v);
  }
  if (jint(json_object_get(root, "min_tokens"), &v)) sp.min_tokens = clamp_u32(v);
  sp.ignore_eos = json_is_true(json_object_get(root, "ignore_eos"));
  bool stream = json_is_true(json_object_get(root, "stream"));
  json_t *so = json_object_get(root, "stream_options");
  bool has_so = json_is_object(so);
  if (has_so && !stream && (d == TP_MOCK_DIALECT_VLLM || d == TP_MOCK_DIALECT_TRTLLM)) {
    json_decref(root);
    tp_buf_fini(&prompt);
    respond_oai_error(c, d, 400, "Stream options can only be defined when `stream=True`.");
    return;
  }
  json_t *iu = has_so ? json_object_get(so, "include_usage") : NULL;
  bool include_usage = iu ? json_is_true(iu)
                          : has_so && (d == TP_MOCK_DIALECT_VLLM || d == TP_MOCK_DIALECT_TRTLLM);
  bool continuous = has_so && json_is_true(json_object_get(so, "continuous_usage_stats"));
  bool have_fault;
  tp_mock_fault f;
  int64_t after;
  if (request_fault(h, root, NULL, &have_fault, &f, &after, err, sizeof(err))) {
    json_decref(root);
    tp_buf_fini(&prompt);
    respond_oai_error(c, d, 400, err);
    return;
  }
  hreq *r = hreq_new(c, api);
  char *mname = r ? strdup(model ? model : md->name) : NULL;
  if (!r || !mname) {
    free(r);
    json_decref(root);
    tp_buf_fini(&prompt);
    respond_oai_error(c, d, 500, "tokperf mock: out of memory");
    return;
  }
  json_decref(root);
  r->model_name = mname;
  r->job.model = md;
  r->stream = stream;
  /* vLLM-style ids, derived from the request number so runs repeat. */
  uint64_t n = tp_mock_engine_next_number(m->engine);
  snprintf(r->oid, sizeof(r->oid), "%s-%016llx", chat ? "chatcmpl" : "cmpl",
           (unsigned long long)((n + 1) * 0x9e3779b97f4a7c15ULL ^ m->cfg.seed));
  r->job.id = strdup(r->oid);
  r->w.dialect = d;
  r->w.api = chat ? TP_MOCK_API_CHAT : TP_MOCK_API_COMPLETIONS;
  r->w.id = r->oid;
  r->w.model = r->model_name;
  r->w.created = r->created;
  r->w.include_usage = include_usage;
  r->w.continuous_usage = continuous;
  r->w.reasoning_tokens = m->cfg.reasoning_tokens;
  int64_t ka = m->cfg.sse_keepalive_ms;
  if (ka < 0) ka = d == TP_MOCK_DIALECT_TGI ? TGI_KEEPALIVE_MS : 0;
  r->keepalive_every_ns = (uint64_t)ka * TP_NS_PER_MS;
  if (!r->job.id) {
    hreq_free(r, TP__MOCK_FAILED);
    respond_oai_error(c, d, 500, "tokperf mock: out of memory");
    tp_buf_fini(&prompt);
    return;
  }
  sp.prompt = (const char *)prompt.data;
  sp.prompt_len = prompt.len;
  hreq_start(r, &sp, have_fault, &f, after);
  tp_buf_fini(&prompt);
}

/* A generate key: top level or inside "parameters". */
static json_t *gen_key(json_t *root, json_t *params, const char *k) {
  json_t *v = json_object_get(root, k);
  return v ? v : params ? json_object_get(params, k) : NULL;
}

static void start_generate(hconn *c, const tp_mock_http_req *h, const tp__mock_model *md, const uint8_t *body,
                           size_t body_len, bool stream_endpoint) {
  tp_mock *m = c->m;
  char err[512];
  json_error_t je;
  json_t *root = json_loadb((const char *)body, body_len, 0, &je);
  if (!root || !json_is_object(root)) {
    snprintf(err, sizeof(err), "failed to parse the request JSON buffer: %s", root ? "not an object" : je.text);
    json_decref(root);
    respond_triton_error(c, 400, err);
    return;
  }
  json_t *params = json_object_get(root, "parameters");
  if (params && !json_is_object(params)) params = NULL;
  json_t *ti = gen_key(root, params, "text_input");
  if (json_is_array(ti) && json_array_size(ti) == 1) ti = json_array_get(ti, 0);
  if (!json_is_string(ti)) {
    snprintf(err, sizeof(err), "input 'text_input' is required for model '%s'", md->name);
    json_decref(root);
    respond_triton_error(c, 400, err);
    return;
  }
  tp_mock_seq_params sp;
  memset(&sp, 0, sizeof(sp));
  int64_t v;
  json_t *jm = gen_key(root, params, "max_tokens");
  if (jm && !jint(jm, &v)) {
    json_decref(root);
    respond_triton_error(c, 400, "max_tokens must be an integer");
    return;
  }
  if (jm) sp.max_tokens = clamp_u32(v);
  if (md->ensemble && !jm) {
    snprintf(err, sizeof(err), "input 'max_tokens' is required for model '%s'", md->name);
    json_decref(root);
    respond_triton_error(c, 400, err);
    return;
  }
  if (jint(gen_key(root, params, "min_tokens"), &v) || jint(gen_key(root, params, "min_length"), &v))
    sp.min_tokens = clamp_u32(v);
  sp.ignore_eos = json_is_true(gen_key(root, params, "ignore_eos"));
  bool stream = json_is_true(gen_key(root, params, "stream"));
  bool exclude = json_is_true(gen_key(root, params, "exclude_input_in_output"));
  if (stream && !stream_endpoint) {
    json_decref(root);
    respond_triton_error(c, 400,
                         "generate expects model to produce exactly 1 response, use generate stream for model "
                         "that generates various number of responses");
    return;
  }
  bool have_fault;
  tp_mock_fault f;
  int64_t after;
  if (request_fault(h, root, params, &have_fault, &f, &after, err, sizeof(err))) {
    json_decref(root);
    respond_triton_error(c, 400, err);
    return;
  }
  hreq *r = hreq_new(c, stream_endpoint ? API_GENERATE_STREAM : API_GENERATE);
  json_t *jid = json_object_get(root, "id");
  const char *id = json_string_value(jid);
  char gen_id[32];
  snprintf(gen_id, sizeof(gen_id), "http-%llu", (unsigned long long)tp_mock_engine_next_number(m->engine));
  if (!r || !(r->model_name = strdup(md->name)) || !(r->job.id = strdup(id ? id : gen_id))) {
    if (r) hreq_free(r, TP__MOCK_FAILED);
    json_decref(root);
    respond_triton_error(c, 500, "tokperf mock: out of memory");
    return;
  }
  r->has_id = id != NULL;
  r->job.model = md;
  /* generate_stream streams only when the model is asked to (the stream
   * input); otherwise its one response is one event. */
  r->exclude_input = exclude;
  const char *prompt = json_string_value(ti);
  size_t plen = json_string_length(ti);
  sp.prompt_tokens = tp_mock_count_words(prompt, plen);
  sp.prompt = prompt;
  sp.prompt_len = plen;
  /* Non-streaming answers repeat the prompt unless excluded, as both
   * backends do. */
  r->stream = stream;
  if (!stream && !exclude) tp_buf_append(&r->text, prompt, plen);
  hreq_start(r, &sp, have_fault, &f, after);
  json_decref(root);
}

/* ---- other endpoints --------------------------------------------------------------------- */

static void respond_models(hconn *c) {
  tp_buf b;
  tp_buf_init(&b);
  uint64_t now = 0;
  uv_timeval64_t tv;
  if (uv_gettimeofday(&tv) == 0) now = (uint64_t)tv.tv_sec;
  tp_buf_append_str(&b, "{\"object\":\"list\",\"data\":[");
  const char *names[] = {"vllm_model", "ensemble"};
  for (size_t i = 0; i < TP_ARRAY_LEN(names); i++)
    tp_buf_printf(&b,
                  "%s{\"id\":\"%s\",\"object\":\"model\",\"created\":%llu,\"owned_by\":\"tokperf\","
                  "\"root\":\"%s\",\"parent\":null,\"max_model_len\":32768}",
                  i ? "," : "", names[i], (unsigned long long)now, names[i]);
  tp_buf_append_str(&b, "]}");
  respond_buf(c, 200, "application/json", &b);
  tp_buf_fini(&b);
}

static void tensors_json(tp_buf *b, const tp__mock_tensor *t, size_t n) {
  tp_buf_append(b, "[", 1);
  for (size_t i = 0; i < n; i++) {
    tp_buf_printf(b, "%s{\"name\":\"%s\",\"datatype\":\"%s\",\"shape\":[", i ? "," : "", t[i].name, t[i].datatype);
    for (size_t k = 0; k < t[i].n_dims; k++) tp_buf_printf(b, "%s%lld", k ? "," : "", (long long)t[i].dims[k]);
    tp_buf_append_str(b, "]}");
  }
  tp_buf_append(b, "]", 1);
}

static void respond_model_metadata(hconn *c, const tp__mock_model *md) {
  tp_buf b;
  tp_buf_init(&b);
  tp_buf_printf(&b, "{\"name\":\"%s\",\"versions\":[\"1\"],\"platform\":\"%s\",\"inputs\":", md->name, md->platform);
  tensors_json(&b, md->inputs, md->n_inputs);
  tp_buf_append_str(&b, ",\"outputs\":");
  tensors_json(&b, md->outputs, md->n_outputs);
  tp_buf_append(&b, "}", 1);
  respond_buf(c, 200, "application/json", &b);
  tp_buf_fini(&b);
}

static void gauges_of(tp_mock *m, tp_mock_gauges *g) {
  uint64_t now = tp_now_ns();
  memset(g, 0, sizeof(*g));
  tp_mock_engine *e = m->engine;
  g->running = tp_mock_engine_running(e);
  g->waiting = tp_mock_engine_queued(e);
  g->prefilling = tp_mock_engine_prefilling(e);
  g->max_batch = m->cfg.max_batch ? m->cfg.max_batch : 1;
  g->kv_blocks_used = tp_mock_engine_kv_blocks_used(e);
  g->kv_blocks_max = tp_mock_engine_kv_blocks_max(e);
  g->kv_tokens_per_block = m->cfg.prefix_cache_block_words ? m->cfg.prefix_cache_block_words : 16;
  g->prefix_queries_tokens = tp_mock_engine_prefix_queries_tokens(e);
  g->prefix_hits_tokens = tp_mock_engine_prefix_hits_tokens(e);
  /* Utilization over the time since the previous scrape (DCGM samples
   * an interval too); the first scrape covers the time since start. */
  uint64_t busy = tp_mock_engine_busy_ns(e, now);
  uint64_t since = m->last_scrape_ns ? m->last_scrape_ns : m->start_ns;
  uint64_t busy_since = m->last_scrape_ns ? m->last_scrape_busy_ns : 0;
  g->gpu_utilization = now > since ? (double)(busy - busy_since) / (double)(now - since) : 0;
  if (g->gpu_utilization > 1) g->gpu_utilization = 1;
  m->last_scrape_ns = now;
  m->last_scrape_busy_ns = busy;
  g->power_w = GPU_IDLE_W + (GPU_MAX_W - GPU_IDLE_W) * g->gpu_utilization;
  g->energy_j = GPU_IDLE_W * (double)(now - m->start_ns) / 1e9 + (GPU_MAX_W - GPU_IDLE_W) * (double)busy / 1e9;
  g->gpu_memory_total_bytes = GPU_MEMORY_TOTAL_BYTES;
  uint64_t used = GPU_WEIGHTS_BYTES + g->kv_blocks_max * g->kv_tokens_per_block * KV_BYTES_PER_TOKEN;
  uint64_t cap = GPU_MEMORY_TOTAL_BYTES / 100 * 92;
  g->gpu_memory_used_bytes = used < cap ? used : cap;
  g->iterations = tp_mock_engine_tokens_total(e);
  uv_timeval64_t tv;
  g->wall_ms = uv_gettimeofday(&tv) == 0 ? (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000 : 0;
}

static void respond_metrics(hconn *c) {
  tp_mock *m = c->m;
  tp_mock_gauges g;
  gauges_of(m, &g);
  tp_buf b;
  tp_buf_init(&b);
  if (tp_mock_metrics_render(&b, &m->stats, &g) != 0) {
    tp_buf_fini(&b);
    respond(c, 500, "text/plain", "out of memory\n", 14);
    return;
  }
  respond_buf(c, 200, "text/plain; version=0.0.4; charset=utf-8", &b);
  tp_buf_fini(&b);
}

static void respond_stats(hconn *c, int which) {
  tp_buf b;
  tp_buf_init(&b);
  if (tp_mock_stats_json(&b, &c->m->stats, which) != 0) {
    tp_buf_fini(&b);
    respond_triton_error(c, 500, "out of memory");
    return;
  }
  respond_buf(c, 200, "application/json", &b);
  tp_buf_fini(&b);
}

/* ---- routing ----------------------------------------------------------------------------- */

static bool seg_eq(const char *p, size_t n, const char *s) {
  return strlen(s) == n && memcmp(p, s, n) == 0;
}

/* /v2/models/{m}[/versions/{v}][/{action}]: the model name and version
 * (NULL when absent) and the action ("" when absent). */
typedef struct model_path {
  char model[128];
  char version[32];
  bool has_version;
  char action[32];
} model_path;

static bool parse_model_path(const char *p, size_t n, model_path *mp) {
  memset(mp, 0, sizeof(*mp));
  const char *segs[5];
  size_t lens[5], k = 0;
  size_t i = 0;
  while (i < n && k < 5) {
    while (i < n && p[i] == '/') i++;
    if (i >= n) break;
    size_t s = i;
    while (i < n && p[i] != '/') i++;
    segs[k] = p + s;
    lens[k++] = i - s;
  }
  if (i < n || k == 0 || lens[0] >= sizeof(mp->model)) return false;
  memcpy(mp->model, segs[0], lens[0]);
  size_t a = 1;
  if (k >= 3 && seg_eq(segs[1], lens[1], "versions")) {
    if (lens[2] >= sizeof(mp->version)) return false;
    memcpy(mp->version, segs[2], lens[2]);
    mp->has_version = true;
    a = 3;
  }
  if (k == a) return true;
  if (k != a + 1 || lens[a] >= sizeof(mp->action)) return false;
  memcpy(mp->action, segs[a], lens[a]);
  return true;
}

static int stats_index(const char *name) {
  for (int i = 0; i < TP_MOCK_SM_COUNT; i++)
    if (strcmp(name, tp_mock_stats_model_name((tp_mock_stats_model)i)) == 0) return i;
  return -1;
}

/* Answers one request whose head and body are complete. */
static void dispatch(hconn *c, const tp_mock_http_req *h, const uint8_t *body, size_t body_len) {
  tp_mock *m = c->m;
  tp__mock_count(&m->n_http_requests, 1);
  size_t plen = h->target.len;
  const char *q = memchr(h->target.p, '?', plen);
  if (q) plen = (size_t)(q - h->target.p);
  const char *p = h->target.p;
  bool get = tp_mock_http_span_ieq(h->method, "GET") || tp_mock_http_span_ieq(h->method, "HEAD");
  bool post = tp_mock_http_span_ieq(h->method, "POST");
  tp_mock_dialect d = dialect_of(m);

  if (seg_eq(p, plen, "/v1/completions") || seg_eq(p, plen, "/v1/chat/completions")) {
    if (!post) {
      respond_oai_error(c, d, 405, "Method Not Allowed");
      return;
    }
    start_openai(c, h, body, body_len, p[4] == 'c' && p[5] == 'h' ? API_CHAT : API_COMPLETIONS);
    return;
  }
  if (seg_eq(p, plen, "/v1/models")) {
    if (!get) {
      respond_oai_error(c, d, 405, "Method Not Allowed");
      return;
    }
    respond_models(c);
    return;
  }
  if (seg_eq(p, plen, "/metrics")) {
    if (!get) {
      respond(c, 405, "text/plain", "Method Not Allowed\n", 19);
      return;
    }
    respond_metrics(c);
    return;
  }
  if (seg_eq(p, plen, "/v2/health/live") || seg_eq(p, plen, "/v2/health/ready")) {
    if (!get) {
      respond_triton_error(c, 405, "Method Not Allowed");
      return;
    }
    respond(c, 200, "text/plain", "", 0);
    return;
  }
  if (seg_eq(p, plen, "/v2")) {
    tp_buf b;
    tp_buf_init(&b);
    tp_buf_append_str(&b, "{\"name\":\"tokperf-mock\",\"version\":\"" TP_VERSION
                          "\",\"extensions\":[\"parameters\",\"binary_tensor_data\",\"statistics\","
                          "\"generate\"]}");
    respond_buf(c, 200, "application/json", &b);
    tp_buf_fini(&b);
    return;
  }
  if (seg_eq(p, plen, "/v2/models/stats")) {
    respond_stats(c, TP_MOCK_SM_COUNT);
    return;
  }
  if (plen > 11 && memcmp(p, "/v2/models/", 11) == 0) {
    model_path mp;
    char err[300];
    if (!parse_model_path(p + 11, plen - 11, &mp)) {
      respond_triton_error(c, 404, "Not Found");
      return;
    }
    if (strcmp(mp.action, "stats") == 0) {
      int i = stats_index(mp.model);
      if (i < 0 || (mp.has_version && strcmp(mp.version, "1") != 0)) {
        snprintf(err, sizeof(err), "requested model '%s' is not available", mp.model);
        respond_triton_error(c, 400, err);
        return;
      }
      respond_stats(c, i);
      return;
    }
    const tp__mock_model *md = tp__mock_find_model(mp.model);
    bool bad_version = md && mp.has_version && strcmp(mp.version, "1") != 0;
    if (!md || bad_version) {
      if (bad_version)
        snprintf(err, sizeof(err), "Request for unknown model: '%s' version %s is not found", mp.model, mp.version);
      else
        snprintf(err, sizeof(err), "Request for unknown model: '%s' is not found", mp.model);
      /* Triton answers a readiness probe of an unknown model with 400. */
      respond_triton_error(c, strcmp(mp.action, "ready") == 0 ? 400 : 404, err);
      return;
    }
    if (mp.action[0] == 0 || strcmp(mp.action, "ready") == 0) {
      if (!get) {
        respond_triton_error(c, 405, "Method Not Allowed");
        return;
      }
      if (mp.action[0])
        respond(c, 200, "text/plain", "", 0);
      else
        respond_model_metadata(c, md);
      return;
    }
    if (strcmp(mp.action, "generate") == 0 || strcmp(mp.action, "generate_stream") == 0) {
      if (!post) {
        respond_triton_error(c, 405, "Method Not Allowed");
        return;
      }
      start_generate(c, h, md, body, body_len, mp.action[8] == '_');
      return;
    }
  }
  if (plen >= 4 && memcmp(p, "/v1/", 4) == 0)
    respond_oai_error(c, d, 404, "Not Found");
  else
    respond_triton_error(c, 404, "Not Found");
}

/* ---- connections ------------------------------------------------------------------------- */

/* Parses and answers buffered requests while none is in progress. */
static void process_input(hconn *c) {
  while (!c->closing && !c->cur && !c->close_after && !c->drop_after && !c->reset_after && c->in.len) {
    tp_mock_http_req h;
    int n = tp_mock_http_parse_request((const char *)c->in.data, c->in.len, c->last_len, &h);
    /* A TLS ClientHello (a record of type 22) has no line end to wait
     * for: refuse it at once, as plain HTTP servers do, so that an https://
     * client learns the port speaks no TLS instead of timing out. */
    if (n == TP_EAGAIN && c->in.data[0] == 0x16) n = TP_EPROTO;
    if (n == TP_EAGAIN) {
      c->last_len = c->in.len;
      return;
    }
    c->last_len = 0;
    if (n < 0) {
      /* A head that cannot be read: answer and close, since where the next
       * request would start is unknown. */
      c->close_after = true;
      tp__mock_count(&c->m->n_http_requests, 1);
      if (n == TP_ETOOBIG)
        respond_triton_error(c, 431, "request head too large");
      else if (n == TP_EUNSUPPORTED)
        respond_triton_error(c, 505, "only HTTP/1.0 and HTTP/1.1 are served here");
      else
        respond_triton_error(c, 400, "malformed HTTP request");
      tp_buf_reset(&c->in);
      return;
    }
    uint64_t blen;
    int rv = tp_mock_http_body_length(&h, &blen);
    if (rv) {
      c->close_after = true;
      tp__mock_count(&c->m->n_http_requests, 1);
      if (rv == TP_EUNSUPPORTED)
        respond_triton_error(c, 411, "request bodies must come with Content-Length (no Transfer-Encoding)");
      else
        respond_triton_error(c, 400, "malformed Content-Length");
      tp_buf_reset(&c->in);
      return;
    }
    if (blen > HTTP_MAX_BODY_BYTES) {
      c->close_after = true;
      tp__mock_count(&c->m->n_http_requests, 1);
      respond_triton_error(c, 413, "request body larger than 64 MiB");
      tp_buf_reset(&c->in);
      return;
    }
    if ((uint64_t)(c->in.len - (size_t)n) < blen) return; /* the body is still coming */
    c->http10 = h.minor_version == 0;
    if (!tp_mock_http_keep_alive(&h)) c->close_after = true;
    /* goaway_after_streams: the Nth request's answer closes the
     * connection. */
    if (++c->n_requests == c->m->cfg.goaway_after_streams) c->close_after = true;
    size_t used = (size_t)n + (size_t)blen;
    dispatch(c, &h, c->in.data + n, (size_t)blen);
    /* dispatch copied what it needs; the head and body go. */
    if (c->closing) return;
    if (used >= c->in.len) {
      tp_buf_reset(&c->in);
    } else {
      memmove(c->in.data, c->in.data + used, c->in.len - used);
      c->in.len -= used;
      c->in.data[c->in.len] = 0;
    }
  }
}

/* idle_close_ms: a connection with no request in progress for that long
 * is closed (a plain FIN, no Connection: close before it), as servers with
 * a keep-alive timeout do.  The clock starts when a response was queued
 * (not at accept: like nginx's keepalive_timeout, it is about kept-alive
 * connections; a slow first request is another timeout); a response still
 * being written counts as in progress. */
static void on_idle(tp_timer *t, uint64_t now_ns) {
  hconn *c = t->data;
  if (c->closing || c->cur) return;
  if (c->out.len > c->out_off || c->fill_left || c->write_bytes) {
    idle_arm(c, now_ns);
    return;
  }
  hconn_close(c, false);
}

static void idle_arm(hconn *c, uint64_t now_ns) {
  tp_mock *m = c->m;
  if (!m->cfg.idle_close_ms || !m->timers) return;
  tp_timer_start(m->timers, &c->idle_timer, now_ns + m->cfg.idle_close_ms * TP_NS_PER_MS);
}

static void on_hconn_closed(uv_handle_t *h) {
  free(h->data);
}

/* Everything but the socket goes at once; the struct goes in the close
 * callback (libuv cancels pending writes first).  reset: RST instead of
 * FIN. */
static void hconn_close(hconn *c, bool reset) {
  if (c->closing) return;
  tp_mock *m = c->m;
  c->closing = true;
  if (c->dirty) {
    hconn **pp = &m->hdirty;
    while (*pp && *pp != c) pp = &(*pp)->dirty_next;
    if (*pp) *pp = c->dirty_next;
    c->dirty = false;
  }
  if (c->cur) hreq_free(c->cur, TP__MOCK_CANCELLED);
  if (m->timers) tp_timer_stop(m->timers, &c->trickle_timer);
  if (m->timers) tp_timer_stop(m->timers, &c->idle_timer);
  tp_buf_fini(&c->in);
  tp_buf_fini(&c->out);
  if (c->prev)
    c->prev->next = c->next;
  else
    m->hconns = c->next;
  if (c->next) c->next->prev = c->prev;
  if (!reset || uv_tcp_close_reset(&c->tcp, on_hconn_closed) != 0) uv_close((uv_handle_t *)&c->tcp, on_hconn_closed);
}

static void on_halloc(uv_handle_t *h, size_t suggested, uv_buf_t *buf) {
  hconn *c = h->data;
  (void)suggested;
  size_t n;
  c->m->read_stamp_ns = tp__mock_read_stamp(c->m, &c->tcp, &n);
  *buf = uv_buf_init((char *)c->m->readbuf, (unsigned)n);
}

static void on_hread(uv_stream_t *s, ssize_t nread, const uv_buf_t *buf) {
  hconn *c = s->data;
  if (c->closing) return;
  if (nread < 0) {
    /* The client went away (or half-closed): a request in progress is
     * cancelled; a complete response still queued is dropped. */
    if (c->cur || nread != UV_EOF) {
      hconn_close(c, false);
      return;
    }
    c->read_eof = true;
    uv_read_stop(s);
    mark_dirty(c);
    return;
  }
  if (nread == 0) return;
  if (c->in.len + (size_t)nread > TP_MOCK_HTTP_MAX_HEAD_BYTES + HTTP_MAX_BODY_BYTES) {
    hconn_close(c, false);
    return;
  }
  if (tp_buf_append(&c->in, buf->base, (size_t)nread) != 0) {
    hconn_close(c, false);
    return;
  }
  c->m->arrival_ns = c->m->read_stamp_ns;
  if (!c->cur) process_input(c);
  c->m->arrival_ns = 0;
}

static void on_hconnection(uv_stream_t *server, int status) {
  tp_mock *m = server->data;
  if (status < 0 || m->stopping) return;
  hconn *c = calloc(1, sizeof(*c));
  if (!c) return;
  c->m = m;
  c->tcp.data = c;
  if (!tp__mock_accept(m, server, &c->tcp, on_hconn_closed)) return;
  tp_buf_init(&c->in);
  tp_buf_init(&c->out);
  tp_timer_init(&c->trickle_timer, on_trickle, c);
  tp_timer_init(&c->idle_timer, on_idle, c);
  c->next = m->hconns;
  if (m->hconns) m->hconns->prev = c;
  m->hconns = c;
  if (uv_read_start((uv_stream_t *)&c->tcp, on_halloc, on_hread) != 0) hconn_close(c, false);
}

/* ---- lifecycle --------------------------------------------------------------------------- */

int tp__mock_http_check_config(tp_mock *m, char *err, size_t errlen) {
  tp_mock_dialect d = TP_MOCK_DIALECT_VLLM;
  if (m->cfg.http_dialect && tp_mock_dialect_parse(m->cfg.http_dialect, &d) != 0) {
    tp_seterr(err, errlen, "tokperf mock: unknown HTTP dialect '%s' (expected vllm, llamacpp, tgi or trtllm-serve)",
              m->cfg.http_dialect);
    return TP_EINVAL;
  }
  /* Parsed once; the caller's string need not outlive tp_mock_start. */
  m->dialect = (int)d;
  m->cfg.http_dialect = tp_mock_dialect_name(d);
  if (m->cfg.sse_keepalive_ms < -1) {
    tp_seterr(err, errlen, "tokperf mock: sse_keepalive_ms %lld (use -1 for the dialect's own, 0 for none, or ms)",
              (long long)m->cfg.sse_keepalive_ms);
    return TP_EINVAL;
  }
  return 0;
}

int tp__mock_http_bind(tp_mock *m, const struct sockaddr *addr, char *err, size_t errlen) {
  struct sockaddr_storage a;
  memset(&a, 0, sizeof(a));
  size_t al = addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
  memcpy(&a, addr, al);
  if (a.ss_family == AF_INET6)
    ((struct sockaddr_in6 *)&a)->sin6_port = htons((uint16_t)m->http_port);
  else
    ((struct sockaddr_in *)&a)->sin_port = htons((uint16_t)m->http_port);
  uv_tcp_init(&m->loop, &m->http_listener);
  m->http_listener.data = m;
  m->http_on = true;
  int rv = uv_tcp_bind(&m->http_listener, (const struct sockaddr *)&a, 0);
  int port = 0;
  if (rv == 0) {
    struct sockaddr_storage ss;
    int sl = sizeof(ss);
    if (uv_tcp_getsockname(&m->http_listener, (struct sockaddr *)&ss, &sl) == 0)
      port = ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                      : ntohs(((struct sockaddr_in *)&ss)->sin_port);
  }
  /* libuv keeps EADDRINUSE for listen() to report; an unbound socket
   * shows port 0. */
  if (rv == 0 && (port == 0 || (m->http_port && port != m->http_port))) rv = UV_EADDRINUSE;
  if (rv != 0) {
    tp_seterr(err, errlen,
              "tokperf mock: cannot listen for HTTP on port %d: %s (is another server using it? choose another "
              "HTTP port, 0 for any free one, or -1 for no HTTP)",
              m->http_port, uv_strerror(rv));
    return TP_ECONNECT;
  }
  m->http_port = port;
  return 0;
}

int tp__mock_http_start_listening(tp_mock *m) {
  return uv_listen((uv_stream_t *)&m->http_listener, 1024, on_hconnection);
}

void tp__mock_http_shutdown(tp_mock *m) {
  if (!m->http_on) return;
  uv_close((uv_handle_t *)&m->http_listener, NULL);
  while (m->hconns) hconn_close(m->hconns, false);
}

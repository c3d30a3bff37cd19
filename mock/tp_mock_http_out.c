/* The HTTP/1.1 side's output: response heads and bodies, chunked streams
 * and error bodies, gathered per connection and written once per loop
 * iteration from the server's check handle. */
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

#define HTTP_WRITE_HIGH_WATER_BYTES (4u << 20)
#define HTTP_FILL_PIECE_BYTES (64u << 10)

/* ---- output ------------------------------------------------------------------------------ */

void tp__mock_hconn_dirty(hconn *c) {
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
void tp__mock_http_respond(hconn *c, int status, const char *ctype, const void *body, size_t len) {
  tp_buf_printf(&c->out, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n", status,
                reason_phrase(status), ctype, len);
  if (status == 405) tp_buf_append_str(&c->out, "Allow: GET, POST\r\n");
  if (c->req_id[0]) tp_buf_printf(&c->out, "x-request-id: %s\r\n", c->req_id);
  tp_buf_append_str(&c->out, c->close_after ? "Connection: close\r\n\r\n" : "Connection: keep-alive\r\n\r\n");
  tp_buf_append(&c->out, body, len);
  tp__mock_hconn_dirty(c);
}

void tp__mock_http_respond_buf(hconn *c, int status, const char *ctype, const tp_buf *b) {
  tp__mock_http_respond(c, status, ctype, b->data ? b->data : (const uint8_t *)"", b->len);
}

/* Triton's error body ({"error":"…"}). */
void tp__mock_http_triton_error(hconn *c, int status, const char *msg) {
  tp_buf b;
  tp_buf_init(&b);
  tp_mock_generate_error(&b, msg, false);
  tp__mock_http_respond_buf(c, status, "application/json", &b);
  tp_buf_fini(&b);
}

void tp__mock_http_oai_error(hconn *c, tp_mock_dialect d, int status, const char *msg) {
  tp_buf b;
  tp_buf_init(&b);
  tp_mock_oai_error_body(&b, d, msg, status);
  tp__mock_http_respond_buf(c, status, "application/json", &b);
  tp_buf_fini(&b);
}

/* The head of a streamed response (chunked, or close-delimited for an
 * HTTP/1.0 client). */
void tp__mock_http_stream_head(hreq *r) {
  if (r->head_sent) return;
  hconn *c = r->c;
  r->head_sent = true;
  tp_buf_append_str(&c->out,
                    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\n"
                    "Cache-Control: no-cache\r\n");
  if (c->req_id[0]) tp_buf_printf(&c->out, "x-request-id: %s\r\n", c->req_id);
  if (c->http10) {
    c->close_after = true;
    tp_buf_append_str(&c->out, "Connection: close\r\n\r\n");
  } else {
    tp_buf_append_str(&c->out, c->close_after
                                   ? "Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
                                   : "Transfer-Encoding: chunked\r\nConnection: keep-alive\r\n\r\n");
  }
  tp__mock_hconn_dirty(c);
}

/* One piece of a streamed body. */
void tp__mock_http_stream_data(hreq *r, const void *p, size_t n) {
  hconn *c = r->c;
  if (n == 0) return;
  tp__mock_http_stream_head(r);
  if (c->http10) {
    tp_buf_append(&c->out, p, n);
  } else {
    tp_buf_printf(&c->out, "%zx\r\n", n);
    tp_buf_append(&c->out, p, n);
    tp_buf_append(&c->out, "\r\n", 2);
  }
  tp__mock_hconn_dirty(c);
}

void tp__mock_http_stream_end(hreq *r) {
  hconn *c = r->c;
  tp__mock_http_stream_head(r);
  /* As llama-server does: the head said keep-alive, the socket closes. */
  if (c->m->cfg.close_after_stream) c->drop_after = true;
  if (!c->http10) tp_buf_append(&c->out, "0\r\n\r\n", 5);
  tp__mock_hconn_dirty(c);
}

void tp__mock_http_log_response(hreq *r, uint64_t queued_ns, const char *text, size_t len, bool final) {
  hconn *c = r->c;
  size_t off = SIZE_MAX;
  tp__mock_log_response(c->m, &r->job, r->index++, queued_ns, text, len, final, &off);
  if (off == SIZE_MAX) return;
  http_blank b = {c->out_base + c->out.len, off, queued_ns};
  if (tp_buf_append(&c->blanks, &b, sizeof(b))) tp__mock_log_fill(c->m, off, queued_ns);
}

/* The responses whose last byte lies before stream position upto leave
 * now, at t_ns (0: each at its queue time). */
static void fill_upto(hconn *c, uint64_t upto, uint64_t t_ns) {
  size_t n = c->blanks.len / sizeof(http_blank);
  while (c->blanks_head < n) {
    http_blank b;
    memcpy(&b, c->blanks.data + c->blanks_head * sizeof(b), sizeof(b));
    if (b.end > upto) break;
    tp__mock_log_fill(c->m, b.off, t_ns ? t_ns : b.queued_ns);
    c->blanks_head++;
  }
  if (c->blanks_head == n) {
    tp_buf_reset(&c->blanks);
    c->blanks_head = 0;
  }
}

void tp__mock_http_fill_blanks(hconn *c) {
  fill_upto(c, UINT64_MAX, 0);
  tp_buf_fini(&c->blanks);
  c->blanks_head = 0;
}

static void on_hwrite(void *data, size_t len, int status) {
  hconn *c = data;
  c->write_bytes -= len;
  if (c->closing) return;
  if (status < 0) {
    tp__mock_hconn_close(c, false);
    return;
  }
  tp__mock_hconn_dirty(c);
}

static int write_bytes(hconn *c, const uint8_t *p, size_t n) {
  char *d = malloc(n);
  if (!d) return TP_ENOMEM;
  memcpy(d, p, n);
  int rv = tp__mock_write(&c->tcp, d, n, c, on_hwrite);
  if (rv) return rv;
  c->write_bytes += n;
  return 0;
}

void tp__mock_http_on_trickle(tp_timer *t, uint64_t now_ns) {
  hconn *c = t->data;
  c->trickle_ready = true;
  tp__mock_hconn_dirty(c);
}

/* Writes what is queued (one byte per ms when trickling; filler for the
 * oversize fault), then takes the next pipelined request or closes the
 * connection when the response is out and that was asked for. */
static void hconn_flush(hconn *c) {
  tp_mock *m = c->m;
  if (!c->cur && !c->close_after && !c->drop_after && !c->reset_after && c->in.len && !c->closing)
    tp__mock_http_process_input(c);
  while (!c->closing && !c->hold && c->write_bytes < HTTP_WRITE_HIGH_WATER_BYTES) {
    size_t avail = c->out.len - c->out_off;
    if (avail == 0 && c->fill_left) {
      /* The oversize body, made up as the socket takes it: one SSE data
       * line (or JSON string) of 'x'. */
      c->out_base += c->out.len;
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
        if (!tp_timer_active(&c->trickle_timer))
          tp_timer_start(m->timers, &c->trickle_timer, tp_now_ns() + TP__MOCK_TRICKLE_NS);
        break;
      }
      c->trickle_ready = false;
      n = 1;
    }
    if (c->blanks.len) fill_upto(c, c->out_base + c->out_off + n, tp_now_ns());
    if (write_bytes(c, c->out.data + c->out_off, n) != 0) {
      tp__mock_hconn_close(c, false);
      return;
    }
    c->out_off += n;
    if (c->trickle) break;
  }
  if (c->closing) return;
  if (c->out_off == c->out.len) {
    c->out_base += c->out.len;
    tp_buf_reset(&c->out);
    c->out_off = 0;
  } else if (c->out_off >= (1u << 20)) {
    memmove(c->out.data, c->out.data + c->out_off, c->out.len - c->out_off);
    c->out_base += c->out_off;
    c->out.len -= c->out_off;
    c->out_off = 0;
  }
  if (c->out.len == 0 && !c->fill_left && c->write_bytes == 0) {
    if (c->reset_after) {
      tp__mock_hconn_close(c, true);
      return;
    }
    if ((c->close_after || c->drop_after || c->read_eof) && !c->cur) {
      tp__mock_hconn_close(c, false);
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

/* A header value as it may go back into a head and the log: printable
 * ASCII only (a value with anything else is dropped), cut to the room. */
static void take_value(const tp_mock_http_span *v, char *out, size_t room) {
  out[0] = 0;
  if (!v || v->len == 0 || v->len >= room) return;
  for (size_t i = 0; i < v->len; i++)
    if ((unsigned char)v->p[i] < 0x20 || (unsigned char)v->p[i] > 0x7e) return;
  memcpy(out, v->p, v->len);
  out[v->len] = 0;
}

void tp__mock_http_take_ids(hconn *c, const tp_mock_http_req *h) {
  take_value(tp_mock_http_header_get(h, "x-request-id"), c->req_id, sizeof(c->req_id));
  take_value(tp_mock_http_header_get(h, "traceparent"), c->traceparent, sizeof(c->traceparent));
}

bool tp__mock_http_job_ids(hconn *c, tp__mock_job *j) {
  if (c->req_id[0] && !(j->request_id = strdup(c->req_id))) return false;
  if (c->traceparent[0] && !(j->traceparent = strdup(c->traceparent))) return false;
  return true;
}

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
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "config.h"

#include "mock/tp_mock_http_conn.h"
#include "mock/tp_mock_http_parse.h"
#include "mock/tp_mock_internal.h"
#include "mock/tp_mock_sse.h"
#include "util/tp_common.h"
#include "util/tp_timer.h"
#include "tokperf/mock.h"
#include "util/tp_stamp.h"

#define HTTP_MAX_BODY_BYTES (64u << 20)
/* GPU figures of /metrics: an 80 GiB card, 75 W idle, 700 W flat out;
 * weights and the KV pool are allocated at start, as vLLM and TensorRT-LLM
 * do (128 KiB of KV per token, an 8B model in 16 bits). */
#define GPU_MEMORY_TOTAL_BYTES (80ull << 30)
#define GPU_WEIGHTS_BYTES (16ull << 30)
#define KV_BYTES_PER_TOKEN (128ull << 10)
#define GPU_IDLE_W 75.0
#define GPU_MAX_W 700.0

/* ---- other endpoints --------------------------------------------------------------------- */

static void respond_models(hconn *c) {
  tp_buf b;
  tp_buf_init(&b);
  uint64_t now = 0;
  uv_timeval64_t tv;
  if (uv_gettimeofday(&tv) == 0) now = (uint64_t)tv.tv_sec;
  tp_buf_append_str(&b, "{\"object\":\"list\",\"data\":[");
  /* The served names first (a client taking the first model picks one),
   * then the models themselves. */
  const char *served = c->m->cfg.served_model_name;
  size_t n = 0;
  for (const char *p = served; p && *p;) {
    size_t len = strcspn(p, ",");
    size_t nl = strcspn(p, "=,");
    if (nl)
      tp_buf_printf(&b,
                    "%s{\"id\":\"%.*s\",\"object\":\"model\",\"created\":%llu,\"owned_by\":\"tokperf\","
                    "\"root\":\"vllm_model\",\"parent\":null,\"max_model_len\":32768}",
                    n++ ? "," : "", (int)nl, p, (unsigned long long)now);
    p += len;
    if (*p == ',') p++;
  }
  const char *names[] = {"vllm_model", "ensemble"};
  for (size_t i = 0; i < TP_ARRAY_LEN(names); i++)
    tp_buf_printf(&b,
                  "%s{\"id\":\"%s\",\"object\":\"model\",\"created\":%llu,\"owned_by\":\"tokperf\","
                  "\"root\":\"%s\",\"parent\":null,\"max_model_len\":32768}",
                  n++ ? "," : "", names[i], (unsigned long long)now, names[i]);
  tp_buf_append_str(&b, "]}");
  tp__mock_http_respond_buf(c, 200, "application/json", &b);
  tp_buf_fini(&b);
}

static void tensors_json(tp_buf *b, const tp__mock_tensor *t, size_t n) {
  tp_buf_append(b, "[", 1);
  for (size_t i = 0; i < n; i++) {
    tp_buf_printf(b, "%s{\"name\":\"%s\",\"datatype\":\"%s\",\"shape\":[", i ? "," : "", t[i].name,
                  t[i].datatype);
    for (size_t k = 0; k < t[i].n_dims; k++)
      tp_buf_printf(b, "%s%lld", k ? "," : "", (long long)t[i].dims[k]);
    tp_buf_append_str(b, "]}");
  }
  tp_buf_append(b, "]", 1);
}

static void respond_model_metadata(hconn *c, const tp__mock_model *md) {
  tp_buf b;
  tp_buf_init(&b);
  tp_buf_printf(&b, "{\"name\":\"%s\",\"versions\":[\"1\"],\"platform\":\"%s\",\"inputs\":", md->name,
                md->platform);
  tensors_json(&b, md->inputs, md->n_inputs);
  tp_buf_append_str(&b, ",\"outputs\":");
  tensors_json(&b, md->outputs, md->n_outputs);
  tp_buf_append(&b, "}", 1);
  tp__mock_http_respond_buf(c, 200, "application/json", &b);
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
  g->energy_j =
      GPU_IDLE_W * (double)(now - m->start_ns) / 1e9 + (GPU_MAX_W - GPU_IDLE_W) * (double)busy / 1e9;
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
    tp__mock_http_respond(c, 500, "text/plain", "out of memory\n", 14);
    return;
  }
  tp__mock_http_respond_buf(c, 200, "text/plain; version=0.0.4; charset=utf-8", &b);
  tp_buf_fini(&b);
}

static void respond_stats(hconn *c, int which) {
  tp_buf b;
  tp_buf_init(&b);
  if (tp_mock_stats_json(&b, &c->m->stats, which) != 0) {
    tp_buf_fini(&b);
    tp__mock_http_triton_error(c, 500, "out of memory");
    return;
  }
  tp__mock_http_respond_buf(c, 200, "application/json", &b);
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

/* /v2/models/{m}[/versions/{v}][/{action}] (p and plen after "/v2/models/").
 * Returns false when no such endpoint is served here. */
static bool dispatch_model(hconn *c, const tp_mock_http_req *h, const char *p, size_t plen,
                           const uint8_t *body, size_t body_len, bool get, bool post) {
  model_path mp;
  char err[300];
  if (!parse_model_path(p, plen, &mp)) {
    tp__mock_http_triton_error(c, 404, "Not Found");
    return true;
  }
  if (strcmp(mp.action, "stats") == 0) {
    int i = stats_index(mp.model);
    if (i < 0 || (mp.has_version && strcmp(mp.version, "1") != 0)) {
      snprintf(err, sizeof(err), "requested model '%s' is not available", mp.model);
      tp__mock_http_triton_error(c, 400, err);
      return true;
    }
    respond_stats(c, i);
    return true;
  }
  const tp__mock_model *md = tp__mock_find_model(mp.model);
  bool bad_version = md && mp.has_version && strcmp(mp.version, "1") != 0;
  if (!md || bad_version) {
    if (bad_version)
      snprintf(err, sizeof(err), "Request for unknown model: '%s' version %s is not found", mp.model,
               mp.version);
    else
      snprintf(err, sizeof(err), "Request for unknown model: '%s' is not found", mp.model);
    /* Triton answers a readiness probe of an unknown model with 400. */
    tp__mock_http_triton_error(c, strcmp(mp.action, "ready") == 0 ? 400 : 404, err);
    return true;
  }
  if (mp.action[0] == 0 || strcmp(mp.action, "ready") == 0) {
    if (!get) {
      tp__mock_http_triton_error(c, 405, "Method Not Allowed");
      return true;
    }
    if (mp.action[0])
      tp__mock_http_respond(c, 200, "text/plain", "", 0);
    else
      respond_model_metadata(c, md);
    return true;
  }
  if (strcmp(mp.action, "generate") == 0 || strcmp(mp.action, "generate_stream") == 0) {
    if (!post) {
      tp__mock_http_triton_error(c, 405, "Method Not Allowed");
      return true;
    }
    tp__mock_http_start_generate(c, h, md, body, body_len, mp.action[8] == '_');
    return true;
  }
  return false;
}

static void respond_server_metadata(hconn *c) {
  tp_buf b;
  tp_buf_init(&b);
  tp_buf_append_str(&b, "{\"name\":\"tokperf-mock\",\"version\":\"" TP_VERSION
                        "\",\"extensions\":[\"parameters\",\"binary_tensor_data\",\"statistics\","
                        "\"generate\"]}");
  tp__mock_http_respond_buf(c, 200, "application/json", &b);
  tp_buf_fini(&b);
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
  tp_mock_dialect d = tp__mock_http_dialect(m);

  if (seg_eq(p, plen, "/v1/completions") || seg_eq(p, plen, "/v1/chat/completions")) {
    if (!post) {
      tp__mock_http_oai_error(c, d, 405, "Method Not Allowed");
      return;
    }
    tp__mock_http_start_openai(c, h, body, body_len, p[4] == 'c' && p[5] == 'h' ? API_CHAT : API_COMPLETIONS);
    return;
  }
  if (seg_eq(p, plen, "/v1/models")) {
    if (!get) {
      tp__mock_http_oai_error(c, d, 405, "Method Not Allowed");
      return;
    }
    respond_models(c);
    return;
  }
  if (seg_eq(p, plen, "/metrics")) {
    if (!get) {
      tp__mock_http_respond(c, 405, "text/plain", "Method Not Allowed\n", 19);
      return;
    }
    respond_metrics(c);
    return;
  }
  if (seg_eq(p, plen, "/v2/health/live") || seg_eq(p, plen, "/v2/health/ready")) {
    if (!get) {
      tp__mock_http_triton_error(c, 405, "Method Not Allowed");
      return;
    }
    tp__mock_http_respond(c, 200, "text/plain", "", 0);
    return;
  }
  if (seg_eq(p, plen, "/v2")) {
    respond_server_metadata(c);
    return;
  }
  if (seg_eq(p, plen, "/v2/models/stats")) {
    respond_stats(c, TP_MOCK_SM_COUNT);
    return;
  }
  if (plen > 11 && memcmp(p, "/v2/models/", 11) == 0 &&
      dispatch_model(c, h, p + 11, plen - 11, body, body_len, get, post))
    return;
  if (plen >= 4 && memcmp(p, "/v1/", 4) == 0)
    tp__mock_http_oai_error(c, d, 404, "Not Found");
  else
    tp__mock_http_triton_error(c, 404, "Not Found");
}

/* ---- connections ------------------------------------------------------------------------- */

/* Parses and answers buffered requests while none is in progress. */
void tp__mock_http_process_input(hconn *c) {
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
        tp__mock_http_triton_error(c, 431, "request head too large");
      else if (n == TP_EUNSUPPORTED)
        tp__mock_http_triton_error(c, 505, "only HTTP/1.0 and HTTP/1.1 are served here");
      else
        tp__mock_http_triton_error(c, 400, "malformed HTTP request");
      tp_buf_reset(&c->in);
      return;
    }
    uint64_t blen;
    int rv = tp_mock_http_body_length(&h, &blen);
    if (rv) {
      c->close_after = true;
      tp__mock_count(&c->m->n_http_requests, 1);
      if (rv == TP_EUNSUPPORTED)
        tp__mock_http_triton_error(c, 411,
                                   "request bodies must come with Content-Length (no Transfer-Encoding)");
      else
        tp__mock_http_triton_error(c, 400, "malformed Content-Length");
      tp_buf_reset(&c->in);
      return;
    }
    if (blen > HTTP_MAX_BODY_BYTES) {
      c->close_after = true;
      tp__mock_count(&c->m->n_http_requests, 1);
      tp__mock_http_triton_error(c, 413, "request body larger than 64 MiB");
      tp_buf_reset(&c->in);
      return;
    }
    if ((uint64_t)(c->in.len - (size_t)n) < blen) return; /* the body is still coming */
    c->http10 = h.minor_version == 0;
    tp__mock_http_take_ids(c, &h);
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
    tp__mock_hconn_idle_arm(c, now_ns);
    return;
  }
  tp__mock_hconn_close(c, false);
}

void tp__mock_hconn_idle_arm(hconn *c, uint64_t now_ns) {
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
void tp__mock_hconn_close(hconn *c, bool reset) {
  if (c->closing) return;
  tp_mock *m = c->m;
  c->closing = true;
  if (c->dirty) {
    hconn **pp = &m->hdirty;
    while (*pp && *pp != c) pp = &(*pp)->dirty_next;
    if (*pp) *pp = c->dirty_next;
    c->dirty = false;
  }
  if (c->cur) tp__mock_hreq_free(c->cur, TP__MOCK_CANCELLED);
  if (m->timers) tp_timer_stop(m->timers, &c->trickle_timer);
  if (m->timers) tp_timer_stop(m->timers, &c->idle_timer);
  tp_buf_fini(&c->in);
  tp__mock_http_fill_blanks(c);
  tp_buf_fini(&c->out);
  if (c->prev)
    c->prev->next = c->next;
  else
    m->hconns = c->next;
  if (c->next) c->next->prev = c->prev;
  if (!reset || uv_tcp_close_reset(&c->tcp, on_hconn_closed) != 0)
    uv_close((uv_handle_t *)&c->tcp, on_hconn_closed);
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
      tp__mock_hconn_close(c, false);
      return;
    }
    c->read_eof = true;
    uv_read_stop(s);
    tp__mock_hconn_dirty(c);
    return;
  }
  if (nread == 0) return;
  if (c->in.len + (size_t)nread > TP_MOCK_HTTP_MAX_HEAD_BYTES + HTTP_MAX_BODY_BYTES) {
    tp__mock_hconn_close(c, false);
    return;
  }
  if (tp_buf_append(&c->in, buf->base, (size_t)nread) != 0) {
    tp__mock_hconn_close(c, false);
    return;
  }
  c->m->arrival_ns = c->m->read_stamp_ns;
  if (!c->cur) tp__mock_http_process_input(c);
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
  tp_timer_init(&c->trickle_timer, tp__mock_http_on_trickle, c);
  tp_timer_init(&c->idle_timer, on_idle, c);
  c->next = m->hconns;
  if (m->hconns) m->hconns->prev = c;
  m->hconns = c;
  if (uv_read_start((uv_stream_t *)&c->tcp, on_halloc, on_hread) != 0) tp__mock_hconn_close(c, false);
}

/* ---- lifecycle --------------------------------------------------------------------------- */

int tp__mock_http_check_config(tp_mock *m, char *err, size_t errlen) {
  tp_mock_dialect d = TP_MOCK_DIALECT_VLLM;
  if (m->cfg.http_dialect && tp_mock_dialect_parse(m->cfg.http_dialect, &d) != 0) {
    tp_seterr(err, errlen,
              "tokperf mock: unknown HTTP dialect '%s' (expected vllm, llamacpp, tgi or trtllm-serve)",
              m->cfg.http_dialect);
    return TP_EINVAL;
  }
  /* Parsed once; the caller's string need not outlive tp_mock_start. */
  m->dialect = (int)d;
  m->cfg.http_dialect = tp_mock_dialect_name(d);
  if (m->cfg.sse_keepalive_ms < -1) {
    tp_seterr(err, errlen,
              "tokperf mock: sse_keepalive_ms %lld (use -1 for the dialect's own, 0 for none, or ms)",
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
  tp__mock_set_port(&a, m->http_port);
  uv_tcp_init(&m->loop, &m->http_listener);
  m->http_listener.data = m;
  m->http_on = true;
  int rv = uv_tcp_bind(&m->http_listener, (const struct sockaddr *)&a, 0);
  int port = rv == 0 ? tp__mock_bound_port(&m->http_listener) : 0;
  /* libuv keeps EADDRINUSE for listen() to report; an unbound socket
   * shows port 0. */
  if (rv == 0 && (port == 0 || (m->http_port && port != m->http_port))) rv = UV_EADDRINUSE;
  if (rv != 0) {
    tp_seterr(
        err, errlen,
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
  while (m->hconns) tp__mock_hconn_close(m->hconns, false);
}

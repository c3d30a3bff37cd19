/* The Triton client: the KServe v2 adapter (tp_triton) over the HTTP/2 gRPC
 * pool (tp_h2c).  One gRPC call per inference request. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/tp_grpc_headers.h"
#include "api/tp_triton.h"
#include "client/tp_client_triton.h"
#include "transport/tp_grpc.h"
#include "transport/tp_h2c.h"
#include "util/tp_wake.h"
#include "tokperf/tokperf.h"

#define PREFLIGHT_TIMEOUT_NS (10 * TP_NS_PER_S)

typedef struct triton_client {
  tp_client base;
  uv_loop_t *loop;
  tp_client_opts opts;
  tp_client_cbs cbs;
  char target[300];
  char host[300]; /* the pool names it at every TLS connection, for the whole run */
  tp_triton_opts topts;
  tp_h2c_pool *pool;
  tp_buf reqbuf;
  tp_triton_model_meta *meta; /* kept with file_inputs: the inputs' datatypes */
  char **hdr; /* name, value pairs (names lower-cased, as HTTP/2 needs) */
  size_t n_hdr;
} triton_client;

/* Per call: the run's request and whether its final response came. */
typedef struct call_ctx {
  triton_client *tc;
  void *req;
  tp_call *call;
  bool final_seen;
  /* Echo models (tp_triton_opts.echo): the prompt sent, and how many bytes
   * of the answer's text were passed on, so that each response gives only
   * its new text. */
  char *prompt;
  size_t prompt_len, seen;
  bool echo_checked;
  char server_id[64]; /* the first response's id, "" = none yet */
} call_ctx;

/* The new text of an echo model's response: past the prompt (when the text
 * starts with it) and past what earlier responses gave. */
static void echo_delta(call_ctx *x, const uint8_t **text, size_t *len) {
  if (!x->echo_checked) {
    x->echo_checked = true;
    if (*len >= x->prompt_len && x->prompt_len && memcmp(*text, x->prompt, x->prompt_len) == 0)
      x->seen = x->prompt_len;
  }
  size_t skip = x->seen <= *len ? x->seen : *len;
  *text += skip;
  *len -= skip;
  x->seen += *len;
}

static void call_free(call_ctx *x) {
  free(x->prompt);
  free(x);
}

/* ---- checks before the run: blocking unary calls ------------------------ */

typedef struct unary_ctx {
  uv_loop_t *loop;
  bool done;
  tp_buf resp;
  bool got_msg;
  int grpc_status;
  tp_error_class cls;
  char message[256];
} unary_ctx;

static void unary_on_message(tp_call *c, const uint8_t *d, size_t n, uint64_t t, void *ud) {
  unary_ctx *u = ud;
  if (u->got_msg) return;
  u->got_msg = true;
  tp_buf_append(&u->resp, d, n);
}

static void unary_on_close(tp_call *c, const tp_call_result *res, void *ud) {
  unary_ctx *u = ud;
  u->done = true;
  tp_wake(u->loop); /* a deadline sweep (a timer) may end the call */
  u->grpc_status = res->grpc_status;
  u->cls = res->err_class;
  snprintf(u->message, sizeof(u->message), "%s", res->message ? res->message : "");
}

/* Runs one unary call to completion on the loop. */
static int unary(triton_client *tc, const char *method, const uint8_t *body, size_t len, unary_ctx *u) {
  static const tp_call_cbs cbs = {unary_on_message, unary_on_close};
  char path[128];
  snprintf(path, sizeof(path), TP_TRITON_SERVICE "%s", method);
  tp_buf_fini(&u->resp);
  memset(u, 0, sizeof(*u));
  u->loop = tc->loop;
  int rv = tp_h2c_call(tc->pool, path, body, len, PREFLIGHT_TIMEOUT_NS, &cbs, u, NULL);
  if (rv) return rv;
  while (!u->done) uv_run(tc->loop, UV_RUN_ONCE);
  return 0;
}

static int triton_preflight(tp_client *c, char *err, size_t errlen) {
  triton_client *tc = (triton_client *)c;
  const char *model = tc->opts.model;
  unary_ctx u;
  memset(&u, 0, sizeof(u));
  tp_buf body;
  tp_buf_init(&body);
  static const uint8_t empty[5] = {0, 0, 0, 0, 0};
  int rv = unary(tc, "ServerLive", empty, sizeof(empty), &u);
  if (rv) goto out;
  if (u.cls == TP_ERRCLASS_CONNECT || u.cls == TP_ERRCLASS_TIMEOUT) {
    /* The transport's message says already when the port speaks HTTP/1. */
    bool http1 = strstr(u.message, "answers HTTP/1.x") != NULL;
    tp_seterr(err, errlen, "%s%s", u.message,
              http1 ? "" : " (is the server up? check -u/--url; Triton's gRPC port is 8001)");
    rv = TP_ECONNECT;
    goto out;
  }
  bool live = false;
  if (u.grpc_status != 0 || tp_triton_parse_bool_response(u.resp.data, u.resp.len, &live) || !live) {
    tp_seterr(err, errlen, "server %s is not live%s%s%s", tc->target, u.grpc_status ? " (" : "",
              u.grpc_status ? u.message : "", u.grpc_status ? ")" : "");
    rv = TP_ECONNECT;
    goto out;
  }

  rv = tp_triton_build_model_request(&body, model, tc->opts.model_version);
  if (rv) goto out;
  rv = unary(tc, "ModelReady", body.data, body.len, &u);
  if (rv) goto out;
  bool ready = false;
  if (u.grpc_status == TP_GRPC_NOT_FOUND ||
      (u.grpc_status == 0 && !tp_triton_parse_bool_response(u.resp.data, u.resp.len, &ready) && !ready)) {
    tp_seterr(err, errlen, "model '%s' is not ready on %s%s%s (check -m/--model and the server's model "
              "repository)", model, tc->target, u.grpc_status ? ": " : "", u.grpc_status ? u.message : "");
    rv = TP_ENOTFOUND;
    goto out;
  }
  if (u.grpc_status != 0) {
    tp_seterr(err, errlen, "ModelReady for '%s' on %s failed: %s", model, tc->target, u.message);
    rv = u.cls == TP_ERRCLASS_CONNECT ? TP_ECONNECT : TP_ENOTFOUND;
    goto out;
  }
  rv = unary(tc, "ModelMetadata", body.data, body.len, &u);
  if (rv) goto out;
  if (u.grpc_status != 0) {
    tp_seterr(err, errlen, "ModelMetadata for '%s' on %s failed: %s", model, tc->target, u.message);
    rv = TP_ENOTFOUND;
    goto out;
  }
  tp_triton_model_meta *meta = malloc(sizeof(*meta));
  if (!meta) {
    rv = TP_ENOMEM;
    goto out;
  }
  if (tp_triton_parse_model_metadata(u.resp.data, u.resp.len, meta)) {
    tp_seterr(err, errlen, "ModelMetadata for '%s' from %s is not a valid message", model, tc->target);
    rv = TP_EPROTO;
  } else if (tc->opts.file_inputs) {
    rv = tp_triton_check_file_metadata(meta, &tc->topts, err, errlen);
    if (rv == 0) {
      free(tc->meta);
      tc->meta = meta;
      meta = NULL;
    }
  } else {
    rv = tp_triton_check_metadata(meta, &tc->topts, err, errlen);
  }
  free(meta);
out:
  tp_buf_fini(&u.resp);
  tp_buf_fini(&body);
  return rv;
}

/* ---- inference calls --------------------------------------------------- */

static void call_on_message(tp_call *c, const uint8_t *data, size_t len, uint64_t arrival_ns, void *ud) {
  call_ctx *x = ud;
  if (x->final_seen) return; /* nothing after the final response counts */
  tp_triton_event tev;
  tp_client_event ev;
  memset(&ev, 0, sizeof(ev));
  /* KServe v2 carries no usage or finish reason, and the gRPC status
   * comes only with the call's end. */
  ev.server_output_tokens = ev.prompt_tokens = ev.completion_tokens = ev.cached_tokens = -1;
  ev.status = -1;
  /* tev's text and error point into data, which outlives on_event. */
  if (tp_triton_parse_response(&tev, data, len, x->tc->opts.streaming)) {
    ev.bad_message = true;
    ev.error = "response is not a valid KServe v2 message";
    ev.error_class = TP_ERRCLASS_PROTOCOL;
    x->tc->cbs.on_event(x->req, &ev, arrival_ns);
    tp_h2c_cancel(c);
    return;
  }
  if (tev.id && tev.id_len && !x->server_id[0])
    snprintf(x->server_id, sizeof(x->server_id), "%.*s", (int)TP_MIN(tev.id_len, sizeof(x->server_id) - 1), tev.id);
  ev.text = tev.text;
  ev.text_len = tev.text_len;
  if (x->tc->topts.echo && ev.text) echo_delta(x, &ev.text, &ev.text_len);
  ev.final = tev.final;
  ev.server_output_tokens = tev.num_output_tokens;
  char msg[300];
  if (tev.error) {
    snprintf(msg, sizeof(msg), "server error: %.*s", (int)TP_MIN(tev.error_len, sizeof(msg)), tev.error);
    ev.error = msg;
    ev.error_class = TP_ERRCLASS_SERVER;
  }
  if (tev.final) x->final_seen = true;
  x->tc->cbs.on_event(x->req, &ev, arrival_ns);
}

static void call_on_close(tp_call *c, const tp_call_result *res, void *ud) {
  call_ctx *x = ud;
  tp_client_done d;
  memset(&d, 0, sizeof(d));
  d.err_class = res->err_class;
  d.status = res->grpc_status;
  d.message = res->message;
  d.sent_ns = res->sent_ns;
  d.end_ns = res->end_ns;
  d.resends = res->resends;
  if (d.err_class == TP_ERRCLASS_NONE && !x->final_seen) {
    d.err_class = TP_ERRCLASS_PROTOCOL;
    d.message = "call ended before the final response";
  }
  char server_id[sizeof(x->server_id)];
  memcpy(server_id, x->server_id, sizeof(server_id));
  d.server_id = server_id[0] ? server_id : NULL;
  void *req = x->req;
  triton_client *tc = x->tc;
  call_free(x);
  tc->cbs.on_done(req, &d);
}

static int triton_send(tp_client *c, const tp_client_send *s, void *req) {
  static const tp_call_cbs cbs = {call_on_message, call_on_close};
  triton_client *tc = (triton_client *)c;
  call_ctx *x = calloc(1, sizeof(*x));
  if (!x) return TP_ENOMEM;
  x->tc = tc;
  x->req = req;
  if (tc->topts.echo && s->prompt_len) {
    x->prompt = malloc(s->prompt_len);
    if (!x->prompt) {
      free(x);
      return TP_ENOMEM;
    }
    memcpy(x->prompt, s->prompt, s->prompt_len);
    x->prompt_len = s->prompt_len;
  }
  tp_buf_reset(&tc->reqbuf);
  char err[256];
  int rv = s->inputs && tc->meta
               ? tp_triton_build_infer_inputs(&tc->reqbuf, &tc->topts, tc->meta, s->id, s->inputs, err, sizeof(err))
               : tp_triton_build_infer(&tc->reqbuf, &tc->topts, s->id, s->prompt, s->prompt_len, s->max_tokens,
                                       s->min_tokens);
  /* The handle is stored first: the call may end (and free x) before
   * tp_h2c_call returns, when the connection fails at once. */
  if (s->handle) *s->handle = x;
  if (rv == 0)
    rv = tp_h2c_call_traced(tc->pool, s->session,
                            tc->opts.streaming ? TP_TRITON_SERVICE "ModelStreamInfer" : TP_TRITON_SERVICE "ModelInfer",
                            tc->reqbuf.data, tc->reqbuf.len, s->timeout_ns, s->traceparent, &cbs, x, &x->call);
  if (rv) {
    if (s->handle) *s->handle = NULL;
    call_free(x);
    return rv;
  }
  return 0;
}

static void triton_cancel(tp_client *c, void *handle) {
  call_ctx *x = handle;
  if (x && x->call) tp_h2c_cancel(x->call);
}

static void triton_cancel_all(tp_client *c) { tp_h2c_cancel_all(((triton_client *)c)->pool); }

static void free_headers(triton_client *tc) { tp__grpc_free_headers(tc->hdr, tc->n_hdr); }

static void triton_close(tp_client *c) {
  triton_client *tc = (triton_client *)c;
  if (tc->pool) tp_h2c_pool_close(tc->pool);
  tp_buf_fini(&tc->reqbuf);
  free(tc->meta);
  free_headers(tc);
  free(tc);
}

static int split_headers(triton_client *tc, const char *const *h, size_t n, char *err, size_t errlen) {
  return tp__grpc_split_headers(&tc->hdr, &tc->n_hdr, h, n, err, errlen);
}

static void triton_session_end(tp_client *c, uint64_t session) {
  tp_h2c_session_end(((triton_client *)(void *)c)->pool, session);
}

static const tp_client_ops triton_ops;

int tp_client_triton_new(tp_client **out, uv_loop_t *loop, const tp_client_opts *o,
                         const tp_client_cbs *cbs, char *err, size_t errlen) {
  triton_client *tc = calloc(1, sizeof(*tc));
  if (!tc) return TP_ENOMEM;
  tc->base.ops = &triton_ops;
  tc->loop = loop;
  tc->opts = *o;
  tc->cbs = *cbs;
  tp_buf_init(&tc->reqbuf);
  snprintf(tc->target, sizeof(tc->target), "%s", o->target);
  snprintf(tc->host, sizeof(tc->host), "%s", o->host ? o->host : "");
  /* The caller's strings are borrowed for this call only. */
  tc->opts.target = tc->target;
  tc->opts.host = tc->host;

  tc->topts.model = o->model;
  tc->topts.version = o->model_version;
  tc->topts.backend = o->backend;
  tc->topts.streaming = o->streaming;
  /* Defaults for when the checks are skipped: the usual layouts. */
  tc->topts.batch_dim = o->backend == TP_BACKEND_TENSORRTLLM;
  tc->topts.has_stream_input = true;
  tc->topts.has_min_length = true;
  tc->topts.has_exclude_input = o->backend == TP_BACKEND_VLLM;

  tp_h2c_opts ho;
  memset(&ho, 0, sizeof(ho));
  int rv = tp_h2c_resolve(tc->target, &ho.addr, err, errlen);
  if (rv) {
    free(tc);
    return rv;
  }
  ho.authority = tc->target;
  ho.connections = o->connections ? o->connections : 1;
  ho.max_msg_bytes = o->max_response_bytes ? o->max_response_bytes : (64u << 20);
  rv = split_headers(tc, o->headers, o->n_headers, err, errlen);
  if (rv) {
    free_headers(tc);
    free(tc);
    return rv;
  }
  ho.headers = (const char *const *)tc->hdr;
  ho.n_headers = tc->n_hdr;
  ho.tls = o->tls;
  ho.host = tc->host;
  ho.ca_file = o->ca_file;
  ho.cert_file = o->cert_file;
  ho.key_file = o->key_file;
  ho.insecure = o->insecure;
  ho.reader_thread = o->reader_thread;
  ho.yield_to = o->yield_to;
  rv = tp_h2c_pool_new(&tc->pool, loop, &ho, err, errlen);
  if (rv) {
    free_headers(tc);
    free(tc);
    return rv;
  }
  *out = &tc->base;
  return 0;
}

static int triton_model_stats(tp_client *c, tp_triton_model_counters **out, size_t *n, char *err, size_t errlen) {
  triton_client *tc = (triton_client *)c;
  tp_buf body;
  tp_buf_init(&body);
  /* Empty name and version: every model, so composing models come too. */
  int rv = tp_triton_build_model_request(&body, "", "");
  if (rv) return rv;
  unary_ctx u;
  memset(&u, 0, sizeof(u));
  rv = unary(tc, "ModelStatistics", body.data, body.len, &u);
  tp_buf_fini(&body);
  if (rv == 0) {
    if (u.grpc_status == TP_GRPC_UNIMPLEMENTED) {
      tp_seterr(err, errlen, "%s does not offer ModelStatistics", tc->target);
      rv = TP_EUNSUPPORTED;
    } else if (u.grpc_status != 0) {
      tp_seterr(err, errlen, "ModelStatistics on %s failed: %s", tc->target, u.message);
      rv = TP_ESERVER;
    } else if (tp_triton_parse_model_statistics(u.resp.data, u.resp.len, out, n)) {
      tp_seterr(err, errlen, "ModelStatistics from %s is not a valid message", tc->target);
      rv = TP_EPROTO;
    }
  }
  tp_buf_fini(&u.resp);
  return rv;
}

/* One ModelStatistics call in flight on the running loop. */
typedef struct stats_call {
  triton_client *tc;
  tp_client_stats_cb done;
  void *ud;
  unary_ctx u;
} stats_call;

static void stats_on_message(tp_call *c, const uint8_t *d, size_t n, uint64_t t, void *ud) {
  unary_on_message(c, d, n, t, &((stats_call *)ud)->u);
}

static void stats_on_close(tp_call *c, const tp_call_result *res, void *ud) {
  stats_call *sc = ud;
  unary_on_close(c, res, &sc->u);
  tp_triton_model_counters *counters = NULL;
  size_t n = 0;
  char err[640] = "";
  int rv = 0;
  if (sc->u.grpc_status != 0) {
    snprintf(err, sizeof(err), "ModelStatistics on %s failed: %s", sc->tc->target, sc->u.message);
    rv = TP_ESERVER;
  } else if (tp_triton_parse_model_statistics(sc->u.resp.data, sc->u.resp.len, &counters, &n)) {
    snprintf(err, sizeof(err), "ModelStatistics from %s is not a valid message", sc->tc->target);
    rv = TP_EPROTO;
  }
  sc->done(sc->ud, rv, counters, n, err);
  tp_buf_fini(&sc->u.resp);
  free(sc);
}

static int triton_model_stats_start(tp_client *c, tp_client_stats_cb done, void *ud) {
  static const tp_call_cbs cbs = {stats_on_message, stats_on_close};
  triton_client *tc = (triton_client *)c;
  stats_call *sc = calloc(1, sizeof(*sc));
  if (!sc) return TP_ENOMEM;
  sc->tc = tc;
  sc->done = done;
  sc->ud = ud;
  sc->u.loop = tc->loop;
  tp_buf body;
  tp_buf_init(&body);
  int rv = tp_triton_build_model_request(&body, "", "");
  if (!rv)
    rv = tp_h2c_call(tc->pool, TP_TRITON_SERVICE "ModelStatistics", body.data, body.len, PREFLIGHT_TIMEOUT_NS, &cbs,
                     sc, NULL);
  tp_buf_fini(&body);
  if (rv) free(sc);
  return rv;
}

static int triton_check_inputs(tp_client *c, const char *inputs, char *err, size_t errlen) {
  triton_client *tc = (triton_client *)c;
  if (!tc->meta) {
    tp_seterr(err, errlen, "the model's metadata was not read (preflight skipped?)");
    return TP_EINVAL;
  }
  tp_buf b;
  tp_buf_init(&b);
  int rv = tp_triton_build_infer_inputs(&b, &tc->topts, tc->meta, "check", inputs, err, errlen);
  tp_buf_fini(&b);
  if (rv == TP_ETOOBIG) tp_seterr(err, errlen, "the request is too large");
  return rv == TP_ENOMEM ? rv : rv ? TP_EINVAL : 0;
}

static uint32_t triton_connections_opened(const tp_client *c) {
  return tp_h2c_connections_opened(((const triton_client *)c)->pool);
}

static void triton_hold(tp_client *c, bool hold) {
  triton_client *tc = (triton_client *)c;
  if (tc->pool) tp_h2c_pool_hold(tc->pool, hold);
}

static const tp_client_ops triton_ops = {
    .name = "triton-grpc",
    .preflight = triton_preflight,
    .send = triton_send,
    .close = triton_close,
    .cancel = triton_cancel,
    .cancel_all = triton_cancel_all,
    .session_end = triton_session_end,
    .model_stats = triton_model_stats,
    .model_stats_start = triton_model_stats_start,
    .check_inputs = triton_check_inputs,
    .connections_opened = triton_connections_opened,
    .hold = triton_hold,
};

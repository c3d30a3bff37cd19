/* The engine clients (tp_client_engine.h): the engine adapter (tp_engine)
 * over the HTTP/2 gRPC pool (tp_h2c).  One Generate call per request. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "client/tp_grpc_headers.h"
#include "api/tp_engine.h"
#include "api/tp_openai.h"
#include "client/tp_client_engine.h"
#include "transport/tp_grpc.h"
#include "transport/tp_h2c.h"
#include "util/tp_u64map.h"
#include "util/tp_wake.h"
#include "tokperf/tokperf.h"

/* SGLang's HealthCheck runs a one-token generation and waits for it. */
#define PREFLIGHT_TIMEOUT_NS (30 * TP_NS_PER_S)
#define ABORT_TIMEOUT_NS (5 * TP_NS_PER_S)
/* The prompts' token ids are kept per distinct text, up to these bounds
 * (a run that makes every prompt unique, --cache-bust, encodes each one). */
#define CACHE_MAX_ENTRIES 65536u
#define CACHE_MAX_BYTES (256u << 20)

typedef struct engine_call engine_call;

/* One prompt's ids, kept by its text. */
typedef struct cached_ids {
  char *text;
  size_t text_len;
  int32_t *ids;
  size_t n;
} cached_ids;

typedef struct engine_client {
  tp_client base;
  uv_loop_t *loop;
  tp_client_opts opts;
  tp_client_cbs cbs;
  tp_engine_proto proto;
  char target[300];
  char host[300];
  char path_generate[96], path_abort[96];
  tp_h2c_pool *pool;
  tp_buf reqbuf;
  char **hdr; /* name, value pairs (lower-case names, as HTTP/2 needs) */
  size_t n_hdr;
  tp_engine_sampling sampling;
  bool have_sampling;
  tp_engine_decoder dec;
  /* encode's answers, by a hash of the text. */
  tp_u64map cache_index;
  cached_ids *cache;
  size_t n_cache, cap_cache, cache_bytes;
  engine_call *calls; /* Generate calls in flight */
  tp_engine_model_info info;
  bool have_info;
  bool closing;
  char warning[1400];
} engine_client;

/* One Generate call: the run's request and what its responses added up to. */
struct engine_call {
  engine_client *ec;
  void *req;
  tp_call *call;
  engine_call *prev, *next;
  bool final_seen;
  bool aborted; /* the service's Abort went out for it */
  uint32_t chunks;
  uint64_t ids;         /* output ids counted so far */
  int64_t server_total; /* SGLang: the last running completion count */
  char id[96];
  char server_id[64]; /* the server's request id (SGLang's answers carry it), "" = none */
};

/* ---- token ids ----------------------------------------------------------- */

/* 64-bit hash of the text, never 0 (the map's empty key). */
static uint64_t text_hash(const char *s, size_t n) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ n;
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    memcpy(&w, s + i, 8);
    h = (h ^ w) * 0xff51afd7ed558ccdull;
    h ^= h >> 32;
  }
  for (; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001b3ull;
  h ^= h >> 29;
  return h ? h : 1;
}

static void cache_free(engine_client *ec) {
  for (size_t i = 0; i < ec->n_cache; i++) {
    free(ec->cache[i].text);
    free(ec->cache[i].ids);
  }
  free(ec->cache);
  tp_u64map_fini(&ec->cache_index);
}

/* The prompt's ids: from the cache, or encoded now (and kept when there is
 * room).  *owned says the caller frees them.  Returns 0 or the encoder's
 * code. */
static int prompt_ids(engine_client *ec, const char *text, size_t len, const int32_t **ids, size_t *n,
                      int32_t **owned) {
  *owned = NULL;
  uint64_t h = text_hash(text, len), at;
  if (tp_u64map_get(&ec->cache_index, h, &at)) {
    const cached_ids *c = &ec->cache[at];
    if (c->text_len == len && memcmp(c->text, text, len) == 0) {
      *ids = c->ids;
      *n = c->n;
      return 0;
    }
  }
  int32_t *v = NULL;
  size_t k = 0;
  int rv = ec->opts.encode(ec->opts.encode_ud, text, len, &v, &k);
  if (rv) return rv;
  *ids = v;
  *n = k;
  size_t bytes = len + k * sizeof(int32_t);
  if (tp_u64map_get(&ec->cache_index, h, NULL) || ec->n_cache >= CACHE_MAX_ENTRIES ||
      ec->cache_bytes + bytes > CACHE_MAX_BYTES) {
    *owned = v;
    return 0;
  }
  if (ec->n_cache == ec->cap_cache) {
    size_t cap = ec->cap_cache ? 2 * ec->cap_cache : 64;
    cached_ids *c = realloc(ec->cache, cap * sizeof(*c));
    if (!c) {
      *owned = v;
      return 0;
    }
    ec->cache = c;
    ec->cap_cache = cap;
  }
  char *t = tp_strndup(text, len);
  if (!t || tp_u64map_put(&ec->cache_index, h, ec->n_cache)) {
    free(t);
    *owned = v;
    return 0;
  }
  ec->cache[ec->n_cache++] = (cached_ids){t, len, v, k};
  ec->cache_bytes += bytes;
  return 0;
}

/* ---- checks before the run: blocking unary calls ------------------------- */

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
  (void)c;
  (void)t;
  unary_ctx *u = ud;
  if (u->got_msg) return;
  u->got_msg = true;
  tp_buf_append(&u->resp, d, n);
}

static void unary_on_close(tp_call *c, const tp_call_result *res, void *ud) {
  (void)c;
  unary_ctx *u = ud;
  u->done = true;
  tp_wake(u->loop); /* a deadline sweep (a timer) may end the call */
  u->grpc_status = res->grpc_status;
  u->cls = res->err_class;
  snprintf(u->message, sizeof(u->message), "%s", res->message ? res->message : "");
}

/* Runs one unary call on `path` to its end. */
static int unary(engine_client *ec, const char *path, const uint8_t *body, size_t len, unary_ctx *u) {
  static const tp_call_cbs cbs = {unary_on_message, unary_on_close};
  tp_buf_fini(&u->resp);
  memset(u, 0, sizeof(*u));
  u->loop = ec->loop;
  int rv = tp_h2c_call(ec->pool, path, body, len, PREFLIGHT_TIMEOUT_NS, &cbs, u, NULL);
  if (rv) return rv;
  while (!u->done) uv_run(ec->loop, UV_RUN_ONCE);
  return 0;
}

static const uint8_t empty_msg[TP_GRPC_PREFIX_BYTES] = {0, 0, 0, 0, 0};

/* Whether the peer answers `path` (anything but UNIMPLEMENTED). */
static bool peer_serves(engine_client *ec, const char *path) {
  unary_ctx u;
  memset(&u, 0, sizeof(u));
  bool yes = unary(ec, path, empty_msg, sizeof(empty_msg), &u) == 0 && u.cls != TP_ERRCLASS_CONNECT &&
             u.cls != TP_ERRCLASS_TIMEOUT && u.grpc_status != TP_GRPC_UNIMPLEMENTED;
  tp_buf_fini(&u.resp);
  return yes;
}

/* The peer does not serve this protocol: what does it speak? */
static void name_the_peer(engine_client *ec, char *err, size_t errlen) {
  const char *mine = tp_engine_name(ec->proto);
  char path[128];
  for (int p = 0; p < TP_ENGINE_PROTO_COUNT; p++) {
    if (p == (int)ec->proto) continue;
    tp_engine_path((tp_engine_proto)p, "HealthCheck", path, sizeof(path));
    if (peer_serves(ec, path)) {
      tp_seterr(err, errlen, "%s does not serve %s: this port speaks %s (%s), not %s; give --service-kind %s",
                ec->target, tp_engine_service(ec->proto), tp_engine_name((tp_engine_proto)p),
                tp_engine_service((tp_engine_proto)p), mine, tp_engine_name((tp_engine_proto)p));
      return;
    }
  }
  if (peer_serves(ec, "/inference.GRPCInferenceService/ServerLive")) {
    tp_seterr(
        err, errlen,
        "%s does not serve %s: this port speaks Triton KServe v2 (inference.GRPCInferenceService), not %s; "
        "give --service-kind triton",
        ec->target, tp_engine_service(ec->proto), mine);
    return;
  }
  tp_seterr(
      err, errlen,
      "%s answers gRPC but does not serve %s (HealthCheck: UNIMPLEMENTED), nor Triton's KServe v2 or the "
      "other engine protocol: check -u/--url and --service-kind",
      ec->target, tp_engine_service(ec->proto));
}

/* The -m given against the names the server reports: the engine protocols
 * name no model in a request (one server, one model), so a mismatch is a
 * warning, not an error. */
static void check_model_name(engine_client *ec) {
  const char *m = ec->opts.model;
  const tp_engine_model_info *i = &ec->info;
  if (!m || !*m || (!i->served_model_name[0] && !i->model_path[0])) return;
  const char *base = strrchr(i->model_path, '/');
  base = base ? base + 1 : i->model_path;
  if (strcmp(m, i->served_model_name) == 0 || strcmp(m, i->model_path) == 0 || strcmp(m, base) == 0) return;
  snprintf(ec->warning, sizeof(ec->warning),
           "%s serves '%s', not -m '%s': %s requests name no model, so the results are that model's (-m is "
           "only the label of the results)",
           ec->target, i->served_model_name[0] ? i->served_model_name : i->model_path, m,
           tp_engine_name(ec->proto));
}

static int engine_preflight(tp_client *c, char *err, size_t errlen) {
  engine_client *ec = (engine_client *)c;
  unary_ctx u;
  memset(&u, 0, sizeof(u));
  char path[128];
  tp_engine_path(ec->proto, "HealthCheck", path, sizeof(path));
  int rv = unary(ec, path, empty_msg, sizeof(empty_msg), &u);
  if (rv) goto out;
  if (u.cls == TP_ERRCLASS_CONNECT || u.cls == TP_ERRCLASS_TIMEOUT || u.cls == TP_ERRCLASS_TLS) {
    /* The transport's message says already when the port speaks HTTP/1. */
    bool http1 = strstr(u.message, "answers HTTP/1.x") != NULL;
    tp_seterr(err, errlen, "%s%s", u.message,
              http1 ? ""
              : ec->proto == TP_ENGINE_VLLM
                  ? " (is the server up? check -u/--url; vLLM's gRPC server listens on 50051 by default)"
                  : " (is the server up? check -u/--url: SGLang's gRPC mode listens on its --port)");
    rv = TP_ECONNECT;
    goto out;
  }
  if (u.grpc_status == TP_GRPC_UNIMPLEMENTED) {
    name_the_peer(ec, err, errlen);
    rv = TP_EUNSUPPORTED;
    goto out;
  }
  bool healthy = false;
  char msg[200] = "";
  if (u.grpc_status != 0) {
    tp_seterr(err, errlen, "HealthCheck on %s failed: %s", ec->target, u.message);
    rv = TP_ECONNECT;
    goto out;
  }
  if (tp_engine_parse_health(ec->proto, u.resp.data, u.resp.len, &healthy, msg, sizeof(msg))) {
    tp_seterr(err, errlen, "HealthCheck from %s is not a valid %s message", ec->target,
              tp_engine_name(ec->proto));
    rv = TP_EPROTO;
    goto out;
  }
  if (!healthy) {
    tp_seterr(err, errlen, "%s says it is not healthy%s%s%s", ec->target, msg[0] ? " (" : "", msg,
              msg[0] ? ")" : "");
    rv = TP_ECONNECT;
    goto out;
  }
  tp_engine_path(ec->proto, "GetModelInfo", path, sizeof(path));
  rv = unary(ec, path, empty_msg, sizeof(empty_msg), &u);
  if (rv) goto out;
  /* Servers before GetModelInfo answer UNIMPLEMENTED: nothing to check. */
  if (u.grpc_status == TP_GRPC_UNIMPLEMENTED) goto out;
  if (u.grpc_status != 0) {
    tp_seterr(err, errlen, "GetModelInfo on %s failed: %s", ec->target, u.message);
    rv = TP_ESERVER;
    goto out;
  }
  if (tp_engine_parse_model_info(ec->proto, u.resp.data, u.resp.len, &ec->info)) {
    tp_seterr(err, errlen, "GetModelInfo from %s is not a valid %s message", ec->target,
              tp_engine_name(ec->proto));
    rv = TP_EPROTO;
    goto out;
  }
  ec->have_info = true;
  if (!ec->info.is_generation && (ec->info.model_path[0] || ec->info.vocab_size)) {
    tp_seterr(err, errlen,
              "%s serves '%s', which is not a generation model (GetModelInfo: is_generation false)",
              ec->target, ec->info.served_model_name[0] ? ec->info.served_model_name : ec->info.model_path);
    rv = TP_EUNSUPPORTED;
    goto out;
  }
  check_model_name(ec);
out:
  tp_buf_fini(&u.resp);
  return rv;
}

/* ---- Abort ----------------------------------------------------------------- */

static void abort_on_message(tp_call *c, const uint8_t *d, size_t n, uint64_t t, void *ud) {
  (void)c, (void)d, (void)n, (void)t, (void)ud;
}
static void abort_on_close(tp_call *c, const tp_call_result *res, void *ud) {
  (void)c, (void)res, (void)ud;
}

/* Tells the server to stop generating for these requests, as the routers
 * in front of these engines do, besides resetting their streams (a server
 * may notice a reset only at its next token).  Fire and forget. */
static void send_abort(engine_client *ec, const char *const *ids, size_t n) {
  static const tp_call_cbs cbs = {abort_on_message, abort_on_close};
  if (ec->closing || n == 0) return;
  tp_buf b;
  tp_buf_init(&b);
  /* Held and released: the release writes the calls at once, so they leave
   * even when the run closes the pool right after (the last requests of an
   * interrupted run). */
  tp_h2c_pool_hold(ec->pool, true);
  for (size_t i = 0; i < n; i++) {
    /* vLLM's message takes every id at once; SGLang's one each. */
    size_t k = ec->proto == TP_ENGINE_VLLM ? n : 1;
    tp_buf_reset(&b);
    if (tp_engine_build_abort(&b, ec->proto, ids + i, k, "cancelled by the client") == 0)
      tp_h2c_call(ec->pool, ec->path_abort, b.data, b.len, ABORT_TIMEOUT_NS, &cbs, NULL, NULL);
    i += k - 1;
  }
  tp_h2c_pool_hold(ec->pool, false);
  tp_buf_fini(&b);
}

static void abort_call(engine_call *x) {
  if (x->aborted) return;
  x->aborted = true;
  const char *id = x->id;
  send_abort(x->ec, &id, 1);
}

/* ---- Generate calls ------------------------------------------------------ */

static void unlink_call(engine_call *x) {
  engine_client *ec = x->ec;
  if (x->prev)
    x->prev->next = x->next;
  else if (ec->calls == x)
    ec->calls = x->next;
  if (x->next) x->next->prev = x->prev;
  x->prev = x->next = NULL;
}

/* What one response adds: its token ids, the server's counts, the end. */
static void count_message(engine_call *x, const tp_engine_msg *m, tp_client_event *ev) {
  bool vllm = x->ec->proto == TP_ENGINE_VLLM;
  uint32_t n = m->n_ids;
  int64_t server = -1; /* the server's count of the ids new in this response */
  if (m->kind == TP_ENGINE_MSG_CHUNK) {
    x->chunks++;
    /* vLLM counts each step; SGLang keeps a running total. */
    if (m->completion_tokens > 0)
      server = vllm ? m->completion_tokens : m->completion_tokens - x->server_total;
  } else if (x->chunks == 0) {
    /* A unary answer, or a stream whose only message is the end: every id. */
    if (m->completion_tokens > 0) server = m->completion_tokens - (vllm ? 0 : x->server_total);
  } else if (vllm) {
    /* vLLM's end repeats its last chunk. */
    n = 0;
  } else {
    /* SGLang's end carries the last step's ids, which no chunk carried;
     * one that holds them all (its count equal to the total) is read as
     * that. */
    if (m->completion_tokens > 0 && x->ids > 0 && (int64_t)n == m->completion_tokens && n >= x->ids)
      n -= (uint32_t)x->ids;
    if (m->completion_tokens > 0) server = m->completion_tokens - x->server_total;
  }
  if (!vllm && m->completion_tokens > 0) x->server_total = m->completion_tokens;
  ev->ids = true;
  ev->token_ids = n;
  x->ids += n;
  ev->server_output_tokens = server >= 0 ? server : -1;
  if (m->prompt_tokens > 0) {
    ev->prompt_tokens = m->prompt_tokens;
    ev->cached_tokens = m->cached_tokens >= 0 ? m->cached_tokens : -1;
  }
}

static void call_on_message(tp_call *c, const uint8_t *data, size_t len, uint64_t arrival_ns, void *ud) {
  engine_call *x = ud;
  engine_client *ec = x->ec;
  if (x->final_seen) return; /* nothing after the end counts */
  tp_client_event ev;
  memset(&ev, 0, sizeof(ev));
  ev.server_output_tokens = ev.prompt_tokens = ev.completion_tokens = ev.cached_tokens = -1;
  ev.status = -1;
  tp_engine_msg m;
  if (tp_engine_decode(&ec->dec, ec->proto, data, len, &m)) {
    ev.bad_message = true;
    ev.error = ec->proto == TP_ENGINE_VLLM ? "response is not a valid vllm-grpc GenerateResponse"
                                           : "response is not a valid sglang-grpc GenerateResponse";
    ev.error_class = TP_ERRCLASS_PROTOCOL;
    ec->cbs.on_event(x->req, &ev, arrival_ns);
    abort_call(x);
    tp_h2c_cancel(c);
    return;
  }
  char msg[400];
  char finish[64];
  switch (m.kind) {
    case TP_ENGINE_MSG_EMPTY: ev.ids = true; break;
    case TP_ENGINE_MSG_CHUNK: count_message(x, &m, &ev); break;
    case TP_ENGINE_MSG_COMPLETE:
      count_message(x, &m, &ev);
      ev.final = true;
      if (m.finish_reason_len) {
        snprintf(finish, sizeof(finish), "%.*s", (int)TP_MIN(m.finish_reason_len, sizeof(finish) - 1),
                 m.finish_reason);
        ev.finish_reason = finish;
      }
      break;
    case TP_ENGINE_MSG_ERROR:
      /* In-band, as Triton's: the stream then ends with status OK. */
      ev.final = true;
      snprintf(msg, sizeof(msg), "server error: %.*s%s%.*s%s", (int)TP_MIN(m.error_len, 300),
               m.error ? m.error : "(no message)", m.error_status_len ? " (http_status_code " : "",
               (int)TP_MIN(m.error_status_len, 16), m.error_status ? m.error_status : "",
               m.error_status_len ? ")" : "");
      ev.error = msg;
      ev.error_class = TP_ERRCLASS_SERVER;
      break;
  }
  /* SGLang's answers name the request (vLLM's do not). */
  if (m.request_id && m.request_id_len && !x->server_id[0])
    snprintf(x->server_id, sizeof(x->server_id), "%.*s", (int)TP_MIN(m.request_id_len, sizeof(x->server_id) - 1),
             m.request_id);
  if (ev.final) x->final_seen = true;
  ec->cbs.on_event(x->req, &ev, arrival_ns);
}

static void call_on_close(tp_call *c, const tp_call_result *res, void *ud) {
  (void)c;
  engine_call *x = ud;
  engine_client *ec = x->ec;
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
  /* Our deadline ran out, or the request was cancelled: the server is told
   * too (a request already aborted is not told twice). */
  if ((res->err_class == TP_ERRCLASS_TIMEOUT || res->err_class == TP_ERRCLASS_CANCELLED) && !x->final_seen)
    abort_call(x);
  unlink_call(x);
  char server_id[sizeof(x->server_id)];
  memcpy(server_id, x->server_id, sizeof(server_id));
  d.server_id = server_id[0] ? server_id : NULL;
  void *req = x->req;
  free(x);
  ec->cbs.on_done(req, &d);
}

/* Ends a request that never reached the wire: on_done at once (the run
 * allows it inside send, as when a connection fails at once). */
static void fail_now(engine_client *ec, void *req, const char *message) {
  tp_client_done d;
  memset(&d, 0, sizeof(d));
  d.err_class = TP_ERRCLASS_PROTOCOL;
  d.status = -1;
  d.message = message;
  d.end_ns = tp_now_ns();
  ec->cbs.on_done(req, &d);
}

static int engine_send(tp_client *c, const tp_client_send *s, void *req) {
  static const tp_call_cbs cbs = {call_on_message, call_on_close};
  engine_client *ec = (engine_client *)c;
  tp_engine_gen g;
  memset(&g, 0, sizeof(g));
  g.id = s->id;
  g.text = s->prompt;
  g.text_len = s->prompt_len;
  g.max_tokens = s->max_tokens;
  g.min_tokens = s->min_tokens;
  g.stream = ec->opts.streaming;
  int32_t *owned = NULL;
  if (ec->opts.encode) {
    int rv = prompt_ids(ec, s->prompt, s->prompt_len, &g.ids, &g.n_ids, &owned);
    if (rv) return rv;
    if (ec->have_info && ec->info.vocab_size > 0) {
      for (size_t i = 0; i < g.n_ids; i++) {
        if (g.ids[i] < ec->info.vocab_size) continue;
        char msg[640];
        snprintf(
            msg, sizeof(msg),
            "prompt token id %d is outside the vocabulary of %s (%lld ids, GetModelInfo): --tokenizer is not "
            "the served model's",
            (int)g.ids[i], ec->target, (long long)ec->info.vocab_size);
        free(owned);
        if (s->handle) *s->handle = NULL;
        fail_now(ec, req, msg);
        return 0;
      }
    }
  }
  engine_call *x = calloc(1, sizeof(*x));
  if (!x) {
    free(owned);
    return TP_ENOMEM;
  }
  x->ec = ec;
  x->req = req;
  snprintf(x->id, sizeof(x->id), "%s", s->id);
  tp_buf_reset(&ec->reqbuf);
  int rv = tp_engine_build_generate(&ec->reqbuf, ec->proto, &g, ec->have_sampling ? &ec->sampling : NULL);
  free(owned);
  if (rv) {
    free(x);
    return rv;
  }
  x->next = ec->calls;
  if (ec->calls) ec->calls->prev = x;
  ec->calls = x;
  /* The handle first: the call may end (and free x) before tp_h2c_call
   * returns, when the connection fails at once. */
  if (s->handle) *s->handle = x;
  rv = tp_h2c_call_traced(ec->pool, s->session, ec->path_generate, ec->reqbuf.data, ec->reqbuf.len,
                          s->timeout_ns, s->traceparent, &cbs, x, &x->call);
  if (rv) {
    if (s->handle) *s->handle = NULL;
    unlink_call(x);
    free(x);
    return rv;
  }
  return 0;
}

static void engine_cancel(tp_client *c, void *handle) {
  engine_call *x = handle;
  if (!x || !x->call) return;
  /* The id is copied: cancelling a call still queued ends (and frees) it
   * at once.  The Abort goes after the reset, in the same write. */
  char id[sizeof(x->id)];
  memcpy(id, x->id, sizeof(id));
  bool tell = !x->aborted;
  x->aborted = true;
  tp_h2c_cancel(x->call);
  const char *ids[1] = {id};
  if (tell) send_abort((engine_client *)c, ids, 1);
}

/* Every request in flight: the server is told which (vLLM takes them in
 * one message), then every stream is reset. */
static void engine_cancel_all(tp_client *c) {
  engine_client *ec = (engine_client *)c;
  size_t n = 0;
  for (engine_call *x = ec->calls; x; x = x->next)
    if (!x->aborted && !x->final_seen) n++;
  /* The ids are copied: cancelling may end (and free) calls at once. */
  char(*copy)[sizeof(ec->calls->id)] = n ? malloc(n * sizeof(*copy)) : NULL;
  const char **ids = n ? malloc(n * sizeof(*ids)) : NULL;
  size_t k = 0;
  for (engine_call *x = ec->calls; copy && ids && x; x = x->next) {
    if (x->aborted || x->final_seen) continue;
    x->aborted = true;
    memcpy(copy[k], x->id, sizeof(copy[k]));
    ids[k] = copy[k];
    k++;
  }
  tp_h2c_cancel_all(ec->pool);
  /* After the resets, so that the cancel does not take the Abort calls
   * with it. */
  send_abort(ec, ids, k);
  free(ids);
  free(copy);
}

static void free_headers(engine_client *ec) { tp__grpc_free_headers(ec->hdr, ec->n_hdr); }

static void engine_close(tp_client *c) {
  engine_client *ec = (engine_client *)c;
  ec->closing = true;
  if (ec->pool) tp_h2c_pool_close(ec->pool);
  tp_buf_fini(&ec->reqbuf);
  tp_engine_decoder_fini(&ec->dec);
  tp_engine_sampling_fini(&ec->sampling);
  cache_free(ec);
  free_headers(ec);
  free(ec);
}

static int split_headers(engine_client *ec, const char *const *h, size_t n, char *err, size_t errlen) {
  return tp__grpc_split_headers(&ec->hdr, &ec->n_hdr, h, n, err, errlen);
}

static void engine_session_end(tp_client *c, uint64_t session) {
  tp_h2c_session_end(((engine_client *)(void *)c)->pool, session);
}

static uint32_t engine_connections_opened(const tp_client *c) {
  return tp_h2c_connections_opened(((const engine_client *)c)->pool);
}

static void engine_hold(tp_client *c, bool hold) {
  engine_client *ec = (engine_client *)c;
  if (ec->pool) tp_h2c_pool_hold(ec->pool, hold);
}

static const char *engine_warning(const tp_client *c) {
  return ((const engine_client *)c)->warning;
}

static const tp_client_ops vllm_ops = {
    .name = "vllm-grpc",
    .preflight = engine_preflight,
    .send = engine_send,
    .close = engine_close,
    .cancel = engine_cancel,
    .cancel_all = engine_cancel_all,
    .session_end = engine_session_end,
    .connections_opened = engine_connections_opened,
    .warning = engine_warning,
    .hold = engine_hold,
};

static const tp_client_ops sglang_ops = {
    .name = "sglang-grpc",
    .preflight = engine_preflight,
    .send = engine_send,
    .close = engine_close,
    .cancel = engine_cancel,
    .cancel_all = engine_cancel_all,
    .session_end = engine_session_end,
    .connections_opened = engine_connections_opened,
    .warning = engine_warning,
    .hold = engine_hold,
};

static void engine_free_early(engine_client *ec) {
  tp_engine_sampling_fini(&ec->sampling);
  free_headers(ec);
  free(ec);
}

int tp_client_engine_new(tp_client **out, uv_loop_t *loop, tp_engine_proto proto, const tp_client_opts *o,
                         const char *const *extra_inputs, size_t n_extra_inputs, const tp_client_cbs *cbs,
                         char *err, size_t errlen) {
  if (proto != TP_ENGINE_VLLM && proto != TP_ENGINE_SGLANG) {
    tp_seterr(err, errlen, "unknown engine protocol %d", (int)proto);
    return TP_EINVAL;
  }
  if (proto == TP_ENGINE_SGLANG && !o->encode) {
    tp_seterr(
        err, errlen,
        "sglang-grpc sends the prompt as token ids (SGLang's scheduler takes no text): give --tokenizer, the "
        "served model's tokenizer.json or its directory");
    return TP_EINVAL;
  }
  engine_client *ec = calloc(1, sizeof(*ec));
  if (!ec) return TP_ENOMEM;
  ec->base.ops = proto == TP_ENGINE_VLLM ? &vllm_ops : &sglang_ops;
  ec->loop = loop;
  ec->opts = *o;
  ec->cbs = *cbs;
  ec->proto = proto;
  tp_buf_init(&ec->reqbuf);
  tp_engine_decoder_init(&ec->dec);
  tp_u64map_init(&ec->cache_index);
  snprintf(ec->target, sizeof(ec->target), "%s", o->target);
  snprintf(ec->host, sizeof(ec->host), "%s", o->host ? o->host : "");
  ec->opts.target = ec->target;
  ec->opts.host = ec->host;
  tp_engine_path(proto, "Generate", ec->path_generate, sizeof(ec->path_generate));
  tp_engine_path(proto, "Abort", ec->path_abort, sizeof(ec->path_abort));

  json_t *extra = NULL;
  int rv = tp_openai_parse_extra(&extra, extra_inputs, n_extra_inputs, err, errlen);
  if (!rv) rv = tp_engine_sampling_read(&ec->sampling, proto, extra, err, errlen);
  json_decref(extra);
  ec->have_sampling = n_extra_inputs > 0;
  if (rv) {
    engine_free_early(ec);
    return rv;
  }
  tp_h2c_opts ho;
  memset(&ho, 0, sizeof(ho));
  rv = tp_h2c_resolve(ec->target, &ho.addr, err, errlen);
  if (!rv) rv = split_headers(ec, o->headers, o->n_headers, err, errlen);
  if (rv) {
    engine_free_early(ec);
    return rv;
  }
  ho.authority = ec->target;
  ho.connections = o->connections ? o->connections : 1;
  ho.max_msg_bytes = o->max_response_bytes ? o->max_response_bytes : (64u << 20);
  ho.headers = (const char *const *)ec->hdr;
  ho.n_headers = ec->n_hdr;
  ho.tls = o->tls;
  ho.host = ec->host;
  ho.ca_file = o->ca_file;
  ho.cert_file = o->cert_file;
  ho.key_file = o->key_file;
  ho.insecure = o->insecure;
  ho.reader_thread = o->reader_thread;
  ho.yield_to = o->yield_to;
  rv = tp_h2c_pool_new(&ec->pool, loop, &ho, err, errlen);
  if (rv) {
    engine_free_early(ec);
    return rv;
  }
  *out = &ec->base;
  return 0;
}

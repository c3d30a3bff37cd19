/* The HTTP clients: tp_openai adapters and the tp_sse parser over tp_http.
 * One HTTP request per inference request. */
#include "client/tp_client_http.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "api/tp_sse.h"
#include "client/tp_url.h"
#include "transport/tp_http.h"
#include "util/tp_wake.h"
#include "tokperf/tokperf.h"

#define PREFLIGHT_TIMEOUT_NS (10 * TP_NS_PER_S)
#define PREFLIGHT_MAX_BODY (4u << 20)
#define ERROR_BODY_MAX (64u << 10)
#define ERROR_TEXT_CHARS 200
#define DEFAULT_MAX_RESPONSE (64u << 20)
/* A URL for a message: without its query, which may hold a key
 * (?key=...), and at most 300 bytes.  For "%.*s". */
#define URL_SHOWN(u) (int)TP_MIN(strcspn((u), "?"), 300), (u)

typedef struct http_client {
  tp_client base;
  uv_loop_t *loop;
  tp_client_opts opts;
  tp_client_cbs cbs;
  tp_http_api api;
  tp_http *http;
  char *api_key; /* only to scrub it from server messages */
  char model[256];
  /* Full URLs: requests go to path; the API's other paths (the model
   * list, Triton's health) hang below api_base, followed by query. */
  char path[TP_URL_MAX];
  char api_base[TP_URL_MAX];
  char query[TP_URL_QUERY_MAX + 1];
  char warning[1024]; /* what preflight found worth a warning, "" = none */
  json_t *extra;
  tp_openai_opts ropts;
  tp_openai_decoder dec;
  tp_buf reqbuf;
  size_t max_response_bytes;
} http_client;

/* An event waiting for the next one, to learn whether it is the last. */
typedef struct held_ev {
  bool have;
  uint64_t arrival_ns;
  tp_buf text;
  bool reasoning;
  int64_t prompt_tokens, completion_tokens, cached_tokens, server_output_tokens;
  char finish[32];
  bool has_finish;
  bool has_choices; /* the chunk held a non-empty choices array */
  char error[320];
  bool has_error;
  tp_error_class error_class;
  bool bad;
} held_ev;

typedef struct http_call {
  http_client *hc;
  void *req;
  tp_http_req *hreq;
  tp_sse_parser sse;
  int status;
  bool sse_mode;
  bool done_seen;   /* [DONE] */
  bool finish_seen; /* a finish_reason came */
  bool final_sent;
  bool error_seen;
  char error[320]; /* the first in-stream error, for on_done */
  int64_t last_completion_tokens;
  tp_buf body; /* a non-SSE reply, or an error status's body */
  bool body_truncated;
  held_ev held;
  char server_id[64]; /* the first "id" of the reply's documents, "" = none yet */
} http_call;

/* ---- messages ------------------------------------------------------------ */

/* Servers may echo what they were sent; the key never reaches our output. */
static void scrub(const http_client *hc, char *s) {
  const char *k = hc->api_key;
  if (!k || !*k) return;
  size_t kl = strlen(k);
  char *p;
  while ((p = strstr(s, k))) {
    memcpy(p, "***", 3);
    memmove(p + 3, p + kl, strlen(p + kl) + 1);
  }
}

/* ---- events --------------------------------------------------------------- */

static void held_clear(held_ev *h) {
  h->have = false;
  tp_buf_reset(&h->text);
  h->reasoning = false;
  h->prompt_tokens = h->completion_tokens = h->cached_tokens = h->server_output_tokens = -1;
  h->has_finish = h->has_error = h->bad = h->has_choices = false;
  h->error_class = TP_ERRCLASS_NONE;
}

static void emit_held(http_call *x, bool final) {
  held_ev *h = &x->held;
  /* After a cancel nothing more is delivered (as the gRPC client does),
   * not even an event that came before it and was held back. */
  if (x->final_sent || tp_http_local_class(x->hreq) == TP_ERRCLASS_CANCELLED) {
    held_clear(h);
    return;
  }
  tp_client_event ev;
  memset(&ev, 0, sizeof(ev));
  ev.text = h->text.len ? h->text.data : NULL;
  ev.text_len = h->text.len;
  ev.final = final;
  ev.error = h->has_error ? h->error : NULL;
  ev.error_class = h->has_error ? h->error_class : TP_ERRCLASS_NONE;
  ev.server_output_tokens = h->server_output_tokens;
  ev.bad_message = h->bad;
  ev.reasoning = h->reasoning;
  ev.prompt_tokens = h->prompt_tokens;
  ev.completion_tokens = h->completion_tokens;
  ev.cached_tokens = h->cached_tokens;
  ev.finish_reason = h->has_finish ? h->finish : NULL;
  ev.has_choices = h->has_choices;
  ev.status = x->status ? x->status : -1;
  if (final) x->final_sent = true;
  uint64_t t = h->arrival_ns;
  x->hc->cbs.on_event(x->req, &ev, t);
  held_clear(h);
}

/* Makes room for a new event: the one held so far was not the last. */
static held_ev *hold_next(http_call *x, uint64_t arrival_ns) {
  if (x->held.have) emit_held(x, false);
  held_clear(&x->held);
  x->held.have = true;
  x->held.arrival_ns = arrival_ns;
  return &x->held;
}

/* Ends the stream: the event held is the last.  With none held (an empty
 * stream), an empty final event at end_ns. */
static void emit_final(http_call *x, uint64_t end_ns) {
  if (!x->held.have) hold_next(x, end_ns);
  emit_held(x, true);
}

static void hold_error(http_call *x, uint64_t arrival_ns, tp_error_class cls, const char *prefix,
                       const char *msg) {
  held_ev *h = hold_next(x, arrival_ns);
  h->has_error = true;
  h->error_class = cls;
  snprintf(h->error, sizeof(h->error), "%s%s", prefix, msg);
  scrub(x->hc, h->error);
  if (!x->error_seen) {
    x->error_seen = true;
    snprintf(x->error, sizeof(x->error), "%s", h->error);
  }
}

/* One decoded document.  Reasoning text and content in the same chunk
 * become two events (reasoning first) so the run can count them apart. */
static int hold_chunk(http_call *x, const tp_openai_chunk *ch, uint64_t arrival_ns) {
  held_ev *h;
  if (ch->id && *ch->id && !x->server_id[0]) snprintf(x->server_id, sizeof(x->server_id), "%s", ch->id);
  if (ch->reasoning_len) {
    h = hold_next(x, arrival_ns);
    h->has_choices = ch->has_choices;
    h->reasoning = true;
    if (tp_buf_append(&h->text, ch->reasoning, ch->reasoning_len)) return TP_ENOMEM;
    if (ch->text_len == 0 && !ch->error) goto extras;
  }
  h = hold_next(x, arrival_ns);
  h->has_choices = ch->has_choices;
  if (ch->text_len && tp_buf_append(&h->text, ch->text, ch->text_len)) return TP_ENOMEM;
  if (ch->error) {
    h->has_error = true;
    h->error_class = TP_ERRCLASS_SERVER;
    snprintf(h->error, sizeof(h->error), "server error: %s", ch->error);
    scrub(x->hc, h->error);
    if (!x->error_seen) {
      x->error_seen = true;
      snprintf(x->error, sizeof(x->error), "%s", h->error);
    }
  }
extras:
  if (ch->finish_reason) {
    h->has_finish = true;
    snprintf(h->finish, sizeof(h->finish), "%s", ch->finish_reason);
    x->finish_seen = true;
  }
  if (ch->has_usage) {
    h->prompt_tokens = ch->prompt_tokens;
    h->completion_tokens = ch->completion_tokens;
    h->cached_tokens = ch->cached_tokens;
    /* Usage counts are cumulative (and repeated on every chunk with
     * continuous_usage_stats); the run adds deltas. */
    if (ch->completion_tokens >= 0) {
      h->server_output_tokens = ch->completion_tokens - x->last_completion_tokens;
      if (h->server_output_tokens < 0) h->server_output_tokens = 0;
      x->last_completion_tokens = ch->completion_tokens;
    }
  } else if (ch->output_tokens >= 0) {
    h->server_output_tokens = ch->output_tokens; /* Triton: already a delta */
  }
  return 0;
}

typedef struct sse_ctx {
  http_call *x;
  uint64_t arrival_ns;
} sse_ctx;

static int on_sse_event(tp_sse_parser *p, const tp_sse_event *ev, void *ud) {
  sse_ctx *s = ud;
  http_call *x = s->x;
  http_client *hc = x->hc;
  if (x->done_seen) return 0; /* nothing after [DONE] counts */
  /* Failed or cancelled from a callback: the rest of this read is dropped. */
  if (tp_http_local_class(x->hreq) != TP_ERRCLASS_NONE) return TP_ECANCELED;
  if (ev->type_len == 5 && memcmp(ev->type, "error", 5) == 0) {
    char msg[ERROR_TEXT_CHARS + 4];
    tp_openai_error_text(ev->data, ev->data_len, ERROR_TEXT_CHARS, msg);
    hold_error(x, s->arrival_ns, TP_ERRCLASS_SERVER, "server error: ", msg);
    return 0;
  }
  if (tp_openai_is_done(ev->data, ev->data_len)) {
    x->done_seen = true;
    return 0;
  }
  tp_openai_chunk ch;
  if (tp_openai_decode(&hc->dec, hc->api, ev->data, ev->data_len, &ch)) {
    char msg[ERROR_TEXT_CHARS + 4];
    tp_openai_error_text(ev->data, TP_MIN(ev->data_len, 80), 80, msg);
    hold_error(x, s->arrival_ns, TP_ERRCLASS_PROTOCOL,
               "bad event data from the server (not a JSON object): ", msg);
    x->held.bad = true;
    tp_http_fail(x->hreq, TP_ERRCLASS_PROTOCOL, x->held.error);
    return TP_EPROTO;
  }
  return hold_chunk(x, &ch, s->arrival_ns);
}

/* ---- one inference request ------------------------------------------------ */

static int call_on_response(tp_http_req *r, int status, const char *ctype, void *ud) {
  http_call *x = ud;
  x->status = status;
  x->sse_mode = status >= 200 && status < 300 && ctype && strncasecmp(ctype, "text/event-stream", 17) == 0;
  return 0;
}

static int call_on_body(tp_http_req *r, const uint8_t *data, size_t len, uint64_t arrival_ns, void *ud) {
  http_call *x = ud;
  http_client *hc = x->hc;
  if (x->status < 200 || x->status >= 300) {
    /* An error reply: only its message matters. */
    size_t take = TP_MIN(len, ERROR_BODY_MAX - TP_MIN(ERROR_BODY_MAX, x->body.len));
    if (take < len) x->body_truncated = true;
    return take ? tp_buf_append(&x->body, data, take) : 0;
  }
  if (x->sse_mode) {
    sse_ctx s = {x, arrival_ns};
    int rv = tp_sse_feed(&x->sse, data, len, on_sse_event, &s);
    if (rv == TP_ETOOBIG) {
      char m[128];
      snprintf(m, sizeof(m), "an event of the stream is larger than %zu bytes", hc->max_response_bytes);
      tp_http_fail(r, TP_ERRCLASS_PROTOCOL, m);
    } else if (rv == TP_ENOMEM) {
      tp_http_fail(r, TP_ERRCLASS_PROTOCOL, "out of memory reading the stream");
    }
    return rv;
  }
  if (x->body.len + len > hc->max_response_bytes) {
    char m[128];
    snprintf(m, sizeof(m), "the reply is larger than %zu bytes", hc->max_response_bytes);
    tp_http_fail(r, TP_ERRCLASS_PROTOCOL, m);
    return TP_ETOOBIG;
  }
  return tp_buf_append(&x->body, data, len);
}

static void call_free(http_call *x) {
  tp_sse_fini(&x->sse);
  tp_buf_fini(&x->body);
  tp_buf_fini(&x->held.text);
  free(x);
}

static void call_on_done(tp_http_req *r, const tp_http_result *res, void *ud) {
  http_call *x = ud;
  http_client *hc = x->hc;
  tp_client_done d;
  memset(&d, 0, sizeof(d));
  d.status = res->status ? res->status : -1;
  d.sent_ns = res->sent_ns;
  d.end_ns = res->end_ns;
  d.resends = res->resends;
  d.err_class = res->err_class;
  char msg[512];
  snprintf(msg, sizeof(msg), "%s", res->message ? res->message : "");

  if (d.err_class == TP_ERRCLASS_NONE && (res->status < 200 || res->status >= 300)) {
    char text[ERROR_TEXT_CHARS + 4];
    tp_openai_error_text(x->body.data, x->body.len, ERROR_TEXT_CHARS, text);
    snprintf(msg, sizeof(msg), "HTTP %d from %.*s: %s", res->status, URL_SHOWN(hc->path), text);
    d.err_class = TP_HTTP_ERRCLASS_HTTP_STATUS;
  } else if (d.err_class == TP_ERRCLASS_NONE && x->sse_mode) {
    bool cut = tp_sse_pending(&x->sse) && !x->done_seen;
    /* OpenAI servers end with [DONE]; a stream without it was cut short,
     * unless the last choice said it finished (servers older than [DONE]).
     * Triton's generate_stream never sends one. */
    bool openai = hc->api != TP_HTTP_API_TRITON_GENERATE;
    if (cut || (openai && !x->done_seen && !x->finish_seen && !x->error_seen)) {
      snprintf(msg, sizeof(msg), "stream from %.*s ended %s", URL_SHOWN(hc->path),
               cut ? "inside an event" : "without data: [DONE]");
      d.err_class = TP_ERRCLASS_PROTOCOL;
      if (x->held.have) emit_held(x, false);
    } else {
      emit_final(x, res->end_ns);
    }
  } else if (d.err_class == TP_ERRCLASS_NONE) {
    /* One JSON reply: non-streaming, or a server that ignored stream. */
    tp_openai_chunk ch;
    if (tp_openai_decode(&hc->dec, hc->api, x->body.data, x->body.len, &ch)) {
      char text[84];
      tp_openai_error_text(x->body.data, TP_MIN(x->body.len, 80), 80, text);
      hold_error(x, res->end_ns, TP_ERRCLASS_PROTOCOL,
                 "bad reply from the server (not a JSON object): ", text);
      x->held.bad = true;
      d.err_class = TP_ERRCLASS_PROTOCOL;
      snprintf(msg, sizeof(msg), "%s", x->held.error);
      emit_final(x, res->end_ns);
    } else if (hold_chunk(x, &ch, res->end_ns)) {
      d.err_class = TP_ERRCLASS_PROTOCOL;
      snprintf(msg, sizeof(msg), "out of memory decoding the reply");
    } else {
      emit_final(x, res->end_ns);
    }
  } else if (x->held.have) {
    /* A failed transfer: what came before still counts, none of it final. */
    emit_held(x, false);
  }
  if (d.err_class == TP_ERRCLASS_NONE && x->error_seen) {
    d.err_class = TP_ERRCLASS_SERVER;
    snprintf(msg, sizeof(msg), "%s", x->error);
  }
  scrub(hc, msg);
  d.message = msg;
  /* The server's id: its documents' own, else the reply's x-request-id. */
  char server_id[sizeof(x->server_id)];
  snprintf(server_id, sizeof(server_id), "%s", x->server_id[0] ? x->server_id : res->request_id ? res->request_id : "");
  d.server_id = server_id[0] ? server_id : NULL;
  void *req = x->req;
  call_free(x);
  hc->cbs.on_done(req, &d);
}

static int http_send(tp_client *c, const tp_client_send *s, void *req) {
  static const tp_http_req_cbs cbs = {call_on_response, call_on_body, call_on_done};
  http_client *hc = (http_client *)c;
  hc->ropts.model = hc->model[0] ? hc->model : NULL;
  hc->ropts.request_id = s->id;
  int rv = tp_openai_build_request(&hc->reqbuf, &hc->ropts, s->prompt, s->prompt_len, s->messages, s->max_tokens,
                                   s->min_tokens);
  if (rv) return rv;
  http_call *x = calloc(1, sizeof(*x));
  if (!x) return TP_ENOMEM;
  x->hc = hc;
  x->req = req;
  x->status = 0;
  tp_sse_init(&x->sse, hc->max_response_bytes);
  tp_buf_init(&x->body);
  tp_buf_init(&x->held.text);
  held_clear(&x->held);
  tp_http_req_opts ro = {true,       hc->path,   hc->reqbuf.data, hc->reqbuf.len, hc->opts.streaming, s->timeout_ns,
                         s->session, false,      s->id,           s->traceparent};
  rv = tp_http_request(hc->http, &ro, &cbs, x, &x->hreq);
  if (rv) {
    call_free(x);
    return rv;
  }
  /* tp_http_request never calls back before returning: x is live here. */
  if (s->handle) *s->handle = x;
  return 0;
}

static void http_cancel(tp_client *c, void *handle) {
  http_call *x = handle;
  if (x) tp_http_cancel(x->hreq);
}

static void http_cancel_all(tp_client *c) {
  tp_http_cancel_all(((http_client *)c)->http);
}

/* ---- checks before the run: blocking GETs -------------------------------- */

typedef struct unary_ctx {
  uv_loop_t *loop;
  bool done;
  int status;
  tp_error_class cls;
  char message[512];
  tp_buf body;
} unary_ctx;

static int unary_on_body(tp_http_req *r, const uint8_t *d, size_t n, uint64_t t, void *ud) {
  unary_ctx *u = ud;
  if (u->body.len + n > PREFLIGHT_MAX_BODY) return 0; /* enough to read it */
  return tp_buf_append(&u->body, d, n);
}

static void unary_on_done(tp_http_req *r, const tp_http_result *res, void *ud) {
  unary_ctx *u = ud;
  u->done = true;
  tp_wake(u->loop); /* libcurl may end the transfer from its timer */
  u->status = res->status;
  u->cls = res->err_class;
  snprintf(u->message, sizeof(u->message), "%s", res->message ? res->message : "");
}

static int unary_get(http_client *hc, const char *path, unary_ctx *u) {
  static const tp_http_req_cbs cbs = {NULL, unary_on_body, unary_on_done};
  tp_buf_fini(&u->body);
  memset(u, 0, sizeof(*u));
  u->loop = hc->loop;
  /* The checks' connections close after them: the first measured request
   * never goes out on a connection a check used (a server with Nagle's
   * algorithm on delays the first answer on it by up to the client's
   * delayed-ACK time, 40 ms on Linux). */
  tp_http_req_opts ro = {false, path, NULL, 0, false, PREFLIGHT_TIMEOUT_NS, 0, true, NULL, NULL};
  int rv = tp_http_request(hc->http, &ro, &cbs, u, NULL);
  if (rv) return rv;
  while (!u->done) uv_run(hc->loop, UV_RUN_ONCE);
  return 0;
}

/* A transfer that failed before any HTTP answer: the server cannot be used. */
static int transport_failed(const unary_ctx *u, const char *url, char *err, size_t errlen) {
  /* The transport's messages name the URL and the next step already. */
  if (u->cls == TP_ERRCLASS_CONNECT && strncmp(u->message, "cannot connect", 14) == 0)
    tp_seterr(err, errlen, "%s (is the server up? check --url)", u->message);
  else if (u->cls == TP_ERRCLASS_TIMEOUT && !strstr(u->message, "TLS"))
    tp_seterr(err, errlen, "GET %.*s timed out (is it the right server? check --url)", URL_SHOWN(url));
  else
    tp_seterr(err, errlen, "%s", u->message);
  return TP_ECONNECT;
}

static void error_body_text(const unary_ctx *u, char *out) {
  tp_openai_error_text(u->body.data, u->body.len, ERROR_TEXT_CHARS, out);
}

/* GET the model list.  It checks the model name (or finds one) and the API
 * key; a server without a usable list (404, 501, a proxy's 502) can still
 * serve requests, so only the key (401/403) and the transport are fatal
 * when a model name was given. */
static int preflight_openai(http_client *hc, char *err, size_t errlen) {
  unary_ctx u;
  memset(&u, 0, sizeof(u));
  char url[TP_URL_MAX + TP_URL_QUERY_MAX + 16];
  snprintf(url, sizeof(url), "%s/models%s", hc->api_base, hc->query);
  char text[ERROR_TEXT_CHARS + 4];
  int rv = unary_get(hc, url, &u);
  if (rv) goto out;
  if (u.cls != TP_ERRCLASS_NONE) {
    rv = transport_failed(&u, url, err, errlen);
    goto out;
  }
  if (u.status == 401 || u.status == 403) {
    error_body_text(&u, text);
    scrub(hc, text);
    tp_seterr(err, errlen,
              "GET %.*s was refused with HTTP %d: %s (check the API key: --api-key-file FILE or "
              "OPENAI_API_KEY)",
              URL_SHOWN(url), u.status, text);
    rv = TP_ECONNECT;
    goto out;
  }
  if (u.status < 200 || u.status >= 300) {
    error_body_text(&u, text);
    scrub(hc, text);
    if (!hc->model[0]) {
      tp_seterr(err, errlen, "no model name given and GET %.*s answered HTTP %d: %s (use --model)",
                URL_SHOWN(url), u.status, text);
      rv = TP_ENOTFOUND;
    } else {
      snprintf(hc->warning, sizeof(hc->warning),
               "GET %.*s answered HTTP %d%s%s: cannot check that model '%s' is served; going on (if the "
               "requests fail too, check --url)",
               URL_SHOWN(url), u.status, text[0] ? ": " : "", text, hc->model);
    }
    goto out;
  }
  json_t *root = json_loadb((const char *)u.body.data, u.body.len, 0, NULL);
  json_t *data = json_object_get(root, "data");
  if (!json_is_array(data) || json_array_size(data) == 0) {
    /* An answer we cannot read says nothing either way. */
    json_decref(root);
    if (!hc->model[0]) {
      tp_seterr(err, errlen, "no model name given and GET %.*s lists none (use --model)", URL_SHOWN(url));
      rv = TP_ENOTFOUND;
    }
    goto out;
  }
  bool found = false;
  char names[256];
  size_t nl = 0;
  names[0] = 0;
  size_t i;
  json_t *m;
  json_array_foreach(data, i, m) {
    const char *id = json_string_value(json_object_get(m, "id"));
    if (!id) continue;
    if (!hc->model[0]) snprintf(hc->model, sizeof(hc->model), "%s", id);
    if (strcmp(id, hc->model) == 0) found = true;
    if (nl < sizeof(names) - 1)
      nl += (size_t)snprintf(names + nl, sizeof(names) - nl, "%s'%s'", nl ? ", " : "", id);
  }
  json_decref(root);
  if (nl >= sizeof(names) - 1) snprintf(names + sizeof(names) - 5, 5, "...");
  if (!found) {
    tp_seterr(err, errlen, "model '%s' is not served by %s (GET %.*s lists %s; check --model)", hc->model,
              tp_http_authority(hc->http), URL_SHOWN(url), names);
    rv = TP_ENOTFOUND;
  }
out:
  tp_buf_fini(&u.body);
  return rv;
}

/* Sets the request layout from the model's inputs (GET /v2/models/M). */
static int read_triton_inputs(http_client *hc, const unary_ctx *u, char *err, size_t errlen) {
  json_t *root = json_loadb((const char *)u->body.data, u->body.len, 0, NULL);
  json_t *inputs = json_object_get(root, "inputs");
  if (!json_is_array(inputs) || json_array_size(inputs) == 0) {
    json_decref(root);
    return 0; /* no metadata to go by: keep the defaults */
  }
  bool text = false, min_tokens = false, exclude = false;
  size_t i;
  json_t *in;
  json_array_foreach(inputs, i, in) {
    const char *name = json_string_value(json_object_get(in, "name"));
    if (!name) continue;
    text |= strcmp(name, "text_input") == 0;
    min_tokens |= strcmp(name, "min_tokens") == 0;
    exclude |= strcmp(name, "exclude_input_in_output") == 0;
  }
  json_decref(root);
  if (!text) {
    tp_seterr(err, errlen,
              "model '%s' has no text_input input: the generate endpoint needs a text model "
              "(a TensorRT-LLM ensemble or BLS, or a vLLM model; check --model)",
              hc->opts.model);
    return TP_EUNSUPPORTED;
  }
  hc->ropts.trtllm_min_tokens = min_tokens;
  hc->ropts.exclude_input = exclude;
  return 0;
}

static int preflight_triton(http_client *hc, char *err, size_t errlen) {
  unary_ctx u;
  memset(&u, 0, sizeof(u));
  char text[ERROR_TEXT_CHARS + 4];
  char url[TP_URL_MAX + TP_URL_QUERY_MAX + 800];
  snprintf(url, sizeof(url), "%s/health/ready%s", hc->api_base, hc->query);
  int rv = unary_get(hc, url, &u);
  if (rv) goto out;
  if (u.cls != TP_ERRCLASS_NONE) {
    rv = transport_failed(&u, url, err, errlen);
    goto out;
  }
  if (u.status != 200) {
    error_body_text(&u, text);
    scrub(hc, text);
    tp_seterr(err, errlen, "server %s is not ready: GET %.*s gave HTTP %d: %s", tp_http_authority(hc->http),
              URL_SHOWN(url), u.status, text);
    rv = TP_ECONNECT;
    goto out;
  }
  /* /models/M[/versions/V]: the generate path without its version segment
   * ("/v2", part of api_base) and its last part. */
  char model[768];
  tp_http_api_path(TP_HTTP_API_TRITON_GENERATE, hc->opts.model, hc->opts.model_version, false, model,
                   sizeof(model));
  char *slash = strrchr(model, '/');
  if (slash) *slash = 0;
  const char *below = strchr(model + 1, '/');
  below = below ? below : "";
  snprintf(url, sizeof(url), "%s%s/ready%s", hc->api_base, below, hc->query);
  rv = unary_get(hc, url, &u);
  if (rv) goto out;
  if (u.cls != TP_ERRCLASS_NONE) {
    rv = transport_failed(&u, url, err, errlen);
    goto out;
  }
  if (u.status != 200) {
    error_body_text(&u, text);
    scrub(hc, text);
    tp_seterr(err, errlen,
              "model '%s' is not ready: GET %.*s gave HTTP %d: %s (check --model and the server's model "
              "repository)",
              hc->opts.model, URL_SHOWN(url), u.status, text);
    rv = TP_ENOTFOUND;
    goto out;
  }
  snprintf(url, sizeof(url), "%s%s%s", hc->api_base, below, hc->query);
  rv = unary_get(hc, url, &u);
  if (rv) goto out;
  if (u.cls == TP_ERRCLASS_NONE && u.status == 200) rv = read_triton_inputs(hc, &u, err, errlen);
out:
  tp_buf_fini(&u.body);
  return rv;
}

static int http_preflight(tp_client *c, char *err, size_t errlen) {
  http_client *hc = (http_client *)c;
  return hc->api == TP_HTTP_API_TRITON_GENERATE ? preflight_triton(hc, err, errlen)
                                                : preflight_openai(hc, err, errlen);
}

static void http_close(tp_client *c) {
  http_client *hc = (http_client *)c;
  /* Every request still open ends CANCELLED here, while hc is alive. */
  if (hc->http) tp_http_close(hc->http);
  json_decref(hc->extra);
  tp_openai_decoder_fini(&hc->dec);
  tp_buf_fini(&hc->reqbuf);
  if (hc->api_key) {
    memset(hc->api_key, 0, strlen(hc->api_key));
    free(hc->api_key);
  }
  free(hc);
}

static void http_session_end(tp_client *c, uint64_t session) {
  tp_http_session_end(((http_client *)(void *)c)->http, session);
}

static const tp_client_ops http_ops;

/* Where requests go (see tp_url.h for how --url and --endpoint combine);
 * base gets the URL's origin for tp_http. */
static int resolve_url(http_client *hc, const tp_client_opts *o, const tp_client_http_opts *ho, char *base,
                       size_t baselen, char *err, size_t errlen) {
  char given[TP_URL_PATH_MAX + 8];
  if (ho->url && ho->url[0])
    snprintf(given, sizeof(given), "%s", ho->url);
  else
    snprintf(given, sizeof(given), "http://%s", o->target ? o->target : "");
  tp_url u;
  int rv = tp_url_parse(given, &u, err, errlen);
  if (rv) return rv;
  char api_path[1024];
  tp_http_api_path(ho->api, o->model, o->model_version, o->streaming, api_path, sizeof(api_path));
  tp_url_resolved *res = malloc(sizeof(*res));
  if (!res) return TP_ENOMEM;
  rv = tp_url_resolve(&u, api_path, ho->endpoint, res, err, errlen);
  if (rv == TP_EINVAL) {
    size_t n = strlen(err);
    if (n + 40 < errlen) snprintf(err + n, errlen - n, "; check --url and --endpoint-type");
  } else if (!rv) {
    snprintf(hc->path, sizeof(hc->path), "%s", res->endpoint);
    snprintf(hc->api_base, sizeof(hc->api_base), "%s", res->api_base);
    snprintf(hc->query, sizeof(hc->query), "%s", res->query);
    tp_url_origin(&u, base, baselen);
  }
  free(res);
  return rv;
}

void tp_client_http_opts_default(tp_client_http_opts *o) {
  memset(o, 0, sizeof(*o));
  o->api = TP_HTTP_API_OPENAI_COMPLETIONS;
  o->include_usage = true;
}

int tp_client_http_new(tp_client **out, uv_loop_t *loop, const tp_client_opts *o,
                       const tp_client_http_opts *ho, const tp_client_cbs *cbs, char *err, size_t errlen) {
  if ((unsigned)ho->api >= TP_HTTP_API_COUNT) {
    tp_seterr(err, errlen, "unknown HTTP API %d", (int)ho->api);
    return TP_EINVAL;
  }
  if (ho->api == TP_HTTP_API_TRITON_GENERATE && (!o->model || !o->model[0])) {
    tp_seterr(err, errlen, "the Triton generate endpoint needs a model name (use --model)");
    return TP_EINVAL;
  }
  http_client *hc = calloc(1, sizeof(*hc));
  if (!hc) return TP_ENOMEM;
  hc->base.ops = &http_ops;
  hc->loop = loop;
  hc->opts = *o;
  /* Borrowed for this call only (resolve_url reads them): not kept. */
  hc->opts.target = hc->opts.host = NULL;
  hc->cbs = *cbs;
  hc->api = ho->api;
  hc->max_response_bytes = o->max_response_bytes ? o->max_response_bytes : DEFAULT_MAX_RESPONSE;
  tp_openai_decoder_init(&hc->dec);
  tp_buf_init(&hc->reqbuf);
  snprintf(hc->model, sizeof(hc->model), "%s", o->model ? o->model : "");
  int rv = 0;
  if (ho->api_key && ho->api_key[0] && !(hc->api_key = tp_strndup(ho->api_key, strlen(ho->api_key))))
    rv = TP_ENOMEM;
  if (!rv) rv = tp_openai_parse_extra(&hc->extra, ho->extra_inputs, ho->n_extra_inputs, err, errlen);

  char base[TP_URL_HOST_MAX + 32];
  if (!rv) rv = resolve_url(hc, o, ho, base, sizeof(base), err, errlen);

  hc->ropts.api = ho->api;
  hc->ropts.streaming = o->streaming;
  hc->ropts.include_usage = ho->include_usage;
  hc->ropts.backend = o->backend;
  /* Until the model's metadata says otherwise: the standalone TensorRT-LLM
   * backend's min_length, and vLLM's exclude_input_in_output (r24.03+). */
  hc->ropts.trtllm_min_tokens = false;
  hc->ropts.exclude_input = o->backend == TP_BACKEND_VLLM;
  hc->ropts.extra = hc->extra;

  if (!rv) {
    tp_http_opts hopts;
    memset(&hopts, 0, sizeof(hopts));
    hopts.base_url = base;
    hopts.headers = ho->headers;
    hopts.n_headers = ho->n_headers;
    hopts.api_key = ho->api_key;
    hopts.ca_file = ho->ca_file;
    hopts.cert_file = ho->cert_file;
    hopts.key_file = ho->key_file;
    hopts.insecure = ho->insecure;
    hopts.http1_only = ho->http1_only;
    rv = tp_http_new(&hc->http, loop, &hopts, err, errlen);
  }
  if (rv) {
    hc->http = NULL;
    http_close(&hc->base);
    return rv;
  }
  *out = &hc->base;
  return 0;
}

const char *tp_client_http_model(const tp_client *c) {
  return ((const http_client *)c)->model;
}

const char *tp_client_http_warning(const tp_client *c) {
  return ((const http_client *)c)->warning;
}

const char *tp_client_http_endpoint(const tp_client *c) {
  return ((const http_client *)c)->path;
}

uint32_t tp_client_http_connections_opened(const tp_client *c) {
  return tp_http_connections_opened(((const http_client *)c)->http);
}

static const tp_client_ops http_ops = {
    .name = "http",
    .preflight = http_preflight,
    .send = http_send,
    .close = http_close,
    .cancel = http_cancel,
    .cancel_all = http_cancel_all,
    .session_end = http_session_end,
    .connections_opened = tp_client_http_connections_opened,
    .warning = tp_client_http_warning,
    .endpoint = tp_client_http_endpoint,
};

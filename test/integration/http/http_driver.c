/* Drives the HTTP client (lib/client/tp_client_http.c) through the
 * tp_client interface, the way the run will, and prints what it saw as JSON
 * lines on stdout for test_http.py: every event with its arrival time and
 * fields, every request's end, the preflight result, the connections
 * opened, and whether the loop closed with no handle left.
 *
 *   http_driver --api openai-chat --url http://127.0.0.1:PORT [options]
 *
 * Options: --model M, --backend tensorrtllm|vllm, --no-stream, --prompt P
 * (repeatable; requests cycle through them), --requests N, --concurrency N,
 * --max-tokens N, --min-tokens N, --timeout-ms N, --api-key K, --header H
 * (repeatable), --extra X (repeatable), --endpoint P, --ca-file F, --cert F,
 * --key F, --insecure, --http1, --no-usage, --preflight (run it first; stop
 * when it fails), --skip-send, --cancel-after N (ops->cancel at a request's
 * Nth event), --cancel-all-after N (ops->cancel_all at the first Nth event),
 * --session-turns T (requests go as sessions of T turns, one after another
 * per session; --concurrency sessions at once). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <uv.h>

#include "client/tp_client_http.h"
#include "transport/tp_http.h"
#include "tokperf/tokperf.h"

#define MAX_LIST 16

typedef struct driver {
  uv_loop_t loop;
  tp_client *client;
  const char *prompts[MAX_LIST];
  size_t n_prompts;
  uint32_t requests, concurrency, max_tokens, min_tokens;
  uint64_t timeout_ns;
  uint32_t started, done;
  uint32_t cancel_after;     /* cancel a request at its Nth event (0 = never) */
  uint32_t cancel_all_after; /* cancel_all at any request's Nth event (0 = never) */
  bool cancelled_all;
  uint32_t session_turns; /* > 0: requests go as sessions of this many turns */
  uint64_t sessions;      /* sessions started */
} driver;

typedef struct dreq {
  driver *d;
  uint32_t i;
  uint64_t start_ns;
  json_t *events;
  void *handle; /* for ops->cancel */
  uint64_t session; /* 0 = none */
  uint32_t turn;
} dreq;

static void out(json_t *o) {
  char *s = json_dumps(o, JSON_COMPACT);
  if (s) {
    printf("%s\n", s);
    free(s);
  }
  fflush(stdout);
  json_decref(o);
}

/* The class names, from the public X-macro (this driver links only the
 * HTTP library, not the run). */
static const char *class_name(tp_error_class c) {
#define CLASS_NAME(e, name) \
  if (c == e) return name;
  TP_ERROR_CLASSES(CLASS_NAME)
#undef CLASS_NAME
  return "?";
}

static json_t *str_or_null(const char *s) {
  return s ? json_string(s) : json_null();
}

static json_t *bytes(const uint8_t *p, size_t n) {
  json_t *v = p && n ? json_stringn((const char *)p, n) : json_string("");
  return v ? v : json_string("(not UTF-8)");
}

static void on_event(void *req, const tp_client_event *ev, uint64_t arrival_ns) {
  dreq *r = req;
  json_t *e = json_object();
  json_object_set_new(e, "t_ns", json_integer((json_int_t)arrival_ns));
  json_object_set_new(e, "text", bytes(ev->text, ev->text_len));
  json_object_set_new(e, "final", json_boolean(ev->final));
  json_object_set_new(e, "error", str_or_null(ev->error));
  json_object_set_new(e, "error_class", json_string(class_name(ev->error_class)));
  json_object_set_new(e, "server_output_tokens", json_integer(ev->server_output_tokens));
  json_object_set_new(e, "bad", json_boolean(ev->bad_message));
  json_object_set_new(e, "reasoning", json_boolean(ev->reasoning));
  json_object_set_new(e, "prompt_tokens", json_integer(ev->prompt_tokens));
  json_object_set_new(e, "completion_tokens", json_integer(ev->completion_tokens));
  json_object_set_new(e, "cached_tokens", json_integer(ev->cached_tokens));
  json_object_set_new(e, "finish_reason", str_or_null(ev->finish_reason));
  json_array_append_new(r->events, e);
  driver *d = r->d;
  size_t n = json_array_size(r->events);
  if (d->cancel_after && n == d->cancel_after) d->client->ops->cancel(d->client, r->handle);
  if (d->cancel_all_after && n == d->cancel_all_after && !d->cancelled_all) {
    d->cancelled_all = true;
    d->client->ops->cancel_all(d->client);
  }
}

static void start_one(driver *d, uint64_t session, uint32_t turn);

static void on_done(void *req, const tp_client_done *dn) {
  dreq *r = req;
  driver *d = r->d;
  json_t *o = json_object();
  json_object_set_new(o, "kind", json_string("request"));
  json_object_set_new(o, "i", json_integer(r->i));
  json_object_set_new(o, "prompt", json_string(d->prompts[r->i % d->n_prompts]));
  json_object_set_new(o, "start_ns", json_integer((json_int_t)r->start_ns));
  json_object_set_new(o, "sent_ns", json_integer((json_int_t)dn->sent_ns));
  json_object_set_new(o, "end_ns", json_integer((json_int_t)dn->end_ns));
  json_object_set_new(o, "class", json_string(class_name(dn->err_class)));
  json_object_set_new(o, "status", json_integer(dn->status));
  json_object_set_new(o, "message", json_string(dn->message ? dn->message : ""));
  json_object_set_new(o, "events", r->events);
  json_object_set_new(o, "session", json_integer((json_int_t)r->session));
  out(o);
  uint64_t session = r->session;
  uint32_t turn = r->turn;
  free(r);
  d->done++;
  /* A session's next turn follows its answer; the last one ends it. */
  bool more = d->started < d->requests;
  if (session && turn + 1 < d->session_turns && more) {
    start_one(d, session, turn + 1);
    return;
  }
  if (session) d->client->ops->session_end(d->client, session);
  if (more) start_one(d, d->session_turns ? ++d->sessions : 0, 0);
}

static void start_one(driver *d, uint64_t session, uint32_t turn) {
  dreq *r = calloc(1, sizeof(*r));
  r->d = d;
  r->session = session;
  r->turn = turn;
  r->i = d->started++;
  r->events = json_array();
  const char *p = d->prompts[r->i % d->n_prompts];
  char id[32];
  snprintf(id, sizeof(id), "r%u", r->i);
  tp_client_send s = {id, p, strlen(p), d->max_tokens, d->min_tokens, d->timeout_ns, &r->handle, NULL, NULL, session, NULL};
  r->start_ns = tp_now_ns();
  int rv = d->client->ops->send(d->client, &s, r);
  if (rv) {
    json_t *o = json_object();
    json_object_set_new(o, "kind", json_string("send_failed"));
    json_object_set_new(o, "rv", json_integer(rv));
    out(o);
    json_decref(r->events);
    free(r);
    d->done++;
  }
}

static const char *code_name(int rv) {
  switch (rv) {
    case 0: return "ok";
    case TP_ECONNECT: return "ECONNECT";
    case TP_ENOTFOUND: return "ENOTFOUND";
    case TP_EUNSUPPORTED: return "EUNSUPPORTED";
    case TP_EINVAL: return "EINVAL";
    case TP_EPROTO: return "EPROTO";
    default: return "other";
  }
}

int main(int argc, char **argv) {
  static driver d;
  tp_client_opts co;
  memset(&co, 0, sizeof(co));
  co.streaming = true;
  co.backend = TP_BACKEND_TENSORRTLLM;
  tp_client_http_opts ho;
  tp_client_http_opts_default(&ho);
  const char *headers[MAX_LIST], *extras[MAX_LIST];
  bool preflight = false, skip_send = false;
  d.requests = 1;
  d.concurrency = 1;
  d.max_tokens = 4;
  for (int i = 1; i < argc; i++) {
    const char *a = argv[i];
    const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define ARG(name) (strcmp(a, name) == 0 && v && ++i)
    if (ARG("--api")) {
      if (tp_http_api_parse(v, &ho.api)) return fprintf(stderr, "bad --api\n"), 2;
    } else if (ARG("--url")) {
      ho.url = v;
    } else if (ARG("--model")) {
      co.model = v;
    } else if (ARG("--backend")) {
      co.backend = strcmp(v, "vllm") == 0 ? TP_BACKEND_VLLM : TP_BACKEND_TENSORRTLLM;
    } else if (strcmp(a, "--no-stream") == 0) {
      co.streaming = false;
    } else if (ARG("--prompt")) {
      if (d.n_prompts < MAX_LIST) d.prompts[d.n_prompts++] = v;
    } else if (ARG("--requests")) {
      d.requests = (uint32_t)atoi(v);
    } else if (ARG("--session-turns")) {
      d.session_turns = (uint32_t)atoi(v);
    } else if (ARG("--concurrency")) {
      d.concurrency = (uint32_t)atoi(v);
    } else if (ARG("--max-tokens")) {
      d.max_tokens = (uint32_t)atoi(v);
    } else if (ARG("--min-tokens")) {
      d.min_tokens = (uint32_t)atoi(v);
    } else if (ARG("--cancel-after")) {
      d.cancel_after = (uint32_t)atoi(v);
    } else if (ARG("--cancel-all-after")) {
      d.cancel_all_after = (uint32_t)atoi(v);
    } else if (ARG("--timeout-ms")) {
      d.timeout_ns = (uint64_t)atoll(v) * TP_NS_PER_MS;
    } else if (ARG("--api-key")) {
      ho.api_key = v;
    } else if (ARG("--header")) {
      if (ho.n_headers < MAX_LIST) headers[ho.n_headers++] = v;
    } else if (ARG("--extra")) {
      if (ho.n_extra_inputs < MAX_LIST) extras[ho.n_extra_inputs++] = v;
    } else if (ARG("--endpoint")) {
      ho.endpoint = v;
    } else if (ARG("--ca-file")) {
      ho.ca_file = v;
    } else if (ARG("--cert")) {
      ho.cert_file = v;
    } else if (ARG("--key")) {
      ho.key_file = v;
    } else if (strcmp(a, "--insecure") == 0) {
      ho.insecure = true;
    } else if (strcmp(a, "--http1") == 0) {
      ho.http1_only = true;
    } else if (strcmp(a, "--no-usage") == 0) {
      ho.include_usage = false;
    } else if (strcmp(a, "--preflight") == 0) {
      preflight = true;
    } else if (strcmp(a, "--skip-send") == 0) {
      skip_send = true;
    } else {
      fprintf(stderr, "http_driver: unknown argument '%s'\n", a);
      return 2;
    }
#undef ARG
  }
  ho.headers = headers;
  ho.extra_inputs = extras;
  if (d.n_prompts == 0) d.prompts[d.n_prompts++] = "hello";

  json_t *o = json_object();
  json_object_set_new(o, "kind", json_string("classes"));
  json_object_set_new(o, "tls", json_string(class_name(TP_HTTP_ERRCLASS_TLS)));
  json_object_set_new(o, "http_status", json_string(class_name(TP_HTTP_ERRCLASS_HTTP_STATUS)));
  out(o);

  uv_loop_init(&d.loop);
  static const tp_client_cbs cbs = {on_event, on_done};
  char err[512] = "";
  int rv = tp_client_http_new(&d.client, &d.loop, &co, &ho, &cbs, err, sizeof(err));
  if (rv) {
    o = json_object();
    json_object_set_new(o, "kind", json_string("new_failed"));
    json_object_set_new(o, "code", json_string(code_name(rv)));
    json_object_set_new(o, "err", json_string(err));
    out(o);
    uv_loop_close(&d.loop);
    return 0;
  }
  if (preflight) {
    rv = d.client->ops->preflight(d.client, err, sizeof(err));
    o = json_object();
    json_object_set_new(o, "kind", json_string("preflight"));
    json_object_set_new(o, "code", json_string(code_name(rv)));
    json_object_set_new(o, "err", json_string(rv ? err : ""));
    json_object_set_new(o, "model", json_string(tp_client_http_model(d.client)));
    out(o);
    if (rv) skip_send = true;
  }
  if (!skip_send) {
    for (uint32_t k = 0; k < d.concurrency && d.started < d.requests; k++) start_one(&d, d.session_turns ? ++d.sessions : 0, 0);
    while (d.done < d.requests) uv_run(&d.loop, UV_RUN_ONCE);
  }
  o = json_object();
  json_object_set_new(o, "kind", json_string("summary"));
  json_object_set_new(o, "done", json_integer(d.done));
  json_object_set_new(o, "connections", json_integer(tp_client_http_connections_opened(d.client)));
  out(o);
  d.client->ops->close(d.client);
  uv_run(&d.loop, UV_RUN_DEFAULT);
  o = json_object();
  json_object_set_new(o, "kind", json_string("loop_closed"));
  json_object_set_new(o, "ok", json_boolean(uv_loop_close(&d.loop) == 0));
  out(o);
  return 0;
}

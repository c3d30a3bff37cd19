/* The client interface (lib/client/tp_client_factory.c, tp_client.h): the
 * factory's choice of client by service kind and URL and its refusals,
 * the optional operations' wrappers, and the fields every client fills in
 * tp_client_event, held against the in-process mock over HTTP and gRPC. */
#include <uv.h>

#include "client/tp_client_factory.h"
#include "tp_test.h"
#include "tokperf/mock.h"

static void no_event(void *req, const tp_client_event *ev, uint64_t t) { (void)req, (void)ev, (void)t; }
static void no_done(void *req, const tp_client_done *d) { (void)req, (void)d; }
static const tp_client_cbs no_cbs = {no_event, no_done};

/* Closes c and runs the loop until its handles are gone. */
static void close_client(uv_loop_t *loop, tp_client *c, const char *what) {
  c->ops->close(c);
  uv_run(loop, UV_RUN_DEFAULT);
  CHECK_INT(uv_loop_close(loop), 0, what);
}

typedef struct refusal {
  tp_service_kind kind;
  const char *url, *model;
  const char *said; /* a part of the message */
} refusal;

static void test_refusals(void) {
  static const refusal t[] = {
      {TP_SERVICE_TRITON, "", NULL, "server.url: empty URL"},
      {TP_SERVICE_OPENAI_CHAT, "http://h:8000/v1#frag", NULL, "server.url: "},
      {TP_SERVICE_TRITON, "http://127.0.0.1:8001/v2/models", NULL,
       "server.url 'http://127.0.0.1:8001/v2/models': a gRPC address has no path"},
      {TP_SERVICE_TRITON, "127.0.0.1:8001?x=1", NULL, "a gRPC address has no path"},
      {TP_SERVICE_TRITON, "localhost", NULL, "server.url 'localhost': gRPC needs HOST:PORT"},
      {TP_SERVICE_OPENAI_CHAT, "http://127.0.0.1:9/v1/completions", NULL, "check --url and --endpoint-type"},
      {TP_SERVICE_TRITON_GENERATE, "127.0.0.1:8000", NULL, "the Triton generate endpoint needs a model name"},
      {(tp_service_kind)99, "127.0.0.1:1", NULL, "unknown service kind 99"},
      {TP_SERVICE_VLLM_GRPC, "http://127.0.0.1:50051/v1", NULL, "a gRPC address has no path"},
      {TP_SERVICE_VLLM_GRPC, "localhost", NULL, "vLLM's gRPC server listens on 50051"},
      /* SGLang's scheduler takes token ids only: no tokenizer, no client. */
      {TP_SERVICE_SGLANG_GRPC, "127.0.0.1:30000", NULL, "give --tokenizer"},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    uv_loop_t loop = {0}; /* libuv keeps loop.data across init; the stamps read it */
    uv_loop_init(&loop);
    tp_client_spec s;
    tp_client_spec_default(&s);
    s.kind = t[i].kind;
    s.url = t[i].url;
    s.opts.model = t[i].model;
    tp_client *c = NULL;
    char err[600] = "", target[300] = "unset";
    int rv = tp_client_open(&c, &loop, &s, &no_cbs, target, sizeof(target), err, sizeof(err));
    CHECK(rv == TP_EINVAL && c == NULL && strstr(err, t[i].said), "'%s' (kind %d) is refused: %s", t[i].url,
          (int)t[i].kind, err);
    uv_loop_close(&loop);
  }
  /* The address is known before the kind is refused, for the report. */
  uv_loop_t loop = {0}; /* libuv keeps loop.data across init; the stamps read it */
  uv_loop_init(&loop);
  tp_client_spec s;
  tp_client_spec_default(&s);
  s.kind = (tp_service_kind)99;
  s.url = "http://[::1]:8000/v1";
  tp_client *c = NULL;
  char err[600] = "", target[300] = "";
  tp_client_open(&c, &loop, &s, &no_cbs, target, sizeof(target), err, sizeof(err));
  CHECK_STR(target, "[::1]:8000", "the target is written before the kind is refused");
  uv_loop_close(&loop);
}

typedef struct choice {
  tp_service_kind kind;
  const char *url, *model;
  bool streaming;
  const char *name, *endpoint, *target; /* endpoint NULL: none offered */
  bool stats;                           /* offers the server's statistics */
} choice;

static void test_choice(void) {
  static const choice t[] = {
      {TP_SERVICE_TRITON, "127.0.0.1:8001", "m", true, "triton-grpc", NULL, "127.0.0.1:8001", true},
      {TP_SERVICE_TRITON, "grpc://127.0.0.1:9001", "m", false, "triton-grpc", NULL, "127.0.0.1:9001", true},
      {TP_SERVICE_OPENAI_CHAT, "127.0.0.1:8000", NULL, true, "http", "http://127.0.0.1:8000/v1/chat/completions",
       "127.0.0.1:8000", false},
      {TP_SERVICE_OPENAI_COMPLETIONS, "https://127.0.0.1:9443/v1", NULL, true, "http",
       "https://127.0.0.1:9443/v1/completions", "127.0.0.1:9443", false},
      {TP_SERVICE_TRITON_GENERATE, "http://127.0.0.1:8000", "m", false, "http",
       "http://127.0.0.1:8000/v2/models/m/generate", "127.0.0.1:8000", false},
      {TP_SERVICE_TRITON_GENERATE, "127.0.0.1:8000", "m", true, "http",
       "http://127.0.0.1:8000/v2/models/m/generate_stream", "127.0.0.1:8000", false},
      {TP_SERVICE_VLLM_GRPC, "grpc://127.0.0.1:50051", NULL, true, "vllm-grpc", NULL, "127.0.0.1:50051", false},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
    uv_loop_t loop = {0}; /* libuv keeps loop.data across init; the stamps read it */
    uv_loop_init(&loop);
    tp_client_spec s;
    tp_client_spec_default(&s);
    s.kind = t[i].kind;
    s.url = t[i].url;
    s.opts.model = t[i].model;
    s.opts.streaming = t[i].streaming;
    tp_client *c = NULL;
    char err[600] = "", target[300] = "", what[200];
    int rv = tp_client_open(&c, &loop, &s, &no_cbs, target, sizeof(target), err, sizeof(err));
    CHECK(rv == 0 && c, "kind %d, '%s': opened (%s)", (int)t[i].kind, t[i].url, err);
    if (rv || !c) {
      uv_loop_close(&loop);
      continue;
    }
    snprintf(what, sizeof(what), "kind %d, '%s': the client", (int)t[i].kind, t[i].url);
    CHECK_STR(c->ops->name, t[i].name, what);
    snprintf(what, sizeof(what), "kind %d, '%s': the endpoint", (int)t[i].kind, t[i].url);
    CHECK_STR(tp_client_endpoint(c), t[i].endpoint, what);
    snprintf(what, sizeof(what), "kind %d, '%s': the target", (int)t[i].kind, t[i].url);
    CHECK_STR(target, t[i].target, what);
    CHECK(tp_client_offers_model_stats(c) == t[i].stats, "kind %d: server statistics %s", (int)t[i].kind,
          t[i].stats ? "offered" : "not offered");
    CHECK_STR(tp_client_warning(c), "", "no warning before preflight");
    CHECK_INT(tp_client_connections_opened(c), 0, "no connection opened before a request");
    if (!t[i].stats) {
      struct tp_triton_model_counters *mc = NULL;
      size_t n = 0;
      err[0] = 0;
      rv = tp_client_model_stats(c, &mc, &n, err, sizeof(err));
      CHECK(rv == TP_EUNSUPPORTED && strstr(err, "reads no server statistics"), "statistics refused: %s", err);
      CHECK_INT(tp_client_model_stats_start(c, NULL, NULL), TP_EUNSUPPORTED, "statistics in flight refused");
      err[0] = 0;
      rv = tp_client_check_inputs(c, "{}", err, sizeof(err));
      CHECK(rv == TP_EUNSUPPORTED && strstr(err, "sends no input file's tensors"), "input check refused: %s",
            err);
    }
    close_client(&loop, c, "the loop closes with nothing left");
  }
}

/* ---- events against the mock --------------------------------------------- */

#define MAX_EV 64

typedef struct seen {
  size_t n;
  tp_client_event ev[MAX_EV];
  char finish[MAX_EV][32];
  bool done;
  tp_client_done d;
  char message[512];
} seen;

static void on_event(void *req, const tp_client_event *ev, uint64_t t) {
  (void)t;
  seen *s = req;
  if (s->n >= MAX_EV) return;
  s->ev[s->n] = *ev;
  s->ev[s->n].text = NULL; /* borrowed: not kept */
  s->ev[s->n].error = NULL;
  snprintf(s->finish[s->n], sizeof(s->finish[0]), "%s", ev->finish_reason ? ev->finish_reason : "");
  s->ev[s->n].finish_reason = NULL;
  s->n++;
}

static void on_done(void *req, const tp_client_done *d) {
  seen *s = req;
  s->d = *d;
  snprintf(s->message, sizeof(s->message), "%s", d->message ? d->message : "");
  s->d.message = s->message;
  s->done = true;
}

/* A client the factory opens for kind on the mock at url, its preflight
 * passed (checked); NULL, with the loop closed, when it cannot open. */
static tp_client *open_on_mock(uv_loop_t *loop, tp_service_kind kind, const char *url, bool streaming,
                               uint32_t connections) {
  static const tp_client_cbs cbs = {on_event, on_done};
  uv_loop_init(loop);
  tp_client_spec s;
  tp_client_spec_default(&s);
  s.kind = kind;
  s.url = url;
  s.opts.model = "ensemble"; /* a model the mock serves, TensorRT-LLM's layout */
  s.opts.backend = TP_BACKEND_TENSORRTLLM;
  s.opts.streaming = streaming;
  s.opts.connections = connections;
  tp_client *c = NULL;
  char err[600] = "";
  int rv = tp_client_open(&c, loop, &s, &cbs, NULL, 0, err, sizeof(err));
  CHECK(rv == 0, "kind %d: opened on %s (%s)", (int)kind, url, err);
  if (rv) {
    uv_loop_close(loop);
    return NULL;
  }
  rv = c->ops->preflight(c, err, sizeof(err));
  CHECK(rv == 0, "kind %d: preflight passes (%s)", (int)kind, err);
  return c;
}

/* One streamed request of 4 tokens (2 of them reasoning on chat) to the
 * mock through a client the factory opens for kind. */
static int one_request(tp_service_kind kind, const char *url, seen *out) {
  uv_loop_t loop = {0}; /* libuv keeps loop.data across init; the stamps read it */
  tp_client *c = open_on_mock(&loop, kind, url, true, 0);
  if (!c) return TP_ECONNECT;
  int rv;
  CHECK_STR(tp_client_warning(c), "", "nothing to warn of after a clean preflight");
  memset(out, 0, sizeof(*out));
  tp_client_send snd = {.id = "r1", .prompt = "one two three", .prompt_len = 13, .max_tokens = 4,
                        .timeout_ns = (uint64_t)(10 * tp_test_time_scale()) * TP_NS_PER_S};
  rv = c->ops->send(c, &snd, out);
  CHECK_INT(rv, 0, "the request is sent");
  while (!rv && !out->done) uv_run(&loop, UV_RUN_ONCE);
  CHECK(out->d.err_class == TP_ERRCLASS_NONE, "kind %d: the request completes (%s)", (int)kind, out->message);
  CHECK(tp_client_connections_opened(c) >= 1, "the connection is counted");
  close_client(&loop, c, "the loop closes with nothing left");
  return rv;
}

static void test_http_events(tp_mock *m) {
  char url[64];
  snprintf(url, sizeof(url), "http://127.0.0.1:%d", tp_mock_http_port(m));
  seen s;
  if (one_request(TP_SERVICE_OPENAI_CHAT, url, &s)) return;
  size_t reasoning = 0, content = 0, with_usage = 0, finish_at = MAX_EV, statuses = 0;
  int64_t prompt = -1, completion = -1;
  for (size_t i = 0; i < s.n; i++) {
    const tp_client_event *e = &s.ev[i];
    if (e->text_len) {
      if (e->reasoning) reasoning++;
      else content++;
    }
    if (e->status == 200) statuses++;
    if (e->prompt_tokens >= 0 || e->completion_tokens >= 0) {
      with_usage++;
      prompt = e->prompt_tokens;
      completion = e->completion_tokens;
    }
    if (s.finish[i][0]) finish_at = i;
  }
  CHECK(s.n >= 4, "chat: events came (%zu)", s.n);
  CHECK_INT(reasoning, 2, "chat: the two reasoning tokens come flagged");
  CHECK_INT(content, 2, "chat: the two answer tokens come unflagged");
  CHECK_INT(statuses, s.n, "chat: every event carries HTTP 200");
  CHECK(with_usage >= 1, "chat: the usage comes in an event");
  CHECK_INT(prompt, 3, "chat: usage.prompt_tokens as the server gave it");
  CHECK_INT(completion, 4, "chat: usage.completion_tokens as the server gave it");
  CHECK(finish_at < s.n && strcmp(s.finish[finish_at], "length") == 0, "chat: the finish reason comes (%s)",
        finish_at < s.n ? s.finish[finish_at] : "none");
  CHECK(s.n && s.ev[s.n - 1].final, "chat: the last event is final");
}

static void test_grpc_events(tp_mock *m) {
  char url[64];
  snprintf(url, sizeof(url), "127.0.0.1:%d", tp_mock_port(m));
  seen s;
  if (one_request(TP_SERVICE_TRITON, url, &s)) return;
  size_t text = 0, unfilled = 0;
  for (size_t i = 0; i < s.n; i++) {
    const tp_client_event *e = &s.ev[i];
    text += e->text_len > 0;
    unfilled += !e->reasoning && e->prompt_tokens == -1 && e->completion_tokens == -1 && e->cached_tokens == -1 &&
                !s.finish[i][0] && e->status == -1;
  }
  CHECK(text >= 2, "gRPC: text comes (%zu events)", s.n);
  CHECK_INT(unfilled, s.n, "gRPC: what KServe v2 does not carry is left -1 / NULL / false");
  CHECK(s.n && s.ev[s.n - 1].final, "gRPC: the last event is final");
}

/* Busy-waits: a write the hold did not keep back would leave meanwhile. */
static uint64_t spin_us(uint64_t us) {
  uint64_t until = tp_now_ns() + us * 1000;
  while (tp_now_ns() < until) {
  }
  return until;
}

/* tp_client_hold: requests sent under a hold (nested holds count) leave in
 * one write when the last hold goes, stamped then; without a hold each
 * leaves as it is sent. */
static void test_grpc_hold(tp_mock *m) {
  char url[64];
  snprintf(url, sizeof(url), "127.0.0.1:%d", tp_mock_port(m));
  uv_loop_t loop = {0}; /* libuv keeps loop.data across init; the stamps read it */
  /* Two connections: held requests share one connection's write. */
  tp_client *c = open_on_mock(&loop, TP_SERVICE_TRITON, url, false, 2);
  if (!c) return;
  seen *r = calloc(7, sizeof(*r));
  tp_client_send snd = {.id = "h", .prompt = "one two", .prompt_len = 7, .max_tokens = 2,
                        .timeout_ns = (uint64_t)(10 * tp_test_time_scale()) * TP_NS_PER_S};
  /* Both connections open and ready first. */
  CHECK_INT(c->ops->send(c, &snd, &r[0]), 0, "hold: the first request is sent");
  while (!r[0].done) uv_run(&loop, UV_RUN_ONCE);
  tp_client_hold(c, true);
  tp_client_hold(c, true);
  for (int i = 1; i <= 3; i++) {
    CHECK_INT(c->ops->send(c, &snd, &r[i]), 0, "hold: a held request is sent");
    spin_us(300);
  }
  tp_client_hold(c, false); /* one hold left */
  spin_us(300);
  uint64_t released = tp_now_ns();
  tp_client_hold(c, false);
  uint64_t after = tp_now_ns();
  /* Without a hold each request leaves at once. */
  uint64_t sent_at[3];
  for (int i = 4; i <= 6; i++) {
    sent_at[i - 4] = tp_now_ns();
    CHECK_INT(c->ops->send(c, &snd, &r[i]), 0, "hold: a request is sent without a hold");
    spin_us(300);
  }
  for (int i = 1; i <= 6; i++)
    while (!r[i].done) uv_run(&loop, UV_RUN_ONCE);
  for (int i = 1; i <= 6; i++)
    CHECK(r[i].d.err_class == TP_ERRCLASS_NONE && r[i].d.sent_ns, "hold: request %d completes (%s)", i,
          r[i].message);
  for (int i = 1; i <= 3; i++)
    CHECK(r[i].d.sent_ns >= released && r[i].d.sent_ns <= after,
          "hold: held request %d left when the last hold went (%+.3f ms after)", i,
          ((double)r[i].d.sent_ns - (double)released) / 1e6);
  CHECK(r[1].d.sent_ns == r[2].d.sent_ns && r[2].d.sent_ns == r[3].d.sent_ns,
        "hold: the held requests left in one write (one send time)");
  for (int i = 4; i <= 6; i++)
    CHECK(r[i].d.sent_ns >= sent_at[i - 4] && r[i].d.sent_ns < sent_at[i - 4] + 300000,
          "hold: request %d without a hold left as it was sent (%+.3f ms)", i,
          ((double)r[i].d.sent_ns - (double)sent_at[i - 4]) / 1e6);
  /* A large hold still spreads over the connections (8 calls at most
   * join one): 20 held requests leave in one write per connection, two
   * send times in all. */
  seen *big = calloc(20, sizeof(*big));
  tp_client_hold(c, true);
  for (int i = 0; i < 20; i++) CHECK_INT(c->ops->send(c, &snd, &big[i]), 0, "hold: one of 20 held requests is sent");
  tp_client_hold(c, false);
  for (int i = 0; i < 20; i++)
    while (!big[i].done) uv_run(&loop, UV_RUN_ONCE);
  uint64_t times[20];
  size_t distinct = 0;
  for (int i = 0; i < 20; i++) {
    size_t k = 0;
    while (k < distinct && times[k] != big[i].d.sent_ns) k++;
    if (k == distinct) times[distinct++] = big[i].d.sent_ns;
  }
  CHECK_INT(distinct, 2, "hold: 20 held requests went over both connections, one write each");
  free(big);
  free(r);
  close_client(&loop, c, "hold: the loop closes with nothing left");
}

static void test_events(void) {
  tp_mock_config mc;
  tp_mock_config_default(&mc);
  mc.host = "127.0.0.1";
  mc.grpc_port = 0;
  mc.http_port = 0;
  mc.quiet = true;
  mc.ttft_ms = 1;
  mc.itl_ms = 1;
  mc.output_tokens = 4;
  mc.reasoning_tokens = 2;
  tp_mock *m = NULL;
  char err[512] = "";
  int rv = tp_mock_start(&m, &mc, err, sizeof(err));
  CHECK(rv == 0, "the mock starts (%s)", err);
  if (rv) return;
  test_http_events(m);
  test_grpc_events(m);
  test_grpc_hold(m);
  tp_mock_stop(m);
}

int main(void) {
  test_refusals();
  test_choice();
  test_events();
  return tp_test_done();
}

/* End to end against the built-in mock: the client's time to first token
 * and inter-token latency must match both the configured timing (50 ms, 10
 * ms, 32 tokens) and the mock's own log of when it sent each response, and
 * the in-flight count must never exceed the level's concurrency, as counted
 * by the server itself.  Everything runs on one monotonic clock, so the log
 * and the client's records are directly comparable request by request. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tokperf/tokperf.h"
#include "tp_test.h"

typedef struct mock_req {
  char id[48];
  uint64_t req_ns, first_ns, last_ns;
  int n_text;
} mock_req;

static mock_req *find_req(mock_req *v, size_t n, const char *id) {
  for (size_t i = 0; i < n; i++)
    if (strcmp(v[i].id, id) == 0) return &v[i];
  return NULL;
}

/* Reads the mock's log: request arrival and response send times by id. */
static size_t read_mock_log(const char *path, mock_req *v, size_t cap) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = 0;
  char *line = NULL;
  size_t len = 0;
  while (getline(&line, &len, f) > 0) {
    json_t *o = json_loads(line, 0, NULL);
    if (!o) continue;
    const char *ev = json_string_value(json_object_get(o, "ev"));
    const char *id = json_string_value(json_object_get(o, "id"));
    uint64_t t = (uint64_t)json_integer_value(json_object_get(o, "t_ns"));
    if (ev && id) {
      mock_req *r = find_req(v, n, id);
      if (!r && n < cap && strcmp(ev, "request") == 0) {
        r = &v[n++];
        memset(r, 0, sizeof(*r));
        snprintf(r->id, sizeof(r->id), "%s", id);
        r->req_ns = t;
      } else if (r && strcmp(ev, "response") == 0) {
        const char *text = json_string_value(json_object_get(o, "text"));
        if (text && text[0]) {
          if (!r->first_ns) r->first_ns = t;
          r->last_ns = t;
          r->n_text++;
        }
      }
    }
    json_decref(o);
  }
  free(line);
  fclose(f);
  return n;
}

static double slack(void);

/* How late a send stamped at its write's completion may be (see the
 * causality check). */
#define SEND_SLACK_NS 500000.0

/* The fidelity bounds hold for the normal build; sanitizer builds (which
 * set TP_TEST_TIMEOUT_MULTIPLIER above 1) run every instruction several
 * times slower, so their bounds are doubled. */
static double slack(void) { return tp_test_time_scale() > 1 ? 2.0 : 1.0; }

/* The in-process mock at fixed timings (50 ms to the first token, 10 ms per
 * token, 32 tokens, no load-dependent slowdown) logging to log_path, and a
 * run of one level at *conc against it: 16 requests, or two per slot. */
static void fixed_timing_run(tp_mock_config *mc, tp_config *cfg, uint32_t *conc, const char *tokenizer,
                             const char *log_path) {
  tp_mock_config_default(mc);
  mc->ttft_ms = 50;
  mc->itl_ms = 10;
  mc->output_tokens = 32;
  mc->prefill_us_per_token = 0;
  mc->prefill_queue_ms = 0;
  mc->itl_us_per_seq = 0;
  mc->log_path = log_path;
  tp_config_default(cfg);
  cfg->load.concurrency = conc;
  cfg->load.n_concurrency = 1;
  cfg->measure.request_count = *conc < 8 ? 16 : 2 * (uint64_t)*conc;
  cfg->prompts.tokenizer = tokenizer;
  cfg->output.progress = NULL;
}

/* Starts mc's mock in-process on free loopback ports and points cfg at it,
 * as `tokperf profile --mock` does: its gRPC port for Triton gRPC, else its
 * HTTP one.  NULL, the failure counted, when it cannot start. */
static tp_mock *start_mock(tp_mock_config *mc, tp_config *cfg, char *url, size_t urllen) {
  mc->host = "127.0.0.1";
  mc->grpc_port = 0;
  mc->http_port = cfg->server.service_kind == TP_SERVICE_TRITON ? -1 : 0;
  mc->quiet = true;
  char err[512] = "";
  tp_mock *m = NULL;
  int rv = tp_mock_start(&m, mc, err, sizeof(err));
  if (rv) {
    CHECK(0, "the mock starts (%s)", err);
    return NULL;
  }
  bool grpc = cfg->server.service_kind == TP_SERVICE_TRITON;
  snprintf(url, urllen, "127.0.0.1:%d", grpc ? tp_mock_port(m) : tp_mock_http_port(m));
  cfg->server.url = url;
  return m;
}

/* The client's records held against the mock's log, request by request:
 * one clock, causal, and the client's TTFT and ITL close to the true ones. */
static void hold_against_log(uint32_t conc, uint64_t expected, const char *log_path, const char *rec_path) {
  char what[160];
  size_t cap = 4096;
  mock_req *mr = calloc(cap, sizeof(*mr));
  size_t nm = read_mock_log(log_path, mr, cap);
  snprintf(what, sizeof(what), "c=%u: the mock logged every request", conc);
  CHECK_INT(nm, expected, what);
  double sum_true_ttft = 0, sum_client_ttft = 0, sum_true_itl = 0, sum_client_itl = 0;
  size_t n = 0, causal = 0, close_enough = 0;
  double worst = 0;
  FILE *f = fopen(rec_path, "r");
  char *line = NULL;
  size_t len = 0;
  while (f && getline(&line, &len, f) > 0) {
    json_t *o = json_loads(line, 0, NULL);
    if (!o) continue;
    const char *id = json_string_value(json_object_get(o, "id"));
    mock_req *m = id ? find_req(mr, nm, id) : NULL;
    uint64_t sent = (uint64_t)json_integer_value(json_object_get(o, "sent_ns"));
    uint64_t first = (uint64_t)json_integer_value(json_object_get(o, "first_token_ns"));
    uint64_t last = (uint64_t)json_integer_value(json_object_get(o, "last_token_ns"));
    if (m && m->first_ns && m->n_text > 1) {
      double true_ttft = (double)(m->first_ns - m->req_ns) / 1e6;
      double client_ttft = (double)(first - sent) / 1e6;
      double true_itl = (double)(m->last_ns - m->first_ns) / 1e6 / (m->n_text - 1);
      double client_itl = (double)(last - first) / 1e6 / (m->n_text - 1);
      sum_true_ttft += true_ttft;
      sum_client_ttft += client_ttft;
      sum_true_itl += true_itl;
      sum_client_itl += client_itl;
      n++;
      /* One clock: the client sent before the mock received, and saw the
       * first token after the mock sent it.  A request whose bytes the
       * socket took only after the write call (a wave too large for the
       * socket's buffer) is stamped when the write completes, just after
       * the syscall that took its last byte, while on loopback the
       * receiver's kernel stamps the bytes inside that syscall: its send
       * time may trail the mock's receipt by the syscall's return, never
       * more than SEND_SLACK_NS. */
      if (sent <= m->req_ns + SEND_SLACK_NS * slack() && first >= m->first_ns)
        causal++;
      else
        printf("# c=%u: %s: sent %+.1f us after the mock's receipt, first token %+.1f us after the mock's send\n",
               conc, id, ((double)sent - (double)m->req_ns) / 1e3, ((double)first - (double)m->first_ns) / 1e3);
      if (client_ttft - true_ttft < 2.0 * slack()) close_enough++;
      if (client_ttft - true_ttft > worst) worst = client_ttft - true_ttft;
    }
    json_decref(o);
  }
  free(line);
  if (f) fclose(f);
  free(mr);
  snprintf(what, sizeof(what), "c=%u: every record matched a logged request", conc);
  CHECK_INT(n, expected, what);
  if (n == 0) return;
  snprintf(what, sizeof(what), "c=%u: sends and arrivals are causal on the one clock", conc);
  CHECK_INT(causal, n, what);
  /* Per request, a shared 2-core machine may pause either thread for a few
   * ms now and then; the bound is on 95% of requests, the means below are
   * the fidelity figures. */
  printf("# c=%u: largest client-minus-mock TTFT %.3f ms\n", conc, worst);
  snprintf(what, sizeof(what), "c=%u: 95%% of client TTFTs within %.0f ms of the mock's true one", conc, 2.0 * slack());
  CHECK(close_enough * 100 >= n * 95, "%s (%zu of %zu)", what, close_enough, n);
  /* The mock is never early; on a busy machine it is late, and the client
   * is held against what it really did, below, not against its settings. */
  snprintf(what, sizeof(what), "c=%u: mock's true mean TTFT not below its 50 ms", conc);
  CHECK(sum_true_ttft / n >= 50.0 - 0.05, "%s (%.3f)", what, sum_true_ttft / n);
  snprintf(what, sizeof(what), "c=%u: client mean TTFT within 1 ms of the mock's log", conc);
  CHECK_NEAR(sum_client_ttft / n, sum_true_ttft / n, 1.0 * slack(), what);
  snprintf(what, sizeof(what), "c=%u: client mean ITL within 0.2 ms of the mock's log", conc);
  CHECK_NEAR(sum_client_itl / n, sum_true_itl / n, 0.2 * slack(), what);
}

/* reader: the client reads its sockets on a thread of its own
 * (--reader-thread); the checks are the same. */
static void run_level(uint32_t conc, bool reader, const char *tokenizer, const char *dir) {
  char log_path[512], rec_path[512];
  snprintf(log_path, sizeof(log_path), "%s/mock-%u%s.jsonl", dir, conc, reader ? "-reader" : "");
  snprintf(rec_path, sizeof(rec_path), "%s/records-%u%s.jsonl", dir, conc, reader ? "-reader" : "");
  if (reader) printf("# the next checks: c=%u with --reader-thread\n", conc);

  tp_mock_config mc;
  tp_config cfg;
  fixed_timing_run(&mc, &cfg, &conc, tokenizer, log_path);
  cfg.output.records_path = rec_path;
  cfg.server.reader_thread = reader;
  char url[64];
  tp_mock *mock = start_mock(&mc, &cfg, url, sizeof(url));
  if (!mock) return;

  char err[512] = "";
  tp_run *run = NULL;
  int rv = tp_run_new(&run, &cfg, err, sizeof(err));
  CHECK_INT(rv, 0, "run created");
  if (rv) {
    printf("# %s\n", err);
    tp_mock_stop(mock);
    return;
  }
  tp_run_set_mock(run, &mc);
  rv = tp_run_exec(run, err, sizeof(err));
  CHECK_INT(rv, 0, "run completed");
  if (rv) printf("# %s\n", err);
  const tp_level_result *lv = tp_run_level(run, 0);
  /* The counters go through the run to its reports, unchanged. */
  tp_mock_stats got, ms;
  tp_mock_get_stats(mock, &got);
  CHECK(tp_run_mock_stats(run, &ms) == TP_ENOTFOUND, "c=%u: no counters before they are given", conc);
  tp_run_set_mock_stats(run, &got);
  int have_stats = tp_run_mock_stats(run, &ms) == 0;
  CHECK(have_stats && ms.requests == got.requests && ms.responses == got.responses &&
            ms.max_active_streams == got.max_active_streams,
        "c=%u: the run hands back the mock's counters", conc);
  CHECK(lv != NULL, "c=%u: level result present", conc);
  if (!lv || !have_stats) {
    tp_run_free(run);
    tp_mock_stop(mock);
    return;
  }
  char what[160];
  snprintf(what, sizeof(what), "c=%u: every request succeeded", conc);
  CHECK_INT(lv->failed, 0, what);
  snprintf(what, sizeof(what), "c=%u: measured requests", conc);
  CHECK_INT(lv->requests, cfg.measure.request_count, what);
  /* The level's figures against the mock's log come below (the records
   * they are computed from, request by request); here only what holds
   * however late a busy mock is: no TTFT below the mock's 50 ms. */
  snprintf(what, sizeof(what), "c=%u: mean TTFT not below the mock's 50 ms", conc);
  CHECK(lv->ttft_ms.avg >= 50.0 - 0.05, "%s (%.3f)", what, lv->ttft_ms.avg);
  snprintf(what, sizeof(what), "c=%u: no answer dated before its send", conc);
  CHECK_INT(lv->answers_before_send, 0, what);
  snprintf(what, sizeof(what), "c=%u: every request counted 32 output tokens", conc);
  CHECK(lv->output_tokens.min == 32 && lv->output_tokens.max == 32, "%s", what);
  snprintf(what, sizeof(what), "c=%u: client in-flight peak equals the target", conc);
  CHECK_INT(lv->max_in_flight, conc, what);
  snprintf(what, sizeof(what), "c=%u: the mock never saw more streams than the target", conc);
  CHECK(ms.max_active_streams <= conc, "%s (mock max %u)", what, ms.max_active_streams);
  snprintf(what, sizeof(what), "c=%u: the mock saw the target concurrency", conc);
  CHECK_INT(ms.max_active_streams, conc, what);
  tp_run_free(run);
  /* Stopping the mock flushes its log. */
  tp_mock_stop(mock);

  /* Now hold the client's records against the mock's log. */
  hold_against_log(conc, cfg.measure.request_count, log_path, rec_path);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* The HTTP send times against the mock's receive stamps.  The mock names
 * HTTP requests itself, so they cannot be paired by id; but every request
 * reaches the mock after the client sent it, so with both lists in time
 * order the k-th send can be no later than the k-th receipt (were one
 * later, some request would have been received before it was sent).  The
 * same holds for the mock's first text sends and the client's first
 * tokens.  HTTP send times are the kernel's transmit stamps, taken in the
 * write, before the mock's receive stamp; the slack covers only the two
 * conversions of the kernel's wall-clock stamps onto the monotonic clock. */
#define HTTP_CAUSAL_SLACK_NS 50000
static void http_causality(const char *name, uint32_t conc, const char *rec_path, const mock_req *mr, size_t nm) {
  size_t cap = nm + 64;
  uint64_t *sent = calloc(cap, sizeof(*sent)), *first = calloc(cap, sizeof(*first));
  uint64_t *rx = calloc(nm + 1, sizeof(*rx)), *tx = calloc(nm + 1, sizeof(*tx));
  size_t ns = 0, nf = 0, nr = 0, nt = 0;
  FILE *f = fopen(rec_path, "r");
  char *line = NULL;
  size_t len = 0;
  while (f && getline(&line, &len, f) > 0) {
    json_t *o = json_loads(line, 0, NULL);
    if (!o) continue;
    uint64_t s = (uint64_t)json_integer_value(json_object_get(o, "sent_ns"));
    uint64_t t = (uint64_t)json_integer_value(json_object_get(o, "first_token_ns"));
    if (s && ns < cap) sent[ns++] = s;
    if (t && nf < cap) first[nf++] = t;
    json_decref(o);
  }
  free(line);
  if (f) fclose(f);
  for (size_t i = 0; i < nm; i++) {
    rx[nr++] = mr[i].req_ns;
    if (mr[i].first_ns) tx[nt++] = mr[i].first_ns;
  }
  qsort(sent, ns, sizeof(*sent), cmp_u64);
  qsort(first, nf, sizeof(*first), cmp_u64);
  qsort(rx, nr, sizeof(*rx), cmp_u64);
  qsort(tx, nt, sizeof(*tx), cmp_u64);
  CHECK(ns == nr && ns > 0, "%s c=%u: every request sent has a send time and a mock receipt (%zu, %zu)", name, conc,
        ns, nr);
  size_t late = 0, early = 0;
  double worst = -1e18, worst_first = -1e18;
  for (size_t i = 0; i < ns && i < nr; i++) {
    double d = (double)sent[i] - (double)rx[i];
    if (d > HTTP_CAUSAL_SLACK_NS) late++;
    if (d > worst) worst = d;
  }
  for (size_t i = 0; i < nf && i < nt; i++) {
    double d = (double)tx[i] - (double)first[i];
    if (d > HTTP_CAUSAL_SLACK_NS) early++;
    if (d > worst_first) worst_first = d;
  }
  CHECK(late == 0, "%s c=%u: no send is dated after the mock received it (%zu of %zu; latest %+.1f us)", name, conc,
        late, ns, worst / 1e3);
  CHECK(early == 0 && nf == nt, "%s c=%u: no first token is dated before the mock sent it (%zu of %zu; %+.1f us)",
        name, conc, early, nf, worst_first / 1e3);
  free(sent);
  free(first);
  free(rx);
  free(tx);
}

/* The HTTP endpoints: the mock names HTTP requests itself, so the log is
 * held against the records by their means and in time order, not request
 * by request. */
static void run_http_level(uint32_t conc, tp_service_kind kind, const char *tokenizer, const char *dir) {
  char log_path[512], rec_path[512];
  snprintf(log_path, sizeof(log_path), "%s/mock-http-%d-%u.jsonl", dir, (int)kind, conc);
  snprintf(rec_path, sizeof(rec_path), "%s/records-http-%d-%u.jsonl", dir, (int)kind, conc);
  tp_mock_config mc;
  tp_config cfg;
  fixed_timing_run(&mc, &cfg, &conc, tokenizer, log_path);
  cfg.server.service_kind = kind;
  cfg.artifacts.no_artifacts = true;
  cfg.output.records_path = rec_path;
  char url[64];
  tp_mock *mock = start_mock(&mc, &cfg, url, sizeof(url));
  if (!mock) return;
  const char *name = kind == TP_SERVICE_OPENAI_CHAT ? "chat" : "completions";
  char err[512] = "";
  tp_run *run = NULL;
  if (tp_run_new(&run, &cfg, err, sizeof(err)) || tp_run_exec(run, err, sizeof(err))) {
    CHECK(0, "%s c=%u: run completed (%s)", name, conc, err);
    tp_run_free(run);
    tp_mock_stop(mock);
    return;
  }
  const tp_level_result *lv = tp_run_level(run, 0);
  CHECK(lv && lv->failed == 0 && lv->succeeded == cfg.measure.request_count,
        "%s c=%u: every request succeeded", name, conc);
  /* 64 HTTP/1.1 answers arriving together are read one socket after
   * another, each after libcurl, SSE and JSON work on the ones before; the
   * kernel's receive stamps (tp_stamp_fd) keep that work out of the TTFT. */
  double ttft_bound = 1.0 * slack();
  if (lv) {
    /* The mock is never early (a busy one is late, which the log shows and
     * the comparison below allows for); a client that dated answers early
     * or sends late would read below the configured times. */
    CHECK(lv->ttft_ms.avg >= 50.0 - 0.05, "%s c=%u: mean TTFT not below the mock's 50 ms (%.3f)", name, conc,
          lv->ttft_ms.avg);
    CHECK(lv->answers_before_send == 0, "%s c=%u: no answer dated before its send", name, conc);
    CHECK(lv->output_tokens.min == 32 && lv->output_tokens.max == 32, "%s c=%u: 32 output tokens each", name, conc);
  }
  double client_ttft = lv ? lv->ttft_ms.avg : 0, client_itl = lv ? lv->itl_ms.avg : 0;
  tp_run_free(run);
  tp_mock_stop(mock);
  /* The mock's own log: request arrival to first text, averaged. */
  size_t cap = 4096;
  mock_req *mr = calloc(cap, sizeof(*mr));
  size_t nm = read_mock_log(log_path, mr, cap);
  double sum = 0, sum_itl = 0;
  size_t n = 0, n_itl = 0;
  for (size_t i = 0; i < nm; i++) {
    if (mr[i].first_ns) {
      sum += (double)(mr[i].first_ns - mr[i].req_ns) / 1e6;
      n++;
    }
    if (mr[i].n_text > 1) {
      sum_itl += (double)(mr[i].last_ns - mr[i].first_ns) / 1e6 / (mr[i].n_text - 1);
      n_itl++;
    }
  }
  http_causality(name, conc, rec_path, mr, nm);
  if (n_itl)
    CHECK(fabs(client_itl - sum_itl / (double)n_itl) <= 0.2 * slack(),
          "%s c=%u: client mean ITL within 0.2 ms of the mock's log (%.4f vs %.4f)", name, conc, client_itl,
          sum_itl / (double)n_itl);
  free(mr);
  CHECK_INT(n, cfg.measure.request_count, "the mock logged every HTTP request");
  if (n)
    CHECK(fabs(client_ttft - sum / (double)n) <= ttft_bound,
          "%s c=%u: client mean TTFT within %.0f ms of the mock's log (%.3f vs %.3f)", name, conc, ttft_bound,
          client_ttft, sum / (double)n);
}

int main(void) {
  const char *tok = getenv("TP_WORDS_MODEL");
  if (!tok) {
    printf("1..0 # SKIP TP_WORDS_MODEL not set\n");
    return 0;
  }
  char dir[] = "/tmp/tp_e2e_XXXXXX";
  if (!mkdtemp(dir)) {
    printf("Bail out! cannot make a temporary directory\n");
    return 1;
  }
  run_level(1, false, tok, dir);
  run_level(8, false, tok, dir);
  run_level(64, false, tok, dir);
  run_level(8, true, tok, dir);
  run_level(64, true, tok, dir);
  static const uint32_t concs[] = {1, 8, 64};
  for (size_t i = 0; i < 3; i++) {
    run_http_level(concs[i], TP_SERVICE_OPENAI_CHAT, tok, dir);
    run_http_level(concs[i], TP_SERVICE_OPENAI_COMPLETIONS, tok, dir);
  }
  char cmd[600];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  if (system(cmd) != 0) printf("# could not remove %s\n", dir);
  return tp_test_done();
}

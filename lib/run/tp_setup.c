/* Start-up, before the first level: the loop and its handles, the
 * tokenizer and the prompts it makes, the server's address, the client and its
 * preflight, scraping, artifacts and the records file. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "run/tp_run_internal.h"
#include "client/tp_client_factory.h"
#include "client/tp_client_http.h"
#include "dataset/tp_synth.h"
#include "util/tp_stamp.h"

#define PACER_SPIN_NS (20 * 1000ull)

static void warm_work(uv_work_t *w) { (void)w; }

/* The loop's handles, the thread pool, arrival stamps and the precise
 * timers. */
static int setup_loop(tp_run *r, char *err, size_t errlen) {
  int rv;
  r->interrupt_async.data = r;
  uv_async_init(&r->loop, &r->interrupt_async, tpr_on_interrupt);
  uv_timer_init(&r->loop, &r->progress_timer);
  r->progress_timer.data = r;
  uv_timer_init(&r->loop, &r->sat_timer);
  r->sat_timer.data = r;
  uv_timer_init(&r->loop, &r->window_timer);
  r->window_timer.data = r;
  uv_timer_init(&r->loop, &r->grace_timer);
  r->grace_timer.data = r;
  tp_defer_init(&r->done_defer, &r->loop, tpr_on_done_defer, r);
  /* libuv starts its thread pool on first use, which takes milliseconds:
   * start it now rather than inside the first request's completion. */
  static uv_work_t warm;
  uv_queue_work(&r->loop, &warm, warm_work, NULL);
  r->progress_tty = r->cfg.output.progress && isatty(fileno(r->cfg.output.progress));
  rv = tp_stamp_install(&r->loop);
  if (rv) return rv;
  rv = tp_timers_new(&r->timers, &r->loop);
  if (rv) {
    tp_seterr(err, errlen, "cannot create the precise timers: %s", tp_strerror(rv));
    return rv;
  }
  /* Send times under 20 us apart (an open loop above 50,000 requests/s)
   * are polled for rather than slept to: a wake-up costs about that much
   * on a virtual machine, and would make every send late by it. */
  tp_timers_set_spin(r->timers, PACER_SPIN_NS);
  r->send_window_ns = (uint64_t)r->cfg.load.send_window_us * 1000;
  return 0;
}

/* The tokenizer, and what it makes: a trace's prompts given as lengths,
 * the shared prefixes. */
static int setup_tokenizer(tp_run *r, char *err, size_t errlen) {
  if (!r->cfg.prompts.tokenizer) return 0;
  int rv = tp_tok_load_ex(&r->tok, r->cfg.prompts.tokenizer,
                          r->cfg.prompts.tokenizer_add_special_tokens ? TP_TOK_FLAG_SPECIAL_TOKENS : 0, err,
                          errlen);
  if (rv) return rv == TP_ENOMEM ? rv : TP_ENOTFOUND;
  /* The description goes into every report, so results say how prompts
   * were counted. */
  if (r->cfg.prompts.tokenizer_add_special_tokens)
    snprintf(r->tok_desc, sizeof(r->tok_desc), "%s (%s; input tokens counted as %s)", tp_tok_name(r->tok),
             r->cfg.prompts.tokenizer, tp_tok_special_desc(r->tok));
  else
    snprintf(r->tok_desc, sizeof(r->tok_desc), "%s (%s)", tp_tok_name(r->tok), r->cfg.prompts.tokenizer);
  if (r->cfg.load.schedule_file || tp_trace_has_lengths(&r->ds)) {
    rv = tp_trace_make_prompts(&r->ds, r->tok, r->cfg.load.prefix_block_tokens, r->cfg.prompts.random_seed,
                               err, errlen);
    if (rv) return rv;
  }
  if (r->cfg.prompts.prefix_tokens) {
    size_t k = r->cfg.prompts.num_prefixes ? r->cfg.prompts.num_prefixes : 1;
    r->prefixes = calloc(k, sizeof(char *));
    r->prefix_len = calloc(k, sizeof(size_t));
    if (!r->prefixes || !r->prefix_len) return TP_ENOMEM;
    for (size_t i = 0; i < k; i++) {
      rv =
          tp_synth_text(r->tok, r->cfg.prompts.prefix_tokens,
                        tp_rng_mix(r->cfg.prompts.random_seed ^ 0x9f, i), &r->prefixes[i], &r->prefix_len[i]);
      if (rv) {
        tp_seterr(err, errlen, "cannot make a shared prefix of %u tokens: %s", r->cfg.prompts.prefix_tokens,
                  tp_strerror(rv));
        return rv;
      }
      r->n_prefixes = i + 1;
    }
  }
  return 0;
}

/* A prompt's token ids for the engine protocols, counted as the run
 * counts input tokens (with the special tokens when it adds them). */
static int encode_prompt(void *ud, const char *text, size_t len, int32_t **ids, size_t *n) {
  tp_run *r = ud;
  return r->cfg.prompts.tokenizer_add_special_tokens ? tp_tok_encode_special(r->tok, text, len, ids, n)
                                                     : tp_tok_encode(r->tok, text, len, ids, n);
}

/* The client for the service kind, with its connections and TLS; the
 * factory reads -u/--url, and r->target gets its "host:port". */
static int setup_client(tp_run *r, char *err, size_t errlen) {
  uint32_t max_conc = 1;
  for (size_t i = 0; i < r->n_points; i++) max_conc = TP_MAX(max_conc, r->points[i].concurrency);
  if (r->cfg.load.n_request_rates && !r->cfg.load.max_concurrency) max_conc = 1024;
  tp_client_spec s;
  tp_client_spec_default(&s);
  s.kind = r->cfg.server.service_kind;
  s.url = r->cfg.server.url;
  tp_client_opts *co = &s.opts;
  co->model = r->cfg.server.model;
  co->model_version = r->cfg.server.model_version;
  co->backend = r->cfg.server.backend;
  co->streaming = r->cfg.server.streaming;
  /* One connection per 128 streams by default: Triton serialises writes per
   * connection, and extra connections are cheap. */
  co->connections = r->cfg.server.connections ? r->cfg.server.connections : (max_conc + 127) / 128;
  co->max_response_bytes = MAX_RESPONSE_BYTES;
  co->headers = r->cfg.server.headers;
  co->n_headers = r->cfg.server.n_headers;
  co->ca_file = r->cfg.server.ca_file;
  co->cert_file = r->cfg.server.cert_file;
  co->key_file = r->cfg.server.key_file;
  co->insecure = r->cfg.server.insecure;
  co->reader_thread = r->cfg.server.reader_thread;
  co->yield_to = r->timers; /* the pacer's sends go between slices of a burst */
  co->file_inputs = r->file_inputs;
  co->encode = r->tok ? encode_prompt : NULL;
  co->encode_ud = r;
  s.endpoint = r->cfg.server.endpoint;
  s.api_key = r->cfg.server.api_key;
  s.extra_inputs = r->cfg.server.extra_inputs;
  s.n_extra_inputs = r->cfg.server.n_extra_inputs;
  s.http1_only = r->cfg.server.http1_only;
  s.include_usage = !r->cfg.server.no_usage;
  static const tp_client_cbs cbs = {tpr_req_on_event, tpr_req_on_done};
  return tp_client_open(&r->client, &r->loop, &s, &cbs, r->target, sizeof(r->target), err, errlen);
}

/* The preflight, and every perf_analyzer entry built once. */
static int setup_preflight(tp_run *r, char *err, size_t errlen) {
  int rv;
  if (!r->cfg.server.skip_preflight) {
    rv = r->client->ops->preflight(r->client, err, errlen);
    if (rv) return rv;
    if (*tp_client_warning(r->client)) tpr_warn(r, "%s", tp_client_warning(r->client));
  }
  const char *ep = tp_client_endpoint(r->client);
  if (ep && !r->mock_cfg) {
    /* Without the query, which may hold a key (?key=...). */
    tpr_progress(r, "requests go to %.*s", (int)strcspn(ep, "?"), ep);
  }
  /* Every entry is built once now, so that a tensor the model cannot take
   * stops the run with its entry named rather than failing requests. */
  for (size_t i = 0; r->file_inputs && i < r->ds.n; i++) {
    char why[400];
    rv = tp_client_check_inputs(r->client, r->ds.items[i].inputs, why, sizeof(why));
    if (rv) {
      tp_seterr(err, errlen, "%s: data[%zu]: %s", r->ds.source, i, why);
      return rv;
    }
  }
  return 0;
}

/* Everything before the first level: loop handles, tokenizer, the server,
 * the client and its preflight, the hooks' start-up (scraping, artifacts),
 * the records file. */
int tpr_exec_setup(tp_run *r, char *err, size_t errlen) {
  int rv = setup_loop(r, err, errlen);
  if (!rv) rv = setup_tokenizer(r, err, errlen);
  if (rv) return rv;
  rv = setup_client(r, err, errlen);
  if (!rv) rv = setup_preflight(r, err, errlen);
  if (!rv) rv = tpr_hooks_open(r, err, errlen);
  if (!rv) rv = tpr_sink_open(r, err, errlen);
  /* No -m: the reports name the model the requests named (the artifact
   * directory, named above and checked before the run, keeps the name the
   * command line gave). */
  bool openai = r->cfg.server.service_kind == TP_SERVICE_OPENAI_CHAT ||
                r->cfg.server.service_kind == TP_SERVICE_OPENAI_COMPLETIONS;
  if (!rv && openai && (!r->cfg.server.model || !*r->cfg.server.model)) {
    const char *m = tp_client_http_model(r->client);
    if (m && *m) {
      snprintf(r->model_found, sizeof(r->model_found), "%s", m);
      r->cfg.server.model = r->model_found;
    }
  }
  return rv;
}

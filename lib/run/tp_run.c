/* A run: the sweep of levels, the closed-loop scheduler that holds the
 * in-flight count at the level's concurrency, and the glue between the
 * transport, the Triton adapter, the records and the statistics. */
#include <errno.h>
#include <stdarg.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <jansson.h>
#include <uv.h>

#include "client/tp_client.h"
#include "dataset/tp_dataset.h"
#include "metrics/tp_stats.h"
#include "record/tp_record.h"
#include "report/tp_report.h"
#include "tokenizer/tp_tok.h"
#include "util/tp_common.h"

#define MAX_RESPONSE_BYTES (64u << 20)

/* One per request in flight, allocated on its own so that its address stays
 * put while the record array grows (interval mode). */
typedef struct req_ctx {
  tp_run *run;
  size_t seq;
  bool final_seen;
  bool cumulative; /* text replaces instead of appending */
} req_ctx;

struct tp_run {
  tp_config cfg;
  uint32_t *concurrency; /* owned copy */
  uv_loop_t loop;
  uv_async_t interrupt_async;
  atomic_bool interrupt_flag;
  bool interrupted;

  tp_dataset ds;
  tp_tok *tok;
  char tok_desc[512];
  char ds_desc[512];
  tp_mock *mock;
  bool have_mock_stats;
  tp_mock_stats mock_stats;
  char target[300];
  tp_client *client;
  FILE *records_fp;

  tp_level_result *levels;
  size_t n_levels;

  /* The level being run. */
  uint32_t level_conc;
  tp_record *recs;
  size_t n_planned; /* warm-up + measured; grows in interval mode */
  size_t n_warmup;
  size_t n_started, n_done;
  uint32_t in_flight, max_in_flight;
  bool interval_mode;
  uint64_t window_start_ns, window_end_ns;
  bool level_done;
  char id_prefix[32];
};

/* ---- construction -------------------------------------------------------- */

static int validate(const tp_config *c, char *err, size_t errlen) {
  if (!c->n_concurrency || !c->concurrency) {
    tp_seterr(err, errlen, "--concurrency: no levels given; expected a list like 1,4,8");
    return TP_EINVAL;
  }
  for (size_t i = 0; i < c->n_concurrency; i++) {
    if (c->concurrency[i] == 0 || c->concurrency[i] > 100000) {
      tp_seterr(err, errlen, "--concurrency: %u is out of range; expected 1 to 100000",
                c->concurrency[i]);
      return TP_EINVAL;
    }
  }
  if (!c->model || !*c->model) {
    tp_seterr(err, errlen, "-m/--model: a model name is needed (e.g. -m ensemble)");
    return TP_EINVAL;
  }
  if (!c->mock && (!c->url || !*c->url)) {
    tp_seterr(err, errlen, "-u/--url: a server address is needed (HOST:PORT), or use --mock");
    return TP_EINVAL;
  }
  if (c->backend != TP_BACKEND_TENSORRTLLM && c->backend != TP_BACKEND_VLLM) {
    tp_seterr(err, errlen, "--backend: expected tensorrtllm or vllm");
    return TP_EINVAL;
  }
  if (!c->input_file && (c->num_prompts == 0 || c->synthetic_input_words == 0)) {
    tp_seterr(err, errlen, "synthetic prompts need --num-prompts and --synthetic-input-words above 0");
    return TP_EINVAL;
  }
  return 0;
}

int tp_run_new(tp_run **out, const tp_config *cfg, char *err, size_t errlen) {
  *out = NULL;
  int rv = validate(cfg, err, errlen);
  if (rv) return rv;
  tp_run *r = calloc(1, sizeof(*r));
  if (!r) return TP_ENOMEM;
  r->cfg = *cfg;
  r->concurrency = malloc(cfg->n_concurrency * sizeof(uint32_t));
  if (!r->concurrency) {
    free(r);
    return TP_ENOMEM;
  }
  memcpy(r->concurrency, cfg->concurrency, cfg->n_concurrency * sizeof(uint32_t));
  r->cfg.concurrency = r->concurrency;
  atomic_init(&r->interrupt_flag, false);
  uv_loop_init(&r->loop);

  if (cfg->input_file) {
    rv = tp_dataset_load_jsonl(&r->ds, cfg->input_file, err, errlen);
    if (rv) {
      tp_run_free(r);
      return rv;
    }
    snprintf(r->ds_desc, sizeof(r->ds_desc), "%s (%zu prompts)", cfg->input_file, r->ds.n);
  } else {
    rv = tp_dataset_synthetic(&r->ds, cfg->num_prompts, cfg->synthetic_input_words, cfg->random_seed);
    if (rv) {
      tp_seterr(err, errlen, "cannot make synthetic prompts: %s", tp_strerror(rv));
      tp_run_free(r);
      return rv;
    }
    snprintf(r->ds_desc, sizeof(r->ds_desc), "synthetic (%zu prompts of %u words, seed %" PRIu64 ")",
             r->ds.n, cfg->synthetic_input_words, cfg->random_seed);
  }
  r->levels = calloc(cfg->n_concurrency, sizeof(*r->levels));
  if (!r->levels) {
    tp_run_free(r);
    return TP_ENOMEM;
  }
  *out = r;
  return 0;
}

static void progress(tp_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(tp_run *r, const char *fmt, ...) {
  if (!r->cfg.progress) return;
  va_list ap;
  va_start(ap, fmt);
  fputs("tokperf: ", r->cfg.progress);
  vfprintf(r->cfg.progress, fmt, ap);
  fputc('\n', r->cfg.progress);
  fflush(r->cfg.progress);
  va_end(ap);
}

/* ---- the closed loop --------------------------------------------------- */

static void start_request(tp_run *r);

static void write_record(tp_run *r, const tp_record *rec) {
  if (!r->records_fp) return;
  json_t *o = json_object();
  json_object_set_new(o, "concurrency", json_integer(r->level_conc));
  char id[64];
  snprintf(id, sizeof(id), "%s%" PRIu64, r->id_prefix, rec->seq);
  json_object_set_new(o, "id", json_string(id));
  json_object_set_new(o, "seq", json_integer((json_int_t)rec->seq));
  json_object_set_new(o, "warmup", json_boolean(rec->warmup));
  json_object_set_new(o, "prompt_index", json_integer(rec->prompt_index));
  json_object_set_new(o, "sent_ns", json_integer((json_int_t)rec->sent_ns));
  json_object_set_new(o, "first_token_ns", json_integer((json_int_t)rec->first_token_ns));
  json_object_set_new(o, "last_token_ns", json_integer((json_int_t)rec->last_token_ns));
  json_object_set_new(o, "done_ns", json_integer((json_int_t)rec->done_ns));
  json_t *rs = json_array();
  for (uint32_t i = 0; i < rec->n_resp; i++) json_array_append_new(rs, json_integer((json_int_t)rec->resp_ns[i]));
  json_object_set_new(o, "response_ns", rs);
  json_object_set_new(o, "input_tokens", rec->input_tokens >= 0 ? json_integer(rec->input_tokens) : json_null());
  json_object_set_new(o, "output_tokens", rec->output_tokens >= 0 ? json_integer(rec->output_tokens) : json_null());
  json_object_set_new(o, "ok", json_boolean(tp_record_ok(rec)));
  json_object_set_new(o, "error_class", json_string(tp_error_class_name(rec->err_class)));
  json_object_set_new(o, "grpc_status", rec->grpc_status >= 0 ? json_integer(rec->grpc_status) : json_null());
  json_object_set_new(o, "error", rec->err_msg ? json_string(rec->err_msg) : json_null());
  json_object_set_new(o, "text", json_stringn((const char *)(rec->text.data ? (char *)rec->text.data : ""), rec->text.len));
  char *line = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
  if (line) {
    fputs(line, r->records_fp);
    fputc('\n', r->records_fp);
    free(line);
  }
  json_decref(o);
}

static void req_on_event(void *req, const tp_client_event *ev, uint64_t arrival_ns) {
  req_ctx *x = req;
  tp_record *rec = &x->run->recs[x->seq];
  if (x->final_seen) return; /* nothing after the final response counts */
  bool has_text = ev->text && ev->text_len > 0;
  tp_record_add_response(rec, arrival_ns, has_text);
  if (has_text) {
    if (x->cumulative) tp_buf_reset(&rec->text);
    tp_buf_append(&rec->text, ev->text, ev->text_len);
  }
  if (ev->server_output_tokens >= 0)
    rec->server_output_tokens =
        (rec->server_output_tokens < 0 ? 0 : rec->server_output_tokens) + ev->server_output_tokens;
  if (ev->error) tp_record_fail(rec, ev->error_class, -1, ev->error, strlen(ev->error));
  if (ev->final) {
    x->final_seen = true;
    rec->done_ns = arrival_ns;
  }
}

static void level_maybe_done(tp_run *r) {
  if (r->in_flight == 0 && (r->n_started >= r->n_planned || r->interrupted)) {
    r->level_done = true;
    uv_stop(&r->loop);
  }
}

static void req_on_done(void *req, const tp_client_done *d) {
  req_ctx *x = req;
  tp_run *r = x->run;
  tp_record *rec = &r->recs[x->seq];
  /* The wire time of the request's last frame is the truest send time. */
  if (d->sent_ns) rec->sent_ns = d->sent_ns;
  if (d->err_class != TP_ERRCLASS_NONE)
    tp_record_fail(rec, d->err_class, d->status, d->message, strlen(d->message));
  if (!rec->done_ns) rec->done_ns = d->end_ns;
  free(x);
  r->in_flight--;
  r->n_done++;
  /* Closed loop: the slot is refilled only once the stream has closed, so the
   * server never sees more than the level's concurrency. */
  if (!r->interrupted && r->n_started < r->n_planned) start_request(r);
  level_maybe_done(r);
}

static void start_request(tp_run *r) {
  uint64_t now = tp_now_ns();
  if (r->interval_mode && r->n_started >= r->n_warmup) {
    if (r->window_start_ns == 0) {
      r->window_start_ns = now;
      r->window_end_ns = now + r->cfg.measurement_interval_ms * TP_NS_PER_MS;
    }
    if (now >= r->window_end_ns) {
      r->n_planned = r->n_started; /* the window is over: no more requests */
      return;
    }
    if (r->n_started >= r->n_planned) {
      /* Grow the record array (doubling) while the window lasts. */
      size_t cap = r->n_planned * 2;
      tp_record *nr = realloc(r->recs, cap * sizeof(*nr));
      if (!nr) {
        r->n_planned = r->n_started;
        return;
      }
      r->recs = nr;
      for (size_t i = r->n_planned; i < cap; i++) tp_record_init(&r->recs[i]);
      r->n_planned = cap;
    }
  }
  req_ctx *x = calloc(1, sizeof(*x));
  if (!x) {
    r->n_planned = r->n_started;
    return;
  }
  size_t seq = r->n_started++;
  tp_record *rec = &r->recs[seq];
  x->run = r;
  x->seq = seq;
  x->cumulative = r->cfg.cumulative_text;
  rec->seq = seq;
  rec->warmup = seq < r->n_warmup;
  rec->prompt_index = (uint32_t)(seq % r->ds.n);
  const tp_prompt *p = &r->ds.items[rec->prompt_index];
  uint32_t max_tokens = r->cfg.output_tokens_mean
                            ? r->cfg.output_tokens_mean
                            : (p->max_tokens > 0 ? (uint32_t)p->max_tokens : 128);
  uint32_t min_tokens = r->cfg.output_tokens_deterministic ? max_tokens : 0;
  char id[64];
  snprintf(id, sizeof(id), "%s%zu", r->id_prefix, seq);
  tp_client_send snd = {id, p->text, p->text_len, max_tokens, min_tokens,
                        r->cfg.request_timeout_ms * TP_NS_PER_MS};
  rec->planned_ns = rec->sent_ns = now;
  r->in_flight++;
  if (r->in_flight > r->max_in_flight) r->max_in_flight = r->in_flight;
  int rv = r->client->ops->send(r->client, &snd, x);
  if (rv) {
    free(x);
    tp_record_fail(rec, TP_ERRCLASS_PROTOCOL, -1, "cannot send the request", 23);
    rec->done_ns = now;
    r->in_flight--;
    r->n_done++;
  }
}

static void on_interrupt(uv_async_t *a) {
  tp_run *r = a->data;
  if (atomic_load(&r->interrupt_flag)) {
    r->interrupted = true;
    level_maybe_done(r);
  }
}

void tp_run_interrupt(tp_run *r) {
  atomic_store(&r->interrupt_flag, true);
  uv_async_send(&r->interrupt_async);
}

/* Token counting runs after a level, when no request is in flight, so it can
 * never delay a timestamp. */
static void count_tokens(tp_run *r) {
  if (!r->tok) return;
  for (size_t i = 0; i < r->n_started; i++) {
    tp_record *rec = &r->recs[i];
    tp_prompt *p = &r->ds.items[rec->prompt_index];
    if (p->input_tokens < 0) {
      size_t n = 0;
      if (tp_tok_count(r->tok, p->text, p->text_len, &n) == 0) p->input_tokens = (int64_t)n;
    }
    rec->input_tokens = p->input_tokens;
    size_t n = 0;
    if (tp_tok_count(r->tok, (const char *)(rec->text.data ? rec->text.data : (uint8_t *)""),
                     rec->text.len, &n) == 0)
      rec->output_tokens = (int64_t)n;
  }
}

static int run_level(tp_run *r, size_t li, char *err, size_t errlen) {
  uint32_t conc = r->concurrency[li];
  r->level_conc = conc;
  snprintf(r->id_prefix, sizeof(r->id_prefix), "c%u-", conc);
  uint64_t measured = r->cfg.request_count ? r->cfg.request_count : TP_MAX(16, 4 * (uint64_t)conc);
  r->interval_mode = r->cfg.measurement_interval_ms > 0;
  if (r->interval_mode) measured = TP_MAX(64, 4 * (uint64_t)conc);
  r->n_warmup = r->cfg.warmup_request_count;
  r->n_planned = r->n_warmup + measured;
  r->recs = calloc(r->n_planned, sizeof(*r->recs));
  if (!r->recs) return TP_ENOMEM;
  for (size_t i = 0; i < r->n_planned; i++) tp_record_init(&r->recs[i]);
  r->n_started = r->n_done = 0;
  r->in_flight = r->max_in_flight = 0;
  r->window_start_ns = r->window_end_ns = 0;
  r->level_done = false;

  if (r->interval_mode)
    progress(r, "concurrency %u: measuring for %" PRIu64 " ms (+%zu warm-up requests)", conc,
             r->cfg.measurement_interval_ms, r->n_warmup);
  else
    progress(r, "concurrency %u: %" PRIu64 " requests (+%zu warm-up)", conc, measured, r->n_warmup);

  uint32_t first = (uint32_t)TP_MIN((uint64_t)conc, (uint64_t)r->n_planned);
  for (uint32_t i = 0; i < first && !r->interrupted; i++) start_request(r);
  level_maybe_done(r);
  while (!r->level_done) uv_run(&r->loop, UV_RUN_DEFAULT);

  count_tokens(r);
  tp_level_result *lv = &r->levels[r->n_levels];
  int rv = tp_level_compute(lv, r->recs, r->n_started);
  if (rv) return rv;
  lv->concurrency = conc;
  lv->max_in_flight = r->max_in_flight;
  r->n_levels++;
  for (size_t i = 0; i < r->n_started; i++) write_record(r, &r->recs[i]);
  if (r->records_fp) fflush(r->records_fp);
  progress(r, "concurrency %u: %" PRIu64 " succeeded, %" PRIu64 " failed, %.2f requests/s", conc,
           lv->succeeded, lv->failed, lv->request_throughput);
  for (size_t i = 0; i < r->n_planned; i++) tp_record_fini(&r->recs[i]);
  free(r->recs);
  r->recs = NULL;
  (void)err;
  (void)errlen;
  return 0;
}

int tp_run_exec(tp_run *r, char *err, size_t errlen) {
  int rv;
  r->interrupt_async.data = r;
  uv_async_init(&r->loop, &r->interrupt_async, on_interrupt);

  if (r->cfg.tokenizer) {
    rv = tp_tok_load(&r->tok, r->cfg.tokenizer, err, errlen);
    if (rv) return rv == TP_ENOMEM ? rv : TP_ENOTFOUND;
    snprintf(r->tok_desc, sizeof(r->tok_desc), "%s (%s)", tp_tok_name(r->tok), r->cfg.tokenizer);
  }

  const char *url = r->cfg.url;
  if (r->cfg.mock) {
    tp_mock_config mc;
    if (r->cfg.mock_config)
      mc = *r->cfg.mock_config;
    else
      tp_mock_config_default(&mc);
    mc.host = "127.0.0.1";
    mc.grpc_port = 0;
    mc.quiet = true;
    if (r->cfg.mock_log_path) mc.log_path = r->cfg.mock_log_path;
    rv = tp_mock_start(&r->mock, &mc, err, errlen);
    if (rv) return rv;
    snprintf(r->target, sizeof(r->target), "127.0.0.1:%d", tp_mock_port(r->mock));
    progress(r, "built-in mock server on %s", r->target);
  } else {
    /* Accept grpc://host:port and http://host:port as well. */
    const char *sep = strstr(url, "://");
    snprintf(r->target, sizeof(r->target), "%s", sep ? sep + 3 : url);
    size_t tl = strlen(r->target);
    if (tl && r->target[tl - 1] == '/') r->target[tl - 1] = 0;
  }
  uint32_t max_conc = 1;
  for (size_t i = 0; i < r->cfg.n_concurrency; i++) max_conc = TP_MAX(max_conc, r->concurrency[i]);
  tp_client_opts co;
  memset(&co, 0, sizeof(co));
  co.target = r->target;
  co.model = r->cfg.model;
  co.model_version = r->cfg.model_version;
  co.backend = r->cfg.backend;
  co.streaming = r->cfg.streaming;
  /* One connection per 128 streams by default: Triton serialises writes per
   * connection, and extra connections are cheap. */
  co.connections = r->cfg.connections ? r->cfg.connections : (max_conc + 127) / 128;
  co.max_response_bytes = MAX_RESPONSE_BYTES;
  static const tp_client_cbs cbs = {req_on_event, req_on_done};
  rv = tp_client_triton_new(&r->client, &r->loop, &co, &cbs, err, errlen);
  if (rv) return rv;

  if (!r->cfg.skip_preflight) {
    rv = r->client->ops->preflight(r->client, err, errlen);
    if (rv) return rv;
  }

  if (r->cfg.records_path) {
    r->records_fp = fopen(r->cfg.records_path, "w");
    if (!r->records_fp) {
      tp_seterr(err, errlen, "cannot write --records file %s: %s", r->cfg.records_path, strerror(errno));
      return TP_EIO;
    }
  }

  for (size_t li = 0; li < r->cfg.n_concurrency && !r->interrupted; li++) {
    rv = run_level(r, li, err, errlen);
    if (rv) return rv;
  }
  if (r->mock) {
    tp_mock_get_stats(r->mock, &r->mock_stats);
    r->have_mock_stats = true;
  }
  if (r->interrupted) {
    tp_seterr(err, errlen, "interrupted after %zu of %zu levels", r->n_levels, r->cfg.n_concurrency);
    return TP_EINTERRUPTED;
  }
  return 0;
}

size_t tp_run_level_count(const tp_run *r) { return r->n_levels; }

const tp_level_result *tp_run_level(const tp_run *r, size_t i) {
  return i < r->n_levels ? &r->levels[i] : NULL;
}

int tp_run_mock_stats(const tp_run *r, tp_mock_stats *out) {
  if (!r->have_mock_stats) return TP_ENOTFOUND;
  *out = r->mock_stats;
  return 0;
}

static void fill_report(const tp_run *r, tp_report_input *in) {
  memset(in, 0, sizeof(*in));
  in->cfg = &r->cfg;
  in->target = r->target;
  in->tokenizer_desc = r->tok ? r->tok_desc : NULL;
  in->dataset_desc = r->ds_desc;
  in->levels = r->levels;
  in->n_levels = r->n_levels;
  in->interrupted = r->interrupted;
  in->have_mock_stats = r->have_mock_stats;
  in->mock_stats = r->mock_stats;
}

void tp_run_report_text(const tp_run *r, FILE *out) {
  tp_report_input in;
  fill_report(r, &in);
  tp_report_text(out, &in);
}

int tp_run_write_json(const tp_run *r, const char *path, char *err, size_t errlen) {
  tp_report_input in;
  fill_report(r, &in);
  return tp_report_json(path, &in, err, errlen);
}

static void walk_close(uv_handle_t *h, void *arg) {
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

void tp_run_free(tp_run *r) {
  if (!r) return;
  if (r->client) {
    r->client->ops->close(r->client);
    r->client = NULL;
  }
  /* Close every handle and let libuv finish, so the loop closes cleanly. */
  uv_walk(&r->loop, walk_close, NULL);
  uv_run(&r->loop, UV_RUN_DEFAULT);
  uv_loop_close(&r->loop);
  if (r->mock) tp_mock_stop(r->mock);
  if (r->records_fp) fclose(r->records_fp);
  if (r->tok) tp_tok_free(r->tok);
  tp_dataset_free(&r->ds);
  if (r->recs) {
    for (size_t i = 0; i < r->n_planned; i++) tp_record_fini(&r->recs[i]);
    free(r->recs);
  }
  free(r->levels);
  free(r->concurrency);
  free(r);
}

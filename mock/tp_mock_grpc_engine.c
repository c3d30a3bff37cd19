/* The engines' own gRPC protocols on the mock: vLLM's VllmEngine and
 * SGLang's SglangScheduler (proto/vllm_engine.proto,
 * proto/sglang_scheduler.proto), beside KServe on the same port.
 *
 * A Generate request goes through the same timing model, faults and log
 * as a KServe one; what differs is the messages.  The mock has no
 * tokenizer: the prompt's ids are its tokens (each id a word for the
 * prefix cache, so cached tokens are exact), an output token's id is a
 * hash of its word, and each streamed message carries one token, with the
 * counts each engine reports:
 * - vLLM: a chunk per token with the counts of that step; after the last
 *   one a complete repeating it (its ids and counts), finish_reason
 *   "length" or "stop".  Errors are gRPC statuses.
 * - SGLang: a chunk per token but the last, with running totals; the
 *   last token comes in the complete.  Errors are GenerateError messages
 *   (the inband_error fault).
 * Unary (stream false): one complete with every id.
 * An Abort names requests by id: those still running end (CANCELLED) and
 * the log says so ("ev":"abort"). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>

#include "mock/tp_mock_engine.h"
#include "mock/tp_mock_grpc.h"
#include "mock/tp_mock_internal.h"
#include "mock/tp_mock_sse.h"
#include "sglang_scheduler.pb-c.h"
#include "transport/tp_grpc.h"
#include "util/tp_common.h"
#include "util/tp_timer.h"
#include "vllm_engine.pb-c.h"

#define VLLM_PREFIX "/vllm.grpc.engine.VllmEngine/"
#define SGLANG_PREFIX "/sglang.grpc.scheduler.SglangScheduler/"
/* What GetModelInfo names; the mock says nothing of its vocabulary (0). */
#define MOCK_MODEL_NAME "tokperf-mock"

method tp__mock_engine_method(const char *path, int *engine) {
  const char *rest = NULL;
  if (strncmp(path, VLLM_PREFIX, strlen(VLLM_PREFIX)) == 0) {
    *engine = TP_MOCK_ENGINE_VLLM;
    rest = path + strlen(VLLM_PREFIX);
  } else if (strncmp(path, SGLANG_PREFIX, strlen(SGLANG_PREFIX)) == 0) {
    *engine = TP_MOCK_ENGINE_SGLANG;
    rest = path + strlen(SGLANG_PREFIX);
  } else {
    return M_UNKNOWN;
  }
  if (strcmp(rest, "Generate") == 0) return M_ENGINE_GENERATE;
  if (strcmp(rest, "HealthCheck") == 0) return M_ENGINE_HEALTH;
  if (strcmp(rest, "Abort") == 0) return M_ENGINE_ABORT;
  if (strcmp(rest, "GetModelInfo") == 0) return M_ENGINE_MODEL_INFO;
  return M_UNKNOWN;
}

/* An output token's id: a hash of its word, so that a word always has the
 * same id (above the usual special ids, below 50,000). */
static uint32_t word_id(const char *w, size_t n) {
  uint32_t h = 2166136261u;
  for (size_t i = 0; i < n; i++) h = (h ^ (uint8_t)w[i]) * 16777619u;
  return 100 + h % 49900u;
}

/* ---- the unary methods ------------------------------------------------------- */

static void reply_health(mstream *st) {
  if (st->engine == TP_MOCK_ENGINE_VLLM) {
    Vllm__Grpc__Engine__HealthCheckResponse r = VLLM__GRPC__ENGINE__HEALTH_CHECK_RESPONSE__INIT;
    r.healthy = true;
    r.message = "Health";
    tp__mock_stream_reply(st, &r.base);
  } else {
    Sglang__Grpc__Scheduler__HealthCheckResponse r = SGLANG__GRPC__SCHEDULER__HEALTH_CHECK_RESPONSE__INIT;
    r.healthy = true;
    r.message = "Health check passed";
    tp__mock_stream_reply(st, &r.base);
  }
}

static void reply_model_info(mstream *st) {
  if (st->engine == TP_MOCK_ENGINE_VLLM) {
    Vllm__Grpc__Engine__GetModelInfoResponse r = VLLM__GRPC__ENGINE__GET_MODEL_INFO_RESPONSE__INIT;
    r.model_path = MOCK_MODEL_NAME;
    r.served_model_name = MOCK_MODEL_NAME;
    r.is_generation = true;
    tp__mock_stream_reply(st, &r.base);
  } else {
    Sglang__Grpc__Scheduler__GetModelInfoResponse r = SGLANG__GRPC__SCHEDULER__GET_MODEL_INFO_RESPONSE__INIT;
    r.model_path = MOCK_MODEL_NAME;
    r.served_model_name = MOCK_MODEL_NAME;
    r.is_generation = true;
    tp__mock_stream_reply(st, &r.base);
  }
}

/* The running Generate request called id, on any connection, or NULL. */
static mreq *find_request(tp_mock *m, int engine, const char *id) {
  for (conn *c = m->conns; c; c = c->next)
    for (mstream *s = c->streams; s; s = s->next)
      for (mreq *r = s->reqs; r; r = r->next)
        if (r->engine == engine && strcmp(r->job.id, id) == 0) return r;
  return NULL;
}

static void log_abort(tp_mock *m, const char *id, bool found, uint64_t t_ns) {
  if (!m->log) return;
  tp_buf *b = &m->logbuf;
  tp_buf_append_str(b, "{\"ev\":\"abort\",\"id\":");
  tp_mock_json_str(b, id, strlen(id));
  tp_buf_printf(b, ",\"t_ns\":%llu,\"found\":%s}\n", (unsigned long long)t_ns, found ? "true" : "false");
  tp__mock_log_flush(m, false);
}

/* Ends the request called id, if it still runs: its stream ends CANCELLED,
 * as a server's aborted generation ends. */
static bool abort_one(tp_mock *m, int engine, const char *id, uint64_t now) {
  mreq *r = find_request(m, engine, id);
  log_abort(m, id, r != NULL, now);
  if (!r) return false;
  mstream *s = r->st;
  tp__mock_req_free(r, TP__MOCK_CANCELLED);
  tp__mock_stream_finish(s, TP_GRPC_CANCELLED, "aborted");
  return true;
}

static void reply_abort(mstream *st, const uint8_t *data, size_t len) {
  tp_mock *m = st->c->m;
  uint64_t now = tp_now_ns();
  if (st->engine == TP_MOCK_ENGINE_VLLM) {
    Vllm__Grpc__Engine__AbortRequest *q = vllm__grpc__engine__abort_request__unpack(NULL, len, data);
    if (!q) {
      tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "cannot parse AbortRequest");
      return;
    }
    for (size_t i = 0; i < q->n_request_ids; i++) abort_one(m, st->engine, q->request_ids[i], now);
    vllm__grpc__engine__abort_request__free_unpacked(q, NULL);
    Vllm__Grpc__Engine__AbortResponse r = VLLM__GRPC__ENGINE__ABORT_RESPONSE__INIT;
    tp__mock_stream_reply(st, &r.base);
    return;
  }
  Sglang__Grpc__Scheduler__AbortRequest *q = sglang__grpc__scheduler__abort_request__unpack(NULL, len, data);
  if (!q) {
    tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "cannot parse AbortRequest");
    return;
  }
  bool found = abort_one(m, st->engine, q->request_id, now);
  char msg[160];
  snprintf(msg, sizeof(msg), "Request %.100s %s", q->request_id, found ? "aborted" : "not found");
  sglang__grpc__scheduler__abort_request__free_unpacked(q, NULL);
  Sglang__Grpc__Scheduler__AbortResponse r = SGLANG__GRPC__SCHEDULER__ABORT_RESPONSE__INIT;
  r.success = found;
  r.message = msg;
  tp__mock_stream_reply(st, &r.base);
}

/* ---- Generate responses ------------------------------------------------------- */

/* Queues one response of r: a chunk (complete false) or the end, with n
 * ids, and logs it with the text of its token (NULL for vLLM's repeated
 * end, which carries no new token). */
static int queue_tokens(mreq *r, bool complete, const uint32_t *ids, size_t n, const char *finish,
                        const char *text, size_t text_len) {
  mstream *st = r->st;
  tp_mock *m = st->c->m;
  const tp_mock_seq *s = &r->job.seq;
  /* vLLM's chunk counts the step; SGLang's counts run on. */
  bool vllm = r->engine == TP_MOCK_ENGINE_VLLM;
  uint32_t completion = vllm && r->streaming ? (uint32_t)n : r->job.tokens_sent;
  int rv;
  if (vllm) {
    Vllm__Grpc__Engine__GenerateStreamChunk c = VLLM__GRPC__ENGINE__GENERATE_STREAM_CHUNK__INIT;
    Vllm__Grpc__Engine__GenerateComplete e = VLLM__GRPC__ENGINE__GENERATE_COMPLETE__INIT;
    Vllm__Grpc__Engine__GenerateResponse g = VLLM__GRPC__ENGINE__GENERATE_RESPONSE__INIT;
    if (complete) {
      e.n_output_ids = n;
      e.output_ids = (uint32_t *)ids;
      e.finish_reason = (char *)finish;
      e.prompt_tokens = r->prompt_tokens;
      e.completion_tokens = completion;
      e.cached_tokens = s->cached_tokens;
      g.response_case = VLLM__GRPC__ENGINE__GENERATE_RESPONSE__RESPONSE_COMPLETE;
      g.complete = &e;
    } else {
      c.n_token_ids = n;
      c.token_ids = (uint32_t *)ids;
      c.prompt_tokens = r->prompt_tokens;
      c.completion_tokens = completion;
      c.cached_tokens = s->cached_tokens;
      g.response_case = VLLM__GRPC__ENGINE__GENERATE_RESPONSE__RESPONSE_CHUNK;
      g.chunk = &c;
    }
    rv = tp__mock_stream_queue_msg(st, &g.base);
  } else {
    Sglang__Grpc__Scheduler__GenerateStreamChunk c = SGLANG__GRPC__SCHEDULER__GENERATE_STREAM_CHUNK__INIT;
    Sglang__Grpc__Scheduler__GenerateComplete e = SGLANG__GRPC__SCHEDULER__GENERATE_COMPLETE__INIT;
    Sglang__Grpc__Scheduler__GenerateResponse g = SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__INIT;
    g.request_id = r->job.id;
    if (complete) {
      e.n_output_ids = n;
      e.output_ids = (uint32_t *)ids;
      e.finish_reason = (char *)finish;
      e.prompt_tokens = (int32_t)r->prompt_tokens;
      e.completion_tokens = (int32_t)completion;
      e.cached_tokens = (int32_t)s->cached_tokens;
      g.response_case = SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__RESPONSE_COMPLETE;
      g.complete = &e;
    } else {
      c.n_token_ids = n;
      c.token_ids = (uint32_t *)ids;
      c.prompt_tokens = (int32_t)r->prompt_tokens;
      c.completion_tokens = (int32_t)completion;
      c.cached_tokens = (int32_t)s->cached_tokens;
      g.response_case = SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__RESPONSE_CHUNK;
      g.chunk = &c;
    }
    rv = tp__mock_stream_queue_msg(st, &g.base);
  }
  if (rv) return rv;
  uint64_t now = tp_now_ns();
  tp__mock_count(&m->n_responses, 1);
  if (text) tp__mock_job_response(m, &r->job, now);
  size_t blank;
  tp__mock_log_response(m, &r->job, r->index++, now, text ? text : "", text ? text_len : 0, complete, &blank);
  /* The send time is taken when its last byte goes to the socket, as for
   * KServe responses (tp_mock_grpc_out.c). */
  if (blank != SIZE_MAX) {
    blank_time b = {st->queued_total, blank, now};
    if (tp_buf_append(&st->blanks, &b, sizeof(b))) tp__mock_log_fill(m, blank, now);
  }
  return 0;
}

static void req_finish(mreq *r, tp__mock_outcome how) {
  mstream *st = r->st;
  tp__mock_req_free(r, how);
  tp__mock_stream_finish(st, TP_GRPC_OK, NULL);
}

void tp__mock_engine_inband_error(mreq *r, const char *msg) {
  mstream *st = r->st;
  tp_mock *m = st->c->m;
  if (r->engine == TP_MOCK_ENGINE_VLLM) {
    /* vLLM's servicer aborts the call with a status. */
    tp__mock_log_error(m, r->job.id, msg, tp_now_ns());
    tp__mock_stream_finish(st, TP_GRPC_INTERNAL, msg);
    return;
  }
  Sglang__Grpc__Scheduler__GenerateError e = SGLANG__GRPC__SCHEDULER__GENERATE_ERROR__INIT;
  e.message = (char *)msg;
  e.http_status_code = "500";
  Sglang__Grpc__Scheduler__GenerateResponse g = SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__INIT;
  g.request_id = r->job.id;
  g.response_case = SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__RESPONSE_ERROR;
  g.error = &e;
  if (tp__mock_stream_queue_msg(st, &g.base) != 0) {
    tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "cannot queue the response");
    return;
  }
  tp__mock_count(&m->n_responses, 1);
  tp__mock_log_error(m, r->job.id, msg, tp_now_ns());
  req_finish(r, TP__MOCK_FAILED);
}

static void on_token(tp_timer *t, uint64_t now_ns) {
  mreq *r = t->data;
  mstream *st = r->st;
  tp_mock *m = st->c->m;
  tp__mock_job *j = &r->job;
  tp_mock_token tok;
  char bad[sizeof(tok.text) + 2];
  const char *text;
  size_t text_len;
  bool trickle = false;
  tp__mock_tick k = tp__mock_job_tick(m, j, now_ns, &tok, bad, &text, &text_len, &trickle);
  if (k == TP__MOCK_TICK_FAULT) {
    tp__mock_req_fire_fault(r, now_ns);
    return;
  }
  if (k == TP__MOCK_TICK_NONE) return;
  if (trickle) {
    st->trickle = true;
    st->trickle_ready = true;
  }
  /* The word without its leading space names the id. */
  size_t sp = tok.text_len && tok.text[0] == ' ';
  uint32_t id = word_id(tok.text + sp, tok.text_len - sp);
  const char *finish = j->seq.hit_length ? "length" : "stop";
  int rv = tp_buf_append(&r->ids, &id, sizeof(id));
  if (!rv) {
    if (!r->streaming) {
      if (tok.last)
        rv = queue_tokens(r, true, (const uint32_t *)r->ids.data, r->ids.len / sizeof(uint32_t), finish, text,
                          text_len);
    } else if (r->engine == TP_MOCK_ENGINE_VLLM) {
      rv = queue_tokens(r, false, &id, 1, NULL, text, text_len);
      if (!rv && tok.last) rv = queue_tokens(r, true, &id, 1, finish, NULL, 0);
    } else {
      rv = queue_tokens(r, tok.last, &id, 1, tok.last ? finish : NULL, text, text_len);
    }
  }
  if (rv) {
    tp__mock_stream_finish(st, TP_GRPC_INTERNAL, "cannot queue the response");
    return;
  }
  if (!tok.last) {
    tp_timer_start(m->timers, t, j->seq.next_deadline_ns);
    return;
  }
  tp__mock_job_end(m, j, TP__MOCK_OK, now_ns);
  req_finish(r, TP__MOCK_OK);
}

/* ---- Generate requests -------------------------------------------------------- */

/* What the mock takes from a GenerateRequest of either protocol. */
typedef struct gen_req {
  const char *id;
  const uint32_t *ids; /* NULL: text */
  size_t n_ids;
  const char *text;
  bool stream;
  bool have_max;
  int64_t max_tokens, min_tokens;
  bool ignore_eos;
} gen_req;

/* The ids as words ("17 923 5"), for the prefix cache, which keys on a
 * prompt's words: each id is one token of the cache's blocks. */
static int ids_text(tp_buf *out, const uint32_t *ids, size_t n) {
  tp_buf_reset(out);
  int rv = tp_buf_reserve(out, n * 11 + 1);
  for (size_t i = 0; !rv && i < n; i++) rv = tp_buf_printf(out, i ? " %u" : "%u", ids[i]);
  return rv;
}

static void start_generate(mstream *st, const gen_req *g) {
  tp_mock *m = st->c->m;
  mreq *r = calloc(1, sizeof(*r));
  if (!r || !(r->job.id = strdup(g->id)) || !(r->version = strdup("")) ||
      (g->id[0] && !(r->job.request_id = strdup(g->id))) ||
      (st->traceparent[0] && !(r->job.traceparent = strdup(st->traceparent)))) {
    if (r) tp__mock_job_fini(&r->job);
    if (r) free(r->version);
    free(r);
    tp__mock_stream_finish(st, TP_GRPC_RESOURCE_EXHAUSTED, "out of memory");
    return;
  }
  tp_buf_init(&r->text);
  tp_buf_init(&r->ids);
  r->st = st;
  r->engine = st->engine;
  r->job.model = tp__mock_find_model("vllm_model");
  r->streaming = g->stream;
  r->next = st->reqs;
  if (st->reqs) st->reqs->prev = r;
  st->reqs = r;
  tp_timer_init(&r->job.timer, on_token, r);
  r->job.seq.data = &r->job;
  tp_mock_seq_params sp;
  memset(&sp, 0, sizeof(sp));
  sp.max_tokens = g->have_max ? tp__mock_clamp_u32(g->max_tokens) : 0;
  if (g->have_max && sp.max_tokens == 0) sp.max_tokens = 1;
  sp.min_tokens = tp__mock_clamp_u32(g->min_tokens);
  sp.ignore_eos = g->ignore_eos;
  int rv = 0;
  if (g->ids) {
    rv = ids_text(&r->text, g->ids, g->n_ids);
    sp.prompt = (const char *)r->text.data;
    sp.prompt_len = r->text.len;
    sp.prompt_tokens = tp__mock_clamp_u32((int64_t)g->n_ids);
  } else {
    sp.prompt = g->text;
    sp.prompt_len = strlen(g->text);
    sp.prompt_tokens = tp_mock_count_words(g->text, sp.prompt_len);
  }
  r->prompt_tokens = sp.prompt_tokens;
  tp__mock_job_choose_fault(m, &r->job, NULL, -1);
  bool trailers_only = r->job.fault.kind == TP_MOCK_FAULT_TRAILERS_ONLY && r->job.fault.after_tokens == 0;
  if (!rv && !trailers_only) rv = tp__mock_stream_start_response(st);
  if (!rv) rv = tp__mock_job_submit(m, &r->job, &sp, m->arrival_ns ? m->arrival_ns : tp_now_ns());
  /* The prompt's words were for the cache, at submit; what is kept from
   * here is the output. */
  tp_buf_reset(&r->text);
  if (rv) tp__mock_stream_finish(st, TP_GRPC_RESOURCE_EXHAUSTED, "out of memory");
}

static void generate(mstream *st, const uint8_t *data, size_t len) {
  gen_req g;
  memset(&g, 0, sizeof(g));
  if (st->engine == TP_MOCK_ENGINE_VLLM) {
    Vllm__Grpc__Engine__GenerateRequest *q = vllm__grpc__engine__generate_request__unpack(NULL, len, data);
    if (!q) {
      tp__mock_stream_finish(st, TP_GRPC_INVALID_ARGUMENT, "cannot parse GenerateRequest");
      return;
    }
    g.id = q->request_id;
    if (q->input_case == VLLM__GRPC__ENGINE__GENERATE_REQUEST__INPUT_TOKENIZED) {
      g.ids = q->tokenized->input_ids;
      g.n_ids = q->tokenized->n_input_ids;
    } else if (q->input_case == VLLM__GRPC__ENGINE__GENERATE_REQUEST__INPUT_TEXT) {
      g.text = q->text;
    }
    g.stream = q->stream;
    const Vllm__Grpc__Engine__SamplingParams *p = q->sampling_params;
    if (p) {
      g.have_max = p->opt_max_tokens_case == VLLM__GRPC__ENGINE__SAMPLING_PARAMS__OPT_MAX_TOKENS_MAX_TOKENS;
      g.max_tokens = p->max_tokens;
      g.min_tokens = p->min_tokens;
      g.ignore_eos = p->ignore_eos;
    }
    if (!g.ids && !g.text)
      tp__mock_stream_finish(st, TP_GRPC_INVALID_ARGUMENT,
                             "the request has neither tokenized input nor text");
    else if (g.ids && g.n_ids == 0)
      tp__mock_stream_finish(st, TP_GRPC_INVALID_ARGUMENT, "the prompt has no token ids");
    else
      start_generate(st, &g);
    vllm__grpc__engine__generate_request__free_unpacked(q, NULL);
    return;
  }
  Sglang__Grpc__Scheduler__GenerateRequest *q =
      sglang__grpc__scheduler__generate_request__unpack(NULL, len, data);
  if (!q) {
    tp__mock_stream_finish(st, TP_GRPC_INVALID_ARGUMENT, "cannot parse GenerateRequest");
    return;
  }
  g.id = q->request_id;
  if (q->tokenized) {
    g.ids = q->tokenized->input_ids;
    g.n_ids = q->tokenized->n_input_ids;
  }
  g.stream = q->stream;
  const Sglang__Grpc__Scheduler__SamplingParams *p = q->sampling_params;
  if (p) {
    g.have_max = p->opt_max_new_tokens_case ==
                 SGLANG__GRPC__SCHEDULER__SAMPLING_PARAMS__OPT_MAX_NEW_TOKENS_MAX_NEW_TOKENS;
    g.max_tokens = p->max_new_tokens;
    g.min_tokens = p->min_new_tokens;
    g.ignore_eos = p->ignore_eos;
  }
  if (!g.ids || g.n_ids == 0) {
    /* SGLang answers a bad request with its error message, on an OK call. */
    Sglang__Grpc__Scheduler__GenerateError e = SGLANG__GRPC__SCHEDULER__GENERATE_ERROR__INIT;
    e.message = "Tokenized input must be provided";
    e.http_status_code = "500";
    Sglang__Grpc__Scheduler__GenerateResponse r = SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__INIT;
    r.request_id = q->request_id;
    r.response_case = SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__RESPONSE_ERROR;
    r.error = &e;
    tp__mock_stream_reply(st, &r.base);
  } else {
    start_generate(st, &g);
  }
  sglang__grpc__scheduler__generate_request__free_unpacked(q, NULL);
}

void tp__mock_engine_message(mstream *st, const uint8_t *data, size_t len) {
  switch (st->method) {
    case M_ENGINE_GENERATE: generate(st, data, len); break;
    case M_ENGINE_HEALTH: reply_health(st); break;
    case M_ENGINE_ABORT: reply_abort(st, data, len); break;
    case M_ENGINE_MODEL_INFO: reply_model_info(st); break;
    default: break;
  }
}

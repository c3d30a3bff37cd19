/* One request: released by the level's pacer (lib/load/tp_pacer.h), sent
 * through the client interface, its events appended to its record, and its
 * end handed to the sink.  A single-turn level is a pacer of sessions of
 * one turn: in concurrency mode (a closed loop) a request is planned when a
 * slot frees and sent at once, so exactly N are in flight; in rate and
 * schedule mode (an open loop) the plan is an arrival schedule drawn ahead
 * from the seed (or the trace's times), released by precise timers, and a
 * request that finds the in-flight cap full waits in the pacer, its wait
 * showing as send lag. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "run/tp_run_internal.h"

/* The level's view of the arena, after anything that may have moved it;
 * said once when its records had to leave their file for memory. */
void tpr_mirror_arena(tp_run *r) {
  level_state *L = &r->lv;
  L->recs = tp_rec_arena_base(r->arena);
  L->cap = tp_rec_arena_cap(r->arena);
  if (tp_rec_arena_fell_back(r->arena) && !r->arena_warned) {
    r->arena_warned = true;
    tpr_warn(r,
             "%s has too little space for the records' working file (it leaves %" PRIu64
             " MiB free for the results): the records are kept in memory from now on",
             r->arena_dir[0] ? r->arena_dir : "the temporary directory", TP_REC_ARENA_KEEP_FREE >> 20);
  }
}

/* Room for n records in the arena; L->recs may move. */
int tpr_reserve_records(tp_run *r, size_t n) {
  /* Made by the sink at start-up; a run driven without it gets one here. */
  if (!r->arena && tp_rec_arena_new(&r->arena, NULL)) return TP_ENOMEM;
  int rv = tp_rec_arena_reserve(r->arena, n);
  tpr_mirror_arena(r);
  return rv;
}

tp_record *tpr_grow_records(tp_run *r) {
  level_state *L = &r->lv;
  if (L->n_planned == L->cap && tpr_reserve_records(r, L->n_planned + 1)) return NULL;
  tp_record *rec = &L->recs[L->n_planned];
  tp_record_init(rec);
  return rec;
}

uint32_t tpr_draw_max_tokens(tp_run *r, const tp_prompt *p, size_t seq) {
  level_state *L = &r->lv;
  if (L->pt.mode == TP_LOAD_SCHEDULE && r->trace[seq % r->n_trace].output_tokens)
    return r->trace[seq % r->n_trace].output_tokens;
  if (L->pt.output_tokens) {
    if (!r->cfg.prompts.output_tokens_stddev) return L->pt.output_tokens;
    double d = (double)L->pt.output_tokens +
               (double)r->cfg.prompts.output_tokens_stddev * tp_rng_normal(&L->out_rng);
    return d < 1 ? 1 : (uint32_t)llround(d);
  }
  return p->max_tokens > 0 ? (uint32_t)p->max_tokens : DEFAULT_MAX_TOKENS;
}

/* The record of the request the pacer released as item it: its number,
 * prompt, warm-up mark and planned time; the first measured one starts the
 * measurement (a duration's end, the stability windows).  Returns its
 * index, or SIZE_MAX out of memory.
 *
 * The record is made when the pacer releases the request, not when it
 * falls due: a request that waits for the in-flight cap stays in the pacer
 * until a slot frees (it keeps its planned time, so the wait still shows
 * as send lag), and the warm-up and measurement marks depend on the
 * planned time and the release order only, which the pacer keeps (first
 * come, first served).  An interruption still records the waiting ones as
 * not sent (tpr_drop_waiting). */
static size_t plan_record(tp_run *r, const tp_pacer_item *it) {
  level_state *L = &r->lv;
  tp_record *rec = tpr_grow_records(r);
  if (!rec) return SIZE_MAX;
  uint64_t planned_ns = it->planned_ns;
  size_t seq = L->n_planned++;
  /* The request's number across ranks picks its prompt (or trace entry),
   * so no two ranks send the same request; in one process it is seq. */
  uint64_t gseq = L->seq_base + seq * L->seq_step;
  rec->seq = gseq;
  rec->planned_ns = planned_ns;
  rec->prompt_index = L->pt.mode == TP_LOAD_SCHEDULE ? r->trace[gseq % r->n_trace].prompt_index
                                                     : (uint32_t)(gseq % L->ds->n);
  rec->warmup = L->warmup_end_ns ? planned_ns < L->warmup_end_ns : seq < L->n_warmup;
  rec->max_tokens = tpr_draw_max_tokens(r, &L->ds->items[rec->prompt_index], (size_t)gseq);
  tpr_stats_planned(r, rec);
  if (!rec->warmup && !L->measure_start_ns) {
    /* The measurement starts with the first measured request. */
    L->measure_start_ns = planned_ns;
    if (r->cfg.measure.measure_mode == TP_MEASURE_DURATION)
      L->measure_end_ns = planned_ns + r->cfg.measure.duration_ms * TP_NS_PER_MS;
    if (r->cfg.measure.measure_mode == TP_MEASURE_TIME_WINDOWS ||
        r->cfg.measure.measure_mode == TP_MEASURE_COUNT_WINDOWS)
      tpr_open_windows(r, planned_ns);
  }
  return seq;
}

/* The pacer's item for request seq of a single-turn level: a session of
 * one turn (what tp_pacer_done reads of it). */
static tp_pacer_item single_item(const level_state *L, size_t seq) {
  return (tp_pacer_item){seq, seq, 0, 1, L->recs[seq].planned_ns, 0};
}

/* One request the pacer released: recorded and sent (or, in an open loop
 * backing off from a server that went away, recorded as not sent: the
 * schedule stays, no connection is opened for it). */
static void release(tp_run *r, const tp_pacer_item *it) {
  level_state *L = &r->lv;
  size_t seq = plan_record(r, it);
  if (seq == SIZE_MAX) {
    /* Out of memory: nothing more is planned. */
    tp_pacer_done(L->pacer, it, tp_now_ns());
    tp_pacer_stop_at(L->pacer, 0, tp_now_ns(), true);
    return;
  }
  if (L->pt.mode != TP_LOAD_CONCURRENCY && !tp_backoff_may_send(&L->bo, tp_now_ns())) {
    tpr_not_sent(r, seq);
    tp_pacer_item done = single_item(L, seq);
    tp_pacer_done(L->pacer, &done, L->recs[seq].done_ns);
    return;
  }
  tpr_send_request(r, seq, it->backoff);
  /* A send never ends inside tpr_send_request: an end already there means
   * it was not sent, and no callback follows.  As before the pacer, an
   * open loop's cap slot frees at once (the next pump may release a
   * waiting request), while a closed loop's slot stays taken: a failed send
   * is not re-planned at once, so a client that cannot send at all does
   * not spin the loop planning records that fail. */
  if (L->recs[seq].done_ns && L->pt.mode != TP_LOAD_CONCURRENCY) {
    tp_pacer_item done = single_item(L, seq);
    tp_pacer_done(L->pacer, &done, L->recs[seq].done_ns);
  }
}

/* Sends every request the pacer releases now, then arms the timer for the
 * next one due by time (an open loop's next offset; a closed loop waits on
 * completions only).  Deadlines are absolute, so a late wake-up never
 * shifts the plan. */
void tpr_pump(tp_run *r, uint64_t now) {
  level_state *L = &r->lv;
  if (L->sess) {
    tpr_sessions_pump(r, now);
    return;
  }
  if (!L->pacer) return;
  bool open = L->pt.mode != TP_LOAD_CONCURRENCY;
  tp_pacer_item it;
  /* Everything due now leaves in one write (see tp_client_hold). */
  tp_client_hold(r->client, true);
  uint64_t window = open ? r->send_window_ns : 0;
  while (!r->interrupted) {
    /* Past the measured duration nothing more is planned; requests due
     * before it and held by the cap still leave. */
    if (L->measure_end_ns) tp_pacer_stop_at(L->pacer, L->measure_end_ns, now, false);
    L->pump_ns = now;
    if (!tp_pacer_next(L->pacer, now, &it)) break;
    if (window && !L->window_held) {
      tp_client_hold(r->client, true);
      L->window_held = true;
      L->window_first_ns = it.planned_ns;
    }
    release(r, &it);
    /* A closed loop plans its slots at the time the pump was called (at
     * the start, every slot at the level's t0); an open loop looks again,
     * so a request that fell due while sending leaves now. */
    if (open) now = tp_now_ns();
  }
  uint64_t due = tp_pacer_next_due(L->pacer);
  /* The window closes when the next request is not due within it (or
   * already is, held back by the cap): what it holds is written now. */
  if (L->window_held && (r->interrupted || due <= now || due > L->window_first_ns + window)) tpr_window_close(r);
  tp_client_hold(r->client, false);
  if (due != UINT64_MAX && !r->interrupted)
    tp_timer_start(r->timers, &L->plan_timer, due);
  else
    tp_timer_stop(r->timers, &L->plan_timer);
  /* Only ever set here: the stability windows set it too, and requests
   * already due still leave after that. */
  if (tp_pacer_finished(L->pacer)) L->stop_planning = true;
}

void tpr_window_close(tp_run *r) {
  if (!r->lv.window_held) return;
  r->lv.window_held = false;
  tp_client_hold(r->client, false);
}

void tpr_on_plan_timer(tp_timer *t, uint64_t now_ns) {
  tp_run *r = t->data;
  tpr_pump(r, now_ns);
  tpr_level_check_done(r);
}

/* A stop rule has its answer (the stability windows): nothing more is
 * planned, and what the cap held back when the pump last looked still
 * leaves, as it did when the level kept its own queue (requests that fell
 * due since were never planned; an open loop's end is just after that
 * look, a closed loop's is now). */
void tpr_stop_planning(tp_run *r, uint64_t now) {
  level_state *L = &r->lv;
  L->stop_planning = true;
  if (!L->pacer) return;
  bool open = L->pt.mode != TP_LOAD_CONCURRENCY;
  tp_pacer_stop_at(L->pacer, open ? L->pump_ns + 1 : now, now, false);
}

/* An interruption: the requests that were due when the pump last looked
 * and that the cap held back were never sent; each gets its record, failed
 * as not sent (as when the level kept its own queue).  Then nothing more
 * leaves. */
void tpr_drop_waiting(tp_run *r, const char *why) {
  level_state *L = &r->lv;
  if (!L->pacer) return;
  tp_pacer_item items[64];
  size_t k;
  while ((k = tp_pacer_drop_waiting(L->pacer, L->pump_ns, items, 64)) > 0) {
    for (size_t i = 0; i < k; i++) {
      size_t seq = plan_record(r, &items[i]);
      if (seq == SIZE_MAX) continue;
      tp_record *rec = &L->recs[seq];
      tp_record_fail(rec, TP_ERRCLASS_CANCELLED, -1, why, strlen(why));
      rec->done_ns = tp_now_ns();
      note_done(r, rec);
    }
    if (k < 64) break;
  }
  tp_pacer_stop_at(L->pacer, 0, tp_now_ns(), true);
  L->stop_planning = true;
}

/* A slab of n more contexts, put on the free list. */
static int ctx_pool_add(level_state *L, size_t n) {
  ctx_slab *s = malloc(sizeof(*s) + n * sizeof(req_ctx));
  if (!s) return TP_ENOMEM;
  s->n = n;
  s->next = L->ctx_slabs;
  L->ctx_slabs = s;
  for (size_t i = n; i-- > 0;) {
    s->ctx[i].next = L->ctx_free;
    L->ctx_free = &s->ctx[i];
  }
  L->ctx_n += n;
  return 0;
}

int tpr_ctx_pool_init(tp_run *r, size_t n) {
  tpr_ctx_pool_free(r);
  return ctx_pool_add(&r->lv, n ? n : 64);
}

void tpr_ctx_pool_free(tp_run *r) {
  level_state *L = &r->lv;
  while (L->ctx_slabs) {
    ctx_slab *s = L->ctx_slabs;
    L->ctx_slabs = s->next;
    free(s);
  }
  L->ctx_free = NULL;
  L->ctx_n = 0;
}

/* A context for a request about to be sent; a new slab only when every
 * one is in flight. */
static req_ctx *ctx_take(level_state *L) {
  if (!L->ctx_free && ctx_pool_add(L, L->ctx_n ? L->ctx_n : 64)) return NULL;
  req_ctx *x = L->ctx_free;
  L->ctx_free = x->next;
  *x = (req_ctx){0};
  return x;
}

static void ctx_give(level_state *L, req_ctx *x) {
  x->next = L->ctx_free;
  L->ctx_free = x;
}

void tpr_req_on_event(void *req, const tp_client_event *ev, uint64_t arrival_ns) {
  req_ctx *x = req;
  tp_record *rec = &x->run->lv.recs[x->seq];
  if (x->final_seen) return; /* nothing after the final response counts */
  /* Token ids stand for text: the engine protocols answer with ids. */
  bool has_text = (ev->text && ev->text_len > 0) || (ev->ids && ev->token_ids > 0);
  if (ev->ids) rec->output_ids = (rec->output_ids < 0 ? 0 : rec->output_ids) + (int32_t)ev->token_ids;
  tp_record_add_response(rec, arrival_ns, has_text);
  if (ev->has_choices) {
    rec->last_choice_ns = arrival_ns;
    rec->n_choice_resp = rec->n_resp;
  }
  /* Reasoning text is a generated token for timing, but kept apart. */
  tp_buf *into = ev->reasoning ? &rec->reasoning : &rec->text;
  if (has_text) {
    if (into == &rec->text && !rec->first_answer_ns) rec->first_answer_ns = arrival_ns;
    tp_record_append_text(rec, into == &rec->reasoning, ev->text, ev->text_len, x->cumulative);
  }
  if (ev->prompt_tokens >= 0) rec->server_input_tokens = ev->prompt_tokens;
  if (ev->cached_tokens >= 0) rec->server_cached_tokens = ev->cached_tokens;
  if (ev->server_output_tokens >= 0)
    rec->server_output_tokens =
        (rec->server_output_tokens < 0 ? 0 : rec->server_output_tokens) + ev->server_output_tokens;
  if (ev->error) tp_record_fail(rec, ev->error_class, -1, ev->error, strlen(ev->error));
  if (ev->final) {
    x->final_seen = true;
    rec->done_ns = arrival_ns;
    return;
  }
  /* Memory stays bounded under an answer that never ends. */
  const tp_config *c = &x->run->cfg;
  bool too_big = c->server.max_response_bytes && rec->text.len > c->server.max_response_bytes;
  bool too_long = c->server.max_output_tokens && rec->n_text_resp > c->server.max_output_tokens;
  if ((too_big || too_long) && !x->cancelled && x->run->client->ops->cancel) {
    char msg[160];
    snprintf(msg, sizeof(msg), "answer cancelled: it passed %s (%" PRIu64 ")",
             too_big ? "--max-response-bytes" : "--max-output-tokens",
             too_big ? c->server.max_response_bytes : c->server.max_output_tokens);
    tp_record_fail(rec, TP_ERRCLASS_PROTOCOL, -1, msg, strlen(msg));
    x->cancelled = true;
    x->run->client->ops->cancel(x->run->client, x->handle);
  }
}

/* The text a request sends: a unique marker first (--cache-bust, so even the
 * first block differs), then a shared prefix (--prefix-tokens), then the
 * prompt.  Rebuilt from the seed when needed, so nothing is stored per
 * request.  tpr_sent_head gives the pieces before the prompt: the marker
 * (written into marker) and the prefix with its space; unused pieces are
 * NULL. */
void tpr_sent_head(const tp_run *r, size_t seq, char marker[24], const char *head[3], size_t len[3]) {
  const level_state *L = &r->lv;
  /* The number across ranks, so markers stay unique in a distributed run. */
  uint64_t gseq = L->recs[seq].seq;
  for (int i = 0; i < 3; i++) {
    head[i] = NULL;
    len[i] = 0;
  }
  if (r->cfg.prompts.cache_bust) {
    snprintf(marker, 24, "[%016llx] ",
             (unsigned long long)tp_rng_mix(r->cfg.prompts.random_seed ^ 0xcb,
                                            ((uint64_t)r->cur_level << 40) | gseq));
    head[0] = marker;
    len[0] = strlen(marker);
  }
  if (r->n_prefixes) {
    size_t k = gseq % r->n_prefixes;
    head[1] = r->prefixes[k];
    len[1] = r->prefix_len[k];
    head[2] = " ";
    len[2] = 1;
  }
}

void tpr_build_sent_text(tp_run *r, size_t seq, tp_buf *out) {
  level_state *L = &r->lv;
  const tp_prompt *p = &L->ds->items[L->recs[seq].prompt_index];
  char marker[24];
  const char *head[3];
  size_t len[3];
  tpr_sent_head(r, seq, marker, head, len);
  tp_buf_reset(out);
  for (int i = 0; i < 3; i++)
    if (head[i]) tp_buf_append(out, head[i], len[i]);
  tp_buf_append(out, p->text, p->text_len);
}

/* Whether a request failed to reach the server: no byte of an answer, and
 * the connection refused, lost or timed out (a reset stream, an HTTP
 * status or an error in the stream are answers: the server is there). */
static bool unreached(const tp_record *rec) {
  if (rec->first_resp_ns || rec->n_resp) return false;
  return rec->err_class == TP_ERRCLASS_CONNECT || rec->err_class == TP_ERRCLASS_TLS ||
         rec->err_class == TP_ERRCLASS_TIMEOUT;
}

void tpr_backoff_done(tp_run *r, const tp_record *rec, uint32_t backoff, uint64_t *hold_ns, uint32_t *count) {
  level_state *L = &r->lv;
  *hold_ns = 0;
  *count = 0;
  if (unreached(rec)) {
    *count = backoff < UINT32_MAX ? backoff + 1 : backoff;
    *hold_ns = tp_backoff_delay_ns(*count);
    if (tp_backoff_failed(&L->bo, rec->sent_ns, rec->done_ns)) tpr_end_on_failures(r, tp_now_ns());
  } else if (rec->first_resp_ns || rec->err_class != TP_ERRCLASS_CANCELLED) {
    /* The server's last word: a whole answer's end, else the last byte of
     * text or the first of any kind (an answer cut off), else the end (an
     * HTTP status). */
    uint64_t at = rec->done_ns;
    if (!tp_record_ok(rec) && rec->first_resp_ns) at = TP_MAX(rec->first_resp_ns, rec->last_token_ns);
    tp_backoff_answered(&L->bo, rec->sent_ns, at);
  } else {
    tp_backoff_other(&L->bo, rec->sent_ns);
  }
}

/* The end goes to the sink after the poll phase (tp_defer), once the
 * requests that refilled slots are flushed. */
static void queue_done(tp_run *r, size_t seq) {
  if (r->done_n == r->done_cap) {
    size_t cap = r->done_cap ? r->done_cap * 2 : 256;
    size_t *q = realloc(r->done_q, cap * sizeof(*q));
    if (!q) {
      tpr_finish_done(r, seq);
      return;
    }
    r->done_q = q;
    r->done_cap = cap;
  }
  r->done_q[r->done_n++] = seq;
  /* tpr_req_on_done may run in any phase of the loop (libcurl finishes
   * transfers from its timer); tp_defer keeps the poll from blocking. */
  tp_defer_arm(&r->done_defer);
}

void tpr_not_sent(tp_run *r, size_t seq) {
  level_state *L = &r->lv;
  tp_record *rec = &L->recs[seq];
  static const char msg[] = "not sent: the server was not answering (back-off, docs/metrics.md)";
  tp_record_fail(rec, TP_ERRCLASS_NOT_SENT, -1, msg, sizeof(msg) - 1);
  uint64_t now = tp_now_ns();
  rec->done_ns = now;
  note_done(r, rec);
  if (tp_backoff_not_sent(&L->bo, now)) tpr_end_on_failures(r, now);
  queue_done(r, seq);
}

void tpr_req_on_done(void *req, const tp_client_done *d) {
  req_ctx *x = req;
  tp_run *r = x->run;
  level_state *L = &r->lv;
  size_t seq = x->seq;
  tp_record *rec = &L->recs[seq];
  uint32_t backoff = x->backoff;
  ctx_give(L, x);
  /* The wire time of the request's last byte is the truest send time. */
  if (d->sent_ns) rec->sent_ns = d->sent_ns;
  if (d->server_id) tp_record_set_server_id(rec, d->server_id, strlen(d->server_id));
  rec->resends = d->resends;
  if (d->err_class != TP_ERRCLASS_NONE)
    tp_record_fail(rec, d->err_class, d->status, d->message, strlen(d->message));
  if (!rec->done_ns) rec->done_ns = d->end_ns;
  /* The dataset's count is the prompt's; a marker or prefix in front is
   * counted with it by the tokenizer (tpr_count_work), or not at all. */
  rec->input_tokens =
      r->cfg.prompts.cache_bust || r->n_prefixes ? -1 : L->ds->items[rec->prompt_index].input_tokens;
  L->in_flight--;
  note_done(r, rec);
  /* A request that failed to reach the server holds its closed-loop slot
   * for the back-off (and may end the level). */
  uint64_t hold;
  uint32_t count;
  tpr_backoff_done(r, rec, backoff, &hold, &count);

  /* Refill first, so the next request leaves before any bookkeeping. */
  if (L->sess) {
    tpr_sessions_on_done(r, seq, hold, count);
  } else if (L->pacer) {
    /* Its slot frees: a closed loop plans the next request now (or once
     * the hold ends), a capped open loop releases the one the cap held
     * longest.  Without a cap an open loop's completion frees nothing
     * anything waits on: only the plan timer releases, so the completion
     * costs no pump. */
    tp_pacer_item it = single_item(L, seq);
    uint64_t now = tp_now_ns();
    tp_pacer_done_hold(L->pacer, &it, now, hold, count);
    bool frees = L->pt.mode == TP_LOAD_CONCURRENCY || L->slots;
    if (frees && !r->interrupted) tpr_pump(r, now);
  }

  /* The rest waits for the check phase: the loop flushes the refill first. */
  queue_done(r, seq);
}

/* A random trace id and parent id for the request (W3C Trace Context: the
 * trace id is random and not all zero, and so is the parent id). */
static void trace_ids(tp_run *r, tp_record *rec) {
  if (!r->trace_rng_ready) {
    uint64_t seed = 0;
    if (getrandom(&seed, sizeof(seed), 0) != (ssize_t)sizeof(seed)) seed = tp_now_ns() ^ ((uint64_t)getpid() << 32);
    tp_rng_seed(&r->trace_rng, seed);
    r->trace_rng_ready = true;
  }
  uint64_t w[3];
  do {
    for (int i = 0; i < 3; i++) w[i] = tp_rng_next(&r->trace_rng);
  } while (!(w[0] | w[1]) || !w[2]);
  memcpy(rec->trace_id, w, 16);
  memcpy(rec->span_id, &w[2], 8);
}

void tpr_send_request(tp_run *r, size_t seq, uint32_t backoff) {
  level_state *L = &r->lv;
  tp_record *rec = &L->recs[seq];
  req_ctx *x = ctx_take(L);
  uint64_t now = tp_now_ns();
  if (!x) {
    tp_record_fail(rec, TP_ERRCLASS_CANCELLED, -1, "out of memory", 13);
    rec->done_ns = now;
    note_done(r, rec);
    return;
  }
  x->run = r;
  x->seq = seq;
  x->backoff = backoff;
  x->cumulative = r->cfg.server.cumulative_text;
  const tp_prompt *p = &L->ds->items[rec->prompt_index];
  char id[96];
  snprintf(id, sizeof(id), "%s%" PRIu64, r->id_prefix, rec->seq);
  uint32_t min_tokens = r->cfg.prompts.output_tokens_deterministic ? rec->max_tokens : 0;
  tp_client_send snd = {id,          p->text,
                        p->text_len, rec->max_tokens,
                        min_tokens,  r->cfg.server.request_timeout_ms * TP_NS_PER_MS,
                        &x->handle,  NULL,
                        NULL,        0,
                        NULL};
  char traceparent[TP_TRACEPARENT_LEN + 1];
  if (r->cfg.server.traceparent) {
    trace_ids(r, rec);
    tp_record_traceparent(rec, traceparent);
    snd.traceparent = traceparent;
  }
  if (r->cfg.prompts.cache_bust || r->n_prefixes) {
    tpr_build_sent_text(r, seq, &r->sendbuf);
    snd.prompt = (const char *)r->sendbuf.data;
    snd.prompt_len = r->sendbuf.len;
  } else if (p->messages && r->cfg.server.service_kind == TP_SERVICE_OPENAI_CHAT) {
    snd.messages = p->messages; /* the chat messages as the file gave them */
  }
  if (r->file_inputs) snd.inputs = p->inputs;
  if (L->sess) tpr_sessions_fill_send(r, seq, &snd);
  rec->sent_ns = now;
  L->in_flight++;
  if (L->in_flight > L->max_in_flight) L->max_in_flight = L->in_flight;
  int rv = r->client->ops->send(r->client, &snd, x);
  if (!rv && r->live) tp_live_sent(r->live);
  if (rv) {
    ctx_give(L, x);
    L->in_flight--;
    tp_record_fail(rec, TP_ERRCLASS_PROTOCOL, -1, "cannot send the request", 23);
    rec->done_ns = now;
    note_done(r, rec);
  }
}

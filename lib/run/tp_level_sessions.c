/* A level of multi-turn sessions (a conversations file, docs/sessions.md):
 * the pacer (run/tp_sessions.h) releases each turn after the previous
 * answer and its think time, and the turn is sent like any request. */
#include <stdlib.h>
#include <string.h>

#include "run/tp_run_internal.h"

/* Room for request seq's turn (and sent text) beside the records. */
static int sessions_grow(level_state *L, size_t seq) {
  if (seq < L->sess_cap) return 0;
  size_t cap = L->sess_cap ? L->sess_cap * 2 : 256;
  while (cap <= seq) cap *= 2;
  tp_sessions_turn *t = realloc(L->sess_turns, cap * sizeof(*t));
  if (!t) return TP_ENOMEM;
  L->sess_turns = t;
  char **sent = realloc(L->sess_sent, cap * sizeof(*sent));
  if (!sent) return TP_ENOMEM;
  memset(sent + L->sess_cap, 0, (cap - L->sess_cap) * sizeof(*sent));
  L->sess_sent = sent;
  L->sess_cap = cap;
  return 0;
}

/* One turn released by the pacer: recorded and sent like any request. */
/* The session is over: the client lets its connection go. */
static void session_end(tp_run *r, uint32_t session) {
  if (session && r->client->ops->session_end) r->client->ops->session_end(r->client, session);
}

static void plan_session_turn(tp_run *r, const tp_sessions_turn *t) {
  level_state *L = &r->lv;
  tp_record *rec = tpr_grow_records(r);
  if (!rec || sessions_grow(L, L->n_planned)) {
    /* Out of memory: the session ends, nothing more starts. */
    tp_sessions_done(L->sess, t, false, NULL, 0, tp_now_ns());
    tp_sessions_stop_at(L->sess, 0, tp_now_ns(), true);
    return;
  }
  size_t seq = L->n_planned++;
  L->sess_turns[seq] = *t;
  rec->seq = seq;
  rec->planned_ns = t->it.planned_ns;
  rec->prompt_index = (uint32_t)t->prompt_index;
  rec->session = (uint32_t)t->it.session + 1;
  rec->turn = t->it.turn;
  /* The warm-up count is of sessions: all their turns are warm-up. */
  rec->warmup = L->warmup_end_ns ? rec->planned_ns < L->warmup_end_ns : t->it.session < L->n_warmup;
  rec->max_tokens = tpr_draw_max_tokens(r, &L->ds->items[rec->prompt_index], seq);
  tpr_stats_planned(r, rec);
  if (!rec->warmup && !L->measure_start_ns) {
    L->measure_start_ns = rec->planned_ns;
    if (r->cfg.measure.measure_mode == TP_MEASURE_DURATION)
      L->measure_end_ns = rec->planned_ns + r->cfg.measure.duration_ms * TP_NS_PER_MS;
  }
  /* An open loop backing off from a server that went away keeps its
   * schedule: the turn is recorded as not sent, and its session ends. */
  if (L->pt.mode != TP_LOAD_CONCURRENCY && !tp_backoff_may_send(&L->bo, tp_now_ns()))
    tpr_not_sent(r, seq);
  else
    tpr_send_request(r, seq, t->it.backoff);
  /* A send never ends inside tpr_send_request: an end already there means it
   * was not sent (no callback follows), and the session ends with it. */
  if (L->recs[seq].done_ns && tp_sessions_done(L->sess, t, false, NULL, 0, tp_now_ns()))
    session_end(r, L->recs[seq].session);
}

/* Sends every turn that may leave now, then arms the timer for the next
 * think time or session start. */
void tpr_sessions_pump(tp_run *r, uint64_t now) {
  level_state *L = &r->lv;
  tp_sessions_turn t;
  while (!r->interrupted) {
    /* Past the measured duration no session starts; those under way end. */
    if (L->measure_end_ns) tp_sessions_stop_at(L->sess, L->measure_end_ns, now, false);
    if (!tp_sessions_next(L->sess, now, &t)) break;
    plan_session_turn(r, &t);
    now = tp_now_ns();
  }
  uint64_t due = tp_sessions_next_due(L->sess);
  if (due != UINT64_MAX && !r->interrupted)
    tp_timer_start(r->timers, &L->plan_timer, due);
  else
    tp_timer_stop(r->timers, &L->plan_timer);
  L->stop_planning = r->interrupted || tp_sessions_finished(L->sess);
}

static void on_sessions_timer(tp_timer *t, uint64_t now_ns) {
  tp_run *r = t->data;
  tpr_sessions_pump(r, now_ns);
  tpr_level_check_done(r);
}

/* What a turn sends: the history as chat messages, or as text, on its
 * session's connection. */
void tpr_sessions_fill_send(tp_run *r, size_t seq, tp_client_send *snd) {
  level_state *L = &r->lv;
  snd->session = L->recs[seq].session;
  bool chat = r->cfg.server.service_kind == TP_SERVICE_OPENAI_CHAT;
  if (tp_sessions_build(L->sess, &L->sess_turns[seq], chat, &r->sendbuf, &L->sess_msgs)) return;
  snd->prompt = (const char *)r->sendbuf.data;
  snd->prompt_len = r->sendbuf.len;
  snd->messages = chat ? (const char *)L->sess_msgs.data : NULL;
  if (r->tok && L->sess_sent) L->sess_sent[seq] = tp_strndup(snd->prompt, snd->prompt_len);
}

/* A turn ended: its answer joins the history, and the session's next turn
 * (after its think time) or a new session may leave; after a turn that
 * failed to reach the server, a closed loop's new session waits hold_ns. */
void tpr_sessions_on_done(tp_run *r, size_t seq, uint64_t hold_ns, uint32_t backoff) {
  level_state *L = &r->lv;
  tp_record *rec = &L->recs[seq];
  uint64_t now = tp_now_ns();
  if (tp_sessions_done_hold(L->sess, &L->sess_turns[seq], tp_record_ok(rec), (const char *)rec->text.data,
                            rec->text.len, rec->done_ns ? rec->done_ns : now, hold_ns, backoff))
    session_end(r, rec->session);
  if (!r->interrupted) tpr_sessions_pump(r, now);
}

int tpr_sessions_level_start(tp_run *r, char *err, size_t errlen) {
  level_state *L = &r->lv;
  const tp_config *c = &r->cfg;
  if (L->pt.mode == TP_LOAD_SCHEDULE || c->measure.measure_mode == TP_MEASURE_TIME_WINDOWS ||
      c->measure.measure_mode == TP_MEASURE_COUNT_WINDOWS) {
    tp_seterr(err, errlen,
              "%s: a conversations file runs with load.concurrency or load.request_rate, measured by count "
              "or measure.duration_ms (not a schedule or stability windows)",
              r->ds.source);
    return TP_EINVAL;
  }
  if (r->mpi) {
    /* Each rank would run every session: they are not split yet. */
    tp_seterr(err, errlen, "%s: a conversations file does not run across MPI ranks yet; run it in one process",
              r->ds.source);
    return TP_EUNSUPPORTED;
  }
  bool open = L->pt.mode == TP_LOAD_RATE;
  tp_sessions_opts o = {&r->ds, open ? TP_PACER_OPEN : TP_PACER_CLOSED, L->slots, L->offsets, L->n_offsets,
                        L->total == SIZE_MAX ? UINT64_MAX : (uint64_t)L->total};
  int rv = tp_sessions_new(&L->sess, &o);
  if (rv) {
    tp_seterr(err, errlen, "%s: cannot start the sessions (%s)", r->ds.source,
              rv == TP_ENOMEM ? "out of memory" : "no concurrency or rate");
    return rv;
  }
  tp_buf_init(&L->sess_msgs);
  /* The pacer plans; the level's own planning is done. */
  L->sess_total = L->total;
  L->total = SIZE_MAX;
  tp_timer_init(&L->plan_timer, on_sessions_timer, r);
  return 0;
}

void tpr_sessions_level_stats(tp_run *r, tp_level_result *lv) {
  level_state *L = &r->lv;
  tp_turn_stats *ts = NULL;
  size_t n = 0;
  if (tp_sessions_stats(L->recs, L->n_planned, &ts, &n, &lv->sessions) == 0) {
    lv->turns = ts;
    lv->n_turns = n;
  }
}

void tpr_sessions_level_end(tp_run *r) {
  level_state *L = &r->lv;
  if (!L->sess) return;
  /* Sessions a stop rule cut short never ended: their connections go now. */
  for (size_t i = 0; i < L->n_planned; i++)
    if (L->recs[i].session && L->recs[i].turn == 0) session_end(r, L->recs[i].session);
  for (size_t i = 0; i < L->sess_cap; i++) free(L->sess_sent[i]);
  free(L->sess_sent);
  free(L->sess_turns);
  tp_buf_fini(&L->sess_msgs);
  tp_sessions_free(L->sess);
  L->sess = NULL;
  L->sess_sent = NULL;
  L->sess_turns = NULL;
  L->sess_cap = 0;
}

/* Multi-turn sessions in a level (tp_sessions.h). */
#include "run/tp_sessions.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "metrics/tp_request.h"
#include "metrics/tp_stats.h"

/* The history of a session under way: the pieces sent so far (user texts
 * and answers, alternating), kept until its last turn ends. */
typedef struct history {
  char **piece;
  size_t *len;
  size_t n, cap;
} history;

struct tp_sessions {
  const tp_dataset *ds;
  tp_pacer *pacer;
  /* Indexed by the pacer's session number (start order); NULL = not
   * started or over.  Grows as sessions start. */
  history **hist;
  size_t n_hist;
};

static size_t file_session(const tp_sessions *s, uint64_t session) {
  return (size_t)(session % s->ds->n_sessions);
}

static uint32_t cb_turns(void *ud, uint64_t session) {
  const tp_sessions *s = ud;
  return s->ds->sessions[file_session(s, session)].turns;
}

static uint64_t cb_think_ns(void *ud, uint64_t session, uint32_t turn) {
  const tp_sessions *s = ud;
  const tp_session *fs = &s->ds->sessions[file_session(s, session)];
  return s->ds->turns[fs->first + turn].delay_ms * TP_NS_PER_MS;
}

int tp_sessions_new(tp_sessions **out, const tp_sessions_opts *o) {
  *out = NULL;
  if (!o->ds || !o->ds->n_sessions || !o->ds->turns) return TP_EINVAL;
  tp_sessions *s = calloc(1, sizeof(*s));
  if (!s) return TP_ENOMEM;
  s->ds = o->ds;
  tp_pacer_opts po = {o->mode, o->slots, o->offsets, o->n_offsets, o->total, {cb_turns, cb_think_ns, s}};
  int rv = tp_pacer_new(&s->pacer, &po);
  if (rv) {
    free(s);
    return rv;
  }
  *out = s;
  return 0;
}

static void history_free(history *h) {
  if (!h) return;
  for (size_t i = 0; i < h->n; i++) free(h->piece[i]);
  free(h->piece);
  free(h->len);
  free(h);
}

void tp_sessions_free(tp_sessions *s) {
  if (!s) return;
  for (size_t i = 0; i < s->n_hist; i++) history_free(s->hist[i]);
  free(s->hist);
  tp_pacer_free(s->pacer);
  free(s);
}

void tp_sessions_start(tp_sessions *s, uint64_t t0_ns) { tp_pacer_start(s->pacer, t0_ns); }

bool tp_sessions_next(tp_sessions *s, uint64_t now_ns, tp_sessions_turn *t) {
  if (!tp_pacer_next(s->pacer, now_ns, &t->it)) return false;
  t->session_index = file_session(s, t->it.session);
  t->prompt_index = s->ds->sessions[t->session_index].first + t->it.turn;
  return true;
}

uint64_t tp_sessions_next_due(const tp_sessions *s) { return tp_pacer_next_due(s->pacer); }

static history *history_of(tp_sessions *s, uint64_t session, bool make) {
  if (session >= s->n_hist) {
    if (!make) return NULL;
    size_t n = s->n_hist ? s->n_hist : 64;
    while (n <= session) n *= 2;
    history **h = realloc(s->hist, n * sizeof(*h));
    if (!h) return NULL;
    memset(h + s->n_hist, 0, (n - s->n_hist) * sizeof(*h));
    s->hist = h;
    s->n_hist = n;
  }
  if (!s->hist[session] && make) s->hist[session] = calloc(1, sizeof(history));
  return s->hist[session];
}

static int history_add(history *h, const char *text, size_t len) {
  if (h->n == h->cap) {
    size_t cap = h->cap ? h->cap * 2 : 8;
    char **p = realloc(h->piece, cap * sizeof(*p));
    if (!p) return TP_ENOMEM;
    h->piece = p;
    size_t *l = realloc(h->len, cap * sizeof(*l));
    if (!l) return TP_ENOMEM;
    h->len = l;
    h->cap = cap;
  }
  char *c = tp_strndup(text ? text : "", len);
  if (!c) return TP_ENOMEM;
  h->piece[h->n] = c;
  h->len[h->n++] = len;
  return 0;
}

int tp_sessions_build(tp_sessions *s, const tp_sessions_turn *t, bool chat, tp_buf *text, tp_buf *messages) {
  const tp_prompt *p = &s->ds->items[t->prompt_index];
  history *h = history_of(s, t->it.session, true);
  if (!h) return TP_ENOMEM;
  tp_buf_reset(text);
  int bad = 0;
  for (size_t i = 0; i < h->n; i++) {
    bad |= tp_buf_append(text, h->piece[i], h->len[i]);
    bad |= tp_buf_append(text, "\n", 1);
  }
  bad |= tp_buf_append(text, p->text, p->text_len);
  if (bad) return TP_ENOMEM;
  if (!chat || !messages) return 0;
  /* Even pieces are the user's, odd ones the assistant's. */
  tp_buf_reset(messages);
  json_t *arr = json_array();
  for (size_t i = 0; arr && i <= h->n; i++) {
    const char *c = i < h->n ? h->piece[i] : p->text;
    size_t n = i < h->n ? h->len[i] : p->text_len;
    json_t *m = json_pack("{s:s,s:s%}", "role", i % 2 ? "assistant" : "user", "content", c, n);
    if (!m || json_array_append_new(arr, m)) bad = 1;
  }
  char *js = arr && !bad ? json_dumps(arr, JSON_COMPACT) : NULL;
  json_decref(arr);
  if (!js) return TP_ENOMEM;
  bad = tp_buf_append(messages, js, strlen(js));
  bad |= tp_buf_append(messages, "", 1); /* NUL-terminated for the client */
  messages->len--;
  free(js);
  return bad ? TP_ENOMEM : 0;
}

bool tp_sessions_done(tp_sessions *s, const tp_sessions_turn *t, bool ok, const char *answer, size_t len,
                      uint64_t now_ns) {
  return tp_sessions_done_hold(s, t, ok, answer, len, now_ns, 0, 0);
}

bool tp_sessions_done_hold(tp_sessions *s, const tp_sessions_turn *t, bool ok, const char *answer, size_t len,
                           uint64_t now_ns, uint64_t hold_ns, uint32_t backoff) {
  tp_pacer_item it = t->it;
  bool last = it.turn + 1 >= it.turns;
  history *h = history_of(s, it.session, false);
  if (!last && ok && h) {
    const tp_prompt *p = &s->ds->items[t->prompt_index];
    const char *fixed = s->ds->turns[t->prompt_index].assistant;
    if (history_add(h, p->text, p->text_len) ||
        history_add(h, fixed ? fixed : answer, fixed ? strlen(fixed) : len))
      ok = false;
  }
  /* A failed turn ends its session: the pacer sees it as the last. */
  if (!ok) it.turns = it.turn + 1;
  if (!ok || last) {
    history_free(h);
    if (it.session < s->n_hist) s->hist[it.session] = NULL;
  }
  tp_pacer_done_hold(s->pacer, &it, now_ns, hold_ns, backoff);
  return !ok || last;
}

void tp_sessions_stop_at(tp_sessions *s, uint64_t t_ns, uint64_t now_ns, bool drop_turns) {
  tp_pacer_stop_at(s->pacer, t_ns, now_ns, drop_turns);
}

size_t tp_sessions_drop_waiting(tp_sessions *s, uint64_t now_ns) {
  tp_pacer_item items[64];
  size_t n = 0, k;
  while ((k = tp_pacer_drop_waiting(s->pacer, now_ns, items, 64)) > 0) {
    for (size_t i = 0; i < k; i++)
      if (items[i].session < s->n_hist) {
        history_free(s->hist[items[i].session]);
        s->hist[items[i].session] = NULL;
      }
    n += k;
    if (k < 64) break;
  }
  return n;
}

bool tp_sessions_finished(const tp_sessions *s) { return tp_pacer_finished(s->pacer); }

/* ---- per-turn statistics --------------------------------------------------- */

/* A turn's figures are the level's, over that turn's requests: each
 * request's values come from tp_request_metrics (ITL over reasoning and
 * answer tokens, none for text that all came at one time) and are pooled
 * as tp_level_compute pools them, the percentiles by tp_stat_compute's
 * linear method (docs/metrics.md).  -1 = no request had the figure. */
static double avg_or(double sum, uint64_t n) { return n ? sum / (double)n : -1; }

static double stat_avg(const tp_stat *st) { return st->n ? st->avg : -1; }

/* One turn index's statistics. */
static int turn_stats(const tp_record *recs, size_t n, uint32_t turn, tp_turn_stats *ts) {
  memset(ts, 0, sizeof(*ts));
  ts->turn = turn;
  enum { TTFT, ITL, LAT, IN, OUT, NV };
  double *v[NV];
  size_t nv[NV] = {0};
  bool oom = false;
  for (int k = 0; k < NV; k++) oom |= !(v[k] = malloc((n ? n : 1) * sizeof(double)));
  double cached = 0;
  uint64_t n_cached = 0;
  for (size_t i = 0; !oom && i < n; i++) {
    const tp_record *r = &recs[i];
    if (!r->session || r->warmup || r->turn != turn) continue;
    ts->requests++;
    tp_req_metrics m;
    tp_request_metrics(r, &m);
    if (!m.ok) continue;
    ts->succeeded++;
    if (m.latency_ms >= 0) v[LAT][nv[LAT]++] = m.latency_ms;
    if (m.ttft_ms >= 0) v[TTFT][nv[TTFT]++] = m.ttft_ms;
    if (m.output_tokens >= 0) {
      v[OUT][nv[OUT]++] = (double)m.output_tokens;
      if (m.itl_ms >= 0) v[ITL][nv[ITL]++] = m.itl_ms;
    }
    if (m.input_tokens >= 0) v[IN][nv[IN]++] = (double)m.input_tokens;
    if (r->server_cached_tokens >= 0) cached += r->server_cached_tokens, n_cached++;
  }
  tp_stat st[NV];
  for (int k = 0; !oom && k < NV; k++) tp_stat_compute(&st[k], v[k], nv[k]);
  for (int k = 0; k < NV; k++) free(v[k]);
  if (oom) return TP_ENOMEM;
  ts->ttft_ms_avg = stat_avg(&st[TTFT]);
  ts->ttft_ms_p50 = st[TTFT].n ? st[TTFT].p50 : -1;
  ts->ttft_ms_p99 = st[TTFT].n ? st[TTFT].p99 : -1;
  ts->itl_ms_avg = stat_avg(&st[ITL]);
  ts->latency_ms_avg = stat_avg(&st[LAT]);
  ts->input_tokens_avg = stat_avg(&st[IN]);
  ts->cached_tokens_avg = avg_or(cached, n_cached);
  ts->output_tokens_avg = stat_avg(&st[OUT]);
  return 0;
}

/* One session of the level, gathered from its turns' records. */
typedef struct sess_acc {
  uint64_t start_ns, end_ns;
  uint32_t turns, ok;
  uint32_t want; /* turns of the session (the highest turn seen + 1 is a floor) */
  int64_t tokens;
  bool counted;
} sess_acc;

static void session_summary(const tp_record *recs, size_t n, uint32_t max_session, tp_session_summary *sum) {
  memset(sum, 0, sizeof(*sum));
  sess_acc *a = calloc((size_t)max_session + 1, sizeof(*a));
  double *times = calloc((size_t)max_session + 1, sizeof(double));
  if (!a || !times) goto out;
  for (size_t i = 0; i < n; i++) {
    const tp_record *r = &recs[i];
    if (!r->session || r->warmup) continue;
    sess_acc *s = &a[r->session];
    s->counted = true;
    s->turns++;
    if (r->sent_ns && (!s->start_ns || r->sent_ns < s->start_ns)) s->start_ns = r->sent_ns;
    if (r->done_ns > s->end_ns) s->end_ns = r->done_ns;
    if (tp_record_ok(r)) s->ok++;
    /* The counts the level uses (--token-source), as tp_request_metrics
     * gives them. */
    tp_req_metrics m;
    tp_request_metrics(r, &m);
    if (m.input_tokens < 0 || m.output_tokens < 0 || s->tokens < 0)
      s->tokens = -1;
    else
      s->tokens += m.input_tokens + m.output_tokens;
  }
  double turns = 0, tok = 0, time = 0;
  uint64_t n_tok = 0;
  for (uint32_t k = 1; k <= max_session; k++) {
    sess_acc *s = &a[k];
    if (!s->counted) continue;
    double secs = s->end_ns > s->start_ns ? (double)(s->end_ns - s->start_ns) / 1e9 : 0;
    times[sum->sessions++] = secs;
    time += secs;
    turns += s->turns;
    if (s->ok == s->turns) sum->completed++;
    if (s->tokens >= 0) tok += (double)s->tokens, n_tok++;
  }
  if (sum->sessions) {
    sum->turns_avg = turns / (double)sum->sessions;
    sum->time_s_avg = time / (double)sum->sessions;
    tp_stat st;
    tp_stat_compute(&st, times, sum->sessions);
    sum->time_s_p99 = st.p99;
  }
  sum->tokens_avg = avg_or(tok, n_tok);
out:
  free(a);
  free(times);
}

int tp_sessions_stats(const tp_record *recs, size_t n, tp_turn_stats **turns, size_t *n_turns,
                      tp_session_summary *sum) {
  *turns = NULL;
  *n_turns = 0;
  memset(sum, 0, sizeof(*sum));
  uint32_t max_turn = 0, max_session = 0;
  bool any = false;
  for (size_t i = 0; i < n; i++)
    if (recs[i].session && !recs[i].warmup) {
      any = true;
      max_turn = TP_MAX(max_turn, recs[i].turn);
      max_session = TP_MAX(max_session, recs[i].session);
    }
  if (!any) return 0;
  tp_turn_stats *ts = calloc((size_t)max_turn + 1, sizeof(*ts));
  if (!ts) return TP_ENOMEM;
  for (uint32_t t = 0; t <= max_turn; t++)
    if (turn_stats(recs, n, t, &ts[t])) {
      free(ts);
      return TP_ENOMEM;
    }
  session_summary(recs, n, max_session, sum);
  *turns = ts;
  *n_turns = (size_t)max_turn + 1;
  return 0;
}

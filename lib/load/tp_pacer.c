/* The pacer (tp_pacer.h). */
#include "tp_pacer.h"

#include <stdlib.h>
#include <string.h>

#include "util/tp_common.h"

/* A turn of a session under way, due after its think time. */
typedef struct turn {
  uint64_t due_ns;
  uint64_t session;
  uint32_t turn, turns;
} turn;

struct tp_pacer {
  tp_pacer_opts o;
  uint64_t t0;
  uint64_t seq;          /* requests released (or dropped) so far */
  uint64_t next_session; /* the next session to start */
  uint64_t stop_ns;      /* sessions due at or after this do not start; UINT64_MAX = none */
  bool closed_stopped;   /* closed loop: the clock has reached stop_ns */
  bool drop_turns;
  uint32_t in_flight;
  uint32_t active_sessions; /* closed loop: sessions holding a slot */
  /* Pending turns, a binary min-heap on (due_ns, session): ties go to the
   * older session, so release order never depends on heap layout. */
  turn *heap;
  size_t n_heap, cap_heap;
  /* Closed loop: slots held back after a request that never reached the
   * server (tp_pacer_done_hold), a min-heap on (due_ns, order held) whose
   * `turn` is the slot's failures in a row.  A held slot counts in
   * active_sessions until the session started in it takes it over. */
  turn *hold;
  size_t n_hold, cap_hold;
  uint64_t holds_made;
};

static bool turn_before(const turn *a, const turn *b) {
  return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->session < b->session);
}

/* A min-heap of turns in h[0..*n) (the pending turns, or the held slots). */
static int heap_push(turn **h, size_t *n, size_t *cap, turn t) {
  if (*n == *cap) {
    size_t c = *cap ? *cap * 2 : 16;
    turn *x = realloc(*h, c * sizeof(*x));
    if (!x) return TP_ENOMEM;
    *h = x;
    *cap = c;
  }
  turn *a = *h;
  size_t i = (*n)++;
  a[i] = t;
  while (i > 0) {
    size_t up = (i - 1) / 2;
    if (!turn_before(&a[i], &a[up])) break;
    turn x = a[i];
    a[i] = a[up];
    a[up] = x;
    i = up;
  }
  return 0;
}

static turn heap_pop(turn *a, size_t *n) {
  turn top = a[0];
  a[0] = a[--*n];
  for (size_t i = 0;;) {
    size_t l = 2 * i + 1, r = l + 1, m = i;
    if (l < *n && turn_before(&a[l], &a[m])) m = l;
    if (r < *n && turn_before(&a[r], &a[m])) m = r;
    if (m == i) break;
    turn x = a[i];
    a[i] = a[m];
    a[m] = x;
    i = m;
  }
  return top;
}

int tp_pacer_new(tp_pacer **out, const tp_pacer_opts *o) {
  *out = NULL;
  if (o->mode == TP_PACER_CLOSED && o->slots == 0) return TP_EINVAL;
  if (o->mode == TP_PACER_OPEN && (!o->offsets || o->n_offsets == 0) && o->total) return TP_EINVAL;
  if (o->mode != TP_PACER_CLOSED && o->mode != TP_PACER_OPEN) return TP_EINVAL;
  tp_pacer *p = calloc(1, sizeof(*p));
  if (!p) return TP_ENOMEM;
  p->o = *o;
  p->stop_ns = UINT64_MAX;
  *out = p;
  return 0;
}

void tp_pacer_free(tp_pacer *p) {
  if (!p) return;
  free(p->heap);
  free(p->hold);
  free(p);
}

void tp_pacer_start(tp_pacer *p, uint64_t t0_ns) { p->t0 = t0_ns; }

static uint32_t session_turns(const tp_pacer *p, uint64_t s) {
  if (!p->o.sessions.turns) return 1;
  uint32_t n = p->o.sessions.turns(p->o.sessions.ud, s);
  return n ? n : 1;
}

/* Whether another session may still start at some point. */
static bool sessions_left(const tp_pacer *p) {
  if (p->next_session >= p->o.total) return false;
  if (p->o.mode == TP_PACER_OPEN) {
    if (p->next_session >= p->o.n_offsets) return false;
    return p->t0 + p->o.offsets[p->next_session] < p->stop_ns;
  }
  return !p->closed_stopped;
}

/* When the next session is due: an open loop's offset; a closed loop's
 * "now" when a slot is free (UINT64_MAX when none may start). */
static uint64_t session_due(const tp_pacer *p, uint64_t now_ns) {
  if (!sessions_left(p)) return UINT64_MAX;
  if (p->o.mode == TP_PACER_OPEN) return p->t0 + p->o.offsets[p->next_session];
  if (p->active_sessions >= p->o.slots || now_ns >= p->stop_ns) return UINT64_MAX;
  return now_ns;
}

static bool capped(const tp_pacer *p) {
  return p->o.mode == TP_PACER_OPEN && p->o.slots && p->in_flight >= p->o.slots;
}

/* Held slots free at once when no session may start in them any more. */
static void drop_holds(tp_pacer *p) {
  p->active_sessions -= (uint32_t)TP_MIN(p->n_hold, p->active_sessions);
  p->n_hold = 0;
}

bool tp_pacer_next(tp_pacer *p, uint64_t now_ns, tp_pacer_item *it) {
  if (now_ns >= p->stop_ns) p->closed_stopped = true;
  if (capped(p)) return false;
  if (p->n_hold && !sessions_left(p)) drop_holds(p);
  uint64_t sd = session_due(p, now_ns);
  bool turn_ready = p->n_heap && p->heap[0].due_ns <= now_ns;
  bool session_ready = sd <= now_ns;
  bool hold_ready = p->n_hold && p->hold[0].due_ns <= now_ns;
  if (!turn_ready && !session_ready && !hold_ready) return false;
  it->backoff = 0;
  if (hold_ready && (!turn_ready || p->hold[0].due_ns <= p->heap[0].due_ns)) {
    /* A held slot's back-off is over: a new session starts in it (the
     * slot stays counted in active_sessions), planned for when the hold
     * ended, and carries the slot's failures in a row. */
    turn h = heap_pop(p->hold, &p->n_hold);
    it->session = p->next_session++;
    it->turn = 0;
    it->turns = session_turns(p, it->session);
    it->planned_ns = h.due_ns;
    it->backoff = h.turn;
  } else if (turn_ready && (!session_ready || p->heap[0].due_ns <= sd)) {
    /* First come, first served: the earlier due time leaves first; a turn
     * of a session under way goes before a new session due at the same
     * time. */
    turn t = heap_pop(p->heap, &p->n_heap);
    it->session = t.session;
    it->turn = t.turn;
    it->turns = t.turns;
    it->planned_ns = t.due_ns;
  } else {
    it->session = p->next_session++;
    it->turn = 0;
    it->turns = session_turns(p, it->session);
    it->planned_ns = sd;
    if (p->o.mode == TP_PACER_CLOSED) p->active_sessions++;
  }
  it->seq = p->seq++;
  p->in_flight++;
  return true;
}

uint64_t tp_pacer_next_due(const tp_pacer *p) {
  /* A full cap releases nothing until a completion. */
  if (capped(p)) return UINT64_MAX;
  uint64_t due = p->n_heap ? p->heap[0].due_ns : UINT64_MAX;
  /* A closed loop's next session waits on a free slot, never on time. */
  if (p->o.mode == TP_PACER_OPEN) due = TP_MIN(due, session_due(p, 0));
  /* A held slot is due when its back-off ends, or at the stop, where it
   * frees instead (the level must not wait out a back-off to end). */
  if (p->n_hold && sessions_left(p)) due = TP_MIN(due, TP_MIN(p->hold[0].due_ns, p->stop_ns));
  return due;
}

void tp_pacer_done(tp_pacer *p, const tp_pacer_item *it, uint64_t now_ns) {
  if (p->in_flight) p->in_flight--;
  bool more = it->turn + 1 < it->turns && !p->drop_turns;
  if (more) {
    uint64_t think = p->o.sessions.think_ns ? p->o.sessions.think_ns(p->o.sessions.ud, it->session, it->turn + 1) : 0;
    turn t = {now_ns + think, it->session, it->turn + 1, it->turns};
    if (heap_push(&p->heap, &p->n_heap, &p->cap_heap, t) == 0) return;
    /* Out of memory: the session ends here, its slot frees below. */
  }
  if (p->o.mode == TP_PACER_CLOSED && p->active_sessions) p->active_sessions--;
}

void tp_pacer_done_hold(tp_pacer *p, const tp_pacer_item *it, uint64_t now_ns, uint64_t hold_ns, uint32_t backoff) {
  bool last = it->turn + 1 >= it->turns || p->drop_turns;
  if (p->o.mode != TP_PACER_CLOSED || !hold_ns || !last || !sessions_left(p) || !p->active_sessions) {
    tp_pacer_done(p, it, now_ns);
    return;
  }
  if (p->in_flight) p->in_flight--;
  turn h = {now_ns + hold_ns, p->holds_made++, backoff, 0};
  /* Out of memory: the slot frees now, as without a back-off. */
  if (heap_push(&p->hold, &p->n_hold, &p->cap_hold, h)) p->active_sessions--;
}

void tp_pacer_stop_at(tp_pacer *p, uint64_t t_ns, uint64_t now_ns, bool drop_turns) {
  if (t_ns < p->stop_ns) p->stop_ns = t_ns;
  if (now_ns >= p->stop_ns) p->closed_stopped = true;
  if (p->n_hold && (drop_turns || !sessions_left(p))) drop_holds(p);
  if (drop_turns && !p->drop_turns) {
    p->drop_turns = true;
    /* Pending turns never leave; their sessions end (closed loop: the
     * slots free, though no new session starts after a stop). */
    if (p->o.mode == TP_PACER_CLOSED) p->active_sessions -= (uint32_t)TP_MIN(p->n_heap, p->active_sessions);
    p->n_heap = 0;
  }
}

size_t tp_pacer_drop_waiting(tp_pacer *p, uint64_t now_ns, tp_pacer_item *out, size_t cap) {
  size_t k = 0;
  while (k < cap) {
    if (p->n_heap && p->heap[0].due_ns <= now_ns) {
      turn t = heap_pop(p->heap, &p->n_heap);
      out[k] = (tp_pacer_item){p->seq++, t.session, t.turn, t.turns, t.due_ns, 0};
      if (p->o.mode == TP_PACER_CLOSED && p->active_sessions) p->active_sessions--;
      k++;
      continue;
    }
    /* An open loop's sessions already due (planned) that the cap held. */
    if (p->o.mode == TP_PACER_OPEN && sessions_left(p) && p->t0 + p->o.offsets[p->next_session] <= now_ns) {
      uint64_t s = p->next_session++;
      out[k] = (tp_pacer_item){p->seq++, s, 0, session_turns(p, s), p->t0 + p->o.offsets[s], 0};
      k++;
      continue;
    }
    break;
  }
  return k;
}

bool tp_pacer_finished(const tp_pacer *p) { return !sessions_left(p) && p->n_heap == 0; }

size_t tp_pacer_waiting(const tp_pacer *p, uint64_t now_ns) {
  size_t n = 0;
  for (size_t i = 0; i < p->n_heap; i++) n += p->heap[i].due_ns <= now_ns;
  if (p->o.mode == TP_PACER_OPEN) {
    uint64_t limit = TP_MIN(p->o.total, (uint64_t)p->o.n_offsets);
    for (uint64_t s = p->next_session; s < limit; s++) {
      uint64_t due = p->t0 + p->o.offsets[s];
      if (due > now_ns || due >= p->stop_ns) break;
      n++;
    }
  }
  return n;
}

uint32_t tp_pacer_in_flight(const tp_pacer *p) { return p->in_flight; }
uint32_t tp_pacer_held(const tp_pacer *p) { return (uint32_t)p->n_hold; }
uint64_t tp_pacer_sessions_started(const tp_pacer *p) { return p->next_session; }

/* The pacer on an injected clock: a small discrete-event simulation stands
 * in for the level and a server with fixed service times, and every release
 * is held against what the mode promises (exactly N in flight; offsets to
 * the nanosecond; a cap never passed and first come first served; stops;
 * interruptions; sessions with think times). */
#include <stdlib.h>
#include <string.h>

#include "load/tp_pacer.h"
#include "tp_test.h"
#include "util/tp_common.h"

#define MS 1000000ULL
#define MAXREQ 4096

typedef struct sim {
  tp_pacer *p;
  uint64_t now;
  uint64_t service_ns;      /* every request takes this long */
  tp_pacer_item flight[MAXREQ];
  uint64_t ends[MAXREQ];
  size_t n_flight;
  tp_pacer_item released[MAXREQ];
  uint64_t released_at[MAXREQ];
  size_t n_released;
  uint32_t max_in_flight;
  bool order_ok; /* seq runs 0, 1, 2, ... */
  uint64_t stop_when_released; /* stop_at(now) once this many went (0: never) */
} sim;

static void release(sim *s) {
  tp_pacer_item it;
  while (tp_pacer_next(s->p, s->now, &it)) {
    if (it.seq != s->n_released) s->order_ok = false;
    s->released[s->n_released] = it;
    s->released_at[s->n_released++] = s->now;
    s->flight[s->n_flight] = it;
    s->ends[s->n_flight++] = s->now + s->service_ns;
    if (s->n_flight > s->max_in_flight) s->max_in_flight = (uint32_t)s->n_flight;
    if (s->stop_when_released && s->n_released == s->stop_when_released) tp_pacer_stop_at(s->p, s->now, s->now, false);
  }
}

/* Runs to the end: the next event is the earliest completion or due time. */
static void run(sim *s, uint64_t t0) {
  s->now = t0;
  s->order_ok = true;
  tp_pacer_start(s->p, t0);
  release(s);
  for (int guard = 0; guard < 100000; guard++) {
    uint64_t next = tp_pacer_next_due(s->p);
    size_t first = SIZE_MAX;
    for (size_t i = 0; i < s->n_flight; i++)
      if (first == SIZE_MAX || s->ends[i] < s->ends[first]) first = i;
    if (first != SIZE_MAX && s->ends[first] <= next) {
      s->now = s->ends[first];
      tp_pacer_item it = s->flight[first];
      s->flight[first] = s->flight[--s->n_flight];
      s->ends[first] = s->ends[s->n_flight];
      tp_pacer_done(s->p, &it, s->now);
    } else if (next != UINT64_MAX) {
      if (next > s->now) s->now = next;
    } else {
      break;
    }
    release(s);
  }
}

static sim *sim_new(const tp_pacer_opts *o, uint64_t service_ns) {
  sim *s = calloc(1, sizeof(*s));
  s->service_ns = service_ns;
  if (tp_pacer_new(&s->p, o)) {
    free(s);
    return NULL;
  }
  return s;
}

static void sim_free(sim *s) {
  tp_pacer_free(s->p);
  free(s);
}

static uint32_t three_turns(void *ud, uint64_t session) { return 3; }
static uint64_t think_100ms(void *ud, uint64_t session, uint32_t turn) { return 100 * MS; }
static uint32_t varied_turns(void *ud, uint64_t session) { return (uint32_t)(session % 4) + 1; }

/* A closed loop's slot held back after a request that never reached the
 * server: nothing leaves in it until the hold ends, then the next request
 * carries the slot's failures in a row; a stop frees held slots at once
 * (the level does not wait out a back-off); an open loop keeps its
 * schedule. */
static void test_holds(void) {
  tp_pacer_opts o;
  memset(&o, 0, sizeof(o));
  o.mode = TP_PACER_CLOSED;
  o.slots = 2;
  o.total = UINT64_MAX;
  tp_pacer *p;
  tp_pacer_item a, b, c;
  CHECK(tp_pacer_new(&p, &o) == 0, "holds: a closed loop of 2 slots");
  tp_pacer_start(p, 0);
  CHECK(tp_pacer_next(p, 0, &a) && tp_pacer_next(p, 0, &b) && !tp_pacer_next(p, 0, &c),
        "holds: both slots released at the start");
  CHECK_INT(a.backoff, 0, "holds: a first request has no failures behind it");
  tp_pacer_done_hold(p, &a, 5 * MS, 10 * MS, 1);
  CHECK(!tp_pacer_next(p, 5 * MS, &c), "holds: nothing leaves in a held slot");
  CHECK_INT(tp_pacer_held(p), 1, "holds: one slot held");
  CHECK_INT(tp_pacer_next_due(p), 15 * MS, "holds: the timer is armed for the hold's end");
  CHECK(!tp_pacer_next(p, 15 * MS - 1, &c), "holds: not a nanosecond early");
  CHECK(tp_pacer_next(p, 15 * MS, &c), "holds: the slot's next request leaves when the hold ends");
  CHECK_INT(c.backoff, 1, "holds: it carries the slot's failures in a row");
  CHECK_INT(c.planned_ns, 15 * MS, "holds: planned for the hold's end");
  CHECK(!tp_pacer_next(p, 15 * MS, &a), "holds: still two in flight at most");
  /* An answer frees the slot at once, as before. */
  tp_pacer_done(p, &b, 20 * MS);
  CHECK(tp_pacer_next(p, 20 * MS, &b) && b.backoff == 0, "holds: a plain end refills at once, no back-off");
  /* Both slots held, then a stop before either hold ends. */
  tp_pacer_done_hold(p, &c, 30 * MS, 1000 * MS, 2);
  tp_pacer_done_hold(p, &b, 31 * MS, 1000 * MS, 1);
  CHECK_INT(tp_pacer_held(p), 2, "holds: both slots held");
  tp_pacer_stop_at(p, 100 * MS, 40 * MS, false);
  CHECK(!tp_pacer_finished(p), "holds: not finished before the stop");
  CHECK_INT(tp_pacer_next_due(p), 100 * MS, "holds: the stop comes before the holds end: the timer is armed for it");
  CHECK(!tp_pacer_next(p, 100 * MS, &a), "holds: nothing leaves at the stop");
  CHECK(tp_pacer_finished(p) && tp_pacer_held(p) == 0 && tp_pacer_next_due(p) == UINT64_MAX,
        "holds: the stop frees the held slots and the pacer is finished");
  tp_pacer_free(p);

  /* A count: once every request is released, a hold keeps nothing back. */
  o.total = 3;
  tp_pacer_new(&p, &o);
  tp_pacer_start(p, 0);
  tp_pacer_next(p, 0, &a);
  tp_pacer_next(p, 0, &b);
  tp_pacer_done_hold(p, &a, 1 * MS, 10 * MS, 1);
  CHECK(tp_pacer_next(p, 11 * MS, &a) && a.backoff == 1 && a.session == 2,
        "holds, count: the last request leaves after its hold");
  tp_pacer_done_hold(p, &a, 12 * MS, 20 * MS, 2);
  tp_pacer_done(p, &b, 12 * MS);
  CHECK(tp_pacer_finished(p) && tp_pacer_held(p) == 0, "holds, count: nothing left to send: no slot is held");
  tp_pacer_free(p);

  /* Interruption (stop with drop_turns): held slots go. */
  o.total = UINT64_MAX;
  tp_pacer_new(&p, &o);
  tp_pacer_start(p, 0);
  tp_pacer_next(p, 0, &a);
  tp_pacer_done_hold(p, &a, 1 * MS, 500 * MS, 1);
  tp_pacer_stop_at(p, 2 * MS, 2 * MS, true);
  CHECK(tp_pacer_held(p) == 0 && tp_pacer_finished(p), "holds: an interruption frees held slots");
  tp_pacer_free(p);

  /* Open loop: the schedule is kept, a hold frees the cap's slot at once. */
  static const uint64_t offs[] = {0, 1 * MS, 2 * MS};
  memset(&o, 0, sizeof(o));
  o.mode = TP_PACER_OPEN;
  o.slots = 1;
  o.offsets = offs;
  o.n_offsets = 3;
  o.total = 3;
  tp_pacer_new(&p, &o);
  tp_pacer_start(p, 0);
  tp_pacer_next(p, 0, &a);
  tp_pacer_done_hold(p, &a, 1 * MS, 500 * MS, 1);
  CHECK(tp_pacer_held(p) == 0 && tp_pacer_next(p, 1 * MS, &b) && b.planned_ns == 1 * MS,
        "holds: an open loop keeps its schedule");
  tp_pacer_free(p);
}

int main(void) {
  tp_pacer *bad;
  tp_pacer_opts o;

  memset(&o, 0, sizeof(o));
  o.mode = TP_PACER_CLOSED;
  CHECK(tp_pacer_new(&bad, &o) == TP_EINVAL, "a closed loop without slots is refused");
  o.mode = TP_PACER_OPEN;
  o.total = 5;
  CHECK(tp_pacer_new(&bad, &o) == TP_EINVAL, "an open loop without offsets is refused");

  /* Closed loop: exactly N in flight, a new request the moment one ends. */
  memset(&o, 0, sizeof(o));
  o.mode = TP_PACER_CLOSED;
  o.slots = 8;
  o.total = 100;
  sim *s = sim_new(&o, 10 * MS);
  run(s, 1000 * MS);
  CHECK_INT(s->n_released, 100, "closed: every request released");
  CHECK_INT(s->max_in_flight, 8, "closed: never more than the slots in flight");
  CHECK(s->order_ok, "closed: seq runs 0, 1, 2, ...");
  bool planned_now = true;
  for (size_t i = 0; i < s->n_released; i++) planned_now &= s->released[i].planned_ns == s->released_at[i];
  CHECK(planned_now, "closed: a request is planned when its slot frees and leaves at once");
  CHECK_INT(s->released_at[8], 1010 * MS, "closed: the ninth leaves when the first ends");
  CHECK(tp_pacer_finished(s->p) && tp_pacer_in_flight(s->p) == 0, "closed: finished, nothing in flight");
  sim_free(s);

  /* Open loop without a cap: each request leaves exactly at its offset. */
  uint64_t offs[64];
  for (int i = 0; i < 64; i++) offs[i] = (uint64_t)i * 7 * MS + (uint64_t)(i % 3) * 1000;
  memset(&o, 0, sizeof(o));
  o.mode = TP_PACER_OPEN;
  o.offsets = offs;
  o.n_offsets = 64;
  o.total = 50;
  s = sim_new(&o, 30 * MS);
  run(s, 5 * MS);
  CHECK_INT(s->n_released, 50, "open: total bounds the releases below the offsets");
  bool exact = true;
  for (size_t i = 0; i < s->n_released; i++)
    exact &= s->released_at[i] == 5 * MS + offs[i] && s->released[i].planned_ns == 5 * MS + offs[i];
  CHECK(exact, "open: each leaves at t0 + its offset, to the nanosecond");
  CHECK(s->max_in_flight >= 4, "open: without a cap, requests overlap freely (%u)", s->max_in_flight);
  sim_free(s);

  /* Open loop with a cap: never more than the cap, first come first
   * served, and the planned time kept so the wait is send lag. */
  memset(&o, 0, sizeof(o));
  o.mode = TP_PACER_OPEN;
  o.offsets = offs;
  o.n_offsets = 64;
  o.total = UINT64_MAX;
  o.slots = 2;
  s = sim_new(&o, 30 * MS);
  run(s, 0);
  CHECK_INT(s->n_released, 64, "capped: every offset released in the end");
  CHECK_INT(s->max_in_flight, 2, "capped: never more than the cap in flight");
  bool fifo = true, lag = false;
  for (size_t i = 0; i < s->n_released; i++) {
    fifo &= s->released[i].planned_ns == offs[i] && s->released_at[i] >= s->released[i].planned_ns;
    lag |= s->released_at[i] > s->released[i].planned_ns;
  }
  CHECK(fifo, "capped: released in planned order, never early");
  CHECK(lag, "capped: the waits show as send lag");
  sim_free(s);

  /* next_due: the next offset, or UINT64_MAX while the cap is full. */
  memset(&o, 0, sizeof(o));
  o.mode = TP_PACER_OPEN;
  o.offsets = offs;
  o.n_offsets = 3;
  o.total = UINT64_MAX;
  o.slots = 1;
  tp_pacer *p;
  tp_pacer_new(&p, &o);
  tp_pacer_start(p, 100);
  CHECK_INT(tp_pacer_next_due(p), 100, "next_due: the first offset");
  tp_pacer_item it, it2;
  CHECK(tp_pacer_next(p, 100, &it), "the first is due at t0");
  CHECK_INT(tp_pacer_next_due(p), UINT64_MAX, "next_due: nothing while the cap is full");
  CHECK(!tp_pacer_next(p, 100 + 20 * MS, &it2), "a due request waits for the cap");
  CHECK_INT(tp_pacer_waiting(p, 100 + 20 * MS), 2, "waiting: the two due behind the cap");
  tp_pacer_done(p, &it, 100 + 20 * MS);
  CHECK(tp_pacer_next(p, 100 + 20 * MS, &it2) && it2.planned_ns == 100 + offs[1], "a completion releases the next");
  tp_pacer_free(p);

  /* stop_at: sessions due later never start; earlier ones still go. */
  memset(&o, 0, sizeof(o));
  o.mode = TP_PACER_OPEN;
  o.offsets = offs;
  o.n_offsets = 64;
  o.total = UINT64_MAX;
  o.slots = 1;
  tp_pacer_new(&p, &o);
  tp_pacer_start(p, 0);
  tp_pacer_next(p, 0, &it);
  tp_pacer_stop_at(p, 15 * MS, 14 * MS, false); /* offsets 0, 7 and 14 ms were planned before */
  CHECK(!tp_pacer_finished(p), "stopped: the requests planned before the end still go");
  uint64_t t = 40 * MS;
  tp_pacer_done(p, &it, t);
  int more = 0;
  while (tp_pacer_next(p, t, &it)) {
    more++;
    tp_pacer_done(p, &it, t);
  }
  CHECK_INT(more, 2, "stopped: the two due before the end leave, none after");
  CHECK(tp_pacer_finished(p), "stopped: then finished");
  tp_pacer_free(p);

  /* A closed loop's end in the future: it goes on until the clock gets there. */
  memset(&o, 0, sizeof(o));
  o.mode = TP_PACER_CLOSED;
  o.slots = 2;
  o.total = UINT64_MAX;
  s = sim_new(&o, 10 * MS);
  tp_pacer_stop_at(s->p, 95 * MS, 0, false);
  run(s, 0);
  CHECK_INT(s->n_released, 20, "closed with an end: requests keep leaving until it (2 slots, 10 ms each, 95 ms)");
  CHECK(tp_pacer_finished(s->p), "closed with an end: finished after it");
  sim_free(s);

  /* Interruption: waiting requests are taken out as never sent. */
  memset(&o, 0, sizeof(o));
  o.mode = TP_PACER_OPEN;
  o.offsets = offs;
  o.n_offsets = 64;
  o.total = UINT64_MAX;
  o.slots = 1;
  tp_pacer_new(&p, &o);
  tp_pacer_start(p, 0);
  tp_pacer_next(p, 0, &it);
  t = 30 * MS; /* offsets 7, 14, 21 (+1000, +2000 ns) and 28 ms are due */
  tp_pacer_stop_at(p, t, t, true);
  tp_pacer_item dropped[3];
  size_t nd = tp_pacer_drop_waiting(p, t, dropped, 3), nd2 = tp_pacer_drop_waiting(p, t, dropped, 3);
  CHECK(nd == 3 && nd2 == 1, "interrupted: the four due requests are taken out, three at a time");
  CHECK(dropped[0].seq == 4 && dropped[0].planned_ns == offs[4], "interrupted: they keep seq and planned time");
  CHECK(tp_pacer_finished(p) && tp_pacer_in_flight(p) == 1, "interrupted: finished but for the one in flight");
  tp_pacer_free(p);

  /* A single-turn level's interruption looks back to the pump's last look:
   * the requests due then and held by the cap are taken out as never sent;
   * those that fell due since were never planned and stay out of it. */
  memset(&o, 0, sizeof(o));
  o.mode = TP_PACER_OPEN;
  o.offsets = offs;
  o.n_offsets = 64;
  o.total = UINT64_MAX;
  o.slots = 1;
  tp_pacer_new(&p, &o);
  tp_pacer_start(p, 0);
  tp_pacer_next(p, 0, &it);
  CHECK(!tp_pacer_next(p, 15 * MS, &it2), "looked at 15 ms: the cap holds the ones due at 7 and 14 ms");
  nd = tp_pacer_drop_waiting(p, 15 * MS, dropped, 3);
  CHECK(nd == 2 && dropped[0].planned_ns == offs[1] && dropped[1].planned_ns == offs[2],
        "interrupted at 30 ms: the two due by the last look are taken out, with their planned times");
  tp_pacer_stop_at(p, 0, 30 * MS, true);
  CHECK(tp_pacer_finished(p) && tp_pacer_next_due(p) == UINT64_MAX && !tp_pacer_next(p, 30 * MS, &it2),
        "interrupted: nothing more leaves, the ones due since included");
  tp_pacer_free(p);

  /* A stop rule's end just after the pump's last look: what the cap held
   * then still leaves as slots free; what fell due since never does. */
  tp_pacer_new(&p, &o);
  tp_pacer_start(p, 0);
  tp_pacer_next(p, 0, &it);
  CHECK(!tp_pacer_next(p, 15 * MS, &it2), "looked at 15 ms behind the cap");
  tp_pacer_stop_at(p, 15 * MS + 1, 30 * MS, false);
  CHECK(!tp_pacer_finished(p), "stopped: the held ones are still to leave");
  uint64_t left[4];
  int n_left = 0;
  for (t = 40 * MS; n_left < 4; t += 10 * MS) {
    tp_pacer_done(p, &it, t);
    if (!tp_pacer_next(p, t, &it)) break;
    left[n_left++] = it.planned_ns;
  }
  CHECK(n_left == 2 && left[0] == offs[1] && left[1] == offs[2], "stopped: the two held leave in order, none after");
  CHECK(tp_pacer_finished(p) && tp_pacer_waiting(p, t) == 0, "stopped: then finished with none waiting");
  tp_pacer_free(p);

  /* Sessions in a closed loop: N sessions at once, each turn a think time
   * after the last ended. */
  memset(&o, 0, sizeof(o));
  o.mode = TP_PACER_CLOSED;
  o.slots = 4;
  o.total = 10;
  o.sessions = (tp_pacer_sessions){three_turns, think_100ms, NULL};
  s = sim_new(&o, 10 * MS);
  run(s, 0);
  CHECK_INT(s->n_released, 30, "sessions: 10 sessions of 3 turns");
  CHECK_INT(tp_pacer_sessions_started(s->p), 10, "sessions: all started");
  CHECK(s->max_in_flight <= 4, "sessions: at most 4 requests in flight (one per session)");
  bool think_ok = true, turns_ok = true;
  for (size_t i = 0; i < s->n_released; i++) {
    const tp_pacer_item *r = &s->released[i];
    if (r->turn == 0) continue;
    /* The previous turn of the same session ended 10 ms after it left. */
    bool found = false;
    for (size_t j = 0; j < i; j++) {
      const tp_pacer_item *q = &s->released[j];
      if (q->session == r->session && q->turn + 1 == r->turn) {
        found = true;
        think_ok &= r->planned_ns == s->released_at[j] + 10 * MS + 100 * MS && s->released_at[i] == r->planned_ns;
      }
    }
    turns_ok &= found && r->turns == 3;
  }
  CHECK(turns_ok, "sessions: every turn follows its session's previous turn");
  CHECK(think_ok, "sessions: the think time passes between a turn's end and the next turn");
  CHECK(s->released[4].session == 0 && s->released[4].turn == 1, "sessions: a new session waits for a slot");
  sim_free(s);

  /* Sessions in an open loop: sessions start on the schedule, turns follow
   * completions; a session of one turn is a plain request. */
  memset(&o, 0, sizeof(o));
  o.mode = TP_PACER_OPEN;
  o.offsets = offs;
  o.n_offsets = 12;
  o.total = UINT64_MAX;
  o.sessions = (tp_pacer_sessions){varied_turns, NULL, NULL};
  s = sim_new(&o, 5 * MS);
  run(s, 0);
  size_t want = 0;
  for (int i = 0; i < 12; i++) want += (size_t)(i % 4) + 1;
  CHECK_INT(s->n_released, want, "open sessions: every turn of every session");
  bool starts_on_schedule = true;
  for (size_t i = 0; i < s->n_released; i++)
    if (s->released[i].turn == 0) starts_on_schedule &= s->released_at[i] == offs[s->released[i].session];
  CHECK(starts_on_schedule, "open sessions: each session starts at its offset");
  CHECK(s->order_ok && tp_pacer_finished(s->p), "open sessions: seq in order, finished");
  sim_free(s);

  /* Interrupting sessions drops their pending turns. */
  memset(&o, 0, sizeof(o));
  o.mode = TP_PACER_CLOSED;
  o.slots = 2;
  o.total = UINT64_MAX;
  o.sessions = (tp_pacer_sessions){three_turns, think_100ms, NULL};
  s = sim_new(&o, 10 * MS);
  s->stop_when_released = 3;
  tp_pacer_start(s->p, 0);
  run(s, 0);
  CHECK_INT(s->n_released, 6, "stopped sessions: sessions under way finish their turns, none starts");
  sim_free(s);
  tp_pacer_new(&p, &o);
  tp_pacer_start(p, 0);
  tp_pacer_next(p, 0, &it);
  tp_pacer_done(p, &it, 10 * MS);
  tp_pacer_stop_at(p, 20 * MS, 20 * MS, true);
  CHECK(tp_pacer_finished(p) && tp_pacer_next_due(p) == UINT64_MAX, "interrupted sessions: pending turns dropped");
  tp_pacer_free(p);
  test_holds();
  return tp_test_done();
}

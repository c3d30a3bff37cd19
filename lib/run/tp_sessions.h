/* Multi-turn sessions in a level (docs/sessions.md): which turn of which
 * session leaves when (the pacer, lib/load/tp_pacer.h), and what each turn
 * sends, the whole history so far.
 *
 * The run owns the requests; this module owns the sessions: the pacer that
 * releases turns (a closed loop counts sessions in flight, an open loop
 * starts sessions on the schedule, a turn is due its think time after the
 * previous one ended) and the history of every session under way, which
 * grows by each turn's user text and its answer (the model's actual one,
 * or the file's fixed "assistant" text).  No I/O and no clock: the run
 * passes the time. */
#ifndef TP_SESSIONS_H
#define TP_SESSIONS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dataset/tp_dataset.h"
#include "load/tp_pacer.h"
#include "util/tp_common.h"

typedef struct tp_sessions tp_sessions;

typedef struct tp_sessions_opts {
  const tp_dataset *ds; /* a conversations file (ds->n_sessions > 0), borrowed */
  tp_pacer_mode mode;
  uint32_t slots;           /* closed loop: sessions in flight; open loop: cap on requests (0 = none) */
  const uint64_t *offsets;  /* open loop: session starts (borrowed) */
  size_t n_offsets;
  uint64_t total;           /* sessions to run (UINT64_MAX = until stopped) */
} tp_sessions_opts;

/* One turn to send. */
typedef struct tp_sessions_turn {
  tp_pacer_item it;
  size_t session_index; /* into ds->sessions */
  size_t prompt_index;  /* the turn's prompt in ds->items */
} tp_sessions_turn;

int tp_sessions_new(tp_sessions **out, const tp_sessions_opts *o);
void tp_sessions_free(tp_sessions *s);
void tp_sessions_start(tp_sessions *s, uint64_t t0_ns);
/* The next turn that may leave now (see tp_pacer_next). */
bool tp_sessions_next(tp_sessions *s, uint64_t now_ns, tp_sessions_turn *t);
uint64_t tp_sessions_next_due(const tp_sessions *s);

/* What turn t sends: the history joined as text ("\n" between pieces:
 * user text, answer, user text, ...), and when chat is set the same as a
 * JSON array of chat messages (user and assistant roles).  The buffers are
 * reset first.  Returns 0 or TP_ENOMEM. */
int tp_sessions_build(tp_sessions *s, const tp_sessions_turn *t, bool chat, tp_buf *text, tp_buf *messages);

/* Turn t ended at now_ns with this answer (the model's; the file's fixed
 * one replaces it in the history when given).  The history grows, and the
 * session's next turn becomes due after its think time; a failed turn
 * (ok false) ends its session, as a user would not go on. */
bool tp_sessions_done(tp_sessions *s, const tp_sessions_turn *t, bool ok, const char *answer, size_t len,
                      uint64_t now_ns);

/* As tp_sessions_done, for a turn that failed to reach the server: a
 * closed loop's slot is held hold_ns before the next session starts in it
 * (tp_pacer_done_hold). */
bool tp_sessions_done_hold(tp_sessions *s, const tp_sessions_turn *t, bool ok, const char *answer, size_t len,
                           uint64_t now_ns, uint64_t hold_ns, uint32_t backoff);

void tp_sessions_stop_at(tp_sessions *s, uint64_t t_ns, uint64_t now_ns, bool drop_turns);
/* Drops what waits for the cap (an interruption); returns how many. */
size_t tp_sessions_drop_waiting(tp_sessions *s, uint64_t now_ns);
bool tp_sessions_finished(const tp_sessions *s);

/* The per-turn table and session summary of a level's records (the
 * measured ones: warm-up left out).  *turns is owned (free()); returns 0
 * or TP_ENOMEM. */
#include "record/tp_record.h"
#include "tokperf/tokperf.h"
int tp_sessions_stats(const tp_record *recs, size_t n, tp_turn_stats **turns, size_t *n_turns,
                      tp_session_summary *sum);

#endif

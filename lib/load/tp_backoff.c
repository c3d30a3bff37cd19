/* Backing off a server that stopped answering (tp_backoff.h). */
#include "tp_backoff.h"

#include <string.h>

uint64_t tp_backoff_delay_ns(uint32_t k) {
  uint64_t d = TP_BACKOFF_FIRST_NS;
  for (uint32_t i = 1; i < k && d < TP_BACKOFF_MAX_NS; i++) d *= 2;
  return d < TP_BACKOFF_MAX_NS ? d : TP_BACKOFF_MAX_NS;
}

void tp_backoff_init(tp_backoff *b, uint64_t limit) {
  memset(b, 0, sizeof(*b));
  b->limit = limit;
}

/* One more request the server did not take, ending at now_ns. */
static bool count(tp_backoff *b, uint64_t now_ns) {
  if (b->streak++ == 0) {
    b->run_start_ns = now_ns;
    b->runs++;
  }
  if (b->streak > b->away_n) {
    if (!b->longest_open) {
      b->away_ns = b->run_start_ns;
      b->back_ns = 0;
      b->longest_open = true;
    }
    b->away_n = b->streak;
  }
  if (b->limit && b->streak >= b->limit) b->limit_hit = true;
  return b->limit_hit;
}

bool tp_backoff_failed(tp_backoff *b, uint64_t sent_ns, uint64_t now_ns) {
  /* A request that left after the last step began (or before any) is the
   * probe, or the first news: the step doubles.  One sent earlier (in
   * flight when the server went) only counts. */
  if (b->step == 0 || sent_ns >= b->since_ns) {
    if (b->step < UINT32_MAX) b->step++;
    b->since_ns = now_ns;
    b->until_ns = now_ns + tp_backoff_delay_ns(b->step);
    b->probe_out = false;
  }
  return count(b, now_ns);
}

bool tp_backoff_not_sent(tp_backoff *b, uint64_t now_ns) {
  return count(b, now_ns);
}

void tp_backoff_answered(tp_backoff *b, uint64_t sent_ns, uint64_t answer_ns) {
  if (b->probe_out && sent_ns >= b->since_ns) b->probe_out = false;
  if (b->streak == 0 || answer_ns <= b->run_start_ns) return;
  /* The server is back: the run and the back-off are over. */
  if (b->longest_open) b->back_ns = answer_ns;
  b->longest_open = false;
  b->streak = 0;
  b->step = 0;
  b->probe_out = false;
}

void tp_backoff_other(tp_backoff *b, uint64_t sent_ns) {
  if (b->probe_out && sent_ns >= b->since_ns) b->probe_out = false;
}

bool tp_backoff_may_send(tp_backoff *b, uint64_t now_ns) {
  if (b->limit_hit) return false;
  if (b->step == 0) return true;
  if (b->probe_out || now_ns < b->until_ns) return false;
  b->probe_out = true;
  return true;
}

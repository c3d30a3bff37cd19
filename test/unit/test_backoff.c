/* The back-off on a server that stopped answering, on an injected clock:
 * the steps, the open loop's gate (one probe at a time, after each step),
 * the count of requests in a row and its limit, and the longest run with
 * the answer that ended it. */
#include <string.h>

#include "load/tp_backoff.h"
#include "tp_test.h"

#define MS 1000000ULL

int main(void) {
  CHECK_INT(tp_backoff_delay_ns(1), 10 * MS, "delay: 10 ms after the first failure");
  CHECK_INT(tp_backoff_delay_ns(2), 20 * MS, "delay: doubled after the second");
  CHECK_INT(tp_backoff_delay_ns(7), 640 * MS, "delay: 640 ms after the seventh");
  CHECK_INT(tp_backoff_delay_ns(8), 1000 * MS, "delay: at most 1 s");
  CHECK_INT(tp_backoff_delay_ns(4000000000u), 1000 * MS, "delay: no overflow for any count");
  uint64_t sum = 0;
  for (uint32_t k = 1; k <= 7; k++) sum += tp_backoff_delay_ns(k);
  CHECK_INT(sum, 1270 * MS, "delay: the first seven steps take 1.27 s together");

  /* Open loop: a server gone at 100 ms with 3 requests in flight. */
  tp_backoff b;
  tp_backoff_init(&b, 0);
  CHECK(tp_backoff_may_send(&b, 0), "gate: open while the server answers");
  tp_backoff_answered(&b, 0, 5 * MS);
  CHECK(!tp_backoff_failed(&b, 90 * MS, 100 * MS), "failed: no limit, never ends the level");
  CHECK(!tp_backoff_failed(&b, 95 * MS, 100 * MS + 1), "failed: a second one in flight");
  CHECK(!tp_backoff_failed(&b, 96 * MS, 100 * MS + 2), "failed: a third one in flight");
  CHECK_INT(b.step, 1, "in flight when the server went: one step, not three");
  CHECK_INT(b.until_ns, 110 * MS, "the first step ends 10 ms after the first failure");
  CHECK(!tp_backoff_may_send(&b, 105 * MS), "gate: closed during the step");
  CHECK(!tp_backoff_not_sent(&b, 105 * MS), "not sent: counted");
  CHECK(tp_backoff_may_send(&b, 110 * MS), "gate: the first request due after the step is the probe");
  CHECK(!tp_backoff_may_send(&b, 111 * MS), "gate: one probe at a time");
  tp_backoff_not_sent(&b, 111 * MS);
  tp_backoff_failed(&b, 110 * MS, 112 * MS);
  CHECK_INT(b.step, 2, "a failed probe doubles the step");
  CHECK_INT(b.until_ns, 132 * MS, "the second step: 20 ms");
  CHECK(tp_backoff_may_send(&b, 140 * MS), "gate: the next probe");
  tp_backoff_other(&b, 140 * MS);
  CHECK(tp_backoff_may_send(&b, 141 * MS), "gate: a probe that was cancelled lets another go");
  CHECK_INT(b.streak, 6, "the run: 4 failed and 2 not sent, in a row");
  /* An answer to a request sent before the outage, that began before it,
   * ends nothing. */
  tp_backoff_answered(&b, 50 * MS, 60 * MS);
  CHECK_INT(b.streak, 6, "an answer that began before the run ends nothing");
  tp_backoff_answered(&b, 141 * MS, 150 * MS);
  CHECK(b.streak == 0 && b.step == 0 && tp_backoff_may_send(&b, 151 * MS),
        "the server answered: the back-off is over");
  CHECK(b.runs == 1 && b.away_ns == 100 * MS && b.back_ns == 150 * MS && b.away_n == 6,
        "the run: away at 100 ms, back at 150 ms, 6 requests");

  /* A shorter second run does not replace the longest; a longer one does. */
  tp_backoff_failed(&b, 200 * MS, 201 * MS);
  tp_backoff_answered(&b, 202 * MS, 230 * MS);
  CHECK(b.runs == 2 && b.away_ns == 100 * MS && b.back_ns == 150 * MS, "a shorter run leaves the longest");
  for (int i = 0; i < 7; i++) tp_backoff_failed(&b, 300 * MS + (uint64_t)i, 301 * MS + (uint64_t)i);
  CHECK(b.runs == 3 && b.away_ns == 301 * MS && b.away_n == 7 && b.back_ns == 0,
        "a longer run is the longest, not back yet");

  /* The limit: the level ends at the N-th in a row, and nothing leaves. */
  tp_backoff_init(&b, 3);
  CHECK(!tp_backoff_failed(&b, 0, 1 * MS) && !tp_backoff_not_sent(&b, 2 * MS), "limit 3: two in a row go on");
  tp_backoff_answered(&b, 0, 3 * MS);
  CHECK(!tp_backoff_failed(&b, 4 * MS, 5 * MS) && !tp_backoff_failed(&b, 4 * MS, 5 * MS),
        "limit 3: an answer between starts the count again");
  CHECK(tp_backoff_failed(&b, 5 * MS, 6 * MS) && b.limit_hit, "limit 3: the third in a row ends the level");
  CHECK(!tp_backoff_may_send(&b, 2000 * MS), "limit: nothing leaves once it is reached");
  return tp_test_done();
}

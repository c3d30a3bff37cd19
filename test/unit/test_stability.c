/* The stability rule: max/min of the last three windows within 1 + P, for
 * throughput and for latency, on cases where a rule against the mean would
 * decide otherwise. */
#include "metrics/tp_stability.h"
#include "tp_test.h"

int main(void) {
  const double flat[] = {100, 100, 100}, lat[] = {50, 50, 50};
  CHECK(tp_windows_stable(flat, lat, 3, 10), "three equal windows are stable");
  CHECK(!tp_windows_stable(flat, lat, 2, 10), "two windows are not enough");

  /* 90, 100, 110: each within 10% of the mean (100), but 110/90 = 1.22. */
  const double spread[] = {90, 100, 110};
  CHECK(!tp_windows_stable(spread, lat, 3, 10), "90/100/110 at 10%%: max/min 1.22 is not stable");
  CHECK(tp_windows_stable(spread, lat, 3, 25), "but is at 25%% (1.22 <= 1.25)");
  CHECK(!tp_windows_stable(flat, spread, 3, 10), "the same rule holds for latency");

  /* The boundary itself: max/min exactly 1 + P is stable. */
  const double edge[] = {100, 110, 105};
  CHECK(tp_windows_stable(edge, lat, 3, 10), "max/min exactly 1.10 at 10%% is stable");
  const double over[] = {100, 110.01, 105};
  CHECK(!tp_windows_stable(over, lat, 3, 10), "just above 1.10 is not");

  /* Only the last three windows count. */
  const double warm[] = {10, 500, 100, 101, 102}, warm_lat[] = {900, 1, 50, 50, 51};
  CHECK(tp_windows_stable(warm, warm_lat, 5, 5), "earlier windows do not count");
  CHECK(!tp_windows_stable(warm, warm_lat, 4, 5), "the three before the last do");

  /* A window in which nothing finished never agrees. */
  const double zero[] = {0, 0, 0};
  CHECK(!tp_windows_stable(zero, lat, 3, 10), "zero throughput is not stable");
  CHECK(!tp_windows_stable(flat, zero, 3, 10), "zero latency is not stable");
  return tp_test_done();
}

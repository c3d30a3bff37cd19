/* util/tp_u64map against a plain array that knows every key's value, over
 * a long random sequence of puts and deletes (keys drawn from a small range,
 * so they collide, come back and wrap around the table). */
#include <stdlib.h>
#include <string.h>

#include "tp_test.h"
#include "util/tp_common.h"
#include "util/tp_u64map.h"

#define RANGE 3000

int main(void) {
  tp_u64map m;
  tp_u64map_init(&m);
  uint64_t v = 0;
  CHECK(!tp_u64map_get(&m, 5, &v), "an empty map holds nothing");
  CHECK(!tp_u64map_del(&m, 5, NULL), "deleting from an empty map");
  CHECK_INT(tp_u64map_put(&m, 0, 1), TP_EINVAL, "key 0 is refused");
  static uint64_t truth[RANGE + 1];
  static bool there[RANGE + 1];
  uint64_t rng = 12345;
  size_t wrong = 0, n = 0;
  for (int step = 0; step < 200000; step++) {
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    uint64_t key = 1 + (rng >> 33) % RANGE;
    /* More deletes than puts once half the keys are in: the map fills and empties. */
    if ((rng >> 20) % 100 < (n > RANGE / 2 ? 55 : 40)) {
      bool had = tp_u64map_del(&m, key, &v);
      if (had != there[key] || (had && v != truth[key])) wrong++;
      if (there[key]) n--;
      there[key] = false;
    } else {
      uint64_t val = rng ^ key;
      if (tp_u64map_put(&m, key, val)) wrong++;
      if (!there[key]) n++;
      there[key] = true;
      truth[key] = val;
    }
    if (step % 997 == 0)
      for (uint64_t k = 1; k <= RANGE; k++) {
        bool got = tp_u64map_get(&m, k, &v);
        if (got != there[k] || (got && v != truth[k])) wrong++;
      }
  }
  CHECK_INT(wrong, 0, "200,000 random puts and deletes agree with a plain array at every check");
  CHECK_INT(m.n, n, "the count of keys agrees");
  CHECK(m.cap >= 16 && (m.cap & (m.cap - 1)) == 0 && m.n * 4 <= m.cap * 3, "the table is a power of two, at most 3/4 full");
  /* Large keys (pointers, serials) hash as well as small ones. */
  CHECK_INT(tp_u64map_put(&m, UINT64_MAX, 7), 0, "the largest key");
  CHECK(tp_u64map_get(&m, UINT64_MAX, &v) && v == 7, "is found");
  tp_u64map_fini(&m);
  return tp_test_done();
}

/* Capacity search on synthetic servers whose true capacity is known: the
 * boundary lies within the precision of it, for many capacities, in rate
 * (continuous) and concurrency (whole) mode; the range's ends, the probe
 * limit and a noisy pass above a failure are handled. */
#include <math.h>
#include <string.h>

#include "run/tp_search.h"
#include "tp_test.h"

static unsigned run(tp_search *s, double capacity) {
  double v;
  unsigned n = 0;
  while (tp_search_next(s, &v)) {
    tp_search_record(s, v, v <= capacity);
    n++;
  }
  return n;
}

int main(void) {
  tp_search s;
  tp_search_opts o = {.start = 1, .min = 0.1, .max = 100000, .growth = 2, .rel_precision = 0.05, .max_probes = 40};
  tp_search_opts bad = o;
  bad.growth = 1;
  CHECK(tp_search_init(&s, &bad) != 0, "growth 1 is refused");
  bad = o;
  bad.rel_precision = 0;
  CHECK(tp_search_init(&s, &bad) != 0, "no precision is refused");

  /* Rates: 200 capacities spread over six decades. */
  bool all_found = true, within = true, below = true;
  unsigned most = 0;
  for (int i = 0; i < 200; i++) {
    double cap = 0.2 * pow(10, 5.5 * i / 199.0);
    tp_search_init(&s, &o);
    unsigned n = run(&s, cap);
    most = n > most ? n : most;
    all_found &= s.state == TP_SEARCH_FOUND;
    within &= s.low_fail - s.best_pass <= 0.05 * s.best_pass + 1e-9;
    below &= s.best_pass <= cap && s.low_fail > cap;
  }
  CHECK(all_found, "rates: every search ends with a bracket");
  CHECK(below, "rates: the last pass is at or below the capacity, the first failure above it");
  CHECK(within, "rates: the bracket is within 5%% of the answer");
  CHECK(most <= 22, "rates: at most 22 probes over six decades (%u)", most);

  /* Concurrency: whole values, an absolute precision of 1. */
  tp_search_opts c = {.start = 4, .min = 1, .max = 1024, .growth = 2, .abs_precision = 1, .integer = true,
                      .max_probes = 40};
  bool exact = true;
  for (int cap = 1; cap <= 700; cap += 7) {
    tp_search_init(&s, &c);
    run(&s, cap);
    exact &= s.state == TP_SEARCH_FOUND && s.best_pass == cap && s.low_fail == cap + 1;
  }
  CHECK(exact, "concurrency: the exact boundary, found as N passes and N + 1 fails");
  bool whole = true;
  for (unsigned i = 0; i < s.n_probes; i++) whole &= s.probes[i].value == floor(s.probes[i].value);
  CHECK(whole, "concurrency: only whole values probed");

  /* The range's ends. */
  tp_search_init(&s, &c);
  run(&s, 5000);
  CHECK(s.state == TP_SEARCH_ALL_PASS && s.best_pass == 1024, "every probe passing stops at the top of the range");
  tp_search_init(&s, &c);
  run(&s, 0.5);
  CHECK(s.state == TP_SEARCH_ALL_FAIL && s.low_fail == 1, "every probe failing stops at the bottom of the range");

  /* The probe limit. */
  tp_search_opts few = o;
  few.max_probes = 5;
  tp_search_init(&s, &few);
  unsigned n = run(&s, 1000);
  CHECK(n == 5 && s.state == TP_SEARCH_OUT_OF_PROBES, "the probe limit stops the search (%u probes)", n);

  /* Noise: a pass above a known failure never raises the answer. */
  tp_search_init(&s, &o);
  double v;
  tp_search_next(&s, &v);
  tp_search_record(&s, 8, true);
  tp_search_record(&s, 16, false);
  tp_search_record(&s, 12, false);
  tp_search_record(&s, 14, true); /* noise */
  CHECK(s.best_pass == 8 && s.low_fail == 12, "a pass above a failure is noise: the bracket stays 8..12");
  tp_search_record(&s, 10, true);
  tp_search_record(&s, 9, false);
  CHECK(s.best_pass == 8 && s.low_fail == 9, "a failure below the best pass brings the answer down");
  CHECK_INT(s.n_probes, 6, "every probe is listed");
  return tp_test_done();
}

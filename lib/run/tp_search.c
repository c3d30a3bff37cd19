/* Capacity search (tp_search.h). */
#include "tp_search.h"

#include <math.h>
#include <string.h>

#include "util/tp_common.h"

static double snap(const tp_search *s, double v) {
  if (s->o.integer) v = round(v);
  if (v < s->o.min) v = s->o.min;
  if (v > s->o.max) v = s->o.max;
  return v;
}

/* The gap at which bisection stops. */
static double precision(const tp_search *s) {
  double p = s->o.rel_precision > 0 ? s->o.rel_precision * s->best_pass : s->o.abs_precision;
  if (s->o.integer && p < 1) p = 1;
  return p;
}

int tp_search_init(tp_search *s, const tp_search_opts *o) {
  memset(s, 0, sizeof(*s));
  if (!(o->min > 0) || !(o->max >= o->min) || !(o->growth > 1) || !(o->start > 0) ||
      !(o->rel_precision > 0 || o->abs_precision > 0) || o->max_probes == 0)
    return TP_EINVAL;
  s->o = *o;
  if (s->o.max_probes > TP_SEARCH_MAX_PROBES) s->o.max_probes = TP_SEARCH_MAX_PROBES;
  s->state = TP_SEARCH_RUNNING;
  s->next = snap(s, o->start);
  return 0;
}

bool tp_search_next(const tp_search *s, double *value) {
  if (s->state != TP_SEARCH_RUNNING) return false;
  *value = s->next;
  return true;
}

/* Chooses the next value, or ends the search. */
static void advance(tp_search *s) {
  if (s->n_probes >= s->o.max_probes) {
    s->state = TP_SEARCH_OUT_OF_PROBES;
    return;
  }
  double next;
  if (!s->have_fail) {
    /* Every probe passed so far: grow, up to the range's top. */
    if (s->best_pass >= s->o.max) {
      s->state = TP_SEARCH_ALL_PASS;
      return;
    }
    next = snap(s, s->best_pass * s->o.growth);
  } else if (!s->have_pass) {
    /* Every probe failed so far: shrink, down to the range's bottom. */
    if (s->low_fail <= s->o.min) {
      s->state = TP_SEARCH_ALL_FAIL;
      return;
    }
    next = snap(s, s->low_fail / s->o.growth);
  } else {
    if (s->low_fail - s->best_pass <= precision(s)) {
      s->state = TP_SEARCH_FOUND;
      return;
    }
    next = snap(s, (s->best_pass + s->low_fail) / 2);
    /* Whole values: the midpoint of neighbours rounds onto one of them. */
    if (next <= s->best_pass || next >= s->low_fail) {
      s->state = TP_SEARCH_FOUND;
      return;
    }
  }
  s->next = next;
}

void tp_search_record(tp_search *s, double value, bool passed) {
  if (s->state != TP_SEARCH_RUNNING) return;
  if (s->n_probes < TP_SEARCH_MAX_PROBES) s->probes[s->n_probes++] = (tp_search_probe){value, passed};
  if (passed) {
    /* A pass above a known failure is noise: it cannot raise the answer. */
    if ((!s->have_fail || value < s->low_fail) && (!s->have_pass || value > s->best_pass)) {
      s->best_pass = value;
      s->have_pass = true;
    }
  } else {
    if (!s->have_fail || value < s->low_fail) {
      s->low_fail = value;
      s->have_fail = true;
    }
    /* A failure at or below the best pass makes that pass doubtful: the
     * answer is then the best pass below this failure, among the probes. */
    if (s->have_pass && s->best_pass >= s->low_fail) {
      s->have_pass = false;
      for (unsigned i = 0; i < s->n_probes; i++)
        if (s->probes[i].passed && s->probes[i].value < s->low_fail &&
            (!s->have_pass || s->probes[i].value > s->best_pass)) {
          s->best_pass = s->probes[i].value;
          s->have_pass = true;
        }
    }
  }
  advance(s);
}

const char *tp_search_state_name(tp_search_state st) {
  switch (st) {
    case TP_SEARCH_RUNNING: return "running";
    case TP_SEARCH_FOUND: return "found";
    case TP_SEARCH_ALL_PASS: return "every probe passed: the capacity is above the searched range";
    case TP_SEARCH_ALL_FAIL: return "every probe failed: the capacity is below the searched range";
    case TP_SEARCH_OUT_OF_PROBES: return "stopped at the probe limit";
  }
  return "?";
}

/* Capacity search over the sweep (tp_sweep_search.h). */
#include "tp_sweep_search.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "run/tp_gates.h"

#define DEFAULT_MIN 1
#define DEFAULT_MAX 1024
#define DEFAULT_PROBES 12
#define DEFAULT_REL_PRECISION 0.1

struct tp_sweep_search {
  tp_search search;
  tp_gates *gates;
  tp_search_summary sum;
  tp_probe_row rows[TP_SEARCH_MAX_PROBES];
};

size_t tp_sweep_search_max_levels(const tp_config *c) {
  size_t n = c->load.search_max_probes ? c->load.search_max_probes : DEFAULT_PROBES;
  return n > TP_SEARCH_MAX_PROBES ? TP_SEARCH_MAX_PROBES : n;
}

int tp_sweep_search_new(tp_sweep_search **out, const tp_config *c, char *err, size_t errlen) {
  *out = NULL;
  if (!c->load.n_slos && c->measure.max_error_rate < 0) {
    tp_seterr(err, errlen,
              "search.mode: give at least one search.slos, like 'ttft.p99 <= 300ms' (or "
              "goals.max_error_rate)");
    return TP_EINVAL;
  }
  if (c->load.n_slos > TP_SLO_MAX) {
    tp_seterr(err, errlen, "search.slos: at most %d SLOs", TP_SLO_MAX);
    return TP_EINVAL;
  }
  bool conc = c->load.search == TP_SEARCH_CONCURRENCY;
  tp_search_opts o;
  memset(&o, 0, sizeof(o));
  o.min = c->load.search_min > 0 ? c->load.search_min : DEFAULT_MIN;
  o.max = c->load.search_max > 0 ? c->load.search_max : DEFAULT_MAX;
  if (conc && (o.max > 100000 || o.min != floor(o.min) || o.max != floor(o.max))) {
    tp_seterr(err, errlen,
              "search.min/search.max: concurrencies are whole numbers from 1 to 100000 "
              "(given %g and %g)",
              o.min, o.max);
    return TP_EINVAL;
  }
  if (o.max < o.min) {
    tp_seterr(err, errlen, "search.max %g is below search.min %g", o.max, o.min);
    return TP_EINVAL;
  }
  o.start = o.min;
  o.growth = 2;
  o.rel_precision = c->load.search_rel_precision;
  o.abs_precision = c->load.search_abs_precision;
  if (!(o.rel_precision > 0) && !(o.abs_precision > 0)) o.rel_precision = DEFAULT_REL_PRECISION;
  if (o.rel_precision > 0) o.abs_precision = 0;
  o.integer = conc;
  o.max_probes = (unsigned)tp_sweep_search_max_levels(c);
  tp_sweep_search *s = calloc(1, sizeof(*s));
  if (!s) return TP_ENOMEM;
  int rv = tp_search_init(&s->search, &o);
  if (rv) {
    tp_seterr(err, errlen, "search.mode: the range %g to %g or the precision is out of range", o.min, o.max);
    free(s);
    return rv;
  }
  /* The SLOs read like gates, so an expression's errors name
   * goals.asserts; they say search.slos here. */
  char gerr[512];
  rv = tp_gates_new(&s->gates, c->load.slos, c->load.n_slos, gerr, sizeof(gerr));
  if (rv) {
    const char *msg = strncmp(gerr, "goals.asserts", 13) == 0 ? gerr + 13 : gerr;
    tp_seterr(err, errlen, "search.slos%s", msg);
    free(s);
    return rv;
  }
  tp_search_summary *m = &s->sum;
  m->mode = c->load.search;
  m->slos = c->load.slos;
  m->n_slos = c->load.n_slos;
  m->max_error_rate = c->measure.max_error_rate;
  m->probes = s->rows;
  m->min = o.min;
  m->max = o.max;
  m->rel_precision = o.rel_precision;
  m->abs_precision = o.abs_precision;
  m->max_probes = o.max_probes;
  m->outcome = tp_search_state_name(s->search.state);
  *out = s;
  return 0;
}

bool tp_sweep_search_next(const tp_sweep_search *s, double *load) { return tp_search_next(&s->search, load); }

bool tp_sweep_search_eval(const tp_gates *gates, size_t n, double max_error_rate, const tp_level_result *lv,
                          tp_probe_row *row) {
  bool ok = true;
  for (size_t i = 0; i < n && i < TP_SLO_MAX; i++) {
    row->held[i] = tp_gate_eval(gates, i, lv, &row->value[i]) == 1;
    ok &= row->held[i];
  }
  row->error_rate_held = !(max_error_rate >= 0 && !(lv->error_rate <= max_error_rate));
  ok &= row->error_rate_held;
  /* A probe that --stop-on-saturation cut short was past capacity. */
  if (lv->saturation.stopped) ok = false;
  /* A level where nothing succeeded proves nothing but failure. */
  if (lv->requests > 0 && lv->succeeded == 0) ok = false;
  row->passed = ok;
  return ok;
}

void tp_sweep_search_judge(tp_sweep_search *s, double load, const tp_level_result *lv, size_t level,
                           uint64_t sent, double seconds) {
  tp_search_summary *m = &s->sum;
  tp_probe_row *row = &s->rows[m->n_probes < TP_SEARCH_MAX_PROBES ? m->n_probes : TP_SEARCH_MAX_PROBES - 1];
  memset(row, 0, sizeof(*row));
  row->load = load;
  row->level = level;
  row->requests = sent;
  row->seconds = seconds;
  bool ok = tp_sweep_search_eval(s->gates, m->n_slos, m->max_error_rate, lv, row);
  if (m->n_probes < TP_SEARCH_MAX_PROBES) m->n_probes++;
  tp_search_record(&s->search, load, ok);
  m->outcome = tp_search_state_name(s->search.state);
  m->have_pass = s->search.have_pass;
  m->have_fail = s->search.have_fail;
  m->boundary = s->search.best_pass;
  m->first_fail = s->search.low_fail;
}

const tp_search_summary *tp_sweep_search_summary(const tp_sweep_search *s) { return &s->sum; }

void tp_sweep_search_free(tp_sweep_search *s) {
  if (!s) return;
  tp_gates_free(s->gates);
  free(s);
}

int tp_sweep_search_check(const tp_sweep_search *s, const tp_gates *asserts, const tp_level_result *levels,
                          FILE *out) {
  const tp_search_summary *m = &s->sum;
  for (size_t i = m->n_probes; i-- > 0;)
    if (m->have_pass && m->probes[i].passed && m->probes[i].load == m->boundary)
      return tp_gates_check(asserts, &levels[m->probes[i].level], 1, -1, out);
  if (m->n_probes)
    fprintf(out, "tokperf: capacity search: no probe met every SLO (down to %g); the capacity is below "
                 "--search-min\n", m->min);
  return m->n_probes ? 1 : 0;
}

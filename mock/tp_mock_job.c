/* The part of a request the gRPC and HTTP sides share: its fault, its
 * place in the timing model, its statistics. */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "mock/tp_mock_engine.h"
#include "mock/tp_mock_internal.h"
#include "util/tp_common.h"
#include "util/tp_timer.h"

void tp__mock_on_admit(tp_mock_engine *e, tp_mock_seq *s, void *user_data) {
  tp_mock *m = user_data;
  tp__mock_job *j = s->data;
  tp_timer_start(m->timers, &j->timer, s->next_deadline_ns);
  tp__mock_raise_max(&m->max_seqs, tp_mock_engine_running(e));
  atomic_store_explicit(&m->n_prefix_queries_tokens, tp_mock_engine_prefix_queries_tokens(e),
                        memory_order_relaxed);
  atomic_store_explicit(&m->n_prefix_hits_tokens, tp_mock_engine_prefix_hits_tokens(e), memory_order_relaxed);
}

void tp__mock_job_choose_fault(tp_mock *m, tp__mock_job *j, const tp_mock_fault *given, int64_t after) {
  memset(&j->fault, 0, sizeof(j->fault));
  uint64_t number = tp_mock_engine_next_number(m->engine);
  if (given) {
    tp_mock_fault_pick(given, m->cfg.seed, number, &j->fault);
    j->fault.after_tokens = after > 0 ? (uint32_t)TP_MIN(after, (int64_t)UINT32_MAX) : 0;
  } else if (m->fault.kind != TP_MOCK_FAULT_NONE &&
             tp_mock_fault_draw(m->cfg.seed, number, m->cfg.fault_rate)) {
    tp_mock_fault_pick(&m->fault, m->cfg.seed, number, &j->fault);
    j->fault.after_tokens =
        after >= 0 ? (uint32_t)TP_MIN(after, (int64_t)UINT32_MAX) : m->cfg.fault_after_tokens;
  }
}

/* Faults that answer at once are not given to the timing model: the
 * request never takes a batch slot, as a request refused at the door. */
static bool fault_at_arrival(const tp__mock_job *j) {
  return tp_mock_fault_is_discrete(j->fault.kind) && j->fault.after_tokens == 0;
}

int tp__mock_job_submit(tp_mock *m, tp__mock_job *j, tp_mock_seq_params *p, uint64_t now_ns) {
  if (j->fault.kind == TP_MOCK_FAULT_ENDLESS) p->endless = true;
  int rv = 0;
  if (fault_at_arrival(j)) {
    j->seq.number = tp_mock_engine_take_number(m->engine);
    j->seq.arrival_ns = now_ns;
    j->seq.prompt_tokens = p->prompt_tokens;
    j->seq.max_tokens = p->max_tokens ? p->max_tokens : TP_MOCK_DEFAULT_MAX_TOKENS;
    /* Fires on the next loop iteration, outside whatever callback
     * delivered the request. */
    tp_timer_start(m->timers, &j->timer, now_ns);
  } else {
    rv = tp_mock_engine_submit(m->engine, &j->seq, p, now_ns);
    if (rv) return rv;
    j->submitted = true;
  }
  tp__mock_count(&m->n_requests, 1);
  tp__mock_log_request(m, j, now_ns, p->prompt, p->prompt_len);
  if (j->fault.kind == TP_MOCK_FAULT_ENDLESS) tp__mock_job_fault_fired(m, j, now_ns);
  return 0;
}

void tp__mock_job_fault_fired(tp_mock *m, tp__mock_job *j, uint64_t now_ns) {
  if (j->fault_fired) return;
  j->fault_fired = true;
  tp__mock_count(&m->n_faults, 1);
  tp__mock_log_fault(m, j, now_ns);
}

bool tp__mock_job_fault_due(const tp__mock_job *j) {
  return j->fault.kind != TP_MOCK_FAULT_NONE && !j->fault_fired && tp_mock_fault_is_discrete(j->fault.kind) &&
         j->tokens_sent == j->fault.after_tokens;
}

bool tp__mock_job_token_text(tp_mock *m, tp__mock_job *j, const tp_mock_token *tok, char *bad,
                             const char **text, size_t *len, uint64_t now_ns) {
  *text = tok->text;
  *len = tok->text_len;
  if (j->fault.kind == TP_MOCK_FAULT_NONE || j->fault_fired || j->tokens_sent != j->fault.after_tokens)
    return false;
  if (j->fault.kind == TP_MOCK_FAULT_INVALID_UTF8) {
    /* 0xff and 0xfe never occur in UTF-8. */
    bad[0] = (char)0xff;
    bad[1] = (char)0xfe;
    memcpy(bad + 2, tok->text, tok->text_len);
    *text = bad;
    *len = tok->text_len + 2;
    tp__mock_job_fault_fired(m, j, now_ns);
    return false;
  }
  if (j->fault.kind == TP_MOCK_FAULT_TRICKLE) {
    tp__mock_job_fault_fired(m, j, now_ns);
    return true;
  }
  return false;
}

tp__mock_tick tp__mock_job_tick(tp_mock *m, tp__mock_job *j, uint64_t now_ns, tp_mock_token *tok, char *bad,
                               const char **text, size_t *len, bool *trickle) {
  if (tp__mock_job_fault_due(j)) return TP__MOCK_TICK_FAULT;
  if (tp_mock_engine_next(m->engine, &j->seq, now_ns, tok) != 0) return TP__MOCK_TICK_NONE;
  *trickle = tp__mock_job_token_text(m, j, tok, bad, text, len, now_ns);
  j->tokens_sent++;
  return TP__MOCK_TICK_TOKEN;
}

void tp__mock_job_response(tp_mock *m, tp__mock_job *j, uint64_t now_ns) {
  if (j->responses == 0)
    j->first_response_ns = now_ns;
  else if (now_ns > j->last_response_ns)
    tp_mock_statset_itl(&m->stats, now_ns - j->last_response_ns);
  j->last_response_ns = now_ns;
  j->responses++;
}

static uint64_t wall_ms(void) {
  uv_timeval64_t tv;
  if (uv_gettimeofday(&tv) != 0) return 0;
  return (uint64_t)tv.tv_sec * 1000 + (uint64_t)tv.tv_usec / 1000;
}

void tp__mock_job_end(tp_mock *m, tp__mock_job *j, tp__mock_outcome how, uint64_t now_ns) {
  if (j->ended) return;
  j->ended = true;
  if (m->timers) tp_timer_stop(m->timers, &j->timer);
  bool hit_length = j->seq.hit_length;
  if (j->submitted) tp_mock_engine_cancel(m->engine, &j->seq, now_ns);
  tp_mock_job_record rec;
  memset(&rec, 0, sizeof(rec));
  rec.model = j->model->stats_model;
  rec.ok = how == TP__MOCK_OK;
  rec.cancelled = how == TP__MOCK_CANCELLED;
  rec.hit_length = hit_length;
  rec.arrival_ns = j->seq.arrival_ns;
  rec.admit_ns = j->submitted ? j->seq.admit_ns : 0;
  rec.first_response_ns = j->first_response_ns;
  rec.end_ns = now_ns;
  rec.wall_ms = wall_ms();
  rec.prompt_tokens = j->seq.prompt_tokens;
  rec.output_tokens = j->tokens_sent;
  rec.responses = j->responses;
  tp_mock_statset_record(&m->stats, &rec);
}

void tp__mock_job_fini(tp__mock_job *j) {
  free(j->id);
  j->id = NULL;
  free(j->request_id);
  j->request_id = NULL;
  free(j->traceparent);
  j->traceparent = NULL;
}

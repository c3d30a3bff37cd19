/* The figures of one request (tp_request.h).  docs/metrics.md defines each;
 * this file is their one computation per request. */
#include "tp_request.h"

#include <math.h>
#include <stddef.h>

#include "tp_metric.h"

/* Milliseconds between two monotonic timestamps, or -1 when either did not
 * happen (0) or they are out of order, so a half-recorded request drops out
 * of that one figure instead of adding a huge unsigned wrap. */
static double span_ms(uint64_t from_ns, uint64_t to_ns) {
  if (!from_ns || !to_ns || to_ns < from_ns) return -1;
  return (double)(to_ns - from_ns) / (double)TP_NS_PER_MS;
}

/* The first answer response: first_answer_ns, or without reasoning the
 * first text response (a record built without the answer's own stamp). */
static uint64_t first_answer(const tp_record *r) {
  return r->first_answer_ns || tp_record_has_reasoning(r) ? r->first_answer_ns : r->first_token_ns;
}

/* Output tokens plus reasoning tokens (when the request had reasoning and
 * they were counted); -1 when the output was not counted. */
static int64_t generated_tokens(const tp_record *r, int64_t output) {
  if (output < 0) return -1;
  if (r->reasoning_tokens > 0 && tp_record_has_reasoning(r)) output += r->reasoning_tokens;
  return output;
}

/* The server's counts against the client tokenizer's, whichever of the two
 * the record reports (--token-source).  A server's completion count
 * includes the reasoning tokens. */
static void usage_diffs(const tp_record *r, tp_req_metrics *m) {
  m->usage_output_diff = m->usage_input_diff = -1;
  int64_t cout = r->server_counts & TP_RECORD_SERVER_OUTPUT ? r->client_output_tokens : r->output_tokens;
  int64_t cgen = generated_tokens(r, cout);
  int64_t cin = r->server_counts & TP_RECORD_SERVER_INPUT ? r->client_input_tokens : r->input_tokens;
  if (r->server_output_tokens >= 0 && cgen >= 0)
    m->usage_output_diff = fabs((double)r->server_output_tokens - (double)cgen);
  if (r->server_input_tokens >= 0 && cin >= 0)
    m->usage_input_diff = fabs((double)r->server_input_tokens - (double)cin);
}

/* The figures that need the output counted. */
static void token_figures(const tp_record *r, tp_req_metrics *m) {
  int64_t gen = m->generated_tokens;
  m->output_tps_per_user = m->itl_ms = m->tpot_ms = m->output_tps_per_user_itl = -1;
  m->itl_answer_ms = m->output_tps_per_user_itl_answer = -1;
  m->length_mismatch = false;
  if (r->output_tokens < 0) return;
  if (m->latency_ms > 0) m->output_tps_per_user = (double)r->output_tokens / (m->latency_ms / 1000.0);
  /* A unary answer brings all its text at once: it has no gaps between
   * tokens to measure, and a 0 would only drag the figure down.  Every
   * generated token counts, reasoning and answer: the time from the first
   * to the last of either kind is spent generating all of them. */
  double x = span_ms(r->first_token_ns, r->last_token_ns);
  /* Text that all came at one time shows no gap: no ITL (below). */
  if (gen >= 2 && r->n_text_resp >= 2 && x >= 0 && !m->itl_all_merged) {
    m->itl_ms = x / (double)(gen - 1);
    /* GenAI-Perf's per-user throughput: the rate of the decode phase. */
    if (m->itl_ms > 0) m->output_tps_per_user_itl = 1000.0 / m->itl_ms;
  }
  /* vLLM's TPOT: from the first token to the end of the request (a
   * trailing usage-only response included), over the tokens after the
   * first; a unary answer has one too, as vLLM gives it. */
  x = span_ms(r->first_token_ns, r->done_ns);
  if (gen >= 2 && x >= 0 && !(m->itl_all_merged && x == 0)) m->tpot_ms = x / (double)(gen - 1);
  /* GenAI-Perf's parser drops the responses without OpenAI content, the
   * reasoning ones too: its ITL runs from the first answer response to
   * the last, over the answer's tokens.  Without reasoning it is ITL. */
  x = span_ms(first_answer(r), r->last_token_ns);
  if (r->output_tokens >= 2 && x > 0) {
    m->itl_answer_ms = x / (double)(r->output_tokens - 1);
    m->output_tps_per_user_itl_answer = 1000.0 / m->itl_answer_ms;
  }
  /* max_tokens bounds reasoning and answer together. */
  m->length_mismatch = r->max_tokens > 0 && (uint64_t)gen != r->max_tokens;
}

/* vLLM bench serve's figures (vllm/benchmarks/lib/endpoint_request_func.py
 * and serve.py's calculate_metrics): TTFT at the first chunk carrying
 * choices, E2EL at the last one, the output length the server's
 * completion count when it gave a non-zero one (vLLM's `if not
 * output_len`), else the client's count of the answer (1 when there is
 * none, as vLLM without a tokenizer takes it), and TPOT
 * (E2EL - TTFT) / (length - 1) for a length above 1.  A record from a
 * client that does not mark choices (not OpenAI) ends at done_ns. */
static void vllm_figures(const tp_record *r, tp_req_metrics *m) {
  m->vllm_ttft_ms = span_ms(r->sent_ns, r->first_resp_ns);
  m->vllm_e2el_ms = span_ms(r->sent_ns, r->last_choice_ns ? r->last_choice_ns : r->done_ns);
  int64_t n = r->server_output_tokens > 0                  ? r->server_output_tokens
              : r->server_counts & TP_RECORD_SERVER_OUTPUT ? r->client_output_tokens
                                                           : r->output_tokens;
  /* Neither counted (no usage, no tokenizer): vLLM without a tokenizer
   * takes 1. */
  m->vllm_output_tokens = n >= 0 ? n : 1;
  m->vllm_tpot_ms = -1;
  if (n > 1 && m->vllm_ttft_ms >= 0 && m->vllm_e2el_ms >= m->vllm_ttft_ms)
    m->vllm_tpot_ms = (m->vllm_e2el_ms - m->vllm_ttft_ms) / (double)(n - 1);
}

void tp_request_metrics(const tp_record *r, tp_req_metrics *m) {
  m->ok = tp_record_ok(r);
  /* Send lag: how late the client released the request against its plan
   * (scheduler jitter, a full in-flight cap, transport queueing). */
  m->send_lag_ms = r->sent_ns && r->planned_ns ? span_ms(r->planned_ns, r->sent_ns) : -1;
  m->latency_ms = span_ms(r->sent_ns, r->done_ns);
  /* GenAI-Perf and AIPerf end a request at its last response that carried
   * text: a trailing usage-only or flag-only response is not part of it. */
  m->latency_last_text_ms = span_ms(r->sent_ns, r->last_token_ns);
  m->ttft_ms = span_ms(r->sent_ns, r->first_token_ns);
  /* Time to second token: needs no tokenizer, only two text responses;
   * none when both came at one time (a gap the client could not see). */
  m->ttst_ms = r->second_token_ns != r->first_token_ns ? span_ms(r->first_token_ns, r->second_token_ns) : -1;
  /* The first answer token, after any reasoning: TTFT for other models. */
  m->ttfo_ms = span_ms(r->sent_ns, first_answer(r));
  /* From the planned time: what a user arriving on schedule waited,
   * client queueing included (coordinated omission shows here). */
  m->ttft_from_planned_ms = span_ms(r->planned_ns, r->first_token_ns);
  m->latency_from_planned_ms = span_ms(r->planned_ns, r->done_ns);
  m->responses = r->n_resp;
  m->text_responses = r->n_text_resp;
  /* Text that all came at one time (one read, or segments the kernel
   * merged) shows no gap the server left between its tokens: the request
   * has no ITL and no TPOT over those, rather than 0 ms (docs/metrics.md,
   * "Fidelity"). */
  m->itl_all_merged = r->n_text_resp >= 2 && r->n_text_merged + 1 >= r->n_text_resp;
  m->output_tokens = r->output_tokens;
  m->input_tokens = r->input_tokens;
  m->generated_tokens = generated_tokens(r, r->output_tokens);
  m->reasoning_tokens = r->reasoning_tokens >= 0 && tp_record_has_reasoning(r) ? r->reasoning_tokens : -1;
  token_figures(r, m);
  usage_diffs(r, m);
  vllm_figures(r, m);
}

/* Each per-request row of the registry (by where its distribution lives in
 * tp_level_result) and its value here; token counts are int64_t. */
#define LR(f) offsetof(tp_level_result, f)
#define RM(f) offsetof(tp_req_metrics, f)
static const struct {
  size_t level_off, req_off;
  bool count;
} per_request[] = {
    {LR(ttft_ms), RM(ttft_ms), false},
    {LR(itl_ms), RM(itl_ms), false},
    {LR(latency_ms), RM(latency_ms), false},
    {LR(output_tokens), RM(output_tokens), true},
    {LR(input_tokens), RM(input_tokens), true},
    {LR(output_tps_per_user), RM(output_tps_per_user), false},
    {LR(ttst_ms), RM(ttst_ms), false},
    {LR(ttfo_ms), RM(ttfo_ms), false},
    {LR(tpot_ms), RM(tpot_ms), false},
    {LR(output_tps_per_user_itl), RM(output_tps_per_user_itl), false},
    {LR(send_lag_ms), RM(send_lag_ms), false},
    {LR(ttft_from_planned_ms), RM(ttft_from_planned_ms), false},
    {LR(latency_from_planned_ms), RM(latency_from_planned_ms), false},
    {LR(reasoning_tokens), RM(reasoning_tokens), true},
    {LR(latency_last_text_ms), RM(latency_last_text_ms), false},
    {LR(generated_tokens), RM(generated_tokens), true},
    {LR(itl_answer_ms), RM(itl_answer_ms), false},
    {LR(output_tps_per_user_itl_answer), RM(output_tps_per_user_itl_answer), false},
    {LR(vllm_ttft_ms), RM(vllm_ttft_ms), false},
    {LR(vllm_e2el_ms), RM(vllm_e2el_ms), false},
    {LR(vllm_tpot_ms), RM(vllm_tpot_ms), false},
    {LR(vllm_output_tokens), RM(vllm_output_tokens), true},
};
#undef LR
#undef RM

bool tp_request_value(const tp_req_metrics *m, const tp_metric *row, double *out) {
  if (row->kind != TP_METRIC_DIST) return false;
  if (row->offset == offsetof(tp_level_result, responses)) {
    *out = (double)m->responses;
    return true;
  }
  for (size_t i = 0; i < sizeof(per_request) / sizeof(per_request[0]); i++) {
    if (per_request[i].level_off != row->offset) continue;
    const char *p = (const char *)m + per_request[i].req_off;
    double v = per_request[i].count ? (double)*(const int64_t *)(const void *)p : *(const double *)(const void *)p;
    if (v < 0) return false;
    *out = v;
    return true;
  }
  return false;
}

bool tp_request_text_span(const tp_record *r, uint32_t *i0_out, uint32_t *i1_out) {
  if (!r->resp_ns || r->n_text_resp < 2 || !r->n_resp) return false;
  /* Responses read in one batch share a stamp (their gaps of 0 are left
   * out of the pooled ITL and counted, tp_gaps.h); where a response
   * without text shares the first (last) text time, the
   * span is trimmed at that end until it holds no more responses than
   * carried text: the end first, where a flag-only final response often
   * shares the last text's read.  Which of two tied responses is dropped
   * changes only the order of the gaps, never their values. */
  uint32_t i0 = 0, i1 = r->n_resp - 1;
  while (i0 < r->n_resp && r->resp_ns[i0] < r->first_token_ns) i0++;
  while (i1 > i0 && r->resp_ns[i1] > r->last_token_ns) i1--;
  if (i0 >= i1) return false;
  while (i1 - i0 + 1 > r->n_text_resp && r->resp_ns[i1 - 1] == r->last_token_ns) i1--;
  while (i1 - i0 + 1 > r->n_text_resp && r->resp_ns[i0 + 1] == r->first_token_ns) i0++;
  *i0_out = i0;
  *i1_out = i1;
  return true;
}

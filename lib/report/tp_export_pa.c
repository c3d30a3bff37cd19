/* perf_analyzer's profile export (tp_export.h): one experiment per level. */
#include "tp_export_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>

static bool measured_ok(const tp_export_request *q) {
  return tp__measured(q) && tp_record_ok(q->rec);
}

int tp__pa_experiment(tp_buf *out, const tp__sink *sk, const tp_export_level *lv, uint32_t default_max_tokens,
                      uint64_t anchor_mono_ns, uint64_t anchor_wall_ns) {
  const tp_level_result *lr = lv->lr;
  const tp_export_request *reqs = lv->reqs;
  size_t n = lv->n;
  size_t *idx;
  size_t k = tp__order_by_send(reqs, n, measured_ok, &idx);
  if (k == SIZE_MAX) return TP_ENOMEM;
#define W(ts) tp_export_wall_ns(anchor_mono_ns, anchor_wall_ns, (ts))
  /* perf_analyzer writes {"mode": "concurrency", "value": N} or, with no
   * concurrency, {"mode": "request_rate", "value": rate}; a trace has no
   * rate of its own and is written as request_rate 0. */
  int rv = lr->load_mode == TP_LOAD_CONCURRENCY
               ? tp_buf_printf(
                     out, "{\"experiment\":{\"mode\":\"concurrency\",\"value\":%" PRIu32 "},\"requests\":[",
                     lr->concurrency)
               : tp_buf_printf(
                     out, "{\"experiment\":{\"mode\":\"request_rate\",\"value\":%.17g},\"requests\":[",
                     lr->load_mode == TP_LOAD_RATE && isfinite(lr->request_rate) ? lr->request_rate : 0.0);
  for (size_t j = 0; j < k && rv == 0; j++) {
    const tp_export_request *q = &reqs[idx[j]];
    tp_record full;
    rv = tp__whole(q, &full);
    if (rv) break;
    const tp_record *r = &full;
    uint32_t max_tokens = q->max_tokens ? q->max_tokens : default_max_tokens;
    rv = tp_buf_append_str(out, j ? ",{\"timestamp\":" : "{\"timestamp\":");
    if (!rv) rv = tp__json_u64(out, W(r->sent_ns));
    if (!rv) rv = tp_buf_append_str(out, ",\"request_inputs\":{\"text_input\":");
    if (!rv) rv = tp__json_sent(out, q);
    if (!rv) rv = tp_buf_append_str(out, ",\"max_tokens\":");
    if (!rv) rv = tp__json_u64(out, max_tokens);
    if (!rv) rv = tp_buf_append_str(out, "},\"response_timestamps\":[");
    size_t text_at = SIZE_MAX;
    for (uint32_t i = 0; i < r->n_resp && rv == 0; i++) {
      if (text_at == SIZE_MAX && r->first_token_ns && r->resp_ns[i] == r->first_token_ns) text_at = i;
      if (i) rv = tp_buf_append(out, ",", 1);
      if (!rv) rv = tp__json_u64(out, W(r->resp_ns[i]));
    }
    if (!rv) rv = tp_buf_append_str(out, "],\"response_outputs\":[");
    for (uint32_t i = 0; i < r->n_resp && rv == 0; i++) {
      rv = tp_buf_append_str(out, i ? ",{\"text_output\":" : "{\"text_output\":");
      size_t tl = 0;
      const char *t = i == text_at ? tp__rec_text(r, &tl) : "";
      if (!rv) rv = tp__json_str(out, t, tl);
      if (!rv) rv = tp_buf_append(out, "}", 1);
    }
    if (!rv) rv = tp_buf_append(out, "]", 1);
    /* A distributed run says which rank sent it (docs/scale-out.md). */
    if (!rv && lr->ranks) rv = tp_buf_printf(out, ",\"rank\":%" PRIu32, r->rank);
    if (!rv) rv = tp_buf_append(out, "}", 1);
    if (!rv) rv = tp__sink_spill(out, sk);
  }
  free(idx);
  if (rv) return rv;

  /* The window is the level's: it opens at the first measured send and is
   * duration_s long, the figure the throughputs were divided by. */
  uint64_t start_ns = 0;
  for (size_t i = 0; i < n; i++)
    if (tp__measured(&reqs[i]) && reqs[i].rec->sent_ns && (!start_ns || reqs[i].rec->sent_ns < start_ns))
      start_ns = reqs[i].rec->sent_ns;
  rv = tp_buf_append_str(out, "],\"window_boundaries\":[");
  if (!rv && lv->window_end_ns > lv->window_start_ns) {
    rv = tp_buf_printf(out, "%" PRIu64 ",%" PRIu64, W(lv->window_start_ns), W(lv->window_end_ns));
  } else if (!rv && start_ns) {
    uint64_t dur_ns = lr->duration_s > 0 ? (uint64_t)llround(lr->duration_s * 1e9) : 0;
    rv = tp_buf_printf(out, "%" PRIu64 ",%" PRIu64, W(start_ns), W(start_ns) + dur_ns);
  }
  if (!rv) rv = tp_buf_append(out, "]}", 2);
#undef W
  return rv;
}

int tp_export_pa_experiment(tp_buf *out, const tp_export_level *lv, uint32_t default_max_tokens,
                            uint64_t anchor_mono_ns, uint64_t anchor_wall_ns) {
  return tp__pa_experiment(out, NULL, lv, default_max_tokens, anchor_mono_ns, anchor_wall_ns);
}

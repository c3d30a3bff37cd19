/* AIPerf's per-record export, profile_export.jsonl (tp_export.h): one line
 * per measured request, its metadata and its own figures.  Every figure is
 * the request's value from tp_request_metrics, under the key and unit of
 * its registry row: nothing is defined a second time here. */
#include "tp_export_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "metrics/tp_metric.h"
#include "metrics/tp_request.h"

/* A number as JSON, in the fewest digits that read back to the same
 * double; a whole number (a token count) as an integer. */
static int json_num(tp_buf *out, double v) {
  if (v >= 0 && v < 9007199254740992.0 && v == (double)(uint64_t)v) return tp__json_u64(out, (uint64_t)v);
  char b[32];
  for (int prec = 15; prec <= 17; prec++) {
    snprintf(b, sizeof(b), "%.*g", prec, v);
    if (strtod(b, NULL) == v) break;
  }
  return tp_buf_append_str(out, b);
}

static int metric_value(tp_buf *out, bool *first, const char *key, double v, const char *unit) {
  int rv = tp_buf_printf(out, "%s\"%s\":{\"value\":", *first ? "" : ",", key);
  *first = false;
  if (!rv) rv = json_num(out, v);
  if (!rv) rv = tp_buf_printf(out, ",\"unit\":\"%s\"}", unit);
  return rv;
}

/* The gaps between the request's text responses (the per-request view of
 * itl_pooled), AIPerf's inter_chunk_latency: as there, a gap of 0 between
 * responses that share an arrival time is left out (docs/metrics.md,
 * "Fidelity"). */
static int inter_chunk(tp_buf *out, bool *first, const tp_record *r) {
  uint32_t i0, i1;
  if (!tp_request_text_span(r, &i0, &i1)) return 0;
  uint32_t seen = 0;
  for (uint32_t i = i0 + 1; i <= i1; i++) seen += r->resp_ns[i] > r->resp_ns[i - 1];
  if (!seen) return 0; /* all at one time: no gap was seen */
  const tp_metric *row = tp_metric_find("itl_pooled");
  int rv = tp_buf_printf(out, "%s\"inter_chunk_latency\":{\"value\":[", *first ? "" : ",");
  *first = false;
  bool any = false;
  for (uint32_t i = i0 + 1; i <= i1 && rv == 0; i++) {
    if (r->resp_ns[i] <= r->resp_ns[i - 1]) continue;
    if (any) rv = tp_buf_append(out, ",", 1);
    any = true;
    if (!rv) rv = json_num(out, (double)(r->resp_ns[i] - r->resp_ns[i - 1]) / (double)TP_NS_PER_MS);
  }
  if (!rv) rv = tp_buf_printf(out, "],\"unit\":\"%s\"}", row ? tp_unit_aiperf(row->unit) : "ms");
  return rv;
}

/* A successful request's figures: each per-request registry row with an
 * AIPerf key that the request has. */
static int metrics_ok(tp_buf *out, const tp_record *r, const tp_req_metrics *m, bool streaming) {
  size_t n;
  const tp_metric *rows = tp_metrics(&n);
  bool first = true;
  int rv = tp_buf_append(out, "{", 1);
  for (size_t i = 0; i < n && rv == 0; i++) {
    const tp_metric *row = &rows[i];
    double v;
    if (!row->aiperf_key || (!streaming && (row->flags & TP_MF_STREAMING))) continue;
    if (!tp_request_value(m, row, &v)) continue;
    rv = metric_value(out, &first, row->aiperf_key, v, tp_unit_aiperf(row->unit));
  }
  if (!rv && streaming) rv = inter_chunk(out, &first, r);
  if (!rv) rv = tp_buf_append(out, "}", 1);
  return rv;
}

/* A failed request: AIPerf's error_isl when its input was counted (else no
 * metric: an empty object, as AIPerf's record model wants a dict there and
 * its loader refuses null), and the error: the gRPC status as the code when
 * there was one, the class as the type (the words of the report), the
 * message. */
static int failed(tp_buf *out, const tp_record *r) {
  const tp_metric *isl = tp_metric_find("input_tokens");
  bool first = true;
  int rv = tp_buf_append(out, "{", 1);
  if (!rv && r->input_tokens >= 0 && isl)
    rv = metric_value(out, &first, "error_isl", (double)r->input_tokens, tp_unit_aiperf(isl->unit));
  if (!rv) rv = tp_buf_append(out, "}", 1);
  if (!rv) rv = tp_buf_append_str(out, ",\"error\":{\"code\":");
  if (!rv) rv = r->grpc_status >= 0 ? tp_buf_printf(out, "%d", r->grpc_status) : tp_buf_append_str(out, "null");
  const char *type = r->err_class == TP_ERRCLASS_NONE ? "unfinished" : tp_error_class_name(r->err_class);
  if (!rv) rv = tp_buf_append_str(out, ",\"type\":");
  if (!rv) rv = tp__json_str(out, type, strlen(type));
  const char *msg = r->err_msg && *r->err_msg ? r->err_msg : r->err_class == TP_ERRCLASS_NONE ? "no final response" : "";
  if (!rv) rv = tp_buf_append_str(out, ",\"message\":");
  if (!rv) rv = tp__json_str(out, msg, strlen(msg));
  if (!rv) rv = tp_buf_append(out, "}", 1);
  return rv;
}

/* key (its punctuation included) then v. */
static int key_u64(tp_buf *out, const char *key, uint64_t v) {
  int rv = tp_buf_append_str(out, key);
  return rv ? rv : tp__json_u64(out, v);
}

/* The metadata AIPerf gives a request, from what tokperf knows of it;
 * numbers without printf, a line being written per request. */
static int metadata(tp_buf *out, const tp_record *r, const char *id_prefix, uint64_t mono, uint64_t wall) {
#define W(ts) tp_export_wall_ns(mono, wall, (ts))
  uint64_t start = W(r->sent_ns ? r->sent_ns : r->planned_ns);
  uint64_t end = r->done_ns ? W(r->done_ns) : start;
  /* A session's turns share its number; a single request is numbered by
   * its place in the level. */
  uint64_t session_num = r->session ? r->session - 1 : r->seq;
  int rv = key_u64(out, "{\"metadata\":{\"session_num\":", session_num);
  /* The id the request went out with (x-request-id, as AIPerf sends its
   * own as X-Request-ID). */
  if (!rv && id_prefix) {
    char id[96];
    snprintf(id, sizeof(id), "%s%" PRIu64, id_prefix, r->seq);
    rv = tp_buf_append_str(out, ",\"x_request_id\":");
    if (!rv) rv = tp__json_str(out, id, strlen(id));
  }
  if (!rv) rv = key_u64(out, ",\"request_num\":", r->seq);
  if (!rv) rv = key_u64(out, ",\"turn_index\":", r->turn);
  if (!rv) rv = key_u64(out, ",\"request_start_ns\":", start);
  if (!rv) rv = r->first_resp_ns ? key_u64(out, ",\"request_ack_ns\":", W(r->first_resp_ns))
                                 : tp_buf_append_str(out, ",\"request_ack_ns\":null");
  if (!rv) rv = key_u64(out, ",\"request_end_ns\":", end);
  if (!rv) rv = key_u64(out, ",\"worker_id\":\"rank_", r->rank);
  if (!rv)
    rv = tp_buf_append_str(out, "\",\"record_processor_id\":\"tokperf\",\"benchmark_phase\":\"profiling\","
                                "\"was_cancelled\":false,\"cancellation_time_ns\":null},\"metrics\":");
#undef W
  return rv;
}

int tp__aiperf_records(tp_buf *out, const tp__sink *sk, const tp_export_level *lv, bool streaming,
                       uint64_t anchor_mono_ns, uint64_t anchor_wall_ns) {
  size_t *idx;
  size_t k = tp__order_by_send(lv->reqs, lv->n, tp__measured, &idx);
  if (k == SIZE_MAX) return TP_ENOMEM;
  int rv = 0;
  for (size_t j = 0; j < k && rv == 0; j++) {
    tp_record full;
    rv = tp__whole(&lv->reqs[idx[j]], &full);
    if (rv) break;
    tp_req_metrics m;
    tp_request_metrics(&full, &m);
    rv = metadata(out, &full, lv->id_prefix, anchor_mono_ns, anchor_wall_ns);
    if (!rv) rv = m.ok ? metrics_ok(out, &full, &m, streaming) : failed(out, &full);
    if (!rv && m.ok) rv = tp_buf_append_str(out, ",\"error\":null");
    if (!rv) rv = tp_buf_append(out, "}\n", 2);
    if (!rv) rv = tp__sink_spill(out, sk);
  }
  free(idx);
  return rv;
}

int tp_export_aiperf_records(tp_buf *out, const tp_export_level *lv, bool streaming, uint64_t anchor_mono_ns,
                             uint64_t anchor_wall_ns) {
  return tp__aiperf_records(out, NULL, lv, streaming, anchor_mono_ns, anchor_wall_ns);
}

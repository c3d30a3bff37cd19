/* vLLM's per-request arrays of one level (tp_export_vllm_requests): what
 * `vllm bench serve` writes from its RequestFuncOutput list
 * (vllm/benchmarks/serve.py, benchmark()), filled from the records by
 * vLLM's client logic (vllm/benchmarks/lib/endpoint_request_func.py):
 * every figure of a request comes from tp_request_metrics, the one
 * computation per request, and its chunks are the responses up to the
 * last one with choices (tp_record.n_choice_resp). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "metrics/tp_request.h"
#include "tp_export_internal.h"
#include "util/tp_utf8.h"

/* Seconds of a span in ns; 0 when either end did not happen (vLLM's
 * RequestFuncOutput defaults). */
static double span_s(uint64_t from, uint64_t to) {
  return from && to && to >= from ? (double)(to - from) / 1e9 : 0.0;
}

/* vLLM's prompt_len: the server's usage.prompt_tokens when the stream
 * carried one, else the prompt's own length (the client's count); 0 when
 * neither was counted. */
static json_int_t prompt_len(const tp_record *r) {
  if (r->server_input_tokens >= 0) return r->server_input_tokens;
  int64_t c = r->server_counts & TP_RECORD_SERVER_INPUT ? r->client_input_tokens : r->input_tokens;
  return c >= 0 ? c : 0;
}

/* The error vLLM keeps of a failed request; tokperf's class and message
 * stand for aiohttp's reason or traceback. */
static json_t *error_of(const tp_record *r) {
  const char *cls = tp_error_class_name(r->err_class);
  if (r->err_class == TP_ERRCLASS_NONE) cls = "unfinished";
  char *s = NULL;
  if (r->err_msg && *r->err_msg) {
    size_t n = strlen(cls) + strlen(r->err_msg) + 3;
    s = malloc(n);
    if (s) snprintf(s, n, "%s: %s", cls, r->err_msg);
  }
  json_t *v = json_string(s ? s : cls);
  free(s);
  /* A message that is not UTF-8 (a server's bytes): the class alone. */
  return v ? v : json_string(cls);
}

/* The generated text as a JSON string; invalid UTF-8 replaced (U+FFFD). */
static json_t *text_of(const tp_record *r) {
  size_t len;
  const char *t = tp__rec_text(r, &len);
  json_t *v = json_stringn(t, len);
  if (v) return v;
  tp_buf b;
  tp_buf_init(&b);
  for (size_t i = 0; i < len;) {
    size_t ok = tp_utf8_valid_prefix((const uint8_t *)t + i, len - i);
    tp_buf_append(&b, t + i, ok);
    i += ok;
    if (i < len) {
      tp_buf_append(&b, "\xef\xbf\xbd", 3);
      i++;
    }
  }
  v = json_stringn(b.data ? (const char *)b.data : "", b.len);
  tp_buf_fini(&b);
  return v;
}

int tp_export_vllm_requests(const tp_export_level *lv, bool open_loop, char **out) {
  *out = NULL;
  /* Where vLLM's requests arrive: at their planned time in an open loop,
   * all at the benchmark's start with --request-rate inf (its tasks are
   * made at once and wait on the concurrency semaphore). */
  uint64_t t0 = 0;
  for (size_t i = 0; i < lv->n; i++) {
    const tp_record *r = lv->reqs[i].rec;
    if (tp__measured(&lv->reqs[i]) && r->planned_ns && (!t0 || r->planned_ns < t0)) t0 = r->planned_ns;
  }
  json_t *o = json_object();
  json_t *in = json_array(), *outl = json_array(), *ttfts = json_array(), *itls = json_array(),
         *lat = json_array(), *starts = json_array(), *queue = json_array(), *texts = json_array(),
         *errs = json_array();
  int rv = o && in && outl && ttfts && itls && lat && starts && queue && texts && errs ? 0 : TP_ENOMEM;
  /* In the order the prompts were given (vLLM gathers its tasks in input
   * order): the record's index. */
  for (size_t i = 0; i < lv->n && !rv; i++) {
    if (!tp__measured(&lv->reqs[i])) continue;
    tp_record full;
    rv = tp__whole(&lv->reqs[i], &full);
    if (rv) break;
    tp_req_metrics m;
    tp_request_metrics(&full, &m);
    /* vLLM's chunks: the responses up to the last one with choices (all
     * of them where the API marks none). */
    uint32_t nc = full.n_choice_resp ? full.n_choice_resp : full.n_resp;
    if (!full.resp_ns) nc = 0;
    json_t *gaps = json_array();
    for (uint32_t k = 1; k < nc && gaps; k++)
      json_array_append_new(gaps, json_real(span_s(full.resp_ns[k - 1], full.resp_ns[k])));
    double ttft = nc ? span_s(full.sent_ns, full.resp_ns[0]) : 0.0;
    uint64_t arrive = open_loop ? full.planned_ns : t0;
    json_array_append_new(in, json_integer(prompt_len(&full)));
    /* A failed request: vLLM's output length 0, latency 0 and no text
     * (its loop never finished), its TTFT and gaps as far as the stream
     * went. */
    json_array_append_new(outl, json_integer(m.ok ? (json_int_t)m.vllm_output_tokens : 0));
    json_array_append_new(ttfts, json_real(m.ok && m.vllm_ttft_ms >= 0 ? m.vllm_ttft_ms / 1e3 : ttft));
    json_array_append_new(itls, gaps ? gaps : json_array());
    json_array_append_new(lat, json_real(m.ok && m.vllm_e2el_ms >= 0 ? m.vllm_e2el_ms / 1e3 : 0.0));
    json_array_append_new(starts, json_real((double)full.sent_ns / 1e9));
    json_array_append_new(queue, json_real(span_s(arrive, full.sent_ns)));
    json_array_append_new(texts, m.ok ? text_of(&full) : json_string(""));
    json_array_append_new(errs, m.ok ? json_string("") : error_of(&full));
  }
  if (!rv) {
    json_object_set(o, "input_lens", in);
    json_object_set(o, "output_lens", outl);
    json_object_set(o, "ttfts", ttfts);
    json_object_set(o, "itls", itls);
    json_object_set(o, "latencies", lat);
    json_object_set(o, "start_times", starts);
    json_object_set(o, "queue_times", queue);
    json_object_set(o, "generated_texts", texts);
    json_object_set(o, "errors", errs);
    *out = json_dumps(o, JSON_COMPACT);
    if (!*out) rv = TP_ENOMEM;
  }
  json_decref(in);
  json_decref(outl);
  json_decref(ttfts);
  json_decref(itls);
  json_decref(lat);
  json_decref(starts);
  json_decref(queue);
  json_decref(texts);
  json_decref(errs);
  json_decref(o);
  return rv;
}

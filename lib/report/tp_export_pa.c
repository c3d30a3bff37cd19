/* perf_analyzer's profile export (tp_export.h): one experiment per level. */
#include "tp_export_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "report/tp_report_fidelity.h"

static bool measured_ok(const tp_export_request *q) {
  return tp__measured(q) && tp_record_ok(q->rec);
}

/* How a response is written: Triton's {"text_output"}, or what an OpenAI
 * server sent, as perf_analyzer keeps it under "response". */
typedef struct pa_api {
  enum { PA_TRITON, PA_CHAT, PA_COMPLETIONS } kind;
  bool streaming, cumulative;
  const char *model;
} pa_api;

static pa_api pa_api_of(const tp_config *cfg) {
  pa_api a = {PA_TRITON, true, false, ""};
  if (!cfg) return a;
  a.kind = cfg->server.service_kind == TP_SERVICE_OPENAI_CHAT          ? PA_CHAT
           : cfg->server.service_kind == TP_SERVICE_OPENAI_COMPLETIONS ? PA_COMPLETIONS
                                                                       : PA_TRITON;
  a.streaming = cfg->server.streaming;
  a.cumulative = cfg->server.cumulative_text;
  a.model = cfg->server.model ? cfg->server.model : "";
  return a;
}

/* b moved back to the first byte of the UTF-8 character it falls inside,
 * so that neighbouring pieces split text only between characters (each is
 * written as a JSON string, which cannot hold half a character). */
static size_t char_start(const unsigned char *t, size_t len, size_t b) {
  if (b >= len) return len;
  for (int k = 0; k < 3 && b > 0 && (t[b] & 0xC0) == 0x80; k++) b--;
  return b;
}

int tp__pa_piece(const tp_record *r, uint32_t i, bool cumulative, tp__piece *pc) {
  pc->text = "";
  pc->len = 0;
  pc->reasoning = false;
  if (!r->resp_text_at || i >= r->n_resp) return 0;
  uint32_t v = r->resp_text_at[i];
  if (v == TP_RECORD_NO_TEXT) return 0;
  bool rs = (v & TP_RECORD_AT_REASONING) != 0;
  const tp_buf *b = rs ? &r->reasoning : &r->text;
  if (!b->data) return 1;
  /* It ends where the next piece of the same buffer starts.  A response
   * is passed over only by the scans from the last piece of each buffer
   * before it, so a whole request's scans stay linear. */
  size_t end = b->len;
  for (uint32_t j = i + 1; j < r->n_resp; j++) {
    uint32_t w = r->resp_text_at[j];
    if (w != TP_RECORD_NO_TEXT && ((w & TP_RECORD_AT_REASONING) != 0) == rs) {
      end = w & ~TP_RECORD_AT_REASONING;
      break;
    }
  }
  size_t start = cumulative ? 0 : (v & ~TP_RECORD_AT_REASONING);
  start = char_start(b->data, b->len, start);
  end = char_start(b->data, b->len, end);
  pc->text = (const char *)b->data + start;
  pc->len = end > start ? end - start : 0;
  pc->reasoning = rs;
  return 1;
}

/* Response i's own text when the record did not keep where pieces begin:
 * the whole text on the first response that carried text, as before the
 * record kept them. */
static void whole_on_first(const tp_record *r, uint32_t i, bool *seen, tp__piece *pc) {
  pc->text = "";
  pc->len = 0;
  pc->reasoning = false;
  if (*seen || !r->first_token_ns || r->resp_ns[i] != r->first_token_ns) return;
  *seen = true;
  pc->text = tp__rec_text(r, &pc->len);
}

/* The JSON an OpenAI server sends for one response: a streamed chunk
 * (chat.completion.chunk with the piece in choices[0].delta, text_completion
 * with it in choices[0].text) or, without streaming, the whole body.  The
 * first chat chunk names the role, as servers do; the finish reason is not
 * kept per request, so it is null. */
static int openai_json(tp_buf *o, const pa_api *api, const tp_record *r, uint64_t created_s, bool first,
                       const tp__piece *pc) {
  bool chat = api->kind == PA_CHAT;
  /* The server's own id where it gave one (the chunks' id), else one made
   * in its form. */
  char id[TP_RECORD_SERVER_ID_MAX + 32];
  if (r->server_id[0])
    snprintf(id, sizeof(id), "%s", r->server_id);
  else
    snprintf(id, sizeof(id), "%s-%" PRIu64, chat ? "chatcmpl" : "cmpl", r->seq);
  int rv = tp_buf_append_str(o, "{\"id\":");
  if (!rv) rv = tp__json_str(o, id, strlen(id));
  if (!rv)
    rv = tp_buf_printf(o, ",\"object\":\"%s\",\"created\":%" PRIu64 ",\"model\":",
                       !chat            ? "text_completion"
                       : api->streaming ? "chat.completion.chunk"
                                        : "chat.completion",
                       created_s);
  if (!rv) rv = tp__json_str(o, api->model, strlen(api->model));
  if (!rv) rv = tp_buf_append_str(o, ",\"choices\":[{\"index\":0,");
  if (!rv && chat) rv = tp_buf_append_str(o, api->streaming ? "\"delta\":{" : "\"message\":{");
  bool role = chat && (first || !api->streaming);
  if (!rv && role) rv = tp_buf_append_str(o, "\"role\":\"assistant\"");
  /* The answer's key is always there for completions and a chat message;
   * a streamed chat delta has it when it carries answer text or is the
   * role's chunk. */
  bool key = !chat || !api->streaming || role || (pc->len && !pc->reasoning);
  if (!rv && key) {
    rv = tp_buf_append_str(o, role ? ",\"content\":" : chat ? "\"content\":" : "\"text\":");
    if (!rv) rv = tp__json_str(o, pc->reasoning ? "" : pc->text, pc->reasoning ? 0 : pc->len);
  }
  if (!rv && pc->reasoning && pc->len) {
    rv = tp_buf_append_str(o, key || role ? ",\"reasoning_content\":" : "\"reasoning_content\":");
    if (!rv) rv = tp__json_str(o, pc->text, pc->len);
  }
  if (!rv && chat) rv = tp_buf_append(o, "}", 1);
  if (!rv && !chat) rv = tp_buf_append_str(o, ",\"logprobs\":null");
  if (!rv) rv = tp_buf_append_str(o, ",\"finish_reason\":null}]}");
  return rv;
}

int tp__pa_openai_payload(tp_buf *o, const tp_config *cfg, const tp_record *r, uint64_t created_s, uint32_t i,
                          const tp__piece *pc) {
  pa_api api = pa_api_of(cfg);
  if (api.kind == PA_TRITON) return TP_EINVAL;
  /* Streamed, perf_analyzer keeps the bytes of the event as they came
   * ("data: ...", the blank line); the end-of-stream sentinel arrives with
   * the last chunk. */
  int rv = api.streaming ? tp_buf_append_str(o, "data: ") : 0;
  if (!rv) rv = openai_json(o, &api, r, created_s, i == 0, pc);
  if (!rv && api.streaming) rv = tp_buf_append_str(o, "\n\n");
  if (!rv && api.streaming && i + 1 == r->n_resp) rv = tp_buf_append_str(o, "data: [DONE]\n\n");
  return rv;
}

/* The end of the group of responses that starts at i: those that share
 * response i's arrival time (docs/metrics.md, "Fidelity"). */
static uint32_t group_end(const tp_record *r, uint32_t i) {
  uint32_t j = i + 1;
  while (j < r->n_resp && r->resp_ns[j] == r->resp_ns[i]) j++;
  return j;
}

/* "response_outputs" of one request: per response its own text, as
 * {"text_output"} (Triton) or {"response"} (OpenAI).  Responses that
 * share an arrival time are one response, as perf_analyzer records the
 * events of one read: the Triton texts joined, the OpenAI events one after
 * another in one string (GenAI-Perf splits such a response into its
 * events and joins their texts).  A request whose responses all came at
 * one time then has one response, which GenAI-Perf gives no inter-token
 * latency, where several of one time would make it divide by zero. */
static int pa_outputs(tp_buf *out, tp_buf *scratch, const tp_config *cfg, const tp_record *r,
                      uint64_t created_s) {
  pa_api api = pa_api_of(cfg);
  bool seen = false;
  int rv = 0;
  for (uint32_t i = 0; i < r->n_resp && rv == 0;) {
    if (i) rv = tp_buf_append(out, ",", 1);
    uint32_t end = group_end(r, i);
    tp_buf_reset(scratch);
    for (; i < end && rv == 0; i++) {
      tp__piece pc;
      if (r->resp_text_at)
        tp__pa_piece(r, i, api.cumulative, &pc);
      else
        whole_on_first(r, i, &seen, &pc);
      if (api.kind != PA_TRITON)
        rv = tp__pa_openai_payload(scratch, cfg, r, created_s, i, &pc);
      else if (pc.len) {
        /* Cumulative text: each response holds all so far; the last wins. */
        if (api.cumulative) tp_buf_reset(scratch);
        rv = tp_buf_append(scratch, pc.text, pc.len);
      }
    }
    if (!rv) rv = tp_buf_append_str(out, api.kind == PA_TRITON ? "{\"text_output\":" : "{\"response\":");
    if (!rv) rv = tp__json_str(out, scratch->len ? (const char *)scratch->data : "", scratch->len);
    if (!rv) rv = tp_buf_append(out, "}", 1);
  }
  return rv;
}

/* One --extra-inputs entry into obj as the OpenAI client reads it (all of
 * them into one object, which then goes over the body): a JSON object
 * merged in, or NAME:VALUE with the value as JSON when it parses and as a
 * string otherwise.  Returns 0, or -1 (left out: the run refused
 * such an entry before it sent anything). */
static int add_extra(json_t *obj, const char *s) {
  const char *t = s + strspn(s, " \t");
  if (*t == '{') {
    json_t *j = json_loads(t, 0, NULL);
    int rv = json_is_object(j) ? json_object_update_recursive(obj, j) : -1;
    json_decref(j);
    return rv;
  }
  const char *colon = strchr(s, ':');
  if (!colon || colon == s) return -1;
  char *name = malloc((size_t)(colon - s) + 1);
  if (!name) return -1;
  memcpy(name, s, (size_t)(colon - s));
  name[colon - s] = 0;
  json_t *v = json_loads(colon + 1, JSON_DECODE_ANY, NULL);
  if (!v) v = json_string(colon + 1);
  int rv = v ? json_object_set_new(obj, name, v) : -1;
  free(name);
  return rv;
}

/* The JSON body the OpenAI client sent for r, into body: built by the
 * client's rules and in its member order (model, the text as one user
 * message or the prompt, max_tokens, stream, stream_options, min_tokens
 * and ignore_eos, then --extra-inputs over them), so that it is the bytes
 * sent.  Returns 0, TP_ENOMEM, or TP_EINVAL when the text is not UTF-8
 * (a body the client could not have sent). */
static int openai_body(tp_buf *body, const pa_api *api, const tp_config *cfg, const tp_export_request *q,
                       const tp_record *r) {
  tp_buf t;
  tp_buf_init(&t);
  int rv = 0;
  for (int k = 0; k < 3 && !rv; k++)
    if (q->head[k]) rv = tp_buf_append(&t, q->head[k], q->head_len[k]);
  if (!rv && q->prompt) rv = tp_buf_append(&t, q->prompt, q->prompt_len);
  json_t *text = rv ? NULL : json_stringn(t.len ? (const char *)t.data : "", t.len);
  tp_buf_fini(&t);
  if (!text) return rv ? rv : TP_EINVAL;
  json_t *o = json_object();
  int bad = !o;
  if (!bad && cfg && cfg->server.model && *cfg->server.model)
    bad = json_object_set_new(o, "model", json_string(cfg->server.model));
  if (!bad && api->kind == PA_CHAT)
    bad = json_object_set_new(o, "messages", json_pack("[{s:s, s:O}]", "role", "user", "content", text));
  else if (!bad)
    bad = json_object_set(o, "prompt", text);
  json_decref(text);
  if (!bad && r->max_tokens) bad = json_object_set_new(o, "max_tokens", json_integer(r->max_tokens));
  if (!bad) bad = json_object_set_new(o, "stream", json_boolean(api->streaming));
  if (!bad && api->streaming && !(cfg && cfg->server.no_usage))
    bad = json_object_set_new(o, "stream_options", json_pack("{s:b}", "include_usage", 1));
  if (!bad && cfg && cfg->prompts.output_tokens_deterministic && r->max_tokens) {
    bad = json_object_set_new(o, "min_tokens", json_integer(r->max_tokens));
    if (!bad) bad = json_object_set_new(o, "ignore_eos", json_true());
  }
  json_t *extra = bad ? NULL : json_object();
  for (size_t i = 0; extra && cfg && cfg->server.extra_inputs && i < cfg->server.n_extra_inputs; i++)
    add_extra(extra, cfg->server.extra_inputs[i]);
  if (!bad) bad = !extra || json_object_update_recursive(o, extra);
  json_decref(extra);
  char *js = bad ? NULL : json_dumps(o, JSON_COMPACT);
  json_decref(o);
  rv = js ? tp_buf_append_str(body, js) : TP_ENOMEM;
  free(js);
  return rv;
}

/* "request_inputs" of one request: what perf_analyzer keeps of it.  Triton:
 * the input tensors, text_input and max_tokens; OpenAI: {"payload": the
 * JSON body sent, as a string}, which GenAI-Perf parses for the prompt. */
static int pa_inputs(tp_buf *out, tp_buf *scratch, const tp_config *cfg, const tp_export_request *q,
                     const tp_record *r, uint32_t max_tokens) {
  pa_api api = pa_api_of(cfg);
  if (api.kind != PA_TRITON) {
    tp_buf_reset(scratch);
    int rv = openai_body(scratch, &api, cfg, q, r);
    if (rv != TP_EINVAL) {
      if (!rv) rv = tp_buf_append_str(out, "{\"payload\":");
      if (!rv) rv = tp__json_str(out, (const char *)scratch->data, scratch->len);
      return rv ? rv : tp_buf_append(out, "}", 1);
    }
  }
  int rv = tp_buf_append_str(out, "{\"text_input\":");
  if (!rv) rv = tp__json_sent(out, q);
  if (!rv) rv = tp_buf_append_str(out, ",\"max_tokens\":");
  if (!rv) rv = tp__json_u64(out, max_tokens);
  return rv ? rv : tp_buf_append(out, "}", 1);
}

#define W(ts) tp_export_wall_ns(anchor_mono_ns, anchor_wall_ns, (ts))

/* One request of the experiment. */
static int pa_request(tp_buf *out, tp_buf *scratch, const tp_export_request *q, const tp_level_result *lr,
                      const tp_config *cfg, uint32_t default_max_tokens, bool first, uint64_t anchor_mono_ns,
                      uint64_t anchor_wall_ns) {
  tp_record full;
  int rv = tp__whole(q, &full);
  if (rv) return rv;
  const tp_record *r = &full;
  uint32_t max_tokens = q->max_tokens ? q->max_tokens : default_max_tokens;
  rv = tp_buf_append_str(out, first ? "{\"timestamp\":" : ",{\"timestamp\":");
  if (!rv) rv = tp__json_u64(out, W(r->sent_ns));
  if (!rv) rv = tp_buf_append_str(out, ",\"request_inputs\":");
  if (!rv) rv = pa_inputs(out, scratch, cfg, q, r, max_tokens);
  if (!rv) rv = tp_buf_append_str(out, ",\"response_timestamps\":[");
  /* One time per group of responses that share it (pa_outputs). */
  for (uint32_t i = 0; i < r->n_resp && rv == 0; i = group_end(r, i)) {
    if (i) rv = tp_buf_append(out, ",", 1);
    if (!rv) rv = tp__json_u64(out, W(r->resp_ns[i]));
  }
  if (!rv) rv = tp_buf_append_str(out, "],\"response_outputs\":[");
  if (!rv) rv = pa_outputs(out, scratch, cfg, r, W(r->sent_ns) / 1000000000u);
  if (!rv) rv = tp_buf_append(out, "]", 1);
  /* A distributed run says which rank sent it (docs/scale-out.md). */
  if (!rv && lr->ranks) rv = tp_buf_printf(out, ",\"rank\":%" PRIu32, r->rank);
  if (!rv) rv = tp_buf_append(out, "}", 1);
  return rv;
}

/* v as Python's repr of a float writes it: the fewest digits that read
 * back to v, and ".0" on a whole number (20.0, 0.0); positional, as
 * Python writes any rate from 1e-4 to 1e16.  perf_analyzer writes
 * the rate as a double, and GenAI-Perf finds the experiment by that text
 * (str() of the value read back against its own f"{rate}"): an integer 20
 * is not found as 20.0. */
static void py_float(char *buf, size_t len, double v) {
  for (int prec = 0; prec <= 17; prec++) {
    snprintf(buf, len, "%.*f", prec, v);
    if (strtod(buf, NULL) == v) break;
  }
  if (!strpbrk(buf, ".n")) snprintf(buf + strlen(buf), len - strlen(buf), ".0");
}

int tp__pa_experiment(tp_buf *out, const tp__sink *sk, const tp_export_level *lv, const tp_config *cfg,
                      uint32_t default_max_tokens, uint64_t anchor_mono_ns, uint64_t anchor_wall_ns) {
  const tp_level_result *lr = lv->lr;
  const tp_export_request *reqs = lv->reqs;
  size_t n = lv->n;
  size_t *idx;
  size_t k = tp__order_by_send(reqs, n, measured_ok, &idx);
  if (k == SIZE_MAX) return TP_ENOMEM;
  /* perf_analyzer writes {"mode": "concurrency", "value": N} or, with no
   * concurrency, {"mode": "request_rate", "value": rate}; a trace has no
   * rate of its own and is written as request_rate 0. */
  char rate[40];
  py_float(rate, sizeof(rate), lr->load_mode == TP_LOAD_RATE && isfinite(lr->request_rate) ? lr->request_rate : 0.0);
  int rv = lr->load_mode == TP_LOAD_CONCURRENCY
               ? tp_buf_printf(
                     out, "{\"experiment\":{\"mode\":\"concurrency\",\"value\":%" PRIu32 "},\"requests\":[",
                     lr->concurrency)
               : tp_buf_printf(out, "{\"experiment\":{\"mode\":\"request_rate\",\"value\":%s},\"requests\":[",
                               rate);
  tp_buf scratch;
  tp_buf_init(&scratch);
  for (size_t j = 0; j < k && rv == 0; j++) {
    rv = pa_request(out, &scratch, &reqs[idx[j]], lr, cfg, default_max_tokens, j == 0, anchor_mono_ns,
                    anchor_wall_ns);
    if (!rv) rv = tp__sink_spill(out, sk);
  }
  tp_buf_fini(&scratch);
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
  if (!rv) rv = tp_buf_append(out, "]", 1);
  /* tokperf's own key, only on a level an interruption cut short
   * (perf_analyzer has no such level; its readers skip keys they do not
   * know). */
  if (!rv && lr->partial) {
    rv = tp_buf_printf(out, ",\"tokperf_partial\":{\"ran_s\":%.6g,\"planned_s\":", lr->partial_ran_s);
    if (!rv)
      rv = lr->partial_planned_s > 0 ? tp_buf_printf(out, "%.6g", lr->partial_planned_s)
                                     : tp_buf_append_str(out, "null");
    if (!rv) rv = tp_buf_append_str(out, ",\"planned_requests\":");
    if (!rv)
      rv = lr->partial_planned_requests ? tp__json_u64(out, lr->partial_planned_requests)
                                        : tp_buf_append_str(out, "null");
    if (!rv) rv = tp_buf_append(out, "}", 1);
  }
  /* tokperf's own, last (GenAI-Perf reads none of it): the client's
   * figures for the level. */
  if (!rv) rv = tp__fidelity_export_member(out, lr);
  if (!rv) rv = tp_buf_append(out, "}", 1);
  return rv;
}
#undef W

int tp_export_pa_experiment(tp_buf *out, const tp_export_level *lv, const tp_config *cfg,
                            uint32_t default_max_tokens, uint64_t anchor_mono_ns, uint64_t anchor_wall_ns) {
  return tp__pa_experiment(out, NULL, lv, cfg, default_max_tokens, anchor_mono_ns, anchor_wall_ns);
}

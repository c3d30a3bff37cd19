/* The HTTP/1.1 side's request bodies: OpenAI completions and chat, and
 * Triton generate, read into a request of the timing model. */
#include <jansson.h>

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "mock/tp_mock_http_conn.h"
#include "mock/tp_mock_http_parse.h"
#include "mock/tp_mock_internal.h"
#include "mock/tp_mock_json.h"
#include "mock/tp_mock_sse.h"
#include "util/tp_common.h"
#include "util/tp_timer.h"
#include "tokperf/mock.h"

#define TGI_KEEPALIVE_MS 15000

/* ---- request bodies ---------------------------------------------------------------------- */

/* The fault a request asks for: body field (or, for generate, a key in
 * "parameters"), then the header, which wins. */
static int request_fault(const tp_mock_http_req *h, json_t *body, json_t *params, bool *have,
                         tp_mock_fault *f, int64_t *after, char *err, size_t errlen) {
  *have = false;
  *after = -1;
  char ferr[400];
  json_t *jf = json_object_get(body, "tokperf_fault");
  if (!jf && params) jf = json_object_get(params, "tokperf_fault");
  if (jf) {
    if (!json_is_string(jf)) {
      tp_seterr(err, errlen, "tokperf_fault must be a string");
      return TP_EINVAL;
    }
    if (tp_mock_fault_parse(json_string_value(jf), json_string_length(jf), f, ferr, sizeof(ferr))) {
      tp_seterr(err, errlen, "tokperf_fault: %s", ferr);
      return TP_EINVAL;
    }
    *have = true;
  }
  const tp_mock_http_span *hv = tp_mock_http_header_get(h, "x-tokperf-fault");
  if (hv) {
    if (tp_mock_fault_parse(hv->p, hv->len, f, ferr, sizeof(ferr))) {
      tp_seterr(err, errlen, "X-Tokperf-Fault: %s", ferr);
      return TP_EINVAL;
    }
    *have = true;
  }
  json_t *ja = json_object_get(body, "tokperf_fault_after");
  if (!ja && params) ja = json_object_get(params, "tokperf_fault_after");
  int64_t v;
  if (ja) {
    if (!tp__mock_json_int(ja, &v, true) || v < 0) {
      tp_seterr(err, errlen, "tokperf_fault_after must be a count >= 0");
      return TP_EINVAL;
    }
    *after = v;
  }
  hv = tp_mock_http_header_get(h, "x-tokperf-fault-after");
  if (hv) {
    char num[24];
    size_t n = TP_MIN(hv->len, sizeof(num) - 1);
    memcpy(num, hv->p, n);
    num[n] = 0;
    char *end;
    long long x = strtoll(num, &end, 10);
    if (n == 0 || *end || x < 0) {
      tp_seterr(err, errlen, "X-Tokperf-Fault-After must be a count >= 0");
      return TP_EINVAL;
    }
    *after = x;
  }
  return 0;
}

/* Words of a chat message's content: a string, or parts with "text". */
static void append_content(tp_buf *b, json_t *content) {
  if (json_is_string(content)) {
    tp_buf_append(b, json_string_value(content), json_string_length(content));
  } else if (json_is_array(content)) {
    size_t i;
    json_t *part;
    json_array_foreach(content, i, part) {
      json_t *t = json_object_get(part, "text");
      if (json_is_string(t)) {
        tp_buf_append(b, json_string_value(t), json_string_length(t));
        tp_buf_append(b, "\n", 1);
      }
    }
  }
  tp_buf_append(b, "\n", 1);
}

/* The prompt of an OpenAI request into prompt; NULL, or the 400 message. */
static const char *oai_prompt(json_t *root, bool chat, tp_buf *prompt) {
  if (chat) {
    json_t *msgs = json_object_get(root, "messages");
    if (!json_is_array(msgs) || json_array_size(msgs) == 0) return "'messages' must be a non-empty array";
    size_t i;
    json_t *msg;
    json_array_foreach(msgs, i, msg) append_content(prompt, json_object_get(msg, "content"));
    return NULL;
  }
  json_t *p = json_object_get(root, "prompt");
  if (json_is_array(p) && json_array_size(p) == 1 && json_is_string(json_array_get(p, 0)))
    p = json_array_get(p, 0);
  if (json_is_string(p)) {
    tp_buf_append(prompt, json_string_value(p), json_string_length(p));
  } else if (json_is_array(p) && json_array_size(p) > 0 && json_is_integer(json_array_get(p, 0))) {
    /* Token ids: each counts as one word. */
    size_t i;
    json_t *e;
    json_array_foreach(p, i, e) tp_buf_printf(prompt, "%lld ", (long long)json_integer_value(e));
  } else {
    return "'prompt' must be a string, a list of one string or a list of token ids "
           "(the mock takes one prompt per request)";
  }
  return NULL;
}

/* How an OpenAI request wants its answer streamed. */
typedef struct oai_opts {
  bool stream, include_usage, continuous;
} oai_opts;

/* Token limits and stream options; NULL, or the 400 message. */
static const char *oai_options(json_t *root, bool chat, tp_mock_dialect d, tp_mock_seq_params *sp,
                               oai_opts *o) {
  int64_t v;
  json_t *jm = chat ? json_object_get(root, "max_completion_tokens") : NULL;
  if (!jm || json_is_null(jm)) jm = json_object_get(root, "max_tokens");
  if (jm && !json_is_null(jm)) {
    if (!tp__mock_json_int(jm, &v, true) || v < 0) return "max_tokens must be an integer >= 0";
    sp->max_tokens = tp__mock_clamp_u32(v);
  }
  if (tp__mock_json_int(json_object_get(root, "min_tokens"), &v, true)) sp->min_tokens = tp__mock_clamp_u32(v);
  sp->ignore_eos = json_is_true(json_object_get(root, "ignore_eos"));
  o->stream = json_is_true(json_object_get(root, "stream"));
  json_t *so = json_object_get(root, "stream_options");
  bool has_so = json_is_object(so);
  if (has_so && !o->stream && (d == TP_MOCK_DIALECT_VLLM || d == TP_MOCK_DIALECT_TRTLLM))
    return "Stream options can only be defined when `stream=True`.";
  json_t *iu = has_so ? json_object_get(so, "include_usage") : NULL;
  o->include_usage =
      iu ? json_is_true(iu) : has_so && (d == TP_MOCK_DIALECT_VLLM || d == TP_MOCK_DIALECT_TRTLLM);
  o->continuous = has_so && json_is_true(json_object_get(so, "continuous_usage_stats"));
  return NULL;
}

/* The request's answer settings; false when out of memory. */
static bool oai_setup(hreq *r, tp_mock *m, tp_mock_dialect d, bool chat, const oai_opts *o) {
  r->stream = o->stream;
  /* vLLM-style ids, derived from the request number so runs repeat. */
  uint64_t n = tp_mock_engine_next_number(m->engine);
  snprintf(r->oid, sizeof(r->oid), "%s-%016llx", chat ? "chatcmpl" : "cmpl",
           (unsigned long long)((n + 1) * 0x9e3779b97f4a7c15ULL ^ m->cfg.seed));
  r->job.id = strdup(r->oid);
  r->w.dialect = d;
  r->w.api = chat ? TP_MOCK_API_CHAT : TP_MOCK_API_COMPLETIONS;
  r->w.id = r->oid;
  r->w.model = r->model_name;
  r->w.created = r->created;
  r->w.include_usage = o->include_usage;
  r->w.continuous_usage = o->continuous;
  r->w.reasoning_tokens = m->cfg.reasoning_tokens;
  int64_t ka = m->cfg.sse_keepalive_ms;
  if (ka < 0) ka = d == TP_MOCK_DIALECT_TGI ? TGI_KEEPALIVE_MS : 0;
  r->keepalive_every_ns = (uint64_t)ka * TP_NS_PER_MS;
  return r->job.id != NULL;
}

void tp__mock_http_start_openai(hconn *c, const tp_mock_http_req *h, const uint8_t *body, size_t body_len,
                                api_kind api) {
  tp_mock *m = c->m;
  tp_mock_dialect d = tp__mock_http_dialect(m);
  bool chat = api == API_CHAT;
  char err[512];
  json_error_t je;
  json_t *root = json_loadb((const char *)body, body_len, 0, &je);
  if (!root || !json_is_object(root)) {
    snprintf(err, sizeof(err), "the request body is not a JSON object%s%s", root ? "" : ": ",
             root ? "" : je.text);
    json_decref(root);
    tp__mock_http_oai_error(c, d, 400, err);
    return;
  }
  /* The model: vLLM and trtllm-serve know their served names only; TGI
   * and llama-server answer whatever is asked. */
  const char *model = json_string_value(json_object_get(root, "model"));
  const tp__mock_model *md = model ? tp__mock_find_model(model) : NULL;
  /* --served-model-name: other names the mock serves (tp__mock_find_model
   * resolves NAME=MODEL; a bare NAME is vllm_model). */
  if (model && !md && tp__mock_name_in_list(m->cfg.served_model_name, model))
    md = tp__mock_find_model("vllm_model");
  if (model && !md && (d == TP_MOCK_DIALECT_VLLM || d == TP_MOCK_DIALECT_TRTLLM)) {
    snprintf(err, sizeof(err), "The model `%s` does not exist.", model);
    json_decref(root);
    tp__mock_http_oai_error(c, d, 404, err);
    return;
  }
  if (!md) md = tp__mock_find_model(d == TP_MOCK_DIALECT_TRTLLM ? "ensemble" : "vllm_model");
  tp_buf prompt;
  tp_buf_init(&prompt);
  tp_mock_seq_params sp;
  memset(&sp, 0, sizeof(sp));
  oai_opts o;
  const char *bad = oai_prompt(root, chat, &prompt);
  if (!bad) {
    sp.prompt_tokens = tp_mock_count_words((const char *)prompt.data, prompt.len);
    bad = oai_options(root, chat, d, &sp, &o);
  }
  bool have_fault;
  tp_mock_fault f;
  int64_t after;
  if (!bad && request_fault(h, root, NULL, &have_fault, &f, &after, err, sizeof(err))) bad = err;
  if (bad) {
    json_decref(root);
    tp_buf_fini(&prompt);
    tp__mock_http_oai_error(c, d, 400, bad);
    return;
  }
  hreq *r = tp__mock_hreq_new(c, api);
  char *mname = r ? strdup(model ? model : md->name) : NULL;
  if (!r || !mname) {
    free(r);
    json_decref(root);
    tp_buf_fini(&prompt);
    tp__mock_http_oai_error(c, d, 500, "tokperf mock: out of memory");
    return;
  }
  json_decref(root);
  r->model_name = mname;
  r->job.model = md;
  if (!oai_setup(r, m, d, chat, &o) || !tp__mock_http_job_ids(c, &r->job)) {
    tp__mock_hreq_free(r, TP__MOCK_FAILED);
    tp__mock_http_oai_error(c, d, 500, "tokperf mock: out of memory");
    tp_buf_fini(&prompt);
    return;
  }
  sp.prompt = (const char *)prompt.data;
  sp.prompt_len = prompt.len;
  tp__mock_hreq_start(r, &sp, have_fault, &f, after);
  tp_buf_fini(&prompt);
}

/* A generate key: top level or inside "parameters". */
static json_t *gen_key(json_t *root, json_t *params, const char *k) {
  json_t *v = json_object_get(root, k);
  return v ? v : params ? json_object_get(params, k) : NULL;
}

/* max_tokens (required by an ensemble) and min_tokens of a generate
 * request; NULL, or the 400 message (in err when it names the model). */
static const char *gen_limits(json_t *root, json_t *params, const tp__mock_model *md, tp_mock_seq_params *sp,
                              char *err, size_t errlen) {
  int64_t v;
  json_t *jm = gen_key(root, params, "max_tokens");
  if (jm && !tp__mock_json_int(jm, &v, true)) return "max_tokens must be an integer";
  if (jm) sp->max_tokens = tp__mock_clamp_u32(v);
  if (md->ensemble && !jm) {
    snprintf(err, errlen, "input 'max_tokens' is required for model '%s'", md->name);
    return err;
  }
  if (tp__mock_json_int(gen_key(root, params, "min_tokens"), &v, true) ||
      tp__mock_json_int(gen_key(root, params, "min_length"), &v, true))
    sp->min_tokens = tp__mock_clamp_u32(v);
  return NULL;
}

void tp__mock_http_start_generate(hconn *c, const tp_mock_http_req *h, const tp__mock_model *md,
                                  const uint8_t *body, size_t body_len, bool stream_endpoint) {
  tp_mock *m = c->m;
  char err[512];
  json_error_t je;
  json_t *root = json_loadb((const char *)body, body_len, 0, &je);
  if (!root || !json_is_object(root)) {
    snprintf(err, sizeof(err), "failed to parse the request JSON buffer: %s",
             root ? "not an object" : je.text);
    json_decref(root);
    tp__mock_http_triton_error(c, 400, err);
    return;
  }
  json_t *params = json_object_get(root, "parameters");
  if (params && !json_is_object(params)) params = NULL;
  json_t *ti = gen_key(root, params, "text_input");
  if (json_is_array(ti) && json_array_size(ti) == 1) ti = json_array_get(ti, 0);
  if (!json_is_string(ti)) {
    snprintf(err, sizeof(err), "input 'text_input' is required for model '%s'", md->name);
    json_decref(root);
    tp__mock_http_triton_error(c, 400, err);
    return;
  }
  tp_mock_seq_params sp;
  memset(&sp, 0, sizeof(sp));
  const char *bad = gen_limits(root, params, md, &sp, err, sizeof(err));
  if (bad) {
    json_decref(root);
    tp__mock_http_triton_error(c, 400, bad);
    return;
  }
  sp.ignore_eos = json_is_true(gen_key(root, params, "ignore_eos"));
  bool stream = json_is_true(gen_key(root, params, "stream"));
  bool exclude = json_is_true(gen_key(root, params, "exclude_input_in_output"));
  if (stream && !stream_endpoint) {
    json_decref(root);
    tp__mock_http_triton_error(
        c, 400,
        "generate expects model to produce exactly 1 response, use generate stream for model "
        "that generates various number of responses");
    return;
  }
  bool have_fault;
  tp_mock_fault f;
  int64_t after;
  if (request_fault(h, root, params, &have_fault, &f, &after, err, sizeof(err))) {
    json_decref(root);
    tp__mock_http_triton_error(c, 400, err);
    return;
  }
  hreq *r = tp__mock_hreq_new(c, stream_endpoint ? API_GENERATE_STREAM : API_GENERATE);
  json_t *jid = json_object_get(root, "id");
  const char *id = json_string_value(jid);
  char gen_id[32];
  snprintf(gen_id, sizeof(gen_id), "http-%llu", (unsigned long long)tp_mock_engine_next_number(m->engine));
  if (!r || !(r->model_name = strdup(md->name)) || !(r->job.id = strdup(id ? id : gen_id))) {
    if (r) tp__mock_hreq_free(r, TP__MOCK_FAILED);
    json_decref(root);
    tp__mock_http_triton_error(c, 500, "tokperf mock: out of memory");
    return;
  }
  r->has_id = id != NULL;
  r->job.model = md;
  if (!tp__mock_http_job_ids(c, &r->job)) {
    tp__mock_hreq_free(r, TP__MOCK_FAILED);
    json_decref(root);
    tp__mock_http_triton_error(c, 500, "tokperf mock: out of memory");
    return;
  }
  /* generate_stream streams only when the model is asked to (the stream
   * input); otherwise its one response is one event. */
  r->exclude_input = exclude;
  const char *prompt = json_string_value(ti);
  size_t plen = json_string_length(ti);
  sp.prompt_tokens = tp_mock_count_words(prompt, plen);
  sp.prompt = prompt;
  sp.prompt_len = plen;
  /* Non-streaming answers repeat the prompt unless excluded, as both
   * backends do. */
  r->stream = stream;
  if (!stream && !exclude) tp_buf_append(&r->text, prompt, plen);
  tp__mock_hreq_start(r, &sp, have_fault, &f, after);
  json_decref(root);
}

#include "tp_openai.h"
#include "tokperf/tokperf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TP_HTTP_API_NAME(e, name, path) \
  case e: return name;
const char *tp_http_api_name(tp_http_api api) {
  switch (api) {
    TP_HTTP_APIS(TP_HTTP_API_NAME)
    default: break;
  }
  return "?";
}
#undef TP_HTTP_API_NAME

int tp_http_api_parse(const char *s, tp_http_api *out) {
#define TP_HTTP_API_MATCH(e, name, path) \
  if (strcmp(s, name) == 0) {            \
    *out = e;                            \
    return 0;                            \
  }
  TP_HTTP_APIS(TP_HTTP_API_MATCH)
#undef TP_HTTP_API_MATCH
  return TP_EINVAL;
}

/* Percent-encodes all but RFC 3986 unreserved characters. */
static size_t pct_encode(char *out, size_t outlen, const char *s) {
  static const char hex[] = "0123456789ABCDEF";
  size_t o = 0;
  for (; *s; s++) {
    unsigned char c = (unsigned char)*s;
    bool plain = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
                 c == '.' || c == '_' || c == '~';
    size_t need = plain ? 1 : 3;
    if (o + need >= outlen) break;
    if (plain) {
      out[o++] = (char)c;
    } else {
      out[o++] = '%';
      out[o++] = hex[c >> 4];
      out[o++] = hex[c & 15];
    }
  }
  if (outlen) out[o < outlen ? o : outlen - 1] = 0;
  return o;
}

void tp_http_api_path(tp_http_api api, const char *model, const char *version, bool streaming, char *out,
                      size_t outlen) {
  if (!outlen) return;
  if (api != TP_HTTP_API_TRITON_GENERATE) {
    snprintf(out, outlen, "%s", api == TP_HTTP_API_OPENAI_CHAT ? "/v1/chat/completions" : "/v1/completions");
    return;
  }
  char m[256], v[64];
  pct_encode(m, sizeof(m), model ? model : "");
  pct_encode(v, sizeof(v), version ? version : "");
  snprintf(out, outlen, "/v2/models/%s%s%s/%s", m, v[0] ? "/versions/" : "", v,
           streaming ? "generate_stream" : "generate");
}

/* ---- request bodies ------------------------------------------------------ */

/* json_object_set_new that reports failure (a NULL value or no memory). */
static int set(json_t *o, const char *key, json_t *v) {
  if (!v) return TP_ENOMEM;
  return json_object_set_new(o, key, v) ? TP_ENOMEM : 0;
}

/* The value chat messages stand for: the array itself
 * for chat, else its text contents joined by "\n" as a string.  NULL when
 * the bytes are not a list of messages. */
static json_t *messages_prompt(const tp_openai_opts *o, const char *s, size_t len) {
  json_t *msgs = json_loadb(s, len, 0, NULL);
  if (!json_is_array(msgs) || json_array_size(msgs) == 0) {
    json_decref(msgs);
    return NULL;
  }
  if (o->api == TP_HTTP_API_OPENAI_CHAT) return msgs;
  tp_buf b;
  tp_buf_init(&b);
  size_t i;
  json_t *m;
  json_array_foreach(msgs, i, m) {
    json_t *c = json_object_get(m, "content");
    if (i) tp_buf_append(&b, "\n", 1);
    if (json_is_string(c)) tp_buf_append(&b, json_string_value(c), json_string_length(c));
    size_t k;
    json_t *part;
    bool first = true;
    if (json_is_array(c)) {
      json_array_foreach(c, k, part) {
        json_t *t = json_object_get(part, "text");
        if (!json_is_string(t)) continue;
        if (!first) tp_buf_append(&b, "\n", 1);
        tp_buf_append(&b, json_string_value(t), json_string_length(t));
        first = false;
      }
    }
  }
  json_t *text = json_stringn(b.len ? (const char *)b.data : "", b.len);
  tp_buf_fini(&b);
  json_decref(msgs);
  return text;
}

static int build_openai(json_t *body, const tp_openai_opts *o, json_t *prompt, uint32_t max_tokens,
                        uint32_t min_tokens) {
  int rv = 0;
  if (o->model) rv = set(body, "model", json_string(o->model));
  if (rv) return rv;
  if (o->api == TP_HTTP_API_OPENAI_CHAT && json_is_array(prompt)) {
    rv = set(body, "messages", json_incref(prompt));
  } else if (o->api == TP_HTTP_API_OPENAI_CHAT) {
    json_t *msg = json_object();
    json_t *msgs = json_array();
    if (!msg || !msgs || json_array_append_new(msgs, msg)) {
      json_decref(msg);
      json_decref(msgs);
      return TP_ENOMEM;
    }
    if ((rv = set(msg, "role", json_string("user"))) || (rv = set(msg, "content", json_incref(prompt)))) {
      json_decref(msgs);
      return rv;
    }
    rv = set(body, "messages", msgs);
  } else {
    rv = set(body, "prompt", json_incref(prompt));
  }
  if (rv) return rv;
  /* max_tokens rather than max_completion_tokens for chat: vLLM, SGLang and
   * trtllm-serve all take it. */
  if (max_tokens && (rv = set(body, "max_tokens", json_integer(max_tokens)))) return rv;
  if ((rv = set(body, "stream", json_boolean(o->streaming)))) return rv;
  if (o->streaming && o->include_usage) {
    /* Only with stream: true; vLLM and trtllm-serve answer 400 otherwise. */
    json_t *so = json_object();
    if (!so) return TP_ENOMEM;
    if ((rv = set(so, "include_usage", json_true()))) {
      json_decref(so);
      return rv;
    }
    if ((rv = set(body, "stream_options", so))) return rv;
  }
  if (min_tokens) {
    if ((rv = set(body, "min_tokens", json_integer(min_tokens)))) return rv;
    if ((rv = set(body, "ignore_eos", json_true()))) return rv;
  }
  return 0;
}

static int build_generate(json_t *body, const tp_openai_opts *o, json_t *prompt, uint32_t max_tokens,
                          uint32_t min_tokens) {
  int rv = set(body, "text_input", json_incref(prompt));
  if (!rv && o->request_id && *o->request_id) rv = set(body, "id", json_string(o->request_id));
  if (rv) return rv;
  /* `stream` is a model input for both layouts; leaving it out means false. */
  if (o->streaming && (rv = set(body, "stream", json_true()))) return rv;
  if (o->exclude_input && (rv = set(body, "exclude_input_in_output", json_true()))) return rv;
  if (o->backend == TP_BACKEND_VLLM) {
    /* Keys under "parameters" become request parameters, which the vLLM
     * backend reads as sampling parameters. */
    json_t *params = json_object();
    if (!params) return TP_ENOMEM;
    if (max_tokens) rv = set(params, "max_tokens", json_integer(max_tokens));
    if (!rv && min_tokens) rv = set(params, "min_tokens", json_integer(min_tokens));
    if (!rv && min_tokens) rv = set(params, "ignore_eos", json_true());
    if (rv || json_object_size(params) == 0) {
      json_decref(params);
      return rv;
    }
    return set(body, "parameters", params);
  }
  /* TensorRT-LLM ensemble / BLS: these names are input tensors. */
  if (max_tokens && (rv = set(body, "max_tokens", json_integer(max_tokens)))) return rv;
  if (min_tokens &&
      (rv = set(body, o->trtllm_min_tokens ? "min_tokens" : "min_length", json_integer(min_tokens))))
    return rv;
  return 0;
}

int tp_openai_build_request(tp_buf *out, const tp_openai_opts *o, const char *prompt, size_t prompt_len,
                            const char *messages, uint32_t max_tokens, uint32_t min_tokens) {
  tp_buf_reset(out);
  json_t *p = messages ? messages_prompt(o, messages, strlen(messages)) : json_stringn(prompt, prompt_len);
  if (!p) return TP_EINVAL; /* jansson refuses invalid UTF-8 */
  json_t *body = json_object();
  if (!body) {
    json_decref(p);
    return TP_ENOMEM;
  }
  int rv = o->api == TP_HTTP_API_TRITON_GENERATE ? build_generate(body, o, p, max_tokens, min_tokens)
                                                 : build_openai(body, o, p, max_tokens, min_tokens);
  json_decref(p);
  if (!rv && o->extra && json_is_object(o->extra) && json_object_update_recursive(body, (json_t *)o->extra))
    rv = TP_ENOMEM;
  if (!rv) {
    size_t n = json_dumpb(body, NULL, 0, JSON_COMPACT);
    if (n == 0 || tp_buf_reserve(out, n)) {
      rv = TP_ENOMEM;
    } else {
      json_dumpb(body, (char *)out->data, n, JSON_COMPACT);
      out->len = n;
      out->data[n] = 0;
    }
  }
  json_decref(body);
  return rv;
}

int tp_openai_parse_extra(json_t **out, const char *const *items, size_t n, char *err, size_t errlen) {
  *out = NULL;
  if (n == 0) return 0;
  json_t *all = json_object();
  if (!all) return TP_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    const char *s = items[i];
    const char *t = s;
    while (*t == ' ' || *t == '\t') t++;
    if (*t == '{') {
      json_error_t je;
      json_t *obj = json_loads(t, 0, &je);
      if (!obj || !json_is_object(obj)) {
        tp_seterr(err, errlen, "extra input '%s' is not a valid JSON object: %s", s,
                  obj ? "not an object" : je.text);
        json_decref(obj);
        json_decref(all);
        return TP_EINVAL;
      }
      int rv = json_object_update_recursive(all, obj);
      json_decref(obj);
      if (rv) {
        json_decref(all);
        return TP_ENOMEM;
      }
      continue;
    }
    const char *colon = strchr(s, ':');
    if (!colon || colon == s) {
      tp_seterr(err, errlen, "extra input '%s': expected NAME:VALUE or a JSON object like '{\"top_k\":1}'",
                s);
      json_decref(all);
      return TP_EINVAL;
    }
    char *name = tp_strndup(s, (size_t)(colon - s));
    if (!name) {
      json_decref(all);
      return TP_ENOMEM;
    }
    const char *v = colon + 1;
    json_t *val = json_loads(v, JSON_DECODE_ANY, NULL);
    if (!val) val = json_string(v); /* not JSON: a plain string */
    if (!val) {
      tp_seterr(err, errlen, "extra input '%s': the value is not valid UTF-8", s);
      free(name);
      json_decref(all);
      return TP_EINVAL;
    }
    int rv = json_object_set_new(all, name, val);
    free(name);
    if (rv) {
      json_decref(all);
      return TP_ENOMEM;
    }
  }
  *out = all;
  return 0;
}

/* ---- decoding ----------------------------------------------------------- */

void tp_openai_decoder_init(tp_openai_decoder *d) {
  memset(d, 0, sizeof(*d));
  tp_buf_init(&d->text);
  tp_buf_init(&d->reasoning);
}

void tp_openai_decoder_fini(tp_openai_decoder *d) {
  json_decref(d->root);
  tp_buf_fini(&d->text);
  tp_buf_fini(&d->reasoning);
  memset(d, 0, sizeof(*d));
}

static int64_t int_or(json_t *v, int64_t dflt) {
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

/* Appends a JSON string's bytes (anything else adds nothing). */
static int add_str(tp_buf *b, json_t *v) {
  if (!json_is_string(v)) return 0;
  return tp_buf_append(b, json_string_value(v), json_string_length(v));
}

/* Keeps printable text: control bytes become spaces. */
static void clean_copy(char *out, size_t outlen, const char *s, size_t n, size_t max_chars) {
  if (!outlen) return;
  size_t lim = TP_MIN(n, TP_MIN(max_chars, outlen - 4));
  bool cut = n > lim;
  /* Never cut a UTF-8 sequence in half. */
  if (cut)
    while (lim > 0 && ((unsigned char)s[lim] & 0xC0) == 0x80) lim--;
  for (size_t i = 0; i < lim; i++) {
    unsigned char c = (unsigned char)s[i];
    out[i] = (c < 0x20 || c == 0x7f) ? ' ' : (char)c;
  }
  if (cut) {
    memcpy(out + lim, "...", 3);
    lim += 3;
  }
  out[lim] = 0;
}

/* The message of an error value (a string, or an object with message). */
static void error_message(json_t *e, char *out, size_t outlen, size_t max_chars, int64_t *code) {
  if (json_is_string(e)) {
    clean_copy(out, outlen, json_string_value(e), json_string_length(e), max_chars);
    return;
  }
  if (json_is_object(e)) {
    json_t *c = json_object_get(e, "code");
    if (!json_is_integer(c)) c = json_object_get(e, "http_status_code");
    if (code && json_is_integer(c)) *code = json_integer_value(c);
    json_t *m = json_object_get(e, "message");
    if (json_is_string(m)) {
      clean_copy(out, outlen, json_string_value(m), json_string_length(m), max_chars);
      return;
    }
  }
  char *dump = json_dumps(e, JSON_COMPACT | JSON_ENCODE_ANY);
  if (dump) {
    clean_copy(out, outlen, dump, strlen(dump), max_chars);
    free(dump);
  } else {
    snprintf(out, outlen, "(unreadable error)");
  }
}

/* An "error" key that is set, or the flat {"object":"error", "message"}. */
static json_t *find_error(json_t *root) {
  json_t *e = json_object_get(root, "error");
  if (e && !json_is_null(e) && !(json_is_string(e) && json_string_length(e) == 0) && !json_is_false(e))
    return e;
  json_t *obj = json_object_get(root, "object");
  if (json_is_string(obj) && strcmp(json_string_value(obj), "error") == 0) return root;
  return NULL;
}

static int decode_choice(tp_openai_decoder *d, tp_http_api api, json_t *ch, tp_openai_chunk *out) {
  if (!json_is_object(ch)) return 0;
  json_t *fr = json_object_get(ch, "finish_reason");
  if (json_is_string(fr) && !out->finish_reason) {
    snprintf(d->finish, sizeof(d->finish), "%s", json_string_value(fr));
    out->finish_reason = d->finish;
  }
  if (api == TP_HTTP_API_OPENAI_COMPLETIONS) return add_str(&d->text, json_object_get(ch, "text"));
  json_t *delta = json_object_get(ch, "delta");
  if (!json_is_object(delta)) delta = json_object_get(ch, "message"); /* non-streaming reply */
  if (!json_is_object(delta)) return 0;
  int rv = add_str(&d->text, json_object_get(delta, "content"));
  json_t *r = json_object_get(delta, "reasoning_content");
  if (!json_is_string(r)) r = json_object_get(delta, "reasoning");
  if (rv == 0) rv = add_str(&d->reasoning, r);
  return rv;
}

int tp_openai_decode(tp_openai_decoder *d, tp_http_api api, const uint8_t *data, size_t len,
                     tp_openai_chunk *out) {
  memset(out, 0, sizeof(*out));
  out->prompt_tokens = out->completion_tokens = out->cached_tokens = out->output_tokens = -1;
  json_decref(d->root);
  d->root = NULL;
  tp_buf_reset(&d->text);
  tp_buf_reset(&d->reasoning);
  d->error[0] = 0;
  d->finish[0] = 0;

  json_t *root = json_loadb((const char *)data, len, 0, NULL);
  if (!root || !json_is_object(root)) {
    json_decref(root);
    return TP_EPROTO;
  }
  d->root = root;
  int rv = 0;
  json_t *e = find_error(root);
  if (e) {
    error_message(e, d->error, sizeof(d->error), 200, &out->error_code);
    out->error = d->error;
  }
  out->id = json_string_value(json_object_get(root, "id"));
  if (api == TP_HTTP_API_TRITON_GENERATE) {
    json_t *t = json_object_get(root, "text_output");
    if (json_is_array(t)) {
      size_t i;
      json_t *v;
      json_array_foreach(t, i, v) {
        if (rv == 0) rv = add_str(&d->text, v);
      }
    } else {
      rv = add_str(&d->text, t);
    }
    json_t *n = json_object_get(root, "num_output_tokens");
    if (json_is_array(n)) {
      size_t i;
      json_t *v;
      json_array_foreach(n, i, v) {
        if (json_is_integer(v))
          out->output_tokens = (out->output_tokens < 0 ? 0 : out->output_tokens) + json_integer_value(v);
      }
    } else {
      out->output_tokens = int_or(n, -1);
    }
    json_t *fr = json_object_get(root, "finish_reason");
    if (json_is_array(fr)) fr = json_array_get(fr, 0);
    if (json_is_string(fr) && strcmp(json_string_value(fr), "None") != 0) {
      snprintf(d->finish, sizeof(d->finish), "%s", json_string_value(fr));
      out->finish_reason = d->finish;
    }
  } else {
    json_t *choices = json_object_get(root, "choices");
    if (json_is_array(choices)) {
      out->has_choices = json_array_size(choices) > 0;
      size_t i;
      json_t *ch;
      json_array_foreach(choices, i, ch) {
        if (rv == 0) rv = decode_choice(d, api, ch, out);
      }
    }
    json_t *u = json_object_get(root, "usage");
    if (json_is_object(u)) {
      out->has_usage = true;
      out->prompt_tokens = int_or(json_object_get(u, "prompt_tokens"), -1);
      out->completion_tokens = int_or(json_object_get(u, "completion_tokens"), -1);
      json_t *det = json_object_get(u, "prompt_tokens_details");
      if (json_is_object(det)) out->cached_tokens = int_or(json_object_get(det, "cached_tokens"), -1);
    }
  }
  if (rv) return rv;
  if (d->text.len) {
    out->text = d->text.data;
    out->text_len = d->text.len;
  }
  if (d->reasoning.len) {
    out->reasoning = d->reasoning.data;
    out->reasoning_len = d->reasoning.len;
  }
  return 0;
}

bool tp_openai_is_done(const uint8_t *data, size_t len) {
  while (len && (data[0] == ' ' || data[0] == '\t')) data++, len--;
  while (len && (data[len - 1] == ' ' || data[len - 1] == '\t' || data[len - 1] == '\r')) len--;
  return len == 6 && memcmp(data, "[DONE]", 6) == 0;
}

char *tp_openai_error_text(const uint8_t *body, size_t len, size_t max_chars, char *out) {
  size_t outlen = max_chars + 4;
  /* Trim surrounding white space first: servers end bodies with newlines. */
  while (len && (body[0] == ' ' || body[0] == '\n' || body[0] == '\r' || body[0] == '\t')) body++, len--;
  while (len &&
         (body[len - 1] == ' ' || body[len - 1] == '\n' || body[len - 1] == '\r' || body[len - 1] == '\t'))
    len--;
  if (len == 0) {
    snprintf(out, outlen, "%s", max_chars >= 12 ? "(empty body)" : "");
    return out;
  }
  json_t *root = json_loadb((const char *)body, len, 0, NULL);
  if (json_is_object(root)) {
    json_t *e = find_error(root);
    json_t *m = NULL;
    if (e && e != root) {
      error_message(e, out, outlen, max_chars, NULL);
      json_decref(root);
      return out;
    }
    m = json_object_get(root, "message");
    if (!json_is_string(m)) m = json_object_get(root, "detail");
    if (m) {
      error_message(m, out, outlen, max_chars, NULL);
      json_decref(root);
      return out;
    }
  }
  json_decref(root);
  clean_copy(out, outlen, (const char *)body, len, max_chars);
  return out;
}

#include "tp_mock_sse.h"

#include <stdio.h>
#include <string.h>

#define TP_MOCK_DIALECT_STR(name, str) str,
static const char *const dialect_names[] = {TP_MOCK_DIALECTS(TP_MOCK_DIALECT_STR)};
#undef TP_MOCK_DIALECT_STR

/* What the servers put in system_fingerprint. */
#define TGI_FINGERPRINT "3.0.1-native"
#define LLAMACPP_FINGERPRINT "b5410-tokperf"

int tp_mock_dialect_parse(const char *name, tp_mock_dialect *out) {
  for (int i = 0; i < TP_MOCK_DIALECT_COUNT; i++)
    if (strcmp(name, dialect_names[i]) == 0) {
      *out = (tp_mock_dialect)i;
      return 0;
    }
  if (strcmp(name, "trtllm") == 0) {
    *out = TP_MOCK_DIALECT_TRTLLM;
    return 0;
  }
  return TP_EINVAL;
}

const char *tp_mock_dialect_name(tp_mock_dialect d) {
  return (unsigned)d < TP_MOCK_DIALECT_COUNT ? dialect_names[d] : "?";
}

void tp_mock_json_str(tp_buf *b, const char *s, size_t n) {
  static const char hex[] = "0123456789abcdef";
  tp_buf_append(b, "\"", 1);
  size_t run = 0; /* bytes copied as they are, pending */
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c != '"' && c != '\\' && c >= 0x20) {
      run++;
      continue;
    }
    if (run) tp_buf_append(b, s + i - run, run);
    run = 0;
    if (c == '"' || c == '\\') {
      char e[2] = {'\\', (char)c};
      tp_buf_append(b, e, 2);
    } else if (c == '\n') {
      tp_buf_append(b, "\\n", 2);
    } else {
      char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      tp_buf_append(b, e, 6);
    }
  }
  if (run) tp_buf_append(b, s + n - run, run);
  tp_buf_append(b, "\"", 1);
}

const char *tp_mock_error_type(int http_status) {
  switch (http_status) {
    case 400: return "BadRequestError";
    case 401: return "AuthenticationError";
    case 403: return "PermissionDeniedError";
    case 404: return "NotFoundError";
    case 405: return "MethodNotAllowedError";
    case 411: return "LengthRequiredError";
    case 413: return "PayloadTooLargeError";
    case 422: return "UnprocessableEntityError";
    case 429: return "RateLimitError";
    case 500: return "InternalServerError";
    case 501: return "NotImplementedError";
    case 503: return "ServiceUnavailableError";
    default: return http_status >= 500 ? "InternalServerError" : "BadRequestError";
  }
}

/* ---- pieces ------------------------------------------------------------------------------- */

/* Every writer below first reserves room for the worst case (each byte of
 * a string escaped to six, a fixed allowance for keys and numbers per
 * chunk), so the appends that follow never reallocate and cannot fail. */
#define CHUNK_FIXED_BYTES 1024
static size_t slen(const char *s) {
  return s ? strlen(s) : 0;
}
static int reserve(tp_buf *b, size_t strings_len, int chunks) {
  return tp_buf_reserve(b, 6 * strings_len * (size_t)chunks + CHUNK_FIXED_BYTES * (size_t)chunks);
}

static void open_event(tp_buf *b, tp_mock_dialect d) {
  tp_buf_append_str(b, d == TP_MOCK_DIALECT_TGI ? "data:" : "data: ");
}

static void close_event(tp_buf *b) {
  tp_buf_append(b, "\n\n", 2);
}

static void usage_obj(tp_buf *b, tp_mock_dialect d, const tp_mock_usage *u) {
  unsigned p = u->prompt_tokens, c = u->completion_tokens;
  switch (d) {
    case TP_MOCK_DIALECT_LLAMACPP:
      tp_buf_printf(b, "{\"completion_tokens\":%u,\"prompt_tokens\":%u,\"total_tokens\":%u}", c, p, p + c);
      break;
    case TP_MOCK_DIALECT_TGI:
      tp_buf_printf(b, "{\"prompt_tokens\":%u,\"completion_tokens\":%u,\"total_tokens\":%u}", p, c, p + c);
      break;
    default:
      /* vLLM's UsageInfo order. */
      tp_buf_printf(b,
                    "{\"prompt_tokens\":%u,\"total_tokens\":%u,\"completion_tokens\":%u,"
                    "\"prompt_tokens_details\":{\"cached_tokens\":%u}}",
                    p, p + c, c, u->cached_tokens);
      break;
  }
}

static void timings_obj(tp_buf *b, const tp_mock_usage *u, const tp_mock_timings *t) {
  tp_mock_timings z = {0, 0};
  if (!t) t = &z;
  unsigned pn = u->prompt_tokens - TP_MIN(u->cached_tokens, u->prompt_tokens), n = u->completion_tokens;
  tp_buf_printf(b,
                "{\"cache_n\":%u,\"prompt_n\":%u,\"prompt_ms\":%.3f,\"prompt_per_token_ms\":%.3f,"
                "\"prompt_per_second\":%.3f,\"predicted_n\":%u,\"predicted_ms\":%.3f,"
                "\"predicted_per_token_ms\":%.3f,\"predicted_per_second\":%.3f}",
                u->cached_tokens, pn, t->prompt_ms, pn ? t->prompt_ms / pn : 0.0,
                t->prompt_ms > 0 ? pn * 1000.0 / t->prompt_ms : 0.0, n, t->predicted_ms,
                n ? t->predicted_ms / n : 0.0, t->predicted_ms > 0 ? n * 1000.0 / t->predicted_ms : 0.0);
}

static const char *object_name(tp_mock_api api, bool chunk) {
  if (api == TP_MOCK_API_COMPLETIONS) return "text_completion";
  return chunk ? "chat.completion.chunk" : "chat.completion";
}

/* The envelope keys before "choices" (all dialects but llamacpp, which
 * puts choices first and the envelope after). */
static void envelope_head(tp_buf *b, const tp_mock_sse_writer *w, bool chunk) {
  const char *obj = object_name(w->api, chunk);
  if (w->dialect == TP_MOCK_DIALECT_TGI) {
    if (w->api == TP_MOCK_API_CHAT)
      tp_buf_printf(b, "{\"object\":\"%s\",\"id\":\"\",\"created\":%llu,\"model\":", obj,
                    (unsigned long long)w->created);
    else
      tp_buf_printf(b, "{\"id\":\"\",\"object\":\"%s\",\"created\":%llu,\"model\":", obj,
                    (unsigned long long)w->created);
    tp_mock_json_str(b, w->model, strlen(w->model));
    tp_buf_append_str(b, ",\"system_fingerprint\":\"" TGI_FINGERPRINT "\"");
    return;
  }
  tp_buf_append_str(b, "{\"id\":");
  tp_mock_json_str(b, w->id, strlen(w->id));
  tp_buf_printf(b, ",\"object\":\"%s\",\"created\":%llu,\"model\":", obj, (unsigned long long)w->created);
  tp_mock_json_str(b, w->model, strlen(w->model));
}

static void llamacpp_tail(tp_buf *b, const tp_mock_sse_writer *w, bool chunk) {
  tp_buf_printf(b, ",\"created\":%llu,\"id\":", (unsigned long long)w->created);
  tp_mock_json_str(b, w->id, strlen(w->id));
  tp_buf_append_str(b, ",\"model\":");
  tp_mock_json_str(b, w->model, strlen(w->model));
  tp_buf_printf(b, ",\"system_fingerprint\":\"" LLAMACPP_FINGERPRINT "\",\"object\":\"%s\"",
                object_name(w->api, chunk));
}

/* The delta key of a chat chunk's text: the first reasoning_tokens tokens
 * are the model's reasoning (vLLM's `reasoning_content`), the rest the
 * answer.  w->tokens already counts the token being written. */
static const char *text_key(const tp_mock_sse_writer *w, bool with_text) {
  bool reasoning = with_text && w->tokens > 0 && w->tokens <= w->reasoning_tokens;
  return reasoning ? "\"reasoning_content\":" : "\"content\":";
}

/* One choice of a streamed chunk.  role: the chat delta gets a role;
 * finish: NULL while unfinished. */
static void choice(tp_buf *b, const tp_mock_sse_writer *w, const char *text, size_t len, bool with_text,
                   bool role, const char *finish) {
  tp_mock_dialect d = w->dialect;
  bool chat = w->api == TP_MOCK_API_CHAT;
  if (d == TP_MOCK_DIALECT_LLAMACPP) {
    if (chat) {
      tp_buf_append_str(b, "{\"finish_reason\":");
      if (finish)
        tp_buf_printf(b, "\"%s\"", finish);
      else
        tp_buf_append_str(b, "null");
      tp_buf_append_str(b, ",\"index\":0,\"delta\":{");
      if (role) tp_buf_append_str(b, "\"role\":\"assistant\",\"content\":null");
      if (with_text) {
        tp_buf_append_str(b, text_key(w, with_text));
        tp_mock_json_str(b, text, len);
      }
      tp_buf_append_str(b, "}}");
    } else {
      tp_buf_append_str(b, "{\"text\":");
      tp_mock_json_str(b, text, with_text ? len : 0);
      tp_buf_append_str(b, ",\"index\":0,\"logprobs\":null,\"finish_reason\":");
      if (finish)
        tp_buf_printf(b, "\"%s\"}", finish);
      else
        tp_buf_append_str(b, "null}");
    }
    return;
  }
  tp_buf_append_str(b, "{\"index\":0,");
  if (chat) {
    tp_buf_append_str(b, "\"delta\":{");
    bool comma = false;
    if (role || d == TP_MOCK_DIALECT_TGI) {
      tp_buf_append_str(b, "\"role\":\"assistant\"");
      comma = true;
    }
    if (role && d == TP_MOCK_DIALECT_VLLM) tp_buf_append_str(b, ",\"content\":\"\"");
    if (with_text) {
      if (comma) tp_buf_append(b, ",", 1);
      tp_buf_append_str(b, text_key(w, with_text));
      tp_mock_json_str(b, text, len);
    }
    tp_buf_append(b, "}", 1);
  } else {
    tp_buf_append_str(b, "\"text\":");
    tp_mock_json_str(b, text, len);
  }
  if (d == TP_MOCK_DIALECT_TRTLLM) {
    /* No null fields. */
    if (finish) tp_buf_printf(b, ",\"finish_reason\":\"%s\",\"avg_decoded_tokens_per_iter\":1.0", finish);
    tp_buf_append(b, "}", 1);
    return;
  }
  tp_buf_append_str(b, ",\"logprobs\":null,\"finish_reason\":");
  if (finish)
    tp_buf_printf(b, "\"%s\"", finish);
  else
    tp_buf_append_str(b, "null");
  /* vLLM: completions chunks always carry stop_reason, chat ones once
   * finished. */
  if (d == TP_MOCK_DIALECT_VLLM && (!chat || finish)) tp_buf_append_str(b, ",\"stop_reason\":null");
  tp_buf_append(b, "}", 1);
}

/* One streamed chunk with one choice. */
static void chunk(tp_buf *b, const tp_mock_sse_writer *w, const char *text, size_t len, bool with_text, bool role,
                  const char *finish, const tp_mock_usage *u, const tp_mock_timings *t) {
  tp_mock_dialect d = w->dialect;
  open_event(b, d);
  if (d == TP_MOCK_DIALECT_LLAMACPP) {
    tp_buf_append_str(b, "{\"choices\":[");
    choice(b, w, text, len, with_text, role, finish);
    tp_buf_append(b, "]", 1);
    llamacpp_tail(b, w, true);
    if (finish && u) {
      tp_buf_append_str(b, ",\"timings\":");
      timings_obj(b, u, t);
    }
    tp_buf_append(b, "}", 1);
  } else {
    envelope_head(b, w, true);
    tp_buf_append_str(b, ",\"choices\":[");
    choice(b, w, text, len, with_text, role, finish);
    tp_buf_append(b, "]", 1);
    bool cont = w->continuous_usage && u && (d == TP_MOCK_DIALECT_VLLM || d == TP_MOCK_DIALECT_TRTLLM);
    if (cont) {
      tp_buf_append_str(b, ",\"usage\":");
      usage_obj(b, d, u);
    } else if (d == TP_MOCK_DIALECT_TGI || (d == TP_MOCK_DIALECT_VLLM && w->api == TP_MOCK_API_COMPLETIONS)) {
      tp_buf_append_str(b, ",\"usage\":null");
    }
    tp_buf_append(b, "}", 1);
  }
  /* trtllm-serve writes its role-only chat chunk with a space after the
   * JSON. */
  if (role && d == TP_MOCK_DIALECT_TRTLLM) tp_buf_append(b, " ", 1);
  close_event(b);
}

static void usage_chunk(tp_buf *b, const tp_mock_sse_writer *w, const tp_mock_usage *u) {
  tp_mock_dialect d = w->dialect;
  open_event(b, d);
  if (d == TP_MOCK_DIALECT_LLAMACPP) {
    tp_buf_append_str(b, "{\"choices\":[]");
    llamacpp_tail(b, w, true);
  } else {
    envelope_head(b, w, true);
    tp_buf_append_str(b, ",\"choices\":[]");
  }
  tp_buf_append_str(b, ",\"usage\":");
  usage_obj(b, d, u);
  tp_buf_append(b, "}", 1);
  close_event(b);
}

static void done(tp_buf *b, tp_mock_dialect d) {
  open_event(b, d);
  tp_buf_append_str(b, "[DONE]");
  close_event(b);
}

/* ---- streams ------------------------------------------------------------------------------ */

int tp_mock_sse_token(tp_buf *out, tp_mock_sse_writer *w, const char *text, size_t len, bool last,
                      const char *finish_reason, const tp_mock_usage *u, const tp_mock_timings *t) {
  tp_mock_dialect d = w->dialect;
  bool chat = w->api == TP_MOCK_API_CHAT;
  const char *finish = finish_reason ? finish_reason : "length";
  if (reserve(out, len + slen(w->id) + slen(w->model), 5)) return TP_ENOMEM;
  if (w->tokens == 0 && chat && d != TP_MOCK_DIALECT_TGI) chunk(out, w, NULL, 0, false, true, NULL, u, t);
  w->tokens += w->chunk_tokens ? w->chunk_tokens : 1;
  if (d == TP_MOCK_DIALECT_LLAMACPP) {
    chunk(out, w, text, len, true, false, NULL, u, t);
    if (last) chunk(out, w, "", 0, !chat, false, finish, u, t);
  } else {
    chunk(out, w, text, len, true, false, last ? finish : NULL, u, t);
  }
  if (last && !w->trailer_later) {
    if (w->include_usage && u) usage_chunk(out, w, u);
    done(out, d);
    w->done = true;
  }
  return 0;
}

int tp_mock_sse_trailer(tp_buf *out, tp_mock_sse_writer *w, const tp_mock_usage *u) {
  if (reserve(out, slen(w->id) + slen(w->model), 2)) return TP_ENOMEM;
  if (w->include_usage && u) usage_chunk(out, w, u);
  done(out, w->dialect);
  w->done = true;
  return 0;
}

int tp_mock_sse_error(tp_buf *out, tp_mock_sse_writer *w, const char *message, int http_status) {
  tp_mock_dialect d = w->dialect;
  if (reserve(out, slen(message), 2)) return TP_ENOMEM;
  switch (d) {
    case TP_MOCK_DIALECT_LLAMACPP:
      /* llama-server sends errors as an `error:` field, not as data. */
      tp_buf_append_str(out, "error: ");
      tp_mock_oai_error_body(out, d, message, http_status);
      close_event(out);
      break;
    case TP_MOCK_DIALECT_TGI:
      open_event(out, d);
      tp_buf_append_str(out, "{\"error\":{\"message\":");
      tp_mock_json_str(out, message, strlen(message));
      tp_buf_printf(out, ",\"http_status_code\":%d}}", http_status);
      close_event(out);
      break;
    case TP_MOCK_DIALECT_TRTLLM:
      open_event(out, d);
      tp_mock_oai_error_body(out, d, message, http_status);
      close_event(out);
      done(out, d);
      break;
    default:
      open_event(out, d);
      tp_mock_oai_error_body(out, d, message, http_status);
      close_event(out);
      done(out, d);
      break;
  }
  w->done = true;
  return 0;
}

int tp_mock_sse_keepalive(tp_buf *out) {
  return tp_buf_append(out, ":\n\n", 3);
}

/* ---- whole bodies ------------------------------------------------------------------------- */

int tp_mock_oai_body(tp_buf *b, const tp_mock_sse_writer *w, const char *text, size_t len, const char *finish_reason,
                     const tp_mock_usage *u, const tp_mock_timings *t) {
  tp_mock_dialect d = w->dialect;
  if (reserve(b, len + slen(w->id) + slen(w->model), 1)) return TP_ENOMEM;
  bool chat = w->api == TP_MOCK_API_CHAT;
  const char *finish = finish_reason ? finish_reason : "length";
  if (d == TP_MOCK_DIALECT_LLAMACPP) {
    tp_buf_append_str(b, "{\"choices\":[");
    if (chat) {
      tp_buf_printf(b, "{\"finish_reason\":\"%s\",\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":", finish);
      tp_mock_json_str(b, text, len);
      tp_buf_append_str(b, "}}]");
    } else {
      tp_buf_append_str(b, "{\"text\":");
      tp_mock_json_str(b, text, len);
      tp_buf_printf(b, ",\"index\":0,\"logprobs\":null,\"finish_reason\":\"%s\"}]", finish);
    }
    llamacpp_tail(b, w, false);
    tp_buf_append_str(b, ",\"usage\":");
    usage_obj(b, d, u);
    tp_buf_append_str(b, ",\"timings\":");
    timings_obj(b, u, t);
    tp_buf_append(b, "}", 1);
  } else {
    envelope_head(b, w, false);
    tp_buf_append_str(b, ",\"choices\":[{\"index\":0,");
    if (chat) {
      tp_buf_append_str(b, "\"message\":{\"role\":\"assistant\",\"content\":");
      tp_mock_json_str(b, text, len);
      tp_buf_append(b, "}", 1);
    } else {
      tp_buf_append_str(b, "\"text\":");
      tp_mock_json_str(b, text, len);
    }
    if (d == TP_MOCK_DIALECT_TRTLLM)
      tp_buf_printf(b, ",\"finish_reason\":\"%s\"}]", finish);
    else if (d == TP_MOCK_DIALECT_VLLM)
      tp_buf_printf(b, ",\"logprobs\":null,\"finish_reason\":\"%s\",\"stop_reason\":null}]", finish);
    else
      tp_buf_printf(b, ",\"logprobs\":null,\"finish_reason\":\"%s\"}]", finish);
    tp_buf_append_str(b, ",\"usage\":");
    usage_obj(b, d, u);
    tp_buf_append(b, "}", 1);
  }
  return 0;
}

int tp_mock_oai_error_body(tp_buf *b, tp_mock_dialect d, const char *message, int http_status) {
  if (reserve(b, slen(message), 1)) return TP_ENOMEM;
  const char *type = tp_mock_error_type(http_status);
  switch (d) {
    case TP_MOCK_DIALECT_TRTLLM:
      /* The flat shape (vLLM before v0.10.1, trtllm-serve). */
      tp_buf_append_str(b, "{\"object\":\"error\",\"message\":");
      tp_mock_json_str(b, message, strlen(message));
      tp_buf_printf(b, ",\"type\":\"%s\",\"param\":null,\"code\":%d}", type, http_status);
      break;
    case TP_MOCK_DIALECT_TGI:
      tp_buf_append_str(b, "{\"error\":");
      tp_mock_json_str(b, message, strlen(message));
      tp_buf_printf(b, ",\"error_type\":\"%s\"}",
                    http_status == 422 ? "validation" : http_status == 429 ? "overloaded" : "generation");
      break;
    case TP_MOCK_DIALECT_LLAMACPP:
      tp_buf_printf(b, "{\"error\":{\"code\":%d,\"message\":", http_status);
      tp_mock_json_str(b, message, strlen(message));
      tp_buf_printf(b, ",\"type\":\"%s\"}}",
                    http_status == 404   ? "not_found_error"
                    : http_status >= 500 ? "server_error"
                                         : "invalid_request_error");
      break;
    default:
      tp_buf_append_str(b, "{\"error\":{\"message\":");
      tp_mock_json_str(b, message, strlen(message));
      tp_buf_printf(b, ",\"type\":\"%s\",\"param\":null,\"code\":%d}}", type, http_status);
      break;
  }
  return 0;
}

/* ---- Triton generate ---------------------------------------------------------------------- */

int tp_mock_generate_json(tp_buf *b, const char *model, const char *id, const char *text, size_t len) {
  if (reserve(b, len + slen(model) + slen(id), 1)) return TP_ENOMEM;
  tp_buf_append(b, "{", 1);
  if (id) {
    tp_buf_append_str(b, "\"id\":");
    tp_mock_json_str(b, id, strlen(id));
    tp_buf_append(b, ",", 1);
  }
  tp_buf_append_str(b, "\"model_name\":");
  tp_mock_json_str(b, model, strlen(model));
  tp_buf_append_str(b, ",\"model_version\":\"1\",\"text_output\":");
  tp_mock_json_str(b, text, len);
  tp_buf_append(b, "}", 1);
  return 0;
}

int tp_mock_generate_event(tp_buf *b, const char *model, const char *id, const char *text, size_t len) {
  if (reserve(b, len + slen(model) + slen(id), 1)) return TP_ENOMEM;
  tp_buf_append_str(b, "data: ");
  tp_mock_generate_json(b, model, id, text, len);
  close_event(b);
  return 0;
}

int tp_mock_generate_error(tp_buf *b, const char *message, bool as_event) {
  if (reserve(b, slen(message), 1)) return TP_ENOMEM;
  if (as_event) tp_buf_append_str(b, "data: ");
  tp_buf_append_str(b, "{\"error\":");
  tp_mock_json_str(b, message, strlen(message));
  tp_buf_append(b, "}", 1);
  if (as_event) close_event(b);
  return 0;
}

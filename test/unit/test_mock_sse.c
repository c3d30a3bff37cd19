/* Unit tests for what the mock's HTTP side writes (mock/tp_mock_sse.c):
 * the OpenAI stream of each dialect (event framing, key order, role and
 * finish chunks, usage, [DONE]), error shapes, whole bodies and Triton's
 * generate JSON, checked against the OpenAI and Triton generate formats. */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "mock/tp_mock_sse.h"
#include "tp_test.h"

/* One event of a stream: its field name ("data", "error", ":" for a
 * comment), its value, and the raw bytes between the field and "\n\n". */
typedef struct event {
  char field[16];
  char value[4096];
  char raw[4200];
} event;

/* Splits out at "\n\n"; returns the number of events (at most max). */
static int split(const tp_buf *out, event *ev, int max) {
  int n = 0;
  const char *p = (const char *)out->data, *end = p + out->len;
  while (p < end && n < max) {
    const char *e = strstr(p, "\n\n");
    if (!e) break;
    event *v = &ev[n++];
    memset(v, 0, sizeof(*v));
    size_t len = (size_t)(e - p);
    snprintf(v->raw, sizeof(v->raw), "%.*s", (int)len, p);
    const char *colon = memchr(p, ':', len);
    size_t fl = colon ? (size_t)(colon - p) : len;
    if (fl == 0) {
      strcpy(v->field, ":");
    } else {
      snprintf(v->field, sizeof(v->field), "%.*s", (int)fl, p);
    }
    if (colon) {
      const char *val = colon + 1;
      if (val < e && *val == ' ') val++;
      snprintf(v->value, sizeof(v->value), "%.*s", (int)(e - val), val);
    }
    p = e + 2;
  }
  return n;
}

/* The keys of a JSON object, in order, joined with ','. */
static void keys_of(json_t *o, char *out, size_t n) {
  out[0] = 0;
  const char *k;
  json_t *v;
  json_object_foreach(o, k, v) {
    if (out[0]) strncat(out, ",", n - strlen(out) - 1);
    strncat(out, k, n - strlen(out) - 1);
  }
}

static tp_mock_sse_writer writer(tp_mock_dialect d, tp_mock_api api) {
  tp_mock_sse_writer w;
  memset(&w, 0, sizeof(w));
  w.dialect = d;
  w.api = api;
  w.id = api == TP_MOCK_API_CHAT ? "chatcmpl-1" : "cmpl-1";
  w.model = "m";
  w.created = 1700000000;
  w.include_usage = true;
  return w;
}

static const char *const toks[] = {" Hello", " big", " world"};

/* Writes the three tokens; usage: prompt 5, cached 2. */
static void stream3(tp_buf *b, tp_mock_sse_writer *w) {
  for (int i = 0; i < 3; i++) {
    tp_mock_usage u = {5, (uint32_t)i + 1, 2};
    tp_mock_timings t = {12.5, 20.0};
    CHECK_INT(tp_mock_sse_token(b, w, toks[i], strlen(toks[i]), i == 2, "length", &u, &t), 0, "token written");
  }
}

/* The text of a chunk's first choice (delta.content or text), or NULL. */
static const char *chunk_text(json_t *o) {
  json_t *c = json_array_get(json_object_get(o, "choices"), 0);
  if (!c) return NULL;
  json_t *t = json_object_get(c, "text");
  if (!t) t = json_object_get(json_object_get(c, "delta"), "content");
  return json_string_value(t);
}

typedef struct shape {
  tp_mock_dialect d;
  tp_mock_api api;
  const char *prefix;      /* "data: " or "data:" */
  int n_events;            /* including [DONE] */
  bool role_chunk;         /* a role-only first chunk */
  const char *chunk_keys;  /* top-level keys of a text chunk */
  const char *choice_keys; /* keys of a text chunk's choice */
  const char *usage_keys;  /* keys of the usage object */
  bool finish_on_text;     /* finish_reason on the last text chunk */
} shape;

static const shape shapes[] = {
    {TP_MOCK_DIALECT_VLLM, TP_MOCK_API_COMPLETIONS, "data: ", 5, false, "id,object,created,model,choices,usage",
     "index,text,logprobs,finish_reason,stop_reason", "prompt_tokens,total_tokens,completion_tokens,prompt_tokens_details",
     true},
    {TP_MOCK_DIALECT_VLLM, TP_MOCK_API_CHAT, "data: ", 6, true, "id,object,created,model,choices",
     "index,delta,logprobs,finish_reason", "prompt_tokens,total_tokens,completion_tokens,prompt_tokens_details", true},
    {TP_MOCK_DIALECT_TRTLLM, TP_MOCK_API_COMPLETIONS, "data: ", 5, false, "id,object,created,model,choices",
     "index,text", "prompt_tokens,total_tokens,completion_tokens,prompt_tokens_details", true},
    {TP_MOCK_DIALECT_TRTLLM, TP_MOCK_API_CHAT, "data: ", 6, true, "id,object,created,model,choices", "index,delta",
     "prompt_tokens,total_tokens,completion_tokens,prompt_tokens_details", true},
    {TP_MOCK_DIALECT_TGI, TP_MOCK_API_COMPLETIONS, "data:", 5, false,
     "id,object,created,model,system_fingerprint,choices,usage", "index,text,logprobs,finish_reason",
     "prompt_tokens,completion_tokens,total_tokens", true},
    {TP_MOCK_DIALECT_TGI, TP_MOCK_API_CHAT, "data:", 5, false,
     "object,id,created,model,system_fingerprint,choices,usage", "index,delta,logprobs,finish_reason",
     "prompt_tokens,completion_tokens,total_tokens", true},
    {TP_MOCK_DIALECT_LLAMACPP, TP_MOCK_API_COMPLETIONS, "data: ", 6, false,
     "choices,created,id,model,system_fingerprint,object", "text,index,logprobs,finish_reason",
     "completion_tokens,prompt_tokens,total_tokens", false},
    {TP_MOCK_DIALECT_LLAMACPP, TP_MOCK_API_CHAT, "data: ", 7, true,
     "choices,created,id,model,system_fingerprint,object", "finish_reason,index,delta",
     "completion_tokens,prompt_tokens,total_tokens", false},
};

static void test_streams(void) {
  for (size_t k = 0; k < TP_ARRAY_LEN(shapes); k++) {
    const shape *s = &shapes[k];
    char name[64];
    snprintf(name, sizeof(name), "%s %s", tp_mock_dialect_name(s->d),
             s->api == TP_MOCK_API_CHAT ? "chat" : "completions");
    tp_mock_sse_writer w = writer(s->d, s->api);
    tp_buf b;
    tp_buf_init(&b);
    stream3(&b, &w);
    CHECK(w.done, "%s: the writer is done after the last token", name);
    event ev[16];
    int n = split(&b, ev, 16);
    CHECK_INT(n, s->n_events, name);
    CHECK(b.len >= 2 && memcmp(b.data + b.len - 2, "\n\n", 2) == 0, "%s: ends with an empty line", name);
    /* Every event is one data line with the dialect's prefix. */
    int prefix_ok = 1;
    for (int i = 0; i < n; i++)
      if (strncmp(ev[i].raw, s->prefix, strlen(s->prefix)) != 0 || strchr(ev[i].raw, '\n') ||
          (s->prefix[5] == 0 && ev[i].raw[5] == ' '))
        prefix_ok = 0;
    CHECK(prefix_ok, "%s: every event is one '%s' line", name, s->prefix);
    CHECK_STR(ev[n - 1].value, "[DONE]", name);

    int first_text = s->role_chunk ? 1 : 0;
    json_t *role = s->role_chunk ? json_loads(ev[0].value, 0, NULL) : NULL;
    if (s->role_chunk) {
      json_t *delta = json_object_get(json_array_get(json_object_get(role, "choices"), 0), "delta");
      CHECK(role && json_is_string(json_object_get(delta, "role")) &&
                (chunk_text(role) == NULL || (s->d == TP_MOCK_DIALECT_VLLM && !*chunk_text(role))),
            "%s: a role-only first chunk", name);
      bool has_content = json_object_get(delta, "content") != NULL;
      CHECK(s->d == TP_MOCK_DIALECT_TRTLLM ? !has_content : has_content,
            "%s: role chunk content key (vLLM \"\", llama.cpp null, trtllm-serve none)", name);
      if (s->d == TP_MOCK_DIALECT_TRTLLM)
        CHECK(strlen(ev[0].raw) > 1 && ev[0].raw[strlen(ev[0].raw) - 1] == ' ' && ev[1].raw[strlen(ev[1].raw) - 1] == '}',
              "%s: the role chunk, and only it, has a space after the JSON", name);
    }
    json_decref(role);
    char text[128] = "";
    int keys_ok = 1, texts = 0;
    for (int i = first_text; i < first_text + 3; i++) {
      json_t *o = json_loads(ev[i].value, 0, NULL);
      char keys[256], ckeys[256];
      keys_of(o, keys, sizeof(keys));
      keys_of(json_array_get(json_object_get(o, "choices"), 0), ckeys, sizeof(ckeys));
      if (strcmp(keys, s->chunk_keys) != 0 || strcmp(ckeys, s->choice_keys) != 0) {
        bool last = i == first_text + 2 && s->finish_on_text;
        /* The finishing chunk may carry extra keys. */
        if (!last || strncmp(keys, s->chunk_keys, strlen(s->chunk_keys)) != 0) keys_ok = 0;
        if (!last) printf("#   event %d keys %s | %s\n", i, keys, ckeys);
      }
      const char *t = o ? chunk_text(o) : NULL;
      if (t) {
        strncat(text, t, sizeof(text) - strlen(text) - 1);
        texts++;
      }
      if (s->d == TP_MOCK_DIALECT_TGI && s->api == TP_MOCK_API_CHAT) {
        json_t *delta = json_object_get(json_array_get(json_object_get(o, "choices"), 0), "delta");
        CHECK_STR(json_string_value(json_object_get(delta, "role")), "assistant", "tgi chat: role in every delta");
        CHECK_STR(json_string_value(json_object_get(o, "id")), "", "tgi chat: id is empty");
      }
      json_decref(o);
    }
    CHECK(keys_ok, "%s: text chunks have the dialect's keys in its order", name);
    CHECK(texts == 3 && strcmp(text, " Hello big world") == 0, "%s: the deltas join to the text", name);
    /* Where finish_reason goes. */
    int fin_at = s->finish_on_text ? first_text + 2 : first_text + 3;
    json_t *fo = json_loads(ev[fin_at].value, 0, NULL);
    json_t *fc = json_array_get(json_object_get(fo, "choices"), 0);
    CHECK_STR(json_string_value(json_object_get(fc, "finish_reason")), "length", name);
    if (s->d == TP_MOCK_DIALECT_LLAMACPP) {
      json_t *tm = json_object_get(fo, "timings");
      CHECK(chunk_text(fo) && !*chunk_text(fo) ? true : json_object_size(json_object_get(fc, "delta")) == 0,
            "%s: the finish chunk carries no text", name);
      CHECK(json_integer_value(json_object_get(tm, "prompt_n")) == 3 &&
                json_integer_value(json_object_get(tm, "predicted_n")) == 3 &&
                json_integer_value(json_object_get(tm, "cache_n")) == 2 &&
                json_real_value(json_object_get(tm, "prompt_ms")) == 12.5,
            "%s: finish chunk timings (prompt_n = uncached prompt, predicted_n, cache_n, prompt_ms)", name);
    }
    if (s->d == TP_MOCK_DIALECT_VLLM) CHECK(json_is_null(json_object_get(fc, "stop_reason")), "%s: stop_reason null", name);
    json_decref(fo);
    /* The usage chunk. */
    json_t *uo = json_loads(ev[n - 2].value, 0, NULL);
    json_t *u = json_object_get(uo, "usage");
    char ukeys[256];
    keys_of(u, ukeys, sizeof(ukeys));
    CHECK(json_array_size(json_object_get(uo, "choices")) == 0 && json_is_array(json_object_get(uo, "choices")),
          "%s: usage chunk has choices []", name);
    CHECK_STR(ukeys, s->usage_keys, name);
    CHECK(json_integer_value(json_object_get(u, "prompt_tokens")) == 5 &&
              json_integer_value(json_object_get(u, "completion_tokens")) == 3 &&
              json_integer_value(json_object_get(u, "total_tokens")) == 8,
          "%s: usage counts 5 + 3 = 8", name);
    json_t *ptd = json_object_get(u, "prompt_tokens_details");
    if (ptd) CHECK_INT(json_integer_value(json_object_get(ptd, "cached_tokens")), 2, "cached_tokens in the usage");
    json_decref(uo);
    if (s->d == TP_MOCK_DIALECT_TRTLLM)
      CHECK(strstr((const char *)b.data, "null") == NULL, "%s: no null fields anywhere", name);
    tp_buf_fini(&b);

    /* Without include_usage: no usage chunk. */
    w = writer(s->d, s->api);
    w.include_usage = false;
    tp_buf_init(&b);
    stream3(&b, &w);
    CHECK_INT(split(&b, ev, 16), s->n_events - 1, "without include_usage one event less");
    CHECK(strstr((const char *)b.data, "\"choices\":[]") == NULL, "%s: and no empty-choices chunk", name);
    tp_buf_fini(&b);
  }
}

static void test_continuous_usage(void) {
  tp_mock_sse_writer w = writer(TP_MOCK_DIALECT_VLLM, TP_MOCK_API_CHAT);
  w.continuous_usage = true;
  tp_buf b;
  tp_buf_init(&b);
  stream3(&b, &w);
  event ev[16];
  int n = split(&b, ev, 16);
  int ok = 1;
  for (int i = 1; i < 4; i++) {
    json_t *o = json_loads(ev[i].value, 0, NULL);
    if (json_integer_value(json_object_get(json_object_get(o, "usage"), "completion_tokens")) != i) ok = 0;
    json_decref(o);
  }
  CHECK(n == 6 && ok, "continuous_usage_stats: every text chunk has cumulative usage");
  tp_buf_fini(&b);
}

/* usage_delay_ms and tokens_per_chunk: the last token's call leaves the
 * usage chunk and [DONE] to tp_mock_sse_trailer, and a chunk of several
 * tokens counts them all (so reasoning ends where the count says). */
static void test_trailer_and_chunks(void) {
  tp_mock_sse_writer w = writer(TP_MOCK_DIALECT_VLLM, TP_MOCK_API_CHAT);
  w.reasoning_tokens = 2;
  tp_buf b;
  tp_buf_init(&b);
  tp_mock_usage u = {5, 2, 0};
  w.chunk_tokens = 2;
  CHECK_INT(tp_mock_sse_token(&b, &w, " a b", 4, false, NULL, &u, NULL), 0, "two-token reasoning chunk");
  u.completion_tokens = 5;
  w.chunk_tokens = 3;
  w.trailer_later = true;
  CHECK_INT(tp_mock_sse_token(&b, &w, " c d e", 6, true, "length", &u, NULL), 0, "three-token last chunk");
  event ev[16];
  int n = split(&b, ev, 16);
  json_t *r = n == 3 ? json_loads(ev[1].value, 0, NULL) : NULL,
         *a = n == 3 ? json_loads(ev[2].value, 0, NULL) : NULL;
  json_t *rd = json_object_get(json_array_get(json_object_get(r, "choices"), 0), "delta");
  json_t *ad = json_object_get(json_array_get(json_object_get(a, "choices"), 0), "delta");
  CHECK(n == 3 && json_object_get(rd, "reasoning_content") && json_object_get(ad, "content") && !w.done &&
            w.tokens == 5,
        "role chunk, a reasoning chunk of 2 tokens, an answer chunk of 3; no usage or [DONE] yet (%d events)",
        n);
  json_decref(r);
  json_decref(a);
  tp_buf_reset(&b);
  CHECK_INT(tp_mock_sse_trailer(&b, &w, &u), 0, "trailer written");
  n = split(&b, ev, 16);
  json_t *o = n == 2 ? json_loads(ev[0].value, 0, NULL) : NULL;
  CHECK(n == 2 && json_array_size(json_object_get(o, "choices")) == 0 &&
            json_integer_value(json_object_get(json_object_get(o, "usage"), "completion_tokens")) == 5 &&
            strcmp(ev[1].value, "[DONE]") == 0 && w.done,
        "the trailer: the usage-only chunk (choices []) with the whole count, then [DONE]");
  json_decref(o);
  tp_buf_fini(&b);
}

static void test_errors(void) {
  static const struct {
    tp_mock_dialect d;
    const char *first_raw_prefix;
    bool done_after;
  } ec[] = {
      {TP_MOCK_DIALECT_VLLM, "data: {\"error\":{\"message\":\"boom\",\"type\":\"InternalServerError\",\"param\":null,\"code\":500}}",
       true},
      {TP_MOCK_DIALECT_TRTLLM,
       "data: {\"object\":\"error\",\"message\":\"boom\",\"type\":\"InternalServerError\",\"param\":null,\"code\":500}", true},
      {TP_MOCK_DIALECT_TGI, "data:{\"error\":{\"message\":\"boom\",\"http_status_code\":500}}", false},
      {TP_MOCK_DIALECT_LLAMACPP, "error: {\"error\":{\"code\":500,\"message\":\"boom\",\"type\":\"server_error\"}}", false},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(ec); i++) {
    tp_mock_sse_writer w = writer(ec[i].d, TP_MOCK_API_COMPLETIONS);
    tp_buf b;
    tp_buf_init(&b);
    CHECK_INT(tp_mock_sse_error(&b, &w, "boom", 500), 0, "error written");
    event ev[4];
    int n = split(&b, ev, 4);
    CHECK_STR(ev[0].raw, ec[i].first_raw_prefix, tp_mock_dialect_name(ec[i].d));
    CHECK(n == (ec[i].done_after ? 2 : 1) && (!ec[i].done_after || strcmp(ev[1].value, "[DONE]") == 0) && w.done,
          "%s: [DONE] after an in-stream error only where the server sends it", tp_mock_dialect_name(ec[i].d));
    tp_buf_fini(&b);
  }
  static const struct {
    tp_mock_dialect d;
    int status;
    const char *body;
  } bc[] = {
      {TP_MOCK_DIALECT_VLLM, 404,
       "{\"error\":{\"message\":\"no \\\"x\\\"\",\"type\":\"NotFoundError\",\"param\":null,\"code\":404}}"},
      {TP_MOCK_DIALECT_VLLM, 429, "{\"error\":{\"message\":\"no \\\"x\\\"\",\"type\":\"RateLimitError\",\"param\":null,\"code\":429}}"},
      {TP_MOCK_DIALECT_TRTLLM, 400,
       "{\"object\":\"error\",\"message\":\"no \\\"x\\\"\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}"},
      {TP_MOCK_DIALECT_TGI, 422, "{\"error\":\"no \\\"x\\\"\",\"error_type\":\"validation\"}"},
      {TP_MOCK_DIALECT_LLAMACPP, 503, "{\"error\":{\"code\":503,\"message\":\"no \\\"x\\\"\",\"type\":\"server_error\"}}"},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(bc); i++) {
    tp_buf b;
    tp_buf_init(&b);
    tp_mock_oai_error_body(&b, bc[i].d, "no \"x\"", bc[i].status);
    CHECK_STR((const char *)b.data, bc[i].body, "error body");
    tp_buf_fini(&b);
  }
}

static void test_bodies(void) {
  tp_mock_usage u = {4, 2, 0};
  tp_buf b;
  tp_buf_init(&b);
  tp_mock_sse_writer w = writer(TP_MOCK_DIALECT_VLLM, TP_MOCK_API_CHAT);
  tp_mock_oai_body(&b, &w, " a b", 4, "stop", &u, NULL);
  CHECK_STR((const char *)b.data,
            "{\"id\":\"chatcmpl-1\",\"object\":\"chat.completion\",\"created\":1700000000,\"model\":\"m\",\"choices\":"
            "[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\" a b\"},\"logprobs\":null,"
            "\"finish_reason\":\"stop\",\"stop_reason\":null}],\"usage\":{\"prompt_tokens\":4,\"total_tokens\":6,"
            "\"completion_tokens\":2,\"prompt_tokens_details\":{\"cached_tokens\":0}}}",
            "vllm chat body");
  tp_buf_reset(&b);
  w = writer(TP_MOCK_DIALECT_VLLM, TP_MOCK_API_COMPLETIONS);
  tp_mock_oai_body(&b, &w, " a b", 4, "length", &u, NULL);
  json_t *o = json_loads((const char *)b.data, 0, NULL);
  CHECK(o && !strcmp(json_string_value(json_object_get(o, "object")), "text_completion") &&
            !strcmp(chunk_text(o), " a b"),
        "vllm completions body: text_completion with the text");
  json_decref(o);
  for (int d = 0; d < TP_MOCK_DIALECT_COUNT; d++)
    for (int api = 0; api < 2; api++) {
      tp_buf_reset(&b);
      w = writer((tp_mock_dialect)d, (tp_mock_api)api);
      tp_mock_oai_body(&b, &w, "x", 1, "length", &u, NULL);
      o = json_loads((const char *)b.data, 0, NULL);
      json_t *c = json_array_get(json_object_get(o, "choices"), 0);
      const char *t = json_string_value(json_object_get(c, "text"));
      if (!t) t = json_string_value(json_object_get(json_object_get(c, "message"), "content"));
      CHECK(o && t && !strcmp(t, "x") && json_integer_value(json_object_get(json_object_get(o, "usage"), "total_tokens")) == 6,
            "%s %s body parses, with text and usage", tp_mock_dialect_name((tp_mock_dialect)d), api ? "chat" : "completions");
      json_decref(o);
    }
  tp_buf_reset(&b);
  tp_mock_generate_json(&b, "ensemble", "r1", " hi", 3);
  CHECK_STR((const char *)b.data, "{\"id\":\"r1\",\"model_name\":\"ensemble\",\"model_version\":\"1\",\"text_output\":\" hi\"}",
            "generate JSON with an id");
  tp_buf_reset(&b);
  tp_mock_generate_event(&b, "vllm_model", NULL, "\"q\"\n", 4);
  CHECK_STR((const char *)b.data,
            "data: {\"model_name\":\"vllm_model\",\"model_version\":\"1\",\"text_output\":\"\\\"q\\\"\\n\"}\n\n",
            "generate_stream event without an id, escaped text");
  tp_buf_reset(&b);
  tp_mock_generate_error(&b, "bad", true);
  CHECK_STR((const char *)b.data, "data: {\"error\":\"bad\"}\n\n", "generate_stream error event");
  tp_buf_reset(&b);
  tp_mock_json_str(&b, "a\x01\xff\xfe\\\t", 6);
  CHECK_MEM(b.data, b.len, "\"a\\u0001\xff\xfe\\\\\\u0009\"", 19, "JSON strings: control bytes escaped, others as they are");
  tp_buf_reset(&b);
  CHECK_INT(tp_mock_sse_keepalive(&b), 0, "keep-alive written");
  CHECK_STR((const char *)b.data, ":\n\n", "keep-alive is an empty comment");
  tp_buf_fini(&b);
  tp_mock_dialect d;
  CHECK(tp_mock_dialect_parse("trtllm", &d) == 0 && d == TP_MOCK_DIALECT_TRTLLM, "trtllm is trtllm-serve");
  CHECK(tp_mock_dialect_parse("sglang", &d) == TP_EINVAL, "unknown dialect refused");
  CHECK_STR(tp_mock_error_type(503), "ServiceUnavailableError", "503 type");
}

int main(void) {
  test_streams();
  test_continuous_usage();
  test_trailer_and_chunks();
  test_errors();
  test_bodies();
  return tp_test_done();
}

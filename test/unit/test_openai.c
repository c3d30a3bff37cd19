/* Tests for the HTTP JSON adapters (lib/api/tp_openai.c): request bodies
 * byte for byte, chunk decoding on the shapes the OpenAI and Triton generate APIs send,
 * error texts, and extra inputs. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "api/tp_openai.h"
#include "tp_test.h"
#include "util/tp_common.h"
#include "tokperf/tokperf.h"

/* ---- API names and paths ------------------------------------------------- */

static void test_api_names(void) {
  tp_http_api a;
  CHECK(tp_http_api_parse("openai-chat", &a) == 0 && a == TP_HTTP_API_OPENAI_CHAT, "parse openai-chat");
  CHECK(tp_http_api_parse("openai-completions", &a) == 0 && a == TP_HTTP_API_OPENAI_COMPLETIONS,
        "parse openai-completions");
  CHECK(tp_http_api_parse("triton-generate", &a) == 0 && a == TP_HTTP_API_TRITON_GENERATE,
        "parse triton-generate");
  CHECK_INT(tp_http_api_parse("openai", &a), TP_EINVAL, "unknown API name refused");
  CHECK_STR(tp_http_api_name(TP_HTTP_API_OPENAI_CHAT), "openai-chat", "name of chat");
  CHECK_STR(tp_http_api_name((tp_http_api)99), "?", "name out of range");

  char p[128];
  tp_http_api_path(TP_HTTP_API_OPENAI_COMPLETIONS, "m", NULL, true, p, sizeof(p));
  CHECK_STR(p, "/v1/completions", "completions path");
  tp_http_api_path(TP_HTTP_API_OPENAI_CHAT, "m", NULL, false, p, sizeof(p));
  CHECK_STR(p, "/v1/chat/completions", "chat path");
  tp_http_api_path(TP_HTTP_API_TRITON_GENERATE, "ensemble", "", true, p, sizeof(p));
  CHECK_STR(p, "/v2/models/ensemble/generate_stream", "Triton streaming path");
  tp_http_api_path(TP_HTTP_API_TRITON_GENERATE, "ensemble", "2", false, p, sizeof(p));
  CHECK_STR(p, "/v2/models/ensemble/versions/2/generate", "Triton path with version, not streaming");
  tp_http_api_path(TP_HTTP_API_TRITON_GENERATE, "a b/c", NULL, true, p, sizeof(p));
  CHECK_STR(p, "/v2/models/a%20b%2Fc/generate_stream", "model name percent-encoded");
  char small[12];
  tp_http_api_path(TP_HTTP_API_TRITON_GENERATE, "ensemble", NULL, true, small, sizeof(small));
  CHECK_INT(strlen(small), sizeof(small) - 1, "path truncated to the buffer, NUL-terminated");
}

/* ---- request bodies ------------------------------------------------------ */

static void check_body_msgs(const tp_openai_opts *o, const char *prompt, const char *messages, uint32_t max_tokens,
                            uint32_t min_tokens, const char *want, const char *what) {
  tp_buf b;
  tp_buf_init(&b);
  tp_buf_append_str(&b, "old content");
  int rv = tp_openai_build_request(&b, o, prompt, strlen(prompt), messages, max_tokens, min_tokens);
  CHECK_INT(rv, 0, what);
  CHECK_STR((const char *)b.data, want, what);
  tp_buf_fini(&b);
}

static void check_body(const tp_openai_opts *o, const char *prompt, uint32_t max_tokens, uint32_t min_tokens,
                       const char *want, const char *what) {
  check_body_msgs(o, prompt, NULL, max_tokens, min_tokens, want, what);
}

static void test_bodies(void) {
  tp_openai_opts o;
  memset(&o, 0, sizeof(o));
  o.api = TP_HTTP_API_OPENAI_COMPLETIONS;
  o.model = "m";
  o.streaming = true;
  o.include_usage = true;
  check_body(&o, "Hi \"you\"", 64, 0,
             "{\"model\":\"m\",\"prompt\":\"Hi \\\"you\\\"\",\"max_tokens\":64,\"stream\":true,"
             "\"stream_options\":{\"include_usage\":true}}",
             "completions, streaming, usage");
  o.api = TP_HTTP_API_OPENAI_CHAT;
  check_body(&o, "Hi", 8, 8,
             "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":8,"
             "\"stream\":true,"
             "\"stream_options\":{\"include_usage\":true},\"min_tokens\":8,\"ignore_eos\":true}",
             "chat, deterministic length");
  o.streaming = false;
  check_body(&o, "Hi", 0, 0,
             "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"stream\":false}",
             "chat, not streaming: no stream_options, no max_tokens when 0");
  o.streaming = true;
  o.include_usage = false;
  o.model = NULL;
  check_body(&o, "Hi", 1, 0,
             "{\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"max_tokens\":1,\"stream\":true}",
             "chat without usage and without model");

  /* Extra fields merge recursively and win. */
  json_t *extra = NULL;
  const char *items[] = {"temperature:0", "{\"stream_options\":{\"continuous_usage_stats\":true}}",
                         "max_tokens:5"};
  CHECK_INT(tp_openai_parse_extra(&extra, items, 3, NULL, 0), 0, "extra inputs parse");
  o.api = TP_HTTP_API_OPENAI_COMPLETIONS;
  o.model = "m";
  o.include_usage = true;
  o.extra = extra;
  check_body(&o, "x", 64, 0,
             "{\"model\":\"m\",\"prompt\":\"x\",\"max_tokens\":5,\"stream\":true,"
             "\"stream_options\":{\"include_usage\":true,\"continuous_usage_stats\":true},\"temperature\":0}",
             "extra inputs merged (override max_tokens, merge stream_options)");
  json_decref(extra);
  o.extra = NULL;

  /* Triton generate. */
  memset(&o, 0, sizeof(o));
  o.api = TP_HTTP_API_TRITON_GENERATE;
  o.streaming = true;
  o.backend = TP_BACKEND_TENSORRTLLM;
  check_body(&o, "What is ML?", 64, 0, "{\"text_input\":\"What is ML?\",\"stream\":true,\"max_tokens\":64}",
             "Triton TensorRT-LLM streaming");
  check_body(&o, "q", 64, 64, "{\"text_input\":\"q\",\"stream\":true,\"max_tokens\":64,\"min_length\":64}",
             "Triton TensorRT-LLM deterministic: min_length");
  o.trtllm_min_tokens = true;
  o.exclude_input = true;
  o.streaming = false;
  check_body(&o, "q", 64, 64,
             "{\"text_input\":\"q\",\"exclude_input_in_output\":true,\"max_tokens\":64,\"min_tokens\":64}",
             "Triton TensorRT-LLM (TRT-LLM repo copy) not streaming: min_tokens, exclude input");
  memset(&o, 0, sizeof(o));
  o.api = TP_HTTP_API_TRITON_GENERATE;
  o.streaming = true;
  o.backend = TP_BACKEND_VLLM;
  o.exclude_input = true;
  check_body(&o, "q", 32, 32,
             "{\"text_input\":\"q\",\"stream\":true,\"exclude_input_in_output\":true,"
             "\"parameters\":{\"max_tokens\":32,\"min_tokens\":32,\"ignore_eos\":true}}",
             "Triton vLLM: sampling values in parameters");
  check_body(&o, "q", 0, 0, "{\"text_input\":\"q\",\"stream\":true,\"exclude_input_in_output\":true}",
             "Triton vLLM without limits: no empty parameters object");

  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_openai_build_request(&b, &o, "\xff\xfe", 2, NULL, 1, 0), TP_EINVAL, "invalid UTF-8 prompt refused");
  const char nul_prompt[] = "a\0b";
  o.api = TP_HTTP_API_OPENAI_COMPLETIONS;
  o.streaming = false;
  tp_openai_build_request(&b, &o, nul_prompt, 3, NULL, 0, 0);
  CHECK_STR((const char *)b.data, "{\"prompt\":\"a\\u0000b\",\"stream\":false}",
            "NUL inside a prompt escaped");
  tp_buf_fini(&b);

  /* Chat messages from an input file: sent as they are for chat, joined
   * for the other APIs; anything but a list of messages is refused. */
  const char *msgs =
      "[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":[{\"type\":\"text\","
      "\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}],\"name\":\"u1\"}]";
  o.model = NULL;
  o.api = TP_HTTP_API_OPENAI_CHAT;
  check_body_msgs(&o, "ignored", msgs, 5, 0,
             "{\"messages\":[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":"
             "[{\"type\":\"text\",\"text\":\"a\"},{\"type\":\"text\",\"text\":\"b\"}],\"name\":\"u1\"}],"
             "\"max_tokens\":5,\"stream\":false}",
             "chat: the file's messages as they are");
  o.api = TP_HTTP_API_OPENAI_COMPLETIONS;
  check_body_msgs(&o, "ignored", msgs, 5, 0, "{\"prompt\":\"be brief\\na\\nb\",\"max_tokens\":5,\"stream\":false}",
             "completions: message contents joined by newlines");
  tp_buf_init(&b);
  o.api = TP_HTTP_API_OPENAI_CHAT;
  CHECK_INT(tp_openai_build_request(&b, &o, "", 0, "{}", 1, 0), TP_EINVAL,
            "messages that are not a list refused");
  CHECK_INT(tp_openai_build_request(&b, &o, "", 0, "[]", 1, 0), TP_EINVAL,
            "an empty list of messages refused");
  tp_buf_fini(&b);
}

static void test_extra(void) {
  json_t *e = NULL;
  const char *items[] = {"top_k:1",         "temperature:0.5", "stop:END",
                         "ignore_eos:true", "seed:null",       "stop_token_ids:[1,2]",
                         "note:\"quoted\"", "empty:",          "top_k:2"};
  CHECK_INT(tp_openai_parse_extra(&e, items, TP_ARRAY_LEN(items), NULL, 0), 0, "NAME:VALUE items parse");
  CHECK(json_integer_value(json_object_get(e, "top_k")) == 2, "later item wins (top_k 2)");
  CHECK(json_is_real(json_object_get(e, "temperature")) &&
            json_real_value(json_object_get(e, "temperature")) == 0.5,
        "number value is a JSON number");
  CHECK_STR(json_string_value(json_object_get(e, "stop")), "END", "non-JSON value is a string");
  CHECK(json_is_true(json_object_get(e, "ignore_eos")), "true is a boolean");
  CHECK(json_is_null(json_object_get(e, "seed")), "null is null");
  CHECK(json_array_size(json_object_get(e, "stop_token_ids")) == 2, "array value");
  CHECK_STR(json_string_value(json_object_get(e, "note")), "quoted", "quoted JSON string");
  CHECK_STR(json_string_value(json_object_get(e, "empty")), "", "empty value is an empty string");
  json_decref(e);

  char err[256];
  const char *bad1[] = {"novalue"};
  CHECK_INT(tp_openai_parse_extra(&e, bad1, 1, err, sizeof(err)), TP_EINVAL, "item without colon refused");
  CHECK(strstr(err, "'novalue'") && strstr(err, "NAME:VALUE"), "message quotes the item and the form");
  const char *bad2[] = {":x"};
  CHECK_INT(tp_openai_parse_extra(&e, bad2, 1, err, sizeof(err)), TP_EINVAL, "empty name refused");
  const char *bad3[] = {"{\"a\":"};
  CHECK_INT(tp_openai_parse_extra(&e, bad3, 1, err, sizeof(err)), TP_EINVAL, "broken JSON object refused");
  CHECK(strstr(err, "not a valid JSON object") != NULL, "message says the JSON is broken");
  CHECK(e == NULL, "nothing returned on error");
  CHECK_INT(tp_openai_parse_extra(&e, NULL, 0, NULL, 0), 0, "no items");
  CHECK(e == NULL, "no items: NULL object");
}

/* ---- decoding ------------------------------------------------------------- */

typedef struct dec_case {
  const char *name;
  tp_http_api api;
  const char *json;
  int rv;
  const char *text;      /* NULL = no text */
  const char *reasoning; /* NULL = none */
  const char *finish;
  const char *error;
  int64_t error_code;
  bool has_choices;
  bool has_usage;
  int64_t prompt_tokens, completion_tokens, cached_tokens, output_tokens;
} dec_case;

#define C TP_HTTP_API_OPENAI_COMPLETIONS
#define CH TP_HTTP_API_OPENAI_CHAT
#define TG TP_HTTP_API_TRITON_GENERATE

static const dec_case dec_cases[] = {
    {"completions chunk", C,
     "{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1700000000,\"model\":\"m\",\"choices\":[{"
     "\"index\":0,"
     "\"text\":\" Hello\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}],\"usage\":null}",
     0, " Hello", NULL, NULL, NULL, 0, true, false, -1, -1, -1, -1},
    {"completions usage chunk", C,
     "{\"id\":\"c\",\"object\":\"text_completion\",\"choices\":[],\"usage\":{\"prompt_tokens\":5,\"total_"
     "tokens\":133,"
     "\"completion_tokens\":128,\"prompt_tokens_details\":{\"cached_tokens\":4}}}",
     0, NULL, NULL, NULL, NULL, 0, false, true, 5, 128, 4, -1},
    {"chat role-only first chunk is no text", CH,
     "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"logprobs\":null,"
     "\"finish_reason\":null}]}",
     0, NULL, NULL, NULL, NULL, 0, true, false, -1, -1, -1, -1},
    {"chat role-only without content (trtllm-serve)", CH,
     "{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\"}}]}", 0, NULL, NULL, NULL, NULL, 0, true,
     false, -1, -1, -1, -1},
    {"chat text chunk", CH,
     "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"},\"finish_reason\":null}]}", 0, "Hel", NULL,
     NULL, NULL, 0, true, false, -1, -1, -1, -1},
    {"chat finish chunk with text", CH,
     "{\"choices\":[{\"index\":0,\"delta\":{\"content\":\"!\"},\"finish_reason\":\"stop\",\"stop_reason\":"
     "null}]}",
     0, "!", NULL, "stop", NULL, 0, true, false, -1, -1, -1, -1},
    {"chat reasoning_content apart", CH,
     "{\"choices\":[{\"delta\":{\"reasoning_content\":\"think\",\"content\":null}}]}", 0, NULL, "think", NULL,
     NULL, 0, true, false, -1, -1, -1, -1},
    {"chat reasoning (newer name) and content", CH,
     "{\"choices\":[{\"delta\":{\"reasoning\":\"r\",\"content\":\"c\"}}]}", 0, "c", "r", NULL, NULL, 0, true,
     false, -1, -1, -1, -1},
    {"chat usage chunk, usage null elsewhere", CH,
     "{\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":7,\"total_tokens\":10}}", 0, NULL,
     NULL, NULL, NULL, 0, false, true, 3, 7, -1, -1},
    {"TGI chunk: role in every delta", CH,
     "{\"id\":\"\",\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"x\"},\"finish_reason\":null}"
     "],"
     "\"usage\":null}",
     0, "x", NULL, NULL, NULL, 0, true, false, -1, -1, -1, -1},
    {"chat non-streaming reply", CH,
     "{\"object\":\"chat.completion\",\"choices\":[{\"message\":{\"role\":\"assistant\",\"content\":\"full "
     "text\"},"
     "\"finish_reason\":\"length\"}],\"usage\":{\"prompt_tokens\":2,\"completion_tokens\":2}}",
     0, "full text", NULL, "length", NULL, 0, true, true, 2, 2, -1, -1},
    {"two choices joined", C, "{\"choices\":[{\"index\":0,\"text\":\"a\"},{\"index\":1,\"text\":\"b\"}]}", 0,
     "ab", NULL, NULL, NULL, 0, true, false, -1, -1, -1, -1},
    {"vLLM in-stream error (new shape)", CH,
     "{\"error\":{\"message\":\"boom\",\"type\":\"BadRequestError\",\"param\":null,\"code\":400}}", 0, NULL,
     NULL, NULL, "boom", 400, false, false, -1, -1, -1, -1},
    {"flat error shape", C,
     "{\"object\":\"error\",\"message\":\"flat\",\"type\":\"BadRequestError\",\"code\":400}", 0, NULL, NULL,
     NULL, "flat", 400, false, false, -1, -1, -1, -1},
    {"TGI in-stream error", CH, "{\"error\":{\"message\":\"too long\",\"http_status_code\":422}}", 0, NULL,
     NULL, NULL, "too long", 422, false, false, -1, -1, -1, -1},
    {"error as a string", C, "{\"error\":\"plain\"}", 0, NULL, NULL, NULL, "plain", 0, false, false, -1, -1,
     -1, -1},
    {"error: null is no error", C, "{\"error\":null,\"choices\":[{\"text\":\"t\"}]}", 0, "t", NULL, NULL,
     NULL, 0, true, false, -1, -1, -1, -1},
    {"error object without message", C, "{\"error\":{\"code\":7}}", 0, NULL, NULL, NULL, "{\"code\":7}", 7,
     false, false, -1, -1, -1, -1},
    {"Triton generate_stream event", TG,
     "{\"model_name\":\"ensemble\",\"model_version\":\"1\",\"text_output\":\" ok\"}", 0, " ok", NULL, NULL,
     NULL, 0, false, false, -1, -1, -1, -1},
    {"Triton vLLM with counts and finish", TG,
     "{\"text_output\":\"t\",\"num_output_tokens\":3,\"finish_reason\":\"length\"}", 0, "t", NULL, "length",
     NULL, 0, false, false, -1, -1, -1, 3},
    {"Triton finish_reason None is none", TG, "{\"text_output\":\"t\",\"finish_reason\":\"None\"}", 0, "t",
     NULL, NULL, NULL, 0, false, false, -1, -1, -1, -1},
    {"Triton array outputs", TG, "{\"text_output\":[\"a\",\"b\"],\"num_output_tokens\":[1,2]}", 0, "ab", NULL,
     NULL, NULL, 0, false, false, -1, -1, -1, 3},
    {"Triton error event", TG, "{\"error\":\"Error generating stream: x\"}", 0, NULL, NULL, NULL,
     "Error generating stream: x", 0, false, false, -1, -1, -1, -1},
    {"unknown keys ignored", CH,
     "{\"prompt_token_ids\":null,\"x\":{\"y\":[1]},\"choices\":[{\"delta\":{\"content\":\"z\"}}]}", 0, "z",
     NULL, NULL, NULL, 0, true, false, -1, -1, -1, -1},
    {"not JSON", CH, "data: {", TP_EPROTO, NULL, NULL, NULL, NULL, 0, false, false, -1, -1, -1, -1},
    {"JSON but not an object", CH, "[1,2]", TP_EPROTO, NULL, NULL, NULL, NULL, 0, false, false, -1, -1, -1,
     -1},
    {"[DONE] is not JSON", CH, "[DONE]", TP_EPROTO, NULL, NULL, NULL, NULL, 0, false, false, -1, -1, -1, -1},
    {"text of the wrong type ignored", C, "{\"choices\":[{\"text\":5},7]}", 0, NULL, NULL, NULL, NULL, 0,
     true, false, -1, -1, -1, -1},
};

static bool mem_is(const uint8_t *p, size_t n, const char *want) {
  if (!want) return p == NULL && n == 0;
  return p && n == strlen(want) && memcmp(p, want, n) == 0;
}

static bool str_is(const char *got, const char *want) {
  return want ? got && strcmp(got, want) == 0 : got == NULL;
}

static bool check_chunk(const dec_case *t, int rv, const tp_openai_chunk *ch) {
  return rv == t->rv && mem_is(ch->text, ch->text_len, t->text) &&
         mem_is(ch->reasoning, ch->reasoning_len, t->reasoning) && str_is(ch->finish_reason, t->finish) &&
         str_is(ch->error, t->error) && ch->error_code == t->error_code &&
         ch->has_choices == t->has_choices && ch->has_usage == t->has_usage &&
         ch->prompt_tokens == t->prompt_tokens && ch->completion_tokens == t->completion_tokens &&
         ch->cached_tokens == t->cached_tokens && ch->output_tokens == t->output_tokens;
}

static void test_decode(void) {
  tp_openai_decoder d;
  tp_openai_decoder_init(&d);
  for (size_t i = 0; i < TP_ARRAY_LEN(dec_cases); i++) {
    const dec_case *t = &dec_cases[i];
    tp_openai_chunk ch;
    int rv = tp_openai_decode(&d, t->api, (const uint8_t *)t->json, strlen(t->json), &ch);
    bool ok = check_chunk(t, rv, &ch);
    CHECK(ok, "decode: %s", t->name);
    if (!ok)
      printf(
          "#   rv %d text '%.*s' reasoning '%.*s' finish %s error %s code %lld usage %d %lld/%lld/%lld out "
          "%lld\n",
          rv, (int)ch.text_len, ch.text ? (const char *)ch.text : "", (int)ch.reasoning_len,
          ch.reasoning ? (const char *)ch.reasoning : "", ch.finish_reason ? ch.finish_reason : "-",
          ch.error ? ch.error : "-", (long long)ch.error_code, ch.has_usage, (long long)ch.prompt_tokens,
          (long long)ch.completion_tokens, (long long)ch.cached_tokens, (long long)ch.output_tokens);
  }
  tp_openai_decoder_fini(&d);
}

/* Each document placed so that it ends right before an unmapped page. */
static void test_decode_guard_page(void) {
  long pg = sysconf(_SC_PAGESIZE);
  uint8_t *mem = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED || mprotect(mem + pg, (size_t)pg, PROT_NONE) != 0) {
    CHECK(0, "guard page set up");
    return;
  }
  tp_openai_decoder d;
  tp_openai_decoder_init(&d);
  size_t bad = 0;
  for (size_t i = 0; i < TP_ARRAY_LEN(dec_cases); i++) {
    const dec_case *t = &dec_cases[i];
    size_t n = strlen(t->json);
    uint8_t *p = mem + pg - n;
    memcpy(p, t->json, n);
    tp_openai_chunk ch;
    int rv = tp_openai_decode(&d, t->api, p, n, &ch);
    if (!check_chunk(t, rv, &ch)) bad++;
    char out[220];
    tp_openai_error_text(p, n, 200, out);
    if (tp_openai_is_done(p, n) != (strcmp(t->json, "[DONE]") == 0)) bad++;
  }
  memcpy(mem + pg - 6, "[DONE]", 6);
  if (!tp_openai_is_done(mem + pg - 6, 6)) bad++;
  CHECK_INT(bad, 0, "guard page: decoding reads only the bytes given");
  tp_openai_decoder_fini(&d);
  munmap(mem, (size_t)pg * 2);
}

static void test_done(void) {
  CHECK(tp_openai_is_done((const uint8_t *)"[DONE]", 6), "[DONE]");
  CHECK(tp_openai_is_done((const uint8_t *)" [DONE] ", 8), "[DONE] with padding");
  CHECK(!tp_openai_is_done((const uint8_t *)"[DONE]x", 7), "[DONE]x is not");
  CHECK(!tp_openai_is_done((const uint8_t *)"[done]", 6), "case matters");
  CHECK(!tp_openai_is_done((const uint8_t *)"", 0), "empty is not");
}

static void test_error_text(void) {
  char out[210];
  const char *s;
  s = "{\"error\":{\"message\":\"The model `x` does not exist.\",\"type\":\"NotFoundError\",\"code\":404}}";
  CHECK_STR(tp_openai_error_text((const uint8_t *)s, strlen(s), 200, out), "The model `x` does not exist.",
            "OpenAI/vLLM error body");
  s = "{\"object\":\"error\",\"message\":\"flat msg\",\"code\":400}";
  CHECK_STR(tp_openai_error_text((const uint8_t *)s, strlen(s), 200, out), "flat msg", "flat error body");
  s = "{\"error\":\"Request timeout\",\"error_type\":\"overloaded\"}\n";
  CHECK_STR(tp_openai_error_text((const uint8_t *)s, strlen(s), 200, out), "Request timeout",
            "TGI/Triton string error");
  s = "{\"detail\":\"Not Found\"}";
  CHECK_STR(tp_openai_error_text((const uint8_t *)s, strlen(s), 200, out), "Not Found", "FastAPI detail");
  s = "{\"detail\":[{\"loc\":[\"body\"],\"msg\":\"field required\"}]}";
  CHECK_STR(tp_openai_error_text((const uint8_t *)s, strlen(s), 200, out),
            "[{\"loc\":[\"body\"],\"msg\":\"field required\"}]", "FastAPI detail list shown as compact JSON");
  s = "  <html>Bad\r\nGateway</html>\n";
  CHECK_STR(tp_openai_error_text((const uint8_t *)s, strlen(s), 200, out), "<html>Bad  Gateway</html>",
            "plain text body trimmed, control bytes as spaces");
  CHECK_STR(tp_openai_error_text((const uint8_t *)"", 0, 200, out), "(empty body)", "empty body");
  char longb[400];
  memset(longb, 'a', sizeof(longb));
  tp_openai_error_text((const uint8_t *)longb, sizeof(longb), 200, out);
  CHECK_INT(strlen(out), 203, "long body cut to 200 characters plus ...");
  CHECK(memcmp(out + 200, "...", 3) == 0, "cut marked with ...");
  /* A two-byte character straddling the cut is not split. */
  memset(longb, 'a', sizeof(longb));
  memcpy(longb + 199, "\xc3\xa9", 2);
  tp_openai_error_text((const uint8_t *)longb, sizeof(longb), 200, out);
  CHECK(strlen(out) == 202 && memcmp(out + 199, "...", 3) == 0, "UTF-8 character not cut in half");
}

/* Request ids (docs/metrics.md, "Request ids"): Triton generate sends the
 * run's id as "id"; OpenAI bodies have no such field (the id goes as a
 * header); a decoded document gives its "id". */
static void test_ids(void) {
  tp_openai_opts o;
  memset(&o, 0, sizeof(o));
  o.api = TP_HTTP_API_TRITON_GENERATE;
  o.backend = TP_BACKEND_VLLM;
  o.request_id = "c4-17";
  check_body(&o, "Hi", 0, 0, "{\"text_input\":\"Hi\",\"id\":\"c4-17\"}", "Triton generate: the id in the body");
  o.api = TP_HTTP_API_OPENAI_CHAT;
  o.model = "m";
  check_body(&o, "Hi", 0, 0, "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"Hi\"}],\"stream\":false}",
             "OpenAI: no id in the body");
  tp_openai_decoder d;
  tp_openai_decoder_init(&d);
  tp_openai_chunk ch;
  static const char chunk[] = "{\"id\":\"chatcmpl-9\",\"choices\":[{\"delta\":{\"content\":\"a\"}}]}";
  CHECK(tp_openai_decode(&d, TP_HTTP_API_OPENAI_CHAT, (const uint8_t *)chunk, strlen(chunk), &ch) == 0 && ch.id &&
            strcmp(ch.id, "chatcmpl-9") == 0,
        "a chunk's id");
  static const char gen[] = "{\"id\":\"c4-17\",\"model_name\":\"m\",\"text_output\":\"a\"}";
  CHECK(tp_openai_decode(&d, TP_HTTP_API_TRITON_GENERATE, (const uint8_t *)gen, strlen(gen), &ch) == 0 && ch.id &&
            strcmp(ch.id, "c4-17") == 0,
        "Triton's echoed id");
  static const char none[] = "{\"id\":7,\"choices\":[]}";
  CHECK(tp_openai_decode(&d, TP_HTTP_API_OPENAI_CHAT, (const uint8_t *)none, strlen(none), &ch) == 0 && !ch.id,
        "an id that is not a string: none");
  tp_openai_decoder_fini(&d);
}

int main(void) {
  test_api_names();
  test_ids();
  test_bodies();
  test_extra();
  test_decode();
  test_decode_guard_page();
  test_done();
  test_error_text();
  return tp_test_done();
}

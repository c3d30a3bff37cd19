/* Unit tests of each response's own payload in perf_analyzer's profile
 * export (lib/report/tp_export_pa.c): where a response's text starts and
 * ends in the record (tp_record_append_text, tp__pa_piece) and the OpenAI
 * payload written for it.
 *
 * The payloads are checked against facts of the formats, not our output:
 *   - perf_analyzer's OpenAI client keeps each streamed read as the bytes
 *     that came, under "response": "data: {...}\n\n"; the read that holds
 *     "data: [DONE]" is the final one.  Without streaming it keeps the body.
 *   - OpenAI's streamed chat chunk: {"id", "object":
 *     "chat.completion.chunk", "created", "model", "choices": [{"index",
 *     "delta": {"role"?, "content"?}, "finish_reason"}]}; completions:
 *     {"object": "text_completion", "choices": [{"text", ...}]}; a chat body
 *     "chat.completion" with choices[0].message.content.  vLLM adds
 *     "reasoning_content" beside "content".
 *   - GenAI-Perf's parser splits a response on blank lines, strips "data:
 *     ", skips "[DONE]", and takes choices[0].delta.content (chunk),
 *     choices[0].message.content (chat body) or choices[0].text
 *     (text_completion); a response whose text is empty is dropped. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "metrics/tp_stats.h"
#include "record/tp_record.h"
#include "report/tp_export.h"
#include "report/tp_export_internal.h"
#include "tp_test.h"
#include "tp_test_config.h"
#include "tokperf/tokperf.h"

#define WALL0 1700000000000000000ULL
#define MONO0 5000000000ULL

/* One response of a record being built: its text, and whether it is
 * reasoning; NULL text = a response without text. */
typedef struct resp {
  const char *text;
  bool reasoning;
} resp;

static void build(tp_record *r, const resp *rs, int n, bool cumulative) {
  tp_record_init(r);
  r->sent_ns = MONO0 + 1000;
  for (int i = 0; i < n; i++) {
    bool has = rs[i].text && *rs[i].text;
    tp_record_add_response(r, MONO0 + 2000 + (uint64_t)i * 100, has);
    if (has) tp_record_append_text(r, rs[i].reasoning, rs[i].text, strlen(rs[i].text), cumulative);
  }
  r->done_ns = n ? r->resp_ns[n - 1] : 0;
}

typedef struct piece_case {
  const char *what;
  resp rs[6];
  int n;
  bool cumulative;
  const char *want[6]; /* each response's piece; NULL = none */
  bool want_reasoning[6];
} piece_case;

static const piece_case PIECES[] = {
    {"deltas: role chunk, reasoning, answer, usage chunk",
     {{NULL, 0}, {"ab", 1}, {"cd", 1}, {"Hel", 0}, {"lo", 0}, {NULL, 0}},
     6,
     false,
     {NULL, "ab", "cd", "Hel", "lo", NULL},
     {0, 1, 1, 0, 0, 0}},
    {"reasoning and answer interleaved",
     {{"x", 0}, {"r1", 1}, {"y", 0}, {"r2", 1}},
     4,
     false,
     {"x", "r1", "y", "r2"},
     {0, 1, 0, 1}},
    {"cumulative: each response is all text so far",
     {{"He", 0}, {"Hello", 0}, {NULL, 0}, {"Hello!", 0}},
     4,
     true,
     {"He", "Hello", NULL, "Hello!"},
     {0}},
    {"a character split across responses goes whole to the later one",
     {{"caf\xc3", 0}, {"\xa9!", 0}, {"\xe2\x82", 0}, {"\xac", 0}},
     4,
     false,
     {"caf", "\xc3\xa9!", "", "\xe2\x82\xac"},
     {0}},
    {"no responses", {{NULL, 0}}, 0, false, {NULL}, {0}},
};

static void test_pieces(void) {
  for (size_t c = 0; c < sizeof(PIECES) / sizeof(PIECES[0]); c++) {
    const piece_case *pc = &PIECES[c];
    tp_record r;
    build(&r, pc->rs, pc->n, pc->cumulative);
    for (int i = 0; i < pc->n; i++) {
      tp__piece p;
      int has = tp__pa_piece(&r, (uint32_t)i, pc->cumulative, &p);
      CHECK_INT(has, pc->want[i] != NULL, pc->what);
      CHECK_MEM(p.text, p.len, pc->want[i] ? pc->want[i] : "", pc->want[i] ? strlen(pc->want[i]) : 0,
                pc->what);
      if (pc->want[i]) CHECK(p.reasoning == pc->want_reasoning[i], "%s: response %d's buffer", pc->what, i);
    }
    tp__piece p;
    CHECK_INT(tp__pa_piece(&r, (uint32_t)pc->n, pc->cumulative, &p), 0, "past the last response: none");
    tp_record_fini(&r);
  }
  /* The record as the run keeps it: offsets are the buffers' lengths when
   * the pieces came, the reasoning ones marked. */
  tp_record r;
  build(&r, PIECES[0].rs, PIECES[0].n, false);
  static const uint32_t want_at[6] = {
      TP_RECORD_NO_TEXT, 0 | TP_RECORD_AT_REASONING, 2 | TP_RECORD_AT_REASONING, 0, 3, TP_RECORD_NO_TEXT};
  CHECK(r.n_resp == 6 && memcmp(r.resp_text_at, want_at, sizeof(want_at)) == 0,
        "resp_text_at: the text's or reasoning's length before each piece, none for empty responses");
  tp_record_fini(&r);
}

typedef struct payload_case {
  const char *what;
  tp_service_kind kind;
  bool streaming;
  uint32_t i, n; /* response i of n */
  tp__piece pc;
  const char *want;
} payload_case;

#define CHUNK                                                                                                \
  "data: "                                                                                                   \
  "{\"id\":\"chatcmpl-7\",\"object\":\"chat.completion.chunk\",\"created\":1700000000,\"model\":\"m\\\"x\"," \
  "\"choices\":[{\"index\":0,"
#define CMPL                                                                                       \
  "{\"id\":\"cmpl-7\",\"object\":\"text_completion\",\"created\":1700000000,\"model\":\"m\\\"x\"," \
  "\"choices\":[{\"index\":0,"

static const payload_case PAYLOADS[] = {
    {"chat: the first chunk names the role",
     TP_SERVICE_OPENAI_CHAT,
     true,
     0,
     3,
     {"Hi", 2, false},
     CHUNK "\"delta\":{\"role\":\"assistant\",\"content\":\"Hi\"},\"finish_reason\":null}]}\n\n"},
    {"chat: a later chunk carries its piece",
     TP_SERVICE_OPENAI_CHAT,
     true,
     1,
     3,
     {"a \"q\"\n", 6, false},
     CHUNK "\"delta\":{\"content\":\"a \\\"q\\\"\\n\"},\"finish_reason\":null}]}\n\n"},
    {"chat: a chunk without text has an empty delta",
     TP_SERVICE_OPENAI_CHAT,
     true,
     1,
     3,
     {"", 0, false},
     CHUNK "\"delta\":{},\"finish_reason\":null}]}\n\n"},
    {"chat: the last chunk comes with [DONE]",
     TP_SERVICE_OPENAI_CHAT,
     true,
     2,
     3,
     {"!", 1, false},
     CHUNK "\"delta\":{\"content\":\"!\"},\"finish_reason\":null}]}\n\ndata: [DONE]\n\n"},
    {"chat: reasoning goes to reasoning_content",
     TP_SERVICE_OPENAI_CHAT,
     true,
     1,
     3,
     {"hmm", 3, true},
     CHUNK "\"delta\":{\"reasoning_content\":\"hmm\"},\"finish_reason\":null}]}\n\n"},
    {"chat: reasoning on the role's chunk",
     TP_SERVICE_OPENAI_CHAT,
     true,
     0,
     3,
     {"hmm", 3, true},
     CHUNK "\"delta\":{\"role\":\"assistant\",\"content\":\"\",\"reasoning_content\":\"hmm\"},"
           "\"finish_reason\":null}]}\n\n"},
    {"completions: choices[0].text",
     TP_SERVICE_OPENAI_COMPLETIONS,
     true,
     0,
     1,
     {"Hi", 2, false},
     "data: " CMPL "\"text\":\"Hi\",\"logprobs\":null,\"finish_reason\":null}]}\n\ndata: [DONE]\n\n"},
    {"completions: an empty text",
     TP_SERVICE_OPENAI_COMPLETIONS,
     true,
     0,
     2,
     {"", 0, false},
     "data: " CMPL "\"text\":\"\",\"logprobs\":null,\"finish_reason\":null}]}\n\n"},
    {"chat without streaming: the body",
     TP_SERVICE_OPENAI_CHAT,
     false,
     0,
     1,
     {"All", 3, false},
     "{\"id\":\"chatcmpl-7\",\"object\":\"chat.completion\",\"created\":1700000000,\"model\":\"m\\\"x\","
     "\"choices\":"
     "[{\"index\":0,\"message\":{\"role\":\"assistant\",\"content\":\"All\"},\"finish_reason\":null}]}"},
    {"completions without streaming: the body",
     TP_SERVICE_OPENAI_COMPLETIONS,
     false,
     0,
     1,
     {"All", 3, false},
     CMPL "\"text\":\"All\",\"logprobs\":null,\"finish_reason\":null}]}"},
};

static void test_payloads(void) {
  for (size_t c = 0; c < sizeof(PAYLOADS) / sizeof(PAYLOADS[0]); c++) {
    const payload_case *pc = &PAYLOADS[c];
    tp_config cfg;
    tp_test_config_default(&cfg);
    cfg.server.service_kind = pc->kind;
    cfg.server.streaming = pc->streaming;
    cfg.server.model = "m\"x";
    tp_record r;
    tp_record_init(&r);
    r.seq = 7;
    r.n_resp = pc->n;
    tp_buf o;
    tp_buf_init(&o);
    CHECK_INT(tp__pa_openai_payload(&o, &cfg, &r, 1700000000, pc->i, &pc->pc), 0, pc->what);
    CHECK_MEM(o.data, o.len, pc->want, strlen(pc->want), pc->what);
    tp_buf_fini(&o);
  }
  tp_config cfg;
  tp_test_config_default(&cfg);
  cfg.server.service_kind = TP_SERVICE_TRITON;
  tp_record r;
  tp_record_init(&r);
  tp_buf o;
  tp_buf_init(&o);
  tp__piece p = {"x", 1, false};
  CHECK_INT(tp__pa_openai_payload(&o, &cfg, &r, 0, 0, &p), TP_EINVAL, "a Triton run has no OpenAI payload");
  tp_buf_fini(&o);
}

/* The text GenAI-Perf's parser takes from one response (see the top). */
static void parser_text(const char *payload, tp_buf *into, int *events) {
  for (const char *p = payload; p && *p;) {
    const char *e = strstr(p, "\n\n");
    const char *d = p, *end = e ? e : p + strlen(p);
    if (end - d >= 6 && memcmp(d, "data: ", 6) == 0) d += 6;
    size_t n = (size_t)(end - d);
    if (!(n == 6 && memcmp(d, "[DONE]", 6) == 0)) {
      json_t *j = json_loadb(d, n, 0, NULL);
      json_t *ch = json_array_get(json_object_get(j, "choices"), 0);
      const char *obj = json_string_value(json_object_get(j, "object"));
      json_t *t = obj && strcmp(obj, "chat.completion.chunk") == 0
                      ? json_object_get(json_object_get(ch, "delta"), "content")
                  : obj && strcmp(obj, "chat.completion") == 0
                      ? json_object_get(json_object_get(ch, "message"), "content")
                      : json_object_get(ch, "text");
      if (j) (*events)++;
      if (json_is_string(t)) tp_buf_append(into, json_string_value(t), json_string_length(t));
      json_decref(j);
    }
    p = e ? e + 2 : NULL;
  }
}

/* A whole experiment of a streamed chat run: every response's payload
 * parses, and the texts the parser takes, joined, are the record's text. */
static void test_experiment_chunks(void) {
  static const resp rs[] = {{NULL, 0}, {"think", 1}, {"Hello", 0}, {" w\xc3\xb6rld", 0}, {NULL, 0}};
  tp_record r;
  build(&r, rs, 5, false);
  r.first_token_ns = r.resp_ns[1];
  tp_level_result lr;
  memset(&lr, 0, sizeof(lr));
  lr.load_mode = TP_LOAD_CONCURRENCY;
  lr.concurrency = 1;
  lr.duration_s = 1;
  tp_export_request q = {&r, "p", 1, NULL, 0, NULL, {0}, {0}};
  tp_export_level lv = {&lr, &q, 1, 0, 0, NULL};
  tp_config cfg;
  tp_test_config_default(&cfg);
  cfg.server.service_kind = TP_SERVICE_OPENAI_CHAT;
  cfg.server.model = "m";
  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_export_pa_experiment(&b, &lv, &cfg, 16, MONO0, WALL0), 0, "a chat experiment renders");
  json_t *e = json_loadb((const char *)b.data, b.len, 0, NULL);
  json_t *outs = json_object_get(json_array_get(json_object_get(e, "requests"), 0), "response_outputs");
  CHECK_INT(json_array_size(outs), 5, "one payload per response");
  tp_buf all;
  tp_buf_init(&all);
  int events = 0;
  for (size_t i = 0; i < json_array_size(outs); i++)
    parser_text(json_string_value(json_object_get(json_array_get(outs, i), "response")), &all, &events);
  CHECK_INT(events, 5, "every payload holds one chunk that parses");
  CHECK_MEM(all.data, all.len, "Hello w\xc3\xb6rld", 12, "the chunks' contents joined are the record's text");
  const char *last = json_string_value(json_object_get(json_array_get(outs, 4), "response"));
  CHECK(last && strstr(last, "data: [DONE]\n\n") && strlen(strstr(last, "data: [DONE]\n\n")) == 14,
        "the last payload ends with [DONE]");
  json_decref(e);
  tp_buf_fini(&all);
  tp_buf_fini(&b);
  tp_record_fini(&r);
}

/* A record whose text did not come through tp_record_append_text keeps
 * no places: its whole text goes on the first response that carried text,
 * as a Triton text_output. */
static void test_no_places(void) {
  tp_record r;
  tp_record_init(&r);
  r.sent_ns = MONO0 + 1000;
  tp_record_add_response(&r, MONO0 + 2000, false);
  tp_record_add_response(&r, MONO0 + 3000, true);
  tp_record_add_response(&r, MONO0 + 4000, true);
  r.done_ns = MONO0 + 4000;
  tp_buf_append_str(&r.text, "all of it");
  CHECK(r.resp_text_at == NULL, "text appended directly: no places kept");
  tp_level_result lr;
  memset(&lr, 0, sizeof(lr));
  lr.load_mode = TP_LOAD_CONCURRENCY;
  tp_export_request q = {&r, "p", 1, NULL, 0, NULL, {0}, {0}};
  tp_export_level lv = {&lr, &q, 1, 0, 0, NULL};
  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_export_pa_experiment(&b, &lv, NULL, 16, MONO0, WALL0), 0, "renders without places");
  CHECK(b.data && strstr((const char *)b.data,
                         "\"response_outputs\":[{\"text_output\":\"\"},{\"text_output\":\"all of it\"},"
                         "{\"text_output\":\"\"}]"),
        "the whole text on the first response with text");
  tp_buf_fini(&b);
  tp_record_fini(&r);
}

/* GenAI-Perf's inter-token latency of one exported request, as its
 * parser takes it (llm_profile_data_parser.py): with more than one
 * response and more than one token, (last - first) / (tokens - 1), and
 * its per-user throughput 1 / that, which divides by zero when every
 * response has one time.  Returns the divisor it would use: the last
 * response's time minus the first's (0 = division by zero), or -1 when it
 * computes none (one response). */
static double genai_itl_span(json_t *q) {
  json_t *ts = json_object_get(q, "response_timestamps");
  size_t n = json_array_size(ts);
  if (n <= 1) return -1;
  return (double)(json_integer_value(json_array_get(ts, n - 1)) - json_integer_value(json_array_get(ts, 0)));
}

/* Responses that share an arrival time (one read brought them) are one
 * response in the profile export, as perf_analyzer records the events of
 * one read: one time, the Triton texts joined, the OpenAI events one after
 * another in one string; so a request whose responses all came at one time
 * has one response, and GenAI-Perf computes no ITL for it instead of
 * dividing by zero.  The level's fidelity figures close the experiment. */
static void test_merged_responses(void) {
  for (int openai = 0; openai < 2; openai++) {
    tp_record r[2];
    /* Request 0: "a" alone, then "b" "c" in one read, then a flag-only
     * final response in that read too.  Request 1: everything in one read. */
    tp_record_init(&r[0]);
    r[0].sent_ns = MONO0 + 1000;
    const char *t0[] = {"a", "b", "c", NULL};
    uint64_t at0[] = {2000, 3000, 3000, 3000};
    for (int i = 0; i < 4; i++) {
      tp_record_add_response(&r[0], MONO0 + at0[i], t0[i] != NULL);
      if (t0[i]) tp_record_append_text(&r[0], false, t0[i], 1, false);
    }
    r[0].done_ns = MONO0 + 3000;
    tp_record_init(&r[1]);
    r[1].sent_ns = MONO0 + 1500;
    for (int i = 0; i < 3; i++) {
      tp_record_add_response(&r[1], MONO0 + 5000, true);
      tp_record_append_text(&r[1], false, "xyz" + i, 1, false);
    }
    r[1].done_ns = MONO0 + 5000;
    CHECK(r[0].n_text_merged == 1 && r[1].n_text_merged == 2, "the record counts text responses of one time");
    tp_level_result lr;
    tp_level_compute(&lr, r, 2);
    CHECK(lr.fidelity.merged_responses == 3 && lr.fidelity.response_gaps == 4,
          "the level: 3 of 4 gaps between text responses unseen");
    tp_export_request q[2] = {{&r[0], "p", 1, NULL, 0, NULL, {0}, {0}}, {&r[1], "p", 1, NULL, 0, NULL, {0}, {0}}};
    tp_export_level lv = {&lr, q, 2, 0, 0, NULL};
    tp_config cfg;
    tp_test_config_default(&cfg);
    cfg.server.service_kind = openai ? TP_SERVICE_OPENAI_CHAT : TP_SERVICE_TRITON;
    cfg.server.model = "m";
    tp_buf b;
    tp_buf_init(&b);
    CHECK(tp_export_pa_experiment(&b, &lv, &cfg, 16, MONO0, WALL0) == 0, "%s: renders", openai ? "chat" : "triton");
    json_t *e = json_loadb((const char *)b.data, b.len, 0, NULL);
    json_t *reqs = json_object_get(e, "requests");
    json_t *q0 = json_array_get(reqs, 0), *q1 = json_array_get(reqs, 1);
    json_t *ts0 = json_object_get(q0, "response_timestamps"), *o0 = json_object_get(q0, "response_outputs");
    CHECK(json_array_size(ts0) == 2 && json_array_size(o0) == 2 &&
              json_integer_value(json_array_get(ts0, 1)) == (json_int_t)(WALL0 + 3000),
          "%s: four responses at two times are two responses", openai ? "chat" : "triton");
    CHECK(json_array_size(json_object_get(q1, "response_timestamps")) == 1, "%s: responses all at one time are one",
          openai ? "chat" : "triton");
    CHECK(genai_itl_span(q0) > 0 && genai_itl_span(q1) < 0,
          "%s: GenAI-Perf's ITL never divides by zero", openai ? "chat" : "triton");
    if (!openai) {
      CHECK_STR(json_string_value(json_object_get(json_array_get(o0, 1), "text_output")), "bc",
                "triton: the texts of one time joined");
      CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(q1, "response_outputs"), 0),
                                                  "text_output")),
                "xyz", "triton: all of it in one response");
    } else {
      tp_buf all;
      tp_buf_init(&all);
      int events = 0;
      parser_text(json_string_value(json_object_get(json_array_get(o0, 1), "response")), &all, &events);
      CHECK_INT(events, 3, "chat: the events of one time in one response, one after another");
      CHECK_MEM(all.data, all.len, "bc", 2, "chat: GenAI-Perf's parser takes their texts joined");
      tp_buf_fini(&all);
    }
    json_t *fid = json_object_get(e, "tokperf_fidelity");
    CHECK(json_is_object(fid) && json_integer_value(json_object_get(fid, "merged_text_responses")) == 3 &&
              json_is_string(json_object_get(fid, "verdict")) && json_is_string(json_object_get(fid, "note")),
          "%s: the experiment closes with the level's fidelity figures", openai ? "chat" : "triton");
    json_decref(e);
    tp_buf_fini(&b);
    tp_record_fini(&r[0]);
    tp_record_fini(&r[1]);
  }
}

int main(void) {
  test_merged_responses();
  test_no_places();
  test_pieces();
  test_payloads();
  test_experiment_chunks();
  return tp_test_done();
}

/* Tests for multi-turn sessions: the conversations file reader
 * (lib/dataset/tp_dataset_sessions.c), as a table of documents and the
 * result or error each must give, and the session driver
 * (lib/run/tp_sessions.c) on an injected clock: the history each turn
 * sends, think times, a failed turn ending its session, and the per-turn
 * statistics. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/tp_dataset.h"
#include "dataset/tp_dataset_line.h"
#include "metrics/tp_stats.h"
#include "run/tp_sessions.h"
#include "tp_test.h"
#include "util/tp_common.h"

typedef struct good_case {
  const char *what, *doc;
  size_t sessions, prompts;
  const char *id0, *text1; /* the first session's id, the second prompt's text */
  uint64_t delay1;         /* the second prompt's think time */
  const char *assistant0;  /* the first turn's fixed answer, or NULL */
  int64_t max0;
  const char *note;
} good_case;

static const good_case goods[] = {
  {"tokperf sessions",
   "{\"session_id\": \"a\", \"turns\": [{\"text\": \"hi\", \"assistant\": \"yo\", \"max_tokens\": 4}, "
   "{\"text\": \"more\", \"delay_ms\": 250}]}\n\n{\"turns\": [{\"text\": \"x\"}]}\n",
   2, 3, "a", "more", 250, "yo", 4, ""},
  {"AIPerf multi_turn: texts, delay, timestamp noted",
   "{\"session_id\": \"s\", \"turns\": [{\"texts\": [\"a\", \"b\"], \"timestamp\": 0}, {\"texts\": [{\"name\": "
   "\"q\", \"contents\": [\"c\", \"d\"]}], \"delay\": 1000}]}\r\n",
   1, 2, "s", "c\nd", 1000, NULL, -1, "timestamp"},
  {"numeric id, fractional delay, BOM", "\xEF\xBB\xBF{\"session_id\": 7, \"turns\": [{\"text\": \"a\"}, "
   "{\"text\": \"b\", \"delay_ms\": 1.5}]}", 1, 2, "7", "b", 1, NULL, -1, ""},
};

typedef struct bad_case {
  const char *what, *doc, *err;
} bad_case;

static const bad_case bads[] = {
  {"empty turns", "{\"turns\": []}\n", "t.jsonl:1: \"turns\" must be a non-empty list"},
  {"turn without text", "{\"turns\": [{\"text\": \"a\"}]}\n{\"turns\": [{\"max_tokens\": 3}]}\n",
   "t.jsonl:2: turn 1: needs \"text\""},
  {"bad max_tokens", "{\"turns\": [{\"text\": \"a\"}, {\"text\": \"b\", \"max_tokens\": 0}]}",
   "t.jsonl:1: turn 2: \"max_tokens\" must be a positive integer"},
  {"negative delay", "{\"turns\": [{\"text\": \"a\", \"delay_ms\": -1}]}", "t.jsonl:1: turn 1: \"delay_ms\""},
  {"assistant not a string", "{\"turns\": [{\"text\": \"a\", \"assistant\": 3}]}", "turn 1: \"assistant\" must be"},
  {"a later line not JSON", "{\"turns\": [{\"text\": \"a\"}]}\n{oops\n", "t.jsonl:2: not a session"},
  {"texts of numbers", "{\"turns\": [{\"texts\": [1]}]}", "t.jsonl:1: turn 1: \"texts\" must hold strings"},
  {"bad session_id", "{\"session_id\": [1], \"turns\": [{\"text\": \"a\"}]}", "\"session_id\" must be a string"},
};

static void test_reader(void) {
  for (size_t i = 0; i < sizeof(goods) / sizeof(goods[0]); i++) {
    const good_case *g = &goods[i];
    tp_dataset ds;
    char err[512] = "";
    int rv = tp__dataset_parse_any(&ds, "t.jsonl", g->doc, strlen(g->doc), err, sizeof(err));
    CHECK(rv == 0, "%s: loads (%s)", g->what, err);
    if (rv == 0) {
      CHECK_STR(ds.format, "sessions", g->what);
      CHECK_INT(ds.n_sessions, g->sessions, g->what);
      CHECK_INT(ds.n, g->prompts, g->what);
      CHECK_STR(ds.sessions[0].id, g->id0, g->what);
      CHECK_STR(ds.items[1].text, g->text1, g->what);
      CHECK_INT(ds.turns[1].delay_ms, g->delay1, g->what);
      CHECK_INT(ds.items[0].max_tokens, g->max0, g->what);
      CHECK(g->assistant0 ? ds.turns[0].assistant && strcmp(ds.turns[0].assistant, g->assistant0) == 0
                          : ds.turns[0].assistant == NULL,
            "%s: the fixed answer", g->what);
      CHECK(*g->note ? strstr(ds.note, g->note) != NULL : ds.note[0] == 0, "%s: note '%s'", g->what, ds.note);
    }
    tp_dataset_free(&ds);
  }
  for (size_t i = 0; i < sizeof(bads) / sizeof(bads[0]); i++) {
    const bad_case *b = &bads[i];
    tp_dataset ds;
    char err[512] = "";
    int rv = tp__dataset_parse_any(&ds, "t.jsonl", b->doc, strlen(b->doc), err, sizeof(err));
    CHECK(rv == TP_EINVAL && strstr(err, b->err), "%s: error '%s'", b->what, err);
    tp_dataset_free(&ds);
  }
  /* A plain JSONL file is not taken for sessions. */
  CHECK(!tp__dataset_is_sessions("{\"text\": \"a\"}\n", 14), "a prompt line is not a session");
}

#define MS TP_NS_PER_MS

static void test_driver(void) {
  const char *doc = "{\"session_id\": \"a\", \"turns\": [{\"text\": \"u1\"}, {\"text\": \"u2\", \"delay_ms\": 100}, "
                    "{\"text\": \"u3\", \"delay_ms\": 50}]}\n"
                    "{\"session_id\": \"b\", \"turns\": [{\"text\": \"v1\", \"assistant\": \"FIX\"}, {\"text\": \"v2\"}]}\n";
  tp_dataset ds;
  char err[256];
  CHECK(tp__dataset_parse_any(&ds, "t", doc, strlen(doc), err, sizeof(err)) == 0, "driver doc loads");
  tp_sessions_opts o = {&ds, TP_PACER_CLOSED, 1, NULL, 0, 2};
  tp_sessions *s;
  CHECK(tp_sessions_new(&s, &o) == 0, "driver made");
  tp_sessions_start(s, 0);
  tp_buf text, msgs;
  tp_buf_init(&text);
  tp_buf_init(&msgs);
  tp_sessions_turn t;
  /* Session a, turn 1: the user text alone. */
  CHECK(tp_sessions_next(s, 0, &t) && t.it.turn == 0 && t.prompt_index == 0, "turn 1 of a leaves at once");
  CHECK(!tp_sessions_next(s, 0, &t) || t.it.session != 1, "one session in flight");
  tp_sessions_build(s, &t, true, &text, &msgs);
  CHECK_MEM(text.data, text.len, "u1", 2, "turn 1 text");
  CHECK(!tp_sessions_done(s, &t, true, "A1", 2, 10 * MS), "turn 1 of 3 done: the session goes on");
  /* Turn 2 waits its 100 ms of think time after the answer. */
  CHECK(!tp_sessions_next(s, 109 * MS, &t), "turn 2 not before its think time");
  CHECK_INT(tp_sessions_next_due(s), 110 * MS, "turn 2 due 100 ms after turn 1 ended");
  CHECK(tp_sessions_next(s, 110 * MS, &t) && t.it.turn == 1, "turn 2 leaves");
  tp_sessions_build(s, &t, true, &text, &msgs);
  CHECK_MEM(text.data, text.len, "u1\nA1\nu2", 8, "turn 2 sends the history with the model's answer");
  const char *want = "[{\"role\":\"user\",\"content\":\"u1\"},{\"role\":\"assistant\",\"content\":\"A1\"},"
                     "{\"role\":\"user\",\"content\":\"u2\"}]";
  CHECK_MEM(msgs.data, msgs.len, want, strlen(want), "turn 2 as chat messages");
  /* A failed turn ends the session: session b starts, not turn 3. */
  CHECK(tp_sessions_done(s, &t, false, "", 0, 200 * MS), "a failed turn: the session is over");
  CHECK(tp_sessions_next(s, 1000 * MS, &t) && t.it.session == 1 && t.it.turn == 0, "a failed turn ends the session");
  tp_sessions_build(s, &t, false, &text, NULL);
  CHECK(!tp_sessions_done(s, &t, true, "model answer", 12, 1001 * MS), "b turn 1 done: b goes on");
  CHECK(tp_sessions_next(s, 1001 * MS, &t) && t.it.turn == 1, "b turn 2 (no delay)");
  tp_sessions_build(s, &t, false, &text, NULL);
  CHECK_MEM(text.data, text.len, "v1\nFIX\nv2", 9, "a fixed answer replaces the model's in the history");
  CHECK(tp_sessions_done(s, &t, true, "x", 1, 1002 * MS), "b's last turn done: b is over");
  CHECK(tp_sessions_finished(s), "two sessions run: finished");
  tp_buf_fini(&text);
  tp_buf_fini(&msgs);
  tp_sessions_free(s);
  tp_dataset_free(&ds);
}

static void test_stats(void) {
  tp_record r[4];
  for (int i = 0; i < 4; i++) {
    tp_record_init(&r[i]);
    r[i].session = 1 + (uint32_t)(i / 2);
    r[i].turn = (uint32_t)(i % 2);
    r[i].sent_ns = (uint64_t)(i + 1) * 1000 * MS; /* 0 would mean never sent */
    r[i].first_token_ns = r[i].sent_ns + (i % 2 ? 10 : 40) * MS;
    r[i].last_token_ns = r[i].first_token_ns + 20 * MS;
    r[i].done_ns = r[i].last_token_ns;
    r[i].output_tokens = 3;
    r[i].n_text_resp = 3;
    r[i].input_tokens = i % 2 ? 30 : 10;
    r[i].server_cached_tokens = i % 2 ? 16 : 0;
  }
  tp_turn_stats *ts;
  size_t n;
  tp_session_summary sum;
  CHECK(tp_sessions_stats(r, 4, &ts, &n, &sum) == 0 && n == 2, "two turn rows");
  if (n == 2) {
    CHECK_NEAR(ts[0].ttft_ms_avg, 40, 1e-9, "turn 1 TTFT");
    CHECK_NEAR(ts[1].ttft_ms_avg, 10, 1e-9, "turn 2 TTFT");
    CHECK_NEAR(ts[1].itl_ms_avg, 10, 1e-9, "turn 2 ITL: 20 ms over 2 gaps");
    CHECK_NEAR(ts[1].input_tokens_avg, 30, 1e-9, "turn 2 input");
    CHECK_NEAR(ts[1].cached_tokens_avg, 16, 1e-9, "turn 2 cached");
  }
  CHECK_INT(sum.sessions, 2, "sessions");
  CHECK_INT(sum.completed, 2, "completed");
  CHECK_NEAR(sum.time_s_avg, 1.03, 1e-9, "session time: first send to last answer");
  CHECK_NEAR(sum.tokens_avg, 46, 1e-9, "tokens per session");
  free(ts);
  for (int i = 0; i < 4; i++) tp_record_fini(&r[i]);
}

/* A turn's figures are the level's method over that turn's requests: ITL
 * over reasoning and answer tokens, none for text all on one stamp, and the
 * linear percentiles of tp_stat_compute. */
static void test_stats_like_level(void) {
  enum { N = 5 };
  tp_record r[N];
  static const double ttft[N] = {10, 20, 30, 40, 100};
  for (int i = 0; i < N; i++) {
    tp_record_init(&r[i]);
    r[i].session = 1 + (uint32_t)i;
    r[i].turn = 0;
    r[i].sent_ns = (uint64_t)(i + 1) * 1000 * MS;
    r[i].first_token_ns = r[i].sent_ns + (uint64_t)(ttft[i] * MS);
    r[i].last_token_ns = r[i].first_token_ns + 90 * MS;
    r[i].done_ns = r[i].last_token_ns;
    r[i].output_tokens = 5;
    r[i].n_text_resp = 10;
  }
  /* Request 0: 5 reasoning + 5 answer tokens over 90 ms: 10 ms, not 22.5. */
  r[0].reasoning_tokens = 5;
  tp_buf_append(&r[0].reasoning, "think", 5);
  /* Request 1: every text response on one stamp: no ITL. */
  r[1].n_text_merged = 9;
  tp_turn_stats *ts;
  size_t n;
  tp_session_summary sum;
  tp_level_result lv;
  CHECK(tp_sessions_stats(r, N, &ts, &n, &sum) == 0 && n == 1, "one turn row");
  CHECK(tp_level_compute(&lv, r, N) == 0, "the level over the same records");
  if (n == 1) {
    CHECK_NEAR(ts[0].itl_ms_avg, lv.itl_ms.avg, 1e-12, "turn ITL = the level's ITL");
    CHECK_NEAR(ts[0].itl_ms_avg, (10.0 + 22.5 * 3) / 4, 1e-9, "reasoning counts, merged text has no ITL");
    CHECK_NEAR(ts[0].ttft_ms_p50, lv.ttft_ms.p50, 1e-12, "turn TTFT p50 = the level's");
    CHECK_NEAR(ts[0].ttft_ms_p99, lv.ttft_ms.p99, 1e-12, "turn TTFT p99 = the level's");
    CHECK_NEAR(ts[0].ttft_ms_p99, 40 + 60 * 0.96, 1e-9, "p99 linear: rank 3.96");
    CHECK_NEAR(ts[0].latency_ms_avg, lv.latency_ms.avg, 1e-12, "turn latency = the level's");
  }
  /* Five sessions of 0.1, 0.11, 0.12, 0.13, 0.19 s: linear p99, not the maximum. */
  CHECK_NEAR(sum.time_s_p99, 0.13 + 0.06 * 0.96, 1e-9, "session time p99, linear");
  free(ts);
  for (int i = 0; i < N; i++) tp_record_fini(&r[i]);
}

int main(void) {
  test_reader();
  test_driver();
  test_stats();
  test_stats_like_level();
  return tp_test_done();
}

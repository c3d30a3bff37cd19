/* Conversations files (lib/dataset/tp_dataset_sessions.c): the session per
 * line form, and a trace's session form (one line per turn, as the mooncake
 * trace with "session_id" has them): the turns grouped by session in order
 * of first appearance, each session's in file order; texts, lengths to be
 * made, hash ids, output lengths and delays; and every refusal named by
 * file and line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/tp_dataset.h"
#include "dataset/tp_dataset_line.h"
#include "tp_test.h"
#include "util/tp_common.h"

static int parse(tp_dataset *ds, const char *text, char *err, size_t errlen) {
  err[0] = 0;
  return tp__dataset_parse_any(ds, "conv.jsonl", text, strlen(text), err, errlen);
}

static void test_trace_form(void) {
  const char *f =
      "{\"session_id\": \"a\", \"timestamp\": 0, \"input_length\": 40, \"output_length\": 5, \"hash_ids\": [1, 2]}\n"
      "{\"session_id\": \"b\", \"timestamp\": 10, \"text_input\": \"hello there\", \"output_length\": 4}\n"
      "\n"
      "{\"session_id\": \"a\", \"delay\": 200, \"input_length\": 10}\n"
      "{\"session_id\": 7, \"text\": \"numbered\"}\n"
      "{\"session_id\": \"b\", \"delay_ms\": 100.5, \"prompt\": \"and again\", \"max_tokens\": 3}\n"
      "{\"session_id\": \"a\", \"delay\": 50, \"input\": \"last one\"}\n";
  tp_dataset ds;
  char err[512];
  CHECK_INT(parse(&ds, f, err, sizeof(err)), 0, "a trace's session form is read");
  CHECK_STR(ds.format, "sessions (trace)", "and named so");
  CHECK_INT(ds.n_sessions, 3, "three sessions");
  CHECK_INT(ds.n, 6, "six turns");
  if (ds.n_sessions == 3 && ds.n == 6) {
    CHECK(strcmp(ds.sessions[0].id, "a") == 0 && strcmp(ds.sessions[1].id, "b") == 0 &&
              strcmp(ds.sessions[2].id, "7") == 0,
          "sessions in order of first appearance, an integer id written out");
    CHECK(ds.sessions[0].first == 0 && ds.sessions[0].turns == 3 && ds.sessions[1].first == 3 &&
              ds.sessions[1].turns == 2 && ds.sessions[2].first == 5 && ds.sessions[2].turns == 1,
          "each session's turns together, the sessions tiling the prompts");
    CHECK(ds.items[0].text == NULL && ds.items[0].input_tokens == -42 && ds.items[0].reference &&
              strcmp(ds.items[0].reference, "1,2") == 0 && ds.items[0].max_tokens == 5,
          "a length is kept to be made (marker -2 - 40), with its hash ids and output length");
    CHECK(ds.items[1].text == NULL && ds.items[1].input_tokens == -12 && ds.items[1].reference == NULL &&
              ds.items[1].max_tokens == -1 && ds.turns[1].delay_ms == 200,
          "a's second turn: 10 tokens, no hash ids, the default length, 200 ms of think time");
    CHECK(ds.items[2].text && strcmp(ds.items[2].text, "last one") == 0 && ds.turns[2].delay_ms == 50,
          "a's third turn in file order, its text from \"input\"");
    CHECK(strcmp(ds.items[3].text, "hello there") == 0 && ds.items[3].max_tokens == 4 && ds.turns[3].delay_ms == 0,
          "b's first turn: \"text_input\", output_length");
    CHECK(strcmp(ds.items[4].text, "and again") == 0 && ds.items[4].max_tokens == 3 && ds.turns[4].delay_ms == 100,
          "b's second turn: \"prompt\", \"max_tokens\", \"delay_ms\" in whole milliseconds");
    CHECK(strcmp(ds.items[5].text, "numbered") == 0, "session 7's one turn");
  }
  CHECK(strstr(ds.note, "\"timestamp\"s are not replayed") != NULL, "timestamps are said not to be replayed");
  tp_dataset_free(&ds);
}

static void test_errors(void) {
  static const struct {
    const char *file, *want;
  } rows[] = {
      {"{\"session_id\": \"a\", \"input_length\": 5}\n{\"session_id\": \"a\"}\n",
       "conv.jsonl:2: not a turn of a session"},
      {"{\"session_id\": \"a\", \"input_length\": 0}\n", "conv.jsonl:1: expected the turn's text"},
      {"{\"session_id\": \"a\", \"text_input\": 5}\n", "conv.jsonl:1: the turn's text must be a string"},
      {"{\"session_id\": \"a\", \"input_length\": 5, \"hash_ids\": [1, \"x\"]}\n",
       "conv.jsonl:1: \"hash_ids\" must be a list of integers"},
      {"{\"session_id\": \"a\", \"text_input\": \"x\", \"output_length\": -1}\n",
       "conv.jsonl:1: \"output_length\" must be a positive integer"},
      {"{\"session_id\": \"a\", \"text_input\": \"x\", \"delay\": \"soon\"}\n",
       "conv.jsonl:1: \"delay\" must be a non-negative number of milliseconds"},
      {"{\"session_id\": \"a\", \"text_input\": \"x\"}\n{\"session_id\": \"a\", \"messages\": []}\n",
       "conv.jsonl:2: \"messages\" turns are not read"},
      {"{\"session_id\": [1], \"text_input\": \"x\"}\n", "conv.jsonl:1: not a turn of a session"},
  };
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++) {
    tp_dataset ds;
    char err[512];
    int rv = parse(&ds, rows[i].file, err, sizeof(err));
    CHECK(rv == TP_EINVAL && strstr(err, rows[i].want) != NULL, "refused: %s (got %d: %s)", rows[i].want, rv, err);
    tp_dataset_free(&ds); /* what was read before the refusal stays for the caller to free */
  }
}

static void test_turns_form(void) {
  tp_dataset ds;
  char err[512];
  const char *f = "{\"session_id\": \"s\", \"turns\": [{\"text\": \"one\"}, {\"text\": \"two\", \"delay_ms\": 5}]}\n";
  CHECK_INT(parse(&ds, f, err, sizeof(err)), 0, "the session per line form still reads");
  CHECK(ds.n_sessions == 1 && ds.n == 2 && strcmp(ds.format, "sessions") == 0 && ds.turns[1].delay_ms == 5,
        "one session of two turns");
  tp_dataset_free(&ds);
}

int main(void) {
  test_trace_form();
  test_errors();
  test_turns_form();
  return tp_test_done();
}

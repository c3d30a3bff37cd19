/* Tests for the input files of other tools (lib/dataset/tp_dataset_formats.c
 * and the chat / AIPerf lines of tp_dataset.c): one table of documents, each
 * with the form it must be read as, or the error it must give. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "dataset/tp_dataset.h"
#include "dataset/tp_dataset_line.h"
#include "tp_test.h"
#include "util/tp_base64.h"
#include "util/tp_common.h"

typedef struct good_case {
  const char *what;
  const char *doc;
  const char *format;
  size_t n;
  const char *text0;     /* the first prompt */
  int64_t max0;          /* its max_tokens */
  const char *messages0; /* its messages, or NULL */
  const char *ref0;      /* its reference, or NULL */
  const char *note;      /* a part of the note, or "" for none */
} good_case;

static const good_case goods[] = {
  {"tokperf JSONL unchanged", "{\"text_input\": \"hi\", \"max_tokens\": 3}\n{\"prompt\": \"yo\"}\n", "jsonl", 2,
   "hi", 3, NULL, NULL, ""},
  {"chat messages, joined without roles",
   "{\"messages\": [{\"role\": \"system\", \"content\": \"be brief\"}, {\"role\": \"user\", \"content\": \"hi "
   "there\"}], \"max_tokens\": 9}\n",
   "jsonl", 1, "be brief\nhi there", 9,
   "[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\"hi there\"}]", NULL, ""},
  {"chat content parts: text parts counted, null content empty",
   "{\"messages\": [{\"role\": \"user\", \"content\": [{\"type\": \"text\", \"text\": \"a\"}, {\"type\": "
   "\"image_url\", \"image_url\": {\"url\": \"x\"}}, {\"type\": \"text\", \"text\": \"b\"}]}, {\"role\": "
   "\"assistant\", \"content\": null}]}\n",
   "jsonl", 1, "a\nb\n", -1, NULL, NULL, ""},
  {"a prompt key wins over messages", "{\"prompt\": \"p\", \"messages\": 5}\n", "jsonl", 1, "p", -1, NULL, NULL,
   ""},
  {"AIPerf text, output_length, timestamp noted",
   "{\"text\": \"what now\", \"output_length\": 6, \"timestamp\": 0}\n{\"text\": \"b\", \"timestamp\": 10}\n",
   "jsonl", 2, "what now", 6, NULL, NULL, "\"timestamp\" field of the lines is ignored"},
  {"AIPerf texts joined, delay noted", "{\"texts\": [\"one\", \"two\"], \"delay\": 5, \"timestamp\": 1}\n", "jsonl",
   1, "one\ntwo", -1, NULL, NULL, "\"timestamp\" and \"delay\" fields of the lines are ignored"},
  {"perf_analyzer, pretty-printed, TRT-LLM inputs",
   "{\n  \"data\": [\n    {\"text_input\": [\"alpha beta\"], \"max_tokens\": [256], \"stream\": [true]},\n"
   "    {\"text_input\": [\"gamma\"], \"max_tokens\": [8]}\n  ]\n}\n",
   "perf_analyzer", 2, "alpha beta", 256, NULL, NULL, "not sent as given (tokperf sets them from its options): stream"},
  {"perf_analyzer's OpenAI payload: chat messages and max_tokens taken, the rest noted",
   "{\"data\": [{\"payload\": [{\"model\": \"m\", \"messages\": [{\"role\": \"system\", \"content\": \"be "
   "brief\"}, {\"role\": \"user\", \"content\": \"hi\"}], \"max_tokens\": 32, \"temperature\": 0.5}]}]}",
   "perf_analyzer", 1, "be brief\nhi", 32,
   "[{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\"hi\"}]", NULL,
   "not sent as given (tokperf sets them from its options): payload.temperature"},
  {"perf_analyzer's OpenAI payload: a completions prompt",
   "{\"data\": [{\"payload\": [{\"prompt\": \"once upon\", \"max_completion_tokens\": 7}]}, "
   "{\"payload\": [{\"prompt\": \"twice\"}]}]}",
   "perf_analyzer", 2, "once upon", 7, NULL, NULL, ""},
  {"perf_analyzer on one line, content and shape", "{\"data\": [{\"text_input\": {\"content\": [\"x y\"], \"shape\": [1]}}]}",
   "perf_analyzer", 1, "x y", -1, NULL, NULL, ""},
  {"perf_analyzer vLLM sampling_parameters",
   "{\"data\": [{\"text_input\": [\"q\"], \"stream\": [false], \"sampling_parameters\": [\"{\\\"max_tokens\\\": 40, "
   "\\\"temperature\\\": 0}\"]}]}",
   "perf_analyzer", 1, "q", 40, NULL, NULL, "stream"},
  {"perf_analyzer old vLLM tutorial PROMPT/STREAM", "{\"data\": [{\"PROMPT\": [\"old style\"], \"STREAM\": [true]}]}",
   "perf_analyzer", 1, "old style", -1, NULL, NULL, "STREAM"},
  {"perf_analyzer any input named like a prompt, nested list",
   "{\"data\": [{\"seed\": [1], \"my_prompt\": [[\"nested\"]], \"request_output_len\": [[12]]}]}", "perf_analyzer",
   1, "nested", 12, NULL, NULL, "seed"},
  {"perf_analyzer b64 BYTES prompt", "{\"data\": [{\"text_input\": {\"b64\": \"BQAAAGhlbGxv\"}}]}", "perf_analyzer",
   1, "hello", -1, NULL, NULL, ""},
  {"ShareGPT: first human turn, first gpt answer, short entries skipped",
   "[{\"id\": \"a\", \"conversations\": [{\"from\": \"system\", \"value\": \"s\"}, {\"from\": \"human\", \"value\": "
   "\"tell me\"}, {\"from\": \"gpt\", \"value\": \"a story\"}, {\"from\": \"human\", \"value\": \"more\"}]},\n"
   " {\"id\": \"b\", \"conversations\": [{\"from\": \"human\", \"value\": \"alone\"}]},\n"
   " {\"id\": \"c\", \"conversations\": [{\"from\": \"gpt\", \"value\": \"x\"}, {\"from\": \"gpt\", \"value\": "
   "\"y\"}]},\n"
   " {\"id\": \"d\", \"conversations\": [{\"from\": \"human\", \"value\": \"q2\"}, {\"from\": \"gpt\", \"value\": "
   "\"a2\"}]}]",
   "sharegpt", 2, "tell me", -1, NULL, "a story", "2 of 4 ShareGPT entries skipped"},
};

typedef struct bad_case {
  const char *what;
  const char *doc;
  const char *err; /* the whole message, with the file named "in" */
} bad_case;

static const bad_case bads[] = {
  {"perf_analyzer's payload sessions", "{\"data\": [{\"payload\": [{\"prompt\": \"a\"}], \"session_id\": [\"s\"]}]}",
   "in: data[0]: perf_analyzer's sessions (\"session_id\", \"delay\") are not read here: write them as a "
   "conversations file (docs/sessions.md)"},
  {"perf_analyzer's payload without a prompt", "{\"data\": [{\"payload\": [{\"max_tokens\": 3}]}]}",
   "in: data[0]: \"payload\": expected a list holding one request body with \"messages\" ({\"role\", "
   "\"content\"} strings) or a \"prompt\" string, and a positive \"max_tokens\" if any"},
  {"perf_analyzer's payload with a bad max_tokens", "{\"data\": [{\"payload\": [{\"prompt\": \"a\", "
   "\"max_tokens\": 0}]}]}",
   "in: data[0]: \"payload\": expected a list holding one request body with \"messages\" ({\"role\", "
   "\"content\"} strings) or a \"prompt\" string, and a positive \"max_tokens\" if any"},
  {"messages not a list", "{\"messages\": \"hi\"}\n",
   "in:1: \"messages\" must be a non-empty list of {\"role\", \"content\"} objects"},
  {"a message without role", "\n{\"messages\": [{\"role\": \"user\", \"content\": \"a\"}, {\"content\": \"b\"}]}\n",
   "in:2: \"messages\"[1]: expected {\"role\": \"...\", \"content\": \"...\"} (content a string, a list of "
   "{\"type\": \"text\", \"text\": \"...\"} parts, or null)"},
  {"a message content of a number", "{\"messages\": [{\"role\": \"user\", \"content\": 3}]}",
   "in:1: \"messages\"[0]: expected {\"role\": \"...\", \"content\": \"...\"} (content a string, a list of "
   "{\"type\": \"text\", \"text\": \"...\"} parts, or null)"},
  {"texts holding a number", "{\"texts\": [\"a\", 1]}", "in:1: \"texts\" must be a non-empty list of strings"},
  {"output_length zero", "{\"text\": \"a\", \"output_length\": 0}",
   "in:1: \"output_length\" must be a positive integer"},
  {"no prompt names every form", "{\"x\": 1}",
   "in:1: no prompt: expected a string under \"text_input\", \"input\", \"prompt\" or \"text\", a list of chat "
   "\"messages\", or AIPerf's \"texts\""},
  {"perf_analyzer data empty", "{\"data\": []}",
   "in: perf_analyzer input data: \"data\" must be a non-empty list of entries like {\"text_input\": [\"...\"], "
   "\"max_tokens\": [256]}"},
  {"perf_analyzer data not a list, pretty-printed", "{\n \"data\": 5\n}",
   "in: perf_analyzer input data: \"data\" must be a non-empty list of entries like {\"text_input\": [\"...\"], "
   "\"max_tokens\": [256]}"},
  {"perf_analyzer sequence steps", "{\"data\": [{\"text_input\": [\"a\"]}, [{\"text_input\": [\"b\"]}]]}",
   "in: data[1]: a list of steps (perf_analyzer's sequence data) is not supported; expected an object mapping "
   "input names to values"},
  {"perf_analyzer no prompt", "{\"data\": [{\"max_tokens\": [5]}]}",
   "in: data[0]: no prompt: expected a BYTES input \"text_input\" or \"PROMPT\" holding a string, like "
   "{\"text_input\": [\"Hello\"]}"},
  {"perf_analyzer bad value form", "{\"data\": [{\"text_input\": [\"a\"], \"stream\": true}]}",
   "in: data[0]: input \"stream\": expected a list of values, {\"content\": [...], \"shape\": [...]} or "
   "{\"b64\": \"...\"}"},
  {"perf_analyzer bad shape", "{\"data\": [{\"text_input\": {\"content\": [\"a\"], \"shape\": [-1]}}]}",
   "in: data[0]: input \"text_input\": expected a list of values, {\"content\": [...], \"shape\": [...]} or "
   "{\"b64\": \"...\"}"},
  {"perf_analyzer prompt not a string", "{\"data\": [{\"text_input\": [1]}]}",
   "in: data[0]: input \"text_input\": expected a list holding the prompt string"},
  {"perf_analyzer bad max_tokens", "{\"data\": [{\"text_input\": [\"a\"], \"max_tokens\": [\"many\"]}]}",
   "in: data[0]: input \"max_tokens\": expected a list holding one positive integer, like [256] or "
   "{\"content\": [256], \"shape\": [1]}"},
  {"perf_analyzer bad sampling_parameters", "{\"data\": [{\"text_input\": [\"a\"], \"sampling_parameters\": [\"{\"]}]}",
   "in: data[0]: input \"sampling_parameters\": expected a list holding one JSON object string, like "
   "[\"{\\\"max_tokens\\\": 256}\"], whose max_tokens is a positive integer"},
  {"perf_analyzer bad b64", "{\"data\": [{\"text_input\": {\"b64\": \"!!!!\"}}]}",
   "in: data[0]: input \"text_input\": \"b64\" must be base64 of a BYTES tensor (a 4-byte little-endian length, "
   "then that many bytes, no NUL)"},
  {"perf_analyzer b64 length past the end", "{\"data\": [{\"text_input\": {\"b64\": \"BgAAAGhlbGxv\"}}]}",
   "in: data[0]: input \"text_input\": \"b64\" must be base64 of a BYTES tensor (a 4-byte little-endian length, "
   "then that many bytes, no NUL)"},
  {"pretty-printed document with a syntax error", "{\n  \"data\": [\n    {\"text_input\": [\"a\"]},\n  ]\n}\n",
   "in:4:3: invalid JSON: unexpected token near ']'"},
  {"ShareGPT entry without conversations", "[{\"conversations\": []}, {\"id\": 1}]",
   "in: [1]: expected an object with a \"conversations\" list of {\"from\", \"value\"} turns"},
  {"ShareGPT turn without value", "[{\"conversations\": [{\"from\": \"human\"}]}]",
   "in: [0].conversations[0]: expected {\"from\": \"human\"|\"gpt\", \"value\": \"...\"}"},
  {"ShareGPT with nothing usable", "[{\"conversations\": [{\"from\": \"human\", \"value\": \"a\"}]}]",
   "in: ShareGPT: no entry has a human turn followed by a gpt turn (1 entries)"},
  {"a list that is not ShareGPT", "[\n{\"text\": \"a\"}\n]",
   "in: a JSON list, but not ShareGPT: expected [{\"conversations\": [{\"from\": \"human\", \"value\": \"...\"}, "
   "...]}, ...] (or one JSON object per line)"},
};

static void test_goods(void) {
  for (size_t i = 0; i < TP_ARRAY_LEN(goods); i++) {
    const good_case *c = &goods[i];
    tp_dataset ds;
    char err[512] = "";
    int rv = tp__dataset_parse_any(&ds, "in", c->doc, strlen(c->doc), err, sizeof(err));
    CHECK(rv == 0, "%s: loads (%s)", c->what, err);
    if (rv == 0) {
      CHECK_STR(ds.format, c->format, c->what);
      CHECK_INT(ds.n, c->n, c->what);
      CHECK_STR(ds.items[0].text, c->text0, c->what);
      CHECK_INT(ds.items[0].text_len, strlen(c->text0), c->what);
      CHECK_INT(ds.items[0].max_tokens, c->max0, c->what);
      CHECK_INT(ds.items[0].input_tokens, -1, c->what);
      if (c->messages0)
        CHECK_STR(ds.items[0].messages ? ds.items[0].messages : "(none)", c->messages0, c->what);
      else if (strstr(c->doc, "\"messages\"") && !strstr(c->doc, "\"prompt\""))
        CHECK(ds.items[0].messages != NULL, "%s: messages kept", c->what);
      else
        CHECK(ds.items[0].messages == NULL, "%s: no messages", c->what);
      CHECK_STR(ds.items[0].reference ? ds.items[0].reference : "(none)", c->ref0 ? c->ref0 : "(none)", c->what);
      CHECK_INT(ds.max_tokens_from_reference, strcmp(c->format, "sharegpt") == 0, c->what);
      if (c->note[0])
        CHECK(strstr(ds.note, c->note) && strncmp(ds.note, "in: ", 4) == 0, "%s: note (%s)", c->what, ds.note);
      else
        CHECK_STR(ds.note, "", c->what);
    }
    tp_dataset_free(&ds);
  }
}

static void test_bads(void) {
  for (size_t i = 0; i < TP_ARRAY_LEN(bads); i++) {
    const bad_case *c = &bads[i];
    tp_dataset ds;
    char err[512] = "";
    int rv = tp__dataset_parse_any(&ds, "in", c->doc, strlen(c->doc), err, sizeof(err));
    CHECK_INT(rv, TP_EINVAL, c->what);
    CHECK_STR(err, c->err, c->what);
    tp_dataset_free(&ds);
  }
}

static void test_base64(void) {
  static const struct {
    const char *in, *out;
    int rv;
  } t[] = {
      {"", "", 0},           {"Zg==", "f", 0},   {"Zg", "f", 0},       {"Zm8=", "fo", 0},
      {"Zm9v", "foo", 0},    {"Zm9vYg", "foob", 0}, {"Z", NULL, TP_EINVAL}, {"Zm9v=", NULL, TP_EINVAL},
      {"Zm 9", NULL, TP_EINVAL}, {"Zg===", NULL, TP_EINVAL}, {"+/+/", "\xfb\xff\xbf", 0},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(t); i++) {
    unsigned char *out;
    size_t n;
    int rv = tp_base64_decode(t[i].in, strlen(t[i].in), &out, &n);
    CHECK_INT(rv, t[i].rv, t[i].in);
    if (rv == 0 && t[i].out) CHECK_MEM(out, n, t[i].out, strlen(t[i].out), t[i].in);
    free(out);
  }
}

static void test_random_zero(void) {
  /* perf_analyzer's generated data has no file; said so, unless a file by
   * that name exists. */
  char dir[256], old[512];
  const char *t = getenv("TMPDIR");
  snprintf(dir, sizeof(dir), "%s/tp_test_inputs_XXXXXX", t && *t ? t : "/tmp");
  if (!getcwd(old, sizeof(old)) || !mkdtemp(dir) || chdir(dir) != 0) {
    CHECK(0, "temporary directory: %s", strerror(errno));
    return;
  }
  tp_dataset ds;
  char err[512] = "";
  CHECK_INT(tp_dataset_load(&ds, "random", err, sizeof(err)), TP_EINVAL, "--input-data random refused");
  CHECK(strstr(err, "--input-data random (perf_analyzer's generated tensors) is not supported") != NULL,
        "message says why: %s", err);
  tp_dataset_free(&ds);
  CHECK_INT(tp_dataset_load(&ds, "zero", err, sizeof(err)), TP_EINVAL, "--input-data zero refused");
  tp_dataset_free(&ds);
  FILE *f = fopen("zero", "w");
  if (f) {
    fputs("{\"data\": [{\"text_input\": [\"z\"]}]}", f);
    fclose(f);
  }
  CHECK_INT(tp_dataset_load(&ds, "zero", err, sizeof(err)), 0, "a file named zero is read");
  CHECK_STR(ds.format, "perf_analyzer", "as what it holds");
  tp_dataset_free(&ds);
  unlink("zero");
  CHECK_INT(tp_dataset_load(&ds, "missing.json", err, sizeof(err)), TP_ENOTFOUND, "a missing file");
  tp_dataset_free(&ds);
  if (chdir(old) != 0 || rmdir(dir) != 0) printf("# could not remove %s\n", dir);
}

int main(void) {
  test_goods();
  test_bads();
  test_base64();
  test_random_zero();
  return tp_test_done();
}

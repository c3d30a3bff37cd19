/* The trace reader (--schedule): a table of traces, each with the entries
 * (offsets, output lengths, prompts) or the error it must give, and the
 * prompts made for entries that gave only a length. */
#include <stdlib.h>
#include <string.h>

#include "dataset/tp_synth.h"
#include "dataset/tp_trace.h"
#include "tokenizer/tp_tok.h"
#include "tp_test.h"
#include "util/tp_common.h"
#include "util/tp_rng.h"

#define MAX_E 4

typedef struct row {
  const char *what;
  const char *text;
  double speedup;
  bool tokenizer;
  int rv;
  const char *err; /* the message (whole), when rv != 0 */
  size_t n;
  uint64_t offset_ns[MAX_E];
  uint32_t output_tokens[MAX_E];
  const char *prompt[MAX_E];  /* NULL: made later from a length */
  int64_t input_tokens[MAX_E]; /* -1, or the marker -2 - length */
  const char *hash_ids[MAX_E]; /* kept in the reference slot */
} row;

static const row rows[] = {
    {"prompts under each key, times from the first entry", "{\"timestamp\": 1000, \"text_input\": \"a\"}\n"
     "{\"timestamp\": 1500, \"prompt\": \"bb\", \"output_length\": 7}\n"
     "{\"timestamp\": 2000.5, \"input\": \"c\"}\n{\"timestamp\": 3000, \"text\": \"d\"}\n",
     1, false, 0, NULL, 4, {0, 500000000, 1000500000, 2000000000}, {0, 7, 0, 0}, {"a", "bb", "c", "d"},
     {-1, -1, -1, -1}, {NULL}},
    {"speed-up divides the offsets", "{\"timestamp\": 0, \"text\": \"a\"}\n{\"timestamp\": 10, \"text\": \"b\"}\n", 4,
     false, 0, NULL, 2, {0, 2500000}, {0, 0}, {"a", "b"}, {-1, -1}, {NULL}},
    {"a time before the first counts as the first",
     "{\"timestamp\": 50, \"text\": \"a\"}\n{\"timestamp\": 20, \"text\": \"b\"}\n", 1, false, 0, NULL, 2, {0, 0},
     {0, 0}, {"a", "b"}, {-1, -1}, {NULL}},
    {"the first key found wins; blank lines and CRLF are skipped",
     "\n  \r\n{\"timestamp\": 0, \"text\": \"t\", \"prompt\": \"p\"}\r\n\n", 1, false, 0, NULL, 1, {0}, {0}, {"p"},
     {-1}, {NULL}},
    {"output_length 0, negative or not an integer is the default",
     "{\"timestamp\": 0, \"text\": \"a\", \"output_length\": 0}\n{\"timestamp\": 0, \"text\": \"a\", "
     "\"output_length\": -3}\n{\"timestamp\": 0, \"text\": \"a\", \"output_length\": \"9\"}\n",
     1, false, 0, NULL, 3, {0, 0, 0}, {0, 0, 0}, {"a", "a", "a"}, {-1, -1, -1}, {NULL}},
    {"input_length with a tokenizer: a marker and the hash ids",
     "{\"timestamp\": 0, \"input_length\": 30, \"hash_ids\": [4, 5]}\n{\"timestamp\": 1, \"input_length\": 2}\n", 1,
     true, 0, NULL, 2, {0, 1000000}, {0, 0}, {NULL, NULL}, {-32, -4}, {"4,5", NULL}},
    {"input_length without a tokenizer", "{\"timestamp\": 0, \"text\": \"a\"}\n{\"timestamp\": 1, \"input_length\": 3}\n",
     1, false, TP_EINVAL, "t.jsonl:2: \"input_length\" needs --tokenizer to make prompts of that many tokens", 1,
     {0}, {0}, {"a"}, {-1}, {NULL}},
    {"neither a prompt nor a length", "{\"timestamp\": 0, \"input_length\": 0}\n", 1, true, TP_EINVAL,
     "t.jsonl:1: expected a prompt (\"text_input\", \"prompt\", \"input\" or \"text\") or a positive "
     "\"input_length\"", 0, {0}, {0}, {NULL}, {0}, {NULL}},
    {"a missing timestamp", "{\"text\": \"a\"}\n", 1, false, TP_EINVAL,
     "t.jsonl:1: \"timestamp\" must be a number of milliseconds, 0 or more", 0, {0}, {0}, {NULL}, {0}, {NULL}},
    {"a negative timestamp", "{\"timestamp\": -1, \"text\": \"a\"}\n", 1, false, TP_EINVAL,
     "t.jsonl:1: \"timestamp\" must be a number of milliseconds, 0 or more", 0, {0}, {0}, {NULL}, {0}, {NULL}},
    {"a line that is not an object", "[1]\n", 1, false, TP_EINVAL, "t.jsonl:1:1: expected a JSON object", 0, {0},
     {0}, {NULL}, {0}, {NULL}},
    {"a line that is not JSON", "{\"timestamp\": 0, \"text\": \"a\"}\n{oops\n", 1, false, TP_EINVAL, NULL, 1, {0},
     {0}, {"a"}, {-1}, {NULL}},
    {"a control byte in the line is masked in the message", "{\"timestamp\": \x0f" "4}\n", 1, false, TP_EINVAL,
     "t.jsonl:1:15: invalid token near '?'", 0, {0}, {0}, {NULL}, {0}, {NULL}},
    {"an empty file", "\n\n", 1, false, TP_EINVAL, "t.jsonl: no requests (the file is empty)", 0, {0}, {0}, {NULL},
     {0}, {NULL}},
};

static void check_row(const row *w) {
  FILE *f = fmemopen((void *)w->text, strlen(w->text), "r");
  tp_dataset ds;
  memset(&ds, 0, sizeof(ds));
  tp_trace_entry *e = NULL;
  size_t n = 0;
  char err[512] = "";
  int rv = tp_trace_read(f, "t.jsonl", w->speedup, w->tokenizer, &ds, &e, &n, err, sizeof(err));
  fclose(f);
  CHECK(rv == w->rv, "%s: returns %d (got %d: %s)", w->what, w->rv, rv, err);
  if (w->rv && w->err) CHECK(strcmp(err, w->err) == 0, "%s: says '%s' (got '%s')", w->what, w->err, err);
  if (w->rv && !w->err) CHECK(strncmp(err, "t.jsonl:2:", 10) == 0, "%s: names the line (got '%s')", w->what, err);
  CHECK_INT(n, w->n, "entries read");
  CHECK_INT(ds.n, w->n, "one prompt per entry");
  CHECK(ds.source && strcmp(ds.source, "t.jsonl") == 0, "%s: the source is the name", w->what);
  for (size_t i = 0; i < n && i < w->n; i++) {
    CHECK_INT(e[i].offset_ns, w->offset_ns[i], "offset");
    CHECK_INT(e[i].output_tokens, w->output_tokens[i], "output length");
    CHECK_INT(e[i].prompt_index, i, "prompt index");
    const tp_prompt *p = &ds.items[i];
    if (w->prompt[i])
      CHECK(p->text && strcmp(p->text, w->prompt[i]) == 0 && p->text_len == strlen(w->prompt[i]),
            "%s: prompt %zu is '%s'", w->what, i, w->prompt[i]);
    else
      CHECK(!p->text, "%s: prompt %zu is still to make", w->what, i);
    CHECK_INT(p->input_tokens, w->input_tokens[i], "input tokens (or the length marker)");
    CHECK_INT(p->max_tokens, -1, "no max_tokens");
    if (w->hash_ids[i])
      CHECK(p->reference && strcmp(p->reference, w->hash_ids[i]) == 0, "%s: hash ids %s", w->what, w->hash_ids[i]);
    else
      CHECK(!p->reference, "%s: no hash ids on prompt %zu", w->what, i);
  }
  tp_dataset_free(&ds);
  free(e);
}

/* Prompts made from lengths: the same hash id gives the same block, each
 * prompt has its length in tokens, and the made prompts count like any. */
static void check_make(void) {
  const char *path = getenv("TP_WORDS_MODEL");
  if (!path) {
    printf("# TP_WORDS_MODEL not set: skipping the made prompts\n");
    return;
  }
  tp_tok *tok = NULL;
  char err[512];
  CHECK_INT(tp_tok_load(&tok, path, err, sizeof(err)), 0, "tokenizer loads");
  if (!tok) return;
  const char *text = "{\"timestamp\": 0, \"input_length\": 40, \"hash_ids\": [9, 1]}\n"
                     "{\"timestamp\": 5, \"input_length\": 25, \"hash_ids\": [9]}\n"
                     "{\"timestamp\": 6, \"input_length\": 12}\n{\"timestamp\": 7, \"text\": \"kept as it is\"}\n";
  FILE *f = fmemopen((void *)text, strlen(text), "r");
  tp_dataset ds;
  memset(&ds, 0, sizeof(ds));
  tp_trace_entry *e = NULL;
  size_t n = 0;
  CHECK_INT(tp_trace_read(f, "t", 1, true, &ds, &e, &n, err, sizeof(err)), 0, "the trace reads");
  fclose(f);
  int rv = tp_trace_make_prompts(&ds, tok, 10, 42, err, sizeof(err));
  CHECK(rv == 0, "prompts made (%s)", rv ? err : "");
  if (rv == 0 && ds.n == 4) {
    size_t want[] = {40, 25, 12};
    for (size_t i = 0; i < 3; i++) {
      size_t got = 0;
      CHECK(ds.items[i].text && tp_tok_count(tok, ds.items[i].text, ds.items[i].text_len, &got) == 0,
            "prompt %zu made", i);
      /* Blocks and the rest are joined by a space, which may merge. */
      CHECK(got + 2 >= want[i] && got <= want[i] + 2, "prompt %zu: %zu tokens, about %zu", i, got, want[i]);
      CHECK_INT(ds.items[i].input_tokens, -1, "counted like any prompt");
      CHECK(!ds.items[i].reference, "prompt %zu: the hash ids are gone", i);
    }
    /* Hash id 9 is the first block of both: the block made from the seed
     * and the id. */
    char *block = NULL;
    size_t bl = 0;
    CHECK_INT(tp_synth_text(tok, 10, tp_rng_mix(42 ^ 0x5eed, 9), &block, &bl), 0, "block 9 made");
    CHECK(block && bl && ds.items[0].text_len > bl && strncmp(ds.items[0].text, block, bl) == 0 &&
              ds.items[1].text_len > bl && strncmp(ds.items[1].text, block, bl) == 0,
          "the same hash id gives the same block");
    CHECK(block && strncmp(ds.items[2].text, block, bl) != 0, "a prompt without hash ids is fresh text");
    free(block);
    CHECK(strcmp(ds.items[3].text, "kept as it is") == 0, "a given prompt is kept");
    /* Reproducible from the seed. */
    FILE *g = fmemopen((void *)text, strlen(text), "r");
    tp_dataset ds2;
    memset(&ds2, 0, sizeof(ds2));
    tp_trace_entry *e2 = NULL;
    size_t n2 = 0;
    tp_trace_read(g, "t", 1, true, &ds2, &e2, &n2, err, sizeof(err));
    fclose(g);
    CHECK_INT(tp_trace_make_prompts(&ds2, tok, 10, 42, err, sizeof(err)), 0, "again");
    CHECK(ds2.n == 4 && strcmp(ds2.items[0].text, ds.items[0].text) == 0 &&
              strcmp(ds2.items[2].text, ds.items[2].text) == 0,
          "the same seed makes the same prompts");
    tp_dataset_free(&ds2);
    free(e2);
  }
  tp_dataset_free(&ds);
  free(e);
  tp_tok_free(tok);
}

int main(void) {
  for (size_t i = 0; i < TP_ARRAY_LEN(rows); i++) check_row(&rows[i]);
  check_make();
  return tp_test_done();
}

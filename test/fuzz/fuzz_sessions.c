/* Fuzz target: the conversations file reader
 * (lib/dataset/tp_dataset_sessions.c), from memory.
 *
 * The input is a whole file.  Checked besides "no crash, no leak":
 * - a loaded data set is well formed (fuzz_check_dataset), and its
 *   sessions tile the prompts in order: session k's turns are the prompts
 *   right after session k-1's, each session has a turn and an id, and a
 *   fixed answer is a NUL-free string;
 * - an error names the file and holds no control bytes;
 * - the detecting loader reads a file that starts with a session line the
 *   same way. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/tp_dataset_line.h"
#include "fuzz_inputs_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A session trace's turn is its text, or a length whose prompt is made
 * later (text NULL, input_tokens the marker -2 - length). */
static void check_trace_prompts(const tp_dataset *ds) {
  if (ds->n == 0 || strcmp(ds->source, "fuzz") != 0) abort();
  for (size_t i = 0; i < ds->n; i++) {
    const tp_prompt *p = &ds->items[i];
    bool text = p->text && strlen(p->text) == p->text_len && p->input_tokens == -1 && !p->reference;
    bool length = !p->text && p->input_tokens <= -3;
    if (!text && !length) abort();
    if (p->max_tokens != -1 && p->max_tokens <= 0) abort();
  }
  if (ds->note[0] && strncmp(ds->note, "fuzz", 4) != 0) abort();
}

static void check_sessions(const tp_dataset *ds) {
  if (strcmp(ds->format, "sessions (trace)") == 0)
    check_trace_prompts(ds);
  else
    fuzz_check_dataset(ds);
  if (!ds->n_sessions || !ds->turns) abort();
  size_t next = 0;
  for (size_t k = 0; k < ds->n_sessions; k++) {
    const tp_session *s = &ds->sessions[k];
    if (!s->id || s->turns == 0 || s->first != next) abort();
    next += s->turns;
  }
  if (next != ds->n) abort();
  for (size_t i = 0; i < ds->n; i++)
    if (ds->turns[i].assistant && strlen(ds->turns[i].assistant) > (size_t)1 << 30) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  tp_dataset ds;
  char err[512] = "";
  int rv = tp__dataset_sessions(&ds, "fuzz", text, size, err, sizeof(err));
  if (rv != 0 && rv != TP_EINVAL && rv != TP_ENOMEM) abort();
  if (rv == 0) check_sessions(&ds);
  if (rv == TP_EINVAL) fuzz_check_err(err);
  if (tp__dataset_is_sessions(text, size)) {
    tp_dataset any;
    char err2[512] = "";
    int rv2 = tp__dataset_parse_any(&any, "fuzz", text, size, err2, sizeof(err2));
    if (rv2 != rv || (rv == 0 && (any.n != ds.n || any.n_sessions != ds.n_sessions))) abort();
    for (size_t i = 0; rv == 0 && i < ds.n; i++)
      if (!ds.items[i].text != !any.items[i].text || ds.items[i].input_tokens != any.items[i].input_tokens ||
          (ds.items[i].text && strcmp(ds.items[i].text, any.items[i].text) != 0))
        abort();
    tp_dataset_free(&any);
  }
  tp_dataset_free(&ds);
  return 0;
}

/* Fuzz target: the trace reader (--schedule, lib/dataset/tp_trace.c), from
 * memory.
 *
 * The input is a whole trace file.  Checked besides "no crash, no leak":
 * - a read trace is well formed: one prompt per entry, entry i names
 *   prompt i, each prompt is a NUL-free string of its stated length or a
 *   length still to make (marker below -1, only with a tokenizer);
 * - with and without a tokenizer the reads agree: the same entries when
 *   neither needs one, and without one the same first error otherwise;
 * - an error message starts with the file name and holds no control bytes.
 * Any difference abort()s. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/tp_trace.h"
#include "util/tp_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct read_result {
  int rv;
  tp_dataset ds;
  tp_trace_entry *e;
  size_t n;
  char err[512];
} read_result;

static void read_trace(const uint8_t *data, size_t size, bool tokenizer, read_result *out) {
  memset(out, 0, sizeof(*out));
  FILE *f = fmemopen((void *)data, size, "r");
  if (!f) abort();
  out->rv = tp_trace_read(f, "fuzz", 1.5, tokenizer, &out->ds, &out->e, &out->n, out->err, sizeof(out->err));
  fclose(f);
  if (out->rv != 0 && out->rv != TP_EINVAL && out->rv != TP_ENOMEM) abort();
  if (out->n != out->ds.n) abort();
  if (out->rv == TP_EINVAL) {
    if (strncmp(out->err, "fuzz:", 5) != 0) abort();
    for (const char *c = out->err; *c; c++)
      if ((unsigned char)*c < 0x20) abort();
  }
}

/* Returns whether any prompt is a length still to make. */
static bool check_entries(const read_result *r, bool tokenizer) {
  bool lengths = false;
  for (size_t i = 0; i < r->n; i++) {
    const tp_prompt *p = &r->ds.items[i];
    if (r->e[i].prompt_index != i) abort();
    if (p->text) {
      if (strlen(p->text) != p->text_len || p->input_tokens != -1 || p->reference) abort();
    } else {
      if (!tokenizer || p->input_tokens > -3) abort(); /* a length of at least 1 */
      lengths = true;
    }
    if (p->max_tokens != -1) abort();
  }
  return lengths;
}

static bool same_entries(const read_result *a, const read_result *b) {
  if (a->n != b->n) return false;
  for (size_t i = 0; i < a->n; i++) {
    if (a->e[i].offset_ns != b->e[i].offset_ns || a->e[i].output_tokens != b->e[i].output_tokens) return false;
    const tp_prompt *x = &a->ds.items[i], *y = &b->ds.items[i];
    if (!x->text != !y->text) return false;
    if (x->text && (x->text_len != y->text_len || memcmp(x->text, y->text, x->text_len) != 0)) return false;
  }
  return true;
}

static void release(read_result *r) {
  tp_dataset_free(&r->ds);
  free(r->e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  read_result with, without;
  read_trace(data, size, true, &with);
  read_trace(data, size, false, &without);
  bool lengths = check_entries(&with, true);
  check_entries(&without, false);
  if (with.rv == 0 && !lengths && (without.rv != 0 || !same_entries(&with, &without))) abort();
  if (without.rv == 0 && (with.rv != 0 || !same_entries(&with, &without))) abort();
  /* Up to the first entry that needs a tokenizer, both read the same. */
  if (without.n > with.n) abort();
  release(&with);
  release(&without);
  return 0;
}

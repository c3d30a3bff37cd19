/* Fuzz target: the JSONL prompt parser (lib/dataset), from memory.
 *
 * The input is a whole prompt file.  Checked besides "no crash, no leak":
 * - a loaded data set is well formed (prompts are NUL-free strings of the
 *   stated length, max_tokens is -1 or positive, input_tokens is -1);
 * - parsing line by line with tp__dataset_parse_line agrees with the
 *   whole-buffer parse, prompt for prompt, and on the first error;
 * - the same file with CRLF line ends loads the same prompts;
 * - an error message starts with the file name and holds no control
 *   bytes.
 * Any difference abort()s. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/tp_dataset.h"
#include "dataset/tp_dataset_line.h"
#include "util/tp_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_prompt(const tp_prompt *p) {
  if (!p->text || strlen(p->text) != p->text_len) abort();
  if (p->max_tokens != -1 && p->max_tokens <= 0) abort();
  if (p->input_tokens != -1) abort();
}

static void check_err(const char *err) {
  if (strncmp(err, "fuzz:", 5) != 0) abort();
  for (const char *c = err; *c; c++)
    if ((unsigned char)*c < 0x20) abort();
}

static bool same_prompts(const tp_dataset *a, const tp_dataset *b) {
  if (a->n != b->n) return false;
  for (size_t i = 0; i < a->n; i++) {
    const tp_prompt *x = &a->items[i], *y = &b->items[i];
    if (x->text_len != y->text_len || memcmp(x->text, y->text, x->text_len) != 0) return false;
    if (!x->reference != !y->reference) return false;
    if (x->reference && strcmp(x->reference, y->reference) != 0) return false;
    if (x->max_tokens != y->max_tokens) return false;
    if (!x->messages != !y->messages) return false;
    if (x->messages && strcmp(x->messages, y->messages) != 0) return false;
  }
  return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  char err[512];
  tp_dataset ds;
  err[0] = 0;
  int rv = tp__dataset_parse_buffer(&ds, "fuzz", text, size, err, sizeof(err));
  if (rv != 0 && rv != TP_EINVAL && rv != TP_ENOMEM) abort();
  if (rv == 0) {
    if (ds.n == 0 || strcmp(ds.source, "fuzz") != 0) abort();
    for (size_t i = 0; i < ds.n; i++) check_prompt(&ds.items[i]);
  } else if (rv == TP_EINVAL) {
    check_err(err);
  }

  /* Line by line: the same prompts, the same first error. */
  const char *p = text, *end = text + size;
  if (size >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) p += 3;
  size_t lineno = 0, k = 0;
  int line_rv = 0;
  while (p < end && line_rv == 0) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    const char *eol = nl ? nl : end;
    tp_prompt pr;
    bool blank;
    char lerr[512];
    line_rv = tp__dataset_parse_line(p, (size_t)(eol - p), "fuzz", ++lineno, &pr, &blank, lerr,
                                     sizeof(lerr));
    if (line_rv == 0 && !blank) {
      check_prompt(&pr);
      /* The buffer parse kept every prompt before its error. */
      if (k >= ds.n || pr.text_len != ds.items[k].text_len ||
          memcmp(pr.text, ds.items[k].text, pr.text_len) != 0 ||
          pr.max_tokens != ds.items[k].max_tokens)
        abort();
      if (!pr.messages != !ds.items[k].messages ||
          (pr.messages && strcmp(pr.messages, ds.items[k].messages) != 0))
        abort();
      k++;
      free(pr.text);
      free(pr.reference);
      free(pr.messages);
    } else if (line_rv != 0 && rv != 0 && strcmp(lerr, err) != 0) {
      abort(); /* same line, same message */
    }
    p = nl ? nl + 1 : end;
  }
  if (line_rv != 0 && rv != line_rv) abort();
  if (line_rv == 0 && rv == 0 && k != ds.n) abort();
  if (line_rv == 0 && k == 0 && rv != TP_EINVAL) abort(); /* no prompt at all */

  /* CRLF line ends read the same as LF. */
  size_t n_nl = 0;
  for (size_t i = 0; i < size; i++) n_nl += data[i] == '\n';
  char *crlf = malloc(size + n_nl + 1);
  if (crlf) {
    size_t o = 0;
    for (size_t i = 0; i < size; i++) {
      if (data[i] == '\n') crlf[o++] = '\r';
      crlf[o++] = (char)data[i];
    }
    tp_dataset ds2;
    char err2[512];
    int rv2 = tp__dataset_parse_buffer(&ds2, "fuzz", crlf, o, err2, sizeof(err2));
    if (rv2 != rv) abort();
    if (rv == 0 && !same_prompts(&ds, &ds2)) abort();
    tp_dataset_free(&ds2);
    free(crlf);
  }
  tp_dataset_free(&ds);
  return 0;
}

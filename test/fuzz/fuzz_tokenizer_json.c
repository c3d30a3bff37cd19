/* Fuzz target: the tokenizer.json loader and the pipeline it builds
 * (lib/tokenizer/tp_tok_hf*.c), from memory.
 *
 * The input is a whole tokenizer.json.  Checked besides "no crash, no
 * leak":
 * - a refused file leaves no handle, returns one of the documented codes,
 *   and its message starts with the file name and holds no control bytes;
 * - a loaded tokenizer encodes a few fixed texts and the input itself (as
 *   text) without error, twice with the same ids, and tp_tok_count agrees;
 * - every id it gives decodes (decoding never meets an id without a
 *   token), and the decoded text is valid UTF-8.
 * Any difference abort()s. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tp_tok.h"
#include "tokenizer/tp_tok_hf.h"
#include "util/tp_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_err(const char *err) {
  if (strncmp(err, "cannot load tokenizer 'fuzz'", 28) != 0) abort();
  for (const char *c = err; *c; c++)
    if ((unsigned char)*c < 0x20) abort();
}

static void check_text(const tp_tok *t, const char *s, size_t n) {
  int32_t *a = NULL, *b = NULL;
  size_t na = 0, nb = 0, count = 0;
  if (tp_tok_encode(t, s, n, &a, &na) != 0) abort();
  if (tp_tok_encode(t, s, n, &b, &nb) != 0) abort();
  if (na != nb || (na && memcmp(a, b, na * sizeof(int32_t)) != 0)) abort();
  if (tp_tok_count(t, s, n, &count) != 0 || count != na) abort();
  char *text = NULL;
  size_t len = 0;
  if (tp_tok_decode(t, a, na, &text, &len) != 0) abort();
  if (text == NULL || strlen(text) > len || tp__utf8_valid(text, len) != len) abort();
  free(text);
  free(a);
  free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[1024] = "";
  tp_tok *t = (tp_tok *)1;
  int rc = tp__tok_hf_load_mem(&t, "fuzz", (const char *)data, size, err, sizeof(err));
  if (rc != 0) {
    if (t != NULL) abort();
    if (rc != TP_EINVAL && rc != TP_EUNSUPPORTED && rc != TP_ENOMEM) abort();
    check_err(err);
    return 0;
  }
  if (t == NULL || strcmp(tp_tok_name(t), "tokenizer.json") != 0) abort();
  static const char *const texts[] = {
      "",
      "Hello, world! It's 2024.",
      "  spaces\n\nnewlines\t\ttabs  ",
      "\xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80 caf\xc3\xa9 e\xcc\x81",
      "<|im_start|>user\nhi<|im_end|><s></s>[INST]",
      "\xff\xfe invalid \xe2\x82 utf-8 \xed\xa0\x80",
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(texts); i++) check_text(t, texts[i], strlen(texts[i]));
  check_text(t, (const char *)data, size < 4096 ? size : 4096);
  tp_tok_free(t);
  return 0;
}

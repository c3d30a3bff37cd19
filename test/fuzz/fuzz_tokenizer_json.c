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
 *   token), and the decoded text is valid UTF-8;
 * - loaded a second time with TP_TOK_FLAG_SPECIAL_TOKENS (which also reads
 *   the post_processor): a file the plain load refuses is refused with the
 *   same code and message (the post-processor is read last), and a file
 *   it refuses loads plainly only if the post-processor is what it refused;
 *   once loaded, its plain ids are the plain handle's, its ids with special
 *   tokens are the template filled with them, tp_tok_count_special agrees,
 *   and the handle loaded plainly refuses tp_tok_encode_special.
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

/* ts was loaded with TP_TOK_FLAG_SPECIAL_TOKENS; want[0..n_want) are the
 * plain handle's ids for s. */
static void check_special(const tp_tok *ts, const char *s, size_t n, const int32_t *want, size_t n_want) {
  int32_t *a = NULL, *b = NULL;
  size_t na = 0, nb = 0, count = 0;
  if (tp_tok_encode(ts, s, n, &a, &na) != 0) abort();
  if (na != n_want || (na && memcmp(a, want, na * sizeof(int32_t)) != 0)) abort();
  if (tp_tok_encode_special(ts, s, n, &b, &nb) != 0) abort();
  if (tp_tok_count_special(ts, s, n, &count) != 0 || count != nb) abort();
  size_t k = 0;
  for (size_t i = 0; i < ts->n_special; i++) {
    if (ts->special[i] == TP_TOK_TEXT) {
      if (k + na > nb || (na && memcmp(b + k, a, na * sizeof(int32_t)) != 0)) abort();
      k += na;
    } else {
      if (k >= nb || b[k] != ts->special[i]) abort();
      k++;
    }
  }
  if (k != nb) abort();
  free(a);
  free(b);
}

static void check_text(const tp_tok *t, const tp_tok *ts, const char *s, size_t n) {
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
  if (ts != NULL) check_special(ts, s, n, a, na);
  int32_t *c = (int32_t *)1;
  size_t nc = 1;
  if (tp_tok_encode_special(t, s, n, &c, &nc) != TP_EINVAL || c != NULL || nc != 0) abort();
  free(a);
  free(b);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[1024] = "", err_sp[1024] = "";
  tp_tok *t = (tp_tok *)1, *ts = (tp_tok *)1;
  int rc = tp__tok_hf_load_mem(&t, "fuzz", (const char *)data, size, 0, err, sizeof(err));
  int rc_sp = tp__tok_hf_load_mem(&ts, "fuzz", (const char *)data, size, TP_TOK_FLAG_SPECIAL_TOKENS, err_sp,
                                  sizeof(err_sp));
  if (rc_sp != 0) {
    if (ts != NULL) abort();
    if (rc_sp != TP_EINVAL && rc_sp != TP_EUNSUPPORTED && rc_sp != TP_ENOMEM) abort();
    check_err(err_sp);
    if (rc != 0 && rc != TP_ENOMEM && rc_sp != TP_ENOMEM && (rc != rc_sp || strcmp(err, err_sp) != 0))
      abort();
    if (rc == 0 && rc_sp != TP_ENOMEM && strstr(err_sp, "post_processor") == NULL) abort();
  } else {
    /* Reading more of the file never makes it load. */
    if (rc != 0 && rc != TP_ENOMEM) abort();
    const char *desc = tp_tok_special_desc(ts);
    if (ts->special == NULL || ts->n_special == 0 || desc == NULL ||
        tp__utf8_valid(desc, strlen(desc)) != strlen(desc))
      abort();
    for (const char *c = desc; *c; c++)
      if ((unsigned char)*c < 0x20) abort();
  }
  if (rc != 0) {
    if (t != NULL) abort();
    if (rc != TP_EINVAL && rc != TP_EUNSUPPORTED && rc != TP_ENOMEM) abort();
    check_err(err);
    tp_tok_free(ts);
    return 0;
  }
  if (t == NULL || strcmp(tp_tok_name(t), "tokenizer.json") != 0) abort();
  if (tp_tok_special_desc(t) != NULL) abort();
  static const char *const texts[] = {
      "",
      "Hello, world! It's 2024.",
      "  spaces\n\nnewlines\t\ttabs  ",
      "\xe4\xbd\xa0\xe5\xa5\xbd \xf0\x9f\x98\x80 caf\xc3\xa9 e\xcc\x81",
      "<|im_start|>user\nhi<|im_end|><s></s>[INST]",
      "\xff\xfe invalid \xe2\x82 utf-8 \xed\xa0\x80",
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(texts); i++) check_text(t, ts, texts[i], strlen(texts[i]));
  check_text(t, ts, (const char *)data, size < 4096 ? size : 4096);
  tp_tok_free(t);
  tp_tok_free(ts);
  return 0;
}

/* The pluggable tokenizer interface.
 *
 * A backend implements tp_tok_ops; tp_tok_load picks the backend from the
 * path.  Loaded tokenizers are read-only: encode, count and decode may be
 * called from several threads at once (libuv's thread pool counts tokens
 * while the loop keeps timestamping). */
#ifndef TP_TOK_H
#define TP_TOK_H

#include <stddef.h>
#include <stdint.h>

typedef struct tp_tok tp_tok;

typedef struct tp_tok_ops {
  const char *name; /* "sentencepiece", ... */
  /* Encodes without adding special tokens (no BOS/EOS).  *ids is returned
   * owned (free()).  Returns 0 or a negative TP_E* code. */
  int (*encode)(const tp_tok *t, const char *text, size_t len, int32_t **ids, size_t *n);
  /* Returns owned NUL-terminated text in *text (free()). */
  int (*decode)(const tp_tok *t, const int32_t *ids, size_t n, char **text, size_t *len);
  void (*free)(tp_tok *t);
} tp_tok_ops;

struct tp_tok {
  const tp_tok_ops *ops;
  void *impl;
  char *path; /* the file that was loaded */
};

/* Loads a tokenizer from a file or a model directory: a Hugging Face
 * tokenizer.json (BPE, byte-level or sentencepiece style) or a sentencepiece
 * tokenizer.model, chosen by content.  In a directory, tokenizer.json is
 * preferred, then tokenizer.model.  On failure returns TP_ENOTFOUND
 * (nothing usable at path: the message says what was looked for and what was
 * found), TP_EUNSUPPORTED (a tokenizer.json with a model type or pipeline
 * step this build does not implement, named in the message), TP_EINVAL (a
 * file that is not a valid tokenizer: the message names the file and the
 * field), TP_EIO (a path that exists but cannot be read) or TP_ENOMEM.
 * tp_tok_free frees the handle; a backend's ops->free frees only its own
 * state (impl). */
int tp_tok_load(tp_tok **out, const char *path, char *err, size_t errlen);
int tp_tok_encode(const tp_tok *t, const char *text, size_t len, int32_t **ids, size_t *n);
/* Number of tokens in text, without special tokens. */
int tp_tok_count(const tp_tok *t, const char *text, size_t len, size_t *count);
int tp_tok_decode(const tp_tok *t, const int32_t *ids, size_t n, char **text, size_t *len);
const char *tp_tok_name(const tp_tok *t);
void tp_tok_free(tp_tok *t);

/* Backends. */
int tp_tok_spm_load(tp_tok **out, const char *file, char *err, size_t errlen);
/* A Hugging Face tokenizer.json with a BPE model (tp_tok_hf.c).  Codes as
 * tp_tok_load: TP_ENOTFOUND, TP_EIO, TP_EINVAL (not a valid tokenizer.json:
 * the message names the field), TP_EUNSUPPORTED (a model type or pipeline
 * component this backend does not implement, named), TP_ENOMEM. */
int tp_tok_hf_load(tp_tok **out, const char *file, char *err, size_t errlen);

#endif

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
  /* What one text becomes when special tokens are added, read at load time
   * with TP_TOK_FLAG_SPECIAL_TOKENS and NULL without it: ids in order, with
   * TP_TOK_TEXT where the text's own ids go.  A backend sets it through
   * tp__tok_set_special; tp_tok_free frees it. */
  int32_t *special;
  size_t n_special;
  size_t n_special_text; /* how many entries of special are TP_TOK_TEXT */
  char *special_desc;    /* the same in tokenizers' notation: "<s> $A </s>" */
};

/* Stands for the text's own ids in tp_tok.special (real ids are >= 0). */
#define TP_TOK_TEXT (-1)

/* Flags for tp_tok_load_ex. */
typedef enum tp_tok_flag {
  /* Also read which special tokens the tokenizer's own configuration adds
   * around one text (what Hugging Face's libraries do with
   * add_special_tokens=True), so tp_tok_encode_special and
   * tp_tok_count_special work.  Without the flag none of that configuration
   * is read, so a file whose post-processor this build does not implement
   * still loads for plain counting. */
  TP_TOK_FLAG_SPECIAL_TOKENS = 1u << 0
} tp_tok_flag;

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
/* tp_tok_load with flags (tp_tok_flag; 0 is tp_tok_load).  With
 * TP_TOK_FLAG_SPECIAL_TOKENS a configuration that cannot be used to add
 * special tokens also fails the load: TP_EUNSUPPORTED for a post_processor
 * type this build does not implement (the message names the file and the
 * type), TP_EINVAL for a malformed post_processor or tokenizer_config.json,
 * or one that asks for a BOS/EOS the model does not have. */
int tp_tok_load_ex(tp_tok **out, const char *path, unsigned flags, char *err, size_t errlen);
/* Encodes without adding special tokens (no BOS/EOS): the text's own ids.
 * *ids is returned owned (free()).  Returns 0, TP_EINVAL (NULL arguments),
 * TP_ETOOBIG or TP_ENOMEM. */
int tp_tok_encode(const tp_tok *t, const char *text, size_t len, int32_t **ids, size_t *n);
/* Number of tokens in text, without special tokens. */
int tp_tok_count(const tp_tok *t, const char *text, size_t len, size_t *count);
/* As tp_tok_encode and tp_tok_count, plus the special tokens the
 * tokenizer's configuration adds around one text (a tokenizer.json's
 * post_processor for a single sequence; a sentencepiece model's BOS, or
 * what add_bos_token/add_eos_token of a tokenizer_config.json beside it
 * say).  They are added around the text's ids, never inside, so the text's
 * own ids are exactly tp_tok_encode's.  Needs t loaded with
 * TP_TOK_FLAG_SPECIAL_TOKENS: TP_EINVAL otherwise; other codes as
 * tp_tok_encode. */
int tp_tok_encode_special(const tp_tok *t, const char *text, size_t len, int32_t **ids, size_t *n);
int tp_tok_count_special(const tp_tok *t, const char *text, size_t len, size_t *count);
/* What tp_tok_encode_special adds, in tokenizers' template notation with
 * $A for the text ("<s> $A", "$A" when nothing is added); borrowed from t.
 * NULL when t was loaded without TP_TOK_FLAG_SPECIAL_TOKENS. */
const char *tp_tok_special_desc(const tp_tok *t);
int tp_tok_decode(const tp_tok *t, const int32_t *ids, size_t n, char **text, size_t *len);
const char *tp_tok_name(const tp_tok *t);
void tp_tok_free(tp_tok *t);

/* Backends.  flags as tp_tok_load_ex. */
int tp_tok_spm_load(tp_tok **out, const char *file, unsigned flags, char *err, size_t errlen);
/* A Hugging Face tokenizer.json with a BPE model (tp_tok_hf.c).  Codes as
 * tp_tok_load: TP_ENOTFOUND, TP_EIO, TP_EINVAL (not a valid tokenizer.json:
 * the message names the field), TP_EUNSUPPORTED (a model type or pipeline
 * component this backend does not implement, named), TP_ENOMEM. */
int tp_tok_hf_load(tp_tok **out, const char *file, unsigned flags, char *err, size_t errlen);

/* For backends: copies the template of n entries (ids and TP_TOK_TEXT) and
 * its description into t (see tp_tok.special).  Returns 0 or TP_ENOMEM. */
int tp__tok_set_special(tp_tok *t, const int32_t *tmpl, size_t n, const char *desc);

#endif

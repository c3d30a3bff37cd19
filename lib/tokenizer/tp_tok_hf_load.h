/* The tokenizer.json loader's internals, shared by the files that read
 * its parts: tp_tok_hf.c (the whole file), tp_tok_hf_fields.c (typed field
 * readers that report the JSON path at fault), tp_tok_hf_steps.c
 * (normalizers, pre-tokenizers, decoders), tp_tok_hf_added.c (added
 * tokens) and tp_tok_hf_post.c (the post-processor). */
#ifndef TP_TOK_HF_LOAD_H
#define TP_TOK_HF_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tp_tok_hf.h"
#include "tokenizer/tp_tok_hf_json.h"

/* What the post-processor does to one text (see "Post-processor"). */
typedef struct tmpl {
  int32_t *v; /* ids, and TP_TOK_TEXT for the text */
  size_t n, cap;
  tp_buf desc; /* "<s> $A </s>" */
  bool desc_cut;
} tmpl;

typedef struct loader {
  tp__hf *h;
  const tp__json *d;
  char *why;
  size_t whylen;
  unsigned flags; /* tp_tok_flag */
  tmpl post;      /* with TP_TOK_FLAG_SPECIAL_TOKENS: the whole post-processor */
} loader;

int tp__hfl_bad(loader *L, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
const char *tp__hfl_type_of(loader *L, uint32_t obj, const char *path, char *buf, size_t n);
int tp__hfl_get_bool(loader *L, uint32_t obj, const char *key, bool dflt, bool *out, const char *path);
int tp__hfl_get_size(loader *L, uint32_t obj, const char *key, size_t dflt, size_t *out, const char *path);
int tp__hfl_get_str(loader *L, uint32_t obj, const char *key, bool required, const char **out, size_t *len,
                    const char *path);
int tp__hfl_get_char(loader *L, uint32_t obj, const char *key, const char *dflt, char out[4], size_t *out_len,
                     const char *path);
int tp__hfl_compile(loader *L, const char *s, size_t n, bool literal, tp__re **out, const char *path);
int tp__hfl_get_pattern(loader *L, uint32_t obj, const char *key, tp__re **out, const char *path);
int tp__hfl_unsupported(loader *L, const char *path, const char *type, const char *supported);
void *tp__hfl_grow_array(void *p, size_t *cap, size_t n, size_t size);
int tp__hfl_get_replace(loader *L, uint32_t obj, const char *path, char **text, size_t *text_len,
                        tp__re **re);
int tp__hfl_get_prepend_scheme(loader *L, uint32_t obj, const char *path, tp__prepend_scheme *out);
int tp__hfl_load_norm(loader *L, uint32_t obj, const char *path, size_t *cap);
int tp__hfl_load_pre(loader *L, uint32_t obj, const char *path, size_t *cap);
int tp__hfl_load_dec(loader *L, uint32_t obj, const char *path, size_t *cap);
int tp__hfl_load_added(loader *L, uint32_t arr);
int tp__hfl_index_added(loader *L);
int tp__hfl_load_post_processor(loader *L);
void tp__hfl_tmpl_fini(tmpl *t);

#endif

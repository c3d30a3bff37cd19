/* The tokenizer.json loader: normalizers, pre-tokenizers and decoders. */
#include "tokenizer/tp_tok_hf_load.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* Normalizers                                                              */

int tp__hfl_load_norm(loader *L, uint32_t obj, const char *path, size_t *cap) {
  tp__hf *h = L->h;
  char type[64];
  if (tp__json_at(L->d, obj)->type != TP_JSON_OBJECT)
    return tp__hfl_bad(L, path, "is %s, expected an object or null", tp__json_type_name(L->d, obj));
  if (tp__hfl_type_of(L, obj, path, type, sizeof(type)) == NULL) return TP_EINVAL;
  if (strcmp(type, "Sequence") == 0) {
    uint32_t arr = tp__json_get(L->d, obj, "normalizers");
    if (arr == 0 || tp__json_at(L->d, arr)->type != TP_JSON_ARRAY)
      return tp__hfl_bad(L, path, "is a Sequence without a \"normalizers\" array");
    size_t i = 0;
    for (uint32_t e = tp__json_at(L->d, arr)->u.c.first; e; e = tp__json_at(L->d, e)->next, i++) {
      char p[160];
      snprintf(p, sizeof(p), "%s.normalizers[%zu]", path, i);
      int rv = tp__hfl_load_norm(L, e, p, cap);
      if (rv) return rv;
    }
    return 0;
  }
  tp__norm n;
  memset(&n, 0, sizeof(n));
  int rv = 0;
  const char *s;
  size_t len;
  if (strcmp(type, "NFC") == 0)
    n.kind = TP_NORM_NFC;
  else if (strcmp(type, "NFD") == 0)
    n.kind = TP_NORM_NFD;
  else if (strcmp(type, "NFKC") == 0)
    n.kind = TP_NORM_NFKC;
  else if (strcmp(type, "NFKD") == 0)
    n.kind = TP_NORM_NFKD;
  else if (strcmp(type, "Lowercase") == 0)
    n.kind = TP_NORM_LOWERCASE;
  else if (strcmp(type, "Strip") == 0) {
    n.kind = TP_NORM_STRIP;
    if ((rv = tp__hfl_get_bool(L, obj, "strip_left", true, &n.left, path)) ||
        (rv = tp__hfl_get_bool(L, obj, "strip_right", true, &n.right, path)))
      return rv;
  } else if (strcmp(type, "Prepend") == 0) {
    n.kind = TP_NORM_PREPEND;
    if ((rv = tp__hfl_get_str(L, obj, "prepend", true, &s, &len, path))) return rv;
    if ((n.text = tp_strndup(s, len)) == NULL) return TP_ENOMEM;
    n.text_len = len;
  } else if (strcmp(type, "Replace") == 0) {
    n.kind = TP_NORM_REPLACE;
    if ((rv = tp__hfl_get_replace(L, obj, path, &n.text, &n.text_len, &n.re))) return rv;
  } else {
    return tp__hfl_unsupported(L, path, type,
                               "the normalizers NFC, NFD, NFKC, NFKD, Lowercase, Strip, Prepend, "
                               "Replace and Sequence");
  }
  tp__norm *v = tp__hfl_grow_array(h->norms, cap, h->n_norms, sizeof(*v));
  if (v == NULL) {
    tp__re_free(n.re);
    free(n.text);
    return TP_ENOMEM;
  }
  h->norms = v;
  h->norms[h->n_norms++] = n;
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Pre-tokenizers                                                           */

static int parse_behavior(loader *L, uint32_t obj, const char *path, tp__split_behavior *out) {
  static const struct {
    const char *name;
    tp__split_behavior b;
  } names[] = {
      {"Removed", TP_SPLIT_REMOVED},
      {"Isolated", TP_SPLIT_ISOLATED},
      {"MergedWithPrevious", TP_SPLIT_MERGED_WITH_PREVIOUS},
      {"MergedWithNext", TP_SPLIT_MERGED_WITH_NEXT},
      {"Contiguous", TP_SPLIT_CONTIGUOUS},
  };
  uint32_t v = tp__json_get(L->d, obj, "behavior");
  for (size_t i = 0; i < TP_ARRAY_LEN(names); i++)
    if (tp__json_str_is(L->d, v, names[i].name)) {
      *out = names[i].b;
      return 0;
    }
  char p[160];
  snprintf(p, sizeof(p), "%s.behavior", path);
  return tp__hfl_bad(L, p,
                     "must be one of \"Removed\", \"Isolated\", \"MergedWithPrevious\", "
                     "\"MergedWithNext\", \"Contiguous\"");
}

/* GPT-2's pre-tokenization regex, which the ByteLevel pre-tokenizer
 * applies when use_regex is true (the tokenizers source defines it; files
 * do not carry it). */
static const char k_gpt2_regex[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static int push_pre(tp__hf *h, size_t *cap, const tp__pre *p) {
  tp__pre *v = tp__hfl_grow_array(h->pres, cap, h->n_pres, sizeof(*v));
  if (v == NULL) return TP_ENOMEM;
  h->pres = v;
  h->pres[h->n_pres++] = *p;
  return 0;
}

int tp__hfl_load_pre(loader *L, uint32_t obj, const char *path, size_t *cap) {
  tp__hf *h = L->h;
  char type[64];
  if (tp__json_at(L->d, obj)->type != TP_JSON_OBJECT)
    return tp__hfl_bad(L, path, "is %s, expected an object or null", tp__json_type_name(L->d, obj));
  if (tp__hfl_type_of(L, obj, path, type, sizeof(type)) == NULL) return TP_EINVAL;
  int rv = 0;
  tp__pre p;
  memset(&p, 0, sizeof(p));
  if (strcmp(type, "Sequence") == 0) {
    uint32_t arr = tp__json_get(L->d, obj, "pretokenizers");
    if (arr == 0 || tp__json_at(L->d, arr)->type != TP_JSON_ARRAY)
      return tp__hfl_bad(L, path, "is a Sequence without a \"pretokenizers\" array");
    size_t i = 0;
    for (uint32_t e = tp__json_at(L->d, arr)->u.c.first; e; e = tp__json_at(L->d, e)->next, i++) {
      char sub[160];
      snprintf(sub, sizeof(sub), "%s.pretokenizers[%zu]", path, i);
      if ((rv = tp__hfl_load_pre(L, e, sub, cap))) return rv;
    }
    return 0;
  }
  if (strcmp(type, "Split") == 0) {
    p.kind = TP_PRE_SPLIT;
    if ((rv = parse_behavior(L, obj, path, &p.behavior)) ||
        (rv = tp__hfl_get_bool(L, obj, "invert", false, &p.invert, path)) ||
        (rv = tp__hfl_get_pattern(L, obj, "pattern", &p.re, path)))
      return rv;
  } else if (strcmp(type, "ByteLevel") == 0) {
    p.kind = TP_PRE_BYTELEVEL;
    if ((rv = tp__hfl_get_bool(L, obj, "add_prefix_space", true, &p.add_prefix_space, path)) ||
        (rv = tp__hfl_get_bool(L, obj, "use_regex", true, &p.use_regex, path)))
      return rv;
    if (p.use_regex && h->gpt2 == NULL &&
        (rv = tp__hfl_compile(L, k_gpt2_regex, sizeof(k_gpt2_regex) - 1, false, &h->gpt2, path)))
      return rv;
  } else if (strcmp(type, "Metaspace") == 0) {
    p.kind = TP_PRE_METASPACE;
    if ((rv = tp__hfl_get_char(L, obj, "replacement", "\xe2\x96\x81", p.repl, &p.repl_len, path)) ||
        (rv = tp__hfl_get_prepend_scheme(L, obj, path, &p.prepend)) ||
        (rv = tp__hfl_get_bool(L, obj, "split", true, &p.split, path)))
      return rv;
  } else if (strcmp(type, "Digits") == 0) {
    bool individual;
    if ((rv = tp__hfl_get_bool(L, obj, "individual_digits", false, &individual, path))) return rv;
    p.kind = TP_PRE_SPLIT;
    p.chars = TP_CHARS_NUMERIC;
    p.behavior = individual ? TP_SPLIT_ISOLATED : TP_SPLIT_CONTIGUOUS;
  } else if (strcmp(type, "WhitespaceSplit") == 0) {
    p.kind = TP_PRE_SPLIT;
    p.chars = TP_CHARS_WHITESPACE;
    p.behavior = TP_SPLIT_REMOVED;
  } else {
    return tp__hfl_unsupported(L, path, type,
                               "the pre-tokenizers Split, ByteLevel, Metaspace, Digits, "
                               "WhitespaceSplit and Sequence");
  }
  if ((rv = push_pre(h, cap, &p))) tp__re_free(p.re);
  return rv;
}

/* ------------------------------------------------------------------------ */
/* Decoders                                                                 */

int tp__hfl_load_dec(loader *L, uint32_t obj, const char *path, size_t *cap) {
  tp__hf *h = L->h;
  char type[64];
  if (tp__json_at(L->d, obj)->type != TP_JSON_OBJECT)
    return tp__hfl_bad(L, path, "is %s, expected an object or null", tp__json_type_name(L->d, obj));
  if (tp__hfl_type_of(L, obj, path, type, sizeof(type)) == NULL) return TP_EINVAL;
  int rv = 0;
  if (strcmp(type, "Sequence") == 0) {
    uint32_t arr = tp__json_get(L->d, obj, "decoders");
    if (arr == 0 || tp__json_at(L->d, arr)->type != TP_JSON_ARRAY)
      return tp__hfl_bad(L, path, "is a Sequence without a \"decoders\" array");
    size_t i = 0;
    for (uint32_t e = tp__json_at(L->d, arr)->u.c.first; e; e = tp__json_at(L->d, e)->next, i++) {
      char sub[160];
      snprintf(sub, sizeof(sub), "%s.decoders[%zu]", path, i);
      if ((rv = tp__hfl_load_dec(L, e, sub, cap))) return rv;
    }
    return 0;
  }
  tp__dec dd;
  memset(&dd, 0, sizeof(dd));
  if (strcmp(type, "ByteLevel") == 0) {
    dd.kind = TP_DEC_BYTELEVEL;
  } else if (strcmp(type, "ByteFallback") == 0) {
    dd.kind = TP_DEC_BYTEFALLBACK;
  } else if (strcmp(type, "Fuse") == 0) {
    dd.kind = TP_DEC_FUSE;
  } else if (strcmp(type, "Metaspace") == 0) {
    dd.kind = TP_DEC_METASPACE;
    if ((rv = tp__hfl_get_char(L, obj, "replacement", "\xe2\x96\x81", dd.ch, &dd.ch_len, path)) ||
        (rv = tp__hfl_get_prepend_scheme(L, obj, path, &dd.prepend)))
      return rv;
  } else if (strcmp(type, "Strip") == 0) {
    dd.kind = TP_DEC_STRIP;
    if ((rv = tp__hfl_get_char(L, obj, "content", " ", dd.ch, &dd.ch_len, path)) ||
        (rv = tp__hfl_get_size(L, obj, "start", 0, &dd.start, path)) ||
        (rv = tp__hfl_get_size(L, obj, "stop", 0, &dd.stop, path)))
      return rv;
  } else if (strcmp(type, "Replace") == 0) {
    dd.kind = TP_DEC_REPLACE;
    if ((rv = tp__hfl_get_replace(L, obj, path, &dd.text, &dd.text_len, &dd.re))) return rv;
  } else {
    return tp__hfl_unsupported(L, path, type,
                               "the decoders ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip "
                               "and Sequence");
  }
  tp__dec *v = tp__hfl_grow_array(h->decs, cap, h->n_decs, sizeof(*v));
  if (v == NULL) {
    tp__re_free(dd.re);
    free(dd.text);
    return TP_ENOMEM;
  }
  h->decs = v;
  h->decs[h->n_decs++] = dd;
  return 0;
}

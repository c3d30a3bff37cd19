/* The tokenizer.json backend: loading the pipeline, and per-thread state.
 *
 * Loading reads the file with our own JSON reader (tp_tok_hf_json.c; 5-10x
 * faster than jansson on these files), builds the BPE tables, compiles the
 * file's regexes with PCRE2, and resolves added tokens.  Every problem is
 * reported with the JSON path of the field at fault ("model.merges[17]:
 * token \"xyz\" is not in model.vocab"), and unknown component types are
 * refused by name rather than skipped, since a skipped normalizer or
 * pre-tokenizer would silently give other counts than the model's server.
 *
 * Thread safety: after loading, everything here is read-only.  Encoding
 * needs scratch space, PCRE2 match data and a word cache; each thread gets
 * its own (tp__hf_tls) through a pthread key on its first call, so threads
 * never share anything mutable and take no lock after that first call. */
#include "tokenizer/tp_tok_hf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tokenizer/tp_tok_hf_json.h"

/* tokenizer.json files are 2-30 MB; this only stops a wrong path (a
 * weights file) from being read into memory. */
#define MAX_FILE_BYTES (1024u * 1024u * 1024u)

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

static const tp_tok_ops hf_ops;

/* ------------------------------------------------------------------------ */
/* Per-thread state                                                         */

static void tls_free(tp__hf_tls *s) {
  if (s == NULL) return;
  tp__re_state_free(s->re);
  tp__bpe_scratch_free(s->bpe);
  tp_buf_fini(&s->clean);
  for (int i = 0; i < 2; i++) {
    tp_buf_fini(&s->norm[i]);
    tp_buf_fini(&s->pbuf[i]);
    tp_buf_fini(&s->dbuf[i]);
    free(s->plist[i].v);
    free(s->dlist[i].v);
  }
  free(s->segs);
  free(s);
}

/* Runs at thread exit (libuv's pool threads exit when the loop library is
 * torn down); it is never called after tp_tok_free deleted the key. */
static void tls_destructor(void *p) {
  tp__hf_tls *s = p;
  tp__hf *h = s->owner;
  pthread_mutex_lock(&h->mu);
  if (s->prev)
    s->prev->next = s->next;
  else
    h->threads = s->next;
  if (s->next) s->next->prev = s->prev;
  pthread_mutex_unlock(&h->mu);
  tls_free(s);
}

tp__hf_tls *tp__hf_tls_get(tp__hf *h) {
  tp__hf_tls *s = pthread_getspecific(h->key);
  if (s != NULL) return s;
  s = calloc(1, sizeof(*s));
  if (s == NULL) return NULL;
  s->owner = h;
  s->re = tp__re_state_new();
  s->bpe = tp__bpe_scratch_new();
  if (s->re == NULL || s->bpe == NULL) {
    tls_free(s);
    return NULL;
  }
  pthread_mutex_lock(&h->mu);
  s->next = h->threads;
  if (h->threads) h->threads->prev = s;
  h->threads = s;
  pthread_mutex_unlock(&h->mu);
  if (pthread_setspecific(h->key, s) != 0) {
    tls_destructor(s);
    return NULL;
  }
  return s;
}

/* ------------------------------------------------------------------------ */
/* Freeing                                                                  */

static void trie_fini(tp__trie *t) {
  free(t->nodes);
  memset(t, 0, sizeof(*t));
}

static void hf_free(tp__hf *h, bool key_made) {
  if (h == NULL) return;
  if (key_made) {
    /* No destructor runs after this; states of threads still alive are
     * freed from the list (the caller guarantees none is encoding).  The
     * calling thread's value is cleared first, so a key created later in
     * the same slot cannot see it (glibc also guards this with sequence
     * numbers; POSIX does not promise it). */
    pthread_setspecific(h->key, NULL);
    pthread_key_delete(h->key);
    while (h->threads) {
      tp__hf_tls *s = h->threads;
      h->threads = s->next;
      tls_free(s);
    }
    pthread_mutex_destroy(&h->mu);
  }
  tp__bpe_fini(&h->bpe);
  for (size_t i = 0; i < h->n_norms; i++) {
    tp__re_free(h->norms[i].re);
    free(h->norms[i].text);
  }
  free(h->norms);
  for (size_t i = 0; i < h->n_pres; i++) tp__re_free(h->pres[i].re);
  free(h->pres);
  for (size_t i = 0; i < h->n_decs; i++) {
    tp__re_free(h->decs[i].re);
    free(h->decs[i].text);
  }
  free(h->decs);
  tp__re_free(h->gpt2);
  tp__re_free(h->word_char);
  for (size_t i = 0; i < h->n_added; i++) {
    if (h->added[i].match != h->added[i].content) free(h->added[i].match);
    free(h->added[i].content);
  }
  free(h->added);
  trie_fini(&h->raw);
  trie_fini(&h->normalized);
  free(h->added_ids);
  free(h->added_idx);
  free(h);
}

static void hf_ops_free(tp_tok *t) {
  hf_free(t->impl, true);
  t->impl = NULL;
}

/* ------------------------------------------------------------------------ */
/* Field helpers                                                            */

static int bad(loader *L, const char *path, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int bad(loader *L, const char *path, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  tp_seterr(L->why, L->whylen, "%s %s", path, what);
  return TP_EINVAL;
}

/* The type name of a component object, or NULL with an error set. */
static const char *type_of(loader *L, uint32_t obj, const char *path, char *buf, size_t n) {
  uint32_t t = tp__json_get(L->d, obj, "type");
  if (t == 0 || tp__json_at(L->d, t)->type != TP_JSON_STRING) {
    bad(L, path, "has no \"type\" string");
    return NULL;
  }
  tp__json_quote(buf, n, tp__json_str(L->d, t), tp__json_strlen(L->d, t), 40);
  return buf;
}

static int get_bool(loader *L, uint32_t obj, const char *key, bool dflt, bool *out, const char *path) {
  uint32_t v = tp__json_get(L->d, obj, key);
  *out = dflt;
  if (v == 0 || tp__json_at(L->d, v)->type == TP_JSON_NULL) return 0;
  uint8_t t = tp__json_at(L->d, v)->type;
  if (t != TP_JSON_TRUE && t != TP_JSON_FALSE) {
    char p[160];
    snprintf(p, sizeof(p), "%s.%s", path, key);
    return bad(L, p, "is %s, expected true or false", tp__json_type_name(L->d, v));
  }
  *out = t == TP_JSON_TRUE;
  return 0;
}

static int get_size(loader *L, uint32_t obj, const char *key, size_t dflt, size_t *out, const char *path) {
  uint32_t v = tp__json_get(L->d, obj, key);
  *out = dflt;
  if (v == 0) return 0;
  const tp__json_node *n = tp__json_at(L->d, v);
  if (n->type != TP_JSON_NUMBER || n->u.num < 0 || n->u.num > 1e9 || n->u.num != (double)(size_t)n->u.num) {
    char p[160];
    snprintf(p, sizeof(p), "%s.%s", path, key);
    return bad(L, p, "is %s, expected a non-negative integer",
               n->type == TP_JSON_NUMBER ? "out of range" : tp__json_type_name(L->d, v));
  }
  *out = (size_t)n->u.num;
  return 0;
}

/* A string field; *out borrows the document (NULL when absent and
 * !required). */
static int get_str(loader *L, uint32_t obj, const char *key, bool required, const char **out, size_t *len,
                   const char *path) {
  uint32_t v = tp__json_get(L->d, obj, key);
  *out = NULL;
  *len = 0;
  if ((v == 0 || tp__json_at(L->d, v)->type == TP_JSON_NULL) && !required) return 0;
  if (v == 0 || tp__json_at(L->d, v)->type != TP_JSON_STRING) {
    char p[160];
    snprintf(p, sizeof(p), "%s.%s", path, key);
    return bad(L, p, "is %s, expected a string", v ? tp__json_type_name(L->d, v) : "missing");
  }
  *out = tp__json_str(L->d, v);
  *len = tp__json_strlen(L->d, v);
  return 0;
}

/* A field that must hold exactly one character (Rust's char). */
static int get_char(loader *L, uint32_t obj, const char *key, const char *dflt, char out[4], size_t *out_len,
                    const char *path) {
  const char *s;
  size_t n;
  int rv = get_str(L, obj, key, dflt == NULL, &s, &n, path);
  if (rv) return rv;
  if (s == NULL) s = dflt, n = strlen(dflt);
  unsigned char c0 = n ? (unsigned char)s[0] : 0;
  size_t one = c0 < 0x80 ? 1 : c0 < 0xE0 ? 2 : c0 < 0xF0 ? 3 : 4; /* one character's length */
  if (n == 0 || n != one || tp__utf8_valid(s, n) != n) {
    char p[160];
    snprintf(p, sizeof(p), "%s.%s", path, key);
    return bad(L, p, "must be a single character");
  }
  memcpy(out, s, n);
  *out_len = n;
  return 0;
}

static int compile(loader *L, const char *s, size_t n, bool literal, tp__re **out, const char *path) {
  char why[300];
  int rv = tp__re_compile(out, s, n, literal, why, sizeof(why));
  if (rv == TP_ENOMEM) return rv;
  char q[320];
  if (rv)
    tp_seterr(L->why, L->whylen, "%s: the regex \"%s\" cannot be used: %s", path,
              tp__json_quote(q, sizeof(q), s, n, 200), why);
  return rv;
}

/* {"String": "..."} or {"Regex": "..."} */
static int get_pattern(loader *L, uint32_t obj, const char *key, tp__re **out, const char *path) {
  char p[160];
  snprintf(p, sizeof(p), "%s.%s", path, key);
  uint32_t v = tp__json_get(L->d, obj, key);
  if (v == 0 || tp__json_at(L->d, v)->type != TP_JSON_OBJECT)
    return bad(L, p, "is %s, expected {\"String\": ...} or {\"Regex\": ...}",
               v ? tp__json_type_name(L->d, v) : "missing");
  uint32_t s = tp__json_get(L->d, v, "String"), r = tp__json_get(L->d, v, "Regex");
  uint32_t w = s ? s : r;
  if (w == 0 || tp__json_at(L->d, w)->type != TP_JSON_STRING)
    return bad(L, p, "must hold a \"String\" or a \"Regex\" string");
  return compile(L, tp__json_str(L->d, w), tp__json_strlen(L->d, w), s != 0, out, p);
}

static int unsupported(loader *L, const char *path, const char *type, const char *supported) {
  tp_seterr(L->why, L->whylen, "%s.type \"%s\" is not supported (this backend reads %s)", path, type,
            supported);
  return TP_EUNSUPPORTED;
}

static void *grow_array(void *p, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return p;
  size_t c = *cap ? *cap * 2 : 4;
  void *q = realloc(p, c * size);
  if (q) *cap = c;
  return q;
}

/* A Replace step (normalizer or decoder): its content, owned, and its
 * pattern; nothing is left to free on failure. */
static int get_replace(loader *L, uint32_t obj, const char *path, char **text, size_t *text_len,
                       tp__re **re) {
  const char *s;
  size_t len;
  int rv = get_str(L, obj, "content", true, &s, &len, path);
  if (rv) return rv;
  if ((*text = tp_strndup(s, len)) == NULL) return TP_ENOMEM;
  *text_len = len;
  if ((rv = get_pattern(L, obj, "pattern", re, path))) {
    free(*text);
    *text = NULL;
  }
  return rv;
}

static int get_prepend_scheme(loader *L, uint32_t obj, const char *path, tp__prepend_scheme *out) {
  const char *s;
  size_t n;
  int rv = get_str(L, obj, "prepend_scheme", false, &s, &n, path);
  if (rv) return rv;
  if (s == NULL) {
    /* Older files: add_prefix_space true means "always". */
    bool aps;
    if ((rv = get_bool(L, obj, "add_prefix_space", true, &aps, path))) return rv;
    *out = aps ? TP_PREPEND_ALWAYS : TP_PREPEND_NEVER;
    return 0;
  }
  if (n == 6 && memcmp(s, "always", 6) == 0)
    *out = TP_PREPEND_ALWAYS;
  else if (n == 5 && memcmp(s, "first", 5) == 0)
    *out = TP_PREPEND_FIRST;
  else if (n == 5 && memcmp(s, "never", 5) == 0)
    *out = TP_PREPEND_NEVER;
  else {
    char p[160];
    snprintf(p, sizeof(p), "%s.prepend_scheme", path);
    return bad(L, p, "must be \"always\", \"first\" or \"never\"");
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Normalizers                                                              */

static int load_norm(loader *L, uint32_t obj, const char *path, size_t *cap) {
  tp__hf *h = L->h;
  char type[64];
  if (tp__json_at(L->d, obj)->type != TP_JSON_OBJECT)
    return bad(L, path, "is %s, expected an object or null", tp__json_type_name(L->d, obj));
  if (type_of(L, obj, path, type, sizeof(type)) == NULL) return TP_EINVAL;
  if (strcmp(type, "Sequence") == 0) {
    uint32_t arr = tp__json_get(L->d, obj, "normalizers");
    if (arr == 0 || tp__json_at(L->d, arr)->type != TP_JSON_ARRAY)
      return bad(L, path, "is a Sequence without a \"normalizers\" array");
    size_t i = 0;
    for (uint32_t e = tp__json_at(L->d, arr)->u.c.first; e; e = tp__json_at(L->d, e)->next, i++) {
      char p[160];
      snprintf(p, sizeof(p), "%s.normalizers[%zu]", path, i);
      int rv = load_norm(L, e, p, cap);
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
    if ((rv = get_bool(L, obj, "strip_left", true, &n.left, path)) ||
        (rv = get_bool(L, obj, "strip_right", true, &n.right, path)))
      return rv;
  } else if (strcmp(type, "Prepend") == 0) {
    n.kind = TP_NORM_PREPEND;
    if ((rv = get_str(L, obj, "prepend", true, &s, &len, path))) return rv;
    if ((n.text = tp_strndup(s, len)) == NULL) return TP_ENOMEM;
    n.text_len = len;
  } else if (strcmp(type, "Replace") == 0) {
    n.kind = TP_NORM_REPLACE;
    if ((rv = get_replace(L, obj, path, &n.text, &n.text_len, &n.re))) return rv;
  } else {
    return unsupported(L, path, type,
                       "the normalizers NFC, NFD, NFKC, NFKD, Lowercase, Strip, Prepend, "
                       "Replace and Sequence");
  }
  tp__norm *v = grow_array(h->norms, cap, h->n_norms, sizeof(*v));
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
  return bad(L, p,
             "must be one of \"Removed\", \"Isolated\", \"MergedWithPrevious\", "
             "\"MergedWithNext\", \"Contiguous\"");
}

/* GPT-2's pre-tokenization regex, which the ByteLevel pre-tokenizer
 * applies when use_regex is true (the tokenizers source defines it; files
 * do not carry it). */
static const char k_gpt2_regex[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

static int push_pre(tp__hf *h, size_t *cap, const tp__pre *p) {
  tp__pre *v = grow_array(h->pres, cap, h->n_pres, sizeof(*v));
  if (v == NULL) return TP_ENOMEM;
  h->pres = v;
  h->pres[h->n_pres++] = *p;
  return 0;
}

static int load_pre(loader *L, uint32_t obj, const char *path, size_t *cap) {
  tp__hf *h = L->h;
  char type[64];
  if (tp__json_at(L->d, obj)->type != TP_JSON_OBJECT)
    return bad(L, path, "is %s, expected an object or null", tp__json_type_name(L->d, obj));
  if (type_of(L, obj, path, type, sizeof(type)) == NULL) return TP_EINVAL;
  int rv = 0;
  tp__pre p;
  memset(&p, 0, sizeof(p));
  if (strcmp(type, "Sequence") == 0) {
    uint32_t arr = tp__json_get(L->d, obj, "pretokenizers");
    if (arr == 0 || tp__json_at(L->d, arr)->type != TP_JSON_ARRAY)
      return bad(L, path, "is a Sequence without a \"pretokenizers\" array");
    size_t i = 0;
    for (uint32_t e = tp__json_at(L->d, arr)->u.c.first; e; e = tp__json_at(L->d, e)->next, i++) {
      char sub[160];
      snprintf(sub, sizeof(sub), "%s.pretokenizers[%zu]", path, i);
      if ((rv = load_pre(L, e, sub, cap))) return rv;
    }
    return 0;
  }
  if (strcmp(type, "Split") == 0) {
    p.kind = TP_PRE_SPLIT;
    if ((rv = parse_behavior(L, obj, path, &p.behavior)) ||
        (rv = get_bool(L, obj, "invert", false, &p.invert, path)) ||
        (rv = get_pattern(L, obj, "pattern", &p.re, path)))
      return rv;
  } else if (strcmp(type, "ByteLevel") == 0) {
    p.kind = TP_PRE_BYTELEVEL;
    if ((rv = get_bool(L, obj, "add_prefix_space", true, &p.add_prefix_space, path)) ||
        (rv = get_bool(L, obj, "use_regex", true, &p.use_regex, path)))
      return rv;
    if (p.use_regex && h->gpt2 == NULL &&
        (rv = compile(L, k_gpt2_regex, sizeof(k_gpt2_regex) - 1, false, &h->gpt2, path)))
      return rv;
  } else if (strcmp(type, "Metaspace") == 0) {
    p.kind = TP_PRE_METASPACE;
    if ((rv = get_char(L, obj, "replacement", "\xe2\x96\x81", p.repl, &p.repl_len, path)) ||
        (rv = get_prepend_scheme(L, obj, path, &p.prepend)) ||
        (rv = get_bool(L, obj, "split", true, &p.split, path)))
      return rv;
  } else if (strcmp(type, "Digits") == 0) {
    bool individual;
    if ((rv = get_bool(L, obj, "individual_digits", false, &individual, path))) return rv;
    p.kind = TP_PRE_SPLIT;
    p.chars = TP_CHARS_NUMERIC;
    p.behavior = individual ? TP_SPLIT_ISOLATED : TP_SPLIT_CONTIGUOUS;
  } else if (strcmp(type, "WhitespaceSplit") == 0) {
    p.kind = TP_PRE_SPLIT;
    p.chars = TP_CHARS_WHITESPACE;
    p.behavior = TP_SPLIT_REMOVED;
  } else {
    return unsupported(L, path, type,
                       "the pre-tokenizers Split, ByteLevel, Metaspace, Digits, "
                       "WhitespaceSplit and Sequence");
  }
  if ((rv = push_pre(h, cap, &p))) tp__re_free(p.re);
  return rv;
}

/* ------------------------------------------------------------------------ */
/* Decoders                                                                 */

static int load_dec(loader *L, uint32_t obj, const char *path, size_t *cap) {
  tp__hf *h = L->h;
  char type[64];
  if (tp__json_at(L->d, obj)->type != TP_JSON_OBJECT)
    return bad(L, path, "is %s, expected an object or null", tp__json_type_name(L->d, obj));
  if (type_of(L, obj, path, type, sizeof(type)) == NULL) return TP_EINVAL;
  int rv = 0;
  if (strcmp(type, "Sequence") == 0) {
    uint32_t arr = tp__json_get(L->d, obj, "decoders");
    if (arr == 0 || tp__json_at(L->d, arr)->type != TP_JSON_ARRAY)
      return bad(L, path, "is a Sequence without a \"decoders\" array");
    size_t i = 0;
    for (uint32_t e = tp__json_at(L->d, arr)->u.c.first; e; e = tp__json_at(L->d, e)->next, i++) {
      char sub[160];
      snprintf(sub, sizeof(sub), "%s.decoders[%zu]", path, i);
      if ((rv = load_dec(L, e, sub, cap))) return rv;
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
    if ((rv = get_char(L, obj, "replacement", "\xe2\x96\x81", dd.ch, &dd.ch_len, path)) ||
        (rv = get_prepend_scheme(L, obj, path, &dd.prepend)))
      return rv;
  } else if (strcmp(type, "Strip") == 0) {
    dd.kind = TP_DEC_STRIP;
    if ((rv = get_char(L, obj, "content", " ", dd.ch, &dd.ch_len, path)) ||
        (rv = get_size(L, obj, "start", 0, &dd.start, path)) ||
        (rv = get_size(L, obj, "stop", 0, &dd.stop, path)))
      return rv;
  } else if (strcmp(type, "Replace") == 0) {
    dd.kind = TP_DEC_REPLACE;
    if ((rv = get_replace(L, obj, path, &dd.text, &dd.text_len, &dd.re))) return rv;
  } else {
    return unsupported(L, path, type,
                       "the decoders ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip "
                       "and Sequence");
  }
  tp__dec *v = grow_array(h->decs, cap, h->n_decs, sizeof(*v));
  if (v == NULL) {
    tp__re_free(dd.re);
    free(dd.text);
    return TP_ENOMEM;
  }
  h->decs = v;
  h->decs[h->n_decs++] = dd;
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Added tokens                                                             */

static int trie_node(tp__trie *t, uint8_t byte) {
  if (t->n == t->cap) {
    size_t cap = t->cap ? t->cap * 2 : 64;
    tp__trie_node *v = realloc(t->nodes, cap * sizeof(*v));
    if (v == NULL) return -1;
    t->nodes = v;
    t->cap = cap;
  }
  t->nodes[t->n] = (tp__trie_node){.child = -1, .sibling = -1, .tok = -1, .byte = byte};
  return (int)t->n++;
}

/* Inserts s for token index tok; the first token of a string keeps it, as
 * the Aho-Corasick automaton reports the first of equal patterns. */
static int trie_add(tp__trie *t, const char *s, size_t n, int32_t tok) {
  if (n == 0) return 0;
  if (t->n == 0 && trie_node(t, 0) < 0) return TP_ENOMEM;
  int32_t cur = 0;
  for (size_t i = 0; i < n; i++) {
    uint8_t b = (uint8_t)s[i];
    int32_t c = t->nodes[cur].child;
    while (c >= 0 && t->nodes[c].byte != b) c = t->nodes[c].sibling;
    if (c < 0) {
      int nn = trie_node(t, b);
      if (nn < 0) return TP_ENOMEM;
      c = nn;
      t->nodes[c].sibling = t->nodes[cur].child;
      t->nodes[cur].child = c;
    }
    cur = c;
  }
  if (t->nodes[cur].tok < 0) t->nodes[cur].tok = tok;
  t->first[(uint8_t)s[0]] = true;
  return 0;
}

typedef struct raw_added {
  uint32_t node;
  const char *content;
  size_t len;
  bool single_word, lstrip, rstrip, normalized, special;
} raw_added;

static int parse_added(loader *L, uint32_t e, size_t i, raw_added *r) {
  char path[64];
  snprintf(path, sizeof(path), "added_tokens[%zu]", i);
  if (tp__json_at(L->d, e)->type != TP_JSON_OBJECT)
    return bad(L, path, "is %s, expected an object", tp__json_type_name(L->d, e));
  int rv;
  r->node = e;
  if ((rv = get_str(L, e, "content", true, &r->content, &r->len, path)) ||
      (rv = get_bool(L, e, "single_word", false, &r->single_word, path)) ||
      (rv = get_bool(L, e, "lstrip", false, &r->lstrip, path)) ||
      (rv = get_bool(L, e, "rstrip", false, &r->rstrip, path)) ||
      (rv = get_bool(L, e, "special", false, &r->special, path)) ||
      (rv = get_bool(L, e, "normalized", !r->special, &r->normalized, path)))
    return rv;
  uint32_t id = tp__json_get(L->d, e, "id");
  if (id && tp__json_at(L->d, id)->type != TP_JSON_NUMBER)
    return bad(L, path, ".id is %s, expected a number", tp__json_type_name(L->d, id));
  return 0;
}

/* A content -> index map over raw[] for load_added: files with many
 * thousands of added tokens must not cost a quadratic scan (nor may a
 * hostile file). */
typedef struct content_index {
  int32_t *slot; /* index into raw[], -1: empty */
  size_t mask;
} content_index;

static bool same_content(const raw_added *a, const raw_added *b) {
  return a->len == b->len && memcmp(a->content, b->content, a->len) == 0;
}

/* The slot for r's content: the one holding an equal content, or the empty
 * one where it goes. */
static int32_t *index_slot(content_index *x, const raw_added *raw, const raw_added *r) {
  for (size_t i = tp__hash_bytes(r->content, r->len) & x->mask;; i = (i + 1) & x->mask)
    if (x->slot[i] < 0 || same_content(&raw[x->slot[i]], r)) return &x->slot[i];
}

/* Ids follow tokenizers' AddedVocabulary::add_tokens, which ignores the
 * "id" written in the file: a token in the model's vocabulary takes that
 * id; any other the next id after the vocabulary (or after the highest
 * added id, once that is past the vocabulary).  Real files agree with
 * their own ids; the rule matters for hand-edited ones. */
static int load_added(loader *L, uint32_t arr) {
  tp__hf *h = L->h;
  const tp__json *d = L->d;
  size_t count = tp__json_at(d, arr)->u.c.count;
  if (count == 0) return 0;
  raw_added *raw = calloc(count, sizeof(*raw));
  h->added = calloc(count, sizeof(*h->added));
  if (raw == NULL || h->added == NULL) {
    free(raw);
    return TP_ENOMEM;
  }
  int rv = 0;
  size_t i = 0;
  for (uint32_t e = tp__json_at(d, arr)->u.c.first; e && rv == 0; e = tp__json_at(d, e)->next, i++)
    rv = parse_added(L, e, i, &raw[i]);
  /* Two maps: content -> its first special entry (whose flags a content
   * marked special anywhere takes: tokenizers keeps special tokens in their
   * own list), and content -> its first entry (later ones are ignored). */
  content_index special = {0}, seen = {0};
  size_t slots = 16;
  while (slots < 2 * count) slots <<= 1;
  special.slot = malloc(slots * sizeof(int32_t));
  seen.slot = malloc(slots * sizeof(int32_t));
  if (rv == 0 && (special.slot == NULL || seen.slot == NULL)) rv = TP_ENOMEM;
  if (rv == 0) {
    special.mask = seen.mask = slots - 1;
    for (size_t k = 0; k < slots; k++) special.slot[k] = seen.slot[k] = -1;
    for (i = 0; i < count; i++) {
      int32_t *sl = index_slot(&special, raw, &raw[i]);
      if (raw[i].special && *sl < 0) *sl = (int32_t)i;
    }
  }
  int64_t max_added = -1;
  int64_t vsize = (int64_t)h->bpe.n_vocab;
  for (i = 0; i < count && rv == 0; i++) {
    const raw_added *r = &raw[i];
    if (r->len == 0) continue;
    int32_t *sl = index_slot(&seen, raw, r);
    if (*sl >= 0) continue;
    *sl = (int32_t)i;
    int64_t id = tp__bpe_lookup(&h->bpe, r->content, r->len);
    if (id < 0) id = max_added < 0 ? vsize : (max_added >= vsize || vsize == 0) ? max_added + 1 : vsize;
    if (id > INT32_MAX - 1) {
      rv = bad(L, "added_tokens", "need ids past the 32-bit range");
      break;
    }
    if (id > max_added) max_added = id;
    int32_t sp = *index_slot(&special, raw, r);
    const raw_added *f = sp >= 0 ? &raw[sp] : r;
    tp__added *a = &h->added[h->n_added];
    a->content = tp_strndup(r->content, r->len);
    if (a->content == NULL) {
      rv = TP_ENOMEM;
      break;
    }
    a->len = r->len;
    a->match = a->content;
    a->match_len = a->len;
    a->id = (int32_t)id;
    a->single_word = f->single_word;
    a->lstrip = f->lstrip;
    a->rstrip = f->rstrip;
    a->normalized = f->normalized;
    a->special = f->special;
    h->n_added++;
  }
  free(special.slot);
  free(seen.slot);
  free(raw);
  return rv;
}

/* Builds the two tries (specials first, then the others, as tokenizers
 * orders its patterns), the normalized tokens' patterns, and the decode
 * table. */
static int index_added(loader *L) {
  tp__hf *h = L->h;
  int rv = 0;
  bool any_single = false;
  tp__hf_tls *tls = NULL;
  tp_buf nb;
  tp_buf_init(&nb);
  for (int pass = 0; pass < 2 && rv == 0; pass++) {
    for (size_t i = 0; i < h->n_added && rv == 0; i++) {
      tp__added *a = &h->added[i];
      if (a->special != (pass == 0)) continue;
      if (a->single_word) any_single = true;
      if (!a->normalized) {
        rv = trie_add(&h->raw, a->match, a->match_len, (int32_t)i);
        continue;
      }
      if (h->n_norms) {
        if (tls == NULL && (tls = tp__hf_tls_get(h)) == NULL) {
          rv = TP_ENOMEM;
          break;
        }
        if ((rv = tp__hf_normalize(h, tls, a->content, a->len, &nb)) != 0) break;
        a->match = tp_strndup(nb.data ? (char *)nb.data : "", nb.len);
        if (a->match == NULL) {
          a->match = a->content;
          rv = TP_ENOMEM;
          break;
        }
        a->match_len = nb.len;
      }
      rv = trie_add(&h->normalized, a->match, a->match_len, (int32_t)i);
    }
  }
  tp_buf_fini(&nb);
  if (rv) return rv;
  if (any_single) {
    /* Rust's char::is_alphanumeric (Alphabetic or Numeric) or '_'. */
    static const char wc[] = "[\\p{Alphabetic}\\p{Nd}\\p{Nl}\\p{No}_]";
    if ((rv = compile(L, wc, sizeof(wc) - 1, false, &h->word_char, "added_tokens"))) return rv;
  }
  h->added_ids = malloc((h->n_added + 1) * sizeof(int32_t));
  h->added_idx = malloc((h->n_added + 1) * sizeof(size_t));
  if (h->added_ids == NULL || h->added_idx == NULL) return TP_ENOMEM;
  /* Insertion sort by id: a few hundred entries, once. */
  for (size_t i = 0; i < h->n_added; i++) {
    size_t k = i;
    while (k > 0 && h->added_ids[k - 1] > h->added[i].id) {
      h->added_ids[k] = h->added_ids[k - 1];
      h->added_idx[k] = h->added_idx[k - 1];
      k--;
    }
    h->added_ids[k] = h->added[i].id;
    h->added_idx[k] = i;
  }
  return 0;
}

/* ------------------------------------------------------------------------ */
/* Post-processor (read only with TP_TOK_FLAG_SPECIAL_TOKENS)               */

/* tokenizers runs the post-processor on a finished encoding.  For one text,
 * every kind read here puts fixed ids before and after it (a template may
 * even repeat it), so a whole chain of them reduces to one template: ids,
 * with TP_TOK_TEXT where the text's ids go.  A Sequence applies its
 * processors in order, each wrapping what the one before made (Llama 3:
 * ByteLevel, which only trims offsets, then a TemplateProcessing adding
 * <|begin_of_text|>).  The pair templates are not read: a prompt is one
 * text. */

/* Real templates hold two or three entries; this bounds what a hostile
 * file (a Sequence of templates each repeating the text) can make us
 * build. */
#define MAX_TEMPLATE 1024
/* The description goes into reports; past this it is cut with "...". */
#define MAX_DESC 400

static void tmpl_fini(tmpl *t) {
  free(t->v);
  tp_buf_fini(&t->desc);
  memset(t, 0, sizeof(*t));
}

static int tmpl_push(loader *L, tmpl *t, int32_t id, const char *path) {
  if (t->n == MAX_TEMPLATE)
    return bad(L, path, "makes a template of more than %d special tokens and copies of the text",
               MAX_TEMPLATE);
  int32_t *v = grow_array(t->v, &t->cap, t->n, sizeof(*v));
  if (v == NULL) return TP_ENOMEM;
  t->v = v;
  t->v[t->n++] = id;
  return 0;
}

/* Appends one word (already fit for a message) to the description. */
static int desc_add(tmpl *t, const char *s, size_t n) {
  if (t->desc_cut) return 0;
  if (t->desc.len + 1 + n > MAX_DESC) {
    t->desc_cut = true;
    return tp_buf_append_str(&t->desc, t->desc.len ? " ..." : "...");
  }
  if (t->desc.len && tp_buf_append(&t->desc, " ", 1)) return TP_ENOMEM;
  return tp_buf_append(&t->desc, s, n) ? TP_ENOMEM : 0;
}

/* A token's name as written in the file, made safe for a message. */
static int desc_name(tmpl *t, const char *s, size_t n) {
  char q[128];
  tp__json_quote(q, sizeof(q), s, n, 40);
  return desc_add(t, q, strlen(q));
}

/* Appends the text as it stands so far (the template being wrapped). */
static int tmpl_add_text(loader *L, tmpl *next, const tmpl *cur, const char *path) {
  int rv = 0;
  for (size_t i = 0; i < cur->n && rv == 0; i++) rv = tmpl_push(L, next, cur->v[i], path);
  if (rv == 0) rv = desc_add(next, cur->desc.data ? (char *)cur->desc.data : "", cur->desc.len);
  if (rv == 0 && cur->desc_cut) next->desc_cut = true;
  return rv;
}

/* A token id: a JSON integer in [0, INT32_MAX] (ids are u32 in tokenizers;
 * ours are int32_t, and no vocabulary comes near the limit). */
static int get_id(loader *L, uint32_t v, const char *path, int32_t *out) {
  const tp__json_node *n = tp__json_at(L->d, v);
  if (n->type != TP_JSON_NUMBER || !(n->u.num >= 0) || n->u.num > (double)INT32_MAX ||
      n->u.num != (double)(int32_t)n->u.num)
    return bad(L, path, "is %s, expected a token id (an integer from 0)",
               n->type == TP_JSON_NUMBER ? "out of range" : tp__json_type_name(L->d, v));
  *out = (int32_t)n->u.num;
  return 0;
}

/* The member of obj whose key is s[0..n) (the last one, as serde's maps
 * keep), or 0.  Keys here are file content, not NUL-terminated. */
static uint32_t member(const tp__json *d, uint32_t obj, const char *s, size_t n) {
  uint32_t found = 0;
  for (uint32_t k = tp__json_at(d, obj)->u.c.first; k; k = tp__json_at(d, tp__json_at(d, k)->next)->next)
    if (tp__json_strlen(d, k) == n && memcmp(tp__json_str(d, k), s, n) == 0) found = tp__json_at(d, k)->next;
  return found;
}

/* TemplateProcessing: the "single" template, whose items are
 * {"SpecialToken": {"id": NAME}} (the ids of special_tokens[NAME], in
 * order) or {"Sequence": {"id": "A"}} (the text). */
static int post_template(loader *L, uint32_t obj, const char *path, const tmpl *cur, tmpl *next) {
  const tp__json *d = L->d;
  char p[192];
  uint32_t single = tp__json_get(d, obj, "single");
  if (single == 0 || tp__json_at(d, single)->type != TP_JSON_ARRAY) {
    snprintf(p, sizeof(p), "%s.single", path);
    return bad(L, p, "is %s, expected an array of {\"SpecialToken\": ...} and {\"Sequence\": ...} items",
               single ? tp__json_type_name(d, single) : "missing");
  }
  uint32_t specials = tp__json_get(d, obj, "special_tokens");
  if (specials == 0 || tp__json_at(d, specials)->type != TP_JSON_OBJECT) {
    snprintf(p, sizeof(p), "%s.special_tokens", path);
    return bad(L, p, "is %s, expected an object", specials ? tp__json_type_name(d, specials) : "missing");
  }
  size_t i = 0;
  for (uint32_t e = tp__json_at(d, single)->u.c.first; e; e = tp__json_at(d, e)->next, i++) {
    snprintf(p, sizeof(p), "%s.single[%zu]", path, i);
    uint32_t sp = tp__json_get(d, e, "SpecialToken"), sq = tp__json_get(d, e, "Sequence");
    int rv;
    if (sq && tp__json_at(d, sq)->type == TP_JSON_OBJECT) {
      uint32_t id = tp__json_get(d, sq, "id");
      /* B is the second text of a pair: tokenizers itself fails on it for
       * one text, so no count could be right. */
      if (tp__json_str_is(d, id, "B")) return bad(L, p, "is Sequence B, which one text does not have");
      if (!tp__json_str_is(d, id, "A")) return bad(L, p, "is a Sequence whose \"id\" is not \"A\" or \"B\"");
      if ((rv = tmpl_add_text(L, next, cur, p))) return rv;
    } else if (sp && tp__json_at(d, sp)->type == TP_JSON_OBJECT) {
      uint32_t id = tp__json_get(d, sp, "id");
      if (id == 0 || tp__json_at(d, id)->type != TP_JSON_STRING)
        return bad(L, p, "is a SpecialToken without an \"id\" string");
      const char *name = tp__json_str(d, id);
      size_t name_len = tp__json_strlen(d, id);
      char q[128];
      tp__json_quote(q, sizeof(q), name, name_len, 40);
      uint32_t tok = member(d, specials, name, name_len);
      if (tok == 0)
        return bad(L, p, "names the special token \"%s\", which %s.special_tokens does not hold", q, path);
      uint32_t ids = tp__json_get(d, tok, "ids");
      if (ids == 0 || tp__json_at(d, ids)->type != TP_JSON_ARRAY) {
        snprintf(p, sizeof(p), "%s.special_tokens[\"%s\"].ids", path, q);
        return bad(L, p, "is %s, expected an array of token ids",
                   ids ? tp__json_type_name(d, ids) : "missing");
      }
      size_t k = 0;
      for (uint32_t x = tp__json_at(d, ids)->u.c.first; x; x = tp__json_at(d, x)->next, k++) {
        char px[192];
        int32_t v = 0; /* set by get_id on success; the compiler cannot see that */
        snprintf(px, sizeof(px), "%s.special_tokens[\"%s\"].ids[%zu]", path, q, k);
        if ((rv = get_id(L, x, px, &v)) || (rv = tmpl_push(L, next, v, p))) return rv;
      }
      if ((rv = desc_name(next, name, name_len))) return rv;
    } else {
      return bad(L, p, "is not a {\"SpecialToken\": {...}} or {\"Sequence\": {...}} object");
    }
  }
  return 0;
}

/* RobertaProcessing and BertProcessing: cls, the text, sep; each given as
 * ["name", id]. */
static int get_named_id(loader *L, uint32_t obj, const char *key, const char *path, uint32_t *name,
                        int32_t *id) {
  char p[192];
  snprintf(p, sizeof(p), "%s.%s", path, key);
  uint32_t v = tp__json_get(L->d, obj, key);
  const tp__json_node *n = v ? tp__json_at(L->d, v) : NULL;
  if (n == NULL || n->type != TP_JSON_ARRAY || n->u.c.count != 2 ||
      tp__json_at(L->d, n->u.c.first)->type != TP_JSON_STRING)
    return bad(L, p, "must be [\"token\", id]");
  *name = n->u.c.first;
  snprintf(p, sizeof(p), "%s.%s[1]", path, key);
  return get_id(L, tp__json_at(L->d, n->u.c.first)->next, p, id);
}

static int post_cls_sep(loader *L, uint32_t obj, const char *path, const tmpl *cur, tmpl *next) {
  uint32_t cls_name, sep_name;
  int32_t cls, sep;
  int rv;
  if ((rv = get_named_id(L, obj, "cls", path, &cls_name, &cls)) ||
      (rv = get_named_id(L, obj, "sep", path, &sep_name, &sep)) || (rv = tmpl_push(L, next, cls, path)) ||
      (rv = desc_name(next, tp__json_str(L->d, cls_name), tp__json_strlen(L->d, cls_name))) ||
      (rv = tmpl_add_text(L, next, cur, path)) || (rv = tmpl_push(L, next, sep, path)) ||
      (rv = desc_name(next, tp__json_str(L->d, sep_name), tp__json_strlen(L->d, sep_name))))
    return rv;
  return 0;
}

/* Applies the processor obj to L->post. */
static int load_post(loader *L, uint32_t obj, const char *path) {
  const tp__json *d = L->d;
  char type[64];
  if (tp__json_at(d, obj)->type != TP_JSON_OBJECT)
    return bad(L, path, "is %s, expected an object or null", tp__json_type_name(d, obj));
  if (type_of(L, obj, path, type, sizeof(type)) == NULL) return TP_EINVAL;
  if (strcmp(type, "Sequence") == 0) {
    uint32_t arr = tp__json_get(d, obj, "processors");
    if (arr == 0 || tp__json_at(d, arr)->type != TP_JSON_ARRAY)
      return bad(L, path, "is a Sequence without a \"processors\" array");
    size_t i = 0;
    for (uint32_t e = tp__json_at(d, arr)->u.c.first; e; e = tp__json_at(d, e)->next, i++) {
      char sub[160];
      snprintf(sub, sizeof(sub), "%s.processors[%zu]", path, i);
      int rv = load_post(L, e, sub);
      if (rv) return rv;
    }
    return 0;
  }
  /* ByteLevel only trims offsets: it adds nothing. */
  if (strcmp(type, "ByteLevel") == 0) return 0;
  bool is_template = strcmp(type, "TemplateProcessing") == 0;
  if (!is_template && strcmp(type, "RobertaProcessing") != 0 && strcmp(type, "BertProcessing") != 0)
    return unsupported(L, path, type,
                       "the post-processors TemplateProcessing, RobertaProcessing, BertProcessing, "
                       "ByteLevel and Sequence; the post-processor is read only to add special tokens");
  tmpl next;
  memset(&next, 0, sizeof(next));
  tp_buf_init(&next.desc);
  int rv = is_template ? post_template(L, obj, path, &L->post, &next)
                       : post_cls_sep(L, obj, path, &L->post, &next);
  if (rv) {
    tmpl_fini(&next);
    return rv;
  }
  tmpl_fini(&L->post);
  L->post = next;
  return 0;
}

/* Starts from the text alone ("$A") and applies the file's post-processor
 * (none, or null, adds nothing). */
static int load_post_processor(loader *L) {
  int rv;
  if ((rv = tmpl_push(L, &L->post, TP_TOK_TEXT, "post_processor")) || (rv = desc_add(&L->post, "$A", 2)))
    return rv;
  uint32_t v = tp__json_get(L->d, 0, "post_processor");
  if (v == 0 || tp__json_at(L->d, v)->type == TP_JSON_NULL) return 0;
  return load_post(L, v, "post_processor");
}

/* ------------------------------------------------------------------------ */
/* The whole file                                                           */

static int load_doc(loader *L) {
  tp__hf *h = L->h;
  const tp__json *d = L->d;
  int rv;
  if (tp__json_at(d, 0)->type != TP_JSON_OBJECT) {
    tp_seterr(L->why, L->whylen, "the file is %s, expected a tokenizer.json object",
              tp__json_type_name(d, 0));
    return TP_EINVAL;
  }
  uint32_t model = tp__json_get(d, 0, "model");
  if (model == 0 || tp__json_at(d, model)->type != TP_JSON_OBJECT) {
    tp_seterr(L->why, L->whylen, "\"model\" is %s, expected an object (is this a tokenizer.json?)",
              model ? tp__json_type_name(d, model) : "missing");
    return TP_EINVAL;
  }
  uint32_t type = tp__json_get(d, model, "type");
  if (type == 0 && tp__json_get(d, model, "merges") == 0) {
    tp_seterr(L->why, L->whylen, "model has no \"type\" and no \"merges\": not a BPE model");
    return TP_EUNSUPPORTED;
  }
  if (type != 0 && !tp__json_str_is(d, type, "BPE")) {
    if (tp__json_at(d, type)->type != TP_JSON_STRING)
      return bad(L, "model.type", "is %s, expected a string", tp__json_type_name(d, type));
    char q[128];
    tp_seterr(L->why, L->whylen,
              "model.type \"%s\" is not supported (this backend reads BPE models: GPT-2, "
              "Llama 3, Qwen, Mistral and the like)",
              tp__json_quote(q, sizeof(q), tp__json_str(d, type), tp__json_strlen(d, type), 40));
    return TP_EUNSUPPORTED;
  }
  if ((rv = tp__bpe_load(&h->bpe, d, model, L->why, L->whylen)) != 0) return rv;

  size_t cap = 0;
  uint32_t v = tp__json_get(d, 0, "normalizer");
  if (v && tp__json_at(d, v)->type != TP_JSON_NULL && (rv = load_norm(L, v, "normalizer", &cap))) return rv;
  cap = 0;
  v = tp__json_get(d, 0, "pre_tokenizer");
  if (v && tp__json_at(d, v)->type != TP_JSON_NULL && (rv = load_pre(L, v, "pre_tokenizer", &cap))) return rv;
  /* A ByteLevel step at the end maps bytes to characters only so the model
   * can look them up; the model does that itself, per byte (faster). */
  if (h->n_pres && h->pres[h->n_pres - 1].kind == TP_PRE_BYTELEVEL) {
    h->pres[h->n_pres - 1].deferred = true;
    tp__bpe_set_bytelevel(&h->bpe);
  }
  cap = 0;
  v = tp__json_get(d, 0, "decoder");
  if (v && tp__json_at(d, v)->type != TP_JSON_NULL) {
    if ((rv = load_dec(L, v, "decoder", &cap))) return rv;
    h->has_decoder = true;
  }
  v = tp__json_get(d, 0, "added_tokens");
  if (v && tp__json_at(d, v)->type != TP_JSON_NULL) {
    if (tp__json_at(d, v)->type != TP_JSON_ARRAY)
      return bad(L, "added_tokens", "is %s, expected an array", tp__json_type_name(d, v));
    if ((rv = load_added(L, v))) return rv;
  }
  if ((rv = index_added(L))) return rv;
  return (L->flags & TP_TOK_FLAG_SPECIAL_TOKENS) ? load_post_processor(L) : 0;
}

/* Takes text (malloc'd, len bytes) and frees it in every case. */
static int load_owned(tp_tok **out, const char *name, char *text, size_t len, unsigned flags, char *err,
                      size_t errlen) {
  char why[512] = "";
  int rv;
  tp__json doc;
  memset(&doc, 0, sizeof(doc));
  *out = NULL;
  tp__hf *h = calloc(1, sizeof(*h));
  tp_tok *t = calloc(1, sizeof(*t));
  char *path = tp_strndup(name, strlen(name));
  bool key_made = false;
  if (text == NULL || h == NULL || t == NULL || path == NULL) {
    rv = TP_ENOMEM;
    goto fail;
  }
  if (pthread_key_create(&h->key, tls_destructor) != 0) {
    snprintf(why, sizeof(why), "too many tokenizers loaded at once (no thread key left)");
    rv = TP_ENOMEM;
    goto fail;
  }
  pthread_mutex_init(&h->mu, NULL);
  key_made = true;
  if ((rv = tp__json_parse(&doc, text, len, why, sizeof(why))) != 0) {
    if (rv == TP_EINVAL) {
      char tmp[512];
      snprintf(tmp, sizeof(tmp), "%s", why);
      snprintf(why, sizeof(why), "not valid JSON: %.480s", tmp);
    }
    goto fail;
  }
  loader L = {.h = h, .d = &doc, .why = why, .whylen = sizeof(why), .flags = flags};
  tp_buf_init(&L.post.desc);
  rv = load_doc(&L);
  if (rv == 0 && L.post.n) rv = tp__tok_set_special(t, L.post.v, L.post.n, (char *)L.post.desc.data);
  tmpl_fini(&L.post);
  if (rv != 0) goto fail;
  tp__json_fini(&doc);
  free(text);
  t->ops = &hf_ops;
  t->impl = h;
  t->path = path;
  *out = t;
  return 0;
fail:
  tp__json_fini(&doc);
  free(text);
  hf_free(h, key_made);
  free(t);
  free(path);
  if (rv == TP_ENOMEM && why[0] == 0) snprintf(why, sizeof(why), "out of memory");
  if (rv == TP_EINVAL)
    tp_seterr(err, errlen, "cannot load tokenizer '%s': not a valid tokenizer.json: %s", name, why);
  else
    tp_seterr(err, errlen, "cannot load tokenizer '%s': %s", name, why);
  return rv;
}

int tp__tok_hf_load_mem(tp_tok **out, const char *name, const char *data, size_t len, unsigned flags,
                        char *err, size_t errlen) {
  char *text = malloc(len ? len : 1);
  if (text != NULL && len) memcpy(text, data, len);
  return load_owned(out, name, text, len, flags, err, errlen);
}

int tp_tok_hf_load(tp_tok **out, const char *file, unsigned flags, char *err, size_t errlen) {
  *out = NULL;
  FILE *f = fopen(file, "rb");
  if (f == NULL) {
    int e = errno;
    tp_seterr(err, errlen, "cannot read tokenizer '%s': %s%s", file, strerror(e),
              e == ENOENT ? " (pass a tokenizer.json file or a model directory holding one)"
                          : " (check its permissions)");
    return e == ENOENT ? TP_ENOTFOUND : TP_EIO;
  }
  struct stat st;
  if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode)) {
    fclose(f);
    tp_seterr(err, errlen, "cannot read tokenizer '%s': not a regular file", file);
    return TP_EIO;
  }
  if ((uint64_t)st.st_size > MAX_FILE_BYTES) {
    fclose(f);
    tp_seterr(err, errlen,
              "cannot load tokenizer '%s': the file is %lld bytes, too large for a "
              "tokenizer.json (is it a weights file?)",
              file, (long long)st.st_size);
    return TP_EINVAL;
  }
  size_t size = (size_t)st.st_size;
  char *buf = tp__json_big_alloc(size);
  if (buf == NULL) {
    fclose(f);
    tp_seterr(err, errlen, "cannot load tokenizer '%s': out of memory", file);
    return TP_ENOMEM;
  }
  size_t got = fread(buf, 1, size, f);
  bool read_err = ferror(f) != 0;
  fclose(f);
  if (read_err || got != size) {
    free(buf);
    tp_seterr(err, errlen, "cannot read tokenizer '%s': read error", file);
    return TP_EIO;
  }
  return load_owned(out, file, buf, size, flags, err, errlen);
}

static const tp_tok_ops hf_ops = {
    .name = "tokenizer.json",
    .encode = tp__hf_encode,
    .decode = tp__hf_decode,
    .free = hf_ops_free,
};

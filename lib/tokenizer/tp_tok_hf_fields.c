/* The tokenizer.json loader: typed field readers.  Each names the JSON
 * path of a field at fault in its message. */
#include "tokenizer/tp_tok_hf_load.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/tp_utf8.h"

/* ------------------------------------------------------------------------ */
/* Field helpers                                                            */

int tp__hfl_bad(loader *L, const char *path, const char *fmt, ...) {
  char what[256];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof(what), fmt, ap);
  va_end(ap);
  tp_seterr(L->why, L->whylen, "%s %s", path, what);
  return TP_EINVAL;
}

/* The type name of a component object, or NULL with an error set. */
const char *tp__hfl_type_of(loader *L, uint32_t obj, const char *path, char *buf, size_t n) {
  uint32_t t = tp__json_get(L->d, obj, "type");
  if (t == 0 || tp__json_at(L->d, t)->type != TP_JSON_STRING) {
    tp__hfl_bad(L, path, "has no \"type\" string");
    return NULL;
  }
  tp__json_quote(buf, n, tp__json_str(L->d, t), tp__json_strlen(L->d, t), 40);
  return buf;
}

int tp__hfl_get_bool(loader *L, uint32_t obj, const char *key, bool dflt, bool *out, const char *path) {
  uint32_t v = tp__json_get(L->d, obj, key);
  *out = dflt;
  if (v == 0 || tp__json_at(L->d, v)->type == TP_JSON_NULL) return 0;
  uint8_t t = tp__json_at(L->d, v)->type;
  if (t != TP_JSON_TRUE && t != TP_JSON_FALSE) {
    char p[160];
    snprintf(p, sizeof(p), "%s.%s", path, key);
    return tp__hfl_bad(L, p, "is %s, expected true or false", tp__json_type_name(L->d, v));
  }
  *out = t == TP_JSON_TRUE;
  return 0;
}

int tp__hfl_get_size(loader *L, uint32_t obj, const char *key, size_t dflt, size_t *out, const char *path) {
  uint32_t v = tp__json_get(L->d, obj, key);
  *out = dflt;
  if (v == 0) return 0;
  const tp__json_node *n = tp__json_at(L->d, v);
  if (n->type != TP_JSON_NUMBER || n->u.num < 0 || n->u.num > 1e9 || n->u.num != (double)(size_t)n->u.num) {
    char p[160];
    snprintf(p, sizeof(p), "%s.%s", path, key);
    return tp__hfl_bad(L, p, "is %s, expected a non-negative integer",
                       n->type == TP_JSON_NUMBER ? "out of range" : tp__json_type_name(L->d, v));
  }
  *out = (size_t)n->u.num;
  return 0;
}

/* A string field; *out borrows the document (NULL when absent and
 * !required). */
int tp__hfl_get_str(loader *L, uint32_t obj, const char *key, bool required, const char **out, size_t *len,
                    const char *path) {
  uint32_t v = tp__json_get(L->d, obj, key);
  *out = NULL;
  *len = 0;
  if ((v == 0 || tp__json_at(L->d, v)->type == TP_JSON_NULL) && !required) return 0;
  if (v == 0 || tp__json_at(L->d, v)->type != TP_JSON_STRING) {
    char p[160];
    snprintf(p, sizeof(p), "%s.%s", path, key);
    return tp__hfl_bad(L, p, "is %s, expected a string", v ? tp__json_type_name(L->d, v) : "missing");
  }
  *out = tp__json_str(L->d, v);
  *len = tp__json_strlen(L->d, v);
  return 0;
}

/* A field that must hold exactly one character (Rust's char). */
int tp__hfl_get_char(loader *L, uint32_t obj, const char *key, const char *dflt, char out[4], size_t *out_len,
                     const char *path) {
  const char *s;
  size_t n;
  int rv = tp__hfl_get_str(L, obj, key, dflt == NULL, &s, &n, path);
  if (rv) return rv;
  if (s == NULL) s = dflt, n = strlen(dflt);
  if (n == 0 || n != tp_utf8_lead_len((unsigned char)s[0]) || tp_utf8_valid(s, n) != n) {
    char p[160];
    snprintf(p, sizeof(p), "%s.%s", path, key);
    return tp__hfl_bad(L, p, "must be a single character");
  }
  memcpy(out, s, n);
  *out_len = n;
  return 0;
}

int tp__hfl_compile(loader *L, const char *s, size_t n, bool literal, tp__re **out, const char *path) {
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
int tp__hfl_get_pattern(loader *L, uint32_t obj, const char *key, tp__re **out, const char *path) {
  char p[160];
  snprintf(p, sizeof(p), "%s.%s", path, key);
  uint32_t v = tp__json_get(L->d, obj, key);
  if (v == 0 || tp__json_at(L->d, v)->type != TP_JSON_OBJECT)
    return tp__hfl_bad(L, p, "is %s, expected {\"String\": ...} or {\"Regex\": ...}",
                       v ? tp__json_type_name(L->d, v) : "missing");
  uint32_t s = tp__json_get(L->d, v, "String"), r = tp__json_get(L->d, v, "Regex");
  uint32_t w = s ? s : r;
  if (w == 0 || tp__json_at(L->d, w)->type != TP_JSON_STRING)
    return tp__hfl_bad(L, p, "must hold a \"String\" or a \"Regex\" string");
  return tp__hfl_compile(L, tp__json_str(L->d, w), tp__json_strlen(L->d, w), s != 0, out, p);
}

int tp__hfl_unsupported(loader *L, const char *path, const char *type, const char *supported) {
  tp_seterr(L->why, L->whylen, "%s.type \"%s\" is not supported (this backend reads %s)", path, type,
            supported);
  return TP_EUNSUPPORTED;
}

void *tp__hfl_grow_array(void *p, size_t *cap, size_t n, size_t size) {
  if (n < *cap) return p;
  size_t c = *cap ? *cap * 2 : 4;
  void *q = realloc(p, c * size);
  if (q) *cap = c;
  return q;
}

/* A Replace step (normalizer or decoder): its content, owned, and its
 * pattern; nothing is left to free on failure. */
int tp__hfl_get_replace(loader *L, uint32_t obj, const char *path, char **text, size_t *text_len,
                        tp__re **re) {
  const char *s;
  size_t len;
  int rv = tp__hfl_get_str(L, obj, "content", true, &s, &len, path);
  if (rv) return rv;
  if ((*text = tp_strndup(s, len)) == NULL) return TP_ENOMEM;
  *text_len = len;
  if ((rv = tp__hfl_get_pattern(L, obj, "pattern", re, path))) {
    free(*text);
    *text = NULL;
  }
  return rv;
}

int tp__hfl_get_prepend_scheme(loader *L, uint32_t obj, const char *path, tp__prepend_scheme *out) {
  const char *s;
  size_t n;
  int rv = tp__hfl_get_str(L, obj, "prepend_scheme", false, &s, &n, path);
  if (rv) return rv;
  if (s == NULL) {
    /* Older files: add_prefix_space true means "always". */
    bool aps;
    if ((rv = tp__hfl_get_bool(L, obj, "add_prefix_space", true, &aps, path))) return rv;
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
    return tp__hfl_bad(L, p, "must be \"always\", \"first\" or \"never\"");
  }
  return 0;
}

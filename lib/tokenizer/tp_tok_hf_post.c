/* The tokenizer.json loader: the post-processor, reduced to one template. */
#include "tokenizer/tp_tok_hf_load.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void tp__hfl_tmpl_fini(tmpl *t) {
  free(t->v);
  tp_buf_fini(&t->desc);
  memset(t, 0, sizeof(*t));
}

static int tmpl_push(loader *L, tmpl *t, int32_t id, const char *path) {
  if (t->n == MAX_TEMPLATE)
    return tp__hfl_bad(L, path, "makes a template of more than %d special tokens and copies of the text",
                       MAX_TEMPLATE);
  int32_t *v = tp__hfl_grow_array(t->v, &t->cap, t->n, sizeof(*v));
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
    return tp__hfl_bad(L, path, "is %s, expected a token id (an integer from 0)",
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
    return tp__hfl_bad(L, p,
                       "is %s, expected an array of {\"SpecialToken\": ...} and {\"Sequence\": ...} items",
                       single ? tp__json_type_name(d, single) : "missing");
  }
  uint32_t specials = tp__json_get(d, obj, "special_tokens");
  if (specials == 0 || tp__json_at(d, specials)->type != TP_JSON_OBJECT) {
    snprintf(p, sizeof(p), "%s.special_tokens", path);
    return tp__hfl_bad(L, p, "is %s, expected an object",
                       specials ? tp__json_type_name(d, specials) : "missing");
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
      if (tp__json_str_is(d, id, "B"))
        return tp__hfl_bad(L, p, "is Sequence B, which one text does not have");
      if (!tp__json_str_is(d, id, "A"))
        return tp__hfl_bad(L, p, "is a Sequence whose \"id\" is not \"A\" or \"B\"");
      if ((rv = tmpl_add_text(L, next, cur, p))) return rv;
    } else if (sp && tp__json_at(d, sp)->type == TP_JSON_OBJECT) {
      uint32_t id = tp__json_get(d, sp, "id");
      if (id == 0 || tp__json_at(d, id)->type != TP_JSON_STRING)
        return tp__hfl_bad(L, p, "is a SpecialToken without an \"id\" string");
      const char *name = tp__json_str(d, id);
      size_t name_len = tp__json_strlen(d, id);
      char q[128];
      tp__json_quote(q, sizeof(q), name, name_len, 40);
      uint32_t tok = member(d, specials, name, name_len);
      if (tok == 0)
        return tp__hfl_bad(L, p, "names the special token \"%s\", which %s.special_tokens does not hold", q,
                           path);
      uint32_t ids = tp__json_get(d, tok, "ids");
      if (ids == 0 || tp__json_at(d, ids)->type != TP_JSON_ARRAY) {
        snprintf(p, sizeof(p), "%s.special_tokens[\"%s\"].ids", path, q);
        return tp__hfl_bad(L, p, "is %s, expected an array of token ids",
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
      return tp__hfl_bad(L, p, "is not a {\"SpecialToken\": {...}} or {\"Sequence\": {...}} object");
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
    return tp__hfl_bad(L, p, "must be [\"token\", id]");
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
    return tp__hfl_bad(L, path, "is %s, expected an object or null", tp__json_type_name(d, obj));
  if (tp__hfl_type_of(L, obj, path, type, sizeof(type)) == NULL) return TP_EINVAL;
  if (strcmp(type, "Sequence") == 0) {
    uint32_t arr = tp__json_get(d, obj, "processors");
    if (arr == 0 || tp__json_at(d, arr)->type != TP_JSON_ARRAY)
      return tp__hfl_bad(L, path, "is a Sequence without a \"processors\" array");
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
    return tp__hfl_unsupported(
        L, path, type,
        "the post-processors TemplateProcessing, RobertaProcessing, BertProcessing, "
        "ByteLevel and Sequence; the post-processor is read only to add special tokens");
  tmpl next;
  memset(&next, 0, sizeof(next));
  tp_buf_init(&next.desc);
  int rv = is_template ? post_template(L, obj, path, &L->post, &next)
                       : post_cls_sep(L, obj, path, &L->post, &next);
  if (rv) {
    tp__hfl_tmpl_fini(&next);
    return rv;
  }
  tp__hfl_tmpl_fini(&L->post);
  L->post = next;
  return 0;
}

/* Starts from the text alone ("$A") and applies the file's post-processor
 * (none, or null, adds nothing). */
int tp__hfl_load_post_processor(loader *L) {
  int rv;
  if ((rv = tmpl_push(L, &L->post, TP_TOK_TEXT, "post_processor")) || (rv = desc_add(&L->post, "$A", 2)))
    return rv;
  uint32_t v = tp__json_get(L->d, 0, "post_processor");
  if (v == 0 || tp__json_at(L->d, v)->type == TP_JSON_NULL) return 0;
  return load_post(L, v, "post_processor");
}

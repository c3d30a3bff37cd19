/* A small JSON reader for tokenizer.json files.
 *
 * Why not jansson: a Qwen tokenizer.json is 11 MB with 151k vocabulary
 * entries and 151k merges, and jansson takes about 200 ms to build its
 * tree (one hash table per object, one allocation per value).  This reader
 * parses in place: strings are unescaped inside the caller's buffer and
 * nodes live in one array, so the same file parses in about a tenth of that.
 *
 * The tree is read-only after tp__json_parse.  Node 0 is the root; index 0
 * is therefore never a child and doubles as "none" in the accessors. */
#ifndef TP_TOK_HF_JSON_H
#define TP_TOK_HF_JSON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum tp__json_type {
  TP_JSON_NULL = 0,
  TP_JSON_FALSE,
  TP_JSON_TRUE,
  TP_JSON_NUMBER,
  TP_JSON_STRING,
  TP_JSON_ARRAY,
  TP_JSON_OBJECT
} tp__json_type;

typedef struct tp__json_node {
  uint8_t type;
  uint32_t next; /* next sibling (0 = last); in objects keys and values alternate */
  union {
    struct {
      uint32_t off, len; /* string bytes (unescaped, not NUL-terminated) */
    } s;
    struct {
      uint32_t first, count; /* first child (0 = none); objects count members */
    } c;
    double num;
  } u;
} tp__json_node;

typedef struct tp__json {
  char *text; /* borrowed input, unescaped in place */
  size_t len;
  tp__json_node *nodes;
  size_t n_nodes, cap_nodes;
} tp__json;

/* Parses text[0..len) (modified in place: strings are unescaped where they
 * stand, so text must stay alive as long as doc is used).  The input must be
 * valid UTF-8, as serde_json requires.  Returns 0, TP_EINVAL with a message
 * "line L, column C: what" in why, or TP_ENOMEM.  doc is always left in a
 * state tp__json_fini accepts. */
int tp__json_parse(tp__json *doc, char *text, size_t len, char *why, size_t whylen);
void tp__json_fini(tp__json *doc);

/* malloc for the loader's large arrays (the file, the nodes, the tables),
 * freed with free().  Blocks of 2 MiB and more are 2 MiB-aligned and
 * advised as transparent huge pages: a Qwen-sized load touches ~40 MB of
 * fresh memory, and faulting it in 4 KiB pages cost ~15% of the load
 * (7,300 faults; 2,700 with huge pages, load 13% faster). */
void *tp__json_big_alloc(size_t n);

static inline const tp__json_node *tp__json_at(const tp__json *d, uint32_t i) {
  return &d->nodes[i];
}
static inline const char *tp__json_str(const tp__json *d, uint32_t i) {
  return d->text + d->nodes[i].u.s.off;
}
static inline size_t tp__json_strlen(const tp__json *d, uint32_t i) {
  return d->nodes[i].u.s.len;
}
/* The member named key of object obj, or 0 when absent (or obj is not an
 * object).  With duplicate keys the last one wins, as serde's maps do. */
uint32_t tp__json_get(const tp__json *d, uint32_t obj, const char *key);
/* True when node i is a string equal to s. */
bool tp__json_str_is(const tp__json *d, uint32_t i, const char *s);
/* Renders s[0..n) (file content) for a message: control characters as
 * \n, \t, \xNN..., at most max bytes of s, cut at a character boundary and
 * marked "..." when cut.  Returns out, always NUL-terminated. */
const char *tp__json_quote(char *out, size_t outlen, const char *s, size_t n, size_t max);
/* A short name for a node's type ("string", "object", ...). */
const char *tp__json_type_name(const tp__json *d, uint32_t i);

#endif

/* The tokenizer.json backend: internals shared by its files, and the
 * load-from-memory entry point the tests and the fuzz target use.
 *
 * A tokenizer.json describes a pipeline, and encoding runs it in the order
 * of the Rust `tokenizers` library, the reference our tests compare with:
 *   1. added tokens with normalized=false are cut out of the raw text;
 *   2. each remaining segment is normalized (NFC, Replace, Prepend, ...);
 *   3. added tokens with normalized=true are cut out of the normalized text;
 *   4. the pre-tokenizers split each remaining piece into words (Split with
 *      the file's regex, ByteLevel, Metaspace, ...);
 *   5. the BPE model turns each word into ids.
 * No special tokens are added (no BOS/EOS) and the post-processor, the
 * truncation and the padding are not applied: the ids are the text's own.
 * Loaded with TP_TOK_FLAG_SPECIAL_TOKENS, the post-processor is also read,
 * into the template tp_tok_encode_special wraps those ids in.
 *
 * Files: tp_tok_hf.c loads the pipeline and keeps the per-thread state,
 * with its parts read by tp_tok_hf_fields.c, tp_tok_hf_steps.c,
 * tp_tok_hf_added.c and tp_tok_hf_post.c (tp_tok_hf_load.h); tp_tok_hf_run.c
 * runs it (encode), tp_tok_hf_dec.c decodes; tp_tok_hf_bpe.c is the model
 * (read from the file by tp_tok_hf_bpe_load.c), tp_tok_hf_re.c the regexes,
 * tp_tok_hf_json.c the JSON reader. */
#ifndef TP_TOK_HF_H
#define TP_TOK_HF_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tp_tok.h"
#include "tokenizer/tp_tok_hf_bpe.h"
#include "tokenizer/tp_tok_hf_re.h"
#include "util/tp_common.h"

/* Loads a tokenizer.json held in memory (data is copied; name labels the
 * messages and becomes the handle's path; flags as tp_tok_load_ex).  Same
 * codes and messages as tp_tok_hf_load. */
int tp__tok_hf_load_mem(tp_tok **out, const char *name, const char *data, size_t len, unsigned flags,
                        char *err, size_t errlen);

/* Split behaviours, as tokenizers' SplitDelimiterBehavior. */
typedef enum tp__split_behavior {
  TP_SPLIT_REMOVED,
  TP_SPLIT_ISOLATED,
  TP_SPLIT_MERGED_WITH_PREVIOUS,
  TP_SPLIT_MERGED_WITH_NEXT,
  TP_SPLIT_CONTIGUOUS
} tp__split_behavior;

typedef enum tp__prepend_scheme {
  TP_PREPEND_ALWAYS,
  TP_PREPEND_FIRST, /* only on the piece that starts the input */
  TP_PREPEND_NEVER
} tp__prepend_scheme;

typedef enum tp__norm_kind {
  TP_NORM_NFC,
  TP_NORM_NFD,
  TP_NORM_NFKC,
  TP_NORM_NFKD,
  TP_NORM_LOWERCASE,
  TP_NORM_PREPEND,
  TP_NORM_REPLACE,
  TP_NORM_STRIP
} tp__norm_kind;

typedef struct tp__norm {
  tp__norm_kind kind;
  tp__re *re; /* Replace: the pattern */
  char *text; /* Prepend: what to prepend; Replace: the content */
  size_t text_len;
  bool left, right; /* Strip */
} tp__norm;

/* Characters a pre-tokenizer splits on, when it is not a regex. */
typedef enum tp__char_class {
  TP_CHARS_NONE,
  TP_CHARS_NUMERIC,   /* Rust char::is_numeric (Digits) */
  TP_CHARS_WHITESPACE /* Rust char::is_whitespace (WhitespaceSplit) */
} tp__char_class;

typedef enum tp__pre_kind { TP_PRE_SPLIT, TP_PRE_BYTELEVEL, TP_PRE_METASPACE } tp__pre_kind;

typedef struct tp__pre {
  tp__pre_kind kind;
  /* Split (also Digits and WhitespaceSplit, which are splits on classes of
   * characters) */
  tp__re *re;
  tp__char_class chars;
  tp__split_behavior behavior;
  bool invert;
  /* ByteLevel */
  bool add_prefix_space, use_regex;
  bool deferred; /* the byte mapping is left to the model (last step) */
  /* Metaspace */
  char repl[4];
  size_t repl_len;
  tp__prepend_scheme prepend;
  bool split;
} tp__pre;

typedef enum tp__dec_kind {
  TP_DEC_BYTELEVEL,
  TP_DEC_METASPACE,
  TP_DEC_REPLACE,
  TP_DEC_BYTEFALLBACK,
  TP_DEC_FUSE,
  TP_DEC_STRIP
} tp__dec_kind;

typedef struct tp__dec {
  tp__dec_kind kind;
  tp__re *re; /* Replace */
  char *text; /* Replace: content */
  size_t text_len;
  char ch[4]; /* Metaspace: replacement; Strip: content */
  size_t ch_len;
  tp__prepend_scheme prepend;
  size_t start, stop; /* Strip */
} tp__dec;

typedef struct tp__added {
  char *content; /* as written in the file */
  size_t len;
  char *match; /* what is searched for: content, normalized when normalized */
  size_t match_len;
  int32_t id;
  bool single_word, lstrip, rstrip, normalized, special;
} tp__added;

/* A byte trie over the added tokens of one kind (raw or normalized), for
 * leftmost-longest matching like tokenizers' Aho-Corasick. */
typedef struct tp__trie_node {
  int32_t child, sibling; /* first child, next sibling (-1: none) */
  int32_t tok;            /* index into added, or -1 */
  uint8_t byte;
} tp__trie_node;

typedef struct tp__trie {
  tp__trie_node *nodes;
  size_t n, cap;
  bool first[256]; /* bytes some token starts with */
} tp__trie;

typedef struct tp__hf_tls tp__hf_tls;

typedef struct tp__hf {
  tp__bpe bpe;
  tp__norm *norms;
  size_t n_norms;
  tp__pre *pres;
  size_t n_pres;
  tp__dec *decs;
  size_t n_decs;
  bool has_decoder;  /* without one, decode joins tokens with spaces */
  tp__re *gpt2;      /* ByteLevel's own regex, when use_regex */
  tp__re *word_char; /* single_word: is_alphanumeric or '_' */
  tp__added *added;
  size_t n_added;
  tp__trie raw, normalized;
  /* Decode: added token ids sorted, with their index in added. */
  int32_t *added_ids;
  size_t *added_idx;

  /* Per-thread state (tp__hf_tls), made on a thread's first call and
   * listed so tp_tok_free can release the states of threads still alive. */
  pthread_key_t key;
  pthread_mutex_t mu;
  tp__hf_tls *threads;
} tp__hf;

/* A piece of text: bytes [off, off + len) of the list's base. */
typedef struct tp__piece {
  uint32_t off, len;
  bool origin; /* starts where the input starts (Metaspace "first") */
} tp__piece;

typedef struct tp__plist {
  tp__piece *v;
  size_t n, cap;
  const char *base;
} tp__plist;

typedef struct tp__seg {
  uint32_t start, end;
  bool match;
} tp__seg;

struct tp__hf_tls {
  tp__hf_tls *prev, *next;
  tp__hf *owner;
  tp__re_state *re;
  tp__bpe_scratch *bpe;
  tp_buf clean;   /* the input with invalid UTF-8 replaced */
  tp_buf norm[2]; /* normalizer ping-pong */
  tp_buf pbuf[2]; /* pre-tokenizer transforms ping-pong */
  tp__plist plist[2];
  tp__seg *segs;
  size_t n_segs, cap_segs;
  tp_buf dbuf[2]; /* decoder ping-pong */
  tp__plist dlist[2];
};

/* The calling thread's state for h, made on first use; NULL when out of
 * memory. */
tp__hf_tls *tp__hf_tls_get(tp__hf *h);

/* Decodes the (valid) character at s. */
static inline uint32_t tp__cp_at(const char *s, size_t *len) {
  const unsigned char *u = (const unsigned char *)s;
  if (u[0] < 0x80) return *len = 1, u[0];
  if (u[0] < 0xE0) return *len = 2, ((u[0] & 0x1Fu) << 6) | (u[1] & 0x3Fu);
  if (u[0] < 0xF0) return *len = 3, ((u[0] & 0x0Fu) << 12) | ((u[1] & 0x3Fu) << 6) | (u[2] & 0x3Fu);
  return *len = 4, ((u[0] & 0x07u) << 18) | ((u[1] & 0x3Fu) << 12) | ((u[2] & 0x3Fu) << 6) | (u[3] & 0x3Fu);
}

/* Appends the piece s[off..off+len) to l (TP_ETOOBIG past 4 GiB). */
int tp__hf_plist_push(tp__plist *l, size_t off, size_t len, bool origin);

/* Replaces every match of re in s[0..n) with `with`, appending to dst. */
int tp__hf_replace_all(const tp__re *re, tp__re_state *st, const char *s, size_t n, const char *with,
                       size_t with_len, tp_buf *dst);

/* tp_tok_ops of the backend (tp_tok_hf_run.c, tp_tok_hf_dec.c). */
int tp__hf_encode(const tp_tok *t, const char *text, size_t len, int32_t **ids, size_t *n);
int tp__hf_decode(const tp_tok *t, const int32_t *ids, size_t n, char **text, size_t *len);

/* Runs the normalizers of h over s[0..n) into out (reset first).  Used at
 * load time for normalized added tokens, and by encode.  Returns 0 or a
 * negative code. */
int tp__hf_normalize(const tp__hf *h, tp__hf_tls *tls, const char *s, size_t n, tp_buf *out);

/* Appends s[0..n) to out with each maximal invalid UTF-8 sequence replaced
 * by U+FFFD, as Rust's String::from_utf8_lossy does. */
int tp__utf8_lossy(tp_buf *out, const char *s, size_t n);
/* Length of the valid UTF-8 prefix of s[0..n). */
size_t tp__utf8_valid(const char *s, size_t n);

#endif

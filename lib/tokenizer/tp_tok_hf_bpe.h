/* The BPE model of tokenizer.json: vocabulary, merges and the merge loop.
 *
 * Semantics follow the Rust `tokenizers` library (the reference the tests
 * compare against): a word starts as one symbol per character (looked up
 * with continuing_subword_prefix / end_of_word_suffix), characters missing
 * from the vocabulary fall back to <0xNN> byte tokens (byte_fallback) or to
 * unk_token (fused when fuse_unk); then the adjacent pair with the lowest
 * merge rank is merged, leftmost first on ties, until no pair has a merge.
 * With ignore_merges a word that is itself in the vocabulary is one token.
 *
 * The model is read-only after loading.  Encoding needs a tp__bpe_scratch
 * per thread, which also holds that thread's word cache. */
#ifndef TP_TOK_HF_BPE_H
#define TP_TOK_HF_BPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/tp_tok_hf_json.h"

/* A growable id array. */
typedef struct tp__ids {
  int32_t *v;
  size_t n, cap;
} tp__ids;

int tp__ids_reserve(tp__ids *x, size_t extra);
static inline int tp__ids_push(tp__ids *x, int32_t id) {
  if (x->n == x->cap && tp__ids_reserve(x, 1)) return -1;
  x->v[x->n++] = id;
  return 0;
}

/* A vocabulary slot: 32 bytes, two per cache line.  The first bytes of
 * the token are kept inline, so most lookups (tokens are short) compare
 * without touching the pool: at load time, with 3 lookups per merge and
 * 100k-300k merges, cache misses are most of the cost. */
#define TP_VSLOT_INLINE 16
typedef struct tp__vslot {
  uint32_t hash;     /* high half of the 64-bit hash */
  int32_t id;        /* -1: empty slot */
  uint32_t off, len; /* token bytes in the pool */
  char inl[TP_VSLOT_INLINE];
} tp__vslot;

typedef struct tp__mslot {
  uint64_t key; /* left id << 32 | right id; UINT64_MAX: empty */
  uint32_t rank;
  int32_t new_id;
} tp__mslot;

typedef struct tp__bpe {
  char *pool; /* every vocabulary string, back to back */
  size_t pool_len;
  tp__vslot *vtab; /* token -> id, open addressing */
  size_t vmask;
  size_t n_vocab;            /* distinct tokens (the model's vocabulary size) */
  int32_t max_id;            /* highest id in the vocabulary, -1 when empty */
  uint32_t *id_off, *id_len; /* id -> token in the pool (UINT32_MAX: none) */
  tp__mslot *mtab;           /* (left, right) -> (rank, merged id) */
  size_t mmask;
  /* One bit per hash of the pairs that have a merge: most pairs looked up
   * have none, and this 128 KiB map stays in cache where the table (MBs)
   * does not. */
  uint64_t *mfilter;
  size_t n_merges;

  int32_t unk_id; /* -1: no unk_token */
  bool fuse_unk, byte_fallback, ignore_merges;
  char *prefix, *suffix; /* NULL or non-empty */
  size_t prefix_len, suffix_len;
  int32_t byte_tok[256]; /* id of "<0xNN>", -1 when missing */
  /* Without prefix and suffix, the id of each one-character token below
   * U+0800 (-1: not in the vocabulary), so most characters skip the hash. */
  int32_t small_cp[0x800];
  /* Byte-level input (the words are raw bytes; the model sees each byte as
   * its GPT-2 character): the id of each byte's character, and whether
   * all 256 are present (then symbols come straight from this table). */
  bool bytelevel;
  bool bl_complete;
  int32_t bl_id[256];
} tp__bpe;

typedef struct tp__bpe_scratch tp__bpe_scratch;

/* Builds the model from the "model" object of a tokenizer.json (node i of
 * doc).  The model keeps copies of what it needs; doc may be freed after.
 * On failure returns TP_EINVAL (what is wrong, naming the JSON field, in
 * why), TP_EUNSUPPORTED, or TP_ENOMEM, and leaves m freeable. */
int tp__bpe_load(tp__bpe *m, const tp__json *doc, uint32_t model, char *why, size_t whylen);
void tp__bpe_fini(tp__bpe *m);

/* Declares the words byte-level: tp__bpe_word then takes raw bytes and
 * maps each through the GPT-2 byte-to-character table itself, which saves
 * building the mapped string for every word. */
void tp__bpe_set_bytelevel(tp__bpe *m);

/* The id of token s[0..n), or -1. */
int32_t tp__bpe_lookup(const tp__bpe *m, const char *s, size_t n);
/* The string of id (borrowed from the model), or NULL when no token has it. */
const char *tp__bpe_token(const tp__bpe *m, int32_t id, size_t *len);

tp__bpe_scratch *tp__bpe_scratch_new(void);
void tp__bpe_scratch_free(tp__bpe_scratch *s);

/* Appends the ids of one pre-tokenized word w[0..n) (valid UTF-8 unless
 * byte-level) to out.  Returns 0 or TP_ENOMEM. */
int tp__bpe_word(const tp__bpe *m, tp__bpe_scratch *s, const char *w, size_t n, tp__ids *out);

/* The GPT-2 byte-to-character table: byte b is shown as code point
 * tp__bytelevel_cp(b); the inverse gives -1 for other code points. */
uint32_t tp__bytelevel_cp(uint8_t b);
int tp__bytelevel_byte(uint32_t cp);

/* A 64-bit hash of bytes, for the vocabulary and the word caches. */
uint64_t tp__hash_bytes(const void *p, size_t n);

#endif

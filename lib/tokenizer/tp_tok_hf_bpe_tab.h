/* The BPE model's hash tables, shared by the file that builds them
 * (tp_tok_hf_bpe_load.c) and the one that reads them (tp_tok_hf_bpe.c). */
#ifndef TP_TOK_HF_BPE_TAB_H
#define TP_TOK_HF_BPE_TAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tokenizer/tp_tok_hf_bpe.h"

/* Ids must stay below this (real vocabularies are under 300k); it bounds
 * the id table and keeps the merge keys' empty marker free. */
#define MAX_ID 0x7FFFFFFE
/* Bits of the merge table's filter index. */
#define FILTER_BITS 20

static inline uint64_t mix64(uint64_t k) {
  k ^= k >> 33;
  k *= 0xFF51AFD7ED558CCDULL;
  k ^= k >> 33;
  k *= 0xC4CEB9FE1A85EC53ULL;
  k ^= k >> 33;
  return k;
}

static inline bool slot_is(const tp__bpe *m, const tp__vslot *v, uint32_t h32, const char *s, size_t n) {
  if (v->hash != h32 || v->len != n) return false;
  if (n <= TP_VSLOT_INLINE) return memcmp(v->inl, s, n) == 0;
  return memcmp(v->inl, s, TP_VSLOT_INLINE) == 0 &&
         memcmp(m->pool + v->off + TP_VSLOT_INLINE, s + TP_VSLOT_INLINE, n - TP_VSLOT_INLINE) == 0;
}

/* Lookup with the hash already computed (tp__hash_bytes(s, n)). */
static inline int32_t lookup_h(const tp__bpe *m, const char *s, size_t n, uint64_t h) {
  uint32_t h32 = (uint32_t)(h >> 32);
  for (size_t i = h & m->vmask;; i = (i + 1) & m->vmask) {
    const tp__vslot *v = &m->vtab[i];
    if (v->id < 0) return -1;
    if (slot_is(m, v, h32, s, n)) return v->id;
  }
}

#endif

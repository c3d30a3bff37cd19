#include "util/tp_u64map.h"

#include <stdlib.h>

#include "util/tp_common.h"

void tp_u64map_init(tp_u64map *m) { *m = (tp_u64map){0}; }

void tp_u64map_fini(tp_u64map *m) {
  free(m->keys);
  free(m->vals);
  *m = (tp_u64map){0};
}

/* A multiplicative hash: session numbers and serials are consecutive, and
 * the top bits of their product spread them over the table. */
static size_t slot_of(const tp_u64map *m, uint64_t key) {
  return (size_t)((key * 0x9E3779B97F4A7C15ULL) >> 32) & (m->cap - 1);
}

static size_t find(const tp_u64map *m, uint64_t key) {
  size_t i = slot_of(m, key);
  while (m->keys[i] && m->keys[i] != key) i = (i + 1) & (m->cap - 1);
  return i;
}

bool tp_u64map_get(const tp_u64map *m, uint64_t key, uint64_t *val) {
  if (!key || !m->cap) return false;
  size_t i = find(m, key);
  if (!m->keys[i]) return false;
  if (val) *val = m->vals[i];
  return true;
}

static int grow(tp_u64map *m) {
  size_t cap = m->cap ? m->cap * 2 : 16;
  tp_u64map big = {calloc(cap, sizeof(uint64_t)), calloc(cap, sizeof(uint64_t)), cap, 0};
  if (!big.keys || !big.vals) {
    tp_u64map_fini(&big);
    return TP_ENOMEM;
  }
  for (size_t i = 0; i < m->cap; i++)
    if (m->keys[i]) {
      size_t j = find(&big, m->keys[i]);
      big.keys[j] = m->keys[i];
      big.vals[j] = m->vals[i];
      big.n++;
    }
  tp_u64map_fini(m);
  *m = big;
  return 0;
}

int tp_u64map_put(tp_u64map *m, uint64_t key, uint64_t val) {
  if (!key) return TP_EINVAL;
  /* At most 3/4 full: probes stay short. */
  if ((m->n + 1) * 4 > m->cap * 3 && grow(m)) return TP_ENOMEM;
  size_t i = find(m, key);
  if (!m->keys[i]) {
    m->keys[i] = key;
    m->n++;
  }
  m->vals[i] = val;
  return 0;
}

bool tp_u64map_del(tp_u64map *m, uint64_t key, uint64_t *val) {
  if (!key || !m->cap) return false;
  size_t i = find(m, key);
  if (!m->keys[i]) return false;
  if (val) *val = m->vals[i];
  m->keys[i] = 0;
  m->n--;
  /* Shift back the entries after the hole that would no longer be found:
   * those whose home slot is not cyclically within (i, j]. */
  size_t mask = m->cap - 1;
  for (size_t j = (i + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
    size_t home = slot_of(m, m->keys[j]);
    bool reachable = i <= j ? (home > i && home <= j) : (home > i || home <= j);
    if (reachable) continue;
    m->keys[i] = m->keys[j];
    m->vals[i] = m->vals[j];
    m->keys[j] = 0;
    i = j;
  }
  return true;
}

/* A map from non-zero 64-bit keys to 64-bit values: open addressing with
 * linear probing, deletion by shifting back (no tombstones), so a map that
 * sees many keys come and go (sessions, in flight a few at a time) stays as
 * small and fast as the keys it holds. */
#ifndef TP_U64MAP_H
#define TP_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tp_u64map {
  uint64_t *keys; /* 0 = empty slot */
  uint64_t *vals;
  size_t cap;     /* a power of two, or 0 */
  size_t n;
} tp_u64map;

void tp_u64map_init(tp_u64map *m);
void tp_u64map_fini(tp_u64map *m);
/* Whether key is there; its value in *val (when not NULL). */
bool tp_u64map_get(const tp_u64map *m, uint64_t key, uint64_t *val);
/* Sets key's value.  Returns 0, TP_EINVAL for key 0, or TP_ENOMEM. */
int tp_u64map_put(tp_u64map *m, uint64_t key, uint64_t val);
/* Removes key; whether it was there (its value in *val when not NULL). */
bool tp_u64map_del(tp_u64map *m, uint64_t key, uint64_t *val);

#endif

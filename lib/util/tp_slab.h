/* A single-threaded small-object allocator: size classes with free lists,
 * carved from 64 KiB slabs, everything released at once by tp_slab_free.
 *
 * Why: at 100,000 requests/s the client's loop allocates and frees a
 * handful of small objects per request (nghttp2's stream, its outbound
 * items and header copies), in bursts larger than the C library's
 * per-thread cache, and malloc/free took a fifth of the loop's time.  A
 * free list per size class is a push and a pop.  Memory is held at its
 * peak until tp_slab_free; blocks over 4 KiB go to malloc. */
#ifndef TP_SLAB_H
#define TP_SLAB_H

#include <stddef.h>

typedef struct tp_slab tp_slab;

/* NULL when out of memory. */
tp_slab *tp_slab_new(void);
/* Releases every slab; blocks still held from it become invalid (large
 * ones, from malloc, must have been released before). */
void tp_slab_free(tp_slab *s);

/* Blocks aligned for any type, or NULL when out of memory (or size is 0 for
 * tp_slab_alloc... which returns a minimal block instead, as malloc may). */
void *tp_slab_alloc(tp_slab *s, size_t size);
void *tp_slab_calloc(tp_slab *s, size_t nmemb, size_t size);
/* realloc's contract: p NULL allocates; size 0 releases and returns NULL. */
void *tp_slab_realloc(tp_slab *s, void *p, size_t size);
/* NULL is ignored. */
void tp_slab_release(tp_slab *s, void *p);

/* Bytes of slab memory taken from the system so far (for tests). */
size_t tp_slab_footprint(const tp_slab *s);

#endif

#include "tp_slab.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SLAB_BYTES (64u << 10)
#define BIG_CLASS 0xffu

/* Every block starts with this header, 16 bytes so that the payload keeps
 * malloc's alignment. */
typedef struct hdr {
  uint32_t cls; /* index in class_size, or BIG_CLASS */
  uint32_t pad;
  uint64_t size; /* a BIG_CLASS block's size */
} hdr;

/* Under AddressSanitizer every block comes from malloc, so that a block
 * used after its release is reported as it would be without the slab. */
#if defined(__SANITIZE_ADDRESS__)
#define SLAB_PASSTHROUGH 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLAB_PASSTHROUGH 1
#endif
#endif
#ifndef SLAB_PASSTHROUGH
#define SLAB_PASSTHROUGH 0
#endif

typedef union free_block {
  union free_block *next;
} free_block;

/* Payload sizes: about 1.5x apart, so a block wastes at most a third. */
static const uint32_t class_size[] = {16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096};
#define N_CLASSES (sizeof(class_size) / sizeof(class_size[0]))
#define MAX_SMALL 4096u

typedef struct slab {
  struct slab *next;
  uint64_t pad; /* keeps the carved area 16-byte aligned */
} slab;

struct tp_slab {
  free_block *free[N_CLASSES];
  slab *slabs;
  uint8_t *bump, *bump_end; /* the current slab's uncarved part */
  size_t footprint;
  uint8_t class_of[MAX_SMALL / 16 + 1]; /* (size + 15) / 16 -> class */
};

tp_slab *tp_slab_new(void) {
  tp_slab *s = calloc(1, sizeof(*s));
  if (!s) return NULL;
  unsigned c = 0;
  for (unsigned i = 0; i <= MAX_SMALL / 16; i++) {
    while (class_size[c] < i * 16) c++;
    s->class_of[i] = (uint8_t)c;
  }
  return s;
}

void tp_slab_free(tp_slab *s) {
  if (!s) return;
  slab *n;
  for (slab *b = s->slabs; b; b = n) {
    n = b->next;
    free(b);
  }
  free(s);
}

static void *carve(tp_slab *s, unsigned cls) {
  size_t need = sizeof(hdr) + class_size[cls];
  if ((size_t)(s->bump_end - s->bump) < need) {
    slab *b = malloc(SLAB_BYTES);
    if (!b) return NULL;
    b->next = s->slabs;
    s->slabs = b;
    s->footprint += SLAB_BYTES;
    s->bump = (uint8_t *)(b + 1);
    s->bump_end = (uint8_t *)b + SLAB_BYTES;
  }
  hdr *h = (hdr *)(void *)s->bump;
  s->bump += need;
  h->cls = cls;
  h->size = 0;
  return h + 1;
}

void *tp_slab_alloc(tp_slab *s, size_t size) {
  if (size <= MAX_SMALL && !SLAB_PASSTHROUGH) {
    unsigned cls = s->class_of[(size + 15) / 16];
    free_block *f = s->free[cls];
    if (f) {
      s->free[cls] = f->next;
      return f;
    }
    return carve(s, cls);
  }
  if (size > SIZE_MAX - sizeof(hdr)) return NULL;
  hdr *h = malloc(sizeof(hdr) + size);
  if (!h) return NULL;
  h->cls = BIG_CLASS;
  h->size = size;
  return h + 1;
}

void *tp_slab_calloc(tp_slab *s, size_t nmemb, size_t size) {
  if (size && nmemb > SIZE_MAX / size) return NULL;
  void *p = tp_slab_alloc(s, nmemb * size);
  if (p) memset(p, 0, nmemb * size);
  return p;
}

static size_t block_size(const void *p) {
  const hdr *h = (const hdr *)p - 1;
  return h->cls == BIG_CLASS ? (size_t)h->size : class_size[h->cls];
}

void tp_slab_release(tp_slab *s, void *p) {
  if (!p) return;
  hdr *h = (hdr *)p - 1;
  if (h->cls == BIG_CLASS) {
    free(h);
    return;
  }
  free_block *f = p;
  f->next = s->free[h->cls];
  s->free[h->cls] = f;
}

void *tp_slab_realloc(tp_slab *s, void *p, size_t size) {
  if (!p) return tp_slab_alloc(s, size);
  if (size == 0) {
    tp_slab_release(s, p);
    return NULL;
  }
  hdr *h = (hdr *)p - 1;
  if (h->cls == BIG_CLASS && (size > MAX_SMALL || SLAB_PASSTHROUGH)) {
    if (size > SIZE_MAX - sizeof(hdr)) return NULL;
    hdr *n = realloc(h, sizeof(hdr) + size);
    if (!n) return NULL;
    n->size = size;
    return n + 1;
  }
  size_t have = block_size(p);
  if (h->cls != BIG_CLASS && size <= have) return p;
  void *q = tp_slab_alloc(s, size);
  if (!q) return NULL;
  /* A big block shrinking into a class keeps only size bytes. */
  memcpy(q, p, have < size ? have : size);
  tp_slab_release(s, p);
  return q;
}

size_t tp_slab_footprint(const tp_slab *s) { return s->footprint; }

/* Tests for the small-object allocator (lib/util/tp_slab.c): every size
 * class and the large blocks past them keep their bytes and malloc's
 * alignment, released blocks are reused, realloc keeps the contents across
 * classes and into and out of the large blocks, and a random workload held
 * against a shadow copy never sees one block overwrite another. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tp_test.h"
#include "util/tp_rng.h"
#include "util/tp_slab.h"

#if defined(__SANITIZE_ADDRESS__)
#define PASSTHROUGH 1 /* blocks come from malloc: no reuse to check */
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PASSTHROUGH 1
#endif
#endif
#ifndef PASSTHROUGH
#define PASSTHROUGH 0
#endif

static bool aligned(const void *p) { return ((uintptr_t)p % 16) == 0; }

static bool filled(const uint8_t *p, size_t n, uint8_t v) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != v) return false;
  return true;
}

static void test_sizes(void) {
  static const size_t sizes[] = {0, 1, 15, 16, 17, 31, 32, 33, 47, 48, 64, 95, 96, 100, 128, 191, 192,
                                 255, 256, 383, 384, 500, 512, 767, 768, 1000, 1024, 1535, 1536, 2047,
                                 2048, 3071, 3072, 4095, 4096, 4097, 8192, 100000};
  tp_slab *s = tp_slab_new();
  if (!s) {
    CHECK(0, "tp_slab_new");
    return;
  }
  enum { N = sizeof(sizes) / sizeof(sizes[0]) };
  uint8_t *p[N];
  for (size_t i = 0; i < N; i++) {
    p[i] = tp_slab_alloc(s, sizes[i]);
    CHECK(p[i] != NULL, "%zu bytes: a block", sizes[i]);
    if (!p[i]) continue;
    CHECK(aligned(p[i]), "%zu bytes: aligned to 16", sizes[i]);
    memset(p[i], (int)(i + 1), sizes[i]);
  }
  /* Every block still holds its own bytes: none overlaps another. */
  for (size_t i = 0; i < N; i++)
    if (p[i]) CHECK(filled(p[i], sizes[i], (uint8_t)(i + 1)), "%zu bytes: kept", sizes[i]);
  /* A released block of a class comes back for the next request of it. */
  for (size_t i = 0; i < N; i++) {
    if (!p[i] || sizes[i] > 4096) continue;
    tp_slab_release(s, p[i]);
    uint8_t *again = tp_slab_alloc(s, sizes[i]);
    if (!PASSTHROUGH) CHECK(again == p[i], "%zu bytes: a released block is reused", sizes[i]);
    p[i] = again;
  }
  for (size_t i = 0; i < N; i++) tp_slab_release(s, p[i]);
  tp_slab_release(s, NULL);
  if (!PASSTHROUGH)
    CHECK(tp_slab_footprint(s) > 0 && tp_slab_footprint(s) % (64u << 10) == 0,
          "the footprint is whole 64 KiB slabs (%zu bytes)", tp_slab_footprint(s));
  tp_slab_free(s);
  tp_slab_free(NULL);
}

static void test_calloc_realloc(void) {
  tp_slab *s = tp_slab_new();
  if (!s) return;
  uint8_t *z = tp_slab_alloc(s, 200);
  memset(z, 0xAB, 200);
  tp_slab_release(s, z);
  uint8_t *c = tp_slab_calloc(s, 25, 8); /* the same class, reused dirty */
  CHECK(c && filled(c, 200, 0), "calloc clears a reused block");
  CHECK(tp_slab_calloc(s, SIZE_MAX / 2, 4) == NULL, "calloc refuses a size that overflows");
  tp_slab_release(s, c);

  /* Grow through classes into a large block and back, contents kept. */
  static const size_t steps[] = {10, 40, 100, 300, 1000, 3000, 5000, 20000, 4000, 500, 20, 0};
  uint8_t *p = tp_slab_realloc(s, NULL, 1);
  CHECK(p != NULL, "realloc of NULL allocates");
  p[0] = 1;
  size_t have = 1;
  for (size_t i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
    size_t n = steps[i];
    uint8_t *q = tp_slab_realloc(s, p, n);
    if (n == 0) {
      CHECK(q == NULL, "realloc to 0 releases");
      p = NULL;
      break;
    }
    CHECK(q != NULL && aligned(q), "realloc %zu -> %zu: a block", have, n);
    if (!q) break;
    size_t keep = have < n ? have : n;
    bool ok = true;
    for (size_t k = 0; k < keep; k++)
      if (q[k] != (uint8_t)(k * 7 + 1)) ok = false;
    CHECK(ok, "realloc %zu -> %zu: the first %zu bytes kept", have, n, keep);
    for (size_t k = 0; k < n; k++) q[k] = (uint8_t)(k * 7 + 1);
    p = q;
    have = n;
  }
  tp_slab_release(s, p);
  tp_slab_free(s);
}

/* Random allocations, releases and reallocs, each block filled with its own
 * byte and checked when it goes. */
static void test_random(void) {
  tp_slab *s = tp_slab_new();
  if (!s) return;
  enum { SLOTS = 512, OPS = 200000 };
  uint8_t *p[SLOTS] = {0};
  size_t n[SLOTS] = {0};
  tp_rng rng;
  tp_rng_seed(&rng, 42);
  size_t bad = 0;
  for (int op = 0; op < OPS; op++) {
    size_t i = (size_t)(tp_rng_next(&rng) % SLOTS);
    uint8_t v = (uint8_t)(i * 13 + 5);
    if (p[i] && !filled(p[i], n[i], v)) bad++;
    uint64_t r = tp_rng_next(&rng);
    size_t size = (r >> 8) % 8 == 0 ? (size_t)(r >> 16) % 9000 : (size_t)(r >> 16) % 600;
    if (p[i] && r % 3 == 0) {
      uint8_t *q = tp_slab_realloc(s, p[i], size);
      if (size && !q) bad++;
      if (q && !filled(q, size < n[i] ? size : n[i], v)) bad++;
      p[i] = size ? q : NULL;
    } else {
      tp_slab_release(s, p[i]);
      p[i] = tp_slab_alloc(s, size);
    }
    n[i] = p[i] ? size : 0;
    if (p[i]) memset(p[i], v, n[i]);
  }
  for (size_t i = 0; i < SLOTS; i++) {
    if (p[i] && !filled(p[i], n[i], (uint8_t)(i * 13 + 5))) bad++;
    tp_slab_release(s, p[i]);
  }
  CHECK(bad == 0, "%d random operations over %d blocks: no block lost or overwritten (%zu bad)", OPS, SLOTS, bad);
  tp_slab_free(s);
}

int main(void) {
  test_sizes();
  test_calloc_realloc();
  test_random();
  return tp_test_done();
}

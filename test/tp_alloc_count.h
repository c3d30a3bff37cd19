/* A counting allocator for the programs that check or measure that a code
 * path allocates nothing (test/unit/test_triton.c, bench/bench_triton_decode.c).
 * Include it in one file of the program: it defines malloc, calloc and
 * realloc, visible so that shared libraries (protobuf-c) call them too, and
 * glibc's own entry points do the work.  Sanitizer builds interpose the
 * allocator themselves, so there TP_COUNT_ALLOCS is 0 and nothing is
 * counted. */
#ifndef TP_ALLOC_COUNT_H
#define TP_ALLOC_COUNT_H

#include <stddef.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TP_COUNT_ALLOCS 0
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define TP_COUNT_ALLOCS 0
#endif
#endif
#ifndef TP_COUNT_ALLOCS
#define TP_COUNT_ALLOCS 1
#endif

/* Allocations so far (malloc, calloc and realloc calls). */
static unsigned long n_allocs __attribute__((unused));

#if TP_COUNT_ALLOCS
#define TP_ALLOC_EXPORT __attribute__((visibility("default")))
extern void *__libc_malloc(size_t n);
extern void *__libc_calloc(size_t n, size_t size);
extern void *__libc_realloc(void *p, size_t n);
TP_ALLOC_EXPORT void *malloc(size_t n);
TP_ALLOC_EXPORT void *calloc(size_t n, size_t size);
TP_ALLOC_EXPORT void *realloc(void *p, size_t n);
TP_ALLOC_EXPORT void *malloc(size_t n) {
  n_allocs++;
  return __libc_malloc(n);
}
TP_ALLOC_EXPORT void *calloc(size_t n, size_t size) {
  n_allocs++;
  return __libc_calloc(n, size);
}
TP_ALLOC_EXPORT void *realloc(void *p, size_t n) {
  n_allocs++;
  return __libc_realloc(p, n);
}
#endif

#endif

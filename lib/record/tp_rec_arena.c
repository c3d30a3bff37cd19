#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap */
#endif
#include "record/tp_rec_arena.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "util/tp_common.h"

struct tp_rec_arena {
  tp_record *base;
  size_t cap;      /* records the array holds */
  size_t bytes;    /* mapped (file-backed) or allocated bytes */
  size_t released; /* bytes from the start already handed back */
  int fd;          /* -1: heap memory */
  int advice;      /* the mapping's read-ahead advice: MADV_RANDOM or MADV_SEQUENTIAL */
};

static size_t page_size(void) {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (size_t)p : 4096;
}

static int open_file(const char *dir) {
  if (!dir || !*dir) dir = getenv("TMPDIR");
  if (!dir || !*dir) dir = "/tmp";
  char path[4096];
  if ((size_t)snprintf(path, sizeof(path), "%s/.tokperf-records-XXXXXX", dir) >= sizeof(path)) return -1;
  int fd = mkstemp(path);
  if (fd < 0) return -1;
  unlink(path); /* the open descriptor keeps it; nothing outlives the process */
  return fd;
}

int tp_rec_arena_new(tp_rec_arena **out, const char *dir) {
  tp_rec_arena *a = calloc(1, sizeof(*a));
  if (!a) return TP_ENOMEM;
  a->fd = open_file(dir);
  a->advice = MADV_RANDOM;
  *out = a;
  return 0;
}

void tp_rec_arena_free(tp_rec_arena *a) {
  if (!a) return;
  if (a->fd >= 0) {
    if (a->base) munmap(a->base, a->bytes);
    close(a->fd);
  } else {
    free(a->base);
  }
  free(a);
}

tp_record *tp_rec_arena_base(const tp_rec_arena *a) { return a->base; }

int tp_rec_arena_file_backed(const tp_rec_arena *a) { return a->fd >= 0; }

size_t tp_rec_arena_cap(const tp_rec_arena *a) { return a->cap; }

/* Sets the file's size; a failure leaves a file that is only larger or
 * holds stale records, both harmless (every record is initialised when its
 * request is planned). */
static int set_size(int fd, size_t bytes) { return ftruncate(fd, (off_t)bytes) == 0 ? 0 : TP_ENOMEM; }

/* Grows the file, then the mapping over it.  A file that cannot grow (disk
 * full) or a mapping that cannot move leaves everything as it was. */
static int grow_file(tp_rec_arena *a, size_t bytes) {
  if (set_size(a->fd, bytes)) return TP_ENOMEM;
  void *p = a->base ? mremap(a->base, a->bytes, bytes, MREMAP_MAYMOVE)
                    : mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, a->fd, 0);
  if (p == MAP_FAILED) {
    (void)set_size(a->fd, a->bytes);
    return TP_ENOMEM;
  }
  a->base = p;
  a->bytes = bytes;
  /* Advice is only a hint: a kernel that ignores it reads ahead as before. */
  (void)madvise(p, bytes, a->advice);
  return 0;
}

int tp_rec_arena_reserve(tp_rec_arena *a, size_t n) {
  if (n <= a->cap) return 0;
  size_t cap = a->cap ? a->cap : 256;
  while (cap < n) {
    if (cap > SIZE_MAX / 2 / sizeof(tp_record)) return TP_ENOMEM;
    cap *= 2;
  }
  size_t pg = page_size();
  size_t bytes = (cap * sizeof(tp_record) + pg - 1) / pg * pg;
  if (a->fd >= 0 && !a->base && grow_file(a, bytes)) {
    /* A file that cannot be mapped at all (a file system without shared
     * mappings): heap memory from the start. */
    close(a->fd);
    a->fd = -1;
  }
  if (a->fd >= 0) {
    if (a->base != NULL && a->bytes < bytes && grow_file(a, bytes)) return TP_ENOMEM;
    /* new pages of a grown file read as zeros */
  } else {
    tp_record *p = realloc(a->base, bytes);
    if (!p) return TP_ENOMEM;
    memset((char *)p + a->bytes, 0, bytes - a->bytes);
    a->base = p;
    a->bytes = bytes;
  }
  a->cap = bytes / sizeof(tp_record);
  return 0;
}

void tp_rec_arena_release(tp_rec_arena *a, size_t below) {
  if (!a || a->fd < 0 || !a->base) return;
  if (below > a->cap) below = a->cap;
  size_t pg = page_size();
  size_t limit = below * sizeof(tp_record) / pg * pg;
  if (limit <= a->released) return;
  /* On a shared file mapping this only drops the process's view of the
   * pages: their contents stay in the page cache and the file. */
  if (madvise((char *)a->base + a->released, limit - a->released, MADV_DONTNEED) == 0) a->released = limit;
}

void tp_rec_arena_reset(tp_rec_arena *a) {
  a->released = 0;
  if (a->fd < 0 || !a->base) return;
  /* Emptying the file frees its blocks; growing it back reads as zeros.
   * The mapping stays where it is. */
  madvise(a->base, a->bytes, MADV_DONTNEED);
  if (set_size(a->fd, 0) == 0) (void)set_size(a->fd, a->bytes);
  a->advice = MADV_RANDOM;
  (void)madvise(a->base, a->bytes, a->advice);
}

void tp_rec_arena_read_back(tp_rec_arena *a) {
  if (a->fd < 0 || !a->base || a->advice == MADV_SEQUENTIAL) return;
  a->advice = MADV_SEQUENTIAL;
  (void)madvise(a->base, a->bytes, a->advice);
}

#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* mremap */
#endif
#include "record/tp_rec_arena.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "util/tp_common.h"

/* Blocks are reserved this far past the records asked for: one
 * posix_fallocate per step, not one per request (a step is about 4,500
 * records; at 100,000 requests/s, one call every 45 ms). */
#define RESERVE_STEP ((size_t)1 << 20)

struct tp_rec_arena {
  tp_record *base;
  size_t cap;      /* records that may be written: reserved bytes (file) or allocated (heap) */
  size_t bytes;    /* mapped (file-backed) or allocated bytes */
  size_t reserved; /* file-backed: bytes from the start whose blocks are allocated */
  size_t released; /* bytes from the start already handed back */
  int fd;          /* -1: heap memory */
  int advice;      /* the mapping's read-ahead advice: MADV_RANDOM or MADV_SEQUENTIAL */
  bool fell_back;  /* the file could not hold the records: heap memory since */
};

static size_t page_size(void) {
  long p = sysconf(_SC_PAGESIZE);
  return p > 0 ? (size_t)p : 4096;
}

static size_t round_up(size_t n, size_t to) {
  return (n + to - 1) / to * to;
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

int tp_rec_arena_fell_back(const tp_rec_arena *a) {
  return a->fell_back;
}

size_t tp_rec_arena_cap(const tp_rec_arena *a) { return a->cap; }

/* Sets the file's size; a failure leaves a file that is only larger or
 * holds stale records, both harmless (every record is initialised when its
 * request is planned). */
static int set_size(int fd, size_t bytes) { return ftruncate(fd, (off_t)bytes) == 0 ? 0 : TP_ENOMEM; }

/* Grows the file, then the mapping over it (address space only: the new
 * part's blocks are not reserved yet, and nothing may be written there
 * until they are).  A file that cannot grow or a mapping that cannot move
 * leaves everything as it was. */
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

/* Reserves the file's blocks up to `to` bytes (within the mapping).  A
 * write into a page of a shared mapping whose block the file system cannot
 * allocate (a full disk) is not an error a system call returns: the
 * process dies of SIGBUS.  ftruncate sets a size and allocates nothing, so
 * every page is reserved here before a record can be written into it. */
static int reserve_blocks(tp_rec_arena *a, size_t to) {
  if (to <= a->reserved) return 0;
  /* The file is a cache of what memory could hold; the run's results
   * (records.jsonl, the exports) are usually written to the same disk and
   * cannot go anywhere else: blocks are taken only while that much is left
   * free beside them. */
  struct statvfs fs;
  if (fstatvfs(a->fd, &fs) == 0 && fs.f_frsize &&
      (uint64_t)fs.f_bavail < ((uint64_t)(to - a->reserved) + TP_REC_ARENA_KEEP_FREE) / fs.f_frsize)
    return TP_ENOMEM;
  if (posix_fallocate(a->fd, (off_t)a->reserved, (off_t)(to - a->reserved))) return TP_ENOMEM;
  a->reserved = to;
  return 0;
}

/* The file cannot hold the records (a full or size-limited disk): they
 * move to heap memory, keep bytes of them (the reserved part, zeros
 * after), and the run goes on with memory growing as it would without a
 * file.  Returns 0 or TP_ENOMEM (nothing changed). */
static int to_heap(tp_rec_arena *a, size_t bytes) {
  tp_record *p = calloc(1, bytes ? bytes : 1);
  if (!p) return TP_ENOMEM;
  if (a->base) {
    size_t keep = a->reserved < bytes ? a->reserved : bytes;
    memcpy(p, a->base, keep);
    munmap(a->base, a->bytes);
  }
  close(a->fd);
  a->fd = -1;
  a->base = p;
  a->bytes = bytes;
  a->reserved = 0;
  a->released = 0;
  a->cap = bytes / sizeof(tp_record);
  a->fell_back = true;
  return 0;
}

int tp_rec_arena_expect(tp_rec_arena *a, size_t n) {
  if (a->fd < 0 || n > SIZE_MAX / 2 / sizeof(tp_record)) return 0;
  size_t pg = page_size();
  size_t bytes = round_up(n * sizeof(tp_record), pg);
  if (bytes <= a->bytes) return 0;
  if (grow_file(a, bytes) == 0) return 0;
  /* A file that cannot even be mapped (a file system without shared
   * mappings): heap memory from the start. */
  if (!a->base) {
    close(a->fd);
    a->fd = -1;
  }
  return 0;
}

int tp_rec_arena_reserve(tp_rec_arena *a, size_t n) {
  if (n <= a->cap) return 0;
  size_t cap = a->fd >= 0 ? a->bytes / sizeof(tp_record) : a->cap;
  if (!cap) cap = 256;
  while (cap < n) {
    if (cap > SIZE_MAX / 2 / sizeof(tp_record)) return TP_ENOMEM;
    cap *= 2;
  }
  size_t pg = page_size();
  size_t bytes = round_up(cap * sizeof(tp_record), pg);
  if (a->fd >= 0 && a->bytes < bytes && grow_file(a, bytes)) {
    if (!a->base) {
      /* A file that cannot be mapped at all (a file system without shared
       * mappings): heap memory from the start. */
      close(a->fd);
      a->fd = -1;
    } else if (to_heap(a, bytes)) {
      return TP_ENOMEM;
    }
  }
  if (a->fd >= 0) {
    /* The blocks of the records asked for, and of a step beyond. */
    size_t need = round_up(n * sizeof(tp_record), pg);
    size_t to = round_up(need > SIZE_MAX - RESERVE_STEP ? need : need + RESERVE_STEP, pg);
    if (to > a->bytes) to = a->bytes;
    if (reserve_blocks(a, to) && reserve_blocks(a, need) && to_heap(a, bytes)) return TP_ENOMEM;
    if (a->fd >= 0) a->cap = a->reserved / sizeof(tp_record);
    return 0;
  }
  if (a->bytes < bytes) {
    tp_record *p = realloc(a->base, bytes);
    if (!p) return TP_ENOMEM;
    memset((char *)p + a->bytes, 0, bytes - a->bytes);
    a->base = p;
    a->bytes = bytes;
  }
  a->cap = a->bytes / sizeof(tp_record);
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
   * The mapping stays where it is, and its blocks are reserved again a
   * step at a time as the next level plans records.  A file that cannot
   * be sized again (the mapping would reach past its end) leaves the
   * records to heap memory. */
  madvise(a->base, a->bytes, MADV_DONTNEED);
  a->reserved = 0;
  a->cap = 0;
  a->advice = MADV_RANDOM;
  if (set_size(a->fd, 0) || set_size(a->fd, a->bytes)) {
    (void)to_heap(a, 0);
    return;
  }
  (void)madvise(a->base, a->bytes, a->advice);
}

void tp_rec_arena_read_back(tp_rec_arena *a) {
  if (a->fd < 0 || !a->base || a->advice == MADV_SEQUENTIAL) return;
  a->advice = MADV_SEQUENTIAL;
  (void)madvise(a->base, a->bytes, a->advice);
}

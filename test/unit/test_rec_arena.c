/* tp_rec_arena: a level's records on an unlinked file.  Checks that the
 * array behaves as memory (zeroed growth, contents kept across moves and
 * releases) and that released pages leave the process's resident memory,
 * read from /proc/self/statm; and that a file that cannot hold the records
 * (a size limit, a full 64 KiB tmpfs) moves them to memory instead of
 * letting a write into an unreserved page kill the process (SIGBUS). */
#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include "record/tp_rec_arena.h"
#include "tp_test.h"

static size_t resident_bytes(void) {
  FILE *f = fopen("/proc/self/statm", "r");
  unsigned long size = 0, res = 0;
  if (!f) return 0;
  if (fscanf(f, "%lu %lu", &size, &res) != 2) res = 0;
  fclose(f);
  return (size_t)res * (size_t)sysconf(_SC_PAGESIZE);
}

static size_t entries(const char *dir) {
  DIR *d = opendir(dir);
  size_t n = 0;
  if (!d) return 0;
  for (struct dirent *e; (e = readdir(d));)
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

static void fill(tp_record *r, size_t from, size_t to) {
  for (size_t i = from; i < to; i++) {
    r[i].seq = i;
    r[i].sent_ns = 1000 + i;
    r[i].output_tokens = (int32_t)(i % 977);
  }
}

static size_t count_intact(const tp_record *r, size_t n) {
  size_t ok = 0;
  for (size_t i = 0; i < n; i++)
    if (r[i].seq == i && r[i].sent_ns == 1000 + i && r[i].output_tokens == (int32_t)(i % 977)) ok++;
  return ok;
}

static void test_file_backed(const char *dir) {
  tp_rec_arena *a = NULL;
  CHECK_INT(tp_rec_arena_new(&a, dir), 0, "arena made");
  CHECK(tp_rec_arena_base(a) == NULL, "empty until something is reserved");
  CHECK_INT(tp_rec_arena_reserve(a, 1000), 0, "room for 1,000 records");
  CHECK(tp_rec_arena_file_backed(a), "a writable directory gives a file-backed arena");
  CHECK_INT(entries(dir), 0, "its file is unlinked at once: nothing in the directory");
  tp_record *r = tp_rec_arena_base(a);
  size_t zero = 0;
  for (size_t i = 0; i < 1000; i++)
    if (r[i].seq == 0 && r[i].sent_ns == 0 && r[i].resp_ns == NULL) zero++;
  CHECK_INT(zero, 1000, "new records read as zeros");
  fill(r, 0, 1000);

  /* 200,000 records (tens of megabytes): the growth moves the mapping and
   * keeps what was written. */
  const size_t n = 200000;
  CHECK_INT(tp_rec_arena_reserve(a, n), 0, "room for 200,000 records");
  r = tp_rec_arena_base(a);
  CHECK_INT(count_intact(r, 1000), 1000, "records written before growing are kept");
  fill(r, 1000, n);
  size_t bytes = n * sizeof(tp_record);
  size_t before = resident_bytes();
  tp_rec_arena_release(a, n);
  size_t after = resident_bytes();
  CHECK(before > after && before - after >= bytes * 9 / 10,
        "releasing every record hands back at least 90%% of their %zu KiB (resident %zu -> %zu KiB)", bytes / 1024,
        before / 1024, after / 1024);
  CHECK_INT(count_intact(r, n), n, "released records read back unchanged");
  size_t touched = resident_bytes();
  CHECK(touched >= after + bytes * 9 / 10, "reading them back makes them resident again (%zu KiB)", touched / 1024);

  /* Releasing up to a bound keeps the page that holds the bound's record. */
  tp_rec_arena_release(a, n / 2);
  CHECK_INT(count_intact(r, n), n, "a partial release changes nothing either");
  tp_rec_arena_release(a, n / 2);
  CHECK_INT(count_intact(r, n), n, "and releasing to the same bound again");

  tp_rec_arena_reset(a);
  r = tp_rec_arena_base(a);
  CHECK(r[0].seq == 0 && r[n - 1].sent_ns == 0, "a reset arena reads as zeros, the mapping where it was");
  CHECK_INT(tp_rec_arena_cap(a), 0, "and its blocks are gone: nothing may be written before a reserve");
  CHECK_INT(tp_rec_arena_reserve(a, 10), 0, "room for 10 again");
  CHECK(tp_rec_arena_base(a) == r, "without moving the mapping");
  fill(r, 0, 10);
  CHECK_INT(count_intact(r, 10), 10, "and takes new records");
  tp_rec_arena_free(a);
}

static void test_heap_fallback(void) {
  tp_rec_arena *a = NULL;
  CHECK_INT(tp_rec_arena_new(&a, "/nonexistent/tokperf-arena"), 0, "an unusable directory is not an error");
  CHECK_INT(tp_rec_arena_reserve(a, 5000), 0, "room for 5,000 records");
  CHECK(!tp_rec_arena_file_backed(a), "the records are heap memory");
  tp_record *r = tp_rec_arena_base(a);
  fill(r, 0, 5000);
  CHECK_INT(tp_rec_arena_reserve(a, 20000), 0, "growing");
  r = tp_rec_arena_base(a);
  CHECK_INT(count_intact(r, 5000), 5000, "heap growth keeps the records");
  CHECK(r[19999].seq == 0 && r[19999].sent_ns == 0, "heap growth reads as zeros");
  tp_rec_arena_release(a, 20000);
  CHECK_INT(count_intact(r, 5000), 5000, "release does nothing on the heap");
  tp_rec_arena_free(a);
}

/* Pages of [from, from + n) records in memory, by mincore (for a file
 * mapping: in the page cache, which readahead may fill beyond a range). */
static size_t resident_pages(tp_rec_arena *a, size_t from, size_t n) {
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  uintptr_t lo = (uintptr_t)(tp_rec_arena_base(a) + from) / pg * pg;
  uintptr_t hi = ((uintptr_t)(tp_rec_arena_base(a) + from + n) + pg - 1) / pg * pg;
  size_t np = (hi - lo) / pg, in = 0;
  unsigned char *v = calloc(np, 1);
  if (v && mincore((void *)lo, hi - lo, v) == 0)
    for (size_t i = 0; i < np; i++) in += v[i] & 1;
  free(v);
  return in;
}

/* Whether the mapping holding addr has the flag (two letters of smaps'
 * VmFlags: "rr" random read, "sr" sequential read); -1 = not found. */
static int vm_flag(const void *addr, const char *flag) {
  FILE *f = fopen("/proc/self/smaps", "r");
  if (!f) return -1;
  char line[512];
  int in = 0, found = -1;
  while (fgets(line, sizeof(line), f)) {
    unsigned long lo, hi;
    if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
      in = (uintptr_t)addr >= lo && (uintptr_t)addr < hi;
    } else if (in && strncmp(line, "VmFlags:", 8) == 0) {
      found = 0;
      for (char *t = strtok(line + 8, " \n"); t; t = strtok(NULL, " \n"))
        if (strcmp(t, flag) == 0) found = 1;
      break;
    }
  }
  fclose(f);
  return found;
}

/* While records are written the mapping reads nothing ahead: a write into
 * a fresh page brings in that page alone; reading back reads ahead again,
 * and a reset starts the next level without read-ahead. */
static void test_read_ahead(const char *dir) {
  tp_rec_arena *a = NULL;
  CHECK_INT(tp_rec_arena_new(&a, dir), 0, "read-ahead: arena made");
  CHECK_INT(tp_rec_arena_reserve(a, 40000), 0, "read-ahead: room for 40,000 records");
  tp_record *r = tp_rec_arena_base(a);
  CHECK_INT(vm_flag(r, "rr"), 1, "read-ahead: the mapping is advised random while written");
  CHECK_INT(resident_pages(a, 10000, 8000), 0, "read-ahead: a fresh mapping holds no page in memory");
  r[12000].seq = 7;
  size_t pg = (size_t)sysconf(_SC_PAGESIZE);
  size_t in = resident_pages(a, 10000, 8000);
  /* One record spans at most two pages; read-around would bring tens. */
  CHECK(in >= 1 && in <= 2, "read-ahead: one record's write brings in its own pages only (%zu of %zu)", in,
        8000 * sizeof(tp_record) / pg);
  fill(r, 0, 5000);
  CHECK_INT(tp_rec_arena_reserve(a, 1280000), 0, "read-ahead: growing (the mapping may move)");
  r = tp_rec_arena_base(a);
  CHECK_INT(vm_flag(r, "rr"), 1, "read-ahead: still advised random after growing");
  CHECK_INT(count_intact(r, 5000), 5000, "read-ahead: records kept across the growth");
  tp_rec_arena_read_back(a);
  CHECK_INT(vm_flag(r, "sr"), 1, "read-ahead: reading back, the mapping is advised sequential");
  CHECK_INT(vm_flag(r, "rr"), 0, "read-ahead: and no longer random");
  CHECK_INT(count_intact(r, 5000), 5000, "read-ahead: the records read back whole");
  tp_rec_arena_reset(a);
  CHECK_INT(vm_flag(r, "rr"), 1, "read-ahead: a reset advises random again");
  CHECK(r[0].seq == 0 && r[12000].seq == 0, "read-ahead: and the records read as zeros");
  tp_rec_arena_free(a);
  tp_rec_arena *h = NULL;
  CHECK_INT(tp_rec_arena_new(&h, "/nonexistent/tokperf-arena"), 0, "read-ahead: heap arena made");
  CHECK_INT(tp_rec_arena_reserve(h, 100), 0, "read-ahead: heap room");
  tp_rec_arena_base(h)[5].seq = 5;
  tp_rec_arena_read_back(h);
  CHECK(tp_rec_arena_base(h)[5].seq == 5, "read-ahead: nothing to do on the heap");
  tp_rec_arena_free(h);
}

/* A file size limit stops the file's growth (ftruncate fails with EFBIG):
 * the records move to memory with what was written, and the arena goes on
 * growing there. */
static void test_size_limit(const char *dir) {
  struct rlimit old, lim;
  getrlimit(RLIMIT_FSIZE, &old);
  lim = old;
  lim.rlim_cur = 2u << 20;
  /* SIGXFSZ would end the test: the call's error is what is checked. */
  signal(SIGXFSZ, SIG_IGN);
  tp_rec_arena *a = NULL;
  CHECK_INT(tp_rec_arena_new(&a, dir), 0, "size limit: arena made");
  CHECK_INT(setrlimit(RLIMIT_FSIZE, &lim), 0, "size limit: files limited to 2 MiB");
  CHECK_INT(tp_rec_arena_reserve(a, 1000), 0, "size limit: room for 1,000 records");
  CHECK(tp_rec_arena_file_backed(a) && !tp_rec_arena_fell_back(a), "size limit: in the file while it fits");
  tp_record *r = tp_rec_arena_base(a);
  fill(r, 0, 1000);
  CHECK_INT(tp_rec_arena_reserve(a, 40000), 0, "size limit: room for 40,000 records (9 MB) all the same");
  CHECK(!tp_rec_arena_file_backed(a) && tp_rec_arena_fell_back(a), "size limit: the records moved to memory");
  r = tp_rec_arena_base(a);
  CHECK_INT(count_intact(r, 1000), 1000, "size limit: the records written before are kept");
  CHECK(r[39999].seq == 0 && r[1000].sent_ns == 0, "size limit: the new ones read as zeros");
  fill(r, 0, 40000);
  CHECK_INT(count_intact(r, 40000), 40000, "size limit: and every one is written");
  setrlimit(RLIMIT_FSIZE, &old);
  tp_rec_arena_free(a);

  /* A reset empties the file and sizes it again: a file that cannot be
   * sized again leaves its records in memory, zeroed, at the same room. */
  CHECK_INT(tp_rec_arena_new(&a, dir), 0, "size limit: a second arena");
  CHECK_INT(tp_rec_arena_reserve(a, 1000), 0, "size limit: room for 1,000 records");
  CHECK(tp_rec_arena_file_backed(a), "size limit: in the file");
  fill(tp_rec_arena_base(a), 0, 1000);
  lim.rlim_cur = 64 * 1024;
  CHECK_INT(setrlimit(RLIMIT_FSIZE, &lim), 0, "size limit: files limited to 64 KiB");
  tp_rec_arena_reset(a);
  CHECK(tp_rec_arena_fell_back(a) && !tp_rec_arena_file_backed(a), "size limit: after the reset, memory");
  CHECK_INT(tp_rec_arena_reserve(a, 1000), 0, "size limit: room for 1,000 records there");
  r = tp_rec_arena_base(a);
  CHECK(r && r[0].seq == 0 && r[999].sent_ns == 0, "size limit: reading as zeros");
  if (r) fill(r, 0, 1000);
  CHECK_INT(r ? count_intact(r, 1000) : 0, 1000, "size limit: and taking new records");
  setrlimit(RLIMIT_FSIZE, &old);
  tp_rec_arena_free(a);
}

/* A file system near full: the mapping has room (its size is set), the
 * blocks do not.  Records are handed out only as far as blocks were
 * reserved, and blocks are reserved only while TP_REC_ARENA_KEEP_FREE (64
 * MiB) stay free for the run's results; past that the records move to
 * memory.  Needs tmpfs mounts (root). */
static void test_full_disk(const char *dir) {
  char mnt[4200];
  snprintf(mnt, sizeof(mnt), "%s/full", dir);
  mkdir(mnt, 0700);
  if (mount("tmpfs", mnt, "tmpfs", 0, "size=64k") != 0) {
    printf("ok %d - full disk # SKIP cannot mount a 64 KiB tmpfs: %s\n", ++tp_test_n_, strerror(errno));
    rmdir(mnt);
    return;
  }
  tp_rec_arena *a = NULL;
  CHECK_INT(tp_rec_arena_new(&a, mnt), 0, "full disk: arena made on 64 KiB");
  CHECK_INT(tp_rec_arena_expect(a, 100000), 0, "full disk: 100,000 records (23 MB) mapped ahead");
  CHECK_INT(tp_rec_arena_reserve(a, 100), 0, "full disk: room for 100 records");
  CHECK(tp_rec_arena_fell_back(a) && !tp_rec_arena_file_backed(a),
        "full disk: in memory, the 64 KiB left to the results");
  fill(tp_rec_arena_base(a), 0, 100);
  CHECK_INT(count_intact(tp_rec_arena_base(a), 100), 100, "full disk: the records are written");
  tp_rec_arena_free(a);
  umount(mnt);

  /* 72 MiB: a megabyte or two fits beside the 64 MiB kept free, 14 MB not. */
  CHECK_INT(mount("tmpfs", mnt, "tmpfs", 0, "size=72m"), 0, "near full: a 72 MiB tmpfs");
  CHECK_INT(tp_rec_arena_new(&a, mnt), 0, "near full: arena made");
  CHECK_INT(tp_rec_arena_expect(a, 100000), 0, "near full: 100,000 records (23 MB) mapped ahead");
  CHECK_INT(tp_rec_arena_reserve(a, 5000), 0, "near full: room for 5,000 records");
  CHECK(tp_rec_arena_file_backed(a), "near full: 5,000 records (1.2 MB) in the file");
  CHECK(tp_rec_arena_cap(a) >= 5000 && tp_rec_arena_cap(a) < 20000,
        "near full: the capacity is what the blocks hold (%zu records, a step past 5,000), not the mapping",
        tp_rec_arena_cap(a));
  tp_record *r = tp_rec_arena_base(a);
  fill(r, 0, 5000);
  CHECK_INT(tp_rec_arena_reserve(a, 60000), 0, "near full: room for 60,000 records (14 MB) all the same");
  CHECK(tp_rec_arena_fell_back(a) && !tp_rec_arena_file_backed(a), "near full: the records moved to memory");
  r = tp_rec_arena_base(a);
  CHECK_INT(count_intact(r, 5000), 5000, "near full: the records written before are kept");
  fill(r, 0, 60000);
  CHECK_INT(count_intact(r, 60000), 60000, "near full: every record written, no SIGBUS");
  tp_rec_arena_free(a);
  umount(mnt);
  rmdir(mnt);
}

int main(void) {
  char dir[] = "/tmp/tp_arena_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  test_file_backed(dir);
  test_heap_fallback();
  test_read_ahead(dir);
  test_size_limit(dir);
  test_full_disk(dir);
  rmdir(dir);
  return tp_test_done();
}

/* Runs a fuzz target over a seed corpus without libFuzzer, so that every
 * build replays the corpora as a test (dav1d does the same).
 *
 * Usage: fuzz_NAME DIR_OR_FILE...
 * Each file is read whole and passed to LLVMFuzzerTestOneInput once; TAP
 * output has one "ok" line per file and the plan at the end.  The targets
 * abort() when an invariant breaks, which fails the test the same way a
 * crash does.  Files are run in name order so that output is stable. */
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int n_run = 0;
static int n_failed = 0;

static void run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    printf("not ok %d - %s: cannot open: %s\n", ++n_run, path, strerror(errno));
    n_failed++;
    return;
  }
  size_t cap = 4096, len = 0;
  uint8_t *buf = malloc(cap);
  for (;;) {
    if (!buf) break;
    size_t got = fread(buf + len, 1, cap - len, f);
    len += got;
    if (got == 0) break;
    if (len == cap) {
      uint8_t *p = realloc(buf, cap * 2);
      if (!p) {
        free(buf);
        buf = NULL;
        break;
      }
      buf = p;
      cap *= 2;
    }
  }
  int read_failed = ferror(f);
  fclose(f);
  if (!buf || read_failed) {
    printf("not ok %d - %s: cannot read\n", ++n_run, path);
    n_failed++;
    free(buf);
    return;
  }
  /* A copy of exactly `len` bytes, so that ASan sees reads past the end
   * of the input as libFuzzer would show them. */
  uint8_t *exact = malloc(len ? len : 1);
  if (len) memcpy(exact, buf, len);
  free(buf);
  fflush(stdout);
  LLVMFuzzerTestOneInput(exact, len);
  free(exact);
  printf("ok %d - %s (%zu bytes)\n", ++n_run, path, len);
  fflush(stdout);
}

static int cmp_names(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void run_dir(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) {
    printf("not ok %d - %s: cannot open the directory: %s\n", ++n_run, dir, strerror(errno));
    n_failed++;
    return;
  }
  char **names = NULL;
  size_t n = 0, cap = 0;
  struct dirent *e;
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 32;
      char **p = realloc(names, cap * sizeof(*p));
      if (!p) break;
      names = p;
    }
    size_t len = strlen(dir) + strlen(e->d_name) + 2;
    names[n] = malloc(len);
    if (!names[n]) break;
    snprintf(names[n], len, "%s/%s", dir, e->d_name);
    n++;
  }
  closedir(d);
  if (n) qsort(names, n, sizeof(*names), cmp_names);
  for (size_t i = 0; i < n; i++) {
    struct stat st;
    if (stat(names[i], &st) == 0 && S_ISREG(st.st_mode)) run_file(names[i]);
    free(names[i]);
  }
  free(names);
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s DIR_OR_FILE...\n", argv[0]);
    return 2;
  }
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) == 0 && S_ISDIR(st.st_mode))
      run_dir(argv[i]);
    else
      run_file(argv[i]);
  }
  printf("1..%d\n", n_run);
  if (n_run == 0) {
    printf("# no corpus files found\n");
    return 1;
  }
  return n_failed ? 1 : 0;
}

/* Benchmark of the tokenizer backends: load time and encoding speed.
 *
 * Usage: bench_tok [--seconds S] [--loads N] TEXTS TOKENIZER...
 *   TEXTS       a .jsonl file with one {"text": "..."} per line
 *               (test/tok/texts.jsonl), or any other file: one text per
 *               non-empty line (test/data/prose_corpus.txt)
 *   TOKENIZER   a tokenizer.json / tokenizer.model or a model directory
 * For each tokenizer: the fastest of N loads (default 5), each followed by
 * one pass over all texts (cold), then as many timed passes as fit in S
 * seconds (default 3), on the calling thread.  Prints one line per tokenizer (tab-separated
 * after a header), which bench/peers/run_bench_tok.sh joins with the
 * reference's figures:
 *   name  load_ms  tokens  bytes  seconds  tokens_per_s  MB_per_s  cold_tokens_per_s
 * where tokens and bytes are one pass's, seconds the median pass time,
 * and the rates are per median pass.
 *
 * The warm-up pass matters: both this backend and the reference keep a
 * per-word cache, and a load generator counts the same prompts over and
 * over, as repeated passes do.  The first pass after each load (empty
 * cache) is timed too, and its median printed as cold_tokens_per_s, so the
 * cache's share is visible. */
#include <jansson.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tokenizer/tp_tok.h"

typedef struct text {
  char *s;
  size_t n;
} text;

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int read_texts(const char *path, text **out, size_t *count) {
  FILE *f = fopen(path, "rb");
  if (f == NULL) {
    perror(path);
    return -1;
  }
  char *line = NULL;
  size_t cap = 0, n = 0, tcap = 0;
  ssize_t got;
  text *v = NULL;
  size_t plen = strlen(path);
  bool jsonl = plen > 6 && strcmp(path + plen - 6, ".jsonl") == 0;
  while ((got = getline(&line, &cap, f)) > 0) {
    json_t *doc = NULL;
    const char *s = line;
    size_t len = (size_t)got;
    if (jsonl) {
      json_error_t je;
      doc = json_loadb(line, (size_t)got, JSON_ALLOW_NUL, &je);
      json_t *t = doc ? json_object_get(doc, "text") : NULL;
      s = json_is_string(t) ? json_string_value(t) : NULL;
      len = s ? json_string_length(t) : 0;
    } else {
      while (len && (line[len - 1] == '\n' || line[len - 1] == '\r')) len--;
      if (len == 0) s = NULL;
    }
    if (s != NULL) {
      if (n == tcap) {
        tcap = tcap ? tcap * 2 : 256;
        v = realloc(v, tcap * sizeof(*v));
        if (v == NULL) exit(1);
      }
      v[n].n = len;
      v[n].s = malloc(len + 1);
      if (v[n].s == NULL) exit(1);
      memcpy(v[n].s, s, len);
      v[n].s[len] = 0;
      n++;
    }
    json_decref(doc);
  }
  free(line);
  fclose(f);
  *out = v;
  *count = n;
  return 0;
}

/* One pass over every text; returns the token count, or -1 on error. */
static long long pass(const tp_tok *tok, const text *t, size_t n) {
  long long tokens = 0;
  for (size_t i = 0; i < n; i++) {
    int32_t *ids = NULL;
    size_t k = 0;
    if (tp_tok_encode(tok, t[i].s, t[i].n, &ids, &k) != 0) return -1;
    tokens += (long long)k;
    free(ids);
  }
  return tokens;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static const char *base_name(const char *path) {
  /* ".../tokenizer-qwen3/models/tokenizer.json" reads best as its package
   * directory, so show the last three components. */
  const char *p = path + strlen(path);
  int slashes = 0;
  while (p > path) {
    if (p[-1] == '/' && ++slashes == 3) break;
    p--;
  }
  return p;
}

int main(int argc, char **argv) {
  double seconds = 3.0;
  int loads = 5;
  int a = 1;
  while (a < argc && strncmp(argv[a], "--", 2) == 0) {
    if (strcmp(argv[a], "--seconds") == 0 && a + 1 < argc)
      seconds = atof(argv[a + 1]), a += 2;
    else if (strcmp(argv[a], "--loads") == 0 && a + 1 < argc)
      loads = atoi(argv[a + 1]), a += 2;
    else
      break;
  }
  if (argc - a < 2 || seconds <= 0 || loads < 1) {
    fprintf(stderr, "usage: %s [--seconds S] [--loads N] TEXTS TOKENIZER...\n", argv[0]);
    return 2;
  }
  text *texts = NULL;
  size_t n = 0, bytes = 0;
  if (read_texts(argv[a], &texts, &n) != 0 || n == 0) {
    fprintf(stderr, "bench_tok: no texts in %s\n", argv[a]);
    return 1;
  }
  for (size_t i = 0; i < n; i++) bytes += texts[i].n;
  printf("tokenizer\tload_ms\ttokens\tbytes\tseconds\ttokens_per_s\tMB_per_s\tcold_tokens_per_s\n");
  int status = 0;
  for (int k = a + 1; k < argc; k++) {
    char err[1024];
    double best = 1e9;
    double colds[64];
    long long cold = 0;
    tp_tok *tok = NULL;
    /* Each load is followed by one pass: a fresh tokenizer has an empty
     * word cache, so that pass is the cold rate; the median of the loads'
     * is reported. */
    for (int i = 0; i < loads; i++) {
      tp_tok *t = NULL;
      double t0 = now_s();
      int rc = tp_tok_load(&t, argv[k], err, sizeof(err));
      double dt = now_s() - t0;
      if (rc != 0) {
        fprintf(stderr, "bench_tok: %s\n", err);
        status = 1;
        break;
      }
      if (dt < best) best = dt;
      double c0 = now_s();
      cold = pass(t, texts, n);
      if (i < 64) colds[i] = now_s() - c0;
      if (i + 1 < loads)
        tp_tok_free(t);
      else
        tok = t;
    }
    if (tok == NULL) continue;
    int nc = loads < 64 ? loads : 64;
    qsort(colds, (size_t)nc, sizeof(double), cmp_double);
    double cold_s = nc % 2 ? colds[nc / 2] : (colds[nc / 2 - 1] + colds[nc / 2]) / 2;
    /* Every pass is timed on its own and the median is reported: on a
     * shared machine a neighbour's burst spoils a few passes, not all. */
    size_t passes = 0, cap = 64;
    double *times = malloc(cap * sizeof(double));
    long long per = cold;
    double t0 = now_s(), el = 0;
    while (times != NULL && per >= 0 && (el < seconds || passes < 3)) {
      double p0 = now_s();
      per = pass(tok, texts, n);
      if (passes == cap) {
        double *x = realloc(times, (cap *= 2) * sizeof(double));
        if (x == NULL) break;
        times = x;
      }
      times[passes++] = now_s() - p0;
      el = now_s() - t0;
    }
    if (per < 0 || cold < 0 || times == NULL) {
      fprintf(stderr, "bench_tok: encoding failed with %s\n", argv[k]);
      status = 1;
    } else {
      qsort(times, passes, sizeof(double), cmp_double);
      double med = passes % 2 ? times[passes / 2] : (times[passes / 2 - 1] + times[passes / 2]) / 2;
      printf("%s\t%.1f\t%lld\t%zu\t%.3f\t%.0f\t%.2f\t%.0f\n", base_name(argv[k]), best * 1e3, per, bytes, med,
             (double)per / med, (double)bytes / med / 1e6, (double)cold / cold_s);
    }
    free(times);
    fflush(stdout);
    tp_tok_free(tok);
  }
  for (size_t i = 0; i < n; i++) free(texts[i].s);
  free(texts);
  return status;
}

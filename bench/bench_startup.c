/* The start-up phases that happen inside tokperf, timed one by one.
 *
 * Usage: bench_startup TOKENIZER NUM_PROMPTS TOKENS_MEAN [STDDEV [SEED]]
 *
 * Does what `tokperf profile --tokenizer TOKENIZER --num-prompts N
 * --synthetic-input-tokens-mean M` does before its first request, with the
 * same library calls and the same seed derivation (tp_run.c's
 * prepare_point_prompts): loads the tokenizer, then makes the synthetic
 * prompts.  Prints one JSON line:
 *   {"tok_load_ms":..,"synth_ms":..,"prompts":..,"tokens":..}
 * bench/startup.py runs it in a fresh process per sample (a load is always
 * cold, as it is for tokperf) and sets these phases beside the whole
 * start-up it measures on tokperf itself. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "dataset/tp_synth.h"
#include "tokenizer/tp_tok.h"
#include "util/tp_rng.h"

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

int main(int argc, char **argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: bench_startup TOKENIZER NUM_PROMPTS TOKENS_MEAN [STDDEV [SEED]]\n");
    return 2;
  }
  size_t n = strtoul(argv[2], NULL, 10);
  uint32_t mean = (uint32_t)strtoul(argv[3], NULL, 10);
  uint32_t stddev = argc > 4 ? (uint32_t)strtoul(argv[4], NULL, 10) : 0;
  uint64_t seed = argc > 5 ? strtoull(argv[5], NULL, 10) : 42; /* tokperf's --random-seed default */
  char err[512] = "";
  tp_tok *tok = NULL;
  double t0 = now_ms();
  if (tp_tok_load_ex(&tok, argv[1], 0, err, sizeof(err))) {
    fprintf(stderr, "bench_startup: %s\n", err);
    return 1;
  }
  double t1 = now_ms();
  tp_dataset ds;
  if (tp_synth_prompts(&ds, tok, n, mean, stddev, tp_rng_mix(seed, mean), err, sizeof(err))) {
    fprintf(stderr, "bench_startup: %s\n", err);
    return 1;
  }
  double t2 = now_ms();
  uint64_t tokens = 0;
  for (size_t i = 0; i < ds.n; i++) tokens += (uint64_t)ds.items[i].input_tokens;
  printf("{\"tok_load_ms\":%.3f,\"synth_ms\":%.3f,\"prompts\":%zu,\"tokens\":%" PRIu64 "}\n", t1 - t0, t2 - t1,
         ds.n, tokens);
  tp_dataset_free(&ds);
  tp_tok_free(tok);
  return 0;
}

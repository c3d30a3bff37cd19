/* Fuzz target: the Prometheus text parser.  Beyond not crashing, every
 * sample it delivers must have a well-formed name and at most the label
 * limit, and parsing the same bytes twice must give the same samples. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/tp_prom.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct acc {
  uint64_t hash;
  size_t n;
} acc;

static int check(void *ud, const tp_prom_sample *s) {
  acc *a = ud;
  if (!s->name || !s->name[0] || s->n_labels > TP_PROM_MAX_LABELS) abort();
  for (const char *p = s->name; *p; p++) a->hash = a->hash * 31 + (uint8_t)*p;
  for (size_t i = 0; i < s->n_labels; i++) {
    if (!s->labels[i].name || !s->labels[i].value) abort();
    for (const char *p = s->labels[i].value; *p; p++) a->hash = a->hash * 31 + (uint8_t)*p;
  }
  a->n++;
  return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[128];
  acc a = {0, 0}, b = {0, 0};
  int r1 = tp_prom_parse((const char *)data, size, check, &a, err, sizeof(err));
  int r2 = tp_prom_parse((const char *)data, size, check, &b, err, sizeof(err));
  if (r1 != r2 || a.n != b.n || a.hash != b.hash) abort();
  return 0;
}

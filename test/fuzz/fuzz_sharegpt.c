/* Fuzz target: the ShareGPT reader (lib/dataset/tp_dataset_formats.c), from
 * memory.
 *
 * The input is a whole file.  Checked besides "no crash, no leak":
 * - when it is one JSON value, the ShareGPT reader returns 0, TP_EINVAL or
 *   TP_ENOMEM; a loaded data set is well formed, every prompt has its
 *   reference (the answer whose length sets max_tokens), and no more
 *   prompts than entries come out;
 * - the detecting loader agrees whenever it read the file as ShareGPT. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/tp_dataset_line.h"
#include "fuzz_inputs_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  json_t *root = json_loadb(text, size, JSON_DECODE_ANY, NULL);
  if (!root) return 0;
  tp_dataset ds;
  memset(&ds, 0, sizeof(ds));
  ds.source = strdup("fuzz");
  char err[512] = "";
  int rv = tp__dataset_sharegpt(&ds, "fuzz", root, err, sizeof(err));
  if (rv != 0 && rv != TP_EINVAL && rv != TP_ENOMEM) abort();
  if (rv == 0) {
    fuzz_check_dataset(&ds);
    if (!ds.max_tokens_from_reference || ds.n > json_array_size(root)) abort();
  }
  if (rv == TP_EINVAL) fuzz_check_err(err);

  tp_dataset any;
  char err2[512] = "";
  int rv2 = tp__dataset_parse_any(&any, "fuzz", text, size, err2, sizeof(err2));
  if (rv2 == 0 && strcmp(any.format, "sharegpt") == 0) {
    if (rv != 0 || any.n != ds.n) abort();
    for (size_t i = 0; i < ds.n; i++)
      if (strcmp(ds.items[i].text, any.items[i].text) != 0 || strcmp(ds.items[i].reference, any.items[i].reference))
        abort();
  }
  tp_dataset_free(&any);
  tp_dataset_free(&ds);
  json_decref(root);
  return 0;
}

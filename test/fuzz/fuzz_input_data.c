/* Fuzz target: perf_analyzer's input data (lib/dataset/tp_dataset_formats.c)
 * and the detection of a file's form, from memory.
 *
 * The input is a whole input file.  Checked besides "no crash, no leak":
 * - the detecting loader returns 0, TP_EINVAL or TP_ENOMEM; a loaded data
 *   set is well formed (fuzz_inputs_common.h); an error names the file and
 *   holds no control bytes;
 * - when the input is one JSON object, the perf_analyzer reader called
 *   directly keeps the same contract, and agrees with the detecting
 *   loader whenever that one read the file as perf_analyzer's;
 * - the base64 decoder never writes more than 3 bytes per 4 characters. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "dataset/tp_dataset_line.h"
#include "fuzz_inputs_common.h"
#include "util/tp_base64.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  const char *text = (const char *)data;
  char err[512] = "";
  tp_dataset any;
  int rv = tp__dataset_parse_any(&any, "fuzz", text, size, err, sizeof(err));
  if (rv != 0 && rv != TP_EINVAL && rv != TP_ENOMEM) abort();
  if (rv == 0) fuzz_check_dataset(&any);
  if (rv == TP_EINVAL) fuzz_check_err(err);

  json_t *root = json_loadb(text, size, 0, NULL);
  if (json_is_object(root)) {
    tp_dataset ds;
    memset(&ds, 0, sizeof(ds));
    ds.source = strdup("fuzz");
    char err2[512] = "";
    int rv2 = tp__dataset_perf_analyzer(&ds, "fuzz", root, err2, sizeof(err2));
    if (rv2 != 0 && rv2 != TP_EINVAL && rv2 != TP_ENOMEM) abort();
    if (rv2 == 0) fuzz_check_dataset(&ds);
    if (rv2 == TP_EINVAL) fuzz_check_err(err2);
    bool pa = json_is_array(json_object_get(root, "data"));
    if (pa && rv != TP_ENOMEM && rv2 != TP_ENOMEM) {
      if (rv != rv2) abort();
      if (rv == 0 && (ds.n != any.n || strcmp(any.format, "perf_analyzer") != 0)) abort();
      for (size_t i = 0; rv == 0 && i < ds.n; i++)
        if (strcmp(ds.items[i].text, any.items[i].text) != 0 || ds.items[i].max_tokens != any.items[i].max_tokens)
          abort();
    }
    tp_dataset_free(&ds);
  }
  json_decref(root);
  tp_dataset_free(&any);

  unsigned char *out;
  size_t n;
  if (tp_base64_decode(text, size, &out, &n) == 0) {
    if (n > size / 4 * 3 + 2) abort();
    free(out);
  }
  return 0;
}

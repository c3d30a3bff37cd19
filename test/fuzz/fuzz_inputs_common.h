/* Checks shared by the input-file fuzz targets: a loaded data set is well
 * formed, an error message is clean.  Any break abort()s. */
#ifndef FUZZ_INPUTS_COMMON_H
#define FUZZ_INPUTS_COMMON_H

#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "dataset/tp_dataset.h"
#include "util/tp_common.h"

static void fuzz_check_dataset(const tp_dataset *ds) {
  if (ds->n == 0 || !ds->format || strcmp(ds->source, "fuzz") != 0) abort();
  for (size_t i = 0; i < ds->n; i++) {
    const tp_prompt *p = &ds->items[i];
    if (!p->text || strlen(p->text) != p->text_len) abort();
    if (p->max_tokens != -1 && p->max_tokens <= 0) abort();
    if (p->input_tokens != -1) abort();
    if (p->messages) {
      /* What is sent as "messages" must be a list again. */
      json_t *m = json_loads(p->messages, 0, NULL);
      bool ok = json_is_array(m) && json_array_size(m) > 0;
      json_decref(m);
      if (!ok) abort();
    }
    if (ds->max_tokens_from_reference && !p->reference) abort();
  }
  if (memchr(ds->note, 0, sizeof(ds->note)) == NULL) abort();
  if (ds->note[0] && strncmp(ds->note, "fuzz", 4) != 0) abort();
}

static void fuzz_check_err(const char *err) {
  if (strncmp(err, "fuzz", 4) != 0) abort();
  for (const char *c = err; *c; c++)
    if ((unsigned char)*c < 0x20) abort();
}

#endif

/* A trace (--schedule): the requests of a recorded load, replayed at their
 * times.  One JSON object per line: "timestamp" in milliseconds, and either
 * a prompt ("text_input", "prompt", "input" or "text") or an
 * "input_length" (with optional "hash_ids", the shared prefix blocks), and
 * an optional "output_length". */
#ifndef TP_TRACE_H
#define TP_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "dataset/tp_dataset.h"
#include "tokenizer/tp_tok.h"

typedef struct tp_trace_entry {
  uint64_t offset_ns;     /* after the first entry, divided by the speed-up */
  uint32_t prompt_index;  /* its prompt in the dataset */
  uint32_t output_tokens; /* 0 = default */
} tp_trace_entry;

/* Reads a trace from f (name: for the dataset's source and messages).  Each
 * entry adds one prompt to ds (which must be zeroed); an entry with only an
 * "input_length" gets its prompt from tp_trace_make_prompts, and needs
 * have_tokenizer.  Times before the first entry's count as the first's.  On
 * an error (TP_EINVAL with "NAME:LINE: what is wrong", TP_ENOMEM) what was
 * read stays in ds and *entries for the caller to free
 * (tp_dataset_free, free). */
int tp_trace_read(FILE *f, const char *name, double speedup, bool have_tokenizer, tp_dataset *ds,
                  tp_trace_entry **entries, size_t *n_entries, char *err, size_t errlen);

/* Whether some prompt of ds was given only as a length (a trace's, or a
 * session trace's turn): tp_trace_make_prompts must make it. */
bool tp_trace_has_lengths(const tp_dataset *ds);

/* Makes the prompts a trace gave only lengths for: shared prefix blocks of
 * block_tokens per hash id (the same id gives the same text), then fresh
 * text for the rest, all reproducible from seed. */
int tp_trace_make_prompts(tp_dataset *ds, const tp_tok *tok, uint32_t block_tokens, uint64_t seed, char *err,
                          size_t errlen);

#endif

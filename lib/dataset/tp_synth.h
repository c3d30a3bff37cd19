/* Synthetic prompts of exact token length.
 *
 * Each prompt is real words (the fixed list in util/tp_words) cut, through
 * the tokenizer, to exactly the drawn number of tokens: the words are
 * encoded, the first N ids decoded back to text, and the text encoded again
 * to confirm it is N tokens (a cut can merge differently at its edge, so a
 * few neighbouring cuts and fresh word draws are tried). */
#ifndef TP_SYNTH_H
#define TP_SYNTH_H

#include <stddef.h>
#include <stdint.h>

#include "dataset/tp_dataset.h"
#include "tokenizer/tp_tok.h"

/* Fills ds with n prompts whose lengths are drawn from a normal
 * distribution (mean, stddev; at least 1 token) seeded by `seed`.  Each
 * prompt's input_tokens is set to its exact length.  Returns 0, or
 * TP_EINVAL with a message when some length cannot be met exactly, or
 * TP_ENOMEM. */
int tp_synth_prompts(tp_dataset *ds, const tp_tok *tok, size_t n, uint32_t mean, uint32_t stddev,
                     uint64_t seed, char *err, size_t errlen);

/* One prompt of exactly `tokens` tokens drawn with `seed` (owned text
 * returned in *text).  Used for shared prefixes and traces too. */
int tp_synth_text(const tp_tok *tok, uint32_t tokens, uint64_t seed, char **text, size_t *len);

#endif

/* A fixed list of common English words.  The mock server generates text
 * from it (one word, with a leading space, per token) and synthetic prompts
 * are drawn from it, so a tokenizer trained on the same list counts the
 * mock's output exactly. */
#ifndef TP_WORDS_H
#define TP_WORDS_H

#include <stddef.h>

extern const char *const tp_words[];
extern const size_t tp_words_n;

#endif

/* Regular expressions of tokenizer.json files, compiled with PCRE2.
 *
 * The patterns in these files are written for Oniguruma (the Rust
 * `tokenizers` library matches them with it, Ruby syntax).  PCRE2 reads the
 * same syntax with a few escapes that mean something else; tp__re_compile
 * rewrites those (and only those) before compiling, so the pattern the file
 * carries is what runs:
 *   \s, \S   Oniguruma: the White_Space property.  PCRE2's \s also takes
 *            U+180E, which Unicode dropped from White_Space in 6.3.
 *   \w, \W   Oniguruma: Letter, Mark, Number, Connector_Punctuation.
 *            PCRE2 10.42 leaves out marks and connector punctuation.
 *   \h, \H   Oniguruma: a hexadecimal digit.  PCRE2: horizontal space.
 *   \uHHHH   Oniguruma only; becomes \x{HHHH}.
 *   (?m)     Ruby's "dot matches newline"; PCRE2 spells it (?s).
 *   \p{Han}  a script: Oniguruma tests the Script property, PCRE2 10.40+
 *            Script_Extensions (where U+3002 "。" is Han too), so script
 *            names become \p{sc:Han}.
 *   ^ $      line anchors in Ruby syntax: compiled with PCRE2_MULTILINE.
 * Nested character classes and class intersection (&&), which PCRE2 lacks,
 * are refused with a message rather than read differently.
 *
 * Compiled patterns are read-only and shared between threads; matching
 * needs a tp__re_state per thread (match data and a JIT stack). */
#ifndef TP_TOK_HF_RE_H
#define TP_TOK_HF_RE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct tp__re tp__re;
typedef struct tp__re_state tp__re_state;

/* Compiles pattern[0..len) (valid UTF-8) with UTF, UCP and JIT; literal =
 * true matches the bytes as they are (a {"String": ...} pattern).  Returns
 * 0, TP_EINVAL with PCRE2's or our reason in why, TP_EUNSUPPORTED for
 * Oniguruma syntax PCRE2 cannot express, or TP_ENOMEM. */
int tp__re_compile(tp__re **out, const char *pattern, size_t len, bool literal, char *why, size_t whylen);
void tp__re_free(tp__re *re);

/* Returns NULL when out of memory. */
tp__re_state *tp__re_state_new(void);
void tp__re_state_free(tp__re_state *st);

/* The match callback of tp__re_find_all: [start, end) of one match.
 * Returns 0 to go on or a negative code to stop with it. */
typedef int (*tp__re_match_cb)(void *user_data, size_t start, size_t end);

/* Calls cb for every match in s[0..len), left to right, the way Rust's
 * onig::FindMatches iterates: the search resumes at the end of the last
 * match, and an empty match right where the previous match ended is
 * skipped (the search moves one character on).  s must be valid UTF-8.
 * Returns 0, cb's code, or TP_EINVAL when PCRE2 gives up (a resource
 * limit). */
int tp__re_find_all(const tp__re *re, tp__re_state *st, const char *s, size_t len, tp__re_match_cb cb,
                    void *user_data);

#endif

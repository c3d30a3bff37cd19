/* UTF-8: the one place that encodes, measures and checks it.
 *
 * "Valid" is strict everywhere here, as Rust's str and Python's decoder
 * take it: shortest forms only, no UTF-16 surrogates (U+D800..U+DFFF),
 * nothing past U+10FFFF.  NUL is a valid character unless a function says
 * otherwise. */
#ifndef TP_UTF8_H
#define TP_UTF8_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The length a lead byte announces (1-4), without checking anything:
 * for text already known to be valid. */
static inline size_t tp_utf8_lead_len(unsigned char c) {
  return c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
}

/* Writes cp (at most U+10FFFF) as UTF-8 at w (room for 4 bytes); returns
 * the length, 1-4.  Inline: the tokenizer maps every byte of a byte-level
 * word through it. */
static inline size_t tp_utf8_put(char *w, uint32_t cp) {
  if (cp < 0x80) {
    w[0] = (char)cp;
    return 1;
  }
  if (cp < 0x800) {
    w[0] = (char)(0xC0 | (cp >> 6));
    w[1] = (char)(0x80 | (cp & 0x3F));
    return 2;
  }
  if (cp < 0x10000) {
    w[0] = (char)(0xE0 | (cp >> 12));
    w[1] = (char)(0x80 | ((cp >> 6) & 0x3F));
    w[2] = (char)(0x80 | (cp & 0x3F));
    return 3;
  }
  w[0] = (char)(0xF0 | (cp >> 18));
  w[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
  w[2] = (char)(0x80 | ((cp >> 6) & 0x3F));
  w[3] = (char)(0x80 | (cp & 0x3F));
  return 4;
}

/* One step over s[0..n) (n >= 1): *ok and the length of the valid
 * character at s, or !*ok and the length of its maximal invalid prefix
 * (at least 1), the unit Rust's String::from_utf8_lossy replaces with one
 * U+FFFD. */
size_t tp_utf8_step(const unsigned char *s, size_t n, bool *ok);

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when it is invalid,
 * cut short by avail, or avail is 0. */
size_t tp_utf8_len(const unsigned char *s, size_t avail);

/* Length of the longest valid UTF-8 prefix of s[0..n) (NUL included). */
size_t tp_utf8_valid(const char *s, size_t n);

#endif

/* util/tp_utf8: tables of well-formed and ill-formed sequences for each
 * helper, every code point through put and back, and random byte strings
 * against a decoder written here from the definition (decode the code
 * point, then refuse overlong forms, surrogates and values past
 * U+10FFFF). */
#include <stdlib.h>
#include <string.h>

#include "tp_test.h"
#include "util/tp_common.h"
#include "util/tp_utf8.h"

/* The reference: length of the valid prefix of p[0..n), NUL allowed. */
static size_t ref_valid(const uint8_t *p, size_t n) {
  size_t i = 0;
  while (i < n) {
    uint8_t c = p[i];
    size_t len;
    uint32_t cp;
    if (c < 0x80) {
      i++;
      continue;
    } else if ((c & 0xe0) == 0xc0) {
      len = 2, cp = c & 0x1f;
    } else if ((c & 0xf0) == 0xe0) {
      len = 3, cp = c & 0x0f;
    } else if ((c & 0xf8) == 0xf0) {
      len = 4, cp = c & 0x07;
    } else {
      break;
    }
    if (i + len > n) break;
    size_t k;
    for (k = 1; k < len; k++) {
      if ((p[i + k] & 0xc0) != 0x80) break;
      cp = cp << 6 | (p[i + k] & 0x3f);
    }
    if (k < len) break;
    if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
        (cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
      break;
    i += len;
  }
  return i;
}

static void test_put(void) {
  static const struct {
    uint32_t cp;
    const char *want;
  } rows[] = {
      {0x00, "\0"}, {0x41, "A"}, {0x7f, "\x7f"}, {0x80, "\xc2\x80"}, {0xe9, "\xc3\xa9"},
      {0x7ff, "\xdf\xbf"}, {0x800, "\xe0\xa0\x80"}, {0x20ac, "\xe2\x82\xac"}, {0xffff, "\xef\xbf\xbf"},
      {0x10000, "\xf0\x90\x80\x80"}, {0x1f600, "\xf0\x9f\x98\x80"}, {0x10ffff, "\xf4\x8f\xbf\xbf"},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(rows); i++) {
    char w[4];
    size_t wl = rows[i].cp ? strlen(rows[i].want) : 1;
    size_t n = tp_utf8_put(w, rows[i].cp);
    CHECK_MEM(w, n, rows[i].want, wl, "tp_utf8_put writes the shortest form");
    CHECK_INT(tp_utf8_lead_len((unsigned char)w[0]), n, "the lead byte announces the length");
  }
}

static void test_step(void) {
  static const struct {
    const char *s;
    size_t n, want;
    bool ok;
    const char *what;
  } rows[] = {
      {"a", 1, 1, true, "ASCII"},
      {"\0", 1, 1, true, "NUL is a character"},
      {"\xc3\xa9", 2, 2, true, "two bytes"},
      {"\xe2\x82\xac", 3, 3, true, "three bytes"},
      {"\xf0\x9f\x98\x80", 4, 4, true, "four bytes"},
      {"\x80", 1, 1, false, "a lone continuation byte"},
      {"\xc0\xaf", 2, 1, false, "C0 never starts a sequence"},
      {"\xe0\x80\xaf", 3, 1, false, "overlong three-byte form: E0 then 80"},
      {"\xed\xa0\x80", 3, 1, false, "a surrogate: ED then A0"},
      {"\xf4\x90\x80\x80", 4, 1, false, "past U+10FFFF: F4 then 90"},
      {"\xf5\x80\x80\x80", 4, 1, false, "F5 never starts a sequence"},
      {"\xe2\x82", 2, 2, false, "cut short: the maximal prefix is one unit"},
      {"\xf0\x9f\x98z", 4, 3, false, "three of four, then ASCII"},
      {"\xe2z", 2, 1, false, "lead then ASCII"},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(rows); i++) {
    bool ok = !rows[i].ok;
    size_t k = tp_utf8_step((const unsigned char *)rows[i].s, rows[i].n, &ok);
    CHECK_INT(k, rows[i].want, rows[i].what);
    CHECK(ok == rows[i].ok, "%s: %s", rows[i].what, rows[i].ok ? "valid" : "invalid");
    CHECK_INT(tp_utf8_len((const unsigned char *)rows[i].s, rows[i].n), rows[i].ok ? rows[i].want : 0,
              rows[i].what);
  }
  CHECK_INT(tp_utf8_len((const unsigned char *)"a", 0), 0, "nothing available");
}

static void test_valid(void) {
  static const struct {
    const char *s;
    size_t len, want, want_nonul;
    const char *what;
  } rows[] = {
      {"plain", 5, 5, 5, "ASCII"},
      {"0123456789abcdef\xc3\xa9", 18, 18, 18, "past the eight-byte ASCII steps"},
      {"0123456789abcdef\xc3", 17, 16, 16, "cut after the ASCII steps"},
      {"ab\0cd", 5, 5, 2, "NUL: valid for tp_utf8_valid, the end for tp_utf8_valid_prefix"},
      {"a\xed\xa0\x80z", 5, 1, 1, "a surrogate"},
      {"a\xf4\x90\x80\x80z", 6, 1, 1, "above U+10FFFF"},
      {"", 0, 0, 0, "empty"},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(rows); i++) {
    CHECK_INT(tp_utf8_valid(rows[i].s, rows[i].len), rows[i].want, rows[i].what);
    CHECK_INT(tp_utf8_valid_prefix((const uint8_t *)rows[i].s, rows[i].len), rows[i].want_nonul, rows[i].what);
  }
}

/* Every code point: put, then measured and checked whole; surrogates are
 * encodable but never valid. */
static void test_all_code_points(void) {
  size_t wrong = 0;
  for (uint32_t cp = 0; cp <= 0x10ffff; cp++) {
    char w[4];
    size_t n = tp_utf8_put(w, cp);
    bool sur = cp >= 0xd800 && cp <= 0xdfff;
    size_t want = sur ? 0 : n;
    if (tp_utf8_len((const unsigned char *)w, n) != want || tp_utf8_valid(w, n) != want ||
        ref_valid((const uint8_t *)w, n) != want)
      wrong++;
  }
  CHECK_INT(wrong, 0, "every code point round-trips, surrogates refused");
}

/* Random strings, mostly made of bytes that start or continue sequences,
 * against the reference. */
static void test_random(void) {
  static const uint8_t pick[] = {'a', 0, 0x80, 0x8f, 0x90, 0x9f, 0xa0, 0xbf, 0xc0, 0xc2, 0xdf, 0xe0,
                                 0xe1, 0xed, 0xee, 0xef, 0xf0, 0xf1, 0xf4, 0xf5, 0xff};
  uint64_t rng = 99;
  size_t wrong = 0, wrong_nonul = 0;
  for (int t = 0; t < 200000; t++) {
    uint8_t b[32];
    rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
    size_t n = (rng >> 59) + 1; /* 1-32 */
    for (size_t i = 0; i < n; i++) {
      rng = rng * 6364136223846793005ULL + 1442695040888963407ULL;
      b[i] = pick[(rng >> 33) % sizeof(pick)];
    }
    if (tp_utf8_valid((const char *)b, n) != ref_valid(b, n)) wrong++;
    const uint8_t *z = memchr(b, 0, n);
    size_t upto = z ? (size_t)(z - b) : n;
    if (tp_utf8_valid_prefix(b, n) != ref_valid(b, upto)) wrong_nonul++;
  }
  CHECK_INT(wrong, 0, "tp_utf8_valid agrees with the reference");
  CHECK_INT(wrong_nonul, 0, "tp_utf8_valid_prefix agrees with the reference up to the first NUL");
}

int main(void) {
  test_put();
  test_step();
  test_valid();
  test_all_code_points();
  test_random();
  return tp_test_done();
}

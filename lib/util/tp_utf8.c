/* UTF-8 helpers (see tp_utf8.h). */
#include "util/tp_utf8.h"

#include <string.h>

#include "util/tp_common.h"

/* The ranges of the Unicode standard's table of well-formed sequences: the
 * second byte's bounds after E0, ED, F0 and F4 are what exclude overlong
 * forms, surrogates and code points past U+10FFFF. */
size_t tp_utf8_step(const unsigned char *s, size_t n, bool *ok) {
  unsigned c = s[0];
  if (c < 0x80) return *ok = true, 1;
  size_t need;
  unsigned lo = 0x80, hi = 0xBF;
  if (c >= 0xC2 && c <= 0xDF)
    need = 1;
  else if (c == 0xE0)
    need = 2, lo = 0xA0;
  else if (c >= 0xE1 && c <= 0xEC)
    need = 2;
  else if (c == 0xED)
    need = 2, hi = 0x9F;
  else if (c >= 0xEE && c <= 0xEF)
    need = 2;
  else if (c == 0xF0)
    need = 3, lo = 0x90;
  else if (c >= 0xF1 && c <= 0xF3)
    need = 3;
  else if (c == 0xF4)
    need = 3, hi = 0x8F;
  else
    return *ok = false, 1;
  size_t k = 1;
  if (k < n && s[k] >= lo && s[k] <= hi) {
    k++;
    while (k <= need && k < n && (s[k] & 0xC0) == 0x80) k++;
  }
  *ok = k == need + 1;
  return k;
}

size_t tp_utf8_len(const unsigned char *s, size_t avail) {
  if (!avail) return 0;
  bool ok;
  size_t k = tp_utf8_step(s, avail, &ok);
  return ok ? k : 0;
}

size_t tp_utf8_valid(const char *s, size_t n) {
  const unsigned char *u = (const unsigned char *)s;
  size_t i = 0;
  while (i < n) {
    /* Eight ASCII bytes at a time: most text (and JSON) is ASCII. */
    if (i + 8 <= n) {
      uint64_t v;
      memcpy(&v, u + i, 8);
      if ((v & 0x8080808080808080ULL) == 0) {
        i += 8;
        continue;
      }
    }
    if (u[i] < 0x80) {
      i++;
      continue;
    }
    bool ok;
    size_t k = tp_utf8_step(u + i, n - i, &ok);
    if (!ok) return i;
    i += k;
  }
  return n;
}

/* Declared in tp_common.h, where its callers look for it. */
size_t tp_utf8_valid_prefix(const uint8_t *p, size_t n) {
  size_t i = 0;
  while (i < n && p[i] != 0) {
    if (p[i] < 0x80) {
      i++;
      continue;
    }
    bool ok;
    size_t k = tp_utf8_step(p + i, n - i, &ok);
    if (!ok) break;
    i += k;
  }
  return i;
}

/* The records file's read-back scanner: one line of records.jsonl read in
 * place (RFC 8259 JSON), keeping only what the read-back needs
 * (tp__records_scan, tp_records.h).  Apart from the writer so neither file
 * passes 800 lines. */
#include "tp_records.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* JSON (RFC 8259) read in place: only the fields the read-back needs are
 * kept, everything else is checked and skipped. */
typedef struct scan {
  const unsigned char *p, *end;
} scan;

/* Deeper than any line this file writes (2); a line nested deeper was not
 * written by tokperf, and recursion stays bounded. */
#define SCAN_MAX_DEPTH 256

static void sc_ws(scan *s) {
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')) s->p++;
}

static bool sc_at(scan *s, unsigned char c) {
  sc_ws(s);
  if (s->p >= s->end || *s->p != c) return false;
  s->p++;
  return true;
}

static int hex4(const unsigned char *p, uint32_t *v) {
  uint32_t x = 0;
  for (int i = 0; i < 4; i++) {
    unsigned c = p[i], l = c | 0x20u;
    if (c >= '0' && c <= '9')
      x = x << 4 | (c - '0');
    else if (l >= 'a' && l <= 'f')
      x = x << 4 | (l - 'a' + 10);
    else
      return -1;
  }
  *v = x;
  return 0;
}

static size_t put_utf8(unsigned char *o, uint32_t cp) {
  if (cp < 0x80) return o[0] = (unsigned char)cp, 1;
  if (cp < 0x800) return o[0] = (unsigned char)(0xC0 | cp >> 6), o[1] = (unsigned char)(0x80 | (cp & 0x3F)), 2;
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xE0 | cp >> 12);
    o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (unsigned char)(0xF0 | cp >> 18);
  o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
  o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
  o[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

/* \uXXXX at s->p (past the backslash and u), a surrogate pair whole. */
static int sc_unicode(scan *s, uint32_t *cp) {
  if (s->end - s->p < 4 || hex4(s->p, cp)) return TP_EPROTO;
  s->p += 4;
  if (*cp >= 0xDC00 && *cp <= 0xDFFF) return TP_EPROTO;
  if (*cp < 0xD800 || *cp > 0xDBFF) return 0;
  uint32_t lo;
  if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u' || hex4(s->p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
    return TP_EPROTO;
  s->p += 6;
  *cp = 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00);
  return 0;
}

/* A string at s->p, decoded into out (NULL: only checked). */
static int sc_string(scan *s, tp_buf *out) {
  if (!sc_at(s, '"')) return TP_EPROTO;
  for (;;) {
    const unsigned char *run = s->p;
    unsigned hi = 0;
    while (s->p < s->end && *s->p != '"' && *s->p != '\\' && *s->p >= 0x20) hi |= *s->p++;
    size_t n = (size_t)(s->p - run);
    /* A run ends only at ASCII bytes, which no valid sequence holds; a run
     * of ASCII (every line tokperf writes) needs no check. */
    if ((hi & 0x80) && tp_utf8_valid_prefix(run, n) != n) return TP_EPROTO;
    if (n && out && tp_buf_append(out, run, n)) return TP_ENOMEM;
    if (s->p >= s->end || *s->p < 0x20) return TP_EPROTO;
    if (*s->p++ == '"') return 0;
    if (s->p >= s->end) return TP_EPROTO;
    unsigned char c = *s->p++, u[4];
    size_t k = 1;
    switch (c) {
      case '"': case '\\': case '/': u[0] = c; break;
      case 'b': u[0] = '\b'; break;
      case 'f': u[0] = '\f'; break;
      case 'n': u[0] = '\n'; break;
      case 'r': u[0] = '\r'; break;
      case 't': u[0] = '\t'; break;
      case 'u': {
        uint32_t cp;
        if (sc_unicode(s, &cp)) return TP_EPROTO;
        k = put_utf8(u, cp);
        break;
      }
      default: return TP_EPROTO;
    }
    if (out && tp_buf_append(out, u, k)) return TP_ENOMEM;
  }
}

static bool digit(const scan *s, const unsigned char *p) { return p < s->end && *p >= '0' && *p <= '9'; }

/* A number; *is_int when it has neither fraction nor exponent, and then *v
 * its value as a signed 64-bit integer (beyond that range it is refused,
 * as by a reader that keeps integers as such). */
static int sc_number(scan *s, bool *is_int, uint64_t *v) {
  sc_ws(s);
  const unsigned char *p = s->p;
  bool neg = p < s->end && *p == '-', over = false;
  p += neg;
  if (!digit(s, p)) return TP_EPROTO;
  uint64_t x = 0;
  if (*p == '0')
    p++;
  else
    for (; digit(s, p); p++) {
      unsigned d = *p - '0';
      if (x > (UINT64_MAX - d) / 10) over = true;
      x = x * 10 + d;
    }
  *is_int = true;
  if (p < s->end && *p == '.') {
    *is_int = false;
    if (!digit(s, ++p)) return TP_EPROTO;
    while (digit(s, p)) p++;
  }
  if (p < s->end && (*p | 0x20) == 'e') {
    *is_int = false;
    p++;
    if (p < s->end && (*p == '+' || *p == '-')) p++;
    if (!digit(s, p)) return TP_EPROTO;
    while (digit(s, p)) p++;
  }
  if (*is_int && (over || x > (uint64_t)INT64_MAX + neg)) return TP_EPROTO;
  s->p = p;
  *v = neg ? 0 - x : x;
  return 0;
}

static int sc_word(scan *s, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0) return TP_EPROTO;
  s->p += n;
  return 0;
}

/* Any value, checked and skipped. */
static int sc_skip(scan *s, int depth) {
  sc_ws(s);
  if (s->p >= s->end) return TP_EPROTO;
  unsigned char c = *s->p;
  bool is_int;
  uint64_t v;
  if (c == '"') return sc_string(s, NULL);
  if (c == 't') return sc_word(s, "true");
  if (c == 'f') return sc_word(s, "false");
  if (c == 'n') return sc_word(s, "null");
  if (c != '{' && c != '[') return sc_number(s, &is_int, &v);
  if (depth >= SCAN_MAX_DEPTH) return TP_EPROTO;
  unsigned char close = c == '{' ? '}' : ']';
  s->p++;
  if (sc_at(s, close)) return 0;
  for (;;) {
    int rv;
    if (close == '}' && ((rv = sc_string(s, NULL)) != 0 || (rv = sc_at(s, ':') ? 0 : TP_EPROTO) != 0)) return rv;
    if ((rv = sc_skip(s, depth + 1)) != 0) return rv;
    if (sc_at(s, close)) return 0;
    if (!sc_at(s, ',')) return TP_EPROTO;
  }
}

static int sc_resp(scan *s, tp__records_fields *f) {
  f->has_resp = f->resp_ints = false;
  f->n_resp = 0;
  sc_ws(s);
  if (s->p >= s->end || *s->p != '[') return sc_skip(s, 1);
  s->p++;
  f->has_resp = f->resp_ints = true;
  if (sc_at(s, ']')) return 0;
  for (;;) {
    sc_ws(s);
    bool is_int = false;
    uint64_t v = 0;
    int rv = s->p < s->end && (*s->p == '-' || digit(s, s->p)) ? sc_number(s, &is_int, &v) : sc_skip(s, 2);
    if (rv) return rv;
    if (!is_int) f->resp_ints = false;
    if (f->n_resp == f->cap_resp) {
      size_t cap = f->cap_resp ? 2 * f->cap_resp : 16;
      uint64_t *p = realloc(f->resp_ns, cap * sizeof(*p));
      if (!p) return TP_ENOMEM;
      f->resp_ns = p;
      f->cap_resp = cap;
    }
    f->resp_ns[f->n_resp++] = v;
    if (sc_at(s, ']')) return 0;
    if (!sc_at(s, ',')) return TP_EPROTO;
  }
}

/* "response_text_at": null, or an offset as put_text_at writes it. */
static int sc_text_at(scan *s, tp__records_fields *f) {
  f->has_at = f->at_ok = false;
  f->n_at = 0;
  sc_ws(s);
  if (s->p >= s->end || *s->p != '[') return sc_skip(s, 1);
  s->p++;
  f->has_at = f->at_ok = true;
  if (sc_at(s, ']')) return 0;
  for (;;) {
    sc_ws(s);
    bool is_int = false;
    uint64_t v = 0;
    uint32_t at = TP_RECORD_NO_TEXT;
    bool null = s->p < s->end && *s->p == 'n'; /* sc_skip takes only "null" there */
    int rv = s->p < s->end && (*s->p == '-' || digit(s, s->p)) ? sc_number(s, &is_int, &v) : sc_skip(s, 2);
    if (rv) return rv;
    int64_t x = (int64_t)v;
    if (is_int && x >= 0 && x <= TP_RECORD_AT_MAX)
      at = (uint32_t)x;
    else if (is_int && x < 0 && -1 - x <= TP_RECORD_AT_MAX)
      at = (uint32_t)(-1 - x) | TP_RECORD_AT_REASONING;
    else if (!null)
      f->at_ok = false;
    if (f->n_at == f->cap_at) {
      size_t cap = f->cap_at ? 2 * f->cap_at : 16;
      uint32_t *p = realloc(f->text_at, cap * sizeof(*p));
      if (!p) return TP_ENOMEM;
      f->text_at = p;
      f->cap_at = cap;
    }
    f->text_at[f->n_at++] = at;
    if (sc_at(s, ']')) return 0;
    if (!sc_at(s, ',')) return TP_EPROTO;
  }
}

typedef struct key {
  const unsigned char *p;
  size_t n;
} key;

static bool key_is(key k, const char *name) {
  size_t n = strlen(name);
  return k.n == n && memcmp(k.p, name, n) == 0;
}

/* A member's name: where it stands in the line when it is plain ASCII
 * without escapes (as every name tokperf writes), else decoded into
 * scratch. */
static int sc_key(scan *s, tp_buf *scratch, key *k) {
  sc_ws(s);
  if (s->p < s->end && *s->p == '"') {
    const unsigned char *q = s->p + 1;
    while (q < s->end && *q != '"' && *q != '\\' && *q >= 0x20 && *q < 0x80) q++;
    if (q < s->end && *q == '"') {
      k->p = s->p + 1;
      k->n = (size_t)(q - k->p);
      s->p = q + 1;
      return 0;
    }
  }
  tp_buf_reset(scratch);
  int rv = sc_string(s, scratch);
  k->p = scratch->data ? scratch->data : (const unsigned char *)"";
  k->n = scratch->len;
  return rv;
}

/* The value of one member, kept when it is one the read-back needs. */
static int sc_member(scan *s, tp__records_fields *f, key name) {
  if (key_is(name, "seq")) {
    sc_ws(s);
    f->has_seq = false;
    if (s->p < s->end && (*s->p == '-' || digit(s, s->p))) return sc_number(s, &f->has_seq, &f->seq);
    return sc_skip(s, 1);
  }
  if (key_is(name, "response_ns")) return sc_resp(s, f);
  if (key_is(name, "response_text_at")) return sc_text_at(s, f);
  tp_buf *into = key_is(name, "text") ? &f->text : key_is(name, "reasoning") ? &f->reasoning : NULL;
  if (!into) return sc_skip(s, 1);
  tp_buf_reset(into);
  sc_ws(s);
  return s->p < s->end && *s->p == '"' ? sc_string(s, into) : sc_skip(s, 1);
}

int tp__records_scan(const char *line, size_t n, tp__records_fields *f) {
  scan s = {(const unsigned char *)line, (const unsigned char *)line + n};
  f->has_seq = f->has_resp = f->resp_ints = f->has_at = f->at_ok = false;
  f->n_resp = f->n_at = 0;
  tp_buf_reset(&f->text);
  tp_buf_reset(&f->reasoning);
  tp_buf scratch; /* a name with escapes, decoded */
  tp_buf_init(&scratch);
  int rv = sc_at(&s, '{') ? 0 : TP_EPROTO;
  if (rv == 0 && !sc_at(&s, '}')) {
    for (;;) {
      key name;
      if ((rv = sc_key(&s, &scratch, &name)) != 0) break;
      if (!sc_at(&s, ':')) {
        rv = TP_EPROTO;
        break;
      }
      if ((rv = sc_member(&s, f, name)) != 0) break;
      if (sc_at(&s, '}')) break;
      if (!sc_at(&s, ',')) {
        rv = TP_EPROTO;
        break;
      }
    }
  }
  tp_buf_fini(&scratch);
  sc_ws(&s);
  if (rv == 0 && s.p != s.end) rv = TP_EPROTO;
  return rv;
}

void tp__records_fields_fini(tp__records_fields *f) {
  free(f->resp_ns);
  free(f->text_at);
  tp_buf_fini(&f->text);
  tp_buf_fini(&f->reasoning);
  memset(f, 0, sizeof(*f));
}

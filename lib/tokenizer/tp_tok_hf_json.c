/* A small in-place JSON reader (RFC 8259) for tokenizer.json files.
 *
 * Recursive descent with a depth limit, so a file of a million '[' fails
 * with a message instead of overflowing the stack.  Strings are unescaped
 * in place: an escape sequence is never shorter than the bytes it stands
 * for, so the write cursor never passes the read cursor. */
#include "tokenizer/tp_tok_hf_json.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "util/tp_common.h"
#include "util/tp_utf8.h"

/* Deeper than any real tokenizer.json (they nest 5 or 6 levels). */
#define MAX_DEPTH 128

typedef struct parser {
  tp__json *d;
  const char *p, *end;
  char *why;
  size_t whylen;
  int rv;
  /* Raw newlines occur only between tokens, so counting them in skip_ws
   * gives the line of any error (the text before it may already be
   * unescaped, so it cannot be recounted later). */
  unsigned line;
  const char *bol;
} parser;

static int fail(parser *ps, const char *at, const char *what) {
  if (ps->rv == 0) {
    unsigned line = ps->line, col = (unsigned)(at - ps->bol) + 1;
    if (at >= ps->end)
      tp_seterr(ps->why, ps->whylen, "line %u, column %u: %s (the file ends there: truncated?)", line, col,
                what);
    else
      tp_seterr(ps->why, ps->whylen, "line %u, column %u: %s", line, col, what);
    ps->rv = TP_EINVAL;
  }
  return ps->rv;
}

static uint32_t new_node(parser *ps, uint8_t type) {
  tp__json *d = ps->d;
  if (d->n_nodes == d->cap_nodes) {
    size_t cap = d->cap_nodes ? d->cap_nodes * 2 : 1024;
    if (cap > UINT32_MAX) {
      ps->rv = TP_ENOMEM;
      return 0;
    }
    tp__json_node *n = realloc(d->nodes, cap * sizeof(*n));
    if (n == NULL) {
      tp_seterr(ps->why, ps->whylen, "out of memory");
      ps->rv = TP_ENOMEM;
      return 0;
    }
    d->nodes = n;
    d->cap_nodes = cap;
  }
  uint32_t i = (uint32_t)d->n_nodes++;
  tp__json_node *n = &d->nodes[i];
  memset(n, 0, sizeof(*n));
  n->type = type;
  return i;
}

static void skip_ws(parser *ps) {
  const char *p = ps->p;
  while (p < ps->end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t')) {
    if (*p == '\n') ps->line++, ps->bol = p + 1;
    p++;
  }
  ps->p = p;
}

static int hex4(const char *p, const char *end, unsigned *out) {
  unsigned v = 0;
  if (end - p < 4) return -1;
  for (int i = 0; i < 4; i++) {
    char c = p[i];
    v <<= 4;
    if (c >= '0' && c <= '9')
      v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f')
      v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F')
      v |= (unsigned)(c - 'A' + 10);
    else
      return -1;
  }
  *out = v;
  return 0;
}

/* ps->p is at the opening quote. */
static uint32_t parse_string(parser *ps) {
  const char *start = ps->p;
  char *w = (char *)ps->p + 1;
  const char *p = ps->p + 1;
  uint32_t i = new_node(ps, TP_JSON_STRING);
  if (ps->rv) return 0;
  ps->d->nodes[i].u.s.off = (uint32_t)(p - ps->d->text);
  /* Fast scan to the first quote, backslash or control byte. */
  while (p < ps->end && *p != '"' && *p != '\\' && (unsigned char)*p >= 0x20) p++;
  w += p - (start + 1);
  for (;;) {
    if (p >= ps->end) return fail(ps, p, "unterminated string"), 0;
    unsigned char c = (unsigned char)*p;
    if (c == '"') break;
    if (c < 0x20) return fail(ps, p, "control character inside a string (must be escaped)"), 0;
    if (c != '\\') {
      *w++ = (char)c;
      p++;
      continue;
    }
    if (p + 1 >= ps->end) return fail(ps, p + 1, "unterminated string"), 0;
    char e = p[1];
    p += 2;
    switch (e) {
      case '"': *w++ = '"'; break;
      case '\\': *w++ = '\\'; break;
      case '/': *w++ = '/'; break;
      case 'b': *w++ = '\b'; break;
      case 'f': *w++ = '\f'; break;
      case 'n': *w++ = '\n'; break;
      case 'r': *w++ = '\r'; break;
      case 't': *w++ = '\t'; break;
      case 'u': {
        unsigned cp, lo;
        if (hex4(p, ps->end, &cp)) return fail(ps, p - 2, "bad \\u escape (four hex digits expected)"), 0;
        p += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
          return fail(ps, p - 6, "lone trailing surrogate in a \\u escape"), 0;
        if (cp >= 0xD800 && cp <= 0xDBFF) {
          if (ps->end - p < 6 || p[0] != '\\' || p[1] != 'u' || hex4(p + 2, ps->end, &lo) || lo < 0xDC00 ||
              lo > 0xDFFF)
            return fail(ps, p - 6, "lone leading surrogate in a \\u escape"), 0;
          p += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        w += tp_utf8_put(w, cp);
        break;
      }
      default: return fail(ps, p - 2, "invalid escape in a string"), 0;
    }
  }
  ps->d->nodes[i].u.s.len = (uint32_t)(w - (ps->d->text + ps->d->nodes[i].u.s.off));
  ps->p = p + 1;
  return i;
}

static uint32_t parse_number(parser *ps) {
  const char *s = ps->p, *p = ps->p;
  if (p < ps->end && *p == '-') p++;
  if (p >= ps->end || *p < '0' || *p > '9') return fail(ps, s, "invalid number"), 0;
  if (*p == '0') {
    p++;
  } else {
    while (p < ps->end && *p >= '0' && *p <= '9') p++;
  }
  if (p < ps->end && *p == '.') {
    p++;
    if (p >= ps->end || *p < '0' || *p > '9')
      return fail(ps, p, "invalid number (digit expected after '.')"), 0;
    while (p < ps->end && *p >= '0' && *p <= '9') p++;
  }
  if (p < ps->end && (*p == 'e' || *p == 'E')) {
    p++;
    if (p < ps->end && (*p == '+' || *p == '-')) p++;
    if (p >= ps->end || *p < '0' || *p > '9')
      return fail(ps, p, "invalid number (digit expected in exponent)"), 0;
    while (p < ps->end && *p >= '0' && *p <= '9') p++;
  }
  uint32_t i = new_node(ps, TP_JSON_NUMBER);
  if (ps->rv) return 0;
  size_t n = (size_t)(p - s);
  bool neg = s[0] == '-';
  if (n - neg <= 15 && memchr(s, '.', n) == NULL && memchr(s, 'e', n) == NULL && memchr(s, 'E', n) == NULL) {
    /* Ids are small integers: exact without strtod, which dominates
     * otherwise (a vocabulary has 100k-200k of them). */
    int64_t v = 0;
    for (const char *q = s + neg; q < p; q++) v = v * 10 + (*q - '0');
    ps->d->nodes[i].u.num = (double)(neg ? -v : v);
  } else if (n < 64) {
    char tmp[64];
    memcpy(tmp, s, n);
    tmp[n] = 0;
    ps->d->nodes[i].u.num = strtod(tmp, NULL);
  } else {
    /* Longer than any id or setting; the value only has to be "not a
     * small integer" for the loader to reject it. */
    ps->d->nodes[i].u.num = 1e300;
  }
  ps->p = p;
  return i;
}

static uint32_t parse_value(parser *ps, int depth);

static uint32_t parse_container(parser *ps, int depth, bool object) {
  const char *start = ps->p;
  if (depth >= MAX_DEPTH) return fail(ps, start, "nested too deeply"), 0;
  uint32_t i = new_node(ps, object ? TP_JSON_OBJECT : TP_JSON_ARRAY);
  if (ps->rv) return 0;
  char close = object ? '}' : ']';
  uint32_t last = 0, count = 0;
  ps->p++;
  skip_ws(ps);
  if (ps->p < ps->end && *ps->p == close) {
    ps->p++;
    return i;
  }
  for (;;) {
    skip_ws(ps);
    if (object) {
      if (ps->p >= ps->end || *ps->p != '"') return fail(ps, ps->p, "expected a string key"), 0;
      uint32_t k = parse_string(ps);
      if (ps->rv) return 0;
      if (last)
        ps->d->nodes[last].next = k;
      else
        ps->d->nodes[i].u.c.first = k;
      last = k;
      skip_ws(ps);
      if (ps->p >= ps->end || *ps->p != ':') return fail(ps, ps->p, "expected ':' after a key"), 0;
      ps->p++;
      skip_ws(ps);
    }
    uint32_t v = parse_value(ps, depth + 1);
    if (ps->rv) return 0;
    if (last)
      ps->d->nodes[last].next = v;
    else
      ps->d->nodes[i].u.c.first = v;
    last = v;
    count++;
    skip_ws(ps);
    if (ps->p < ps->end && *ps->p == ',') {
      ps->p++;
      continue;
    }
    if (ps->p < ps->end && *ps->p == close) {
      ps->p++;
      break;
    }
    return fail(ps, ps->p, object ? "expected ',' or '}'" : "expected ',' or ']'"), 0;
  }
  ps->d->nodes[i].u.c.count = count;
  return i;
}

static bool lit(parser *ps, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(ps->end - ps->p) < n || memcmp(ps->p, word, n) != 0) return false;
  ps->p += n;
  return true;
}

static uint32_t parse_value(parser *ps, int depth) {
  skip_ws(ps);
  if (ps->p >= ps->end) return fail(ps, ps->p, "expected a value"), 0;
  const char *at = ps->p;
  switch (*ps->p) {
    case '{': return parse_container(ps, depth, true);
    case '[': return parse_container(ps, depth, false);
    case '"': return parse_string(ps);
    case 't':
      if (lit(ps, "true")) return new_node(ps, TP_JSON_TRUE);
      break;
    case 'f':
      if (lit(ps, "false")) return new_node(ps, TP_JSON_FALSE);
      break;
    case 'n':
      if (lit(ps, "null")) return new_node(ps, TP_JSON_NULL);
      break;
    default:
      if (*ps->p == '-' || (*ps->p >= '0' && *ps->p <= '9')) return parse_number(ps);
      break;
  }
  return fail(ps, at, "expected a value (object, array, string, number, true, false or null)"), 0;
}

int tp__json_parse(tp__json *d, char *text, size_t len, char *why, size_t whylen) {
  memset(d, 0, sizeof(*d));
  d->text = text;
  d->len = len;
  parser ps = {
      .d = d, .p = text, .end = text + len, .why = why, .whylen = whylen, .rv = 0, .line = 1, .bol = text};
  if (len >= UINT32_MAX) {
    tp_seterr(why, whylen, "the file is larger than 4 GiB");
    return TP_EINVAL;
  }
  size_t bad = tp_utf8_valid(text, len);
  if (bad != len) {
    unsigned line = 1;
    size_t bol = 0;
    for (size_t i = 0; i < bad; i++)
      if (text[i] == '\n') line++, bol = i + 1;
    tp_seterr(why, whylen, "line %u, column %zu: not valid UTF-8", line, bad - bol + 1);
    return TP_EINVAL;
  }
  /* A size guess: real files have about one node per 12-16 bytes, files
   * of short tokens one per 10.  Growing copies the whole array, and an
   * array too large costs only address space (untouched pages are never
   * faulted in), so the guess errs high. */
  size_t guess = len / 8 + 16;
  d->nodes = tp__json_big_alloc(guess * sizeof(*d->nodes));
  if (d->nodes == NULL) {
    tp_seterr(why, whylen, "out of memory");
    return TP_ENOMEM;
  }
  d->cap_nodes = guess;
  skip_ws(&ps);
  if (ps.p >= ps.end) return fail(&ps, ps.p, "the file holds no JSON value (empty?)");
  parse_value(&ps, 0);
  if (ps.rv) return ps.rv;
  skip_ws(&ps);
  if (ps.p != ps.end) return fail(&ps, ps.p, "trailing characters after the JSON value");
  return 0;
}

#define HUGE_PAGE ((size_t)2 << 20)

void *tp__json_big_alloc(size_t n) {
  if (n < HUGE_PAGE) return malloc(n ? n : 1);
  size_t r = (n + HUGE_PAGE - 1) & ~(HUGE_PAGE - 1);
  void *p = aligned_alloc(HUGE_PAGE, r);
  /* Advice only: where huge pages are off it fails, and 4 KiB pages serve. */
  if (p != NULL) (void)madvise(p, r, MADV_HUGEPAGE);
  return p;
}

void tp__json_fini(tp__json *d) {
  free(d->nodes);
  d->nodes = NULL;
  d->n_nodes = d->cap_nodes = 0;
}

uint32_t tp__json_get(const tp__json *d, uint32_t obj, const char *key) {
  if (d->nodes[obj].type != TP_JSON_OBJECT) return 0;
  size_t klen = strlen(key);
  uint32_t found = 0;
  for (uint32_t k = d->nodes[obj].u.c.first; k; k = d->nodes[d->nodes[k].next].next) {
    uint32_t v = d->nodes[k].next;
    if (d->nodes[k].u.s.len == klen && memcmp(d->text + d->nodes[k].u.s.off, key, klen) == 0) found = v;
  }
  return found;
}

bool tp__json_str_is(const tp__json *d, uint32_t i, const char *s) {
  size_t n = strlen(s);
  return i && d->nodes[i].type == TP_JSON_STRING && d->nodes[i].u.s.len == n &&
         memcmp(d->text + d->nodes[i].u.s.off, s, n) == 0;
}

const char *tp__json_quote(char *out, size_t outlen, const char *s, size_t n, size_t max) {
  size_t w = 0, i = 0;
  if (outlen == 0) return out;
  bool cut = n > max;
  if (cut) {
    n = max;
    while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80) n--; /* whole characters */
  }
  for (; i < n && w + 8 < outlen; i++) {
    unsigned char c = (unsigned char)s[i];
    if (c >= 0x20 && c != 0x7F) {
      out[w++] = (char)c;
      continue;
    }
    const char *e = c == '\n' ? "\\n" : c == '\t' ? "\\t" : c == '\r' ? "\\r" : NULL;
    if (e)
      w += (size_t)snprintf(out + w, outlen - w, "%s", e);
    else
      w += (size_t)snprintf(out + w, outlen - w, "\\x%02X", c);
  }
  if ((cut || i < n) && w + 4 < outlen) memcpy(out + w, "...", 3), w += 3;
  out[w] = 0;
  return out;
}

const char *tp__json_type_name(const tp__json *d, uint32_t i) {
  switch (d->nodes[i].type) {
    case TP_JSON_NULL: return "null";
    case TP_JSON_FALSE:
    case TP_JSON_TRUE: return "a boolean";
    case TP_JSON_NUMBER: return "a number";
    case TP_JSON_STRING: return "a string";
    case TP_JSON_ARRAY: return "an array";
    default: return "an object";
  }
}

#include "tp_prom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/tp_common.h"

static bool name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
static bool name_char(char c) {
  return name_start(c) || (c >= '0' && c <= '9');
}

/* Parses a float as the format allows: NaN, +Inf, -Inf, Inf, decimals. */
static bool parse_value(const char *s, size_t n, double *out) {
  char buf[64];
  if (n == 0 || n >= sizeof(buf)) return false;
  memcpy(buf, s, n);
  buf[n] = 0;
  if (strcmp(buf, "NaN") == 0) {
    *out = NAN;
    return true;
  }
  if (strcmp(buf, "+Inf") == 0 || strcmp(buf, "Inf") == 0) {
    *out = INFINITY;
    return true;
  }
  if (strcmp(buf, "-Inf") == 0) {
    *out = -INFINITY;
    return true;
  }
  /* strtod would also take "inf", "nan(...)" and hex floats: only digits,
   * sign, dot and exponent are allowed here. */
  for (size_t i = 0; i < n; i++)
    if (!strchr("0123456789+-.eE", buf[i])) return false;
  char *end;
  *out = strtod(buf, &end);
  return end == buf + n;
}

/* One sample line being read: names and unescaped label values are
 * written NUL-terminated into w, so the callback gets C strings. */
typedef struct pline {
  const char *line;
  size_t n, i;
  char *w;
  size_t wo, lineno;
  char *err;
  size_t errlen;
} pline;

static void skip_ws(pline *p) {
  while (p->i < p->n && (p->line[p->i] == ' ' || p->line[p->i] == '\t')) p->i++;
}

/* Copies the name at p->i into w; returns its offset there. */
static size_t take_name(pline *p) {
  size_t at = p->wo;
  while (p->i < p->n && name_char(p->line[p->i])) p->w[p->wo++] = p->line[p->i++];
  p->w[p->wo++] = 0;
  return at;
}

/* One label's ="value" after its name (at w + ln), unescaped into w. */
static int take_label_value(pline *p, size_t ln, size_t *lv) {
  const char *line = p->line;
  size_t n = p->n;
  skip_ws(p);
  bool eq = p->i < n && line[p->i] == '=';
  if (eq) p->i++;
  if (eq) skip_ws(p);
  if (!eq || p->i >= n || line[p->i] != '"') {
    tp_seterr(p->err, p->errlen, "line %zu: expected =\"value\" after label '%s'", p->lineno, p->w + ln);
    return TP_EPROTO;
  }
  p->i += 1;
  *lv = p->wo;
  bool closed = false;
  while (p->i < n) {
    char c = line[p->i++];
    if (c == '"') {
      closed = true;
      break;
    }
    if (c == '\\' && p->i < n) {
      char e = line[p->i++];
      c = e == 'n' ? '\n' : e; /* \\ and \" as themselves */
    }
    p->w[p->wo++] = c;
  }
  p->w[p->wo++] = 0;
  if (!closed) {
    tp_seterr(p->err, p->errlen, "line %zu: unterminated label value", p->lineno);
    return TP_EPROTO;
  }
  return 0;
}

/* The {name="value", ...} block, its '{' at p->i. */
static int take_labels(pline *p, tp_prom_sample *s) {
  p->i++;
  for (;;) {
    skip_ws(p);
    if (p->i < p->n && p->line[p->i] == '}') {
      p->i++;
      return 0;
    }
    if (s->n_labels == TP_PROM_MAX_LABELS) {
      tp_seterr(p->err, p->errlen, "line %zu: more than %d labels", p->lineno, TP_PROM_MAX_LABELS);
      return TP_EPROTO;
    }
    if (p->i >= p->n || !name_start(p->line[p->i])) {
      tp_seterr(p->err, p->errlen, "line %zu: expected a label name or '}'", p->lineno);
      return TP_EPROTO;
    }
    size_t ln = take_name(p), lv;
    int rv = take_label_value(p, ln, &lv);
    if (rv) return rv;
    s->labels[s->n_labels].name = p->w + ln;
    s->labels[s->n_labels].value = p->w + lv;
    s->n_labels++;
    skip_ws(p);
    if (p->i < p->n && p->line[p->i] == ',') p->i++;
  }
}

/* The optional timestamp (ms) after the value, at p->i. */
static int take_timestamp(pline *p, tp_prom_sample *s) {
  const char *line = p->line;
  size_t n = p->n, i = p->i, ts = i;
  if (line[i] == '-') i++;
  while (i < n && line[i] >= '0' && line[i] <= '9') i++;
  if (i == ts || (i == ts + 1 && line[ts] == '-')) {
    tp_seterr(p->err, p->errlen, "line %zu: expected a timestamp in ms after the value", p->lineno);
    return TP_EPROTO;
  }
  /* Digits by hand: the body is not NUL-terminated, so strtoll could
   * read past its end. */
  int64_t t = 0;
  bool neg = line[ts] == '-';
  for (size_t k = ts + (neg ? 1 : 0); k < i; k++) {
    if (t > (INT64_MAX - 9) / 10) break; /* saturate absurd values */
    t = t * 10 + (line[k] - '0');
  }
  s->has_timestamp = true;
  s->timestamp_ms = neg ? -t : t;
  p->i = i;
  skip_ws(p);
  if (p->i < n) {
    tp_seterr(p->err, p->errlen, "line %zu: unexpected text after the timestamp", p->lineno);
    return TP_EPROTO;
  }
  return 0;
}

/* A sample line, from its first non-blank character at p->i. */
static int parse_sample(pline *p, tp_prom_sample *s) {
  const char *line = p->line;
  size_t n = p->n;
  memset(s, 0, sizeof(*s));
  if (!name_start(line[p->i])) {
    tp_seterr(p->err, p->errlen, "line %zu: a sample must start with a metric name", p->lineno);
    return TP_EPROTO;
  }
  s->name = p->w + take_name(p);
  /* Whitespace may separate the name from its labels. */
  size_t after_name = p->i;
  skip_ws(p);
  if (p->i >= n || line[p->i] != '{') p->i = after_name;
  int rv;
  if (p->i < n && line[p->i] == '{' && (rv = take_labels(p, s))) return rv;
  skip_ws(p);
  size_t vs = p->i;
  while (p->i < n && line[p->i] != ' ' && line[p->i] != '\t') p->i++;
  if (!parse_value(line + vs, p->i - vs, &s->value)) {
    tp_seterr(p->err, p->errlen, "line %zu: '%.*s' is not a sample value", p->lineno,
              (int)TP_MIN(p->i - vs, 40), line + vs);
    return TP_EPROTO;
  }
  skip_ws(p);
  return p->i < n ? take_timestamp(p, s) : 0;
}

int tp_prom_parse(const char *body, size_t len, tp_prom_sample_cb cb, void *user_data, char *err,
                  size_t errlen) {
  /* One scratch line at a time (see pline). */
  tp_buf scratch;
  tp_buf_init(&scratch);
  size_t off = 0, lineno = 0;
  int rv = 0;
  while (off < len && rv == 0) {
    lineno++;
    const char *line = body + off;
    const char *nl = memchr(line, '\n', len - off);
    size_t n = nl ? (size_t)(nl - line) : len - off;
    off += n + (nl ? 1 : 0);
    if (n && line[n - 1] == '\r') n--;
    size_t i = 0;
    while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
    if (i == n || line[i] == '#') continue; /* blank, HELP, TYPE, comment */

    tp_buf_reset(&scratch);
    if (tp_buf_reserve(&scratch, 2 * n + 2)) {
      rv = TP_ENOMEM;
      break;
    }
    pline p = {.line = line,
               .n = n,
               .i = i,
               .w = (char *)scratch.data,
               .lineno = lineno,
               .err = err,
               .errlen = errlen};
    tp_prom_sample s;
    if ((rv = parse_sample(&p, &s)) != 0) break;
    rv = cb(user_data, &s);
  }
  tp_buf_fini(&scratch);
  return rv;
}

const char *tp_prom_label_value(const tp_prom_sample *s, const char *name) {
  for (size_t i = 0; i < s->n_labels; i++)
    if (strcmp(s->labels[i].name, name) == 0) return s->labels[i].value;
  return NULL;
}

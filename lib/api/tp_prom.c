#include "tp_prom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/tp_common.h"

static bool name_start(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || c == ':';
}
static bool name_char(char c) { return name_start(c) || (c >= '0' && c <= '9'); }

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

int tp_prom_parse(const char *body, size_t len, tp_prom_sample_cb cb, void *user_data, char *err,
                  size_t errlen) {
  /* One scratch line at a time: names and unescaped label values are
   * written into it NUL-terminated, so the callback gets C strings. */
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
    char *w = (char *)scratch.data;
    size_t wo = 0;
    tp_prom_sample s;
    memset(&s, 0, sizeof(s));
    if (!name_start(line[i])) {
      tp_seterr(err, errlen, "line %zu: a sample must start with a metric name", lineno);
      rv = TP_EPROTO;
      break;
    }
    size_t ns = wo;
    while (i < n && name_char(line[i])) w[wo++] = line[i++];
    w[wo++] = 0;
    s.name = w + ns;
    /* Whitespace may separate the name from its labels. */
    size_t after_name = i;
    while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
    if (i >= n || line[i] != '{') i = after_name;
    if (i < n && line[i] == '{') {
      i++;
      for (;;) {
        while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
        if (i < n && line[i] == '}') {
          i++;
          break;
        }
        if (s.n_labels == TP_PROM_MAX_LABELS) {
          tp_seterr(err, errlen, "line %zu: more than %d labels", lineno, TP_PROM_MAX_LABELS);
          rv = TP_EPROTO;
          break;
        }
        if (i >= n || !name_start(line[i])) {
          tp_seterr(err, errlen, "line %zu: expected a label name or '}'", lineno);
          rv = TP_EPROTO;
          break;
        }
        size_t ln = wo;
        while (i < n && name_char(line[i])) w[wo++] = line[i++];
        w[wo++] = 0;
        while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
        bool eq = i < n && line[i] == '=';
        if (eq) i++;
        while (eq && i < n && (line[i] == ' ' || line[i] == '\t')) i++;
        if (!eq || i >= n || line[i] != '"') {
          tp_seterr(err, errlen, "line %zu: expected =\"value\" after label '%s'", lineno, w + ln);
          rv = TP_EPROTO;
          break;
        }
        i += 1;
        size_t lv = wo;
        bool closed = false;
        while (i < n) {
          char c = line[i++];
          if (c == '"') {
            closed = true;
            break;
          }
          if (c == '\\' && i < n) {
            char e = line[i++];
            c = e == 'n' ? '\n' : e; /* \\ and \" as themselves */
          }
          w[wo++] = c;
        }
        w[wo++] = 0;
        if (!closed) {
          tp_seterr(err, errlen, "line %zu: unterminated label value", lineno);
          rv = TP_EPROTO;
          break;
        }
        s.labels[s.n_labels].name = w + ln;
        s.labels[s.n_labels].value = w + lv;
        s.n_labels++;
        while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
        if (i < n && line[i] == ',') i++;
      }
      if (rv) break;
    }
    while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
    size_t vs = i;
    while (i < n && line[i] != ' ' && line[i] != '\t') i++;
    if (!parse_value(line + vs, i - vs, &s.value)) {
      tp_seterr(err, errlen, "line %zu: '%.*s' is not a sample value", lineno, (int)TP_MIN(i - vs, 40),
                line + vs);
      rv = TP_EPROTO;
      break;
    }
    while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
    if (i < n) {
      size_t ts = i;
      if (line[i] == '-') i++;
      while (i < n && line[i] >= '0' && line[i] <= '9') i++;
      if (i == ts || (i == ts + 1 && line[ts] == '-')) {
        tp_seterr(err, errlen, "line %zu: expected a timestamp in ms after the value", lineno);
        rv = TP_EPROTO;
        break;
      }
      /* Digits by hand: the body is not NUL-terminated, so strtoll could
       * read past its end. */
      int64_t t = 0;
      bool neg = line[ts] == '-';
      for (size_t k = ts + (neg ? 1 : 0); k < i; k++) {
        if (t > (INT64_MAX - 9) / 10) break; /* saturate absurd values */
        t = t * 10 + (line[k] - '0');
      }
      s.has_timestamp = true;
      s.timestamp_ms = neg ? -t : t;
      while (i < n && (line[i] == ' ' || line[i] == '\t')) i++;
      if (i < n) {
        tp_seterr(err, errlen, "line %zu: unexpected text after the timestamp", lineno);
        rv = TP_EPROTO;
        break;
      }
    }
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

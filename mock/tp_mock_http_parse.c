#include "tp_mock_http_parse.h"

#include <string.h>

/* tchar (RFC 9110 5.6.2): the characters of methods and field names. */
static bool is_tchar(unsigned char c) {
  if (c >= '0' && c <= '9') return true;
  if ((c | 0x20) >= 'a' && (c | 0x20) <= 'z') return true;
  return c != 0 && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* Field-value bytes: VCHAR, SP, HTAB and obs-text. */
static bool is_value_byte(unsigned char c) {
  return c == '\t' || c >= 0x20 ? c != 0x7f : false;
}

static char lower(char c) {
  return c >= 'A' && c <= 'Z' ? (char)(c + 32) : c;
}

bool tp_mock_http_span_ieq(tp_mock_http_span s, const char *str) {
  size_t n = strlen(str);
  if (s.len != n) return false;
  for (size_t i = 0; i < n; i++)
    if (lower(s.p[i]) != lower(str[i])) return false;
  return true;
}

/* Bytes of leading empty lines (CRLF or LF) before the request line; a
 * lone CR at the end may still become CRLF. */
static size_t skip_empty_lines(const char *b, size_t len) {
  size_t i = 0;
  while (i < len) {
    if (b[i] == '\n')
      i++;
    else if (b[i] == '\r' && i + 1 < len && b[i + 1] == '\n')
      i += 2;
    else
      break;
  }
  return i;
}

/* The end of the head (one past the LF of its empty line) at or after
 * `from`, or 0 when it is not in buf yet.  `start` is where the request
 * line begins; an empty line is an LF that follows an LF, possibly with
 * one CR between. */
static size_t find_head_end(const char *b, size_t len, size_t start, size_t from) {
  if (from < start) from = start;
  for (size_t i = from; i < len; i++) {
    if (b[i] != '\n' || i == start) continue;
    if (b[i - 1] == '\n') return i + 1;
    if (b[i - 1] == '\r' && i - 1 > start && b[i - 2] == '\n') return i + 1;
  }
  return 0;
}

/* One line from *pos up to its LF; returns its length without CR/LF, or
 * -1 when a CR appears other than right before the LF.  The head end was
 * found first, so an LF is always there. */
static long take_line(const char *b, size_t end, size_t *pos, const char **line) {
  size_t s = *pos, i = s;
  while (i < end && b[i] != '\n') i++;
  *pos = i + 1;
  size_t n = i - s;
  if (n && b[s + n - 1] == '\r') n--;
  if (memchr(b + s, '\r', n)) return -1;
  *line = b + s;
  return (long)n;
}

static int parse_request_line(const char *l, size_t n, tp_mock_http_req *req) {
  size_t i = 0;
  while (i < n && is_tchar((unsigned char)l[i])) i++;
  if (i == 0 || i >= n || l[i] != ' ') return TP_EPROTO;
  req->method.p = l;
  req->method.len = i;
  size_t t = ++i;
  while (i < n && (unsigned char)l[i] > 0x20 && (unsigned char)l[i] != 0x7f) i++;
  if (i == t || i >= n || l[i] != ' ') return TP_EPROTO;
  req->target.p = l + t;
  req->target.len = i - t;
  i++;
  if (n - i != 8 || memcmp(l + i, "HTTP/", 5) != 0) return TP_EPROTO;
  char maj = l[i + 5], dot = l[i + 6], min = l[i + 7];
  if (maj < '0' || maj > '9' || dot != '.' || min < '0' || min > '9') return TP_EPROTO;
  if (maj != '1' || min > '1') return TP_EUNSUPPORTED;
  req->minor_version = min - '0';
  return 0;
}

static int parse_field(const char *l, size_t n, tp_mock_http_header *h) {
  size_t i = 0;
  while (i < n && is_tchar((unsigned char)l[i])) i++;
  /* No name, or whitespace (or anything else) before the colon. */
  if (i == 0 || i >= n || l[i] != ':') return TP_EPROTO;
  h->name.p = l;
  h->name.len = i;
  i++;
  while (i < n && (l[i] == ' ' || l[i] == '\t')) i++;
  size_t e = n;
  while (e > i && (l[e - 1] == ' ' || l[e - 1] == '\t')) e--;
  for (size_t k = i; k < e; k++)
    if (!is_value_byte((unsigned char)l[k])) return TP_EPROTO;
  h->value.p = l + i;
  h->value.len = e - i;
  return 0;
}

int tp_mock_http_parse_request(const char *buf, size_t len, size_t last_len, tp_mock_http_req *req) {
  size_t start = skip_empty_lines(buf, len);
  /* A line end may have been split from its CR: look back 3 bytes. */
  size_t from = last_len > 3 ? last_len - 3 : 0;
  size_t end = find_head_end(buf, len, start, from);
  if (end == 0) return len >= TP_MOCK_HTTP_MAX_HEAD_BYTES ? TP_ETOOBIG : TP_EAGAIN;
  if (end > TP_MOCK_HTTP_MAX_HEAD_BYTES) return TP_ETOOBIG;

  tp_mock_http_req r;
  r.n_headers = 0;
  size_t pos = start;
  const char *line;
  long n = take_line(buf, end, &pos, &line);
  if (n < 0) return TP_EPROTO;
  int rv = parse_request_line(line, (size_t)n, &r);
  if (rv) return rv;
  for (;;) {
    n = take_line(buf, end, &pos, &line);
    if (n < 0) return TP_EPROTO;
    if (n == 0) break;
    /* obs-fold (a continuation line) is refused (RFC 9112 5.2). */
    if (line[0] == ' ' || line[0] == '\t') return TP_EPROTO;
    if (r.n_headers == TP_MOCK_HTTP_MAX_HEADERS) return TP_ETOOBIG;
    rv = parse_field(line, (size_t)n, &r.headers[r.n_headers]);
    if (rv) return rv;
    r.n_headers++;
  }
  *req = r;
  return (int)end;
}

const tp_mock_http_span *tp_mock_http_header_get(const tp_mock_http_req *req, const char *name) {
  for (size_t i = 0; i < req->n_headers; i++)
    if (tp_mock_http_span_ieq(req->headers[i].name, name)) return &req->headers[i].value;
  return NULL;
}

int tp_mock_http_body_length(const tp_mock_http_req *req, uint64_t *len) {
  *len = 0;
  bool seen = false;
  for (size_t i = 0; i < req->n_headers; i++) {
    const tp_mock_http_header *h = &req->headers[i];
    if (tp_mock_http_span_ieq(h->name, "transfer-encoding")) return TP_EUNSUPPORTED;
    if (!tp_mock_http_span_ieq(h->name, "content-length")) continue;
    if (h->value.len == 0 || h->value.len > 18) return TP_EPROTO;
    uint64_t v = 0;
    for (size_t k = 0; k < h->value.len; k++) {
      char c = h->value.p[k];
      if (c < '0' || c > '9') return TP_EPROTO;
      v = v * 10 + (uint64_t)(c - '0');
    }
    /* Repeated fields must agree (RFC 9110 8.6). */
    if (seen && v != *len) return TP_EPROTO;
    seen = true;
    *len = v;
  }
  return 0;
}

/* Whether a comma-separated field value lists token (case-insensitive). */
static bool lists_token(tp_mock_http_span v, const char *token) {
  size_t i = 0;
  while (i < v.len) {
    while (i < v.len && (v.p[i] == ' ' || v.p[i] == '\t' || v.p[i] == ',')) i++;
    size_t s = i;
    while (i < v.len && v.p[i] != ',') i++;
    size_t e = i;
    while (e > s && (v.p[e - 1] == ' ' || v.p[e - 1] == '\t')) e--;
    tp_mock_http_span t = {v.p + s, e - s};
    if (t.len && tp_mock_http_span_ieq(t, token)) return true;
  }
  return false;
}

bool tp_mock_http_keep_alive(const tp_mock_http_req *req) {
  bool close = false, keep = false;
  for (size_t i = 0; i < req->n_headers; i++) {
    if (!tp_mock_http_span_ieq(req->headers[i].name, "connection")) continue;
    close |= lists_token(req->headers[i].value, "close");
    keep |= lists_token(req->headers[i].value, "keep-alive");
  }
  if (close) return false;
  return req->minor_version >= 1 || keep;
}

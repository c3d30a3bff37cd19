/* Fuzz target: the mock server's HTTP/1.1 request-head parser.
 *
 * The input is what a client sent.  It is parsed whole, then as it would
 * arrive: byte by byte with the parser's resume hint, and in two pieces at
 * many offsets.  Every way must give the same result; a head that parses
 * must be well formed (spans inside the head, field names of tchars,
 * values without CR, LF or other control bytes but HTAB, no surrounding
 * whitespace), and the body-length and keep-alive helpers must accept
 * whatever the parser produced.  Any difference or breach abort()s. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mock/tp_mock_http_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same(const tp_mock_http_req *a, const tp_mock_http_req *b) {
  if (a->method.p != b->method.p || a->method.len != b->method.len || a->target.p != b->target.p ||
      a->target.len != b->target.len || a->minor_version != b->minor_version || a->n_headers != b->n_headers)
    return false;
  for (size_t i = 0; i < a->n_headers; i++)
    if (a->headers[i].name.p != b->headers[i].name.p || a->headers[i].name.len != b->headers[i].name.len ||
        a->headers[i].value.p != b->headers[i].value.p || a->headers[i].value.len != b->headers[i].value.len)
      return false;
  return true;
}

static void inside(const char *base, int head, tp_mock_http_span s) {
  if (s.p < base || s.p + s.len > base + head) abort();
}

static void check_head(const char *base, int head, const tp_mock_http_req *r) {
  if (head <= 0 || head > (int)TP_MOCK_HTTP_MAX_HEAD_BYTES) abort();
  if (r->minor_version != 0 && r->minor_version != 1) abort();
  if (r->n_headers > TP_MOCK_HTTP_MAX_HEADERS || r->method.len == 0 || r->target.len == 0) abort();
  inside(base, head, r->method);
  inside(base, head, r->target);
  for (size_t i = 0; i < r->n_headers; i++) {
    tp_mock_http_span n = r->headers[i].name, v = r->headers[i].value;
    inside(base, head, n);
    inside(base, head, v);
    if (n.len == 0) abort();
    for (size_t k = 0; k < n.len; k++)
      if ((unsigned char)n.p[k] <= 0x20 || n.p[k] == ':' || (unsigned char)n.p[k] >= 0x7f) abort();
    for (size_t k = 0; k < v.len; k++) {
      unsigned char c = (unsigned char)v.p[k];
      if ((c < 0x20 && c != '\t') || c == 0x7f) abort();
    }
    if (v.len && (v.p[0] == ' ' || v.p[0] == '\t' || v.p[v.len - 1] == ' ' || v.p[v.len - 1] == '\t')) abort();
  }
  uint64_t bl;
  int rv = tp_mock_http_body_length(r, &bl);
  if (rv != 0 && rv != TP_EPROTO && rv != TP_EUNSUPPORTED) abort();
  (void)tp_mock_http_keep_alive(r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* A private copy, so that spans can be checked against one base. */
  char *buf = malloc(size ? size : 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  tp_mock_http_req whole, r;
  memset(&whole, 0, sizeof(whole));
  int want = tp_mock_http_parse_request(buf, size, 0, &whole);
  if (want != TP_EAGAIN && want != TP_EPROTO && want != TP_ETOOBIG && want != TP_EUNSUPPORTED && want <= 0) abort();
  if (want > 0) check_head(buf, want, &whole);

  /* Byte by byte with the resume hint. */
  size_t last = 0;
  int got = TP_EAGAIN;
  size_t n = 0;
  while (got == TP_EAGAIN && n < size) {
    n++;
    got = tp_mock_http_parse_request(buf, n, last, &r);
    if (got == TP_EAGAIN) last = n;
  }
  if (got != want) abort();
  if (got > 0 && !same(&r, &whole)) abort();

  /* Two pieces at every offset for small inputs, else at 64 of them. */
  size_t step = size <= 512 ? 1 : size / 64;
  for (size_t at = 0; at < size; at += step) {
    int p = tp_mock_http_parse_request(buf, at, 0, &r);
    int q = p == TP_EAGAIN ? tp_mock_http_parse_request(buf, size, at, &r) : p;
    if (q != want) abort();
    if (q > 0 && !same(&r, &whole)) abort();
  }
  free(buf);
  return 0;
}

/* HTTP/1.1 request heads, as the mock server reads them (RFC 9112).
 *
 * No I/O and no allocation: the parser takes the bytes received so far and
 * either finds a complete head (request line, header fields, empty line) or
 * says more input is needed.  Spans in the result point into the caller's
 * buffer.  Debian 12 packages no small C HTTP/1.1 parser (llhttp and
 * picohttpparser are not packaged; libmicrohttpd brings its own threads and
 * sockets, and the mock must own its bytes to inject faults), so this one is
 * ours, with table tests at every split offset and a fuzz target.
 *
 * Accepted: leading empty lines before the request line (RFC 9112 2.2),
 * CRLF or bare LF line ends, HTTP/1.0 and HTTP/1.1, optional whitespace
 * around field values.  Refused: obs-fold continuation lines, whitespace
 * between a field name and its colon, control bytes (other than HTAB) in
 * field values, a bare CR, other HTTP versions. */
#ifndef TP_MOCK_HTTP_PARSE_H
#define TP_MOCK_HTTP_PARSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/tp_common.h"

#define TP_MOCK_HTTP_MAX_HEADERS 64
#define TP_MOCK_HTTP_MAX_HEAD_BYTES (64u << 10)

typedef struct tp_mock_http_span {
  const char *p;
  size_t len;
} tp_mock_http_span;

typedef struct tp_mock_http_header {
  tp_mock_http_span name;
  tp_mock_http_span value; /* without the optional whitespace around it */
} tp_mock_http_header;

typedef struct tp_mock_http_req {
  tp_mock_http_span method;
  tp_mock_http_span target; /* request-target as sent ("/v1/models?x=1") */
  int minor_version;        /* 0 or 1 */
  size_t n_headers;
  tp_mock_http_header headers[TP_MOCK_HTTP_MAX_HEADERS];
} tp_mock_http_req;

/* Parses the request head at the start of buf[0..len).  last_len is the
 * length buf had at the previous call for the same head that returned
 * TP_EAGAIN (0 the first time): the search for the head's end resumes
 * there, so a head that trickles in byte by byte costs linear time.
 *
 * Returns the number of bytes the head takes (leading empty lines
 * included; the body, if any, starts there), TP_EAGAIN when the head is
 * not complete yet, TP_ETOOBIG when it is longer than
 * TP_MOCK_HTTP_MAX_HEAD_BYTES or has more than TP_MOCK_HTTP_MAX_HEADERS
 * fields, TP_EUNSUPPORTED for an HTTP version other than 1.0/1.1 (answer
 * 505), or TP_EPROTO when it is malformed (answer 400).  req is filled
 * only on success; it borrows buf.  Never reads buf[len] or beyond. */
int tp_mock_http_parse_request(const char *buf, size_t len, size_t last_len, tp_mock_http_req *req);

/* The first field named name (ASCII case-insensitive), or NULL. */
const tp_mock_http_span *tp_mock_http_header_get(const tp_mock_http_req *req, const char *name);

/* Case-insensitive comparison of a span with a NUL-terminated string. */
bool tp_mock_http_span_ieq(tp_mock_http_span s, const char *str);

/* The body length from Content-Length (0 when absent).  Returns 0,
 * TP_EUNSUPPORTED when Transfer-Encoding is present (the mock takes
 * Content-Length bodies only: answer 411), or TP_EPROTO for a malformed
 * value or several differing values (answer 400). */
int tp_mock_http_body_length(const tp_mock_http_req *req, uint64_t *len);

/* Whether the connection stays open after the response: HTTP/1.1 unless
 * "Connection: close", HTTP/1.0 only with "Connection: keep-alive". */
bool tp_mock_http_keep_alive(const tp_mock_http_req *req);

#endif

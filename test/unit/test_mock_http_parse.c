/* Unit tests for the mock's HTTP/1.1 request-head parser
 * (mock/tp_mock_http_parse.c): a table of heads, each also fed in two
 * pieces at every split offset and byte by byte (with the parser's resume
 * hint), and parsed ending right before an unmapped page. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mock/tp_mock_http_parse.h"
#include "tp_test.h"

#define OK 1

typedef struct head_case {
  const char *name;
  const char *in;
  size_t in_len; /* 0 = strlen(in) */
  int want;      /* OK, or a negative code */
  size_t tail;   /* bytes after the head (a body, a pipelined request) */
  const char *method, *target;
  int minor;
  const char *headers; /* "name=value|name=value" */
} head_case;

static const head_case cases[] = {
    {"simple GET", "GET / HTTP/1.1\r\nHost: a\r\n\r\n", 0, OK, 0, "GET", "/", 1, "Host=a"},
    {"POST with a body after the head",
     "POST /v1/completions HTTP/1.1\r\nContent-Length: 5\r\nContent-Type: application/json\r\n\r\nhello", 0, OK, 5,
     "POST", "/v1/completions", 1, "Content-Length=5|Content-Type=application/json"},
    {"bare LF line ends, HTTP/1.0", "GET /x HTTP/1.0\nA: b\n\n", 0, OK, 0, "GET", "/x", 0, "A=b"},
    {"leading empty lines are skipped", "\r\n\r\nGET / HTTP/1.1\r\n\r\n", 0, OK, 0, "GET", "/", 1, ""},
    {"leading bare LF", "\nGET / HTTP/1.1\n\n", 0, OK, 0, "GET", "/", 1, ""},
    {"no header fields", "OPTIONS * HTTP/1.1\r\n\r\n", 0, OK, 0, "OPTIONS", "*", 1, ""},
    {"whitespace around a value is not part of it", "GET / HTTP/1.1\r\nX:   spaced  value \t \r\n\r\n", 0, OK, 0,
     "GET", "/", 1, "X=spaced  value"},
    {"empty value", "GET / HTTP/1.1\r\nX:\r\nY: \r\n\r\n", 0, OK, 0, "GET", "/", 1, "X=|Y="},
    {"obs-text in a value", "GET / HTTP/1.1\r\nX: caf\xc3\xa9\r\n\r\n", 0, OK, 0, "GET", "/", 1, "X=caf\xc3\xa9"},
    {"query string kept in the target", "GET /v1/models?x=1&y=%20 HTTP/1.1\r\n\r\n", 0, OK, 0, "GET",
     "/v1/models?x=1&y=%20", 1, ""},
    {"tchar method", "M-SEARCH.x /a HTTP/1.1\r\nh!#$%&'*+-.^_`~: v\r\n\r\n", 0, OK, 0, "M-SEARCH.x", "/a", 1,
     "h!#$%&'*+-.^_`~=v"},
    {"mixed CRLF and LF", "GET / HTTP/1.1\r\nA: 1\nB: 2\r\n\n", 0, OK, 0, "GET", "/", 1, "A=1|B=2"},
    {"pipelined: only the first head", "GET /a HTTP/1.1\r\n\r\nGET /b HTTP/1.1\r\n\r\n", 0, OK, 19, "GET", "/a", 1, ""},
    /* Refused. */
    {"HTTP/2.0", "GET / HTTP/2.0\r\n\r\n", 0, TP_EUNSUPPORTED, 0, 0, 0, 0, 0},
    {"h2c preface", "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", 0, TP_EUNSUPPORTED, 6, 0, 0, 0, 0},
    {"HTTP/1.2", "GET / HTTP/1.2\r\n\r\n", 0, TP_EUNSUPPORTED, 0, 0, 0, 0, 0},
    {"lower-case version", "GET / http/1.1\r\n\r\n", 0, TP_EPROTO, 0, 0, 0, 0, 0},
    {"version with junk", "GET / HTTP/1.1x\r\n\r\n", 0, TP_EPROTO, 0, 0, 0, 0, 0},
    {"two spaces", "GET  / HTTP/1.1\r\n\r\n", 0, TP_EPROTO, 0, 0, 0, 0, 0},
    {"no target", "GET HTTP/1.1\r\n\r\n", 0, TP_EPROTO, 0, 0, 0, 0, 0},
    {"DEL in the target", "GET /\x7f HTTP/1.1\r\n\r\n", 0, TP_EPROTO, 0, 0, 0, 0, 0},
    {"method with a non-tchar", "G@T / HTTP/1.1\r\n\r\n", 0, TP_EPROTO, 0, 0, 0, 0, 0},
    {"space before the colon", "GET / HTTP/1.1\r\nX : y\r\n\r\n", 0, TP_EPROTO, 0, 0, 0, 0, 0},
    {"no field name", "GET / HTTP/1.1\r\n: v\r\n\r\n", 0, TP_EPROTO, 0, 0, 0, 0, 0},
    {"no colon", "GET / HTTP/1.1\r\nnocolon\r\n\r\n", 0, TP_EPROTO, 0, 0, 0, 0, 0},
    {"obs-fold", "GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n", 0, TP_EPROTO, 0, 0, 0, 0, 0},
    {"control byte in a value", "GET / HTTP/1.1\r\nX: a\x01z\r\n\r\n", 0, TP_EPROTO, 0, 0, 0, 0, 0},
    {"DEL in a value", "GET / HTTP/1.1\r\nX: a\x7fz\r\n\r\n", 0, TP_EPROTO, 0, 0, 0, 0, 0},
    {"bare CR in a value", "GET / HTTP/1.1\r\nX: a\rb\r\n\r\n", 0, TP_EPROTO, 0, 0, 0, 0, 0},
    {"NUL in a value", "GET / HTTP/1.1\r\nX: a\0b\r\n\r\n", 26, TP_EPROTO, 0, 0, 0, 0, 0},
    {"bare CR before the request line", "\rGET / HTTP/1.1\r\n\r\n", 0, TP_EPROTO, 0, 0, 0, 0, 0},
    {"not HTTP at all", "hello\r\n\r\n", 0, TP_EPROTO, 0, 0, 0, 0, 0},
};

static size_t case_len(const head_case *c) {
  return c->in_len ? c->in_len : strlen(c->in);
}

static bool span_is(tp_mock_http_span s, const char *want) {
  return s.len == strlen(want) && memcmp(s.p, want, s.len) == 0;
}

/* Compares a parse result with the case; returns 1 when it matches. */
static int matches(const head_case *c, int rv, const tp_mock_http_req *r) {
  if (c->want < 0) return rv == c->want;
  if (rv < 0 || (size_t)rv != case_len(c) - c->tail) return 0;
  if (!span_is(r->method, c->method) || !span_is(r->target, c->target) || r->minor_version != c->minor) return 0;
  /* The headers, in order. */
  const char *p = c->headers;
  size_t i = 0;
  while (*p) {
    const char *bar = strchr(p, '|');
    size_t n = bar ? (size_t)(bar - p) : strlen(p);
    const char *eq = memchr(p, '=', n);
    if (!eq || i >= r->n_headers) return 0;
    tp_mock_http_span nm = r->headers[i].name, v = r->headers[i].value;
    if (nm.len != (size_t)(eq - p) || memcmp(nm.p, p, nm.len) != 0) return 0;
    if (v.len != n - (size_t)(eq - p) - 1 || memcmp(v.p, eq + 1, v.len) != 0) return 0;
    i++;
    p += n + (bar ? 1 : 0);
  }
  return i == r->n_headers;
}

static void test_table(void) {
  for (size_t k = 0; k < TP_ARRAY_LEN(cases); k++) {
    const head_case *c = &cases[k];
    size_t len = case_len(c);
    tp_mock_http_req r;
    memset(&r, 0, sizeof(r));
    int rv = tp_mock_http_parse_request(c->in, len, 0, &r);
    CHECK(matches(c, rv, &r), "%s: whole input", c->name);
    if (!matches(c, rv, &r)) printf("#   got %d, want %d\n", rv, c->want);

    /* The head's end: before it every prefix needs more input. */
    size_t end = len - c->tail;
    int bad_prefix = 0, bad_split = 0, bad_bytes = 0;
    for (size_t at = 0; at < end; at++) {
      /* Prefixes shorter than the head are incomplete... */
      int p = tp_mock_http_parse_request(c->in, at, 0, &r);
      if (p != TP_EAGAIN) bad_prefix++;
      /* ...and the whole input after one of them, resumed, is the same. */
      memset(&r, 0, sizeof(r));
      int q = tp_mock_http_parse_request(c->in, len, at, &r);
      if (!matches(c, q, &r)) bad_split++;
    }
    /* Byte by byte, resuming from the previous length each time. */
    size_t last = 0;
    int got = TP_EAGAIN;
    for (size_t n = 1; n <= len && got == TP_EAGAIN; n++) {
      memset(&r, 0, sizeof(r));
      got = tp_mock_http_parse_request(c->in, n, last, &r);
      if (got == TP_EAGAIN) last = n;
    }
    if (!matches(c, got, &r)) bad_bytes++;
    CHECK(bad_prefix == 0, "%s: every prefix of the head asks for more", c->name);
    CHECK(bad_split == 0, "%s: resumed after every split offset", c->name);
    CHECK(bad_bytes == 0, "%s: fed byte by byte", c->name);
  }
}

static void test_limits(void) {
  tp_buf b;
  tp_buf_init(&b);
  tp_mock_http_req r;
  /* 64 fields fit, 65 do not. */
  tp_buf_append_str(&b, "GET / HTTP/1.1\r\n");
  for (int i = 0; i < TP_MOCK_HTTP_MAX_HEADERS; i++) tp_buf_printf(&b, "H%d: %d\r\n", i, i);
  size_t at64 = b.len;
  tp_buf_append_str(&b, "\r\n");
  int rv = tp_mock_http_parse_request((const char *)b.data, b.len, 0, &r);
  CHECK(rv == (int)b.len && r.n_headers == TP_MOCK_HTTP_MAX_HEADERS, "64 header fields fit");
  b.len = at64;
  tp_buf_append_str(&b, "H64: x\r\n\r\n");
  CHECK_INT(tp_mock_http_parse_request((const char *)b.data, b.len, 0, &r), TP_ETOOBIG, "65 header fields: too big");
  /* A head longer than the limit. */
  tp_buf_reset(&b);
  tp_buf_append_str(&b, "GET / HTTP/1.1\r\nX: ");
  while (b.len < TP_MOCK_HTTP_MAX_HEAD_BYTES) tp_buf_append_str(&b, "aaaaaaaaaaaaaaaa");
  size_t unterminated = b.len;
  CHECK_INT(tp_mock_http_parse_request((const char *)b.data, unterminated, 0, &r), TP_ETOOBIG,
            "64 KiB without the end of the head: too big, not more input");
  CHECK_INT(tp_mock_http_parse_request((const char *)b.data, TP_MOCK_HTTP_MAX_HEAD_BYTES - 1, 0, &r), TP_EAGAIN,
            "one byte under the limit: more input");
  tp_buf_append_str(&b, "\r\n\r\n");
  CHECK_INT(tp_mock_http_parse_request((const char *)b.data, b.len, 0, &r), TP_ETOOBIG,
            "a complete head over 64 KiB: too big");
  /* Fields give header lookups, body lengths and keep-alive. */
  tp_buf_reset(&b);
  tp_buf_append_str(&b, "POST /g HTTP/1.1\r\nconTENT-length: 42\r\nX-Tokperf-Fault: stall\r\n\r\n");
  CHECK((rv = tp_mock_http_parse_request((const char *)b.data, b.len, 0, &r)) > 0, "fields case");
  const tp_mock_http_span *v = tp_mock_http_header_get(&r, "x-tokperf-FAULT");
  CHECK(v && span_is(*v, "stall"), "header lookup ignores case");
  CHECK(tp_mock_http_header_get(&r, "x-tokperf") == NULL, "header lookup wants the whole name");
  uint64_t bl;
  CHECK(tp_mock_http_body_length(&r, &bl) == 0 && bl == 42, "Content-Length 42");
  tp_buf_fini(&b);
}

typedef struct body_case {
  const char *fields;
  int rv;
  uint64_t len;
} body_case;

static void test_body_length(void) {
  static const body_case bc[] = {
      {"", 0, 0},
      {"Content-Length: 0\r\n", 0, 0},
      {"Content-Length: 123456789\r\n", 0, 123456789},
      {"Content-Length: 7\r\ncontent-length: 7\r\n", 0, 7},
      {"Content-Length: 7\r\nContent-Length: 8\r\n", TP_EPROTO, 0},
      {"Content-Length: abc\r\n", TP_EPROTO, 0},
      {"Content-Length: -1\r\n", TP_EPROTO, 0},
      {"Content-Length: 1 2\r\n", TP_EPROTO, 0},
      {"Content-Length:\r\n", TP_EPROTO, 0},
      {"Content-Length: 9999999999999999999\r\n", TP_EPROTO, 0},
      {"Transfer-Encoding: chunked\r\n", TP_EUNSUPPORTED, 0},
      {"Content-Length: 3\r\nTransfer-Encoding: chunked\r\n", TP_EUNSUPPORTED, 0},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(bc); i++) {
    char buf[256];
    snprintf(buf, sizeof(buf), "POST / HTTP/1.1\r\n%s\r\n", bc[i].fields);
    tp_mock_http_req r;
    uint64_t len = 99;
    int p = tp_mock_http_parse_request(buf, strlen(buf), 0, &r);
    int rv = p > 0 ? tp_mock_http_body_length(&r, &len) : p;
    CHECK(rv == bc[i].rv && (rv != 0 || len == bc[i].len), "body length of '%.*s'", (int)strcspn(bc[i].fields, "\r"),
          bc[i].fields);
  }
}

static void test_keep_alive(void) {
  static const struct {
    const char *head;
    bool keep;
  } kc[] = {
      {"GET / HTTP/1.1\r\n\r\n", true},
      {"GET / HTTP/1.1\r\nConnection: close\r\n\r\n", false},
      {"GET / HTTP/1.1\r\nConnection: Upgrade, CLOSE\r\n\r\n", false},
      {"GET / HTTP/1.1\r\nConnection: keep-alive\r\n\r\n", true},
      {"GET / HTTP/1.0\r\n\r\n", false},
      {"GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", true},
      {"GET / HTTP/1.0\r\nConnection: keep-alive, close\r\n\r\n", false},
      {"GET / HTTP/1.1\r\nConnection: closed\r\n\r\n", true},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(kc); i++) {
    tp_mock_http_req r;
    int p = tp_mock_http_parse_request(kc[i].head, strlen(kc[i].head), 0, &r);
    CHECK(p > 0 && tp_mock_http_keep_alive(&r) == kc[i].keep, "keep-alive: case %zu", i);
  }
}

/* Every case ends right before an unmapped page: a read past the input
 * faults. */
static void test_guard_page(void) {
  long pg = sysconf(_SC_PAGESIZE);
  char *mem = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED || mprotect(mem + pg, (size_t)pg, PROT_NONE) != 0) {
    CHECK(0, "guard page set up");
    return;
  }
  int bad = 0;
  for (size_t k = 0; k < TP_ARRAY_LEN(cases); k++) {
    const head_case *c = &cases[k];
    size_t len = case_len(c);
    for (size_t n = 0; n <= len; n++) {
      char *p = mem + pg - n;
      memcpy(p, c->in, n);
      tp_mock_http_req r;
      int rv = tp_mock_http_parse_request(p, n, 0, &r);
      /* With the head's end not in the prefix, more input is needed;
       * pipelined and body cases may complete earlier. */
      if (n < len - c->tail && rv != TP_EAGAIN) bad++;
      if (n >= len - c->tail && !matches(c, rv, &r)) bad++;
    }
  }
  CHECK_INT(bad, 0, "guard page: heads (and their prefixes) at a page end parse as copies do");
  munmap(mem, (size_t)pg * 2);
}

int main(void) {
  test_table();
  test_limits();
  test_body_length();
  test_keep_alive();
  test_guard_page();
  return tp_test_done();
}

/* Tests for the body tracker of an HTTP/1.1 response stream
 * (lib/transport/tp_http_raw.c): for each stream of the table, the body
 * bytes it finds (taken from the raw bytes at the offsets it reports) must
 * be each response's body, in order, with the right response index, and
 * the tracker lost exactly where it cannot follow; the same whether the
 * stream is fed whole, one byte at a time or in two pieces at every
 * offset. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "tp_test.h"
#include "transport/tp_http_raw.h"

typedef struct raw_case {
  const char *name;
  const char *stream;
  bool head;        /* the request was a HEAD */
  const char *want; /* "index:body|index:body..." for every response with a body piece */
  bool lost;
} raw_case;

static const raw_case cases[] = {
    {"content-length body", "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", false, "1:hello", false},
    {"chunked SSE events, one chunk each",
     "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
     "d\r\ndata: one\r\n\r\n\r\nd\r\ndata: two\r\n\r\n\r\n0\r\n\r\n",
     false, "1:data: one\r\n\r\ndata: two\r\n\r\n", false},
    {"chunk extensions, upper-case hex, trailers",
     "HTTP/1.1 200 OK\r\ntransfer-encoding: Chunked\r\n\r\n"
     "A;name=value\r\n0123456789\r\n3 ; x\r\nabc\r\n0\r\nX-Trailer: 1\r\nY: 2\r\n\r\n",
     false, "1:0123456789abc", false},
    {"bare LF line ends", "HTTP/1.1 200 OK\nTransfer-Encoding: chunked\n\n2\nhi\n0\n\n", false, "1:hi",
     false},
    {"interim 100 and 103 before the final response",
     "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a>\r\n\r\n"
     "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok",
     false, "1:ok", false},
    {"kept-alive responses in sequence",
     "HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nabc"
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nd\r\n0\r\n\r\n"
     "HTTP/1.1 204 No Content\r\n\r\n"
     "HTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n"
     "HTTP/1.0 500 Oops\r\nContent-Length: 1\r\n\r\nx",
     false, "1:abc|2:d|5:x", false},
    {"empty Content-Length body, then another",
     "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nz", false,
     "2:z", false},
    {"HEAD: a length but no body",
     "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nq", true, "2:q",
     false},
    {"Transfer-Encoding overrides Content-Length",
     "HTTP/1.1 200 OK\r\nContent-Length: 100\r\nTransfer-Encoding: chunked\r\n\r\n1\r\na\r\n0\r\n\r\n", false,
     "1:a", false},
    {"gzip, chunked: chunked framing",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip, chunked\r\n\r\n2\r\nzz\r\n0\r\n\r\n", false, "1:zz", false},
    {"a coding after chunked: read to the close",
     "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked, gzip\r\n\r\n2\r\nzz", false, "1:2\r\nzz", false},
    {"no framing: the body ends with the connection",
     "HTTP/1.1 200 OK\r\nServer: x\r\n\r\nall of it\r\nHTTP/1.1", false, "1:all of it\r\nHTTP/1.1", false},
    {"repeated equal lengths are one",
     "HTTP/1.1 200 OK\r\nContent-Length: 2, 2\r\nContent-Length: 2\r\n\r\nab", false, "1:ab", false},
    {"a long unrelated header line is skipped",
     "HTTP/1.1 200 OK\r\nX-Long: "
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
     "aaaaaaaaa"
     "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\r\nContent-Length: 1\r\n\r\n!",
     false, "1:!", false},
    {"obs-fold of an unrelated field", "HTTP/1.1 200 OK\r\nX-A: 1\r\n  2\r\nContent-Length: 1\r\n\r\n.",
     false, "1:.", false},
    /* What it does not follow: lost, and nothing reported after. */
    {"conflicting lengths", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\nabc", false, "",
     true},
    {"a length that is not a number", "HTTP/1.1 200 OK\r\nContent-Length: 2x\r\n\r\nab", false, "", true},
    {"an obs-fold of Content-Length", "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n 3\r\n\r\nab", false, "",
     true},
    {"a protocol switch", "HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\n\r\n\x00\x00\x12\x04", false,
     "", true},
    {"HTTP/2 bytes", "\x00\x00\x12\x04\x00\x00\x00\x00\x00", false, "", true},
    {"HTTP/0.9 style answer", "hello world\r\n", false, "", true},
    {"a status code of two digits", "HTTP/1.1 20 OK\r\n\r\n", false, "", true},
    {"a chunk without its line end", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\naX\r\n",
     false, "1:a", true},
    {"a chunk size that is not hex", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", false, "",
     true},
    {"a chunk size past 2^60", "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000001\r\n",
     false, "", true},
    {"a header line without a colon", "HTTP/1.1 200 OK\r\nbroken\r\n\r\n", false, "", true},
};

typedef struct collect {
  const uint8_t *base; /* the buffer of the current feed */
  char out[4096];
  size_t len;
  long long last_resp;
  uint64_t next_body; /* the body offset the next piece of last_resp must start at */
  bool order_ok;
} collect;

static void on_piece(void *ctx, const tp_http_raw_piece *p) {
  collect *c = ctx;
  if ((long long)p->resp != c->last_resp) {
    if (c->last_resp >= 0 && (long long)p->resp < c->last_resp) c->order_ok = false;
    c->len += (size_t)snprintf(c->out + c->len, sizeof(c->out) - c->len, "%s%llu:", c->len ? "|" : "",
                               (unsigned long long)p->resp);
    c->last_resp = (long long)p->resp;
    c->next_body = 0;
  }
  if (p->body_start != c->next_body || p->body_end - p->body_start != p->raw_end - p->raw_start ||
      p->raw_end <= p->raw_start)
    c->order_ok = false;
  c->next_body = p->body_end;
  size_t n = p->raw_end - p->raw_start;
  if (c->len + n < sizeof(c->out)) {
    memcpy(c->out + c->len, c->base + p->raw_start, n);
    c->len += n;
  }
  c->out[c->len] = 0;
}

/* Feeds s in pieces that end at the offsets in cuts (ascending, the last
 * = the stream's length); returns whether the tracker is lost. */
static bool run(const raw_case *k, size_t slen, const size_t *cuts, size_t ncuts, collect *c) {
  memset(c, 0, sizeof(*c));
  c->last_resp = -1;
  c->order_ok = true;
  tp_http_raw *t = tp_http_raw_new();
  if (!t) return true;
  tp_http_raw_restart(t, k->head);
  size_t at = 0;
  bool ok = true;
  for (size_t i = 0; i < ncuts; i++) {
    c->base = (const uint8_t *)k->stream + at;
    ok = tp_http_raw_feed(t, c->base, cuts[i] - at, on_piece, c);
    at = cuts[i];
  }
  (void)slen;
  bool lost = tp_http_raw_lost(t);
  if (lost != !ok) c->order_ok = false;
  tp_http_raw_free(t);
  return lost;
}

static size_t stream_len(const raw_case *k) {
  /* Streams with NUL bytes: the HTTP/2 and protocol-switch cases, whose
   * length is that of the literal up to the last byte shown. */
  if (strcmp(k->name, "HTTP/2 bytes") == 0) return 9;
  if (strcmp(k->name, "a protocol switch") == 0) return strlen(k->stream) + 4;
  return strlen(k->stream);
}

int main(void) {
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const raw_case *k = &cases[i];
    size_t n = stream_len(k);
    collect c;
    size_t whole[1] = {n};
    bool lost = run(k, n, whole, 1, &c);
    CHECK_STR(c.out, k->want, k->name);
    CHECK(lost == k->lost && c.order_ok, "%s: lost %d (want %d), pieces in order", k->name, lost, k->lost);
    /* One byte at a time: the same bodies (pieces are cut, their text is not). */
    size_t cuts[4096];
    for (size_t j = 0; j < n; j++) cuts[j] = j + 1;
    lost = run(k, n, cuts, n, &c);
    CHECK(strcmp(c.out, k->want) == 0 && lost == k->lost && c.order_ok,
          "%s, fed byte by byte: got \"%.300s\"", k->name, c.out);
    bool all = true;
    for (size_t j = 0; j <= n && all; j++) {
      size_t two[2] = {j, n};
      lost = run(k, n, two, 2, &c);
      if (strcmp(c.out, k->want) != 0 || lost != k->lost || !c.order_ok) {
        all = false;
        CHECK(false, "%s, cut at %zu: got \"%.300s\"", k->name, j, c.out);
      }
    }
    if (all) CHECK(true, "%s, fed in two pieces at every offset", k->name);
  }

  /* Restart: a lost tracker follows again at the next response, under a new index. */
  tp_http_raw *t = tp_http_raw_new();
  CHECK(t != NULL, "new");
  uint64_t r0 = tp_http_raw_restart(t, false);
  CHECK(!tp_http_raw_feed(t, (const uint8_t *)"garbage\n", 8, NULL, NULL), "garbage: lost");
  CHECK(!tp_http_raw_feed(t, (const uint8_t *)"HTTP/1.1 200 OK\r\n", 17, NULL, NULL), "lost stays lost");
  uint64_t r1 = tp_http_raw_restart(t, false);
  CHECK(r1 > r0 && !tp_http_raw_lost(t) && tp_http_raw_resp(t) == r1, "restart: not lost, a new index");
  collect c;
  memset(&c, 0, sizeof(c));
  c.last_resp = -1;
  c.order_ok = true;
  const char *s = "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
  c.base = (const uint8_t *)s;
  CHECK(tp_http_raw_feed(t, c.base, strlen(s), on_piece, &c) && c.len > 0 && strstr(c.out, ":ok") != NULL,
        "after restart the body is found");
  CHECK(tp_http_raw_resp(t) == r1 + 1, "the response ended: the next one gets the next index");
  tp_http_raw_lose(t);
  CHECK(tp_http_raw_lost(t), "lose");

  /* Between chunks: known, and a lost tracker resumes there after chunks
   * it was not fed. */
  uint64_t r2 = tp_http_raw_restart(t, false), body = 99;
  const char *h2 = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n";
  CHECK(tp_http_raw_feed(t, (const uint8_t *)h2, strlen(h2), NULL, NULL) &&
            tp_http_raw_between_chunks(t, &body) && body == 0,
        "after the head of a chunked response: between chunks, no body yet");
  CHECK(
      tp_http_raw_feed(t, (const uint8_t *)"3\r\nab", 5, NULL, NULL) && !tp_http_raw_between_chunks(t, &body),
      "inside a chunk: not between chunks");
  CHECK(tp_http_raw_feed(t, (const uint8_t *)"c\r\n", 3, NULL, NULL) &&
            tp_http_raw_between_chunks(t, &body) && body == 3,
        "after a chunk's line end: between chunks, 3 body bytes");
  tp_http_raw_lose(t); /* "4\r\ndefg\r\n" read by someone else */
  tp_http_raw_resume_chunked(t, r2, 7);
  memset(&c, 0, sizeof(c));
  c.last_resp = -1;
  c.order_ok = true;
  const char *rest = "2\r\nhi\r\n0\r\n\r\n";
  c.base = (const uint8_t *)rest;
  bool fed = tp_http_raw_feed(t, c.base, strlen(rest), on_piece, &c);
  CHECK(fed && !tp_http_raw_lost(t) && strstr(c.out, ":hi") != NULL && tp_http_raw_resp(t) == r2 + 1,
        "resumed: the next chunk is found and the response ends (got \"%.300s\")", c.out);
  CHECK(!tp_http_raw_between_chunks(t, &body), "between responses: not between chunks");
  tp_http_raw_free(t);
  return tp_test_done();
}

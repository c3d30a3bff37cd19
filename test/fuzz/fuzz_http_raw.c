/* Fuzz target: the body tracker of an HTTP/1.1 response stream
 * (lib/transport/tp_http_raw.c).
 *
 * The first byte chooses the mode.  Even: the rest is a raw stream, fed
 * whole, one byte at a time, in two pieces at several offsets and in
 * uneven chunks; every way must find the same body bytes for the same
 * responses and end in the same lost state, with pieces in order (each
 * starts where the last one of its response ended, raw and body lengths
 * equal, inside the buffer fed).  Odd: the rest is a recipe for a stream a
 * server may send (interim responses, Content-Length, chunked with
 * extensions and trailers, 204/304, bodies of the recipe's bytes), built
 * here with the bodies it must yield; the tracker must follow it to the
 * end, never lost, and find exactly those bodies under consecutive
 * response indices.  In both modes, a tracker resumed between two chunks
 * where the first one stands (tp_http_raw_resume_chunked) reads the rest
 * as the first one does.  Any difference abort()s. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tp_http_raw.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define OUT_MAX (1 << 16)

typedef struct got {
  const uint8_t *base;
  uint8_t out[OUT_MAX]; /* "\xff" index bytes, then the body bytes, per response */
  size_t len;
  long long last_resp;
  uint64_t next_body;
} got;

static void on_piece(void *ctx, const tp_http_raw_piece *p) {
  got *g = ctx;
  if (p->raw_end <= p->raw_start || p->body_end - p->body_start != p->raw_end - p->raw_start) abort();
  if ((long long)p->resp != g->last_resp) {
    if ((long long)p->resp < g->last_resp) abort();
    if (g->len + 9 > OUT_MAX) abort();
    g->out[g->len++] = 0xff;
    memcpy(g->out + g->len, &p->resp, 8);
    g->len += 8;
    g->last_resp = (long long)p->resp;
    g->next_body = 0;
  }
  if (p->body_start != g->next_body) abort();
  g->next_body = p->body_end;
  size_t n = p->raw_end - p->raw_start;
  if (g->len + n > OUT_MAX) abort();
  memcpy(g->out + g->len, g->base + p->raw_start, n);
  g->len += n;
}

/* Feeds s in pieces ending at cuts[] (the last one = len). */
static bool feed(const uint8_t *s, const size_t *cuts, size_t ncuts, bool head, got *g) {
  g->len = 0;
  g->last_resp = -1;
  g->next_body = 0;
  tp_http_raw *t = tp_http_raw_new();
  if (!t) abort();
  tp_http_raw_restart(t, head);
  size_t at = 0;
  bool ok = true;
  for (size_t i = 0; i < ncuts; i++) {
    g->base = s + at;
    bool r = tp_http_raw_feed(t, g->base, cuts[i] - at, on_piece, g);
    if (!r && ok) ok = false;
    if (r && !ok) abort(); /* lost stays lost */
    at = cuts[i];
  }
  bool lost = tp_http_raw_lost(t);
  if (lost == ok) abort();
  tp_http_raw_free(t);
  return lost;
}

static got g_whole, g_other;

static void same(bool a_lost, bool b_lost) {
  if (a_lost != b_lost || g_whole.len != g_other.len || memcmp(g_whole.out, g_other.out, g_whole.len) != 0)
    abort();
}

static void resume_check(const uint8_t *s, size_t n, bool head);

static void raw_mode(const uint8_t *s, size_t n, bool head) {
  if (n > 4096) n = 4096;
  size_t *cuts = malloc((n + 1) * sizeof(*cuts));
  if (!cuts) return;
  cuts[0] = n;
  bool lost = feed(s, cuts, 1, head, &g_whole);
  for (size_t i = 0; i < n; i++) cuts[i] = i + 1;
  if (n) same(lost, feed(s, cuts, n, head, &g_other));
  for (size_t k = 0; k < 16 && n; k++) {
    size_t two[2] = {(k * 7919 + n / 3) % (n + 1), n};
    same(lost, feed(s, two, 2, head, &g_other));
  }
  size_t m = 0, at = 0;
  for (size_t i = 0; at < n; i++) {
    at += 1 + (i * 31 + s[i % n]) % 17;
    if (at > n) at = n;
    cuts[m++] = at;
  }
  if (n) same(lost, feed(s, cuts, m, head, &g_other));
  free(cuts);
  resume_check(s, n, head);
}

/* Wherever the tracker stands between two chunks, a tracker resumed there
 * (tp_http_raw_resume_chunked, as after bytes the caller could not feed)
 * reads the rest as the first one does. */
static void resume_check(const uint8_t *s, size_t n, bool head) {
  if (n > 4096) n = 4096;
  for (size_t k = 0; k < 16 && n; k++) {
    size_t cut = (k * 131 + n / 2) % (n + 1);
    tp_http_raw *t = tp_http_raw_new();
    if (!t) abort();
    tp_http_raw_restart(t, head);
    tp_http_raw_feed(t, s, cut, NULL, NULL);
    uint64_t body = 0;
    if (tp_http_raw_between_chunks(t, &body)) {
      tp_http_raw *t2 = tp_http_raw_new();
      if (!t2) abort();
      tp_http_raw_resume_chunked(t2, tp_http_raw_resp(t), body);
      g_whole.len = g_other.len = 0;
      g_whole.last_resp = g_other.last_resp = (long long)tp_http_raw_resp(t);
      g_whole.next_body = g_other.next_body = body;
      g_whole.base = g_other.base = s + cut;
      bool a = tp_http_raw_feed(t, s + cut, n - cut, on_piece, &g_whole);
      bool b = tp_http_raw_feed(t2, s + cut, n - cut, on_piece, &g_other);
      if (a != b || tp_http_raw_resp(t) != tp_http_raw_resp(t2)) abort();
      same(!a, !b);
      tp_http_raw_free(t2);
    }
    tp_http_raw_free(t);
  }
}

/* ---- recipes -------------------------------------------------------- */

typedef struct buf {
  uint8_t *p;
  size_t len, cap;
} buf;

static void put(buf *b, const void *s, size_t n) {
  if (b->len + n > b->cap) {
    size_t cap = (b->len + n) * 2 + 64;
    uint8_t *q = realloc(b->p, cap);
    if (!q) abort();
    b->p = q;
    b->cap = cap;
  }
  memcpy(b->p + b->len, s, n);
  b->len += n;
}
static void puts_(buf *b, const char *s) {
  put(b, s, strlen(s));
}

typedef struct rd {
  const uint8_t *p;
  size_t n, i;
} rd;
static unsigned take(rd *r) {
  return r->i < r->n ? r->p[r->i++] : 0;
}

static void recipe_mode(const uint8_t *s, size_t n) {
  rd r = {s, n, 0};
  buf stream = {0}, want = {0};
  const char *eol = (take(&r) & 1) ? "\n" : "\r\n";
  uint64_t resp = 1; /* the index of the first response after restart */
  int responses = 0;
  char line[96];
  while (r.i < r.n && responses < 16) {
    unsigned kind = take(&r) % 6;
    /* Interim responses first, sometimes. */
    for (unsigned k = take(&r) % 3; k > 0; k--) {
      snprintf(line, sizeof(line), "HTTP/1.1 1%02u Info%sX-I: %u%s%s", k == 1 ? 0 : 3, eol, k, eol, eol);
      puts_(&stream, line);
    }
    static const int codes[] = {200, 201, 400, 404, 500, 503};
    int code = kind == 4 ? 204 : kind == 5 ? 304 : codes[take(&r) % 6];
    snprintf(line, sizeof(line), "HTTP/1.%u %d Reason phrase%s", take(&r) & 1, code, eol);
    puts_(&stream, line);
    puts_(&stream, "Server: fuzz");
    puts_(&stream, eol);
    /* The body: up to 64 bytes of the recipe. */
    size_t blen = take(&r) % 65;
    if (blen > r.n - r.i) blen = r.n - r.i;
    const uint8_t *body = r.p + r.i;
    r.i += blen;
    if (kind >= 4 || (kind == 0 && blen == 0)) {
      /* No body (204, 304) or an empty Content-Length body. */
      if (kind == 0) {
        snprintf(line, sizeof(line), "content-length: 0%s", eol);
        puts_(&stream, line);
      }
      puts_(&stream, eol);
    } else if (kind <= 1) {
      snprintf(line, sizeof(line), "Content-Length: %zu%s%s", blen, eol, eol);
      if (kind == 1) snprintf(line, sizeof(line), "Content-Length:  %zu , %zu %s%s", blen, blen, eol, eol);
      puts_(&stream, line);
      put(&stream, body, blen);
    } else {
      snprintf(line, sizeof(line), "Transfer-Encoding: %schunked%s%s", kind == 3 ? "gzip, " : "", eol, eol);
      puts_(&stream, line);
      size_t at = 0;
      while (at < blen) {
        size_t c = 1 + take(&r) % 20;
        if (c > blen - at) c = blen - at;
        unsigned ext = take(&r) % 3;
        snprintf(line, sizeof(line),
                 ext == 0   ? "%zx%s"
                 : ext == 1 ? "%zX;a=b%s"
                            : "%zx ; q=\"x;y\"%s",
                 c, eol);
        puts_(&stream, line);
        put(&stream, body + at, c);
        puts_(&stream, eol);
        at += c;
      }
      snprintf(line, sizeof(line), "0%s", eol);
      puts_(&stream, line);
      if (take(&r) & 1) {
        snprintf(line, sizeof(line), "X-Trailer: t%s", eol);
        puts_(&stream, line);
      }
      puts_(&stream, eol);
    }
    if (kind < 4 && blen > 0) {
      uint8_t mark = 0xff;
      put(&want, &mark, 1);
      put(&want, &resp, 8);
      put(&want, body, blen);
    }
    resp++;
    responses++;
  }
  if (stream.len) {
    size_t one[1] = {stream.len};
    if (feed(stream.p, one, 1, false, &g_whole)) abort();
    if (g_whole.len != want.len || (want.len && memcmp(g_whole.out, want.p, want.len) != 0)) abort();
    /* And in pieces. */
    raw_mode(stream.p, stream.len, false);
  }
  free(stream.p);
  free(want.p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  if (data[0] & 1)
    recipe_mode(data + 1, size - 1);
  else
    raw_mode(data + 1, size - 1, (data[0] & 2) != 0);
  return 0;
}

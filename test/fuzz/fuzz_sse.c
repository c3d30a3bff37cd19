/* Fuzz target: the SSE parser (lib/api/tp_sse.c), and the JSON chunk
 * decoder (lib/api/tp_openai.c) on every event it yields.
 *
 * The input is a response body.  A model reads it in one pass by a direct
 * reading of the event-stream rules: BOM, line ends,
 * fields, dispatch, the size limit.  The parser is then fed the same bytes
 * whole, one byte at a time with empty feeds in between, in two pieces at
 * many offsets and in uneven chunks; every way must give the model's events
 * (type, data, last id, retry) in order, the same result code and the same
 * pending state.  Tried with a 1 MiB limit and a 24-byte one.
 *
 * Every event's data also goes through tp_openai_decode for each API: the
 * result is 0 or TP_EPROTO, nothing is returned after TP_EPROTO, text fits
 * in the input, and decoding again gives the same.  tp_openai_error_text
 * stays within its bound and holds no control bytes.  Any difference
 * abort()s. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/tp_openai.h"
#include "api/tp_sse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_EVENTS 4096

typedef struct mev {
  size_t type_off, type_len; /* into the arena */
  size_t data_off, data_len;
  size_t id_off, id_len;
  int64_t retry;
} mev;

typedef struct model {
  tp_buf arena;
  mev ev[MAX_EVENTS];
  size_t n;
  int rv;
  bool pending;
  bool too_many;
} model;

static size_t arena_put(tp_buf *a, const void *p, size_t n) {
  size_t off = a->len;
  if (tp_buf_append(a, p, n)) abort();
  return off;
}

/* The standard's algorithm, over the whole body at once. */
static void run_model(model *m, const uint8_t *d, size_t size, size_t max) {
  tp_buf_reset(&m->arena);
  m->n = 0;
  m->rv = 0;
  m->pending = false;
  m->too_many = false;
  static const uint8_t bom[3] = {0xEF, 0xBB, 0xBF};
  size_t i = 0;
  if (size < 3 && size > 0 && memcmp(d, bom, size) == 0) {
    m->pending = true; /* maybe the start of a BOM: nothing yet */
    return;
  }
  if (size >= 3 && memcmp(d, bom, 3) == 0) i = 3;
  tp_buf dbuf, type, id;
  tp_buf_init(&dbuf);
  tp_buf_init(&type);
  tp_buf_init(&id);
  int64_t retry = -1;
  while (i < size) {
    size_t j = i;
    while (j < size && d[j] != '\r' && d[j] != '\n') j++;
    const uint8_t *line = d + i;
    size_t n = j - i;
    bool comment = n > 0 && line[0] == ':';
    if (j == size) {
      /* A line without its end: never processed. */
      if (!comment && n > max) m->rv = TP_ETOOBIG;
      m->pending = !comment && n > 0;
      break;
    }
    /* Past the line end: CRLF counts once. */
    i = j + 1;
    if (d[j] == '\r' && i < size && d[i] == '\n') i++;
    if (comment) continue;
    if (n > max) {
      m->rv = TP_ETOOBIG;
      break;
    }
    if (n == 0) {
      if (dbuf.len == 0) {
        tp_buf_reset(&type);
        continue;
      }
      if (m->n == MAX_EVENTS) {
        m->too_many = true;
        break;
      }
      mev *e = &m->ev[m->n++];
      e->data_len = dbuf.len - 1;
      e->data_off = arena_put(&m->arena, dbuf.data, e->data_len);
      if (type.len) {
        e->type_len = type.len;
        e->type_off = arena_put(&m->arena, type.data, type.len);
      } else {
        e->type_len = 7;
        e->type_off = arena_put(&m->arena, "message", 7);
      }
      e->id_len = id.len;
      e->id_off = arena_put(&m->arena, id.data ? id.data : (uint8_t *)"", id.len);
      e->retry = retry;
      tp_buf_reset(&dbuf);
      tp_buf_reset(&type);
      continue;
    }
    size_t c = 0;
    while (c < n && line[c] != ':') c++;
    const uint8_t *v = c < n ? line + c + 1 : line + n;
    size_t vl = (size_t)(line + n - v);
    if (vl > 0 && *v == ' ') v++, vl--;
    if (c == 4 && memcmp(line, "data", 4) == 0) {
      if (dbuf.len + vl + 1 > max) {
        m->rv = TP_ETOOBIG;
        break;
      }
      if (tp_buf_append(&dbuf, v, vl) || tp_buf_append(&dbuf, "\n", 1)) abort();
    } else if (c == 5 && memcmp(line, "event", 5) == 0) {
      tp_buf_reset(&type);
      if (tp_buf_append(&type, v, vl)) abort();
    } else if (c == 2 && memcmp(line, "id", 2) == 0) {
      if (!memchr(v, 0, vl)) {
        tp_buf_reset(&id);
        if (tp_buf_append(&id, v, vl)) abort();
      }
    } else if (c == 5 && memcmp(line, "retry", 5) == 0) {
      bool digits = vl > 0;
      for (size_t k = 0; k < vl; k++) digits &= v[k] >= '0' && v[k] <= '9';
      if (digits) {
        int64_t r = 0;
        for (size_t k = 0; k < vl; k++) r = r > (INT64_MAX - 9) / 10 ? INT64_MAX : r * 10 + (v[k] - '0');
        retry = r;
      }
    }
  }
  if (m->rv == 0 && dbuf.len > 0) m->pending = true;
  tp_buf_fini(&dbuf);
  tp_buf_fini(&type);
  tp_buf_fini(&id);
}

typedef struct check {
  const model *m;
  size_t got;
} check;

static int on_event(tp_sse_parser *p, const tp_sse_event *ev, void *ud) {
  check *c = ud;
  const model *m = c->m;
  if (c->got >= m->n) abort();
  const mev *e = &m->ev[c->got++];
  const uint8_t *a = m->arena.data;
  if (ev->data_len != e->data_len || (e->data_len && memcmp(ev->data, a + e->data_off, e->data_len))) abort();
  if (ev->type_len != e->type_len || memcmp(ev->type, a + e->type_off, e->type_len)) abort();
  if (ev->last_id_len != e->id_len || (e->id_len && memcmp(ev->last_id, a + e->id_off, e->id_len))) abort();
  if (ev->retry_ms != e->retry) abort();
  if (ev->data[ev->data_len] != 0 || ev->type[ev->type_len] != 0 || ev->last_id[ev->last_id_len] != 0)
    abort();
  return 0;
}

typedef size_t (*chunker)(void *state, size_t remaining);

static void run(const model *m, const uint8_t *d, size_t size, size_t max, chunker next, void *state,
                bool empty_feeds) {
  tp_sse_parser p;
  tp_sse_init(&p, max);
  check c = {m, 0};
  size_t off = 0;
  int rv = 0;
  while (off < size && rv == 0) {
    size_t n = next(state, size - off);
    if (n == 0 || n > size - off) n = size - off;
    rv = tp_sse_feed(&p, d + off, n, on_event, &c);
    off += n;
    if (rv == 0 && empty_feeds) rv = tp_sse_feed(&p, d + off, 0, on_event, &c);
  }
  if (rv != m->rv) abort();
  if (c.got != m->n) abort();
  if (rv == 0 && tp_sse_pending(&p) != m->pending) abort();
  if (rv != 0 && tp_sse_feed(&p, (const uint8_t *)"\n\n", 2, on_event, &c) != TP_EINVAL) abort();
  tp_sse_fini(&p);
}

static size_t whole(void *state, size_t remaining) {
  return remaining;
}
static size_t one_byte(void *state, size_t remaining) {
  return 1;
}

typedef struct split2 {
  size_t at;
  int calls;
} split2;

static size_t two_pieces(void *state, size_t remaining) {
  split2 *s = state;
  return s->calls++ == 0 ? s->at : remaining;
}

typedef struct uneven {
  const uint8_t *sizes;
  size_t n, i;
} uneven;

static size_t uneven_chunks(void *state, size_t remaining) {
  uneven *u = state;
  return u->n ? (size_t)(u->sizes[u->i++ % u->n] % 32) + 1 : remaining;
}

static bool same_chunk(const tp_openai_chunk *a, const tp_openai_chunk *b) {
  return a->text_len == b->text_len && a->reasoning_len == b->reasoning_len && !a->error == !b->error &&
         a->has_usage == b->has_usage && a->completion_tokens == b->completion_tokens &&
         a->prompt_tokens == b->prompt_tokens && a->output_tokens == b->output_tokens &&
         !a->finish_reason == !b->finish_reason && (!a->error || strcmp(a->error, b->error) == 0);
}

static int decode_event(tp_sse_parser *p, const tp_sse_event *ev, void *ud) {
  tp_openai_decoder *d = ud;
  for (int api = 0; api < TP_HTTP_API_COUNT; api++) {
    tp_openai_chunk a, b;
    int rv = tp_openai_decode(d, (tp_http_api)api, ev->data, ev->data_len, &a);
    if (rv != 0 && rv != TP_EPROTO) abort();
    if (rv == TP_EPROTO && (a.text || a.error || a.reasoning || a.has_usage)) abort();
    /* Unescaping never makes text longer than the JSON it came from. */
    if (a.text_len > ev->data_len || a.reasoning_len > ev->data_len) abort();
    if ((a.text == NULL) != (a.text_len == 0)) abort();
    if (a.error && strlen(a.error) > 203) abort();
    /* a borrows from d: compare with a second decoder. */
    tp_openai_decoder d2;
    tp_openai_decoder_init(&d2);
    if (tp_openai_decode(&d2, (tp_http_api)api, ev->data, ev->data_len, &b) != rv || !same_chunk(&a, &b))
      abort();
    if (a.text_len && memcmp(a.text, b.text, a.text_len)) abort();
    tp_openai_decoder_fini(&d2);
  }
  char out[64 + 4];
  tp_openai_error_text(ev->data, ev->data_len, 64, out);
  size_t ol = strlen(out);
  if (ol > 67) abort();
  for (size_t i = 0; i < ol; i++)
    if ((unsigned char)out[i] < 0x20) abort();
  bool done = tp_openai_is_done(ev->data, ev->data_len);
  if (done && ev->data_len < 6) abort();
  return 0;
}

static void fuzz_with_limit(const uint8_t *d, size_t size, size_t max) {
  static model m; /* large; static keeps it off the stack (its arena is reused) */
  run_model(&m, d, size, max);
  if (m.too_many) return;
  run(&m, d, size, max, whole, NULL, false);
  run(&m, d, size, max, one_byte, NULL, true);
  size_t step = size <= 512 ? 1 : size / 64;
  for (size_t at = 1; at < size; at += step) {
    split2 s = {at, 0};
    run(&m, d, size, max, two_pieces, &s, false);
  }
  uneven u = {d, size, 0};
  run(&m, d, size, max, uneven_chunks, &u, false);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  fuzz_with_limit(data, size, 1u << 20);
  fuzz_with_limit(data, size, 24);

  tp_sse_parser p;
  tp_openai_decoder d;
  tp_sse_init(&p, 1u << 20);
  tp_openai_decoder_init(&d);
  tp_sse_feed(&p, data, size, decode_event, &d);
  tp_openai_decoder_fini(&d);
  tp_sse_fini(&p);
  return 0;
}

#include "tp_sse.h"

#include <string.h>

static const uint8_t BOM[3] = {0xEF, 0xBB, 0xBF};

void tp_sse_init(tp_sse_parser *p, size_t max_event_bytes) {
  memset(p, 0, sizeof(*p));
  tp_buf_init(&p->line);
  tp_buf_init(&p->data);
  tp_buf_init(&p->type);
  tp_buf_init(&p->id);
  p->retry_ms = -1;
  p->max_event_bytes = max_event_bytes ? max_event_bytes : (1u << 20);
}

void tp_sse_fini(tp_sse_parser *p) {
  tp_buf_fini(&p->line);
  tp_buf_fini(&p->data);
  tp_buf_fini(&p->type);
  tp_buf_fini(&p->id);
}

void tp_sse_reset(tp_sse_parser *p) {
  tp_buf_reset(&p->line);
  tp_buf_reset(&p->data);
  tp_buf_reset(&p->type);
  tp_buf_reset(&p->id);
  p->retry_ms = -1;
  p->bom_have = 0;
  p->bom_done = p->after_cr = p->in_line = p->skip_line = p->failed = false;
}

bool tp_sse_pending(const tp_sse_parser *p) {
  return p->data.len > 0 || (p->in_line && !p->skip_line) || (!p->bom_done && p->bom_have > 0);
}

/* Replaces a buffer's content (the type and id buffers). */
static int buf_set(tp_buf *b, const uint8_t *v, size_t n) {
  tp_buf_reset(b);
  return tp_buf_append(b, v, n);
}

static int dispatch(tp_sse_parser *p, tp_sse_event_cb cb, void *user_data) {
  if (p->data.len == 0) {
    /* No data line: nothing is dispatched and the type is forgotten. */
    tp_buf_reset(&p->type);
    return 0;
  }
  /* The data buffer always ends with the LF its last data line added. */
  p->data.len--;
  p->data.data[p->data.len] = 0;
  tp_sse_event ev;
  ev.type = p->type.len ? (const char *)p->type.data : "message";
  ev.type_len = p->type.len ? p->type.len : 7;
  ev.data = p->data.data;
  ev.data_len = p->data.len;
  ev.last_id = p->id.len ? (const char *)p->id.data : "";
  ev.last_id_len = p->id.len;
  ev.retry_ms = p->retry_ms;
  int rv = cb(p, &ev, user_data);
  tp_buf_reset(&p->data);
  tp_buf_reset(&p->type);
  return rv < 0 ? rv : 0;
}

static bool field_is(const uint8_t *f, size_t n, const char *name) {
  size_t l = strlen(name);
  return n == l && memcmp(f, name, l) == 0;
}

/* One complete line, without its line end. */
static int process_line(tp_sse_parser *p, const uint8_t *line, size_t n, tp_sse_event_cb cb,
                        void *user_data) {
  if (n == 0) return dispatch(p, cb, user_data);
  if (line[0] == ':') return 0; /* comment */
  const uint8_t *colon = memchr(line, ':', n);
  size_t flen = colon ? (size_t)(colon - line) : n;
  const uint8_t *v = colon ? colon + 1 : line + n;
  size_t vlen = (size_t)(line + n - v);
  if (vlen && v[0] == ' ') v++, vlen--;

  if (field_is(line, flen, "data")) {
    if (p->data.len + vlen + 1 > p->max_event_bytes) return TP_ETOOBIG;
    int rv = tp_buf_append(&p->data, v, vlen);
    if (rv == 0) rv = tp_buf_append(&p->data, "\n", 1);
    return rv;
  }
  if (field_is(line, flen, "event")) return buf_set(&p->type, v, vlen);
  if (field_is(line, flen, "id")) {
    /* An id holding NUL is ignored (the standard's rule). */
    if (memchr(v, 0, vlen)) return 0;
    return buf_set(&p->id, v, vlen);
  }
  if (field_is(line, flen, "retry")) {
    if (vlen == 0) return 0;
    int64_t ms = 0;
    for (size_t i = 0; i < vlen; i++) {
      if (v[i] < '0' || v[i] > '9') return 0;
      /* Saturate instead of overflowing on absurd values. */
      ms = ms > (INT64_MAX - 9) / 10 ? INT64_MAX : ms * 10 + (v[i] - '0');
    }
    p->retry_ms = ms;
  }
  return 0; /* other field names are ignored */
}

/* The first CR or LF in [s, s + n), or NULL. */
static const uint8_t *find_eol(const uint8_t *s, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (s[i] == '\n' || s[i] == '\r') return s + i;
  return NULL;
}

static int process(tp_sse_parser *p, const uint8_t *data, size_t len, tp_sse_event_cb cb, void *user_data) {
  size_t off = 0;
  while (off < len) {
    if (p->after_cr) {
      /* CRLF is one line end even when the CR closed the previous feed. */
      p->after_cr = false;
      if (data[off] == '\n') {
        off++;
        continue;
      }
    }
    const uint8_t *s = data + off;
    const uint8_t *e = find_eol(s, len - off);
    size_t n = e ? (size_t)(e - s) : len - off;
    if (!p->in_line) {
      p->skip_line = n > 0 && s[0] == ':';
      if (!e) p->in_line = n > 0;
    } else if (e) {
      p->in_line = false;
    }
    if (!e) {
      /* The line goes on in the next feed: keep it (comments are dropped). */
      if (!p->skip_line) {
        if (p->line.len + n > p->max_event_bytes) return TP_ETOOBIG;
        int rv = tp_buf_append(&p->line, s, n);
        if (rv) return rv;
      }
      return 0;
    }
    int rv = 0;
    if (p->skip_line) {
      p->skip_line = false;
    } else if (p->line.len) {
      if (p->line.len + n > p->max_event_bytes) return TP_ETOOBIG;
      rv = tp_buf_append(&p->line, s, n);
      if (rv == 0) rv = process_line(p, p->line.data, p->line.len, cb, user_data);
      tp_buf_reset(&p->line);
    } else {
      /* The whole line lies in this feed: no copy, and the same limit as a
       * line gathered from several feeds, so results never depend on how
       * the stream was cut. */
      rv = n > p->max_event_bytes ? TP_ETOOBIG : process_line(p, s, n, cb, user_data);
    }
    off += n + 1;
    if (*e == '\r') p->after_cr = true;
    if (rv) return rv;
  }
  return 0;
}

int tp_sse_feed(tp_sse_parser *p, const uint8_t *data, size_t len, tp_sse_event_cb cb, void *user_data) {
  if (p->failed) return TP_EINVAL;
  size_t off = 0;
  int rv = 0;
  /* A BOM may only open the stream, and may arrive a byte at a time. */
  while (!p->bom_done && off < len) {
    if (data[off] == BOM[p->bom_have]) {
      off++;
      if (++p->bom_have == sizeof(BOM)) {
        p->bom_done = true;
        p->bom_have = 0;
      }
      continue;
    }
    /* Not a BOM after all: the bytes matched so far are ordinary content. */
    p->bom_done = true;
    uint8_t had = p->bom_have;
    p->bom_have = 0;
    if (had) rv = process(p, BOM, had, cb, user_data);
    if (rv) break;
  }
  if (rv == 0 && off < len) rv = process(p, data + off, len - off, cb, user_data);
  if (rv) p->failed = true;
  return rv;
}

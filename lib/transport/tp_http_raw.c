/* The body tracker of an HTTP/1.1 response stream (see tp_http_raw.h).
 * Lines are kept only as far as needed to read what frames a body: the
 * status code, Content-Length and Transfer-Encoding, a chunk's size. */
#include "tp_http_raw.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* The longest line prefix kept.  A framing field longer than this (a
 * Content-Length of 230 digits) is not one a real server sends: lost. */
#define LINE_MAX_KEPT 256
/* A chunk size or length above this is refused: body offsets stay far
 * from overflow, and no stream of a benchmark is that long. */
#define LEN_LIMIT (1ULL << 60)

typedef enum st {
  ST_STATUS,    /* reading a status line */
  ST_HEADER,    /* reading header field lines */
  ST_BODY_LEN,  /* a Content-Length body: left bytes to go */
  ST_BODY_EOF,  /* a body that ends with the connection */
  ST_CHUNK_SZ,  /* reading a chunk-size line */
  ST_CHUNK,     /* chunk data: left bytes to go */
  ST_CHUNK_END, /* the line end after chunk data */
  ST_TRAILER,   /* trailer field lines after the last chunk */
  ST_LOST,
} st;

typedef enum field { F_OTHER, F_LENGTH, F_TE } field;

struct tp_http_raw {
  st state;
  uint64_t resp;    /* index of the response being read */
  bool head;        /* the request was a HEAD: no body */
  int status;       /* of the response being read */
  uint64_t body;    /* body bytes of this response so far */
  uint64_t left;    /* ST_BODY_LEN, ST_CHUNK: bytes to go */
  bool has_length;  /* a Content-Length was seen */
  uint64_t length;  /* its value */
  bool has_te;      /* a Transfer-Encoding was seen */
  bool chunked;     /* and its last coding is chunked */
  field last_field; /* of the last header line (an obs-fold continues it) */
  size_t line_len;  /* bytes of the current line, kept or not */
  char line[LINE_MAX_KEPT];
};

tp_http_raw *tp_http_raw_new(void) {
  tp_http_raw *t = calloc(1, sizeof(*t));
  if (t) t->state = ST_STATUS;
  return t;
}

void tp_http_raw_free(tp_http_raw *t) {
  free(t);
}

static void begin_response(tp_http_raw *t) {
  t->state = ST_STATUS;
  t->status = 0;
  t->body = 0;
  t->left = 0;
  t->has_length = t->has_te = t->chunked = false;
  t->last_field = F_OTHER;
  t->line_len = 0;
}

uint64_t tp_http_raw_restart(tp_http_raw *t, bool head) {
  t->resp++;
  t->head = head;
  begin_response(t);
  return t->resp;
}

void tp_http_raw_lose(tp_http_raw *t) {
  t->state = ST_LOST;
}
bool tp_http_raw_lost(const tp_http_raw *t) {
  return t->state == ST_LOST;
}
uint64_t tp_http_raw_resp(const tp_http_raw *t) {
  return t->resp;
}

bool tp_http_raw_between_chunks(const tp_http_raw *t, uint64_t *body) {
  if (t->state != ST_CHUNK_SZ || t->line_len != 0) return false;
  *body = t->body;
  return true;
}

void tp_http_raw_resume_chunked(tp_http_raw *t, uint64_t resp, uint64_t body) {
  begin_response(t);
  t->resp = resp;
  t->head = false;
  t->status = 200;
  t->has_te = t->chunked = true;
  t->body = body;
  t->state = ST_CHUNK_SZ;
}

static bool is_ows(char c) {
  return c == ' ' || c == '\t';
}

/* The final response ended: the next one on the connection may follow. */
static void end_response(tp_http_raw *t) {
  t->resp++;
  t->head = false;
  begin_response(t);
}

/* "HTTP/1.x DDD" and anything after. */
static bool status_line(tp_http_raw *t, const char *s, size_t n) {
  if (n < 12 || memcmp(s, "HTTP/1.", 7) != 0 || s[7] < '0' || s[7] > '9' || s[8] != ' ') return false;
  for (int i = 9; i < 12; i++)
    if (s[i] < '0' || s[i] > '9') return false;
  if (n > 12 && s[12] != ' ') return false;
  t->status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
  return t->status >= 100;
}

/* A Content-Length value: one decimal, or a list of the same one
 * (RFC 9110 section 8.6 lets a recipient accept "5, 5"). */
static bool length_value(tp_http_raw *t, const char *s, const char *e) {
  while (s < e) {
    while (s < e && (is_ows(*s) || *s == ',')) s++;
    if (s == e) break;
    uint64_t v = 0;
    const char *d = s;
    while (s < e && *s >= '0' && *s <= '9') {
      if (v > LEN_LIMIT / 10) return false;
      v = v * 10 + (uint64_t)(*s - '0');
      if (v > LEN_LIMIT) return false;
      s++;
    }
    if (s == d) return false;
    while (s < e && is_ows(*s)) s++;
    if (s < e && *s != ',') return false;
    if (t->has_length && t->length != v) return false;
    t->has_length = true;
    t->length = v;
  }
  return true;
}

/* The codings of a Transfer-Encoding line: what matters is whether the
 * last one (of the last line) is chunked. */
static void te_value(tp_http_raw *t, const char *s, const char *e) {
  const char *last = NULL, *last_end = NULL;
  while (s < e) {
    while (s < e && (is_ows(*s) || *s == ',')) s++;
    if (s == e) break;
    const char *b = s;
    while (s < e && *s != ',' && *s != ';' && !is_ows(*s)) s++;
    last = b;
    last_end = s;
    while (s < e && *s != ',') s++; /* parameters */
  }
  t->has_te = true;
  t->chunked = last && last_end - last == 7 && strncasecmp(last, "chunked", 7) == 0;
}

/* One header field line (without its line end); false: lost. */
static bool header_line(tp_http_raw *t, const char *s, size_t n, bool cut) {
  if (is_ows(s[0])) return t->last_field == F_OTHER; /* obs-fold: a framing field's is ambiguous */
  const char *colon = memchr(s, ':', n);
  if (!colon)
    return cut ? true : false; /* a line without a colon is not a field (a long one: its name is past what we
                                  keep) */
  size_t nl = (size_t)(colon - s);
  const char *v = colon + 1, *e = s + n;
  if (nl == 14 && strncasecmp(s, "Content-Length", 14) == 0) {
    t->last_field = F_LENGTH;
    return !cut && length_value(t, v, e);
  }
  if (nl == 17 && strncasecmp(s, "Transfer-Encoding", 17) == 0) {
    t->last_field = F_TE;
    if (cut) return false;
    te_value(t, v, e);
    return true;
  }
  t->last_field = F_OTHER;
  return true;
}

/* The empty line after the header section: what comes next. */
static bool headers_done(tp_http_raw *t) {
  if (t->status < 200) {
    /* 101 switches the connection to another protocol; other 1xx are
     * interim, and the final response follows. */
    if (t->status == 101) return false;
    bool head = t->head;
    begin_response(t);
    t->head = head;
    return true;
  }
  if (t->head || t->status == 204 || t->status == 304) {
    end_response(t);
    return true;
  }
  if (t->has_te) {
    /* Transfer-Encoding overrides Content-Length (RFC 9112 section 6.3). */
    t->state = t->chunked ? ST_CHUNK_SZ : ST_BODY_EOF;
  } else if (t->has_length) {
    if (t->length == 0)
      end_response(t);
    else {
      t->state = ST_BODY_LEN;
      t->left = t->length;
    }
  } else {
    t->state = ST_BODY_EOF;
  }
  t->line_len = 0;
  return true;
}

/* A chunk-size line: hex digits, then optional whitespace and extensions. */
static bool chunk_size_line(tp_http_raw *t, const char *s, size_t n) {
  uint64_t v = 0;
  size_t i = 0;
  for (; i < n; i++) {
    char c = s[i];
    int d = c >= '0' && c <= '9'   ? c - '0'
            : c >= 'a' && c <= 'f' ? c - 'a' + 10
            : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                   : -1;
    if (d < 0) break;
    if (v > LEN_LIMIT / 16) return false;
    v = v * 16 + (uint64_t)d;
    if (v > LEN_LIMIT) return false;
  }
  if (i == 0 || i == LINE_MAX_KEPT) return false;
  if (i < n && !is_ows(s[i]) && s[i] != ';') return false;
  if (v == 0) {
    t->state = ST_TRAILER;
  } else {
    t->state = ST_CHUNK;
    t->left = v;
  }
  return true;
}

/* A whole line (its end, LF or CRLF, removed) in the current state. */
static bool line_done(tp_http_raw *t) {
  bool cut = t->line_len > LINE_MAX_KEPT;
  size_t n = cut ? LINE_MAX_KEPT : t->line_len;
  const char *s = t->line;
  if (!cut && n > 0 && s[n - 1] == '\r') n--;
  t->line_len = 0;
  switch (t->state) {
    case ST_STATUS:
      if (!status_line(t, s, n)) return false;
      t->state = ST_HEADER;
      return true;
    case ST_HEADER: return n == 0 ? headers_done(t) : header_line(t, s, n, cut);
    case ST_CHUNK_SZ: return chunk_size_line(t, s, n);
    case ST_TRAILER:
      if (n == 0) end_response(t);
      return true;
    default: return false;
  }
}

bool tp_http_raw_feed(tp_http_raw *t, const uint8_t *p, size_t len, tp_http_raw_piece_fn fn, void *ctx) {
  size_t i = 0;
  while (i < len && t->state != ST_LOST) {
    switch (t->state) {
      case ST_BODY_LEN:
      case ST_CHUNK:
      case ST_BODY_EOF: {
        size_t n = len - i;
        if (t->state != ST_BODY_EOF && t->left < n) n = (size_t)t->left;
        if (fn) {
          tp_http_raw_piece pc = {t->resp, t->body, t->body + n, i, i + n};
          fn(ctx, &pc);
        }
        t->body += n;
        i += n;
        if (t->state == ST_BODY_EOF) break;
        t->left -= n;
        if (t->left == 0) {
          if (t->state == ST_BODY_LEN)
            end_response(t);
          else
            t->state = ST_CHUNK_END;
        }
        break;
      }
      case ST_CHUNK_END: {
        uint8_t c = p[i++];
        if (c == '\n')
          t->state = ST_CHUNK_SZ;
        else if (c != '\r')
          t->state = ST_LOST;
        break;
      }
      default: {
        /* A line: keep its prefix, act at its end. */
        const uint8_t *nl = memchr(p + i, '\n', len - i);
        size_t n = nl ? (size_t)(nl - (p + i)) : len - i;
        if (t->line_len < LINE_MAX_KEPT) {
          size_t keep = LINE_MAX_KEPT - t->line_len < n ? LINE_MAX_KEPT - t->line_len : n;
          memcpy(t->line + t->line_len, p + i, keep);
        }
        /* Counted past the kept prefix (saturating), so that a cut line is known. */
        t->line_len = t->line_len + n > LINE_MAX_KEPT ? LINE_MAX_KEPT + 1 : t->line_len + n;
        i += n;
        /* A stream that does not begin like HTTP/1.x (HTTP/2's binary
         * frames, which need not hold a line end) is known lost at once. */
        if (t->state == ST_STATUS) {
          size_t k = t->line_len < 7 ? t->line_len : 7;
          if (memcmp(t->line, "HTTP/1.", k) != 0) {
            t->state = ST_LOST;
            break;
          }
        }
        if (nl) {
          i++;
          if (!line_done(t)) t->state = ST_LOST;
        }
        break;
      }
    }
  }
  return t->state != ST_LOST;
}

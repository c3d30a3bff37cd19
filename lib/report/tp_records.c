/* The records file: writing a request's line, reading its per-response data
 * back.  See tp_records.h. */
#define _FILE_OFFSET_BITS 64
#include "tp_records.h"
#include "tokperf/tokperf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <fcntl.h>
#include <unistd.h>

#include <jansson.h>

/* JSON strings must be valid UTF-8; a server may send anything.  Invalid
 * bytes become U+FFFD (and a NUL byte U+FFFD too), the rest is kept. */
/* Where each response's text begins (tp_record.resp_text_at), as the line
 * says it: the byte of "text", -1 - k for byte k of "reasoning", null for
 * a response without text. */
static json_t *text_at_json(const tp_record *rec) {
  json_t *a = json_array();
  for (uint32_t i = 0; a && i < rec->n_resp; i++) {
    uint32_t v = rec->resp_text_at[i];
    json_int_t k = (json_int_t)(v & ~TP_RECORD_AT_REASONING);
    json_array_append_new(a, v == TP_RECORD_NO_TEXT            ? json_null()
                             : (v & TP_RECORD_AT_REASONING) ? json_integer(-1 - k)
                                                            : json_integer(k));
  }
  return a;
}

static json_t *json_text(const uint8_t *p, size_t n) {
  json_t *v = json_stringn(p ? (const char *)p : "", p ? n : 0);
  if (v) return v;
  tp_buf b;
  tp_buf_init(&b);
  for (size_t i = 0; i < n;) {
    size_t len = tp_utf8_valid_prefix(p + i, n - i);
    if (len && tp_buf_append(&b, p + i, len)) break;
    i += len;
    if (i < n) {
      tp_buf_append(&b, "\xef\xbf\xbd", 3);
      i++;
    }
  }
  v = json_stringn(b.data ? (const char *)b.data : "", b.len);
  tp_buf_fini(&b);
  return v ? v : json_string("");
}

char *tp_records_format(const tp_record *rec, const tp_records_line *l) {
  json_t *o = json_object();
  if (!o) return NULL;
  if (l->mode == TP_LOAD_CONCURRENCY) json_object_set_new(o, "concurrency", json_integer(l->concurrency));
  if (l->mode == TP_LOAD_RATE) json_object_set_new(o, "request_rate", json_real(l->rate));
  json_object_set_new(o, "id", json_string(l->id ? l->id : ""));
  json_object_set_new(o, "level", json_integer((json_int_t)l->level));
  if (l->with_rank) json_object_set_new(o, "rank", json_integer(rec->rank));
  json_object_set_new(o, "seq", json_integer((json_int_t)rec->seq));
  json_object_set_new(o, "warmup", json_boolean(rec->warmup));
  json_object_set_new(o, "resends", json_integer(rec->resends));
  json_object_set_new(o, "prompt_index", json_integer(rec->prompt_index));
  if (rec->session) {
    /* Sessions (docs/sessions.md): the file's id, the session's number in
     * the level (a file's session may run more than once) and the turn. */
    json_object_set_new(o, "session_id", json_string(l->session_id ? l->session_id : ""));
    json_object_set_new(o, "session", json_integer((json_int_t)rec->session - 1));
    json_object_set_new(o, "turn", json_integer(rec->turn));
  }
  json_object_set_new(o, "max_tokens", json_integer(rec->max_tokens));
  json_object_set_new(o, "planned_ns", json_integer((json_int_t)rec->planned_ns));
  json_object_set_new(o, "sent_ns", json_integer((json_int_t)rec->sent_ns));
  json_object_set_new(o, "first_token_ns", json_integer((json_int_t)rec->first_token_ns));
  json_object_set_new(o, "second_token_ns", json_integer((json_int_t)rec->second_token_ns));
  json_object_set_new(o, "first_answer_ns", json_integer((json_int_t)rec->first_answer_ns));
  json_object_set_new(o, "last_token_ns", json_integer((json_int_t)rec->last_token_ns));
  json_object_set_new(o, "done_ns", json_integer((json_int_t)rec->done_ns));
  json_t *rs = json_array();
  for (uint32_t i = 0; i < rec->n_resp; i++) json_array_append_new(rs, json_integer((json_int_t)rec->resp_ns[i]));
  json_object_set_new(o, "response_ns", rs);
  if (rec->resp_text_at) json_object_set_new(o, "response_text_at", text_at_json(rec));
  json_object_set_new(o, "input_tokens", rec->input_tokens >= 0 ? json_integer(rec->input_tokens) : json_null());
  json_object_set_new(o, "output_tokens", rec->output_tokens >= 0 ? json_integer(rec->output_tokens) : json_null());
  json_object_set_new(o, "server_output_tokens",
                      rec->server_output_tokens >= 0 ? json_integer(rec->server_output_tokens) : json_null());
  json_object_set_new(o, "ok", json_boolean(tp_record_ok(rec)));
  json_object_set_new(o, "error_class", json_string(tp_error_class_name(rec->err_class)));
  json_object_set_new(o, "grpc_status", rec->grpc_status >= 0 ? json_integer(rec->grpc_status) : json_null());
  json_object_set_new(o, "error",
                      rec->err_msg ? json_text((const uint8_t *)rec->err_msg, strlen(rec->err_msg)) : json_null());
  json_object_set_new(o, "text", json_text(rec->text.data, rec->text.len));
  if (rec->reasoning.len) json_object_set_new(o, "reasoning", json_text(rec->reasoning.data, rec->reasoning.len));
  char *body = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
  json_decref(o);
  if (!body) return NULL;
  /* "measured" first, at a fixed place, so it can be set in place. */
  const char *m = l->measured == TP_RECORD_MEASURED ? "true," : "false,";
  size_t klen = strlen(TP_RECORDS_MEASURED_KEY), mlen = strlen(m), blen = strlen(body);
  char *line = malloc(klen + mlen + blen);
  if (line) {
    memcpy(line, TP_RECORDS_MEASURED_KEY, klen);
    memcpy(line + klen, m, mlen);
    memcpy(line + klen + mlen, body + 1, blen); /* past body's '{', with its NUL */
  }
  free(body);
  return line;
}

int tp_records_mark_measured(const char *path, uint64_t *from, size_t level,
                             bool (*measured)(void *ctx, uint64_t seq, uint32_t rank), void *ctx, char *err,
                             size_t errlen) {
  struct stat st;
  if (stat(path, &st) || !S_ISREG(st.st_mode)) {
    tp_seterr(err, errlen, "cannot mark the measured requests in the records file %s: not a regular file", path);
    return TP_EIO;
  }
  FILE *fp = fopen(path, "r+b");
  if (!fp || fseeko(fp, (off_t)*from, SEEK_SET)) {
    tp_seterr(err, errlen, "cannot mark the measured requests in the records file %s: %s", path, strerror(errno));
    if (fp) fclose(fp);
    return TP_EIO;
  }
  const size_t klen = strlen(TP_RECORDS_MEASURED_KEY);
  char *line = NULL;
  size_t cap = 0;
  ssize_t n;
  off_t at = (off_t)*from;
  int rv = 0;
  while ((n = getline(&line, &cap, fp)) > 0) {
    off_t next = at + n;
    if ((size_t)n > klen + 5 && memcmp(line, TP_RECORDS_MEASURED_KEY, klen) == 0 &&
        memcmp(line + klen, "false", 5) == 0)
    {
      json_t *o = json_loadb(line, (size_t)n, 0, NULL);
      json_t *lv = json_object_get(o, "level"), *sq = json_object_get(o, "seq"), *rk = json_object_get(o, "rank");
      if (json_is_integer(lv) && (size_t)json_integer_value(lv) == level && json_is_integer(sq) &&
          measured(ctx, (uint64_t)json_integer_value(sq), rk ? (uint32_t)json_integer_value(rk) : 0))
      {
        if (fseeko(fp, at + (off_t)klen, SEEK_SET) || fwrite("true ", 1, 5, fp) != 5 || fseeko(fp, next, SEEK_SET)) {
          tp_seterr(err, errlen, "cannot mark the measured requests in the records file %s at byte %lld: %s", path,
                    (long long)at, strerror(errno));
          rv = TP_EIO;
        }
      }
      json_decref(o);
      if (rv) break;
    }
    at = next;
  }
  free(line);
  if (fclose(fp) && !rv) {
    tp_seterr(err, errlen, "cannot mark the measured requests in the records file %s: %s", path, strerror(errno));
    rv = TP_EIO;
  }
  if (!rv) *from = (uint64_t)at;
  return rv;
}

static bool lossless_text(const tp_buf *b) {
  return !b->len || tp_utf8_valid_prefix(b->data, b->len) == b->len;
}

bool tp_records_lossless(const tp_record *rec) {
  return lossless_text(&rec->text) && lossless_text(&rec->reasoning);
}

/* ------------------------------------------------------------------------ */
/* Reading a line                                                           */

/* JSON (RFC 8259) read in place: only the fields the read-back needs are
 * kept, everything else is checked and skipped. */
typedef struct scan {
  const unsigned char *p, *end;
} scan;

/* Deeper than any line this file writes (2); a line nested deeper was not
 * written by tokperf, and recursion stays bounded. */
#define SCAN_MAX_DEPTH 256

static void sc_ws(scan *s) {
  while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r')) s->p++;
}

static bool sc_at(scan *s, unsigned char c) {
  sc_ws(s);
  if (s->p >= s->end || *s->p != c) return false;
  s->p++;
  return true;
}

static int hex4(const unsigned char *p, uint32_t *v) {
  uint32_t x = 0;
  for (int i = 0; i < 4; i++) {
    unsigned c = p[i], l = c | 0x20u;
    if (c >= '0' && c <= '9')
      x = x << 4 | (c - '0');
    else if (l >= 'a' && l <= 'f')
      x = x << 4 | (l - 'a' + 10);
    else
      return -1;
  }
  *v = x;
  return 0;
}

static size_t put_utf8(unsigned char *o, uint32_t cp) {
  if (cp < 0x80) return o[0] = (unsigned char)cp, 1;
  if (cp < 0x800) return o[0] = (unsigned char)(0xC0 | cp >> 6), o[1] = (unsigned char)(0x80 | (cp & 0x3F)), 2;
  if (cp < 0x10000) {
    o[0] = (unsigned char)(0xE0 | cp >> 12);
    o[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    o[2] = (unsigned char)(0x80 | (cp & 0x3F));
    return 3;
  }
  o[0] = (unsigned char)(0xF0 | cp >> 18);
  o[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
  o[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
  o[3] = (unsigned char)(0x80 | (cp & 0x3F));
  return 4;
}

/* \uXXXX at s->p (past the backslash and u), a surrogate pair whole. */
static int sc_unicode(scan *s, uint32_t *cp) {
  if (s->end - s->p < 4 || hex4(s->p, cp)) return TP_EPROTO;
  s->p += 4;
  if (*cp >= 0xDC00 && *cp <= 0xDFFF) return TP_EPROTO;
  if (*cp < 0xD800 || *cp > 0xDBFF) return 0;
  uint32_t lo;
  if (s->end - s->p < 6 || s->p[0] != '\\' || s->p[1] != 'u' || hex4(s->p + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
    return TP_EPROTO;
  s->p += 6;
  *cp = 0x10000 + ((*cp - 0xD800) << 10) + (lo - 0xDC00);
  return 0;
}

/* A string at s->p, decoded into out (NULL: only checked). */
static int sc_string(scan *s, tp_buf *out) {
  if (!sc_at(s, '"')) return TP_EPROTO;
  for (;;) {
    const unsigned char *run = s->p;
    unsigned hi = 0;
    while (s->p < s->end && *s->p != '"' && *s->p != '\\' && *s->p >= 0x20) hi |= *s->p++;
    size_t n = (size_t)(s->p - run);
    /* A run ends only at ASCII bytes, which no valid sequence holds; a run
     * of ASCII (every line tokperf writes) needs no check. */
    if ((hi & 0x80) && tp_utf8_valid_prefix(run, n) != n) return TP_EPROTO;
    if (n && out && tp_buf_append(out, run, n)) return TP_ENOMEM;
    if (s->p >= s->end || *s->p < 0x20) return TP_EPROTO;
    if (*s->p++ == '"') return 0;
    if (s->p >= s->end) return TP_EPROTO;
    unsigned char c = *s->p++, u[4];
    size_t k = 1;
    switch (c) {
      case '"': case '\\': case '/': u[0] = c; break;
      case 'b': u[0] = '\b'; break;
      case 'f': u[0] = '\f'; break;
      case 'n': u[0] = '\n'; break;
      case 'r': u[0] = '\r'; break;
      case 't': u[0] = '\t'; break;
      case 'u': {
        uint32_t cp;
        if (sc_unicode(s, &cp)) return TP_EPROTO;
        k = put_utf8(u, cp);
        break;
      }
      default: return TP_EPROTO;
    }
    if (out && tp_buf_append(out, u, k)) return TP_ENOMEM;
  }
}

static bool digit(const scan *s, const unsigned char *p) { return p < s->end && *p >= '0' && *p <= '9'; }

/* A number; *is_int when it has neither fraction nor exponent, and then *v
 * its value as a signed 64-bit integer (beyond that range it is refused,
 * as by a reader that keeps integers as such). */
static int sc_number(scan *s, bool *is_int, uint64_t *v) {
  sc_ws(s);
  const unsigned char *p = s->p;
  bool neg = p < s->end && *p == '-', over = false;
  p += neg;
  if (!digit(s, p)) return TP_EPROTO;
  uint64_t x = 0;
  if (*p == '0')
    p++;
  else
    for (; digit(s, p); p++) {
      unsigned d = *p - '0';
      if (x > (UINT64_MAX - d) / 10) over = true;
      x = x * 10 + d;
    }
  *is_int = true;
  if (p < s->end && *p == '.') {
    *is_int = false;
    if (!digit(s, ++p)) return TP_EPROTO;
    while (digit(s, p)) p++;
  }
  if (p < s->end && (*p | 0x20) == 'e') {
    *is_int = false;
    p++;
    if (p < s->end && (*p == '+' || *p == '-')) p++;
    if (!digit(s, p)) return TP_EPROTO;
    while (digit(s, p)) p++;
  }
  if (*is_int && (over || x > (uint64_t)INT64_MAX + neg)) return TP_EPROTO;
  s->p = p;
  *v = neg ? 0 - x : x;
  return 0;
}

static int sc_word(scan *s, const char *w) {
  size_t n = strlen(w);
  if ((size_t)(s->end - s->p) < n || memcmp(s->p, w, n) != 0) return TP_EPROTO;
  s->p += n;
  return 0;
}

/* Any value, checked and skipped. */
static int sc_skip(scan *s, int depth) {
  sc_ws(s);
  if (s->p >= s->end) return TP_EPROTO;
  unsigned char c = *s->p;
  bool is_int;
  uint64_t v;
  if (c == '"') return sc_string(s, NULL);
  if (c == 't') return sc_word(s, "true");
  if (c == 'f') return sc_word(s, "false");
  if (c == 'n') return sc_word(s, "null");
  if (c != '{' && c != '[') return sc_number(s, &is_int, &v);
  if (depth >= SCAN_MAX_DEPTH) return TP_EPROTO;
  unsigned char close = c == '{' ? '}' : ']';
  s->p++;
  if (sc_at(s, close)) return 0;
  for (;;) {
    int rv;
    if (close == '}' && ((rv = sc_string(s, NULL)) != 0 || (rv = sc_at(s, ':') ? 0 : TP_EPROTO) != 0)) return rv;
    if ((rv = sc_skip(s, depth + 1)) != 0) return rv;
    if (sc_at(s, close)) return 0;
    if (!sc_at(s, ',')) return TP_EPROTO;
  }
}

static int sc_resp(scan *s, tp__records_fields *f) {
  f->has_resp = f->resp_ints = false;
  f->n_resp = 0;
  sc_ws(s);
  if (s->p >= s->end || *s->p != '[') return sc_skip(s, 1);
  s->p++;
  f->has_resp = f->resp_ints = true;
  if (sc_at(s, ']')) return 0;
  for (;;) {
    sc_ws(s);
    bool is_int = false;
    uint64_t v = 0;
    int rv = s->p < s->end && (*s->p == '-' || digit(s, s->p)) ? sc_number(s, &is_int, &v) : sc_skip(s, 2);
    if (rv) return rv;
    if (!is_int) f->resp_ints = false;
    if (f->n_resp == f->cap_resp) {
      size_t cap = f->cap_resp ? 2 * f->cap_resp : 16;
      uint64_t *p = realloc(f->resp_ns, cap * sizeof(*p));
      if (!p) return TP_ENOMEM;
      f->resp_ns = p;
      f->cap_resp = cap;
    }
    f->resp_ns[f->n_resp++] = v;
    if (sc_at(s, ']')) return 0;
    if (!sc_at(s, ',')) return TP_EPROTO;
  }
}

/* "response_text_at": null, or an offset as text_at_json writes it. */
static int sc_text_at(scan *s, tp__records_fields *f) {
  f->has_at = f->at_ok = false;
  f->n_at = 0;
  sc_ws(s);
  if (s->p >= s->end || *s->p != '[') return sc_skip(s, 1);
  s->p++;
  f->has_at = f->at_ok = true;
  if (sc_at(s, ']')) return 0;
  for (;;) {
    sc_ws(s);
    bool is_int = false;
    uint64_t v = 0;
    uint32_t at = TP_RECORD_NO_TEXT;
    bool null = s->p < s->end && *s->p == 'n'; /* sc_skip takes only "null" there */
    int rv = s->p < s->end && (*s->p == '-' || digit(s, s->p)) ? sc_number(s, &is_int, &v) : sc_skip(s, 2);
    if (rv) return rv;
    int64_t x = (int64_t)v;
    if (is_int && x >= 0 && x <= TP_RECORD_AT_MAX)
      at = (uint32_t)x;
    else if (is_int && x < 0 && -1 - x <= TP_RECORD_AT_MAX)
      at = (uint32_t)(-1 - x) | TP_RECORD_AT_REASONING;
    else if (!null)
      f->at_ok = false;
    if (f->n_at == f->cap_at) {
      size_t cap = f->cap_at ? 2 * f->cap_at : 16;
      uint32_t *p = realloc(f->text_at, cap * sizeof(*p));
      if (!p) return TP_ENOMEM;
      f->text_at = p;
      f->cap_at = cap;
    }
    f->text_at[f->n_at++] = at;
    if (sc_at(s, ']')) return 0;
    if (!sc_at(s, ',')) return TP_EPROTO;
  }
}

typedef struct key {
  const unsigned char *p;
  size_t n;
} key;

static bool key_is(key k, const char *name) {
  size_t n = strlen(name);
  return k.n == n && memcmp(k.p, name, n) == 0;
}

/* A member's name: where it stands in the line when it is plain ASCII
 * without escapes (as every name tokperf writes), else decoded into
 * scratch. */
static int sc_key(scan *s, tp_buf *scratch, key *k) {
  sc_ws(s);
  if (s->p < s->end && *s->p == '"') {
    const unsigned char *q = s->p + 1;
    while (q < s->end && *q != '"' && *q != '\\' && *q >= 0x20 && *q < 0x80) q++;
    if (q < s->end && *q == '"') {
      k->p = s->p + 1;
      k->n = (size_t)(q - k->p);
      s->p = q + 1;
      return 0;
    }
  }
  tp_buf_reset(scratch);
  int rv = sc_string(s, scratch);
  k->p = scratch->data ? scratch->data : (const unsigned char *)"";
  k->n = scratch->len;
  return rv;
}

/* The value of one member, kept when it is one the read-back needs. */
static int sc_member(scan *s, tp__records_fields *f, key name) {
  if (key_is(name, "seq")) {
    sc_ws(s);
    f->has_seq = false;
    if (s->p < s->end && (*s->p == '-' || digit(s, s->p))) return sc_number(s, &f->has_seq, &f->seq);
    return sc_skip(s, 1);
  }
  if (key_is(name, "response_ns")) return sc_resp(s, f);
  if (key_is(name, "response_text_at")) return sc_text_at(s, f);
  tp_buf *into = key_is(name, "text") ? &f->text : key_is(name, "reasoning") ? &f->reasoning : NULL;
  if (!into) return sc_skip(s, 1);
  tp_buf_reset(into);
  sc_ws(s);
  return s->p < s->end && *s->p == '"' ? sc_string(s, into) : sc_skip(s, 1);
}

int tp__records_scan(const char *line, size_t n, tp__records_fields *f) {
  scan s = {(const unsigned char *)line, (const unsigned char *)line + n};
  f->has_seq = f->has_resp = f->resp_ints = f->has_at = f->at_ok = false;
  f->n_resp = f->n_at = 0;
  tp_buf_reset(&f->text);
  tp_buf_reset(&f->reasoning);
  tp_buf scratch; /* a name with escapes, decoded */
  tp_buf_init(&scratch);
  int rv = sc_at(&s, '{') ? 0 : TP_EPROTO;
  if (rv == 0 && !sc_at(&s, '}')) {
    for (;;) {
      key name;
      if ((rv = sc_key(&s, &scratch, &name)) != 0) break;
      if (!sc_at(&s, ':')) {
        rv = TP_EPROTO;
        break;
      }
      if ((rv = sc_member(&s, f, name)) != 0) break;
      if (sc_at(&s, '}')) break;
      if (!sc_at(&s, ',')) {
        rv = TP_EPROTO;
        break;
      }
    }
  }
  tp_buf_fini(&scratch);
  sc_ws(&s);
  if (rv == 0 && s.p != s.end) rv = TP_EPROTO;
  return rv;
}

void tp__records_fields_fini(tp__records_fields *f) {
  free(f->resp_ns);
  free(f->text_at);
  tp_buf_fini(&f->text);
  tp_buf_fini(&f->reasoning);
  memset(f, 0, sizeof(*f));
}

/* ------------------------------------------------------------------------ */
/* Reading back                                                             */

struct tp_records_reader {
  int fd;
  char *path;
  /* A window of the file: bytes [win_off, win_off + win_len).  The exports
   * ask for lines in request order, the file holds them in the order
   * requests ended: close together, not in sequence.  One read of a window
   * that reaches back a little serves the lines around it; a seek and a
   * read per line (stdio throws its buffer away at every seek) cost a
   * fifth of the read-back. */
  char *win;
  size_t win_cap, win_len;
  uint64_t win_off;
  bool win_eof;         /* the window ends where the file did */
  /* The file as the window was read (size, modification time), checked
   * again when the window is older than TRUST_NS: a file that changed under
   * the run must still be reported, not read from a stale window. */
  off_t win_size;
  struct timespec win_mtim;
  uint64_t win_checked_ns;
  tp__records_fields f; /* what the last load filled in; reused */
  char last_err[512];   /* the last load's failure, "" = none */
};

#define WINDOW ((size_t)1 << 20)
#define BEHIND ((uint64_t)256 << 10)
#define TRUST_NS ((uint64_t)100 * 1000)

const char *tp_records_reader_error(const tp_records_reader *rd) {
  return rd && rd->last_err[0] ? rd->last_err : NULL;
}

int tp_records_reader_open(tp_records_reader **out, const char *path, char *err, size_t errlen) {
  *out = NULL;
  tp_records_reader *rd = calloc(1, sizeof(*rd));
  if (!rd || !(rd->path = tp_strndup(path, strlen(path)))) {
    free(rd);
    tp_seterr(err, errlen, "cannot read back the records file %s: out of memory", path);
    return TP_ENOMEM;
  }
  rd->fd = open(path, O_RDONLY | O_CLOEXEC);
  if (rd->fd < 0) {
    tp_seterr(err, errlen, "cannot read back the records file %s: %s (the exports need its response times)",
              path, strerror(errno));
    free(rd->path);
    free(rd);
    return TP_EIO;
  }
  *out = rd;
  return 0;
}

void tp_records_reader_free(tp_records_reader *rd) {
  if (!rd) return;
  close(rd->fd);
  free(rd->path);
  free(rd->win);
  tp__records_fields_fini(&rd->f);
  free(rd);
}

static int bad_line(const tp_records_reader *rd, uint64_t off, const tp_record *rec, const char *what, char *err,
                    size_t errlen) {
  tp_seterr(err, errlen,
            "the records file %s changed under the run: the line at byte %" PRIu64 " (request seq %" PRIu64
            ") %s; keep the file untouched until the run ends",
            rd->path, off, rec->seq, what);
  return TP_EPROTO;
}

/* Checks that the line read is rec's. */
static int check(const tp_records_reader *rd, uint64_t off, const tp_record *rec, char *err, size_t errlen) {
  const tp__records_fields *f = &rd->f;
  if (!f->has_seq || f->seq != rec->seq) return bad_line(rd, off, rec, "is another request's", err, errlen);
  if (!f->has_resp || f->n_resp != rec->n_resp)
    return bad_line(rd, off, rec, "has another number of response times", err, errlen);
  if (!f->resp_ints) return bad_line(rd, off, rec, "has a response time that is not an integer", err, errlen);
  if (f->has_at && f->n_at != rec->n_resp)
    return bad_line(rd, off, rec, "has another number of response text offsets", err, errlen);
  if (f->has_at && !f->at_ok)
    return bad_line(rd, off, rec, "has a response text offset that is not one", err, errlen);
  return 0;
}

static int load(tp_records_reader *rd, const tp_record *rec, tp_record *full, char *err, size_t errlen);

int tp_records_load(tp_records_reader *rd, const tp_record *rec, tp_record *full, char *err, size_t errlen) {
  if (!rd) return load(rd, rec, full, err, errlen);
  rd->last_err[0] = 0;
  int rv = load(rd, rec, full, rd->last_err, sizeof(rd->last_err));
  if (rv) tp_seterr(err, errlen, "%s", rd->last_err);
  return rv;
}

static int read_window(tp_records_reader *rd, uint64_t start, size_t want) {
  if (want > rd->win_cap) {
    char *w = realloc(rd->win, want);
    if (!w) return TP_ENOMEM;
    rd->win = w;
    rd->win_cap = want;
  }
  size_t got = 0;
  while (got < want) {
    ssize_t r = pread(rd->fd, rd->win + got, want - got, (off_t)(start + got));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      rd->win_len = 0; /* nothing trustworthy is left in the window */
      return TP_EIO;
    }
    if (r == 0) break;
    got += (size_t)r;
  }
  rd->win_off = start;
  rd->win_len = got;
  rd->win_eof = got < want;
  struct stat st;
  if (fstat(rd->fd, &st) == 0) {
    rd->win_size = st.st_size;
    rd->win_mtim = st.st_mtim;
  }
  rd->win_checked_ns = tp_now_ns();
  return 0;
}

/* Drops the window when the file is no longer the one it was read from. */
static void check_window(tp_records_reader *rd) {
  uint64_t now = tp_now_ns();
  if (!rd->win_len || now - rd->win_checked_ns < TRUST_NS) return;
  rd->win_checked_ns = now;
  struct stat st;
  if (fstat(rd->fd, &st) != 0 || st.st_size != rd->win_size || st.st_mtim.tv_sec != rd->win_mtim.tv_sec ||
      st.st_mtim.tv_nsec != rd->win_mtim.tv_nsec)
    rd->win_len = 0;
}

/* The line that begins at byte off: *line, and *n bytes with its newline
 * (without one at the file's end; 0 when the file ends at off or before).
 * Returns 0, TP_EIO (errno set) or TP_ENOMEM. */
static int line_at(tp_records_reader *rd, uint64_t off, const char **line, size_t *n) {
  uint64_t start = off > BEHIND ? (off - BEHIND) & ~(uint64_t)4095 : 0;
  size_t want = WINDOW;
  check_window(rd);
  for (;;) {
    if (rd->win_len && off >= rd->win_off && off - rd->win_off <= rd->win_len) {
      size_t at = (size_t)(off - rd->win_off), left = rd->win_len - at;
      const char *p = rd->win + at, *nl = memchr(p, '\n', left);
      if (nl || rd->win_eof) {
        *line = p;
        *n = nl ? (size_t)(nl - p) + 1 : left;
        return 0;
      }
      /* The line runs past the window: a window from the line, twice as
       * long when the line filled a whole one. */
      start = off;
      want = at == 0 ? 2 * rd->win_len : WINDOW;
    }
    int rv = read_window(rd, start, want);
    if (rv) return rv;
    if (rd->win_eof && off - rd->win_off >= rd->win_len) { /* start <= off: the file ends before the line */
      *n = 0;
      return 0;
    }
  }
}

static int load(tp_records_reader *rd, const tp_record *rec, tp_record *full, char *err, size_t errlen) {
  *full = *rec;
  if (!rec->line_off) return 0;
  if (!rd) {
    tp_seterr(err, errlen, "request seq %" PRIu64 " was let go of, but no records file is open to read it back",
              rec->seq);
    return TP_EINVAL;
  }
  uint64_t off = rec->line_off - 1;
  const char *line;
  size_t n;
  int rv = line_at(rd, off, &line, &n);
  if (rv) {
    tp_seterr(err, errlen, "cannot read back the records file %s at byte %" PRIu64 ": %s", rd->path, off,
              rv == TP_ENOMEM ? "out of memory" : strerror(errno));
    return rv;
  }
  if (n == 0) return bad_line(rd, off, rec, "is missing (the file is shorter)", err, errlen);
  rv = tp__records_scan(line, n, &rd->f);
  if (rv == TP_ENOMEM) {
    tp_seterr(err, errlen, "cannot read back the records file %s: out of memory", rd->path);
    return rv;
  }
  if (rv) return bad_line(rd, off, rec, "is not a JSON object", err, errlen);
  if ((rv = check(rd, off, rec, err, errlen)) != 0) return rv;
  full->resp_ns = rd->f.resp_ns;
  full->resp_text_at = rd->f.has_at ? rd->f.text_at : NULL;
  full->cap_resp = rec->n_resp;
  full->text = rd->f.text;
  full->reasoning = rd->f.reasoning;
  full->line_off = 0;
  return 0;
}

/* The records file: writing a request's line, reading its per-response data
 * back.  See tp_records.h. */
#define _FILE_OFFSET_BITS 64
#include "tp_records.h"
#include "tokperf/tokperf.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <fcntl.h>
#include <unistd.h>

#include <jansson.h>

#include "report/tp_export_internal.h"
#include "util/tp_utf8.h"

/* A line is written directly, not built as a jansson tree and dumped: at
 * tens of thousands of requests a second the tree (an allocation per
 * member) and its dump were most of what a finished request cost.  The
 * output is what json_dumps(JSON_COMPACT | JSON_ENSURE_ASCII) gave for the
 * same members in the same order (a unit test holds the two together). */

static void put_i64(tp_buf *b, int64_t v) {
  if (v < 0) {
    tp_buf_append(b, "-", 1);
    tp__json_u64(b, (uint64_t)0 - (uint64_t)v);
  } else {
    tp__json_u64(b, (uint64_t)v);
  }
}

/* A double as jansson writes a real: %.17g, with ".0" when that reads as
 * an integer, and the exponent without '+' or leading zeros. */
static void put_real(tp_buf *b, double v) {
  char t[40];
  int n = snprintf(t, sizeof(t), "%.17g", v);
  if (n <= 0 || (size_t)n >= sizeof(t) - 3) return;
  if (!strchr(t, '.') && !strchr(t, 'e')) {
    memcpy(t + n, ".0", 3);
    n += 2;
  }
  char *e = strchr(t, 'e');
  if (e) {
    char *from = e + 1, *to = e + 1;
    if (*from == '-') from++, to++;
    else if (*from == '+') from++;
    while (*from == '0' && from[1]) from++;
    memmove(to, from, strlen(from) + 1);
    n = (int)strlen(t);
  }
  tp_buf_append(b, t, (size_t)n);
}

static void put_u_escape(tp_buf *b, uint32_t cp) {
  static const char hex[] = "0123456789ABCDEF";
  char e[6] = {'\\', 'u', hex[cp >> 12 & 15], hex[cp >> 8 & 15], hex[cp >> 4 & 15], hex[cp & 15]};
  tp_buf_append(b, e, 6);
}

/* A JSON string of valid UTF-8, every character past ASCII as \uXXXX (a
 * surrogate pair past the BMP).  Runs that need no escape are copied whole. */
static void put_escaped(tp_buf *b, const uint8_t *p, size_t n) {
  tp_buf_reserve(b, n + 2);
  tp_buf_append(b, "\"", 1);
  size_t i = 0;
  while (i < n) {
    size_t run = i;
    while (run < n && p[run] >= 0x20 && p[run] < 0x80 && p[run] != '"' && p[run] != '\\') run++;
    if (run > i) tp_buf_append(b, p + i, run - i);
    i = run;
    if (i >= n) break;
    uint8_t c = p[i];
    if (c < 0x80) {
      const char *e = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\b' ? "\\b" : c == '\f' ? "\\f"
                    : c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
      if (e)
        tp_buf_append(b, e, 2);
      else
        put_u_escape(b, c);
      i++;
      continue;
    }
    size_t k = tp_utf8_lead_len(c);
    uint32_t cp = k == 2 ? c & 0x1Fu : k == 3 ? c & 0x0Fu : c & 0x07u;
    for (size_t j = 1; j < k && i + j < n; j++) cp = cp << 6 | (p[i + j] & 0x3Fu);
    i += k;
    if (cp < 0x10000) {
      put_u_escape(b, cp);
    } else {
      cp -= 0x10000;
      put_u_escape(b, 0xD800 | (cp >> 10));
      put_u_escape(b, 0xDC00 | (cp & 0x3FF));
    }
  }
  tp_buf_append(b, "\"", 1);
}

/* JSON strings must be valid UTF-8; a server may send anything.  Text that
 * is not has each invalid byte, and then each NUL byte too, replaced by
 * U+FFFD; valid text keeps its NULs (\u0000). */
static int put_text(tp_buf *b, const uint8_t *p, size_t n) {
  if (!p) n = 0;
  if (tp_utf8_valid((const char *)p, n) == n) {
    put_escaped(b, p, n);
    return 0;
  }
  tp_buf fixed;
  tp_buf_init(&fixed);
  int rv = 0;
  for (size_t i = 0; i < n && !rv;) {
    size_t len = tp_utf8_valid_prefix(p + i, n - i);
    if (len) rv = tp_buf_append(&fixed, p + i, len);
    i += len;
    if (i < n && !rv) {
      rv = tp_buf_append(&fixed, "\xef\xbf\xbd", 3);
      i++;
    }
  }
  if (!rv) put_escaped(b, fixed.data, fixed.len);
  tp_buf_fini(&fixed);
  return rv;
}

/* ,"key": */
static void put_key(tp_buf *b, const char *key) {
  tp_buf_append(b, ",\"", 2);
  tp_buf_append_str(b, key);
  tp_buf_append(b, "\":", 2);
}

static void put_int_member(tp_buf *b, const char *key, int64_t v) {
  put_key(b, key);
  put_i64(b, v);
}

/* A count that is -1 when unknown: null then. */
static void put_count_member(tp_buf *b, const char *key, int64_t v) {
  put_key(b, key);
  if (v >= 0)
    put_i64(b, v);
  else
    tp_buf_append(b, "null", 4);
}

/* A member of a string the caller chose (an id): left out when it is not
 * valid UTF-8, as jansson's json_string refused it. */
static void put_str_member(tp_buf *b, const char *key, const char *v) {
  if (!v) v = "";
  size_t n = strlen(v);
  if (tp_utf8_valid(v, n) != n) return;
  put_key(b, key);
  put_escaped(b, (const uint8_t *)v, n);
}

static void put_head(tp_buf *b, const tp_record *rec, const tp_records_line *l) {
  /* "measured" first, at a fixed place, so it can be set in place. */
  tp_buf_append_str(b, TP_RECORDS_MEASURED_KEY);
  tp_buf_append_str(b, l->measured == TP_RECORD_MEASURED ? "true" : "false");
  if (l->mode == TP_LOAD_CONCURRENCY) put_int_member(b, "concurrency", l->concurrency);
  if (l->mode == TP_LOAD_RATE && isfinite(l->rate)) {
    put_key(b, "request_rate");
    put_real(b, l->rate);
  }
  put_str_member(b, "id", l->id);
  /* The ids to join with the server's logs (docs/metrics.md, "Request
   * ids"): the one sent (the line's id), the server's own, and the trace
   * context when one was sent. */
  put_str_member(b, "request_id", l->id);
  if (rec->server_id[0]) {
    put_str_member(b, "server_request_id", rec->server_id);
  } else {
    put_key(b, "server_request_id");
    tp_buf_append(b, "null", 4);
  }
  if (tp_record_has_trace(rec)) {
    char tp[TP_TRACEPARENT_LEN + 1];
    tp_record_traceparent(rec, tp);
    put_str_member(b, "traceparent", tp);
  }
  put_int_member(b, "level", (int64_t)l->level);
  if (l->with_rank) put_int_member(b, "rank", rec->rank);
  put_int_member(b, "seq", (int64_t)rec->seq);
  put_key(b, "warmup");
  tp_buf_append_str(b, rec->warmup ? "true" : "false");
  put_int_member(b, "resends", rec->resends);
  put_int_member(b, "prompt_index", rec->prompt_index);
  if (rec->session) {
    /* Sessions (docs/sessions.md): the file's id, the session's number in
     * the level (a file's session may run more than once) and the turn. */
    put_str_member(b, "session_id", l->session_id);
    put_int_member(b, "session", (int64_t)rec->session - 1);
    put_int_member(b, "turn", rec->turn);
  }
}

/* ,"response_text_at":[...]: where each response's text begins
 * (tp_record.resp_text_at), as the line says it: the byte of "text",
 * -1 - k for byte k of "reasoning", null for a response without text. */
static void put_text_at(tp_buf *b, const tp_record *rec) {
  put_key(b, "response_text_at");
  tp_buf_append(b, "[", 1);
  for (uint32_t i = 0; i < rec->n_resp; i++) {
    if (i) tp_buf_append(b, ",", 1);
    uint32_t v = rec->resp_text_at[i];
    int64_t k = (int64_t)(v & ~TP_RECORD_AT_REASONING);
    if (v == TP_RECORD_NO_TEXT)
      tp_buf_append(b, "null", 4);
    else
      put_i64(b, v & TP_RECORD_AT_REASONING ? -1 - k : k);
  }
  tp_buf_append(b, "]", 1);
}

/* The most a line can take: an escaped byte is at most 6 characters (a
 * replaced one \uFFFD, a 4-byte character two escapes of 6), a response
 * time at most 21 and its text offset 12, and the rest fits in 1.5 KiB.  Reserved at once, so no
 * append below can fail. */
static size_t line_bound(const tp_record *rec, const tp_records_line *l) {
  size_t n = 1536 + 33u * (size_t)rec->n_resp + 6 * (rec->text.len + rec->reasoning.len);
  if (rec->err_msg) n += 6 * strlen(rec->err_msg);
  if (l->id) n += 12 * strlen(l->id);
  n += TP_RECORD_SERVER_ID_MAX + TP_TRACEPARENT_LEN + 64;
  if (l->session_id) n += 6 * strlen(l->session_id);
  return n;
}

char *tp_records_format(const tp_record *rec, const tp_records_line *l) {
  tp_buf b;
  tp_buf_init(&b);
  if (tp_buf_reserve(&b, line_bound(rec, l))) return NULL;
  put_head(&b, rec, l);
  put_int_member(&b, "max_tokens", rec->max_tokens);
  put_int_member(&b, "planned_ns", (int64_t)rec->planned_ns);
  put_int_member(&b, "sent_ns", (int64_t)rec->sent_ns);
  put_int_member(&b, "first_token_ns", (int64_t)rec->first_token_ns);
  put_int_member(&b, "second_token_ns", (int64_t)rec->second_token_ns);
  put_int_member(&b, "first_answer_ns", (int64_t)rec->first_answer_ns);
  put_int_member(&b, "last_token_ns", (int64_t)rec->last_token_ns);
  put_int_member(&b, "done_ns", (int64_t)rec->done_ns);
  /* vLLM's end of a request and its chunks (docs/metrics.md, "Each tool's
   * definitions"): 0 where no response carried choices. */
  put_int_member(&b, "last_choice_ns", (int64_t)rec->last_choice_ns);
  put_int_member(&b, "choice_responses", rec->n_choice_resp);
  put_key(&b, "response_ns");
  tp_buf_append(&b, "[", 1);
  for (uint32_t i = 0; i < rec->n_resp; i++) {
    if (i) tp_buf_append(&b, ",", 1);
    put_i64(&b, (int64_t)rec->resp_ns[i]);
  }
  tp_buf_append(&b, "]", 1);
  if (rec->resp_text_at) put_text_at(&b, rec);
  /* Text responses that share the time of the one before (docs/metrics.md,
   * "Fidelity"): said here, so a reader need not compare the times. */
  put_int_member(&b, "merged_text_responses", rec->n_text_merged);
  put_count_member(&b, "input_tokens", rec->input_tokens);
  put_count_member(&b, "output_tokens", rec->output_tokens);
  put_count_member(&b, "server_output_tokens", rec->server_output_tokens);
  /* Every count a figure of the report is made from, so that each
   * recomputes from the line: the server's input and cached counts, the
   * client's count of the reasoning text (a server's completion count
   * includes it, docs/metrics.md "Counting tokens"), and which of the counts
   * the report took (--token-source). */
  put_count_member(&b, "server_input_tokens", rec->server_input_tokens);
  put_count_member(&b, "server_cached_tokens", rec->server_cached_tokens);
  put_count_member(&b, "reasoning_tokens", tp_record_has_reasoning(rec) ? rec->reasoning_tokens : -1);
  if (l->token_source) put_str_member(&b, "token_source", l->token_source);
  put_key(&b, "ok");
  tp_buf_append_str(&b, tp_record_ok(rec) ? "true" : "false");
  put_str_member(&b, "error_class", tp_error_class_name(rec->err_class));
  put_count_member(&b, "grpc_status", rec->grpc_status);
  put_key(&b, "error");
  int rv = 0;
  if (rec->err_msg)
    rv = put_text(&b, (const uint8_t *)rec->err_msg, strlen(rec->err_msg));
  else
    tp_buf_append(&b, "null", 4);
  put_key(&b, "text");
  if (!rv) rv = put_text(&b, rec->text.data, rec->text.len);
  if (rec->reasoning.len && !rv) {
    put_key(&b, "reasoning");
    rv = put_text(&b, rec->reasoning.data, rec->reasoning.len);
  }
  tp_buf_append(&b, "}", 1);
  if (rv) { /* a text's repair ran out of memory: no half line */
    tp_buf_fini(&b);
    return NULL;
  }
  return tp_buf_steal(&b, NULL);
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

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

#include <jansson.h>

/* JSON strings must be valid UTF-8; a server may send anything.  Invalid
 * bytes become U+FFFD (and a NUL byte U+FFFD too), the rest is kept. */
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
/* Reading back                                                             */

struct tp_records_reader {
  FILE *fp;
  char *path;
  char *line; /* getline's buffer, reused */
  size_t line_cap;
  /* What the last load filled in; reused from call to call. */
  uint64_t *resp_ns;
  uint32_t cap_resp;
  tp_buf text, reasoning;
  char last_err[512]; /* the last load's failure, "" = none */
};

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
  rd->fp = fopen(path, "r");
  if (!rd->fp) {
    tp_seterr(err, errlen, "cannot read back the records file %s: %s (the exports need its response times)",
              path, strerror(errno));
    free(rd->path);
    free(rd);
    return TP_EIO;
  }
  tp_buf_init(&rd->text);
  tp_buf_init(&rd->reasoning);
  *out = rd;
  return 0;
}

void tp_records_reader_free(tp_records_reader *rd) {
  if (!rd) return;
  if (rd->fp) fclose(rd->fp);
  free(rd->path);
  free(rd->line);
  free(rd->resp_ns);
  tp_buf_fini(&rd->text);
  tp_buf_fini(&rd->reasoning);
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

static int take_text(tp_buf *into, json_t *v) {
  tp_buf_reset(into);
  if (!json_is_string(v)) return 0;
  size_t n = json_string_length(v);
  return n ? tp_buf_append(into, json_string_value(v), n) : 0;
}

/* Fills the reader's buffers from the parsed line. */
static int fill(tp_records_reader *rd, uint64_t off, const tp_record *rec, json_t *o, char *err, size_t errlen) {
  json_t *seq = json_object_get(o, "seq");
  if (!json_is_integer(seq) || (uint64_t)json_integer_value(seq) != rec->seq)
    return bad_line(rd, off, rec, "is another request's", err, errlen);
  json_t *rs = json_object_get(o, "response_ns");
  if (!json_is_array(rs) || json_array_size(rs) != rec->n_resp)
    return bad_line(rd, off, rec, "has another number of response times", err, errlen);
  if (rec->n_resp > rd->cap_resp) {
    uint64_t *p = realloc(rd->resp_ns, rec->n_resp * sizeof(*p));
    if (!p) return TP_ENOMEM;
    rd->resp_ns = p;
    rd->cap_resp = rec->n_resp;
  }
  for (uint32_t i = 0; i < rec->n_resp; i++) {
    json_t *t = json_array_get(rs, i);
    if (!json_is_integer(t)) return bad_line(rd, off, rec, "has a response time that is not an integer", err, errlen);
    rd->resp_ns[i] = (uint64_t)json_integer_value(t);
  }
  int rv = take_text(&rd->text, json_object_get(o, "text"));
  if (!rv) rv = take_text(&rd->reasoning, json_object_get(o, "reasoning"));
  return rv;
}

static int load(tp_records_reader *rd, const tp_record *rec, tp_record *full, char *err, size_t errlen);

int tp_records_load(tp_records_reader *rd, const tp_record *rec, tp_record *full, char *err, size_t errlen) {
  if (!rd) return load(rd, rec, full, err, errlen);
  rd->last_err[0] = 0;
  int rv = load(rd, rec, full, rd->last_err, sizeof(rd->last_err));
  if (rv) tp_seterr(err, errlen, "%s", rd->last_err);
  return rv;
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
  if (fseeko(rd->fp, (off_t)off, SEEK_SET) != 0) {
    tp_seterr(err, errlen, "cannot read back the records file %s at byte %" PRIu64 ": %s", rd->path, off,
              strerror(errno));
    return TP_EIO;
  }
  ssize_t n = getline(&rd->line, &rd->line_cap, rd->fp);
  if (n <= 0) return bad_line(rd, off, rec, "is missing (the file is shorter)", err, errlen);
  json_error_t je;
  /* JSON_ALLOW_NUL: a line never holds \u0000 (NUL bytes become U+FFFD),
   * but a reader must not stop at one. */
  json_t *o = json_loadb(rd->line, (size_t)n, JSON_ALLOW_NUL, &je);
  if (!json_is_object(o)) {
    json_decref(o);
    return bad_line(rd, off, rec, "is not a JSON object", err, errlen);
  }
  int rv = fill(rd, off, rec, o, err, errlen);
  json_decref(o);
  if (rv == TP_ENOMEM) tp_seterr(err, errlen, "cannot read back the records file %s: out of memory", rd->path);
  if (rv) return rv;
  full->resp_ns = rd->resp_ns;
  full->cap_resp = rec->n_resp;
  full->text = rd->text;
  full->reasoning = rd->reasoning;
  full->line_off = 0;
  return 0;
}

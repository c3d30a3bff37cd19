/* Unit tests for lib/report/tp_records.c and the read-back path of the
 * exports: the same records exported once while they hold their response
 * times and text, and once after they were shed and read back from their
 * records-file lines, must give byte-identical files. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "metrics/tp_stats.h"
#include "report/tp_export.h"
#include "report/tp_records.h"
#include <jansson.h>

#include "tp_test.h"
#include "tokperf/tokperf.h"

#define WALL0 1700000000000000000ULL
#define MONO0 5000000000ULL
#define NREC 40

/* Records of every shape the exports handle: streamed with empty and text
 * responses, unary, failed, warm-up, reasoning, non-ASCII text, text that is
 * not UTF-8 (which must stay in memory), no response at all. */
static void make_records(tp_record *r, size_t n, size_t resp_per_req) {
  for (size_t i = 0; i < n; i++) {
    tp_record_init(&r[i]);
    r[i].seq = i;
    r[i].prompt_index = (uint32_t)(i % 7);
    r[i].max_tokens = 16;
    /* Sends out of seq order, so the exports' send order is exercised. */
    r[i].planned_ns = MONO0 + (uint64_t)((i * 7919) % n) * 1000000;
    r[i].sent_ns = r[i].planned_ns + 1000 + i;
    size_t k = i % 9 == 3 ? 1 : resp_per_req; /* some unary */
    if (i % 11 == 5) k = 0;                   /* some with no response */
    for (size_t j = 0; j < k; j++) {
      bool text = !(j == 0 && i % 2) && j != k - 1; /* an empty first and final one */
      if (k == 1) text = true;
      tp_record_add_response(&r[i], r[i].sent_ns + 2000000 + j * 37123 + i, text);
      char w[32];
      int wl = snprintf(w, sizeof(w), " w%zu", j);
      if (text) tp_record_append_text(&r[i], false, w, (size_t)wl, false);
    }
    if (i % 5 == 1) tp_buf_append_str(&r[i].text, " caf\xc3\xa9 \xe2\x82\xac \"q\" \\ \n\t");
    if (i % 13 == 7) tp_buf_append_str(&r[i].reasoning, "think \xf0\x9f\x98\x80 first");
    if (i % 17 == 9) tp_buf_append(&r[i].text, "bad \xff\xfe byte\0nul", 15); /* not lossless */
    r[i].done_ns = k ? r[i].resp_ns[k - 1] : r[i].sent_ns + 5;
    r[i].input_tokens = 10 + (int64_t)i;
    r[i].output_tokens = (int64_t)k;
    r[i].reasoning_tokens = r[i].reasoning.len ? 4 : -1;
    r[i].warmup = i < 2;
    if (i % 8 == 6) tp_record_fail(&r[i], TP_ERRCLASS_TIMEOUT, 4, "deadline \xc3\xa9", 10);
    if (i == 10) r[i].done_ns = 0; /* unfinished */
  }
}

/* Writes every record's line (as the run does) and sheds the lossless ones
 * in shed[], a deep copy of r[]. */
static size_t write_and_shed(const char *path, tp_record *r, tp_record *shed, size_t n) {
  FILE *f = fopen(path, "w");
  size_t n_shed = 0;
  for (size_t i = 0; i < n; i++) {
    char id[32];
    snprintf(id, sizeof(id), "c4-%zu", i);
    tp_records_line l = {id, 0, TP_LOAD_CONCURRENCY, 4, 0, false, NULL, TP_RECORD_MEASURED, NULL};
    char *line = tp_records_format(&r[i], &l);
    long at = ftell(f);
    fputs(line, f);
    fputc('\n', f);
    free(line);
    /* The copy owns its buffers, as the run's record does. */
    shed[i] = r[i];
    shed[i].resp_ns = r[i].n_resp ? malloc(r[i].n_resp * sizeof(uint64_t)) : NULL;
    if (r[i].n_resp) memcpy(shed[i].resp_ns, r[i].resp_ns, r[i].n_resp * sizeof(uint64_t));
    shed[i].cap_resp = r[i].n_resp;
    /* A lone answer in the first response keeps no places (tp_record.h). */
    shed[i].resp_text_at = r[i].resp_text_at ? malloc(r[i].n_resp * sizeof(uint32_t)) : NULL;
    if (r[i].resp_text_at) memcpy(shed[i].resp_text_at, r[i].resp_text_at, r[i].n_resp * sizeof(uint32_t));
    tp_buf_init(&shed[i].text);
    tp_buf_init(&shed[i].reasoning);
    tp_buf_append(&shed[i].text, r[i].text.data ? r[i].text.data : (const uint8_t *)"", r[i].text.len);
    tp_buf_append(&shed[i].reasoning, r[i].reasoning.data ? r[i].reasoning.data : (const uint8_t *)"",
                  r[i].reasoning.len);
    shed[i].err_msg = r[i].err_msg ? strdup(r[i].err_msg) : NULL;
    if (tp_records_lossless(&r[i])) {
      tp_record_shed(&shed[i], (uint64_t)at);
      n_shed++;
    }
  }
  fclose(f);
  return n_shed;
}

static void fill_reqs(tp_export_request *q, const tp_record *r, size_t n, tp_records_reader *from) {
  static const char *refs[3] = {" w1 w2", NULL, "caf\xc3\xa9"};
  for (size_t i = 0; i < n; i++)
    q[i] = (tp_export_request){&r[i], "prompt \xc3\xa9", 8, refs[i % 3], i % 4 ? 0 : 16, from, {0}, {0}};
}

static void test_format_and_lossless(void) {
  tp_record r;
  tp_record_init(&r);
  r.seq = 3;
  tp_record_add_response(&r, 100, true);
  tp_buf_append_str(&r.text, "ok");
  CHECK(tp_records_lossless(&r), "valid UTF-8 text is given back byte for byte");
  tp_records_line l = {"c1-3", 2, TP_LOAD_RATE, 0, 2.5, false, NULL, TP_RECORD_MEASURED, NULL};
  char *line = tp_records_format(&r, &l);
  CHECK(line && strstr(line, "\"request_rate\":2.5") && strstr(line, "\"id\":\"c1-3\"") &&
            strstr(line, "\"response_ns\":[100]") && strstr(line, "\"text\":\"ok\"") && !strchr(line, '\n'),
        "a records line says the rate, id, response times and text on one line");
  free(line);
  tp_buf_append(&r.text, "\0", 1);
  CHECK(!tp_records_lossless(&r), "a NUL byte is not given back, so such a record is not shed");
  tp_buf_reset(&r.text);
  tp_buf_append_str(&r.reasoning, "\xc3");
  CHECK(!tp_records_lossless(&r), "invalid UTF-8 in the reasoning is not given back either");
  tp_record_shed(&r, 0);
  CHECK(r.resp_ns == NULL && r.text.data == NULL && r.reasoning.data == NULL && r.n_resp == 1 && r.line_off == 1 &&
            tp_record_has_reasoning(&r),
        "a shed record lets go of its buffers and keeps its counts, its line and that it reasoned");
  tp_record_fini(&r);
}

/* The line as a jansson tree dumped compact and ASCII-only: how lines were
 * written before tp_records_format wrote them directly.  The two must give
 * the same bytes for every record. */
static json_t *ref_text(const uint8_t *p, size_t n) {
  json_t *v = json_stringn(p ? (const char *)p : "", p ? n : 0);
  if (v) return v;
  tp_buf b;
  tp_buf_init(&b);
  for (size_t i = 0; i < n;) {
    size_t len = tp_utf8_valid_prefix(p + i, n - i);
    if (len) tp_buf_append(&b, p + i, len);
    i += len;
    if (i < n) {
      tp_buf_append(&b, "\xef\xbf\xbd", 3);
      i++;
    }
  }
  v = json_stringn(b.data ? (const char *)b.data : "", b.len);
  tp_buf_fini(&b);
  return v;
}

static char *ref_format(const tp_record *rec, const tp_records_line *l) {
  json_t *o = json_object();
  if (l->mode == TP_LOAD_CONCURRENCY) json_object_set_new(o, "concurrency", json_integer(l->concurrency));
  if (l->mode == TP_LOAD_RATE) json_object_set_new(o, "request_rate", json_real(l->rate));
  json_object_set_new(o, "id", json_string(l->id ? l->id : ""));
  json_object_set_new(o, "request_id", json_string(l->id ? l->id : ""));
  json_object_set_new(o, "server_request_id", rec->server_id[0] ? json_string(rec->server_id) : json_null());
  if (tp_record_has_trace(rec)) {
    char tp[80] = "00-";
    for (size_t i = 0; i < 16; i++) snprintf(tp + strlen(tp), 3, "%02x", rec->trace_id[i]);
    strcat(tp, "-");
    for (size_t i = 0; i < 8; i++) snprintf(tp + strlen(tp), 3, "%02x", rec->span_id[i]);
    strcat(tp, "-01");
    json_object_set_new(o, "traceparent", json_string(tp));
  }
  json_object_set_new(o, "level", json_integer((json_int_t)l->level));
  if (l->with_rank) json_object_set_new(o, "rank", json_integer(rec->rank));
  json_object_set_new(o, "seq", json_integer((json_int_t)rec->seq));
  json_object_set_new(o, "warmup", json_boolean(rec->warmup));
  json_object_set_new(o, "resends", json_integer(rec->resends));
  json_object_set_new(o, "prompt_index", json_integer(rec->prompt_index));
  if (rec->session) {
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
  json_object_set_new(o, "last_choice_ns", json_integer((json_int_t)rec->last_choice_ns));
  json_object_set_new(o, "choice_responses", json_integer(rec->n_choice_resp));
  json_t *rs = json_array();
  for (uint32_t i = 0; i < rec->n_resp; i++) json_array_append_new(rs, json_integer((json_int_t)rec->resp_ns[i]));
  json_object_set_new(o, "response_ns", rs);
  json_object_set_new(o, "merged_text_responses", json_integer(rec->n_text_merged));
  json_object_set_new(o, "input_tokens", rec->input_tokens >= 0 ? json_integer(rec->input_tokens) : json_null());
  json_object_set_new(o, "output_tokens", rec->output_tokens >= 0 ? json_integer(rec->output_tokens) : json_null());
  json_object_set_new(o, "server_output_tokens",
                      rec->server_output_tokens >= 0 ? json_integer(rec->server_output_tokens) : json_null());
  json_object_set_new(o, "server_input_tokens",
                      rec->server_input_tokens >= 0 ? json_integer(rec->server_input_tokens) : json_null());
  json_object_set_new(o, "server_cached_tokens",
                      rec->server_cached_tokens >= 0 ? json_integer(rec->server_cached_tokens) : json_null());
  json_object_set_new(o, "reasoning_tokens", rec->reasoning_tokens >= 0 && tp_record_has_reasoning(rec)
                                                 ? json_integer(rec->reasoning_tokens)
                                                 : json_null());
  if (l->token_source) json_object_set_new(o, "token_source", json_string(l->token_source));
  json_object_set_new(o, "ok", json_boolean(tp_record_ok(rec)));
  json_object_set_new(o, "error_class", json_string(tp_error_class_name(rec->err_class)));
  json_object_set_new(o, "grpc_status", rec->grpc_status >= 0 ? json_integer(rec->grpc_status) : json_null());
  json_object_set_new(o, "error",
                      rec->err_msg ? ref_text((const uint8_t *)rec->err_msg, strlen(rec->err_msg)) : json_null());
  json_object_set_new(o, "text", ref_text(rec->text.data, rec->text.len));
  if (rec->reasoning.len) json_object_set_new(o, "reasoning", ref_text(rec->reasoning.data, rec->reasoning.len));
  char *body = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
  json_decref(o);
  const char *m = l->measured == TP_RECORD_MEASURED ? "true," : "false,";
  size_t klen = strlen(TP_RECORDS_MEASURED_KEY), mlen = strlen(m), blen = strlen(body);
  char *line = malloc(klen + mlen + blen);
  memcpy(line, TP_RECORDS_MEASURED_KEY, klen);
  memcpy(line + klen, m, mlen);
  memcpy(line + klen + mlen, body + 1, blen);
  free(body);
  return line;
}

/* Bytes of every kind a server or a user may give: ASCII with the
 * characters JSON escapes, DEL, NUL, 2- to 4-byte characters, and invalid
 * bytes (stray continuations, overlong forms, surrogates, cut sequences). */
static void random_bytes(tp_buf *b, uint64_t *s, size_t max) {
  static const char *pieces[] = {"a", "word ", "\"", "\\", "/", "\n", "\t", "\r", "\b", "\f", "\x01", "\x1f",
                                 "\x7f", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xef\xbf\xbf",
                                 "\xf4\x8f\xbf\xbf", "\xff", "\x80", "\xc0\xaf", "\xed\xa0\x80", "\xe2\x82",
                                 "\xf0\x9f", "\xf5\x80\x80\x80"};
  tp_buf_reset(b);
  size_t n = (size_t)(*s >> 40) % max;
  for (size_t i = 0; i < n; i++) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    size_t k = (size_t)(*s >> 33) % (TP_ARRAY_LEN(pieces) + 1);
    if (k == TP_ARRAY_LEN(pieces))
      tp_buf_append(b, "\0", 1);
    else
      tp_buf_append_str(b, pieces[k]);
  }
}

static void test_format_as_jansson(void) {
  uint64_t s = 42;
  size_t same = 0, n = 3000;
  tp_buf id, sid, err;
  tp_buf_init(&id);
  tp_buf_init(&sid);
  tp_buf_init(&err);
  static const double rates[] = {20000, 2.5, 0.1, 1e300, 123456.789, 1e-7, 3};
  for (size_t i = 0; i < n; i++) {
    tp_record r;
    tp_record_init(&r);
    s = s * 6364136223846793005ULL + 1442695040888963407ULL;
    r.seq = i * 1000003ULL;
    r.prompt_index = (uint32_t)(s >> 50);
    r.max_tokens = (uint32_t)(s >> 45);
    r.planned_ns = s >> 2;
    r.sent_ns = i % 5 ? r.planned_ns + 17 : 0;
    for (size_t j = 0; j < i % 6; j++) tp_record_add_response(&r, r.sent_ns + j * 99991 + (i & 1), j % 2 == 0);
    r.done_ns = r.sent_ns + 5;
    if (i % 3 && r.n_resp) {
      r.n_choice_resp = (uint32_t)(i % r.n_resp) + 1;
      r.last_choice_ns = r.resp_ns[r.n_choice_resp - 1];
    }
    r.input_tokens = i % 4 ? (int64_t)i : -1;
    r.output_tokens = i % 3 ? (int64_t)i * 7 : -1;
    r.server_output_tokens = i % 7 ? -1 : 12;
    r.server_input_tokens = i % 5 ? (int64_t)i * 3 : -1;
    r.server_cached_tokens = i % 8 ? -1 : (int64_t)i;
    r.reasoning_tokens = i % 3 ? (int64_t)(i % 11) : -1;
    r.warmup = i % 10 == 0;
    r.resends = (uint32_t)(i % 3);
    r.session = i % 9 == 0 ? (uint32_t)(i % 4 + 1) : 0;
    r.turn = (uint32_t)(i % 5);
    r.rank = (uint32_t)(i % 4);
    /* The server's id, quotes and backslashes included (kept as given),
     * a byte outside printable ASCII made '?'; now and then a trace. */
    if (i % 3) {
      char sv[80];
      snprintf(sv, sizeof(sv), "chatcmpl-%zu\"\\x\x01%s", i, i % 7 ? "" : "-a-long-tail-past-the-record's-room-for-it");
      tp_record_set_server_id(&r, sv, strlen(sv));
    }
    for (size_t k = 0; i % 5 == 0 && k < 16; k++) r.trace_id[k] = (uint8_t)(s >> (k * 3));
    for (size_t k = 0; i % 5 == 0 && k < 8; k++) r.span_id[k] = (uint8_t)(k + i);
    if (i % 5 == 0) r.trace_id[0] |= 1; /* never all zero */
    random_bytes(&r.text, &s, 40);
    random_bytes(&r.reasoning, &s, i % 2 ? 12 : 1);
    random_bytes(&err, &s, 12);
    const char *e = err.data ? (const char *)err.data : "";
    if (i % 6 == 1) tp_record_fail(&r, TP_ERRCLASS_TIMEOUT, (int)(i % 17), e, strlen(e));
    random_bytes(&id, &s, i % 4 ? 2 : 6); /* now and then an id that is not UTF-8 */
    random_bytes(&sid, &s, 6);
    tp_records_line l = {(const char *)id.data, i % 3, i % 2 ? TP_LOAD_RATE : TP_LOAD_CONCURRENCY,
                         (uint32_t)(i % 300), rates[i % TP_ARRAY_LEN(rates)], i % 4 == 1,
                         (const char *)sid.data, i % 3 ? TP_RECORD_MEASURED : TP_RECORD_PENDING,
                         i % 4 == 2 ? NULL : i % 4 ? "auto" : "client"};
    char *got = tp_records_format(&r, &l), *want = ref_format(&r, &l);
    if (got && want && strcmp(got, want) == 0)
      same++;
    else if (n - same < 4)
      fprintf(stderr, "  got  %s\n  want %s\n", got ? got : "(null)", want ? want : "(null)");
    free(got);
    free(want);
    tp_record_fini(&r);
  }
  tp_buf_fini(&id);
  tp_buf_fini(&sid);
  tp_buf_fini(&err);
  CHECK(same == n, "a written line is byte for byte jansson's dump of the same members (%zu of %zu)", same, n);
}

/* The same level exported from memory and from the records file. */
static void test_exports_identical(const char *dir, size_t resp_per_req) {
  char path[512];
  snprintf(path, sizeof(path), "%s/records.jsonl", dir);
  tp_record *r = calloc(NREC, sizeof(*r)), *s = calloc(NREC, sizeof(*s));
  make_records(r, NREC, resp_per_req);
  size_t n_shed = write_and_shed(path, r, s, NREC);
  CHECK(n_shed > NREC / 2 && n_shed < NREC, "most records are shed, the ones with bad bytes are not (%zu)", n_shed);

  tp_level_result lr, ls;
  tp_level_compute(&lr, r, NREC);
  tp_level_compute(&ls, s, NREC);
  lr.concurrency = ls.concurrency = 4;
  CHECK(memcmp(&lr, &ls, sizeof(lr)) == 0, "the statistics of shed records are those of whole ones");
  CHECK(lr.reasoning_tokens.n > 0, "reasoning is counted (%zu)", (size_t)lr.reasoning_tokens.n);

  tp_records_reader *rd;
  char err[512];
  CHECK_INT(tp_records_reader_open(&rd, path, err, sizeof(err)), 0, "the records file opens for reading");
  tp_export_request *qm = calloc(NREC, sizeof(*qm)), *qs = calloc(NREC, sizeof(*qs));
  fill_reqs(qm, r, NREC, NULL);
  fill_reqs(qs, s, NREC, rd);

  tp_export_level em = {&lr, qm, NREC, 0, 0, NULL}, es = {&ls, qs, NREC, 0, 0, NULL};
  tp_buf a, b;
  tp_buf_init(&a);
  tp_buf_init(&b);
  CHECK_INT(tp_export_pa_experiment(&a, &em, NULL, 128, MONO0, WALL0), 0, "profile export from memory");
  CHECK_INT(tp_export_pa_experiment(&b, &es, NULL, 128, MONO0, WALL0), 0, "profile export read back");
  CHECK(a.len > 0 && a.len == b.len && memcmp(a.data, b.data, a.len) == 0,
        "the profile export is byte-identical read back (%zu vs %zu bytes)", a.len, b.len);
  tp_buf_reset(&a);
  tp_buf_reset(&b);
  CHECK_INT(tp_export_responses_jsonl(&a, &lr, qm, NREC), 0, "responses.jsonl from memory");
  CHECK_INT(tp_export_responses_jsonl(&b, &ls, qs, NREC), 0, "responses.jsonl read back");
  CHECK(a.len > 0 && a.len == b.len && memcmp(a.data, b.data, a.len) == 0,
        "responses.jsonl is byte-identical read back");
  tp_accuracy xa, xb;
  CHECK_INT(tp_accuracy_compute(&xa, qm, NREC), 0, "accuracy from memory");
  CHECK_INT(tp_accuracy_compute(&xb, qs, NREC), 0, "accuracy read back");
  CHECK(xa.scored > 0 && xa.scored == xb.scored && xa.exact == xb.exact && xa.rouge_l_f1_sum == xb.rouge_l_f1_sum,
        "accuracy is the same read back (%zu scored)", (size_t)xa.scored);

  /* Whole artifact directories: the writers spill to their files as they
   * go when reading back (large levels never sit in memory whole). */
  const char *names[2] = {"mem", "back"};
  tp_export_level *lv[2] = {&em, &es};
  for (int k = 0; k < 2; k++) {
    char d[600];
    snprintf(d, sizeof(d), "%s/%s", dir, names[k]);
    tp_artifacts_opts o = {d, NULL, NULL, MONO0, WALL0, false, 0};
    tp_artifacts *art;
    err[0] = 0;
    CHECK(tp_artifacts_open(&art, &o, err, sizeof(err)) == 0, "artifacts open %s", err);
    CHECK(tp_artifacts_add_level(art, lv[k], NULL, err, sizeof(err)) == 0, "a level is added %s", err);
    CHECK(tp_artifacts_finish(art, err, sizeof(err)) == 0, "artifacts finish %s", err);
    tp_artifacts_free(art);
  }
  static const char *files[3] = {"profile_export.json", "responses.jsonl", "accuracy.json"};
  for (int k = 0; k < 3; k++) {
    char pa[700], pb[700];
    snprintf(pa, sizeof(pa), "%s/mem/%s", dir, files[k]);
    snprintf(pb, sizeof(pb), "%s/back/%s", dir, files[k]);
    char cmd[1500];
    snprintf(cmd, sizeof(cmd), "cmp -s '%s' '%s'", pa, pb);
    struct stat st;
    CHECK(stat(pa, &st) == 0 && st.st_size > 0 && system(cmd) == 0, "%s is byte-identical read back (%lld bytes)",
          files[k], (long long)st.st_size);
  }

  /* A records file that changed under the run is said so, with its name. */
  truncate(path, 10);
  tp_buf_reset(&b);
  int rv = tp_export_pa_experiment(&b, &es, NULL, 128, MONO0, WALL0);
  const char *msg = tp_records_reader_error(rd);
  CHECK(rv == TP_EPROTO && msg && strstr(msg, path) && strstr(msg, "changed"),
        "a truncated records file is an error that names it (%s)", msg ? msg : "none");

  tp_buf_fini(&a);
  tp_buf_fini(&b);
  tp_records_reader_free(rd);
  for (size_t i = 0; i < NREC; i++) {
    tp_record_fini(&r[i]);
    tp_record_fini(&s[i]);
  }
  free(r);
  free(s);
  free(qm);
  free(qs);
}

static bool odd_seq(void *ctx, uint64_t seq, uint32_t rank) {
  (void)ctx;
  return rank == 0 && seq % 2 == 1;
}

/* Stability mode: lines written "measured": false before the windows are
 * chosen; marking sets the chosen ones of the level, in place, and leaves
 * every line valid JSON and the file's length unchanged. */
static void test_mark_measured(const char *dir) {
  char path[128];
  snprintf(path, sizeof(path), "%s/marks.jsonl", dir);
  FILE *f = fopen(path, "w");
  for (int i = 0; i < 6; i++) {
    tp_record r;
    tp_record_init(&r);
    r.seq = (uint64_t)(i % 4);
    tp_buf_append_str(&r.text, "x");
    tp_records_line l = {"id", i < 4 ? 0 : 1, TP_LOAD_CONCURRENCY, 1, 0, false, NULL,
                         i == 0 ? TP_RECORD_UNMEASURED : TP_RECORD_PENDING, NULL};
    char *line = tp_records_format(&r, &l);
    fprintf(f, "%s\n", line);
    free(line);
    tp_record_fini(&r);
  }
  long len = ftell(f);
  fclose(f);
  uint64_t from = 0;
  char err[256] = "";
  CHECK_INT(tp_records_mark_measured(path, &from, 0, odd_seq, NULL, err, sizeof(err)), 0, "marking a regular file succeeds");
  CHECK((long)from == len, "marking moves the start to the file's end");
  f = fopen(path, "r");
  char buf[4096];
  int n = 0, measured = 0, valid = 0;
  while (fgets(buf, sizeof(buf), f)) {
    json_t *o = json_loads(buf, 0, NULL);
    if (o) valid++;
    if (json_is_true(json_object_get(o, "measured"))) {
      measured++;
      CHECK(json_integer_value(json_object_get(o, "level")) == 0 &&
                json_integer_value(json_object_get(o, "seq")) % 2 == 1,
            "only the level's chosen records are marked");
    }
    json_decref(o);
    n++;
  }
  fclose(f);
  CHECK(n == 6 && valid == 6 && measured == 2, "2 of 6 lines marked measured, all still JSON (%d/%d/%d)", n, valid,
        measured);
  CHECK(tp_records_mark_measured("/dev/null", &from, 0, odd_seq, NULL, err, sizeof(err)) == TP_EIO &&
            strstr(err, "/dev/null"),
        "a records file that is not a regular file is named in the error");
}

/* The line reader of the read-back (tp__records_scan): what it keeps, and
 * every kind of line it must refuse. */
typedef struct scan_case {
  const char *line;
  int rv;            /* 0 or TP_EPROTO */
  int has_seq;       /* expected when rv == 0 */
  uint64_t seq;
  int has_resp, resp_ints;
  size_t n_resp;
  uint64_t resp_last;
  const char *text; /* NULL: not checked */
  size_t text_len;
} scan_case;

static void test_scan_table(void) {
  static const scan_case cases[] = {
      {"{\"seq\":7,\"response_ns\":[1,2,3],\"text\":\"ab\"}\n", 0, 1, 7, 1, 1, 3, 3, "ab", 2},
      {"  {\"seq\" : 7 , \"response_ns\" : [ ] , \"text\" : null }  \r\n", 0, 1, 7, 1, 1, 0, 0, "", 0},
      {"{}", 0, 0, 0, 0, 0, 0, 0, "", 0},
      /* escapes, \u with a surrogate pair, raw UTF-8 */
      {"{\"text\":\"a\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\ud83d\\ude00\xc3\xa9\"}", 0, 0, 0, 0, 0, 0, 0,
       "a\"\\/\b\f\n\r\t\xc3\xa9\xf0\x9f\x98\x80\xc3\xa9", 17},
      {"{\"text\":\"nul\\u0000in\"}", 0, 0, 0, 0, 0, 0, 0, "nul\0in", 6},
      /* a key spelt with an escape is the same key */
      {"{\"s\\u0065q\":9}", 0, 1, 9, 0, 0, 0, 0, NULL, 0},
      /* the last of repeated keys counts */
      {"{\"seq\":1,\"seq\":2,\"text\":\"x\",\"text\":5}", 0, 1, 2, 0, 0, 0, 0, "", 0},
      {"{\"seq\":1,\"seq\":\"2\"}", 0, 0, 0, 0, 0, 0, 0, NULL, 0},
      /* other members of every kind are skipped */
      {"{\"a\":{\"b\":[1,-2.5e+3,true,false,null,{}],\"c\":\"\"},\"seq\":-0,\"response_ns\":[9223372036854775807]}", 0,
       1, 0, 1, 1, 1, 9223372036854775807ULL, NULL, 0},
      /* response times that are not all integers, or not an array */
      {"{\"response_ns\":[1,2.0,\"3\"]}", 0, 0, 0, 1, 0, 3, 0, NULL, 0},
      {"{\"response_ns\":{\"a\":1}}", 0, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"seq\":1.5}", 0, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"reasoning\":\"r\",\"text\":\"t\"}", 0, 0, 0, 0, 0, 0, 0, "t", 1},
      /* refused */
      {"", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"[1]", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"seq\":1", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"seq\":1,}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"seq\" 1}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{seq:1}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"seq\":1}x", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"seq\":1}{}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"seq\":01}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"seq\":-}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"seq\":1.}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"seq\":1e}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"seq\":9223372036854775808}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"seq\":99999999999999999999}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"a\":tru}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"a\":[1,]}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"a\":{\"b\"}}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"response_ns\":[1 2]}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"text\":\"open}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"text\":\"tab\there\"}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"text\":\"\\x\"}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"text\":\"\\u12g4\"}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"text\":\"\\ud83d\"}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"text\":\"\\ude00\"}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"text\":\"\\ud83d\\u0041\"}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"text\":\"bad \xff byte\"}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"text\":\"cut \xc3\"}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
      {"{\"a\":\"\xed\xa0\x80\"}", TP_EPROTO, 0, 0, 0, 0, 0, 0, NULL, 0},
  };
  tp__records_fields f;
  memset(&f, 0, sizeof(f));
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const scan_case *c = &cases[i];
    int rv = tp__records_scan(c->line, strlen(c->line), &f);
    CHECK(rv == c->rv, "scan case %zu (%s): rv %d, want %d", i, c->line, rv, c->rv);
    if (rv || c->rv) continue;
    CHECK(f.has_seq == (c->has_seq != 0) && (!c->has_seq || f.seq == c->seq), "scan case %zu: seq", i);
    CHECK(f.has_resp == (c->has_resp != 0) && f.resp_ints == (c->resp_ints != 0) && f.n_resp == c->n_resp,
          "scan case %zu: response_ns kind and count (%d %d %zu)", i, f.has_resp, f.resp_ints, f.n_resp);
    if (c->n_resp && c->resp_ints) CHECK(f.resp_ns[f.n_resp - 1] == c->resp_last, "scan case %zu: last time", i);
    if (c->text) CHECK_MEM(f.text.data, f.text.len, c->text, c->text_len, "scan case text");
  }
  /* The NUL case's length counts the NUL (strlen would stop at it). */
  const char nul[] = "{\"seq\":3,\"text\":\"a\0b\"}";
  CHECK_INT(tp__records_scan(nul, sizeof(nul) - 1, &f), TP_EPROTO, "a raw NUL byte inside a string is refused");
  /* Deep nesting is refused, not a stack overflow. */
  tp_buf deep;
  tp_buf_init(&deep);
  tp_buf_append_str(&deep, "{\"a\":");
  for (int i = 0; i < 100000; i++) tp_buf_append(&deep, "[", 1);
  CHECK_INT(tp__records_scan((const char *)deep.data, deep.len, &f), TP_EPROTO, "100,000 nested arrays are refused");
  tp_buf_fini(&deep);
  /* Many response times: the array grows. */
  tp_buf many;
  tp_buf_init(&many);
  tp_buf_append_str(&many, "{\"response_ns\":[");
  for (int i = 0; i < 5000; i++) tp_buf_printf(&many, "%s%d", i ? "," : "", i * 3);
  tp_buf_append_str(&many, "]}");
  CHECK_INT(tp__records_scan((const char *)many.data, many.len, &f), 0, "5,000 response times are read");
  CHECK(f.n_resp == 5000 && f.resp_ints && f.resp_ns[4999] == 14997, "all 5,000 kept in order");
  tp_buf_fini(&many);
  tp__records_fields_fini(&f);
}

/* Every line tp_records_format writes is read back to the record's own
 * fields, and agrees with a general JSON reader. */
static void test_scan_own_lines(void) {
  tp_record r[NREC];
  make_records(r, NREC, 5);
  tp__records_fields f;
  memset(&f, 0, sizeof(f));
  for (size_t i = 0; i < NREC; i++) {
    tp_records_line l = {"c4-x", 0, TP_LOAD_CONCURRENCY, 4, 0, false, NULL, TP_RECORD_MEASURED, NULL};
    char *line = tp_records_format(&r[i], &l);
    CHECK_INT(tp__records_scan(line, strlen(line), &f), 0, "an own line is read");
    json_t *o = json_loads(line, JSON_ALLOW_NUL, NULL);
    json_t *rs = json_object_get(o, "response_ns");
    CHECK(f.has_seq && f.seq == r[i].seq && f.n_resp == r[i].n_resp && f.n_resp == json_array_size(rs),
          "line %zu: seq and response count", i);
    for (size_t k = 0; k < f.n_resp; k++)
      CHECK(f.resp_ns[k] == r[i].resp_ns[k] && f.resp_ns[k] == (uint64_t)json_integer_value(json_array_get(rs, k)),
            "line %zu: response time %zu", i, k);
    json_t *t = json_object_get(o, "text");
    CHECK_MEM(f.text.data, f.text.len, json_string_value(t), json_string_length(t), "text as jansson reads it");
    json_t *rz = json_object_get(o, "reasoning");
    CHECK(f.reasoning.len == (rz ? json_string_length(rz) : 0) &&
              (!rz || memcmp(f.reasoning.data, json_string_value(rz), f.reasoning.len) == 0),
          "line %zu: reasoning as jansson reads it", i);
    if (tp_records_lossless(&r[i]))
      CHECK_MEM(f.text.data, f.text.len, r[i].text.data, r[i].text.len, "a lossless record's text comes back");
    json_decref(o);
    free(line);
  }
  tp__records_fields_fini(&f);
  for (size_t i = 0; i < NREC; i++) tp_record_fini(&r[i]);
}

/* The read-back's window over the file: lines read in any order, across
 * window edges, one longer than two windows, the last without a newline. */
static void test_read_window(const char *dir) {
  enum { N = 3000 };
  char path[600];
  snprintf(path, sizeof(path), "%s/window.jsonl", dir);
  FILE *fp = fopen(path, "w");
  static tp_record recs[N];
  for (size_t i = 0; i < N; i++) {
    tp_record_init(&recs[i]);
    recs[i].seq = i;
    recs[i].sent_ns = 1000 + i;
    tp_record_add_response(&recs[i], 2000 + i, true);
    tp_record_add_response(&recs[i], 3000 + i, false);
    recs[i].done_ns = 3000 + i;
    size_t len = i == 1234 ? (3u << 20) : 50 + (i * 7919) % 900;
    for (size_t k = 0; k < len; k++) tp_buf_append(&recs[i].text, &"abcdefgh"[(i + k) % 8], 1);
    tp_records_line l = {"id", 0, TP_LOAD_CONCURRENCY, 1, 0, false, NULL, TP_RECORD_MEASURED, NULL};
    char *line = tp_records_format(&recs[i], &l);
    recs[i].line_off = (uint64_t)ftell(fp) + 1;
    fputs(line, fp);
    if (i + 1 < N) fputc('\n', fp);
    free(line);
  }
  fclose(fp);
  tp_records_reader *rd = NULL;
  char err[700];
  CHECK_INT(tp_records_reader_open(&rd, path, err, sizeof(err)), 0, "the reader opens");
  size_t good = 0;
  for (size_t j = 0; j < 2 * N; j++) {
    /* forwards, then a stride that jumps back and forth across the file */
    size_t i = j < N ? j : (j * 1103) % N;
    tp_record shed = recs[i], full;
    shed.n_resp = recs[i].n_resp;
    int rv = tp_records_load(rd, &shed, &full, err, sizeof(err));
    if (rv == 0 && full.n_resp == 2 && full.resp_ns[0] == 2000 + i && full.resp_ns[1] == 3000 + i &&
        full.text.len == recs[i].text.len && memcmp(full.text.data, recs[i].text.data, full.text.len) == 0)
      good++;
    else
      CHECK(0, "line %zu read back (rv %d: %s)", i, rv, err);
  }
  CHECK(good == 2 * N, "all %d lines read back, in order and out of it, the 3 MiB one included", 2 * N);
  /* A line past the file's end is missing, named as such. */
  tp_record past = recs[N - 1], full;
  past.line_off += 1u << 24;
  CHECK(tp_records_load(rd, &past, &full, err, sizeof(err)) == TP_EPROTO && strstr(err, "missing"),
        "a line past the end is missing: %s", err);
  tp_records_reader_free(rd);
  for (size_t i = 0; i < N; i++) tp_record_fini(&recs[i]);
}

/* "response_text_at" (where each response's text starts): the scan keeps
 * what the writer writes and says when a line holds anything else. */
typedef struct at_case {
  const char *line;
  int rv, has_at, at_ok;
  size_t n;
  uint32_t want[5];
} at_case;

static void test_scan_text_at(void) {
  static const at_case cases[] = {
      {"{\"response_text_at\":[null,0,5,-1,-6]}", 0, 1, 1, 5,
       {TP_RECORD_NO_TEXT, 0, 5, TP_RECORD_AT_REASONING, 5 | TP_RECORD_AT_REASONING}},
      {"{\"response_text_at\":[2147483646,-2147483647]}", 0, 1, 1, 2,
       {TP_RECORD_AT_MAX, TP_RECORD_AT_MAX | TP_RECORD_AT_REASONING}},
      {"{\"response_text_at\":[]}", 0, 1, 1, 0, {0}},
      {"{\"response_text_at\":null}", 0, 0, 0, 0, {0}},
      {"{\"response_text_at\":{\"a\":1}}", 0, 0, 0, 0, {0}},
      /* beyond the offsets a record keeps, or not an offset at all */
      {"{\"response_text_at\":[2147483647]}", 0, 1, 0, 1, {0}},
      {"{\"response_text_at\":[-2147483648]}", 0, 1, 0, 1, {0}},
      {"{\"response_text_at\":[1.5]}", 0, 1, 0, 1, {0}},
      {"{\"response_text_at\":[\"3\"]}", 0, 1, 0, 1, {0}},
      {"{\"response_text_at\":[true,[]]}", 0, 1, 0, 2, {0}},
      {"{\"response_text_at\":[1 2]}", TP_EPROTO, 0, 0, 0, {0}},
      {"{\"response_text_at\":[1,]}", TP_EPROTO, 0, 0, 0, {0}},
  };
  tp__records_fields f;
  memset(&f, 0, sizeof(f));
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const at_case *c = &cases[i];
    int rv = tp__records_scan(c->line, strlen(c->line), &f);
    CHECK(rv == c->rv, "text_at case %zu (%s): rv %d, want %d", i, c->line, rv, c->rv);
    if (rv || c->rv) continue;
    CHECK(f.has_at == (c->has_at != 0) && f.at_ok == (c->at_ok != 0) && f.n_at == c->n,
          "text_at case %zu: kind and count (%d %d %zu)", i, f.has_at, f.at_ok, f.n_at);
    if (c->at_ok && f.n_at == c->n)
      CHECK(c->n == 0 || memcmp(f.text_at, c->want, c->n * sizeof(uint32_t)) == 0, "text_at case %zu: values", i);
  }
  tp__records_fields_fini(&f);
}

/* A shed record's places come back from its line; a line whose places do
 * not match its responses is a records file that changed under the run. */
static void test_text_at_read_back(const char *dir) {
  char path[128];
  snprintf(path, sizeof(path), "%s/text_at.jsonl", dir);
  tp_record r[2];
  FILE *f = fopen(path, "w");
  long at[2];
  for (int i = 0; i < 2; i++) {
    tp_record_init(&r[i]);
    r[i].seq = (uint64_t)i;
    tp_record_add_response(&r[i], 100, true);
    tp_record_append_text(&r[i], true, "think", 5, false);
    tp_record_add_response(&r[i], 200, true);
    tp_record_append_text(&r[i], false, "ab", 2, false);
    tp_record_add_response(&r[i], 300, false);
    r[i].done_ns = 300;
    tp_records_line l = {"id", 0, TP_LOAD_CONCURRENCY, 1, 0, false, NULL, TP_RECORD_MEASURED, NULL};
    char *line = tp_records_format(&r[i], &l);
    char *p = strstr(line, "\"response_text_at\":[-1,0,null]");
    CHECK(p != NULL, "the line says where each response's text starts (%s)", line);
    if (p && i == 1) memcpy(p, "\"response_text_at\":[-1,0]     ", 30); /* one place short, same length */
    at[i] = ftell(f);
    fprintf(f, "%s\n", line);
    free(line);
    tp_record_shed(&r[i], (uint64_t)at[i]);
  }
  fclose(f);
  tp_records_reader *rd = NULL;
  char err[512] = "";
  CHECK_INT(tp_records_reader_open(&rd, path, err, sizeof(err)), 0, "the file opens");
  tp_record full;
  static const uint32_t want[3] = {TP_RECORD_AT_REASONING, 0, TP_RECORD_NO_TEXT};
  CHECK_INT(tp_records_load(rd, &r[0], &full, err, sizeof(err)), 0, "a shed record reads back");
  CHECK(full.resp_text_at && memcmp(full.resp_text_at, want, sizeof(want)) == 0, "its places come back");
  CHECK_INT(tp_records_load(rd, &r[1], &full, err, sizeof(err)), TP_EPROTO, "a line short of a place is refused");
  CHECK(strstr(err, "response text offsets") != NULL, "and says so (%s)", err);
  tp_records_reader_free(rd);
  for (int i = 0; i < 2; i++) tp_record_fini(&r[i]);
}

/* The ids a line carries (docs/metrics.md, "Request ids"). */
static void test_request_ids(void) {
  tp_record r;
  tp_record_init(&r);
  tp_record_set_server_id(&r, "abc\x01\xc3\xa9" "d", 7);
  CHECK_STR(r.server_id, "abc???d", "a server id keeps printable ASCII, other bytes '?'");
  tp_record_set_server_id(&r, "second", 6);
  CHECK_STR(r.server_id, "abc???d", "the first id stays (a stream repeats it)");
  tp_record_init(&r);
  char longid[200];
  memset(longid, 'x', sizeof(longid));
  tp_record_set_server_id(&r, longid, sizeof(longid));
  CHECK_INT((int)strlen(r.server_id), TP_RECORD_SERVER_ID_MAX - 1, "a long id is cut to the room");
  tp_record_set_server_id(&r, NULL, 0);
  CHECK(!tp_record_has_trace(&r), "no trace sent");
  for (int i = 0; i < 16; i++) r.trace_id[i] = (uint8_t)(0x4b + i * 0x11);
  for (int i = 0; i < 8; i++) r.span_id[i] = (uint8_t)(0x00 + i * 0x21);
  char tp[TP_TRACEPARENT_LEN + 1];
  tp_record_traceparent(&r, tp);
  CHECK(tp_record_has_trace(&r), "a trace sent");
  CHECK_STR(tp, "00-4b5c6d7e8fa0b1c2d3e4f5061728394a-0021426384a5c6e7-01",
            "traceparent: version 00, trace id, parent id, sampled (W3C Trace Context)");
  CHECK_INT((int)strlen(tp), TP_TRACEPARENT_LEN, "55 characters");
  tp_records_line l = {"c2-9", 0, TP_LOAD_CONCURRENCY, 2, 0, false, NULL, TP_RECORD_MEASURED, NULL};
  r.done_ns = 5;
  char *line = tp_records_format(&r, &l);
  CHECK(line && strstr(line, "\"id\":\"c2-9\",\"request_id\":\"c2-9\",\"server_request_id\":\"xxx") &&
            strstr(line, "\"traceparent\":\"00-4b5c6d7e8fa0b1c2d3e4f5061728394a-0021426384a5c6e7-01\""),
        "the line: request_id, server_request_id, traceparent: %s", line ? line : "(null)");
  free(line);
  tp_record_fini(&r);
  tp_record_init(&r);
  r.done_ns = 5;
  line = tp_records_format(&r, &l);
  CHECK(line && strstr(line, "\"server_request_id\":null") && !strstr(line, "traceparent"),
        "no server id: null; no trace: no traceparent");
  free(line);
  tp_record_fini(&r);
}

int main(void) {
  char dir[] = "/tmp/tp_records_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  test_format_and_lossless();
  test_format_as_jansson();
  test_request_ids();
  test_scan_table();
  test_scan_own_lines();
  test_scan_text_at();
  test_text_at_read_back(dir);
  test_mark_measured(dir);
  test_read_window(dir);
  test_exports_identical(dir, 6);
  /* Long answers: over a MiB of export per level, so the spill path runs. */
  char big[64];
  snprintf(big, sizeof(big), "%s/big", dir);
  mkdir(big, 0700);
  test_exports_identical(big, 3000);
  char cmd[128];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
  if (system(cmd)) return 1;
  return tp_test_done();
}

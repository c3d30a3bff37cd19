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
      if (text) tp_buf_printf(&r[i].text, " w%zu", j);
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
    tp_records_line l = {id, 0, TP_LOAD_CONCURRENCY, 4, 0, false, NULL, TP_RECORD_MEASURED};
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
  tp_records_line l = {"c1-3", 2, TP_LOAD_RATE, 0, 2.5, false, NULL, TP_RECORD_MEASURED};
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

  tp_export_level em = {&lr, qm, NREC, 0, 0}, es = {&ls, qs, NREC, 0, 0};
  tp_buf a, b;
  tp_buf_init(&a);
  tp_buf_init(&b);
  CHECK_INT(tp_export_pa_experiment(&a, &em, 128, MONO0, WALL0), 0, "profile export from memory");
  CHECK_INT(tp_export_pa_experiment(&b, &es, 128, MONO0, WALL0), 0, "profile export read back");
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
  int rv = tp_export_pa_experiment(&b, &es, 128, MONO0, WALL0);
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
                         i == 0 ? TP_RECORD_UNMEASURED : TP_RECORD_PENDING};
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

int main(void) {
  char dir[] = "/tmp/tp_records_XXXXXX";
  if (!mkdtemp(dir)) return 1;
  test_format_and_lossless();
  test_mark_measured(dir);
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

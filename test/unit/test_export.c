/* Unit tests for lib/report/tp_export.c: perf_analyzer's profile export,
 * GenAI-Perf's summary JSON and CSV, responses.jsonl, accuracy, and the
 * artifact directory.
 *
 * The layouts are checked against facts written down from the other tools'
 * own sources and documents, not against our own output:
 *   - perf_analyzer profile export (client repo, profile_data_exporter.cc,
 *     docs/examples/decoupled_output_file.json, and the LLM guide's
 *     calculate_avg_first_token_latency.py in the seed document 003):
 *     {"experiments": [{"experiment": {"mode": "concurrency", "value": N},
 *     "requests": [{"timestamp", "request_inputs", "response_timestamps",
 *     "response_outputs"}], "window_boundaries": [...]}], "version": ...};
 *     timestamps are uint64 nanoseconds since the epoch (system_clock);
 *     BYTES inputs are strings, INT32 inputs integers; each response output
 *     is an object of output name to string.  The guide computes
 *     first-token latency as response_timestamps[0] - timestamp, in ns.
 *   - GenAI-Perf's profile data parser reads data["service_kind"] (and
 *     data["endpoint"] for openai) and, for triton, request_inputs
 *     ["text_input"] and response_outputs[i]["text_output"].
 *   - GenAI-Perf JSON (json_exporter.py, statistics.py): the stats dict
 *     plus "input_config"; each request metric is {"unit", "avg", "p1",
 *     "p5", "p10", "p25", "p50", "p75", "p90", "p95", "p99", "min", "max",
 *     "std"}, system metrics only {"unit", "avg"}; units "ms" for the
 *     times, "tokens/sec" for output_token_throughput, "tokens/sec/user"
 *     for output_token_throughput_per_user, "requests/sec" for
 *     request_throughput and request_goodput, "count" for request_count,
 *     "tokens" for the sequence lengths.  The file name is
 *     f"{stem}_genai_perf.json" with stem the profile export's name without
 *     its extension.
 *   - GenAI-Perf CSV (csv_exporter.py, exporter_utils.py): the header
 *     "Metric,avg,min,max,p99,p95,p90,p75,p50,p25,p10,p5,p1", rows TTFT,
 *     TTST, request latency, ITL, per-user, OSL, ISL, an empty row, then
 *     "Metric,Value" from the output token throughput on; a label is the
 *     key in title case and " (unit)" ("tokens" too, "per sec" for the
 *     rates); every number "{:,.2f}"; the streaming figures left out
 *     without streaming.
 *   - AIPerf (docs/tutorials/working-with-profile-exports.md):
 *     profile_export_aiperf.json holds {"unit", "avg", "p1" ... "p99",
 *     "min", "max", "std"} per metric, {"unit", "avg"} for a single value
 *     (request_count in "requests", benchmark_duration in "sec"); the CSV's
 *     header is "Metric,avg,min,max,p1,p5,p10,p25,p50,p75,p90,p95,p99,std",
 *     labels like "Time to First Token (ms)", "Output Sequence Length
 *     (tokens)", "Request Count", values "%.2f".
 *     profile_export.jsonl holds one line per request: "metadata"
 *     (session_num, turn_index, request_start_ns, request_ack_ns,
 *     request_end_ns in epoch ns, worker_id, record_processor_id,
 *     benchmark_phase "profiling", was_cancelled, cancellation_time_ns),
 *     "metrics" ({"value", "unit"} per metric; inter_chunk_latency a list;
 *     a failed request error_isl) and "error" (null, or {"code", "type",
 *     "message"}).
 *   The canonical files written from these facts are test/data/export/. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "metrics/tp_metric.h"
#include "metrics/tp_stats.h"
#include "report/tp_export.h"
#include "report/tp_export_internal.h"
#include "tp_test.h"
#include "tp_test_config.h"
#include "tokperf/tokperf.h"

#define WALL0 1700000000000000000ULL /* 2023-11-14T22:13:20Z in ns */
#define MONO0 5000000000ULL

/* A record sent at sent_ns whose responses arrive at resp[i] (text on the
 * ones with has_text[i]: all of text came with the first of them); done at
 * the last response. */
static void mk_rec(tp_record *r, uint64_t seq, uint64_t sent_ns, const uint64_t *resp, const bool *has_text,
                   int nresp, const char *text, int64_t in_tok, int64_t out_tok) {
  tp_record_init(r);
  r->seq = seq;
  r->prompt_index = (uint32_t)seq * 10;
  r->planned_ns = sent_ns;
  r->sent_ns = sent_ns;
  bool put = false;
  for (int i = 0; i < nresp; i++) {
    tp_record_add_response(r, resp[i], has_text[i]);
    if (has_text[i] && text && !put) put = tp_record_append_text(r, false, text, strlen(text), false) == 0;
  }
  r->done_ns = nresp ? resp[nresp - 1] : 0;
  if (text && !put) tp_buf_append_str(&r->text, text);
  r->input_tokens = in_tok;
  r->output_tokens = out_tok;
}

static char *read_file(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  tp_buf b;
  tp_buf_init(&b);
  char chunk[4096];
  size_t n;
  while ((n = fread(chunk, 1, sizeof(chunk), f)) > 0) tp_buf_append(&b, chunk, n);
  fclose(f);
  if (!b.data) tp_buf_append(&b, "", 0);
  return tp_buf_steal(&b, len);
}

static bool exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static int count_tmp(const char *dir) {
  DIR *d = opendir(dir);
  int n = 0;
  if (!d) return -1;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strstr(e->d_name, ".tmp.")) n++;
  closedir(d);
  return n;
}

/* The names of dir's *.json files, sorted, joined by spaces (static). */
static const char *json_names(const char *dir) {
  static char out[512];
  char names[16][128];
  int n = 0;
  out[0] = 0;
  DIR *d = opendir(dir);
  if (!d) return out;
  struct dirent *e;
  while ((e = readdir(d)) && n < 16) {
    size_t l = strlen(e->d_name);
    if (l > 5 && !strcmp(e->d_name + l - 5, ".json")) snprintf(names[n++], sizeof(names[0]), "%s", e->d_name);
  }
  closedir(d);
  qsort(names, (size_t)n, sizeof(names[0]), (int (*)(const void *, const void *))strcmp);
  for (int i = 0; i < n; i++)
    snprintf(out + strlen(out), sizeof(out) - strlen(out), "%s%s", i ? " " : "", names[i]);
  return out;
}

static void rm_rf(const char *path) {
  char cmd[512];
  snprintf(cmd, sizeof(cmd), "rm -rf '%s'", path);
  if (system(cmd)) fprintf(stderr, "cleanup of %s failed\n", path);
}

/* ------------------------------------------------------------------------ */

static void test_wall_clock(void) {
  CHECK(tp_export_wall_ns(MONO0, WALL0, MONO0 + 1500) == WALL0 + 1500,
        "wall = wall anchor + (mono - mono anchor)");
  CHECK(tp_export_wall_ns(MONO0, WALL0, MONO0 - 700) == WALL0 - 700,
        "a time before the anchor maps before the wall anchor (no wrap)");
  CHECK(tp_export_wall_ns(MONO0, WALL0, 0) == 0, "0 (did not happen) stays 0");
}

static void test_accuracy_functions(void) {
  CHECK(tp_exact_match(" Paris\n", 7, "Paris", 5), "exact match ignores surrounding whitespace");
  CHECK(!tp_exact_match("paris", 5, "Paris", 5), "exact match is case-sensitive");
  CHECK(!tp_exact_match("Par is", 6, "Paris", 5), "inner whitespace matters");
  CHECK(tp_exact_match("  ", 2, "", 0), "blank equals empty");

  const char *c1 = "the cat sat on the mat", *r1 = "the cat is on the mat";
  /* LCS "the cat on the mat" = 5 of 6 and 6: P = R = F1 = 5/6. */
  CHECK_NEAR(tp_rouge_l_f1(c1, strlen(c1), r1, strlen(r1)), 5.0 / 6.0, 1e-12,
             "ROUGE-L F1, 5 of 6 tokens in order");
  /* "a b c d" vs "b d e": LCS "b d" = 2; P = 2/4, R = 2/3, F1 = 4/7. */
  CHECK_NEAR(tp_rouge_l_f1("a b c d", 7, "b d e", 5), 4.0 / 7.0, 1e-12, "ROUGE-L F1 with unequal lengths");
  /* Order matters: "d c b a" vs "a b c d" share only one token in order. */
  CHECK_NEAR(tp_rouge_l_f1("d c b a", 7, "a b c d", 7), 0.25, 1e-12,
             "ROUGE-L counts a subsequence, not a bag");
  CHECK_NEAR(tp_rouge_l_f1("x  y\n\tz", 7, "x y z", 5), 1.0, 1e-12, "any whitespace separates tokens");
  CHECK_NEAR(tp_rouge_l_f1("", 0, "a", 1), 0.0, 0, "empty candidate scores 0");
  CHECK_NEAR(tp_rouge_l_f1("a", 1, "   ", 3), 0.0, 0, "empty reference scores 0");
  CHECK_NEAR(tp_rouge_l_f1("p q", 3, "r s", 3), 0.0, 0, "nothing in common scores 0");
  CHECK_NEAR(tp_rouge_l_f1("Cat", 3, "cat", 3), 0.0, 0, "tokens compare case-sensitively");
}

static void test_accuracy_compute(void) {
  tp_record r[7];
  uint64_t t[2] = {MONO0 + 2000, MONO0 + 3000};
  bool ht[2] = {true, true};
  const char *texts[7] = {" Paris", "Berlin is big", "4", "the cat sat", "Rome", "Oslo", "x"};
  for (int i = 0; i < 7; i++) mk_rec(&r[i], (uint64_t)i, MONO0 + 1000, t, ht, 2, texts[i], 5, 3);
  r[4].warmup = true;
  tp_record_fail(&r[5], TP_ERRCLASS_TIMEOUT, -1, "deadline", 8);
  tp_export_request q[7] = {{&r[0], "Capital of France?", 18, "Paris", 0, NULL, {0}, {0}},
                            {&r[1], "Capital of Germany?", 19, "Berlin", 0, NULL, {0}, {0}},
                            {&r[2], "2+2?", 4, "4", 0, NULL, {0}, {0}},
                            {&r[3], "cat?", 4, "the cat sat on the mat", 0, NULL, {0}, {0}},
                            {&r[4], "warm", 4, "Rome", 0, NULL, {0}, {0}},
                            {&r[5], "failed", 6, "Oslo", 0, NULL, {0}, {0}},
                            {&r[6], "no reference", 12, NULL, 0, NULL, {0}, {0}}};
  tp_accuracy acc;
  CHECK_INT(tp_accuracy_compute(&acc, q, 7), 0, "accuracy computes");
  CHECK_INT(acc.scored, 4,
            "scored: measured, succeeded, with a reference (warm-up, failed, unreferenced left out)");
  CHECK_INT(acc.exact, 2, "two exact matches");
  CHECK_NEAR(acc.exact_match_rate, 0.5, 1e-12, "exact-match rate 2/4");
  /* Paris 1, "Berlin is big" vs "Berlin": P 1/3 R 1 -> 0.5, "4" 1,
   * "the cat sat" vs 6 tokens: P 1 R 1/2 -> 2/3. */
  double want = (1 + 0.5 + 1 + 2.0 / 3.0) / 4;
  CHECK_NEAR(acc.rouge_l_f1, want, 1e-12, "ROUGE-L F1 is the mean over scored requests");

  tp_accuracy total = {0}, one = acc;
  tp_accuracy_merge(&total, &one);
  tp_accuracy_merge(&total, &one);
  CHECK_INT(total.scored, 8, "merge adds counts");
  CHECK_NEAR(total.rouge_l_f1, want, 1e-12, "merged mean of two equal levels is the same mean");
  for (int i = 0; i < 7; i++) tp_record_fini(&r[i]);
}

/* A level of 4 measured requests (one failed, one warm-up before them),
 * sent out of seq order to check the send-order rule. */
typedef struct fixture {
  tp_record r[5];
  tp_export_request q[5];
  tp_level_result lr;
} fixture;

static void fixture_init(fixture *f, uint32_t conc) {
  uint64_t b = MONO0 + 1000000;
  /* seq 0: sent second; first response empty (role-only), then two text. */
  uint64_t t0[4] = {b + 15000000, b + 20000000, b + 28000000, b + 30000000};
  bool h0[4] = {false, true, true, false};
  mk_rec(&f->r[0], 0, b + 5000000, t0, h0, 4, "Hello \"world\"\n", 7, 3);
  /* seq 1: sent first. */
  uint64_t t1[3] = {b + 12000000, b + 19000000, b + 26000000};
  bool h1[3] = {true, true, true};
  mk_rec(&f->r[1], 1, b, t1, h1, 3, "abc", 4, 3);
  /* seq 2: failed. */
  uint64_t t2[1] = {b + 40000000};
  bool h2[1] = {true};
  mk_rec(&f->r[2], 2, b + 6000000, t2, h2, 1, "partial", 4, 1);
  tp_record_fail(&f->r[2], TP_ERRCLASS_GRPC_STATUS, 13, "INTERNAL: boom", 14);
  /* seq 3: a warm-up, long before. */
  uint64_t t3[2] = {b - 900000, b - 500000};
  bool h3[2] = {true, true};
  mk_rec(&f->r[3], 3, b - 1000000, t3, h3, 2, "warm", 2, 2);
  f->r[3].warmup = true;
  /* seq 4: one response only. */
  uint64_t t4[1] = {b + 50000000};
  bool h4[1] = {true};
  mk_rec(&f->r[4], 4, b + 7000000, t4, h4, 1, "caf\xc3\xa9 \xff", 5, 2);
  static const char *prompts[5] = {"Say \"hi\"\n", "p1", "p2", "p3", "p4 \x01"};
  static const char *refs[5] = {"Hello \"world\"", NULL, "partial", "warm", "caf\xc3\xa9"};
  for (int i = 0; i < 5; i++)
    f->q[i] = (tp_export_request){&f->r[i], prompts[i], strlen(prompts[i]), refs[i], i == 1 ? 64 : 0, NULL, {0}, {0}};
  tp_level_compute(&f->lr, f->r, 5);
  f->lr.concurrency = conc;
}

static void fixture_fini(fixture *f) {
  for (int i = 0; i < 5; i++) tp_record_fini(&f->r[i]);
}

static void test_pa_experiment(void) {
  fixture f;
  fixture_init(&f, 4);
  tp_buf b;
  tp_buf_init(&b);
  tp_export_level el = {&f.lr, f.q, 5, 0, 0, NULL};
  CHECK_INT(tp_export_pa_experiment(&b, &el, NULL, 128, MONO0, WALL0), 0, "experiment renders");
  json_error_t je;
  json_t *e = json_loadb((const char *)b.data, b.len, 0, &je);
  CHECK(e != NULL, "experiment is valid JSON (%s)", e ? "ok" : je.text);
  json_t *x = json_object_get(e, "experiment");
  CHECK_STR(json_string_value(json_object_get(x, "mode")), "concurrency",
            "experiment.mode is \"concurrency\"");
  CHECK_INT(json_integer_value(json_object_get(x, "value")), 4, "experiment.value is the concurrency");
  json_t *reqs = json_object_get(e, "requests");
  CHECK_INT(json_array_size(reqs), 3, "requests: measured and succeeded only (failed and warm-up out)");

  json_t *q0 = json_array_get(reqs, 0), *q1 = json_array_get(reqs, 1);
  uint64_t b0 = MONO0 + 1000000;
  CHECK(json_is_integer(json_object_get(q0, "timestamp")) &&
            (uint64_t)json_integer_value(json_object_get(q0, "timestamp")) == WALL0 + (b0 - MONO0),
        "timestamp: wall-clock ns of the actual send; requests in send order");
  json_t *in0 = json_object_get(q0, "request_inputs");
  CHECK_STR(json_string_value(json_object_get(in0, "text_input")), "p1",
            "request_inputs.text_input is the prompt (BYTES as a string)");
  CHECK(json_is_integer(json_object_get(in0, "max_tokens")) &&
            json_integer_value(json_object_get(in0, "max_tokens")) == 64,
        "request_inputs.max_tokens is an integer (INT32), the request's own");
  json_t *in1 = json_object_get(q1, "request_inputs");
  CHECK_STR(json_string_value(json_object_get(in1, "text_input")), "Say \"hi\"\n",
            "quotes and newlines survive");
  CHECK_INT(json_integer_value(json_object_get(in1, "max_tokens")), 128, "max_tokens 0 takes the default");

  json_t *ts1 = json_object_get(q1, "response_timestamps"), *out1 = json_object_get(q1, "response_outputs");
  CHECK_INT(json_array_size(ts1), 4, "every response message is timestamped, empty ones included");
  CHECK_INT(json_array_size(out1), 4, "one response output per timestamp");
  CHECK((uint64_t)json_integer_value(json_array_get(ts1, 3)) == WALL0 + (b0 + 30000000 - MONO0),
        "response timestamps in wall-clock ns");
  CHECK_STR(json_string_value(json_object_get(json_array_get(out1, 0), "text_output")), "",
            "an empty response has empty text_output");
  CHECK_STR(json_string_value(json_object_get(json_array_get(out1, 1), "text_output")), "Hello \"world\"\n",
            "the text sits on the first response that carried text");
  tp_buf all;
  tp_buf_init(&all);
  for (size_t i = 0; i < json_array_size(out1); i++)
    tp_buf_append_str(&all, json_string_value(json_object_get(json_array_get(out1, i), "text_output")));
  CHECK_STR((const char *)all.data, "Hello \"world\"\n",
            "joining text_output gives the generated text (token totals hold)");
  tp_buf_fini(&all);
  json_t *q2 = json_array_get(reqs, 2);
  CHECK_STR(json_string_value(
                json_object_get(json_array_get(json_object_get(q2, "response_outputs"), 0), "text_output")),
            "caf\xc3\xa9 \xef\xbf\xbd", "invalid UTF-8 in the text becomes U+FFFD");

  json_t *wb = json_object_get(e, "window_boundaries");
  CHECK_INT(json_array_size(wb), 2, "window_boundaries: [start, end]");
  uint64_t w0 = (uint64_t)json_integer_value(json_array_get(wb, 0)),
           w1 = (uint64_t)json_integer_value(json_array_get(wb, 1));
  CHECK(w0 == WALL0 + (b0 - MONO0), "window starts at the first measured send");
  CHECK_NEAR((double)(w1 - w0), f.lr.duration_s * 1e9, 0.5, "window length is the level's duration");

  /* The seed guide's script, on requests whose first response carries
   * text, gives tokperf's TTFT: drop the one that leads with an empty
   * response and compare with the level computed over the same set. */
  double sum_ns = 0;
  int cnt = 0;
  for (size_t i = 0; i < json_array_size(reqs); i++) {
    json_t *q = json_array_get(reqs, i);
    const char *t0 = json_string_value(
        json_object_get(json_array_get(json_object_get(q, "response_outputs"), 0), "text_output"));
    if (!t0 || !*t0) continue;
    sum_ns += (double)(json_integer_value(json_array_get(json_object_get(q, "response_timestamps"), 0)) -
                       json_integer_value(json_object_get(q, "timestamp")));
    cnt++;
  }
  tp_record sub[2];
  memcpy(&sub[0], &f.r[1], sizeof(tp_record));
  memcpy(&sub[1], &f.r[4], sizeof(tp_record));
  tp_level_result lsub;
  tp_level_compute(&lsub, sub, 2);
  CHECK_INT(cnt, 2, "two requests lead with text");
  CHECK_NEAR(sum_ns / cnt / 1e9, lsub.ttft_ms.avg / 1e3, 1e-9,
             "calculate_avg_first_token_latency.py's figure equals tokperf's TTFT avg");
  json_decref(e);

  /* Rate mode, and a level measured over windows: perf_analyzer's
   * request_rate mode, and the window as given. */
  tp_level_result rl = f.lr;
  rl.load_mode = TP_LOAD_RATE;
  rl.request_rate = 2.5;
  tp_export_level el2 = {&rl, f.q, 5, MONO0 + 2000000, MONO0 + 9000000, NULL};
  tp_buf_reset(&b);
  CHECK_INT(tp_export_pa_experiment(&b, &el2, NULL, 128, MONO0, WALL0), 0, "rate-mode experiment renders");
  e = json_loadb((const char *)b.data, b.len, 0, &je);
  x = json_object_get(e, "experiment");
  CHECK_STR(json_string_value(json_object_get(x, "mode")), "request_rate",
            "rate mode: experiment.mode is \"request_rate\"");
  CHECK(json_is_real(json_object_get(x, "value")) && json_real_value(json_object_get(x, "value")) == 2.5,
        "rate mode: experiment.value is the rate, a number");
  wb = json_object_get(e, "window_boundaries");
  CHECK((uint64_t)json_integer_value(json_array_get(wb, 0)) == WALL0 + 2000000 &&
            (uint64_t)json_integer_value(json_array_get(wb, 1)) == WALL0 + 9000000,
        "a given measurement window is written as it is");
  json_decref(e);
  tp_buf_fini(&b);
  fixture_fini(&f);
}

static void set_stat_values(tp_stat *st, const double *v, size_t n) {
  double tmp[16];
  memcpy(tmp, v, n * sizeof(double));
  tp_stat_compute(st, tmp, n);
}

/* The level of the canonical files in test/data/export/: GenAI-Perf's
 * test_csv_exporter.py values, and a second token and a per-user rate for
 * the metrics that test predates. */
static void genai_test_level(tp_level_result *lr) {
  memset(lr, 0, sizeof(*lr));
  lr->concurrency = 1;
  lr->requests = 3;
  lr->succeeded = 3;
  lr->tokens_available = true;
  set_stat_values(&lr->ttft_ms, (double[]){7, 8, 9}, 3);
  /* GenAI-Perf reads the answer alone (its first token, ITL and per-user
   * rate); AIPerf reasoning and answer: the same values here, as for a
   * model that does not reason. */
  set_stat_values(&lr->ttfo_ms, (double[]){7, 8, 9}, 3);
  set_stat_values(&lr->itl_answer_ms, (double[]){10, 11, 12}, 3);
  set_stat_values(&lr->output_tps_per_user_itl_answer, (double[]){100, 200, 300}, 3);
  /* GenAI-Perf's and AIPerf's inter_token_latency is tokperf's ITL, their
   * request latency ends at the last text, AIPerf's output length counts
   * reasoning (docs/metrics.md); tokperf's TPOT and its latency to the
   * stream's end, set apart here, are in neither. */
  set_stat_values(&lr->itl_ms, (double[]){10, 11, 12}, 3);
  set_stat_values(&lr->tpot_ms, (double[]){30, 31, 32}, 3);
  set_stat_values(&lr->latency_last_text_ms, (double[]){4, 5, 6}, 3);
  set_stat_values(&lr->latency_ms, (double[]){40, 50, 60}, 3);
  set_stat_values(&lr->output_tokens, (double[]){1, 2, 3}, 3);
  set_stat_values(&lr->generated_tokens, (double[]){1, 2, 3}, 3);
  set_stat_values(&lr->input_tokens, (double[]){5, 6, 7}, 3);
  set_stat_values(&lr->output_tps_per_user, (double[]){250, 400, 500}, 3);
  set_stat_values(&lr->ttst_ms, (double[]){20, 21, 22}, 3);
  set_stat_values(&lr->output_tps_per_user_itl, (double[]){100, 200, 300}, 3);
  lr->output_token_throughput = 456;
  lr->request_throughput = 123;
  lr->duration_s = 3;
}

/* test/data/export/<name>, whole; NULL when missing. */
static char *canonical(const char *name) {
  const char *root = getenv("TP_SOURCE_ROOT");
  char path[512];
  snprintf(path, sizeof(path), "%s/test/data/export/%s", root ? root : "..", name);
  return read_file(path, NULL);
}

typedef int (*csv_fn)(tp_buf *, const tp_level_result *, bool);

/* The CSV of lr, line by line against the canonical file. */
static void check_csv(csv_fn fn, const tp_level_result *lr, bool streaming, const char *file) {
  char *want = canonical(file);
  CHECK(want != NULL, "test/data/export/%s is readable", file);
  tp_buf b;
  tp_buf_init(&b);
  CHECK(fn(&b, lr, streaming) == 0, "%s renders", file);
  tp_buf_append(&b, "", 0);
  const char *g = (const char *)b.data, *w = want ? want : "";
  int line = 1;
  while (*g || *w) {
    size_t gl = strcspn(g, "\n"), wl = strcspn(w, "\n");
    CHECK(gl == wl && !memcmp(g, w, gl), "%s line %d: got '%.*s', want '%.*s'", file, line, (int)gl, g,
          (int)wl, w);
    g += gl + (g[gl] != 0);
    w += wl + (w[wl] != 0);
    line++;
  }
  tp_buf_fini(&b);
  free(want);
}

static void test_summary_csv(void) {
  tp_level_result lr;
  genai_test_level(&lr);
  check_csv(tp_export_genai_csv, &lr, true, "genai_perf_stream.csv");
  check_csv(tp_export_genai_csv, &lr, false, "genai_perf_nostream.csv");
  check_csv(tp_export_aiperf_csv, &lr, true, "aiperf_stream.csv");
  check_csv(tp_export_aiperf_csv, &lr, false, "aiperf_nostream.csv");

  /* Values of 1000 and more: GenAI-Perf's "{:,.2f}" gives a thousands
   * comma, quoted by Python's csv writer; its Value column and AIPerf's
   * values have none. */
  set_stat_values(&lr.latency_last_text_ms, (double[]){1234.5, 1234.5}, 2);
  lr.itl_ms.n = 0;
  lr.itl_answer_ms.n = 0;
  lr.output_token_throughput = 12345.678;
  tp_buf b;
  tp_buf_init(&b);
  tp_export_genai_csv(&b, &lr, true);
  tp_buf_append(&b, "", 0);
  CHECK(strstr((const char *)b.data, "Request Latency (ms),\"1,234.50\",\"1,234.50\",") != NULL,
        "thousands are comma-grouped and quoted");
  CHECK(strstr((const char *)b.data, "Inter Token Latency") == NULL, "a metric with no values has no row");
  CHECK(strstr((const char *)b.data, "Output Token Throughput (per sec),\"12,345.68\"\r\n") != NULL,
        "the Value column is formatted as the statistics ({:,.2f})");
  tp_buf_reset(&b);
  tp_export_aiperf_csv(&b, &lr, true);
  tp_buf_append(&b, "", 0);
  CHECK(strstr((const char *)b.data, "Request Latency (ms),1234.50,1234.50,") != NULL,
        "AIPerf's values have no thousands comma");
  lr.tokens_available = false;
  tp_buf_reset(&b);
  tp_export_genai_csv(&b, &lr, true);
  tp_buf_append(&b, "", 0);
  CHECK(strstr((const char *)b.data, "Output Token Throughput (") == NULL,
        "no output throughput row without tokens");
  tp_buf_fini(&b);
}

/* got against the canonical document: the same metrics in the same order,
 * each with the same unit and statistics in the same order and values. */
static void check_json(const char *text, const char *file, const char *skip) {
  char *wtext = canonical(file);
  json_error_t je;
  json_t *got = text ? json_loads(text, 0, &je) : NULL, *want = wtext ? json_loads(wtext, 0, &je) : NULL;
  CHECK(got != NULL && want != NULL, "%s: both documents parse", file);
  /* tokperf's own member, the client's figures, is no figure of the tool's
   * (tested in test_fidelity_metadata). */
  CHECK(json_object_get(got, "tokperf_fidelity") != NULL, "%s: tokperf's fidelity member is there", file);
  json_object_del(got, "tokperf_fidelity");
  void *gi = json_object_iter(got), *wi = json_object_iter(want);
  for (; gi && wi; gi = json_object_iter_next(got, gi), wi = json_object_iter_next(want, wi)) {
    if (skip && !strcmp(json_object_iter_key(gi), skip)) gi = json_object_iter_next(got, gi);
    if (!gi) break;
    const char *k = json_object_iter_key(wi);
    char what[256];
    snprintf(what, sizeof(what), "%s: the next metric is %s", file, k);
    CHECK_STR(json_object_iter_key(gi), k, what);
    json_t *g = json_object_iter_value(gi), *w = json_object_iter_value(wi);
    void *gs = json_object_iter(g), *ws = json_object_iter(w);
    for (; gs && ws; gs = json_object_iter_next(g, gs), ws = json_object_iter_next(w, ws)) {
      const char *st = json_object_iter_key(ws);
      json_t *gv = json_object_iter_value(gs), *wv = json_object_iter_value(ws);
      snprintf(what, sizeof(what), "%s: %s's next statistic is %s", file, k, st);
      CHECK_STR(json_object_iter_key(gs), st, what);
      snprintf(what, sizeof(what), "%s: %s.%s", file, k, st);
      if (json_is_string(wv))
        CHECK_STR(json_string_value(gv), json_string_value(wv), what);
      else
        CHECK_NEAR(json_number_value(gv), json_number_value(wv), 1e-9, what);
    }
    CHECK(!gs && !ws, "%s: %s has exactly the canonical statistics", file, k);
  }
  if (gi && skip && !strcmp(json_object_iter_key(gi), skip)) gi = json_object_iter_next(got, gi);
  CHECK(!gi && !wi, "%s: exactly the canonical metrics", file);
  json_decref(got);
  json_decref(want);
  free(wtext);
}

/* Each tool's keys name one row each, so no exported figure hides another;
 * and the keys the canonical files hold are there. */
static void test_registry_keys(void) {
  size_t n;
  const tp_metric *m = tp_metrics(&n);
  bool unique = true;
  size_t genai = 0, aiperf = 0;
  for (size_t i = 0; i < n; i++) {
    genai += m[i].genai_key != NULL;
    aiperf += m[i].aiperf_key != NULL;
    for (size_t j = 0; j < i; j++)
      if ((m[i].aiperf_key && m[j].aiperf_key && !strcmp(m[i].aiperf_key, m[j].aiperf_key)) ||
          (m[i].genai_key && m[j].genai_key && !strcmp(m[i].genai_key, m[j].genai_key)))
        unique = false;
  }
  CHECK(unique, "GenAI-Perf and AIPerf keys are unique in the registry");
  CHECK(genai == 11 && aiperf == 13, "11 GenAI-Perf keys and 13 AIPerf keys (%zu, %zu)", genai, aiperf);
  CHECK_STR(tp_unit_genai(TP_UNIT_TOKENS_PER_S_USER), "tokens/sec/user", "the per-user unit, GenAI-Perf");
  CHECK_STR(tp_unit_aiperf(TP_UNIT_TOKENS_PER_S_USER), "tokens/sec/user", "the per-user unit, AIPerf");
  CHECK_STR(tp_unit_name(TP_UNIT_TOKENS_PER_S_USER), "tokens/s", "the per-user unit, tokperf's report");
  CHECK_STR(tp_unit_genai(TP_UNIT_REQUESTS), "count", "GenAI-Perf's request_count unit");
  CHECK_STR(tp_unit_aiperf(TP_UNIT_S), "sec", "AIPerf's benchmark_duration unit");
  CHECK_STR(tp_metric_find("itl_answer")->genai_key, "inter_token_latency", "GenAI-Perf's ITL is the answer's");
  CHECK_STR(tp_metric_find("ttfo")->genai_key, "time_to_first_token", "GenAI-Perf's TTFT is the first answer's");
  CHECK_STR(tp_metric_find("itl")->aiperf_key, "inter_token_latency", "AIPerf's ITL is tokperf's ITL");
  CHECK(tp_metric_find("tpot")->genai_key == NULL && tp_metric_find("tpot")->aiperf_key == NULL,
        "tokperf's TPOT (vLLM's) is exported under no GenAI-Perf or AIPerf key");
  CHECK_STR(tp_metric_find("latency_last_text")->aiperf_key, "request_latency",
            "the tools' request latency ends at the last text");
  CHECK(tp_metric_find("latency")->genai_key == NULL && tp_metric_find("latency")->aiperf_key == NULL,
        "tokperf's latency to the stream's end is under no tool's key");
  CHECK_STR(tp_metric_find("generated_tokens")->aiperf_key, "output_sequence_length",
            "AIPerf's output length counts reasoning");
}

static void test_summary_json(void) {
  tp_level_result lr;
  genai_test_level(&lr);
  lr.concurrency = 8;
  tp_config cfg;
  tp_test_config_default(&cfg);
  cfg.server.model = "gpt2_vllm";
  cfg.server.backend = TP_BACKEND_VLLM;
  cfg.server.streaming = true;
  char *text = tp_export_genai_json(&lr, &cfg, "art/profile_export.json", "art/concurrency8");
  check_json(text, "genai_perf.json", "input_config");
  free(text);
  text = tp_export_aiperf_json(&lr, true);
  check_json(text, "aiperf.json", NULL);
  free(text);

  /* Without streaming GenAI-Perf's JSON still has the time to first token
   * (each request's one response), and nothing between responses. */
  cfg.server.streaming = false;
  text = tp_export_genai_json(&lr, &cfg, "art/profile_export.json", "art/concurrency8");
  check_json(text, "genai_perf_nostream.json", "input_config");
  free(text);

  lr.itl_ms.n = 0;
  lr.itl_answer_ms.n = 0;
  lr.input_tokens.n = 0;
  text = tp_export_genai_json(&lr, NULL, NULL, NULL);
  json_error_t je;
  json_t *d = text ? json_loads(text, 0, &je) : NULL;
  CHECK(d && !json_object_get(d, "inter_token_latency") && !json_object_get(d, "input_sequence_length"),
        "metrics without values are left out, as GenAI-Perf leaves them out");
  json_decref(d);
  free(text);
  text = tp_export_aiperf_json(&lr, false);
  d = text ? json_loads(text, 0, &je) : NULL;
  CHECK(d && !json_object_get(d, "time_to_first_token") && !json_object_get(d, "time_to_second_token") &&
            json_object_get(d, "request_latency"),
        "AIPerf without streaming: no timings of tokens");
  json_decref(d);
  free(text);
}

/* input_config of text against the canonical file, which is GenAI-Perf's
 * own ConfigCommand.to_json_dict() for the same settings (without the
 * members named in drop, removed from both). */
static void check_input_config(const char *text, const char *file, const char *const *drop) {
  char *wtext = canonical(file);
  json_error_t je;
  json_t *got = text ? json_loads(text, 0, &je) : NULL, *want = wtext ? json_loads(wtext, 0, &je) : NULL;
  json_t *ic = json_object_get(got, "input_config");
  CHECK(ic != NULL && want != NULL, "%s: both documents parse", file);
  for (size_t i = 0; drop && drop[i]; i++) {
    json_object_del(json_object_get(ic, "endpoint"), drop[i]);
    json_object_del(json_object_get(want, "endpoint"), drop[i]);
  }
  /* Section by section, member by member, so that a difference says where. */
  const char *sk;
  json_t *sv;
  json_object_foreach(want, sk, sv) {
    json_t *g = json_object_get(ic, sk);
    if (!json_is_object(sv)) {
      CHECK(json_equal(g, sv), "%s: input_config.%s", file, sk);
      continue;
    }
    const char *k;
    json_t *v;
    json_object_foreach(sv, k, v) CHECK(json_equal(json_object_get(g, k), v), "%s: input_config.%s.%s", file, sk, k);
    CHECK(json_object_size(g) == json_object_size(sv), "%s: input_config.%s has GenAI-Perf's members", file, sk);
  }
  CHECK(json_object_size(ic) == json_object_size(want), "%s: input_config has GenAI-Perf's sections", file);
  json_decref(got);
  json_decref(want);
  free(wtext);
}

static void test_genai_input_config(void) {
  tp_level_result lr;
  genai_test_level(&lr);
  lr.concurrency = 8;
  lr.input_tokens_mean = 512;
  tp_config cfg;
  tp_test_config_default(&cfg);
  cfg.server.model = "gpt2_vllm";
  cfg.server.backend = TP_BACKEND_VLLM;
  cfg.server.streaming = true;
  cfg.server.url = "triton:8001";
  cfg.server.metrics_url = "http://triton:8002/metrics";
  cfg.measure.measure_mode = TP_MEASURE_COUNT;
  cfg.measure.request_count = 100;
  cfg.measure.stability_percentage = 10; /* not used by a count: GenAI-Perf's 999 */
  cfg.measure.warmup_request_count = 5;
  cfg.prompts.output_tokens_mean = 16;
  cfg.prompts.output_tokens_deterministic = true;
  cfg.prompts.input_tokens_stddev = 10;
  cfg.prompts.num_prompts = 50;
  cfg.prompts.random_seed = 42;
  cfg.prompts.prefix_tokens = 32;
  cfg.prompts.num_prefixes = 3;
  cfg.prompts.tokenizer = "hf-internal-testing/llama-tokenizer";
  cfg.measure.goodput_ttft_ms = 200;
  cfg.measure.goodput_itl_ms = 25; /* GenAI-Perf's inter_token_latency ends at the last text, as tokperf's ITL */
  cfg.measure.goodput_latency_ms = 5000;
  cfg.measure.goodput_tpot_ms = 30; /* tokperf's TPOT: no GenAI-Perf name */
  static const char *const extra[] = {"temperature:0.5", "top_k:4",  "ignore_eos:True",
                                      "stop:END",        "beam",     "{\"nested\": {\"a\": 1}}"};
  cfg.server.extra_inputs = extra;
  cfg.server.n_extra_inputs = 6;
  static const char *const headers[] = {"X-Run: 7"};
  cfg.server.headers = headers;
  cfg.server.n_headers = 1;
  char *text = tp_export_genai_json(&lr, &cfg, "art/profile_export.json", "art/concurrency8");
  check_input_config(text, "genai_perf_input_config.json", NULL);
  free(text);
  /* A credential in a header never reaches the summary. */
  static const char *const secret_headers[] = {"X-Run: 7", "X-Api-Key: sk-secret"};
  cfg.server.headers = secret_headers;
  cfg.server.n_headers = 2;
  text = tp_export_genai_json(&lr, &cfg, "art/profile_export.json", "art/concurrency8");
  CHECK(text && !strstr(text, "sk-secret") && strstr(text, "\"X-Api-Key: ***\"") && strstr(text, "\"X-Run: 7\""),
        "input.header: a key-like header's value is masked, the others kept");
  free(text);

  /* An OpenAI chat level at a request rate, measured over time windows,
   * without a tokenizer.  GenAI-Perf writes its default backend for every
   * endpoint type but refuses it when it reads a chat summary back: the
   * backend is "" (unset) there, the rest as GenAI-Perf writes it. */
  tp_test_config_default(&cfg);
  cfg.server.model = "llama";
  cfg.server.service_kind = TP_SERVICE_OPENAI_CHAT;
  cfg.server.streaming = true;
  cfg.server.url = "http://localhost:8000";
  cfg.measure.measure_mode = TP_MEASURE_TIME_WINDOWS;
  cfg.measure.measurement_interval_ms = 4000;
  cfg.measure.stability_percentage = 10;
  cfg.prompts.output_tokens_mean = 0;
  cfg.prompts.tokenizer = NULL;
  genai_test_level(&lr);
  lr.load_mode = TP_LOAD_RATE;
  lr.request_rate = 2.5;
  text = tp_export_genai_json(&lr, &cfg, "/tmp/x/run.json", "art/request_rate2.5");
  static const char *const no_backend[] = {"backend", NULL};
  check_input_config(text, "genai_perf_input_config_chat.json", no_backend);
  json_error_t je;
  json_t *d = text ? json_loads(text, 0, &je) : NULL;
  CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(d, "input_config"), "endpoint"),
                                              "backend")),
            "", "an OpenAI level's backend is unset");
  json_decref(d);
  free(text);
}

/* --cache-bust and --prefix-tokens: the exports give the text sent (marker,
 * prefix, prompt), not the dataset's prompt (issue #15). */
static void test_sent_text(void) {
  fixture f;
  fixture_init(&f, 2);
  for (int i = 0; i < 5; i++) {
    f.q[i].head[0] = "[00000000000000ab] ";
    f.q[i].head_len[0] = 19;
    f.q[i].head[1] = "shared \"prefix\"";
    f.q[i].head_len[1] = 15;
    f.q[i].head[2] = " ";
    f.q[i].head_len[2] = 1;
  }
  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_export_responses_jsonl(&b, &f.lr, f.q, 5), 0, "responses render");
  const char *nl = memchr(b.data, '\n', b.len);
  json_t *o = nl ? json_loadb((const char *)b.data, (size_t)(nl - (const char *)b.data), 0, NULL) : NULL;
  CHECK_STR(json_string_value(json_object_get(o, "prompt")), "[00000000000000ab] shared \"prefix\" Say \"hi\"\n",
            "responses.jsonl: the prompt is the text sent, marker and prefix first");
  json_decref(o);
  tp_buf_reset(&b);
  tp_export_level el = {&f.lr, f.q, 5, 0, 0, NULL};
  CHECK_INT(tp_export_pa_experiment(&b, &el, NULL, 128, MONO0, WALL0), 0, "experiment renders");
  json_t *e = json_loadb((const char *)b.data, b.len, 0, NULL);
  json_t *in0 = json_object_get(json_array_get(json_object_get(e, "requests"), 0), "request_inputs");
  CHECK_STR(json_string_value(json_object_get(in0, "text_input")), "[00000000000000ab] shared \"prefix\" p1",
            "profile export: text_input is the text sent");
  json_decref(e);

  /* OpenAI: perf_analyzer keeps the JSON body sent, as a string, under
   * "payload" (GenAI-Perf's parser reads payload["prompt"] and
   * payload["messages"][i]["content"]).  The bodies here are the OpenAI
   * client's layout: model, the text, max_tokens, stream, stream_options
   * when streaming, min_tokens and ignore_eos with deterministic lengths,
   * then --extra-inputs over them (a NAME:VALUE value as JSON, an object
   * merged). */
  tp_config cfg;
  tp_test_config_default(&cfg);
  cfg.server.model = "m";
  cfg.server.service_kind = TP_SERVICE_OPENAI_COMPLETIONS;
  cfg.prompts.output_tokens_deterministic = true;
  static const char *const extra[] = {"temperature:0.5", "stop:END", "{\"top_k\": 4, \"max_tokens\": 9}"};
  cfg.server.extra_inputs = extra;
  cfg.server.n_extra_inputs = 3;
  for (int i = 0; i < 5; i++) f.r[i].max_tokens = 64;
  static const struct {
    tp_service_kind kind;
    bool streaming, usage;
    const char *body;
  } cases[] = {
      {TP_SERVICE_OPENAI_COMPLETIONS, true, true,
       "{\"model\":\"m\",\"prompt\":\"[00000000000000ab] shared \\\"prefix\\\" p1\",\"max_tokens\":9,"
       "\"stream\":true,\"stream_options\":{\"include_usage\":true},\"min_tokens\":64,\"ignore_eos\":true,"
       "\"temperature\":0.5,\"stop\":\"END\",\"top_k\":4}"},
      {TP_SERVICE_OPENAI_CHAT, false, true,
       "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[00000000000000ab] shared "
       "\\\"prefix\\\" p1\"}],\"max_tokens\":9,\"stream\":false,\"min_tokens\":64,\"ignore_eos\":true,"
       "\"temperature\":0.5,\"stop\":\"END\",\"top_k\":4}"},
      {TP_SERVICE_OPENAI_CHAT, true, false,
       "{\"model\":\"m\",\"messages\":[{\"role\":\"user\",\"content\":\"[00000000000000ab] shared "
       "\\\"prefix\\\" p1\"}],\"max_tokens\":9,\"stream\":true,\"min_tokens\":64,\"ignore_eos\":true,"
       "\"temperature\":0.5,\"stop\":\"END\",\"top_k\":4}"},
  };
  for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
    cfg.server.service_kind = cases[c].kind;
    cfg.server.streaming = cases[c].streaming;
    cfg.server.no_usage = !cases[c].usage;
    tp_buf_reset(&b);
    CHECK(tp_export_pa_experiment(&b, &el, &cfg, 128, MONO0, WALL0) == 0, "OpenAI experiment %zu renders", c);
    e = json_loadb((const char *)b.data, b.len, 0, NULL);
    in0 = json_object_get(json_array_get(json_object_get(e, "requests"), 0), "request_inputs");
    CHECK(json_object_size(in0) == 1, "OpenAI %zu: request_inputs holds the payload alone", c);
    const char *got = json_string_value(json_object_get(in0, "payload"));
    CHECK(got && !strcmp(got, cases[c].body), "OpenAI %zu: the payload is the body sent: got %s", c,
          got ? got : "(none)");
    json_decref(e);
  }
  tp_buf_fini(&b);
  fixture_fini(&f);
}

static void test_responses_jsonl(void) {
  fixture f;
  fixture_init(&f, 2);
  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_export_responses_jsonl(&b, &f.lr, f.q, 5), 0, "responses render");
  int lines = 0;
  json_t *obj[8] = {0};
  const char *p = (const char *)b.data, *end = p + b.len;
  bool all_valid = true;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) break;
    json_error_t je;
    json_t *o = json_loadb(p, (size_t)(nl - p), 0, &je);
    if (!o) all_valid = false;
    if (lines < 8)
      obj[lines] = o;
    else
      json_decref(o);
    lines++;
    p = nl + 1;
  }
  CHECK_INT(lines, 4, "one line per measured request (warm-up out, failed in)");
  CHECK(all_valid, "every line is valid JSON (control characters escaped, bad UTF-8 replaced)");
  CHECK_STR(json_string_value(json_object_get(obj[0], "prompt")), "Say \"hi\"\n", "prompt kept");
  CHECK_STR(json_string_value(json_object_get(obj[0], "output")), "Hello \"world\"\n", "generated text kept");
  CHECK_STR(json_string_value(json_object_get(obj[0], "reference")), "Hello \"world\"", "reference kept");
  CHECK(json_integer_value(json_object_get(obj[0], "id")) == 0 &&
            json_integer_value(json_object_get(obj[0], "concurrency")) == 2,
        "id and concurrency");
  CHECK_STR(json_string_value(json_object_get(obj[0], "level")), "concurrency 2", "the level's name");
  CHECK(json_integer_value(json_object_get(obj[0], "input_tokens")) == 7 &&
            json_integer_value(json_object_get(obj[0], "output_tokens")) == 3,
        "input and output token counts");
  CHECK(json_is_true(json_object_get(obj[0], "exact_match")), "exact match after trimming");
  CHECK_NEAR(json_number_value(json_object_get(obj[0], "rouge_l_f1")), 1.0, 1e-9,
             "ROUGE-L of the same tokens is 1");
  CHECK(!json_object_get(obj[1], "reference") && !json_object_get(obj[1], "exact_match"),
        "no reference: no reference and no scores");
  CHECK(json_is_false(json_object_get(obj[2], "ok")), "the failed request says ok: false");
  CHECK_STR(json_string_value(json_object_get(obj[2], "error")), "grpc_status: INTERNAL: boom",
            "and its error");
  CHECK(!json_object_get(obj[2], "rouge_l_f1"), "a failed request is not scored");
  CHECK_STR(json_string_value(json_object_get(obj[3], "prompt")), "p4 \x01",
            "a control character round-trips through \\u0001");
  CHECK(strstr((const char *)b.data, "\\u0001") != NULL, "control characters are \\u-escaped");
  for (int i = 0; i < 8; i++) json_decref(obj[i]);
  tp_buf_fini(&b);
  fixture_fini(&f);
}

static void test_artifacts(void) {
  char dir[] = "/tmp/tp_export_XXXXXX";
  CHECK(mkdtemp(dir) != NULL, "temporary directory");
  char art[256], path[512];
  snprintf(art, sizeof(art), "%s/run/a", dir);
  tp_config cfg;
  tp_test_config_default(&cfg);
  cfg.server.model = "m";
  cfg.server.streaming = true;
  tp_artifacts_opts o = {
      .dir = art, .cfg = &cfg, .anchor_mono_ns = MONO0, .anchor_wall_ns = WALL0, .html = true};
  tp_artifacts *a = NULL;
  char err[256] = "";
  CHECK_INT(tp_artifacts_open(&a, &o, err, sizeof(err)), 0, "artifacts open, parents created");
  snprintf(path, sizeof(path), "%s/profile_export.json", art);
  CHECK(!exists(path), "the profile export appears only when finished");

  fixture f1, f2;
  fixture_init(&f1, 1);
  fixture_init(&f2, 4);
  tp_accuracy acc1;
  tp_export_level el1 = {&f1.lr, f1.q, 5, 0, 0, NULL}, el2 = {&f2.lr, f2.q, 5, 0, 0, NULL};
  CHECK_INT(tp_artifacts_add_level(a, &el1, &acc1, err, sizeof(err)), 0, "level 1 added");
  CHECK_INT(acc1.scored, 1 + 1, "level accuracy returned (warm-up and failed not scored)");
  CHECK_INT(tp_artifacts_add_level(a, &el2, NULL, err, sizeof(err)), 0, "level 4 added");
  snprintf(path, sizeof(path), "%s/responses.jsonl", art);
  size_t len;
  char *txt = read_file(path, &len);
  int nl = 0;
  for (size_t i = 0; txt && i < len; i++) nl += txt[i] == '\n';
  CHECK_INT(nl, 8, "responses.jsonl is appended as levels end (before finish)");
  free(txt);
  tp_accuracy total;
  tp_artifacts_accuracy(a, &total);
  CHECK_INT(total.scored, 4, "run accuracy merges the levels");
  CHECK_INT(tp_artifacts_finish(a, err, sizeof(err)), 0, "artifacts finish");

  snprintf(path, sizeof(path), "%s/profile_export.json", art);
  txt = read_file(path, &len);
  json_error_t je;
  json_t *d = txt ? json_loadb(txt, len, 0, &je) : NULL;
  CHECK(d != NULL, "profile_export.json is valid JSON");
  CHECK_INT(json_array_size(json_object_get(d, "experiments")), 2, "one experiment per level");
  CHECK_INT(
      json_integer_value(json_object_get(
          json_object_get(json_array_get(json_object_get(d, "experiments"), 1), "experiment"), "value")),
      4, "experiments in sweep order");
  CHECK_STR(json_string_value(json_object_get(d, "service_kind")), "triton",
            "service_kind \"triton\" (GenAI-Perf reads it)");
  CHECK_STR(json_string_value(json_object_get(d, "endpoint")), "", "endpoint \"\"");
  CHECK(json_is_string(json_object_get(d, "version")), "version is a string");
  json_decref(d);
  free(txt);

  /* Each level's directory as GenAI-Perf's artifact directory of one run
   * holds it, so that genai-perf process-export-files reads it: the
   * level's own profile export and GenAI-Perf's summary are its only
   * *.json (it takes the first *.json not named *_genai_perf* as the
   * export, and reads its first experiment). */
  snprintf(path, sizeof(path), "%s/concurrency4", art);
  CHECK_STR(json_names(path), "profile_export.json profile_export_genai_perf.json",
            "concurrency4: the level's profile export and GenAI-Perf's summary are its only *.json");
  snprintf(path, sizeof(path), "%s/concurrency4/profile_export.json", art);
  txt = read_file(path, &len);
  json_t *lvl = txt ? json_loadb(txt, len, 0, &je) : NULL;
  free(txt);
  snprintf(path, sizeof(path), "%s/profile_export.json", art);
  txt = read_file(path, &len);
  d = txt ? json_loadb(txt, len, 0, &je) : NULL;
  free(txt);
  json_t *all = json_object_get(d, "experiments");
  CHECK(lvl && json_array_size(json_object_get(lvl, "experiments")) == 1 &&
            json_equal(json_array_get(json_object_get(lvl, "experiments"), 0), json_array_get(all, 1)),
        "concurrency4/<stem>.json: the level's experiment alone, as in the run's export");
  CHECK(lvl && json_equal(json_object_get(lvl, "service_kind"), json_object_get(d, "service_kind")) &&
            json_equal(json_object_get(lvl, "endpoint"), json_object_get(d, "endpoint")) &&
            json_equal(json_object_get(lvl, "version"), json_object_get(d, "version")),
        "concurrency4/<stem>.json: the run's service kind, endpoint and version");
  snprintf(path, sizeof(path), "%s/concurrency1/profile_export.json", art);
  txt = read_file(path, &len);
  json_decref(lvl);
  lvl = txt ? json_loadb(txt, len, 0, &je) : NULL;
  free(txt);
  json_t *first = json_pack("[O]", json_array_get(all, 0));
  CHECK(lvl && json_equal(json_object_get(lvl, "experiments"), first),
        "concurrency1/<stem>.json: the first level's experiment");
  json_decref(first);
  json_decref(lvl);
  json_decref(d);

  snprintf(path, sizeof(path), "%s/concurrency4/profile_export_genai_perf.csv", art);
  txt = read_file(path, &len);
  static const char head[] = "Metric,avg,min,max,p99,p95,p90,p75,p50,p25,p10,p5,p1\r\n";
  CHECK(txt && !strncmp(txt, head, sizeof(head) - 1), "concurrency4/<stem>_genai_perf.csv");
  free(txt);
  /* AIPerf's files in aiperf/, as AIPerf's own artifact directory holds
   * them. */
  snprintf(path, sizeof(path), "%s/concurrency4/aiperf/profile_export_aiperf.csv", art);
  txt = read_file(path, &len);
  static const char aiperf_head[] = "Metric,avg,min,max,p1,p5,p10,p25,p50,p75,p90,p95,p99,std\r\n";
  CHECK(txt && !strncmp(txt, aiperf_head, sizeof(aiperf_head) - 1),
        "concurrency4/aiperf/<stem>_aiperf.csv, AIPerf's name");
  free(txt);
  snprintf(path, sizeof(path), "%s/concurrency4/aiperf/profile_export_aiperf.json", art);
  txt = read_file(path, &len);
  d = txt ? json_loadb(txt, len, 0, &je) : NULL;
  CHECK(d && json_object_get(d, "request_count") && json_object_get(d, "request_latency"),
        "concurrency4/aiperf/<stem>_aiperf.json holds the level's metrics");
  json_decref(d);
  free(txt);
  snprintf(path, sizeof(path), "%s/concurrency4/aiperf/profile_export.jsonl", art);
  txt = read_file(path, &len);
  nl = 0;
  for (size_t i = 0; txt && i < len; i++) nl += txt[i] == '\n';
  CHECK(txt && nl == 4 && !strncmp(txt, "{\"metadata\":", 12),
        "concurrency4/aiperf/<stem>.jsonl: AIPerf's per-record lines beside its summary");
  free(txt);
  snprintf(path, sizeof(path), "%s/accuracy.json", art);
  txt = read_file(path, &len);
  d = txt ? json_loadb(txt, len, 0, &je) : NULL;
  CHECK(d && json_integer_value(json_object_get(json_object_get(d, "run"), "scored")) == 4,
        "accuracy.json with per-run totals");
  CHECK(d && json_array_size(json_object_get(d, "levels")) == 2, "accuracy.json per level");
  json_decref(d);
  free(txt);
  snprintf(path, sizeof(path), "%s/report.html", art);
  txt = read_file(path, &len);
  CHECK(txt && !strncmp(txt, "<!DOCTYPE html>", 15), "report.html written at finish");
  free(txt);
  snprintf(path, sizeof(path), "%s/concurrency4", art);
  int ntmp = count_tmp(path);
  snprintf(path, sizeof(path), "%s/concurrency4/aiperf", art);
  ntmp += count_tmp(path);
  CHECK_INT(count_tmp(art) + ntmp, 0, "no temporary files left behind");
  tp_artifacts_free(a);

  /* A named profile export: GenAI-Perf's stem rule. */
  snprintf(art, sizeof(art), "%s/b", dir);
  o.dir = art;
  o.profile_export_file = "my_run.v2.json";
  o.html = false;
  CHECK_INT(tp_artifacts_open(&a, &o, err, sizeof(err)), 0, "artifacts with a named profile export");
  tp_artifacts_add_level(a, &el1, NULL, err, sizeof(err));
  tp_artifacts_add_level(a, &el1, NULL, err, sizeof(err));
  tp_artifacts_finish(a, err, sizeof(err));
  tp_artifacts_free(a);
  snprintf(path, sizeof(path), "%s/my_run.v2.json", art);
  CHECK(exists(path), "the profile export takes the given name");
  snprintf(path, sizeof(path), "%s/concurrency1/my_run.v2_genai_perf.json", art);
  CHECK(exists(path), "stem = name without its last extension");
  snprintf(path, sizeof(path), "%s/concurrency1_2/my_run.v2_genai_perf.csv", art);
  CHECK(exists(path), "a repeated level gets its own directory instead of overwriting");
  snprintf(path, sizeof(path), "%s/report.html", art);
  CHECK(!exists(path), "no report.html when html is off");

  /* Level directories for rate mode and swept lengths. */
  snprintf(art, sizeof(art), "%s/r", dir);
  o.dir = art;
  o.profile_export_file = NULL;
  tp_level_result rl = f1.lr;
  rl.load_mode = TP_LOAD_RATE;
  rl.request_rate = 2.5;
  rl.input_tokens_mean = 512;
  tp_export_level elr = {&rl, f1.q, 5, 0, 0, NULL};
  tp_artifacts_open(&a, &o, err, sizeof(err));
  CHECK_INT(tp_artifacts_add_level(a, &elr, NULL, err, sizeof(err)), 0, "a rate level added");
  tp_artifacts_finish(a, err, sizeof(err));
  tp_artifacts_free(a);
  snprintf(path, sizeof(path), "%s/request_rate2.5_input512/profile_export_genai_perf.json", art);
  txt = read_file(path, &len);
  d = txt ? json_loadb(txt, len, 0, &je) : NULL;
  CHECK(d != NULL, "rate level: request_rate<R>_input<I>/<stem>_genai_perf.json");
  json_t *ic = json_object_get(d, "input_config");
  json_t *stim = json_object_get(json_object_get(ic, "perf_analyzer"), "stimulus");
  CHECK(json_object_size(stim) == 1 && json_real_value(json_object_get(stim, "request_rate")) == 2.5,
        "rate level: GenAI-Perf's stimulus is the request rate");
  json_t *syn = json_object_get(json_object_get(ic, "input"), "synthetic_tokens");
  CHECK_INT(json_integer_value(json_object_get(syn, "mean")), 512,
            "rate level: the swept input length is GenAI-Perf's synthetic_tokens.mean");
  json_decref(d);
  free(txt);
  /* A whole rate is written as Python writes a float, as GenAI-Perf names
   * its directories. */
  rl.request_rate = 20;
  tp_artifacts_open(&a, &o, err, sizeof(err));
  CHECK_INT(tp_artifacts_add_level(a, &elr, NULL, err, sizeof(err)), 0, "a whole-rate level added");
  tp_artifacts_finish(a, err, sizeof(err));
  tp_artifacts_free(a);
  snprintf(path, sizeof(path), "%s/request_rate20.0_input512/profile_export_genai_perf.json", art);
  txt = read_file(path, &len);
  CHECK(txt != NULL, "rate 20: request_rate20.0_input512, GenAI-Perf's directory name");
  free(txt);
  /* perf_analyzer writes the rate as a double and GenAI-Perf finds the
   * experiment by str() of it against f"{rate}": 20.0, not 20. */
  snprintf(path, sizeof(path), "%s/request_rate20.0_input512/profile_export.json", art);
  txt = read_file(path, &len);
  CHECK(txt && strstr(txt, "{\"experiment\":{\"mode\":\"request_rate\",\"value\":20.0}"),
        "rate 20: the experiment's value is 20.0, as Python writes the float");
  free(txt);
  snprintf(path, sizeof(path), "%s/request_rate2.5_input512/profile_export.json", art);
  txt = read_file(path, &len);
  CHECK(txt && strstr(txt, "\"value\":2.5}"), "rate 2.5: the value in the fewest digits, 2.5");
  free(txt);

  /* An unfinished handle leaves no half document. */
  snprintf(art, sizeof(art), "%s/c", dir);
  o.dir = art;
  o.profile_export_file = NULL;
  CHECK_INT(tp_artifacts_open(&a, &o, err, sizeof(err)), 0, "artifacts opened");
  tp_artifacts_add_level(a, &el1, NULL, err, sizeof(err));
  tp_artifacts_free(a);
  snprintf(path, sizeof(path), "%s/profile_export.json", art);
  CHECK(!exists(path) && count_tmp(art) == 0, "freed unfinished: no profile export, no temporary file");

  /* A directory that cannot be made. */
  snprintf(path, sizeof(path), "%s/file", dir);
  FILE *fp = fopen(path, "w");
  if (fp) fclose(fp);
  snprintf(art, sizeof(art), "%s/file/sub", dir);
  o.dir = art;
  err[0] = '\0';
  CHECK_INT(tp_artifacts_open(&a, &o, err, sizeof(err)), TP_EIO, "a path through a file fails with TP_EIO");
  CHECK(a == NULL && strstr(err, "cannot create") && strstr(err, "--artifact-dir"),
        "and says what and where (%s)", err);

  fixture_fini(&f1);
  fixture_fini(&f2);
  rm_rf(dir);
}

/* The request's line of profile_export.jsonl whose metadata.request_num
 * is seq; NULL when none. */
static json_t *record_line(json_t *lines, uint64_t seq) {
  for (size_t i = 0; i < json_array_size(lines); i++) {
    json_t *l = json_array_get(lines, i);
    if ((uint64_t)json_integer_value(json_object_get(json_object_get(l, "metadata"), "request_num")) == seq)
      return l;
  }
  return NULL;
}

/* text as one JSON value per line, in an array (NULL when a line is not
 * JSON). */
static json_t *parse_lines(const char *text, size_t len) {
  json_t *arr = json_array();
  const char *p = text, *end = text + len;
  while (p < end) {
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (!nl) nl = end;
    json_error_t je;
    json_t *v = json_loadb(p, (size_t)(nl - p), 0, &je);
    if (!v) {
      json_decref(arr);
      return NULL;
    }
    json_array_append_new(arr, v);
    p = nl + 1;
  }
  return arr;
}

/* metrics.key.value of a line, with its unit checked; NAN when absent. */
static double rec_metric(json_t *line, const char *key, const char *unit) {
  json_t *m = json_object_get(json_object_get(line, "metrics"), key);
  if (!m) return NAN;
  const char *u = json_string_value(json_object_get(m, "unit"));
  CHECK(u && !strcmp(u, unit), "%s is in %s", key, unit);
  return json_number_value(json_object_get(m, "value"));
}

/* AIPerf's per-record export (docs/tutorials/working-with-profile-exports.md:
 * {"metadata": {session_num, turn_index, request_start_ns, request_ack_ns,
 * request_end_ns, worker_id, record_processor_id, benchmark_phase,
 * was_cancelled, cancellation_time_ns}, "metrics": {KEY: {"value", "unit"}},
 * "error": null | {"code", "type", "message"}}, error_isl for a failed
 * request): every field of the fixture's lines worked out by hand, and the
 * lines against the canonical file. */
static void test_aiperf_records(void) {
  fixture f;
  fixture_init(&f, 4);
  tp_buf b;
  tp_buf_init(&b);
  tp_export_level el = {&f.lr, f.q, 5, 0, 0, NULL};
  CHECK_INT(tp_export_aiperf_records(&b, &el, true, MONO0, WALL0), 0, "records render");
  json_t *lines = parse_lines((const char *)b.data, b.len);
  CHECK(lines != NULL, "every line is JSON");
  if (!lines) return;
  CHECK_INT(json_array_size(lines), 4, "one line per measured request, failed included, warm-up left out");
  uint64_t want_order[4] = {1, 0, 2, 4};
  for (int i = 0; i < 4; i++)
    CHECK((uint64_t)json_integer_value(json_object_get(json_object_get(json_array_get(lines, i), "metadata"),
                                                       "request_num")) == want_order[i],
          "line %d in send order", i);

  uint64_t b0 = MONO0 + 1000000;
  json_t *l1 = record_line(lines, 1), *md = json_object_get(l1, "metadata");
  CHECK_INT(json_integer_value(json_object_get(md, "session_num")), 1, "session_num: the request's number");
  CHECK_INT(json_integer_value(json_object_get(md, "turn_index")), 0, "turn_index 0 outside sessions");
  CHECK((uint64_t)json_integer_value(json_object_get(md, "request_start_ns")) == WALL0 + (b0 - MONO0),
        "request_start_ns: the send, wall-clock ns");
  CHECK((uint64_t)json_integer_value(json_object_get(md, "request_ack_ns")) == WALL0 + (b0 + 12000000 - MONO0),
        "request_ack_ns: the first response");
  CHECK((uint64_t)json_integer_value(json_object_get(md, "request_end_ns")) == WALL0 + (b0 + 26000000 - MONO0),
        "request_end_ns: the final response");
  CHECK_STR(json_string_value(json_object_get(md, "worker_id")), "rank_0", "worker_id names the rank");
  CHECK_STR(json_string_value(json_object_get(md, "benchmark_phase")), "profiling", "benchmark_phase");
  CHECK(json_is_false(json_object_get(md, "was_cancelled")) &&
            json_is_null(json_object_get(md, "cancellation_time_ns")),
        "not cancelled");
  CHECK(json_is_null(json_object_get(l1, "error")), "a success has error null");
  /* seq 1: sent at 0, text at 12, 19, 26 ms; 4 input, 3 output tokens. */
  CHECK_NEAR(rec_metric(l1, "time_to_first_token", "ms"), 12, 1e-9, "seq 1: TTFT 12 ms");
  CHECK_NEAR(rec_metric(l1, "time_to_second_token", "ms"), 7, 1e-9, "seq 1: TTST 7 ms");
  CHECK_NEAR(rec_metric(l1, "request_latency", "ms"), 26, 1e-9, "seq 1: latency 26 ms");
  CHECK_NEAR(rec_metric(l1, "inter_token_latency", "ms"), 7, 1e-9, "seq 1: (26 - 12) / (3 - 1)");
  CHECK_NEAR(rec_metric(l1, "output_token_throughput_per_user", "tokens/sec/user"), 1000.0 / 7, 1e-9,
             "seq 1: 1000 / ITL");
  CHECK_NEAR(rec_metric(l1, "input_sequence_length", "tokens"), 4, 0, "seq 1: ISL 4");
  CHECK_NEAR(rec_metric(l1, "output_sequence_length", "tokens"), 3, 0, "seq 1: OSL 3");
  json_t *icl = json_object_get(json_object_get(json_object_get(l1, "metrics"), "inter_chunk_latency"), "value");
  CHECK(json_array_size(icl) == 2 && json_number_value(json_array_get(icl, 0)) == 7 &&
            json_number_value(json_array_get(icl, 1)) == 7,
        "seq 1: inter_chunk_latency [7, 7]");
  CHECK_INT(json_object_size(json_object_get(l1, "metrics")), 8, "seq 1: exactly those eight metrics");

  /* seq 0: sent at 5, role-only at 15, text at 20 and 28, an empty final
   * response at 30: TTFT 15, TTST 8; AIPerf's latency ends at the last
   * text (23 ms), its ITL (28 - 20) / (3 - 1). */
  json_t *l0 = record_line(lines, 0);
  CHECK_NEAR(rec_metric(l0, "time_to_first_token", "ms"), 15, 1e-9, "seq 0: TTFT skips the role-only response");
  CHECK_NEAR(rec_metric(l0, "time_to_second_token", "ms"), 8, 1e-9, "seq 0: TTST 8 ms");
  CHECK_NEAR(rec_metric(l0, "request_latency", "ms"), 23, 1e-9, "seq 0: latency to the last text, 23 ms");
  CHECK_NEAR(rec_metric(l0, "inter_token_latency", "ms"), 4, 1e-9,
             "seq 0: AIPerf's ITL ends at the last text");
  icl = json_object_get(json_object_get(json_object_get(l0, "metrics"), "inter_chunk_latency"), "value");
  CHECK(json_array_size(icl) == 1 && json_number_value(json_array_get(icl, 0)) == 8,
        "seq 0: inter_chunk_latency [8]: between text responses only");
  CHECK((uint64_t)json_integer_value(json_object_get(json_object_get(l0, "metadata"), "request_ack_ns")) ==
            WALL0 + (b0 + 15000000 - MONO0),
        "seq 0: request_ack_ns is the role-only response");

  /* seq 4: one response: no TTST, no gaps. */
  json_t *l4 = record_line(lines, 4);
  CHECK_NEAR(rec_metric(l4, "time_to_first_token", "ms"), 43, 1e-9, "seq 4: TTFT 43 ms");
  CHECK(isnan(rec_metric(l4, "time_to_second_token", "ms")), "seq 4: no second token");
  CHECK(!json_object_get(json_object_get(l4, "metrics"), "inter_chunk_latency"), "seq 4: no gaps");

  /* seq 2 failed: AIPerf's error_isl, and the error. */
  json_t *l2 = record_line(lines, 2), *er = json_object_get(l2, "error");
  CHECK_NEAR(rec_metric(l2, "error_isl", "tokens"), 4, 0, "failed: error_isl 4");
  CHECK_INT(json_object_size(json_object_get(l2, "metrics")), 1, "failed: no other metric");
  CHECK_INT(json_integer_value(json_object_get(er, "code")), 13, "failed: code is the gRPC status");
  CHECK_STR(json_string_value(json_object_get(er, "type")), tp_error_class_name(TP_ERRCLASS_GRPC_STATUS),
            "failed: type is the error class");
  CHECK_STR(json_string_value(json_object_get(er, "message")), "INTERNAL: boom", "failed: the message");

  /* The lines against the canonical file, field by field. */
  char *want = canonical("aiperf_records.jsonl");
  CHECK(want != NULL, "test/data/export/aiperf_records.jsonl is readable");
  json_t *wl = want ? parse_lines(want, strlen(want)) : NULL;
  CHECK(wl != NULL && json_equal(wl, lines), "the lines equal the canonical file's");
  json_decref(wl);
  free(want);

  /* Without streaming: the timings between tokens and the gaps left out. */
  tp_buf_reset(&b);
  CHECK_INT(tp_export_aiperf_records(&b, &el, false, MONO0, WALL0), 0, "records render without streaming");
  json_t *ns = parse_lines((const char *)b.data, b.len);
  json_t *m1 = json_object_get(record_line(ns, 1), "metrics");
  CHECK(json_object_size(m1) == 3 && json_object_get(m1, "request_latency") &&
            json_object_get(m1, "input_sequence_length") && json_object_get(m1, "output_sequence_length"),
        "without streaming: latency and lengths only");
  json_decref(ns);
  /* A failure without an input count: metrics is an empty object, never
   * null (AIPerf's record model wants a dict, and its loader refuses null). */
  f.r[2].input_tokens = -1;
  tp_buf_reset(&b);
  CHECK_INT(tp_export_aiperf_records(&b, &el, true, MONO0, WALL0), 0, "records render");
  ns = parse_lines((const char *)b.data, b.len);
  json_t *m2 = json_object_get(record_line(ns, 2), "metrics");
  CHECK(json_is_object(m2) && json_object_size(m2) == 0, "a failure without an input count: metrics {}");
  json_decref(ns);
  json_decref(lines);
  tp_buf_fini(&b);
  fixture_fini(&f);
}

/* The escaping one byte at a time, as RFC 8259 asks and as the writer did
 * before it skipped plain bytes eight at a time: the oracle for every
 * position of a special byte against the word boundaries. */
static void escape_slow(tp_buf *out, const unsigned char *p, size_t len) {
  for (size_t i = 0; i < len;) {
    unsigned c = p[i];
    size_t ul = c < 0x80 ? 1 : tp__utf8_len(p + i, len - i);
    if (!ul) {
      tp_buf_append(out, "\xEF\xBF\xBD", 3);
      i++;
    } else if (c == '"' || c == '\\') {
      tp_buf_printf(out, "\\%c", c);
      i++;
    } else if (c == '\n' || c == '\r' || c == '\t') {
      tp_buf_append_str(out, c == '\n' ? "\\n" : c == '\r' ? "\\r" : "\\t");
      i++;
    } else if (c < 0x20) {
      tp_buf_printf(out, "\\u%04x", c);
      i++;
    } else {
      tp_buf_append(out, p + i, ul);
      i += ul;
    }
  }
}

static void test_json_escape(void) {
  static const char *const specials[] = {"\"", "\\", "\n", "\r", "\t", "\x01", "\x1f", "\x7f", "\xc3\xa9",
                                         "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xff", "\xc3", "\xe2\x82"};
  tp_buf got, want, in;
  tp_buf_init(&got);
  tp_buf_init(&want);
  tp_buf_init(&in);
  int bad = 0, cases = 0;
  for (size_t k = 0; k < sizeof(specials) / sizeof(specials[0]); k++)
    for (size_t len = 0; len <= 24; len++)
      for (size_t at = 0; at <= len; at++) {
        tp_buf_reset(&in);
        for (size_t i = 0; i < len; i++) {
          if (i == at) tp_buf_append_str(&in, specials[k]);
          tp_buf_append(&in, "abcdefghijklmnopqrstuvwxyz" + i % 26, 1);
        }
        if (at == len) tp_buf_append_str(&in, specials[k]);
        tp_buf_reset(&got);
        tp_buf_reset(&want);
        tp__json_escape(&got, (const char *)in.data, in.len);
        escape_slow(&want, in.data, in.len);
        cases++;
        if (got.len != want.len || memcmp(got.data, want.data, got.len)) bad++;
      }
  CHECK(cases > 3000 && bad == 0, "escaping: %d of %d placements of a special byte differ from byte by byte",
        bad, cases);
  tp_buf_reset(&got);
  tp__json_escape(&got, "a\"b\\c\nd\x02" "e\xff", 10);
  CHECK(got.len == 20 && !memcmp(got.data, "a\\\"b\\\\c\\nd\\u0002e\xEF\xBF\xBD", 20), "escaping by hand");

  static const uint64_t nums[] = {0, 7, 10, 99, 100, 4294967295ULL, 1700000000013000000ULL, UINT64_MAX};
  static const char *const words[] = {"0", "7", "10", "99", "100", "4294967295", "1700000000013000000",
                                      "18446744073709551615"};
  for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
    tp_buf_reset(&got);
    tp__json_u64(&got, nums[i]);
    CHECK(got.len == strlen(words[i]) && !memcmp(got.data, words[i], got.len), "u64 %s", words[i]);
  }
  tp_buf_fini(&got);
  tp_buf_fini(&want);
  tp_buf_fini(&in);
}

int main(void) {
  test_wall_clock();
  test_json_escape();
  test_accuracy_functions();
  test_accuracy_compute();
  test_pa_experiment();
  test_registry_keys();
  test_summary_csv();
  test_summary_json();
  test_genai_input_config();
  test_responses_jsonl();
  test_aiperf_records();
  test_sent_text();
  test_artifacts();
  return tp_test_done();
}

/* Unit tests for lib/report/tp_report.c: the text tables rendered into
 * memory, and the JSON document written to a temporary directory and parsed
 * back with jansson. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/sysmacros.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "metrics/tp_metric.h"
#include "report/tp_report.h"
#include "tp_test.h"

static void set_stat(tp_stat *st, size_t n, double avg, double min, double max, double std,
                     double p50, double p99) {
  memset(st, 0, sizeof(*st));
  st->n = n;
  st->avg = avg;
  st->min = min;
  st->max = max;
  st->std = std;
  st->p25 = min + (p50 - min) / 2;
  st->p50 = p50;
  st->p75 = p50 + (p99 - p50) / 4;
  st->p90 = p50 + (p99 - p50) / 2;
  st->p95 = p50 + (p99 - p50) * 3 / 4;
  st->p99 = p99;
}

/* A level with tokens and two failures. */
static void level_full(tp_level_result *lr) {
  memset(lr, 0, sizeof(*lr));
  lr->concurrency = 4;
  lr->requests = 20;
  lr->succeeded = 18;
  lr->failed = 2;
  lr->errors_by_class[TP_ERRCLASS_GRPC_STATUS] = 1;
  lr->errors_by_class[TP_ERRCLASS_TIMEOUT] = 1;
  lr->duration_s = 2.0;
  lr->tokens_available = true;
  set_stat(&lr->ttft_ms, 18, 1234.5678, 10.001, 2000.5, 3.25, 1200, 1999.6);
  set_stat(&lr->itl_ms, 18, 8.126, 7.5, 9.75, 0.5, 8, 9.6);
  set_stat(&lr->latency_ms, 18, 5000, 4000, 12345678.9, 100, 4900, 6000);
  set_stat(&lr->output_tokens, 18, 128.26, 100, 150, 10.5, 128, 148);
  set_stat(&lr->input_tokens, 18, 200, 200, 200, 0, 200, 200);
  set_stat(&lr->output_tps_per_user, 18, 25.5, 20, 30, 2, 25, 29);
  set_stat(&lr->responses, 18, 129.25, 101, 151, 10.5, 129, 150);
  lr->output_token_throughput = 1500.25;
  lr->input_token_throughput = 1800;
  lr->request_throughput = 9;
  lr->max_in_flight = 4;
  snprintf(lr->first_error, sizeof(lr->first_error), "%s",
           "grpc_status: NOT_FOUND: Request for unknown model: 'x' is not found");
  /* The client's own figures, every one measured; a send lag past its
   * threshold makes the level degraded. */
  set_stat(&lr->send_lag_ms, 20, 0.5, 0.001, 3.5, 0.2, 0.015, 3.25);
  tp_fidelity *f = &lr->fidelity;
  set_stat(&f->loop_lag_ms, 500, 0.05, 0.001, 2.5, 0.1, 0.03, 0.4);
  f->merged_responses = 3;
  f->response_gaps = 2000;
  f->merged_pct = 0.15;
  f->itl_merged_requests = 2;
  f->itl_pooled_merged_gaps = 3;
  f->client_cpu_pct = 12.5;
  f->process_cpu_pct = 30;
  f->reads = 1000;
  f->reads_per_s = 500;
  f->wall_s = 2;
  f->verdict = TP_FIDELITY_DEGRADED;
  snprintf(f->reason, sizeof(f->reason), "send lag p99 3.25 ms > 1 ms");
}

/* A level without a tokenizer: timing only. */
static void level_no_tokens(tp_level_result *lr, uint32_t concurrency) {
  memset(lr, 0, sizeof(*lr));
  lr->concurrency = concurrency;
  lr->requests = 10;
  lr->succeeded = 10;
  lr->duration_s = 1.5;
  set_stat(&lr->ttft_ms, 10, 20.5, 20, 21, 0.25, 20.5, 21);
  set_stat(&lr->latency_ms, 10, 300, 250, 350, 25, 300, 349);
  set_stat(&lr->responses, 10, 33, 30, 36, 1, 33, 36);
  lr->request_throughput = 10.0 / 1.5;
  lr->max_in_flight = concurrency;
}

static const uint32_t conc3[] = {4, 8, 16};

static void base_cfg(tp_config *cfg) {
  memset(cfg, 0, sizeof(*cfg));
  cfg->server.url = "localhost:8001";
  cfg->server.model = "ensemble";
  cfg->server.backend = TP_BACKEND_VLLM;
  cfg->server.streaming = true;
  cfg->load.concurrency = conc3;
  cfg->load.n_concurrency = 3;
  cfg->measure.request_count = 20;
  cfg->measure.warmup_request_count = 2;
  cfg->prompts.input_file = "prompts.jsonl";
  cfg->prompts.random_seed = UINT64_MAX;
  cfg->prompts.output_tokens_mean = 128;
  cfg->prompts.num_prompts = 3;
  cfg->server.request_timeout_ms = 30000;
}

/* The built-in mock a run was pointed at, as the CLI hands it to the
 * report (tp_run_set_mock). */
static const tp_mock_config *mock_told(void) {
  static tp_mock_config mc;
  mc.host = "127.0.0.1";
  mc.ttft_ms = 20;
  mc.log_path = "mock.jsonl";
  return &mc;
}

static char *render(const tp_report_input *in) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return NULL;
  tp_report_text(f, in);
  fclose(f);
  return buf;
}

/* The line holding the n-th (from 0) occurrence of needle, copied into
 * line; false when there is none. */
static bool find_line(const char *text, const char *needle, int nth, char *line, size_t len) {
  const char *p = text;
  for (;;) {
    p = strstr(p, needle);
    if (!p) return false;
    if (nth-- == 0) break;
    p += strlen(needle);
  }
  const char *b = p, *e = strchr(p, '\n');
  while (b > text && b[-1] != '\n') b--;
  if (!e) e = p + strlen(p);
  snprintf(line, len, "%.*s", (int)(e - b), b);
  return true;
}

static int count(const char *text, const char *needle) {
  int n = 0;
  for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) n++;
  return n;
}

/* Splits a table row "│ a │ b │" into its trimmed cells; returns how many. */
static int cells_of(const char *line, char cells[][64], int max) {
  static const char bar[] = "│";
  int n = 0;
  const char *p = strstr(line, bar);
  while (p && n < max) {
    p += strlen(bar);
    const char *e = strstr(p, bar);
    if (!e) break;
    while (p < e && *p == ' ') p++;
    const char *q = e;
    while (q > p && q[-1] == ' ') q--;
    snprintf(cells[n++], 64, "%.*s", (int)(q - p), p);
    p = e;
  }
  return n;
}

static void check_row(const char *text, const char *label, int nth, const char *const *want,
                      int nwant, const char *what) {
  char line[1024], cells[16][64], buf[160];
  bool found = find_line(text, label, nth, line, sizeof(line));
  snprintf(buf, sizeof(buf), "%s: row present", what);
  CHECK(found, "%s", buf);
  if (!found) return;
  int n = cells_of(line, cells, 16);
  snprintf(buf, sizeof(buf), "%s: cell count", what);
  CHECK_INT(n, nwant, buf);
  for (int i = 0; i < n && i < nwant; i++) {
    snprintf(buf, sizeof(buf), "%s: cell %d", what, i);
    CHECK_STR(cells[i], want[i], buf);
  }
}

/* UTF-8 code points in s[0..len): the display width of our box lines. */
static size_t width(const char *s, size_t len) {
  size_t w = 0;
  for (size_t i = 0; i < len; i++)
    if (((unsigned char)s[i] & 0xc0) != 0x80) w++;
  return w;
}

/* Every line of every table (from a top corner to a bottom corner) must be
 * as wide as the table's top line, or the columns do not line up. */
static void check_tables_aligned(const char *text, int want_tables, const char *what) {
  int tables = 0, bad = 0;
  size_t tw = 0;
  bool in_table = false;
  for (const char *p = text; *p;) {
    const char *e = strchr(p, '\n');
    size_t len = e ? (size_t)(e - p) : strlen(p);
    if (!strncmp(p, "┏", strlen("┏"))) {
      in_table = true;
      tables++;
      tw = width(p, len);
    } else if (in_table && width(p, len) != tw) {
      bad++;
    }
    if (in_table && !strncmp(p, "└", strlen("└"))) in_table = false;
    p += len + (e ? 1 : 0);
  }
  char buf[160];
  snprintf(buf, sizeof(buf), "%s: table count", what);
  CHECK_INT(tables, want_tables, buf);
  snprintf(buf, sizeof(buf), "%s: every table line has its table's width", what);
  CHECK_INT(bad, 0, buf);
}

static void test_text_full(void) {
  tp_config cfg;
  base_cfg(&cfg);
  tp_level_result lr;
  level_full(&lr);
  tp_report_input in = {.cfg = &cfg,
                        .target = "127.0.0.1:8001",
                        .tokenizer_desc = "sentencepiece (tok.model)",
                        .dataset_desc = "prompts.jsonl (3 prompts)",
                        .levels = &lr,
                        .n_levels = 1,
                        .interrupted = true,
                        .have_mock_stats = true,
                        .mock_stats = {.requests = 22, .responses = 2843,
                                       .max_active_streams = 4, .max_active_sequences = 3}};
  char *t = render(&in);
  CHECK(t != NULL, "full: rendered");
  if (!t) return;

  char line[1024];
  CHECK(find_line(t, "Target:", 0, line, sizeof(line)) &&
            !strcmp(line, "Target: 127.0.0.1:8001, model: ensemble, backend: vllm, streaming: on, "
                          "tokenizer: sentencepiece (tok.model), dataset: prompts.jsonl (3 prompts)"),
        "full: header line names target, model, backend, streaming, tokenizer, dataset");
  CHECK(strstr(t, "concurrency 4") != NULL, "full: level title names the concurrency");

  const char *head[] = {"Statistic", "avg", "min", "max", "p99", "p95", "p90", "p75", "p50", "std"};
  {
    char cells[16][64];
    find_line(t, "Statistic", 0, line, sizeof(line));
    /* The header uses heavy bars; swap them to reuse the splitter. */
    char light[1024];
    size_t o = 0;
    for (const char *p = line; *p && o + 4 < sizeof(light);) {
      if (!strncmp(p, "┃", strlen("┃"))) {
        o += (size_t)snprintf(light + o, sizeof(light) - o, "│");
        p += strlen("┃");
      } else {
        light[o++] = *p++;
      }
    }
    light[o] = 0;
    int n = cells_of(light, cells, 16);
    bool same = n == 10;
    for (int i = 0; same && i < 10; i++) same = !strcmp(cells[i], head[i]);
    CHECK(same, "full: columns avg min max p99 p95 p90 p75 p50 std");
  }

  /* 2 decimals for ms, thousands separated; p95 = 1200 + 799.6 x 3/4. */
  const char *ttft[] = {"Time to first token (ms)", "1,234.57", "10.00", "2,000.50", "1,999.60",
                        "1,799.70", "1,599.80", "1,399.90", "1,200.00", "3.25"};
  check_row(t, "Time to first token (ms)", 0, ttft, 10, "full: TTFT row");
  const char *itl[] = {"Inter token latency (ms)", "8.13", "7.50", "9.75", "9.60",
                       "9.20", "8.80", "8.40", "8.00", "0.50"};
  check_row(t, "Inter token latency (ms)", 0, itl, 10, "full: ITL row");
  char cells[16][64];
  find_line(t, "Request latency (ms)", 0, line, sizeof(line));
  cells_of(line, cells, 16);
  CHECK_STR(cells[3], "12,345,678.90", "full: latency max with separators");
  /* 1 decimal for tokens. */
  const char *out_tok[] = {"Output tokens", "128.3", "100.0", "150.0", "148.0",
                           "143.0", "138.0", "133.0", "128.0", "10.5"};
  check_row(t, "Output tokens", 0, out_tok, 10, "full: output tokens row");
  find_line(t, "Input tokens", 0, line, sizeof(line));
  cells_of(line, cells, 16);
  CHECK_STR(cells[1], "200.0", "full: input tokens avg");
  find_line(t, "Output token throughput per user (tokens/s)", 0, line, sizeof(line));
  cells_of(line, cells, 16);
  CHECK_STR(cells[1], "25.50", "full: per-user throughput avg");

  CHECK(strstr(t, "\nOutput token throughput (tokens/s): 1,500.25\n") != NULL,
        "full: output token throughput line");
  CHECK(strstr(t, "\nInput token throughput (tokens/s): 1,800.00\n") != NULL,
        "full: input token throughput line");
  CHECK(strstr(t, "\nRequest throughput (requests/s): 9.00\n") != NULL,
        "full: request throughput line");
  CHECK(strstr(t, "\nRequests: 20 measured, 18 succeeded, 2 failed\n") != NULL,
        "full: request counts line");
  CHECK(strstr(t, "\nMeasured window (s): 2.00, max in flight (requests): 4\n") != NULL,
        "full: window and in-flight line");
  CHECK(strstr(t, "\nFailed requests by class: grpc_status 1, timeout 1\n") != NULL,
        "full: failures per class");
  CHECK(strstr(t, "\nSample error: grpc_status: NOT_FOUND: Request for unknown model: 'x' is "
                  "not found\n") != NULL,
        "full: sample error");
  CHECK(strstr(t, "token metrics unavailable") == NULL, "full: no token note with tokens");
  CHECK(strstr(t, "n/a") == NULL, "full: nothing unavailable");

  const char *sum[] = {"c=4",    "20",       "2",    "9.00", "1,500.25", "1,800.00",
                       "1,234.57", "1,999.60", "8.13", "9.60", "5,000.00", "6,000.00"};
  /* The summary's data row is the first light row after its header. */
  CHECK(strstr(t, "Sweep summary") != NULL, "full: summary title");
  const char *sum_at = strstr(t, "Sweep summary"), *lvl_at = strstr(t, "LLM metrics, ");
  CHECK(sum_at && lvl_at && sum_at < lvl_at && strstr(t, "Target: ") < sum_at,
        "full: the summary comes first, under the header and before every level's table");
  const char *sp = strstr(t, "Level ");
  CHECK(sp != NULL, "full: summary header");
  if (sp) {
    const char *row = strstr(sp, "\n│");
    check_row(row ? row + 1 : sp, "│", 0, sum, 12, "full: summary row");
  }

  CHECK(strstr(t, "Mock server: 22 requests received, 2,843 responses sent, at most 4 streams "
                  "open, at most 3 sequences decoding at once\n") != NULL,
        "full: mock counters");
  CHECK(strstr(t, "Sweep interrupted: 1 of 3 levels completed (concurrency 4)\n") != NULL,
        "full: interrupted line names completed levels");
  /* Last, the client's own figures: a table and the verdict in words. */
  const char *fid[] = {"concurrency 4", "0.015", "3.250", "3.500", "0.400", "2.500", "0.15", "12.5", "500",
                       "degraded"};
  const char *fp = strstr(t, "Fidelity: the client's own figures");
  CHECK(fp != NULL && fp > strstr(t, "Sweep summary") && fp > strstr(t, "Sweep interrupted"),
        "full: the fidelity table comes last");
  if (fp) {
    const char *row = strstr(fp, "\n│");
    check_row(row ? row + 1 : fp, "│", 0, fid, 10, "full: fidelity row");
  }
  CHECK(strstr(t, "\nFidelity, concurrency 4: degraded: send lag p99 3.25 ms > 1 ms\n") != NULL,
        "full: the verdict names the figure that crossed its threshold");
  CHECK(strstr(t, "\n  ITL, concurrency 4: the ITL of 2 requests spans responses that shared an arrival time; "
                  "3 gaps of 0 ms left out of the pooled ITL\n") != NULL,
        "full: the ITL's marks in words");
  check_tables_aligned(t, 3, "full");
  free(t);
}

static void test_text_no_tokens(void) {
  tp_config cfg;
  base_cfg(&cfg);
  cfg.prompts.input_file = NULL;
  cfg.server.streaming = false;
  cfg.server.backend = TP_BACKEND_TENSORRTLLM;
  tp_level_result lr[2];
  level_no_tokens(&lr[0], 1);
  level_no_tokens(&lr[1], 2);
  tp_report_input in = {.cfg = &cfg, .target = NULL, .levels = lr, .n_levels = 2};
  char *t = render(&in);
  CHECK(t != NULL, "no tokens: rendered");
  if (!t) return;
  char line[1024];
  CHECK(find_line(t, "Target:", 0, line, sizeof(line)) &&
            !strcmp(line, "Target: localhost:8001, model: ensemble, backend: tensorrtllm, "
                          "streaming: off, tokenizer: none, dataset: synthetic prompts"),
        "no tokens: header falls back to the configured url and synthetic prompts");

  const char *na[] = {"Inter token latency (ms)", "n/a", "n/a", "n/a", "n/a",
                      "n/a", "n/a", "n/a", "n/a", "n/a"};
  check_row(t, "Inter token latency (ms)", 0, na, 10, "no tokens: ITL n/a");
  na[0] = "Output tokens";
  check_row(t, "Output tokens", 1, na, 10, "no tokens: output tokens n/a (level 2)");
  na[0] = "Input tokens";
  check_row(t, "Input tokens", 0, na, 10, "no tokens: input tokens n/a");
  char cells[16][64];
  find_line(t, "Time to first token (ms)", 1, line, sizeof(line));
  cells_of(line, cells, 16);
  CHECK_STR(cells[1], "20.50", "no tokens: TTFT still shown");
  CHECK_INT(count(t, "token metrics unavailable: no --tokenizer given"), 1,
            "no tokens: the note is printed once");
  CHECK_INT(count(t, "Output token throughput (tokens/s): n/a\n"), 2,
            "no tokens: output throughput n/a per level");
  CHECK_INT(count(t, "Request throughput (requests/s): 6.67\n"), 2,
            "no tokens: request throughput per level");
  CHECK(strstr(t, "Failed requests by class") == NULL, "no tokens: no failure lines");
  CHECK(strstr(t, "Mock server") == NULL, "no tokens: no mock line without mock stats");
  CHECK(strstr(t, "interrupted") == NULL, "no tokens: not interrupted");

  const char *sp = strstr(t, "Level ");
  const char *row2 = sp ? strstr(sp, "\n│") : NULL;
  row2 = row2 ? strstr(row2 + 1, "\n│") : NULL;
  const char *sum[] = {"c=2", "10", "0", "6.67", "n/a", "n/a", "20.50", "21.00",
                       "n/a", "n/a", "300.00", "349.00"};
  CHECK(row2 != NULL, "no tokens: second summary row");
  if (row2) check_row(row2 + 1, "│", 0, sum, 12, "no tokens: summary row for level 2");
  check_tables_aligned(t, 4, "no tokens");
  free(t);

  /* Interrupted before any level completed. */
  tp_report_input none = {.cfg = &cfg, .interrupted = true};
  t = render(&none);
  CHECK(t && strstr(t, "No level completed.") && strstr(t, "Sweep interrupted: 0 of 3 levels"),
        "no levels: says so and that the sweep was interrupted");
  free(t);
}

static void test_text_all_failed(void) {
  tp_config cfg;
  base_cfg(&cfg);
  tp_level_result lr;
  memset(&lr, 0, sizeof(lr));
  lr.concurrency = 2;
  lr.requests = lr.failed = 3;
  lr.errors_by_class[TP_ERRCLASS_NONE] = 1;
  lr.errors_by_class[TP_ERRCLASS_CONNECT] = 2;
  snprintf(lr.first_error, sizeof(lr.first_error), "connect: connection refused");
  tp_report_input in = {.cfg = &cfg, .tokenizer_desc = "sentencepiece (t)", .levels = &lr,
                        .n_levels = 1};
  char *t = render(&in);
  CHECK(t != NULL, "all failed: rendered");
  if (!t) return;
  CHECK(strstr(t, "no request succeeded") != NULL, "all failed: says why everything is n/a");
  CHECK(strstr(t, "no --tokenizer given") == NULL, "all failed: no tokenizer note (one was given)");
  CHECK(strstr(t, "Failed requests by class: connect 2, unfinished 1\n") != NULL,
        "all failed: classes, unfinished named as such");
  free(t);
}

/* When the server went away (and came back): one line after the failures,
 * and the JSON's server_away (test_json_server_away). */
static void test_text_server_away(void) {
  tp_config cfg;
  base_cfg(&cfg);
  tp_level_result lr;
  memset(&lr, 0, sizeof(lr));
  lr.concurrency = 64;
  lr.requests = lr.failed = 200;
  lr.errors_by_class[TP_ERRCLASS_CONNECT] = 150;
  lr.errors_by_class[TP_ERRCLASS_NOT_SENT] = 50;
  lr.server_outages = 1;
  lr.server_away_s = 2.014;
  lr.server_back_s = -1;
  lr.server_away_requests = 1234;
  lr.server_gone = true;
  tp_report_input in = {.cfg = &cfg, .levels = &lr, .n_levels = 1};
  char *t = render(&in);
  CHECK(t && strstr(t, "Failed requests by class: connect 150, not_sent 50\n"), "away: not_sent is a class");
  CHECK(t && strstr(t, "Server away: from 2.01 s into the level, not back by its end (1,234 requests in a row "
                       "failed to reach it or were not sent); the level ended there (--max-consecutive-failures)\n"),
        "away: when, not back, how many, the limit ended the level");
  free(t);
  lr.server_back_s = 3.5;
  lr.server_outages = 3;
  lr.server_gone = false;
  t = render(&in);
  CHECK(t && strstr(t, "Server away: from 2.01 s to 3.50 s into the level (1,234 requests in a row failed to reach "
                       "it or were not sent); the longest of 3 outages\n"),
        "away and back: both times, the longest of several");
  free(t);
  lr.server_outages = 0;
  t = render(&in);
  CHECK(t && !strstr(t, "Server away"), "no outage: no line");
  free(t);
}

/* ------------------------------------------------------------------------ */

static char tmpdir[256];

static int dir_entries(const char *dir) {
  DIR *d = opendir(dir);
  if (!d) return -1;
  int n = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
  closedir(d);
  return n;
}

static double num(json_t *o, const char *key) { return json_number_value(json_object_get(o, key)); }

static void test_json_full(void) {
  tp_config cfg;
  base_cfg(&cfg);
  tp_level_result lr[2];
  level_full(&lr[0]);
  level_no_tokens(&lr[1], 8);
  tp_report_input in = {.cfg = &cfg,
                        .target = "127.0.0.1:8001",
                        .tokenizer_desc = "sentencepiece (tok.model)",
                        .dataset_desc = "prompts.jsonl (3 prompts)",
                        .levels = lr,
                        .n_levels = 2,
                        .interrupted = true,
                        .mock_config = mock_told(),
                        .have_mock_stats = true,
                        .mock_stats = {.requests = 22, .responses = 2843,
                                       .max_active_streams = 4, .max_active_sequences = 3}};
  char path[512], err[512];
  snprintf(path, sizeof(path), "%s/report.json", tmpdir);
  /* Write twice: the second must replace the first whole. */
  CHECK_INT(tp_report_json(path, &in, err, sizeof(err)), 0, "json: first write");
  in.interrupted = false;
  CHECK_INT(tp_report_json(path, &in, err, sizeof(err)), 0, "json: overwrite");
  CHECK_INT(dir_entries(tmpdir), 1, "json: no temporary file left behind");

  json_error_t jerr;
  json_t *doc = json_load_file(path, 0, &jerr);
  CHECK(doc != NULL, "json: parses back (%s)", doc ? "ok" : jerr.text);
  if (!doc) return;
  CHECK_STR(json_string_value(json_object_get(doc, "schema")), "tokperf.report/1", "json: schema");
  json_t *gen = json_object_get(doc, "generator");
  CHECK_STR(json_string_value(json_object_get(gen, "name")), "tokperf", "json: generator name");
  CHECK_STR(json_string_value(json_object_get(gen, "version")), tp_version(),
            "json: generator version is tp_version()");
  CHECK_STR(json_string_value(json_object_get(doc, "target")), "127.0.0.1:8001", "json: target");
  CHECK_STR(json_string_value(json_object_get(doc, "tokenizer")), "sentencepiece (tok.model)",
            "json: tokenizer");
  CHECK_STR(json_string_value(json_object_get(doc, "dataset")), "prompts.jsonl (3 prompts)",
            "json: dataset");
  CHECK(json_is_false(json_object_get(doc, "interrupted")), "json: interrupted is the last write's");

  json_t *c = json_object_get(doc, "config");
  CHECK_STR(json_string_value(json_object_get(c, "url")), "localhost:8001", "json: config.url");
  CHECK_STR(json_string_value(json_object_get(c, "backend")), "vllm", "json: config.backend");
  CHECK_STR(json_string_value(json_object_get(c, "service_kind")), "triton",
            "json: config.service_kind");
  CHECK(json_is_null(json_object_get(c, "model_version")), "json: NULL string -> null");
  CHECK(json_is_null(json_object_get(c, "tokenizer")), "json: config.tokenizer null");
  CHECK(json_is_true(json_object_get(c, "streaming")), "json: config.streaming");
  CHECK(json_is_true(json_object_get(c, "mock")), "json: config.mock");
  CHECK_INT(json_integer_value(json_object_get(c, "request_timeout_ms")), 30000,
            "json: config.request_timeout_ms");
  CHECK_INT(json_integer_value(json_object_get(c, "warmup_request_count")), 2,
            "json: config.warmup_request_count");
  CHECK_STR(json_string_value(json_object_get(c, "mock_log_path")), "mock.jsonl",
            "json: config.mock_log_path");
  CHECK(json_is_object(json_object_get(c, "mock_config")) &&
            num(json_object_get(c, "mock_config"), "ttft_ms") == 20,
        "json: config.mock_config is the mock's settings");
  CHECK_STR(json_string_value(json_object_get(c, "random_seed")), "18446744073709551615",
            "json: a seed past int64 is kept exact as a string");
  json_t *conc = json_object_get(c, "concurrency");
  CHECK(json_array_size(conc) == 3 && json_integer_value(json_array_get(conc, 2)) == 16,
        "json: config.concurrency list");
  const char *cfg_keys[] = {"model", "request_count", "measurement_interval_ms", "input_file",
                            "output_tokens_mean", "output_tokens_deterministic",
                            "synthetic_input_words", "num_prompts", "connections",
                            "skip_preflight", "json_path", "records_path"};
  int missing = 0;
  for (size_t i = 0; i < sizeof(cfg_keys) / sizeof(cfg_keys[0]); i++)
    missing += json_object_get(c, cfg_keys[i]) == NULL;
  CHECK_INT(missing, 0, "json: every config field present");

  json_t *levels = json_object_get(doc, "levels");
  CHECK_INT(json_array_size(levels), 2, "json: two levels");
  json_t *l0 = json_array_get(levels, 0), *l1 = json_array_get(levels, 1);
  CHECK_INT(json_integer_value(json_object_get(l0, "concurrency")), 4, "json: l0 concurrency");
  CHECK_INT(json_integer_value(json_object_get(l0, "requests")), 20, "json: l0 requests");
  CHECK_INT(json_integer_value(json_object_get(l0, "succeeded")), 18, "json: l0 succeeded");
  CHECK_INT(json_integer_value(json_object_get(l0, "failed")), 2, "json: l0 failed");
  json_t *ebc = json_object_get(l0, "errors_by_class");
  CHECK_INT(json_integer_value(json_object_get(ebc, "grpc_status")), 1, "json: l0 grpc_status");
  CHECK_INT(json_integer_value(json_object_get(ebc, "timeout")), 1, "json: l0 timeout");
  CHECK_INT(json_object_size(ebc), TP_ERRCLASS_COUNT, "json: every class listed");
  CHECK_NEAR(num(l0, "duration_s"), 2.0, 1e-12, "json: l0 duration_s");
  CHECK(json_is_true(json_object_get(l0, "tokens_available")), "json: l0 tokens_available");
  json_t *ttft = json_object_get(l0, "time_to_first_token_ms");
  CHECK_INT(json_integer_value(json_object_get(ttft, "n")), 18, "json: ttft n");
  CHECK_NEAR(num(ttft, "avg"), 1234.5678, 1e-9, "json: ttft avg unrounded");
  CHECK_NEAR(num(ttft, "p99"), 1999.6, 1e-9, "json: ttft p99");
  CHECK_NEAR(num(ttft, "p25"), lr[0].ttft_ms.p25, 1e-9, "json: ttft p25");
  CHECK_NEAR(num(ttft, "std"), 3.25, 1e-12, "json: ttft std");
  CHECK_INT(json_object_size(ttft), 1 + TP_STAT_COUNT, "json: stat object has n and every statistic");
  CHECK(json_object_get(ttft, "p1") && json_object_get(ttft, "p5") && json_object_get(ttft, "p10"),
        "json: the low percentiles too");
  CHECK_NEAR(num(json_object_get(l0, "inter_token_latency_ms"), "p50"), 8, 1e-12, "json: itl p50");
  CHECK_NEAR(num(json_object_get(l0, "request_latency_ms"), "max"), 12345678.9, 1e-6,
             "json: latency max");
  CHECK_NEAR(num(json_object_get(l0, "output_tokens"), "avg"), 128.26, 1e-12,
             "json: output tokens avg");
  CHECK_NEAR(num(json_object_get(l0, "input_tokens"), "min"), 200, 1e-12, "json: input tokens");
  CHECK_NEAR(num(json_object_get(l0, "output_token_throughput_per_user_tps"), "avg"), 25.5, 1e-12,
             "json: per-user throughput");
  CHECK_NEAR(num(json_object_get(l0, "responses_per_request"), "max"), 151, 1e-12,
             "json: responses per request");
  CHECK_NEAR(num(l0, "output_token_throughput_tps"), 1500.25, 1e-9, "json: output tps");
  CHECK_NEAR(num(l0, "input_token_throughput_tps"), 1800, 1e-9, "json: input tps");
  CHECK_NEAR(num(l0, "request_throughput_rps"), 9, 1e-12, "json: request rps");
  CHECK_INT(json_integer_value(json_object_get(l0, "max_in_flight")), 4, "json: max_in_flight");
  CHECK_STR(json_string_value(json_object_get(l0, "first_error")), lr[0].first_error,
            "json: first_error");

  /* Unavailable figures are null, never 0. */
  CHECK(json_is_null(json_object_get(l1, "inter_token_latency_ms")), "json: l1 itl null");
  CHECK(json_is_null(json_object_get(l1, "output_tokens")), "json: l1 output tokens null");
  CHECK(json_is_null(json_object_get(l1, "input_tokens")), "json: l1 input tokens null");
  CHECK(json_is_null(json_object_get(l1, "output_token_throughput_per_user_tps")),
        "json: l1 per-user throughput null");
  CHECK(json_is_null(json_object_get(l1, "output_token_throughput_tps")),
        "json: l1 output tps null");
  CHECK(json_is_null(json_object_get(l1, "input_token_throughput_tps")), "json: l1 input tps null");
  CHECK(json_is_null(json_object_get(l1, "first_error")), "json: l1 first_error null");
  CHECK(json_is_false(json_object_get(l1, "tokens_available")), "json: l1 tokens unavailable");
  CHECK_NEAR(num(json_object_get(l1, "time_to_first_token_ms"), "avg"), 20.5, 1e-12,
             "json: l1 ttft present");
  CHECK_NEAR(num(l1, "request_throughput_rps"), 10.0 / 1.5, 1e-12, "json: l1 request rps");

  json_t *mock = json_object_get(doc, "mock");
  CHECK(json_is_object(mock) && json_integer_value(json_object_get(mock, "responses")) == 2843 &&
            json_integer_value(json_object_get(mock, "max_active_sequences")) == 3,
        "json: mock counters");

  /* Each level ends with the client's own figures: the registry's under
   * "fidelity", the verdict in words, the counts behind them. */
  void *last = json_object_iter(l0);
  while (last && json_object_iter_next(l0, last)) last = json_object_iter_next(l0, last);
  CHECK_STR(last ? json_object_iter_key(last) : "", "fidelity", "json: a level ends with \"fidelity\"");
  json_t *fo = json_object_get(l0, "fidelity");
  CHECK_STR(json_string_value(json_object_get(fo, "verdict")), "degraded", "json: fidelity.verdict");
  CHECK_STR(json_string_value(json_object_get(fo, "reason")), "send lag p99 3.25 ms > 1 ms",
            "json: fidelity.reason names the figure");
  CHECK_INT(json_integer_value(json_object_get(fo, "verdict_code")), 1, "json: the verdict as a gate reads it");
  CHECK_NEAR(num(json_object_get(fo, "loop_lag_ms"), "p99"), 0.4, 1e-12, "json: fidelity.loop_lag_ms.p99");
  CHECK_NEAR(num(json_object_get(fo, "send_lag_ms"), "p99"), 3.25, 1e-12, "json: fidelity.send_lag_ms.p99");
  CHECK_NEAR(num(fo, "merged_pct"), 0.15, 1e-12, "json: fidelity.merged_pct");
  CHECK_NEAR(num(fo, "client_cpu_pct"), 12.5, 1e-12, "json: fidelity.client_cpu_pct");
  CHECK_NEAR(num(fo, "reads_per_s"), 500, 1e-12, "json: fidelity.reads_per_s");
  CHECK(json_is_true(json_object_get(fo, "itl_merged")) &&
            json_integer_value(json_object_get(fo, "itl_pooled_merged_gaps")) == 3,
        "json: the ITL over responses of one time is marked");
  json_t *f1 = json_object_get(l1, "fidelity");
  CHECK(json_is_null(json_object_get(f1, "loop_lag_ms")) && json_is_null(json_object_get(f1, "reason")),
        "json: figures not measured are null");
  json_t *run_f = json_object_get(doc, "fidelity");
  CHECK_STR(json_string_value(json_object_get(run_f, "verdict")), "degraded", "json: the run's verdict is the worst");
  CHECK_INT(json_array_size(json_object_get(run_f, "levels")), 2, "json: the run's fidelity lists every level");
  json_decref(doc);

  /* Without mock stats the key is absent; a mock configuration is
   * written out field by field. */
  tp_mock_config mc;
  memset(&mc, 0, sizeof(mc));
  mc.host = "127.0.0.1";
  mc.ttft_ms = 20;
  mc.itl_ms = 8.5;
  mc.max_batch = 256;
  in.mock_config = &mc;
  in.have_mock_stats = false;
  in.tokenizer_desc = NULL;
  CHECK_INT(tp_report_json(path, &in, err, sizeof(err)), 0, "json: write without mock");
  doc = json_load_file(path, 0, &jerr);
  CHECK(doc && !json_object_get(doc, "mock"), "json: no mock key without mock stats");
  CHECK(doc && json_is_null(json_object_get(doc, "tokenizer")), "json: tokenizer null");
  json_t *jmc = doc ? json_object_get(json_object_get(doc, "config"), "mock_config") : NULL;
  CHECK(json_is_object(jmc) && num(jmc, "itl_ms") == 8.5 &&
            json_integer_value(json_object_get(jmc, "max_batch")) == 256 &&
            json_is_null(json_object_get(jmc, "log_path")),
        "json: config.mock_config fields");
  CHECK(doc && json_is_null(json_object_get(json_object_get(doc, "config"), "mock_log_path")),
        "json: no log, mock_log_path null");
  json_decref(doc);

  /* A run against a server of its own: no mock anywhere. */
  in.mock_config = NULL;
  CHECK_INT(tp_report_json(path, &in, err, sizeof(err)), 0, "json: write without a mock");
  doc = json_load_file(path, 0, &jerr);
  c = doc ? json_object_get(doc, "config") : NULL;
  CHECK(json_is_false(json_object_get(c, "mock")) && json_is_null(json_object_get(c, "mock_config")) &&
            json_is_null(json_object_get(c, "mock_log_path")),
        "json: no mock: config.mock false, mock_config and mock_log_path null");
  json_decref(doc);
  unlink(path);
}

static void test_json_server_away(void) {
  tp_config cfg;
  base_cfg(&cfg);
  tp_level_result lr[2];
  memset(lr, 0, sizeof(lr));
  lr[0].concurrency = lr[1].concurrency = 4;
  lr[0].server_outages = 2;
  lr[0].server_away_s = 1.5;
  lr[0].server_back_s = 2.25;
  lr[0].server_away_requests = 40;
  lr[1].server_back_s = -1;
  cfg.server.max_consecutive_failures = 100;
  tp_report_input in = {.cfg = &cfg, .levels = lr, .n_levels = 2};
  char path[512], err[512];
  snprintf(path, sizeof(path), "%s/away.json", tmpdir);
  CHECK_INT(tp_report_json(path, &in, err, sizeof(err)), 0, "json away: written");
  json_t *doc = json_load_file(path, 0, NULL);
  json_t *levels = json_object_get(doc, "levels");
  json_t *a = json_object_get(json_array_get(levels, 0), "server_away");
  CHECK(json_is_object(a) && num(a, "at_s") == 1.5 && num(a, "back_s") == 2.25 &&
            json_integer_value(json_object_get(a, "requests")) == 40 &&
            json_integer_value(json_object_get(a, "outages")) == 2 && json_is_false(json_object_get(a, "ended_level")),
        "json away: at_s, back_s, requests, outages, ended_level");
  CHECK(json_is_null(json_object_get(json_array_get(levels, 1), "server_away")), "json away: null without an outage");
  json_t *ebc = json_object_get(json_array_get(levels, 0), "errors_by_class");
  CHECK(json_is_integer(json_object_get(ebc, "not_sent")), "json away: errors_by_class has not_sent");
  CHECK(json_integer_value(json_object_get(json_object_get(doc, "config"), "max_consecutive_failures")) == 100,
        "json away: the config says the limit");
  json_decref(doc);
  unlink(path);
}

static void test_json_errors(void) {
  tp_config cfg;
  base_cfg(&cfg);
  tp_report_input in = {.cfg = &cfg};
  char err[512] = "";

  const char *bad = "/nonexistent-tokperf-dir/sub/report.json";
  CHECK_INT(tp_report_json(bad, &in, err, sizeof(err)), TP_EIO, "error: missing directory -> TP_EIO");
  CHECK(strstr(err, bad) != NULL, "error: message names the path (%s)", err);
  CHECK(strstr(err, strerror(ENOENT)) != NULL, "error: message gives the reason");

  /* The target is a directory: the temporary is written, the rename fails,
   * and the temporary must be removed. */
  char dir[512];
  snprintf(dir, sizeof(dir), "%s/adir", tmpdir);
  mkdir(dir, 0755);
  err[0] = 0;
  CHECK_INT(tp_report_json(dir, &in, err, sizeof(err)), TP_EIO, "error: path is a directory");
  CHECK(strstr(err, dir) != NULL, "error: directory message names the path (%s)", err);
  CHECK_INT(dir_entries(tmpdir), 1, "error: no temporary left after a failed rename");
  rmdir(dir);

  CHECK_INT(tp_report_json(NULL, &in, err, sizeof(err)), TP_EINVAL, "error: NULL path");
}

/* perf_analyzer's -f CSV: header, throughput order, microseconds, the
 * network part as latency less the server's, composing files beside. */
static void test_pa_csv(void) {
  tp_level_result lv[3];
  uint32_t conc[3] = {1, 4, 2};
  double rps[3] = {1.5, 5.25, 2.75};
  tp_server_model_stats models[3][2];
  for (int i = 0; i < 3; i++) {
    level_no_tokens(&lv[i], conc[i]);
    lv[i].request_throughput = rps[i];
    set_stat(&lv[i].send_lag_ms, 10, 0.0505 * (i + 1), 0, 1, 0, 0.05, 0.06);
    set_stat(&lv[i].latency_ms, 10, 100.0 * (i + 1), 90, 110, 1, 100, 109);
    set_stat(&lv[i].latency_from_planned_ms, 10, 100.0505 * (i + 1), 90, 110, 1, 100.25 * (i + 1), 109.9999 * (i + 1));
    memset(models[i], 0, sizeof(models[i]));
    snprintf(models[i][0].name, sizeof(models[i][0].name), "ensemble");
    snprintf(models[i][0].version, sizeof(models[i][0].version), "1");
    models[i][0].is_target = true;
    models[i][0].success_count = 10;
    models[i][0].avg_queue_us = 1000.7;
    models[i][0].avg_compute_input_us = 20;
    models[i][0].avg_compute_infer_us = 80000.2;
    models[i][0].avg_compute_output_us = 30;
    snprintf(models[i][1].name, sizeof(models[i][1].name), "postprocessing");
    snprintf(models[i][1].version, sizeof(models[i][1].version), "2");
    models[i][1].success_count = 40;
    models[i][1].avg_overhead_us = 3.9;
    models[i][1].avg_queue_us = 4;
    models[i][1].avg_compute_infer_us = 50;
    lv[i].server_models = models[i];
    lv[i].n_server_models = 2;
  }
  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_report_pa_csv(&b, lv, 3, NULL, true), 0, "pa csv: written");
  const char *want =
      "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,"
      "Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency,"
      "Avg latency,request/response,response wait\n"
      "1,1.5,50,18950,1000,20,80000,30,0,100250,105124,107562,109999,100050,50,100000\n"
      "2,2.75,151,218950,1000,20,80000,30,0,300750,315374,322687,329999,300151,151,300000\n"
      "4,5.25,101,118950,1000,20,80000,30,0,200500,210249,215124,219999,200101,101,200000\n";
  CHECK_STR((const char *)b.data, want, "pa csv: rows by throughput, in whole us, network = latency - server");
  tp_buf_reset(&b);
  CHECK_INT(tp_report_pa_csv(&b, lv, 3, "postprocessing", false), 0, "pa csv composing: written");
  const char *want_c =
      "Concurrency,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,"
      "Server Compute Infer,Server Compute Output,Client Recv\n"
      "1,6,0,3,4,0,50,0,0\n2,11,0,3,4,0,50,0,0\n4,21,0,3,4,0,50,0,0\n";
  CHECK_STR((const char *)b.data, want_c, "pa csv composing: its share of the throughput, its overhead");
  /* A rate sweep names its first column so; a level without server
   * statistics has zeros there and all of the latency as network. */
  for (int i = 0; i < 3; i++) {
    lv[i].load_mode = TP_LOAD_RATE;
    lv[i].request_rate = 2.5 * (i + 1);
    lv[i].n_server_models = 0;
  }
  tp_buf_reset(&b);
  CHECK_INT(tp_report_pa_csv(&b, lv, 1, NULL, false), 0, "pa csv rate: written");
  CHECK_STR((const char *)b.data,
            "Request Rate,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,Server Compute Input,"
            "Server Compute Infer,Server Compute Output,Client Recv,p50 latency,p90 latency,p95 latency,p99 latency\n"
            "2.5,1.5,50,100000,0,0,0,0,0,100250,105124,107562,109999\n",
            "pa csv rate: the rate column, no server figures");
  /* The files: the main one and one per composing model beside it. */
  char path[600], cpath[700], err[256];
  snprintf(path, sizeof(path), "%s/perf.csv", tmpdir);
  snprintf(cpath, sizeof(cpath), "%s/postprocessing_v2.perf.csv", tmpdir);
  for (int i = 0; i < 3; i++) lv[i].n_server_models = 2;
  CHECK_INT(tp_report_pa_csv_files(path, NULL, lv, 3, false, err, sizeof(err)), 0, "pa csv files: written");
  CHECK(access(path, R_OK) == 0 && access(cpath, R_OK) == 0, "pa csv files: %s and its composing file", path);
  unlink(path);
  unlink(cpath);
  snprintf(path, sizeof(path), "%s/no/such/dir/perf.csv", tmpdir);
  CHECK(tp_report_pa_csv_files(path, NULL, lv, 3, false, err, sizeof(err)) == TP_EIO && strstr(err, path),
        "pa csv files: an unwritable path is named: %s", err);
  tp_buf_fini(&b);
}

/* A level an interruption cut short: named partial with how long it ran,
 * in the level's text, the summary, the closing line and the JSON; the
 * levels before it count as completed. */
static void test_partial(void) {
  tp_config cfg;
  base_cfg(&cfg);
  tp_level_result lr[3];
  level_full(&lr[0]);
  level_full(&lr[1]);
  level_full(&lr[2]);
  lr[1].concurrency = 8;
  lr[1].partial = true;
  lr[1].partial_ran_s = 2.31;
  lr[1].partial_planned_s = 4;
  lr[2].concurrency = 16;
  lr[2].partial = true;
  lr[2].partial_ran_s = 0.5;
  lr[2].partial_planned_requests = 100;
  tp_report_input in = {.cfg = &cfg, .levels = lr, .n_levels = 2, .interrupted = true};
  char *t = render(&in);
  CHECK(t && strstr(t, "Partial: interrupted, it ran 2.3 of 4.0 s; the figures cover what ran\n"),
        "partial: the level says how long it ran of its time");
  CHECK(t && strstr(t, "c=8 partial"), "partial: marked in the summary");
  CHECK(t && strstr(t,
                    "Sweep interrupted: 1 of 3 levels completed (concurrency 4); level 2 (concurrency 8) "
                    "partial: it ran 2.3 of 4.0 s\n"),
        "partial: not counted completed, named with its time");
  if (t) check_tables_aligned(t, 4, "partial");
  free(t);
  in.levels = &lr[2];
  in.n_levels = 1;
  t = render(&in);
  CHECK(t && strstr(t, "Partial: interrupted, it ran 0.5 s, 20 of its 100 requests measured"),
        "partial: a count says how many of its requests were measured");
  free(t);

  char path[600], err[512];
  snprintf(path, sizeof(path), "%s/partial.json", tmpdir);
  in.levels = lr;
  in.n_levels = 3;
  CHECK_INT(tp_report_json(path, &in, err, sizeof(err)), 0, "partial: JSON written");
  json_t *doc = json_load_file(path, 0, NULL);
  json_t *lv = json_object_get(doc, "levels");
  CHECK(json_is_false(json_object_get(json_array_get(lv, 0), "partial")) &&
            !json_object_get(json_array_get(lv, 0), "partial_ran_s"),
        "partial: a whole level is \"partial\": false");
  json_t *p1 = json_array_get(lv, 1), *p2 = json_array_get(lv, 2);
  CHECK(json_is_true(json_object_get(p1, "partial")) && num(p1, "partial_ran_s") == 2.31 &&
            num(p1, "partial_planned_s") == 4 &&
            json_is_null(json_object_get(p1, "partial_planned_requests")),
        "partial: JSON gives the time it ran and its planned time");
  CHECK(json_is_true(json_object_get(p2, "partial")) &&
            json_is_null(json_object_get(p2, "partial_planned_s")) &&
            num(p2, "partial_planned_requests") == 100,
        "partial: or its planned count");
  json_decref(doc);
  unlink(path);
}

/* The bytes of path, up to len (-1: unreadable). */
static ssize_t slurp(const char *path, char *buf, size_t len) {
  int fd = open(path, O_RDONLY | O_NONBLOCK);
  if (fd < 0) return -1;
  ssize_t n = read(fd, buf, len - 1);
  close(fd);
  if (n >= 0) buf[n] = 0;
  return n;
}

/* Outputs never destroy what is there: a link stays a link and its target
 * gets the data; a FIFO is written in place (its reader gets the data, it
 * stays a FIFO); a character device made in a temporary directory (root
 * only: mknod) stays a device; a failed write leaves no temporary. */
static void test_targets(void) {
  tp_config cfg;
  base_cfg(&cfg);
  tp_report_input in = {.cfg = &cfg};
  char err[512] = "", dir[400], target[450], link[450], fifo[450], node[450], buf[8192];
  snprintf(dir, sizeof(dir), "%s/targets", tmpdir);
  mkdir(dir, 0755);
  snprintf(target, sizeof(target), "%s/real.json", dir);
  snprintf(link, sizeof(link), "%s/link.json", dir);
  symlink("real.json", link);
  CHECK_INT(tp_report_json(link, &in, err, sizeof(err)), 0, "targets: JSON through a link to a new file");
  struct stat st;
  CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "targets: the link is still a link");
  CHECK(slurp(target, buf, sizeof(buf)) > 0 && strstr(buf, "\"schema\""),
        "targets: its target holds the document");
  CHECK_INT(tp_report_json(link, &in, err, sizeof(err)), 0, "targets: and again, over the existing target");
  CHECK(lstat(link, &st) == 0 && S_ISLNK(st.st_mode), "targets: still a link");
  CHECK_INT(dir_entries(dir), 2, "targets: no temporary left beside them");

  snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
  mkfifo(fifo, 0600);
  /* A reader first (the write then never blocks: the document fits the
   * pipe's buffer). */
  int rd = open(fifo, O_RDONLY | O_NONBLOCK);
  CHECK_INT(tp_report_json(fifo, &in, err, sizeof(err)), 0, "targets: JSON into a FIFO with a reader");
  ssize_t got = rd >= 0 ? read(rd, buf, sizeof(buf) - 1) : -1;
  if (got >= 0) buf[got] = 0;
  CHECK(got > 0 && strstr(buf, "\"schema\""), "targets: the reader got the document (%zd bytes)", got);
  if (rd >= 0) close(rd);
  CHECK(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode), "targets: the FIFO is still a FIFO");

  /* -f at a FIFO: the composing models' files go to the directory given,
   * not beside the FIFO; without one they are not written, and said. */
  tp_level_result lv[1];
  memset(lv, 0, sizeof(lv));
  tp_server_model_stats models[2];
  memset(models, 0, sizeof(models));
  snprintf(models[0].name, sizeof(models[0].name), "ensemble");
  models[0].is_target = true;
  snprintf(models[1].name, sizeof(models[1].name), "postprocessing");
  lv[0].server_models = models;
  lv[0].n_server_models = 2;
  lv[0].requests = lv[0].succeeded = 1;
  char side[450], cpath[600];
  snprintf(side, sizeof(side), "%s/artifacts", dir);
  mkdir(side, 0755);
  rd = open(fifo, O_RDONLY | O_NONBLOCK);
  CHECK_INT(tp_report_pa_csv_files(fifo, side, lv, 1, false, err, sizeof(err)), 0, "targets: -f into a FIFO");
  snprintf(cpath, sizeof(cpath), "%s/postprocessing_v1.fifo", side);
  CHECK(access(cpath, R_OK) == 0, "targets: the composing file went to the artifact directory");
  CHECK_INT(dir_entries(dir), 4, "targets: nothing beside the FIFO");
  unlink(cpath);
  CHECK_INT(tp_report_pa_csv_files(fifo, NULL, lv, 1, false, err, sizeof(err)), 0,
            "targets: -f into a FIFO, no directory");
  CHECK(strstr(err, "not written") != NULL, "targets: the composing file not written is said (%s)", err);
  CHECK_INT(dir_entries(dir), 4, "targets: still nothing beside the FIFO");
  if (rd >= 0) close(rd);
  rmdir(side);

  snprintf(node, sizeof(node), "%s/null", dir);
  if (mknod(node, S_IFCHR | 0666, makedev(1, 3)) == 0) {
    CHECK_INT(tp_report_json(node, &in, err, sizeof(err)), 0, "targets: JSON into a character device");
    CHECK(lstat(node, &st) == 0 && S_ISCHR(st.st_mode) && st.st_rdev == makedev(1, 3),
          "targets: the device node is still the same device node");
    CHECK_INT(dir_entries(dir), 4, "targets: no temporary beside it");
    unlink(node);
  } else {
    printf("ok %d - targets: character device # SKIP mknod: %s\n", ++tp_test_n_, strerror(errno));
  }
  unlink(fifo);
  unlink(link);
  unlink(target);
  rmdir(dir);
}

int main(void) {
  const char *base = getenv("TMPDIR");
  snprintf(tmpdir, sizeof(tmpdir), "%s/tp_report_XXXXXX", base && *base ? base : "/tmp");
  if (!mkdtemp(tmpdir)) {
    perror("mkdtemp");
    return 1;
  }
  test_text_full();
  test_text_no_tokens();
  test_text_all_failed();
  test_text_server_away();
  test_json_full();
  test_json_server_away();
  test_json_errors();
  test_pa_csv();
  test_targets();
  test_partial();
  rmdir(tmpdir);
  return tp_test_done();
}

/* Reports: the console tables and the JSON document.
 *
 * Both are views of tp_level_result; no figure is derived here beyond
 * choosing how to print it.  An unavailable figure (a stat with n == 0, a
 * token throughput without a tokenizer) is printed as "n/a" and written as
 * JSON null, never as 0, because 0 is a real measurement (a request that
 * generated 0 tokens). */
#include "report/tp_report_search.h"
#include "tp_report.h"
#include "report/tp_export.h"
#include "metrics/tp_metric.h"
#include "tokperf/tokperf.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <jansson.h>

#define NA "n/a"

static const char *backend_name(tp_backend b) {
  switch (b) {
    case TP_BACKEND_TENSORRTLLM: return "tensorrtllm";
    case TP_BACKEND_VLLM: return "vllm";
  }
  return "unknown";
}

static const char *service_kind_name(tp_service_kind k) {
  switch (k) {
    case TP_SERVICE_TRITON: return "triton";
    case TP_SERVICE_OPENAI_COMPLETIONS: return "openai-completions";
    case TP_SERVICE_OPENAI_CHAT: return "openai-chat";
    case TP_SERVICE_TRITON_GENERATE: return "triton-generate";
  }
  return "unknown";
}

/* A failed request without an error class never finished; "none" would
 * read as "no error" in a report, so the text says what it means. */
static const char *failure_class_name(int c) {
  return c == TP_ERRCLASS_NONE ? "unfinished" : tp_error_class_name((tp_error_class)c);
}

static bool have_input_tokens(const tp_level_result *lr) { return lr->input_tokens.n > 0; }

/* "concurrency 8", "request rate 2000/s (cap 64)", "schedule", with the
 * sweep's lengths when they vary. */
static void level_name(const tp_level_result *lr, char *buf, size_t len) {
  int n;
  if (lr->load_mode == TP_LOAD_RATE)
    n = snprintf(buf, len, "request rate %g/s", lr->request_rate);
  else if (lr->load_mode == TP_LOAD_SCHEDULE)
    n = snprintf(buf, len, "schedule");
  else
    n = snprintf(buf, len, "concurrency %" PRIu32, lr->concurrency);
  if (n < 0 || (size_t)n >= len) return;
  if (lr->load_mode != TP_LOAD_CONCURRENCY && lr->concurrency)
    n += snprintf(buf + n, len - (size_t)n, " (in-flight cap %" PRIu32 ")", lr->concurrency);
  if (lr->input_tokens_mean && (size_t)n < len)
    n += snprintf(buf + n, len - (size_t)n, ", input %" PRIu32 " tokens", lr->input_tokens_mean);
  if (lr->output_tokens_mean && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n, ", output %" PRIu32 " tokens", lr->output_tokens_mean);
}

/* ------------------------------------------------------------------------ */
/* Text                                                                     */

/* Formats v with `decimals` places and a comma between thousands, as the
 * GenAI-Perf tables do, so that long latencies stay readable. */
static void fmt_num(char *buf, size_t len, double v, int decimals) {
  char raw[64];
  if (!isfinite(v)) {
    snprintf(buf, len, "%s", NA);
    return;
  }
  snprintf(raw, sizeof(raw), "%.*f", decimals, v);
  const char *digits = raw[0] == '-' ? raw + 1 : raw;
  size_t int_len = strcspn(digits, ".");
  char tmp[96];
  size_t o = 0;
  if (raw[0] == '-') tmp[o++] = '-';
  for (size_t i = 0; i < int_len; i++) {
    if (i && (int_len - i) % 3 == 0) tmp[o++] = ',';
    tmp[o++] = digits[i];
  }
  snprintf(tmp + o, sizeof(tmp) - o, "%s", digits + int_len);
  snprintf(buf, len, "%s", tmp);
}

static void fmt_u64(char *buf, size_t len, uint64_t v) { fmt_num(buf, len, (double)v, 0); }

#define CELL_LEN 64
#define MAX_COLS 16

typedef struct cell {
  char s[CELL_LEN];
} cell;

static void put_repeat(FILE *out, const char *s, size_t n) {
  for (size_t i = 0; i < n; i++) fputs(s, out);
}

/* One border line: left corner, fill per column (width + the two padding
 * spaces), joints between columns, right corner.  The box characters are
 * multi-byte UTF-8, so widths are counted in cells, never with printf. */
static void border(FILE *out, const size_t *w, size_t ncols, const char *left,
                   const char *fill, const char *joint, const char *right) {
  fputs(left, out);
  for (size_t c = 0; c < ncols; c++) {
    put_repeat(out, fill, w[c] + 2);
    fputs(c + 1 < ncols ? joint : right, out);
  }
  fputc('\n', out);
}

static void row(FILE *out, const size_t *w, size_t ncols, const cell *cells, const char *bar) {
  for (size_t c = 0; c < ncols; c++) fprintf(out, "%s %*s ", bar, (int)w[c], cells[c].s);
  fprintf(out, "%s\n", bar);
}

/* The width tables must fit in (the terminal's, set by tp_report_text for
 * the report it prints; 0 = no limit, as in files and pipes). */
static size_t table_width_limit;

/* The terminal's width when out is one: TIOCGWINSZ, else $COLUMNS; 0 when
 * out is not a terminal (a file or a pipe keeps whole tables). */
static size_t terminal_width(FILE *out) {
  int fd = fileno(out);
  if (fd < 0 || !isatty(fd)) return 0;
  struct winsize ws;
  if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) return ws.ws_col;
  const char *c = getenv("COLUMNS");
  long v = c ? strtol(c, NULL, 10) : 0;
  return v > 0 ? (size_t)v : 0;
}

static void table_part(FILE *out, const char *title, const cell *head, const cell *cells, size_t ncols,
                       size_t nrows, const size_t *cols, size_t n) {
  size_t w[MAX_COLS] = {0};
  cell h[MAX_COLS], *rc = calloc(nrows ? nrows * n : 1, sizeof(*rc));
  if (!rc) return;
  for (size_t k = 0; k < n; k++) {
    h[k] = head[cols[k]];
    w[k] = strlen(h[k].s);
    for (size_t r = 0; r < nrows; r++) {
      rc[r * n + k] = cells[r * ncols + cols[k]];
      w[k] = TP_MAX(w[k], strlen(rc[r * n + k].s));
    }
  }
  size_t total = 1;
  for (size_t c = 0; c < n; c++) total += w[c] + 3;
  size_t tlen = strlen(title);
  fprintf(out, "%*s%s\n", (int)(tlen < total ? (total - tlen) / 2 : 0), "", title);
  border(out, w, n, "┏", "━", "┳", "┓");
  row(out, w, n, h, "┃");
  border(out, w, n, "┡", "━", "╇", "┩");
  for (size_t r = 0; r < nrows; r++) row(out, w, n, rc + r * n, "│");
  border(out, w, n, "└", "─", "┴", "┘");
  free(rc);
}

/* A GenAI-Perf-style table: a centred title, a heavy header, light rows.
 * Every cell is right-aligned, which lines up both the labels (as in the
 * GenAI-Perf output) and the numbers.  On a terminal narrower than the
 * table, the columns are split over several tables, each repeating the
 * first column, so no line wraps and nothing is left out. */
static void table(FILE *out, const char *title, const cell *head, const cell *cells,
                  size_t ncols, size_t nrows) {
  size_t w[MAX_COLS] = {0};
  for (size_t c = 0; c < ncols; c++) {
    w[c] = strlen(head[c].s);
    for (size_t r = 0; r < nrows; r++) w[c] = TP_MAX(w[c], strlen(cells[r * ncols + c].s));
  }
  size_t cols[MAX_COLS];
  size_t limit = table_width_limit;
  size_t c = 1;
  bool first = true;
  do {
    size_t n = 0, total = 1 + w[0] + 3;
    cols[n++] = 0;
    while (c < ncols && (n == 1 || !limit || total + w[c] + 3 <= limit)) {
      total += w[c] + 3;
      cols[n++] = c++;
    }
    char t[200];
    snprintf(t, sizeof(t), "%s%s", title, first ? "" : " (continued)");
    table_part(out, t, head, cells, ncols, nrows, cols, n);
    first = false;
  } while (c < ncols);
}

static void set_cell(cell *c, const char *s) { snprintf(c->s, sizeof(c->s), "%s", s); }

/* The per-level table's columns, in the order they are shown. */
static const tp_stat_id table_stats[] = {TP_STAT_AVG, TP_STAT_MIN, TP_STAT_MAX, TP_STAT_P99, TP_STAT_P95,
                                         TP_STAT_P90, TP_STAT_P75, TP_STAT_P50, TP_STAT_STD};
enum { STAT_COLS = 1 + sizeof(table_stats) / sizeof(table_stats[0]), MAX_TABLE_ROWS = 16 };

/* "Time to first token (ms)": a count's label already names its unit. */
static void metric_title(char *buf, size_t len, const tp_metric *m) {
  if (m->unit == TP_UNIT_TOKENS || m->unit == TP_UNIT_REQUESTS || m->unit == TP_UNIT_RESPONSES)
    snprintf(buf, len, "%s", m->label);
  else
    snprintf(buf, len, "%s (%s)", m->label, tp_unit_name(m->unit));
}

static void stat_row(cell *cells, const tp_metric *m, const tp_level_result *lr) {
  metric_title(cells[0].s, CELL_LEN, m);
  for (int i = 0; i < STAT_COLS - 1; i++) {
    double v;
    if (tp_metric_value(m, lr, table_stats[i], &v))
      fmt_num(cells[i + 1].s, CELL_LEN, v, m->decimals);
    else
      set_cell(&cells[i + 1], NA);
  }
}

/* A distributed run: who measured the level, how the clocks stood, and
 * who failed (docs/scale-out.md). */
static void print_ranks(FILE *out, const tp_level_result *lr) {
  fprintf(out, "Ranks (MPI): %" PRIu32 " of %" PRIu32 " reporting; merged time line good to +/- %.1f us "
          "(clock offsets from rank 0, measured before the level)\n",
          lr->ranks_reporting, lr->ranks, lr->clock_uncertainty_us);
  for (uint32_t k = 0; lr->rank_info && k < lr->ranks; k++) {
    const tp_rank_info *x = &lr->rank_info[k];
    char share[48] = "";
    if (x->concurrency)
      snprintf(share, sizeof(share), "%s %" PRIu32 ", ",
               lr->load_mode == TP_LOAD_CONCURRENCY ? "concurrency" : "in-flight cap", x->concurrency);
    if (x->ok)
      fprintf(out, "  rank %" PRIu32 " on %s: %s%" PRIu64 " requests, clock %+.1f +/- %.1f us\n", x->rank, x->host,
              share, x->requests, x->clock_offset_us, x->clock_uncertainty_us);
    else
      fprintf(out, "  rank %" PRIu32 " on %s: %sFAILED: %s\n", x->rank, x->host, share, x->failure);
  }
  if (lr->incomplete)
    fprintf(out, "INCOMPLETE: %" PRIu32 " of %" PRIu32 " ranks failed; their share of the load and their records "
            "are missing from this level\n", lr->ranks - lr->ranks_reporting, lr->ranks);
}

/* Multi-turn sessions (docs/sessions.md): a row per turn index. */
static void fmt_or_na(char *buf, size_t len, double v, int decimals) {
  if (v < 0)
    snprintf(buf, len, NA);
  else
    fmt_num(buf, len, v, decimals);
}

static void print_turns(FILE *out, const tp_level_result *lr) {
  enum { COLS = 9, MAX_TURNS = 64 };
  cell head[COLS], cells[MAX_TURNS * COLS];
  const char *h[COLS] = {"Turn", "Requests", "TTFT avg (ms)", "TTFT p99 (ms)", "ITL avg (ms)", "Latency avg (ms)",
                         "Input tokens", "Cached tokens", "Output tokens"};
  for (int c = 0; c < COLS; c++) set_cell(&head[c], h[c]);
  size_t rows = lr->n_turns < MAX_TURNS ? lr->n_turns : MAX_TURNS;
  for (size_t i = 0; i < rows; i++) {
    const tp_turn_stats *t = &lr->turns[i];
    cell *c = cells + i * COLS;
    snprintf(c[0].s, sizeof(c[0].s), "%u", t->turn + 1);
    snprintf(c[1].s, sizeof(c[1].s), "%" PRIu64, t->requests);
    fmt_or_na(c[2].s, sizeof(c[2].s), t->ttft_ms_avg, 2);
    fmt_or_na(c[3].s, sizeof(c[3].s), t->ttft_ms_p99, 2);
    fmt_or_na(c[4].s, sizeof(c[4].s), t->itl_ms_avg, 2);
    fmt_or_na(c[5].s, sizeof(c[5].s), t->latency_ms_avg, 2);
    fmt_or_na(c[6].s, sizeof(c[6].s), t->input_tokens_avg, 1);
    fmt_or_na(c[7].s, sizeof(c[7].s), t->cached_tokens_avg, 1);
    fmt_or_na(c[8].s, sizeof(c[8].s), t->output_tokens_avg, 1);
  }
  fputc('\n', out);
  table(out, "Per turn (sessions)", head, cells, COLS, rows);
  if (lr->n_turns > rows) fprintf(out, "note: %zu more turns in the JSON report\n", lr->n_turns - rows);
  const tp_session_summary *s = &lr->sessions;
  char tok[64];
  fmt_or_na(tok, sizeof(tok), s->tokens_avg, 1);
  fprintf(out, "Sessions: %" PRIu64 " measured, %" PRIu64 " completed, %.2f turns each; time per session (s, think "
          "time included) avg %.3f p99 %.3f; tokens per session (input + output) %s\n",
          s->sessions, s->completed, s->turns_avg, s->time_s_avg, s->time_s_p99, tok);
}

/* Where a level's output or input token counts came from: "server",
 * "client", "mixed" (some requests each), or "none" (nothing counted). */
static const char *token_source_name(const tp_level_result *lr, bool output) {
  uint64_t server = output ? lr->tokens_from_server_output : lr->tokens_from_server_input;
  uint64_t counted = output ? lr->output_tokens.n : lr->input_tokens.n;
  if (!counted) return "none";
  if (!server) return "client";
  return server >= counted ? "server" : "mixed";
}

static const char *token_source_label(const tp_level_result *lr, bool output) {
  const char *s = token_source_name(lr, output);
  if (!strcmp(s, "server")) return "the server's";
  if (!strcmp(s, "client")) return "the client's tokenizer";
  if (!strcmp(s, "mixed")) return "the server's where it reported them, else the client's tokenizer";
  return "not counted";
}

/* The server's token counts against the client's.  A side the client did
 * not count (no tokenizer) has nothing to differ from: it says so rather
 * than "0". */
static void print_usage_side(FILE *out, const char *side, bool counted, uint64_t mismatches, double mean,
                             double max) {
  if (counted)
    fprintf(out, "%" PRIu64 " (%s; by %.1f tokens on average, at most %.0f)", mismatches, side, mean, max);
  else
    fprintf(out, "no request (%s: the client did not count)", side);
}

static void print_usage(FILE *out, const tp_level_result *lr) {
  fprintf(out, "Server usage: %" PRIu64 " requests reported token counts; ", lr->usage_reported);
  if (!lr->usage_output_compared && !lr->usage_input_compared) {
    fputs("the client did not count tokens to compare them with (no --tokenizer)", out);
  } else {
    fputs("they differ from the client's in ", out);
    print_usage_side(out, "output", lr->usage_output_compared > 0, lr->usage_output_mismatches,
                     lr->usage_output_diff_mean, lr->usage_output_diff_max);
    fputs(" and ", out);
    print_usage_side(out, "input", lr->usage_input_compared > 0, lr->usage_input_mismatches,
                     lr->usage_input_diff_mean, lr->usage_input_diff_max);
  }
  fprintf(out, "; %" PRIu64 " prompt tokens served from its cache\n", lr->cached_tokens);
  fprintf(out, "Token counts used (--token-source): output %s; input %s\n",
          token_source_label(lr, true), token_source_label(lr, false));
}

static void print_level(FILE *out, const tp_report_input *in, const tp_level_result *lr,
                        bool *noted_tokens) {
  cell head[STAT_COLS], cells[MAX_TABLE_ROWS * STAT_COLS];
  set_cell(&head[0], "Statistic");
  for (int c = 1; c < STAT_COLS; c++) set_cell(&head[c], tp_stat_name(table_stats[c - 1]));
  size_t nm, nrows = 0;
  const tp_metric *all = tp_metrics(&nm);
  for (size_t k = 0; k < nm && nrows < MAX_TABLE_ROWS; k++)
    if (all[k].flags & TP_MF_TABLE) stat_row(cells + nrows++ * STAT_COLS, &all[k], lr);

  char title[160], name[128], a[64], b[64], c[64];
  level_name(lr, name, sizeof(name));
  snprintf(title, sizeof(title), "LLM metrics, %s", name);
  fputc('\n', out);
  table(out, title, head, cells, STAT_COLS, nrows);

  bool tokenizer_given = in->tokenizer_desc || (in->cfg && in->cfg->tokenizer);
  if (lr->succeeded == 0)
    fprintf(out, "note: no request succeeded, so latency and token metrics are unavailable\n");
  else if (!lr->tokens_available && !tokenizer_given && !*noted_tokens) {
    fprintf(out, "note: token metrics unavailable: no --tokenizer given\n");
    *noted_tokens = true;
  }

  if (lr->tokens_available)
    fmt_num(a, sizeof(a), lr->output_token_throughput, 2);
  else
    snprintf(a, sizeof(a), NA);
  fprintf(out, "Output token throughput (tokens/s): %s\n", a);
  if (have_input_tokens(lr))
    fmt_num(a, sizeof(a), lr->input_token_throughput, 2);
  else
    snprintf(a, sizeof(a), NA);
  fprintf(out, "Input token throughput (tokens/s): %s\n", a);
  fmt_num(a, sizeof(a), lr->request_throughput, 2);
  fprintf(out, "Request throughput (requests/s): %s\n", a);
  fmt_u64(a, sizeof(a), lr->requests);
  fmt_u64(b, sizeof(b), lr->succeeded);
  fmt_u64(c, sizeof(c), lr->failed);
  fprintf(out, "Requests: %s measured, %s succeeded, %s failed\n", a, b, c);
  fmt_num(a, sizeof(a), lr->duration_s, 2);
  fprintf(out, "Measured window (s): %s, max in flight (requests): %" PRIu32 "\n", a,
          lr->max_in_flight);
  if (lr->ranks) print_ranks(out, lr);
  if (lr->n_turns) print_turns(out, lr);
  if (lr->trials)
    fprintf(out, "Stability: %" PRIu32 " windows, %s\n", lr->trials,
            lr->stable ? "the last three agreed" : "the last three never agreed within the percentage");
  if (lr->load_mode != TP_LOAD_CONCURRENCY) {
    fmt_num(a, sizeof(a), lr->achieved_send_rate, 2);
    fprintf(out, "Achieved send rate (requests/s): %s", a);
    if (lr->load_mode == TP_LOAD_RATE && lr->request_rate > 0)
      fprintf(out, " (%.2f%% of the target)", 100.0 * lr->achieved_send_rate / lr->request_rate);
    fputc('\n', out);
  }
  if (lr->send_lag_ms.n) {
    fprintf(out, "Send lag (ms): p50 %.3f, p99 %.3f, max %.3f; %" PRIu64 " requests over 1 ms late\n",
            lr->send_lag_ms.p50, lr->send_lag_ms.p99, lr->send_lag_ms.max, lr->late_sends);
    if (lr->load_mode != TP_LOAD_CONCURRENCY && lr->ttft_from_planned_ms.n)
      fprintf(out, "From the planned send time (ms): TTFT avg %.2f p99 %.2f, latency avg %.2f p99 %.2f\n",
              lr->ttft_from_planned_ms.avg, lr->ttft_from_planned_ms.p99, lr->latency_from_planned_ms.avg,
              lr->latency_from_planned_ms.p99);
  }
  if (lr->goodput_set) {
    fmt_num(a, sizeof(a), lr->goodput_rps, 2);
    fprintf(out, "Goodput (requests/s): %s, %.2f%% of requests met every bound\n", a, 100 * lr->goodput_fraction);
    if (lr->goodput_unjudged)
      fprintf(out, "note: the %s bound could not judge %" PRIu64 " requests (no tokenizer counted their tokens, or "
              "their text came in one response); they count as not meeting it\n",
              in->cfg && in->cfg->goodput_itl_ms <= 0 && in->cfg->goodput_tpot_ms > 0 ? "TPOT" : "ITL",
              lr->goodput_unjudged);
  }
  if (lr->n_server_metrics || lr->metrics_scrapes || lr->metrics_scrape_failures) {
    fprintf(out, "Server metrics (%" PRIu32 " scrapes, %" PRIu32 " failed):", lr->metrics_scrapes,
            lr->metrics_scrape_failures);
    for (size_t m = 0; m < lr->n_server_metrics; m++) {
      const tp_server_metric *sm = &lr->server_metrics[m];
      fprintf(out, "%s %s avg %.4g max %.4g%s%s", m ? "," : "", sm->name, sm->avg, sm->max,
              strcmp(sm->unit, "fraction") ? " " : "", strcmp(sm->unit, "fraction") ? sm->unit : "");
    }
    fputc('\n', out);
  }
  if (lr->prefix_cache_hit_rate >= 0)
    fprintf(out, "Server prefix-cache hit rate: %.2f%%\n", 100 * lr->prefix_cache_hit_rate);
  if (lr->usage_reported) print_usage(out, lr);
  if (lr->reasoning_tokens.n) {
    fprintf(out, "Reasoning tokens (counted apart): avg %.1f, max %.0f\n", lr->reasoning_tokens.avg,
            lr->reasoning_tokens.max);
    if (lr->ttfo_ms.n)
      fprintf(out, "Time to first output token (after reasoning, ms): avg %.2f, p50 %.2f, p99 %.2f\n",
              lr->ttfo_ms.avg, lr->ttfo_ms.p50, lr->ttfo_ms.p99);
  }
  if (lr->accuracy_scored)
    fprintf(out, "Accuracy against %" PRIu64 " references: exact match %.2f%%, ROUGE-L F1 %.4f\n",
            lr->accuracy_scored, 100 * lr->exact_match_rate, lr->rouge_l_f1);
  if (lr->length_mismatches)
    fprintf(out, "Output length differed from the requested max_tokens in %" PRIu64 " requests\n",
            lr->length_mismatches);

  for (size_t m = 0; m < lr->n_server_models; m++) {
    const tp_server_model_stats *sm = &lr->server_models[m];
    if (m == 0 && sm->is_target) fprintf(out, "Server (%s, version %s):\n", sm->name, sm->version[0] ? sm->version : "-");
    else if (m == 0 || lr->server_models[m - 1].is_target) fprintf(out, "Composing models:\n");
    if (!sm->is_target) fprintf(out, "  %s, version %s:\n", sm->name, sm->version[0] ? sm->version : "-");
    const char *ind = sm->is_target ? "  " : "    ";
    fprintf(out, "%sInference count: %" PRIu64 ", execution count: %" PRIu64 ", successful requests: %" PRIu64
            ", failed: %" PRIu64 "\n", ind, sm->inference_count, sm->execution_count, sm->success_count, sm->fail_count);
    fprintf(out, "%sAvg request latency: %.0f usec (overhead %.0f usec + queue %.0f usec + compute input %.0f usec"
            " + compute infer %.0f usec + compute output %.0f usec)\n", ind, sm->avg_request_us, sm->avg_overhead_us,
            sm->avg_queue_us, sm->avg_compute_input_us, sm->avg_compute_infer_us, sm->avg_compute_output_us);
  }

  if (lr->failed) {
    fprintf(out, "Failed requests by class:");
    const char *sep = " ";
    /* Real error classes first, in table order; "unfinished" (class none)
     * last, as it is the absence of an answer rather than an error. */
    for (int i = 1; i <= TP_ERRCLASS_COUNT; i++) {
      int k = i % TP_ERRCLASS_COUNT;
      if (!lr->errors_by_class[k]) continue;
      fmt_u64(a, sizeof(a), lr->errors_by_class[k]);
      fprintf(out, "%s%s %s", sep, failure_class_name(k), a);
      sep = ", ";
    }
    fputc('\n', out);
    if (lr->first_error[0]) fprintf(out, "Sample error: %s\n", lr->first_error);
  }
  if (lr->reconnects) {
    fmt_u64(a, sizeof(a), lr->reconnects);
    fprintf(out, "Reconnects: %s requests re-sent on a fresh connection (the server closed or refused the "
            "one they went out on before answering; not failures)\n", a);
  }
}

/* The sweep summary: the level, its counts, then the registry's summary
 * rows (level figures, then each distribution's avg and p99). */
enum { SUM_MAX_COLS = 32 };

static void print_summary(FILE *out, const tp_report_input *in) {
  cell head[SUM_MAX_COLS];
  size_t nm, ncols = 0;
  const tp_metric *all = tp_metrics(&nm);
  const tp_metric *cols[SUM_MAX_COLS] = {0};
  tp_stat_id col_stat[SUM_MAX_COLS] = {0};
  set_cell(&head[ncols++], "Level");
  set_cell(&head[ncols++], "Requests");
  set_cell(&head[ncols++], "Failed");
  for (int pass = 0; pass < 2; pass++)
    for (size_t k = 0; k < nm; k++) {
      const tp_metric *m = &all[k];
      if (!(m->flags & TP_MF_SUMMARY) || (m->kind == TP_METRIC_DIST) != (pass == 1)) continue;
      const char *ab = m->abbrev[0] ? m->abbrev : m->name;
      if (m->kind != TP_METRIC_DIST) {
        if (ncols >= SUM_MAX_COLS) break;
        cols[ncols] = m;
        set_cell(&head[ncols++], ab);
        continue;
      }
      static const tp_stat_id st[2] = {TP_STAT_AVG, TP_STAT_P99};
      for (int q = 0; q < 2 && ncols < SUM_MAX_COLS; q++) {
        cols[ncols] = m;
        col_stat[ncols] = st[q];
        snprintf(head[ncols++].s, CELL_LEN, "%s %s %s", ab, tp_stat_name(st[q]), tp_unit_name(m->unit));
      }
    }
  cell *cells = calloc(in->n_levels * ncols, sizeof(*cells));
  if (!cells) {
    fprintf(out, "(summary table omitted: out of memory)\n");
    return;
  }
  for (size_t i = 0; i < in->n_levels; i++) {
    const tp_level_result *lr = &in->levels[i];
    cell *r = cells + i * ncols;
    if (lr->load_mode == TP_LOAD_RATE)
      snprintf(r[0].s, CELL_LEN, "%g/s", lr->request_rate);
    else if (lr->load_mode == TP_LOAD_SCHEDULE)
      snprintf(r[0].s, CELL_LEN, "schedule");
    else
      snprintf(r[0].s, CELL_LEN, "c=%" PRIu32, lr->concurrency);
    if (lr->input_tokens_mean)
      snprintf(r[0].s + strlen(r[0].s), CELL_LEN - strlen(r[0].s), " i%" PRIu32, lr->input_tokens_mean);
    if (lr->output_tokens_mean && in->cfg && in->cfg->n_output_tokens_means)
      snprintf(r[0].s + strlen(r[0].s), CELL_LEN - strlen(r[0].s), " o%" PRIu32, lr->output_tokens_mean);
    fmt_u64(r[1].s, CELL_LEN, lr->requests);
    fmt_u64(r[2].s, CELL_LEN, lr->failed);
    for (size_t c = 3; c < ncols; c++) {
      double v;
      if (tp_metric_value(cols[c], lr, col_stat[c], &v))
        fmt_num(r[c].s, CELL_LEN, v, 2);
      else
        set_cell(&r[c], NA);
    }
  }
  fputc('\n', out);
  table(out, "Sweep summary", head, cells, ncols, in->n_levels);
  free(cells);
}

void tp_report_text(FILE *out, const tp_report_input *in) {
  table_width_limit = terminal_width(out);
  static const tp_config no_cfg;
  const tp_config *cfg = in->cfg ? in->cfg : &no_cfg;
  const char *target = in->target ? in->target : cfg->url ? cfg->url : NA;
  const char *dataset = in->dataset_desc  ? in->dataset_desc
                        : cfg->input_file ? cfg->input_file
                                          : "synthetic prompts";
  fprintf(out, "Target: %s, model: %s, backend: %s, streaming: %s, tokenizer: %s, dataset: %s\n",
          target, cfg->model ? cfg->model : NA, backend_name(cfg->backend),
          cfg->streaming ? "on" : "off", in->tokenizer_desc ? in->tokenizer_desc : "none",
          dataset);

  bool noted_tokens = false;
  for (size_t i = 0; i < in->n_levels; i++) print_level(out, in, &in->levels[i], &noted_tokens);

  if (in->n_levels)
    print_summary(out, in);
  else
    fprintf(out, "\nNo level completed.\n");
  size_t incomplete = 0;
  for (size_t i = 0; i < in->n_levels; i++) incomplete += in->levels[i].incomplete;
  if (incomplete)
    fprintf(out, "Incomplete: %zu of %zu levels lack a failed rank's share (see each level's ranks)\n", incomplete,
            in->n_levels);

  tp_report_repeats_text(out, in);
  if (in->search) tp_report_search_text(out, in->search);

  if (in->have_mock_stats) {
    char a[64], b[64];
    fmt_u64(a, sizeof(a), in->mock_stats.requests);
    fmt_u64(b, sizeof(b), in->mock_stats.responses);
    fprintf(out,
            "Mock server: %s requests received, %s responses sent, at most %" PRIu32
            " streams open, at most %" PRIu32 " sequences decoding at once\n",
            a, b, in->mock_stats.max_active_streams, in->mock_stats.max_active_sequences);
  }

  if (in->interrupted) {
    fprintf(out, "Sweep interrupted: %zu of %zu levels completed", in->n_levels,
            TP_MAX(cfg->n_concurrency, in->n_levels));
    for (size_t i = 0; i < in->n_levels; i++)
      fprintf(out, "%s%" PRIu32, i ? ", " : " (concurrency ", in->levels[i].concurrency);
    fprintf(out, "%s\n", in->n_levels ? ")" : "");
  }
}

/* ------------------------------------------------------------------------ */
/* JSON                                                                     */

/* Every setter below may fail for lack of memory; jansson's *_set_new
 * frees the value on failure, so callers only OR the results together and
 * check once. */
static int set(json_t *obj, const char *key, json_t *v) {
  return json_object_set_new(obj, key, v) ? -1 : 0;
}

static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

/* JSON has no NaN or infinity; a non-finite figure is unavailable. */
static json_t *real_or_null(double v) { return isfinite(v) ? json_real(v) : json_null(); }

/* jansson integers are signed 64-bit.  A larger value (only a random seed
 * can be that large) is written as a decimal string rather than wrapped
 * negative or rounded through a double, so a run can still be repeated. */
#if JSON_INTEGER_IS_LONG_LONG
#define JSON_INT_MAX_ LLONG_MAX
#else
#define JSON_INT_MAX_ LONG_MAX
#endif
static json_t *u64(uint64_t v) {
  if (v <= (uint64_t)JSON_INT_MAX_) return json_integer((json_int_t)v);
  char buf[24];
  snprintf(buf, sizeof(buf), "%" PRIu64, v);
  return json_string(buf);
}

/* A distribution: its count and every statistic of the registry (in the
 * order avg, min, max, std, p1 ... p99, kept for readers of older
 * documents). */
static json_t *stat_json(const tp_stat *st) {
  static const tp_stat_id order[] = {TP_STAT_AVG, TP_STAT_MIN, TP_STAT_MAX, TP_STAT_STD, TP_STAT_P1,
                                     TP_STAT_P5,  TP_STAT_P10, TP_STAT_P25, TP_STAT_P50, TP_STAT_P75,
                                     TP_STAT_P90, TP_STAT_P95, TP_STAT_P99};
  _Static_assert(sizeof(order) / sizeof(order[0]) == TP_STAT_COUNT, "every statistic once");
  if (st->n == 0) return json_null();
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = set(o, "n", u64(st->n));
  for (size_t i = 0; i < TP_STAT_COUNT; i++)
    bad |= set(o, tp_stat_name(order[i]), real_or_null(tp_stat_get(st, order[i])));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *mock_config_json(const tp_mock_config *m) {
  if (!m) return json_null();
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = set(o, "host", str_or_null(m->host));
  bad |= set(o, "grpc_port", json_integer(m->grpc_port));
  bad |= set(o, "ttft_ms", real_or_null(m->ttft_ms));
  bad |= set(o, "prefill_us_per_token", real_or_null(m->prefill_us_per_token));
  bad |= set(o, "prefill_queue_ms", real_or_null(m->prefill_queue_ms));
  bad |= set(o, "itl_ms", real_or_null(m->itl_ms));
  bad |= set(o, "itl_us_per_seq", real_or_null(m->itl_us_per_seq));
  bad |= set(o, "max_batch", u64(m->max_batch));
  bad |= set(o, "output_tokens", u64(m->output_tokens));
  bad |= set(o, "eos_prob", real_or_null(m->eos_prob));
  bad |= set(o, "seed", u64(m->seed));
  bad |= set(o, "log_path", str_or_null(m->log_path));
  bad |= set(o, "quiet", json_boolean(m->quiet));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *config_json(const tp_config *cfg) {
  json_t *o = json_object(), *conc = json_array();
  if (!o || !conc) {
    json_decref(o);
    json_decref(conc);
    return NULL;
  }
  int bad = 0;
  for (size_t i = 0; i < cfg->n_concurrency && cfg->concurrency; i++)
    bad |= json_array_append_new(conc, u64(cfg->concurrency[i]));
  bad |= set(o, "url", str_or_null(cfg->url));
  bad |= set(o, "model", str_or_null(cfg->model));
  bad |= set(o, "model_version", str_or_null(cfg->model_version));
  bad |= set(o, "service_kind", json_string(service_kind_name(cfg->service_kind)));
  bad |= set(o, "backend", json_string(backend_name(cfg->backend)));
  bad |= set(o, "streaming", json_boolean(cfg->streaming));
  bad |= set(o, "concurrency", conc);
  json_t *rates = json_array();
  for (size_t i = 0; i < cfg->n_request_rates && cfg->request_rates; i++)
    json_array_append_new(rates, json_real(cfg->request_rates[i]));
  bad |= set(o, "request_rates", rates);
  static const char *const arrivals[] = {"constant", "poisson", "gamma"};
  bad |= set(o, "arrival", json_string(arrivals[cfg->arrival <= TP_ARRIVAL_GAMMA ? cfg->arrival : 0]));
  bad |= set(o, "burstiness", real_or_null(cfg->burstiness));
  bad |= set(o, "max_concurrency", u64(cfg->max_concurrency));
  bad |= set(o, "schedule_file", str_or_null(cfg->schedule_file));
  bad |= set(o, "replay_speedup", real_or_null(cfg->replay_speedup));
  static const char *const mmodes[] = {"count", "duration", "time_windows", "count_windows"};
  bad |= set(o, "measure_mode", json_string(mmodes[cfg->measure_mode <= TP_MEASURE_COUNT_WINDOWS ? cfg->measure_mode : 0]));
  bad |= set(o, "duration_ms", u64(cfg->duration_ms));
  bad |= set(o, "warmup_duration_ms", u64(cfg->warmup_duration_ms));
  bad |= set(o, "measurement_request_count", u64(cfg->measurement_request_count));
  bad |= set(o, "stability_percentage", real_or_null(cfg->stability_percentage));
  bad |= set(o, "max_trials", u64(cfg->max_trials));
  json_t *ins = json_array(), *outs = json_array();
  for (size_t i = 0; i < cfg->n_input_tokens_means && cfg->input_tokens_means; i++)
    json_array_append_new(ins, u64(cfg->input_tokens_means[i]));
  for (size_t i = 0; i < cfg->n_output_tokens_means && cfg->output_tokens_means; i++)
    json_array_append_new(outs, u64(cfg->output_tokens_means[i]));
  bad |= set(o, "synthetic_input_tokens_mean", ins);
  bad |= set(o, "synthetic_input_tokens_stddev", u64(cfg->input_tokens_stddev));
  bad |= set(o, "output_tokens_sweep", outs);
  bad |= set(o, "output_tokens_stddev", u64(cfg->output_tokens_stddev));
  json_t *gp = json_object();
  if (cfg->goodput_ttft_ms > 0) json_object_set_new(gp, "ttft_ms", json_real(cfg->goodput_ttft_ms));
  if (cfg->goodput_itl_ms > 0) json_object_set_new(gp, "itl_ms", json_real(cfg->goodput_itl_ms));
  if (cfg->goodput_latency_ms > 0) json_object_set_new(gp, "latency_ms", json_real(cfg->goodput_latency_ms));
  if (cfg->goodput_tpot_ms > 0) json_object_set_new(gp, "tpot_ms", json_real(cfg->goodput_tpot_ms));
  bad |= set(o, "goodput", gp);
  json_t *as = json_array();
  for (size_t i = 0; i < cfg->n_asserts && cfg->asserts; i++) json_array_append_new(as, json_string(cfg->asserts[i]));
  bad |= set(o, "asserts", as);
  bad |= set(o, "max_error_rate", cfg->max_error_rate >= 0 ? json_real(cfg->max_error_rate) : json_null());
  bad |= set(o, "endpoint", str_or_null(cfg->endpoint));
  /* Secrets never leave the process: the key is only said to be set, and
   * header values that look like credentials are masked. */
  bad |= set(o, "api_key", cfg->api_key ? json_string("***") : json_null());
  json_t *hdrs = json_array();
  for (size_t i = 0; i < cfg->n_headers && cfg->headers; i++) {
    const char *h = cfg->headers[i];
    const char *colon = strchr(h, ':');
    size_t nl = colon ? (size_t)(colon - h) : strlen(h);
    char lower[64];
    size_t k;
    for (k = 0; k < nl && k + 1 < sizeof(lower); k++) lower[k] = (char)(h[k] >= 'A' && h[k] <= 'Z' ? h[k] + 32 : h[k]);
    lower[k] = 0;
    bool secret = strstr(lower, "auth") || strstr(lower, "key") || strstr(lower, "token") || strstr(lower, "cookie") ||
                  strstr(lower, "secret") || strstr(lower, "password");
    char buf[512];
    snprintf(buf, sizeof(buf), "%.*s: %s", (int)nl, h, secret ? "***" : (colon ? colon + 1 + strspn(colon + 1, " ") : ""));
    json_array_append_new(hdrs, json_string(buf));
  }
  bad |= set(o, "headers", hdrs);
  json_t *extra = json_array();
  for (size_t i = 0; i < cfg->n_extra_inputs && cfg->extra_inputs; i++)
    json_array_append_new(extra, json_string(cfg->extra_inputs[i]));
  bad |= set(o, "extra_inputs", extra);
  bad |= set(o, "ca_file", str_or_null(cfg->ca_file));
  bad |= set(o, "cert_file", str_or_null(cfg->cert_file));
  bad |= set(o, "key_file", str_or_null(cfg->key_file));
  bad |= set(o, "insecure", json_boolean(cfg->insecure));
  bad |= set(o, "request_count", u64(cfg->request_count));
  bad |= set(o, "measurement_interval_ms", u64(cfg->measurement_interval_ms));
  bad |= set(o, "warmup_request_count", u64(cfg->warmup_request_count));
  bad |= set(o, "input_file", str_or_null(cfg->input_file));
  bad |= set(o, "tokenizer", str_or_null(cfg->tokenizer));
  bad |= set(o, "tokenizer_add_special_tokens", json_boolean(cfg->tokenizer_add_special_tokens));
  bad |= set(o, "random_seed", u64(cfg->random_seed));
  bad |= set(o, "output_tokens_mean", u64(cfg->output_tokens_mean));
  bad |= set(o, "output_tokens_deterministic", json_boolean(cfg->output_tokens_deterministic));
  bad |= set(o, "synthetic_input_words", u64(cfg->synthetic_input_words));
  bad |= set(o, "num_prompts", u64(cfg->num_prompts));
  bad |= set(o, "connections", u64(cfg->connections));
  bad |= set(o, "request_timeout_ms", u64(cfg->request_timeout_ms));
  bad |= set(o, "skip_preflight", json_boolean(cfg->skip_preflight));
  bad |= set(o, "json_path", str_or_null(cfg->json_path));
  bad |= set(o, "records_path", str_or_null(cfg->records_path));
  bad |= set(o, "mock", json_boolean(cfg->mock));
  bad |= set(o, "mock_config", mock_config_json(cfg->mock_config));
  bad |= set(o, "mock_log_path", str_or_null(cfg->mock_log_path));
  /* cfg->progress is a stream, not a setting worth recording; "quiet"
   * is what it means to a reader. */
  bad |= set(o, "progress", json_boolean(cfg->progress != NULL));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

/* A distributed run's ranks for one level (docs/scale-out.md). */
static json_t *mpi_json(const tp_level_result *lr) {
  json_t *o = json_object(), *ranks = json_array();
  if (!o || !ranks) {
    json_decref(o);
    json_decref(ranks);
    return NULL;
  }
  int bad = 0;
  for (uint32_t k = 0; lr->rank_info && k < lr->ranks; k++) {
    const tp_rank_info *x = &lr->rank_info[k];
    json_t *r = json_object();
    if (!r) {
      bad = 1;
      break;
    }
    bad |= set(r, "rank", u64(x->rank));
    bad |= set(r, "host", json_string(x->host));
    bad |= set(r, "concurrency", u64(x->concurrency));
    bad |= set(r, "requests", u64(x->requests));
    bad |= set(r, "max_in_flight", u64(x->max_in_flight));
    bad |= set(r, "ok", json_boolean(x->ok));
    bad |= set(r, "failure", x->ok ? json_null() : json_string(x->failure));
    bad |= set(r, "clock_offset_us", real_or_null(x->clock_offset_us));
    bad |= set(r, "clock_uncertainty_us", real_or_null(x->clock_uncertainty_us));
    bad |= json_array_append_new(ranks, r);
  }
  bad |= set(o, "ranks", u64(lr->ranks));
  bad |= set(o, "ranks_reporting", u64(lr->ranks_reporting));
  bad |= set(o, "complete", json_boolean(!lr->incomplete));
  bad |= set(o, "clock_uncertainty_us", real_or_null(lr->clock_uncertainty_us));
  bad |= set(o, "per_rank", ranks);
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *level_json(const tp_level_result *lr) {
  json_t *o = json_object(), *errs = json_object();
  if (!o || !errs) {
    json_decref(o);
    json_decref(errs);
    return NULL;
  }
  int bad = 0;
  /* Every class, "none" included (failed requests that never finished),
   * so the counts always sum to "failed" and the keys never vary. */
  for (int k = 0; k < TP_ERRCLASS_COUNT; k++)
    bad |= set(errs, tp_error_class_name((tp_error_class)k), u64(lr->errors_by_class[k]));
  static const char *const modes[] = {"concurrency", "request_rate", "schedule"};
  bad |= set(o, "mode", json_string(modes[lr->load_mode <= TP_LOAD_SCHEDULE ? lr->load_mode : 0]));
  bad |= set(o, "concurrency", u64(lr->concurrency));
  bad |= set(o, "request_rate_rps", lr->load_mode == TP_LOAD_RATE ? real_or_null(lr->request_rate) : json_null());
  bad |= set(o, "input_tokens_target", lr->input_tokens_mean ? u64(lr->input_tokens_mean) : json_null());
  bad |= set(o, "output_tokens_target", lr->output_tokens_mean ? u64(lr->output_tokens_mean) : json_null());
  bad |= set(o, "errors_by_class", errs);
  bad |= set(o, "tokens_available", json_boolean(lr->tokens_available));
  /* Every figure of the metric registry under its key: a distribution's
   * statistics, a level figure, a count; null when unavailable. */
  size_t nm;
  const tp_metric *all = tp_metrics(&nm);
  for (size_t k = 0; k < nm; k++) {
    const tp_metric *m = &all[k];
    double v;
    if (m->kind == TP_METRIC_DIST)
      bad |= set(o, m->json_key, stat_json(tp_metric_stat(m, lr)));
    else if (m->kind == TP_METRIC_COUNT)
      bad |= set(o, m->json_key,
                 tp_metric_value(m, lr, TP_STAT_AVG, &v)
                     ? u64(*(const uint64_t *)(const void *)((const char *)lr + m->offset))
                     : json_null());
    else
      bad |= set(o, m->json_key, tp_metric_value(m, lr, TP_STAT_AVG, &v) ? real_or_null(v) : json_null());
  }
  bad |= set(o, "max_in_flight", u64(lr->max_in_flight));
  bad |= set(o, "first_error", lr->first_error[0] ? json_string(lr->first_error) : json_null());
  json_t *srv = json_array();
  for (size_t m = 0; m < lr->n_server_models; m++) {
    const tp_server_model_stats *sm = &lr->server_models[m];
    json_array_append_new(srv, json_pack("{s:s,s:s,s:b,s:I,s:I,s:I,s:I,s:I,s:f,s:f,s:f,s:f,s:f,s:f}",
        "name", sm->name, "version", sm->version, "composing", !sm->is_target,
        "inference_count", (json_int_t)sm->inference_count, "execution_count", (json_int_t)sm->execution_count,
        "success_count", (json_int_t)sm->success_count, "fail_count", (json_int_t)sm->fail_count,
        "cache_hit_count", (json_int_t)sm->cache_hit_count,
        "avg_request_latency_us", sm->avg_request_us, "avg_queue_us", sm->avg_queue_us,
        "avg_compute_input_us", sm->avg_compute_input_us, "avg_compute_infer_us", sm->avg_compute_infer_us,
        "avg_compute_output_us", sm->avg_compute_output_us, "avg_overhead_us", sm->avg_overhead_us));
  }
  bad |= set(o, "server", srv);
  json_t *sm = json_object();
  for (size_t m = 0; m < lr->n_server_metrics; m++)
    json_object_set_new(sm, lr->server_metrics[m].name,
                        json_pack("{s:f,s:f,s:i,s:s}", "avg", lr->server_metrics[m].avg, "max", lr->server_metrics[m].max,
                                  "samples", (int)lr->server_metrics[m].samples, "unit", lr->server_metrics[m].unit));
  bad |= set(o, "server_metrics", sm);
  bad |= set(o, "metrics_scrapes", u64(lr->metrics_scrapes));
  bad |= set(o, "server_usage_reported", u64(lr->usage_reported));
  bad |= set(o, "server_usage_output_mismatches", u64(lr->usage_output_mismatches));
  bad |= set(o, "server_usage_input_mismatches", u64(lr->usage_input_mismatches));
  bad |= set(o, "server_usage_output_compared", u64(lr->usage_output_compared));
  bad |= set(o, "server_usage_input_compared", u64(lr->usage_input_compared));
  bad |= set(o, "server_usage_output_diff_mean", lr->usage_output_compared ? json_real(lr->usage_output_diff_mean)
                                                                          : json_null());
  bad |= set(o, "server_usage_output_diff_max", lr->usage_output_compared ? json_real(lr->usage_output_diff_max)
                                                                         : json_null());
  bad |= set(o, "server_usage_input_diff_mean", lr->usage_input_compared ? json_real(lr->usage_input_diff_mean)
                                                                        : json_null());
  bad |= set(o, "server_usage_input_diff_max", lr->usage_input_compared ? json_real(lr->usage_input_diff_max)
                                                                       : json_null());
  bad |= set(o, "output_tokens_source", json_string(token_source_name(lr, true)));
  bad |= set(o, "input_tokens_source", json_string(token_source_name(lr, false)));
  bad |= set(o, "server_cached_tokens", u64(lr->cached_tokens));
  bad |= set(o, "accuracy", lr->accuracy_scored ? json_pack("{s:I,s:f,s:f}", "scored", (json_int_t)lr->accuracy_scored,
                                                            "exact_match_rate", lr->exact_match_rate,
                                                            "rouge_l_f1", lr->rouge_l_f1)
                                                : json_null());
  bad |= set(o, "stability_trials", u64(lr->trials));
  bad |= set(o, "stable", lr->trials ? json_boolean(lr->stable) : json_null());
  bad |= set(o, "window_s", lr->window_end_s > 0 ? json_pack("[f,f]", lr->window_start_s, lr->window_end_s)
                                                    : json_null());
  /* Only in sessions runs (docs/sessions.md), like "mpi" below. */
  if (lr->n_turns) {
    json_t *turns = json_array();
    for (size_t i = 0; turns && i < lr->n_turns; i++) {
      const tp_turn_stats *t = &lr->turns[i];
      json_array_append_new(turns, json_pack("{s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "turn", (int)t->turn,
          "requests", u64(t->requests), "succeeded", u64(t->succeeded),
          "ttft_ms_avg", real_or_null(t->ttft_ms_avg < 0 ? NAN : t->ttft_ms_avg),
          "ttft_ms_p50", real_or_null(t->ttft_ms_p50 < 0 ? NAN : t->ttft_ms_p50),
          "ttft_ms_p99", real_or_null(t->ttft_ms_p99 < 0 ? NAN : t->ttft_ms_p99),
          "itl_ms_avg", real_or_null(t->itl_ms_avg < 0 ? NAN : t->itl_ms_avg),
          "latency_ms_avg", real_or_null(t->latency_ms_avg < 0 ? NAN : t->latency_ms_avg),
          "input_tokens_avg", real_or_null(t->input_tokens_avg < 0 ? NAN : t->input_tokens_avg),
          "cached_tokens_avg", real_or_null(t->cached_tokens_avg < 0 ? NAN : t->cached_tokens_avg),
          "output_tokens_avg", real_or_null(t->output_tokens_avg < 0 ? NAN : t->output_tokens_avg)));
    }
    bad |= set(o, "turns", turns);
    const tp_session_summary *ss = &lr->sessions;
    bad |= set(o, "sessions", json_pack("{s:o,s:o,s:f,s:f,s:f,s:o}", "sessions", u64(ss->sessions), "completed",
                                        u64(ss->completed), "turns_avg", ss->turns_avg, "time_s_avg", ss->time_s_avg,
                                        "time_s_p99", ss->time_s_p99, "tokens_avg",
                                        real_or_null(ss->tokens_avg < 0 ? NAN : ss->tokens_avg)));
  }
  /* Only in distributed runs, so a single process's document is unchanged. */
  if (lr->ranks) bad |= set(o, "mpi", mpi_json(lr));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *mock_json(const tp_mock_stats *m) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = set(o, "requests", u64(m->requests));
  bad |= set(o, "responses", u64(m->responses));
  bad |= set(o, "max_active_streams", u64(m->max_active_streams));
  bad |= set(o, "max_active_sequences", u64(m->max_active_sequences));
  bad |= set(o, "faults_injected", u64(m->faults_injected));
  bad |= set(o, "connections", u64(m->connections));
  bad |= set(o, "connections_refused", u64(m->connections_refused));
  bad |= set(o, "http_requests", u64(m->http_requests));
  bad |= set(o, "prefix_cache_queries_tokens", u64(m->prefix_cache_queries_tokens));
  bad |= set(o, "prefix_cache_hits_tokens", u64(m->prefix_cache_hits_tokens));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *report_json(const tp_report_input *in) {
  static const tp_config no_cfg;
  json_t *doc = json_object(), *gen = json_object(), *levels = json_array();
  if (!doc || !gen || !levels) {
    json_decref(doc);
    json_decref(gen);
    json_decref(levels);
    return NULL;
  }
  int bad = set(gen, "name", json_string("tokperf"));
  bad |= set(gen, "version", json_string(tp_version()));
  for (size_t i = 0; i < in->n_levels; i++)
    bad |= json_array_append_new(levels, level_json(&in->levels[i]));
  bad |= set(doc, "schema", json_string("tokperf.report/1"));
  bad |= set(doc, "generator", gen);
  bad |= set(doc, "config", config_json(in->cfg ? in->cfg : &no_cfg));
  bad |= set(doc, "target", str_or_null(in->target));
  bad |= set(doc, "tokenizer", str_or_null(in->tokenizer_desc));
  bad |= set(doc, "dataset", str_or_null(in->dataset_desc));
  bad |= set(doc, "interrupted", json_boolean(in->interrupted));
  bad |= set(doc, "levels", levels);
  if (in->have_mock_stats) bad |= set(doc, "mock", mock_json(&in->mock_stats));
  json_t *reps = tp_report_repeats_json(in);
  if (reps) bad |= set(doc, "repeats", reps);
  if (in->search) bad |= set(doc, "search", tp_report_search_json(in->search));
  if (bad) {
    json_decref(doc);
    return NULL;
  }
  return doc;
}

int tp_report_json(const char *path, const tp_report_input *in, char *err, size_t errlen) {
  if (!path || !in) {
    tp_seterr(err, errlen, "cannot write the JSON report: no path given");
    return TP_EINVAL;
  }
  json_t *doc = report_json(in);
  /* 15 significant digits: exact for every figure (ns resolution in ms
   * needs at most 13) without the 17-digit noise of 0.1 round trips. */
  char *text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) : NULL;
  json_decref(doc);
  if (!text) {
    tp_seterr(err, errlen, "cannot write %s: out of memory", path);
    return TP_ENOMEM;
  }
  /* The document ends with a newline, as a text file should; written
   * through a temporary and a rename (tp__write_atomic), so a reader never
   * sees half of it. */
  size_t tl = strlen(text);
  char *withnl = realloc(text, tl + 2);
  if (!withnl) {
    free(text);
    tp_seterr(err, errlen, "cannot write %s: out of memory", path);
    return TP_ENOMEM;
  }
  withnl[tl] = '\n';
  withnl[tl + 1] = 0;
  int rv = tp__write_atomic(path, withnl, tl + 1);
  int e = errno;
  free(withnl);
  if (rv) {
    tp_seterr(err, errlen, "cannot write %s: %s (check that the directory exists and is writable)",
              path, strerror(e));
    return TP_EIO;
  }
  return 0;
}

/* Reports: the console tables and the JSON document.
 *
 * Both are views of tp_level_result; no figure is derived here beyond
 * choosing how to print it.  An unavailable figure (a stat with n == 0, a
 * token throughput without a tokenizer) is printed as "n/a" and written as
 * JSON null, never as 0, because 0 is a real measurement (a request that
 * generated 0 tokens).
 *
 * This part: the console tables; tp_report_json.c writes the document. */
#include "report/tp_report_search.h"
#include "tp_report_internal.h"
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

#define NA "n/a"

const char *tp__report_backend_name(tp_backend b) {
  switch (b) {
    case TP_BACKEND_TENSORRTLLM: return "tensorrtllm";
    case TP_BACKEND_VLLM: return "vllm";
  }
  return "unknown";
}

const char *tp__report_backend_label(const tp_config *cfg) {
  if (cfg->server.service_kind == TP_SERVICE_TRITON || cfg->server.service_kind == TP_SERVICE_TRITON_GENERATE)
    return tp__report_backend_name(cfg->server.backend);
  return tp__report_service_kind_name(cfg->server.service_kind);
}

const char *tp__report_service_kind_name(tp_service_kind k) {
  switch (k) {
    case TP_SERVICE_TRITON: return "triton";
    case TP_SERVICE_OPENAI_COMPLETIONS: return "openai-completions";
    case TP_SERVICE_OPENAI_CHAT: return "openai-chat";
    case TP_SERVICE_TRITON_GENERATE: return "triton-generate";
    case TP_SERVICE_VLLM_GRPC: return "vllm-grpc";
    case TP_SERVICE_SGLANG_GRPC: return "sglang-grpc";
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

/* Each level's steady state in one line (docs/metrics.md, "Steady state"):
 * where it was, and the figures over it that differ from the level's. */
static void steady_text(FILE *out, const tp_report_input *in) {
  for (size_t i = 0; i < in->n_levels; i++) {
    const tp_level_result *lr = &in->levels[i];
    if (lr->saturation.detected) {
      char name[128];
      level_name(lr, name, sizeof(name));
      fprintf(out, "Over-saturated, %s: from %.1f s into the level: %s%s\n", name, lr->saturation.at_s,
              lr->saturation.reason, lr->saturation.stopped ? "; the level stopped there (--stop-on-saturation)" : "");
    }
    const tp_steady *s = &lr->steady;
    if (!s->target || !(s->threshold > 0)) continue;
    char name[128];
    level_name(lr, name, sizeof(name));
    if (!s->found) {
      fprintf(out, "Steady state, %s: none (never %" PRIu32 " of %" PRIu32 " in flight; at most %" PRIu32 ")\n", name,
              s->threshold_abs, s->target, s->peak);
      continue;
    }
    fprintf(out, "Steady state, %s: %.2f-%.2f s (%.2f s%s), %" PRIu32 "+ of %" PRIu32 " in flight: %.2f requests/s",
            name, s->start_s, s->end_s, s->duration_s, s->short_window ? ", short" : "", s->threshold_abs,
            s->target, s->request_throughput);
    if (isfinite(s->output_token_throughput)) fprintf(out, ", %.1f output tokens/s", s->output_token_throughput);
    if (s->ttft_ms.n) fprintf(out, ", TTFT p50 %.2f p99 %.2f ms", s->ttft_ms.p50, s->ttft_ms.p99);
    if (s->tpot_ms.n) fprintf(out, ", TPOT p50 %.2f ms", s->tpot_ms.p50);
    fputc('\n', out);
  }
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

void tp__report_table(FILE *out, const char *title, const char *const *head, const char *const *cells,
                      size_t ncols, size_t nrows) {
  if (ncols > MAX_COLS) return;
  cell h[MAX_COLS], *c = calloc(nrows ? nrows * ncols : 1, sizeof(*c));
  if (!c) return;
  for (size_t k = 0; k < ncols; k++) set_cell(&h[k], head[k]);
  for (size_t k = 0; k < nrows * ncols; k++) set_cell(&c[k], cells[k]);
  table(out, title, h, c, ncols, nrows);
  free(c);
}

void tp__report_fmt_num(char *buf, size_t len, double v, int decimals) { fmt_num(buf, len, v, decimals); }

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
const char *tp__report_token_source_name(const tp_level_result *lr, bool output) {
  uint64_t server = output ? lr->tokens_from_server_output : lr->tokens_from_server_input;
  uint64_t counted = output ? lr->output_tokens.n : lr->input_tokens.n;
  if (!counted) return "none";
  if (!server) return "client";
  return server >= counted ? "server" : "mixed";
}

static const char *token_source_label(const tp_level_result *lr, bool output) {
  const char *s = tp__report_token_source_name(lr, output);
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

/* The load as sent: the achieved rate, send lag, goodput. */
static void print_load_figures(FILE *out, const tp_report_input *in, const tp_level_result *lr) {
  char a[64];
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
    if (lr->goodput_unjudged) {
      const tp_measure_config *mc = in->cfg ? &in->cfg->measure : NULL;
      const char *bound = !mc || mc->goodput_itl_ms > 0 ? "ITL"
                          : mc->goodput_tpot_ms > 0     ? "TPOT"
                          : mc->goodput_ttst_ms > 0     ? "time to second token"
                                                        : "per-user throughput";
      fprintf(out,
              "note: the %s bound could not judge %" PRIu64
              " requests (no tokenizer counted their tokens, or "
              "their text came in one response); they count as not meeting it\n",
              bound, lr->goodput_unjudged);
    }
  }
}

/* What the server said beyond the answers: scraped metrics, cache hits,
 * usage counts, reasoning; and accuracy and length checks. */
static void print_server_figures(FILE *out, const tp_level_result *lr) {
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
}

/* Triton's per-model statistics: the target, then composing models. */
static void print_server_models(FILE *out, const tp_level_result *lr) {
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
}

/* Failed requests by class, a sample error, and re-sends. */
static void print_failures(FILE *out, const tp_level_result *lr) {
  char a[64];
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

/* When the server went away and came back (docs/metrics.md, "When the
 * server goes away"): the longest run of requests it did not take. */
static void print_server_away(FILE *out, const tp_level_result *lr) {
  if (!lr->server_outages) return;
  char n[64], back[64] = "";
  fmt_u64(n, sizeof(n), lr->server_away_requests);
  if (lr->server_back_s >= 0) snprintf(back, sizeof(back), " to %.2f s", lr->server_back_s);
  fprintf(out, "Server away: from %.2f s%s into the level%s (%s requests in a row failed to reach it or were not sent)",
          lr->server_away_s, back, lr->server_back_s >= 0 ? "" : ", not back by its end", n);
  if (lr->server_outages > 1) fprintf(out, "; the longest of %" PRIu32 " outages", lr->server_outages);
  if (lr->server_gone) fprintf(out, "; the level ended there (--max-consecutive-failures)");
  fputc('\n', out);
}

/* How far a partial level got: "it ran 2.3 of 4.0 s", "it ran 2.3 s, 37
 * of its 100 requests measured", "it ran 2.3 s". */
static void partial_words(const tp_level_result *lr, char *buf, size_t len) {
  if (lr->partial_planned_s > 0)
    snprintf(buf, len, "it ran %.1f of %.1f s", lr->partial_ran_s, lr->partial_planned_s);
  else if (lr->partial_planned_requests)
    snprintf(buf, len, "it ran %.1f s, %" PRIu64 " of its %" PRIu64 " requests measured", lr->partial_ran_s,
             lr->requests, lr->partial_planned_requests);
  else
    snprintf(buf, len, "it ran %.1f s", lr->partial_ran_s);
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
  if (lr->partial) {
    partial_words(lr, a, sizeof(a));
    fprintf(out, "Partial: interrupted, %s; the figures cover what ran\n", a);
  }

  bool tokenizer_given = in->tokenizer_desc || (in->cfg && in->cfg->prompts.tokenizer);
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
  print_load_figures(out, in, lr);
  print_server_figures(out, lr);
  print_server_models(out, lr);
  print_failures(out, lr);
  print_server_away(out, lr);
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
    if (lr->output_tokens_mean && in->cfg && in->cfg->prompts.n_output_tokens_means)
      snprintf(r[0].s + strlen(r[0].s), CELL_LEN - strlen(r[0].s), " o%" PRIu32, lr->output_tokens_mean);
    if (lr->partial) snprintf(r[0].s + strlen(r[0].s), CELL_LEN - strlen(r[0].s), " partial");
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
  const char *target = in->target ? in->target : cfg->server.url ? cfg->server.url : NA;
  const char *dataset = in->dataset_desc          ? in->dataset_desc
                        : cfg->prompts.input_file ? cfg->prompts.input_file
                                                  : "synthetic prompts";
  fprintf(out, "Target: %s, model: %s, backend: %s, streaming: %s, tokenizer: %s, dataset: %s\n", target,
          cfg->server.model && *cfg->server.model ? cfg->server.model : NA, tp__report_backend_label(cfg),
          cfg->server.streaming ? "on" : "off", in->tokenizer_desc ? in->tokenizer_desc : "none", dataset);

  /* The sweep summary, a row per level, comes first: it is what a person
   * reads a sweep for, and the top is where a log, a file or a pager opens.
   * Each level's full table follows it; the client's own figures close the
   * report (README.md, "Reading the output"). */
  if (in->n_levels)
    print_summary(out, in);
  else
    fprintf(out, "\nNo level completed.\n");
  bool noted_tokens = false;
  for (size_t i = 0; i < in->n_levels; i++) print_level(out, in, &in->levels[i], &noted_tokens);

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
    /* A level cut short is not counted completed: it is named, with how
     * far it got. */
    size_t done = 0;
    for (size_t i = 0; i < in->n_levels; i++) done += !in->levels[i].partial;
    fprintf(out, "Sweep interrupted: %zu of %zu levels completed", done,
            TP_MAX(cfg->load.n_concurrency, in->n_levels));
    size_t k = 0;
    for (size_t i = 0; i < in->n_levels; i++)
      if (!in->levels[i].partial)
        fprintf(out, "%s%" PRIu32, k++ ? ", " : " (concurrency ", in->levels[i].concurrency);
    fprintf(out, "%s", k ? ")" : "");
    for (size_t i = 0; i < in->n_levels; i++) {
      if (!in->levels[i].partial) continue;
      char name[128], w[128];
      level_name(&in->levels[i], name, sizeof(name));
      partial_words(&in->levels[i], w, sizeof(w));
      fprintf(out, "; level %zu (%s) partial: %s", i + 1, name, w);
    }
    fputc('\n', out);
  }
  steady_text(out, in);
  /* Last: the client's own figures, and how far to trust the above. */
  tp__report_fidelity_text(out, in);
}

/* The client's live figures (tp_live.h). */
#include "tp_live.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_request.h"
#include "tokperf/tokperf.h"

/* Bucket upper bounds, in seconds, as written in the "le" label (the text
 * is fixed, so a bound reads the same in every scrape) and as numbers.
 * Chosen to span what an LLM server answers in: a first token from a
 * millisecond (a cache hit on a small model) to a minute (a queue), a gap
 * between tokens from a tenth of a millisecond to a second, the client's
 * own lags from 10 us (a send on time) to a second (a stalled loop). */
#define MAX_BUCKETS 16

typedef struct bucket_set {
  const char *name; /* the family's name */
  const char *help;
  size_t n; /* finite bounds; +Inf follows */
  const char *le[MAX_BUCKETS];
  double bound[MAX_BUCKETS];
} bucket_set;

static const bucket_set sets[TP_LIVE_HIST_N] = {
    [TP_LIVE_TTFT] = {"tokperf_ttft_seconds",
                      "Time to first token of each successful request (docs/metrics.md: ttft)",
                      14,
                      {"0.001", "0.0025", "0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5",
                       "5", "10", "60"},
                      {0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 60}},
    [TP_LIVE_ITL] = {"tokperf_itl_seconds",
                     "Each gap between text responses of a successful request (docs/metrics.md: itl_pooled)",
                     12,
                     {"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05",
                      "0.1", "0.25", "1"},
                     {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1}},
    [TP_LIVE_LATENCY] = {"tokperf_request_latency_seconds",
                         "Request latency of each successful request (docs/metrics.md: latency)",
                         14,
                         {"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10", "30",
                          "60", "300"},
                         {0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300}},
    [TP_LIVE_SEND_LAG] =
        {"tokperf_send_lag_seconds",
         "Send lag of each sent request: its send time minus its planned time (docs/metrics.md: "
         "send_lag)",
         11,
         {"1e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.1", "1"},
         {1e-05, 5e-05, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.1, 1}},
    [TP_LIVE_LOOP_LAG] =
        {"tokperf_loop_lag_seconds",
         "Each dated read's lag: the loop's clock at the read minus the kernel's receive stamp "
         "(docs/metrics.md: fidelity.loop_lag)",
         11,
         {"1e-05", "5e-05", "0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.1", "1"},
         {1e-05, 5e-05, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.1, 1}},
};

typedef struct hist {
  uint64_t count[MAX_BUCKETS + 1]; /* per bucket, not cumulative; the last is above every bound */
  double sum;
} hist;

struct tp_live {
  uint64_t sent, completed, late_sends;
  uint64_t failed[TP_ERRCLASS_COUNT];
  uint64_t input_tokens, output_tokens;
  uint64_t response_gaps, merged_responses, first_pairs, first_merged;
  hist h[TP_LIVE_HIST_N];
};

tp_live *tp_live_new(void) {
  return calloc(1, sizeof(tp_live));
}

void tp_live_free(tp_live *l) {
  free(l);
}

void tp_live_observe(tp_live *l, tp_live_hist h, double seconds) {
  if (!l || (unsigned)h >= TP_LIVE_HIST_N || !(seconds >= 0)) return;
  const bucket_set *s = &sets[h];
  size_t i = 0;
  while (i < s->n && seconds > s->bound[i]) i++;
  l->h[h].count[i]++;
  l->h[h].sum += seconds;
}

static double secs(uint64_t from, uint64_t to) {
  return (double)(to - from) / 1e9;
}

void tp_live_sent(tp_live *l) {
  if (l) l->sent++;
}

void tp_live_done(tp_live *l, const tp_record *rec) {
  if (!l) return;
  if (rec->err_class == TP_ERRCLASS_NONE)
    l->completed++;
  else if ((unsigned)rec->err_class < TP_ERRCLASS_COUNT)
    l->failed[rec->err_class]++;
  /* Send lag as the level computes it (tp_request_metrics): a late send
   * is one over 1 ms, the report's count. */
  if (rec->sent_ns && rec->planned_ns && rec->sent_ns >= rec->planned_ns) {
    double lag = secs(rec->planned_ns, rec->sent_ns);
    tp_live_observe(l, TP_LIVE_SEND_LAG, lag);
    if (lag > 0.001) l->late_sends++;
  }
  /* How the client read, failed requests too (as the level's fidelity). */
  l->merged_responses += rec->n_text_merged;
  if (rec->n_text_resp) l->response_gaps += rec->n_text_resp - 1;
  if (rec->n_text_resp >= 2 && rec->first_token_ns) {
    l->first_pairs++;
    if (rec->second_token_ns == rec->first_token_ns) l->first_merged++;
  }
  if (!tp_record_ok(rec) || !rec->sent_ns) return;
  if (rec->first_token_ns >= rec->sent_ns && rec->first_token_ns)
    tp_live_observe(l, TP_LIVE_TTFT, secs(rec->sent_ns, rec->first_token_ns));
  if (rec->done_ns >= rec->sent_ns) tp_live_observe(l, TP_LIVE_LATENCY, secs(rec->sent_ns, rec->done_ns));
  /* The gaps the pooled ITL takes (tp_gap_pool_add_record): a gap of 0
   * (two responses of one read) is not one the server left. */
  uint32_t i0, i1;
  if (!tp_request_text_span(rec, &i0, &i1)) return;
  for (uint32_t i = i0 + 1; i <= i1; i++)
    if (rec->resp_ns[i] > rec->resp_ns[i - 1])
      tp_live_observe(l, TP_LIVE_ITL, secs(rec->resp_ns[i - 1], rec->resp_ns[i]));
}

void tp_live_tokens(tp_live *l, const tp_record *rec) {
  if (!l) return;
  if (rec->input_tokens > 0) l->input_tokens += (uint64_t)rec->input_tokens;
  if (rec->output_tokens > 0) l->output_tokens += (uint64_t)rec->output_tokens;
}

void tp_live_read_lag(tp_live *l, uint64_t lag_ns) {
  tp_live_observe(l, TP_LIVE_LOOP_LAG, (double)lag_ns / 1e9);
}

uint64_t tp_live_completed(const tp_live *l) {
  return l ? l->completed : 0;
}

uint64_t tp_live_failed(const tp_live *l) {
  uint64_t n = 0;
  for (size_t c = 0; l && c < TP_ERRCLASS_COUNT; c++) n += l->failed[c];
  return n;
}

/* ------------------------------------------------------------------------ */
/* The text format                                                          */

/* Appends one line; a line never passes 512 bytes (names and help are
 * this file's constants). */
static int line(tp_buf *out, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int line(tp_buf *out, const char *fmt, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(buf, sizeof(buf), fmt, ap);
  va_end(ap);
  if (n < 0) return TP_EINVAL;
  if ((size_t)n >= sizeof(buf)) n = (int)sizeof(buf) - 1;
  return tp_buf_append(out, buf, (size_t)n);
}

static int head(tp_buf *out, const char *name, const char *type, const char *help) {
  int rv = line(out, "# HELP %s %s\n", name, help);
  return rv ? rv : line(out, "# TYPE %s %s\n", name, type);
}

static int counter(tp_buf *out, const char *name, const char *help, uint64_t v) {
  int rv = head(out, name, "counter", help);
  return rv ? rv : line(out, "%s %" PRIu64 "\n", name, v);
}

/* A float sample as the format writes one: NaN and +Inf by name. */
static void fmt_value(char *buf, size_t len, double v) {
  if (isnan(v))
    snprintf(buf, len, "NaN");
  else if (isinf(v))
    snprintf(buf, len, v > 0 ? "+Inf" : "-Inf");
  else
    snprintf(buf, len, "%.17g", v);
}

static int gauge(tp_buf *out, const char *name, const char *help, double v) {
  char val[40];
  fmt_value(val, sizeof(val), v);
  int rv = head(out, name, "gauge", help);
  return rv ? rv : line(out, "%s %s\n", name, val);
}

static int counter_f(tp_buf *out, const char *name, const char *help, double v) {
  char val[40];
  fmt_value(val, sizeof(val), v);
  int rv = head(out, name, "counter", help);
  return rv ? rv : line(out, "%s %s\n", name, val);
}

static int histogram(tp_buf *out, const tp_live *l, tp_live_hist h) {
  const bucket_set *s = &sets[h];
  const hist *x = &l->h[h];
  int rv = head(out, s->name, "histogram", s->help);
  uint64_t cum = 0;
  for (size_t i = 0; !rv && i < s->n; i++) {
    cum += x->count[i];
    rv = line(out, "%s_bucket{le=\"%s\"} %" PRIu64 "\n", s->name, s->le[i], cum);
  }
  cum += x->count[s->n];
  char sum[40];
  fmt_value(sum, sizeof(sum), x->sum);
  if (!rv) rv = line(out, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", s->name, cum);
  if (!rv) rv = line(out, "%s_sum %s\n", s->name, sum);
  if (!rv) rv = line(out, "%s_count %" PRIu64 "\n", s->name, cum);
  return rv;
}

static const char *mode_name(int mode) {
  switch (mode) {
    case TP_LOAD_CONCURRENCY: return "concurrency";
    case TP_LOAD_RATE: return "rate";
    case TP_LOAD_SCHEDULE: return "schedule";
  }
  return "none";
}

int tp_live_render(const tp_live *l, const tp_live_state *st, tp_buf *out) {
  int rv = counter(out, "tokperf_requests_sent_total", "Requests handed to the transport", l->sent);
  if (!rv)
    rv = counter(out, "tokperf_requests_completed_total", "Requests that ended without an error",
                 l->completed);
  if (!rv)
    rv = head(out, "tokperf_requests_failed_total", "counter",
              "Requests that ended with an error, by class (docs/metrics.md: error classes); not_sent ones "
              "were never sent");
  for (int c = 0; !rv && c < TP_ERRCLASS_COUNT; c++)
    if (c != TP_ERRCLASS_NONE)
      rv = line(out, "tokperf_requests_failed_total{class=\"%s\"} %" PRIu64 "\n",
                tp_error_class_name((tp_error_class)c), l->failed[c]);
  if (!rv) rv = gauge(out, "tokperf_requests_in_flight", "Requests sent and not yet ended", st->in_flight);
  if (!rv)
    rv = gauge(out, "tokperf_requests_in_flight_max",
               "The most requests in flight at once in the level running", st->max_in_flight);
  if (!rv)
    rv = counter(out, "tokperf_input_tokens_total",
                 "Input tokens of the ended requests whose input was counted (docs/metrics.md: input_tokens)",
                 l->input_tokens);
  if (!rv)
    rv = counter(
        out, "tokperf_output_tokens_total",
        "Output tokens of the ended requests whose output was counted (docs/metrics.md: output_tokens)",
        l->output_tokens);
  for (int h = 0; !rv && h < TP_LIVE_LOOP_LAG; h++) rv = histogram(out, l, (tp_live_hist)h);
  if (!rv)
    rv = counter(out, "tokperf_late_sends_total",
                 "Requests sent over 1 ms after their planned time (late_sends)", l->late_sends);
  if (!rv) rv = gauge(out, "tokperf_level", "The level running, from 1 (0: none yet)", st->level);
  if (!rv) rv = gauge(out, "tokperf_levels", "Levels planned in the run", st->levels);
  if (!rv) rv = head(out, "tokperf_level_info", "gauge", "The load mode of the level running, as a label");
  if (!rv) rv = line(out, "tokperf_level_info{mode=\"%s\"} 1\n", st->level ? mode_name(st->mode) : "none");
  if (!rv)
    rv = gauge(out, "tokperf_level_target_concurrency",
               "Closed loop: the level's concurrency; open loop: its in-flight cap (0: none)",
               st->concurrency);
  if (!rv)
    rv = gauge(out, "tokperf_level_target_rate", "Open loop: the level's request rate, requests/s (0: none)",
               st->rate);
  if (!rv)
    rv = gauge(out, "tokperf_level_elapsed_seconds", "Time since the level running started",
               st->level_elapsed_s);
  /* The client's own figures (docs/metrics.md, "Fidelity"). */
  if (!rv)
    rv = counter(out, "tokperf_response_gaps_total", "Text responses that followed another of their request",
                 l->response_gaps);
  if (!rv)
    rv = counter(
        out, "tokperf_merged_responses_total",
        "Text responses that share their arrival time with the one before them (fidelity.merged_responses)",
        l->merged_responses);
  if (!rv)
    rv = counter(out, "tokperf_first_response_pairs_total", "Requests with two text responses or more",
                 l->first_pairs);
  if (!rv)
    rv = counter(out, "tokperf_first_responses_merged_total",
                 "Requests whose first two text responses share one time (fidelity.first_merged)",
                 l->first_merged);
  if (!rv)
    rv =
        counter(out, "tokperf_loop_reads_total", "Reads the client's loop dated (fidelity.reads)", st->reads);
  if (!rv) rv = histogram(out, l, TP_LIVE_LOOP_LAG);
  if (!rv)
    rv = counter_f(out, "tokperf_loop_cpu_seconds_total",
                   "CPU time of the thread that runs the client's loop", st->loop_cpu_s);
  if (!rv)
    rv = counter_f(out, "tokperf_process_cpu_seconds_total", "CPU time of the whole tokperf process",
                   st->process_cpu_s);
  if (!rv)
    rv =
        gauge(out, "tokperf_fidelity_verdict",
              "Fidelity verdict of the last finished level: 0 ok, 1 degraded, 2 client-bound (NaN: none yet)",
              st->verdict < 0 ? NAN : st->verdict);
  return rv;
}

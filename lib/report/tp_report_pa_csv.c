/* perf_analyzer's latency report (its -f FILE): one CSV row per level, the
 * columns perf_analyzer writes, in microseconds, rows in increasing order of
 * throughput as perf_analyzer sorts them, so scripts and spreadsheets that
 * read perf_analyzer's file read this one.
 *
 * What fills each column (docs/metrics.md, "perf_analyzer's -f CSV"):
 * - Inferences/Second: the level's request throughput.
 * - Client Send: the mean send lag (from the moment tokperf began the
 *   request, a freed slot or the planned time, to its last byte handed to
 *   the socket).
 * - Client Recv: 0.  tokperf dates a response where its bytes arrive and
 *   times no decoding, so no figure of its holds receive time.
 * - Server Queue / Compute Input / Infer / Output: Triton's statistics of
 *   the target model over the level, per successful request (0 when the
 *   server gave none).
 * - Network+Server Send/Recv: the mean request latency (last byte sent to
 *   the end) less queue and compute, at least 0, as perf_analyzer computes
 *   it.
 * - pN latency: request latency from the request's beginning (the send
 *   lag included, as perf_analyzer's latency includes its send). */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/tp_report.h"
#include "report/tp_export_internal.h"
#include "util/tp_files.h"

/* Microseconds as perf_analyzer prints them: whole, truncated. */
static uint64_t us_of_ms(double ms) {
  return ms > 0 && isfinite(ms) ? (uint64_t)(ms * 1000.0) : 0;
}

/* The model's statistics in one level: the target model when name is
 * NULL, else the composing model of that name. */
static const tp_server_model_stats *model_of(const tp_level_result *lr, const char *name) {
  for (size_t i = 0; i < lr->n_server_models; i++) {
    const tp_server_model_stats *m = &lr->server_models[i];
    if (name ? !m->is_target && strcmp(m->name, name) == 0 : m->is_target) return m;
  }
  return NULL;
}

/* Level order by throughput, ties kept in sweep order. */
typedef struct order_key {
  double throughput;
  size_t index;
} order_key;

static int by_throughput(const void *a, const void *b) {
  const order_key *x = a, *y = b;
  if (x->throughput != y->throughput) return x->throughput < y->throughput ? -1 : 1;
  return x->index < y->index ? -1 : x->index > y->index;
}

static order_key *sorted_order(const tp_level_result *levels, size_t n) {
  order_key *order = malloc((n ? n : 1) * sizeof(*order));
  if (!order) return NULL;
  for (size_t i = 0; i < n; i++) order[i] = (order_key){levels[i].request_throughput, i};
  qsort(order, n, sizeof(*order), by_throughput);
  return order;
}

/* The first column: the level's concurrency, or its request rate. */
static int load_cell(tp_buf *out, const tp_level_result *lr, bool rate) {
  if (rate) return tp_buf_printf(out, "%g,", lr->load_mode == TP_LOAD_RATE ? lr->request_rate : lr->achieved_send_rate);
  return tp_buf_printf(out, "%" PRIu32 ",", lr->concurrency);
}

static int header(tp_buf *out, bool rate, bool percentiles, bool verbose) {
  int bad = tp_buf_printf(out, "%s,Inferences/Second,Client Send,Network+Server Send/Recv,Server Queue,"
                               "Server Compute Input,Server Compute Infer,Server Compute Output,Client Recv",
                          rate ? "Request Rate" : "Concurrency");
  if (percentiles) bad |= tp_buf_printf(out, ",p50 latency,p90 latency,p95 latency,p99 latency");
  if (verbose) bad |= tp_buf_printf(out, ",Avg latency,request/response,response wait");
  return bad | tp_buf_printf(out, "\n");
}

static int target_row(tp_buf *out, const tp_level_result *lr, bool rate, bool verbose) {
  const tp_server_model_stats *m = model_of(lr, NULL);
  double queue = m ? m->avg_queue_us : 0, in = m ? m->avg_compute_input_us : 0;
  double infer = m ? m->avg_compute_infer_us : 0, outp = m ? m->avg_compute_output_us : 0;
  uint64_t send = us_of_ms(lr->send_lag_ms.avg);
  uint64_t wait = us_of_ms(lr->latency_ms.avg);
  uint64_t server = (uint64_t)queue + (uint64_t)in + (uint64_t)infer + (uint64_t)outp;
  const tp_stat *l = &lr->latency_from_planned_ms;
  int bad = load_cell(out, lr, rate);
  bad |= tp_buf_printf(out, "%g,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",0",
                       lr->request_throughput, send, wait > server ? wait - server : 0, (uint64_t)queue,
                       (uint64_t)in, (uint64_t)infer, (uint64_t)outp);
  bad |= tp_buf_printf(out, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, us_of_ms(l->p50), us_of_ms(l->p90),
                       us_of_ms(l->p95), us_of_ms(l->p99));
  if (verbose) bad |= tp_buf_printf(out, ",%" PRIu64 ",%" PRIu64 ",%" PRIu64, us_of_ms(l->avg), send, wait);
  return bad | tp_buf_printf(out, "\n");
}

/* A composing model's row: its share of the throughput (its successes over
 * the target's), its overhead where the target's row has the network. */
static int composing_row(tp_buf *out, const tp_level_result *lr, const char *name, bool rate) {
  const tp_server_model_stats *m = model_of(lr, name), *t = model_of(lr, NULL);
  if (!m) return 0;
  double share = t && t->success_count ? (double)m->success_count / (double)t->success_count : 0;
  int bad = load_cell(out, lr, rate);
  return bad | tp_buf_printf(out, "%g,0,%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",0\n",
                             share * lr->request_throughput, (uint64_t)m->avg_overhead_us, (uint64_t)m->avg_queue_us,
                             (uint64_t)m->avg_compute_input_us, (uint64_t)m->avg_compute_infer_us,
                             (uint64_t)m->avg_compute_output_us);
}

int tp_report_pa_csv(tp_buf *out, const tp_level_result *levels, size_t n, const char *composing,
                     bool verbose) {
  bool rate = n && levels[0].load_mode != TP_LOAD_CONCURRENCY;
  order_key *order = sorted_order(levels, n);
  if (!order) return TP_ENOMEM;
  int bad = header(out, rate, !composing, verbose && !composing);
  for (size_t k = 0; k < n && !bad; k++) {
    const tp_level_result *lr = &levels[order[k].index];
    bad = composing ? composing_row(out, lr, composing, rate) : target_row(out, lr, rate, verbose);
  }
  free(order);
  return bad ? TP_ENOMEM : 0;
}

/* "dir/name_vVER.base": perf_analyzer puts a composing model's file beside
 * the main one, its name and version before the file name (dir: path's
 * own, or another given). */
static void composing_path(char *out, size_t len, const char *path, const char *dir_over,
                           const tp_server_model_stats *m) {
  const char *base = strrchr(path, '/');
  int dir = base ? (int)(base - path + 1) : 0;
  if (dir_over)
    snprintf(out, len, "%s/%s_v%s.%s", dir_over, m->name, m->version[0] ? m->version : "1", path + dir);
  else
    snprintf(out, len, "%.*s%s_v%s.%s", dir, path, m->name, m->version[0] ? m->version : "1", path + dir);
}

static int write_one(const char *path, const tp_level_result *levels, size_t n, const char *composing, bool verbose,
                     char *err, size_t errlen) {
  tp_buf b;
  tp_buf_init(&b);
  int rv = tp_report_pa_csv(&b, levels, n, composing, verbose);
  if (!rv && tp__write_atomic(path, b.data, b.len)) {
    tp__write_err(err, errlen, path, errno, NULL);
    rv = TP_EIO;
  } else if (rv) {
    tp_seterr(err, errlen, "out of memory writing '%s'", path);
  }
  tp_buf_fini(&b);
  return rv;
}

int tp_report_pa_csv_files(const char *path, const char *sibling_dir, const tp_level_result *levels, size_t n,
                           bool verbose, char *err, size_t errlen) {
  tp_seterr(err, errlen, "%s", "");
  int rv = write_one(path, levels, n, NULL, verbose, err, errlen);
  if (rv) return rv;
  /* The neighbours go beside the file the path leads to, never beside a
   * device or a FIFO (as root, into /dev). */
  char *real = tp_resolve_target(path);
  if (!real) return TP_ENOMEM;
  bool in_place = tp_target_kind_of(real, NULL, 0) != TP_TARGET_FILE;
  size_t skipped = 0;
  for (size_t i = 0; !rv && n && i < levels[0].n_server_models; i++) {
    const tp_server_model_stats *m = &levels[0].server_models[i];
    if (m->is_target) continue;
    if (in_place && !sibling_dir) {
      skipped++;
      continue;
    }
    char cpath[4096];
    composing_path(cpath, sizeof(cpath), real, in_place ? sibling_dir : NULL, m);
    rv = write_one(cpath, levels, n, m->name, false, err, errlen);
  }
  if (!rv && skipped)
    tp_seterr(
        err, errlen,
        "%s is not a regular file: the latency reports of its %zu composing models are not written beside "
        "it (they go to the artifact directory when there is one)",
        path, skipped);
  free(real);
  return rv;
}

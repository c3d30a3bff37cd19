/* Reports: the JSON document (--json), a view of the level results like
 * the console tables (tp_report.c).  An unavailable figure is written as
 * null, never as 0. */
#include "report/tp_report_search.h"
#include "tp_report_internal.h"
#include "report/tp_report_fidelity.h"
#include "report/tp_export.h"
#include "metrics/tp_metric.h"
#include "tokperf/tokperf.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

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

/* The target and the load: what was measured, how hard and for how long. */
static int config_load_json(json_t *o, json_t *conc, const tp_config *cfg) {
  int bad = 0;
  for (size_t i = 0; i < cfg->load.n_concurrency && cfg->load.concurrency; i++)
    bad |= json_array_append_new(conc, u64(cfg->load.concurrency[i]));
  bad |= set(o, "url", str_or_null(cfg->server.url));
  bad |= set(o, "model", str_or_null(cfg->server.model));
  bad |= set(o, "model_version", str_or_null(cfg->server.model_version));
  bad |= set(o, "service_kind", json_string(tp__report_service_kind_name(cfg->server.service_kind)));
  bad |= set(o, "backend", json_string(tp__report_backend_label(cfg)));
  bad |= set(o, "streaming", json_boolean(cfg->server.streaming));
  bad |= set(o, "concurrency", conc);
  json_t *rates = json_array();
  for (size_t i = 0; i < cfg->load.n_request_rates && cfg->load.request_rates; i++)
    json_array_append_new(rates, json_real(cfg->load.request_rates[i]));
  bad |= set(o, "request_rates", rates);
  static const char *const arrivals[] = {"constant", "poisson", "gamma"};
  bad |=
      set(o, "arrival", json_string(arrivals[cfg->load.arrival <= TP_ARRIVAL_GAMMA ? cfg->load.arrival : 0]));
  bad |= set(o, "burstiness", real_or_null(cfg->load.burstiness));
  if (cfg->load.ramp) {
    /* Only on a ramp's run: the rate of the level moved between these. */
    bad |= set(o, "ramp", json_string(cfg->load.ramp == TP_RAMP_EXPONENTIAL ? "exponential" : "linear"));
    bad |= set(o, "ramp_start_rps", json_real(cfg->load.ramp_start_rps));
    bad |= set(o, "ramp_end_rps", json_real(cfg->load.ramp_end_rps));
  }
  bad |= set(o, "max_concurrency", u64(cfg->load.max_concurrency));
  bad |= set(o, "send_window_us", u64(cfg->load.send_window_us));
  bad |= set(o, "schedule_file", str_or_null(cfg->load.schedule_file));
  bad |= set(o, "replay_speedup", real_or_null(cfg->load.replay_speedup));
  static const char *const mmodes[] = {"count", "duration", "time_windows", "count_windows"};
  bad |=
      set(o, "measure_mode",
          json_string(
              mmodes[cfg->measure.measure_mode <= TP_MEASURE_COUNT_WINDOWS ? cfg->measure.measure_mode : 0]));
  bad |= set(o, "duration_ms", u64(cfg->measure.duration_ms));
  bad |= set(o, "warmup_duration_ms", u64(cfg->measure.warmup_duration_ms));
  bad |= set(o, "measurement_request_count", u64(cfg->measure.measurement_request_count));
  bad |= set(o, "stability_percentage", real_or_null(cfg->measure.stability_percentage));
  bad |= set(o, "max_trials", u64(cfg->measure.max_trials));
  return bad;
}

/* Prompt and answer lengths, goodput thresholds and gates. */
static int config_lengths_json(json_t *o, const tp_config *cfg) {
  int bad = 0;
  json_t *ins = json_array(), *outs = json_array();
  for (size_t i = 0; i < cfg->prompts.n_input_tokens_means && cfg->prompts.input_tokens_means; i++)
    json_array_append_new(ins, u64(cfg->prompts.input_tokens_means[i]));
  for (size_t i = 0; i < cfg->prompts.n_output_tokens_means && cfg->prompts.output_tokens_means; i++)
    json_array_append_new(outs, u64(cfg->prompts.output_tokens_means[i]));
  bad |= set(o, "synthetic_input_tokens_mean", ins);
  bad |= set(o, "synthetic_input_tokens_stddev", u64(cfg->prompts.input_tokens_stddev));
  bad |= set(o, "output_tokens_sweep", outs);
  bad |= set(o, "output_tokens_stddev", u64(cfg->prompts.output_tokens_stddev));
  json_t *gp = json_object();
  if (cfg->measure.goodput_ttft_ms > 0)
    json_object_set_new(gp, "ttft_ms", json_real(cfg->measure.goodput_ttft_ms));
  if (cfg->measure.goodput_itl_ms > 0)
    json_object_set_new(gp, "itl_ms", json_real(cfg->measure.goodput_itl_ms));
  if (cfg->measure.goodput_latency_ms > 0)
    json_object_set_new(gp, "latency_ms", json_real(cfg->measure.goodput_latency_ms));
  if (cfg->measure.goodput_tpot_ms > 0)
    json_object_set_new(gp, "tpot_ms", json_real(cfg->measure.goodput_tpot_ms));
  if (cfg->measure.goodput_ttst_ms > 0)
    json_object_set_new(gp, "ttst_ms", json_real(cfg->measure.goodput_ttst_ms));
  if (cfg->measure.goodput_tps_per_user_min > 0)
    json_object_set_new(gp, "output_tps_per_user_min", json_real(cfg->measure.goodput_tps_per_user_min));
  bad |= set(o, "goodput", gp);
  json_t *as = json_array();
  for (size_t i = 0; i < cfg->measure.n_asserts && cfg->measure.asserts; i++)
    json_array_append_new(as, json_string(cfg->measure.asserts[i]));
  bad |= set(o, "asserts", as);
  bad |= set(o, "max_error_rate",
             cfg->measure.max_error_rate >= 0 ? json_real(cfg->measure.max_error_rate) : json_null());
  return bad;
}

/* The header lines, with values that look like credentials masked. */
static json_t *headers_json(const tp_config *cfg) {
  json_t *hdrs = json_array();
  for (size_t i = 0; i < cfg->server.n_headers && cfg->server.headers; i++) {
    const char *h = cfg->server.headers[i];
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
  return hdrs;
}

/* How requests reach the server: endpoint, key, headers, extra inputs. */
static int config_access_json(json_t *o, const tp_config *cfg) {
  int bad = 0;
  bad |= set(o, "endpoint", str_or_null(cfg->server.endpoint));
  /* Secrets never leave the process: the key is only said to be set, and
   * header values that look like credentials are masked. */
  bad |= set(o, "api_key", cfg->server.api_key ? json_string("***") : json_null());
  json_t *hdrs = headers_json(cfg);
  bad |= set(o, "headers", hdrs);
  json_t *extra = json_array();
  for (size_t i = 0; i < cfg->server.n_extra_inputs && cfg->server.extra_inputs; i++)
    json_array_append_new(extra, json_string(cfg->server.extra_inputs[i]));
  bad |= set(o, "extra_inputs", extra);
  return bad;
}

/* TLS files, counts, inputs, the tokenizer, outputs and the mock. */
static int config_rest_json(json_t *o, const tp_config *cfg, const tp_mock_config *mock) {
  int bad = 0;
  bad |= set(o, "ca_file", str_or_null(cfg->server.ca_file));
  bad |= set(o, "cert_file", str_or_null(cfg->server.cert_file));
  bad |= set(o, "key_file", str_or_null(cfg->server.key_file));
  bad |= set(o, "insecure", json_boolean(cfg->server.insecure));
  bad |= set(o, "request_count", u64(cfg->measure.request_count));
  bad |= set(o, "measurement_interval_ms", u64(cfg->measure.measurement_interval_ms));
  bad |= set(o, "warmup_request_count", u64(cfg->measure.warmup_request_count));
  bad |= set(o, "input_file", str_or_null(cfg->prompts.input_file));
  bad |= set(o, "tokenizer", str_or_null(cfg->prompts.tokenizer));
  bad |= set(o, "tokenizer_add_special_tokens", json_boolean(cfg->prompts.tokenizer_add_special_tokens));
  bad |= set(o, "random_seed", u64(cfg->prompts.random_seed));
  bad |= set(o, "output_tokens_mean", u64(cfg->prompts.output_tokens_mean));
  bad |= set(o, "output_tokens_deterministic", json_boolean(cfg->prompts.output_tokens_deterministic));
  bad |= set(o, "synthetic_input_words", u64(cfg->prompts.synthetic_input_words));
  bad |= set(o, "num_prompts", u64(cfg->prompts.num_prompts));
  bad |= set(o, "connections", u64(cfg->server.connections));
  bad |= set(o, "request_timeout_ms", u64(cfg->server.request_timeout_ms));
  bad |= set(o, "max_consecutive_failures", u64(cfg->server.max_consecutive_failures));
  bad |= set(o, "skip_preflight", json_boolean(cfg->server.skip_preflight));
  bad |= set(o, "json_path", str_or_null(cfg->output.json_path));
  bad |= set(o, "records_path", str_or_null(cfg->output.records_path));
  bad |= set(o, "mock", json_boolean(mock != NULL));
  bad |= set(o, "mock_config", mock_config_json(mock));
  bad |= set(o, "mock_log_path", str_or_null(mock ? mock->log_path : NULL));
  /* cfg->output.progress is a stream, not a setting worth recording; "quiet"
   * is what it means to a reader. */
  bad |= set(o, "progress", json_boolean(cfg->output.progress != NULL));
  return bad;
}

static json_t *config_json(const tp_config *cfg, const tp_mock_config *mock) {
  json_t *o = json_object(), *conc = json_array();
  if (!o || !conc) {
    json_decref(o);
    json_decref(conc);
    return NULL;
  }
  int bad = config_load_json(o, conc, cfg);
  bad |= config_lengths_json(o, cfg);
  bad |= config_access_json(o, cfg);
  bad |= config_rest_json(o, cfg, mock);
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

json_t *tp__report_metric_json(const tp_metric *m, const tp_level_result *lr) {
  double v;
  if (m->kind == TP_METRIC_DIST) return stat_json(tp_metric_stat(m, lr));
  if (m->kind == TP_METRIC_COUNT)
    return tp_metric_value(m, lr, TP_STAT_AVG, &v)
               ? u64(*(const uint64_t *)(const void *)((const char *)lr + m->offset))
               : json_null();
  return tp_metric_value(m, lr, TP_STAT_AVG, &v) ? real_or_null(v) : json_null();
}

/* Every figure of the metric registry under its key. */
static int level_metrics_json(json_t *o, const tp_level_result *lr) {
  int bad = 0;
  /* Every figure of the metric registry under its key: a distribution's
   * statistics, a level figure, a count; null when unavailable.  A key
   * "a.b" is member b of the level's object a. */
  size_t nm;
  const tp_metric *all = tp_metrics(&nm);
  for (size_t k = 0; k < nm; k++)
    bad |= tp__json_key_set(o, all[k].json_key, tp__report_metric_json(&all[k], lr));
  return bad;
}

/* The steady state's window beside the registry's "steady.*" figures. */
static int level_steady_json(json_t *o, const tp_level_result *lr) {
  const tp_steady *s = &lr->steady;
  json_t *st = json_object_get(o, "steady");
  if (!st) return -1;
  int bad = set(st, "found", json_boolean(s->found));
  bad |= set(st, "target_concurrency", u64(s->target));
  bad |= set(st, "threshold", json_real(s->threshold));
  bad |= set(st, "threshold_abs", u64(s->threshold_abs));
  bad |= set(st, "observed_peak", u64(s->peak));
  bad |= set(st, "start_s", real_or_null(s->start_s));
  bad |= set(st, "end_s", real_or_null(s->end_s));
  bad |= set(st, "requests_started", u64(s->started));
  bad |= set(st, "requests_completed", u64(s->completed));
  bad |= set(st, "short_window", json_boolean(s->short_window));
  /* Over-saturation's words beside its registry figures. */
  json_t *sat = json_object_get(o, "saturation");
  if (!sat) return -1;
  bad |= set(sat, "stopped", json_boolean(lr->saturation.stopped));
  bad |= set(sat, "reason", lr->saturation.detected ? json_string(lr->saturation.reason) : json_null());
  return bad;
}

/* The level's time series (docs/metrics.md, "Time series"): the slices of
 * the client's figures and the scraped server figures as [t, value]
 * pairs, both in seconds from start_ns (the records' clock). */
static json_t *slice_json(const tp_slice *sl) {
  json_t *o = json_object();
  if (!o) return NULL;
  double w = sl->end_s - sl->start_s;
  int bad = set(o, "start_s", json_real(sl->start_s));
  bad |= set(o, "end_s", json_real(sl->end_s));
  bad |= set(o, "completed", u64(sl->completed));
  bad |= set(o, "failed", u64(sl->failed));
  bad |= set(o, "sent", u64(sl->sent));
  bad |= set(o, "first_tokens", u64(sl->first_tokens));
  bad |= set(o, "output_tokens", real_or_null(sl->output_tokens));
  bad |= set(o, "output_token_throughput_tps", w > 0 ? real_or_null(sl->output_tokens / w) : json_null());
  bad |= set(o, "input_tokens", real_or_null(sl->input_tokens));
  bad |= set(o, "request_throughput_rps", w > 0 ? json_real((double)sl->completed / w) : json_null());
  bad |= set(o, "ttft_p50_ms", sl->ttft_ms.n ? real_or_null(sl->ttft_ms.p50) : json_null());
  bad |= set(o, "ttft_p99_ms", sl->ttft_ms.n ? real_or_null(sl->ttft_ms.p99) : json_null());
  bad |= set(o, "itl_p50_ms", sl->itl_ms.n ? real_or_null(sl->itl_ms.p50) : json_null());
  bad |= set(o, "itl_p99_ms", sl->itl_ms.n ? real_or_null(sl->itl_ms.p99) : json_null());
  bad |= set(o, "in_flight_avg", real_or_null(sl->in_flight_avg));
  bad |= set(o, "send_lag_p99_ms", real_or_null(sl->send_lag_p99_ms));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static int level_series_json(json_t *o, const tp_level_result *lr) {
  if (!lr->slice_s) return set(o, "time_series", json_null());
  json_t *ts = json_object(), *sl = json_array(), *sv = json_object(), *units = json_object();
  int bad = !ts || !sl || !sv || !units;
  for (size_t i = 0; i < lr->n_slices && !bad; i++)
    bad |= json_array_append_new(sl, slice_json(&lr->slices[i]));
  for (size_t i = 0; i < lr->n_server_series && !bad; i++) {
    const tp_server_series *ss = &lr->server_series[i];
    json_t *pts = json_array();
    bad |= !pts;
    for (size_t k = 0; k < ss->n && !bad; k++)
      bad |= json_array_append_new(pts, json_pack("[f,f]", ss->t_s[k], ss->v[k]));
    bad |= set(sv, ss->name, pts);
    bad |= set(units, ss->name, json_string(ss->unit));
  }
  bad |= set(ts, "slice_s", json_real(lr->slice_s));
  bad |= set(ts, "start_ns", u64(lr->start_ns));
  bad |= set(ts, "slices", sl);
  bad |= set(ts, "server", sv);
  bad |= set(ts, "server_units", units);
  return bad | set(o, "time_series", ts);
}

/* The server's own figures: per-model statistics and scraped metrics. */
static int level_server_json(json_t *o, const tp_level_result *lr) {
  int bad = 0;
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
  return bad;
}

/* The server's usage counts against ours, and where token counts came from. */
static int level_usage_json(json_t *o, const tp_level_result *lr) {
  int bad = 0;
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
  bad |= set(o, "output_tokens_source", json_string(tp__report_token_source_name(lr, true)));
  bad |= set(o, "input_tokens_source", json_string(tp__report_token_source_name(lr, false)));
  bad |= set(o, "server_cached_tokens", u64(lr->cached_tokens));
  return bad;
}

/* Per turn and per session figures of a sessions run. */
static int level_sessions_json(json_t *o, const tp_level_result *lr) {
  int bad = 0;
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
  return bad;
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
  bad |= level_metrics_json(o, lr);
  bad |= level_steady_json(o, lr);
  bad |= level_series_json(o, lr);
  bad |= set(o, "max_in_flight", u64(lr->max_in_flight));
  bad |= set(o, "first_error", lr->first_error[0] ? json_string(lr->first_error) : json_null());
  bad |= level_server_json(o, lr);
  bad |= level_usage_json(o, lr);
  bad |= set(o, "accuracy", lr->accuracy_scored ? json_pack("{s:I,s:f,s:f}", "scored", (json_int_t)lr->accuracy_scored,
                                                            "exact_match_rate", lr->exact_match_rate,
                                                            "rouge_l_f1", lr->rouge_l_f1)
                                                : json_null());
  bad |= set(o, "stability_trials", u64(lr->trials));
  bad |= set(o, "stable", lr->trials ? json_boolean(lr->stable) : json_null());
  bad |= set(o, "window_s", lr->window_end_s > 0 ? json_pack("[f,f]", lr->window_start_s, lr->window_end_s)
                                                    : json_null());
  /* The longest run of requests the server did not take (docs/metrics.md,
   * "When the server goes away"); null when there was none. */
  bad |= set(o, "server_away",
             lr->server_outages
                 ? json_pack("{s:f,s:o,s:I,s:I,s:b}", "at_s", lr->server_away_s, "back_s",
                             lr->server_back_s >= 0 ? json_real(lr->server_back_s) : json_null(), "requests",
                             (json_int_t)lr->server_away_requests, "outages", (json_int_t)lr->server_outages,
                             "ended_level", lr->server_gone)
                 : json_null());
  /* An interruption cut the level short: how long it ran, of what it was
   * set to (null: not set by time, or by count). */
  bad |= set(o, "partial", json_boolean(lr->partial));
  if (lr->partial) {
    bad |= set(o, "partial_ran_s", real_or_null(lr->partial_ran_s));
    bad |= set(o, "partial_planned_s",
               lr->partial_planned_s > 0 ? real_or_null(lr->partial_planned_s) : json_null());
    bad |= set(o, "partial_planned_requests",
               lr->partial_planned_requests ? u64(lr->partial_planned_requests) : json_null());
  }
  /* Only in sessions runs (docs/sessions.md), like "mpi" below. */
  if (lr->n_turns) bad |= level_sessions_json(o, lr);
  /* Only in distributed runs, so a single process's document is unchanged. */
  if (lr->ranks) bad |= set(o, "mpi", mpi_json(lr));
  /* Last: the client's own figures. */
  bad |= tp__report_fidelity_level_json(o, lr);
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
  bad |= set(doc, "config", config_json(in->cfg ? in->cfg : &no_cfg, in->mock_config));
  bad |= set(doc, "target", str_or_null(in->target));
  bad |= set(doc, "tokenizer", str_or_null(in->tokenizer_desc));
  bad |= set(doc, "dataset", str_or_null(in->dataset_desc));
  bad |= set(doc, "interrupted", json_boolean(in->interrupted));
  bad |= set(doc, "levels", levels);
  if (in->have_mock_stats) bad |= set(doc, "mock", mock_json(&in->mock_stats));
  json_t *reps = tp_report_repeats_json(in);
  if (reps) bad |= set(doc, "repeats", reps);
  if (in->search) bad |= set(doc, "search", tp_report_search_json(in->search));
  /* Last: the client's verdict on the whole run. */
  if (in->n_levels) bad |= set(doc, "fidelity", tp__report_fidelity_json(in));
  if (bad) {
    json_decref(doc);
    return NULL;
  }
  return doc;
}

/* The document's text with its final newline (owned), NULL when out of
 * memory.  15 significant digits: exact for every figure (ns resolution in
 * ms needs at most 13) without the 17-digit noise of 0.1 round trips. */
static char *report_text(const tp_report_input *in, size_t *len) {
  json_t *doc = report_json(in);
  char *text = doc ? json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(15)) : NULL;
  json_decref(doc);
  if (!text) return NULL;
  /* The document ends with a newline, as a text file should. */
  size_t tl = strlen(text);
  char *withnl = realloc(text, tl + 2);
  if (!withnl) {
    free(text);
    return NULL;
  }
  withnl[tl] = '\n';
  withnl[tl + 1] = 0;
  *len = tl + 1;
  return withnl;
}

int tp_report_json(const char *path, const tp_report_input *in, char *err, size_t errlen) {
  if (!path || !in) {
    tp_seterr(err, errlen, "cannot write the JSON report: no path given");
    return TP_EINVAL;
  }
  size_t len = 0;
  char *text = report_text(in, &len);
  if (!text) {
    tp_seterr(err, errlen, "cannot write %s: out of memory", path);
    return TP_ENOMEM;
  }
  /* Written through a temporary and a rename (tp__write_atomic), so a
   * reader never sees half of it. */
  int rv = tp__write_atomic(path, text, len);
  int e = errno;
  free(text);
  if (rv) {
    tp__write_err(err, errlen, path, e, "check that the directory exists and is writable");
    return TP_EIO;
  }
  return 0;
}

int tp_report_json_fp(FILE *out, const tp_report_input *in, char *err, size_t errlen) {
  size_t len = 0;
  char *text = report_text(in, &len);
  if (!text) {
    tp_seterr(err, errlen, "cannot print the JSON report: out of memory");
    return TP_ENOMEM;
  }
  int rv = fwrite(text, 1, len, out) == len && fflush(out) == 0 ? 0 : TP_EIO;
  if (rv) tp_seterr(err, errlen, "cannot print the JSON report: %s", strerror(errno));
  free(text);
  return rv;
}

/* The metric registry (tp_metric.h). */
#include "tp_metric.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_fidelity.h"
#include "util/tp_common.h"

#define OFF(f) offsetof(tp_level_result, f)
/* The optional last argument is the sweep summary's column head (a
 * string literal, joined to "" so that leaving it out gives ""). */
#define DIST(name, label, unit, field, json, genai, aiperf, better, dec, flags, ...) \
  { name, label, TP_METRIC_DIST, unit, OFF(field), json, genai, aiperf, better, dec, flags, "" __VA_ARGS__ }
#define VALUE(name, label, unit, field, json, genai, aiperf, better, dec, flags, ...) \
  { name, label, TP_METRIC_VALUE, unit, OFF(field), json, genai, aiperf, better, dec, flags, "" __VA_ARGS__ }
#define COUNT(name, label, unit, field, json, genai, aiperf, better, flags) \
  { name, label, TP_METRIC_COUNT, unit, OFF(field), json, genai, aiperf, better, 0, flags, "" }

/* Report order: the per-request distributions, then the level's rates and
 * counts.  Each row's definition is in docs/metrics.md. */
static const tp_metric metrics[] = {
    DIST("ttft", "Time to first token", TP_UNIT_MS, ttft_ms, "time_to_first_token_ms", NULL, "time_to_first_token",
         -1, 2, TP_MF_TABLE | TP_MF_SUMMARY | TP_MF_COMPARE | TP_MF_STREAMING, "TTFT"),
    DIST("itl", "Inter token latency", TP_UNIT_MS, itl_ms, "inter_token_latency_ms", NULL, "inter_token_latency",
         -1, 2, TP_MF_TABLE | TP_MF_SUMMARY | TP_MF_COMPARE | TP_MF_STREAMING, "ITL"),
    DIST("latency", "Request latency", TP_UNIT_MS, latency_ms, "request_latency_ms", NULL, NULL, -1, 2,
         TP_MF_TABLE | TP_MF_SUMMARY | TP_MF_COMPARE, "Latency"),
    /* GenAI-Perf's and AIPerf's request latency ends at the last text. */
    DIST("latency_last_text", "Request latency to the last text", TP_UNIT_MS, latency_last_text_ms,
         "request_latency_to_last_text_ms", "request_latency", "request_latency", -1, 2, 0),
    DIST("output_tokens", "Output tokens", TP_UNIT_TOKENS, output_tokens, "output_tokens",
         "output_sequence_length", NULL, 0, 1, TP_MF_TABLE),
    /* AIPerf's output sequence length counts reasoning and answer. */
    DIST("generated_tokens", "Generated tokens (output + reasoning)", TP_UNIT_TOKENS, generated_tokens,
         "generated_tokens", NULL, "output_sequence_length", 0, 1, 0),
    DIST("input_tokens", "Input tokens", TP_UNIT_TOKENS, input_tokens, "input_tokens",
         "input_sequence_length", "input_sequence_length", 0, 1, TP_MF_TABLE),
    DIST("output_tps_per_user", "Output token throughput per user", TP_UNIT_TOKENS_PER_S, output_tps_per_user,
         "output_token_throughput_per_user_tps", NULL, NULL, 1, 2, TP_MF_TABLE),
    DIST("ttst", "Time to second token", TP_UNIT_MS, ttst_ms, "time_to_second_token_ms",
         "time_to_second_token", "time_to_second_token", -1, 2, TP_MF_STREAMING),
    /* GenAI-Perf reads OpenAI's content only: its first token is the
     * first answer token, its ITL and per-user rate the answer's. */
    DIST("ttfo", "Time to first output token", TP_UNIT_MS, ttfo_ms, "time_to_first_output_token_ms",
         "time_to_first_token", NULL, -1, 2, TP_MF_STREAMING),
    DIST("itl_answer", "Inter token latency of the answer", TP_UNIT_MS, itl_answer_ms,
         "inter_token_latency_answer_ms", "inter_token_latency", NULL, -1, 2, TP_MF_STREAMING),
    DIST("output_tps_per_user_itl_answer", "Output token throughput per user from the answer's ITL",
         TP_UNIT_TOKENS_PER_S_USER, output_tps_per_user_itl_answer,
         "output_token_throughput_per_user_from_answer_itl_tps", "output_token_throughput_per_user", NULL, 1, 2,
         TP_MF_STREAMING),
    DIST("tpot", "Time per output token", TP_UNIT_MS, tpot_ms, "time_per_output_token_ms", NULL, NULL, -1, 2,
         TP_MF_STREAMING),
    DIST("output_tps_per_user_itl", "Output token throughput per user from ITL", TP_UNIT_TOKENS_PER_S_USER,
         output_tps_per_user_itl, "output_token_throughput_per_user_from_itl_tps",
         NULL, "output_token_throughput_per_user", 1, 2, TP_MF_STREAMING),
    DIST("itl_pooled", "Inter-chunk latency, pooled", TP_UNIT_MS, itl_pooled_ms, "itl_pooled_ms", NULL, NULL,
         -1, 2, TP_MF_STREAMING),
    DIST("responses", "Responses per request", TP_UNIT_RESPONSES, responses, "responses_per_request", NULL,
         NULL, 0, 1, 0),
    DIST("send_lag", "Send lag", TP_UNIT_MS, send_lag_ms, "send_lag_ms", NULL, NULL, -1, 3, TP_MF_FIDELITY),
    DIST("ttft_from_planned", "Time to first token from the planned time", TP_UNIT_MS, ttft_from_planned_ms,
         "time_to_first_token_from_planned_ms", NULL, NULL, -1, 2, 0),
    DIST("latency_from_planned", "Request latency from the planned time", TP_UNIT_MS, latency_from_planned_ms,
         "request_latency_from_planned_ms", NULL, NULL, -1, 2, 0),
    /* vLLM bench serve's own definitions (tokperf vllm-bench writes these). */
    DIST("vllm_ttft", "vLLM's time to first token", TP_UNIT_MS, vllm_ttft_ms, "vllm_ttft_ms", NULL, NULL, -1,
         2, TP_MF_STREAMING),
    DIST("vllm_e2el", "vLLM's end-to-end latency", TP_UNIT_MS, vllm_e2el_ms, "vllm_e2el_ms", NULL, NULL, -1,
         2, 0),
    DIST("vllm_tpot", "vLLM's time per output token", TP_UNIT_MS, vllm_tpot_ms, "vllm_tpot_ms", NULL, NULL,
         -1, 2, TP_MF_STREAMING),
    DIST("vllm_itl", "vLLM's inter-token latency, pooled", TP_UNIT_MS, vllm_itl_ms, "vllm_itl_ms", NULL, NULL,
         -1, 2, TP_MF_STREAMING),
    DIST("vllm_output_tokens", "vLLM's output tokens", TP_UNIT_TOKENS, vllm_output_tokens,
         "vllm_output_tokens", NULL, NULL, 0, 1, 0),
    DIST("reasoning_tokens", "Reasoning tokens", TP_UNIT_TOKENS, reasoning_tokens, "reasoning_tokens", NULL,
         NULL, 0, 1, 0),
    VALUE("request_throughput", "Request throughput", TP_UNIT_REQUESTS_PER_S, request_throughput,
          "request_throughput_rps", "request_throughput", "request_throughput", 1, 2,
          TP_MF_SUMMARY | TP_MF_COMPARE, "Request/s"),
    VALUE("output_token_throughput", "Output token throughput", TP_UNIT_TOKENS_PER_S, output_token_throughput,
          "output_token_throughput_tps", "output_token_throughput", "output_token_throughput", 1, 2,
          TP_MF_SUMMARY | TP_MF_TOKENS | TP_MF_COMPARE, "Output tok/s"),
    VALUE("input_token_throughput", "Input token throughput", TP_UNIT_TOKENS_PER_S, input_token_throughput,
          "input_token_throughput_tps", NULL, NULL, 1, 2, TP_MF_SUMMARY | TP_MF_INPUT_TOKENS | TP_MF_COMPARE,
          "Input tok/s"),
    VALUE("goodput", "Goodput", TP_UNIT_REQUESTS_PER_S, goodput_rps, "goodput_rps", "request_goodput",
          "goodput", 1, 2, TP_MF_GOODPUT),
    VALUE("goodput_fraction", "Goodput fraction", TP_UNIT_FRACTION, goodput_fraction, "goodput_fraction",
          NULL, NULL, 1, 4, TP_MF_GOODPUT),
    VALUE("error_rate", "Error rate", TP_UNIT_FRACTION, error_rate, "error_rate", NULL, NULL, -1, 4,
          TP_MF_COMPARE),
    VALUE("achieved_send_rate", "Achieved send rate", TP_UNIT_REQUESTS_PER_S, achieved_send_rate,
          "achieved_send_rate_rps", NULL, NULL, 0, 2, 0),
    VALUE("duration", "Duration", TP_UNIT_S, duration_s, "duration_s", NULL, "benchmark_duration", 0, 2, 0),
    VALUE("prefix_cache_hit_rate", "Prefix-cache hit rate", TP_UNIT_FRACTION, prefix_cache_hit_rate,
          "prefix_cache_hit_rate", NULL, NULL, 1, 4, TP_MF_NONNEG),
    VALUE("exact_match_rate", "Exact match", TP_UNIT_FRACTION, exact_match_rate, "exact_match_rate", NULL,
          NULL, 1, 4, TP_MF_ACCURACY),
    VALUE("rouge_l_f1", "ROUGE-L F1", TP_UNIT_FRACTION, rouge_l_f1, "rouge_l_f1", NULL, NULL, 1, 4,
          TP_MF_ACCURACY),
    COUNT("requests", "Requests", TP_UNIT_REQUESTS, requests, "requests", "request_count", "request_count", 0,
          0),
    COUNT("succeeded", "Succeeded", TP_UNIT_REQUESTS, succeeded, "succeeded", NULL, NULL, 1, 0),
    COUNT("failed", "Failed", TP_UNIT_REQUESTS, failed, "failed", NULL, "error_request_count", -1, 0),
    COUNT("reconnects", "Reconnects", TP_UNIT_REQUESTS, reconnects, "reconnects", NULL, NULL, -1, 0),
    COUNT("late_sends", "Late sends", TP_UNIT_REQUESTS, late_sends, "late_sends", NULL, NULL, -1, 0),
    COUNT("answers_before_send", "Answers before send", TP_UNIT_REQUESTS, answers_before_send,
          "answers_before_send", NULL, NULL, -1, 0),
    COUNT("goodput_unjudged", "Goodput unjudged", TP_UNIT_REQUESTS, goodput_unjudged, "goodput_unjudged",
          NULL, NULL, -1, TP_MF_GOODPUT),
    COUNT("output_length_mismatches", "Output length mismatches", TP_UNIT_REQUESTS, length_mismatches,
          "output_length_mismatches", NULL, NULL, -1, 0),
    /* The steady state (tp_steady.h): the same figures over the plateau
     * of the requests in flight; members of the level's "steady" object. */
    DIST("steady.ttft", "Steady-state time to first token", TP_UNIT_MS, steady.ttft_ms, "steady.ttft_ms", NULL,
         NULL, -1, 2, TP_MF_STREAMING),
    DIST("steady.tpot", "Steady-state time per output token", TP_UNIT_MS, steady.tpot_ms, "steady.tpot_ms", NULL,
         NULL, -1, 2, TP_MF_STREAMING),
    DIST("steady.latency", "Steady-state request latency", TP_UNIT_MS, steady.latency_ms, "steady.latency_ms",
         NULL, NULL, -1, 2, 0),
    VALUE("steady.request_throughput", "Steady-state request throughput", TP_UNIT_REQUESTS_PER_S,
          steady.request_throughput, "steady.request_throughput_rps", NULL, NULL, 1, 2, TP_MF_NONNEG),
    VALUE("steady.input_token_throughput", "Steady-state input token throughput", TP_UNIT_TOKENS_PER_S,
          steady.input_token_throughput, "steady.input_token_throughput_tps", NULL, NULL, 1, 2, TP_MF_NONNEG),
    VALUE("steady.output_token_throughput", "Steady-state output token throughput", TP_UNIT_TOKENS_PER_S,
          steady.output_token_throughput, "steady.output_token_throughput_tps", NULL, NULL, 1, 2, TP_MF_NONNEG),
    VALUE("steady.duration", "Steady-state window", TP_UNIT_S, steady.duration_s, "steady.duration_s", NULL, NULL,
          0, 2, TP_MF_NONNEG),
    /* Over-saturation (tp_saturation.h): members of the level's
     * "saturation" object. */
    COUNT("saturation.detected", "Over-saturated", TP_UNIT_NONE, saturation.detected, "saturation.detected", NULL,
          NULL, -1, 0),
    VALUE("saturation.at", "Over-saturated from", TP_UNIT_S, saturation.at_s, "saturation.at_s", NULL, NULL, 0, 2,
          TP_MF_NONNEG),
    /* The client's own figures, last as in every report; their JSON keys
     * are members of the level's "fidelity" object. */
    DIST("fidelity.loop_lag", "Loop lag", TP_UNIT_MS, fidelity.loop_lag_ms, "fidelity.loop_lag_ms", NULL, NULL,
         -1, 3, TP_MF_FIDELITY),
    VALUE("fidelity.merged_pct", "Merged responses", TP_UNIT_PERCENT, fidelity.merged_pct,
          "fidelity.merged_pct", NULL, NULL, -1, 2, TP_MF_FIDELITY),
    VALUE("fidelity.first_merged_pct", "First responses merged", TP_UNIT_PERCENT, fidelity.first_merged_pct,
          "fidelity.first_merged_pct", NULL, NULL, -1, 2, TP_MF_FIDELITY),
    VALUE("fidelity.client_cpu_pct", "Client CPU", TP_UNIT_PERCENT, fidelity.client_cpu_pct,
          "fidelity.client_cpu_pct", NULL, NULL, -1, 1, TP_MF_FIDELITY | TP_MF_NONNEG),
    VALUE("fidelity.process_cpu_pct", "Process CPU", TP_UNIT_PERCENT, fidelity.process_cpu_pct,
          "fidelity.process_cpu_pct", NULL, NULL, 0, 1, TP_MF_NONNEG),
    VALUE("fidelity.reads_per_s", "Reads per second", TP_UNIT_READS_PER_S, fidelity.reads_per_s,
          "fidelity.reads_per_s", NULL, NULL, 0, 0, TP_MF_FIDELITY | TP_MF_NONNEG),
    COUNT("fidelity.verdict", "Fidelity verdict", TP_UNIT_NONE, fidelity.verdict, "fidelity.verdict_code", NULL,
          NULL, -1, TP_MF_FIDELITY),
};

static const struct {
  const char *name;
  size_t off;
} stats[] = {
#define TP_STAT_ROW(e, s, f) {s, offsetof(tp_stat, f)},
    TP_STATS(TP_STAT_ROW)
#undef TP_STAT_ROW
};

static const struct {
  const char *name, *genai, *aiperf;
} units[] = {
#define TP_UNIT_ROW(e, s, g, a) {s, g, a},
    TP_UNITS(TP_UNIT_ROW)
#undef TP_UNIT_ROW
};

const tp_metric *tp_metrics(size_t *n) {
  *n = TP_ARRAY_LEN(metrics);
  return metrics;
}

const tp_metric *tp_metric_find(const char *name) {
  for (size_t i = 0; i < TP_ARRAY_LEN(metrics); i++)
    if (strcmp(metrics[i].name, name) == 0) return &metrics[i];
  return NULL;
}

const tp_metric *tp_metric_find_split(const char *s, size_t len, const char **stat, size_t *stat_len) {
  char name[96];
  *stat = NULL;
  *stat_len = 0;
  if (len >= sizeof(name)) return NULL;
  memcpy(name, s, len);
  name[len] = 0;
  const tp_metric *m = tp_metric_find(name);
  if (m) return m;
  char *dot = strrchr(name, '.');
  if (!dot) return NULL;
  *dot = 0;
  *stat = s + (dot - name) + 1;
  *stat_len = len - (size_t)(dot - name) - 1;
  return tp_metric_find(name);
}

const char *tp_stat_name(tp_stat_id id) {
  return (unsigned)id < TP_STAT_COUNT ? stats[id].name : "?";
}

int tp_stat_find(const char *name) {
  for (int i = 0; i < TP_STAT_COUNT; i++)
    if (strcmp(stats[i].name, name) == 0) return i;
  return -1;
}

int tp_stat_find_n(const char *name, size_t len) {
  for (int i = 0; i < TP_STAT_COUNT; i++)
    if (strlen(stats[i].name) == len && memcmp(stats[i].name, name, len) == 0) return i;
  return -1;
}

const char *tp_unit_name(tp_unit u) {
  return (unsigned)u < TP_UNIT_COUNT ? units[u].name : "";
}
const char *tp_unit_genai(tp_unit u) {
  return (unsigned)u < TP_UNIT_COUNT ? units[u].genai : "";
}

const char *tp_unit_aiperf(tp_unit u) {
  return (unsigned)u < TP_UNIT_COUNT ? units[u].aiperf : "";
}

double tp_stat_get(const tp_stat *st, tp_stat_id id) {
  if ((unsigned)id >= TP_STAT_COUNT) return NAN;
  return *(const double *)(const void *)((const char *)st + stats[id].off);
}

const tp_stat *tp_metric_stat(const tp_metric *m, const tp_level_result *lr) {
  if (m->kind != TP_METRIC_DIST) return NULL;
  return (const tp_stat *)(const void *)((const char *)lr + m->offset);
}

bool tp_metric_available(const tp_metric *m, const tp_level_result *lr) {
  if ((m->flags & TP_MF_TOKENS) && !lr->tokens_available) return false;
  if ((m->flags & TP_MF_INPUT_TOKENS) && lr->input_tokens.n == 0) return false;
  if ((m->flags & TP_MF_GOODPUT) && !lr->goodput_set) return false;
  if ((m->flags & TP_MF_ACCURACY) && lr->accuracy_scored == 0) return false;
  const char *p = (const char *)lr + m->offset;
  switch (m->kind) {
    case TP_METRIC_DIST: return ((const tp_stat *)(const void *)p)->n > 0;
    case TP_METRIC_VALUE: {
      double v = *(const double *)(const void *)p;
      return isfinite(v) && !((m->flags & TP_MF_NONNEG) && v < 0);
    }
    case TP_METRIC_COUNT: return true;
  }
  return false;
}

bool tp_metric_value(const tp_metric *m, const tp_level_result *lr, tp_stat_id st, double *out) {
  if (!tp_metric_available(m, lr)) return false;
  const char *p = (const char *)lr + m->offset;
  switch (m->kind) {
    case TP_METRIC_DIST:
      if ((unsigned)st >= TP_STAT_COUNT) return false;
      *out = *(const double *)(const void *)(p + stats[st].off);
      return true;
    case TP_METRIC_VALUE: *out = *(const double *)(const void *)p; return true;
    case TP_METRIC_COUNT: *out = (double)*(const uint64_t *)(const void *)p; return true;
  }
  return false;
}

void tp_metric_mean_runs(const tp_level_result *runs, size_t n, tp_level_result *out) {
  *out = runs[0];
  for (size_t i = 0; i < TP_ARRAY_LEN(metrics); i++) {
    const tp_metric *m = &metrics[i];
    char *p = (char *)out + m->offset;
    if (m->kind == TP_METRIC_DIST) {
      /* Every run's values stand behind the means. */
      size_t total = 0;
      for (size_t r = 0; r < n; r++) total += tp_metric_stat(m, &runs[r])->n;
      ((tp_stat *)(void *)p)->n = total;
    }
    size_t ns = m->kind == TP_METRIC_DIST ? TP_STAT_COUNT : 1;
    for (size_t st = 0; st < ns; st++) {
      double sum = 0, v;
      size_t k = 0;
      for (size_t r = 0; r < n; r++)
        if (tp_metric_value(m, &runs[r], (tp_stat_id)st, &v)) {
          sum += v;
          k++;
        }
      if (!k) continue;
      if (m->kind == TP_METRIC_DIST) *(double *)(void *)(p + stats[st].off) = sum / (double)k;
      else if (m->kind == TP_METRIC_VALUE) *(double *)(void *)p = sum / (double)k;
      else *(uint64_t *)(void *)p = (uint64_t)llround(sum);
    }
  }
  /* The verdict is no count: it is the runs' figures judged again (their
   * means), and never better than the worst run's. */
  uint64_t worst = 0;
  for (size_t r = 0; r < n; r++)
    if (runs[r].fidelity.verdict > worst) worst = runs[r].fidelity.verdict;
  tp_fidelity_judge(out);
  if (out->fidelity.verdict < worst) {
    out->fidelity.verdict = worst;
    snprintf(out->fidelity.reason, sizeof(out->fidelity.reason), "a run was %s", tp_fidelity_verdict_name(worst));
  }
}

int tp_metric_parse_threshold(const tp_metric *m, const char *s, double *out, char *err, size_t errlen) {
  char *end;
  double v = strtod(s, &end);
  if (end == s || !isfinite(v)) {
    tp_seterr(err, errlen, "expected a number");
    return TP_EINVAL;
  }
  while (*end == ' ') end++;
  if (m->unit == TP_UNIT_MS || m->unit == TP_UNIT_S) {
    /* Times are compared in the row's unit; the bound may carry any. */
    static const struct {
      const char *u;
      double ms;
    } tu[] = {{"ns", 1e-6}, {"us", 1e-3}, {"ms", 1}, {"s", 1e3}, {"m", 60e3}};
    double ms_per = 1;
    if (*end) {
      size_t k;
      for (k = 0; k < TP_ARRAY_LEN(tu); k++)
        if (strcmp(end, tu[k].u) == 0) break;
      if (k == TP_ARRAY_LEN(tu)) {
        tp_seterr(err, errlen, "a time takes ns, us, ms, s or m");
        return TP_EINVAL;
      }
      ms_per = tu[k].ms;
    } else if (m->unit == TP_UNIT_S) {
      ms_per = 1e3;
    }
    v *= ms_per;
    *out = m->unit == TP_UNIT_S ? v / 1e3 : v;
    return 0;
  }
  if (m->unit == TP_UNIT_FRACTION && strcmp(end, "%") == 0) {
    *out = v / 100;
    return 0;
  }
  /* A row in percent takes its bound in percent, with or without "%". */
  if (m->unit == TP_UNIT_PERCENT && strcmp(end, "%") == 0) {
    *out = v;
    return 0;
  }
  if (*end) {
    tp_seterr(err, errlen, "unexpected '%s' after the number", end);
    return TP_EINVAL;
  }
  *out = v;
  return 0;
}

void tp_metric_names(char *out, size_t outlen, bool dist_only) {
  size_t used = 0;
  out[0] = 0;
  for (size_t i = 0; i < TP_ARRAY_LEN(metrics) && used + 1 < outlen; i++) {
    if (dist_only && metrics[i].kind != TP_METRIC_DIST) continue;
    int w = snprintf(out + used, outlen - used, "%s%s", used ? ", " : "", metrics[i].name);
    if (w < 0) break;
    used += (size_t)w < outlen - used ? (size_t)w : outlen - used - 1;
  }
}

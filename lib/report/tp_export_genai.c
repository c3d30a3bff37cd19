/* GenAI-Perf's per-level summary files (tp_export.h). */
#include "tp_export_internal.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "tokperf/tokperf.h"

/* ------------------------------------------------------------------------ */
/* GenAI-Perf summary                                                       */

static const char *backend_name(tp_backend b) {
  switch (b) {
    case TP_BACKEND_TENSORRTLLM: return "tensorrtllm";
    case TP_BACKEND_VLLM: return "vllm";
  }
  return "unknown";
}

static int jset(json_t *o, const char *k, json_t *v) {
  return json_object_set_new(o, k, v) ? -1 : 0;
}

static json_t *jstr(const char *s) {
  return s ? json_string(s) : json_null();
}

static json_t *jreal(double v) {
  return isfinite(v) ? json_real(v) : json_null();
}

/* GenAI-Perf's statistics block, in its key order. */
static json_t *genai_stat(const tp_stat *st, const char *unit) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = jset(o, "unit", json_string(unit));
  bad |= jset(o, "avg", jreal(st->avg));
  bad |= jset(o, "p99", jreal(st->p99));
  bad |= jset(o, "p95", jreal(st->p95));
  bad |= jset(o, "p90", jreal(st->p90));
  bad |= jset(o, "p75", jreal(st->p75));
  bad |= jset(o, "p50", jreal(st->p50));
  bad |= jset(o, "p25", jreal(st->p25));
  bad |= jset(o, "max", jreal(st->max));
  bad |= jset(o, "min", jreal(st->min));
  bad |= jset(o, "std", jreal(st->std));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *genai_scalar(double v, const char *unit) {
  json_t *o = json_object();
  if (!o) return NULL;
  int bad = jset(o, "unit", json_string(unit));
  bad |= jset(o, "avg", jreal(v));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

static json_t *genai_input_config(const tp_level_result *lr, const tp_config *cfg, const char *pe_path,
                                  const char *artifact_dir) {
  static const tp_config none;
  if (!cfg) cfg = &none;
  json_t *o = json_object(), *models = json_array(), *extra = json_object();
  if (!o || !models || !extra) {
    json_decref(o);
    json_decref(models);
    json_decref(extra);
    return NULL;
  }
  int bad = 0;
  if (cfg->model) bad |= json_array_append_new(models, json_string(cfg->model));
  if (cfg->output_tokens_mean) bad |= jset(extra, "max_tokens", json_integer(cfg->output_tokens_mean));
  /* GenAI-Perf's argument names, so tools that read input_config find
   * them; -1 is GenAI-Perf's "not set" for output_tokens_mean. */
  bad |= jset(o, "model", models);
  bad |= jset(o, "formatted_model_name", jstr(cfg->model));
  bad |= jset(o, "backend", json_string(backend_name(cfg->backend)));
  bad |= jset(o, "endpoint", json_null());
  bad |= jset(o, "endpoint_type", json_string("kserve"));
  bad |= jset(o, "service_kind", json_string("triton"));
  bad |= jset(o, "streaming", json_boolean(cfg->streaming));
  bad |= jset(o, "u", jstr(cfg->url));
  bad |= jset(o, "input_file", jstr(cfg->input_file));
  bad |= jset(o, "prompt_source", json_string(cfg->input_file ? "file" : "synthetic"));
  bad |= jset(o, "num_prompts", json_integer(cfg->num_prompts));
  bad |= jset(o, "output_tokens_mean",
              json_integer(cfg->output_tokens_mean ? (json_int_t)cfg->output_tokens_mean : -1));
  bad |= jset(o, "output_tokens_mean_deterministic", json_boolean(cfg->output_tokens_deterministic));
  bad |= jset(
      o, "random_seed",
      cfg->random_seed <= (uint64_t)INT64_MAX ? json_integer((json_int_t)cfg->random_seed) : json_null());
  bad |= jset(o, "concurrency",
              lr->load_mode == TP_LOAD_CONCURRENCY ? json_integer(lr->concurrency) : json_null());
  bad |= jset(o, "request_rate", lr->load_mode == TP_LOAD_RATE ? jreal(lr->request_rate) : json_null());
  bad |= jset(
      o, "measurement_interval",
      cfg->measurement_interval_ms ? json_integer((json_int_t)cfg->measurement_interval_ms) : json_null());
  bad |= jset(o, "request_count", json_integer((json_int_t)cfg->request_count));
  bad |= jset(o, "profile_export_file", jstr(pe_path));
  bad |= jset(o, "artifact_dir", jstr(artifact_dir));
  bad |= jset(o, "tokenizer", jstr(cfg->tokenizer));
  /* Whether input token counts include BOS and the like (output counts
   * never do). */
  bad |= jset(o, "tokenizer_add_special_tokens", json_boolean(cfg->tokenizer_add_special_tokens));
  bad |= jset(o, "extra_inputs", extra);
  char gen[64];
  snprintf(gen, sizeof(gen), "tokperf %s", tp_version());
  bad |= jset(o, "generator", json_string(gen));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}

char *tp_export_genai_json(const tp_level_result *lr, const tp_config *cfg, const char *profile_export_path,
                           const char *artifact_dir) {
  json_t *doc = json_object();
  if (!doc) return NULL;
  int bad = 0;
  /* GenAI-Perf's order: request metrics and system metrics interleaved as
   * its Statistics dict holds them. */
  if (lr->requests)
    bad |= jset(doc, "request_throughput", genai_scalar(lr->request_throughput, "requests/sec"));
  if (lr->latency_ms.n) bad |= jset(doc, "request_latency", genai_stat(&lr->latency_ms, "ms"));
  if (lr->ttft_ms.n) bad |= jset(doc, "time_to_first_token", genai_stat(&lr->ttft_ms, "ms"));
  if (lr->itl_ms.n) bad |= jset(doc, "inter_token_latency", genai_stat(&lr->itl_ms, "ms"));
  if (lr->tokens_available)
    bad |= jset(doc, "output_token_throughput", genai_scalar(lr->output_token_throughput, "tokens/sec"));
  if (lr->output_tps_per_user.n)
    bad |=
        jset(doc, "output_token_throughput_per_request", genai_stat(&lr->output_tps_per_user, "tokens/sec"));
  if (lr->output_tokens.n)
    bad |= jset(doc, "output_sequence_length", genai_stat(&lr->output_tokens, "tokens"));
  if (lr->input_tokens.n) bad |= jset(doc, "input_sequence_length", genai_stat(&lr->input_tokens, "tokens"));
  bad |= jset(doc, "input_config", genai_input_config(lr, cfg, profile_export_path, artifact_dir));
  char *text = bad ? NULL : json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
  json_decref(doc);
  return text;
}

/* Python's f"{v:,.2f}": two decimals, a comma between thousands. */
static void fmt_thousands(char *buf, size_t len, double v) {
  char raw[64];
  snprintf(raw, sizeof(raw), "%.2f", v);
  const char *digits = raw[0] == '-' ? raw + 1 : raw;
  size_t int_len = strcspn(digits, ".");
  char tmp[96];
  size_t o = 0;
  if (raw[0] == '-') tmp[o++] = '-';
  for (size_t i = 0; i < int_len && o + 2 < sizeof(tmp); i++) {
    if (i && (int_len - i) % 3 == 0) tmp[o++] = ',';
    tmp[o++] = digits[i];
  }
  snprintf(tmp + o, sizeof(tmp) - o, "%s", digits + int_len);
  snprintf(buf, len, "%s", tmp);
}

/* One CSV field, quoted when it holds a comma, as Python's csv writer
 * (QUOTE_MINIMAL) does. */
static int csv_field(tp_buf *out, const char *s, bool first) {
  int rv = first ? 0 : tp_buf_append(out, ",", 1);
  if (rv) return rv;
  if (strchr(s, ',') || strchr(s, '"')) {
    rv = tp_buf_append(out, "\"", 1);
    for (const char *p = s; *p && !rv; p++)
      rv = *p == '"' ? tp_buf_append(out, "\"\"", 2) : tp_buf_append(out, p, 1);
    if (!rv) rv = tp_buf_append(out, "\"", 1);
    return rv;
  }
  return tp_buf_append_str(out, s);
}

static int csv_stat_row(tp_buf *out, const char *label, const tp_stat *st) {
  if (!st->n) return 0;
  const double v[9] = {st->avg, st->min, st->max, st->p99, st->p95, st->p90, st->p75, st->p50, st->p25};
  int rv = csv_field(out, label, true);
  for (int i = 0; i < 9 && !rv; i++) {
    char b[64];
    fmt_thousands(b, sizeof(b), v[i]);
    rv = csv_field(out, b, false);
  }
  if (!rv) rv = tp_buf_append(out, "\r\n", 2);
  return rv;
}

int tp_export_genai_csv(tp_buf *out, const tp_level_result *lr, bool streaming) {
  int rv = tp_buf_append_str(out, "Metric,avg,min,max,p99,p95,p90,p75,p50,p25\r\n");
  if (!rv && streaming) rv = csv_stat_row(out, "Time To First Token (ms)", &lr->ttft_ms);
  if (!rv && streaming) rv = csv_stat_row(out, "Inter Token Latency (ms)", &lr->itl_ms);
  if (!rv) rv = csv_stat_row(out, "Request Latency (ms)", &lr->latency_ms);
  if (!rv) rv = csv_stat_row(out, "Output Sequence Length", &lr->output_tokens);
  if (!rv) rv = csv_stat_row(out, "Input Sequence Length", &lr->input_tokens);
  if (!rv) rv = tp_buf_append_str(out, "\r\nMetric,Value\r\n");
  if (!rv && lr->tokens_available)
    rv = tp_buf_printf(out, "Output Token Throughput (per sec),%.2f\r\n", lr->output_token_throughput);
  if (!rv) rv = tp_buf_printf(out, "Request Throughput (per sec),%.2f\r\n", lr->request_throughput);
  return rv;
}

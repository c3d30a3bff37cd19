/* GenAI-Perf's per-level summary files (tp_export.h): the figures are
 * the registry's (tp_export_summary.c); this adds GenAI-Perf's
 * input_config, in the nested form GenAI-Perf writes (its whole
 * configuration, section by section) and reads back when it merges
 * summaries (genai-perf process-export-files).  Each field holds tokperf's
 * setting under GenAI-Perf's name and in GenAI-Perf's values where tokperf
 * has the setting, and GenAI-Perf's own default where it has none; a
 * setting GenAI-Perf leaves unset is "", as GenAI-Perf writes None. */
#include "tp_export_internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "report/tp_report_fidelity.h"
#include "tokperf/tokperf.h"

/* ------------------------------------------------------------------------ */
/* GenAI-Perf summary                                                       */

static json_t *str_or_unset(const char *s) {
  return json_string(s && *s ? s : "");
}

/* The sections below build their objects with json_pack: a member that
 * failed to build makes the whole pack fail (NULL), and "o" hands the
 * member over, so an error leaks nothing. */

/* GenAI-Perf's endpoint type names the API; its backend is only for a
 * KServe endpoint (GenAI-Perf refuses a backend with any other type when it
 * reads the summary back, so there it is "", unset). */
static json_t *endpoint_section(const tp_config *cfg) {
  tp__tool_api api = tp__tool_api_of(cfg);
  bool kserve = !strcmp(api.endpoint_type, "kserve");
  const char *backend = cfg->server.backend == TP_BACKEND_VLLM ? "vllm" : "tensorrtllm";
  const char *format = kserve ? backend
                       : !strcmp(api.endpoint_type, "chat")        ? "openai_chat_completions"
                       : !strcmp(api.endpoint_type, "completions") ? "openai_completions"
                                                                   : "triton_generate";
  /* The path as sent: the model's name where the API's path names it. */
  char custom[512] = "";
  const char *m = strstr(api.endpoint, "{MODEL}");
  if (m)
    snprintf(custom, sizeof(custom), "%.*s%s%s", (int)(m - api.endpoint), api.endpoint,
             cfg->server.model ? cfg->server.model : "", m + strlen("{MODEL}"));
  else
    snprintf(custom, sizeof(custom), "%s", api.endpoint);
  json_t *urls = cfg->server.metrics_url && *cfg->server.metrics_url
                     ? json_pack("[s]", cfg->server.metrics_url)
                     : json_pack("[s]", "http://localhost:9400/metrics");
  /* GenAI-Perf's service kind follows from the endpoint type: "triton"
   * for KServe, "openai" for every HTTP type (its generate included). */
  return json_pack("{s:s, s:s, s:s, s:s, s:b, s:o, s:o, s:s, s:s, s:s}", "model_selection_strategy",
                   "round_robin", "backend", kserve ? backend : "", "custom", custom, "type",
                   api.endpoint_type, "streaming", cfg->server.streaming, "server_metrics_urls", urls, "url",
                   str_or_unset(cfg->server.url), "grpc_method", "", "service_kind",
                   kserve ? "triton" : "openai", "output_format", format);
}

/* perf_analyzer's load of this level and how it was measured: a count of
 * requests, or windows of a time (GenAI-Perf's measurement interval). */
static json_t *perf_analyzer_section(const tp_level_result *lr, const tp_config *cfg) {
  json_t *stim;
  if (lr->load_mode == TP_LOAD_RATE)
    stim = json_pack("{s:f}", "request_rate", lr->request_rate);
  else if (lr->load_mode == TP_LOAD_SCHEDULE)
    stim = json_pack("{s:s}", "fixed_schedule", "");
  else
    stim = json_pack("{s:I}", "concurrency", (json_int_t)lr->concurrency);
  json_t *meas;
  if (cfg->measure.measure_mode == TP_MEASURE_TIME_WINDOWS)
    meas =
        json_pack("{s:s, s:I}", "mode", "interval", "num", (json_int_t)cfg->measure.measurement_interval_ms);
  else if (cfg->measure.measure_mode == TP_MEASURE_COUNT_WINDOWS)
    meas = json_pack("{s:s, s:I}", "mode", "request_count", "num",
                     (json_int_t)cfg->measure.measurement_request_count);
  else if (cfg->measure.measure_mode == TP_MEASURE_COUNT && cfg->measure.request_count)
    meas = json_pack("{s:s, s:I}", "mode", "request_count", "num", (json_int_t)cfg->measure.request_count);
  else /* a duration, or tokperf's own count: no GenAI-Perf number says it */
    meas = json_pack("{s:s, s:s}", "mode", "request_count", "num", "");
  /* tokperf judges stability over windows only; a count is taken as is,
   * as GenAI-Perf's default 999 % lets any result pass (it bounds the
   * setting to 1..999). */
  bool windows = cfg->measure.measure_mode == TP_MEASURE_TIME_WINDOWS ||
                 cfg->measure.measure_mode == TP_MEASURE_COUNT_WINDOWS;
  double sp = cfg->measure.stability_percentage;
  json_t *stab = windows && sp >= 1 && sp <= 999 ? (sp == (double)(int)sp ? json_integer((int)sp) : json_real(sp))
                                                 : json_integer(999);
  return json_pack("{s:s, s:b, s:o, s:o, s:o, s:I}", "path", "perf_analyzer", "verbose", 0, "stimulus", stim,
                   "stability_percentage", stab, "measurement", meas, "warmup_request_count",
                   (json_int_t)cfg->measure.warmup_request_count);
}

/* a == b, ASCII letters in either case. */
static bool ieq(const char *a, const char *b) {
  for (; *a && *b; a++, b++)
    if ((*a | 0x20) != (*b | 0x20)) return false;
  return !*a && !*b;
}

/* One --extra-inputs entry into obj as GenAI-Perf reads it: a JSON object
 * merged in, "name:value" with a true/false, a whole number or a decimal
 * typed as such, or "name" alone as "" (GenAI-Perf's None).  Returns 0, or -1 when out of
 * memory (an entry of another form is left out). */
static int add_extra(json_t *obj, const char *s) {
  size_t n = strlen(s);
  if (n >= 2 && s[0] == '{' && s[n - 1] == '}') {
    json_t *j = json_loads(s, 0, NULL);
    int rv = json_is_object(j) ? json_object_update(obj, j) : 0;
    json_decref(j);
    return rv;
  }
  const char *c = strchr(s, ':');
  if (!c) return json_object_set_new(obj, s, json_string(""));
  if (c == s || !c[1] || strchr(c + 1, ':')) return 0;
  char *name = malloc((size_t)(c - s) + 1);
  if (!name) return -1;
  memcpy(name, s, (size_t)(c - s));
  name[c - s] = 0;
  const char *v = c + 1;
  char *end;
  json_t *val;
  if (ieq(v, "true") || ieq(v, "false")) {
    val = json_boolean(ieq(v, "true"));
  } else if (strspn(v, "0123456789") == strlen(v)) {
    errno = 0;
    unsigned long long u = strtoull(v, &end, 10);
    val = errno || u > INT64_MAX ? json_string(v) : json_integer((json_int_t)u);
  } else if (strchr(v, '.') && strchr(v, '.') == strrchr(v, '.') && strspn(v, "0123456789.") == strlen(v)) {
    val = json_real(strtod(v, &end));
  } else {
    val = json_string(v);
  }
  int rv = val ? json_object_set_new(obj, name, val) : -1;
  free(name);
  return rv;
}

/* GenAI-Perf's goodput constraints, under its metric names (its
 * inter_token_latency is tokperf's ITL bound); "" when there are none. */
static json_t *goodput(const tp_config *cfg) {
  const struct {
    const char *name;
    double ms;
  } b[] = {{"time_to_first_token", cfg->measure.goodput_ttft_ms},
           {"inter_token_latency", cfg->measure.goodput_itl_ms},
           {"request_latency", cfg->measure.goodput_latency_ms}};
  json_t *o = json_object();
  for (size_t i = 0; o && i < sizeof(b) / sizeof(b[0]); i++)
    if (b[i].ms > 0 && json_object_set_new(o, b[i].name, json_real(b[i].ms))) {
      json_decref(o);
      return NULL;
    }
  if (o && !json_object_size(o)) {
    json_decref(o);
    return json_string("");
  }
  return o;
}

/* A header line, its value masked when its name looks like a credential's
 * (as the --json configuration masks it): the summary is shared. */
static json_t *header_masked(const char *h) {
  const char *colon = strchr(h, ':');
  size_t nl = colon ? (size_t)(colon - h) : strlen(h);
  static const char *const secret[] = {"auth", "key", "token", "cookie", "secret", "password"};
  bool mask = false;
  for (size_t w = 0; w < sizeof(secret) / sizeof(secret[0]) && !mask; w++)
    for (size_t i = 0; !mask && i + strlen(secret[w]) <= nl; i++) {
      size_t j = 0;
      while (secret[w][j] && (h[i + j] | 0x20) == secret[w][j]) j++;
      mask = !secret[w][j];
    }
  if (!mask) return json_string(h);
  char buf[512];
  snprintf(buf, sizeof(buf), "%.*s: ***", (int)(nl < 400 ? nl : 400), h);
  return json_string(buf);
}

/* --extra-inputs as one object, --header as the list GenAI-Perf keeps;
 * "" when none. */
static json_t *extra_and_headers(const tp_config *cfg, json_t **headers) {
  json_t *extra = json_object(), *h = cfg->server.n_headers ? json_array() : json_string("");
  int bad = !extra || !h;
  for (size_t i = 0; !bad && i < cfg->server.n_extra_inputs && cfg->server.extra_inputs; i++)
    bad = add_extra(extra, cfg->server.extra_inputs[i]) != 0;
  for (size_t i = 0; !bad && i < cfg->server.n_headers && cfg->server.headers; i++)
    bad = json_array_append_new(h, header_masked(cfg->server.headers[i])) != 0;
  if (!bad && !json_object_size(extra)) {
    json_decref(extra);
    extra = json_string("");
    bad = !extra;
  }
  if (bad) {
    json_decref(extra);
    json_decref(h);
    return NULL;
  }
  *headers = h;
  return extra;
}

/* What was sent: the prompts (a file, or synthetic ones of the level's
 * input length when tokperf sized them in tokens), the output length asked
 * for, the shared prefixes; audio, images and sessions are GenAI-Perf's
 * defaults, tokperf sends none. */
static json_t *input_section(const tp_level_result *lr, const tp_config *cfg) {
  json_t *headers = NULL, *extra = extra_and_headers(cfg, &headers);
  if (!extra) return NULL;
  uint32_t out = lr->output_tokens_mean ? lr->output_tokens_mean : cfg->prompts.output_tokens_mean;
  uint32_t in = lr->input_tokens_mean ? lr->input_tokens_mean
                : cfg->prompts.n_input_tokens_means && cfg->prompts.input_tokens_means
                    ? cfg->prompts.input_tokens_means[0]
                    : 550;
  json_t *audio = json_pack("{s:i, s:{s:i, s:i}, s:s, s:[i], s:[i], s:i}", "batch_size", 1, "length", "mean", 0,
                            "stddev", 0, "format", "wav", "depths", 16, "sample_rates", 16, "num_channels", 1);
  json_t *image = json_pack("{s:{s:i, s:i}, s:{s:i, s:i}, s:i, s:s}", "width", "mean", 0, "stddev", 0, "height",
                            "mean", 0, "stddev", 0, "batch_size", 1, "format", "png");
  json_t *sessions = json_pack("{s:i, s:{s:i, s:i}, s:{s:i, s:f, s:i}}", "num", 0, "turns", "mean", 1, "stddev",
                               0, "turn_delay", "mean", 0, "ratio", 1.0, "stddev", 0);
  json_t *outtok = json_pack("{s:o, s:b, s:I}", "mean", out ? json_integer(out) : json_string(""),
                             "deterministic", cfg->prompts.output_tokens_deterministic, "stddev",
                             (json_int_t)cfg->prompts.output_tokens_stddev);
  json_t *prefix =
      json_pack("{s:I, s:I}", "num", (json_int_t)(cfg->prompts.prefix_tokens ? cfg->prompts.num_prefixes : 0),
                "length", (json_int_t)(cfg->prompts.prefix_tokens ? cfg->prompts.prefix_tokens : 100));
  json_t *seed = cfg->prompts.random_seed <= (uint64_t)INT64_MAX
                     ? json_integer((json_int_t)cfg->prompts.random_seed)
                     : json_string("");
  return json_pack(
      "{s:i, s:o, s:o, s:o, s:o, s:I, s:o, s:o, s:o, s:o, s:{s:I, s:I}, s:o, s:o, s:s, s:[], s:s}",
      "batch_size", 1, "extra", extra, "goodput", goodput(cfg), "header", headers, "file",
      str_or_unset(cfg->prompts.input_file), "num_dataset_entries", (json_int_t)cfg->prompts.num_prompts,
      "random_seed", seed, "audio", audio, "image", image, "output_tokens", outtok, "synthetic_tokens",
      "mean", (json_int_t)in, "stddev", (json_int_t)cfg->prompts.input_tokens_stddev, "prefix_prompt", prefix,
      "sessions", sessions, "prompt_source",
      cfg->prompts.input_file && *cfg->prompts.input_file ? "file" : "synthetic", "synthetic_files",
      "payload_file", "");
}

static json_t *genai_input_config(const tp_level_result *lr, const tp_config *cfg, const char *pe_path,
                                  const char *artifact_dir) {
  static const tp_config none;
  if (!cfg) cfg = &none;
  const char *model = cfg->server.model && *cfg->server.model ? cfg->server.model : "";
  /* GenAI-Perf keeps the export's file name; its directory is the level's. */
  const char *pe_name = pe_path && strrchr(pe_path, '/') ? strrchr(pe_path, '/') + 1 : pe_path;
  /* Without a tokenizer GenAI-Perf's default is the model's. */
  const char *tok = cfg->prompts.tokenizer && *cfg->prompts.tokenizer ? cfg->prompts.tokenizer : model;
  return json_pack(
      "{s:[s], s:s, s:b, s:s, s:{s:{s:{s:i, s:i}}}, s:o, s:o, s:o, s:{s:o, s:s, s:o, s:b, s:b}, "
      "s:{s:s, s:s, s:b, s:b}, s:{s:s}}",
      "model_names", model, "subcommand", "profile", "verbose", 0, "template_filename", "genai_perf_config.yaml",
      "analyze", "sweep_parameters", "concurrency", "min", 1, "max", 1024, "endpoint", endpoint_section(cfg),
      "perf_analyzer", perf_analyzer_section(lr, cfg), "input", input_section(lr, cfg), "output",
      "artifact_directory", str_or_unset(artifact_dir), "checkpoint_directory", "checkpoint",
      "profile_export_file", str_or_unset(pe_name && *pe_name ? pe_name : "profile_export.json"),
      "generate_plots", 0, "enable_checkpointing", 0, "tokenizer", "name", tok, "revision", "main",
      "trust_remote_code", 0, "_enable_debug_logging", 1, "process", "input_path", "aggregated");
}

char *tp_export_genai_json(const tp_level_result *lr, const tp_config *cfg, const char *profile_export_path,
                           const char *artifact_dir) {
  /* GenAI-Perf's JSON keeps every figure it has, with or without
   * streaming (only its CSV and console leave the streaming ones out). */
  json_t *doc = tp__summary_json(lr, TP_EXPORT_GENAI_PERF, cfg ? cfg->server.streaming : true);
  if (!doc) return NULL;
  json_t *ic = genai_input_config(lr, cfg, profile_export_path, artifact_dir);
  int bad = !ic || json_object_set_new(doc, "input_config", ic);
  /* tokperf's own: the client's figures (GenAI-Perf reads none of it). */
  if (!bad) bad = json_object_set_new(doc, "tokperf_fidelity", tp__fidelity_export_json(lr));
  char *text = bad ? NULL : json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
  json_decref(doc);
  return text;
}

int tp_export_genai_csv(tp_buf *out, const tp_level_result *lr, bool streaming) {
  return tp__summary_csv(out, lr, TP_EXPORT_GENAI_PERF, streaming);
}

/* GenAI-Perf's per-level summary files (tp_export.h): the figures are
 * the registry's (tp_export_summary.c); this adds GenAI-Perf's input_config. */
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
  tp__tool_api api = tp__tool_api_of(cfg);
  bad |= jset(o, "endpoint", api.endpoint[0] ? json_string(api.endpoint) : json_null());
  bad |= jset(o, "endpoint_type", json_string(api.endpoint_type));
  bad |= jset(o, "service_kind", json_string(api.service_kind));
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
  json_t *doc = tp__summary_json(lr, TP_EXPORT_GENAI_PERF, cfg ? cfg->streaming : true);
  if (!doc) return NULL;
  int bad = jset(doc, "input_config", genai_input_config(lr, cfg, profile_export_path, artifact_dir));
  char *text = bad ? NULL : json_dumps(doc, JSON_INDENT(2) | JSON_REAL_PRECISION(15));
  json_decref(doc);
  return text;
}

int tp_export_genai_csv(tp_buf *out, const tp_level_result *lr, bool streaming) {
  return tp__summary_csv(out, lr, TP_EXPORT_GENAI_PERF, streaming);
}

/* `tokperf vllm-bench`: vLLM's `vllm bench serve` (formerly
 * benchmark_serving.py) command line, run by tokperf.
 *
 * vLLM's flags are their own table, because some of them mean something
 * else in `tokperf profile` (--backend names the client API here, the
 * model's tensor layout there; --num-prompts is the total request count
 * here, the synthetic prompt count there).  They are mapped onto a run's
 * settings, and the result is printed in vLLM's layout (the metrics and
 * percentiles of --percentile-metrics and --metric-percentiles), with
 * --save-result writing vLLM's result keys.  Each figure is vLLM's own
 * definition, a registry row of its own (docs/metrics.md, "Each tool's
 * definitions"): TTFT at the first chunk with choices, E2EL at the last
 * one, TPOT and the output tokens from the server's completion count;
 * ITL every gap between chunks with choices, pooled (vllm_itl_ms: the
 * role-only chunk's gap included), not tokperf's per-request ITL. */
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <jansson.h>

#include "options.h"

typedef struct vb {
  int backend;
  const char *base_url, *host, *endpoint, *model, *served_model_name, *tokenizer;
  int port;
  int dataset;
  const char *dataset_path;
  uint32_t num_prompts, random_input_len, random_output_len, random_prefix_len, sharegpt_output_len;
  double random_range_ratio;
  const char *request_rate;
  double burstiness;
  uint32_t max_concurrency;
  uint64_t seed;
  bool ignore_eos, save_result, mock, quiet, noop;
  bool save_detailed;
  const char *percentile_metrics, *metric_percentiles, *result_dir, *result_filename;
  tp_str_list goodput, noop_values;
} vb;

/* Positions in the backend choices: the chat ones post to
 * /v1/chat/completions, the others to /v1/completions. */
#define BACKENDS "vllm|openai|openai-chat|vllm-chat|tgi|tensorrt-llm|sglang|llama.cpp|lmdeploy|scalellm|deepspeed-mii"
static bool backend_is_chat(int b) { return b == 2 || b == 3; }
static const char *const backend_names[] = {"vllm",   "openai", "openai-chat", "vllm-chat", "tgi",          "tensorrt-llm",
                                            "sglang", "llama.cpp", "lmdeploy", "scalellm", "deepspeed-mii"};

#define VROW(key, flags, type, field, arg, dflt, lo, hi, choices, help, ex, mask) \
  {key, flags, type, offsetof(vb, field), arg, dflt, lo, hi, choices, "vLLM bench serve", help, ex, mask, NULL, NULL}

static const tp_setting vb_rows[] = {
    VROW("backend", "--backend", TP_SET_ENUM, backend, "BACKEND", "vllm", 1, 0, BACKENDS,
         "the server's API: the chat backends (openai-chat, vllm-chat) post to /v1/chat/completions, the others "
         "to /v1/completions",
         "openai-chat", 0),
    VROW("base_url", "--base-url", TP_SET_STR, base_url, "URL", NULL, 1, 0, NULL,
         "the server's base URL (instead of --host and --port)", "http://localhost:8000", 0),
    VROW("host", "--host", TP_SET_STR, host, "HOST", "127.0.0.1", 1, 0, NULL, "the server's host", "gpu-1", 0),
    VROW("port", "--port", TP_SET_INT, port, "PORT", "8000", 1, 65535, NULL, "the server's port", "8080", 0),
    VROW("endpoint", "--endpoint", TP_SET_STR, endpoint, "PATH", NULL, 1, 0, NULL,
         "the API path (default /v1/completions, /v1/chat/completions for the chat backends)", "/v1/completions",
         0),
    VROW("model", "--model", TP_SET_STR, model, "NAME", NULL, 1, 0, NULL,
         "the model (default: the server's first); also the tokenizer's name when --tokenizer is not given",
         "meta-llama/Llama-3.1-8B-Instruct", 0),
    VROW("served_model_name", "--served-model-name", TP_SET_STR, served_model_name, "NAME", NULL, 1, 0, NULL,
         "the model name sent in requests, when it differs from --model", "llama", 0),
    VROW("tokenizer", "--tokenizer", TP_SET_STR, tokenizer, "PATH|ORG/NAME", NULL, 1, 0, NULL,
         "tokenizer file, model directory, or name in the Hugging Face cache (offline)", "gpt2", TP_SETF_FILE),
    VROW("dataset_name", "--dataset-name", TP_SET_ENUM, dataset, "random|sharegpt|custom", "random", 1, 0,
         "random|sharegpt|custom", "random prompts of --random-input-len tokens, or a ShareGPT JSON or a JSONL file "
         "given by --dataset-path",
         "sharegpt", 0),
    VROW("dataset_path", "--dataset-path", TP_SET_STR, dataset_path, "FILE", NULL, 1, 0, NULL,
         "the ShareGPT JSON or JSONL file (read locally; nothing is downloaded)", "ShareGPT_V3.json", TP_SETF_FILE),
    VROW("num_prompts", "--num-prompts", TP_SET_U32, num_prompts, "N", "1000", 1, 1e9, NULL,
         "requests to send in all", "200", 0),
    VROW("random_input_len", "--random-input-len", TP_SET_U32, random_input_len, "N", "1024", 1, 1e7, NULL,
         "tokens per random prompt", "512", 0),
    VROW("random_output_len", "--random-output-len", TP_SET_U32, random_output_len, "N", "128", 1, 1e7, NULL,
         "max_tokens per request", "256", 0),
    VROW("random_range_ratio", "--random-range-ratio", TP_SET_F64, random_range_ratio, "R", "0", 0, 1, NULL,
         "spread of the random lengths: vLLM draws uniformly within +-R of the length; tokperf draws with the "
         "same standard deviation (R * length / sqrt 3)",
         "0.1", 0),
    VROW("random_prefix_len", "--random-prefix-len", TP_SET_U32, random_prefix_len, "N", "0", 0, 1e7, NULL,
         "a shared prefix of N tokens before every random prompt", "64", 0),
    VROW("sharegpt_output_len", "--sharegpt-output-len", TP_SET_U32, sharegpt_output_len, "N", "0", 0, 1e7, NULL,
         "max_tokens for every ShareGPT prompt (0: each answer's own length)", "256", TP_SETF_UNSET0),
    VROW("request_rate", "--request-rate", TP_SET_STR, request_rate, "RATE|inf", "inf", 1, 0, NULL,
         "requests per second (Poisson, or gamma with --burstiness), or inf: every request at once, within "
         "--max-concurrency",
         "20", 0),
    VROW("burstiness", "--burstiness", TP_SET_F64, burstiness, "K", "1", 1e-9, 1e9, NULL,
         "gamma shape of the arrival gaps (1: Poisson)", "0.5", 0),
    VROW("max_concurrency", "--max-concurrency", TP_SET_U32, max_concurrency, "N", NULL, 1, 100000, NULL,
         "requests in flight at most", "64", TP_SETF_UNSET0),
    VROW("seed", "--seed", TP_SET_U64, seed, "N", "0", 1, 0, NULL, "seed of the random prompts", "42", 0),
    VROW("ignore_eos", "--ignore-eos", TP_SET_FLAG, ignore_eos, NULL, NULL, 1, 0, NULL,
         "ask the server not to stop before max_tokens", NULL, 0),
    VROW("percentile_metrics", "--percentile-metrics", TP_SET_STR, percentile_metrics, "LIST", "ttft,tpot,itl", 1,
         0, NULL, "metrics whose percentiles are printed: ttft, tpot, itl, e2el", "ttft,e2el", 0),
    VROW("metric_percentiles", "--metric-percentiles", TP_SET_STR, metric_percentiles, "LIST", "99", 1, 0, NULL,
         "percentiles printed: any of 1, 5, 10, 25, 50, 75, 90, 95, 99", "50,90,99", 0),
    VROW("goodput", "--goodput", TP_SET_STR_LIST, goodput, "KEY:MS", NULL, 1, 0, NULL,
         "SLOs for goodput, repeatable or space-separated: ttft, tpot, e2el",
         "ttft:500", TP_SETF_NARGS),
    VROW("save_result", "--save-result", TP_SET_FLAG, save_result, NULL, NULL, 1, 0, NULL,
         "write the result as JSON with vLLM's keys", NULL, 0),
    VROW("save_detailed", "--save-detailed", TP_SET_FLAG, save_detailed, NULL, NULL, 1, 0, NULL,
         "with --save-result: also vLLM's per-request arrays (input_lens, output_lens, ttfts, itls, "
         "start_times, generated_texts, errors; latencies and queue_times are always written, as vLLM does)",
         NULL, 0),
    VROW("result_dir", "--result-dir", TP_SET_STR, result_dir, "DIR", NULL, 1, 0, NULL,
         "where --save-result writes (default: the current directory)", "results", TP_SETF_DIR),
    VROW("result_filename", "--result-filename", TP_SET_STR, result_filename, "FILE", NULL, 1, 0, NULL,
         "the result's file name (default: BACKEND-RATEqps[-concurrencyN]-MODEL-DATE.json)", "run.json",
         TP_SETF_FILE),
    VROW("mock", "--mock", TP_SET_FLAG, mock, NULL, NULL, 1, 0, NULL,
         "tokperf's own: run against the built-in mock server", NULL, 0),
    VROW("quiet", "-q|--quiet", TP_SET_FLAG, quiet, NULL, NULL, 1, 0, NULL, "no progress lines on stderr", NULL, 0),
    VROW("noop", "--disable-tqdm|--trust-remote-code|--use-beam-search|--profile|--disable-ignore-eos",
         TP_SET_FLAG, noop, NULL, NULL, 1, 0, NULL, "accepted for vLLM's command lines; no effect in tokperf", NULL,
         TP_SETF_NOOP),
    VROW("noop_values", "--tokenizer-mode|--logprobs|--label|--metadata|--seed-offset", TP_SET_STR_LIST, noop_values,
         "VALUE", NULL, 1, 0, NULL, "accepted for vLLM's command lines; no effect in tokperf", "auto", TP_SETF_NOOP),
};

#define VB_N (sizeof(vb_rows) / sizeof(vb_rows[0]))

tp_settings_part tp_cmd_vllm_bench_defaults(void) {
  static vb d;
  tp_settings_defaults(vb_rows, VB_N, &d);
  return (tp_settings_part){vb_rows, VB_N, &d, "", NULL};
}

/* The statistic of tp_stat for a percentile vLLM may ask for. */
static bool percentile_of(const tp_stat *st, int p, double *out) {
  switch (p) {
    case 1: *out = st->p1; return true;
    case 5: *out = st->p5; return true;
    case 10: *out = st->p10; return true;
    case 25: *out = st->p25; return true;
    case 50: *out = st->p50; return true;
    case 75: *out = st->p75; return true;
    case 90: *out = st->p90; return true;
    case 95: *out = st->p95; return true;
    case 99: *out = st->p99; return true;
  }
  return false;
}

typedef struct vb_ctx {
  vb *o;
  int pcts[16];
  size_t n_pcts;
  char metrics[4][8];
  size_t n_metrics;
  const char *model;
  int code;
} vb_ctx;

static const tp_stat *metric_stat(const tp_level_result *lr, const char *m, const char **title,
                                  const char **abbr) {
  if (strcmp(m, "ttft") == 0) {
    *title = "Time to First Token";
    *abbr = "TTFT";
    return &lr->vllm_ttft_ms;
  }
  if (strcmp(m, "tpot") == 0) {
    *title = "Time per Output Token (excl. 1st token)";
    *abbr = "TPOT";
    return &lr->vllm_tpot_ms;
  }
  if (strcmp(m, "itl") == 0) {
    /* vLLM's ITL pools every gap between chunks with choices of every
     * request (vllm_itl_ms); tokperf's own per-request ITL is itl_ms. */
    *title = "Inter-token Latency";
    *abbr = "ITL";
    return &lr->vllm_itl_ms;
  }
  *title = "End-to-end Latency";
  *abbr = "E2EL";
  return &lr->vllm_e2el_ms;
}

/* "Label:                                   12.34" */
static void line(const char *label, double v) {
  char val[64];
  snprintf(val, sizeof(val), "%.2f", v);
  printf("%-40s %-10s\n", label, val);
}

static void centered(const char *title, char fill) {
  int w = 50, l = (int)strlen(title) + 2;
  int left = (w - l) / 2, right = w - l - left;
  for (int i = 0; i < left; i++) putchar(fill);
  printf(" %s ", title);
  for (int i = 0; i < right; i++) putchar(fill);
  putchar('\n');
}

static double total_tokens(const tp_stat *st) { return st->n ? st->avg * (double)st->n : 0; }

/* vLLM's per-request arrays (tp_level_result.vllm_requests): latencies and
 * queue_times always, the others with --save-detailed, as vLLM's
 * main_async deletes them without it. */
static void put_requests(json_t *j, const tp_level_result *lr, bool detailed) {
  static const char *const always[] = {"latencies", "queue_times"};
  static const char *const detail[] = {"input_lens", "output_lens", "ttfts", "itls",
                                       "start_times", "generated_texts", "errors"};
  json_t *arrays = lr->vllm_requests ? json_loads(lr->vllm_requests, 0, NULL) : NULL;
  if (!arrays) return;
  for (size_t i = 0; i < sizeof(always) / sizeof(always[0]); i++)
    json_object_set(j, always[i], json_object_get(arrays, always[i]));
  for (size_t i = 0; detailed && i < sizeof(detail) / sizeof(detail[0]); i++)
    json_object_set(j, detail[i], json_object_get(arrays, detail[i]));
  json_decref(arrays);
}

static int save_result(const vb_ctx *x, const tp_level_result *lr) {
  const vb *o = x->o;
  char name[512], path[1024], date[32];
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  strftime(date, sizeof(date), "%Y%m%d-%H%M%S", &tm);
  const char *model = x->model && *x->model ? x->model : "model";
  const char *base = strrchr(model, '/');
  base = base ? base + 1 : model;
  if (o->result_filename) {
    snprintf(name, sizeof(name), "%s", o->result_filename);
  } else {
    char conc[48] = "";
    if (o->max_concurrency) snprintf(conc, sizeof(conc), "-concurrency%" PRIu32, o->max_concurrency);
    snprintf(name, sizeof(name), "%s-%sqps%s-%s-%s.json", backend_names[o->backend], o->request_rate, conc, base, date);
  }
  if (o->result_dir) {
    mkdir(o->result_dir, 0777);
    snprintf(path, sizeof(path), "%s/%s", o->result_dir, name);
  } else {
    snprintf(path, sizeof(path), "%s", name);
  }
  double dur = lr->duration_s;
  double in = total_tokens(&lr->input_tokens), out = total_tokens(&lr->vllm_output_tokens);
  json_t *j = json_object();
  json_object_set_new(j, "date", json_string(date));
  json_object_set_new(j, "backend", json_string(backend_names[o->backend]));
  json_object_set_new(j, "model_id", json_string(model));
  json_object_set_new(j, "tokenizer_id", o->tokenizer ? json_string(o->tokenizer) : json_null());
  json_object_set_new(j, "num_prompts", json_integer(o->num_prompts));
  json_object_set_new(j, "request_rate", strcmp(o->request_rate, "inf") ? json_real(atof(o->request_rate))
                                                                        : json_string("inf"));
  json_object_set_new(j, "burstiness", json_real(o->burstiness));
  json_object_set_new(j, "max_concurrency", o->max_concurrency ? json_integer(o->max_concurrency) : json_null());
  json_object_set_new(j, "duration", json_real(dur));
  json_object_set_new(j, "completed", json_integer((json_int_t)lr->succeeded));
  json_object_set_new(j, "failed", json_integer((json_int_t)lr->failed));
  json_object_set_new(j, "total_input_tokens", json_integer((json_int_t)llround(in)));
  json_object_set_new(j, "total_output_tokens", json_integer((json_int_t)llround(out)));
  json_object_set_new(j, "request_throughput", json_real(lr->request_throughput));
  /* vLLM writes the key always, None without --goodput. */
  json_object_set_new(j, "request_goodput", lr->goodput_set ? json_real(lr->goodput_rps) : json_null());
  json_object_set_new(j, "output_throughput", json_real(dur > 0 ? out / dur : 0));
  json_object_set_new(j, "total_token_throughput", json_real(dur > 0 ? (in + out) / dur : 0));
  /* As vLLM, only the metrics of --percentile-metrics. */
  for (size_t m = 0; m < x->n_metrics; m++) {
    const char *title, *abbr, *mname = x->metrics[m];
    const tp_stat *st = metric_stat(lr, mname, &title, &abbr);
    char k[64];
    snprintf(k, sizeof(k), "mean_%s_ms", mname);
    json_object_set_new(j, k, st->n ? json_real(st->avg) : json_null());
    snprintf(k, sizeof(k), "median_%s_ms", mname);
    json_object_set_new(j, k, st->n ? json_real(st->p50) : json_null());
    snprintf(k, sizeof(k), "std_%s_ms", mname);
    json_object_set_new(j, k, st->n ? json_real(st->std) : json_null());
    for (size_t p = 0; p < x->n_pcts; p++) {
      double v = 0;
      percentile_of(st, x->pcts[p], &v);
      snprintf(k, sizeof(k), "p%d_%s_ms", x->pcts[p], mname);
      json_object_set_new(j, k, st->n ? json_real(v) : json_null());
    }
  }
  put_requests(j, lr, o->save_detailed);
  char *text = json_dumps(j, JSON_INDENT(2));
  json_decref(j);
  char err[700] = "out of memory";
  if (!text || tp_write_file(path, text, strlen(text), err, sizeof(err))) {
    free(text);
    fprintf(stderr, "tokperf vllm-bench: --save-result: %s\n", err);
    return -1;
  }
  free(text);
  fprintf(stderr, "tokperf vllm-bench: result written to %s\n", path);
  return 0;
}

/* vLLM's result block, from the run's one level. */
static void report(const tp_run *run, void *ud) {
  vb_ctx *x = ud;
  const tp_level_result *lr = tp_run_level(run, 0);
  if (!lr) return;
  double dur = lr->duration_s;
  double in = total_tokens(&lr->input_tokens), out = total_tokens(&lr->vllm_output_tokens);
  centered("Serving Benchmark Result", '=');
  printf("%-40s %-10" PRIu64 "\n", "Successful requests:", lr->succeeded);
  if (lr->failed) printf("%-40s %-10" PRIu64 "\n", "Failed requests:", lr->failed);
  if (x->o->max_concurrency) printf("%-40s %-10" PRIu32 "\n", "Maximum request concurrency:", x->o->max_concurrency);
  line("Benchmark duration (s):", dur);
  printf("%-40s %-10.0f\n", "Total input tokens:", in);
  printf("%-40s %-10.0f\n", "Total generated tokens:", out);
  line("Request throughput (req/s):", lr->request_throughput);
  if (lr->goodput_set) line("Request goodput (req/s):", lr->goodput_rps);
  line("Output token throughput (tok/s):", dur > 0 ? out / dur : 0);
  line("Total Token throughput (tok/s):", dur > 0 ? (in + out) / dur : 0);
  for (size_t m = 0; m < x->n_metrics; m++) {
    const char *title, *abbr;
    const tp_stat *st = metric_stat(lr, x->metrics[m], &title, &abbr);
    centered(title, '-');
    char label[64];
    snprintf(label, sizeof(label), "Mean %s (ms):", abbr);
    line(label, st->avg);
    snprintf(label, sizeof(label), "Median %s (ms):", abbr);
    line(label, st->p50);
    for (size_t p = 0; p < x->n_pcts; p++) {
      double v = 0;
      percentile_of(st, x->pcts[p], &v);
      snprintf(label, sizeof(label), "P%d %s (ms):", x->pcts[p], abbr);
      line(label, v);
    }
  }
  for (int i = 0; i < 50; i++) putchar('=');
  putchar('\n');
  /* tokperf's own, after vLLM's block: how far to trust it. */
  printf("Fidelity (tokperf): %s%s%s\n", tp_fidelity_verdict_name(lr->fidelity.verdict),
         lr->fidelity.reason[0] ? ": " : "", lr->fidelity.reason);
  fflush(stdout);
  if (x->o->save_result && save_result(x, lr)) x->code = TP_EXIT_START;
}

static void help(FILE *out, vb *d) {
  fprintf(out, "Usage: tokperf vllm-bench [OPTIONS]\n\n"
               "vLLM's `vllm bench serve` command line, run by tokperf: swap `vllm bench serve` (or\n"
               "`python benchmark_serving.py`) for `tokperf vllm-bench`. The flags keep vLLM's meanings\n"
               "(--backend is the client API, --num-prompts the number of requests), the result is printed\n"
               "in vLLM's layout, and --save-result writes vLLM's keys. ITL is vLLM's: every gap between\n"
               "chunks of every request, pooled (docs/metrics.md). Every other tokperf option: tokperf profile.\n\n");
  tp_settings_part part = {vb_rows, VB_N, d, "", NULL};
  tp_settings_help(out, &part, 1, 0);
  fprintf(out, "\nExample:\n  tokperf vllm-bench --backend openai-chat --base-url http://localhost:8000 \\\n"
               "      --model meta-llama/Llama-3.1-8B-Instruct --dataset-name random --random-input-len 512 \\\n"
               "      --num-prompts 200 --request-rate 10 --max-concurrency 32 --save-result\n");
}

static int fail(const char *msg) {
  fprintf(stderr, "tokperf vllm-bench: %s\ntry 'tokperf vllm-bench --help'\n", msg);
  return TP_EXIT_USAGE;
}

int tp_cmd_vllm_bench(int argc, char **argv) {
  vb o;
  memset(&o, 0, sizeof(o));
  tp_settings_defaults(vb_rows, VB_N, &o);
  tp_settings_part part = {vb_rows, VB_N, &o, "", NULL};
  char err[1024];
  bool want_help = false;
  if (tp_settings_parse(&part, 1, argc, argv, NULL, NULL, &want_help, err, sizeof(err))) return fail(err);
  if (want_help) {
    vb d;
    memset(&d, 0, sizeof(d));
    tp_settings_defaults(vb_rows, VB_N, &d);
    help(stdout, &d);
    return TP_EXIT_OK;
  }

  vb_ctx x;
  memset(&x, 0, sizeof(x));
  x.o = &o;
  /* --metric-percentiles "50,90,99" and --percentile-metrics "ttft,tpot". */
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", o.metric_percentiles);
  for (char *sv = NULL, *t = strtok_r(buf, ", ", &sv); t; t = strtok_r(NULL, ", ", &sv)) {
    char *end;
    double p = strtod(t, &end);
    double dummy;
    tp_stat probe = {0};
    if (*end || p != floor(p) || !percentile_of(&probe, (int)p, &dummy) || x.n_pcts >= 16) {
      snprintf(err, sizeof(err), "--metric-percentiles '%s': tokperf reports percentiles 1, 5, 10, 25, 50, 75, 90, "
               "95 and 99", o.metric_percentiles);
      return fail(err);
    }
    x.pcts[x.n_pcts++] = (int)p;
  }
  snprintf(buf, sizeof(buf), "%s", o.percentile_metrics);
  for (char *sv = NULL, *t = strtok_r(buf, ", ", &sv); t; t = strtok_r(NULL, ", ", &sv)) {
    if ((strcmp(t, "ttft") && strcmp(t, "tpot") && strcmp(t, "itl") && strcmp(t, "e2el")) || x.n_metrics >= 4) {
      snprintf(err, sizeof(err), "--percentile-metrics '%s': expected ttft, tpot, itl and e2el",
               o.percentile_metrics);
      return fail(err);
    }
    snprintf(x.metrics[x.n_metrics++], sizeof(x.metrics[0]), "%s", t);
  }

  tp_cli cli;
  tp_cli_init(&cli);
  tp_config *c = &cli.cfg;
  c->server.service_kind =
      backend_is_chat(o.backend) ? TP_SERVICE_OPENAI_CHAT : TP_SERVICE_OPENAI_COMPLETIONS;
  static char url[512];
  if (o.base_url)
    snprintf(url, sizeof(url), "%s", o.base_url);
  else
    snprintf(url, sizeof(url), "http://%s:%d", o.host, o.port);
  c->server.url = url;
  c->server.endpoint = o.endpoint                   ? o.endpoint
                       : backend_is_chat(o.backend) ? "/v1/chat/completions"
                                                    : "/v1/completions";
  c->server.model = o.served_model_name ? o.served_model_name : o.model ? o.model : "";
  x.model = o.model ? o.model : c->server.model;
  cli.use_mock = o.mock;
  if (o.quiet) c->output.progress = NULL;
  c->artifacts.no_artifacts = true;
  c->output.vllm_requests = o.save_result;
  c->prompts.random_seed = o.seed;
  c->prompts.output_tokens_deterministic = o.ignore_eos;
  c->measure.warmup_request_count = 0;
  c->measure.request_count = o.num_prompts;
  c->prompts.num_prompts = o.num_prompts;

  /* The tokenizer: --tokenizer, else the model's name when the Hugging
   * Face cache holds it (vLLM's default), else none (token counts n/a). */
  if (o.tokenizer) {
    c->prompts.tokenizer = o.tokenizer;
  } else if (o.model) {
    char *found = NULL;
    char e2[1024];
    if (tp_tokenizer_find(o.model, NULL, &found, e2, sizeof(e2)) == 0) {
      free(found);
      c->prompts.tokenizer = o.model;
    } else if (!o.quiet) {
      fprintf(stderr, "tokperf vllm-bench: note: no tokenizer for %s in the Hugging Face cache; token counts are "
                      "n/a (give --tokenizer)\n", o.model);
    }
  }

  if (o.dataset == 0) {
    /* Random prompts: vLLM's uniform spread of +-R becomes a standard
     * deviation of R * len / sqrt(3), the uniform distribution's. */
    double sd = 1.0 / sqrt(3.0);
    cli.in_means.v[0] = o.random_input_len;
    cli.in_means.n = 1;
    if (c->prompts.tokenizer) {
      c->prompts.input_tokens_means = cli.in_means.v;
      c->prompts.n_input_tokens_means = 1;
      c->prompts.input_tokens_stddev = (uint32_t)llround(o.random_range_ratio * o.random_input_len * sd);
      if (o.random_prefix_len) c->prompts.prefix_tokens = o.random_prefix_len;
    } else {
      c->prompts.synthetic_input_words = o.random_input_len; /* no tokenizer: words stand for tokens */
    }
    c->prompts.output_tokens_mean = o.random_output_len;
    c->prompts.output_tokens_stddev = (uint32_t)llround(o.random_range_ratio * o.random_output_len * sd);
  } else {
    if (!o.dataset_path) {
      tp_cli_fini(&cli);
      return fail("--dataset-name sharegpt and custom read --dataset-path FILE (nothing is downloaded)");
    }
    c->prompts.input_file = o.dataset_path;
    if (o.sharegpt_output_len) c->prompts.output_tokens_mean = o.sharegpt_output_len;
  }

  /* inf: every request at once (within --max-concurrency); a rate: an open
   * loop, Poisson or gamma. */
  if (strcmp(o.request_rate, "inf") == 0) {
    cli.concurrency.v[0] = o.max_concurrency ? o.max_concurrency : o.num_prompts;
    cli.concurrency.n = 1;
    c->load.concurrency = cli.concurrency.v;
    c->load.n_concurrency = 1;
  } else {
    char *end;
    double r = strtod(o.request_rate, &end);
    if (*end || !(r > 0) || !isfinite(r)) {
      tp_cli_fini(&cli);
      snprintf(err, sizeof(err), "--request-rate '%s': expected requests per second above 0, or inf", o.request_rate);
      return fail(err);
    }
    cli.rates.v[0] = r;
    cli.rates.n = 1;
    c->load.request_rates = cli.rates.v;
    c->load.n_request_rates = 1;
    c->load.arrival = o.burstiness == 1 ? TP_ARRIVAL_POISSON : TP_ARRIVAL_GAMMA;
    c->load.burstiness = o.burstiness;
    c->load.max_concurrency = o.max_concurrency;
  }

  /* --goodput ttft:500 tpot:50 e2el:2000 */
  for (size_t i = 0; i < o.goodput.n; i++) {
    snprintf(buf, sizeof(buf), "%s", o.goodput.v[i]);
    for (char *sv = NULL, *t = strtok_r(buf, " ,", &sv); t; t = strtok_r(NULL, " ,", &sv)) {
      char *colon = strchr(t, ':');
      double ms = colon ? strtod(colon + 1, NULL) : 0;
      if (!colon || !(ms > 0)) {
        tp_cli_fini(&cli);
        snprintf(err, sizeof(err), "--goodput '%s': expected KEY:MS with KEY ttft, tpot or e2el", o.goodput.v[i]);
        return fail(err);
      }
      *colon = 0;
      if (strcmp(t, "ttft") == 0)
        c->measure.goodput_ttft_ms = ms;
      else if (strcmp(t, "tpot") == 0)
        c->measure.goodput_tpot_ms = ms;
      else if (strcmp(t, "e2el") == 0)
        c->measure.goodput_latency_ms = ms;
      else {
        tp_cli_fini(&cli);
        snprintf(err, sizeof(err), "--goodput '%s': expected KEY:MS with KEY ttft, tpot or e2el", o.goodput.v[i]);
        return fail(err);
      }
    }
  }

  int code = tp_cli_run(&cli, report, &x);
  tp_cli_fini(&cli);
  return code ? code : x.code;
}

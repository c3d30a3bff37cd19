/* The command line as settings tables (options.h).  A row per option:
 * where its value lives, its type and range, its spellings, help and an
 * example.  Defaults are the library's (tp_config_default,
 * tp_mock_config_default); --help and the man page print them from the
 * values, so no default is written twice. */
#include "options.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NR 1, 0 /* no range */
#define ROW(key, flags, type, st, field, arg, dflt, lo, hi, choices, group, help, ex, mask) \
  {key, flags, type, offsetof(st, field), arg, dflt, lo, hi, choices, group, help, ex, mask, NULL, NULL}
#define CUSTOM_ROW(key, flags, arg, group, help, ex, mask, parse, format) \
  {key, flags, TP_SET_CUSTOM, 0, arg, NULL, NR, NULL, group, help, ex, mask, parse, format}

#define G_SERVER "Server and API"
#define G_LOAD "Load"
#define G_MEASURE "Measurement"
#define G_PROMPTS "Prompts and tokens"
#define G_GOALS "Goals and CI gates"
#define G_SEARCH "Capacity search"
#define G_CONN "Connections and limits"
#define G_OUTPUT "Output"
#define G_MOCK "Built-in mock server"
#define G_COMPAT "Other tools' spellings (GenAI-Perf, perf_analyzer)"

/* ---- custom rows ------------------------------------------------------------ */

/* The keys --goodput takes: tokperf's, GenAI-Perf's (its goodput
 * constraints, named after its per-request metrics) and vLLM bench serve's.
 * Each bounds the figure tokperf computes under that name (docs/metrics.md,
 * "Goodput"). */
enum { GP_TTFT, GP_ITL, GP_TPOT, GP_LAT, GP_TTST, GP_TPS_USER, GP_COUNT };
static const struct {
  const char *name;
  int bound;
} goodput_keys[] = {
    {"ttft", GP_TTFT},
    {"itl", GP_ITL},
    {"tpot", GP_TPOT},
    {"latency", GP_LAT},
    {"ttst", GP_TTST},
    /* GenAI-Perf */
    {"time_to_first_token", GP_TTFT},
    {"time_to_second_token", GP_TTST},
    {"inter_token_latency", GP_ITL}, /* its ITL ends at the last text, as tokperf's */
    {"request_latency", GP_LAT},
    {"output_token_throughput_per_user", GP_TPS_USER},
    /* vLLM */
    {"e2el", GP_LAT},
    {"e2e", GP_LAT},
};

#define GOODPUT_KEYS                                                                                \
  "ttft, itl, tpot, latency, ttst (ms); GenAI-Perf: time_to_first_token, time_to_second_token, "   \
  "inter_token_latency, request_latency (ms), output_token_throughput_per_user (tokens/s, a floor); " \
  "vLLM: ttft, tpot, e2el (ms)"
#define GOODPUT_PAIRS "expected KEY:VALUE pairs such as ttft:200 itl:25 latency:5000; the keys: " GOODPUT_KEYS

/* "ttft:200 itl:25 latency:5000" (spaces or commas between bounds, ms or a
 * unit; the per-user throughput in tokens/s).  Several words after the flag
 * arrive joined by spaces (TP_SETF_NARGS). */
static int parse_goodput(void *base, const tp_setting *s, const char *v, char *err, size_t errlen) {
  (void)s;
  tp_config *c = base;
  char buf[512];
  if (snprintf(buf, sizeof(buf), "%s", v) >= (int)sizeof(buf)) {
    snprintf(err, errlen, "too long: at most %zu characters", sizeof(buf) - 1);
    return TP_EINVAL;
  }
  double b[GP_COUNT] = {0};
  int n = 0;
  for (char *save = NULL, *tok = strtok_r(buf, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
    char *colon = strchr(tok, ':');
    if (!colon) {
      snprintf(err, errlen, GOODPUT_PAIRS);
      return TP_EINVAL;
    }
    *colon = 0;
    int k = -1;
    for (size_t i = 0; i < sizeof(goodput_keys) / sizeof(goodput_keys[0]); i++)
      if (strcmp(tok, goodput_keys[i].name) == 0) k = goodput_keys[i].bound;
    if (k < 0) {
      snprintf(err, errlen, "'%s' is no goodput key; the keys: " GOODPUT_KEYS, tok);
      return TP_EINVAL;
    }
    if (k == GP_TPS_USER) {
      char *end = NULL;
      double x = strtod(colon + 1, &end);
      if (end == colon + 1 || *end || !(x > 0) || !isfinite(x)) {
        snprintf(err, errlen, "%s needs a positive number of tokens per second", tok);
        return TP_EINVAL;
      }
      b[k] = x;
    } else {
      uint64_t ns;
      char e[160];
      if (tp_parse_duration_ns(colon + 1, 1000000ULL, &ns, e, sizeof(e)) || ns == 0) {
        snprintf(err, errlen, "%s needs a positive number of milliseconds (or a unit: 2s)", tok);
        return TP_EINVAL;
      }
      b[k] = (double)ns / 1e6;
    }
    n++;
  }
  if (!n) {
    snprintf(err, errlen, GOODPUT_PAIRS);
    return TP_EINVAL;
  }
  c->measure.goodput_ttft_ms = b[GP_TTFT];
  c->measure.goodput_itl_ms = b[GP_ITL];
  c->measure.goodput_latency_ms = b[GP_LAT];
  c->measure.goodput_tpot_ms = b[GP_TPOT];
  c->measure.goodput_ttst_ms = b[GP_TTST];
  c->measure.goodput_tps_per_user_min = b[GP_TPS_USER];
  return 0;
}

static void format_goodput(const void *base, const tp_setting *s, char *out, size_t outlen) {
  (void)s;
  const tp_config *c = base;
  size_t used = 0;
  out[0] = 0;
  const struct {
    const char *name;
    double v;
  } b[] = {{"ttft", c->measure.goodput_ttft_ms},
           {"itl", c->measure.goodput_itl_ms},
           {"tpot", c->measure.goodput_tpot_ms},
           {"latency", c->measure.goodput_latency_ms},
           {"ttst", c->measure.goodput_ttst_ms},
           {"output_token_throughput_per_user", c->measure.goodput_tps_per_user_min}};
  for (size_t i = 0; i < sizeof(b) / sizeof(b[0]); i++) {
    if (!(b[i].v > 0) || used >= outlen) continue;
    int w = snprintf(out + used, outlen - used, "%s%s:%g", used ? " " : "", b[i].name, b[i].v);
    if (w > 0) used += (size_t)w;
  }
}

/* The mock's SSE dialect: a string the mock knows, one of the choices. */
static const char *const dialects[] = {"vllm", "llamacpp", "tgi", "trtllm-serve"};

static int parse_dialect(void *base, const tp_setting *s, const char *v, char *err, size_t errlen) {
  (void)s;
  for (size_t i = 0; i < sizeof(dialects) / sizeof(dialects[0]); i++)
    if (strcmp(v, dialects[i]) == 0) {
      ((tp_mock_config *)base)->http_dialect = dialects[i];
      return 0;
    }
  snprintf(err, errlen, "expected vllm, llamacpp, tgi or trtllm-serve");
  return TP_EINVAL;
}

static void format_dialect(const void *base, const tp_setting *s, char *out, size_t outlen) {
  (void)s;
  const char *d = ((const tp_mock_config *)base)->http_dialect;
  snprintf(out, outlen, "%s", d ? d : "");
}

/* The mock's HTTP port: a port, 0 (any free port), -1 (off); by default
 * 8000 beside a fixed gRPC port, any free port beside gRPC port 0. */
static int parse_http_port(void *base, const tp_setting *s, const char *v, char *err, size_t errlen) {
  (void)s;
  char *end;
  long x = strtol(v, &end, 10);
  if (!*v || *end || x < -1 || x > 65535) {
    snprintf(err, errlen, "expected a port from 0 to 65535, or -1 for none");
    return TP_EINVAL;
  }
  ((tp_mock_config *)base)->http_port = (int)x;
  return 0;
}

static void format_http_port(const void *base, const tp_setting *s, char *out, size_t outlen) {
  (void)s;
  int p = ((const tp_mock_config *)base)->http_port;
  if (p == TP_MOCK_HTTP_PORT_AUTO)
    snprintf(out, outlen, "8000");
  else
    snprintf(out, outlen, "%d", p);
}

/* --search-precision: "10%" is a fraction of the last passing load,
 * a bare number an amount in the load's unit (requests/s or requests in
 * flight). */
static int parse_precision(void *base, const tp_setting *s, const char *v, char *err, size_t errlen) {
  (void)s;
  tp_config *c = base;
  char *end;
  double x = strtod(v, &end);
  bool pct = *end == '%';
  if (end == v || !(x > 0) || (pct ? end[1] != 0 : *end != 0) || (pct && x >= 100)) {
    snprintf(err, errlen, "expected a percentage of the load (10%%) or an amount in the load's unit (2)");
    return TP_EINVAL;
  }
  c->load.search_rel_precision = pct ? x / 100 : 0;
  c->load.search_abs_precision = pct ? 0 : x;
  return 0;
}

static void format_precision(const void *base, const tp_setting *s, char *out, size_t outlen) {
  (void)s;
  const tp_config *c = base;
  if (c->load.search_abs_precision > 0)
    snprintf(out, outlen, "%g", c->load.search_abs_precision);
  else
    snprintf(out, outlen, "%g%%",
             100 * (c->load.search_rel_precision > 0 ? c->load.search_rel_precision : 0.1));
}

/* ---- the run's settings (tp_config) ------------------------------------------ */

#define C(key, flags, type, field, arg, lo, hi, group, help, ex, mask) \
  ROW(key, flags, type, tp_config, field, arg, NULL, lo, hi, NULL, group, help, ex, mask)
#define CE(key, flags, field, arg, choices, group, help, ex) \
  ROW(key, flags, TP_SET_ENUM, tp_config, field, arg, NULL, 1, 0, choices, group, help, ex, 0)

static const tp_setting config_rows[] = {
    C("server.model", "-m|--model", TP_SET_STR, server.model, "NAME", 1, 0, G_SERVER,
      "model to benchmark (openai: default the server's first model)", "ensemble", 0),
    C("server.model_version", "--model-version|-x", TP_SET_STR, server.model_version, "VERSION", 1, 0,
      G_SERVER, "model version (empty: the server's policy)", "1", 0),
    C("server.url", "-u|--url", TP_SET_STR, server.url, "URL", 1, 0, G_SERVER,
      "the server: HOST:PORT for gRPC (grpc:// accepted); for HTTP APIs a base URL such as "
      "http://host:8000/v1 (the API's path is added) or a full endpoint URL (default for HTTP APIs: "
      "localhost:8000)",
      "localhost:8001", 0),
    CE("server.service_kind", "--service-kind", server.service_kind, "triton|openai|vllm-grpc|sglang-grpc",
       "triton|openai-completions|openai|triton-generate|openai-chat=2|vllm-grpc|sglang-grpc", G_SERVER,
       "kind of server (openai: any OpenAI-compatible API; vllm-grpc, sglang-grpc: the engine's own gRPC, "
       "token ids in and out, docs/engines.md)",
       "openai"),
    C("server.endpoint", "--endpoint", TP_SET_STR, server.endpoint, "PATH", 1, 0, G_SERVER,
      "request path instead of the API's own: /PATH on the --url host, PATH below the --url path "
      "(GenAI-Perf's "
      "v1/chat/completions), or a full URL",
      "/v1/chat/completions", 0),
    CE("server.backend", "--backend", server.backend, "tensorrtllm|vllm", "tensorrtllm|vllm|trtllm=0",
       G_SERVER, "tensor layout of the model's inputs", "vllm"),
    C("server.streaming", "--streaming", TP_SET_FLAG, server.streaming, NULL, 1, 0, G_SERVER,
      "stream tokens with ModelStreamInfer", NULL, 0),
    C("server.streaming", "--no-streaming", TP_SET_FLAG, server.streaming, NULL, 1, 0, G_SERVER,
      "one unary ModelInfer answer per request", NULL, TP_SETF_CLEAR | TP_SETF_NOECHO),
    C("server.ca_file", "--ca-file|--ssl-grpc-root-certifications-file|--ssl-https-ca-certificates-file",
      TP_SET_STR, server.ca_file, "FILE", 1, 0, G_SERVER,
      "PEM CA certificates to verify the server with (https, grpcs)", "ca.pem", TP_SETF_FILE),
    C("server.cert_file", "--cert|--ssl-grpc-certificate-chain-file|--ssl-https-client-certificate-file",
      TP_SET_STR, server.cert_file, "FILE", 1, 0, G_SERVER,
      "client certificate (PEM)", "client.pem", TP_SETF_FILE),
    C("server.key_file", "--key|--ssl-grpc-private-key-file|--ssl-https-private-key-file",
      TP_SET_STR, server.key_file, "FILE", 1, 0, G_SERVER,
      "client certificate key (PEM)", "client.key", TP_SETF_FILE),
    C("server.insecure", "--insecure", TP_SET_FLAG, server.insecure, NULL, 1, 0, G_SERVER,
      "do not verify the server's certificate or host name", NULL, 0),
    C("server.http1_only", "--http1.1", TP_SET_FLAG, server.http1_only, NULL, 1, 0, G_SERVER,
      "HTTP APIs: do not offer HTTP/2", NULL, 0),
    C("server.reader_thread", "--reader-thread", TP_SET_FLAG, server.reader_thread, NULL, 1, 0, G_SERVER,
      "gRPC: read the sockets on a thread of their own, so that answers keep their arrival times while "
      "the client is busy with thousands of streams (costs a copy and a hand-over per read)",
      NULL, 0),
    C("server.traceparent", "--traceparent", TP_SET_FLAG, server.traceparent, NULL, 1, 0, G_SERVER,
      "send a W3C traceparent with each request (a random trace id per request; HTTP header, gRPC metadata) "
      "and record it in records.jsonl, to find the request in the server's traces",
      NULL, 0),
    C("server.no_usage", "--no-usage", TP_SET_FLAG, server.no_usage, NULL, 1, 0, G_SERVER,
      "openai: do not ask for usage in the stream (stream_options)", NULL, 0),
    C("server.skip_preflight", "--skip-preflight", TP_SET_FLAG, server.skip_preflight, NULL, 1, 0, G_SERVER,
      "skip the ServerLive/ModelReady/ModelMetadata checks (for replay servers)", NULL, 0),
    C("server.no_server_stats", "--no-server-stats", TP_SET_FLAG, server.no_server_stats, NULL, 1, 0,
      G_SERVER, "do not read Triton's ModelStatistics before and after each level", NULL, 0),
    C("server.metrics_url", "--metrics-url|--server-metrics-url|--server-metrics-urls",
      TP_SET_STR, server.metrics_url, "URL", 1, 0, G_SERVER,
      "scrape Prometheus metrics during each level (Triton: http://HOST:8002/metrics; with --mock: mock)",
      "http://localhost:8002/metrics", 0),
    C("server.gpu_metrics_url", "--gpu-metrics-url", TP_SET_STR, server.gpu_metrics_url, "URL", 1, 0, G_SERVER,
      "also scrape this Prometheus endpoint during each level, for GPU figures (DCGM exporter: "
      "http://HOST:9400/metrics)",
      "http://localhost:9400/metrics", 0),
    C("server.metrics_interval_ms", "--metrics-interval", TP_SET_MS, server.metrics_interval_ms, "DURATION",
      1, 0, G_SERVER, "time between scrapes", "500ms", TP_SETF_NONZERO),

    CE("load.arrival", "--arrival|--request-distribution",
       load.arrival, "constant|poisson|gamma", "constant|poisson|gamma", G_LOAD,
       "arrival process in rate mode", "poisson"),
    C("load.burstiness", "--burstiness", TP_SET_F64, load.burstiness, "K", 1e-9, 1e9, G_LOAD,
      "gamma shape for --arrival gamma (1 is Poisson, below 1 burstier)", "0.5", 0),
    C("load.max_concurrency", "--max-concurrency", TP_SET_U32, load.max_concurrency, "N", 1, 100000, G_LOAD,
      "rate mode: cap on requests in flight (waiting shows as send lag)", "64", TP_SETF_UNSET0),
    C("load.send_window_us", "--send-window", TP_SET_U32, load.send_window_us, "US", 0, 100000, G_LOAD,
      "rate mode: requests due within US microseconds of the first leave together in one write (send "
      "lag up to US, less CPU per request)",
      "20", 0),
    C("load.schedule_file", "--schedule", TP_SET_STR, load.schedule_file, "FILE.jsonl", 1, 0, G_LOAD,
      "replay a trace: timestamp (ms) and a prompt or input_length/output_length, optional hash_ids",
      "trace.jsonl", TP_SETF_FILE),
    C("load.replay_speedup", "--replay-speedup", TP_SET_F64, load.replay_speedup, "X", 1e-9, 1e9, G_LOAD,
      "play --schedule X times faster", "2", 0),
    C("load.prefix_block_tokens", "--prefix-block-tokens", TP_SET_U32, load.prefix_block_tokens, "N", 1,
      1000000, G_LOAD, "tokens per hash_ids block in --schedule", "512", 0),

    C("measure.request_count", "--request-count|--num-prompts-per-level|--num-requests",
      TP_SET_U64, measure.request_count,
      "N", 1, 1e12, G_MEASURE,
      "measured requests per level (default: 4 per slot or 4 s of the rate, at least 16)", "200",
      TP_SETF_NONZERO | TP_SETF_UNSET0),
    C("measure.duration_ms", "--duration", TP_SET_MS, measure.duration_ms, "DURATION", 1, 0, G_MEASURE,
      "measure the requests planned within this time per level", "60s", TP_SETF_NONZERO | TP_SETF_UNSET0),
    C("measure.warmup_request_count", "--warmup-request-count|--num-warmup-requests",
      TP_SET_U64, measure.warmup_request_count, "N",
      1, 0, G_MEASURE, "requests per level sent first and left out of the statistics", "8", 0),
    C("measure.warmup_duration_ms", "--warmup-duration", TP_SET_MS, measure.warmup_duration_ms, "DURATION", 1,
      0, G_MEASURE, "warm up for this long per level instead of a count", "10s",
      TP_SETF_NONZERO | TP_SETF_UNSET0),
    C("measure.measurement_interval_ms", "--measurement-interval|-p", TP_SET_MS,
      measure.measurement_interval_ms, "DURATION", 1, 0, G_MEASURE,
      "perf_analyzer stability mode: windows this long until the last three agree (bare number: ms)", "10s",
      TP_SETF_NONZERO),
    C("measure.measurement_request_count", "--measurement-request-count", TP_SET_U64,
      measure.measurement_request_count, "N", 1, 1e12, G_MEASURE, "requests per window in count_windows mode",
      "100", TP_SETF_NONZERO),
    C("measure.stability_percentage", "--stability-percentage|-s", TP_SET_F64, measure.stability_percentage,
      "P", 1e-9, 1e6, G_MEASURE,
      "windows agree when max/min of their throughputs and of their latencies is within 1 + P%", "5", 0),
    C("measure.steady_state_threshold", "--steady-state-threshold", TP_SET_F64, measure.steady_state_threshold,
      "F", 0, 1, G_MEASURE,
      "the steady state is where the requests in flight stay at or above F x the concurrency (0 = off; "
      "docs/metrics.md, \"Steady state\")", "0.9", 0),
    C("measure.stop_on_saturation", "--stop-on-saturation", TP_SET_FLAG, measure.stop_on_saturation, NULL, 1, 0,
      G_MEASURE,
      "end an open-loop level once the server is seen over-saturated, and skip the higher loads of the sweep "
      "(docs/metrics.md, \"Saturation\")", NULL, 0),
    C("measure.slice_duration_s", "--slice-duration", TP_SET_F64, measure.slice_duration_s, "SECONDS", 0.001,
      86400, G_MEASURE,
      "width of each level's time-series slices (default 1; given: AIPerf's timeslice files too; "
      "docs/metrics.md, \"Time series\")",
      "10", TP_SETF_UNSET0),
    C("measure.max_trials", "--max-trials|-r", TP_SET_U32, measure.max_trials, "N", 1, 64, G_MEASURE,
      "stop after this many windows, stable or not", "20", 0),
    C("measure.grace_period_ms", "--grace-period", TP_SET_MS, measure.grace_period_ms, "DURATION", 1, 0,
      G_MEASURE, "after Ctrl-C, how long in-flight requests may finish", "10s", 0),

    C("prompts.input_file", "--input-file|--input-data", TP_SET_STR, prompts.input_file, "FILE", 1, 0,
      G_PROMPTS,
      "prompts: JSONL (text_input|input|prompt|text, optional output, max_tokens; or chat messages, AIPerf "
      "single_turn), perf_analyzer input data or ShareGPT JSON, told apart by content (docs/inputs.md)",
      "prompts.jsonl", TP_SETF_FILE),
    C("prompts.tokenizer", "--tokenizer|--tokenizer-path", TP_SET_STR, prompts.tokenizer, "PATH|ORG/NAME", 1,
      0, G_PROMPTS,
      "a tokenizer.json, a sentencepiece tokenizer.model, a model directory holding one, or a model name "
      "found offline in the Hugging Face cache ($HF_HUB_CACHE, $HF_HOME/hub, ~/.cache/huggingface/hub) "
      "(default: --model's, when it is ORG/NAME found so; without one token metrics are n/a unless the server "
      "counts them)",
      "/models/llama2/tokenizer.model", TP_SETF_FILE),
    CE("prompts.token_source", "--token-source", prompts.token_source, "auto|client|server",
       "auto|client|server", G_PROMPTS,
       "where token counts come from: the server's (OpenAI usage, vLLM num_output_tokens), the client's "
       "tokenizer, or auto: the server's when it reports them, else the tokenizer",
       "server"),
    C("prompts.tokenizer_add_special_tokens", "--tokenizer-add-special-tokens", TP_SET_FLAG,
      prompts.tokenizer_add_special_tokens, NULL, 1, 0, G_PROMPTS,
      "count input tokens with the special tokens the tokenizer adds (BOS...), as most servers count "
      "prompts; "
      "output tokens never include them",
      NULL, 0),
    C("prompts.random_seed", "--random-seed", TP_SET_U64, prompts.random_seed, "N", 1, 0, G_PROMPTS,
      "seed for synthetic prompts", "42", 0),
    C("prompts.output_tokens_stddev", "--output-tokens-stddev", TP_SET_U32, prompts.output_tokens_stddev, "N",
      0, 1000000, G_PROMPTS, "draw each request's max_tokens around the mean", "16", 0),
    C("prompts.input_tokens_stddev", "--synthetic-input-tokens-stddev|--input-tokens-stddev", TP_SET_U32,
      prompts.input_tokens_stddev, "N", 0, 1000000, G_PROMPTS, "spread of the synthetic prompt lengths", "32",
      0),
    C("prompts.output_tokens_deterministic", "--output-tokens-mean-deterministic", TP_SET_FLAG,
      prompts.output_tokens_deterministic, NULL, 1, 0, G_PROMPTS,
      "also ask the server not to stop early (min_length/min_tokens, vLLM ignore_eos)", NULL, 0),
    C("prompts.synthetic_input_words", "--synthetic-input-words", TP_SET_U32, prompts.synthetic_input_words,
      "N", 0, 1000000, G_PROMPTS, "words per synthetic prompt (no --input-file)", "128", 0),
    C("prompts.num_prompts", "--num-prompts|--num-dataset-entries", TP_SET_U32, prompts.num_prompts, "N", 0,
      10000000, G_PROMPTS, "number of synthetic prompts", "500", 0),
    C("prompts.cache_bust", "--cache-bust", TP_SET_FLAG, prompts.cache_bust, NULL, 1, 0, G_PROMPTS,
      "start every prompt with a unique marker so no KV-cache prefix can be reused (docs/kv-cache.md)", NULL,
      0),
    C("prompts.prefix_tokens", "--prefix-tokens|--prefix-prompt-length",
      TP_SET_U32, prompts.prefix_tokens, "N", 1, 1000000,
      G_PROMPTS, "put a shared prefix of exactly N tokens before every prompt (needs --tokenizer)", "256",
      TP_SETF_UNSET0),
    C("prompts.num_prefixes", "--num-prefixes|--num-prefix-prompts",
      TP_SET_U32, prompts.num_prefixes, "K", 1, 100000, G_PROMPTS,
      "how many different shared prefixes, used in turn", "4", 0),

    CE("search.mode", "--search", load.search, "request-rate|concurrency",
       "none|request-rate|concurrency|rate=1", G_SEARCH,
       "find the highest request rate or concurrency at which every --slo holds (docs/search.md)",
       "concurrency"),
    C("search.min", "--search-min", TP_SET_F64, load.search_min, "LOAD", 1e-9, 1e9, G_SEARCH,
      "the lowest load probed, and the first probe (default 1)", "1", TP_SETF_UNSET0),
    C("search.max", "--search-max", TP_SET_F64, load.search_max, "LOAD", 1e-9, 1e9, G_SEARCH,
      "the highest load probed (default 1024)", "256", TP_SETF_UNSET0),
    CUSTOM_ROW(
        "search.precision", "--search-precision", "P%|AMOUNT", G_SEARCH,
        "stop when the last passing and first failing loads are this close: a percentage of the passing "
        "load, or an amount in requests/s or requests in flight (concurrency: at least 1)",
        "5%", 0, parse_precision, format_precision),
    C("search.max_probes", "--search-max-probes", TP_SET_U32, load.search_max_probes, "N", 1, 64, G_SEARCH,
      "stop after this many probes and report the bracket so far (default 12)", "8", TP_SETF_UNSET0),
    C("measure.num_profile_runs", "--num-profile-runs", TP_SET_U32, measure.num_profile_runs, "N", 1, 1000,
      G_MEASURE,
      "run every level N times; the report gives each metric's mean, standard deviation and 95% confidence "
      "interval over the runs, and compare calls only differences beyond them regressions",
      "5", TP_SETF_UNSET0),

    CUSTOM_ROW("goals.goodput", "--goodput|-g", "BOUNDS", G_GOALS,
               "goodput bounds in ms, e.g. 'ttft:200 itl:25 tpot:30 latency:5000' or as separate words (also "
               "GenAI-Perf's and vLLM's names; docs/metrics.md, Goodput)",
               "ttft:200 itl:25", TP_SETF_NARGS, parse_goodput, format_goodput),

    C("connection.connections", "--connections", TP_SET_U32, server.connections, "N", 1, 4096, G_CONN,
      "HTTP/2 connections (default: one per 128 concurrent streams)", "4", TP_SETF_UNSET0),
    C("connection.request_timeout_ms", "--request-timeout", TP_SET_MS, server.request_timeout_ms, "DURATION",
      1, 0, G_CONN, "fail a request after this long; sent as grpc-timeout", "30s",
      TP_SETF_NONZERO | TP_SETF_UNSET0),
    C("connection.max_response_bytes", "--max-response-bytes", TP_SET_SIZE, server.max_response_bytes, "SIZE",
      1, 0, G_CONN, "cancel (and count as failed) an answer whose text passes this size", "16M", 0),
    C("connection.max_output_tokens", "--max-output-tokens", TP_SET_U64, server.max_output_tokens, "N", 1, 0,
      G_CONN, "cancel (and count as failed) an answer streamed in more than N text responses", "4096",
      TP_SETF_UNSET0),
    C("connection.max_consecutive_failures", "--max-consecutive-failures", TP_SET_U64,
      server.max_consecutive_failures, "N", 1, 0, G_CONN,
      "end the level once N requests in a row failed to reach the server (refused, lost or timed out "
      "before any answer) or were not sent while backing off from it (0: never; docs/metrics.md)",
      "20", 0),
    C("connection.mpi_timeout_ms", "--mpi-timeout", TP_SET_MS, dist.mpi_timeout_ms, "DURATION", 1, 0, G_CONN,
      "under mpirun: how long rank 0 waits on a silent rank before it reports it failed (default 20s; "
      "docs/scale-out.md)",
      "60s", TP_SETF_NONZERO | TP_SETF_UNSET0),

    C("output.json_path", "--json", TP_SET_STR, output.json_path, "FILE", 1, 0, G_OUTPUT,
      "write every figure, with units, and the configuration as JSON", "run.json", TP_SETF_FILE),
    C("output.latency_report_file", "-f|--latency-report-file", TP_SET_STR, output.latency_report_file,
      "FILE", 1, 0, G_OUTPUT,
      "perf_analyzer's latency report: a CSV row per level (throughput, latency parts and percentiles in "
      "us), and "
      "one file per composing model beside it",
      "perf.csv", TP_SETF_FILE),
    C("output.verbose_csv", "--verbose-csv", TP_SET_FLAG, output.verbose_csv, NULL, 1, 0, G_OUTPUT,
      "perf_analyzer: with -f, also the average latency, request/response and response wait columns", NULL,
      0),
    C("output.records_path", "--records", TP_SET_STR, output.records_path, "FILE.jsonl", 1, 0, G_OUTPUT,
      "one JSON line per request, flushed as each ends (default: records.jsonl in the artifact dir)",
      "records.jsonl", TP_SETF_FILE),
    C("output.artifact_dir", "--artifact-dir", TP_SET_STR, artifacts.artifact_dir, "DIR", 1, 0, G_OUTPUT,
      "profile export, GenAI-Perf summaries, records, responses, report.html "
      "(default: as GenAI-Perf names it, artifacts/MODEL-SERVICE-API-MODE, e.g. "
      "ensemble-triton-tensorrtllm-concurrency, "
      "m-openai-chat-concurrency)",
      "artifacts/run1", TP_SETF_DIR),
    C("output.profile_export_file", "--profile-export-file", TP_SET_STR, artifacts.profile_export_file,
      "FILE", 1, 0, G_OUTPUT,
      "perf_analyzer profile export name; a bare name goes in the artifact dir [default: "
      "profile_export.json]",
      "export.json", TP_SETF_FILE),
    C("output.no_artifacts", "--no-artifacts", TP_SET_FLAG, artifacts.no_artifacts, NULL, 1, 0, G_OUTPUT,
      "write no artifact directory", NULL, 0),
    C("output.no_html", "--no-html", TP_SET_FLAG, artifacts.no_html, NULL, 1, 0, G_OUTPUT,
      "leave report.html out of the artifacts", NULL, 0),
    C("output.metrics_port", "--metrics-port", TP_SET_U32, output.metrics_port, "PORT", 0, 65535, G_OUTPUT,
      "serve the client's live counters and histograms in the Prometheus text format at "
      "http://127.0.0.1:PORT/metrics while the run runs (0: off; docs/metrics.md, \"Live metrics\")",
      "9400", TP_SETF_UNSET0),
    C("output.metrics_host", "--metrics-host", TP_SET_STR, output.metrics_host, "ADDRESS", 1, 0, G_OUTPUT,
      "the IP address --metrics-port listens on (default 127.0.0.1; 0.0.0.0 or :: for every interface)",
      "0.0.0.0", 0),
    C("output.metrics_hold_ms", "--metrics-hold", TP_SET_MS, output.metrics_hold_ms, "DURATION", 1, 0, G_OUTPUT,
      "keep serving --metrics-port this long after the last level, so that a scraper sees the final counts",
      "15s", 0),

};

/* ---- the CLI's own (tp_cli) ------------------------------------------------ */

#define L(key, flags, type, field, arg, dflt, lo, hi, choices, group, help, ex, mask) \
  ROW(key, flags, type, tp_cli, field, arg, dflt, lo, hi, choices, group, help, ex, mask)

/* GenAI-Perf's and AIPerf's other endpoint types are read, to be refused
 * by name (check_endpoint_type) rather than as an unknown word. */
#define ENDPOINT_TYPES                                                            \
  "chat|completions|generate|embeddings=3|rankings=4|image_retrieval=5|nvclip=6|" \
  "multimodal=7|huggingface_generate=8|template=9|dynamic_grpc=10"

enum { CLI_PROTOCOL, CLI_ENDPOINT_TYPE, CLI_STREAM_TEXT, CLI_CONCURRENCY, CLI_RATE, CLI_MEASURE_MODE };

#define REFUSE(key, flags, help) \
  L(key, flags, TP_SET_FLAG, noop_flag, NULL, NULL, 1, 0, NULL, G_COMPAT, help, NULL, TP_SETF_REFUSED | TP_SETF_NOECHO)

/* -b: the batch size perf_analyzer and GenAI-Perf put in one request.
 * tokperf's requests hold one prompt, so only 1 means what it says. */
static int parse_batch_size(void *base, const tp_setting *s, const char *v, char *err, size_t errlen) {
  (void)base;
  (void)s;
  if (strcmp(v, "1") == 0) return 0;
  snprintf(err, errlen, "tokperf sends one prompt per request: write -b 1 or leave it out (for more prompts in "
                        "flight, raise --concurrency)");
  return TP_EINVAL;
}

static void format_batch_size(const void *base, const tp_setting *s, char *out, size_t outlen) {
  (void)base;
  (void)s;
  snprintf(out, outlen, "1");
}

static const tp_setting cli_rows[] = {
    [CLI_PROTOCOL] = L("server.protocol", "-i|--protocol", TP_SET_ENUM, protocol, "grpc|http", "grpc", 1, 0,
                       "grpc|http", G_SERVER, "Triton protocol: gRPC streaming, or HTTP generate", "http", 0),
    [CLI_ENDPOINT_TYPE] = L("server.endpoint_type", "--endpoint-type", TP_SET_ENUM, endpoint_type,
                            "chat|completions|generate", "chat", 1, 0, ENDPOINT_TYPES, G_SERVER,
                            "openai: /v1/chat/completions or /v1/completions (chat or completions without "
                            "--service-kind means --service-kind openai, as in AIPerf); triton -i http: generate",
                            "completions", 0),
    [CLI_STREAM_TEXT] = L("server.streaming_text", "--streaming-text", TP_SET_ENUM, stream_text, "delta|cumulative",
                          "delta", 1, 0, "delta|cumulative", G_SERVER,
                          "each streamed response holds new text only, or all text so far (vLLM before r24.03)",
                          "cumulative", 0),
    [CLI_CONCURRENCY] = L("load.concurrency", "--concurrency|--concurrency-range", TP_SET_U32_LIST, concurrency,
                          "LIST", "1", 1, 100000, NULL, G_LOAD,
                          "requests in flight per level: 1,4,8 or a range 4:32:4 or 1:64:x2", "1,4,16,64", 0),
    [CLI_RATE] = L("load.request_rate", "--request-rate|--request-rate-range", TP_SET_F64_LIST, rates, "LIST", NULL, 1e-9, 1e9, NULL,
                   G_LOAD, "open loop: requests/s per level, e.g. 10,50,100, a range 100:1000:100 or 1:64:x2, or "
                   "perf_analyzer's fractional 1.0:4.0:0.1 (instead of --concurrency)",
                   "10,50,100", 0),
    [CLI_MEASURE_MODE] = L("measure.measurement_mode", "--measurement-mode", TP_SET_ENUM, measure_mode,
                           "time_windows|count_windows", "time_windows", 1, 0, "time_windows|count_windows", G_MEASURE,
                           "stability windows by time or by count", "count_windows", 0),
    L("prompts.output_tokens_mean", "--output-tokens-mean|--max-tokens|--osl", TP_SET_U32_LIST, out_means, "LIST", NULL,
      0, 10000000, NULL, G_PROMPTS,
      "max_tokens asked of the server; a list sweeps it (default: the line's max_tokens, else 128)", "256", 0),
    L("prompts.synthetic_input_tokens_mean", "--synthetic-input-tokens-mean|--input-tokens-mean|--isl",
      TP_SET_U32_LIST, in_means, "LIST",
      NULL, 1, 10000000, NULL, G_PROMPTS,
      "synthetic prompts of exactly this many tokens (needs --tokenizer); a list sweeps it", "128,512,2048", 0),
    L("prompts.tokenizer_revision", "--tokenizer-revision", TP_SET_STR, tokenizer_revision, "REV", NULL, 1, 0,
      NULL, G_PROMPTS, "branch, tag or commit hash of a --tokenizer model name (default: main)", "v1.0", 0),
    L("prompts.tokenizer_trust_remote_code", "--tokenizer-trust-remote-code", TP_SET_FLAG, trust_remote_code, NULL,
      NULL, 1, 0, NULL, G_PROMPTS, "tokperf reads tokenizer files itself and runs no model code", NULL,
      TP_SETF_NOOP | TP_SETF_NOECHO),
    L("goals.asserts", "--assert", TP_SET_STR_LIST, asserts, "EXPR", NULL, 1, 0, NULL, G_GOALS,
      "CI gate, repeatable: 'ttft.p99 <= 250ms', 'output_token_throughput >= 1000', 'error_rate <= 1%', "
      "'fidelity.verdict < 2' (any metric of docs/metrics.md, the client's own figures included)",
      "ttft.p99 <= 250ms", 0),
    L("search.slos", "--slo", TP_SET_STR_LIST, slos, "EXPR", NULL, 1, 0, NULL, G_SEARCH,
      "with --search, repeatable: a bound every passing probe meets, in --assert's syntax: 'ttft.p99 <= 300ms', "
      "'itl.p99 <= 30ms', 'error_rate <= 1%', 'goodput_fraction >= 0.95' (with --goodput)",
      "ttft.p99 <= 300ms", 0),
    L("goals.max_error_rate", "--max-error-rate", TP_SET_FRACTION, max_error_rate, "R", NULL, 0, 1, NULL, G_GOALS,
      "fail the run (exit 1) when a level's error rate exceeds R (or R%); default: no limit", "1%", TP_SETF_UNSET0),
    L("server.api_key_file", "--api-key-file", TP_SET_STR, api_key_file, "FILE", NULL, 1, 0, NULL, G_SERVER,
      "file whose first line is the API key (else OPENAI_API_KEY); sent as a bearer token, never shown",
      "key.txt", TP_SETF_FILE),
    L("server.headers", "-H|--header", TP_SET_STR_LIST, headers, "'NAME: VALUE'", NULL, 1, 0, NULL, G_SERVER,
      "extra request header, repeatable (gRPC metadata too)", "X-Team: bench", 0),
    L("server.extra_inputs", "--extra-inputs", TP_SET_STR_LIST, extra_inputs, "NAME:VALUE|JSON", NULL, 1, 0, NULL,
      G_SERVER, "extra request body field(s) for HTTP APIs, sampling fields for vllm-grpc and sglang-grpc, "
      "repeatable", "temperature:0", 0),
    /* Other tools' flags: mapped after parsing, or said to have no effect. */
    /* The CLI starts the mock (cmd/main.c); its model and faults are the
     * --mock- rows, bound to tp_mock_config. */
    L("mock.enabled", "--mock", TP_SET_FLAG, use_mock, NULL, NULL, 1, 0, NULL, G_MOCK,
      "start the built-in mock server in-process and benchmark it", NULL, 0),
    L("mock.log_path", "--mock-log", TP_SET_STR, mock_log_path, "FILE.jsonl", NULL, 1, 0, NULL, G_MOCK,
      "with --mock: the mock's log of true send times", "mock.jsonl", TP_SETF_FILE),
    L("compat.output_format", "--output-format", TP_SET_ENUM, output_format,
      "trtllm|vllm|openai_chat_completions|openai_completions", NULL, 1, 0,
      "trtllm|vllm|openai_chat_completions|openai_completions|tensorrtllm=0", G_COMPAT,
      "GenAI-Perf before 0.0.4: the server's API (--backend, or --service-kind openai --endpoint-type)",
      "vllm", TP_SETF_NOECHO),
    L("compat.prompt_source", "--prompt-source", TP_SET_ENUM, prompt_source, "synthetic|file|dataset", NULL, 1, 0,
      "synthetic|file|dataset", G_COMPAT,
      "GenAI-Perf: synthetic prompts (the default without --input-file), or --input-file; Hugging Face datasets "
      "are not downloaded",
      "synthetic", TP_SETF_NOECHO),
    L("compat.collect_metrics", "--collect-metrics", TP_SET_FLAG, collect_metrics, NULL, NULL, 1, 0, NULL, G_COMPAT,
      "perf_analyzer: scrape the server's Prometheus metrics (--metrics-url, by default port 8002 of the "
      "--url host)",
      NULL, TP_SETF_NOECHO),
    L("compat.async", "--async|--sync|-a", TP_SET_FLAG, noop_flag, NULL, NULL, 1, 0, NULL, G_COMPAT,
      "tokperf always sends asynchronously from one event loop, holding --concurrency requests in flight", NULL,
      TP_SETF_NOOP | TP_SETF_NOECHO),
    L("compat.verbose", "-v|--verbose", TP_SET_FLAG, noop_flag, NULL, NULL, 1, 0, NULL, G_COMPAT,
      "progress lines are on by default (-q turns them off)", NULL, TP_SETF_NOOP | TP_SETF_NOECHO),
    L("compat.shape", "--shape", TP_SET_STR_LIST, noop_values, "NAME:DIMS", NULL, 1, 0, NULL, G_COMPAT,
      "tensor shapes come from each input's data", "text_input:1", TP_SETF_NOOP | TP_SETF_NOECHO),
    L("compat.max_threads", "--max-threads", TP_SET_STR_LIST, noop_values, "N", NULL, 1, 0, NULL, G_COMPAT,
      "one event-loop thread drives every request", "16", TP_SETF_NOOP | TP_SETF_NOECHO),
    L("compat.generate_plots", "--generate-plots", TP_SET_FLAG, noop_flag, NULL, NULL, 1, 0, NULL, G_COMPAT,
      "report.html with every chart and its numbers is written to the artifact directory anyway (unless "
      "--no-html)",
      NULL, TP_SETF_NOOP | TP_SETF_NOECHO),
    L("compat.binary_search", "--binary-search", TP_SET_FLAG, binary_search, NULL, NULL, 1, 0, NULL, G_COMPAT,
      "perf_analyzer: with --latency-threshold, --search over the --concurrency-range (or --request-rate-range) "
      "from its first to its last value",
      NULL, TP_SETF_NOECHO),
    L("compat.latency_threshold", "--latency-threshold|-l", TP_SET_F64, latency_threshold_ms, "MS", NULL,
      1e-9, 1e9, NULL, G_COMPAT,
      "perf_analyzer: the bound 'latency.avg <= MS': with --binary-search the search's SLO, else a gate "
      "(--assert) on every level",
      "500", TP_SETF_NOECHO),
    L("compat.percentile", "--percentile", TP_SET_STR_LIST, noop_values, "P", NULL, 1, 0, NULL, G_COMPAT,
      "stability windows compare average latencies, as perf_analyzer does without --percentile; every percentile "
      "is reported",
      "95", TP_SETF_NOOP | TP_SETF_NOECHO),
    CUSTOM_ROW("compat.batch_size", "-b|--batch-size|--batch-size-text", "1", G_COMPAT,
               "perf_analyzer's and GenAI-Perf's batch size: tokperf sends one prompt per request, so 1 is taken "
               "and any other size refused",
               "1", TP_SETF_NOECHO, parse_batch_size, format_batch_size),
    L("compat.enable_mpi", "--enable-mpi", TP_SET_FLAG, noop_flag, NULL, NULL, 1, 0, NULL, G_COMPAT,
      "under mpirun, tokperf finds its rank by itself (docs/scale-out.md)", NULL, TP_SETF_NOOP | TP_SETF_NOECHO),
    /* Other tools' flags that tokperf does not do: refused by name (exit 2),
     * the help naming what to write instead. */
    REFUSE("compat.refused.audio",
           "--audio-length-mean|--audio-length-stddev|--audio-format|--audio-depths|--audio-sample-rates|"
           "--audio-num-channels|--batch-size-audio",
           "tokperf sends text prompts only; leave the audio flags out"),
    REFUSE("compat.refused.image",
           "--image-width-mean|--image-width-stddev|--image-height-mean|--image-height-stddev|--image-format|"
           "--batch-size-image",
           "tokperf sends text prompts only; leave the image flags out"),
    REFUSE("compat.refused.model_selection", "--model-selection-strategy",
           "tokperf benchmarks one --model per run; run once per model"),
    REFUSE("compat.refused.grpc_method", "--grpc-method",
           "tokperf speaks KServe v2 gRPC (--service-kind triton) and the engines' own gRPC (--service-kind "
           "vllm-grpc|sglang-grpc), not arbitrary gRPC methods"),
    REFUSE("compat.refused.checkpoint", "--checkpoint-dir|--enable-checkpointing",
           "no checkpoints: each request's record is written as it ends (--records), and an interrupted run "
           "reports what it measured"),
    REFUSE("compat.refused.fixed_schedule", "--fixed-schedule|--request-intervals",
           "replay a trace's timestamps with --schedule FILE.jsonl (docs/inputs.md)"),
    REFUSE("compat.refused.sessions", "--num-sessions|--session-concurrency|--session-delay-ratio",
           "tokperf runs sessions from a conversations file: --input-file conv.jsonl (docs/sessions.md)"),
    REFUSE("compat.refused.session_turns",
           "--session-turn-delay-mean|--session-turn-delay-stddev|--session-turns-mean|--session-turns-stddev",
           "tokperf runs sessions from a conversations file: --input-file conv.jsonl (docs/sessions.md)"),
    REFUSE("compat.refused.deprecated_concurrency", "-d|-c|-t",
           "perf_analyzer's deprecated concurrency flags: write --concurrency-range START:END"),
    REFUSE("compat.refused.zero_input", "-z",
           "zero-filled tensors: tokperf sends prompts (--input-file, or synthetic: --synthetic-input-tokens-mean)"),
    REFUSE("compat.refused.sequences",
           "--sequence-length|--sequence-length-variation|--num-of-sequences|--sequence-id-range|--serial-sequences",
           "Triton sequence models: tokperf sends independent requests (conversations: --input-file, "
           "docs/sessions.md)"),
    REFUSE("compat.refused.data_directory", "--data-directory",
           "write the prompts as a JSON file and give --input-data FILE"),
    REFUSE("compat.refused.string_data", "--string-length|--string-data",
           "generated string tensors: tokperf makes prompts of --synthetic-input-tokens-mean tokens (or "
           "--synthetic-input-words)"),
    REFUSE("compat.refused.shared_memory", "--shared-memory|--output-shared-memory-size",
           "tokperf sends inputs in the request and reads outputs from the answer (shared memory none)"),
    REFUSE("compat.refused.other_servers", "--model-signature-name",
           "TensorFlow Serving signatures: tokperf speaks KServe v2 (--service-kind triton) and OpenAI APIs"),
    REFUSE("compat.refused.compression", "--grpc-compression-algorithm", "tokperf sends gRPC messages uncompressed"),
    REFUSE("compat.refused.c_api", "--triton-server-directory|--model-repository",
           "Triton's in-process C API: start tritonserver and give -u HOST:PORT"),
    REFUSE("compat.refused.ssl_use", "--ssl-grpc-use-ssl",
           "write the URL as grpcs://HOST:PORT (with --ca-file, --cert, --key)"),
    REFUSE("compat.refused.ssl_verify", "--ssl-https-verify-peer|--ssl-https-verify-host",
           "tokperf verifies the peer and host by default; --insecure turns both off"),
    REFUSE("compat.refused.ssl_type", "--ssl-https-client-certificate-type|--ssl-https-private-key-type",
           "PEM only: --cert FILE and --key FILE"),
    REFUSE("compat.refused.trace", "--trace-level|--trace-rate|--trace-count|--log-frequency",
           "Triton's trace settings: set them on the server (tritonserver --trace-config)"),
    REFUSE("compat.refused.bls", "--bls-composing-models",
           "tokperf reads the composing models' statistics from the server's ModelStatistics"),
    REFUSE("compat.refused.tensor_format", "--input-tensor-format|--output-tensor-format",
           "tokperf's gRPC sends binary tensors and -i http uses the JSON generate endpoint"),
    REFUSE("compat.refused.version", "--version", "the version: tokperf --version"),
    REFUSE("compat.refused.periodic", "--periodic-concurrency-range|--request-period",
           "levels of held concurrency: --concurrency-range START:END:STEP"),
    REFUSE("compat.refused.request_parameter", "--request-parameter",
           "request fields: --extra-inputs NAME:VALUE (perf_analyzer's NAME:VALUE:TYPE without the type)"),
    L("output.format", "--format", TP_SET_ENUM, format_json, "text|json", "text", 1, 0, "text|json", G_OUTPUT,
      "what stdout carries: the tables, or the whole JSON document", "json", TP_SETF_NOECHO),
    L("output.quiet", "-q|--quiet", TP_SET_FLAG, quiet, NULL, NULL, 1, 0, NULL, G_OUTPUT, "no progress lines on stderr",
      NULL, TP_SETF_NOECHO),
};

#define CLI_N (sizeof(cli_rows) / sizeof(cli_rows[0]))

/* ---- the mock's settings (tp_mock_config) ------------------------------------ */

#define M(key, flags, type, field, arg, lo, hi, help, ex, mask) \
  ROW(key, flags, type, tp_mock_config, field, arg, NULL, lo, hi, NULL, G_MOCK, help, ex, mask)

/* The model and its faults: `tokperf mock` and, under --mock-, `tokperf
 * profile --mock`. */
static const tp_setting mock_rows[] = {
    M("ttft_ms", "--ttft-ms", TP_SET_F64, ttft_ms, "MS", 0, 1e9, "base time to first token", "50", 0),
    M("prefill_us_per_token", "--prefill-us-per-token", TP_SET_F64, prefill_us_per_token, "US", 0, 1e9,
      "prefill time per prompt token (words count as tokens)", "50", 0),
    M("prefill_queue_ms", "--prefill-queue-ms", TP_SET_F64, prefill_queue_ms, "MS", 0, 1e9,
      "extra time to first token per prefill already running", "5", 0),
    M("itl_ms", "--itl-ms", TP_SET_F64, itl_ms, "MS", 0, 1e9, "base time per output token", "10", 0),
    M("itl_us_per_seq", "--itl-us-per-seq", TP_SET_F64, itl_us_per_seq, "US", 0, 1e9,
      "extra time per token per running sequence", "40", 0),
    M("max_batch", "--max-batch", TP_SET_U32, max_batch, "N", 1, 1000000,
      "sequences decoded at once; more wait in a queue", "64", 0),
    M("output_tokens", "--output-tokens", TP_SET_U32, output_tokens, "N", 0, 10000000,
      "fixed output length (0: the request's max_tokens, default 128)", "32", 0),
    M("eos_prob", "--eos-prob", TP_SET_F64, eos_prob, "P", 0, 1, "per-token end-of-sequence probability", "0.01",
      0),
    M("reasoning_tokens", "--reasoning-tokens", TP_SET_U32, reasoning_tokens, "N", 0, 10000000,
      "streamed chat answers begin with N reasoning tokens (reasoning_content deltas)", "16", 0),
    M("usage_delay_ms", "--usage-delay-ms", TP_SET_MS, usage_delay_ms, "MS", 1, 0,
      "OpenAI streams: the usage-only chunk and [DONE] trail the last token's chunk by MS (0: sent with it)",
      "25", 0),
    M("tokens_per_chunk", "--tokens-per-chunk", TP_SET_U32, tokens_per_chunk, "N", 1, 1000000,
      "HTTP streams (OpenAI, Triton generate_stream): N tokens per event (reasoning and answer apart)", "4",
      0),
    M("one_write", "--one-write", TP_SET_FLAG, one_write, NULL, 1, 0,
      "HTTP streams: the whole streamed response in one write once complete (every response at one time)",
      NULL, 0),
    M("seed", "--seed", TP_SET_U64, seed, "N", 1, 0, "seed of the generated text and end-of-sequence draws", "7", 0),
    CUSTOM_ROW("http_dialect", "--http-dialect", "vllm|llamacpp|tgi|trtllm-serve", G_MOCK,
               "SSE stream dialect of the OpenAI endpoints", "llamacpp", 0, parse_dialect, format_dialect),
    M("sse_keepalive_ms", "--sse-keepalive-ms", TP_SET_I64, sse_keepalive_ms, "MS", -1, 1e9,
      "SSE keep-alive comment interval (-1: the dialect's own)", "1000", 0),
    M("served_model_name", "--served-model-name", TP_SET_STR, served_model_name, "NAME[,NAME=MODEL...]", 1, 0,
      "other names the models answer to, listed first by /v1/models: NAME as vllm_model over the OpenAI "
      "endpoints, NAME=MODEL as MODEL (ensemble, vllm_model, vllm) over gRPC and HTTP (a command line written for "
      "a real model runs unchanged)",
      "meta-llama/Llama-3.1-8B-Instruct", 0),
    M("fault_kind", "--fault", TP_SET_STR, fault_kind, "KIND[:ARGS]", 1, 0,
      "inject a fault: rst_stream, grpc_status:CODE[:MSG], trailers_only:CODE[:MSG], http_status:CODE, "
      "inband_error[:MSG], stall, trickle, malformed, oversize, invalid_utf8, endless, close_conn, goaway; "
      "mixed (every kind) or a list KIND,KIND,... (each faulted request draws one) "
      "(per request too: request parameter or JSON field tokperf_fault)",
      "http_status:503", 0),
    M("fault_rate", "--fault-rate", TP_SET_FRACTION, fault_rate, "P", 0, 1, "fraction of requests faulted (seeded draw)",
      "0.05", 0),
    M("fault_after_tokens", "--fault-after-tokens", TP_SET_U32, fault_after_tokens, "N", 0, 1000000,
      "the fault takes the place of token N (0: at arrival)", "10", 0),
    M("refuse_connections", "--refuse-connections", TP_SET_U32, refuse_connections, "N", 0, 1000000,
      "reset the first N connections accepted", "2", 0),
    M("refuse_connections_ms", "--refuse-connections-ms", TP_SET_MS, refuse_connections_ms, "MS", 1, 0,
      "do not listen for this long after start", "500", 0),
    M("goaway_after_streams", "--goaway-after-streams", TP_SET_U32, goaway_after_streams, "N", 0, 1000000,
      "per connection: GOAWAY after N requests (HTTP: Connection: close)", "100", 0),
    M("close_after_stream", "--close-after-stream", TP_SET_FLAG, close_after_stream, NULL, 1, 0,
      "close the connection after every streamed answer although it said keep-alive (llama.cpp's server; gRPC: "
      "GOAWAY after every stream)",
      NULL, 0),
    M("idle_close_ms", "--idle-close-ms", TP_SET_MS, idle_close_ms, "MS", 1, 0,
      "close connections with no request in progress for this long (gRPC: GOAWAY first; 0: never)", "5000", 0),
    M("prefix_cache", "--prefix-cache", TP_SET_FLAG, prefix_cache, NULL, 1, 0,
      "cache prompt prefixes: the cached part skips prefill time", NULL, 0),
    M("log_prompts", "--log-prompts", TP_SET_FLAG, log_prompts, NULL, 1, 0,
      "with a log: each request's line holds its prompt as the mock read it (chat contents joined)", NULL, 0),
    M("prefix_cache_block_words", "--prefix-cache-block-words", TP_SET_U32, prefix_cache_block_words, "N", 1,
      1000000, "prefix cache block size in words", "32", 0),
    M("prefix_cache_blocks", "--prefix-cache-blocks", TP_SET_U32, prefix_cache_blocks, "N", 1, 100000000,
      "prefix cache capacity in blocks", "4096", 0),
};

/* The server's own: only `tokperf mock` (the in-process mock of a run
 * listens on free loopback ports). */
static const tp_setting mock_server_rows[] = {
    ROW("host", "--host", TP_SET_STR, tp_mock_config, host, "ADDR", NULL, 1, 0, NULL, "Server", "address to listen on",
        "0.0.0.0", 0),
    ROW("grpc_port", "--grpc-port", TP_SET_INT, tp_mock_config, grpc_port, "PORT", NULL, 0, 65535, NULL, "Server",
        "gRPC port (0: any free port)", "9001", 0),
    CUSTOM_ROW("http_port", "--http-port", "PORT", "Server",
               "HTTP port: OpenAI-compatible and Triton generate endpoints, /metrics (0: any free port, -1: off)",
               "9000", 0, parse_http_port, format_http_port),
    ROW("log_path", "--log", TP_SET_STR, tp_mock_config, log_path, "FILE.jsonl", NULL, 1, 0, NULL, "Server",
        "log every request and response with its true send time", "mock.jsonl", TP_SETF_FILE),
    ROW("quiet", "-q|--quiet", TP_SET_FLAG, tp_mock_config, quiet, NULL, NULL, 1, 0, NULL, "Server",
        "no start-up line on stderr", NULL, 0),
};

#define ARRAY_N(a) (sizeof(a) / sizeof((a)[0]))

/* The parts of each command, bound to a tp_cli (NULL: for help texts of a
 * struct holding the defaults). */
static size_t profile_parts(tp_cli *cli, tp_settings_part *parts, unsigned char *given_cfg,
                            unsigned char *given_cli) {
  parts[0] = (tp_settings_part){config_rows, ARRAY_N(config_rows), &cli->cfg, "", given_cfg};
  parts[1] = (tp_settings_part){cli_rows, CLI_N, cli, "", given_cli};
  parts[2] = (tp_settings_part){mock_rows, ARRAY_N(mock_rows), &cli->mock, "--mock-", NULL};
  return 3;
}

static size_t mock_parts(tp_cli *cli, tp_settings_part *parts) {
  parts[0] = (tp_settings_part){mock_server_rows, ARRAY_N(mock_server_rows), &cli->mock, "", NULL};
  parts[1] = (tp_settings_part){mock_rows, ARRAY_N(mock_rows), &cli->mock, "", NULL};
  return 2;
}

/* Only the run's and the CLI's own rows: their keys are dotted, so they
 * never match a plain word of a message, where the mock's bare keys
 * ("seed") could. */
void tp_cli_flagify(const char *msg, char *out, size_t outlen) {
  tp_settings_part parts[2] = {{config_rows, ARRAY_N(config_rows), NULL, "", NULL},
                               {cli_rows, CLI_N, NULL, "", NULL}};
  tp_settings_flagify(parts, 2, msg, out, outlen);
}

/* ---- parsing ---------------------------------------------------------------- */

void tp_cli_init(tp_cli *cli) {
  memset(cli, 0, sizeof(*cli));
  tp_config_default(&cli->cfg);
  tp_mock_config_default(&cli->mock);
  tp_settings_defaults(cli_rows, CLI_N, cli);
}

void tp_cli_fini(tp_cli *cli) {
  if (cli->api_key) {
    explicit_bzero(cli->api_key, strlen(cli->api_key));
    free(cli->api_key);
    cli->api_key = NULL;
  }
}

static int usage(const char *sub, const char *msg) {
  fprintf(stderr, "tokperf %s: %s\ntry 'tokperf %s --help'\n", sub, msg, sub);
  return TP_EXIT_USAGE;
}

static int read_api_key(tp_cli *cli) {
  const char *path = cli->api_key_file;
  char msg[600];
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(msg, sizeof(msg), "--api-key-file '%s': %s", path, strerror(errno));
    return usage("profile", msg);
  }
  char line[4096];
  if (!fgets(line, sizeof(line), f)) line[0] = 0;
  fclose(f);
  line[strcspn(line, "\r\n")] = 0;
  if (!line[0]) {
    snprintf(msg, sizeof(msg), "--api-key-file '%s': the file's first line is empty; it should hold the API key",
             path);
    return usage("profile", msg);
  }
  cli->api_key = strdup(line);
  explicit_bzero(line, sizeof(line));
  return cli->api_key ? 0 : usage("profile", "out of memory");
}

/* GenAI-Perf's command is `genai-perf profile ...`: with the program name
 * swapped for `tokperf profile`, a leading "profile" remains, and is
 * taken as the subcommand it was. */
static int profile_positional(void *ud, const char *arg, char *err, size_t errlen) {
  int *n = ud;
  if ((*n)++ == 0 && strcmp(arg, "profile") == 0) return 0;
  /* GenAI-Perf's -m takes several models (LoRA adapters): tokperf one. */
  snprintf(err, errlen, "unexpected argument '%s' (an option takes one value: -m names one model per run, so run "
           "once per model; lists are written 1,4,8)", arg);
  return TP_EINVAL;
}

/* Whether the row with this key was on the command line. */
static bool was_given(const tp_setting *rows, size_t n, const unsigned char *given, const char *key) {
  for (size_t i = 0; i < n; i++)
    if (given[i] && strcmp(rows[i].key, key) == 0) return true;
  return false;
}

/* The settings of other tools' spellings, mapped onto tokperf's own. */
static int apply_other_tools(tp_cli *cli, const unsigned char *given_cfg, unsigned char *given) {
  tp_config *c = &cli->cfg;
  char msg[512];
  if (was_given(cli_rows, CLI_N, given, "compat.output_format")) {
    /* GenAI-Perf's older --output-format named the server's API. */
    switch (cli->output_format) {
      case 0: c->server.backend = TP_BACKEND_TENSORRTLLM; break;
      case 1: c->server.backend = TP_BACKEND_VLLM; break;
      case 2: c->server.service_kind = TP_SERVICE_OPENAI_CHAT; break;
      case 3: c->server.service_kind = TP_SERVICE_OPENAI_COMPLETIONS; break;
    }
  }
  if (was_given(cli_rows, CLI_N, given, "compat.prompt_source")) {
    if (cli->prompt_source == 2)
      return usage("profile", "--prompt-source dataset: tokperf downloads no datasets; save the prompts as JSONL "
                              "(one {\"text_input\": ...} per line) and give --input-file FILE");
    if (cli->prompt_source == 1 && !c->prompts.input_file)
      return usage("profile", "--prompt-source file needs --input-file FILE");
    if (cli->prompt_source == 0 && c->prompts.input_file)
      return usage("profile", "--prompt-source synthetic and --input-file exclude each other");
  }
  /* GenAI-Perf's --input-file payload:FILE is a trace of timed requests
   * (timestamp, input_length, output_length, text_input, hash_ids): what
   * --schedule replays; synthetic:NAMES makes rankings inputs. */
  const char *in = c->prompts.input_file;
  if (in && strncmp(in, "payload:", 8) == 0) {
    if (c->load.schedule_file)
      return usage("profile", "--input-file payload:FILE is GenAI-Perf's trace replay, as --schedule: give one of "
                              "them");
    c->load.schedule_file = in + 8;
    c->prompts.input_file = NULL;
    fprintf(stderr, "tokperf: note: --input-file %s is read as --schedule %s (docs/other-tools.md)\n", in, in + 8);
  } else if (in && strncmp(in, "synthetic:", 10) == 0) {
    snprintf(msg, sizeof(msg), "--input-file %s: GenAI-Perf's synthetic rankings inputs are not supported; give "
             "prompts as JSONL (--input-file FILE) or synthetic ones (--synthetic-input-tokens-mean N)", in);
    return usage("profile", msg);
  }
  if (cli->collect_metrics && !c->server.metrics_url) {
    /* perf_analyzer's default: Triton's metrics port on the server's host. */
    if (cli->use_mock) {
      c->server.metrics_url = "mock";
    } else {
      static char url[512];
      const char *h = c->server.url;
      const char *sep = strstr(h, "://");
      if (sep) h = sep + 3;
      size_t hl = strcspn(h, ":/");
      snprintf(url, sizeof(url), "http://%.*s:8002/metrics", (int)hl, h);
      c->server.metrics_url = url;
    }
  }
  /* --concurrency beside --request-rate is the cap on requests in flight
   * (GenAI-Perf and vLLM give both), never silently dropped. */
  if (given[CLI_CONCURRENCY] && cli->rates.n) {
    if (cli->concurrency.n != 1 || was_given(config_rows, ARRAY_N(config_rows), given_cfg, "load.max_concurrency")) {
      snprintf(msg, sizeof(msg), "--concurrency with --request-rate caps the requests in flight: give one value "
                                 "(or use --max-concurrency alone)");
      return usage("profile", msg);
    }
    c->load.max_concurrency = cli->concurrency.v[0];
    given[CLI_CONCURRENCY] = 0; /* not a sweep of concurrencies */
  }
  return 0;
}

/* The capacity search (docs/search.md), and perf_analyzer's spelling of
 * it: --binary-search over the --concurrency-range (or
 * --request-rate-range) under --latency-threshold, the bound on the
 * average latency.  Without --binary-search the threshold is a gate on
 * every level. */
static int map_search(tp_cli *cli, const unsigned char *given) {
  tp_config *c = &cli->cfg;
  if (was_given(cli_rows, CLI_N, given, "compat.latency_threshold")) {
    snprintf(cli->latency_slo, sizeof(cli->latency_slo), "latency.avg <= %gms", cli->latency_threshold_ms);
    tp_str_list *l = cli->binary_search ? &cli->slos : &cli->asserts;
    if (l->n >= TP_STR_LIST_MAX) return usage("profile", "--latency-threshold: too many --slo/--assert values");
    l->v[l->n++] = cli->latency_slo;
  } else if (cli->binary_search) {
    return usage("profile", "--binary-search needs --latency-threshold MS (perf_analyzer's bound on the average "
                            "latency); or give --search with --slo");
  }
  if (cli->binary_search) {
    if (c->load.search)
      return usage("profile", "--binary-search is perf_analyzer's --search: give one of them");
    bool rate = cli->rates.n > 0;
    c->load.search = rate ? TP_SEARCH_REQUEST_RATE : TP_SEARCH_CONCURRENCY;
    if (rate || given[CLI_CONCURRENCY]) {
      size_t n = rate ? cli->rates.n : cli->concurrency.n;
      double first = rate ? cli->rates.v[0] : cli->concurrency.v[0];
      double last = rate ? cli->rates.v[n - 1] : cli->concurrency.v[n - 1];
      if (!c->load.search_min) c->load.search_min = first < last ? first : last;
      if (!c->load.search_max) c->load.search_max = first < last ? last : first;
    }
  } else if (c->load.search) {
    if (cli->rates.n)
      return usage("profile", "--search chooses the request rates itself: give --search-min and --search-max "
                              "instead of --request-rate");
    if (given[CLI_CONCURRENCY]) {
      if (c->load.search != TP_SEARCH_REQUEST_RATE || cli->concurrency.n != 1)
        return usage("profile", "--search chooses the concurrencies itself: give --search-min and --search-max "
                                "instead of --concurrency (with --search request-rate, one --concurrency caps "
                                "the requests in flight)");
      c->load.max_concurrency = cli->concurrency.v[0];
    }
  }
  if (cli->slos.n && !c->load.search)
    return usage("profile", "--slo goes with --search; for a bound checked at every level, use --assert");
  c->load.slos = cli->slos.v;
  c->load.n_slos = cli->slos.n;
  return 0;
}

/* The endpoint types of GenAI-Perf and AIPerf that tokperf does not
 * measure: each refused with what it is and what to write instead. */
static int check_endpoint_type(const tp_cli *cli) {
  static const char *const names[] = {"embeddings", "rankings",    "image_retrieval",
                                      "nvclip",     "multimodal",  "huggingface_generate",
                                      "template",   "dynamic_grpc"};
  int t = cli->endpoint_type;
  if (t < 3 || t > 10) return 0;
  char msg[512];
  const char *n = names[t - 3];
  if (t <= 6)
    snprintf(msg, sizeof(msg),
             "--endpoint-type %s: tokperf measures generated tokens (chat, completions, Triton's "
             "generate); %s endpoints generate none and are not supported",
             n, n);
  else if (t == 7)
    snprintf(msg, sizeof(msg),
             "--endpoint-type multimodal: GenAI-Perf's images and audio in chat requests are not "
             "supported; for text, write --endpoint-type chat");
  else if (t == 8)
    snprintf(msg, sizeof(msg),
             "--endpoint-type huggingface_generate: TGI's own /generate API is not supported; "
             "TGI serves the OpenAI API too: write --endpoint-type chat -u http://HOST:PORT");
  else
    snprintf(msg, sizeof(msg),
             "--endpoint-type %s: GenAI-Perf's %s endpoint is not supported; tokperf speaks the "
             "OpenAI API (chat, completions), Triton (gRPC, generate) and the engines' gRPC "
             "(--service-kind vllm-grpc, sglang-grpc)",
             n, n);
  return usage("profile", msg);
}

/* Whether dir holds a file tokperf loads as a tokenizer. */
static bool has_tokenizer_file(const char *dir) {
  static const char *const names[] = {"tokenizer.json", "tokenizer.model"};
  for (size_t i = 0; i < ARRAY_N(names); i++) {
    char p[4096];
    if (snprintf(p, sizeof(p), "%s/%s", dir, names[i]) < (int)sizeof(p) && access(p, R_OK) == 0) return true;
  }
  return false;
}

/* AIPerf and vLLM count tokens with the model's own tokenizer when no
 * --tokenizer is given; so does tokperf when --model is a Hugging Face
 * name (ORG/NAME) whose tokenizer resolves offline: a local directory of
 * that name, else the cache (tp_tokenizer_find, which honours HF_HUB_CACHE
 * and HF_HOME).  It says which.  A model that does not resolve leaves
 * things as they were (GenAI-Perf's default below, or no tokenizer). */
static int model_tokenizer(tp_cli *cli, bool model_given) {
  tp_config *c = &cli->cfg;
  const char *m = c->server.model;
  if (c->prompts.tokenizer || !model_given || !m || !*m || m[0] == '/' || m[0] == '.') return 0;
  const char *slash = strchr(m, '/');
  if (!slash || slash == m || !slash[1] || strchr(slash + 1, '/')) return 0;
  char *found = NULL;
  char e[1024];
  if (tp_tokenizer_find(m, cli->tokenizer_revision, &found, e, sizeof(e)) == 0 && has_tokenizer_file(found)) {
    c->prompts.tokenizer = m;
    if (!cli->quiet)
      fprintf(stderr,
              "tokperf: note: no --tokenizer: tokens are counted with the tokenizer of --model %s, "
              "found in %s\n",
              m, found);
  }
  free(found);
  return 0;
}

int tp_cli_parse_profile(tp_cli *cli, int argc, char **argv) {
  tp_settings_part parts[3];
  unsigned char given_cfg[ARRAY_N(config_rows)], given[CLI_N];
  memset(given_cfg, 0, sizeof(given_cfg));
  memset(given, 0, sizeof(given));
  size_t np = profile_parts(cli, parts, given_cfg, given);
  char err[1024];
  bool help = false;
  int positionals = 0;
  /* GenAI-Perf hands the words after a lone "--" to perf_analyzer, whose
   * flags profile reads itself: the "--" is dropped, and they are read with
   * perf_analyzer's meanings. */
  char **av = malloc(((size_t)argc + 1) * sizeof(*av));
  if (!av) return usage("profile", "out of memory");
  int ac = 0, dashes = 0;
  for (int i = 0; i < argc; i++)
    if (strcmp(argv[i], "--") != 0 || dashes++) av[ac++] = argv[i];
  av[ac] = NULL;
  int prv = tp_settings_parse(parts, np, ac, av, profile_positional, &positionals, &help, err, sizeof(err));
  free(av);
  if (prv) return usage("profile", err);
  cli->help = help;
  tp_config *c = &cli->cfg;
  if (apply_other_tools(cli, given_cfg, given)) return TP_EXIT_USAGE;
#define GIVEN_CFG(key) was_given(config_rows, ARRAY_N(config_rows), given_cfg, key)
  for (size_t i = 0; i < cli->headers.n; i++)
    if (!strchr(cli->headers.v[i], ':')) {
      snprintf(err, sizeof(err), "--header '%s': expected 'Name: value'", cli->headers.v[i]);
      return usage("profile", err);
    }
  if (cli->quiet) c->output.progress = NULL;
  c->server.cumulative_text = cli->stream_text == 1;

  /* GenAI-Perf's spellings: --service-kind openai --endpoint-type chat|completions,
   * and --service-kind triton -i http (--endpoint-type generate).  AIPerf
   * has no --service-kind, and GenAI-Perf's own scripts often leave it out:
   * an OpenAI endpoint type alone names the OpenAI API. */
  bool ep_given = given[CLI_ENDPOINT_TYPE];
  if (ep_given && check_endpoint_type(cli)) return TP_EXIT_USAGE;
  if (ep_given && cli->endpoint_type != 2) {
    if (!GIVEN_CFG("server.service_kind")) {
      c->server.service_kind = TP_SERVICE_OPENAI_CHAT;
    } else if (c->server.service_kind != TP_SERVICE_OPENAI_CHAT &&
               c->server.service_kind != TP_SERVICE_OPENAI_COMPLETIONS) {
      char kind[64];
      tp_setting_format(tp_settings_find_key(config_rows, ARRAY_N(config_rows), "server.service_kind"), c,
                        kind, sizeof(kind));
      snprintf(err, sizeof(err),
               "--endpoint-type %s is an OpenAI API, and --service-kind %s is not one: write --service-kind "
               "openai, or leave --service-kind out",
               cli->endpoint_type == 1 ? "completions" : "chat", kind);
      return usage("profile", err);
    }
  }
  if (c->server.service_kind == TP_SERVICE_OPENAI_CHAT ||
      c->server.service_kind == TP_SERVICE_OPENAI_COMPLETIONS) {
    if (ep_given && cli->endpoint_type == 2)
      return usage("profile", "--endpoint-type generate goes with --service-kind triton -i http");
    if (ep_given)
      c->server.service_kind =
          cli->endpoint_type == 1 ? TP_SERVICE_OPENAI_COMPLETIONS : TP_SERVICE_OPENAI_CHAT;
    /* No -m: the server's first model (from /v1/models). */
    if (!GIVEN_CFG("server.model")) c->server.model = "";
  } else if (c->server.service_kind == TP_SERVICE_TRITON &&
             (cli->protocol == 1 || (ep_given && cli->endpoint_type == 2))) {
    c->server.service_kind = TP_SERVICE_TRITON_GENERATE;
  }

  /* Without -u, an HTTP API is looked for where GenAI-Perf and vLLM look:
   * port 8000 (Triton's HTTP port, vLLM's default). */
  if (!GIVEN_CFG("server.url") && c->server.service_kind != TP_SERVICE_TRITON)
    c->server.url = c->server.service_kind == TP_SERVICE_VLLM_GRPC     ? "localhost:50051"
                    : c->server.service_kind == TP_SERVICE_SGLANG_GRPC ? "localhost:30000"
                                                                       : "localhost:8000";
  /* The engine protocols name no model: -m is only the results' label. */
  if ((c->server.service_kind == TP_SERVICE_VLLM_GRPC || c->server.service_kind == TP_SERVICE_SGLANG_GRPC) &&
      !GIVEN_CFG("server.model"))
    c->server.model = "";
  if (cli->api_key_file && read_api_key(cli)) return TP_EXIT_USAGE;
  if (!cli->api_key) {
    const char *k = getenv("OPENAI_API_KEY");
    if (k && *k) cli->api_key = strdup(k);
  }
  c->server.api_key = cli->api_key;
  c->server.headers = cli->headers.v;
  c->server.n_headers = cli->headers.n;
  c->server.extra_inputs = cli->extra_inputs.v;
  c->server.n_extra_inputs = cli->extra_inputs.n;
  c->measure.asserts = cli->asserts.v;
  c->measure.n_asserts = cli->asserts.n;
  if (map_search(cli, given)) return TP_EXIT_USAGE;
  c->measure.n_asserts = cli->asserts.n; /* -l may have added one */
  /* An unset --max-error-rate means no limit (the library's -1). */
  if (was_given(cli_rows, CLI_N, given, "goals.max_error_rate"))
    c->measure.max_error_rate = cli->max_error_rate;
  if (given[CLI_CONCURRENCY]) {
    c->load.concurrency = cli->concurrency.v;
    c->load.n_concurrency = cli->concurrency.n;
  }
  if (cli->rates.n) {
    c->load.request_rates = cli->rates.v;
    c->load.n_request_rates = cli->rates.n;
  }
  if (model_tokenizer(cli, GIVEN_CFG("server.model"))) return TP_EXIT_USAGE;
  if (cli->in_means.n) {
    c->prompts.input_tokens_means = cli->in_means.v;
    c->prompts.n_input_tokens_means = cli->in_means.n;
    /* GenAI-Perf cuts synthetic prompts with its default tokenizer when none
     * is given: the same one, when the Hugging Face cache holds it. */
    static const char genai_default[] = "hf-internal-testing/llama-tokenizer";
    char *found = NULL;
    char e[512];
    if (!c->prompts.tokenizer && tp_tokenizer_find(genai_default, NULL, &found, e, sizeof(e)) == 0) {
      c->prompts.tokenizer = genai_default;
      if (!cli->quiet)
        fprintf(stderr, "tokperf: note: no --tokenizer: prompt lengths are counted with %s, GenAI-Perf's "
                        "default, found in the Hugging Face cache\n", genai_default);
    }
    free(found);
  }
  if (cli->out_means.n) {
    c->prompts.output_tokens_mean = cli->out_means.v[0];
    if (cli->out_means.n > 1) {
      c->prompts.output_tokens_means = cli->out_means.v;
      c->prompts.n_output_tokens_means = cli->out_means.n;
    }
  }

  /* The measurement mode follows from what was given: a duration, or any
   * stability-window option, or else a request count. */
  bool count_windows = (given[CLI_MEASURE_MODE] && cli->measure_mode == 1) ||
                       GIVEN_CFG("measure.measurement_request_count");
  bool windows = given[CLI_MEASURE_MODE] || count_windows || GIVEN_CFG("measure.measurement_interval_ms");
  if (GIVEN_CFG("measure.duration_ms")) {
    if (windows)
      return usage("profile", "--duration and the stability windows (--measurement-interval, --measurement-mode, "
                              "--measurement-request-count) exclude each other");
    c->measure.measure_mode = TP_MEASURE_DURATION;
  } else if (windows) {
    c->measure.measure_mode = count_windows ? TP_MEASURE_COUNT_WINDOWS : TP_MEASURE_TIME_WINDOWS;
  }
  /* perf_analyzer's and GenAI-Perf's -s and -r bound the stability windows,
   * which tokperf runs only when asked for: never dropped unsaid. */
  if (!windows)
    for (size_t i = 0; i < 2; i++) {
      static const char *const keys[] = {"measure.stability_percentage", "measure.max_trials"};
      if (GIVEN_CFG(keys[i]))
        fprintf(stderr, "tokperf: note: %s has no effect without the stability windows (--measurement-interval, "
                        "--measurement-mode or --measurement-request-count)\n",
                i == 0 ? "--stability-percentage" : "--max-trials");
    }
#undef GIVEN_CFG
  return 0;
}

int tp_cli_parse_mock(tp_cli *cli, int argc, char **argv) {
  tp_settings_part parts[2];
  size_t np = mock_parts(cli, parts);
  char err[1024];
  bool help = false;
  if (tp_settings_parse(parts, np, argc, argv, NULL, NULL, &help, err, sizeof(err))) return usage("mock", err);
  cli->help = help;
  return 0;
}

/* ---- help, man page, completions ------------------------------------------- */

static void print_exit_codes(FILE *out) {
  fprintf(out,
          "\nExit codes:\n"
          "  0    the run completed (failed requests are counted in the report, not fatal)\n"
          "  1    the run completed but a threshold failed\n"
          "  2    usage or input error: a bad option value, or a bad --input-file line (file:line named)\n"
          "  3    could not start: server unreachable, model missing or not ready or lacking an input,\n"
          "       tokenizer not loadable; or an output could not be written whole (a full disk: 'no space\n"
          "       left on DIR'); the results are on stdout and in every output that had room\n"
          "  130  interrupted (Ctrl-C, SIGTERM, SIGHUP); what was measured is reported, a level cut\n"
          "       short marked partial with the time it ran\n"
          "A level with over 10%% of its requests failed is said in one line on stderr (exit 0 unless\n"
          "--max-error-rate).\n");
}

void tp_cli_help_main(FILE *out) {
  fprintf(out,
          "tokperf %s: token-aware load generator for LLM inference servers\n\n"
          "Usage:\n"
          "  tokperf profile [OPTIONS]   benchmark a Triton (KServe v2 gRPC) or OpenAI-compatible server\n"
          "  tokperf mock [OPTIONS]      run the built-in mock server (Triton gRPC and OpenAI HTTP)\n"
          "  tokperf tokenize [OPTIONS]  count or list the tokens of each input line\n"
          "  tokperf compare A.json B.json [--fail-on RULE]... [--junit FILE]\n"
          "                              compare two runs' --json documents\n"
          "  tokperf vllm-bench [OPTIONS] vLLM's `bench serve` command line, with vLLM's meanings\n"
          "  tokperf sglang-bench [OPTIONS] SGLang's bench_serving command line, with SGLang's meanings\n"
          "  tokperf aiperf profile [OPTIONS]\n"
          "                              AIPerf's `profile` command line, with AIPerf's meanings and files\n"
          "  tokperf completion bash|zsh print a shell completion script\n"
          "  tokperf --version           print versions of tokperf and its libraries\n"
          "  tokperf --help              this help; 'tokperf profile --help' lists every option\n",
          tp_version());
  print_exit_codes(out);
  fprintf(out,
          "\nExamples:\n"
          "  tokperf profile --mock --concurrency 1,4,16,64\n"
          "  tokperf profile -u localhost:8001 -m ensemble --backend tensorrtllm \\\n"
          "      --concurrency 1,4,8 --input-file prompts.jsonl --tokenizer /models/llama2\n"
          "  tokperf mock --grpc-port 8001\n");
}

/* A tp_cli holding the defaults, for help texts. */
static tp_cli *defaults_cli(void) {
  static tp_cli d;
  tp_cli_init(&d);
  return &d;
}

void tp_cli_help_profile(FILE *out) {
  fprintf(out, "Usage: tokperf profile [OPTIONS]\n\n"
               "Sends prompts to a model at each concurrency level (or request rate), holding exactly that\n"
               "many requests in flight, and reports time to first token, inter-token latency, request\n"
               "latency, token counts and throughputs (definitions: docs/metrics.md). Durations take units:\n"
               "500ms, 30s, 2m; sizes 64k, 16M; fractions 0.05 or 5%%.\n\n"
               "GenAI-Perf's, perf_analyzer's and llm_perf.py's flags are taken with their meanings (where\n"
               "GenAI-Perf and vLLM differ, GenAI-Perf's); vLLM's `bench serve` flags, with vLLM's meanings:\n"
               "tokperf vllm-bench --help.\n\n");
  tp_settings_part parts[3];
  size_t np = profile_parts(defaults_cli(), parts, NULL, NULL);
  tp_settings_help(out, parts, np, 0);
  print_exit_codes(out);
  fprintf(out,
          "\nExamples:\n"
          "  tokperf profile --mock --concurrency 1,4,16,64 --json run.json\n"
          "  tokperf profile -u localhost:8001 -m ensemble --concurrency 1:64:x2 \\\n"
          "      --input-file prompts.jsonl --tokenizer /models/llama2/tokenizer.model\n"
          "  tokperf profile -u localhost:8001 -m vllm_model --backend vllm --concurrency 8 \\\n"
          "      --measurement-interval 10s --warmup-request-count 8\n");
}

void tp_cli_help_mock(FILE *out) {
  fprintf(out, "Usage: tokperf mock [OPTIONS]\n\n"
               "A KServe v2 gRPC server imitating Triton with a TensorRT-LLM 'ensemble' and a vLLM\n"
               "'vllm_model', and OpenAI-compatible HTTP endpoints: time to first token grows with prompt\n"
               "length and with prefills already running, time per token grows with running sequences, at\n"
               "most --max-batch sequences run at once. Stops on Ctrl-C.\n\n");
  tp_settings_part parts[2];
  size_t np = mock_parts(defaults_cli(), parts);
  tp_settings_help(out, parts, np, 0);
  fprintf(out, "\nExample:\n  tokperf mock --grpc-port 8001 --ttft-ms 50 --itl-ms 10 --output-tokens 32 --log mock.jsonl\n");
}

void tp_cli_man(FILE *out) {
  fprintf(out,
          ".TH TOKPERF 1 \"\" \"tokperf %s\" \"User Commands\"\n"
          ".SH NAME\ntokperf \\- token\\-aware load generator for LLM inference servers\n"
          ".SH SYNOPSIS\n.B tokperf profile\n[\\fIOPTIONS\\fR]\n.br\n.B tokperf mock\n[\\fIOPTIONS\\fR]\n.br\n"
          ".B tokperf tokenize\n\\-\\-tokenizer \\fIPATH\\fR [\\fIFILE\\fR]\n.br\n"
          ".B tokperf compare\n\\fIA.json\\fR \\fIB.json\\fR [\\-\\-fail\\-on \\fIRULE\\fR]...\n.br\n"
          ".B tokperf vllm\\-bench\n[\\fIOPTIONS\\fR]\n"
          ".SH DESCRIPTION\n"
          "tokperf sends prompts to a Triton Inference Server (KServe v2 gRPC) or an OpenAI\\-compatible\n"
          "server at a held concurrency or request rate, and reports time to first token, inter\\-token\n"
          "latency, request latency, input and output token counts and throughputs, goodput and\n"
          "percentiles. The metric definitions are in docs/metrics.md of the source.\n",
          tp_version());
  tp_settings_part parts[3];
  size_t np = profile_parts(defaults_cli(), parts, NULL, NULL);
  fprintf(out, ".SH \"PROFILE OPTIONS\"\n");
  tp_settings_man(out, parts, np);
  np = mock_parts(defaults_cli(), parts);
  fprintf(out, ".SH \"MOCK OPTIONS\"\n");
  tp_settings_man(out, parts, np);
  const struct {
    const char *title;
    tp_settings_part part;
  } others[] = {{"TOKENIZE OPTIONS", tp_cmd_tokenize_defaults()},
                {"COMPARE OPTIONS", tp_cmd_compare_defaults()},
                {"VLLM\\-BENCH OPTIONS", tp_cmd_vllm_bench_defaults()},
                {"SGLANG\\-BENCH OPTIONS", tp_cmd_sglang_bench_defaults()},
                {"AIPERF PROFILE OPTIONS", tp_cmd_aiperf_defaults()}};
  for (size_t i = 0; i < ARRAY_N(others); i++) {
    fprintf(out, ".SH \"%s\"\n", others[i].title);
    tp_settings_man(out, &others[i].part, 1);
  }
  fprintf(out,
          ".SH \"EXIT STATUS\"\n.TP\n0\nthe run completed (failed requests are counted, not fatal)\n"
          ".TP\n1\na threshold (\\-\\-assert, \\-\\-max\\-error\\-rate) failed\n"
          ".TP\n2\nusage or input error\n.TP\n3\ncould not start (server, model or tokenizer), or an output "
          "could not be written whole (a full disk: no space left on DIR)\n"
          ".TP\n130\ninterrupted (SIGINT, SIGTERM, SIGHUP); what was measured is reported, a level cut short "
          "marked partial\n"
          ".SH EXAMPLES\n.nf\ntokperf profile \\-\\-mock \\-\\-concurrency 1,4,16,64\n"
          "tokperf profile \\-u localhost:8001 \\-m ensemble \\-\\-concurrency 1:64:x2 \\-\\-tokenizer /models/llama2\n"
          ".fi\n");
}

int tp_cli_completion(FILE *out, const char *shell) {
  tp_settings_part pp[3], mp[2];
  size_t npp = profile_parts(defaults_cli(), pp, NULL, NULL);
  size_t nmp = mock_parts(defaults_cli(), mp);
  tp_settings_part tp = tp_cmd_tokenize_defaults(), cp = tp_cmd_compare_defaults(),
                   vp = tp_cmd_vllm_bench_defaults(), sp = tp_cmd_sglang_bench_defaults(),
                   ap = tp_cmd_aiperf_defaults();
  const tp_settings_command cmds[] = {{"profile", pp, npp}, {"mock", mp, nmp},     {"tokenize", &tp, 1},
                                      {"compare", &cp, 1},  {"vllm-bench", &vp, 1}, {"sglang-bench", &sp, 1},
                                      {"aiperf", &ap, 1},
                                      {"completion", NULL, 0}};
  if (tp_settings_completion(out, shell, "tokperf", cmds, ARRAY_N(cmds))) {
    fprintf(stderr, "tokperf completion: unknown shell '%s' (expected bash or zsh)\n", shell ? shell : "");
    return TP_EXIT_USAGE;
  }
  return TP_EXIT_OK;
}

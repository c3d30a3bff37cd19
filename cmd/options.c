#include "options.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tokperf/tokperf.h"

/* The one table: every option of a subcommand with its aliases, argument
 * name, help text and the default shown in --help (taken from the real
 * defaults where it is a number, see default_text). */
typedef enum opt_id {
  O_MODEL, O_MODEL_VERSION, O_URL, O_PROTOCOL, O_SERVICE_KIND, O_BACKEND, O_STREAMING,
  O_NO_STREAMING, O_STREAM_TEXT, O_CONCURRENCY, O_REQUEST_COUNT, O_WARMUP, O_INTERVAL, O_INPUT_FILE,
  O_TOKENIZER, O_TOK_SPECIAL, O_SEED, O_OUT_TOKENS, O_OUT_DET, O_SYN_WORDS, O_NUM_PROMPTS, O_CONNECTIONS,
  O_TIMEOUT, O_SKIP_PREFLIGHT, O_JSON, O_RECORDS, O_MOCK, O_MOCK_LOG, O_QUIET, O_HELP,
  O_RATE, O_ARRIVAL, O_BURSTINESS, O_MAX_CONC, O_DURATION, O_WARMUP_DURATION, O_MEASURE_MODE,
  O_MEASURE_COUNT, O_STABILITY, O_MAX_TRIALS, O_IN_MEAN, O_IN_STDDEV, O_OUT_STDDEV, O_SCHEDULE,
  O_SPEEDUP, O_PREFIX_BLOCK, O_GOODPUT, O_ASSERT, O_MAX_ERROR_RATE, O_NO_SERVER_STATS, O_CACHE_BUST, O_PREFIX_TOKENS, O_NUM_PREFIXES, O_MAX_RESP_BYTES, O_MAX_OUT_TOKENS, O_GRACE, O_ARTIFACT_DIR, O_PROFILE_EXPORT, O_NO_ARTIFACTS,
  O_NO_HTML, O_FORMAT, O_METRICS_URL, O_METRICS_INTERVAL, O_ENDPOINT_TYPE, O_ENDPOINT, O_API_KEY_FILE, O_HEADER, O_EXTRA_INPUTS, O_CA_FILE,
  O_CERT, O_KEY, O_INSECURE, O_HTTP1, O_NO_USAGE, O_MPI_TIMEOUT,
  /* mock settings (prefixed --mock- under profile) */
  O_M_HOST, O_M_PORT, O_M_TTFT, O_M_PREFILL_TOK, O_M_PREFILL_Q, O_M_ITL, O_M_ITL_SEQ,
  O_M_BATCH, O_M_OUT, O_M_EOS, O_M_SEED, O_M_LOG, O_M_HTTP_PORT, O_M_DIALECT, O_M_FAULT, O_M_FAULT_RATE,
  O_M_FAULT_AFTER, O_M_REFUSE, O_M_REFUSE_MS, O_M_GOAWAY, O_M_PREFIX, O_M_PREFIX_BLOCK, O_M_PREFIX_BLOCKS, O_M_KEEPALIVE,
  O_M_CLOSE_AFTER_STREAM, O_M_IDLE_CLOSE
} opt_id;

typedef struct optdef {
  opt_id id;
  const char *names; /* "-m|--model" */
  const char *arg;   /* NULL for a flag */
  const char *help;
  const char *dflt;  /* default shown in help, or NULL */
} optdef;

static const optdef profile_opts[] = {
  {O_MODEL, "-m|--model", "NAME", "model to benchmark", "ensemble"},
  {O_MODEL_VERSION, "--model-version", "VERSION", "model version (empty: the server's policy)", ""},
  {O_URL, "-u|--url", "HOST:PORT", "Triton gRPC endpoint (grpc:// prefix accepted)", "localhost:8001"},
  {O_PROTOCOL, "-i|--protocol", "grpc|http", "Triton protocol: gRPC streaming, or HTTP generate", "grpc"},
  {O_SERVICE_KIND, "--service-kind", "triton|openai", "kind of server (openai: any OpenAI-compatible API)", "triton"},
  {O_ENDPOINT_TYPE, "--endpoint-type", "chat|completions|generate",
   "openai: /v1/chat/completions or /v1/completions; triton -i http: generate", "chat"},
  {O_ENDPOINT, "--endpoint", "PATH", "request path (or full URL) instead of the API's own", NULL},
  {O_API_KEY_FILE, "--api-key-file", "FILE",
   "file whose first line is the API key (else OPENAI_API_KEY); sent as a bearer token, never shown", NULL},
  {O_HEADER, "-H|--header", "'NAME: VALUE'", "extra request header, repeatable (gRPC metadata too)", NULL},
  {O_EXTRA_INPUTS, "--extra-inputs", "NAME:VALUE|JSON", "extra request body field(s) for HTTP APIs, repeatable",
   NULL},
  {O_CA_FILE, "--ca-file", "FILE", "PEM CA certificates to verify the server with (https, grpcs)", NULL},
  {O_CERT, "--cert", "FILE", "client certificate (PEM)", NULL},
  {O_KEY, "--key", "FILE", "client certificate key (PEM)", NULL},
  {O_INSECURE, "--insecure", NULL, "do not verify the server's certificate or host name", NULL},
  {O_HTTP1, "--http1.1", NULL, "HTTP APIs: do not offer HTTP/2", NULL},
  {O_NO_USAGE, "--no-usage", NULL, "openai: do not ask for usage in the stream (stream_options)", NULL},
  {O_BACKEND, "--backend", "tensorrtllm|vllm", "tensor layout of the model's inputs", "tensorrtllm"},
  {O_STREAMING, "--streaming", NULL, "stream tokens with ModelStreamInfer (the default)", NULL},
  {O_NO_STREAMING, "--no-streaming", NULL, "one unary ModelInfer answer per request", NULL},
  {O_STREAM_TEXT, "--streaming-text", "delta|cumulative",
   "each streamed response holds new text only, or all text so far (vLLM before r24.03)", "delta"},
  {O_CONCURRENCY, "--concurrency|--concurrency-range", "LIST",
   "requests in flight per level: 1,4,8 or a range 4:32:4 or 1:64:x2", "1"},
  {O_RATE, "--request-rate", "LIST",
   "open loop: requests/s per level, e.g. 10,50,100 or 100:1000:100 (instead of --concurrency)", NULL},
  {O_ARRIVAL, "--arrival", "constant|poisson|gamma", "arrival process in rate mode", "constant"},
  {O_BURSTINESS, "--burstiness", "K", "gamma shape for --arrival gamma (1 is Poisson, below 1 burstier)", "1"},
  {O_MAX_CONC, "--max-concurrency", "N", "rate mode: cap on requests in flight (waiting shows as send lag)", NULL},
  {O_SCHEDULE, "--schedule", "FILE.jsonl",
   "replay a trace: timestamp (ms) and a prompt or input_length/output_length, optional hash_ids", NULL},
  {O_SPEEDUP, "--replay-speedup", "X", "play --schedule X times faster", "1"},
  {O_PREFIX_BLOCK, "--prefix-block-tokens", "N", "tokens per hash_ids block in --schedule", "512"},
  {O_REQUEST_COUNT, "--request-count|--num-prompts-per-level", "N",
   "measured requests per level (default: 4 per slot or 4 s of the rate, at least 16)", NULL},
  {O_DURATION, "--duration", "DURATION", "measure the requests planned within this time per level", NULL},
  {O_WARMUP, "--warmup-request-count", "N", "requests per level sent first and left out of the statistics", "0"},
  {O_WARMUP_DURATION, "--warmup-duration", "DURATION", "warm up for this long per level instead of a count", NULL},
  {O_INTERVAL, "--measurement-interval", "DURATION",
   "perf_analyzer stability mode: windows this long until the last three agree (bare number: ms)", NULL},
  {O_MEASURE_MODE, "--measurement-mode", "time_windows|count_windows", "stability windows by time or by count",
   "time_windows"},
  {O_MEASURE_COUNT, "--measurement-request-count", "N", "requests per window in count_windows mode", "50"},
  {O_STABILITY, "--stability-percentage", "P", "windows agree when throughput and latency lie within P%", "10"},
  {O_MAX_TRIALS, "--max-trials", "N", "stop after this many windows, stable or not", "10"},
  {O_GOODPUT, "--goodput", "BOUNDS", "goodput bounds in ms, e.g. 'ttft:200 itl:25 latency:5000'", NULL},
  {O_ASSERT, "--assert", "EXPR",
   "CI gate, repeatable: 'ttft.p99 <= 250ms', 'output_token_throughput >= 1000', 'error_rate <= 1%'", NULL},
  {O_MAX_ERROR_RATE, "--max-error-rate", "R", "fail the run (exit 1) when a level's error rate exceeds R (or R%)",
   NULL},
  {O_INPUT_FILE, "--input-file|--input-data", "FILE.jsonl",
   "prompts, one JSON object per line: text_input|input|prompt|text, optional output, max_tokens", NULL},
  {O_TOKENIZER, "--tokenizer|--tokenizer-path", "PATH",
   "a tokenizer.json, a sentencepiece tokenizer.model, or a model directory holding one; without it "
   "token metrics are n/a", NULL},
  {O_TOK_SPECIAL, "--tokenizer-add-special-tokens", NULL,
   "count input tokens with the special tokens the tokenizer adds (BOS...), as most servers count prompts; "
   "output tokens never include them", "off"},
  {O_SEED, "--random-seed", "N", "seed for synthetic prompts", "0"},
  {O_OUT_TOKENS, "--output-tokens-mean|--max-tokens", "LIST",
   "max_tokens asked of the server; a list sweeps it (default: the line's max_tokens, else 128)", NULL},
  {O_OUT_STDDEV, "--output-tokens-stddev", "N", "draw each request's max_tokens around the mean", "0"},
  {O_IN_MEAN, "--synthetic-input-tokens-mean", "LIST",
   "synthetic prompts of exactly this many tokens (needs --tokenizer); a list sweeps it", NULL},
  {O_IN_STDDEV, "--synthetic-input-tokens-stddev", "N", "spread of the synthetic prompt lengths", "0"},
  {O_OUT_DET, "--output-tokens-mean-deterministic", NULL,
   "also ask the server not to stop early (min_length/min_tokens, vLLM ignore_eos)", NULL},
  {O_SYN_WORDS, "--synthetic-input-words", "N", "words per synthetic prompt (no --input-file)", "64"},
  {O_NUM_PROMPTS, "--num-prompts", "N", "number of synthetic prompts", "100"},
  {O_CONNECTIONS, "--connections", "N", "HTTP/2 connections (default: one per 128 concurrent streams)", NULL},
  {O_TIMEOUT, "--request-timeout", "DURATION", "fail a request after this long; sent as grpc-timeout", NULL},
  {O_MAX_RESP_BYTES, "--max-response-bytes", "SIZE",
   "cancel (and count as failed) an answer whose text passes this size", "64M"},
  {O_MAX_OUT_TOKENS, "--max-output-tokens", "N",
   "cancel (and count as failed) an answer streamed in more than N text responses", NULL},
  {O_GRACE, "--grace-period", "DURATION", "after Ctrl-C, how long in-flight requests may finish", "5s"},
  {O_MPI_TIMEOUT, "--mpi-timeout", "DURATION",
   "under mpirun: how long rank 0 waits on a silent rank before it reports it failed (docs/scale-out.md)", "20s"},
  {O_SKIP_PREFLIGHT, "--skip-preflight", NULL,
   "skip the ServerLive/ModelReady/ModelMetadata checks (for replay servers)", NULL},
  {O_CACHE_BUST, "--cache-bust", NULL,
   "start every prompt with a unique marker so no KV-cache prefix can be reused (docs/kv-cache.md)", NULL},
  {O_PREFIX_TOKENS, "--prefix-tokens", "N", "put a shared prefix of exactly N tokens before every prompt "
   "(needs --tokenizer)", NULL},
  {O_NUM_PREFIXES, "--num-prefixes", "K", "how many different shared prefixes, used in turn", "1"},
  {O_METRICS_URL, "--metrics-url", "URL",
   "scrape Prometheus metrics during each level (Triton: http://HOST:8002/metrics; with --mock: mock)", NULL},
  {O_METRICS_INTERVAL, "--metrics-interval", "DURATION", "time between scrapes", "1s"},
  {O_NO_SERVER_STATS, "--no-server-stats", NULL,
   "do not read Triton's ModelStatistics before and after each level", NULL},
  {O_JSON, "--json", "FILE", "write every figure, with units, and the configuration as JSON", NULL},
  {O_RECORDS, "--records", "FILE.jsonl",
   "one JSON line per request, flushed as each ends (default: records.jsonl in the artifact dir)", NULL},
  {O_ARTIFACT_DIR, "--artifact-dir", "DIR",
   "profile export, GenAI-Perf summaries, records, responses, report.html "
   "(default: artifacts/MODEL-triton-BACKEND-MODE)", NULL},
  {O_PROFILE_EXPORT, "--profile-export-file", "FILE",
   "perf_analyzer profile export name; a bare name goes in the artifact dir", "profile_export.json"},
  {O_NO_ARTIFACTS, "--no-artifacts", NULL, "write no artifact directory", NULL},
  {O_NO_HTML, "--no-html", NULL, "leave report.html out of the artifacts", NULL},
  {O_FORMAT, "--format", "text|json", "what stdout carries: the tables, or the whole JSON document", "text"},
  {O_MOCK, "--mock", NULL, "start the built-in mock server in-process and benchmark it", NULL},
  {O_MOCK_LOG, "--mock-log", "FILE.jsonl", "with --mock: the mock's log of true send times", NULL},
  {O_M_TTFT, "--mock-ttft-ms", "MS", "with --mock: base time to first token", "20"},
  {O_M_PREFILL_TOK, "--mock-prefill-us-per-token", "US", "with --mock: prefill time per prompt token", "20"},
  {O_M_PREFILL_Q, "--mock-prefill-queue-ms", "MS", "with --mock: extra TTFT per prefill already running", "2"},
  {O_M_ITL, "--mock-itl-ms", "MS", "with --mock: base time per output token", "8"},
  {O_M_ITL_SEQ, "--mock-itl-us-per-seq", "US", "with --mock: extra time per token per running sequence", "20"},
  {O_M_BATCH, "--mock-max-batch", "N", "with --mock: sequences decoded at once; more queue", "256"},
  {O_M_OUT, "--mock-output-tokens", "N", "with --mock: fixed output length (0: the request's max_tokens)", "0"},
  {O_M_EOS, "--mock-eos-prob", "P", "with --mock: per-token end-of-sequence probability", "0"},
  {O_M_SEED, "--mock-seed", "N", "with --mock: seed of the mock's text and end-of-sequence draws", "0"},
  {O_M_FAULT, "--mock-fault", "KIND[:ARGS]", "with --mock: inject a fault (see tokperf mock --help)", NULL},
  {O_M_FAULT_RATE, "--mock-fault-rate", "P", "with --mock: fraction of requests faulted (seeded draw)", "1"},
  {O_M_FAULT_AFTER, "--mock-fault-after-tokens", "N", "with --mock: the fault replaces token N (0: at arrival)", "0"},
  {O_M_REFUSE, "--mock-refuse-connections", "N", "with --mock: reset the first N connections", "0"},
  {O_M_GOAWAY, "--mock-goaway-after-streams", "N", "with --mock: GOAWAY after N requests per connection", "0"},
  {O_M_CLOSE_AFTER_STREAM, "--mock-close-after-stream", NULL,
   "with --mock: close the HTTP connection after every streamed answer although it said keep-alive", NULL},
  {O_M_IDLE_CLOSE, "--mock-idle-close-ms", "MS", "with --mock: close connections idle this long (0: never)", "0"},
  {O_M_PREFIX, "--mock-prefix-cache", NULL, "with --mock: reuse cached prompt prefixes (shorter TTFT on hits)", NULL},
  {O_M_DIALECT, "--mock-http-dialect", "vllm|llamacpp|tgi|trtllm-serve", "with --mock: SSE stream dialect", "vllm"},
  {O_QUIET, "-q|--quiet", NULL, "no progress lines on stderr", NULL},
  {O_HELP, "-h|--help", NULL, "show this help", NULL},
};

static const optdef mock_opts[] = {
  {O_M_HOST, "--host", "ADDR", "address to listen on", "127.0.0.1"},
  {O_M_PORT, "--grpc-port", "PORT", "gRPC port (0: any free port)", "8001"},
  {O_M_TTFT, "--ttft-ms", "MS", "base time to first token", "20"},
  {O_M_PREFILL_TOK, "--prefill-us-per-token", "US", "prefill time per prompt token (words count as tokens)", "20"},
  {O_M_PREFILL_Q, "--prefill-queue-ms", "MS", "extra time to first token per prefill already running", "2"},
  {O_M_ITL, "--itl-ms", "MS", "base time per output token", "8"},
  {O_M_ITL_SEQ, "--itl-us-per-seq", "US", "extra time per token per running sequence", "20"},
  {O_M_BATCH, "--max-batch", "N", "sequences decoded at once; more wait in a queue", "256"},
  {O_M_OUT, "--output-tokens", "N", "fixed output length (0: the request's max_tokens, default 128)", "0"},
  {O_M_EOS, "--eos-prob", "P", "per-token end-of-sequence probability", "0"},
  {O_M_SEED, "--seed", "N", "seed of the generated text and end-of-sequence draws", "0"},
  {O_M_LOG, "--log", "FILE.jsonl", "log every request and response with its true send time", NULL},
  {O_M_HTTP_PORT, "--http-port", "PORT", "HTTP port: OpenAI-compatible and Triton generate endpoints, /metrics "
   "(0: any free port, -1: off)", "8000"},
  {O_M_DIALECT, "--http-dialect", "vllm|llamacpp|tgi|trtllm-serve", "SSE stream dialect of the OpenAI endpoints", "vllm"},
  {O_M_KEEPALIVE, "--sse-keepalive-ms", "MS", "SSE keep-alive comment interval (-1: the dialect's own)", "-1"},
  {O_M_FAULT, "--fault", "KIND[:ARGS]",
   "inject a fault: rst_stream, grpc_status:CODE[:MSG], trailers_only:CODE[:MSG], http_status:CODE, "
   "inband_error[:MSG], stall, trickle, malformed, oversize, invalid_utf8, endless, close_conn, goaway; "
   "mixed (every kind) or a list KIND,KIND,... (each faulted request draws one) "
   "(per request too: request parameter or JSON field tokperf_fault)", NULL},
  {O_M_FAULT_RATE, "--fault-rate", "P", "fraction of requests faulted (seeded draw)", "1"},
  {O_M_FAULT_AFTER, "--fault-after-tokens", "N", "the fault takes the place of token N (0: at arrival)", "0"},
  {O_M_REFUSE, "--refuse-connections", "N", "reset the first N connections accepted", "0"},
  {O_M_REFUSE_MS, "--refuse-connections-ms", "MS", "do not listen for this long after start", "0"},
  {O_M_GOAWAY, "--goaway-after-streams", "N", "per connection: GOAWAY after N requests", "0"},
  {O_M_CLOSE_AFTER_STREAM, "--close-after-stream", NULL,
   "HTTP: close the connection after every streamed answer although it said keep-alive (llama.cpp's server)",
   NULL},
  {O_M_IDLE_CLOSE, "--idle-close-ms", "MS",
   "close connections with no request in progress for this long (gRPC: GOAWAY first; 0: never)", "0"},
  {O_M_PREFIX, "--prefix-cache", NULL, "cache prompt prefixes: the cached part skips prefill time", NULL},
  {O_M_PREFIX_BLOCK, "--prefix-cache-block-words", "N", "prefix cache block size in words", "16"},
  {O_M_PREFIX_BLOCKS, "--prefix-cache-blocks", "N", "prefix cache capacity in blocks", "8192"},
  {O_QUIET, "-q|--quiet", NULL, "no start-up line on stderr", NULL},
  {O_HELP, "-h|--help", NULL, "show this help", NULL},
};

void tp_cli_init(tp_cli *cli) {
  memset(cli, 0, sizeof(*cli));
  tp_config_default(&cli->cfg);
  tp_mock_config_default(&cli->mock);
}

void tp_cli_fini(tp_cli *cli) {
  free(cli->headers);
  free(cli->extra_inputs);
  if (cli->api_key) {
    explicit_bzero(cli->api_key, strlen(cli->api_key));
    free(cli->api_key);
  }
  free(cli->concurrency);
  free(cli->rates);
  free(cli->in_means);
  free(cli->out_means);
  free(cli->asserts);
}

static int usage_error(const char *opt, const char *val, const char *what) {
  if (val)
    fprintf(stderr, "tokperf: %s '%s': %s\ntry 'tokperf profile --help'\n", opt, val, what);
  else
    fprintf(stderr, "tokperf: %s: %s\ntry 'tokperf --help'\n", opt, what);
  return TP_EXIT_USAGE;
}

static int get_u32(const char *opt, const char *v, uint32_t *out, uint64_t max) {
  uint64_t x;
  char e[200];
  if (tp_parse_count(v, &x, e, sizeof(e))) return usage_error(opt, v, e);
  if (x > max) {
    snprintf(e, sizeof(e), "must be at most %" PRIu64, max);
    return usage_error(opt, v, e);
  }
  *out = (uint32_t)x;
  return 0;
}

static int get_u64(const char *opt, const char *v, uint64_t *out) {
  char e[200];
  if (tp_parse_count(v, out, e, sizeof(e))) return usage_error(opt, v, e);
  return 0;
}

static int get_double(const char *opt, const char *v, double *out) {
  char e[200];
  if (tp_parse_double(v, out, e, sizeof(e))) return usage_error(opt, v, e);
  return 0;
}

static int get_ms(const char *opt, const char *v, uint64_t *out_ms) {
  uint64_t ns;
  char e[200];
  if (tp_parse_duration_ns(v, 1000000ULL, &ns, e, sizeof(e))) return usage_error(opt, v, e);
  if (ns == 0) return usage_error(opt, v, "must be above zero");
  *out_ms = (ns + 999999) / 1000000;
  return 0;
}

/* Rates: a list or range of whole numbers ("10,50,100", "100:1000:100"),
 * or a comma-separated list of decimals ("0.5,1.5"). */
static int parse_rates(const char *v, double **out, size_t *n, char *e, size_t elen) {
  uint32_t *ints = NULL;
  size_t ni = 0;
  if (tp_parse_uint_list(v, &ints, &ni, 1000, e, elen) == 0) {
    *out = malloc(ni * sizeof(double));
    if (!*out) {
      free(ints);
      return -1;
    }
    for (size_t i = 0; i < ni; i++) (*out)[i] = ints[i];
    *n = ni;
    free(ints);
    return 0;
  }
  size_t cap = 1;
  for (const char *p = v; *p; p++) cap += *p == ',';
  *out = calloc(cap, sizeof(double));
  if (!*out) return -1;
  *n = 0;
  char buf[64];
  const char *p = v;
  while (1) {
    const char *comma = strchr(p, ',');
    size_t l = comma ? (size_t)(comma - p) : strlen(p);
    if (l == 0 || l >= sizeof(buf)) goto bad;
    memcpy(buf, p, l);
    buf[l] = 0;
    if (tp_parse_double(buf, &(*out)[*n], e, elen) || !((*out)[*n] > 0)) goto bad;
    (*n)++;
    if (!comma) break;
    p = comma + 1;
  }
  return 0;
bad:
  snprintf(e, elen, "expected requests per second above 0: a list like 10,50,100 or 0.5,2.5, or a range "
           "like 100:1000:100");
  free(*out);
  *out = NULL;
  return -1;
}

/* Sizes: a count with k/K (1024), M (1024^2) or G (1024^3). */
static int parse_size(const char *v, uint64_t *out) {
  char *end;
  unsigned long long x = strtoull(v, &end, 10);
  if (end == v || v[0] == '-') return -1;
  uint64_t mul = 1;
  if (*end == 'k' || *end == 'K') mul = 1024, end++;
  else if (*end == 'M') mul = 1024 * 1024, end++;
  else if (*end == 'G') mul = 1024ULL * 1024 * 1024, end++;
  if (*end == 'B' || *end == 'b') end++;
  if (*end || x > UINT64_MAX / mul) return -1;
  *out = x * mul;
  return 0;
}

/* "ttft:200 itl:25 latency:5000" (spaces or commas between bounds, ms). */
static int parse_goodput(tp_config *c, const char *name, const char *v) {
  char buf[256];
  snprintf(buf, sizeof(buf), "%s", v);
  c->goodput_ttft_ms = c->goodput_itl_ms = c->goodput_latency_ms = 0;
  int n = 0;
  for (char *save = NULL, *tok = strtok_r(buf, " ,", &save); tok; tok = strtok_r(NULL, " ,", &save)) {
    char *colon = strchr(tok, ':');
    if (!colon) return usage_error(name, v, "expected METRIC:MS pairs: ttft:200 itl:25 latency:5000");
    *colon = 0;
    uint64_t ns;
    char e[160];
    if (tp_parse_duration_ns(colon + 1, 1000000ULL, &ns, e, sizeof(e)) || ns == 0)
      return usage_error(name, v, "each bound needs a positive number of milliseconds (or a unit: 2s)");
    double ms = (double)ns / 1e6;
    if (strcmp(tok, "ttft") == 0) c->goodput_ttft_ms = ms;
    else if (strcmp(tok, "itl") == 0) c->goodput_itl_ms = ms;
    else if (strcmp(tok, "latency") == 0 || strcmp(tok, "e2e") == 0) c->goodput_latency_ms = ms;
    else return usage_error(name, v, "bounds are ttft, itl and latency");
    n++;
  }
  if (!n) return usage_error(name, v, "expected METRIC:MS pairs: ttft:200 itl:25 latency:5000");
  return 0;
}

/* Finds the option whose name list holds `name` exactly. */
static const optdef *find_opt(const optdef *tab, size_t n, const char *name, size_t len) {
  for (size_t i = 0; i < n; i++) {
    const char *p = tab[i].names;
    while (*p) {
      const char *bar = strchr(p, '|');
      size_t l = bar ? (size_t)(bar - p) : strlen(p);
      if (l == len && memcmp(p, name, len) == 0) return &tab[i];
      if (!bar) break;
      p = bar + 1;
    }
  }
  return NULL;
}

static int apply(tp_cli *cli, const optdef *o, const char *name, const char *v) {
  tp_config *c = &cli->cfg;
  tp_mock_config *m = &cli->mock;
  char e[256];
  uint64_t u64;
  switch (o->id) {
    case O_MODEL:
      c->model = v;
      cli->model_given = 1;
      break;
    case O_MODEL_VERSION: c->model_version = v; break;
    case O_URL: c->url = v; break;
    case O_PROTOCOL:
      if (strcmp(v, "grpc") == 0) cli->http_protocol = 0;
      else if (strcmp(v, "http") == 0) cli->http_protocol = 1;
      else return usage_error(name, v, "expected grpc or http");
      break;
    case O_SERVICE_KIND:
      if (strcmp(v, "triton") == 0) c->service_kind = TP_SERVICE_TRITON;
      else if (strcmp(v, "openai") == 0 || strcmp(v, "openai-chat") == 0) c->service_kind = TP_SERVICE_OPENAI_CHAT;
      else if (strcmp(v, "openai-completions") == 0) c->service_kind = TP_SERVICE_OPENAI_COMPLETIONS;
      else if (strcmp(v, "triton-generate") == 0) c->service_kind = TP_SERVICE_TRITON_GENERATE;
      else return usage_error(name, v, "expected triton or openai");
      break;
    case O_ENDPOINT_TYPE:
      if (strcmp(v, "chat") == 0) cli->endpoint_type = 1;
      else if (strcmp(v, "completions") == 0) cli->endpoint_type = 2;
      else if (strcmp(v, "generate") == 0) cli->endpoint_type = 3;
      else return usage_error(name, v, "expected chat, completions or generate");
      break;
    case O_ENDPOINT: c->endpoint = v; break;
    case O_API_KEY_FILE: {
      FILE *f = fopen(v, "r");
      if (!f) return usage_error(name, v, strerror(errno));
      char line[4096];
      if (!fgets(line, sizeof(line), f)) line[0] = 0;
      fclose(f);
      line[strcspn(line, "\r\n")] = 0;
      if (!line[0]) return usage_error(name, v, "the file's first line is empty; it should hold the API key");
      free(cli->api_key);
      cli->api_key = strdup(line);
      explicit_bzero(line, sizeof(line));
      break;
    }
    case O_HEADER:
    case O_EXTRA_INPUTS: {
      if (o->id == O_HEADER && !strchr(v, ':')) return usage_error(name, v, "expected 'Name: value'");
      const char ***list = o->id == O_HEADER ? &cli->headers : &cli->extra_inputs;
      size_t *n = o->id == O_HEADER ? &cli->n_headers : &cli->n_extra_inputs;
      const char **a = realloc(*list, (*n + 1) * sizeof(*a));
      if (!a) return usage_error(name, v, "out of memory");
      a[(*n)++] = v;
      *list = a;
      break;
    }
    case O_CA_FILE: c->ca_file = v; break;
    case O_CERT: c->cert_file = v; break;
    case O_KEY: c->key_file = v; break;
    case O_INSECURE: c->insecure = true; break;
    case O_HTTP1: c->http1_only = true; break;
    case O_NO_USAGE: c->no_usage = true; break;
    case O_BACKEND:
      if (strcmp(v, "tensorrtllm") == 0 || strcmp(v, "trtllm") == 0)
        c->backend = TP_BACKEND_TENSORRTLLM;
      else if (strcmp(v, "vllm") == 0)
        c->backend = TP_BACKEND_VLLM;
      else
        return usage_error(name, v, "expected tensorrtllm or vllm");
      break;
    case O_STREAMING: c->streaming = true; break;
    case O_NO_STREAMING: c->streaming = false; break;
    case O_STREAM_TEXT:
      if (strcmp(v, "delta") == 0)
        c->cumulative_text = false;
      else if (strcmp(v, "cumulative") == 0)
        c->cumulative_text = true;
      else
        return usage_error(name, v, "expected delta or cumulative");
      break;
    case O_CONCURRENCY:
      free(cli->concurrency);
      cli->concurrency = NULL;
      if (tp_parse_uint_list(v, &cli->concurrency, &cli->n_concurrency, 1000, e, sizeof(e)))
        return usage_error(name, v, e);
      c->concurrency = cli->concurrency;
      c->n_concurrency = cli->n_concurrency;
      break;
    case O_REQUEST_COUNT:
      if (get_u64(name, v, &c->request_count)) return TP_EXIT_USAGE;
      if (!c->request_count) return usage_error(name, v, "must be above zero");
      break;
    case O_WARMUP: return get_u64(name, v, &c->warmup_request_count);
    case O_INTERVAL:
      cli->measure_flags |= 1;
      return get_ms(name, v, &c->measurement_interval_ms);
    case O_RATE:
      free(cli->rates);
      cli->rates = NULL;
      if (parse_rates(v, &cli->rates, &cli->n_rates, e, sizeof(e))) return usage_error(name, v, e);
      c->request_rates = cli->rates;
      c->n_request_rates = cli->n_rates;
      break;
    case O_ARRIVAL:
      if (strcmp(v, "constant") == 0) c->arrival = TP_ARRIVAL_CONSTANT;
      else if (strcmp(v, "poisson") == 0) c->arrival = TP_ARRIVAL_POISSON;
      else if (strcmp(v, "gamma") == 0) c->arrival = TP_ARRIVAL_GAMMA;
      else return usage_error(name, v, "expected constant, poisson or gamma");
      break;
    case O_BURSTINESS:
      if (get_double(name, v, &c->burstiness)) return TP_EXIT_USAGE;
      if (!(c->burstiness > 0)) return usage_error(name, v, "must be above 0");
      break;
    case O_MAX_CONC:
      if (get_u32(name, v, &c->max_concurrency, 100000)) return TP_EXIT_USAGE;
      if (!c->max_concurrency) return usage_error(name, v, "must be above zero");
      break;
    case O_DURATION:
      cli->measure_flags |= 4;
      return get_ms(name, v, &c->duration_ms);
    case O_WARMUP_DURATION: return get_ms(name, v, &c->warmup_duration_ms);
    case O_MEASURE_MODE:
      cli->measure_flags |= 1;
      if (strcmp(v, "time_windows") == 0) c->measure_mode = TP_MEASURE_TIME_WINDOWS;
      else if (strcmp(v, "count_windows") == 0) c->measure_mode = TP_MEASURE_COUNT_WINDOWS;
      else return usage_error(name, v, "expected time_windows or count_windows");
      cli->measure_flags |= c->measure_mode == TP_MEASURE_COUNT_WINDOWS ? 2 : 0;
      break;
    case O_MEASURE_COUNT:
      cli->measure_flags |= 1 | 2;
      if (get_u64(name, v, &c->measurement_request_count)) return TP_EXIT_USAGE;
      if (!c->measurement_request_count) return usage_error(name, v, "must be above zero");
      break;
    case O_STABILITY:
      if (get_double(name, v, &c->stability_percentage)) return TP_EXIT_USAGE;
      if (!(c->stability_percentage > 0)) return usage_error(name, v, "must be above 0");
      break;
    case O_MAX_TRIALS:
      if (get_u32(name, v, &c->max_trials, 64)) return TP_EXIT_USAGE;
      if (c->max_trials < 1) return usage_error(name, v, "must be 1 to 64");
      break;
    case O_IN_MEAN:
      free(cli->in_means);
      cli->in_means = NULL;
      if (tp_parse_uint_list(v, &cli->in_means, &cli->n_in_means, 1000, e, sizeof(e)))
        return usage_error(name, v, e);
      c->input_tokens_means = cli->in_means;
      c->n_input_tokens_means = cli->n_in_means;
      break;
    case O_IN_STDDEV: return get_u32(name, v, &c->input_tokens_stddev, 1000000);
    case O_OUT_STDDEV: return get_u32(name, v, &c->output_tokens_stddev, 1000000);
    case O_SCHEDULE: c->schedule_file = v; break;
    case O_SPEEDUP:
      if (get_double(name, v, &c->replay_speedup)) return TP_EXIT_USAGE;
      if (!(c->replay_speedup > 0)) return usage_error(name, v, "must be above 0");
      break;
    case O_PREFIX_BLOCK:
      if (get_u32(name, v, &c->prefix_block_tokens, 1000000)) return TP_EXIT_USAGE;
      if (!c->prefix_block_tokens) return usage_error(name, v, "must be above zero");
      break;
    case O_GOODPUT: return parse_goodput(c, name, v);
    case O_ASSERT: {
      const char **a = realloc(cli->asserts, (cli->n_asserts + 1) * sizeof(*a));
      if (!a) return usage_error(name, v, "out of memory");
      cli->asserts = a;
      a[cli->n_asserts++] = v;
      c->asserts = a;
      c->n_asserts = cli->n_asserts;
      break;
    }
    case O_MAX_ERROR_RATE: {
      char buf[64];
      snprintf(buf, sizeof(buf), "%s", v);
      size_t l = strlen(buf);
      bool pct = l > 0 && buf[l - 1] == '%';
      if (pct) buf[l - 1] = 0;
      if (tp_parse_double(buf, &c->max_error_rate, e, sizeof(e))) return usage_error(name, v, e);
      if (pct) c->max_error_rate /= 100;
      if (c->max_error_rate > 1) return usage_error(name, v, "expected a fraction from 0 to 1, or a percentage");
      break;
    }
    case O_INPUT_FILE: c->input_file = v; break;
    case O_TOKENIZER: c->tokenizer = v; break;
    case O_TOK_SPECIAL: c->tokenizer_add_special_tokens = true; break;
    case O_SEED: return get_u64(name, v, &c->random_seed);
    case O_OUT_TOKENS:
      free(cli->out_means);
      cli->out_means = NULL;
      if (tp_parse_uint_list(v, &cli->out_means, &cli->n_out_means, 1000, e, sizeof(e)))
        return usage_error(name, v, e);
      c->output_tokens_mean = cli->out_means[0];
      if (cli->n_out_means > 1) {
        c->output_tokens_means = cli->out_means;
        c->n_output_tokens_means = cli->n_out_means;
      }
      break;
    case O_OUT_DET: c->output_tokens_deterministic = true; break;
    case O_SYN_WORDS: return get_u32(name, v, &c->synthetic_input_words, 1000000);
    case O_NUM_PROMPTS: return get_u32(name, v, &c->num_prompts, 10000000);
    case O_CONNECTIONS:
      if (get_u32(name, v, &c->connections, 4096)) return TP_EXIT_USAGE;
      if (!c->connections) return usage_error(name, v, "must be above zero");
      break;
    case O_TIMEOUT: return get_ms(name, v, &c->request_timeout_ms);
    case O_SKIP_PREFLIGHT: c->skip_preflight = true; break;
    case O_NO_SERVER_STATS: c->no_server_stats = true; break;
    case O_METRICS_URL: c->metrics_url = v; break;
    case O_METRICS_INTERVAL: return get_ms(name, v, &c->metrics_interval_ms);
    case O_CACHE_BUST: c->cache_bust = true; break;
    case O_MAX_RESP_BYTES:
      if (parse_size(v, &c->max_response_bytes)) return usage_error(name, v, "expected a size like 1M, 64M or 4096");
      break;
    case O_MAX_OUT_TOKENS:
      if (get_u64(name, v, &c->max_output_tokens)) return TP_EXIT_USAGE;
      break;
    case O_MPI_TIMEOUT: return get_ms(name, v, &c->mpi_timeout_ms);
    case O_GRACE: {
      uint64_t ns;
      if (tp_parse_duration_ns(v, 1000000ULL, &ns, e, sizeof(e))) return usage_error(name, v, e);
      c->grace_period_ms = ns / 1000000ULL;
      break;
    }
    case O_PREFIX_TOKENS:
      if (get_u32(name, v, &c->prefix_tokens, 1000000)) return TP_EXIT_USAGE;
      if (!c->prefix_tokens) return usage_error(name, v, "must be above zero");
      break;
    case O_NUM_PREFIXES:
      if (get_u32(name, v, &c->num_prefixes, 100000)) return TP_EXIT_USAGE;
      if (!c->num_prefixes) return usage_error(name, v, "must be above zero");
      break;
    case O_JSON: c->json_path = v; break;
    case O_RECORDS: c->records_path = v; break;
    case O_ARTIFACT_DIR: c->artifact_dir = v; break;
    case O_PROFILE_EXPORT: c->profile_export_file = v; break;
    case O_NO_ARTIFACTS: c->no_artifacts = true; break;
    case O_NO_HTML: c->no_html = true; break;
    case O_FORMAT:
      if (strcmp(v, "text") == 0) cli->format_json = 0;
      else if (strcmp(v, "json") == 0) cli->format_json = 1;
      else return usage_error(name, v, "expected text or json");
      break;
    case O_MOCK: c->mock = true; break;
    case O_MOCK_LOG: c->mock_log_path = v; break;
    case O_QUIET: cli->quiet = 1; break;
    case O_HELP: cli->help = 1; break;
    case O_M_HOST: m->host = v; break;
    case O_M_PORT: {
      uint32_t port;
      if (get_u32(name, v, &port, 65535)) return TP_EXIT_USAGE;
      m->grpc_port = (int)port;
      break;
    }
    case O_M_TTFT: return get_double(name, v, &m->ttft_ms);
    case O_M_PREFILL_TOK: return get_double(name, v, &m->prefill_us_per_token);
    case O_M_PREFILL_Q: return get_double(name, v, &m->prefill_queue_ms);
    case O_M_ITL: return get_double(name, v, &m->itl_ms);
    case O_M_ITL_SEQ: return get_double(name, v, &m->itl_us_per_seq);
    case O_M_BATCH:
      if (get_u32(name, v, &m->max_batch, 1000000)) return TP_EXIT_USAGE;
      if (!m->max_batch) return usage_error(name, v, "must be above zero");
      break;
    case O_M_OUT: return get_u32(name, v, &m->output_tokens, 10000000);
    case O_M_EOS:
      if (get_double(name, v, &m->eos_prob)) return TP_EXIT_USAGE;
      if (m->eos_prob > 1) return usage_error(name, v, "expected a probability from 0 to 1");
      break;
    case O_M_SEED:
      if (get_u64(name, v, &u64)) return TP_EXIT_USAGE;
      m->seed = u64;
      break;
    case O_M_LOG: m->log_path = v; break;
    case O_M_HTTP_PORT: {
      if (strcmp(v, "-1") == 0) {
        m->http_port = -1;
        break;
      }
      uint32_t port;
      if (get_u32(name, v, &port, 65535)) return TP_EXIT_USAGE;
      m->http_port = (int)port;
      break;
    }
    case O_M_DIALECT:
      if (strcmp(v, "vllm") && strcmp(v, "llamacpp") && strcmp(v, "tgi") && strcmp(v, "trtllm-serve"))
        return usage_error(name, v, "expected vllm, llamacpp, tgi or trtllm-serve");
      m->http_dialect = v;
      break;
    case O_M_FAULT: m->fault_kind = v; break;
    case O_M_FAULT_RATE:
      if (get_double(name, v, &m->fault_rate)) return TP_EXIT_USAGE;
      if (m->fault_rate > 1) return usage_error(name, v, "expected a fraction from 0 to 1");
      break;
    case O_M_FAULT_AFTER: return get_u32(name, v, &m->fault_after_tokens, 1000000);
    case O_M_REFUSE: return get_u32(name, v, &m->refuse_connections, 1000000);
    case O_M_REFUSE_MS: return get_u64(name, v, &m->refuse_connections_ms);
    case O_M_GOAWAY: return get_u32(name, v, &m->goaway_after_streams, 1000000);
    case O_M_CLOSE_AFTER_STREAM: m->close_after_stream = true; break;
    case O_M_IDLE_CLOSE: return get_u64(name, v, &m->idle_close_ms);
    case O_M_PREFIX: m->prefix_cache = true; break;
    case O_M_KEEPALIVE:
      if (strcmp(v, "-1") == 0) {
        m->sse_keepalive_ms = -1;
      } else {
        uint64_t ms;
        if (get_u64(name, v, &ms)) return TP_EXIT_USAGE;
        m->sse_keepalive_ms = (int64_t)ms;
      }
      break;
    case O_M_PREFIX_BLOCK: return get_u32(name, v, &m->prefix_cache_block_words, 1000000);
    case O_M_PREFIX_BLOCKS: return get_u32(name, v, &m->prefix_cache_blocks, 100000000);
  }
  return 0;
}

static int parse(tp_cli *cli, const optdef *tab, size_t n, int argc, char **argv, const char *sub) {
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (a[0] != '-' || a[1] == 0) {
      fprintf(stderr, "tokperf %s: unexpected argument '%s'\ntry 'tokperf %s --help'\n", sub, a, sub);
      return TP_EXIT_USAGE;
    }
    const char *eq = a[1] == '-' ? strchr(a, '=') : NULL;
    size_t len = eq ? (size_t)(eq - a) : strlen(a);
    const optdef *o = find_opt(tab, n, a, len);
    if (!o) {
      fprintf(stderr, "tokperf %s: unknown option '%.*s'\ntry 'tokperf %s --help'\n", sub, (int)len, a, sub);
      return TP_EXIT_USAGE;
    }
    char name[64];
    snprintf(name, sizeof(name), "%.*s", (int)len, a);
    const char *v = NULL;
    if (o->arg) {
      if (eq) {
        v = eq + 1;
      } else if (i + 1 < argc) {
        v = argv[++i];
      } else {
        fprintf(stderr, "tokperf %s: %s needs a value (%s)\ntry 'tokperf %s --help'\n", sub, name, o->arg, sub);
        return TP_EXIT_USAGE;
      }
    } else if (eq) {
      fprintf(stderr, "tokperf %s: %s takes no value\ntry 'tokperf %s --help'\n", sub, name, sub);
      return TP_EXIT_USAGE;
    }
    int rv = apply(cli, o, name, v);
    if (rv) return rv;
  }
  return 0;
}

int tp_cli_parse_profile(tp_cli *cli, int argc, char **argv) {
  int rv = parse(cli, profile_opts, sizeof(profile_opts) / sizeof(profile_opts[0]), argc, argv, "profile");
  if (rv) return rv;
  if (cli->quiet) cli->cfg.progress = NULL;
  if (cli->cfg.mock) cli->cfg.mock_config = &cli->mock;
  tp_config *c = &cli->cfg;
  /* GenAI-Perf's spellings: --service-kind openai --endpoint-type chat|completions,
   * and --service-kind triton -i http (--endpoint-type generate). */
  if (c->service_kind == TP_SERVICE_OPENAI_CHAT || c->service_kind == TP_SERVICE_OPENAI_COMPLETIONS) {
    if (cli->endpoint_type == 3) {
      fprintf(stderr, "tokperf profile: --endpoint-type generate goes with --service-kind triton -i http\n"
                      "try 'tokperf profile --help'\n");
      return TP_EXIT_USAGE;
    }
    if (cli->endpoint_type == 2) c->service_kind = TP_SERVICE_OPENAI_COMPLETIONS;
    if (cli->endpoint_type == 1) c->service_kind = TP_SERVICE_OPENAI_CHAT;
    /* No -m: the server's first model (from /v1/models). */
    if (!cli->model_given) c->model = "";
  } else if (c->service_kind == TP_SERVICE_TRITON && (cli->http_protocol || cli->endpoint_type == 3)) {
    c->service_kind = TP_SERVICE_TRITON_GENERATE;
  } else if (cli->endpoint_type == 1 || cli->endpoint_type == 2) {
    fprintf(stderr, "tokperf profile: --endpoint-type chat and completions go with --service-kind openai\n"
                    "try 'tokperf profile --help'\n");
    return TP_EXIT_USAGE;
  }
  if (!cli->api_key) {
    const char *k = getenv("OPENAI_API_KEY");
    if (k && *k) cli->api_key = strdup(k);
  }
  c->api_key = cli->api_key;
  c->headers = cli->headers;
  c->n_headers = cli->n_headers;
  c->extra_inputs = cli->extra_inputs;
  c->n_extra_inputs = cli->n_extra_inputs;
  /* The measurement mode follows from what was given: a duration, or any
   * stability-window option, or else a request count. */
  if (cli->measure_flags & 4) {
    if (cli->measure_flags & 1) {
      fprintf(stderr, "tokperf profile: --duration and the stability windows (--measurement-interval, "
                      "--measurement-mode, --measurement-request-count) exclude each other\n"
                      "try 'tokperf profile --help'\n");
      return TP_EXIT_USAGE;
    }
    cli->cfg.measure_mode = TP_MEASURE_DURATION;
  } else if (cli->measure_flags & 1) {
    cli->cfg.measure_mode = (cli->measure_flags & 2) ? TP_MEASURE_COUNT_WINDOWS : TP_MEASURE_TIME_WINDOWS;
  }
  return 0;
}

int tp_cli_parse_mock(tp_cli *cli, int argc, char **argv) {
  int rv = parse(cli, mock_opts, sizeof(mock_opts) / sizeof(mock_opts[0]), argc, argv, "mock");
  if (rv) return rv;
  cli->mock.quiet = cli->quiet != 0;
  return 0;
}

static void print_opts(FILE *out, const optdef *tab, size_t n) {
  for (size_t i = 0; i < n; i++) {
    char head[96];
    snprintf(head, sizeof(head), "%s%s%s", tab[i].names, tab[i].arg ? " " : "", tab[i].arg ? tab[i].arg : "");
    for (char *p = head; *p; p++)
      if (*p == '|') *p = ',';
    fprintf(out, "  %-44s %s", head, tab[i].help);
    if (tab[i].dflt && tab[i].dflt[0]) fprintf(out, " [default: %s]", tab[i].dflt);
    fputc('\n', out);
  }
}

static void print_exit_codes(FILE *out) {
  fprintf(out,
          "\nExit codes:\n"
          "  0    the run completed (failed requests are counted in the report, not fatal)\n"
          "  1    the run completed but a threshold failed\n"
          "  2    usage or input error: a bad option value, or a bad --input-file line (file:line named)\n"
          "  3    could not start: server unreachable, model missing or not ready or lacking an input,\n"
          "       tokenizer not loadable\n"
          "  130  interrupted (Ctrl-C); the levels completed so far are reported\n");
}

void tp_cli_help_main(FILE *out) {
  fprintf(out,
          "tokperf %s: token-aware load generator for LLM inference servers\n\n"
          "Usage:\n"
          "  tokperf profile [OPTIONS]   benchmark a Triton (KServe v2 gRPC) LLM model\n"
          "  tokperf mock [OPTIONS]      run the built-in mock Triton server\n"
          "  tokperf tokenize [OPTIONS]  count or list the tokens of each input line\n"
          "  tokperf compare A.json B.json [--fail-on RULE]... [--junit FILE]\n"
          "                              compare two runs' --json documents\n"
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

void tp_cli_help_profile(FILE *out) {
  fprintf(out, "Usage: tokperf profile [OPTIONS]\n\n"
               "Sends prompts to a model at each concurrency level, holding exactly that many requests\n"
               "in flight, and reports time to first token, inter-token latency, request latency, token\n"
               "counts and throughputs (definitions: docs/metrics.md). Durations take units: 500ms, 30s, 2m.\n\n"
               "Options:\n");
  print_opts(out, profile_opts, sizeof(profile_opts) / sizeof(profile_opts[0]));
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
               "'vllm_model': time to first token grows with prompt length and with prefills already\n"
               "running, time per token grows with running sequences, at most --max-batch sequences run\n"
               "at once. Stops on Ctrl-C.\n\nOptions:\n");
  print_opts(out, mock_opts, sizeof(mock_opts) / sizeof(mock_opts[0]));
  fprintf(out, "\nExample:\n  tokperf mock --grpc-port 8001 --ttft-ms 50 --itl-ms 10 --output-tokens 32 --log mock.jsonl\n");
}

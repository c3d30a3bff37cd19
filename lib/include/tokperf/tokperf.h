/* tokperf: a load generator for LLM inference servers.
 *
 * The public interface.  A program fills a tp_config (start from
 * tp_config_default), creates a run with tp_run_new, which validates every
 * field and names the one that is wrong, executes it with tp_run_exec, and
 * reads or prints the results.  The mock server is a separate handle that
 * can run on a thread of its own inside the same process.
 *
 * Every function returns 0 or a negative TP_E* code unless it says
 * otherwise; tp_strerror gives a short phrase for a code. */
#ifndef TOKPERF_H
#define TOKPERF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "tokperf/errors.h"

/* One line naming tokperf's version and the linked library versions. */
TP_API const char *tp_version_long(void);

/* ------------------------------------------------------------------------ */
/* Configuration                                                            */

typedef enum tp_backend {
  TP_BACKEND_TENSORRTLLM = 0, /* TensorRT-LLM ensemble / BLS tensors */
  TP_BACKEND_VLLM = 1         /* vLLM backend tensors */
} tp_backend;

/* Where the token counts of the report come from (--token-source). */
typedef enum tp_token_source {
  TP_TOKEN_SOURCE_AUTO = 0, /* the server's when it reports them, else the client's tokenizer */
  TP_TOKEN_SOURCE_CLIENT,   /* the client's tokenizer only */
  TP_TOKEN_SOURCE_SERVER    /* the server's counts only (OpenAI usage, vLLM num_output_tokens) */
} tp_token_source;

typedef enum tp_arrival {
  TP_ARRIVAL_CONSTANT = 0, /* exactly 1/rate apart */
  TP_ARRIVAL_POISSON = 1,  /* exponential gaps with mean 1/rate */
  TP_ARRIVAL_GAMMA = 2     /* gamma gaps of shape `burstiness`, mean 1/rate */
} tp_arrival;

/* A rate that changes over an open-loop level (vLLM's --ramp-up-strategy). */
typedef enum tp_ramp {
  TP_RAMP_NONE = 0,
  TP_RAMP_LINEAR = 1,     /* start + (end - start) * progress */
  TP_RAMP_EXPONENTIAL = 2 /* start * (end / start) ^ progress */
} tp_ramp;

/* How a level decides which requests are measured. */
typedef enum tp_search_mode {
  TP_SEARCH_NONE = 0,
  TP_SEARCH_REQUEST_RATE = 1, /* open loop: the highest request rate */
  TP_SEARCH_CONCURRENCY = 2   /* closed loop: the highest concurrency */
} tp_search_mode;

typedef enum tp_measure_mode {
  TP_MEASURE_COUNT = 0,        /* request_count requests after the warm-up */
  TP_MEASURE_DURATION = 1,     /* requests planned within duration_ms after the warm-up */
  TP_MEASURE_TIME_WINDOWS = 2, /* perf_analyzer stability: windows of measurement_interval_ms */
  TP_MEASURE_COUNT_WINDOWS = 3 /* perf_analyzer stability: windows of measurement_request_count */
} tp_measure_mode;

/* What a level holds constant. */
typedef enum tp_load_mode {
  TP_LOAD_CONCURRENCY = 0, /* closed loop: exactly N in flight */
  TP_LOAD_RATE = 1,        /* open loop: requests released on an arrival schedule */
  TP_LOAD_SCHEDULE = 2     /* open loop: the times of a trace file */
} tp_load_mode;

typedef enum tp_service_kind {
  TP_SERVICE_TRITON = 0,             /* KServe v2 over gRPC */
  TP_SERVICE_OPENAI_COMPLETIONS = 1, /* OpenAI-compatible /v1/completions over HTTP (SSE) */
  TP_SERVICE_OPENAI_CHAT = 2,        /* OpenAI-compatible /v1/chat/completions */
  TP_SERVICE_TRITON_GENERATE = 3,    /* Triton's HTTP generate / generate_stream */
  TP_SERVICE_VLLM_GRPC = 4,          /* vLLM's own gRPC, vllm.grpc.engine.VllmEngine (token ids) */
  TP_SERVICE_SGLANG_GRPC = 5         /* SGLang's own gRPC, sglang.grpc.scheduler.SglangScheduler (token ids) */
} tp_service_kind;

/* The kinds spoken over gRPC (HOST:PORT, no path); the others are HTTP. */
static inline bool tp_service_kind_is_grpc(tp_service_kind k) {
  return k == TP_SERVICE_TRITON || k == TP_SERVICE_VLLM_GRPC || k == TP_SERVICE_SGLANG_GRPC;
}



/* The mock server (its own library and header): tp_mock_config and its
 * counters, which a caller that started a mock for a run hands to the run's
 * reports (tp_run_set_mock, tp_run_set_mock_stats). */
#include "tokperf/mock.h"

/* The server and how to talk to it: address, API, model, TLS, headers, limits on each request
 * and answer, the metrics scrape. */
typedef struct tp_server_config {
  /* Server: "host:port" (default "localhost:8001"). */
  const char *url;
  const char *model;         /* default "ensemble" */
  const char *model_version; /* default "" (server policy) */
  tp_service_kind service_kind;
  tp_backend backend;
  bool streaming; /* ModelStreamInfer (true, default) or unary ModelInfer */
  /* Streamed text is a delta (new text only: vLLM r24.03+, TensorRT-LLM) or
   * cumulative (all text so far: vLLM r23.10-r24.02, BLS accumulate_tokens):
   * cumulative text replaces instead of appending. */
  bool cumulative_text;

  uint32_t connections; /* HTTP/2 connections (0 = automatic) */

  /* HTTP services (OpenAI-compatible, Triton generate).  url may then be a
   * full http(s)://host:port[/prefix]. */
  const char *endpoint; /* request path or URL instead of the API's own */
  /* The API key, sent as "Authorization: Bearer KEY" and never printed,
   * logged or exported.  The CLI reads it from OPENAI_API_KEY or
   * --api-key-file, never from the command line. */
  const char *api_key;
  /* Extra request headers "Name: value" on every protocol (gRPC metadata
   * too), and extra body fields "name:value" or JSON objects (HTTP). */
  const char *const *headers;
  size_t n_headers;
  const char *const *extra_inputs;
  size_t n_extra_inputs;
  /* TLS (https://, grpcs://): verification is on unless insecure. */
  const char *ca_file, *cert_file, *key_file;
  bool insecure;
  bool http1_only; /* do not offer HTTP/2 on HTTP services */
  /* gRPC: read the connections' sockets on a thread of their own, so that
   * answers keep their arrival times while the loop is busy (a wave of
   * thousands of streams); costs a copy and a hand-over per read. */
  bool reader_thread;
  bool no_usage;   /* do not ask OpenAI servers for usage in the stream */

  /* Prometheus text endpoint scraped during each level (Triton :8002
   * /metrics, vLLM /metrics). */
  const char *metrics_url;
  uint64_t metrics_interval_ms; /* default 1000 */
  /* A second Prometheus endpoint scraped the same way, for GPU figures
   * (NVIDIA's DCGM exporter, :9400/metrics); NULL = none. */
  const char *gpu_metrics_url;
  uint64_t request_timeout_ms;  /* 0 = none; sent as grpc-timeout */
  /* Memory bounds under an endless or huge answer: a request whose text
   * passes max_response_bytes (default 64 MiB) or whose text responses pass
   * max_output_tokens (0 = no bound) is cancelled and counted as failed. */
  uint64_t max_response_bytes;
  uint64_t max_output_tokens;
  /* A server that stopped answering (docs/metrics.md, "When the server
   * goes away"): requests that fail to reach it back off, and the level
   * ends once this many in a row failed to reach it or were not sent
   * (default 100; 0 = never). */
  uint64_t max_consecutive_failures;
  /* Each request carries a W3C traceparent (version 00, a random trace id
   * and parent id per request, sampled), as an HTTP header or gRPC
   * metadata, recorded in records.jsonl (docs/metrics.md, "Request ids"). */
  bool traceparent;
  bool skip_preflight;  /* skip ServerLive/ModelReady/ModelMetadata */
  bool no_server_stats; /* do not read Triton's ModelStatistics around each level */
} tp_server_config;

/* The load of each level: concurrencies or request rates and their arrival process, a trace to
 * replay, or the capacity search that picks the levels. */
typedef struct tp_load_config {
  /* Concurrency levels to sweep, in order.  The array is borrowed. */
  const uint32_t *concurrency;
  size_t n_concurrency;

  /* Open-loop levels in requests per second (borrowed); when given, the
   * levels are rates, and concurrency is ignored unless max_concurrency
   * caps the requests in flight (time waiting for a slot shows as send
   * lag). */
  const double *request_rates;
  size_t n_request_rates;
  tp_arrival arrival;
  double burstiness;        /* gamma shape; 1 = Poisson (default 1) */
  uint32_t max_concurrency; /* 0 = no cap */
  /* Open loop with a request count: instead of one rate, the rate of
   * request i of the level's n measured ones is the ramp's at progress
   * i / (n - 1), from ramp_start_rps to ramp_end_rps, and the gap before it
   * is drawn at that rate (arrival and burstiness as for a fixed rate);
   * warm-up requests go at the start rate.  Needs one request rate level
   * (the end rate, for its label). */
  tp_ramp ramp;
  double ramp_start_rps, ramp_end_rps;
  /* Open loop: requests due within this many microseconds of the first of
   * them leave together, in one write at the last one's due time (each
   * request's send lag shows the wait; 0 = each at its own time).  At tens
   * of thousands of requests per second a write per request is most of
   * the client's CPU (docs/metrics.md, "Send times at high rates"). */
  uint32_t send_window_us;

  /* Trace replay: JSONL with "timestamp" (ms) and "text_input"/"prompt" or
   * "input_length"/"output_length" (tokens; needs a tokenizer), optionally
   * "hash_ids" (shared prefix blocks of prefix_block_tokens).  One level. */
  const char *schedule_file;
  double replay_speedup;          /* default 1 */
  uint32_t prefix_block_tokens;   /* tokens per hash id block, default 512 */

  /* Capacity search (docs/search.md): instead of the listed levels, probe
   * request rates or concurrencies between search_min and search_max
   * (bracket, then bisect; lib/run/tp_search.h) for the highest load at
   * which every SLO holds ("metric.stat OP value", the --assert syntax,
   * borrowed; max_error_rate counts as one too).  The search stops when the
   * last passing and first failing loads are within the precision (a
   * fraction of the passing load, or an absolute amount in the load's unit;
   * relative when both are set) or after search_max_probes levels. */
  tp_search_mode search;
  const char *const *slos;
  size_t n_slos;
  double search_min, search_max; /* 0 = 1 and 1024 */
  double search_rel_precision;   /* 0.1 = 10 % */
  double search_abs_precision;   /* in requests/s or requests in flight */
  uint32_t search_max_probes;    /* 0 = 12 */
} tp_load_config;

/* What each level measures and how long: counts, durations, stability windows, warm-up, repeats,
 * and the goals a level is judged by (goodput, gates, error rate). */
typedef struct tp_measure_config {
  /* Measurement, per level.  measure_mode COUNT: request_count requests (0 =
   * 4 per slot or 4 s of rate, at least 16).  DURATION: duration_ms.
   * Windows: perf_analyzer's stability rule over the last three windows. */
  tp_measure_mode measure_mode;
  uint64_t request_count;
  uint64_t duration_ms;
  uint64_t measurement_interval_ms;    /* time window length (default 10 s) */
  uint64_t measurement_request_count;  /* count window length (default 50) */
  double stability_percentage;         /* default 10 */
  /* The steady state (docs/metrics.md, "Steady state"): the window where
   * the requests in flight stay at or above this fraction of the target
   * concurrency; default 0.95, 0 = not computed. */
  double steady_state_threshold;
  /* An open-loop level seen over-saturated ends there, and the sweep skips
   * the loads above it (docs/metrics.md, "Saturation"). */
  bool stop_on_saturation;
  /* Width of the time-series slices in seconds (docs/metrics.md, "Time
   * series"); 0 = not given: 1 s, and no AIPerf timeslice files. */
  double slice_duration_s;
  uint32_t max_trials;                 /* default 10 */
  uint64_t warmup_request_count;       /* per level, left out of the statistics */
  uint64_t warmup_duration_ms;         /* per level, alternative to the count */

  /* Goodput bounds in ms (0 = no bound on that metric). */
  double goodput_ttft_ms, goodput_itl_ms, goodput_latency_ms;
  double goodput_tpot_ms; /* time per output token (tpot; GenAI-Perf's inter_token_latency) */
  double goodput_ttst_ms; /* time to second token (GenAI-Perf's time_to_second_token) */
  /* Per-user output throughput floor, tokens/s (GenAI-Perf's
   * output_token_throughput_per_user: 1000 / ITL); 0 = none. */
  double goodput_tps_per_user_min;
  /* CI gates: "metric.stat OP value[unit]" (borrowed).  A failed gate makes
   * tp_run_check_gates report it. */
  const char *const *asserts;
  size_t n_asserts;
  double max_error_rate; /* < 0 = no limit (default -1) */

  /* Repeated runs: every level is run this many times (0 or 1 = once); the
   * report gives per metric the mean, standard deviation and 95%
   * confidence interval over the runs. */
  uint32_t num_profile_runs;

  /* After an interruption, how long in-flight requests may take to finish
   * before they are cancelled (default 5 s). */
  uint64_t grace_period_ms;
} tp_measure_config;

/* What is sent: the prompt file or synthetic prompts, their token lengths, the tokenizer,
 * KV-cache controls. */
typedef struct tp_prompts_config {
  /* Sweep dimensions (borrowed lists; empty = one point).  Synthetic input
   * lengths need a tokenizer: prompts are made to exactly the drawn number
   * of tokens. */
  const uint32_t *input_tokens_means;
  size_t n_input_tokens_means;
  uint32_t input_tokens_stddev;
  const uint32_t *output_tokens_means;
  size_t n_output_tokens_means;
  uint32_t output_tokens_stddev;

  const char *input_file; /* JSONL prompts; NULL = synthetic prompts */
  const char *tokenizer;  /* tokenizer.model or a directory holding one */
  /* Count prompts with the special tokens the tokenizer's configuration
   * adds (BOS, ...), as the server's prompt count usually does; output
   * tokens never include them.  Needs tokenizer. */
  bool tokenizer_add_special_tokens;
  tp_token_source token_source; /* default auto */
  uint64_t random_seed;

  /* Output length asked of the server: max_tokens (0 = per-prompt value or
   * 128).  With output_tokens_deterministic the server is also asked not to
   * stop early (min_tokens / min_length / ignore_eos). */
  uint32_t output_tokens_mean;
  bool output_tokens_deterministic;
  uint32_t synthetic_input_words; /* synthetic prompt length in words */
  uint32_t num_prompts;           /* synthetic prompt count */

  /* KV-cache controls (docs/kv-cache.md).  cache_bust puts a unique,
   * seed-reproducible marker at the very start of every prompt so that no
   * prefix can be reused; prefix_tokens > 0 puts one of num_prefixes shared
   * synthetic prefixes of exactly that many tokens before every prompt (needs
   * a tokenizer), to measure what reuse buys. */
  bool cache_bust;
  uint32_t prefix_tokens;
  uint32_t num_prefixes; /* default 1 */
} tp_prompts_config;

/* Where results go besides the artifact directory: the JSON document, the records, progress
 * lines. */
typedef struct tp_output_config {
  const char *json_path;    /* --json: every figure with units, config */
  const char *records_path; /* --records: one JSON line per request (default: in the artifact dir) */
  /* perf_analyzer's -f: its latency report CSV (tp_run_write_latency_csv),
   * with verbose_csv its --verbose-csv columns. */
  const char *latency_report_file;
  bool verbose_csv;
  /* vLLM's per-request arrays of each level (tp_level_result.vllm_requests),
   * for `tokperf vllm-bench`'s result file; set by that command, not a
   * setting of its own. */
  bool vllm_requests;

  FILE *progress; /* progress lines (stderr by default, NULL = quiet) */

  /* Live metrics (docs/metrics.md, "Live metrics"): the client's counters
   * and histograms served in the Prometheus text format at
   * http://metrics_host:metrics_port/metrics while the run's loop runs
   * (0 = off; the host is an IP address, default 127.0.0.1), and for
   * metrics_hold_ms more after the last level, so that a scraper sees the
   * final counts. */
  uint32_t metrics_port;
  const char *metrics_host;
  uint64_t metrics_hold_ms;
} tp_output_config;

/* The artifact directory: profile export, GenAI-Perf summaries, records, responses, report.html. */
typedef struct tp_artifacts_config {
  /* The artifact directory: perf_analyzer's profile export, GenAI-Perf's
   * summaries per level, records.jsonl, responses.jsonl, report.html.
   * NULL = artifacts/<model>-<service>-<backend>-<mode>; no_artifacts turns
   * the whole directory off. */
  const char *artifact_dir;
  const char *profile_export_file; /* NULL = profile_export.json in the directory */
  bool no_artifacts;
  bool no_html;
} tp_artifacts_config;

/* Distributed runs under mpirun (docs/scale-out.md). */
typedef struct tp_dist_config {
  /* Distributed runs (`mpirun -np N tokperf profile`, docs/scale-out.md):
   * how long rank 0 waits on a rank that has gone silent before it reports
   * the rank failed and goes on without it (0 = 20 s). */
  uint64_t mpi_timeout_ms;
} tp_dist_config;

/* A run's settings, by concern; tp_config_default fills every group.  The
 * settings table (cmd/options.c) names each field by its key. */
typedef struct tp_config {
  tp_server_config server;
  tp_load_config load;
  tp_measure_config measure;
  tp_prompts_config prompts;
  tp_output_config output;
  tp_artifacts_config artifacts;
  tp_dist_config dist;
} tp_config;

TP_API void tp_config_default(tp_config *cfg);

/* ------------------------------------------------------------------------ */
/* Statistics                                                               */

typedef struct tp_stat {
  size_t n; /* values the figures are computed over; 0 = unavailable */
  double avg, min, max, std, p1, p5, p10, p25, p50, p75, p90, p95, p99;
} tp_stat;

/* What the server says it did during one level, for one model (Triton's
 * ModelStatistics, the difference between before and after the level).
 * Averages are per successful request, in microseconds. */
typedef struct tp_server_model_stats {
  char name[128];
  char version[32];
  bool is_target; /* the model the run sent to; the others are composing models */
  uint64_t inference_count, execution_count, success_count, fail_count;
  uint64_t cache_hit_count;
  double avg_request_us; /* success duration / successes */
  double avg_queue_us, avg_compute_input_us, avg_compute_infer_us, avg_compute_output_us;
  double avg_overhead_us; /* request - (queue + compute input + infer + output), at least 0 */
} tp_server_model_stats;

/* One server metric summarised over a level's scrapes (Prometheus). */
typedef struct tp_server_metric {
  char name[48];  /* tokperf's name: gpu_utilization, vllm_kv_cache_usage, ... */
  char unit[16];  /* "fraction", "bytes", "W", "requests", "blocks" */
  double avg, max;
  uint32_t samples; /* scrapes that carried it */
} tp_server_metric;

/* One slice of a level's time series (docs/metrics.md, "Time series"):
 * [start_s, end_s) in seconds from the level's start, computed from the
 * measured records alone.  A figure the slice has no value of is NaN. */
typedef struct tp_slice {
  double start_s, end_s;
  uint64_t completed;     /* successful requests that ended in it */
  uint64_t failed;        /* failed requests that ended in it */
  uint64_t sent;          /* successful requests sent in it */
  uint64_t first_tokens;  /* successful requests whose first token came in it */
  double output_tokens;   /* placed evenly over each request's first..last text; NaN: a count missing */
  double input_tokens;    /* of the successful requests sent in it; NaN: a count missing */
  /* TTFT and the per-request ITL of the requests whose first token came
   * in it (n = 0: none). */
  tp_stat ttft_ms, itl_ms;
  double in_flight_avg;   /* requests between send and done, time-weighted mean over the slice */
  double send_lag_p99_ms; /* over sent */
} tp_slice;

/* One server figure scraped during a level, as samples (t_s[i], v[i]):
 * t_s in seconds from the level's start on the run's monotonic clock, the
 * time the scrape's answer arrived. */
typedef struct tp_server_series {
  char name[48]; /* tp_server_metric's name */
  char unit[16];
  size_t n;
  const double *t_s, *v;
} tp_server_series;

/* One rank of a distributed run, for one level. */
typedef struct tp_rank_info {
  uint32_t rank;
  char host[64];
  uint32_t concurrency; /* its share of the level's concurrency (or of the in-flight cap) */
  uint64_t requests;    /* records it contributed, warm-up included */
  uint32_t max_in_flight;
  bool ok;              /* its records of the level are in the figures */
  char failure[512];    /* why not ("" when ok) */
  /* Its clock minus rank 0's, measured just before the level by ping-pong
   * over MPI (the exchange with the shortest round trip); the true offset
   * lies within +/- clock_uncertainty_us (half that round trip). */
  double clock_offset_us;
  double clock_uncertainty_us;
} tp_rank_info;

/* Every figure of one level.  Times are in milliseconds, token throughputs
 * in tokens per second, request throughput in requests per second.  The
 * definitions are written down in docs/metrics.md. */
/* Multi-turn sessions (docs/sessions.md): the measured turns of one turn
 * index (0 = first), and the sessions of a level. */
typedef struct tp_turn_stats {
  uint32_t turn;
  uint64_t requests, succeeded;
  double ttft_ms_avg, ttft_ms_p50, ttft_ms_p99;
  double itl_ms_avg;
  double latency_ms_avg;
  double input_tokens_avg;  /* the whole history sent; -1 = not counted */
  double cached_tokens_avg; /* the server's usage.prompt_tokens_details.cached_tokens; -1 = not reported */
  double output_tokens_avg; /* -1 = not counted */
} tp_turn_stats;

typedef struct tp_session_summary {
  uint64_t sessions;  /* measured sessions (0 = not a sessions run) */
  uint64_t completed; /* every turn answered */
  double turns_avg;
  double time_s_avg, time_s_p99; /* first turn sent to last answer, think times included */
  double tokens_avg;             /* input + output tokens of all its turns; -1 = not counted */
} tp_session_summary;

/* How far a level's numbers can be trusted: the client's own figures
 * (docs/metrics.md, "Fidelity"). */
typedef enum tp_fidelity_verdict {
  TP_FIDELITY_OK = 0,          /* every figure within its threshold */
  TP_FIDELITY_DEGRADED = 1,    /* a figure crossed its threshold: the reason names it */
  TP_FIDELITY_CLIENT_BOUND = 2 /* the client itself was the bottleneck (its core busy, and late) */
} tp_fidelity_verdict;

typedef struct tp_fidelity {
  /* Text responses of the measured requests that share their arrival
   * time with the text response before them (one read, or one segment the
   * kernel merged, brought both: the client cannot see the gap between
   * them), out of the text responses that follow another of their
   * request; merged_pct is the share, in percent (NaN when no request had
   * two text responses). */
  uint64_t merged_responses, response_gaps;
  double merged_pct;
  /* Measured requests whose first two text responses share one time (the
   * first token may be dated at the second's arrival: its TTFT is late by
   * up to a token's gap), out of those with two text responses or more;
   * first_merged_pct is the share, in percent (NaN when none had two). */
  uint64_t first_merged, first_pairs;
  double first_merged_pct;
  /* Successful requests with an ITL whose text responses include some
   * that share a time (the ITL is marked: itl_merged in --json), and
   * those whose text all came at one time (no ITL: unmeasured, not 0). */
  uint64_t itl_merged_requests, itl_all_merged_requests;
  /* Gaps of exactly 0 between text responses sharing a time: left out of
   * the pooled ITL (itl_pooled_ms) and counted here. */
  uint64_t itl_pooled_merged_gaps;
  /* Loop lag: per read, the clock at the read minus the kernel's receive
   * stamp of the newest bytes read (n = reads that had a stamp). */
  tp_stat loop_lag_ms;
  /* Over the level's wall time (wall_s, from its start to its last
   * answer, warm-up included): reads per second, the CPU time of the
   * thread that runs the loop (user + system) in percent of one core, and
   * that of the whole process (every thread: the tokenizer's pool, an
   * in-process mock, a reader thread).  -1 = not measured. */
  uint64_t reads;
  double wall_s, reads_per_s, client_cpu_pct, process_cpu_pct;
  /* The verdict (a tp_fidelity_verdict; a number so that gates read it)
   * and, unless ok, every figure that crossed its threshold, in words:
   * "send lag p99 3.20 ms > 1 ms". */
  uint64_t verdict;
  char reason[256];
} tp_fidelity;

/* A level's steady state (docs/metrics.md, "Steady state"): the window from
 * the moment the requests in flight first reach threshold_abs =
 * ceil(threshold x target) to the last moment they fall below it, counted
 * over the measured requests that succeeded, and the figures over it.
 * found is false when the level has no target (an open-loop rate without a
 * cap) or never reached threshold_abs. */
typedef struct tp_steady {
  bool found;
  bool short_window; /* shorter than max(10 s, 10% of the level): maybe not representative */
  uint32_t target, threshold_abs, peak; /* peak: the most in flight, exactly */
  double threshold;
  /* Seconds from the first measured successful send. */
  double start_s, end_s, duration_s;
  uint64_t started, completed; /* requests sent, and requests ended, within the window */
  /* Requests ended in the window, input tokens of those sent in it, and
   * output tokens whose response arrived in it, each per second of it. */
  double request_throughput, input_token_throughput, output_token_throughput;
  /* Over the requests sent in the window, by the level's own per-request
   * definitions. */
  tp_stat ttft_ms, tpot_ms, latency_ms;
} tp_steady;

typedef struct tp_level_result {
  tp_load_mode load_mode;
  uint32_t concurrency;       /* the level's concurrency, or the cap in rate mode (0 = none) */
  double request_rate;        /* target requests/s in rate mode */
  uint32_t input_tokens_mean;  /* the sweep point's synthetic input length, 0 = not swept */
  uint32_t output_tokens_mean; /* the sweep point's output length, 0 = default */
  uint64_t requests;  /* measured requests (warm-up excluded) */
  uint64_t succeeded;
  uint64_t failed;
  uint64_t errors_by_class[TP_ERRCLASS_COUNT];
  /* Measured requests whose reused connection failed before any byte of
   * the answer and that were sent again, once, on a fresh connection (the
   * server closed a kept-alive connection; an HTTP/2 GOAWAY or
   * REFUSED_STREAM said it never processed them).  Not failures. */
  uint64_t reconnects;
  double duration_s; /* first measured send to last measured completion */
  bool tokens_available; /* a tokenizer counted tokens */

  tp_stat ttft_ms;
  tp_stat itl_ms;
  tp_stat latency_ms;
  tp_stat output_tokens;
  tp_stat input_tokens;
  tp_stat output_tps_per_user;
  /* The figures other tools report under their own definitions
   * (docs/metrics.md, "Side by side with other tools"). */
  tp_stat ttst_ms;                 /* second text response - first (GenAI-Perf) */
  tp_stat ttfo_ms;                 /* first answer text after reasoning - sent */
  tp_stat tpot_ms;                 /* (done - first token) / (tokens - 1) (vLLM) */
  tp_stat output_tps_per_user_itl; /* 1000 / ITL ms (GenAI-Perf's per-user throughput) */
  tp_stat itl_pooled_ms;           /* every gap between text responses, pooled (vLLM's ITL) */
  tp_stat latency_last_text_ms;    /* last text response - sent (GenAI-Perf's and AIPerf's latency) */
  tp_stat itl_answer_ms;           /* (last text - first answer) / (output - 1) (GenAI-Perf's ITL) */
  tp_stat output_tps_per_user_itl_answer; /* 1000 / itl_answer_ms (GenAI-Perf's per-user rate) */
  tp_stat generated_tokens;        /* output + reasoning tokens (AIPerf's output sequence length) */
  /* vLLM bench serve's own figures (its client's definitions). */
  tp_stat vllm_ttft_ms;       /* first response with choices - sent */
  tp_stat vllm_e2el_ms;       /* last response with choices - sent */
  tp_stat vllm_tpot_ms;       /* (E2EL - TTFT) / (vLLM output tokens - 1) */
  tp_stat vllm_output_tokens; /* usage.completion_tokens when given, else the answer's tokens */
  tp_stat vllm_itl_ms;        /* every gap between chunks with choices, pooled (vLLM's ITL) */
  tp_stat responses; /* responses per request */

  double output_token_throughput; /* tokens/s */
  double input_token_throughput;  /* tokens/s */
  double request_throughput;      /* requests/s */
  uint32_t max_in_flight;         /* highest in-flight count seen */
  char first_error[256];          /* one sample error message, or "" */

  /* Honesty about the client (docs/metrics.md). */
  double achieved_send_rate;     /* requests/s actually sent */
  tp_stat send_lag_ms;           /* actual send - planned send */
  uint64_t late_sends;           /* measured requests sent over 1 ms late */
  /* Measured requests whose first response is dated before their send: a
   * clock error of the client's (never expected; each is counted, warned
   * about and kept in records.jsonl as it was measured). */
  uint64_t answers_before_send;
  tp_stat ttft_from_planned_ms;  /* first token - planned send */
  tp_stat latency_from_planned_ms;
  double error_rate;             /* failed / measured */

  /* Goodput: successful requests meeting every set bound. */
  bool goodput_set;
  uint64_t goodput_requests;
  /* Successful requests an ITL bound could not judge: two or more tokens
   * (or none counted) but no inter-token latency (no tokenizer, a unary
   * answer, all text in one response).  They fail the bound. */
  uint64_t goodput_unjudged;
  double goodput_rps;
  double goodput_fraction;

  /* Output length against the requested one (counted with a tokenizer). */
  uint64_t length_mismatches;

  /* Server statistics for the level (Triton), target model first; owned by
   * the run.  n_server_models == 0 when not read. */
  const tp_server_model_stats *server_models;
  size_t n_server_models;

  /* With tp_output_config.vllm_requests: vLLM's per-request arrays of the
   * level as one JSON object's text (input_lens, output_lens, ttfts, itls,
   * latencies, start_times, queue_times, generated_texts, errors; see
   * docs/metrics.md, "Each tool's definitions"); owned by the run, NULL
   * when not asked for or not made. */
  const char *vllm_requests;

  /* The server's own token counts (OpenAI usage), where it reports them:
   * requests where they disagree with the client's count, and the prompt
   * tokens it says it served from its cache. */
  uint64_t usage_reported;
  uint64_t usage_output_mismatches, usage_input_mismatches;
  /* Requests whose count both the server and the client gave (0: the
   * client counted nothing to compare, e.g. no tokenizer). */
  uint64_t usage_output_compared, usage_input_compared;
  /* The size of the difference, |server - client| tokens, over the
   * compared requests: mean and largest, output and input. */
  double usage_output_diff_mean, usage_output_diff_max;
  double usage_input_diff_mean, usage_input_diff_max;
  /* Successful requests whose reported output / input tokens are the
   * server's count (--token-source), the rest being the client's. */
  uint64_t tokens_from_server_output, tokens_from_server_input;
  uint64_t cached_tokens;
  /* Reasoning text (OpenAI reasoning_content), counted apart. */
  tp_stat reasoning_tokens;

  /* Prometheus metrics scraped during the level (--metrics-url), owned by
   * the run; and vLLM's prefix-cache hit rate over the level (-1 = not
   * exposed). */
  const tp_server_metric *server_metrics;
  size_t n_server_metrics;
  double prefix_cache_hit_rate;
  /* Sessions: per turn index (owned by the run) and the summary. */
  const tp_turn_stats *turns;
  size_t n_turns;
  tp_session_summary sessions;
  uint32_t metrics_scrapes;
  uint32_t metrics_scrape_failures;

  /* Accuracy against the prompts' references (their "output" field). */
  uint64_t accuracy_scored;
  double exact_match_rate;
  double rouge_l_f1;

  /* Stability windows (perf_analyzer's rule). */
  uint32_t trials;
  bool stable;
  double window_start_s, window_end_s; /* measured span, seconds from level start */

  /* Distributed runs (docs/scale-out.md); ranks == 0 in a single process.
   * The figures above are computed from the union of every reporting
   * rank's records, their times moved onto rank 0's clock. */
  uint32_t ranks;           /* ranks in the run */
  uint32_t ranks_reporting; /* ranks whose records of this level are in the figures */
  bool incomplete;          /* a rank failed: its share of the load and its records are missing */
  double clock_uncertainty_us; /* the largest rank's offset uncertainty: the merged time line's precision */
  const tp_rank_info *rank_info; /* ranks entries, owned by the run */

  /* The server going away (docs/metrics.md, "When the server goes away"):
   * runs of requests in a row that failed to reach it (connection refused,
   * lost or timed out before any byte of an answer) or were not sent while
   * backing off; the longest one's first failure and the first answer
   * after it, in seconds from the level's start (back < 0: none by the
   * level's end), and its length.  server_outages == 0: none. */
  uint32_t server_outages;
  double server_away_s, server_back_s;
  uint64_t server_away_requests;
  bool server_gone; /* max_consecutive_failures in a row ended the level */
  /* An interruption (Ctrl-C, SIGTERM, SIGHUP) cut the level short: it ran
   * partial_ran_s seconds (from its start to the interruption) of the
   * partial_planned_s it was set to run (warm-up and duration; 0 = not
   * set by time), or of partial_planned_requests (the measured requests,
   * or sessions, of a count; 0 = not set by count).  Its figures cover
   * what ran. */
  bool partial;
  double partial_ran_s, partial_planned_s;
  uint64_t partial_planned_requests;
  /* The client's own figures and its verdict on them; in a distributed
   * run, the loop lag, reads and CPU are rank 0's. */
  tp_fidelity fidelity;
  tp_steady steady;
  /* Over-saturation seen while an open-loop level ran (docs/metrics.md,
   * "Saturation"): detected 1 or 0 (a number, so that gates read it), when
   * (seconds from the level's start; -1 = not seen), why, in words, and
   * whether --stop-on-saturation ended the level there. */
  struct {
    uint64_t detected;
    double at_s;
    bool stopped;
    char reason[192];
  } saturation;
  /* The time series (docs/metrics.md, "Time series"), owned by the run:
   * slices of slice_s seconds from start_ns (the level's start on the
   * records' clock), and the scraped server figures on the same clock. */
  double slice_s;
  uint64_t start_ns;
  const tp_slice *slices;
  size_t n_slices;
  const tp_server_series *server_series;
  size_t n_server_series;
} tp_level_result;

/* A run whose error rate at some level exceeds this is said in one line on
 * stderr even without --max-error-rate (which makes it fail). */
#define TP_ERROR_RATE_WARN 0.10

/* "ok", "degraded" or "client-bound" for a tp_fidelity verdict; "?" for
 * another value. */
TP_API const char *tp_fidelity_verdict_name(uint64_t verdict);

/* ------------------------------------------------------------------------ */
/* A run: a sweep of levels.                                                */

typedef struct tp_run tp_run;

/* Validates cfg (which is copied; borrowed strings must outlive the run) and
 * prepares the run: loads prompts and the tokenizer.  On failure returns a
 * negative code and writes a message for the user into err (naming the
 * setting by its settings key, "load.concurrency: 0 is out of range", or
 * the file and line, or peer, and what to do; the CLI prints a key as its
 * flag).  TP_EINVAL: bad option
 * or input file; TP_ENOTFOUND: a file is missing; TP_EIO: read error. */
TP_API int tp_run_new(tp_run **out, const tp_config *cfg, char *err, size_t errlen);

/* Executes every level: loads the tokenizer, checks the server and the
 * model (ServerLive, ModelReady, ModelMetadata unless skip_preflight), then
 * runs the sweep.  Returns 0 when the sweep completed (failed
 * requests are data, not an error), TP_ECONNECT when the server cannot be
 * reached, TP_ENOTFOUND / TP_EUNSUPPORTED when the model is missing, not
 * ready or lacks an input, or when the tokenizer cannot be loaded, TP_EINTERRUPTED when tp_run_interrupt stopped
 * it; the message is in err. Results measured so far stay readable. */
TP_API int tp_run_exec(tp_run *run, char *err, size_t errlen);

/* Asks a running sweep to stop after in-flight requests finish.  Safe to
 * call from a signal handler context through uv_async (it only sets a flag
 * and wakes the loop). */
TP_API void tp_run_interrupt(tp_run *run);

TP_API size_t tp_run_level_count(const tp_run *run);
/* Borrowed; valid until tp_run_free. */
TP_API const tp_level_result *tp_run_level(const tp_run *run, size_t i);

/* A mock server the caller started in-process for this run (`tokperf
 * profile --mock` starts one and points cfg->server.url at it): the reports name
 * the target "built-in mock" and record these settings (log_path: where its
 * log of true send times goes), and a distributed run is refused, since
 * ranks on other hosts cannot reach it.  Call before tp_run_exec; cfg is
 * borrowed and must outlive the run. */
TP_API void tp_run_set_mock(tp_run *run, const tp_mock_config *cfg);
/* The mock's counters (tp_mock_get_stats) once the sweep is over, for the
 * reports: the text report's "Mock server:" line and the JSON's "mock". */
TP_API void tp_run_set_mock_stats(tp_run *run, const tp_mock_stats *stats);
/* The counters given by tp_run_set_mock_stats; TP_ENOTFOUND when none. */
TP_API int tp_run_mock_stats(const tp_run *run, tp_mock_stats *out);

/* Writes the human report (a table per level, then the sweep summary). */
TP_API void tp_run_report_text(const tp_run *run, FILE *out);

/* Checks the CI gates (asserts, max_error_rate, every request failed) over
 * every level.  Prints one line per failed gate to `out` (which bound, the
 * measured value, the level) and returns the number of failed gates (0 =
 * pass).  Gates that cannot be read were refused by tp_run_new already. */
TP_API int tp_run_check_gates(const tp_run *run, FILE *out);
/* Writes the JSON document (schema, generator, configuration, figures with
 * units). Returns TP_EIO with a message in err when the file cannot be
 * written. */
TP_API int tp_run_write_json(const tp_run *run, const char *path, char *err, size_t errlen);
/* Writes len bytes to path as tokperf writes every output: through a
 * temporary file and a rename (its symbolic links followed), a FIFO or a
 * character device in place, no temporary left on failure.  Returns 0, or
 * TP_EIO with a message in err ("no space left on DIR (FILE not written
 * whole)" on a full disk). */
TP_API int tp_write_file(const char *path, const void *data, size_t len, char *err, size_t errlen);
/* Before a run: whether a file can be written at path (dir false; an
 * existing path must be a writable file, else its directory must exist and
 * be writable) or a directory made or used there (dir true, as mkdir -p).
 * Nothing is created.  Returns 0, or TP_EIO with a phrase in why ("no such
 * directory: out", "permission denied"). */
TP_API int tp_output_check(const char *path, bool dir, char *why, size_t whylen);
/* The number of prompts an input file holds, read as a run reads it (every
 * form of docs/inputs.md).  Returns 0, or the reader's error with its
 * message (the file and line) in err. */
TP_API int tp_input_count(const char *path, size_t *n, char *err, size_t errlen);
/* The same document printed to out (no temporary file).  Returns 0, or
 * TP_EIO / TP_ENOMEM with a message in err. */
TP_API int tp_run_print_json(const tp_run *run, FILE *out, char *err, size_t errlen);
/* Writes perf_analyzer's latency report (its -f FILE: one CSV row per
 * level, times in microseconds; docs/metrics.md says what fills each
 * column), and with an ensemble one file per composing model beside it
 * (NAME_vVERSION.FILE).  verbose adds perf_analyzer's --verbose-csv
 * columns.  Returns 0, or TP_EIO with a message in err. */
TP_API int tp_run_write_latency_csv(const tp_run *run, const char *path, bool verbose, char *err, size_t errlen);

TP_API void tp_run_free(tp_run *run);
/* The first of the run's own outputs that could not be written whole
 * during tp_run_exec (the records file, the artifact directory's files),
 * in words that name the file and, on a full disk, "no space left on DIR";
 * NULL when every one was.  What was measured is still in the run (its
 * reports, --json and -f are written by the caller). */
TP_API const char *tp_run_output_error(const tp_run *run);


/* Where the run wrote its artifacts ("" = none); borrowed. */
TP_API const char *tp_run_artifact_dir(const tp_run *run);

/* ------------------------------------------------------------------------ */
/* Comparing two runs                                                       */

/* Compares two --json documents level by level and prints a side-by-side
 * table to out.  fail_on rules are "METRIC[.STAT]:[+|-]N%" (a regression
 * beyond N% fails).  junit_path (may be NULL) receives JUnit XML.  Returns 0
 * when every rule held, 1 when one failed, or a negative TP_E* code with a
 * message in err (unreadable or mismatched files, a bad rule). */
TP_API int tp_compare(const char *json_a, const char *json_b, const char *const *fail_on, size_t n,
                      FILE *out, const char *junit_path, char *err, size_t errlen);

/* Writes html_path: a page comparing two or more --json documents (paths,
 * in order) level by level, a chart per headline metric with its numbers in
 * a table beside it.  Returns 0 or a negative TP_E* code with a message in
 * err. */
TP_API int tp_compare_html_page(const char *const *paths, size_t n, const char *html_path, char *err,
                                size_t errlen);

/* The names of the metrics gates and comparison rules take (the metric
 * registry, docs/metrics.md), comma-separated; with dist_only, only those
 * that take a statistic.  For help texts. */
TP_API void tp_metric_list(char *out, size_t outlen, bool dist_only);

/* ------------------------------------------------------------------------ */
/* Tokenizers                                                               */

typedef struct tp_tokenizer tp_tokenizer;

/* Loads a tokenizer.json, a sentencepiece tokenizer.model, a model
 * directory holding one (tokenizer.json preferred), or a model name
 * ORG/NAME found in the Hugging Face cache (tp_tokenizer_find).  On failure returns
 * TP_ENOTFOUND, TP_EINVAL, TP_EUNSUPPORTED or TP_EIO with a message naming
 * the path, what was looked for and what was found.  The tokenizer is
 * read-only after loading and may be used from several threads. */
TP_API int tp_tokenizer_load(tp_tokenizer **out, const char *path, char *err, size_t errlen);
/* Encodes without special tokens; *ids is returned owned (free()). */
TP_API int tp_tokenizer_encode(const tp_tokenizer *t, const char *text, size_t len, int32_t **ids,
                               size_t *n);
TP_API int tp_tokenizer_count(const tp_tokenizer *t, const char *text, size_t len, size_t *n);

/* Flags for tp_tokenizer_load_ex. */
typedef enum tp_tokenizer_flag {
  /* Also read which special tokens the tokenizer adds around a text (a
   * tokenizer.json's post_processor; a tokenizer.model's BOS, or
   * add_bos_token/add_eos_token of a tokenizer_config.json beside it), for
   * tp_tokenizer_encode_special.  A post-processor this build does not
   * implement then fails the load (TP_EUNSUPPORTED, naming the file and the
   * type); without the flag it is never read. */
  TP_TOKENIZER_FLAG_ADD_SPECIAL_TOKENS = 1
} tp_tokenizer_flag;

/* tp_tokenizer_load with flags (tp_tokenizer_flag; 0 is tp_tokenizer_load). */
TP_API int tp_tokenizer_load_ex(tp_tokenizer **out, const char *path, unsigned flags, char *err,
                                size_t errlen);
/* As tp_tokenizer_encode and tp_tokenizer_count, plus the special tokens
 * the tokenizer adds (Hugging Face's add_special_tokens=True); the text's
 * own ids are unchanged.  Needs t loaded with
 * TP_TOKENIZER_FLAG_ADD_SPECIAL_TOKENS, else TP_EINVAL. */
TP_API int tp_tokenizer_encode_special(const tp_tokenizer *t, const char *text, size_t len, int32_t **ids,
                                       size_t *n);
TP_API int tp_tokenizer_count_special(const tp_tokenizer *t, const char *text, size_t len, size_t *n);
/* What tp_tokenizer_encode_special adds, in tokenizers' template notation
 * with $A for the text ("<s> $A"); borrowed.  NULL without the flag. */
TP_API const char *tp_tokenizer_special_desc(const tp_tokenizer *t);
/* "sentencepiece", "tokenizer.json (BPE)", ... */
TP_API const char *tp_tokenizer_name(const tp_tokenizer *t);
TP_API void tp_tokenizer_free(tp_tokenizer *t);
/* Resolves what a user passes as a tokenizer: an existing file or directory
 * is returned as given; a model name ORG/NAME is looked up offline in the
 * Hugging Face cache ($HF_HUB_CACHE, else $HF_HOME/hub, else
 * $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub) at
 * revision (a branch, tag or commit hash; NULL for main), and the snapshot
 * directory holding tokenizer.json or tokenizer.model is returned.  *path
 * is owned (free()).  Returns 0, TP_ENOMEM, TP_EINVAL (a revision that is
 * no ref name) or TP_ENOTFOUND with a message naming every place looked at
 * and the command that fetches the files.  tp_tokenizer_load does the same
 * lookup at revision main by itself. */
TP_API int tp_tokenizer_find(const char *name, const char *revision, char **path, char *err, size_t errlen);

/* Value parsers for command lines: tokperf/parse.h. */
#include "tokperf/parse.h"

#ifdef __cplusplus
}
#endif
#endif

/* `tokperf aiperf profile`: AIPerf's `aiperf profile` command line, run by
 * tokperf.
 *
 * AIPerf's flags are a table of their own, because several mean something
 * else in `tokperf profile`: AIPerf streams only with --streaming, sends
 * one request at a time when neither --concurrency nor --request-rate is
 * given, counts --request-count after the warm-up, caps a rate with
 * --concurrency, and names its artifact directory
 * artifacts/<model>-openai-<endpoint type>-<stimulus>.  Each flag is mapped
 * onto a run's settings; a flag tokperf cannot honour is refused by name
 * (exit 2) with the nearest tokperf form, never dropped.  The run writes
 * tokperf's artifact directory, and AIPerf's own files are then put where
 * AIPerf puts them: profile_export_aiperf.json, profile_export_aiperf.csv,
 * the per-request profile_export.jsonl and inputs.json at the top of the
 * artifact directory (docs/aiperf.md). */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>

#include "options.h"

typedef struct ap {
  /* Endpoint */
  const char *model, *endpoint, *url, *api_key;
  int model_selection, endpoint_type;
  bool streaming;
  double request_timeout_s;
  /* Input */
  tp_str_list extra_inputs, headers, goodput;
  const char *input_file;
  bool fixed_schedule, fixed_schedule_auto_offset;
  int64_t fixed_schedule_start_offset, fixed_schedule_end_offset;
  const char *custom_dataset_type_name; /* NULL: told from the file */
  uint64_t random_seed;
  uint32_t conversation_num, turn_mean, turn_stddev;
  double turn_delay_mean, turn_delay_stddev, turn_delay_ratio;
  uint32_t isl, isl_block_size, osl, osl_stddev;
  double isl_stddev;
  uint32_t prefix_pool_size, prefix_length, batch_size;
  /* Output, tokenizer */
  const char *artifact_dir, *profile_export_file, *tokenizer, *tokenizer_revision;
  bool tokenizer_trust_remote_code;
  /* Load generator */
  double benchmark_duration, benchmark_grace_period, request_rate;
  uint32_t concurrency, request_count, warmup_request_count;
  int request_rate_mode;
  /* Service */
  int log_level, ui_type;
  bool verbose, extra_verbose;
  tp_str_list noop_values;
  /* tokperf's own */
  bool mock, quiet;
  bool refused; /* the refused rows' target, never set */
} ap;

#define ENDPOINT_TYPES "chat|completions|embeddings|rankings"
#define DATASET_TYPES "mooncake_trace|single_turn|multi_turn|random_pool"
enum { DS_MOONCAKE = 0, DS_SINGLE, DS_MULTI, DS_POOL };

#define AROW(key, flags, type, field, arg, dflt, lo, hi, choices, group, help, ex, mask) \
  { key, flags, type, offsetof(ap, field), arg, dflt, lo, hi, choices, group, help, ex, mask, NULL, NULL }
/* AIPerf flags tokperf does not do: refused by name (exit 2) before their
 * value is read, the help naming what to write instead. */
#define AREFUSE(key, flags, help)                                                                \
  AROW(key, flags, TP_SET_FLAG, refused, NULL, NULL, 1, 0, NULL, "Refused (AIPerf)", help, NULL, \
       TP_SETF_REFUSED)
#define NO_MEDIA \
  "tokperf sends text prompts only; leave the audio and image options out (a multimodal run needs AIPerf)"
#define G_EP "Endpoint (AIPerf)"
#define G_IN "Input (AIPerf)"
#define G_OUT "Output and tokenizer (AIPerf)"
#define G_LOAD "Load generator (AIPerf)"
#define G_SVC "Service (AIPerf)"

static const tp_setting ap_rows[] = {
    AROW("model", "--model-names|--model|-m", TP_SET_STR, model, "NAME", NULL, 1, 0, NULL, G_EP,
         "the model (required); one name: tokperf measures one model a run", "Qwen/Qwen3-0.6B", 0),
    AROW("model_selection_strategy", "--model-selection-strategy", TP_SET_ENUM, model_selection,
         "round_robin|random", "round_robin", 1, 0, "round_robin|random|round-robin=0", G_EP,
         "how AIPerf spreads prompts over several models; with tokperf's one model it changes nothing",
         "round_robin", 0),
    AROW("endpoint", "--custom-endpoint|--endpoint", TP_SET_STR, endpoint, "PATH", NULL, 1, 0, NULL, G_EP,
         "the request path instead of the endpoint type's (/v1/chat/completions, /v1/completions)",
         "/v1/chat/completions", 0),
    AROW("endpoint_type", "--endpoint-type", TP_SET_ENUM, endpoint_type, ENDPOINT_TYPES, "chat", 1, 0,
         ENDPOINT_TYPES, G_EP, "the API: chat or completions (embeddings and rankings are refused)", "chat",
         0),
    AROW("streaming", "--streaming", TP_SET_FLAG, streaming, NULL, NULL, 1, 0, NULL, G_EP,
         "stream the answers (AIPerf's default is one whole answer per request)", NULL, 0),
    AROW("url", "--url|-u", TP_SET_STR, url, "URL", "localhost:8000", 1, 0, NULL, G_EP, "the server",
         "http://localhost:8000", 0),
    AROW("request_timeout_seconds", "--request-timeout-seconds", TP_SET_F64, request_timeout_s, "SECONDS",
         "600", 1e-3, 1e9, NULL, G_EP, "a request not answered whole by then fails", "30", 0),
    AROW("api_key", "--api-key", TP_SET_STR, api_key, "KEY", NULL, 1, 0, NULL, G_EP,
         "sent as Authorization: Bearer KEY, never printed (tokperf profile reads it from OPENAI_API_KEY)",
         "sk-x", TP_SETF_SECRET),
    AROW("extra_inputs", "--extra-inputs", TP_SET_STR_LIST, extra_inputs, "NAME:VALUE|JSON", NULL, 1, 0, NULL,
         G_IN, "a field added to every request body, repeatable", "ignore_eos:true", TP_SETF_NARGS),
    AROW("header", "--header|-H", TP_SET_STR_LIST, headers, "NAME:VALUE|JSON", NULL, 1, 0, NULL, G_IN,
         "a header added to every request, repeatable", "X-Team:bench", TP_SETF_NARGS),
    AROW("input_file", "--input-file", TP_SET_STR, input_file, "FILE", NULL, 1, 0, NULL, G_IN,
         "the dataset, of --custom-dataset-type (a directory of files is refused)", "trace.jsonl",
         TP_SETF_FILE),
    AROW("fixed_schedule", "--fixed-schedule", TP_SET_FLAG, fixed_schedule, NULL, NULL, 1, 0, NULL, G_IN,
         "send each line of --input-file at its \"timestamp\" (ms)", NULL, 0),
    AROW("fixed_schedule_auto_offset", "--fixed-schedule-auto-offset", TP_SET_FLAG,
         fixed_schedule_auto_offset, NULL, NULL, 1, 0, NULL, G_IN,
         "the first timestamp is time 0 (tokperf always replays so)", NULL, 0),
    AROW("fixed_schedule_start_offset", "--fixed-schedule-start-offset", TP_SET_I64,
         fixed_schedule_start_offset, "MS", NULL, 0, 1e15, NULL, G_IN,
         "replay only the lines at or after this timestamp (unset: from the first)", "2000", TP_SETF_UNSET0),
    AROW("fixed_schedule_end_offset", "--fixed-schedule-end-offset", TP_SET_I64, fixed_schedule_end_offset,
         "MS", NULL, 0, 1e15, NULL, G_IN,
         "replay only the lines at or before this timestamp (unset: to the last)", "4000", TP_SETF_UNSET0),
    AROW("custom_dataset_type", "--custom-dataset-type", TP_SET_STR, custom_dataset_type_name, DATASET_TYPES,
         NULL, 1, 0, NULL, G_IN, "how --input-file is read (unset: told from its first line)", "single_turn",
         0),
    AROW("random_seed", "--random-seed", TP_SET_U64, random_seed, "N", "0", 1, 0, NULL, G_IN,
         "seed of the synthetic prompts and of the arrival times", "100", 0),
    AROW("goodput", "--goodput", TP_SET_STR_LIST, goodput, "TAG:VALUE ...", NULL, 1, 0, NULL, G_IN,
         "SLOs of a good request: time_to_first_token, inter_token_latency, request_latency, "
         "time_to_second_token (ms), output_token_throughput_per_user (tokens/s, a floor)",
         "time_to_first_token:100", TP_SETF_NARGS),
    AROW("conversation_num",
         "--conversation-num|--num-conversations|--num-sessions|--num-dataset-entries|"
         "--num-prompts",
         TP_SET_U32, conversation_num, "N", "100", 1, 1e9, NULL, G_IN,
         "distinct synthetic prompts (or random_pool entries), reused until the run ends", "8", 0),
    AROW("conversation_turn_mean", "--conversation-turn-mean|--session-turns-mean", TP_SET_U32, turn_mean,
         "N", "1", 1, 1e6, NULL, G_IN,
         "turns of a synthetic conversation: 1 (multi-turn: --custom-dataset-type multi_turn)", "1", 0),
    AROW("conversation_turn_stddev", "--conversation-turn-stddev|--session-turns-stddev", TP_SET_U32,
         turn_stddev, "N", "0", 0, 1e6, NULL, G_IN, "spread of the synthetic turns: 0", "0", 0),
    AROW("conversation_turn_delay_mean", "--conversation-turn-delay-mean|--session-turn-delay-mean",
         TP_SET_F64, turn_delay_mean, "MS", "0", 0, 1e12, NULL, G_IN,
         "delay between synthetic turns; with one turn a conversation it has nothing to delay, as in AIPerf",
         "0", 0),
    AROW("conversation_turn_delay_stddev", "--conversation-turn-delay-stddev|--session-turn-delay-stddev",
         TP_SET_F64, turn_delay_stddev, "MS", "0", 0, 1e12, NULL, G_IN,
         "spread of that delay; nothing to delay with one turn", "0", 0),
    AROW("conversation_turn_delay_ratio", "--conversation-turn-delay-ratio|--session-delay-ratio", TP_SET_F64,
         turn_delay_ratio, "X", "1", 0, 1e9, NULL, G_IN,
         "scale of the synthetic turns' delays; nothing to delay with one turn", "1", 0),
    AROW("isl", "--prompt-input-tokens-mean|--synthetic-input-tokens-mean|--isl", TP_SET_U32, isl, "N", "550",
         1, 1e7, NULL, G_IN, "tokens of a synthetic prompt (words where no tokenizer is found)", "100", 0),
    AROW("isl_stddev", "--prompt-input-tokens-stddev|--synthetic-input-tokens-stddev|--isl-stddev",
         TP_SET_F64, isl_stddev, "N", "0", 0, 1e7, NULL, G_IN,
         "standard deviation of the synthetic prompts' tokens", "10", 0),
    AROW("isl_block_size",
         "--prompt-input-tokens-block-size|--synthetic-input-tokens-block-size|--isl-block-size", TP_SET_U32,
         isl_block_size, "N", "512", 1, 1e7, NULL, G_IN, "tokens of one hash_ids block of a mooncake trace",
         "512", 0),
    AROW("osl", "--prompt-output-tokens-mean|--output-tokens-mean|--osl", TP_SET_U32, osl, "N", NULL, 1, 1e7,
         NULL, G_IN, "max_tokens of each request (unset: tokperf's default, 128, or the file's)", "200",
         TP_SETF_UNSET0),
    AROW("osl_stddev", "--prompt-output-tokens-stddev|--output-tokens-stddev|--osl-stddev", TP_SET_U32,
         osl_stddev, "N", "0", 0, 1e7, NULL, G_IN, "standard deviation of max_tokens", "20", 0),
    AROW("prefix_pool_size", "--prompt-prefix-pool-size|--prefix-prompt-pool-size|--num-prefix-prompts",
         TP_SET_U32, prefix_pool_size, "N", "0", 0, 1e6, NULL, G_IN,
         "shared prefixes to put before prompts (needs a tokenizer)", "4", 0),
    AROW("prefix_length", "--prompt-prefix-length|--prefix-prompt-length", TP_SET_U32, prefix_length, "N",
         "0", 0, 1e7, NULL, G_IN, "tokens of each shared prefix", "64", 0),
    AROW("batch_size", "--prompt-batch-size|--batch-size-text|--batch-size|-b", TP_SET_U32, batch_size, "N",
         "1", 1, 1e6, NULL, G_IN, "texts per request: 1 (AIPerf batches only embeddings and rankings)", "1",
         0),
    AROW("artifact_dir", "--output-artifact-dir|--artifact-dir", TP_SET_STR, artifact_dir, "DIR", NULL, 1, 0,
         NULL, G_OUT, "where the files go (default artifacts/<model>-openai-<type>-<stimulus>)",
         "artifacts/run1", TP_SETF_DIR),
    AROW("profile_export_file", "--profile-export-file", TP_SET_STR, profile_export_file, "FILE",
         "profile_export.jsonl", 1, 0, NULL, G_OUT,
         "name of the per-request JSONL export in the artifact directory", "records.jsonl", 0),
    AROW("tokenizer", "--tokenizer", TP_SET_STR, tokenizer, "PATH|ORG/NAME", NULL, 1, 0, NULL, G_OUT,
         "tokenizer file, directory or Hugging Face cache name (default: the model's, when the cache holds "
         "it)",
         "Qwen/Qwen3-0.6B", TP_SETF_FILE),
    AROW("tokenizer_revision", "--tokenizer-revision", TP_SET_STR, tokenizer_revision, "REV", "main", 1, 0,
         NULL, G_OUT, "the revision in the Hugging Face cache", "main", 0),
    AROW("tokenizer_trust_remote_code", "--tokenizer-trust-remote-code", TP_SET_FLAG,
         tokenizer_trust_remote_code, NULL, NULL, 1, 0, NULL, G_OUT,
         "no effect: tokperf runs no tokenizer code", NULL, 0),
    AROW("benchmark_duration", "--benchmark-duration", TP_SET_F64, benchmark_duration, "SECONDS", NULL, 1,
         1e9, NULL, G_LOAD, "measure for this long instead of --request-count", "30", TP_SETF_UNSET0),
    AROW("benchmark_grace_period", "--benchmark-grace-period", TP_SET_F64, benchmark_grace_period, "SECONDS",
         "30", 0, 1e9, NULL, G_LOAD,
         "with --benchmark-duration; tokperf waits for every request sent in it (bounded by "
         "--request-timeout-seconds), this long after an interruption",
         "15", 0),
    AROW("concurrency", "--concurrency", TP_SET_U32, concurrency, "N", NULL, 1, 1e6, NULL, G_LOAD,
         "requests in flight (with --request-rate: at most); neither given: 1", "4", TP_SETF_UNSET0),
    AROW("request_rate", "--request-rate", TP_SET_F64, request_rate, "RPS", NULL, 1e-9, 1e9, NULL, G_LOAD,
         "requests per second, open loop", "10", TP_SETF_UNSET0),
    AROW("request_rate_mode", "--request-rate-mode", TP_SET_ENUM, request_rate_mode, "constant|poisson",
         "poisson", 1, 0, "constant|poisson|concurrency_burst|concurrency-burst=2", G_LOAD,
         "arrival times of --request-rate: exactly 1/rate apart, or Poisson", "constant", 0),
    AROW("request_count", "--request-count|--num-requests", TP_SET_U32, request_count, "N", "10", 1, 1e9,
         NULL, G_LOAD, "requests measured", "64", 0),
    AROW("warmup_request_count", "--warmup-request-count|--num-warmup-requests", TP_SET_U32,
         warmup_request_count, "N", "0", 0, 1e9, NULL, G_LOAD, "requests sent first and left out", "1", 0),
    AROW("log_level", "--log-level", TP_SET_ENUM, log_level, "LEVEL", "info", 1, 0,
         "trace|debug|info|notice|warning|success|error|critical", G_SVC,
         "tokperf logs no more than its progress and notes", "info", TP_SETF_NOOP),
    AROW("verbose", "--verbose|-v", TP_SET_FLAG, verbose, NULL, NULL, 1, 0, NULL, G_SVC,
         "tokperf logs no more than its progress and notes", NULL, TP_SETF_NOOP),
    AROW("extra_verbose", "--extra-verbose|-vv", TP_SET_FLAG, extra_verbose, NULL, NULL, 1, 0, NULL, G_SVC,
         "tokperf logs no more than its progress and notes", NULL, TP_SETF_NOOP),
    AROW("ui_type", "--ui-type|--ui", TP_SET_ENUM, ui_type, "dashboard|simple|none", "dashboard", 1, 0,
         "dashboard|simple|none", G_SVC,
         "none: no progress lines; dashboard and simple: tokperf's progress line", "none", 0),
    AROW("noop_values",
         "--record-processor-service-count|--record-processors|--workers-max|--max-workers|"
         "--zmq-host|--zmq-ipc-path",
         TP_SET_STR_LIST, noop_values, "VALUE", NULL, 1, 0, NULL, G_SVC,
         "AIPerf's processes and sockets; tokperf is one process with one event loop", "4", TP_SETF_NOOP),
    AREFUSE("refused_public_dataset", "--public-dataset",
            "tokperf downloads nothing: fetch ShareGPT's JSON yourself and give it as --input-file FILE "
            "--custom-dataset-type single_turn (tokperf reads ShareGPT files)"),
    AREFUSE(
        "refused_sequence_distribution", "--seq-dist|--sequence-distribution",
        "tokperf draws one input/output length distribution per level: run one line per pair with --isl N "
        "--osl N (or sweep them with tokperf profile --synthetic-input-tokens-mean 64,256,1024)"),
    AREFUSE("refused_request_cancellation", "--request-cancellation-rate|--request-cancellation-delay",
            "tokperf does not cancel requests on purpose; leave it out (the run then measures every request "
            "whole; --request-timeout-seconds bounds a request's time)"),
    AREFUSE("refused_audio",
            "--audio-length-mean|--audio-length-stddev|--audio-batch-size|--batch-size-audio|--audio-format|"
            "--audio-depths|--audio-sample-rates|--audio-num-channels",
            NO_MEDIA),
    AREFUSE("refused_image",
            "--image-height-mean|--image-height-stddev|--image-width-mean|--image-width-stddev|--image-batch-"
            "size|"
            "--batch-size-image|--image-format",
            NO_MEDIA),
    AREFUSE("refused_developer",
            "--enable-yappi-profiling|--debug-service|--debug-services|--trace-service|--trace-services|"
            "--show-internal-metrics|--disable-uvloop",
            "an AIPerf developer-mode flag (AIPERF_DEV_MODE); tokperf has no such services: leave it out "
            "(tokperf profile --json FILE writes every figure tokperf has)"),
    AROW("mock", "--mock", TP_SET_FLAG, mock, NULL, NULL, 1, 0, NULL, "tokperf's own",
         "run against the built-in mock server", NULL, 0),
    AROW("quiet", "-q|--quiet", TP_SET_FLAG, quiet, NULL, NULL, 1, 0, NULL, "tokperf's own",
         "no progress lines on stderr", NULL, 0),
};

#define AP_N (sizeof(ap_rows) / sizeof(ap_rows[0]))

/* The spelling of a flag the user wrote ("--session-turns-mean" for the
 * row "--conversation-turn-mean|--session-turns-mean"), for messages. */
static const char *spelled(int argc, char **argv, const char *flags) {
  for (int i = argc - 1; i >= 0; i--) {
    size_t len = strcspn(argv[i], "=");
    for (const char *p = flags; *p;) {
      size_t l = strcspn(p, "|");
      if (l == len && memcmp(p, argv[i], len) == 0) return argv[i];
      p += l + (p[l] == '|');
    }
  }
  return flags;
}

static int fail(const char *msg) {
  fprintf(stderr, "tokperf aiperf profile: %s\ntry 'tokperf aiperf profile --help'\n", msg);
  return TP_EXIT_USAGE;
}

tp_settings_part tp_cmd_aiperf_defaults(void) {
  static ap d;
  tp_settings_defaults(ap_rows, AP_N, &d);
  return (tp_settings_part){ap_rows, AP_N, &d, "", NULL};
}

static void help(FILE *out) {
  ap d;
  memset(&d, 0, sizeof(d));
  tp_settings_defaults(ap_rows, AP_N, &d);
  fprintf(out,
          "Usage: tokperf aiperf profile [OPTIONS]\n\n"
          "AIPerf's `aiperf profile` command line, run by tokperf: swap `aiperf profile` for\n"
          "`tokperf aiperf profile`. The flags keep AIPerf's meanings and defaults (--streaming off,\n"
          "one request at a time without --concurrency or --request-rate, --request-count 10), the\n"
          "datasets are read as AIPerf reads them (single_turn, multi_turn, mooncake_trace,\n"
          "random_pool), and AIPerf's files are written where AIPerf writes them:\n"
          "artifacts/<model>-openai-<type>-<stimulus>/profile_export_aiperf.json, .csv,\n"
          "profile_export.jsonl and inputs.json, beside tokperf's own. The differences are in\n"
          "docs/aiperf.md. Every other tokperf option: tokperf profile.\n\n");
  tp_settings_part part = {ap_rows, AP_N, &d, "", NULL};
  tp_settings_help(out, &part, 1, 0);
  fprintf(out,
          "\nExample:\n  tokperf aiperf profile --model Qwen/Qwen3-0.6B --endpoint-type chat --streaming \\\n"
          "      --url localhost:8000 --concurrency 4 --request-count 64 --isl 100 --osl 200\n");
}

/* ---- goodput ------------------------------------------------------------------ */

/* AIPerf's --goodput "time_to_first_token:100 inter_token_latency:3.4",
 * AIPerf's metric tags onto tokperf's bounds.  AIPerf's inter_token_latency
 * is (latency - TTFT) / (output tokens - 1), tokperf's tpot. */
static int map_goodput(const ap *o, tp_config *c, char *err, size_t errlen) {
  for (size_t i = 0; i < o->goodput.n; i++) {
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", o->goodput.v[i]);
    for (char *sv = NULL, *t = strtok_r(buf, " ,", &sv); t; t = strtok_r(NULL, " ,", &sv)) {
      char *colon = strchr(t, ':'), *end = NULL;
      double v = colon ? strtod(colon + 1, &end) : 0;
      if (!colon || end == colon + 1 || *end || !(v > 0) || !isfinite(v)) {
        snprintf(err, errlen,
                 "--goodput '%s': expected TAG:VALUE words with a positive VALUE, like "
                 "time_to_first_token:100",
                 o->goodput.v[i]);
        return -1;
      }
      *colon = 0;
      if (strcmp(t, "time_to_first_token") == 0)
        c->measure.goodput_ttft_ms = v;
      else if (strcmp(t, "inter_token_latency") == 0)
        c->measure.goodput_tpot_ms = v;
      else if (strcmp(t, "request_latency") == 0)
        c->measure.goodput_latency_ms = v;
      else if (strcmp(t, "time_to_second_token") == 0)
        c->measure.goodput_ttst_ms = v;
      else if (strcmp(t, "output_token_throughput_per_user") == 0)
        c->measure.goodput_tps_per_user_min = v;
      else {
        snprintf(err, errlen,
                 "--goodput '%s': tokperf bounds time_to_first_token, inter_token_latency, "
                 "request_latency, time_to_second_token (ms) and output_token_throughput_per_user "
                 "(tokens/s); for other figures use tokperf profile --assert 'METRIC.STAT OP VALUE'",
                 t);
        return -1;
      }
    }
  }
  return 0;
}

/* ---- headers and extra inputs -------------------------------------------------- */

/* AIPerf's "Name:Value" headers, or a JSON object of them, as tokperf's
 * "Name: value" lines (owned copies in *owned). */
static int map_headers(const ap *o, tp_str_list *out, char **owned, size_t *n_owned, char *err,
                       size_t errlen) {
  for (size_t i = 0; i < o->headers.n; i++) {
    const char *h = o->headers.v[i];
    json_t *j = h[0] == '{' ? json_loads(h, 0, NULL) : NULL;
    if (j && json_is_object(j)) {
      const char *k;
      json_t *v;
      json_object_foreach(j, k, v) {
        if (!json_is_string(v) || out->n >= TP_STR_LIST_MAX || *n_owned >= 2 * TP_STR_LIST_MAX) {
          json_decref(j);
          snprintf(err, errlen, "--header '%s': expected a JSON object of strings (at most %d headers)", h,
                   TP_STR_LIST_MAX);
          return -1;
        }
        size_t n = strlen(k) + json_string_length(v) + 3;
        char *s = malloc(n);
        if (!s) {
          json_decref(j);
          snprintf(err, errlen, "out of memory");
          return -1;
        }
        snprintf(s, n, "%s: %s", k, json_string_value(v));
        owned[(*n_owned)++] = s;
        out->v[out->n++] = s;
      }
      json_decref(j);
      continue;
    }
    json_decref(j);
    const char *colon = strchr(h, ':');
    if (!colon || colon == h || out->n >= TP_STR_LIST_MAX) {
      snprintf(err, errlen, "--header '%s': expected Name:Value or a JSON object, like X-Team:bench", h);
      return -1;
    }
    out->v[out->n++] = h;
  }
  return 0;
}

/* ---- datasets ------------------------------------------------------------------ */

/* Whether the first JSON line of path has key (null counts as absent). */
static bool first_line_has(const char *path, const char *key) {
  FILE *f = fopen(path, "r");
  if (!f) return false;
  char *line = NULL;
  size_t cap = 0;
  bool has = false;
  while (getline(&line, &cap, f) > 0) {
    json_t *j = json_loads(line, JSON_DECODE_ANY, NULL);
    if (!j) continue;
    json_t *v = json_is_object(j) ? json_object_get(j, key) : NULL;
    has = v && !json_is_null(v);
    json_decref(j);
    break;
  }
  free(line);
  fclose(f);
  return has;
}

/* The lines of a trace within AIPerf's --fixed-schedule-start-offset and
 * --fixed-schedule-end-offset, into a file of the artifact directory; both
 * ends included, as AIPerf includes them. */
static int cut_schedule(const char *in, const char *out, int64_t start, int64_t end, size_t *kept, char *err,
                        size_t errlen) {
  FILE *f = fopen(in, "r");
  if (!f) {
    snprintf(err, errlen, "--input-file %s: %s", in, strerror(errno));
    return -1;
  }
  FILE *w = fopen(out, "w");
  if (!w) {
    snprintf(err, errlen, "cannot write %s: %s", out, strerror(errno));
    fclose(f);
    return -1;
  }
  char *line = NULL;
  size_t cap = 0, lineno = 0;
  ssize_t n;
  int rv = 0;
  *kept = 0;
  while ((n = getline(&line, &cap, f)) > 0) {
    lineno++;
    if (strspn(line, " \t\r\n") == (size_t)n) continue;
    json_t *j = json_loads(line, 0, NULL);
    json_t *ts = j ? json_object_get(j, "timestamp") : NULL;
    if (!json_is_number(ts)) {
      snprintf(err, errlen, "%s:%zu: the fixed schedule's offsets need a \"timestamp\" (ms) on every line",
               in, lineno);
      json_decref(j);
      rv = -1;
      break;
    }
    double t = json_number_value(ts);
    json_decref(j);
    if ((start >= 0 && t < (double)start) || (end >= 0 && t > (double)end)) continue;
    fputs(line, w);
    if (line[n - 1] != '\n') fputc('\n', w);
    (*kept)++;
  }
  free(line);
  fclose(f);
  if (fclose(w) && !rv) {
    snprintf(err, errlen, "cannot write %s: %s", out, strerror(errno));
    rv = -1;
  }
  if (!rv && !*kept) {
    snprintf(err, errlen, "--input-file %s: no line has a timestamp within the start and end offsets", in);
    rv = -1;
  }
  return rv;
}

/* mkdir -p */
static int make_dirs(const char *dir) {
  char p[1100];
  snprintf(p, sizeof(p), "%s", dir);
  for (char *s = p + 1; *s; s++) {
    if (*s != '/') continue;
    *s = 0;
    if (mkdir(p, 0777) && errno != EEXIST) return -1;
    *s = '/';
  }
  return mkdir(p, 0777) && errno != EEXIST ? -1 : 0;
}

static size_t count_lines(const char *path) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char *line = NULL;
  size_t cap = 0, n = 0;
  ssize_t l;
  while ((l = getline(&line, &cap, f)) > 0)
    if (strspn(line, " \t\r\n") != (size_t)l) n++;
  free(line);
  fclose(f);
  return n;
}

/* ---- AIPerf's files ------------------------------------------------------------- */

static int copy_file(const char *from, const char *to, char *err, size_t errlen) {
  FILE *f = fopen(from, "rb");
  if (!f) {
    snprintf(err, errlen, "cannot read %s: %s", from, strerror(errno));
    return -1;
  }
  char *data = NULL;
  size_t len = 0, cap = 0;
  char buf[65536];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) {
    if (len + n > cap) {
      cap = (len + n) * 2;
      char *d = realloc(data, cap);
      if (!d) {
        free(data);
        fclose(f);
        snprintf(err, errlen, "out of memory");
        return -1;
      }
      data = d;
    }
    memcpy(data + len, buf, n);
    len += n;
  }
  fclose(f);
  int rv = tp_write_file(to, data ? data : "", len, err, errlen);
  free(data);
  return rv ? -1 : 0;
}

/* AIPerf's inputs.json, {"data": [{"session_id", "payloads": [body]}]},
 * from responses.jsonl: each measured request's body as tokperf sent it
 * (the prompt, the model, max_tokens, stream and the extra inputs). */
static int write_inputs_json(const char *dir, const tp_config *c, const ap *o, char *err, size_t errlen) {
  char path[1100];
  snprintf(path, sizeof(path), "%s/responses.jsonl", dir);
  FILE *f = fopen(path, "r");
  if (!f) {
    snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
    return -1;
  }
  json_t *data = json_array();
  char *line = NULL;
  size_t cap = 0;
  bool chat = c->server.service_kind == TP_SERVICE_OPENAI_CHAT;
  while (getline(&line, &cap, f) > 0) {
    json_t *r = json_loads(line, 0, NULL);
    if (!r) continue;
    json_t *prompt = json_object_get(r, "prompt");
    json_t *body = json_object();
    json_object_set_new(body, "model", json_string(c->server.model ? c->server.model : ""));
    if (chat && json_is_array(prompt)) {
      json_object_set(body, "messages", prompt);
    } else if (chat) {
      json_t *m = json_object();
      json_object_set_new(m, "role", json_string("user"));
      json_object_set(m, "content", prompt ? prompt : json_null());
      json_t *msgs = json_array();
      json_array_append_new(msgs, m);
      json_object_set_new(body, "messages", msgs);
    } else {
      json_object_set(body, "prompt", prompt ? prompt : json_null());
    }
    json_object_set_new(body, "stream", json_boolean(c->server.streaming));
    if (o->osl) json_object_set_new(body, "max_tokens", json_integer(o->osl));
    for (size_t i = 0; i < o->extra_inputs.n; i++) {
      const char *e = o->extra_inputs.v[i];
      json_t *ej = e[0] == '{' ? json_loads(e, 0, NULL) : NULL;
      if (json_is_object(ej)) {
        json_object_update(body, ej);
      } else {
        const char *colon = strchr(e, ':');
        if (colon) {
          char k[256];
          snprintf(k, sizeof(k), "%.*s", (int)(colon - e), e);
          json_t *v = json_loads(colon + 1, JSON_DECODE_ANY, NULL);
          json_object_set_new(body, k, v ? v : json_string(colon + 1));
        }
      }
      json_decref(ej);
    }
    json_t *payloads = json_array();
    json_array_append_new(payloads, body);
    json_t *sess = json_object();
    json_t *id = json_object_get(r, "id");
    char sid[64];
    snprintf(sid, sizeof(sid), "%" JSON_INTEGER_FORMAT, json_is_integer(id) ? json_integer_value(id) : 0);
    json_object_set_new(sess, "session_id", json_string(sid));
    json_object_set_new(sess, "payloads", payloads);
    json_array_append_new(data, sess);
    json_decref(r);
  }
  free(line);
  fclose(f);
  json_t *doc = json_object();
  json_object_set_new(doc, "data", data);
  char *text = json_dumps(doc, JSON_INDENT(2));
  json_decref(doc);
  snprintf(path, sizeof(path), "%s/inputs.json", dir);
  int rv = text ? tp_write_file(path, text, strlen(text), err, errlen) : -1;
  free(text);
  return rv ? -1 : 0;
}

/* The level's AIPerf files (tokperf keeps them in <dir>/<level>/aiperf/)
 * at the top of the artifact directory, where AIPerf writes them. */
static int place_aiperf_files(const char *dir, const char *jsonl_name, char *err, size_t errlen) {
  DIR *d = opendir(dir);
  if (!d) {
    snprintf(err, errlen, "cannot read %s: %s", dir, strerror(errno));
    return -1;
  }
  struct dirent *e;
  char level[1300] = "";
  while ((e = readdir(d))) {
    if (e->d_name[0] == '.') continue;
    char p[1300];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s/aiperf", dir, e->d_name);
    if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
      snprintf(level, sizeof(level), "%s", p);
      break;
    }
  }
  closedir(d);
  if (!level[0]) {
    snprintf(err, errlen, "%s: the run wrote no level (nothing measured)", dir);
    return -1;
  }
  static const char *const names[][2] = {{"profile_export_aiperf.json", "profile_export_aiperf.json"},
                                         {"profile_export_aiperf.csv", "profile_export_aiperf.csv"},
                                         {"profile_export.jsonl", NULL}};
  for (size_t i = 0; i < 3; i++) {
    char from[1400], to[1400];
    snprintf(from, sizeof(from), "%s/%s", level, names[i][0]);
    snprintf(to, sizeof(to), "%s/%s", dir, names[i][1] ? names[i][1] : jsonl_name);
    if (copy_file(from, to, err, errlen)) return -1;
  }
  return 0;
}

/* AIPerf's directory name: <model>-openai-<type>-<stimulus>, the model's
 * "/" as "_", a rate as Python prints a float. */
static void artifact_name(const ap *o, const char *model, bool schedule, char *out, size_t len) {
  char m[256];
  snprintf(m, sizeof(m), "%s", model);
  for (char *p = m; *p; p++)
    if (*p == '/') *p = '_';
  char stim[128] = "";
  if (schedule) {
    snprintf(stim, sizeof(stim), "fixed_schedule");
  } else {
    int at = 0;
    if (o->concurrency) at = snprintf(stim, sizeof(stim), "concurrency%" PRIu32, o->concurrency);
    if (o->request_rate > 0) {
      char r[48];
      if (o->request_rate == floor(o->request_rate) && o->request_rate < 1e15)
        snprintf(r, sizeof(r), "%.1f", o->request_rate);
      else
        snprintf(r, sizeof(r), "%.17g", o->request_rate);
      snprintf(stim + at, sizeof(stim) - (size_t)at, "%srequest_rate%s", at ? "-" : "", r);
    }
  }
  snprintf(out, len, "%s-openai-%s-%s", m, o->endpoint_type == 1 ? "completions" : "chat", stim);
}

/* ---- the entry ------------------------------------------------------------------ */

int tp_cmd_aiperf(int argc, char **argv) {
  if (argc < 1 || strcmp(argv[0], "profile") != 0) {
    if (argc >= 1 && (strcmp(argv[0], "--help") == 0 || strcmp(argv[0], "-h") == 0)) {
      help(stdout);
      return TP_EXIT_OK;
    }
    fprintf(stderr,
            "tokperf aiperf: expected the subcommand profile, as in `aiperf profile` (tokperf runs "
            "AIPerf's profile command line)\ntry 'tokperf aiperf profile --help'\n");
    return TP_EXIT_USAGE;
  }
  argc--, argv++;
  char err[2048];
  ap o;
  memset(&o, 0, sizeof(o));
  tp_settings_defaults(ap_rows, AP_N, &o);
  unsigned char given[AP_N];
  memset(given, 0, sizeof(given));
  tp_settings_part part = {ap_rows, AP_N, &o, "", given};
  bool want_help = false;
  if (tp_settings_parse(&part, 1, argc, argv, NULL, NULL, &want_help, err, sizeof(err))) return fail(err);
  if (want_help) {
    help(stdout);
    return TP_EXIT_OK;
  }
  /* The offsets' rows have no default: unset is -1 here (0 is an offset). */
  for (size_t i = 0; i < AP_N; i++) {
    if (given[i]) continue;
    if (strcmp(ap_rows[i].key, "fixed_schedule_start_offset") == 0) o.fixed_schedule_start_offset = -1;
    if (strcmp(ap_rows[i].key, "fixed_schedule_end_offset") == 0) o.fixed_schedule_end_offset = -1;
  }
  /* AIPerf's dataset types, in any case (AIPerf's enums ignore it). */
  int dataset_type = -1;
  if (o.custom_dataset_type_name) {
    static const char *const types[] = {"mooncake_trace", "single_turn", "multi_turn", "random_pool"};
    for (int t = 0; t < 4; t++)
      if (strcasecmp(o.custom_dataset_type_name, types[t]) == 0) dataset_type = t;
    if (dataset_type < 0) {
      snprintf(err, sizeof(err),
               "--custom-dataset-type '%s': expected one of mooncake_trace, single_turn, "
               "multi_turn, random_pool",
               o.custom_dataset_type_name);
      return fail(err);
    }
  }
  /* AIPerf's own checks, before anything is sent. */
  if (!o.model && !o.mock)
    return fail("--model NAME is required, as AIPerf requires it (--model Qwen/Qwen3-0.6B)");
  if (o.model && strchr(o.model, ',')) {
    const char *f = spelled(argc, argv, "--model-names|--model|-m");
    snprintf(err, sizeof(err),
             "%.*s '%s': tokperf measures one model a run: give one name and run once per model",
             (int)strcspn(f, "="), f, o.model);
    return fail(err);
  }
  if (o.endpoint_type >= 2)
    return fail(
        "--endpoint-type embeddings and rankings: tokperf measures generation: --endpoint-type chat or "
        "completions");
  if (o.request_rate_mode == 2 && o.request_rate > 0)
    return fail(
        "--request-rate-mode concurrency_burst: not with --request-rate (as in AIPerf); give --concurrency "
        "N alone");
  bool duration_given = false, grace_given = false, count_given = false;
  for (size_t i = 0; i < AP_N; i++) {
    if (!given[i]) continue;
    duration_given |= strcmp(ap_rows[i].key, "benchmark_duration") == 0;
    grace_given |= strcmp(ap_rows[i].key, "benchmark_grace_period") == 0;
    count_given |= strcmp(ap_rows[i].key, "request_count") == 0;
  }
  if (duration_given && count_given)
    return fail("--request-count and --benchmark-duration exclude each other (as in AIPerf): give one");
  if (grace_given && !duration_given)
    return fail("--benchmark-grace-period goes with --benchmark-duration (as in AIPerf)");
  if ((o.fixed_schedule || o.fixed_schedule_auto_offset || o.fixed_schedule_start_offset >= 0 ||
       o.fixed_schedule_end_offset >= 0) &&
      !o.input_file)
    return fail(
        "the fixed schedule's options need --input-file FILE, a trace with timestamps (as in AIPerf)");
  if (o.fixed_schedule_auto_offset && o.fixed_schedule_start_offset >= 0)
    return fail(
        "--fixed-schedule-start-offset and --fixed-schedule-auto-offset exclude each other (as in AIPerf)");
  if (o.fixed_schedule_start_offset >= 0 && o.fixed_schedule_end_offset >= 0 &&
      o.fixed_schedule_start_offset > o.fixed_schedule_end_offset)
    return fail("--fixed-schedule-start-offset is after --fixed-schedule-end-offset");
  if (o.turn_mean != 1 || o.turn_stddev != 0) {
    const char *f = o.turn_mean != 1
                        ? spelled(argc, argv, "--conversation-turn-mean|--session-turns-mean")
                        : spelled(argc, argv, "--conversation-turn-stddev|--session-turns-stddev");
    snprintf(err, sizeof(err),
             "%.*s: tokperf makes synthetic conversations of one turn; write the conversations "
             "as AIPerf multi_turn lines and give --input-file FILE --custom-dataset-type multi_turn",
             (int)strcspn(f, "="), f);
    return fail(err);
  }
  if (o.batch_size != 1) {
    const char *f = spelled(argc, argv, "--prompt-batch-size|--batch-size-text|--batch-size|-b");
    snprintf(err, sizeof(err),
             "%.*s: tokperf sends one text a request (AIPerf batches only embeddings and "
             "rankings, which tokperf does not measure): leave it out",
             (int)strcspn(f, "="), f);
    return fail(err);
  }
  if (o.input_file) {
    struct stat st;
    if (stat(o.input_file, &st)) {
      snprintf(err, sizeof(err), "--input-file %s: %s", o.input_file, strerror(errno));
      return fail(err);
    }
    if (S_ISDIR(st.st_mode)) {
      snprintf(err, sizeof(err),
               "--input-file %s is a directory: tokperf reads one file (concatenate the "
               "random_pool files into one JSONL file)",
               o.input_file);
      return fail(err);
    }
  }

  tp_cli cli;
  tp_cli_init(&cli);
  tp_config *c = &cli.cfg;
  int code = TP_EXIT_USAGE;
  char *owned[2 * TP_STR_LIST_MAX];
  size_t n_owned = 0;
  char sched_path[1100] = "";
  c->server.service_kind = o.endpoint_type == 1 ? TP_SERVICE_OPENAI_COMPLETIONS : TP_SERVICE_OPENAI_CHAT;
  c->server.url = o.url;
  c->server.endpoint = o.endpoint;
  c->server.model = o.model ? o.model : "";
  c->server.streaming = o.streaming;
  c->server.request_timeout_ms = (uint64_t)llround(o.request_timeout_s * 1000.0);
  c->server.api_key = o.api_key;
  cli.use_mock = o.mock;
  if (o.quiet || o.ui_type == 2) c->output.progress = NULL;
  c->prompts.random_seed = o.random_seed;
  if (map_headers(&o, &cli.headers, owned, &n_owned, err, sizeof(err))) goto usage;
  c->server.headers = cli.headers.v;
  c->server.n_headers = cli.headers.n;
  c->server.extra_inputs = o.extra_inputs.v;
  c->server.n_extra_inputs = o.extra_inputs.n;
  if (map_goodput(&o, c, err, sizeof(err))) goto usage;

  /* The tokenizer: --tokenizer, else the model's name when the Hugging
   * Face cache holds it (AIPerf's default), else none. */
  if (o.tokenizer) {
    c->prompts.tokenizer = o.tokenizer;
  } else if (o.model) {
    char *found = NULL;
    char e2[1024];
    struct stat st;
    /* A name that is no ORG/NAME comes back as itself: only a path that
     * exists is a tokenizer. */
    if (tp_tokenizer_find(o.model, o.tokenizer_revision, &found, e2, sizeof(e2)) == 0 && found &&
        stat(found, &st) == 0) {
      free(found);
      c->prompts.tokenizer = o.model;
      if (!o.quiet) fprintf(stderr, "tokperf aiperf: tokenizer: %s, from the Hugging Face cache\n", o.model);
    } else {
      free(found);
      if (!o.quiet)
        fprintf(stderr,
                "tokperf aiperf: note: no tokenizer for %s in the Hugging Face cache: synthetic prompts are "
                "measured in words and token counts come from the server (give --tokenizer)\n",
                o.model);
    }
  }

  /* "main" is the cache's default; another revision picks a snapshot of
   * the tokenizer's name. */
  if (c->prompts.tokenizer && strcmp(o.tokenizer_revision, "main"))
    cli.tokenizer_revision = o.tokenizer_revision;

  /* The dataset. */
  bool schedule = false;
  if (o.input_file) {
    int type = dataset_type;
    bool typed = type >= 0;
    bool has_ts = first_line_has(o.input_file, "timestamp");
    if (!typed) type = has_ts ? DS_MOONCAKE : first_line_has(o.input_file, "turns") ? DS_MULTI : DS_SINGLE;
    bool offsets = o.fixed_schedule_start_offset >= 0 || o.fixed_schedule_end_offset >= 0;
    schedule = o.fixed_schedule || offsets || o.fixed_schedule_auto_offset || (type == DS_MOONCAKE && has_ts);
    if (schedule && !has_ts) {
      snprintf(err, sizeof(err), "--input-file %s: a fixed schedule needs a \"timestamp\" (ms) on each line",
               o.input_file);
      goto usage;
    }
    if (schedule) {
      c->load.schedule_file = o.input_file;
      c->load.prefix_block_tokens = o.isl_block_size;
    } else {
      c->prompts.input_file = o.input_file;
    }
    if (type == DS_MOONCAKE || schedule) {
      /* AIPerf sends each line of a trace, and each of a schedule, once,
       * whatever --request-count. */
      c->measure.request_count = count_lines(o.input_file);
    }
  } else {
    c->prompts.num_prompts = o.conversation_num;
    if (c->prompts.tokenizer) {
      cli.in_means.v[0] = o.isl;
      cli.in_means.n = 1;
      c->prompts.input_tokens_means = cli.in_means.v;
      c->prompts.n_input_tokens_means = 1;
      c->prompts.input_tokens_stddev = (uint32_t)llround(o.isl_stddev);
    } else {
      c->prompts.synthetic_input_words = o.isl; /* no tokenizer: words stand for tokens */
    }
  }
  if (o.prefix_pool_size && o.prefix_length) {
    c->prompts.num_prefixes = o.prefix_pool_size;
    c->prompts.prefix_tokens = o.prefix_length;
  }
  if (o.osl) c->prompts.output_tokens_mean = o.osl;
  c->prompts.output_tokens_stddev = o.osl_stddev;

  /* The load: a schedule, a rate (capped by --concurrency), or a
   * concurrency (1 when neither is given). */
  if (!schedule) {
    if (o.request_rate > 0) {
      cli.rates.v[0] = o.request_rate;
      cli.rates.n = 1;
      c->load.request_rates = cli.rates.v;
      c->load.n_request_rates = 1;
      c->load.arrival = o.request_rate_mode == 0 ? TP_ARRIVAL_CONSTANT : TP_ARRIVAL_POISSON;
      c->load.max_concurrency = o.concurrency;
    } else {
      cli.concurrency.v[0] = o.concurrency ? o.concurrency : 1;
      cli.concurrency.n = 1;
      c->load.concurrency = cli.concurrency.v;
      c->load.n_concurrency = 1;
    }
  }
  c->measure.warmup_request_count = o.warmup_request_count;
  if (duration_given) {
    c->measure.measure_mode = TP_MEASURE_DURATION;
    c->measure.duration_ms = (uint64_t)llround(o.benchmark_duration * 1000.0);
    c->measure.grace_period_ms = (uint64_t)llround(o.benchmark_grace_period * 1000.0);
  } else if (!c->measure.request_count) {
    c->measure.request_count = o.request_count;
  }

  /* Where AIPerf writes: --artifact-dir as given, else
   * artifacts/<model>-openai-<type>-<stimulus>. */
  static char dir[1024];
  if (o.artifact_dir && strlen(o.artifact_dir) >= sizeof(dir) - 64) {
    snprintf(err, sizeof(err), "--artifact-dir: a path under %zu characters", sizeof(dir) - 64);
    goto usage;
  }
  if (o.artifact_dir) {
    snprintf(dir, sizeof(dir), "%s", o.artifact_dir);
  } else {
    char name[512];
    artifact_name(&o, o.model ? o.model : "mock", schedule, name, sizeof(name));
    if (!schedule && !o.concurrency && !(o.request_rate > 0)) {
      /* AIPerf's default stimulus: one request at a time. */
      char *s = name + strlen(name);
      snprintf(s, sizeof(name) - strlen(name), "concurrency1");
    }
    snprintf(dir, sizeof(dir), "artifacts/%s", name);
  }
  c->artifacts.artifact_dir = dir;
  if (strchr(o.profile_export_file, '/')) {
    snprintf(err, sizeof(err), "--profile-export-file '%s': a file name in the artifact directory",
             o.profile_export_file);
    goto usage;
  }
  if (o.fixed_schedule_start_offset >= 0 || o.fixed_schedule_end_offset >= 0) {
    size_t kept;
    snprintf(sched_path, sizeof(sched_path), "%s/fixed_schedule.jsonl", dir);
    if (make_dirs(dir)) {
      snprintf(err, sizeof(err), "cannot create %s: %s", dir, strerror(errno));
      goto usage;
    }
    if (cut_schedule(o.input_file, sched_path, o.fixed_schedule_start_offset, o.fixed_schedule_end_offset,
                     &kept, err, sizeof(err)))
      goto usage;
    c->load.schedule_file = sched_path;
    c->measure.request_count = kept;
    if (!o.quiet)
      fprintf(stderr, "tokperf aiperf: the schedule's %zu lines within the offsets are in %s\n", kept,
              sched_path);
  }

  code = tp_cli_run(&cli, NULL, NULL);
  if (code == TP_EXIT_OK || code == TP_EXIT_THRESHOLD || code == TP_EXIT_INTERRUPTED) {
    char e2[2048];
    if (place_aiperf_files(dir, o.profile_export_file, e2, sizeof(e2)) ||
        write_inputs_json(dir, c, &o, e2, sizeof(e2))) {
      fprintf(stderr, "tokperf aiperf profile: %s\n", e2);
      if (code == TP_EXIT_OK) code = TP_EXIT_WRITE;
    } else if (!o.quiet) {
      fprintf(stderr,
              "tokperf aiperf: AIPerf's files: %s/profile_export_aiperf.json, profile_export_aiperf.csv, "
              "%s, inputs.json\n",
              dir, o.profile_export_file);
    }
  }
  goto out;
usage:
  code = fail(err);
out:
  for (size_t i = 0; i < n_owned; i++) free(owned[i]);
  tp_cli_fini(&cli);
  return code;
}

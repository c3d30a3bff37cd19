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
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>

#include "options.h"

typedef struct vb {
  int backend;
  const char *label, *base_url, *host, *endpoint, *model, *served_model_name, *tokenizer;
  int port;
  tp_str_list header;
  const char *dataset, *dataset_path;
  int64_t num_prompts, custom_output_len, logprobs, top_k, ramp_start_rps, ramp_end_rps, ready_check_timeout_sec;
  uint32_t random_input_len, random_output_len, random_prefix_len, sharegpt_output_len, random_batch_size;
  uint32_t input_len, output_len, num_warmups;
  uint32_t prefix_repetition_prefix_len, prefix_repetition_suffix_len, prefix_repetition_num_prefixes,
      prefix_repetition_output_len;
  const char *random_range_ratio;
  const char *request_rate, *burstiness_text;
  double burstiness;
  uint32_t max_concurrency;
  uint64_t seed;
  double top_p, min_p, temperature, frequency_penalty, presence_penalty, repetition_penalty;
  int ramp_up_strategy;
  const char *extra_body;
  bool ignore_eos, save_result, save_detailed, append_result, mock, quiet, disable_tqdm, noop;
  bool no_oversample, skip_chat_template, disable_shuffle, skip_tokenizer_init, insecure, refused;
  const char *percentile_metrics, *metric_percentiles, *result_dir, *result_filename;
  tp_str_list goodput, metadata, noop_values;
} vb;

/* Positions in the backend choices: the chat ones post to
 * /v1/chat/completions, the others to /v1/completions.  vLLM's current
 * choices come first; vllm-chat and the servers after it are the names of
 * its earlier benchmark_serving.py, kept for those command lines; the
 * non-generation ones are refused (backend_refusal). */
#define BACKENDS                                                                                                \
  "vllm|openai|openai-chat|vllm-chat|tgi|tensorrt-llm|sglang|llama.cpp|lmdeploy|scalellm|deepspeed-mii|"       \
  "openai-audio|openai-embeddings|openai-embeddings-chat|openai-embeddings-clip|openai-embeddings-vlm2vec|"    \
  "infinity-embeddings|infinity-embeddings-clip|vllm-pooling|vllm-rerank"
enum { B_OPENAI_AUDIO = 11 };
static bool backend_is_chat(int b) { return b == 2 || b == 3; }
static const char *const backend_names[] = {
    "vllm",         "openai",          "openai-chat",       "vllm-chat",
    "tgi",          "tensorrt-llm",    "sglang",            "llama.cpp",
    "lmdeploy",     "scalellm",        "deepspeed-mii",     "openai-audio",
    "openai-embeddings", "openai-embeddings-chat", "openai-embeddings-clip", "openai-embeddings-vlm2vec",
    "infinity-embeddings", "infinity-embeddings-clip", "vllm-pooling", "vllm-rerank"};

#define VROW(key, flags, type, field, arg, dflt, lo, hi, choices, help, ex, mask) \
  {key, flags, type, offsetof(vb, field), arg, dflt, lo, hi, choices, "vLLM bench serve", help, ex, mask, NULL, NULL}
/* Accepted for vLLM's command lines with no effect in tokperf (said once on
 * stderr when given): the help says why. */
#define VNOOP(key, flags, help) VROW(key, flags, TP_SET_STR_LIST, noop_values, "VALUE", NULL, 1, 0, NULL, help, "x", \
                                     TP_SETF_NOOP)
#define VNOOPF(key, flags, help) VROW(key, flags, TP_SET_FLAG, noop, NULL, NULL, 1, 0, NULL, help, NULL, TP_SETF_NOOP)
/* vLLM flags tokperf does not do: refused by name (exit 2), the help naming
 * what to write instead. */
#define VREFUSE(key, flags, help) VROW(key, flags, TP_SET_FLAG, refused, NULL, NULL, 1, 0, NULL, help, NULL, \
                                       TP_SETF_REFUSED)
#define NO_DATASET(name) "options of vLLM's " name " dataset, which tokperf does not read (--dataset-name says what to " \
                         "use instead); without it they have no effect, as in vLLM"

static const tp_setting vb_rows[] = {
    VROW("label", "--label", TP_SET_STR, label, "LABEL", NULL, 1, 0, NULL,
         "the result's label and file name prefix (default: --backend)", "run-a", 0),
    VROW("backend", "--backend", TP_SET_ENUM, backend, "BACKEND", "openai", 1, 0, BACKENDS,
         "the server's API: openai-chat (and vllm-chat) post to /v1/chat/completions, vllm and openai to "
         "/v1/completions; the pooling, embedding and audio backends are refused",
         "openai-chat", 0),
    VROW("base_url", "--base-url", TP_SET_STR, base_url, "URL", NULL, 1, 0, NULL,
         "the server's base URL (instead of --host and --port)", "http://localhost:8000", 0),
    VROW("host", "--host", TP_SET_STR, host, "HOST", "127.0.0.1", 1, 0, NULL, "the server's host", "gpu-1", 0),
    VROW("port", "--port", TP_SET_INT, port, "PORT", "8000", 1, 65535, NULL, "the server's port", "8080", 0),
    VROW("endpoint", "--endpoint", TP_SET_STR, endpoint, "PATH", NULL, 1, 0, NULL,
         "the API path (default /v1/completions; /v1/chat/completions for the chat backends, where vLLM keeps "
         "/v1/completions and fails)",
         "/v1/completions", 0),
    VROW("header", "--header", TP_SET_STR_LIST, header, "KEY=VALUE", NULL, 1, 0, NULL,
         "headers sent with every request, repeatable or space-separated", "x-tenant=a", TP_SETF_NARGS),
    VROW("max_concurrency", "--max-concurrency", TP_SET_U32, max_concurrency, "N", NULL, 1, 100000, NULL,
         "requests in flight at most", "64", TP_SETF_UNSET0),
    VROW("model", "--model", TP_SET_STR, model, "NAME", NULL, 1, 0, NULL,
         "the model (default: the server's first); also the tokenizer's name when --tokenizer is not given",
         "meta-llama/Llama-3.1-8B-Instruct", 0),
    VROW("input_len", "--input-len", TP_SET_U32, input_len, "N", NULL, 1, 1e7, NULL,
         "input tokens per request: sets --random-input-len", "512", TP_SETF_UNSET0),
    VROW("output_len", "--output-len", TP_SET_U32, output_len, "N", NULL, 1, 1e7, NULL,
         "output tokens per request: sets --random-output-len, --sharegpt-output-len, --custom-output-len and "
         "--prefix-repetition-output-len",
         "128", TP_SETF_UNSET0),
    VROW("tokenizer", "--tokenizer", TP_SET_STR, tokenizer, "PATH|ORG/NAME", NULL, 1, 0, NULL,
         "tokenizer file, model directory, or name in the Hugging Face cache (offline)", "gpt2", TP_SETF_FILE),
    VNOOP("tokenizer_mode", "--tokenizer-mode",
          "tokperf reads tokenizer.json or a SentencePiece model itself (no transformers modes)"),
    VNOOPF("use_beam_search", "--use-beam-search", "vLLM's bench serve reads it nowhere either"),
    VROW("logprobs", "--logprobs", TP_SET_I64, logprobs, "N", "-1", -1, 1e6, NULL,
         "logprobs per token asked of completions backends (\"logprobs\" in the body, null when not given, as "
         "vLLM sends it)",
         "1", 0),
    VROW("request_rate", "--request-rate", TP_SET_STR, request_rate, "RATE|inf", "inf", 1, 0, NULL,
         "requests per second (Poisson, or gamma with --burstiness), or inf: every request at once, within "
         "--max-concurrency",
         "20", 0),
    VROW("burstiness", "--burstiness", TP_SET_STR, burstiness_text, "K|inf", "1", 1, 0, NULL,
         "gamma shape of the arrival gaps (1: Poisson; inf: every gap exactly 1/rate)", "0.5", 0),
    VREFUSE("probe_request_rate", "--probe-request-rate",
            "tokperf runs one stream of requests: run a second tokperf vllm-bench (--input-len 1 --output-len 1 "
            "--request-rate R) beside this one"),
    VROW("disable_tqdm", "--disable-tqdm", TP_SET_FLAG, disable_tqdm, NULL, NULL, 1, 0, NULL,
         "no progress lines on stderr (as -q)", NULL, 0),
    VROW("num_warmups", "--num-warmups", TP_SET_U32, num_warmups, "N", "0", 0, 1e9, NULL,
         "warm-up requests before the measured ones, left out of every figure (vLLM sends its warm-ups all at "
         "once first; tokperf sends them first on the same schedule)",
         "10", 0),
    VREFUSE("profile", "--profile",
            "tokperf does not drive vLLM's profiler: POST the server's /start_profile before and /stop_profile "
            "after (curl -X POST URL/start_profile)"),
    VROW("save_result", "--save-result", TP_SET_FLAG, save_result, NULL, NULL, 1, 0, NULL,
         "write the result as JSON with vLLM's keys (its path is checked before the first request)", NULL, 0),
    VROW("save_detailed", "--save-detailed", TP_SET_FLAG, save_detailed, NULL, NULL, 1, 0, NULL,
         "with the result, the per-request arrays", NULL, 0),
    VROW("append_result", "--append-result", TP_SET_FLAG, append_result, NULL, NULL, 1, 0, NULL,
         "append the result to the file as one more JSON document, after a newline", NULL, 0),
    VROW("metadata", "--metadata", TP_SET_STR_LIST, metadata, "KEY=VALUE", NULL, 1, 0, NULL,
         "keys written into the result, repeatable or space-separated", "version=0.3.3", TP_SETF_NARGS),
    VROW("result_dir", "--result-dir", TP_SET_STR, result_dir, "DIR", NULL, 1, 0, NULL,
         "where --save-result writes (default: the current directory)", "results", TP_SETF_DIR),
    VROW("result_filename", "--result-filename", TP_SET_STR, result_filename, "FILE", NULL, 1, 0, NULL,
         "the result's file name (default: LABEL-RATEqps[-concurrencyN]-MODEL-DATE.json)", "run.json",
         TP_SETF_FILE),
    VROW("ignore_eos", "--ignore-eos", TP_SET_FLAG, ignore_eos, NULL, NULL, 1, 0, NULL,
         "ask the server not to stop before max_tokens (always so with --dataset-name random, as in vLLM)", NULL, 0),
    VREFUSE("self_timed", "--self-timed|--no-self-timed",
            "it belongs to vLLM's timed_trace dataset: replay a trace with tokperf profile --schedule-file FILE"),
    VROW("percentile_metrics", "--percentile-metrics", TP_SET_STR, percentile_metrics, "LIST", "ttft,tpot,itl", 1,
         0, NULL,
         "metrics whose percentiles are printed: ttft, tpot, itl, e2el, client_queue_time (the wait for "
         "--max-concurrency, tokperf's send lag)",
         "ttft,e2el", 0),
    VROW("metric_percentiles", "--metric-percentiles", TP_SET_STR, metric_percentiles, "LIST", "99", 1, 0, NULL,
         "percentiles printed: any of 1, 5, 10, 25, 50, 75, 90, 95, 99", "50,90,99", 0),
    VROW("goodput", "--goodput", TP_SET_STR_LIST, goodput, "KEY:MS", NULL, 1, 0, NULL,
         "SLOs for goodput, repeatable or space-separated: ttft, tpot, e2el", "ttft:500", TP_SETF_NARGS),
    VNOOP("request_id_prefix", "--request-id-prefix",
          "tokperf sends no x-request-id header; the server makes its own request ids"),
    VROW("top_p", "--top-p", TP_SET_F64, top_p, "P", NULL, 1, 0, NULL, "\"top_p\" in every request's body", "0.9",
         0),
    VROW("top_k", "--top-k", TP_SET_I64, top_k, "K", NULL, 1, 0, NULL, "\"top_k\" in every request's body", "-1",
         0),
    VROW("min_p", "--min-p", TP_SET_F64, min_p, "P", NULL, 1, 0, NULL, "\"min_p\" in every request's body", "0.05",
         0),
    VROW("temperature", "--temperature", TP_SET_F64, temperature, "T", NULL, 1, 0, NULL,
         "\"temperature\" in every request's body (not sent when not given: the server's default)", "0", 0),
    VROW("frequency_penalty", "--frequency-penalty", TP_SET_F64, frequency_penalty, "X", NULL, 1, 0, NULL,
         "\"frequency_penalty\" in every request's body", "0.5", 0),
    VROW("presence_penalty", "--presence-penalty", TP_SET_F64, presence_penalty, "X", NULL, 1, 0, NULL,
         "\"presence_penalty\" in every request's body", "0.5", 0),
    VROW("repetition_penalty", "--repetition-penalty", TP_SET_F64, repetition_penalty, "X", NULL, 1, 0, NULL,
         "\"repetition_penalty\" in every request's body (completions backends send 1.0 when not given, as vLLM)",
         "1.1", 0),
    VROW("served_model_name", "--served-model-name", TP_SET_STR, served_model_name, "NAME", NULL, 1, 0, NULL,
         "the model name sent in requests, when it differs from --model", "llama", 0),
    VREFUSE("lora_modules", "--lora-modules",
            "tokperf sends one model per run: run once per adapter with --served-model-name ADAPTER"),
    VNOOP("lora_assignment", "--lora-assignment", "it picks among --lora-modules, which tokperf refuses"),
    VROW("ramp_up_strategy", "--ramp-up-strategy", TP_SET_ENUM, ramp_up_strategy, "linear|exponential", NULL, 1, 0,
         "linear|exponential",
         "the rate moves from --ramp-up-start-rps to --ramp-up-end-rps over the requests, as vLLM computes it "
         "(request i of N at progress i/(N-1))",
         "linear", 0),
    VROW("ramp_up_start_rps", "--ramp-up-start-rps", TP_SET_I64, ramp_start_rps, "RPS", NULL, 0, 1e7, NULL,
         "the ramp's first rate (requests/s)", "1", 0),
    VROW("ramp_up_end_rps", "--ramp-up-end-rps", TP_SET_I64, ramp_end_rps, "RPS", NULL, 0, 1e7, NULL,
         "the ramp's last rate (requests/s)", "20", 0),
    VROW("ready_check_timeout_sec", "--ready-check-timeout-sec", TP_SET_I64, ready_check_timeout_sec, "SECONDS",
         "0", 0, 1e7, NULL,
         "before the run, retry one short request every 5 s until it succeeds, for at most this long (0: no check); "
         "the run fails (exit 3) if it never does",
         "600", 0),
    VNOOP("chat_template_kwargs", "--chat-template-kwargs",
          "tokperf applies no chat template itself (as --skip-chat-template); for the server's template use "
          "--extra-body '{\"chat_template_kwargs\": {...}}'"),
    VROW("extra_body", "--extra-body", TP_SET_STR, extra_body, "JSON", NULL, 1, 0, NULL,
         "a JSON object merged into every request's body, over the sampling flags", "'{\"seed\": 0}'", 0),
    VROW("skip_tokenizer_init", "--skip-tokenizer-init", TP_SET_FLAG, skip_tokenizer_init, NULL, NULL, 1, 0, NULL,
         "no client tokenizer: token counts are the server's", NULL, 0),
    VROW("insecure", "--insecure", TP_SET_FLAG, insecure, NULL, NULL, 1, 0, NULL,
         "do not verify the server's TLS certificate", NULL, 0),
    VREFUSE("plot_timeline", "--plot-timeline",
            "tokperf vllm-bench draws no plots: tokperf profile writes report.html with the requests' timeline"),
    VNOOP("timeline_itl_thresholds", "--timeline-itl-thresholds", "it colours --plot-timeline, which tokperf refuses"),
    VREFUSE("plot_dataset_stats", "--plot-dataset-stats",
            "tokperf vllm-bench draws no plots: tokperf profile writes report.html with the token length histograms"),
    /* vLLM's dataset options. */
    VNOOPF("trust_remote_code", "--trust-remote-code", "tokperf runs no model code"),
    VROW("seed", "--seed", TP_SET_U64, seed, "N", "0", 1, 0, NULL, "seed of the random prompts and arrival gaps",
         "42", 0),
    VROW("num_prompts", "--num-prompts", TP_SET_I64, num_prompts, "N", "1000", -1e9, 1e9, NULL,
         "requests to send in all; 0 or -1: one per prompt of the --dataset-path file", "200", 0),
    VROW("dataset_name", "--dataset-name", TP_SET_STR, dataset, "NAME", "random", 1, 0, NULL,
         "random, prefix_repetition (synthetic), sharegpt or custom (--dataset-path); vLLM's other datasets are "
         "refused with what to use instead",
         "sharegpt", 0),
    VNOOPF("no_stream", "--no-stream", "it is about loading Hugging Face datasets, which tokperf does not"),
    VROW("dataset_path", "--dataset-path", TP_SET_STR, dataset_path, "FILE", NULL, 1, 0, NULL,
         "the ShareGPT JSON or JSONL file (read locally; nothing is downloaded)", "ShareGPT_V3.json", TP_SETF_FILE),
    VROW("no_oversample", "--no-oversample", TP_SET_FLAG, no_oversample, NULL, NULL, 1, 0, NULL,
         "with fewer prompts in the file than --num-prompts, send each once (fewer requests) rather than repeat "
         "some",
         NULL, 0),
    VROW("skip_chat_template", "--skip-chat-template|--custom-skip-chat-template", TP_SET_FLAG, skip_chat_template, NULL, NULL, 1, 0, NULL,
         "send a custom dataset's prompts as written: tokperf always does (it applies no chat template itself)",
         NULL, 0),
    VREFUSE("allowed_local_media_path", "--allowed-local-media-path",
            "tokperf sends text prompts only, no local images or videos: leave it out, and give --dataset-name "
            "custom with the prompts' text"),
    VNOOPF("enable_multimodal_chat", "--enable-multimodal-chat",
           "it is for multimodal datasets, which tokperf refuses; text datasets ignore it, as in vLLM"),
    VROW("disable_shuffle", "--disable-shuffle", TP_SET_FLAG, disable_shuffle, NULL, NULL, 1, 0, NULL,
         "prompts in file order: tokperf always sends them so (vLLM shuffles them by --seed without it)", NULL, 0),
    VROW("custom_output_len", "--custom-output-len", TP_SET_I64, custom_output_len, "N", "256", -1, 1e7, NULL,
         "max_tokens for every custom prompt; -1: each line's \"output_tokens\" (or max_tokens)", "128", 0),
    VNOOPF("custom_ensure_client_side_data", "--custom-ensure-client-side-data",
           "it is for vLLM's custom_image dataset, which tokperf refuses"),
    VNOOP("spec_bench", "--spec-bench-output-len|--spec-bench-category", NO_DATASET("spec_bench")),
    VNOOP("sonnet", "--sonnet-input-len|--sonnet-output-len|--sonnet-prefix-len", NO_DATASET("sonnet")),
    VROW("sharegpt_output_len", "--sharegpt-output-len", TP_SET_U32, sharegpt_output_len, "N", "0", 0, 1e7, NULL,
         "max_tokens for every ShareGPT prompt (0: each answer's own length)", "256", TP_SETF_UNSET0),
    VNOOP("timed_trace", "--timed-trace-chunk-hash-size|--timed-trace-sec-multiplier|--timed-trace-label-timestamp",
          NO_DATASET("timed_trace")),
    VNOOP("timed_trace_labels",
          "--timed-trace-label-input-length|--timed-trace-label-output-length|--timed-trace-label-hash-ids",
          NO_DATASET("timed_trace")),
    VNOOP("blazedit", "--blazedit-min-distance|--blazedit-max-distance", NO_DATASET("blazedit (hf)")),
    VNOOP("asr", "--asr-max-audio-len-sec|--asr-min-audio-len-sec", NO_DATASET("ASR (hf)")),
    VROW("random_input_len", "--random-input-len", TP_SET_U32, random_input_len, "N", "1024", 1, 1e7, NULL,
         "tokens per random prompt", "512", 0),
    VROW("random_output_len", "--random-output-len", TP_SET_U32, random_output_len, "N", "128", 1, 1e7, NULL,
         "max_tokens per request", "256", 0),
    VROW("random_range_ratio", "--random-range-ratio", TP_SET_STR, random_range_ratio, "R|JSON", "0", 1, 0, NULL,
         "spread of the random lengths, below 1, for both or '{\"input\": R, \"output\": R}': vLLM draws uniformly "
         "within +-R of the length; tokperf draws with the same standard deviation (R * length / sqrt 3)",
         "0.1", 0),
    VROW("random_prefix_len", "--random-prefix-len", TP_SET_U32, random_prefix_len, "N", "0", 0, 1e7, NULL,
         "a shared prefix of N tokens before every random prompt", "64", 0),
    VROW("random_batch_size", "--random-batch-size", TP_SET_U32, random_batch_size, "N", "1", 1, 1e6, NULL,
         "prompts per request, for vLLM's embedding benchmarks: only 1 (one prompt per generation request)", "1",
         0),
    VNOOPF("no_reranker", "--no-reranker", "it is for vLLM's random-rerank dataset, which tokperf refuses"),
    VNOOP("random_mm",
          "--random-mm-base-items-per-request|--random-mm-num-mm-items-range-ratio|--random-mm-limit-mm-per-prompt|"
          "--random-mm-bucket-config",
          NO_DATASET("random-mm")),
    VNOOP("hf", "--hf-subset|--hf-split|--hf-name|--hf-output-len", NO_DATASET("hf")),
    VNOOP("bfcl", "--bfcl-categories", NO_DATASET("BFCL (hf)")),
    VROW("prefix_repetition_prefix_len", "--prefix-repetition-prefix-len", TP_SET_U32, prefix_repetition_prefix_len,
         "N", "256", 1, 1e7, NULL, "prefix_repetition: tokens of each shared prefix", "512", 0),
    VROW("prefix_repetition_suffix_len", "--prefix-repetition-suffix-len", TP_SET_U32, prefix_repetition_suffix_len,
         "N", "256", 1, 1e7, NULL, "prefix_repetition: tokens after the prefix", "128", 0),
    VROW("prefix_repetition_num_prefixes", "--prefix-repetition-num-prefixes", TP_SET_U32,
         prefix_repetition_num_prefixes, "N", "10", 1, 1e6, NULL, "prefix_repetition: distinct prefixes", "4", 0),
    VROW("prefix_repetition_output_len", "--prefix-repetition-output-len", TP_SET_U32, prefix_repetition_output_len,
         "N", "128", 1, 1e7, NULL, "prefix_repetition: max_tokens per request", "64", 0),
    VNOOP("speed_bench", "--speed-bench-dataset-subset|--speed-bench-output-len|--speed-bench-category",
          NO_DATASET("speed_bench")),
    /* tokperf's own. */
    VROW("mock", "--mock", TP_SET_FLAG, mock, NULL, NULL, 1, 0, NULL,
         "tokperf's own: run against the built-in mock server", NULL, 0),
    VROW("quiet", "-q|--quiet", TP_SET_FLAG, quiet, NULL, NULL, 1, 0, NULL, "no progress lines on stderr", NULL, 0),
    VNOOPF("noop", "--disable-ignore-eos", "accepted for older vLLM command lines; no effect in tokperf"),
    VNOOP("noop_values", "--seed-offset", "accepted for older vLLM command lines; no effect in tokperf"),
};

#define VB_N (sizeof(vb_rows) / sizeof(vb_rows[0]))

tp_settings_part tp_cmd_vllm_bench_defaults(void) {
  static vb d;
  tp_settings_defaults(vb_rows, VB_N, &d);
  return (tp_settings_part){vb_rows, VB_N, &d, "", NULL};
}

/* Python's float() spellings of infinity, which vLLM's rates and
 * burstiness take. */
static bool is_inf_word(const char *v) {
  if (*v == '+') v++;
  return strcasecmp(v, "inf") == 0 || strcasecmp(v, "infinity") == 0;
}

/* A rate as Python prints a float, as vLLM's file names carry it: 10.0,
 * 2.5, inf. */
static void py_float(const char *v, char *out, size_t outlen) {
  if (is_inf_word(v)) {
    snprintf(out, outlen, "inf");
    return;
  }
  double r = atof(v);
  if (r == floor(r) && fabs(r) < 1e16) {
    snprintf(out, outlen, "%.1f", r);
    return;
  }
  for (int prec = 1; prec <= 17; prec++) { /* the shortest that reads back */
    snprintf(out, outlen, "%.*g", prec, r);
    if (atof(out) == r) return;
  }
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
  const unsigned char *given; /* per row of vb_rows: on the command line */
  int pcts[16];
  size_t n_pcts;
  char metrics[8][24];
  size_t n_metrics;
  const char *model;
  char result_path[1024]; /* --save-result / --append-result: the file, known before the run */
  char date[32];
  int code;
} vb_ctx;

static bool given(const vb_ctx *x, const char *key) {
  const tp_setting *s = tp_settings_find_key(vb_rows, VB_N, key);
  return s && x->given[s - vb_rows];
}

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
  if (strcmp(m, "client_queue_time") == 0) {
    /* vLLM's wait between a request's arrival and its send (the
     * --max-concurrency semaphore): tokperf's send lag, planned to sent. */
    *title = "Client-side Queueing";
    *abbr = "Client Queue Time";
    return &lr->send_lag_ms;
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

/* mkdir -p dir, then the file opened for appending and closed (removed
 * when it was not there before): 0, or -1 with why. */
static int probe_result(const char *dir, const char *path, char *why, size_t len) {
  if (dir && *dir) {
    char p[4096];
    snprintf(p, sizeof(p), "%s", dir);
    for (char *q = p + 1;; q++) {
      bool end = *q == 0;
      if (*q == '/' || end) {
        *q = 0;
        if (mkdir(p, 0755) != 0 && errno != EEXIST) {
          snprintf(why, len, "cannot make %.400s: %s", p, strerror(errno));
          return -1;
        }
        if (end) break;
        *q = '/';
      }
    }
  }
  struct stat st;
  bool existed = stat(path, &st) == 0;
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) {
    snprintf(why, len, "%s", strerror(errno));
    return -1;
  }
  close(fd);
  if (!existed) unlink(path);
  return 0;
}

/* The result's file, as vLLM names it; computed before the run so that its
 * directory is checked before the first request. */
static void result_path(vb_ctx *x) {
  const vb *o = x->o;
  char name[512];
  time_t now = time(NULL);
  struct tm tm;
  localtime_r(&now, &tm);
  strftime(x->date, sizeof(x->date), "%Y%m%d-%H%M%S", &tm);
  const char *model = x->model && *x->model ? x->model : "model";
  const char *base = strrchr(model, '/');
  base = base ? base + 1 : model;
  const char *label = o->label ? o->label : backend_names[o->backend];
  char conc[48] = "";
  if (o->max_concurrency) snprintf(conc, sizeof(conc), "-concurrency%" PRIu32, o->max_concurrency);
  char rate[64];
  py_float(o->request_rate, rate, sizeof(rate));
  if (o->result_filename)
    snprintf(name, sizeof(name), "%s", o->result_filename);
  else if (given(x, "ramp_up_strategy"))
    snprintf(name, sizeof(name), "%s-ramp-up-%s-%" PRId64 "qps-%" PRId64 "qps%s-%s-%s.json", label,
             o->ramp_up_strategy ? "exponential" : "linear", o->ramp_start_rps, o->ramp_end_rps, conc, base, x->date);
  else
    snprintf(name, sizeof(name), "%s-%sqps%s-%s-%s.json", label, rate, conc, base, x->date);
  if (o->result_dir && name[0] != '/') /* os.path.join: an absolute name stands alone */
    snprintf(x->result_path, sizeof(x->result_path), "%s/%s", o->result_dir, name);
  else
    snprintf(x->result_path, sizeof(x->result_path), "%s", name);
}

static int save_result(const vb_ctx *x, const tp_level_result *lr) {
  const vb *o = x->o;
  const char *path = x->result_path;
  const char *model = x->model && *x->model ? x->model : "model";
  if (o->result_dir) mkdir(o->result_dir, 0777);
  double dur = lr->duration_s;
  double in = total_tokens(&lr->input_tokens), out = total_tokens(&lr->vllm_output_tokens);
  json_t *j = json_object();
  json_object_set_new(j, "date", json_string(x->date));
  json_object_set_new(j, "endpoint_type", json_string(backend_names[o->backend]));
  json_object_set_new(j, "backend", json_string(backend_names[o->backend]));
  json_object_set_new(j, "label", o->label ? json_string(o->label) : json_null());
  json_object_set_new(j, "model_id", json_string(model));
  json_object_set_new(j, "tokenizer_id", o->tokenizer && !o->skip_tokenizer_init ? json_string(o->tokenizer)
                                                                                 : json_null());
  json_object_set_new(j, "num_prompts", json_integer(o->num_prompts));
  /* --metadata KEY=VALUE, checked before the run. */
  for (size_t i = 0; i < o->metadata.n; i++) {
    const char *eq = strchr(o->metadata.v[i], '=');
    char key[256];
    snprintf(key, sizeof(key), "%.*s", (int)(eq - o->metadata.v[i]), o->metadata.v[i]);
    json_object_set_new(j, key, json_string(eq + 1));
  }
  json_object_set_new(j, "request_rate", is_inf_word(o->request_rate) ? json_string("inf")
                                                                      : json_real(atof(o->request_rate)));
  json_object_set_new(j, "burstiness", is_inf_word(o->burstiness_text) ? json_string("inf")
                                                                     : json_real(o->burstiness));
  json_object_set_new(j, "max_concurrency", o->max_concurrency ? json_integer(o->max_concurrency) : json_null());
  if (given(x, "ramp_up_strategy")) {
    json_object_set_new(j, "ramp_up_strategy", json_string(o->ramp_up_strategy ? "exponential" : "linear"));
    json_object_set_new(j, "ramp_up_start_rps", json_integer(o->ramp_start_rps));
    json_object_set_new(j, "ramp_up_end_rps", json_integer(o->ramp_end_rps));
  }
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
  char *text = json_dumps(j, o->append_result ? JSON_COMPACT : JSON_INDENT(2));
  json_decref(j);
  char err[1200] = "out of memory";
  int bad = !text;
  if (!bad && o->append_result) {
    /* vLLM's --append-result: one more JSON document, after a newline when
     * the file already holds something. */
    FILE *f = fopen(path, "a");
    bad = !f;
    if (f) {
      fseek(f, 0, SEEK_END);
      bool sep = ftell(f) > 0;
      bad = (sep && fputc('\n', f) == EOF) || fputs(text, f) == EOF;
      bad |= fclose(f) != 0;
    }
    if (bad) snprintf(err, sizeof(err), "cannot append to %s: %s", path, strerror(errno));
  } else if (!bad) {
    bad = tp_write_file(path, text, strlen(text), err, sizeof(err)) != 0;
  }
  free(text);
  if (bad) {
    fprintf(stderr, "tokperf vllm-bench: --save-result: %s\n", err);
    return -1;
  }
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
  if ((x->o->save_result || x->o->append_result) && save_result(x, lr)) x->code = TP_EXIT_START;
}

static void help(FILE *out, vb *d) {
  fprintf(out, "Usage: tokperf vllm-bench [OPTIONS]\n\n"
               "vLLM's `vllm bench serve` command line, run by tokperf: swap `vllm bench serve` (or\n"
               "`python benchmark_serving.py`) for `tokperf vllm-bench`. Every flag of vLLM's parser is\n"
               "listed below with vLLM's meaning and default; those tokperf does not do are refused (exit 2)\n"
               "with what to write instead, and those without an effect here say so when given (the\n"
               "mapping: docs/vllm-bench.md). The result is printed in vLLM's layout, and --save-result\n"
               "writes vLLM's keys. ITL is vLLM's: every gap between chunks of every request, pooled\n"
               "(docs/metrics.md). Every other tokperf option: tokperf profile.\n\n");
  tp_settings_part part = {vb_rows, VB_N, d, "", NULL};
  tp_settings_help(out, &part, 1, 0);
  fprintf(out, "\nExample:\n  tokperf vllm-bench --backend openai-chat --base-url http://localhost:8000 \\\n"
               "      --model meta-llama/Llama-3.1-8B-Instruct --dataset-name random --random-input-len 512 \\\n"
               "      --num-prompts 200 --request-rate 10 --max-concurrency 32 --temperature 0 --save-result\n");
}

static int fail(const char *msg) {
  fprintf(stderr, "tokperf vllm-bench: %s\ntry 'tokperf vllm-bench --help'\n", msg);
  return TP_EXIT_USAGE;
}

/* What vLLM's other datasets and backends are, in tokperf's words. */
static const char *dataset_refusal(const char *name) {
  static const struct {
    const char *name, *why;
  } t[] = {
      {"timed_trace", "replay a trace with tokperf profile --schedule-file FILE (JSONL lines with timestamp, "
                      "input_length, output_length, hash_ids)"},
      {"hf", "tokperf downloads nothing: write the prompts as JSONL lines {\"prompt\": ..., \"output_tokens\": N} "
             "and give --dataset-name custom --dataset-path FILE"},
      {"burstgpt", "tokperf reads no CSV: write the prompts as JSONL lines {\"prompt\": ..., \"output_tokens\": N} "
                   "and give --dataset-name custom --dataset-path FILE"},
      {"sonnet", "write the prompts as JSONL lines {\"prompt\": ..., \"output_tokens\": N} and give "
                 "--dataset-name custom --dataset-path FILE"},
      {"spec_bench", "write the prompts as JSONL lines {\"prompt\": ..., \"output_tokens\": N} and give "
                     "--dataset-name custom --dataset-path FILE"},
      {"speed_bench", "write the prompts as JSONL lines {\"prompt\": ..., \"output_tokens\": N} and give "
                      "--dataset-name custom --dataset-path FILE"},
      {"random-mm", "tokperf sends text prompts only: --dataset-name random"},
      {"custom_image", "tokperf sends text prompts only: --dataset-name custom"},
      {"custom_mm", "tokperf sends text prompts only: --dataset-name custom"},
      {"custom_audio", "tokperf sends text prompts only: --dataset-name custom"},
      {"random-rerank", "tokperf vllm-bench measures generation, not reranking: --dataset-name random"},
  };
  for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
    if (strcmp(name, t[i].name) == 0) return t[i].why;
  return NULL;
}

/* --random-range-ratio: "0.3", or vLLM's '{"input": 0.3, "output": 0.5}'. */
static int range_ratio(const char *v, double *in, double *out, char *err, size_t errlen) {
  char *end;
  double r = strtod(v, &end);
  if (end != v && !*end) {
    *in = *out = r;
  } else {
    json_error_t je;
    json_t *o = json_loads(v, 0, &je);
    json_t *ji = o ? json_object_get(o, "input") : NULL, *jo = o ? json_object_get(o, "output") : NULL;
    bool ok = json_is_object(o) && json_is_number(ji) && json_is_number(jo) && json_object_size(o) == 2;
    if (ok) {
      *in = json_number_value(ji);
      *out = json_number_value(jo);
    }
    json_decref(o);
    if (!ok) {
      snprintf(err, errlen, "--random-range-ratio '%s': expected a number or '{\"input\": R, \"output\": R}'", v);
      return -1;
    }
  }
  if (!(*in >= 0 && *in < 1) || !(*out >= 0 && *out < 1)) {
    snprintf(err, errlen, "--random-range-ratio '%s': each ratio must be in [0, 1)", v);
    return -1;
  }
  return 0;
}

/* vLLM's --ready-check-timeout-sec: before the run, one short request to
 * the endpoint, retried every 5 s (vLLM's interval) until it succeeds or
 * the time is up.  Each try is a one-request run of the same settings, so
 * it goes the way the measured requests will. */
static int ready_check(const tp_config *base, int64_t timeout_s, bool quiet) {
  uint64_t deadline = (uint64_t)time(NULL) + (uint64_t)timeout_s;
  if (!quiet) fprintf(stderr, "tokperf vllm-bench: waiting up to %" PRId64 " s for the endpoint\n", timeout_s);
  char err[1024] = "";
  static const uint32_t one = 1;
  for (;;) {
    tp_config c = *base;
    c.load.concurrency = &one;
    c.load.n_concurrency = 1;
    c.load.request_rates = NULL;
    c.load.n_request_rates = 0;
    c.load.ramp = TP_RAMP_NONE;
    c.load.max_concurrency = 0;
    c.measure.measure_mode = TP_MEASURE_COUNT;
    c.measure.request_count = 1;
    c.measure.warmup_request_count = 0;
    c.measure.warmup_duration_ms = 0;
    c.measure.goodput_ttft_ms = c.measure.goodput_tpot_ms = c.measure.goodput_latency_ms = 0;
    c.output.progress = NULL;
    c.output.json_path = NULL;
    c.output.records_path = NULL;
    c.artifacts.no_artifacts = true;
    /* A few words and one token: the endpoint is ready when it answers. */
    c.prompts.tokenizer = NULL;
    c.prompts.input_tokens_means = NULL;
    c.prompts.n_input_tokens_means = 0;
    c.prompts.prefix_tokens = 0;
    c.prompts.synthetic_input_words = 8;
    c.prompts.num_prompts = 1;
    c.prompts.output_tokens_mean = 1;
    c.prompts.output_tokens_stddev = 0;
    uint64_t now = (uint64_t)time(NULL);
    c.server.request_timeout_ms = (deadline > now ? deadline - now : 1) * 1000;
    tp_run *run = NULL;
    int rv = tp_run_new(&run, &c, err, sizeof(err));
    if (rv) return 0; /* settings the run itself refuses, with its own message */
    rv = tp_run_exec(run, err, sizeof(err));
    const tp_level_result *lr = rv ? NULL : tp_run_level(run, 0);
    bool ok = lr && lr->succeeded >= 1;
    if (!rv && !ok) snprintf(err, sizeof(err), "the request failed");
    tp_run_free(run);
    if (ok) {
      if (!quiet) fprintf(stderr, "tokperf vllm-bench: the endpoint answered\n");
      return 0;
    }
    now = (uint64_t)time(NULL);
    if (now >= deadline) break;
    if (!quiet) fprintf(stderr, "tokperf vllm-bench: endpoint not ready (%s); retrying\n", err);
    uint64_t wait = deadline - now < 5 ? deadline - now : 5;
    sleep((unsigned)wait);
  }
  fprintf(stderr, "tokperf vllm-bench: --ready-check-timeout-sec %" PRId64 ": the endpoint did not answer in time: %s\n",
          timeout_s, err);
  return TP_EXIT_START;
}

/* vLLM's FlexibleArgumentParser takes --num_prompts for --num-prompts:
 * every word that starts with "--" has its name's underscores read as
 * dashes (the value after '=' kept).  The words are copies (freed by the
 * caller, after the run that borrows them). */
static char **dashed_argv(int argc, char **argv) {
  char **out = calloc((size_t)argc + 1, sizeof(char *));
  for (int i = 0; out && i < argc; i++) {
    out[i] = strdup(argv[i]);
    if (!out[i]) continue;
    if (strncmp(out[i], "--", 2) != 0) continue;
    for (char *c = out[i] + 2; *c && *c != '='; c++)
      if (*c == '_') *c = '-';
  }
  return out;
}

static void free_argv(int argc, char **v) {
  for (int i = 0; v && i < argc; i++) free(v[i]);
  free(v);
}

static int vllm_bench(int argc, char **argv);

int tp_cmd_vllm_bench(int argc, char **argv) {
  char **dashed = dashed_argv(argc, argv);
  if (!dashed) {
    fprintf(stderr, "tokperf vllm-bench: out of memory\n");
    return TP_EXIT_START;
  }
  for (int i = 0; i < argc; i++)
    if (!dashed[i]) {
      free_argv(argc, dashed);
      fprintf(stderr, "tokperf vllm-bench: out of memory\n");
      return TP_EXIT_START;
    }
  int code = vllm_bench(argc, dashed);
  free_argv(argc, dashed);
  return code;
}

static int vllm_bench(int argc, char **argv) {
  vb o;
  memset(&o, 0, sizeof(o));
  tp_settings_defaults(vb_rows, VB_N, &o);
  unsigned char given_rows[VB_N];
  memset(given_rows, 0, sizeof(given_rows));
  tp_settings_part part = {vb_rows, VB_N, &o, "", given_rows};
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
  x.given = given_rows;
  if (o.backend >= B_OPENAI_AUDIO) {
    snprintf(err, sizeof(err), "--backend %s: tokperf vllm-bench measures text generation: --backend openai "
             "(completions) or openai-chat", backend_names[o.backend]);
    return fail(err);
  }
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
    if (strcmp(t, "e2el_including_client_queue") == 0) {
      snprintf(err, sizeof(err), "--percentile-metrics %s: not measured by tokperf; ask for e2el and "
               "client_queue_time", t);
      return fail(err);
    }
    if ((strcmp(t, "ttft") && strcmp(t, "tpot") && strcmp(t, "itl") && strcmp(t, "e2el") &&
         strcmp(t, "client_queue_time")) ||
        x.n_metrics >= 8) {
      snprintf(err, sizeof(err), "--percentile-metrics '%s': expected ttft, tpot, itl, e2el and client_queue_time",
               o.percentile_metrics);
      return fail(err);
    }
    snprintf(x.metrics[x.n_metrics++], sizeof(x.metrics[0]), "%s", t);
  }

  /* The dataset: vLLM's names, the ones tokperf does not read refused with
   * what to use instead. */
  enum { D_RANDOM, D_SHAREGPT, D_CUSTOM, D_PREFIX } ds;
  const char *why = dataset_refusal(o.dataset);
  if (why) {
    snprintf(err, sizeof(err), "--dataset-name %s is not supported: %s", o.dataset, why);
    return fail(err);
  }
  if (strcmp(o.dataset, "random") == 0)
    ds = D_RANDOM;
  else if (strcmp(o.dataset, "sharegpt") == 0)
    ds = D_SHAREGPT;
  else if (strcmp(o.dataset, "custom") == 0)
    ds = D_CUSTOM;
  else if (strcmp(o.dataset, "prefix_repetition") == 0)
    ds = D_PREFIX;
  else {
    snprintf(err, sizeof(err), "--dataset-name '%s': expected random, prefix_repetition, sharegpt or custom",
             o.dataset);
    return fail(err);
  }
  bool file = ds == D_SHAREGPT || ds == D_CUSTOM;
  if (!file && o.dataset_path) {
    /* vLLM refuses it too: the file would be silently unused. */
    snprintf(err, sizeof(err), "--dataset-name %s makes its own prompts and reads no --dataset-path: give "
             "--dataset-name sharegpt or custom for %s", o.dataset, o.dataset_path);
    return fail(err);
  }
  if (file && !o.dataset_path) return fail("--dataset-name sharegpt and custom read --dataset-path FILE "
                                            "(nothing is downloaded)");
  if (o.random_batch_size != 1)
    return fail("--random-batch-size: only 1: batches of prompts are for vLLM's embedding benchmarks; tokperf "
                "vllm-bench sends one prompt per generation request");
  /* --input-len and --output-len stand for the datasets' own lengths. */
  if (o.input_len) o.random_input_len = o.input_len;
  if (o.output_len) {
    o.random_output_len = o.sharegpt_output_len = o.prefix_repetition_output_len = o.output_len;
    o.custom_output_len = o.output_len;
  }
  double ratio_in = 0, ratio_out = 0;
  if (range_ratio(o.random_range_ratio, &ratio_in, &ratio_out, err, sizeof(err))) return fail(err);
  tp_arrival arrival = TP_ARRIVAL_POISSON;
  if (is_inf_word(o.burstiness_text)) {
    arrival = TP_ARRIVAL_CONSTANT; /* vLLM: the gap tends to exactly 1/rate */
    o.burstiness = 1;
  } else {
    char *bend;
    o.burstiness = strtod(o.burstiness_text, &bend);
    if (*bend || !(o.burstiness > 0) || !isfinite(o.burstiness)) {
      snprintf(err, sizeof(err), "--burstiness '%s': expected a gamma shape above 0 (1: Poisson), or inf",
               o.burstiness_text);
      return fail(err);
    }
    if (o.burstiness != 1) arrival = TP_ARRIVAL_GAMMA;
  }
  bool rate_inf = is_inf_word(o.request_rate);

  /* --num-prompts 0 or -1: the file's every prompt; --no-oversample: at
   * most that many.  Counted as the run will read the file. */
  uint64_t n_requests = o.num_prompts > 0 ? (uint64_t)o.num_prompts : 0;
  if (o.num_prompts <= 0 && !file) {
    snprintf(err, sizeof(err), "--num-prompts %" PRId64 ": all the prompts of a file, which --dataset-name %s has "
             "not: give a count, or --dataset-name custom or sharegpt with --dataset-path", o.num_prompts, o.dataset);
    return fail(err);
  }
  if (file && (o.num_prompts <= 0 || o.no_oversample)) {
    size_t n = 0;
    int rv = tp_input_count(o.dataset_path, &n, err, sizeof(err));
    if (rv) {
      fprintf(stderr, "tokperf vllm-bench: --dataset-path: %s\n", err);
      return rv == TP_EINVAL ? TP_EXIT_USAGE : TP_EXIT_START;
    }
    if (o.num_prompts <= 0 || n < n_requests) n_requests = n;
  }

  /* The ramp, checked as vLLM checks it (and a start of 0, on which vLLM's
   * schedule fails). */
  bool ramp = given(&x, "ramp_up_strategy");
  if (ramp) {
    if (!is_inf_word(o.request_rate))
      return fail("--ramp-up-strategy sets the rate: leave out --request-rate (as vLLM asks)");
    if (!given(&x, "ramp_up_start_rps") || !given(&x, "ramp_up_end_rps"))
      return fail("--ramp-up-strategy needs --ramp-up-start-rps and --ramp-up-end-rps");
    if (o.ramp_start_rps > o.ramp_end_rps) return fail("--ramp-up-start-rps must be at most --ramp-up-end-rps");
    if (o.ramp_start_rps <= 0)
      return fail("--ramp-up-start-rps 0: the first request would wait forever (vLLM's schedule fails on it); "
                  "start at 1");
  } else if (given(&x, "ramp_up_start_rps") || given(&x, "ramp_up_end_rps")) {
    return fail("--ramp-up-start-rps and --ramp-up-end-rps go with --ramp-up-strategy linear|exponential");
  }

  /* Headers, metadata and the request body's extra fields, checked now:
   * vLLM finds a bad --metadata only after the run. */
  static char headers[TP_STR_LIST_MAX][512];
  static const char *header_ptrs[TP_STR_LIST_MAX];
  for (size_t i = 0; i < o.header.n; i++) {
    const char *eq = strchr(o.header.v[i], '=');
    if (!eq || eq == o.header.v[i]) {
      snprintf(err, sizeof(err), "--header '%s': expected KEY=VALUE", o.header.v[i]);
      return fail(err);
    }
    snprintf(headers[i], sizeof(headers[i]), "%.*s: %s", (int)(eq - o.header.v[i]), o.header.v[i], eq + 1);
    header_ptrs[i] = headers[i];
  }
  for (size_t i = 0; i < o.metadata.n; i++) {
    const char *eq = strchr(o.metadata.v[i], '=');
    if (!eq || eq == o.metadata.v[i]) {
      snprintf(err, sizeof(err), "--metadata '%s': expected KEY=VALUE", o.metadata.v[i]);
      return fail(err);
    }
  }
  /* The body's extra fields, as vLLM builds them: completions send
   * repetition_penalty 1.0 and logprobs (null unless given); the sampling
   * flags given; then --extra-body over them. */
  json_t *extra = json_object();
  if (!backend_is_chat(o.backend)) {
    json_object_set_new(extra, "repetition_penalty", json_real(1.0));
    json_object_set_new(extra, "logprobs", o.logprobs >= 0 ? json_integer(o.logprobs) : json_null());
  }
  static const char *const sampling[] = {"top_p", "top_k", "min_p", "temperature", "frequency_penalty",
                                         "presence_penalty", "repetition_penalty"};
  const double sampling_v[] = {o.top_p, (double)o.top_k, o.min_p, o.temperature, o.frequency_penalty,
                               o.presence_penalty, o.repetition_penalty};
  for (size_t i = 0; i < sizeof(sampling) / sizeof(sampling[0]); i++)
    if (given(&x, sampling[i]))
      json_object_set_new(extra, sampling[i], i == 1 ? json_integer(o.top_k) : json_real(sampling_v[i]));
  if (o.extra_body) {
    json_error_t je;
    json_t *eb = json_loads(o.extra_body, 0, &je);
    if (!json_is_object(eb)) {
      snprintf(err, sizeof(err), "--extra-body '%s': expected a JSON object, like '{\"seed\": 0}'%s%s",
               o.extra_body, eb ? "" : ": ", eb ? "" : je.text);
      json_decref(eb);
      json_decref(extra);
      return fail(err);
    }
    json_object_update(extra, eb); /* shallow, as vLLM's dict merge */
    json_decref(eb);
  }
  static char *extra_text;
  static const char *extra_items[1];
  free(extra_text);
  extra_text = json_object_size(extra) ? json_dumps(extra, JSON_COMPACT) : NULL;
  json_decref(extra);
  extra_items[0] = extra_text;

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
  c->server.headers = header_ptrs;
  c->server.n_headers = o.header.n;
  c->server.extra_inputs = extra_text ? extra_items : NULL;
  c->server.n_extra_inputs = extra_text ? 1 : 0;
  c->server.insecure = o.insecure;
  x.model = o.model ? o.model : c->server.model;
  cli.use_mock = o.mock;
  bool quiet = o.quiet || o.disable_tqdm;
  if (quiet) c->output.progress = NULL;
  c->artifacts.no_artifacts = true;
  c->output.vllm_requests = o.save_result;
  c->prompts.random_seed = o.seed;
  /* vLLM asks for the whole length of random prompts (ignore_eos) on its
   * OpenAI backends. */
  c->prompts.output_tokens_deterministic = o.ignore_eos || ds == D_RANDOM;
  c->measure.warmup_request_count = o.num_warmups;
  c->measure.request_count = n_requests;
  c->prompts.num_prompts = (uint32_t)(n_requests < UINT32_MAX ? n_requests : UINT32_MAX);

  /* The tokenizer: --tokenizer, else the model's name when the Hugging
   * Face cache holds it (vLLM's default), else none (token counts n/a). */
  if (o.skip_tokenizer_init) {
    c->prompts.tokenizer = NULL;
  } else if (o.tokenizer) {
    c->prompts.tokenizer = o.tokenizer;
  } else if (o.model) {
    char *found = NULL;
    char e2[1024];
    /* A plain name comes back as itself: only a path that is there counts. */
    struct stat tst;
    if (tp_tokenizer_find(o.model, NULL, &found, e2, sizeof(e2)) == 0 && found && stat(found, &tst) == 0) {
      free(found);
      c->prompts.tokenizer = o.model;
    } else {
      free(found);
      if (!quiet)
        fprintf(stderr, "tokperf vllm-bench: note: no tokenizer for %s in the Hugging Face cache; token counts are "
                      "n/a (give --tokenizer)\n", o.model);
    }
  }

  /* Random prompts: vLLM's uniform spread of +-R becomes a standard
   * deviation of R * len / sqrt(3), the uniform distribution's. */
  double sd = 1.0 / sqrt(3.0);
  if (ds == D_RANDOM) {
    cli.in_means.v[0] = o.random_input_len;
    cli.in_means.n = 1;
    if (c->prompts.tokenizer) {
      c->prompts.input_tokens_means = cli.in_means.v;
      c->prompts.n_input_tokens_means = 1;
      c->prompts.input_tokens_stddev = (uint32_t)llround(ratio_in * o.random_input_len * sd);
      if (o.random_prefix_len) c->prompts.prefix_tokens = o.random_prefix_len;
    } else if (o.random_prefix_len) {
      tp_cli_fini(&cli);
      return fail("--random-prefix-len counts tokens: give --tokenizer (or a --model in the Hugging Face cache)");
    } else {
      c->prompts.synthetic_input_words = o.random_input_len; /* no tokenizer: words stand for tokens */
    }
    c->prompts.output_tokens_mean = o.random_output_len;
    c->prompts.output_tokens_stddev = (uint32_t)llround(ratio_out * o.random_output_len * sd);
  } else if (ds == D_PREFIX) {
    /* vLLM's prefix_repetition: NUM_PREFIXES shared prefixes of PREFIX_LEN
     * tokens, each before SUFFIX_LEN random tokens: tokperf's --prefix-tokens
     * and --num-prefixes, which need the tokenizer. */
    if (!c->prompts.tokenizer) {
      tp_cli_fini(&cli);
      return fail("--dataset-name prefix_repetition counts tokens: give --tokenizer (or a --model in the Hugging "
                  "Face cache)");
    }
    cli.in_means.v[0] = o.prefix_repetition_suffix_len;
    cli.in_means.n = 1;
    c->prompts.input_tokens_means = cli.in_means.v;
    c->prompts.n_input_tokens_means = 1;
    c->prompts.prefix_tokens = o.prefix_repetition_prefix_len;
    c->prompts.num_prefixes = o.prefix_repetition_num_prefixes;
    c->prompts.output_tokens_mean = o.prefix_repetition_output_len;
  } else {
    c->prompts.input_file = o.dataset_path;
    if (ds == D_SHAREGPT && o.sharegpt_output_len) c->prompts.output_tokens_mean = o.sharegpt_output_len;
    if (ds == D_CUSTOM && o.custom_output_len > 0) c->prompts.output_tokens_mean = (uint32_t)o.custom_output_len;
    if (!quiet && (!o.disable_shuffle || (ds == D_CUSTOM && !o.skip_chat_template)))
      fprintf(stderr, "tokperf vllm-bench: note: the prompts go as written and in file order (vLLM shuffles them "
                      "unless --disable-shuffle%s)\n",
              ds == D_CUSTOM ? ", and wraps custom ones in the chat template unless --skip-chat-template" : "");
  }

  /* inf: every request at once (within --max-concurrency); a rate: an open
   * loop, Poisson or gamma; a ramp: an open loop whose rate moves. */
  if (ramp) {
    cli.rates.v[0] = (double)o.ramp_end_rps;
    cli.rates.n = 1;
    c->load.request_rates = cli.rates.v;
    c->load.n_request_rates = 1;
    c->load.ramp = o.ramp_up_strategy ? TP_RAMP_EXPONENTIAL : TP_RAMP_LINEAR;
    c->load.ramp_start_rps = (double)o.ramp_start_rps;
    c->load.ramp_end_rps = (double)o.ramp_end_rps;
    c->load.arrival = arrival;
    c->load.burstiness = o.burstiness;
    c->load.max_concurrency = o.max_concurrency;
  } else if (rate_inf) {
    uint64_t all = n_requests + o.num_warmups;
    cli.concurrency.v[0] = o.max_concurrency ? o.max_concurrency : (uint32_t)(all < 100000 ? all : 100000);
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
    c->load.arrival = arrival;
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

  /* The result's path, checked before the first request: a long run's
   * result is not lost to a directory it cannot be written to. */
  if (o.save_result || o.append_result) {
    result_path(&x);
    char whyp[600];
    if (o.result_dir && tp_output_check(o.result_dir, true, whyp, sizeof(whyp))) {
      tp_cli_fini(&cli);
      snprintf(err, sizeof(err), "--result-dir '%s': %s", o.result_dir, whyp);
      fprintf(stderr, "tokperf vllm-bench: %s\n", err);
      return TP_EXIT_START;
    }
    /* The file itself, unless its directory is still to be made. */
    struct stat st;
    if ((!o.result_dir || stat(o.result_dir, &st) == 0) && tp_output_check(x.result_path, false, whyp, sizeof(whyp))) {
      tp_cli_fini(&cli);
      fprintf(stderr, "tokperf vllm-bench: --save-result: cannot write %s: %s\n", x.result_path, whyp);
      return TP_EXIT_START;
    }
    /* Those checks read permissions, which root passes everywhere (a
     * /proc path, a read-only mount): the directory is made now (vLLM
     * makes it at the end) and the file opened for appending once, as the
     * run will, and removed again when it was not there. */
    if (probe_result(o.result_dir, x.result_path, whyp, sizeof(whyp))) {
      tp_cli_fini(&cli);
      fprintf(stderr, "tokperf: cannot write the result file %s: %s (nothing was sent)\n", x.result_path, whyp);
      return TP_EXIT_START;
    }
  }

  if (o.ready_check_timeout_sec > 0 && !o.mock) {
    /* The check loads no tokenizer and needs none: it sends a few words. */
    int rc = ready_check(c, o.ready_check_timeout_sec, quiet);
    if (rc) {
      tp_cli_fini(&cli);
      return rc;
    }
  }

  int code = tp_cli_run(&cli, report, &x);
  tp_cli_fini(&cli);
  free(extra_text);
  extra_text = NULL;
  return code ? code : x.code;
}

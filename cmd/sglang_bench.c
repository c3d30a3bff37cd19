/* `tokperf sglang-bench`: SGLang's `python -m sglang.bench_serving` command
 * line, run by tokperf.
 *
 * SGLang's benchmark began as a copy of vLLM's benchmark_serving.py, and
 * most of its flags keep vLLM's meanings (--num-prompts is the number of
 * requests, --request-rate a Poisson rate or inf); its defaults and a few
 * flags differ: the backend names the server (sglang, vllm, lmdeploy, with
 * a -chat form for /v1/chat/completions) and sets the default port, random
 * lengths are drawn from [len * ratio, len] rather than len * (1 +- ratio),
 * EOS is ignored unless --disable-ignore-eos, the seed is 1, --output-file
 * names the result file.  This entry reads SGLang's flags with SGLang's
 * defaults into a `tokperf vllm-bench` command line, which runs it and
 * prints the result in the same layout; SGLang's flags that tokperf does not
 * do are refused by name with what to write instead, and those with no
 * effect say so (docs/other-tools.md). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"

typedef struct sg {
  int backend;
  const char *base_url, *host;
  int port;
  int dataset;
  const char *dataset_path, *model, *served_model_name, *tokenizer;
  uint32_t num_prompts, sharegpt_output_len, random_input_len, random_output_len, warmup_requests;
  double random_range_ratio;
  const char *request_rate;
  uint32_t max_concurrency;
  const char *output_file, *extra_request_body;
  uint64_t seed;
  bool disable_tqdm, disable_ignore_eos, output_details, mock, quiet, noop, refused;
  tp_str_list headers, noop_values;
} sg;

/* The backends of SGLang's benchmark: the -chat ones post to
 * /v1/chat/completions, the others to /v1/completions (sglang and
 * sglang-native to the same server's OpenAI endpoint instead of its native
 * /generate); trt, gserver and truss are other servers' APIs. */
#define BACKENDS \
  "sglang|sglang-native|sglang-oai|sglang-oai-chat|vllm|vllm-chat|lmdeploy|lmdeploy-chat|trt|gserver|truss"
enum {
  B_SGLANG,
  B_SGLANG_NATIVE,
  B_SGLANG_OAI,
  B_SGLANG_OAI_CHAT,
  B_VLLM,
  B_VLLM_CHAT,
  B_LMDEPLOY,
  B_LMDEPLOY_CHAT,
  B_TRT,
  B_GSERVER,
  B_TRUSS
};
static const char *const backend_names[] = {"sglang", "sglang-native", "sglang-oai", "sglang-oai-chat",
                                            "vllm",   "vllm-chat",     "lmdeploy",   "lmdeploy-chat",
                                            "trt",    "gserver",       "truss"};
#define DATASETS "sharegpt|random|random-ids|generated-shared-prefix|mmmu|image|mooncake|custom|openai"
enum { D_SHAREGPT, D_RANDOM, D_RANDOM_IDS, D_GSP, D_MMMU, D_IMAGE, D_MOONCAKE, D_CUSTOM, D_OPENAI };

#define SROW(key, flags, type, field, arg, dflt, lo, hi, choices, help, ex, mask)                        \
  {                                                                                                      \
    key, flags, type, offsetof(sg, field), arg, dflt, lo, hi, choices, "SGLang bench_serving", help, ex, \
        mask, NULL, NULL                                                                                 \
  }
/* SGLang flags tokperf does not do: refused by name (exit 2), the help
 * naming what to write instead. */
#define SREFUSE(key, flags, help) \
  SROW(key, flags, TP_SET_FLAG, refused, NULL, NULL, 1, 0, NULL, help, NULL, TP_SETF_REFUSED)

static const tp_setting sg_rows[] = {
    SROW(
        "backend", "--backend", TP_SET_ENUM, backend, "BACKEND", "sglang", 1, 0, BACKENDS,
        "the server: the -chat backends post to /v1/chat/completions, the others to /v1/completions (sglang "
        "and "
        "sglang-native: the server's OpenAI endpoint, not its native /generate); the default port follows it",
        "vllm", 0),
    SROW("base_url", "--base-url", TP_SET_STR, base_url, "URL", NULL, 1, 0, NULL,
         "the server's base URL (instead of --host and --port)", "http://localhost:30000", 0),
    SROW("host", "--host", TP_SET_STR, host, "HOST", "0.0.0.0", 1, 0, NULL, "the server's host", "127.0.0.1",
         0),
    SROW("port", "--port", TP_SET_INT, port, "PORT", NULL, 0, 65535, NULL,
         "the server's port (default: 8000 for --backend vllm, 23333 for lmdeploy, else 30000)", "30000",
         TP_SETF_UNSET0),
    SROW("dataset_name", "--dataset-name", TP_SET_ENUM, dataset, "NAME", "sharegpt", 1, 0, DATASETS,
         "sharegpt (a ShareGPT JSON given by --dataset-path), random or random-ids (random prompts of "
         "--random-input-len tokens); the others are refused with what to write instead",
         "random", 0),
    SROW("dataset_path", "--dataset-path", TP_SET_STR, dataset_path, "FILE", NULL, 1, 0, NULL,
         "the ShareGPT JSON (read locally; nothing is downloaded)",
         "ShareGPT_V3_unfiltered_cleaned_split.json", TP_SETF_FILE),
    SROW("model", "--model", TP_SET_STR, model, "NAME", NULL, 1, 0, NULL,
         "the model (default: the server's first); also the tokenizer's name when --tokenizer is not given",
         "meta-llama/Llama-3.1-8B-Instruct", 0),
    SROW("served_model_name", "--served-model-name", TP_SET_STR, served_model_name, "NAME", NULL, 1, 0, NULL,
         "the model name sent in requests, when it differs from --model", "llama", 0),
    SROW("tokenizer", "--tokenizer", TP_SET_STR, tokenizer, "PATH|ORG/NAME", NULL, 1, 0, NULL,
         "tokenizer file, model directory, or name in the Hugging Face cache (offline)", "gpt2",
         TP_SETF_FILE),
    SROW("num_prompts", "--num-prompts|--num-prompt", TP_SET_U32, num_prompts, "N", "1000", 1, 1e9, NULL,
         "requests to send in all", "200", 0),
    SROW("sharegpt_output_len", "--sharegpt-output-len", TP_SET_U32, sharegpt_output_len, "N", NULL, 1, 1e7,
         NULL, "max_tokens for every ShareGPT prompt (default: each answer's own length)", "256",
         TP_SETF_UNSET0),
    SROW("random_input_len", "--random-input-len|--random-input", TP_SET_U32, random_input_len, "N", "1024",
         1, 1e7, NULL, "the longest random prompt, in tokens", "512", 0),
    SROW("random_output_len", "--random-output-len|--random-output", TP_SET_U32, random_output_len, "N",
         "1024", 1, 1e7, NULL, "the largest max_tokens of a random prompt", "256", 0),
    SROW("random_range_ratio", "--random-range-ratio", TP_SET_F64, random_range_ratio, "R", "0", 0, 1, NULL,
         "random lengths are drawn from [R x len, len], as SGLang draws them (tokperf draws them with that "
         "range's mean and standard deviation)",
         "0.5", 0),
    SROW("request_rate", "--request-rate", TP_SET_STR, request_rate, "RATE|inf", "inf", 1, 0, NULL,
         "requests per second (Poisson), or inf: every request at once, within --max-concurrency", "20", 0),
    SROW("max_concurrency", "--max-concurrency", TP_SET_U32, max_concurrency, "N", NULL, 1, 100000, NULL,
         "requests in flight at most", "64", TP_SETF_UNSET0),
    SROW("output_file", "--output-file", TP_SET_STR, output_file, "FILE", NULL, 1, 0, NULL,
         "write the result to FILE, as tokperf vllm-bench --save-result writes it (vLLM's keys, one JSON "
         "document; SGLang appends a line of its own keys)",
         "online.jsonl", TP_SETF_FILE),
    SROW("disable_tqdm", "--disable-tqdm", TP_SET_FLAG, disable_tqdm, NULL, NULL, 1, 0, NULL,
         "no progress lines on stderr", NULL, 0),
    SROW("seed", "--seed", TP_SET_U64, seed, "N", "1", 1, 0, NULL, "seed of the random prompts", "42", 0),
    SROW("disable_ignore_eos", "--disable-ignore-eos", TP_SET_FLAG, disable_ignore_eos, NULL, NULL, 1, 0,
         NULL, "let the server stop at EOS (by default, as in SGLang, requests ask for ignore_eos)", NULL, 0),
    SROW("warmup_requests", "--warmup-requests", TP_SET_U32, warmup_requests, "N", "1", 0, 1e6, NULL,
         "SGLang's warm-up requests before the run: tokperf vllm-bench sends none (given, it says so)", "1",
         0),
    SROW("extra_request_body", "--extra-request-body", TP_SET_STR, extra_request_body, "JSON", NULL, 1, 0,
         NULL, "a JSON object merged into every request's body", "{\"temperature\": 0.6}", 0),
    SROW("headers", "--header", TP_SET_STR_LIST, headers, "KEY=VALUE", NULL, 1, 0, NULL,
         "headers sent with every request, space-separated or repeated", "X-Team=bench", TP_SETF_NARGS),
    SROW("output_details", "--output-details", TP_SET_FLAG, output_details, NULL, NULL, 1, 0, NULL,
         "with --output-file, the per-request arrays (input_lens, output_lens, ttfts, itls, generated_texts, "
         "errors)",
         NULL, 0),
    SROW("mock", "--mock", TP_SET_FLAG, mock, NULL, NULL, 1, 0, NULL,
         "tokperf's own: run against the built-in mock server", NULL, 0),
    SROW("quiet", "-q|--quiet", TP_SET_FLAG, quiet, NULL, NULL, 1, 0, NULL, "no progress lines on stderr",
         NULL, 0),
    SROW("noop", "--print-requests|--return-logprob|--apply-chat-template", TP_SET_FLAG, noop, NULL, NULL, 1,
         0, NULL, "accepted for SGLang's command lines; no effect in tokperf", NULL, TP_SETF_NOOP),
    SROW("noop_values", "--tag", TP_SET_STR_LIST, noop_values, "VALUE", NULL, 1, 0, NULL,
         "accepted for SGLang's command lines; no effect in tokperf", "run-a", TP_SETF_NOOP),
    SREFUSE("sharegpt_context_len", "--sharegpt-context-len",
            "tokperf sends every prompt of the file: leave out those longer than the model's context"),
    SREFUSE("image", "--image-count|--image-resolution|--random-image-count|--image-format|--image-content",
            "tokperf sends text prompts only; leave the image flags out"),
    SREFUSE("trace",
            "--use-trace-timestamps|--mooncake-slowdown-factor|--mooncake-num-rounds|--mooncake-workload",
            "replay a trace's timestamps with tokperf profile --schedule trace.jsonl (--replay-speedup X)"),
    SREFUSE(
        "disable_stream", "--disable-stream",
        "tokperf vllm-bench streams every request (unary Triton requests: tokperf profile --no-streaming)"),
    SREFUSE("routed_experts", "--return-routed-experts", "tokperf does not ask for the routed experts"),
    SREFUSE("profile",
            "--profile|--profile-activities|--profile-num-steps|--profile-by-stage|--profile-stages|"
            "--profile-output-dir|--profile-prefix",
            "tokperf does not drive the server's profiler: start and stop it on the server"),
    SREFUSE("plot_throughput", "--plot-throughput",
            "tokperf profile writes report.html with the throughput and requests in flight over time"),
    SREFUSE("lora", "--lora-name|--lora-request-distribution|--lora-zipf-alpha",
            "one model name per run: run once per adapter with --served-model-name NAME"),
    SREFUSE("prompt_suffix", "--prompt-suffix", "add the suffix to the prompts of the --dataset-path file"),
    SREFUSE("pd", "--pd-separated|--profile-prefill-url|--profile-decode-url",
            "PD-disaggregated servers: benchmark the router's URL (--base-url)"),
    SREFUSE("flush_cache", "--flush-cache", "flush the server's cache (POST /flush_cache) before the run"),
    SREFUSE("tokenize_prompt", "--tokenize-prompt",
            "token ids as input: tokperf profile --service-kind sglang-grpc sends token ids"),
    SREFUSE("gsp",
            "--gsp-num-groups|--gsp-prompts-per-group|--gsp-system-prompt-len|--gsp-question-len|--gsp-"
            "output-len",
            "shared prefixes: tokperf profile --prefix-tokens N --num-prefixes K"),
    SREFUSE("gsp_more",
            "--gsp-range-ratio|--gsp-fast-prepare|--gsp-send-routing-key|--gsp-num-turns|--gsp-ordered",
            "shared prefixes: tokperf profile --prefix-tokens N --num-prefixes K"),
};

#define SG_N (sizeof(sg_rows) / sizeof(sg_rows[0]))

tp_settings_part tp_cmd_sglang_bench_defaults(void) {
  static sg d;
  tp_settings_defaults(sg_rows, SG_N, &d);
  return (tp_settings_part){sg_rows, SG_N, &d, "", NULL};
}

static void help(FILE *out, sg *d) {
  fprintf(
      out,
      "Usage: tokperf sglang-bench [OPTIONS]\n\n"
      "SGLang's `python -m sglang.bench_serving` command line, run by tokperf: swap\n"
      "`python3 -m sglang.bench_serving` for `tokperf sglang-bench`. The flags keep SGLang's meanings and\n"
      "defaults and are run as `tokperf vllm-bench`, whose result layout SGLang's follows\n"
      "(docs/other-tools.md). Every other tokperf option: tokperf profile.\n\n");
  tp_settings_part part = {sg_rows, SG_N, d, "", NULL};
  tp_settings_help(out, &part, 1, 0);
  fprintf(
      out,
      "\nExample:\n  tokperf sglang-bench --backend sglang --dataset-name random --random-input-len 1024 \\\n"
      "      --random-output-len 1024 --random-range-ratio 0.5 --num-prompts 300 --request-rate 4\n");
}

static int fail(const char *msg) {
  fprintf(stderr, "tokperf sglang-bench: %s\ntry 'tokperf sglang-bench --help'\n", msg);
  return TP_EXIT_USAGE;
}

/* The vllm-bench command line under construction: words it owns (numbers
 * printed here) and words borrowed from argv. */
typedef struct words {
  char *v[64 + 2 * TP_STR_LIST_MAX];
  int n;
  char own[16][64];
  int n_own;
} words;

static void add(words *w, const char *s) {
  if (w->n < (int)(sizeof(w->v) / sizeof(w->v[0]))) w->v[w->n++] = (char *)s;
}

static char *own(words *w) {
  return w->n_own < 16 ? w->own[w->n_own++] : NULL;
}

static void add_u(words *w, double x) {
  char *b = own(w);
  if (!b) return;
  snprintf(b, 64, "%.0f", x);
  add(w, b);
}

int tp_cmd_sglang_bench(int argc, char **argv) {
  sg o;
  memset(&o, 0, sizeof(o));
  tp_settings_defaults(sg_rows, SG_N, &o);
  unsigned char given[SG_N];
  memset(given, 0, sizeof(given));
  tp_settings_part part = {sg_rows, SG_N, &o, "", given};
  char err[1024];
  bool want_help = false;
  if (tp_settings_parse(&part, 1, argc, argv, NULL, NULL, &want_help, err, sizeof(err))) return fail(err);
  if (want_help) {
    sg d;
    memset(&d, 0, sizeof(d));
    tp_settings_defaults(sg_rows, SG_N, &d);
    help(stdout, &d);
    return TP_EXIT_OK;
  }

  switch (o.backend) {
    case B_TRT:
      return fail(
          "--backend trt (TensorRT-LLM's generate_stream): tokperf profile -m ensemble -i http, or gRPC: "
          "tokperf profile -m ensemble");
    case B_GSERVER: return fail("--backend gserver: SGLang's benchmark does not implement it either");
    case B_TRUSS: return fail("--backend truss: tokperf speaks OpenAI-compatible and KServe v2 APIs");
    default: break;
  }
  switch (o.dataset) {
    case D_GSP:
      return fail(
          "--dataset-name generated-shared-prefix: shared prefixes are tokperf profile --prefix-tokens N "
          "--num-prefixes K");
    case D_MMMU:
    case D_IMAGE: return fail("--dataset-name mmmu and image: tokperf sends text prompts only");
    case D_MOONCAKE:
      return fail("--dataset-name mooncake: replay the trace with tokperf profile --schedule trace.jsonl");
    case D_CUSTOM:
    case D_OPENAI:
      return fail(
          "--dataset-name custom and openai: give the prompts as JSONL to tokperf profile --input-file "
          "FILE (docs/inputs.md)");
    default: break;
  }
  if (o.dataset == D_SHAREGPT && !o.dataset_path)
    return fail(
        "--dataset-name sharegpt (SGLang's default) needs --dataset-path FILE: tokperf downloads nothing "
        "(ShareGPT_V3_unfiltered_cleaned_split.json); or --dataset-name random");

  words w = {0};
  bool chat = o.backend == B_SGLANG_OAI_CHAT || o.backend == B_VLLM_CHAT || o.backend == B_LMDEPLOY_CHAT;
  add(&w, "--backend");
  add(&w, chat ? "openai-chat" : "openai");
  if (o.backend == B_SGLANG || o.backend == B_SGLANG_NATIVE)
    fprintf(stderr,
            "tokperf sglang-bench: note: --backend %s: requests go to the server's OpenAI /v1/completions, "
            "not SGLang's native /generate\n",
            backend_names[o.backend]);
  if (o.mock) {
    add(&w, "--mock");
  } else if (o.base_url) {
    add(&w, "--base-url");
    add(&w, o.base_url);
  } else {
    /* SGLang's table of default ports: only vllm and lmdeploy differ (their
     * -chat forms keep 30000, as SGLang has it). */
    int port = o.port ? o.port : o.backend == B_VLLM ? 8000 : o.backend == B_LMDEPLOY ? 23333 : 30000;
    add(&w, "--host");
    add(&w, o.host);
    add(&w, "--port");
    add_u(&w, port);
  }
  if (o.model) {
    add(&w, "--model");
    add(&w, o.model);
  }
  if (o.served_model_name) {
    add(&w, "--served-model-name");
    add(&w, o.served_model_name);
  }
  if (o.tokenizer) {
    add(&w, "--tokenizer");
    add(&w, o.tokenizer);
  }
  add(&w, "--num-prompts");
  add_u(&w, o.num_prompts);
  if (o.dataset == D_SHAREGPT) {
    add(&w, "--dataset-name");
    add(&w, "sharegpt");
    add(&w, "--dataset-path");
    add(&w, o.dataset_path);
    if (o.sharegpt_output_len) {
      add(&w, "--sharegpt-output-len");
      add_u(&w, o.sharegpt_output_len);
    }
  } else {
    /* SGLang draws each length uniformly from [lo, len], lo = R x len (at
     * least 1): vLLM's form of that range is its middle, (len + lo) / 2,
     * with the ratio (len - lo) / (len + lo), below 1 as vLLM wants it. */
    double r = o.random_range_ratio;
    double lo_in = fmax(1, floor(o.random_input_len * r)), lo_out = fmax(1, floor(o.random_output_len * r));
    double in = o.random_input_len, out = o.random_output_len;
    add(&w, "--dataset-name");
    add(&w, "random");
    add(&w, "--random-input-len");
    add_u(&w, fmax(1, round((in + lo_in) / 2)));
    add(&w, "--random-output-len");
    add_u(&w, fmax(1, round((out + lo_out) / 2)));
    add(&w, "--random-range-ratio");
    static char ratio[128];
    snprintf(ratio, sizeof(ratio), "{\"input\": %.6g, \"output\": %.6g}", (in - lo_in) / (in + lo_in),
             (out - lo_out) / (out + lo_out));
    add(&w, ratio);
    if (o.dataset_path)
      fprintf(
          stderr,
          "tokperf sglang-bench: note: --dataset-path has no effect with --dataset-name %s: tokperf makes "
          "the random prompts itself (SGLang cuts them from the file's text)\n",
          o.dataset == D_RANDOM ? "random" : "random-ids");
  }
  add(&w, "--request-rate");
  add(&w, o.request_rate);
  if (o.max_concurrency) {
    add(&w, "--max-concurrency");
    add_u(&w, o.max_concurrency);
  }
  add(&w, "--seed");
  add_u(&w, (double)o.seed);
  if (!o.disable_ignore_eos) add(&w, "--ignore-eos");
  if (o.quiet || o.disable_tqdm) add(&w, "-q");
  static char dir[4096];
  if (o.output_file) {
    /* vllm-bench's --result-dir and --result-filename: the file's directory
     * and name. */
    const char *slash = strrchr(o.output_file, '/');
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - o.output_file) : 1, slash ? o.output_file : ".");
    if (!dir[0]) snprintf(dir, sizeof(dir), "/");
    add(&w, "--save-result");
    add(&w, "--append-result");
    add(&w, "--result-dir");
    add(&w, dir);
    add(&w, "--result-filename");
    add(&w, slash ? slash + 1 : o.output_file);
  }
  if (o.output_details) {
    if (o.output_file)
      add(&w, "--save-detailed");
    else
      fprintf(
          stderr,
          "tokperf sglang-bench: note: --output-details has no effect without --output-file FILE (tokperf "
          "writes no result file unless asked)\n");
  }
  add(&w, "--num-warmups");
  add_u(&w, o.warmup_requests);
  if (o.extra_request_body) {
    add(&w, "--extra-body");
    add(&w, o.extra_request_body);
  }
  for (size_t i = 0; i < o.headers.n; i++) {
    add(&w, "--header");
    add(&w, o.headers.v[i]);
  }
  return tp_cmd_vllm_bench(w.n, w.v);
}

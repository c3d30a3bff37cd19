/* The command line.  Every option is one row of a settings table
 * (tokperf/settings.h): the run's settings (tp_config), the mock's
 * (tp_mock_config, under --mock- in `tokperf profile`) and the CLI's own
 * (lists, output format).  Parsing, --help, the man page, the shell
 * completions and the JSON echo of the configuration are all walked from
 * those rows, so they cannot disagree. */
#ifndef TP_CMD_OPTIONS_H
#define TP_CMD_OPTIONS_H

#include <stdio.h>

#include "tokperf/settings.h"
#include "tokperf/tokperf.h"

/* Exit codes, documented in --help. */
enum {
  TP_EXIT_OK = 0,
  TP_EXIT_THRESHOLD = 1,
  TP_EXIT_USAGE = 2,
  TP_EXIT_START = 3,
  TP_EXIT_WRITE = 3, /* an output could not be written whole (a full disk) */
  TP_EXIT_INTERRUPTED = 130
};

/* Everything `tokperf profile` and `tokperf mock` can be told.  Strings
 * borrow from argv; lists are held inline, and cfg points into them. */
typedef struct tp_cli {
  tp_config cfg;
  /* --mock: the CLI starts the built-in mock in-process with these
   * settings (the --mock- rows) and points the run at it; --mock-log is
   * where it logs its true send times. */
  tp_mock_config mock;
  bool use_mock;
  const char *mock_log_path;
  tp_u32_list concurrency, in_means, out_means;
  tp_f64_list rates;
  tp_str_list asserts, headers, extra_inputs, slos;
  const char *api_key_file;
  char *api_key; /* owned: read from OPENAI_API_KEY or --api-key-file */
  int protocol;      /* 0 grpc, 1 http */
  int endpoint_type; /* 0 chat, 1 completions, 2 generate (when given) */
  int stream_text;   /* 0 delta, 1 cumulative */
  int measure_mode;  /* 0 time_windows, 1 count_windows (when given) */
  double max_error_rate;
  int format_json;
  const char *tokenizer_revision; /* --tokenizer-revision, for a model name */
  /* Other tools' spellings (GenAI-Perf, perf_analyzer): mapped after
   * parsing, or accepted and said to have no effect. */
  int output_format;   /* GenAI-Perf's older --output-format (when given) */
  int prompt_source;   /* 0 synthetic, 1 file, 2 dataset (when given) */
  bool collect_metrics;
  bool binary_search;                 /* perf_analyzer: search the range under --latency-threshold */
  double latency_threshold_ms;        /* perf_analyzer -l (0 = none) */
  char latency_slo[64];               /* "latency.avg <= MSms", an SLO or a gate */
  bool noop_flag;      /* the target of flags that have no effect */
  tp_str_list noop_values;
  bool trust_remote_code;         /* accepted for GenAI-Perf, no effect */
  bool quiet;
  bool help;
} tp_cli;

void tp_cli_init(tp_cli *cli);
void tp_cli_fini(tp_cli *cli);

/* Parses the arguments after the subcommand.  Returns 0, or TP_EXIT_USAGE
 * after printing one message to stderr that names the option, quotes the
 * value and says what is accepted. */
int tp_cli_parse_profile(tp_cli *cli, int argc, char **argv);
int tp_cli_parse_mock(tp_cli *cli, int argc, char **argv);
/* A library message names settings by their keys ("load.concurrency: 0 is
 * out of range"); the user typed flags, so out gets msg with each key of
 * `tokperf profile`'s tables replaced by its flag ("--concurrency: ..."). */
void tp_cli_flagify(const char *msg, char *out, size_t outlen);

/* Runs a parsed command line (cmd/main.c) and returns the exit code; report
 * (NULL: the text tables) prints the results instead, as another tool's
 * entry does. */
typedef void (*tp_cli_report_fn)(const tp_run *run, void *ud);
int tp_cli_run(tp_cli *cli, tp_cli_report_fn report, void *ud);
/* `tokperf vllm-bench`: vLLM's `bench serve` command line (cmd/vllm_bench.c). */
int tp_cmd_vllm_bench(int argc, char **argv);
/* `tokperf sglang-bench`: SGLang's bench_serving command line, run as
 * vllm-bench (cmd/sglang_bench.c). */
int tp_cmd_sglang_bench(int argc, char **argv);
/* `tokperf aiperf profile`: AIPerf's `profile` command line (cmd/aiperf.c). */
int tp_cmd_aiperf(int argc, char **argv);
tp_settings_part tp_cmd_aiperf_defaults(void);

/* `tokperf tokenize` (cmd/tokenize.c); returns the exit code. */
int tp_cmd_tokenize(int argc, char **argv);
/* `tokperf compare` (cmd/compare.c); returns the exit code. */
int tp_cmd_compare(int argc, char **argv);
/* The option tables of tokenize, compare and vllm-bench, bound to a struct
 * holding their defaults: for the man page and the completions. */
tp_settings_part tp_cmd_tokenize_defaults(void);
tp_settings_part tp_cmd_compare_defaults(void);
tp_settings_part tp_cmd_vllm_bench_defaults(void);
tp_settings_part tp_cmd_sglang_bench_defaults(void);

void tp_cli_help_main(FILE *out);
void tp_cli_help_profile(FILE *out);
void tp_cli_help_mock(FILE *out);
/* The man page tokperf(1), roff, from the tables. */
void tp_cli_man(FILE *out);
/* `tokperf completion bash|zsh`; returns the exit code. */
int tp_cli_completion(FILE *out, const char *shell);

#endif

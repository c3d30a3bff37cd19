/* The command line: one option table per subcommand drives parsing and
 * --help, so the two cannot disagree. */
#ifndef TP_CMD_OPTIONS_H
#define TP_CMD_OPTIONS_H

#include <stdio.h>

#include "tokperf/tokperf.h"

/* Exit codes, documented in --help. */
enum {
  TP_EXIT_OK = 0,
  TP_EXIT_THRESHOLD = 1,
  TP_EXIT_USAGE = 2,
  TP_EXIT_START = 3,
  TP_EXIT_INTERRUPTED = 130
};

/* Everything `tokperf profile` and `tokperf mock` can be told.  The strings
 * borrow from argv; arrays are owned and freed by tp_cli_fini. */
typedef struct tp_cli {
  tp_config cfg;
  tp_mock_config mock;
  uint32_t *concurrency;
  size_t n_concurrency;
  double *rates;
  size_t n_rates;
  uint32_t *in_means, *out_means;
  size_t n_in_means, n_out_means;
  const char **asserts;
  size_t n_asserts;
  const char **headers, **extra_inputs;
  size_t n_headers, n_extra_inputs;
  char *api_key; /* owned: read from OPENAI_API_KEY or --api-key-file */
  int model_given;
  int endpoint_type; /* 0 none, 1 chat, 2 completions, 3 generate */
  int http_protocol; /* -i http */
  int measure_flags; /* which measurement options were given */
  int help;
  int quiet;
  int format_json;
  const char *tokenizer_revision; /* --tokenizer-revision, for a model name */
  int trust_remote_code_said;     /* --tokenizer-trust-remote-code warned about */
} tp_cli;

void tp_cli_init(tp_cli *cli);
void tp_cli_fini(tp_cli *cli);

/* Parses the arguments after the subcommand.  Returns 0, or TP_EXIT_USAGE
 * after printing one message to stderr that names the option, quotes the
 * value and says what is accepted. */
int tp_cli_parse_profile(tp_cli *cli, int argc, char **argv);
int tp_cli_parse_mock(tp_cli *cli, int argc, char **argv);

/* `tokperf tokenize` (cmd/tokenize.c); returns the exit code. */
int tp_cmd_tokenize(int argc, char **argv);
/* `tokperf compare` (cmd/compare.c); returns the exit code. */
int tp_cmd_compare(int argc, char **argv);

void tp_cli_help_main(FILE *out);
void tp_cli_help_profile(FILE *out);
void tp_cli_help_mock(FILE *out);

#endif

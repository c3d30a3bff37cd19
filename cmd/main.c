/* tokperf: the command-line front end.  It fills a tp_config from the
 * arguments, runs the sweep, and prints the report; results go to stdout,
 * progress and errors to stderr. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "options.h"
#include "tokperf/tokperf.h"

static tp_run *volatile g_run;
static volatile sig_atomic_t g_signals;

/* First Ctrl-C (or SIGTERM, or SIGHUP: a closed terminal, a CI runner's
 * cancel): stop sending, let in-flight requests finish, report.  Second:
 * leave at once (whatever was written stays written). */
static void on_signal(int sig) {
  (void)sig;
  if (++g_signals > 1) _exit(TP_EXIT_INTERRUPTED);
  if (g_run) tp_run_interrupt(g_run);
}

static int exit_code_for(int rv) {
  switch (rv) {
    case TP_EINVAL:
      return TP_EXIT_USAGE;
    case TP_EINTERRUPTED:
      return TP_EXIT_INTERRUPTED;
    default:
      return TP_EXIT_START;
  }
}

/* A library error on stderr, its setting keys turned into the flags the
 * user typed (err empty: the code's phrase). */
static void say_lib_error(const char *err, int rv) {
  char msg[1200];
  tp_cli_flagify(err[0] ? err : tp_strerror(rv), msg, sizeof(msg));
  fprintf(stderr, "tokperf: %s\n", msg);
}

/* --format json: the whole document on stdout, for pipelines (made in
 * memory: a full $TMPDIR cannot keep it from stdout). */
static void print_json(tp_run *run) {
  char err[512];
  if (tp_run_print_json(run, stdout, err, sizeof(err))) fprintf(stderr, "tokperf: %s\n", err);
}

static int cmd_profile(int argc, char **argv) {
  tp_cli cli;
  tp_cli_init(&cli);
  int rv = tp_cli_parse_profile(&cli, argc, argv);
  if (rv) {
    tp_cli_fini(&cli);
    return rv;
  }
  if (cli.help) {
    tp_cli_help_profile(stdout);
    tp_cli_fini(&cli);
    return TP_EXIT_OK;
  }
  rv = tp_cli_run(&cli, NULL, NULL);
  tp_cli_fini(&cli);
  return rv;
}

/* --mock: the built-in mock, started here in-process before the run, which
 * then measures it as it would any server at its address. */
typedef struct cli_mock {
  tp_mock *m;
  tp_mock_config cfg; /* what it was told, for the reports */
  char url[64];
  char metrics_url[96];
} cli_mock;

/* Starts the mock on free loopback ports and points the run at it: its
 * gRPC port for Triton gRPC, else its HTTP port, which also serves the
 * /metrics that `--metrics-url mock` names.  Without --mock, that name is
 * refused. */
static int mock_start(tp_cli *cli, cli_mock *cm, char *err, size_t errlen) {
  tp_config *c = &cli->cfg;
  bool scrape_mock = c->server.metrics_url && strcmp(c->server.metrics_url, "mock") == 0;
  if (!cli->use_mock) {
    if (!scrape_mock) return 0;
    snprintf(err, errlen, "--metrics-url mock needs --mock");
    return TP_EINVAL;
  }
  cm->cfg = cli->mock;
  if (cli->mock_log_path) cm->cfg.log_path = cli->mock_log_path;
  tp_mock_config mc = cm->cfg;
  mc.host = "127.0.0.1";
  mc.grpc_port = 0;
  /* The HTTP side only when an HTTP service is measured or /metrics read. */
  mc.http_port = tp_service_kind_is_grpc(c->server.service_kind) && !c->server.metrics_url ? -1 : 0;
  mc.quiet = true;
  int rv = tp_mock_start(&cm->m, &mc, err, errlen);
  if (rv) return rv;
  snprintf(cm->url, sizeof(cm->url), "127.0.0.1:%d",
           tp_service_kind_is_grpc(c->server.service_kind) ? tp_mock_port(cm->m) : tp_mock_http_port(cm->m));
  c->server.url = cm->url;
  if (scrape_mock) {
    snprintf(cm->metrics_url, sizeof(cm->metrics_url), "http://127.0.0.1:%d/metrics", tp_mock_http_port(cm->m));
    c->server.metrics_url = cm->metrics_url;
  }
  return 0;
}

/* Whatever was measured is reported, also after an interruption: the text
 * tables (or report's own), the JSON document, the gates.  Returns the
 * exit code, code unless reporting fails. */
static int report_run(tp_cli *cli, tp_run *run, tp_cli_report_fn report, void *ud, int code) {
  if (tp_run_level_count(run) == 0) return code;
  if (report) {
    report(run, ud);
  } else if (cli->format_json) {
    print_json(run);
  } else {
    tp_run_report_text(run, stdout);
    if (tp_run_artifact_dir(run)[0]) printf("Artifacts: %s\n", tp_run_artifact_dir(run));
  }
  /* stdout is an output too (a file on a full disk, a closed pipe). */
  if (fflush(stdout) || ferror(stdout)) {
    fprintf(stderr, "tokperf: cannot write the report to stdout: %s\n", strerror(errno));
    if (code == TP_EXIT_OK) code = TP_EXIT_WRITE;
  }
  if (cli->cfg.output.json_path) {
    char jerr[512];
    if (tp_run_write_json(run, cli->cfg.output.json_path, jerr, sizeof(jerr))) {
      say_lib_error(jerr, 0);
      if (code == TP_EXIT_OK || code == TP_EXIT_THRESHOLD) code = TP_EXIT_WRITE;
    }
  }
  if (cli->cfg.output.latency_report_file) {
    char cerr[600];
    if (tp_run_write_latency_csv(run, cli->cfg.output.latency_report_file, cli->cfg.output.verbose_csv, cerr,
                                 sizeof(cerr))) {
      fprintf(stderr, "tokperf: -f: %s\n", cerr);
      if (code == TP_EXIT_OK || code == TP_EXIT_THRESHOLD) code = TP_EXIT_WRITE;
    }
  }
  /* CI gates: thresholds the user set, and a run where nothing succeeded. */
  if (code == TP_EXIT_OK && tp_run_check_gates(run, stderr) > 0) code = TP_EXIT_THRESHOLD;
  /* An output the run wrote as it went (records, artifacts) that is not
   * whole: said last, where a CI log's reader looks, and never exit 0. */
  const char *oerr = tp_run_output_error(run);
  if (oerr) {
    fprintf(stderr, "tokperf: %s\n", oerr);
    if (code == TP_EXIT_OK || code == TP_EXIT_THRESHOLD) code = TP_EXIT_WRITE;
  }
  return code;
}

/* Runs the configuration a command line gave and reports it: the text
 * tables (or, with report, that function's own), the JSON document, the
 * gates.  Returns the exit code. */
int tp_cli_run(tp_cli *cli, tp_cli_report_fn report, void *ud) {
  int rv;
  char err[1024] = "";
  /* A model name becomes its snapshot directory here, where the revision
   * is known; the run then loads a plain directory. */
  char *tok_path = NULL;
  if (cli->tokenizer_revision && !cli->cfg.prompts.tokenizer) {
    fprintf(stderr,
            "tokperf: --tokenizer-revision '%s' needs --tokenizer ORG/NAME (the model it is a revision of)\n",
            cli->tokenizer_revision);
    return TP_EXIT_USAGE;
  }
  if (cli->cfg.prompts.tokenizer) {
    rv = tp_tokenizer_find(cli->cfg.prompts.tokenizer, cli->tokenizer_revision, &tok_path, err, sizeof(err));
    if (rv) {
      fprintf(stderr, "tokperf: %s\n", err);
        return exit_code_for(rv);
    }
    cli->cfg.prompts.tokenizer = tok_path;
  }
  cli_mock cm;
  memset(&cm, 0, sizeof(cm));
  rv = mock_start(cli, &cm, err, sizeof(err));
  if (rv) {
    fprintf(stderr, "tokperf: %s\n", err[0] ? err : tp_strerror(rv));
    free(tok_path);
    return exit_code_for(rv);
  }
  tp_run *run = NULL;
  rv = tp_run_new(&run, &cli->cfg, err, sizeof(err));
  if (rv) {
    say_lib_error(err, rv);
    if (cm.m) tp_mock_stop(cm.m);
    free(tok_path);
    /* Options and input files are checked here: all usage/input errors. */
    return rv == TP_ENOMEM ? TP_EXIT_START : TP_EXIT_USAGE;
  }
  if (cm.m) {
    tp_run_set_mock(run, &cm.cfg);
    /* Said once the options are known good, where the run's own progress
     * lines begin. */
    if (cli->cfg.output.progress) {
      fprintf(cli->cfg.output.progress, "tokperf: built-in mock server on %s\n", cm.url);
      fflush(cli->cfg.output.progress);
    }
  }
  g_run = run;
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = on_signal;
  sigaction(SIGINT, &sa, NULL);
  sigaction(SIGTERM, &sa, NULL);
  sigaction(SIGHUP, &sa, NULL);

  rv = tp_run_exec(run, err, sizeof(err));
  int code = TP_EXIT_OK;
  if (rv && rv != TP_EINTERRUPTED) {
    say_lib_error(err, rv);
    code = exit_code_for(rv);
  } else if (rv == TP_EINTERRUPTED) {
    fprintf(stderr, "tokperf: %s\n", err);
    code = TP_EXIT_INTERRUPTED;
  }
  /* The mock's counters, as the sweep left them, go into the reports. */
  if (cm.m && (rv == 0 || rv == TP_EINTERRUPTED)) {
    tp_mock_stats ms;
    tp_mock_get_stats(cm.m, &ms);
    tp_run_set_mock_stats(run, &ms);
  }
  code = report_run(cli, run, report, ud, code);
  g_run = NULL;
  tp_run_free(run);
  /* After the run, whose connections to it are closed by now. */
  if (cm.m) tp_mock_stop(cm.m);
  free(tok_path);
  return code;
}

static int cmd_mock(int argc, char **argv) {
  tp_cli cli;
  tp_cli_init(&cli);
  int rv = tp_cli_parse_mock(&cli, argc, argv);
  if (rv || cli.help) {
    if (cli.help) tp_cli_help_mock(stdout);
    tp_cli_fini(&cli);
    return rv;
  }
  char err[512] = "";
  rv = tp_mock_run(&cli.mock, err, sizeof(err));
  tp_cli_fini(&cli);
  if (rv) {
    fprintf(stderr, "tokperf mock: %s\n", err[0] ? err : tp_strerror(rv));
    return TP_EXIT_START;
  }
  return TP_EXIT_OK;
}

int main(int argc, char **argv) {
  /* A peer that closes its socket must not kill the process. */
  signal(SIGPIPE, SIG_IGN);
  if (argc < 2) {
    tp_cli_help_main(stderr);
    return TP_EXIT_USAGE;
  }
  const char *sub = argv[1];
  if (strcmp(sub, "--help") == 0 || strcmp(sub, "-h") == 0 || strcmp(sub, "help") == 0) {
    tp_cli_help_main(stdout);
    return TP_EXIT_OK;
  }
  if (strcmp(sub, "--version") == 0 || strcmp(sub, "version") == 0) {
    printf("%s\n", tp_version_long());
    return TP_EXIT_OK;
  }
  if (strcmp(sub, "profile") == 0) return cmd_profile(argc - 2, argv + 2);
  if (strcmp(sub, "mock") == 0) return cmd_mock(argc - 2, argv + 2);
  if (strcmp(sub, "tokenize") == 0) return tp_cmd_tokenize(argc - 2, argv + 2);
  if (strcmp(sub, "compare") == 0) return tp_cmd_compare(argc - 2, argv + 2);
  if (strcmp(sub, "vllm-bench") == 0) return tp_cmd_vllm_bench(argc - 2, argv + 2);
  if (strcmp(sub, "sglang-bench") == 0) return tp_cmd_sglang_bench(argc - 2, argv + 2);
  if (strcmp(sub, "aiperf") == 0) return tp_cmd_aiperf(argc - 2, argv + 2);
  if (strcmp(sub, "completion") == 0) return tp_cli_completion(stdout, argc > 2 ? argv[2] : "bash");
  /* The man page, generated from the option tables at build time. */
  if (strcmp(sub, "man") == 0) {
    tp_cli_man(stdout);
    return TP_EXIT_OK;
  }
  fprintf(stderr,
          "tokperf: unknown command '%s' (expected profile, mock, tokenize, compare, vllm-bench, "
          "sglang-bench, aiperf or completion)\ntry 'tokperf --help'\n",
          sub);
  return TP_EXIT_USAGE;
}

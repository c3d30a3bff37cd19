/* `tokperf compare A.json B.json`: every headline metric side by side with
 * its change, and CI rules that fail on a regression. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "options.h"
#include "tokperf/tokperf.h"

/* Prints text after a label, wrapped at 100 columns under an indent of 19. */
static void wrapped(FILE *out, const char *label, const char *text) {
  fprintf(out, "%-19s", label);
  size_t col = 19;
  for (const char *p = text; *p;) {
    size_t w = strcspn(p, " ");
    if (col > 19 && col + 1 + w > 100) {
      fprintf(out, "\n%19s", "");
      col = 19;
    } else if (col > 19) {
      fputc(' ', out);
      col++;
    }
    fprintf(out, "%.*s", (int)w, p);
    col += w;
    p += w;
    while (*p == ' ') p++;
  }
  fputc('\n', out);
}

static void help(FILE *out) {
  char dist[512], all[1024], line[2048];
  tp_metric_list(dist, sizeof(dist), true);
  tp_metric_list(all, sizeof(all), false);
  fprintf(out,
          "Usage: tokperf compare A.json B.json [--fail-on RULE]... [--junit FILE] [--html FILE]\n"
          "       tokperf compare A.json B.json C.json... --html FILE\n\n"
          "Compares two runs' --json documents level by level (matched by sweep point): every headline\n"
          "metric side by side with its change in percent, worsened ones marked.\n\n"
          "Options:\n");
  snprintf(line, sizeof(line),
           "METRIC[.STAT]:[+|-]N%%: fail when B is worse than A by more than N%%. Repeatable. METRIC is any "
           "of: %s. These take a STAT (avg min max std p1 p5 p10 p25 p50 p75 p90 p95 p99): %s.",
           all, dist);
  wrapped(out, "  --fail-on RULE", line);
  fprintf(out,
          "  --junit FILE     write the comparisons and rules as JUnit XML\n"
          "  --html FILE      write a page comparing the runs level by level (two or more documents:\n"
          "                   tokperf compare A.json B.json C.json --html runs.html), a chart per\n"
          "                   headline metric with its numbers in a table\n"
          "  -h,--help        this help\n\n"
          "Exit codes: 0 every rule held, 1 a rule failed, 2 bad arguments or unreadable files.\n\n"
          "Example:\n  tokperf compare baseline.json run.json --fail-on 'ttft.p99:+10%%' --junit compare.xml\n");
}

int tp_cmd_compare(int argc, char **argv) {
  const char *files[16] = {NULL};
  const char *html = NULL;
  const char **rules = calloc((size_t)argc + 1, sizeof(*rules));
  size_t n_rules = 0, n_files = 0;
  const char *junit = NULL;
  int code = TP_EXIT_OK;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      help(stdout);
      free(rules);
      return TP_EXIT_OK;
    } else if (strcmp(a, "--html") == 0 && i + 1 < argc) {
      html = argv[++i];
    } else if (strncmp(a, "--html=", 7) == 0) {
      html = a + 7;
    } else if ((strcmp(a, "--fail-on") == 0 || strcmp(a, "--junit") == 0) && i + 1 < argc) {
      if (a[2] == 'f')
        rules[n_rules++] = argv[++i];
      else
        junit = argv[++i];
    } else if (strncmp(a, "--fail-on=", 10) == 0) {
      rules[n_rules++] = a + 10;
    } else if (strncmp(a, "--junit=", 8) == 0) {
      junit = a + 8;
    } else if (a[0] != '-' && n_files < sizeof(files) / sizeof(files[0])) {
      files[n_files++] = a;
    } else {
      fprintf(stderr, "tokperf compare: unexpected argument '%s'\ntry 'tokperf compare --help'\n", a);
      free(rules);
      return TP_EXIT_USAGE;
    }
  }
  if (n_files < 2 || (n_files > 2 && (!html || n_rules || junit))) {
    fprintf(stderr, "tokperf compare: %s\ntry 'tokperf compare --help'\n",
            n_files < 2 ? "two --json documents are needed (A.json B.json)"
                        : "more than two documents are compared only as a page (--html FILE), without "
                          "--fail-on or --junit");
    free(rules);
    return TP_EXIT_USAGE;
  }
  char err[1024] = "";
  if (html) {
    if (tp_compare_html_page(files, n_files, html, err, sizeof(err))) {
      fprintf(stderr, "tokperf compare: %s\n", err);
      free(rules);
      return TP_EXIT_USAGE;
    }
    fprintf(stderr, "tokperf compare: wrote %s\n", html);
    if (n_files > 2) {
      free(rules);
      return TP_EXIT_OK;
    }
  }
  int rv = tp_compare(files[0], files[1], rules, n_rules, stdout, junit, err, sizeof(err));
  if (rv < 0) {
    fprintf(stderr, "tokperf compare: %s\n", err[0] ? err : tp_strerror(rv));
    code = TP_EXIT_USAGE;
  } else if (rv > 0) {
    code = TP_EXIT_THRESHOLD;
  }
  free(rules);
  return code;
}

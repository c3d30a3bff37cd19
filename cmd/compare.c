/* `tokperf compare A.json B.json`: every headline metric side by side with
 * its change, and CI rules that fail on a regression. */
#include <stddef.h>
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

typedef struct cmp_opts {
  tp_str_list fail_on;
  const char *junit, *html;
  const char *files[16];
  size_t n_files;
  bool help;
} cmp_opts;

#define CROW(key, flags, type, field, arg, help, ex, mask) \
  {key, flags, type, offsetof(cmp_opts, field), arg, NULL, 1, 0, NULL, "Options", help, ex, mask, NULL, NULL}

static const tp_setting cmp_rows[] = {
    CROW("fail_on", "--fail-on", TP_SET_STR_LIST, fail_on, "RULE",
         "METRIC[.STAT]:[+|-]N%: fail when B is worse than A by more than N%; repeatable (the metrics are "
         "listed below)",
         "ttft.p99:+10%", 0),
    CROW("junit", "--junit", TP_SET_STR, junit, "FILE", "write the comparisons and rules as JUnit XML",
         "compare.xml", TP_SETF_FILE),
    CROW("html", "--html", TP_SET_STR, html, "FILE",
         "write a page comparing the runs level by level (two or more documents), a chart per headline metric "
         "with its numbers in a table",
         "runs.html", TP_SETF_FILE),
};

static tp_settings_part cmp_part(void *base) {
  return (tp_settings_part){cmp_rows, sizeof(cmp_rows) / sizeof(cmp_rows[0]), base, "", NULL};
}

tp_settings_part tp_cmd_compare_defaults(void) {
  static cmp_opts d; /* no row has a default: all zero */
  return cmp_part(&d);
}

/* Runs the comparison the options ask for; returns the exit code. */
static int compare(const cmp_opts *o) {
  const char *const *files = o->files;
  const char *html = o->html, *junit = o->junit;
  const char *const *rules = o->fail_on.v;
  size_t n_rules = o->fail_on.n, n_files = o->n_files;
  int code = TP_EXIT_OK;
  char err[1024] = "";
  if (html) {
    if (tp_compare_html_page(files, n_files, html, err, sizeof(err))) {
      fprintf(stderr, "tokperf compare: %s\n", err);
      return TP_EXIT_USAGE;
    }
    fprintf(stderr, "tokperf compare: wrote %s\n", html);
    if (n_files > 2) {
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
  return code;
}

static void help(FILE *out) {
  tp_settings_part part = tp_cmd_compare_defaults();
  char dist[512], all[1024], line[2048];
  tp_metric_list(dist, sizeof(dist), true);
  tp_metric_list(all, sizeof(all), false);
  fprintf(out,
          "Usage: tokperf compare A.json B.json [--fail-on RULE]... [--junit FILE] [--html FILE]\n"
          "       tokperf compare A.json B.json C.json... --html FILE\n\n"
          "Compares two runs' --json documents level by level (matched by sweep point): every headline\n"
          "metric side by side with its change in percent, worsened ones marked.\n\n");
  tp_settings_help(out, &part, 1, 0);
  fputc('\n', out);
  snprintf(line, sizeof(line), "%s. These take a STAT (avg min max std p1 p5 p10 p25 p50 p75 p90 p95 p99): %s.",
           all, dist);
  wrapped(out, "RULE's METRIC:", line);
  fprintf(out,
          "\nExit codes: 0 every rule held, 1 a rule failed, 2 bad arguments or unreadable files.\n\n"
          "Example:\n  tokperf compare baseline.json run.json --fail-on 'ttft.p99:+10%%' --junit compare.xml\n");
}

static int take_file(void *ud, const char *arg, char *err, size_t errlen) {
  cmp_opts *o = ud;
  if (o->n_files == sizeof(o->files) / sizeof(o->files[0])) {
    snprintf(err, errlen, "too many documents: %zu at most", sizeof(o->files) / sizeof(o->files[0]));
    return TP_EINVAL;
  }
  o->files[o->n_files++] = arg;
  return 0;
}

static int usage(const char *msg) {
  fprintf(stderr, "tokperf compare: %s\ntry 'tokperf compare --help'\n", msg);
  return TP_EXIT_USAGE;
}

int tp_cmd_compare(int argc, char **argv) {
  cmp_opts o;
  memset(&o, 0, sizeof(o));
  tp_settings_part part = cmp_part(&o);
  char perr[512] = "";
  int code = TP_EXIT_OK;
  if (tp_settings_parse(&part, 1, argc, argv, take_file, &o, &o.help, perr, sizeof(perr))) {
    code = usage(perr);
  } else if (o.help) {
    help(stdout);
  } else if (o.n_files < 2 || (o.n_files > 2 && (!o.html || o.fail_on.n || o.junit))) {
    code = usage(o.n_files < 2 ? "two --json documents are needed (A.json B.json)"
                               : "more than two documents are compared only as a page (--html FILE), without "
                                 "--fail-on or --junit");
  } else {
    code = compare(&o);
  }
  return code;
}

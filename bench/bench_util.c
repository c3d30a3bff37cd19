/* The arithmetic of bench/run.sh, kept out of the shell.
 *
 * Usage:
 *   bench_util get FILE.json PATH...
 *       Prints the value at each dotted PATH (levels.0.send_lag_ms.p99), one
 *       per line; "null" when absent.
 *   bench_util fidelity RECORDS.jsonl MOCKLOG.jsonl
 *       Joins tokperf's per-request records with the mock's log on the
 *       request id and prints, as key=value lines, the distribution of
 *       (tokperf TTFT - the mock's true TTFT) in microseconds, and its two
 *       parts: upload (request sent -> mock received) and delivery (mock
 *       queued the first text response -> tokperf's read returned).
 *   bench_util report RESULTS.tsv OUT.json [KEY=VALUE...]
 *       Prints the suite's table on stdout and writes it as JSON, each row
 *       with its target and whether it was met; KEY=VALUE pairs go into the
 *       document's "environment".
 *
 * RESULTS.tsv columns: section, figure, value, unit, target ("" or an
 * operator and a number: ">= 25", "< 100"), how the figure was pinned, and
 * optionally the client's and the server's CPU use (% of one core) in the
 * figure's window, which go into the JSON only.
 * A value that is not a number (n/a, skipped) is kept as text and has no
 * verdict. */
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void die(const char *what, const char *why) {
  fprintf(stderr, "bench_util: %s: %s\n", what, why);
  exit(1);
}

/* --- get -------------------------------------------------------------- */

static json_t *walk(json_t *v, const char *path) {
  char buf[512];
  snprintf(buf, sizeof(buf), "%s", path);
  char *save = NULL;
  for (char *k = strtok_r(buf, ".", &save); k && v; k = strtok_r(NULL, ".", &save)) {
    if (json_is_array(v)) {
      char *end;
      long i = strtol(k, &end, 10);
      v = (*end == 0 && i >= 0) ? json_array_get(v, (size_t)i) : NULL;
    } else {
      v = json_object_get(v, k);
    }
  }
  return v;
}

static int cmd_get(int argc, char **argv) {
  if (argc < 2) die("get", "usage: bench_util get FILE.json PATH...");
  json_error_t je;
  json_t *doc = json_load_file(argv[0], 0, &je);
  if (!doc) die(argv[0], je.text);
  for (int i = 1; i < argc; i++) {
    json_t *v = walk(doc, argv[i]);
    if (json_is_integer(v))
      printf("%lld\n", (long long)json_integer_value(v));
    else if (json_is_real(v))
      printf("%.17g\n", json_real_value(v));
    else if (json_is_string(v))
      printf("%s\n", json_string_value(v));
    else if (json_is_boolean(v))
      printf("%s\n", json_is_true(v) ? "true" : "false");
    else
      printf("null\n");
  }
  json_decref(doc);
  return 0;
}

/* --- fidelity ----------------------------------------------------------- */

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* numpy's default (linear) percentile on sorted values, as docs/metrics.md. */
static double pct(const double *v, size_t n, double p) {
  if (n == 0) return NAN;
  double rank = p / 100.0 * (double)(n - 1);
  size_t i = (size_t)rank;
  if (i >= n - 1) return v[n - 1];
  return v[i] + (v[i + 1] - v[i]) * (rank - (double)i);
}

static void print_dist(const char *name, double *v, size_t n) {
  qsort(v, n, sizeof(*v), cmp_double);
  printf("%s_p50_us=%.3f\n%s_p99_us=%.3f\n%s_max_us=%.3f\n", name, pct(v, n, 50), name,
         pct(v, n, 99), name, n ? v[n - 1] : NAN);
}

typedef struct mock_req {
  uint64_t req_ns, first_text_ns;
} mock_req;

static int64_t get_i64(json_t *o, const char *k) {
  json_t *v = json_object_get(o, k);
  return json_is_integer(v) ? (int64_t)json_integer_value(v) : 0;
}

static int cmd_fidelity(int argc, char **argv) {
  if (argc != 2) die("fidelity", "usage: bench_util fidelity RECORDS.jsonl MOCKLOG.jsonl");
  /* The mock's side: id -> index into a table of (received, first text). */
  FILE *f = fopen(argv[1], "r");
  if (!f) die(argv[1], "cannot open");
  json_t *index = json_object();
  mock_req *reqs = NULL;
  size_t n_reqs = 0, cap = 0;
  char *line = NULL;
  size_t lcap = 0;
  ssize_t got;
  while ((got = getline(&line, &lcap, f)) > 0) {
    json_t *e = json_loadb(line, (size_t)got, 0, NULL);
    if (!e) continue;
    const char *ev = json_string_value(json_object_get(e, "ev"));
    const char *id = json_string_value(json_object_get(e, "id"));
    if (ev && id && strcmp(ev, "request") == 0) {
      if (n_reqs == cap) {
        cap = cap ? cap * 2 : 4096;
        reqs = realloc(reqs, cap * sizeof(*reqs));
        if (!reqs) die("fidelity", "out of memory");
      }
      reqs[n_reqs].req_ns = (uint64_t)get_i64(e, "t_ns");
      reqs[n_reqs].first_text_ns = 0;
      json_object_set_new(index, id, json_integer((json_int_t)n_reqs));
      n_reqs++;
    } else if (ev && id && strcmp(ev, "response") == 0) {
      const char *text = json_string_value(json_object_get(e, "text"));
      json_t *k = json_object_get(index, id);
      if (k && text && *text) {
        mock_req *m = &reqs[json_integer_value(k)];
        uint64_t t = (uint64_t)get_i64(e, "t_ns");
        if (m->first_text_ns == 0 || t < m->first_text_ns) m->first_text_ns = t;
      }
    }
    json_decref(e);
  }
  fclose(f);

  f = fopen(argv[0], "r");
  if (!f) die(argv[0], "cannot open");
  size_t n = 0, vcap = 0, unmatched = 0;
  double *diff = NULL, *up = NULL, *down = NULL;
  while ((got = getline(&line, &lcap, f)) > 0) {
    json_t *r = json_loadb(line, (size_t)got, 0, NULL);
    if (!r) continue;
    const char *id = json_string_value(json_object_get(r, "id"));
    bool use = json_is_true(json_object_get(r, "ok")) && !json_is_true(json_object_get(r, "warmup"));
    uint64_t sent = (uint64_t)get_i64(r, "sent_ns"), first = (uint64_t)get_i64(r, "first_token_ns");
    json_t *k = id ? json_object_get(index, id) : NULL;
    if (use && sent && first) {
      if (!k || reqs[json_integer_value(k)].first_text_ns == 0) {
        unmatched++;
      } else {
        const mock_req *m = &reqs[json_integer_value(k)];
        if (n == vcap) {
          vcap = vcap ? vcap * 2 : 4096;
          diff = realloc(diff, vcap * sizeof(double));
          up = realloc(up, vcap * sizeof(double));
          down = realloc(down, vcap * sizeof(double));
          if (!diff || !up || !down) die("fidelity", "out of memory");
        }
        double client_ttft = (double)(int64_t)(first - sent);
        double true_ttft = (double)(int64_t)(m->first_text_ns - m->req_ns);
        diff[n] = (client_ttft - true_ttft) / 1e3;
        up[n] = (double)(int64_t)(m->req_ns - sent) / 1e3;
        down[n] = (double)(int64_t)(first - m->first_text_ns) / 1e3;
        n++;
      }
    }
    json_decref(r);
  }
  fclose(f);
  free(line);
  printf("joined=%zu\nunmatched=%zu\n", n, unmatched);
  print_dist("diff", diff, n);
  print_dist("upload", up, n);
  print_dist("delivery", down, n);
  free(diff);
  free(up);
  free(down);
  free(reqs);
  json_decref(index);
  return 0;
}

/* --- report ------------------------------------------------------------- */

/* section, figure, value, unit, target, pinning, then optionally the
 * client's and the server's CPU use in % of a core (JSON only). */
#define N_COLS 8
typedef struct row {
  char *f[N_COLS];
} row;

static bool parse_num(const char *s, double *out) {
  char *end;
  if (!s || !*s) return false;
  double v = strtod(s, &end);
  if (*end != 0 || isnan(v)) return false;
  *out = v;
  return true;
}

/* -1 no verdict, 0 missed, 1 met. */
static int verdict(const char *value, const char *target) {
  double v, t;
  if (!parse_num(value, &v) || !target || !*target) return -1;
  const char *p = target;
  char op[3] = {0};
  size_t k = 0;
  while (*p && strchr("<>=", *p) && k < 2) op[k++] = *p++;
  while (*p == ' ') p++;
  if (!parse_num(p, &t)) return -1;
  if (strcmp(op, ">=") == 0) return v >= t;
  if (strcmp(op, "<=") == 0) return v <= t;
  if (strcmp(op, ">") == 0) return v > t;
  if (strcmp(op, "<") == 0) return v < t;
  return -1;
}

static void fmt_value(char *out, size_t n, const char *value) {
  double v;
  if (!parse_num(value, &v)) {
    snprintf(out, n, "%s", value ? value : "");
  } else if (fabs(v) >= 1e4) {
    /* Thousands separated, as tokperf's own tables. */
    char digits[64];
    snprintf(digits, sizeof(digits), "%.0f", fabs(v));
    size_t len = strlen(digits), o = 0;
    if (v < 0 && o < n - 1) out[o++] = '-';
    for (size_t i = 0; i < len && o < n - 1; i++) {
      if (i > 0 && (len - i) % 3 == 0 && o < n - 1) out[o++] = ',';
      out[o++] = digits[i];
    }
    out[o] = 0;
  } else if (fabs(v) >= 100) {
    snprintf(out, n, "%.0f", v);
  } else if (fabs(v) >= 10) {
    snprintf(out, n, "%.1f", v);
  } else {
    snprintf(out, n, "%.3g", v);
  }
}

static int cmd_report(int argc, char **argv) {
  if (argc < 2) die("report", "usage: bench_util report RESULTS.tsv OUT.json [KEY=VALUE...]");
  FILE *f = fopen(argv[0], "r");
  if (!f) die(argv[0], "cannot open");
  row *rows = NULL;
  size_t n = 0, cap = 0;
  char *line = NULL;
  size_t lcap = 0;
  ssize_t got;
  while ((got = getline(&line, &lcap, f)) > 0) {
    if (line[got - 1] == '\n') line[--got] = 0;
    if (got == 0 || line[0] == '#') continue;
    if (n == cap) {
      cap = cap ? cap * 2 : 64;
      rows = realloc(rows, cap * sizeof(*rows));
      if (!rows) die("report", "out of memory");
    }
    char *p = line;
    for (int i = 0; i < N_COLS; i++) {
      char *tab = p ? strchr(p, '\t') : NULL;
      if (tab) *tab = 0;
      rows[n].f[i] = strdup(p ? p : "");
      p = tab ? tab + 1 : NULL;
    }
    n++;
  }
  fclose(f);
  free(line);

  static const char *const head[] = {"Section", "Figure", "Value", "Unit", "Target", "Met", "Pinning"};
  char (*val)[64] = calloc(n ? n : 1, sizeof(*val));
  int *met = calloc(n ? n : 1, sizeof(int));
  size_t w[7];
  for (int c = 0; c < 7; c++) w[c] = strlen(head[c]);
  for (size_t i = 0; i < n; i++) {
    fmt_value(val[i], sizeof(val[i]), rows[i].f[2]);
    met[i] = verdict(rows[i].f[2], rows[i].f[4]);
    size_t lens[7] = {strlen(rows[i].f[0]), strlen(rows[i].f[1]), strlen(val[i]), strlen(rows[i].f[3]),
                      strlen(rows[i].f[4]), 3, strlen(rows[i].f[5])};
    for (int c = 0; c < 7; c++)
      if (lens[c] > w[c]) w[c] = lens[c];
  }
  printf("%-*s  %-*s  %*s  %-*s  %-*s  %-*s  %s\n", (int)w[0], head[0], (int)w[1], head[1],
         (int)w[2], head[2], (int)w[3], head[3], (int)w[4], head[4], (int)w[5], head[5], head[6]);
  for (size_t i = 0; i < n; i++) {
    const char *m = met[i] < 0 ? "" : met[i] ? "yes" : "NO";
    printf("%-*s  %-*s  %*s  %-*s  %-*s  %-*s  %s\n", (int)w[0], rows[i].f[0], (int)w[1],
           rows[i].f[1], (int)w[2], val[i], (int)w[3], rows[i].f[3], (int)w[4], rows[i].f[4],
           (int)w[5], m, rows[i].f[5]);
  }

  json_t *doc = json_object();
  json_object_set_new(doc, "schema", json_string("tokperf-bench/1"));
  char date[64];
  time_t now = time(NULL);
  strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
  json_object_set_new(doc, "date", json_string(date));
  json_t *env = json_object();
  for (int i = 2; i < argc; i++) {
    char *eq = strchr(argv[i], '=');
    if (!eq) continue;
    *eq = 0;
    json_object_set_new(env, argv[i], json_string(eq + 1));
  }
  json_object_set_new(doc, "environment", env);
  json_t *arr = json_array();
  size_t n_met = 0, n_missed = 0;
  for (size_t i = 0; i < n; i++) {
    json_t *o = json_object();
    double v;
    json_object_set_new(o, "section", json_string(rows[i].f[0]));
    json_object_set_new(o, "figure", json_string(rows[i].f[1]));
    json_object_set_new(o, "value", parse_num(rows[i].f[2], &v) ? json_real(v) : json_string(rows[i].f[2]));
    json_object_set_new(o, "unit", json_string(rows[i].f[3]));
    json_object_set_new(o, "target", *rows[i].f[4] ? json_string(rows[i].f[4]) : json_null());
    json_object_set_new(o, "met", met[i] < 0 ? json_null() : json_boolean(met[i]));
    json_object_set_new(o, "pinning", json_string(rows[i].f[5]));
    json_object_set_new(o, "client_cpu_pct", parse_num(rows[i].f[6], &v) ? json_real(v) : json_null());
    json_object_set_new(o, "server_cpu_pct", parse_num(rows[i].f[7], &v) ? json_real(v) : json_null());
    json_array_append_new(arr, o);
    if (met[i] == 1) n_met++;
    if (met[i] == 0) n_missed++;
  }
  json_object_set_new(doc, "rows", arr);
  json_object_set_new(doc, "targets_met", json_integer((json_int_t)n_met));
  json_object_set_new(doc, "targets_missed", json_integer((json_int_t)n_missed));
  if (json_dump_file(doc, argv[1], JSON_INDENT(2)) != 0) die(argv[1], "cannot write");
  printf("\n%zu targets met, %zu missed\n", n_met, n_missed);
  json_decref(doc);
  for (size_t i = 0; i < n; i++)
    for (int c = 0; c < N_COLS; c++) free(rows[i].f[c]);
  free(rows);
  free(val);
  free(met);
  return 0;
}

int main(int argc, char **argv) {
  if (argc >= 2 && strcmp(argv[1], "get") == 0) return cmd_get(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "fidelity") == 0) return cmd_fidelity(argc - 2, argv + 2);
  if (argc >= 2 && strcmp(argv[1], "report") == 0) return cmd_report(argc - 2, argv + 2);
  fprintf(stderr, "usage: bench_util get|fidelity|report ... (see bench/bench_util.c)\n");
  return 2;
}

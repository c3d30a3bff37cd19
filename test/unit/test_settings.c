/* The settings machinery (tokperf/settings.h): every type parsed, refused,
 * formatted back, checked and echoed; defaults taken from the rows; the
 * command line with prefixes, aliases and repeats; help, man page and
 * completions written from the same rows. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "tokperf/settings.h"
#include "tokperf/tokperf.h"
#include "tp_test.h"

typedef struct demo {
  struct {
    const char *url;
    int kind;
    bool insecure;
    bool stream;
  } server;
  struct {
    tp_u32_list concurrency;
    tp_f64_list rates;
    uint32_t slots;
    uint64_t count;
    int64_t keepalive;
    double burst;
    uint64_t duration_ms;
    uint64_t max_bytes;
    double max_error_rate;
  } load;
  struct {
    tp_str_list headers;
    const char *key;
    const char *file;
  } other;
  int custom_seen;
} demo;

static int parse_custom(void *base, const tp_setting *s, const char *v, char *err, size_t errlen) {
  demo *d = base;
  if (strcmp(v, "bad") == 0) {
    snprintf(err, errlen, "custom refuses 'bad'");
    return TP_EINVAL;
  }
  d->custom_seen = atoi(v);
  return 0;
}

static void format_custom(const void *base, const tp_setting *s, char *out, size_t outlen) {
  const demo *d = base;
  snprintf(out, outlen, "seen-%d", d->custom_seen);
}

#define F(f) offsetof(demo, f)
static const tp_setting rows[] = {
    {"server.url", "-u|--url", TP_SET_STR, F(server.url), "URL", "localhost:8001", 1, 0, NULL, "Server",
     "where to send", "localhost:8001", 0, NULL, NULL},
    {"server.kind", "--service-kind", TP_SET_ENUM, F(server.kind), "KIND", "triton", 1, 0,
     "triton|openai|openai-chat=1|generate", "Server", "kind of server", "openai", 0, NULL, NULL},
    {"server.insecure", "--insecure", TP_SET_FLAG, F(server.insecure), NULL, NULL, 1, 0, NULL, "Server",
     "skip verification", NULL, 0, NULL, NULL},
    {"server.stream", "--stream", TP_SET_BOOL, F(server.stream), "BOOL", "true", 1, 0, NULL, "Server", "stream",
     NULL, 0, NULL, NULL},
    {"load.concurrency", "--concurrency|--concurrency-range", TP_SET_U32_LIST, F(load.concurrency), "LIST", "1",
     1, 100000, NULL, "Load", "levels", "1,4,8", 0, NULL, NULL},
    {"load.rates", "--request-rate", TP_SET_F64_LIST, F(load.rates), "LIST", NULL, 0.001, 1e7, NULL, "Load",
     "rates", "10,20", 0, NULL, NULL},
    {"load.slots", "--max-concurrency", TP_SET_U32, F(load.slots), "N", NULL, 1, 0, NULL, "Load", "cap", NULL,
     TP_SETF_NONZERO, NULL, NULL},
    {"load.count", "--request-count", TP_SET_U64, F(load.count), "N", "100", 1, 0, NULL, "Load", "count", NULL, 0,
     NULL, NULL},
    {"load.keepalive", "--keepalive", TP_SET_I64, F(load.keepalive), "MS", "-1", -1, 1e9, NULL, "Load",
     "keep-alive", NULL, 0, NULL, NULL},
    {"load.burst", "--burstiness", TP_SET_F64, F(load.burst), "K", "1", 0.01, 100, NULL, "Load", "gamma shape",
     NULL, 0, NULL, NULL},
    {"load.duration_ms", "--duration", TP_SET_MS, F(load.duration_ms), "DURATION", "10s", 1, 0, NULL, "Load",
     "time", "30s", 0, NULL, NULL},
    {"load.max_bytes", "--max-response-bytes", TP_SET_SIZE, F(load.max_bytes), "SIZE", "64M", 1, 0, NULL, "Load",
     "bytes", NULL, 0, NULL, NULL},
    {"load.max_error_rate", "--max-error-rate", TP_SET_FRACTION, F(load.max_error_rate), "R", NULL, 1, 0, NULL,
     "Load", "fraction", "1%", 0, NULL, NULL},
    {"other.headers", "-H|--header", TP_SET_STR_LIST, F(other.headers), "HEADER", NULL, 1, 0, NULL, "Other",
     "headers", NULL, 0, NULL, NULL},
    {"other.key", "--api-key", TP_SET_STR, F(other.key), "KEY", NULL, 1, 0, NULL, "Other", "secret", NULL,
     TP_SETF_SECRET, NULL, NULL},
    {"other.file", "--input-file", TP_SET_STR, F(other.file), "FILE", NULL, 1, 0, NULL, "Other", "a file", NULL,
     TP_SETF_FILE, NULL, NULL},
    {"other.custom", "--custom", TP_SET_CUSTOM, 0, "N", NULL, 1, 0, NULL, "Other", "custom", NULL, 0, parse_custom,
     format_custom},
    {"other.async", "--async", TP_SET_FLAG, F(server.insecure) /* any bool */, NULL, NULL, 1, 0, NULL, "Other",
     "always asynchronous", NULL, TP_SETF_NOOP | TP_SETF_HIDDEN, NULL, NULL},
};
#define NROWS (sizeof(rows) / sizeof(rows[0]))

typedef struct mockcfg {
  double ttft_ms;
  bool fast;
} mockcfg;
static const tp_setting mock_rows[] = {
    {"ttft_ms", "--ttft-ms", TP_SET_F64, offsetof(mockcfg, ttft_ms), "MS", "20", 1, 0, NULL, "Mock", "ttft", NULL,
     0, NULL, NULL},
    {"fast", "-f|--fast", TP_SET_FLAG, offsetof(mockcfg, fast), NULL, NULL, 1, 0, NULL, "Mock", "fast", NULL, 0,
     NULL, NULL},
};

/* Values over several words (TP_SETF_NARGS), as argparse's nargs="+"
 * takes them: "--goodput ttft:30 tpot:10". */
typedef struct nargs_cfg {
  char joined[128];
  tp_str_list slo;
  bool flag;
} nargs_cfg;

static int parse_joined(void *base, const tp_setting *s, const char *v, char *err, size_t errlen) {
  if (strstr(v, "bad")) {
    snprintf(err, errlen, "refused");
    return TP_EINVAL;
  }
  snprintf(((nargs_cfg *)base)->joined, sizeof(((nargs_cfg *)base)->joined), "%s", v);
  return 0;
}

static void format_joined(const void *base, const tp_setting *s, char *out, size_t outlen) {
  snprintf(out, outlen, "%s", ((const nargs_cfg *)base)->joined);
}

static const tp_setting nargs_rows[] = {
    {"bounds", "--bounds", TP_SET_CUSTOM, 0, "B", NULL, 1, 0, NULL, "N", "bounds", NULL, TP_SETF_NARGS,
     parse_joined, format_joined},
    {"slo", "--slo", TP_SET_STR_LIST, offsetof(nargs_cfg, slo), "KEY:MS", NULL, 1, 0, NULL, "N", "slo", NULL,
     TP_SETF_NARGS, NULL, NULL},
    {"flag", "--flag", TP_SET_FLAG, offsetof(nargs_cfg, flag), NULL, NULL, 1, 0, NULL, "N", "flag", NULL, 0, NULL,
     NULL},
};

static void test_nargs(void) {
  static const struct {
    const char *line;
    int rv;
    const char *joined; /* --bounds' value, or the error's start */
    const char *slo;    /* the list's values joined by '|' */
    bool flag;
  } cases[] = {
      {"--bounds a:1", 0, "a:1", "", false},
      {"--bounds a:1 b:2 c:3 --flag", 0, "a:1 b:2 c:3", "", true},
      {"--flag --bounds time_to_first_token:75 inter_token_latency:19.75", 0,
       "time_to_first_token:75 inter_token_latency:19.75", "", true},
      {"--slo ttft:30 tpot:10", 0, "", "ttft:30|tpot:10", false},
      {"--slo ttft:30 --slo e2el:5 x:1 --flag", 0, "", "ttft:30|e2el:5|x:1", true},
      {"--bounds=a:1 b:2", TP_EINVAL, "unexpected argument 'b:2'", "", false},
      {"--bounds a:1 bad:2", TP_EINVAL, "--bounds 'a:1 bad:2': refused", "", false},
      {"--bounds", TP_EINVAL, "--bounds needs a value", "", false},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char line[256], err[512] = "";
    snprintf(line, sizeof(line), "%s", cases[i].line);
    char *argv[32];
    int argc = 0;
    for (char *save = NULL, *t = strtok_r(line, " ", &save); t && argc < 32; t = strtok_r(NULL, " ", &save))
      argv[argc++] = t;
    nargs_cfg c;
    memset(&c, 0, sizeof(c));
    tp_settings_part part = {nargs_rows, 3, &c, "", NULL};
    int rv = tp_settings_parse(&part, 1, argc, argv, NULL, NULL, NULL, err, sizeof(err));
    char slo[256] = "";
    for (size_t k = 0; k < c.slo.n; k++)
      snprintf(slo + strlen(slo), sizeof(slo) - strlen(slo), "%s%s", k ? "|" : "", c.slo.v[k]);
    if (cases[i].rv) {
      CHECK(rv == cases[i].rv && strncmp(err, cases[i].joined, strlen(cases[i].joined)) == 0,
            "'%s' refused: %s", cases[i].line, err);
    } else {
      CHECK(rv == 0 && strcmp(c.joined, cases[i].joined) == 0 && strcmp(slo, cases[i].slo) == 0 &&
                c.flag == cases[i].flag,
            "'%s': [%s] [%s] %d (%s)", cases[i].line, c.joined, slo, c.flag, err);
    }
  }
}

static int parse_args(demo *d, mockcfg *m, char *line, char *err, size_t errlen, bool *help) {
  char *argv[64];
  int argc = 0;
  for (char *save = NULL, *t = strtok_r(line, " ", &save); t && argc < 64; t = strtok_r(NULL, " ", &save))
    argv[argc++] = t;
  tp_settings_part parts[] = {{rows, NROWS, d, "", NULL}, {mock_rows, 2, m, "--mock-", NULL}};
  return tp_settings_parse(parts, 2, argc, argv, NULL, NULL, help, err, errlen);
}

static void fresh(demo *d, mockcfg *m) {
  memset(d, 0xa5, sizeof(*d)); /* defaults must overwrite every field */
  tp_settings_defaults(rows, NROWS, d);
  d->custom_seen = 0;
  tp_settings_defaults(mock_rows, 2, m);
}

/* Another tool's flag that tokperf does not do (TP_SETF_REFUSED): refused
 * by name with the row's help, whatever follows it; listed in --help; never
 * echoed. */
typedef struct refused_cfg {
  bool flag;
  tp_str_list vals;
} refused_cfg;

static const tp_setting refused_rows[] = {
    {"flag", "--flag", TP_SET_FLAG, offsetof(refused_cfg, flag), NULL, NULL, 1, 0, NULL, "R", "flag", NULL, 0, NULL,
     NULL},
    {"lora", "--lora-modules", TP_SET_FLAG, offsetof(refused_cfg, vals), NULL, NULL, 1, 0, NULL, "R",
     "one model per run: give --model ADAPTER", NULL, TP_SETF_REFUSED, NULL, NULL},
};

static void test_refused(void) {
  refused_cfg c;
  char err[512];
  bool help;
  const char *cases[][4] = {
      {"--lora-modules", "a", "b", NULL},
      {"--flag", "--lora-modules=x", NULL, NULL},
      {"--lora-modules", NULL, NULL, NULL},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    char *argv[4];
    int argc = 0;
    for (; argc < 4 && cases[i][argc]; argc++) argv[argc] = (char *)cases[i][argc];
    memset(&c, 0, sizeof(c));
    tp_settings_part part = {refused_rows, 2, &c, "", NULL};
    int rv = tp_settings_parse(&part, 1, argc, argv, NULL, NULL, &help, err, sizeof(err));
    CHECK(rv == TP_EINVAL && strstr(err, "--lora-modules is not supported: one model per run: give --model ADAPTER"),
          "refused flag %zu: exit with its name and the nearest form (%s)", i, err);
  }
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  tp_settings_part part = {refused_rows, 2, &c, "", NULL};
  tp_settings_help(f, &part, 1, 100);
  fclose(f);
  CHECK(strstr(buf, "--lora-modules") && strstr(buf, "refused: one model per run: give --model ADAPTER"),
        "a refused flag is listed in --help, marked refused");
  free(buf);
  json_t *o = json_object();
  tp_settings_to_json(o, refused_rows, 2, &c);
  CHECK(json_object_get(o, "lora") == NULL && json_object_get(o, "flag") != NULL, "a refused flag is not echoed");
  json_decref(o);
}

int main(void) {
  demo d;
  mockcfg m;
  char err[512], buf[512];
  bool help;

  /* Defaults come from the rows, parsed by the same parsers. */
  fresh(&d, &m);
  CHECK_STR(d.server.url, "localhost:8001", "default string");
  CHECK_INT(d.server.kind, 0, "default enum");
  CHECK(!d.server.insecure && d.server.stream, "default flag off, default bool true");
  CHECK(d.load.concurrency.n == 1 && d.load.concurrency.v[0] == 1, "default list");
  CHECK_INT(d.load.rates.n, 0, "no default: empty list");
  CHECK_INT(d.load.count, 100, "default count");
  CHECK_INT(d.load.keepalive, -1, "default negative i64");
  CHECK_NEAR(d.load.burst, 1, 0, "default double");
  CHECK_INT(d.load.duration_ms, 10000, "default duration in ms");
  CHECK_INT(d.load.max_bytes, 64u << 20, "default size (1024-based)");
  CHECK(d.other.key == NULL && d.other.headers.n == 0, "no default: NULL string, empty string list");
  CHECK_NEAR(m.ttft_ms, 20, 0, "second table's default");
  CHECK(tp_settings_check(rows, NROWS, &d, err, sizeof(err)) == 0, "defaults pass their own checks");

  /* Every type from a command line, prefixes and aliases included. */
  char l1[] = "-u http://h:1/v1 --service-kind openai-chat --insecure --stream=off --concurrency 1:8:x2 "
              "--request-rate 0.5,2.5 --max-concurrency 16 --request-count 10k --keepalive 250 --burstiness 0.5 "
              "--duration 1.5s --max-response-bytes 16KiB --max-error-rate 2.5% -H A:1 --header B:2 "
              "--api-key sk-secret --custom 7 --mock-ttft-ms 5 --mock-fast";
  fresh(&d, &m);
  int rv = parse_args(&d, &m, l1, err, sizeof(err), &help);
  CHECK(rv == 0 && !help, "a full command line parses");
  if (rv) printf("#   %s\n", err);
  CHECK_STR(d.server.url, "http://h:1/v1", "short flag");
  CHECK_INT(d.server.kind, 1, "enum alias maps to its index");
  CHECK(d.server.insecure && !d.server.stream, "flag and bool=off");
  CHECK(d.load.concurrency.n == 4 && d.load.concurrency.v[3] == 8, "list range 1:8:x2");
  CHECK(d.load.rates.n == 2 && d.load.rates.v[1] == 2.5, "decimal list");
  CHECK_INT(d.load.slots, 16, "u32");
  CHECK_INT(d.load.count, 10000, "u64 with k");
  CHECK_INT(d.load.keepalive, 250, "i64");
  CHECK_NEAR(d.load.burst, 0.5, 0, "f64");
  CHECK_INT(d.load.duration_ms, 1500, "duration 1.5s in ms");
  CHECK_INT(d.load.max_bytes, 16384, "size 16KiB");
  CHECK_NEAR(d.load.max_error_rate, 0.025, 1e-12, "percentage as a fraction");
  CHECK(d.other.headers.n == 2 && strcmp(d.other.headers.v[1], "B:2") == 0, "repeated option appends");
  CHECK_INT(d.custom_seen, 7, "custom parser");
  CHECK(m.ttft_ms == 5 && m.fast, "prefixed part: --mock-ttft-ms, --mock-fast");

  /* Formatting gives back what parses to the same value. */
  const char *want[][2] = {{"load.concurrency", "1,2,4,8"}, {"load.duration_ms", "1500ms"},
                           {"load.max_bytes", "16k"},        {"server.kind", "openai"},
                           {"other.key", "(set)"},           {"other.custom", "seen-7"},
                           {"load.rates", "0.5,2.5"},        {"server.stream", "false"}};
  for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
    tp_setting_format(tp_settings_find_key(rows, NROWS, want[i][0]), &d, buf, sizeof(buf));
    CHECK_STR(buf, want[i][1], want[i][0]);
  }
  d.load.duration_ms = 120000;
  tp_setting_format(tp_settings_find_key(rows, NROWS, "load.duration_ms"), &d, buf, sizeof(buf));
  CHECK_STR(buf, "2m", "a duration in its largest whole unit");

  /* Refusals: the option and value named, what is accepted said. */
  struct {
    const char *line, *want;
  } bad[] = {
      {"--concurrency 0", "--concurrency '0': value is 0"},
      {"--concurrency 200000", "--concurrency '200000': expected 1 to 100000"},
      {"--service-kind grpc", "--service-kind 'grpc': expected triton, openai or generate"},
      {"--max-concurrency 0", "--max-concurrency '0': must be above zero"},
      {"--burstiness 500", "--burstiness '500': expected 0.01 to 100"},
      {"--duration 5x", "--duration '5x': unknown unit"},
      {"--max-error-rate 150%", "--max-error-rate '150%': expected a fraction"},
      {"--max-response-bytes 1T", "--max-response-bytes '1T': unexpected"},
      {"--stream maybe", "--stream 'maybe': expected true or false"},
      {"--insecure=yes", "--insecure takes no value"},
      {"--url", "--url needs a value (URL)"},
      {"--bogus 1", "unknown option '--bogus'"},
      {"stray", "unexpected argument 'stray'"},
      {"--custom bad", "--custom 'bad': custom refuses 'bad'"},
      {"--keepalive -5", "--keepalive '-5': expected -1 to 1e+09"},
      {"--mock-url x", "unknown option '--mock-url'"},
      /* A typo gets the nearest flag of every part, aliases and prefixed
       * spellings included (swaps, case, a letter missing or extra). */
      {"--concurency 2", "unknown option '--concurency'; did you mean --concurrency?"},
      {"--concurrnecy 2", "unknown option '--concurrnecy'; did you mean --concurrency?"},
      {"--Insecure", "unknown option '--Insecure'; did you mean --insecure?"},
      {"--headr A:1", "unknown option '--headr'; did you mean --header?"},
      {"--mock-ttft-m 5", "unknown option '--mock-ttft-m'; did you mean --mock-ttft-ms?"},
      {"--request-rates=5", "unknown option '--request-rates'; did you mean --request-rate?"},
  };
  for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
    char line[256];
    snprintf(line, sizeof(line), "%s", bad[i].line);
    fresh(&d, &m);
    err[0] = 0;
    rv = parse_args(&d, &m, line, err, sizeof(err), &help);
    CHECK(rv == TP_EINVAL && strstr(err, bad[i].want), "refused: %s", bad[i].line);
    if (rv != TP_EINVAL || !strstr(err, bad[i].want)) printf("#   got: %s\n", err);
  }
  /* Nothing near: no guess. */
  static const char *const far[] = {"--bogus 1", "--xyzzy-frobnicate 1", "--zq x", "--c 1"};
  for (size_t i = 0; i < sizeof(far) / sizeof(far[0]); i++) {
    char line[256];
    snprintf(line, sizeof(line), "%s", far[i]);
    fresh(&d, &m);
    err[0] = 0;
    rv = parse_args(&d, &m, line, err, sizeof(err), &help);
    CHECK(rv == TP_EINVAL && strstr(err, "unknown option") && !strstr(err, "did you mean"),
          "'%s': unknown, and no guess (%s)", far[i], err);
  }
  char hl[] = "--url x --help";
  fresh(&d, &m);
  CHECK(parse_args(&d, &m, hl, err, sizeof(err), &help) == 0 && help, "--help is reported, parsing goes on");

  /* Checks of values a program set. */
  fresh(&d, &m);
  d.load.concurrency.v[0] = 0;
  rv = tp_settings_check(rows, NROWS, &d, err, sizeof(err));
  CHECK(rv == TP_EINVAL && strstr(err, "load.concurrency: 0 is out of range"), "check names the key: %s", err);
  fresh(&d, &m);
  d.server.kind = 7;
  rv = tp_settings_check(rows, NROWS, &d, err, sizeof(err));
  CHECK(rv == TP_EINVAL && strstr(err, "server.kind: 7 is not one of the choices (triton, openai or generate)"),
        "check refuses an enum out of range: %s", err);

  /* A library message names keys; the CLI puts flags in their place. */
  tp_settings_part parts[] = {{rows, NROWS, &d, "", NULL}, {mock_rows, 2, &m, "--mock-", NULL}};
  tp_settings_flagify(parts, 2, "load.concurrency and load.count need server.url; ttft_ms too; load.countx stays",
                      buf, sizeof(buf));
  CHECK_STR(buf, "--concurrency and --request-count need --url; --mock-ttft-ms too; load.countx stays",
            "flagify swaps whole keys for canonical flags");

  /* Help, man page and completions, written from the rows. */
  fresh(&d, &m);
  char *text = NULL;
  size_t tlen = 0;
  FILE *f = open_memstream(&text, &tlen);
  tp_settings_help(f, parts, 2, 100);
  fclose(f);
  CHECK(strstr(text, "Server:\n") && strstr(text, "Load:\n") && strstr(text, "Mock:\n"), "help: groups");
  CHECK(strstr(text, "-u, --url URL") && strstr(text, "[default: localhost:8001]"), "help: spellings and default");
  CHECK(strstr(text, "--concurrency, --concurrency-range LIST") && strstr(text, "[default: 1]"),
        "help: aliases and a list default");
  CHECK(strstr(text, "[default: 10s]") && strstr(text, "[default: 64M]"), "help: defaults in their units");
  CHECK(strstr(text, "--mock-ttft-ms MS") && strstr(text, "[default: 20]"), "help: the prefixed part");
  CHECK(!strstr(text, "--async"), "help: hidden rows left out");
  CHECK(!strstr(text, "sk-"), "help: no secret");
  bool wrapped = true;
  for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
    nl = strchr(line, '\n');
    size_t ll = nl ? (size_t)(nl - line) : strlen(line);
    if (ll > 100) wrapped = false;
  }
  CHECK(wrapped, "help: lines fit the width");
  free(text);

  f = open_memstream(&text, &tlen);
  tp_settings_man(f, parts, 2);
  fclose(f);
  CHECK(strstr(text, ".TP\n.B \\-u, \\-\\-url \\fIURL\\fR\n") && strstr(text, "Default: localhost:8001."),
        "man: roff items with escaped hyphens and defaults");
  CHECK(strstr(text, "Example: \\fB\\-\\-concurrency 1,4,8\\fR."), "man: the example with its flag");
  free(text);

  tp_settings_command cmds[] = {{"profile", parts, 2}};
  for (int sh = 0; sh < 2; sh++) {
    const char *shell = sh ? "zsh" : "bash";
    char path[] = "/tmp/tp_settings_compXXXXXX";
    int fd = mkstemp(path);
    f = fdopen(fd, "w");
    rv = tp_settings_completion(f, shell, "tokperf", cmds, 1);
    fclose(f);
    CHECK(rv == 0, "%s completion written", shell);
    char cmd[512];
    /* The shell itself checks the script's syntax, where it is installed. */
    snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1 || exit 77; %s -n %s", shell, shell, path);
    int st = system(cmd);
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    if (code != 77) CHECK(code == 0, "%s -n accepts the completion script", shell);
    FILE *r = fopen(path, "r");
    char all[16384];
    size_t got = fread(all, 1, sizeof(all) - 1, r);
    all[got] = 0;
    fclose(r);
    unlink(path);
    CHECK(strstr(all, "--mock-ttft-ms") && strstr(all, "--concurrency-range"), "%s completion lists flags", shell);
    CHECK(strstr(all, sh ? "(triton openai generate)" : "\"triton openai generate\""),
          "%s completion offers the choices of an enum", shell);
    CHECK(strstr(all, sh ? "--input-file[a file]:FILE:_files" : "--input-file) COMPREPLY=($(compgen -f"),
          "%s completion offers files for a file option", shell);
  }
  CHECK(tp_settings_completion(stdout, "fish", "tokperf", cmds, 1) == TP_EINVAL, "an unknown shell is refused");

  /* JSON echo: nested by the keys, secrets hidden. */
  char l2[] = "--api-key sk-secret -H X:1 --concurrency 2,4";
  fresh(&d, &m);
  parse_args(&d, &m, l2, err, sizeof(err), &help);
  json_t *o = json_object();
  CHECK(tp_settings_to_json(o, rows, NROWS, &d) == 0, "JSON echo written");
  char *js = json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS);
  CHECK(strstr(js, "\"load\":{") && strstr(js, "\"concurrency\":[2,4]"), "JSON: nested keys, lists as arrays");
  CHECK(strstr(js, "\"kind\":\"triton\"") && strstr(js, "\"duration_ms\":10000"), "JSON: enums by name, units in keys");
  CHECK(strstr(js, "\"key\":true") && !strstr(js, "sk-secret"), "JSON: a secret says only that it is set");
  CHECK(!strstr(js, "async"), "JSON: a no-op compatibility flag is not echoed");
  free(js);
  json_decref(o);
  test_nargs();
  test_refused();
  return tp_test_done();
}

/* Fuzz target: a command line through the settings parser
 * (tp_settings_parse, lib/config/tp_settings_flags.c).
 *
 * The input is split at newlines into argv words and parsed against a table
 * with a row of each kind of flag: values, a repeatable list taking words up
 * to the next option (TP_SETF_NARGS), a no-op and a refused flag
 * (TP_SETF_REFUSED).  Checked, not only for crashes:
 * - every refusal writes a non-empty, NUL-terminated message;
 * - a command line that is the refused flag, alone or followed by anything,
 *   is refused with "is not supported" and the row's help, whatever follows;
 * - a successful parse never leaves the refused row's field set.
 * Any difference abort()s. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokperf/settings.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

typedef struct cfg {
  const char *name;
  uint32_t count;
  double ratio;
  int64_t signed_n;
  int kind;
  bool flag, noop, refused;
  tp_str_list words, noop_values;
} cfg;

#define R(key, flags, type, field, dflt, lo, hi, choices, help, mask) \
  {key, flags, type, offsetof(cfg, field), "V", dflt, lo, hi, choices, "G", help, NULL, mask, NULL, NULL}
static const tp_setting rows[] = {
    R("name", "--name", TP_SET_STR, name, NULL, 1, 0, NULL, "a string", 0),
    R("count", "-n|--count", TP_SET_U32, count, "3", 0, 1e6, NULL, "a count", 0),
    R("ratio", "--ratio", TP_SET_F64, ratio, "0", 0, 1, NULL, "a ratio", 0),
    R("signed_n", "--signed", TP_SET_I64, signed_n, "-1", -1e9, 1e9, NULL, "a signed number", 0),
    R("kind", "--kind", TP_SET_ENUM, kind, NULL, 1, 0, "linear|exponential", "a choice", 0),
    R("flag", "--flag", TP_SET_FLAG, flag, NULL, 1, 0, NULL, "a flag", 0),
    R("words", "--words", TP_SET_STR_LIST, words, NULL, 1, 0, NULL, "words", TP_SETF_NARGS),
    R("noop", "--noop", TP_SET_FLAG, noop, NULL, 1, 0, NULL, "no effect", TP_SETF_NOOP),
    R("noop_values", "--noop-value", TP_SET_STR_LIST, noop_values, NULL, 1, 0, NULL, "no effect", TP_SETF_NOOP),
    R("refused", "--refused|--no-refused", TP_SET_FLAG, refused, NULL, 1, 0, NULL, "write --flag instead",
      TP_SETF_REFUSED),
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 4096) return 0;
  char *buf = malloc(size + 1);
  if (!buf) return 0;
  memcpy(buf, data, size);
  buf[size] = 0;
  char *argv[256];
  int argc = 0;
  for (char *sv = NULL, *w = strtok_r(buf, "\n", &sv); w && argc < 256; w = strtok_r(NULL, "\n", &sv))
    argv[argc++] = w;
  /* The no-op notes go to stderr: keep them out of the fuzzer's output. */
  FILE *saved = stderr;
  stderr = fopen("/dev/null", "w");
  if (!stderr) stderr = saved;
  cfg c;
  memset(&c, 0, sizeof(c));
  tp_settings_defaults(rows, sizeof(rows) / sizeof(rows[0]), &c);
  tp_settings_part part = {rows, sizeof(rows) / sizeof(rows[0]), &c, "", NULL};
  char err[512];
  memset(err, 'x', sizeof(err));
  bool help = false;
  int rv = tp_settings_parse(&part, 1, argc, argv, NULL, NULL, &help, err, sizeof(err));
  if (stderr != saved) fclose(stderr);
  stderr = saved;
  if (rv && (!memchr(err, 0, sizeof(err)) || err[0] == 0)) abort();
  if (!rv && c.refused) abort();
  if (argc > 0 && (strcmp(argv[0], "--refused") == 0 || strncmp(argv[0], "--refused=", 10) == 0 ||
                   strcmp(argv[0], "--no-refused") == 0)) {
    if (!rv || !strstr(err, "is not supported: write --flag instead")) abort();
  }
  free(buf);
  return 0;
}

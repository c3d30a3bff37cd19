/* tokperf: settings tables.
 *
 * A setting is defined once, as one row of a table: where it lives in a
 * configuration struct, its type and unit, its command-line spellings, its
 * default (as text, read by the same parser as the command line), its
 * range, its help and an example.  Everything else is walked from the
 * rows: the defaults, per-field validation, the command-line parser,
 * --help with the defaults printed from the values, the man page, the bash
 * and zsh completions, and the JSON echo of a configuration.
 *
 * A command parses against one or more tables at once, each with the struct
 * it fills and an optional flag prefix: `tokperf profile` is the run's
 * table (tp_config), the mock's table under --mock- (tp_mock_config) and the
 * CLI's own few rows.
 *
 * Lists are stored inline (tp_u32_list and friends), so a configuration is
 * plain data: it can be copied, and nothing in it needs freeing.  Strings
 * are borrowed: from argv when parsed from a command line, which outlives
 * the run. */
#ifndef TOKPERF_SETTINGS_H
#define TOKPERF_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* TP_API, and the TP_E* codes the calls return. */
#include "tokperf/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Inline lists.  The limits are far above any real sweep; a longer list is
 * refused with the limit named. */
#define TP_LIST_MAX 1000
#define TP_STR_LIST_MAX 64
typedef struct tp_u32_list {
  uint32_t v[TP_LIST_MAX];
  size_t n;
} tp_u32_list;
typedef struct tp_f64_list {
  double v[TP_LIST_MAX];
  size_t n;
} tp_f64_list;
typedef struct tp_str_list {
  const char *v[TP_STR_LIST_MAX];
  size_t n;
} tp_str_list;

typedef enum tp_setting_type {
  TP_SET_FLAG,     /* bool; a flag without a value sets it (the default is false) */
  TP_SET_BOOL,     /* bool; takes true/false/on/off/yes/no/1/0 */
  TP_SET_STR,      /* const char *, borrowed */
  TP_SET_U32,      /* uint32_t: a count, k/M/G suffixes (powers of 1000) */
  TP_SET_U64,      /* uint64_t: likewise */
  TP_SET_I64,      /* int64_t: a signed whole number (-1 often means "the default") */
  TP_SET_INT,      /* int: likewise */
  TP_SET_F64,      /* double: a decimal number */
  TP_SET_MS,       /* uint64_t milliseconds: a duration with a unit ("500ms", "2s"); bare = ms */
  TP_SET_SIZE,     /* uint64_t bytes: k/M/G suffixes are powers of 1024 ("64M") */
  TP_SET_FRACTION, /* double 0..1: "0.05" or "5%" */
  TP_SET_ENUM,     /* int: the position of the value among the choices */
  TP_SET_U32_LIST, /* tp_u32_list: "1,4,8", ranges "4:32:4", "1:64:x2" */
  TP_SET_F64_LIST, /* tp_f64_list: "0.5,2", or ranges of whole numbers */
  TP_SET_STR_LIST, /* tp_str_list: the option repeats, each value appended */
  TP_SET_CUSTOM    /* the row's own parse and format functions */
} tp_setting_type;

/* Row flags. */
enum {
  TP_SETF_HIDDEN = 1,   /* accepted, left out of --help, the man page and completions */
  TP_SETF_SECRET = 2,   /* never printed: the JSON echo says only whether it is set */
  TP_SETF_NOECHO = 4,   /* left out of the JSON echo (CLI-only switches) */
  TP_SETF_FILE = 8,     /* the value is a file name (completions offer files) */
  TP_SETF_DIR = 16,     /* the value is a directory name */
  TP_SETF_NONZERO = 32, /* 0 is refused ("must be above zero") */
  TP_SETF_NOOP = 64,    /* accepted for compatibility and ignored: said once on stderr */
  TP_SETF_CLEAR = 128,  /* a FLAG row that sets its bool to false ("--no-streaming") */
  TP_SETF_UNSET0 = 256, /* 0 means "not set" (automatic, no limit): help shows no default for it */
  /* The value may go on over the next words, up to the next option, joined
   * by spaces ("--goodput ttft:30 tpot:10", as argparse's nargs="+"). */
  TP_SETF_NARGS = 512,
  /* Another tool's flag that tokperf does not do: listed in --help so its
   * users find it, and refused when given (exit 2) with the row's help,
   * which names the nearest tokperf form.  Never silently dropped. */
  TP_SETF_REFUSED = 1024
};

typedef struct tp_setting tp_setting;

/* A custom row's parser: stores v into the struct at base; returns 0 or
 * TP_EINVAL with a phrase in err saying what was expected. */
typedef int (*tp_setting_parse_fn)(void *base, const tp_setting *s, const char *v, char *err, size_t errlen);
/* A custom row's formatter: the value as text for --help and the JSON
 * echo ("" when unset). */
typedef void (*tp_setting_format_fn)(const void *base, const tp_setting *s, char *out, size_t outlen);

struct tp_setting {
  /* The field's name in the configuration, by concern: "load.concurrency".
   * It is the key of the JSON echo, and the name the library uses in its
   * messages (the CLI puts the flag in its place). */
  const char *key;
  /* Spellings on the command line, "|"-separated: "-u|--url".  The first
   * long one is the canonical flag.  NULL: a field with no flag. */
  const char *flags;
  tp_setting_type type;
  size_t offset;       /* of the field in the struct */
  const char *arg;     /* the value's name in help: "LIST", "DURATION" */
  const char *dflt;    /* the default, as a command-line value; NULL: zero/empty */
  double min, max;     /* inclusive range of numbers and list elements; min > max: none */
  const char *choices; /* ENUM: "constant|poisson|gamma"; "name=index" gives an alias */
  const char *group;   /* the --help section: "Server", "Load", ... */
  const char *help;
  const char *example; /* a value that works, for the man page */
  unsigned flags_mask; /* TP_SETF_* */
  tp_setting_parse_fn parse;   /* CUSTOM */
  tp_setting_format_fn format; /* CUSTOM */
};

/* One table bound to the struct it fills, with a prefix put before every
 * long flag ("--mock-" turns --ttft-ms into --mock-ttft-ms; "" none). */
typedef struct tp_settings_part {
  const tp_setting *rows;
  size_t n;
  void *base;
  const char *prefix;
  /* Optional, n entries: set to 1 for each row given on the command line
   * (a setting whose meaning depends on whether the user chose it). */
  unsigned char *given;
} tp_settings_part;

/* Sets every row of the table to its default. */
TP_API void tp_settings_defaults(const tp_setting *rows, size_t n, void *base);

/* Parses one value into the row's field.  Returns 0, or TP_EINVAL with a
 * phrase in err ("expected 1 to 100000", "expected constant, poisson or
 * gamma"). */
TP_API int tp_setting_set(const tp_setting *s, void *base, const char *v, char *err, size_t errlen);

/* Checks one row's current value against its range and choices (values
 * set by a program rather than parsed).  Returns 0, or TP_EINVAL with
 * "KEY: VALUE is out of range; expected ..." in err. */
TP_API int tp_setting_check(const tp_setting *s, const void *base, char *err, size_t errlen);
/* Every row of a table. */
TP_API int tp_settings_check(const tp_setting *rows, size_t n, const void *base, char *err, size_t errlen);

/* The row's value as text ("1,4,8", "10s", "true"); "" when empty.  A
 * secret row gives "(set)" or "". */
TP_API void tp_setting_format(const tp_setting *s, const void *base, char *out, size_t outlen);

/* Parses a command line (the arguments after the subcommand) against the
 * parts.  "--name value", "--name=value", "-x value"; flags take no value.
 * Returns 0, or TP_EINVAL with one message in err that names the option,
 * quotes the value and says what is accepted.  A non-option argument is
 * refused unless positional is given, which then receives each in turn
 * (return non-zero to refuse it, with err set).  *help is set when -h or
 * --help was given (parsing goes on, so a later error still shows). */
TP_API int tp_settings_parse(const tp_settings_part *parts, size_t n_parts, int argc, char **argv,
                             int (*positional)(void *ud, const char *arg, char *err, size_t errlen),
                             void *ud, bool *help, char *err, size_t errlen);

/* The row whose key is key, or NULL. */
TP_API const tp_setting *tp_settings_find_key(const tp_setting *rows, size_t n, const char *key);

/* Replaces every "KEY" of the parts' rows found in msg by its flag
 * ("load.concurrency: 0 ..." -> "--concurrency: 0 ..."), so a library
 * message names what the user typed.  Rows without a flag keep their
 * key. */
TP_API void tp_settings_flagify(const tp_settings_part *parts, size_t n_parts, const char *msg, char *out,
                                size_t outlen);

/* --help: the rows of every part by group, "  -u, --url HOST:PORT  help
 * [default: ...]", the default printed from the current value of the
 * field (so call it on a struct holding the defaults), wrapped to width
 * columns (0: the terminal's, or 100). */
TP_API void tp_settings_help(FILE *out, const tp_settings_part *parts, size_t n_parts, unsigned width);

/* The OPTIONS section of a man page in roff (man(7)): every visible row
 * with its default and example. */
TP_API void tp_settings_man(FILE *out, const tp_settings_part *parts, size_t n_parts);

/* One subcommand of a program, for completions: its name and the parts it
 * parses. */
typedef struct tp_settings_command {
  const char *name;
  const tp_settings_part *parts;
  size_t n_parts;
} tp_settings_command;

/* A completion script for shell "bash" or "zsh" for program (its
 * subcommands, each one's flags; a flag's value completes as a file, a
 * directory or one of its choices).  Returns 0, or TP_EINVAL for another
 * shell. */
TP_API int tp_settings_completion(FILE *out, const char *shell, const char *program,
                                  const tp_settings_command *cmds, size_t n_cmds);

/* Appends every row (not NOECHO) to out as JSON members "key": value,
 * nested by the dots of the key ({"load": {"concurrency": [1, 4]}}).
 * out is a jansson json_t * object (void * here so the header needs no
 * jansson).  Returns 0 or TP_ENOMEM. */
TP_API int tp_settings_to_json(void *json_object, const tp_setting *rows, size_t n, const void *base);

#ifdef __cplusplus
}
#endif
#endif

/* `tokperf tokenize`: each input line (or, with --jsonl, each record's
 * "text") in, its token count or its ids out, one line each, in order.  The
 * same library call the run counts with, so users can check a count and the
 * tests can hold tokperf against a reference tokenizer. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "options.h"
#include "tokperf/tokperf.h"

typedef struct tok_opts {
  const char *tokenizer, *revision, *file;
  bool ids, jsonl, special, help;
} tok_opts;

#define TROW(key, flags, type, field, arg, dflt, help, ex, mask) \
  {key, flags, type, offsetof(tok_opts, field), arg, dflt, 1, 0, NULL, "Options", help, ex, mask, NULL, NULL}

static const tp_setting tok_rows[] = {
    TROW("tokenizer", "--tokenizer|--tokenizer-path", TP_SET_STR, tokenizer, "PATH|ORG/NAME", NULL,
         "tokenizer.json, tokenizer.model, a model directory, or a model name found in the Hugging Face cache "
         "(offline)",
         "/models/Qwen2-7B", TP_SETF_FILE),
    TROW("tokenizer_revision", "--tokenizer-revision", TP_SET_STR, revision, "REV", "main",
         "branch, tag or commit of a model name", "v1.0", 0),
    TROW("tokenizer_add_special_tokens", "--tokenizer-add-special-tokens", TP_SET_FLAG, special, NULL, NULL,
         "add the special tokens the tokenizer adds (BOS...), as profile --tokenizer-add-special-tokens counts "
         "prompts [default: off]",
         NULL, 0),
    TROW("ids", "--ids", TP_SET_FLAG, ids, NULL, NULL, "print the ids instead of the count", NULL, 0),
    TROW("jsonl", "--jsonl", TP_SET_FLAG, jsonl, NULL, NULL,
         "each line is a JSON object; its \"text\" is tokenized (so a text may hold newlines)", NULL, 0),
};

#define TOK_N (sizeof(tok_rows) / sizeof(tok_rows[0]))

static tp_settings_part tok_part(void *base) { return (tp_settings_part){tok_rows, TOK_N, base, "", NULL}; }

tp_settings_part tp_cmd_tokenize_defaults(void) {
  static tok_opts d;
  tp_settings_defaults(tok_rows, TOK_N, &d);
  return tok_part(&d);
}

static void help(FILE *out) {
  tp_settings_part part = tp_cmd_tokenize_defaults();
  fprintf(out,
          "Usage: tokperf tokenize --tokenizer PATH|ORG/NAME [--tokenizer-revision REV]\n"
          "                        [--tokenizer-add-special-tokens] [--ids] [--jsonl] [FILE|-]\n\n"
          "Prints, for each line of FILE (or standard input), its number of tokens, or with --ids\n"
          "its token ids as a JSON array: by default the text's own tokens, with no special\n"
          "tokens added, the way tokperf profile counts.\n\n");
  tp_settings_help(out, &part, 1, 0);
  fprintf(out,
          "\n"
          "-h or --help prints this help. Exit codes: 0 done, 2 usage or input error (file:line named), 3 tokenizer not loadable.\n\n"
          "Example:\n  echo 'Hello world' | tokperf tokenize --tokenizer /models/Qwen2-7B --ids\n");
}

/* The one file argument ("-" is standard input). */
static int take_file(void *ud, const char *arg, char *err, size_t errlen) {
  tok_opts *o = ud;
  if (o->file) {
    snprintf(err, errlen, "unexpected argument '%s' (one FILE at most)", arg);
    return TP_EINVAL;
  }
  o->file = arg;
  return 0;
}

static int usage(const char *msg) {
  fprintf(stderr, "tokperf tokenize: %s\ntry 'tokperf tokenize --help'\n", msg);
  return TP_EXIT_USAGE;
}

int tp_cmd_tokenize(int argc, char **argv) {
  tok_opts opt;
  tp_settings_defaults(tok_rows, TOK_N, &opt);
  tp_settings_part part = tok_part(&opt);
  char perr[512] = "";
  if (tp_settings_parse(&part, 1, argc, argv, take_file, &opt, &opt.help, perr, sizeof(perr))) return usage(perr);
  if (opt.help) {
    help(stdout);
    return TP_EXIT_OK;
  }
  if (!opt.tokenizer) return usage("--tokenizer PATH is needed");
  const char *tok_path = opt.tokenizer, *file = opt.file, *revision = opt.revision;
  bool ids = opt.ids, jsonl = opt.jsonl, special = opt.special;
  const char *name = file && strcmp(file, "-") != 0 ? file : "<stdin>";
  FILE *in = file && strcmp(file, "-") != 0 ? fopen(file, "r") : stdin;
  if (!in) {
    fprintf(stderr, "tokperf tokenize: %s: %s\n", file, strerror(errno));
    return TP_EXIT_USAGE;
  }
  char err[1024];
  tp_tokenizer *tok = NULL;
  char *found = NULL;
  int rv = tp_tokenizer_find(tok_path, revision, &found, err, sizeof(err));
  if (rv == 0)
    rv = tp_tokenizer_load_ex(&tok, found, special ? TP_TOKENIZER_FLAG_ADD_SPECIAL_TOKENS : 0, err,
                              sizeof(err));
  free(found);
  if (rv) {
    fprintf(stderr, "tokperf tokenize: %s\n", err);
    if (in != stdin) fclose(in);
    return TP_EXIT_START;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t len;
  size_t lineno = 0;
  int code = TP_EXIT_OK;
  while ((len = getline(&line, &cap, in)) >= 0) {
    lineno++;
    const char *text = line;
    size_t tlen = (size_t)len;
    json_t *o = NULL;
    if (jsonl) {
      json_error_t je;
      o = json_loadb(line, (size_t)len, 0, &je);
      json_t *t = o ? json_object_get(o, "text") : NULL;
      if (!json_is_string(t)) {
        fprintf(stderr, "tokperf tokenize: %s:%zu: %s\n", name, lineno,
                o ? "expected an object with a string under \"text\"" : je.text);
        json_decref(o);
        code = TP_EXIT_USAGE;
        break;
      }
      text = json_string_value(t);
      tlen = json_string_length(t);
    } else if (tlen && text[tlen - 1] == '\n') {
      tlen--; /* the line end is not part of the text */
      if (tlen && text[tlen - 1] == '\r') tlen--;
    }
    int32_t *v = NULL;
    size_t n = 0;
    rv = special ? tp_tokenizer_encode_special(tok, text, tlen, &v, &n)
                 : tp_tokenizer_encode(tok, text, tlen, &v, &n);
    json_decref(o);
    if (rv) {
      fprintf(stderr, "tokperf tokenize: %s:%zu: cannot encode: %s\n", name, lineno, tp_strerror(rv));
      code = TP_EXIT_USAGE;
      break;
    }
    if (ids) {
      putchar('[');
      for (size_t k = 0; k < n; k++) printf("%s%d", k ? "," : "", v[k]);
      puts("]");
    } else {
      printf("%zu\n", n);
    }
    free(v);
  }
  free(line);
  if (in != stdin) fclose(in);
  tp_tokenizer_free(tok);
  return code;
}

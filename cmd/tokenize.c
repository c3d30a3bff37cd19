/* `tokperf tokenize`: each input line (or, with --jsonl, each record's
 * "text") in, its token count or its ids out, one line each, in order.  The
 * same library call the run counts with, so users can check a count and the
 * tests can hold tokperf against a reference tokenizer. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "options.h"
#include "tokperf/tokperf.h"

static void help(FILE *out) {
  fprintf(out,
          "Usage: tokperf tokenize --tokenizer PATH|ORG/NAME [--tokenizer-revision REV]\n"
          "                        [--tokenizer-add-special-tokens] [--ids] [--jsonl] [FILE|-]\n\n"
          "Prints, for each line of FILE (or standard input), its number of tokens, or with --ids\n"
          "its token ids as a JSON array: by default the text's own tokens, with no special\n"
          "tokens added, the way tokperf profile counts.\n\n"
          "Options:\n"
          "  --tokenizer,--tokenizer-path PATH  tokenizer.json, tokenizer.model, a model directory, or a\n"
          "                                     model name found in the Hugging Face cache (offline)\n"
          "  --tokenizer-revision REV           branch, tag or commit of a model name [default: main]\n"
          "  --tokenizer-add-special-tokens     add the special tokens the tokenizer adds (BOS...), as\n"
          "                                     profile --tokenizer-add-special-tokens counts prompts\n"
          "                                     [default: off]\n"
          "  --ids                              print the ids instead of the count\n"
          "  --jsonl                            each line is a JSON object; its \"text\" is tokenized\n"
          "                                     (so a text may hold newlines)\n"
          "  -h,--help                          this help\n\n"
          "Exit codes: 0 done, 2 usage or input error (file:line named), 3 tokenizer not loadable.\n\n"
          "Example:\n  echo 'Hello world' | tokperf tokenize --tokenizer /models/Qwen2-7B --ids\n");
}

int tp_cmd_tokenize(int argc, char **argv) {
  const char *tok_path = NULL, *file = NULL, *revision = NULL;
  int ids = 0, jsonl = 0, special = 0;
  for (int i = 0; i < argc; i++) {
    const char *a = argv[i];
    if (strcmp(a, "--tokenizer") == 0 || strcmp(a, "--tokenizer-path") == 0) {
      if (i + 1 >= argc) {
        fprintf(stderr, "tokperf tokenize: %s needs a value (PATH)\ntry 'tokperf tokenize --help'\n", a);
        return TP_EXIT_USAGE;
      }
      tok_path = argv[++i];
    } else if (strcmp(a, "--tokenizer-revision") == 0) {
      if (i + 1 >= argc) {
        fprintf(stderr, "tokperf tokenize: %s needs a value (REV)\ntry 'tokperf tokenize --help'\n", a);
        return TP_EXIT_USAGE;
      }
      revision = argv[++i];
    } else if (strncmp(a, "--tokenizer=", 12) == 0) {
      tok_path = a + 12;
    } else if (strcmp(a, "--tokenizer-add-special-tokens") == 0) {
      special = 1;
    } else if (strcmp(a, "--ids") == 0) {
      ids = 1;
    } else if (strcmp(a, "--jsonl") == 0) {
      jsonl = 1;
    } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
      help(stdout);
      return TP_EXIT_OK;
    } else if ((a[0] != '-' || strcmp(a, "-") == 0) && !file) {
      file = a;
    } else {
      fprintf(stderr, "tokperf tokenize: unexpected argument '%s'\ntry 'tokperf tokenize --help'\n", a);
      return TP_EXIT_USAGE;
    }
  }
  if (!tok_path) {
    fprintf(stderr, "tokperf tokenize: --tokenizer PATH is needed\ntry 'tokperf tokenize --help'\n");
    return TP_EXIT_USAGE;
  }
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

/* Prints tokperf's token ids for every text of a JSONL file, one line per
 * text, in the format test/tok/reference.js prints the reference's, so the
 * two outputs compare with a plain diff.
 *
 * Usage: tok_ids [--decode | --special] TOKENIZER TEXTS.jsonl
 *   TOKENIZER   a tokenizer.json / tokenizer.model or a model directory
 *               (loaded through tp_tok_load_ex, the path the CLI uses)
 *   TEXTS       one {"text": "..."} object per line
 * Output: the ids separated by single spaces (an empty line for none), or
 * with --decode the decoded ids as a JSON string escaped the way
 * JavaScript's JSON.stringify escapes.  Encoding adds no special tokens;
 * with --special it adds those the tokenizer adds (tp_tok_encode_special,
 * what --tokenizer-add-special-tokens counts).
 * Exit status: 0, 2 usage, 3 the tokenizer cannot be loaded, 1 otherwise. */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/tp_tok.h"

/* JSON.stringify's escaping: the short escapes, \u00xx (lowercase) for
 * other control characters, everything else as it is. */
static void print_json_string(const char *s, size_t n) {
  putchar('"');
  for (size_t i = 0; i < n; i++) {
    unsigned char c = (unsigned char)s[i];
    switch (c) {
      case '"': fputs("\\\"", stdout); break;
      case '\\': fputs("\\\\", stdout); break;
      case '\b': fputs("\\b", stdout); break;
      case '\f': fputs("\\f", stdout); break;
      case '\n': fputs("\\n", stdout); break;
      case '\r': fputs("\\r", stdout); break;
      case '\t': fputs("\\t", stdout); break;
      default:
        if (c < 0x20)
          printf("\\u%04x", c);
        else
          putchar(c);
    }
  }
  putchar('"');
}

int main(int argc, char **argv) {
  int a = 1;
  int decode = 0, special = 0;
  if (a < argc && strcmp(argv[a], "--decode") == 0)
    decode = 1, a++;
  else if (a < argc && strcmp(argv[a], "--special") == 0)
    special = 1, a++;
  if (argc - a != 2) {
    fprintf(stderr, "usage: %s [--decode | --special] TOKENIZER TEXTS.jsonl\n", argv[0]);
    return 2;
  }
  char err[1024];
  tp_tok *tok = NULL;
  if (tp_tok_load_ex(&tok, argv[a], special ? TP_TOK_FLAG_SPECIAL_TOKENS : 0, err, sizeof(err)) != 0) {
    fprintf(stderr, "tok_ids: %s\n", err);
    return 3;
  }
  FILE *f = fopen(argv[a + 1], "rb");
  if (f == NULL) {
    perror(argv[a + 1]);
    tp_tok_free(tok);
    return 1;
  }
  char *line = NULL;
  size_t cap = 0;
  ssize_t got;
  int status = 0;
  unsigned lineno = 0;
  while ((got = getline(&line, &cap, f)) > 0) {
    lineno++;
    json_error_t je;
    json_t *doc = json_loadb(line, (size_t)got, JSON_ALLOW_NUL, &je);
    json_t *text = doc ? json_object_get(doc, "text") : NULL;
    if (!json_is_string(text)) {
      fprintf(stderr, "%s:%u: expected {\"text\": \"...\"}: %s\n", argv[a + 1], lineno,
              doc ? "no text string" : je.text);
      json_decref(doc);
      status = 1;
      break;
    }
    int32_t *ids = NULL;
    size_t n = 0;
    int rc = special ? tp_tok_encode_special(tok, json_string_value(text), json_string_length(text), &ids, &n)
                     : tp_tok_encode(tok, json_string_value(text), json_string_length(text), &ids, &n);
    if (rc != 0) {
      fprintf(stderr, "%s:%u: encode failed (%d)\n", argv[a + 1], lineno, rc);
      status = 1;
    } else if (decode) {
      char *out = NULL;
      size_t len = 0;
      rc = tp_tok_decode(tok, ids, n, &out, &len);
      if (rc != 0) {
        fprintf(stderr, "%s:%u: decode failed (%d)\n", argv[a + 1], lineno, rc);
        status = 1;
      } else {
        print_json_string(out, len);
      }
      free(out);
    } else {
      for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", (int)ids[i]);
    }
    putchar('\n');
    free(ids);
    json_decref(doc);
  }
  free(line);
  fclose(f);
  tp_tok_free(tok);
  return status;
}

/* Public wrappers over internal modules (the tokenizer, run comparison), so
 * programs using only tokperf.h (the CLI's `tokenize` and `compare`,
 * examples) reach the same code the run uses. */
#include "tokenizer/tp_tok.h"
#include "tokenizer/tp_tok_find.h"
#include <string.h>

#include "dataset/tp_dataset.h"
#include "util/tp_common.h"
#include "util/tp_files.h"
#include "tokperf/tokperf.h"

int tp_tokenizer_load(tp_tokenizer **out, const char *path, char *err, size_t errlen) {
  return tp_tok_load((tp_tok **)out, path, err, errlen);
}

int tp_tokenizer_find(const char *name, const char *revision, char **path, char *err, size_t errlen) {
  return tp_tok_find(name, revision, tp_tok_env_process, NULL, path, err, errlen);
}

int tp_tokenizer_encode(const tp_tokenizer *t, const char *text, size_t len, int32_t **ids, size_t *n) {
  return tp_tok_encode((const tp_tok *)t, text, len, ids, n);
}

int tp_tokenizer_count(const tp_tokenizer *t, const char *text, size_t len, size_t *n) {
  return tp_tok_count((const tp_tok *)t, text, len, n);
}

/* The public flag is mapped rather than passed through, so the two enums
 * can never drift apart silently. */
int tp_tokenizer_load_ex(tp_tokenizer **out, const char *path, unsigned flags, char *err, size_t errlen) {
  unsigned f = (flags & TP_TOKENIZER_FLAG_ADD_SPECIAL_TOKENS) ? TP_TOK_FLAG_SPECIAL_TOKENS : 0;
  return tp_tok_load_ex((tp_tok **)out, path, f, err, errlen);
}

int tp_tokenizer_encode_special(const tp_tokenizer *t, const char *text, size_t len, int32_t **ids,
                                size_t *n) {
  return tp_tok_encode_special((const tp_tok *)t, text, len, ids, n);
}

int tp_tokenizer_count_special(const tp_tokenizer *t, const char *text, size_t len, size_t *n) {
  return tp_tok_count_special((const tp_tok *)t, text, len, n);
}

const char *tp_tokenizer_special_desc(const tp_tokenizer *t) {
  return tp_tok_special_desc((const tp_tok *)t);
}

const char *tp_tokenizer_name(const tp_tokenizer *t) { return tp_tok_name((const tp_tok *)t); }

void tp_tokenizer_free(tp_tokenizer *t) { tp_tok_free((tp_tok *)t); }

/* The public face of run comparison (lib/report/tp_compare). */
#include "report/tp_compare.h"

int tp_compare_html_page(const char *const *paths, size_t n, const char *html_path, char *err, size_t errlen) {
  return tp_compare_html(paths, n, html_path, err, errlen);
}

int tp_compare(const char *json_a, const char *json_b, const char *const *fail_on, size_t n, FILE *out,
               const char *junit_path, char *err, size_t errlen) {
  return tp_compare_run(json_a, json_b, fail_on, n, out, junit_path, err, errlen);
}

#include "metrics/tp_metric.h"

void tp_metric_list(char *out, size_t outlen, bool dist_only) { tp_metric_names(out, outlen, dist_only); }

int tp_output_check(const char *path, bool dir, char *why, size_t whylen) {
  return dir ? tp_dir_check_creatable(path, why, whylen) : tp_file_check_writable(path, why, whylen);
}

int tp_input_count(const char *path, size_t *n, char *err, size_t errlen) {
  tp_dataset ds;
  memset(&ds, 0, sizeof(ds));
  int rv = tp_dataset_load(&ds, path, err, errlen);
  *n = rv ? 0 : ds.n;
  tp_dataset_free(&ds);
  return rv;
}

/* The pluggable tokenizer interface: picks a backend for a path and
 * forwards calls to it.
 *
 * Choosing the backend is mostly about good messages.  Users point
 * --tokenizer at whatever a model hub gave them: a tokenizer.model, a
 * tokenizer.json, or the model's directory.  A JSON file goes to the
 * tokenizer.json backend, anything else to sentencepiece.  In a directory
 * tokenizer.json wins over tokenizer.model: when a model ships both, the
 * JSON is what its server's tokenizer (transformers' fast tokenizer) loads,
 * with the added tokens the .model file lacks.  A name like ORG/NAME that
 * is no local path is looked up in the Hugging Face cache at revision main
 * (tp_tok_find.c). */
#include "tokenizer/tp_tok.h"
#include "tokenizer/tp_tok_find.h"

#include <dirent.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "util/tp_common.h"

/* At most this many directory entries are named in a "not found" message;
 * a model snapshot can hold thousands of weight shards. */
#define MAX_LISTED 12

static bool has_suffix(const char *s, const char *suffix) {
  size_t n = strlen(s), m = strlen(suffix);
  return n >= m && strcmp(s + n - m, suffix) == 0;
}

/* A tokenizer.json (or any JSON) is recognised by name or by its first
 * non-blank byte.  A sentencepiece model is a serialized protobuf whose
 * first byte is a field tag (0x0a for the pieces), never '{', so sniffing
 * cannot misfile a real model. */
static bool looks_like_json(const char *path) {
  if (has_suffix(path, ".json")) return true;
  FILE *f = fopen(path, "rb");
  if (f == NULL) return false; /* let the backend report why it cannot open it */
  bool json = false;
  for (int i = 0; i < 64; i++) {
    int c = fgetc(f);
    if (c == ' ' || c == '\t' || c == '\r' || c == '\n') continue;
    json = c == '{';
    break;
  }
  fclose(f);
  return json;
}

static int load_file(tp_tok **out, const char *path, const struct stat *st, unsigned flags, char *err,
                     size_t errlen) {
  if (looks_like_json(path)) return tp_tok_hf_load(out, path, flags, err, errlen);
  /* Caught here because sentencepiece parses zero bytes as a valid, empty
   * model proto and then reports a confusing reason. */
  if (S_ISREG(st->st_mode) && st->st_size == 0) {
    tp_seterr(err, errlen,
              "cannot load tokenizer '%s': the file is empty, not a sentencepiece model "
              "(pass the model's tokenizer.model file)",
              path);
    return TP_EINVAL;
  }
  return tp_tok_spm_load(out, path, flags, err, errlen);
}

static int join_path(tp_buf *b, const char *dir, const char *name) {
  tp_buf_reset(b);
  return tp_buf_printf(b, "%s%s%s", dir, has_suffix(dir, "/") ? "" : "/", name);
}

static int dir_filter(const struct dirent *d) {
  return strcmp(d->d_name, ".") != 0 && strcmp(d->d_name, "..") != 0;
}

/* Describes what the directory holds, sorted so the message is the same
 * on every run, with a hint when another *.model file (T5's spiece.model,
 * say) is probably what the user meant. */
static int describe_dir(tp_buf *b, const char *dir) {
  struct dirent **ents = NULL;
  int n = scandir(dir, &ents, dir_filter, alphasort);
  if (n < 0) return tp_buf_printf(b, "nothing readable (%s)", strerror(errno));
  int rv = 0;
  const char *other_model = NULL;
  if (n == 0) {
    rv = tp_buf_append_str(b, "nothing (the directory is empty)");
  } else {
    rv = tp_buf_printf(b, "%d entr%s: ", n, n == 1 ? "y" : "ies");
    for (int i = 0; rv == 0 && i < n; i++) {
      const char *name = ents[i]->d_name;
      if (other_model == NULL && has_suffix(name, ".model")) other_model = name;
      if (i < MAX_LISTED)
        rv = tp_buf_printf(b, "%s%s%s", i ? ", " : "", name,
                           ents[i]->d_type == DT_DIR ? "/" : "");
    }
    if (rv == 0 && n > MAX_LISTED) rv = tp_buf_printf(b, ", and %d more", n - MAX_LISTED);
    if (rv == 0 && other_model != NULL)
      rv = tp_buf_printf(b, "; if %s is a sentencepiece model, pass that file", other_model);
  }
  for (int i = 0; i < n; i++) free(ents[i]);
  free(ents);
  return rv;
}

static int load_dir(tp_tok **out, const char *dir, unsigned flags, char *err, size_t errlen) {
  tp_buf p, found;
  struct stat st;
  int rv;

  tp_buf_init(&p);
  tp_buf_init(&found);
  if ((rv = join_path(&p, dir, "tokenizer.json")) != 0) goto oom;
  if (stat((char *)p.data, &st) == 0 && !S_ISDIR(st.st_mode)) {
    rv = tp_tok_hf_load(out, (char *)p.data, flags, err, errlen);
    goto done;
  }
  if ((rv = join_path(&p, dir, "tokenizer.model")) != 0) goto oom;
  if (stat((char *)p.data, &st) == 0 && !S_ISDIR(st.st_mode)) {
    rv = load_file(out, (char *)p.data, &st, flags, err, errlen);
    goto done;
  }
  if ((rv = describe_dir(&found, dir)) != 0) goto oom;
  tp_seterr(err, errlen,
            "cannot load tokenizer from directory '%s': looked for tokenizer.json "
            "(Hugging Face) and tokenizer.model (sentencepiece), found %s",
            dir, (char *)found.data);
  rv = TP_ENOTFOUND;
  goto done;
oom:
  tp_seterr(err, errlen, "cannot load tokenizer from directory '%s': out of memory", dir);
  rv = TP_ENOMEM;
done:
  tp_buf_fini(&p);
  tp_buf_fini(&found);
  return rv;
}

static int load_by_name(tp_tok **out, const char *name, unsigned flags, char *err, size_t errlen) {
  char *dir = NULL;
  int rv = tp_tok_find(name, NULL, tp_tok_env_process, NULL, &dir, err, errlen);
  if (rv == 0) rv = load_dir(out, dir, flags, err, errlen);
  free(dir);
  return rv;
}

int tp_tok_load(tp_tok **out, const char *path, char *err, size_t errlen) {
  return tp_tok_load_ex(out, path, 0, err, errlen);
}

int tp_tok_load_ex(tp_tok **out, const char *path, unsigned flags, char *err, size_t errlen) {
  struct stat st;

  *out = NULL;
  if (path == NULL || path[0] == '\0') {
    tp_seterr(err, errlen,
              "no tokenizer given: pass a tokenizer.json or tokenizer.model file, or a model "
              "directory holding one");
    return TP_EINVAL;
  }
  if (stat(path, &st) != 0) {
    int e = errno;
    if ((e == ENOENT || e == ENOTDIR) && tp_tok_is_repo_id(path))
      return load_by_name(out, path, flags, err, errlen);
    if (e == ENOENT || e == ENOTDIR) {
      tp_seterr(err, errlen,
                "cannot load tokenizer '%s': no such file or directory (pass a tokenizer.json "
                "or tokenizer.model file, or a model directory holding one)",
                path);
      return TP_ENOTFOUND;
    }
    tp_seterr(err, errlen, "cannot load tokenizer '%s': %s", path, strerror(e));
    return TP_EIO;
  }
  if (S_ISDIR(st.st_mode)) return load_dir(out, path, flags, err, errlen);
  return load_file(out, path, &st, flags, err, errlen);
}

int tp_tok_encode(const tp_tok *t, const char *text, size_t len, int32_t **ids, size_t *n) {
  if (t == NULL || ids == NULL || n == NULL || (text == NULL && len != 0)) return TP_EINVAL;
  return t->ops->encode(t, text, len, ids, n);
}

int tp_tok_count(const tp_tok *t, const char *text, size_t len, size_t *count) {
  int32_t *ids = NULL;
  size_t n = 0;

  if (count == NULL) return TP_EINVAL;
  *count = 0;
  /* Encoding and discarding the ids is the simple, exact answer; a backend
   * could count without materialising the ids if this ever shows up in a
   * profile. */
  int rv = tp_tok_encode(t, text, len, &ids, &n);
  if (rv != 0) return rv;
  free(ids);
  *count = n;
  return 0;
}

/* Special tokens are added around the text's ids after encoding, the way
 * tokenizers' post-processors work on a finished encoding: they never take
 * part in merges, so the text's own ids are tp_tok_encode's whatever is
 * added, and a count is the text's count times its copies in the template
 * plus the template's fixed ids.  The plain calls above stay as they were,
 * so counting without special tokens costs nothing extra. */
int tp_tok_encode_special(const tp_tok *t, const char *text, size_t len, int32_t **ids, size_t *n) {
  if (ids != NULL) *ids = NULL;
  if (n != NULL) *n = 0;
  if (t == NULL || t->special == NULL) return TP_EINVAL; /* not loaded with TP_TOK_FLAG_SPECIAL_TOKENS */
  int32_t *own = NULL;
  size_t n_own = 0;
  int rv = tp_tok_encode(t, text, len, &own, &n_own);
  if (rv != 0) return rv;
  if (t->n_special == 1 && t->n_special_text == 1) { /* "$A": nothing added */
    *ids = own;
    *n = n_own;
    return 0;
  }
  size_t fixed = t->n_special - t->n_special_text;
  if (t->n_special_text != 0 && n_own > (SIZE_MAX / sizeof(int32_t) - fixed) / t->n_special_text) {
    free(own);
    return TP_ETOOBIG;
  }
  size_t total = n_own * t->n_special_text + fixed;
  int32_t *v = malloc((total ? total : 1) * sizeof(*v));
  if (v == NULL) {
    free(own);
    return TP_ENOMEM;
  }
  size_t k = 0;
  for (size_t i = 0; i < t->n_special; i++) {
    if (t->special[i] != TP_TOK_TEXT) {
      v[k++] = t->special[i];
    } else if (n_own) {
      memcpy(v + k, own, n_own * sizeof(*v));
      k += n_own;
    }
  }
  free(own);
  *ids = v;
  *n = total;
  return 0;
}

int tp_tok_count_special(const tp_tok *t, const char *text, size_t len, size_t *count) {
  if (count == NULL) return TP_EINVAL;
  *count = 0;
  if (t == NULL || t->special == NULL) return TP_EINVAL;
  size_t own = 0;
  int rv = tp_tok_count(t, text, len, &own);
  if (rv != 0) return rv;
  size_t fixed = t->n_special - t->n_special_text;
  if (t->n_special_text != 0 && own > (SIZE_MAX - fixed) / t->n_special_text) return TP_ETOOBIG;
  *count = own * t->n_special_text + fixed;
  return 0;
}

const char *tp_tok_special_desc(const tp_tok *t) {
  return t != NULL ? t->special_desc : NULL;
}

int tp__tok_set_special(tp_tok *t, const int32_t *tmpl, size_t n, const char *desc) {
  int32_t *v = malloc((n ? n : 1) * sizeof(*v));
  char *d = tp_strndup(desc, strlen(desc));
  if (v == NULL || d == NULL) {
    free(v);
    free(d);
    return TP_ENOMEM;
  }
  size_t text = 0;
  for (size_t i = 0; i < n; i++) {
    v[i] = tmpl[i];
    text += tmpl[i] == TP_TOK_TEXT;
  }
  free(t->special);
  free(t->special_desc);
  t->special = v;
  t->n_special = n;
  t->n_special_text = text;
  t->special_desc = d;
  return 0;
}

int tp_tok_decode(const tp_tok *t, const int32_t *ids, size_t n, char **text, size_t *len) {
  if (t == NULL || text == NULL || len == NULL || (ids == NULL && n != 0)) return TP_EINVAL;
  return t->ops->decode(t, ids, n, text, len);
}

const char *tp_tok_name(const tp_tok *t) { return t != NULL ? t->ops->name : "none"; }

/* Backends release only their own state in ops->free; the tp_tok and its
 * path are freed here, so that part is written once. */
void tp_tok_free(tp_tok *t) {
  if (t == NULL) return;
  t->ops->free(t);
  free(t->path);
  free(t->special);
  free(t->special_desc);
  free(t);
}

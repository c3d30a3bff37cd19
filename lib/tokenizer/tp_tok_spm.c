/* The sentencepiece backend: tp_tok_ops over the C shim in
 * third_party/sentencepiece.
 *
 * The shim owns everything C++; this file only maps its codes to TP_E*
 * codes and words the load errors for the user.  Encode and decode errors
 * lose the shim's message, because tp_tok_ops has nowhere to put one; they
 * only happen for out-of-range ids or when memory runs out.
 *
 * Special tokens (TP_TOK_FLAG_SPECIAL_TOKENS): a sentencepiece model only
 * says which pieces are BOS and EOS, not whether to add them; that is the
 * wrapping library's choice.  transformers' Llama tokenizer adds BOS and no
 * EOS unless the model's tokenizer_config.json sets add_bos_token /
 * add_eos_token, and that is what is done here, reading the
 * tokenizer_config.json beside the model file when there is one. */
#include "tokenizer/tp_tok.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "tokenizer/tp_tok_hf_json.h"
#include "tp_spm_shim.h"
#include "util/tp_common.h"

/* A tokenizer_config.json is a few kB (a few MB with a long list of added
 * tokens); this only keeps a wrong file from being read whole. */
#define MAX_CONFIG_BYTES (64u * 1024u * 1024u)

static int map_code(int rc) {
  switch (rc) {
    case TP_SPM_OK: return 0;
    case TP_SPM_ENOMEM: return TP_ENOMEM;
    case TP_SPM_ENOTFOUND: return TP_ENOTFOUND;
    case TP_SPM_EIO: return TP_EIO;
    case TP_SPM_EINVAL: return TP_EINVAL;
    default: return TP_EINVAL;
  }
}

static int spm_encode(const tp_tok *t, const char *text, size_t len, int32_t **ids, size_t *n) {
  return map_code(tp_spm_encode(t->impl, text, len, ids, n, NULL, 0));
}

static int spm_decode(const tp_tok *t, const int32_t *ids, size_t n, char **text, size_t *len) {
  return map_code(tp_spm_decode(t->impl, ids, n, text, len, NULL, 0));
}

/* Releases only the backend's state; tp_tok_free owns the tp_tok itself
 * and its path, so every backend frees the same way. */
static void spm_free(tp_tok *t) {
  tp_spm_free(t->impl);
  t->impl = NULL;
}

static const tp_tok_ops spm_ops = {
    .name = "sentencepiece",
    .encode = spm_encode,
    .decode = spm_decode,
    .free = spm_free,
};

/* One of add_bos_token / add_eos_token: true or false; absent or null
 * leaves *out alone. */
static int config_bool(const tp__json *d, const char *key, bool *out, const char *model, const char *cfg,
                       char *err, size_t errlen) {
  uint32_t v = tp__json_get(d, 0, key);
  if (v == 0) return 0;
  uint8_t t = tp__json_at(d, v)->type;
  if (t == TP_JSON_NULL) return 0;
  if (t != TP_JSON_TRUE && t != TP_JSON_FALSE) {
    tp_seterr(err, errlen, "cannot load tokenizer '%s': %s: %s is %s, expected true or false", model, cfg,
              key, tp__json_type_name(d, v));
    return TP_EINVAL;
  }
  *out = t == TP_JSON_TRUE;
  return 0;
}

/* Reads add_bos_token and add_eos_token from the tokenizer_config.json in
 * the model file's directory, when there is one (a missing file is not an
 * error: the defaults stand). */
static int read_config(const char *file, bool *add_bos, bool *add_eos, char *err, size_t errlen) {
  const char *slash = strrchr(file, '/');
  tp_buf path;
  tp_buf_init(&path);
  int rv = slash ? tp_buf_printf(&path, "%.*s/tokenizer_config.json", (int)(slash - file), file)
                 : tp_buf_append_str(&path, "tokenizer_config.json");
  if (rv) {
    tp_buf_fini(&path);
    tp_seterr(err, errlen, "cannot load tokenizer '%s': out of memory", file);
    return TP_ENOMEM;
  }
  const char *cfg = (char *)path.data;
  char *text = NULL;
  tp__json doc;
  memset(&doc, 0, sizeof(doc));
  struct stat st;
  FILE *f = NULL;
  if (stat(cfg, &st) != 0) {
    int e = errno;
    if (e == ENOENT || e == ENOTDIR) goto done; /* none: the defaults stand */
    tp_seterr(err, errlen, "cannot read %s, beside tokenizer '%s': %s", cfg, file, strerror(e));
    rv = TP_EIO;
    goto done;
  }
  if (!S_ISREG(st.st_mode)) goto done; /* a directory of that name holds no settings */
  if ((uint64_t)st.st_size > MAX_CONFIG_BYTES) {
    tp_seterr(err, errlen,
              "cannot load tokenizer '%s': %s is %lld bytes, too large for a tokenizer_config.json", file,
              cfg, (long long)st.st_size);
    rv = TP_EINVAL;
    goto done;
  }
  size_t size = (size_t)st.st_size;
  f = fopen(cfg, "rb");
  text = malloc(size ? size : 1);
  if (f == NULL || text == NULL) {
    tp_seterr(err, errlen, "cannot read %s, beside tokenizer '%s': %s", cfg, file,
              f == NULL ? strerror(errno) : "out of memory");
    rv = f == NULL ? TP_EIO : TP_ENOMEM;
    goto done;
  }
  if (fread(text, 1, size, f) != size) {
    tp_seterr(err, errlen, "cannot read %s, beside tokenizer '%s': read error", cfg, file);
    rv = TP_EIO;
    goto done;
  }
  char why[512];
  if ((rv = tp__json_parse(&doc, text, size, why, sizeof(why))) != 0) {
    tp_seterr(err, errlen, "cannot load tokenizer '%s': %s is not valid JSON: %s", file, cfg, why);
    goto done;
  }
  if (tp__json_at(&doc, 0)->type != TP_JSON_OBJECT) {
    tp_seterr(err, errlen, "cannot load tokenizer '%s': %s is %s, expected an object", file, cfg,
              tp__json_type_name(&doc, 0));
    rv = TP_EINVAL;
    goto done;
  }
  if ((rv = config_bool(&doc, "add_bos_token", add_bos, file, cfg, err, errlen)) == 0)
    rv = config_bool(&doc, "add_eos_token", add_eos, file, cfg, err, errlen);
done:
  if (f) fclose(f);
  tp__json_fini(&doc);
  free(text);
  tp_buf_fini(&path);
  return rv;
}

/* Builds the template tp_tok_encode_special uses: BOS (when the model has
 * one) and no EOS, unless tokenizer_config.json says otherwise. */
static int load_special(tp_tok *t, tp_spm *sp, const char *file, char *err, size_t errlen) {
  int32_t bos, eos;
  tp_spm_special_ids(sp, &bos, &eos);
  bool add_bos = bos >= 0, add_eos = false;
  int rv = read_config(file, &add_bos, &add_eos, err, errlen);
  if (rv) return rv;
  if ((add_bos && bos < 0) || (add_eos && eos < 0)) {
    tp_seterr(err, errlen,
              "cannot load tokenizer '%s': the tokenizer_config.json beside it sets %s, but the model has no "
              "%s piece (correct the file, or count without special tokens)",
              file, add_bos && bos < 0 ? "add_bos_token" : "add_eos_token",
              add_bos && bos < 0 ? "BOS" : "EOS");
    return TP_EINVAL;
  }
  int32_t tmpl[3];
  size_t n = 0;
  char desc[400] = "", piece[96];
  size_t dl = 0;
  if (add_bos) {
    tmpl[n++] = bos;
    tp_spm_piece(sp, bos, piece, sizeof(piece));
    dl += (size_t)snprintf(desc + dl, sizeof(desc) - dl, "%s ", piece);
  }
  tmpl[n++] = TP_TOK_TEXT;
  dl += (size_t)snprintf(desc + dl, sizeof(desc) - dl, "$A");
  if (add_eos) {
    tmpl[n++] = eos;
    tp_spm_piece(sp, eos, piece, sizeof(piece));
    snprintf(desc + dl, sizeof(desc) - dl, " %s", piece);
  }
  if (tp__tok_set_special(t, tmpl, n, desc) != 0) {
    tp_seterr(err, errlen, "cannot load tokenizer '%s': out of memory", file);
    return TP_ENOMEM;
  }
  return 0;
}

int tp_tok_spm_load(tp_tok **out, const char *file, unsigned flags, char *err, size_t errlen) {
  char why[512] = "";
  tp_spm *sp = NULL;
  int rc;

  *out = NULL;
  rc = tp_spm_load(&sp, file, why, sizeof(why));
  switch (rc) {
    case TP_SPM_OK:
      break;
    case TP_SPM_ENOTFOUND:
      tp_seterr(err, errlen,
                "cannot load tokenizer '%s': file not found (%s); pass a sentencepiece "
                "tokenizer.model file or a directory holding one",
                file, why);
      return TP_ENOTFOUND;
    case TP_SPM_EIO:
      tp_seterr(err, errlen, "cannot read tokenizer '%s': %s (check its permissions)", file, why);
      return TP_EIO;
    case TP_SPM_ENOMEM:
      tp_seterr(err, errlen, "cannot load tokenizer '%s': out of memory", file);
      return TP_ENOMEM;
    default:
      /* EINVAL and EINTERNAL alike: the file was read and sentencepiece
       * could not make a model of it; its own reason says why. */
      tp_seterr(err, errlen,
                "cannot load tokenizer '%s': not a valid sentencepiece model "
                "(sentencepiece says: %s); pass the model's tokenizer.model file",
                file, why);
      return TP_EINVAL;
  }

  tp_tok *t = calloc(1, sizeof(*t));
  char *path = tp_strndup(file, strlen(file));
  if (t == NULL || path == NULL) {
    free(t);
    free(path);
    tp_spm_free(sp);
    tp_seterr(err, errlen, "cannot load tokenizer '%s': out of memory", file);
    return TP_ENOMEM;
  }
  t->ops = &spm_ops;
  t->impl = sp;
  t->path = path;
  if (flags & TP_TOK_FLAG_SPECIAL_TOKENS) {
    int rv = load_special(t, sp, file, err, errlen);
    if (rv) {
      tp_tok_free(t);
      return rv;
    }
  }
  *out = t;
  return 0;
}

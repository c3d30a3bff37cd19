/* The sentencepiece backend: tp_tok_ops over the C shim in
 * third_party/sentencepiece.
 *
 * The shim owns everything C++; this file only maps its codes to TP_E*
 * codes and words the load errors for the user.  Encode and decode errors
 * lose the shim's message, because tp_tok_ops has nowhere to put one; they
 * only happen for out-of-range ids or when memory runs out. */
#include "tokenizer/tp_tok.h"

#include <stdlib.h>
#include <string.h>

#include "tp_spm_shim.h"
#include "util/tp_common.h"

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

int tp_tok_spm_load(tp_tok **out, const char *file, char *err, size_t errlen) {
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
  *out = t;
  return 0;
}

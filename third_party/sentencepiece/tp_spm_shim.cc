/* The extern "C" shim over sentencepiece; see tp_spm_shim.h.
 *
 * Every exported function is a try block: sentencepiece reports most
 * failures through util::Status, but std::vector and std::string can throw
 * std::bad_alloc (and a few library paths throw other std::exception
 * types), and a C++ exception escaping into C code is undefined behaviour. */
#include "tp_spm_shim.h"

#include <sentencepiece_processor.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

/* The C side speaks int32_t; sentencepiece speaks int.  Copying element by
 * element below keeps this correct anyway, but a platform where they differ
 * would deserve a look. */
static_assert(sizeof(int) == sizeof(int32_t), "sentencepiece ids are int");

struct tp_spm {
  sentencepiece::SentencePieceProcessor proc;
};

namespace {

void set_err(char *err, size_t errlen, const char *msg) {
  if (err == nullptr || errlen == 0) return;
  std::snprintf(err, errlen, "%s", msg != nullptr && msg[0] != '\0' ? msg : "unknown error");
  /* sentencepiece's messages often end in a space; the caller embeds
   * them in a sentence of its own. */
  size_t n = std::strlen(err);
  while (n > 0 && (err[n - 1] == ' ' || err[n - 1] == '\n')) err[--n] = '\0';
}

/* Load failures: the codes sentencepiece uses for "cannot open" are kept
 * apart from "opened but not a model", because the user's next step
 * differs (fix the path vs. fetch the right file). */
int load_code(const sentencepiece::util::Status &st) {
  using sentencepiece::util::StatusCode;
  switch (st.code()) {
    case StatusCode::kNotFound: return TP_SPM_ENOTFOUND;
    case StatusCode::kPermissionDenied: return TP_SPM_EIO;
    case StatusCode::kResourceExhausted: return TP_SPM_ENOMEM;
    default: return TP_SPM_EINVAL;
  }
}

int call_code(const sentencepiece::util::Status &st) {
  using sentencepiece::util::StatusCode;
  switch (st.code()) {
    case StatusCode::kResourceExhausted: return TP_SPM_ENOMEM;
    case StatusCode::kInvalidArgument:
    case StatusCode::kOutOfRange: return TP_SPM_EINVAL;
    default: return TP_SPM_EINTERNAL;
  }
}

} /* namespace */

extern "C" int tp_spm_load(tp_spm **out, const char *path, char *err, size_t errlen) {
  *out = nullptr;
  tp_spm *sp = nullptr;
  try {
    sp = new tp_spm();
    const auto st = sp->proc.Load(path);
    if (!st.ok()) {
      set_err(err, errlen, st.error_message());
      delete sp;
      return load_code(st);
    }
    /* Load can succeed on a proto that parses but holds no pieces (an
     * empty file parses as an empty proto in some versions); such a model
     * would encode everything to nothing, so refuse it here. */
    if (sp->proc.GetPieceSize() <= 0) {
      set_err(err, errlen, "the model has no pieces");
      delete sp;
      return TP_SPM_EINVAL;
    }
    *out = sp;
    return TP_SPM_OK;
  } catch (const std::bad_alloc &) {
    delete sp;
    set_err(err, errlen, "out of memory");
    return TP_SPM_ENOMEM;
  } catch (const std::exception &e) {
    delete sp;
    set_err(err, errlen, e.what());
    return TP_SPM_EINTERNAL;
  } catch (...) {
    delete sp;
    set_err(err, errlen, "unknown C++ exception in sentencepiece");
    return TP_SPM_EINTERNAL;
  }
}

extern "C" int tp_spm_encode(const tp_spm *sp, const char *text, size_t len, int32_t **ids,
                             size_t *n, char *err, size_t errlen) {
  *ids = nullptr;
  *n = 0;
  try {
    std::vector<int> v;
    const auto st = sp->proc.Encode(std::string_view(len != 0 ? text : "", len), &v);
    if (!st.ok()) {
      set_err(err, errlen, st.error_message());
      return call_code(st);
    }
    /* At least one element, so that success never hands back NULL. */
    auto *a = static_cast<int32_t *>(std::malloc((v.empty() ? 1 : v.size()) * sizeof(int32_t)));
    if (a == nullptr) {
      set_err(err, errlen, "out of memory");
      return TP_SPM_ENOMEM;
    }
    for (size_t i = 0; i < v.size(); i++) a[i] = static_cast<int32_t>(v[i]);
    *ids = a;
    *n = v.size();
    return TP_SPM_OK;
  } catch (const std::bad_alloc &) {
    set_err(err, errlen, "out of memory");
    return TP_SPM_ENOMEM;
  } catch (const std::exception &e) {
    set_err(err, errlen, e.what());
    return TP_SPM_EINTERNAL;
  } catch (...) {
    set_err(err, errlen, "unknown C++ exception in sentencepiece");
    return TP_SPM_EINTERNAL;
  }
}

extern "C" int tp_spm_decode(const tp_spm *sp, const int32_t *ids, size_t n, char **text,
                             size_t *len, char *err, size_t errlen) {
  *text = nullptr;
  *len = 0;
  try {
    /* Checked here rather than left to sentencepiece: depending on the
     * version, an out-of-range id is a Status, a CHECK failure or an
     * out-of-bounds read, and only the first is survivable. */
    const int pieces = sp->proc.GetPieceSize();
    std::vector<int> v(n);
    for (size_t i = 0; i < n; i++) {
      if (ids[i] < 0 || ids[i] >= pieces) {
        char msg[96];
        std::snprintf(msg, sizeof(msg), "id %ld at position %zu is outside the vocabulary [0, %d)",
                      static_cast<long>(ids[i]), i, pieces);
        set_err(err, errlen, msg);
        return TP_SPM_EINVAL;
      }
      v[i] = static_cast<int>(ids[i]);
    }
    std::string s;
    const auto st = sp->proc.Decode(v, &s);
    if (!st.ok()) {
      set_err(err, errlen, st.error_message());
      return call_code(st);
    }
    auto *p = static_cast<char *>(std::malloc(s.size() + 1));
    if (p == nullptr) {
      set_err(err, errlen, "out of memory");
      return TP_SPM_ENOMEM;
    }
    std::memcpy(p, s.data(), s.size());
    p[s.size()] = '\0';
    *text = p;
    *len = s.size();
    return TP_SPM_OK;
  } catch (const std::bad_alloc &) {
    set_err(err, errlen, "out of memory");
    return TP_SPM_ENOMEM;
  } catch (const std::exception &e) {
    set_err(err, errlen, e.what());
    return TP_SPM_EINTERNAL;
  } catch (...) {
    set_err(err, errlen, "unknown C++ exception in sentencepiece");
    return TP_SPM_EINTERNAL;
  }
}

extern "C" int tp_spm_piece_count(const tp_spm *sp) {
  try {
    return sp->proc.GetPieceSize();
  } catch (...) {
    return 0;
  }
}

extern "C" void tp_spm_special_ids(const tp_spm *sp, int32_t *bos, int32_t *eos) {
  *bos = -1;
  *eos = -1;
  try {
    /* Both are -1 in the model's trainer spec when it has no such piece;
     * an id past the vocabulary would be a broken model, treated alike. */
    const int pieces = sp->proc.GetPieceSize();
    const int b = sp->proc.bos_id(), e = sp->proc.eos_id();
    if (b >= 0 && b < pieces) *bos = b;
    if (e >= 0 && e < pieces) *eos = e;
  } catch (...) {
  }
}

extern "C" void tp_spm_piece(const tp_spm *sp, int32_t id, char *buf, size_t buflen) {
  buf[0] = '\0';
  try {
    if (id < 0 || id >= sp->proc.GetPieceSize()) return;
    const std::string &s = sp->proc.IdToPiece(static_cast<int>(id));
    std::snprintf(buf, buflen, "%s", s.c_str());
  } catch (...) {
    buf[0] = '\0';
  }
}

extern "C" void tp_spm_free(tp_spm *sp) {
  try {
    delete sp;
  } catch (...) {
    /* A destructor that throws has nowhere to report to; swallowing it is
     * the only way to keep the exception out of C frames. */
  }
}

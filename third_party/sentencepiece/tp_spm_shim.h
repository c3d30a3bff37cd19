/* A thin C interface over Debian's libsentencepiece (a C++ library).
 *
 * This is the only place where C++ meets the rest of tokperf.  Every entry
 * point catches every C++ exception and turns it into an error code and a
 * message, so no exception ever unwinds through C frames.  The codes are our
 * own (TP_SPM_*), not TP_E*, so that this file does not depend on the
 * library's headers; lib/tokenizer/tp_tok_spm.c maps them.
 *
 * A loaded model is read-only: tp_spm_encode, tp_spm_decode and
 * tp_spm_piece_count may be called on one handle from several threads at
 * once, because sentencepiece's Encode and Decode are const and keep no
 * per-call state in the processor. */
#ifndef TP_SPM_SHIM_H
#define TP_SPM_SHIM_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tp_spm tp_spm;

enum tp_spm_code {
  TP_SPM_OK = 0,
  TP_SPM_ENOMEM = -1,    /* std::bad_alloc, or sentencepiece ran out */
  TP_SPM_EINVAL = -2,    /* bad input: not a model, an id out of range */
  TP_SPM_ENOTFOUND = -3, /* the model file does not exist */
  TP_SPM_EIO = -4,       /* the model file exists but cannot be read */
  TP_SPM_EINTERNAL = -5  /* any other failure inside sentencepiece */
};

/* Loads the sentencepiece model file at path (borrowed).  On success
 * returns TP_SPM_OK and stores a handle owned by the caller in *out (free
 * it with tp_spm_free).  On failure *out is NULL and err (may be NULL when
 * errlen is 0) receives sentencepiece's own reason, without the path:
 * TP_SPM_ENOTFOUND, TP_SPM_EIO, TP_SPM_EINVAL (the bytes are not a usable
 * model), TP_SPM_ENOMEM or TP_SPM_EINTERNAL. */
int tp_spm_load(tp_spm **out, const char *path, char *err, size_t errlen);

/* Encodes len bytes of UTF-8 text (borrowed; may be NULL when len is 0)
 * into piece ids, without BOS or EOS.  On success *ids is an array owned by
 * the caller (release with free(); never NULL, even for zero ids) holding
 * *n ids.  Returns TP_SPM_OK, TP_SPM_ENOMEM, TP_SPM_EINVAL or
 * TP_SPM_EINTERNAL with a message in err. */
int tp_spm_encode(const tp_spm *sp, const char *text, size_t len, int32_t **ids, size_t *n,
                  char *err, size_t errlen);

/* Decodes n ids (borrowed) back to text.  On success *text is a
 * NUL-terminated string owned by the caller (free()) and *len its length
 * in bytes.  An id outside [0, tp_spm_piece_count) gives TP_SPM_EINVAL;
 * otherwise as tp_spm_encode. */
int tp_spm_decode(const tp_spm *sp, const int32_t *ids, size_t n, char **text, size_t *len,
                  char *err, size_t errlen);

/* Number of pieces in the model's vocabulary (ids run from 0 to this - 1),
 * including unk, BOS and EOS. */
int tp_spm_piece_count(const tp_spm *sp);

/* The model's BOS and EOS piece ids, each -1 when the model has none (a
 * model trained with --bos_id=-1, say). */
void tp_spm_special_ids(const tp_spm *sp, int32_t *bos, int32_t *eos);

/* Copies the piece of id ("<s>") into buf as a NUL-terminated string, cut
 * to buflen - 1 bytes; "" for an id outside the vocabulary or on any
 * failure.  buflen must be above 0. */
void tp_spm_piece(const tp_spm *sp, int32_t id, char *buf, size_t buflen);

/* Releases the model.  NULL is allowed. */
void tp_spm_free(tp_spm *sp);

#ifdef __cplusplus
}
#endif
#endif

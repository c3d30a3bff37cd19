/* Shared internal definitions: error codes, the byte buffer, the clock.
 *
 * Every library call returns 0 or a negative TP_E* code.  The codes are an
 * X-macro table so that the name and the phrase cannot drift apart. */
#ifndef TP_COMMON_H
#define TP_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "tokperf/errors.h"

#define TP_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))
#define TP_MIN(a, b) ((a) < (b) ? (a) : (b))
#define TP_MAX(a, b) ((a) > (b) ? (a) : (b))
#define TP_NS_PER_MS 1000000ULL
#define TP_NS_PER_S 1000000000ULL

/* The one monotonic clock (CLOCK_MONOTONIC through uv_hrtime).  Every
 * timestamp in the client and in the mock server comes from here, so times
 * taken in two threads of one process, or in two processes on one machine,
 * are directly comparable. */
uint64_t tp_now_ns(void);

/* A growable byte buffer.  `data` is always NUL-terminated after a
 * successful append, so text can be used as a C string. */
typedef struct tp_buf {
  uint8_t *data;
  size_t len;
  size_t cap;
} tp_buf;

void tp_buf_init(tp_buf *b);
void tp_buf_fini(tp_buf *b);
void tp_buf_reset(tp_buf *b);
/* Returns 0 or TP_ENOMEM. */
int tp_buf_reserve(tp_buf *b, size_t extra);
int tp_buf_append(tp_buf *b, const void *p, size_t n);
int tp_buf_append_str(tp_buf *b, const char *s);
int tp_buf_printf(tp_buf *b, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Gives up ownership of the storage; the caller frees it with free(). */
char *tp_buf_steal(tp_buf *b, size_t *len);

/* Length of the longest valid UTF-8 prefix of p[0..n) without NUL bytes
 * (shortest forms only, no surrogates, at most U+10FFFF). */
size_t tp_utf8_valid_prefix(const uint8_t *p, size_t n);

/* strdup/strndup that return NULL only when out of memory. */
char *tp_strndup(const char *s, size_t n);

/* Format into err/errlen (may be NULL/0). Always NUL-terminates. */
void tp_seterr(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif

#include "tp_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "config.h"

uint64_t tp_now_ns(void) { return uv_hrtime(); }

const char *tp_version(void) { return TP_VERSION; }

#define TP_ERR_STR(name, str) case name: return str;
const char *tp_strerror(int code) {
  switch (code) {
    case 0: return "success";
    TP_ERRORS(TP_ERR_STR)
  }
  return "unknown error";
}

void tp_buf_init(tp_buf *b) { memset(b, 0, sizeof(*b)); }

void tp_buf_fini(tp_buf *b) {
  free(b->data);
  memset(b, 0, sizeof(*b));
}

void tp_buf_reset(tp_buf *b) {
  b->len = 0;
  if (b->data) b->data[0] = 0;
}

int tp_buf_reserve(tp_buf *b, size_t extra) {
  /* One byte more than asked for keeps room for the terminating NUL. */
  if (extra > SIZE_MAX - b->len - 1) return TP_ENOMEM;
  size_t need = b->len + extra + 1;
  if (need <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 64;
  while (cap < need) cap = cap > SIZE_MAX / 2 ? need : cap * 2;
  uint8_t *p = realloc(b->data, cap);
  if (!p) return TP_ENOMEM;
  b->data = p;
  b->cap = cap;
  return 0;
}

int tp_buf_append(tp_buf *b, const void *p, size_t n) {
  int rv = tp_buf_reserve(b, n);
  if (rv) return rv;
  if (n) memcpy(b->data + b->len, p, n);
  b->len += n;
  b->data[b->len] = 0;
  return 0;
}

int tp_buf_append_str(tp_buf *b, const char *s) {
  return tp_buf_append(b, s, strlen(s));
}

int tp_buf_printf(tp_buf *b, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(NULL, 0, fmt, ap);
  va_end(ap);
  if (n < 0) return TP_EINVAL;
  int rv = tp_buf_reserve(b, (size_t)n);
  if (rv) return rv;
  va_start(ap, fmt);
  vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
  return 0;
}

char *tp_buf_steal(tp_buf *b, size_t *len) {
  if (tp_buf_reserve(b, 0)) return NULL;
  b->data[b->len] = 0; /* a buffer never appended to has fresh storage */
  char *p = (char *)b->data;
  if (len) *len = b->len;
  memset(b, 0, sizeof(*b));
  return p;
}

char *tp_strndup(const char *s, size_t n) {
  char *p = malloc(n + 1);
  if (!p) return NULL;
  memcpy(p, s, n);
  p[n] = 0;
  return p;
}

void tp_seterr(char *err, size_t errlen, const char *fmt, ...) {
  if (!err || !errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
}

#define TP_CLASS_NAME(name, str) case name: return str;
const char *tp_error_class_name(tp_error_class c) {
  switch (c) {
    TP_ERROR_CLASSES(TP_CLASS_NAME)
    case TP_ERRCLASS_COUNT: break;
  }
  return "unknown";
}

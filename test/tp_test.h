/* A small TAP producer for the unit tests (meson runs them with
 * protocol: 'tap').  Each check prints "ok N - what" or "not ok N - what"
 * with the file, line and the values that differed; tp_test_done prints the
 * plan and returns the exit status. */
#ifndef TP_TEST_H
#define TP_TEST_H

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tp_test_n_ = 0;
static int tp_test_failed_ = 0;

/* Time limits in tests scale with TP_TEST_TIMEOUT_MULTIPLIER (sanitizer
 * builds are several times slower). */
static inline double tp_test_time_scale(void) {
  const char *s = getenv("TP_TEST_TIMEOUT_MULTIPLIER");
  double v = s ? atof(s) : 1.0;
  return v > 0 ? v : 1.0;
}

/* A description is one TAP line: a newline in it (a multi-line message
 * quoted in the description) is written as "\n", or the rest would be read
 * as unknown TAP output. */
static inline void tp_test_line_(const char *s) {
  for (; *s; s++) {
    if (*s == '\n') fputs("\\n", stdout);
    else if (*s != '\r') putchar(*s);
  }
}

#define TP_OK_(cond, ...)                                              \
  do {                                                                 \
    int c_ = !!(cond);                                                 \
    char d_[2048];                                                     \
    tp_test_n_++;                                                      \
    if (!c_) tp_test_failed_++;                                        \
    snprintf(d_, sizeof(d_), __VA_ARGS__);                             \
    printf("%s %d - ", c_ ? "ok" : "not ok", tp_test_n_);              \
    tp_test_line_(d_);                                                 \
    printf("\n");                                                      \
    if (!c_) printf("#   at %s:%d\n", __FILE__, __LINE__);             \
  } while (0)

#define CHECK(cond, ...) TP_OK_((cond), __VA_ARGS__)

#define CHECK_INT(got, want, what)                                          \
  do {                                                                      \
    long long g_ = (long long)(got), w_ = (long long)(want);                \
    TP_OK_(g_ == w_, "%s", what);                                           \
    if (g_ != w_) printf("#   got %lld, want %lld\n", g_, w_);              \
  } while (0)

#define CHECK_NEAR(got, want, tol, what)                                    \
  do {                                                                      \
    double g_ = (double)(got), w_ = (double)(want), t_ = (double)(tol);     \
    TP_OK_(fabs(g_ - w_) <= t_, "%s", what);                                \
    if (!(fabs(g_ - w_) <= t_)) printf("#   got %.9g, want %.9g +- %.3g\n", g_, w_, t_); \
  } while (0)

#define CHECK_STR(got, want, what)                                          \
  do {                                                                      \
    const char *g_ = (got), *w_ = (want);                                   \
    int eq_ = (g_ && w_) ? strcmp(g_, w_) == 0 : g_ == w_;                  \
    TP_OK_(eq_, "%s", what);                                                \
    if (!eq_) printf("#   got \"%s\", want \"%s\"\n", g_ ? g_ : "(null)", w_ ? w_ : "(null)"); \
  } while (0)

#define CHECK_MEM(got, glen, want, wlen, what)                              \
  do {                                                                      \
    size_t gl_ = (glen), wl_ = (wlen);                                      \
    int eq_ = gl_ == wl_ && (gl_ == 0 || memcmp((got), (want), gl_) == 0);  \
    TP_OK_(eq_, "%s", what);                                                \
    if (!eq_) printf("#   lengths %zu vs %zu or bytes differ\n", gl_, wl_); \
  } while (0)

static inline int tp_test_done(void) {
  printf("1..%d\n", tp_test_n_);
  if (tp_test_n_ == 0) {
    printf("# no checks ran\n");
    return 1;
  }
  return tp_test_failed_ ? 1 : 0;
}

#endif

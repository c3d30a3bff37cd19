/* Fuzz target: the command-line value parsers (lib/util/tp_parse.c).
 *
 * The input, cut at its first NUL, is given to every parser.  Each result
 * is compared with a second, deliberately naive reading of the same
 * grammar (strtoull, strtold, strtod on pieces matched by hand), so that
 * the parser is checked for what it accepts and what it returns, not only
 * for crashes:
 * - count, duration, double: accepted exactly when the model accepts, with
 *   the same value (durations within rounding of a long double);
 * - lists: accepted exactly when the model accepts, with the same values,
 *   never more than max_values, every value positive;
 * - decimal lists: every value finite and above 0, never more than
 *   max_values, a range's values from its start up, none past its end; every
 *   whole-number list the list parser takes reads the same here;
 * - every refusal writes a non-empty, NUL-terminated message.
 * Any difference abort()s. */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "util/tp_common.h"
#include "util/tp_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static size_t span_digits(const char *s) {
  size_t n = 0;
  while (s[n] >= '0' && s[n] <= '9') n++;
  return n;
}

/* strtoull on exactly the n digits at s; false on overflow. */
static bool digits_u64(const char *s, size_t n, uint64_t *out) {
  char buf[64];
  if (n == 0) return false;
  /* Leading zeros do not change the value; drop them so that a long run
   * of zeros still fits the buffer. */
  while (n > 1 && *s == '0') s++, n--;
  if (n >= sizeof(buf)) return false;
  memcpy(buf, s, n);
  buf[n] = 0;
  errno = 0;
  unsigned long long v = strtoull(buf, NULL, 10);
  if (errno == ERANGE) return false;
  *out = v;
  return true;
}

static void check_err(const char *err, size_t errlen) {
  if (!memchr(err, 0, errlen) || err[0] == 0) abort();
}

/* ---- count ---- */

static void fuzz_count(const char *s) {
  char err[160];
  uint64_t v = 0xdead;
  int rv = tp_parse_count(s, &v, err, sizeof(err));

  size_t nd = span_digits(s);
  uint64_t model = 0, mult = 1;
  const char *suf = s + nd;
  bool ok = nd > 0;
  if (ok && *suf) {
    if (suf[1]) ok = false;
    else if (*suf == 'k' || *suf == 'K') mult = 1000;
    else if (*suf == 'M') mult = 1000000;
    else if (*suf == 'G') mult = 1000000000;
    else ok = false;
  }
  if (ok) ok = digits_u64(s, nd, &model) && model <= UINT64_MAX / mult;
  if (ok != (rv == 0)) abort();
  if (rv == 0 && v != model * mult) abort();
  if (rv != 0) {
    if (rv != TP_EINVAL || v != 0xdead) abort();
    check_err(err, sizeof(err));
  }
}

/* ---- duration ---- */

static const struct {
  const char *name;
  long double ns;
} units[] = {{"ns", 1}, {"us", 1e3L}, {"ms", 1e6L}, {"s", 1e9L}, {"m", 6e10L}, {"h", 3.6e12L}};

static void fuzz_duration(const char *s, uint64_t default_unit) {
  char err[160];
  uint64_t v = 0xdead;
  int rv = tp_parse_duration_ns(s, default_unit, &v, err, sizeof(err));

  size_t nd = span_digits(s), nf = 0;
  const char *p = s + nd;
  bool ok = nd > 0;
  if (ok && *p == '.') {
    nf = span_digits(p + 1);
    ok = nf > 0;
    p += 1 + nf;
  }
  long double unit = (long double)default_unit;
  if (ok && *p) {
    size_t i;
    for (i = 0; i < TP_ARRAY_LEN(units); i++)
      if (strcmp(p, units[i].name) == 0) break;
    ok = i < TP_ARRAY_LEN(units);
    if (ok) unit = units[i].ns;
  }
  if (!ok) {
    if (rv == 0) abort();
  } else {
    long double est = strtold(s, NULL) * unit; /* the numeric prefix */
    /* Near 2^64 the long double estimate cannot decide; leave it. */
    const long double top = 18446744073709551615.0L;
    if (est < top * (1 - 1e-12L)) {
      if (rv != 0) abort();
      long double diff = fabsl((long double)v - est);
      /* The parser truncates below 1 ns; the estimate rounds. */
      if (diff > 2 + est * 1e-15L) abort();
    } else if (est > top * (1 + 1e-12L)) {
      if (rv == 0) abort();
    }
  }
  if (rv != 0) {
    if (rv != TP_EINVAL || v != 0xdead) abort();
    check_err(err, sizeof(err));
  }
  /* With an explicit unit the default does not matter. */
  if (ok && *p) {
    uint64_t v2 = 0xdead;
    int rv2 = tp_parse_duration_ns(s, default_unit * 7 + 1, &v2, err, sizeof(err));
    if (rv2 != rv || (rv == 0 && v2 != v)) abort();
  }
}

/* ---- double ---- */

static void fuzz_double(const char *s) {
  char err[160];
  double v = -1;
  int rv = tp_parse_double(s, &v, err, sizeof(err));

  size_t nd = span_digits(s);
  const char *p = s + nd;
  bool ok = nd > 0;
  if (ok && *p == '.') {
    size_t nf = span_digits(p + 1);
    ok = nf > 0;
    p += 1 + nf;
  }
  if (ok && (*p == 'e' || *p == 'E')) {
    p++;
    if (*p == '+' || *p == '-') p++;
    size_t ne = span_digits(p);
    ok = ne > 0;
    p += ne;
  }
  ok = ok && *p == 0;
  double model = ok ? strtod(s, NULL) : 0;
  if (ok && !isfinite(model)) ok = false;
  if (ok != (rv == 0)) abort();
  if (rv == 0 && (v != model || v < 0 || !isfinite(v))) abort();
  if (rv != 0) {
    if (rv != TP_EINVAL || v != -1) abort();
    check_err(err, sizeof(err));
  }
}

/* ---- list ---- */

/* The model: items split on ',', each N, N:M or N:M:S or N:M:xK; returns
 * the number of values (or -1 when the model refuses) and writes up to
 * max of them. */
static long model_list(const char *s, uint32_t *out, size_t max) {
  size_t n = 0;
  if (!*s) return -1;
  for (;;) {
    uint64_t a, b = 0, step = 1;
    bool mul = false, range = false;
    size_t d = span_digits(s);
    if (!digits_u64(s, d, &a)) return -1;
    s += d;
    if (*s == ':') {
      range = true;
      s++;
      d = span_digits(s);
      if (!digits_u64(s, d, &b)) return -1;
      s += d;
      if (*s == ':') {
        s++;
        if (*s == 'x') mul = true, s++;
        d = span_digits(s);
        if (!digits_u64(s, d, &step)) return -1;
        s += d;
      }
    }
    if (!range) b = a;
    if (a == 0 || a > UINT32_MAX || b == 0 || b > UINT32_MAX || step == 0 ||
        step > UINT32_MAX || (mul && step < 2) || a > b)
      return -1;
    for (uint64_t v = a; v <= b; v = mul ? v * step : v + step) {
      if (n == max) return -1;
      out[n++] = (uint32_t)v;
    }
    if (*s == 0) break;
    if (*s != ',') return -1;
    s++;
  }
  return (long)n;
}

static void fuzz_list(const char *s, size_t max) {
  static uint32_t want[1024];
  char err[200];
  uint32_t *v = NULL;
  size_t n = 12345;
  int rv = tp_parse_uint_list(s, &v, &n, max, err, sizeof(err));
  long m = model_list(s, want, max);
  if ((m >= 0) != (rv == 0)) abort();
  if (rv == 0) {
    if (!v || n == 0 || n > max || (long)n != m) abort();
    for (size_t i = 0; i < n; i++)
      if (v[i] == 0 || v[i] != want[i]) abort();
    free(v);
  } else {
    if (v != NULL || n != 0) abort();
    check_err(err, sizeof(err));
  }
}

static void fuzz_f64_list(const char *s, size_t max) {
  char err[512];
  double *v = NULL;
  size_t n = 12345;
  int rv = tp_parse_f64_list(s, &v, &n, max, err, sizeof(err));
  if (rv == 0) {
    if (!v || n == 0 || n > max) abort();
    for (size_t i = 0; i < n; i++)
      if (!isfinite(v[i]) || !(v[i] > 0)) abort();
    /* A single range "A:B[:S]": its values start at A, never fall (twelve
     * digits may not tell two tiny steps apart) and stay within B. */
    const char *c1 = strchr(s, ':');
    if (c1 && !strchr(s, ',')) {
      double a = strtod(s, NULL), b = strtod(c1 + 1, NULL);
      if (v[0] != a) abort();
      for (size_t i = 0; i < n; i++)
        if (v[i] > b || (i && v[i] < v[i - 1])) abort();
    }
  } else {
    if (v != NULL || n != 0) abort();
    check_err(err, sizeof(err));
  }
  uint32_t *u = NULL;
  size_t nu = 0;
  if (tp_parse_uint_list(s, &u, &nu, max, err, sizeof(err)) == 0) {
    if (rv != 0 || nu != n) abort();
    for (size_t i = 0; i < n; i++)
      if (v[i] != (double)u[i]) abort();
    free(u);
  }
  free(v);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char *s = malloc(size + 1);
  if (!s) return 0;
  memcpy(s, data, size);
  s[size] = 0;
  fuzz_count(s);
  fuzz_duration(s, 1000000);
  fuzz_duration(s, 1);
  fuzz_double(s);
  fuzz_list(s, 1024);
  fuzz_list(s, 7);
  fuzz_f64_list(s, 1024);
  fuzz_f64_list(s, 7);
  free(s);
  return 0;
}

/* Parsers for command-line values.
 *
 * Choices made here, so that every option behaves the same way:
 * - The whole string must be the value: no leading or trailing spaces, no
 *   spaces inside, no sign ("+5" and "-5" are both refused, since every
 *   value here is non-negative and a stray '-' usually means a missing
 *   option argument).
 * - Integers are plain decimal digits; leading zeros are accepted ("08" is
 *   8, never octal).
 * - Counts take k/K, M or G (powers of 1000).  A lower-case 'm' is refused
 *   because it would read as "milli" or "minutes" next to durations.
 *   Fractions are refused in counts ("1.5k"): a count is exact.
 * - Durations are DIGITS[.DIGITS][UNIT]: at least one digit on each side
 *   of a point ("1." and ".5" are refused), no exponent (so "1e999s"
 *   cannot smuggle in an overflow), unit one of ns us ms s m h (case
 *   sensitive: "m" is minutes, "ms" milliseconds).  Sub-nanosecond parts
 *   are truncated, never rounded up, and the result is exact otherwise (no
 *   floating point on the way).  Zero ("0s") is accepted; whether zero
 *   means "none" is the option's business.
 * - Decimal numbers are DIGITS[.DIGITS][e[+-]DIGITS]: the same shape as
 *   durations plus an optional exponent, so "1e-3" works for probabilities;
 *   "inf", "nan" and hex floats are refused, as is any value too large for
 *   a double.
 * - Lists: items separated by single commas, each a positive integer or a
 *   range.  Repeats are kept ("1,1" measures the level twice). */
#include "tp_parse.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_common.h"

#define LIST_EXPECTED \
  "expected a positive integer, a list like 1,4,8 or a range like 4:32:4 or 1:64:x2"
#define COUNT_EXPECTED "expected a non-negative integer with an optional k, M or G suffix, like 10k"
#define DURATION_EXPECTED \
  "expected a number with a unit ns, us, ms, s, m or h, like 500ms, 1.5s or 2m"
#define DOUBLE_EXPECTED "expected a non-negative decimal number like 0.5 or 20"

static bool is_digit(char c) { return c >= '0' && c <= '9'; }

/* Reads decimal digits at *p into *out, advancing *p.  Returns the number
 * of digits read, or -1 on overflow (the digits are still consumed so the
 * caller can tell overflow from junk). */
static int read_u64(const char **p, uint64_t *out) {
  uint64_t v = 0;
  int n = 0;
  bool overflow = false;
  while (is_digit(**p)) {
    unsigned d = (unsigned)(**p - '0');
    if (v > (UINT64_MAX - d) / 10) overflow = true;
    else v = v * 10 + d;
    (*p)++;
    n++;
  }
  *out = v;
  return overflow ? -1 : n;
}

int tp_parse_count(const char *s, uint64_t *out, char *err, size_t errlen) {
  const char *p = s;
  uint64_t v;
  if (!s || !*s) {
    tp_seterr(err, errlen, "empty value (" COUNT_EXPECTED ")");
    return TP_EINVAL;
  }
  int nd = read_u64(&p, &v);
  if (nd == 0) {
    tp_seterr(err, errlen, "%s (" COUNT_EXPECTED ")",
              *s == '-' ? "negative numbers are not allowed" : "not a number");
    return TP_EINVAL;
  }
  if (nd < 0) {
    tp_seterr(err, errlen, "too large (" COUNT_EXPECTED ", at most %llu)",
              (unsigned long long)UINT64_MAX);
    return TP_EINVAL;
  }
  uint64_t mult = 1;
  switch (*p) {
    case 'k': case 'K': mult = 1000ULL; p++; break;
    case 'M': mult = 1000000ULL; p++; break;
    case 'G': mult = 1000000000ULL; p++; break;
    default: break;
  }
  if (*p) {
    tp_seterr(err, errlen, "unexpected \"%s\" after the number (" COUNT_EXPECTED ")", p);
    return TP_EINVAL;
  }
  if (v > UINT64_MAX / mult) {
    tp_seterr(err, errlen, "too large (" COUNT_EXPECTED ", at most %llu)",
              (unsigned long long)UINT64_MAX);
    return TP_EINVAL;
  }
  *out = v * mult;
  return 0;
}

static const struct {
  const char *name;
  uint64_t ns;
} duration_units[] = {
  {"ns", 1ULL},
  {"us", 1000ULL},
  {"ms", 1000000ULL},
  {"s", 1000000000ULL},
  {"m", 60ULL * 1000000000ULL},
  {"h", 3600ULL * 1000000000ULL},
};

int tp_parse_duration_ns(const char *s, uint64_t default_unit_ns, uint64_t *out,
                         char *err, size_t errlen) {
  const char *p = s;
  uint64_t whole;
  if (!s || !*s) {
    tp_seterr(err, errlen, "empty value (" DURATION_EXPECTED ")");
    return TP_EINVAL;
  }
  int nd = read_u64(&p, &whole);
  if (nd == 0) {
    tp_seterr(err, errlen, "%s (" DURATION_EXPECTED ")",
              *s == '-' ? "negative durations are not allowed" : "missing the number");
    return TP_EINVAL;
  }
  const char *frac = NULL;
  size_t frac_len = 0;
  if (*p == '.') {
    p++;
    frac = p;
    while (is_digit(*p)) p++;
    frac_len = (size_t)(p - frac);
    if (frac_len == 0) {
      tp_seterr(err, errlen, "missing digits after the decimal point (" DURATION_EXPECTED ")");
      return TP_EINVAL;
    }
  }
  uint64_t unit = default_unit_ns;
  if (*p) {
    size_t i;
    for (i = 0; i < TP_ARRAY_LEN(duration_units); i++)
      if (strcmp(p, duration_units[i].name) == 0) break;
    if (i == TP_ARRAY_LEN(duration_units)) {
      tp_seterr(err, errlen, "unknown unit \"%s\" (" DURATION_EXPECTED ")", p);
      return TP_EINVAL;
    }
    unit = duration_units[i].ns;
  }
  if (nd < 0 || (unit && whole > UINT64_MAX / unit)) goto too_large;
  uint64_t ns = whole * unit;
  if (frac_len) {
    /* unit x 0.d1d2...dn, floored, evaluated from the last digit back
     * (Horner): acc = floor((d_i * unit + acc) / 10).  Nested floors of
     * this form equal the floor of the exact product, so any number of
     * digits is exact, and acc stays below unit, so nothing overflows as
     * long as 10 x unit fits. */
    if (unit > UINT64_MAX / 10) goto too_large;
    uint64_t acc = 0;
    for (size_t i = frac_len; i-- > 0;)
      acc = ((uint64_t)(frac[i] - '0') * unit + acc) / 10;
    if (ns > UINT64_MAX - acc) goto too_large;
    ns += acc;
  }
  *out = ns;
  return 0;

too_large:
  tp_seterr(err, errlen, "too long (" DURATION_EXPECTED ", at most about 5124095h)");
  return TP_EINVAL;
}

int tp_parse_double(const char *s, double *out, char *err, size_t errlen) {
  const char *p = s;
  if (!s || !*s) {
    tp_seterr(err, errlen, "empty value (" DOUBLE_EXPECTED ")");
    return TP_EINVAL;
  }
  /* The shape is checked here rather than trusted to strtod, which would
   * also take spaces, signs, "inf", "nan" and hex. */
  if (!is_digit(*p)) goto bad;
  while (is_digit(*p)) p++;
  if (*p == '.') {
    p++;
    if (!is_digit(*p)) goto bad;
    while (is_digit(*p)) p++;
  }
  if (*p == 'e' || *p == 'E') {
    p++;
    if (*p == '+' || *p == '-') p++;
    if (!is_digit(*p)) goto bad;
    while (is_digit(*p)) p++;
  }
  if (*p) goto bad;
  errno = 0;
  char *end;
  double v = strtod(s, &end);
  /* A shape that passed above but that strtod stops short on means a
   * locale with another decimal point: say so rather than misread. */
  if (end != p) goto bad;
  if (!isfinite(v)) {
    tp_seterr(err, errlen, "too large (" DOUBLE_EXPECTED ")");
    return TP_EINVAL;
  }
  /* Underflow (ERANGE with a tiny result) is accepted: "1e-400" is as
   * good as zero for every option that takes a number. */
  *out = v;
  return 0;

bad:
  if (*s == '-')
    tp_seterr(err, errlen, "negative numbers are not allowed (" DOUBLE_EXPECTED ")");
  else
    tp_seterr(err, errlen, "not a number (" DOUBLE_EXPECTED ")");
  return TP_EINVAL;
}

/* The growing result of tp_parse_uint_list. */
typedef struct uint_list {
  uint32_t *v;
  size_t n, cap, max;
} uint_list;

static int list_push(uint_list *l, uint64_t v, char *err, size_t errlen) {
  if (l->n >= l->max) {
    tp_seterr(err, errlen, "more than %zu values (" LIST_EXPECTED ", at most %zu values)",
              l->max, l->max);
    return TP_EINVAL;
  }
  if (l->n == l->cap) {
    size_t cap = l->cap ? l->cap * 2 : 8;
    if (cap > l->max) cap = l->max;
    uint32_t *p = realloc(l->v, cap * sizeof(*p));
    if (!p) {
      tp_seterr(err, errlen, "out of memory");
      return TP_ENOMEM;
    }
    l->v = p;
    l->cap = cap;
  }
  l->v[l->n++] = (uint32_t)v;
  return 0;
}

/* Reads one positive integer that fits uint32 at *p.  `what` names it in
 * messages ("value", "range end", ...). */
static int read_positive(const char **p, const char *what, uint64_t *out, char *err,
                         size_t errlen) {
  const char *start = *p;
  int nd = read_u64(p, out);
  if (nd == 0) {
    if (*start == '-')
      tp_seterr(err, errlen, "negative %s (" LIST_EXPECTED ")", what);
    else if (*start == '\0' || *start == ',' || *start == ':')
      tp_seterr(err, errlen, "missing %s (" LIST_EXPECTED ")", what);
    else
      tp_seterr(err, errlen, "%s is not a number (" LIST_EXPECTED ")", what);
    return TP_EINVAL;
  }
  if (nd < 0 || *out > UINT32_MAX) {
    tp_seterr(err, errlen, "%s too large (" LIST_EXPECTED ", each at most %lu)", what,
              (unsigned long)UINT32_MAX);
    return TP_EINVAL;
  }
  if (*out == 0) {
    tp_seterr(err, errlen, "%s is 0 (" LIST_EXPECTED ")", what);
    return TP_EINVAL;
  }
  return 0;
}

/* Parses one comma-separated item at *p and appends its values. */
static int parse_item(const char **p, uint_list *l, char *err, size_t errlen) {
  uint64_t start, end, step = 1;
  bool multiply = false;
  int rv = read_positive(p, "value", &start, err, errlen);
  if (rv) return rv;
  if (**p != ':') return list_push(l, start, err, errlen);
  (*p)++;
  if ((rv = read_positive(p, "range end", &end, err, errlen))) return rv;
  if (**p == ':') {
    (*p)++;
    if (**p == 'x') {
      (*p)++;
      multiply = true;
      if ((rv = read_positive(p, "range multiplier", &step, err, errlen))) return rv;
      if (step < 2) {
        tp_seterr(err, errlen, "range multiplier x%llu would never grow (" LIST_EXPECTED
                  ", with a multiplier of at least x2)", (unsigned long long)step);
        return TP_EINVAL;
      }
    } else if ((rv = read_positive(p, "range step", &step, err, errlen))) {
      return rv;
    }
  }
  if (start > end) {
    tp_seterr(err, errlen, "range %llu:%llu starts above its end (" LIST_EXPECTED ")",
              (unsigned long long)start, (unsigned long long)end);
    return TP_EINVAL;
  }
  /* start, end and step are at most UINT32_MAX, so v + step and v * step
   * cannot overflow 64 bits, and list_push bounds the work by max_values
   * before a huge range is walked. */
  for (uint64_t v = start; v <= end; v = multiply ? v * step : v + step)
    if ((rv = list_push(l, v, err, errlen))) return rv;
  return 0;
}

int tp_parse_uint_list(const char *s, uint32_t **vals, size_t *n, size_t max_values,
                       char *err, size_t errlen) {
  uint_list l = {NULL, 0, 0, max_values};
  const char *p = s;
  int rv = 0;
  *vals = NULL;
  *n = 0;
  if (!s || !*s) {
    tp_seterr(err, errlen, "empty value (" LIST_EXPECTED ")");
    return TP_EINVAL;
  }
  for (;;) {
    if ((rv = parse_item(&p, &l, err, errlen))) goto fail;
    if (*p == '\0') break;
    if (*p != ',') {
      tp_seterr(err, errlen, "unexpected \"%s\" (" LIST_EXPECTED ")", p);
      rv = TP_EINVAL;
      goto fail;
    }
    p++;
  }
  *vals = l.v;
  *n = l.n;
  return 0;

fail:
  free(l.v);
  return rv;
}

#define F64_LIST_EXPECTED                                                                         \
  "expected a positive number, a list like 10,50,100 or 0.5,2.5, or a range START:END:STEP like " \
  "1.0:4.0:0.1 or 1:64:x2"

/* Reads one decimal number at *p (the shape tp_parse_double takes), up to
 * the next ',' or ':'.  `what` names it in messages; the text read is
 * quoted so that a long list says which of its numbers is wrong. */
static int read_positive_f64(const char **p, const char *what, double *out, char *err, size_t errlen) {
  const char *s = *p, *q = s;
  size_t len = strcspn(s, ",:");
  if (len == 0) {
    tp_seterr(err, errlen, "missing %s (" F64_LIST_EXPECTED ")", what);
    return TP_EINVAL;
  }
  if (*q == '-') {
    tp_seterr(err, errlen, "%s %.*s is negative (" F64_LIST_EXPECTED ")", what, (int)TP_MIN(len, 40), s);
    return TP_EINVAL;
  }
  if (!is_digit(*q)) goto bad;
  while (is_digit(*q)) q++;
  if (*q == '.') {
    q++;
    if (!is_digit(*q)) goto bad;
    while (is_digit(*q)) q++;
  }
  if (*q == 'e' || *q == 'E') {
    q++;
    if (*q == '+' || *q == '-') q++;
    if (!is_digit(*q)) goto bad;
    while (is_digit(*q)) q++;
  }
  if (q != s + len) goto bad;
  char small[64], *buf = len < sizeof(small) ? small : malloc(len + 1);
  if (!buf) {
    tp_seterr(err, errlen, "out of memory");
    return TP_ENOMEM;
  }
  memcpy(buf, s, len);
  buf[len] = 0;
  char *end;
  double v = strtod(buf, &end);
  bool whole = end == buf + len;
  if (buf != small) free(buf);
  if (!whole) goto bad;
  if (!isfinite(v)) {
    tp_seterr(err, errlen, "%s %.*s is too large (" F64_LIST_EXPECTED ")", what, (int)TP_MIN(len, 40), s);
    return TP_EINVAL;
  }
  if (!(v > 0)) {
    tp_seterr(err, errlen, "%s %.*s is not above 0 (" F64_LIST_EXPECTED ")", what, (int)TP_MIN(len, 40), s);
    return TP_EINVAL;
  }
  *out = v;
  *p = s + len;
  return 0;
bad:
  tp_seterr(err, errlen, "%s \"%.*s\" is not a number (" F64_LIST_EXPECTED ")", what, (int)TP_MIN(len, 40),
            s);
  return TP_EINVAL;
}

/* start + k * step, computed from k rather than summed, so 1.0:4.0:0.1
 * neither drifts (1 + 0.1 + 0.1 + ... is 3.9999999999999982 at the end)
 * nor prints as 1.3000000000000003: twelve significant digits are kept,
 * far finer than any rate or step a person writes. */
static double tidy(double v) {
  char b[40];
  snprintf(b, sizeof(b), "%.12g", v);
  return strtod(b, NULL);
}

static int f64_push(double *v, size_t *n, size_t max, double x, char *err, size_t errlen) {
  if (*n >= max) {
    tp_seterr(err, errlen, "more than %zu values (" F64_LIST_EXPECTED ", at most %zu values)", max, max);
    return TP_EINVAL;
  }
  v[(*n)++] = x;
  return 0;
}

static int parse_f64_item(const char **p, double *v, size_t *n, size_t max, char *err, size_t errlen) {
  double start, end, step = 1;
  bool multiply = false;
  int rv = read_positive_f64(p, "value", &start, err, errlen);
  if (rv) return rv;
  if (**p != ':') return f64_push(v, n, max, start, err, errlen);
  (*p)++;
  if (**p == '0' && strspn(*p, "0.") == strcspn(*p, ",:")) {
    /* perf_analyzer's END 0 rises until --latency-threshold is met. */
    tp_seterr(
        err, errlen,
        "range end 0: an open range that rises until a latency bound is met is tokperf's "
        "--search request-rate with --slo (or --binary-search with --latency-threshold) (" F64_LIST_EXPECTED
        ")");
    return TP_EINVAL;
  }
  if ((rv = read_positive_f64(p, "range end", &end, err, errlen))) return rv;
  if (**p == ':') {
    (*p)++;
    if (**p == 'x') {
      (*p)++;
      multiply = true;
      if ((rv = read_positive_f64(p, "range multiplier", &step, err, errlen))) return rv;
      if (!(step > 1)) {
        tp_seterr(err, errlen,
                  "range multiplier x%g would never grow (" F64_LIST_EXPECTED ", with a multiplier above 1)",
                  step);
        return TP_EINVAL;
      }
    } else if (**p == '0' && strspn(*p, "0.") == strcspn(*p, ",:")) {
      tp_seterr(err, errlen, "range step 0 never reaches the end %g (" F64_LIST_EXPECTED ")", end);
      return TP_EINVAL;
    } else if ((rv = read_positive_f64(p, "range step", &step, err, errlen))) {
      return rv;
    }
  }
  if (start > end) {
    tp_seterr(err, errlen, "range %g:%g starts above its end (" F64_LIST_EXPECTED ")", start, end);
    return TP_EINVAL;
  }
  /* The steps that land at or below END, counted before any is stored (a
   * step too small for the list is refused, not materialised).  A last
   * step that misses END by rounding alone (1e-9 of a step) counts. */
  double count = multiply ? floor(log(end / start) / log(step) + 1e-9) : floor((end - start) / step + 1e-9);
  if (!(count >= 0) || count + 1 > (double)(max - TP_MIN(*n, max))) {
    tp_seterr(err, errlen, "more than %zu values (" F64_LIST_EXPECTED ", at most %zu values)", max, max);
    return TP_EINVAL;
  }
  for (size_t k = 0; k <= (size_t)count; k++) {
    double x = k == 0 ? start : tidy(multiply ? start * pow(step, (double)k) : start + (double)k * step);
    if (x > end) x = end; /* the last step, a rounding error above END */
    if ((rv = f64_push(v, n, max, x, err, errlen))) return rv;
  }
  return 0;
}

int tp_parse_f64_list(const char *s, double **vals, size_t *n, size_t max_values, char *err, size_t errlen) {
  *vals = NULL;
  *n = 0;
  if (!s || !*s) {
    tp_seterr(err, errlen, "empty value (" F64_LIST_EXPECTED ")");
    return TP_EINVAL;
  }
  if (max_values == 0) {
    tp_seterr(err, errlen, "no values allowed (" F64_LIST_EXPECTED ")");
    return TP_EINVAL;
  }
  double *v = malloc(max_values * sizeof(*v));
  if (!v) {
    tp_seterr(err, errlen, "out of memory");
    return TP_ENOMEM;
  }
  size_t nv = 0;
  const char *p = s;
  int rv;
  for (;;) {
    if ((rv = parse_f64_item(&p, v, &nv, max_values, err, errlen))) goto fail;
    if (*p == '\0') break;
    if (*p != ',') {
      tp_seterr(err, errlen, "unexpected \"%.40s\" (" F64_LIST_EXPECTED ")", p);
      rv = TP_EINVAL;
      goto fail;
    }
    p++;
  }
  *vals = v;
  *n = nv;
  return 0;
fail:
  free(v);
  return rv;
}

#define SIZE_EXPECTED "expected a size in bytes such as 4096, 64k, 16M or 1G (k, M, G are powers of 1024)"

int tp_parse_size(const char *s, uint64_t *out, char *err, size_t errlen) {
  const char *p = s;
  uint64_t v;
  if (!s || !*s) {
    tp_seterr(err, errlen, "empty value (" SIZE_EXPECTED ")");
    return TP_EINVAL;
  }
  int nd = read_u64(&p, &v);
  if (nd == 0) {
    tp_seterr(err, errlen, "%s (" SIZE_EXPECTED ")", *s == '-' ? "negative sizes are not allowed" : "not a number");
    return TP_EINVAL;
  }
  uint64_t mult = 1;
  switch (*p) {
    case 'k': case 'K': mult = 1ULL << 10; p++; break;
    case 'M': mult = 1ULL << 20; p++; break;
    case 'G': mult = 1ULL << 30; p++; break;
    default: break;
  }
  if (*p == 'B' || (*p == 'i' && p[1] == 'B' && mult > 1)) p += *p == 'i' ? 2 : 1;
  if (*p) {
    tp_seterr(err, errlen, "unexpected \"%s\" after the number (" SIZE_EXPECTED ")", p);
    return TP_EINVAL;
  }
  if (nd < 0 || v > UINT64_MAX / mult) {
    tp_seterr(err, errlen, "too large (" SIZE_EXPECTED ")");
    return TP_EINVAL;
  }
  *out = v * mult;
  return 0;
}

int tp_parse_fraction(const char *s, double *out, char *err, size_t errlen) {
  char buf[64];
  size_t l = s ? strlen(s) : 0;
  if (l == 0 || l >= sizeof(buf)) {
    tp_seterr(err, errlen, "expected a fraction from 0 to 1 (0.05) or a percentage (5%%)");
    return TP_EINVAL;
  }
  memcpy(buf, s, l + 1);
  bool pct = buf[l - 1] == '%';
  if (pct) buf[l - 1] = 0;
  double v;
  if (tp_parse_double(buf, &v, NULL, 0) || (pct ? v > 100 : v > 1)) {
    tp_seterr(err, errlen, "expected a fraction from 0 to 1 (0.05) or a percentage (5%%)");
    return TP_EINVAL;
  }
  *out = pct ? v / 100 : v;
  return 0;
}

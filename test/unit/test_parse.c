/* Tests for the command-line value parsers (lib/util/tp_parse.c). */
#include <inttypes.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tp_test.h"
#include "util/tp_common.h"
#include "util/tp_parse.h"

static char err[256];

/* ---- counts ------------------------------------------------------------ */

static void test_count(void) {
  static const struct {
    const char *s;
    uint64_t want;
  } good[] = {
    {"0", 0}, {"1", 1}, {"08", 8}, {"10k", 10000}, {"10K", 10000}, {"4M", 4000000},
    {"2G", 2000000000ULL}, {"18446744073709551615", UINT64_MAX},
    {"18446744073709551k", 18446744073709551000ULL}, {"18446744073G", 18446744073000000000ULL},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(good); i++) {
    uint64_t v = 12345;
    int rv = tp_parse_count(good[i].s, &v, err, sizeof(err));
    CHECK(rv == 0 && v == good[i].want, "count \"%s\" = %" PRIu64 " (got rv %d, %" PRIu64 ")",
          good[i].s, good[i].want, rv, v);
  }
  static const char *const bad[] = {
    "", "-1", "+1", "10x", "k", " 1", "1 ", "1 k", "1.5k", "10m", "1kk", "0x10",
    "18446744073709551616", "18446744073709552k", "18446744074G", "99999999999999999999999",
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(bad); i++) {
    uint64_t v = 777;
    err[0] = 0;
    int rv = tp_parse_count(bad[i], &v, err, sizeof(err));
    CHECK(rv == TP_EINVAL && v == 777 && strstr(err, "expected"),
          "count \"%s\" refused, output untouched, err says what is expected (%s)", bad[i], err);
  }
  tp_parse_count("-5", &(uint64_t){0}, err, sizeof(err));
  CHECK(strstr(err, "k, M or G") && strstr(err, "negative"),
        "count error names the problem and lists the suffixes: %s", err);
}

/* ---- durations --------------------------------------------------------- */

static void test_duration(void) {
  static const struct {
    const char *s;
    uint64_t unit;
    uint64_t want;
  } good[] = {
    {"500ms", 1, 500000000ULL},
    {"1.5s", 1, 1500000000ULL},
    {"2m", 1, 120000000000ULL},
    {"1h", 1, 3600000000000ULL},
    {"250us", 1, 250000ULL},
    {"100ns", 1, 100ULL},
    {"0s", 1, 0},
    {"0", 1000000, 0},
    {"20", 1000000, 20000000ULL},  /* bare number: default unit (ms) */
    {"20", 1000000000, 20000000000ULL},
    {"1.25", 1000000, 1250000ULL},
    {"0.5m", 1, 30000000000ULL},
    {"1.0000000001s", 1, 1000000000ULL}, /* sub-ns part truncated */
    {"1.9ns", 1, 1ULL},
    {"0.000000001s", 1, 1ULL},
    {"0.0000000001h", 1, 360ULL}, /* the 10th decimal of an hour is 360 ns */
    {"1.00000000000000000000000000001h", 1, 3600000000000ULL},
    {"0.99999999999999999999999h", 1, 3599999999999ULL},
    {"007s", 1, 7000000000ULL},
    {"18446744073709551615ns", 1, UINT64_MAX},
    {"18446744073.709551615s", 1, UINT64_MAX},
    {"5124095h", 1, 5124095ULL * 3600000000000ULL},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(good); i++) {
    uint64_t v = 12345;
    int rv = tp_parse_duration_ns(good[i].s, good[i].unit, &v, err, sizeof(err));
    CHECK(rv == 0 && v == good[i].want,
          "duration \"%s\" (unit %" PRIu64 ") = %" PRIu64 " ns (got rv %d, %" PRIu64 ")",
          good[i].s, good[i].unit, good[i].want, rv, v);
  }
  static const char *const bad[] = {
    "", "-1s", "s", "ms", "1e999s", "1e3", "1 s", " 1s", "1s ", "1.s", ".5s", "1..5s",
    "1.5.s", "10x", "1S", "1sec", "1ms5", "1,5s", "+1s", "inf", "nan",
    "18446744073709551616ns", "18446744073.709551616s", "5124096h", "99999999999999999999999h",
    "1 2s", "1\ts",
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(bad); i++) {
    uint64_t v = 777;
    err[0] = 0;
    int rv = tp_parse_duration_ns(bad[i], 1000000, &v, err, sizeof(err));
    CHECK(rv == TP_EINVAL && v == 777 && strstr(err, "expected"),
          "duration \"%s\" refused (%s)", bad[i], err);
  }
  tp_parse_duration_ns("-1s", 1, &(uint64_t){0}, err, sizeof(err));
  CHECK(strstr(err, "negative") != NULL, "negative duration named as such: %s", err);
  tp_parse_duration_ns("5x", 1, &(uint64_t){0}, err, sizeof(err));
  CHECK(strstr(err, "ms") && strstr(err, "\"x\""), "unknown unit quoted, units listed: %s", err);
}

/* ---- decimal numbers --------------------------------------------------- */

static void test_double(void) {
  static const struct {
    const char *s;
    double want;
  } good[] = {
    {"0", 0}, {"0.5", 0.5}, {"20", 20}, {"1e-3", 1e-3}, {"2.5E2", 250}, {"1e+2", 100},
    {"007.25", 7.25}, {"1e-400", 0}, {"1.7976931348623157e308", 1.7976931348623157e308},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(good); i++) {
    double v = -1;
    int rv = tp_parse_double(good[i].s, &v, err, sizeof(err));
    CHECK(rv == 0 && v == good[i].want, "double \"%s\" = %g (got rv %d, %g)", good[i].s,
          good[i].want, rv, v);
  }
  static const char *const bad[] = {
    "", "-1", "-0", "+1", ".5", "1.", "1e", "1e+", "abc", "inf", "nan", "infinity", "0x10",
    "1e999", " 1", "1 ", "1,5", "1.5x", "1e5.5",
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(bad); i++) {
    double v = 42;
    err[0] = 0;
    int rv = tp_parse_double(bad[i], &v, err, sizeof(err));
    CHECK(rv == TP_EINVAL && v == 42 && strstr(err, "expected"), "double \"%s\" refused (%s)",
          bad[i], err);
  }
}

/* ---- lists ------------------------------------------------------------- */

static void check_list(const char *s, size_t max, const uint32_t *want, size_t nwant) {
  uint32_t *v = (uint32_t *)(uintptr_t)1;
  size_t n = 999;
  err[0] = 0;
  int rv = tp_parse_uint_list(s, &v, &n, max, err, sizeof(err));
  CHECK(rv == 0, "list \"%s\" accepted (%s)", s, err);
  CHECK_MEM(v, n * sizeof(uint32_t), want, nwant * sizeof(uint32_t), s);
  if (rv == 0) free(v);
}

static void test_list(void) {
  check_list("1", 16, (uint32_t[]){1}, 1);
  check_list("1,4,8", 16, (uint32_t[]){1, 4, 8}, 3);
  check_list("4:32:4", 16, (uint32_t[]){4, 8, 12, 16, 20, 24, 28, 32}, 8);
  check_list("1:64:x2", 16, (uint32_t[]){1, 2, 4, 8, 16, 32, 64}, 7);
  check_list("3:64:x2", 16, (uint32_t[]){3, 6, 12, 24, 48}, 5);     /* END not landed on */
  check_list("1:10:4", 16, (uint32_t[]){1, 5, 9}, 3);
  check_list("1:4", 16, (uint32_t[]){1, 2, 3, 4}, 4);               /* default step 1 */
  check_list("5:5", 16, (uint32_t[]){5}, 1);
  check_list("5:5:x3", 16, (uint32_t[]){5}, 1);
  check_list("1,2,8:32:8", 16, (uint32_t[]){1, 2, 8, 16, 24, 32}, 6);
  check_list("1:2,1:2", 16, (uint32_t[]){1, 2, 1, 2}, 4);           /* repeats are kept */
  check_list("1:4:x2,16:64:x4", 16, (uint32_t[]){1, 2, 4, 16, 64}, 5);
  check_list("4294967295", 16, (uint32_t[]){UINT32_MAX}, 1);
  /* Stepping past UINT32_MAX must end the range, not wrap around. */
  check_list("4294967290:4294967295:4", 16, (uint32_t[]){4294967290u, 4294967294u}, 2);
  check_list("2147483648:4294967295:x2", 16, (uint32_t[]){2147483648u}, 1);
  check_list("1:3", 3, (uint32_t[]){1, 2, 3}, 3);                   /* exactly max_values */
  check_list("0010", 3, (uint32_t[]){10}, 1);

  /* A big range is refused by counting, before it is materialised. */
  uint32_t many[1000];
  for (uint32_t i = 0; i < 1000; i++) many[i] = i + 1;
  check_list("1:1000", 1000, many, 1000);

  static const struct {
    const char *s;
    const char *why; /* a word the message must contain */
  } bad[] = {
    {"", "empty"}, {"0", "0"}, {"1,0", "0"}, {"-1", "negative"}, {"1,-4", "negative"},
    {"10x", "unexpected"}, {"1,,2", "missing"}, {"1,", "missing"}, {",1", "missing"},
    {"32:4", "above"}, {"4:32:0", "0"}, {"1:64:x1", "x1"}, {"1:64:x0", "0"},
    {"1:64:x", "missing"}, {"1:", "missing"}, {":4", "missing"}, {"1:4:", "missing"},
    {"1:4:2:1", "unexpected"}, {"4294967296", "large"}, {"1:4294967296", "large"},
    {"99999999999999999999999", "large"}, {"1 ,2", "unexpected"}, {" 1", "number"},
    {"1:17", "at most 16"}, {"1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "at most 16"},
    {"1:4294967295", "at most 16"}, {"1:4294967295:x2", "at most 16"}, {"a", "number"},
    {"1:4:-1", "negative"}, {"1.5", "unexpected"},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(bad); i++) {
    uint32_t *v = (uint32_t *)(uintptr_t)1;
    size_t n = 999;
    err[0] = 0;
    int rv = tp_parse_uint_list(bad[i].s, &v, &n, 16, err, sizeof(err));
    CHECK(rv == TP_EINVAL && v == NULL && n == 0, "list \"%s\" refused, outputs cleared",
          bad[i].s);
    CHECK(strstr(err, bad[i].why) && strstr(err, "expected a positive integer"),
          "list \"%s\" error mentions \"%s\" and what is expected: %s", bad[i].s, bad[i].why,
          err);
  }
  uint32_t *v;
  size_t n;
  CHECK(tp_parse_uint_list("1", &v, &n, 0, err, sizeof(err)) == TP_EINVAL,
        "max_values 0 refuses any value");
  /* A short err buffer is still NUL-terminated and not overrun. */
  char small[8];
  memset(small, 'Z', sizeof(small));
  CHECK(tp_parse_uint_list("32:4", &v, &n, 16, small, 5) == TP_EINVAL && small[4] == 0 &&
            small[5] == 'Z',
        "short err buffer truncated safely");
  CHECK(tp_parse_uint_list("32:4", &v, &n, 16, NULL, 0) == TP_EINVAL, "NULL err accepted");
}

/* ---- decimal lists (request rates) ------------------------------------- */

static void check_f64_list(const char *s, size_t max, const double *want, size_t nwant) {
  char e[512] = "";
  double *v = NULL;
  size_t n = 999;
  int rv = tp_parse_f64_list(s, &v, &n, max, e, sizeof(e));
  CHECK(rv == 0 && n == nwant, "decimal list \"%s\": %zu values (%s)", s, rv ? 0 : n, e);
  bool same = rv == 0 && n == nwant;
  for (size_t i = 0; same && i < n; i++) same = v[i] == want[i];
  CHECK(same, "decimal list \"%s\": the values exactly, no drift", s);
  if (rv == 0) free(v);
}

static void test_f64_list(void) {
  check_f64_list("10,50,100", 16, (double[]){10, 50, 100}, 3);
  check_f64_list("0.5,2.5", 16, (double[]){0.5, 2.5}, 2);
  check_f64_list("100:1000:300", 16, (double[]){100, 400, 700, 1000}, 4);
  check_f64_list("1:4", 16, (double[]){1, 2, 3, 4}, 4); /* step 1 by default, as perf_analyzer's */
  check_f64_list("1.5:4", 16, (double[]){1.5, 2.5, 3.5}, 3);
  /* perf_analyzer's form.  Summing 0.1 thirty times ends at
   * 3.9999999999999982 and 0.1 + 0.1 + 0.1 at 0.30000000000000004 (a lost
   * last step): each value is START + k * STEP to twelve digits. */
  double tenth[31];
  for (int k = 0; k <= 30; k++) tenth[k] = (10.0 + k) / 10.0;
  check_f64_list("1.0:4.0:0.1", 64, tenth, 31);
  check_f64_list("0.1:0.3:0.1", 16, (double[]){0.1, 0.2, 0.3}, 3);
  check_f64_list("0.7:1.0:0.1", 16, (double[]){0.7, 0.8, 0.9, 1.0}, 4);
  check_f64_list("0.5:8:x2", 16, (double[]){0.5, 1, 2, 4, 8}, 5);
  check_f64_list("1:10:x1.5", 16, (double[]){1, 1.5, 2.25, 3.375, 5.0625, 7.59375}, 6);
  check_f64_list("1,0.5,2:3:0.25", 16, (double[]){1, 0.5, 2, 2.25, 2.5, 2.75, 3}, 7);
  check_f64_list("5:5", 16, (double[]){5}, 1);
  check_f64_list("1e3,2.5e-1", 16, (double[]){1000, 0.25}, 2);
  check_f64_list("1:3", 3, (double[]){1, 2, 3}, 3); /* exactly max_values */

  static const struct {
    const char *s;
    const char *why; /* the words the message must hold */
  } bad[] = {
    {"", "empty value"}, {"-2", "value -2 is negative"}, {"1,-0.5", "value -0.5 is negative"},
    {"1:4:-0.1", "range step -0.1 is negative"}, {"-1:4", "value -1 is negative"},
    {"1:-4", "range end -4 is negative"}, {"1:4:0", "range step 0 never reaches the end 4"},
    {"1:4:0.0", "range step 0 never reaches the end 4"}, {"0", "value 0 is not above 0"},
    {"1:0", "range end 0: an open range"}, {"4:1", "range 4:1 starts above its end"},
    {"1:4:x1", "multiplier x1 would never grow"}, {"1:4:x0.5", "multiplier x0.5 would never grow"},
    {"abc", "value \"abc\" is not a number"}, {"1.", "not a number"}, {".5", "not a number"},
    {"inf", "not a number"}, {"nan", "not a number"}, {"0x10", "not a number"}, {" 1", "not a number"},
    {"1,,2", "missing value"}, {"1:", "missing range end"}, {"1:4:", "missing range step"},
    {"1:4:2:1", "unexpected \":1\""}, {"1e999", "too large"}, {"1:2:0.0001", "more than 16 values"},
    {"1:17", "more than 16 values"}, {"1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17", "more than 16 values"},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(bad); i++) {
    char e[512] = "";
    double *v = (double *)(uintptr_t)1;
    size_t n = 999;
    int rv = tp_parse_f64_list(bad[i].s, &v, &n, 16, e, sizeof(e));
    CHECK(rv == TP_EINVAL && v == NULL && n == 0, "decimal list \"%s\" refused, outputs cleared", bad[i].s);
    CHECK(strstr(e, bad[i].why) && strstr(e, "expected a positive number"),
          "decimal list \"%s\": \"%s\", and what is expected: %s", bad[i].s, bad[i].why, e);
  }
  /* Every whole-number list reads the same as a decimal list. */
  static const char *const ints[] = {"1,4,8", "4:32:4", "1:64:x2", "3:64:x2", "1:10:4", "1,2,8:32:8"};
  for (size_t i = 0; i < TP_ARRAY_LEN(ints); i++) {
    uint32_t *u;
    double *d;
    size_t nu, nd;
    bool same = tp_parse_uint_list(ints[i], &u, &nu, 64, err, sizeof(err)) == 0 &&
                tp_parse_f64_list(ints[i], &d, &nd, 64, err, sizeof(err)) == 0 && nu == nd;
    for (size_t k = 0; same && k < nu; k++) same = d[k] == u[k];
    free(u);
    free(d);
    CHECK(same, "\"%s\" reads the same as whole numbers and as decimals", ints[i]);
  }
}

/* ---- inputs that end right before an unmapped page -------------------- */

/* Copies s (with its NUL) so that the NUL is the last readable byte: any
 * read past the terminator faults. */
static char *guard_place(char *page_end, const char *s) {
  size_t n = strlen(s) + 1;
  char *p = page_end - n;
  memcpy(p, s, n);
  return p;
}

static void test_guard_page(void) {
  long pg = sysconf(_SC_PAGESIZE);
  char *mem = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                   -1, 0);
  if (mem == MAP_FAILED || mprotect(mem + pg, (size_t)pg, PROT_NONE) != 0) {
    CHECK(0, "guard page set up");
    return;
  }
  char *end = mem + pg;
  static const char *const inputs[] = {
    "", "1", "10k", "1.5s", "500ms", "1e", "1.", "1:64:x2", "1:", "1,", "4:32:4", "m", "0.5",
    "1e-3", "1:64:x", "18446744073709551615", "1.00000000000000001h",
  };
  int faults = 0;
  for (size_t i = 0; i < TP_ARRAY_LEN(inputs); i++) {
    char *s = guard_place(end, inputs[i]);
    uint64_t u;
    double d;
    uint32_t *v;
    size_t n;
    /* Reaching the end of this loop without SIGSEGV is the check; the
     * results are compared with the same parse of an ordinary copy. */
    int a = tp_parse_count(s, &u, err, sizeof(err));
    int b = tp_parse_duration_ns(s, 1000000, &u, err, sizeof(err));
    int c = tp_parse_double(s, &d, err, sizeof(err));
    int e = tp_parse_uint_list(s, &v, &n, 64, err, sizeof(err));
    if (e == 0) free(v);
    if (a != tp_parse_count(inputs[i], &u, err, sizeof(err)) ||
        b != tp_parse_duration_ns(inputs[i], 1000000, &u, err, sizeof(err)) ||
        c != tp_parse_double(inputs[i], &d, err, sizeof(err)))
      faults++;
    if (tp_parse_uint_list(inputs[i], &v, &n, 64, err, sizeof(err)) == 0) free(v);
  }
  CHECK(faults == 0, "guard page: %zu inputs parse the same at a page end",
        TP_ARRAY_LEN(inputs));
  munmap(mem, (size_t)pg * 2);
}

int main(void) {
  test_count();
  test_duration();
  test_double();
  test_list();
  test_f64_list();
  test_guard_page();
  return tp_test_done();
}

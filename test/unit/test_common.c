/* util/tp_common: the byte buffer, error strings and the UTF-8 prefix check
 * every layer builds on. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tp_test.h"
#include "util/tp_common.h"

static void test_buf(void) {
  tp_buf b;
  tp_buf_init(&b);
  CHECK(b.data == NULL && b.len == 0, "a new buffer is empty and holds nothing");
  CHECK_INT(tp_buf_append(&b, "abc", 3), 0, "append");
  CHECK_INT(b.len, 3, "three bytes");
  CHECK_STR((const char *)b.data, "abc", "the bytes end in a NUL the length leaves out");
  CHECK_INT(tp_buf_append_str(&b, "def"), 0, "append a string");
  CHECK_INT(tp_buf_printf(&b, "-%d-%s", 42, "x"), 0, "printf");
  CHECK_STR((const char *)b.data, "abcdef-42-x", "appends in order");
  /* Growth across many doublings keeps every byte. */
  for (int i = 0; i < 10000; i++) tp_buf_append(&b, "0123456789", 10);
  CHECK_INT(b.len, 11 + 100000, "100,000 more bytes");
  CHECK(b.cap > b.len && b.data[b.len] == 0, "room for the NUL after growing");
  CHECK_MEM(b.data + 11 + 99990, 10, "0123456789", 10, "the last piece is intact");
  tp_buf_reset(&b);
  CHECK(b.len == 0 && b.data && b.data[0] == 0, "reset empties, keeps the storage");
  CHECK_INT(tp_buf_append(&b, NULL, 0), 0, "appending nothing is fine");
  CHECK_INT(tp_buf_reserve(&b, SIZE_MAX), TP_ENOMEM, "a reservation that would overflow is refused");
  size_t len = 99;
  tp_buf_append_str(&b, "kept");
  char *p = tp_buf_steal(&b, &len);
  CHECK(p && len == 4 && strcmp(p, "kept") == 0, "steal hands over the bytes and their length");
  CHECK(b.data == NULL && b.len == 0 && b.cap == 0, "and leaves the buffer empty");
  free(p);
  p = tp_buf_steal(&b, &len);
  CHECK(p && len == 0 && p[0] == 0, "stealing an empty buffer gives an empty string");
  free(p);
  tp_buf_fini(&b);
}

static void test_strings(void) {
  char *d = tp_strndup("hello world", 5);
  CHECK_STR(d, "hello", "strndup copies n bytes and ends them");
  free(d);
  char err[8];
  tp_seterr(err, sizeof(err), "%s", "a long message");
  CHECK_STR(err, "a long ", "seterr truncates to the buffer");
  tp_seterr(NULL, 0, "%s", "ignored"); /* no buffer: nothing to do, no crash */
  CHECK_STR(tp_strerror(0), "success", "strerror(0)");
  CHECK(strcmp(tp_strerror(TP_ENOMEM), "unknown error") != 0, "every error code has its own text");
  CHECK_STR(tp_strerror(-12345), "unknown error", "an unknown code");
  uint64_t a = tp_now_ns(), b2 = tp_now_ns();
  CHECK(a > 0 && b2 >= a, "the clock is monotonic");
}

static void test_utf8(void) {
  static const struct {
    const char *s;
    size_t len, want;
    const char *what;
  } rows[] = {
      {"plain", 5, 5, "ASCII"},
      {"caf\xc3\xa9", 5, 5, "two-byte sequence"},
      {"\xe2\x82\xac!", 4, 4, "three-byte sequence"},
      {"\xf0\x9f\x98\x80", 4, 4, "four-byte sequence"},
      {"ab\xc3", 3, 2, "a sequence cut at the end stops before it"},
      {"ab\x80z", 4, 2, "a lone continuation byte"},
      {"a\xc0\xafz", 4, 1, "overlong two-byte form"},
      {"a\xe0\x80\xafz", 5, 1, "overlong three-byte form"},
      {"a\xed\xa0\x80z", 5, 1, "a surrogate"},
      {"a\xf4\x90\x80\x80z", 6, 1, "above U+10FFFF"},
      {"a\xffz", 3, 1, "a byte that never starts a sequence"},
      {"ab\0cd", 5, 2, "a NUL byte ends the prefix"},
      {"", 0, 0, "empty"},
  };
  for (size_t i = 0; i < sizeof(rows) / sizeof(rows[0]); i++)
    CHECK_INT(tp_utf8_valid_prefix((const uint8_t *)rows[i].s, rows[i].len), rows[i].want, rows[i].what);
}

int main(void) {
  test_buf();
  test_strings();
  test_utf8();
  return tp_test_done();
}

/* Tests for gRPC framing and header formats (lib/transport/tp_grpc.c),
 * written from tp_grpc.h and the gRPC over HTTP/2 specification as an independent
 * check of the implementation. */
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "tp_test.h"
#include "transport/tp_grpc.h"
#include "util/tp_common.h"

/* ---- a message collector ------------------------------------------------ */

typedef struct msg {
  uint8_t *data;
  size_t len;
  bool compressed;
  bool in_input; /* data pointed into the fed buffer (no copy) */
} msg;

typedef struct collector {
  msg m[64];
  size_t n;
  const uint8_t *feed_lo, *feed_hi; /* the buffer of the current feed */
  size_t fail_at;                   /* return fail_rv on this call (1-based) */
  int fail_rv;
  size_t calls;
} collector;

static int collect_cb(void *user_data, const uint8_t *data, size_t len, bool compressed) {
  collector *c = user_data;
  c->calls++;
  if (c->fail_at && c->calls == c->fail_at) return c->fail_rv;
  if (c->n == TP_ARRAY_LEN(c->m)) return TP_ENOMEM;
  msg *m = &c->m[c->n++];
  m->data = malloc(len ? len : 1);
  if (len) memcpy(m->data, data, len);
  m->len = len;
  m->compressed = compressed;
  m->in_input = len && data >= c->feed_lo && data + len <= c->feed_hi;
  return 0;
}

static void collector_reset(collector *c) {
  for (size_t i = 0; i < c->n; i++) free(c->m[i].data);
  memset(c, 0, sizeof(*c));
}

static int feed(tp_grpc_reader *r, collector *c, const uint8_t *p, size_t len) {
  c->feed_lo = p;
  c->feed_hi = p + len;
  return tp_grpc_reader_feed(r, p, len, collect_cb, c);
}

/* ---- the reference stream ------------------------------------------------ */

/* A non-final streamed response (framed, 89 bytes). */
static const uint8_t me_framed[] = {
  0x00, 0x00, 0x00, 0x00, 0x54, 0x12, 0x52, 0x0a, 0x0a, 'v', 'l', 'l', 'm', '_', 'm', 'o',
  'd', 'e', 'l', 0x12, 0x01, 0x31, 0x1a, 0x02, 'r', '1', 0x22, 0x1b, 0x0a, 0x15, 't', 'r',
  'i', 't', 'o', 'n', '_', 'f', 'i', 'n', 'a', 'l', '_', 'r', 'e', 's', 'p', 'o', 'n', 's',
  'e', 0x12, 0x02, 0x08, 0x00, 0x2a, 0x17, 0x0a, 0x0b, 't', 'e', 'x', 't', '_', 'o', 'u',
  't', 'p', 'u', 't', 0x12, 0x05, 'B', 'Y', 'T', 'E', 'S', 0x1a, 0x01, 0x01, 0x32, 0x07,
  0x03, 0x00, 0x00, 0x00, 0x20, 0x6d, 0x65,
};

typedef struct want_msg {
  const uint8_t *data;
  size_t len;
  bool compressed;
} want_msg;

static uint8_t body300[300];
static want_msg wants[6];
static size_t n_wants;
static uint8_t stream[1024];
static size_t stream_len;
static size_t boundaries[8]; /* stream offsets where a message ends */

static void add_msg(const uint8_t *data, size_t len, bool compressed) {
  uint8_t *p = stream + stream_len;
  p[0] = compressed;
  p[1] = (uint8_t)(len >> 24);
  p[2] = (uint8_t)(len >> 16);
  p[3] = (uint8_t)(len >> 8);
  p[4] = (uint8_t)len;
  memcpy(p + 5, data, len);
  stream_len += 5 + len;
  wants[n_wants] = (want_msg){data, len, compressed};
  boundaries[n_wants++] = stream_len;
}

static void build_stream(void) {
  for (size_t i = 0; i < sizeof(body300); i++) body300[i] = (uint8_t)(i * 7 + 3);
  add_msg((const uint8_t *)"", 0, false);         /* an empty protobuf message */
  add_msg((const uint8_t *)"hello", 5, true);     /* compressed flag passes through */
  add_msg(body300, sizeof(body300), false);
  add_msg(me_framed + 5, sizeof(me_framed) - 5, false);
  add_msg((const uint8_t *)"\0", 1, false);       /* a body that is one NUL byte */
  add_msg((const uint8_t *)"", 0, false);         /* an empty message at the end */
}

static bool matches(const collector *c, size_t upto) {
  if (c->n != upto) return false;
  for (size_t i = 0; i < upto; i++)
    if (c->m[i].len != wants[i].len || c->m[i].compressed != wants[i].compressed ||
        (wants[i].len && memcmp(c->m[i].data, wants[i].data, wants[i].len) != 0))
      return false;
  return true;
}

static bool at_boundary(size_t off) {
  if (off == 0) return true;
  for (size_t i = 0; i < n_wants; i++)
    if (boundaries[i] == off) return true;
  return false;
}

/* ---- reader tests --------------------------------------------------------- */

static void test_reader_whole(void) {
  tp_grpc_reader r;
  collector c = {0};
  tp_grpc_reader_init(&r, 1 << 20);
  CHECK(!tp_grpc_reader_mid_message(&r), "a new reader is between messages");
  int rv = feed(&r, &c, stream, stream_len);
  CHECK_INT(rv, 0, "whole stream in one feed");
  CHECK(matches(&c, n_wants), "all %zu messages, in order, with their flags", n_wants);
  bool zero_copy = true;
  for (size_t i = 0; i < c.n; i++) zero_copy &= c.m[i].len == 0 || c.m[i].in_input;
  CHECK(zero_copy, "messages whole inside one feed are passed without copying");
  CHECK(!tp_grpc_reader_mid_message(&r), "between messages after the stream");
  tp_grpc_reader_fini(&r);
  collector_reset(&c);

  /* The worked example: one framed response of 89 bytes. */
  tp_grpc_reader_init(&r, 1 << 20);
  rv = feed(&r, &c, me_framed, sizeof(me_framed));
  CHECK(rv == 0 && c.n == 1 && c.m[0].len == 84 && !c.m[0].compressed &&
            memcmp(c.m[0].data, me_framed + 5, 84) == 0,
        "framed streamed response: one 84-byte message");
  tp_grpc_reader_fini(&r);
  collector_reset(&c);

  /* Feeding nothing does nothing. */
  tp_grpc_reader_init(&r, 1 << 20);
  rv = feed(&r, &c, stream, 0);
  CHECK(rv == 0 && c.calls == 0 && !tp_grpc_reader_mid_message(&r), "an empty feed");
  tp_grpc_reader_fini(&r);
  collector_reset(&c);
}

static void test_reader_splits(void) {
  int bad2 = 0, bad_mid = 0, bad3 = 0, bad1 = 0;
  collector c = {0};
  tp_grpc_reader r;

  /* Two pieces, split at every offset; the reader also says whether the
   * first piece ended inside a message. */
  for (size_t i = 0; i <= stream_len; i++) {
    tp_grpc_reader_init(&r, 1 << 20);
    int rv = feed(&r, &c, stream, i);
    if (tp_grpc_reader_mid_message(&r) == at_boundary(i)) bad_mid++;
    rv |= feed(&r, &c, stream + i, stream_len - i);
    if (rv || !matches(&c, n_wants) || tp_grpc_reader_mid_message(&r)) bad2++;
    tp_grpc_reader_fini(&r);
    collector_reset(&c);
  }
  CHECK_INT(bad2, 0, "split in two at every offset: same messages");
  CHECK_INT(bad_mid, 0, "mid_message is true exactly when a piece ends inside a message");

  /* Three pieces, at every pair of offsets. */
  for (size_t i = 0; i <= stream_len; i++) {
    for (size_t j = i; j <= stream_len; j++) {
      tp_grpc_reader_init(&r, 1 << 20);
      int rv = feed(&r, &c, stream, i);
      rv |= feed(&r, &c, stream + i, j - i);
      rv |= feed(&r, &c, stream + j, stream_len - j);
      if (rv || !matches(&c, n_wants)) bad3++;
      tp_grpc_reader_fini(&r);
      collector_reset(&c);
    }
  }
  CHECK_INT(bad3, 0, "split in three at every pair of offsets: same messages");

  /* One byte at a time, from a fresh single-byte buffer each time so that
   * nothing can be read beyond the byte handed over. */
  tp_grpc_reader_init(&r, 1 << 20);
  int rv = 0;
  for (size_t i = 0; i < stream_len && rv == 0; i++) {
    uint8_t *one = malloc(1);
    *one = stream[i];
    rv = feed(&r, &c, one, 1);
    free(one);
    if (tp_grpc_reader_mid_message(&r) == at_boundary(i + 1)) bad1++;
  }
  if (rv || !matches(&c, n_wants)) bad1++;
  CHECK_INT(bad1, 0, "one byte per feed: same messages, mid_message right after each");
  tp_grpc_reader_fini(&r);
  collector_reset(&c);
}

static void put_prefix_raw(uint8_t *p, uint8_t flag, uint32_t len) {
  p[0] = flag;
  p[1] = (uint8_t)(len >> 24);
  p[2] = (uint8_t)(len >> 16);
  p[3] = (uint8_t)(len >> 8);
  p[4] = (uint8_t)len;
}

static void test_reader_limits(void) {
  tp_grpc_reader r;
  collector c = {0};
  uint8_t buf[5 + 100 + 5 + 101];
  memset(buf, 'x', sizeof(buf));
  put_prefix_raw(buf, 0, 100);
  put_prefix_raw(buf + 105, 0, 101);

  tp_grpc_reader_init(&r, 100);
  int rv = feed(&r, &c, buf, sizeof(buf));
  CHECK_INT(rv, TP_ETOOBIG, "a prefix announcing max_msg_bytes + 1 fails");
  CHECK(c.n == 1 && c.m[0].len == 100, "the message of exactly max_msg_bytes before it passed");
  tp_grpc_reader_fini(&r);
  collector_reset(&c);

  /* The same with the oversized prefix split across feeds: the error comes
   * when the prefix completes, before any of its body is waited for. */
  int bad = 0;
  for (size_t cut = 106; cut < 110; cut++) {
    tp_grpc_reader_init(&r, 100);
    rv = feed(&r, &c, buf, cut);
    int rv2 = feed(&r, &c, buf + cut, 110 - cut);
    if (rv != 0 || rv2 != TP_ETOOBIG || c.n != 1) bad++;
    tp_grpc_reader_fini(&r);
    collector_reset(&c);
  }
  CHECK_INT(bad, 0, "oversized prefix split across feeds: TP_ETOOBIG once it is whole");

  /* A huge announced length must fail at once, not try to buffer 4 GiB. */
  uint8_t huge[5];
  put_prefix_raw(huge, 0, UINT32_MAX);
  tp_grpc_reader_init(&r, 4u << 20);
  rv = feed(&r, &c, huge, 5);
  CHECK(rv == TP_ETOOBIG && c.n == 0, "a 4 GiB prefix against a 4 MiB limit fails");
  tp_grpc_reader_fini(&r);
  collector_reset(&c);

  /* max_msg_bytes 0 still lets empty messages through. */
  uint8_t empty[5] = {0};
  tp_grpc_reader_init(&r, 0);
  rv = feed(&r, &c, empty, 5);
  CHECK(rv == 0 && c.n == 1 && c.m[0].len == 0, "empty message under a zero limit");
  tp_grpc_reader_fini(&r);
  collector_reset(&c);
}

static void test_reader_cb_error(void) {
  tp_grpc_reader r;
  collector c = {0};
  tp_grpc_reader_init(&r, 1 << 20);
  c.fail_at = 3;
  c.fail_rv = -77;
  int rv = feed(&r, &c, stream, stream_len);
  CHECK_INT(rv, -77, "the callback's code is returned");
  CHECK_INT(c.calls, 3, "no message is delivered after the callback failed");
  tp_grpc_reader_fini(&r);
  collector_reset(&c);

  /* The same when the failing message completes in a later feed. */
  tp_grpc_reader_init(&r, 1 << 20);
  c.fail_at = 3;
  c.fail_rv = TP_EPROTO;
  size_t cut = boundaries[1] + 100; /* inside the 300-byte body */
  rv = feed(&r, &c, stream, cut);
  int rv2 = feed(&r, &c, stream + cut, stream_len - cut);
  CHECK(rv == 0 && rv2 == TP_EPROTO && c.calls == 3,
        "callback failure on a message gathered across feeds");
  tp_grpc_reader_fini(&r);
  collector_reset(&c);
}

static void test_reader_reuse(void) {
  /* A reader that has gathered a long message spanning feeds hands the
   * next one over intact (the gathering buffer is reset between them). */
  tp_grpc_reader r;
  collector c = {0};
  uint8_t two[5 + 300 + 5 + 3];
  put_prefix_raw(two, 0, 300);
  memcpy(two + 5, body300, 300);
  put_prefix_raw(two + 305, 0, 3);
  memcpy(two + 310, "abc", 3);
  tp_grpc_reader_init(&r, 1 << 20);
  int rv = feed(&r, &c, two, 200);
  rv |= feed(&r, &c, two + 200, 108);
  rv |= feed(&r, &c, two + 308, sizeof(two) - 308);
  CHECK(rv == 0 && c.n == 2 && c.m[0].len == 300 && memcmp(c.m[0].data, body300, 300) == 0 &&
            c.m[1].len == 3 && memcmp(c.m[1].data, "abc", 3) == 0,
        "a short message after a gathered long one");
  CHECK(!c.m[0].in_input, "a message spanning feeds is gathered (not a pointer into a feed)");
  tp_grpc_reader_fini(&r);
  collector_reset(&c);
}

static void test_put_prefix(void) {
  uint8_t p[TP_GRPC_PREFIX_BYTES];
  tp_grpc_put_prefix(p, 112);
  CHECK_MEM(p, 5, "\x00\x00\x00\x00\x70", 5, "prefix for 112 bytes");
  tp_grpc_put_prefix(p, 0);
  CHECK_MEM(p, 5, "\x00\x00\x00\x00\x00", 5, "prefix for an empty message");
  tp_grpc_put_prefix(p, 0x01020304);
  CHECK_MEM(p, 5, "\x00\x01\x02\x03\x04", 5, "length is big endian");
  tp_grpc_put_prefix(p, UINT32_MAX);
  CHECK_MEM(p, 5, "\x00\xff\xff\xff\xff", 5, "largest length");
}

/* ---- grpc-timeout ------------------------------------------------------------ */

static uint64_t unit_ns(char u) {
  switch (u) {
    case 'H': return 3600ULL * TP_NS_PER_S;
    case 'M': return 60ULL * TP_NS_PER_S;
    case 'S': return TP_NS_PER_S;
    case 'm': return TP_NS_PER_MS;
    case 'u': return 1000ULL;
    case 'n': return 1ULL;
  }
  return 0;
}

static void test_timeout(void) {
  char out[10];
  /* tp_grpc.h says "the finest unit that fits" but gives "1500m" and
   * "30S" as examples, which are the coarsest exact units; the rule is
   * tested here (the implementation follows it), the examples are
   * reported as wrong. */
  tp_grpc_timeout_format(out, 1500 * TP_NS_PER_MS);
  CHECK_STR(out, "1500000u", "1.5 s in the finest unit that fits in 8 digits");
  tp_grpc_timeout_format(out, 30 * TP_NS_PER_S);
  CHECK_STR(out, "30000000u", "30 s in the finest unit that fits in 8 digits");
  tp_grpc_timeout_format(out, 99999999);
  CHECK_STR(out, "99999999n", "8 digits of nanoseconds stay nanoseconds");
  tp_grpc_timeout_format(out, 100000000);
  CHECK_STR(out, "100000u", "9 digits of nanoseconds move to microseconds");

  /* Properties over a spread of values: at most 8 digits and one unit
   * letter, and parsing gives the value back, exactly when some unit can
   * hold it in 8 digits, else within 1e-5 (the finest unit that fits holds
   * at least 5 significant digits). */
  static const uint64_t vals[] = {
    1, 999, 1000, 99999999, 100000000, 123456789, 1500000000ULL, 30000000000ULL,
    60000000000ULL, 3600000000000ULL, 86400000000000ULL, 123456789123ULL, 99999999999999ULL,
    100000000000000000ULL, 18446744073709551615ULL, 7200000000001ULL, 59999999999ULL,
  };
  int bad_shape = 0, bad_round = 0;
  for (size_t i = 0; i < TP_ARRAY_LEN(vals); i++) {
    memset(out, 'Z', sizeof(out));
    tp_grpc_timeout_format(out, vals[i]);
    size_t len = strnlen(out, sizeof(out));
    size_t digits = 0;
    while (digits < len && out[digits] >= '0' && out[digits] <= '9') digits++;
    bool shape = len < sizeof(out) && digits >= 1 && digits <= 8 && len == digits + 1 &&
                 unit_ns(out[digits]) != 0 && !(digits > 1 && out[0] == '0');
    if (!shape) {
      bad_shape++;
      printf("# format(%" PRIu64 ") = \"%.10s\"\n", vals[i], out);
      continue;
    }
    /* Finest unit that fits: the next finer unit would need 9 digits. */
    static const char order[] = "numSMH";
    const char *u = strchr(order, out[digits]);
    if (u && u > order) {
      uint64_t finer = unit_ns(u[-1]);
      uint64_t need = vals[i] / finer + (vals[i] % finer != 0);
      if (need <= 99999999ULL) {
        bad_shape++;
        printf("# format(%" PRIu64 ") = \"%s\", but %" PRIu64 "%c fits\n", vals[i], out, need,
               u[-1]);
        continue;
      }
    }
    uint64_t back = 0;
    int rv = tp_grpc_timeout_parse(out, len, &back);
    bool exact = false;
    for (const char *k = order; *k; k++)
      exact |= vals[i] % unit_ns(*k) == 0 && vals[i] / unit_ns(*k) <= 99999999ULL;
    double relerr = (double)(back > vals[i] ? back - vals[i] : vals[i] - back) / (double)vals[i];
    if (rv != 0 || (exact ? back != vals[i] : relerr > 1e-5)) {
      bad_round++;
      printf("# format(%" PRIu64 ") = \"%s\", parsed back %" PRIu64 " (rv %d)\n", vals[i], out,
             back, rv);
    }
  }
  CHECK_INT(bad_shape, 0, "formatted timeouts are 1-8 digits and the finest unit that fits");
  CHECK_INT(bad_round, 0, "formatted timeouts parse back (exactly when representable)");

  static const struct {
    const char *s;
    uint64_t want;
  } good[] = {
    {"30S", 30 * TP_NS_PER_S}, {"1500m", 1500 * TP_NS_PER_MS}, {"250000u", 250000000ULL},
    {"1n", 1}, {"1H", 3600 * TP_NS_PER_S}, {"2M", 120 * TP_NS_PER_S},
    {"99999999n", 99999999ULL}, {"99999999S", 99999999ULL * TP_NS_PER_S},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(good); i++) {
    uint64_t v = 0;
    int rv = tp_grpc_timeout_parse(good[i].s, strlen(good[i].s), &v);
    CHECK(rv == 0 && v == good[i].want, "grpc-timeout \"%s\" = %" PRIu64 " ns (rv %d, %" PRIu64 ")",
          good[i].s, good[i].want, rv, v);
  }
  static const char *const bad[] = {
    "", "S", "10", "123456789S", "10x", "-1S", "+1S", "1 S", " 1S", "1S ", "1s", "1.5S", "1SS",
    "S1", "0x1S",
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(bad); i++) {
    uint64_t v = 4242;
    CHECK_INT(tp_grpc_timeout_parse(bad[i], strlen(bad[i]), &v), TP_EINVAL, bad[i]);
  }
  /* The length bounds the value: bytes after it are not part of it. */
  uint64_t v = 0;
  CHECK(tp_grpc_timeout_parse("30S9", 3, &v) == 0 && v == 30 * TP_NS_PER_S,
        "only len bytes are read");
  /* 99999999 hours exceeds 64-bit nanoseconds: refuse or saturate, never
   * wrap to a short deadline. */
  v = 0;
  int rv = tp_grpc_timeout_parse("99999999H", 9, &v);
  CHECK(rv == TP_EINVAL || v == UINT64_MAX, "an unrepresentable timeout does not wrap (rv %d, %" PRIu64 ")", rv, v);
}

/* ---- grpc-message ----------------------------------------------------------- */

static void check_decode(const char *in, const char *want, size_t want_len) {
  char out[64];
  memset(out, 'Z', sizeof(out));
  size_t n = tp_grpc_message_decode(out, in, strlen(in));
  CHECK(n == want_len && memcmp(out, want, n) == 0 && out[n] == 0, "decode \"%s\"", in);
}

static void test_message(void) {
  check_decode("a%20b", "a b", 3);
  check_decode("%41%42", "AB", 2);
  check_decode("%C3%A9t%C3%A9", "\xC3\xA9t\xC3\xA9", 5);
  check_decode("%00x", "\0x", 2);
  check_decode("plain text", "plain text", 10);
  check_decode("", "", 0);
  /* Malformed escapes are left as they are and decoding goes on. */
  check_decode("100%", "100%", 4);
  check_decode("%4", "%4", 2);
  check_decode("%zz", "%zz", 3);
  check_decode("%4g", "%4g", 3);
  check_decode("%%41", "%A", 2);

  char out[64];
  const char *in = "a b%c\n\xC3\xA9~\x7f";
  size_t n = tp_grpc_message_encode(out, in, strlen(in));
  CHECK(n == strlen("a b%25c%0A%C3%A9~%7F") && strcmp(out, "a b%25c%0A%C3%A9~%7F") == 0,
        "encode: printable ASCII kept, %% and other bytes as upper-case %%XX (got \"%s\")", out);

  /* Every byte value survives encode then decode, and the encoding uses
   * only 0x20-0x7E. */
  char all[256], enc[3 * 256 + 1], dec[3 * 256 + 1];
  for (int i = 0; i < 256; i++) all[i] = (char)i;
  size_t en = tp_grpc_message_encode(enc, all, 256);
  bool printable = en == strlen(enc);
  for (size_t i = 0; i < en; i++) printable &= enc[i] >= 0x20 && enc[i] <= 0x7e;
  size_t dn = tp_grpc_message_decode(dec, enc, en);
  CHECK(printable, "encoding of all 256 bytes is printable ASCII");
  CHECK_MEM(dec, dn, all, 256, "decode(encode(every byte)) round-trips");
  CHECK_INT(en, 95 - 1 + 3 * (256 - 94), "94 printable bytes pass as-is, the other 162 grow to 3");
}

/* ---- status mapping ------------------------------------------------------------ */

static void test_status(void) {
  CHECK_STR(tp_grpc_status_name(0), "OK", "name 0");
  CHECK_STR(tp_grpc_status_name(5), "NOT_FOUND", "name 5");
  CHECK_STR(tp_grpc_status_name(13), "INTERNAL", "name 13");
  CHECK_STR(tp_grpc_status_name(16), "UNAUTHENTICATED", "name 16");
  CHECK_STR(tp_grpc_status_name(17), "UNKNOWN_STATUS", "name 17");
  CHECK_STR(tp_grpc_status_name(-1), "UNKNOWN_STATUS", "name -1");

  static const int http[][2] = {
    {400, TP_GRPC_INTERNAL}, {401, TP_GRPC_UNAUTHENTICATED}, {403, TP_GRPC_PERMISSION_DENIED},
    {404, TP_GRPC_UNIMPLEMENTED}, {429, TP_GRPC_UNAVAILABLE}, {502, TP_GRPC_UNAVAILABLE},
    {503, TP_GRPC_UNAVAILABLE}, {504, TP_GRPC_UNAVAILABLE}, {431, TP_GRPC_INTERNAL},
    {200, TP_GRPC_UNKNOWN}, {500, TP_GRPC_UNKNOWN}, {418, TP_GRPC_UNKNOWN}, {0, TP_GRPC_UNKNOWN},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(http); i++) {
    char what[64];
    snprintf(what, sizeof(what), "HTTP %d without grpc-status", http[i][0]);
    CHECK_INT(tp_grpc_status_from_http(http[i][0]), http[i][1], what);
  }

  static const int rst[][2] = {
    {0x0, TP_GRPC_INTERNAL}, {0x1, TP_GRPC_INTERNAL}, {0x2, TP_GRPC_INTERNAL},
    {0x3, TP_GRPC_INTERNAL}, {0x4, TP_GRPC_INTERNAL}, {0x6, TP_GRPC_INTERNAL},
    {0x7, TP_GRPC_UNAVAILABLE}, {0x8, TP_GRPC_CANCELLED}, {0x9, TP_GRPC_INTERNAL},
    {0xa, TP_GRPC_INTERNAL}, {0xb, TP_GRPC_RESOURCE_EXHAUSTED},
    {0xc, TP_GRPC_PERMISSION_DENIED}, {0xd, TP_GRPC_INTERNAL},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(rst); i++) {
    char what[64];
    snprintf(what, sizeof(what), "RST_STREAM 0x%x", rst[i][0]);
    CHECK_INT(tp_grpc_status_from_rst((uint32_t)rst[i][0]), rst[i][1], what);
  }

  static const struct {
    const char *s;
    size_t len;
    int want;
  } st[] = {
    {"0", 1, 0}, {"14", 2, 14}, {"16", 2, 16}, {"140", 2, 14}, {"", 0, -1}, {"a", 1, -1},
    {"-1", 2, -1}, {"1a", 2, -1}, {" 1", 2, -1}, {"1 ", 2, -1}, {"+1", 2, -1}, {"0x1", 3, -1},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(st); i++) {
    char what[64];
    snprintf(what, sizeof(what), "grpc-status \"%.*s\"", (int)st[i].len, st[i].s);
    CHECK_INT(tp_grpc_status_parse(st[i].s, st[i].len), st[i].want, what);
  }
  int big = tp_grpc_status_parse("99999999999", 11);
  CHECK(big < 0 || big > 16, "an overflowing grpc-status is not taken for a known status (%d)",
        big);
  big = tp_grpc_status_parse("4294967296", 10);
  CHECK(big < 0 || big > 16, "2^32 does not wrap to OK (%d)", big);
}

/* ---- inputs ending right before an unmapped page ------------------------------ */

static void test_guard_page(void) {
  long pg = sysconf(_SC_PAGESIZE);
  uint8_t *mem = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE,
                      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED || mprotect(mem + pg, (size_t)pg, PROT_NONE) != 0) {
    CHECK(0, "guard page set up");
    return;
  }
  uint8_t *end = mem + pg;

  /* The whole stream, then every suffix of it, ending at the page end. */
  int bad = 0;
  collector c = {0};
  tp_grpc_reader r;
  for (size_t i = 0; i <= stream_len; i++) {
    uint8_t *p = end - stream_len;
    memcpy(p, stream, stream_len);
    tp_grpc_reader_init(&r, 1 << 20);
    int rv = feed(&r, &c, p, i);
    rv |= feed(&r, &c, p + i, stream_len - i);
    if (rv || !matches(&c, n_wants)) bad++;
    tp_grpc_reader_fini(&r);
    collector_reset(&c);
  }
  /* A partial prefix at the very end of the page. */
  for (size_t k = 1; k < 5; k++) {
    memcpy(end - k, stream + boundaries[1], k);
    tp_grpc_reader_init(&r, 1 << 20);
    if (feed(&r, &c, end - k, k) != 0 || c.n != 0 || !tp_grpc_reader_mid_message(&r)) bad++;
    tp_grpc_reader_fini(&r);
    collector_reset(&c);
  }
  CHECK_INT(bad, 0, "guard page: reader reads only what it is given");

  static const char *const texts[] = {"30S", "1", "123456789", "%", "%4", "14", "S"};
  int gbad = 0;
  for (size_t i = 0; i < TP_ARRAY_LEN(texts); i++) {
    size_t len = strlen(texts[i]);
    char *p = (char *)end - len;
    memcpy(p, texts[i], len);
    uint64_t a = 0, b = 0;
    if (tp_grpc_timeout_parse(p, len, &a) != tp_grpc_timeout_parse(texts[i], len, &b) || a != b)
      gbad++;
    if (tp_grpc_status_parse(p, len) != tp_grpc_status_parse(texts[i], len)) gbad++;
    char out1[16], out2[16];
    size_t n1 = tp_grpc_message_decode(out1, p, len);
    size_t n2 = tp_grpc_message_decode(out2, texts[i], len);
    if (n1 != n2 || memcmp(out1, out2, n1) != 0) gbad++;
  }
  CHECK_INT(gbad, 0, "guard page: header values at a page end parse as ordinary copies do");
  munmap(mem, (size_t)pg * 2);
}

/* The re-send rule (RFC 9113 sections 6.8 and 8.7), one row per case: the
 * call's state, then whether it may go again. */
static void test_may_resend(void) {
  /* An unanswered stream 9 on a connection that served streams before, its
   * HEADERS on the wire, nothing else known: the base every row changes. */
  static const tp_grpc_unanswered base = {.stream_id = 9, .on_wire = true, .conn_reused = true};
  enum { F_NONE, F_REFUSED, F_RST_CANCEL, F_RST_INTERNAL, F_RST_NOERR };
  static const struct {
    const char *what;
    bool on_wire, got_response, local_failed, conn_lost, conn_reused, goaway;
    int rst;
    int32_t goaway_last;
    uint32_t resends;
    bool want;
  } rows[] = {
    {"GOAWAY last 7: stream 9 was not processed", 1, 0, 0, 0, 1, 1, F_REFUSED, 7, 0, true},
    {"GOAWAY last 7, then the connection closed", 1, 0, 0, 1, 1, 1, F_NONE, 7, 0, true},
    {"GOAWAY last 9: stream 9 may have been processed", 1, 0, 0, 1, 1, 1, F_NONE, 9, 0, false},
    {"GOAWAY last 11: stream 9 may have been processed", 1, 0, 0, 1, 1, 1, F_NONE, 11, 0, false},
    {"GOAWAY last 0 on a fresh connection: not processed", 1, 0, 0, 1, 0, 1, F_NONE, 0, 0, true},
    {"RST_STREAM REFUSED_STREAM without GOAWAY", 1, 0, 0, 0, 1, 0, F_REFUSED, 0, 0, true},
    {"REFUSED_STREAM at or below GOAWAY's last", 1, 0, 0, 0, 1, 1, F_REFUSED, 11, 0, true},
    {"REFUSED_STREAM on a fresh connection", 1, 0, 0, 0, 0, 0, F_REFUSED, 0, 0, true},
    {"RST_STREAM CANCEL is the server's answer", 1, 0, 0, 0, 1, 0, F_RST_CANCEL, 0, 0, false},
    {"RST_STREAM INTERNAL_ERROR is the server's answer", 1, 0, 0, 0, 1, 0, F_RST_INTERNAL, 0, 0, false},
    {"stream closed with NO_ERROR and no answer", 1, 0, 0, 0, 1, 0, F_RST_NOERR, 0, 0, false},
    {"reused connection closed before any byte", 1, 0, 0, 1, 1, 0, F_NONE, 0, 0, true},
    {"fresh connection closed before any byte", 1, 0, 0, 1, 0, 0, F_NONE, 0, 0, false},
    {"reused connection closed after part of the answer", 1, 1, 0, 1, 1, 0, F_NONE, 0, 0, false},
    {"refused after part of the answer", 1, 1, 0, 0, 1, 1, F_REFUSED, 7, 0, false},
    {"HEADERS never left (closed before sending)", 0, 0, 0, 1, 0, 0, F_NONE, 0, 0, true},
    {"HEADERS never left, GOAWAY naming a later stream", 0, 0, 0, 0, 0, 1, F_REFUSED, 11, 0, true},
    {"refused again after one re-send", 1, 0, 0, 0, 1, 1, F_REFUSED, 7, 1, true},
    {"above GOAWAY's last again after two re-sends", 1, 0, 0, 1, 1, 1, F_NONE, 7, 2, true},
    {"refused after the last re-send allowed", 1, 0, 0, 0, 1, 1, F_REFUSED, 7, TP_GRPC_MAX_RESENDS, false},
    {"never on the wire after the last re-send", 0, 0, 0, 1, 1, 0, F_NONE, 0, TP_GRPC_MAX_RESENDS, false},
    {"reused connection lost again after a re-send", 1, 0, 0, 1, 1, 0, F_NONE, 0, 1, false},
    {"never on the wire after one re-send", 0, 0, 0, 1, 1, 0, F_NONE, 0, 1, true},
    {"timed out or cancelled on our side", 1, 0, 1, 1, 1, 1, F_REFUSED, 7, 0, false},
    {"not closed, not refused, no GOAWAY", 1, 0, 0, 0, 1, 0, F_NONE, 0, 0, false},
  };
  static const uint32_t codes[] = {0, TP_H2_REFUSED_STREAM, 0x8, 0x2, 0x0};
  for (size_t i = 0; i < TP_ARRAY_LEN(rows); i++) {
    tp_grpc_unanswered u = base;
    u.on_wire = rows[i].on_wire;
    u.got_response = rows[i].got_response;
    u.local_failed = rows[i].local_failed;
    u.conn_lost = rows[i].conn_lost;
    u.conn_reused = rows[i].conn_reused;
    u.goaway = rows[i].goaway;
    u.goaway_last = rows[i].goaway_last;
    u.rst_code = codes[rows[i].rst];
    u.resends = rows[i].resends;
    CHECK(tp_grpc_may_resend(&u) == rows[i].want, "may_resend: %s: %s", rows[i].what,
          rows[i].want ? "yes" : "no");
  }
}

int main(void) {
  build_stream();
  test_reader_whole();
  test_reader_splits();
  test_reader_limits();
  test_reader_cb_error();
  test_reader_reuse();
  test_put_prefix();
  test_timeout();
  test_message();
  test_status();
  test_guard_page();
  test_may_resend();
  return tp_test_done();
}

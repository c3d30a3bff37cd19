/* Unit tests for the mock's fault specs and draws (mock/tp_mock_faults.c). */
#include <stdlib.h>
#include <string.h>

#include "mock/tp_mock_faults.h"
#include "tp_test.h"

/* tp_mock_fault_draw(7, n, 0.4) for n = 0..19, computed independently by
 * test/integration/mock/mock_common.py (fault_drawn). */
#define PINNED_SEED7 0xcf408ULL

typedef struct spec_case {
  const char *spec;
  int rv;
  tp_mock_fault_kind kind;
  int code;
  uint32_t size_bytes;
  const char *text;
  const char *err_has; /* for failures: a phrase the message must hold */
} spec_case;

static const spec_case cases[] = {
    {"none", 0, TP_MOCK_FAULT_NONE, 0, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    {"rst_stream", 0, TP_MOCK_FAULT_RST_STREAM, 2, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    {"rst_stream:8", 0, TP_MOCK_FAULT_RST_STREAM, 8, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    {"rst_stream:0", 0, TP_MOCK_FAULT_RST_STREAM, 0, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    {"grpc_status", 0, TP_MOCK_FAULT_GRPC_STATUS, 14, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    {"grpc_status:8", 0, TP_MOCK_FAULT_GRPC_STATUS, 8, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    {"grpc_status:14:server busy", 0, TP_MOCK_FAULT_GRPC_STATUS, 14, TP_MOCK_OVERSIZE_DEFAULT_BYTES,
     "server busy", NULL},
    /* Only the first two colons split: the text may hold more. */
    {"grpc_status:13:a:b:c", 0, TP_MOCK_FAULT_GRPC_STATUS, 13, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "a:b:c", NULL},
    {"grpc_status:14:", 0, TP_MOCK_FAULT_GRPC_STATUS, 14, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    {"trailers_only:16:who", 0, TP_MOCK_FAULT_TRAILERS_ONLY, 16, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "who", NULL},
    {"http_status", 0, TP_MOCK_FAULT_HTTP_STATUS, 503, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    {"http_status:429:slow down", 0, TP_MOCK_FAULT_HTTP_STATUS, 429, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "slow down",
     NULL},
    {"inband_error", 0, TP_MOCK_FAULT_INBAND_ERROR, 0, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    {"inband_error:Error generating stream: x:y", 0, TP_MOCK_FAULT_INBAND_ERROR, 0,
     TP_MOCK_OVERSIZE_DEFAULT_BYTES, "Error generating stream: x:y", NULL},
    {"stall", 0, TP_MOCK_FAULT_STALL, 0, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    {"trickle", 0, TP_MOCK_FAULT_TRICKLE, 0, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    {"malformed", 0, TP_MOCK_FAULT_MALFORMED, 0, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    {"sse_garbage", 0, TP_MOCK_FAULT_MALFORMED, 0, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    {"oversize", 0, TP_MOCK_FAULT_OVERSIZE, 0, 80u << 20, "", NULL},
    {"oversize:5000000", 0, TP_MOCK_FAULT_OVERSIZE, 0, 5000000, "", NULL},
    {"invalid_utf8", 0, TP_MOCK_FAULT_INVALID_UTF8, 0, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    {"endless", 0, TP_MOCK_FAULT_ENDLESS, 0, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    {"close_conn", 0, TP_MOCK_FAULT_CLOSE_CONN, 0, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    {"goaway", 0, TP_MOCK_FAULT_GOAWAY, 0, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    {"goaway:11", 0, TP_MOCK_FAULT_GOAWAY, 11, TP_MOCK_OVERSIZE_DEFAULT_BYTES, "", NULL},
    /* Refused. */
    {"", TP_EINVAL, 0, 0, 0, NULL, "unknown fault kind ''"},
    {"boom", TP_EINVAL, 0, 0, 0, NULL, "unknown fault kind 'boom' (expected none, rst_stream"},
    {"STALL", TP_EINVAL, 0, 0, 0, NULL, "unknown fault kind 'STALL'"},
    {"stall:1", TP_EINVAL, 0, 0, 0, NULL, "fault 'stall' takes no argument"},
    {"grpc_status:0", TP_EINVAL, 0, 0, 0, NULL, "not a number within 1..16"},
    {"grpc_status:17", TP_EINVAL, 0, 0, 0, NULL, "not a number within 1..16"},
    {"grpc_status:x", TP_EINVAL, 0, 0, 0, NULL, "'x' is not a number"},
    {"grpc_status::msg", TP_EINVAL, 0, 0, 0, NULL, "'' is not a number"},
    {"http_status:200", TP_EINVAL, 0, 0, 0, NULL, "within 400..599"},
    {"http_status:-1", TP_EINVAL, 0, 0, 0, NULL, "is not a number"},
    {"rst_stream:14", TP_EINVAL, 0, 0, 0, NULL, "within 0..13"},
    {"rst_stream:2:text", TP_EINVAL, 0, 0, 0, NULL, "takes one number"},
    {"oversize:0", TP_EINVAL, 0, 0, 0, NULL, "within 1..4294967295"},
    {"oversize:4294967296", TP_EINVAL, 0, 0, 0, NULL, "within 1..4294967295"},
    {"oversize:99999999999999999999", TP_EINVAL, 0, 0, 0, NULL, "is not a number"},
};

static void test_parse(void) {
  for (size_t i = 0; i < TP_ARRAY_LEN(cases); i++) {
    const spec_case *c = &cases[i];
    tp_mock_fault f;
    char err[512] = "";
    memset(&f, 0x55, sizeof(f));
    int rv = tp_mock_fault_parse(c->spec, strlen(c->spec), &f, err, sizeof(err));
    char what[200];
    snprintf(what, sizeof(what), "parse '%s': result", c->spec);
    CHECK_INT(rv, c->rv, what);
    if (rv != 0) {
      snprintf(what, sizeof(what), "parse '%s': message names the problem", c->spec);
      CHECK(strstr(err, c->err_has) != NULL, "%s", what);
      if (!strstr(err, c->err_has)) printf("#   message: %s\n", err);
      continue;
    }
    snprintf(what, sizeof(what), "parse '%s': kind, code, size, text, after 0", c->spec);
    CHECK(f.kind == c->kind && f.code == c->code && f.size_bytes == c->size_bytes && strcmp(f.text, c->text) == 0 &&
              f.after_tokens == 0,
          "%s", what);
    if (f.kind != c->kind || f.code != c->code || strcmp(f.text, c->text) != 0)
      printf("#   got kind %d code %d text '%s'\n", f.kind, f.code, f.text);
  }
  /* The spec need not be NUL-terminated: only len bytes are read. */
  tp_mock_fault f;
  char buf[] = "stallXXXX";
  CHECK_INT(tp_mock_fault_parse(buf, 5, &f, NULL, 0), 0, "parse reads only len bytes");
  CHECK_INT(f.kind, TP_MOCK_FAULT_STALL, "parse of 5 bytes of 'stallXXXX' is stall");
  /* A long text is cut to the field, not refused. */
  char longspec[1000];
  memset(longspec, 'a', sizeof(longspec));
  memcpy(longspec, "inband_error:", 13);
  CHECK_INT(tp_mock_fault_parse(longspec, sizeof(longspec), &f, NULL, 0), 0, "long text accepted");
  CHECK_INT(strlen(f.text), TP_MOCK_FAULT_TEXT_BYTES - 1, "long text cut to the field");
  /* Every kind has a name that parses back to it. */
  int round = 1;
  for (int k = 0; k < TP_MOCK_FAULT_COUNT; k++) {
    const char *n = tp_mock_fault_name((tp_mock_fault_kind)k);
    if (tp_mock_fault_parse(n, strlen(n), &f, NULL, 0) != 0 || f.kind != (tp_mock_fault_kind)k) round = 0;
  }
  CHECK(round, "every kind's name parses back to the kind");
  CHECK_STR(tp_mock_fault_name(TP_MOCK_FAULT_COUNT), "?", "name out of range");
}

static void test_draw(void) {
  CHECK(!tp_mock_fault_draw(1, 0, 0), "rate 0 never draws");
  CHECK(tp_mock_fault_draw(1, 0, 1), "rate 1 always draws");
  int same = 1;
  for (uint64_t n = 0; n < 1000; n++)
    if (tp_mock_fault_draw(42, n, 0.3) != tp_mock_fault_draw(42, n, 0.3)) same = 0;
  CHECK(same, "the draw is a function of (seed, number)");
  const uint64_t N = 200000;
  uint64_t hits = 0, diff = 0, nested = 1;
  for (uint64_t n = 0; n < N; n++) {
    bool a = tp_mock_fault_draw(42, n, 0.25);
    hits += a;
    diff += a != tp_mock_fault_draw(43, n, 0.25);
    /* A smaller rate picks a subset of what a larger one picks. */
    if (tp_mock_fault_draw(42, n, 0.1) && !a) nested = 0;
  }
  CHECK_NEAR((double)hits / N, 0.25, 0.005, "rate 0.25 draws a quarter of 200000 requests");
  CHECK_NEAR((double)diff / N, 2 * 0.25 * 0.75, 0.01, "another seed draws independently");
  CHECK(nested, "a lower rate draws a subset of a higher rate's requests");
  /* Pinned: the integration tests restate the draw in Python and check
   * these exact requests fail (requests 0..19 at seed 7, rate 0.4; bit n
   * from the top is request n). */
  uint64_t h = 0;
  for (int n = 0; n < 20; n++) h = h * 2 + (uint64_t)tp_mock_fault_draw(7, (uint64_t)n, 0.4);
  CHECK_INT(h, PINNED_SEED7, "seed 7, rate 0.4: the pinned pattern for requests 0..19");
}

static void test_mapping(void) {
  tp_mock_fault f;
  memset(&f, 0, sizeof(f));
  static const int g2h[][2] = {{3, 400}, {5, 404}, {8, 429}, {12, 501}, {14, 503}, {16, 401}, {13, 500}, {2, 500}};
  int ok = 1;
  for (size_t i = 0; i < TP_ARRAY_LEN(g2h); i++) {
    f.kind = TP_MOCK_FAULT_GRPC_STATUS;
    f.code = g2h[i][0];
    if (tp_mock_fault_http_status(&f) != g2h[i][1] || tp_mock_fault_grpc_status(&f) != g2h[i][0]) ok = 0;
  }
  CHECK(ok, "grpc_status maps to HTTP statuses and keeps its gRPC code");
  static const int h2g[][2] = {{400, 3}, {401, 16}, {403, 7}, {404, 5}, {429, 8},
                               {500, 13}, {501, 12}, {502, 14}, {503, 14}, {504, 14}};
  ok = 1;
  for (size_t i = 0; i < TP_ARRAY_LEN(h2g); i++) {
    f.kind = TP_MOCK_FAULT_HTTP_STATUS;
    f.code = h2g[i][0];
    if (tp_mock_fault_grpc_status(&f) != h2g[i][1] || tp_mock_fault_http_status(&f) != h2g[i][0]) ok = 0;
  }
  CHECK(ok, "http_status maps to gRPC statuses and keeps its HTTP code");
  f.kind = TP_MOCK_FAULT_INBAND_ERROR;
  CHECK_INT(tp_mock_fault_grpc_status(&f), 13, "inband_error on a unary call is INTERNAL");
  CHECK_INT(tp_mock_fault_http_status(&f), 500, "inband_error before streaming is HTTP 500");
  f.text[0] = 0;
  CHECK(strstr(tp_mock_fault_message(&f), "injected") != NULL, "a default message names the injection");
  strcpy(f.text, "mine");
  CHECK_STR(tp_mock_fault_message(&f), "mine", "the spec's text is the message");
  int discrete = 0;
  for (int k = 0; k < TP_MOCK_FAULT_COUNT; k++) discrete += tp_mock_fault_is_discrete((tp_mock_fault_kind)k);
  CHECK(!tp_mock_fault_is_discrete(TP_MOCK_FAULT_TRICKLE) && !tp_mock_fault_is_discrete(TP_MOCK_FAULT_ENDLESS) &&
            !tp_mock_fault_is_discrete(TP_MOCK_FAULT_INVALID_UTF8) && !tp_mock_fault_is_discrete(TP_MOCK_FAULT_NONE) &&
            discrete == TP_MOCK_FAULT_COUNT - 4,
        "every kind but none, trickle, invalid_utf8 and endless acts once");
}

/* A mix: every faulted request carries one kind of it, evenly, the same
 * one for the same seed and number. */
static void test_mix(void) {
  tp_mock_fault f, one, again;
  char err[400];
  CHECK_INT(tp_mock_fault_parse("mixed", 5, &f, err, sizeof(err)), 0, "mixed parses");
  CHECK_INT(f.n_mix, TP_MOCK_FAULT_COUNT - 1, "mixed holds every kind but none");
  const char *list = "stall,oversize:2000000,rst_stream:8,close_conn";
  CHECK_INT(tp_mock_fault_parse(list, strlen(list), &f, err, sizeof(err)), 0, "a list parses");
  CHECK_INT(f.n_mix, 4, "a list holds its kinds");
  int seen[TP_MOCK_FAULT_COUNT] = {0};
  bool args_kept = true, same = true;
  for (uint64_t n = 0; n < 4000; n++) {
    tp_mock_fault_pick(&f, 7, n, &one);
    tp_mock_fault_pick(&f, 7, n, &again);
    same &= one.kind == again.kind;
    seen[one.kind]++;
    if (one.kind == TP_MOCK_FAULT_OVERSIZE) args_kept &= one.size_bytes == 2000000;
    if (one.kind == TP_MOCK_FAULT_RST_STREAM) args_kept &= one.code == 8;
    if (one.n_mix) same = false;
  }
  CHECK(same, "the pick is repeatable and gives one kind");
  CHECK(args_kept, "each kind keeps its number");
  bool even = true;
  const tp_mock_fault_kind kinds[4] = {TP_MOCK_FAULT_STALL, TP_MOCK_FAULT_OVERSIZE, TP_MOCK_FAULT_RST_STREAM,
                                       TP_MOCK_FAULT_CLOSE_CONN};
  for (int k = 0; k < 4; k++) even &= seen[kinds[k]] > 850 && seen[kinds[k]] < 1150;
  CHECK(even, "kinds are drawn evenly (%d %d %d %d of 4000)", seen[kinds[0]], seen[kinds[1]], seen[kinds[2]],
        seen[kinds[3]]);
  tp_mock_fault_parse("goaway", 6, &f, err, sizeof(err));
  tp_mock_fault_pick(&f, 7, 3, &one);
  CHECK(one.kind == TP_MOCK_FAULT_GOAWAY && one.n_mix == 0, "a single kind is picked as itself");
  CHECK(tp_mock_fault_parse("stall,inband_error:x", 20, &f, err, sizeof(err)) == TP_EINVAL && strstr(err, "no texts"),
        "a list item with a text is refused: %s", err);
  CHECK(tp_mock_fault_parse("stall,bogus", 11, &f, err, sizeof(err)) == TP_EINVAL && strstr(err, "bogus"),
        "an unknown kind in a list is named: %s", err);
}

int main(void) {
  test_parse();
  test_draw();
  test_mix();
  test_mapping();
  return tp_test_done();
}

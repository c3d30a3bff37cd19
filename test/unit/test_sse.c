/* Tests for the SSE parser (lib/api/tp_sse.c), written from the WHATWG
 * event-stream rules (HTML standard, server-sent events).  Every table
 * stream is fed whole, byte by byte, in two pieces cut at every offset and
 * in three pieces cut at every pair of offsets; each way must give the same
 * events, result and end state as the table says. */
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "api/tp_sse.h"
#include "tp_test.h"
#include "util/tp_common.h"

#define MAX_EVENTS 16

typedef struct want_ev {
  const char *type;
  const char *data; /* may hold "\n"; compared with its strlen */
  const char *id;
  int64_t retry_ms;
} want_ev;

typedef struct sse_case {
  const char *name;
  const char *input;
  size_t input_len; /* 0 = strlen(input) */
  size_t max_event_bytes;
  int rv; /* from the feed that fails, or 0 */
  bool pending;
  size_t n;
  want_ev ev[MAX_EVENTS];
} sse_case;

typedef struct got_ev {
  char type[64];
  uint8_t data[512];
  size_t data_len;
  char id[64];
  int64_t retry_ms;
  bool terminated; /* data[data_len], type[type_len], id[id_len] are NUL */
} got_ev;

typedef struct collector {
  got_ev ev[MAX_EVENTS];
  size_t n;
  bool overflow;
} collector;

static int collect(tp_sse_parser *p, const tp_sse_event *ev, void *ud) {
  collector *c = ud;
  if (c->n == MAX_EVENTS || ev->data_len >= sizeof(c->ev[0].data) || ev->type_len >= 64 ||
      ev->last_id_len >= 64) {
    c->overflow = true;
    return 0;
  }
  got_ev *g = &c->ev[c->n++];
  memcpy(g->type, ev->type, ev->type_len);
  g->type[ev->type_len] = 0;
  memcpy(g->data, ev->data, ev->data_len);
  g->data_len = ev->data_len;
  memcpy(g->id, ev->last_id, ev->last_id_len);
  g->id[ev->last_id_len] = 0;
  g->retry_ms = ev->retry_ms;
  g->terminated =
      ev->data[ev->data_len] == 0 && ev->type[ev->type_len] == 0 && ev->last_id[ev->last_id_len] == 0;
  return 0;
}

typedef struct outcome {
  collector c;
  int rv;
  bool pending;
} outcome;

/* Feeds `in` cut at the given offsets (sorted, within the input). */
static void run_cuts(const sse_case *t, const uint8_t *in, size_t len, const size_t *cuts, size_t n_cuts,
                     outcome *o) {
  tp_sse_parser p;
  tp_sse_init(&p, t->max_event_bytes);
  memset(o, 0, sizeof(*o));
  size_t start = 0;
  for (size_t i = 0; i <= n_cuts && o->rv == 0; i++) {
    size_t end = i < n_cuts ? cuts[i] : len;
    o->rv = tp_sse_feed(&p, in + start, end - start, collect, &o->c);
    start = end;
  }
  o->pending = tp_sse_pending(&p);
  tp_sse_fini(&p);
}

/* Does an outcome match the table? */
static bool matches(const sse_case *t, const outcome *o, char *why, size_t whylen) {
  if (o->c.overflow) return snprintf(why, whylen, "collector overflow"), false;
  if (o->rv != t->rv) return snprintf(why, whylen, "rv %d, want %d", o->rv, t->rv), false;
  if (o->c.n != t->n) return snprintf(why, whylen, "%zu events, want %zu", o->c.n, t->n), false;
  if (t->rv == 0 && o->pending != t->pending)
    return snprintf(why, whylen, "pending %d, want %d", o->pending, t->pending), false;
  for (size_t i = 0; i < t->n; i++) {
    const got_ev *g = &o->c.ev[i];
    const want_ev *w = &t->ev[i];
    const char *wtype = w->type ? w->type : "message";
    const char *wid = w->id ? w->id : "";
    if (strcmp(g->type, wtype) != 0) return snprintf(why, whylen, "event %zu type '%s'", i, g->type), false;
    if (g->data_len != strlen(w->data) || memcmp(g->data, w->data, g->data_len) != 0)
      return snprintf(why, whylen, "event %zu data '%.*s'", i, (int)g->data_len, (const char *)g->data),
             false;
    if (strcmp(g->id, wid) != 0) return snprintf(why, whylen, "event %zu id '%s'", i, g->id), false;
    if (g->retry_ms != (w->retry_ms ? w->retry_ms : -1))
      return snprintf(why, whylen, "event %zu retry %lld", i, (long long)g->retry_ms), false;
    if (!g->terminated) return snprintf(why, whylen, "event %zu strings not NUL-terminated", i), false;
  }
  return true;
}

#define BIG_LINE "data: 0123456789012345678901234567890123456789"
#define LONG_COMMENT                                                                      \
  ": this comment is far longer than the limit of thirty-two bytes and must never count " \
  "against it however it is cut\n"

#define EV(d) \
  { NULL, d, NULL, 0 }
#define EVT(t, d) \
  { t, d, NULL, 0 }
#define EVI(d, i) \
  { NULL, d, i, 0 }
#define EVR(d, r) \
  { NULL, d, NULL, r }
#define NUL_ID "id: 1\ndata: a\n\nid: x\0y\ndata: b\n\n"

static const sse_case cases[] = {
    {"one event", "data: hello\n\n", 0, 0, 0, false, 1, {EV("hello")}},
    {"data without the space", "data:hello\n\n", 0, 0, 0, false, 1, {EV("hello")}},
    {"only one space is removed", "data:  two\n\n", 0, 0, 0, false, 1, {EV(" two")}},
    {"trailing spaces kept (trtllm-serve)", "data: {\"a\":1} \n\n", 0, 0, 0, false, 1, {EV("{\"a\":1} ")}},
    {"CRLF line ends", "data: a\r\n\r\ndata: b\r\n\r\n", 0, 0, 0, false, 2, {EV("a"), EV("b")}},
    {"CR line ends", "data: a\r\rdata: b\r\r", 0, 0, 0, false, 2, {EV("a"), EV("b")}},
    {"mixed line ends", "data: a\r\ndata: b\n\r\ndata: c\r\n\n", 0, 0, 0, false, 2, {EV("a\nb"), EV("c")}},
    {"CR CR LF is two line ends", "data: a\r\r\ndata: b\n\n", 0, 0, 0, false, 2, {EV("a"), EV("b")}},
    {"multi-line data joined with LF", "data: a\ndata: b\ndata: c\n\n", 0, 0, 0, false, 1, {EV("a\nb\nc")}},
    {"empty data lines", "data\n\ndata:\n\ndata:\ndata:\n\n", 0, 0, 0, false, 3, {EV(""), EV(""), EV("\n")}},
    {"comments ignored",
     ": keep-alive\n\ndata: x\n: in between\ndata: y\n\n:\n\n",
     0,
     0,
     0,
     false,
     1,
     {EV("x\ny")}},
    {"event type, then back to message",
     "event: error\ndata: {}\n\ndata: 2\n\n",
     0,
     0,
     0,
     false,
     2,
     {EVT("error", "{}"), EV("2")}},
    {"type without data is forgotten", "event: ping\n\ndata: z\n\n", 0, 0, 0, false, 1, {EV("z")}},
    {"last event id persists",
     "id: 7\ndata: a\n\ndata: b\n\nid\ndata: c\n\n",
     0,
     0,
     0,
     false,
     3,
     {EVI("a", "7"), EVI("b", "7"), EVI("c", "")}},
    {"id holding NUL ignored", NUL_ID, sizeof(NUL_ID) - 1, 0, 0, false, 2, {EVI("a", "1"), EVI("b", "1")}},
    {"retry digits only",
     "retry: 1500\ndata: a\n\nretry: 12a\ndata: b\n\nretry:\ndata: c\n\n",
     0,
     0,
     0,
     false,
     3,
     {EVR("a", 1500), EVR("b", 1500), EVR("c", 1500)}},
    {"unknown fields and names without colon",
     "foo: bar\ndata: a\nbaz\nData: no\n\n",
     0,
     0,
     0,
     false,
     1,
     {EV("a")}},
    {"colons inside the value", "data: a:b: c\n\n", 0, 0, 0, false, 1, {EV("a:b: c")}},
    {"BOM at the start dropped",
     "\xEF\xBB\xBF"
     "data: a\n\n",
     0,
     0,
     0,
     false,
     1,
     {EV("a")}},
    {"second BOM is content (unknown field)",
     "\xEF\xBB\xBF\xEF\xBB\xBF"
     "data: a\n\ndata: b\n\n",
     0,
     0,
     0,
     false,
     1,
     {EV("b")}},
    {"half a BOM is content",
     "\xEF\xBB"
     "data: a\n\ndata: b\n\n",
     0,
     0,
     0,
     false,
     1,
     {EV("b")}},
    {"BOM then comment", "\xEF\xBB\xBF: hi\ndata: a\n\n", 0, 0, 0, false, 1, {EV("a")}},
    {"last event without blank line is not dispatched", "data: a\n\ndata: b\n", 0, 0, 0, true, 1, {EV("a")}},
    {"unterminated line", "data: a", 0, 0, 0, true, 0, {EV("")}},
    {"unterminated comment is not pending", "data: a\n\n: ping", 0, 0, 0, false, 1, {EV("a")}},
    {"only blank lines", "\n\n\r\n\r", 0, 0, 0, false, 0, {EV("")}},
    {"empty stream", "", 0, 0, 0, false, 0, {EV("")}},
    {"OpenAI chat stream",
     "data: {\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n"
     "data: {\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}\n\n"
     ": keep-alive\n\n"
     "data: {\"choices\":[],\"usage\":{\"completion_tokens\":1}}\n\n"
     "data: [DONE]\n\n",
     0,
     0,
     0,
     false,
     4,
     {EV("{\"choices\":[{\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}"),
      EV("{\"choices\":[{\"delta\":{\"content\":\"Hi\"}}]}"),
      EV("{\"choices\":[],\"usage\":{\"completion_tokens\":1}}"), EV("[DONE]")}},
    {"TGI style, no space, CRLF",
     "data:{\"token\":1}\r\n\r\ndata:{\"token\":2}\r\n\r\n",
     0,
     0,
     0,
     false,
     2,
     {EV("{\"token\":1}"), EV("{\"token\":2}")}},
    {"line at the limit passes",
     "data: 0123456789012345678901234567890123456\n\n",
     0,
     44,
     0,
     false,
     1,
     {EV("0123456789012345678901234567890123456")}},
    {"line over the limit fails after earlier events",
     "data: a\n\n" BIG_LINE "\n\n",
     0,
     32,
     TP_ETOOBIG,
     false,
     1,
     {EV("a")}},
    {"unterminated line over the limit fails", BIG_LINE, 0, 32, TP_ETOOBIG, false, 0, {EV("")}},
    {"data over the limit fails",
     "data: 0123456789\ndata: 0123456789\ndata: 0123456789\n\n",
     0,
     32,
     TP_ETOOBIG,
     false,
     0,
     {EV("")}},
    {"comments never count against the limit",
     LONG_COMMENT "data: ok\n\n" LONG_COMMENT,
     0,
     32,
     0,
     false,
     1,
     {EV("ok")}},
};

static void test_table(void) {
  char why[160];
  for (size_t k = 0; k < TP_ARRAY_LEN(cases); k++) {
    const sse_case *t = &cases[k];
    const uint8_t *in = (const uint8_t *)t->input;
    size_t len = t->input_len ? t->input_len : strlen(t->input);
    outcome o;
    run_cuts(t, in, len, NULL, 0, &o);
    bool ok = matches(t, &o, why, sizeof(why));
    CHECK(ok, "%s: whole", t->name);
    if (!ok) printf("#   %s\n", why);

    /* Byte by byte. */
    size_t cuts[1024];
    size_t n = 0;
    for (size_t i = 1; i < len && n < TP_ARRAY_LEN(cuts); i++) cuts[n++] = i;
    run_cuts(t, in, len, cuts, n, &o);
    ok = matches(t, &o, why, sizeof(why));
    CHECK(ok, "%s: byte by byte", t->name);
    if (!ok) printf("#   %s\n", why);

    /* Two pieces at every offset, and three pieces at every pair. */
    size_t bad2 = 0, bad3 = 0, runs3 = 0;
    char first_bad[400] = "";
    for (size_t i = 0; i <= len; i++) {
      size_t c1[1] = {i};
      run_cuts(t, in, len, c1, 1, &o);
      if (!matches(t, &o, why, sizeof(why))) {
        if (!bad2++) snprintf(first_bad, sizeof(first_bad), "cut at %zu: %s", i, why);
      }
      for (size_t j = i; j <= len; j++) {
        size_t c2[2] = {i, j};
        run_cuts(t, in, len, c2, 2, &o);
        runs3++;
        if (!matches(t, &o, why, sizeof(why))) {
          if (!bad3++ && !first_bad[0]) snprintf(first_bad, sizeof(first_bad), "cuts %zu,%zu: %s", i, j, why);
        }
      }
    }
    CHECK(bad2 == 0 && bad3 == 0, "%s: split at every offset (%zu two-way, %zu three-way)", t->name, len + 1,
          runs3);
    if (bad2 || bad3) printf("#   %zu + %zu failed; first: %s\n", bad2, bad3, first_bad);
  }
}

/* ---- callback errors, reset, empty feeds -------------------------------- */

static int fail_second(tp_sse_parser *p, const tp_sse_event *ev, void *ud) {
  int *calls = ud;
  return ++*calls == 2 ? TP_EPROTO : 0;
}

static void test_callback_error(void) {
  tp_sse_parser p;
  tp_sse_init(&p, 0);
  int calls = 0;
  const char *s = "data: 1\n\ndata: 2\n\ndata: 3\n\n";
  CHECK_INT(tp_sse_feed(&p, (const uint8_t *)s, strlen(s), fail_second, &calls), TP_EPROTO,
            "the callback's code is returned");
  CHECK_INT(calls, 2, "no event after the callback stopped the feed");
  CHECK_INT(tp_sse_feed(&p, (const uint8_t *)"data: 4\n\n", 9, fail_second, &calls), TP_EINVAL,
            "a failed parser refuses more input");
  tp_sse_reset(&p);
  calls = 10;
  CHECK_INT(tp_sse_feed(&p,
                        (const uint8_t *)"\xEF\xBB\xBF"
                                         "data: 5\n\n",
                        12, fail_second, &calls),
            0, "after reset it parses again, BOM included");
  CHECK_INT(calls, 11, "one event after reset");
  tp_sse_fini(&p);
}

static void test_empty_feeds_and_state(void) {
  tp_sse_parser p;
  tp_sse_init(&p, 0);
  collector c;
  memset(&c, 0, sizeof(c));
  CHECK_INT(tp_sse_feed(&p, NULL, 0, collect, &c), 0, "empty feed with NULL data");
  CHECK(!tp_sse_pending(&p), "fresh parser has nothing pending");
  tp_sse_feed(&p, (const uint8_t *)"id: 9\nretry: 30\r", 16, collect, &c);
  CHECK_INT(tp_sse_feed(&p, NULL, 0, collect, &c), 0, "empty feed between CR and LF");
  tp_sse_feed(&p, (const uint8_t *)"\ndata: a\n", 9, collect, &c);
  CHECK(tp_sse_pending(&p), "data without blank line is pending");
  tp_sse_feed(&p, (const uint8_t *)"\n", 1, collect, &c);
  CHECK_INT(c.n, 1, "CR, empty feed, LF: one line end, one event");
  CHECK_STR(c.ev[0].id, "9", "id carried into the event");
  CHECK_INT(c.ev[0].retry_ms, 30, "retry carried into the event");
  tp_sse_reset(&p);
  memset(&c, 0, sizeof(c));
  tp_sse_feed(&p, (const uint8_t *)"data: b\n\n", 9, collect, &c);
  CHECK(c.n == 1 && c.ev[0].id[0] == 0 && c.ev[0].retry_ms == -1, "reset forgets id and retry");
  /* A huge retry saturates instead of overflowing. */
  memset(&c, 0, sizeof(c));
  const char *r = "retry: 99999999999999999999999\ndata: c\n\n";
  tp_sse_feed(&p, (const uint8_t *)r, strlen(r), collect, &c);
  CHECK(c.n == 1 && c.ev[0].retry_ms == INT64_MAX, "huge retry saturates");
  tp_sse_fini(&p);
}

/* The data pointer of an event whose single data line lay whole in one feed
 * still points into the parser (data is always gathered): check it outlives
 * the input buffer by changing the input before the callback reads it. */
typedef struct mutate_ctx {
  uint8_t *buf;
  size_t len;
  bool data_ok;
} mutate_ctx;

static int mutate_cb(tp_sse_parser *p, const tp_sse_event *ev, void *ud) {
  mutate_ctx *m = ud;
  memset(m->buf, 'X', m->len);
  m->data_ok = ev->data_len == 3 && memcmp(ev->data, "abc", 3) == 0;
  return 0;
}

static void test_data_owned(void) {
  tp_sse_parser p;
  tp_sse_init(&p, 0);
  uint8_t buf[] = "data: abc\n\n";
  mutate_ctx m = {buf, sizeof(buf) - 1, false};
  tp_sse_feed(&p, buf, sizeof(buf) - 1, mutate_cb, &m);
  CHECK(m.data_ok, "event data does not alias the caller's buffer");
  tp_sse_fini(&p);
}

/* ---- guard page ------------------------------------------------------------ */

static void test_guard_page(void) {
  long pg = sysconf(_SC_PAGESIZE);
  uint8_t *mem = mmap(NULL, (size_t)pg * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED || mprotect(mem + pg, (size_t)pg, PROT_NONE) != 0) {
    CHECK(0, "guard page set up");
    return;
  }
  uint8_t *end = mem + pg;
  size_t bad = 0, runs = 0;
  char why[160];
  for (size_t k = 0; k < TP_ARRAY_LEN(cases); k++) {
    const sse_case *t = &cases[k];
    size_t len = t->input_len ? t->input_len : strlen(t->input);
    /* Whole, ending right before the unmapped page. */
    memcpy(end - len, t->input, len);
    outcome o;
    run_cuts(t, end - len, len, NULL, 0, &o);
    runs++;
    if (!matches(t, &o, why, sizeof(why))) bad++;
    /* Every prefix as a first feed ending at the page, then the rest there. */
    for (size_t i = 0; i <= len; i++) {
      tp_sse_parser p;
      tp_sse_init(&p, t->max_event_bytes);
      memset(&o, 0, sizeof(o));
      memcpy(end - i, t->input, i);
      o.rv = tp_sse_feed(&p, end - i, i, collect, &o.c);
      memcpy(end - (len - i), t->input + i, len - i);
      if (o.rv == 0) o.rv = tp_sse_feed(&p, end - (len - i), len - i, collect, &o.c);
      o.pending = tp_sse_pending(&p);
      tp_sse_fini(&p);
      runs++;
      if (!matches(t, &o, why, sizeof(why))) bad++;
    }
  }
  CHECK(bad == 0, "guard page: %zu runs with input ending at an unmapped page read nothing beyond it", runs);
  munmap(mem, (size_t)pg * 2);
}

int main(void) {
  test_table();
  test_callback_error();
  test_empty_feeds_and_state();
  test_data_owned();
  test_guard_page();
  return tp_test_done();
}

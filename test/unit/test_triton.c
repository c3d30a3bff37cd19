/* The Triton adapter against the byte-exact worked examples of the KServe v2
 * wire format, decoded by hand here rather
 * than by the code under test; and the in-place response decoder (issue
 * #8) against the protobuf-c decoder it replaced, on hand-made byte strings
 * for every wire-format edge, on messages protobuf-c packs, at every
 * truncation, and right before an unmapped page. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "api/tp_triton.h"
#include "grpc_service.pb-c.h"
#include "tp_test.h"
#include "transport/tp_grpc.h"
#include "tokperf/tokperf.h"

static size_t unhex(const char *hex, uint8_t *out) {
  size_t n = 0;
  while (*hex) {
    while (*hex == ' ') hex++;
    if (!*hex) break;
    unsigned v;
    sscanf(hex, "%2x", &v);
    out[n++] = (uint8_t)v;
    hex += 2;
  }
  return n;
}

/* ModelStreamInferResponse carrying " me", unframed. */
static size_t example_me(uint8_t *out) {
  uint8_t *p = out;
  p += unhex("12 52 0a 0a", p);
  memcpy(p, "vllm_model", 10), p += 10;
  p += unhex("12 01 31 1a 02 72 31 22 1b 0a 15", p);
  memcpy(p, "triton_final_response", 21), p += 21;
  p += unhex("12 02 08 00 2a 17 0a 0b", p);
  memcpy(p, "text_output", 11), p += 11;
  p += unhex("12 05", p);
  memcpy(p, "BYTES", 5), p += 5;
  p += unhex("1a 01 01 32 07 03 00 00 00 20 6d 65", p);
  return (size_t)(p - out);
}

static void test_parse_examples(void) {
  uint8_t buf[256];
  size_t n = example_me(buf);
  CHECK_INT(n, 84, "worked example: 84 bytes unframed (89 framed)");
  tp_triton_event ev;
  CHECK_INT(tp_triton_parse_response(&ev, buf, n, true), 0, "delta response parses");
  CHECK_MEM(ev.id, ev.id_len, "r1", 2, "id echoed");
  CHECK_MEM(ev.text, ev.text_len, " me", 3, "text_output element 0 is \" me\"");
  CHECK(ev.text == buf + n - 3 && ev.id == (const char *)buf + 19, "text and id point into the message");
  CHECK(ev.has_final_param && !ev.final, "triton_final_response=false");
  CHECK(ev.error == NULL && ev.error_len == 0, "no error");
  CHECK_INT(ev.num_output_tokens, -1, "no server token count");

  /* Empty final response: 47 bytes. */
  uint8_t *p = buf;
  p += unhex("12 2d 0a 0a", p);
  memcpy(p, "vllm_model", 10), p += 10;
  p += unhex("1a 02 72 31 22 1b 0a 15", p);
  memcpy(p, "triton_final_response", 21), p += 21;
  p += unhex("12 02 08 01", p);
  n = (size_t)(p - buf);
  CHECK_INT(n, 47, "empty final: 47 bytes");
  CHECK_INT(tp_triton_parse_response(&ev, buf, n, true), 0, "empty final parses");
  CHECK(ev.final && ev.has_final_param, "final flag set");
  CHECK(ev.text == NULL && ev.text_len == 0, "no text");

  /* In-band error: 12 bytes. */
  n = unhex("0a 04 62 6f 6f 6d 12 04 1a 02 72 31", buf);
  CHECK_INT(tp_triton_parse_response(&ev, buf, n, true), 0, "in-band error parses");
  CHECK_MEM(ev.error, ev.error_len, "boom", 4, "error_message");
  CHECK(ev.final, "an error ends its request");
  CHECK_MEM(ev.id, ev.id_len, "r1", 2, "error carries the id");

  /* Truncated message: an error, and the event says nothing. */
  n = example_me(buf);
  CHECK_INT(tp_triton_parse_response(&ev, buf, n - 3, true), TP_EPROTO, "truncated message rejected");
  CHECK(ev.text == NULL && ev.id == NULL && !ev.final && ev.num_output_tokens == -1,
        "nothing left after an error");

  /* The element's length prefix claims more than there is. */
  n = example_me(buf);
  buf[n - 7] = 0x30;
  CHECK_INT(tp_triton_parse_response(&ev, buf, n, true), TP_EPROTO, "overlong BYTES element rejected");
}

/* ---- the in-place response decoder (issue #8) ---------------------------
 *
 * Every case is decoded twice: by tp_triton_parse_response and by the
 * protobuf-c reference it replaced (tp__triton_parse_response_pbc), which
 * must agree on validity and on every field; the cases then check what the
 * answer is. */

/* Counting allocator: the decoder must not allocate. */
#include "tp_alloc_count.h"

/* A protobuf writer for hand-made messages: lengths are computed, every
 * other byte is chosen by the case. */
typedef struct wbuf {
  uint8_t b[2048];
  size_t n;
} wbuf;

static void w_bytes(wbuf *w, const void *p, size_t n) {
  memcpy(w->b + w->n, p, n);
  w->n += n;
}
static void w_varint(wbuf *w, uint64_t v) {
  do {
    uint8_t c = v & 0x7f;
    v >>= 7;
    w->b[w->n++] = (uint8_t)(c | (v ? 0x80 : 0));
  } while (v);
}
static void w_tag(wbuf *w, uint32_t field, unsigned wt) {
  w_varint(w, (uint64_t)field << 3 | wt);
}
static void w_vfield(wbuf *w, uint32_t field, uint64_t v) {
  w_tag(w, field, 0);
  w_varint(w, v);
}
static void w_len(wbuf *w, uint32_t field, const void *p, size_t n) {
  w_tag(w, field, 2);
  w_varint(w, n);
  w_bytes(w, p, n);
}
static void w_str(wbuf *w, uint32_t field, const char *s) {
  w_len(w, field, s, strlen(s));
}
static void w_sub(wbuf *w, uint32_t field, const wbuf *sub) {
  w_len(w, field, sub->b, sub->n);
}
static void w_hex(wbuf *w, const char *hex) {
  w->n += unhex(hex, w->b + w->n);
}

/* A parameters map entry whose value is the InferParameter bytes `value`. */
static void w_entry(wbuf *w, uint32_t field, const char *key, size_t key_len, const wbuf *value) {
  wbuf e = {.n = 0};
  w_len(&e, 1, key, key_len);
  if (value) w_sub(&e, 2, value);
  w_sub(w, field, &e);
}
static void w_final(wbuf *w, int v) {
  wbuf val = {.n = 0};
  w_vfield(&val, 1, (uint64_t)v);
  w_entry(w, 4, "triton_final_response", 21, &val);
}
/* An output tensor: name, datatype BYTES, shape [1] packed, then `extra`. */
static void w_output(wbuf *w, const char *name, const wbuf *extra) {
  wbuf t = {.n = 0};
  w_str(&t, 1, name);
  w_str(&t, 2, "BYTES");
  w_hex(&t, "1a 01 01");
  if (extra) w_bytes(&t, extra->b, extra->n);
  w_sub(w, 5, &t);
}
/* A raw_output_contents entry holding one BYTES element. */
static void w_raw_text(wbuf *w, const char *text) {
  uint8_t e[256];
  size_t n = strlen(text);
  for (int k = 0; k < 4; k++) e[k] = (uint8_t)(n >> (8 * k));
  memcpy(e + 4, text, n);
  w_len(w, 6, e, n + 4);
}
static void w_stream(wbuf *out, const wbuf *infer) {
  out->n = 0;
  w_sub(out, 2, infer);
}

static bool bytes_eq(const void *a, size_t an, const void *b, size_t bn) {
  return !a == !b && an == bn && (an == 0 || memcmp(a, b, an) == 0);
}
static bool events_eq(const tp_triton_event *a, const tp_triton_event *b) {
  return bytes_eq(a->id, a->id_len, b->id, b->id_len) &&
         bytes_eq(a->text, a->text_len, b->text, b->text_len) &&
         bytes_eq(a->error, a->error_len, b->error, b->error_len) && a->final == b->final &&
         a->has_final_param == b->has_final_param && a->num_output_tokens == b->num_output_tokens;
}

/* Decodes p[0..n) both ways without printing; true when they agree. */
static bool agree(const uint8_t *p, size_t n, bool stream, int *rv_out, tp_triton_event *ev) {
  tp_triton_resp r;
  tp_triton_event ref;
  int rv = tp_triton_parse_response(ev, p, n, stream);
  int rv_ref = tp__triton_parse_response_pbc(&r, &ref, p, n, stream);
  bool same = rv == rv_ref && events_eq(ev, &ref);
  tp__triton_resp_free(&r);
  if (rv_out) *rv_out = rv;
  return same;
}

/* One checked case: both decoders agree, and the result is want_rv. */
static int dec_case(const wbuf *m, bool stream, int want_rv, tp_triton_event *ev, const char *what) {
  int rv;
  bool same = agree(m->b, m->n, stream, &rv, ev);
  CHECK(same && rv == want_rv, "%s: %s, as protobuf-c", what, want_rv ? "invalid" : "valid");
  if (!same || rv != want_rv)
    printf("#   rv %d, want %d, decoders %s\n", rv, want_rv, same ? "agree" : "DIFFER");
  return rv;
}

static bool text_is(const tp_triton_event *ev, const char *s) {
  return ev->text && ev->text_len == strlen(s) && memcmp(ev->text, s, ev->text_len) == 0;
}
static bool id_is(const tp_triton_event *ev, const char *s) {
  return ev->id && ev->id_len == strlen(s) && memcmp(ev->id, s, ev->id_len) == 0;
}

/* The usual streamed delta, built by hand: id r1, final false, " me". */
static void base_infer(wbuf *ir, const char *unk_where, const wbuf *unk) {
  wbuf val = {.n = 0}, entry = {.n = 0}, contents = {.n = 0}, extra = {.n = 0};
  ir->n = 0;
  w_str(ir, 1, "vllm_model");
  w_str(ir, 3, "r1");
  w_vfield(&val, 1, 0);
  if (unk && strcmp(unk_where, "value") == 0) w_bytes(&val, unk->b, unk->n);
  w_str(&entry, 1, "triton_final_response");
  w_sub(&entry, 2, &val);
  if (unk && strcmp(unk_where, "entry") == 0) w_bytes(&entry, unk->b, unk->n);
  w_sub(ir, 4, &entry);
  w_hex(&contents, "08 01");
  if (unk && strcmp(unk_where, "contents") == 0) w_bytes(&contents, unk->b, unk->n);
  w_sub(&extra, 5, &contents);
  if (unk && strcmp(unk_where, "output") == 0) w_bytes(&extra, unk->b, unk->n);
  w_output(ir, "text_output", &extra);
  w_raw_text(ir, " me");
  if (unk && strcmp(unk_where, "infer") == 0) w_bytes(ir, unk->b, unk->n);
}

static void test_decode_unknown_fields(void) {
  static const char *const where[] = {"top", "infer", "output", "contents", "entry", "value"};
  static const char *const unknown[] = {"78 96 01",                   /* 15: varint */
                                        "79 01 02 03 04 05 06 07 08", /* 15: 64-bit */
                                        "7a 03 0a 01 00",             /* 15: length-delimited */
                                        "7d 01 02 03 04",             /* 15: 32-bit */
                                        "80 01 00",                   /* 16: two-byte tag */
                                        "f8 ff ff ff 0f 00"};         /* 2^32 - 1: five-byte tag */
  for (size_t w = 0; w < TP_ARRAY_LEN(where); w++)
    for (size_t u = 0; u < TP_ARRAY_LEN(unknown); u++) {
      wbuf unk = {.n = 0}, ir, m;
      w_hex(&unk, unknown[u]);
      base_infer(&ir, where[w], &unk);
      w_stream(&m, &ir);
      if (strcmp(where[w], "top") == 0) w_bytes(&m, unk.b, unk.n);
      char what[96];
      snprintf(what, sizeof(what), "unknown field %s in %s", unknown[u], where[w]);
      tp_triton_event ev;
      dec_case(&m, true, 0, &ev, what);
      CHECK(text_is(&ev, " me") && id_is(&ev, "r1") && ev.has_final_param && !ev.final, "%s: skipped", what);
    }
  /* Field number 0 is refused in a one-byte tag (protobuf-c), and wire
   * types 3, 4 (groups), 6 and 7 anywhere. */
  static const char *const bad[] = {"00", "02 00", "7b", "7c", "7e 00", "7f 00", "0b", "0c"};
  for (size_t w = 0; w < TP_ARRAY_LEN(where); w++)
    for (size_t u = 0; u < TP_ARRAY_LEN(bad); u++) {
      wbuf unk = {.n = 0}, ir, m;
      w_hex(&unk, bad[u]);
      base_infer(&ir, where[w], &unk);
      w_stream(&m, &ir);
      if (strcmp(where[w], "top") == 0) w_bytes(&m, unk.b, unk.n);
      char what[96];
      snprintf(what, sizeof(what), "tag %s in %s", bad[u], where[w]);
      tp_triton_event ev;
      dec_case(&m, true, TP_EPROTO, &ev, what);
    }
}

static void test_decode_order_and_repeats(void) {
  wbuf ir = {.n = 0}, m;
  tp_triton_event ev;

  /* Fields in any order: raw first, id last. */
  w_raw_text(&ir, "abc");
  w_final(&ir, 1);
  w_output(&ir, "text_output", NULL);
  w_str(&ir, 2, "1");
  w_str(&ir, 3, "late");
  dec_case(&ir, false, 0, &ev, "unary, raw entry before its output, id last");
  CHECK(text_is(&ev, "abc") && id_is(&ev, "late") && ev.final && ev.has_final_param,
        "fields found in any order");

  /* Singular fields: the last one wins. */
  ir.n = 0;
  w_str(&ir, 3, "first");
  w_output(&ir, "text_output", NULL);
  w_raw_text(&ir, "x");
  w_str(&ir, 3, "second");
  w_final(&ir, 1);
  w_final(&ir, 0);
  w_stream(&m, &ir);
  w_str(&m, 1, "err one");
  w_str(&m, 1, "err two");
  dec_case(&m, true, 0, &ev, "id, final and error_message twice");
  CHECK(id_is(&ev, "second") && ev.final && ev.has_final_param, "last id; an error is final");
  CHECK(ev.error && ev.error_len == 7 && memcmp(ev.error, "err two", 7) == 0, "last error_message");
  m.n = 0;
  w_str(&m, 1, "boom");
  w_str(&m, 1, "");
  w_sub(&m, 2, &ir);
  dec_case(&m, true, 0, &ev, "error_message, then an empty one");
  CHECK(ev.error == NULL && !ev.final, "the empty one wins: no error, not final");

  /* The output name: last one wins. */
  wbuf extra = {.n = 0};
  ir.n = 0;
  w_str(&extra, 1, "text_output");
  w_output(&ir, "other", &extra);
  w_raw_text(&ir, "yes");
  dec_case(&ir, false, 0, &ev, "output named twice, text_output last");
  CHECK(text_is(&ev, "yes"), "the last name counts");
  ir.n = 0;
  extra.n = 0;
  w_str(&extra, 1, "other");
  w_output(&ir, "text_output", &extra);
  w_raw_text(&ir, "no");
  dec_case(&ir, false, 0, &ev, "output named twice, text_output first");
  CHECK(ev.text == NULL, "renamed away: no text");

  /* infer_response twice: merged, so outputs and raw entries number on
   * across both and the later id wins. */
  wbuf a = {.n = 0}, b = {.n = 0};
  w_str(&a, 3, "a");
  w_output(&a, "finish_reason", NULL);
  w_output(&a, "text_output", NULL);
  w_raw_text(&a, "stop");
  w_str(&b, 3, "b");
  w_raw_text(&b, "merged");
  w_final(&b, 1);
  m.n = 0;
  w_sub(&m, 2, &a);
  w_sub(&m, 2, &b);
  dec_case(&m, true, 0, &ev, "infer_response twice");
  CHECK(text_is(&ev, "merged") && id_is(&ev, "b") && ev.final,
        "outputs of the first pair with raw of the second");
  b.n = 0;
  w_raw_text(&b, "merged");
  m.n = 0;
  w_sub(&m, 2, &a);
  w_sub(&m, 2, &b);
  dec_case(&m, true, 0, &ev, "infer_response twice, the second without id");
  CHECK(id_is(&ev, "a"), "an id absent from the later one is kept");

  /* Many outputs, raw entries interleaved with them. */
  static const char *const names[] = {"a", "b", "num_output_tokens", "c", "d", "text_output", "e"};
  ir.n = 0;
  for (size_t i = 0; i < TP_ARRAY_LEN(names); i++) {
    char raw[16];
    snprintf(raw, sizeof(raw), "raw%zu", i);
    if (i % 2) w_raw_text(&ir, raw);
    w_output(&ir, names[i], NULL);
    if (i % 2 == 0 && i != 2) w_raw_text(&ir, raw);
    if (i == 2) w_hex(&ir, "32 04 07 00 00 00");
  }
  dec_case(&ir, false, 0, &ev, "seven outputs, raw entries interleaved");
  CHECK(text_is(&ev, "raw5") && ev.num_output_tokens == 7, "outputs[i] goes with raw_output_contents[i]");
}

static void test_decode_scalars(void) {
  wbuf ir, m, t;
  tp_triton_event ev;

  /* shape packed and unpacked. */
  ir.n = 0;
  t.n = 0;
  w_str(&t, 1, "text_output");
  w_hex(&t, "18 01 18 ff ff ff ff ff ff ff ff ff 01 1a 03 01 80 01");
  w_sub(&ir, 5, &t);
  w_raw_text(&ir, "s");
  dec_case(&ir, false, 0, &ev, "shape unpacked (-1 in 10 bytes) and packed");
  CHECK(text_is(&ev, "s"), "shape read past");
  static const char *const bad_shape[] = {"1a 02 01 80", "1d 01 00 00 00", "19 00 00 00 00 00 00 00 00",
                                          "1a 0b ff ff ff ff ff ff ff ff ff ff 01"};
  for (size_t i = 0; i < TP_ARRAY_LEN(bad_shape); i++) {
    ir.n = 0;
    t.n = 0;
    w_str(&t, 1, "x");
    w_hex(&t, bad_shape[i]);
    w_sub(&ir, 5, &t);
    char what[80];
    snprintf(what, sizeof(what), "shape %s", bad_shape[i]);
    dec_case(&ir, false, TP_EPROTO, &ev, what);
  }

  /* InferTensorContents: each field's wire types, packed or not. */
  static const struct {
    const char *hex;
    int rv;
  } contents[] = {
      {"08 01 0a 02 01 00 0d 00 00 00 01", 0}, /* bool: varint, packed, and any wire type */
      {"0a 02 80 01", 0},                      /* packed bool: any varint */
      {"0a 01 80", TP_EPROTO},                 /* packed varint cut short */
      {"10 05 12 02 05 06 18 07 1a 00 20 01 2a 01 02", 0},
      {"15 00 00 00 00", TP_EPROTO},           /* int_contents as 32-bit */
      {"35 00 00 80 3f 32 04 00 00 80 3f", 0}, /* fp32 */
      {"32 03 00 00 80", TP_EPROTO},           /* packed fp32 not a multiple of 4 */
      {"30 01", TP_EPROTO},                    /* fp32 as a varint */
      {"39 00 00 00 00 00 00 f0 3f 3a 08 00 00 00 00 00 00 f0 3f", 0},
      {"3a 04 00 00 00 00", TP_EPROTO},
      {"40 00", TP_EPROTO}, /* bytes_contents as a varint */
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(contents); i++) {
    wbuf c = {.n = 0}, extra = {.n = 0};
    w_hex(&c, contents[i].hex);
    w_sub(&extra, 5, &c);
    ir.n = 0;
    w_output(&ir, "t", &extra);
    char what[96];
    snprintf(what, sizeof(what), "contents %s", contents[i].hex);
    dec_case(&ir, false, contents[i].rv, &ev, what);
  }

  /* Varints: 10 bytes at most. */
  ir.n = 0;
  w_str(&ir, 3, "v");
  w_hex(&ir, "78 ff ff ff ff ff ff ff ff ff 7f");
  dec_case(&ir, false, 0, &ev, "unknown varint of 10 bytes");
  ir.n = 0;
  w_hex(&ir, "78 ff ff ff ff ff ff ff ff ff ff 01");
  dec_case(&ir, false, TP_EPROTO, &ev, "varint of 11 bytes");
  ir.n = 0;
  w_hex(&ir, "78 ff");
  dec_case(&ir, false, TP_EPROTO, &ev, "varint cut short");

  /* Lengths. */
  static const struct {
    const char *hex, *what;
    int rv;
  } lens[] = {
      {"1a 03 61 62", "length past the end", TP_EPROTO},
      {"1a 82 80 80 80 00 61 62", "length in 5 bytes (over-long)", 0},
      {"1a 82 80 80 80 80 00 61 62", "length in 6 bytes", TP_EPROTO},
      {"1a 81 80 80 80 10 61", "length 2^32 + 1", TP_EPROTO},
      {"1a ff ff ff ff 0f 61", "length 2^32 - 1", TP_EPROTO},
      {"1a 80", "length cut short", TP_EPROTO},
      {"1a", "no length", TP_EPROTO},
      {"31 00 00 00 00 00 00 00", "64-bit value cut short", TP_EPROTO},
      {"35 00 00 00", "32-bit value cut short", TP_EPROTO},
      {"9a 80 80 80 00 01 61", "id behind a 5-byte tag", 0},
      {"9a 80 80 80 80 00 01 61", "tag in 6 bytes", TP_EPROTO},
      {"80", "tag cut short", TP_EPROTO},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(lens); i++) {
    ir.n = 0;
    w_hex(&ir, lens[i].hex);
    dec_case(&ir, false, lens[i].rv, &ev, lens[i].what);
    w_stream(&m, &ir);
    dec_case(&m, true, lens[i].rv, &ev, lens[i].what);
  }
  ir.n = 0;
  w_hex(&ir, "9a 80 80 80 00 01 61");
  tp_triton_parse_response(&ev, ir.b, ir.n, false);
  CHECK(id_is(&ev, "a"), "a 5-byte tag for field 3 is the id");

  /* Known fields with the wrong wire type are errors (not skipped). */
  static const char *const wrong[] = {"18 01", "0d 00 00 00 00", "11 00 00 00 00 00 00 00 00",
                                      "20 00", "28 00",          "30 00"};
  for (size_t i = 0; i < TP_ARRAY_LEN(wrong); i++) {
    ir.n = 0;
    w_hex(&ir, wrong[i]);
    char what[64];
    snprintf(what, sizeof(what), "known field as %s", wrong[i]);
    dec_case(&ir, false, TP_EPROTO, &ev, what);
  }
  m.n = 0;
  w_hex(&m, "08 00");
  dec_case(&m, true, TP_EPROTO, &ev, "error_message as a varint");
  m.n = 0;
  w_hex(&m, "15 00 00 00 00");
  dec_case(&m, true, TP_EPROTO, &ev, "infer_response as 32-bit");
}

static void test_decode_params(void) {
  wbuf ir, val;
  tp_triton_event ev;
  /* bool_param in every wire type protobuf-c takes for a bool. */
  static const struct {
    const char *hex, *what;
    int final;
  } bools[] = {
      {"08 01", "varint 1", 1},
      {"08 80 00", "over-long 0", 0},
      {"08 80 80 80 80 80 80 80 80 80 01", "10 bytes, only bit 63", 1},
      {"08 80 80 80 80 80 80 80 80 80 02", "10 bytes, beyond bit 63", 1},
      {"0d 00 00 00 01", "32-bit", 1},
      {"09 00 00 00 00 00 00 00 00", "64-bit zero", 0},
      {"0a 00", "length-delimited, empty", 0},
      {"0a 01 00", "length-delimited, the length byte counts", 1},
      {"10 05 08 01", "int64 then bool", 1},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(bools); i++) {
    ir.n = 0;
    val.n = 0;
    w_hex(&val, bools[i].hex);
    w_entry(&ir, 4, "triton_final_response", 21, &val);
    wbuf m;
    w_stream(&m, &ir);
    char what[96];
    snprintf(what, sizeof(what), "bool_param %s (%s)", bools[i].hex, bools[i].what);
    dec_case(&m, true, 0, &ev, what);
    CHECK(ev.has_final_param && ev.final == bools[i].final, "%s: final = %d", what, bools[i].final);
  }
  static const struct {
    const char *hex, *what;
    int rv;
    bool has_final;
  } other[] = {
      {"08 01 10 05", "bool then int64: not a bool", 0, false},
      {"10 01", "int64_param", 0, false},
      {"1a 04 74 72 75 65", "string_param", 0, false},
      {"21 00 00 00 00 00 00 f0 3f", "double_param", 0, false},
      {"28 01", "uint64_param", 0, false},
      {"", "no member set", 0, false},
      {"12 01 00", "int64_param length-delimited", TP_EPROTO, false},
      {"1d 00 00 00 00", "string_param as 32-bit", TP_EPROTO, false},
      {"25 00 00 00 00", "double_param as 32-bit", TP_EPROTO, false},
      {"28 80", "uint64_param cut short", TP_EPROTO, false},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(other); i++) {
    ir.n = 0;
    val.n = 0;
    w_hex(&val, other[i].hex);
    w_entry(&ir, 4, "triton_final_response", 21, &val);
    char what[96];
    snprintf(what, sizeof(what), "triton_final_response as %s", other[i].what);
    dec_case(&ir, false, other[i].rv, &ev, what);
    if (other[i].rv == 0) CHECK(ev.has_final_param == other[i].has_final, "%s: not the flag", what);
  }

  /* A value given twice in one entry is merged, as protobuf-c does it. */
  static const struct {
    const char *first, *second, *what;
    int rv;
    int final; /* -1: no flag */
  } merges[] = {
      {"08 01", "08 00", "bool, then bool", 0, 0},
      {"08 01", "", "bool, then nothing", 0, 1},
      {"", "08 01", "nothing, then bool", 0, 1},
      {"", "", "nothing twice", TP_EPROTO, -1},
      {"78 01", "", "an unknown field, then nothing", TP_EPROTO, -1},
      {"1a 00", "", "string, then nothing", 0, -1},
      {"10 01", "08 01", "int64, then bool", 0, 1},
      {"08 01", "10 01", "bool, then int64", 0, -1},
  };
  for (size_t i = 0; i < TP_ARRAY_LEN(merges); i++) {
    wbuf v1 = {.n = 0}, v2 = {.n = 0}, e = {.n = 0};
    w_hex(&v1, merges[i].first);
    w_hex(&v2, merges[i].second);
    w_str(&e, 1, "triton_final_response");
    w_sub(&e, 2, &v1);
    w_sub(&e, 2, &v2);
    ir.n = 0;
    w_sub(&ir, 4, &e);
    wbuf sm;
    w_stream(&sm, &ir);
    char what[96];
    snprintf(what, sizeof(what), "value twice: %s", merges[i].what);
    dec_case(&sm, true, merges[i].rv, &ev, what);
    if (merges[i].rv == 0)
      CHECK(ev.has_final_param == (merges[i].final >= 0) &&
                (merges[i].final < 0 || !ev.final == !merges[i].final),
            "%s: flag %d", what, merges[i].final);
  }
  /* ...also inside an output's parameters, where nothing is read. */
  {
    wbuf e = {.n = 0}, extra = {.n = 0};
    w_hex(&e, "0a 01 6b 12 00 12 00");
    w_sub(&extra, 4, &e);
    ir.n = 0;
    w_output(&ir, "text_output", &extra);
    dec_case(&ir, false, TP_EPROTO, &ev, "tensor parameter with an empty value twice");
  }

  /* Keys are C strings; the flag is the last entry that is a bool. */
  val.n = 0;
  w_vfield(&val, 1, 1);
  ir.n = 0;
  w_entry(&ir, 4, "triton_final_response\0ignored", 29, &val);
  dec_case(&ir, false, 0, &ev, "key with a NUL inside");
  CHECK(ev.has_final_param, "the key ends at the NUL");
  ir.n = 0;
  w_entry(&ir, 4, "triton_final_respons", 20, &val);
  w_entry(&ir, 4, "triton_final_responsex", 22, &val);
  w_entry(&ir, 4, "triton_final_response", 21, NULL);
  dec_case(&ir, false, 0, &ev, "near-miss keys, and the key without a value");
  CHECK(!ev.has_final_param, "none of them is the flag");
  ir.n = 0;
  w_final(&ir, 1);
  wbuf i64 = {.n = 0};
  w_vfield(&i64, 2, 0);
  w_entry(&ir, 4, "triton_final_response", 21, &i64);
  wbuf m;
  w_stream(&m, &ir);
  dec_case(&m, true, 0, &ev, "bool flag, then the same key as int64");
  CHECK(ev.has_final_param && ev.final, "the int64 entry does not reset the flag");
}

static void test_decode_text(void) {
  wbuf ir, m, extra, c;
  tp_triton_event ev;

  /* Typed contents when the raw entry is empty or missing. */
  ir.n = 0;
  extra.n = 0;
  c.n = 0;
  w_str(&c, 8, "typed");
  w_str(&c, 8, "second element");
  w_sub(&extra, 5, &c);
  w_output(&ir, "text_output", &extra);
  w_len(&ir, 6, "", 0);
  dec_case(&ir, false, 0, &ev, "typed bytes_contents, empty raw entry");
  CHECK(text_is(&ev, "typed"), "element 0 of bytes_contents");
  ir.n = 0;
  w_output(&ir, "text_output", &extra);
  dec_case(&ir, false, 0, &ev, "typed bytes_contents, no raw entry");
  CHECK(text_is(&ev, "typed"), "element 0 without raw entries");
  ir.n = 0;
  extra.n = 0;
  c.n = 0;
  w_hex(&c, "42 00");
  w_sub(&extra, 5, &c);
  w_str(&c, 8, "x");
  w_sub(&extra, 5, &c);
  w_output(&ir, "text_output", &extra);
  dec_case(&ir, false, 0, &ev, "empty typed element, contents given twice");
  CHECK(ev.text == NULL && ev.text_len == 0, "an empty typed element is no text");

  /* Raw elements. */
  ir.n = 0;
  w_output(&ir, "text_output", NULL);
  w_hex(&ir, "32 04 00 00 00 00");
  dec_case(&ir, false, 0, &ev, "raw element of length 0");
  CHECK(ev.text != NULL && ev.text_len == 0, "empty text, but text");
  static const char *const bad_raw[] = {"32 03 01 00 00", "32 05 02 00 00 00 61", "32 04 ff ff ff ff"};
  for (size_t i = 0; i < TP_ARRAY_LEN(bad_raw); i++) {
    ir.n = 0;
    w_output(&ir, "text_output", NULL);
    w_hex(&ir, bad_raw[i]);
    char what[80];
    snprintf(what, sizeof(what), "raw text element %s", bad_raw[i]);
    dec_case(&ir, false, TP_EPROTO, &ev, what);
  }
  ir.n = 0;
  w_output(&ir, "finish_reason", NULL);
  w_hex(&ir, "32 03 01 00 00");
  dec_case(&ir, false, 0, &ev, "a bad element in another output");
  ir.n = 0;
  w_output(&ir, "text_output", NULL);
  w_output(&ir, "text_output", NULL);
  w_raw_text(&ir, "one");
  dec_case(&ir, false, 0, &ev, "a second text_output without data");
  CHECK(text_is(&ev, "one"), "keeps the first one's text");
  ir.n = 0;
  w_output(&ir, "text_output", NULL);
  w_output(&ir, "text_output", NULL);
  w_raw_text(&ir, "one");
  w_raw_text(&ir, "two");
  dec_case(&ir, false, 0, &ev, "two text_output outputs with data");
  CHECK(text_is(&ev, "two"), "the last one wins");

  /* num_output_tokens. */
  ir.n = 0;
  w_output(&ir, "num_output_tokens", NULL);
  w_output(&ir, "text_output", NULL);
  w_hex(&ir, "32 04 2a 00 00 00");
  w_raw_text(&ir, "t");
  dec_case(&ir, false, 0, &ev, "num_output_tokens and text");
  CHECK(ev.num_output_tokens == 42 && text_is(&ev, "t"), "42 tokens");
  ir.n = 0;
  w_output(&ir, "num_output_tokens", NULL);
  w_hex(&ir, "32 03 2a 00 00");
  dec_case(&ir, false, 0, &ev, "num_output_tokens shorter than 4 bytes");
  CHECK(ev.num_output_tokens == -1, "ignored");

  /* Strings end at a NUL. */
  m.n = 0;
  w_len(&m, 1, "bo\0om", 5);
  dec_case(&m, true, 0, &ev, "error_message with a NUL inside");
  CHECK(ev.error && ev.error_len == 2 && ev.final, "read up to the NUL");
  m.n = 0;
  w_len(&m, 1, "\0boom", 5);
  dec_case(&m, true, 0, &ev, "error_message starting with a NUL");
  CHECK(ev.error == NULL && !ev.final, "as empty");
  ir.n = 0;
  w_len(&ir, 3, "r\0x", 3);
  dec_case(&ir, false, 0, &ev, "id with a NUL inside");
  CHECK(id_is(&ev, "r"), "id read up to the NUL");

  /* Empty messages, and an infer_response without id. */
  m.n = 0;
  dec_case(&m, true, 0, &ev, "empty stream response");
  CHECK(ev.id == NULL && !ev.final && !ev.text, "says nothing");
  dec_case(&m, false, 0, &ev, "empty unary response");
  CHECK(id_is(&ev, "") && ev.final, "unary: final, id empty");
  w_hex(&m, "12 00");
  dec_case(&m, true, 0, &ev, "empty infer_response");
  CHECK(id_is(&ev, "") && !ev.final, "id empty, not NULL");
}

/* Random ModelStreamInferResponse / ModelInferResponse messages built and
 * packed by protobuf-c: decoded whole and at every truncation, by both. */
static uint32_t rng_state = 12345;
static uint32_t rnd(uint32_t n) {
  rng_state = rng_state * 1103515245u + 12345u;
  return (rng_state >> 16) % n;
}

static size_t random_message(uint8_t *out, size_t cap, bool stream) {
  static const char *const names[] = {"text_output", "num_output_tokens", "finish_reason", ""};
  static const char *const keys[] = {"triton_final_response", "other", ""};
  Inference__ModelInferResponse r;
  Inference__ModelInferResponse__InferOutputTensor t[4], *tp[4];
  Inference__InferTensorContents c[4];
  ProtobufCBinaryData bc[4][2];
  Inference__ModelInferResponse__ParametersEntry pe[3], *pep[3];
  Inference__InferParameter pv[3];
  ProtobufCBinaryData raw[5];
  uint8_t raw_bytes[5][16];
  int64_t shape[3] = {1, -1, 300};
  inference__model_infer_response__init(&r);
  r.model_name = rnd(2) ? "ensemble" : "";
  r.id = rnd(4) ? "req-1" : "";
  r.n_outputs = rnd(5);
  for (size_t i = 0; i < r.n_outputs; i++) {
    inference__model_infer_response__infer_output_tensor__init(&t[i]);
    t[i].name = (char *)names[rnd(4)];
    t[i].datatype = "BYTES";
    t[i].shape = shape;
    t[i].n_shape = rnd(4);
    if (rnd(3) == 0) {
      inference__infer_tensor_contents__init(&c[i]);
      c[i].n_bytes_contents = rnd(3);
      for (size_t k = 0; k < c[i].n_bytes_contents; k++) {
        bc[i][k].data = (uint8_t *)"typed text";
        bc[i][k].len = rnd(11);
      }
      c[i].bytes_contents = bc[i];
      t[i].contents = &c[i];
    }
    tp[i] = &t[i];
  }
  r.outputs = tp;
  r.n_raw_output_contents = rnd(6);
  for (size_t i = 0; i < r.n_raw_output_contents; i++) {
    size_t n = rnd(17);
    for (size_t k = 0; k < n; k++) raw_bytes[i][k] = (uint8_t)(k < 4 ? (k == 0 ? rnd(14) : 0) : 'a' + k);
    raw[i].data = raw_bytes[i];
    raw[i].len = n;
  }
  r.raw_output_contents = raw;
  r.n_parameters = rnd(4);
  for (size_t i = 0; i < r.n_parameters; i++) {
    inference__model_infer_response__parameters_entry__init(&pe[i]);
    inference__infer_parameter__init(&pv[i]);
    pe[i].key = (char *)keys[rnd(3)];
    pv[i].parameter_choice_case = (Inference__InferParameter__ParameterChoiceCase)rnd(6);
    if (pv[i].parameter_choice_case == INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_STRING_PARAM)
      pv[i].string_param = "s";
    else if (pv[i].parameter_choice_case == INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM)
      pv[i].bool_param = rnd(2);
    pe[i].value = rnd(5) ? &pv[i] : NULL;
    pep[i] = &pe[i];
  }
  r.parameters = pep;
  size_t len;
  if (stream) {
    Inference__ModelStreamInferResponse s;
    inference__model_stream_infer_response__init(&s);
    s.error_message = rnd(4) ? "" : "engine failed";
    s.infer_response = rnd(8) ? &r : NULL;
    len = inference__model_stream_infer_response__get_packed_size(&s);
    if (len > cap) return 0;
    inference__model_stream_infer_response__pack(&s, out);
  } else {
    len = inference__model_infer_response__get_packed_size(&r);
    if (len > cap) return 0;
    inference__model_infer_response__pack(&r, out);
  }
  return len;
}

static void test_decode_random(void) {
  uint8_t buf[1024];
  int n_msgs = 0, n_agree = 0, n_valid = 0, n_trunc = 0, n_trunc_agree = 0;
  int n_stream_prefix_valid = 0;
  for (int i = 0; i < 400; i++) {
    bool stream = i % 2;
    size_t n = random_message(buf, sizeof(buf), stream);
    int rv;
    tp_triton_event ev;
    n_msgs++;
    if (agree(buf, n, stream, &rv, &ev))
      n_agree++;
    else
      printf("# message %d (stream %d, %zu bytes) decoded differently\n", i, stream, n);
    /* Generated elements may announce more bytes than they hold. */
    if (rv == 0) n_valid++;
    for (size_t k = 0; k < n; k++) {
      n_trunc++;
      if (agree(buf, k, stream, &rv, &ev))
        n_trunc_agree++;
      else
        printf("# message %d cut to %zu bytes decoded differently\n", i, k);
      /* A stream response is one infer_response field (error_message
       * first): a cut inside it is never a valid message. */
      if (stream && rv == 0 && k > 0 && buf[0] == 0x12) n_stream_prefix_valid++;
    }
  }
  CHECK(n_agree == n_msgs, "%d protobuf-c-packed messages: both decoders agree on %d", n_msgs, n_agree);
  CHECK(n_valid > n_msgs / 2, "most of them are valid (%d)", n_valid);
  CHECK(n_trunc_agree == n_trunc, "%d truncations: both decoders agree on %d", n_trunc, n_trunc_agree);
  CHECK(n_stream_prefix_valid == 0, "no cut inside a stream response is valid");
}

/* Every truncation of the worked example, and the unary form of it. */
static void test_decode_truncations(void) {
  uint8_t buf[256];
  size_t n = example_me(buf);
  int bad = 0, differ = 0;
  for (size_t k = 1; k < n; k++) {
    int rv;
    tp_triton_event ev;
    if (!agree(buf, k, true, &rv, &ev)) differ++;
    if (rv != TP_EPROTO) bad++;
  }
  CHECK(bad == 0 && differ == 0, "the stream example cut at each of its %zu offsets is invalid", n - 1);
  /* Unary: the infer_response alone; a cut between its fields is a valid
   * shorter message, elsewhere it is not; protobuf-c decides the same. */
  int valid = 0;
  differ = 0;
  for (size_t k = 0; k <= n - 2; k++) {
    int rv;
    tp_triton_event ev;
    if (!agree(buf + 2, k, false, &rv, &ev)) differ++;
    if (rv == 0) valid++;
  }
  CHECK(differ == 0, "the unary example cut at every offset: same as protobuf-c");
  CHECK_INT(valid, 7, "valid where a cut falls between fields (0, 12, 15, 19, 48, 73 and all 82 bytes)");
}

/* Inputs ending right before an unmapped page: a read past the end
 * faults even without a sanitizer (picohttpparser's test does the same). */
static void test_decode_guard_page(void) {
  long page = sysconf(_SC_PAGESIZE);
  uint8_t *map = mmap(NULL, (size_t)page * 2, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map == MAP_FAILED || mprotect(map + page, (size_t)page, PROT_NONE) != 0) {
    CHECK(0, "guard page mapped");
    return;
  }
  uint8_t *edge = map + page;
  uint8_t msgs[8][512];
  size_t lens[8];
  bool stream[8];
  lens[0] = example_me(msgs[0]);
  stream[0] = true;
  lens[1] = lens[0] - 2;
  memcpy(msgs[1], msgs[0] + 2, lens[1]);
  stream[1] = false;
  rng_state = 777;
  for (int i = 2; i < 8; i++) {
    stream[i] = i % 2;
    lens[i] = random_message(msgs[i], sizeof(msgs[i]), stream[i]);
  }
  int differ = 0, runs = 0;
  for (int i = 0; i < 8; i++)
    for (size_t k = 0; k <= lens[i]; k++) {
      tp_triton_event at_edge, ref;
      memcpy(edge - k, msgs[i], k);
      int rv = tp_triton_parse_response(&at_edge, edge - k, k, stream[i]);
      int rv_ref = tp_triton_parse_response(&ref, msgs[i], k, stream[i]);
      runs++;
      /* Same result; the views differ only by where the bytes are. */
      if (rv != rv_ref || at_edge.text_len != ref.text_len || at_edge.final != ref.final ||
          at_edge.id_len != ref.id_len || (at_edge.text && at_edge.text - (edge - k) != ref.text - msgs[i]))
        differ++;
    }
  CHECK(differ == 0, "%d decodes ending at an unmapped page: no fault, same results", runs);
  munmap(map, (size_t)page * 2);
}

static void test_decode_allocations(void) {
#if TP_COUNT_ALLOCS
  uint8_t msgs[64][512];
  size_t lens[64];
  rng_state = 4242;
  for (int i = 0; i < 64; i++) lens[i] = random_message(msgs[i], sizeof(msgs[i]), i % 2);
  lens[0] = example_me(msgs[0]);
  unsigned long before = n_allocs;
  for (int i = 0; i < 64; i++) {
    tp_triton_event ev;
    for (size_t k = 0; k <= lens[i]; k++) tp_triton_parse_response(&ev, msgs[i], k, i % 2);
  }
  unsigned long ours = n_allocs - before;
  before = n_allocs;
  tp_triton_resp r;
  tp_triton_event ev;
  tp__triton_parse_response_pbc(&r, &ev, msgs[0], lens[0], true);
  tp__triton_resp_free(&r);
  unsigned long theirs = n_allocs - before;
  CHECK(ours == 0, "the decoder allocates nothing (%lu allocations over every cut of 64 messages)", ours);
  CHECK(theirs > 0, "while protobuf-c allocated %lu times for the worked example (the counter works)",
        theirs);
#else
  CHECK(1, "allocation count # SKIP the sanitizer replaces malloc");
#endif
}

static const Inference__ModelInferRequest__InferInputTensor *input(const Inference__ModelInferRequest *m,
                                                                   const char *name, size_t *idx) {
  for (size_t i = 0; i < m->n_inputs; i++)
    if (strcmp(m->inputs[i]->name, name) == 0) {
      *idx = i;
      return m->inputs[i];
    }
  return NULL;
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void test_build_trtllm(void) {
  tp_triton_opts o = {0};
  o.model = "ensemble";
  o.version = "";
  o.backend = TP_BACKEND_TENSORRTLLM;
  o.streaming = true;
  o.batch_dim = true;
  o.has_stream_input = true;
  o.has_min_length = true;
  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_triton_build_infer(&b, &o, "c1-7", "Hello world", 11, 128, 128), 0, "ensemble request built");
  uint32_t len = (uint32_t)b.data[1] << 24 | (uint32_t)b.data[2] << 16 | (uint32_t)b.data[3] << 8 | b.data[4];
  CHECK(b.data[0] == 0 && len + 5 == b.len, "gRPC prefix: uncompressed, big-endian length of the rest");
  Inference__ModelInferRequest *m = inference__model_infer_request__unpack(NULL, len, b.data + 5);
  CHECK(m != NULL, "the request is a valid ModelInferRequest");
  if (!m) return;
  CHECK_STR(m->model_name, "ensemble", "model_name");
  CHECK_STR(m->id, "c1-7", "id");
  CHECK_INT(m->n_raw_input_contents, m->n_inputs, "one raw entry per input");
  size_t i;
  const Inference__ModelInferRequest__InferInputTensor *t = input(m, "text_input", &i);
  CHECK(t && strcmp(t->datatype, "BYTES") == 0 && t->n_shape == 2 && t->shape[0] == 1 && t->shape[1] == 1,
        "text_input BYTES [1,1] (batching model)");
  if (t) {
    const ProtobufCBinaryData *raw = &m->raw_input_contents[i];
    CHECK(raw->len == 15 && le32(raw->data) == 11 && memcmp(raw->data + 4, "Hello world", 11) == 0,
          "text_input raw: 0b 00 00 00 + \"Hello world\" (little-endian length)");
  }
  t = input(m, "max_tokens", &i);
  CHECK(t && strcmp(t->datatype, "INT32") == 0 && m->raw_input_contents[i].len == 4 &&
            le32(m->raw_input_contents[i].data) == 128,
        "max_tokens INT32 80 00 00 00");
  t = input(m, "min_length", &i);
  CHECK(t && le32(m->raw_input_contents[i].data) == 128, "deterministic length through min_length");
  t = input(m, "stream", &i);
  CHECK(t && strcmp(t->datatype, "BOOL") == 0 && m->raw_input_contents[i].len == 1 &&
            m->raw_input_contents[i].data[0] == 1,
        "stream BOOL 01");
  CHECK(input(m, "exclude_input_in_output", &i) == NULL, "no exclude_input_in_output unless the model has it");
  CHECK(m->n_outputs == 1 && strcmp(m->outputs[0]->name, "text_output") == 0, "requests text_output only");
  CHECK(m->n_parameters == 1 && strcmp(m->parameters[0]->key, "triton_enable_empty_final_response") == 0 &&
            m->parameters[0]->value->parameter_choice_case ==
                INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM &&
            m->parameters[0]->value->bool_param,
        "triton_enable_empty_final_response = true");
  inference__model_infer_request__free_unpacked(m, NULL);
  tp_buf_fini(&b);
}

static void test_build_vllm(void) {
  tp_triton_opts o = {0};
  o.model = "vllm_model";
  o.backend = TP_BACKEND_VLLM;
  o.streaming = true;
  o.batch_dim = false;
  o.has_stream_input = true;
  o.has_exclude_input = true;
  tp_buf b;
  tp_buf_init(&b);
  CHECK_INT(tp_triton_build_infer(&b, &o, "r1", "Hi", 2, 64, 64), 0, "vLLM request built");
  Inference__ModelInferRequest *m = inference__model_infer_request__unpack(NULL, b.len - 5, b.data + 5);
  CHECK(m != NULL, "valid message");
  if (!m) return;
  size_t i;
  const Inference__ModelInferRequest__InferInputTensor *t = input(m, "text_input", &i);
  CHECK(t && t->n_shape == 1 && t->shape[0] == 1, "text_input shape [1] (no batch dimension)");
  CHECK(t && m->raw_input_contents[i].len == 6 && memcmp(m->raw_input_contents[i].data, "\x02\0\0\0Hi", 6) == 0,
        "text_input raw 02 00 00 00 48 69");
  t = input(m, "sampling_parameters", &i);
  if (t) {
    const ProtobufCBinaryData *raw = &m->raw_input_contents[i];
    char json[200];
    snprintf(json, sizeof(json), "%.*s", (int)(raw->len - 4), (const char *)raw->data + 4);
    CHECK(le32(raw->data) == raw->len - 4, "sampling_parameters is one length-prefixed element");
    CHECK_STR(json, "{\"max_tokens\":64,\"min_tokens\":64,\"ignore_eos\":true}",
              "sampling_parameters JSON with a real boolean");
  } else {
    CHECK(0, "sampling_parameters present");
  }
  t = input(m, "exclude_input_in_output", &i);
  CHECK(t && m->raw_input_contents[i].data[0] == 1, "exclude_input_in_output true");
  inference__model_infer_request__free_unpacked(m, NULL);
  tp_buf_fini(&b);
}

static void test_metadata_check(void) {
  tp_triton_model_meta meta;
  memset(&meta, 0, sizeof(meta));
  snprintf(meta.platform, sizeof(meta.platform), "vllm");
  meta.n_inputs = 3;
  snprintf(meta.inputs[0].name, 64, "text_input");
  snprintf(meta.inputs[0].datatype, 16, "BYTES");
  meta.inputs[0].n_dims = 1;
  meta.inputs[0].dims[0] = 1;
  snprintf(meta.inputs[1].name, 64, "stream");
  snprintf(meta.inputs[2].name, 64, "sampling_parameters");
  tp_triton_opts o = {0};
  o.model = "vllm_model";
  o.backend = TP_BACKEND_TENSORRTLLM;
  o.streaming = true;
  char err[512];
  CHECK_INT(tp_triton_check_metadata(&meta, &o, err, sizeof(err)), TP_EUNSUPPORTED,
            "a vLLM model with --backend tensorrtllm is refused");
  CHECK(strstr(err, "max_tokens") && strstr(err, "--backend vllm"), "the message names the input and the fix");
  o.backend = TP_BACKEND_VLLM;
  CHECK_INT(tp_triton_check_metadata(&meta, &o, err, sizeof(err)), 0, "accepted as vLLM");
  CHECK(!o.batch_dim && o.has_stream_input && !o.has_exclude_input, "capabilities read from the metadata");
  meta.inputs[0].n_dims = 2;
  meta.inputs[0].dims[0] = -1;
  tp_triton_check_metadata(&meta, &o, err, sizeof(err));
  CHECK(o.batch_dim, "a leading -1 is the batch dimension");
  snprintf(meta.inputs[0].name, 64, "prompt");
  CHECK_INT(tp_triton_check_metadata(&meta, &o, err, sizeof(err)), TP_EUNSUPPORTED, "no text_input: refused");
  CHECK(strstr(err, "text_input") && strstr(err, "prompt"), "the message lists what the model has");
}

int main(void) {
  test_parse_examples();
  test_decode_unknown_fields();
  test_decode_order_and_repeats();
  test_decode_scalars();
  test_decode_params();
  test_decode_text();
  test_decode_random();
  test_decode_truncations();
  test_decode_guard_page();
  test_decode_allocations();
  test_build_trtllm();
  test_build_vllm();
  test_metadata_check();
  return tp_test_done();
}

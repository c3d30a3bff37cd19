/* Fuzz target: decoding of Triton responses (tp_triton_parse_response, the
 * in-place decoder), as a ModelStreamInferResponse (stream = true) and as a
 * unary ModelInferResponse (stream = false), held to the decoder it
 * replaced: protobuf-c's unpack plus the same extraction
 * (tp__triton_parse_response_pbc).
 *
 * Checked besides "no crash, no leak":
 * - both decoders agree on whether the bytes are valid, and on every field
 *   of the event: id, text, error (NULL or not, length and bytes), final,
 *   has_final_param and num_output_tokens;
 * - the result is 0 or TP_EPROTO, and after TP_EPROTO the event says
 *   nothing (tp_triton.h);
 * - a unary answer is final and carries no in-band error;
 * - a streamed answer is final only when it says so (or carries an
 *   error, which ends its request);
 * - text, id and error point into the input (they are views of it);
 * - the input is not modified, and decoding twice gives the same event;
 * - re-serializing protobuf-c's message and decoding that gives the same
 *   event again (the event depends on the message, not on its encoding).
 * Any difference abort()s. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "api/tp_triton.h"
#include "grpc_service.pb-c.h"
#include "util/tp_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool same_bytes(const void *a, size_t an, const void *b, size_t bn) {
  return !a == !b && an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

static bool same_event(const tp_triton_event *a, const tp_triton_event *b) {
  return same_bytes(a->id, a->id_len, b->id, b->id_len) &&
         same_bytes(a->text, a->text_len, b->text, b->text_len) &&
         same_bytes(a->error, a->error_len, b->error, b->error_len) && a->final == b->final &&
         a->has_final_param == b->has_final_param && a->num_output_tokens == b->num_output_tokens;
}

static bool empty_event(const tp_triton_event *e) {
  return !e->id && !e->id_len && !e->text && !e->text_len && !e->error && !e->error_len && !e->final &&
         !e->has_final_param && e->num_output_tokens == -1;
}

/* Whether [p, p + n) lies inside the input. */
static bool inside(const void *p, size_t n, const uint8_t *data, size_t size) {
  const uint8_t *q = p;
  return q >= data && q <= data + size && n <= (size_t)(data + size - q);
}

/* True when m or any message inside it kept unknown fields.  protobuf-c
 * keeps them and writes them back, but it accepts some it cannot read
 * again (field number 0 behind an over-long tag varint: "85 00" is taken,
 * the "05" it writes back is refused), so the round trip below is only
 * held to messages without them. */
static bool has_unknown(const ProtobufCMessage *m) {
  if (!m) return false;
  if (m->n_unknown_fields) return true;
  const ProtobufCMessageDescriptor *d = m->descriptor;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    if (f->type != PROTOBUF_C_TYPE_MESSAGE) continue;
    const char *base = (const char *)m;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n = *(const size_t *)(base + f->quantifier_offset);
      ProtobufCMessage *const *v = *(ProtobufCMessage *const *const *)(base + f->offset);
      for (size_t k = 0; k < n; k++)
        if (has_unknown(v[k])) return true;
    } else if (has_unknown(*(ProtobufCMessage *const *)(base + f->offset))) {
      return true;
    }
  }
  return false;
}

static void check_one(const uint8_t *data, size_t size, bool stream) {
  tp_triton_event ev, ref, ev2;
  tp_triton_resp r;
  int rv = tp_triton_parse_response(&ev, data, size, stream);
  int rv_ref = tp__triton_parse_response_pbc(&r, &ref, data, size, stream);
  if (rv != 0 && rv != TP_EPROTO) abort();
  if (rv != rv_ref) abort(); /* the two disagree on validity */
  if (rv != 0) {
    /* "the event then says nothing" (tp_triton.h). */
    if (!empty_event(&ev) || !empty_event(&ref) || r.msg) abort();
    return;
  }
  if (!same_event(&ev, &ref)) abort();

  if (!stream && (!ev.final || ev.error)) abort();
  if (stream && !ev.has_final_param && !ev.error && ev.final) abort();
  if (ev.text_len && !ev.text) abort();
  if (ev.text && !inside(ev.text, ev.text_len, data, size)) abort();
  if (ev.id && ev.id_len && !inside(ev.id, ev.id_len, data, size)) abort();
  if (ev.error && (!ev.error_len || !inside(ev.error, ev.error_len, data, size))) abort();
  if (ev.id && memchr(ev.id, 0, ev.id_len)) abort();
  if (ev.error && memchr(ev.error, 0, ev.error_len)) abort();

  if (tp_triton_parse_response(&ev2, data, size, stream) != 0 || !same_event(&ev, &ev2)) abort();

  /* Round trip through protobuf-c's own encoder. */
  if (!has_unknown(r.msg)) {
    size_t len = stream ? inference__model_stream_infer_response__get_packed_size(r.msg)
                        : inference__model_infer_response__get_packed_size(r.msg);
    uint8_t *buf = malloc(len ? len : 1);
    if (buf) {
      if (stream)
        inference__model_stream_infer_response__pack(r.msg, buf);
      else
        inference__model_infer_response__pack(r.msg, buf);
      if (tp_triton_parse_response(&ev2, buf, len, stream) != 0 || !same_event(&ev, &ev2)) abort();
      free(buf);
    }
  }
  tp__triton_resp_free(&r);
  if (r.msg != NULL) abort(); /* freeing leaves nothing to free twice */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t *copy = malloc(size ? size : 1);
  if (!copy) return 0;
  if (size) memcpy(copy, data, size);
  check_one(data, size, true);
  check_one(data, size, false);
  if (size && memcmp(copy, data, size) != 0) abort();
  free(copy);
  return 0;
}

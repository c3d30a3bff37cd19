/* Fuzz target: decoding of Triton responses (tp_triton_parse_response),
 * as a ModelStreamInferResponse (stream = true) and as a unary
 * ModelInferResponse (stream = false).
 *
 * Checked besides "no crash, no leak":
 * - the result is 0 or TP_EPROTO, and after TP_EPROTO the event says
 *   nothing (tp_triton.h);
 * - a unary answer is final and carries no in-band error;
 * - a streamed answer is final only when it says so (or carries an
 *   error, which ends its request);
 * - text, id and error lie within what the input could hold;
 * - the input is not modified, and decoding twice gives the same event;
 * - re-serializing the decoded message and decoding that gives the same
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

static bool same_event(const tp_triton_event *a, const tp_triton_event *b) {
  if (!a->id != !b->id || (a->id && strcmp(a->id, b->id) != 0)) return false;
  if (!a->text != !b->text || a->text_len != b->text_len) return false;
  if (a->text && a->text_len && memcmp(a->text, b->text, a->text_len) != 0) return false;
  if (!a->error != !b->error || (a->error && strcmp(a->error, b->error) != 0)) return false;
  return a->final == b->final && a->has_final_param == b->has_final_param &&
         a->num_output_tokens == b->num_output_tokens;
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
  tp_triton_resp r, r2;
  tp_triton_event ev, ev2;
  memset(&r, 0, sizeof(r));
  memset(&r2, 0, sizeof(r2));
  int rv = tp_triton_parse_response(&r, &ev, data, size, stream);
  if (rv != 0 && rv != TP_EPROTO) abort();
  if (rv != 0) {
    /* "the event then says nothing and r holds nothing" (tp_triton.h). */
    if (ev.text || ev.text_len || ev.error || ev.final || ev.has_final_param || ev.id || r.msg) abort();
    tp_triton_resp_free(&r);
    return;
  }
  if (!stream && (!ev.final || ev.error)) abort();
  if (stream && !ev.has_final_param && !ev.error && ev.final) abort();
  if (ev.text_len > size || (ev.text == NULL && ev.text_len != 0)) abort();
  if (ev.id && strlen(ev.id) > size) abort();
  if (ev.error && (strlen(ev.error) > size || ev.error[0] == 0)) abort();

  int rv2 = tp_triton_parse_response(&r2, &ev2, data, size, stream);
  if (rv2 != 0 || !same_event(&ev, &ev2)) abort();
  tp_triton_resp_free(&r2);

  /* Round trip through protobuf-c's own encoder. */
  size_t len;
  uint8_t *buf;
  if (has_unknown(r.msg)) goto out;
  if (stream) {
    const Inference__ModelStreamInferResponse *m = r.msg;
    len = inference__model_stream_infer_response__get_packed_size(m);
    buf = malloc(len ? len : 1);
    if (!buf) goto out;
    inference__model_stream_infer_response__pack(m, buf);
  } else {
    const Inference__ModelInferResponse *m = r.msg;
    len = inference__model_infer_response__get_packed_size(m);
    buf = malloc(len ? len : 1);
    if (!buf) goto out;
    inference__model_infer_response__pack(m, buf);
  }
  memset(&r2, 0, sizeof(r2));
  rv2 = tp_triton_parse_response(&r2, &ev2, buf, len, stream);
  if (rv2 != 0 || !same_event(&ev, &ev2)) abort();
  tp_triton_resp_free(&r2);
  free(buf);
out:
  tp_triton_resp_free(&r);
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

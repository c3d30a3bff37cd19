/* Fuzz target: the mock server's ModelInferRequest parser
 * (mock/tp_mock_infer_parse.c).
 *
 * The input is the bytes of one gRPC message.  The result must be one of
 * the parser's codes, each error with a message; a request that parses
 * must be consistent (a served model, its prompt inside the unpacked
 * message, the word count of that prompt, max_tokens for the ensemble, no
 * streamed vLLM answer that repeats the prompt).  Parsing the same bytes
 * again, and the message protobuf-c unpacked packed again, must give the
 * same code, the same error text and the same request.  Any breach
 * abort()s. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_service.pb-c.h"
#include "mock/tp_mock_infer_parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static bool within(const uint8_t *p, size_t n, const uint8_t *base, size_t len) {
  return p >= base && n <= len && p - base <= (ptrdiff_t)(len - n);
}

/* The prompt lies in one of the message's raw contents or typed BYTES. */
static bool prompt_in_message(const tp__mock_infer_req *a) {
  const Inference__ModelInferRequest *q = a->msg;
  for (size_t i = 0; i < q->n_raw_input_contents; i++)
    if (within(a->prompt, a->prompt_len, q->raw_input_contents[i].data, q->raw_input_contents[i].len))
      return true;
  for (size_t i = 0; i < q->n_inputs; i++) {
    const Inference__InferTensorContents *c = q->inputs[i]->contents;
    if (c && c->n_bytes_contents &&
        within(a->prompt, a->prompt_len, c->bytes_contents[0].data, c->bytes_contents[0].len))
      return true;
  }
  return false;
}

static void check_parsed(const tp__mock_infer_req *a) {
  if (!a->msg || !a->model || tp__mock_find_model(a->model->name) != a->model) abort();
  if (strcmp(a->id, a->msg->id) != 0 || strcmp(a->version, a->msg->model_version) != 0) abort();
  if (a->version[0] && strcmp(a->version, "1") != 0) abort();
  if (!a->have_prompt || (a->prompt_len && !prompt_in_message(a))) abort();
  if (a->sp.prompt != (const char *)a->prompt || a->sp.prompt_len != a->prompt_len) abort();
  if (a->sp.prompt_tokens != tp_mock_count_words((const char *)a->prompt, a->prompt_len)) abort();
  if (a->model->ensemble && !a->have_max_tokens) abort();
  if (!a->have_max_tokens && a->sp.max_tokens != 0) abort();
  if (!a->model->ensemble && a->stream && a->exclude_input_set && !a->exclude_input) abort();
  if (a->exclude_input && !a->exclude_input_set) abort();
  if (a->fault_after < -1) abort();
  if (!a->have_fault && a->fault.kind != TP_MOCK_FAULT_NONE) abort();
}

static bool same(const tp__mock_infer_req *a, const tp__mock_infer_req *b) {
  return a->model == b->model && strcmp(a->id, b->id) == 0 && strcmp(a->version, b->version) == 0 &&
         a->prompt_len == b->prompt_len &&
         (a->prompt_len == 0 || memcmp(a->prompt, b->prompt, a->prompt_len) == 0) &&
         a->have_prompt == b->have_prompt && a->stream == b->stream && a->exclude_input == b->exclude_input &&
         a->exclude_input_set == b->exclude_input_set && a->num_tokens == b->num_tokens &&
         a->empty_final == b->empty_final && a->have_max_tokens == b->have_max_tokens &&
         a->have_fault == b->have_fault && a->fault.kind == b->fault.kind &&
         a->fault.after_tokens == b->fault.after_tokens && a->fault_after == b->fault_after &&
         a->sp.max_tokens == b->sp.max_tokens && a->sp.min_tokens == b->sp.min_tokens &&
         a->sp.ignore_eos == b->sp.ignore_eos && a->sp.prompt_tokens == b->sp.prompt_tokens;
}

/* Drops the fields protobuf-c kept without knowing them, in m and every
 * message inside it: packed again they need not read back the same (a
 * field number 0, say), and the parser never looks at them. */
static void drop_unknown(ProtobufCMessage *m) {
  /* Unpacked with the default allocator: malloc. */
  for (unsigned k = 0; k < m->n_unknown_fields; k++) free(m->unknown_fields[k].data);
  free(m->unknown_fields);
  m->unknown_fields = NULL;
  m->n_unknown_fields = 0;
  const ProtobufCMessageDescriptor *d = m->descriptor;
  for (unsigned i = 0; i < d->n_fields; i++) {
    const ProtobufCFieldDescriptor *f = &d->fields[i];
    if (f->type != PROTOBUF_C_TYPE_MESSAGE) continue;
    char *at = (char *)m + f->offset;
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
      size_t n = *(size_t *)((char *)m + f->quantifier_offset);
      ProtobufCMessage **v = *(ProtobufCMessage ***)at;
      for (size_t k = 0; k < n; k++)
        if (v[k]) drop_unknown(v[k]);
    } else if (*(ProtobufCMessage **)at) {
      drop_unknown(*(ProtobufCMessage **)at);
    }
  }
}

/* Parses data into *a and checks what any answer must hold. */
static int parse_checked(const uint8_t *data, size_t size, tp__mock_infer_req *a, char *err, size_t errlen) {
  memset(err, 0x55, errlen);
  int rv = tp__mock_infer_parse(data, size, a, err, errlen);
  if (rv != 0 && rv != TP_EPROTO && rv != TP_ENOTFOUND && rv != TP_EINVAL) abort();
  if (!a->id || !a->version) abort();
  if (rv != 0 && (!memchr(err, 0, errlen) || err[0] == 0)) abort();
  if ((rv == TP_EPROTO) != (a->msg == NULL)) abort();
  if (rv == 0) check_parsed(a);
  return rv;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tp__mock_infer_req a, b;
  char err[512], err2[512];
  int rv = parse_checked(data, size, &a, err, sizeof(err));

  /* The same bytes again. */
  int rv2 = parse_checked(data, size, &b, err2, sizeof(err2));
  if (rv2 != rv || (rv && strcmp(err, err2) != 0) || (rv == 0 && !same(&a, &b))) abort();
  tp__mock_infer_req_fini(&b);

  /* The message as protobuf-c packs it again (fields in order, lengths
   * minimal, no unknown fields) reads the same. */
  if (a.msg) {
    drop_unknown(&a.msg->base);
    size_t n = protobuf_c_message_get_packed_size(&a.msg->base);
    uint8_t *p = malloc(n ? n : 1);
    if (p) {
      protobuf_c_message_pack(&a.msg->base, p);
      int rv3 = parse_checked(p, n, &b, err2, sizeof(err2));
      if (rv3 != rv || (rv && strcmp(err, err2) != 0) || (rv == 0 && !same(&a, &b))) abort();
      tp__mock_infer_req_fini(&b);
      free(p);
    }
  }
  tp__mock_infer_req_fini(&a);
  if (a.msg || a.prompt || a.sp.prompt) abort();
  return 0;
}

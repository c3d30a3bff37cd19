/* The engine protocols' response side: GenerateResponse bytes in, one
 * tp_engine_msg out (no I/O).
 *
 * Read in place from the protobuf wire format, as the Triton adapter reads
 * its responses (tp_triton_parse.c says why: protobuf-c's unpack allocates
 * for every array and string, which at hundreds of streams is most of the
 * client's CPU).  Which messages are valid is protobuf-c 1.4's decision,
 * followed here where it parts from the protobuf spec:
 * - a tag takes at most 5 bytes, and a one-byte tag naming field 0 is an
 *   error; a length takes at most 5 bytes (and stays under 2 GiB), a varint
 *   at most 10; a value running past its message is an error;
 * - wire types 3, 4, 6 and 7 are errors, known field or not;
 * - a known field with another wire type than its own is an error; a
 *   repeated number field given with wire type 2 is packed, each varint in
 *   it ending inside it;
 * - a number field given twice keeps the last value, a repeated one
 *   appends; a 32-bit number is the low 32 bits of its varint;
 * - strings end at their first NUL byte (protobuf-c returns C strings).
 * A message naming members of the response oneof more than once (protobuf-c
 * keeps the last, whole) is rare enough to be left to protobuf-c itself.  fuzz_engine_response holds both decoders to the same
 * answers. */
#include "tp_engine.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sglang_scheduler.pb-c.h"
#include "vllm_engine.pb-c.h"

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct field {
  uint32_t num;
  unsigned wt;
  const uint8_t *val; /* the varint, fixed bytes, or (wire type 2) the payload */
  size_t len;         /* the payload's length (wire type 2) */
} field;

/* Reads the field at *pp (before end) and moves *pp past it; false when
 * the bytes there are not a whole field. */
static bool next_field(const uint8_t **pp, const uint8_t *end, field *f) {
  const uint8_t *p = *pp;
  size_t rem = (size_t)(end - p);
  uint8_t b = p[0];
  if ((b & 0xf8) == 0) return false;
  f->wt = b & 7;
  uint32_t num = (uint32_t)(b & 0x7f) >> 3;
  size_t n = 1;
  if (b & 0x80) {
    size_t max = rem < 5 ? rem : 5;
    unsigned shift = 4;
    do {
      if (n == max) return false;
      b = p[n++];
      num |= (uint32_t)(b & 0x7f) << shift;
      shift += 7;
    } while (b & 0x80);
  }
  f->num = num;
  p += n;
  rem -= n;
  f->val = p;
  f->len = 0;
  size_t used;
  switch (f->wt) {
    case WT_VARINT: {
      size_t max = rem < 10 ? rem : 10, i = 0;
      while (i < max && (p[i] & 0x80)) i++;
      if (i == max) return false;
      used = i + 1;
      break;
    }
    case WT_I64:
      if (rem < 8) return false;
      used = 8;
      break;
    case WT_I32:
      if (rem < 4) return false;
      used = 4;
      break;
    case WT_LEN: {
      size_t max = rem < 5 ? rem : 5, i = 0;
      uint64_t v = 0;
      do {
        if (i == max) return false;
        b = p[i];
        v |= (uint64_t)(b & 0x7f) << (7 * i);
        i++;
      } while (b & 0x80);
      if (v > INT32_MAX || v > rem - i) return false;
      f->val = p + i;
      f->len = (size_t)v;
      used = i + (size_t)v;
      break;
    }
    default: return false;
  }
  *pp = p + used;
  return true;
}

/* The low 32 bits of the varint at p (which next_field found whole). */
static uint32_t varint32(const uint8_t *p) {
  uint64_t v = 0;
  for (unsigned i = 0; i < 10; i++) {
    v |= (uint64_t)(p[i] & 0x7f) << (7 * i);
    if (!(p[i] & 0x80)) break;
  }
  return (uint32_t)v;
}

/* Adds the ids of a repeated uint32 field to *n: one for a varint, one per
 * varint for a packed run.  False on a bad wire type or packed run. */
static bool add_ids(const field *f, uint32_t *n) {
  if (f->wt == WT_VARINT) {
    (*n)++;
    return true;
  }
  if (f->wt != WT_LEN) return false;
  size_t run = 0;
  uint32_t k = 0;
  for (size_t i = 0; i < f->len; i++) {
    if (!(f->val[i] & 0x80)) {
      run = 0;
      k++;
    } else if (++run == 10) {
      return false;
    }
  }
  if (run) return false;
  *n += k;
  return true;
}

/* A singular count: a varint only; int32 counts (SGLang) are signed. */
static bool count_field(const field *f, bool is_signed, int64_t *out) {
  if (f->wt != WT_VARINT) return false;
  uint32_t v = varint32(f->val);
  *out = is_signed ? (int64_t)(int32_t)v : (int64_t)v;
  return true;
}

static bool string_field(const field *f, const char **s, size_t *len) {
  if (f->wt != WT_LEN) return false;
  const uint8_t *z = f->len ? memchr(f->val, 0, f->len) : NULL;
  *s = (const char *)f->val;
  *len = z ? (size_t)(z - f->val) : f->len;
  return true;
}

/* GenerateStreamChunk and GenerateComplete of both protocols: ids are field
 * 1; the chunk's counts are 2-4, the complete's finish_reason 2 and counts
 * 3-5. */
static bool dec_tokens(const uint8_t *p, const uint8_t *end, bool complete, bool is_signed,
                       tp_engine_msg *m) {
  while (p < end) {
    field f;
    if (!next_field(&p, end, &f)) return false;
    uint32_t c = complete ? f.num - 1 : f.num; /* the counts as 2, 3, 4 */
    if (f.num == 1) {
      if (!add_ids(&f, &m->n_ids)) return false;
    } else if (complete && f.num == 2) {
      if (!string_field(&f, &m->finish_reason, &m->finish_reason_len)) return false;
    } else if (c == 2) {
      if (!count_field(&f, is_signed, &m->prompt_tokens)) return false;
    } else if (c == 3) {
      if (!count_field(&f, is_signed, &m->completion_tokens)) return false;
    } else if (c == 4) {
      if (!count_field(&f, is_signed, &m->cached_tokens)) return false;
    }
  }
  return true;
}

static bool dec_error(const uint8_t *p, const uint8_t *end, tp_engine_msg *m) {
  while (p < end) {
    field f;
    const char *s;
    size_t n;
    if (!next_field(&p, end, &f)) return false;
    if (f.num < 1 || f.num > 3) continue;
    if (!string_field(&f, &s, &n)) return false;
    if (f.num == 1) {
      m->error = s;
      m->error_len = n;
    } else if (f.num == 2) {
      m->error_status = s;
      m->error_status_len = n;
    }
  }
  return true;
}

void tp_engine_decoder_init(tp_engine_decoder *d) {
  memset(d, 0, sizeof(*d));
}

static void free_slow(tp_engine_decoder *d) {
  if (!d->slow) return;
  protobuf_c_message_free_unpacked(d->slow, NULL);
  d->slow = NULL;
}

void tp_engine_decoder_fini(tp_engine_decoder *d) {
  free_slow(d);
}

static void set_str(const char *s, const char **out, size_t *len) {
  *out = s && *s ? s : NULL;
  *len = s ? strlen(s) : 0;
}

/* protobuf-c's reading, for messages that name oneof members more than once. */
static int decode_slow(tp_engine_decoder *d, tp_engine_proto p, const uint8_t *data, size_t len,
                       tp_engine_msg *m) {
  if (p == TP_ENGINE_VLLM) {
    Vllm__Grpc__Engine__GenerateResponse *r = vllm__grpc__engine__generate_response__unpack(NULL, len, data);
    if (!r) return TP_EPROTO;
    d->slow = r;
    if (r->response_case == VLLM__GRPC__ENGINE__GENERATE_RESPONSE__RESPONSE_CHUNK) {
      m->kind = TP_ENGINE_MSG_CHUNK;
      m->n_ids = (uint32_t)r->chunk->n_token_ids;
      m->prompt_tokens = r->chunk->prompt_tokens;
      m->completion_tokens = r->chunk->completion_tokens;
      m->cached_tokens = r->chunk->cached_tokens;
    } else if (r->response_case == VLLM__GRPC__ENGINE__GENERATE_RESPONSE__RESPONSE_COMPLETE) {
      m->kind = TP_ENGINE_MSG_COMPLETE;
      m->n_ids = (uint32_t)r->complete->n_output_ids;
      m->prompt_tokens = r->complete->prompt_tokens;
      m->completion_tokens = r->complete->completion_tokens;
      m->cached_tokens = r->complete->cached_tokens;
      set_str(r->complete->finish_reason, &m->finish_reason, &m->finish_reason_len);
    }
    return 0;
  }
  Sglang__Grpc__Scheduler__GenerateResponse *r =
      sglang__grpc__scheduler__generate_response__unpack(NULL, len, data);
  if (!r) return TP_EPROTO;
  d->slow = r;
  set_str(r->request_id, &m->request_id, &m->request_id_len);
  switch (r->response_case) {
    case SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__RESPONSE_CHUNK:
      m->kind = TP_ENGINE_MSG_CHUNK;
      m->n_ids = (uint32_t)r->chunk->n_token_ids;
      m->prompt_tokens = r->chunk->prompt_tokens;
      m->completion_tokens = r->chunk->completion_tokens;
      m->cached_tokens = r->chunk->cached_tokens;
      break;
    case SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__RESPONSE_COMPLETE:
      m->kind = TP_ENGINE_MSG_COMPLETE;
      m->n_ids = (uint32_t)r->complete->n_output_ids;
      m->prompt_tokens = r->complete->prompt_tokens;
      m->completion_tokens = r->complete->completion_tokens;
      m->cached_tokens = r->complete->cached_tokens;
      set_str(r->complete->finish_reason, &m->finish_reason, &m->finish_reason_len);
      break;
    case SGLANG__GRPC__SCHEDULER__GENERATE_RESPONSE__RESPONSE_ERROR:
      m->kind = TP_ENGINE_MSG_ERROR;
      set_str(r->error->message, &m->error, &m->error_len);
      set_str(r->error->http_status_code, &m->error_status, &m->error_status_len);
      break;
    default: break;
  }
  return 0;
}

int tp_engine_decode(tp_engine_decoder *d, tp_engine_proto p, const uint8_t *data, size_t len,
                     tp_engine_msg *m) {
  free_slow(d);
  memset(m, 0, sizeof(*m));
  /* The response oneof's members: vLLM 1 chunk, 2 complete; SGLang 2
   * chunk, 3 complete, 4 error, with request_id 1. */
  uint32_t first = p == TP_ENGINE_VLLM ? 1 : 2, last = p == TP_ENGINE_VLLM ? 2 : 4;
  const uint8_t *pos = data, *end = data + len;
  field member = {0, 0, NULL, 0};
  unsigned members = 0;
  while (pos < end) {
    field f;
    if (!next_field(&pos, end, &f)) return TP_EPROTO;
    if (f.num >= first && f.num <= last) {
      if (f.wt != WT_LEN) return TP_EPROTO;
      member = f;
      members++;
    } else if (p == TP_ENGINE_SGLANG && f.num == 1) {
      if (!string_field(&f, &m->request_id, &m->request_id_len)) return TP_EPROTO;
    }
  }
  if (members > 1) {
    memset(m, 0, sizeof(*m));
    return decode_slow(d, p, data, len, m);
  }
  if (members == 0) return 0;
  const uint8_t *b = member.val, *e = member.val + member.len;
  bool is_signed = p == TP_ENGINE_SGLANG;
  uint32_t which = member.num - first; /* 0 chunk, 1 complete, 2 error */
  bool ok;
  if (which == 2) {
    m->kind = TP_ENGINE_MSG_ERROR;
    ok = dec_error(b, e, m);
  } else {
    m->kind = which == 0 ? TP_ENGINE_MSG_CHUNK : TP_ENGINE_MSG_COMPLETE;
    ok = dec_tokens(b, e, which == 1, is_signed, m);
  }
  return ok ? 0 : TP_EPROTO;
}

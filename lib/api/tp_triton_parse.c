/* The Triton adapter's response side: ModelInferResponse and
 * ModelStreamInferResponse bytes in, events out (no I/O). */
#include "tp_triton.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grpc_service.pb-c.h"

/* Response decoding.
 *
 * Responses are read in place, straight from the protobuf wire format: a
 * field is a tag varint (field number << 3 | wire type) and a value whose
 * size the wire type gives (0 a varint, 1 eight bytes, 2 a length varint
 * and that many bytes, 5 four bytes).  Profiling at 256 streams put
 * protobuf-c's unpack and its mallocs (one per string, tensor, map entry
 * and array) at 69% of the client's CPU; here nothing is allocated, and the
 * event points into the caller's bytes.
 *
 * Every field of every nested message is checked, because protobuf-c
 * refused a whole message for one bad byte anywhere in it, and which
 * messages are valid must not change with the decoder.  The rules are
 * therefore protobuf-c 1.4's, also where it parts from the protobuf spec
 * (fuzz_triton_response compares the two decoders on every input):
 * - a tag takes at most 5 bytes; a one-byte tag for field number 0 is
 *   refused, while a longer one is merely an unknown field;
 * - a length takes at most 5 bytes (and stays under 2 GiB), a varint value
 *   at most 10; a value running past its message is an error;
 * - groups (wire types 3 and 4) and wire types 6 and 7 are errors, known
 *   field or not;
 * - a known field arriving with another wire type than its own is an error
 *   rather than an unknown field, except for bool fields: protobuf-c takes
 *   any wire type there, the value being true when any scanned byte (for
 *   wire type 2: the length and the payload) has a low 7 bits set;
 * - a repeated number field given with wire type 2 is packed: each varint
 *   in it must end inside it, and fixed-width payloads must be whole;
 * - a singular message given twice is merged: repeated fields append
 *   (which is why the outputs and raw_output_contents of several
 *   infer_response fields number on across them), singular fields keep the
 *   last value.  Merging two InferParameter values of which neither sets
 *   the oneof fails, and merging a string_param with a value setting
 *   nothing drops it;
 * - strings end at their first NUL byte (protobuf-c returned C strings). */

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct pb_field {
  uint32_t num;       /* field number */
  unsigned wt;        /* wire type */
  const uint8_t *raw; /* the value as scanned: varint or fixed bytes, or length and payload */
  size_t raw_len;
  const uint8_t *data; /* wire type 2: the payload */
  size_t len;
} pb_field;

typedef struct view {
  const uint8_t *p;
  size_t n;
} view;

/* Reads the field at *pp (which is before end) and moves *pp past it.
 * Returns false when the bytes there are not a whole field. */
static bool pb_next(const uint8_t **pp, const uint8_t *end, pb_field *f) {
  const uint8_t *p = *pp;
  size_t rem = (size_t)(end - p);
  uint8_t b = p[0];
  if ((b & 0xf8) == 0) return false;
  f->wt = b & 7;
  uint32_t num = (uint32_t)(b & 0x7f) >> 3;
  size_t n = 1;
  if (b & 0x80) {
    /* Bytes 2-5 carry 7 bits each above the first byte's 4: field numbers
     * of up to 32 bits, so nothing overflows. */
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
  f->raw = p;
  f->data = NULL;
  f->len = 0;
  switch (f->wt) {
    case WT_VARINT: {
      size_t max = rem < 10 ? rem : 10, i = 0;
      while (i < max && (p[i] & 0x80)) i++;
      if (i == max) return false;
      f->raw_len = i + 1;
      break;
    }
    case WT_I64:
      if (rem < 8) return false;
      f->raw_len = 8;
      break;
    case WT_I32:
      if (rem < 4) return false;
      f->raw_len = 4;
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
      f->data = p + i;
      f->len = (size_t)v;
      f->raw_len = i + (size_t)v;
      break;
    }
    default: return false;
  }
  *pp = p + f->raw_len;
  return true;
}

/* True when p[0..n) is a run of whole varints of at most 10 bytes each
 * (a packed repeated number field). */
static bool packed_varints_ok(const uint8_t *p, size_t n) {
  size_t run = 0;
  for (size_t i = 0; i < n; i++) {
    if (!(p[i] & 0x80))
      run = 0;
    else if (++run == 10)
      return false;
  }
  return run == 0;
}

/* A number field: a varint, or packed varints. */
static bool varint_field_ok(const pb_field *f) {
  return f->wt == WT_LEN ? packed_varints_ok(f->data, f->len) : f->wt == WT_VARINT;
}

static bool any_low7(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] & 0x7f) return true;
  return false;
}

static size_t cstr_len(view v) {
  const uint8_t *z = v.n ? memchr(v.p, 0, v.n) : NULL;
  return z ? (size_t)(z - v.p) : v.n;
}

/* Whether v, read as a C string, is lit. */
static bool cstr_is(view v, const char *lit, size_t lit_len) {
  return v.n >= lit_len && memcmp(v.p, lit, lit_len) == 0 && (v.n == lit_len || v.p[lit_len] == 0);
}

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* InferParameter: the oneof member set last (its field number, 0 = none)
 * and, for bool_param, its value. */
enum { PARAM_NONE, PARAM_BOOL, PARAM_INT64, PARAM_STRING, PARAM_DOUBLE, PARAM_UINT64 };

typedef struct param_val {
  uint32_t which;
  bool b;
} param_val;

static bool dec_param_value(const uint8_t *p, const uint8_t *end, param_val *v) {
  v->which = PARAM_NONE;
  v->b = false;
  while (p < end) {
    pb_field f;
    if (!pb_next(&p, end, &f)) return false;
    switch (f.num) {
      case PARAM_BOOL: v->b = any_low7(f.raw, f.raw_len); break;
      case PARAM_INT64:
      case PARAM_UINT64:
        if (f.wt != WT_VARINT) return false;
        break;
      case PARAM_STRING:
        if (f.wt != WT_LEN) return false;
        break;
      case PARAM_DOUBLE:
        if (f.wt != WT_I64) return false;
        break;
      default: continue; /* unknown field */
    }
    v->which = f.num;
  }
  return true;
}

/* One entry of a parameters map: key = 1, value = 2. */
typedef struct param_entry {
  view key;
  bool has_value;
  param_val v;
} param_entry;

static bool dec_param_entry(const uint8_t *p, const uint8_t *end, param_entry *e) {
  memset(e, 0, sizeof(*e));
  while (p < end) {
    pb_field f;
    if (!pb_next(&p, end, &f)) return false;
    if (f.num == 1) {
      if (f.wt != WT_LEN) return false;
      e->key.p = f.data;
      e->key.n = f.len;
    } else if (f.num == 2) {
      param_val v;
      if (f.wt != WT_LEN || !dec_param_value(f.data, f.data + f.len, &v)) return false;
      /* A second value is merged into the first (see above). */
      if (!e->has_value || v.which != PARAM_NONE)
        e->v = v;
      else if (e->v.which == PARAM_NONE)
        return false;
      else if (e->v.which == PARAM_STRING)
        e->v.which = PARAM_NONE;
      e->has_value = true;
    }
  }
  return true;
}

/* InferTensorContents, checked; *first gets bytes_contents[0] (merged
 * contents append, so it is the first one met across all of them). */
static bool dec_contents(const uint8_t *p, const uint8_t *end, view *first, bool *has_first) {
  while (p < end) {
    pb_field f;
    if (!pb_next(&p, end, &f)) return false;
    switch (f.num) {
      case 1: /* bool_contents: any wire type (a bool), packed when 2 */
        if (f.wt == WT_LEN && !packed_varints_ok(f.data, f.len)) return false;
        break;
      case 2: /* int_contents */
      case 3: /* int64_contents */
      case 4: /* uint_contents */
      case 5: /* uint64_contents */
        if (!varint_field_ok(&f)) return false;
        break;
      case 6: /* fp32_contents */
        if (f.wt == WT_LEN ? f.len % 4 != 0 : f.wt != WT_I32) return false;
        break;
      case 7: /* fp64_contents */
        if (f.wt == WT_LEN ? f.len % 8 != 0 : f.wt != WT_I64) return false;
        break;
      case 8: /* bytes_contents */
        if (f.wt != WT_LEN) return false;
        if (!*has_first) {
          first->p = f.data;
          first->n = f.len;
          *has_first = true;
        }
        break;
      default: break;
    }
  }
  return true;
}

/* ModelInferResponse.InferOutputTensor, checked: its name and its first
 * typed BYTES element. */
typedef struct out_tensor {
  view name;
  view typed;
  bool has_typed;
} out_tensor;

static bool dec_output(const uint8_t *p, const uint8_t *end, out_tensor *o) {
  memset(o, 0, sizeof(*o));
  while (p < end) {
    pb_field f;
    param_entry e;
    if (!pb_next(&p, end, &f)) return false;
    switch (f.num) {
      case 1: /* name */
        if (f.wt != WT_LEN) return false;
        o->name.p = f.data;
        o->name.n = f.len;
        break;
      case 2: /* datatype */
        if (f.wt != WT_LEN) return false;
        break;
      case 3: /* shape */
        if (!varint_field_ok(&f)) return false;
        break;
      case 4: /* parameters */
        if (f.wt != WT_LEN || !dec_param_entry(f.data, f.data + f.len, &e)) return false;
        break;
      case 5: /* contents */
        if (f.wt != WT_LEN || !dec_contents(f.data, f.data + f.len, &o->typed, &o->has_typed)) return false;
        break;
      default: break;
    }
  }
  return true;
}

#define TEXT_OUTPUT "text_output"
#define NUM_OUTPUT_TOKENS "num_output_tokens"
#define FINAL_PARAM "triton_final_response"
#define LIT(s) s, sizeof(s) - 1

/* What the first pass keeps of an output: whether it is one we read, and
 * its typed element 0. */
enum { OUT_OTHER, OUT_TEXT, OUT_TOKENS };

typedef struct out_info {
  int kind;
  bool has_typed;
  view typed;
} out_info;

static out_info classify(const out_tensor *o) {
  out_info i = {OUT_OTHER, o->has_typed, o->typed};
  /* TEXT: the output of vLLM's quick-deploy tutorial model. */
  if (cstr_is(o->name, LIT(TEXT_OUTPUT)) || cstr_is(o->name, LIT("TEXT")))
    i.kind = OUT_TEXT;
  else if (cstr_is(o->name, LIT(NUM_OUTPUT_TOKENS)))
    i.kind = OUT_TOKENS;
  return i;
}

/* What the first pass over the ModelInferResponse(s) keeps.  Responses
 * have one or two outputs, so the first few outputs and raw entries are
 * kept here and paired without a second pass; more than that takes the
 * second pass (pair_outputs). */
#define KEPT 4

typedef struct infer_scan {
  view id;
  bool has_id;
  bool pair;           /* an output is named text_output or num_output_tokens */
  size_t n_out, n_raw; /* outputs and raw entries met so far */
  out_info outs[KEPT];
  view raws[KEPT];
} infer_scan;

/* First pass over one ModelInferResponse: checks all of it, takes the id
 * and the final flag, and notes the outputs and raw entries. */
static bool dec_infer(const uint8_t *p, const uint8_t *end, tp_triton_event *ev, infer_scan *s) {
  while (p < end) {
    pb_field f;
    param_entry e;
    out_tensor o;
    if (!pb_next(&p, end, &f)) return false;
    switch (f.num) {
      case 1: /* model_name */
      case 2: /* model_version */
        if (f.wt != WT_LEN) return false;
        break;
      case 3: /* id */
        if (f.wt != WT_LEN) return false;
        s->id.p = f.data;
        s->id.n = f.len;
        s->has_id = true;
        break;
      case 4: /* parameters; a later entry for the same key wins */
        if (f.wt != WT_LEN || !dec_param_entry(f.data, f.data + f.len, &e)) return false;
        if (e.has_value && e.v.which == PARAM_BOOL && cstr_is(e.key, LIT(FINAL_PARAM))) {
          ev->has_final_param = true;
          ev->final = e.v.b;
        }
        break;
      case 5: { /* outputs */
        if (f.wt != WT_LEN || !dec_output(f.data, f.data + f.len, &o)) return false;
        out_info i = classify(&o);
        if (i.kind != OUT_OTHER) s->pair = true;
        if (s->n_out < KEPT) s->outs[s->n_out] = i;
        s->n_out++;
        break;
      }
      case 6: /* raw_output_contents */
        if (f.wt != WT_LEN) return false;
        if (s->n_raw < KEPT) {
          s->raws[s->n_raw].p = f.data;
          s->raws[s->n_raw].n = f.len;
        }
        s->n_raw++;
        break;
      default: break;
    }
  }
  return true;
}

/* Reads one output we want, given its raw_output_contents entry (NULL when
 * it has none), into the event; a later one overwrites an earlier one. */
static int take_output(tp_triton_event *ev, const out_info *o, const view *raw) {
  if (o->kind == OUT_TEXT) {
    if (raw && raw->n > 0) {
      /* Element 0 of the BYTES tensor: a 4-byte little-endian length, then
       * the bytes; walked rather than trusting the shape. */
      if (raw->n < 4 || le32(raw->p) > raw->n - 4) return TP_EPROTO;
      ev->text = raw->p + 4;
      ev->text_len = le32(raw->p);
    } else if (o->has_typed) {
      /* Typed form: servers other than Triton may use it.  protobuf-c gave
       * an empty element as NULL. */
      ev->text = o->typed.n ? o->typed.p : NULL;
      ev->text_len = o->typed.n;
    }
  } else if (o->kind == OUT_TOKENS && raw && raw->n >= 4) {
    ev->num_output_tokens = (int64_t)le32(raw->p);
  }
  return 0;
}

/* Walks the fields of one number across the ModelInferResponse(s) of a
 * message, in order: the message itself when unary, else every
 * infer_response field in turn.  Used only on bytes dec_infer accepted. */
typedef struct field_iter {
  const uint8_t *outer, *outer_end; /* stream: top-level fields still ahead */
  const uint8_t *p, *end;           /* the current ModelInferResponse */
  uint32_t num;
} field_iter;

static void iter_init(field_iter *it, const uint8_t *data, size_t len, bool stream, uint32_t num) {
  it->num = num;
  it->outer = stream ? data : data + len;
  it->outer_end = data + len;
  it->p = data;
  it->end = stream ? data : data + len;
}

static bool iter_next(field_iter *it, pb_field *f) {
  for (;;) {
    while (it->p < it->end) {
      if (!pb_next(&it->p, it->end, f)) return false;
      if (f->num == it->num) return true;
    }
    do {
      if (it->outer >= it->outer_end || !pb_next(&it->outer, it->outer_end, f)) return false;
    } while (f->num != 2);
    it->p = f->data;
    it->end = f->data + f->len;
  }
}

/* outputs[i] goes with raw_output_contents[i], and the two may come in
 * any order.  When the first pass kept them all, they are paired from
 * there; otherwise a second pass walks the outputs while another walker
 * follows over the raw entries, each going over the message once. */
static int pair_outputs(const uint8_t *data, size_t len, bool stream, const infer_scan *s,
                        tp_triton_event *ev) {
  if (s->n_out <= KEPT && s->n_raw <= KEPT) {
    for (size_t i = 0; i < s->n_out; i++) {
      if (s->outs[i].kind == OUT_OTHER) continue;
      int rv = take_output(ev, &s->outs[i], i < s->n_raw ? &s->raws[i] : NULL);
      if (rv) return rv;
    }
    return 0;
  }
  field_iter outs, raws;
  iter_init(&outs, data, len, stream, 5);
  iter_init(&raws, data, len, stream, 6);
  pb_field of, rf;
  view raw = {NULL, 0};
  size_t n_raw = 0; /* raw entries walked; raw is the last of them */
  bool raw_left = true;
  for (size_t i = 0; iter_next(&outs, &of); i++) {
    out_tensor o;
    if (!dec_output(of.data, of.data + of.len, &o)) return TP_EPROTO;
    out_info info = classify(&o);
    if (info.kind == OUT_OTHER) continue;
    while (raw_left && n_raw <= i) {
      raw_left = iter_next(&raws, &rf);
      if (raw_left) {
        raw.p = rf.data;
        raw.n = rf.len;
        n_raw++;
      }
    }
    int rv = take_output(ev, &info, n_raw == i + 1 ? &raw : NULL);
    if (rv) return rv;
  }
  return 0;
}

static int parse_response(tp_triton_event *ev, const uint8_t *data, size_t len, bool stream) {
  infer_scan s; /* outs and raws are read only up to n_out and n_raw */
  s.id.p = NULL;
  s.id.n = 0;
  s.has_id = s.pair = false;
  s.n_out = s.n_raw = 0;
  view err = {NULL, 0};
  bool has_infer = !stream;
  if (stream) {
    const uint8_t *p = data, *end = data + len;
    while (p < end) {
      pb_field f;
      if (!pb_next(&p, end, &f)) return TP_EPROTO;
      if (f.num == 1) { /* error_message */
        if (f.wt != WT_LEN) return TP_EPROTO;
        err.p = f.data;
        err.n = f.len;
      } else if (f.num == 2) { /* infer_response */
        if (f.wt != WT_LEN || !dec_infer(f.data, f.data + f.len, ev, &s)) return TP_EPROTO;
        has_infer = true;
      }
    }
  } else if (!dec_infer(data, data + len, ev, &s)) {
    return TP_EPROTO;
  }
  if (s.pair) {
    int rv = pair_outputs(data, len, stream, &s, ev);
    if (rv) return rv;
  }
  if (has_infer) {
    ev->id = s.has_id ? (const char *)s.id.p : "";
    ev->id_len = s.has_id ? cstr_len(s.id) : 0;
  }
  if (!stream) {
    ev->final = true; /* a unary answer is the whole answer */
    return 0;
  }
  size_t err_len = cstr_len(err);
  if (err_len > 0) {
    /* An error ends its request whether or not the backend marked it final. */
    ev->error = (const char *)err.p;
    ev->error_len = err_len;
    ev->final = true;
  }
  return 0;
}

int tp_triton_parse_response(tp_triton_event *ev, const uint8_t *data, size_t len, bool stream) {
  static const uint8_t empty[1];
  memset(ev, 0, sizeof(*ev));
  ev->num_output_tokens = -1;
  int rv = parse_response(ev, len ? data : empty, len, stream);
  if (rv) {
    /* On error the event says nothing. */
    memset(ev, 0, sizeof(*ev));
    ev->num_output_tokens = -1;
  }
  return rv;
}

/* The reference: protobuf-c's unpack, then the extraction as it was. */

static bool first_bytes_element(const ProtobufCBinaryData *raw, const uint8_t **p, size_t *n) {
  /* Walk the 4-byte prefix of element 0 instead of trusting the shape. */
  if (raw->len < 4) return false;
  uint32_t l = le32(raw->data);
  if (l > raw->len - 4) return false;
  *p = raw->data + 4;
  *n = l;
  return true;
}

static int fill_from_infer_response(const Inference__ModelInferResponse *r, tp_triton_event *ev) {
  ev->id = r->id;
  ev->id_len = r->id ? strlen(r->id) : 0;
  for (size_t i = 0; i < r->n_parameters; i++) {
    const Inference__ModelInferResponse__ParametersEntry *e = r->parameters[i];
    if (e->key && strcmp(e->key, FINAL_PARAM) == 0 && e->value &&
        e->value->parameter_choice_case == INFERENCE__INFER_PARAMETER__PARAMETER_CHOICE_BOOL_PARAM) {
      ev->has_final_param = true;
      ev->final = e->value->bool_param;
    }
  }
  for (size_t i = 0; i < r->n_outputs; i++) {
    const char *name = r->outputs[i]->name;
    if (!name) continue;
    const ProtobufCBinaryData *raw = i < r->n_raw_output_contents ? &r->raw_output_contents[i] : NULL;
    if (strcmp(name, TEXT_OUTPUT) == 0 || strcmp(name, "TEXT") == 0) {
      if (raw && raw->len > 0) {
        if (!first_bytes_element(raw, &ev->text, &ev->text_len)) return TP_EPROTO;
      } else if (r->outputs[i]->contents && r->outputs[i]->contents->n_bytes_contents > 0) {
        ev->text = r->outputs[i]->contents->bytes_contents[0].data;
        ev->text_len = r->outputs[i]->contents->bytes_contents[0].len;
      }
    } else if (strcmp(name, NUM_OUTPUT_TOKENS) == 0 && raw && raw->len >= 4) {
      ev->num_output_tokens = (int64_t)le32(raw->data);
    }
  }
  return 0;
}

static int parse_response_pbc(tp_triton_resp *r, tp_triton_event *ev, const uint8_t *data, size_t len,
                              bool stream) {
  if (stream) {
    Inference__ModelStreamInferResponse *m = inference__model_stream_infer_response__unpack(NULL, len, data);
    if (!m) return TP_EPROTO;
    r->msg = m;
    if (m->error_message && m->error_message[0]) {
      ev->error = m->error_message;
      ev->error_len = strlen(m->error_message);
    }
    if (m->infer_response) {
      int rv = fill_from_infer_response(m->infer_response, ev);
      if (rv) return rv;
    }
    if (ev->error) ev->final = true;
  } else {
    Inference__ModelInferResponse *m = inference__model_infer_response__unpack(NULL, len, data);
    if (!m) return TP_EPROTO;
    r->msg = m;
    int rv = fill_from_infer_response(m, ev);
    if (rv) return rv;
    ev->final = true;
  }
  return 0;
}

int tp__triton_parse_response_pbc(tp_triton_resp *r, tp_triton_event *ev, const uint8_t *data, size_t len,
                                  bool stream) {
  memset(ev, 0, sizeof(*ev));
  ev->num_output_tokens = -1;
  r->stream = stream;
  r->msg = NULL;
  int rv = parse_response_pbc(r, ev, data, len, stream);
  if (rv) {
    tp__triton_resp_free(r);
    memset(ev, 0, sizeof(*ev));
    ev->num_output_tokens = -1;
  }
  return rv;
}

void tp__triton_resp_free(tp_triton_resp *r) {
  if (!r->msg) return;
  if (r->stream)
    inference__model_stream_infer_response__free_unpacked(r->msg, NULL);
  else
    inference__model_infer_response__free_unpacked(r->msg, NULL);
  r->msg = NULL;
}

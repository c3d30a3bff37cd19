/* Fuzz target: the records-file line reader of the read-back
 * (tp__records_scan, lib/report/tp_records.c).  The file is on disk while
 * the run goes on, so anything may be found there: the reader either
 * refuses a line or returns fields that hold together, and where jansson
 * also reads the line as an object, both read the same seq, response
 * times, text and reasoning. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "report/tp_records.h"
#include "util/tp_common.h"
#include "util/tp_utf8.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void same_text(const tp_buf *b, json_t *v) {
  size_t n = json_is_string(v) ? json_string_length(v) : 0;
  if (b->len != n || (n && memcmp(b->data, json_string_value(v), n) != 0)) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tp__records_fields f;
  memset(&f, 0, sizeof(f));
  int rv = tp__records_scan((const char *)data, size, &f);
  if (rv != 0 && rv != TP_EPROTO && rv != TP_ENOMEM) abort();
  if (rv == 0) {
    if (f.n_resp > f.cap_resp || (f.n_resp && !f.resp_ns)) abort();
    if (f.n_resp && !f.has_resp) abort();
    if (f.n_at > f.cap_at || (f.n_at && (!f.text_at || !f.has_at))) abort();
    /* Valid UTF-8; a NUL is a character like any other (\u0000). */
    if (tp_utf8_valid((const char *)f.text.data, f.text.len) != f.text.len) abort();
    if (tp_utf8_valid((const char *)f.reasoning.data, f.reasoning.len) != f.reasoning.len) abort();
    json_t *o = json_loadb((const char *)data, size, JSON_ALLOW_NUL, NULL);
    if (json_is_object(o)) {
      json_t *seq = json_object_get(o, "seq"), *rs = json_object_get(o, "response_ns");
      if (f.has_seq != json_is_integer(seq) || (f.has_seq && f.seq != (uint64_t)json_integer_value(seq))) abort();
      if (f.has_resp != json_is_array(rs) || (f.has_resp && f.n_resp != json_array_size(rs))) abort();
      for (size_t i = 0; f.resp_ints && i < f.n_resp; i++)
        if (f.resp_ns[i] != (uint64_t)json_integer_value(json_array_get(rs, i))) abort();
      same_text(&f.text, json_object_get(o, "text"));
      same_text(&f.reasoning, json_object_get(o, "reasoning"));
    }
    json_decref(o);
  }
  tp__records_fields_fini(&f);
  return 0;
}

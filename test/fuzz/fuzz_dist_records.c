/* Fuzz target: the decoder of the records a rank sends rank 0 at the end
 * of a level (tp_dist_unpack_level, lib/run/tp_dist.c).  The bytes come
 * from another process over MPI, so they are parsed like any input: the
 * decoder either refuses them or returns records that are consistent in
 * themselves, and packing those records again gives bytes that decode to
 * the same records (the format has one encoding per level). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "record/tp_record.h"
#include "run/tp_dist.h"
#include "util/tp_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void free_recs(tp_record *recs, uint64_t n) {
  for (uint64_t i = 0; recs && i < n; i++) tp_record_fini(&recs[i]);
  free(recs);
}

/* The fields a decoded record must hold together. */
static void check_record(const tp_record *r) {
  if (r->n_resp && !r->resp_ns) abort();
  if (r->text.len && !r->text.data) abort();
  if (r->reasoning.len && !r->reasoning.data) abort();
  /* A probe for AddressSanitizer: the message must end inside its block. */
  if (r->err_msg && strlen(r->err_msg) == SIZE_MAX) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tp_dist_level_head head;
  tp_record *recs = NULL;
  int rv = tp_dist_unpack_level(data, size, &head, &recs);
  if (rv == TP_EPROTO || rv == TP_ENOMEM) {
    if (recs) abort(); /* nothing is returned on failure */
    return 0;
  }
  if (rv != 0) abort();
  if (head.n_records && !recs) abort();
  for (uint64_t i = 0; i < head.n_records; i++) check_record(&recs[i]);

  /* Round trip: pack what was decoded, decode it again, compare. */
  tp_buf out;
  tp_buf_init(&out);
  if (tp_dist_pack_level(&out, &head, recs, (size_t)head.n_records) == 0) {
    tp_dist_level_head head2;
    tp_record *recs2 = NULL;
    if (tp_dist_unpack_level(out.data, out.len, &head2, &recs2) != 0) abort();
    if (head.level != head2.level || head.slots != head2.slots || head.max_in_flight != head2.max_in_flight ||
        head.n_records != head2.n_records)
      abort();
    /* Packing the second decode must reproduce the same bytes. */
    tp_buf out2;
    tp_buf_init(&out2);
    if (tp_dist_pack_level(&out2, &head2, recs2, (size_t)head2.n_records) != 0) abort();
    if (out2.len != out.len || memcmp(out2.data, out.data, out.len) != 0) abort();
    tp_buf_fini(&out2);
    free_recs(recs2, head2.n_records);
  }
  tp_buf_fini(&out);
  free_recs(recs, head.n_records);
  return 0;
}

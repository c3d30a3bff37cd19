/* The pure parts of a distributed run (lib/run/tp_dist.c): the load split
 * sums exactly, the dealt-out arrivals of N ranks put back together are the
 * single-process schedule, the clock estimate keeps the fastest exchange
 * and brackets the true offset, and a level's records survive the wire
 * byte for byte while damaged bytes are refused, never read past. */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "run/tp_dist.h"
#include "sched/tp_sched.h"
#include "util/tp_rng.h"
#include "tp_test.h"

static void test_share(void) {
  CHECK(tp_dist_share(7, 0, 2) == 4 && tp_dist_share(7, 1, 2) == 3, "7 slots over 2 ranks: 4 + 3");
  CHECK(tp_dist_share(10, 0, 4) == 3 && tp_dist_share(10, 1, 4) == 3 && tp_dist_share(10, 2, 4) == 2 &&
            tp_dist_share(10, 3, 4) == 2,
        "10 over 4: the remainder goes to the lowest ranks (3 3 2 2)");
  CHECK(tp_dist_share(3, 3, 4) == 0 && tp_dist_share(3, 2, 4) == 1,
        "fewer slots than ranks: the last rank idles");
  int bad = 0;
  for (uint32_t size = 1; size <= 9; size++)
    for (uint32_t total = 0; total <= 200; total++) {
      uint64_t sum = 0;
      uint32_t lo = UINT32_MAX, hi = 0;
      for (uint32_t k = 0; k < size; k++) {
        uint32_t s = tp_dist_share(total, k, size);
        sum += s;
        lo = s < lo ? s : lo;
        hi = s > hi ? s : hi;
      }
      if (sum != total || hi - lo > 1) bad++;
    }
  CHECK_INT(bad, 0, "shares sum to the total and differ by at most one (1..9 ranks, 0..200 slots)");
}

static void test_strided(void) {
  int bad = 0;
  for (uint32_t size = 1; size <= 9; size++)
    for (uint64_t n = 0; n <= 100; n++) {
      uint64_t sum = 0;
      for (uint32_t k = 0; k < size; k++) {
        uint64_t count = 0;
        for (uint64_t i = k; i < n; i += size) count++;
        if (tp_dist_strided(n, k, size) != count) bad++;
        sum += tp_dist_strided(n, k, size);
      }
      if (sum != n) bad++;
    }
  CHECK_INT(bad, 0, "dealt-out counts match a count by hand and sum to n");
}

static void test_by_share(void) {
  CHECK(tp_dist_by_share(100, 7, 0, 2) == 57 && tp_dist_by_share(100, 7, 1, 2) == 43,
        "100 requests over slots 4 + 3: 57 + 43 (the larger remainder gets the leftover)");
  CHECK(tp_dist_by_share(10, 3, 3, 4) == 0, "a rank with no slot gets no request");
  int bad = 0;
  for (uint32_t size = 1; size <= 6; size++)
    for (uint32_t slots = 1; slots <= 20; slots++)
      for (uint64_t total = 0; total <= 60; total++) {
        uint64_t sum = 0;
        for (uint32_t k = 0; k < size; k++) {
          uint64_t part = tp_dist_by_share(total, slots, k, size);
          double want = (double)total * tp_dist_share(slots, k, size) / slots;
          if ((double)part < want - 1 || (double)part > want + 1) bad++;
          sum += part;
        }
        if (sum != total) bad++;
      }
  CHECK_INT(bad, 0, "parts sum to the total and stay within one request of the proportion");
  CHECK(tp_dist_by_share(UINT64_MAX / 3, 100000, 0, 3) > 0, "no overflow for huge counts");
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return (x > y) - (x < y);
}

/* What the run does: every rank draws the whole schedule from the seed and
 * keeps arrivals k, k + N, ...; put back together they are the schedule. */
static void test_union(const char *what, tp_arrival kind, double k_shape) {
  enum { N_ARR = 5000 };
  uint64_t *all = malloc(N_ARR * sizeof(*all)), *merged = malloc(N_ARR * sizeof(*merged));
  uint64_t *mine = malloc(N_ARR * sizeof(*mine));
  int bad = 0;
  for (uint32_t size = 2; size <= 4; size++) {
    tp_sched_fill(all, N_ARR, 2000, kind, k_shape, tp_sched_seed(42, 0));
    size_t m = 0;
    for (uint32_t r = 0; r < size; r++) {
      tp_sched_fill(mine, N_ARR, 2000, kind, k_shape, tp_sched_seed(42, 0));
      size_t got = 0;
      for (size_t i = r; i < N_ARR; i += size) mine[got++] = mine[i];
      if (got != tp_dist_strided(N_ARR, r, size)) bad++;
      memcpy(merged + m, mine, got * sizeof(*mine));
      m += got;
    }
    qsort(merged, m, sizeof(*merged), cmp_u64);
    if (m != N_ARR || memcmp(merged, all, N_ARR * sizeof(*all)) != 0) bad++;
  }
  CHECK_INT(bad, 0, what);
  free(all);
  free(merged);
  free(mine);
}

static void test_clock(void) {
  tp_clock_est e;
  tp_clock_est_init(&e);
  CHECK(e.samples == 0 && e.rtt_ns == UINT64_MAX, "an empty estimate has no round trip");
  /* The remote clock runs 5 ms ahead; delays out and back vary, and the
   * fastest exchange is asymmetric (30 us out, 10 us back). */
  const int64_t off = 5000000;
  struct {
    uint64_t out, back;
  } d[] = {{400, 900}, {30000, 10000}, {200000, 5000}, {50000, 50000}, {80000, 20000}};
  uint64_t t = 1000000000;
  for (size_t i = 0; i < sizeof(d) / sizeof(d[0]); i++) {
    uint64_t t0 = t, t1 = t0 + d[i].out + d[i].back;
    tp_clock_est_add(&e, t0, t0 + d[i].out + (uint64_t)off, t1);
    t += 1000000;
  }
  CHECK_INT(e.samples, 5, "every exchange is counted");
  CHECK_INT(e.rtt_ns, 1300, "the fastest round trip is kept (0.4 + 0.9 us)");
  CHECK(llabs(e.offset_ns - off) <= (long long)e.uncertainty_ns,
        "the true offset lies within the uncertainty");
  CHECK_INT(e.uncertainty_ns, 650, "uncertainty is half the round trip");
  tp_clock_est_add(&e, 10, 5, 9);
  CHECK_INT(e.samples, 5, "an exchange that ends before it starts is ignored");

  /* Another machine: its monotonic clock started long before ours. */
  tp_clock_est_init(&e);
  tp_clock_est_add(&e, 2000000000ULL, 2000000000ULL + 7000 - 86400000000000ULL, 2000014000ULL);
  CHECK_INT(e.offset_ns, -86400000000000LL, "a clock a day behind: a negative offset, no wrap");
}

static void test_shift(void) {
  tp_record r;
  tp_record_init(&r);
  r.planned_ns = 1000;
  r.sent_ns = 1100;
  tp_record_add_response(&r, 1500, true);
  tp_record_add_response(&r, 1700, false);
  r.done_ns = 1700;
  tp_dist_shift_record(&r, 100);
  CHECK(r.planned_ns == 900 && r.sent_ns == 1000 && r.first_token_ns == 1400 && r.first_resp_ns == 1400 &&
            r.last_token_ns == 1400 && r.done_ns == 1600 && r.resp_ns[0] == 1400 && r.resp_ns[1] == 1600,
        "every timestamp moves by the offset");
  tp_record_fini(&r);
  tp_record_init(&r);
  r.sent_ns = 50;
  tp_dist_shift_record(&r, -25);
  CHECK(r.sent_ns == 75 && r.planned_ns == 0 && r.done_ns == 0,
        "0 (did not happen) stays 0; a negative offset adds");
  tp_record_fini(&r);
}

static void make_records(tp_record *recs, size_t n) {
  tp_rng g;
  tp_rng_seed(&g, 7);
  for (size_t i = 0; i < n; i++) {
    tp_record *r = &recs[i];
    tp_record_init(r);
    r->seq = 3 + 4 * i;
    r->prompt_index = (uint32_t)(i * 13);
    r->max_tokens = 64;
    r->warmup = i == 0;
    r->planned_ns = 1000000 + i;
    r->sent_ns = r->planned_ns + 10;
    uint32_t k = (uint32_t)(i % 5);
    for (uint32_t j = 0; j < k; j++) tp_record_add_response(r, r->sent_ns + 100 * (j + 1), j != 0);
    /* Two responses of one read (one stamp): the merged counts travel. */
    if (k >= 3) tp_record_add_response(r, r->resp_ns[k - 1], true);
    k = r->n_resp;
    r->done_ns = k ? r->resp_ns[k - 1] : 0;
    r->input_tokens = (int64_t)i - 1;
    r->output_tokens = i % 2 ? -1 : (int64_t)(tp_rng_next(&g) % 1000);
    r->server_output_tokens = 12;
    r->server_input_tokens = -1;
    r->server_cached_tokens = 5;
    r->reasoning_tokens = i % 3 ? -1 : 2;
    if (i % 2) tp_buf_append(&r->text, "a\0b \xff text", 10); /* NUL and invalid UTF-8 travel as they are */
    if (i % 3 == 0) tp_buf_append_str(&r->reasoning, "thinking");
    if (i == 2) tp_record_fail(r, TP_ERRCLASS_GRPC_STATUS, 14, "UNAVAILABLE: overloaded", 23);
    if (i == 3) tp_record_fail(r, TP_ERRCLASS_TIMEOUT, -1, "", 0);
    /* The request's ids travel (docs/metrics.md, "Request ids"). */
    if (i % 2) {
      char sid[32];
      snprintf(sid, sizeof(sid), "chatcmpl-%zu", i);
      tp_record_set_server_id(r, sid, strlen(sid));
      for (size_t t = 0; t < 16; t++) r->trace_id[t] = (uint8_t)(i + t + 1);
      for (size_t t = 0; t < 8; t++) r->span_id[t] = (uint8_t)(i * 3 + t + 1);
    }
  }
}

static bool same_record(const tp_record *a, const tp_record *b) {
  if (a->seq != b->seq || a->prompt_index != b->prompt_index || a->max_tokens != b->max_tokens ||
      a->warmup != b->warmup || a->planned_ns != b->planned_ns || a->sent_ns != b->sent_ns ||
      a->first_resp_ns != b->first_resp_ns || a->first_token_ns != b->first_token_ns ||
      a->last_token_ns != b->last_token_ns || a->done_ns != b->done_ns || a->n_resp != b->n_resp ||
      a->n_text_resp != b->n_text_resp || a->n_text_merged != b->n_text_merged ||
      a->input_tokens != b->input_tokens ||
      a->output_tokens != b->output_tokens || a->server_output_tokens != b->server_output_tokens ||
      a->server_input_tokens != b->server_input_tokens ||
      a->server_cached_tokens != b->server_cached_tokens || a->reasoning_tokens != b->reasoning_tokens ||
      a->err_class != b->err_class || a->grpc_status != b->grpc_status ||
      strcmp(a->server_id, b->server_id) || memcmp(a->trace_id, b->trace_id, sizeof(a->trace_id)) ||
      memcmp(a->span_id, b->span_id, sizeof(a->span_id)))
    return false;
  if (a->n_resp && memcmp(a->resp_ns, b->resp_ns, a->n_resp * sizeof(uint64_t))) return false;
  if (a->text.len != b->text.len || (a->text.len && memcmp(a->text.data, b->text.data, a->text.len)))
    return false;
  if (a->reasoning.len != b->reasoning.len ||
      (a->reasoning.len && memcmp(a->reasoning.data, b->reasoning.data, a->reasoning.len)))
    return false;
  if (!a->err_msg != !b->err_msg) return false;
  return !a->err_msg || strcmp(a->err_msg, b->err_msg) == 0;
}

static void test_wire(void) {
  enum { N_REC = 12 };
  tp_record recs[N_REC];
  make_records(recs, N_REC);
  tp_buf b;
  tp_buf_init(&b);
  tp_dist_level_head h = {3, 4, 5, N_REC};
  CHECK_INT(tp_dist_pack_level(&b, &h, recs, N_REC), 0, "a level packs");

  tp_dist_level_head h2;
  tp_record *out = NULL;
  CHECK_INT(tp_dist_unpack_level(b.data, b.len, &h2, &out), 0, "and unpacks");
  CHECK(h2.level == 3 && h2.slots == 4 && h2.max_in_flight == 5 && h2.n_records == N_REC,
        "the header survives");
  int same = 0;
  for (size_t i = 0; out && i < N_REC; i++) same += same_record(&recs[i], &out[i]);
  CHECK_INT(same, N_REC, "every record survives field by field (text with NUL bytes, NULL and empty errors)");
  CHECK(out && out[0].err_msg == NULL && out[3].err_msg && out[3].err_msg[0] == 0,
        "a missing error message stays NULL, an empty one stays empty");
  for (size_t i = 0; out && i < N_REC; i++) tp_record_fini(&out[i]);
  free(out);

  /* Every cut short is refused, with nothing returned. */
  int bad = 0;
  for (size_t cut = 0; cut < b.len; cut++) {
    out = (tp_record *)1;
    if (tp_dist_unpack_level(b.data, cut, &h2, &out) != TP_EPROTO || out != NULL) bad++;
  }
  CHECK_INT(bad, 0, "the level cut at every byte offset is refused (TP_EPROTO)");

  /* The same bytes right before an unmapped page: a read one past the end
   * faults. */
  long page = sysconf(_SC_PAGESIZE);
  size_t span = ((b.len + (size_t)page - 1) / (size_t)page + 1) * (size_t)page;
  uint8_t *map = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map != MAP_FAILED) {
    mprotect(map + span - (size_t)page, (size_t)page, PROT_NONE);
    uint8_t *at = map + span - (size_t)page - b.len;
    memcpy(at, b.data, b.len);
    bad = 0;
    for (size_t cut = 0; cut <= b.len; cut++) {
      uint8_t *p = at + (b.len - cut); /* the last `cut` bytes end at the guard */
      memmove(p, b.data, cut);
      int rv = tp_dist_unpack_level(p, cut, &h2, &out);
      if (rv == 0) {
        for (size_t i = 0; i < h2.n_records; i++) tp_record_fini(&out[i]);
        free(out);
      }
      if ((cut == b.len) != (rv == 0)) bad++;
    }
    CHECK_INT(bad, 0, "against a guard page: only the whole level is read, nothing past its end");
    munmap(map, span);
  }

  /* Damaged bytes: refused or read, never a crash (the sanitizer build
   * watches the reads). */
  tp_rng g;
  tp_rng_seed(&g, 99);
  int crashed_not = 0;
  for (int trial = 0; trial < 2000; trial++) {
    uint8_t *copy = malloc(b.len);
    memcpy(copy, b.data, b.len);
    for (int f = 0; f < 3; f++) copy[tp_rng_next(&g) % b.len] ^= (uint8_t)(1u << (tp_rng_next(&g) % 8));
    if (tp_dist_unpack_level(copy, b.len, &h2, &out) == 0) {
      for (size_t i = 0; i < h2.n_records; i++) tp_record_fini(&out[i]);
      free(out);
    }
    free(copy);
    crashed_not++;
  }
  CHECK_INT(crashed_not, 2000, "2000 levels with flipped bits are refused or read without a fault");

  uint8_t bogus[] = {'T', 'P', 'L', '1', 0,    0,    0,    0,    0,    0,    0,    0,
                     0,   0,   0,   0,   0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
  CHECK_INT(tp_dist_unpack_level(bogus, sizeof(bogus), &h2, &out), TP_EPROTO,
            "a record count the bytes cannot hold is refused before any allocation");
  tp_buf_append(&b, "x", 1);
  CHECK_INT(tp_dist_unpack_level(b.data, b.len, &h2, &out), TP_EPROTO, "trailing bytes are refused");
  CHECK_INT(tp_dist_unpack_level((const uint8_t *)"TPL2", 4, &h2, &out), TP_EPROTO,
            "another format is refused");

  tp_buf_reset(&b);
  tp_dist_level_head h0 = {0, 0, 0, 0};
  CHECK(tp_dist_pack_level(&b, &h0, NULL, 0) == 0 && tp_dist_unpack_level(b.data, b.len, &h2, &out) == 0 &&
            h2.n_records == 0,
        "a rank with no request sends an empty level");
  free(out);
  tp_buf_fini(&b);
  for (size_t i = 0; i < N_REC; i++) tp_record_fini(&recs[i]);
}

int main(void) {
  test_share();
  test_strided();
  test_by_share();
  test_union("constant: the ranks' arrivals put together are the one schedule", TP_ARRIVAL_CONSTANT, 1);
  test_union("poisson: the ranks' arrivals put together are the one schedule", TP_ARRIVAL_POISSON, 1);
  test_union("gamma k=0.5: the ranks' arrivals put together are the one schedule", TP_ARRIVAL_GAMMA, 0.5);
  test_clock();
  test_shift();
  test_wire();
  return tp_test_done();
}

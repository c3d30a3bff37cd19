#include "tp_dist.h"

#include <stdlib.h>
#include <string.h>

/* ---- splitting the load ---------------------------------------------------- */

uint32_t tp_dist_share(uint32_t total, uint32_t rank, uint32_t size) {
  if (size == 0 || rank >= size) return 0;
  return total / size + (rank < total % size ? 1 : 0);
}

uint64_t tp_dist_strided(uint64_t n, uint32_t rank, uint32_t size) {
  if (size == 0 || rank >= size || n <= rank) return 0;
  return (n - rank + size - 1) / size;
}

uint64_t tp_dist_by_share(uint64_t total, uint32_t slots, uint32_t rank, uint32_t size) {
  if (size == 0 || rank >= size || slots == 0) return 0;
  /* base_k = floor(total x w_k / slots) with remainder r_k; the requests the
   * floors leave over go one each to the largest remainders.  128-bit
   * products: total x w_k can pass 2^64 for long runs at high concurrency. */
  unsigned __int128 sum_base = 0;
  uint64_t my_base = 0, my_rem = 0;
  uint32_t mine = tp_dist_share(slots, rank, size);
  if (mine == 0) return 0;
  for (uint32_t k = 0; k < size; k++) {
    unsigned __int128 prod = (unsigned __int128)total * tp_dist_share(slots, k, size);
    sum_base += prod / slots;
    if (k == rank) {
      my_base = (uint64_t)(prod / slots);
      my_rem = (uint64_t)(prod % slots);
    }
  }
  uint64_t left = total - (uint64_t)sum_base; /* < size */
  uint64_t ahead = 0;                         /* ranks served before this one */
  for (uint32_t k = 0; k < size; k++) {
    uint32_t w = tp_dist_share(slots, k, size);
    if (k == rank || w == 0) continue;
    uint64_t rem = (uint64_t)(((unsigned __int128)total * w) % slots);
    if (rem > my_rem || (rem == my_rem && k < rank)) ahead++;
  }
  return my_base + (ahead < left ? 1 : 0);
}

/* ---- clock offsets ------------------------------------------------------------- */

void tp_clock_est_init(tp_clock_est *e) {
  memset(e, 0, sizeof(*e));
  e->rtt_ns = UINT64_MAX;
}

void tp_clock_est_add(tp_clock_est *e, uint64_t t0_ns, uint64_t t_remote_ns, uint64_t t1_ns) {
  if (t1_ns < t0_ns) return;
  uint64_t rtt = t1_ns - t0_ns;
  e->samples++;
  if (rtt >= e->rtt_ns) return;
  e->rtt_ns = rtt;
  /* Unsigned arithmetic wraps, and the cast takes the difference as signed:
   * right whichever clock is ahead, as long as they are within 2^63 ns. */
  uint64_t mid = t0_ns + rtt / 2;
  e->offset_ns = (int64_t)(t_remote_ns - mid);
  e->uncertainty_ns = (rtt + 1) / 2;
}

static inline uint64_t shift(uint64_t t, int64_t off) {
  return t ? t - (uint64_t)off : 0;
}

void tp_dist_shift_record(tp_record *rec, int64_t offset_ns) {
  rec->planned_ns = shift(rec->planned_ns, offset_ns);
  rec->sent_ns = shift(rec->sent_ns, offset_ns);
  rec->first_resp_ns = shift(rec->first_resp_ns, offset_ns);
  rec->first_token_ns = shift(rec->first_token_ns, offset_ns);
  rec->second_token_ns = shift(rec->second_token_ns, offset_ns);
  rec->first_answer_ns = shift(rec->first_answer_ns, offset_ns);
  rec->last_token_ns = shift(rec->last_token_ns, offset_ns);
  rec->done_ns = shift(rec->done_ns, offset_ns);
  rec->last_choice_ns = shift(rec->last_choice_ns, offset_ns);
  for (uint32_t i = 0; i < rec->n_resp; i++) rec->resp_ns[i] = shift(rec->resp_ns[i], offset_ns);
}

/* ---- records on the wire ---------------------------------------------------------- */

/* TPL3: a record carries its count of text responses of one time; TPL4:
 * its ids too (the server's, the trace context sent). */
#define MAGIC "TPL4"
#define NO_STRING UINT64_MAX /* a NULL error message, told apart from "" */

static int put64(tp_buf *b, uint64_t v) {
  uint8_t x[8];
  for (int i = 0; i < 8; i++) x[i] = (uint8_t)(v >> (8 * i));
  return tp_buf_append(b, x, 8);
}

static int put32(tp_buf *b, uint32_t v) {
  uint8_t x[4];
  for (int i = 0; i < 4; i++) x[i] = (uint8_t)(v >> (8 * i));
  return tp_buf_append(b, x, 4);
}

static int put_bytes(tp_buf *b, const void *p, size_t n) {
  int rv = put64(b, p ? (uint64_t)n : NO_STRING);
  if (!rv && p && n) rv = tp_buf_append(b, p, n);
  return rv;
}

static int put_record(tp_buf *b, const tp_record *r) {
  int rv = put64(b, r->seq);
  rv |= put32(b, r->prompt_index);
  rv |= put32(b, r->max_tokens);
  /* Bit 0: warm-up; the bits above: the re-send count. */
  rv |= put32(b, (r->warmup ? 1u : 0u) | (r->resends << 1));
  rv |= put64(b, r->planned_ns);
  rv |= put64(b, r->sent_ns);
  rv |= put64(b, r->first_resp_ns);
  rv |= put64(b, r->first_token_ns);
  rv |= put64(b, r->second_token_ns);
  rv |= put64(b, r->first_answer_ns);
  rv |= put64(b, r->last_token_ns);
  rv |= put64(b, r->done_ns);
  rv |= put64(b, r->last_choice_ns);
  rv |= put32(b, r->n_choice_resp);
  rv |= put32(b, r->n_resp);
  rv |= put32(b, r->n_text_resp);
  rv |= put32(b, r->n_text_merged);
  for (uint32_t i = 0; i < r->n_resp && !rv; i++) rv |= put64(b, r->resp_ns[i]);
  rv |= put64(b, (uint64_t)r->input_tokens);
  rv |= put64(b, (uint64_t)r->output_tokens);
  rv |= put64(b, (uint64_t)r->server_output_tokens);
  rv |= put64(b, (uint64_t)r->server_input_tokens);
  rv |= put64(b, (uint64_t)r->server_cached_tokens);
  rv |= put64(b, (uint64_t)r->reasoning_tokens);
  rv |= put64(b, (uint64_t)r->client_output_tokens);
  rv |= put64(b, (uint64_t)r->client_input_tokens);
  rv |= put32(b, r->server_counts);
  rv |= put32(b, (uint32_t)r->err_class);
  rv |= put32(b, (uint32_t)r->grpc_status);
  rv |= put_bytes(b, r->text.data ? r->text.data : (const uint8_t *)"", r->text.len);
  rv |= put_bytes(b, r->reasoning.data ? r->reasoning.data : (const uint8_t *)"", r->reasoning.len);
  rv |= put_bytes(b, r->err_msg, r->err_msg ? strlen(r->err_msg) : 0);
  /* The request's ids (docs/metrics.md, "Request ids"). */
  rv |= put_bytes(b, r->server_id, strlen(r->server_id));
  rv |= tp_buf_append(b, r->trace_id, sizeof(r->trace_id));
  rv |= tp_buf_append(b, r->span_id, sizeof(r->span_id));
  return rv ? TP_ENOMEM : 0;
}

int tp_dist_pack_level(tp_buf *out, const tp_dist_level_head *head, const tp_record *recs, size_t n) {
  int rv = tp_buf_append(out, MAGIC, 4);
  rv |= put32(out, head->level);
  rv |= put32(out, head->slots);
  rv |= put32(out, head->max_in_flight);
  rv |= put64(out, n);
  for (size_t i = 0; i < n && !rv; i++) rv = put_record(out, &recs[i]);
  return rv ? TP_ENOMEM : 0;
}

/* A bounded reader: every get fails once the input is short, and the
 * failure sticks, so a record is checked once at its end. */
typedef struct reader {
  const uint8_t *p;
  size_t left;
  bool bad;
} reader;

static uint64_t get64(reader *r) {
  if (r->bad || r->left < 8) {
    r->bad = true;
    return 0;
  }
  uint64_t v = 0;
  for (int i = 0; i < 8; i++) v |= (uint64_t)r->p[i] << (8 * i);
  r->p += 8;
  r->left -= 8;
  return v;
}

static uint32_t get32(reader *r) {
  if (r->bad || r->left < 4) {
    r->bad = true;
    return 0;
  }
  uint32_t v = (uint32_t)r->p[0] | (uint32_t)r->p[1] << 8 | (uint32_t)r->p[2] << 16 | (uint32_t)r->p[3] << 24;
  r->p += 4;
  r->left -= 4;
  return v;
}

/* Points *s at the next byte string (not copied); *null when it was NULL. */
static size_t get_bytes(reader *r, const uint8_t **s, bool *null) {
  uint64_t n = get64(r);
  *s = NULL;
  *null = n == NO_STRING;
  if (*null || r->bad) return 0;
  if (n > r->left) {
    r->bad = true;
    return 0;
  }
  *s = r->p;
  r->p += n;
  r->left -= (size_t)n;
  return (size_t)n;
}

static int get_record(reader *rd, tp_record *r) {
  tp_record_init(r);
  r->seq = get64(rd);
  r->prompt_index = get32(rd);
  r->max_tokens = get32(rd);
  uint32_t flags = get32(rd);
  r->warmup = (flags & 1) != 0;
  r->resends = flags >> 1;
  r->planned_ns = get64(rd);
  r->sent_ns = get64(rd);
  r->first_resp_ns = get64(rd);
  r->first_token_ns = get64(rd);
  r->second_token_ns = get64(rd);
  r->first_answer_ns = get64(rd);
  r->last_token_ns = get64(rd);
  r->done_ns = get64(rd);
  r->last_choice_ns = get64(rd);
  r->n_choice_resp = get32(rd);
  uint32_t n_resp = get32(rd);
  r->n_text_resp = get32(rd);
  r->n_text_merged = get32(rd);
  /* Checked against what is left before allocating: a corrupt count must
   * not ask for gigabytes. */
  if (rd->bad || (uint64_t)n_resp * 8 > rd->left || r->n_text_resp > n_resp || r->n_choice_resp > n_resp ||
      r->n_text_merged > r->n_text_resp)
    return TP_EPROTO;
  if (n_resp) {
    r->resp_ns = malloc((size_t)n_resp * sizeof(uint64_t));
    if (!r->resp_ns) return TP_ENOMEM;
    r->cap_resp = n_resp;
    for (uint32_t i = 0; i < n_resp; i++) r->resp_ns[i] = get64(rd);
    r->n_resp = n_resp;
  }
  r->input_tokens = (int64_t)get64(rd);
  r->output_tokens = (int64_t)get64(rd);
  r->server_output_tokens = (int64_t)get64(rd);
  r->server_input_tokens = (int64_t)get64(rd);
  r->server_cached_tokens = (int64_t)get64(rd);
  r->reasoning_tokens = (int64_t)get64(rd);
  r->client_output_tokens = (int32_t)(int64_t)get64(rd);
  r->client_input_tokens = (int32_t)(int64_t)get64(rd);
  r->server_counts = (uint8_t)get32(rd);
  uint32_t cls = get32(rd);
  r->grpc_status = (int)(int32_t)get32(rd);
  if (rd->bad || cls >= TP_ERRCLASS_COUNT) return TP_EPROTO;
  r->err_class = (tp_error_class)cls;
  const uint8_t *s;
  bool null;
  size_t n = get_bytes(rd, &s, &null);
  if (rd->bad || null) return TP_EPROTO;
  if (n && tp_buf_append(&r->text, s, n)) return TP_ENOMEM;
  n = get_bytes(rd, &s, &null);
  if (rd->bad || null) return TP_EPROTO;
  if (n && tp_buf_append(&r->reasoning, s, n)) return TP_ENOMEM;
  n = get_bytes(rd, &s, &null);
  if (rd->bad) return TP_EPROTO;
  if (!null) {
    r->err_msg = tp_strndup((const char *)s, n);
    if (!r->err_msg) return TP_ENOMEM;
  }
  /* The server's id as a record keeps one: printable ASCII, short. */
  n = get_bytes(rd, &s, &null);
  if (rd->bad || null || n >= sizeof(r->server_id)) return TP_EPROTO;
  for (size_t i = 0; i < n; i++)
    if (s[i] <= 0x20 || s[i] >= 0x7f) return TP_EPROTO;
  memcpy(r->server_id, s, n);
  r->server_id[n] = 0;
  if (rd->left < sizeof(r->trace_id) + sizeof(r->span_id)) return TP_EPROTO;
  memcpy(r->trace_id, rd->p, sizeof(r->trace_id));
  memcpy(r->span_id, rd->p + sizeof(r->trace_id), sizeof(r->span_id));
  rd->p += sizeof(r->trace_id) + sizeof(r->span_id);
  rd->left -= sizeof(r->trace_id) + sizeof(r->span_id);
  return 0;
}

int tp_dist_unpack_level(const uint8_t *p, size_t len, tp_dist_level_head *head, tp_record **recs) {
  *recs = NULL;
  memset(head, 0, sizeof(*head));
  if (len < 4 || memcmp(p, MAGIC, 4) != 0) return TP_EPROTO;
  reader rd = {p + 4, len - 4, false};
  tp_dist_level_head h;
  h.level = get32(&rd);
  h.slots = get32(&rd);
  h.max_in_flight = get32(&rd);
  h.n_records = get64(&rd);
  /* The smallest record takes well over 64 bytes: a count the input cannot
   * hold is corrupt. */
  if (rd.bad || h.n_records > rd.left / 64) return TP_EPROTO;
  tp_record *out = calloc(h.n_records ? h.n_records : 1, sizeof(*out));
  if (!out) return TP_ENOMEM;
  int rv = 0;
  size_t i = 0;
  for (; i < h.n_records; i++) {
    rv = get_record(&rd, &out[i]);
    if (rv) {
      i++; /* the half-read one is finalized too */
      break;
    }
  }
  if (!rv && rd.left) rv = TP_EPROTO; /* trailing bytes: not what was packed */
  if (rv) {
    for (size_t k = 0; k < i; k++) tp_record_fini(&out[k]);
    free(out);
    return rv;
  }
  *head = h;
  *recs = out;
  return 0;
}

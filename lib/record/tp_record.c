#include "tp_record.h"

#include <stdlib.h>
#include <string.h>

void tp_record_init(tp_record *r) {
  memset(r, 0, sizeof(*r));
  tp_buf_init(&r->text);
  r->input_tokens = -1;
  r->output_tokens = -1;
  r->server_output_tokens = -1;
  r->server_input_tokens = -1;
  r->server_cached_tokens = -1;
  r->reasoning_tokens = -1;
  r->client_output_tokens = -1;
  r->client_input_tokens = -1;
  r->output_ids = -1;
  tp_buf_init(&r->reasoning);
  r->grpc_status = -1;
}

void tp_record_fini(tp_record *r) {
  free(r->resp_ns);
  free(r->resp_text_at);
  free(r->err_msg);
  tp_buf_fini(&r->text);
  tp_buf_fini(&r->reasoning);
  memset(r, 0, sizeof(*r));
}

int tp_record_add_response(tp_record *r, uint64_t t_ns, bool has_text) {
  if (r->n_resp == r->cap_resp) {
    /* Small at first: a unary answer is one response, and without a
     * records file every record keeps its times to the level's end (64
     * times to begin with were 512 bytes a request, 60 MB/s of fresh heap
     * for the loop to fault in at 100,000 requests/s).  Doubling reaches
     * a stream of thousands of tokens in a few steps. */
    uint32_t cap = r->cap_resp ? r->cap_resp * 2 : 4;
    uint64_t *p = realloc(r->resp_ns, cap * sizeof(*p));
    if (!p) return TP_ENOMEM;
    r->resp_ns = p;
    if (r->resp_text_at) {
      uint32_t *a = realloc(r->resp_text_at, cap * sizeof(*a));
      if (!a) return TP_ENOMEM; /* resp_ns grew; cap_resp still holds for both */
      r->resp_text_at = a;
    }
    r->cap_resp = cap;
  }
  if (r->resp_text_at) r->resp_text_at[r->n_resp] = TP_RECORD_NO_TEXT;
  r->resp_ns[r->n_resp++] = t_ns;
  if (!r->first_resp_ns) r->first_resp_ns = t_ns;
  if (has_text) {
    if (r->n_text_resp && r->last_token_ns == t_ns) r->n_text_merged++;
    if (!r->first_token_ns) r->first_token_ns = t_ns;
    else if (!r->second_token_ns) r->second_token_ns = t_ns;
    r->last_token_ns = t_ns;
    r->n_text_resp++;
  }
  return 0;
}

/* The piece starts where the buffer ended before it: for a delta that is
 * where it is appended; for cumulative text it is the length of the whole
 * text the previous response held, so the piece is what this one added
 * (the exports write a cumulative response's own payload as that text up
 * to its piece's end). */
int tp_record_append_text(tp_record *r, bool reasoning, const void *s, size_t len, bool cumulative) {
  tp_buf *into = reasoning ? &r->reasoning : &r->text;
  size_t at = into->len;
  /* Made with the first piece: a record whose text came otherwise (built
   * outside the run) has none, and the exports know not to trust it.  A
   * lone answer in the first response needs none either: without places
   * the exports give the whole text to the first response that carried
   * text, which is that one.  Most unary answers end there, and the array
   * would be one more allocation for each of them; a second piece makes it,
   * with the first response's place (0) filled in. */
  bool lone_first = !reasoning && r->n_resp == 1 && r->text.len == 0 && r->reasoning.len == 0;
  if (r->n_resp && !r->resp_text_at && !lone_first) {
    r->resp_text_at = malloc(r->cap_resp * sizeof(*r->resp_text_at));
    for (uint32_t i = 0; r->resp_text_at && i < r->n_resp; i++) r->resp_text_at[i] = TP_RECORD_NO_TEXT;
    if (r->resp_text_at && r->n_resp > 1 && r->text.len > 0) r->resp_text_at[0] = 0;
  }
  if (r->n_resp && r->resp_text_at) {
    uint32_t v = at > TP_RECORD_AT_MAX ? TP_RECORD_AT_MAX : (uint32_t)at;
    r->resp_text_at[r->n_resp - 1] = v | (reasoning ? TP_RECORD_AT_REASONING : 0u);
  }
  if (cumulative) tp_buf_reset(into);
  return tp_buf_append(into, s, len);
}

void tp_record_shed(tp_record *r, uint64_t line_off) {
  r->had_reasoning = tp_record_has_reasoning(r);
  free(r->resp_ns);
  r->resp_ns = NULL;
  free(r->resp_text_at);
  r->resp_text_at = NULL;
  r->cap_resp = 0;
  tp_buf_fini(&r->text);
  tp_buf_fini(&r->reasoning);
  r->line_off = line_off + 1;
}

void tp_record_fail(tp_record *r, tp_error_class cls, int grpc_status,
                    const char *msg, size_t msg_len) {
  if (r->err_class != TP_ERRCLASS_NONE) return;
  r->err_class = cls;
  r->grpc_status = grpc_status;
  free(r->err_msg);
  r->err_msg = msg ? tp_strndup(msg, msg_len) : NULL;
}

void tp_record_set_server_id(tp_record *r, const char *id, size_t len) {
  if (r->server_id[0] || !id || !len) return;
  if (len > TP_RECORD_SERVER_ID_MAX - 1) len = TP_RECORD_SERVER_ID_MAX - 1;
  /* It goes into JSON and logs as it is: printable ASCII, the characters
   * such ids are made of (a UUID, "chatcmpl-..."). */
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)id[i];
    r->server_id[i] = c > 0x20 && c < 0x7f ? (char)c : '?';
  }
  r->server_id[len] = 0;
}

bool tp_record_has_trace(const tp_record *r) {
  for (size_t i = 0; i < sizeof(r->trace_id); i++)
    if (r->trace_id[i]) return true;
  return false;
}

void tp_record_traceparent(const tp_record *r, char *out) {
  static const char hex[] = "0123456789abcdef";
  char *p = out;
  memcpy(p, "00-", 3);
  p += 3;
  for (size_t i = 0; i < sizeof(r->trace_id); i++) {
    *p++ = hex[r->trace_id[i] >> 4];
    *p++ = hex[r->trace_id[i] & 15];
  }
  *p++ = '-';
  for (size_t i = 0; i < sizeof(r->span_id); i++) {
    *p++ = hex[r->span_id[i] >> 4];
    *p++ = hex[r->span_id[i] & 15];
  }
  memcpy(p, "-01", 4);
}

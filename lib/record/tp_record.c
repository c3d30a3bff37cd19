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
  tp_buf_init(&r->reasoning);
  r->grpc_status = -1;
}

void tp_record_fini(tp_record *r) {
  free(r->resp_ns);
  free(r->err_msg);
  tp_buf_fini(&r->text);
  tp_buf_fini(&r->reasoning);
  memset(r, 0, sizeof(*r));
}

int tp_record_add_response(tp_record *r, uint64_t t_ns, bool has_text) {
  if (r->n_resp == r->cap_resp) {
    uint32_t cap = r->cap_resp ? r->cap_resp * 2 : 64;
    uint64_t *p = realloc(r->resp_ns, cap * sizeof(*p));
    if (!p) return TP_ENOMEM;
    r->resp_ns = p;
    r->cap_resp = cap;
  }
  r->resp_ns[r->n_resp++] = t_ns;
  if (!r->first_resp_ns) r->first_resp_ns = t_ns;
  if (has_text) {
    if (!r->first_token_ns) r->first_token_ns = t_ns;
    else if (!r->second_token_ns) r->second_token_ns = t_ns;
    r->last_token_ns = t_ns;
    r->n_text_resp++;
  }
  return 0;
}

void tp_record_shed(tp_record *r, uint64_t line_off) {
  r->had_reasoning = tp_record_has_reasoning(r);
  free(r->resp_ns);
  r->resp_ns = NULL;
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

/* The mock's log: one JSON line per request, response, error and fault,
 * gathered in memory and written in large pieces. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mock/tp_mock_internal.h"
#include "mock/tp_mock_sse.h"
#include "util/tp_common.h"

#define LOG_FLUSH_BYTES (1u << 20)

/* The log is gathered in memory and written in 1 MiB pieces, so the loop
 * never waits on the disk once per token; tp_mock_stop writes the rest. */
void tp__mock_log_flush(tp_mock *m, bool force) {
  if (!m->log || m->logbuf.len == 0) return;
  if (!force && (m->logbuf.len < LOG_FLUSH_BYTES || m->log_blank)) return;
  fwrite(m->logbuf.data, 1, m->logbuf.len, m->log);
  tp_buf_reset(&m->logbuf);
}

void tp__mock_log_request(tp_mock *m, tp__mock_job *j, uint64_t t_ns, const char *prompt, size_t prompt_len) {
  if (!m->log) return;
  tp_buf *b = &m->logbuf;
  tp_buf_append_str(b, "{\"ev\":\"request\",\"id\":");
  tp_mock_json_str(b, j->id, strlen(j->id));
  tp_buf_append_str(b, ",\"model\":");
  tp_mock_json_str(b, j->model->name, strlen(j->model->name));
  tp_buf_printf(b, ",\"n\":%llu,\"t_ns\":%llu,\"prompt_tokens\":%u,\"max_tokens\":%u",
                (unsigned long long)j->seq.number, (unsigned long long)t_ns, j->seq.prompt_tokens,
                j->seq.max_tokens);
  /* The client's ids of the request, to join with its own records. */
  tp_buf_append_str(b, ",\"request_id\":");
  if (j->request_id)
    tp_mock_json_str(b, j->request_id, strlen(j->request_id));
  else
    tp_buf_append_str(b, "null");
  if (j->traceparent) {
    tp_buf_append_str(b, ",\"traceparent\":");
    tp_mock_json_str(b, j->traceparent, strlen(j->traceparent));
  }
  if (j->fault.kind != TP_MOCK_FAULT_NONE)
    tp_buf_printf(b, ",\"fault\":\"%s\",\"fault_after\":%u", tp_mock_fault_name(j->fault.kind),
                  j->fault.after_tokens);
  if (m->cfg.log_prompts && prompt) {
    tp_buf_append_str(b, ",\"prompt\":");
    tp_mock_json_str(b, prompt, prompt_len);
  }
  tp_buf_append_str(b, "}\n");
  tp__mock_log_flush(m, false);
}

/* A blank time is LOG_TIME_WIDTH spaces, later overwritten in place by the
 * number right-aligned in the same width: JSON allows the spaces before it. */
#define LOG_TIME_WIDTH 20

void tp__mock_log_response(tp_mock *m, tp__mock_job *j, uint32_t index, uint64_t t_ns, const char *text,
                           size_t len, bool final, size_t *deferred_off) {
  if (deferred_off) *deferred_off = SIZE_MAX;
  if (!m->log) return;
  tp_buf *b = &m->logbuf;
  tp_buf_append_str(b, "{\"ev\":\"response\",\"id\":");
  tp_mock_json_str(b, j->id, strlen(j->id));
  tp_buf_printf(b, ",\"n\":%llu,\"index\":%u,\"t_ns\":", (unsigned long long)j->seq.number, index);
  if (deferred_off) {
    *deferred_off = b->len;
    tp_buf_printf(b, "%*s", LOG_TIME_WIDTH, "");
    m->log_blank++;
  } else {
    tp_buf_printf(b, "%llu", (unsigned long long)t_ns);
  }
  tp_buf_append_str(b, ",\"text\":");
  tp_mock_json_str(b, text, len);
  tp_buf_printf(b, ",\"final\":%s}\n", final ? "true" : "false");
  tp__mock_log_flush(m, false);
}

void tp__mock_log_fill(tp_mock *m, size_t off, uint64_t t_ns) {
  if (off == SIZE_MAX || !m->log) return;
  char num[LOG_TIME_WIDTH + 1];
  snprintf(num, sizeof(num), "%*llu", LOG_TIME_WIDTH, (unsigned long long)t_ns);
  memcpy(m->logbuf.data + off, num, LOG_TIME_WIDTH);
  m->log_blank--;
}

void tp__mock_log_error(tp_mock *m, const char *id, const char *msg, uint64_t t_ns) {
  if (!m->log) return;
  tp_buf *b = &m->logbuf;
  tp_buf_append_str(b, "{\"ev\":\"error\",\"id\":");
  tp_mock_json_str(b, id, strlen(id));
  tp_buf_printf(b, ",\"t_ns\":%llu,\"message\":", (unsigned long long)t_ns);
  tp_mock_json_str(b, msg, strlen(msg));
  tp_buf_append_str(b, "}\n");
  tp__mock_log_flush(m, false);
}

void tp__mock_log_fault(tp_mock *m, tp__mock_job *j, uint64_t t_ns) {
  if (!m->log) return;
  tp_buf *b = &m->logbuf;
  tp_buf_append_str(b, "{\"ev\":\"fault\",\"id\":");
  tp_mock_json_str(b, j->id, strlen(j->id));
  tp_buf_printf(b, ",\"n\":%llu,\"t_ns\":%llu,\"kind\":\"%s\",\"after\":%u}\n",
                (unsigned long long)j->seq.number, (unsigned long long)t_ns,
                tp_mock_fault_name(j->fault.kind), j->fault.after_tokens);
  tp__mock_log_flush(m, false);
}

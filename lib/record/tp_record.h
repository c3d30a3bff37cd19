/* The per-request record: everything measured about one request.
 *
 * A record is kept for every request so that statistics are exact (no
 * histograms) and so that exports are views of the same data.  While a
 * request runs its record holds every response time and the text; once the
 * request's line is in the records file (report/tp_records.h) the run lets
 * go of those (tp_record_shed) and the exports read them back from the
 * line, so what stays in memory per request is this fixed-size struct. */
#ifndef TP_RECORD_H
#define TP_RECORD_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "util/tp_common.h"

typedef struct tp_record {
  uint64_t seq;          /* request number within the level, from 0 */
  uint32_t prompt_index; /* index into the dataset */
  uint32_t max_tokens;   /* output length asked of the server */
  bool warmup;           /* sent before measuring; left out of statistics */
  bool had_reasoning;    /* reasoning.len > 0 before the record was shed */
  uint8_t window;        /* the stability window that counted it, from 1; 0 = none */
  uint8_t server_counts; /* TP_RECORD_SERVER_OUTPUT / _INPUT: output_tokens / input_tokens are the server's */
  uint32_t resends;      /* re-sent on a fresh connection (tp_client_done.resends) */
  uint32_t rank;         /* the MPI rank that sent it (docs/scale-out.md); 0 in a single process */
  tp_error_class err_class; /* TP_ERRCLASS_NONE = succeeded */
  /* Multi-turn sessions (docs/sessions.md): the session's number in the
   * level plus 1 (0 = not a session's turn), and the turn, from 0. */
  uint32_t session;
  uint32_t turn;

  /* Monotonic nanoseconds (tp_now_ns).  0 = did not happen. */
  uint64_t planned_ns;    /* when the scheduler meant to send it */
  uint64_t sent_ns;       /* when the request was handed to the transport */
  uint64_t first_resp_ns; /* first response message of any kind */
  uint64_t first_token_ns; /* first response carrying non-empty text */
  uint64_t second_token_ns; /* the second such response (time to second token) */
  uint64_t first_answer_ns; /* first response with answer text, after any reasoning */
  uint64_t last_token_ns;  /* last response carrying non-empty text */
  uint64_t done_ns;        /* final response, error, or stream end */
  /* Last OpenAI response with a non-empty choices array, a trailing
   * usage-only chunk left out (vLLM's end of a request); 0 = none seen or
   * not OpenAI.  records.jsonl's last_choice_ns. */
  uint64_t last_choice_ns;

  /* Arrival time of every response message, in order. */
  uint64_t *resp_ns;
  /* Where each response's text begins (n_resp entries beside resp_ns, see
   * TP_RECORD_NO_TEXT): the byte of text (or, with TP_RECORD_AT_REASONING,
   * of reasoning) at which its piece starts, which is the length the buffer
   * had when the piece came.  A response's piece ends where the next piece
   * of the same buffer starts, or at the buffer's end; the exports write
   * each response's own payload from these.  Made by the first
   * tp_record_append_text, or by the second when the first was a lone
   * answer in response 0 (a unary answer keeps none: it needs none); NULL =
   * not kept: the exports then give the whole text to the first response
   * that carried text. */
  uint32_t *resp_text_at;
  uint32_t n_resp;
  uint32_t cap_resp;
  /* Responses up to and including the last one with choices (vLLM's
   * chunks: its gaps are between these; a usage-only chunk read with the
   * last of them shares its time, so the time alone cannot place it);
   * 0 = none seen or not OpenAI.  records.jsonl's choice_responses. */
  uint32_t n_choice_resp;
  /* Arrival times of the responses that carried non-empty text. */
  uint32_t n_text_resp;
  int grpc_status; /* gRPC status of the call, -1 = none */
  /* Text responses whose arrival time is the one of the text response
   * before them: the client could not tell when each came, as one read
   * (or one segment the kernel merged) brought both (docs/metrics.md,
   * "Fidelity").  Counted as responses are added, so it outlives
   * tp_record_shed. */
  uint32_t n_text_merged;

  tp_buf text; /* the generated text (deltas appended, cumulative replaced) */

  /* Token counts; -1 = not counted (no tokenizer).  32 bits: an answer is
   * capped far below 2^31 tokens (--max-response-bytes), and a record is
   * kept per request for the whole level. */
  int32_t input_tokens;
  int32_t output_tokens;
  /* Output tokens the server reported itself, -1 = not reported. */
  int32_t server_output_tokens;
  int32_t server_input_tokens;  /* OpenAI usage.prompt_tokens, -1 = none */
  int32_t server_cached_tokens; /* usage.prompt_tokens_details.cached_tokens, -1 = none */
  int32_t reasoning_tokens;     /* counted like output_tokens, -1 = not counted */
  /* The client tokenizer's counts, kept when output_tokens / input_tokens
   * are the server's (--token-source); -1 = not counted. */
  int32_t client_output_tokens;
  int32_t client_input_tokens;
  /* Token ids the answer carried (the engine protocols, which answer with
   * ids, not text): the output counted exactly, with no tokenizer; -1 =
   * the answer was text. */
  int32_t output_ids;
  tp_buf reasoning;             /* reasoning_content, kept apart from the answer */

  char *err_msg; /* owned, NULL when none */

  /* The server's own id of the request (docs/metrics.md, "Request ids"):
   * the id of OpenAI's chunks, KServe's response id, the engines' request
   * id, or the reply's x-request-id header; "" = none came.  Printable
   * ASCII only (anything else is '?'), cut at TP_RECORD_SERVER_ID_MAX - 1
   * bytes. */
  char server_id[64];
  /* --traceparent: the W3C trace context the request carried, its trace id
   * and parent id; all zero = none was sent. */
  uint8_t trace_id[16];
  uint8_t span_id[8];

  /* Where resp_ns, text and reasoning went when the record was shed: the
   * byte offset of its records-file line, plus 1; 0 = they are here. */
  uint64_t line_off;
} tp_record;

#define TP_RECORD_SERVER_OUTPUT 1u
#define TP_RECORD_SERVER_INPUT 2u

/* resp_text_at values: the response carried no text; the bit saying its
 * text went to reasoning; the largest offset kept (a longer text's later
 * pieces all start there: memory caps answers long before 2 GiB). */
#define TP_RECORD_NO_TEXT UINT32_MAX
#define TP_RECORD_AT_REASONING 0x80000000u
#define TP_RECORD_AT_MAX 0x7ffffffeu

#define TP_RECORD_SERVER_ID_MAX 64
/* The traceparent header's length (version 00), without its NUL. */
#define TP_TRACEPARENT_LEN 55

void tp_record_init(tp_record *r);
/* Keeps id[0..len) as the server's id of the request, when none is kept
 * yet (the first one wins: a stream repeats it). */
void tp_record_set_server_id(tp_record *r, const char *id, size_t len);
/* Whether the request carried a traceparent, and the header it carried:
 * "00-" trace id "-" parent id "-01" (W3C Trace Context, version 00,
 * sampled), into out[TP_TRACEPARENT_LEN + 1]. */
bool tp_record_has_trace(const tp_record *r);
void tp_record_traceparent(const tp_record *r, char *out);
void tp_record_fini(tp_record *r);
/* Appends an arrival time; returns 0 or TP_ENOMEM. */
int tp_record_add_response(tp_record *r, uint64_t t_ns, bool has_text);
/* Adds the text of the response last added to text (or to reasoning):
 * appended, or with cumulative (each response holds all text so far)
 * replacing what was there; notes where its piece starts in
 * resp_text_at.  Returns 0 or TP_ENOMEM. */
int tp_record_append_text(tp_record *r, bool reasoning, const void *s, size_t len, bool cumulative);
/* Lets go of the response times, text and reasoning (kept in the records
 * file at byte line_off); n_resp, n_text_resp and every other field stay. */
void tp_record_shed(tp_record *r, uint64_t line_off);
/* Whether the request produced reasoning text, shed or not. */
static inline bool tp_record_has_reasoning(const tp_record *r) {
  return r->reasoning.len > 0 || r->had_reasoning;
}
/* Marks the request failed (keeps the first error only). */
void tp_record_fail(tp_record *r, tp_error_class cls, int grpc_status,
                    const char *msg, size_t msg_len);
static inline bool tp_record_ok(const tp_record *r) {
  return r->err_class == TP_ERRCLASS_NONE && r->done_ns != 0;
}

#endif

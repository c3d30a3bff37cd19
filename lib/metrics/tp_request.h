/* The figures of one request, from its record alone.
 *
 * Every per-request value a level's statistics are computed over comes from
 * here (tp_stats.c pools them), and so do the per-record exports: one
 * definition of each figure (docs/metrics.md). */
#ifndef TP_REQUEST_H
#define TP_REQUEST_H

#include <stdbool.h>
#include <stdint.h>

#include "record/tp_record.h"

/* Times in milliseconds, rates in tokens per second.  A figure the request
 * does not have is negative (-1): a time whose ends did not both happen, a
 * token figure without a count, ITL of a one-response answer. */
typedef struct tp_req_metrics {
  bool ok; /* succeeded (tp_record_ok); the level pools the figures below
            * send_lag_ms only for these */
  double send_lag_ms;             /* sent - planned, when sent on or after the plan */
  double latency_ms;              /* done - sent */
  double latency_last_text_ms;    /* last text response - sent */
  /* vLLM bench serve's client: its first token is the first chunk with
   * choices (a role-only chat chunk included), its end the last such chunk
   * (a trailing usage-only chunk left out), its output length the server's
   * usage.completion_tokens (reasoning included) when given. */
  double vllm_ttft_ms, vllm_e2el_ms, vllm_tpot_ms;
  int64_t vllm_output_tokens;
  double ttft_ms;                 /* first text response - sent */
  double ttst_ms;                 /* second text response - first */
  double ttfo_ms;                 /* first answer text (after reasoning) - sent */
  double ttft_from_planned_ms;    /* first text response - planned */
  double latency_from_planned_ms; /* done - planned */
  double itl_ms;                  /* (last text - first text) / (generated - 1) */
  double tpot_ms;                 /* (done - first text) / (generated - 1) (vLLM) */
  double output_tps_per_user;     /* output tokens / latency */
  double output_tps_per_user_itl; /* 1000 / itl_ms */
  double itl_answer_ms;           /* (last text - first answer) / (output - 1): GenAI-Perf's */
  double output_tps_per_user_itl_answer; /* 1000 / itl_answer_ms */
  uint32_t responses;             /* response messages of any kind */
  uint32_t text_responses;        /* those that carried text */
  /* Whether every text response came at one time (tp_record
   * n_text_merged), so that the request has no ITL and no TPOT over them
   * (-1, not 0). */
  bool itl_all_merged;
  int64_t output_tokens;          /* the reported count (--token-source) */
  int64_t input_tokens;
  int64_t generated_tokens;       /* output + reasoning */
  int64_t reasoning_tokens;       /* -1 also when the request had no reasoning */
  /* |server - client| token counts, where both were given. */
  double usage_output_diff, usage_input_diff;
  bool length_mismatch; /* generated tokens differ from max_tokens asked */
} tp_req_metrics;

/* Fills out from r; pure (reads only r). */
void tp_request_metrics(const tp_record *r, tp_req_metrics *out);

struct tp_metric;
/* The request's own value of a per-request row of the metric registry (a
 * distribution over requests: ttft, latency, output_tokens ...).  Returns
 * false when the row is not per request or the request has no value. */
bool tp_request_value(const tp_req_metrics *m, const struct tp_metric *row, double *out);

/* The text responses of r, whose response times it must still hold: the
 * indices [*i0, *i1] of resp_ns from its first text response to its last,
 * the gaps between consecutive ones being its inter-chunk latencies (the
 * pooled ITL, docs/metrics.md).  A response without text between two of
 * them (an empty delta) splits a gap, as vLLM's client counts every chunk
 * that carries a choice; one sharing the first or last text response's
 * stamp is left out.  Returns false when r has fewer than two. */
bool tp_request_text_span(const tp_record *r, uint32_t *i0, uint32_t *i1);

#endif

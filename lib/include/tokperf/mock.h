/* tokperf: the mock server.
 *
 * A KServe v2 gRPC and OpenAI-compatible HTTP server with a timing model of
 * an LLM serving engine (time to first token growing with the prompt and
 * the prefills running, time per token growing with the running
 * sequences, a batch limit, a prefix cache), fault injection and a log of
 * the true time it sent every response.  It is a library of its own
 * (mock/), beside the client: `tokperf mock` runs it, and a run with --mock
 * starts it in-process.  Depends only on tokperf/errors.h. */
#ifndef TOKPERF_MOCK_H
#define TOKPERF_MOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokperf/errors.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct tp_mock_config tp_mock_config;

/* The mock server's counters (tp_mock_get_stats; a program that starts a
 * mock for a run hands them to it with tp_run_set_mock_stats, and
 * tp_run_mock_stats reads them back). */
typedef struct tp_mock_stats {
  uint64_t requests;            /* inference requests received (gRPC and HTTP) */
  uint64_t responses;           /* streamed responses sent (gRPC messages, SSE events, JSON bodies) */
  uint32_t max_active_streams;  /* most inference streams open at once */
  uint32_t max_active_sequences; /* most sequences holding a batch slot (prefill or decode) at once */
  uint64_t faults_injected;     /* requests whose fault fired (drawn or asked for) */
  uint64_t connections;         /* connections accepted, both ports, refused ones included */
  uint64_t connections_refused; /* of those, reset for refuse_connections */
  uint64_t http_requests;       /* HTTP requests answered, of any kind */
  uint64_t prefix_cache_queries_tokens; /* prompt tokens looked up in the prefix cache */
  uint64_t prefix_cache_hits_tokens;    /* of those, tokens found cached */
} tp_mock_stats;


struct tp_mock_config {
  const char *host; /* default "127.0.0.1" */
  int grpc_port;    /* default 8001; 0 = any free port */

  /* Timing model.  Time to first token = ttft_ms + prefill_us_per_token x
   * prompt tokens + prefill_queue_ms x prefills already running.  Each later
   * token takes itl_ms + itl_us_per_seq x (sequences decoding).  At most
   * max_batch sequences run at once; more wait in a queue. */
  double ttft_ms;               /* default 20 */
  double prefill_us_per_token;  /* default 20 */
  double prefill_queue_ms;      /* default 2 */
  double itl_ms;                /* default 8 */
  double itl_us_per_seq;        /* default 20 */
  uint32_t max_batch;           /* default 256 */

  /* Output length: output_tokens > 0 fixes it; otherwise the request's
   * max_tokens (default 128) ends it, or earlier an end-of-sequence drawn
   * with probability eos_prob per token (0 = never). */
  uint32_t output_tokens;
  double eos_prob;
  uint64_t seed;
  /* Streamed chat answers begin with this many reasoning tokens, sent as
   * `reasoning_content` deltas (vLLM's reasoning parsers); 0 = none. */
  uint32_t reasoning_tokens;
  /* Stream shapes of the HTTP streams (OpenAI SSE and Triton
   * generate_stream), as servers other than one token per event write
   * them.  usage_delay_ms: an OpenAI stream's usage-only chunk (and its
   * [DONE]) goes this long after the last token's chunk instead of with it
   * (0 = with it).  tokens_per_chunk: each event carries this many tokens
   * (0 or 1 = one; a chat answer's reasoning and answer never share one).
   * one_write: the whole streamed response (head, every event, its end)
   * goes out in one write once it is complete, so a client reads every
   * response at one time. */
  uint64_t usage_delay_ms;
  uint32_t tokens_per_chunk;
  bool one_write;

  /* JSON lines: one per request received and per response sent, with
   * monotonic nanosecond times (tp clock), for tests to hold the client's
   * measurements against; a request's line names the id the mock answers
   * under ("id") and the client's ("request_id": its x-request-id header
   * or gRPC request id, null when none; "traceparent" when one came).
   * NULL = no log. */
  const char *log_path;
  bool quiet;
  /* The log's request lines carry the prompt ("prompt"), as read. */
  bool log_prompts;

  /* HTTP/1.1 port (OpenAI /v1 and Triton /v2 endpoints, /metrics):
   * TP_MOCK_HTTP_PORT_AUTO (the default) = 8000, or any free port when
   * grpc_port is 0 (so a mock asked for a free gRPC port never collides on
   * 8000); 0 = any free port; -1 = no HTTP. */
  int http_port;
  /* SSE dialect of OpenAI streams: "vllm" (default),
   * "llamacpp", "tgi" or "trtllm-serve". */
  const char *http_dialect;
  /* Other names the mock's models answer to, comma-separated (vLLM's
   * --served-model-name; AIPerf's, vLLM's and the other tools' documented
   * command lines name real models), listed first by /v1/models: a bare
   * NAME is vllm_model over the OpenAI endpoints, NAME=MODEL is MODEL
   * (ensemble, vllm_model, vllm) over gRPC and HTTP alike.  NULL = none. */
  const char *served_model_name;
  /* SSE keep-alive comment every this many ms on OpenAI streams; -1 (the
   * default) = the dialect's own (TGI 15000, others none); 0 = none. */
  int64_t sse_keepalive_ms;

  /* Fault injection.  A fault spec (`kind[:arg[:text]]`, e.g.
   * "grpc_status:14:overloaded", "rst_stream", "stall"; the list is in
   * mock/tp_mock_faults.h) given to the fraction fault_rate of
   * requests, drawn with `seed`; a request may ask for its own with the
   * string parameter "tokperf_fault" (gRPC), the JSON field or header
   * "tokperf_fault" / "X-Tokperf-Fault" (HTTP). NULL = none. */
  const char *fault_kind;
  double fault_rate;           /* 0..1, default 1 (every request, when fault_kind is set) */
  uint32_t fault_after_tokens; /* the fault takes the place of this token (0 = at arrival) */
  uint32_t refuse_connections; /* reset the first N connections accepted */
  uint64_t refuse_connections_ms; /* do not listen for this long after start (connect: ECONNREFUSED) */
  uint32_t goaway_after_streams;  /* per connection: GOAWAY after N requests (HTTP: Connection: close) */
  /* Servers that drop connections a client means to reuse.
   * close_after_stream: over HTTP, after every streamed (SSE) answer, close the
   * connection although the response said keep-alive, as llama.cpp's
   * llama-server does; gRPC: after every finished stream, GOAWAY with the
   * last stream it processed, then close once the streams it took are done,
   * as servers with a limit on streams per connection do.  Over gRPC the
   * mock never answers a stream above the last_stream_id it announced (it
   * refuses it).  idle_close_ms: close a connection that has had no
   * request in progress for this long (HTTP: a plain close; gRPC: GOAWAY
   * with the last stream it processed, then close), as servers with an
   * idle timeout do; 0 = never. */
  bool close_after_stream;
  uint64_t idle_close_ms;

  /* Prefix cache (vLLM automatic prefix caching / TensorRT-LLM KV reuse):
   * prompt words already seen, by whole blocks from the start, skip the
   * prefill term of the time to first token. */
  bool prefix_cache;                 /* default false */
  uint32_t prefix_cache_block_words; /* block size, default 16 */
  uint32_t prefix_cache_blocks;      /* capacity (also the KV pool size of the metrics), default 8192 */
};

#define TP_MOCK_HTTP_PORT_AUTO (-2)

typedef struct tp_mock tp_mock;

TP_API void tp_mock_config_default(tp_mock_config *cfg);
/* Starts the mock on a thread of its own (its own libuv loop).  Returns
 * once the sockets are bound (and listening, unless refuse_connections_ms
 * holds that off); TP_ECONNECT with a message when it cannot bind, TP_EINVAL
 * for a bad setting (the message names it).  SIGPIPE is blocked in the
 * mock's threads (tp_mock_run: for the duration of the call), so a client
 * that goes away mid-write never kills the process. */
TP_API int tp_mock_start(tp_mock **out, const tp_mock_config *cfg, char *err, size_t errlen);
TP_API int tp_mock_port(const tp_mock *m);
/* The HTTP port the mock listens on, or -1 when HTTP is off. */
TP_API int tp_mock_http_port(const tp_mock *m);
TP_API void tp_mock_get_stats(tp_mock *m, tp_mock_stats *out);
/* Stops the thread, closes every connection, flushes the log, frees m. */
TP_API void tp_mock_stop(tp_mock *m);
/* Runs the mock in the calling thread until SIGINT or SIGTERM. */
TP_API int tp_mock_run(const tp_mock_config *cfg, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif

/* Fault injection for the mock server: what can go wrong, how a fault is
 * written down, and which requests get one.
 *
 * Pure logic (no sockets, no clock): the server parses specs here and asks
 * which fault a request carries; the transports (tp_mock_grpc_infer.c for
 * gRPC, tp_mock_http_req.c for HTTP/1.1) carry the faults out.
 *
 * A fault spec is `kind[:arg[:text]]`:
 *
 *   none                        no fault (overrides the server-wide draw)
 *   rst_stream[:H2CODE]         gRPC: RST_STREAM with that HTTP/2 error code
 *                               (default 2, INTERNAL_ERROR); HTTP: TCP reset
 *   grpc_status[:CODE[:TEXT]]   gRPC: end the call with that status (default
 *                               14, UNAVAILABLE) after HEADERS; HTTP: the
 *                               mapped HTTP status
 *   trailers_only[:CODE[:TEXT]] gRPC: the same as one Trailers-Only HEADERS
 *                               block when nothing was sent yet; HTTP: as
 *                               grpc_status
 *   http_status[:CODE[:TEXT]]   HTTP: that status (default 503) with a JSON
 *                               error body; gRPC: the mapped status
 *   inband_error[:TEXT]         gRPC stream: ModelStreamInferResponse with
 *                               error_message; HTTP stream: an error event
 *   stall                       stop sending; keep the stream open until the
 *                               client gives up
 *   trickle                     send the response one byte per millisecond
 *   malformed  (sse_garbage)    gRPC: a message that is not protobuf; HTTP:
 *                               an SSE event that is not JSON
 *   oversize[:BYTES]            a message (gRPC) or chunk (HTTP) of BYTES
 *                               (default 80 MiB), declared and sent, then
 *                               a stall
 *   invalid_utf8                text_output holds bytes that are not UTF-8
 *   endless                     tokens without end, past max_tokens
 *   close_conn                  close the connection (FIN) mid-response
 *   goaway[:H2CODE]             gRPC: GOAWAY and tear the connection down;
 *                               HTTP: `Connection: close` after the response
 *
 * A mix (a soak that meets every fault at once): `mixed` stands for every
 * kind but none with its defaults, and `KIND[:NUMBER],KIND[:NUMBER],...`
 * for the kinds listed (no texts; up to TP_MOCK_FAULT_MIX_MAX).  Each
 * faulted request then carries one kind of the mix, drawn evenly from the
 * seed and the request number (tp_mock_fault_pick), so a run is repeatable
 * and the log names the kind each request got.
 *
 * A fault fires when the request's token number `after_tokens` would be sent
 * (0-based), replacing that token; with after_tokens 0 the faults that answer
 * with an error fire at once, when the request arrives (on the next loop
 * iteration, without taking a batch slot).  trickle, endless and
 * invalid_utf8 shape the output from that point on instead.  On HTTP an
 * error status goes out as the status line while no byte of the answer is
 * out yet, and as an in-stream error event once a stream has begun. */
#ifndef TP_MOCK_FAULTS_H
#define TP_MOCK_FAULTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/tp_common.h"

/* X-macro: enum suffix, spec name. */
#define TP_MOCK_FAULTS(X)           \
  X(NONE, "none")                   \
  X(RST_STREAM, "rst_stream")       \
  X(GRPC_STATUS, "grpc_status")     \
  X(TRAILERS_ONLY, "trailers_only") \
  X(HTTP_STATUS, "http_status")     \
  X(INBAND_ERROR, "inband_error")   \
  X(STALL, "stall")                 \
  X(TRICKLE, "trickle")             \
  X(MALFORMED, "malformed")         \
  X(OVERSIZE, "oversize")           \
  X(INVALID_UTF8, "invalid_utf8")   \
  X(ENDLESS, "endless")             \
  X(CLOSE_CONN, "close_conn")       \
  X(GOAWAY, "goaway")

#define TP_MOCK_FAULT_ENUM(name, str) TP_MOCK_FAULT_##name,
typedef enum tp_mock_fault_kind { TP_MOCK_FAULTS(TP_MOCK_FAULT_ENUM) TP_MOCK_FAULT_COUNT } tp_mock_fault_kind;
#undef TP_MOCK_FAULT_ENUM

#define TP_MOCK_OVERSIZE_DEFAULT_BYTES (80u << 20)
#define TP_MOCK_FAULT_TEXT_BYTES 256
#define TP_MOCK_FAULT_MIX_MAX 16

typedef struct tp_mock_fault {
  tp_mock_fault_kind kind;
  int code;           /* gRPC status, HTTP status or HTTP/2 error code; see the spec */
  uint32_t size_bytes; /* oversize: the declared size */
  uint32_t after_tokens;
  char text[TP_MOCK_FAULT_TEXT_BYTES]; /* message; "" = a default one */
  /* A mix: a faulted request takes one of these (tp_mock_fault_pick);
   * n_mix 0 = the kind above. */
  uint8_t n_mix;
  struct {
    tp_mock_fault_kind kind;
    int code;
    uint32_t size_bytes;
  } mix[TP_MOCK_FAULT_MIX_MAX];
} tp_mock_fault;

/* "rst_stream" for TP_MOCK_FAULT_RST_STREAM; "?" out of range. */
const char *tp_mock_fault_name(tp_mock_fault_kind k);

/* Parses spec (len bytes, need not be NUL-terminated) into out, with
 * after_tokens 0 and the kind's default code.  Returns 0, or TP_EINVAL with
 * a phrase in err naming what is wrong and the kinds accepted.  A text
 * longer than the field is cut, not refused. */
int tp_mock_fault_parse(const char *spec, size_t len, tp_mock_fault *out, char *err, size_t errlen);

/* Whether request number `number` (the engine's submit order) draws the
 * server-wide fault: a draw of its own, seeded from (seed, number), below
 * rate.  The same seed and number always give the same answer, whatever the
 * order and timing of requests. */
bool tp_mock_fault_draw(uint64_t seed, uint64_t number, double rate);

/* The fault request number `number` carries: f itself, or for a mix the
 * kind drawn from (seed, number), evenly over the mix, with its number and
 * after_tokens (out->n_mix is 0).  out may not be f. */
void tp_mock_fault_pick(const tp_mock_fault *f, uint64_t seed, uint64_t number, tp_mock_fault *out);

/* The gRPC status a fault ends a call with (grpc_status, trailers_only,
 * http_status mapped like Triton's HTTP/gRPC error table; inband_error on a
 * unary call gives INTERNAL). */
int tp_mock_fault_grpc_status(const tp_mock_fault *f);
/* The HTTP status an error fault answers with (http_status as is; gRPC
 * codes mapped: 3 -> 400, 5 -> 404, 8 -> 429, 12 -> 501, 14 -> 503, other
 * -> 500). */
int tp_mock_fault_http_status(const tp_mock_fault *f);
/* The message of an error fault: its text, or a default naming the fault. */
const char *tp_mock_fault_message(const tp_mock_fault *f);

/* True for kinds that act once, in place of token number after_tokens (at
 * the request's arrival when after_tokens is 0): every kind but none,
 * trickle, invalid_utf8 and endless, which shape the output instead. */
bool tp_mock_fault_is_discrete(tp_mock_fault_kind k);

#endif

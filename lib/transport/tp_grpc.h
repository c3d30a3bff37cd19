/* gRPC message framing and the small text formats of gRPC headers.
 *
 * No I/O here: bytes in, messages or bytes out, so the same code serves the
 * client and the mock server and is tested without sockets. */
#ifndef TP_GRPC_H
#define TP_GRPC_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "util/tp_common.h"

#define TP_GRPC_PREFIX_BYTES 5

/* gRPC status codes (statuscodes.md). */
#define TP_GRPC_STATUSES(X)                                           \
  X(0, OK) X(1, CANCELLED) X(2, UNKNOWN) X(3, INVALID_ARGUMENT)       \
  X(4, DEADLINE_EXCEEDED) X(5, NOT_FOUND) X(6, ALREADY_EXISTS)        \
  X(7, PERMISSION_DENIED) X(8, RESOURCE_EXHAUSTED)                    \
  X(9, FAILED_PRECONDITION) X(10, ABORTED) X(11, OUT_OF_RANGE)        \
  X(12, UNIMPLEMENTED) X(13, INTERNAL) X(14, UNAVAILABLE)             \
  X(15, DATA_LOSS) X(16, UNAUTHENTICATED)

#define TP_GRPC_ENUM(n, name) TP_GRPC_##name = n,
enum { TP_GRPC_STATUSES(TP_GRPC_ENUM) };
#undef TP_GRPC_ENUM

/* "NOT_FOUND" for 5; "UNKNOWN_STATUS" outside 0..16. */
const char *tp_grpc_status_name(int status);

/* Called once per complete message.  `data` is borrowed for the duration
 * of the call.  Return 0 to go on, or a negative code to stop feeding (the
 * code is returned by tp_grpc_reader_feed). */
typedef int (*tp_grpc_msg_cb)(void *user_data, const uint8_t *data, size_t len,
                              bool compressed);

/* Incremental reader of Length-Prefixed-Messages.  Messages may be split
 * across feeds at any byte and several may arrive in one feed.  A message
 * that lies whole inside one feed is passed without copying; one that spans
 * feeds is gathered in `partial`. */
typedef struct tp_grpc_reader {
  uint8_t prefix[TP_GRPC_PREFIX_BYTES];
  size_t prefix_have;
  uint32_t msg_len;
  bool in_body;
  tp_buf partial;
  uint32_t max_msg_bytes; /* larger messages fail with TP_ETOOBIG */
} tp_grpc_reader;

void tp_grpc_reader_init(tp_grpc_reader *r, uint32_t max_msg_bytes);
void tp_grpc_reader_fini(tp_grpc_reader *r);
/* Consumes all `len` bytes, calling cb for every message completed.
 * Returns 0, TP_ETOOBIG (a prefix announced more than max_msg_bytes),
 * TP_ENOMEM, or the callback's negative code.  After an error the reader
 * must not be fed again. */
int tp_grpc_reader_feed(tp_grpc_reader *r, const uint8_t *data, size_t len,
                        tp_grpc_msg_cb cb, void *user_data);
/* True when the reader holds part of a message (a stream that ends now was
 * cut short). */
bool tp_grpc_reader_mid_message(const tp_grpc_reader *r);

/* Writes the 5-byte prefix for an uncompressed message of msg_len bytes. */
void tp_grpc_put_prefix(uint8_t out[TP_GRPC_PREFIX_BYTES], uint32_t msg_len);

/* grpc-timeout: formats a timeout as at most 8 digits and a unit, choosing
 * the finest unit that fits (1.5 s gives "1500000u", 30 min "1800000m"),
 * rounded up so the server's deadline is never shorter than ours.  out
 * needs 10 bytes. */
void tp_grpc_timeout_format(char out[10], uint64_t timeout_ns);
/* Parses a grpc-timeout value.  Returns 0 or TP_EINVAL. */
int tp_grpc_timeout_parse(const char *s, size_t len, uint64_t *timeout_ns);

/* grpc-message percent-decoding.  Malformed escapes are left as they are.
 * out must hold len + 1 bytes; returns the decoded length. */
size_t tp_grpc_message_decode(char *out, const char *in, size_t len);
/* Percent-encoding for sending; out must hold 3 * len + 1 bytes. */
size_t tp_grpc_message_encode(char *out, const char *in, size_t len);

/* Status synthesised from an HTTP :status that came without grpc-status. */
int tp_grpc_status_from_http(int http_status);
/* Status for an RST_STREAM error code (HTTP/2 error code). */
int tp_grpc_status_from_rst(uint32_t h2_error_code);
/* Parses a grpc-status header value (decimal, no sign).  Returns the status
 * or -1 when it is not a number (the caller then reports UNKNOWN). */
int tp_grpc_status_parse(const char *s, size_t len);

/* HTTP/2 error code of RST_STREAM REFUSED_STREAM (RFC 9113 section 7). */
#define TP_H2_REFUSED_STREAM 0x7u

/* What is known about a call that ended without an answer, for deciding
 * whether it may be sent again. */
typedef struct tp_grpc_unanswered {
  int32_t stream_id;
  bool on_wire;         /* its HEADERS were handed to the socket */
  bool got_response;    /* a byte of the answer (HEADERS or DATA) came */
  bool local_failed;    /* ended on our side: timeout, cancel, bad frame */
  uint32_t rst_code;    /* the stream's close code (RST_STREAM, or the
                           library's REFUSED_STREAM after a GOAWAY) */
  bool conn_lost;       /* the connection closed under it */
  bool conn_reused;     /* a stream had finished on the connection before
                           this one was opened */
  bool goaway;          /* a GOAWAY came on the connection... */
  int32_t goaway_last;  /* ...naming this last_stream_id */
  uint32_t resends;     /* times it was already sent again */
} tp_grpc_unanswered;

/* Re-sends of one call that was certainly not processed.  More than one:
 * a server that limits streams per connection below the client's
 * concurrency refuses the streams beyond its limit on the fresh
 * connection too. */
#define TP_GRPC_MAX_RESENDS 3u

/* True when the call may be sent again on another connection (RFC 9113
 * sections 6.8 and 8.7).  Certainly not processed, up to
 * TP_GRPC_MAX_RESENDS times: its HEADERS never left, it was refused
 * (REFUSED_STREAM), or its id is above a GOAWAY's last_stream_id.  Once,
 * and only as its first re-send: the connection closed before any byte of
 * its answer on a connection that had served a stream before (a server
 * closing a connection it thought idle; the HTTP/1 rule for reused
 * connections).  Never a call that got part of an answer, one failed on
 * our side, or one at or below a GOAWAY's last_stream_id (the server may
 * have processed it). */
bool tp_grpc_may_resend(const tp_grpc_unanswered *u);

#endif

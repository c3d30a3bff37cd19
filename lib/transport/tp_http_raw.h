/* Where the body lies in the raw bytes of an HTTP/1.1 connection.
 *
 * libcurl reads a socket and hands its callbacks the decoded body, so the
 * kernel's stamp of the bytes it read is gone by then, and when several
 * answers wait in the socket (the loop came late) they are all read in one
 * go.  A caller that peeks the bytes before libcurl reads them feeds them
 * here, in order, and learns, for each run of body bytes among them, which
 * response it belongs to and where it ends in that response's body: the
 * kernel stamp of the segment holding that raw byte then dates exactly the
 * body bytes libcurl delivers up to there.
 *
 * The tracker follows RFC 9112: a status line and header fields (interim
 * 1xx responses before the final one), then a body framed by
 * Transfer-Encoding: chunked (chunk extensions and trailer fields skipped),
 * by Content-Length, or by the connection's close; no body after a HEAD
 * request or for 1xx, 204 and 304; responses follow one another on a
 * kept-alive connection.  Anything else (a 101 protocol switch, a line it
 * cannot read, conflicting lengths, a chunk size over 2^60) turns it
 * "lost": it stops reporting until restarted at the next response
 * boundary, and the caller dates bytes as it would without it.  No I/O. */
#ifndef TP_HTTP_RAW_H
#define TP_HTTP_RAW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct tp_http_raw tp_http_raw;

/* One run of body bytes in a feed: raw bytes [raw_start, raw_end) of the
 * buffer fed are body bytes [body_start, body_end) of response resp. */
typedef struct tp_http_raw_piece {
  uint64_t resp;
  uint64_t body_start, body_end;
  size_t raw_start, raw_end;
} tp_http_raw_piece;

typedef void (*tp_http_raw_piece_fn)(void *ctx, const tp_http_raw_piece *p);

/* A tracker waiting for a status line (response index 0).  NULL when out
 * of memory. */
tp_http_raw *tp_http_raw_new(void);
void tp_http_raw_free(tp_http_raw *t);

/* The connection is between responses (a request is about to be sent and
 * nothing of an answer waits): parsing starts over at a status line, the
 * lost state is cleared, and the next response gets a new index, returned.
 * head: that request is a HEAD (its answer has no body). */
uint64_t tp_http_raw_restart(tp_http_raw *t, bool head);

/* Feeds the next len bytes of the stream; fn (may be NULL) gets each body
 * run among them, in order, with raw offsets into p.  Returns false once
 * the tracker is lost (then it ignores what it is fed until restarted). */
bool tp_http_raw_feed(tp_http_raw *t, const uint8_t *p, size_t len, tp_http_raw_piece_fn fn, void *ctx);

/* Marks the tracker lost: the caller could not feed a part of the stream
 * (another reader took bytes before it looked). */
void tp_http_raw_lose(tp_http_raw *t);

bool tp_http_raw_lost(const tp_http_raw *t);

/* Whether the tracker stands between two chunks of a chunked body (at the
 * start of a chunk-size line): then *body gets the response's body bytes
 * so far. */
bool tp_http_raw_between_chunks(const tp_http_raw *t, uint64_t *body);

/* Resumes the tracker between two chunks of response resp's chunked body,
 * body bytes into it, lost or not: for a caller that could not feed some
 * bytes but knows they were whole chunks (it saw their decoded sizes and
 * their raw length matches chunks without extensions). */
void tp_http_raw_resume_chunked(tp_http_raw *t, uint64_t resp, uint64_t body);

/* The index of the response being read now (or next, between responses). */
uint64_t tp_http_raw_resp(const tp_http_raw *t);

#endif

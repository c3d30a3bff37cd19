/* Server-Sent Events (text/event-stream) parser, after the WHATWG HTML
 * standard's "event stream interpretation".
 *
 * Bytes in, events out through a callback; no I/O.  The parser is
 * incremental: a line, a line end (a CR closing one feed and the LF opening
 * the next are ONE line end) or the leading byte-order mark may be split
 * across feeds at any byte, and one feed may hold many events.  Rules:
 *   - lines end with LF, CRLF or a lone CR;
 *   - a UTF-8 BOM (EF BB BF) at the very start of the stream is dropped;
 *   - an empty line dispatches the event being built;
 *   - a line starting with ':' is a comment (servers send them as
 *     keep-alives) and is never buffered, however long;
 *   - "name:value" sets a field; one space after the colon is removed; a
 *     line without a colon is a field name with an empty value;
 *   - `data` appends its value and LF to the data buffer (several data lines
 *     join with "\n"); `event` sets the type; `id` sets the last event id
 *     (unless the value holds a NUL), which persists across events; `retry`
 *     sets the reconnection time when the value is ASCII digits only; other
 *     names are ignored;
 *   - at dispatch the data buffer's last LF is removed; an event with an
 *     empty data buffer (no data line) is not dispatched, only its type is
 *     forgotten;
 *   - an event not closed by an empty line when the stream ends is never
 *     dispatched (tp_sse_pending says whether one was being built).
 * The parser does not validate UTF-8: it hands over bytes. */
#ifndef TP_SSE_H
#define TP_SSE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/tp_common.h"

/* One dispatched event.  Every pointer borrows from the parser and is valid
 * only during the callback; every string is also NUL-terminated. */
typedef struct tp_sse_event {
  const char *type; /* the `event` field, or "message" when none was set */
  size_t type_len;
  const uint8_t *data; /* data lines joined with "\n" (may be empty: "data:") */
  size_t data_len;
  const char *last_id; /* last event id so far ("" when none) */
  size_t last_id_len;
  int64_t retry_ms; /* reconnection time last set by `retry`, -1 = never */
} tp_sse_event;

typedef struct tp_sse_parser tp_sse_parser;

/* Called once per dispatched event.  Return 0 to go on or a negative code
 * to stop: tp_sse_feed returns that code.  The callback must not feed or
 * reset the parser that called it. */
typedef int (*tp_sse_event_cb)(tp_sse_parser *p, const tp_sse_event *ev, void *user_data);

/* The parser state; embed it and treat the fields as private. */
struct tp_sse_parser {
  tp_buf line; /* the current line, only while it spans feeds */
  tp_buf data; /* data buffer of the event being built */
  tp_buf type; /* event type buffer */
  tp_buf id;   /* last event id buffer (kept across events) */
  int64_t retry_ms;
  size_t max_event_bytes; /* bound on a line and on the data buffer */
  uint8_t bom_have;       /* bytes of a leading BOM matched so far */
  bool bom_done;          /* the start of the stream is behind us */
  bool after_cr;          /* the last byte fed was a CR */
  bool in_line;           /* part of the current line was seen in an earlier feed */
  bool skip_line;         /* ... and it is a comment */
  bool failed;
};

/* Prepares a parser.  max_event_bytes bounds the memory one event may take:
 * a line (comments excepted) longer than that, without its line end, or an
 * event's data buffer growing past it (counting the LF after each data
 * line) fails the stream with TP_ETOOBIG, wherever the feeds were cut.
 * 0 means 1 MiB. */
void tp_sse_init(tp_sse_parser *p, size_t max_event_bytes);
/* Frees the buffers; p may be initialised again. */
void tp_sse_fini(tp_sse_parser *p);
/* Back to the start of a new stream (a BOM is honoured again), keeping the
 * buffers' memory. */
void tp_sse_reset(tp_sse_parser *p);

/* Consumes all `len` bytes (data may be NULL when len is 0), calling cb for
 * every event completed.  Returns 0; TP_ETOOBIG (see max_event_bytes);
 * TP_ENOMEM; the callback's negative code; or TP_EINVAL when fed again
 * after an error.  After any error the rest of the feed is not looked at and
 * the parser accepts no more input until tp_sse_reset. */
int tp_sse_feed(tp_sse_parser *p, const uint8_t *data, size_t len, tp_sse_event_cb cb, void *user_data);

/* True when the stream, ending now, would leave an event undispatched: a
 * data buffer holding something, or a non-comment line without its end. */
bool tp_sse_pending(const tp_sse_parser *p);

#endif

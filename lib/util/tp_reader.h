/* A socket reader on a thread of its own: it drains registered sockets as
 * bytes arrive and hands each chunk, with its arrival time, to a loop.
 *
 * Read on a busy loop, a socket waits while the loop works through a wave
 * (of requests in the mock, of sends and answers in the client); meanwhile
 * TCP may hold back part of what the peer's socket already took, and
 * segments that wait in the receive queue are merged, keeping only the
 * newer stamp, so bytes get dated late by the reader's own work.  This
 * reader never waits on that work: it only reads, stamping every group of
 * bytes that arrived together with its kernel receive stamp
 * (tp_stamp_fd_group), and the loop parses them as it would its own reads.
 * The mock's gRPC side uses it for its reference times; the client's gRPC
 * connections with --reader-thread.
 *
 * Threading contract (the only state two threads share is behind r->mu):
 * - tp_reader_new, _add, _remove and _close are called on the loop
 *   thread only; the handler runs on the loop thread (from a uv_async).
 * - The reader thread touches a registration only under r->mu and only
 *   while it is live; _remove marks it dead and unregisters its fd under
 *   r->mu, so once _remove returns the reader never reads that fd again and
 *   the caller may close it.  A dead registration is freed by the reader
 *   thread, under r->mu, before its next epoll_wait (its last batch of
 *   events may still name it).
 * - Chunks wait in a FIFO under r->mu.  The loop takes them one at a time,
 *   so a chunk never outlives its registration's _remove (which drops the
 *   chunks still queued for it), even when a handler removes a connection.
 * - The fd stays owned by the caller's uv_tcp_t, which keeps writing to it
 *   on the loop; the reader only reads (recv) and peeks.
 * - tp_stamp_fd_group's peeks, made here and on the loop (the HTTP side),
 *   share one scratch buffer the kernel never writes (MSG_TRUNC on TCP); a
 *   race detector that takes recvmsg as writing it reports a race that
 *   is not one. */
#ifndef TP_READER_H
#define TP_READER_H

#include <stdint.h>
#include <sys/types.h>

#include <uv.h>

typedef struct tp_reader tp_reader;
typedef struct tp_rsock tp_rsock;

/* Called on the loop thread for each chunk of a registered socket, in
 * arrival order: n > 0 bytes that arrived at stamp_ns (tp_now_ns time
 * line), or n < 0 a libuv error code (UV_EOF when the peer closed), after
 * which nothing more comes for that socket. */
typedef void (*tp_reader_cb)(void *owner, const uint8_t *data, ssize_t n, uint64_t stamp_ns);

/* Starts the reader thread, handing chunks to cb on loop.  Returns 0,
 * TP_ENOMEM or TP_EIO (no epoll, eventfd or thread). */
int tp_reader_new(tp_reader **out, uv_loop_t *loop, tp_reader_cb cb);
/* Starts reading fd for owner.  Returns the registration, or NULL. */
tp_rsock *tp_reader_add(tp_reader *r, int fd, void *owner);
/* Stops reading s's fd and drops its queued chunks; no handler call for it
 * follows.  The fd may be closed once this returns. */
void tp_reader_remove(tp_reader *r, tp_rsock *s);
/* Stops and joins the thread and closes the async handle (the loop must
 * run for its close callback, which frees r).  Every socket must have been
 * removed. */
void tp_reader_close(tp_reader *r);

#endif

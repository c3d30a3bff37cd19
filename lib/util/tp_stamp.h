/* Arrival times per poll batch.
 *
 * When several sockets become readable in one epoll_wait, libuv calls their
 * callbacks one after another; stamping each when its callback starts would
 * charge later sockets with the time spent parsing earlier ones, although
 * all their bytes were there when the poll returned.  A prepare handle (run
 * just before each poll) clears the stamp; the first read of the batch sets
 * it, and every read of the same batch uses it. */
#ifndef TP_STAMP_H
#define TP_STAMP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <uv.h>

/* Installs the stamp on a loop (stored in loop->data, which must be free).
 * Returns 0 or TP_ENOMEM.  The handle is unreferenced: it never keeps the
 * loop alive. */
int tp_stamp_install(uv_loop_t *loop);
/* Closes the handle (the loop must run for the close callback). */
void tp_stamp_uninstall(uv_loop_t *loop);
/* The arrival time for data read now: the batch's stamp, or tp_now_ns()
 * when no stamp is installed. */
uint64_t tp_stamp_now(uv_loop_t *loop);

/* How late the loop reads (docs/metrics.md, "Fidelity").
 *
 * Every read a loop dates here (tp_stamp_recv, and the peeks of
 * tp_stamp_fd, tp_stamp_fd_covered and tp_stamp_fd_group that found bytes
 * waiting) is counted, and a read whose bytes carry a kernel stamp hands
 * the stamp's age to the loop's lag sink: the clock at the read minus the
 * kernel's stamp of the newest segment read, which is how long those
 * bytes waited for the loop (the oldest bytes of a read may have waited
 * longer).  It costs nothing more than the conversion of the stamp, which
 * reads both clocks anyway.  A loop without a stamp installed counts
 * nothing. */
typedef void (*tp_stamp_lag_fn)(void *ctx, uint64_t lag_ns);
/* Sets (fn NULL: clears) where the loop's read lags go. */
void tp_stamp_set_lag_sink(uv_loop_t *loop, tp_stamp_lag_fn fn, void *ctx);
/* The reads counted on the loop so far. */
uint64_t tp_stamp_reads(uv_loop_t *loop);
/* A read dated elsewhere (another thread read and stamped the bytes, at
 * arrival_ns on the tp_now_ns() line) that the loop takes now: counted,
 * and its lag (now - arrival_ns) handed to the sink; arrival_ns 0 = no
 * stamp, counted only. */
void tp_stamp_note_read(uv_loop_t *loop, uint64_t arrival_ns);

/* Kernel receive timestamps.
 *
 * The batch stamp is only as early as the loop gets to a socket: when a
 * burst of answers arrives on many sockets, those read later in the batch
 * (or in the next one, after the earlier ones were parsed) are stamped late
 * by the client's own work.  The kernel stamps every packet as it enters the
 * socket, and a peek just before the read hands that stamp over without
 * consuming anything, whoever reads the socket afterwards (libuv or libcurl).
 *
 * tp_stamp_enable_fd turns the kernel stamps on for a socket (SO_TIMESTAMPNS);
 * it returns 0 or TP_EIO when the socket does not support them, which only
 * means tp_stamp_fd falls back to the batch stamp. */
int tp_stamp_enable_fd(int fd);
/* The arrival time, on the tp_now_ns() time line, of the newest of the next
 * len bytes waiting in fd's receive queue: every byte a read of up to len
 * bytes takes in arrived then or before, so a time derived from it is never
 * early.  Bytes that arrived together (one segment, or segments the kernel
 * merged, which keep the newest stamp) get their exact arrival time, even
 * when that is after the batch began.  Returns tp_stamp_now(loop) when the
 * socket holds no data or carries no kernel stamp.  The peek walks the queue without copying
 * (MSG_PEEK | MSG_TRUNC). */
uint64_t tp_stamp_fd(uv_loop_t *loop, int fd, size_t len);
/* tp_stamp_fd, and how many of the next len bytes the time covers in
 * *covered: the bytes waiting now (a read that returns more took bytes that
 * arrived after this call, later than the time returned: the caller dates
 * those itself), or len when the socket carries no kernel stamps (the batch
 * stamp then stands for the whole read, as in tp_stamp_fd); 0 when nothing
 * is waiting. */
uint64_t tp_stamp_fd_covered(uv_loop_t *loop, int fd, size_t len, size_t *covered);
/* A TCP socket's byte counts: how many the kernel has received on it so
 * far (*received) and how many of those wait unread (*unread; NULL to skip
 * that second call).  Returns false when the system does not say (then a
 * caller cannot tell whether a reader took bytes newer than a stamp). */
bool tp_stamp_tcp_counts(int fd, uint64_t *received, uint64_t *unread);
/* Where fd's receive queue begins in the TCP stream, in the count of
 * tp_stamp_tcp_counts (bytes received before the oldest one waiting), in
 * *head, how many bytes wait (*waiting), how many segments with data came
 * so far (*segs, RFC 4898's DataSegsIn: a count that moved by one brought
 * every byte counted since in one segment, under one stamp; duplicates
 * count too, never too few), and whether the peer's FIN has come (*fin:
 * then the count holds one more, and a caller that needs the head to the
 * byte stops).  The figures come from two calls: a segment
 * arriving between them puts *head too far by its length, so a caller
 * checks that a peek of the whole queue right after returns *waiting
 * bytes.  Returns false when the system does not say. */
bool tp_stamp_tcp_head(int fd, uint64_t *head, uint64_t *waiting, uint32_t *segs, bool *fin);
/* Copies up to len of fd's waiting bytes without consuming them (a peek)
 * and dates the newest segment copied, like tp_stamp_recv (a counted
 * read, its lag to the sink).  Returns the bytes copied or -errno. */
ssize_t tp_stamp_peek(uv_loop_t *loop, int fd, void *buf, size_t len, uint64_t *at);
/* Like tp_stamp_fd, but exact when the waiting bytes arrived at different
 * times: returns the arrival time of the bytes at the head of the queue and
 * sets *group_len to how many of the next len bytes arrived with them (1 to
 * len; len when the socket holds no stamped data).  A reader that reads only
 * that many bytes, then asks again, stamps every byte with its own segment's
 * time.  Costs a few peeks (a binary search over the queue, without copying)
 * when the arrivals differ; for the mock server, whose times are the
 * reference the client is held against. */
uint64_t tp_stamp_fd_group(uv_loop_t *loop, int fd, size_t len, size_t *group_len);
/* The arrival times of chosen bytes of fd's receive queue: out[i] gets
 * the tp_now_ns() time of the kernel's stamp of the segment holding byte
 * offs[i] (0 = the head of the queue; offs ascending), or 0 when that byte
 * is not there or carries no stamp.  newest: the time of the newest byte
 * waiting, just taken (tp_stamp_peek), or 0.  When the first of them
 * arrived with the newest (the usual case: the loop read in time), one
 * peek dates them all; otherwise one peek per byte.  Not counted as reads
 * (the caller's read is counted where it looks at the socket). */
void tp_stamp_fd_bytes(uv_loop_t *loop, int fd, const size_t *offs, size_t n, uint64_t newest, uint64_t *out);
/* Reads up to len bytes of fd (never blocking) and dates them in one
 * system call: *at gets the kernel stamp of the newest segment the read
 * took (every byte it returns arrived then or before, as with
 * tp_stamp_fd, but without a peek and without bytes arriving between the
 * look and the read), or tp_stamp_now(loop) when the bytes carry no
 * stamp.  Returns the bytes read, 0 at the end of the stream, or -errno
 * (-EAGAIN: nothing waiting). */
ssize_t tp_stamp_recv(uv_loop_t *loop, int fd, void *buf, size_t len, uint64_t *at);
/* The same conversion for a kernel stamp already taken (CLOCK_REALTIME, as
 * SO_TIMESTAMPNS gives it): the tp_now_ns() time of that instant, or 0 when
 * it lies in the future or over 10 s back (the wall clock was stepped). */
uint64_t tp_stamp_from_realtime(const struct timespec *ts);

/* Kernel transmit stamps (tp_stamp_tcp.c).
 *
 * A send time taken with the clock after a library's write returns is late
 * by whatever the library did in between (libcurl serves its other
 * transfers before it reports progress).  The kernel stamps the last segment
 * of every write as it hands it to the device: for loopback, inside the
 * write itself, always before the peer can receive it.
 *
 * tp_stamp_enable_tx asks for those stamps on a socket (SO_TIMESTAMPING,
 * software transmit stamps, no packet copy); 0, or -1 when the system does
 * not give them (the caller keeps its clock reading).  Each stamp waits on
 * the socket's error queue, which makes poll report an error until it is
 * read: a caller that enables them drains the queue after its writes and
 * when poll says "error". */
int tp_stamp_enable_tx(int fd);
/* Reads every transmit stamp waiting on fd's error queue without blocking.
 * Returns how many were read (0: none waiting), with the newest in *newest
 * (CLOCK_REALTIME, as the kernel gives it: tp_stamp_from_realtime converts
 * it); -errno when the queue could not be read. */
int tp_stamp_tx_drain(int fd, struct timespec *newest);
/* Bytes written to a TCP socket that the kernel has not sent yet
 * (SIOCOUTQNSD); -1 when the system does not say.  0 means the stamp of the
 * last write is taken or on its way (the device's queue). */
long tp_stamp_tcp_unsent(int fd);

#endif

/* Unit tests for arrival stamps (lib/util/tp_stamp.c).
 *
 * Kernel receive stamps are checked on a real loopback TCP connection, with
 * the bytes written at times the test takes itself: a stamp read long after
 * the write must still give the write's time, and a stamp may never be
 * earlier than the newest bytes it covers.  The wide margins allow for a
 * shared machine's scheduling; the delays they are held against are 10 times
 * larger. */
#include <arpa/inet.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "tp_test.h"
#include "util/tp_common.h"
#include <errno.h>

#include "util/tp_stamp.h"

#define MS TP_NS_PER_MS

static void sleep_ms(int ms) {
  struct timespec ts = {.tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

/* A connected loopback TCP pair: *rd reads, *wr writes. */
static int tcp_pair(int *rd, int *wr) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t al = sizeof(a);
  if (l < 0 || bind(l, (struct sockaddr *)&a, sizeof(a)) || listen(l, 1) ||
      getsockname(l, (struct sockaddr *)&a, &al))
    return -1;
  *rd = socket(AF_INET, SOCK_STREAM, 0);
  if (*rd < 0 || connect(*rd, (struct sockaddr *)&a, sizeof(a))) return -1;
  *wr = accept(l, NULL, NULL);
  close(l);
  int one = 1;
  setsockopt(*wr, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return *wr < 0 ? -1 : 0;
}

/* One turn of the loop: its prepare phase starts a new poll batch, so the
 * next stamp is taken afresh. */
static void on_tick(uv_timer_t *t) { (void)t; }

static void new_batch(uv_loop_t *loop) {
  uv_timer_t t;
  uv_timer_init(loop, &t);
  uv_timer_start(&t, on_tick, 0, 0);
  uv_run(loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(loop, UV_RUN_NOWAIT);
}

static void drain(int fd) {
  char buf[65536];
  while (recv(fd, buf, sizeof(buf), MSG_DONTWAIT) > 0) {
  }
}

/* A loop with stamps installed and a loopback TCP pair whose reading end
 * carries kernel stamps; false (reported) when the pair cannot be made.
 * what prefixes the checks' names. */
static bool open_stamped(uv_loop_t *loop, int *rd, int *wr, const char *what) {
  uv_loop_init(loop);
  int rv = tp_stamp_install(loop);
  CHECK(rv == 0, "%sstamp installed (%d)", what, rv);
  if (tcp_pair(rd, wr)) {
    CHECK(0, "%sloopback TCP pair", what);
    return false;
  }
  rv = tp_stamp_enable_fd(*rd);
  CHECK(rv == 0, "%skernel stamps turned on for a TCP socket (%d)", what, rv);
  return true;
}

/* Takes the stamps off the loop and closes it: nothing may be left. */
static void close_stamped(uv_loop_t *loop, const char *what) {
  tp_stamp_uninstall(loop);
  uv_run(loop, UV_RUN_DEFAULT);
  int rv = uv_loop_close(loop);
  CHECK(rv == 0, "%sloop closes: no handle left behind (%d)", what, rv);
}

static void test_from_realtime(void) {
  struct timespec now;
  clock_gettime(CLOCK_REALTIME, &now);
  uint64_t mono = tp_now_ns();
  struct timespec back = now;
  back.tv_sec -= 1; /* one second ago */
  uint64_t t = tp_stamp_from_realtime(&back);
  CHECK(t != 0, "a wall-clock time 1 s back converts");
  CHECK_NEAR((double)(mono - t) / MS, 1000.0, 5.0, "and lands 1 s before now on the monotonic line (ms)");
  struct timespec future = now;
  future.tv_sec += 5;
  CHECK_INT(tp_stamp_from_realtime(&future), 0, "a time in the future is refused (a stepped clock)");
  struct timespec old = now;
  old.tv_sec -= 11;
  CHECK_INT(tp_stamp_from_realtime(&old), 0, "a time over 10 s back is refused");
}

static void test_kernel_stamps(void) {
  uv_loop_t loop;
  int rd = -1, wr = -1;
  if (!open_stamped(&loop, &rd, &wr, "")) return;

  /* Bytes that waited 30 ms in the queue keep their arrival time.  A shared
   * machine can lose one try (the wall clock stepped by its time daemon
   * between the kernel's stamp and the conversion, which then refuses the
   * stamp and falls back to the batch time): up to three tries, each
   * reported, and the checks hold on the last one. */
  uint64_t before = 0, after = 0, t = 0, now = 0;
  char buf[64];
  ssize_t got = 0;
  for (int attempt = 1; attempt <= 3; attempt++) {
    new_batch(&loop);
    before = tp_now_ns();
    if (write(wr, "first token", 11) != 11) break;
    after = tp_now_ns();
    sleep_ms(30);
    t = tp_stamp_fd(&loop, rd, 65536);
    now = tp_now_ns();
    got = recv(rd, buf, sizeof(buf), 0);
    if (t >= before && t <= after + 2 * MS && got == 11) break;
    printf("# try %d: stamp %.3f ms after the write; trying again\n", attempt, ((double)t - (double)after) / MS);
  }
  CHECK(t >= before, "the stamp is not before the write began (%.3f ms)", ((double)t - (double)before) / MS);
  CHECK(t <= after + 2 * MS, "the stamp is the write's time, not the peek's (%.3f ms after the write)",
        ((double)t - (double)after) / MS);
  CHECK(now - t >= 25 * MS, "so it lies the wait before now (%.3f ms)", (double)(now - t) / MS);
  CHECK_INT(got, 11, "the peek consumed nothing");

  /* Two writes 20 ms apart, read in one go: the stamp covers the newest. */
  new_batch(&loop);
  CHECK_INT(write(wr, "a", 1), 1, "write a");
  sleep_ms(20);
  uint64_t before_b = tp_now_ns();
  CHECK_INT(write(wr, "b", 1), 1, "write b");
  sleep_ms(10);
  t = tp_stamp_fd(&loop, rd, 65536);
  CHECK(t >= before_b, "a stamp for a read of both writes is never before the newest (%.3f ms)",
        ((double)t - (double)before_b) / MS);
  CHECK(tp_now_ns() - t >= 5 * MS, "and is still the arrival time, not now");
  drain(rd);

  /* Nothing waiting: the batch stamp, which the loop keeps until its next
   * turn. */
  new_batch(&loop);
  uint64_t batch = tp_stamp_now(&loop);
  CHECK_INT(tp_stamp_fd(&loop, rd, 65536), batch, "an empty socket gives the batch stamp");
  /* Data arriving after the batch began keeps its own arrival time: taken at
   * the batch's, it would be stamped before it was sent. */
  sleep_ms(5);
  uint64_t before_late = tp_now_ns();
  CHECK_INT(write(wr, "late", 4), 4, "write late");
  sleep_ms(5);
  t = tp_stamp_fd(&loop, rd, 65536);
  CHECK(t >= before_late && t < tp_now_ns(), "a stamp newer than the batch's is kept, never before the send (%.3f ms after)",
        ((double)t - (double)before_late) / MS);
  drain(rd);

  /* What a stamp covers, and the byte counts that tell a reader whether
   * it took bytes newer than its stamp. */
  size_t covered = 99;
  new_batch(&loop);
  t = tp_stamp_fd_covered(&loop, rd, 65536, &covered);
  CHECK_INT(covered, 0, "an empty socket: the stamp covers nothing");
  CHECK_INT(t, tp_stamp_now(&loop), "and is the batch's");
  uint64_t received0 = 0, unread = 99;
  bool counted = tp_stamp_tcp_counts(rd, &received0, &unread);
  CHECK(counted, "TCP byte counts are known on Linux");
  CHECK_INT(unread, 0, "nothing unread");
  CHECK_INT(write(wr, "0123456789", 10), 10, "write 10 bytes");
  sleep_ms(5);
  t = tp_stamp_fd_covered(&loop, rd, 65536, &covered);
  CHECK_INT(covered, 10, "the stamp covers the 10 bytes waiting");
  CHECK_INT(tp_stamp_fd_covered(&loop, rd, 4, &covered) != 0, 1, "a shorter look");
  CHECK_INT(covered, 4, "covers only what it looked at");
  uint64_t received = 0;
  CHECK(tp_stamp_tcp_counts(rd, &received, &unread), "counts after the write");
  CHECK_INT(received - received0, 10, "10 more bytes received");
  CHECK_INT(unread, 10, "all 10 unread");
  CHECK_INT(recv(rd, buf, 4, 0), 4, "read 4");
  CHECK(tp_stamp_tcp_counts(rd, &received, &unread), "counts after the read");
  CHECK_INT(unread, 6, "6 still unread");
  CHECK_INT(received - received0, 10, "reading changes nothing received");
  CHECK(tp_stamp_tcp_counts(rd, &received, NULL), "the received count alone");
  CHECK(!tp_stamp_tcp_counts(-1, &received, &unread), "no counts for an invalid descriptor");
  drain(rd);
  batch = tp_stamp_now(&loop);

  /* A socket without kernel stamps: the batch stamp. */
  int rd2 = -1, wr2 = -1;
  if (tcp_pair(&rd2, &wr2) == 0) {
    CHECK_INT(write(wr2, "x", 1), 1, "write on a socket without stamps");
    sleep_ms(5);
    CHECK_INT(tp_stamp_fd(&loop, rd2, 65536), batch, "no kernel stamp: the batch stamp");
    CHECK_INT(tp_stamp_fd_covered(&loop, rd2, 65536, &covered), batch, "the same through the covering look");
    CHECK_INT(covered, 65536, "which then stands for the whole read");
    close(rd2);
    close(wr2);
  }
  /* Not a socket at all. */
  CHECK(tp_stamp_enable_fd(-1) != 0, "an invalid descriptor is refused");
  CHECK_INT(tp_stamp_fd(&loop, -1, 16), batch, "and gives the batch stamp");

  close(rd);
  close(wr);
  close_stamped(&loop, "");
}

/* tp_stamp_recv: the bytes and their stamp in one call.  Two writes 20 ms
 * apart read together are dated at the newest; a lone write that waited
 * 30 ms keeps its arrival time; nothing waiting is -EAGAIN; the peer's
 * close is 0. */
static void test_recv(void) {
  uv_loop_t loop;
  int rd = -1, wr = -1;
  if (!open_stamped(&loop, &rd, &wr, "recv: ")) return;
  char buf[64];
  uint64_t at = 0;
  new_batch(&loop);
  CHECK_INT(tp_stamp_recv(&loop, rd, buf, sizeof(buf), &at), -EAGAIN, "recv: nothing waiting is -EAGAIN");
  uint64_t before = 0, after = 0, now = 0;
  ssize_t n = 0;
  /* Up to three tries, as above: a stepped wall clock refuses one stamp. */
  for (int attempt = 1; attempt <= 3; attempt++) {
    new_batch(&loop);
    CHECK_INT(write(wr, "a", 1), 1, "recv: write a");
    sleep_ms(20);
    before = tp_now_ns();
    CHECK_INT(write(wr, "bc", 2), 2, "recv: write bc");
    after = tp_now_ns();
    sleep_ms(30);
    n = tp_stamp_recv(&loop, rd, buf, sizeof(buf), &at);
    now = tp_now_ns();
    if (n == 3 && at >= before && at <= after + 2 * MS) break;
    printf("# try %d: %zd bytes, stamp %.3f ms after the second write\n", attempt, n,
           ((double)at - (double)after) / MS);
    drain(rd);
  }
  CHECK(n == 3 && memcmp(buf, "abc", 3) == 0, "recv: both writes read in one call (%zd bytes)", n);
  CHECK(at >= before, "recv: dated no earlier than the newest write (%.3f ms)", ((double)at - (double)before) / MS);
  CHECK(at <= after + 2 * MS, "recv: dated at its arrival, not at the read (%.3f ms after the write)",
        ((double)at - (double)after) / MS);
  CHECK(now - at >= 25 * MS, "recv: the stamp lies the wait before the read (%.3f ms)", (double)(now - at) / MS);
  close(wr);
  CHECK_INT(tp_stamp_recv(&loop, rd, buf, sizeof(buf), &at), 0, "recv: the peer's close reads as 0");
  close(rd);
  close_stamped(&loop, "recv: ");
}

/* libuv's poll watcher on a socket whose error queue holds a stamp. */
static int tx_poll_status = 1;
static void on_tx_poll(uv_poll_t *p, int status, int events) {
  (void)events;
  tx_poll_status = status;
  uv_poll_stop(p);
}

static void test_transmit(void) {
  int rd = -1, wr = -1;
  if (tcp_pair(&rd, &wr)) {
    CHECK(0, "tx: loopback TCP pair");
    return;
  }
  struct timespec newest = {0, 0};
  CHECK_INT(tp_stamp_tx_drain(wr, &newest), 0, "tx: without transmit stamps the error queue is empty");
  CHECK_INT(tp_stamp_enable_tx(wr), 0, "tx: transmit stamps turned on for a TCP socket");
  CHECK_INT(tp_stamp_tx_drain(wr, &newest), 0, "tx: nothing written, nothing stamped");
  /* Two writes 20 ms apart: two stamps, the newest the second's, taken
   * inside the write on loopback. */
  uint64_t at = 0, before = 0, after = 0;
  int n = 0;
  for (int attempt = 1; attempt <= 3; attempt++) {
    CHECK_INT(write(wr, "a", 1), 1, "tx: write a");
    sleep_ms(20);
    before = tp_now_ns();
    CHECK_INT(write(wr, "bc", 2), 2, "tx: write bc");
    after = tp_now_ns();
    sleep_ms(10);
    n = tp_stamp_tx_drain(wr, &newest);
    at = tp_stamp_from_realtime(&newest);
    drain(rd);
    if (n == 2 && at >= before && at <= after) break;
    printf("# try %d: %d stamps, newest %.3f ms after the second write\n", attempt, n,
           ((double)at - (double)after) / MS);
  }
  CHECK_INT(n, 2, "tx: one stamp per write");
  CHECK(at >= before && at <= after, "tx: the newest stamp lies inside the second write (%.1f us after its start)",
        ((double)at - (double)before) / 1e3);
  CHECK_INT(tp_stamp_tcp_unsent(wr), 0, "tx: nothing left unsent");
  CHECK_INT(tp_stamp_tx_drain(wr, &newest), 0, "tx: a stamp is read once");
  /* A stamp left on the queue makes poll report an error: libuv stops the
   * watcher with UV_EBADF, which the HTTP client reads as "stamps waiting"
   * (tp_http_loop.c). */
  uv_loop_t loop;
  uv_loop_init(&loop);
  uv_poll_t p;
  uv_poll_init_socket(&loop, &p, wr);
  CHECK_INT(write(wr, "d", 1), 1, "tx: write d");
  uv_poll_start(&p, UV_READABLE, on_tx_poll);
  uv_run(&loop, UV_RUN_NOWAIT);
  CHECK_INT(tx_poll_status, UV_EBADF, "tx: a waiting stamp stops a read watcher with UV_EBADF");
  CHECK_INT(tp_stamp_tx_drain(wr, &newest), 1, "tx: and the stamp is still there to read");
  tx_poll_status = 1;
  uv_poll_start(&p, UV_READABLE, on_tx_poll);
  uv_run(&loop, UV_RUN_NOWAIT);
  CHECK_INT(tx_poll_status, 1, "tx: once read, the socket is quiet again");
  uv_close((uv_handle_t *)&p, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  close(rd);
  close(wr);
}

/* What the loop's reads tell about the loop (docs/metrics.md, "Fidelity"):
 * each read is counted, and its lag (the clock at the read minus the
 * kernel's stamp of its newest bytes) goes to the sink: bytes left waiting
 * 30 ms report at least that, and no more than the time since their write.
 * Two reads of one segment get one time, so that responses read together
 * share it exactly; a read dated on another thread is counted too. */
typedef struct lags {
  uint64_t n, last, max;
} lags;

static void on_lag(void *ctx, uint64_t ns) {
  lags *l = ctx;
  l->n++;
  l->last = ns;
  if (ns > l->max) l->max = ns;
}

static void test_read_lag(void) {
  uv_loop_t loop;
  int rd = -1, wr = -1;
  if (!open_stamped(&loop, &rd, &wr, "lag: ")) return;
  lags l = {0, 0, 0};
  tp_stamp_set_lag_sink(&loop, on_lag, &l);
  char buf[64];
  uint64_t at = 0, at2 = 0, written = 0, read_at = 0;
  ssize_t n = 0, n2 = 0;
  uint64_t reads0 = 0;
  /* Up to three tries, as above: a stepped wall clock refuses one stamp. */
  for (int attempt = 1; attempt <= 3; attempt++) {
    new_batch(&loop);
    l.n = 0;
    reads0 = tp_stamp_reads(&loop);
    written = tp_now_ns();
    CHECK_INT(write(wr, "abcd", 4), 4, "lag: write");
    sleep_ms(30);
    read_at = tp_now_ns();
    n = tp_stamp_recv(&loop, rd, buf, 2, &at); /* half the segment */
    n2 = tp_stamp_recv(&loop, rd, buf, sizeof(buf), &at2); /* the rest of it */
    if (n == 2 && n2 == 2 && l.n == 2) break;
    printf("# try %d: %zd + %zd bytes, %" PRIu64 " lags\n", attempt, n, n2, l.n);
    drain(rd);
  }
  uint64_t after = tp_now_ns();
  CHECK(n == 2 && n2 == 2, "lag: one segment read in two reads");
  CHECK_INT(tp_stamp_reads(&loop) - reads0, 2, "lag: every read counted");
  CHECK_INT(l.n, 2, "lag: each read with a stamp gives its lag");
  CHECK(l.max >= 25 * MS, "lag: bytes left waiting 30 ms report that wait (%.3f ms)", (double)l.max / MS);
  CHECK(l.max <= after - written, "lag: never more than the time since the write (%.3f ms, %.3f ms)",
        (double)l.max / MS, (double)(after - written) / MS);
  CHECK(at == at2 && at != 0, "lag: both reads of the one segment get one time, exactly");
  (void)read_at;

  /* A read another thread dated: counted, its lag from the given time. */
  uint64_t r0 = tp_stamp_reads(&loop);
  l.n = 0;
  tp_stamp_note_read(&loop, tp_now_ns() - 5 * MS);
  CHECK(tp_stamp_reads(&loop) == r0 + 1 && l.n == 1 && l.last >= 5 * MS && l.last < 5 * MS + 500 * MS,
        "lag: a read dated elsewhere counts, its lag from its stamp (%.3f ms)", (double)l.last / MS);
  tp_stamp_note_read(&loop, 0);
  CHECK(tp_stamp_reads(&loop) == r0 + 2 && l.n == 1, "lag: one without a stamp counts, with no lag");
  tp_stamp_set_lag_sink(&loop, NULL, NULL);
  tp_stamp_note_read(&loop, tp_now_ns());
  CHECK(l.n == 1, "lag: no sink, no lag handed over");

  /* A loop without stamps installed counts nothing. */
  uv_loop_t bare;
  memset(&bare, 0, sizeof(bare)); /* uv_loop_init keeps data as it finds it */
  uv_loop_init(&bare);
  tp_stamp_note_read(&bare, tp_now_ns());
  CHECK_INT(tp_stamp_reads(&bare), 0, "lag: a loop without stamps counts nothing");
  uv_loop_close(&bare);
  close(wr);
  close(rd);
  close_stamped(&loop, "lag: ");
}

int main(void) {
  test_read_lag();
  test_from_realtime();
  test_kernel_stamps();
  test_recv();
  test_transmit();
  return tp_test_done();
}

#include "tp_stamp.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "tp_common.h"

#define STAMP_MAGIC 0x74707374616d70ULL

/* Kernel receive stamps (SO_TIMESTAMPNS, and peeking a TCP queue without
 * copying it with MSG_TRUNC) are Linux's.  Elsewhere the build keeps
 * working: no socket gets stamps, and every read falls back to the batch
 * stamp, which is what a socket without stamps gets on Linux too. */
#if defined(SO_TIMESTAMPNS) && defined(SCM_TIMESTAMPNS) && defined(MSG_TRUNC)
#define TP_KERNEL_STAMPS 1
#else
#define TP_KERNEL_STAMPS 0
#endif

typedef struct stamp {
  uint64_t magic; /* loop->data may hold something else when not installed */
  uv_prepare_t prep;
  uint64_t ns;
  /* The reads dated on this loop, and where their lateness goes (see
   * tp_stamp_set_lag_sink). */
  uint64_t reads;
  tp_stamp_lag_fn lag_fn;
  void *lag_ctx;
  /* The last kernel stamp converted, and what it became: the same stamp
   * (bytes of one segment, or of segments the kernel merged, dated twice)
   * gets the same time, never one a few nanoseconds off from the jitter
   * of reading two clocks, so that responses that arrived together share
   * one time exactly. */
  struct timespec last_ts;
  uint64_t last_mono;
} stamp;

/* The loop's stamp, or NULL when none is installed. */
static stamp *stamp_of(uv_loop_t *loop) {
  stamp *s = loop ? loop->data : NULL;
  return s && s->magic == STAMP_MAGIC ? s : NULL;
}

static void on_prepare(uv_prepare_t *h) {
  stamp *s = h->data;
  s->ns = 0;
}

int tp_stamp_install(uv_loop_t *loop) {
  stamp *s = calloc(1, sizeof(*s));
  if (!s) return TP_ENOMEM;
  s->magic = STAMP_MAGIC;
  uv_prepare_init(loop, &s->prep);
  s->prep.data = s;
  uv_prepare_start(&s->prep, on_prepare);
  uv_unref((uv_handle_t *)&s->prep);
  loop->data = s;
  return 0;
}

static void on_closed(uv_handle_t *h) { free(h->data); }

void tp_stamp_uninstall(uv_loop_t *loop) {
  stamp *s = loop->data;
  if (!s || s->magic != STAMP_MAGIC) return;
  loop->data = NULL;
  s->magic = 0;
  uv_close((uv_handle_t *)&s->prep, on_closed);
}

uint64_t tp_stamp_now(uv_loop_t *loop) {
  stamp *s = loop->data;
  if (!s || s->magic != STAMP_MAGIC) return tp_now_ns();
  if (!s->ns) s->ns = tp_now_ns();
  return s->ns;
}

int tp_stamp_enable_fd(int fd) {
#if TP_KERNEL_STAMPS
  int one = 1;
  return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof(one)) == 0 ? 0 : TP_EIO;
#else
  (void)fd;
  return TP_EIO;
#endif
}

/* tp_stamp_from_realtime, and the stamp's age (how long ago the kernel
 * took it) in *age_ns. */
static uint64_t from_realtime_age(const struct timespec *ts, uint64_t *age_ns) {
  /* The wall clock's offset from the monotonic one changes only by NTP
   * slewing (parts per million of a few milliseconds here) or by a step,
   * which the age bound catches.  It is read between two monotonic
   * readings: a thread preempted between the two clocks' reads would date
   * the stamp late by the whole preemption (seen: a send stamp converted
   * after the peer's receive stamp of the same bytes, on a busy machine),
   * so a pair further apart than a few microseconds is read again, and the
   * closest of a few tries is kept. */
  struct timespec real = {0, 0};
  uint64_t mono = 0, best_gap = UINT64_MAX;
  for (int tries = 0; tries < 4 && best_gap > 5000; tries++) {
    struct timespec r;
    uint64_t m0 = tp_now_ns();
    clock_gettime(CLOCK_REALTIME, &r);
    uint64_t m1 = tp_now_ns();
    if (m1 - m0 < best_gap) {
      best_gap = m1 - m0;
      real = r;
      mono = m0 + (m1 - m0) / 2;
    }
  }
  int64_t age = (int64_t)(real.tv_sec - ts->tv_sec) * 1000000000 + (real.tv_nsec - ts->tv_nsec);
  if (age < 0 || age > (int64_t)10 * 1000000000 || (uint64_t)age >= mono) return 0;
  *age_ns = (uint64_t)age;
  return mono - (uint64_t)age;
}

uint64_t tp_stamp_from_realtime(const struct timespec *ts) {
  uint64_t age;
  return from_realtime_age(ts, &age);
}

void tp_stamp_set_lag_sink(uv_loop_t *loop, tp_stamp_lag_fn fn, void *ctx) {
  stamp *s = stamp_of(loop);
  if (!s) return;
  s->lag_fn = fn;
  s->lag_ctx = ctx;
}

uint64_t tp_stamp_reads(uv_loop_t *loop) {
  stamp *s = stamp_of(loop);
  return s ? s->reads : 0;
}

void tp_stamp_note_read(uv_loop_t *loop, uint64_t arrival_ns) {
  stamp *s = stamp_of(loop);
  if (!s) return;
  s->reads++;
  if (!arrival_ns || !s->lag_fn) return;
  uint64_t now = tp_now_ns();
  s->lag_fn(s->lag_ctx, now > arrival_ns ? now - arrival_ns : 0);
}

/* The most a peek looks ahead (the largest read any caller makes). */
#define PEEK_MAX_BYTES (256 * 1024)

/* The kernel's stamp of the segment holding byte len-1 of fd's receive
 * queue (len = 0 counts as 1; at most PEEK_MAX_BYTES).  With MSG_TRUNC a
 * TCP receive copies nothing (the buffer is never touched), and the stamp
 * it reports is that of the last segment it walked over.  Returns the bytes walked (<= len), or 0 when
 * there is no data or no stamp; *walked (when not NULL) gets the bytes
 * walked whether or not they carried a stamp. */
#if TP_KERNEL_STAMPS
/* Room for the stamp's control message, aligned for it. */
typedef union stamp_ctl {
  char buf[CMSG_SPACE(sizeof(struct timespec))];
  struct cmsghdr align;
} stamp_ctl;

/* The receive stamp a recvmsg returned in m: false when there is none, or
 * it is zero (the bytes were queued before stamps were turned on). */
static bool cmsg_stamp(struct msghdr *m, struct timespec *ts) {
  for (struct cmsghdr *c = CMSG_FIRSTHDR(m); c; c = CMSG_NXTHDR(m, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_TIMESTAMPNS) continue;
    memcpy(ts, CMSG_DATA(c), sizeof(*ts));
    return ts->tv_sec != 0 || ts->tv_nsec != 0;
  }
  return false;
}

static size_t peek_stamp_walk(int fd, size_t len, struct timespec *ts, size_t *walked) {
  stamp_ctl ctl;
  /* The kernel copies nothing into a TCP buffer under MSG_TRUNC, but tools
   * that check system calls (valgrind) want the range to be addressable:
   * one shared scratch area, never read, serves every peek. */
  static char scratch[PEEK_MAX_BYTES];
  struct iovec iov = {.iov_base = scratch, .iov_len = len == 0 ? 1 : len < sizeof(scratch) ? len : sizeof(scratch)};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf)};
  ssize_t n = recvmsg(fd, &m, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT);
  if (walked) *walked = n > 0 ? (size_t)n : 0;
  if (n <= 0) return 0;
  return cmsg_stamp(&m, ts) ? (size_t)n : 0;
}
#else
static size_t peek_stamp_walk(int fd, size_t len, struct timespec *ts, size_t *walked) {
  (void)fd;
  (void)ts;
  if (walked) *walked = len; /* unknown: the batch stamp stands for the whole read */
  return 0;                  /* no kernel stamps: the callers use the batch stamp */
}
#endif

static size_t peek_stamp(int fd, size_t len, struct timespec *ts) { return peek_stamp_walk(fd, len, ts, NULL); }

static bool same_ts(const struct timespec *a, const struct timespec *b) {
  return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* A kernel stamp on the monotonic line, or the batch's when it cannot be
 * converted.  A stamp newer than the batch's is kept: bytes that arrived
 * after the batch began (a read walks the queue up to what is there now)
 * taken at the batch's time would be early, before the peer sent them.  The
 * conversion never gives a time later than now (tp_stamp_from_realtime). */
static uint64_t kernel_or_batch(stamp *s, const struct timespec *ts, uint64_t batch) {
  uint64_t age = 0, t = from_realtime_age(ts, &age);
  if (!t) return batch;
  if (!s) return t;
  /* The stamp's age is how late the loop came to these bytes: the clock at
   * the read against the kernel's stamp, taken from the two clock readings
   * the conversion makes anyway. */
  if (s->lag_fn) s->lag_fn(s->lag_ctx, age);
  if (same_ts(ts, &s->last_ts)) return s->last_mono;
  s->last_ts = *ts;
  s->last_mono = t;
  return t;
}

static ssize_t recv_stamped(uv_loop_t *loop, int fd, void *buf, size_t len, int flags, uint64_t *at);

ssize_t tp_stamp_recv(uv_loop_t *loop, int fd, void *buf, size_t len, uint64_t *at) {
  return recv_stamped(loop, fd, buf, len, 0, at);
}

ssize_t tp_stamp_peek(uv_loop_t *loop, int fd, void *buf, size_t len, uint64_t *at) {
  return recv_stamped(loop, fd, buf, len, MSG_PEEK, at);
}

static ssize_t recv_stamped(uv_loop_t *loop, int fd, void *buf, size_t len, int flags, uint64_t *at) {
  ssize_t n;
  struct timespec ts = {0, 0};
  bool stamped = false;
#if TP_KERNEL_STAMPS
  stamp_ctl ctl;
  struct iovec iov = {.iov_base = buf, .iov_len = len};
  struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf)};
  do
    n = recvmsg(fd, &m, MSG_DONTWAIT | flags);
  while (n < 0 && errno == EINTR);
  if (n > 0) stamped = cmsg_stamp(&m, &ts);
#else
  do
    n = recv(fd, buf, len, MSG_DONTWAIT | flags);
  while (n < 0 && errno == EINTR);
#endif
  if (n < 0) return -errno;
  uint64_t batch = tp_stamp_now(loop);
  stamp *s = stamp_of(loop);
  if (s && n > 0) s->reads++;
  *at = stamped ? kernel_or_batch(s, &ts, batch) : batch;
  return n;
}

uint64_t tp_stamp_fd(uv_loop_t *loop, int fd, size_t len) {
  uint64_t batch = tp_stamp_now(loop);
  struct timespec ts;
  size_t walked = 0;
  stamp *s = stamp_of(loop);
  bool stamped = peek_stamp_walk(fd, len, &ts, &walked) != 0;
  if (s && walked) s->reads++;
  return stamped ? kernel_or_batch(s, &ts, batch) : batch;
}

uint64_t tp_stamp_fd_covered(uv_loop_t *loop, int fd, size_t len, size_t *covered) {
  uint64_t batch = tp_stamp_now(loop);
  struct timespec ts;
  size_t walked = 0;
  stamp *s = stamp_of(loop);
  if (fd < 0) {
    *covered = len;
    return batch;
  }
  bool stamped = peek_stamp_walk(fd, len, &ts, &walked) != 0;
  if (s && walked) s->reads++;
  if (stamped) {
    *covered = walked;
    return kernel_or_batch(s, &ts, batch);
  }
  /* Bytes without a stamp: the batch stamp, for the whole read. */
  *covered = walked ? len : 0;
  return batch;
}

uint64_t tp_stamp_fd_group(uv_loop_t *loop, int fd, size_t len, size_t *group_len) {
  uint64_t batch = tp_stamp_now(loop);
  *group_len = len ? len : 1;
  struct timespec last, head;
  size_t avail = peek_stamp(fd, len, &last);
  if (!avail || !peek_stamp(fd, 1, &head)) return batch;
  stamp *s = stamp_of(loop);
  if (s) s->reads++;
  if (same_ts(&head, &last)) return kernel_or_batch(s, &head, batch);
  /* Stamps do not decrease along the queue (segments queue in arrival
   * order; merged ones keep the newest): find the last byte whose segment
   * still has the head's stamp.  Invariant: byte lo-1 has it, byte hi-1
   * does not. */
  size_t lo = 1, hi = avail;
  while (hi - lo > 1) {
    size_t mid = lo + (hi - lo) / 2;
    struct timespec ts;
    if (!peek_stamp(fd, mid, &ts)) break; /* the queue changed under us: keep lo */
    if (same_ts(&ts, &head))
      lo = mid;
    else
      hi = mid;
  }
  *group_len = lo;
  return kernel_or_batch(s, &head, batch);
}

/* A kernel stamp on the monotonic line without a lag sample (the caller's
 * read gave one): the same stamp as the last one converted gets the same
 * time, as in kernel_or_batch; 0 when it cannot be converted. */
static uint64_t kernel_quiet(stamp *s, const struct timespec *ts) {
  if (s && same_ts(ts, &s->last_ts)) return s->last_mono;
  uint64_t age = 0, t = from_realtime_age(ts, &age);
  if (!t || !s) return t;
  s->last_ts = *ts;
  s->last_mono = t;
  return t;
}

void tp_stamp_fd_bytes(uv_loop_t *loop, int fd, const size_t *offs, size_t n, uint64_t newest,
                       uint64_t *out) {
  stamp *s = stamp_of(loop);
  for (size_t i = 0; i < n; i++) {
    struct timespec ts;
    size_t walked = 0;
    /* peek_stamp_walk(len) stamps byte len-1: it must have walked that far. */
    bool ok = peek_stamp_walk(fd, offs[i] + 1, &ts, &walked) != 0 && walked == offs[i] + 1;
    out[i] = ok ? kernel_quiet(s, &ts) : 0;
    /* Stamps do not decrease along the queue: once one is the newest's
     * (the same stamp converts to the same time), so are the rest. */
    if (newest && out[i] == newest) {
      for (size_t k = i + 1; k < n; k++) out[k] = newest;
      return;
    }
  }
}

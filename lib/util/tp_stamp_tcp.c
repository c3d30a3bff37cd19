/* TCP byte counts for tp_stamp_tcp_counts (see tp_stamp.h).  A file of its
 * own because tcp_info's tcpi_bytes_received (Linux 4.1 and later) is in
 * Linux's <linux/tcp.h>, which cannot be included beside the C library's
 * <netinet/tcp.h> (libuv's header brings that one in), and the C library's
 * tcp_info stops before the field. */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#if defined(__linux__)
#include <netinet/in.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#endif

bool tp_stamp_tcp_counts(int fd, uint64_t *received, uint64_t *unread);

bool tp_stamp_tcp_counts(int fd, uint64_t *received, uint64_t *unread) {
#if defined(__linux__)
  struct tcp_info ti;
  socklen_t len = sizeof(ti);
  memset(&ti, 0, sizeof(ti));
  /* An older kernel fills less of the structure: then it has no count. */
  if (fd < 0 || getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
      len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
    return false;
  *received = ti.tcpi_bytes_received;
  if (unread) {
    int q = 0;
    if (ioctl(fd, SIOCINQ, &q) != 0 || q < 0) return false;
    *unread = (uint64_t)q;
  }
  return true;
#else
  (void)fd, (void)received, (void)unread;
  return false;
#endif
}

bool tp_stamp_tcp_head(int fd, uint64_t *head, uint64_t *waiting, uint32_t *segs, bool *fin);

bool tp_stamp_tcp_head(int fd, uint64_t *head, uint64_t *waiting, uint32_t *segs, bool *fin) {
#if defined(__linux__)
  /* The queue's length first, then the count: a segment that arrives
   * between the two grows the count but not the length, which would put
   * the head too far; the caller checks that the length still holds (its
   * peek of the whole queue returns as many bytes). */
  int q = 0;
  if (fd < 0 || ioctl(fd, SIOCINQ, &q) != 0 || q < 0) return false;
  struct tcp_info ti;
  socklen_t len = sizeof(ti);
  memset(&ti, 0, sizeof(ti));
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
      len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
    return false;
  /* The count takes a FIN as one byte (the sequence number it uses) and
   * the queue's length does not: past a FIN the head is not known to the
   * byte, so the caller stops there. */
  /* Linux's TCP states (include/net/tcp_states.h; <netinet/tcp.h>, which
   * names them, cannot be included beside <linux/tcp.h>): every state but
   * these three has seen the peer's FIN or is closed. */
  enum { ST_ESTABLISHED = 1, ST_FIN_WAIT1 = 4, ST_FIN_WAIT2 = 5 };
  *fin = ti.tcpi_state != ST_ESTABLISHED && ti.tcpi_state != ST_FIN_WAIT1 && ti.tcpi_state != ST_FIN_WAIT2;
  if (ti.tcpi_bytes_received < (uint64_t)q) return false;
  *head = ti.tcpi_bytes_received - (uint64_t)q;
  *waiting = (uint64_t)q;
  /* Linux 4.6 and later; 0 (never a count that moved by one) before. */
  *segs = len >= offsetof(struct tcp_info, tcpi_data_segs_in) + sizeof(ti.tcpi_data_segs_in)
              ? ti.tcpi_data_segs_in
              : 0;
  return true;
#else
  (void)fd, (void)head, (void)waiting, (void)segs, (void)fin;
  return false;
#endif
}

/* ---- kernel transmit stamps (see tp_stamp.h) ----------------------------- */

#if defined(__linux__)
#include <errno.h>
#include <linux/errqueue.h>
#include <linux/net_tstamp.h>
#include <time.h>
#endif

int tp_stamp_enable_tx(int fd);
int tp_stamp_tx_drain(int fd, struct timespec *newest);
long tp_stamp_tcp_unsent(int fd);

int tp_stamp_enable_tx(int fd) {
#if defined(__linux__) && defined(SO_TIMESTAMPING)
  /* The software stamp the kernel takes as each write's last segment is
   * handed to the device (for loopback, in the write itself), reported
   * without a copy of the packet (OPT_TSONLY).  No RX flags: receive stamps
   * stay SO_TIMESTAMPNS's, as tp_stamp_enable_fd turned them on. */
  int v = SOF_TIMESTAMPING_TX_SOFTWARE | SOF_TIMESTAMPING_SOFTWARE | SOF_TIMESTAMPING_OPT_TSONLY;
  return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPING, &v, sizeof(v)) == 0 ? 0 : -1;
#else
  (void)fd;
  return -1;
#endif
}

int tp_stamp_tx_drain(int fd, struct timespec *newest) {
#if defined(__linux__) && defined(SO_TIMESTAMPING) && defined(SCM_TIMESTAMPING)
  int n = 0;
  for (;;) {
    union {
      char buf[512];
      struct cmsghdr align;
    } ctl;
    char data[64];
    struct iovec iov = {.iov_base = data, .iov_len = sizeof(data)};
    struct msghdr m;
    memset(&m, 0, sizeof(m));
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    m.msg_control = ctl.buf;
    m.msg_controllen = sizeof(ctl.buf);
    ssize_t r = recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT);
    if (r < 0) {
      if (errno == EINTR) continue;
      return errno == EAGAIN || errno == EWOULDBLOCK ? n : (n ? n : -errno);
    }
    struct timespec ts = {0, 0};
    bool is_stamp = false;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPING &&
          c->cmsg_len >= CMSG_LEN(sizeof(struct timespec))) {
        memcpy(&ts, CMSG_DATA(c), sizeof(ts)); /* ts[0]: the software stamp */
      } else if ((c->cmsg_level == SOL_IP && c->cmsg_type == IP_RECVERR) ||
                 (c->cmsg_level == SOL_IPV6 && c->cmsg_type == IPV6_RECVERR)) {
        struct sock_extended_err ee;
        memcpy(&ee, CMSG_DATA(c), sizeof(ee));
        is_stamp = ee.ee_origin == SO_EE_ORIGIN_TIMESTAMPING && ee.ee_info == SCM_TSTAMP_SND;
      }
    }
    if (!is_stamp || (ts.tv_sec == 0 && ts.tv_nsec == 0)) continue;
    if (n == 0 || ts.tv_sec > newest->tv_sec || (ts.tv_sec == newest->tv_sec && ts.tv_nsec > newest->tv_nsec))
      *newest = ts;
    n++;
  }
#else
  (void)fd, (void)newest;
  return 0;
#endif
}

long tp_stamp_tcp_unsent(int fd) {
#if defined(__linux__) && defined(SIOCOUTQNSD)
  int q = 0;
  return ioctl(fd, SIOCOUTQNSD, &q) == 0 && q >= 0 ? (long)q : -1;
#else
  (void)fd;
  return -1;
#endif
}

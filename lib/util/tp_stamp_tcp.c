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

/* What the connections of both sides share: accepting, the arrival stamp
 * of a read, writing owned bytes, and the ports of listeners. */
#include <stdlib.h>
#include <string.h>

#include <uv.h>

#include "mock/tp_mock_internal.h"
#include "util/tp_common.h"
#include "util/tp_stamp.h"

uint64_t tp__mock_read_stamp(tp_mock *m, uv_tcp_t *tcp, size_t *read_len) {
  uv_os_fd_t fd;
  *read_len = sizeof(m->readbuf);
  return uv_fileno((uv_handle_t *)tcp, &fd) == 0
             ? tp_stamp_fd_group(&m->loop, fd, sizeof(m->readbuf), read_len)
             : tp_stamp_now(&m->loop);
}

bool tp__mock_accept(tp_mock *m, uv_stream_t *server, uv_tcp_t *tcp, uv_close_cb on_closed) {
  uv_tcp_init(&m->loop, tcp);
  if (uv_accept(server, (uv_stream_t *)tcp) != 0) {
    uv_close((uv_handle_t *)tcp, on_closed);
    return false;
  }
  tp__mock_count(&m->n_connections, 1);
  if (m->refused_so_far < m->cfg.refuse_connections) {
    /* refuse_connections: accepted, then reset (RST): the client's connect
     * succeeded and its first read fails with ECONNRESET. */
    m->refused_so_far++;
    tp__mock_count(&m->n_refused, 1);
    if (uv_tcp_close_reset(tcp, on_closed) != 0) uv_close((uv_handle_t *)tcp, on_closed);
    return false;
  }
  uv_tcp_nodelay(tcp, 1);
  uv_os_fd_t fd;
  if (uv_fileno((uv_handle_t *)tcp, &fd) == 0) (void)tp_stamp_enable_fd(fd);
  return true;
}

typedef struct mock_write {
  uv_write_t req;
  void *owner;
  tp__mock_write_cb done;
  char *data;
  size_t len;
} mock_write;

static void on_write(uv_write_t *req, int status) {
  mock_write *w = (mock_write *)req;
  void *owner = w->owner;
  tp__mock_write_cb done = w->done;
  size_t len = w->len;
  free(w->data);
  free(w);
  done(owner, len, status);
}

int tp__mock_write(uv_tcp_t *tcp, char *data, size_t len, void *owner, tp__mock_write_cb done) {
  mock_write *w = malloc(sizeof(*w));
  if (!w) {
    free(data);
    return TP_ENOMEM;
  }
  w->owner = owner;
  w->done = done;
  w->data = data;
  w->len = len;
  uv_buf_t ub = uv_buf_init(data, (unsigned)len);
  if (uv_write(&w->req, (uv_stream_t *)tcp, &ub, 1, on_write) != 0) {
    free(data);
    free(w);
    return TP_EIO;
  }
  return 0;
}

int tp__mock_bound_port(uv_tcp_t *t) {
  struct sockaddr_storage ss;
  int sl = sizeof(ss);
  if (uv_tcp_getsockname(t, (struct sockaddr *)&ss, &sl) != 0) return 0;
  return ss.ss_family == AF_INET6 ? ntohs(((struct sockaddr_in6 *)&ss)->sin6_port)
                                  : ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

void tp__mock_set_port(struct sockaddr_storage *addr, int port) {
  if (addr->ss_family == AF_INET6)
    ((struct sockaddr_in6 *)addr)->sin6_port = htons((uint16_t)port);
  else
    ((struct sockaddr_in *)addr)->sin_port = htons((uint16_t)port);
}

/* Tests for the HTTP transport (lib/transport/tp_http.c): the re-send rule
 * (tp_http_should_resend: a request is sent again, once, only when a reused
 * connection was lost before any byte of the answer came), and the arrival
 * time of body bytes read while the client was busy, against a one-shot
 * server on a loopback socket.  The other transfers are exercised over
 * loopback by the integration tests (test_http_reconnect.py). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <curl/curl.h>
#include <uv.h>

#include "tp_test.h"
#include "transport/tp_http.h"
#include "util/tp_common.h"
#include "util/tp_stamp.h"

typedef struct resend_case {
  const char *name;
  bool reused, got_bytes;
  uint32_t resends;
  int code;
  bool want;
} resend_case;

static const resend_case cases[] = {
    {"reused, nothing back, poll error (SEND_ERROR): re-sent", true, false, 0, CURLE_SEND_ERROR, true},
    {"reused, nothing back, reset on read (RECV_ERROR): re-sent", true, false, 0, CURLE_RECV_ERROR, true},
    {"reused, closed with nothing (GOT_NOTHING): re-sent", true, false, 0, CURLE_GOT_NOTHING, true},
    {"fresh connection lost: a failure", false, false, 0, CURLE_SEND_ERROR, false},
    {"fresh connection, empty answer: a failure", false, false, 0, CURLE_GOT_NOTHING, false},
    {"reused, a header came before the loss: a failure", true, true, 0, CURLE_RECV_ERROR, false},
    {"reused, body cut short (PARTIAL_FILE): a failure", true, true, 0, CURLE_PARTIAL_FILE, false},
    {"reused again (libcurl's retry took another kept-alive connection): re-sent", true, false, 1, CURLE_SEND_ERROR,
     true},
    {"reused, libcurl retried twice and lost again: re-sent", true, false, 2, CURLE_GOT_NOTHING, true},
    {"reused, re-sent 3 times already: a failure (the bound)", true, false, 3, CURLE_SEND_ERROR, false},
    {"re-sent once, lost again on its fresh connection: a failure", false, false, 1, CURLE_RECV_ERROR, false},
    {"reused, timeout: not a lost connection", true, false, 0, CURLE_OPERATION_TIMEDOUT, false},
    {"reused, cancelled by a callback: not re-sent", true, false, 0, CURLE_ABORTED_BY_CALLBACK, false},
    {"reused, write callback refused: not re-sent", true, false, 0, CURLE_WRITE_ERROR, false},
    {"reused, HTTP/2 stream error: not this rule's", true, false, 0, CURLE_HTTP2_STREAM, false},
    {"reused, TLS error: a failure", true, false, 0, CURLE_SSL_CONNECT_ERROR, false},
    {"reused, success: nothing to re-send", true, false, 0, CURLE_OK, false},
};

/* ---- arrival times of bytes read late ----------------------------------- */

/* The server thread answers one request with a body in two writes: the
 * first at once, the second when the client says it has the first (a byte
 * on `go`), timed just before the write.  The client then stays busy for
 * BUSY_MS before its loop reads the second part: its arrival time must be
 * the kernel's receive stamp, within a few ms of second_ns, not the clock
 * after the pause. */
#define BUSY_MS 40

typedef struct late_srv {
  int lfd;
  int go[2];
  uint64_t second_ns;
} late_srv;

static void *late_server(void *arg) {
  late_srv *s = arg;
  int fd = accept(s->lfd, NULL, NULL);
  if (fd < 0) return NULL;
  char req[4096];
  size_t got = 0;
  while (got < sizeof(req) - 1) {
    ssize_t n = read(fd, req + got, sizeof(req) - 1 - got);
    if (n <= 0) break;
    got += (size_t)n;
    req[got] = 0;
    if (strstr(req, "\r\n\r\n")) break;
  }
  static const char head[] = "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\nContent-Length: 10\r\n\r\nfirst";
  if (write(fd, head, sizeof(head) - 1) < 0) goto out;
  char b;
  if (read(s->go[0], &b, 1) != 1) goto out;
  s->second_ns = tp_now_ns();
  if (write(fd, "later", 5) < 0) goto out;
  usleep(200 * 1000); /* let the client read before the close */
out:
  close(fd);
  return NULL;
}

typedef struct late_cli {
  late_srv *srv;
  int parts;
  uint64_t second_arrival_ns;
  bool done, ok;
} late_cli;

static int late_body(tp_http_req *r, const uint8_t *data, size_t len, uint64_t arrival_ns, void *ud) {
  late_cli *c = ud;
  (void)r, (void)data;
  if (c->parts++ == 0) {
    if (write(c->srv->go[1], "g", 1) != 1) return 0;
    usleep(BUSY_MS * 1000); /* the second part arrives meanwhile */
  } else {
    c->second_arrival_ns = arrival_ns;
  }
  return 0;
}

static void late_done(tp_http_req *r, const tp_http_result *res, void *ud) {
  late_cli *c = ud;
  (void)r;
  c->done = true;
  c->ok = res->err_class == TP_ERRCLASS_NONE && res->status == 200;
}

static void test_late_read(void) {
  late_srv srv = {.lfd = socket(AF_INET, SOCK_STREAM, 0)};
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof(a);
  if (srv.lfd < 0 || bind(srv.lfd, (struct sockaddr *)&a, sizeof(a)) || listen(srv.lfd, 4) ||
      getsockname(srv.lfd, (struct sockaddr *)&a, &alen) || pipe(srv.go)) {
    CHECK(0, "a loopback listening socket");
    return;
  }
  pthread_t th;
  if (pthread_create(&th, NULL, late_server, &srv)) {
    CHECK(0, "the server thread starts");
    return;
  }
  uv_loop_t loop;
  memset(&loop, 0, sizeof(loop));
  uv_loop_init(&loop);
  (void)tp_stamp_install(&loop);
  char url[64], err[256] = "";
  snprintf(url, sizeof(url), "http://127.0.0.1:%d", ntohs(a.sin_port));
  tp_http_opts o = {.base_url = url, .http1_only = true};
  tp_http *h = NULL;
  late_cli c = {.srv = &srv};
  if (tp_http_new(&h, &loop, &o, err, sizeof(err))) {
    CHECK(0, "tp_http_new (%s)", err);
  } else {
    tp_http_req_opts ro = {.path = "/late", .timeout_ns = 10ull * 1000000000};
    tp_http_req_cbs cbs = {NULL, late_body, late_done};
    CHECK(tp_http_request(h, &ro, &cbs, &c, NULL) == 0, "the request starts");
    while (!c.done && uv_run(&loop, UV_RUN_ONCE)) {
    }
    CHECK(c.ok, "the answer came whole");
    /* The server writes the second part only once the first was read
     * alone, so there are always two. */
    CHECK_INT(c.parts, 2, "the body came in two parts");
    if (c.parts == 2) {
      double ms = ((double)c.second_arrival_ns - (double)srv.second_ns) / 1e6;
      CHECK(c.second_arrival_ns >= srv.second_ns, "bytes read late are not dated before they were written (%+.3f ms)",
            ms);
      CHECK(ms < BUSY_MS / 2, "bytes read %d ms late are dated when they arrived, not when read (%+.3f ms)", BUSY_MS,
            ms);
    }
    tp_http_close(h);
  }
  tp_stamp_uninstall(&loop);
  uv_run(&loop, UV_RUN_DEFAULT);
  uv_loop_close(&loop);
  pthread_join(th, NULL);
  close(srv.lfd);
  close(srv.go[0]);
  close(srv.go[1]);
}

int main(void) {
  test_late_read();
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const resend_case *c = &cases[i];
    bool got = tp_http_should_resend(c->reused, c->got_bytes, c->resends, c->code);
    CHECK(got == c->want, "%s", c->name);
  }
  return tp_test_done();
}

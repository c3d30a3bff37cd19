/* The live metrics endpoint (lib/run/tp_live_serve.c): the request head's
 * parser on a table, then the server on a real loop over loopback, with a
 * blocking client on a thread of its own: a scrape and its headers, HEAD,
 * 404, 405 and 400, a request split over two writes, a client that resets
 * its connection right after its request, clients that send nothing and
 * hold every slot (a scrape waits for their timeout and is then answered),
 * and scrapes that allocate nothing once the buffers have grown. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "run/tp_live_serve.h"
#include "tp_alloc_count.h"
#include "tp_test.h"

static void test_parse(void) {
  static const struct {
    const char *in;
    tp_live_req want;
    bool head;
  } cases[] = {
      {"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", TP_LIVE_REQ_METRICS, false},
      {"GET /metrics HTTP/1.0\r\n\r\n", TP_LIVE_REQ_METRICS, false},
      {"GET /metrics?name[]=x HTTP/1.1\r\n\r\n", TP_LIVE_REQ_METRICS, false},
      {"HEAD /metrics HTTP/1.1\r\n\r\n", TP_LIVE_REQ_METRICS, true},
      {"GET /metrics HTTP/1.1\n\n", TP_LIVE_REQ_METRICS, false},
      {"GET /metrics HTTP/1.1\r\nHost: x\r\n", TP_LIVE_REQ_MORE, false},
      {"GET /metrics HTTP/1.1\r\n", TP_LIVE_REQ_MORE, false},
      {"", TP_LIVE_REQ_MORE, false},
      {"GET / HTTP/1.1\r\n\r\n", TP_LIVE_REQ_NOT_FOUND, false},
      {"HEAD /other HTTP/1.1\r\n\r\n", TP_LIVE_REQ_NOT_FOUND, true},
      {"GET /metricsx HTTP/1.1\r\n\r\n", TP_LIVE_REQ_NOT_FOUND, false},
      {"GET /metric HTTP/1.1\r\n\r\n", TP_LIVE_REQ_NOT_FOUND, false},
      {"POST /metrics HTTP/1.1\r\n\r\n", TP_LIVE_REQ_BAD_METHOD, false},
      {"get /metrics HTTP/1.1\r\n\r\n", TP_LIVE_REQ_BAD, false},
      {"GET http://h/metrics HTTP/1.1\r\n\r\n", TP_LIVE_REQ_BAD, false},
      {"HEAD metrics HTTP/1.1\r\n\r\n", TP_LIVE_REQ_BAD, false},
      {"GET /metrics HTTP/2.0\r\n\r\n", TP_LIVE_REQ_BAD, false},
      {"GET /metrics\r\n\r\n", TP_LIVE_REQ_BAD, false},
      {"GET  /metrics HTTP/1.1\r\n\r\n", TP_LIVE_REQ_BAD, false},
      {"GET /metrics HTTP/1.1 x\r\n\r\n", TP_LIVE_REQ_BAD, false},
      {"\r\n\r\n", TP_LIVE_REQ_BAD, false},
  };
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    bool head = !cases[i].head;
    tp_live_req got = tp_live_parse_request(cases[i].in, strlen(cases[i].in), &head);
    CHECK(got == cases[i].want && head == cases[i].head, "parse %zu: %d (want %d), head %d", i, (int)got,
          (int)cases[i].want, (int)head);
  }
}

/* ------------------------------------------------------------------------ */

static int port;
static unsigned renders;
static uv_async_t done_async;

static int render(void *ctx, tp_buf *out) {
  (void)ctx;
  renders++;
  /* A fixed size, so a reused buffer stops growing. */
  return tp_buf_printf(out, "# TYPE tokperf_test_total counter\ntokperf_test_total %08u\n", renders);
}

static int dial(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  a.sin_port = htons((uint16_t)port);
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  struct timeval tv = {(time_t)(20 * tp_test_time_scale()), 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  if (connect(fd, (struct sockaddr *)&a, sizeof(a))) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Reads until the server closes; returns the length (-1: an error or a
 * timeout). */
static ssize_t read_all(int fd, char *buf, size_t cap) {
  size_t n = 0;
  for (;;) {
    ssize_t k = recv(fd, buf + n, cap - 1 - n, 0);
    if (k < 0) return -1;
    if (k == 0) break;
    n += (size_t)k;
    if (n == cap - 1) break;
  }
  buf[n] = 0;
  return (ssize_t)n;
}

static ssize_t exchange(const char *req, char *buf, size_t cap) {
  int fd = dial();
  if (fd < 0) return -1;
  ssize_t n = send(fd, req, strlen(req), 0) == (ssize_t)strlen(req) ? read_all(fd, buf, cap) : -1;
  close(fd);
  return n;
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void *client(void *arg) {
  (void)arg;
  char buf[8192];
  ssize_t n = exchange("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", buf, sizeof(buf));
  const char *body = n > 0 ? strstr(buf, "\r\n\r\n") : NULL;
  CHECK(n > 0 && strncmp(buf, "HTTP/1.1 200 OK\r\n", 17) == 0, "GET /metrics: 200");
  CHECK(n > 0 && strstr(buf, "Content-Type: text/plain; version=0.0.4; charset=utf-8\r\n"),
        "the text format's content type");
  CHECK(n > 0 && strstr(buf, "Connection: close\r\n"), "Connection: close");
  size_t body_len = body ? strlen(body + 4) : 0;
  char want[64];
  snprintf(want, sizeof(want), "Content-Length: %zu\r\n", body_len);
  CHECK(body && strstr(buf, want) && strstr(body, "tokperf_test_total 00000001\n"),
        "the body, its length said: %s", body ? body + 4 : "(none)");

  n = exchange("HEAD /metrics HTTP/1.1\r\n\r\n", buf, sizeof(buf));
  body = n > 0 ? strstr(buf, "\r\n\r\n") : NULL;
  CHECK(body && strncmp(buf, "HTTP/1.1 200 OK", 15) == 0 && strstr(buf, want) && body[4] == 0,
        "HEAD: the headers of GET, no body");
  n = exchange("GET /other HTTP/1.1\r\n\r\n", buf, sizeof(buf));
  CHECK(n > 0 && strncmp(buf, "HTTP/1.1 404 ", 13) == 0, "another path: 404");
  n = exchange("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", buf, sizeof(buf));
  CHECK(n > 0 && strncmp(buf, "HTTP/1.1 405 ", 13) == 0 && strstr(buf, "Allow: GET, HEAD\r\n"),
        "POST: 405 with Allow");
  n = exchange("hello\r\n\r\n", buf, sizeof(buf));
  CHECK(n > 0 && strncmp(buf, "HTTP/1.1 400 ", 13) == 0, "not HTTP: 400");

  /* A head longer than the slot's buffer. */
  {
    int fd = dial();
    char big[TP_LIVE_REQ_MAX + 100];
    memset(big, 'a', sizeof(big));
    memcpy(big, "GET /metrics HTTP/1.1\r\nX: ", 26);
    send(fd, big, sizeof(big), MSG_NOSIGNAL);
    n = read_all(fd, buf, sizeof(buf));
    CHECK(n > 0 && strncmp(buf, "HTTP/1.1 400 ", 13) == 0, "a head past %d bytes: 400", TP_LIVE_REQ_MAX);
    close(fd);
  }

  /* A request in two writes. */
  {
    int fd = dial();
    send(fd, "GET /metr", 9, 0);
    usleep(50000);
    send(fd, "ics HTTP/1.1\r\n\r\n", 16, 0);
    n = read_all(fd, buf, sizeof(buf));
    CHECK(n > 0 && strncmp(buf, "HTTP/1.1 200 OK", 15) == 0, "a request in two writes");
    close(fd);
  }

  /* A client that resets its connection right after its request. */
  for (int i = 0; i < 3; i++) {
    int fd = dial();
    send(fd, "GET /metrics HTTP/1.1\r\n\r\n", 25, 0);
    struct linger lg = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
    close(fd);
  }
  n = exchange("GET /metrics HTTP/1.1\r\n\r\n", buf, sizeof(buf));
  CHECK(n > 0 && strncmp(buf, "HTTP/1.1 200 OK", 15) == 0, "a scrape after three clients vanished");

  /* No allocation per scrape, once the buffers have grown. */
  unsigned long before = n_allocs;
  int ok = 0;
  for (int i = 0; i < 10; i++) {
    n = exchange("GET /metrics HTTP/1.1\r\n\r\n", buf, sizeof(buf));
    ok += n > 0 && strncmp(buf, "HTTP/1.1 200 OK", 15) == 0;
  }
  CHECK(ok == 10, "ten more scrapes");
  if (TP_COUNT_ALLOCS) CHECK(n_allocs == before, "and they allocated nothing (%lu)", n_allocs - before);

  /* Clients that send nothing hold every slot: a scrape waits in the
   * backlog until their timeout frees one, then it is answered. */
  int idle[TP_LIVE_SLOTS];
  for (int i = 0; i < TP_LIVE_SLOTS; i++) idle[i] = dial();
  usleep(100000);
  double t0 = now_s();
  n = exchange("GET /metrics HTTP/1.1\r\n\r\n", buf, sizeof(buf));
  double waited = now_s() - t0;
  CHECK(n > 0 && strncmp(buf, "HTTP/1.1 200 OK", 15) == 0, "a scrape behind %d silent clients is answered",
        TP_LIVE_SLOTS);
  CHECK(waited > TP_LIVE_CONN_TIMEOUT_MS / 1000.0 - 1.0, "once their timeout closed them (%.2f s)", waited);
  int closed = 0;
  for (int i = 0; i < TP_LIVE_SLOTS; i++) {
    char c;
    closed += idle[i] >= 0 && recv(idle[i], &c, 1, 0) == 0;
    close(idle[i]);
  }
  CHECK(closed == TP_LIVE_SLOTS, "the silent clients were closed (%d)", closed);
  uv_async_send(&done_async);
  return NULL;
}

static void on_done(uv_async_t *a) {
  uv_close((uv_handle_t *)a, NULL);
}

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {0};
  a.sin_family = AF_INET;
  inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
  socklen_t len = sizeof(a);
  if (bind(fd, (struct sockaddr *)&a, sizeof(a)) || getsockname(fd, (struct sockaddr *)&a, &len)) return -1;
  close(fd);
  return ntohs(a.sin_port);
}

static void test_server(void) {
  uv_loop_t loop;
  uv_loop_init(&loop);
  char err[300];
  tp_live_server *s = NULL;
  CHECK_INT(tp_live_server_start(&s, &loop, "localhost", 9400, render, NULL, err, sizeof(err)), TP_EINVAL,
            "a host name is refused");
  CHECK(strstr(err, "--metrics-host 'localhost'"), "and named: %s", err);
  CHECK_INT(tp_live_server_start(&s, &loop, "127.0.0.1", 0, render, NULL, err, sizeof(err)), TP_EINVAL,
            "port 0 is refused");
  port = free_port();
  CHECK(tp_live_server_start(&s, &loop, "127.0.0.1", (uint32_t)port, render, NULL, err, sizeof(err)) == 0,
        "listening on %d: %s", port, s ? "" : err);
  tp_live_server *twice = NULL;
  CHECK_INT(tp_live_server_start(&twice, &loop, "127.0.0.1", (uint32_t)port, render, NULL, err, sizeof(err)),
            TP_EIO, "a port in use is refused");
  CHECK(strstr(err, "cannot listen on 127.0.0.1:") && strstr(err, "choose another port"), "and said: %s",
        err);
  uv_async_init(&loop, &done_async, on_done);
  pthread_t th;
  pthread_create(&th, NULL, client, NULL);
  uv_run(&loop, UV_RUN_DEFAULT);
  pthread_join(th, NULL);
  CHECK(tp_live_server_scrapes(s) >= 16, "scrapes counted (%llu)",
        (unsigned long long)tp_live_server_scrapes(s));
  tp_live_server_close(s);
  uv_run(&loop, UV_RUN_DEFAULT);
  CHECK_INT(uv_loop_close(&loop), 0, "every handle closed and the server freed");
}

int main(void) {
  test_parse();
  test_server();
  return tp_test_done();
}

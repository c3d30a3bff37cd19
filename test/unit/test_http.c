/* Tests for the HTTP transport (lib/transport/tp_http.c): the re-send rule
 * (tp_http_should_resend: a request is sent again, once, only when a reused
 * connection was lost before any byte of the answer came), and the arrival
 * time of body bytes read while the client was busy (one late piece, and
 * several events of a chunked stream read in one go), against a one-shot
 * server on a loopback socket.  The other transfers are exercised over
 * loopback by the integration tests (test_http_reconnect.py). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
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

/* A listening socket on a free loopback port, and the pipe a server
 * thread waits on: the port, or -1. */
static int loopback_listener(int *lfd, int go[2]) {
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t alen = sizeof(a);
  *lfd = socket(AF_INET, SOCK_STREAM, 0);
  if (*lfd < 0 || bind(*lfd, (struct sockaddr *)&a, sizeof(a)) || listen(*lfd, 4) ||
      getsockname(*lfd, (struct sockaddr *)&a, &alen) || pipe(go))
    return -1;
  return ntohs(a.sin_port);
}

static void test_late_read(void) {
  late_srv srv = {.lfd = -1};
  int port = loopback_listener(&srv.lfd, srv.go);
  if (port < 0) {
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
  snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
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

/* ---- arrival times of several events read in one go -------------------- */

/* The server answers with a chunked event stream: N_WARM comments the
 * client reads as they come, an event, then, when the client says it has
 * it, N_LATE more, EVENT_GAP_MS apart, each timed just before and after
 * its write, while the client stays busy.  Its loop then finds all of them
 * waiting and libcurl reads them in one go: each must be dated by its own
 * arrival (on loopback the kernel stamps it inside the write), not by the
 * newest.
 *
 * Linux merges a segment into the one before it in the receive queue (the
 * merged one keeps the newer stamp, which no reader can take apart) once
 * the sender no longer holds that one for retransmission, i.e. once it was
 * acknowledged.  The comments take the connection past its quick
 * acknowledgements (up to 16 segments, each acknowledged at once) and,
 * being larger than the events, make the events smaller than a full
 * segment, which the receiver acknowledges only after a delay (about 4 ms
 * measured on loopback): the late events, 2 x EVENT_GAP_MS in all, mostly
 * stay apart.  Whether they did is read from the kernel (the client's
 * socket peeked before its loop reads it), and an event the kernel merged
 * with the next is held only to "not before it was written". */
#define N_LATE 3
#define EVENT_GAP_MS 1
#define N_WARM 24
#define WARM_BYTES 512
/* The conversion of a kernel stamp to the monotonic clock is good to a
 * few us (tp_stamp_from_realtime); the kernel stamps an event on loopback
 * inside its write. */
#define CONVERT_SLACK_NS 50000

typedef struct sse_srv {
  int lfd;
  int port;
  size_t ev_len[N_LATE]; /* the bytes of each late event's chunk */
  int go[2];
  uint64_t sent_ns[N_LATE], wrote_ns[N_LATE];
} sse_srv;

static bool write_all(int fd, const char *p, size_t n) {
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w <= 0) return false;
    p += w;
    n -= (size_t)w;
  }
  return true;
}

static void *sse_server(void *arg) {
  sse_srv *s = arg;
  int fd = accept(s->lfd, NULL, NULL);
  if (fd < 0) return NULL;
  int one = 1;
  /* Each event its own segment, as a streaming server sends it. */
  (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  char req[4096];
  size_t got = 0;
  while (got < sizeof(req) - 1) {
    ssize_t n = read(fd, req + got, sizeof(req) - 1 - got);
    if (n <= 0) break;
    got += (size_t)n;
    req[got] = 0;
    if (strstr(req, "\r\n\r\n")) break;
  }
  static const char head[] =
      "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n";
  if (!write_all(fd, head, sizeof(head) - 1)) goto out;
  char warm[WARM_BYTES + 16];
  int hn = snprintf(warm, sizeof(warm), "%x\r\n", WARM_BYTES);
  memcpy(warm + hn, ": w", 3);
  memset(warm + hn + 3, 'w', WARM_BYTES - 5);
  memcpy(warm + hn + WARM_BYTES - 2, "\n\n\r\n", 4);
  size_t wn = (size_t)hn + WARM_BYTES + 2;
  for (int i = 0; i < N_WARM; i++) {
    usleep(1000);
    if (!write_all(fd, warm, wn)) goto out;
  }
  if (!write_all(fd, "d\r\ndata: ev0\r\n\r\n\r\n", 18)) goto out;
  char b;
  if (read(s->go[0], &b, 1) != 1) goto out;
  for (int i = 0; i < N_LATE; i++) {
    if (i) usleep(EVENT_GAP_MS * 1000);
    /* Of different lengths: two segments of one length make the receiver
     * take that as a full segment's, and acknowledge every second one. */
    char ev[64];
    int n =
        snprintf(ev, sizeof(ev), "%x\r\ndata: ev%d%*s\r\n\r\n\r\n", 13 + 7 * (i + 1), i + 1, 7 * (i + 1), "");
    s->ev_len[i] = (size_t)n;
    s->sent_ns[i] = tp_now_ns();
    if (!write_all(fd, ev, (size_t)n)) goto out;
    s->wrote_ns[i] = tp_now_ns();
  }
  if (!write_all(fd, "0\r\n\r\n", 5)) goto out;
  usleep(200 * 1000); /* let the client read before the close */
out:
  close(fd);
  return NULL;
}

typedef struct sse_cli {
  sse_srv *srv;
  int parts, warm;
  bool looked;        /* the kernel's stamps were read */
  bool apart[N_LATE]; /* late event i's last byte has a stamp of its own (not the next event's) */
  uint64_t at[1 + N_LATE];
  char text[1 + N_LATE][16];
  bool done, ok;
} sse_cli;

/* The stamp of the segment holding byte len-1 of fd's receive queue. */
static bool peek_stamp(int fd, size_t len, struct timespec *ts) {
  static char scratch[4096];
  union {
    char buf[CMSG_SPACE(sizeof(struct timespec))];
    struct cmsghdr align;
  } ctl;
  struct iovec iov = {.iov_base = scratch, .iov_len = len};
  struct msghdr m = {
      .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl.buf)};
  if (recvmsg(fd, &m, MSG_PEEK | MSG_TRUNC | MSG_DONTWAIT) != (ssize_t)len) return false;
  for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm; cm = CMSG_NXTHDR(&m, cm))
    if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_TIMESTAMPNS) {
      memcpy(ts, CMSG_DATA(cm), sizeof(*ts));
      return true;
    }
  return false;
}

/* Reads, from the client's socket (the one connected to the server's
 * port), whether the kernel kept each late event apart from the next. */
static void kernel_apart(sse_cli *c) {
  for (int fd = 3; fd < 1024; fd++) {
    struct sockaddr_in p;
    socklen_t pl = sizeof(p);
    if (getpeername(fd, (struct sockaddr *)&p, &pl) != 0 || p.sin_family != AF_INET ||
        ntohs(p.sin_port) != c->srv->port)
      continue;
    struct timespec ts[N_LATE];
    size_t end = 0;
    for (int i = 0; i < N_LATE; i++) {
      end += c->srv->ev_len[i];
      if (!peek_stamp(fd, end, &ts[i])) return;
    }
    for (int i = 0; i < N_LATE; i++)
      c->apart[i] = i == N_LATE - 1 || ts[i].tv_sec != ts[i + 1].tv_sec || ts[i].tv_nsec != ts[i + 1].tv_nsec;
    c->looked = true;
    return;
  }
}

static int sse_body(tp_http_req *r, const uint8_t *data, size_t len, uint64_t arrival_ns, void *ud) {
  sse_cli *c = ud;
  (void)r;
  if (len < 8 || memcmp(data, "data: ev", 8) != 0) {
    c->warm++; /* a comment, or a part of one */
    return 0;
  }
  if (c->parts <= N_LATE) {
    c->at[c->parts] = arrival_ns;
    snprintf(c->text[c->parts], sizeof(c->text[0]), "%.*s", (int)(len > 9 ? 9 : len), (const char *)data);
  }
  if (c->parts++ == 0) {
    if (write(c->srv->go[1], "g", 1) != 1) return 0;
    /* Busy until every later event has arrived. */
    usleep((BUSY_MS + N_LATE * EVENT_GAP_MS) * 1000);
    kernel_apart(c);
  }
  return 0;
}

static void sse_done(tp_http_req *r, const tp_http_result *res, void *ud) {
  sse_cli *c = ud;
  (void)r;
  c->done = true;
  c->ok = res->err_class == TP_ERRCLASS_NONE && res->status == 200;
}

static void test_late_events(void) {
  sse_srv srv = {.lfd = -1};
  int port = loopback_listener(&srv.lfd, srv.go);
  if (port < 0) {
    CHECK(0, "a loopback listening socket");
    return;
  }
  srv.port = port;
  pthread_t th;
  if (pthread_create(&th, NULL, sse_server, &srv)) {
    CHECK(0, "the server thread starts");
    return;
  }
  uv_loop_t loop;
  memset(&loop, 0, sizeof(loop));
  uv_loop_init(&loop);
  (void)tp_stamp_install(&loop);
  char url[64], err[256] = "";
  snprintf(url, sizeof(url), "http://127.0.0.1:%d", port);
  tp_http_opts o = {.base_url = url, .http1_only = true};
  tp_http *h = NULL;
  sse_cli c = {.srv = &srv};
  if (tp_http_new(&h, &loop, &o, err, sizeof(err))) {
    CHECK(0, "tp_http_new (%s)", err);
  } else {
    tp_http_req_opts ro = {.path = "/events", .timeout_ns = 10ull * 1000000000};
    tp_http_req_cbs cbs = {NULL, sse_body, sse_done};
    CHECK(tp_http_request(h, &ro, &cbs, &c, NULL) == 0, "the events request starts");
    while (!c.done && uv_run(&loop, UV_RUN_ONCE)) {
    }
    CHECK(c.ok, "the event stream came whole");
    /* libcurl hands each chunk of a chunked body over on its own. */
    CHECK(c.warm >= N_WARM && c.parts == 1 + N_LATE,
          "one body piece per event (chunk): %d comment pieces, %d events", c.warm, c.parts);
    if (c.parts == 1 + N_LATE) {
      for (int i = 0; i < N_LATE; i++) {
        char want[16];
        snprintf(want, sizeof(want), "data: ev%d", i + 1);
        want[9] = 0;
        double ms = ((double)c.at[1 + i] - (double)srv.sent_ns[i]) / 1e6;
        CHECK(strcmp(c.text[1 + i], want) == 0 && c.at[1 + i] + CONVERT_SLACK_NS >= srv.sent_ns[i],
              "event %d read late is not dated before it was written (%+.3f ms)", i + 1, ms);
        /* Read at once, the events would all carry the last one's time:
         * the first dated after the next one was written. */
        double after = ((double)c.at[1 + i] - (double)srv.wrote_ns[i]) / 1e6;
        if (!c.looked || !c.apart[i]) {
          printf("ok %d - event %d of %d # SKIP the kernel %s\n", ++tp_test_n_, i + 1, N_LATE,
                 c.looked ? "merged it with the next (one stamp for both)" : "stamps could not be read");
          continue;
        }
        CHECK(c.at[1 + i] <= srv.wrote_ns[i] + CONVERT_SLACK_NS &&
                  (i == N_LATE - 1 || c.at[1 + i] < srv.sent_ns[i + 1]),
              "event %d of %d read in one go is dated when it arrived (%+.3f ms after its write began, %+.3f "
              "after "
              "it ended)",
              i + 1, N_LATE, ms, after);
      }
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
  test_late_events();
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const resend_case *c = &cases[i];
    bool got = tp_http_should_resend(c->reused, c->got_bytes, c->resends, c->code);
    CHECK(got == c->want, "%s", c->name);
  }
  return tp_test_done();
}

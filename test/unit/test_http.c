/* Tests for the HTTP transport's re-send rule (lib/transport/tp_http.c,
 * tp_http_should_resend): a request is sent again, once, only when a reused
 * connection was lost before any byte of the answer came.  The transfers
 * themselves are exercised over loopback by the integration tests
 * (test_http_reconnect.py). */
#include <stdbool.h>
#include <stdint.h>

#include <curl/curl.h>

#include "tp_test.h"
#include "transport/tp_http.h"

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
    {"reused, already re-sent once: a failure", true, false, 1, CURLE_SEND_ERROR, false},
    {"reused, libcurl retried and lost again: a failure", true, false, 2, CURLE_GOT_NOTHING, false},
    {"reused, timeout: not a lost connection", true, false, 0, CURLE_OPERATION_TIMEDOUT, false},
    {"reused, cancelled by a callback: not re-sent", true, false, 0, CURLE_ABORTED_BY_CALLBACK, false},
    {"reused, write callback refused: not re-sent", true, false, 0, CURLE_WRITE_ERROR, false},
    {"reused, HTTP/2 stream error: not this rule's", true, false, 0, CURLE_HTTP2_STREAM, false},
    {"reused, TLS error: a failure", true, false, 0, CURLE_SSL_CONNECT_ERROR, false},
    {"reused, success: nothing to re-send", true, false, 0, CURLE_OK, false},
};

int main(void) {
  for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
    const resend_case *c = &cases[i];
    bool got = tp_http_should_resend(c->reused, c->got_bytes, c->resends, c->code);
    CHECK(got == c->want, "%s", c->name);
  }
  return tp_test_done();
}

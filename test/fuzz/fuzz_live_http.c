/* Fuzz target: the live metrics endpoint's reading of a request head
 * (tp_live_parse_request, lib/run/tp_live_serve.c).  Checked, beyond "no
 * crash":
 * - the answer is one of the five, and head_only is set exactly for a
 *   HEAD answered 200 or 404 (an answer to HEAD has no body);
 * - a complete head keeps its answer when more bytes follow it (the
 *   server answers on the first read that completes it), and every prefix
 *   shorter than the head's end asks for more;
 * - /metrics is answered only to a request line that starts with GET or
 *   HEAD and a space.
 * Any difference abort()s. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "run/tp_live_serve.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size > 2 * TP_LIVE_REQ_MAX) return 0;
  const char *buf = (const char *)data;
  bool head = true;
  tp_live_req r = tp_live_parse_request(buf, size, &head);
  if ((unsigned)r > TP_LIVE_REQ_BAD) abort();
  if (head && r != TP_LIVE_REQ_METRICS && r != TP_LIVE_REQ_NOT_FOUND) abort();
  if (!head && (r == TP_LIVE_REQ_METRICS || r == TP_LIVE_REQ_NOT_FOUND) && size >= 5 && !memcmp(buf, "HEAD ", 5))
    abort();
  if (r == TP_LIVE_REQ_METRICS && !(size >= 4 && !memcmp(buf, "GET ", 4)) &&
      !(size >= 5 && !memcmp(buf, "HEAD ", 5)))
    abort();
  if (head && memcmp(buf, "HEAD ", 5)) abort();
  /* The shortest prefix that is complete, and the answer there. */
  size_t k = 0;
  tp_live_req first = TP_LIVE_REQ_MORE;
  bool first_head = false;
  for (k = 0; k <= size; k++) {
    first = tp_live_parse_request(buf, k, &first_head);
    if (first != TP_LIVE_REQ_MORE) break;
  }
  if (r == TP_LIVE_REQ_MORE && k <= size) abort();
  if (r != TP_LIVE_REQ_MORE && (first != r || first_head != head)) abort();
  return 0;
}

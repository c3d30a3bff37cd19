/* Over-saturation, seen while a level runs (docs/metrics.md,
 * "Saturation"): under an open loop, a server that cannot keep up lets the
 * requests in the system (in flight, plus those due that the in-flight cap
 * holds back) grow without bound, and their time to first token with them,
 * since each waits behind more.  A closed loop cannot show it: its count is
 * fixed, its rate follows the server.
 *
 * Fed one sample a second (the load now) and each finished request's TTFT,
 * it looks at the last TP_SAT_WINDOW seconds: the load rising (a least
 * squares fit that explains most of the variation, a rise of at least a
 * quarter of the mean and of 4 requests) together with the TTFT of the
 * requests that finished in each second rising (by at least a quarter of
 * its mean), or the held-back requests piling up while the load rises.
 * Two samples in a row must agree; the first of them dates the detection.
 * Pure: no clock, no I/O. */
#ifndef TP_SATURATION_H
#define TP_SATURATION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Seconds looked back (samples + 1 are needed). */
#define TP_SAT_WINDOW 5

typedef struct tp_saturation tp_saturation;

tp_saturation *tp_saturation_new(void);
void tp_saturation_free(tp_saturation *s);
/* A request finished; ttft_ms < 0: it had none (failed, or no text). */
void tp_saturation_done(tp_saturation *s, double ttft_ms);
/* One sample (about a second after the last): the requests in flight, and
 * those due but held back (not yet sent).  Returns true on the sample that
 * confirms the detection (once). */
bool tp_saturation_sample(tp_saturation *s, uint64_t now_ns, uint32_t in_flight, size_t held);
/* Whether it was detected; *at_ns the time of the first sample that saw it,
 * and why, in words ("requests in the system 12 -> 85 over 5 s, TTFT p50
 * 40 -> 310 ms"). */
bool tp_saturation_detected(const tp_saturation *s, uint64_t *at_ns, char *why, size_t len);

#endif

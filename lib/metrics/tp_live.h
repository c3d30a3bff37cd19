/* The client's live figures (docs/metrics.md, "Live metrics"): counters
 * and fixed-bucket histograms kept over the whole run as requests end, and
 * their rendering in the Prometheus text exposition format, version 0.0.4
 * (https://prometheus.io/docs/instrumenting/exposition_formats/), for
 * --metrics-port.
 *
 * Updating costs a few additions and a search over a dozen bucket bounds
 * per request (and per gap between text responses), on the loop's thread
 * only; nothing here allocates after tp_live_new.  The level figures of
 * the report (tp_metric.h) are computed from the records at each level's
 * end; these are the running counts a scraper samples meanwhile, and
 * they never feed the report. */
#ifndef TP_LIVE_H
#define TP_LIVE_H

#include <stdbool.h>
#include <stdint.h>

#include "record/tp_record.h"
#include "util/tp_common.h"

typedef struct tp_live tp_live;

/* The histograms, each with its fixed bucket bounds in seconds. */
typedef enum tp_live_hist {
  TP_LIVE_TTFT,     /* time to first token of each successful request (the registry's ttft) */
  TP_LIVE_ITL,      /* each gap between text responses (the registry's itl_pooled) */
  TP_LIVE_LATENCY,  /* request latency of each successful request (latency) */
  TP_LIVE_SEND_LAG, /* send lag of each sent request (send_lag) */
  TP_LIVE_LOOP_LAG, /* each dated read's lag (fidelity.loop_lag) */
  TP_LIVE_HIST_N
} tp_live_hist;

/* What the run knows at the scrape and the counters do not keep: the
 * level running, its load, and the client's own clocks. */
typedef struct tp_live_state {
  uint32_t level;                   /* the level running, from 1; 0 before the first */
  uint32_t levels;                  /* levels planned */
  int mode;                         /* tp_load_mode of the level running */
  uint32_t concurrency;             /* closed loop: the level; open loop: the in-flight cap (0 = none) */
  double rate;                      /* open loop: requests/s (0 = closed loop or a schedule) */
  uint32_t in_flight;               /* requests in flight now */
  uint32_t max_in_flight;           /* the most at once in the level running */
  double level_elapsed_s;           /* since the level running started */
  uint64_t reads;                   /* reads the loop dated so far */
  double loop_cpu_s, process_cpu_s; /* CPU time of the loop's thread and of the process */
  int verdict;                      /* fidelity verdict of the last finished level; -1 = none yet */
} tp_live_state;

/* NULL when out of memory. */
tp_live *tp_live_new(void);
void tp_live_free(tp_live *l);

/* A request was handed to the transport. */
void tp_live_sent(tp_live *l);
/* A request ended (succeeded or failed, sent or not): counted by its
 * class, and its times observed (its response times must still be in the
 * record). */
void tp_live_done(tp_live *l, const tp_record *rec);
/* A request's token counts are final (-1 = not counted: left out). */
void tp_live_tokens(tp_live *l, const tp_record *rec);
/* A read the loop dated, lag_ns after its bytes arrived. */
void tp_live_read_lag(tp_live *l, uint64_t lag_ns);
/* One value into one histogram, in seconds (tests, and the calls above). */
void tp_live_observe(tp_live *l, tp_live_hist h, double seconds);

/* Requests ended so far: succeeded, and failed (every class). */
uint64_t tp_live_completed(const tp_live *l);
uint64_t tp_live_failed(const tp_live *l);

/* Appends the exposition to out (reset first by the caller): every family
 * with its HELP and TYPE lines, samples in a fixed order.  Allocates only
 * when out must grow (a reused buffer stops growing after the first
 * scrape).  Returns 0 or TP_ENOMEM. */
int tp_live_render(const tp_live *l, const tp_live_state *st, tp_buf *out);

#endif

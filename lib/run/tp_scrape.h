/* Prometheus scraping during a run: a GET of the metrics URL every interval
 * on the run's loop, parsed with tp_prom, summarised per level into the
 * figures people watch next to the client's (GPU use, KV cache, queues,
 * prefix-cache hits).  A failed scrape is counted, never fatal. */
#ifndef TP_SCRAPE_H
#define TP_SCRAPE_H

#include <uv.h>

#include "util/tp_common.h"
#include "tokperf/tokperf.h"

typedef struct tp_scraper tp_scraper;

/* Returns 0, or TP_EINVAL / TP_ENOMEM with a message in err. */
int tp_scraper_new(tp_scraper **out, uv_loop_t *loop, const char *url, uint64_t interval_ms,
                   const tp_config *cfg, char *err, size_t errlen);
/* Starts a level: clears the summary and scrapes at once, then every
 * interval. */
void tp_scraper_level_start(tp_scraper *s);
/* Ends the level: stops scraping and writes the summary into lv (the
 * metric array stays owned by the scraper until the next level starts, so
 * the caller copies it). */
void tp_scraper_level_end(tp_scraper *s, tp_level_result *lv, tp_server_metric **owned, size_t *n);
/* Ends the level of a second scraper (--gpu-metrics-url): its summary is
 * appended to lv's (*owned, from tp_scraper_level_end, is grown), its
 * scrapes and failures added. */
void tp_scraper_level_end_more(tp_scraper *s, tp_level_result *lv, tp_server_metric **owned);
/* The level's samples of sc[0..n_sc) (NULL entries skipped, at most two)
 * as series, times in seconds from t0_ns to each answer's arrival.
 * *out is one malloc'd block.  Returns 0 or TP_ENOMEM. */
int tp_scraper_series(tp_scraper *const *sc, size_t n_sc, uint64_t t0_ns, tp_server_series **out,
                      size_t *n_out);
/* True while a scrape is on the wire (the run waits for it at level end). */
bool tp_scraper_busy(const tp_scraper *s);
void tp_scraper_free(tp_scraper *s);

#endif

/* The smallest complete use of the library: start the built-in mock,
 * sweep two concurrency levels against it, and print the time to first
 * token of each level.  Uses only the public header. */
#include <stdio.h>

#include "tokperf/tokperf.h"

int main(void) {
  static const uint32_t levels[] = {1, 8};
  char err[512];
  /* The mock runs on threads of its own, on free loopback ports. */
  tp_mock_config mc;
  tp_mock_config_default(&mc);
  mc.grpc_port = 0;
  mc.http_port = -1;
  mc.quiet = true;
  tp_mock *mock;
  if (tp_mock_start(&mock, &mc, err, sizeof(err))) {
    fprintf(stderr, "mock_sweep: %s\n", err);
    return 1;
  }
  char url[64];
  snprintf(url, sizeof(url), "127.0.0.1:%d", tp_mock_port(mock));

  tp_config cfg;
  tp_config_default(&cfg);
  cfg.server.url = url;
  cfg.load.concurrency = levels;
  cfg.load.n_concurrency = 2;
  cfg.measure.request_count = 16;
  cfg.prompts.output_tokens_mean = 16;
  cfg.output.progress = NULL;

  tp_run *run;
  int rv = tp_run_new(&run, &cfg, err, sizeof(err));
  if (rv) {
    fprintf(stderr, "mock_sweep: %s\n", err);
    tp_mock_stop(mock);
    return 1;
  }
  rv = tp_run_exec(run, err, sizeof(err));
  if (rv) fprintf(stderr, "mock_sweep: %s\n", err);
  for (size_t i = 0; i < tp_run_level_count(run); i++) {
    const tp_level_result *lv = tp_run_level(run, i);
    printf("concurrency %u: %llu ok, TTFT avg %.2f ms, p99 %.2f ms, %.1f requests/s\n", lv->concurrency,
           (unsigned long long)lv->succeeded, lv->ttft_ms.avg, lv->ttft_ms.p99, lv->request_throughput);
  }
  tp_run_free(run);
  tp_mock_stop(mock);
  return rv ? 1 : 0;
}

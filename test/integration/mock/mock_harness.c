/* A mock server for the integration tests, configured field by field.
 *
 * usage: mock_harness [FIELD=VALUE ...]
 *
 * Each argument sets one tp_mock_config field by its C name (ttft_ms=5,
 * http_dialect=tgi, fault_kind=stall, prefix_cache=1, ...); the rest keep
 * tp_mock_config_default's values, except grpc_port and http_port, which
 * default to 0 (any free port) here.  The harness starts the mock with
 * tp_mock_start, prints one JSON line with the ports on stdout, then reads
 * commands from stdin, one per line:
 *   stats   print tp_mock_stats as one JSON line
 *   quit    (or end of input) stop the mock and exit 0
 * Exit status 2 for a bad argument, 3 when the mock cannot start.
 *
 * The tests drive it this way because the `tokperf mock` command line is
 * the CLI's, and the tests must reach every field, and read the counters
 * the server kept (tp_mock_get_stats) between requests. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokperf/tokperf.h"

static int set_field(tp_mock_config *c, const char *k, const char *v) {
  char *end;
#define F_DOUBLE(name)                      \
  if (strcmp(k, #name) == 0) {              \
    c->name = strtod(v, &end);              \
    return *end ? -1 : 0;                   \
  }
#define F_UINT(name, type)                  \
  if (strcmp(k, #name) == 0) {              \
    c->name = (type)strtoull(v, &end, 10);  \
    return *end ? -1 : 0;                   \
  }
#define F_INT(name, type)                   \
  if (strcmp(k, #name) == 0) {              \
    c->name = (type)strtoll(v, &end, 10);   \
    return *end ? -1 : 0;                   \
  }
#define F_STR(name)                         \
  if (strcmp(k, #name) == 0) {              \
    c->name = v;                            \
    return 0;                               \
  }
#define F_BOOL(name)                        \
  if (strcmp(k, #name) == 0) {              \
    c->name = strcmp(v, "0") != 0 && strcmp(v, "false") != 0; \
    return 0;                               \
  }
  F_STR(host)
  F_INT(grpc_port, int)
  F_DOUBLE(ttft_ms)
  F_DOUBLE(prefill_us_per_token)
  F_DOUBLE(prefill_queue_ms)
  F_DOUBLE(itl_ms)
  F_DOUBLE(itl_us_per_seq)
  F_UINT(max_batch, uint32_t)
  F_UINT(output_tokens, uint32_t)
  F_DOUBLE(eos_prob)
  F_UINT(seed, uint64_t)
  F_STR(log_path)
  F_BOOL(quiet)
  F_INT(http_port, int)
  F_STR(http_dialect)
  F_INT(sse_keepalive_ms, int64_t)
  F_STR(fault_kind)
  F_DOUBLE(fault_rate)
  F_UINT(fault_after_tokens, uint32_t)
  F_UINT(refuse_connections, uint32_t)
  F_UINT(refuse_connections_ms, uint64_t)
  F_UINT(goaway_after_streams, uint32_t)
  F_BOOL(close_after_stream)
  F_UINT(idle_close_ms, uint64_t)
  F_BOOL(prefix_cache)
  F_UINT(prefix_cache_block_words, uint32_t)
  F_UINT(prefix_cache_blocks, uint32_t)
  return -1;
}

static void print_stats(tp_mock *m) {
  tp_mock_stats s;
  tp_mock_get_stats(m, &s);
  printf("{\"requests\":%" PRIu64 ",\"responses\":%" PRIu64 ",\"max_active_streams\":%u,"
         "\"max_active_sequences\":%u,\"faults_injected\":%" PRIu64 ",\"connections\":%" PRIu64
         ",\"connections_refused\":%" PRIu64 ",\"http_requests\":%" PRIu64
         ",\"prefix_cache_queries_tokens\":%" PRIu64 ",\"prefix_cache_hits_tokens\":%" PRIu64 "}\n",
         s.requests, s.responses, s.max_active_streams, s.max_active_sequences, s.faults_injected,
         s.connections, s.connections_refused, s.http_requests, s.prefix_cache_queries_tokens,
         s.prefix_cache_hits_tokens);
  fflush(stdout);
}

int main(int argc, char **argv) {
  tp_mock_config cfg;
  tp_mock_config_default(&cfg);
  cfg.grpc_port = 0;
  cfg.http_port = 0;
  cfg.quiet = true;
  for (int i = 1; i < argc; i++) {
    char *eq = strchr(argv[i], '=');
    if (!eq) {
      fprintf(stderr, "mock_harness: '%s': expected FIELD=VALUE\n", argv[i]);
      return 2;
    }
    *eq = 0;
    if (set_field(&cfg, argv[i], eq + 1) != 0) {
      fprintf(stderr, "mock_harness: unknown field or bad value: %s=%s\n", argv[i], eq + 1);
      return 2;
    }
  }
  char err[512] = "";
  tp_mock *m;
  int rv = tp_mock_start(&m, &cfg, err, sizeof(err));
  if (rv) {
    fprintf(stderr, "mock_harness: %s\n", err[0] ? err : tp_strerror(rv));
    printf("{\"error\":\"cannot start\"}\n");
    return 3;
  }
  printf("{\"grpc_port\":%d,\"http_port\":%d}\n", tp_mock_port(m), tp_mock_http_port(m));
  fflush(stdout);
  char line[256];
  while (fgets(line, sizeof(line), stdin)) {
    if (strncmp(line, "stats", 5) == 0)
      print_stats(m);
    else if (strncmp(line, "quit", 4) == 0)
      break;
  }
  tp_mock_stop(m);
  return 0;
}

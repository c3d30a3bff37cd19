/* The built-in mock Triton server.
 *
 * One libuv loop (on a thread of its own, or the caller's) accepts h2c
 * connections, runs one nghttp2 server session per connection and answers
 * the KServe v2 gRPC methods a load generator uses.  Two models imitate the
 * TensorRT-LLM ensemble and the vLLM backend; the timing of every token
 * comes from tp_mock_engine and is kept with tp_timers, so the client sees
 * deadlines accurate to tens of microseconds.
 *
 * The gRPC side lives in tp_mock_grpc*.c; this file starts and stops the
 * loop, its listeners and its handles.
 *
 * The same loop serves HTTP/1.1 on a second port (tp_mock_http.c); both
 * sides share the timing model, the faults, the statistics and the log
 * through tp_mock_internal.h. */
#include "tokperf/mock.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <time.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>
#include <nghttp2/nghttp2.h>
#include <uv.h>

#include "config.h"
#include "grpc_service.pb-c.h"
#include "mock/tp_mock_engine.h"
#include "mock/tp_mock_grpc.h"
#include "mock/tp_mock_internal.h"
#include "util/tp_reader.h"
#include "mock/tp_mock_sse.h"
#include "transport/tp_grpc.h"
#include "util/tp_common.h"
#include "util/tp_stamp.h"
#include "util/tp_timer.h"

static void on_idle(uv_idle_t *h) {
  (void)h;
}

/* The idle handle only keeps the next poll from blocking while a flush is
 * pending (a write callback run in the pending phase may mark a connection
 * dirty after this iteration's check has passed). */
void tp__mock_want_flush(tp_mock *m) {
  if (!m->idle_on && !m->stopping) {
    uv_idle_start(&m->idle, on_idle);
    m->idle_on = true;
  }
}

static void on_check(uv_check_t *h) {
  tp_mock *m = h->data;
  tp__mock_grpc_flush(m);
  if (m->http_on) tp__mock_http_flush(m);
  if (m->idle_on) {
    uv_idle_stop(&m->idle);
    m->idle_on = false;
  }
  tp__mock_log_flush(m, false);
}

/* ---- lifecycle ----------------------------------------------------------------------- */

static void shutdown_loop(tp_mock *m) {
  tp_stamp_uninstall(&m->loop);
  if (m->stopping) return;
  m->stopping = true;
  uv_close((uv_handle_t *)&m->listener, NULL);
  uv_close((uv_handle_t *)&m->listen_timer, NULL);
  while (m->conns) tp__mock_conn_close(m->conns);
  /* After the connections: each removed its socket from the reader. */
  tp_reader_close(m->reader);
  m->reader = NULL;
  tp__mock_http_shutdown(m);
  uv_close((uv_handle_t *)&m->check, NULL);
  uv_close((uv_handle_t *)&m->idle, NULL);
  uv_close((uv_handle_t *)&m->stop_async, NULL);
  if (m->have_signals) {
    uv_close((uv_handle_t *)&m->sigint, NULL);
    uv_close((uv_handle_t *)&m->sigterm, NULL);
  }
  /* Last: closing connections above cancels requests, which stops their
   * timers and may admit (and arm) queued ones. */
  tp_timers_close(m->timers);
  m->timers = NULL;
}

static void on_stop_async(uv_async_t *a) {
  shutdown_loop(a->data);
}

static void on_signal(uv_signal_t *s, int signum) {
  shutdown_loop(s->data);
}

static void mock_free(tp_mock *m) {
  if (!m) return;
  if (m->engine) tp_mock_engine_free(m->engine);
  if (m->cbs) nghttp2_session_callbacks_del(m->cbs);
  if (m->log) {
    tp__mock_log_flush(m, true);
    fclose(m->log);
  }
  tp_buf_fini(&m->logbuf);
  tp_buf_fini(&m->scratch);
  free(m->host);
  free(m->log_path);
  free(m->fault_spec);
  if (m->served_model_name) tp__mock_set_served_names(NULL); /* the names resolved are this mock's */
  free(m->served_model_name);
  free(m);
}

/* Runs the loop until every handle closed, then closes it. */
static void run_loop(tp_mock *m) {
  uv_run(&m->loop, UV_RUN_DEFAULT);
  /* uv_run returns once every handle has closed, so this cannot fail
   * unless a handle leaked. */
  uv_loop_close(&m->loop);
}

static void host_port(char *out, size_t n, const char *host, int port) {
  if (strchr(host, ':'))
    snprintf(out, n, "[%s]:%d", host, port);
  else
    snprintf(out, n, "%s:%d", host, port);
}

/* Binds the gRPC listener (and the HTTP one) without listening yet, so the
 * ports are known and taken even while refuse_connections_ms holds off
 * listening: a bound socket that does not listen answers connects with a
 * reset (ECONNREFUSED). */
static int bind_all(tp_mock *m, char *err, size_t errlen) {
  char hp[300];
  host_port(hp, sizeof(hp), m->host, m->cfg.grpc_port);
  if (m->cfg.grpc_port < 0 || m->cfg.grpc_port > 65535) {
    tp_seterr(err, errlen, "tokperf mock: invalid port %d (use 0..65535, 0 = any free port)",
              m->cfg.grpc_port);
    return TP_EINVAL;
  }
  struct addrinfo hints;
  memset(&hints, 0, sizeof(hints));
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE;
  uv_getaddrinfo_t gai;
  /* Without a callback uv_getaddrinfo resolves synchronously. */
  int rv = uv_getaddrinfo(&m->loop, &gai, NULL, m->host, "0", &hints);
  if (rv != 0) {
    tp_seterr(err, errlen, "tokperf mock: cannot listen on %s: %s (check the host name)", hp,
              uv_strerror(rv));
    return TP_ECONNECT;
  }
  struct sockaddr_storage addr;
  memset(&addr, 0, sizeof(addr));
  memcpy(&addr, gai.addrinfo->ai_addr, TP_MIN((size_t)gai.addrinfo->ai_addrlen, sizeof(addr)));
  uv_freeaddrinfo(gai.addrinfo);
  tp__mock_set_port(&addr, m->cfg.grpc_port);
  rv = uv_tcp_bind(&m->listener, (const struct sockaddr *)&addr, 0);
  /* libuv keeps EADDRINUSE for listen() to report; an unbound socket shows
   * port 0, which tells it now. */
  if (rv == 0) m->port = tp__mock_bound_port(&m->listener);
  if (rv == 0 && (m->port == 0 || (m->cfg.grpc_port && m->port != m->cfg.grpc_port))) rv = UV_EADDRINUSE;
  if (rv != 0) {
    tp_seterr(err, errlen,
              "tokperf mock: cannot listen on %s: %s (is another server using the port? "
              "choose another port, or 0 for any free one)",
              hp, uv_strerror(rv));
    return TP_ECONNECT;
  }
  if (m->http_port >= 0) return tp__mock_http_bind(m, (const struct sockaddr *)&addr, err, errlen);
  return 0;
}

static int start_listening(tp_mock *m, char *err, size_t errlen) {
  if (m->listening || m->stopping) return 0;
  m->listening = true;
  int rv = uv_listen((uv_stream_t *)&m->listener, 1024, tp__mock_grpc_on_connection);
  if (rv == 0 && m->http_on) rv = tp__mock_http_start_listening(m);
  if (rv != 0) {
    char hp[300];
    host_port(hp, sizeof(hp), m->host, m->port);
    tp_seterr(err, errlen, "tokperf mock: cannot listen on %s: %s", hp, uv_strerror(rv));
    return TP_ECONNECT;
  }
  return 0;
}

static void on_listen_timer(uv_timer_t *t) {
  tp_mock *m = t->data;
  char err[400];
  if (start_listening(m, err, sizeof(err)) != 0 && !m->cfg.quiet) fprintf(stderr, "%s\n", err);
}

/* Checks what the configuration holds beyond the timing model: the
 * fault, its rate, the HTTP port and settings.  Returns 0 or TP_EINVAL
 * with a message. */
static int check_config(tp_mock *m, char *err, size_t errlen) {
  const tp_mock_config *cfg = &m->cfg;
  if (m->fault_spec) {
    char ferr[400];
    if (tp_mock_fault_parse(m->fault_spec, strlen(m->fault_spec), &m->fault, ferr, sizeof(ferr)) != 0) {
      tp_seterr(err, errlen, "tokperf mock: fault_kind '%s': %s", m->fault_spec, ferr);
      return TP_EINVAL;
    }
  }
  if (!(cfg->fault_rate >= 0 && cfg->fault_rate <= 1)) {
    tp_seterr(err, errlen, "tokperf mock: fault_rate %g is outside 0..1", cfg->fault_rate);
    return TP_EINVAL;
  }
  if (m->http_port < -1 || m->http_port > 65535) {
    tp_seterr(err, errlen,
              "tokperf mock: invalid HTTP port %d (use 0..65535, 0 = any free port, -1 = no HTTP)",
              cfg->http_port);
    return TP_EINVAL;
  }
  return tp__mock_http_check_config(m, err, errlen);
}

/* The loop's own handles: the check that flushes output, the idle that
 * keeps a flush from waiting, the stop signal, the late-listening timer
 * and the gRPC listener. */
static void init_handles(tp_mock *m) {
  uv_check_init(&m->loop, &m->check);
  m->check.data = m;
  uv_check_start(&m->check, on_check);
  uv_idle_init(&m->loop, &m->idle);
  m->idle.data = m;
  uv_async_init(&m->loop, &m->stop_async, on_stop_async);
  m->stop_async.data = m;
  uv_timer_init(&m->loop, &m->listen_timer);
  m->listen_timer.data = m;
  uv_tcp_init(&m->loop, &m->listener);
  m->listener.data = m;
}

/* Builds everything up to a listening socket.  On failure the loop is
 * closed again and m freed. */
static int mock_setup(tp_mock **out, const tp_mock_config *cfg, char *err, size_t errlen) {
  *out = NULL;
  tp_mock *m = calloc(1, sizeof(*m));
  if (!m) return TP_ENOMEM;
  m->cfg = *cfg;
  m->host = strdup(cfg->host ? cfg->host : "127.0.0.1");
  m->log_path = cfg->log_path ? strdup(cfg->log_path) : NULL;
  m->fault_spec = cfg->fault_kind ? strdup(cfg->fault_kind) : NULL;
  m->served_model_name = cfg->served_model_name ? strdup(cfg->served_model_name) : NULL;
  m->cfg.served_model_name = m->served_model_name;
  if (m->served_model_name) tp__mock_set_served_names(m->served_model_name);
  m->cfg.host = m->host;
  m->cfg.log_path = m->log_path;
  m->cfg.fault_kind = m->fault_spec;
  m->http_port = cfg->http_port == TP_MOCK_HTTP_PORT_AUTO ? (cfg->grpc_port == 0 ? 0 : 8000) : cfg->http_port;
  m->start_ns = tp_now_ns();
  tp_mock_statset_init(&m->stats);
  tp_buf_init(&m->scratch);
  tp_buf_init(&m->logbuf);
  if (!m->host || (cfg->log_path && !m->log_path) || (cfg->fault_kind && !m->fault_spec)) {
    mock_free(m);
    return TP_ENOMEM;
  }
  int rv = check_config(m, err, errlen);
  if (rv) {
    mock_free(m);
    return rv;
  }
  rv = tp_mock_engine_new(&m->engine, &m->cfg, tp__mock_on_admit, m);
  if (rv) {
    tp_seterr(err, errlen,
              "tokperf mock: invalid timing model (times must be finite and >= 0, "
              "eos_prob within 0..1, prefix cache block words and blocks > 0)");
    mock_free(m);
    return rv;
  }
  if (m->log_path) {
    m->log = fopen(m->log_path, "w");
    if (!m->log) {
      tp_seterr(err, errlen, "tokperf mock: cannot open the log '%s': %s", m->log_path, strerror(errno));
      mock_free(m);
      return TP_EIO;
    }
  }
  if (tp__mock_grpc_callbacks_new(&m->cbs) != 0) {
    mock_free(m);
    return TP_ENOMEM;
  }

  if (uv_loop_init(&m->loop) != 0 || tp_stamp_install(&m->loop) != 0) {
    mock_free(m);
    return TP_ENOMEM;
  }
  rv = tp_timers_new(&m->timers, &m->loop);
  if (rv) {
    tp_seterr(err, errlen, "tokperf mock: cannot create a timerfd: %s", strerror(errno));
    run_loop(m);
    mock_free(m);
    return rv;
  }
  init_handles(m);
  rv = tp_reader_new(&m->reader, &m->loop, tp__mock_grpc_on_chunk);
  if (rv) tp_seterr(err, errlen, "tokperf mock: cannot start the reader thread");
  if (!rv) rv = bind_all(m, err, errlen);
  if (!rv) {
    if (m->cfg.refuse_connections_ms > 0)
      uv_timer_start(&m->listen_timer, on_listen_timer, m->cfg.refuse_connections_ms, 0);
    else
      rv = start_listening(m, err, errlen);
  }
  if (rv) {
    shutdown_loop(m);
    run_loop(m);
    mock_free(m);
    return rv;
  }
  *out = m;
  return 0;
}

void tp_mock_config_default(tp_mock_config *cfg) {
  memset(cfg, 0, sizeof(*cfg));
  cfg->host = "127.0.0.1";
  cfg->grpc_port = 8001;
  cfg->ttft_ms = 20;
  cfg->prefill_us_per_token = 20;
  cfg->prefill_queue_ms = 2;
  cfg->itl_ms = 8;
  cfg->itl_us_per_seq = 20;
  cfg->max_batch = 256;
  cfg->output_tokens = 0;
  cfg->eos_prob = 0;
  cfg->seed = 0;
  cfg->log_path = NULL;
  cfg->quiet = false;
  cfg->http_port = TP_MOCK_HTTP_PORT_AUTO;
  cfg->http_dialect = "vllm";
  cfg->sse_keepalive_ms = -1;
  cfg->fault_kind = NULL;
  cfg->fault_rate = 1.0;
  cfg->fault_after_tokens = 0;
  cfg->refuse_connections = 0;
  cfg->refuse_connections_ms = 0;
  cfg->goaway_after_streams = 0;
  cfg->prefix_cache = false;
  cfg->prefix_cache_block_words = 16;
  cfg->prefix_cache_blocks = 8192;
  cfg->tokens_per_chunk = 1;
}

/* A client that goes away while the mock writes to it makes write() raise
 * SIGPIPE, which by default kills the whole process.  The signal is sent to
 * the thread that wrote, so blocking it in the loop's thread turns it into
 * a plain EPIPE without changing the process's signal dispositions. */
static void block_sigpipe(sigset_t *old) {
  sigset_t s;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &s, old);
}

/* Drops a SIGPIPE left pending by a blocked write, then restores the mask
 * (unblocking a pending SIGPIPE would deliver it). */
static void unblock_sigpipe(const sigset_t *old) {
  sigset_t s, pending;
  sigemptyset(&s);
  sigaddset(&s, SIGPIPE);
  struct timespec zero = {0, 0};
  while (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) && !sigismember(old, SIGPIPE))
    if (sigtimedwait(&s, NULL, &zero) < 0) break;
  pthread_sigmask(SIG_SETMASK, old, NULL);
}

static void thread_main(void *arg) {
  sigset_t old;
  block_sigpipe(&old);
  run_loop(arg);
}

int tp_mock_start(tp_mock **out, const tp_mock_config *cfg, char *err, size_t errlen) {
  *out = NULL;
  tp_mock *m;
  int rv = mock_setup(&m, cfg, err, errlen);
  if (rv) return rv;
  m->threaded = true;
  /* Everything was set up on this thread before the loop thread exists;
   * from here on only the loop thread touches the loop. */
  if (uv_thread_create(&m->thread, thread_main, m) != 0) {
    tp_seterr(err, errlen, "tokperf mock: cannot start the server thread");
    shutdown_loop(m);
    run_loop(m);
    mock_free(m);
    return TP_ENOMEM;
  }
  *out = m;
  return 0;
}

int tp_mock_port(const tp_mock *m) {
  return m ? m->port : -1;
}

int tp_mock_http_port(const tp_mock *m) {
  return m && m->http_on ? m->http_port : -1;
}

void tp_mock_get_stats(tp_mock *m, tp_mock_stats *out) {
  memset(out, 0, sizeof(*out));
  if (!m) return;
  out->requests = atomic_load_explicit(&m->n_requests, memory_order_relaxed);
  out->responses = atomic_load_explicit(&m->n_responses, memory_order_relaxed);
  out->max_active_streams = atomic_load_explicit(&m->max_streams, memory_order_relaxed);
  out->max_active_sequences = atomic_load_explicit(&m->max_seqs, memory_order_relaxed);
  out->faults_injected = atomic_load_explicit(&m->n_faults, memory_order_relaxed);
  out->connections = atomic_load_explicit(&m->n_connections, memory_order_relaxed);
  out->connections_refused = atomic_load_explicit(&m->n_refused, memory_order_relaxed);
  out->http_requests = atomic_load_explicit(&m->n_http_requests, memory_order_relaxed);
  out->prefix_cache_queries_tokens = atomic_load_explicit(&m->n_prefix_queries_tokens, memory_order_relaxed);
  out->prefix_cache_hits_tokens = atomic_load_explicit(&m->n_prefix_hits_tokens, memory_order_relaxed);
}

void tp_mock_stop(tp_mock *m) {
  if (!m) return;
  if (m->threaded) {
    uv_async_send(&m->stop_async);
    uv_thread_join(&m->thread);
  }
  mock_free(m);
}

int tp_mock_run(const tp_mock_config *cfg, char *err, size_t errlen) {
  tp_mock *m;
  int rv = mock_setup(&m, cfg, err, errlen);
  if (rv) return rv;
  uv_signal_init(&m->loop, &m->sigint);
  uv_signal_init(&m->loop, &m->sigterm);
  m->sigint.data = m->sigterm.data = m;
  m->have_signals = true;
  uv_signal_start(&m->sigint, on_signal, SIGINT);
  uv_signal_start(&m->sigterm, on_signal, SIGTERM);
  if (!m->cfg.quiet) {
    char hp[300], hh[300];
    host_port(hp, sizeof(hp), m->host, m->port);
    if (m->http_on) {
      host_port(hh, sizeof(hh), m->host, m->http_port);
      fprintf(
          stderr,
          "tokperf mock: listening on %s (gRPC) and %s (HTTP, %s dialect) (models: ensemble, vllm_model)\n",
          hp, hh, m->cfg.http_dialect ? m->cfg.http_dialect : "vllm");
    } else {
      fprintf(stderr, "tokperf mock: listening on %s (models: ensemble, vllm_model)\n", hp);
    }
  }
  sigset_t old;
  block_sigpipe(&old);
  run_loop(m);
  unblock_sigpipe(&old);
  mock_free(m);
  return 0;
}

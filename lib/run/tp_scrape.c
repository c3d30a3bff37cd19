#include "tp_scrape.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/tp_prom.h"
#include "transport/tp_http.h"
#include "util/tp_wake.h"
#include "tokperf/tokperf.h"

/* The figures: a Prometheus name (and a label to match, if any), how the
 * samples of one scrape combine (the mean over GPUs, the sum over engines),
 * and tokperf's name and unit. */
typedef enum combine { C_SUM, C_MEAN } combine;

typedef struct figure {
  const char *metric;
  const char *label, *label_value; /* NULL = any */
  combine how;
  const char *name, *unit;
} figure;

static const figure figures[] = {
  {"nv_gpu_utilization", NULL, NULL, C_MEAN, "gpu_utilization", "fraction"},
  {"nv_gpu_memory_used_bytes", NULL, NULL, C_SUM, "gpu_memory_used", "bytes"},
  {"nv_gpu_power_usage", NULL, NULL, C_SUM, "gpu_power", "W"},
  {"nv_trt_llm_kv_cache_block_metrics", "kv_cache_block_type", "used", C_SUM, "trtllm_kv_blocks_used", "blocks"},
  {"nv_trt_llm_kv_cache_block_metrics", "kv_cache_block_type", "fraction", C_MEAN, "trtllm_kv_cache_usage", "fraction"},
  {"nv_trt_llm_request_metrics", "request_type", "active", C_SUM, "trtllm_active_requests", "requests"},
  {"nv_trt_llm_request_metrics", "request_type", "scheduled", C_SUM, "trtllm_scheduled_requests", "requests"},
  {"nv_trt_llm_request_metrics", "request_type", "context", C_SUM, "trtllm_context_requests", "requests"},
  {"nv_trt_llm_request_metrics", "request_type", "waiting", C_SUM, "trtllm_waiting_requests", "requests"},
  {"nv_trt_llm_inflight_batcher_metrics", "inflight_batcher_specific_metric", "generation_requests", C_SUM,
   "trtllm_generation_requests", "requests"},
  {"nv_inference_pending_request_count", NULL, NULL, C_SUM, "triton_pending_requests", "requests"},
  {"vllm:kv_cache_usage_perc", NULL, NULL, C_MEAN, "vllm_kv_cache_usage", "fraction"},
  {"vllm:gpu_cache_usage_perc", NULL, NULL, C_MEAN, "vllm_gpu_cache_usage", "fraction"},
  {"vllm:num_requests_running", NULL, NULL, C_SUM, "vllm_requests_running", "requests"},
  {"vllm:num_requests_waiting", NULL, NULL, C_SUM, "vllm_requests_waiting", "requests"},
  /* SGLang's scheduler gauges (its /metrics with --enable-metrics). */
  {"sglang:num_running_reqs", NULL, NULL, C_SUM, "sglang_requests_running", "requests"},
  {"sglang:num_queue_reqs", NULL, NULL, C_SUM, "sglang_requests_waiting", "requests"},
  {"sglang:token_usage", NULL, NULL, C_MEAN, "sglang_token_usage", "fraction"},
  {"sglang:cache_hit_rate", NULL, NULL, C_MEAN, "sglang_cache_hit_rate", "fraction"},
  {"sglang:gen_throughput", NULL, NULL, C_SUM, "sglang_gen_throughput", "tokens/s"},
  /* NVIDIA's DCGM exporter (--gpu-metrics-url), one sample per GPU. */
  {"DCGM_FI_DEV_GPU_UTIL", NULL, NULL, C_MEAN, "dcgm_gpu_utilization", "%"},
  {"DCGM_FI_DEV_FB_USED", NULL, NULL, C_SUM, "dcgm_gpu_memory_used", "MiB"},
  {"DCGM_FI_DEV_POWER_USAGE", NULL, NULL, C_SUM, "dcgm_gpu_power", "W"},
  {"DCGM_FI_PROF_GR_ENGINE_ACTIVE", NULL, NULL, C_MEAN, "dcgm_gr_engine_active", "fraction"},
};
#define N_FIG (sizeof(figures) / sizeof(figures[0]))

struct tp_scraper {
  uv_loop_t *loop;
  tp_http *http;
  char *url;
  uint64_t interval_ms;
  uv_timer_t timer;
  bool in_flight;
  bool active;
  tp_buf body;
  /* This scrape's values. */
  double cur[N_FIG];
  uint32_t cur_n[N_FIG];
  double hits, queries; /* vLLM prefix-cache counters */
  bool have_hits, have_queries;
  /* The level's summary. */
  double sum[N_FIG], max[N_FIG];
  uint32_t samples[N_FIG];
  double first_hits, first_queries, last_hits, last_queries;
  bool have_first, have_last;
  uint32_t scrapes, failures;
  tp_server_metric out[N_FIG];
  /* The level's samples in arrival order, for the time series: those of
   * every stride-th scrape (a level's samples are capped, so a long one
   * keeps fewer scrapes rather than growing without bound). */
  struct sample {
    uint64_t t_ns;
    double v;
    uint32_t fig;
    uint32_t scrape; /* its scrape's number in the level */
  } *ser;
  size_t n_ser, cap_ser;
  uint32_t stride;
};

/* At most this many samples per level (24 bytes each). */
#define SERIES_MAX_SAMPLES 200000

/* A sample of the series; one that finds no memory is dropped (the
 * summary above still has it).  At the cap, the samples of every other
 * kept scrape go and the stride doubles: the series keeps its span at half
 * the resolution. */
static void keep(tp_scraper *s, uint32_t fig, uint64_t t, double v) {
  uint32_t k = s->scrapes;
  if (k % s->stride) return;
  if (s->n_ser == SERIES_MAX_SAMPLES) {
    size_t j = 0;
    for (size_t i = 0; i < s->n_ser; i++)
      if (s->ser[i].scrape % (2 * s->stride) == 0) s->ser[j++] = s->ser[i];
    s->n_ser = j;
    s->stride *= 2;
    if (k % s->stride) return;
  }
  if (s->n_ser == s->cap_ser) {
    size_t cap = s->cap_ser ? 2 * s->cap_ser : 256;
    if (cap > SERIES_MAX_SAMPLES) cap = SERIES_MAX_SAMPLES;
    struct sample *p = realloc(s->ser, cap * sizeof(*p));
    if (!p) return;
    s->ser = p;
    s->cap_ser = cap;
  }
  s->ser[s->n_ser++] = (struct sample){t, v, fig, k};
}

static int on_sample(void *ud, const tp_prom_sample *sm) {
  tp_scraper *s = ud;
  for (size_t i = 0; i < N_FIG; i++) {
    const figure *f = &figures[i];
    if (strcmp(sm->name, f->metric) != 0) continue;
    if (f->label) {
      const char *v = tp_prom_label_value(sm, f->label);
      if (!v || strcmp(v, f->label_value) != 0) continue;
    }
    if (isfinite(sm->value)) {
      s->cur[i] += sm->value;
      s->cur_n[i]++;
    }
  }
  /* vLLM names counters with or without the _total suffix by version. */
  if (strncmp(sm->name, "vllm:prefix_cache_hits", 22) == 0 && isfinite(sm->value)) {
    s->hits += sm->value;
    s->have_hits = true;
  } else if (strncmp(sm->name, "vllm:prefix_cache_queries", 25) == 0 && isfinite(sm->value)) {
    s->queries += sm->value;
    s->have_queries = true;
  }
  return 0;
}

static int on_response(tp_http_req *r, int status, const char *ct, void *ud) { return 0; }

static int on_body(tp_http_req *r, const uint8_t *data, size_t len, uint64_t t, void *ud) {
  tp_scraper *s = ud;
  /* A metrics page is tens of KiB; refuse anything absurd. */
  if (s->body.len + len > (16u << 20)) return -1;
  return tp_buf_append(&s->body, data, len) ? -1 : 0;
}

static void on_done(tp_http_req *r, const tp_http_result *res, void *ud) {
  tp_scraper *s = ud;
  uint64_t now = tp_now_ns();
  s->in_flight = false;
  /* The run may be waiting for this scrape to land (tp_scraper_busy). */
  tp_wake(s->loop);
  if (res->err_class != TP_ERRCLASS_NONE || res->status != 200) {
    s->failures++;
    return;
  }
  memset(s->cur, 0, sizeof(s->cur));
  memset(s->cur_n, 0, sizeof(s->cur_n));
  s->hits = s->queries = 0;
  s->have_hits = s->have_queries = false;
  char err[160];
  if (tp_prom_parse((const char *)s->body.data, s->body.len, on_sample, s, err, sizeof(err)) != 0) {
    s->failures++;
    return;
  }
  if (!s->active) return;
  s->scrapes++;
  for (size_t i = 0; i < N_FIG; i++) {
    if (!s->cur_n[i]) continue;
    double v = figures[i].how == C_MEAN ? s->cur[i] / s->cur_n[i] : s->cur[i];
    s->sum[i] += v;
    keep(s, (uint32_t)i, now, v);
    if (!s->samples[i] || v > s->max[i]) s->max[i] = v;
    s->samples[i]++;
  }
  if (s->have_hits && s->have_queries) {
    if (!s->have_first) {
      s->first_hits = s->hits;
      s->first_queries = s->queries;
      s->have_first = true;
    }
    s->last_hits = s->hits;
    s->last_queries = s->queries;
    s->have_last = true;
  }
}

static void scrape(tp_scraper *s) {
  if (s->in_flight) return; /* a slow server: skip rather than pile up */
  static const tp_http_req_cbs cbs = {on_response, on_body, on_done};
  tp_http_req_opts ro;
  memset(&ro, 0, sizeof(ro));
  ro.path = s->url;
  ro.timeout_ns = (s->interval_ms > 100 ? s->interval_ms : 100) * TP_NS_PER_MS * 5;
  tp_buf_reset(&s->body);
  if (tp_http_request(s->http, &ro, &cbs, s, NULL) == 0)
    s->in_flight = true;
  else
    s->failures++;
}

static void on_timer(uv_timer_t *t) { scrape(t->data); }

int tp_scraper_new(tp_scraper **out, uv_loop_t *loop, const char *url, uint64_t interval_ms, const tp_config *cfg,
                   char *err, size_t errlen) {
  if (strncmp(url, "http://", 7) != 0 && strncmp(url, "https://", 8) != 0) {
    tp_seterr(
        err, errlen,
        "server.metrics_url '%s': expected an http:// or https:// URL (Triton: http://HOST:8002/metrics)",
        url);
    return TP_EINVAL;
  }
  tp_scraper *s = calloc(1, sizeof(*s));
  if (!s) return TP_ENOMEM;
  s->loop = loop;
  s->url = tp_strndup(url, strlen(url));
  s->interval_ms = interval_ms ? interval_ms : 1000;
  s->stride = 1;
  tp_buf_init(&s->body);
  tp_http_opts ho;
  memset(&ho, 0, sizeof(ho));
  ho.base_url = url;
  ho.ca_file = cfg->server.ca_file;
  ho.cert_file = cfg->server.cert_file;
  ho.key_file = cfg->server.key_file;
  ho.insecure = cfg->server.insecure;
  ho.max_host_connections = 1;
  int rv = s->url ? tp_http_new(&s->http, loop, &ho, err, errlen) : TP_ENOMEM;
  if (rv) {
    free(s->url);
    free(s);
    return rv;
  }
  uv_timer_init(loop, &s->timer);
  s->timer.data = s;
  *out = s;
  return 0;
}

void tp_scraper_level_start(tp_scraper *s) {
  memset(s->sum, 0, sizeof(s->sum));
  memset(s->max, 0, sizeof(s->max));
  memset(s->samples, 0, sizeof(s->samples));
  s->have_first = s->have_last = false;
  s->scrapes = s->failures = 0;
  s->n_ser = 0;
  s->stride = 1;
  s->active = true;
  scrape(s);
  uv_timer_start(&s->timer, on_timer, s->interval_ms, s->interval_ms);
}

bool tp_scraper_busy(const tp_scraper *s) { return s->in_flight; }

void tp_scraper_level_end(tp_scraper *s, tp_level_result *lv, tp_server_metric **owned, size_t *n) {
  uv_timer_stop(&s->timer);
  s->active = false;
  size_t k = 0;
  for (size_t i = 0; i < N_FIG; i++) {
    if (!s->samples[i]) continue;
    tp_server_metric *m = &s->out[k++];
    snprintf(m->name, sizeof(m->name), "%s", figures[i].name);
    snprintf(m->unit, sizeof(m->unit), "%s", figures[i].unit);
    m->avg = s->sum[i] / s->samples[i];
    m->max = s->max[i];
    m->samples = s->samples[i];
  }
  *n = k;
  *owned = NULL;
  if (k) {
    *owned = malloc(k * sizeof(tp_server_metric));
    if (*owned) memcpy(*owned, s->out, k * sizeof(tp_server_metric));
    else *n = 0;
  }
  lv->server_metrics = *owned;
  lv->n_server_metrics = *n;
  lv->metrics_scrapes = s->scrapes;
  lv->metrics_scrape_failures = s->failures;
  double dq = s->last_queries - s->first_queries;
  lv->prefix_cache_hit_rate = s->have_last && dq > 0 ? (s->last_hits - s->first_hits) / dq : -1;
}

void tp_scraper_level_end_more(tp_scraper *s, tp_level_result *lv, tp_server_metric **owned) {
  uv_timer_stop(&s->timer);
  s->active = false;
  size_t n0 = lv->n_server_metrics, k = 0;
  for (size_t i = 0; i < N_FIG; i++) k += s->samples[i] != 0;
  lv->metrics_scrapes += s->scrapes;
  lv->metrics_scrape_failures += s->failures;
  if (!k) return;
  tp_server_metric *m = realloc(*owned, (n0 + k) * sizeof(*m));
  if (!m) return;
  *owned = m;
  k = n0;
  for (size_t i = 0; i < N_FIG; i++) {
    if (!s->samples[i]) continue;
    tp_server_metric *o = &m[k++];
    snprintf(o->name, sizeof(o->name), "%s", figures[i].name);
    snprintf(o->unit, sizeof(o->unit), "%s", figures[i].unit);
    o->avg = s->sum[i] / s->samples[i];
    o->max = s->max[i];
    o->samples = s->samples[i];
  }
  lv->server_metrics = m;
  lv->n_server_metrics = k;
}

int tp_scraper_series(tp_scraper *const *sc, size_t n_sc, uint64_t t0_ns, tp_server_series **out, size_t *n_out) {
  *out = NULL;
  *n_out = 0;
  size_t counts[N_FIG * 2] = {0}, n_series = 0, n_samples = 0;
  if (n_sc > 2) n_sc = 2;
  for (size_t j = 0; j < n_sc; j++)
    for (size_t i = 0; sc[j] && i < sc[j]->n_ser; i++) counts[j * N_FIG + sc[j]->ser[i].fig]++;
  for (size_t i = 0; i < N_FIG * 2; i++) {
    n_series += counts[i] != 0;
    n_samples += counts[i];
  }
  if (!n_series) return 0;
  /* One block: the headers, then each series' times and values. */
  size_t head = n_series * sizeof(tp_server_series);
  tp_server_series *ss = malloc(head + 2 * n_samples * sizeof(double));
  if (!ss) return TP_ENOMEM;
  double *p = (double *)((char *)ss + head);
  size_t k = 0;
  for (size_t j = 0; j < n_sc; j++) {
    for (size_t f = 0; f < N_FIG; f++) {
      if (!counts[j * N_FIG + f]) continue;
      tp_server_series *o = &ss[k++];
      snprintf(o->name, sizeof(o->name), "%s", figures[f].name);
      snprintf(o->unit, sizeof(o->unit), "%s", figures[f].unit);
      double *t = p, *v = p + counts[j * N_FIG + f];
      p += 2 * counts[j * N_FIG + f];
      o->n = 0;
      for (size_t i = 0; i < sc[j]->n_ser; i++) {
        const struct sample *sm = &sc[j]->ser[i];
        if (sm->fig != f) continue;
        t[o->n] = ((double)sm->t_ns - (double)t0_ns) / 1e9;
        v[o->n++] = sm->v;
      }
      o->t_s = t;
      o->v = v;
    }
  }
  *out = ss;
  *n_out = k;
  return 0;
}

static void on_timer_closed(uv_handle_t *h) {
  tp_scraper *s = h->data;
  free(s->ser);
  tp_buf_fini(&s->body);
  free(s->url);
  free(s);
}

void tp_scraper_free(tp_scraper *s) {
  if (!s) return;
  uv_timer_stop(&s->timer);
  tp_http_close(s->http);
  /* Freed once libuv has closed the timer (the loop must run). */
  uv_close((uv_handle_t *)&s->timer, on_timer_closed);
}

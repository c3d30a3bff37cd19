/* What runs around a level: Triton's server statistics (the counters'
 * difference over the level), Prometheus scraping, MPI (the split of the
 * level between ranks and the gathering of their records) and artifacts. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "run/tp_run_internal.h"
#include "report/tp_records.h"
#include "report/tp_export.h"
#include "run/tp_dist.h"
#include "util/tp_stamp.h"

/* Server statistics around a level (Triton's ModelStatistics).  A server
 * without them is told once and not asked again. */
static bool stats_wanted(const tp_run *r) {
  /* Only clients that can read them offer them (Triton gRPC's
   * ModelStatistics). */
  return !r->stats_off && !r->cfg.server.no_server_stats && !r->cfg.server.skip_preflight &&
         tp_client_offers_model_stats(r->client);
}

static void stats_read_before(tp_run *r) {
  if (!stats_wanted(r)) return;
  free(r->stats_before);
  r->stats_before = NULL;
  r->n_stats_before = 0;
  char err[300];
  if (tp_client_model_stats(r->client, &r->stats_before, &r->n_stats_before, err, sizeof(err))) {
    r->stats_off = true;
    tpr_warn(r, "server statistics unavailable: %s (--no-server-stats skips asking)", err);
  }
}

static double per(uint64_t ns, uint64_t count) { return count ? (double)ns / (double)count / 1e3 : 0; }

static void stats_read_after(tp_run *r, size_t li, tp_level_result *lv) {
  if (!stats_wanted(r) || !r->stats_before) return;
  tp_triton_model_counters *after = NULL;
  size_t n_after = 0;
  char err[300];
  if (tp_client_model_stats(r->client, &after, &n_after, err, sizeof(err))) {
    tpr_warn(r, "server statistics unavailable after the level: %s", err);
    return;
  }
  tp_server_model_stats *out = calloc(n_after ? n_after : 1, sizeof(*out));
  size_t n = 0;
  for (int pass = 0; pass < 2 && out; pass++) {
    /* The target model first, then the composing models in server order. */
    for (size_t i = 0; i < n_after; i++) {
      const tp_triton_model_counters *a = &after[i];
      bool target = strcmp(a->name, r->cfg.server.model) == 0;
      if ((pass == 0) != target) continue;
      tp_triton_model_counters b;
      memset(&b, 0, sizeof(b));
      for (size_t k = 0; k < r->n_stats_before; k++)
        if (strcmp(r->stats_before[k].name, a->name) == 0 && strcmp(r->stats_before[k].version, a->version) == 0)
          b = r->stats_before[k];
      uint64_t succ = a->success_count - b.success_count, fail = a->fail_count - b.fail_count;
      if (!target && succ + fail == 0) continue; /* not used by this level */
      tp_server_model_stats *o = &out[n++];
      snprintf(o->name, sizeof(o->name), "%s", a->name);
      snprintf(o->version, sizeof(o->version), "%s", a->version);
      o->is_target = target;
      o->inference_count = a->inference_count - b.inference_count;
      o->execution_count = a->execution_count - b.execution_count;
      o->success_count = succ;
      o->fail_count = fail;
      o->cache_hit_count = a->cache_hit_count - b.cache_hit_count;
      /* perf_analyzer's reading: every duration per successful request. */
      o->avg_request_us = per(a->success_ns - b.success_ns, succ);
      o->avg_queue_us = per(a->queue_ns - b.queue_ns, succ);
      o->avg_compute_input_us = per(a->compute_input_ns - b.compute_input_ns, succ);
      o->avg_compute_infer_us = per(a->compute_infer_ns - b.compute_infer_ns, succ);
      o->avg_compute_output_us = per(a->compute_output_ns - b.compute_output_ns, succ);
      double parts = o->avg_queue_us + o->avg_compute_input_us + o->avg_compute_infer_us + o->avg_compute_output_us;
      o->avg_overhead_us = o->avg_request_us > parts ? o->avg_request_us - parts : 0;
    }
  }
  free(after);
  r->server_stats[li] = out;
  lv->server_models = out;
  lv->n_server_models = n;
}

/* This rank's part of the level.  Closed loop: the concurrency is split with
 * the remainder spread (7 over 2 ranks: 4 + 3), and the request count in
 * proportion, so the ranks end together.  Open loop: rank k takes arrivals
 * k, k + N, k + 2N, ... of the one schedule drawn from the seed, so the
 * union of the ranks' arrivals is exactly the single-process schedule,
 * whatever the distribution.  Either way request g is numbered k + N x
 * (its index on rank k), which picks its prompt. */
static void dist_split_level(tp_run *r, const point *pt) {
  level_state *L = &r->lv;
  uint32_t k = r->rank, n = r->n_ranks;
  L->seq_base = k;
  L->seq_step = n;
  if (pt->mode == TP_LOAD_CONCURRENCY) {
    L->slots = tp_dist_share(pt->concurrency, k, n);
    if (L->total != SIZE_MAX) L->total = (size_t)tp_dist_by_share(L->total, pt->concurrency, k, n);
    L->n_warmup = (size_t)tp_dist_by_share(L->n_warmup, pt->concurrency, k, n);
    if (L->slots == 0) L->total = 0;
  } else {
    L->slots = pt->concurrency ? tp_dist_share(pt->concurrency, k, n) : 0;
    size_t mine = 0;
    for (size_t i = k; i < L->n_offsets; i += n) L->offsets[mine++] = L->offsets[i];
    L->n_offsets = mine;
    if (L->total != SIZE_MAX) L->total = (size_t)tp_dist_strided(L->total, k, n);
    L->n_warmup = (size_t)tp_dist_strided(L->n_warmup, k, n);
  }
  if (L->total == 0) L->stop_planning = true;
}

/* While a level runs: heartbeats out (other ranks) or in (rank 0), and a
 * stop from rank 0 taken as an interruption. */
static void on_mpi_timer(uv_timer_t *t) {
  tp_run *r = t->data;
  level_state *L = &r->lv;
  tp_mpi_counters own = {L->n_done, L->n_failed, L->in_flight};
  bool stop = false;
  tp_mpi_poll(r->mpi, (uint32_t)r->cur_level, &own, &stop);
  if (stop && !r->interrupted) {
    atomic_store(&r->interrupt_flag, true);
    tpr_on_interrupt(&r->interrupt_async);
  }
}

/* Rank 0 writes another rank's records to the records file when they
 * arrive, at the level's end (its own were written as they ended). */
static void write_merged_record(tp_run *r, const tp_record *rec) {
  if (!r->records_fp) return;
  count_job j;
  memset(&j, 0, sizeof(j));
  j.run = r;
  j.snap = *rec;
  snprintf(j.id, sizeof(j.id), "%s%" PRIu64, r->id_prefix, rec->seq);
  j.level = r->n_levels;
  j.mode = r->lv.pt.mode;
  j.concurrency = r->lv.pt.concurrency;
  j.rate = r->lv.pt.rate;
  j.measured = rec->warmup ? TP_RECORD_UNMEASURED : TP_RECORD_MEASURED;
  tpr_write_record_line(r, &j, false);
}

/* Rank 0: one rank's records of the level arrived.  Their times move onto
 * rank 0's clock (minus the offset measured before the level), and they
 * join the level's records, so every statistic and export below sees the
 * union. */
static int dist_take(void *user_data, uint32_t rank, const uint8_t *data, size_t len, char *err, size_t errlen) {
  tp_run *r = user_data;
  level_state *L = &r->lv;
  tp_dist_level_head h;
  tp_record *recs;
  int rv = tp_dist_unpack_level(data, len, &h, &recs);
  if (rv) {
    tp_seterr(err, errlen, "%s", tp_strerror(rv));
    return rv;
  }
  if (h.level != r->cur_level || L->n_planned + h.n_records > SIZE_MAX / sizeof(tp_record) / 2) rv = TP_EPROTO;
  if (!rv && L->n_planned + h.n_records > L->cap) rv = tpr_reserve_records(r, L->n_planned + (size_t)h.n_records);
  if (rv) {
    for (uint64_t i = 0; i < h.n_records; i++) tp_record_fini(&recs[i]);
    free(recs);
    tp_seterr(err, errlen, "%s", tp_strerror(rv));
    return rv;
  }
  const tp_mpi_peer *p = tp_mpi_peer_info(r->mpi, rank);
  for (uint64_t i = 0; i < h.n_records; i++) {
    tp_record *rec = &L->recs[L->n_planned++];
    *rec = recs[i];
    tp_dist_shift_record(rec, p->offset_ns);
    rec->rank = rank;
    write_merged_record(r, rec);
  }
  free(recs);
  tp_rank_info *ri = &r->rank_info[r->cur_level * r->n_ranks + rank];
  ri->concurrency = h.slots;
  ri->requests = h.n_records;
  ri->max_in_flight = h.max_in_flight;
  r->rank_in[rank] = true;
  return 0;
}

/* The end of a level: another rank sends its records and lets go of them;
 * rank 0 gathers every live rank's. */
int tpr_dist_level_end(tp_run *r, size_t li, char *err, size_t errlen) {
  level_state *L = &r->lv;
  if (r->rank != 0) {
    tp_buf b;
    tp_buf_init(&b);
    tp_dist_level_head h = {(uint32_t)li, L->slots, L->max_in_flight, L->n_planned};
    int rv = tp_dist_pack_level(&b, &h, L->recs, L->n_planned);
    if (rv)
      tp_seterr(err, errlen, "cannot pack the level's records: %s", tp_strerror(rv));
    else
      rv = tp_mpi_level_end(r->mpi, (uint32_t)li, b.data, b.len, NULL, NULL, err, errlen);
    tp_buf_fini(&b);
    for (size_t i = 0; i < L->n_planned; i++) tp_record_fini(&L->recs[i]);
    L->n_planned = 0;
    free(L->offsets);
    L->offsets = NULL;
    return rv;
  }
  memset(r->rank_in, 0, r->n_ranks * sizeof(*r->rank_in));
  r->rank_in[0] = true;
  tp_rank_info *ri = &r->rank_info[li * r->n_ranks];
  ri->concurrency = L->slots;
  ri->requests = L->n_planned;
  ri->max_in_flight = L->max_in_flight;
  return tp_mpi_level_end(r->mpi, (uint32_t)li, NULL, 0, dist_take, r, err, errlen);
}

/* Rank 0: who measured the level, how their clocks stood, who failed. */
static void dist_fill_level(tp_run *r, size_t li, tp_level_result *lv) {
  tp_rank_info *ri = &r->rank_info[li * r->n_ranks];
  uint32_t reporting = 0, in_flight = 0;
  double unc_us = 0;
  for (uint32_t k = 0; k < r->n_ranks; k++) {
    tp_rank_info *x = &ri[k];
    const tp_mpi_peer *p = tp_mpi_peer_info(r->mpi, k);
    if (!p) continue; /* a build without MPI: never a distributed run */
    x->rank = k;
    snprintf(x->host, sizeof(x->host), "%s", tp_mpi_host(r->mpi, k));
    x->ok = r->rank_in[k];
    x->clock_offset_us = k ? (double)p->offset_ns / 1e3 : 0;
    x->clock_uncertainty_us = k ? (double)p->uncertainty_ns / 1e3 : 0;
    if (x->ok) {
      reporting++;
      in_flight += x->max_in_flight;
      unc_us = TP_MAX(unc_us, x->clock_uncertainty_us);
      x->failure[0] = 0;
      continue;
    }
    /* The share it should have carried, so the report says what is missing. */
    x->concurrency = r->lv.pt.concurrency ? tp_dist_share(r->lv.pt.concurrency, k, r->n_ranks) : 0;
    if (!p->failed)
      snprintf(x->failure, sizeof(x->failure), "its records of the level did not arrive");
    else if (p->failed_level == UINT32_MAX)
      snprintf(x->failure, sizeof(x->failure), "could not start: %s", p->reason);
    else if (p->failed_level < li)
      snprintf(x->failure, sizeof(x->failure), "out since level %u: %s", p->failed_level + 1, p->reason);
    else
      snprintf(x->failure, sizeof(x->failure), "%s", p->reason);
  }
  lv->ranks = r->n_ranks;
  lv->ranks_reporting = reporting;
  lv->incomplete = reporting < r->n_ranks;
  lv->clock_uncertainty_us = unc_us;
  lv->rank_info = ri;
  /* Each rank's highest count, summed: what the ranks could have had in
   * flight together. */
  lv->max_in_flight = in_flight;
}

/* Before anything else: MPI, when a launcher started this process, and
 * the options a distributed run cannot honour (every rank has the same
 * options, so every rank stops alike). */
int tpr_dist_open(tp_run *r, char *err, size_t errlen) {
  if (!tp_mpi_launched()) return 0;
  uint64_t timeout_ms = r->cfg.dist.mpi_timeout_ms ? r->cfg.dist.mpi_timeout_ms : 20000;
  int rv = tp_mpi_new(&r->mpi, timeout_ms * TP_NS_PER_MS, err, errlen);
  if (rv) return rv;
  r->rank = tp_mpi_rank(r->mpi);
  r->n_ranks = tp_mpi_size(r->mpi);
  if (r->rank)
    snprintf(r->rank_tag, sizeof(r->rank_tag), "rank %u on %s: ", r->rank, tp_mpi_host(r->mpi, r->rank));
  const char *why = NULL;
  char buf[512];
  if (r->cfg.measure.measure_mode == TP_MEASURE_TIME_WINDOWS ||
      r->cfg.measure.measure_mode == TP_MEASURE_COUNT_WINDOWS) {
    why =
        "the stability windows (measure.measurement_interval_ms, measure.measurement_mode) are not available "
        "under MPI: each rank would judge stability alone; use measure.request_count or measure.duration_ms";
  } else if (r->mock_cfg && r->n_ranks > 1) {
    why = "--mock runs the server inside one process, which ranks on other hosts cannot reach; start one "
          "'tokperf mock --host ADDR' and give every rank -u ADDR:PORT (docs/scale-out.md)";
  } else if (r->cfg.load.max_concurrency && r->cfg.load.max_concurrency < r->n_ranks) {
    snprintf(buf, sizeof(buf),
             "load.max_concurrency %u is below the %u ranks: each rank needs at least one slot",
             r->cfg.load.max_concurrency, r->n_ranks);
    why = buf;
  }
  if (why) {
    tp_seterr(err, errlen, "%s%s", r->rank_tag, why);
    return TP_EINVAL;
  }
  r->rank_info = calloc(r->n_points * r->n_ranks, sizeof(*r->rank_info));
  r->rank_in = calloc(r->n_ranks, sizeof(*r->rank_in));
  if (!r->rank_info || !r->rank_in) return TP_ENOMEM;
  if (r->rank != 0) {
    /* Rank 0 alone reports, writes artifacts and reads the server's own
     * figures; the others are quiet but for their errors. */
    r->cfg.output.progress = NULL;
    r->cfg.artifacts.no_artifacts = true;
    r->cfg.output.records_path = NULL;
    r->cfg.server.metrics_url = NULL;
    r->cfg.server.gpu_metrics_url = NULL;
    r->cfg.server.no_server_stats = true;
  }
  uv_timer_init(&r->loop, &r->mpi_timer);
  r->mpi_timer.data = r;
  return 0;
}

/* After start-up: every rank tells rank 0 whether it could start.  One that
 * could not says why on its own stderr and sits the run out (DIST_OUT);
 * rank 0 reports it and goes on with the others.  When rank 0 itself could
 * not start, the others are told and stop quietly, and rank 0 returns its
 * error. */
int tpr_dist_start(tp_run *r, int status, char *err, size_t errlen) {
  char why[TP_MPI_REASON_LEN];
  snprintf(why, sizeof(why), "%s", status ? (err[0] ? err : tp_strerror(status)) : "");
  int rv = tp_mpi_start(r->mpi, status, why, err, errlen);
  if (r->rank == 0) return status;
  if (rv == 0) return 0;
  if (status)
    fprintf(stderr, "tokperf: %s%s (rank 0 reports it and goes on without this rank)\n", r->rank_tag, why);
  return DIST_OUT;
}

/* Another rank whose level failed: unless rank 0 simply ended the run, it
 * says why here and to rank 0, which reports it and goes on. */
int tpr_dist_leave(tp_run *r, int rv, char *err, size_t errlen) {
  if (rv == TP_ECANCELED) return 0;
  if (rv == TP_ECONNECT) {
    char msg[1024];
    snprintf(msg, sizeof(msg), "%s%s", r->rank_tag, err);
    tp_seterr(err, errlen, "%s", msg);
    return rv;
  }
  fprintf(stderr, "tokperf: %s%s\n", r->rank_tag, err);
  tp_mpi_fail(r->mpi, err);
  return 0;
}

/* ---- the hooks around a level ----------------------------------------------- */

static int stats_begin(tp_run *r, size_t li, char *err, size_t errlen) {
  r->stats_gen++;
  stats_read_before(r);
  return 0;
}

/* A snapshot asked for while the level runs. */
typedef struct resnap {
  tp_run *r;
  uint32_t gen;
} resnap;

static void resnap_done(void *ud, int rv, tp_triton_model_counters *counters, size_t n, const char *err) {
  resnap *x = ud;
  tp_run *r = x->r;
  if (rv == 0 && x->gen == r->stats_gen && r->stats_before) {
    free(r->stats_before);
    r->stats_before = counters;
    r->n_stats_before = n;
  } else {
    free(counters);
    if (rv) tpr_warn(r, "server statistics at the end of the warm-up: %s; the level's cover its warm-up", err);
  }
  free(x);
}

/* The warm-up is over (every warm-up request ended and a measured one was
 * planned): the counters are read again, so the level's statistics cover
 * the measured requests only, as perf_analyzer's cover its measurement.
 * A measured request that ends before the snapshot reaches the server is
 * left out, one still running counts: the boundary is as sharp as the
 * server's own counters allow. */
static void maybe_resnap(tp_run *r) {
  level_state *L = &r->lv;
  if (L->stats_resnap || !L->measured_planned || L->warmup_left || !stats_wanted(r) || !r->stats_before) return;
  L->stats_resnap = true;
  if (!L->n_warmup && !L->warmup_end_ns) return; /* no warm-up: the level's start is the snapshot */
  resnap *x = malloc(sizeof(*x));
  if (!x) return;
  *x = (resnap){r, r->stats_gen};
  if (tp_client_model_stats_start(r->client, resnap_done, x)) free(x);
}

void tpr_stats_planned(tp_run *r, const tp_record *rec) {
  level_state *L = &r->lv;
  if (rec->warmup)
    L->warmup_left++;
  else
    L->measured_planned = true;
  maybe_resnap(r);
}

void tpr_stats_done(tp_run *r, const tp_record *rec) {
  level_state *L = &r->lv;
  if (rec->warmup && L->warmup_left) L->warmup_left--;
  maybe_resnap(r);
}

static int scrape_open(tp_run *r, char *err, size_t errlen) {
  const char *gpu = r->cfg.server.gpu_metrics_url;
  if (gpu && strncmp(gpu, "http://", 7) != 0 && strncmp(gpu, "https://", 8) != 0) {
    tp_seterr(err, errlen,
              "server.gpu_metrics_url '%s': expected an http:// or https:// URL (DCGM exporter: "
              "http://HOST:9400/metrics)",
              gpu);
    return TP_EINVAL;
  }
  if (gpu) {
    snprintf(r->gpu_metrics_url, sizeof(r->gpu_metrics_url), "%s", gpu);
    int rv = tp_scraper_new(&r->gpu_scraper, &r->loop, r->gpu_metrics_url, r->cfg.server.metrics_interval_ms,
                            &r->cfg, err, errlen);
    if (rv) return rv;
  }
  if (!r->cfg.server.metrics_url) return 0;
  snprintf(r->metrics_url, sizeof(r->metrics_url), "%s", r->cfg.server.metrics_url);
  return tp_scraper_new(&r->scraper, &r->loop, r->metrics_url, r->cfg.server.metrics_interval_ms, &r->cfg,
                        err, errlen);
}

static int scrape_begin(tp_run *r, size_t li, char *err, size_t errlen) {
  if (r->scraper) tp_scraper_level_start(r->scraper);
  if (r->gpu_scraper) tp_scraper_level_start(r->gpu_scraper);
  return 0;
}

/* A scrape still on the wire belongs to the level: let it land. */
static void scrape_stop(tp_run *r) {
  while ((r->scraper && tp_scraper_busy(r->scraper)) || (r->gpu_scraper && tp_scraper_busy(r->gpu_scraper)))
    uv_run(&r->loop, UV_RUN_ONCE);
}

static void scrape_end(tp_run *r, size_t li, tp_level_result *lv) {
  if (!r->scraper && !r->gpu_scraper) return;
  size_t nm;
  if (r->scraper) tp_scraper_level_end(r->scraper, lv, &r->server_metrics[li], &nm);
  if (r->gpu_scraper) tp_scraper_level_end_more(r->gpu_scraper, lv, &r->server_metrics[li]);
  /* The series on the clock of the level's records (docs/metrics.md,
   * "Time series"); without memory the level keeps its summary. */
  tp_scraper *const sc[2] = {r->scraper, r->gpu_scraper};
  tp_server_series *ss = NULL;
  size_t n = 0;
  if (tp_scraper_series(sc, 2, r->lv.t0, &ss, &n) == 0) {
    lv->server_series = ss;
    lv->n_server_series = n;
  }
}

/* This rank's part of the level, then every rank starts at one instant of
 * rank 0's clock. */
static int mpi_begin(tp_run *r, size_t li, char *err, size_t errlen) {
  if (!r->mpi) return 0;
  dist_split_level(r, &r->points[li]);
  int rv = tp_mpi_level_begin(r->mpi, (uint32_t)li, &r->lv.t0, err, errlen);
  if (rv) return rv;
  uv_timer_start(&r->mpi_timer, on_mpi_timer, 100, 100);
  return 0;
}

static void mpi_stop(tp_run *r) {
  if (r->mpi) uv_timer_stop(&r->mpi_timer);
}

static void mpi_end(tp_run *r, size_t li, tp_level_result *lv) {
  if (r->mpi) dist_fill_level(r, li, lv);
}

static int artifacts_open(tp_run *r, char *err, size_t errlen) {
  if (r->cfg.artifacts.no_artifacts) return 0;
  tpr_artifact_dir_name(&r->cfg, r->artifact_dir, sizeof(r->artifact_dir));
  struct timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  tp_artifacts_opts ao;
  memset(&ao, 0, sizeof(ao));
  ao.dir = r->artifact_dir;
  ao.profile_export_file = r->cfg.artifacts.profile_export_file;
  ao.cfg = &r->cfg;
  /* One anchor pair: wall time = anchor + (monotonic - its anchor). */
  ao.anchor_mono_ns = tp_now_ns();
  ao.anchor_wall_ns = (uint64_t)wall.tv_sec * TP_NS_PER_S + (uint64_t)wall.tv_nsec;
  ao.html = !r->cfg.artifacts.no_html;
  int rv = tp_artifacts_open(&r->artifacts, &ao, err, errlen);
  if (rv) return rv == TP_ENOMEM ? rv : TP_EIO;
  tp_artifacts_set_mock(r->artifacts, r->mock_cfg != NULL);
  if (!r->cfg.output.records_path) {
    snprintf(r->records_default, sizeof(r->records_default), "%s/records.jsonl", r->artifact_dir);
    r->cfg.output.records_path = r->records_default;
  }
  return 0;
}

/* The level's requests as the exports see them: the prompt, the text put
 * before it, the reference; markers holds the --cache-bust markers. */
static void export_requests(tp_run *r, tp_export_request *reqs, char (*markers)[24], tp_records_reader *from) {
  level_state *L = &r->lv;
  for (size_t i = 0; i < L->n_planned; i++) {
    const tp_prompt *p = &L->ds->items[L->recs[i].prompt_index];
    reqs[i].rec = &L->recs[i];
    reqs[i].prompt = p->text;
    reqs[i].prompt_len = p->text_len;
    char scratch[24];
    tpr_sent_head(r, i, markers ? markers[i] : scratch, reqs[i].head, reqs[i].head_len);
    reqs[i].reference = p->reference;
    reqs[i].max_tokens = L->recs[i].max_tokens;
    reqs[i].from = from;
  }
}

/* The level's files.  Between levels nothing is in flight, so files
 * written here delay no timestamp. */
static void artifacts_end(tp_run *r, size_t li, tp_level_result *lv) {
  level_state *L = &r->lv;
  if (!r->artifacts) return;
  tp_records_reader *from = NULL;
  if (L->n_shed) {
    /* The shed records' response times and text are read back from their
     * lines (flushed already; the merged ones of other ranks are not shed). */
    char rerr[600];
    tpr_records_flush(r);
    if (tp_records_reader_open(&from, r->cfg.output.records_path, rerr, sizeof(rerr)))
      tpr_warn(r, "the level's exports lack response times and text: %s", rerr);
  }
  if (from || !L->n_shed) {
    tp_export_request *reqs = calloc(L->n_planned ? L->n_planned : 1, sizeof(*reqs));
    /* The exports give the text sent: the markers are kept for them. */
    char(*markers)[24] = r->cfg.prompts.cache_bust ? calloc(L->n_planned ? L->n_planned : 1, 24) : NULL;
    if (reqs && (markers || !r->cfg.prompts.cache_bust)) {
      export_requests(r, reqs, markers, from);
      tp_export_level el = {lv, reqs, L->n_planned, L->lo.window_start_ns, L->lo.window_end_ns, r->id_prefix};
      tp_accuracy acc;
      memset(&acc, 0, sizeof(acc));
      char aerr[512];
      if (tp_artifacts_add_level(r->artifacts, &el, &acc, aerr, sizeof(aerr)))
        tpr_output_failed(r, "cannot write the level's artifacts: %s", aerr);
      lv->accuracy_scored = acc.scored;
      lv->exact_match_rate = acc.exact_match_rate;
      lv->rouge_l_f1 = acc.rouge_l_f1;
    }
    free(reqs);
    free(markers);
  }
  tp_records_reader_free(from);
}

/* vLLM's per-request arrays of the level, for `tokperf vllm-bench`'s result
 * file (tp_output_config.vllm_requests). */
static void vllm_requests_end(tp_run *r, size_t li, tp_level_result *lv) {
  (void)li;
  level_state *L = &r->lv;
  if (!r->cfg.output.vllm_requests) return;
  tp_records_reader *from = NULL;
  char rerr[600];
  if (L->n_shed) {
    tpr_records_flush(r);
    if (tp_records_reader_open(&from, r->cfg.output.records_path, rerr, sizeof(rerr))) {
      tpr_warn(r, "vLLM's per-request arrays are not written: %s", rerr);
      return;
    }
  }
  tp_export_request *reqs = calloc(L->n_planned ? L->n_planned : 1, sizeof(*reqs));
  char *text = NULL;
  int rv = TP_ENOMEM;
  if (reqs) {
    export_requests(r, reqs, NULL, from);
    tp_export_level el = {lv, reqs, L->n_planned, L->lo.window_start_ns, L->lo.window_end_ns, r->id_prefix};
    rv = tp_export_vllm_requests(&el, lv->load_mode == TP_LOAD_RATE, &text);
  }
  if (rv)
    tpr_warn(r, "vLLM's per-request arrays are not written: %s",
             from && tp_records_reader_error(from) ? tp_records_reader_error(from) : "out of memory");
  free((void *)lv->vllm_requests);
  lv->vllm_requests = text;
  free(reqs);
  tp_records_reader_free(from);
}

/* ------------------------------------------------------------------------ */
/* Live metrics (--metrics-port, docs/metrics.md "Live metrics")            */

/* A scrape, on the loop: the counters and what the level says now. */
static int live_render(void *ctx, tp_buf *out) {
  tp_run *r = ctx;
  const level_state *L = &r->lv;
  tp_live_state st;
  memset(&st, 0, sizeof(st));
  st.level = r->live_level;
  st.levels = (uint32_t)r->n_points;
  st.verdict = r->live_verdict;
  st.reads = tp_stamp_reads(&r->loop);
  st.loop_cpu_s = (double)tpr_cpu_ns(RUSAGE_THREAD) / 1e9;
  st.process_cpu_s = (double)tpr_cpu_ns(RUSAGE_SELF) / 1e9;
  if (st.level) {
    st.mode = L->pt.mode;
    st.concurrency = L->pt.mode == TP_LOAD_CONCURRENCY ? L->pt.concurrency : r->cfg.load.max_concurrency;
    st.rate = L->pt.mode == TP_LOAD_RATE ? L->pt.rate : 0;
    st.in_flight = L->in_flight;
    st.max_in_flight = L->max_in_flight;
    st.level_elapsed_s = L->t0 ? (double)(tp_now_ns() - L->t0) / 1e9 : 0;
  }
  return tp_live_render(r->live, &st, out);
}

/* Rank 0 serves its own requests' counters (a distributed run's other
 * ranks serve none: one port per host would clash). */
static int live_open(tp_run *r, char *err, size_t errlen) {
  r->live_verdict = -1;
  if (!r->cfg.output.metrics_port || r->rank != 0) return 0;
  r->live = tp_live_new();
  if (!r->live) return TP_ENOMEM;
  const char *host = r->cfg.output.metrics_host && *r->cfg.output.metrics_host ? r->cfg.output.metrics_host
                                                                                 : "127.0.0.1";
  int rv = tp_live_server_start(&r->live_srv, &r->loop, host, r->cfg.output.metrics_port, live_render, r, err,
                                errlen);
  if (rv) return rv;
  tpr_progress(r, "live metrics at http://%s%s%s:%u/metrics", strchr(host, ':') ? "[" : "", host,
               strchr(host, ':') ? "]" : "", r->cfg.output.metrics_port);
  return 0;
}

static int live_begin(tp_run *r, size_t li, char *err, size_t errlen) {
  (void)err;
  (void)errlen;
  r->live_level = (uint32_t)li + 1;
  return 0;
}

static void live_end(tp_run *r, size_t li, tp_level_result *lv) {
  (void)li;
  r->live_verdict = (int)lv->fidelity.verdict;
}

static void on_hold_over(uv_timer_t *t) { *(bool *)t->data = true; }

void tpr_live_hold(tp_run *r) {
  if (!r->live_srv || !r->cfg.output.metrics_hold_ms || r->interrupted) return;
  tpr_progress(r, "serving the live metrics for %.1f s more (--metrics-hold; Ctrl-C ends it)",
               (double)r->cfg.output.metrics_hold_ms / 1e3);
  uv_timer_t t;
  bool over = false;
  uv_timer_init(&r->loop, &t);
  t.data = &over;
  uv_timer_start(&t, on_hold_over, r->cfg.output.metrics_hold_ms, 0);
  /* One turn at a time: an interruption (its async handle) wakes the
   * loop too. */
  while (!over && !r->interrupted) uv_run(&r->loop, UV_RUN_ONCE);
  uv_close((uv_handle_t *)&t, NULL);
  uv_run(&r->loop, UV_RUN_NOWAIT);
}

/* The hooks, walked in this order at each step: at start-up (open), before
 * the level's first request (begin; MPI last, as it starts the clock),
 * when the loop stopped (stop) and once the level's figures are computed
 * (end; artifacts last, as they write those figures). */
static const tp_level_hook hooks[] = {
    {"server statistics", NULL, stats_begin, NULL, stats_read_after},
    {"scraping", scrape_open, scrape_begin, scrape_stop, scrape_end},
    {"MPI", NULL, mpi_begin, mpi_stop, mpi_end},
    {"live metrics", live_open, live_begin, NULL, live_end},
    {"artifacts", artifacts_open, NULL, NULL, artifacts_end},
    {"vLLM requests", NULL, NULL, NULL, vllm_requests_end},
};

int tpr_hooks_open(tp_run *r, char *err, size_t errlen) {
  for (size_t i = 0; i < TP_ARRAY_LEN(hooks); i++) {
    int rv = hooks[i].open ? hooks[i].open(r, err, errlen) : 0;
    if (rv) return rv;
  }
  return 0;
}

int tpr_hooks_begin(tp_run *r, size_t li, char *err, size_t errlen) {
  for (size_t i = 0; i < TP_ARRAY_LEN(hooks); i++) {
    int rv = hooks[i].begin ? hooks[i].begin(r, li, err, errlen) : 0;
    if (rv) return rv;
  }
  return 0;
}

void tpr_hooks_stop(tp_run *r) {
  for (size_t i = 0; i < TP_ARRAY_LEN(hooks); i++)
    if (hooks[i].stop) hooks[i].stop(r);
}

void tpr_hooks_end(tp_run *r, size_t li, tp_level_result *lv) {
  for (size_t i = 0; i < TP_ARRAY_LEN(hooks); i++)
    if (hooks[i].end) hooks[i].end(r, li, lv);
}

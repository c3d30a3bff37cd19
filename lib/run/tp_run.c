/* A run: the sweep of points (concurrency or rate, times input and output
 * lengths), each measured as one level.
 *
 * Within a level, requests are *planned* (given a send time) and then
 * *sent*.  In concurrency mode a request is planned when a slot frees and
 * sent at once, so exactly N are in flight.  In rate and schedule mode the
 * plan comes from an arrival schedule drawn ahead from the seed, released by
 * precise timers; a request that finds the in-flight cap full waits, and its
 * wait shows as send lag.  Measurement picks the measured requests: a count
 * after the warm-up, those planned within a duration, or perf_analyzer's
 * stability windows.  Token counting runs on libuv's thread pool, so it
 * never delays a timestamp; each finished request is then written to the
 * records file at once. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <uv.h>

#include "api/tp_openai.h"
#include "api/tp_triton.h"
#include "client/tp_client.h"
#include "client/tp_client_http.h"
#include "client/tp_url.h"
#include "dataset/tp_dataset.h"
#include "dataset/tp_synth.h"
#include "metrics/tp_stability.h"
#include "metrics/tp_stats.h"
#include "record/tp_record.h"
#include "report/tp_export.h"
#include "report/tp_records.h"
#include "report/tp_report.h"
#include "run/tp_dist.h"
#include "run/tp_gates.h"
#include "run/tp_sweep_search.h"
#include "run/tp_mpi.h"
#include "run/tp_scrape.h"
#include "sched/tp_sched.h"
#include "tokenizer/tp_tok.h"
#include "util/tp_common.h"
#include "util/tp_files.h"
#include "util/tp_rng.h"
#include "util/tp_stamp.h"
#include "util/tp_timer.h"
#include "util/tp_wake.h"
#include "tokperf/tokperf.h"
#include "run/tp_sessions.h"

#define MAX_RESPONSE_BYTES (64u << 20)
#define DEFAULT_MAX_TOKENS 128
#define MAX_WINDOWS 64
#define PROGRESS_MS 1000
#define LIVE_TTFT_N 1024

/* One point of the sweep. */
typedef struct point {
  tp_load_mode mode;
  uint32_t concurrency; /* the level (concurrency mode) or the cap (0 = none) */
  double rate;
  uint32_t input_tokens;  /* 0 = the run's prompts */
  uint32_t output_tokens; /* 0 = per prompt / default */
} point;

/* One trace entry (schedule mode). */
typedef struct trace_entry {
  uint64_t offset_ns;
  uint32_t prompt_index;
  uint32_t output_tokens; /* 0 = default */
} trace_entry;

/* One per request in flight, allocated on its own so its address stays put
 * while the record array grows. */
typedef struct req_ctx {
  tp_run *run;
  size_t seq;
  bool final_seen;
  bool cumulative;
  bool cancelled;
  void *handle; /* the client's, for cancelling */
} req_ctx;

/* Work on a finished request off the loop: counting its tokens and writing
 * its line to the records file.  The job works on a snapshot of the record
 * (the array may move while the loop plans more requests); the heap buffers
 * the snapshot points at (text, response times) are not touched until the
 * job is back on the loop (count_after), which then lets go of them once
 * the line holds them (tp_record_shed). */
typedef struct count_job {
  uv_work_t work;
  tp_run *run;
  size_t seq;
  const tp_tok *tok;
  tp_record snap;
  char id[96];
  size_t level;
  tp_load_mode mode;
  uint32_t concurrency;
  double rate;
  char *sent_text; /* owned: the full prompt when a marker or prefix was added */
  size_t sent_len;
  uint64_t line_off; /* where its records line went, plus 1; 0 = not written */
  const char *session_id; /* a session's turn: the file's id (borrowed from the dataset) */
  int measured;      /* tp_records_line.measured */
} count_job;

typedef struct level_state {
  point pt;
  tp_dataset *ds;
  tp_record *recs;
  size_t cap;
  size_t n_planned, n_done;
  size_t n_failed; /* of the done ones, failed: kept as they end, for progress */
  size_t total; /* requests to plan (count measurement), SIZE_MAX = until told to stop */
  uint64_t t0;  /* level start */
  /* Open loop: the next planned offsets come from here. */
  tp_rng out_rng;
  uint64_t *offsets;
  size_t n_offsets;
  tp_timer plan_timer;
  size_t *waiting; /* planned but held back by the in-flight cap (FIFO ring) */
  size_t wait_head, wait_len, wait_cap;
  /* Measurement. */
  size_t n_warmup;
  uint64_t warmup_end_ns; /* by time; 0 = by count */
  uint64_t measure_start_ns, measure_end_ns;
  bool stop_planning;
  uint32_t in_flight, max_in_flight;
  size_t pending_counts;
  size_t n_shed; /* records whose response times and text live in the records file only */
  bool done;
  /* Stability windows. */
  bool window_timer_on;
  uint64_t win_start_ns;
  size_t win_done; /* measured completions in the open window */
  double win_tput[MAX_WINDOWS], win_lat_ms[MAX_WINDOWS];
  double win_lat_sum_ms;
  uint64_t win_edges_ns[MAX_WINDOWS + 1];
  uint32_t trials;
  bool stable;
  /* This rank's part of the level (docs/scale-out.md): request numbers are
   * seq_base + index x seq_step, so no two ranks send the same one; slots
   * is its concurrency (or in-flight cap); total_all is the whole level's
   * count, for progress.  One process: 0, 1, the level's own, total. */
  uint32_t slots;
  uint64_t seq_base, seq_step;
  size_t total_all;
  /* Multi-turn sessions (a conversations file, docs/sessions.md): NULL
   * otherwise.  Per request: its turn, and the text it sent (kept for the
   * token count only when a tokenizer counts). */
  tp_sessions *sess;
  tp_sessions_turn *sess_turns;
  char **sess_sent;
  size_t sess_cap;
  size_t sess_total; /* sessions to run (SIZE_MAX = for the duration) */
  tp_buf sess_msgs;
  /* The live status line on a terminal: the level's name, and the time to
   * first token of the latest requests (a ring; its percentiles are taken
   * once a second from a sorted copy). */
  char desc[96];
  size_t index;
  double live_ttft[LIVE_TTFT_N];
  size_t live_n;
} level_state;

struct tp_run {
  tp_config cfg;
  /* Owned copies of the borrowed lists. */
  uint32_t *concurrency;
  double *rates;
  uint32_t *in_means, *out_means;
  uv_loop_t loop;
  uv_async_t interrupt_async;
  atomic_bool interrupt_flag;
  bool interrupted;
  tp_timers *timers;
  uv_timer_t progress_timer;
  uv_timer_t window_timer; /* the run's, so it outlives every level */
  uv_timer_t grace_timer;
  /* Requests done but not yet handed to the pool: processed after the
   * poll phase, once the loop has flushed the requests that refilled their
   * slots (tp_defer: the poll cannot block while some are queued). */
  tp_defer done_defer;
  size_t *done_q;
  size_t done_n, done_cap;
  bool progress_tty;
  uint64_t last_progress_ns;

  char **prefixes;    /* shared prefixes (num_prefixes of prefix_tokens) */
  size_t *prefix_len;
  size_t n_prefixes;
  tp_buf sendbuf;     /* the text actually sent: marker + prefix + prompt */
  tp_dataset ds;      /* prompts from the file or synthetic words */
  tp_dataset syn_ds;  /* exact-token prompts of the current point */
  bool have_syn_ds;
  uint32_t syn_ds_tokens;
  trace_entry *trace;
  size_t n_trace;
  tp_tok *tok;
  char tok_desc[512];
  char ds_desc[512];
  tp_mock *mock;
  bool have_mock_stats;
  tp_mock_stats mock_stats;
  char target[300];
  tp_client *client;
  bool http; /* the client is an HTTP one: its events carry usage and reasoning */
  /* perf_analyzer input data on Triton gRPC: each request carries its
   * entry's tensors as given (docs/inputs.md). */
  bool file_inputs;
  char http_url[1100];
  tp_artifacts *artifacts;
  char artifact_dir[1024];
  char records_default[1100];
  FILE *records_fp;
  uint64_t records_marked_to; /* records file bytes whose "measured" is final */
  bool shed_records; /* the records file can be read back: finished records let go of their details */
  uv_mutex_t records_lock; /* pool threads write record lines */
  tp_gates *gates;
  tp_sweep_search *search; /* --search: the next level comes from the last (NULL = the listed levels) */

  /* Server statistics: the counters before the level, and per level the
   * differences (owned arrays, one per level). */
  tp_triton_model_counters *stats_before;
  size_t n_stats_before;
  bool stats_off;
  tp_server_model_stats **server_stats;
  tp_scraper *scraper;
  tp_server_metric **server_metrics; /* per level, owned */
  char metrics_url[512];

  point *points;
  size_t n_points;
  tp_level_result *levels;
  size_t n_levels;
  level_state lv;
  tp_gap_pool *gaps; /* the level's gaps between text responses (itl_pooled) */
  char id_prefix[48];
  size_t cur_level; /* index of the point being measured */

  /* Distributed run (docs/scale-out.md); mpi is NULL in a single process. */
  tp_mpi *mpi;
  uint32_t rank, n_ranks;
  char rank_tag[128];      /* "rank 1 on host X: " before this rank's messages; "" on rank 0 */
  uv_timer_t mpi_timer;    /* heartbeats and liveness while a level runs */
  tp_rank_info *rank_info; /* rank 0: n_points x n_ranks */
  bool *rank_in;           /* rank 0: whose records of the current level arrived */
};

static void progress(tp_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void progress(tp_run *r, const char *fmt, ...) {
  if (!r->cfg.progress) return;
  va_list ap;
  va_start(ap, fmt);
  if (r->progress_tty) fputs("\r\033[K", r->cfg.progress);
  fputs("tokperf: ", r->cfg.progress);
  vfprintf(r->cfg.progress, fmt, ap);
  fputc('\n', r->cfg.progress);
  fflush(r->cfg.progress);
  va_end(ap);
}

/* Warnings are not progress: --quiet silences progress, never a warning. */
static void warn(tp_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(tp_run *r, const char *fmt, ...) {
  FILE *out = r->cfg.progress ? r->cfg.progress : stderr;
  va_list ap;
  va_start(ap, fmt);
  if (r->progress_tty) fputs("\r\033[K", out);
  fprintf(out, "tokperf: %swarning: ", r->rank_tag);
  vfprintf(out, fmt, ap);
  fputc('\n', out);
  fflush(out);
  va_end(ap);
}

/* ---- construction -------------------------------------------------------- */

/* Chat messages go to /v1/chat/completions as they are; a marker or a
 * shared prefix is put before the prompt text, which for messages would
 * mean rewriting one of them, so the two are not combined. */
static int check_messages_use(tp_run *r, char *err, size_t errlen) {
  if (r->cfg.service_kind != TP_SERVICE_OPENAI_CHAT || !(r->cfg.cache_bust || r->cfg.prefix_tokens)) return 0;
  for (size_t i = 0; i < r->ds.n; i++) {
    if (r->ds.items[i].messages) {
      tp_seterr(err, errlen, "%s: chat \"messages\" lines cannot take --cache-bust or --prefix-tokens "
                "(they rewrite the prompt); use prompt lines, or drop those options",
                r->ds.source);
      return TP_EINVAL;
    }
  }
  return 0;
}

static int validate(const tp_config *c, char *err, size_t errlen) {
  if (c->search && (c->schedule_file || c->n_input_tokens_means > 1 || c->n_output_tokens_means > 1 ||
                    c->num_profile_runs > 1)) {
    tp_seterr(err, errlen, "--search probes one load at a time: it goes without --schedule, lists of token "
                           "lengths and --num-profile-runs");
    return TP_EINVAL;
  }
  if (!c->request_rates || !c->n_request_rates) {
    if (!c->schedule_file && (!c->n_concurrency || !c->concurrency)) {
      tp_seterr(err, errlen, "--concurrency: no levels given; expected a list like 1,4,8");
      return TP_EINVAL;
    }
  }
  for (size_t i = 0; i < c->n_concurrency; i++) {
    if (c->concurrency[i] == 0 || c->concurrency[i] > 100000) {
      tp_seterr(err, errlen, "--concurrency: %u is out of range; expected 1 to 100000", c->concurrency[i]);
      return TP_EINVAL;
    }
  }
  for (size_t i = 0; i < c->n_request_rates; i++) {
    if (!(c->request_rates[i] > 0) || c->request_rates[i] > 1e7) {
      tp_seterr(err, errlen, "--request-rate: %g is out of range; expected above 0, at most 10000000",
                c->request_rates[i]);
      return TP_EINVAL;
    }
  }
  if (c->arrival == TP_ARRIVAL_GAMMA && !(c->burstiness > 0)) {
    tp_seterr(err, errlen, "--burstiness: must be above 0 (1 is Poisson)");
    return TP_EINVAL;
  }
  bool openai = c->service_kind == TP_SERVICE_OPENAI_CHAT || c->service_kind == TP_SERVICE_OPENAI_COMPLETIONS;
  if (!c->model || (!*c->model && !openai)) {
    tp_seterr(err, errlen, "-m/--model: a model name is needed (e.g. -m ensemble)");
    return TP_EINVAL;
  }
  if (!c->mock && (!c->url || !*c->url)) {
    tp_seterr(err, errlen, "-u/--url: a server address is needed (HOST:PORT), or use --mock");
    return TP_EINVAL;
  }
  if (c->backend != TP_BACKEND_TENSORRTLLM && c->backend != TP_BACKEND_VLLM) {
    tp_seterr(err, errlen, "--backend: expected tensorrtllm or vllm");
    return TP_EINVAL;
  }
  if (!c->input_file && (c->num_prompts == 0 || c->synthetic_input_words == 0)) {
    tp_seterr(err, errlen, "synthetic prompts need --num-prompts and --synthetic-input-words above 0");
    return TP_EINVAL;
  }
  if (c->n_input_tokens_means && !c->tokenizer) {
    tp_seterr(err, errlen, "--synthetic-input-tokens-mean needs --tokenizer: prompts are cut to an exact "
              "number of the model's tokens");
    return TP_EINVAL;
  }
  if (c->n_input_tokens_means && c->input_file) {
    tp_seterr(err, errlen, "--synthetic-input-tokens-mean and --input-file exclude each other");
    return TP_EINVAL;
  }
  if ((c->measure_mode == TP_MEASURE_TIME_WINDOWS && c->measurement_interval_ms == 0) ||
      (c->measure_mode == TP_MEASURE_DURATION && c->duration_ms == 0)) {
    tp_seterr(err, errlen, "the measurement window must be longer than 0");
    return TP_EINVAL;
  }
  if (c->prefix_tokens && !c->tokenizer) {
    tp_seterr(err, errlen, "--prefix-tokens needs --tokenizer: the shared prefixes are cut to an exact number "
              "of the model's tokens");
    return TP_EINVAL;
  }
  if (c->tokenizer_add_special_tokens && !c->tokenizer) {
    tp_seterr(err, errlen,
              "--tokenizer-add-special-tokens needs --tokenizer: it says how the tokenizer counts prompts");
    return TP_EINVAL;
  }
  if (c->schedule_file && (c->n_request_rates || c->n_input_tokens_means)) {
    tp_seterr(err, errlen, "--schedule replays its own times and lengths: drop --request-rate and "
              "--synthetic-input-tokens-mean");
    return TP_EINVAL;
  }
  return 0;
}

#define DUP_LIST(dst, src, n, type)                              \
  do {                                                           \
    if ((n) > 0) {                                               \
      (dst) = malloc((n) * sizeof(type));                        \
      if (!(dst)) goto nomem;                                    \
      memcpy((dst), (src), (n) * sizeof(type));                  \
    }                                                            \
  } while (0)

/* The sweep: input lengths outermost, then output lengths, then the load. */
static int make_points(tp_run *r) {
  const tp_config *c = &r->cfg;
  size_t ni = c->n_input_tokens_means ? c->n_input_tokens_means : 1;
  size_t no = c->n_output_tokens_means ? c->n_output_tokens_means : 1;
  size_t nl = c->search ? tp_sweep_search_max_levels(c)
              : c->schedule_file ? 1 : c->n_request_rates ? c->n_request_rates : c->n_concurrency;
  /* --num-profile-runs: each point that many times in a row. */
  size_t nr = c->num_profile_runs > 1 ? c->num_profile_runs : 1;
  r->n_points = ni * no * nl * nr;
  r->points = calloc(r->n_points, sizeof(point));
  if (!r->points) return TP_ENOMEM;
  size_t k = 0;
  for (size_t i = 0; i < ni; i++)
    for (size_t o = 0; o < no; o++)
      for (size_t l = 0; l < nl * nr; l++) {
        point *p = &r->points[k++];
        p->input_tokens = c->n_input_tokens_means ? r->in_means[i] : 0;
        p->output_tokens = c->n_output_tokens_means ? r->out_means[o] : c->output_tokens_mean;
        if (c->schedule_file) {
          p->mode = TP_LOAD_SCHEDULE;
          p->concurrency = c->max_concurrency;
        } else if (c->n_request_rates) {
          p->mode = TP_LOAD_RATE;
          p->rate = r->rates[l / nr];
          p->concurrency = c->max_concurrency;
        } else {
          p->mode = TP_LOAD_CONCURRENCY;
          p->concurrency = c->search ? 0 : r->concurrency[l / nr];
        }
      }
  return 0;
}

/* Reads a trace: one JSON object per line with "timestamp" in ms and either
 * a prompt or an "input_length"; prompts are added to r->ds. */
static int load_schedule(tp_run *r, char *err, size_t errlen);

/* The artifact directory: --artifact-dir, or GenAI-Perf's naming (model,
 * service, backend, mode) under artifacts/. */
static void artifact_dir_name(const tp_config *c, char *out, size_t outlen) {
  if (c->artifact_dir) {
    snprintf(out, outlen, "%s", c->artifact_dir);
    return;
  }
  const char *mode = c->schedule_file ? "schedule" : c->n_request_rates ? "request_rate" : "concurrency";
  snprintf(out, outlen, "artifacts/%s-triton-%s-%s", c->model, c->backend == TP_BACKEND_VLLM ? "vllm" : "tensorrtllm",
           mode);
  for (char *p = out + 10; *p; p++)
    if (*p == '/' || *p == ' ') *p = '_';
}

/* Under mpirun only rank 0 writes results (docs/scale-out.md); the launcher
 * says which rank this process is before MPI is even initialised. */
static bool writes_results(void) {
  const char *rank = getenv("OMPI_COMM_WORLD_RANK");
  if (!rank) rank = getenv("PMIX_RANK");
  return !rank || strcmp(rank, "0") == 0;
}

/* Every file and directory the run will write is checked before anything
 * is sent, so a run never measures for an hour and then fails to write. */
static int check_outputs(const tp_config *c, char *err, size_t errlen) {
  if (!writes_results()) return 0;
  char why[600];
  struct {
    const char *opt, *path;
  } files[] = {{"--json", c->json_path}, {"--records", c->records_path},
               {"--profile-export-file", c->profile_export_file && strchr(c->profile_export_file, '/') && !c->no_artifacts
                                             ? c->profile_export_file
                                             : NULL}};
  for (size_t i = 0; i < TP_ARRAY_LEN(files); i++) {
    if (!files[i].path) continue;
    if (tp_file_check_writable(files[i].path, why, sizeof(why))) {
      tp_seterr(err, errlen, "%s: cannot write '%s': %s (choose a writable path)", files[i].opt, files[i].path,
                why);
      return TP_EINVAL;
    }
  }
  if (!c->no_artifacts) {
    char dir[1024];
    artifact_dir_name(c, dir, sizeof(dir));
    if (tp_dir_check_creatable(dir, why, sizeof(why))) {
      tp_seterr(err, errlen, "%s: cannot write the artifact directory '%s': %s (choose another with "
                "--artifact-dir, or --no-artifacts)", c->artifact_dir ? "--artifact-dir" : "artifacts", dir, why);
      return TP_EINVAL;
    }
  }
  return 0;
}

int tp_run_new(tp_run **out, const tp_config *cfg, char *err, size_t errlen) {
  *out = NULL;
  int rv = validate(cfg, err, errlen);
  if (!rv) rv = check_outputs(cfg, err, errlen);
  if (rv) return rv;
  tp_run *r = calloc(1, sizeof(*r));
  if (!r) return TP_ENOMEM;
  r->cfg = *cfg;
  DUP_LIST(r->concurrency, cfg->concurrency, cfg->n_concurrency, uint32_t);
  DUP_LIST(r->rates, cfg->request_rates, cfg->n_request_rates, double);
  DUP_LIST(r->in_means, cfg->input_tokens_means, cfg->n_input_tokens_means, uint32_t);
  DUP_LIST(r->out_means, cfg->output_tokens_means, cfg->n_output_tokens_means, uint32_t);
  r->cfg.concurrency = r->concurrency;
  r->cfg.request_rates = r->rates;
  r->cfg.input_tokens_means = r->in_means;
  r->cfg.output_tokens_means = r->out_means;
  if (r->cfg.replay_speedup <= 0) r->cfg.replay_speedup = 1;
  if (r->cfg.prefix_block_tokens == 0) r->cfg.prefix_block_tokens = 512;
  if (r->cfg.burstiness <= 0 && r->cfg.arrival != TP_ARRIVAL_GAMMA) r->cfg.burstiness = 1;
  if (r->cfg.measurement_interval_ms == 0) r->cfg.measurement_interval_ms = 10000;
  if (r->cfg.measurement_request_count == 0) r->cfg.measurement_request_count = 50;
  if (r->cfg.stability_percentage <= 0) r->cfg.stability_percentage = 10;
  if (r->cfg.max_trials == 0) r->cfg.max_trials = 10;
  if (r->cfg.max_trials > MAX_WINDOWS) r->cfg.max_trials = MAX_WINDOWS;
  atomic_init(&r->interrupt_flag, false);
  uv_loop_init(&r->loop);
  uv_mutex_init(&r->records_lock);
  /* jansson seeds its hash function lazily; do it here, before any pool
   * thread builds a record line. */
  json_object_seed(0);

  rv = tp_gates_new(&r->gates, cfg->asserts, cfg->n_asserts, err, errlen);
  if (rv) goto fail;
  if (cfg->search) {
    rv = tp_sweep_search_new(&r->search, cfg, err, errlen);
    if (rv) goto fail;
  }
  rv = make_points(r);
  if (rv) goto fail;

  if (cfg->schedule_file) {
    rv = load_schedule(r, err, errlen);
    if (rv) goto fail;
  } else if (cfg->input_file) {
    rv = tp_dataset_load(&r->ds, cfg->input_file, err, errlen);
    if (rv) goto fail;
    rv = check_messages_use(r, err, errlen);
    if (rv) goto fail;
    /* The entry's own tensors go out unless an option must rewrite the
     * prompt or the length, or no metadata gives their datatypes. */
    r->file_inputs = strcmp(r->ds.format, "perf_analyzer") == 0 && cfg->service_kind == TP_SERVICE_TRITON &&
                     !cfg->skip_preflight && !cfg->cache_bust && !cfg->prefix_tokens &&
                     !cfg->output_tokens_deterministic && !cfg->output_tokens_mean && !cfg->n_output_tokens_means;
    if (r->ds.note[0] && !r->file_inputs) warn(r, "%s", r->ds.note);
    if (strcmp(r->ds.format, "jsonl") == 0)
      snprintf(r->ds_desc, sizeof(r->ds_desc), "%s (%zu prompts)", cfg->input_file, r->ds.n);
    else
      snprintf(r->ds_desc, sizeof(r->ds_desc), "%s (%zu prompts, %s)", cfg->input_file, r->ds.n, r->ds.format);
  } else if (!cfg->n_input_tokens_means) {
    rv = tp_dataset_synthetic(&r->ds, cfg->num_prompts, cfg->synthetic_input_words, cfg->random_seed);
    if (rv) {
      tp_seterr(err, errlen, "cannot make synthetic prompts: %s", tp_strerror(rv));
      goto fail;
    }
    snprintf(r->ds_desc, sizeof(r->ds_desc), "synthetic (%zu prompts of %u words, seed %" PRIu64 ")",
             r->ds.n, cfg->synthetic_input_words, cfg->random_seed);
  } else {
    snprintf(r->ds_desc, sizeof(r->ds_desc), "synthetic (%u prompts of exact token length, seed %" PRIu64 ")",
             cfg->num_prompts, cfg->random_seed);
  }
  r->levels = calloc(r->n_points, sizeof(*r->levels));
  r->server_stats = calloc(r->n_points, sizeof(*r->server_stats));
  r->server_metrics = calloc(r->n_points, sizeof(*r->server_metrics));
  if (!r->levels || !r->server_stats || !r->server_metrics) goto nomem;
  *out = r;
  return 0;
nomem:
  rv = TP_ENOMEM;
fail:
  tp_run_free(r);
  return rv;
}

static int load_schedule(tp_run *r, char *err, size_t errlen) {
  const char *path = r->cfg.schedule_file;
  FILE *f = fopen(path, "r");
  if (!f) {
    tp_seterr(err, errlen, "%s: %s (check --schedule)", path, strerror(errno));
    return errno == ENOENT ? TP_ENOTFOUND : TP_EIO;
  }
  size_t cap = 256;
  r->trace = calloc(cap, sizeof(*r->trace));
  r->ds.items = calloc(cap, sizeof(tp_prompt));
  r->ds.source = tp_strndup(path, strlen(path));
  if (!r->trace || !r->ds.items || !r->ds.source) {
    fclose(f);
    return TP_ENOMEM;
  }
  char *line = NULL;
  size_t linecap = 0;
  ssize_t len;
  size_t lineno = 0;
  double first_ms = 0;
  int rv = 0;
  while ((len = getline(&line, &linecap, f)) > 0) {
    lineno++;
    size_t i = 0;
    while (i < (size_t)len && (line[i] == ' ' || line[i] == '\t' || line[i] == '\r' || line[i] == '\n')) i++;
    if (i == (size_t)len) continue;
    json_error_t je;
    json_t *o = json_loadb(line, (size_t)len, 0, &je);
    if (!o || !json_is_object(o)) {
      tp_seterr(err, errlen, "%s:%zu:%d: %s", path, lineno, o ? 1 : je.column,
                o ? "expected a JSON object" : je.text);
      json_decref(o);
      rv = TP_EINVAL;
      break;
    }
    json_t *ts = json_object_get(o, "timestamp");
    if (!json_is_number(ts) || json_number_value(ts) < 0) {
      tp_seterr(err, errlen, "%s:%zu: \"timestamp\" must be a number of milliseconds, 0 or more", path, lineno);
      json_decref(o);
      rv = TP_EINVAL;
      break;
    }
    if (r->n_trace == cap) {
      cap *= 2;
      trace_entry *t = realloc(r->trace, cap * sizeof(*t));
      tp_prompt *p = t ? realloc(r->ds.items, cap * sizeof(*p)) : NULL;
      if (t) r->trace = t;
      if (p) r->ds.items = p;
      if (!t || !p) {
        json_decref(o);
        rv = TP_ENOMEM;
        break;
      }
    }
    double ms = json_number_value(ts);
    if (r->n_trace == 0) first_ms = ms;
    if (ms < first_ms) ms = first_ms;
    trace_entry *e = &r->trace[r->n_trace];
    e->offset_ns = (uint64_t)llround((ms - first_ms) * 1e6 / r->cfg.replay_speedup);
    e->prompt_index = (uint32_t)r->n_trace;
    json_t *ol = json_object_get(o, "output_length");
    e->output_tokens = json_is_integer(ol) && json_integer_value(ol) > 0 ? (uint32_t)json_integer_value(ol) : 0;
    tp_prompt *p = &r->ds.items[r->n_trace];
    memset(p, 0, sizeof(*p));
    p->max_tokens = -1;
    p->input_tokens = -1;
    const char *keys[] = {"text_input", "prompt", "input", "text"};
    for (size_t k = 0; k < 4 && !p->text; k++) {
      json_t *t = json_object_get(o, keys[k]);
      if (json_is_string(t)) {
        p->text = tp_strndup(json_string_value(t), json_string_length(t));
        p->text_len = json_string_length(t);
      }
    }
    if (!p->text) {
      json_t *il = json_object_get(o, "input_length");
      if (!json_is_integer(il) || json_integer_value(il) <= 0) {
        tp_seterr(err, errlen, "%s:%zu: expected a prompt (\"text_input\", \"prompt\", \"input\" or \"text\") "
                  "or a positive \"input_length\"", path, lineno);
        json_decref(o);
        rv = TP_EINVAL;
        break;
      }
      if (!r->cfg.tokenizer) {
        tp_seterr(err, errlen, "%s:%zu: \"input_length\" needs --tokenizer to make prompts of that many tokens",
                  path, lineno);
        json_decref(o);
        rv = TP_EINVAL;
        break;
      }
      /* Filled once the tokenizer is loaded: remember the lengths. */
      p->input_tokens = -2 - json_integer_value(il); /* marker: still to make */
      json_t *h = json_object_get(o, "hash_ids");
      if (json_is_array(h) && json_array_size(h) > 0) {
        /* Kept as "h1,h2,..." in the reference slot until the prompt is made. */
        tp_buf b;
        tp_buf_init(&b);
        size_t idx;
        json_t *v;
        json_array_foreach(h, idx, v) tp_buf_printf(&b, "%s%lld", idx ? "," : "", (long long)json_integer_value(v));
        p->reference = tp_buf_steal(&b, NULL);
      }
    }
    r->ds.n++;
    r->n_trace++;
    json_decref(o);
  }
  free(line);
  fclose(f);
  if (rv == 0 && r->n_trace == 0) {
    tp_seterr(err, errlen, "%s: no requests (the file is empty)", path);
    rv = TP_EINVAL;
  }
  if (rv == 0)
    snprintf(r->ds_desc, sizeof(r->ds_desc), "%s (%zu requests, speed-up %g)", path, r->n_trace,
             r->cfg.replay_speedup);
  return rv;
}

/* Makes the prompts a trace gave only lengths for: shared prefix blocks per
 * hash id (the same id gives the same text), then fresh text for the rest. */
static int make_trace_prompts(tp_run *r, char *err, size_t errlen) {
  for (size_t i = 0; i < r->ds.n; i++) {
    tp_prompt *p = &r->ds.items[i];
    if (p->input_tokens > -2) continue;
    uint32_t want = (uint32_t)(-(p->input_tokens + 2));
    tp_buf b;
    tp_buf_init(&b);
    uint32_t covered = 0;
    if (p->reference) {
      for (char *s = p->reference; *s && covered + r->cfg.prefix_block_tokens <= want;) {
        long long h = strtoll(s, &s, 10);
        if (*s == ',') s++;
        char *t;
        size_t tl;
        int rv = tp_synth_text(r->tok, r->cfg.prefix_block_tokens, tp_rng_mix(r->cfg.random_seed ^ 0x5eed, (uint64_t)h),
                               &t, &tl);
        if (rv) {
          tp_buf_fini(&b);
          tp_seterr(err, errlen, "cannot make a %u-token prefix block: %s", r->cfg.prefix_block_tokens,
                    tp_strerror(rv));
          return rv;
        }
        tp_buf_append(&b, t, tl);
        free(t);
        covered += r->cfg.prefix_block_tokens;
      }
      free(p->reference);
      p->reference = NULL;
    }
    if (covered < want) {
      char *t;
      size_t tl;
      int rv = tp_synth_text(r->tok, want - covered, tp_rng_mix(r->cfg.random_seed, i + 1), &t, &tl);
      if (rv) {
        tp_buf_fini(&b);
        tp_seterr(err, errlen, "cannot make a prompt of %u tokens: %s", want - covered, tp_strerror(rv));
        return rv;
      }
      if (b.len) tp_buf_append(&b, " ", 1);
      tp_buf_append(&b, t, tl);
      free(t);
    }
    p->text = tp_buf_steal(&b, &p->text_len);
    p->input_tokens = -1; /* counted like any prompt */
  }
  return 0;
}

/* ---- requests -------------------------------------------------------------- */

static void send_request(tp_run *r, size_t seq);
static void level_check_done(tp_run *r);

static tp_record *grow_records(tp_run *r) {
  level_state *L = &r->lv;
  if (L->n_planned == L->cap) {
    size_t cap = L->cap ? L->cap * 2 : 256;
    tp_record *nr = realloc(L->recs, cap * sizeof(*nr));
    if (!nr) return NULL;
    L->recs = nr;
    L->cap = cap;
  }
  tp_record *rec = &L->recs[L->n_planned];
  tp_record_init(rec);
  return rec;
}

static uint32_t draw_max_tokens(tp_run *r, const tp_prompt *p, size_t seq) {
  level_state *L = &r->lv;
  if (L->pt.mode == TP_LOAD_SCHEDULE && r->trace[seq % r->n_trace].output_tokens)
    return r->trace[seq % r->n_trace].output_tokens;
  if (L->pt.output_tokens) {
    if (!r->cfg.output_tokens_stddev) return L->pt.output_tokens;
    double d = (double)L->pt.output_tokens + (double)r->cfg.output_tokens_stddev * tp_rng_normal(&L->out_rng);
    return d < 1 ? 1 : (uint32_t)llround(d);
  }
  return p->max_tokens > 0 ? (uint32_t)p->max_tokens : DEFAULT_MAX_TOKENS;
}

/* Plans one request for planned_ns and sends it unless the cap holds it. */
static void open_windows(tp_run *r, uint64_t start_ns);

/* A request is over: counted done, and failed if it failed. */
static inline void note_done(level_state *L, const tp_record *rec) {
  L->n_done++;
  if (rec->err_class != TP_ERRCLASS_NONE) L->n_failed++;
  else if (rec->first_token_ns > rec->sent_ns && rec->sent_ns)
    L->live_ttft[L->live_n++ % LIVE_TTFT_N] = (double)(rec->first_token_ns - rec->sent_ns) / 1e6;
}

static void plan_request(tp_run *r, uint64_t planned_ns) {
  level_state *L = &r->lv;
  /* Past the measured duration nothing more is planned. */
  if (L->measure_end_ns && planned_ns >= L->measure_end_ns) {
    L->stop_planning = true;
    return;
  }
  tp_record *rec = grow_records(r);
  if (!rec) {
    L->stop_planning = true;
    return;
  }
  size_t seq = L->n_planned++;
  /* The request's number across ranks picks its prompt (or trace entry),
   * so no two ranks send the same request; in one process it is seq. */
  uint64_t gseq = L->seq_base + seq * L->seq_step;
  rec->seq = gseq;
  rec->planned_ns = planned_ns;
  rec->prompt_index = L->pt.mode == TP_LOAD_SCHEDULE ? r->trace[gseq % r->n_trace].prompt_index
                                                     : (uint32_t)(gseq % L->ds->n);
  rec->warmup = L->warmup_end_ns ? planned_ns < L->warmup_end_ns : seq < L->n_warmup;
  rec->max_tokens = draw_max_tokens(r, &L->ds->items[rec->prompt_index], (size_t)gseq);
  if (!rec->warmup && !L->measure_start_ns) {
    /* The measurement starts with the first measured request. */
    L->measure_start_ns = planned_ns;
    if (r->cfg.measure_mode == TP_MEASURE_DURATION)
      L->measure_end_ns = planned_ns + r->cfg.duration_ms * TP_NS_PER_MS;
    if (r->cfg.measure_mode == TP_MEASURE_TIME_WINDOWS || r->cfg.measure_mode == TP_MEASURE_COUNT_WINDOWS)
      open_windows(r, planned_ns);
  }
  if (L->total != SIZE_MAX && L->n_planned >= L->total) L->stop_planning = true;

  bool capped = L->pt.mode != TP_LOAD_CONCURRENCY && L->slots && L->in_flight >= L->slots;
  if (!capped) {
    send_request(r, seq);
    return;
  }
  if (L->wait_len == L->wait_cap) {
    size_t cap = L->wait_cap ? L->wait_cap * 2 : 64;
    size_t *w = malloc(cap * sizeof(*w));
    if (!w) {
      tp_record_fail(rec, TP_ERRCLASS_CANCELLED, -1, "out of memory", 13);
      rec->done_ns = planned_ns;
      note_done(L, rec);
      return;
    }
    for (size_t i = 0; i < L->wait_len; i++) w[i] = L->waiting[(L->wait_head + i) % L->wait_cap];
    free(L->waiting);
    L->waiting = w;
    L->wait_head = 0;
    L->wait_cap = cap;
  }
  L->waiting[(L->wait_head + L->wait_len++) % L->wait_cap] = seq;
}

static void build_sent_text(tp_run *r, size_t seq, tp_buf *out);
static void sessions_fill_send(tp_run *r, size_t seq, tp_client_send *snd);
static void sessions_on_done(tp_run *r, size_t seq);
static void sessions_pump(tp_run *r, uint64_t now);
static int sessions_level_start(tp_run *r, char *err, size_t errlen);
static void sessions_level_stats(tp_run *r, tp_level_result *lv);
static void sessions_level_end(tp_run *r);
static void finish_done(tp_run *r, size_t seq);
static void on_done_defer(tp_defer *d);

static void req_on_event(void *req, const tp_client_event *ev, uint64_t arrival_ns) {
  req_ctx *x = req;
  tp_record *rec = &x->run->lv.recs[x->seq];
  if (x->final_seen) return; /* nothing after the final response counts */
  bool has_text = ev->text && ev->text_len > 0;
  tp_record_add_response(rec, arrival_ns, has_text);
  const tp_client_http_event *hev = x->run->http ? tp_client_http_event_of(ev) : NULL;
  /* Reasoning text is a generated token for timing, but kept apart. */
  tp_buf *into = hev && hev->reasoning ? &rec->reasoning : &rec->text;
  if (has_text) {
    if (into == &rec->text && !rec->first_answer_ns) rec->first_answer_ns = arrival_ns;
    if (x->cumulative) tp_buf_reset(into);
    tp_buf_append(into, ev->text, ev->text_len);
  }
  if (hev) {
    if (hev->prompt_tokens >= 0) rec->server_input_tokens = hev->prompt_tokens;
    if (hev->cached_tokens >= 0) rec->server_cached_tokens = hev->cached_tokens;
  }
  if (ev->server_output_tokens >= 0)
    rec->server_output_tokens =
        (rec->server_output_tokens < 0 ? 0 : rec->server_output_tokens) + ev->server_output_tokens;
  if (ev->error) tp_record_fail(rec, ev->error_class, -1, ev->error, strlen(ev->error));
  if (ev->final) {
    x->final_seen = true;
    rec->done_ns = arrival_ns;
    return;
  }
  /* Memory stays bounded under an answer that never ends. */
  const tp_config *c = &x->run->cfg;
  bool too_big = c->max_response_bytes && rec->text.len > c->max_response_bytes;
  bool too_long = c->max_output_tokens && rec->n_text_resp > c->max_output_tokens;
  if ((too_big || too_long) && !x->cancelled && x->run->client->ops->cancel) {
    char msg[160];
    snprintf(msg, sizeof(msg), "answer cancelled: it passed %s (%" PRIu64 ")",
             too_big ? "--max-response-bytes" : "--max-output-tokens",
             too_big ? c->max_response_bytes : c->max_output_tokens);
    tp_record_fail(rec, TP_ERRCLASS_PROTOCOL, -1, msg, strlen(msg));
    x->cancelled = true;
    x->run->client->ops->cancel(x->run->client, x->handle);
  }
}

static void window_on_completion(tp_run *r, tp_record *rec);

/* A request is complete (tokens counted, line written). */
static void finalize(tp_run *r, size_t seq) {
  (void)seq;
  level_check_done(r);
}

/* A prompt's tokens, with the special tokens the model's tokenizer adds
 * (BOS, ...) when tokenizer_add_special_tokens asks for them: that is how
 * most servers count a prompt.  Output and reasoning tokens never include
 * them (tp_tok_count): a server's completion count has no BOS, and an EOS
 * that ends generation is not in the text. */
static int count_input(const tp_run *r, const tp_tok *tok, const char *text, size_t len, size_t *n) {
  return r->cfg.tokenizer_add_special_tokens ? tp_tok_count_special(tok, text, len, n)
                                             : tp_tok_count(tok, text, len, n);
}

/* One line of the records file (any thread: the file has its lock).
 * Returns the line's byte offset plus 1, or 0 when it was not written
 * whole. */
static uint64_t write_record_line(tp_run *r, const count_job *j, bool flush) {
  if (!r->records_fp) return 0;
  tp_records_line l = {j->id, j->level, j->mode, j->concurrency, j->rate, r->mpi != NULL, j->session_id,
                       j->measured};
  char *line = tp_records_format(&j->snap, &l);
  if (!line) return 0;
  uv_mutex_lock(&r->records_lock);
  /* A pipe has no offset (-1): the line is written all the same, only it
   * cannot be read back. */
  off_t at = r->shed_records ? ftello(r->records_fp) : -1;
  bool ok = fputs(line, r->records_fp) >= 0 && fputc('\n', r->records_fp) != EOF;
  if (flush && fflush(r->records_fp)) ok = false;
  uv_mutex_unlock(&r->records_lock);
  free(line);
  return ok && at >= 0 ? (uint64_t)at + 1 : 0;
}

static void count_work(uv_work_t *w) {
  count_job *j = w->data;
  tp_record *rec = &j->snap;
  if (j->tok && j->sent_text) {
    /* Counted whole: a marker or prefix can merge with the prompt's first
     * piece, so the sum of separate counts could be off by one. */
    size_t n = 0;
    if (count_input(j->run, j->tok, j->sent_text, j->sent_len, &n) == 0) rec->input_tokens = (int64_t)n;
  }
  if (j->tok && rec->reasoning.len) {
    size_t n = 0;
    rec->reasoning_tokens =
        tp_tok_count(j->tok, (const char *)rec->reasoning.data, rec->reasoning.len, &n) == 0 ? (int64_t)n : -1;
  }
  if (j->tok) {
    size_t n = 0;
    rec->output_tokens =
        tp_tok_count(j->tok, rec->text.data ? (const char *)rec->text.data : "", rec->text.len, &n) == 0
            ? (int64_t)n
            : -1;
  }
  /* Flushed per request: a crash or a kill loses nothing already measured. */
  j->line_off = write_record_line(j->run, j, true);
}

/* --token-source: output_tokens and input_tokens become the counts the
 * report uses, the server's or the client's; the client's stay in
 * client_*.  A server's completion count includes the reasoning tokens,
 * which the client counts apart: they are taken off when it counted them. */
static void choose_token_counts(const tp_run *r, tp_record *rec) {
  tp_token_source src = r->cfg.token_source;
  rec->client_output_tokens = rec->output_tokens;
  rec->client_input_tokens = rec->input_tokens;
  rec->server_counts = 0;
  if (src == TP_TOKEN_SOURCE_CLIENT) return;
  if (rec->server_output_tokens >= 0) {
    int32_t n = rec->server_output_tokens;
    if (rec->reasoning_tokens > 0 && tp_record_has_reasoning(rec))
      n = n > rec->reasoning_tokens ? n - rec->reasoning_tokens : 0;
    rec->output_tokens = n;
    rec->server_counts |= TP_RECORD_SERVER_OUTPUT;
  } else if (src == TP_TOKEN_SOURCE_SERVER) {
    rec->output_tokens = -1;
  }
  if (rec->server_input_tokens >= 0) {
    rec->input_tokens = rec->server_input_tokens;
    rec->server_counts |= TP_RECORD_SERVER_INPUT;
  } else if (src == TP_TOKEN_SOURCE_SERVER) {
    rec->input_tokens = -1;
  }
}

static void count_after(uv_work_t *w, int status) {
  count_job *j = w->data;
  tp_run *r = j->run;
  if (status == 0 && j->tok) {
    r->lv.recs[j->seq].output_tokens = j->snap.output_tokens;
    r->lv.recs[j->seq].input_tokens = j->snap.input_tokens;
    r->lv.recs[j->seq].reasoning_tokens = j->snap.reasoning_tokens;
  }
  choose_token_counts(r, &r->lv.recs[j->seq]);
  /* Its line holds the response times and the text now: memory keeps only
   * the fixed-size record, and the exports read the rest back.  Text the
   * line cannot give back byte for byte stays here. */
  if (status == 0 && j->line_off && r->shed_records && tp_records_lossless(&j->snap)) {
    tp_record_shed(&r->lv.recs[j->seq], j->line_off - 1);
    r->lv.n_shed++;
  }
  free(j->sent_text);
  r->lv.pending_counts--;
  size_t seq = j->seq;
  free(j);
  finalize(r, seq);
}

/* Whether a request that just ended is measured, as far as is known now:
 * stability windows are chosen at the level's end (mark_measured_lines). */
static int measured_as_written(const tp_run *r, const tp_record *rec) {
  const level_state *L = &r->lv;
  bool windows = r->cfg.measure_mode == TP_MEASURE_TIME_WINDOWS || r->cfg.measure_mode == TP_MEASURE_COUNT_WINDOWS;
  if (rec->warmup || (L->measure_end_ns && rec->planned_ns >= L->measure_end_ns)) return TP_RECORD_UNMEASURED;
  return windows ? TP_RECORD_PENDING : TP_RECORD_MEASURED;
}

/* The level's record of a records-file line, if this process sent it. */
static bool line_measured(void *ctx, uint64_t gseq, uint32_t rank) {
  const tp_run *r = ctx;
  const level_state *L = &r->lv;
  if (rank != (uint32_t)r->rank || gseq < L->seq_base || (gseq - L->seq_base) % L->seq_step) return false;
  uint64_t i = (gseq - L->seq_base) / L->seq_step;
  return i < L->n_planned && L->recs[i].seq == gseq && !L->recs[i].warmup;
}

/* Stability windows: the lines of the level were written before the last
 * three windows were chosen, "measured" false; the chosen ones are set
 * true in place.  Every line of the level is in the file by now (no count
 * is pending at the level's end). */
static void mark_measured_lines(tp_run *r) {
  if (!r->records_fp || !r->cfg.records_path) return;
  char err[600];
  snprintf(err, sizeof(err), "cannot flush the records file %s", r->cfg.records_path);
  if (fflush(r->records_fp) ||
      tp_records_mark_measured(r->cfg.records_path, &r->records_marked_to, r->n_levels, line_measured, r, err,
                               sizeof(err)))
    warn(r, "%s: its lines of this level say \"measured\": false", err);
}

static void finish_done(tp_run *r, size_t seq) {
  level_state *L = &r->lv;
  tp_record *rec = &L->recs[seq];
  /* Its response times are still here (shed once its line is written). */
  if (r->gaps && tp_record_ok(rec) && measured_as_written(r, rec) == TP_RECORD_MEASURED)
    tp_gap_pool_add_record(r->gaps, rec);
  if (r->tok || r->records_fp) {
    count_job *j = calloc(1, sizeof(*j));
    if (j) {
      j->run = r;
      j->seq = seq;
      j->tok = r->tok;
      j->snap = *rec;
      snprintf(j->id, sizeof(j->id), "%s%" PRIu64, r->id_prefix, rec->seq);
      if (rec->session) j->session_id = L->ds->sessions[L->sess_turns[seq].session_index].id;
      j->level = r->n_levels;
      j->mode = L->pt.mode;
      j->concurrency = L->pt.concurrency;
      j->rate = L->pt.rate;
      j->measured = measured_as_written(r, rec);
      if (L->sess) {
        /* A turn sent its whole history: that is its input. */
        j->sent_text = L->sess_sent ? L->sess_sent[seq] : NULL;
        j->sent_len = j->sent_text ? strlen(j->sent_text) : 0;
        if (L->sess_sent) L->sess_sent[seq] = NULL;
      } else if (r->cfg.cache_bust || r->n_prefixes) {
        build_sent_text(r, seq, &r->sendbuf);
        j->sent_text = tp_strndup((const char *)r->sendbuf.data, r->sendbuf.len);
        j->sent_len = r->sendbuf.len;
      }
      j->work.data = j;
      if (uv_queue_work(&r->loop, &j->work, count_work, count_after) == 0) {
        L->pending_counts++;
        /* The windows are fed as the request ends, not once its tokens are
         * counted: a count that finished after its window closed would
         * leave the request out of that window's throughput (and, past
         * the last window, out of every one). The windows need no tokens. */
        window_on_completion(r, rec);
        return;
      }
      free(j->sent_text);
      free(j);
    }
  }
  window_on_completion(r, rec);
  choose_token_counts(r, rec);
  finalize(r, seq);
}

static void on_done_defer(tp_defer *d) {
  tp_run *r = d->data;
  /* The queue counts as pending until every entry is handed on, so the
   * level cannot end half-way through it. */
  for (size_t i = 0; i < r->done_n; i++) finish_done(r, r->done_q[i]);
  r->done_n = 0;
  level_check_done(r);
}

/* The text a request sends: a unique marker first (--cache-bust, so even the
 * first block differs), then a shared prefix (--prefix-tokens), then the
 * prompt.  Rebuilt from the seed when needed, so nothing is stored per
 * request.  sent_head gives the pieces before the prompt: the marker
 * (written into marker) and the prefix with its space; unused pieces are
 * NULL. */
static void sent_head(const tp_run *r, size_t seq, char marker[24], const char *head[3], size_t len[3]) {
  const level_state *L = &r->lv;
  /* The number across ranks, so markers stay unique in a distributed run. */
  uint64_t gseq = L->recs[seq].seq;
  for (int i = 0; i < 3; i++) {
    head[i] = NULL;
    len[i] = 0;
  }
  if (r->cfg.cache_bust) {
    snprintf(marker, 24, "[%016llx] ",
             (unsigned long long)tp_rng_mix(r->cfg.random_seed ^ 0xcb, ((uint64_t)r->cur_level << 40) | gseq));
    head[0] = marker;
    len[0] = strlen(marker);
  }
  if (r->n_prefixes) {
    size_t k = gseq % r->n_prefixes;
    head[1] = r->prefixes[k];
    len[1] = r->prefix_len[k];
    head[2] = " ";
    len[2] = 1;
  }
}

static void build_sent_text(tp_run *r, size_t seq, tp_buf *out) {
  level_state *L = &r->lv;
  const tp_prompt *p = &L->ds->items[L->recs[seq].prompt_index];
  char marker[24];
  const char *head[3];
  size_t len[3];
  sent_head(r, seq, marker, head, len);
  tp_buf_reset(out);
  for (int i = 0; i < 3; i++)
    if (head[i]) tp_buf_append(out, head[i], len[i]);
  tp_buf_append(out, p->text, p->text_len);
}

static void req_on_done(void *req, const tp_client_done *d) {
  req_ctx *x = req;
  tp_run *r = x->run;
  level_state *L = &r->lv;
  size_t seq = x->seq;
  tp_record *rec = &L->recs[seq];
  free(x);
  /* The wire time of the request's last byte is the truest send time. */
  if (d->sent_ns) rec->sent_ns = d->sent_ns;
  rec->resends = d->resends;
  if (d->err_class != TP_ERRCLASS_NONE)
    tp_record_fail(rec, d->err_class, d->status, d->message, strlen(d->message));
  if (!rec->done_ns) rec->done_ns = d->end_ns;
  /* The dataset's count is the prompt's; a marker or prefix in front is
   * counted with it by the tokenizer (count_work), or not at all. */
  rec->input_tokens = r->cfg.cache_bust || r->n_prefixes ? -1 : L->ds->items[rec->prompt_index].input_tokens;
  L->in_flight--;
  note_done(L, rec);

  /* Refill first, so the next request leaves before any bookkeeping. */
  if (L->sess) {
    sessions_on_done(r, seq);
  } else if (!r->interrupted) {
    if (L->pt.mode == TP_LOAD_CONCURRENCY) {
      if (!L->stop_planning) plan_request(r, tp_now_ns());
    } else if (L->wait_len) {
      size_t next = L->waiting[L->wait_head];
      L->wait_head = (L->wait_head + 1) % L->wait_cap;
      L->wait_len--;
      send_request(r, next);
    }
  }

  /* The rest waits for the check phase: the loop flushes the refill first. */
  if (r->done_n == r->done_cap) {
    size_t cap = r->done_cap ? r->done_cap * 2 : 256;
    size_t *q = realloc(r->done_q, cap * sizeof(*q));
    if (!q) {
      finish_done(r, seq);
      return;
    }
    r->done_q = q;
    r->done_cap = cap;
  }
  r->done_q[r->done_n++] = seq;
  /* req_on_done may run in any phase of the loop (libcurl finishes
   * transfers from its timer); tp_defer keeps the poll from blocking. */
  tp_defer_arm(&r->done_defer);
}

static void send_request(tp_run *r, size_t seq) {
  level_state *L = &r->lv;
  tp_record *rec = &L->recs[seq];
  req_ctx *x = calloc(1, sizeof(*x));
  uint64_t now = tp_now_ns();
  if (!x) {
    tp_record_fail(rec, TP_ERRCLASS_CANCELLED, -1, "out of memory", 13);
    rec->done_ns = now;
    note_done(L, rec);
    return;
  }
  x->run = r;
  x->seq = seq;
  x->cumulative = r->cfg.cumulative_text;
  const tp_prompt *p = &L->ds->items[rec->prompt_index];
  char id[96];
  snprintf(id, sizeof(id), "%s%" PRIu64, r->id_prefix, rec->seq);
  uint32_t min_tokens = r->cfg.output_tokens_deterministic ? rec->max_tokens : 0;
  tp_client_send snd = {id, p->text, p->text_len, rec->max_tokens, min_tokens,
                        r->cfg.request_timeout_ms * TP_NS_PER_MS, &x->handle, NULL, NULL};
  if (r->cfg.cache_bust || r->n_prefixes) {
    build_sent_text(r, seq, &r->sendbuf);
    snd.prompt = (const char *)r->sendbuf.data;
    snd.prompt_len = r->sendbuf.len;
  } else if (p->messages && r->cfg.service_kind == TP_SERVICE_OPENAI_CHAT) {
    snd.messages = p->messages; /* the chat messages as the file gave them */
  }
  if (r->file_inputs) snd.inputs = p->inputs;
  if (L->sess) sessions_fill_send(r, seq, &snd);
  rec->sent_ns = now;
  L->in_flight++;
  if (L->in_flight > L->max_in_flight) L->max_in_flight = L->in_flight;
  int rv = r->client->ops->send(r->client, &snd, x);
  if (rv) {
    free(x);
    L->in_flight--;
    tp_record_fail(rec, TP_ERRCLASS_PROTOCOL, -1, "cannot send the request", 23);
    rec->done_ns = now;
    note_done(L, rec);
  }
}

/* ---- open loop ------------------------------------------------------------ */

/* Releases every request whose planned time has come, then re-arms for the
 * next.  Deadlines are absolute, so a late wake-up never shifts the plan. */
static void on_plan_timer(tp_timer *t, uint64_t now_ns) {
  tp_run *r = t->data;
  level_state *L = &r->lv;
  while (!L->stop_planning && !r->interrupted) {
    size_t i = L->n_planned;
    if (i >= L->n_offsets) {
      L->stop_planning = true;
      break;
    }
    uint64_t at = L->t0 + L->offsets[i];
    if (L->measure_end_ns && at >= L->measure_end_ns) {
      L->stop_planning = true;
      break;
    }
    if (at > now_ns) {
      tp_timer_start(r->timers, &L->plan_timer, at);
      return;
    }
    plan_request(r, at);
    now_ns = tp_now_ns();
  }
  level_check_done(r);
}

/* ---- stability windows (perf_analyzer's rule) ------------------------------ */

static void close_window(tp_run *r, uint64_t now);

static void on_window_timer(uv_timer_t *t) { close_window(t->data, tp_now_ns()); }

static void open_windows(tp_run *r, uint64_t start_ns) {
  level_state *L = &r->lv;
  L->win_start_ns = start_ns;
  L->win_edges_ns[0] = start_ns;
  if (r->cfg.measure_mode == TP_MEASURE_TIME_WINDOWS) {
    uv_timer_start(&r->window_timer, on_window_timer, r->cfg.measurement_interval_ms,
                   r->cfg.measurement_interval_ms);
    L->window_timer_on = true;
  }
}

/* A request that ended is counted in the open window, and remembers which:
 * the measured requests are those the last three windows counted, so the
 * windows' throughput and the level's figures are over the same requests
 * (a request whose end was seen a little after its window closed counts
 * in the next one). */
static void window_on_completion(tp_run *r, tp_record *rec) {
  level_state *L = &r->lv;
  bool windows = r->cfg.measure_mode == TP_MEASURE_TIME_WINDOWS || r->cfg.measure_mode == TP_MEASURE_COUNT_WINDOWS;
  if (!windows || !L->win_start_ns || L->stop_planning || rec->warmup) return;
  if (rec->done_ns < L->win_edges_ns[0] || !tp_record_ok(rec)) return;
  rec->window = (uint8_t)(L->trials + 1);
  L->win_done++;
  L->win_lat_sum_ms += (double)(rec->done_ns - rec->sent_ns) / 1e6;
  if (r->cfg.measure_mode == TP_MEASURE_COUNT_WINDOWS && L->win_done >= r->cfg.measurement_request_count)
    close_window(r, tp_now_ns());
}

static void close_window(tp_run *r, uint64_t now) {
  level_state *L = &r->lv;
  if (L->stop_planning || L->trials >= MAX_WINDOWS) return;
  double secs = (double)(now - L->win_start_ns) / 1e9;
  uint32_t k = L->trials++;
  L->win_tput[k] = secs > 0 ? (double)L->win_done / secs : 0;
  L->win_lat_ms[k] = L->win_done ? L->win_lat_sum_ms / (double)L->win_done : 0;
  L->win_edges_ns[k + 1] = now;
  progress(r, "  pass [%u] throughput: %.2f requests/s, avg latency %.2f ms", L->trials, L->win_tput[k],
           L->win_lat_ms[k]);
  L->win_start_ns = now;
  L->win_done = 0;
  L->win_lat_sum_ms = 0;
  L->stable = tp_windows_stable(L->win_tput, L->win_lat_ms, L->trials, r->cfg.stability_percentage);
  if (L->stable || L->trials >= r->cfg.max_trials) {
    L->stop_planning = true;
    if (L->window_timer_on) {
      uv_timer_stop(&r->window_timer);
  uv_timer_stop(&r->grace_timer);
      L->window_timer_on = false;
    }
    if (!L->stable)
      warn(r, "the last three windows never agreed within %g%% in %u trials: reporting the last three anyway",
           r->cfg.stability_percentage, L->trials);
  }
  level_check_done(r);
}

/* ---- level lifecycle -------------------------------------------------------- */

static void level_check_done(tp_run *r) {
  level_state *L = &r->lv;
  if (L->done) return;
  bool planning_over = L->stop_planning || r->interrupted;
  if (planning_over && L->in_flight == 0 && L->pending_counts == 0 && r->done_n == 0 &&
      (L->wait_len == 0 || r->interrupted)) {
    L->done = true;
    uv_stop(&r->loop);
  }
}

static void on_grace(uv_timer_t *t) {
  tp_run *r = t->data;
  if (r->lv.in_flight) {
    warn(r, "grace period over: cancelling %u requests still in flight", r->lv.in_flight);
    r->client->ops->cancel_all(r->client);
  }
}

static void on_interrupt(uv_async_t *a) {
  tp_run *r = a->data;
  if (!atomic_load(&r->interrupt_flag)) return;
  r->interrupted = true;
  /* Rank 0 stops every rank's level with its own. */
  if (r->mpi) tp_mpi_interrupt(r->mpi);
  level_state *L = &r->lv;
  /* Requests held back by the cap were never sent: they are dropped. */
  while (L->wait_len) {
    tp_record *rec = &L->recs[L->waiting[L->wait_head]];
    tp_record_fail(rec, TP_ERRCLASS_CANCELLED, -1, "not sent: the run was interrupted", 33);
    rec->done_ns = tp_now_ns();
    L->wait_head = (L->wait_head + 1) % L->wait_cap;
    L->wait_len--;
    note_done(L, rec);
  }
  tp_timer_stop(r->timers, &L->plan_timer);
  if (L->sess) {
    /* Turns not yet due never leave, and none waiting for the cap either. */
    tp_sessions_stop_at(L->sess, tp_now_ns(), tp_now_ns(), true);
    tp_sessions_drop_waiting(L->sess, tp_now_ns());
    L->stop_planning = true;
  }
  /* In-flight requests get the grace period to finish; then they are
   * cancelled, so a stalled server cannot hold the results hostage. */
  if (L->in_flight && r->client->ops->cancel_all) {
    warn(r, "interrupted: waiting up to %" PRIu64 " ms for %u requests in flight (Ctrl-C again to quit at once)",
         r->cfg.grace_period_ms, L->in_flight);
    uv_timer_start(&r->grace_timer, on_grace, r->cfg.grace_period_ms ? r->cfg.grace_period_ms : 1, 0);
  }
  level_check_done(r);
}

void tp_run_interrupt(tp_run *r) {
  atomic_store(&r->interrupt_flag, true);
  uv_async_send(&r->interrupt_async);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static void on_progress(uv_timer_t *t) {
  tp_run *r = t->data;
  level_state *L = &r->lv;
  uint64_t now = tp_now_ns();
  /* Off a terminal, a line every few seconds is plenty for a log. */
  if (!r->progress_tty && now - r->last_progress_ns < 5 * TP_NS_PER_S) return;
  r->last_progress_ns = now;
  size_t failed = L->n_failed, done = L->n_done, in_flight = L->in_flight;
  if (r->mpi) {
    /* Every rank's counts, from their last heartbeats. */
    tp_mpi_counters o;
    tp_mpi_others(r->mpi, &o);
    done += (size_t)o.done;
    failed += (size_t)o.failed;
    in_flight += (size_t)o.in_flight;
  }
  double secs = (double)(now - L->t0) / 1e9;
  char total[32] = "";
  if (L->total_all != SIZE_MAX) snprintf(total, sizeof(total), " of %zu", L->total_all);
  double rate = secs > 0 ? (double)done / secs : 0;
  if (!r->progress_tty) {
    fprintf(r->cfg.progress, "tokperf: %s%zu%s done, %zu in flight, %.1f requests/s, %zu failed, %.0f s\n",
            r->id_prefix, done, total, in_flight, rate, failed, secs);
    fflush(r->cfg.progress);
    return;
  }
  /* On a terminal, one status line redrawn in place: which level of how
   * many, in the user's words, how far, how fast, how the latest requests
   * fare, and about how long is left. */
  char ttft[64] = "";
  size_t n = L->live_n < LIVE_TTFT_N ? L->live_n : LIVE_TTFT_N;
  if (n) {
    double v[LIVE_TTFT_N];
    memcpy(v, L->live_ttft, n * sizeof(double));
    qsort(v, n, sizeof(double), cmp_double);
    snprintf(ttft, sizeof(ttft), ", TTFT p50 %.1f p99 %.1f ms", v[(n - 1) / 2], v[(size_t)((double)(n - 1) * 0.99)]);
  }
  char left[32] = "";
  if (L->total_all != SIZE_MAX && rate > 0 && L->total_all > done)
    snprintf(left, sizeof(left), ", ~%.0f s left", (double)(L->total_all - done) / rate);
  fprintf(r->cfg.progress,
          "\r\033[Ktokperf: level %zu/%zu %s: %zu%s done, %zu in flight, %zu failed, %.1f requests/s%s, %.0f s%s",
          L->index + 1, r->n_points, L->desc, done, total, in_flight, failed, rate, ttft, secs, left);
  fflush(r->cfg.progress);
}

static int prepare_point_prompts(tp_run *r, const point *pt, char *err, size_t errlen) {
  if (!pt->input_tokens) {
    r->lv.ds = &r->ds;
    return 0;
  }
  if (r->have_syn_ds && r->syn_ds_tokens == pt->input_tokens) {
    r->lv.ds = &r->syn_ds;
    return 0;
  }
  if (r->have_syn_ds) tp_dataset_free(&r->syn_ds);
  r->have_syn_ds = false;
  progress(r, "making %u prompts of %u tokens (stddev %u)", r->cfg.num_prompts, pt->input_tokens,
           r->cfg.input_tokens_stddev);
  int rv = tp_synth_prompts(&r->syn_ds, r->tok, r->cfg.num_prompts, pt->input_tokens, r->cfg.input_tokens_stddev,
                            tp_rng_mix(r->cfg.random_seed, pt->input_tokens), err, errlen);
  if (rv) {
    tp_dataset_free(&r->syn_ds);
    return rv;
  }
  /* The drawn lengths are the text's own tokens; with special tokens the
   * prompts are counted again, like any prompt, so BOS and the like are in. */
  if (r->cfg.tokenizer_add_special_tokens)
    for (size_t i = 0; i < r->syn_ds.n; i++) r->syn_ds.items[i].input_tokens = -1;
  r->have_syn_ds = true;
  r->syn_ds_tokens = pt->input_tokens;
  r->lv.ds = &r->syn_ds;
  return 0;
}

/* Input tokens are counted once per prompt, before the level, when nothing
 * is in flight. */
static void count_prompts(tp_run *r, tp_dataset *ds) {
  if (!r->tok) return;
  for (size_t i = 0; i < ds->n; i++) {
    tp_prompt *p = &ds->items[i];
    size_t n = 0;
    if (p->input_tokens < 0 && count_input(r, r->tok, p->text, p->text_len, &n) == 0)
      p->input_tokens = (int64_t)n;
    /* ShareGPT: ask for as many tokens as the recorded answer had, as
     * vLLM's benchmark does (counted like output: no special tokens). */
    if (ds->max_tokens_from_reference && p->max_tokens < 0 && p->reference &&
        tp_tok_count(r->tok, p->reference, strlen(p->reference), &n) == 0)
      p->max_tokens = n ? (int64_t)n : 1;
  }
}

static void describe_point(const point *pt, char *buf, size_t len) {
  int n;
  if (pt->mode == TP_LOAD_CONCURRENCY)
    n = snprintf(buf, len, "concurrency %u", pt->concurrency);
  else if (pt->mode == TP_LOAD_RATE)
    n = snprintf(buf, len, "rate %g/s", pt->rate);
  else
    n = snprintf(buf, len, "schedule");
  if (pt->input_tokens && n > 0 && (size_t)n < len) n += snprintf(buf + n, len - (size_t)n, ", input %u", pt->input_tokens);
  if (pt->output_tokens && n > 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, ", output %u", pt->output_tokens);
}

/* Server statistics around a level (Triton's ModelStatistics).  A server
 * without them is told once and not asked again. */
static bool stats_wanted(const tp_run *r) {
  /* ModelStatistics is a Triton gRPC call: not for HTTP services. */
  return !r->stats_off && !r->cfg.no_server_stats && !r->cfg.skip_preflight &&
         r->cfg.service_kind == TP_SERVICE_TRITON;
}

static void stats_read_before(tp_run *r) {
  if (!stats_wanted(r)) return;
  free(r->stats_before);
  r->stats_before = NULL;
  r->n_stats_before = 0;
  char err[300];
  if (tp_client_triton_model_stats(r->client, &r->stats_before, &r->n_stats_before, err, sizeof(err))) {
    r->stats_off = true;
    warn(r, "server statistics unavailable: %s (--no-server-stats skips asking)", err);
  }
}

static double per(uint64_t ns, uint64_t count) { return count ? (double)ns / (double)count / 1e3 : 0; }

static void stats_read_after(tp_run *r, size_t li, tp_level_result *lv) {
  if (!stats_wanted(r) || !r->stats_before) return;
  tp_triton_model_counters *after = NULL;
  size_t n_after = 0;
  char err[300];
  if (tp_client_triton_model_stats(r->client, &after, &n_after, err, sizeof(err))) {
    warn(r, "server statistics unavailable after the level: %s", err);
    return;
  }
  tp_server_model_stats *out = calloc(n_after ? n_after : 1, sizeof(*out));
  size_t n = 0;
  for (int pass = 0; pass < 2 && out; pass++) {
    /* The target model first, then the composing models in server order. */
    for (size_t i = 0; i < n_after; i++) {
      const tp_triton_model_counters *a = &after[i];
      bool target = strcmp(a->name, r->cfg.model) == 0;
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

/* ---- distributed runs (docs/scale-out.md) ------------------------------------ */

/* tp_run_exec's word for "this rank sits the run out; rank 0 reports why". */
#define DIST_OUT 1

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
    on_interrupt(&r->interrupt_async);
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
  write_record_line(r, &j, false);
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
  if (!rv && L->n_planned + h.n_records > L->cap) {
    size_t cap = L->n_planned + (size_t)h.n_records;
    tp_record *nr = realloc(L->recs, cap * sizeof(*nr));
    if (nr) {
      L->recs = nr;
      L->cap = cap;
    } else {
      rv = TP_ENOMEM;
    }
  }
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
static int dist_level_end(tp_run *r, size_t li, char *err, size_t errlen) {
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
    free(L->waiting);
    L->offsets = NULL;
    L->waiting = NULL;
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
static int dist_open(tp_run *r, char *err, size_t errlen) {
  if (!tp_mpi_launched()) return 0;
  uint64_t timeout_ms = r->cfg.mpi_timeout_ms ? r->cfg.mpi_timeout_ms : 20000;
  int rv = tp_mpi_new(&r->mpi, timeout_ms * TP_NS_PER_MS, err, errlen);
  if (rv) return rv;
  r->rank = tp_mpi_rank(r->mpi);
  r->n_ranks = tp_mpi_size(r->mpi);
  if (r->rank)
    snprintf(r->rank_tag, sizeof(r->rank_tag), "rank %u on %s: ", r->rank, tp_mpi_host(r->mpi, r->rank));
  const char *why = NULL;
  char buf[512];
  if (r->cfg.measure_mode == TP_MEASURE_TIME_WINDOWS || r->cfg.measure_mode == TP_MEASURE_COUNT_WINDOWS) {
    why = "the stability windows (--measurement-interval, --measurement-mode) are not available under MPI: each "
          "rank would judge stability alone; use --request-count or --duration";
  } else if (r->cfg.mock && r->n_ranks > 1) {
    why = "--mock runs the server inside one process, which ranks on other hosts cannot reach; start one "
          "'tokperf mock --host ADDR' and give every rank -u ADDR:PORT (docs/scale-out.md)";
  } else if (r->cfg.max_concurrency && r->cfg.max_concurrency < r->n_ranks) {
    snprintf(buf, sizeof(buf), "--max-concurrency %u is below the %u ranks: each rank needs at least one slot",
             r->cfg.max_concurrency, r->n_ranks);
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
    r->cfg.progress = NULL;
    r->cfg.no_artifacts = true;
    r->cfg.records_path = NULL;
    r->cfg.metrics_url = NULL;
    r->cfg.no_server_stats = true;
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
static int dist_start(tp_run *r, int status, char *err, size_t errlen) {
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
static int dist_leave(tp_run *r, int rv, char *err, size_t errlen) {
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

/* ---- multi-turn sessions (docs/sessions.md, run/tp_sessions.h) ------------- */

static void on_sessions_timer(tp_timer *t, uint64_t now_ns);

/* Room for request seq's turn (and sent text) beside the records. */
static int sessions_grow(level_state *L, size_t seq) {
  if (seq < L->sess_cap) return 0;
  size_t cap = L->sess_cap ? L->sess_cap * 2 : 256;
  while (cap <= seq) cap *= 2;
  tp_sessions_turn *t = realloc(L->sess_turns, cap * sizeof(*t));
  if (!t) return TP_ENOMEM;
  L->sess_turns = t;
  char **sent = realloc(L->sess_sent, cap * sizeof(*sent));
  if (!sent) return TP_ENOMEM;
  memset(sent + L->sess_cap, 0, (cap - L->sess_cap) * sizeof(*sent));
  L->sess_sent = sent;
  L->sess_cap = cap;
  return 0;
}

/* One turn released by the pacer: recorded and sent like any request. */
static void plan_session_turn(tp_run *r, const tp_sessions_turn *t) {
  level_state *L = &r->lv;
  tp_record *rec = grow_records(r);
  if (!rec || sessions_grow(L, L->n_planned)) {
    /* Out of memory: the session ends, nothing more starts. */
    tp_sessions_done(L->sess, t, false, NULL, 0, tp_now_ns());
    tp_sessions_stop_at(L->sess, 0, tp_now_ns(), true);
    return;
  }
  size_t seq = L->n_planned++;
  L->sess_turns[seq] = *t;
  rec->seq = seq;
  rec->planned_ns = t->it.planned_ns;
  rec->prompt_index = (uint32_t)t->prompt_index;
  rec->session = (uint32_t)t->it.session + 1;
  rec->turn = t->it.turn;
  /* The warm-up count is of sessions: all their turns are warm-up. */
  rec->warmup = L->warmup_end_ns ? rec->planned_ns < L->warmup_end_ns : t->it.session < L->n_warmup;
  rec->max_tokens = draw_max_tokens(r, &L->ds->items[rec->prompt_index], seq);
  if (!rec->warmup && !L->measure_start_ns) {
    L->measure_start_ns = rec->planned_ns;
    if (r->cfg.measure_mode == TP_MEASURE_DURATION)
      L->measure_end_ns = rec->planned_ns + r->cfg.duration_ms * TP_NS_PER_MS;
  }
  send_request(r, seq);
  /* A send never ends inside send_request: an end already there means it
   * was not sent (no callback follows), and the session ends with it. */
  if (L->recs[seq].done_ns) tp_sessions_done(L->sess, t, false, NULL, 0, tp_now_ns());
}

/* Sends every turn that may leave now, then arms the timer for the next
 * think time or session start. */
static void sessions_pump(tp_run *r, uint64_t now) {
  level_state *L = &r->lv;
  tp_sessions_turn t;
  while (!r->interrupted) {
    /* Past the measured duration no session starts; those under way end. */
    if (L->measure_end_ns) tp_sessions_stop_at(L->sess, L->measure_end_ns, now, false);
    if (!tp_sessions_next(L->sess, now, &t)) break;
    plan_session_turn(r, &t);
    now = tp_now_ns();
  }
  uint64_t due = tp_sessions_next_due(L->sess);
  if (due != UINT64_MAX && !r->interrupted)
    tp_timer_start(r->timers, &L->plan_timer, due);
  else
    tp_timer_stop(r->timers, &L->plan_timer);
  L->stop_planning = r->interrupted || tp_sessions_finished(L->sess);
}

static void on_sessions_timer(tp_timer *t, uint64_t now_ns) {
  tp_run *r = t->data;
  sessions_pump(r, now_ns);
  level_check_done(r);
}

/* What a turn sends: the history as chat messages, or as text. */
static void sessions_fill_send(tp_run *r, size_t seq, tp_client_send *snd) {
  level_state *L = &r->lv;
  bool chat = r->cfg.service_kind == TP_SERVICE_OPENAI_CHAT;
  if (tp_sessions_build(L->sess, &L->sess_turns[seq], chat, &r->sendbuf, &L->sess_msgs)) return;
  snd->prompt = (const char *)r->sendbuf.data;
  snd->prompt_len = r->sendbuf.len;
  snd->messages = chat ? (const char *)L->sess_msgs.data : NULL;
  if (r->tok && L->sess_sent) L->sess_sent[seq] = tp_strndup(snd->prompt, snd->prompt_len);
}

/* A turn ended: its answer joins the history, and the session's next turn
 * (after its think time) or a new session may leave. */
static void sessions_on_done(tp_run *r, size_t seq) {
  level_state *L = &r->lv;
  tp_record *rec = &L->recs[seq];
  uint64_t now = tp_now_ns();
  tp_sessions_done(L->sess, &L->sess_turns[seq], tp_record_ok(rec), (const char *)rec->text.data, rec->text.len,
                   rec->done_ns ? rec->done_ns : now);
  if (!r->interrupted) sessions_pump(r, now);
}

static int sessions_level_start(tp_run *r, char *err, size_t errlen) {
  level_state *L = &r->lv;
  const tp_config *c = &r->cfg;
  if (L->pt.mode == TP_LOAD_SCHEDULE || c->measure_mode == TP_MEASURE_TIME_WINDOWS ||
      c->measure_mode == TP_MEASURE_COUNT_WINDOWS) {
    tp_seterr(err, errlen, "%s: a conversations file runs with --concurrency or --request-rate, measured by count "
              "or --duration (not a schedule or stability windows)", r->ds.source);
    return TP_EINVAL;
  }
  if (r->mpi) {
    /* Each rank would run every session: they are not split yet. */
    tp_seterr(err, errlen, "%s: a conversations file does not run across MPI ranks yet; run it in one process",
              r->ds.source);
    return TP_EUNSUPPORTED;
  }
  bool open = L->pt.mode == TP_LOAD_RATE;
  tp_sessions_opts o = {&r->ds, open ? TP_PACER_OPEN : TP_PACER_CLOSED, L->slots, L->offsets, L->n_offsets,
                        L->total == SIZE_MAX ? UINT64_MAX : (uint64_t)L->total};
  int rv = tp_sessions_new(&L->sess, &o);
  if (rv) {
    tp_seterr(err, errlen, "%s: cannot start the sessions (%s)", r->ds.source,
              rv == TP_ENOMEM ? "out of memory" : "no concurrency or rate");
    return rv;
  }
  tp_buf_init(&L->sess_msgs);
  /* The pacer plans; the level's own planning is done. */
  L->sess_total = L->total;
  L->total = SIZE_MAX;
  tp_timer_init(&L->plan_timer, on_sessions_timer, r);
  return 0;
}

static void sessions_level_stats(tp_run *r, tp_level_result *lv) {
  level_state *L = &r->lv;
  tp_turn_stats *ts = NULL;
  size_t n = 0;
  if (tp_sessions_stats(L->recs, L->n_planned, &ts, &n, &lv->sessions) == 0) {
    lv->turns = ts;
    lv->n_turns = n;
  }
}

static void sessions_level_end(tp_run *r) {
  level_state *L = &r->lv;
  if (!L->sess) return;
  for (size_t i = 0; i < L->sess_cap; i++) free(L->sess_sent[i]);
  free(L->sess_sent);
  free(L->sess_turns);
  tp_buf_fini(&L->sess_msgs);
  tp_sessions_free(L->sess);
  L->sess = NULL;
  L->sess_sent = NULL;
  L->sess_turns = NULL;
  L->sess_cap = 0;
}

static int run_level(tp_run *r, size_t li, char *err, size_t errlen) {
  const point *pt = &r->points[li];
  level_state *L = &r->lv;
  tp_record *keep_recs = L->recs;
  size_t keep_cap = L->cap;
  memset(L, 0, sizeof(*L));
  L->recs = keep_recs;
  L->cap = keep_cap;
  if (!r->gaps) r->gaps = tp_gap_pool_new();
  if (r->gaps) tp_gap_pool_reset(r->gaps);
  L->pt = *pt;
  L->slots = pt->concurrency;
  L->seq_step = 1;
  r->cur_level = li;
  int rv = prepare_point_prompts(r, pt, err, errlen);
  if (rv) return rv;
  count_prompts(r, L->ds);
  tp_timer_init(&L->plan_timer, on_plan_timer, r);
  tp_rng_seed(&L->out_rng, tp_rng_mix(r->cfg.random_seed ^ 0x07f, li));

  char desc[96];
  describe_point(pt, desc, sizeof(desc));
  snprintf(L->desc, sizeof(L->desc), "%s", desc);
  L->index = li;
  L->live_n = 0;
  if (pt->mode == TP_LOAD_CONCURRENCY)
    snprintf(r->id_prefix, sizeof(r->id_prefix), "c%u-", pt->concurrency);
  else
    snprintf(r->id_prefix, sizeof(r->id_prefix), "l%zu-", li);
  if (pt->input_tokens || pt->output_tokens)
    snprintf(r->id_prefix + strlen(r->id_prefix), sizeof(r->id_prefix) - strlen(r->id_prefix), "i%uo%u-",
             pt->input_tokens, pt->output_tokens);
  if (r->cfg.num_profile_runs > 1) /* repeated runs: ids stay unique */
    snprintf(r->id_prefix + strlen(r->id_prefix), sizeof(r->id_prefix) - strlen(r->id_prefix), "r%zu-",
             li % r->cfg.num_profile_runs + 1);

  /* What to plan. */
  L->n_warmup = r->cfg.warmup_request_count;
  uint64_t measured = r->cfg.request_count;
  if (!measured) {
    if (pt->mode == TP_LOAD_CONCURRENCY)
      measured = TP_MAX(16, 4 * (uint64_t)pt->concurrency);
    else if (pt->mode == TP_LOAD_RATE)
      measured = TP_MAX(16, (uint64_t)llround(4 * pt->rate));
  }
  /* A conversations file: the counts are of sessions, and by default each
   * of the file's sessions runs once. */
  if (r->ds.n_sessions && L->ds == &r->ds && !r->cfg.request_count) measured = r->ds.n_sessions;
  switch (r->cfg.measure_mode) {
    case TP_MEASURE_COUNT: L->total = pt->mode == TP_LOAD_SCHEDULE && !r->cfg.request_count
                                          ? L->n_warmup + r->n_trace
                                          : L->n_warmup + measured; break;
    default: L->total = SIZE_MAX; break;
  }
  if (pt->mode == TP_LOAD_SCHEDULE && L->total == SIZE_MAX) L->total = r->n_trace + L->n_warmup;

  if (pt->mode == TP_LOAD_RATE) {
    /* The whole schedule is drawn ahead from the seed: a count, or enough for
     * the warm-up and measurement time with room to spare; the windows mode
     * stops when it has its answer. */
    size_t n = L->total;
    if (n == SIZE_MAX) {
      double secs = (double)(r->cfg.warmup_duration_ms) / 1e3;
      if (r->cfg.measure_mode == TP_MEASURE_DURATION) secs += (double)r->cfg.duration_ms / 1e3;
      else if (r->cfg.measure_mode == TP_MEASURE_TIME_WINDOWS)
        secs += (double)r->cfg.measurement_interval_ms / 1e3 * r->cfg.max_trials;
      else
        secs += (double)r->cfg.measurement_request_count * r->cfg.max_trials / pt->rate;
      n = L->n_warmup + (size_t)(pt->rate * secs * 1.1) + 64;
    }
    L->offsets = malloc(n * sizeof(uint64_t));
    if (!L->offsets) return TP_ENOMEM;
    rv = tp_sched_fill(L->offsets, n, pt->rate, r->cfg.arrival, r->cfg.burstiness,
                       tp_sched_seed(r->cfg.random_seed, li));
    if (rv) return rv;
    L->n_offsets = n;
  } else if (pt->mode == TP_LOAD_SCHEDULE) {
    size_t n = L->total;
    L->offsets = malloc(n * sizeof(uint64_t));
    if (!L->offsets) return TP_ENOMEM;
    /* Warm-up requests (if any) replay the trace's first entries first. */
    for (size_t i = 0; i < n; i++) L->offsets[i] = r->trace[i % r->n_trace].offset_ns;
    L->n_offsets = n;
  }

  if (r->ds.n_sessions && L->ds == &r->ds) {
    rv = sessions_level_start(r, err, errlen);
    if (rv) return rv;
  }
  if (L->sess && L->sess_total == SIZE_MAX)
    progress(r, "%s: sessions of %s for %" PRIu64 " ms, each turn with its history", desc, r->ds.source,
             r->cfg.duration_ms);
  else if (L->sess)
    progress(r, "%s: %zu sessions of %s (+%zu warm-up), each turn with its history", desc,
             L->sess_total - L->n_warmup, r->ds.source, L->n_warmup);
  else if (r->cfg.measure_mode == TP_MEASURE_TIME_WINDOWS)
    progress(r, "%s: measuring in windows of %" PRIu64 " ms until three agree within %g%%", desc,
             r->cfg.measurement_interval_ms, r->cfg.stability_percentage);
  else if (r->cfg.measure_mode == TP_MEASURE_COUNT_WINDOWS)
    progress(r, "%s: measuring in windows of %" PRIu64 " requests until three agree within %g%%", desc,
             r->cfg.measurement_request_count, r->cfg.stability_percentage);
  else if (r->cfg.measure_mode == TP_MEASURE_DURATION)
    progress(r, "%s: measuring for %" PRIu64 " ms", desc, r->cfg.duration_ms);
  else
    progress(r, "%s: %zu requests (+%zu warm-up)", desc, L->total - L->n_warmup, L->n_warmup);

  L->total_all = L->total;
  if (r->mpi) dist_split_level(r, pt);
  stats_read_before(r);
  if (r->scraper) tp_scraper_level_start(r->scraper);
  if (r->mpi) {
    /* Every rank starts at one instant of rank 0's clock. */
    rv = tp_mpi_level_begin(r->mpi, (uint32_t)li, &L->t0, err, errlen);
    if (rv) return rv;
    uv_timer_start(&r->mpi_timer, on_mpi_timer, 100, 100);
  } else {
    L->t0 = tp_now_ns();
  }
  if (r->cfg.warmup_duration_ms) L->warmup_end_ns = L->t0 + r->cfg.warmup_duration_ms * TP_NS_PER_MS;
  if (r->cfg.progress) {
    r->last_progress_ns = L->t0;
    uv_timer_start(&r->progress_timer, on_progress, PROGRESS_MS, PROGRESS_MS);
  }

  if (L->sess) {
    tp_sessions_start(L->sess, L->t0);
    sessions_pump(r, L->t0);
  } else if (pt->mode == TP_LOAD_CONCURRENCY) {
    for (uint32_t i = 0; i < L->slots && !L->stop_planning && !r->interrupted; i++) plan_request(r, L->t0);
  } else {
    on_plan_timer(&L->plan_timer, L->t0);
  }
  bool windows = r->cfg.measure_mode == TP_MEASURE_TIME_WINDOWS || r->cfg.measure_mode == TP_MEASURE_COUNT_WINDOWS;
  level_check_done(r);
  while (!L->done) uv_run(&r->loop, UV_RUN_DEFAULT);
  uv_timer_stop(&r->progress_timer);
  if (r->progress_tty && r->cfg.progress) fputs("\r\033[K", r->cfg.progress);
  /* A scrape still on the wire belongs to the level: let it land. */
  while (r->scraper && tp_scraper_busy(r->scraper)) uv_run(&r->loop, UV_RUN_ONCE);
  tp_timer_stop(r->timers, &L->plan_timer);
  uv_timer_stop(&r->window_timer);
  uv_timer_stop(&r->grace_timer);
  if (r->mpi) uv_timer_stop(&r->mpi_timer);

  /* Which requests are measured. */
  tp_level_opts lo;
  memset(&lo, 0, sizeof(lo));
  lo.goodput_ttft_ms = r->cfg.goodput_ttft_ms;
  lo.goodput_itl_ms = r->cfg.goodput_itl_ms;
  lo.goodput_latency_ms = r->cfg.goodput_latency_ms;
  lo.goodput_tpot_ms = r->cfg.goodput_tpot_ms;
  lo.gaps = r->mpi ? NULL : r->gaps; /* other ranks' gaps stay there */
  if (windows && L->trials > 0) {
    uint32_t first = L->trials >= 3 ? L->trials - 3 : 0;
    lo.window_start_ns = L->win_edges_ns[first];
    lo.window_end_ns = L->win_edges_ns[L->trials];
    for (size_t i = 0; i < L->n_planned; i++) {
      tp_record *rec = &L->recs[i];
      /* Counted by one of the last three windows (window_on_completion);
       * a failed request by the span it ended in. */
      bool in = tp_record_ok(rec) ? rec->window > first && rec->window <= L->trials
                                  : rec->done_ns >= lo.window_start_ns && rec->done_ns <= lo.window_end_ns;
      if (!in) rec->warmup = true;
    }
    mark_measured_lines(r);
  } else if (L->measure_end_ns) {
    for (size_t i = 0; i < L->n_planned; i++)
      if (L->recs[i].planned_ns >= L->measure_end_ns) L->recs[i].warmup = true;
  }

  if (r->mpi) {
    /* The other ranks hand their records to rank 0 and are done with the
     * level; rank 0 goes on with the union. */
    rv = dist_level_end(r, li, err, errlen);
    if (rv || r->rank != 0) return rv;
  }

  tp_level_result *lv = &r->levels[r->n_levels];
  rv = tp_level_compute_ex(lv, L->recs, L->n_planned, &lo);
  if (rv) return rv;
  lv->load_mode = pt->mode;
  lv->concurrency = pt->concurrency;
  lv->request_rate = pt->rate;
  lv->input_tokens_mean = pt->input_tokens;
  lv->output_tokens_mean = r->cfg.n_output_tokens_means ? pt->output_tokens : 0;
  lv->max_in_flight = L->max_in_flight;
  if (L->sess) sessions_level_stats(r, lv);
  lv->trials = L->trials;
  lv->stable = L->stable;
  if (r->mpi) dist_fill_level(r, li, lv);
  stats_read_after(r, li, lv);
  lv->prefix_cache_hit_rate = -1;
  if (r->scraper) {
    size_t nm;
    tp_scraper_level_end(r->scraper, lv, &r->server_metrics[li], &nm);
  }
  tp_records_reader *from = NULL;
  if (r->artifacts && L->n_shed) {
    /* The shed records' response times and text are read back from their
     * lines (flushed already; the merged ones of other ranks are not shed). */
    char rerr[600];
    fflush(r->records_fp);
    if (tp_records_reader_open(&from, r->cfg.records_path, rerr, sizeof(rerr)))
      warn(r, "the level's exports lack response times and text: %s", rerr);
  }
  if (r->artifacts && (from || !L->n_shed)) {
    /* Between levels nothing is in flight, so files written here delay no
     * timestamp. */
    tp_export_request *reqs = calloc(L->n_planned ? L->n_planned : 1, sizeof(*reqs));
    /* The exports give the text sent: the markers are kept for them. */
    char(*markers)[24] = r->cfg.cache_bust ? calloc(L->n_planned ? L->n_planned : 1, 24) : NULL;
    if (reqs && (markers || !r->cfg.cache_bust)) {
      for (size_t i = 0; i < L->n_planned; i++) {
        const tp_prompt *p = &L->ds->items[L->recs[i].prompt_index];
        reqs[i].rec = &L->recs[i];
        reqs[i].prompt = p->text;
        reqs[i].prompt_len = p->text_len;
        char scratch[24];
        sent_head(r, i, markers ? markers[i] : scratch, reqs[i].head, reqs[i].head_len);
        reqs[i].reference = p->reference;
        reqs[i].max_tokens = L->recs[i].max_tokens;
        reqs[i].from = from;
      }
      tp_export_level el = {lv, reqs, L->n_planned, lo.window_start_ns, lo.window_end_ns};
      tp_accuracy acc;
      memset(&acc, 0, sizeof(acc));
      char aerr[512];
      if (tp_artifacts_add_level(r->artifacts, &el, &acc, aerr, sizeof(aerr)))
        warn(r, "cannot write the level's artifacts: %s", aerr);
      lv->accuracy_scored = acc.scored;
      lv->exact_match_rate = acc.exact_match_rate;
      lv->rouge_l_f1 = acc.rouge_l_f1;
    }
    free(reqs);
    free(markers);
  }
  tp_records_reader_free(from);
  if (lo.window_end_ns) {
    lv->window_start_s = (double)(lo.window_start_ns - L->t0) / 1e9;
    lv->window_end_s = (double)(lo.window_end_ns - L->t0) / 1e9;
  }
  r->n_levels++;
  if (r->records_fp) fflush(r->records_fp);
  progress(r, "%s: %" PRIu64 " succeeded, %" PRIu64 " failed, %.2f requests/s", desc, lv->succeeded, lv->failed,
           lv->request_throughput);
  if (lv->requests && lv->late_sends * 100 > lv->requests)
    warn(r, "%" PRIu64 " of %" PRIu64 " requests (%.1f%%) left over 1 ms after their planned time; "
             "the client or the in-flight cap held them back (see send lag)",
             lv->late_sends, lv->requests, 100.0 * (double)lv->late_sends / (double)lv->requests);
  for (size_t i = 0; i < L->n_planned; i++) tp_record_fini(&L->recs[i]);
  free(L->offsets);
  free(L->waiting);
  L->offsets = NULL;
  L->waiting = NULL;
  sessions_level_end(r);
  return 0;
}

/* ---- the run ---------------------------------------------------------------- */

static void warm_work(uv_work_t *w) { (void)w; }

/* Everything before the first level: loop handles, tokenizer, the mock,
 * the client and its preflight, scraping, artifacts. */
/* -u/--url: r->target gets "host:port" (the mock's, or the URL's). */
static int parse_target(tp_run *r, const char *url, tp_url *u, char *err, size_t errlen) {
  char why[512];
  if (tp_url_parse(url, u, why, sizeof(why))) {
    tp_seterr(err, errlen, "-u/--url: %s", why);
    return TP_EINVAL;
  }
  if (r->cfg.service_kind == TP_SERVICE_TRITON) {
    /* gRPC has no path; a URL with one was meant for an HTTP API. */
    if (u->path[0] || u->query[0]) {
      tp_seterr(err, errlen,
                "-u/--url '%s': a gRPC address has no path (give HOST:PORT; for an HTTP API add -i http "
                "or --service-kind openai)",
                url);
      return TP_EINVAL;
    }
    if (!u->port) {
      tp_seterr(err, errlen, "-u/--url '%s': gRPC needs HOST:PORT (Triton's gRPC port is 8001)", url);
      return TP_EINVAL;
    }
  }
  tp_url_authority(u, r->target, sizeof(r->target));
  return 0;
}

static int exec_setup(tp_run *r, char *err, size_t errlen) {
  int rv;
  r->interrupt_async.data = r;
  uv_async_init(&r->loop, &r->interrupt_async, on_interrupt);
  uv_timer_init(&r->loop, &r->progress_timer);
  r->progress_timer.data = r;
  uv_timer_init(&r->loop, &r->window_timer);
  r->window_timer.data = r;
  uv_timer_init(&r->loop, &r->grace_timer);
  r->grace_timer.data = r;
  tp_defer_init(&r->done_defer, &r->loop, on_done_defer, r);
  /* libuv starts its thread pool on first use, which takes milliseconds:
   * start it now rather than inside the first request's completion. */
  static uv_work_t warm;
  uv_queue_work(&r->loop, &warm, warm_work, NULL);
  r->progress_tty = r->cfg.progress && isatty(fileno(r->cfg.progress));
  rv = tp_stamp_install(&r->loop);
  if (rv) return rv;
  rv = tp_timers_new(&r->timers, &r->loop);
  if (rv) {
    tp_seterr(err, errlen, "cannot create the precise timers: %s", tp_strerror(rv));
    return rv;
  }

  if (r->cfg.tokenizer) {
    rv = tp_tok_load_ex(&r->tok, r->cfg.tokenizer,
                        r->cfg.tokenizer_add_special_tokens ? TP_TOK_FLAG_SPECIAL_TOKENS : 0, err, errlen);
    if (rv) return rv == TP_ENOMEM ? rv : TP_ENOTFOUND;
    /* The description goes into every report, so results say how prompts
     * were counted. */
    if (r->cfg.tokenizer_add_special_tokens)
      snprintf(r->tok_desc, sizeof(r->tok_desc), "%s (%s; input tokens counted as %s)",
               tp_tok_name(r->tok), r->cfg.tokenizer, tp_tok_special_desc(r->tok));
    else
      snprintf(r->tok_desc, sizeof(r->tok_desc), "%s (%s)", tp_tok_name(r->tok), r->cfg.tokenizer);
    if (r->cfg.schedule_file) {
      rv = make_trace_prompts(r, err, errlen);
      if (rv) return rv;
    }
    if (r->cfg.prefix_tokens) {
      size_t k = r->cfg.num_prefixes ? r->cfg.num_prefixes : 1;
      r->prefixes = calloc(k, sizeof(char *));
      r->prefix_len = calloc(k, sizeof(size_t));
      if (!r->prefixes || !r->prefix_len) return TP_ENOMEM;
      for (size_t i = 0; i < k; i++) {
        rv = tp_synth_text(r->tok, r->cfg.prefix_tokens, tp_rng_mix(r->cfg.random_seed ^ 0x9f, i), &r->prefixes[i],
                           &r->prefix_len[i]);
        if (rv) {
          tp_seterr(err, errlen, "cannot make a shared prefix of %u tokens: %s", r->cfg.prefix_tokens,
                    tp_strerror(rv));
          return rv;
        }
        r->n_prefixes = i + 1;
      }
    }
  }

  const char *url = r->cfg.url;
  tp_url pu;
  memset(&pu, 0, sizeof(pu));
  if (r->cfg.mock) {
    tp_mock_config mc;
    if (r->cfg.mock_config)
      mc = *r->cfg.mock_config;
    else
      tp_mock_config_default(&mc);
    mc.host = "127.0.0.1";
    mc.grpc_port = 0;
    /* The HTTP side only when an HTTP service is measured. */
    mc.http_port = r->cfg.service_kind == TP_SERVICE_TRITON && !r->cfg.metrics_url ? -1 : 0;
    mc.quiet = true;
    if (r->cfg.mock_log_path) mc.log_path = r->cfg.mock_log_path;
    rv = tp_mock_start(&r->mock, &mc, err, errlen);
    if (rv) return rv;
    snprintf(r->target, sizeof(r->target), "127.0.0.1:%d",
             r->cfg.service_kind == TP_SERVICE_TRITON ? tp_mock_port(r->mock) : tp_mock_http_port(r->mock));
    progress(r, "built-in mock server on %s", r->target);
  } else {
    rv = parse_target(r, url, &pu, err, errlen);
    if (rv) return rv;
  }

  uint32_t max_conc = 1;
  for (size_t i = 0; i < r->n_points; i++) max_conc = TP_MAX(max_conc, r->points[i].concurrency);
  if (r->cfg.n_request_rates && !r->cfg.max_concurrency) max_conc = 1024;
  tp_client_opts co;
  memset(&co, 0, sizeof(co));
  co.target = r->target;
  co.model = r->cfg.model;
  co.model_version = r->cfg.model_version;
  co.backend = r->cfg.backend;
  co.streaming = r->cfg.streaming;
  /* One connection per 128 streams by default: Triton serialises writes per
   * connection, and extra connections are cheap. */
  co.connections = r->cfg.connections ? r->cfg.connections : (max_conc + 127) / 128;
  co.max_response_bytes = MAX_RESPONSE_BYTES;
  co.headers = r->cfg.headers;
  co.n_headers = r->cfg.n_headers;
  co.tls = !r->cfg.mock && tp_url_tls(&pu);
  /* The host, for certificate checks and SNI. */
  co.host = r->cfg.mock ? "127.0.0.1" : pu.host;
  co.ca_file = r->cfg.ca_file;
  co.cert_file = r->cfg.cert_file;
  co.key_file = r->cfg.key_file;
  co.insecure = r->cfg.insecure;
  co.file_inputs = r->file_inputs;
  static const tp_client_cbs cbs = {req_on_event, req_on_done};
  if (r->cfg.service_kind == TP_SERVICE_TRITON) {
    rv = tp_client_triton_new(&r->client, &r->loop, &co, &cbs, err, errlen);
  } else {
    tp_client_http_opts ho;
    tp_client_http_opts_default(&ho);
    ho.api = r->cfg.service_kind == TP_SERVICE_OPENAI_CHAT          ? TP_HTTP_API_OPENAI_CHAT
             : r->cfg.service_kind == TP_SERVICE_OPENAI_COMPLETIONS ? TP_HTTP_API_OPENAI_COMPLETIONS
                                                                    : TP_HTTP_API_TRITON_GENERATE;
    /* HTTP keeps the scheme (https) and the path of --url: the client
     * joins it with the API's path (tp_url.h). */
    snprintf(r->http_url, sizeof(r->http_url), "%s", r->cfg.mock ? r->target : url);
    ho.url = r->http_url;
    ho.endpoint = r->cfg.endpoint;
    ho.api_key = r->cfg.api_key;
    ho.headers = r->cfg.headers;
    ho.n_headers = r->cfg.n_headers;
    ho.extra_inputs = r->cfg.extra_inputs;
    ho.n_extra_inputs = r->cfg.n_extra_inputs;
    ho.ca_file = r->cfg.ca_file;
    ho.cert_file = r->cfg.cert_file;
    ho.key_file = r->cfg.key_file;
    ho.insecure = r->cfg.insecure;
    ho.http1_only = r->cfg.http1_only;
    ho.include_usage = !r->cfg.no_usage;
    rv = tp_client_http_new(&r->client, &r->loop, &co, &ho, &cbs, err, errlen);
    r->http = rv == 0;
  }
  if (rv) return rv;

  if (!r->cfg.skip_preflight) {
    rv = r->client->ops->preflight(r->client, err, errlen);
    if (rv) return rv;
    if (r->http && *tp_client_http_warning(r->client)) warn(r, "%s", tp_client_http_warning(r->client));
  }
  if (r->http && !r->cfg.mock) {
    /* Without the query, which may hold a key (?key=...). */
    const char *ep = tp_client_http_endpoint(r->client);
    progress(r, "requests go to %.*s", (int)strcspn(ep, "?"), ep);
  }
  /* Every entry is built once now, so that a tensor the model cannot take
   * stops the run with its entry named rather than failing requests. */
  for (size_t i = 0; r->file_inputs && i < r->ds.n; i++) {
    char why[400];
    rv = tp_client_triton_check_inputs(r->client, r->ds.items[i].inputs, why, sizeof(why));
    if (rv) {
      tp_seterr(err, errlen, "%s: data[%zu]: %s", r->ds.source, i, why);
      return rv;
    }
  }

  if (r->cfg.metrics_url) {
    if (strcmp(r->cfg.metrics_url, "mock") == 0) {
      if (!r->mock || tp_mock_http_port(r->mock) <= 0) {
        tp_seterr(err, errlen, "--metrics-url mock needs --mock");
        return TP_EINVAL;
      }
      snprintf(r->metrics_url, sizeof(r->metrics_url), "http://127.0.0.1:%d/metrics", tp_mock_http_port(r->mock));
    } else {
      snprintf(r->metrics_url, sizeof(r->metrics_url), "%s", r->cfg.metrics_url);
    }
    rv = tp_scraper_new(&r->scraper, &r->loop, r->metrics_url, r->cfg.metrics_interval_ms, &r->cfg, err, errlen);
    if (rv) return rv;
  }

  if (!r->cfg.no_artifacts) {
    artifact_dir_name(&r->cfg, r->artifact_dir, sizeof(r->artifact_dir));
    struct timespec wall;
    clock_gettime(CLOCK_REALTIME, &wall);
    tp_artifacts_opts ao;
    memset(&ao, 0, sizeof(ao));
    ao.dir = r->artifact_dir;
    ao.profile_export_file = r->cfg.profile_export_file;
    ao.cfg = &r->cfg;
    /* One anchor pair: wall time = anchor + (monotonic - its anchor). */
    ao.anchor_mono_ns = tp_now_ns();
    ao.anchor_wall_ns = (uint64_t)wall.tv_sec * TP_NS_PER_S + (uint64_t)wall.tv_nsec;
    ao.html = !r->cfg.no_html;
    rv = tp_artifacts_open(&r->artifacts, &ao, err, errlen);
    if (rv) return rv == TP_ENOMEM ? rv : TP_EIO;
    if (!r->cfg.records_path) {
      snprintf(r->records_default, sizeof(r->records_default), "%s/records.jsonl", r->artifact_dir);
      r->cfg.records_path = r->records_default;
    }
  }

  if (r->cfg.records_path) {
    r->records_fp = fopen(r->cfg.records_path, "w");
    if (!r->records_fp) {
      tp_seterr(err, errlen, "cannot write --records file %s: %s", r->cfg.records_path, strerror(errno));
      return TP_EIO;
    }
    /* A regular file can be read back at the level's end, so finished
     * records need not keep their response times and text in memory (a
     * pipe or a terminal cannot: there they stay). */
    struct stat st;
    r->shed_records = fstat(fileno(r->records_fp), &st) == 0 && S_ISREG(st.st_mode);
  }

  return 0;
}

/* --search: the point to measure next is the search's next load
 * (tp_sweep_search.c); false when the search is over. */
static bool search_point(tp_run *r, size_t li) {
  double load;
  if (!tp_sweep_search_next(r->search, &load)) return false;
  point *p = &r->points[li];
  if (r->cfg.search == TP_SEARCH_REQUEST_RATE) {
    p->mode = TP_LOAD_RATE;
    p->rate = load;
    p->concurrency = r->cfg.max_concurrency;
  } else {
    p->mode = TP_LOAD_CONCURRENCY;
    p->concurrency = (uint32_t)load;
  }
  return true;
}

static void search_judge(tp_run *r, size_t li) {
  const point *p = &r->points[li];
  double load = p->mode == TP_LOAD_RATE ? p->rate : (double)p->concurrency;
  double secs = (double)(tp_now_ns() - r->lv.t0) / 1e9;
  tp_sweep_search_judge(r->search, load, &r->levels[r->n_levels - 1], r->n_levels - 1, r->lv.n_planned, secs);
}

int tp_run_exec(tp_run *r, char *err, size_t errlen) {
  int rv = dist_open(r, err, errlen);
  if (rv) return rv;
  rv = exec_setup(r, err, errlen);
  if (r->mpi && dist_start(r, rv, err, errlen) == DIST_OUT) return 0;
  if (rv) return rv;
  if (r->search && r->mpi) {
    tp_seterr(err, errlen, "--search runs in one process: start it without mpirun");
    return TP_EINVAL;
  }
  for (size_t li = 0; li < r->n_points && !r->interrupted; li++) {
    if (r->search && !search_point(r, li)) break;
    rv = run_level(r, li, err, errlen);
    if (rv && r->mpi && r->rank != 0) return dist_leave(r, rv, err, errlen);
    if (rv) return rv;
    if (r->search) search_judge(r, li);
  }
  if (r->mpi) {
    tp_mpi_finish(r->mpi);
    /* What the other ranks measured is in rank 0's report. */
    if (r->rank != 0) return 0;
  }
  if (r->mock) {
    tp_mock_get_stats(r->mock, &r->mock_stats);
    r->have_mock_stats = true;
  }
  if (r->artifacts) {
    /* Also after an interruption: what was measured is written. */
    char aerr[512];
    if (r->search) tp_artifacts_set_search(r->artifacts, tp_sweep_search_summary(r->search));
    if (tp_artifacts_finish(r->artifacts, aerr, sizeof(aerr))) warn(r, "cannot finish the artifacts: %s", aerr);
  }
  if (r->interrupted) {
    tp_seterr(err, errlen, "interrupted after %zu of %zu levels", r->n_levels, r->n_points);
    return TP_EINTERRUPTED;
  }
  return 0;
}

size_t tp_run_level_count(const tp_run *r) { return r->n_levels; }

const tp_level_result *tp_run_level(const tp_run *r, size_t i) {
  return i < r->n_levels ? &r->levels[i] : NULL;
}

int tp_run_mock_stats(const tp_run *r, tp_mock_stats *out) {
  if (!r->have_mock_stats) return TP_ENOTFOUND;
  *out = r->mock_stats;
  return 0;
}

const char *tp_run_artifact_dir(const tp_run *r) { return r->artifacts ? r->artifact_dir : ""; }

int tp_run_check_gates(const tp_run *r, FILE *out) {
  if (r->search) return tp_sweep_search_check(r->search, r->gates, r->levels, out);
  return tp_gates_check(r->gates, r->levels, r->n_levels, r->cfg.max_error_rate, out);
}

static void fill_report(const tp_run *r, tp_report_input *in) {
  memset(in, 0, sizeof(*in));
  in->cfg = &r->cfg;
  in->target = r->target;
  in->tokenizer_desc = r->tok ? r->tok_desc : NULL;
  in->dataset_desc = r->ds_desc;
  in->levels = r->levels;
  in->n_levels = r->n_levels;
  in->interrupted = r->interrupted;
  in->have_mock_stats = r->have_mock_stats;
  in->mock_stats = r->mock_stats;
  in->search = r->search ? tp_sweep_search_summary(r->search) : NULL;
}

void tp_run_report_text(const tp_run *r, FILE *out) {
  tp_report_input in;
  fill_report(r, &in);
  tp_report_text(out, &in);
}

int tp_run_write_json(const tp_run *r, const char *path, char *err, size_t errlen) {
  tp_report_input in;
  fill_report(r, &in);
  return tp_report_json(path, &in, err, errlen);
}

static void walk_close(uv_handle_t *h, void *arg) {
  if (!uv_is_closing(h)) uv_close(h, NULL);
}

void tp_run_free(tp_run *r) {
  if (!r) return;
  if (r->client) {
    r->client->ops->close(r->client);
    r->client = NULL;
  }
  if (r->timers) tp_timers_close(r->timers);
  if (r->scraper) tp_scraper_free(r->scraper);
  tp_stamp_uninstall(&r->loop);
  /* Close every handle and let libuv finish, so the loop closes cleanly. */
  uv_walk(&r->loop, walk_close, NULL);
  uv_run(&r->loop, UV_RUN_DEFAULT);
  uv_loop_close(&r->loop);
  if (r->mock) tp_mock_stop(r->mock);
  if (r->records_fp) fclose(r->records_fp);
  tp_artifacts_free(r->artifacts);
  uv_mutex_destroy(&r->records_lock);
  if (r->tok) tp_tok_free(r->tok);
  for (size_t i = 0; i < r->n_prefixes; i++) free(r->prefixes[i]);
  free(r->prefixes);
  free(r->prefix_len);
  tp_buf_fini(&r->sendbuf);
  tp_dataset_free(&r->ds);
  if (r->have_syn_ds) tp_dataset_free(&r->syn_ds);
  free(r->trace);
  free(r->lv.recs);
  tp_gap_pool_free(r->gaps);
  free(r->lv.offsets);
  free(r->lv.waiting);
  free(r->done_q);
  tp_gates_free(r->gates);
  tp_sweep_search_free(r->search);
  free(r->stats_before);
  for (size_t i = 0; r->server_stats && i < r->n_points; i++) free(r->server_stats[i]);
  free(r->server_stats);
  for (size_t i = 0; r->server_metrics && i < r->n_points; i++) free(r->server_metrics[i]);
  free(r->server_metrics);
  free(r->points);
  for (size_t i = 0; r->levels && i < r->n_levels; i++) free((void *)r->levels[i].turns);
  free(r->levels);
  free(r->concurrency);
  free(r->rates);
  free(r->in_means);
  free(r->out_means);
  free(r->rank_info);
  free(r->rank_in);
  /* Last: MPI_Finalize waits for every rank. */
  tp_mpi_free(r->mpi);
  free(r);
}

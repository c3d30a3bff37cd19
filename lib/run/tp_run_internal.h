/* The run's parts, and the state they share (internal to lib/run).
 *
 * A run is split the way a load generator separates worker, client and
 * stream: the sweep (tp_sweep.c) walks the points and drives --search; one
 * level (tp_level.c) plans, measures and stops; one request (tp_request.c)
 * is released by the level's pacer (load/tp_pacer.h), sent and answered;
 * the sink (tp_sink.c) counts tokens on libuv's thread pool and writes
 * records.jsonl; the hooks (tp_hooks.c) run around each level (server
 * statistics, scraping, MPI, artifacts); start-up (tp_setup.c) opens the
 * loop, tokenizer, mock and client; sessions (tp_level_sessions.c) drive a
 * conversations file with the pacer, a session of several turns each.
 * Functions shared between the parts carry the tpr_ prefix. */
#ifndef TP_RUN_INTERNAL_H
#define TP_RUN_INTERNAL_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <uv.h>

#include "api/tp_triton.h"
#include "client/tp_client.h"
#include "dataset/tp_dataset.h"
#include "dataset/tp_trace.h"
#include "load/tp_backoff.h"
#include "metrics/tp_gaps.h"
#include "metrics/tp_live.h"
#include "metrics/tp_saturation.h"
#include "metrics/tp_stats.h"
#include "record/tp_rec_arena.h"
#include "record/tp_record.h"
#include "report/tp_export.h"
#include "run/tp_gates.h"
#include "run/tp_live_serve.h"
#include "run/tp_mpi.h"
#include "run/tp_scrape.h"
#include "run/tp_sessions.h"
#include "run/tp_sweep_search.h"
#include "tokenizer/tp_tok.h"
#include "util/tp_common.h"
#include "util/tp_rng.h"
#include "util/tp_timer.h"
#include "util/tp_wake.h"
#include "tokperf/tokperf.h"

#define MAX_RESPONSE_BYTES (64u << 20)
#define DEFAULT_MAX_TOKENS 128
#define MAX_WINDOWS 64
#define PROGRESS_MS 1000
#define LIVE_TTFT_N 1024
#define COUNT_Q_MAX 32
#define COUNT_WAIT_MS 1

/* One point of the sweep. */
typedef struct point {
  tp_load_mode mode;
  uint32_t concurrency; /* the level (concurrency mode) or the cap (0 = none) */
  double rate;
  uint32_t input_tokens;  /* 0 = the run's prompts */
  uint32_t output_tokens; /* 0 = per prompt / default */
} point;

/* One per request in flight, the client's handle on it from send to
 * on_done.  The level owns them (ctx_pool): taken from its free list at the
 * send and given back in on_done, so a request costs no allocation for its
 * context, and its address stays put while the record array grows. */
typedef struct req_ctx {
  tp_run *run;
  size_t seq;
  bool final_seen;
  bool cumulative;
  bool cancelled;
  uint32_t backoff;     /* its slot's requests in a row that failed to reach the server before it */
  void *handle;         /* the client's, for cancelling */
  struct req_ctx *next; /* the pool's free list */
} req_ctx;

/* The level's request contexts: slabs that never move (a context's address
 * is the client's until its on_done), chained for freeing, and the free
 * list over them.  A slab is added only when more requests are in flight
 * than ever before in the level, twice as many contexts each time. */
typedef struct ctx_slab {
  struct ctx_slab *next;
  size_t n;
  req_ctx ctx[];
} ctx_slab;

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

/* The client's own counters at one moment (docs/metrics.md, "Fidelity"):
 * the clock, the reads its loop dated, the CPU time of the loop's thread
 * and of the process. */
typedef struct fid_mark {
  uint64_t t_ns, reads, thread_cpu_ns, process_cpu_ns;
} fid_mark;

typedef struct level_state {
  point pt;
  tp_dataset *ds;
  /* The records, indexed by request: the run's arena (r->arena) holds
   * them; recs and cap mirror it after each growth. */
  tp_record *recs;
  size_t cap;
  /* Records whose request ended and whose tokens are counted ("settled"),
   * one bit each; below settled_low every one is, and the arena was last
   * asked to let go of the pages below released_at. */
  uint64_t *settled;
  size_t settled_words, settled_low, released_at;
  /* Server statistics over the measured requests only: warm-up requests
   * planned and not yet ended, whether a measured one was planned, and
   * whether the "before" snapshot was taken again once warm-up ended. */
  size_t warmup_left;
  bool measured_planned, stats_resnap;
  size_t n_planned, n_done;
  size_t n_failed; /* of the done ones, failed: kept as they end, for progress */
  size_t total; /* requests to plan (count measurement), SIZE_MAX = until told to stop */
  uint64_t t0;  /* level start */
  uint64_t interrupted_ns; /* when an interruption cut the level short (0 = it was not) */
  /* Open loop: the next planned offsets come from here. */
  tp_rng out_rng;
  uint64_t *offsets;
  size_t n_offsets;
  tp_timer plan_timer;
  /* The request contexts (req_ctx): made at the level's start, freed at its
   * end, once every request's on_done has run. */
  ctx_slab *ctx_slabs;
  req_ctx *ctx_free;
  size_t ctx_n;
  /* Single-turn levels: what leaves when (closed loop, open loop, the cap
   * and its queue); NULL for sessions (tp_sessions has its own) and for a
   * rank with no share of the level.  pump_ns: when the pump last asked. */
  tp_pacer *pacer;
  uint64_t pump_ns;
  /* The send window (load.send_window_us): requests released and held
   * in the client since window_first_ns (their first one's planned time);
   * window_held while the hold is taken. */
  bool window_held;
  uint64_t window_first_ns;
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
  /* The measured requests and their span, once the level is over. */
  tp_level_opts lo;
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
  /* A server that stopped answering (load/tp_backoff.h): the count of
   * requests in a row it did not take, the open loop's gate, and whether
   * the count's limit ended the level. */
  tp_backoff bo;
  bool server_gone;
  /* The client's counters when the level began and when its loop ended. */
  fid_mark fid_begin, fid_end;
  /* Over-saturation (metrics/tp_saturation.h): open-loop levels of one
   * process; NULL otherwise.  sat_stopped: --stop-on-saturation ended the
   * level. */
  tp_saturation *sat;
  bool sat_stopped;
} level_state;

struct tp_run {
  tp_config cfg;
  tp_rec_arena *arena; /* the levels' records (tp_sink.c) */
  char arena_dir[1024]; /* where its file is ("" = $TMPDIR or /tmp) */
  bool arena_warned;    /* said that the records left the file for memory */
  tp_gap_pool *gaps;   /* the level's gaps between text responses (itl_pooled) */
  tp_gap_pool *vllm_gaps; /* vLLM's: every gap between chunks with choices (vllm_itl) */
  tp_gap_pool *loop_lag; /* the level's read lags (fidelity.loop_lag), from the loop's stamp */
  /* Live metrics (--metrics-port): the run's counters, the endpoint that
   * serves them, and what the endpoint says of the levels (NULL, 0 when
   * off; tp_hooks.c). */
  tp_live *live;
  tp_live_server *live_srv;
  uint32_t live_level; /* the level running, from 1 */
  /* --traceparent: trace and parent ids, random per run (seeded from the
   * system's entropy, not the run's seed: two runs never share them). */
  tp_rng trace_rng;
  bool trace_rng_ready;
  int live_verdict;    /* of the last finished level, -1 = none */
  uint32_t stats_gen; /* levels begun: a late snapshot of an earlier level is dropped */
  /* --search with --num-profile-runs: the current probe's runs so far. */
  uint64_t probe_requests;
  double probe_secs;
  /* Owned copies of the borrowed lists. */
  uint32_t *concurrency;
  double *rates;
  uint32_t *in_means, *out_means;
  uv_loop_t loop;
  uv_async_t interrupt_async;
  atomic_bool interrupt_flag;
  bool interrupted;
  bool server_gone; /* a level ended because the server stopped answering: the sweep stops */
  tp_timers *timers;
  uint64_t send_window_ns; /* load.send_window_us, in ns */
  uv_timer_t progress_timer;
  uv_timer_t sat_timer; /* a sample a second for the level's tp_saturation */
  uv_timer_t window_timer; /* the run's, so it outlives every level */
  uv_timer_t grace_timer;
  /* Requests done but not yet handed to the pool: processed after the
   * poll phase, once the loop has flushed the requests that refilled their
   * slots (tp_defer: the poll cannot block while some are queued). */
  tp_defer done_defer;
  size_t *done_q;
  size_t done_n, done_cap;
  /* Finished requests waiting for the pool (tp_sink.c): they leave as one
   * batch once COUNT_Q_MAX have queued, COUNT_WAIT_MS after the first, or
   * when no request is in flight, so a tokenizer's counts cost one
   * hand-over per batch, not one per request. */
  struct count_job *count_q[COUNT_Q_MAX];
  size_t count_n;
  tp_timer count_timer;
  bool count_timer_ready;
  bool progress_tty;
  uint64_t last_progress_ns;
  /* The model an OpenAI server was asked for when none was given: the
   * first it listed (cfg.server.model points here once it is known). */
  char model_found[256];

  char **prefixes;    /* shared prefixes (num_prefixes of prefix_tokens) */
  size_t *prefix_len;
  size_t n_prefixes;
  tp_buf sendbuf;     /* the text actually sent: marker + prefix + prompt */
  tp_dataset ds;      /* prompts from the file or synthetic words */
  tp_dataset syn_ds;  /* exact-token prompts of the current point */
  bool have_syn_ds;
  uint32_t syn_ds_tokens;
  tp_trace_entry *trace; /* schedule mode: the trace's entries */
  size_t n_trace;
  tp_tok *tok;
  char tok_desc[512];
  char ds_desc[512];
  const tp_mock_config *mock_cfg; /* tp_run_set_mock: the caller's in-process mock, or NULL */
  bool have_mock_stats;
  tp_mock_stats mock_stats;
  char target[300];
  tp_client *client;
  /* perf_analyzer input data on Triton gRPC: each request carries its
   * entry's tensors as given (docs/inputs.md). */
  bool file_inputs;
  tp_artifacts *artifacts;
  char artifact_dir[1024];
  char records_default[1100];
  FILE *records_fp;
  /* A failed write ends the records file (tp_sink.c): its errno, whether
   * it was cut back to records_good (the end of its last whole line),
   * lines written and lines known whole, and whether the loop said it. */
  int records_errno;
  bool records_cut, records_said;
  off_t records_good, records_end; /* bytes known whole, bytes written */
  uint64_t records_lines, records_lines_good;
  /* The first output that could not be written whole (tp_run_output_error). */
  char output_error[1024];
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
  tp_scraper *gpu_scraper; /* --gpu-metrics-url */
  char gpu_metrics_url[512];

  point *points;
  size_t n_points;
  tp_level_result *levels;
  size_t n_levels;
  level_state lv;
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


/* tp_run_exec's word for "this rank sits the run out; rank 0 reports why". */
#define DIST_OUT 1


/* A request is over: counted done, and failed if it failed (and in the
 * live counters, while its response times are still in the record). */
static inline void note_done(tp_run *r, const tp_record *rec) {
  level_state *L = &r->lv;
  if (r->live) tp_live_done(r->live, rec);
  L->n_done++;
  if (rec->err_class != TP_ERRCLASS_NONE) L->n_failed++;
  else if (rec->first_token_ns > rec->sent_ns && rec->sent_ns) {
    double ttft = (double)(rec->first_token_ns - rec->sent_ns) / 1e6;
    L->live_ttft[L->live_n++ % LIVE_TTFT_N] = ttft;
    if (L->sat) tp_saturation_done(L->sat, ttft);
  }
}

void tpr_progress(tp_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tpr_warn(tp_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* An output could not be written whole: said as a warning now, kept as
 * the run's output error (the first one) for the end. */
void tpr_output_failed(tp_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Flushes the records file; false when it has failed (now or before). */
bool tpr_records_flush(tp_run *r);
/* On the loop: says a failed records file, once. */
void tpr_records_say(tp_run *r);
void tpr_artifact_dir_name(const tp_config *c, char *out, size_t outlen);
tp_record *tpr_grow_records(tp_run *r);
/* Server statistics: a request planned, a request ended (tp_hooks.c). */
void tpr_stats_planned(tp_run *r, const tp_record *rec);
void tpr_stats_done(tp_run *r, const tp_record *rec);
int tpr_reserve_records(tp_run *r, size_t n);
void tpr_mirror_arena(tp_run *r);
uint32_t tpr_draw_max_tokens(tp_run *r, const tp_prompt *p, size_t seq);
/* The pacer releases what is due now (sessions or single requests) and
 * its timer is armed for the next; tpr_stop_planning ends the planning (a
 * stop rule), tpr_drop_waiting records what the cap held as not sent (an
 * interruption). */
void tpr_pump(tp_run *r, uint64_t now);
void tpr_stop_planning(tp_run *r, uint64_t now);
void tpr_drop_waiting(tp_run *r, const char *why);
/* Over-saturation seen (metrics/tp_saturation.h): with
 * --stop-on-saturation the level ends at once, as an interruption ends it
 * (partial), and what the cap held is dropped, not sent. */
void tpr_end_on_saturation(tp_run *r, uint64_t now);
void tpr_req_on_event(void *req, const tp_client_event *ev, uint64_t arrival_ns);
int tpr_count_input(const tp_run *r, const tp_tok *tok, const char *text, size_t len, size_t *n);
uint64_t tpr_write_record_line(tp_run *r, const count_job *j, bool flush);
void tpr_count_work(uv_work_t *w);
void tpr_mark_measured_lines(tp_run *r);
void tpr_finish_done(tp_run *r, size_t seq);
void tpr_on_done_defer(tp_defer *d);
int tpr_sink_open(tp_run *r, char *err, size_t errlen);
void tpr_sent_head(const tp_run *r, size_t seq, char marker[24], const char *head[3], size_t len[3]);
void tpr_build_sent_text(tp_run *r, size_t seq, tp_buf *out);
void tpr_req_on_done(void *req, const tp_client_done *d);
/* Sends request seq; backoff: its slot's requests in a row that failed to
 * reach the server before it (tp_pacer_item.backoff). */
void tpr_send_request(tp_run *r, size_t seq, uint32_t backoff);
/* Request seq was planned and is not sent: the server is away and the
 * open loop backs off (class not_sent); its end is handed on like any. */
void tpr_not_sent(tp_run *r, size_t seq);
/* How request seq's end bears on the back-off: the hold its closed-loop
 * slot waits before its next request (0 = none) and that slot's count. */
void tpr_backoff_done(tp_run *r, const tp_record *rec, uint32_t backoff, uint64_t *hold_ns, uint32_t *count);
/* The limit of requests in a row the server did not take is reached:
 * nothing more is planned, the level ends (and the sweep with it). */
void tpr_end_on_failures(tp_run *r, uint64_t now);
/* The level's request contexts: room for n in flight at once (more are
 * added as needed), and all of them let go (none may be in flight). */
int tpr_ctx_pool_init(tp_run *r, size_t n);
void tpr_ctx_pool_free(tp_run *r);
void tpr_on_plan_timer(tp_timer *t, uint64_t now_ns);
/* Writes what the send window holds, if anything (the level stops). */
void tpr_window_close(tp_run *r);
void tpr_open_windows(tp_run *r, uint64_t start_ns);
void tpr_window_on_completion(tp_run *r, tp_record *rec);
void tpr_level_check_done(tp_run *r);
void tpr_on_interrupt(uv_async_t *a);
int tpr_prepare_point_prompts(tp_run *r, const point *pt, char *err, size_t errlen);
void tpr_count_prompts(tp_run *r, tp_dataset *ds);
int tpr_dist_level_end(tp_run *r, size_t li, char *err, size_t errlen);
int tpr_dist_open(tp_run *r, char *err, size_t errlen);
int tpr_dist_start(tp_run *r, int status, char *err, size_t errlen);
int tpr_dist_leave(tp_run *r, int rv, char *err, size_t errlen);
void tpr_sessions_pump(tp_run *r, uint64_t now);
void tpr_sessions_fill_send(tp_run *r, size_t seq, tp_client_send *snd);
void tpr_sessions_on_done(tp_run *r, size_t seq, uint64_t hold_ns, uint32_t backoff);
int tpr_sessions_level_start(tp_run *r, char *err, size_t errlen);
void tpr_sessions_level_stats(tp_run *r, tp_level_result *lv);
void tpr_sessions_level_end(tp_run *r);
int tpr_run_level(tp_run *r, size_t li, char *err, size_t errlen);
int tpr_exec_setup(tp_run *r, char *err, size_t errlen);
/* CPU time in ns of the calling thread (RUSAGE_THREAD) or the process
 * (RUSAGE_SELF); 0 when unknown. */
uint64_t tpr_cpu_ns(int who);
/* --metrics-hold: the live metrics are served this long after the last
 * level (or until an interruption). */
void tpr_live_hold(tp_run *r);


/* Work around each level (tp_hooks.c), walked in the table's order: open
 * at start-up, begin before the level's first request, stop when its loop
 * stopped, end once its figures are computed (rank 0 only under MPI).
 * Any of the four may be NULL. */
typedef struct tp_level_hook {
  const char *name;
  int (*open)(tp_run *r, char *err, size_t errlen);
  int (*begin)(tp_run *r, size_t li, char *err, size_t errlen);
  void (*stop)(tp_run *r);
  void (*end)(tp_run *r, size_t li, tp_level_result *lv);
} tp_level_hook;

int tpr_hooks_open(tp_run *r, char *err, size_t errlen);
int tpr_hooks_begin(tp_run *r, size_t li, char *err, size_t errlen);
void tpr_hooks_stop(tp_run *r);
void tpr_hooks_end(tp_run *r, size_t li, tp_level_result *lv);

#endif

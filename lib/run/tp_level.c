/* One level: what to plan, the warm-up, the stop rules (a count, a
 * duration, perf_analyzer's stability windows), the interruption and its
 * grace period, the live progress line, and the level's result. */
#include <inttypes.h>
#include <math.h>
#include <sys/resource.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "run/tp_run_internal.h"
#include "util/tp_status_line.h"
#include "metrics/tp_fidelity.h"
#include "metrics/tp_stability.h"
#include "metrics/tp_slices.h"
#include "metrics/tp_steady.h"
#include "report/tp_records.h"
#include "sched/tp_sched.h"
#include "util/tp_stamp.h"

static void close_window(tp_run *r, uint64_t now);

static void on_window_timer(uv_timer_t *t) { close_window(t->data, tp_now_ns()); }

void tpr_open_windows(tp_run *r, uint64_t start_ns) {
  level_state *L = &r->lv;
  L->win_start_ns = start_ns;
  L->win_edges_ns[0] = start_ns;
  if (r->cfg.measure.measure_mode == TP_MEASURE_TIME_WINDOWS) {
    uv_timer_start(&r->window_timer, on_window_timer, r->cfg.measure.measurement_interval_ms,
                   r->cfg.measure.measurement_interval_ms);
    L->window_timer_on = true;
  }
}

/* A request that ended is counted in the open window, and remembers which:
 * the measured requests are those the last three windows counted, so the
 * windows' throughput and the level's figures are over the same requests
 * (a request whose end was seen a little after its window closed counts
 * in the next one). */
void tpr_window_on_completion(tp_run *r, tp_record *rec) {
  level_state *L = &r->lv;
  bool windows = r->cfg.measure.measure_mode == TP_MEASURE_TIME_WINDOWS ||
                 r->cfg.measure.measure_mode == TP_MEASURE_COUNT_WINDOWS;
  if (!windows || !L->win_start_ns || L->stop_planning || rec->warmup) return;
  if (rec->done_ns < L->win_edges_ns[0] || !tp_record_ok(rec)) return;
  rec->window = (uint8_t)(L->trials + 1);
  L->win_done++;
  L->win_lat_sum_ms += (double)(rec->done_ns - rec->sent_ns) / 1e6;
  if (r->cfg.measure.measure_mode == TP_MEASURE_COUNT_WINDOWS &&
      L->win_done >= r->cfg.measure.measurement_request_count)
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
  tpr_progress(r, "  pass [%u] throughput: %.2f requests/s, avg latency %.2f ms", L->trials, L->win_tput[k],
           L->win_lat_ms[k]);
  L->win_start_ns = now;
  L->win_done = 0;
  L->win_lat_sum_ms = 0;
  L->stable = tp_windows_stable(L->win_tput, L->win_lat_ms, L->trials, r->cfg.measure.stability_percentage);
  if (L->stable || L->trials >= r->cfg.measure.max_trials) {
    tpr_stop_planning(r, now);
    if (L->window_timer_on) {
      uv_timer_stop(&r->window_timer);
      uv_timer_stop(&r->grace_timer);
      L->window_timer_on = false;
    }
    if (!L->stable)
      tpr_warn(
          r, "the last three windows never agreed within %g%% in %u trials: reporting the last three anyway",
          r->cfg.measure.stability_percentage, L->trials);
  }
  tpr_level_check_done(r);
}

void tpr_level_check_done(tp_run *r) {
  level_state *L = &r->lv;
  if (L->done) return;
  /* Planning is over once a stop rule or the pacer ended it and the pacer
   * holds nothing back (requests due before the end still leave), or at
   * once on an interruption (what waited was recorded as not sent). */
  bool planning_over = r->interrupted || (L->stop_planning && (!L->pacer || tp_pacer_finished(L->pacer)));
  if (planning_over && L->in_flight == 0 && L->pending_counts == 0 && r->done_n == 0) {
    L->done = true;
    uv_stop(&r->loop);
  }
}

static void on_grace(uv_timer_t *t) {
  tp_run *r = t->data;
  if (r->lv.in_flight) {
    tpr_warn(r, "grace period over: cancelling %u requests still in flight", r->lv.in_flight);
    r->client->ops->cancel_all(r->client);
  }
}

void tpr_end_on_failures(tp_run *r, uint64_t now) {
  level_state *L = &r->lv;
  if (L->server_gone) return;
  L->server_gone = true;
  tpr_warn(r,
           "%s: %" PRIu64 " requests in a row failed to reach the server or were not sent, from %.2f s into the "
           "level: the server went away; the level ends here (--max-consecutive-failures %" PRIu64 ", 0: never)",
           L->desc, L->bo.streak, (double)(L->bo.run_start_ns - L->t0) / 1e9, r->cfg.server.max_consecutive_failures);
  /* Nothing more is planned; what the cap held leaves as not sent
   * (tp_backoff_may_send says no from now on). */
  if (L->sess)
    tp_sessions_stop_at(L->sess, now, now, true);
  else if (L->pacer)
    tp_pacer_stop_at(L->pacer, now, now, true);
  L->stop_planning = true;
  tp_timer_stop(r->timers, &L->plan_timer);
  /* Requests still in flight get the grace period, as after Ctrl-C: a
   * server that holds them without answering cannot hold the level. */
  if (L->in_flight && r->client->ops->cancel_all)
    uv_timer_start(&r->grace_timer, on_grace, r->cfg.measure.grace_period_ms ? r->cfg.measure.grace_period_ms : 1,
                   0);
}

void tpr_on_interrupt(uv_async_t *a) {
  tp_run *r = a->data;
  if (!atomic_load(&r->interrupt_flag)) return;
  r->interrupted = true;
  /* A level still planning is cut short (partial); one whose stop rule
   * already ended its planning only waits for its last answers. */
  if (!r->lv.done && r->lv.t0 && !r->lv.stop_planning && !r->lv.interrupted_ns)
    r->lv.interrupted_ns = tp_now_ns();
  /* Rank 0 stops every rank's level with its own. */
  if (r->mpi) tp_mpi_interrupt(r->mpi);
  level_state *L = &r->lv;
  /* Requests held back by the cap were never sent: they are dropped. */
  tpr_drop_waiting(r, "not sent: the run was interrupted");
  tp_timer_stop(r->timers, &L->plan_timer);
  tpr_window_close(r);
  if (L->sess) {
    /* Turns not yet due never leave, and none waiting for the cap either. */
    tp_sessions_stop_at(L->sess, tp_now_ns(), tp_now_ns(), true);
    tp_sessions_drop_waiting(L->sess, tp_now_ns());
    L->stop_planning = true;
  }
  /* In-flight requests get the grace period to finish; then they are
   * cancelled, so a stalled server cannot hold the results hostage. */
  if (L->in_flight && r->client->ops->cancel_all) {
    tpr_warn(r,
             "interrupted: waiting up to %" PRIu64
             " ms for %u requests in flight (Ctrl-C again to quit at once)",
             r->cfg.measure.grace_period_ms, L->in_flight);
    uv_timer_start(&r->grace_timer, on_grace,
                   r->cfg.measure.grace_period_ms ? r->cfg.measure.grace_period_ms : 1, 0);
  }
  tpr_level_check_done(r);
}

void tp_run_interrupt(tp_run *r) {
  atomic_store(&r->interrupt_flag, true);
  uv_async_send(&r->interrupt_async);
}

/* Over-saturation: a sample a second of the requests in the system. */
static void on_sat(uv_timer_t *t) {
  tp_run *r = t->data;
  level_state *L = &r->lv;
  if (!L->sat || L->stop_planning || L->done) return;
  uint64_t now = tp_now_ns();
  size_t held = L->pacer ? tp_pacer_waiting(L->pacer, now) : 0;
  if (!tp_saturation_sample(L->sat, now, L->in_flight, held)) return;
  uint64_t at = 0;
  char why[192];
  tp_saturation_detected(L->sat, &at, why, sizeof(why));
  bool stop = r->cfg.measure.stop_on_saturation;
  tpr_warn(r, "%s: over-saturated from %.1f s into the level: %s; %s", L->desc, (double)(at - L->t0) / 1e9, why,
           stop ? "the level ends here, and higher loads are skipped (--stop-on-saturation)"
                : "--stop-on-saturation would end the level here");
  if (stop) tpr_end_on_saturation(r, now);
}

void tpr_end_on_saturation(tp_run *r, uint64_t now) {
  level_state *L = &r->lv;
  if (L->stop_planning || L->done) return;
  L->sat_stopped = true;
  /* Partial, as an interruption leaves it: its figures cover what ran. */
  L->interrupted_ns = now;
  tpr_drop_waiting(r, "not sent: the level stopped on over-saturation (--stop-on-saturation)");
  tp_timer_stop(r->timers, &L->plan_timer);
  tpr_window_close(r);
  /* What is in flight gets the grace period, then is cancelled: a
   * saturated server's queue could hold the level for long. */
  if (L->in_flight && r->client->ops->cancel_all)
    uv_timer_start(&r->grace_timer, on_grace, r->cfg.measure.grace_period_ms ? r->cfg.measure.grace_period_ms : 1,
                   0);
  tpr_level_check_done(r);
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
    /* A log's line: whole, never cut or redrawn, the level named. */
    fprintf(r->cfg.output.progress,
            "tokperf: level %zu/%zu %s: %zu%s done, %zu in flight, %.1f requests/s, %zu failed, %.0f s\n",
            L->index + 1, r->n_points, L->desc, done, total, in_flight, rate, failed, secs);
    fflush(r->cfg.output.progress);
    return;
  }
  /* On a terminal, one status line redrawn in place: which level of how
   * many, in the user's words, how far, how fast, how the latest requests
   * fare, and about how long is left; cut to the terminal's width (read at
   * every redraw, so a resized window is followed), least useful first. */
  char ttft[64] = "";
  size_t n = L->live_n < LIVE_TTFT_N ? L->live_n : LIVE_TTFT_N;
  if (n) {
    double v[LIVE_TTFT_N];
    memcpy(v, L->live_ttft, n * sizeof(double));
    qsort(v, n, sizeof(double), cmp_double);
    /* Whole milliseconds from 10 up: a tenth there is noise on a status
     * line, and the room goes to fields that fit an 80-column terminal. */
    double p50 = v[(n - 1) / 2], p99 = v[(size_t)((double)(n - 1) * 0.99)];
    snprintf(ttft, sizeof(ttft), ", TTFT p50 %.*f p99 %.*f ms", p50 < 10 ? 1 : 0, p50, p99 < 10 ? 1 : 0, p99);
  }
  char left[48] = "", window[48] = "";
  const tp_measure_mode mode = r->cfg.measure.measure_mode;
  if (mode == TP_MEASURE_DURATION && !L->sess) {
    /* The measured time is known: what is left of it (and of the warm-up
     * by time before it); requests in flight at its end still finish. */
    uint64_t dur = r->cfg.measure.duration_ms * TP_NS_PER_MS, end = L->measure_end_ns;
    if (!end && L->warmup_end_ns) end = L->warmup_end_ns + dur;
    double s_left = end ? (end > now ? (double)(end - now) / 1e9 : 0) : (double)dur / 1e9;
    snprintf(left, sizeof(left), ", ~%.0f s%s left", s_left, end ? "" : " + warm-up");
  } else if (L->total_all != SIZE_MAX && rate > 0 && L->total_all > done) {
    snprintf(left, sizeof(left), ", ~%.0f s left", (double)(L->total_all - done) / rate);
  }
  if ((mode == TP_MEASURE_TIME_WINDOWS || mode == TP_MEASURE_COUNT_WINDOWS) && L->measure_start_ns)
    snprintf(window, sizeof(window), ", window %u of at most %u", L->trials + 1, r->cfg.measure.max_trials);
  char level[48], desc[160], donef[96], flight[48], failedf[48], ratef[48], secsf[32];
  snprintf(level, sizeof(level), "level %zu/%zu", L->index + 1, r->n_points);
  snprintf(desc, sizeof(desc), " %s", L->desc);
  snprintf(donef, sizeof(donef), ": %zu%s done", done, total);
  snprintf(flight, sizeof(flight), ", %zu in flight", in_flight);
  snprintf(failedf, sizeof(failedf), ", %zu failed", failed);
  snprintf(ratef, sizeof(ratef), ", %.1f req/s", rate);
  snprintf(secsf, sizeof(secsf), ", %.0f s", secs);
  /* keep: the higher, the longer a field stays on a narrow terminal. */
  const tp_status_field f[] = {
      {"tokperf: ", 1}, {level, 11}, {desc, 7},  {donef, 12}, {flight, 4}, {failedf, failed ? 10 : 3},
      {ratef, 5},       {ttft, 6},   {secsf, 2}, {left, 9},   {window, 8},
  };
  size_t width = tp_status_width(r->cfg.output.progress);
  char line[512];
  /* One column short of the width: a line that fills the last column
   * leaves the cursor waiting to wrap, which some terminals do at once. */
  tp_status_fit(f, sizeof(f) / sizeof(f[0]), width > 1 ? width - 1 : width, line, sizeof(line));
  fprintf(r->cfg.output.progress, "\r\033[K%s", line);
  fflush(r->cfg.output.progress);
}

static void describe_point(const point *pt, const tp_load_config *lc, char *buf, size_t len) {
  int n;
  if (pt->mode == TP_LOAD_CONCURRENCY)
    n = snprintf(buf, len, "concurrency %u", pt->concurrency);
  else if (pt->mode == TP_LOAD_RATE && lc->ramp)
    n = snprintf(buf, len, "rate %g to %g/s (%s)", lc->ramp_start_rps, lc->ramp_end_rps,
                 lc->ramp == TP_RAMP_EXPONENTIAL ? "exponential" : "linear");
  else if (pt->mode == TP_LOAD_RATE)
    n = snprintf(buf, len, "rate %g/s", pt->rate);
  else
    n = snprintf(buf, len, "schedule");
  if (pt->input_tokens && n > 0 && (size_t)n < len) n += snprintf(buf + n, len - (size_t)n, ", input %u", pt->input_tokens);
  if (pt->output_tokens && n > 0 && (size_t)n < len) snprintf(buf + n, len - (size_t)n, ", output %u", pt->output_tokens);
}

/* The level afresh (the record array is kept for its room), its prompts,
 * its name, and the prefix of its request ids. */
static int level_reset(tp_run *r, size_t li, char *err, size_t errlen) {
  const point *pt = &r->points[li];
  level_state *L = &r->lv;
  free(L->settled);
  memset(L, 0, sizeof(*L));
  /* The arena keeps its room; the last level's pages and file blocks go. */
  if (r->arena) tp_rec_arena_reset(r->arena);
  if (!r->gaps) r->gaps = tp_gap_pool_new();
  if (r->gaps) tp_gap_pool_reset(r->gaps);
  if (!r->vllm_gaps) r->vllm_gaps = tp_gap_pool_new();
  if (r->vllm_gaps) tp_gap_pool_reset(r->vllm_gaps);
  /* The reset may have moved the records (to memory, on a full disk). */
  if (r->arena) tpr_mirror_arena(r);
  if (!r->loop_lag) r->loop_lag = tp_gap_pool_new();
  if (r->loop_lag) tp_gap_pool_reset(r->loop_lag);
  L->pt = *pt;
  tp_backoff_init(&L->bo, r->cfg.server.max_consecutive_failures);
  L->slots = pt->concurrency;
  L->seq_step = 1;
  r->cur_level = li;
  int rv = tpr_prepare_point_prompts(r, pt, err, errlen);
  if (rv) return rv;
  tpr_count_prompts(r, L->ds);
  tp_timer_init(&L->plan_timer, tpr_on_plan_timer, r);
  tp_rng_seed(&L->out_rng, tp_rng_mix(r->cfg.prompts.random_seed ^ 0x07f, li));

  describe_point(pt, &r->cfg.load, L->desc, sizeof(L->desc));
  L->index = li;
  L->live_n = 0;
  if (pt->mode == TP_LOAD_CONCURRENCY)
    snprintf(r->id_prefix, sizeof(r->id_prefix), "c%u-", pt->concurrency);
  else
    snprintf(r->id_prefix, sizeof(r->id_prefix), "l%zu-", li);
  if (pt->input_tokens || pt->output_tokens)
    snprintf(r->id_prefix + strlen(r->id_prefix), sizeof(r->id_prefix) - strlen(r->id_prefix), "i%uo%u-",
             pt->input_tokens, pt->output_tokens);
  if (r->cfg.measure.num_profile_runs > 1) /* repeated runs: ids stay unique */
    snprintf(r->id_prefix + strlen(r->id_prefix), sizeof(r->id_prefix) - strlen(r->id_prefix), "r%zu-",
             li % r->cfg.measure.num_profile_runs + 1);
  return 0;
}

/* What to plan: the warm-up and the measured count, or no end (a duration,
 * stability windows). */
static void level_counts(tp_run *r, const point *pt) {
  level_state *L = &r->lv;
  L->n_warmup = r->cfg.measure.warmup_request_count;
  uint64_t measured = r->cfg.measure.request_count;
  if (!measured) {
    if (pt->mode == TP_LOAD_CONCURRENCY)
      measured = TP_MAX(16, 4 * (uint64_t)pt->concurrency);
    else if (pt->mode == TP_LOAD_RATE)
      measured = TP_MAX(16, (uint64_t)llround(4 * pt->rate));
  }
  /* A conversations file: the counts are of sessions, and by default each
   * of the file's sessions runs once. */
  if (r->ds.n_sessions && L->ds == &r->ds && !r->cfg.measure.request_count) measured = r->ds.n_sessions;
  switch (r->cfg.measure.measure_mode) {
    case TP_MEASURE_COUNT:
      L->total = pt->mode == TP_LOAD_SCHEDULE && !r->cfg.measure.request_count ? L->n_warmup + r->n_trace
                                                                               : L->n_warmup + measured;
      break;
    default: L->total = SIZE_MAX; break;
  }
  if (pt->mode == TP_LOAD_SCHEDULE && L->total == SIZE_MAX) L->total = r->n_trace + L->n_warmup;
}

/* Open loop: the arrival offsets, drawn ahead from the seed (rate) or the
 * trace's (schedule). */
static int level_offsets(tp_run *r, size_t li, const point *pt) {
  level_state *L = &r->lv;
  if (pt->mode == TP_LOAD_RATE) {
    /* The whole schedule is drawn ahead from the seed: a count, or enough for
     * the warm-up and measurement time with room to spare; the windows mode
     * stops when it has its answer. */
    size_t n = L->total;
    if (n == SIZE_MAX) {
      double secs = (double)(r->cfg.measure.warmup_duration_ms) / 1e3;
      if (r->cfg.measure.measure_mode == TP_MEASURE_DURATION)
        secs += (double)r->cfg.measure.duration_ms / 1e3;
      else if (r->cfg.measure.measure_mode == TP_MEASURE_TIME_WINDOWS)
        secs += (double)r->cfg.measure.measurement_interval_ms / 1e3 * r->cfg.measure.max_trials;
      else
        secs += (double)r->cfg.measure.measurement_request_count * r->cfg.measure.max_trials / pt->rate;
      n = L->n_warmup + (size_t)(pt->rate * secs * 1.1) + 64;
    }
    L->offsets = malloc(n * sizeof(uint64_t));
    if (!L->offsets) return TP_ENOMEM;
    const tp_load_config *lc = &r->cfg.load;
    int rv = lc->ramp ? tp_sched_fill_ramp(L->offsets, n, L->n_warmup, lc->ramp, lc->ramp_start_rps,
                                           lc->ramp_end_rps, lc->arrival, lc->burstiness,
                                           tp_sched_seed(r->cfg.prompts.random_seed, li))
                      : tp_sched_fill(L->offsets, n, pt->rate, lc->arrival, lc->burstiness,
                                      tp_sched_seed(r->cfg.prompts.random_seed, li));
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
  return 0;
}

/* What the level will do, in one line. */
static void level_announce(tp_run *r) {
  level_state *L = &r->lv;
  const char *desc = L->desc;
  if (L->sess && L->sess_total == SIZE_MAX)
    tpr_progress(r, "%s: sessions of %s for %" PRIu64 " ms, each turn with its history", desc, r->ds.source,
                 r->cfg.measure.duration_ms);
  else if (L->sess)
    tpr_progress(r, "%s: %zu sessions of %s (+%zu warm-up), each turn with its history", desc,
                 L->sess_total - L->n_warmup, r->ds.source, L->n_warmup);
  else if (r->cfg.measure.measure_mode == TP_MEASURE_TIME_WINDOWS)
    tpr_progress(r, "%s: measuring in windows of %" PRIu64 " ms until three agree within %g%%", desc,
                 r->cfg.measure.measurement_interval_ms, r->cfg.measure.stability_percentage);
  else if (r->cfg.measure.measure_mode == TP_MEASURE_COUNT_WINDOWS)
    tpr_progress(r, "%s: measuring in windows of %" PRIu64 " requests until three agree within %g%%", desc,
                 r->cfg.measure.measurement_request_count, r->cfg.measure.stability_percentage);
  else if (r->cfg.measure.measure_mode == TP_MEASURE_DURATION)
    tpr_progress(r, "%s: measuring for %" PRIu64 " ms", desc, r->cfg.measure.duration_ms);
  else
    tpr_progress(r, "%s: %zu requests (+%zu warm-up)", desc, L->total - L->n_warmup, L->n_warmup);
}

/* A single-turn level's pacer (every request a session of one turn), made
 * once the hooks have split the level between ranks: a closed loop of the
 * level's slots, or the arrival schedule under the in-flight cap.  A rank
 * with no share of the level (no slot of the concurrency, no arrival of the
 * schedule, no request of the count) plans nothing and gets none. */
static int level_pacer(tp_run *r) {
  level_state *L = &r->lv;
  bool open = L->pt.mode != TP_LOAD_CONCURRENCY;
  if (L->stop_planning || L->total == 0 || (open ? L->n_offsets == 0 : L->slots == 0)) {
    L->stop_planning = true;
    return 0;
  }
  tp_pacer_opts o = {open ? TP_PACER_OPEN : TP_PACER_CLOSED, L->slots, L->offsets, L->n_offsets,
                     L->total == SIZE_MAX ? UINT64_MAX : (uint64_t)L->total, {NULL, NULL, NULL}};
  int rv = tp_pacer_new(&L->pacer, &o);
  if (rv) return rv;
  tp_pacer_start(L->pacer, L->t0);
  return 0;
}

/* Records the arena holds ahead at most: a file-backed arena only sets its
 * file's size and maps it (tp_rec_arena_expect: untouched pages cost
 * nothing, and their blocks are reserved a step at a time as records are
 * planned), so a million records (a few hundred megabytes of address
 * space) cost no more than a few; heap memory is zeroed as it is taken,
 * so less is taken ahead there. */
#define AHEAD_FILE_MAX ((size_t)1 << 20)
#define AHEAD_HEAP_MAX ((size_t)1 << 16)

/* What the level needs before its first request: room for the records it
 * will plan when that is known (a count; an open loop's arrivals, drawn
 * for its whole duration), so the array does not double on the loop
 * mid-level; and its request contexts, one per slot. */
static int level_prepare(tp_run *r) {
  level_state *L = &r->lv;
  size_t want = 0;
  if (!L->sess && L->pt.mode != TP_LOAD_CONCURRENCY)
    want = L->n_offsets < L->total ? L->n_offsets : L->total;
  else if (!L->sess && L->total != SIZE_MAX)
    want = L->total;
  /* A file-backed arena maps ahead and reserves the first step of blocks
   * now (its first records, whatever the level's length). */
  if (r->arena && tp_rec_arena_file_backed(r->arena)) {
    if (want) (void)tp_rec_arena_expect(r->arena, want < AHEAD_FILE_MAX ? want : AHEAD_FILE_MAX);
    want = 1;
  }
  /* Taken ahead only: a failure here is a growth later. */
  if (want) (void)tpr_reserve_records(r, want < AHEAD_HEAP_MAX ? want : AHEAD_HEAP_MAX);
  /* The first write into a file mapping whose blocks were just let go
   * stalls for the file system (about 2 ms on ext4 here, where later pages
   * take microseconds): taken now, before the clock starts, not by the
   * level's first request.  Every record is initialised again when its
   * request is planned. */
  if (L->cap) tp_record_init(&L->recs[0]);
  return tpr_ctx_pool_init(r, L->slots ? L->slots : 256);
}

/* ------------------------------------------------------------------------ */
/* The client's own figures (docs/metrics.md, "Fidelity")                   */

uint64_t tpr_cpu_ns(int who) {
  struct rusage ru;
  if (getrusage(who, &ru)) return 0;
  return ((uint64_t)ru.ru_utime.tv_sec + (uint64_t)ru.ru_stime.tv_sec) * TP_NS_PER_S +
         ((uint64_t)ru.ru_utime.tv_usec + (uint64_t)ru.ru_stime.tv_usec) * 1000;
}

/* The counters now.  The loop runs on this thread (tp_run_exec's), so the
 * thread's CPU time is the loop's. */
static void fid_take(tp_run *r, fid_mark *m) {
  m->t_ns = tp_now_ns();
  m->reads = tp_stamp_reads(&r->loop);
  m->thread_cpu_ns = tpr_cpu_ns(RUSAGE_THREAD);
  m->process_cpu_ns = tpr_cpu_ns(RUSAGE_SELF);
}

static void on_read_lag(void *ctx, uint64_t lag_ns) {
  tp_run *r = ctx;
  if (r->loop_lag) tp_gap_pool_add(r->loop_lag, lag_ns);
  if (r->live) tp_live_read_lag(r->live, lag_ns);
}

/* The loop's reads, their lag and the CPU over the level into lv's
 * fidelity block (the records gave the rest), then the verdict. */
static void level_fidelity(tp_run *r, tp_level_result *lv) {
  const fid_mark *a = &r->lv.fid_begin, *b = &r->lv.fid_end;
  tp_fidelity *f = &lv->fidelity;
  if (b->t_ns > a->t_ns) {
    double wall = (double)(b->t_ns - a->t_ns) / (double)TP_NS_PER_S;
    f->wall_s = wall;
    f->reads = b->reads - a->reads;
    f->reads_per_s = (double)f->reads / wall;
    if (b->thread_cpu_ns >= a->thread_cpu_ns)
      f->client_cpu_pct = 100.0 * (double)(b->thread_cpu_ns - a->thread_cpu_ns) / (double)(b->t_ns - a->t_ns);
    if (b->process_cpu_ns >= a->process_cpu_ns)
      f->process_cpu_pct = 100.0 * (double)(b->process_cpu_ns - a->process_cpu_ns) / (double)(b->t_ns - a->t_ns);
  }
  if (r->loop_lag) tp_gap_pool_stat(r->loop_lag, &f->loop_lag_ms);
  tp_fidelity_judge(lv);
}

/* The hooks begin, the clock starts (MPI's hook starts it on every rank at
 * once) and the first requests leave; returns once the level is over and
 * every timer of it is stopped. */
static int level_drive(tp_run *r, size_t li, const point *pt, char *err, size_t errlen) {
  level_state *L = &r->lv;
  L->total_all = L->total;
  int rv = tpr_hooks_begin(r, li, err, errlen);
  if (rv) return rv;
  if (level_prepare(r)) {
    tp_seterr(err, errlen, "cannot start the level: out of memory");
    return TP_ENOMEM;
  }
  if (!r->mpi) L->t0 = tp_now_ns();
  /* The client's counters from here to the loop's end; the reads' lags go
   * to the level's pool meanwhile. */
  fid_take(r, &L->fid_begin);
  tp_stamp_set_lag_sink(&r->loop, r->loop_lag || r->live ? on_read_lag : NULL, r);
  if (r->cfg.measure.warmup_duration_ms)
    L->warmup_end_ns = L->t0 + r->cfg.measure.warmup_duration_ms * TP_NS_PER_MS;
  if (r->cfg.output.progress) {
    r->last_progress_ns = L->t0;
    uv_timer_start(&r->progress_timer, on_progress, PROGRESS_MS, PROGRESS_MS);
  }
  /* Over-saturation is an open loop's: a closed loop's count is fixed.
   * One process only: a rank sees only its share. */
  if ((pt->mode == TP_LOAD_RATE || pt->mode == TP_LOAD_SCHEDULE) && !L->sess && !r->mpi) {
    L->sat = tp_saturation_new();
    if (L->sat) uv_timer_start(&r->sat_timer, on_sat, 1000, 1000);
  }

  if (L->sess) {
    tp_sessions_start(L->sess, L->t0);
  } else if (level_pacer(r)) {
    tp_seterr(err, errlen, "cannot start the level: out of memory");
    rv = TP_ENOMEM;
  }
  if (!rv) tpr_pump(r, L->t0);
  tpr_level_check_done(r);
  while (!rv && !L->done) uv_run(&r->loop, UV_RUN_DEFAULT);
  fid_take(r, &L->fid_end);
  tp_stamp_set_lag_sink(&r->loop, NULL, NULL);
  /* The level's requests are all over: nothing more is paced. */
  tp_pacer_free(L->pacer);
  L->pacer = NULL;
  /* Every request's on_done has run (the level ends with none in flight);
   * otherwise the contexts are left to the client that still holds them. */
  if (L->in_flight == 0) tpr_ctx_pool_free(r);
  uv_timer_stop(&r->progress_timer);
  uv_timer_stop(&r->sat_timer);
  if (r->progress_tty && r->cfg.output.progress) fputs("\r\033[K", r->cfg.output.progress);
  tpr_hooks_stop(r);
  tp_timer_stop(r->timers, &L->plan_timer);
  tpr_window_close(r);
  uv_timer_stop(&r->window_timer);
  uv_timer_stop(&r->grace_timer);
  return rv;
}

/* Which requests are measured (L->lo): stability windows, the last three
 * windows' requests; a duration, those planned within it. */
static void level_choose_measured(tp_run *r) {
  level_state *L = &r->lv;
  tp_level_opts *lo = &L->lo;
  memset(lo, 0, sizeof(*lo));
  lo->goodput_ttft_ms = r->cfg.measure.goodput_ttft_ms;
  lo->goodput_itl_ms = r->cfg.measure.goodput_itl_ms;
  lo->goodput_latency_ms = r->cfg.measure.goodput_latency_ms;
  lo->goodput_tpot_ms = r->cfg.measure.goodput_tpot_ms;
  lo->goodput_ttst_ms = r->cfg.measure.goodput_ttst_ms;
  lo->goodput_tps_per_user_min = r->cfg.measure.goodput_tps_per_user_min;
  lo->gaps = r->mpi ? NULL : r->gaps; /* other ranks' gaps stay there */
  lo->vllm_gaps = r->mpi ? NULL : r->vllm_gaps;
  bool windows = r->cfg.measure.measure_mode == TP_MEASURE_TIME_WINDOWS ||
                 r->cfg.measure.measure_mode == TP_MEASURE_COUNT_WINDOWS;
  if (windows && L->trials > 0) {
    uint32_t first = L->trials >= 3 ? L->trials - 3 : 0;
    lo->window_start_ns = L->win_edges_ns[first];
    lo->window_end_ns = L->win_edges_ns[L->trials];
    for (size_t i = 0; i < L->n_planned; i++) {
      tp_record *rec = &L->recs[i];
      /* Counted by one of the last three windows (tpr_window_on_completion);
       * a failed request by the span it ended in. */
      bool in = tp_record_ok(rec) ? rec->window > first && rec->window <= L->trials
                                  : rec->done_ns >= lo->window_start_ns && rec->done_ns <= lo->window_end_ns;
      if (!in) rec->warmup = true;
    }
    tpr_mark_measured_lines(r);
  } else if (L->measure_end_ns) {
    for (size_t i = 0; i < L->n_planned; i++)
      if (L->recs[i].planned_ns >= L->measure_end_ns) L->recs[i].warmup = true;
  }
}

/* A level an interruption cut short says so, with how long it ran of what
 * it was set to run. */
static void level_partial(const tp_run *r, tp_level_result *lv) {
  const level_state *L = &r->lv;
  if (!L->interrupted_ns) return;
  lv->partial = true;
  lv->partial_ran_s = (double)(L->interrupted_ns - L->t0) / 1e9;
  if (r->cfg.measure.measure_mode == TP_MEASURE_DURATION)
    lv->partial_planned_s = (double)(r->cfg.measure.warmup_duration_ms + r->cfg.measure.duration_ms) / 1e3;
  else if (L->sess && L->sess_total != SIZE_MAX && L->sess_total > L->n_warmup)
    lv->partial_planned_requests = L->sess_total - L->n_warmup;
  else if (!L->sess && L->total != SIZE_MAX && L->total_all > L->n_warmup)
    lv->partial_planned_requests = L->total_all - L->n_warmup;
}

/* The level's time series from its records (docs/metrics.md, "Time
 * series"); the server's series come with the hooks (scraping). */
static int level_slices(tp_run *r, tp_level_result *lv) {
  level_state *L = &r->lv;
  double sd = r->cfg.measure.slice_duration_s > 0 ? r->cfg.measure.slice_duration_s : 1.0;
  uint64_t w = (uint64_t)llround(sd * 1e9);
  if (!w) w = 1;
  tp_slice *s = NULL;
  size_t n = 0;
  int rv = tp_slices_compute(&s, &n, L->recs, L->n_planned, L->t0, &w);
  if (rv) return rv;
  lv->slice_s = (double)w / 1e9;
  lv->start_ns = L->t0;
  lv->slices = s;
  lv->n_slices = n;
  return 0;
}

/* The level's figures, from its records, and the hooks' part of them. */
static int level_result(tp_run *r, size_t li, const point *pt, tp_level_result *lv) {
  level_state *L = &r->lv;
  int rv = tp_level_compute_ex(lv, L->recs, L->n_planned, &L->lo);
  if (rv) return rv;
  lv->load_mode = pt->mode;
  lv->concurrency = pt->concurrency;
  lv->request_rate = pt->rate;
  lv->input_tokens_mean = pt->input_tokens;
  lv->output_tokens_mean = r->cfg.prompts.n_output_tokens_means ? pt->output_tokens : 0;
  lv->max_in_flight = L->max_in_flight;
  if (L->sess) tpr_sessions_level_stats(r, lv);
  lv->trials = L->trials;
  lv->stable = L->stable;
  lv->prefix_cache_hit_rate = -1;
  level_partial(r, lv); /* before the hooks: the artifacts say it too */
  level_fidelity(r, lv);
  rv = tp_steady_compute(&lv->steady, L->recs, L->n_planned, lv->concurrency,
                         r->cfg.measure.steady_state_threshold, 0);
  if (rv) return rv;
  uint64_t sat_at = 0;
  lv->saturation.at_s = -1;
  if (tp_saturation_detected(L->sat, &sat_at, lv->saturation.reason, sizeof(lv->saturation.reason))) {
    lv->saturation.detected = 1;
    lv->saturation.at_s = (double)(sat_at - L->t0) / 1e9;
    lv->saturation.stopped = L->sat_stopped;
  }
  tp_saturation_free(L->sat);
  L->sat = NULL;
  rv = level_slices(r, lv);
  if (rv) return rv;
  tpr_hooks_end(r, li, lv);
  if (L->lo.window_end_ns) {
    lv->window_start_s = (double)(L->lo.window_start_ns - L->t0) / 1e9;
    lv->window_end_s = (double)(L->lo.window_end_ns - L->t0) / 1e9;
  }
  /* The server going away, as the level saw it (this process's requests). */
  lv->server_outages = L->bo.runs;
  lv->server_away_requests = L->bo.away_n;
  lv->server_away_s = L->bo.runs ? (double)(L->bo.away_ns - L->t0) / 1e9 : -1;
  lv->server_back_s = L->bo.runs && L->bo.back_ns ? (double)(L->bo.back_ns - L->t0) / 1e9 : -1;
  lv->server_gone = L->server_gone;
  return 0;
}

/* The level's last words, and its records let go. */
static void level_finish(tp_run *r, const tp_level_result *lv) {
  level_state *L = &r->lv;
  r->n_levels++;
  tpr_records_flush(r);
  tpr_records_say(r);
  tpr_progress(r, "%s: %" PRIu64 " succeeded, %" PRIu64 " failed, %.2f requests/s", L->desc, lv->succeeded,
               lv->failed, lv->request_throughput);
  if (L->server_gone) r->server_gone = true;
  if (lv->requests && lv->late_sends * 100 > lv->requests)
    tpr_warn(r, "%" PRIu64 " of %" PRIu64 " requests (%.1f%%) left over 1 ms after their planned time; "
                "the client or the in-flight cap held them back (see send lag)%s",
             lv->late_sends, lv->requests, 100.0 * (double)lv->late_sends / (double)lv->requests,
             r->send_window_ns > TP_NS_PER_MS ? ", and --send-window holds each up to its width" : "");
  if (lv->answers_before_send)
    tpr_warn(r, "%" PRIu64 " of %" PRIu64 " requests have an answer dated before their send: the client's "
                "clock misdated them (please report it; their records are kept as measured)",
             lv->answers_before_send, lv->requests);
  for (size_t i = 0; i < L->n_planned; i++) tp_record_fini(&L->recs[i]);
  free(L->offsets);
  L->offsets = NULL;
  tpr_sessions_level_end(r);
}

int tpr_run_level(tp_run *r, size_t li, char *err, size_t errlen) {
  const point *pt = &r->points[li];
  level_state *L = &r->lv;
  int rv = level_reset(r, li, err, errlen);
  if (rv) return rv;
  level_counts(r, pt);
  rv = level_offsets(r, li, pt);
  if (rv) return rv;
  if (r->ds.n_sessions && L->ds == &r->ds) {
    rv = tpr_sessions_level_start(r, err, errlen);
    if (rv) return rv;
  }
  level_announce(r);
  rv = level_drive(r, li, pt, err, errlen);
  if (rv) return rv;
  /* From here the records are read in order (statistics, exports). */
  if (r->arena) tp_rec_arena_read_back(r->arena);
  level_choose_measured(r);
  if (r->mpi) {
    /* The other ranks hand their records to rank 0 and are done with the
     * level; rank 0 goes on with the union. */
    rv = tpr_dist_level_end(r, li, err, errlen);
    if (rv || r->rank != 0) return rv;
  }
  tp_level_result *lv = &r->levels[r->n_levels];
  rv = level_result(r, li, pt, lv);
  if (rv) return rv;
  level_finish(r, lv);
  return 0;
}

/* The record sink: a finished request's tokens are counted on libuv's
 * thread pool, so counting never delays a timestamp; its line is written
 * to the records file at once (on the pool with them, or on the loop when
 * there is nothing to count: see submit), and the record then lets go of
 * its response times and text (the exports read them back from the file). */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "run/tp_run_internal.h"
#include "report/tp_records.h"
#include "util/tp_files.h"

/* A request is complete (tokens counted, line written). */
/* Records below released_at + RELEASE_STEP stay resident: the arena is
 * asked to let go of pages in steps of this many records (a few hundred
 * kilobytes), not once per request. */
#define RELEASE_STEP 4096

/* A request is settled: its record is complete and nothing writes to it
 * until the level's end.  Once every record below a point is, the pages
 * holding them leave memory (tp_rec_arena.h): they come back, unchanged,
 * when a stability window or the level's statistics read them. */
static void settle(tp_run *r, size_t seq) {
  level_state *L = &r->lv;
  size_t word = seq / 64;
  if (word >= L->settled_words) {
    size_t n = L->settled_words ? L->settled_words : 64;
    while (n <= word) n *= 2;
    uint64_t *b = realloc(L->settled, n * sizeof(*b));
    if (!b) return; /* out of memory: the record only stays resident */
    memset(b + L->settled_words, 0, (n - L->settled_words) * sizeof(*b));
    L->settled = b;
    L->settled_words = n;
  }
  L->settled[word] |= 1ULL << (seq % 64);
  while (L->settled_low < L->n_planned && L->settled_low / 64 < L->settled_words &&
         (L->settled[L->settled_low / 64] >> (L->settled_low % 64) & 1))
    L->settled_low++;
  if (L->settled_low >= L->released_at + RELEASE_STEP) {
    tp_rec_arena_release(r->arena, L->settled_low);
    L->released_at = L->settled_low;
  }
}

static void finalize(tp_run *r, size_t seq) {
  /* Its token counts are final now (counted, or chosen from the server's). */
  if (r->live) tp_live_tokens(r->live, &r->lv.recs[seq]);
  settle(r, seq);
  tpr_level_check_done(r);
}

/* A prompt's tokens, with the special tokens the model's tokenizer adds
 * (BOS, ...) when tokenizer_add_special_tokens asks for them: that is how
 * most servers count a prompt.  Output and reasoning tokens never include
 * them (tp_tok_count): a server's completion count has no BOS, and an EOS
 * that ends generation is not in the text. */
int tpr_count_input(const tp_run *r, const tp_tok *tok, const char *text, size_t len, size_t *n) {
  return r->cfg.prompts.tokenizer_add_special_tokens ? tp_tok_count_special(tok, text, len, n)
                                                     : tp_tok_count(tok, text, len, n);
}

/* A write to the records file failed (the records lock held): nothing
 * more is written to it, and it is cut back to its last whole line, the
 * end of the last flush that succeeded, so a reader never finds half a
 * line (or a line with the next one glued on).  What stdio still holds
 * is dropped.  Lines past the cut were never read back (their records
 * keep their details in memory: see work_jobs).  The loop says it
 * (tpr_records_say). */
static void records_fail(tp_run *r, int e) {
  if (r->records_errno) return;
  r->records_errno = e ? e : EIO;
  __fpurge(r->records_fp);
  clearerr(r->records_fp);
  /* A pipe cannot be cut: what reached it stays, perhaps half a line. */
  r->records_cut = r->shed_records && ftruncate(fileno(r->records_fp), r->records_good) == 0;
}

/* After a flush (the records lock held): its bytes are in the file, or
 * the file has failed. */
static bool records_flushed(tp_run *r) {
  if (fflush(r->records_fp)) {
    records_fail(r, errno);
    return false;
  }
  r->records_good = r->records_end;
  r->records_lines_good = r->records_lines;
  return true;
}

bool tpr_records_flush(tp_run *r) {
  if (!r->records_fp) return true;
  uv_mutex_lock(&r->records_lock);
  bool ok = !r->records_errno && records_flushed(r);
  uv_mutex_unlock(&r->records_lock);
  return ok;
}

/* On the loop: a failed records file is said once, with the run's first
 * output failure (tp_run_output_error). */
void tpr_records_say(tp_run *r) {
  if (!r->records_errno || r->records_said) return;
  r->records_said = true;
  char why[700];
  tp_write_error(why, sizeof(why), r->cfg.output.records_path, r->records_errno);
  if (r->records_cut)
    tpr_output_failed(r,
                      "%s: it stops after its first %" PRIu64
                      " records, every line whole; the rest stay in memory for the report",
                      why, r->records_lines_good);
  else
    tpr_output_failed(r, "%s: it stops after its first %" PRIu64 " records (its last line may be cut)", why,
                      r->records_lines_good);
}

/* One line of the records file (any thread: the file has its lock).
 * Returns the line's byte offset plus 1, or 0 when it was not written
 * whole. */
uint64_t tpr_write_record_line(tp_run *r, const count_job *j, bool flush) {
  if (!r->records_fp) return 0;
  static const char *const source[] = {"auto", "client", "server"};
  tp_token_source src = r->cfg.prompts.token_source;
  tp_records_line l = {j->id, j->level, j->mode, j->concurrency, j->rate, r->mpi != NULL, j->session_id,
                       j->measured, (unsigned)src < 3 ? source[src] : NULL};
  char *line = tp_records_format(&j->snap, &l);
  if (!line) return 0;
  uv_mutex_lock(&r->records_lock);
  bool ok = !r->records_errno;
  /* The file's offset is counted here (the sink is its only writer, from
   * an empty file), not asked of stdio, which costs a system call a line.
   * A pipe's lines are written all the same, only they cannot be read
   * back. */
  off_t at = r->shed_records ? r->records_end : -1;
  size_t len = strlen(line);
  if (ok && (fwrite(line, 1, len, r->records_fp) != len || fputc('\n', r->records_fp) == EOF)) {
    records_fail(r, errno);
    ok = false;
  }
  if (ok) {
    r->records_lines++;
    r->records_end += (off_t)len + 1;
  }
  if (ok && flush) ok = records_flushed(r);
  uv_mutex_unlock(&r->records_lock);
  free(line);
  return ok && at >= 0 ? (uint64_t)at + 1 : 0;
}

/* Counts a finished request's tokens (any thread). */
static void count_tokens(count_job *j) {
  tp_record *rec = &j->snap;
  if (j->tok && j->sent_text) {
    /* Counted whole: a marker or prefix can merge with the prompt's first
     * piece, so the sum of separate counts could be off by one. */
    size_t n = 0;
    if (tpr_count_input(j->run, j->tok, j->sent_text, j->sent_len, &n) == 0) rec->input_tokens = (int64_t)n;
  }
  if (j->tok && rec->reasoning.len) {
    size_t n = 0;
    rec->reasoning_tokens =
        tp_tok_count(j->tok, (const char *)rec->reasoning.data, rec->reasoning.len, &n) == 0 ? (int64_t)n : -1;
  }
  if (rec->output_ids >= 0) {
    rec->output_tokens = rec->output_ids; /* the ids themselves: exact */
  } else if (j->tok) {
    size_t n = 0;
    rec->output_tokens =
        tp_tok_count(j->tok, rec->text.data ? (const char *)rec->text.data : "", rec->text.len, &n) == 0
            ? (int64_t)n
            : -1;
  }
}

void tpr_count_work(uv_work_t *w) {
  count_job *j = w->data;
  count_tokens(j);
  /* Flushed per request: a crash or a kill loses nothing already measured. */
  j->line_off = tpr_write_record_line(j->run, j, true);
}

/* Requests that ended in the same turn of the loop go to the pool as one
 * batch: one hand-over to a pool thread and back (a futex wake-up, two
 * context switches and the loop's async wake-up, which cost more than
 * the line itself), and one flush of the records file for all their lines. */
#define BATCH_MAX 256

typedef struct count_batch {
  uv_work_t work;
  tp_run *run;
  size_t n;
  count_job *jobs[];
} count_batch;

/* Counts and writes the lines of n jobs (any thread), with one flush for
 * them all. */
static void work_jobs(tp_run *r, count_job **jobs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    count_tokens(jobs[i]);
    jobs[i]->line_off = tpr_write_record_line(r, jobs[i], false);
  }
  /* Flushed as the batch is written, before the loop learns of it: a
   * crash or a kill loses nothing already measured.  Lines a failed flush
   * may have lost are not read back (their records keep their data). */
  if (!r->records_fp) return;
  if (!tpr_records_flush(r))
    for (size_t i = 0; i < n; i++) jobs[i]->line_off = 0;
}

static void batch_work(uv_work_t *w) {
  count_batch *b = w->data;
  work_jobs(b->run, b->jobs, b->n);
}

/* --token-source: output_tokens and input_tokens become the counts the
 * report uses, the server's or the client's; the client's stay in
 * client_*.  A server's completion count includes the reasoning tokens,
 * which the client counts apart: they are taken off when it counted them. */
static void choose_token_counts(const tp_run *r, tp_record *rec) {
  tp_token_source src = r->cfg.prompts.token_source;
  if (rec->output_ids >= 0) rec->output_tokens = rec->output_ids;
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

static void job_after(count_job *j, int status) {
  tp_run *r = j->run;
  tpr_records_say(r);
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

static void batch_after(uv_work_t *w, int status) {
  count_batch *b = w->data;
  for (size_t i = 0; i < b->n; i++) job_after(b->jobs[i], status);
  free(b);
}

/* Jobs done on the loop: the batch's work and its end, at once. */
static void jobs_here(tp_run *r, count_job **jobs, size_t n) {
  work_jobs(r, jobs, n);
  for (size_t i = 0; i < n; i++) job_after(jobs[i], 0);
}

/* Hands n jobs to the pool as one batch (their pending counts already
 * taken); does them here when it cannot, so none is ever lost. */
static void dispatch(tp_run *r, count_job **jobs, size_t n) {
  count_batch *b = malloc(sizeof(*b) + n * sizeof(*jobs));
  if (b) {
    b->run = r;
    b->n = n;
    memcpy(b->jobs, jobs, n * sizeof(*jobs));
    b->work.data = b;
    if (uv_queue_work(&r->loop, &b->work, batch_work, batch_after) == 0) return;
    free(b);
  }
  jobs_here(r, jobs, n);
}

/* Whether a request that just ended is measured, as far as is known now:
 * stability windows are chosen at the level's end (tpr_mark_measured_lines). */
static int measured_as_written(const tp_run *r, const tp_record *rec) {
  const level_state *L = &r->lv;
  bool windows = r->cfg.measure.measure_mode == TP_MEASURE_TIME_WINDOWS ||
                 r->cfg.measure.measure_mode == TP_MEASURE_COUNT_WINDOWS;
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
void tpr_mark_measured_lines(tp_run *r) {
  if (!r->records_fp || !r->cfg.output.records_path) return;
  char err[600];
  snprintf(err, sizeof(err), "cannot flush the records file %s", r->cfg.output.records_path);
  if (r->records_errno) return;
  if (!tpr_records_flush(r) || tp_records_mark_measured(r->cfg.output.records_path, &r->records_marked_to,
                                                        r->n_levels, line_measured, r, err, sizeof(err)))
    tpr_warn(r, "%s: its lines of this level say \"measured\": false", err);
}

/* A request whose tokens need no pool: its record is complete now. */
static void settle_here(tp_run *r, size_t seq) {
  tp_record *rec = &r->lv.recs[seq];
  tpr_window_on_completion(r, rec);
  choose_token_counts(r, rec);
  finalize(r, seq);
}

/* The bookkeeping of a request that ended, and its job for the pool when
 * its tokens are counted or its line written there; NULL when it was
 * settled here. */
static count_job *begin_done(tp_run *r, size_t seq) {
  level_state *L = &r->lv;
  tp_record *rec = &L->recs[seq];
  tpr_stats_done(r, rec);
  /* Its response times are still here (shed once its line is written). */
  if (r->gaps && tp_record_ok(rec) && measured_as_written(r, rec) == TP_RECORD_MEASURED) {
    tp_gap_pool_add_record(r->gaps, rec);
    if (r->vllm_gaps) tp_gap_pool_add_vllm(r->vllm_gaps, rec);
  }
  count_job *j = r->tok || r->records_fp ? calloc(1, sizeof(*j)) : NULL;
  if (!j) {
    settle_here(r, seq);
    return NULL;
  }
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
  } else if (r->cfg.prompts.cache_bust || r->n_prefixes) {
    tpr_build_sent_text(r, seq, &r->sendbuf);
    j->sent_text = tp_strndup((const char *)r->sendbuf.data, r->sendbuf.len);
    j->sent_len = r->sendbuf.len;
  }
  return j;
}

/* The queued requests leave as one batch. */
static void flush_queue(tp_run *r) {
  size_t n = r->count_n;
  r->count_n = 0;
  tp_timer_stop(r->timers, &r->count_timer);
  if (n) dispatch(r, r->count_q, n);
}

static void on_count_timer(tp_timer *t, uint64_t now_ns) {
  (void)now_ns;
  flush_queue(t->data);
}

/* A job waits in the queue; the first one arms the timer that bounds its
 * wait. */
static void enqueue(tp_run *r, count_job *j) {
  if (!r->count_timer_ready) {
    tp_timer_init(&r->count_timer, on_count_timer, r);
    r->count_timer_ready = true;
  }
  if (!r->count_n) tp_timer_start(r->timers, &r->count_timer, tp_now_ns() + COUNT_WAIT_MS * TP_NS_PER_MS);
  r->count_q[r->count_n++] = j;
  if (r->count_n == COUNT_Q_MAX) flush_queue(r);
}

/* Hands n jobs on.  Without a tokenizer, and with a regular records file,
 * they are done here on the loop: their lines cost a microsecond or two
 * each and one write to the page cache, where the hand-over to a pool
 * thread and back cost two context switches and a wake-up of the loop,
 * which at tens of thousands of requests a second took the client's CPU
 * to its limit (and, with tokperf on a real-time priority, its pool
 * threads held the loop off its send times for milliseconds).  A pipe or a
 * terminal may block, and a tokenizer's counts take longer: those go to
 * the pool in batches.  A hand-over costs more than a line or a short
 * count, and one request ends per turn of the loop at tens of thousands a
 * second, so the jobs queue (r->count_q) and leave together: at most
 * COUNT_WAIT_MS later (their lines reach the file that much later; no
 * timestamp moves), at once when the queue is full or nothing is in
 * flight. */
/* Whether the tokenizer has nothing to do for these jobs: answers counted
 * by their token ids (the engine protocols), no text sent to count apart,
 * no reasoning.  They are then as cheap as without a tokenizer. */
static bool nothing_to_count(count_job *const *jobs, size_t n) {
  for (size_t i = 0; i < n; i++) {
    const tp_record *s = &jobs[i]->snap;
    if (jobs[i]->sent_text || s->output_ids < 0 || s->reasoning.len) return false;
  }
  return true;
}

static void submit(tp_run *r, count_job **jobs, size_t n) {
  level_state *L = &r->lv;
  /* The windows are fed as the request ends, not once its tokens are
   * counted: a count that finished after its window closed would leave
   * the request out of that window's throughput (and, past the last
   * window, out of every one).  The windows need no tokens. */
  for (size_t i = 0; i < n; i++) {
    L->pending_counts++;
    tpr_window_on_completion(r, &L->recs[jobs[i]->seq]);
  }
  if ((!r->tok || nothing_to_count(jobs, n)) && r->shed_records) {
    jobs_here(r, jobs, n);
    return;
  }
  for (size_t i = 0; i < n; i++) enqueue(r, jobs[i]);
  if (!L->in_flight) flush_queue(r);
}

void tpr_finish_done(tp_run *r, size_t seq) {
  count_job *j = begin_done(r, seq);
  if (j) submit(r, &j, 1);
}

void tpr_on_done_defer(tp_defer *d) {
  tp_run *r = d->data;
  /* The queue counts as pending until every entry is handed on, so the
   * level cannot end half-way through it. */
  count_job *jobs[BATCH_MAX];
  size_t n = 0;
  for (size_t i = 0; i < r->done_n; i++) {
    count_job *j = begin_done(r, r->done_q[i]);
    if (j) jobs[n++] = j;
    if (n == BATCH_MAX) {
      submit(r, jobs, n);
      n = 0;
    }
  }
  if (n) submit(r, jobs, n);
  r->done_n = 0;
  tpr_level_check_done(r);
}

/* The records file (--records, or the artifact directory's), opened before
 * the first request. */
int tpr_sink_open(tp_run *r, char *err, size_t errlen) {
  /* The records' file goes beside the records file (on the disk the user
   * chose for results), else in $TMPDIR. */
  char dir[4096] = "";
  const char *slash = r->cfg.output.records_path ? strrchr(r->cfg.output.records_path, '/') : NULL;
  if (slash)
    snprintf(dir, sizeof(dir), "%.*s", (int)(slash - r->cfg.output.records_path), r->cfg.output.records_path);
  const char *arena_dir = slash                        ? (slash == r->cfg.output.records_path ? "/" : dir)
                          : r->cfg.output.records_path ? "."
                                                       : NULL;
  if (!arena_dir) arena_dir = getenv("TMPDIR") && *getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
  snprintf(r->arena_dir, sizeof(r->arena_dir), "%s", arena_dir);
  if (!r->arena && tp_rec_arena_new(&r->arena, arena_dir)) {
    tp_seterr(err, errlen, "out of memory");
    return TP_ENOMEM;
  }
  if (!r->cfg.output.records_path) return 0;
  r->records_fp = fopen(r->cfg.output.records_path, "w");
  if (!r->records_fp) {
    tp_seterr(err, errlen, "cannot write output.records_path file %s: %s", r->cfg.output.records_path,
              strerror(errno));
    return TP_EIO;
  }
  /* A regular file can be read back at the level's end, so finished
   * records need not keep their response times and text in memory (a
   * pipe or a terminal cannot: there they stay). */
  struct stat st;
  r->shed_records = fstat(fileno(r->records_fp), &st) == 0 && S_ISREG(st.st_mode);
  return 0;
}

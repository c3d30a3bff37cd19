/* The sweep: the points in order (input lengths, output lengths, the
 * load, each --num-profile-runs times), or the loads --search picks, each
 * measured as one level. */
#include <string.h>

#include "run/tp_run_internal.h"
#include "dataset/tp_synth.h"
#include "metrics/tp_metric.h"

int tpr_prepare_point_prompts(tp_run *r, const point *pt, char *err, size_t errlen) {
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
  tpr_progress(r, "making %u prompts of %u tokens (stddev %u)", r->cfg.prompts.num_prompts, pt->input_tokens,
               r->cfg.prompts.input_tokens_stddev);
  int rv = tp_synth_prompts(&r->syn_ds, r->tok, r->cfg.prompts.num_prompts, pt->input_tokens,
                            r->cfg.prompts.input_tokens_stddev,
                            tp_rng_mix(r->cfg.prompts.random_seed, pt->input_tokens), err, errlen);
  if (rv) {
    tp_dataset_free(&r->syn_ds);
    return rv;
  }
  /* The drawn lengths are the text's own tokens; with special tokens the
   * prompts are counted again, like any prompt, so BOS and the like are in. */
  if (r->cfg.prompts.tokenizer_add_special_tokens)
    for (size_t i = 0; i < r->syn_ds.n; i++) r->syn_ds.items[i].input_tokens = -1;
  r->have_syn_ds = true;
  r->syn_ds_tokens = pt->input_tokens;
  r->lv.ds = &r->syn_ds;
  return 0;
}

/* Input tokens are counted once per prompt, before the level, when nothing
 * is in flight. */
void tpr_count_prompts(tp_run *r, tp_dataset *ds) {
  if (!r->tok) return;
  for (size_t i = 0; i < ds->n; i++) {
    tp_prompt *p = &ds->items[i];
    size_t n = 0;
    if (p->input_tokens < 0 && tpr_count_input(r, r->tok, p->text, p->text_len, &n) == 0)
      p->input_tokens = (int64_t)n;
    /* ShareGPT: ask for as many tokens as the recorded answer had, as
     * vLLM's benchmark does (counted like output: no special tokens). */
    if (ds->max_tokens_from_reference && p->max_tokens < 0 && p->reference &&
        tp_tok_count(r->tok, p->reference, strlen(p->reference), &n) == 0)
      p->max_tokens = n ? (int64_t)n : 1;
  }
}

/* --search: the point to measure next is the search's next load
 * (tp_sweep_search.c); false when the search is over. */
static bool search_point(tp_run *r, size_t li) {
  double load;
  if (!tp_sweep_search_next(r->search, &load)) return false;
  point *p = &r->points[li];
  if (r->cfg.load.search == TP_SEARCH_REQUEST_RATE) {
    p->mode = TP_LOAD_RATE;
    p->rate = load;
    p->concurrency = r->cfg.load.max_concurrency;
  } else {
    p->mode = TP_LOAD_CONCURRENCY;
    p->concurrency = (uint32_t)load;
  }
  return true;
}

/* A probe is judged once all its runs (--num-profile-runs) are measured:
 * on the mean of each figure over them (tp_metric_mean_runs), its requests
 * and seconds summed. */
/* A point's load, in its own unit: requests/s, or requests in flight. */
static double point_load(const point *p) {
  return p->mode == TP_LOAD_RATE ? p->rate : (double)p->concurrency;
}

static void search_judge(tp_run *r, size_t li, size_t runs) {
  const point *p = &r->points[li];
  double load = p->mode == TP_LOAD_RATE ? p->rate : (double)p->concurrency;
  r->probe_secs += (double)(tp_now_ns() - r->lv.t0) / 1e9;
  r->probe_requests += r->lv.n_planned;
  if ((li + 1) % runs != 0 || r->n_levels < runs) return;
  tp_level_result mean;
  tp_metric_mean_runs(&r->levels[r->n_levels - runs], runs, &mean);
  for (size_t k = r->n_levels - runs; k < r->n_levels; k++) mean.saturation.stopped |= r->levels[k].saturation.stopped;
  tp_sweep_search_judge(r->search, load, &mean, r->n_levels - 1, r->probe_requests, r->probe_secs);
  r->probe_secs = 0;
  r->probe_requests = 0;
}

int tp_run_exec(tp_run *r, char *err, size_t errlen) {
  int rv = tpr_dist_open(r, err, errlen);
  if (rv) return rv;
  rv = tpr_exec_setup(r, err, errlen);
  if (r->mpi && tpr_dist_start(r, rv, err, errlen) == DIST_OUT) return 0;
  if (rv) return rv;
  if (r->search && r->mpi) {
    tp_seterr(err, errlen, "search.mode runs in one process: start it without mpirun");
    return TP_EINVAL;
  }
  size_t runs = r->cfg.measure.num_profile_runs > 1 ? r->cfg.measure.num_profile_runs : 1;
  double sat_load = -1; /* the load a level stopped over-saturated at (--stop-on-saturation) */
  size_t sat_skipped = 0;
  for (size_t li = 0; li < r->n_points && !r->interrupted; li++) {
    /* Past a load the server could not keep up with, a higher one only
     * burns time: skipped (a capacity search picks its own loads). */
    if (!r->search && sat_load >= 0 && point_load(&r->points[li]) >= sat_load) {
      sat_skipped++;
      continue;
    }
    /* A probe's first run asks the search for the load; its repeats keep it. */
    if (r->search && li % runs == 0 && !search_point(r, li)) break;
    if (r->search && li % runs != 0) r->points[li] = r->points[li - 1];
    rv = tpr_run_level(r, li, err, errlen);
    if (rv && r->mpi && r->rank != 0) return tpr_dist_leave(r, rv, err, errlen);
    if (rv) return rv;
    if (r->search) search_judge(r, li, runs);
    if (r->n_levels && r->levels[r->n_levels - 1].saturation.stopped && !r->search)
      sat_load = point_load(&r->points[li]);
    /* A server that went away is not measured level after level (the
     * ranks of a distributed run go on together: each level ends alike). */
    if (r->server_gone && !r->mpi) {
      if (li + 1 < r->n_points)
        tpr_warn(r, "the sweep stops after %zu of %zu levels: the server went away", r->n_levels, r->n_points);
      break;
    }
  }
  if (sat_skipped)
    tpr_warn(r, "%zu level%s at or above the over-saturated load %g skipped (--stop-on-saturation)", sat_skipped,
             sat_skipped == 1 ? "" : "s", sat_load);
  if (r->mpi) {
    tp_mpi_finish(r->mpi);
    /* What the other ranks measured is in rank 0's report. */
    if (r->rank != 0) return 0;
  }
  if (r->artifacts) {
    /* Also after an interruption: what was measured is written. */
    char aerr[512];
    if (r->search) tp_artifacts_set_search(r->artifacts, tp_sweep_search_summary(r->search));
    if (tp_artifacts_finish(r->artifacts, aerr, sizeof(aerr)))
      tpr_output_failed(r, "cannot finish the artifacts: %s", aerr);
  }
  /* A failing server is said even when no gate asks (one line). */
  char note[400];
  if (tp_gates_error_rate_note(r->levels, r->n_levels, r->cfg.measure.max_error_rate, note, sizeof(note)))
    tpr_warn(r, "%s", note);
  tpr_live_hold(r);
  if (r->interrupted) {
    const tp_level_result *last = r->n_levels ? &r->levels[r->n_levels - 1] : NULL;
    if (last && last->partial)
      tp_seterr(err, errlen, "interrupted %.1f s into level %zu of %zu (partial: its figures cover what ran)",
                last->partial_ran_s, r->n_levels, r->n_points);
    else
      tp_seterr(err, errlen, "interrupted after %zu of %zu levels", r->n_levels, r->n_points);
    return TP_EINTERRUPTED;
  }
  return 0;
}

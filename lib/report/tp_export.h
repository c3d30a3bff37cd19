/* Exports for other tools: the artifact directory.
 *
 * Everything here is a view of the per-request records and of the level
 * figures tp_level_compute produced; no latency or throughput is computed a
 * second time.  The accuracy of the generated text against a reference
 * answer is scored by metrics/tp_accuracy.h; what this module adds is
 * scoring a level's requests read back from the records.
 *
 * An artifact directory holds, for a sweep:
 *
 *   <dir>/<profile-export-file>         perf_analyzer's profile export: one
 *                                        experiment per level (default name
 *                                        profile_export.json)
 *   <dir>/<level>/<stem>_genai_perf.json  GenAI-Perf's summary, per level, as
 *   <dir>/<level>/<stem>_genai_perf.csv   GenAI-Perf writes one artifact
 *                                        directory per level; <level> is
 *                                        concurrency<N>, request_rate<R> or
 *                                        schedule, then _input<I>/_output<O>
 *                                        for swept lengths
 *   <dir>/<level>/<stem>.json            the level's own profile export (its
 *                                        one experiment), so that the level's
 *                                        directory is GenAI-Perf's of one run
 *                                        (process-export-files reads it)
 *   <dir>/<level>/aiperf/<stem>_aiperf.json  AIPerf's summary of the level
 *   <dir>/<level>/aiperf/<stem>_aiperf.csv   (profile_export_aiperf.json ...)
 *   <dir>/<level>/aiperf/<stem>.jsonl    AIPerf's per-record export
 *                                        (profile_export.jsonl)
 *   <dir>/responses.jsonl                every measured request's prompt,
 *                                        reference and generated text
 *   <dir>/accuracy.json                  exact match and ROUGE-L per level
 *                                        (only when references exist)
 *   <dir>/report.html                    see tp_html.h
 *
 * <stem> is the profile export file name without its extension, as
 * GenAI-Perf derives it.  Whole files are written to a temporary name in the
 * same directory and renamed, so a reader never sees half a document; the
 * profile export is streamed into its temporary file level by level and
 * renamed by tp_artifacts_finish.  responses.jsonl is a stream and is
 * appended as each level ends, so an interrupted run keeps what it had.
 * Within a level both are written a MiB at a time, and a record the run
 * let go of has its response times and text read back from the records
 * file (tp_export_request.from, report/tp_records.h), so writing a level
 * holds neither the level's text nor its response times in memory. */
#ifndef TP_EXPORT_H
#define TP_EXPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "metrics/tp_accuracy.h"
#include "record/tp_record.h"
#include "util/tp_common.h"
#include "tokperf/tokperf.h"

struct tp_records_reader;

/* One request as the exports see it: the record and what was sent. */
typedef struct tp_export_request {
  const tp_record *rec; /* borrowed */
  const char *prompt;   /* borrowed, prompt_len bytes (need not end in NUL); NULL = unknown */
  size_t prompt_len;
  const char *reference; /* borrowed, NUL-terminated expected answer; NULL = none */
  uint32_t max_tokens;   /* max_tokens sent; 0 = the configured default */
  /* Borrowed: where a shed record's response times and text are read back
   * (report/tp_records.h); NULL when the record holds them. */
  struct tp_records_reader *from;
  /* Borrowed pieces of text sent before the prompt, in order (the
   * --cache-bust marker, a --prefix-tokens prefix and its space); NULL =
   * none.  The exports give the text sent: these, then the prompt. */
  const char *head[3];
  size_t head_len[3];
} tp_export_request;

/* One finished level as the exports see it. */
typedef struct tp_export_level {
  const tp_level_result *lr;     /* borrowed: the level's figures */
  const tp_export_request *reqs; /* borrowed: every request of the level, warm-up included */
  size_t n;
  /* The measurement window (monotonic ns) when the level measured over
   * windows (tp_level_opts.window_start_ns/_end_ns); 0, 0 = the level's
   * span, first measured send to last completion. */
  uint64_t window_start_ns, window_end_ns;
  /* A request's id as sent is this prefix and its seq (the records' id,
   * docs/metrics.md "Request ids"); NULL = not known: not written. */
  const char *id_prefix;
} tp_export_level;

/* Converts a monotonic time (tp_now_ns) to wall-clock nanoseconds since the
 * Unix epoch: wall = anchor_wall_ns + (mono_ns - anchor_mono_ns).  Both
 * anchors are read once, together, when the run starts, so every exported
 * time shares one offset and differences between exported times are
 * exactly the monotonic differences.  mono_ns == 0 ("did not happen") gives
 * 0. */
uint64_t tp_export_wall_ns(uint64_t anchor_mono_ns, uint64_t anchor_wall_ns, uint64_t mono_ns);

/* ------------------------------------------------------------------------ */
/* Accuracy                                                                 */

/* Scores reqs[0..n) into acc (zeroed first).  Returns 0, TP_ENOMEM, or the
 * error of reading a shed record back. */
int tp_accuracy_compute(tp_accuracy *acc, const tp_export_request *reqs, size_t n);

/* ------------------------------------------------------------------------ */
/* Writers of one file each (used by tp_artifacts; public for tests)        */

/* One experiment of perf_analyzer's profile export, as a JSON object text
 * (no trailing newline), appended to out:
 *   {"experiment": {"mode": "concurrency", "value": N},
 *      (rate mode {"mode": "request_rate", "value": R}; a trace R = 0;
 *      R written as Python writes a float, 20.0, as GenAI-Perf matches it)
 *    "requests": [{"timestamp": ns, "request_inputs": INPUTS,
 *      "response_timestamps": [ns, ...],
 *      "response_outputs": [OUTPUT, ...]}, ...],
 *    "window_boundaries": [start_ns, end_ns]}
 * (in a distributed run each request also has "rank": the rank that sent
 * it, docs/scale-out.md)
 * Times are wall-clock ns.  Requests: the measured, successful ones (the
 * same set the latency statistics use), in send order; "timestamp" is the
 * actual send time.  response_timestamps holds every response message,
 * empty ones included, as perf_analyzer records them, and response_outputs
 * one OUTPUT per response carrying that response's own text (its piece of
 * the record's text, tp_record.resp_text_at):
 *   Triton (cfg NULL, KServe or generate): {"text_output": "piece"}
 *   OpenAI (cfg->server.service_kind chat or completions): {"response": PAYLOAD},
 *     PAYLOAD being what the server sent as perf_analyzer keeps it:
 *     streamed, the event's bytes "data: CHUNK\n\n", CHUNK a
 *     chat.completion.chunk (the piece in choices[0].delta.content, or
 *     .reasoning_content for reasoning; the first names the role) or a
 *     text_completion (choices[0].text), with id, object, created (the
 *     send's second) and model; the last response ends with
 *     "data: [DONE]\n\n".  Without streaming, the body (chat.completion
 *     with choices[0].message, or text_completion).
 * INPUTS: Triton {"text_input": "the text sent", "max_tokens": M};
 *   OpenAI {"payload": BODY}, BODY the JSON body sent as a string, rebuilt
 *   by the client's rules: "model" (left out when the run's config has
 *   none: the client then names the model /v1/models listed, which the
 *   exports do not know), the text as one user message ("messages") or as
 *   "prompt" (a string, as sent), "max_tokens" when set, "stream",
 *   "stream_options" {"include_usage": true} when streaming with usage,
 *   "min_tokens" and "ignore_eos" with deterministic lengths, then
 *   --extra-inputs over them.  A chat dataset's own messages are given as
 *   one user message holding their text.
 * With --streaming-text cumulative a response's text is all text up to
 * its piece's end, as the server sent it.  A record that kept no offsets
 * (made outside the run) puts its whole text on the first response that
 * carried text, "" on the others.
 * window_boundaries: the level's measurement window when it had one (see
 * tp_export_level), else from the first measured send for duration_s, the
 * span the throughputs were divided by.  default_max_tokens fills
 * max_tokens when a request says 0.  Returns 0, TP_ENOMEM, or the error of
 * reading a shed record back (tp_records_load). */
int tp_export_pa_experiment(tp_buf *out, const tp_export_level *lv, const tp_config *cfg,
                            uint32_t default_max_tokens, uint64_t anchor_mono_ns, uint64_t anchor_wall_ns);

/* The tools whose per-level summaries are exported.  Each row of the
 * metric registry with the tool's key (tp_metric.genai_key, .aiperf_key)
 * is one metric of both of its files, under that key and in the tool's
 * unit spelling (tp_unit_genai, tp_unit_aiperf). */
typedef enum tp_export_tool { TP_EXPORT_GENAI_PERF, TP_EXPORT_AIPERF } tp_export_tool;

/* GenAI-Perf's <stem>_genai_perf.json for one level, as text: one object
 * per exported metric,
 *   a distribution {"unit", "avg", "p1", "p5", "p10", "p25", "p50", "p75",
 *     "p90", "p95", "p99", "min", "max", "std"}
 *   a level figure or count {"unit", "avg"}
 * in registry order, then "input_config": GenAI-Perf's configuration in
 * its nested form (ConfigCommand.to_json_dict()), filled with cfg's
 * settings for this level (docs/metrics.md).  A metric with no value
 * (tp_metric_available) is left out, as GenAI-Perf leaves it out, and so
 * are the timings between responses (TP_MF_STREAMING but the time to first
 * token, which GenAI-Perf's JSON keeps) when cfg says the run did not
 * stream.  The figures are tokperf's
 * (docs/metrics.md, where the differences from GenAI-Perf's are listed).
 * Returns owned text (free()) or NULL when out of memory. */
char *tp_export_genai_json(const tp_level_result *lr, const tp_config *cfg, const char *profile_export_path,
                           const char *artifact_dir);

/* GenAI-Perf's <stem>_genai_perf.csv for one level, appended to out: the
 * header "Metric,avg,min,max,p1,p5,p10,p25,p50,p75,p90,p95,p99,std", one
 * row per exported distribution labelled as GenAI-Perf labels it (the key
 * in title case, then " (unit)" unless the unit is tokens: "Time To First
 * Token (ms)", "Output Sequence Length") with values as "{:,.2f}" (quoted
 * when it holds a thousands comma, as Python's csv module does); an empty
 * row; "Metric,Value" and one row per exported level figure or count
 * ("Request Throughput (requests/sec),12.50", "{:.2f}").  CRLF line ends.
 * Without streaming the TP_MF_STREAMING rows are left out.  Returns 0 or
 * TP_ENOMEM. */
int tp_export_genai_csv(tp_buf *out, const tp_level_result *lr, bool streaming);

/* AIPerf's <stem>_aiperf.json (profile_export_aiperf.json by default) for
 * one level: the same objects as tp_export_genai_json under AIPerf's keys
 * and units (request_count {"unit": "requests", "avg": n},
 * benchmark_duration {"unit": "sec", ...}), no input_config.  Returns
 * owned text or NULL when out of memory. */
char *tp_export_aiperf_json(const tp_level_result *lr, bool streaming);

/* AIPerf's <stem>_aiperf.csv for one level: laid out as
 * tp_export_genai_csv, labelled as AIPerf labels it ("Time to First Token
 * (ms)", "Output Sequence Length (tokens)", a count without a unit:
 * "Request Count") and every value as "{:.2f}".  Returns 0 or TP_ENOMEM. */
int tp_export_aiperf_csv(tp_buf *out, const tp_level_result *lr, bool streaming);

/* AIPerf's timeslice files of one level (written when --slice-duration is
 * given, as AIPerf writes them only then): <stem>_aiperf_timeslices.json,
 * {"timeslices": [{"timeslice_index": i, "time_to_first_token": {...},
 * ...}]} with tokperf's slice bounds beside it, and the tidy
 * <stem>_aiperf_timeslices.csv, "Timeslice,Metric,Unit,Stat,Value" rows.
 * The figures are the level's time series (docs/metrics.md, "Time
 * series").  The JSON returns owned text or NULL when out of memory; the
 * CSV returns 0 or TP_ENOMEM. */
char *tp_export_aiperf_timeslices_json(const tp_level_result *lr, bool streaming);
int tp_export_aiperf_timeslices_csv(tp_buf *out, const tp_level_result *lr, bool streaming);

/* AIPerf's per-record export <stem>.jsonl (profile_export.jsonl) of one
 * level, appended to out: one line per measured request (warm-up
 * excluded, failed included), in send order:
 *   {"metadata": {"session_num": the session's number from 0 for a
 *      session's turn, else the request's seq, "request_num": seq,
 *      "turn_index": t, "request_start_ns": sent (wall-clock ns),
 *      "request_ack_ns": first response|null, "request_end_ns": done,
 *      "worker_id": "rank_K", "record_processor_id": "tokperf",
 *      "benchmark_phase": "profiling", "was_cancelled": false,
 *      "cancellation_time_ns": null},
 *    "metrics": {KEY: {"value": v, "unit": "ms"}, ...},
 *    "error": null}
 * where each KEY is the AIPerf key of a per-request registry row and v the
 * request's own value (tp_request_metrics; a figure it lacks is left out),
 * then "inter_chunk_latency" {"value": [gap ms, ...]}: the gaps between its
 * text responses (tp_request_text_span).  Without streaming the
 * TP_MF_STREAMING rows and the gaps are left out.  A failed request has
 * "metrics": {"error_isl": {...}} (null when its input was not counted)
 * and "error": {"code": gRPC status|null, "type": its class, "message"}.
 * Returns 0, TP_ENOMEM, or the error of reading a shed record back. */
int tp_export_aiperf_records(tp_buf *out, const tp_export_level *lv, bool streaming, uint64_t anchor_mono_ns,
                             uint64_t anchor_wall_ns);

/* vLLM's per-request arrays of one level, as `vllm bench serve` writes
 * them with --save-detailed (vllm/benchmarks/serve.py): one JSON object
 * with input_lens, output_lens, ttfts, itls (a list per request),
 * latencies, start_times, queue_times, generated_texts and errors, one
 * entry per measured request in request order, times in seconds.  Each
 * entry is what vLLM's client would have kept of the request
 * (docs/metrics.md, "Each tool's definitions"); open_loop: requests arrive
 * at their planned time (a request rate), else all at the level's start
 * (--request-rate inf).  *out is owned (free()).  Returns 0, TP_ENOMEM, or
 * the error of reading a shed record back. */
int tp_export_vllm_requests(const tp_export_level *lv, bool open_loop, char **out);

/* Appends one JSON line per measured request (warm-up excluded, failed
 * included) to out:
 *   {"level": "concurrency 8", ("rank": k in a distributed run,)
 *    "concurrency": N, "id": seq,
 *    "prompt_index": i, "prompt": "...",
 *    "reference": "..." (only when there is one), "output": "...",
 *    "input_tokens": n|null, "output_tokens": n|null, "ok": true|false,
 *    "error": null|"class: message",
 *    "exact_match": bool, "rouge_l_f1": x (only when scored)}
 * Bytes that are not valid UTF-8 are replaced by U+FFFD so every line is
 * valid JSON.  Returns 0, TP_ENOMEM, or the error of reading a shed record
 * back. */
int tp_export_responses_jsonl(tp_buf *out, const tp_level_result *lr, const tp_export_request *reqs,
                              size_t n);

/* ------------------------------------------------------------------------ */
/* The artifact directory of one run                                        */

typedef struct tp_artifacts_opts {
  const char *dir;                 /* --artifact-dir; created (with parents) when missing */
  const char *profile_export_file; /* --profile-export-file; NULL = "profile_export.json".
                                      A name without '/' is placed in dir; a path is used as is */
  const tp_config *cfg;            /* borrowed for the handle's life */
  uint64_t anchor_mono_ns;         /* tp_now_ns() at run start ... */
  uint64_t anchor_wall_ns;         /* ... and the wall clock read next to it */
  bool html;                       /* write report.html at finish (default in the CLI: on) */
  size_t html_timeline_max;        /* requests on the timeline; 0 = 500 */
} tp_artifacts_opts;

typedef struct tp_artifacts tp_artifacts;

/* Creates the directory, opens the profile export's temporary file and
 * responses.jsonl (truncated).  Returns 0, or TP_EIO / TP_ENOMEM / TP_EINVAL
 * with "cannot create DIR: reason (...)" in err; *out is then NULL. */
int tp_artifacts_open(tp_artifacts **out, const tp_artifacts_opts *opts, char *err, size_t errlen);

/* Writes everything of one finished level: appends its experiment to the
 * profile export, writes <level>/<stem>.json, <stem>_genai_perf.json and
 * .csv, AIPerf's files in <level>/aiperf/,
 * appends its lines to responses.jsonl, scores accuracy into *acc (may be
 * NULL) and keeps what report.html needs (a compact digest, not the
 * records).  lv and what it points to are borrowed for the call only.  Returns 0,
 * or TP_EIO / TP_ENOMEM with a message; a failed level leaves the handle
 * usable. */
int tp_artifacts_add_level(tp_artifacts *a, const tp_export_level *lv, tp_accuracy *acc, char *err,
                           size_t errlen);

/* Accuracy over every level added so far. */
void tp_artifacts_accuracy(const tp_artifacts *a, tp_accuracy *out);

/* Completes the profile export and renames it into place, writes
 * accuracy.json (when any request had a reference) and report.html.  Call
 * once, after the last level, also after an interrupted sweep (the files
 * then hold the levels that completed).  Returns 0 or TP_EIO / TP_ENOMEM
 * with a message. */
int tp_artifacts_finish(tp_artifacts *a, char *err, size_t errlen);

/* A capacity search's probes for report.html (borrowed until finish;
 * NULL = none). */
struct tp_search_summary;
void tp_artifacts_set_search(tp_artifacts *a, const struct tp_search_summary *s);

/* The target is the built-in mock, started in-process: report.html names
 * it so rather than by its loopback address. */
void tp_artifacts_set_mock(tp_artifacts *a, bool mock);

/* Frees the handle; a profile export not finished is removed. */
void tp_artifacts_free(tp_artifacts *a);

/* ------------------------------------------------------------------------ */
/* Shared by the report writers (internal)                                  */

/* Writes len bytes to the file path names (its symbolic links followed,
 * so a link stays a link) through a temporary file in the same directory,
 * fsync and rename; a FIFO or a character device (/dev/null) is written in
 * place, never replaced.  On failure no temporary is left.  Returns 0 or
 * -1 with errno set. */
int tp__write_atomic(const char *path, const void *data, size_t len);
/* The message for a failed write of path with errno e: on a full disk "no
 * space left on DIR (FILE not written whole)", else "cannot write PATH:
 * <strerror> (hint)" (hint NULL: none). */
void tp__write_err(char *err, size_t errlen, const char *path, int e, const char *hint);

/* Appends s[0..len) to out as a JSON string body (no quotes), escaping
 * quotes, backslashes and control characters and replacing invalid UTF-8
 * with U+FFFD.  Returns 0 or TP_ENOMEM. */
int tp__json_escape(tp_buf *out, const char *s, size_t len);

/* Indices of the requests that pass keep() (NULL = all), in send order,
 * seq breaking ties.  Returns the count, or SIZE_MAX when out of memory;
 * *out is owned (free()). */
size_t tp__order_by_send(const tp_export_request *reqs, size_t n, bool (*keep)(const tp_export_request *),
                         size_t **out);

/* A level's sweep point for people: "concurrency 8", "request rate 10/s",
 * "trace schedule", then ", input 512 tokens, output 128 tokens" when the
 * lengths are swept. */
void tp__level_name(const tp_level_result *lr, char *buf, size_t len);
/* The short form for chart labels: "8", "10/s", "trace", then " in512",
 * " out128". */
void tp__level_tag(const tp_level_result *lr, char *buf, size_t len);

/* Length of the valid UTF-8 sequence at s (1-4), or 0 when invalid. */
size_t tp__utf8_len(const unsigned char *s, size_t avail);

#endif

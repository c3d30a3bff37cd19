/* The mock server's timing model: continuous batching of LLM sequences.
 *
 * Pure logic with an injected clock: no sockets, no libuv, no timers.  The
 * server asks the engine when each token is due, arms a timer for that
 * moment, and calls tp_mock_engine_next when it fires; tests call the same
 * functions with made-up times and get exact, reproducible deadlines.
 *
 * The model (parameters from tp_mock_config):
 *   - at most max_batch sequences run at once; a request that finds the
 *     batch full waits in a FIFO queue and is admitted when a slot frees;
 *   - first token due at admit time + ttft_ms + prefill_us_per_token x
 *     prompt tokens + prefill_queue_ms x (sequences admitted earlier whose
 *     first token is not out yet);
 *   - token k+1 due at token k's *deadline* (never the time it actually
 *     fired, so lateness does not accumulate) + itl_ms + itl_us_per_seq x
 *     (sequences decoding at that moment, this one included);
 *   - output length: cfg output_tokens when > 0; otherwise the request's
 *     max_tokens (128 when absent), ended earlier, once min_tokens tokens
 *     are out, by an end-of-sequence drawn with probability eos_prob per
 *     token unless the request set ignore_eos;
 *   - with the prefix cache on, prompt tokens found in it at admission are
 *     left out of the prefill term (see tp_mock_engine_prefix_*);
 *   - every token is one word of tp_words with a leading space (" the"),
 *     drawn from a PRNG seeded from (seed, request number), so a given
 *     request number always produces the same text and length.
 *
 * Every function must be called from one thread (the server's loop). */
#ifndef TP_MOCK_ENGINE_H
#define TP_MOCK_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "util/tp_common.h"
#include "tokperf/mock.h"

/* Output length when the request does not say (TensorRT-LLM's ensemble
 * requires max_tokens; vLLM's own default is 16, but 128 keeps the mock
 * useful for requests that forget it). */
#define TP_MOCK_DEFAULT_MAX_TOKENS 128u

typedef enum tp_mock_seq_state {
  TP_MOCK_SEQ_IDLE = 0, /* not submitted, finished or cancelled */
  TP_MOCK_SEQ_QUEUED,   /* waiting for a batch slot */
  TP_MOCK_SEQ_PREFILL,  /* admitted, first token not out yet */
  TP_MOCK_SEQ_DECODE    /* first token out, more to come */
} tp_mock_seq_state;

/* What a request asks for, as far as timing and length go. */
typedef struct tp_mock_seq_params {
  uint32_t prompt_tokens;
  uint32_t max_tokens; /* 0 = absent: TP_MOCK_DEFAULT_MAX_TOKENS */
  uint32_t min_tokens; /* no end-of-sequence before this many tokens */
  bool ignore_eos;
  bool endless; /* fault injection: tokens until cancelled, whatever else says */
  /* The prompt, for the prefix cache (borrowed during submit; may be NULL
   * when the cache is off).  Its words are the tokens the cache keys on. */
  const char *prompt;
  size_t prompt_len;
} tp_mock_seq_params;

/* One sequence.  The storage belongs to the caller (the server embeds it in
 * its request object); the engine links it into its lists between submit
 * and the end (last token or cancel).  Fields are read-only for the
 * caller. */
typedef struct tp_mock_seq tp_mock_seq;
struct tp_mock_seq {
  tp_mock_seq_state state;
  uint64_t number; /* request number, 0, 1, 2 ... in submit order */
  uint64_t arrival_ns;
  uint64_t admit_ns;         /* valid once admitted */
  uint64_t next_deadline_ns; /* when the next token is due (admitted only) */
  uint32_t prompt_tokens;
  uint32_t max_tokens; /* effective upper bound on output tokens */
  uint32_t min_tokens;
  bool eos_enabled;    /* may end before max_tokens */
  uint32_t tokens_out; /* tokens produced so far */
  uint32_t cached_tokens; /* prompt tokens found in the prefix cache at admission */
  bool hit_length;     /* ended at max_tokens (not by an end-of-sequence draw) */
  void *data;          /* for the caller */

  /* Private. */
  uint64_t word_rng, eos_rng;
  tp_mock_seq *qnext;     /* FIFO queue link */
  uint64_t *block_hashes; /* prefix-cache keys of the prompt's full blocks */
  uint32_t n_blocks;
  uint32_t kv_blocks; /* KV blocks held while admitted */
};

/* One token handed out by tp_mock_engine_next. */
typedef struct tp_mock_token {
  uint32_t index;       /* 0-based token number within its sequence */
  bool last;            /* the sequence ended with this token */
  uint64_t deadline_ns; /* when it was due */
  size_t text_len;
  char text[40]; /* " word", NUL-terminated */
} tp_mock_token;

typedef struct tp_mock_engine tp_mock_engine;

/* Called whenever a sequence is admitted into the batch: at once inside
 * tp_mock_engine_submit when a slot is free, or later inside
 * tp_mock_engine_next / tp_mock_engine_cancel when another sequence frees
 * one.  s->next_deadline_ns then holds the first token's deadline.  The
 * callback may read the engine and arm timers; it must not call
 * submit, next or cancel. */
typedef void (*tp_mock_admit_cb)(tp_mock_engine *e, tp_mock_seq *s, void *user_data);

/* Creates an engine from the timing and length fields of cfg (borrowed;
 * the values are copied).  max_batch 0 is taken as 1.  Returns 0,
 * TP_EINVAL when a time parameter is negative or not finite or eos_prob is
 * outside [0, 1], or TP_ENOMEM. */
int tp_mock_engine_new(tp_mock_engine **out, const tp_mock_config *cfg, tp_mock_admit_cb admit_cb,
                       void *user_data);
/* Frees the engine.  Sequences still linked are forgotten, not touched. */
void tp_mock_engine_free(tp_mock_engine *e);

/* Submits s (caller-owned storage, borrowed until it ends) at now_ns.  The
 * sequence is admitted at once (admit_cb runs before this returns) or
 * queued.  s->data is preserved; everything else is initialised here.  A
 * submitted sequence must end (last token or tp_mock_engine_cancel) before
 * its storage goes: the engine may hold memory for it.  Returns 0,
 * TP_EINVAL when s is already submitted, or TP_ENOMEM. */
int tp_mock_engine_submit(tp_mock_engine *e, tp_mock_seq *s, const tp_mock_seq_params *p, uint64_t now_ns);

/* Produces the token that was due at s->next_deadline_ns; call it when
 * that deadline has come (now_ns >= the deadline; the engine does not
 * check).  When tok->last is set the sequence has ended (state IDLE), its
 * slot is free and queued sequences are admitted at now_ns, each through
 * admit_cb, before this returns.  Otherwise s->next_deadline_ns holds the
 * next token's deadline.  Returns 0, or TP_EINVAL when s is not admitted. */
int tp_mock_engine_next(tp_mock_engine *e, tp_mock_seq *s, uint64_t now_ns, tp_mock_token *tok);

/* Removes s wherever it is (queue or batch) at now_ns, e.g. when the
 * client reset the stream; a freed slot admits queued sequences through
 * admit_cb.  A sequence that is not submitted is left alone. */
void tp_mock_engine_cancel(tp_mock_engine *e, tp_mock_seq *s, uint64_t now_ns);

/* Counters of the moment. */
uint32_t tp_mock_engine_running(const tp_mock_engine *e); /* prefill + decode */
uint32_t tp_mock_engine_prefilling(const tp_mock_engine *e);
uint32_t tp_mock_engine_decoding(const tp_mock_engine *e);
uint32_t tp_mock_engine_queued(const tp_mock_engine *e);
/* The number the next submitted sequence will get. */
uint64_t tp_mock_engine_next_number(const tp_mock_engine *e);
/* Uses up the next number for a request that will not be submitted (one
 * refused at arrival), so numbers, and with them the seeded text and fault
 * draws, keep following arrival order. */
uint64_t tp_mock_engine_take_number(tp_mock_engine *e);
/* Tokens produced since the engine was created (TensorRT-LLM's iteration
 * counter, roughly). */
uint64_t tp_mock_engine_tokens_total(const tp_mock_engine *e);
/* Time some sequence held a batch slot, up to now_ns (GPU busy time). */
uint64_t tp_mock_engine_busy_ns(const tp_mock_engine *e, uint64_t now_ns);

/* KV cache, in blocks of prefix_cache_block_words tokens: blocks held by
 * admitted sequences (prompt + output so far, rounded up per sequence) and
 * the pool size (prefix_cache_blocks).  Used may exceed the pool: the mock
 * does not preempt. */
uint64_t tp_mock_engine_kv_blocks_used(const tp_mock_engine *e);
uint64_t tp_mock_engine_kv_blocks_max(const tp_mock_engine *e);

/* The prefix cache (cfg prefix_cache).  A prompt is cut into blocks of
 * prefix_cache_block_words words; block i is keyed by a hash of blocks 0..i,
 * so only a shared *prefix* hits.  At admission the longest run of cached
 * leading blocks is looked up (at most prompt tokens - 1 of them, since the
 * last prompt token is always computed, as vLLM does); those tokens skip the
 * prefill term.  The prompt's full blocks enter the cache when its prefill
 * ends (first token), so two identical prompts prefilled together both
 * miss.  At most prefix_cache_blocks blocks are kept, least recently used
 * out first.  Counters are in tokens (words), as vLLM's are. */
uint64_t tp_mock_engine_prefix_queries_tokens(const tp_mock_engine *e);
uint64_t tp_mock_engine_prefix_hits_tokens(const tp_mock_engine *e);
uint32_t tp_mock_engine_prefix_cached_blocks(const tp_mock_engine *e);

/* The mock has no tokenizer, so it estimates a prompt's token count as its
 * number of whitespace-separated words (space, tab, CR, LF, VT, FF).  Real
 * BPE tokenizers give a bit more than one token per English word; the
 * estimate only feeds prefill_us_per_token and the log. */
uint32_t tp_mock_count_words(const char *text, size_t len);

#endif

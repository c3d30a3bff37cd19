/* The engine clients: vLLM's VllmEngine and SGLang's SglangScheduler over
 * gRPC (tp_engine.h) on the HTTP/2 pool.  One server-streaming Generate
 * call per request: token ids in (from the run's tokenizer, through
 * tp_client_opts.encode; vLLM also takes text when there is none), token
 * ids out, counted exactly without a tokenizer (tp_client_event.token_ids).
 * A cancelled request (early stop, timeout, interruption) is also aborted
 * by the service's Abort call.  Preflight: HealthCheck, then GetModelInfo. */
#ifndef TP_CLIENT_ENGINE_H
#define TP_CLIENT_ENGINE_H

#include "api/tp_engine.h"
#include "client/tp_client.h"

/* Uses target, host, model, streaming, connections, max_response_bytes,
 * headers, TLS, reader_thread, yield_to and encode of tp_client_opts;
 * extra_inputs are the --extra-inputs items (sampling values, see
 * tp_engine_sampling_read).  Returns 0, or TP_EINVAL (bad --extra-inputs or
 * headers; SGLang without a tokenizer) / TP_ECONNECT (address) / TP_ENOMEM
 * with a message in err. */
int tp_client_engine_new(tp_client **out, uv_loop_t *loop, tp_engine_proto proto, const tp_client_opts *o,
                         const char *const *extra_inputs, size_t n_extra_inputs, const tp_client_cbs *cbs,
                         char *err, size_t errlen);

#endif

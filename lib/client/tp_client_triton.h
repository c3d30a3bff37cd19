/* The Triton client: KServe v2 over gRPC (streaming ModelStreamInfer or
 * unary ModelInfer) on the HTTP/2 pool.  Besides the common operations it
 * offers the server's statistics (ModelStatistics), the check of an input
 * file's tensors and its connection count, through tp_client_ops. */
#ifndef TP_CLIENT_TRITON_H
#define TP_CLIENT_TRITON_H

#include "client/tp_client.h"

/* Uses every field of tp_client_opts.  Returns 0, or TP_EINVAL /
 * TP_ECONNECT (address) / TP_ENOMEM with a message in err. */
int tp_client_triton_new(tp_client **out, uv_loop_t *loop, const tp_client_opts *o,
                         const tp_client_cbs *cbs, char *err, size_t errlen);

#endif

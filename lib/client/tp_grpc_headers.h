/* The user's -H lines as gRPC metadata, shared by the gRPC clients (Triton
 * KServe and the engines' own services).  Private to client/. */
#ifndef TP_GRPC_HEADERS_H
#define TP_GRPC_HEADERS_H

#include <stddef.h>

/* "Name: value" lines into *hdr: name, value pairs (names lower-cased, as
 * HTTP/2 needs; values without leading blanks), *n_hdr of them, the array
 * NULL-terminated.  TP_EINVAL (naming the line) or TP_ENOMEM; what was
 * made so far is left for tp__grpc_free_headers. */
int tp__grpc_split_headers(char ***hdr, size_t *n_hdr, const char *const *h, size_t n, char *err, size_t errlen);
void tp__grpc_free_headers(char **hdr, size_t n_hdr);

#endif

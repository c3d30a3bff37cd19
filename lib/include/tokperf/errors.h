/* tokperf: error codes and the classes a failed request is counted under.
 *
 * The bottom of the library (lib/util) and every layer above it share these,
 * and nothing else of the public API: this header depends on nothing, so
 * the layers below the run need not include tokperf.h. */
#ifndef TOKPERF_ERRORS_H
#define TOKPERF_ERRORS_H

#ifdef __cplusplus
extern "C" {
#endif

#ifndef TP_API
#if defined(__GNUC__)
#define TP_API __attribute__((visibility("default")))
#else
#define TP_API
#endif
#endif

/* The library's version, "0.1.0" (every layer may name it in what it
 * writes). */
TP_API const char *tp_version(void);

/* Error codes: name, phrase. */
#define TP_ERRORS(X)                                   \
  X(TP_ENOMEM, "out of memory")                        \
  X(TP_EINVAL, "invalid argument")                     \
  X(TP_EAGAIN, "more input needed")                    \
  X(TP_EPROTO, "protocol error")                       \
  X(TP_EIO, "input/output error")                      \
  X(TP_ECONNECT, "cannot connect")                     \
  X(TP_ETIMEDOUT, "timed out")                         \
  X(TP_ENOTFOUND, "not found")                         \
  X(TP_ETOOBIG, "too large")                           \
  X(TP_ECANCELED, "cancelled")                         \
  X(TP_EUNSUPPORTED, "not supported")                  \
  X(TP_ESERVER, "server error")                        \
  X(TP_EINTERRUPTED, "interrupted")

#define TP_ERR_ENUM(name, str) name##_,
enum { TP_ERR_BASE_ = 0, TP_ERRORS(TP_ERR_ENUM) TP_ERR_END_ };
#undef TP_ERR_ENUM
/* The codes are the negated positions in the table: TP_ENOMEM == -1 ... */
#define TP_ENOMEM (-TP_ENOMEM_)
#define TP_EINVAL (-TP_EINVAL_)
#define TP_EAGAIN (-TP_EAGAIN_)
#define TP_EPROTO (-TP_EPROTO_)
#define TP_EIO (-TP_EIO_)
#define TP_ECONNECT (-TP_ECONNECT_)
#define TP_ETIMEDOUT (-TP_ETIMEDOUT_)
#define TP_ENOTFOUND (-TP_ENOTFOUND_)
#define TP_ETOOBIG (-TP_ETOOBIG_)
#define TP_ECANCELED (-TP_ECANCELED_)
#define TP_EUNSUPPORTED (-TP_EUNSUPPORTED_)
#define TP_ESERVER (-TP_ESERVER_)
#define TP_EINTERRUPTED (-TP_EINTERRUPTED_)

/* A short phrase for a TP_E* code; never NULL. */
TP_API const char *tp_strerror(int code);

/* Classes a failed request is counted under (the report shows a count per
 * class).  X-macro: enum value, short name used in exports. */
#define TP_ERROR_CLASSES(X)          \
  X(TP_ERRCLASS_NONE, "none")        \
  X(TP_ERRCLASS_CONNECT, "connect")  \
  X(TP_ERRCLASS_GRPC_STATUS, "grpc_status") \
  X(TP_ERRCLASS_STREAM_RESET, "stream_reset") \
  X(TP_ERRCLASS_TIMEOUT, "timeout")  \
  X(TP_ERRCLASS_PROTOCOL, "protocol") \
  X(TP_ERRCLASS_SERVER, "server_error") \
  X(TP_ERRCLASS_CANCELLED, "cancelled") \
  X(TP_ERRCLASS_TLS, "tls")          \
  X(TP_ERRCLASS_HTTP_STATUS, "http_status") \
  X(TP_ERRCLASS_NOT_SENT, "not_sent")

#define TP_ERRCLASS_ENUM(name, str) name,
typedef enum tp_error_class { TP_ERROR_CLASSES(TP_ERRCLASS_ENUM) TP_ERRCLASS_COUNT } tp_error_class;
#undef TP_ERRCLASS_ENUM
TP_API const char *tp_error_class_name(tp_error_class c);

#ifdef __cplusplus
}
#endif
#endif

/* Base64 decoding, for tensors that input files give as raw bytes. */
#ifndef TP_BASE64_H
#define TP_BASE64_H

#include <stddef.h>

/* Decodes standard base64 (RFC 4648 section 4, padding optional, no
 * whitespace) into a malloc'd buffer (*out, free it; NULL on failure).
 * Returns 0, TP_EINVAL or TP_ENOMEM. */
int tp_base64_decode(const char *s, size_t len, unsigned char **out, size_t *outlen);

#endif

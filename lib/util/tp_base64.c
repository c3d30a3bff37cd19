/* Base64 decoding (RFC 4648 section 4). */
#include "tp_base64.h"

#include <stdlib.h>

#include "util/tp_common.h"

static int b64_value(unsigned char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

int tp_base64_decode(const char *s, size_t len, unsigned char **out, size_t *outlen) {
  *out = NULL;
  *outlen = 0;
  /* Padding is optional; at most two '=' and only at the end. */
  size_t pad = 0;
  while (len && s[len - 1] == '=' && pad < 2) {
    len--;
    pad++;
  }
  if (len % 4 == 1 || (pad && (len + pad) % 4)) return TP_EINVAL;
  unsigned char *buf = malloc(len / 4 * 3 + 3);
  if (!buf) return TP_ENOMEM;
  size_t o = 0;
  uint32_t acc = 0;
  int bits = 0;
  for (size_t i = 0; i < len; i++) {
    int v = b64_value((unsigned char)s[i]);
    if (v < 0) {
      free(buf);
      return TP_EINVAL;
    }
    acc = (acc << 6) | (uint32_t)v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      buf[o++] = (unsigned char)(acc >> bits);
      acc &= (1u << bits) - 1;
    }
  }
  *out = buf;
  *outlen = o;
  return 0;
}

#include "tp_grpc_headers.h"

#include <stdlib.h>
#include <string.h>

#include "util/tp_common.h"

int tp__grpc_split_headers(char ***hdr, size_t *n_hdr, const char *const *h, size_t n, char *err, size_t errlen) {
  *n_hdr = 0;
  *hdr = calloc(2 * n + 1, sizeof(char *));
  if (!*hdr) return TP_ENOMEM;
  for (size_t i = 0; i < n; i++) {
    const char *colon = strchr(h[i], ':');
    if (!colon || colon == h[i]) {
      tp_seterr(err, errlen, "-H '%s': expected 'Name: value'", h[i]);
      return TP_EINVAL;
    }
    char *name = tp_strndup(h[i], (size_t)(colon - h[i]));
    const char *v = colon + 1;
    while (*v == ' ' || *v == '\t') v++;
    char *value = tp_strndup(v, strlen(v));
    if (!name || !value) {
      free(name);
      free(value);
      return TP_ENOMEM;
    }
    for (char *q = name; *q; q++)
      if (*q >= 'A' && *q <= 'Z') *q = (char)(*q + 32);
    (*hdr)[2 * i] = name;
    (*hdr)[2 * i + 1] = value;
    *n_hdr = i + 1;
  }
  return 0;
}

void tp__grpc_free_headers(char **hdr, size_t n_hdr) {
  for (size_t i = 0; hdr && i < 2 * n_hdr; i++) free(hdr[i]);
  free(hdr);
}

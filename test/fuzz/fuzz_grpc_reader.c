/* Fuzz target: the gRPC Length-Prefixed-Message reader.
 *
 * The input is a byte stream as it would arrive in DATA frames.  It is
 * framed once by a direct reading of the gRPC Length-Prefixed-Message rule (the model below),
 * then fed to tp_grpc_reader in one piece, one byte at a time, split in two
 * at many offsets and in uneven chunks.  Every way of feeding must deliver
 * exactly the model's messages, in order, with the same compressed flag,
 * end with the same code, and agree on whether a message was left
 * unfinished.  Any difference abort()s. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "transport/tp_grpc.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_MODEL_MSGS 4096

typedef struct model {
  size_t off[MAX_MODEL_MSGS]; /* body offsets in the input */
  uint32_t len[MAX_MODEL_MSGS];
  bool compressed[MAX_MODEL_MSGS];
  size_t n;
  int rv;   /* 0 or TP_ETOOBIG */
  bool mid; /* bytes left over that do not complete a message */
  bool truncated; /* more messages than the model keeps: skip the input */
} model;

static void frame(model *m, const uint8_t *data, size_t size, uint32_t max) {
  size_t off = 0;
  memset(m, 0, sizeof(*m));
  while (size - off >= TP_GRPC_PREFIX_BYTES) {
    uint32_t len = (uint32_t)data[off + 1] << 24 | (uint32_t)data[off + 2] << 16 |
                   (uint32_t)data[off + 3] << 8 | data[off + 4];
    if (len > max) {
      m->rv = TP_ETOOBIG;
      return;
    }
    if (size - off - TP_GRPC_PREFIX_BYTES < len) break;
    if (m->n == MAX_MODEL_MSGS) {
      m->truncated = true;
      return;
    }
    m->off[m->n] = off + TP_GRPC_PREFIX_BYTES;
    m->len[m->n] = len;
    m->compressed[m->n] = data[off] != 0;
    m->n++;
    off += TP_GRPC_PREFIX_BYTES + len;
  }
  m->mid = off < size;
}

typedef struct check {
  const model *m;
  const uint8_t *input;
  size_t got;
  bool want_zero_copy;
} check;

static int on_msg(void *user_data, const uint8_t *data, size_t len, bool compressed) {
  check *c = user_data;
  const model *m = c->m;
  if (c->got >= m->n) abort(); /* a message the model does not have */
  size_t i = c->got++;
  if (len != m->len[i] || compressed != m->compressed[i]) abort();
  if (len && memcmp(data, c->input + m->off[i], len) != 0) abort();
  /* The header promises no copy for a message whole inside one feed. */
  if (c->want_zero_copy && len && data != c->input + m->off[i]) abort();
  return 0;
}

/* Feeds `data` in chunks whose sizes come from next_chunk and compares the
 * outcome with the model. */
typedef size_t (*chunker)(void *state, size_t remaining);

static void run(const model *m, const uint8_t *data, size_t size, uint32_t max, chunker next,
                void *state, bool zero_copy, bool empty_feeds) {
  tp_grpc_reader r;
  check c = {m, data, 0, zero_copy};
  tp_grpc_reader_init(&r, max);
  size_t off = 0;
  int rv = 0;
  while (off < size && rv == 0) {
    size_t n = next(state, size - off);
    if (n == 0 || n > size - off) n = size - off;
    rv = tp_grpc_reader_feed(&r, data + off, n, on_msg, &c);
    off += n;
    /* An empty feed in between must change nothing. */
    if (rv == 0 && empty_feeds) rv = tp_grpc_reader_feed(&r, data + off, 0, on_msg, &c);
  }
  if (rv != m->rv) abort();
  if (c.got != m->n) abort();
  if (rv == 0 && tp_grpc_reader_mid_message(&r) != m->mid) abort();
  tp_grpc_reader_fini(&r);
}

static size_t whole(void *state, size_t remaining) {
  (void)state;
  return remaining;
}

static size_t one_byte(void *state, size_t remaining) {
  (void)state;
  (void)remaining;
  return 1;
}

typedef struct split2 {
  size_t at;
  int calls;
} split2;

static size_t two_pieces(void *state, size_t remaining) {
  split2 *s = state;
  return s->calls++ == 0 ? s->at : remaining;
}

typedef struct uneven {
  const uint8_t *sizes;
  size_t n, i;
} uneven;

static size_t uneven_chunks(void *state, size_t remaining) {
  uneven *u = state;
  /* Chunk sizes 1..32 taken from the input itself, cycling. */
  return u->n ? (size_t)(u->sizes[u->i++ % u->n] % 32) + 1 : remaining;
}

static void fuzz_with_limit(const uint8_t *data, size_t size, uint32_t max) {
  static model m; /* large; static keeps it off the stack */
  frame(&m, data, size, max);
  if (m.truncated) return;

  run(&m, data, size, max, whole, NULL, true, false);
  run(&m, data, size, max, one_byte, NULL, false, true);

  /* Two pieces at every offset for small inputs, else at 64 offsets. */
  size_t step = size <= 512 ? 1 : size / 64;
  for (size_t at = 1; at < size; at += step) {
    split2 s = {at, 0};
    run(&m, data, size, max, two_pieces, &s, false, false);
  }
  uneven u = {data, size, 0};
  run(&m, data, size, max, uneven_chunks, &u, false, false);

  /* The messages re-framed with tp_grpc_put_prefix (plus the flag byte)
   * give back the bytes they came from. */
  if (m.rv == 0) {
    for (size_t i = 0; i < m.n; i++) {
      uint8_t p[TP_GRPC_PREFIX_BYTES];
      tp_grpc_put_prefix(p, m.len[i]);
      if (p[0] != 0) abort();
      p[0] = data[m.off[i] - TP_GRPC_PREFIX_BYTES];
      if (memcmp(p, data + m.off[i] - TP_GRPC_PREFIX_BYTES, TP_GRPC_PREFIX_BYTES) != 0)
        abort();
    }
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  /* A generous limit (messages mostly fit) and a tight one (most random
   * prefixes are too large). */
  fuzz_with_limit(data, size, 1u << 20);
  fuzz_with_limit(data, size, 64);
  return 0;
}

/* The helpers the export writers share (tp_export_internal.h): JSON
 * strings, file writing through a temporary name, paths, and the order of
 * a level's requests. */
#include "tp_export_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "report/tp_records.h"
#include "util/tp_files.h"
#include "util/tp_utf8.h"

tp__tool_api tp__tool_api_of(const tp_config *cfg) {
  tp__tool_api a = {"triton", "", "kserve"};
  if (!cfg) return a;
  switch (cfg->server.service_kind) {
    case TP_SERVICE_OPENAI_CHAT: a = (tp__tool_api){"openai", "v1/chat/completions", "chat"}; break;
    case TP_SERVICE_OPENAI_COMPLETIONS: a = (tp__tool_api){"openai", "v1/completions", "completions"}; break;
    case TP_SERVICE_TRITON_GENERATE:
      a = (tp__tool_api){
          "triton",
          cfg->server.streaming ? "v2/models/{MODEL}/generate_stream" : "v2/models/{MODEL}/generate",
          "generate"};
      break;
    case TP_SERVICE_VLLM_GRPC:
      a = (tp__tool_api){"vllm-grpc", "vllm.grpc.engine.VllmEngine/Generate", "generate"};
      break;
    case TP_SERVICE_SGLANG_GRPC:
      a = (tp__tool_api){"sglang-grpc", "sglang.grpc.scheduler.SglangScheduler/Generate", "generate"};
      break;
    case TP_SERVICE_TRITON: break;
  }
  if (cfg->server.endpoint && *cfg->server.endpoint) a.endpoint = cfg->server.endpoint;
  return a;
}

/* ------------------------------------------------------------------------ */
/* Small shared helpers                                                     */

uint64_t tp_export_wall_ns(uint64_t anchor_mono_ns, uint64_t anchor_wall_ns, uint64_t mono_ns) {
  if (!mono_ns) return 0;
  /* Signed offset: a time taken before the anchor (a warm-up request sent
   * while the anchor was being read) stays correct instead of wrapping. */
  int64_t d = (int64_t)(mono_ns - anchor_mono_ns);
  return (uint64_t)((int64_t)anchor_wall_ns + d);
}

size_t tp__utf8_len(const unsigned char *s, size_t avail) {
  return tp_utf8_len(s, avail);
}

#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/* Whether any of the eight bytes of w needs a look: a control character
 * (below 0x20), a quote, a backslash, or a byte of a multi-byte sequence
 * (0x80 and up, to be checked as UTF-8).  The zero-byte tests are exact
 * about whether such a byte exists, which is all that is asked here. */
static inline bool word_needs_look(uint64_t w) {
  uint64_t ctl = (w - ONES * 0x20) & ~w;
  uint64_t q = w ^ (ONES * '"');
  uint64_t bs = w ^ (ONES * '\\');
  q = (q - ONES) & ~q;
  bs = (bs - ONES) & ~bs;
  return ((ctl | q | bs | w) & HIGHS) != 0;
}

static int escape_byte(tp_buf *out, unsigned c) {
  static const char hex[] = "0123456789abcdef";
  switch (c) {
    case '"': return tp_buf_append(out, "\\\"", 2);
    case '\\': return tp_buf_append(out, "\\\\", 2);
    case '\n': return tp_buf_append(out, "\\n", 2);
    case '\r': return tp_buf_append(out, "\\r", 2);
    case '\t': return tp_buf_append(out, "\\t", 2);
    default: {
      char u[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
      return tp_buf_append(out, u, sizeof(u));
    }
  }
}

/* Generated text is mostly plain bytes: they are skipped eight at a time
 * and copied in one piece up to the next byte that needs a look, which is
 * escaped, replaced (invalid UTF-8) or, a valid sequence, kept. */
int tp__json_escape(tp_buf *out, const char *s, size_t len) {
  const unsigned char *p = (const unsigned char *)s;
  size_t i = 0, start = 0; /* [start, i) is plain, not yet copied */
  int rv = 0;
  while (i < len) {
    uint64_t w;
    while (i + 8 <= len && (memcpy(&w, p + i, 8), !word_needs_look(w))) i += 8;
    if (i >= len) break;
    unsigned c = p[i];
    if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
      i++;
      continue;
    }
    size_t ul = c < 0x80 ? 1 : tp__utf8_len(p + i, len - i);
    if (c >= 0x80 && ul) {
      i += ul;
      continue;
    }
    if (i > start && (rv = tp_buf_append(out, p + start, i - start))) return rv;
    rv = ul ? escape_byte(out, c) : tp_buf_append(out, "\xEF\xBF\xBD", 3);
    if (rv) return rv;
    start = ++i;
  }
  return i > start ? tp_buf_append(out, p + start, i - start) : 0;
}

int tp__json_u64(tp_buf *out, uint64_t v) {
  char b[20];
  size_t n = sizeof(b);
  do {
    b[--n] = (char)('0' + v % 10);
    v /= 10;
  } while (v);
  return tp_buf_append(out, b + n, sizeof(b) - n);
}

int tp__json_str(tp_buf *out, const char *s, size_t len) {
  int rv = tp_buf_append(out, "\"", 1);
  if (!rv && s) rv = tp__json_escape(out, s, len);
  if (!rv) rv = tp_buf_append(out, "\"", 1);
  return rv;
}

/* The text the request sent, as one JSON string: its head pieces, then the
 * prompt (each piece whole UTF-8, so escaping them apart is escaping the
 * whole). */
int tp__json_sent(tp_buf *out, const tp_export_request *q) {
  int rv = tp_buf_append(out, "\"", 1);
  for (int i = 0; i < 3 && !rv; i++)
    if (q->head[i]) rv = tp__json_escape(out, q->head[i], q->head_len[i]);
  if (!rv && q->prompt) rv = tp__json_escape(out, q->prompt, q->prompt_len);
  if (!rv) rv = tp_buf_append(out, "\"", 1);
  return rv;
}

void tp__level_name(const tp_level_result *lr, char *buf, size_t len) {
  int o;
  switch (lr->load_mode) {
    case TP_LOAD_RATE: o = snprintf(buf, len, "request rate %g/s", lr->request_rate); break;
    case TP_LOAD_SCHEDULE: o = snprintf(buf, len, "trace schedule"); break;
    default: o = snprintf(buf, len, "concurrency %" PRIu32, lr->concurrency); break;
  }
  if (o > 0 && (size_t)o < len && lr->input_tokens_mean)
    o += snprintf(buf + o, len - (size_t)o, ", input %" PRIu32 " tokens", lr->input_tokens_mean);
  if (o > 0 && (size_t)o < len && lr->output_tokens_mean)
    snprintf(buf + o, len - (size_t)o, ", output %" PRIu32 " tokens", lr->output_tokens_mean);
}

void tp__level_tag(const tp_level_result *lr, char *buf, size_t len) {
  int o;
  switch (lr->load_mode) {
    case TP_LOAD_RATE: o = snprintf(buf, len, "%g/s", lr->request_rate); break;
    case TP_LOAD_SCHEDULE: o = snprintf(buf, len, "trace"); break;
    default: o = snprintf(buf, len, "%" PRIu32, lr->concurrency); break;
  }
  if (o > 0 && (size_t)o < len && lr->input_tokens_mean)
    o += snprintf(buf + o, len - (size_t)o, " in%" PRIu32, lr->input_tokens_mean);
  if (o > 0 && (size_t)o < len && lr->output_tokens_mean)
    snprintf(buf + o, len - (size_t)o, " out%" PRIu32, lr->output_tokens_mean);
}

int tp__write_all(int fd, const void *data, size_t n) {
  const char *p = data;
  while (n) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return -1;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* A target that is not a regular file (a FIFO, a character device such as
 * /dev/null) is written in place: renaming a temporary over it would
 * replace the device with a file (as root, /dev/null itself), and a FIFO's
 * reader would never see the data.  Block devices, sockets and
 * directories are refused (tp_file_check_writable says so before a run). */
static int open_in_place(const char *real) {
  struct stat st;
  if (tp_target_kind_of(real, NULL, 0) == TP_TARGET_REFUSED) {
    errno = stat(real, &st) == 0 && S_ISDIR(st.st_mode) ? EISDIR : EOPNOTSUPP;
    return -1;
  }
  /* A FIFO blocks here until a reader opens it, as a shell's > does. */
  int fd;
  do fd = open(real, O_WRONLY | O_CLOEXEC | O_NOCTTY);
  while (fd < 0 && errno == EINTR);
  return fd;
}

/* The temporary's suffix: <target>.tmp.<pid>.<n>. */
static const char TMP_MARK[] = ".tmp.";

/* Opens a new temporary file next to the file path names, its links
 * followed (mode 0666 so the umask applies as for any new file; mkstemp
 * would leave it 0600).  Returns the fd and the owned name in *tmp_out, or
 * -1 with errno set; for a target written in place (a FIFO, a device) the
 * target's own fd and NULL. */
int tp__open_temp(const char *path, char **tmp_out) {
  static unsigned counter;
  *tmp_out = NULL;
  char *real = tp_resolve_target(path);
  if (!real) return -1;
  if (tp_target_kind_of(real, NULL, 0) != TP_TARGET_FILE) {
    int fd = open_in_place(real);
    int e = errno;
    free(real);
    errno = e;
    return fd;
  }
  size_t tlen = strlen(real) + 64;
  char *tmp = malloc(tlen);
  if (!tmp) {
    free(real);
    errno = ENOMEM;
    return -1;
  }
  int fd = -1;
  for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
    snprintf(tmp, tlen, "%s%s%ld.%u", real, TMP_MARK, (long)getpid(), counter++);
    fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd < 0 && errno != EEXIST) break;
  }
  free(real);
  if (fd < 0) {
    int e = errno;
    free(tmp);
    errno = e;
    return -1;
  }
  *tmp_out = tmp;
  return fd;
}

void tp__discard_temp(int fd, const char *tmp) {
  int e = errno;
  if (fd >= 0) close(fd);
  if (tmp) unlink(tmp);
  errno = e;
}

/* fsync before rename: otherwise a crash can leave the new name pointing at
 * an empty file on some filesystems.  The temporary is renamed over the
 * file it was made beside (path's links followed: the link stays).  Closes
 * fd; on failure removes tmp. */
int tp__commit_temp(int fd, const char *tmp, const char *path) {
  (void)path;
  if (!tmp) return close(fd); /* written in place */
  int rv = fsync(fd);
  int e = errno;
  if (close(fd) && rv == 0) {
    rv = -1;
    e = errno;
  }
  const char *mark = NULL;
  for (const char *m = strstr(tmp, TMP_MARK); m; m = strstr(m + 1, TMP_MARK)) mark = m;
  char *target = mark ? tp_strndup(tmp, (size_t)(mark - tmp)) : NULL;
  if (rv == 0 && !target) {
    rv = -1;
    e = ENOMEM;
  }
  if (rv == 0 && rename(tmp, target)) {
    rv = -1;
    e = errno;
  }
  free(target);
  if (rv) unlink(tmp);
  errno = e;
  return rv;
}

int tp__write_atomic(const char *path, const void *data, size_t len) {
  char *tmp = NULL;
  int fd = tp__open_temp(path, &tmp);
  if (fd < 0) return -1;
  if (tp__write_all(fd, data, len)) {
    tp__discard_temp(fd, tmp);
    free(tmp);
    return -1;
  }
  int rv = tp__commit_temp(fd, tmp, path);
  int e = errno;
  free(tmp);
  errno = e;
  return rv;
}

void tp__write_err(char *err, size_t errlen, const char *path, int e, const char *hint) {
  if (tp_errno_full(e)) {
    tp_write_error(err, errlen, path, e);
    return;
  }
  tp_seterr(err, errlen, "cannot write %s: %s%s%s%s", path, strerror(e), hint ? " (" : "", hint ? hint : "",
            hint ? ")" : "");
}

/* mkdir -p.  Returns 0 or -1 with errno set. */
int tp__make_dirs(const char *path) {
  char *p = tp_strndup(path, strlen(path));
  if (!p) {
    errno = ENOMEM;
    return -1;
  }
  int rv = 0;
  for (char *s = p + 1; rv == 0; s++) {
    if (*s != '/' && *s != '\0') continue;
    char save = *s;
    *s = '\0';
    if (mkdir(p, 0777) && errno != EEXIST) rv = -1;
    if (rv == 0) {
      struct stat st;
      if (stat(p, &st))
        rv = -1;
      else if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        rv = -1;
      }
    }
    *s = save;
    if (save == '\0') break;
  }
  int e = errno;
  free(p);
  errno = e;
  return rv;
}

char *tp__join_path(const char *dir, const char *name) {
  size_t dl = strlen(dir), nl = strlen(name);
  char *p = malloc(dl + nl + 2);
  if (!p) return NULL;
  memcpy(p, dir, dl);
  size_t o = dl;
  if (dl && dir[dl - 1] != '/') p[o++] = '/';
  memcpy(p + o, name, nl + 1);
  return p;
}

const char *tp__rec_text(const tp_record *r, size_t *len) {
  *len = r->text.len;
  return r->text.data ? (const char *)r->text.data : "";
}

/* The whole record of q: its response times and text read back from the
 * records file when the run let go of them (tp_records.h).  *full stays
 * valid until the next call for a request with the same reader. */
int tp__whole(const tp_export_request *q, tp_record *full) {
  return tp_records_load(q->from, q->rec, full, NULL, 0);
}

int tp__sink_spill(tp_buf *out, const tp__sink *k) {
  if (!k || out->len < TP__SPILL_BYTES) return 0;
  int bad = k->fd >= 0 ? tp__write_all(k->fd, out->data, out->len)
                       : fwrite(out->data, 1, out->len, k->fp) != out->len;
  if (bad) return TP_EIO;
  tp_buf_reset(out);
  return 0;
}

/* ------------------------------------------------------------------------ */
/* perf_analyzer profile export                                             */

bool tp__measured(const tp_export_request *q) {
  return q->rec && !q->rec->warmup;
}

typedef struct send_key {
  uint64_t sent_ns;
  uint64_t seq;
  size_t i;
} send_key;

static int cmp_send_key(const void *a, const void *b) {
  const send_key *x = a, *y = b;
  if (x->sent_ns != y->sent_ns) return x->sent_ns < y->sent_ns ? -1 : 1;
  if (x->seq != y->seq) return x->seq < y->seq ? -1 : 1;
  return (x->i > y->i) - (x->i < y->i);
}

size_t tp__order_by_send(const tp_export_request *reqs, size_t n, bool (*keep)(const tp_export_request *),
                         size_t **out) {
  send_key *keys = malloc((n ? n : 1) * sizeof(*keys));
  size_t *idx = malloc((n ? n : 1) * sizeof(*idx));
  if (!keys || !idx) {
    free(keys);
    free(idx);
    return SIZE_MAX;
  }
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    if (reqs[i].rec && (!keep || keep(&reqs[i])))
      keys[k++] = (send_key){reqs[i].rec->sent_ns, reqs[i].rec->seq, i};
  qsort(keys, k, sizeof(*keys), cmp_send_key);
  for (size_t j = 0; j < k; j++) idx[j] = keys[j].i;
  free(keys);
  *out = idx;
  return k;
}

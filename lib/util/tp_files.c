#include "tp_files.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tp_common.h"

/* The directory part of path ("." for a bare name, "/" for "/x"). */
static void dir_of(const char *path, char *out, size_t outlen) {
  const char *slash = strrchr(path, '/');
  if (!slash) {
    snprintf(out, outlen, ".");
  } else if (slash == path) {
    snprintf(out, outlen, "/");
  } else {
    snprintf(out, outlen, "%.*s", (int)(slash - path), path);
  }
}

static int writable_dir(const char *dir, char *why, size_t whylen) {
  struct stat st;
  if (stat(dir, &st) != 0) {
    tp_seterr(why, whylen, "%s: %s", dir, strerror(errno));
    return TP_EIO;
  }
  if (!S_ISDIR(st.st_mode)) {
    tp_seterr(why, whylen, "%s is not a directory", dir);
    return TP_EIO;
  }
  if (access(dir, W_OK | X_OK) != 0) {
    tp_seterr(why, whylen, "directory %s is not writable: %s", dir, strerror(errno));
    return TP_EIO;
  }
  return 0;
}

char *tp_resolve_target(const char *path) {
  char *cur = tp_strndup(path, strlen(path));
  for (int hops = 0; cur && hops < 40; hops++) {
    struct stat st;
    if (lstat(cur, &st) != 0 || !S_ISLNK(st.st_mode)) return cur;
    char link[PATH_MAX];
    ssize_t n = readlink(cur, link, sizeof(link) - 1);
    if (n < 0) return cur;
    link[n] = 0;
    char dir[PATH_MAX];
    dir_of(cur, dir, sizeof(dir));
    size_t len = strlen(dir) + (size_t)n + 2;
    char *next = malloc(len);
    if (next && link[0] == '/')
      snprintf(next, len, "%s", link);
    else if (next)
      snprintf(next, len, "%s/%s", dir, link);
    free(cur);
    cur = next;
  }
  if (!cur) {
    errno = ENOMEM;
    return NULL;
  }
  free(cur);
  errno = ELOOP;
  return NULL;
}

tp_target_kind tp_target_kind_of(const char *resolved, char *why, size_t whylen) {
  struct stat st;
  if (stat(resolved, &st) != 0 || S_ISREG(st.st_mode)) return TP_TARGET_FILE;
  if (S_ISFIFO(st.st_mode) || S_ISCHR(st.st_mode)) return TP_TARGET_STREAM;
  tp_seterr(why, whylen, "it is a %s (give a file, a FIFO or a character device such as /dev/null)",
            S_ISDIR(st.st_mode)    ? "directory"
            : S_ISSOCK(st.st_mode) ? "socket"
            : S_ISBLK(st.st_mode)  ? "block device"
                                   : "special file");
  return TP_TARGET_REFUSED;
}

int tp_errno_full(int e) {
  return e == ENOSPC || e == EDQUOT;
}

int tp_write_error(char *why, size_t whylen, const char *path, int e) {
  if (!tp_errno_full(e)) {
    tp_seterr(why, whylen, "cannot write %s: %s", path, strerror(e));
    return 0;
  }
  /* The directory as the file system knows it: a relative or linked path
   * names where the space ran out. */
  char dir[PATH_MAX], real[PATH_MAX];
  dir_of(path, dir, sizeof(dir));
  const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
  tp_seterr(why, whylen, "no space left on %s (%s not written whole)", realpath(dir, real) ? real : dir,
            base);
  return 1;
}

/* The checks of tp_file_check_writable, on the path its links lead to. */
static int check_writable(const char *path, char *why, size_t whylen) {
  struct stat st;
  if (stat(path, &st) == 0) {
    if (tp_target_kind_of(path, why, whylen) == TP_TARGET_REFUSED) return TP_EIO;
    if (access(path, W_OK) != 0) {
      tp_seterr(why, whylen, "it is not writable: %s", strerror(errno));
      return TP_EIO;
    }
    return 0;
  }
  /* ENOTDIR: a part of the directory is a file, which the directory check
   * names. */
  if (errno != ENOENT && errno != ENOTDIR) {
    tp_seterr(why, whylen, "%s", strerror(errno));
    return TP_EIO;
  }
  char dir[4096];
  dir_of(path, dir, sizeof(dir));
  return writable_dir(dir, why, whylen);
}

int tp_file_check_writable(const char *path, char *why, size_t whylen) {
  if (!path || !*path) {
    tp_seterr(why, whylen, "the path is empty");
    return TP_EIO;
  }
  char *real = tp_resolve_target(path);
  if (!real) {
    tp_seterr(why, whylen, "%s", strerror(errno));
    return TP_EIO;
  }
  int rv = check_writable(real, why, whylen);
  free(real);
  return rv;
}

int tp_dir_check_creatable(const char *path, char *why, size_t whylen) {
  if (!path || !*path) {
    tp_seterr(why, whylen, "the path is empty");
    return TP_EIO;
  }
  char p[4096];
  snprintf(p, sizeof(p), "%s", path);
  /* Walk up to the nearest part that exists: mkdir -p makes the rest. */
  for (;;) {
    size_t n = strlen(p);
    while (n > 1 && p[n - 1] == '/') p[--n] = 0;
    struct stat st;
    if (stat(p, &st) == 0) {
      if (!S_ISDIR(st.st_mode)) {
        tp_seterr(why, whylen, "%s exists and is not a directory", p);
        return TP_EIO;
      }
      if (access(p, W_OK | X_OK) != 0) {
        tp_seterr(why, whylen, "directory %s is not writable: %s", p, strerror(errno));
        return TP_EIO;
      }
      return 0;
    }
    /* ENOTDIR: a part above is a file; walking up finds and names it. */
    if (errno != ENOENT && errno != ENOTDIR) {
      tp_seterr(why, whylen, "%s: %s", p, strerror(errno));
      return TP_EIO;
    }
    char *slash = strrchr(p, '/');
    if (!slash) return writable_dir(".", why, whylen);
    if (slash == p) return writable_dir("/", why, whylen);
    *slash = 0;
  }
}

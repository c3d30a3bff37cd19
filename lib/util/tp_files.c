#include "tp_files.h"

#include <errno.h>
#include <stdio.h>
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

int tp_file_check_writable(const char *path, char *why, size_t whylen) {
  if (!path || !*path) {
    tp_seterr(why, whylen, "the path is empty");
    return TP_EIO;
  }
  struct stat st;
  if (stat(path, &st) == 0) {
    if (S_ISDIR(st.st_mode)) {
      tp_seterr(why, whylen, "it is a directory");
      return TP_EIO;
    }
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

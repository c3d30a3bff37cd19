/* Checks on output paths, made before a run sends its first request.
 *
 * A run that measures for an hour and then cannot write its results has
 * wasted the hour.  These checks look at the file system as it is (no file
 * is created or truncated) and say why a path will not do; what they cannot
 * see (a disk that fills up, permissions that change) still fails later,
 * with the write's own error. */
#ifndef TP_FILES_H
#define TP_FILES_H

#include <stddef.h>

/* Whether a file can be created or overwritten at path: an existing path
 * must be a writable regular file (or a writable device such as /dev/null,
 * or a FIFO); otherwise its directory must exist and be writable.  Returns
 * 0, or TP_EIO with a phrase in why ("no such directory: out",
 * "is a directory", "permission denied"). */
int tp_file_check_writable(const char *path, char *why, size_t whylen);

/* Whether a directory can be used or made at path (mkdir -p): an existing
 * path must be a writable directory; otherwise the nearest existing
 * ancestor must be a writable directory.  Returns 0, or TP_EIO with a
 * phrase in why. */
int tp_dir_check_creatable(const char *path, char *why, size_t whylen);

#endif

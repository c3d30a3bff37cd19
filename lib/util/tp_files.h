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
 * (its links followed) must be a writable regular file, a writable
 * character device such as /dev/null, or a FIFO (written in place, never
 * replaced); otherwise its directory must exist and be writable.  Returns
 * 0, or TP_EIO with a phrase in why ("no such directory: out",
 * "is a directory", "permission denied"). */
int tp_file_check_writable(const char *path, char *why, size_t whylen);

/* The file path names once its symbolic links are followed (up to 40,
 * each relative one from its own directory); it may not exist yet.  An
 * output is written there, so a link stays a link and its target gets the
 * new contents.  Owned (free()); NULL with errno set (ENOMEM, ELOOP). */
char *tp_resolve_target(const char *path);

/* What an output target is, by its (resolved) path. */
typedef enum tp_target_kind {
  TP_TARGET_FILE,    /* a regular file, or nothing yet: written through a temporary and a rename */
  TP_TARGET_STREAM,  /* a FIFO or a character device: written in place, never replaced */
  TP_TARGET_REFUSED, /* a directory, socket or block device */
} tp_target_kind;
/* Its kind; for a refused one a phrase in why ("it is a socket"). */
tp_target_kind tp_target_kind_of(const char *resolved, char *why, size_t whylen);

/* Whether errno e says the disk is full (ENOSPC, EDQUOT). */
int tp_errno_full(int e);
/* The words for a failed write of path with errno e: on a full disk "no
 * space left on DIR (NAME not written)", DIR being the directory that
 * holds it; otherwise "cannot write PATH: <strerror>".  Returns whether
 * the disk was full. */
int tp_write_error(char *why, size_t whylen, const char *path, int e);

/* Whether a directory can be used or made at path (mkdir -p): an existing
 * path must be a writable directory; otherwise the nearest existing
 * ancestor must be a writable directory.  Returns 0, or TP_EIO with a
 * phrase in why. */
int tp_dir_check_creatable(const char *path, char *why, size_t whylen);

#endif

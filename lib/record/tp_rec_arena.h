/* Where a level keeps its records: one array indexed by request number,
 * backed by a file instead of anonymous memory.
 *
 * A level keeps one fixed-size record per request for exact statistics, so
 * a long run's records outgrow everything else it holds (a few hundred
 * bytes per request: tens of megabytes an hour at a few hundred requests
 * per second).  Only the records of requests still in flight are worked on;
 * the finished ones are read again only at the level's end (statistics,
 * exports) or by a stability window.  Mapping the array onto an unlinked
 * file (MAP_SHARED) lets the run hand the pages of finished records back to
 * the kernel (tp_rec_arena_release): they leave the process's resident
 * memory, stay in the file (the page cache writes them out, and may drop
 * them under pressure instead of swapping), and come back, unchanged, the
 * next time they are touched.  The array's users see plain memory.
 *
 * Where no file can be made (a read-only or full directory, a system
 * without mremap), the arena is plain heap memory and release does
 * nothing: the run still works, its memory grows as before. */
#ifndef TP_REC_ARENA_H
#define TP_REC_ARENA_H

#include <stddef.h>

#include "record/tp_record.h"

typedef struct tp_rec_arena tp_rec_arena;

/* A new, empty arena whose file is made in dir (NULL: $TMPDIR, else /tmp)
 * and unlinked at once, so nothing is left behind however the process
 * ends.  Returns 0 or TP_ENOMEM (the fallback to heap memory is not an
 * error). */
int tp_rec_arena_new(tp_rec_arena **out, const char *dir);
void tp_rec_arena_free(tp_rec_arena *a);

/* The array's first element (NULL while nothing was reserved).  It moves
 * when the arena grows, like realloc's. */
tp_record *tp_rec_arena_base(const tp_rec_arena *a);
/* How many records fit without growing. */
size_t tp_rec_arena_cap(const tp_rec_arena *a);
/* Room for at least n records; the new ones are zeroed.  Returns 0 or
 * TP_ENOMEM (the array is then unchanged). */
int tp_rec_arena_reserve(tp_rec_arena *a, size_t n);
/* Hands back the whole pages holding only records [0, below): they leave
 * resident memory and return, with their contents, when touched.  Costs
 * one system call per call that frees something; calling it again with the
 * same bound does nothing. */
void tp_rec_arena_release(tp_rec_arena *a, size_t below);
/* Empties the arena for a new level: its pages leave memory and the file
 * its blocks; the capacity stays and the array reads as zeros again. */
void tp_rec_arena_reset(tp_rec_arena *a);
/* Makes the pages holding records [from, from + n) (clipped to the
 * capacity) resident and writable now, so that the first write to each
 * does not stop its writer in the file system (on ext4 a page of a fresh
 * file mapping costs the writer microseconds, and now and then a
 * journal wait of tens of milliseconds).  Meant for a worker thread,
 * ahead of the records the loop writes: the arena's growth and reset wait
 * for it.  Returns 0; TP_EUNSUPPORTED where the kernel cannot do it (then
 * pages fault in as they are written, as before); TP_EIO when it failed
 * otherwise.  Nothing to do for an arena in heap memory. */
int tp_rec_arena_prefault(tp_rec_arena *a, size_t from, size_t n);
/* Whether the records live in a file (release has an effect). */
int tp_rec_arena_file_backed(const tp_rec_arena *a);

#endif

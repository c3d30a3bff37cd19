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
 * While a level writes its records, the mapping is advised MADV_RANDOM:
 * a record's first write faults in its own page of the file and nothing
 * around it.  With the kernel's default read-around, a write into a hole
 * of the file took in a read-ahead window of zeroed pages at once, and
 * the loop stopped for up to a millisecond every megabyte or so of records
 * (a disk with read_ahead_kb 8192, ext4): at 100,000 requests/s a pause
 * every 45 ms, enough to move the send lag's p99.  Reading back, at the
 * level's end, asks for read-ahead again (tp_rec_arena_read_back).
 *
 * A page of a shared mapping is only as good as the file block behind it:
 * ftruncate gives the file a size and no blocks, and a write into a page
 * the file system then cannot allocate (a full disk) kills the process
 * with SIGBUS.  So the arena hands out only records whose blocks it has
 * reserved (posix_fallocate, a step of a megabyte ahead of the records
 * asked for): tp_rec_arena_cap counts those, not the mapping's size.
 * Blocks are reserved only while the file system keeps
 * TP_REC_ARENA_KEEP_FREE bytes free beside them: the file is a cache, and
 * the run's results (records.jsonl, exports), usually on the same disk, go
 * first.  When blocks cannot be reserved (a full or size-limited disk), the records
 * move to heap memory and the run goes on there (tp_rec_arena_fell_back):
 * nothing is lost, only the memory grows as without a file.
 *
 * Where no file can be made (a read-only or full directory, a system
 * without mremap), the arena is plain heap memory and release does
 * nothing: the run still works, its memory grows as before. */
#ifndef TP_REC_ARENA_H
#define TP_REC_ARENA_H

#include <stddef.h>
#include <stdint.h>

#include "record/tp_record.h"

typedef struct tp_rec_arena tp_rec_arena;

/* Free space the arena leaves on its file system for the run's results. */
#define TP_REC_ARENA_KEEP_FREE ((uint64_t)64 << 20)

/* A new, empty arena whose file is made in dir (NULL: $TMPDIR, else /tmp)
 * and unlinked at once, so nothing is left behind however the process
 * ends.  Returns 0 or TP_ENOMEM (the fallback to heap memory is not an
 * error). */
int tp_rec_arena_new(tp_rec_arena **out, const char *dir);
void tp_rec_arena_free(tp_rec_arena *a);

/* The array's first element (NULL while nothing was reserved).  It moves
 * when the arena grows, like realloc's. */
tp_record *tp_rec_arena_base(const tp_rec_arena *a);
/* How many records may be written without growing (their blocks are
 * reserved). */
size_t tp_rec_arena_cap(const tp_rec_arena *a);
/* Room for at least n records; the new ones are zeroed.  Returns 0 or
 * TP_ENOMEM (the array is then unchanged).  The array may move to heap
 * memory (tp_rec_arena_fell_back) when the file's blocks cannot be had. */
int tp_rec_arena_reserve(tp_rec_arena *a, size_t n);
/* The array will likely grow to n records: a file-backed arena maps them
 * now (address space and file size, no blocks), so that growing later
 * reserves blocks without moving the mapping.  Does nothing on the heap.
 * Returns 0 (a hint: what fails is done later by reserve). */
int tp_rec_arena_expect(tp_rec_arena *a, size_t n);
/* Hands back the whole pages holding only records [0, below): they leave
 * resident memory and return, with their contents, when touched.  Costs
 * one system call per call that frees something; calling it again with the
 * same bound does nothing. */
void tp_rec_arena_release(tp_rec_arena *a, size_t below);
/* Empties the arena for a new level: its pages leave memory and the file
 * its blocks (reserved again by the next reserves: the capacity is 0 then);
 * the mapping stays and reads as zeros.  The base may move (to heap
 * memory, when the file cannot be sized again). */
void tp_rec_arena_reset(tp_rec_arena *a);
/* From now until the next reset the records are read in order (the
 * level's statistics and exports): pages that left memory are read ahead.
 * While a level writes its records the arena asks for no read-ahead (see
 * the top of this file). */
void tp_rec_arena_read_back(tp_rec_arena *a);
/* Whether the records live in a file (release has an effect). */
int tp_rec_arena_file_backed(const tp_rec_arena *a);
/* Whether the records left their file for heap memory because its blocks
 * could not be reserved (a full disk). */
int tp_rec_arena_fell_back(const tp_rec_arena *a);

#endif

/* Distributed runs over MPI (docs/scale-out.md): `mpirun -np N tokperf
 * profile ...` runs N ranks, each with its own loop and client, sharing one
 * run.  Every MPI call tokperf makes is in tp_mpi.c, behind the opaque
 * tp_mpi handle; the run sees ranks, host names, clock offsets and byte
 * payloads, never an MPI type.
 *
 * Without -Dmpi=enabled tp_mpi.c is not compiled and the functions below
 * are inline stubs that say "not distributed" (tp_mpi_launched is false, so
 * no other one is reached): the run has one code path, and the compiler
 * drops the distributed branches of a plain build.
 *
 * The protocol.  After start-up (one allgather of who runs where) every
 * message goes between rank 0 and one other rank; there is no collective,
 * because a rank that dies would hang the others inside it.  Per level:
 *
 *   rank k                              rank 0
 *   READY(level)          ------->      waits for every live rank
 *                         <-------      PING x K, answered by PONG: the clock offset
 *                         <-------      GO(start time on rank 0's clock, k's offset)
 *   both wait until the agreed instant, then measure; meanwhile
 *   HB(counters)          ------->      every 250 ms: liveness and merged progress
 *                         <-------      INTERRUPT, when rank 0 was interrupted
 *   RESULT(records)       ------->      gathered in rank order, merged on rank 0
 *
 * and FINISH from rank 0 ends the run.  Rank 0 never waits on a rank that
 * has gone quiet: a rank silent for longer than the timeout (or whose
 * process is seen gone, on rank 0's own machine) is reported failed and
 * left out from then on.  Rank 0 never sends to a rank it has given up on:
 * with Open MPI 4.1 a message to a dead process over TCP takes the sender
 * down.  A rank that finds rank 0 gone stops. */
#ifndef TP_MPI_H
#define TP_MPI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "util/tp_common.h"

#define TP_MPI_HOST_LEN 64
#define TP_MPI_REASON_LEN 384

/* What rank 0 knows of one rank (rank 0's own entry included). */
typedef struct tp_mpi_peer {
  char host[TP_MPI_HOST_LEN]; /* the host name the launcher gave it */
  bool failed;                /* out of the run from failed_level on */
  uint32_t failed_level;      /* UINT32_MAX = before the first level (could not start) */
  char reason[TP_MPI_REASON_LEN];
  /* The clock offset measured before the current level: the rank's clock
   * minus rank 0's, within +/- uncertainty_ns.  0, 0 for rank 0. */
  int64_t offset_ns;
  uint64_t uncertainty_ns;
  /* Its last heartbeat during the current level. */
  uint64_t hb_done, hb_failed, hb_in_flight;
} tp_mpi_peer;

/* A rank's own counters, sent in its heartbeats. */
typedef struct tp_mpi_counters {
  uint64_t done, failed, in_flight;
} tp_mpi_counters;

/* Called by tp_mpi_level_end on rank 0 once per rank whose payload
 * arrived, in rank order (rank 0 not included).  data is borrowed for the
 * call.  A nonzero return marks that rank failed: its payload was
 * unreadable (reason in err). */
typedef int (*tp_mpi_payload_cb)(void *user_data, uint32_t rank, const uint8_t *data, size_t len, char *err,
                                 size_t errlen);

typedef struct tp_mpi tp_mpi;

#if TP_HAVE_MPI

/* Whether an MPI launcher (mpirun, or a resource manager's launcher)
 * started this process, read from the environment it sets; no MPI call. */
bool tp_mpi_launched(void);

/* Initializes MPI and learns which rank runs where.  timeout_ns: how long
 * rank 0 lets a rank stay silent before it reports it failed.  Returns 0,
 * or TP_EIO with a message when MPI cannot start. */
int tp_mpi_new(tp_mpi **out, uint64_t timeout_ns, char *err, size_t errlen);

/* Ends MPI (MPI_Finalize).  On rank 0, when a rank was given up on for its
 * silence and may still be alive (it would hang MPI_Finalize for ever),
 * the job is ended with MPI_Abort instead; everything was written by then. */
void tp_mpi_free(tp_mpi *m);

uint32_t tp_mpi_rank(const tp_mpi *m);
uint32_t tp_mpi_size(const tp_mpi *m);
/* Host name of a rank; borrowed. */
const char *tp_mpi_host(const tp_mpi *m, uint32_t rank);
/* Rank 0's view of a rank; borrowed.  NULL on other ranks. */
const tp_mpi_peer *tp_mpi_peer_info(const tp_mpi *m, uint32_t rank);

/* Start-up: every rank says whether it could start (status 0, or a TP_E*
 * code and a reason).  On rank 0: collects the answers (a rank that does
 * not answer within the timeout is failed), then tells the others to go on,
 * or that the run is off when rank 0 itself could not start; returns 0.
 * On another rank: returns 0 when the run goes on, TP_ECANCELED when it
 * does not for this rank (it failed, or rank 0 did: reason in err). */
int tp_mpi_start(tp_mpi *m, int status, const char *reason, char *err, size_t errlen);

/* Starts a level together.  Rank 0 waits for every live rank to be ready,
 * measures each one's clock offset, and names a start instant; every rank
 * then waits for that instant on its own clock.  *start_ns is the instant
 * on this rank's clock (tp_now_ns).  Returns 0; on a rank other than 0,
 * TP_ECANCELED when rank 0 ended the run instead, or TP_ECONNECT when rank
 * 0 is gone (message in err). */
int tp_mpi_level_begin(tp_mpi *m, uint32_t level, uint64_t *start_ns, char *err, size_t errlen);

/* Called every 100 ms or so while a level runs.  Sends this rank's
 * heartbeat (other ranks), or takes the heartbeats in and gives up on the
 * silent ranks (rank 0).  *interrupt is set on a rank other than 0 when
 * rank 0 asked to stop or is gone. */
void tp_mpi_poll(tp_mpi *m, uint32_t level, const tp_mpi_counters *own, bool *interrupt);

/* Rank 0: the sum of the other live ranks' last heartbeats. */
void tp_mpi_others(const tp_mpi *m, tp_mpi_counters *sum);

/* Rank 0: asks every live rank to stop the current level. */
void tp_mpi_interrupt(tp_mpi *m);

/* Ends a level.  Another rank sends data[0..len) to rank 0 and returns 0
 * (TP_ECONNECT when rank 0 is gone).  Rank 0 receives every live rank's
 * payload, calls cb for each, and returns 0; a rank that fails meanwhile
 * is marked failed. */
int tp_mpi_level_end(tp_mpi *m, uint32_t level, const uint8_t *data, size_t len, tp_mpi_payload_cb cb,
                     void *user_data, char *err, size_t errlen);

/* Ends the run: rank 0 tells every live rank; another rank waits for that
 * word unless it already had it. */
void tp_mpi_finish(tp_mpi *m);

/* A rank other than 0 that cannot go on tells rank 0 why, and is left out
 * of the run from then on (rank 0 reports it); no-op on rank 0. */
void tp_mpi_fail(tp_mpi *m, const char *reason);

#else

static inline bool tp_mpi_launched(void) {
  return false;
}
static inline int tp_mpi_new(tp_mpi **out, uint64_t timeout_ns, char *err, size_t errlen) {
  (void)timeout_ns;
  *out = NULL;
  tp_seterr(err, errlen, "this tokperf was built without MPI (meson setup -Dmpi=enabled)");
  return TP_EUNSUPPORTED;
}
static inline void tp_mpi_free(tp_mpi *m) {
  (void)m;
}
static inline uint32_t tp_mpi_rank(const tp_mpi *m) {
  return (void)m, 0;
}
static inline uint32_t tp_mpi_size(const tp_mpi *m) {
  return (void)m, 1;
}
static inline const char *tp_mpi_host(const tp_mpi *m, uint32_t rank) {
  return (void)m, (void)rank, "";
}
static inline const tp_mpi_peer *tp_mpi_peer_info(const tp_mpi *m, uint32_t rank) {
  return (void)m, (void)rank, NULL;
}
static inline int tp_mpi_start(tp_mpi *m, int status, const char *reason, char *err, size_t errlen) {
  return (void)m, (void)reason, (void)err, (void)errlen, status;
}
static inline int tp_mpi_level_begin(tp_mpi *m, uint32_t level, uint64_t *start_ns, char *err,
                                     size_t errlen) {
  (void)m, (void)level, (void)err, (void)errlen;
  *start_ns = 0;
  return TP_EUNSUPPORTED;
}
static inline void tp_mpi_poll(tp_mpi *m, uint32_t level, const tp_mpi_counters *own, bool *interrupt) {
  (void)m, (void)level, (void)own, (void)interrupt;
}
static inline void tp_mpi_others(const tp_mpi *m, tp_mpi_counters *sum) {
  (void)m;
  sum->done = sum->failed = sum->in_flight = 0;
}
static inline void tp_mpi_interrupt(tp_mpi *m) {
  (void)m;
}
static inline int tp_mpi_level_end(tp_mpi *m, uint32_t level, const uint8_t *data, size_t len,
                                   tp_mpi_payload_cb cb, void *user_data, char *err, size_t errlen) {
  (void)m, (void)level, (void)data, (void)len, (void)cb, (void)user_data, (void)err, (void)errlen;
  return TP_EUNSUPPORTED;
}
static inline void tp_mpi_finish(tp_mpi *m) {
  (void)m;
}
static inline void tp_mpi_fail(tp_mpi *m, const char *reason) {
  (void)m, (void)reason;
}

#endif
#endif

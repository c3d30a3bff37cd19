/* Distributed runs: the MPI side (see tp_mpi.h for the protocol).
 *
 * Every wait here polls (MPI_Iprobe / MPI_Test, then a 100 us nap) rather
 * than blocking in MPI: a blocking Open MPI call spins on its core, and
 * ranks that wait must not take the CPU from the ranks that measure (on a
 * test machine several ranks and the server share two cores).  The only
 * spins are the ping-pong exchanges, where a nap would be measured as
 * round-trip time; they yield the core on every turn. */
#include "tp_mpi.h"

#include <errno.h>
#include <mpi.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <time.h>
#include <unistd.h>

#include "run/tp_dist.h"

enum {
  TAG_START = 1700, /* rank -> 0: could it start (w0 = failed?, text = why) */
  TAG_REPLY,        /* 0 -> rank: go on (w0 = 1) or the run is off (text = why) */
  TAG_READY,        /* rank -> 0: ready for level w0 */
  TAG_PING,         /* 0 -> rank: round w1 of level w0's clock exchange */
  TAG_PONG,         /* rank -> 0: round w0, the rank's clock w1 */
  TAG_GO,           /* 0 -> rank: level w0 starts at w1 (rank 0's clock); offset w2, uncertainty w3 */
  TAG_HB,           /* rank -> 0: level w0; done w1, failed w2, in flight w3 */
  TAG_INTERRUPT,    /* 0 -> rank: stop level w0 */
  TAG_RESULT,       /* rank -> 0: level w0's payload: w1 bytes in w2 TAG_DATA messages */
  TAG_DATA,         /* rank -> 0: raw bytes of the payload */
  TAG_FAIL,         /* rank -> 0: this rank is out of the run (text = why) */
  TAG_FINISH        /* 0 -> rank: the run is over (text = why, when early) */
};

#define PING_ROUNDS 32
#define HB_INTERVAL_NS (250 * TP_NS_PER_MS)
#define GONE_CHECK_NS (100 * TP_NS_PER_MS)
/* Time from GO to the agreed start: the GO messages must arrive and every
 * rank be scheduled before it. */
#define START_LEAD_NS (30 * TP_NS_PER_MS)
/* Payloads travel in pieces MPI's int counts can carry. */
#define CHUNK_BYTES ((size_t)64 << 20)

/* Every control message has this one layout, sent as bytes: ranks must
 * share byte order and word size (x86-64 and arm64 Linux do). */
typedef struct msg {
  uint64_t w[4];
  char text[TP_MPI_REASON_LEN];
} msg;

/* Who a rank is, from the start-up allgather: the host name for people,
 * and the boot and PID-namespace ids that tell whether its pid can be
 * checked from here. */
typedef struct ident {
  char host[TP_MPI_HOST_LEN];
  char boot_id[48];
  char pidns[48];
  int64_t pid;
} ident;

struct tp_mpi {
  MPI_Comm comm;
  uint32_t rank, size;
  uint64_t timeout_ns;
  bool finalize; /* MPI was initialized here, so it is finalized here */
  ident *ids;
  bool *local; /* same kernel and PID namespace as this process: kill(pid, 0) tells */
  uint32_t level;
  /* Rank 0. */
  tp_mpi_peer *peers;
  uint64_t *heard_ns; /* when each rank was last heard from */
  bool *unconfirmed;  /* given up on for silence: it may still be alive */
  uint64_t level_start_ns;
  uint64_t *checked_ns; /* when each rank's process was last looked for */
  bool finish_sent;
  /* Other ranks. */
  bool finished, root_gone;
  uint64_t root_checked_ns;
  uint64_t hb_last_ns;
  MPI_Request hb_req;
  msg hb_msg; /* the heartbeat in flight: its buffer lives until it completes */
  tp_mpi_counters own;
};

bool tp_mpi_launched(void) {
  return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK");
}

static void nap(long us) {
  struct timespec ts = {0, us * 1000};
  nanosleep(&ts, NULL);
}

static void wait_until(uint64_t t_ns) {
  for (;;) {
    uint64_t now = tp_now_ns();
    if (now >= t_ns) return;
    /* Sleep while far, spin the last 2 ms: a nap can overshoot by the
     * scheduler's slack. */
    if (t_ns - now > 2 * TP_NS_PER_MS) nap(500);
  }
}

static void read_line(const char *path, char *out, size_t len) {
  out[0] = 0;
  FILE *f = fopen(path, "r");
  if (!f) return;
  if (!fgets(out, (int)len, f)) out[0] = 0;
  fclose(f);
  out[strcspn(out, "\n")] = 0;
}

/* Whether a rank's process is known to be gone: only for a process this
 * one can see (same kernel, same PID namespace); a zombie counts as gone. */
static bool proc_gone(const tp_mpi *m, uint32_t k) {
  if (!m->local[k] || m->ids[k].pid <= 0) return false;
  if (kill((pid_t)m->ids[k].pid, 0) != 0) return errno == ESRCH;
  char path[64], line[512];
  snprintf(path, sizeof(path), "/proc/%lld/stat", (long long)m->ids[k].pid);
  read_line(path, line, sizeof(line));
  const char *paren = strrchr(line, ')');
  return paren && paren[1] == ' ' && paren[2] == 'Z';
}

static int send_msg(tp_mpi *m, uint32_t to, int tag, const msg *x) {
  return MPI_Send(x, (int)sizeof(*x), MPI_BYTE, (int)to, tag, m->comm) == MPI_SUCCESS ? 0 : TP_EIO;
}

static int recv_msg(tp_mpi *m, uint32_t from, int tag, msg *x) {
  memset(x, 0, sizeof(*x));
  int rv = MPI_Recv(x, (int)sizeof(*x), MPI_BYTE, (int)from, tag, m->comm, MPI_STATUS_IGNORE);
  x->text[sizeof(x->text) - 1] = 0;
  return rv == MPI_SUCCESS ? 0 : TP_EIO;
}

static void set_text(msg *x, const char *s) {
  snprintf(x->text, sizeof(x->text), "%s", s ? s : "");
}

/* ---- start-up ---------------------------------------------------------------- */

int tp_mpi_new(tp_mpi **out, uint64_t timeout_ns, char *err, size_t errlen) {
  *out = NULL;
  tp_mpi *m = calloc(1, sizeof(*m));
  if (!m) return TP_ENOMEM;
  m->hb_req = MPI_REQUEST_NULL;
  m->timeout_ns = timeout_ns;
  int inited = 0;
  MPI_Initialized(&inited);
  if (!inited) {
    /* Only the loop's thread calls MPI. */
    int provided = 0;
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS) {
      free(m);
      tp_seterr(err, errlen, "cannot initialize MPI (was this process started by mpirun?)");
      return TP_EIO;
    }
    m->finalize = true;
  }
  /* A communicator of our own, whose errors come back as codes: the
   * default handler aborts the whole job on the first one. */
  MPI_Comm_dup(MPI_COMM_WORLD, &m->comm);
  MPI_Comm_set_errhandler(m->comm, MPI_ERRORS_RETURN);
  int rank = 0, size = 1;
  MPI_Comm_rank(m->comm, &rank);
  MPI_Comm_size(m->comm, &size);
  m->rank = (uint32_t)rank;
  m->size = (uint32_t)size;

  ident me;
  memset(&me, 0, sizeof(me));
  char name[MPI_MAX_PROCESSOR_NAME + 1] = "";
  int nlen = 0;
  if (MPI_Get_processor_name(name, &nlen) != MPI_SUCCESS || nlen <= 0) gethostname(name, sizeof(name) - 1);
  snprintf(me.host, sizeof(me.host), "%s", name);
  read_line("/proc/sys/kernel/random/boot_id", me.boot_id, sizeof(me.boot_id));
  ssize_t n = readlink("/proc/self/ns/pid", me.pidns, sizeof(me.pidns) - 1);
  me.pidns[n > 0 ? n : 0] = 0;
  me.pid = (int64_t)getpid();

  m->ids = calloc(m->size, sizeof(*m->ids));
  m->local = calloc(m->size, sizeof(*m->local));
  m->peers = calloc(m->size, sizeof(*m->peers));
  m->heard_ns = calloc(m->size, sizeof(*m->heard_ns));
  m->unconfirmed = calloc(m->size, sizeof(*m->unconfirmed));
  m->checked_ns = calloc(m->size, sizeof(*m->checked_ns));
  if (!m->ids || !m->local || !m->peers || !m->heard_ns || !m->unconfirmed || !m->checked_ns) {
    tp_mpi_free(m);
    return TP_ENOMEM;
  }
  /* The one collective: nobody can have failed yet. */
  if (MPI_Allgather(&me, (int)sizeof(me), MPI_BYTE, m->ids, (int)sizeof(me), MPI_BYTE, m->comm) !=
      MPI_SUCCESS) {
    tp_mpi_free(m);
    tp_seterr(err, errlen, "MPI: cannot exchange the ranks' host names");
    return TP_EIO;
  }
  for (uint32_t k = 0; k < m->size; k++) {
    m->ids[k].host[sizeof(m->ids[k].host) - 1] = 0;
    m->local[k] = me.boot_id[0] && strcmp(m->ids[k].boot_id, me.boot_id) == 0 && me.pidns[0] &&
                  strcmp(m->ids[k].pidns, me.pidns) == 0;
    snprintf(m->peers[k].host, sizeof(m->peers[k].host), "%s", m->ids[k].host);
  }
  *out = m;
  return 0;
}

void tp_mpi_free(tp_mpi *m) {
  if (!m) return;
  if (m->ids) {
    if (m->rank == 0 && !m->finish_sent) tp_mpi_finish(m);
    bool maybe_alive = false;
    for (uint32_t k = 1; m->rank == 0 && k < m->size; k++)
      if (m->unconfirmed[k] && !proc_gone(m, k)) maybe_alive = true;
    if (maybe_alive) {
      /* A rank given up on for its silence may be alive but stuck, and
       * MPI_Finalize would wait for it for ever.  Everything is written. */
      fflush(NULL);
      MPI_Abort(m->comm, 1);
    }
  }
  if (m->hb_req != MPI_REQUEST_NULL) {
    int done = 0;
    MPI_Test(&m->hb_req, &done, MPI_STATUS_IGNORE);
    if (!done) MPI_Request_free(&m->hb_req);
  }
  if (m->ids) MPI_Comm_free(&m->comm);
  if (m->finalize) MPI_Finalize();
  free(m->ids);
  free(m->local);
  free(m->peers);
  free(m->heard_ns);
  free(m->unconfirmed);
  free(m->checked_ns);
  free(m);
}

uint32_t tp_mpi_rank(const tp_mpi *m) {
  return m->rank;
}
uint32_t tp_mpi_size(const tp_mpi *m) {
  return m->size;
}
const char *tp_mpi_host(const tp_mpi *m, uint32_t rank) {
  return rank < m->size ? m->ids[rank].host : "";
}

const tp_mpi_peer *tp_mpi_peer_info(const tp_mpi *m, uint32_t rank) {
  return m->rank == 0 && rank < m->size ? &m->peers[rank] : NULL;
}

/* ---- rank 0's side ---------------------------------------------------------- */

static void root_fail(tp_mpi *m, uint32_t k, uint32_t level, bool maybe_alive, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void root_fail(tp_mpi *m, uint32_t k, uint32_t level, bool maybe_alive, const char *fmt, ...) {
  tp_mpi_peer *p = &m->peers[k];
  if (p->failed) return;
  p->failed = true;
  p->failed_level = level;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(p->reason, sizeof(p->reason), fmt, ap);
  va_end(ap);
  m->unconfirmed[k] = maybe_alive;
}

static bool alive(const tp_mpi *m, uint32_t k) {
  return k != 0 && !m->peers[k].failed;
}

/* Takes in every heartbeat and failure notice rank k has sent. */
static void drain(tp_mpi *m, uint32_t k) {
  static const int tags[] = {TAG_FAIL, TAG_HB};
  for (size_t t = 0; t < TP_ARRAY_LEN(tags); t++) {
    for (;;) {
      int flag = 0;
      if (MPI_Iprobe((int)k, tags[t], m->comm, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS || !flag) break;
      msg x;
      if (recv_msg(m, k, tags[t], &x)) return;
      m->heard_ns[k] = tp_now_ns();
      if (tags[t] == TAG_FAIL) {
        root_fail(m, k, m->level, false, "%s", x.text);
        return;
      }
      if (x.w[0] == m->level) {
        m->peers[k].hb_done = x.w[1];
        m->peers[k].hb_failed = x.w[2];
        m->peers[k].hb_in_flight = x.w[3];
      }
    }
  }
}

/* Whether rank k, waited on since since_ns, has failed: it said so, its
 * process is gone, or it has been silent too long.  Marks it failed. */
static bool root_check(tp_mpi *m, uint32_t k, uint64_t since_ns, const char *doing) {
  drain(m, k);
  if (m->peers[k].failed) return true;
  uint64_t now = tp_now_ns();
  if (now - m->checked_ns[k] >= GONE_CHECK_NS) {
    m->checked_ns[k] = now;
    if (proc_gone(m, k)) {
      root_fail(m, k, m->level, false, "its process (pid %lld) died while %s", (long long)m->ids[k].pid,
                doing);
      return true;
    }
  }
  uint64_t from = TP_MAX(m->heard_ns[k], since_ns);
  if (now > from && now - from > m->timeout_ns) {
    root_fail(
        m, k, m->level, true,
        "no word from it for %.1f s while %s (it died, hung, or its host is unreachable; see --mpi-timeout)",
        (double)(now - from) / 1e9, doing);
    return true;
  }
  return false;
}

/* Waits for rank k's message with this tag.  Returns 0, or -1 once the rank
 * is marked failed. */
static int root_wait(tp_mpi *m, uint32_t k, int tag, msg *out, bool spin, const char *doing) {
  uint64_t since = tp_now_ns();
  for (;;) {
    int flag = 0;
    if (MPI_Iprobe((int)k, tag, m->comm, &flag, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
      root_fail(m, k, m->level, true, "MPI error while %s", doing);
      return -1;
    }
    if (flag) {
      if (recv_msg(m, k, tag, out)) {
        root_fail(m, k, m->level, true, "MPI error while %s", doing);
        return -1;
      }
      m->heard_ns[k] = tp_now_ns();
      return 0;
    }
    if (root_check(m, k, since, doing)) return -1;
    /* Spinning, still yield: the rank answering may share this core (a
     * launcher binds each host's first rank to its first core), and a
     * pure spin would hold it off for a whole time slice. */
    if (spin)
      sched_yield();
    else
      nap(100);
  }
}

/* Sends to a rank believed alive; a process seen gone is not sent to. */
static void root_send(tp_mpi *m, uint32_t k, int tag, const msg *x) {
  if (proc_gone(m, k)) {
    root_fail(m, k, m->level, false, "its process (pid %lld) died", (long long)m->ids[k].pid);
    return;
  }
  if (send_msg(m, k, tag, x)) root_fail(m, k, m->level, true, "MPI error sending to it");
}

/* ---- the other ranks' side ------------------------------------------------------ */

static void send_hb(tp_mpi *m) {
  if (m->hb_req != MPI_REQUEST_NULL) {
    int done = 0;
    MPI_Test(&m->hb_req, &done, MPI_STATUS_IGNORE);
    if (!done) return;
  }
  uint64_t now = tp_now_ns();
  if (now - m->hb_last_ns < HB_INTERVAL_NS) return;
  m->hb_last_ns = now;
  memset(&m->hb_msg, 0, sizeof(m->hb_msg));
  m->hb_msg.w[0] = m->level;
  m->hb_msg.w[1] = m->own.done;
  m->hb_msg.w[2] = m->own.failed;
  m->hb_msg.w[3] = m->own.in_flight;
  MPI_Isend(&m->hb_msg, (int)sizeof(m->hb_msg), MPI_BYTE, 0, TAG_HB, m->comm, &m->hb_req);
}

static bool root_gone(tp_mpi *m) {
  if (!m->root_gone && proc_gone(m, 0)) m->root_gone = true;
  return m->root_gone;
}

/* Waits for rank 0's next word, answering clock pings meanwhile and
 * sending heartbeats.  Returns 0 with the message and its tag, or
 * TP_ECONNECT when rank 0 is gone. */
static int rank_wait(tp_mpi *m, msg *out, int *tag) {
  uint64_t spin_until = 0, checked = tp_now_ns();
  for (;;) {
    int flag = 0;
    MPI_Status st;
    if (MPI_Iprobe(0, MPI_ANY_TAG, m->comm, &flag, &st) != MPI_SUCCESS) return TP_EIO;
    if (flag) {
      if (recv_msg(m, 0, st.MPI_TAG, out)) return TP_EIO;
      if (st.MPI_TAG == TAG_PING) {
        msg pong;
        memset(&pong, 0, sizeof(pong));
        /* Read as close to the arrival as possible: the offset is taken at
         * the middle of rank 0's round trip. */
        pong.w[1] = tp_now_ns();
        pong.w[0] = out->w[1];
        if (send_msg(m, 0, TAG_PONG, &pong)) return TP_EIO;
        /* The next ping follows within a round trip: no nap in between. */
        spin_until = tp_now_ns() + 2 * TP_NS_PER_MS;
        continue;
      }
      if (st.MPI_TAG == TAG_INTERRUPT) continue; /* for a level that is over */
      if (st.MPI_TAG == TAG_FINISH) m->finished = true;
      *tag = st.MPI_TAG;
      return 0;
    }
    send_hb(m);
    uint64_t now = tp_now_ns();
    if (now - checked >= GONE_CHECK_NS) {
      checked = now;
      if (root_gone(m)) return TP_ECONNECT;
    }
    if (now >= spin_until)
      nap(100);
    else
      sched_yield();
  }
}

static int root_gone_err(tp_mpi *m, char *err, size_t errlen) {
  tp_seterr(err, errlen, "rank 0 on %s is gone (its process died); this rank stops", m->ids[0].host);
  return TP_ECONNECT;
}

/* ---- the run ------------------------------------------------------------------ */

int tp_mpi_start(tp_mpi *m, int status, const char *reason, char *err, size_t errlen) {
  msg x;
  memset(&x, 0, sizeof(x));
  if (m->rank != 0) {
    x.w[0] = status ? 1 : 0;
    set_text(&x, status ? reason : "");
    if (send_msg(m, 0, TAG_START, &x)) {
      tp_seterr(err, errlen, "MPI: cannot reach rank 0");
      return TP_ECANCELED;
    }
    if (status) {
      tp_seterr(err, errlen, "%s", reason);
      return TP_ECANCELED;
    }
    int tag = 0;
    int rv = rank_wait(m, &x, &tag);
    if (rv == TP_ECONNECT) {
      root_gone_err(m, err, errlen);
      return TP_ECANCELED;
    }
    if (rv) {
      tp_seterr(err, errlen, "MPI error while waiting for rank 0");
      return TP_ECANCELED;
    }
    if (tag == TAG_REPLY && x.w[0] == 1) return 0;
    tp_seterr(err, errlen, "%s", x.text[0] ? x.text : "rank 0 ended the run");
    return TP_ECANCELED;
  }
  m->level = UINT32_MAX;
  if (status) root_fail(m, 0, UINT32_MAX, false, "%s", reason);
  for (uint32_t k = 1; k < m->size; k++) {
    if (root_wait(m, k, TAG_START, &x, false, "starting") == 0 && x.w[0])
      root_fail(m, k, UINT32_MAX, false, "%s", x.text);
  }
  memset(&x, 0, sizeof(x));
  x.w[0] = status ? 0 : 1;
  if (status) snprintf(x.text, sizeof(x.text), "rank 0 on %s could not start: %s", m->ids[0].host, reason);
  for (uint32_t k = 1; k < m->size; k++)
    if (alive(m, k)) root_send(m, k, TAG_REPLY, &x);
  if (status) m->finish_sent = true; /* the reply was the last word */
  return 0;
}

int tp_mpi_level_begin(tp_mpi *m, uint32_t level, uint64_t *start_ns, char *err, size_t errlen) {
  m->level = level;
  msg x;
  memset(&x, 0, sizeof(x));
  if (m->rank != 0) {
    m->own.done = m->own.failed = m->own.in_flight = 0;
    x.w[0] = level;
    if (send_msg(m, 0, TAG_READY, &x)) return root_gone_err(m, err, errlen);
    int tag = 0;
    int rv = rank_wait(m, &x, &tag);
    if (rv == TP_ECONNECT) return root_gone_err(m, err, errlen);
    if (rv) {
      tp_seterr(err, errlen, "MPI error while waiting for rank 0");
      return TP_EIO;
    }
    if (tag != TAG_GO || x.w[0] != level) {
      tp_seterr(err, errlen, "%s", x.text[0] ? x.text : "rank 0 ended the run");
      return TP_ECANCELED;
    }
    /* Rank 0's instant on this clock: t_here = t_rank0 + offset. */
    uint64_t start = x.w[1] + x.w[2];
    wait_until(start);
    *start_ns = start;
    return 0;
  }
  char doing[64];
  snprintf(doing, sizeof(doing), "getting ready for level %u", level + 1);
  for (uint32_t k = 1; k < m->size; k++)
    if (alive(m, k)) root_wait(m, k, TAG_READY, &x, false, doing);
  /* The clocks, one rank at a time so that no exchange queues behind
   * another. */
  snprintf(doing, sizeof(doing), "measuring its clock before level %u", level + 1);
  for (uint32_t k = 1; k < m->size; k++) {
    if (!alive(m, k)) continue;
    tp_clock_est e;
    tp_clock_est_init(&e);
    /* Checked once before the rounds, not inside them: the check would be
     * timed as part of the round trip. */
    if (proc_gone(m, k)) {
      root_fail(m, k, level, false, "its process (pid %lld) died", (long long)m->ids[k].pid);
      continue;
    }
    for (uint32_t round = 0; round < PING_ROUNDS && alive(m, k); round++) {
      msg ping, pong;
      memset(&ping, 0, sizeof(ping));
      ping.w[0] = level;
      ping.w[1] = round;
      uint64_t t0 = tp_now_ns();
      if (send_msg(m, k, TAG_PING, &ping)) {
        root_fail(m, k, level, true, "MPI error sending to it");
        break;
      }
      if (root_wait(m, k, TAG_PONG, &pong, true, doing)) break;
      uint64_t t1 = tp_now_ns();
      if (pong.w[0] == round) tp_clock_est_add(&e, t0, pong.w[1], t1);
    }
    if (alive(m, k) && e.samples) {
      m->peers[k].offset_ns = e.offset_ns;
      m->peers[k].uncertainty_ns = e.uncertainty_ns;
    }
  }
  uint64_t t0 = tp_now_ns() + START_LEAD_NS;
  for (uint32_t k = 1; k < m->size; k++) {
    if (!alive(m, k)) continue;
    memset(&x, 0, sizeof(x));
    x.w[0] = level;
    x.w[1] = t0;
    x.w[2] = (uint64_t)m->peers[k].offset_ns;
    x.w[3] = m->peers[k].uncertainty_ns;
    root_send(m, k, TAG_GO, &x);
    m->peers[k].hb_done = m->peers[k].hb_failed = m->peers[k].hb_in_flight = 0;
  }
  m->level_start_ns = t0;
  wait_until(t0);
  *start_ns = t0;
  return 0;
}

void tp_mpi_poll(tp_mpi *m, uint32_t level, const tp_mpi_counters *own, bool *interrupt) {
  if (m->rank != 0) {
    m->own = *own;
    send_hb(m);
    int flag = 0;
    if (MPI_Iprobe(0, TAG_INTERRUPT, m->comm, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag) {
      msg x;
      recv_msg(m, 0, TAG_INTERRUPT, &x);
      if (x.w[0] == level) *interrupt = true;
    }
    uint64_t now = tp_now_ns();
    if (now - m->root_checked_ns >= GONE_CHECK_NS) {
      m->root_checked_ns = now;
      if (root_gone(m)) *interrupt = true;
    }
    return;
  }
  char doing[48];
  snprintf(doing, sizeof(doing), "measuring level %u", level + 1);
  for (uint32_t k = 1; k < m->size; k++)
    if (alive(m, k)) root_check(m, k, m->level_start_ns, doing);
}

void tp_mpi_others(const tp_mpi *m, tp_mpi_counters *sum) {
  memset(sum, 0, sizeof(*sum));
  for (uint32_t k = 1; m->rank == 0 && k < m->size; k++) {
    if (!alive(m, k)) continue;
    sum->done += m->peers[k].hb_done;
    sum->failed += m->peers[k].hb_failed;
    sum->in_flight += m->peers[k].hb_in_flight;
  }
}

void tp_mpi_interrupt(tp_mpi *m) {
  if (m->rank != 0) return;
  msg x;
  memset(&x, 0, sizeof(x));
  x.w[0] = m->level;
  for (uint32_t k = 1; k < m->size; k++)
    if (alive(m, k)) root_send(m, k, TAG_INTERRUPT, &x);
}

/* Another rank: sends its payload, heartbeats going on while rank 0 is
 * still busy with its own level. */
static int rank_send_payload(tp_mpi *m, uint32_t level, const uint8_t *data, size_t len, char *err,
                             size_t errlen) {
  msg x;
  memset(&x, 0, sizeof(x));
  size_t chunks = (len + CHUNK_BYTES - 1) / CHUNK_BYTES;
  x.w[0] = level;
  x.w[1] = len;
  x.w[2] = chunks;
  if (send_msg(m, 0, TAG_RESULT, &x)) return root_gone_err(m, err, errlen);
  for (size_t c = 0; c < chunks; c++) {
    size_t off = c * CHUNK_BYTES, n = TP_MIN(CHUNK_BYTES, len - off);
    MPI_Request req;
    if (MPI_Isend(data + off, (int)n, MPI_BYTE, 0, TAG_DATA, m->comm, &req) != MPI_SUCCESS)
      return root_gone_err(m, err, errlen);
    uint64_t checked = tp_now_ns();
    for (;;) {
      int done = 0;
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (done) break;
      send_hb(m);
      int flag = 0;
      /* Rank 0 ended the run without taking the records (it failed). */
      if (MPI_Iprobe(0, TAG_FINISH, m->comm, &flag, MPI_STATUS_IGNORE) == MPI_SUCCESS && flag) {
        MPI_Cancel(&req);
        MPI_Request_free(&req);
        recv_msg(m, 0, TAG_FINISH, &x);
        m->finished = true;
        tp_seterr(err, errlen, "%s", x.text[0] ? x.text : "rank 0 ended the run");
        return TP_ECANCELED;
      }
      uint64_t now = tp_now_ns();
      if (now - checked >= GONE_CHECK_NS) {
        checked = now;
        if (root_gone(m)) {
          MPI_Cancel(&req);
          MPI_Request_free(&req);
          return root_gone_err(m, err, errlen);
        }
      }
      nap(100);
    }
  }
  return 0;
}

/* Rank 0: receives rank k's payload; NULL when the rank failed meanwhile. */
static uint8_t *root_recv_payload(tp_mpi *m, uint32_t k, uint32_t level, size_t *len) {
  char doing[64];
  snprintf(doing, sizeof(doing), "waiting for its records of level %u", level + 1);
  msg x;
  if (root_wait(m, k, TAG_RESULT, &x, false, doing)) return NULL;
  if (x.w[0] != level || x.w[2] != (x.w[1] + CHUNK_BYTES - 1) / CHUNK_BYTES) {
    root_fail(m, k, level, true, "sent records of the wrong level (%llu)", (unsigned long long)x.w[0]);
    return NULL;
  }
  size_t total = (size_t)x.w[1];
  uint8_t *buf = malloc(total ? total : 1);
  if (!buf) {
    root_fail(m, k, level, true, "its %zu bytes of records do not fit in rank 0's memory", total);
    return NULL;
  }
  uint64_t since = tp_now_ns();
  for (size_t off = 0; off < total; off += CHUNK_BYTES) {
    size_t n = TP_MIN(CHUNK_BYTES, total - off);
    MPI_Request req;
    if (MPI_Irecv(buf + off, (int)n, MPI_BYTE, (int)k, TAG_DATA, m->comm, &req) != MPI_SUCCESS) {
      root_fail(m, k, level, true, "MPI error while %s", doing);
      free(buf);
      return NULL;
    }
    for (;;) {
      int done = 0;
      MPI_Test(&req, &done, MPI_STATUS_IGNORE);
      if (done) break;
      if (root_check(m, k, since, doing)) {
        MPI_Cancel(&req);
        MPI_Request_free(&req);
        free(buf);
        return NULL;
      }
      nap(100);
    }
    m->heard_ns[k] = tp_now_ns();
  }
  *len = total;
  return buf;
}

int tp_mpi_level_end(tp_mpi *m, uint32_t level, const uint8_t *data, size_t len, tp_mpi_payload_cb cb,
                     void *user_data, char *err, size_t errlen) {
  if (m->rank != 0) return rank_send_payload(m, level, data, len, err, errlen);
  for (uint32_t k = 1; k < m->size; k++) {
    if (!alive(m, k)) continue;
    size_t n = 0;
    uint8_t *buf = root_recv_payload(m, k, level, &n);
    if (!buf) continue;
    char why[256] = "";
    if (cb(user_data, k, buf, n, why, sizeof(why)))
      root_fail(m, k, level, true, "sent records rank 0 cannot read: %s", why);
    free(buf);
  }
  return 0;
}

void tp_mpi_finish(tp_mpi *m) {
  msg x;
  memset(&x, 0, sizeof(x));
  if (m->rank == 0) {
    if (m->finish_sent) return;
    m->finish_sent = true;
    for (uint32_t k = 1; k < m->size; k++)
      if (alive(m, k)) root_send(m, k, TAG_FINISH, &x);
    return;
  }
  int tag = 0;
  while (!m->finished && !m->root_gone && rank_wait(m, &x, &tag) == 0) {
  }
}

void tp_mpi_fail(tp_mpi *m, const char *reason) {
  if (m->rank == 0 || m->root_gone) return;
  msg x;
  memset(&x, 0, sizeof(x));
  set_text(&x, reason);
  send_msg(m, 0, TAG_FAIL, &x);
  m->finished = true; /* nothing more is waited for */
}

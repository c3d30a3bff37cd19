/* The reader thread (see tp_reader.h for why and for the threading
 * contract). */
#include "util/tp_reader.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "util/tp_common.h"
#include "util/tp_stamp.h"

/* One read at most; a socket is read on until it is empty or this much
 * came in one turn, so that one busy client does not hold up the others
 * (the poll is level-triggered: the rest is read on the next turn). */
#define READ_MAX (64 * 1024)
#define TURN_MAX (256 * 1024)
#define MAX_EVENTS 256

struct tp_rsock {
  int fd;
  void *owner;
  bool dead;            /* removed: never read again (under mu) */
  tp_rsock *next; /* in r->graveyard once dead */
};

typedef struct chunk {
  struct chunk *next;
  tp_rsock *s;
  void *owner;
  ssize_t n;
  uint64_t stamp_ns;
  uint8_t data[];
} chunk;

struct tp_reader {
  uv_async_t async; /* first member: the close callback frees r */
  tp_reader_cb cb;
  int epfd;
  int stopfd; /* eventfd: written once to stop the thread */
  pthread_t thread;
  bool started; /* thread runs (until joined in _close) */
  pthread_mutex_t mu;
  /* Under mu: */
  chunk *head, *tail;
  tp_rsock *graveyard;
  /* Reader thread only: */
  uint8_t buf[READ_MAX];
  /* Never run: tp_stamp_fd_group takes a loop for its fallback, and a loop
   * whose data is NULL has no poll batch stamp, so a socket without kernel
   * stamps gets the time of the read, which on this thread is prompt. */
  uv_loop_t no_batch;
};

static void push(tp_reader *r, tp_rsock *s, const uint8_t *p, ssize_t n, uint64_t t) {
  chunk *k = malloc(sizeof(*k) + (n > 0 ? (size_t)n : 0));
  if (!k) n = UV_ENOMEM; /* the connection ends: bytes cannot be dropped silently */
  if (!k && !(k = malloc(sizeof(*k)))) return;
  k->next = NULL;
  k->s = s;
  k->owner = s->owner;
  k->n = n;
  k->stamp_ns = t;
  if (n > 0) memcpy(k->data, p, (size_t)n);
  if (r->tail)
    r->tail->next = k;
  else
    r->head = k;
  r->tail = k;
}

/* Reads s for one turn (under mu, s live).  Returns true when it queued a
 * chunk. */
static bool read_turn(tp_reader *r, tp_rsock *s) {
  bool queued = false;
  for (size_t total = 0; total < TURN_MAX;) {
    size_t len;
    uint64_t t = tp_stamp_fd_group(&r->no_batch, s->fd, READ_MAX, &len);
    ssize_t n = recv(s->fd, r->buf, len, MSG_DONTWAIT);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    if (n <= 0) {
      /* End of stream or an error: the last chunk; the fd stays open (the
       * loop owns it) but is read no more. */
      push(r, s, r->buf, n == 0 ? UV_EOF : -errno, t);
      epoll_ctl(r->epfd, EPOLL_CTL_DEL, s->fd, NULL);
      return true;
    }
    push(r, s, r->buf, n, t);
    queued = true;
    total += (size_t)n;
  }
  return queued;
}

/* A reader that shares a CPU with its loop must still run as soon as bytes
 * arrive.  Under the normal scheduler a thread that mostly sleeps preempts
 * a busy one on wake-up; under a real-time policy (inherited from a server
 * started with chrt) threads of one priority run until they block, so the
 * reader would wait for the loop to finish its wave: it takes one priority
 * above the loop's.  It only reads, so it cannot starve the loop. */
static void outrank_loop(void) {
  int policy;
  struct sched_param sp;
  if (pthread_getschedparam(pthread_self(), &policy, &sp) != 0) return;
  if ((policy == SCHED_FIFO || policy == SCHED_RR) && sp.sched_priority < sched_get_priority_max(policy)) {
    sp.sched_priority++;
    (void)pthread_setschedparam(pthread_self(), policy, &sp);
  }
}

static void *thread_main(void *arg) {
  tp_reader *r = arg;
  /* Signals are the loop's business (SIGINT, SIGTERM); this thread never
   * writes, so SIGPIPE cannot arise here either. */
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL);
  outrank_loop();
  struct epoll_event ev[MAX_EVENTS];
  for (;;) {
    pthread_mutex_lock(&r->mu);
    while (r->graveyard) {
      tp_rsock *s = r->graveyard;
      r->graveyard = s->next;
      free(s);
    }
    pthread_mutex_unlock(&r->mu);
    int n = epoll_wait(r->epfd, ev, MAX_EVENTS, -1);
    if (n < 0 && errno != EINTR) break;
    for (int i = 0; i < n; i++) {
      tp_rsock *s = ev[i].data.ptr;
      if (!s) return NULL; /* the stop eventfd */
      pthread_mutex_lock(&r->mu);
      bool queued = !s->dead && read_turn(r, s);
      pthread_mutex_unlock(&r->mu);
      if (queued) uv_async_send(&r->async);
    }
  }
  return NULL;
}

/* Hands the queued chunks to the handler one at a time (see the contract:
 * a handler may remove any socket, whose chunks then leave the queue). */
static void on_async(uv_async_t *a) {
  tp_reader *r = (tp_reader *)a;
  for (;;) {
    pthread_mutex_lock(&r->mu);
    chunk *k = r->head;
    if (k) {
      r->head = k->next;
      if (!r->head) r->tail = NULL;
    }
    pthread_mutex_unlock(&r->mu);
    if (!k) return;
    r->cb(k->owner, k->data, k->n, k->stamp_ns);
    free(k);
  }
}

int tp_reader_new(tp_reader **out, uv_loop_t *loop, tp_reader_cb cb) {
  *out = NULL;
  tp_reader *r = calloc(1, sizeof(*r));
  if (!r) return TP_ENOMEM;
  r->cb = cb;
  r->epfd = epoll_create1(EPOLL_CLOEXEC);
  r->stopfd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  struct epoll_event ev = {.events = EPOLLIN, .data.ptr = NULL};
  if (r->epfd < 0 || r->stopfd < 0 || epoll_ctl(r->epfd, EPOLL_CTL_ADD, r->stopfd, &ev) != 0 ||
      pthread_mutex_init(&r->mu, NULL) != 0) {
    if (r->epfd >= 0) close(r->epfd);
    if (r->stopfd >= 0) close(r->stopfd);
    free(r);
    return TP_EIO;
  }
  if (uv_async_init(loop, &r->async, on_async) != 0) {
    pthread_mutex_destroy(&r->mu);
    close(r->epfd);
    close(r->stopfd);
    free(r);
    return TP_EIO;
  }
  /* The sockets' own handles keep the loop running while they are open;
   * the reader alone does not. */
  uv_unref((uv_handle_t *)&r->async);
  if (pthread_create(&r->thread, NULL, thread_main, r) != 0) {
    tp_reader_close(r); /* closes the async handle, which frees r */
    return TP_EIO;
  }
  r->started = true;
  *out = r;
  return 0;
}

tp_rsock *tp_reader_add(tp_reader *r, int fd, void *owner) {
  tp_rsock *s = calloc(1, sizeof(*s));
  if (!s) return NULL;
  s->fd = fd;
  s->owner = owner;
  struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = s};
  /* Under mu: the reader's first look at s (which needs mu) then sees it
   * whole. */
  pthread_mutex_lock(&r->mu);
  int rv = epoll_ctl(r->epfd, EPOLL_CTL_ADD, fd, &ev);
  pthread_mutex_unlock(&r->mu);
  if (rv != 0) {
    free(s);
    return NULL;
  }
  return s;
}

void tp_reader_remove(tp_reader *r, tp_rsock *s) {
  pthread_mutex_lock(&r->mu);
  /* ENOENT after the end of stream: already unregistered. */
  epoll_ctl(r->epfd, EPOLL_CTL_DEL, s->fd, NULL);
  s->dead = true;
  s->next = r->graveyard;
  r->graveyard = s;
  chunk **pp = &r->head;
  r->tail = NULL;
  while (*pp) {
    chunk *k = *pp;
    if (k->s == s) {
      *pp = k->next;
      free(k);
    } else {
      r->tail = k;
      pp = &k->next;
    }
  }
  pthread_mutex_unlock(&r->mu);
}

static void on_closed(uv_handle_t *h) {
  tp_reader *r = (tp_reader *)h;
  while (r->head) {
    chunk *k = r->head;
    r->head = k->next;
    free(k);
  }
  while (r->graveyard) {
    tp_rsock *s = r->graveyard;
    r->graveyard = s->next;
    free(s);
  }
  pthread_mutex_destroy(&r->mu);
  free(r);
}

void tp_reader_close(tp_reader *r) {
  if (!r) return;
  if (r->started) {
    uint64_t one = 1;
    while (write(r->stopfd, &one, sizeof(one)) < 0 && errno == EINTR) {
    }
    pthread_join(r->thread, NULL);
  }
  close(r->epfd);
  close(r->stopfd);
  uv_close((uv_handle_t *)&r->async, on_closed);
}

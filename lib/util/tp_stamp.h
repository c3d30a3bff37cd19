/* Arrival times per poll batch.
 *
 * When several sockets become readable in one epoll_wait, libuv calls their
 * callbacks one after another; stamping each when its callback starts would
 * charge later sockets with the time spent parsing earlier ones, although
 * all their bytes were there when the poll returned.  A prepare handle (run
 * just before each poll) clears the stamp; the first read of the batch sets
 * it, and every read of the same batch uses it. */
#ifndef TP_STAMP_H
#define TP_STAMP_H

#include <stdint.h>

#include <uv.h>

/* Installs the stamp on a loop (stored in loop->data, which must be free).
 * Returns 0 or TP_ENOMEM.  The handle is unreferenced: it never keeps the
 * loop alive. */
int tp_stamp_install(uv_loop_t *loop);
/* Closes the handle (the loop must run for the close callback). */
void tp_stamp_uninstall(uv_loop_t *loop);
/* The arrival time for data read now: the batch's stamp, or tp_now_ns()
 * when no stamp is installed. */
uint64_t tp_stamp_now(uv_loop_t *loop);

#endif

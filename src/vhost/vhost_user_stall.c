/* SPDX-License-Identifier: MIT */
/* vhost_user_stall.c - a frontend kept a write to one of its fds waiting: stop, and drop it. */
#include <stdatomic.h>

#include "lib/log.h"
#include "mem/mem.h"
#include "vhost/vhost.h"
#include "vhost/vhost_user_conn.h"
#include "vhost/vhost_user_stall.h"

/**
 * vu_conn_stalled() - a write to one of the frontend's fds was kept waiting (peer_io.h).
 * @c: the connection
 * @qidx: the queue whose fd it was
 * @what: "call", "error", ...
 *
 * Only a frontend that cleared O_NONBLOCK on the file it shares and filled it does this. No
 * more writes go to its fds; its owner drops it on its own thread (the flag is read there like
 * mem_fault, after guest_fault_note()). Any thread that writes the connection's fds.
 *
 * Return: nothing; logged once.
 */
void vu_conn_stalled(struct vu_conn *c, unsigned qidx, const char *what)
{
	if (atomic_exchange_explicit(&c->peer_stalled, 1, memory_order_relaxed))
		return;
	log_guest("vhost-user: queue %u: its %s fd kept vnetd waiting (O_NONBLOCK cleared, full); "
		  "dropping the frontend", qidx, what);
	guest_fault_note();
}

/**
 * vu_peer_fd_kind() - how vnetd reads and writes an fd the frontend of @c hands over.
 * @c: the connection
 * @fd: the fd (a queue's kick, call or error fd, the device-state fd), or -1
 *
 * peer_fd_kind(), except that an fd of no other kind (an eventfd, ...) on a connection whose
 * owner set polled_writes (an earlier frontend of the port kept a write waiting) is polled
 * before each write too.
 *
 * Return: the kind, for peer_read() and peer_write().
 */
enum peer_fd_kind vu_peer_fd_kind(const struct vu_conn *c, int fd)
{
	enum peer_fd_kind kind = peer_fd_kind(fd);

	if (kind == PEER_FD_OTHER && c->polled_writes)
		kind = PEER_FD_POLLED;
	return kind;
}

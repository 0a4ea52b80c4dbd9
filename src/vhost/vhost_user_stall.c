/* SPDX-License-Identifier: MIT */
/* vhost_user_stall.c - a frontend kept a write to one of its fds waiting: stop, and drop it. */
#include <stdatomic.h>

#include "lib/log.h"
#include "mem/mem.h"
#include "vhost/vhost.h"
#include "vhost/vhost_user_conn.h"

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

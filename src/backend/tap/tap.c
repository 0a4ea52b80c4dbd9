/* SPDX-License-Identifier: MIT */
/* tap.c - tap backend: the ops tables the device calls, and a queue fd's epoll events. */
#include <sys/epoll.h>

#include "backend/tap/tap_internal.h"
#include "dev/dev.h"

/* tap_backend_ops - the ops table the device model calls (a single-queue tap). */
const struct vnet_backend_ops tap_backend_ops = {
	.kind = "tap",
	.offload_features = TAP_OFFLOADS,
	.transmit = tap_transmit,
	.transmit_burst = tap_transmit_burst,
	.burst_offloads = true,
	.set_offloads = tap_set_offloads,
	.rx_resume = tap_rx_resume,
	.reset = tap_reset,
};

/* tap_mq_backend_ops - a multi-queue tap's: the same, with per-queue TX counters. */
const struct vnet_backend_ops tap_mq_backend_ops = {
	.kind = "tap",
	.offload_features = TAP_OFFLOADS,
	.transmit = tap_transmit_mq,
	.transmit_burst = tap_transmit_burst_mq,
	.burst_offloads = true,
	.set_offloads = tap_set_offloads,
	.rx_resume = tap_rx_resume,
	.reset = tap_reset,
	.set_pairs = tap_set_pairs,
};

/**
 * tap_backend_ops_of() - the ops table to attach this tap with.
 * @be: the tap backend
 *
 * Return: tap_backend_ops for a single-queue tap; a multi-queue tap's (its transmits also
 * count per queue) otherwise.
 */
const struct vnet_backend_ops *tap_backend_ops_of(const struct vnet_backend *be)
{
	return tq_of_const(be)->tap->nq > 1 ? &tap_mq_backend_ops : &tap_backend_ops;
}

/**
 * tap_backend_handle_events() - handle one epoll report of a queue's fd.
 * @be: the tap backend
 * @i: the queue whose fd reported (below tap_backend_nqueues(); others are ignored)
 * @events: the epoll events
 *
 * EPOLLOUT resumes the queue's blocked transmit (its queue pair's, on a multi-queue tap);
 * EPOLLIN reads a bounded batch of packets into the guest (level-triggered: the rest comes next
 * round); EPOLLERR or EPOLLHUP on any queue means the interface is gone (the owner's failed() is
 * called once). Called on the thread that owns the queue.
 */
void tap_backend_handle_events(struct vnet_backend *be, unsigned i, uint32_t events)
{
	struct tap_backend *t = tq_of(be)->tap;
	struct tap_queue *tq;

	if (i >= t->nq)
		return;
	tq = t->q[i];
	if (tq->detached) {
		/* A detached tun fd reports EPOLLERR: it should not be registered at all. */
		if (events && t->owner && t->owner->queue_attached)
			t->owner->queue_attached(t->owner_ctx, i, tq->fd, false, 0);
		return;
	}
	if (tq->failed)
		return;
	/* tun reports EPOLLERR only once the interface is unregistered; it stays that way. */
	if (events & (EPOLLERR | EPOLLHUP)) {
		tap_fail(tq, "EPOLLERR");
		return;
	}
	if ((events & EPOLLOUT) && tq->tx_blocked) {
		/* Clear first: the resumed transmit may block again and set it anew. */
		tq->tx_blocked = false;
		if (t->nq > 1)
			vnet_dev_tx_resume_pair(t->dev, i);
		else
			vnet_dev_tx_resume(t->dev);
		tap_update_events(tq);
	}
	if ((events & EPOLLIN) && !tq->rx_pending && !tq->rx_nobufs) {
		if (t->trunk)
			tap_rx_trunk(tq);
		else
			tap_rx(tq);
	}
}

/* SPDX-License-Identifier: MIT */
/* tap_events.c - a tap queue's epoll interest, and the interface going away under every queue. */
#include <sys/epoll.h>

#include "lib/log.h"
#include "backend/tap/tap_internal.h"

/**
 * tap_update_events() - tell the owner which events the queue wants, if that changed
 * @tq: the queue
 *
 * EPOLLIN unless a packet waits for guest buffers (or the guest has none), EPOLLOUT while a
 * transmit is blocked; nothing once the interface failed. A detached queue is not registered:
 * attaching it registers it with these.
 */
void tap_update_events(struct tap_queue *tq)
{
	const struct tap_backend *t = tq->tap;
	uint32_t want = 0;

	if (!tq->failed) {
		if (!tq->rx_pending && !tq->rx_nobufs)
			want |= EPOLLIN;
		if (tq->tx_blocked)
			want |= EPOLLOUT;
	}
	if (want == tq->events)
		return;
	tq->events = want;
	if (tq->detached)
		return; /* not registered: attaching registers it with these */
	if (t->owner && t->owner->set_events)
		t->owner->set_events(t->owner_ctx, tq->index, tq->fd, want);
}

/**
 * tap_fail() - the interface was deleted under us: stop all I/O on every queue
 * @tq: the queue that found out
 * @why: what it saw, for the log
 *
 * Every queue goes with the interface; the owner's failed() is called once.
 */
void tap_fail(struct tap_queue *tq, const char *why)
{
	struct tap_backend *t = tq->tap;

	if (t->failed_told)
		return;
	t->failed_told = true;
	log_err("tap %s: the interface is gone (%s on queue %u); the port has no network now",
		t->name, why, tq->index);
	for (unsigned i = 0; i < t->nq; i++) {
		t->q[i]->failed = true;
		tap_update_events(t->q[i]);
	}
	if (t->owner && t->owner->failed)
		t->owner->failed(t->owner_ctx);
}

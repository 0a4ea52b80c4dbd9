/* SPDX-License-Identifier: MIT */
/* tap_rx.c - tap RX: packets read from the tap into the guest, straight or through rx_buf. */
#include <errno.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/stat_atomic.h"
#include "backend/tap/tap_internal.h"
#include "dev/dev.h"

/**
 * tap_deliver() - hand the packet in rx_buf to the guest
 * @tq: the queue that read it
 * @len: its length, our header included
 *
 * The device sets num_buffers and the flags the guest may see. A multi-queue tap's queue i
 * delivers to queue pair i (unless RSS steers, or the guest has fewer pairs active); a single
 * queue's packets are spread by the device's flow hash.
 * Return: as vnet_dev_receive(): 0 when the guest has no buffers for it now.
 */
int tap_deliver(struct tap_queue *tq, size_t len)
{
	struct iovec iov = {.iov_base = tq->rx_buf, .iov_len = len};

	if (tq->tap->nq > 1)
		return vnet_dev_receive_pair(tq->tap->dev, tq->index, &iov, 1);
	return vnet_dev_receive(tq->tap->dev, &iov, 1);
}

/**
 * tap_read() - readv() from the queue's fd, retried on EINTR
 * @tq: the queue
 * @iov: where to read into
 * @iovcnt: entries of @iov
 *
 * Handles the errors every read path shares: EBADFD fails the tap, EFAULT (guest memory went
 * away under the readv) goes to the owner's guest_fault(), others are logged.
 * Return: the bytes read, or -1: stop reading now.
 */
ssize_t tap_read(struct tap_queue *tq, const struct iovec *iov, int iovcnt)
{
	const struct tap_backend *t = tq->tap;
	ssize_t n;

	do
		n = readv(tq->fd, iov, iovcnt);
	while (n < 0 && errno == EINTR);
	if (n >= 0)
		return n;
	if (errno == EBADFD)
		tap_fail(tq, "read: EBADFD");
	else if (errno == EFAULT && t->owner && t->owner->guest_fault)
		t->owner->guest_fault(t->owner_ctx); /* guest memory went away under the readv */
	else if (errno != EAGAIN)
		log_guest("tap %s: read: %s", t->name, strerror(errno));
	return -1;
}

/*
 * One packet through rx_buf (legacy header, several queue pairs, a multi-queue tap's queues
 * after the first, or too few guest buffers for the largest packet): two copies, but the
 * device places it into whatever buffers it needs. -1: nothing read, stop; 0: read, stop
 * (it waits for guest buffers); 1: read, go on.
 */
static int tap_rx_copy(struct tap_queue *tq, size_t *bytes)
{
	struct iovec iov = {.iov_base = tq->rx_buf, .iov_len = sizeof(tq->rx_buf)};
	ssize_t n = tap_read(tq, &iov, 1);

	if (n < 0)
		return -1;
	*bytes += (size_t)n;
	if ((size_t)n < TAP_HDR_LEN + TAP_ETH_HLEN)
		return 1; /* nothing a guest could use */
	if (tap_deliver(tq, (size_t)n) == 0) {
		tq->rx_pending = (size_t)n;
		tap_update_events(tq);
		return 0;
	}
	return 1;
}


/*
 * A multi-queue tap's queue after the first: a bounded batch through rx_buf, each packet to
 * this queue's pair (tap_deliver()). Out of line: the single-queue tap never comes here.
 */
static __attribute__((noinline)) void tap_rx_queue(struct tap_queue *tq)
{
	size_t bytes = 0;
	unsigned i;
	int r = 1;

	for (i = 0; i < TAP_RX_BATCH && bytes < VNET_BUDGET_BYTES && r > 0 && !tq->failed; i++)
		r = tap_rx_copy(tq, &bytes);
	stat_add(&tq->stats.rx_packets, r < 0 ? i - 1 : i);
}

/**
 * tap_rx() - read a bounded batch of packets into the guest
 * @tq: the queue whose fd reported EPOLLIN (not a trunk's: tap_rx_trunk())
 *
 * TAP_RX_BATCH packets or VNET_BUDGET_BYTES, each with one readv straight into guest RX buffers
 * the device reserved (one copy, done by the kernel). With no guest buffers the packets stay
 * in the kernel until rx_resume(). Level-triggered epoll reports the rest on the next round.
 * Queue 0 only: the others go through tap_rx_queue() (the device's reservation is queue pair
 * 0's).
 */
void tap_rx(struct tap_queue *tq)
{
	size_t bytes = 0;
	unsigned i;

	if (tq->index) {
		tap_rx_queue(tq);
		return;
	}
	for (i = 0; i < TAP_RX_BATCH && bytes < VNET_BUDGET_BYTES && !tq->rx_pending && !tq->failed;
	     i++) {
		const struct iovec *iov;
		int niov = vnet_dev_rx_reserve(tq->tap->dev, 0, &iov);
		ssize_t n;

		if (niov == 0) {
			tq->rx_nobufs = true;
			tap_update_events(tq);
			break;
		}
		if (niov < 0) {
			int r = tap_rx_copy(tq, &bytes);

			if (r <= 0) {
				i += (unsigned)(r + 1); /* 0: one more read */
				break;
			}
			continue;
		}
		n = tap_read(tq, iov, niov);
		if (n < 0)
			break; /* EAGAIN: the reservation waits for the next packet */
		bytes += (size_t)n;
		vnet_dev_rx_commit(tq->tap->dev, (size_t)n);
	}
	stat_add(&tq->stats.rx_packets, i);
}

/* One queue after the guest posted receive buffers: see tap_rx_resume(). */
static void tap_queue_resume(struct tap_queue *tq)
{
	if (tq->failed)
		return;
	if (tq->rx_nobufs) {
		tq->rx_nobufs = false; /* the guest posted buffers: read the kernel's queue again */
		tap_update_events(tq);
	}
	if (!tq->rx_pending)
		return;
	if (tap_deliver(tq, tq->rx_pending) == 0)
		return; /* still no room: wait for the next rx_resume() */
	tq->rx_pending = 0;
	tap_update_events(tq);
}

/**
 * tap_reset() - the device was reset (backend.h reset)
 * @be: the tap's handle
 *
 * A packet read for the guest that is gone and waiting in a queue's buffer is dropped, not
 * handed to the next guest; every queue reads again.
 */
void tap_reset(struct vnet_backend *be)
{
	struct tap_backend *t = tq_of(be)->tap;

	for (unsigned i = 0; i < t->nq; i++) {
		t->q[i]->rx_pending = 0;
		t->q[i]->rx_nobufs = false;
		tap_update_events(t->q[i]);
	}
}

/**
 * tap_rx_resume() - the guest posted receive buffers (backend.h rx_resume)
 * @be: the tap's handle
 *
 * Delivers the waiting packet of each queue, then the tap is read again (the event loop's next
 * EPOLLIN: reads there are bounded per event).
 * Return: false (nothing more to do here).
 */
bool tap_rx_resume(struct vnet_backend *be)
{
	struct tap_backend *t = tq_of(be)->tap;

	for (unsigned i = 0; i < t->nq; i++)
		tap_queue_resume(t->q[i]);
	return false;
}

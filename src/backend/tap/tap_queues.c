/* SPDX-License-Identifier: MIT */
/* tap_queues.c - a tap's queue fds: open (IFF_MULTI_QUEUE), close, handles, counters, detaching. */
#include "backend/tap/tap.h"

#include <errno.h>
#include <linux/if_tun.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/stat_atomic.h"
#include "backend/tap/tap_internal.h"
#include "backend/tap/tap_open.h"

/* Set up queue tq (its fd open and attached). */
static void tap_queue_init(struct tap_backend *t, struct tap_queue *tq, unsigned index, int fd)
{
	tq->magic = TAP_MAGIC;
	tq->index = index;
	tq->fd = fd;
	tq->tap = t;
	tq->events = EPOLLIN; /* how the owner registers the fd */
}

/* Close every queue opened so far and free the tap. */
static void tap_free(struct tap_backend *t)
{
	tap_soft_free(t);
	for (unsigned i = 0; i < t->nq; i++) {
		close(t->q[i]->fd);
		t->q[i]->magic = 0;
		if (i)
			free(t->q[i]);
	}
	free(t);
}

/**
 * tap_backend_open() - attach to a tap interface, non-blocking, with the 12-byte virtio_net_hdr_v1
 * in front of every packet and its offloads off.
 * @ifname: the interface: created if it does not exist, or an existing persistent tap we may use
 * @nqueues: queue fds to open, 1..TAP_MAX_QUEUES (the port's queue pairs): 1 attaches one fd
 *           without IFF_MULTI_QUEUE (unless the tap is a persistent multi-queue one), more
 *           attach that many IFF_MULTI_QUEUE fds, one per queue pair
 * @dev: where received packets go; must outlive the backend
 * @owner: what the tap needs from its owner (struct tap_owner_ops)
 * @owner_ctx: passed to @owner's calls
 *
 * The interface is not configured or brought up. The owner registers every
 * tap_backend_queue_fd() with EPOLLIN right after this call.
 *
 * Return: the backend (queue 0's handle), or NULL (logged with the interface's name).
 */
struct vnet_backend *tap_backend_open(const char *ifname, unsigned nqueues, struct vnet_dev *dev,
				      const struct tap_owner_ops *owner, void *owner_ctx)
{
	struct tap_backend *t;

	assert(dev);
	if (!ifname || !ifname[0] || strlen(ifname) >= IFNAMSIZ) {
		log_err("tap \"%s\": interface names have 1 to %d characters", ifname ? ifname : "",
			IFNAMSIZ - 1);
		return NULL;
	}
	if (nqueues < 1 || nqueues > TAP_MAX_QUEUES) {
		log_err("tap %s: %u queues (1 to %d)", ifname, nqueues, TAP_MAX_QUEUES);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		log_err("tap %s: out of memory", ifname);
		return NULL;
	}
	t->dev = dev;
	t->owner = owner;
	t->owner_ctx = owner_ctx;
	for (unsigned i = 0; i < nqueues; i++) {
		struct tap_queue *tq = i ? calloc(1, sizeof(*tq)) : &t->q0;
		/* The first fd may create the interface: the others attach to the name it got. */
		int fd = tq ? tap_open_queue(i ? t->name : ifname, nqueues > 1, t->name) : -1;

		if (fd < 0) {
			if (!tq)
				log_err("tap %s: out of memory", ifname);
			if (i)
				free(tq);
			tap_free(t);
			return NULL;
		}
		tap_queue_init(t, tq, i, fd);
		t->q[t->nq++] = tq;
	}
	if (nqueues > 1)
		log_info("tap %s: attached, %u queues (IFF_MULTI_QUEUE)", t->name, nqueues);
	else
		log_info("tap %s: attached", t->name);
	return (struct vnet_backend *)&t->q0;
}

/**
 * tap_backend_nqueues() - how many queue fds the tap has.
 * @be: the tap backend
 *
 * Return: 1 for a single-queue tap, else its IFF_MULTI_QUEUE fds.
 */
unsigned tap_backend_nqueues(const struct vnet_backend *be)
{
	return tq_of_const(be)->tap->nq;
}

/**
 * tap_backend_queue_fd() - a queue's fd, for the owner's epoll loop.
 * @be: the tap backend
 * @i: the queue, below tap_backend_nqueues()
 *
 * Return: the fd.
 */
int tap_backend_queue_fd(const struct vnet_backend *be, unsigned i)
{
	const struct tap_backend *t = tq_of_const(be)->tap;

	assert(i < t->nq);
	return t->q[i]->fd;
}

/**
 * tap_backend_queue() - a queue's own backend handle, for vnet_dev_attach_queue_backend().
 * @be: the tap backend
 * @i: the queue, below tap_backend_nqueues()
 *
 * Transmits through it go out on queue i's fd, with queue i's scratch: a queue pair that owns
 * it shares nothing it writes with the others.
 *
 * Return: the handle (queue 0's is @be).
 */
struct vnet_backend *tap_backend_queue(struct vnet_backend *be, unsigned i)
{
	struct tap_backend *t = tq_of(be)->tap;

	assert(i < t->nq);
	return (struct vnet_backend *)t->q[i];
}

/**
 * tap_backend_queue_stats() - a queue's packet counters.
 * @be: the tap backend
 * @i: the queue
 * @out: filled with its counters (TX counted by multi-queue taps only)
 *
 * Any thread: single-writer counters read lock-free (stat_atomic.h).
 *
 * Return: false if the tap has no queue @i.
 */
bool tap_backend_queue_stats(const struct vnet_backend *be, unsigned i, struct tap_queue_stats *out)
{
	const struct tap_backend *t = tq_of_const(be)->tap;

	if (i >= t->nq)
		return false;
	out->rx_packets = stat_read(&t->q[i]->stats.rx_packets);
	out->tx_packets = stat_read(&t->q[i]->stats.tx_packets);
	return true;
}

/**
 * tap_backend_name() - the interface's name as the kernel reports it.
 * @be: the tap backend
 *
 * Return: the name, owned by the backend.
 */
const char *tap_backend_name(const struct vnet_backend *be)
{
	return tq_of_const(be)->tap->name;
}

/**
 * tap_backend_close() - close every queue fd and free the backend; packets still waiting are
 * dropped.
 * @be: the tap backend, or NULL; the owner unregisters the fds first
 */
void tap_backend_close(struct vnet_backend *be)
{
	if (be)
		tap_free(tq_of(be)->tap);
}

/**
 * tap_set_pairs() - the driver uses @pairs queue pairs (struct vnet_backend_ops set_pairs)
 * @be: the tap's handle
 * @pairs: the queue pairs in use
 *
 * Queues from @pairs on are detached from the interface (IFF_DETACH_QUEUE, as QEMU does), so
 * the kernel spreads host-to-guest flows over the pairs in use only and never queues packets
 * where no one reads; queues below it are attached again. Queue 0 always stays. A failed
 * TUNSETQUEUE leaves that queue as it was (logged).
 */
void tap_set_pairs(struct vnet_backend *be, unsigned pairs)
{
	struct tap_backend *t = tq_of(be)->tap;

	if (!t->owner || !t->owner->queue_attached)
		return;
	for (unsigned i = 1; i < t->nq; i++) {
		struct tap_queue *tq = t->q[i];
		bool attach = i < pairs;
		struct ifreq ifr;

		if (tq->failed || attach == !tq->detached)
			continue;
		memset(&ifr, 0, sizeof(ifr));
		ifr.ifr_flags = attach ? IFF_ATTACH_QUEUE : IFF_DETACH_QUEUE;
		if (ioctl(tq->fd, TUNSETQUEUE, &ifr) < 0) {
			log_warn("tap %s: TUNSETQUEUE %s queue %u: %s", t->name,
				 attach ? "attach" : "detach", i, strerror(errno));
			continue;
		}
		if (!attach) {
			t->owner->queue_attached(t->owner_ctx, i, tq->fd, false, 0);
			tq->detached = true;
			continue;
		}
		tq->detached = false;
		tq->events = (!tq->rx_pending && !tq->rx_nobufs ? EPOLLIN : 0) |
			     (tq->tx_blocked ? EPOLLOUT : 0);
		t->owner->queue_attached(t->owner_ctx, i, tq->fd, true, tq->events);
	}
}

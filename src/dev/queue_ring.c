/* SPDX-License-Identifier: MIT */
/* queue_ring.c - a queue's ring as its transport sets it up: size, addresses, base, log, break. */
#include "dev/dev.h"
#include "dev/vnet_dev_core.h"

/*
 * The transport (vhost-user, a port restoring a kept packed ring) configures a ring only here;
 * the ring's layout and addresses change only while it is stopped (vq_start() fixes what it
 * runs with until vq_stop()).
 */

_Static_assert(VNET_RING_MAX_SIZE == VQ_MAX_SIZE, "dev.h's ring size limit is virtq's");

/* ring_of() - queue qidx's ring, or NULL out of range. */
static struct virtqueue *ring_of(struct vnet_dev *dev, unsigned qidx)
{
	return qidx < dev->nqueues ? &dev->queues[qidx].vq : NULL;
}

/**
 * vnet_dev_ring_info() - a copy of queue qidx's ring settings and state.
 * @dev: the device
 * @qidx: the queue
 * @out: filled: what the transport set (size, addresses, layout, logging) and, when started,
 *	what the ring runs with
 *
 * Return: true, or false if the device has no such queue.
 */
bool vnet_dev_ring_info(const struct vnet_dev *dev, unsigned qidx, struct vnet_ring_info *out)
{
	const struct vnet_queue *q;

	if (qidx >= dev->nqueues)
		return false;
	q = &dev->queues[qidx];
	*out = (struct vnet_ring_info){
		.kind = q->kind,
		.enabled = q->enabled,
		.started = q->vq.started,
		.broken = q->vq.broken,
		.packed = q->vq.packed,
		.num = q->vq.num,
		.desc_addr = q->vq.desc_addr,
		.avail_addr = q->vq.avail_addr,
		.used_addr = q->vq.used_addr,
		.log_used = q->vq.log_used,
		.log_used_gpa = q->vq.log_used_gpa,
		.run_num = q->vq.started ? q->vq.run.num : 0,
		.run_packed = q->vq.started && q->vq.run.packed,
		.run_in_order = q->vq.started && q->vq.run.in_order,
	};
	return true;
}

/**
 * vnet_dev_ring_set_num() - the ring's size (SET_VRING_NUM), for its next start.
 * @dev: the device
 * @qidx: the queue, stopped
 * @num: the size; vq_start() checks it against the layout
 *
 * Return: 0, or -1 if there is no such queue or it is started.
 */
int vnet_dev_ring_set_num(struct vnet_dev *dev, unsigned qidx, uint16_t num)
{
	struct virtqueue *vq = ring_of(dev, qidx);

	if (!vq || vq->started)
		return -1;
	vq->num = num;
	return 0;
}

/**
 * vnet_dev_ring_set_addr() - the ring's addresses (frontend user addresses) and used-ring
 * logging (SET_VRING_ADDR), for its next start.
 * @dev: the device
 * @qidx: the queue, stopped
 * @desc: the descriptor table
 * @avail: the avail ring (packed: the driver event suppression area)
 * @used: the used ring (packed: the device event suppression area)
 * @log_used: log writes to the used ring (VHOST_VRING_F_LOG)
 * @log_gpa: the used ring's guest physical address, for the log
 *
 * Return: 0, or -1 if there is no such queue or it is started.
 */
int vnet_dev_ring_set_addr(struct vnet_dev *dev, unsigned qidx, uint64_t desc, uint64_t avail,
			   uint64_t used, bool log_used, uint64_t log_gpa)
{
	struct virtqueue *vq = ring_of(dev, qidx);

	if (!vq || vq->started)
		return -1;
	vq->desc_addr = desc;
	vq->avail_addr = avail;
	vq->used_addr = used;
	vq->ring_space = GUEST_ADDR_UVA;
	/* Writes to the used ring are logged at its guest physical address while asked. */
	vq->log_used = log_used;
	vq->log_used_gpa = log_gpa;
	return 0;
}

/**
 * vnet_dev_ring_set_base() - where the ring's next start resumes (SET_VRING_BASE, or a packed
 * ring kept at a stop), on the given layout.
 * @dev: the device
 * @qidx: the queue, stopped
 * @packed: the layout the base is for (the negotiated one)
 * @base: split: the avail index; packed: avail and used positions with wrap bits
 *
 * Return: 0, or -1 if there is no such queue, it is started, or the base does not fit.
 */
int vnet_dev_ring_set_base(struct vnet_dev *dev, unsigned qidx, bool packed, uint32_t base)
{
	struct virtqueue *vq = ring_of(dev, qidx);

	if (!vq || vq->started || (!packed && base > UINT16_MAX))
		return -1;
	vq->packed = packed;
	return vq_set_base(vq, base);
}

/**
 * vnet_dev_ring_break() - stop processing queue qidx (NEEDS_RESET) until it is set up again.
 * @dev: the device
 * @qidx: the queue (out of range: nothing)
 * @why: for the one log line (not repeated if it is broken already)
 *
 * Return: true if this call broke it, false if it was broken already or does not exist.
 */
bool vnet_dev_ring_break(struct vnet_dev *dev, unsigned qidx, const char *why)
{
	struct virtqueue *vq = ring_of(dev, qidx);

	if (!vq || vq->broken)
		return false;
	vq_mark_broken(vq, why);
	return true;
}

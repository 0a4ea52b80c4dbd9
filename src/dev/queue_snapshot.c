/* SPDX-License-Identifier: MIT */
/* queue_snapshot.c - what the control plane reads of a queue: copies, never the live queue. */
#include <string.h>

#include "dev/dev.h"
#include "dev/vnet_dev_core.h"
#include "lib/stat_atomic.h"
#include "dev/queue_view_internal.h"

/* counts_read() - each counter of st read once, torn-free (single writer, any reader). */
static void counts_read(const struct vnet_queue_stats *st, struct vnet_queue_counts *out)
{
	out->packets = stat_read(&st->packets);
	out->bytes = stat_read(&st->bytes);
	out->kicks = stat_read(&st->kicks);
	out->notifications = stat_read(&st->notifications);
	out->suppressed = stat_read(&st->suppressed);
	out->held = stat_read(&st->held);
	out->timer_notifications = stat_read(&st->timer_notifications);
	out->dropped = stat_read(&st->dropped);
	out->rx_no_buffers = stat_read(&st->rx_no_buffers);
	out->yields = stat_read(&st->yields);
	out->polls = stat_read(&st->polls);
	out->poll_ns = stat_read(&st->poll_ns);
	out->rx_direct = stat_read(&st->rx_direct);
	out->stop_notifications = stat_read(&st->stop_notifications);
	out->early_idle = stat_read(&st->early_idle);
	out->early_ring = stat_read(&st->early_ring);
	out->early_bytes = stat_read(&st->early_bytes);
	out->rate_waits = stat_read(&st->rate_waits);
	out->rate_dropped = stat_read(&st->rate_dropped);
}

/**
 * vnet_dev_queue_snapshot() - a copy of queue qidx for the control plane, from any thread.
 * @dev: the device
 * @qidx: the queue
 * @out: the copy: the settings as one consistent set (the queue's seqcount view), each counter
 *	read once, and the lateness histogram
 *
 * Lock-free: the counters have one writer (the queue's worker) and are never torn; two of them
 * may be a packet apart.
 *
 * Return: true, or false if the device has no such queue (out untouched).
 */
bool vnet_dev_queue_snapshot(const struct vnet_dev *dev, unsigned qidx,
			     struct vnet_queue_snapshot *out)
{
	const struct vnet_queue *q;

	if (qidx >= dev->nqueues)
		return false;
	q = &dev->queues[qidx];
	memset(out, 0, sizeof(*out));
	vnet_queue_view_read(q, &out->view);
	counts_read(&q->stats, &out->counts);
	vnet_queue_lateness(q, &out->lateness);
	return true;
}

/**
 * vnet_dev_queue_lateness_fine() - a copy of queue qidx's fine lateness histogram (percentiles).
 * @dev: the device
 * @qidx: the queue
 * @out: the copy, bucket by bucket
 *
 * Return: true, or false if the device has no such queue.
 */
bool vnet_dev_queue_lateness_fine(const struct vnet_dev *dev, unsigned qidx, struct lat_hist *out)
{
	if (qidx >= dev->nqueues)
		return false;
	lat_hist_snapshot(&dev->queues[qidx].stats.lateness, out);
	return true;
}

/**
 * vnet_dev_queue_reset_stats() - zero queue qidx's counters (reset-stats).
 * @dev: the device
 * @qidx: the queue; out of range: nothing happens
 *
 * On the queue's worker, or with the workers parked (the control socket's sync ops).
 */
void vnet_dev_queue_reset_stats(struct vnet_dev *dev, unsigned qidx)
{
	if (qidx < dev->nqueues)
		memset(&dev->queues[qidx].stats, 0, sizeof(dev->queues[qidx].stats));
}

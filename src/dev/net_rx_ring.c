/* SPDX-License-Identifier: MIT */
/* net_rx_ring.c - receive path, the ring's side: publish received packets, wait for buffers. */
#include "dev/net_rx.h"

#include "dev/net_rate.h"
#include "dev/net_rx_internal.h"
#include "dev/coal/notify.h"
#include "dev/vnet_dev_core.h"
#include "dev/net_rate_internal.h"

/**
 * net_rx_flush_queue() - publish one RX queue's pushed packets and decide its notification
 * @dev: the device
 * @q: the RX queue (nothing happens if it holds no unpublished packets or is stopped)
 */
void net_rx_flush_queue(struct vnet_dev *dev, struct vnet_queue *q)
{
	uint32_t n = q->rx_unflushed;

	if (!n || !q->vq.started)
		return;
	q->rx_unflushed = 0;
	vq_publish(&q->vq);
	notify_decide(dev, q, NOTIFY_COMPLETED, n);
}

/**
 * vnet_dev_rx_flush() - publish every RX queue's received packets and decide notifications
 * @dev: the device
 *
 * The owner calls it after a burst (once per event round when env->rx_dirty asked for it).
 * Context: the thread that owns the device.
 */
void vnet_dev_rx_flush(struct vnet_dev *dev)
{
	dev->rx_dirty = false;
	if (__builtin_expect(dev->rx_rate.on, 0))
		net_rate_rx_refill(dev); /* once per round: the packets refill only when empty */
	for (unsigned i = 0; i < dev->nqueues; i++)
		if ((dev->qmask >> i & 1u) && dev->queues[i].rx_unflushed)
			net_rx_flush_queue(dev, &dev->queues[i]);
}

/**
 * net_rx_wait() - not enough buffers: ask for a kick
 * @q: the RX queue
 * @seen: the avail index the attempt that failed saw (vq_avail_seen())
 *
 * Every receive path calls it when the ring ran dry.
 * Return: true if the driver added buffers since (try again), false to wait (counted).
 */
bool net_rx_wait(struct vnet_queue *q, uint16_t seen)
{
	q->rx_waiting = true;
	vq_kick_enable(&q->vq);
	if (!q->vq.broken && vq_avail_idx(&q->vq) != seen) {
		q->rx_waiting = false;
		return true;
	}
	stat_inc(&q->stats.rx_no_buffers);
	return false;
}

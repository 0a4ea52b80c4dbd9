/* SPDX-License-Identifier: MIT */
/* net_rate.c - the port's rate limits on the device: settings, TX waits, RX drops. */
#include "dev/net_rate.h"

#include "dev/coal/notify.h"
#include "dev/vnet_dev_core.h"
#include "dev/net_rate_internal.h"

/*
 * Guest TX over its rate waits in the ring: the queue stops popping (kicks stay off), and its
 * one timer (notify_rearm_timer(): the earlier of the coalescing, TX-batch and refill
 * deadlines) runs it again when the bucket holds a quarter of its burst. Guest TX is never
 * dropped for its rate. RX over its rate is dropped and counted (rate_dropped): a backend's
 * packet cannot wait in the guest's ring. The packet path only reads bucket.on while no limit
 * is set.
 */

static struct rate_bucket *bucket(struct vnet_dev *dev, enum vnet_rate_dir dir)
{
	return dir == VNET_RATE_TX ? &dev->tx_rate : &dev->rx_rate;
}

/**
 * vnet_dev_set_rate() - a new rate limit for one direction of the port, in effect at once
 * @dev: the device
 * @dir: VNET_RATE_TX (what the guest sends) or VNET_RATE_RX (what it receives)
 * @p: Mbit/s (0: no limit) and burst in KiB (0: the default, 10 ms of the rate)
 *
 * The bucket starts full. TX queues waiting for tokens are run again at once from their timer
 * (the new limit may let them go). The limit is a port setting: device resets keep it.
 * Context: the thread that owns the device, or with it parked.
 */
void vnet_dev_set_rate(struct vnet_dev *dev, enum vnet_rate_dir dir, const struct rate_params *p)
{
	struct rate_bucket *b = bucket(dev, dir);
	uint64_t now = dev_now(dev);

	rate_bucket_set(b, p, now);
	if (dir == VNET_RATE_TX)
		dev->params.tx_rate = b->params;
	else
		dev->params.rx_rate = b->params;
	if (dir != VNET_RATE_TX)
		return;
	for (unsigned i = 0; i < dev->nqueues; i++) {
		struct vnet_queue *q = &dev->queues[i];

		if (q->rate_deadline_ns) {
			q->rate_deadline_ns = now ? now : 1; /* due now: the timer runs it */
			notify_rearm_timer(dev, q);
		}
	}
}

/**
 * vnet_dev_rate() - the rate limit of one direction as in effect
 * @dev: the device
 * @dir: VNET_RATE_TX or VNET_RATE_RX
 *
 * Context: any thread that does not run while the limit is set (the control commands, which
 * set it, run on the reader's thread).
 * Return: the limit (mbit 0: none); values above the maximum were clamped.
 */
const struct rate_params *vnet_dev_rate(const struct vnet_dev *dev, enum vnet_rate_dir dir)
{
	return dir == VNET_RATE_TX ? &dev->tx_rate.params : &dev->rx_rate.params;
}

/**
 * net_rate_init() - a new device's buckets from its parameters
 * @dev: the device (vnet_dev_create(), params set)
 */
void net_rate_init(struct vnet_dev *dev)
{
	uint64_t now = dev_now(dev);

	rate_bucket_set(&dev->tx_rate, &dev->params.tx_rate, now);
	rate_bucket_set(&dev->rx_rate, &dev->params.rx_rate, now);
	dev->params.tx_rate = dev->tx_rate.params;
	dev->params.rx_rate = dev->rx_rate.params;
}

/**
 * net_rate_tx_refill() - refill the TX bucket at the start of a TX run
 * @dev: the device, its TX limit on
 *
 * Refills happen lazily, here and when the bucket runs dry: a bucket that stayed full while
 * idle gets no more than its burst.
 */
void net_rate_tx_refill(struct vnet_dev *dev)
{
	rate_bucket_refill(&dev->tx_rate, dev_now(dev));
}

/**
 * net_rate_tx_admit() - may the TX chain just popped go now?
 * @dev: the device, its TX limit on
 * @q: the TX queue
 * @read_len: the chain's readable bytes (the guest's header included, not charged)
 *
 * An empty bucket is refilled first. Still empty: q->rate_deadline_ns is when it holds a
 * quarter of its burst, the queue's timer is armed for the earliest of its deadlines, and the
 * wait is counted (rate_waits). The caller gives the chain back and stops popping.
 * Return: true (the frame's bytes are taken), or false.
 */
bool net_rate_tx_admit(struct vnet_dev *dev, struct vnet_queue *q, uint64_t read_len)
{
	struct rate_bucket *b = &dev->tx_rate;
	uint64_t len = read_len > dev->hdr_len ? read_len - dev->hdr_len : 0;

	if (!rate_bucket_has(b)) {
		uint64_t now = dev_now(dev), wait;

		rate_bucket_refill(b, now);
		if (!rate_bucket_has(b)) {
			wait = rate_bucket_wait_ns(b);
			q->rate_deadline_ns = now + (wait ? wait : 1);
			stat_inc(&q->stats.rate_waits);
			notify_rearm_timer(dev, q);
			return false;
		}
	}
	/* A chain too long to send is dropped by the caller: it costs one frame at most. */
	rate_bucket_take(b, len < VNET_MAX_FRAME ? len : VNET_MAX_FRAME);
	return true;
}

/**
 * net_rate_rx_admit() - may a received frame go to the guest?
 * @dev: the device, its RX limit on
 * @q: the RX queue it would go to (counts the drop)
 * @len: the frame's bytes
 *
 * Reads the clock only when the bucket is empty (then it refills); vnet_dev_rx_flush() refills
 * once per round of the owner's events too, so a bucket that stayed full while idle gets no
 * more than its burst (off by at most the rate times one round).
 * Return: true (its bytes are taken), or false: the caller drops it (counted: rate_dropped).
 */
bool net_rate_rx_admit(struct vnet_dev *dev, struct vnet_queue *q, uint64_t len)
{
	struct rate_bucket *b = &dev->rx_rate;

	if (__builtin_expect(rate_bucket_has(b), 1) || rate_bucket_admit(b, 0, dev_now(dev))) {
		rate_bucket_take(b, len);
		return true;
	}
	stat_inc(&q->stats.rate_dropped);
	return false;
}

/**
 * net_rate_rx_refill() - refill the RX bucket once per round (vnet_dev_rx_flush())
 * @dev: the device, its RX limit on
 */
void net_rate_rx_refill(struct vnet_dev *dev)
{
	rate_bucket_refill(&dev->rx_rate, dev_now(dev));
}

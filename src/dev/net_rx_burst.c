/* SPDX-License-Identifier: MIT */
/* net_rx_burst.c - receive path, bursts: a sender's frames into one RX queue, settled once. */
#include "dev/net_rx.h"

#include "dev/net_rx_internal.h"
#include "dev/vnet_dev_core.h"

/*
 * vnet_dev_receive_burst()'s loop on queue q (usable, one active pair), specialised on its ring's
 * fast path `kind` (vq_pop_as()): each frame takes one buffer where it fits.
 */
static inline __attribute__((always_inline)) unsigned
rx_burst_run(struct vnet_dev *dev, struct vnet_queue *q, const struct vnet_frame *f,
	     const uint8_t (*heads)[VNET_FRAME_HEAD], unsigned n, const unsigned kind)
{
	struct virtio_net_hdr_v1_hash *hdr = &dev->rx_hdr;
	uint64_t bytes = 0;
	unsigned i, pkts = 0, dropped = 0;
	int r = 1;

	memset(&hdr->hdr, 0, sizeof(hdr->hdr));
	for (i = 0; i < n; i++) {
		const struct iovec iov = {.iov_base = (void *)f[i].data, .iov_len = f[i].len};
		size_t len = f[i].len;

		if (len < 14 || len > VNET_MAX_FRAME) {
			dropped++;
			continue;
		}
		if (!rx_filter_accepts(dev, heads ? heads[i] : f[i].data))
			continue;
		do {
			r = rx_place_one(dev, q, hdr, &iov, 1, 0, len, heads ? heads[i] : NULL, kind);
			if (r == 0 && !net_rx_wait(q, vq_avail_seen(&q->vq)))
				break;
		} while (r == 0);
		if (r == 0)
			break;
		if (r < 0) {
			dropped++;
			continue;
		}
		pkts++;
		bytes += len;
		/* As rx_delivered(): publish every batch, counted before the decision reads them. */
		if (++q->rx_unflushed >= VNET_RX_PUBLISH_BATCH) {
			stat_add(&q->stats.packets, pkts);
			stat_add(&q->stats.bytes, bytes);
			pkts = 0;
			bytes = 0;
			net_rx_flush_queue(dev, q);
		}
	}
	if (pkts) {
		stat_add(&q->stats.packets, pkts);
		stat_add(&q->stats.bytes, bytes);
	}
	if (dropped)
		stat_add(&q->stats.dropped, dropped);
	if (q->rx_unflushed && !dev->rx_dirty && dev->env->rx_dirty) {
		dev->rx_dirty = true;
		dev->env->rx_dirty(dev->env_ctx);
	}
	return i;
}

/**
 * vnet_dev_receive_burst() - deliver bare frames to the guest, in order (copying receive)
 * @dev: the device
 * @f: the frames (each in one buffer), with an all-zero header each
 * @heads: NULL, or per frame the VNET_FRAME_HEAD bytes its receiver gets in place of its first
 *         ones (the sender's checked copy: the frame's own bytes may have changed since), which
 *         the receive filter looks at too
 * @n: how many
 *
 * As vnet_dev_receive_frame() for each frame in turn, with what does not change from one frame
 * to the next (the queue pair, whether it is usable, the header) settled once: a device with one
 * active pair, no RSS or hash report and no RX rate limit; any other takes the frames one by one.
 * Counted, and published every VNET_RX_PUBLISH_BATCH packets, as there.
 * Context: the thread that owns the device.
 * Return: the frames taken (delivered, or dropped and counted, or filtered) before the first for
 * which the guest had no buffers: n, or fewer (keep the rest; rx_resume() follows their posting).
 */
unsigned vnet_dev_receive_burst(struct vnet_dev *dev, const struct vnet_frame *f,
				const uint8_t (*heads)[VNET_FRAME_HEAD], unsigned n)
{
	struct vnet_queue *q = &dev->queues[0];

	if (dev->active_pairs > 1 || dev->rss_on || dev->rx_rate.on) {
		unsigned i;

		for (i = 0; i < n; i++) {
			struct iovec iov[2];
			unsigned cnt = vnet_frame_iov(
			    &f[i], heads && f[i].len >= VNET_FRAME_HEAD ? heads[i] : NULL, iov);

			if (!receive_frame(dev, NULL, iov, cnt, 0, f[i].len, NULL, -1))
				break;
		}
		return i;
	}
	if (dev->rx_cache.n)
		net_rx_cache_release(dev, q);
	if (!dev_queue_usable(q) || !dev->be) {
		stat_add(&q->stats.dropped, n);
		return n;
	}
	/* The ring's layout settles which pop the loop inlines (one compare a frame); a queue on
	 * no fast path takes the slow one in any of them. */
	switch (q->vq.ready) {
	case VQ_FAST_SPLIT_IN_ORDER:
		return rx_burst_run(dev, q, f, heads, n, VQ_FAST_SPLIT_IN_ORDER);
	case VQ_FAST_PACKED:
		return rx_burst_run(dev, q, f, heads, n, VQ_FAST_PACKED);
	default:
		return rx_burst_run(dev, q, f, heads, n, VQ_FAST_SPLIT);
	}
}

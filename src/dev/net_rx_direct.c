/* SPDX-License-Identifier: MIT */
/* net_rx_direct.c - receive path, direct: guest RX buffers reserved for a backend to read into. */
#include "dev/net_rx.h"

#include <endian.h>
#include <string.h>

#include "lib/log.h"
#include "dev/net_rx_internal.h"
#include "dev/vnet_dev_core.h"
#include "dev/net_rate_internal.h"

/**
 * net_rx_cache_release() - give reserved, unused RX buffers back to the ring
 * @dev: the device (its RX cache)
 * @q: queue 0, where they were reserved
 *
 * On a queue stop, a feature change, and whenever the copying path takes over.
 */
void net_rx_cache_release(struct vnet_dev *dev, struct vnet_queue *q)
{
	struct vnet_rx_cache *rc = &dev->rx_cache;

	/* Already empty: no store, so a port that never used the cache never touches its page
	 * (feature changes and queue stops of every port come here). */
	if (!(rc->first | rc->n | rc->iov_first | rc->niov) && !rc->bytes && !rc->short_valid)
		return;
	if (rc->n)
		vq_unpop(&q->vq, rc->n);
	rc->first = rc->n = rc->iov_first = rc->niov = 0;
	rc->bytes = 0;
	rc->short_valid = false;
}

/* Largest packet (our header included) the guest may be given now. */
static size_t rx_max_len(const struct vnet_dev *dev)
{
	size_t mtu = dev->params.mtu > 1500 ? dev->params.mtu : 1500;

	/* Mergeable buffers: hold enough for any frame (the cache keeps them across packets), so
	 * nothing a tap hands us (QinQ, a tap MTU above ours) is ever truncated. */
	if (dev_has(dev, VIRTIO_NET_F_MRG_RXBUF) ||
	    dev->guest_offloads & (BIT_ULL(VIRTIO_NET_F_GUEST_TSO4) |
				   BIT_ULL(VIRTIO_NET_F_GUEST_TSO6) |
				   BIT_ULL(VIRTIO_NET_F_GUEST_UFO) |
				   BIT_ULL(VIRTIO_NET_F_GUEST_USO4) |
				   BIT_ULL(VIRTIO_NET_F_GUEST_USO6)))
		return VNET_HDR_LEN + VNET_MAX_FRAME;
	return VNET_HDR_LEN + 14 + 4 + mtu; /* Ethernet header, one VLAN tag */
}

/* Move the held slots and iovecs to the front of their arrays (room to append). */
static void rx_cache_compact(struct vnet_rx_cache *rc)
{
	if (rc->first) {
		memmove(rc->head, rc->head + rc->first, rc->n * sizeof(rc->head[0]));
		memmove(rc->cap, rc->cap + rc->first, rc->n * sizeof(rc->cap[0]));
		memmove(rc->niov_of, rc->niov_of + rc->first, rc->n * sizeof(rc->niov_of[0]));
		rc->first = 0;
	}
	if (rc->iov_first) {
		memmove(rc->iov, rc->iov + rc->iov_first, rc->niov * sizeof(rc->iov[0]));
		rc->iov_first = 0;
	}
}

/*
 * Pop chains into the cache until it holds max_len bytes: 1 enough, 0 the ring ran dry, -1 a
 * chain this path cannot use (given back) or the queue broke.
 */
static int rx_cache_fill(struct vnet_dev *dev, struct vnet_queue *q, size_t max_len)
{
	struct vnet_rx_cache *rc = &dev->rx_cache;
	bool mergeable = dev_has(dev, VIRTIO_NET_F_MRG_RXBUF);

	while (rc->bytes < max_len) {
		struct vq_chain *c = q->chain;
		unsigned slot;
		int r;

		/* Without mergeable buffers one chain must hold the whole packet. */
		if (rc->n && !mergeable)
			return -1;
		if (rc->n == VNET_RX_MAX_BUFFERS)
			return -1;
		r = vq_pop(&q->vq, c);
		if (r <= 0)
			return r;
		/* Any reserved chain may become the first of a packet: each must hold a header. */
		if (!c->nwrite || rc->niov + c->nwrite > VNET_RX_CACHE_IOV ||
		    c->write_len < VNET_HDR_LEN) {
			vq_unpop(&q->vq, 1);
			return -1;
		}
		/* Room at the tail of the arrays; compacting is rare (the head moves as we go). */
		if (rc->first + rc->n == VNET_RX_MAX_BUFFERS ||
		    rc->iov_first + rc->niov + c->nwrite > VNET_RX_CACHE_IOV)
			rx_cache_compact(rc);
		slot = rc->first + rc->n++;
		rc->head[slot] = c->head;
		rc->cap[slot] = (uint32_t)c->write_len;
		rc->niov_of[slot] = (uint16_t)c->nwrite;
		memcpy(&rc->iov[rc->iov_first + rc->niov], &c->iov[c->nread],
		       c->nwrite * sizeof(c->iov[0]));
		rc->niov += c->nwrite;
		rc->bytes += c->write_len;
	}
	return 1;
}

/**
 * vnet_dev_rx_reserve() - guest RX buffers a backend will read one packet straight into
 * @dev: the device
 * @max_len: bytes (header included) they must hold at least; raised to what the guest may get
 * @iov: set to the reserved buffers' iovecs
 *
 * Reserved buffers stay reserved across packets (the suffix of what was popped) until used,
 * or given back at a stop or when the copying path runs.
 * Context: the thread that owns the device.
 * Return: the iovec count; 0 when the guest has no buffers (rx_resume() follows once it posts
 * some); -1 when this device cannot receive that way now (legacy header, several active
 * pairs, no backend, too few buffers for @max_len): use vnet_dev_receive().
 */
int vnet_dev_rx_reserve(struct vnet_dev *dev, size_t max_len, const struct iovec **iov)
{
	struct vnet_queue *q = &dev->queues[0];
	struct vnet_rx_cache *rc = &dev->rx_cache;

	if (dev->hdr_len != VNET_HDR_LEN || dev->active_pairs > 1 || dev->rss_on || !dev->be ||
	    !dev_queue_usable(q)) {
		if (rc->n && q->vq.started)
			net_rx_cache_release(dev, q);
		return -1;
	}
	if (max_len < rx_max_len(dev))
		max_len = rx_max_len(dev);
	/* The ring could not hold the largest packet last time: until the driver posts more,
	 * do not walk (and give back) the same chains again for every packet. */
	if (rc->short_valid && vq_avail_idx(&q->vq) == rc->short_avail)
		return -1;
	rc->short_valid = false;
	for (;;) {
		int r = rx_cache_fill(dev, q, max_len);
		uint16_t seen = vq_avail_seen(&q->vq); /* what the fill found */

		if (r > 0) {
			*iov = &rc->iov[rc->iov_first];
			return (int)rc->niov;
		}
		if (r < 0 || rc->n) {
			/* Too few or unusable buffers: the copying path waits for the packet's size. */
			net_rx_cache_release(dev, q);
			rc->short_valid = !q->vq.broken;
			rc->short_avail = seen;
			return -1;
		}
		if (!net_rx_wait(q, seen))
			return 0;
	}
}

/**
 * vnet_dev_rx_commit() - the backend wrote a packet into the reserved buffers: complete it
 * @dev: the device
 * @len: bytes written, header included; more than was reserved means truncated: dropped
 *       (counted), and the buffers stay reserved
 *
 * Sets num_buffers, clears the header flags the guest may not see, pushes the buffers used;
 * the rest stay reserved for the next packet.
 * Context: the thread that owns the device.
 */
void vnet_dev_rx_commit(struct vnet_dev *dev, size_t len)
{
	struct vnet_queue *q = &dev->queues[0];
	struct vnet_rx_cache *rc = &dev->rx_cache;
	bool mergeable = dev_has(dev, VIRTIO_NET_F_MRG_RXBUF);
	struct virtio_net_hdr_v1 hdr;
	const struct iovec *iov = &rc->iov[rc->iov_first];
	unsigned used = 0, used_iov = 0;
	uint8_t dst[6];
	size_t left = len;

	if (!rc->n)
		return;
	if (len > rc->bytes || len < VNET_HDR_LEN + 14) {
		/* Truncated (larger than the guest may take) or runt: the buffers stay reserved. */
		stat_inc(&q->stats.dropped);
		log_guest("queue 0: received packet of %zu bytes does not fit the guest's %zu; "
			  "dropped", len, rc->bytes);
		return;
	}
	iov_copy_from(iov, rc->niov, VNET_HDR_LEN, dst, sizeof(dst));
	if (!rx_filter_accepts(dev, dst))
		return;
	if (__builtin_expect(dev->rx_rate.on, 0) && !net_rate_rx_admit(dev, q, len - VNET_HDR_LEN))
		return; /* over the port's RX rate: dropped (counted), the buffers stay reserved */
	while (left) {
		unsigned slot = rc->first + used;
		uint32_t take = rc->cap[slot] < left ? rc->cap[slot] : (uint32_t)left;

		dev->rx_slots[used].head = rc->head[slot];
		dev->rx_slots[used++].len = take;
		used_iov += rc->niov_of[slot];
		left -= take;
	}
	/* tun wrote the header but not num_buffers. */
	iov_copy_from(iov, rc->niov_of[rc->first], 0, &hdr, sizeof(hdr));
	hdr.num_buffers = htole16(mergeable ? (uint16_t)used : 1);
	rx_hdr_flags(dev, &hdr);
	iov_copy_to(iov, rc->niov_of[rc->first], 0, &hdr, sizeof(hdr));
	for (unsigned i = 0; i < used; i++) {
		vq_push(&q->vq, dev->rx_slots[i].head, dev->rx_slots[i].len);
		rc->bytes -= rc->cap[rc->first + i];
	}
	stat_inc(&q->stats.rx_direct);
	rc->first += used;
	rc->n -= used;
	rc->iov_first += used_iov;
	rc->niov -= used_iov;
	if (!rc->n)
		rc->first = rc->iov_first = 0;
	rx_delivered(dev, q, len - VNET_HDR_LEN);
}

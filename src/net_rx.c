/* net_rx.c - receive path: copy backend packets into the driver's RX buffers (mergeable or not). */
#include "vnet_dev_internal.h"

#include <endian.h>
#include <string.h>

#include "log.h"

static bool mac_in(const uint8_t (*table)[6], unsigned n, const uint8_t *mac)
{
	for (unsigned i = 0; i < n; i++)
		if (!memcmp(table[i], mac, 6))
			return true;
	return false;
}

/* The CTRL_RX / CTRL_MAC receive filter (as QEMU's virtio-net applies it). */
static bool rx_filter_accepts(const struct vnet_dev *dev, const uint8_t *dst)
{
	static const uint8_t bcast[6] = {0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
	const struct vnet_rx_filter *f = &dev->filter;

	if (f->promisc)
		return true;
	if (!memcmp(dst, bcast, 6))
		return !f->nobcast;
	if (dst[0] & 1) {
		if (f->nomulti)
			return false;
		return f->allmulti || f->mc_overflow || mac_in(f->mc, f->n_mc, dst);
	}
	if (f->nouni)
		return false;
	return f->alluni || f->uc_overflow || !memcmp(dst, dev->mac, 6) ||
	       mac_in(f->uc, f->n_uc, dst);
}

/* Spread flows over the active queue pairs by a hash of the IPv4 addresses and ports. */
static unsigned rx_pick_pair(const struct vnet_dev *dev, const uint8_t *frame, size_t len)
{
	uint32_t h = 2166136261u;

	if (dev->active_pairs <= 1 || len < 14 + 24 || frame[12] != 0x08 || frame[13] != 0x00)
		return 0;
	for (size_t i = 14 + 12; i < 14 + 24; i++)
		h = (h ^ frame[i]) * 16777619u;
	return h % dev->active_pairs;
}

void net_rx_flush_queue(struct vnet_dev *dev, struct vnet_queue *q)
{
	uint32_t n = q->rx_unflushed;

	if (!n || !q->vq.started)
		return;
	q->rx_unflushed = 0;
	vq_publish(&q->vq);
	notify_decide(dev, q, NOTIFY_COMPLETED, n);
}

void vnet_dev_rx_flush(struct vnet_dev *dev)
{
	dev->rx_dirty = false;
	for (unsigned i = 0; i < dev->nqueues; i++)
		if (dev->queues[i].rx_unflushed)
			net_rx_flush_queue(dev, &dev->queues[i]);
}

/*
 * Not enough buffers: ask for a kick. If the driver added buffers since the attempt that
 * failed (avail index moved past `seen`), the caller may try again; else it waits.
 */
static bool rx_wait_for_buffers(struct vnet_queue *q, uint16_t seen)
{
	q->rx_waiting = true;
	vq_kick_enable(&q->vq);
	if (!q->vq.broken && vq_avail_idx(&q->vq) != seen) {
		q->rx_waiting = false;
		return true;
	}
	q->stats.rx_no_buffers++;
	return false;
}

/*
 * Copy one packet (guest header + frame) into as many chains as it needs. Returns 1 placed,
 * 0 no buffers (nothing consumed), -1 dropped.
 */
static int rx_place(struct vnet_dev *dev, struct vnet_queue *q, struct virtio_net_hdr_v1 *hdr,
		    const struct iovec *iov, unsigned iovcnt, size_t frame_len)
{
	bool mergeable = dev_has(dev, VIRTIO_NET_F_MRG_RXBUF);
	size_t total = dev->hdr_len + frame_len, placed = 0;
	struct iovec hdr_iov[VNET_HDR_LEN] = {{0}};
	unsigned nslots = 0, nhdr_iov = 0;

	while (placed < total) {
		struct vq_chain *c = &q->chain;
		size_t room, n, hdr_part;
		int r = vq_pop(&q->vq, c);

		if (r < 0)
			return -1;
		if (r == 0 || nslots == VNET_RX_MAX_BUFFERS) {
			vq_unpop(&q->vq, nslots);
			if (r == 0)
				return 0;
			log_guest("queue %u: packet needs more than %d RX buffers; dropped",
				  q->vq.index, VNET_RX_MAX_BUFFERS);
			return -1;
		}
		const struct iovec *w = &c->iov[c->nread];
		room = c->write_len;
		if (!mergeable && room < total) {
			vq_unpop(&q->vq, 1);
			log_guest("queue %u: RX buffer of %zu bytes too small for %zu; dropped",
				  q->vq.index, room, total);
			return -1;
		}
		if (nslots == 0) {
			/* Remember where the header goes; it is written last, with num_buffers. */
			if (room < dev->hdr_len) {
				vq_unpop(&q->vq, 1);
				log_guest("queue %u: RX buffer smaller than the header", q->vq.index);
				return -1;
			}
			size_t left = dev->hdr_len;
			/* No iovec is empty, so the header takes at most hdr_len of them. */
			for (unsigned i = 0; i < c->nwrite && left; i++) {
				size_t take = w[i].iov_len < left ? w[i].iov_len : left;

				hdr_iov[nhdr_iov].iov_base = w[i].iov_base;
				hdr_iov[nhdr_iov++].iov_len = take;
				left -= take;
			}
		}
		hdr_part = placed < dev->hdr_len ? dev->hdr_len - placed : 0;
		n = room - hdr_part < total - placed - hdr_part ? room - hdr_part
							       : total - placed - hdr_part;
		/* Frame bytes [placed + hdr_part - hdr_len, +n) go after the header part: one copy,
		 * straight from the backend's buffers (or the sender's guest memory) into ours. */
		iov_copy_iov(w, c->nwrite, hdr_part, iov, iovcnt,
			     VNET_HDR_LEN + placed + hdr_part - dev->hdr_len, n);
		placed += hdr_part + n;
		dev->rx_slots[nslots].head = c->head;
		dev->rx_slots[nslots++].len = (uint32_t)(hdr_part + n);
	}
	hdr->num_buffers = htole16(mergeable ? (uint16_t)nslots : 1); /* spec: 1 without MRG_RXBUF */
	iov_copy_to(hdr_iov, nhdr_iov, 0, hdr, dev->hdr_len);
	for (unsigned i = 0; i < nslots; i++)
		vq_push(&q->vq, dev->rx_slots[i].head, dev->rx_slots[i].len);
	return 1;
}

int vnet_dev_receive(struct vnet_dev *dev, const struct iovec *iov, unsigned iovcnt)
{
	uint8_t head[VNET_HDR_LEN + 14 + 24];
	struct virtio_net_hdr_v1 hdr;
	struct vnet_queue *q;
	size_t total = 0, got;
	int r;

	for (unsigned i = 0; i < iovcnt; i++)
		total += iov[i].iov_len;
	got = iov_copy_from(iov, iovcnt, 0, head, sizeof(head));
	if (got < VNET_HDR_LEN + 14 || total - VNET_HDR_LEN > VNET_MAX_FRAME) {
		dev->queues[0].stats.dropped++;
		return 1;
	}
	q = &dev->queues[2 * rx_pick_pair(dev, head + VNET_HDR_LEN, got - VNET_HDR_LEN)];
	if (!dev_queue_usable(q) || !dev->be) {
		q->stats.dropped++;
		return 1;
	}
	if (!rx_filter_accepts(dev, head + VNET_HDR_LEN))
		return 1;
	memcpy(&hdr, head, sizeof(hdr));

	do {
		uint16_t seen = vq_avail_idx(&q->vq);

		r = rx_place(dev, q, &hdr, iov, iovcnt, total - VNET_HDR_LEN);
		if (r == 0 && !rx_wait_for_buffers(q, seen))
			break;
	} while (r == 0);
	if (r == 0)
		return 0;
	if (r < 0) {
		q->stats.dropped++;
		return 1;
	}
	q->stats.packets++;
	q->stats.bytes += total - VNET_HDR_LEN;
	if (!q->rx_unflushed++ && !dev->rx_dirty && dev->env->rx_dirty) {
		dev->rx_dirty = true;
		dev->env->rx_dirty(dev->env_ctx);
	}
	return 1;
}

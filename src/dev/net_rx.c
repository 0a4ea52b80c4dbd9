/* SPDX-License-Identifier: MIT */
/* net_rx.c - receive path, copying: a backend's packet into the driver's RX buffers, one by one. */
#include "dev/net_rx.h"

#include <endian.h>
#include <string.h>

#include "lib/log.h"
#include "dev/net_rx_internal.h"
#include "dev/vnet_dev_core.h"

_Static_assert(VNET_FRAME_HEAD == 14, "net_rx.h declares vnet_dev_receive_burst()'s heads so");

/**
 * net_rx_place() - copy one packet into as many chains as it needs
 * @dev: the device
 * @q: the RX queue
 * @hdr: our header (num_buffers set here), written last
 * @iov: the buffers holding the frame
 * @iovcnt: entries of @iov
 * @off: byte offset of the frame in @iov
 * @frame_len: frame bytes
 *
 * Out of line: the common case is rx_place_one() (net_rx_internal.h), one buffer.
 * Return: 1 placed, 0 no buffers (nothing consumed), -1 dropped.
 */
int net_rx_place(struct vnet_dev *dev, struct vnet_queue *q, struct virtio_net_hdr_v1_hash *hdr,
		 const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame_len)
{
	bool mergeable = dev_has(dev, VIRTIO_NET_F_MRG_RXBUF);
	size_t total = dev->hdr_len + frame_len, placed = 0;
	struct iovec hdr_iov[VNET_HDR_HASH_LEN] = {{0}}; /* [0, nhdr_iov) set below */
	unsigned nslots = 0, nhdr_iov = 0, ndesc = 0;

	while (placed < total) {
		struct vq_chain *c = q->chain;
		size_t room, n, hdr_part;
		int r = vq_pop(&q->vq, c);

		if (r < 0)
			return -1;
		if (r == 0 || nslots == VNET_RX_MAX_BUFFERS) {
			/* Give back every chain taken for this packet, the one just popped too. */
			vq_unpop(&q->vq, nslots + (r > 0));
			/*
			 * Waiting helps unless the packet already had the whole ring: every entry
			 * (buffers of one descriptor) or every descriptor or slot (buffers of
			 * several: the driver has none left to add one more). ndesc counts indirect
			 * entries too, so a ring of indirect buffers may count as full early: a
			 * drop, never a queue that waits for ever (and a switch port behind it).
			 */
			if (r == 0 && nslots < q->vq.run.num && ndesc < q->vq.run.num)
				return 0;
			log_guest("queue %u: packet needs more than %u RX buffers; dropped",
				  q->vq.index, r == 0 ? nslots : VNET_RX_MAX_BUFFERS);
			return -1;
		}
		ndesc += c->ndesc;
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
		iov_copy_iov(w, c->nwrite, hdr_part, iov, iovcnt, off + placed + hdr_part - dev->hdr_len,
			     n);
		placed += hdr_part + n;
		dev->rx_slots[nslots].head = c->head;
		dev->rx_slots[nslots++].len = (uint32_t)(hdr_part + n);
	}
	hdr->hdr.num_buffers = htole16(mergeable ? (uint16_t)nslots : 1); /* 1 without MRG_RXBUF */
	iov_copy_to(hdr_iov, nhdr_iov, 0, hdr, dev->hdr_len);
	for (unsigned i = 0; i < nslots; i++)
		vq_push(&q->vq, dev->rx_slots[i].head, dev->rx_slots[i].len);
	return 1;
}

/**
 * vnet_dev_receive_frame() - deliver one bare frame to the guest (copying receive)
 * @dev: the device
 * @hdr_in: the backend's virtio-net header; NULL: all zero (no checksum or GSO information)
 * @iov: the buffers holding the frame
 * @iovcnt: entries of @iov
 * @off: byte offset of the frame in @iov
 * @frame_len: frame bytes
 *
 * Picks the queue pair by flow hash (with RSS: the driver's Toeplitz key and indirection
 * table; with HASH_REPORT the header carries the hash), applies the receive filter and the port's RX rate limit
 * (over it: dropped, counted), copies into as many guest
 * buffers as the packet needs. Visible to the guest at the next publication (every
 * VNET_RX_PUBLISH_BATCH packets, and vnet_dev_rx_flush()).
 * Context: the thread that owns the device.
 * Return: 1 delivered (or dropped and counted, or filtered), 0 no guest buffers now: keep the
 * packet; the backend's rx_resume() is called once the guest posts buffers.
 */
int vnet_dev_receive_frame(struct vnet_dev *dev, const struct virtio_net_hdr_v1 *hdr_in,
			   const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame_len)
{
	return receive_frame(dev, hdr_in, iov, iovcnt, off, frame_len, NULL, -1);
}

/**
 * vnet_dev_receive_checked() - deliver one bare frame in one buffer with the checked copy of its
 * Ethernet header (copying receive)
 * @dev: the device
 * @f: the frame (f->data, f->len bytes in one buffer), with an all-zero header
 * @head: the VNET_FRAME_HEAD bytes its guest gets in place of its first ones (the sender's checked
 *        copy: the frame's own bytes may have changed since), which the receive filter reads too
 *
 * vnet_dev_receive_burst() for one frame, without the burst's set-up: the rest of the frame is
 * copied once from @f into the guest's buffers, its head from @head. A device with several
 * active pairs or RSS takes [head][rest of @f] as two pieces through vnet_dev_receive_frame().
 * Context: the thread that owns the device.
 * Return: as vnet_dev_receive_frame().
 */
int vnet_dev_receive_checked(struct vnet_dev *dev, const struct vnet_frame *f,
			     const uint8_t head[VNET_FRAME_HEAD])
{
	const struct iovec one = {.iov_base = (void *)f->data, .iov_len = f->len};

	if (__builtin_expect(dev->active_pairs > 1 || dev->rss_on, 0) || f->len < VNET_FRAME_HEAD) {
		struct iovec two[2];
		unsigned cnt = vnet_frame_iov(f, f->len < VNET_FRAME_HEAD ? NULL : head, two);

		return receive_frame(dev, NULL, two, cnt, 0, f->len, NULL, -1);
	}
	return receive_frame(dev, NULL, &one, 1, 0, f->len, head, -1);
}

/**
 * vnet_dev_receive_frame_on() - vnet_dev_receive_frame() into a given queue pair
 * @dev: the device, or the lane (vnet_dev_lane.c) that runs @pair
 * @pair: the pair the caller picked (vnet_dev_rx_pair()); one the device lacks: pair 0 (an
 *        unusable one: dropped, counted)
 * @hdr_in: the backend's virtio-net header; NULL: all zero
 * @iov: the buffers holding the frame
 * @iovcnt: entries of @iov
 * @off: byte offset of the frame in @iov
 * @frame_len: frame bytes
 *
 * For a port whose pairs live on several workers: the switch picks the pair on the sender's
 * thread and hands the frame to the pair's worker. With HASH_REPORT the header still carries the
 * frame's hash. Context: the thread that runs @pair.
 * Return: as vnet_dev_receive_frame().
 */
int vnet_dev_receive_frame_on(struct vnet_dev *dev, unsigned pair,
			      const struct virtio_net_hdr_v1 *hdr_in, const struct iovec *iov,
			      unsigned iovcnt, size_t off, size_t frame_len)
{
	if (2u * pair + 1u >= dev->nqueues)
		pair = 0;
	return receive_frame(dev, hdr_in, iov, iovcnt, off, frame_len, NULL, (int)pair);
}

/* A packet with its 12-byte header first: checked, then receive_frame() (forced as there). */
static int receive_packet(struct vnet_dev *dev, const struct iovec *iov, unsigned iovcnt,
			  int forced)
{
	struct virtio_net_hdr_v1 hdr;
	size_t total = iov_length(iov, iovcnt);

	if (total < VNET_HDR_LEN + 14 || total - VNET_HDR_LEN > VNET_MAX_FRAME) {
		if (dev->rx_cache.n)
			net_rx_cache_release(dev, &dev->queues[0]);
		stat_inc(&dev->queues[0].stats.dropped);
		return 1;
	}
	iov_copy_from(iov, iovcnt, 0, &hdr, sizeof(hdr));
	return receive_frame(dev, &hdr, iov, iovcnt, VNET_HDR_LEN, total - VNET_HDR_LEN, NULL,
			     forced);
}

/**
 * vnet_dev_receive() - deliver one packet, 12-byte virtio_net_hdr_v1 first, to the guest
 * @dev: the device
 * @iov: the header and the frame
 * @iovcnt: entries of @iov
 *
 * Context: the thread that owns the device.
 * Return: as vnet_dev_receive_frame().
 */
int vnet_dev_receive(struct vnet_dev *dev, const struct iovec *iov, unsigned iovcnt)
{
	return receive_packet(dev, iov, iovcnt, -1);
}

/**
 * vnet_dev_receive_pair() - deliver one packet, 12-byte virtio_net_hdr_v1 first, that the
 * backend read for queue pair @pair (a multi-queue tap's queue @pair)
 * @dev: the device
 * @pair: the queue pair it belongs to: its RX queue takes it while the pair is active and RSS
 *        does not steer (the indirection table picks then, as for every frame); a pair the
 *        guest has not activated: the flow hash picks among the active ones
 * @iov: the header and the frame
 * @iovcnt: entries of @iov
 *
 * Context: the thread that owns the device.
 * Return: as vnet_dev_receive_frame().
 */
int vnet_dev_receive_pair(struct vnet_dev *dev, unsigned pair, const struct iovec *iov,
			  unsigned iovcnt)
{
	return receive_packet(dev, iov, iovcnt,
			      pair >= dev->active_pairs || dev->rss.steer ? -1 : (int)pair);
}

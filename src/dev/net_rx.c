/* SPDX-License-Identifier: MIT */
/* net_rx.c - receive path: copy backend packets into the driver's RX buffers (mergeable or not). */
#include "dev/net_rx.h"

#include <endian.h>
#include <string.h>

#include "lib/log.h"
#include "dev/net_rate.h"
#include "dev/coal/notify.h"
#include "dev/rss/toeplitz.h"
#include "dev/vnet_dev_core.h"

_Static_assert(VNET_FRAME_HEAD == 14, "net_rx.h declares vnet_dev_receive_burst()'s heads so");

static bool mac_in(const uint8_t (*table)[6], unsigned n, const uint8_t *mac)
{
	for (unsigned i = 0; i < n; i++)
		if (!memcmp(table[i], mac, 6))
			return true;
	return false;
}

/* The CTRL_RX / CTRL_MAC receive filter (as QEMU's virtio-net applies it). */
static inline bool rx_filter_accepts(const struct vnet_dev *dev, const uint8_t *dst)
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

/*
 * RSS or hash reporting is on: hash the frame as the driver's hash types say, fill the hash
 * fields of the header (HASH_REPORT), and pick the pair from the indirection table (RSS;
 * unhashed packets: the unclassified queue), else as without RSS. Out of line: with RSS off
 * the receive path pays one branch for it.
 */
static __attribute__((noinline)) unsigned rx_rss(struct vnet_dev *dev, const struct iovec *iov,
						 unsigned iovcnt, size_t off, size_t frame_len)
{
	const struct vnet_rss *r = &dev->rss;
	size_t n = frame_len < TOEPLITZ_PARSE_MAX ? frame_len : TOEPLITZ_PARSE_MAX;
	const uint8_t *f = dev->rss_buf;
	uint32_t hash = 0;
	unsigned report;

	if (iovcnt && n <= iov[0].iov_len - off)
		f = (const uint8_t *)iov[0].iov_base + off;
	else
		n = iov_copy_from(iov, iovcnt, off, dev->rss_buf, n);
	report = toeplitz_frame(&r->key, r->cfg.hash_types, f, n, &hash);
	if (r->report) {
		dev->rx_hdr.hash_value = htole32(hash);
		dev->rx_hdr.hash_report = htole16((uint16_t)report);
	}
	if (!r->steer)
		return rx_pick_pair(dev, f, n);
	return report ? r->cfg.table[hash & (r->cfg.table_len - 1u)] : r->cfg.unclassified;
}

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
	stat_inc(&q->stats.rx_no_buffers);
	return false;
}

/*
 * Copy one packet (our header, then the frame at byte off of iov) into as many chains as it
 * needs. Returns 1 placed, 0 no buffers (nothing consumed), -1 dropped. Out of line: the
 * common case is rx_place_one().
 */
static __attribute__((noinline)) int rx_place(struct vnet_dev *dev, struct vnet_queue *q,
					      struct virtio_net_hdr_v1_hash *hdr,
					      const struct iovec *iov, unsigned iovcnt, size_t off,
					      size_t frame_len)
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

/*
 * rx_place() for the common case, inline: the next chain is one buffer holding the packet.
 * `head` (NULL: none; else the frame is iov[0] alone, at off 0): VNET_FRAME_HEAD bytes the guest
 * gets in place of the frame's first ones, a copy the sender's checks were made on.
 */
static inline __attribute__((always_inline)) int rx_place_one(struct vnet_dev *dev, struct vnet_queue *q,
			       struct virtio_net_hdr_v1_hash *hdr, const struct iovec *iov,
			       unsigned iovcnt, size_t off, size_t frame_len,
			       const uint8_t *head, const unsigned kind)
{
	struct vq_chain *c = q->chain;
	size_t total = dev->hdr_len + frame_len;
	int r = vq_pop_as(&q->vq, c, kind, true);
	uint8_t *buf;

	if (r <= 0)
		return r;
	if (c->nwrite != 1 || c->iov[c->nread].iov_len < total) {
		vq_unpop(&q->vq, 1);
		if (head) {
			const struct vnet_frame f = {iov[0].iov_base, (uint32_t)frame_len};
			struct iovec two[2];

			return rx_place(dev, q, hdr, two, vnet_frame_iov(&f, head, two), 0,
					frame_len);
		}
		return rx_place(dev, q, hdr, iov, iovcnt, off, frame_len);
	}
	buf = c->iov[c->nread].iov_base;
	hdr->hdr.num_buffers = htole16(1); /* 1 without MRG_RXBUF too (and then not sent) */
	if (dev->hdr_len == sizeof(hdr->hdr))
		memcpy(buf, hdr, sizeof(hdr->hdr)); /* a constant size: two stores */
	else
		memcpy(buf, hdr, dev->hdr_len);
	iov_copy_iov(&c->iov[c->nread], 1, dev->hdr_len, iov, iovcnt, off, frame_len);
	if (head) /* over what was copied: the sender may have rewritten it since its checks */
		memcpy(buf + dev->hdr_len, head, VNET_FRAME_HEAD);
	vq_push(&q->vq, c->head, (uint32_t)total);
	return 1;
}

/*
 * The backend's header as the guest may see it: without GUEST_CSUM the spec wants flags 0 (tun
 * sets DATA_VALID whenever the host stack verified a checksum). num_buffers is set on placing.
 */
static void rx_hdr_flags(const struct vnet_dev *dev, struct virtio_net_hdr_v1 *hdr)
{
	if (!(dev->guest_offloads & BIT_ULL(VIRTIO_NET_F_GUEST_CSUM)))
		hdr->flags = 0;
}

/* A packet of `bytes` frame bytes was pushed on q: count it, have the owner publish it. */
static inline void rx_delivered(struct vnet_dev *dev, struct vnet_queue *q, size_t bytes)
{
	stat_inc(&q->stats.packets);
	stat_add(&q->stats.bytes, bytes);
	if (!q->rx_unflushed++ && !dev->rx_dirty && dev->env->rx_dirty) {
		dev->rx_dirty = true;
		dev->env->rx_dirty(dev->env_ctx);
	}
	/* A sender's whole budget may land here: publish every batch, so the guest can recycle
	 * its buffers while the run goes on instead of running dry (then packets queue or drop). */
	if (q->rx_unflushed >= VNET_RX_PUBLISH_BATCH)
		net_rx_flush_queue(dev, q);
}

/*
 * The receive path: into queue pair `forced` (>= 0: a constant of the one caller that picked it,
 * vnet_dev_receive_frame_on()), else the pair the flow hash or RSS picks. `head` (NULL: none;
 * else only with one active pair and no RSS, the frame iov[0] alone at off 0): the checked copy
 * of its first VNET_FRAME_HEAD bytes, which the filter reads and the guest gets in their place.
 */
static inline __attribute__((always_inline)) int
receive_frame(struct vnet_dev *dev, const struct virtio_net_hdr_v1 *hdr_in, const struct iovec *iov,
	      unsigned iovcnt, size_t off, size_t frame_len, const uint8_t *head, const int forced)
{
	const uint8_t *eth = dev->rx_eth;
	struct virtio_net_hdr_v1_hash *hdr = &dev->rx_hdr;
	struct vnet_queue *q;
	unsigned pair;
	size_t need = dev->active_pairs > 1 ? sizeof(dev->rx_eth) : 14, got = need;
	int r;

	/* Buffers reserved for the direct path come first: give them back (they are the suffix). */
	if (dev->rx_cache.n)
		net_rx_cache_release(dev, &dev->queues[0]);
	if (frame_len < 14 || frame_len > VNET_MAX_FRAME) {
		stat_inc(&dev->queues[0].stats.dropped);
		return 1;
	}
	if (hdr_in) {
		hdr->hdr = *hdr_in;
		rx_hdr_flags(dev, &hdr->hdr);
	} else {
		memset(&hdr->hdr, 0, sizeof(hdr->hdr));
	}
	if (head) {
		eth = head; /* one active pair: need is 14, the checked copy's length */
		got = VNET_FRAME_HEAD;
	} else {
		/* Look at the Ethernet header in place when one segment holds it (nearly always). */
		while (iovcnt && off >= iov[0].iov_len) {
			off -= iov[0].iov_len;
			iov++;
			iovcnt--;
		}
		if (iovcnt && need <= iov[0].iov_len - off)
			eth = (const uint8_t *)iov[0].iov_base + off;
		else
			got = iov_copy_from(iov, iovcnt, off, dev->rx_eth, need);
	}
	if (head) {
		pair = 0;
	} else if (forced >= 0) {
		pair = (unsigned)forced;
		if (__builtin_expect(dev->rss.report, 0))
			(void)rx_rss(dev, iov, iovcnt, off, frame_len); /* the header's hash */
	} else if (__builtin_expect(dev->rss_on, 0)) {
		pair = rx_rss(dev, iov, iovcnt, off, frame_len);
	} else {
		pair = rx_pick_pair(dev, eth, got);
	}
	q = &dev->queues[2 * pair];
	if (!dev_queue_usable(q) || !dev->be) {
		stat_inc(&q->stats.dropped);
		return 1;
	}
	if (!rx_filter_accepts(dev, eth))
		return 1;
	if (__builtin_expect(dev->rx_rate.on, 0) && !net_rate_rx_admit(dev, q, frame_len))
		return 1; /* over the port's RX rate: dropped, counted */

	do {
		r = rx_place_one(dev, q, hdr, iov, iovcnt, off, frame_len, head, VQ_FAST_NONE);
		if (r == 0 && !rx_wait_for_buffers(q, vq_avail_seen(&q->vq)))
			break;
	} while (r == 0);
	if (r == 0) {
		if (dev->rx_rate.on)
			rate_bucket_give(&dev->rx_rate, frame_len); /* it comes again */
		return 0;
	}
	if (r < 0) {
		stat_inc(&q->stats.dropped);
		return 1;
	}
	rx_delivered(dev, q, frame_len);
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
			if (r == 0 && !rx_wait_for_buffers(q, vq_avail_seen(&q->vq)))
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

/* ---- Direct receive: the backend reads straight into reserved guest buffers ---------------- */

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
				   BIT_ULL(VIRTIO_NET_F_GUEST_UFO)))
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
		if (!rx_wait_for_buffers(q, seen))
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

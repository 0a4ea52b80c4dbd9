/* SPDX-License-Identifier: MIT */
/* switch_queue.c - each switch port's queue of frames for its guest, and the packet pool. */
#include "backend/switch/switch.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "lib/iov.h"
#include "lib/stat_atomic.h"
#include "backend/switch/switch_internal.h"
#include "dev/dev.h"

/*
 * A frame for a port whose guest had no RX buffers is copied into a packet buffer and waits in
 * the port's FIFO (struct switch_port's queue) until the guest posts buffers (rx_resume(): its
 * next delivery, swq_deliver(), drains it first). The buffers come from a pool per worker, so
 * a queue that fills and drains allocates nothing per packet. A leaf of the switch: it calls
 * the device model and nothing of the switch's other files.
 */

/*
 * A frame copied for a port whose guest had no RX buffers: with a zeroed header, or (has_vh)
 * one that asks for an offload, with its header and what it asks (the copy's offsets), of
 * which its guest may already have got seg_next frames made in software.
 */
struct sw_packet {
	size_t len;
	int pair;		 /* the queue pair it is for (a spread port's), or -1: the device picks */
	size_t cap;		 /* SW_SMALL_CAP or SW_MAX_FRAME */
	struct sw_packet *next; /* in a free list */
	bool has_vh;
	uint16_t seg_next;
	struct virtio_net_hdr_v1 vh;
	struct pkt_offload off;
	uint8_t data[];
};

#define SW_SMALL_CAP 2048
#define SW_POOL_SMALL 1024 /* free buffers kept for reuse: no allocation per packet */
#define SW_POOL_LARGE 32

static struct sw_packet *swq_enqueue_pkt(struct switch_port *dst, const struct iovec *iov,
					 unsigned iovcnt, size_t off, size_t len, int pair);

/* The capacity of the buffer a frame of len bytes is queued in. */
static size_t pkt_cap(size_t len)
{
	return len > SW_SMALL_CAP ? SW_MAX_FRAME : SW_SMALL_CAP;
}

/* A buffer for len bytes from the worker's pool (allocated only while the pool warms up). */
static struct sw_packet *pkt_get(struct sw_worker *w, size_t len)
{
	unsigned k = len > SW_SMALL_CAP;
	struct sw_packet *pkt = w->pool[k];

	if (pkt) {
		w->pool[k] = pkt->next;
		w->pool_len[k]--;
		return pkt;
	}
	pkt = malloc(sizeof(*pkt) + pkt_cap(len));
	if (pkt)
		pkt->cap = pkt_cap(len);
	return pkt;
}

/* A buffer back to the worker's pool, or freed when the pool holds enough. */
static void pkt_put(struct sw_worker *w, struct sw_packet *pkt)
{
	unsigned k = pkt->cap > SW_SMALL_CAP;

	if (w->pool_len[k] >= (k ? SW_POOL_LARGE : SW_POOL_SMALL)) {
		free(pkt);
		return;
	}
	pkt->next = w->pool[k];
	w->pool[k] = pkt;
	w->pool_len[k]++;
}

/**
 * swq_pool_free() - free a worker's pool of packet buffers and its whole-frame copy
 * (switch_destroy()).
 * @w: the worker, which forwards no more
 */
void swq_pool_free(struct sw_worker *w)
{
	free(w->whole);
	w->whole = NULL;
	for (unsigned k = 0; k < 2; k++)
		while (w->pool[k]) {
			struct sw_packet *pkt = w->pool[k];

			w->pool[k] = pkt->next;
			free(pkt);
		}
}

/**
 * swq_enqueue() - copy a frame to the tail of a port's queue, or drop it (counted).
 * @dst: the port, on its worker's thread
 * @iov: the frame's buffers
 * @iovcnt: their count
 * @off: the frame's first byte in @iov
 * @len: its length
 * @pair: the queue pair it is for (a spread port's), -1: the device picks
 *
 * The queue's byte budget counts each buffer's capacity, not the frame's length: what a queue
 * holds in memory is SWITCH_QUEUE_BYTES at most (a 2049-byte frame takes a 64 KiB buffer).
 */
void swq_enqueue(struct switch_port *dst, const struct iovec *iov, unsigned iovcnt, size_t off,
		 size_t len, int pair)
{
	(void)swq_enqueue_pkt(dst, iov, iovcnt, off, len, pair);
}

/* swq_enqueue() that returns the packet queued (NULL: dropped, counted). */
static struct sw_packet *swq_enqueue_pkt(struct switch_port *dst, const struct iovec *iov,
					 unsigned iovcnt, size_t off, size_t len, int pair)
{
	struct sw_packet *pkt;

	if (dst->q_len >= SWITCH_QUEUE_PACKETS || dst->q_bytes + pkt_cap(len) > SWITCH_QUEUE_BYTES) {
		dst->dropped++;
		return NULL;
	}
	pkt = pkt_get(&dst->sw->w[dst->worker], len);
	if (!pkt) {
		dst->dropped++;
		return NULL;
	}
	pkt->len = iov_copy_from(iov, iovcnt, off, pkt->data, len);
	pkt->pair = pair;
	pkt->has_vh = false;
	dst->queue[(dst->q_head + dst->q_len) % SWITCH_QUEUE_PACKETS] = pkt;
	dst->q_len++;
	dst->q_bytes += pkt->cap;
	return pkt;
}

/*
 * A frame that asks for an offload (fw->vh) for dst's guest, its queue empty: with its header
 * when the guest takes the offload (and not already in software: from > 0), else the frames
 * made in software (sw_soft_get()) from the from-th on, with DATA_VALID where the guest takes
 * checksum flags. Returns -1 when all went (or were dropped), else the frame the guest had no
 * buffers for (0: the frame itself; k > 0: made in software, k of them placed).
 */
static int offload_place(struct switch_port *dst, const struct sw_fwd *fw, int pair,
			 unsigned from)
{
	struct iovec tmp[2], one;
	const struct iovec *iov;
	unsigned cnt, n;
	const struct pkt_seg *segs;
	struct virtio_net_hdr_v1 h = {0};

	if (!from && sw_rx_takes(dst, fw->off)) {
		/* Its frame_len bytes: the header's frame (a GSO frame's Ethernet padding dropped). */
		size_t len = fw->off->frame_len;

		cnt = sw_fwd_vec(fw, tmp, &iov);
		if (!(pair < 0 ? vnet_dev_receive_frame(dst->dev, fw->vh, iov, cnt, 0, len)
			       : vnet_dev_receive_frame_on(dst->dev, (unsigned)pair, fw->vh, iov, cnt,
							   0, len)))
			return 0;
		stat_inc(&dst->offload_passed);
		return -1;
	}
	n = sw_soft_get(&dst->sw->w[dst->worker], fw, &segs);
	if (!n) {
		dst->dropped++;
		return -1;
	}
	if (fw->off->csum &&
	    (__atomic_load_n(&dst->rx_offloads, __ATOMIC_RELAXED) &
	     BIT_ULL(VIRTIO_NET_F_GUEST_CSUM)))
		h.flags = VIRTIO_NET_HDR_F_DATA_VALID; /* the switch computed it */
	for (unsigned i = from; i < n; i++) {
		one = (struct iovec){.iov_base = segs[i].data, .iov_len = segs[i].len};
		if (!(pair < 0 ? vnet_dev_receive_frame(dst->dev, &h, &one, 1, 0, segs[i].len)
			       : vnet_dev_receive_frame_on(dst->dev, (unsigned)pair, &h, &one, 1, 0,
							   segs[i].len)))
			return (int)i;
		if (fw->off->gso != VIRTIO_NET_HDR_GSO_NONE)
			stat_inc(&dst->soft_segs);
		else
			stat_inc(&dst->soft_csums);
	}
	return -1;
}

/* Queue fw (it asks for an offload) for dst's guest, which got `from` frames of it made in software. */
static void offload_enqueue(struct switch_port *dst, const struct sw_fwd *fw, int pair,
			    unsigned from)
{
	struct iovec tmp[2];
	const struct iovec *iov;
	unsigned cnt = sw_fwd_vec(fw, tmp, &iov);
	struct sw_packet *pkt = swq_enqueue_pkt(dst, iov, cnt, 0, fw->len, pair);

	if (!pkt)
		return;
	pkt->has_vh = true;
	pkt->seg_next = (uint16_t)from;
	pkt->vh = *fw->vh;
	pkt->off = *fw->off;
}

/**
 * swq_deliver_offload() - swq_deliver() of a frame that asks for an offload.
 * @dst: the receiving port, on its worker's thread
 * @fw: the frame (fw->vh, fw->off: its checked header and what it asks)
 * @pair: the queue pair (a spread port's), -1: the device picks
 *
 * Its guest gets it with its header if it takes the offload (sw_rx_takes()), else the frames
 * the switch makes of it in software: segments, or the frame with its checksum completed.
 * Queued frames go first; what the guest has no buffers for is queued with its header (and how
 * many of its frames made in software went already). Out of line: frames without offloads
 * never come here.
 */
void swq_deliver_offload(struct switch_port *dst, const struct sw_fwd *fw, int pair)
{
	int r = 0;

	guest_race(GUEST_RACE_TX_FORWARD);
	if (!dst->q_len || swq_drain(dst, SWITCH_QUEUE_PACKETS, SWITCH_QUEUE_BYTES) == 0)
		r = offload_place(dst, fw, pair, 0);
	if (r >= 0)
		offload_enqueue(dst, fw, pair, (unsigned)r);
}

/* A queued frame that asks for an offload, to its guest: true when it all went. */
static bool offload_drain_one(struct switch_port *p, struct sw_packet *pkt)
{
	struct sw_worker *w = &p->sw->w[p->worker];
	struct iovec iov = {.iov_base = pkt->data, .iov_len = pkt->len};
	struct sw_fwd fw = {.iov = &iov, .iovcnt = 1, .len = pkt->len};
	int r;

	sw_fwd_offload(&fw, w, &pkt->vh, &pkt->off);
	r = offload_place(p, &fw, pkt->pair, pkt->seg_next);
	if (r < 0)
		return true;
	pkt->seg_next = (uint16_t)r;
	return false;
}

/* The packet at the head of p's queue is done with: back to the pool. */
static void swq_dequeue(struct switch_port *p)
{
	struct sw_packet *pkt = p->queue[p->q_head];

	p->q_head = (p->q_head + 1) % SWITCH_QUEUE_PACKETS;
	p->q_len--;
	p->q_bytes -= pkt->cap;
	pkt_put(&p->sw->w[p->worker], pkt);
}

/**
 * swq_clear() - drop every packet queued for a port's guest (switch_detach(), device reset).
 * @p: the port, on its worker's thread or with it parked
 */
void swq_clear(struct switch_port *p)
{
	while (p->q_len)
		swq_dequeue(p);
}

/**
 * swq_drain() - deliver a port's queued packets in order while its guest has buffers.
 * @p: the port, on its worker's thread
 * @max_pkts: at most this many packets
 * @max_bytes: and about this many bytes
 *
 * Return: 0 the queue is empty; -1 the guest ran out of buffers (rx_resume() follows its next
 * posting); 1 the budget ended first.
 */
int swq_drain(struct switch_port *p, unsigned max_pkts, size_t max_bytes)
{
	unsigned done = 0;
	size_t bytes = 0;
	int r = 0;

	if (p->resuming)
		return p->q_len ? -1 : 0;
	p->resuming = true;
	while (p->q_len) {
		struct sw_packet *pkt = p->queue[p->q_head];
		struct iovec iov = {.iov_base = pkt->data, .iov_len = pkt->len};

		if (done >= max_pkts || bytes >= max_bytes) {
			r = 1;
			break;
		}
		if (pkt->has_vh ? !offload_drain_one(p, pkt)
				: !(pkt->pair < 0
					? vnet_dev_receive_frame(p->dev, NULL, &iov, 1, 0, pkt->len)
					: vnet_dev_receive_frame_on(p->dev, (unsigned)pkt->pair, NULL,
								    &iov, 1, 0, pkt->len))) {
			r = -1;
			break;
		}
		done++;
		bytes += pkt->len;
		swq_dequeue(p);
	}
	p->resuming = false;
	return r;
}

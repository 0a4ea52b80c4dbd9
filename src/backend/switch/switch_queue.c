/* SPDX-License-Identifier: MIT */
/* switch_queue.c - each switch port's queue of frames for its guest, and the packet pool. */
#include "backend/switch/switch.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/uio.h>

#include "lib/iov.h"
#include "backend/switch/switch_internal.h"
#include "dev/dev.h"

/*
 * A frame for a port whose guest had no RX buffers is copied into a packet buffer and waits in
 * the port's FIFO (struct switch_port's queue) until the guest posts buffers (rx_resume(): its
 * next delivery, swq_deliver(), drains it first). The buffers come from a pool per worker, so
 * a queue that fills and drains allocates nothing per packet. A leaf of the switch: it calls
 * the device model and nothing of the switch's other files.
 */

/* A frame copied for a port whose guest had no RX buffers (the header is a zeroed one). */
struct sw_packet {
	size_t len;
	int pair;		 /* the queue pair it is for (a spread port's), or -1: the device picks */
	size_t cap;		 /* SW_SMALL_CAP or SW_MAX_FRAME */
	struct sw_packet *next; /* in a free list */
	uint8_t data[];
};

#define SW_SMALL_CAP 2048
#define SW_POOL_SMALL 1024 /* free buffers kept for reuse: no allocation per packet */
#define SW_POOL_LARGE 32

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
	struct sw_packet *pkt;

	if (dst->q_len >= SWITCH_QUEUE_PACKETS || dst->q_bytes + pkt_cap(len) > SWITCH_QUEUE_BYTES) {
		dst->dropped++;
		return;
	}
	pkt = pkt_get(&dst->sw->w[dst->worker], len);
	if (!pkt) {
		dst->dropped++;
		return;
	}
	pkt->len = iov_copy_from(iov, iovcnt, off, pkt->data, len);
	pkt->pair = pair;
	dst->queue[(dst->q_head + dst->q_len) % SWITCH_QUEUE_PACKETS] = pkt;
	dst->q_len++;
	dst->q_bytes += pkt->cap;
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
		if (!(pkt->pair < 0 ? vnet_dev_receive_frame(p->dev, NULL, &iov, 1, 0, pkt->len)
				    : vnet_dev_receive_frame_on(p->dev, (unsigned)pkt->pair, NULL, &iov,
								1, 0, pkt->len))) {
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

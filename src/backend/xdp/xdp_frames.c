/* SPDX-License-Identifier: MIT */
/* xdp_frames.c - an AF_XDP port's UMEM: frame layout and the stack of free TX frames (pure). */
#include "backend/xdp/xdp_frames.h"

#include <stdlib.h>

/**
 * xdp_umem_layout_init() - the UMEM layout for nq sockets sharing one area.
 * @l: filled on success
 * @nq: sockets (NIC queues), 1 or more
 * @frame_size: bytes a frame, a power of two from 2048 to 65536 (the kernel's rule)
 * @rx_per_q: RX frames of each socket, a power of two (its FILL ring holds them all)
 * @tx_frames: TX frames of the port, 1 or more
 *
 * Any thread; no allocation.
 *
 * Return: 0, or -1 when a size breaks those rules or the area's size overflows.
 */
int xdp_umem_layout_init(struct xdp_umem_layout *l, unsigned nq, uint32_t frame_size,
			 uint32_t rx_per_q, uint32_t tx_frames)
{
	uint64_t frames;

	if (!nq || nq > 64 || frame_size < 2048 || frame_size > 65536 ||
	    (frame_size & (frame_size - 1)) || !rx_per_q || (rx_per_q & (rx_per_q - 1)) ||
	    !tx_frames)
		return -1;
	frames = (uint64_t)nq * rx_per_q + tx_frames;
	if (frames > UINT32_MAX)
		return -1;
	l->frame_size = frame_size;
	l->rx_per_q = rx_per_q;
	l->tx_frames = tx_frames;
	l->nq = nq;
	l->size = frames * frame_size;
	return 0;
}

/**
 * xdp_rx_frame() - the address of an RX frame.
 * @l: the layout
 * @q: the socket, < l->nq
 * @i: the frame, < l->rx_per_q
 *
 * Return: its UMEM address.
 */
uint64_t xdp_rx_frame(const struct xdp_umem_layout *l, unsigned q, uint32_t i)
{
	return ((uint64_t)q * l->rx_per_q + i) * l->frame_size;
}

/**
 * xdp_frame_of() - the start of the frame an address lies in.
 * @l: the layout
 * @addr: an address inside the UMEM (a descriptor's, after the kernel's headroom)
 *
 * Return: the frame's address.
 */
uint64_t xdp_frame_of(const struct xdp_umem_layout *l, uint64_t addr)
{
	return addr & ~(uint64_t)(l->frame_size - 1);
}

/**
 * xdp_frame_is_rx() - whether an address lies in one of a socket's RX frames.
 * @l: the layout
 * @q: the socket
 * @addr: the address (any offset inside the frame)
 *
 * Return: true if it does.
 */
bool xdp_frame_is_rx(const struct xdp_umem_layout *l, unsigned q, uint64_t addr)
{
	uint64_t lo = xdp_rx_frame(l, q, 0);

	return q < l->nq && addr >= lo && addr - lo < (uint64_t)l->rx_per_q * l->frame_size;
}

/**
 * xdp_frames_init() - an empty stack of free frames.
 * @f: the stack
 * @cap: the most frames it holds
 *
 * Return: 0, or -1 (out of memory).
 */
int xdp_frames_init(struct xdp_frames *f, uint32_t cap)
{
	f->addr = calloc(cap ? cap : 1, sizeof(*f->addr));
	f->n = 0;
	f->cap = f->addr ? cap : 0;
	return f->addr ? 0 : -1;
}

/**
 * xdp_frames_fill() - push every TX frame of a layout, the lowest on top.
 * @f: an empty stack of at least l->tx_frames
 * @l: the layout
 */
void xdp_frames_fill(struct xdp_frames *f, const struct xdp_umem_layout *l)
{
	for (uint32_t i = l->tx_frames; i-- > 0;)
		(void)xdp_frames_put(f, xdp_tx_frame(l, i));
}

/**
 * xdp_frames_free() - release a stack's memory.
 * @f: the stack (empty afterwards)
 */
void xdp_frames_free(struct xdp_frames *f)
{
	free(f->addr);
	f->addr = NULL;
	f->n = f->cap = 0;
}


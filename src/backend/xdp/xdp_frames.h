/* SPDX-License-Identifier: MIT */
/* xdp_frames.h - an AF_XDP port's UMEM: frame layout and the stack of free TX frames (pure). */
#ifndef VNETD_XDP_FRAMES_H
#define VNETD_XDP_FRAMES_H

#include <stdbool.h>
#include <stdint.h>

/*
 * The UMEM is cut into equal frames. Each of the port's sockets (one per NIC queue) owns a run
 * of RX frames that only ever cycle between its FILL and RX rings; after them come the TX
 * frames, shared by the port and handed out from a stack (xdp_frames_get/put). A frame is thus
 * never in two rings at once, and a completion the kernel reports is checked to be a TX frame.
 */
struct xdp_umem_layout {
	uint32_t frame_size; /* power of two, >= 2048 */
	uint32_t rx_per_q;   /* RX frames of each socket (its FILL ring's size) */
	uint32_t tx_frames;  /* TX frames of the port */
	unsigned nq;	     /* sockets (NIC queues) sharing the UMEM */
	uint64_t size;	     /* bytes: (nq * rx_per_q + tx_frames) * frame_size */
};

/* The free TX frames: a stack of UMEM addresses (frame starts). */
struct xdp_frames {
	uint64_t *addr;
	uint32_t n, cap;
};

/* xdp_umem_layout_init() - the layout for nq sockets; 0, or -1 for sizes that do not fit. */
int xdp_umem_layout_init(struct xdp_umem_layout *l, unsigned nq, uint32_t frame_size,
			 uint32_t rx_per_q, uint32_t tx_frames);

/* xdp_rx_frame() - the address of RX frame i of socket q. */
uint64_t xdp_rx_frame(const struct xdp_umem_layout *l, unsigned q, uint32_t i);

/* xdp_tx_frame() - the address of TX frame i (inline: the data path's). */
static inline uint64_t xdp_tx_frame(const struct xdp_umem_layout *l, uint32_t i)
{
	return ((uint64_t)l->nq * l->rx_per_q + i) * l->frame_size;
}

/* xdp_frame_of() - the frame an address (a descriptor's, headroom included) lies in. */
uint64_t xdp_frame_of(const struct xdp_umem_layout *l, uint64_t addr);

/* xdp_frame_is_rx() - whether addr lies in one of socket q's RX frames. */
bool xdp_frame_is_rx(const struct xdp_umem_layout *l, unsigned q, uint64_t addr);

/* xdp_frame_is_tx() - whether addr is the start of a TX frame (a completion's check). */
static inline bool xdp_frame_is_tx(const struct xdp_umem_layout *l, uint64_t addr)
{
	return addr < l->size && addr >= l->size - (uint64_t)l->tx_frames * l->frame_size &&
	       !(addr & (l->frame_size - 1));
}

/* xdp_frames_init() - an empty stack for cap frames; 0, or -1 (out of memory). */
int xdp_frames_init(struct xdp_frames *f, uint32_t cap);

/* xdp_frames_fill() - push every TX frame of layout l (the stack must be empty). */
void xdp_frames_fill(struct xdp_frames *f, const struct xdp_umem_layout *l);

/* xdp_frames_free() - release the stack's memory. */
void xdp_frames_free(struct xdp_frames *f);

/* xdp_frames_get() - pop up to n frames into out; the count popped. */
static inline uint32_t xdp_frames_get(struct xdp_frames *f, uint64_t *out, uint32_t n)
{
	uint32_t k = n < f->n ? n : f->n;

	for (uint32_t i = 0; i < k; i++)
		out[i] = f->addr[--f->n];
	return k;
}

/* xdp_frames_put() - push one frame back; false (not pushed) when the stack is full. */
static inline bool xdp_frames_put(struct xdp_frames *f, uint64_t addr)
{
	if (f->n >= f->cap)
		return false;
	f->addr[f->n++] = addr;
	return true;
}

#endif

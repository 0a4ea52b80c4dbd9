/* SPDX-License-Identifier: MIT */
/* backend.h - what the device model needs from a packet backend (tap, switch): a const ops table. */
#ifndef VNETD_BACKEND_H
#define VNETD_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

struct vnet_backend; /* opaque: each backend defines its own */
struct virtio_net_hdr_v1;

/*
 * One frame of a burst (transmit_burst(), vnet_dev_receive_burst()): len bytes at data, in
 * memory the caller keeps mapped for the call (a guest's buffer: its bytes may change under us,
 * so they are read into a copy before anything is decided on them).
 */
struct vnet_frame {
	const uint8_t *data;
	uint32_t len;
};

#define VNET_BURST_MAX 64  /* the most frames one transmit_burst() call gets */
#define VNET_FRAME_HEAD 14 /* an Ethernet header: what vnet_dev_receive_burst() may be given a copy of */

/*
 * vnet_frame_iov() - frame f as iovecs: with head (a checked copy of its first VNET_FRAME_HEAD
 * bytes, f->len at least that), head then the rest of f; else f alone. Returns the count.
 */
static inline unsigned vnet_frame_iov(const struct vnet_frame *f, const uint8_t *head,
				      struct iovec iov[2])
{
	if (!head) {
		iov[0] = (struct iovec){.iov_base = (void *)f->data, .iov_len = f->len};
		return 1;
	}
	iov[0] = (struct iovec){.iov_base = (void *)head, .iov_len = VNET_FRAME_HEAD};
	iov[1] = (struct iovec){.iov_base = (void *)(f->data + VNET_FRAME_HEAD),
				.iov_len = f->len - VNET_FRAME_HEAD};
	return 2;
}

/*
 * What a backend did with frames that ask for offloads (offload_stats()): their headers it
 * refused, frames it delivered with their header, and what it did in software for a receiver
 * (or a wire) that could not take the offload.
 */
struct vnet_offload_stats {
	uint64_t bad_header;	 /* frames dropped: an offload header their own headers contradict */
	uint64_t passed;	 /* frames delivered with their offload header */
	uint64_t soft_segments;	 /* segments made in software */
	uint64_t soft_checksums; /* checksums completed in software (frames not segmented) */
};

/*
 * The device model delivers guest TX with transmit(); backends deliver guest RX with
 * vnet_dev_receive() (12-byte struct virtio_net_hdr_v1 in front) or vnet_dev_receive_frame().
 */
struct vnet_backend_ops {
	const char *kind; /* "tap", "switch", ... */
	/* Offload feature bits (VIRTIO_NET_F_CSUM, GUEST_*, HOST_*) the backend can honour. */
	uint64_t offload_features;
	/*
	 * Send one packet: the frame is frame_len bytes from byte off of iov, in guest memory as
	 * the guest handed it over (the device checked only its length); hdr is the device's
	 * checked copy of the guest's header (flags beyond NEEDS_CSUM cleared, num_buffers 0).
	 * >= 0 sent (a positive value counts further deliveries of the same packet, e.g. a flood
	 * to several ports: they use the sender's budget), -EAGAIN full (retry after
	 * vnet_dev_tx_resume()), other < 0 dropped.
	 */
	int (*transmit)(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
			const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame_len);
	/*
	 * Optional: send frames of f[0..n) in order, each as transmit() would with an all-zero
	 * header (the device gives it only frames that ask for no offload, each in one buffer;
	 * with burst_offloads, also frames that do: hdr[i] is frame i's checked header, else hdr
	 * is NULL),
	 * adding their further deliveries (as transmit() counts them) to *extra. `room` (>= n) is
	 * what the sender's budget still allows, frames plus further deliveries: frame i is taken
	 * only while i plus the further deliveries of this call stay below it, as the device's own
	 * check before each frame. Returns how many it took, sent or dropped (at least one, unless
	 * it is full); the device gives the rest back to the ring. A backend that is full takes
	 * fewer (none, too), sets *full and calls vnet_dev_tx_resume() once it has room, as after
	 * a transmit() that returned -EAGAIN; what it took went out before what it refused.
	 */
	unsigned (*transmit_burst)(struct vnet_backend *be, const struct vnet_frame *f,
				   const struct virtio_net_hdr_v1 *hdr, unsigned n, uint32_t room,
				   uint32_t *extra, bool *full);
	/* transmit_burst also takes frames that ask for offloads, with their headers (a tap: the
	 * kernel does the checksum and segmentation). */
	bool burst_offloads;
	/* The guest's receive offloads changed (negotiated or CTRL_GUEST_OFFLOADS). */
	void (*set_offloads)(struct vnet_backend *be, uint64_t guest_features);
	/*
	 * The guest posted receive buffers after vnet_dev_receive() returned 0: deliver again, at
	 * most one budget (VNET_BUDGET_*). True: packets are left; call again later.
	 */
	bool (*rx_resume)(struct vnet_backend *be);
	/*
	 * The device was reset (the driver's reset, or its frontend went away): drop what the
	 * backend holds for the guest's RX. Those frames were meant for a guest that is gone, and
	 * must not reach the next one on this port. May be NULL (nothing held).
	 */
	void (*reset)(struct vnet_backend *be);
	/*
	 * Optional: the driver uses `pairs` queue pairs now (VQ_PAIRS_SET, RSS_CONFIG, a reset; 1
	 * when attached): a backend with a queue of its own per pair (a multi-queue tap) stops
	 * serving the others, so their traffic goes to the pairs in use.
	 */
	void (*set_pairs)(struct vnet_backend *be, unsigned pairs);
	/* Optional: the port's offload counters (struct vnet_offload_stats), from any thread. */
	void (*offload_stats)(const struct vnet_backend *be, struct vnet_offload_stats *out);
};

#endif

/* SPDX-License-Identifier: MIT */
/* net_rx.h - the receive path (net_rx*.c): the per-packet entry points, and the device's own. */
#ifndef VNETD_NET_RX_H
#define VNETD_NET_RX_H

#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * The vnet_dev_receive*() and vnet_dev_rx_*() entry points the backends call for every packet
 * are defined in the receive path's own files, not in vnet_dev.c (a forwarding call would cost
 * every packet): net_rx.c the copying path one packet at a time, net_rx_burst.c
 * vnet_dev_receive_burst(), net_rx_direct.c the reservations a backend reads straight into
 * (vnet_dev_rx_reserve(), vnet_dev_rx_commit()); net_rx_rss.c picks a pair by RSS. What they
 * share per packet is inline in net_rx_internal.h. dev/dev.h includes this header for them.
 */

struct vnet_dev;
struct vnet_queue;
struct virtio_net_hdr_v1;
struct vnet_frame;

/*
 * vnet_dev_receive() - deliver one packet (12-byte virtio_net_hdr_v1 first) to the guest.
 * Returns 1 delivered (or dropped and counted), 0 no guest buffers now: keep the packet, the
 * backend's rx_resume() is called when the guest posts buffers. Delivered packets become
 * visible to the guest every VNET_RX_PUBLISH_BATCH packets and at vnet_dev_rx_flush() (the owner
 * flushes after each round of events when env->rx_dirty asked it to).
 */
int vnet_dev_receive(struct vnet_dev *dev, const struct iovec *iov, unsigned iovcnt);

/*
 * vnet_dev_receive_frame() - the same for a bare frame of frame_len bytes starting at byte off
 * of iov, with the header hdr (NULL: all zero — no checksum or GSO information).
 */
int vnet_dev_receive_frame(struct vnet_dev *dev, const struct virtio_net_hdr_v1 *hdr,
			   const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame_len);

/*
 * vnet_dev_receive_checked() - vnet_dev_receive_frame() for frame f in one buffer with an all-zero
 * header, its guest getting head's VNET_FRAME_HEAD (backend.h) bytes in place of its first ones
 * (the sender's checked copy), as one frame of vnet_dev_receive_burst() does.
 */
int vnet_dev_receive_checked(struct vnet_dev *dev, const struct vnet_frame *f,
			     const uint8_t head[14]);

/*
 * vnet_dev_receive_burst() - vnet_dev_receive_frame() for n frames in order, each in one buffer
 * with an all-zero header; heads (NULL: none): per frame, VNET_FRAME_HEAD (backend.h) bytes its
 * guest gets in place of its first ones (the sender's checked copy). Returns the frames taken
 * before the first the guest had no buffers for (n, or fewer: keep the rest, as for a 0 of
 * vnet_dev_receive_frame()).
 */
unsigned vnet_dev_receive_burst(struct vnet_dev *dev, const struct vnet_frame *f,
				const uint8_t (*heads)[14], unsigned n);

/*
 * vnet_dev_receive_frame_on() - the same into queue pair `pair` (picked by vnet_dev_rx_pair() on
 * another thread; one the device lacks: pair 0), on the thread that runs that pair.
 */
int vnet_dev_receive_frame_on(struct vnet_dev *dev, unsigned pair,
			      const struct virtio_net_hdr_v1 *hdr, const struct iovec *iov,
			      unsigned iovcnt, size_t off, size_t frame_len);

/*
 * vnet_dev_receive_pair() - vnet_dev_receive() for a packet the backend read for queue pair
 * `pair` (a multi-queue tap's queue): that pair's RX queue takes it while the pair is active,
 * unless RSS steers (then the indirection table picks, as for any frame).
 */
int vnet_dev_receive_pair(struct vnet_dev *dev, unsigned pair, const struct iovec *iov,
			  unsigned iovcnt);

/*
 * vnet_dev_rx_reserve() - guest RX buffers for one packet the backend will write straight into
 * (12-byte virtio_net_hdr_v1 first, then the frame), holding at least max_len bytes. Returns
 * the iovec count (*iov points at them), 0 when the guest has no buffers (rx_resume() is
 * called once it posts some), or -1 when this device cannot take it that way now (legacy
 * header, several active queue pairs, too few buffers for max_len): use vnet_dev_receive().
 */
int vnet_dev_rx_reserve(struct vnet_dev *dev, size_t max_len, const struct iovec **iov);

/*
 * vnet_dev_rx_commit() - the backend wrote a packet of len bytes (header included) into the
 * reserved buffers: complete the ones it used; the rest stay reserved for the next packet. A
 * len larger than the reservation was truncated by the backend and is dropped (counted).
 */
void vnet_dev_rx_commit(struct vnet_dev *dev, size_t len);

/* vnet_dev_rx_flush() - publish received packets and decide notifications; call after a burst. */
void vnet_dev_rx_flush(struct vnet_dev *dev);

/* ---- For the device model's own files ---- */

#endif

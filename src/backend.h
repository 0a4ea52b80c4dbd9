/* backend.h - what the device model needs from a packet backend (tap, switch): a const ops table. */
#ifndef VNETD_BACKEND_H
#define VNETD_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

struct vnet_backend; /* opaque: each backend defines its own */

/*
 * Packets cross this interface with a 12-byte struct virtio_net_hdr_v1 in front. The device
 * model delivers guest TX with transmit(); backends deliver guest RX with vnet_dev_receive().
 */
struct vnet_backend_ops {
	const char *kind; /* "tap", "switch", ... */
	/* Offload feature bits (VIRTIO_NET_F_CSUM, GUEST_*, HOST_*) the backend can honour. */
	uint64_t offload_features;
	/*
	 * Send one packet. >= 0 sent (a positive value counts further deliveries of the same
	 * packet, e.g. a flood to several ports: they use the sender's budget), -EAGAIN full
	 * (retry after vnet_dev_tx_resume()), other < 0 dropped.
	 */
	int (*transmit)(struct vnet_backend *be, const struct iovec *iov, unsigned iovcnt);
	/* The guest's receive offloads changed (negotiated or CTRL_GUEST_OFFLOADS). */
	void (*set_offloads)(struct vnet_backend *be, uint64_t guest_features);
	/*
	 * The guest posted receive buffers after vnet_dev_receive() returned 0: deliver again, at
	 * most one budget (VNET_BUDGET_*). True: packets are left; call again later.
	 */
	bool (*rx_resume)(struct vnet_backend *be);
};

#endif

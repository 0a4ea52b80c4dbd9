/* SPDX-License-Identifier: MIT */
/* tap.h - tap backend: a port's packets go through a Linux tap interface (IFF_VNET_HDR). */
#ifndef VNETD_TAP_H
#define VNETD_TAP_H

#include <fcntl.h>
#include <stdint.h>

#include "backend.h"

struct vnet_dev;

/*
 * What the tap needs from its owner (the port). The owner registers tap_backend_fd() in its
 * epoll loop with EPOLLIN right after tap_backend_open() and passes every event of that fd to
 * tap_backend_handle_events().
 */
struct tap_owner_ops {
	/*
	 * Change the events fd is registered for (the full new mask: EPOLLIN, EPOLLOUT or both,
	 * or 0). EPOLLIN goes off while a received packet waits for guest buffers; EPOLLOUT is on
	 * while a transmit waits for room.
	 */
	void (*set_events)(void *ctx, int fd, uint32_t epoll_events);
	/*
	 * Optional (may be NULL): the tap is gone for good (the interface was deleted), and epoll
	 * keeps reporting EPOLLERR for fd. The owner should unregister fd; it may then close the
	 * backend at any time after this call returns.
	 */
	void (*failed)(void *ctx, int fd);
	/*
	 * Optional: reading straight into guest memory faulted (EFAULT: the frontend shrank or
	 * unmapped it). The owner should drop the frontend, as it does after a SIGBUS.
	 */
	void (*guest_fault)(void *ctx);
};

/* Flags /dev/net/tun is opened with (the sandbox allows exactly these, see sandbox.c). */
#define TAP_TUN_FLAGS (O_RDWR | O_NONBLOCK | O_CLOEXEC)

/*
 * tap_open_tun_dir() - open /dev/net once (O_PATH) so that later taps are opened relative to
 * it; the fd, or -1 (taps then open /dev/net/tun by path).
 */
int tap_open_tun_dir(void);

/*
 * tap_backend_open() - attach to tap interface `ifname` (created if it does not exist, or an
 * existing persistent tap we may use), non-blocking, with the 12-byte virtio_net_hdr_v1 in
 * front of every packet. The interface is not configured or brought up. Received packets go to
 * `dev`, which must outlive the backend. NULL on failure (logged with the interface's name).
 */
struct vnet_backend *tap_backend_open(const char *ifname, struct vnet_dev *dev,
				      const struct tap_owner_ops *owner, void *owner_ctx);

/* tap_backend_fd() - the tap's fd, for the owner's epoll loop. */
int tap_backend_fd(const struct vnet_backend *be);

/* tap_backend_name() - the interface's name as the kernel reports it. */
const char *tap_backend_name(const struct vnet_backend *be);

/*
 * tap_backend_handle_events() - the tap fd reported `events`: EPOLLIN reads up to a bounded
 * batch of packets into the guest, EPOLLOUT resumes a blocked transmit.
 */
void tap_backend_handle_events(struct vnet_backend *be, uint32_t events);

/* tap_backend_close() - close the tap fd and free the backend; unregister the fd first. */
void tap_backend_close(struct vnet_backend *be);

/*
 * A tap trunk's owner (tap_backend_set_trunk()): rx() gets each VLAN-tagged frame read from
 * the tap (len bytes, tag included; the buffer is the tap's, writable, valid during the call),
 * on the port's worker's thread.
 */
struct tap_trunk_ops {
	void (*rx)(void *ctx, uint8_t *frame, size_t len);
};

/* tap_backend_set_trunk() - tagged frames read go to ops->rx(); untagged ones to the guest. */
void tap_backend_set_trunk(struct vnet_backend *be, const struct tap_trunk_ops *ops, void *ctx);

/*
 * tap_backend_send_tagged() - write a frame (len bytes at byte off of iov, untagged) to the tap
 * with an 802.1Q tag of VLAN vid inserted; 0, or a negative errno (dropped, never blocks).
 */
int tap_backend_send_tagged(struct vnet_backend *be, uint16_t vid, const struct iovec *iov,
			    unsigned iovcnt, size_t off, size_t len);

/* Ops table of tap backends ("tap"); use with vnet_dev_attach_backend(). */
extern const struct vnet_backend_ops tap_backend_ops;

#endif

/* SPDX-License-Identifier: MIT */
/* xdp.c - AF_XDP backend: guest packets to and from a NIC's queues through AF_XDP sockets. */
#include "backend/xdp/xdp.h"

#include <assert.h>
#include <errno.h>
#include <linux/if_xdp.h>
#include <stddef.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <xdp/xsk.h>

#include "lib/iov.h"
#include "lib/log.h"
#include "lib/stat_atomic.h"
#include "lib/virtio_net_defs.h"
#include "pkt/pkt.h"
#include "dev/dev.h"
#include "backend/xdp/xdp_frames.h"
#include "backend/xdp/xdp_internal.h"

/*
 * The AF_XDP backend's I/O, on the port's worker: RX rings into the guest, guest frames onto
 * the TX ring, kicks and completions. Set-up and teardown are xdp_open.c's; the port's state is
 * in xdp_internal.h.
 */


/* Tell the owner which events each socket wants, where that changed. */
static void xdp_update_events(struct xdp_backend *x)
{
	for (unsigned i = 0; i < x->nq; i++) {
		uint32_t want = 0;

		if (!x->failed) {
			if (!x->rx_nobufs)
				want |= EPOLLIN;
			if (i == 0 && x->tx_blocked)
				want |= EPOLLOUT;
		}
		if (want == x->q[i].events)
			continue;
		x->q[i].events = want;
		if (x->owner && x->owner->set_events)
			x->owner->set_events(x->owner_ctx, i, x->q[i].fd, want);
	}
}

/* The interface or a socket is gone: stop all I/O and tell the owner, once. */
static void xdp_fail(struct xdp_backend *x, const char *why)
{
	if (x->failed)
		return;
	x->failed = true;
	log_err("xdp %s: %s; the port has no network now", x->name, why);
	xdp_update_events(x);
	if (x->owner && x->owner->failed)
		x->owner->failed(x->owner_ctx);
}

/* Take the kernel's finished TX frames back (one batch: the COMPLETION ring's size). */
static void xdp_reap(struct xdp_backend *x)
{
	struct xsk_ring_cons *comp = &x->q[0].comp;
	uint32_t idx = 0, n = xsk_ring_cons__peek(comp, XDP_TX_FRAMES, &idx);

	for (uint32_t i = 0; i < n; i++) {
		uint64_t addr = *xsk_ring_cons__comp_addr(comp, idx + i);

		if (!xdp_frame_is_tx(&x->lay, addr) || !xdp_frames_put(&x->frames, addr))
			x->bad_descs++;
	}
	if (n)
		xsk_ring_cons__release(comp, n);
}

/*
 * Submit the descriptors filled since the last kick (one producer update for the batch) and
 * wake the kernel if it asks for it. Copy mode sends inside sendto(), at most XDP_TX_KICK a
 * call (EAGAIN: more left); `tries` bounds the calls.
 */
static void xdp_kick(struct xdp_backend *x, unsigned tries)
{
	if (x->tx_pending) {
		xsk_ring_prod__submit(&x->tx, x->tx_pending);
		x->tx_pending = 0;
	}
	for (unsigned t = 0; t < tries && xsk_ring_prod__needs_wakeup(&x->tx); t++) {
		if (sendto(x->q[0].fd, NULL, 0, MSG_DONTWAIT, NULL, 0) >= 0) {
			if (x->down)
				log_info("xdp %s: is up again, sending guest packets", x->name);
			x->down = false;
			break;
		}
		if (errno == EINTR)
			continue;
		if (errno == ENETDOWN) {
			if (!x->down)
				log_warn("xdp %s: is down, dropping guest packets until it is up",
					 x->name);
			x->down = true;
			break;
		}
		if (errno == ENXIO) {
			xdp_fail(x, "the socket is unbound (interface deleted?)");
			return;
		}
		if (errno != EAGAIN && errno != EBUSY && errno != ENOBUFS) {
			log_guest("xdp %s: sendto: %s", x->name, strerror(errno));
			break;
		}
		xdp_reap(x); /* EAGAIN: the COMPLETION ring may be what is full */
	}
	xdp_reap(x);
}

/* Hand a FILL ring its RX frames back (n of them, in x->recycle), waking the kernel if asked. */
static void xdp_refill(struct xdp_backend *x, struct xdp_sock_q *s, uint32_t n)
{
	uint32_t idx = 0;

	/* The ring holds every RX frame of the socket: there is always room. */
	if (xsk_ring_prod__reserve(&s->fill, n, &idx) != n) {
		x->bad_descs += n;
		return;
	}
	for (uint32_t i = 0; i < n; i++)
		*xsk_ring_prod__fill_addr(&s->fill, idx + i) = x->recycle[i];
	xsk_ring_prod__submit(&s->fill, n);
	if (xsk_ring_prod__needs_wakeup(&s->fill)) { /* zero-copy: the driver waits for a kick */
		struct msghdr msg = {0};

		(void)recvmsg(s->fd, &msg, MSG_DONTWAIT);
	}
}

/*
 * Deliver a bounded batch (XDP_RX_BATCH descriptors, VNET_BUDGET_BYTES) from socket qi's RX
 * ring to the guest: one copy, UMEM frame to guest buffers. Without guest buffers the rest
 * stays in the ring (EPOLLIN off) until rx_resume(). Level-triggered epoll reports the rest.
 */
static void xdp_rx(struct xdp_backend *x, unsigned qi)
{
	struct xdp_sock_q *s = &x->q[qi];
	uint32_t idx = 0, done = 0, n = xsk_ring_cons__peek(&s->rx, XDP_RX_BATCH, &idx);
	uint32_t nrec = 0;
	size_t bytes = 0;

	while (done < n && bytes < VNET_BUDGET_BYTES) {
		const struct xdp_desc *d = xsk_ring_cons__rx_desc(&s->rx, idx + done);
		uint64_t addr = d->addr;
		uint32_t len = d->len;

		if (!xdp_frame_is_rx(&x->lay, qi, addr) ||
		    addr - xdp_frame_of(&x->lay, addr) + len > x->lay.frame_size) {
			x->bad_descs++; /* not a frame of ours: never recycle it */
			done++;
			continue;
		}
		if (len >= XDP_ETH_HLEN) {
			struct iovec iov = {.iov_base = x->area + addr, .iov_len = len};

			if (vnet_dev_receive_frame(x->dev, NULL, &iov, 1, 0, len) == 0) {
				x->rx_nobufs = true;
				break;
			}
		}
		x->recycle[nrec++] = xdp_frame_of(&x->lay, addr);
		bytes += len;
		done++;
	}
	if (done < n)
		xsk_ring_cons__cancel(&s->rx, n - done);
	if (done)
		xsk_ring_cons__release(&s->rx, done);
	s->rx_frames += done;
	if (nrec)
		xdp_refill(x, s, nrec);
	if (x->rx_nobufs)
		xdp_update_events(x);
}

/* Ask the owner for a flush at the end of this round, once. */
static void xdp_want_flush(struct xdp_backend *x)
{
	if (x->flush_asked)
		return;
	x->flush_asked = true;
	if (x->owner && x->owner->want_flush)
		x->owner->want_flush(x->owner_ctx);
	else
		xdp_kick(x, XDP_KICK_TRIES);
}

/*
 * Whether a guest frame of frame_len bytes (at most max) may go out now: 0, or -ENODEV (the
 * port failed), -EMSGSIZE (dropped), -ENETDOWN (the interface is down).
 */
static inline __attribute__((always_inline)) int xdp_tx_ready(struct xdp_backend *x,
							      size_t frame_len, size_t max)
{
	if (x->failed)
		return -ENODEV;
	if (frame_len > max || frame_len < XDP_ETH_HLEN) {
		log_guest("xdp %s: dropped a guest frame of %zu bytes (%u..%zu)", x->name, frame_len,
			  XDP_ETH_HLEN, max);
		return -EMSGSIZE;
	}
	if (x->down) {
		xdp_kick(x, 1); /* is it up again? */
		if (x->down)
			return -ENETDOWN;
	}
	return 0;
}

/*
 * n TX descriptors from *idx on, each with a free TX frame: reaped and kicked for if need be.
 * 0, or -ENODEV / -EAGAIN (the ring or the frames are full: EPOLLOUT resumes the guest's TX).
 * Reserved per frame, submitted per batch: the producer moves once per kick.
 */
static inline __attribute__((always_inline)) int xdp_tx_reserve(struct xdp_backend *x, uint32_t n,
								 uint32_t *idx)
{
	if (x->frames.n < n)
		xdp_reap(x);
	if (x->frames.n < n || xsk_ring_prod__reserve(&x->tx, n, idx) != n) {
		xdp_kick(x, XDP_KICK_TRIES);
		if (x->failed)
			return -ENODEV;
		if (x->frames.n < n || xsk_ring_prod__reserve(&x->tx, n, idx) != n) {
			x->tx_blocked = true;
			xdp_update_events(x);
			return -EAGAIN;
		}
	}
	return 0;
}

/* n descriptors were filled: count them, kick per batch or at the round's end. */
static inline __attribute__((always_inline)) void xdp_tx_filled(struct xdp_backend *x, uint32_t n)
{
	x->tx_frames += n;
	x->tx_pending += n;
	if (x->tx_pending >= x->tx_kick)
		xdp_kick(x, 1);
	else
		xdp_want_flush(x);
}

/*
 * A guest frame that asks for an offload (the port offers CSUM and HOST_TSO4/6): the frames
 * made of it in software (xdp_soft_make()) go out, each in a TX frame of its own, all or none.
 * As xdp_transmit() returns.
 */
static __attribute__((noinline)) int xdp_transmit_soft(struct xdp_backend *x,
							const struct virtio_net_hdr_v1 *hdr,
							const struct iovec *iov, unsigned iovcnt,
							size_t off, size_t frame_len)
{
	const struct pkt_seg *segs;
	unsigned n;
	uint32_t idx = 0;
	int r = xdp_tx_ready(x, frame_len, 65536 + 18); /* the device's largest: a GSO frame */

	if (r < 0)
		return r;
	n = xdp_soft_make(x, hdr, iov, iovcnt, off, frame_len, &segs);
	if (!n)
		return -EINVAL;
	r = xdp_tx_reserve(x, n, &idx);
	if (r < 0)
		return r;
	for (unsigned i = 0; i < n; i++) {
		uint64_t addr = 0;
		struct xdp_desc *d = xsk_ring_prod__tx_desc(&x->tx, idx + i);

		(void)xdp_frames_get(&x->frames, &addr, 1);
		assert(segs[i].len <= XDP_PORT_MAX_FRAME); /* xdp_soft_make() checked */
		memcpy(x->area + addr, segs[i].data, segs[i].len);
		d->addr = addr;
		d->len = segs[i].len;
		d->options = 0;
	}
	if (hdr->gso_type != VIRTIO_NET_HDR_GSO_NONE)
		stat_add(&x->soft_segs, n);
	else
		stat_inc(&x->soft_csums);
	xdp_tx_filled(x, n);
	return 0;
}

/*
 * Send one guest packet: copy it into a free TX frame (the one copy), fill a TX descriptor.
 * Descriptors are submitted and the kernel kicked per XDP_TX_KICK, and at the end of the round
 * (xdp_backend_flush()). A packet that asks for an offload is made into whole frames first
 * (xdp_transmit_soft()). See struct vnet_backend_ops.
 */
static int xdp_transmit(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
			const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame_len)
{
	struct xdp_backend *x = xdp_of(be);
	uint64_t addr = 0;
	uint32_t idx = 0;
	int r;

	if (__builtin_expect(pkt_offload_needed(hdr), 0))
		return xdp_transmit_soft(x, hdr, iov, iovcnt, off, frame_len);
	r = xdp_tx_ready(x, frame_len, XDP_PORT_MAX_FRAME);
	if (r < 0)
		return r;
	r = xdp_tx_reserve(x, 1, &idx);
	if (r < 0)
		return r;
	(void)xdp_frames_get(&x->frames, &addr, 1);
	(void)iov_copy_from(iov, iovcnt, off, x->area + addr, frame_len);
	xsk_ring_prod__tx_desc(&x->tx, idx)->addr = addr;
	xsk_ring_prod__tx_desc(&x->tx, idx)->len = (uint32_t)frame_len;
	xsk_ring_prod__tx_desc(&x->tx, idx)->options = 0;
	xdp_tx_filled(x, 1);
	return 0;
}

/* The guest gets whole, checksummed frames (the NIC's): nothing to set. */
static void xdp_set_offloads(struct vnet_backend *be, uint64_t guest_features)
{
	(void)be;
	(void)guest_features;
}

/* The port's offload counters (struct vnet_backend_ops' offload_stats): all made in software. */
static void xdp_offload_stats(const struct vnet_backend *be, struct vnet_offload_stats *out)
{
	const struct xdp_backend *x = (const struct xdp_backend *)be;

	*out = (struct vnet_offload_stats){
	    .bad_header = stat_read(&x->bad_hdr),
	    .soft_segments = stat_read(&x->soft_segs),
	    .soft_checksums = stat_read(&x->soft_csums),
	};
}

/* The guest posted receive buffers: watch the RX rings again (the next EPOLLIN delivers). */
static bool xdp_rx_resume(struct vnet_backend *be)
{
	struct xdp_backend *x = xdp_of(be);

	if (x->failed || !x->rx_nobufs)
		return false;
	x->rx_nobufs = false;
	xdp_update_events(x);
	return false;
}

/* xdp_backend_ops - the ops table the device model calls. */
const struct vnet_backend_ops xdp_backend_ops = {
	.kind = "xdp",
	/* The guest's TX offloads, done in software here (xdp_offload.c): it need not segment. */
	.offload_features = BIT_ULL(VIRTIO_NET_F_CSUM) | BIT_ULL(VIRTIO_NET_F_HOST_TSO4) |
			    BIT_ULL(VIRTIO_NET_F_HOST_TSO6) | BIT_ULL(VIRTIO_NET_F_HOST_ECN) |
			    BIT_ULL(VIRTIO_NET_F_HOST_USO),
	.transmit = xdp_transmit,
	.set_offloads = xdp_set_offloads,
	.rx_resume = xdp_rx_resume,
	.offload_stats = xdp_offload_stats,
};

/**
 * xdp_backend_handle_events() - handle one epoll report of a socket.
 * @be: the backend
 * @i: the socket (< xdp_backend_nfds())
 * @events: the epoll events
 *
 * EPOLLERR/EPOLLHUP fail the backend (the owner's failed()); EPOLLOUT on socket 0 reaps
 * completions and resumes a blocked transmit; EPOLLIN delivers a bounded batch to the guest.
 * On the port's worker.
 */
void xdp_backend_handle_events(struct vnet_backend *be, unsigned i, uint32_t events)
{
	struct xdp_backend *x = xdp_of(be);

	if (x->failed || i >= x->nq)
		return;
	if (events & (EPOLLERR | EPOLLHUP)) {
		xdp_fail(x, events & EPOLLHUP ? "the socket reported EPOLLHUP"
					      : "the socket reported EPOLLERR");
		return;
	}
	if (i == 0 && (events & EPOLLOUT) && x->tx_blocked) {
		xdp_kick(x, XDP_KICK_TRIES);
		if (x->frames.n && !x->failed) {
			/* Clear first: the resumed transmit may block again and set it anew. */
			x->tx_blocked = false;
			vnet_dev_tx_resume(x->dev);
			xdp_update_events(x);
		}
	}
	if ((events & EPOLLIN) && !x->rx_nobufs && !x->failed)
		xdp_rx(x, i);
}

/**
 * xdp_backend_flush() - submit this round's transmits and kick the kernel if it needs it.
 * @be: the backend
 *
 * The owner calls it after want_flush(), once its round of events is done. On the port's worker.
 */
void xdp_backend_flush(struct vnet_backend *be)
{
	struct xdp_backend *x = xdp_of(be);

	x->flush_asked = false;
	if (!x->failed)
		xdp_kick(x, XDP_KICK_TRIES);
}

/**
 * xdp_backend_nfds() - how many sockets the backend has.
 * @be: the backend
 *
 * Return: the count (the port's queue pairs).
 */
unsigned xdp_backend_nfds(const struct vnet_backend *be)
{
	return xdp_of_const(be)->nq;
}

/**
 * xdp_backend_fd() - a socket's fd, for the owner's epoll loop.
 * @be: the backend
 * @i: the socket, < xdp_backend_nfds()
 *
 * Return: the fd.
 */
int xdp_backend_fd(const struct vnet_backend *be, unsigned i)
{
	const struct xdp_backend *x = xdp_of_const(be);

	return i < x->nq ? x->q[i].fd : -1;
}

/**
 * xdp_backend_zero_copy() - whether the sockets run in zero-copy mode.
 * @be: the backend
 *
 * Return: true for zero-copy, false for copy mode.
 */
bool xdp_backend_zero_copy(const struct vnet_backend *be)
{
	return xdp_of_const(be)->zero_copy;
}

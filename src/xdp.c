/* SPDX-License-Identifier: MIT */
/* xdp.c - AF_XDP backend: guest packets to and from a NIC's queues through AF_XDP sockets. */
#include "xdp.h"

#include <assert.h>
#include <bpf/bpf.h>
#include <errno.h>
#include <linux/bpf.h>
#include <linux/if_link.h>
#include <linux/if_xdp.h>
#include <net/if.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include <xdp/xsk.h>

#include "iov.h"
#include "log.h"
#include "virtio_net_defs.h"
#include "vnet_dev.h"
#include "xdp_frames.h"

#define XDP_FRAME 4096u	     /* UMEM frame: a page, the largest copy mode takes everywhere */
#define XDP_RX_PER_Q 512u    /* RX frames (and FILL / RX ring entries) of each socket */
#define XDP_TX_FRAMES 512u   /* TX frames of the port (TX and COMPLETION ring entries) */
#define XDP_RX_BATCH 64u     /* descriptors per EPOLLIN event, like the tap's reads */
#define XDP_TX_KICK 32u	     /* copy mode sends 32 descriptors per sendto() by default */
#define XDP_TX_KICK_MAX 256u /* with XDP_MAX_TX_SKB_BUDGET (Linux >= 6.17): one guest budget */
#ifndef XDP_MAX_TX_SKB_BUDGET
#define XDP_MAX_TX_SKB_BUDGET 9 /* uapi linux/if_xdp.h of Linux 6.17 */
#endif
#define XDP_KICK_TRIES 16u   /* sendto()s one flush makes while the kernel says EAGAIN */
#define XDP_BIND_TRIES 10u   /* a queue closed < 1 s ago is EBUSY: 10 tries, 200 ms apart */
#define XDP_ETH_HLEN 14u
#define XDP_MAGIC 0x78647031u /* "xdp1" */

/* One AF_XDP socket: NIC queue (queue + index), its RX ring and its own FILL/COMPLETION pair. */
struct xdp_sock_q {
	struct xsk_socket *xsk;
	struct xsk_ring_cons rx;
	struct xsk_ring_prod fill;
	struct xsk_ring_cons comp;
	int fd;
	uint32_t events;    /* what the owner has the fd registered for now */
	uint64_t rx_frames; /* frames taken from the RX ring (logged at close) */
};

/* The private side of a struct vnet_backend handed out by xdp_backend_open(). */
struct xdp_backend {
	uint32_t magic;
	char name[IFNAMSIZ];
	int ifindex;
	unsigned queue; /* the first NIC queue */
	unsigned nq;	/* sockets: NIC queues queue .. queue + nq - 1 */
	struct vnet_dev *dev;
	const struct xdp_owner_ops *owner;
	void *owner_ctx;
	int map_fd, prog_fd, link_fd; /* the XSKMAP, the program, its link (closing detaches) */
	uint8_t *area;		      /* the UMEM */
	struct xdp_umem_layout lay;
	struct xdp_frames frames; /* free TX frames */
	struct xsk_umem *umem;
	struct xsk_ring_prod tx; /* on socket 0: guest TX goes out on the first queue */
	uint32_t tx_pending;	 /* descriptors reserved and filled, not yet submitted */
	uint32_t tx_kick;	 /* kick at this many pending: what one sendto() sends */
	bool zero_copy;
	bool tx_blocked; /* a transmit got EAGAIN: EPOLLOUT is on for socket 0 */
	bool rx_nobufs;	 /* the guest has no RX buffers: EPOLLIN off, descriptors wait */
	bool flush_asked;
	bool down; /* the last kick found the interface down (logged once) */
	bool failed;
	uint64_t bad_descs; /* descriptors the kernel handed back that are not ours (ignored) */
	uint64_t tx_frames; /* guest frames put on the TX ring (logged at close) */
	struct xdp_sock_q q[XDP_PORT_MAX_QUEUES];
	uint64_t recycle[XDP_RX_BATCH];
};

static struct xdp_backend *xdp_of(struct vnet_backend *be)
{
	struct xdp_backend *x = (struct xdp_backend *)be;

	assert(x && x->magic == XDP_MAGIC);
	return x;
}

static const struct xdp_backend *xdp_of_const(const struct vnet_backend *be)
{
	const struct xdp_backend *x = (const struct xdp_backend *)be;

	assert(x && x->magic == XDP_MAGIC);
	return x;
}

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
 * Send one guest packet: copy it into a free TX frame (the one copy), fill a TX descriptor.
 * Descriptors are submitted and the kernel kicked per XDP_TX_KICK, and at the end of the round
 * (xdp_backend_flush()). See struct vnet_backend_ops.
 */
static int xdp_transmit(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
			const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame_len)
{
	struct xdp_backend *x = xdp_of(be);
	uint64_t addr = 0;
	uint32_t idx = 0;

	(void)hdr; /* no offloads offered: nothing in it to honour */
	if (x->failed)
		return -ENODEV;
	if (frame_len > XDP_PORT_MAX_FRAME || frame_len < XDP_ETH_HLEN) {
		log_guest("xdp %s: dropped a guest frame of %zu bytes (%u..%u)", x->name, frame_len,
			  XDP_ETH_HLEN, XDP_PORT_MAX_FRAME);
		return -EMSGSIZE;
	}
	if (x->down) {
		xdp_kick(x, 1); /* is it up again? */
		if (x->down)
			return -ENETDOWN;
	}
	if (!x->frames.n)
		xdp_reap(x);
	/* Reserved one at a time, submitted per batch: the producer moves once per kick. */
	if (!x->frames.n || xsk_ring_prod__reserve(&x->tx, 1, &idx) != 1) {
		xdp_kick(x, XDP_KICK_TRIES);
		if (x->failed)
			return -ENODEV;
		if (!x->frames.n || xsk_ring_prod__reserve(&x->tx, 1, &idx) != 1) {
			x->tx_blocked = true;
			xdp_update_events(x);
			return -EAGAIN;
		}
	}
	(void)xdp_frames_get(&x->frames, &addr, 1);
	(void)iov_copy_from(iov, iovcnt, off, x->area + addr, frame_len);
	xsk_ring_prod__tx_desc(&x->tx, idx)->addr = addr;
	xsk_ring_prod__tx_desc(&x->tx, idx)->len = (uint32_t)frame_len;
	xsk_ring_prod__tx_desc(&x->tx, idx)->options = 0;
	x->tx_frames++;
	if (++x->tx_pending >= x->tx_kick)
		xdp_kick(x, 1);
	else
		xdp_want_flush(x);
	return 0;
}

/* No offloads: the guest gets and sends only whole, checksummed frames. */
static void xdp_set_offloads(struct vnet_backend *be, uint64_t guest_features)
{
	(void)be;
	(void)guest_features;
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
	.offload_features = 0,
	.transmit = xdp_transmit,
	.set_offloads = xdp_set_offloads,
	.rx_resume = xdp_rx_resume,
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

/* ---- Set-up (main thread, before the sandbox) ---- */

/* Why a bpf() call failed, for the error line. */
static const char *xdp_bpf_hint(int err)
{
	switch (err) {
	case EPERM:
	case EACCES:
		return " (needs CAP_BPF and CAP_NET_ADMIN, or CAP_SYS_ADMIN)";
	case ENOSYS:
		return " (the kernel has no bpf(): CONFIG_BPF_SYSCALL)";
	case EINVAL:
		return " (the kernel has no XSKMAP: CONFIG_XDP_SOCKETS, Linux >= 5.3)";
	default:
		return "";
	}
}

/*
 * The XDP program, as instructions (no object file, no bpffs): redirect the packet to the
 * socket of its RX queue in the XSKMAP, or pass it to the stack when that queue has none.
 *   r2 = ctx->rx_queue_index; r1 = &xsks; r3 = XDP_PASS; return bpf_redirect_map(r1, r2, r3)
 */
static int xdp_load_prog(struct xdp_backend *x)
{
	struct bpf_insn insns[] = {
		{.code = BPF_LDX | BPF_MEM | BPF_W, .dst_reg = BPF_REG_2, .src_reg = BPF_REG_1,
		 .off = offsetof(struct xdp_md, rx_queue_index)},
		{.code = BPF_LD | BPF_DW | BPF_IMM, .dst_reg = BPF_REG_1,
		 .src_reg = BPF_PSEUDO_MAP_FD}, /* .imm: the map's fd, below */
		{0},
		{.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_3, .imm = XDP_PASS},
		{.code = BPF_JMP | BPF_CALL, .imm = BPF_FUNC_redirect_map},
		{.code = BPF_JMP | BPF_EXIT},
	};
	char vlog[1024] = "";
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .log_buf = vlog, .log_size = sizeof(vlog),
		    .log_level = 1);

	x->map_fd = bpf_map_create(BPF_MAP_TYPE_XSKMAP, "vnetd_xsks", sizeof(uint32_t),
				   sizeof(uint32_t), x->queue + x->nq, NULL);
	if (x->map_fd < 0) {
		int err = errno;

		log_err("xdp %s: cannot create the XSKMAP (bpf): %s%s", x->name, strerror(err),
			xdp_bpf_hint(err));
		return -1;
	}
	insns[1].imm = x->map_fd;
	x->prog_fd = bpf_prog_load(BPF_PROG_TYPE_XDP, "vnetd_xsk", "Dual MIT/GPL", insns,
				   sizeof(insns) / sizeof(insns[0]), &opts);
	if (x->prog_fd < 0) {
		int err = errno;

		log_err("xdp %s: cannot load the XDP program (bpf): %s%s%s%s", x->name,
			strerror(err), xdp_bpf_hint(err), vlog[0] ? "; verifier: " : "", vlog);
		return -1;
	}
	return 0;
}

/* Attach the program by a BPF link: closing link_fd (or the process dying) detaches it. */
static int xdp_attach(struct xdp_backend *x)
{
	x->link_fd = bpf_link_create(x->prog_fd, x->ifindex, BPF_XDP, NULL);
	if (x->link_fd >= 0)
		return 0;
	switch (errno) {
	case EBUSY:
	case EEXIST:
		log_err("xdp %s: the interface already has an XDP program (see `ip link show "
			"dev %s`; remove it with `ip link set dev %s xdp off`)",
			x->name, x->name, x->name);
		break;
	case EPERM:
	case EACCES:
		log_err("xdp %s: cannot attach the XDP program: %s (needs CAP_NET_ADMIN and "
			"CAP_BPF)", x->name, strerror(errno));
		break;
	case EINVAL:
		log_err("xdp %s: cannot attach the XDP program: %s (XDP links need Linux >= 5.9)",
			x->name, strerror(errno));
		break;
	default:
		log_err("xdp %s: cannot attach the XDP program: %s (the driver refused it)",
			x->name, strerror(errno));
		break;
	}
	return -1;
}

/* Why xsk_umem__create() failed (it creates the first socket and registers the UMEM). */
static const char *xdp_umem_hint(int err)
{
	switch (err) {
	case EAFNOSUPPORT:
		return " (the kernel has no AF_XDP: CONFIG_XDP_SOCKETS)";
	case EPERM:
		return " (AF_XDP sockets need CAP_NET_RAW)";
	case ENOBUFS:
	case ENOMEM:
		return " (the UMEM is pinned memory: raise RLIMIT_MEMLOCK or give CAP_IPC_LOCK)";
	default:
		return "";
	}
}

/* Why a socket could not bind to its queue. */
static const char *xdp_bind_hint(int err)
{
	switch (err) {
	case EINVAL:
		return " (no such queue? `ethtool -l` shows the channels; or the MTU is above "
		       "what XDP takes on this driver)";
	case EBUSY:
		return " (another AF_XDP socket holds the queue)";
	case EOPNOTSUPP:
		return " (the driver refuses AF_XDP on this queue)";
	default:
		return "";
	}
}

/*
 * The UMEM and socket 0, zero-copy or copy mode. 0, or -errno of the bind (the UMEM is gone
 * again), or 1: the UMEM itself failed (logged).
 */
static int xdp_create_first(struct xdp_backend *x, bool zero_copy)
{
	const struct xsk_umem_config ucfg = {
		.fill_size = XDP_RX_PER_Q,
		.comp_size = XDP_TX_FRAMES,
		.frame_size = XDP_FRAME,
		.frame_headroom = 0,
		.flags = 0,
	};
	struct xsk_socket_config scfg = {
		.rx_size = XDP_RX_PER_Q,
		.tx_size = XDP_TX_FRAMES,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD, /* our own program */
		.bind_flags = (uint16_t)((zero_copy ? XDP_ZEROCOPY : XDP_COPY) |
					 XDP_USE_NEED_WAKEUP),
	};
	int ret = xsk_umem__create(&x->umem, x->area, x->lay.size, &x->q[0].fill, &x->q[0].comp,
				   &ucfg);

	if (ret) {
		x->umem = NULL;
		log_err("xdp %s: cannot create the UMEM (%llu KiB): %s%s", x->name,
			(unsigned long long)(x->lay.size >> 10), strerror(-ret), xdp_umem_hint(-ret));
		return 1;
	}
	for (unsigned t = 0;; t++) {
		ret = xsk_socket__create(&x->q[0].xsk, x->name, x->queue, x->umem, &x->q[0].rx,
					 &x->tx, &scfg);
		if (ret != -EBUSY || t + 1 >= XDP_BIND_TRIES)
			break;
		nanosleep(&(struct timespec){.tv_nsec = 200000000}, NULL);
	}
	if (ret) {
		/* A new UMEM for the next try: libxdp's failed bind leaves its rings set up. */
		x->q[0].xsk = NULL;
		(void)xsk_umem__delete(x->umem);
		x->umem = NULL;
	}
	return ret;
}

/* Sockets 1 .. nq-1 on the next queues, sharing the UMEM with their own FILL/COMPLETION. */
static int xdp_create_shared(struct xdp_backend *x, unsigned i)
{
	const struct xsk_socket_config scfg = {
		.rx_size = XDP_RX_PER_Q,
		.tx_size = 0,
		.libxdp_flags = XSK_LIBXDP_FLAGS__INHIBIT_PROG_LOAD,
		.bind_flags = XDP_USE_NEED_WAKEUP, /* libxdp binds it XDP_SHARED_UMEM */
	};
	int ret = -EBUSY;

	for (unsigned t = 0; ret == -EBUSY && t < XDP_BIND_TRIES; t++) {
		if (t)
			nanosleep(&(struct timespec){.tv_nsec = 200000000}, NULL);
		ret = xsk_socket__create_shared(&x->q[i].xsk, x->name, x->queue + i, x->umem,
						&x->q[i].rx, NULL, &x->q[i].fill, &x->q[i].comp,
						&scfg);
	}
	if (ret) {
		x->q[i].xsk = NULL;
		log_err("xdp %s: cannot bind an AF_XDP socket to queue %u: %s%s", x->name,
			x->queue + i, strerror(-ret), xdp_bind_hint(-ret));
	}
	return ret;
}

/* Every socket: created, in the XSKMAP, its FILL ring full of its RX frames. */
static int xdp_create_sockets(struct xdp_backend *x)
{
	int ret = xdp_create_first(x, true);

	if (ret > 0)
		return -1;
	if (ret == 0) {
		x->zero_copy = true;
		log_info("xdp %s: zero-copy mode", x->name);
	} else {
		log_info("xdp %s: queue %u: %s (%s); copy mode", x->name, x->queue,
			 ret == -EOPNOTSUPP ? "no zero-copy" : "zero-copy bind refused",
			 strerror(-ret));
		ret = xdp_create_first(x, false);
		if (ret > 0)
			return -1;
		if (ret < 0) {
			log_err("xdp %s: cannot bind an AF_XDP socket to queue %u: %s%s", x->name,
				x->queue, strerror(-ret), xdp_bind_hint(-ret));
			return -1;
		}
	}
	/* Copy mode: one sendto() may send a whole guest budget, not 32 (Linux >= 6.17). */
	x->tx_kick = XDP_TX_KICK;
	if (!x->zero_copy && setsockopt(xsk_socket__fd(x->q[0].xsk), SOL_XDP, XDP_MAX_TX_SKB_BUDGET,
					&(int){XDP_TX_KICK_MAX}, sizeof(int)) == 0)
		x->tx_kick = XDP_TX_KICK_MAX;
	for (unsigned i = 1; i < x->nq; i++)
		if (xdp_create_shared(x, i) < 0)
			return -1;
	for (unsigned i = 0; i < x->nq; i++) {
		uint32_t key = x->queue + i;
		uint32_t idx = 0;

		x->q[i].fd = xsk_socket__fd(x->q[i].xsk);
		x->q[i].events = EPOLLIN; /* how the owner registers the fd */
		if (bpf_map_update_elem(x->map_fd, &key, &x->q[i].fd, 0) < 0) {
			log_err("xdp %s: cannot put the socket of queue %u in the XSKMAP: %s",
				x->name, key, strerror(errno));
			return -1;
		}
		if (xsk_ring_prod__reserve(&x->q[i].fill, XDP_RX_PER_Q, &idx) != XDP_RX_PER_Q) {
			log_err("xdp %s: the FILL ring of queue %u is short", x->name, key);
			return -1;
		}
		for (uint32_t f = 0; f < XDP_RX_PER_Q; f++)
			*xsk_ring_prod__fill_addr(&x->q[i].fill, idx + f) =
				xdp_rx_frame(&x->lay, i, f);
		xsk_ring_prod__submit(&x->q[i].fill, XDP_RX_PER_Q);
	}
	return 0;
}

/* Whether a seccomp filter is on (prctl itself may be refused by it: then it is too). */
static bool xdp_sandboxed(void)
{
	return prctl(PR_GET_SECCOMP, 0, 0, 0, 0) != 0;
}

/**
 * xdp_backend_open() - attach AF_XDP sockets to NIC queues of an interface.
 * @ifname: the interface (it must exist)
 * @queue: the first NIC queue
 * @nq: how many queues, from queue on (the port's queue pairs), 1..XDP_PORT_MAX_QUEUES
 * @dev: where received packets go; must outlive the backend
 * @owner: what the backend needs from its owner (struct xdp_owner_ops)
 * @owner_ctx: passed to @owner's calls
 *
 * Loads a one-line XDP program (redirect queue i to its socket, else XDP_PASS) and attaches it
 * through a BPF link, creates one UMEM (4 KiB frames) shared by the sockets, each bound in
 * zero-copy mode when the driver allows it, else in copy mode (logged). Main thread, before
 * the sandbox: it needs bpf(), AF_XDP sockets and CAP_NET_ADMIN / CAP_NET_RAW / CAP_BPF.
 *
 * Return: the backend, or NULL (logged with the interface's name and the likely cause).
 */
struct vnet_backend *xdp_backend_open(const char *ifname, unsigned queue, unsigned nq,
				      struct vnet_dev *dev, const struct xdp_owner_ops *owner,
				      void *owner_ctx)
{
	struct xdp_backend *x;

	assert(dev);
	if (!ifname || !ifname[0] || strlen(ifname) >= IFNAMSIZ || !nq ||
	    nq > XDP_PORT_MAX_QUEUES || queue > 4096) {
		log_err("xdp \"%s\": bad interface name or queues", ifname ? ifname : "");
		return NULL;
	}
	if (xdp_sandboxed()) {
		log_err("xdp %s: AF_XDP ports are set up before the sandbox (it forbids bpf() and "
			"AF_XDP sockets): give the port at start-up (--port or --config), or run "
			"vnetd with --no-sandbox", ifname);
		return NULL;
	}
	x = calloc(1, sizeof(*x));
	if (!x) {
		log_err("xdp %s: out of memory", ifname);
		return NULL;
	}
	x->magic = XDP_MAGIC;
	memcpy(x->name, ifname, strlen(ifname) + 1);
	x->queue = queue;
	x->nq = nq;
	x->dev = dev;
	x->owner = owner;
	x->owner_ctx = owner_ctx;
	x->map_fd = x->prog_fd = x->link_fd = -1;
	for (unsigned i = 0; i < XDP_PORT_MAX_QUEUES; i++)
		x->q[i].fd = -1;
	x->area = MAP_FAILED;
	x->ifindex = (int)if_nametoindex(ifname);
	if (!x->ifindex) {
		log_err("xdp %s: no such interface (%s)", ifname, strerror(errno));
		goto fail;
	}
	if (xdp_umem_layout_init(&x->lay, nq, XDP_FRAME, XDP_RX_PER_Q, XDP_TX_FRAMES) < 0 ||
	    xdp_frames_init(&x->frames, XDP_TX_FRAMES) < 0) {
		log_err("xdp %s: out of memory", ifname);
		goto fail;
	}
	xdp_frames_fill(&x->frames, &x->lay);
	x->area = mmap(NULL, x->lay.size, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
	if (x->area == MAP_FAILED) {
		log_err("xdp %s: cannot map the UMEM: %s", ifname, strerror(errno));
		goto fail;
	}
	if (xdp_load_prog(x) < 0 || xdp_attach(x) < 0 || xdp_create_sockets(x) < 0)
		goto fail;
	log_info("xdp %s: attached, queues %u..%u, %s mode, UMEM %llu KiB, TX kick per %u", x->name,
		 queue, queue + nq - 1, x->zero_copy ? "zero-copy" : "copy",
		 (unsigned long long)(x->lay.size >> 10), x->tx_kick);
	return (struct vnet_backend *)x;
fail:
	xdp_backend_close((struct vnet_backend *)x);
	return NULL;
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

/**
 * xdp_backend_close() - detach the program, close the sockets, free the UMEM and the backend.
 * @be: the backend, or NULL; the owner unregisters the fds first
 *
 * Closing the link detaches the XDP program from the interface (nothing stays attached);
 * closing a socket takes it out of the XSKMAP. Only close() and munmap() (and the
 * getsockopt(SOL_XDP) libxdp makes to size its unmaps): safe inside the sandbox. Main thread.
 */
void xdp_backend_close(struct vnet_backend *be)
{
	struct xdp_backend *x;

	if (!be)
		return;
	x = xdp_of(be);
	if (x->link_fd >= 0) {
		char rx[XDP_PORT_MAX_QUEUES * 22] = "";
		size_t n = 0;

		for (unsigned i = 0; i < x->nq && n < sizeof(rx); i++)
			n += (size_t)snprintf(rx + n, sizeof(rx) - n, "%s%llu", i ? ", " : "",
					      (unsigned long long)x->q[i].rx_frames);
		log_info("xdp %s: detached; frames received per queue: %s; sent: %llu; bad "
			 "descriptors: %llu", x->name, rx, (unsigned long long)x->tx_frames,
			 (unsigned long long)x->bad_descs);
		close(x->link_fd);
	}
	for (unsigned i = x->nq; i-- > 0;)
		if (x->q[i].xsk)
			xsk_socket__delete(x->q[i].xsk);
	if (x->umem)
		(void)xsk_umem__delete(x->umem);
	if (x->prog_fd >= 0)
		close(x->prog_fd);
	if (x->map_fd >= 0)
		close(x->map_fd);
	if (x->area != MAP_FAILED)
		munmap(x->area, x->lay.size);
	xdp_frames_free(&x->frames);
	x->magic = 0;
	free(x);
}

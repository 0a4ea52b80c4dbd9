/* SPDX-License-Identifier: MIT */
/* xdp_open.c - an AF_XDP port's set-up and teardown: XDP program, BPF link, UMEM, sockets. */
#include "backend/xdp/xdp.h"

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

#include "lib/log.h"
#include "backend/xdp/xdp_frames.h"
#include "backend/xdp/xdp_internal.h"

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
	xdp_soft_free(x);
	x->magic = 0;
	free(x);
}

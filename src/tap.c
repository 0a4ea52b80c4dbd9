/* SPDX-License-Identifier: MIT */
/* tap.c - tap backend: guest packets to and from a Linux tap interface with IFF_VNET_HDR. */
#include "tap.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/if_tun.h>
#include <net/if.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/uio.h>
#include <unistd.h>

#include "iov.h"
#include "log.h"
#include "virtio_net_defs.h"
#include "vnet_dev.h"

#define TAP_HDR_LEN sizeof(struct virtio_net_hdr_v1)
#define TAP_ETH_HLEN 14
/* Largest GSO packet the kernel hands us, with our header, an Ethernet header and a VLAN tag. */
#define TAP_BUF_SIZE (65536 + TAP_HDR_LEN + TAP_ETH_HLEN + 4)
#define TAP_TX_IOV 1025 /* a header + a chain's iovecs (VQ_MAX_CHAIN) */
/* Packets read per EPOLLIN event: other fds get their turn, level-triggered epoll calls again. */
#define TAP_RX_BATCH 64
#define TAP_MAGIC 0x74617031u /* "tap1": catches a switch handle passed to the tap */

/* The private side of a struct vnet_backend handed out by tap_backend_open(). */
struct tap_backend {
	uint32_t magic;
	int fd;
	char name[IFNAMSIZ];
	struct vnet_dev *dev;
	const struct tap_owner_ops *owner;
	void *owner_ctx;
	uint32_t events;	 /* what the owner has the fd registered for now */
	bool tx_blocked;	 /* a transmit got EAGAIN: EPOLLOUT is on */
	bool failed;		 /* the interface is gone: no more I/O */
	bool down;		 /* the last transmit found the interface down (logged once) */
	size_t rx_pending;	 /* length of the packet waiting in rx_buf for guest buffers */
	bool rx_nobufs;		 /* the guest has no RX buffers: leave packets in the kernel */
	uint8_t rx_buf[TAP_BUF_SIZE];
	struct iovec tx_iov[TAP_TX_IOV]; /* header, then the frame's pieces in guest memory */
	/* A trunk (tap_backend_set_trunk()): tagged frames read go to trunk->rx(), not the guest. */
	const struct tap_trunk_ops *trunk;
	void *trunk_ctx;
	uint8_t tag_head[16]; /* tap_backend_send_tagged(): the MACs and the 802.1Q tag */
};

static struct tap_backend *tap_of(struct vnet_backend *be)
{
	struct tap_backend *t = (struct tap_backend *)be;

	assert(t && t->magic == TAP_MAGIC);
	return t;
}

static const struct tap_backend *tap_of_const(const struct vnet_backend *be)
{
	const struct tap_backend *t = (const struct tap_backend *)be;

	assert(t && t->magic == TAP_MAGIC);
	return t;
}

/* Tell the owner which events we want, if that changed: EPOLLIN unless a packet waits. */
static void tap_update_events(struct tap_backend *t)
{
	uint32_t want = 0;

	if (!t->failed) {
		if (!t->rx_pending && !t->rx_nobufs)
			want |= EPOLLIN;
		if (t->tx_blocked)
			want |= EPOLLOUT;
	}
	if (want == t->events)
		return;
	t->events = want;
	if (t->owner && t->owner->set_events)
		t->owner->set_events(t->owner_ctx, t->fd, want);
}

/* The interface was deleted under us: stop all I/O and tell the owner, once. */
static void tap_fail(struct tap_backend *t, const char *why)
{
	if (t->failed)
		return;
	t->failed = true;
	log_err("tap %s: the interface is gone (%s); the port has no network now", t->name, why);
	tap_update_events(t);
	if (t->owner && t->owner->failed)
		t->owner->failed(t->owner_ctx, t->fd);
}

/* Hand the packet in rx_buf to the guest (the device sets num_buffers and the flags it may see). */
static int tap_deliver(struct tap_backend *t, size_t len)
{
	struct iovec iov = {.iov_base = t->rx_buf, .iov_len = len};

	return vnet_dev_receive(t->dev, &iov, 1);
}

/* read(), retried on EINTR; handles the errors every read path shares. -1: stop reading now. */
static ssize_t tap_read(struct tap_backend *t, const struct iovec *iov, int iovcnt)
{
	ssize_t n;

	do
		n = readv(t->fd, iov, iovcnt);
	while (n < 0 && errno == EINTR);
	if (n >= 0)
		return n;
	if (errno == EBADFD)
		tap_fail(t, "read: EBADFD");
	else if (errno == EFAULT && t->owner && t->owner->guest_fault)
		t->owner->guest_fault(t->owner_ctx); /* guest memory went away under the readv */
	else if (errno != EAGAIN)
		log_guest("tap %s: read: %s", t->name, strerror(errno));
	return -1;
}

/*
 * One packet through rx_buf (legacy header, several queue pairs, or too few guest buffers for
 * the largest packet): two copies, but the device places it into whatever buffers it needs.
 * False: stop reading.
 */
static bool tap_rx_copy(struct tap_backend *t, size_t *bytes)
{
	struct iovec iov = {.iov_base = t->rx_buf, .iov_len = sizeof(t->rx_buf)};
	ssize_t n = tap_read(t, &iov, 1);

	if (n < 0)
		return false;
	*bytes += (size_t)n;
	if ((size_t)n < TAP_HDR_LEN + TAP_ETH_HLEN)
		return true; /* nothing a guest could use */
	if (tap_deliver(t, (size_t)n) == 0) {
		t->rx_pending = (size_t)n;
		tap_update_events(t);
		return false;
	}
	return true;
}

/*
 * A trunk's batch: every packet through rx_buf, so its tag is seen before it goes anywhere. A
 * VLAN-tagged frame (802.1Q, 802.1ad, 0x9100) goes to the trunk's owner, untagged ones to the
 * guest (one more copy than tap_rx(), for trunk ports only), or are dropped when it has no
 * buffers (or no frontend): the trunk's VLANs never wait for the port's own guest.
 */
static __attribute__((noinline)) void tap_rx_trunk(struct tap_backend *t)
{
	size_t bytes = 0;

	for (unsigned i = 0; i < TAP_RX_BATCH && bytes < VNET_BUDGET_BYTES && !t->rx_pending &&
			     !t->failed;
	     i++) {
		struct iovec iov = {.iov_base = t->rx_buf, .iov_len = sizeof(t->rx_buf)};
		ssize_t n = tap_read(t, &iov, 1);
		const uint8_t *et = t->rx_buf + TAP_HDR_LEN + 12;
		unsigned type;

		if (n < 0)
			return;
		bytes += (size_t)n;
		if ((size_t)n < TAP_HDR_LEN + TAP_ETH_HLEN)
			continue; /* nothing anyone could use */
		type = (unsigned)et[0] << 8 | et[1];
		if (type == 0x8100 || type == 0x88a8 || type == 0x9100) {
			t->trunk->rx(t->trunk_ctx, t->rx_buf + TAP_HDR_LEN,
				     (size_t)n - TAP_HDR_LEN);
			continue;
		}
		/* No buffers: dropped, not waited for (the VLANs must not stall behind the guest). */
		(void)tap_deliver(t, (size_t)n);
	}
}

/*
 * Read a bounded batch of packets (TAP_RX_BATCH, VNET_BUDGET_BYTES) into the guest, each with
 * one readv straight into guest RX buffers the device reserved (one copy, done by the kernel).
 * With no guest buffers the packets stay in the kernel until rx_resume(). Level-triggered
 * epoll reports the rest on the next round.
 */
static void tap_rx(struct tap_backend *t)
{
	size_t bytes = 0;

	if (t->trunk) {
		tap_rx_trunk(t);
		return;
	}

	for (unsigned i = 0; i < TAP_RX_BATCH && bytes < VNET_BUDGET_BYTES && !t->rx_pending &&
			     !t->failed;
	     i++) {
		const struct iovec *iov;
		int niov = vnet_dev_rx_reserve(t->dev, 0, &iov);
		ssize_t n;

		if (niov == 0) {
			t->rx_nobufs = true;
			tap_update_events(t);
			return;
		}
		if (niov < 0) {
			if (!tap_rx_copy(t, &bytes))
				return;
			continue;
		}
		n = tap_read(t, iov, niov);
		if (n < 0)
			return; /* EAGAIN: the reservation waits for the next packet */
		bytes += (size_t)n;
		vnet_dev_rx_commit(t->dev, (size_t)n);
	}
}

/*
 * tx_iov = the header, then the frame's pieces (frame_len bytes at byte off of iov). Always
 * inlined: a guest's transmit pays no call for it (tap_backend_send_tagged() has its own copy).
 */
static inline __attribute__((always_inline)) unsigned
tap_tx_iov(struct tap_backend *t, const struct virtio_net_hdr_v1 *hdr, const struct iovec *iov,
	   unsigned iovcnt, size_t off, size_t frame_len)
{
	unsigned n = 0;

	t->tx_iov[n].iov_base = (void *)(uintptr_t)hdr;
	t->tx_iov[n++].iov_len = sizeof(*hdr);
	for (unsigned i = 0; i < iovcnt && frame_len; i++) {
		size_t take;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		if (n == TAP_TX_IOV)
			return 0;
		take = iov[i].iov_len - off < frame_len ? iov[i].iov_len - off : frame_len;
		t->tx_iov[n].iov_base = (uint8_t *)iov[i].iov_base + off;
		t->tx_iov[n++].iov_len = take;
		frame_len -= take;
		off = 0;
	}
	return n;
}

/* Send one guest packet to the tap (header first); see struct vnet_backend_ops. */
static int tap_transmit(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
			const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame_len)
{
	struct tap_backend *t = tap_of(be);
	unsigned cnt;
	ssize_t n;
	int err;

	if (t->failed)
		return -ENODEV;
	cnt = tap_tx_iov(t, hdr, iov, iovcnt, off, frame_len);
	if (!cnt || cnt > IOV_MAX) {
		log_guest("tap %s: dropped a guest packet of more than %d segments", t->name,
			  IOV_MAX - 1);
		return -EMSGSIZE;
	}
	/* GCC 12 with sanitizers misjudges tx_iov's size here (a false -Wstringop-overread). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
#endif
	do
		n = writev(t->fd, t->tx_iov, (int)cnt);
	while (n < 0 && errno == EINTR);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
	if (n >= 0) {
		if (t->down)
			log_info("tap %s: is up again, sending guest packets", t->name);
		t->down = false;
		return 0;
	}
	err = errno;
	switch (err) {
	case EAGAIN:
		t->tx_blocked = true;
		tap_update_events(t);
		return -EAGAIN;
	case EIO: /* the interface is down: expected for a while, say so once */
		if (!t->down)
			log_warn("tap %s: is down, dropping guest packets until it is up", t->name);
		t->down = true;
		break;
	case EBADFD:
		tap_fail(t, "write: EBADFD");
		break;
	default: /* e.g. EINVAL for a header the kernel rejects */
		log_guest("tap %s: dropped a guest packet: %s", t->name, strerror(err));
		break;
	}
	return -err;
}

/* Map the guest's receive offloads to the tap's, the way QEMU's tap_fd_set_offload() does. */
static unsigned long tap_offload_flags(uint64_t features)
{
	unsigned long offload = 0;

	/* Without GUEST_CSUM the guest needs checksummed packets, so no segmentation either. */
	if (!(features & BIT_ULL(VIRTIO_NET_F_GUEST_CSUM)))
		return 0;
	offload |= TUN_F_CSUM;
	if (features & BIT_ULL(VIRTIO_NET_F_GUEST_TSO4))
		offload |= TUN_F_TSO4;
	if (features & BIT_ULL(VIRTIO_NET_F_GUEST_TSO6))
		offload |= TUN_F_TSO6;
	if ((offload & (TUN_F_TSO4 | TUN_F_TSO6)) && (features & BIT_ULL(VIRTIO_NET_F_GUEST_ECN)))
		offload |= TUN_F_TSO_ECN;
	return offload;
}

/* The guest's receive offloads changed: let the kernel send what the guest accepts. */
static void tap_set_offloads(struct vnet_backend *be, uint64_t guest_features)
{
	struct tap_backend *t = tap_of(be);
	unsigned long offload = tap_offload_flags(guest_features);

	if (t->failed || ioctl(t->fd, TUNSETOFFLOAD, offload) == 0)
		return;
	log_warn("tap %s: TUNSETOFFLOAD 0x%lx: %s; receive offloads off", t->name, offload,
		 strerror(errno));
	/* The old setting may offer more than the guest takes now: fall back to none. */
	if (ioctl(t->fd, TUNSETOFFLOAD, 0ul) < 0)
		log_err("tap %s: TUNSETOFFLOAD 0: %s", t->name, strerror(errno));
}

/*
 * The guest posted receive buffers: deliver the waiting packet, then read the tap again (the
 * event loop's next EPOLLIN: reads there are bounded per event).
 */
static bool tap_rx_resume(struct vnet_backend *be)
{
	struct tap_backend *t = tap_of(be);

	if (t->failed)
		return false;
	if (t->rx_nobufs) {
		t->rx_nobufs = false; /* the guest posted buffers: read the kernel's queue again */
		tap_update_events(t);
	}
	if (!t->rx_pending)
		return false;
	if (tap_deliver(t, t->rx_pending) == 0)
		return false; /* still no room: wait for the next rx_resume() */
	t->rx_pending = 0;
	tap_update_events(t);
	return false;
}

/**
 * tap_backend_set_trunk() - make the tap a trunk: tagged frames read go to ops->rx().
 * @be: the tap's handle
 * @ops: where VLAN-tagged frames read from the tap go (NULL: none, a plain tap again)
 * @ctx: its context
 *
 * Untagged frames still go to the port's guest. Before the first read (port_create()).
 */
void tap_backend_set_trunk(struct vnet_backend *be, const struct tap_trunk_ops *ops, void *ctx)
{
	struct tap_backend *t = tap_of(be);

	t->trunk = ops;
	t->trunk_ctx = ctx;
}

/**
 * tap_backend_send_tagged() - write a frame to the tap with an 802.1Q tag inserted.
 * @be: the tap's handle
 * @vid: the VLAN ID (1..4094), priority 0
 * @iov: the frame: len bytes from byte off of iov (len >= 14)
 * @iovcnt: iov's entries
 * @off: where the frame starts
 * @len: its length, untagged
 *
 * One writev: a zeroed header, the MACs and tag (copied), the rest of the frame in place.
 * Never blocks: a full tap drops the frame. On the port's worker's thread, not inside the
 * tap's own transmit (it shares tx_iov).
 *
 * Return: 0 sent, or a negative errno (dropped).
 */
int tap_backend_send_tagged(struct vnet_backend *be, uint16_t vid, const struct iovec *iov,
			    unsigned iovcnt, size_t off, size_t len)
{
	static const struct virtio_net_hdr_v1 hdr;
	struct tap_backend *t = tap_of(be);
	struct iovec v[TAP_TX_IOV + 1]; /* the header, the tag, then the frame's pieces */
	unsigned cnt;
	ssize_t n;

	if (t->failed || len < TAP_ETH_HLEN)
		return -ENODEV;
	(void)iov_copy_from(iov, iovcnt, off, t->tag_head, 12);
	t->tag_head[12] = 0x81;
	t->tag_head[13] = 0x00;
	t->tag_head[14] = (uint8_t)(vid >> 8 & 0x0f);
	t->tag_head[15] = (uint8_t)vid;
	cnt = tap_tx_iov(t, &hdr, iov, iovcnt, off + 12, len - 12);
	if (!cnt || cnt + 1 > IOV_MAX)
		return -EMSGSIZE;
	v[0] = t->tx_iov[0];
	v[1] = (struct iovec){.iov_base = t->tag_head, .iov_len = sizeof(t->tag_head)};
	for (unsigned i = 1; i < cnt; i++)
		v[i + 1] = t->tx_iov[i];
	do
		n = writev(t->fd, v, (int)cnt + 1);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : 0;
}

/* tap_backend_ops - the ops table the device model calls. */
const struct vnet_backend_ops tap_backend_ops = {
	.kind = "tap",
	.offload_features = BIT_ULL(VIRTIO_NET_F_CSUM) | BIT_ULL(VIRTIO_NET_F_GUEST_CSUM) |
			    BIT_ULL(VIRTIO_NET_F_GUEST_TSO4) | BIT_ULL(VIRTIO_NET_F_GUEST_TSO6) |
			    BIT_ULL(VIRTIO_NET_F_GUEST_ECN) | BIT_ULL(VIRTIO_NET_F_HOST_TSO4) |
			    BIT_ULL(VIRTIO_NET_F_HOST_TSO6) | BIT_ULL(VIRTIO_NET_F_HOST_ECN),
	.transmit = tap_transmit,
	.set_offloads = tap_set_offloads,
	.rx_resume = tap_rx_resume,
};

/* Why TUNSETIFF may have failed, for the error line. */
static const char *tap_setiff_hint(int err)
{
	switch (err) {
	case EPERM:
		return " (needs CAP_NET_ADMIN, or a persistent tap owned by this user)";
	case EBUSY:
		return " (another process has it open)";
	case EINVAL:
		return " (exists but is not a tap interface?)";
	default:
		return "";
	}
}

/* Attach fd to the tap; persistent multi-queue taps only take IFF_MULTI_QUEUE attaches. */
static int tap_setiff(int fd, const char *ifname, char *actual_name)
{
	static const short flag_sets[] = {IFF_TAP | IFF_NO_PI | IFF_VNET_HDR,
					  IFF_TAP | IFF_NO_PI | IFF_VNET_HDR | IFF_MULTI_QUEUE};
	int first_err = 0;

	for (unsigned i = 0; i < sizeof(flag_sets) / sizeof(flag_sets[0]); i++) {
		struct ifreq ifr;

		memset(&ifr, 0, sizeof(ifr));
		memcpy(ifr.ifr_name, ifname, strlen(ifname));
		ifr.ifr_flags = flag_sets[i];
		if (ioctl(fd, TUNSETIFF, &ifr) == 0) {
			memcpy(actual_name, ifr.ifr_name, IFNAMSIZ);
			actual_name[IFNAMSIZ - 1] = '\0';
			return 0;
		}
		if (!first_err)
			first_err = errno;
		if (errno != EINVAL)
			return -errno;
	}
	return -first_err;
}

static int tun_dir_fd = -1;

/**
 * tap_open_tun_dir() - open /dev/net once (O_PATH), so that later taps are opened relative to it
 * (the sandbox allows run-time taps to open files in that directory only).
 *
 * Main thread, before the sandbox; later calls return the same fd.
 *
 * Return: the fd, or -1 (taps then open /dev/net/tun by path).
 */
int tap_open_tun_dir(void)
{
	if (tun_dir_fd < 0)
		tun_dir_fd = open("/dev/net", O_PATH | O_DIRECTORY | O_CLOEXEC);
	return tun_dir_fd;
}

/**
 * tap_backend_open() - attach to a tap interface, non-blocking, with the 12-byte virtio_net_hdr_v1
 * in front of every packet and its offloads off.
 * @ifname: the interface: created if it does not exist, or an existing persistent tap we may use
 * @dev: where received packets go; must outlive the backend
 * @owner: what the tap needs from its owner (struct tap_owner_ops)
 * @owner_ctx: passed to @owner's calls
 *
 * The interface is not configured or brought up. The owner registers tap_backend_fd() with
 * EPOLLIN right after this call.
 *
 * Return: the backend, or NULL (logged with the interface's name).
 */
struct vnet_backend *tap_backend_open(const char *ifname, struct vnet_dev *dev,
				      const struct tap_owner_ops *owner, void *owner_ctx)
{
	int hdr_len = (int)TAP_HDR_LEN;
	struct tap_backend *t;
	int fd, ret;

	assert(dev);
	if (!ifname || !ifname[0] || strlen(ifname) >= IFNAMSIZ) {
		log_err("tap \"%s\": interface names have 1 to %d characters", ifname ? ifname : "",
			IFNAMSIZ - 1);
		return NULL;
	}
	t = calloc(1, sizeof(*t));
	if (!t) {
		log_err("tap %s: out of memory", ifname);
		return NULL;
	}
	/* Through /dev/net opened at start-up when there is one: the sandbox allows run-time
	 * taps (vnetctl port-add) to open files in that directory only. */
	fd = tun_dir_fd >= 0 ? openat(tun_dir_fd, "tun", TAP_TUN_FLAGS)
			     : open("/dev/net/tun", TAP_TUN_FLAGS);
	if (fd < 0) {
		log_err("tap %s: cannot open /dev/net/tun: %s", ifname, strerror(errno));
		goto fail_free;
	}
	ret = tap_setiff(fd, ifname, t->name);
	if (ret < 0) {
		log_err("tap %s: cannot attach (TUNSETIFF): %s%s", ifname, strerror(-ret),
			tap_setiff_hint(-ret));
		goto fail_close;
	}
	if (ioctl(fd, TUNSETVNETHDRSZ, &hdr_len) < 0) {
		log_err("tap %s: TUNSETVNETHDRSZ %d: %s", t->name, hdr_len, strerror(errno));
		goto fail_close;
	}
#if __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	{
		int le = 1; /* VERSION_1 headers are little-endian */

		if (ioctl(fd, TUNSETVNETLE, &le) < 0) {
			log_err("tap %s: TUNSETVNETLE: %s", t->name, strerror(errno));
			goto fail_close;
		}
	}
#endif
	/* A persistent tap keeps the offloads its previous user set: start from none. */
	if (ioctl(fd, TUNSETOFFLOAD, 0ul) < 0) {
		log_err("tap %s: TUNSETOFFLOAD 0: %s", t->name, strerror(errno));
		goto fail_close;
	}
	t->magic = TAP_MAGIC;
	t->fd = fd;
	t->dev = dev;
	t->owner = owner;
	t->owner_ctx = owner_ctx;
	t->events = EPOLLIN; /* how the owner registers the fd */
	log_info("tap %s: attached", t->name);
	return (struct vnet_backend *)t;

fail_close:
	close(fd);
fail_free:
	free(t);
	return NULL;
}

/**
 * tap_backend_fd() - the tap's fd, for the owner's epoll loop.
 * @be: the tap backend
 *
 * Return: the fd.
 */
int tap_backend_fd(const struct vnet_backend *be)
{
	return tap_of_const(be)->fd;
}

/**
 * tap_backend_name() - the interface's name as the kernel reports it.
 * @be: the tap backend
 *
 * Return: the name, owned by the backend.
 */
const char *tap_backend_name(const struct vnet_backend *be)
{
	return tap_of_const(be)->name;
}

/**
 * tap_backend_handle_events() - handle one epoll report of the tap fd.
 * @be: the tap backend
 * @events: the epoll events
 *
 * EPOLLOUT resumes a blocked transmit; EPOLLIN reads a bounded batch of packets into the guest
 * (level-triggered: the rest comes next round); EPOLLERR means the interface is gone (the owner's
 * failed() is called once). Called on the port's worker.
 */
void tap_backend_handle_events(struct vnet_backend *be, uint32_t events)
{
	struct tap_backend *t = tap_of(be);

	if (t->failed)
		return;
	/* tun reports EPOLLERR only once the interface is unregistered; it stays that way. */
	if (events & (EPOLLERR | EPOLLHUP)) {
		tap_fail(t, "EPOLLERR");
		return;
	}
	if ((events & EPOLLOUT) && t->tx_blocked) {
		/* Clear first: the resumed transmit may block again and set it anew. */
		t->tx_blocked = false;
		vnet_dev_tx_resume(t->dev);
		tap_update_events(t);
	}
	if ((events & EPOLLIN) && !t->rx_pending && !t->rx_nobufs)
		tap_rx(t);
}

/**
 * tap_backend_close() - close the tap fd and free the backend; a packet still waiting is dropped.
 * @be: the tap backend, or NULL; the owner unregisters the fd first
 */
void tap_backend_close(struct vnet_backend *be)
{
	struct tap_backend *t;

	if (!be)
		return;
	t = tap_of(be);
	close(t->fd);
	t->magic = 0;
	free(t);
}

/* SPDX-License-Identifier: MIT */
/* tap.c - tap backend: guest packets to and from a Linux tap interface with IFF_VNET_HDR. */
#include "backend/tap/tap_internal.h"

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

#include "lib/iov.h"
#include "lib/log.h"
#include "lib/stat_atomic.h"
#include "lib/uring_tx.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"

/* Tell the owner which events we want, if that changed: EPOLLIN unless a packet waits. */
static void tap_update_events(struct tap_queue *tq)
{
	const struct tap_backend *t = tq->tap;
	uint32_t want = 0;

	if (!tq->failed) {
		if (!tq->rx_pending && !tq->rx_nobufs)
			want |= EPOLLIN;
		if (tq->tx_blocked)
			want |= EPOLLOUT;
	}
	if (want == tq->events)
		return;
	tq->events = want;
	if (tq->detached)
		return; /* not registered: attaching registers it with these */
	if (t->owner && t->owner->set_events)
		t->owner->set_events(t->owner_ctx, tq->index, tq->fd, want);
}

/*
 * The interface was deleted under us: stop all I/O on every queue (they all go with the
 * interface) and tell the owner, once.
 */
static void tap_fail(struct tap_queue *tq, const char *why)
{
	struct tap_backend *t = tq->tap;

	if (t->failed_told)
		return;
	t->failed_told = true;
	log_err("tap %s: the interface is gone (%s on queue %u); the port has no network now",
		t->name, why, tq->index);
	for (unsigned i = 0; i < t->nq; i++) {
		t->q[i]->failed = true;
		tap_update_events(t->q[i]);
	}
	if (t->owner && t->owner->failed)
		t->owner->failed(t->owner_ctx);
}

/*
 * Hand the packet in rx_buf to the guest (the device sets num_buffers and the flags it may see).
 * A multi-queue tap's queue i delivers to queue pair i (unless RSS steers, or the guest has
 * fewer pairs active); a single queue's packets are spread by the device's flow hash.
 */
static int tap_deliver(struct tap_queue *tq, size_t len)
{
	struct iovec iov = {.iov_base = tq->rx_buf, .iov_len = len};

	if (tq->tap->nq > 1)
		return vnet_dev_receive_pair(tq->tap->dev, tq->index, &iov, 1);
	return vnet_dev_receive(tq->tap->dev, &iov, 1);
}

/* read(), retried on EINTR; handles the errors every read path shares. -1: stop reading now. */
static ssize_t tap_read(struct tap_queue *tq, const struct iovec *iov, int iovcnt)
{
	const struct tap_backend *t = tq->tap;
	ssize_t n;

	do
		n = readv(tq->fd, iov, iovcnt);
	while (n < 0 && errno == EINTR);
	if (n >= 0)
		return n;
	if (errno == EBADFD)
		tap_fail(tq, "read: EBADFD");
	else if (errno == EFAULT && t->owner && t->owner->guest_fault)
		t->owner->guest_fault(t->owner_ctx); /* guest memory went away under the readv */
	else if (errno != EAGAIN)
		log_guest("tap %s: read: %s", t->name, strerror(errno));
	return -1;
}

/*
 * One packet through rx_buf (legacy header, several queue pairs, a multi-queue tap's queues
 * after the first, or too few guest buffers for the largest packet): two copies, but the
 * device places it into whatever buffers it needs. -1: nothing read, stop; 0: read, stop
 * (it waits for guest buffers); 1: read, go on.
 */
static int tap_rx_copy(struct tap_queue *tq, size_t *bytes)
{
	struct iovec iov = {.iov_base = tq->rx_buf, .iov_len = sizeof(tq->rx_buf)};
	ssize_t n = tap_read(tq, &iov, 1);

	if (n < 0)
		return -1;
	*bytes += (size_t)n;
	if ((size_t)n < TAP_HDR_LEN + TAP_ETH_HLEN)
		return 1; /* nothing a guest could use */
	if (tap_deliver(tq, (size_t)n) == 0) {
		tq->rx_pending = (size_t)n;
		tap_update_events(tq);
		return 0;
	}
	return 1;
}

/*
 * A trunk's batch: every packet through rx_buf, so its tag is seen before it goes anywhere. A
 * VLAN-tagged frame (802.1Q, 802.1ad, 0x9100) goes to the trunk's owner, untagged ones to the
 * guest (one more copy than tap_rx(), for trunk ports only), or are dropped when it has no
 * buffers (or no frontend): the trunk's VLANs never wait for the port's own guest.
 */
static __attribute__((noinline)) void tap_rx_trunk(struct tap_queue *tq)
{
	const struct tap_backend *t = tq->tap;
	size_t bytes = 0;
	unsigned i;

	for (i = 0; i < TAP_RX_BATCH && bytes < VNET_BUDGET_BYTES && !tq->rx_pending && !tq->failed;
	     i++) {
		struct iovec iov = {.iov_base = tq->rx_buf, .iov_len = sizeof(tq->rx_buf)};
		ssize_t n = tap_read(tq, &iov, 1);
		const uint8_t *et = tq->rx_buf + TAP_HDR_LEN + 12;
		unsigned type;

		if (n < 0)
			break;
		bytes += (size_t)n;
		if ((size_t)n < TAP_HDR_LEN + TAP_ETH_HLEN)
			continue; /* nothing anyone could use */
		type = (unsigned)et[0] << 8 | et[1];
		if (type == 0x8100 || type == 0x88a8 || type == 0x9100) {
			t->trunk->rx(t->trunk_ctx, tq->rx_buf + TAP_HDR_LEN,
				     (size_t)n - TAP_HDR_LEN);
			continue;
		}
		/* No buffers: dropped, not waited for (the VLANs must not stall behind the guest). */
		(void)tap_deliver(tq, (size_t)n);
	}
	stat_add(&tq->stats.rx_packets, i);
}

/*
 * A multi-queue tap's queue after the first: a bounded batch through rx_buf, each packet to
 * this queue's pair (tap_deliver()). Out of line: the single-queue tap never comes here.
 */
static __attribute__((noinline)) void tap_rx_queue(struct tap_queue *tq)
{
	size_t bytes = 0;
	unsigned i;
	int r = 1;

	for (i = 0; i < TAP_RX_BATCH && bytes < VNET_BUDGET_BYTES && r > 0 && !tq->failed; i++)
		r = tap_rx_copy(tq, &bytes);
	stat_add(&tq->stats.rx_packets, r < 0 ? i - 1 : i);
}

/*
 * Read a bounded batch of packets (TAP_RX_BATCH, VNET_BUDGET_BYTES) into the guest, each with
 * one readv straight into guest RX buffers the device reserved (one copy, done by the kernel).
 * With no guest buffers the packets stay in the kernel until rx_resume(). Level-triggered
 * epoll reports the rest on the next round. Queue 0 only: the others go through
 * tap_rx_queue() (the device's reservation is queue pair 0's).
 */
static void tap_rx(struct tap_queue *tq)
{
	size_t bytes = 0;
	unsigned i;

	if (tq->tap->trunk) {
		tap_rx_trunk(tq);
		return;
	}
	if (tq->index) {
		tap_rx_queue(tq);
		return;
	}
	for (i = 0; i < TAP_RX_BATCH && bytes < VNET_BUDGET_BYTES && !tq->rx_pending && !tq->failed;
	     i++) {
		const struct iovec *iov;
		int niov = vnet_dev_rx_reserve(tq->tap->dev, 0, &iov);
		ssize_t n;

		if (niov == 0) {
			tq->rx_nobufs = true;
			tap_update_events(tq);
			break;
		}
		if (niov < 0) {
			int r = tap_rx_copy(tq, &bytes);

			if (r <= 0) {
				i += (unsigned)(r + 1); /* 0: one more read */
				break;
			}
			continue;
		}
		n = tap_read(tq, iov, niov);
		if (n < 0)
			break; /* EAGAIN: the reservation waits for the next packet */
		bytes += (size_t)n;
		vnet_dev_rx_commit(tq->tap->dev, (size_t)n);
	}
	stat_add(&tq->stats.rx_packets, i);
}

/*
 * tx_iov = the header, then the frame's pieces (frame_len bytes at byte off of iov). Always
 * inlined: a guest's transmit pays no call for it (tap_backend_send_tagged() has its own copy).
 */
static inline __attribute__((always_inline)) unsigned
tap_tx_iov(struct tap_queue *tq, const struct virtio_net_hdr_v1 *hdr, const struct iovec *iov,
	   unsigned iovcnt, size_t off, size_t frame_len)
{
	unsigned n = 0;

	tq->tx_iov[n].iov_base = (void *)(uintptr_t)hdr;
	tq->tx_iov[n++].iov_len = sizeof(*hdr);
	for (unsigned i = 0; i < iovcnt && frame_len; i++) {
		size_t take;

		if (off >= iov[i].iov_len) {
			off -= iov[i].iov_len;
			continue;
		}
		if (n == TAP_TX_IOV)
			return 0;
		take = iov[i].iov_len - off < frame_len ? iov[i].iov_len - off : frame_len;
		tq->tx_iov[n].iov_base = (uint8_t *)iov[i].iov_base + off;
		tq->tx_iov[n++].iov_len = take;
		frame_len -= take;
		off = 0;
	}
	return n;
}

/* A guest packet reached the tap: say so once if it was down. */
static inline void tap_sent(struct tap_queue *tq)
{
	if (__builtin_expect(tq->down, 0))
		log_info("tap %s: is up again, sending guest packets", tq->tap->name);
	tq->down = false;
}

/*
 * A write of a guest packet to the tap failed with err: -EAGAIN (full: EPOLLOUT is on, the queue
 * resumes), or -err for a packet dropped (logged, rate-limited).
 */
static int tap_tx_error(struct tap_queue *tq, int err)
{
	switch (err) {
	case EAGAIN:
		tq->tx_blocked = true;
		tap_update_events(tq);
		return -EAGAIN;
	case EIO: /* the interface is down: expected for a while, say so once */
		if (!tq->down)
			log_warn("tap %s: is down, dropping guest packets until it is up", tq->tap->name);
		tq->down = true;
		break;
	case EBADFD:
		tap_fail(tq, "write: EBADFD");
		break;
	default: /* e.g. EINVAL for a header the kernel rejects */
		log_guest("tap %s: dropped a guest packet: %s", tq->tap->name, strerror(err));
		break;
	}
	return -err;
}

/* Send one guest packet to the tap queue (header first); see struct vnet_backend_ops. */
static inline __attribute__((always_inline)) int
tap_send(struct tap_queue *tq, const struct virtio_net_hdr_v1 *hdr, const struct iovec *iov,
	 unsigned iovcnt, size_t off, size_t frame_len)
{
	unsigned cnt;
	ssize_t n;

	if (tq->failed)
		return -ENODEV;
	cnt = tap_tx_iov(tq, hdr, iov, iovcnt, off, frame_len);
	if (!cnt || cnt > IOV_MAX) {
		log_guest("tap %s: dropped a guest packet of more than %d segments", tq->tap->name,
			  IOV_MAX - 1);
		return -EMSGSIZE;
	}
	/* GCC 12 with sanitizers misjudges tx_iov's size here (a false -Wstringop-overread). */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wstringop-overread"
#endif
	do
		n = writev(tq->fd, tq->tx_iov, (int)cnt);
	while (n < 0 && errno == EINTR);
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
	if (n >= 0) {
		tap_sent(tq);
		return 0;
	}
	return tap_tx_error(tq, errno);
}

/* A single-queue tap's transmit: struct vnet_backend_ops. */
static int tap_transmit(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
			const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame_len)
{
	return tap_send(tq_of(be), hdr, iov, iovcnt, off, frame_len);
}

/*
 * req[0..n) one writev() each, stopping at the first that fails (as the ring's linked writes do):
 * results in res[].
 */
static void tap_writev_each(int fd, const struct uring_tx_req *req, unsigned n, int *res)
{
	for (unsigned i = 0; i < n; i++) {
		ssize_t w;

		do
			w = writev(fd, req[i].iov, (int)req[i].cnt);
		while (w < 0 && errno == EINTR);
		res[i] = w < 0 ? -errno : (int)w;
		if (w < 0)
			return;
	}
}

/*
 * A burst's frames to the tap (transmit_burst): each as transmit() sends it, with its checked
 * header (hdr[i]; all-zero when hdr is NULL), through the thread's io_uring (uring_tx.c) in one
 * system call, or one writev() each where there is none. The writes stop at the first that
 * fails: a dropped frame (logged) is passed over and the rest written by the next call, so the
 * frames go out in order and each costs at most one call. Returns how many it took (sent or
 * dropped), and in *sent how many of those went out; on -EAGAIN the rest waits for EPOLLOUT
 * (*full). A failed tap drops the burst, as transmit() would.
 */
static unsigned tap_burst(struct tap_queue *tq, const struct vnet_frame *f,
			  const struct virtio_net_hdr_v1 *hdr, unsigned n, bool *full, unsigned *sent)
{
	static const struct virtio_net_hdr_v1 zero_hdr;
	struct uring_tx *u = uring_tx_self();
	struct uring_tx_req req[URING_TX_MAX];
	int res[URING_TX_MAX];
	unsigned done = 0;

	*sent = 0;
	if (n > URING_TX_MAX)
		n = URING_TX_MAX;
	for (unsigned i = 0; i < n; i++) {
		req[i].iov[0] = (struct iovec){.iov_base = (void *)(hdr ? &hdr[i] : &zero_hdr),
					       .iov_len = sizeof(zero_hdr)};
		req[i].iov[1] = (struct iovec){.iov_base = (void *)f[i].data, .iov_len = f[i].len};
		req[i].cnt = 2;
	}
	while (done < n && !tq->failed) {
		unsigned m = n - done, i;

		if (!u || uring_tx_writev(u, tq->fd, req + done, m, res) < 0)
			tap_writev_each(tq->fd, req + done, m, res);
		for (i = 0; i < m && res[i] >= 0; i++)
			tap_sent(tq);
		*sent += i;
		done += i;
		if (i == m)
			break;
		if (tap_tx_error(tq, -res[i]) == -EAGAIN) {
			*full = true;
			return done;
		}
		done++; /* dropped (logged); the writes after it were not tried */
	}
	return n;
}

/* A single-queue tap's transmit_burst: struct vnet_backend_ops. */
static unsigned tap_transmit_burst(struct vnet_backend *be, const struct vnet_frame *f,
				   const struct virtio_net_hdr_v1 *hdr, unsigned n, uint32_t room,
				   uint32_t *extra, bool *full)
{
	unsigned sent;

	(void)room; /* a tap delivers each frame once: n <= room */
	(void)extra;
	return tap_burst(tq_of(be), f, hdr, n, full, &sent);
}

/* A multi-queue tap's: counted per queue; a detached queue's pair sends through queue 0. */
static unsigned tap_transmit_burst_mq(struct vnet_backend *be, const struct vnet_frame *f,
				      const struct virtio_net_hdr_v1 *hdr, unsigned n, uint32_t room,
				      uint32_t *extra, bool *full)
{
	struct tap_queue *tq = tq_of(be);
	unsigned took, sent;

	(void)room;
	(void)extra;
	if (__builtin_expect(tq->detached, 0))
		tq = tq->tap->q[0];
	took = tap_burst(tq, f, hdr, n, full, &sent);
	if (sent)
		stat_add(&tq->stats.tx_packets, sent);
	return took;
}

/*
 * A multi-queue tap's: be is the sending pair's queue; counted per queue. A pair whose queue is
 * detached (the driver said it uses fewer pairs, yet its ring still had packets, or a
 * frontend that sets no pair count) sends through queue 0.
 */
static int tap_transmit_mq(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
			   const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame_len)
{
	struct tap_queue *tq = tq_of(be);
	int r;

	if (__builtin_expect(tq->detached, 0))
		tq = tq->tap->q[0];
	r = tap_send(tq, hdr, iov, iovcnt, off, frame_len);

	if (r == 0)
		stat_inc(&tq->stats.tx_packets);
	return r;
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

/*
 * The guest's receive offloads changed: let the kernel send what the guest accepts. The
 * setting is the interface's (all its queues), made through queue 0's fd.
 */
static void tap_set_offloads(struct vnet_backend *be, uint64_t guest_features)
{
	struct tap_queue *tq = tq_of(be);
	unsigned long offload = tap_offload_flags(guest_features);

	if (tq->failed || ioctl(tq->fd, TUNSETOFFLOAD, offload) == 0)
		return;
	log_warn("tap %s: TUNSETOFFLOAD 0x%lx: %s; receive offloads off", tq->tap->name, offload,
		 strerror(errno));
	/* The old setting may offer more than the guest takes now: fall back to none. */
	if (ioctl(tq->fd, TUNSETOFFLOAD, 0ul) < 0)
		log_err("tap %s: TUNSETOFFLOAD 0: %s", tq->tap->name, strerror(errno));
}

/*
 * The driver uses `pairs` queue pairs: queues from `pairs` on are detached from the interface
 * (IFF_DETACH_QUEUE, as QEMU does), so the kernel spreads host-to-guest flows over the pairs in
 * use only and never queues packets where no one reads; queues below it are attached again.
 * Queue 0 always stays. A failed TUNSETQUEUE leaves that queue as it was (logged).
 */
static void tap_set_pairs(struct vnet_backend *be, unsigned pairs)
{
	struct tap_backend *t = tq_of(be)->tap;

	if (!t->owner || !t->owner->queue_attached)
		return;
	for (unsigned i = 1; i < t->nq; i++) {
		struct tap_queue *tq = t->q[i];
		bool attach = i < pairs;
		struct ifreq ifr;

		if (tq->failed || attach == !tq->detached)
			continue;
		memset(&ifr, 0, sizeof(ifr));
		ifr.ifr_flags = attach ? IFF_ATTACH_QUEUE : IFF_DETACH_QUEUE;
		if (ioctl(tq->fd, TUNSETQUEUE, &ifr) < 0) {
			log_warn("tap %s: TUNSETQUEUE %s queue %u: %s", t->name,
				 attach ? "attach" : "detach", i, strerror(errno));
			continue;
		}
		if (!attach) {
			t->owner->queue_attached(t->owner_ctx, i, tq->fd, false, 0);
			tq->detached = true;
			continue;
		}
		tq->detached = false;
		tq->events = (!tq->rx_pending && !tq->rx_nobufs ? EPOLLIN : 0) |
			     (tq->tx_blocked ? EPOLLOUT : 0);
		t->owner->queue_attached(t->owner_ctx, i, tq->fd, true, tq->events);
	}
}

/* One queue after the guest posted receive buffers: see tap_rx_resume(). */
static void tap_queue_resume(struct tap_queue *tq)
{
	if (tq->failed)
		return;
	if (tq->rx_nobufs) {
		tq->rx_nobufs = false; /* the guest posted buffers: read the kernel's queue again */
		tap_update_events(tq);
	}
	if (!tq->rx_pending)
		return;
	if (tap_deliver(tq, tq->rx_pending) == 0)
		return; /* still no room: wait for the next rx_resume() */
	tq->rx_pending = 0;
	tap_update_events(tq);
}

/*
 * The device was reset (backend.h reset): a packet read for the guest that is gone and waiting
 * in a queue's buffer is dropped, not handed to the next guest; every queue reads again.
 */
static void tap_reset(struct vnet_backend *be)
{
	struct tap_backend *t = tq_of(be)->tap;

	for (unsigned i = 0; i < t->nq; i++) {
		t->q[i]->rx_pending = 0;
		t->q[i]->rx_nobufs = false;
		tap_update_events(t->q[i]);
	}
}

/*
 * The guest posted receive buffers: deliver the waiting packet of each queue, then read the
 * tap again (the event loop's next EPOLLIN: reads there are bounded per event).
 */
static bool tap_rx_resume(struct vnet_backend *be)
{
	struct tap_backend *t = tq_of(be)->tap;

	for (unsigned i = 0; i < t->nq; i++)
		tap_queue_resume(t->q[i]);
	return false;
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
 * One writev on queue 0: a zeroed header, the MACs and tag (copied), the rest of the frame in
 * place. Never blocks: a full tap drops the frame. On the port's worker's thread, not inside
 * queue 0's own transmit (it shares its tx_iov). A switch uplink's frame (port_trunk.c) starts
 * with the switch's checked copy of its head (switch.h): the MACs and the EtherType behind the
 * tag are the ones the sender's access port checked, whatever its guest writes meanwhile.
 *
 * Return: 0 sent, or a negative errno (dropped).
 */
int tap_backend_send_tagged(struct vnet_backend *be, uint16_t vid, const struct iovec *iov,
			    unsigned iovcnt, size_t off, size_t len)
{
	static const struct virtio_net_hdr_v1 hdr;
	struct tap_queue *tq = tq_of(be);
	struct tap_backend *t = tq->tap;
	struct iovec v[TAP_TX_IOV + 1]; /* the header, the tag, then the frame's pieces */
	unsigned cnt;
	ssize_t n;

	if (tq->failed || len < TAP_ETH_HLEN)
		return -ENODEV;
	(void)iov_copy_from(iov, iovcnt, off, t->tag_head, 12);
	t->tag_head[12] = 0x81;
	t->tag_head[13] = 0x00;
	t->tag_head[14] = (uint8_t)(vid >> 8 & 0x0f);
	t->tag_head[15] = (uint8_t)vid;
	cnt = tap_tx_iov(tq, &hdr, iov, iovcnt, off + 12, len - 12);
	if (!cnt || cnt + 1 > IOV_MAX)
		return -EMSGSIZE;
	v[0] = tq->tx_iov[0];
	v[1] = (struct iovec){.iov_base = t->tag_head, .iov_len = sizeof(t->tag_head)};
	for (unsigned i = 1; i < cnt; i++)
		v[i + 1] = tq->tx_iov[i];
	do
		n = writev(tq->fd, v, (int)cnt + 1);
	while (n < 0 && errno == EINTR);
	return n < 0 ? -errno : 0;
}

_Static_assert(VNET_BURST_MAX <= URING_TX_MAX, "a burst fits the ring");

#define TAP_OFFLOADS                                                                              \
	(BIT_ULL(VIRTIO_NET_F_CSUM) | BIT_ULL(VIRTIO_NET_F_GUEST_CSUM) |                           \
	 BIT_ULL(VIRTIO_NET_F_GUEST_TSO4) | BIT_ULL(VIRTIO_NET_F_GUEST_TSO6) |                     \
	 BIT_ULL(VIRTIO_NET_F_GUEST_ECN) | BIT_ULL(VIRTIO_NET_F_HOST_TSO4) |                       \
	 BIT_ULL(VIRTIO_NET_F_HOST_TSO6) | BIT_ULL(VIRTIO_NET_F_HOST_ECN))

/* tap_backend_ops - the ops table the device model calls (a single-queue tap). */
const struct vnet_backend_ops tap_backend_ops = {
	.kind = "tap",
	.offload_features = TAP_OFFLOADS,
	.transmit = tap_transmit,
	.transmit_burst = tap_transmit_burst,
	.burst_offloads = true,
	.set_offloads = tap_set_offloads,
	.rx_resume = tap_rx_resume,
	.reset = tap_reset,
};

/* tap_mq_backend_ops - a multi-queue tap's: the same, with per-queue TX counters. */
const struct vnet_backend_ops tap_mq_backend_ops = {
	.kind = "tap",
	.offload_features = TAP_OFFLOADS,
	.transmit = tap_transmit_mq,
	.transmit_burst = tap_transmit_burst_mq,
	.burst_offloads = true,
	.set_offloads = tap_set_offloads,
	.rx_resume = tap_rx_resume,
	.reset = tap_reset,
	.set_pairs = tap_set_pairs,
};

/**
 * tap_backend_handle_events() - handle one epoll report of a queue's fd.
 * @be: the tap backend
 * @i: the queue whose fd reported (below tap_backend_nqueues(); others are ignored)
 * @events: the epoll events
 *
 * EPOLLOUT resumes the queue's blocked transmit (its queue pair's, on a multi-queue tap);
 * EPOLLIN reads a bounded batch of packets into the guest (level-triggered: the rest comes next
 * round); EPOLLERR or EPOLLHUP on any queue means the interface is gone (the owner's failed() is
 * called once). Called on the thread that owns the queue.
 */
void tap_backend_handle_events(struct vnet_backend *be, unsigned i, uint32_t events)
{
	struct tap_backend *t = tq_of(be)->tap;
	struct tap_queue *tq;

	if (i >= t->nq)
		return;
	tq = t->q[i];
	if (tq->detached) {
		/* A detached tun fd reports EPOLLERR: it should not be registered at all. */
		if (events && t->owner && t->owner->queue_attached)
			t->owner->queue_attached(t->owner_ctx, i, tq->fd, false, 0);
		return;
	}
	if (tq->failed)
		return;
	/* tun reports EPOLLERR only once the interface is unregistered; it stays that way. */
	if (events & (EPOLLERR | EPOLLHUP)) {
		tap_fail(tq, "EPOLLERR");
		return;
	}
	if ((events & EPOLLOUT) && tq->tx_blocked) {
		/* Clear first: the resumed transmit may block again and set it anew. */
		tq->tx_blocked = false;
		if (t->nq > 1)
			vnet_dev_tx_resume_pair(t->dev, i);
		else
			vnet_dev_tx_resume(t->dev);
		tap_update_events(tq);
	}
	if ((events & EPOLLIN) && !tq->rx_pending && !tq->rx_nobufs)
		tap_rx(tq);
}

/* SPDX-License-Identifier: MIT */
/* tap_tx.c - tap TX: guest packets written to the tap, one writev each or a burst through io_uring. */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lib/log.h"
#include "lib/stat_atomic.h"
#include "lib/uring_tx.h"
#include "backend/tap/tap_internal.h"
#include "dev/dev.h"

_Static_assert(VNET_BURST_MAX <= URING_TX_MAX, "a burst fits the ring");

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

/**
 * tap_transmit() - a single-queue tap's transmit (struct vnet_backend_ops)
 * @be: the tap's handle
 * @hdr: the packet's virtio-net header
 * @iov: the frame's pieces in guest memory
 * @iovcnt: entries of @iov
 * @off: where the frame starts in @iov
 * @frame_len: its length
 *
 * Return: 0 sent (or dropped, logged), -EAGAIN full (EPOLLOUT resumes), or a negative errno.
 */
int tap_transmit(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
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

/**
 * tap_transmit_burst() - a single-queue tap's transmit_burst (struct vnet_backend_ops)
 * @be: the tap's handle
 * @f: the frames, each in one buffer
 * @hdr: their checked headers (NULL: all zero)
 * @n: how many
 * @room: unused (a tap delivers each frame once: @n <= @room)
 * @extra: unused
 * @full: set when the tap is full (the rest waits for EPOLLOUT)
 *
 * Return: the frames taken (sent or dropped).
 */
unsigned tap_transmit_burst(struct vnet_backend *be, const struct vnet_frame *f,
			    const struct virtio_net_hdr_v1 *hdr, unsigned n, uint32_t room,
			    uint32_t *extra, bool *full)
{
	unsigned sent;

	(void)room; /* a tap delivers each frame once: n <= room */
	(void)extra;
	return tap_burst(tq_of(be), f, hdr, n, full, &sent);
}

/**
 * tap_transmit_burst_mq() - a multi-queue tap's transmit_burst: counted per queue
 * @be: the sending pair's queue (a detached queue's pair sends through queue 0)
 * @f: the frames, each in one buffer
 * @hdr: their checked headers (NULL: all zero)
 * @n: how many
 * @room: unused
 * @extra: unused
 * @full: set when the tap is full
 *
 * Return: as tap_transmit_burst().
 */
unsigned tap_transmit_burst_mq(struct vnet_backend *be, const struct vnet_frame *f,
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

/**
 * tap_transmit_mq() - a multi-queue tap's transmit: counted per queue
 * @be: the sending pair's queue
 * @hdr: the packet's virtio-net header
 * @iov: the frame's pieces in guest memory
 * @iovcnt: entries of @iov
 * @off: where the frame starts in @iov
 * @frame_len: its length
 *
 * A pair whose queue is detached (the driver said it uses fewer pairs, yet its ring still had
 * packets, or a frontend that sets no pair count) sends through queue 0.
 * Return: as tap_transmit().
 */
int tap_transmit_mq(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
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

/* SPDX-License-Identifier: MIT */
/* tap_trunk.c - a trunk tap: VLAN-tagged frames read go to the trunk's owner, tagged writes. */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lib/iov.h"
#include "lib/log.h"
#include "lib/stat_atomic.h"
#include "backend/tap/tap_internal.h"
#include "dev/dev.h"
#include "pkt/pkt.h"


/**
 * tap_backend_set_trunk() - make the tap a trunk: tagged frames read go to ops->rx().
 * @be: the tap's handle
 * @ops: where VLAN-tagged frames read from the tap go (NULL: none, a plain tap again)
 * @ctx: its context
 *
 * Untagged frames still go to the port's guest. The tap takes every receive offload from then
 * on (tap_apply_offloads()): the kernel hands the VLANs 64 KB segments and checksums left to the
 * receiver, which the switches carry or complete. Before the first read (port_create()).
 */
void tap_backend_set_trunk(struct vnet_backend *be, const struct tap_trunk_ops *ops, void *ctx)
{
	struct tap_queue *tq = tq_of(be);
	struct tap_backend *t = tq->tap;

	t->trunk = ops;
	t->trunk_ctx = ctx;
	tap_apply_offloads(tq);
}

/**
 * tap_soft_free() - free a trunk's buffer of frames made in software (the tap closes).
 * @t: the tap
 */
void tap_soft_free(struct tap_backend *t)
{
	pkt_soft_buf_free(&t->soft);
}

/*
 * The frame in rx_buf (n bytes, the tap's header first) asks for an offload the guest lacks:
 * the frames made of it in software go to the guest instead, with DATA_VALID where it takes
 * checksum flags; what it has no buffers for is dropped, as any untagged frame of a trunk.
 */
static void trunk_deliver_soft(struct tap_queue *tq, const struct pkt_offload *o, size_t n)
{
	struct tap_backend *t = tq->tap;
	struct pkt_soft_buf *s = pkt_soft_buf_reserve(&t->soft, pkt_soft_size(o));
	const struct iovec in = {.iov_base = tq->rx_buf + TAP_HDR_LEN, .iov_len = n - TAP_HDR_LEN};
	struct virtio_net_hdr_v1 h = {0};
	unsigned k;

	if (!s)
		return;
	k = pkt_soft(o, in.iov_base, in.iov_len, &in, 1, 0, s->buf, s->cap, s->seg,
		     PKT_GSO_MAX_SEGS);
	if (t->guest_offloads & BIT_ULL(VIRTIO_NET_F_GUEST_CSUM))
		h.flags = VIRTIO_NET_HDR_F_DATA_VALID; /* computed here */
	for (unsigned i = 0; i < k; i++) {
		const struct iovec seg = {.iov_base = s->seg[i].data, .iov_len = s->seg[i].len};

		if (!vnet_dev_receive_frame(t->dev, &h, &seg, 1, 0, s->seg[i].len))
			break;
	}
}

/*
 * An untagged frame of a trunk, for the port's own guest (n bytes in rx_buf, the tap's header
 * first): as it is, unless it asks for an offload the guest lacks (the trunk's tap takes them
 * all for its VLANs). One the kernel got wrong (nothing it sends) is dropped.
 */
static void trunk_deliver_own(struct tap_queue *tq, size_t n)
{
	struct virtio_net_hdr_v1 h;
	struct pkt_offload o;

	memcpy(&h, tq->rx_buf, sizeof(h));
	if (!pkt_offload_needed(&h)) {
		(void)tap_deliver(tq, n);
		return;
	}
	if (pkt_offload_parse(&h, tq->rx_buf + TAP_HDR_LEN, n - TAP_HDR_LEN, n - TAP_HDR_LEN,
			      &o) != PKT_OK) {
		log_guest("tap %s: dropped a frame whose offload header is bad", tq->tap->name);
		return;
	}
	if (pkt_rx_takes(tq->tap->guest_offloads, &o))
		(void)tap_deliver(tq, n);
	else
		trunk_deliver_soft(tq, &o, n);
}

/**
 * tap_rx_trunk() - a trunk's batch: every packet through rx_buf, so its tag is seen first
 * @tq: the queue whose fd reported EPOLLIN
 *
 * A VLAN-tagged frame (802.1Q, 802.1ad, 0x9100) goes to the trunk's owner, untagged ones to the
 * guest (one more copy than tap_rx(), for trunk ports only), or are dropped when it has no
 * buffers (or no frontend): the trunk's VLANs never wait for the port's own guest.
 */
void tap_rx_trunk(struct tap_queue *tq)
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
			struct virtio_net_hdr_v1 hdr;

			memcpy(&hdr, tq->rx_buf, sizeof(hdr));
			t->trunk->rx(t->trunk_ctx, &hdr, tq->rx_buf + TAP_HDR_LEN,
				     (size_t)n - TAP_HDR_LEN);
			continue;
		}
		/* No buffers: dropped, not waited for (the VLANs must not stall behind the guest). */
		trunk_deliver_own(tq, (size_t)n);
	}
	stat_add(&tq->stats.rx_packets, i);
}

/**
 * tap_backend_send_tagged() - write a frame to the tap with an 802.1Q tag inserted.
 * @be: the tap's handle
 * @vid: the VLAN ID (1..4094), priority 0
 * @hdr: its virtio-net header, offsets counted in the tagged frame (a switch's frame that asks
 * for an offload: the kernel completes it)
 * @iov: the frame: len bytes from byte off of iov (len >= 14)
 * @iovcnt: iov's entries
 * @off: where the frame starts
 * @len: its length, untagged
 *
 * One writev on queue 0: the header, the MACs and tag (copied), the rest of the frame in
 * place. Never blocks: a full tap drops the frame. On the port's worker's thread, not inside
 * queue 0's own transmit (it shares its tx_iov). A switch uplink's frame (port_trunk.c) starts
 * with the switch's checked copy of its head (switch.h): the MACs and the EtherType behind the
 * tag are the ones the sender's access port checked, whatever its guest writes meanwhile.
 *
 * Return: 0 sent, or a negative errno (dropped).
 */
int tap_backend_send_tagged(struct vnet_backend *be, uint16_t vid,
			    const struct virtio_net_hdr_v1 *hdr, const struct iovec *iov,
			    unsigned iovcnt, size_t off, size_t len)
{
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
	cnt = tap_tx_iov(tq, hdr, iov, iovcnt, off + 12, len - 12);
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

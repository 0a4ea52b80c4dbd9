/* SPDX-License-Identifier: MIT */
/* tap_trunk.c - a trunk tap: VLAN-tagged frames read go to the trunk's owner, tagged writes. */
#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "lib/iov.h"
#include "lib/stat_atomic.h"
#include "backend/tap/tap_internal.h"
#include "dev/dev.h"

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
	struct tap_backend *t = tq_of(be)->tap;

	t->trunk = ops;
	t->trunk_ctx = ctx;
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
		(void)tap_deliver(tq, (size_t)n);
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

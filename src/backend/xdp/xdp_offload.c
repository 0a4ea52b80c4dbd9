/* SPDX-License-Identifier: MIT */
/* xdp_offload.c - an AF_XDP port's guest frames that ask for offloads: checked, then segmented and checksummed in software. */
#include <endian.h>

#include "lib/iov.h"
#include "lib/log.h"
#include "lib/stat_atomic.h"
#include "backend/xdp/xdp_internal.h"
#include "pkt/pkt.h"

/*
 * An AF_XDP socket takes whole frames only: no virtio-net header reaches the NIC. So that the
 * guest need not segment and checksum itself (it costs a guest far more than it costs vnetd),
 * the port offers CSUM, HOST_TSO4/6 (+ECN) and HOST_USO, and a frame that asks for them is checked
 * against its own headers (pkt_offload_parse(), on a copy read once) and made into the frames
 * the wire wants here (pkt_soft()), in a scratch buffer allocated at first use; xdp.c puts them
 * on the TX ring.
 */

/**
 * xdp_soft_make() - a guest frame that asks for an offload, made in software.
 * @x: the port, on its worker's thread
 * @hdr: the device's checked copy of the guest's header (pkt_offload_needed())
 * @iov: the frame's chain, in the guest's memory
 * @iovcnt: its entries
 * @off: where the frame starts in it
 * @len: its length
 * @segs: set to the frames made (in the port's scratch, valid until the next call)
 *
 * The headers the offload needs are copied once and checked; the segments (or the frame with
 * its checksum completed) are built from that copy and the rest of the frame, each checksum
 * computed over the bytes copied. A header the frame contradicts is dropped, counted (bad_hdr)
 * and logged (rate-limited).
 *
 * Return: the number of frames made, 0 when the frame is dropped.
 */
unsigned xdp_soft_make(struct xdp_backend *x, const struct virtio_net_hdr_v1 *hdr,
		       const struct iovec *iov, unsigned iovcnt, size_t off, size_t len,
		       const struct pkt_seg **segs)
{
	uint8_t head[PKT_HEAD_MAX];
	size_t need = pkt_offload_head_need(hdr, len), got;
	struct pkt_soft_buf *s;
	struct pkt_offload o;
	enum pkt_bad why = PKT_BAD_L3;

	got = iov_copy_from(iov, iovcnt, off, head, need);
	if (got == need)
		why = pkt_offload_parse(hdr, head, got, len, &o);
	if (why != PKT_OK) {
		stat_inc(&x->bad_hdr);
		log_guest("xdp %s: dropped a guest frame whose offload header is bad: %s (flags 0x%x "
			  "gso_type 0x%x gso_size %u csum_start %u, %zu bytes)",
			  x->name, pkt_bad_name(why), hdr->flags, hdr->gso_type,
			  le16toh(hdr->gso_size), le16toh(hdr->csum_start), len);
		return 0;
	}
	/* Each frame made must fit a UMEM frame: a segment, or the frame itself without GSO. */
	if (o.segs > XDP_TX_FRAMES ||
	    (o.gso ? (size_t)o.hdr_len + o.gso_size : (size_t)o.frame_len) > XDP_PORT_MAX_FRAME) {
		stat_inc(&x->bad_hdr);
		log_guest("xdp %s: dropped a guest frame of %u segments of %u bytes (%zu in all): more "
			  "than its TX ring or a frame holds", x->name, o.segs, o.gso_size, len);
		return 0;
	}
	s = pkt_soft_buf_reserve(&x->soft, pkt_soft_size(&o));
	if (!s)
		return 0;
	*segs = s->seg;
	return pkt_soft(&o, head, got, iov, iovcnt, off, s->buf, s->cap, s->seg, PKT_GSO_MAX_SEGS);
}

/**
 * xdp_soft_free() - free the port's scratch of frames made in software (xdp_backend_close()).
 * @x: the port
 */
void xdp_soft_free(struct xdp_backend *x)
{
	pkt_soft_buf_free(&x->soft);
}

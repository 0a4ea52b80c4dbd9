/* SPDX-License-Identifier: MIT */
/* switch_offload.c - offloads across the switch: the sender's header checked, what each receiver takes, software fallback. */
#include "backend/switch/switch.h"

#include <endian.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "lib/log.h"
#include "lib/stat_atomic.h"
#include "lib/virtio_net_defs.h"
#include "backend/switch/switch_internal.h"
#include "pkt/pkt.h"

/*
 * A guest on a switch port sends a frame with a virtio-net header asking for an offload: its
 * checksum left to the receiver (NEEDS_CSUM), or a TCP or UDP segment of up to 64 KB (a GSO
 * type: TCPV4, TCPV6, UDP_L4).
 * The switch carries that header to every receiver that takes the offload, as a kernel bridge
 * between two taps does, and does the work in software for the others:
 *  - the sender's side (sw_offload_admit(), from sw_admit()): the header, already checked by
 *    the device against what the guest negotiated (net_tx.c), is checked against the frame's
 *    own headers (pkt_offload_parse()), read into the port's checked copy once; what
 *    contradicts them is dropped and counted (bad_hdr), never forwarded;
 *  - each receiver (sw_rx_takes()): its guest's offloads now (negotiated, or changed since by
 *    CTRL_GUEST_OFFLOADS_SET, e.g. ethtool -K) say whether it gets the header as it is;
 *  - the others get frames made in software (sw_soft_get()): the segments, each with its
 *    checksums, or the frame with its checksum completed, and DATA_VALID where their guest
 *    takes checksum flags (the switch computed it). They are made once per frame on each
 *    worker, whatever number of receivers needs them (a flood).
 * An uplink (a tap trunk) takes every offload: the kernel does what the host needs.
 */

/**
 * sw_rx_takes() - whether a receiver takes a frame's offload as it is.
 * @dst: the receiving port (an uplink takes everything)
 * @o: what the frame asks (its checked header, parsed)
 *
 * Its guest's offloads now decide (pkt_rx_takes()).
 *
 * Return: true: deliver with the header; false: software (sw_soft_get()).
 */
bool sw_rx_takes(const struct switch_port *dst, const struct pkt_offload *o)
{
	return dst->up || pkt_rx_takes(__atomic_load_n(&dst->rx_offloads, __ATOMIC_RELAXED), o);
}

/**
 * sw_offload_admit() - the sender's frame asks for an offload: check its header against the frame.
 * @src: the sending port, inside sw_admit() (its checked copy holds the frame's head)
 * @hdr: the device's checked copy of the guest's header (pkt_offload_needed())
 * @iov: the frame's chain, in the guest's memory
 * @iovcnt: its entries
 * @off: where the frame starts in it
 * @len: the frame's length
 *
 * The checked copy grows to hold the headers the offload needs (sw_head_need(): read once,
 * what leaves is what was checked), pkt_offload_parse() decides on it, and src->vh / src->off
 * take the header receivers get and what it asks. A header the frame contradicts is dropped,
 * counted (bad_hdr) and logged (rate-limited). Out of line: frames without offloads never come
 * here.
 *
 * Return: true when the frame may leave, with its offload.
 */
bool sw_offload_admit(struct switch_port *src, const struct virtio_net_hdr_v1 *hdr,
		      const struct iovec *iov, unsigned iovcnt, size_t off, size_t len)
{
	size_t need = pkt_offload_head_need(hdr, len);
	const uint8_t *head = sw_head_need(src, iov, iovcnt, off, len, need);
	enum pkt_bad why;

	if (!head) {
		src->dropped++;
		return false;
	}
	why = pkt_offload_parse(hdr, head, src->head_len, len, &src->off);
	if (why != PKT_OK) {
		stat_inc(&src->bad_hdr);
		log_guest("switch %s: dropped a frame whose offload header is bad: %s (flags 0x%x "
			  "gso_type 0x%x gso_size %u csum_start %u csum_offset %u, %zu bytes)",
			  src->name, pkt_bad_name(why), hdr->flags, hdr->gso_type,
			  le16toh(hdr->gso_size), le16toh(hdr->csum_start), le16toh(hdr->csum_offset),
			  len);
		return false;
	}
	pkt_hdr_for(&src->off, &src->vh);
	return true;
}

/**
 * sw_soft_get() - the frame being forwarded, made in software on this worker: its segments
 * with their checksums, or itself with its checksum completed.
 * @w: the worker whose thread delivers it
 * @fw: the frame (fw->vh set; its first piece is the checked copy fw->off was parsed from)
 * @segs: set to the frames made
 *
 * Made at the first call for the frame (its number, fw->gen, says which frame the worker's
 * buffer holds), then the same for every receiver that needs them. The buffer grows at first use to what the frame
 * needs (at most PKT_GSO_MAX_SEGS headers and 64 KB): idle ports and workers that never meet
 * an offload hold none.
 *
 * Return: how many frames (0: no memory, or buffers shorter than the frame: dropped).
 */
unsigned sw_soft_get(struct sw_worker *w, const struct sw_fwd *fw, const struct pkt_seg **segs)
{
	struct pkt_soft_buf *s;
	struct iovec tmp[2];
	const struct iovec *iov;
	unsigned cnt = sw_fwd_vec(fw, tmp, &iov);

	if (w->soft_n && w->soft_made == fw->gen) {
		*segs = w->soft->seg;
		return w->soft_n;
	}
	s = pkt_soft_buf_reserve(&w->soft, pkt_soft_size(fw->off));
	if (!s) {
		log_err("switch: no memory for offloads done in software: frame dropped");
		return 0;
	}
	w->soft_made = fw->gen;
	w->soft_n = pkt_soft(fw->off, iov[0].iov_base, iov[0].iov_len, iov, cnt, 0, s->buf, s->cap,
			     s->seg, PKT_GSO_MAX_SEGS);
	*segs = s->seg;
	return w->soft_n;
}

/**
 * sw_soft_free() - free a worker's buffer of frames made in software (switch_destroy()).
 * @w: the worker, which forwards no more
 */
void sw_soft_free(struct sw_worker *w)
{
	pkt_soft_buf_free(&w->soft);
	w->soft_n = 0;
}

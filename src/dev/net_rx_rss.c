/* SPDX-License-Identifier: MIT */
/* net_rx_rss.c - receive path, RSS: hash a frame, report the hash, pick its queue pair. */
#include <endian.h>

#include "dev/net_rx_internal.h"
#include "dev/rss/toeplitz.h"
#include "dev/vnet_dev_core.h"

/**
 * net_rx_rss() - hash a frame as the driver's hash types say and pick its queue pair
 * @dev: the device (RSS or hash reporting on)
 * @iov: the buffers holding the frame
 * @iovcnt: entries of @iov
 * @off: byte offset of the frame in @iov
 * @frame_len: frame bytes
 *
 * Fills the hash fields of the receive header (HASH_REPORT) and picks the pair from the
 * indirection table (RSS; unhashed packets: the unclassified queue), else as without RSS. Out
 * of line: with RSS off the receive path pays one branch for it.
 * Return: the queue pair.
 */
unsigned net_rx_rss(struct vnet_dev *dev, const struct iovec *iov, unsigned iovcnt, size_t off,
		    size_t frame_len)
{
	const struct vnet_rss *r = &dev->rss;
	size_t n = frame_len < TOEPLITZ_PARSE_MAX ? frame_len : TOEPLITZ_PARSE_MAX;
	const uint8_t *f = dev->rss_buf;
	uint32_t hash = 0;
	unsigned report;

	if (iovcnt && n <= iov[0].iov_len - off)
		f = (const uint8_t *)iov[0].iov_base + off;
	else
		n = iov_copy_from(iov, iovcnt, off, dev->rss_buf, n);
	report = toeplitz_frame(&r->key, r->cfg.hash_types, f, n, &hash);
	if (r->report) {
		dev->rx_hdr.hash_value = htole32(hash);
		dev->rx_hdr.hash_report = htole16((uint16_t)report);
	}
	if (!r->steer)
		return rx_pick_pair(dev, f, n);
	return report ? r->cfg.table[hash & (r->cfg.table_len - 1u)] : r->cfg.unclassified;
}

/* SPDX-License-Identifier: MIT */
/* vnet_dev_lane.c - a device's queue pairs run by another worker: per-thread views of one device. */
#include "dev/vnet_dev_lane.h"

#include <string.h>
#include <sys/mman.h>

#include "dev/rss/toeplitz.h"
#include "dev/vnet_dev_core.h"

/*
 * A port whose queue pairs live on several workers (queue-workers=) has one struct vnet_dev,
 * its home worker's, which owns the device-wide state (features, memory, control queue, RSS,
 * filter, coalescing settings) and the queues of its own pairs; and one lane per other worker.
 * A lane is a struct vnet_dev of its own whose `queues` are the device's: the data path
 * (net_rx.c, net_tx.c, notify.c) runs on it unchanged, each thread with its own scratch (chain,
 * TX header, RX slots and header), its own rx_dirty and owner callbacks (its worker's run queue
 * and flush list). Device-wide fields are copied into the lane while every thread is parked,
 * so a lane only reads them; per-queue state is touched by the queue's worker alone.
 */

/**
 * vnet_dev_pair_mask() - the queue mask of one queue pair (its RX and TX queue).
 * @pair: the pair, 0..VNET_MAX_QUEUE_PAIRS-1
 *
 * Return: bits 2*pair and 2*pair+1.
 */
uint64_t vnet_dev_pair_mask(unsigned pair)
{
	return 3ull << (2u * pair);
}

/**
 * vnet_dev_lane_create() - a view of a device that runs some of its queues on another thread.
 * @dev: the device (its home view)
 * @qmask: the queues the lane runs (vnet_dev_pair_mask() of its pairs); taken from dev's
 * @env: the lane's owner callbacks (its worker's run queue, flush list)
 * @env_ctx: passed to every @env call
 *
 * Context: every thread of the device parked (or not started).
 * Return: the lane, with dev's state copied (vnet_dev_lane_sync(), no backend yet), or NULL.
 */
struct vnet_dev *vnet_dev_lane_create(struct vnet_dev *dev, uint64_t qmask,
				      const struct vnet_env_ops *env, void *env_ctx)
{
	struct vnet_dev *lane = mmap(NULL, sizeof(*lane), PROT_READ | PROT_WRITE,
				     MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (lane == MAP_FAILED)
		return NULL;
	lane->env = env;
	lane->env_ctx = env_ctx;
	lane->queues = dev->queues;
	lane->nqueues = dev->nqueues;
	lane->lane = true;
	lane->qmask = qmask & dev->qmask;
	dev->qmask &= ~lane->qmask;
	for (unsigned i = 0; i < dev->nqueues; i++)
		if (lane->qmask >> i & 1u)
			dev->queues[i].chain = &lane->chain;
	vnet_dev_lane_sync(lane, dev, NULL);
	return lane;
}

/**
 * vnet_dev_lane_sync() - copy a device's device-wide state into one of its lanes.
 * @lane: the lane
 * @dev: its device
 * @be: the lane's backend handle (its switch port), used while dev has a backend
 *
 * The lane keeps its own owner, scratch, rx_dirty, queue mask and poll window. Context: every
 * thread of the device parked, after whatever changed dev (a vhost-user message, a control
 * queue command, a control request).
 */
void vnet_dev_lane_sync(struct vnet_dev *lane, const struct vnet_dev *dev, struct vnet_backend *be)
{
	lane->params = dev->params;
	lane->offered = dev->offered;
	lane->features = dev->features;
	lane->guest_offloads = dev->guest_offloads;
	lane->hdr_len = dev->hdr_len;
	memcpy(lane->mac, dev->mac, sizeof(lane->mac));
	lane->active_pairs = dev->active_pairs;
	lane->rss_on = dev->rss_on;
	lane->dirty_log = dev->dirty_log;
	lane->filter = dev->filter;
	memcpy(lane->last, dev->last, sizeof(lane->last));
	memcpy(lane->host, dev->host, sizeof(lane->host));
	memcpy(lane->adaptive, dev->adaptive, sizeof(lane->adaptive));
	lane->guard = dev->guard;
	lane->tx_rate = dev->tx_rate;
	lane->rx_rate = dev->rx_rate;
	lane->rx_hdr = dev->rx_hdr;
	lane->rss = dev->rss;
	if (!dev->be)
		lane->be = NULL;
	else if (be)
		lane->be = be;
	lane->be_ops = lane->be ? dev->be_ops : NULL;
	/* The lane's TX queues transmit through its own handle (net_tx.c uses q->be). */
	for (unsigned i = 0; i < lane->nqueues; i++)
		if (lane->qmask >> i & 1u)
			lane->queues[i].be = lane->be;
}

/**
 * vnet_dev_lane_destroy() - free a lane; its queues go back to the device.
 * @lane: the lane, or NULL
 * @dev: its device
 *
 * Context: every thread of the device parked (or stopped).
 */
void vnet_dev_lane_destroy(struct vnet_dev *lane, struct vnet_dev *dev)
{
	if (!lane)
		return;
	for (unsigned i = 0; i < dev->nqueues; i++)
		if (lane->qmask >> i & 1u) {
			dev->queues[i].chain = &dev->chain;
			dev->queues[i].be = dev->be;
		}
	dev->qmask |= lane->qmask;
	munmap(lane, sizeof(*lane));
}

/**
 * vnet_dev_tx_pair() - the pair whose TX queue the device (or lane view) is processing.
 * @dev: the device or view; on the thread that runs it (a backend's transmit)
 *
 * Return: the pair (0 before any TX).
 */
unsigned vnet_dev_tx_pair(const struct vnet_dev *dev)
{
	return dev->tx_pair;
}

/**
 * vnet_dev_rx_pair() - the queue pair a frame for this device goes to: as the receive path
 * picks it (RSS's indirection table, else the flow hash) when the driver set several pairs
 * active, else the sender's pair (its TX queue's) when this device has it usable, else 0.
 * @dev: the device (its home view); only read
 * @from_pair: the sender's pair (vnet_dev_tx_pair() of its device, on its thread), or 0
 * @iov: the buffers holding the frame
 * @iovcnt: entries of @iov
 * @off: byte offset of the frame in @iov
 * @frame_len: frame bytes
 *
 * Writes nothing of the device: any thread may call it while the device's state is not being
 * changed (it changes only with every thread of the device parked). A frontend that keeps the
 * control queue to itself (QEMU without full-device mode, DPDK virtio-user) never sets the
 * pairs active, but enables each pair's rings: then the sender's pair keeps a flow on one pair.
 * Return: the pair.
 */
unsigned vnet_dev_rx_pair(const struct vnet_dev *dev, unsigned from_pair, const struct iovec *iov,
			  unsigned iovcnt, size_t off, size_t frame_len)
{
	const struct vnet_rss *r = &dev->rss;
	uint8_t buf[TOEPLITZ_PARSE_MAX];
	size_t n = frame_len < sizeof(buf) ? frame_len : sizeof(buf);
	const uint8_t *f = buf;
	uint32_t hash = 0;
	unsigned report, pair;

	if (dev->active_pairs <= 1) {
		const struct vnet_queue *q = &dev->queues[2u * from_pair];

		/* enabled and started change only with the workers parked: safe to read here */
		if (2u * from_pair + 1u >= dev->nqueues || !q->enabled || !q->vq.started)
			return 0;
		return from_pair;
	}
	while (iovcnt && off >= iov[0].iov_len) {
		off -= iov[0].iov_len;
		iov++;
		iovcnt--;
	}
	if (iovcnt && n <= iov[0].iov_len - off)
		f = (const uint8_t *)iov[0].iov_base + off;
	else
		n = iov_copy_from(iov, iovcnt, off, buf, n);
	if (!r->steer)
		return rx_pick_pair(dev, f, n);
	report = toeplitz_frame(&r->key, r->cfg.hash_types, f, n, &hash);
	pair = report ? r->cfg.table[hash & (r->cfg.table_len - 1u)] : r->cfg.unclassified;
	return pair < dev->active_pairs ? pair : 0;
}

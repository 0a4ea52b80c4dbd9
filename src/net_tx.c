/* net_tx.c - transmit path: gather the driver's TX chains and hand packets to the backend. */
#include "vnet_dev_internal.h"

#include <errno.h>
#include <string.h>

#include "log.h"

#define TX_BATCH 64 /* chains per used-index publication */

/*
 * Build the backend's view of a TX chain: a 12-byte header (the guest's, widened if it used the
 * 10-byte legacy header) followed by the frame, pointing straight into guest memory.
 */
static unsigned tx_build_iov(struct vnet_dev *dev, const struct vq_chain *c,
			     struct virtio_net_hdr_v1 *hdr)
{
	unsigned n = 0;
	size_t skip = dev->hdr_len;

	memset(hdr, 0, sizeof(*hdr));
	iov_copy_from(c->iov, c->nread, 0, hdr, dev->hdr_len);
	hdr->num_buffers = 0;
	dev->tx_iov[n].iov_base = hdr;
	dev->tx_iov[n++].iov_len = sizeof(*hdr);
	for (unsigned i = 0; i < c->nread; i++) {
		const struct iovec *v = &c->iov[i];

		if (skip >= v->iov_len) {
			skip -= v->iov_len;
			continue;
		}
		dev->tx_iov[n].iov_base = (uint8_t *)v->iov_base + skip;
		dev->tx_iov[n++].iov_len = v->iov_len - skip;
		skip = 0;
	}
	return n;
}

/* Send the chain in q->chain; -EAGAIN if the backend is full (the chain stays in q->chain). */
static int tx_send_one(struct vnet_dev *dev, struct vnet_queue *q)
{
	const struct vq_chain *c = &q->chain;
	struct virtio_net_hdr_v1 hdr;
	unsigned n;
	int r;

	if (c->read_len < dev->hdr_len || c->read_len - dev->hdr_len > VNET_MAX_FRAME) {
		log_guest("queue %u: TX packet of %llu bytes dropped", q->vq.index,
			  (unsigned long long)c->read_len);
		q->stats.dropped++;
		return 0;
	}
	if (!dev->be_ops) {
		q->stats.dropped++;
		return 0;
	}
	n = tx_build_iov(dev, c, &hdr);
	r = dev->be_ops->transmit(dev->be, dev->tx_iov, n);
	if (r == -EAGAIN)
		return r;
	if (r < 0) {
		q->stats.dropped++;
		return 0;
	}
	q->stats.packets++;
	q->stats.bytes += c->read_len - dev->hdr_len;
	return 0;
}

bool net_tx_process(struct vnet_dev *dev, struct vnet_queue *q)
{
	uint32_t total = 0;
	uint64_t bytes = 0;

	for (;;) {
		bool spent = false;
		uint32_t done = 0;
		int r = 0;

		while (done < TX_BATCH) {
			if (total + done >= VNET_BUDGET_PACKETS || bytes >= VNET_BUDGET_BYTES) {
				spent = true;
				break;
			}
			if (!q->tx_blocked) {
				r = vq_pop(&q->vq, &q->chain);
				if (r <= 0)
					break;
			}
			if (tx_send_one(dev, q) == -EAGAIN) {
				q->tx_blocked = true;
				r = -EAGAIN;
				break;
			}
			q->tx_blocked = false;
			bytes += q->chain.read_len;
			vq_push(&q->vq, q->chain.head, 0);
			done++;
		}
		if (done) {
			/* Packets left at once; only the notification may wait. */
			vq_publish(&q->vq);
			notify_decide(dev, q, NOTIFY_COMPLETED, done);
		}
		total += done;
		if (r < 0)
			return false; /* backend full (resume later) or queue broken */
		if (spent)
			return true; /* bounded work: yield to everything else that is ready */
		if (done == TX_BATCH)
			continue;
		if (!vq_kick_enable(&q->vq))
			return false;
	}
}

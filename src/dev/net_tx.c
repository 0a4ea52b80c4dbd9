/* SPDX-License-Identifier: MIT */
/* net_tx.c - transmit path: gather the driver's TX chains and hand packets to the backend. */
#include "dev/net_tx.h"

#include <endian.h>
#include <errno.h>
#include <string.h>

#include "mem/mem.h"
#include "lib/log.h"
#include "dev/net_rate.h"
#include "dev/coal/notify.h"
#include "dev/vnet_dev_core.h"
#include "dev/net_rate_internal.h"

#define TX_BATCH VNET_TX_BATCH

_Static_assert(TX_BATCH <= VNET_BURST_MAX, "a batch's burst fits what transmit_burst() gets");

/*
 * The guest's header as backends see it (widened if the guest used the 10-byte legacy one).
 * A copy: the guest cannot change it after it was checked.
 */
static void tx_read_hdr(const struct vnet_dev *dev, const struct vq_chain *c,
			struct virtio_net_hdr_v1 *hdr)
{
	if (dev->hdr_len == sizeof(*hdr) && c->nread && c->iov[0].iov_len >= sizeof(*hdr)) {
		memcpy(hdr, c->iov[0].iov_base, sizeof(*hdr)); /* a constant size: two loads */
	} else {
		memset(hdr, 0, sizeof(*hdr));
		/* HASH_REPORT's 20 bytes: the hash fields mean nothing on TX, skipped. */
		iov_copy_from(c->iov, c->nread, 0, hdr,
			      dev->hdr_len < sizeof(*hdr) ? dev->hdr_len : sizeof(*hdr));
	}
	hdr->num_buffers = 0;
	/* DATA_VALID / RSC_INFO mean nothing on TX (the driver MUST NOT set them; tun ignores
	 * them): cleared, so no backend takes a guest's word that a checksum was verified. */
	hdr->flags &= VIRTIO_NET_HDR_F_NEEDS_CSUM;
}

/*
 * Why the guest's header asks for offloads it did not negotiate, or NULL when it does not (the
 * caller drops a refused packet). As the spec's driver requirements and the kernel's
 * virtio_net_hdr_to_skb() (what a tap backend does with it) have it: NEEDS_CSUM needs VIRTIO_NET_F_CSUM and
 * csum_start + csum_offset + 2 within the frame; gso_type TCPV4 / TCPV6 / UDP / UDP_L4 needs
 * HOST_TSO4 / HOST_TSO6 / HOST_UFO / HOST_USO, the ECN bit HOST_ECN, and any other value (ECN alone included) is
 * invalid; GSO also needs NEEDS_CSUM (the driver MUST set it) and a non-zero gso_size. hdr_len
 * is only a hint and not checked. Linux guests send nothing this refuses.
 */
static const char *tx_hdr_refused(const struct vnet_dev *dev, const struct virtio_net_hdr_v1 *h,
				  uint64_t frame_len)
{
	const char *why = NULL;

	if (h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) {
		if (!dev_has(dev, VIRTIO_NET_F_CSUM))
			why = "checksum offload not negotiated";
		else if ((uint64_t)le16toh(h->csum_start) + le16toh(h->csum_offset) + 2 > frame_len)
			why = "checksum position outside the frame";
	}
	if (!why && h->gso_type != VIRTIO_NET_HDR_GSO_NONE) {
		unsigned type = h->gso_type & ~VIRTIO_NET_HDR_GSO_ECN;
		unsigned need = 0; /* feature bit the type needs; 0: no such type */

		if (type == VIRTIO_NET_HDR_GSO_TCPV4)
			need = VIRTIO_NET_F_HOST_TSO4;
		else if (type == VIRTIO_NET_HDR_GSO_TCPV6)
			need = VIRTIO_NET_F_HOST_TSO6;
		else if (type == VIRTIO_NET_HDR_GSO_UDP)
			need = VIRTIO_NET_F_HOST_UFO;
		else if (type == VIRTIO_NET_HDR_GSO_UDP_L4)
			need = VIRTIO_NET_F_HOST_USO;
		if (!need)
			why = "unknown gso_type";
		else if (!dev_has(dev, need))
			why = "segmentation offload not negotiated";
		else if ((h->gso_type & VIRTIO_NET_HDR_GSO_ECN) &&
			 !dev_has(dev, VIRTIO_NET_F_HOST_ECN))
			why = "ECN segmentation not negotiated";
		else if (!(h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM))
			why = "segmentation without NEEDS_CSUM";
		else if (le16toh(h->gso_size) == 0)
			why = "segmentation with gso_size 0";
	}
	return why;
}

/* tx_hdr_refused(), logged: false when the packet is to be dropped. */
static bool tx_hdr_allowed(const struct vnet_dev *dev, const struct vnet_queue *q,
			   const struct virtio_net_hdr_v1 *h, uint64_t frame_len)
{
	const char *why = tx_hdr_refused(dev, h, frame_len);

	if (!why)
		return true;
	log_guest("queue %u: TX packet dropped: %s (flags 0x%x gso_type 0x%x gso_size %u)",
		  q->vq.index, why, h->flags, h->gso_type, le16toh(h->gso_size));
	return false;
}

/*
 * The port's TX limit is on: whether the chain just popped may go. Tokens left: taken here;
 * else net_rate_tx_admit() refills, or arms the refill wait. Out of line: inlined, it costs the
 * loop registers, and a port without a limit pays for them on every packet.
 */
static __attribute__((noinline)) bool tx_rate_ok(struct vnet_dev *dev, struct vnet_queue *q)
{
	uint64_t len = q->chain->read_len - dev->hdr_len; /* short or long: wraps or exceeds */

	if (__builtin_expect(rate_bucket_has(&dev->tx_rate) && len <= VNET_MAX_FRAME, 1)) {
		rate_bucket_take(&dev->tx_rate, len);
		return true;
	}
	return net_rate_tx_admit(dev, q, q->chain->read_len);
}

#define TX_DROPPED (-1) /* tx_send_one(): the packet was dropped (and counted) */

/*
 * Send the chain in q->chain; -EAGAIN if the backend is full (the caller gives the chain back),
 * TX_DROPPED, else the extra work the backend reported (0 for one delivery). The caller counts
 * the packets sent, once per batch.
 */
static int tx_send_one(struct vnet_dev *dev, struct vnet_queue *q)
{
	const struct vq_chain *c = q->chain;
	struct virtio_net_hdr_v1 *hdr = &dev->tx_hdr;
	int r;

	if (c->read_len < dev->hdr_len || c->read_len - dev->hdr_len > VNET_MAX_FRAME) {
		log_guest("queue %u: TX packet of %llu bytes dropped", q->vq.index,
			  (unsigned long long)c->read_len);
		stat_inc(&q->stats.dropped);
		return TX_DROPPED;
	}
	if (!dev->be_ops) {
		stat_inc(&q->stats.dropped);
		return TX_DROPPED;
	}
	tx_read_hdr(dev, c, hdr);
	if (!tx_hdr_allowed(dev, q, hdr, c->read_len - dev->hdr_len)) {
		stat_inc(&q->stats.dropped);
		return TX_DROPPED;
	}
	guest_race(GUEST_RACE_TX_POPPED); /* the backend gets hdr, the copy that was checked */
	r = dev->be_ops->transmit(q->be, hdr, c->iov, c->nread, dev->hdr_len,
				  c->read_len - dev->hdr_len);
	if (r == -EAGAIN)
		return r;
	if (r < 0) {
		stat_inc(&q->stats.dropped);
		return TX_DROPPED;
	}
	return r; /* > 0: further deliveries the backend made (a flood): they cost budget too */
}

/*
 * tx_burst_take() of a frame that asks for offloads, for a backend with burst_offloads: its
 * header read (again, whole) into tx_burst_hdr[n], the copy decided on and sent. False: refused
 * (tx_send_one() drops and logs it). Out of line: the loop of a frame without offloads stays lean.
 */
static __attribute__((noinline)) bool tx_burst_take_hdr(struct vnet_dev *dev,
							const struct vq_chain *c, unsigned n)
{
	struct virtio_net_hdr_v1 *h = &dev->tx_burst_hdr[n];

	tx_read_hdr(dev, c, h);
	return !tx_hdr_refused(dev, h, c->read_len - dev->hdr_len);
}

/*
 * A burst-capable backend (transmit_burst): take the chain in q->chain into the batch's burst if
 * it is one readable descriptor (tx_burst_untake() counts each as one) whose header asks for no
 * offload and whose frame has a length a backend may get (what tx_send_one() would send with an
 * all-zero header). The header's first two bytes (flags, gso_type: the same place in every
 * header layout) are read once, into a copy. `offloads` (the backend's burst_offloads): frames
 * that ask for offloads the guest negotiated are taken too, their checked header in
 * tx_burst_hdr[n] (tx_burst_take_hdr()), the others' there all-zero.
 * False: anything else, for tx_send_one() after the burst so far went out.
 */
static inline __attribute__((always_inline)) bool tx_burst_take(struct vnet_dev *dev,
								 const struct vq_chain *c,
								 unsigned n, const bool offloads)
{
	const uint8_t *buf = c->iov[0].iov_base;
	uint8_t fl[2];

	if (c->nread != 1 || c->nwrite || c->ndesc != 1 || c->read_len < dev->hdr_len ||
	    c->read_len - dev->hdr_len > VNET_MAX_FRAME)
		return false;
	memcpy(fl, buf, sizeof(fl));
	__atomic_signal_fence(__ATOMIC_SEQ_CST); /* the copy is taken once, here */
	if ((fl[0] & VIRTIO_NET_HDR_F_NEEDS_CSUM) || fl[1] != VIRTIO_NET_HDR_GSO_NONE) {
		if (!offloads || !tx_burst_take_hdr(dev, c, n))
			return false;
	} else if (offloads) {
		memset(&dev->tx_burst_hdr[n], 0, sizeof(dev->tx_burst_hdr[n]));
	}
	dev->tx_burst[n].data = buf + dev->hdr_len;
	dev->tx_burst[n].len = (uint32_t)(c->read_len - dev->hdr_len);
	dev->tx_burst_head[n] = c->head;
	guest_race(GUEST_RACE_TX_POPPED); /* the header decided on: the backend gets its copy */
	return true;
}

/*
 * Send the n frames of the burst and push the used elements of those the backend took (at least
 * one, unless the backend is full), in the order they were popped. `room`: what the budget allows
 * (transmit_burst). Adds what was sent to *sent / *sent_bytes and the further deliveries to
 * *extra. Returns how many it left (floods filled the budget, or the backend was full: *full):
 * the caller gives those back to the ring and tx_burst_untake()s them.
 */
static unsigned tx_burst_flush(struct vnet_dev *dev, struct vnet_queue *q, unsigned n,
			       uint32_t room, uint32_t *sent, uint64_t *sent_bytes, uint32_t *extra,
			       bool *full)
{
	unsigned took = dev->be_ops->transmit_burst(
		q->be, dev->tx_burst, dev->be_ops->burst_offloads ? dev->tx_burst_hdr : NULL, n, room,
		extra, full);

	if (took > n)
		took = n;
	if (q->vq.run.batch_used) { /* IN_ORDER: one used element for the burst */
		for (unsigned i = 0; i < took; i++)
			*sent_bytes += dev->tx_burst[i].len;
		if (took)
			vq_push_last(&q->vq, dev->tx_burst_head[took - 1], took);
	} else if (q->vq.run.packed) { /* lengths 0, ids from the ring's records: nothing to write */
		for (unsigned i = 0; i < took; i++)
			*sent_bytes += dev->tx_burst[i].len;
		vq_push_read_n(&q->vq, took);
	} else {
		for (unsigned i = 0; i < took; i++) {
			*sent_bytes += dev->tx_burst[i].len;
			vq_push(&q->vq, dev->tx_burst_head[i], 0);
		}
	}
	*sent += took;
	return n - took;
}

/* The last `left` frames of a burst of n go back to the ring: take back what taking them counted. */
static void tx_burst_untake(struct vnet_dev *dev, struct vnet_queue *q, unsigned n, unsigned left,
			    uint32_t *done, uint64_t *bytes, uint32_t *descs)
{
	for (unsigned i = n - left; i < n; i++)
		*bytes -= dev->tx_burst[i].len + dev->hdr_len;
	*done -= left;
	*descs -= left; /* one descriptor each (tx_burst_take()) */
	q->guard.descs -= left;
}

/*
 * Adaptive poll mode (--poll-us auto). Polling an empty ring for w costs w of CPU; a kick costs
 * the driver a system call and us a wake-up (a few µs): a window about that long is never much
 * worse than either choice alone, and each queue finds its own from its kicks:
 *  - the queue asked for kicks at q->idle_ns and one came `gap` later: had it polled that
 *    long, no kick and no wake-up. Shorter than the largest window (dev->poll_ns): the window
 *    grows to cover it (1.5 x gap, at least POLL_MIN_NS); longer: it halves (below
 *    POLL_MIN_NS: none, the queue is event-driven again);
 *  - a run that found work opens the window; while it lasts the queue polls;
 *  - polling an empty ring is paid for from a credit each packet the queue moves adds to
 *    (dev->poll_budget_ns, at most POLL_CREDIT_MAX_NS held): polling costs at most that much
 *    CPU per packet. A closed loop of a few frames in flight, where each wake-up would bound
 *    the rate, polls its short gaps and runs at full speed; a light open load, whose packets
 *    come far apart, earns too little to poll long: its CPU follows its packet rate, and an
 *    idle queue polls nothing;
 *  - polling pays only where the packets come sooner than a wake-up costs: the gaps a polling
 *    queue sees between the runs that find work, per packet found, are averaged
 *    (q->poll_gap_ns; a closed loop of 8 frames in a burst: its round trip / 8; a look that
 *    came late is no sample); above POLL_WORTH_NS the queue stops polling, and a kick grows
 *    its window again only after POLL_PROBE_WAKES more wake-ups (a probe: the traffic may
 *    have changed). A kick's own gap cannot tell: it includes the wake-up's latency (tens of
 *    µs on a VM).
 * Time spent polling is counted (stats.poll_ns).
 */
#define POLL_MIN_NS 500u
#define POLL_CREDIT_MAX_NS 1000000
#define POLL_WORTH_NS 5000u
#define POLL_GAP_MAX_NS (2 * POLL_WORTH_NS)
#define POLL_PROBE_WAKES 64u

/* The queue was idle (it asked for kicks at q->idle_ns) and runs again: adapt its window. */
static __attribute__((noinline)) void tx_poll_woken(struct vnet_dev *dev, struct vnet_queue *q)
{
	uint64_t gap = dev_now(dev) - q->idle_ns;

	q->idle_ns = 0;
	if (q->poll_gap_ns > POLL_WORTH_NS) {
		if (q->poll_probe) {
			q->poll_probe--;
			return; /* its gaps were too long to poll: event-driven until the next probe */
		}
		q->poll_gap_ns = 0; /* a probe: its gaps are measured afresh */
	}
	q->poll_probe = POLL_PROBE_WAKES;
	if (gap < dev->poll_ns) {
		uint64_t w = gap + gap / 2;

		w = w < POLL_MIN_NS ? POLL_MIN_NS : w > dev->poll_ns ? dev->poll_ns : w;
		if (w > q->poll_win_ns)
			q->poll_win_ns = (uint32_t)w;
	} else {
		q->poll_win_ns /= 2;
		if (q->poll_win_ns < POLL_MIN_NS)
			q->poll_win_ns = 0;
	}
}

/* tx_poll_on() for the adaptive mode (see above): `moved` packets; `polled`: the run was a poll. */
static __attribute__((noinline)) bool tx_poll_auto(struct vnet_dev *dev, struct vnet_queue *q,
						   uint32_t moved, bool polled, uint64_t now)
{
	uint64_t since = q->poll_look_ns ? now - q->poll_look_ns : 0;
	bool found = moved > 0;
	/* A look later than a window after the last: the worker served other queues or was
	 * preempted meanwhile. That is not this queue's polling, nor a gap its packets left. */
	const bool late = since > q->poll_win_ns;

	if (late)
		since = q->poll_win_ns;
	q->poll_look_ns = now;
	q->poll_credit_ns += (int64_t)moved * dev->poll_budget_ns;
	if (polled) {
		stat_add(&q->stats.poll_ns, since);
		if (!found)
			q->poll_credit_ns -= (int64_t)since; /* an empty look: paid from the credit */
	}
	if (q->poll_credit_ns > POLL_CREDIT_MAX_NS)
		q->poll_credit_ns = POLL_CREDIT_MAX_NS;
	if (q->poll_credit_ns < 0)
		q->poll_credit_ns = 0; /* a debt would outlive the load that made it */
	if (found && polled && !late && q->poll_found_ns) {
		/* A gap seen while polling, per packet found, at most POLL_GAP_MAX_NS (one long
		 * stall alone does not end polling): the average moves a quarter of the way to it. */
		uint64_t g = (now - q->poll_found_ns) / moved;

		g = g > POLL_GAP_MAX_NS ? POLL_GAP_MAX_NS : g;
		q->poll_gap_ns = (uint32_t)((int64_t)q->poll_gap_ns +
					    ((int64_t)g - (int64_t)q->poll_gap_ns) / 4);
		if (q->poll_gap_ns > POLL_WORTH_NS)
			q->poll_win_ns = 0; /* not worth it: ask for kicks once the ring is empty */
	}
	if (found) {
		q->poll_found_ns = now;
		q->poll_until_ns = now + q->poll_win_ns;
	}
	return now < q->poll_until_ns && q->poll_credit_ns > 0;
}

/*
 * Poll mode (dev->poll_ns): the ring is empty. A run that found work opens a window of
 * poll_ns (adaptive: the queue's own, tx_poll_auto()); while it lasts the queue keeps polling
 * instead of asking for kicks. tx-mode=timer batches on its timer and does not poll.
 */
static bool tx_poll_on(struct vnet_dev *dev, struct vnet_queue *q, uint32_t moved, bool polled)
{
	uint64_t now;

	if (__builtin_expect(!dev->poll_ns, 1) || dev->params.tx_mode == VNET_TX_TIMER)
		return false;
	now = dev_now(dev);
	if (dev->poll_auto)
		return tx_poll_auto(dev, q, moved, polled, now);
	if (moved)
		q->poll_until_ns = now + dev->poll_ns;
	return now < q->poll_until_ns;
}

/*
 * net_tx_process()'s work, specialised on the TX ring's fast path `kind` (vq_pop_as()): the
 * loop inlines that pop alone.
 */
static inline __attribute__((always_inline)) bool tx_process(struct vnet_dev *dev,
							     struct vnet_queue *q,
							     const unsigned kind)
{
	uint32_t total = 0, descs = 0, extra = 0;
	uint64_t bytes = 0;
	/* Read once: the limit only changes between runs (its setter parks the worker). */
	const bool limited = dev->tx_rate.on;
	/* Bursts: one-buffer chains go to the backend together (q->be and its ops only change
	 * with the worker parked). A rate limit decides chain by chain: no bursts then. */
	const bool burst = dev->be_ops && dev->be_ops->transmit_burst && q->be && !limited;
	const bool burst_offloads = burst && dev->be_ops->burst_offloads;
	const bool polled = q->polling;
	uint32_t polled_for = 0; /* of total, what tx_poll_on() was told of already */

	/* No kicks while we work: vq_kick_enable() re-checks before the queue goes idle. */
	vq_kick_disable(&q->vq);
	q->polling = q->relook = false;
	if (__builtin_expect(q->idle_ns != 0, 0)) /* adaptive poll mode: it was idle */
		tx_poll_woken(dev, q);
	dev->tx_pair = (uint16_t)(q->vq.index >> 1); /* the backend may ask (vnet_dev_rx_pair()) */
	if (__builtin_expect(limited, 0))
		net_rate_tx_refill(dev);
	for (;;) {
		bool spent = false;
		uint32_t done = 0, sent = 0;
		uint64_t sent_bytes = 0;
		unsigned nb = 0; /* chains in dev->tx_burst, popped but not yet sent */
		bool gave_back = false; /* the backend left some of the last burst */
		int r = 0, cost;

		while (done < TX_BATCH) {
			if (total + done + extra >= VNET_BUDGET_PACKETS ||
			    bytes >= VNET_BUDGET_BYTES || descs >= VNET_BUDGET_DESCS) {
				spent = true;
				break;
			}
			r = vq_pop_as(&q->vq, q->chain, kind, false);
			if (r <= 0)
				break;
			if (burst) {
				if (tx_burst_take(dev, q->chain, nb, burst_offloads)) {
					nb++;
					q->tx_blocked = false;
					bytes += q->chain->read_len;
					descs += q->chain->ndesc;
					q->guard.descs += q->chain->ndesc;
					done++;
					continue;
				}
				if (nb) { /* the burst goes first: used elements stay in pop order */
					bool full = false;
					unsigned left = tx_burst_flush(
						dev, q, nb,
						VNET_BUDGET_PACKETS - (total + done - nb + extra), &sent,
						&sent_bytes, &extra, &full);

					if (left) { /* floods filled the budget, or the backend */
						vq_unpop(&q->vq, left + 1); /* and this chain */
						tx_burst_untake(dev, q, nb, left, &done, &bytes, &descs);
						nb = 0;
						if (full) { /* resumed by vnet_dev_tx_resume() */
							q->tx_blocked = true;
							r = -EAGAIN;
							break;
						}
						continue;
					}
					nb = 0;
				}
			}
			if (__builtin_expect(limited, 0) && !tx_rate_ok(dev, q)) {
				/* Over the rate: it waits in the ring for the refill timer. */
				vq_unpop(&q->vq, 1);
				r = -EAGAIN;
				break;
			}
			cost = tx_send_one(dev, q);
			if (cost == -EAGAIN) {
				/* Given back, walked again on resume: the device's chain scratch is
				 * shared by its queues, so no queue keeps a chain across events. */
				vq_unpop(&q->vq, 1);
				q->tx_blocked = true;
				r = -EAGAIN;
				break;
			}
			if (cost != TX_DROPPED) {
				extra += (uint32_t)cost;
				sent++;
				sent_bytes += q->chain->read_len - dev->hdr_len;
			}
			q->tx_blocked = false;
			bytes += q->chain->read_len;
			descs += q->chain->ndesc;
			q->guard.descs += q->chain->ndesc;
			vq_push(&q->vq, q->chain->head, 0);
			done++;
		}
		if (nb) {
			bool full = false;
			unsigned left = tx_burst_flush(dev, q, nb,
						       VNET_BUDGET_PACKETS - (total + done - nb + extra),
						       &sent, &sent_bytes, &extra, &full);

			if (left) { /* floods filled the budget, or the backend: back to the ring */
				vq_unpop(&q->vq, left);
				tx_burst_untake(dev, q, nb, left, &done, &bytes, &descs);
				if (full) { /* resumed by vnet_dev_tx_resume() */
					q->tx_blocked = true;
					r = -EAGAIN;
				} else {
					gave_back = true;
				}
			}
		}
		if (done) {
			/* Counted once per batch (stat_atomic.h), before the decision reads them. */
			stat_add(&q->stats.packets, sent);
			stat_add(&q->stats.bytes, sent_bytes);
			/* Packets left at once; only the notification may wait. */
			vq_publish(&q->vq);
			notify_decide(dev, q, NOTIFY_COMPLETED, done);
		}
		total += done;
		if (r < 0)
			return false; /* backend full, over the rate (resume later) or queue broken */
		if (spent)
			return true; /* bounded work: yield to everything else that is ready */
		if (done == TX_BATCH || gave_back)
			continue;
		if (tx_poll_on(dev, q, total - polled_for, polled)) {
			q->polling = true; /* kicks stay off: the owner runs the queue again */
			return true;
		}
		/*
		 * A run that moved packets looks once more, on the owner's next round, before it asks
		 * for kicks: what the other ports did this round is often what the driver answers,
		 * and a kick costs the driver a system call and us a wake-up (a fast device that asks
		 * at once settles into a kick per few packets: docs/benchmarks.md, "Fifth round").
		 * Only a run that finds the ring empty asks: one look more per busy period, no spin.
		 */
		if (total && dev->params.tx_relook && dev->params.tx_mode == VNET_TX_KICK) {
			q->relook = true;
			return true;
		}
		if (!vq_kick_enable(&q->vq)) {
			if (dev->poll_auto) /* idle: the next kick tells how soon it came */
				q->idle_ns = q->poll_look_ns;
			return false;
		}
		vq_kick_disable(&q->vq); /* more arrived while enabling: keep going quietly */
		polled_for = total;
	}
}

/**
 * net_tx_process() - move the driver's TX chains to the backend, one budget
 * @dev: the device
 * @q: a TX queue (whatever started the run: kick, TX timer, backend resume)
 *
 * Kicks stay disabled while it works. At most VNET_BUDGET_PACKETS / _BYTES / _DESCS; used
 * entries are published, and the notification decided, once per batch of TX_BATCH. A backend
 * that is full (-EAGAIN) gets the chain back on resume (q->tx_blocked). Over the port's TX
 * rate the chain goes back too and the queue waits for its refill timer (net_rate.c). In poll
 * mode (vnet_dev_set_poll()) a ring found empty within the poll window leaves kicks off and
 * sets q->polling.
 * Return: true if it stopped at the budget with chains left, or polls (the caller schedules a
 * run).
 */
bool net_tx_process(struct vnet_dev *dev, struct vnet_queue *q)
{
	/* The ring's layout settles which pop the loop inlines (one compare a chain); a queue on
	 * no fast path takes the slow one in any of them. */
	switch (q->vq.ready) {
	case VQ_FAST_SPLIT_IN_ORDER:
		return tx_process(dev, q, VQ_FAST_SPLIT_IN_ORDER);
	case VQ_FAST_PACKED:
		return tx_process(dev, q, VQ_FAST_PACKED);
	default:
		return tx_process(dev, q, VQ_FAST_SPLIT);
	}
}

/* SPDX-License-Identifier: MIT */
/* switch_xworker.c - switch frames between workers: queued for another's ports, placed by it. */
#include "backend/switch/switch.h"

#include <errno.h>
#include <stdbool.h>
#include <string.h>
#include <stdint.h>
#include <sys/uio.h>

#include "backend/switch/switch_internal.h"
#include "backend/switch/switch_xq.h"
#include "dev/dev.h"

/*
 * A switch whose ports live on several workers: a frame for a port of another worker (or a
 * flood, one copy for each other worker that has ports) is copied into that worker's ring
 * (switch_xq.c) with a tag naming its port, and that worker's thread places it
 * (switch_worker_rx()). A full ring drops a flood and back-pressures a unicast's sender, whose
 * TX resumes once the ring has room. A port spread over workers (switch_attach_lane()) gets each
 * frame on the pair its device picks, on that pair's worker.
 */

#define SW_FLOOD 0xffffu /* cross-worker tag: every port of the receiving worker */
#define SW_TAG_VH (1ull << 63) /* cross-worker tag: the frame's offload header comes first */

_Static_assert(SWITCH_MAX_WORKERS <= XQ_MAX_WORKERS, "the cross-worker queues cover every worker");
_Static_assert(SW_MAX_FRAME + sizeof(struct virtio_net_hdr_v1) <= XQ_MAX_FRAME,
	       "every frame, with its offload header, fits a cross-worker queue");
_Static_assert(SWITCH_MAX_PORTS < SW_FLOOD, "a port slot is never the flood tag");

/* A frame for one pair of a spread port, on the worker running it (its home or a lane). */
static __attribute__((noinline)) void sw_deliver_pair(struct switch_port *dst, unsigned pair,
						      const struct sw_fwd *fw)
{
	swq_deliver(dst, fw, (int)pair);
}

/*
 * Copy fw into the ring from worker `from` to `to` with `tag` (xq_push()): a frame that asks
 * for an offload goes with its header in front (SW_TAG_VH).
 */
static int sw_xq_push(struct xq *q, unsigned from, unsigned to, uint64_t tag,
		      const struct sw_fwd *fw)
{
	struct iovec tmp[2], v[SW_FWD_IOV + 1];
	const struct iovec *iov;
	unsigned cnt = sw_fwd_vec(fw, tmp, &iov);

	if (__builtin_expect(!fw->vh, 1))
		return xq_push(q, from, to, tag, iov, cnt, 0, fw->len);
	v[0] = (struct iovec){.iov_base = (void *)fw->vh, .iov_len = sizeof(*fw->vh)};
	memcpy(v + 1, iov, cnt * sizeof(*iov));
	return xq_push(q, from, to, tag | SW_TAG_VH, v, cnt + 1, 0, sizeof(*fw->vh) + fw->len);
}

/*
 * A frame from the ring that asks for an offload: its header and what it asks, parsed again
 * from the ring's copy (vnetd's memory: the bytes the sender checked). False: not parsed
 * (nothing the sender queues; dropped).
 */
static bool xq_offload(const uint8_t **frame, size_t *len,
		       struct virtio_net_hdr_v1 *vh, struct pkt_offload *o)
{
	if (*len < sizeof(*vh))
		return false;
	memcpy(vh, *frame, sizeof(*vh));
	*frame += sizeof(*vh);
	*len -= sizeof(*vh);
	return pkt_offload_parse(vh, *frame, *len, *len, o) == PKT_OK;
}

/* One frame another worker queued for worker `worker` (xq_deliver_fn). */
static unsigned xq_deliver(void *ctx, unsigned worker, uint64_t tag, const uint8_t *frame,
			   size_t len)
{
	struct vnet_switch *sw = ctx;
	struct sw_worker *w = &sw->w[worker];
	struct virtio_net_hdr_v1 vh;
	struct pkt_offload o;
	const bool offload = (tag & SW_TAG_VH) && xq_offload(&frame, &len, &vh, &o);
	const struct iovec iov = {.iov_base = (void *)frame, .iov_len = len};
	struct sw_fwd fw = {.iov = &iov, .iovcnt = 1, .len = len}; /* in vnetd's memory */
	unsigned slot = (unsigned)(tag & 0xffff), pair_plus1 = (unsigned)(tag >> 48 & 0xff);
	struct switch_port *dst;

	if ((tag & SW_TAG_VH) && !offload)
		return 1;
	sw_fwd_offload(&fw, w, offload ? &vh : NULL, offload ? &o : NULL);

	if (slot == SW_FLOOD) {
		/* Not back to the sender: a spread port's home may be here, its lane the sender. */
		unsigned from = (unsigned)(tag >> 16 & 0xffff), from_pair = (unsigned)(tag >> 32 & 0xff);

		for (unsigned i = 0; i < w->nports; i++) {
			dst = w->ports[i];
			if (dst->is_lane || dst->slot + 1u == from)
				continue;
			sw_xw_deliver(worker, from_pair, dst, &fw, true);
		}
		return w->nports;
	}
	dst = slot < SWITCH_MAX_PORTS ? sw->ports[slot] : NULL;
	/* Detached since (and the slot perhaps reused): the frame was for nobody here now. */
	if (!dst || dst->serial != (uint32_t)(tag >> 16) || dst->worker != worker)
		return 1;
	if (pair_plus1)
		sw_deliver_pair(dst, pair_plus1 - 1, &fw);
	else
		sw_deliver(dst, &fw, true);
	return 1;
}

/**
 * sw_cross_flood() - queue a flood from a port for another worker's ports: one copy, or a drop.
 * @src: the sending port, on its worker's thread
 * @to: the receiving worker, whose thread hands the copy to each of its ports
 * @fw: the frame
 *
 * The tag names the sender (the flood does not go back to it) and the sender's pair (a spread
 * port's pick). Counted in src's crossed, or dropped when the ring is full.
 */
void sw_cross_flood(struct switch_port *src, unsigned to, const struct sw_fwd *fw)
{
	uint64_t tag = SW_FLOOD | (uint64_t)(src->home->slot + 1u) << 16 |
		       (uint64_t)sw_sender_pair(src) << 32;

	guest_race(GUEST_RACE_TX_FORWARD);
	if (sw_xq_push(src->sw->xq, src->worker, to, tag, fw) == 0)
		src->crossed++;
	else
		src->dropped++;
}

/**
 * sw_cross_unicast() - queue a unicast frame for a port on another worker.
 * @src: the sending port, on its worker's thread
 * @to: the receiving port's worker
 * @tag: the receiving port's tag (sw_port_tag())
 * @fw: the frame
 *
 * A full ring back-pressures the sender (the chain stays in its TX ring) instead of dropping
 * the frame after all the work of sending it. The receiving worker drains its rings whatever
 * its guests do, and wakes this one when it gave bytes back (xq_block()); switch_worker_rx()
 * then resumes the port.
 *
 * Return: 0 queued (or dropped: too large), -EAGAIN the ring is full: the sender sends it again
 * on resume.
 */
int sw_cross_unicast(struct switch_port *src, unsigned to, uint64_t tag, const struct sw_fwd *fw)
{
	struct xq *q = src->sw->xq;
	int r;

	guest_race(GUEST_RACE_TX_FORWARD);
	while ((r = sw_xq_push(q, src->worker, to, tag, fw)) == -ENOSPC) {
		if (xq_block(q, src->worker, to, fw->len + (fw->vh ? sizeof(*fw->vh) : 0))) {
			src->xq_wait = (uint16_t)(to + 1);
			src->sw->w[src->worker].xq_waiting = true;
			return -EAGAIN;
		}
	}
	if (r == 0)
		src->crossed++;
	else
		src->dropped++;
	return 0;
}

/**
 * sw_spread_deliver() - a frame for a port spread over workers, on one worker.
 * @src: the sending port (a unicast), NULL for a flood (or a flood's relayed copy)
 * @worker: the worker whose thread this is
 * @from_pair: the sender's pair (the device's pick without MQ: sw_sender_pair())
 * @dst: the spread port's home
 * @fw: the frame
 *
 * The frame goes to the pair dst's device picks (RSS's table, else the flow hash), run here or
 * by one of its lanes. Here: delivered at once. Elsewhere: queued for that worker; when full, a
 * flood is dropped (counted in dst's spread_dropped) and a unicast back-pressures its sender.
 *
 * Return: 0, or -EAGAIN as sw_cross_unicast().
 */
int sw_spread_deliver(struct switch_port *src, unsigned worker, unsigned from_pair,
		      struct switch_port *dst, const struct sw_fwd *fw)
{
	struct iovec tmp[2];
	const struct iovec *iov;
	unsigned cnt = sw_fwd_vec(fw, tmp, &iov);
	unsigned pair = vnet_dev_rx_pair(dst->dev, from_pair, iov, cnt, 0, fw->len);
	struct switch_port *run = dst->pair_port[pair < dst->npairs ? pair : 0];
	uint64_t tag = sw_port_tag(run, pair + 1u);

	if (run->worker == worker) {
		sw_deliver_pair(run, pair, fw);
		return 0;
	}
	if (src)
		return sw_cross_unicast(src, run->worker, tag, fw);
	guest_race(GUEST_RACE_TX_FORWARD);
	if (sw_xq_push(dst->sw->xq, worker, run->worker, tag, fw) != 0)
		__atomic_fetch_add(&dst->spread_dropped, 1, __ATOMIC_RELAXED);
	return 0;
}

/* On worker `worker`: resume the TX of its ports whose cross-worker ring has room again. */
static void xq_resume(struct vnet_switch *sw, unsigned worker)
{
	struct sw_worker *own = &sw->w[worker];

	unsigned first = own->xq_next < own->nports ? own->xq_next : 0;

	/* Ports waiting for one ring take turns at going first (the first may fill it again). */
	own->xq_next = first + 1;
	own->xq_waiting = false;
	for (unsigned k = 0; k < own->nports; k++) {
		struct switch_port *p = own->ports[(first + k) % own->nports];

		if (!p->xq_wait)
			continue;
		if (xq_blocked(sw->xq, worker, p->xq_wait - 1u)) {
			own->xq_waiting = true;
			continue;
		}
		p->xq_wait = 0;
		if (p->dev)
			vnet_dev_tx_resume(p->dev);
	}
}

/**
 * switch_worker_rx() - place one budget (VNET_BUDGET_*) of the frames other workers queued for a
 * worker's ports.
 * @sw: the switch
 * @worker: the worker; called on its thread, after a wake-up or from its run queue
 *
 * Return: true when frames are left: call again (from the run queue), no wake-up comes for them;
 * false when all were placed, and always with one worker.
 */
bool switch_worker_rx(struct vnet_switch *sw, unsigned worker)
{
	if (!sw->xq || worker >= sw->nworkers)
		return false;
	if (sw->w[worker].xq_waiting)
		xq_resume(sw, worker);
	return xq_drain(sw->xq, worker, VNET_BUDGET_PACKETS, VNET_BUDGET_BYTES, xq_deliver, sw) > 0;
}

/**
 * switch_worker_round_end() - at the end of a worker's round, wake the workers it queued frames
 * for in that round (once each). A no-op with one worker.
 * @sw: the switch
 * @worker: the worker; called on its thread
 */
void switch_worker_round_end(struct vnet_switch *sw, unsigned worker)
{
	if (sw->xq && worker < sw->nworkers)
		xq_flush(sw->xq, worker);
}

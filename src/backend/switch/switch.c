/* SPDX-License-Identifier: MIT */
/* switch.c - switch backend data path: flow cache, delivery and transmit between vnetd ports. */
#include "backend/switch/switch.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "mem/mem.h"
#include "lib/iov.h"
#include "lib/log.h"
#include "lib/stat_atomic.h"
#include "backend/switch/switch_fdb.h"
#include "backend/switch/switch_internal.h"
#include "backend/switch/switch_xq.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"

/*
 * An L2 learning switch forwarding frames between vnetd ports: what runs for every frame, on
 * the workers' threads. The switch and its ports themselves (create, attach, detach, counters)
 * are switch_port.c's; the slow parts of the port policies (drops and their log lines, storm
 * control's refill, the ARP/ND, ips= and access-port checks) switch_policy.c's; their state is
 * in switch_internal.h.
 */

#define SW_FLOOD 0xffffu   /* cross-worker tag: every port of the receiving worker */
#define SW_FWD_IOV 8	   /* a forwarded frame's pieces: its checked copy, the rest in place */

_Static_assert(SWITCH_MAX_WORKERS <= XQ_MAX_WORKERS, "the cross-worker queues cover every worker");
_Static_assert(SW_MAX_FRAME <= XQ_MAX_FRAME, "every frame fits a cross-worker queue");
_Static_assert(SWITCH_MAX_PORTS < SW_FLOOD, "a port slot is never the flood tag");
_Static_assert(SW_HEAD_MAX >= SWITCH_IPS_HDR, "ips= reads the checked copy of a frame's head");

/*
 * A frame as the switch forwards it (sw_fwd_iov()): its len bytes, first the sender's checked
 * copy of its head (what port security, the tag check and ips= read), then the rest in place in
 * the sender's guest memory (or a cross-worker ring, an uplink's buffer). Nearly always (flat)
 * the whole frame lies in one buffer there and the checked copy is its Ethernet header alone:
 * a receiving guest takes it in one copy with `head` put over its first bytes
 * (vnet_dev_receive_checked(), vnet_dev_receive_burst()'s heads), and the others get the two
 * pieces from sw_fwd_vec().
 * Else iov[0..iovcnt): the checked copy, then the rest's pieces.
 */
struct sw_fwd {
	const uint8_t *flat; /* the frame in one buffer; NULL: iov */
	const uint8_t *head; /* flat: the VNET_FRAME_HEAD bytes that replace its first ones */
	const struct iovec *iov;
	unsigned iovcnt;
	size_t len;
};

/* fw's frame as iovecs, at offset 0 (tmp: room for a flat frame's two pieces); their count. */
static inline unsigned sw_fwd_vec(const struct sw_fwd *fw, struct iovec tmp[2],
				  const struct iovec **iov)
{
	const struct vnet_frame f = {.data = fw->flat, .len = (uint32_t)fw->len};

	if (!fw->flat) {
		*iov = fw->iov;
		return fw->iovcnt;
	}
	*iov = tmp;
	return vnet_frame_iov(&f, fw->head, tmp);
}

/* A frame copied for a port whose guest had no RX buffers (the header is a zeroed one). */
struct sw_packet {
	size_t len;
	int pair;		 /* the queue pair it is for (a spread port's), or -1: the device picks */
	size_t cap;		 /* SW_SMALL_CAP or SW_MAX_FRAME */
	struct sw_packet *next; /* in a free list */
	uint8_t data[];
};

#define SW_SMALL_CAP 2048
#define SW_POOL_SMALL 1024 /* free buffers kept for reuse: no allocation per packet */
#define SW_POOL_LARGE 32

/* ---- Flow cache in front of the FDB -------------------------------------------------------- */

/*
 * learn_cached()'s miss: a MAC refused a moment ago (a limit) gets the same answer until the
 * retry time or a change of its set, so a port sending on from a MAC it may not teach costs a
 * compare a frame; anything else asks the FDB. Out of line: it keeps the hot path's registers.
 */
static __attribute__((noinline)) void learn_miss(struct vnet_switch *sw, struct switch_port *p,
						 const uint8_t *mac, uint64_t now)
{
	enum fdb_refusal why;

	if (!p->src_hit && now < p->src_retry_ns && fdb_valid(&p->src_ver) &&
	    !memcmp(p->src_mac, mac, SW_ETH_ALEN))
		return;
	stat_inc(&p->cache_misses);
	p->src_retry_ns = 0;
	p->src_hit = fdb_learn(&sw->fdb, p->home->slot, mac, now, &p->src_ver, &why, &p->src_retry_ns);
	memcpy(p->src_mac, mac, SW_ETH_ALEN);
	if (why != FDB_LEARNT && !p->refusal_logged[why == FDB_OVER_RATE])
		sw_learn_refused(p, why);
}

/*
 * fdb_learn() through p's flow cache: the same source as last time costs one compare. With one
 * worker the entry itself says whether it still holds our MAC (nothing changes it meanwhile);
 * with several (`xw`) another thread may be rewriting it, so its set's sequence says so.
 */
static inline __attribute__((always_inline)) void
learn_cached(struct vnet_switch *sw, struct switch_port *p, const uint8_t *mac, uint64_t now,
	     const bool xw)
{
	struct fdb_entry *e = p->src_hit;

	if (e && (xw ? fdb_valid(&p->src_ver) && !memcmp(p->src_mac, mac, SW_ETH_ALEN)
		     : e->port == p->slot && !memcmp(e->mac, mac, SW_ETH_ALEN))) {
		fdb_touch(e, now);
		return;
	}
	learn_miss(sw, p, mac, now);
}

/* fdb_lookup() through p's flow cache: the port behind `mac`, NULL to flood. */
static inline __attribute__((always_inline)) struct switch_port *
lookup_cached(struct vnet_switch *sw, struct switch_port *p,
					 const uint8_t *mac, uint64_t now)
{
	struct fdb_entry *e = p->dst_hit;

	if (!fdb_valid(&p->dst_ver) || memcmp(p->dst_mac, mac, SW_ETH_ALEN) ||
	    (e && fdb_expired(e, now))) {
		uint16_t slot = fdb_lookup(&sw->fdb, mac, now, &p->dst_hit, &p->dst_ver);

		stat_inc(&p->cache_misses);
		memcpy(p->dst_mac, mac, SW_ETH_ALEN);
		p->dst_port = slot == FDB_NO_PORT ? NULL : sw->ports[slot];
		e = p->dst_hit;
	}
	/* No entry, no port (flood): decided on the register that holds e, no load. */
	return e ? p->dst_port : NULL;
}

/* ---- Port security ------------------------------------------------------------------------ */

/* Whether two MACs are equal: two loads and compares each, never a call. */
static inline __attribute__((always_inline)) bool mac_eq(const uint8_t *a, const uint8_t *b)
{
	uint32_t a4, b4;
	uint16_t a2, b2;

	memcpy(&a4, a, 4);
	memcpy(&b4, b, 4);
	memcpy(&a2, a + 4, 2);
	memcpy(&b2, b + 4, 2);
	return ((a4 ^ b4) | (uint32_t)(a2 ^ b2)) == 0;
}

/* The frame's source is one of p's allowed-macs= (inlined: bridged guests take it a frame). */
static inline __attribute__((always_inline)) bool psec_allowed(const struct switch_port *p,
							       const uint8_t *mac)
{
	for (unsigned i = 0; i < p->n_allowed; i++)
		if (mac_eq(p->allowed[i], mac))
			return true;
	return false;
}

/* IPv4's EtherType, 0x0800, as its two bytes read into a uint16_t in memory order. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SW_ET_IPV4 0x0008
#else
#define SW_ET_IPV4 0x0800
#endif

/* ---- Storm control ------------------------------------------------------------------------ */

/*
 * p has a flood-rate: take one frame's token from its bucket. False: over the rate, the frame
 * is dropped and counted (logged at most once a second). Inline: while the worker's clock
 * stands still, a drop is a compare, the counter and another compare; no clock read.
 */
static inline __attribute__((always_inline)) bool storm_take(struct switch_port *p, uint64_t now)
{
	if (__builtin_expect(now != p->flood_ns, 0))
		sw_storm_refill(p, now);
	if (p->flood_credit < SW_NS) { /* no hint: in a storm, the common case */
		stat_inc(&p->storm_dropped);
		if (now >= p->storm_log_ns)
			sw_storm_log(p, now);
		return false;
	}
	p->flood_credit -= SW_NS;
	return true;
}

/* ---- Delivery on the receiver's worker ---------------------------------------------------- */

/* The capacity of the buffer a frame of len bytes is queued in. */
static size_t pkt_cap(size_t len)
{
	return len > SW_SMALL_CAP ? SW_MAX_FRAME : SW_SMALL_CAP;
}

/* A buffer for len bytes from the worker's pool (allocated only while the pool warms up). */
static struct sw_packet *pkt_get(struct sw_worker *w, size_t len)
{
	unsigned k = len > SW_SMALL_CAP;
	struct sw_packet *pkt = w->pool[k];

	if (pkt) {
		w->pool[k] = pkt->next;
		w->pool_len[k]--;
		return pkt;
	}
	pkt = malloc(sizeof(*pkt) + pkt_cap(len));
	if (pkt)
		pkt->cap = pkt_cap(len);
	return pkt;
}

static void pkt_put(struct sw_worker *w, struct sw_packet *pkt)
{
	unsigned k = pkt->cap > SW_SMALL_CAP;

	if (w->pool_len[k] >= (k ? SW_POOL_LARGE : SW_POOL_SMALL)) {
		free(pkt);
		return;
	}
	pkt->next = w->pool[k];
	w->pool[k] = pkt;
	w->pool_len[k]++;
}

/**
 * switch_pool_free() - free a worker's pool of packet buffers and its whole-frame copy
 * (switch_destroy()).
 * @w: the worker, which forwards no more
 */
void switch_pool_free(struct sw_worker *w)
{
	free(w->whole);
	w->whole = NULL;
	for (unsigned k = 0; k < 2; k++)
		while (w->pool[k]) {
			struct sw_packet *pkt = w->pool[k];

			w->pool[k] = pkt->next;
			free(pkt);
		}
}

/*
 * Copy the frame (len bytes at byte off of iov) to the tail of dst's queue, or drop it. The
 * queue's byte budget counts each buffer's capacity, not the frame's length: what a queue
 * holds in memory is SWITCH_QUEUE_BYTES at most (a 2049-byte frame takes a 64 KiB buffer).
 */
static void port_enqueue(struct switch_port *dst, const struct iovec *iov, unsigned iovcnt,
			 size_t off, size_t len, int pair)
{
	struct sw_packet *pkt;

	if (dst->q_len >= SWITCH_QUEUE_PACKETS || dst->q_bytes + pkt_cap(len) > SWITCH_QUEUE_BYTES) {
		dst->dropped++;
		return;
	}
	pkt = pkt_get(&dst->sw->w[dst->worker], len);
	if (!pkt) {
		dst->dropped++;
		return;
	}
	pkt->len = iov_copy_from(iov, iovcnt, off, pkt->data, len);
	pkt->pair = pair;
	dst->queue[(dst->q_head + dst->q_len) % SWITCH_QUEUE_PACKETS] = pkt;
	dst->q_len++;
	dst->q_bytes += pkt->cap;
}

static void port_dequeue(struct switch_port *p)
{
	struct sw_packet *pkt = p->queue[p->q_head];

	p->q_head = (p->q_head + 1) % SWITCH_QUEUE_PACKETS;
	p->q_len--;
	p->q_bytes -= pkt->cap;
	pkt_put(&p->sw->w[p->worker], pkt);
}

/**
 * switch_queue_clear() - drop every packet queued for p's guest (switch_detach(), device reset).
 * @p: the port, on its worker's thread or with it parked
 */
void switch_queue_clear(struct switch_port *p)
{
	while (p->q_len)
		port_dequeue(p);
}

/*
 * Deliver queued packets in order while p's guest has buffers, at most max_pkts / max_bytes.
 * 0: the queue is empty; -1: the guest ran out of buffers (rx_resume() follows its next
 * posting); 1: the budget ended first.
 */
static int port_drain(struct switch_port *p, unsigned max_pkts, size_t max_bytes)
{
	unsigned done = 0;
	size_t bytes = 0;
	int r = 0;

	if (p->resuming)
		return p->q_len ? -1 : 0;
	p->resuming = true;
	while (p->q_len) {
		struct sw_packet *pkt = p->queue[p->q_head];
		struct iovec iov = {.iov_base = pkt->data, .iov_len = pkt->len};

		if (done >= max_pkts || bytes >= max_bytes) {
			r = 1;
			break;
		}
		if (!(pkt->pair < 0 ? vnet_dev_receive_frame(p->dev, NULL, &iov, 1, 0, pkt->len)
				    : vnet_dev_receive_frame_on(p->dev, (unsigned)pkt->pair, NULL, &iov,
								1, 0, pkt->len))) {
			r = -1;
			break;
		}
		done++;
		bytes += pkt->len;
		port_dequeue(p);
	}
	p->resuming = false;
	return r;
}

/*
 * Give a frame to dst's guest with a zeroed header: one copy, from the sender's guest memory
 * (or a cross-worker queue) straight into dst's buffers, its head from the sender's checked
 * copy (struct sw_fwd). Packets queued earlier (dst had no buffers) go first, so order is kept
 * and the port returns to the one-copy path as soon as its guest has buffers again; only what
 * still does not fit is queued (a copy). Runs on dst's worker.
 */
static inline __attribute__((always_inline)) void
port_deliver(struct switch_port *dst, const struct sw_fwd *fw, const int pair)
{
	struct iovec tmp[2];
	const struct iovec *iov;
	unsigned cnt;

	guest_race(GUEST_RACE_TX_FORWARD);
	if (!dst->q_len || port_drain(dst, SWITCH_QUEUE_PACKETS, SWITCH_QUEUE_BYTES) == 0) {
		if (pair < 0 && fw->flat) {
			/* One buffer and the checked header, as a burst's frame: one copy. */
			const struct vnet_frame f = {.data = fw->flat, .len = (uint32_t)fw->len};

			if (vnet_dev_receive_checked(dst->dev, &f, fw->head))
				return;
		} else {
			cnt = sw_fwd_vec(fw, tmp, &iov);
			if (pair < 0 ? vnet_dev_receive_frame(dst->dev, NULL, iov, cnt, 0, fw->len)
				     : vnet_dev_receive_frame_on(dst->dev, (unsigned)pair, NULL, iov,
								 cnt, 0, fw->len))
				return;
		}
	}
	cnt = sw_fwd_vec(fw, tmp, &iov);
	port_enqueue(dst, iov, cnt, 0, fw->len, pair);
}

/* A frame for one pair of a spread port, on the worker running it (its home or a lane). */
static __attribute__((noinline)) void port_deliver_pair(struct switch_port *dst, unsigned pair,
							const struct sw_fwd *fw)
{
	port_deliver(dst, fw, (int)pair);
}

/* The cross-worker tag of a frame for port p (its slot and serial; a pair + 1, or 0). */
static inline uint64_t port_tag(const struct switch_port *p, unsigned pair_plus1)
{
	return (uint64_t)pair_plus1 << 48 | (uint64_t)p->serial << 16 | p->slot;
}

/*
 * A frame for a port spread over workers (dst its home), on worker `worker`: the pair its device
 * picks (RSS's table, else the flow hash), run here or by one of its lanes. Here: delivered at
 * once. Elsewhere: queued for that worker; when full, a flood (`src` NULL) is dropped and a
 * unicast back-pressures its sender (-EAGAIN: cross_unicast()).
 */
static int spread_deliver(struct switch_port *src, unsigned worker, unsigned from_pair,
			  struct switch_port *dst, const struct sw_fwd *fw);

/* The pair of the sender's TX queue (a spread destination's pick without MQ), 0 for uplinks. */
static inline unsigned sender_pair(const struct switch_port *src)
{
	return src->dev ? vnet_dev_tx_pair(src->dev) : 0u;
}

/*
 * port_deliver(), or an uplink's deliver() when dst is one: `guarded` (a constant) is the
 * guarded transmit's and the cross-worker queue's, the only ones that may meet an uplink.
 */
static inline __attribute__((always_inline)) void sw_deliver(struct switch_port *dst,
							     const struct sw_fwd *fw,
							     const bool guarded)
{
	if (guarded && dst->up) {
		struct iovec tmp[2];
		const struct iovec *iov;
		unsigned cnt = sw_fwd_vec(fw, tmp, &iov);

		guest_race(GUEST_RACE_TX_FORWARD);
		dst->up->deliver(dst->up_ctx, iov, cnt, 0, fw->len);
		return;
	}
	port_deliver(dst, fw, -1);
}

/* sw_deliver() on a switch spread over workers: a spread port's pair may be another's. */
static inline __attribute__((always_inline)) void
xw_deliver(unsigned worker, unsigned from_pair, struct switch_port *dst, const struct sw_fwd *fw,
	   const bool guarded)
{
	if (__builtin_expect(dst->npairs != 0, 0))
		(void)spread_deliver(NULL, worker, from_pair, dst, fw);
	else
		sw_deliver(dst, fw, guarded);
}

/* One frame another worker queued for worker `worker` (xq_deliver_fn). */
static unsigned xq_deliver(void *ctx, unsigned worker, uint64_t tag, const uint8_t *frame,
			   size_t len)
{
	struct vnet_switch *sw = ctx;
	struct sw_worker *w = &sw->w[worker];
	const struct iovec iov = {.iov_base = (void *)frame, .iov_len = len};
	const struct sw_fwd fw = {.iov = &iov, .iovcnt = 1, .len = len}; /* in vnetd's memory */
	unsigned slot = (unsigned)(tag & 0xffff), pair_plus1 = (unsigned)(tag >> 48 & 0xff);
	struct switch_port *dst;

	if (slot == SW_FLOOD) {
		/* Not back to the sender: a spread port's home may be here, its lane the sender. */
		unsigned from = (unsigned)(tag >> 16 & 0xffff), from_pair = (unsigned)(tag >> 32 & 0xff);

		for (unsigned i = 0; i < w->nports; i++) {
			dst = w->ports[i];
			if (dst->is_lane || dst->slot + 1u == from)
				continue;
			xw_deliver(worker, from_pair, dst, &fw, true);
		}
		return w->nports;
	}
	dst = slot < SWITCH_MAX_PORTS ? sw->ports[slot] : NULL;
	/* Detached since (and the slot perhaps reused): the frame was for nobody here now. */
	if (!dst || dst->serial != (uint32_t)(tag >> 16) || dst->worker != worker)
		return 1;
	if (pair_plus1)
		port_deliver_pair(dst, pair_plus1 - 1, &fw);
	else
		sw_deliver(dst, &fw, true);
	return 1;
}

/* ---- Transmit on the sender's worker ------------------------------------------------------ */

/* Queue the frame for worker `to` (dst a port there, or SW_FLOOD): one copy, or a drop. */
static void cross_send(struct switch_port *src, unsigned to, const struct switch_port *dst,
		       const struct sw_fwd *fw)
{
	/* a flood names its sender (not back to it) and the sender's pair (a spread port's pick) */
	uint64_t tag = dst ? port_tag(dst, 0)
			   : SW_FLOOD | (uint64_t)(src->home->slot + 1u) << 16 |
				     (uint64_t)sender_pair(src) << 32;
	struct iovec tmp[2];
	const struct iovec *iov;
	unsigned cnt = sw_fwd_vec(fw, tmp, &iov);

	guest_race(GUEST_RACE_TX_FORWARD);
	if (xq_push(src->sw->xq, src->worker, to, tag, iov, cnt, 0, fw->len) == 0)
		src->crossed++;
	else
		src->dropped++;
}

/*
 * Queue a unicast frame for a port on another worker; a full ring back-pressures the sender
 * (-EAGAIN: the chain stays in its TX ring) instead of dropping the frame after all the work of
 * sending it. The receiving worker drains its rings whatever its guests do, and wakes this one
 * when it gave bytes back (xq_block()); switch_worker_rx() then resumes the port.
 */
static int cross_unicast(struct switch_port *src, unsigned to, uint64_t tag,
			 const struct sw_fwd *fw)
{
	struct xq *q = src->sw->xq;
	struct iovec tmp[2];
	const struct iovec *iov;
	unsigned cnt = sw_fwd_vec(fw, tmp, &iov);
	int r;

	guest_race(GUEST_RACE_TX_FORWARD);
	while ((r = xq_push(q, src->worker, to, tag, iov, cnt, 0, fw->len)) == -ENOSPC) {
		if (xq_block(q, src->worker, to, fw->len)) {
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

static int spread_deliver(struct switch_port *src, unsigned worker, unsigned from_pair,
			  struct switch_port *dst, const struct sw_fwd *fw)
{
	struct iovec tmp[2];
	const struct iovec *iov;
	unsigned cnt = sw_fwd_vec(fw, tmp, &iov);
	unsigned pair = vnet_dev_rx_pair(dst->dev, from_pair, iov, cnt, 0, fw->len);
	struct switch_port *run = dst->pair_port[pair < dst->npairs ? pair : 0];
	uint64_t tag = port_tag(run, pair + 1u);

	if (run->worker == worker) {
		port_deliver_pair(run, pair, fw);
		return 0;
	}
	if (src)
		return cross_unicast(src, run->worker, tag, fw);
	guest_race(GUEST_RACE_TX_FORWARD);
	if (xq_push(dst->sw->xq, worker, run->worker, tag, iov, cnt, 0, fw->len) != 0)
		__atomic_fetch_add(&dst->spread_dropped, 1, __ATOMIC_RELAXED);
	return 0;
}

/*
 * What every frame of src goes through before it is forwarded: its length, port security, storm
 * control for broadcasts, the access port's tag check, ips=, then learning its source. Each
 * check reads src's copy of the frame's first bytes (sw_head()), taken once from the guest:
 * the frame's MACs and EtherType (src->head), grown by the checks that read further
 * (sw_head_need()); the switch forwards that copy (sw_fwd_iov()). False: dropped (counted).
 * `xw`, `storm`, `ips`: as transmit()'s.
 */
static inline __attribute__((always_inline)) bool
sw_admit(struct switch_port *src, const struct iovec *iov, unsigned iovcnt, size_t off, size_t len,
	 uint64_t now, const bool xw, const bool storm, const bool ips)
{
	const uint8_t *dst_mac = src->head, *src_mac = src->head + SW_ETH_ALEN;

	if (len < SW_MIN_FRAME || len > SW_MAX_FRAME) {
		src->dropped++;
		log_guest("switch %s: dropped a frame of %zu bytes (%d to %d)", src->name, len,
			  SW_MIN_FRAME, SW_MAX_FRAME);
		return false;
	}
	/*
	 * The MAC addresses and EtherType, into the port: what the checks read and what leaves;
	 * the rest of the frame is copied once, later. The guest's header is not: the switch
	 * offers no offloads, so the device already dropped any frame asking for a checksum or GSO
	 * (tx_hdr_allowed()), and the header we forward is a zeroed one.
	 */
	src->head_len = SW_MIN_FRAME;
	iov_copy_from(iov, iovcnt, off, src->head, SW_MIN_FRAME);

	/*
	 * Port security: in the common case one compare against the port's MAC, and a look at the
	 * EtherType (ARP and ND carry MACs of their own).
	 */
	if (src->psec) {
		uint16_t et; /* the EtherType as it is in the frame: IPv4 is one compare */

		if (__builtin_expect(!mac_eq(src_mac, src->psec_mac), 0) &&
		    !psec_allowed(src, src_mac)) {
			sw_psec_drop(src, src_mac);
			return false;
		}
		memcpy(&et, src->head + 2 * SW_ETH_ALEN, sizeof(et));
		if (__builtin_expect(et != SW_ET_IPV4, 0) && !sw_lladdr_pass(src, iov, iovcnt, off, len))
			return false;
	}
	/*
	 * Storm control: a broadcast or multicast over the rate is dropped before any other work
	 * (the tag and IP checks too: in a storm, every instruction of a drop counts).
	 */
	if (storm && src->flood_rate && (dst_mac[0] & 1) && !storm_take(src, now))
		return false;
	if (storm && src->access && sw_access_tagged(src))
		return false;
	if (ips && !sw_ips_pass(src, iov, iovcnt, off, len))
		return false;
	learn_cached(src->sw, src, src_mac, now, xw);
	guest_race(GUEST_RACE_TX_ADMITTED);
	return true;
}

/* sw_fwd_iov()'s general case: a longer checked copy, or a frame in several pieces. */
static __attribute__((noinline)) bool sw_fwd_iov_slow(struct switch_port *src,
						      const struct iovec *iov, unsigned iovcnt,
						      size_t off, size_t len,
						      struct iovec v[SW_FWD_IOV], struct sw_fwd *fw)
{
	const struct iovec *in = iov;
	size_t at = off + src->head_len, rest = len - src->head_len;
	unsigned n = 1, cnt = iovcnt;

	v[0] = (struct iovec){.iov_base = (void *)sw_head(src), .iov_len = src->head_len};
	fw->iov = v;
	while (cnt && at >= in[0].iov_len) {
		at -= in[0].iov_len;
		in++;
		cnt--;
	}
	for (unsigned i = 0; rest && i < cnt && n < SW_FWD_IOV; i++, at = 0) {
		size_t take = in[i].iov_len - at < rest ? in[i].iov_len - at : rest;

		v[n++] = (struct iovec){.iov_base = (uint8_t *)in[i].iov_base + at, .iov_len = take};
		rest -= take;
	}
	if (!rest || n < SW_FWD_IOV) { /* all of it (the chain may not hold more: as it is) */
		fw->iovcnt = n;
		return true;
	}
	/* More pieces than SW_FWD_IOV (no Linux guest's): the whole frame into the port's copy. */
	if (!sw_head_need(src, iov, iovcnt, off, len, len))
		return false;
	v[0] = (struct iovec){.iov_base = (void *)sw_head(src), .iov_len = src->head_len};
	fw->iovcnt = 1;
	return true;
}

/*
 * The frame (len bytes at byte off of iov) as every path forwards it, into fw (struct sw_fwd,
 * v its pieces if need be): src's checked copy of its first bytes (sw_head(), what the checks
 * read), then the rest of it in place in the guest's buffers, which each receiver, queue or
 * backend copies once. False when the frame cannot be forwarded (dropped: no memory for a copy).
 */
static inline __attribute__((always_inline)) bool
sw_fwd_iov(struct switch_port *src, const struct iovec *iov, unsigned iovcnt, size_t off,
	   size_t len, struct iovec v[SW_FWD_IOV], struct sw_fwd *fw)
{
	const size_t h = src->head_len;

	fw->len = len;
	/* Nearly always: the frame in the chain's first piece, ... */
	if (iovcnt && off + len <= iov[0].iov_len) {
		const uint8_t *frame = (const uint8_t *)iov[0].iov_base + off;

		/* ... its Ethernet header checked: a flat frame */
		if (h == VNET_FRAME_HEAD) {
			fw->flat = frame;
			fw->head = src->head;
			return true;
		}
		/* ... or a longer head (ARP, ND, IPv6 on a port-secured port, ips=): two pieces */
		if (h < len && h <= SW_HEAD_MAX) {
			v[0] = (struct iovec){.iov_base = src->head, .iov_len = h};
			v[1] = (struct iovec){.iov_base = (void *)(frame + h), .iov_len = len - h};
			*fw = (struct sw_fwd){.iov = v, .iovcnt = 2, .len = len};
			return true;
		}
	}
	fw->flat = NULL;
	return sw_fwd_iov_slow(src, iov, iovcnt, off, len, v, fw);
}

/*
 * An admitted frame for a known port dst: delivered (on this worker), or queued for dst's
 * worker. Behind the sender itself: filtered, as on any bridge. -EAGAIN: the cross-worker ring
 * is full, the sender sends it again on resume.
 */
static inline __attribute__((always_inline)) int
sw_unicast(struct switch_port *src, struct switch_port *dst, const struct sw_fwd *fw,
	   const bool xw, const bool storm)
{
	/* The FDB's port of the sender: a lane's frames are its home's (no lanes on one worker). */
	const struct switch_port *self = xw ? src->home : src;

	if (dst == self)
		return 0;
	src->forwarded++;
	if (xw && __builtin_expect(dst->npairs != 0, 0)) {
		if (spread_deliver(src, src->worker, sender_pair(src), dst, fw) < 0) {
			src->forwarded--; /* sent again on resume */
			return -EAGAIN;
		}
	} else if (!xw || dst->worker == src->worker) {
		sw_deliver(dst, fw, storm);
	} else if (cross_unicast(src, dst->worker, port_tag(dst, 0), fw) < 0) {
		src->forwarded--; /* sent again on resume */
		return -EAGAIN;
	}
	return 0;
}

/*
 * An admitted frame for every port but the sender: a broadcast, a multicast or an unknown
 * destination (storm control counts the unknown ones here). Returns the deliveries beyond the
 * first, which the sender's budget is charged for.
 */
static inline __attribute__((always_inline)) int
sw_flood(struct switch_port *src, const struct sw_fwd *fw, uint64_t now, const bool xw,
	 const bool storm)
{
	struct vnet_switch *sw = src->sw;
	const struct switch_port *self = xw ? src->home : src;
	const struct sw_worker *own = &sw->w[xw ? src->worker : 0];
	struct switch_port *dst;
	int deliveries = 0;

	if (storm && !(src->head[0] & 1) && src->flood_rate && !storm_take(src, now))
		return 0;
	src->flooded++;
	for (unsigned i = 0, k = 0; i < own->nports; i++) {
		dst = own->ports[i];
		if (dst == self || (xw && dst->is_lane))
			continue;
		if (xw)
			xw_deliver(src->worker, sender_pair(src), dst, fw, storm);
		else
			sw_deliver(dst, fw, storm);
		if (k++)
			deliveries++;
	}
	if (xw) {
		/* Other workers: one copy each, which their thread hands to each of its ports. */
		unsigned copies = own->nports - 1;

		for (unsigned wi = 0; wi < sw->nworkers; wi++) {
			/* none there but lanes, or but the sender's own home (its lane sends) */
			if (wi == src->worker || !sw->w[wi].nflood ||
			    (sw->w[wi].nflood == 1 && self->worker == wi))
				continue;
			cross_send(src, wi, NULL, fw);
			copies++;
		}
		deliveries = copies > 1 ? (int)copies - 1 : 0;
	}
	return deliveries;
}

/*
 * A guest sent a packet: learn its source, forward or flood it. Never back-pressures but for a
 * full cross-worker ring. `xw`: ports may be on other workers; `storm`: the guarded copy, for
 * ports with a flood-rate or an access port's tag check; `ips`: an ips= list (constants: each
 * ops table gets its own copy, so a plain port pays nothing for storm control, VLANs or IP
 * anti-spoofing).
 */
static inline __attribute__((always_inline)) int
transmit(struct vnet_backend *be, const struct iovec *iov, unsigned iovcnt, size_t off, size_t len,
	 const bool xw, const bool storm, const bool ips)
{
	struct switch_port *src = port_of(be), *dst;
	uint64_t now = src->sw->w[xw ? src->worker : 0].now_ns;
	struct iovec v[SW_FWD_IOV];
	struct sw_fwd fw;

	if (!sw_admit(src, iov, iovcnt, off, len, now, xw, storm, ips))
		return 0;
	/* From here on the frame is its checked copy, then the rest in the guest's buffers. */
	if (__builtin_expect(!sw_fwd_iov(src, iov, iovcnt, off, len, v, &fw), 0)) {
		src->dropped++;
		return 0;
	}
	if (!(src->head[0] & 1)) {
		dst = lookup_cached(src->sw, src, src->head, now);
		if (dst)
			return sw_unicast(src, dst, &fw, xw, storm);
	}
	return sw_flood(src, &fw, now, xw, storm);
}

/*
 * Frames [from, to) of a burst for dst, which had nothing queued, with the headers the sender's
 * checks saw (heads): into its guest's buffers in one call; what its guest has no buffers for
 * is queued (a copy, with the same header), as port_deliver() does.
 */
static void port_deliver_burst(struct switch_port *dst, const struct vnet_frame *f,
			       const uint8_t (*heads)[VNET_FRAME_HEAD], unsigned from, unsigned to)
{
	unsigned k;

	guest_race(GUEST_RACE_TX_FORWARD);
	k = from + vnet_dev_receive_burst(dst->dev, f + from, heads + from, to - from);
	for (; k < to; k++) {
		struct iovec iov[2];

		guest_race(GUEST_RACE_TX_FORWARD);
		port_enqueue(dst, iov, vnet_frame_iov(&f[k], heads[k], iov), 0, f[k].len, -1);
	}
}

/*
 * A flood of src's burst may go in a run (port_deliver_burst() to each port): no port it reaches
 * has frames queued (they go first) or is an uplink. Returns the ports it reaches (> 0), or 0:
 * the flood takes sw_flood()'s way.
 */
static unsigned flood_run_ports(const struct switch_port *src)
{
	const struct sw_worker *own = &src->sw->w[0];
	unsigned n = 0;

	for (unsigned i = 0; i < own->nports; i++) {
		const struct switch_port *p = own->ports[i];

		if (p == src)
			continue;
		if (p->q_len || p->up)
			return 0;
		n++;
	}
	return n;
}

/* A run of src's burst ends: frames [start, end) to run, or (run NULL) flooded to every port. */
static void run_end(struct switch_port *src, struct switch_port *run, const struct vnet_frame *f,
		    unsigned start, unsigned end)
{
	const struct sw_worker *own = &src->sw->w[0];

	if (run) {
		port_deliver_burst(run, f, src->burst_head, start, end);
		return;
	}
	for (unsigned i = 0; i < own->nports; i++)
		if (own->ports[i] != src)
			port_deliver_burst(own->ports[i], f, src->burst_head, start, end);
}

/*
 * transmit_burst of the plain ops table (one worker, no storm control, VLAN tags or ips=): each
 * frame admitted and looked up as transmit() does; a run of frames for the same port that has
 * nothing queued goes to its guest in one vnet_dev_receive_burst(), a run of floods to each
 * other port's guest so (when none has frames queued). Anything else (a port with queued
 * frames, the sender itself, a frame whose checks read beyond its Ethernet header) ends the run
 * and takes transmit()'s way, so each receiver gets its frames in the order they were sent.
 * Floods' further deliveries count against `room` (backend.h): the call ends where the sender's
 * budget would.
 */
static unsigned switch_transmit_burst(struct vnet_backend *be, const struct vnet_frame *f,
				      const struct virtio_net_hdr_v1 *hdr, unsigned n, uint32_t room,
				      uint32_t *extra, bool *full)
{
	struct switch_port *src = port_of(be), *run = NULL;
	const uint64_t now = src->sw->w[0].now_ns;
	uint32_t more = 0;  /* further deliveries of this call */
	unsigned flood = 0; /* a run of floods: the ports each reaches (run NULL); 0: none */
	unsigned start = 0, i;

	(void)hdr;  /* NULL: no burst_offloads */
	(void)full; /* never full: a receiver without buffers queues or drops */
	for (i = 0; i < n && (i == 0 || i + more < room); i++) {
		const struct iovec iov = {.iov_base = (void *)f[i].data, .iov_len = f[i].len};
		struct switch_port *dst = NULL;
		bool ok = sw_admit(src, &iov, 1, 0, f[i].len, now, false, false, false);
		struct iovec v[SW_FWD_IOV];
		struct sw_fwd fw;
		bool deep;

		if (ok && !(src->head[0] & 1))
			dst = lookup_cached(src->sw, src, src->head, now);
		/* Port security may read further than the Ethernet header (ARP, ND, IPv6's next
		 * header): those frames go at once, transmit()'s way, with all it read; the others in
		 * runs, each with the Ethernet header it checked. */
		deep = src->head_len != VNET_FRAME_HEAD;
		memcpy(src->burst_head[i], src->head, VNET_FRAME_HEAD);
		if (ok && !deep && (dst ? dst == run : flood != 0)) {
			if (dst) {
				src->forwarded++;
			} else {
				src->flooded++;
				more += flood - 1;
			}
			continue;
		}
		if (run || flood)
			run_end(src, run, f, start, i);
		run = NULL;
		flood = 0;
		if (!ok)
			continue;
		if (dst && !deep && dst != src && !dst->q_len && !dst->up) {
			src->forwarded++;
			run = dst;
			start = i;
		} else if (!dst && !deep && (flood = flood_run_ports(src)) != 0) {
			src->flooded++;
			more += flood - 1;
			start = i;
		} else if (!sw_fwd_iov(src, &iov, 1, 0, f[i].len, v, &fw)) {
			src->dropped++;
		} else if (dst) {
			(void)sw_unicast(src, dst, &fw, false, false);
		} else {
			more += (uint32_t)sw_flood(src, &fw, now, false, false);
		}
	}
	if (run || flood)
		run_end(src, run, f, start, i);
	*extra += more;
	return i;
}

/* One transmit entry point per ops table: each a copy of transmit() for its constants. */
#define SW_TRANSMIT(fn, xw, storm, ips)                                                            \
	static int fn(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,                \
		      const struct iovec *iov, unsigned iovcnt, size_t off, size_t len)            \
	{                                                                                          \
		(void)hdr;                                                                         \
		return transmit(be, iov, iovcnt, off, len, xw, storm, ips);                        \
	}

SW_TRANSMIT(switch_transmit, false, false, false)
SW_TRANSMIT(switch_transmit_xw, true, false, false)
SW_TRANSMIT(switch_transmit_storm, false, true, false)
SW_TRANSMIT(switch_transmit_xw_storm, true, true, false)
SW_TRANSMIT(switch_transmit_ips, false, false, true)
SW_TRANSMIT(switch_transmit_xw_ips, true, false, true)
SW_TRANSMIT(switch_transmit_storm_ips, false, true, true)
SW_TRANSMIT(switch_transmit_xw_storm_ips, true, true, true)

/**
 * switch_uplink_send() - a frame from an uplink into its switch.
 * @be: the uplink (switch_attach_uplink())
 * @frame: the frame, untagged
 * @len: its length
 *
 * Learnt, forwarded or flooded as a port's frame, through the guarded transmit (no port
 * security: an uplink has none). On the uplink's worker's thread.
 */
void switch_uplink_send(struct vnet_backend *be, const uint8_t *frame, size_t len)
{
	struct iovec iov = {.iov_base = (void *)frame, .iov_len = len};

	if (port_of(be)->sw->xq)
		transmit(be, &iov, 1, 0, len, true, true, false);
	else
		transmit(be, &iov, 1, 0, len, false, true, false);
}

/* Nothing to do: the switch carries fully formed frames only. */
static void switch_set_offloads(struct vnet_backend *be, uint64_t guest_features)
{
	(void)port_of(be);
	(void)guest_features;
}

/* The guest posted RX buffers: deliver queued packets, one budget (true: call again later). */
static bool switch_rx_resume(struct vnet_backend *be)
{
	return port_drain(port_of(be), VNET_BUDGET_PACKETS, VNET_BUDGET_BYTES) > 0;
}

/* The port's device was reset: frames queued for the guest that is gone are dropped. */
static void switch_reset(struct vnet_backend *be)
{
	struct switch_port *p = port_of(be);

	if (p->q_len)
		log_guest("switch: port %s: %u frames queued for its guest dropped at device reset",
			  p->name, p->q_len);
	switch_queue_clear(p);
	/* A spread port's lanes queue for the same guest (their workers are parked: the home's
	 * vhost-user handling parks them). */
	for (unsigned i = 0; i < p->nlanes; i++)
		switch_queue_clear(p->lanes[i]);
}

/* switch_backend_ops - the ops table the device model calls (every port on one worker). */
const struct vnet_backend_ops switch_backend_ops = {
	.kind = "switch",
	.offload_features = 0,
	.transmit = switch_transmit,
	.transmit_burst = switch_transmit_burst,
	.set_offloads = switch_set_offloads,
	.rx_resume = switch_rx_resume,
	.reset = switch_reset,
};

#define SW_OPS(fn)                                                                                 \
	{                                                                                          \
		.kind = "switch", .offload_features = 0, .transmit = fn,                           \
		.set_offloads = switch_set_offloads, .rx_resume = switch_rx_resume,                \
		.reset = switch_reset,                                                             \
	}

/*
 * The same for the other ports, by [flood-rate][ips=][several workers]: a switch spread over
 * several workers, ports with a flood-rate (storm control), ports with an ips= list.
 */
static const struct vnet_backend_ops switch_backend_ops_checked[2][2][2] = {
	{{{0}, SW_OPS(switch_transmit_xw)},
	 {SW_OPS(switch_transmit_ips), SW_OPS(switch_transmit_xw_ips)}},
	{{SW_OPS(switch_transmit_storm), SW_OPS(switch_transmit_xw_storm)},
	 {SW_OPS(switch_transmit_storm_ips), SW_OPS(switch_transmit_xw_storm_ips)}},
};

/**
 * switch_port_ops() - the ops table to attach a switch port's device with.
 * @be: the port's handle (switch_attach(), then switch_port_set_flood_rate() and
 * switch_port_set_ips() if any)
 *
 * Return: switch_backend_ops with one worker, the cross-worker table with several; each in a
 * copy that checks the port's flood-rate and access-port tags when it has either, and its ips=
 * list when it has one.
 */
const struct vnet_backend_ops *switch_port_ops(const struct vnet_backend *be)
{
	const struct switch_port *p = port_of_const(be);
	bool storm = p->flood_rate != 0 || p->access, ips = p->n_ips != 0, xw = p->sw->xq != NULL;

	if (!storm && !ips && !xw)
		return &switch_backend_ops;
	return &switch_backend_ops_checked[storm][ips][xw];
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

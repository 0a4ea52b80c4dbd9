/* SPDX-License-Identifier: MIT */
/* switch.c - switch backend: an L2 learning switch forwarding frames between vnetd ports. */
#include "switch.h"

#include <assert.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/uio.h>
#include <time.h>

#include "iov.h"
#include "log.h"
#include "stat_atomic.h"
#include "switch_fdb.h"
#include "switch_xq.h"
#include "virtio_net_defs.h"
#include "vnet_dev.h"

#define SW_ETH_ALEN FDB_ETH_ALEN
#define SW_MIN_FRAME 14	   /* an Ethernet header */
#define SW_MAX_FRAME 65536 /* the largest frame a port takes */
#define SW_FLOOD 0xffffu   /* cross-worker tag: every port of the receiving worker */
#define SW_MAGIC 0x73776974u /* "swit": catches a tap handle passed to the switch */

_Static_assert(SWITCH_MAX_WORKERS <= XQ_MAX_WORKERS, "the cross-worker queues cover every worker");
_Static_assert(SW_MAX_FRAME <= XQ_MAX_FRAME, "every frame fits a cross-worker queue");
_Static_assert(SWITCH_MAX_PORTS < SW_FLOOD, "a port slot is never the flood tag");

/* A frame copied for a port whose guest had no RX buffers (the header is a zeroed one). */
struct sw_packet {
	size_t len;
	size_t cap;		 /* SW_SMALL_CAP or SW_MAX_FRAME */
	struct sw_packet *next; /* in a free list */
	uint8_t data[];
};

#define SW_SMALL_CAP 2048
#define SW_POOL_SMALL 1024 /* free buffers kept for reuse: no allocation per packet */
#define SW_POOL_LARGE 32

/* The private side of a struct vnet_backend handed out by switch_attach(). */
struct switch_port {
	uint32_t magic;
	uint16_t slot;	 /* index in vnet_switch.ports */
	uint16_t worker; /* the worker whose thread alone uses dev and the fields below */
	uint32_t serial; /* tells this port from a later one in the same slot (queued frames) */
	bool resuming;	 /* inside rx_resume(): do not flush recursively */
	struct vnet_switch *sw;
	struct vnet_dev *dev;
	char name[32];
	/* FIFO of packets waiting for guest RX buffers; while non-empty, new packets queue too. */
	struct sw_packet *queue[SWITCH_QUEUE_PACKETS];
	unsigned q_head, q_len;
	size_t q_bytes;	 /* the capacity of the buffers queued (what they hold in memory) */
	uint64_t forwarded, flooded, dropped, crossed; /* this thread's (switch_port_stats()) */
	uint64_t cache_misses; /* stat_atomic.h: the statistics read it from another thread */
	bool refusal_logged[2]; /* FDB_AT_LIMIT, FDB_OVER_RATE: said once per port */
	/*
	 * Flow cache (consecutive frames of a port mostly share their addresses), valid while the
	 * FDB set its answer came from is unchanged (struct fdb_ver: a change elsewhere in the
	 * table leaves it valid), so a hit takes no lock and reads no entry but for its age: the
	 * entry holding this port's last source MAC, and the last destination looked up with its
	 * answer (NULL port: unknown, flooded).
	 */
	struct fdb_entry *src_hit; /* NULL: not learnt (src_retry_ns: a refusal, till then) */
	struct fdb_ver src_ver;
	uint64_t src_retry_ns;
	uint8_t src_mac[SW_ETH_ALEN];
	uint8_t macs[2 * SW_ETH_ALEN]; /* the frame being sent: destination, source (a copy) */
	uint8_t dst_mac[SW_ETH_ALEN];
	struct fdb_ver dst_ver;
	struct fdb_entry *dst_hit;
	struct switch_port *dst_port;
};

/* What one worker's thread keeps: its ports (floods visit these), clock and buffer pool. */
struct sw_worker {
	struct switch_port *ports[SWITCH_MAX_PORTS]; /* densely packed */
	unsigned nports;
	uint64_t now_ns; /* learning and aging clock (switch_tick()) */
	/* Free packet buffers by size class ([0] small, [1] large), and how many each holds. */
	struct sw_packet *pool[2];
	unsigned pool_len[2];
};

struct vnet_switch {
	struct switch_port *ports[SWITCH_MAX_PORTS]; /* by slot; changed only with workers parked */
	unsigned nworkers;
	uint32_t next_serial;
	struct xq *xq; /* frames for another worker's ports (NULL with one worker) */
	const struct switch_owner_ops *ops;
	void *ctx;
	struct sw_fdb fdb;
	struct sw_worker w[];
};

static struct switch_port *port_of(struct vnet_backend *be)
{
	struct switch_port *p = (struct switch_port *)be;

	assert(p && p->magic == SW_MAGIC);
	return p;
}

static const struct switch_port *port_of_const(const struct vnet_backend *be)
{
	const struct switch_port *p = (const struct switch_port *)be;

	assert(p && p->magic == SW_MAGIC);
	return p;
}

static uint64_t sw_now_ns(void)
{
	struct timespec ts;

	/* Learning and aging work in seconds: the coarse clock (a shared-page read, no TSC
	 * read), once per event-loop round (switch_tick()), is precise enough. */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * FDB_NS + (uint64_t)ts.tv_nsec;
}

/* ---- Flow cache in front of the FDB -------------------------------------------------------- */

/* The FDB did not learn p's source MAC (or only in place of one of p's): said once a port. */
static __attribute__((noinline, cold)) void learn_refused(struct switch_port *p,
							  enum fdb_refusal why)
{
	struct fdb_port lim;

	p->refusal_logged[why == FDB_OVER_RATE] = true;
	fdb_port_read(&p->sw->fdb, p->slot, &lim);
	if (why == FDB_AT_LIMIT)
		log_guest("switch %s: holds max-macs=%u MACs: new source MACs only replace its own "
			  "(or are not learned; frames to them flood)",
			  p->name, (unsigned)lim.max_macs);
	else
		log_guest("switch %s: teaches new source MACs faster than learn-rate=%u a second: "
			  "the rest are not learned (frames to them flood)",
			  p->name, (unsigned)lim.learn_rate);
}

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
	p->src_hit = fdb_learn(&sw->fdb, p->slot, mac, now, &p->src_ver, &why, &p->src_retry_ns);
	memcpy(p->src_mac, mac, SW_ETH_ALEN);
	if (why != FDB_LEARNT && !p->refusal_logged[why == FDB_OVER_RATE])
		learn_refused(p, why);
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

static void pool_free(struct sw_worker *w)
{
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
			 size_t off, size_t len)
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
		if (!vnet_dev_receive_frame(p->dev, NULL, &iov, 1, 0, pkt->len)) {
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
 * Give a packet (the sender's chain: its header, then a frame of len bytes) to dst's guest
 * with a zeroed header: one copy, from the sender's guest memory (or a cross-worker queue)
 * straight into dst's buffers. Packets queued earlier (dst had no buffers) go first, so order
 * is kept and the port returns to the one-copy path as soon as its guest has buffers again;
 * only what still does not fit is queued (a copy). Runs on dst's worker.
 */
static inline void port_deliver(struct switch_port *dst, const struct iovec *iov, unsigned iovcnt,
				size_t off, size_t len)
{
	if (dst->q_len && port_drain(dst, SWITCH_QUEUE_PACKETS, SWITCH_QUEUE_BYTES) != 0) {
		port_enqueue(dst, iov, iovcnt, off, len);
		return;
	}
	if (vnet_dev_receive_frame(dst->dev, NULL, iov, iovcnt, off, len))
		return;
	port_enqueue(dst, iov, iovcnt, off, len);
}

/* One frame another worker queued for worker `worker` (xq_deliver_fn). */
static unsigned xq_deliver(void *ctx, unsigned worker, uint64_t tag, const uint8_t *frame,
			   size_t len)
{
	struct vnet_switch *sw = ctx;
	struct sw_worker *w = &sw->w[worker];
	struct iovec iov = {.iov_base = (void *)frame, .iov_len = len};
	unsigned slot = (unsigned)(tag & 0xffff);
	struct switch_port *dst;

	if (slot == SW_FLOOD) {
		for (unsigned i = 0; i < w->nports; i++)
			port_deliver(w->ports[i], &iov, 1, 0, len);
		return w->nports;
	}
	dst = slot < SWITCH_MAX_PORTS ? sw->ports[slot] : NULL;
	/* Detached since (and the slot perhaps reused): the frame was for nobody here now. */
	if (dst && dst->serial == (uint32_t)(tag >> 16) && dst->worker == worker)
		port_deliver(dst, &iov, 1, 0, len);
	return 1;
}

/* ---- Transmit on the sender's worker ------------------------------------------------------ */

/* Queue the frame for worker `to` (dst a port there, or SW_FLOOD): one copy, or a drop. */
static void cross_send(struct switch_port *src, unsigned to, const struct switch_port *dst,
		       const struct iovec *iov, unsigned iovcnt, size_t off, size_t len)
{
	uint64_t tag = dst ? (uint64_t)dst->serial << 16 | dst->slot : SW_FLOOD;

	if (xq_push(src->sw->xq, src->worker, to, tag, iov, iovcnt, off, len) == 0)
		src->crossed++;
	else
		src->dropped++;
}

/*
 * A guest sent a packet: learn its source, forward or flood it. Never back-pressures. `xw`:
 * ports may be on other workers (a constant: each ops table gets its own copy).
 */
static inline __attribute__((always_inline)) int
transmit(struct vnet_backend *be, const struct iovec *iov, unsigned iovcnt, size_t off, size_t len,
	 const bool xw)
{
	struct switch_port *src = port_of(be), *dst;
	struct vnet_switch *sw = src->sw;
	const struct sw_worker *own = &sw->w[xw ? src->worker : 0];
	const uint8_t *dst_mac = src->macs, *src_mac = src->macs + SW_ETH_ALEN;
	int deliveries = 0;
	uint64_t now;

	if (len < SW_MIN_FRAME || len > SW_MAX_FRAME) {
		src->dropped++;
		log_guest("switch %s: dropped a frame of %zu bytes (%d to %d)", src->name, len,
			  SW_MIN_FRAME, SW_MAX_FRAME);
		return 0;
	}
	/*
	 * Only the MAC addresses are looked at; the frame is copied once, later. The guest's header
	 * is not: the switch offers no offloads, so the device already dropped any frame asking for
	 * a checksum or GSO (tx_hdr_allowed()), and the header we forward is a zeroed one.
	 */
	iov_copy_from(iov, iovcnt, off, src->macs, sizeof(src->macs));

	now = own->now_ns;
	learn_cached(sw, src, src_mac, now, xw);
	if (!(dst_mac[0] & 1)) {
		dst = lookup_cached(sw, src, dst_mac, now);
		if (dst) {
			/* Known: one port. Behind the sender itself: filtered, as on any bridge. */
			if (dst != src) {
				src->forwarded++;
				if (!xw || dst->worker == src->worker)
					port_deliver(dst, iov, iovcnt, off, len);
				else
					cross_send(src, dst->worker, dst, iov, iovcnt, off, len);
			}
			return 0;
		}
	}
	src->flooded++;
	for (unsigned i = 0, k = 0; i < own->nports; i++) {
		dst = own->ports[i];
		if (dst != src)
			port_deliver(dst, iov, iovcnt, off, len);
		if (dst != src && k++)
			deliveries++;
	}
	if (xw) {
		/* Other workers: one copy each, which their thread hands to each of its ports. */
		unsigned copies = own->nports - 1;

		for (unsigned wi = 0; wi < sw->nworkers; wi++) {
			if (wi == src->worker || !sw->w[wi].nports)
				continue;
			cross_send(src, wi, NULL, iov, iovcnt, off, len);
			copies++;
		}
		deliveries = copies > 1 ? (int)copies - 1 : 0;
	}
	return deliveries; /* beyond the first: charged to the sender's budget */
}

static int switch_transmit(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
			   const struct iovec *iov, unsigned iovcnt, size_t off, size_t len)
{
	(void)hdr;
	return transmit(be, iov, iovcnt, off, len, false);
}

static int switch_transmit_xw(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
			      const struct iovec *iov, unsigned iovcnt, size_t off, size_t len)
{
	(void)hdr;
	return transmit(be, iov, iovcnt, off, len, true);
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

/* switch_backend_ops - the ops table the device model calls (every port on one worker). */
const struct vnet_backend_ops switch_backend_ops = {
	.kind = "switch",
	.offload_features = 0,
	.transmit = switch_transmit,
	.set_offloads = switch_set_offloads,
	.rx_resume = switch_rx_resume,
};

/* The same for a switch spread over several workers. */
static const struct vnet_backend_ops switch_backend_ops_xw = {
	.kind = "switch",
	.offload_features = 0,
	.transmit = switch_transmit_xw,
	.set_offloads = switch_set_offloads,
	.rx_resume = switch_rx_resume,
};

/**
 * switch_port_ops() - the ops table to attach a switch port's device with.
 * @be: the port's handle (switch_attach())
 *
 * Return: switch_backend_ops with one worker, the cross-worker table with several.
 */
const struct vnet_backend_ops *switch_port_ops(const struct vnet_backend *be)
{
	return port_of_const(be)->sw->xq ? &switch_backend_ops_xw : &switch_backend_ops;
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

/* ---- Switch and ports ------------------------------------------------------------------- */

static void xq_wake(void *ctx, unsigned worker)
{
	struct vnet_switch *sw = ctx;

	sw->ops->wake(sw->ctx, worker);
}

/**
 * switch_create() - an empty switch, with a random FDB hash key.
 * @nworkers: event-loop threads its ports live on, 1..SWITCH_MAX_WORKERS
 * @ops: wakes a worker (from any thread), whose thread then calls switch_worker_rx(); may be NULL
 * with one worker
 * @ctx: passed to @ops
 *
 * With one worker every frame is copied straight from the sender's guest into the receiver's; with
 * more, a frame for a port of another worker is copied into that worker's bounded queue
 * (switch_xq.h) and placed by that worker's thread, and the FDB takes its lock.
 *
 * Return: the switch, or NULL for a bad configuration or out of memory (logged).
 */
struct vnet_switch *switch_create(unsigned nworkers, const struct switch_owner_ops *ops,
				  void *ctx)
{
	struct vnet_switch *sw;
	uint64_t key;

	if (nworkers < 1 || nworkers > SWITCH_MAX_WORKERS || (nworkers > 1 && (!ops || !ops->wake))) {
		log_err("switch: %u workers is not a switch configuration", nworkers);
		return NULL;
	}
	sw = calloc(1, sizeof(*sw) + nworkers * sizeof(sw->w[0]));
	if (!sw) {
		log_err("switch: out of memory");
		return NULL;
	}
	sw->nworkers = nworkers;
	sw->ops = ops;
	sw->ctx = ctx;
	if (nworkers > 1) {
		sw->xq = xq_create(nworkers, XQ_RING_BYTES, xq_wake, sw);
		if (!sw->xq) {
			log_err("switch: out of memory for the cross-worker queues");
			free(sw);
			return NULL;
		}
	}
	if (getrandom(&key, sizeof(key), GRND_NONBLOCK) != (ssize_t)sizeof(key))
		key = sw_now_ns() ^ (uint64_t)(uintptr_t)sw;
	fdb_init(&sw->fdb, nworkers > 1, key);
	switch_set_clock(sw, sw_now_ns());
	return sw;
}

/**
 * switch_tick() - read the clock learning and aging use (CLOCK_MONOTONIC_COARSE) once, for every
 * frame a worker forwards until its next tick.
 * @sw: the switch
 * @worker: the worker; called on its thread (its clock: no other thread writes it)
 *
 * The daemon ticks at the start of each event-loop round, so frames pay no clock read.
 */
void switch_tick(struct vnet_switch *sw, unsigned worker)
{
	if (worker < sw->nworkers)
		sw->w[worker].now_ns = sw_now_ns();
}

/**
 * switch_set_clock() - set every worker's clock explicitly (tests, one thread).
 * @sw: the switch
 * @now_ns: the time, monotonic ns
 */
void switch_set_clock(struct vnet_switch *sw, uint64_t now_ns)
{
	for (unsigned i = 0; i < sw->nworkers; i++)
		sw->w[i].now_ns = now_ns;
}

/**
 * switch_destroy() - detach the ports still attached and free the switch.
 * @sw: the switch, or NULL; no worker may forward any more
 */
void switch_destroy(struct vnet_switch *sw)
{
	if (!sw)
		return;
	for (unsigned i = 0; i < SWITCH_MAX_PORTS; i++)
		if (sw->ports[i])
			switch_detach((struct vnet_backend *)sw->ports[i]);
	for (unsigned i = 0; i < sw->nworkers; i++)
		pool_free(&sw->w[i]);
	xq_destroy(sw->xq);
	fdb_fini(&sw->fdb);
	free(sw);
}

/**
 * switch_attach() - add a port delivering to a device.
 * @sw: the switch
 * @dev: the port's device; must outlive the port, only used on @worker's thread
 * @name: for log lines (NULL: "?")
 * @worker: the worker owning the port
 *
 * Starts with the default FDB limits (SWITCH_FDB_PORT_MAX, SWITCH_LEARN_RATE). With several
 * workers, call it (and switch_detach()) only while no other worker forwards (the daemon parks
 * them).
 *
 * Return: the port's backend handle for switch_port_ops(), or NULL if the switch is full, @worker
 * is out of range or memory is short (logged).
 */
struct vnet_backend *switch_attach(struct vnet_switch *sw, struct vnet_dev *dev, const char *name,
				   unsigned worker)
{
	struct switch_port *p;
	unsigned slot;

	assert(sw && dev);
	if (!name)
		name = "?";
	if (worker >= sw->nworkers) {
		log_err("switch: cannot attach %s: worker %u of %u", name, worker, sw->nworkers);
		return NULL;
	}
	for (slot = 0; slot < SWITCH_MAX_PORTS && sw->ports[slot]; slot++)
		;
	if (slot == SWITCH_MAX_PORTS) {
		log_err("switch: cannot attach %s: all %d ports in use", name, SWITCH_MAX_PORTS);
		return NULL;
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		log_err("switch: cannot attach %s: out of memory", name);
		return NULL;
	}
	p->magic = SW_MAGIC;
	p->slot = (uint16_t)slot;
	p->worker = (uint16_t)worker;
	p->serial = ++sw->next_serial;
	p->sw = sw;
	p->dev = dev;
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->src_ver = p->dst_ver = fdb_ver_none(&sw->fdb);
	fdb_set_limits(&sw->fdb, p->slot, SWITCH_FDB_PORT_MAX, SWITCH_LEARN_RATE);
	sw->ports[slot] = p;
	sw->w[worker].ports[sw->w[worker].nports++] = p;
	log_info("switch: port %s attached", p->name);
	return (struct vnet_backend *)p;
}

/**
 * switch_detach() - remove a port: forget its MACs (the flow caches naming it go stale), drop its
 * queued packets, free it.
 * @be: the port's handle, or NULL
 *
 * Frames other workers queued for it are dropped when they come up (they name the port's serial).
 * Same thread rules as switch_attach().
 */
void switch_detach(struct vnet_backend *be)
{
	struct switch_port *p;
	struct vnet_switch *sw;
	struct sw_worker *w;

	if (!be)
		return;
	p = port_of(be);
	sw = p->sw;
	w = &sw->w[p->worker];
	fdb_forget_port(&sw->fdb, p->slot); /* and every flow cache that named it goes stale */
	while (p->q_len)
		port_dequeue(p);
	sw->ports[p->slot] = NULL;
	for (unsigned i = 0; i < w->nports; i++)
		if (w->ports[i] == p) {
			w->ports[i] = w->ports[--w->nports];
			break;
		}
	log_info("switch: port %s detached", p->name);
	p->magic = 0;
	free(p);
}

/**
 * switch_port_stats() - the port's per-frame counters; any out pointer may be NULL.
 * @be: the port's handle
 * @forwarded: frames the port sent to one known port
 * @flooded: frames the port sent to every other port (broadcast, multicast, unknown)
 * @dropped: frames the port sent that were malformed or that a full cross-worker queue could not
 * take, plus frames for the port that its full queue could not take
 *
 * Plain reads of counters the port's thread increments: on that thread, or while it is parked.
 */
void switch_port_stats(const struct vnet_backend *be, uint64_t *forwarded, uint64_t *flooded,
		       uint64_t *dropped)
{
	const struct switch_port *p = port_of_const(be);

	if (forwarded)
		*forwarded = p->forwarded;
	if (flooded)
		*flooded = p->flooded;
	if (dropped)
		*dropped = p->dropped;
}

/**
 * switch_port_set_limits() - what the port may teach the FDB.
 * @be: the port's handle
 * @max_macs: MACs it may hold at once, 1..SWITCH_FDB_SIZE
 * @learn_rate: new MACs a second (0: any number, else up to SWITCH_LEARN_RATE_MAX), with one
 * second's worth at once
 *
 * A MAC refused is not learned: its frames are still forwarded, frames to it flood (the refusal is
 * counted and logged once per limit). The refusal counters restart. Call it right after
 * switch_attach() (with several workers, while they are parked).
 */
void switch_port_set_limits(struct vnet_backend *be, unsigned max_macs, unsigned learn_rate)
{
	struct switch_port *p = port_of(be);

	fdb_set_limits(&p->sw->fdb, p->slot, max_macs, learn_rate);
	p->refusal_logged[0] = p->refusal_logged[1] = false;
}

/**
 * switch_port_counters() - what the FDB holds for the port and refused it, and its flow cache
 * misses.
 * @be: the port's handle
 * @out: the counters
 *
 * Any thread while the port's worker runs, lock-free (each value torn-free, stat_atomic.h); not
 * while the port may be detached.
 */
void switch_port_counters(const struct vnet_backend *be, struct switch_port_counters *out)
{
	const struct switch_port *p = port_of_const(be);
	struct fdb_port fp;

	fdb_port_read(&p->sw->fdb, p->slot, &fp);
	*out = (struct switch_port_counters){
	    .cache_misses = stat_read(&p->cache_misses),
	    .macs = fp.learned,
	    .max_macs = fp.max_macs,
	    .learn_rate = fp.learn_rate,
	    .mac_limit_hits = fp.limit_hits,
	    .learn_rate_hits = fp.rate_hits,
	};
}

/**
 * switch_port_crossed() - copies of the port's frames queued for other workers' ports.
 * @be: the port's handle
 *
 * Plain read, as switch_port_stats().
 *
 * Return: the count.
 */
uint64_t switch_port_crossed(const struct vnet_backend *be)
{
	return port_of_const(be)->crossed;
}

/**
 * switch_port_queued() - packets waiting in the port's queue for guest RX buffers.
 * @be: the port's handle
 *
 * Plain read, as switch_port_stats().
 *
 * Return: the queue's length.
 */
unsigned switch_port_queued(const struct vnet_backend *be)
{
	return port_of_const(be)->q_len;
}

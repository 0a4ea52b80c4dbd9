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
#include "virtio_net_defs.h"
#include "vnet_dev.h"

#define SW_ETH_ALEN 6
#define SW_MIN_FRAME 14	   /* an Ethernet header */
#define SW_MAX_FRAME 65536 /* the largest frame a port takes */
#define SW_WAYS 4			/* FDB: set-associative, LRU within a set */
#define SW_SETS (SWITCH_FDB_SIZE / SW_WAYS)
#define SW_NS 1000000000ull
#define SW_NO_PORT 0xffffu
#define SW_MAGIC 0x73776974u /* "swit": catches a tap handle passed to the switch */

_Static_assert(SWITCH_MAX_PORTS < SW_NO_PORT, "port slots must fit an FDB entry");
_Static_assert((SW_SETS * SW_WAYS) == SWITCH_FDB_SIZE, "FDB size must be a multiple of SW_WAYS");

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

/* One learned source MAC. */
struct fdb_entry {
	uint8_t mac[SW_ETH_ALEN];
	uint16_t port; /* slot in vnet_switch.ports, SW_NO_PORT if unused */
	uint64_t last_seen_ns;
};

/* The private side of a struct vnet_backend handed out by switch_attach(). */
struct switch_port {
	uint32_t magic;
	uint16_t slot; /* index in vnet_switch.ports */
	bool resuming; /* inside rx_resume(): do not flush recursively */
	struct vnet_switch *sw;
	struct vnet_dev *dev;
	char name[32];
	unsigned learned; /* FDB entries pointing here */
	/* FIFO of packets waiting for guest RX buffers; while non-empty, new packets queue too. */
	struct sw_packet *queue[SWITCH_QUEUE_PACKETS];
	unsigned q_head, q_len;
	size_t q_bytes;
	uint64_t forwarded, flooded, dropped;
	/*
	 * Flow cache (consecutive frames of a port mostly share their addresses): the entry that
	 * holds this port's last source MAC, and the last destination looked up with its answer
	 * (NULL entry: unknown, flooded), valid while the FDB's generation has not moved.
	 */
	struct fdb_entry *src_hit;
	uint8_t macs[2 * SW_ETH_ALEN]; /* the frame being sent: destination, source (a copy) */
	uint8_t dst_mac[SW_ETH_ALEN];
	uint64_t dst_gen;
	struct fdb_entry *dst_hit;
};

struct vnet_switch {
	struct switch_port *ports[SWITCH_MAX_PORTS];
	/* The attached ports, densely packed: flooding visits these, not every slot. */
	struct switch_port *attached[SWITCH_MAX_PORTS];
	unsigned nattached;
	uint64_t hash_key;	/* so a guest cannot aim its source MACs at one FDB set */
	uint64_t last_sweep_ns; /* last full scan for aged entries */
	uint64_t gen;		/* bumped whenever an entry is added, moved or cleared */
	uint64_t now_ns;	/* learning and aging clock (switch_set_clock()) */
	struct fdb_entry fdb[SW_SETS][SW_WAYS];
	/* Free packet buffers by size class ([0] small, [1] large), and how many each holds. */
	struct sw_packet *pool[2];
	unsigned pool_len[2];
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
	return (uint64_t)ts.tv_sec * SW_NS + (uint64_t)ts.tv_nsec;
}

/* ---- Forwarding database ---------------------------------------------------------------- */

static struct fdb_entry *fdb_set(struct vnet_switch *sw, const uint8_t *mac)
{
	uint64_t v = 0;

	memcpy(&v, mac, SW_ETH_ALEN);
	/* Keyed mix (splitmix64 finalizer). */
	v ^= sw->hash_key;
	v = (v ^ (v >> 30)) * 0xbf58476d1ce4e5b9ull;
	v = (v ^ (v >> 27)) * 0x94d049bb133111ebull;
	v ^= v >> 31;
	return sw->fdb[v % SW_SETS];
}

static bool fdb_used(const struct fdb_entry *e)
{
	return e->port != SW_NO_PORT;
}

static bool fdb_expired(const struct fdb_entry *e, uint64_t now)
{
	return now - e->last_seen_ns >= (uint64_t)SWITCH_FDB_AGE_SEC * SW_NS;
}

static void fdb_clear(struct vnet_switch *sw, struct fdb_entry *e)
{
	if (!fdb_used(e))
		return;
	sw->ports[e->port]->learned--;
	e->port = SW_NO_PORT;
	sw->gen++;
}

/* Forget entries not refreshed for SWITCH_FDB_AGE_SEC; at most once a second. */
static void fdb_sweep(struct vnet_switch *sw, uint64_t now)
{
	if (sw->last_sweep_ns && now - sw->last_sweep_ns < SW_NS)
		return;
	sw->last_sweep_ns = now;
	for (unsigned s = 0; s < SW_SETS; s++)
		for (unsigned w = 0; w < SW_WAYS; w++)
			if (fdb_used(&sw->fdb[s][w]) && fdb_expired(&sw->fdb[s][w], now))
				fdb_clear(sw, &sw->fdb[s][w]);
}

/*
 * The entry a new MAC of port p goes to: a free or aged one, else the set's least recently
 * seen. A port holding its quota of entries may only reuse its own, so one guest sending from
 * random MACs cannot push everyone else out of the table.
 */
static struct fdb_entry *fdb_victim(struct fdb_entry *set, const struct switch_port *p,
				    uint64_t now)
{
	bool at_quota = p->learned >= SWITCH_FDB_PORT_MAX;
	struct fdb_entry *lru = NULL;

	for (unsigned w = 0; w < SW_WAYS; w++) {
		struct fdb_entry *e = &set[w];

		if (at_quota && e->port != p->slot)
			continue;
		if (!fdb_used(e) || fdb_expired(e, now))
			return e;
		if (!lru || e->last_seen_ns < lru->last_seen_ns)
			lru = e;
	}
	return lru;
}

/*
 * Remember that `mac` is behind port p. A MAC that moves to another port follows it. Returns
 * the entry now holding it for p, or NULL.
 */
static struct fdb_entry *fdb_learn(struct vnet_switch *sw, struct switch_port *p,
				   const uint8_t *mac, uint64_t now)
{
	static const uint8_t zero[SW_ETH_ALEN];
	struct fdb_entry *set, *e = NULL;

	if ((mac[0] & 1) || !memcmp(mac, zero, SW_ETH_ALEN))
		return NULL; /* not a valid source address */
	set = fdb_set(sw, mac);
	for (unsigned w = 0; w < SW_WAYS; w++) {
		if (fdb_used(&set[w]) && !memcmp(set[w].mac, mac, SW_ETH_ALEN)) {
			e = &set[w];
			break;
		}
	}
	if (e && e->port == p->slot) {
		e->last_seen_ns = now;
		return e;
	}
	if (p->learned >= SWITCH_FDB_PORT_MAX) {
		fdb_sweep(sw, now); /* our count may include aged entries */
		if (e && p->learned >= SWITCH_FDB_PORT_MAX)
			return NULL; /* at quota: the MAC stays where it was */
	}
	if (!e)
		e = fdb_victim(set, p, now);
	if (!e)
		return NULL; /* at quota and nothing of ours in this set: frames to it flood */
	fdb_clear(sw, e);
	memcpy(e->mac, mac, SW_ETH_ALEN);
	e->port = p->slot;
	e->last_seen_ns = now;
	p->learned++;
	sw->gen++;
	return e;
}

/* fdb_learn() through p's flow cache: the same source as last time costs one compare. */
static void learn_cached(struct vnet_switch *sw, struct switch_port *p, const uint8_t *mac,
			 uint64_t now)
{
	struct fdb_entry *e = p->src_hit;

	if (e && e->port == p->slot && !memcmp(e->mac, mac, SW_ETH_ALEN)) {
		e->last_seen_ns = now;
		return;
	}
	p->src_hit = fdb_learn(sw, p, mac, now);
}

/* The entry saying which port `mac` was last seen behind, or NULL (unknown or aged). */
static struct fdb_entry *fdb_lookup(struct vnet_switch *sw, const uint8_t *mac, uint64_t now)
{
	struct fdb_entry *set = fdb_set(sw, mac);

	for (unsigned w = 0; w < SW_WAYS; w++) {
		struct fdb_entry *e = &set[w];

		if (!fdb_used(e) || memcmp(e->mac, mac, SW_ETH_ALEN))
			continue;
		if (fdb_expired(e, now)) {
			fdb_clear(sw, e);
			return NULL;
		}
		return e;
	}
	return NULL;
}

/* fdb_lookup() through p's flow cache: the port behind `mac`, NULL to flood. */
static struct switch_port *lookup_cached(struct vnet_switch *sw, struct switch_port *p,
					 const uint8_t *mac, uint64_t now)
{
	struct fdb_entry *e = p->dst_hit;

	if (p->dst_gen != sw->gen || memcmp(p->dst_mac, mac, SW_ETH_ALEN) ||
	    (e && fdb_expired(e, now))) {
		e = fdb_lookup(sw, mac, now);
		memcpy(p->dst_mac, mac, SW_ETH_ALEN);
		p->dst_gen = sw->gen;
		p->dst_hit = e;
	}
	return e ? sw->ports[e->port] : NULL;
}

static void fdb_forget_port(struct vnet_switch *sw, const struct switch_port *p)
{
	for (unsigned s = 0; s < SW_SETS; s++)
		for (unsigned w = 0; w < SW_WAYS; w++)
			if (sw->fdb[s][w].port == p->slot)
				fdb_clear(sw, &sw->fdb[s][w]);
}

/* ---- Delivery --------------------------------------------------------------------------- */

/* A buffer for len bytes from the pool (allocated only while the pool warms up). */
static struct sw_packet *pkt_get(struct vnet_switch *sw, size_t len)
{
	unsigned k = len > SW_SMALL_CAP;
	struct sw_packet *pkt = sw->pool[k];

	if (pkt) {
		sw->pool[k] = pkt->next;
		sw->pool_len[k]--;
		return pkt;
	}
	pkt = malloc(sizeof(*pkt) + (k ? SW_MAX_FRAME : SW_SMALL_CAP));
	if (pkt)
		pkt->cap = k ? SW_MAX_FRAME : SW_SMALL_CAP;
	return pkt;
}

static void pkt_put(struct vnet_switch *sw, struct sw_packet *pkt)
{
	unsigned k = pkt->cap > SW_SMALL_CAP;

	if (sw->pool_len[k] >= (k ? SW_POOL_LARGE : SW_POOL_SMALL)) {
		free(pkt);
		return;
	}
	pkt->next = sw->pool[k];
	sw->pool[k] = pkt;
	sw->pool_len[k]++;
}

static void pool_free(struct vnet_switch *sw)
{
	for (unsigned k = 0; k < 2; k++)
		while (sw->pool[k]) {
			struct sw_packet *pkt = sw->pool[k];

			sw->pool[k] = pkt->next;
			free(pkt);
		}
}

/* Copy the frame (len bytes at byte off of iov) to the tail of dst's queue, or drop it. */
static void port_enqueue(struct switch_port *dst, const struct iovec *iov, unsigned iovcnt,
			 size_t off, size_t len)
{
	struct sw_packet *pkt;

	if (dst->q_len >= SWITCH_QUEUE_PACKETS || dst->q_bytes + len > SWITCH_QUEUE_BYTES) {
		dst->dropped++;
		return;
	}
	pkt = pkt_get(dst->sw, len);
	if (!pkt) {
		dst->dropped++;
		return;
	}
	pkt->len = iov_copy_from(iov, iovcnt, off, pkt->data, len);
	dst->queue[(dst->q_head + dst->q_len) % SWITCH_QUEUE_PACKETS] = pkt;
	dst->q_len++;
	dst->q_bytes += len;
}

static void port_dequeue(struct switch_port *p)
{
	struct sw_packet *pkt = p->queue[p->q_head];

	p->q_head = (p->q_head + 1) % SWITCH_QUEUE_PACKETS;
	p->q_len--;
	p->q_bytes -= pkt->len;
	pkt_put(p->sw, pkt);
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
 * with a zeroed header: one copy, from the sender's guest memory straight into dst's buffers. Packets queued earlier (dst had no buffers) go first, so order is kept and the port
 * returns to the one-copy path as soon as its guest has buffers again; only what still does
 * not fit is queued (a copy).
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

/* A guest sent a packet: learn its source, forward or flood it. Never back-pressures. */
static int switch_transmit(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
			   const struct iovec *iov, unsigned iovcnt, size_t off, size_t len)
{
	struct switch_port *src = port_of(be), *dst;
	struct vnet_switch *sw = src->sw;
	const uint8_t *dst_mac = src->macs, *src_mac = src->macs + SW_ETH_ALEN;
	int deliveries = 0;
	uint64_t now;

	(void)hdr;
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

	now = sw->now_ns;
	learn_cached(sw, src, src_mac, now);
	if (!(dst_mac[0] & 1)) {
		dst = lookup_cached(sw, src, dst_mac, now);
		if (dst) {
			/* Known: one port. Behind the sender itself: filtered, as on any bridge. */
			if (dst != src) {
				src->forwarded++;
				port_deliver(dst, iov, iovcnt, off, len);
			}
			return 0;
		}
	}
	src->flooded++;
	for (unsigned i = 0, k = 0; i < sw->nattached; i++) {
		dst = sw->attached[i];
		if (dst != src)
			port_deliver(dst, iov, iovcnt, off, len);
		if (dst != src && k++)
			deliveries++;
	}
	return deliveries; /* beyond the first: charged to the sender's budget */
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

/* switch_backend_ops - the ops table the device model calls. */
const struct vnet_backend_ops switch_backend_ops = {
	.kind = "switch",
	.offload_features = 0,
	.transmit = switch_transmit,
	.set_offloads = switch_set_offloads,
	.rx_resume = switch_rx_resume,
};

/* ---- Switch and ports ------------------------------------------------------------------- */

/* switch_create() - allocate an empty switch with a random FDB hash key. */
struct vnet_switch *switch_create(void)
{
	struct vnet_switch *sw = calloc(1, sizeof(*sw));

	if (!sw) {
		log_err("switch: out of memory");
		return NULL;
	}
	if (getrandom(&sw->hash_key, sizeof(sw->hash_key), GRND_NONBLOCK) !=
	    (ssize_t)sizeof(sw->hash_key))
		sw->hash_key = sw_now_ns() ^ (uint64_t)(uintptr_t)sw;
	sw->gen = 1; /* a new port's cache (generation 0) is never valid */
	sw->now_ns = sw_now_ns();
	for (unsigned s = 0; s < SW_SETS; s++)
		for (unsigned w = 0; w < SW_WAYS; w++)
			sw->fdb[s][w].port = SW_NO_PORT;
	return sw;
}

void switch_tick(struct vnet_switch *sw)
{
	sw->now_ns = sw_now_ns();
}

void switch_set_clock(struct vnet_switch *sw, uint64_t now_ns)
{
	sw->now_ns = now_ns;
}

/* switch_destroy() - detach what is left and free the switch. */
void switch_destroy(struct vnet_switch *sw)
{
	if (!sw)
		return;
	for (unsigned i = 0; i < SWITCH_MAX_PORTS; i++)
		if (sw->ports[i])
			switch_detach((struct vnet_backend *)sw->ports[i]);
	pool_free(sw);
	free(sw);
}

/* switch_attach() - take a free slot for a new port delivering to dev. */
struct vnet_backend *switch_attach(struct vnet_switch *sw, struct vnet_dev *dev, const char *name)
{
	struct switch_port *p;
	unsigned slot;

	assert(sw && dev);
	if (!name)
		name = "?";
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
	p->sw = sw;
	p->dev = dev;
	snprintf(p->name, sizeof(p->name), "%s", name);
	sw->ports[slot] = p;
	sw->attached[sw->nattached++] = p;
	log_info("switch: port %s attached", p->name);
	return (struct vnet_backend *)p;
}

/* switch_detach() - forget the port's MACs, free its queue and the port. */
void switch_detach(struct vnet_backend *be)
{
	struct switch_port *p;
	struct vnet_switch *sw;

	if (!be)
		return;
	p = port_of(be);
	sw = p->sw;
	fdb_forget_port(sw, p);
	while (p->q_len)
		port_dequeue(p);
	sw->ports[p->slot] = NULL;
	for (unsigned i = 0; i < sw->nattached; i++)
		if (sw->attached[i] == p) {
			sw->attached[i] = sw->attached[--sw->nattached];
			break;
		}
	log_info("switch: port %s detached", p->name);
	p->magic = 0;
	free(p);
}

/* switch_port_stats() - copy out the port's counters. */
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

/* switch_port_queued() - length of the port's queue. */
unsigned switch_port_queued(const struct vnet_backend *be)
{
	return port_of_const(be)->q_len;
}

/* SPDX-License-Identifier: MIT */
/* switch_port.c - the switch and its ports: create, attach, detach, clock, limits, counters. */
#include "backend/switch/switch.h"

#include <assert.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/types.h>
#include <time.h>

#include "lib/log.h"
#include "lib/stat_atomic.h"
#include "backend/switch/switch_fdb.h"
#include "backend/switch/switch_internal.h"
#include "backend/switch/switch_xq.h"
#include "dev/dev.h"

/*
 * Everything of the switch but its data path (switch.c): the switch's and its ports' lifetime,
 * with the workers parked, the clock each worker reads once a round, and the counters other
 * threads read.
 */

static uint64_t sw_now_ns(void)
{
	struct timespec ts;

	/* Learning and aging work in seconds: the coarse clock (a shared-page read, no TSC
	 * read), once per event-loop round (switch_tick()), is precise enough. */
	clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
	return (uint64_t)ts.tv_sec * FDB_NS + (uint64_t)ts.tv_nsec;
}

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
	for (unsigned i = 0; i < sw->nworkers; i++) {
		swq_pool_free(&sw->w[i]);
		sw_soft_free(&sw->w[i]);
	}
	xq_destroy(sw->xq);
	fdb_fini(&sw->fdb);
	free(sw);
}

/**
 * switch_attach() - add a port delivering to a device.
 * @sw: the switch
 * @dev: the port's device; must outlive the port, only used on @worker's thread (NULL: an
 * uplink, switch_attach_uplink())
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

	assert(sw);
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
	p->psec_mac = p->own_mac;
	p->home = p;
	p->src_ver = p->dst_ver = fdb_ver_none(&sw->fdb);
	fdb_set_limits(&sw->fdb, p->slot, SWITCH_FDB_PORT_MAX, SWITCH_LEARN_RATE);
	sw->ports[slot] = p;
	sw->w[worker].ports[sw->w[worker].nports++] = p;
	sw->w[worker].nflood++;
	log_info("switch: port %s attached", p->name);
	return (struct vnet_backend *)p;
}

/**
 * switch_attach_uplink() - add an uplink: a port whose frames go to ops->deliver().
 * @sw: the switch, whose other ports are access ports (they take the guarded transmit, which
 * alone delivers to an uplink)
 * @name: for log lines
 * @worker: the worker owning it (deliver() runs on its thread)
 * @ops: where its frames go
 * @ctx: their context
 *
 * No port security, the whole FDB as its MAC limit (a host bridge's MACs live behind it), the
 * default learn rate. Same thread rules as switch_attach().
 *
 * Return: its handle for switch_uplink_send() and switch_detach(), or NULL (logged).
 */
struct vnet_backend *switch_attach_uplink(struct vnet_switch *sw, const char *name,
					  unsigned worker, const struct switch_uplink_ops *ops,
					  void *ctx)
{
	struct vnet_backend *be = switch_attach(sw, NULL, name, worker);
	struct switch_port *p;

	if (!be)
		return NULL;
	p = port_of(be);
	p->up = ops;
	p->up_ctx = ctx;
	fdb_set_limits(&sw->fdb, p->slot, SWITCH_FDB_SIZE, SWITCH_LEARN_RATE);
	return be;
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
	while (p->nlanes) /* a spread port's lanes first: nothing names them once it is gone */
		switch_detach((struct vnet_backend *)p->lanes[--p->nlanes]);
	p->npairs = 0;
	if (!p->is_lane) {
		fdb_forget_port(&sw->fdb, p->slot); /* and every flow cache that named it goes stale */
		w->nflood--;
	}
	swq_clear(p);
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
	uint64_t fw = p->forwarded, fl = p->flooded,
		 dr = p->dropped + __atomic_load_n(&p->spread_dropped, __ATOMIC_RELAXED);

	for (unsigned i = 0; i < p->nlanes; i++) { /* a spread port: its lanes' too */
		fw += p->lanes[i]->forwarded;
		fl += p->lanes[i]->flooded;
		dr += p->lanes[i]->dropped;
	}
	if (forwarded)
		*forwarded = fw;
	if (flooded)
		*flooded = fl;
	if (dropped)
		*dropped = dr;
}

/**
 * switch_attach_lane() - run some of a port's queue pairs on another worker.
 * @be: the port (its home: switch_attach(), its settings made)
 * @dev: the device view that runs those pairs there (vnet_dev_lane_create())
 * @worker: that worker, not the port's own
 *
 * The lane is a switch port of its own on @worker (its TX's flow cache, counters, queue for
 * guest RX buffers and cross-worker back-pressure), whose frames the FDB learns as the home's;
 * it copies the home's port security, flood rate and ips= list. Name the pairs it runs with
 * switch_port_set_pairs(). Only on a switch spread over workers, with them parked.
 *
 * Return: the lane's handle (for the device view's backend), or NULL (logged).
 */
struct vnet_backend *switch_attach_lane(struct vnet_backend *be, struct vnet_dev *dev,
					unsigned worker)
{
	struct switch_port *home = port_of(be), *l;
	struct vnet_backend *lb;
	char name[40];

	if (!home->sw->xq || home->is_lane || worker == home->worker ||
	    home->nlanes == SWITCH_MAX_PAIRS) {
		log_err("switch: %s: cannot run queue pairs on worker %u", home->name, worker);
		return NULL;
	}
	snprintf(name, sizeof(name), "%.24s/w%u", home->name, worker);
	lb = switch_attach(home->sw, dev, name, worker);
	if (!lb)
		return NULL;
	l = port_of(lb);
	l->home = home;
	l->is_lane = true;
	home->sw->w[worker].nflood--; /* floods reach the port through its home */
	l->psec = home->psec;
	l->psec_mac = home->psec_mac == home->own_mac ? l->own_mac : home->psec_mac;
	memcpy(l->own_mac, home->own_mac, sizeof(l->own_mac));
	l->n_allowed = home->n_allowed;
	memcpy(l->allowed, home->allowed, sizeof(l->allowed));
	l->flood_rate = home->flood_rate;
	l->flood_credit = home->flood_credit;
	l->n_ips = home->n_ips;
	memcpy(l->ips, home->ips, sizeof(l->ips));
	l->rx_offloads = __atomic_load_n(&home->rx_offloads, __ATOMIC_RELAXED);
	home->lanes[home->nlanes++] = l;
	return lb;
}

/**
 * switch_port_set_pairs() - which of a port's handles runs each of its queue pairs.
 * @be: the port (its home)
 * @runs: per pair, the home's handle or one of its lanes' (switch_attach_lane())
 * @npairs: pairs, 1..SWITCH_MAX_PAIRS
 *
 * From then on a frame for the port goes to the pair its device picks, on the worker of the
 * handle that runs it. With the workers parked.
 *
 * Return: 0, or -1 when a handle is neither the port nor one of its lanes.
 */
int switch_port_set_pairs(struct vnet_backend *be, struct vnet_backend *const *runs,
			  unsigned npairs)
{
	struct switch_port *home = port_of(be);

	if (!npairs || npairs > SWITCH_MAX_PAIRS)
		return -1;
	for (unsigned i = 0; i < npairs; i++)
		if (port_of(runs[i]) != home && port_of(runs[i])->home != home)
			return -1;
	for (unsigned i = 0; i < npairs; i++)
		home->pair_port[i] = port_of(runs[i]);
	home->npairs = (uint8_t)npairs;
	return 0;
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
 * switch_port_set_security() - who the port's guest may send as.
 * @be: the port's handle
 * @s: on/off, mac_change (the device's current MAC instead of the one it had when attached)
 * and the other MACs allowed
 *
 * With port security on, a frame whose source is neither the port's MAC nor allowed (and any
 * from a multicast source) is dropped before learning, counted (spoofed) and logged
 * (rate-limited). Call it right after switch_attach() (with several workers, while they are
 * parked).
 *
 * Return: 0, or -1 (nothing changed, logged) for too many allowed MACs or a multicast one.
 */
int switch_port_set_security(struct vnet_backend *be, const struct switch_port_security *s)
{
	struct switch_port *p = port_of(be);

	if (s->n_allowed > SWITCH_ALLOWED_MACS) {
		log_err("switch %s: %u allowed MACs, at most %d", p->name, s->n_allowed,
			SWITCH_ALLOWED_MACS);
		return -1;
	}
	for (unsigned i = 0; i < s->n_allowed; i++)
		if (s->allowed[i][0] & 1) {
			log_err("switch %s: a multicast MAC cannot be a source", p->name);
			return -1;
		}
	p->psec = s->on;
	memcpy(p->own_mac, vnet_dev_mac(p->dev), SW_ETH_ALEN);
	p->psec_mac = s->mac_change ? vnet_dev_mac(p->dev) : p->own_mac;
	p->n_allowed = (uint8_t)s->n_allowed;
	if (s->n_allowed)
		memcpy(p->allowed, s->allowed, s->n_allowed * sizeof(p->allowed[0]));
	return 0;
}

/**
 * switch_port_set_flood_rate() - storm control: how many frames a second the port may flood.
 * @be: the port's handle
 * @rate: broadcast, multicast and unknown-unicast frames a second (0: no limit, as attached),
 * at most SWITCH_FLOOD_RATE_MAX (larger is clamped), with one second's worth at once
 *
 * Floods over the rate are dropped, counted (storm_dropped) and logged (rate-limited); unicast to
 * a known port is never limited. The bucket starts full. Call it right after switch_attach()
 * (with several workers, while they are parked), then attach the device with switch_port_ops():
 * only its tables for ports with a limit check it.
 */
void switch_port_set_flood_rate(struct vnet_backend *be, unsigned rate)
{
	struct switch_port *p = port_of(be);

	p->flood_rate = rate > SWITCH_FLOOD_RATE_MAX ? SWITCH_FLOOD_RATE_MAX : rate;
	p->flood_credit = (uint64_t)p->flood_rate * 1000000000ull;
	p->flood_ns = p->sw->w[p->worker].now_ns;
}

/**
 * switch_port_set_ips() - IP anti-spoofing: the addresses the port's guest may send from.
 * @be: the port's handle
 * @nets: the networks (IPv4 and IPv6, each with its prefix length)
 * @n: how many, 0..SWITCH_IPS (0: no list, no check, as attached)
 *
 * With a list, IPv4 and IPv6 frames from other sources, ARP for other sender IPs and neighbour
 * advertisements for other targets are dropped, counted (ip_spoofed) and logged (rate-limited);
 * switch_ips.c has the exceptions (DHCP, duplicate address detection). Call it right after
 * switch_attach() (with several workers, while they are parked), then attach the device with
 * switch_port_ops(): only its tables for ports with a list check it.
 *
 * Return: 0, or -1 (nothing changed, logged) for too many entries or a prefix too long.
 */
int switch_port_set_ips(struct vnet_backend *be, const struct switch_ip_net *nets, unsigned n)
{
	struct switch_port *p = port_of(be);

	if (n > SWITCH_IPS) {
		log_err("switch %s: %u ips= entries, at most %d", p->name, n, SWITCH_IPS);
		return -1;
	}
	for (unsigned i = 0; i < n; i++)
		if (nets[i].prefix > (nets[i].v6 ? 128 : 32)) {
			log_err("switch %s: ips= prefix /%u is too long", p->name, nets[i].prefix);
			return -1;
		}
	p->n_ips = n;
	if (n)
		memcpy(p->ips, nets, n * sizeof(p->ips[0]));
	return 0;
}

/**
 * switch_port_set_access() - make the port an access port (vlan=N), or a plain one again.
 * @be: the port's handle
 * @on: drop the VLAN-tagged frames its guest sends (802.1Q, 802.1ad, 0x9100), counted
 * (tagged_dropped) and logged (rate-limited)
 *
 * The VLAN itself is the port's segment (port_table.c keys segments by name and VLAN), so the
 * switch only keeps the guest from tagging: no double tagging. Same thread rules as
 * switch_port_set_flood_rate(); attach the device with switch_port_ops() after it (only its
 * guarded tables check).
 */
void switch_port_set_access(struct vnet_backend *be, bool on)
{
	port_of(be)->access = on;
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
	struct vnet_offload_stats o;

	fdb_port_read(&p->sw->fdb, p->slot, &fp);
	*out = (struct switch_port_counters){
	    .cache_misses = stat_read(&p->cache_misses),
	    .macs = fp.learned,
	    .max_macs = fp.max_macs,
	    .learn_rate = fp.learn_rate,
	    .mac_limit_hits = fp.limit_hits,
	    .learn_rate_hits = fp.rate_hits,
	    .spoofed = stat_read(&p->spoofed),
	    .port_security = p->psec,
	    .arp_nd_spoofed = stat_read(&p->arp_nd_spoofed),
	    .flood_rate = p->flood_rate,
	    .storm_dropped = stat_read(&p->storm_dropped),
	    .ips = p->n_ips,
	    .ip_spoofed = stat_read(&p->ip_spoofed),
	    .access = p->access,
	    .tagged_dropped = stat_read(&p->tagged_dropped),
	};
	switch_offload_stats(be, &o);
	out->bad_offload_hdr = o.bad_header;
	out->offload_passed = o.passed;
	out->soft_segments = o.soft_segments;
	out->soft_csums = o.soft_checksums;
}

/**
 * switch_offload_stats() - a port's offload counters (struct vnet_backend_ops' offload_stats).
 * @be: the port's handle
 * @out: filled: its own counters and its lanes' (a spread port's lanes send and receive for it)
 *
 * From any thread while its worker runs (each value torn-free, stat_atomic.h).
 */
void switch_offload_stats(const struct vnet_backend *be, struct vnet_offload_stats *out)
{
	const struct switch_port *p = port_of_const(be);

	*out = (struct vnet_offload_stats){0};
	for (unsigned i = 0; i <= p->nlanes; i++) {
		const struct switch_port *l = i ? p->lanes[i - 1] : p;

		out->bad_header += stat_read(&l->bad_hdr);
		out->passed += stat_read(&l->offload_passed);
		out->soft_segments += stat_read(&l->soft_segs);
		out->soft_checksums += stat_read(&l->soft_csums);
	}
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
	const struct switch_port *p = port_of_const(be);
	uint64_t n = p->crossed;

	for (unsigned i = 0; i < p->nlanes; i++) /* a spread port: its lanes' too */
		n += p->lanes[i]->crossed;
	return n;
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

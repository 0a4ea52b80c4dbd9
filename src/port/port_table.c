/* SPDX-License-Identifier: MIT */
/* port_table.c - the daemon's ports by slot: placement on workers, adding, dooming, reaping. */
#include "port/port_table.h"
#include "port/port_table_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "lib/log.h"
#include "port/port.h"
#include "port/port_lanes.h"
#include "backend/switch/switch.h"
#include "dev/dev.h"

/**
 * port_table_init() - an empty port table.
 * @t: the table (its storage is the caller's)
 * @pool: the workers ports are placed on (initialised)
 * @sw_ops: the switch's owner operations (cross-worker wake-ups), for switch_create()
 * @sw_ctx: their context
 *
 * Main thread.
 */
void port_table_init(struct port_table *t, struct worker_pool *pool,
		     const struct switch_owner_ops *sw_ops, void *sw_ctx)
{
	memset(t, 0, sizeof(*t));
	t->pool = pool;
	t->sw_ops = sw_ops;
	t->sw_ctx = sw_ctx;
	t->config_dir = -1;
}

/**
 * port_table_add() - create a port in a free slot and place it on a worker.
 * @t: the table
 * @slot: a free slot (the port's index)
 * @cfg: its configuration (checked: worker= below the pool's size)
 * @origin: where it came from
 *
 * A switch port joins its segment (switch=NAME, or the default one; with vlan=N, that
 * segment's VLAN N, a domain of its own), whose switch is created with its first port. A port
 * goes to its worker=. Else a tap port goes to the worker with the fewest ports (the lowest on
 * a tie), and a switch port to its segment's home worker: the one the segment's first such
 * port got that way. A trunk tap port (uplink=NAME,trunk=N+...) holds each of its VLANs as a
 * port would, goes to its first VLAN's home worker if it has one, and is the home of those
 * without. Main thread, the other workers parked (or not
 * started).
 *
 * Return: the slot, or -1 (logged).
 */
int port_table_add(struct port_table *t, unsigned slot, const struct port_config *cfg,
		   enum port_origin origin)
{
	struct worker_pool *pool = t->pool;
	struct worker *w = &pool->w[0];
	struct port_segment *seg = NULL;
	struct vnet_switch *sws[PORT_MAX_TRUNK];
	unsigned ntrunk = 0;
	struct port *p;
	int si = -1;

	/* A trunk holds each of its VLANs like a port of it (port_segment_put() undoes each). */
	for (; ntrunk < cfg->n_trunk; ntrunk++) {
		int ti = port_segment_get(t, cfg->uplink, cfg->trunk[ntrunk]);

		if (ti < 0) {
			port_trunk_put(t, t->trunk_of[slot], ntrunk);
			return -1;
		}
		t->segments[ti].nports++;
		t->trunk_of[slot][ntrunk] = (uint8_t)ti;
	}
	if (cfg->backend == PORT_BACKEND_SWITCH) {
		si = port_segment_get(t, cfg->segment, cfg->vlan);
		if (si < 0)
			return -1;
		seg = &t->segments[si];
		seg->nports++; /* before anything may fail: port_segment_put() undoes it */
	}
	/*
	 * The switch hands frames between workers (switch_xq.c), but a frame that crosses costs
	 * several times a direct copy, so unpinned switch ports stay together (as talking guests
	 * should) and the operator spreads groups with worker=.
	 */
	if (cfg->n_queue_workers) {
		/* queue-workers=: its home is worker 0, the main thread, which alone can park the
		 * others around what changes the device (port_lanes.c) */
		for (unsigned i = 0; i < cfg->n_queue_workers; i++)
			if (cfg->queue_workers[i] >= pool->n || pool->n < 2) {
				log_err("queue-workers=: worker %u, but vnetd runs %u worker(s)",
					cfg->queue_workers[i], pool->n);
				if (seg)
					port_segment_put(t, (unsigned)si);
				port_trunk_put(t, t->trunk_of[slot], ntrunk);
				return -1;
			}
	} else if (cfg->worker >= 0) { /* < pool->n: options_parse(), port_table_add_spec() */
		w = &pool->w[cfg->worker];
	} else if (seg && seg->home >= 0) {
		w = &pool->w[seg->home];
	} else if (ntrunk && t->segments[t->trunk_of[slot][0]].home >= 0) {
		w = &pool->w[t->segments[t->trunk_of[slot][0]].home]; /* with its first VLAN */
	} else {
		for (unsigned i = 1; i < pool->n; i++)
			if (pool->w[i].nports < w->nports)
				w = &pool->w[i];
		if (seg)
			seg->home = (int)w->id;
	}
	for (unsigned v = 0; v < ntrunk; v++) /* a VLAN's access ports join its trunk's worker */
		if (t->segments[t->trunk_of[slot][v]].home < 0)
			t->segments[t->trunk_of[slot][v]].home = (int)w->id;
	if (seg)
		sws[0] = seg->sw;
	for (unsigned v = 0; v < ntrunk; v++)
		sws[v] = t->segments[t->trunk_of[slot][v]].sw;
	p = port_create(slot, cfg, w->id, w->epfd, &w->rq, &w->flushq, sws);
	if (p && port_lanes_setup(p, pool) < 0) {
		port_destroy(p);
		p = NULL;
	}
	if (!p) {
		if (seg)
			port_segment_put(t, (unsigned)si);
		port_trunk_put(t, t->trunk_of[slot], ntrunk);
		return -1;
	}
	if (seg)
		t->segment_of[slot] = (uint8_t)si;
	w->nports++;
	vnet_dev_set_poll(port_dev(p), w->poll_us, w->poll_budget_ns); /* the worker's --poll-us */
	t->worker_of[slot] = (uint8_t)w->id;
	if (pool->n > 1)
		log_info("%s: worker %u", port_name(p), w->id);
	t->ports[slot] = p;
	t->origin[slot] = (uint8_t)origin;
	t->doomed[slot] = false;
	t->live[t->nlive++] = p;
	return (int)slot;
}

static int free_slot(const struct port_table *t)
{
	for (unsigned i = 0; i < VNETD_MAX_PORTS; i++)
		if (!t->ports[i])
			return (int)i;
	return -1;
}

/**
 * port_table_add_spec() - a port from a spec, among the ports there.
 * @t: the table
 * @spec: the spec, as --port takes it
 * @origin: PORT_ORIGIN_RUNTIME (port-add) or PORT_ORIGIN_CONFIG
 * @err: one line on failure (the port-add reply, the reload's log)
 * @err_len: its size
 *
 * The lowest free slot; the spec goes through port_spec_runtime() against every port in the
 * table (doomed ones too: their sockets and taps are not free yet). Main thread, the other
 * workers parked.
 *
 * Return: the slot, or -1 (err set).
 */
int port_table_add_spec(struct port_table *t, const char *spec, enum port_origin origin,
			char *err, size_t err_len)
{
	static const struct port_config *others[VNETD_MAX_PORTS];
	static unsigned other_index[VNETD_MAX_PORTS];
	static struct port_config cfg;
	int slot = free_slot(t), r;
	unsigned n = 0, nworkers = t->pool->n;

	if (slot < 0) {
		snprintf(err, err_len, "all %d ports are in use", VNETD_MAX_PORTS);
		return -1;
	}
	for (unsigned i = 0; i < VNETD_MAX_PORTS; i++)
		if (t->ports[i]) {
			others[n] = port_config(t->ports[i]);
			other_index[n++] = i;
		}
	if (port_spec_runtime(spec, (unsigned)slot, &cfg, others, other_index, n, err, err_len) < 0)
		return -1;
	if (cfg.worker >= (int)nworkers) {
		snprintf(err, err_len, "worker=%d, but vnetd runs %u worker(s) (0..%u)", cfg.worker,
			 nworkers, nworkers - 1);
		return -1;
	}
	r = port_table_add(t, (unsigned)slot, &cfg, origin);
	if (r < 0)
		snprintf(err, err_len, "cannot set up the port (see vnetd's log)");
	return r;
}

/**
 * port_table_doom() - remove a port at the end of this round (nothing may dangle before).
 * @t: the table
 * @slot: the port's slot (a port there)
 *
 * Main thread.
 *
 * Return: 0, or -1 when it is doomed already.
 */
int port_table_doom(struct port_table *t, unsigned slot)
{
	if (t->doomed[slot])
		return -1;
	t->doomed[slot] = true;
	t->ndoomed++;
	return 0;
}

/**
 * port_table_reap() - destroy the doomed ports.
 * @t: the table
 *
 * Each one's frontend is disconnected (held completions signalled, queues stopped as for any
 * disconnect), its tap closed, its switch port detached, and what its worker had queued for
 * the slot dropped. The live list is packed again, by slot. Main thread, the other workers
 * parked.
 */
void port_table_reap(struct port_table *t)
{
	unsigned n = 0;

	for (unsigned i = 0; i < VNETD_MAX_PORTS && t->ndoomed; i++) {
		if (!t->doomed[i])
			continue;
		struct worker *w = &t->pool->w[t->worker_of[i]];

		bool sw = port_config(t->ports[i])->backend == PORT_BACKEND_SWITCH;
		unsigned ntrunk = port_config(t->ports[i])->n_trunk;

		log_info("%s: removed", port_name(t->ports[i]));
		port_destroy(t->ports[i]);
		/* Entries the port (or its teardown) queued must not reach the slot's next port: on
		 * every worker, as one with queue-workers= has entries on several. */
		for (unsigned k = 0; k < t->pool->n; k++) {
			run_queue_drop_port(&t->pool->w[k].rq, i);
			run_queue_drop_port(&t->pool->w[k].flushq, i);
		}
		w->nports--;
		t->ports[i] = NULL;
		if (sw)
			port_segment_put(t, t->segment_of[i]);
		port_trunk_put(t, t->trunk_of[i], ntrunk);
		t->doomed[i] = false;
		free(t->config_spec[i]);
		t->config_spec[i] = NULL;
		t->ndoomed--;
	}
	for (unsigned i = 0; i < VNETD_MAX_PORTS; i++)
		if (t->ports[i])
			t->live[n++] = t->ports[i];
	t->nlive = n;
}

/**
 * port_table_check_faults() - a guest memory fault happened somewhere: check a worker's ports.
 * @t: the table
 * @worker: the worker; called on its thread
 *
 * Ports whose guest memory faulted lose their frontend (port_check_fault()).
 */
void port_table_check_faults(struct port_table *t, unsigned worker)
{
	for (unsigned i = 0; i < VNETD_MAX_PORTS; i++)
		if (t->ports[i] && t->worker_of[i] == worker)
			port_check_fault(t->ports[i]);
}

/**
 * port_table_free() - destroy every port, then the switches; close the --config directory.
 * @t: the table; empty afterwards
 *
 * Main thread, the workers stopped.
 */
void port_table_free(struct port_table *t)
{
	for (unsigned i = 0; i < VNETD_MAX_PORTS; i++) {
		port_destroy(t->ports[i]);
		t->ports[i] = NULL;
		free(t->config_spec[i]);
		t->config_spec[i] = NULL;
	}
	t->nlive = 0;
	for (unsigned i = 0; i < t->nsegments; i++)
		switch_destroy(t->segments[i].sw);
	memset(t->segments, 0, sizeof(t->segments));
	t->nsegments = 0;
	if (t->config_dir >= 0)
		close(t->config_dir);
	t->config_dir = -1;
}

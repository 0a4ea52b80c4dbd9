/* SPDX-License-Identifier: MIT */
/* port_table.c - the daemon's ports by slot: placement on workers, run-time changes, --config. */
#include "port/port_table.h"

#include <errno.h>
#include <fcntl.h>
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

/*
 * The segment named `name` ("": the default one), VLAN `vlan` of it (0: its untagged domain),
 * created (its switch too) if it has no ports yet: its index, or -1 (logged) at
 * PORT_MAX_SEGMENTS or out of memory.
 */
static int segment_get(struct port_table *t, const char *name, uint16_t vlan)
{
	struct port_segment *s;

	for (unsigned i = 0; i < t->nsegments; i++)
		if (strcmp(t->segments[i].name, name) == 0 && t->segments[i].vlan == vlan)
			return (int)i;
	if (t->nsegments == PORT_MAX_SEGMENTS) {
		log_err("switch=%s: already %d segments (each VLAN of one counts)",
			name[0] ? name : "default", PORT_MAX_SEGMENTS);
		return -1;
	}
	s = &t->segments[t->nsegments];
	s->sw = switch_create(t->pool->n, t->sw_ops, t->sw_ctx);
	if (!s->sw)
		return -1;
	snprintf(s->name, sizeof(s->name), "%s", name);
	s->vlan = vlan;
	s->home = -1;
	s->nports = 0;
	if (vlan)
		log_info("switch segment %s VLAN %u: created", name[0] ? name : "default", vlan);
	else if (name[0])
		log_info("switch segment %s: created", name);
	return (int)t->nsegments++;
}

/*
 * A port of segment i went: with its last, the segment and its switch go too (the last
 * segment takes its place in the packed array). Workers parked.
 */
static void segment_put(struct port_table *t, unsigned i)
{
	unsigned last = t->nsegments - 1;

	if (--t->segments[i].nports)
		return;
	if (t->segments[i].vlan)
		log_info("switch segment %s VLAN %u: removed (no ports left)",
			 t->segments[i].name[0] ? t->segments[i].name : "default",
			 t->segments[i].vlan);
	else if (t->segments[i].name[0])
		log_info("switch segment %s: removed (no ports left)", t->segments[i].name);
	switch_destroy(t->segments[i].sw);
	if (i != last) {
		t->segments[i] = t->segments[last];
		for (unsigned k = 0; k < VNETD_MAX_PORTS; k++) {
			const struct port_config *c = t->ports[k] ? port_config(t->ports[k]) : NULL;

			if (c && c->backend == PORT_BACKEND_SWITCH && t->segment_of[k] == last)
				t->segment_of[k] = (uint8_t)i;
			for (unsigned v = 0; c && v < c->n_trunk; v++)
				if (t->trunk_of[k][v] == last)
					t->trunk_of[k][v] = (uint8_t)i;
		}
	}
	memset(&t->segments[last], 0, sizeof(t->segments[last]));
	t->nsegments--;
}

/*
 * A trunk's VLANs went (its port gone, or never made): segment_put() each, the highest index
 * first, so a segment moved into a freed place is never one still to put (the port is out of
 * the table: segment_put() cannot fix its indexes).
 */
static void trunk_put(struct port_table *t, const uint8_t *idx, unsigned n)
{
	uint8_t left[PORT_MAX_TRUNK];

	memcpy(left, idx, n);
	while (n) {
		unsigned top = 0;

		for (unsigned v = 1; v < n; v++)
			if (left[v] > left[top])
				top = v;
		segment_put(t, left[top]);
		left[top] = left[--n];
	}
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

	/* A trunk holds each of its VLANs like a port of it (segment_put() undoes each). */
	for (; ntrunk < cfg->n_trunk; ntrunk++) {
		int ti = segment_get(t, cfg->uplink, cfg->trunk[ntrunk]);

		if (ti < 0) {
			trunk_put(t, t->trunk_of[slot], ntrunk);
			return -1;
		}
		t->segments[ti].nports++;
		t->trunk_of[slot][ntrunk] = (uint8_t)ti;
	}
	if (cfg->backend == PORT_BACKEND_SWITCH) {
		si = segment_get(t, cfg->segment, cfg->vlan);
		if (si < 0)
			return -1;
		seg = &t->segments[si];
		seg->nports++; /* before anything may fail: segment_put() undoes it */
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
					segment_put(t, (unsigned)si);
				trunk_put(t, t->trunk_of[slot], ntrunk);
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
			segment_put(t, (unsigned)si);
		trunk_put(t, t->trunk_of[slot], ntrunk);
		return -1;
	}
	if (seg)
		t->segment_of[slot] = (uint8_t)si;
	w->nports++;
	vnet_dev_set_poll_us(port_dev(p), w->poll_us); /* the worker's --poll-us */
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
			segment_put(t, t->segment_of[i]);
		trunk_put(t, t->trunk_of[i], ntrunk);
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
 * port_table_reload() - apply the --config file.
 * @t: the table, with port_table_open_config() done
 *
 * Ports it no longer lists (or lists with another spec) go, new ones come; ports it lists
 * unchanged stay untouched (their guests notice nothing). A file that does not parse changes
 * nothing. Ports from the command line or port-add are not its own. Main thread (start-up or
 * SIGHUP), the other workers parked.
 *
 * Return: 0, or -1 (logged) when the file did not parse or a port failed.
 */
int port_table_reload(struct port_table *t)
{
	static struct config_ports cp;
	char err[256];
	bool keep[VNETD_MAX_PORTS] = {false};
	unsigned added = 0, removed = 0, failed = 0;

	if (config_file_load(t->config_dir, t->config_name, &cp, err, sizeof(err)) < 0) {
		log_err("config %s: %s; nothing changed", t->config_path, err);
		return -1;
	}
	for (unsigned i = 0; i < VNETD_MAX_PORTS; i++) {
		bool listed = false;

		if (!t->ports[i] || t->origin[i] != PORT_ORIGIN_CONFIG || t->doomed[i])
			continue;
		for (unsigned j = 0; j < cp.n && !listed; j++)
			if (!keep[j] && t->config_spec[i] &&
			    strcmp(cp.spec[j], t->config_spec[i]) == 0)
				keep[j] = listed = true;
		if (!listed) {
			port_table_doom(t, i);
			removed++;
		}
	}
	port_table_reap(t); /* a changed port's socket and tap are free again for its new spec */
	for (unsigned j = 0; j < cp.n; j++) {
		int slot;

		if (keep[j])
			continue;
		slot = port_table_add_spec(t, cp.spec[j], PORT_ORIGIN_CONFIG, err, sizeof(err));
		if (slot < 0) {
			log_err("config %s: port %u: %s", t->config_path, j, err);
			failed++;
			continue;
		}
		/* NULL (no memory): the port is replaced at the next reload. */
		t->config_spec[slot] = strdup(cp.spec[j]);
		added++;
	}
	log_info("config %s: %u port(s) added, %u removed, %u unchanged, %u failed", t->config_path,
		 added, removed, cp.n - added - failed, failed);
	return failed ? -1 : 0;
}

/**
 * port_table_open_config() - open the directory of the --config file and keep it.
 * @t: the table
 * @path: --config FILE (kept: static storage of the options)
 *
 * SIGHUP re-reads the file by name in it (an editor's rename is seen), and the sandbox allows
 * opening files there only (the caller allows the directory). Main thread, start-up.
 *
 * Return: the directory (an O_PATH fd the table keeps), or -1 (logged).
 */
int port_table_open_config(struct port_table *t, const char *path)
{
	char dir[256];
	const char *slash = strrchr(path, '/');

	t->config_path = path;
	if (slash) {
		snprintf(dir, sizeof(dir), "%.*s", (int)(slash - path), path);
		t->config_name = slash + 1;
	} else {
		snprintf(dir, sizeof(dir), ".");
		t->config_name = path;
	}
	t->config_dir = open(dir[0] ? dir : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (t->config_dir < 0 || t->config_name[0] == '\0') {
		log_err("config %s: cannot open its directory: %s", path,
			t->config_dir < 0 ? strerror(errno) : "no file name");
		return -1;
	}
	return t->config_dir;
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

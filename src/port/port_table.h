/* SPDX-License-Identifier: MIT */
/* port_table.h - the daemon's ports by slot: placement on workers, run-time changes, --config. */
#ifndef VNETD_PORT_TABLE_H
#define VNETD_PORT_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "loop/loop.h"

struct port;

struct switch_owner_ops;
struct vnet_switch;

#define PORT_MAX_SEGMENTS 64 /* switch=NAME segments at once, the default one included */

/*
 * One L2 segment: a switch of its own (FDB, flooding, flow caches), created with its first
 * port and destroyed with its last. Its unpinned ports go to its home worker. A VLAN of a
 * segment (switch=NAME,vlan=N: its access ports) is an L2 domain of its own too, so it is
 * one of these, keyed by name and VLAN.
 */
struct port_segment {
	char name[PORT_SEGMENT_LEN]; /* "": plain switch's, the default segment */
	uint16_t vlan;		     /* the VLAN of switch=NAME,vlan=N; 0: the untagged domain */
	struct vnet_switch *sw;	     /* spans every worker */
	int home;		     /* where its ports without worker= go; -1 until the first */
	unsigned nports;
};

/* Where a port came from: a --config reload only adds, changes and removes its own. */
enum port_origin { PORT_ORIGIN_CMDLINE, PORT_ORIGIN_CONFIG, PORT_ORIGIN_RUNTIME };

/*
 * The registry. Main thread only, and only while the other workers are parked or between
 * rounds for changes; the fields are read by the daemon through the inline helpers below (the
 * dispatch path: no call), and changed by port_table.c alone.
 */
struct port_table {
	struct worker_pool *pool;
	/* Ports by slot (the index in their name and in ev_ref.port); NULL: free. */
	struct port *ports[VNETD_MAX_PORTS];
	/* The same, packed in the order they came, for the control socket and metrics; removed
	 * ones leave at port_table_reap(), which packs by slot. */
	struct port *live[VNETD_MAX_PORTS];
	unsigned nlive;
	uint8_t origin[VNETD_MAX_PORTS];    /* enum port_origin */
	uint8_t worker_of[VNETD_MAX_PORTS]; /* the worker that owns the port */
	uint8_t segment_of[VNETD_MAX_PORTS]; /* a switch port's index in segments[] */
	/* A trunk tap port's VLANs (uplink=,trunk=): their indexes in segments[], cfg order. */
	uint8_t trunk_of[VNETD_MAX_PORTS][PORT_MAX_TRUNK];
	char *config_spec[VNETD_MAX_PORTS]; /* PORT_ORIGIN_CONFIG: the spec it was made from */
	bool doomed[VNETD_MAX_PORTS];       /* port-del'd: destroyed at port_table_reap() */
	unsigned ndoomed;
	struct port_segment segments[PORT_MAX_SEGMENTS]; /* packed: nsegments of them */
	unsigned nsegments;
	const struct switch_owner_ops *sw_ops;
	void *sw_ctx;
	int config_dir;          /* --config's directory (O_PATH); -1 without */
	const char *config_path; /* --config FILE as given (messages) */
	const char *config_name; /* ... and the file's name in config_dir */
};

/*
 * port_table_init() - an empty table placing ports on pool's workers; the switch, once a
 * switch port comes, gets sw_ops/sw_ctx (its cross-worker wake-ups).
 */
void port_table_init(struct port_table *t, struct worker_pool *pool,
		     const struct switch_owner_ops *sw_ops, void *sw_ctx);

/* port_table_add() - create a port from cfg in free slot `slot`; the slot, or -1 (logged). */
int port_table_add(struct port_table *t, unsigned slot, const struct port_config *cfg,
		   enum port_origin origin);

/*
 * port_table_add_spec() - parse SPEC (port_spec_runtime()) against the ports there and create
 * it in the lowest free slot; the slot, or -1 with one line in err.
 */
int port_table_add_spec(struct port_table *t, const char *spec, enum port_origin origin,
			char *err, size_t err_len);

/* port_table_doom() - remove the port in `slot` at the next port_table_reap(); -1 if doomed. */
int port_table_doom(struct port_table *t, unsigned slot);

/* port_table_reap() - destroy the doomed ports (the other workers parked). */
void port_table_reap(struct port_table *t);

/* port_table_open_config() - keep the directory of --config FILE open: its fd, or -1 (logged). */
int port_table_open_config(struct port_table *t, const char *path);

/*
 * port_table_reload() - apply the --config file: only the ports it no longer lists, lists
 * differently, or newly lists change. 0, or -1 (logged) if it did not parse or a port failed.
 */
int port_table_reload(struct port_table *t);

/* port_table_check_faults() - drop the frontends of worker's ports whose guest memory faulted. */
void port_table_check_faults(struct port_table *t, unsigned worker);

/* port_table_free() - destroy every port and the switches; close the --config directory. */
void port_table_free(struct port_table *t);

/* port_table_port() - the port in `slot` (any value, e.g. from an ev_ref), or NULL. */
static inline struct port *port_table_port(const struct port_table *t, unsigned slot)
{
	return slot < VNETD_MAX_PORTS ? t->ports[slot] : NULL;
}

/*
 * port_table_nsegments(), port_table_segment_switch() - the switches of the segments that have
 * ports, i < port_table_nsegments(). Any worker, between changes (they park the workers).
 */
static inline unsigned port_table_nsegments(const struct port_table *t)
{
	return t->nsegments;
}

static inline struct vnet_switch *port_table_segment_switch(const struct port_table *t, unsigned i)
{
	return t->segments[i].sw;
}

/* port_table_live() - the ports, packed (port_table_nlive() of them), for control and metrics. */
static inline struct port *const *port_table_live(const struct port_table *t)
{
	return t->live;
}

/* port_table_nlive() - how many port_table_live() holds. */
static inline unsigned port_table_nlive(const struct port_table *t)
{
	return t->nlive;
}

/* port_table_doomed() - whether port_table_reap() has work. */
static inline bool port_table_doomed(const struct port_table *t)
{
	return t->ndoomed != 0;
}

#endif

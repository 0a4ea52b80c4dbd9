/* SPDX-License-Identifier: MIT */
/* stats.h - the one read path of port and queue statistics (vnetctl stats, Prometheus metrics). */
#ifndef VNETD_STATS_H
#define VNETD_STATS_H

#include <stdbool.h>
#include <stdint.h>

#include "port/port.h"
#include "backend/switch/switch.h"
#include "backend/tap/tap.h"

/* One port as the statistics readers see it. */
struct stats_port {
	const char *name; /* "p0", ... */
	unsigned index;
	const char *backend; /* "tap" or "switch" */
	const char *tap;     /* tap name, NULL for a switch port */
	const char *socket;  /* vhost-user socket path */
	bool connected;	     /* a frontend is connected */
	uint64_t connections;
	unsigned worker; /* thread serving the port (--workers) */
	unsigned nqueues;
	bool stall_guard; /* the port's stall guard is on */
	struct rate_params tx_rate, rx_rate; /* the port's rate limits (mbit 0: none) */
	bool is_switch;	  /* a switch port: sw below is set */
	const char *segment; /* a switch port's L2 segment: "default" or its switch=NAME; NULL: tap */
	unsigned vlan;	     /* an access port's vlan=N; 0: none */
	struct switch_port_counters sw;
	/* What its backend did with frames that ask for offloads (a switch or AF_XDP port). */
	bool has_offload_stats;
	struct vnet_offload_stats offloads;
	/* A multi-queue tap's queues (queues=N > 1), else 0: packets read from and written to
	 * each queue's fd (queue i is queue pair i's). */
	unsigned tap_queues;
	struct tap_queue_stats tapq[TAP_MAX_QUEUES];
	struct rss_view rss; /* the driver's RSS state (vnet_dev_rss_read()) */
};

/* One queue: its state, counters (copied), coalescing parameters and lateness histogram. */
struct stats_queue {
	unsigned index;
	const char *kind; /* "rx", "tx" or "ctrl" */
	bool enabled, started, broken;
	uint64_t packets, bytes, kicks;
	uint64_t notifications; /* sent */
	uint64_t suppressed;	/* due, but the driver suppressed them */
	uint64_t held;		/* completions whose notification coalescing held back */
	uint64_t timer;		/* sent when a coalescing deadline fired */
	uint64_t early;		/* sent before the deadline by the stall guard (all reasons) */
	uint64_t early_idle, early_ring, early_bytes; /* ... by reason (vnet_queue_stats) */
	uint64_t stop;		/* held completions signalled because the queue stopped */
	uint64_t dropped, rx_no_buffers, yields, rx_direct;
	uint64_t polls;		/* poll mode: runs that found the ring empty and kept polling */
	uint64_t poll_ns;	/* poll mode: time spent polling (a window open) */
	uint64_t rate_waits, rate_dropped; /* TX waits for tokens, RX drops over the rate */
	uint32_t max_packets, max_usecs;
	const char *set_by; /* "none", "guest", "host" or "adaptive" */
	bool adaptive;	    /* the adaptive controller drives the queue */
	const char *adaptive_state; /* "off", "settled" or "probing" */
	unsigned adaptive_level;    /* its profile level (coal_adaptive.h) */
	uint64_t adaptive_changes, adaptive_windows; /* level changes, windows evaluated */
	struct vnet_lateness_hist lateness;
};

/*
 * The readers run on the main thread and never park the port's worker: every field below is
 * read lock-free (stats.c says how). The port's own settings (stall guard) only change on the
 * main thread.
 */

/* stats_port_read() - fill *out for port p. */
void stats_port_read(struct port *p, struct stats_port *out);

/* stats_queue_read() - fill *out for queue qidx of port p; false if the port has no such queue. */
bool stats_queue_read(struct port *p, unsigned qidx, struct stats_queue *out);

/*
 * stats_queue_lateness() - a copy of queue qidx's fine lateness histogram (for percentiles),
 * taken while the worker may record; false if the port has no such queue.
 */
bool stats_queue_lateness(struct port *p, unsigned qidx, struct lat_hist *out);

#endif

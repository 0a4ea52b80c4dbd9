/* SPDX-License-Identifier: MIT */
/* stats.c - the one read path of port and queue statistics (vnetctl stats, Prometheus metrics). */
#include "control/stats.h"

#include <string.h>

#include "lib/stat_atomic.h"

/**
 * stats_port_read() - one port as the statistics readers see it.
 * @p: the port
 * @out: filled; its strings belong to the port
 *
 * Main thread, without parking the port's worker: lock-free reads (the stall guard setting and
 * the rate limits only change on the main thread).
 */
void stats_port_read(struct port *p, struct stats_port *out)
{
	const struct port_config *cfg = port_config(p);
	bool tap = cfg->backend == PORT_BACKEND_TAP;

	memset(out, 0, sizeof(*out));
	out->name = port_name(p);
	out->index = port_index(p);
	out->backend = tap ? "tap" : cfg->backend == PORT_BACKEND_XDP ? "xdp" : "switch";
	out->tap = tap ? cfg->tap_name : NULL;
	out->socket = cfg->socket_path;
	out->connected = port_connected(p);
	out->connections = port_connections(p);
	out->worker = port_worker(p);
	out->nqueues = vnet_dev_num_queues(port_dev(p));
	out->stall_guard = vnet_dev_stall_guard(port_dev(p))->on;
	out->tx_rate = *vnet_dev_rate(port_dev(p), VNET_RATE_TX);
	out->rx_rate = *vnet_dev_rate(port_dev(p), VNET_RATE_RX);
	out->is_switch = port_switch_counters(p, &out->sw);
	out->has_offload_stats = vnet_dev_offload_stats(port_dev(p), &out->offloads);
	vnet_dev_rss_read(port_dev(p), &out->rss);
	if (port_tap_queues(p) > 1)
		for (unsigned i = 0; i < port_tap_queues(p) && i < TAP_MAX_QUEUES; i++)
			if (port_tap_queue_stats(p, i, &out->tapq[i]))
				out->tap_queues = i + 1;
	if (!tap) {
		out->segment = cfg->segment[0] ? cfg->segment : "default";
		out->vlan = cfg->vlan;
	}
}

/**
 * stats_queue_read() - one queue's state, counters, coalescing parameters and lateness histogram.
 * @p: the port
 * @qidx: the queue's index
 * @out: filled
 *
 * Nothing here stops the data path: the port's worker keeps running while the main thread reads.
 * Counters are single-writer 64-bit values read with relaxed atomic loads (stat_atomic.h: each
 * torn-free, two of them possibly a packet apart); the settings (enabled/started/broken,
 * coalescing values, who set them, the adaptive controller) come from the queue's seqcount view
 * (queue_view.c: one consistent set); the lateness histograms are copied bucket by bucket.
 *
 * Return: true, or false if the port has no such queue.
 */
bool stats_queue_read(struct port *p, unsigned qidx, struct stats_queue *out)
{
	struct vnet_queue_snapshot s;
	const struct vnet_queue_counts *c = &s.counts;
	const struct vnet_queue_view *v = &s.view;
	struct coal_adapt a;

	if (!vnet_dev_queue_snapshot(port_dev(p), qidx, &s))
		return false;
	memset(out, 0, sizeof(*out));
	out->index = qidx;
	out->kind = vnet_queue_kind_name(v->kind);
	out->enabled = v->enabled;
	out->started = v->started;
	out->broken = v->broken;
	out->packets = c->packets;
	out->bytes = c->bytes;
	out->kicks = c->kicks;
	out->notifications = c->notifications;
	out->suppressed = c->suppressed;
	out->held = c->held;
	out->timer = c->timer_notifications;
	out->early_idle = c->early_idle;
	out->early_ring = c->early_ring;
	out->early_bytes = c->early_bytes;
	out->early = out->early_idle + out->early_ring + out->early_bytes;
	out->stop = c->stop_notifications;
	out->dropped = c->dropped;
	out->rx_no_buffers = c->rx_no_buffers;
	out->yields = c->yields;
	out->polls = c->polls;
	out->poll_ns = c->poll_ns;
	out->rx_direct = c->rx_direct;
	out->rate_waits = c->rate_waits;
	out->rate_dropped = c->rate_dropped;
	out->max_packets = v->coal.max_packets;
	out->max_usecs = v->coal.max_usecs;
	out->set_by = coal_setter_name(v->set_by);
	out->adaptive = v->adaptive;
	a = (struct coal_adapt){.on = v->adaptive, .state = v->adapt_state};
	out->adaptive_state = coal_adapt_state_name(&a);
	out->adaptive_level = v->adapt_level;
	out->adaptive_changes = v->adapt_changes;
	out->adaptive_windows = v->adapt_windows;
	out->lateness = s.lateness;
	return true;
}

/**
 * stats_queue_lateness() - a copy of a queue's fine lateness histogram, for percentiles.
 * @p: the port
 * @qidx: the queue's index
 * @out: the copy (lat_hist_snapshot()), taken while the worker may record
 *
 * Main thread, lock-free.
 *
 * Return: true, or false if the port has no such queue.
 */
bool stats_queue_lateness(struct port *p, unsigned qidx, struct lat_hist *out)
{
	return vnet_dev_queue_lateness_fine(port_dev(p), qidx, out);
}

/* stats.c - the one read path of port and queue statistics (vnetctl stats, Prometheus metrics). */
#include "stats.h"

#include <string.h>

void stats_port_read(struct port *p, struct stats_port *out)
{
	const struct port_config *cfg = port_config(p);
	bool tap = cfg->backend == PORT_BACKEND_TAP;

	memset(out, 0, sizeof(*out));
	out->name = port_name(p);
	out->index = port_index(p);
	out->backend = tap ? "tap" : "switch";
	out->tap = tap ? cfg->tap_name : NULL;
	out->socket = cfg->socket_path;
	out->connected = port_connected(p);
	out->connections = port_connections(p);
	out->worker = port_worker(p);
	out->nqueues = vnet_dev_num_queues(port_dev(p));
	out->stall_guard = vnet_dev_stall_guard(port_dev(p))->on;
}

bool stats_queue_read(struct port *p, unsigned qidx, struct stats_queue *out)
{
	const struct vnet_queue *q = vnet_dev_queue(port_dev(p), qidx);
	const struct vnet_queue_stats *st;

	if (!q)
		return false;
	st = &q->stats;
	memset(out, 0, sizeof(*out));
	out->index = qidx;
	out->kind = vnet_queue_kind_name(q->kind);
	out->enabled = q->enabled;
	out->started = q->vq.started;
	out->broken = q->vq.broken;
	out->packets = st->packets;
	out->bytes = st->bytes;
	out->kicks = st->kicks;
	out->notifications = st->notifications;
	out->suppressed = st->suppressed;
	out->held = st->held;
	out->timer = st->timer_notifications;
	out->early_idle = st->early_idle;
	out->early_ring = st->early_ring;
	out->early_bytes = st->early_bytes;
	out->early = st->early_idle + st->early_ring + st->early_bytes;
	out->stop = st->stop_notifications;
	out->dropped = st->dropped;
	out->rx_no_buffers = st->rx_no_buffers;
	out->yields = st->yields;
	out->rx_direct = st->rx_direct;
	out->max_packets = q->coal.params.max_packets;
	out->max_usecs = q->coal.params.max_usecs;
	out->set_by = coal_setter_name(q->coal.setter);
	out->adaptive = q->adapt.on;
	out->adaptive_state = coal_adapt_state_name(&q->adapt);
	out->adaptive_level = q->adapt.level;
	out->adaptive_changes = q->adapt.changes;
	out->adaptive_windows = q->adapt.windows;
	vnet_queue_lateness(q, &out->lateness);
	return true;
}

const struct vnet_queue_stats *stats_queue_raw(struct port *p, unsigned qidx)
{
	const struct vnet_queue *q = vnet_dev_queue(port_dev(p), qidx);

	return q ? &q->stats : NULL;
}

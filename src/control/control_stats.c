/* SPDX-License-Identifier: MIT */
/* control_stats.c - the control socket's counter commands: stats, reset-stats. */
#include "control/control_stats.h"

#include <string.h>

#include "control/control_json.h"
#include "control/stats.h"

/* Counters in this file's long literal lists: ju64() under a short name. */
static inline json_t *ju64(uint64_t v)
{
	return control_json_u64(v);
}

/*
 * lateness_summary() - nearest-rank percentiles of the lateness histogram, in us: the upper
 * bound of the bucket (about 19% wide) holding the rank; max is exact. Every value since the
 * last reset counts, so samples == total.
 */
static json_t *lateness_summary(struct port *p, unsigned index)
{
	struct lat_hist copy, *h = &copy;

	if (!stats_queue_lateness(p, index, h) || h->count == 0)
		return json_pack("{s:i,s:I,s:n,s:n,s:n}", "samples", 0, "total", (json_int_t)0,
				 "p50", "p99", "max");
	return json_pack("{s:o,s:o,s:f,s:f,s:f}", "samples", ju64(h->count), "total",
			 ju64(h->count), "p50", lat_hist_percentile(h, 50) / 1e3,
			 "p99", lat_hist_percentile(h, 99) / 1e3, "max", h->max_ns / 1e3);
}

/* queue_stats() - one queue, read through stats.c like the Prometheus metrics. */
static json_t *queue_stats(struct port *p, unsigned index)
{
	struct stats_queue sq;
	json_t *o;

	if (!stats_queue_read(p, index, &sq))
		return NULL;
	o = json_pack("{s:i,s:s,s:b,s:b,s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:I,s:I,s:s,"
		      "s:o}",
		      "index", (int)index, "kind", sq.kind,
		      "enabled", sq.enabled, "started", sq.started, "broken", sq.broken,
		      "packets", ju64(sq.packets), "bytes", ju64(sq.bytes),
		      "kicks", ju64(sq.kicks), "notifications", ju64(sq.notifications),
		      "suppressed", ju64(sq.suppressed), "held", ju64(sq.held),
		      "timer_notifications", ju64(sq.timer),
		      "dropped", ju64(sq.dropped), "rx_no_buffers", ju64(sq.rx_no_buffers),
		      "max_packets", (json_int_t)sq.max_packets,
		      "max_usecs", (json_int_t)sq.max_usecs,
		      "set_by", sq.set_by,
		      "lateness_us", lateness_summary(p, index));
	if (o) {
		json_object_set_new(o, "yields", ju64(sq.yields));
		json_object_set_new(o, "polls", ju64(sq.polls));
		json_object_set_new(o, "poll_ns", ju64(sq.poll_ns));
		json_object_set_new(o, "rx_direct", ju64(sq.rx_direct));
		json_object_set_new(o, "rate_waits", ju64(sq.rate_waits));
		json_object_set_new(o, "rate_dropped", ju64(sq.rate_dropped));
		json_object_set_new(o, "stop_notifications", ju64(sq.stop));
		json_object_set_new(o, "early_idle", ju64(sq.early_idle));
		json_object_set_new(o, "early_ring", ju64(sq.early_ring));
		json_object_set_new(o, "early_bytes", ju64(sq.early_bytes));
		json_object_set_new(o, "adaptive", json_boolean(sq.adaptive));
		json_object_set_new(o, "adaptive_state", json_string(sq.adaptive_state));
		json_object_set_new(o, "adaptive_level", json_integer(sq.adaptive_level));
		json_object_set_new(o, "adaptive_changes", ju64(sq.adaptive_changes));
		json_object_set_new(o, "adaptive_windows", ju64(sq.adaptive_windows));
	}
	return o;
}

/* port_stats() - one port of "stats": its queues, coalescing modes, switch counters. */
static json_t *port_stats(struct port *p)
{
	json_t *queues = json_array(), *q;
	struct stats_port sp;
	unsigned i;

	stats_port_read(p, &sp);
	for (i = 0; i < sp.nqueues; i++)
		if ((q = queue_stats(p, i)))
			json_array_append_new(queues, q);
	q = json_pack("{s:s,s:I,s:I,s:o}", "name", sp.name, "index", (json_int_t)sp.index,
		      "worker", (json_int_t)sp.worker, "queues", queues);
	control_json_coal_modes(q, port_dev(p));
	if (q)
		json_object_set_new(
		    q, "rate",
		    json_pack("{s:{s:I,s:I},s:{s:I,s:I}}", "tx", "mbit", (json_int_t)sp.tx_rate.mbit,
			      "burst_kb", (json_int_t)sp.tx_rate.burst_kb, "rx", "mbit",
			      (json_int_t)sp.rx_rate.mbit, "burst_kb",
			      (json_int_t)sp.rx_rate.burst_kb));
	if (q)
		json_object_set_new(q, "rss", control_json_rss(port_dev(p)));
	if (q && sp.tap_queues) {
		json_t *tq = json_array();

		for (i = 0; i < sp.tap_queues; i++)
			json_array_append_new(tq, json_pack("{s:i,s:o,s:o}", "queue", (int)i,
							    "rx_packets", ju64(sp.tapq[i].rx_packets),
							    "tx_packets",
							    ju64(sp.tapq[i].tx_packets)));
		json_object_set_new(q, "tap_queues", tq);
	}
	if (q && sp.has_offload_stats)
		json_object_set_new(
		    q, "offloads",
		    json_pack("{s:o,s:o,s:o,s:o}", "bad_header", ju64(sp.offloads.bad_header),
			      "passed", ju64(sp.offloads.passed), "soft_segments",
			      ju64(sp.offloads.soft_segments), "soft_checksums",
			      ju64(sp.offloads.soft_checksums)));
	if (q && sp.is_switch)
		json_object_set_new(
		    q, "switch",
		    json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:b,s:o,s:o,s:o,s:o,s:o,s:o,s:b,s:o}",
			      "macs", ju64(sp.sw.macs),
			      "max_macs", ju64(sp.sw.max_macs),
			      "learn_rate", ju64(sp.sw.learn_rate),
			      "mac_limit_hits", ju64(sp.sw.mac_limit_hits),
			      "learn_rate_hits", ju64(sp.sw.learn_rate_hits),
			      "flow_cache_misses", ju64(sp.sw.cache_misses),
			      "port_security", (int)sp.sw.port_security,
			      "spoofed", ju64(sp.sw.spoofed),
			      "arp_nd_spoofed", ju64(sp.sw.arp_nd_spoofed),
			      "flood_rate", ju64(sp.sw.flood_rate),
			      "storm_dropped", ju64(sp.sw.storm_dropped),
			      "ips", ju64(sp.sw.ips), "ip_spoofed", ju64(sp.sw.ip_spoofed),
			      "access", (int)sp.sw.access,
			      "tagged_dropped", ju64(sp.sw.tagged_dropped)));
	return q;
}

/**
 * control_stats_get() - the "stats" command.
 * @call: the live ports.
 * @req: {"cmd": "stats"}, optionally "port": a name or index.
 *
 * Reads only through stats.c: safe while the workers run (the dispatcher does not park them).
 *
 * Return: {"ok": true, "ports": [...]}, or an error reply; NULL if out of memory.
 */
json_t *control_stats_get(const struct control_call *call, json_t *req)
{
	static const char *const keys[] = {"port", NULL};
	json_t *err = control_json_check_keys(req, "stats", keys);
	json_t *v = json_object_get(req, "port");
	struct port *only = NULL;
	json_t *list;
	unsigned i;

	if (err)
		return err;
	if (v && !(only = control_json_find_port(call->ports, call->nports, v, &err)))
		return err;
	list = json_array();
	for (i = 0; i < call->nports; i++)
		if (!only || call->ports[i] == only)
			json_array_append_new(list, port_stats(call->ports[i]));
	return json_pack("{s:b,s:o}", "ok", 1, "ports", list);
}

/**
 * control_stats_reset() - the "reset-stats" command.
 * @call: the live ports.
 * @req: {"cmd": "reset-stats"}, optionally "port": a name or index.
 *
 * Zeroes counters whose one writer is a worker: the dispatcher runs it with the workers parked.
 *
 * Return: {"ok": true}, or an error reply; NULL if out of memory.
 */
json_t *control_stats_reset(const struct control_call *call, json_t *req)
{
	static const char *const keys[] = {"port", NULL};
	json_t *err = control_json_check_keys(req, "reset-stats", keys);
	json_t *v = json_object_get(req, "port");
	struct port *only = NULL;
	unsigned i, j;

	if (err)
		return err;
	if (v && !(only = control_json_find_port(call->ports, call->nports, v, &err)))
		return err;
	for (i = 0; i < call->nports; i++) {
		struct vnet_dev *dev = port_dev(call->ports[i]);

		if (only && call->ports[i] != only)
			continue;
		for (j = 0; j < vnet_dev_num_queues(dev); j++)
			vnet_dev_queue_reset_stats(dev, j);
	}
	return control_json_ok();
}

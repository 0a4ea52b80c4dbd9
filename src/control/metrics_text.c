/* SPDX-License-Identifier: MIT */
/* metrics_text.c - Prometheus text exposition (format 0.0.4) of port and queue statistics. */
#include "control/metrics_text.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

/* A per-queue (or per switch port) counter or gauge: its name, type, help and its field. */
struct queue_family {
	const char *name, *type, *help;
	size_t offset; /* of a uint64_t in struct stats_queue (struct switch_port_counters) */
};

#define QCOUNTER(n, field, h)                                                                      \
	{                                                                                          \
		"vnetd_queue_" n "_total", "counter", h, offsetof(struct stats_queue, field)       \
	}

static const struct queue_family queue_counters[] = {
    QCOUNTER("packets", packets,
	     "Packets the queue carried (RX: delivered to the guest, TX: sent by it)."),
    QCOUNTER("bytes", bytes, "Bytes of those packets."),
    QCOUNTER("kicks", kicks, "Notifications (kicks) from the driver."),
    QCOUNTER("notifications", notifications,
	     "Used-buffer notifications (interrupts) sent to the guest."),
    QCOUNTER("notifications_suppressed", suppressed,
	     "Notifications that were due but that the driver suppressed (flags or EVENT_IDX)."),
    QCOUNTER("completions_held", held, "Completions whose notification coalescing held back."),
    QCOUNTER("notifications_timer", timer, "Notifications sent when a coalescing deadline fired."),
    QCOUNTER("notifications_early", early,
	     "Notifications sent before the coalescing limits to keep the driver from stalling."),
    QCOUNTER("notifications_early_idle", early_idle,
	     "Early notifications: the driver went idle waiting (TX posted nothing; RX: its TX "
	     "stopped)."),
    QCOUNTER("notifications_early_ring", early_ring,
	     "Early notifications: RX buffers or TX descriptors nearly used up."),
    QCOUNTER("notifications_early_bytes", early_bytes,
	     "Early notifications: the bytes held reached the stall guard's threshold."),
    QCOUNTER("coalesce_adaptive_changes", adaptive_changes,
	     "Level changes of the adaptive coalescing controller."),
    QCOUNTER("notifications_stop", stop,
	     "Notifications for held completions sent because the queue stopped."),
    QCOUNTER("drops", dropped,
	     "Packets dropped (too big, broken chain, bad header, backend error)."),
    QCOUNTER("rx_no_buffers", rx_no_buffers, "Times a received packet waited for guest buffers."),
    QCOUNTER("yields", yields, "Runs that stopped at their budget with work left."),
    QCOUNTER("polls", polls, "Poll mode: runs that found the ring empty and kept polling."),
    QCOUNTER("rx_direct_packets", rx_direct,
	     "Packets the backend read straight into guest buffers."),
    QCOUNTER("rate_waits", rate_waits,
	     "TX: times the queue stopped taking packets until the port's TX rate refilled."),
    QCOUNTER("rate_drops", rate_dropped,
	     "RX: packets dropped because they were over the port's RX rate."),
};

static void family(struct textbuf *tb, const char *name, const char *type, const char *help)
{
	tb_printf(tb, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* label_value() - a label value with \, " and newline escaped as the format asks. */
static void label_value(struct textbuf *tb, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\')
			tb_puts(tb, "\\\\");
		else if (*s == '"')
			tb_puts(tb, "\\\"");
		else if (*s == '\n')
			tb_puts(tb, "\\n");
		else
			tb_printf(tb, "%c", *s);
	}
}

static void port_labels(struct textbuf *tb, const struct stats_port *p)
{
	tb_puts(tb, "{port=\"");
	label_value(tb, p->name);
	tb_puts(tb, "\"");
}

/* A switch port's segment, and VLAN if it is an access port: `,segment="NAME"[,vlan="N"]`. */
static void segment_labels(struct textbuf *tb, const struct stats_port *p)
{
	tb_puts(tb, ",segment=\"");
	label_value(tb, p->segment ? p->segment : "");
	tb_puts(tb, "\"");
	if (p->vlan)
		tb_printf(tb, ",vlan=\"%u\"", p->vlan);
}

static void queue_labels(struct textbuf *tb, const struct stats_port *p,
			 const struct stats_queue *q)
{
	port_labels(tb, p);
	tb_printf(tb, ",queue=\"%u\",kind=\"%s\"", q->index, q->kind);
}

/* seconds() - microseconds as a decimal number of seconds without trailing zeros. */
static void seconds(struct textbuf *tb, uint64_t us)
{
	char frac[8];
	int n;

	snprintf(frac, sizeof(frac), "%06u", (unsigned)(us % 1000000u));
	for (n = 6; n > 0 && frac[n - 1] == '0'; n--)
		frac[n - 1] = '\0';
	tb_printf(tb, "%" PRIu64 "%s%s", us / 1000000u, n ? "." : "", frac);
}

static void port_families(struct textbuf *tb, const struct metrics_port_view *v, unsigned n)
{
	unsigned i;

	family(tb, "vnetd_port_info", "gauge",
	       "A port: its backend, tap, vhost-user socket and switch segment (always 1).");
	for (i = 0; i < n; i++) {
		tb_puts(tb, "vnetd_port_info");
		port_labels(tb, &v[i].port);
		tb_printf(tb, ",backend=\"%s\",tap=\"", v[i].port.backend);
		label_value(tb, v[i].port.tap ? v[i].port.tap : "");
		tb_puts(tb, "\",socket=\"");
		label_value(tb, v[i].port.socket);
		tb_puts(tb, "\"");
		segment_labels(tb, &v[i].port);
		tb_puts(tb, "} 1\n");
	}
	family(tb, "vnetd_port_frontend_connected", "gauge",
	       "1 while a frontend (VMM) is connected.");
	for (i = 0; i < n; i++) {
		tb_printf(tb, "vnetd_port_frontend_connected");
		port_labels(tb, &v[i].port);
		tb_printf(tb, "} %d\n", v[i].port.connected ? 1 : 0);
	}
	family(tb, "vnetd_port_connections_total", "counter", "Frontends the port accepted.");
	for (i = 0; i < n; i++) {
		tb_printf(tb, "vnetd_port_connections_total");
		port_labels(tb, &v[i].port);
		tb_printf(tb, "} %" PRIu64 "\n", v[i].port.connections);
	}
	family(tb, "vnetd_port_stall_guard", "gauge",
	       "1 while the stall guard may notify before the coalescing limits.");
	for (i = 0; i < n; i++) {
		tb_printf(tb, "vnetd_port_stall_guard");
		port_labels(tb, &v[i].port);
		tb_printf(tb, "} %d\n", v[i].port.stall_guard ? 1 : 0);
	}
	family(tb, "vnetd_port_rate_limit_mbit", "gauge",
	       "The port's rate limit in Mbit/s by direction (tx: the guest sends; 0: none).");
	for (i = 0; i < n; i++) {
		for (int d = 0; d < 2; d++) {
			tb_printf(tb, "vnetd_port_rate_limit_mbit");
			port_labels(tb, &v[i].port);
			tb_printf(tb, ",dir=\"%s\"} %u\n", d ? "rx" : "tx",
				  d ? v[i].port.rx_rate.mbit : v[i].port.tx_rate.mbit);
		}
	}
	family(tb, "vnetd_port_worker", "gauge",
	       "Worker thread serving the port (0: the one event loop).");
	for (i = 0; i < n; i++) {
		tb_printf(tb, "vnetd_port_worker");
		port_labels(tb, &v[i].port);
		tb_printf(tb, "} %u\n", v[i].port.worker);
	}
}

/* queue_gauge() - one gauge family over every queue; pick() gives the value as text. */
static void queue_family(struct textbuf *tb, const struct metrics_port_view *v, unsigned n,
			 const char *name, const char *type, const char *help,
			 void (*pick)(struct textbuf *tb, const struct stats_queue *q))
{
	family(tb, name, type, help);
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < v[i].port.nqueues; j++) {
			tb_puts(tb, name);
			queue_labels(tb, &v[i].port, &v[i].queues[j]);
			tb_puts(tb, "} ");
			pick(tb, &v[i].queues[j]);
			tb_puts(tb, "\n");
		}
}

/* A gauge of every queue: pick prints its value. */
static void queue_gauge(struct textbuf *tb, const struct metrics_port_view *v, unsigned n,
			const char *name, const char *help,
			void (*pick)(struct textbuf *tb, const struct stats_queue *q))
{
	queue_family(tb, v, n, name, "gauge", help, pick);
}

/* Poll mode's time, in seconds (Prometheus' base unit). */
static void pick_poll_seconds(struct textbuf *tb, const struct stats_queue *q)
{
	tb_printf(tb, "%.9f", (double)q->poll_ns / 1e9);
}

static void pick_enabled(struct textbuf *tb, const struct stats_queue *q)
{
	tb_puts(tb, q->enabled ? "1" : "0");
}

static void pick_started(struct textbuf *tb, const struct stats_queue *q)
{
	tb_puts(tb, q->started ? "1" : "0");
}

static void pick_broken(struct textbuf *tb, const struct stats_queue *q)
{
	tb_puts(tb, q->broken ? "1" : "0");
}

static void pick_max_packets(struct textbuf *tb, const struct stats_queue *q)
{
	tb_printf(tb, "%" PRIu32, q->max_packets);
}

static void pick_max_delay(struct textbuf *tb, const struct stats_queue *q)
{
	seconds(tb, q->max_usecs);
}

static void pick_adaptive(struct textbuf *tb, const struct stats_queue *q)
{
	tb_puts(tb, q->adaptive ? "1" : "0");
}

static void pick_adaptive_level(struct textbuf *tb, const struct stats_queue *q)
{
	tb_printf(tb, "%u", q->adaptive_level);
}

static void lateness_histogram(struct textbuf *tb, const struct metrics_port_view *v, unsigned n)
{
	static const char name[] = "vnetd_queue_notification_lateness_seconds";

	family(tb, name, "histogram",
	       "How late coalescing deadlines fired (a notification sent after its deadline).");
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < v[i].port.nqueues; j++) {
			const struct stats_queue *q = &v[i].queues[j];
			const struct vnet_lateness_hist *h = &q->lateness;

			for (unsigned b = 0; b < VNET_LATENESS_BUCKETS; b++) {
				tb_printf(tb, "%s_bucket", name);
				queue_labels(tb, &v[i].port, q);
				tb_puts(tb, ",le=\"");
				seconds(tb, vnet_lateness_bounds_us[b]);
				tb_printf(tb, "\"} %" PRIu64 "\n", h->cumulative[b]);
			}
			tb_printf(tb, "%s_bucket", name);
			queue_labels(tb, &v[i].port, q);
			tb_printf(tb, ",le=\"+Inf\"} %" PRIu64 "\n", h->count);
			tb_printf(tb, "%s_sum", name);
			queue_labels(tb, &v[i].port, q);
			tb_printf(tb, "} %" PRIu64 ".%09" PRIu64 "\n", h->sum_ns / 1000000000u,
				  h->sum_ns % 1000000000u);
			tb_printf(tb, "%s_count", name);
			queue_labels(tb, &v[i].port, q);
			tb_printf(tb, "} %" PRIu64 "\n", h->count);
		}
}

/* A switch port's counter or gauge (struct switch_port_counters), for switch ports only. */
#define SWFAMILY(n, type, field, h)                                                                \
	{                                                                                          \
		"vnetd_switch_" n, type, h, offsetof(struct switch_port_counters, field)           \
	}

static const struct queue_family switch_families[] = {
    SWFAMILY("macs", "gauge", macs, "MACs the switch's table holds behind the port."),
    SWFAMILY("max_macs", "gauge", max_macs, "max-macs: the most MACs the port may hold."),
    SWFAMILY("learn_rate", "gauge", learn_rate,
	     "learn-rate: new MACs a second the port may teach (0: no limit)."),
    SWFAMILY("mac_limit_total", "counter", mac_limit_hits,
	     "New source MACs that found the port at max-macs (not learnt, or only in place of "
	     "one of its own; a MAC sending on counts again at most once a second)."),
    SWFAMILY("learn_rate_limited_total", "counter", learn_rate_hits,
	     "New source MACs not learnt: the port was over its learn-rate (a MAC sending on "
	     "counts again when its next token is due)."),
    SWFAMILY("spoofed_total", "counter", spoofed,
	     "Frames dropped by port security: a source MAC the port may not send from."),
    SWFAMILY("arp_nd_spoofed_total", "counter", arp_nd_spoofed,
	     "ARP and ND frames dropped by port security: an ARP sender MAC or an ND link-layer "
	     "address option the port may not send from."),
    SWFAMILY("storm_dropped_total", "counter", storm_dropped,
	     "Floods (broadcast, multicast, unknown unicast) dropped by storm control: over the "
	     "port's flood-rate."),
    SWFAMILY("ip_spoofed_total", "counter", ip_spoofed,
	     "Frames dropped by IP anti-spoofing: an IP source, ARP sender or neighbour "
	     "advertisement target outside the port's ips= list."),
    SWFAMILY("vlan_tagged_dropped_total", "counter", tagged_dropped,
	     "VLAN-tagged frames (802.1Q, 802.1ad) the guest of an access port (vlan=) sent: "
	     "dropped, no double tagging."),
    SWFAMILY("offload_bad_header_total", "counter", bad_offload_hdr,
	     "Frames the port's guest sent with a virtio-net offload header their own headers "
	     "contradict (checksum position, GSO type, segment size, L3/L4): dropped."),
    SWFAMILY("offload_passed_total", "counter", offload_passed,
	     "Frames asking for an offload (TCP segmentation, checksum) the port's guest got "
	     "with their header: it took the offload."),
    SWFAMILY("offload_soft_segments_total", "counter", soft_segments,
	     "Segments the switch made in software for the port's guest: it lacks the "
	     "segmentation offload a frame asked for."),
    SWFAMILY("offload_soft_checksums_total", "counter", soft_csums,
	     "Checksums the switch completed in software for the port's guest: it lacks "
	     "GUEST_CSUM."),
};

static void switch_port_families(struct textbuf *tb, const struct metrics_port_view *v,
				 unsigned n)
{
	for (size_t f = 0; f < sizeof(switch_families) / sizeof(switch_families[0]); f++) {
		const struct queue_family *sf = &switch_families[f];

		family(tb, sf->name, sf->type, sf->help);
		for (unsigned i = 0; i < n; i++) {
			uint64_t value;

			if (!v[i].port.is_switch)
				continue;
			memcpy(&value, (const char *)&v[i].port.sw + sf->offset, sizeof(value));
			tb_puts(tb, sf->name);
			port_labels(tb, &v[i].port);
			segment_labels(tb, &v[i].port);
			tb_printf(tb, "} %" PRIu64 "\n", value);
		}
	}
}

/* A multi-queue tap's packets per queue fd (queue i: queue pair i's), by direction. */
static void tap_queue_families(struct textbuf *tb, const struct metrics_port_view *v, unsigned n)
{
	family(tb, "vnetd_tap_queue_packets_total", "counter",
	       "Multi-queue tap (queues=N): packets read from (dir rx, to the guest) and written to "
	       "(dir tx, from the guest) each queue's tap fd.");
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < v[i].port.tap_queues; j++)
			for (int d = 0; d < 2; d++) {
				tb_puts(tb, "vnetd_tap_queue_packets_total");
				port_labels(tb, &v[i].port);
				tb_printf(tb, ",queue=\"%u\",dir=\"%s\"} %" PRIu64 "\n", j,
					  d ? "tx" : "rx",
					  d ? v[i].port.tapq[j].tx_packets
					    : v[i].port.tapq[j].rx_packets);
			}
}

/* RSS (VIRTIO_NET_F_RSS negotiated): whether it steers, and the table's entries per RX queue. */
static void rss_families(struct textbuf *tb, const struct metrics_port_view *v, unsigned n)
{
	family(tb, "vnetd_port_rss_steering", "gauge",
	       "Ports whose guest negotiated RSS: 1 while its indirection table picks the RX queue.");
	for (unsigned i = 0; i < n; i++) {
		if (!v[i].port.rss.rss)
			continue;
		tb_puts(tb, "vnetd_port_rss_steering");
		port_labels(tb, &v[i].port);
		tb_printf(tb, "} %d\n", v[i].port.rss.steering ? 1 : 0);
	}
	family(tb, "vnetd_port_rss_table_entries", "gauge",
	       "While RSS steers: entries of the indirection table that pick RX queue pair "
	       "`queue` (its weight).");
	for (unsigned i = 0; i < n; i++) {
		const struct rss_config *c = &v[i].port.rss.cfg;
		unsigned count[VNET_MAX_QUEUE_PAIRS] = {0};

		if (!v[i].port.rss.steering)
			continue;
		for (unsigned e = 0; e < c->table_len && e < RSS_TABLE_MAX; e++)
			if (c->table[e] < VNET_MAX_QUEUE_PAIRS)
				count[c->table[e]]++;
		for (unsigned q = 0; q < VNET_MAX_QUEUE_PAIRS; q++) {
			if (!count[q])
				continue;
			tb_puts(tb, "vnetd_port_rss_table_entries");
			port_labels(tb, &v[i].port);
			tb_printf(tb, ",queue=\"%u\"} %u\n", q, count[q]);
		}
	}
}

/**
 * metrics_format() - append every vnetd metric family (HELP, TYPE, samples) for these ports.
 * @tb: the text buffer
 * @v: the ports and their queues, as read by stats.c
 * @n: number of ports
 *
 * Pure (formats what it is given).
 */
void metrics_format(struct textbuf *tb, const struct metrics_port_view *v, unsigned n)
{
	port_families(tb, v, n);
	switch_port_families(tb, v, n);
	tap_queue_families(tb, v, n);
	rss_families(tb, v, n);
	for (size_t f = 0; f < sizeof(queue_counters) / sizeof(queue_counters[0]); f++) {
		const struct queue_family *qf = &queue_counters[f];

		family(tb, qf->name, qf->type, qf->help);
		for (unsigned i = 0; i < n; i++)
			for (unsigned j = 0; j < v[i].port.nqueues; j++) {
				const struct stats_queue *q = &v[i].queues[j];
				uint64_t value;

				memcpy(&value, (const char *)q + qf->offset, sizeof(value));
				tb_puts(tb, qf->name);
				queue_labels(tb, &v[i].port, q);
				tb_printf(tb, "} %" PRIu64 "\n", value);
			}
	}
	queue_family(tb, v, n, "vnetd_queue_poll_seconds_total", "counter",
		     "Poll mode: time the queue spent polling its ring (a window open).",
		     pick_poll_seconds);
	queue_gauge(tb, v, n, "vnetd_queue_enabled", "1 while the driver has the queue enabled.",
		    pick_enabled);
	queue_gauge(tb, v, n, "vnetd_queue_started",
		    "1 while the queue's rings are set up and running.", pick_started);
	queue_gauge(tb, v, n, "vnetd_queue_broken",
		    "1 after the driver broke the ring format (the queue stopped until a reset).",
		    pick_broken);
	queue_gauge(tb, v, n, "vnetd_queue_coalesce_max_packets",
		    "Coalescing: notify once this many packets are pending (0: every packet).",
		    pick_max_packets);
	queue_gauge(
	    tb, v, n, "vnetd_queue_coalesce_max_delay_seconds",
	    "Coalescing: notify at most this long after the first pending packet (0: at once).",
	    pick_max_delay);
	queue_gauge(tb, v, n, "vnetd_queue_coalesce_adaptive",
		    "1 while vnetd's adaptive coalescing chooses the queue's parameters.",
		    pick_adaptive);
	queue_gauge(tb, v, n, "vnetd_queue_coalesce_adaptive_level",
		    "Profile level of the adaptive controller (0: notify every packet).",
		    pick_adaptive_level);
	family(tb, "vnetd_queue_coalesce_info", "gauge",
	       "Who set the queue's coalescing parameters: none, guest (ethtool -C), host or "
	       "adaptive (always 1).");
	for (unsigned i = 0; i < n; i++)
		for (unsigned j = 0; j < v[i].port.nqueues; j++) {
			tb_puts(tb, "vnetd_queue_coalesce_info");
			queue_labels(tb, &v[i].port, &v[i].queues[j]);
			tb_printf(tb, ",set_by=\"%s\"} 1\n", v[i].queues[j].set_by);
		}
	lateness_histogram(tb, v, n);
}

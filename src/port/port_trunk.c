/* SPDX-License-Identifier: MIT */
/* port_trunk.c - a tap port as a segment's trunk: 802.1Q tagging and untagging at the boundary. */
#include "port/port_trunk.h"
#include "port/port.h" /* the folder's API this file defines part of */

#include <endian.h>
#include <stdio.h>
#include <string.h>

#include "lib/log.h"
#include "port/port_internal.h"
#include "lib/stat_atomic.h"
#include "lib/virtio_net_defs.h"
#include "backend/switch/switch.h"
#include "backend/tap/tap.h"

/*
 * A trunk port (uplink=NAME,trunk=N+M) has one switch uplink in each VLAN's switch (the
 * segment (NAME, N) of port_table.c). A frame the switch sends to VLAN N's uplink leaves on
 * the tap with an 802.1Q tag N (one writev); a frame read from the tap with an 802.1Q tag of
 * a trunk VLAN goes, untagged, into that VLAN's switch. Other tagged frames (another VLAN,
 * 802.1ad, 0x9100, priority tags) are dropped and counted; untagged ones stay the port's
 * guest's, as on any tap port. Everything runs on the port's worker's thread.
 *
 * Offloads cross the trunk as the tap's virtio-net header: a frame that asks for one (a TCP
 * segment of up to 64 KB, a checksum left to the receiver) keeps its header both ways, its
 * csum_start and hdr_len moved by the 4 bytes of the tag inserted or taken out.
 */

#define VLAN_TAG 4

/* hdr's offsets moved by `by` bytes (a tag inserted: 4, taken out: -4); false if they cannot be. */
static bool hdr_shift(struct virtio_net_hdr_v1 *h, int by)
{
	int cs = le16toh(h->csum_start), hl = le16toh(h->hdr_len);

	if ((h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM) && (cs + by < 14 || cs + by > 0xffff))
		return false; /* inside the Ethernet header, or past what the field holds */
	if (hl + by > 0xffff)
		return false;
	if (h->flags & VIRTIO_NET_HDR_F_NEEDS_CSUM)
		h->csum_start = htole16((uint16_t)(cs + by));
	if (hl)
		h->hdr_len = htole16((uint16_t)(hl + by > 0 ? hl + by : 0));
	return true;
}

/* A frame the VLAN's switch sent to the uplink: out on the tap, tagged (switch_uplink_ops). */
static void uplink_deliver(void *ctx, const struct virtio_net_hdr_v1 *hdr, const struct iovec *iov,
			   unsigned iovcnt, size_t off, size_t len)
{
	struct port_uplink *u = ctx;
	struct virtio_net_hdr_v1 h = {0};

	if (hdr) {
		h = *hdr;
		if (!hdr_shift(&h, VLAN_TAG)) { /* offsets past 64 KB: nothing a guest sends */
			stat_inc(&u->p->trunk_dropped);
			return;
		}
	}
	if (tap_backend_send_tagged(u->p->be, u->vid, &h, iov, iovcnt, off, len) < 0)
		stat_inc(&u->p->trunk_dropped);
}

static const struct switch_uplink_ops uplink_ops = {.deliver = uplink_deliver};

/*
 * A tagged frame read from the tap (tap_trunk_ops), with the tap's header: untagged into its
 * VLAN's switch, or dropped.
 */
static void trunk_rx(void *ctx, const struct virtio_net_hdr_v1 *hdr, uint8_t *frame, size_t len)
{
	struct port *p = ctx;
	unsigned type = (unsigned)frame[12] << 8 | frame[13];
	unsigned vid = ((unsigned)frame[14] << 8 | frame[15]) & 0x0fff;
	struct virtio_net_hdr_v1 h = *hdr;

	if (type == 0x8100 && len >= 18) /* untagged, a whole Ethernet header */
		for (unsigned i = 0; i < p->n_uplinks; i++)
			if (p->uplinks[i].vid == vid) {
				if (!hdr_shift(&h, -VLAN_TAG))
					break; /* a checksum in the tag: nothing a kernel sends */
				memmove(frame + 4, frame, 12); /* the MACs over the tag */
				switch_uplink_send(p->uplinks[i].be, &h, frame + 4, len - 4);
				return;
			}
	stat_inc(&p->trunk_dropped);
	log_guest("%s: dropped a frame from the trunk tap with ethertype 0x%04x, VLAN %u: not one "
		  "of its trunk= VLANs",
		  p->name, type, vid);
}

static const struct tap_trunk_ops trunk_ops = {.rx = trunk_rx};

/**
 * port_trunk_attach() - make a tap port the trunk of its VLANs' switches.
 * @p: the port, its tap open (p->be), with cfg.n_trunk VLANs
 * @sw: the switch of each, in cfg.trunk's order
 *
 * Main thread, the port's worker parked or not started.
 *
 * Return: 0, or -1 (logged; port_trunk_detach() undoes what was done).
 */
int port_trunk_attach(struct port *p, struct vnet_switch *const *sw)
{
	for (unsigned i = 0; i < p->cfg.n_trunk; i++) {
		struct port_uplink *u = &p->uplinks[i];
		char name[32];

		snprintf(name, sizeof(name), "%s.vlan%u", p->name, p->cfg.trunk[i]);
		u->p = p;
		u->vid = p->cfg.trunk[i];
		u->be = switch_attach_uplink(sw[i], name, p->worker, &uplink_ops, u);
		if (!u->be)
			return -1;
		p->n_uplinks++;
	}
	tap_backend_set_trunk(p->be, &trunk_ops, p);
	log_info("%s: trunk of segment %s, %u VLAN(s)", p->name,
		 p->cfg.uplink[0] ? p->cfg.uplink : "default", p->n_uplinks);
	return 0;
}

/**
 * port_trunk_detach() - take the port's uplinks out of their switches.
 * @p: the port (any, a trunk or not)
 *
 * Before its tap closes. Main thread, the port's worker parked or stopped.
 */
void port_trunk_detach(struct port *p)
{
	for (unsigned i = 0; i < p->n_uplinks; i++)
		switch_detach(p->uplinks[i].be);
	p->n_uplinks = 0;
}

/**
 * port_trunk_dropped() - frames the trunk dropped: tagged ones of no trunk VLAN read from the
 * tap, and tagged sends the tap refused.
 * @p: the port
 *
 * Any thread (torn-free).
 *
 * Return: the count.
 */
uint64_t port_trunk_dropped(const struct port *p)
{
	return stat_read(&p->trunk_dropped);
}

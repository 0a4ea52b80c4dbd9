/* SPDX-License-Identifier: MIT */
/* switch.c - switch backend data path: admit, forward, the transmit variants and the ops tables. */
#include "backend/switch/switch.h"

#include <assert.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "mem/mem.h"
#include "lib/iov.h"
#include "lib/log.h"
#include "lib/stat_atomic.h"
#include "backend/switch/switch_fdb.h"
#include "backend/switch/switch_internal.h"
#include "lib/virtio_net_defs.h"
#include "dev/dev.h"

/*
 * An L2 learning switch forwarding frames between vnetd ports: what runs for every frame, on
 * the workers' threads: each frame admitted (its checks, learning its source), looked up and
 * forwarded or flooded, by one transmit variant per ops table. Its helpers: the flow cache
 * (switch_flow.c), each port's queue for its guest (switch_queue.c), frames for ports of other
 * workers (switch_xworker.c). The switch and its ports themselves (create, attach, detach,
 * counters) are switch_port.c's; the slow parts of the port policies (drops and their log
 * lines, storm control's refill, the ARP/ND, ips= and access-port checks) switch_policy.c's;
 * their state is in switch_internal.h.
 */

_Static_assert(SW_HEAD_MAX >= SWITCH_IPS_HDR, "ips= reads the checked copy of a frame's head");

/* ---- Port security ------------------------------------------------------------------------ */

/* Whether two MACs are equal: two loads and compares each, never a call. */
static inline __attribute__((always_inline)) bool mac_eq(const uint8_t *a, const uint8_t *b)
{
	uint32_t a4, b4;
	uint16_t a2, b2;

	memcpy(&a4, a, 4);
	memcpy(&b4, b, 4);
	memcpy(&a2, a + 4, 2);
	memcpy(&b2, b + 4, 2);
	return ((a4 ^ b4) | (uint32_t)(a2 ^ b2)) == 0;
}

/* The frame's source is one of p's allowed-macs= (inlined: bridged guests take it a frame). */
static inline __attribute__((always_inline)) bool psec_allowed(const struct switch_port *p,
							       const uint8_t *mac)
{
	for (unsigned i = 0; i < p->n_allowed; i++)
		if (mac_eq(p->allowed[i], mac))
			return true;
	return false;
}

/* IPv4's EtherType, 0x0800, as its two bytes read into a uint16_t in memory order. */
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define SW_ET_IPV4 0x0008
#else
#define SW_ET_IPV4 0x0800
#endif

/* ---- Storm control ------------------------------------------------------------------------ */

/*
 * p has a flood-rate: take one frame's token from its bucket. False: over the rate, the frame
 * is dropped and counted (logged at most once a second). Inline: while the worker's clock
 * stands still, a drop is a compare, the counter and another compare; no clock read.
 */
static inline __attribute__((always_inline)) bool storm_take(struct switch_port *p, uint64_t now)
{
	if (__builtin_expect(now != p->flood_ns, 0))
		sw_storm_refill(p, now);
	if (p->flood_credit < SW_NS) { /* no hint: in a storm, the common case */
		stat_inc(&p->storm_dropped);
		if (now >= p->storm_log_ns)
			sw_storm_log(p, now);
		return false;
	}
	p->flood_credit -= SW_NS;
	return true;
}

/* ---- Admission and forwarding on the sender's worker -------------------------------------- */

/*
 * What every frame of src goes through before it is forwarded: its length, port security, storm
 * control for broadcasts, the access port's tag check, ips=, then learning its source. Each
 * check reads src's copy of the frame's first bytes (sw_head()), taken once from the guest:
 * the frame's MACs and EtherType (src->head), grown by the checks that read further
 * (sw_head_need()); the switch forwards that copy (sw_fwd_iov()). hdr (NULL: no offload, as
 * for every frame of a burst): the device's checked copy of the guest's header, which asks for
 * an offload: checked against the frame's own headers, read into the same copy
 * (sw_offload_admit()). False: dropped (counted). `xw`, `storm`, `ips`: as transmit()'s.
 */
static inline __attribute__((always_inline)) bool
sw_admit(struct switch_port *src, const struct virtio_net_hdr_v1 *hdr, const struct iovec *iov,
	 unsigned iovcnt, size_t off, size_t len, uint64_t now, const bool xw, const bool storm,
	 const bool ips)
{
	const uint8_t *dst_mac = src->head, *src_mac = src->head + SW_ETH_ALEN;

	if (len < SW_MIN_FRAME || len > SW_MAX_FRAME) {
		src->dropped++;
		log_guest("switch %s: dropped a frame of %zu bytes (%d to %d)", src->name, len,
			  SW_MIN_FRAME, SW_MAX_FRAME);
		return false;
	}
	/*
	 * The MAC addresses and EtherType, into the port: what the checks read and what leaves;
	 * the rest of the frame is copied once, later. The guest's header is the device's checked
	 * copy (tx_hdr_allowed(): offloads the guest negotiated, DATA_VALID cleared).
	 */
	src->head_len = SW_MIN_FRAME;
	iov_copy_from(iov, iovcnt, off, src->head, SW_MIN_FRAME);

	/*
	 * Port security: in the common case one compare against the port's MAC, and a look at the
	 * EtherType (ARP and ND carry MACs of their own).
	 */
	if (src->psec) {
		uint16_t et; /* the EtherType as it is in the frame: IPv4 is one compare */

		if (__builtin_expect(!mac_eq(src_mac, src->psec_mac), 0) &&
		    !psec_allowed(src, src_mac)) {
			sw_psec_drop(src, src_mac);
			return false;
		}
		memcpy(&et, src->head + 2 * SW_ETH_ALEN, sizeof(et));
		if (__builtin_expect(et != SW_ET_IPV4, 0) && !sw_lladdr_pass(src, iov, iovcnt, off, len))
			return false;
	}
	/*
	 * Storm control: a broadcast or multicast over the rate is dropped before any other work
	 * (the tag and IP checks too: in a storm, every instruction of a drop counts).
	 */
	if (storm && src->flood_rate && (dst_mac[0] & 1) && !storm_take(src, now))
		return false;
	if (storm && src->access && sw_access_tagged(src))
		return false;
	if (ips && !sw_ips_pass(src, iov, iovcnt, off, len))
		return false;
	if (__builtin_expect(hdr != NULL, 0) && !sw_offload_admit(src, hdr, iov, iovcnt, off, len))
		return false;
	sw_learn_cached(src->sw, src, src_mac, now, xw);
	guest_race(GUEST_RACE_TX_ADMITTED);
	return true;
}

/* sw_fwd_iov()'s general case: a longer checked copy, or a frame in several pieces. */
static __attribute__((noinline)) bool sw_fwd_iov_slow(struct switch_port *src,
						      const struct iovec *iov, unsigned iovcnt,
						      size_t off, size_t len,
						      struct iovec v[SW_FWD_IOV], struct sw_fwd *fw)
{
	const struct iovec *in = iov;
	size_t at = off + src->head_len, rest = len - src->head_len;
	unsigned n = 1, cnt = iovcnt;

	v[0] = (struct iovec){.iov_base = (void *)sw_head(src), .iov_len = src->head_len};
	fw->iov = v;
	while (cnt && at >= in[0].iov_len) {
		at -= in[0].iov_len;
		in++;
		cnt--;
	}
	for (unsigned i = 0; rest && i < cnt && n < SW_FWD_IOV; i++, at = 0) {
		size_t take = in[i].iov_len - at < rest ? in[i].iov_len - at : rest;

		v[n++] = (struct iovec){.iov_base = (uint8_t *)in[i].iov_base + at, .iov_len = take};
		rest -= take;
	}
	if (!rest || n < SW_FWD_IOV) { /* all of it (the chain may not hold more: as it is) */
		fw->iovcnt = n;
		return true;
	}
	/* More pieces than SW_FWD_IOV (no Linux guest's): the whole frame into the port's copy. */
	if (!sw_head_need(src, iov, iovcnt, off, len, len))
		return false;
	v[0] = (struct iovec){.iov_base = (void *)sw_head(src), .iov_len = src->head_len};
	fw->iovcnt = 1;
	return true;
}

/*
 * The frame (len bytes at byte off of iov) as every path forwards it, into fw (struct sw_fwd,
 * v its pieces if need be): src's checked copy of its first bytes (sw_head(), what the checks
 * read), then the rest of it in place in the guest's buffers, which each receiver, queue or
 * backend copies once. False when the frame cannot be forwarded (dropped: no memory for a copy).
 */
static inline __attribute__((always_inline)) bool
sw_fwd_iov(struct switch_port *src, const struct iovec *iov, unsigned iovcnt, size_t off,
	   size_t len, struct iovec v[SW_FWD_IOV], struct sw_fwd *fw)
{
	const size_t h = src->head_len;

	fw->len = len;
	/* Nearly always: the frame in the chain's first piece, ... */
	if (iovcnt && off + len <= iov[0].iov_len) {
		const uint8_t *frame = (const uint8_t *)iov[0].iov_base + off;

		/* ... its Ethernet header checked: a flat frame */
		if (h == VNET_FRAME_HEAD) {
			fw->flat = frame;
			fw->head = src->head;
			return true;
		}
		/* ... or a longer head (ARP, ND, IPv6 on a port-secured port, ips=): two pieces */
		if (h < len && h <= SW_HEAD_MAX) {
			v[0] = (struct iovec){.iov_base = src->head, .iov_len = h};
			v[1] = (struct iovec){.iov_base = (void *)(frame + h), .iov_len = len - h};
			*fw = (struct sw_fwd){.iov = v, .iovcnt = 2, .len = len};
			return true;
		}
	}
	fw->flat = NULL;
	return sw_fwd_iov_slow(src, iov, iovcnt, off, len, v, fw);
}

/*
 * An admitted frame for a known port dst: delivered (on this worker), or queued for dst's
 * worker. Behind the sender itself: filtered, as on any bridge. -EAGAIN: the cross-worker ring
 * is full, the sender sends it again on resume.
 */
static inline __attribute__((always_inline)) int
sw_unicast(struct switch_port *src, struct switch_port *dst, const struct sw_fwd *fw,
	   const bool xw, const bool storm)
{
	/* The FDB's port of the sender: a lane's frames are its home's (no lanes on one worker). */
	const struct switch_port *self = xw ? src->home : src;

	if (dst == self)
		return 0;
	src->forwarded++;
	if (xw && __builtin_expect(dst->npairs != 0, 0)) {
		if (sw_spread_deliver(src, src->worker, sw_sender_pair(src), dst, fw) < 0) {
			src->forwarded--; /* sent again on resume */
			return -EAGAIN;
		}
	} else if (!xw || dst->worker == src->worker) {
		sw_deliver(dst, fw, storm);
	} else if (sw_cross_unicast(src, dst->worker, sw_port_tag(dst, 0), fw) < 0) {
		src->forwarded--; /* sent again on resume */
		return -EAGAIN;
	}
	return 0;
}

/*
 * An admitted frame for every port but the sender: a broadcast, a multicast or an unknown
 * destination (storm control counts the unknown ones here). Returns the deliveries beyond the
 * first, which the sender's budget is charged for.
 */
static inline __attribute__((always_inline)) int
sw_flood(struct switch_port *src, const struct sw_fwd *fw, uint64_t now, const bool xw,
	 const bool storm)
{
	struct vnet_switch *sw = src->sw;
	const struct switch_port *self = xw ? src->home : src;
	const struct sw_worker *own = &sw->w[xw ? src->worker : 0];
	struct switch_port *dst;
	int deliveries = 0;

	if (storm && !(src->head[0] & 1) && src->flood_rate && !storm_take(src, now))
		return 0;
	src->flooded++;
	for (unsigned i = 0, k = 0; i < own->nports; i++) {
		dst = own->ports[i];
		if (dst == self || (xw && dst->is_lane))
			continue;
		if (xw)
			sw_xw_deliver(src->worker, sw_sender_pair(src), dst, fw, storm);
		else
			sw_deliver(dst, fw, storm);
		if (k++)
			deliveries++;
	}
	if (xw) {
		/* Other workers: one copy each, which their thread hands to each of its ports. */
		unsigned copies = own->nports - 1;

		for (unsigned wi = 0; wi < sw->nworkers; wi++) {
			/* none there but lanes, or but the sender's own home (its lane sends) */
			if (wi == src->worker || !sw->w[wi].nflood ||
			    (sw->w[wi].nflood == 1 && self->worker == wi))
				continue;
			sw_cross_flood(src, wi, fw);
			copies++;
		}
		deliveries = copies > 1 ? (int)copies - 1 : 0;
	}
	return deliveries;
}

/*
 * A guest sent a packet: learn its source, forward or flood it. Never back-pressures but for a
 * full cross-worker ring. `xw`: ports may be on other workers; `storm`: the guarded copy, for
 * ports with a flood-rate or an access port's tag check; `ips`: an ips= list (constants: each
 * ops table gets its own copy, so a plain port pays nothing for storm control, VLANs or IP
 * anti-spoofing). hdr: NULL, or the header of a frame that asks for an offload (its own copy,
 * SW_TRANSMIT's fn_offload).
 */
static inline __attribute__((always_inline)) int
transmit(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr, const struct iovec *iov,
	 unsigned iovcnt, size_t off, size_t len, const bool xw, const bool storm, const bool ips)
{
	struct switch_port *src = port_of(be), *dst;
	struct sw_worker *w = &src->sw->w[xw ? src->worker : 0];
	uint64_t now = w->now_ns;
	struct iovec v[SW_FWD_IOV];
	struct sw_fwd fw;

	if (!sw_admit(src, hdr, iov, iovcnt, off, len, now, xw, storm, ips))
		return 0;
	/* From here on the frame is its checked copy, then the rest in the guest's buffers. */
	if (__builtin_expect(!sw_fwd_iov(src, iov, iovcnt, off, len, v, &fw), 0)) {
		src->dropped++;
		return 0;
	}
	fw.vh = NULL;
	if (hdr) /* sw_admit() checked it: src->vh, src->off */
		sw_fwd_offload(&fw, w, &src->vh, &src->off);
	if (!(src->head[0] & 1)) {
		dst = sw_lookup_cached(src->sw, src, src->head, now);
		if (dst)
			return sw_unicast(src, dst, &fw, xw, storm);
	}
	return sw_flood(src, &fw, now, xw, storm);
}

/*
 * Frames [from, to) of a burst for dst, which had nothing queued, with the headers the sender's
 * checks saw (heads): into its guest's buffers in one call; what its guest has no buffers for
 * is queued (a copy, with the same header), as swq_deliver() does.
 */
static void sw_deliver_burst(struct switch_port *dst, const struct vnet_frame *f,
			       const uint8_t (*heads)[VNET_FRAME_HEAD], unsigned from, unsigned to)
{
	unsigned k;

	guest_race(GUEST_RACE_TX_FORWARD);
	k = from + vnet_dev_receive_burst(dst->dev, f + from, heads + from, to - from);
	for (; k < to; k++) {
		struct iovec iov[2];

		guest_race(GUEST_RACE_TX_FORWARD);
		swq_enqueue(dst, iov, vnet_frame_iov(&f[k], heads[k], iov), 0, f[k].len, -1);
	}
}

/*
 * A flood of src's burst may go in a run (sw_deliver_burst() to each port): no port it reaches
 * has frames queued (they go first) or is an uplink. Returns the ports it reaches (> 0), or 0:
 * the flood takes sw_flood()'s way.
 */
static unsigned flood_run_ports(const struct switch_port *src)
{
	const struct sw_worker *own = &src->sw->w[0];
	unsigned n = 0;

	for (unsigned i = 0; i < own->nports; i++) {
		const struct switch_port *p = own->ports[i];

		if (p == src)
			continue;
		if (p->q_len || p->up)
			return 0;
		n++;
	}
	return n;
}

/* A run of src's burst ends: frames [start, end) to run, or (run NULL) flooded to every port. */
static void run_end(struct switch_port *src, struct switch_port *run, const struct vnet_frame *f,
		    unsigned start, unsigned end)
{
	const struct sw_worker *own = &src->sw->w[0];

	if (run) {
		sw_deliver_burst(run, f, src->burst_head, start, end);
		return;
	}
	for (unsigned i = 0; i < own->nports; i++)
		if (own->ports[i] != src)
			sw_deliver_burst(own->ports[i], f, src->burst_head, start, end);
}

/*
 * transmit_burst of the plain ops table (one worker, no storm control, VLAN tags or ips=): each
 * frame admitted and looked up as transmit() does; a run of frames for the same port that has
 * nothing queued goes to its guest in one vnet_dev_receive_burst(), a run of floods to each
 * other port's guest so (when none has frames queued). Anything else (a port with queued
 * frames, the sender itself, a frame whose checks read beyond its Ethernet header) ends the run
 * and takes transmit()'s way, so each receiver gets its frames in the order they were sent.
 * Floods' further deliveries count against `room` (backend.h): the call ends where the sender's
 * budget would.
 */
static unsigned switch_transmit_burst(struct vnet_backend *be, const struct vnet_frame *f,
				      const struct virtio_net_hdr_v1 *hdr, unsigned n, uint32_t room,
				      uint32_t *extra, bool *full)
{
	struct switch_port *src = port_of(be), *run = NULL;
	const uint64_t now = src->sw->w[0].now_ns;
	uint32_t more = 0;  /* further deliveries of this call */
	unsigned flood = 0; /* a run of floods: the ports each reaches (run NULL); 0: none */
	unsigned start = 0, i;

	(void)hdr;  /* NULL: no burst_offloads */
	(void)full; /* never full: a receiver without buffers queues or drops */
	for (i = 0; i < n && (i == 0 || i + more < room); i++) {
		const struct iovec iov = {.iov_base = (void *)f[i].data, .iov_len = f[i].len};
		struct switch_port *dst = NULL;
		bool ok = sw_admit(src, NULL, &iov, 1, 0, f[i].len, now, false, false, false);
		struct iovec v[SW_FWD_IOV];
		struct sw_fwd fw;
		bool deep;

		if (ok && !(src->head[0] & 1))
			dst = sw_lookup_cached(src->sw, src, src->head, now);
		/* Port security may read further than the Ethernet header (ARP, ND, IPv6's next
		 * header): those frames go at once, transmit()'s way, with all it read; the others in
		 * runs, each with the Ethernet header it checked. */
		deep = src->head_len != VNET_FRAME_HEAD;
		memcpy(src->burst_head[i], src->head, VNET_FRAME_HEAD);
		if (ok && !deep && (dst ? dst == run : flood != 0)) {
			if (dst) {
				src->forwarded++;
			} else {
				src->flooded++;
				more += flood - 1;
			}
			continue;
		}
		if (run || flood)
			run_end(src, run, f, start, i);
		run = NULL;
		flood = 0;
		if (!ok)
			continue;
		if (dst && !deep && dst != src && !dst->q_len && !dst->up) {
			src->forwarded++;
			run = dst;
			start = i;
		} else if (!dst && !deep && (flood = flood_run_ports(src)) != 0) {
			src->flooded++;
			more += flood - 1;
			start = i;
		} else if (!sw_fwd_iov(src, &iov, 1, 0, f[i].len, v, &fw)) {
			src->dropped++;
		} else {
			fw.vh = NULL; /* a burst's frames ask for no offload (burst_offloads off) */
			fw.off = NULL;
			if (dst)
				(void)sw_unicast(src, dst, &fw, false, false);
			else
				more += (uint32_t)sw_flood(src, &fw, now, false, false);
		}
	}
	if (run || flood)
		run_end(src, run, f, start, i);
	*extra += more;
	return i;
}

/*
 * One transmit entry point per ops table: each a copy of transmit() for its constants, and a
 * copy of it for frames that ask for an offload, out of line (fn_offload), so the code of a
 * frame that asks for none is what it was before switch ports had offloads.
 */
#define SW_TRANSMIT(fn, xw, storm, ips)                                                            \
	static __attribute__((noinline)) int fn##_offload(                                         \
	    struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,                          \
	    const struct iovec *iov, unsigned iovcnt, size_t off, size_t len)                      \
	{                                                                                          \
		return transmit(be, hdr, iov, iovcnt, off, len, xw, storm, ips);                   \
	}                                                                                          \
	static int fn(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,                \
		      const struct iovec *iov, unsigned iovcnt, size_t off, size_t len)            \
	{                                                                                          \
		if (__builtin_expect(pkt_offload_needed(hdr), 0))                                  \
			return fn##_offload(be, hdr, iov, iovcnt, off, len);                       \
		return transmit(be, NULL, iov, iovcnt, off, len, xw, storm, ips);                  \
	}

SW_TRANSMIT(switch_transmit, false, false, false)
SW_TRANSMIT(switch_transmit_xw, true, false, false)
SW_TRANSMIT(switch_transmit_storm, false, true, false)
SW_TRANSMIT(switch_transmit_xw_storm, true, true, false)
SW_TRANSMIT(switch_transmit_ips, false, false, true)
SW_TRANSMIT(switch_transmit_xw_ips, true, false, true)
SW_TRANSMIT(switch_transmit_storm_ips, false, true, true)
SW_TRANSMIT(switch_transmit_xw_storm_ips, true, true, true)

/**
 * switch_uplink_send() - a frame from an uplink into its switch.
 * @be: the uplink (switch_attach_uplink())
 * @hdr: the tap's virtio-net header of the frame (NULL: none), its offsets in the untagged frame
 * @frame: the frame, untagged
 * @len: its length
 *
 * Learnt, forwarded or flooded as a port's frame, through the guarded transmit (no port
 * security: an uplink has none); an offload it asks for checked as a guest's (the tap's word
 * that a checksum is valid is not taken: DATA_VALID cleared). On the uplink's worker's thread.
 */
void switch_uplink_send(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
			const uint8_t *frame, size_t len)
{
	struct iovec iov = {.iov_base = (void *)frame, .iov_len = len};
	struct virtio_net_hdr_v1 h = {0};

	if (hdr) {
		h = *hdr;
		h.flags &= VIRTIO_NET_HDR_F_NEEDS_CSUM;
		h.num_buffers = 0;
	}
	if (port_of(be)->sw->xq)
		transmit(be, pkt_offload_needed(&h) ? &h : NULL, &iov, 1, 0, len, true, true, false);
	else
		transmit(be, pkt_offload_needed(&h) ? &h : NULL, &iov, 1, 0, len, false, true, false);
}

/*
 * The guest's receive offloads now (negotiated, or CTRL_GUEST_OFFLOADS_SET): what frames that
 * ask for offloads are delivered with (sw_rx_takes()). A spread port's lanes deliver to the
 * same guest.
 */
static void switch_set_offloads(struct vnet_backend *be, uint64_t guest_features)
{
	struct switch_port *p = port_of(be);

	__atomic_store_n(&p->rx_offloads, guest_features, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < p->nlanes; i++)
		__atomic_store_n(&p->lanes[i]->rx_offloads, guest_features, __ATOMIC_RELAXED);
}

/* The guest posted RX buffers: deliver queued packets, one budget (true: call again later). */
static bool switch_rx_resume(struct vnet_backend *be)
{
	return swq_drain(port_of(be), VNET_BUDGET_PACKETS, VNET_BUDGET_BYTES) > 0;
}

/* The port's device was reset: frames queued for the guest that is gone are dropped. */
static void switch_reset(struct vnet_backend *be)
{
	struct switch_port *p = port_of(be);

	if (p->q_len)
		log_guest("switch: port %s: %u frames queued for its guest dropped at device reset",
			  p->name, p->q_len);
	swq_clear(p);
	/* A spread port's lanes queue for the same guest (their workers are parked: the home's
	 * vhost-user handling parks them). */
	for (unsigned i = 0; i < p->nlanes; i++)
		swq_clear(p->lanes[i]);
	switch_set_offloads(be, 0); /* the reset device has none until the next negotiation */
}

/*
 * The offloads a switch port offers its guest: checksums, TCP and UDP segmentation both ways
 * (switch_offload.c does them in software for a receiver that lacks them).
 */
#define SW_OFFLOADS                                                                                \
	(BIT_ULL(VIRTIO_NET_F_CSUM) | BIT_ULL(VIRTIO_NET_F_GUEST_CSUM) |                           \
	 BIT_ULL(VIRTIO_NET_F_HOST_TSO4) | BIT_ULL(VIRTIO_NET_F_HOST_TSO6) |                       \
	 BIT_ULL(VIRTIO_NET_F_HOST_ECN) | BIT_ULL(VIRTIO_NET_F_HOST_USO) |                         \
	 BIT_ULL(VIRTIO_NET_F_GUEST_TSO4) | BIT_ULL(VIRTIO_NET_F_GUEST_TSO6) |                     \
	 BIT_ULL(VIRTIO_NET_F_GUEST_ECN) | BIT_ULL(VIRTIO_NET_F_GUEST_USO4) |                      \
	 BIT_ULL(VIRTIO_NET_F_GUEST_USO6))

/* switch_backend_ops - the ops table the device model calls (every port on one worker). */
const struct vnet_backend_ops switch_backend_ops = {
	.kind = "switch",
	.offload_features = SW_OFFLOADS,
	.transmit = switch_transmit,
	.transmit_burst = switch_transmit_burst,
	.set_offloads = switch_set_offloads,
	.rx_resume = switch_rx_resume,
	.reset = switch_reset,
	.offload_stats = switch_offload_stats,
};

#define SW_OPS(fn)                                                                                 \
	{                                                                                          \
		.kind = "switch", .offload_features = SW_OFFLOADS, .transmit = fn,                 \
		.set_offloads = switch_set_offloads, .rx_resume = switch_rx_resume,                \
		.reset = switch_reset, .offload_stats = switch_offload_stats,                      \
	}

/*
 * The same for the other ports, by [flood-rate][ips=][several workers]: a switch spread over
 * several workers, ports with a flood-rate (storm control), ports with an ips= list.
 */
static const struct vnet_backend_ops switch_backend_ops_checked[2][2][2] = {
	{{{0}, SW_OPS(switch_transmit_xw)},
	 {SW_OPS(switch_transmit_ips), SW_OPS(switch_transmit_xw_ips)}},
	{{SW_OPS(switch_transmit_storm), SW_OPS(switch_transmit_xw_storm)},
	 {SW_OPS(switch_transmit_storm_ips), SW_OPS(switch_transmit_xw_storm_ips)}},
};

/**
 * switch_port_ops() - the ops table to attach a switch port's device with.
 * @be: the port's handle (switch_attach(), then switch_port_set_flood_rate() and
 * switch_port_set_ips() if any)
 *
 * Return: switch_backend_ops with one worker, the cross-worker table with several; each in a
 * copy that checks the port's flood-rate and access-port tags when it has either, and its ips=
 * list when it has one.
 */
const struct vnet_backend_ops *switch_port_ops(const struct vnet_backend *be)
{
	const struct switch_port *p = port_of_const(be);
	bool storm = p->flood_rate != 0 || p->access, ips = p->n_ips != 0, xw = p->sw->xq != NULL;

	if (!storm && !ips && !xw)
		return &switch_backend_ops;
	return &switch_backend_ops_checked[storm][ips][xw];
}

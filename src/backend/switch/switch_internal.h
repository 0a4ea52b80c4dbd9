/* SPDX-License-Identifier: MIT */
/* switch_internal.h - the switch's private state: its ports, workers, and the handle check. */
#ifndef VNETD_SWITCH_INTERNAL_H
#define VNETD_SWITCH_INTERNAL_H

/*
 * Only the switch's own files include this: switch.c (the data path: admit, forward, the
 * transmit variants and the ops tables), switch_flow.c (the flow cache in front of the FDB),
 * switch_queue.c (each port's queue for its guest, the packet pool), switch_xworker.c (frames
 * for ports of other workers), switch_policy.c (the out-of-line parts of its port policies)
 * and switch_port.c (the switch and its ports: create, attach, detach, counters).
 * To the rest of vnetd a switch and its ports are the opaque handles of switch.h.
 *
 * Calls go one way: switch.c -> switch_xworker.c -> switch_queue.c; switch.c -> switch_flow.c
 * -> switch_fdb.c. What runs for every frame is inline here (static inline: each file that
 * calls it gets its own copy), so a split between files costs no call on the per-packet path.
 */

#include <assert.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/uio.h>

#include "mem/mem.h"
#include "lib/stat_atomic.h"
#include "lib/virtio_net_defs.h"
#include "pkt/pkt.h"
#include "dev/dev.h"
#include "backend/switch/switch.h"
#include "backend/switch/switch_fdb.h"

#define SW_ETH_ALEN FDB_ETH_ALEN
#define SW_MAGIC 0x73776974u /* "swit": catches a tap handle passed to the switch */
#define SW_MIN_FRAME 14	      /* an Ethernet header */
#define SW_MAX_FRAME SWITCH_MAX_FRAME /* the largest frame a port takes (switch_limits.h) */
#define SW_HEAD_MAX 256	      /* the checked copy of a frame's first bytes, in the port */
#define SW_NS 1000000000ull   /* a second in ns (storm control's credit per frame) */
#define SW_FWD_IOV 8	      /* a forwarded frame's pieces: its checked copy, the rest in place */

struct sw_packet; /* a queued frame's buffer (switch_queue.c) */
struct pkt_soft_buf;
struct xq;

/* The private side of a struct vnet_backend handed out by switch_attach(). */
struct switch_port {
	uint32_t magic;
	uint16_t slot;	 /* index in vnet_switch.ports */
	uint16_t worker; /* the worker whose thread alone uses dev and the fields below */
	uint32_t serial; /* tells this port from a later one in the same slot (queued frames) */
	bool resuming;	 /* inside rx_resume(): do not flush recursively */
	uint16_t xq_wait; /* 1 + the worker whose full cross-worker ring stopped our TX; 0: none */
	struct vnet_switch *sw;
	struct vnet_dev *dev;
	char name[32];
	/* FIFO of packets waiting for guest RX buffers; while non-empty, new packets queue too. */
	struct sw_packet *queue[SWITCH_QUEUE_PACKETS];
	unsigned q_head, q_len;
	size_t q_bytes;	 /* the capacity of the buffers queued (what they hold in memory) */
	uint64_t forwarded, flooded, dropped, crossed; /* this thread's (switch_port_stats()) */
	uint64_t cache_misses; /* stat_atomic.h: the statistics read it from another thread */
	bool refusal_logged[2]; /* FDB_AT_LIMIT, FDB_OVER_RATE: said once per port */
	/*
	 * Port security (switch_port_set_security()): with psec, a frame leaves the port only from
	 * *psec_mac (own_mac, or the device's current MAC with mac-change) or one of allowed[]; the
	 * others are dropped before learning (so the FDB never learns a MAC the port may not use).
	 */
	bool psec;
	const uint8_t *psec_mac;
	uint8_t own_mac[SW_ETH_ALEN];
	uint8_t n_allowed;
	uint8_t allowed[SWITCH_ALLOWED_MACS][SW_ETH_ALEN];
	uint64_t spoofed; /* stat_atomic.h: frames dropped by port security */
	uint64_t arp_nd_spoofed; /* stat_atomic.h: ARP / ND claiming a MAC not the port's */
	/*
	 * Storm control (switch_port_set_flood_rate()): a token bucket of flood_rate frames a second,
	 * one second's worth deep, that only the flood path reads. Credit is in frames x 1e9 (one
	 * frame costs SW_NS), refilled by the ns elapsed x flood_rate: exact, no division.
	 */
	unsigned flood_rate; /* 0: no limit */
	uint64_t flood_credit, flood_ns;
	uint64_t storm_log_ns; /* a drop logs again from then on (the worker's clock: no clock read) */
	uint64_t storm_dropped; /* stat_atomic.h: floods dropped over flood_rate */
	/*
	 * An access port (vlan=N, switch_port_set_access()): its guest's frames that carry an
	 * 802.1Q / 802.1ad tag are dropped (no double tagging), on the guarded path only.
	 */
	bool access;
	uint64_t tagged_dropped; /* stat_atomic.h: tagged frames an access port's guest sent */
	/*
	 * An uplink (switch_attach_uplink(): a tap trunk's side of one VLAN; dev is NULL): frames
	 * for it go to up->deliver(), on the guarded path (a VLAN's other ports are access ports)
	 * and from the cross-worker queues.
	 */
	const struct switch_uplink_ops *up;
	void *up_ctx;
	/*
	 * Flow cache (consecutive frames of a port mostly share their addresses), valid while the
	 * FDB set its answer came from is unchanged (struct fdb_ver: a change elsewhere in the
	 * table leaves it valid), so a hit takes no lock and reads no entry but for its age: the
	 * entry holding this port's last source MAC, and the last destination looked up with its
	 * answer (NULL port: unknown, flooded).
	 */
	struct fdb_entry *src_hit; /* NULL: not learnt (src_retry_ns: a refusal, till then) */
	struct fdb_ver src_ver;
	uint64_t src_retry_ns;
	uint8_t src_mac[SW_ETH_ALEN];
	/*
	 * The frame being sent as its checks read it (sw_admit()), copied once from the guest:
	 * destination, source, EtherType, and what port security, the tag check and ips= read
	 * behind them: its first head_len bytes in head[], or, where the checks read beyond
	 * SW_HEAD_MAX, the whole frame in its worker's `whole` buffer (head_len > SW_HEAD_MAX:
	 * the frame's length). Every path
	 * forwards these bytes, not the guest's (sw_fwd_iov()): what was checked is what leaves,
	 * whatever the sender's guest writes into its buffer meanwhile; the rest of the frame is
	 * copied once, from the guest's buffer to the receiver, queue or backend.
	 */
	uint32_t head_len;
	uint8_t head[SW_HEAD_MAX] __attribute__((aligned(16)));
	/* switch_transmit_burst(): each frame's Ethernet header as admitted (head), what its
	 * receiver gets whatever the sender's guest writes into the frame meanwhile */
	uint8_t burst_head[VNET_BURST_MAX][VNET_FRAME_HEAD];
	uint8_t dst_mac[SW_ETH_ALEN];
	struct fdb_ver dst_ver;
	struct fdb_entry *dst_hit;
	struct switch_port *dst_port;
	/* IP anti-spoofing (switch_port_set_ips()): only the ips ops tables read these. */
	unsigned n_ips; /* 0: no list */
	struct switch_ip_net ips[SWITCH_IPS];
	uint64_t ip_spoofed; /* stat_atomic.h: frames dropped by IP anti-spoofing */
	/*
	 * A port whose queue pairs live on several workers (switch_attach_lane()): its *home*
	 * port is the one the FDB knows and floods visit; each other worker running some of its
	 * pairs has a *lane*, a switch port of its own (slot, serial, flow cache, queue, counters,
	 * back-pressure) on that worker, whose frames are learnt and filtered as the home's. A
	 * frame for the port goes to the pair the device picks (vnet_dev_rx_pair(): RSS, else the
	 * flow hash), on that pair's worker: directly, or through the cross-worker ring.
	 */
	struct switch_port *home; /* the FDB's port: itself, but for a lane */
	bool is_lane;		  /* a lane: in its worker's list for resumes only, never flooded */
	uint8_t npairs;		  /* home: entries of pair_port; 0: not spread */
	uint8_t nlanes;
	struct switch_port *pair_port[SWITCH_MAX_PAIRS]; /* home: who runs pair i (itself or a lane) */
	struct switch_port *lanes[SWITCH_MAX_PAIRS];	 /* home: its lanes */
	uint64_t spread_dropped; /* home: atomic adds, any thread: frames a full ring refused on
				  * their way to one of its lanes (relayed floods) */
	/*
	 * Offloads (switch_offload.c). rx_offloads: the GUEST_* offloads its guest takes now
	 * (set_offloads(), atomic: lanes read it on their workers); an uplink takes them all.
	 * vh, off: the frame being sent asks for an offload, its checked header as receivers that
	 * take it get it (pkt_hdr_for()) and what it asks (pkt_offload_parse() of the checked
	 * copy in head). The counters are stat_atomic.h's: bad_hdr on the sender's thread,
	 * offload_passed, soft_segs and soft_csums on the receiver's.
	 */
	uint64_t rx_offloads;
	struct virtio_net_hdr_v1 vh;
	struct pkt_offload off;
	uint64_t bad_hdr;	 /* frames dropped: a header the frame contradicts */
	uint64_t offload_passed; /* frames its guest got with their offload (GSO or NEEDS_CSUM) */
	uint64_t soft_segs;	 /* segments made for it in software (its guest lacks TSO) */
	uint64_t soft_csums;	 /* checksums completed for it in software (it lacks GUEST_CSUM) */
};

/* What one worker's thread keeps: its ports (floods visit these), clock and buffer pool. */
struct sw_worker {
	struct switch_port *ports[SWITCH_MAX_PORTS]; /* densely packed */
	unsigned nports;
	unsigned nflood; /* ports a flood visits: not lanes (no copy for a worker without one) */
	bool xq_waiting; /* some port's xq_wait is set (switch_worker_rx() resumes them) */
	unsigned xq_next; /* the port xq_resume() looks at first (in turn) */
	uint64_t now_ns; /* learning and aging clock (switch_tick()) */
	/* Free packet buffers by size class ([0] small, [1] large), and how many each holds. */
	struct sw_packet *pool[2];
	unsigned pool_len[2];
	/* SW_MAX_FRAME bytes, allocated at first use: the checked copy of a frame whose checks
	 * read beyond SW_HEAD_MAX, or that comes in too many pieces (a port's head_len > SW_HEAD_MAX) */
	uint8_t *whole;
	/* Offloads done in software for this worker's receivers (switch_offload.c), allocated at
	 * first use: the frames pkt_soft() made of the last frame that needed them, so a flood
	 * segments once for all the receivers that need it. soft_gen numbers the frames that ask
	 * for offloads on this worker (sw_fwd_offload()): what was made is for the frame whose
	 * number it keeps. */
	struct pkt_soft_buf *soft;
	uint64_t soft_gen;  /* the last number given (sw_fwd_offload()) */
	uint64_t soft_made; /* the frame soft's soft_n frames were made of */
	unsigned soft_n;
};

struct vnet_switch {
	struct switch_port *ports[SWITCH_MAX_PORTS]; /* by slot; changed only with workers parked */
	unsigned nworkers;
	uint32_t next_serial;
	struct xq *xq; /* frames for another worker's ports (NULL with one worker) */
	const struct switch_owner_ops *ops;
	void *ctx;
	struct sw_fdb fdb;
	struct sw_worker w[];
};

/* port_of() - the switch port behind a backend handle (asserted: not a tap handle). */
static inline struct switch_port *port_of(struct vnet_backend *be)
{
	struct switch_port *p = (struct switch_port *)be;

	assert(p && p->magic == SW_MAGIC);
	return p;
}

/* port_of_const() - the same for a const handle. */
static inline const struct switch_port *port_of_const(const struct vnet_backend *be)
{
	const struct switch_port *p = (const struct switch_port *)be;

	assert(p && p->magic == SW_MAGIC);
	return p;
}

/*
 * The out-of-line parts of the port policies (switch_policy.c), for switch.c's transmit: each
 * called only on a port that has the policy, cold where it only counts and logs a drop.
 */

/* sw_learn_refused() - the FDB did not learn p's source MAC: said once a port. */
__attribute__((noinline, cold)) void sw_learn_refused(struct switch_port *p, enum fdb_refusal why);

/* sw_psec_drop() - p's frame from source MAC mac, not the port's: dropped, counted, logged. */
__attribute__((noinline, cold)) void sw_psec_drop(struct switch_port *p, const uint8_t *mac);

/* sw_head() - p's checked copy of the frame being sent (head_len bytes of it). */
static inline const uint8_t *sw_head(const struct switch_port *p)
{
	return p->head_len <= SW_HEAD_MAX ? p->head : p->sw->w[p->worker].whole;
}

/*
 * sw_head_need() - make p's checked copy hold the frame's (len bytes at byte off of iov) first
 * n bytes, all of it if shorter: only the bytes beyond what it holds are read from the guest.
 * Returns sw_head(p), or NULL when the whole-frame buffer could not be allocated or the buffers
 * hold less than the frame (the caller drops the frame).
 */
__attribute__((noinline)) const uint8_t *sw_head_need(struct switch_port *p, const struct iovec *iov,
						      unsigned iovcnt, size_t off, size_t len,
						      size_t n);

/* sw_lladdr_pass() - a port-secured port's non-IPv4 frame: do its ARP/ND addresses pass? */
__attribute__((noinline)) bool sw_lladdr_pass(struct switch_port *p, const struct iovec *iov,
					      unsigned iovcnt, size_t off, size_t len);

/* sw_storm_refill() - refill p's flood-rate bucket up to now (once per tick of the clock). */
__attribute__((noinline)) void sw_storm_refill(struct switch_port *p, uint64_t now);

/* sw_storm_log() - the log line for p's storm-control drops (at most one a second). */
__attribute__((noinline, cold)) void sw_storm_log(struct switch_port *p, uint64_t now);

/* sw_ips_pass() - p has an ips= list: may its frame leave? (dropped, counted, logged if not) */
__attribute__((noinline)) bool sw_ips_pass(struct switch_port *p, const struct iovec *iov,
					   unsigned iovcnt, size_t off, size_t len);

/* sw_access_tagged() - an access port's frame carries a VLAN tag (dropped, counted, logged). */
__attribute__((noinline)) bool sw_access_tagged(struct switch_port *p);

/* ---- A frame as the switch forwards it (switch.c builds it, every delivery reads it) ------- */

/*
 * A frame as the switch forwards it (sw_fwd_iov()): its len bytes, first the sender's checked
 * copy of its head (what port security, the tag check and ips= read), then the rest in place in
 * the sender's guest memory (or a cross-worker ring, an uplink's buffer). Nearly always (flat)
 * the whole frame lies in one buffer there and the checked copy is its Ethernet header alone:
 * a receiving guest takes it in one copy with `head` put over its first bytes
 * (vnet_dev_receive_checked(), vnet_dev_receive_burst()'s heads), and the others get the two
 * pieces from sw_fwd_vec().
 * Else iov[0..iovcnt): the checked copy, then the rest's pieces.
 */
struct sw_fwd {
	const uint8_t *flat; /* the frame in one buffer; NULL: iov */
	const uint8_t *head; /* flat: the VNET_FRAME_HEAD bytes that replace its first ones */
	const struct iovec *iov;
	unsigned iovcnt;
	size_t len;
	/* The frame asks for an offload (NULL: none, the common case): its checked header as a
	 * receiver that takes the offload gets it, and what it asks, in the checked copy's
	 * coordinates (the copy is the first piece: sw_fwd_vec()'s iov[0]). */
	const struct virtio_net_hdr_v1 *vh;
	const struct pkt_offload *off;
	uint64_t gen; /* with vh: the frame's number on its worker (struct sw_worker's soft_gen) */
};

/* sw_fwd_vec() - fw's frame as iovecs, at offset 0 (tmp: room for a flat frame's two pieces). */
static inline unsigned sw_fwd_vec(const struct sw_fwd *fw, struct iovec tmp[2],
				  const struct iovec **iov)
{
	const struct vnet_frame f = {.data = fw->flat, .len = (uint32_t)fw->len};

	if (!fw->flat) {
		*iov = fw->iov;
		return fw->iovcnt;
	}
	*iov = tmp;
	return vnet_frame_iov(&f, fw->head, tmp);
}

/* ---- The flow cache in front of the FDB (switch_flow.c; its hits inline, every frame) ----- */

/* sw_learn_miss() - sw_learn_cached()'s miss: ask the FDB, unless it refused mac a moment ago. */
__attribute__((noinline)) void sw_learn_miss(struct vnet_switch *sw, struct switch_port *p,
					     const uint8_t *mac, uint64_t now);

/*
 * sw_learn_cached() - fdb_learn() through p's flow cache: the same source as last time costs one
 * compare. With one worker the entry itself says whether it still holds our MAC (nothing
 * changes it meanwhile); with several (`xw`) another thread may be rewriting it, so its set's
 * sequence says so.
 */
static inline __attribute__((always_inline)) void
sw_learn_cached(struct vnet_switch *sw, struct switch_port *p, const uint8_t *mac, uint64_t now,
		const bool xw)
{
	struct fdb_entry *e = p->src_hit;

	if (e && (xw ? fdb_valid(&p->src_ver) && !memcmp(p->src_mac, mac, SW_ETH_ALEN)
		     : e->port == p->slot && !memcmp(e->mac, mac, SW_ETH_ALEN))) {
		fdb_touch(e, now);
		return;
	}
	sw_learn_miss(sw, p, mac, now);
}

/* sw_lookup_cached() - fdb_lookup() through p's flow cache: the port behind mac, NULL: flood. */
static inline __attribute__((always_inline)) struct switch_port *
sw_lookup_cached(struct vnet_switch *sw, struct switch_port *p, const uint8_t *mac, uint64_t now)
{
	struct fdb_entry *e = p->dst_hit;

	if (!fdb_valid(&p->dst_ver) || memcmp(p->dst_mac, mac, SW_ETH_ALEN) ||
	    (e && fdb_expired(e, now))) {
		uint16_t slot = fdb_lookup(&sw->fdb, mac, now, &p->dst_hit, &p->dst_ver);

		stat_inc(&p->cache_misses);
		memcpy(p->dst_mac, mac, SW_ETH_ALEN);
		p->dst_port = slot == FDB_NO_PORT ? NULL : sw->ports[slot];
		e = p->dst_hit;
	}
	/* No entry, no port (flood): decided on the register that holds e, no load. */
	return e ? p->dst_port : NULL;
}

/* ---- Offloads across the switch (switch_offload.c) ----------------------------------------- */

/* sw_offload_admit() - the sender's frame asks for an offload: its header checked against it. */
__attribute__((noinline)) bool sw_offload_admit(struct switch_port *src,
						const struct virtio_net_hdr_v1 *hdr,
						const struct iovec *iov, unsigned iovcnt, size_t off,
						size_t len);

/* switch_offload_stats() - a port's offload counters, its lanes' included (the ops' offload_stats). */
void switch_offload_stats(const struct vnet_backend *be, struct vnet_offload_stats *out);

/* sw_rx_takes() - whether receiver dst takes the frame's offload o as it is. */
bool sw_rx_takes(const struct switch_port *dst, const struct pkt_offload *o);

/* sw_soft_get() - fw made in software on worker w (once per frame): its frames' count, *segs. */
unsigned sw_soft_get(struct sw_worker *w, const struct sw_fwd *fw, const struct pkt_seg **segs);

/* sw_soft_free() - free worker w's buffer of frames made in software. */
void sw_soft_free(struct sw_worker *w);

/*
 * sw_fwd_offload() - fw asks for the offload vh / o (NULL: none): set it, with a new number on
 * worker w (what was made in software for another frame is not its).
 */
static inline void sw_fwd_offload(struct sw_fwd *fw, struct sw_worker *w,
				  const struct virtio_net_hdr_v1 *vh, const struct pkt_offload *o)
{
	fw->vh = vh;
	fw->off = o;
	if (__builtin_expect(vh != NULL, 0))
		fw->gen = ++w->soft_gen;
}

/* ---- Each port's queue for its guest, and the packet pool (switch_queue.c) ---------------- */

/* swq_enqueue() - copy the frame to the tail of dst's queue (for pair, -1: any), or drop it. */
void swq_enqueue(struct switch_port *dst, const struct iovec *iov, unsigned iovcnt, size_t off,
		 size_t len, int pair);

/*
 * swq_deliver_offload() - swq_deliver() of a frame that asks for an offload (fw->vh): with its
 * header to a guest that takes it, else made in software for it (sw_soft_get()).
 */
__attribute__((noinline)) void swq_deliver_offload(struct switch_port *dst,
						   const struct sw_fwd *fw, int pair);

/* swq_drain() - deliver p's queued packets while its guest has buffers, within a budget. */
int swq_drain(struct switch_port *p, unsigned max_pkts, size_t max_bytes);

/* swq_clear() - drop every packet queued for p's guest. */
void swq_clear(struct switch_port *p);

/* swq_pool_free() - free a worker's pool of packet buffers and its whole-frame copy. */
void swq_pool_free(struct sw_worker *w);

/*
 * swq_deliver() - give a frame to dst's guest with a zeroed header: one copy, from the sender's
 * guest memory (or a cross-worker queue) straight into dst's buffers, its head from the
 * sender's checked copy (struct sw_fwd). Packets queued earlier (dst had no buffers) go first,
 * so order is kept and the port returns to the one-copy path as soon as its guest has buffers
 * again; only what still does not fit is queued (a copy). pair: the queue pair (a spread
 * port's), -1: the device picks. Runs on dst's worker.
 */
static inline __attribute__((always_inline)) void
swq_deliver(struct switch_port *dst, const struct sw_fwd *fw, const int pair)
{
	struct iovec tmp[2];
	const struct iovec *iov;
	unsigned cnt;

	if (__builtin_expect(fw->vh != NULL, 0)) {
		swq_deliver_offload(dst, fw, pair);
		return;
	}
	guest_race(GUEST_RACE_TX_FORWARD);
	if (!dst->q_len || swq_drain(dst, SWITCH_QUEUE_PACKETS, SWITCH_QUEUE_BYTES) == 0) {
		if (pair < 0 && fw->flat) {
			/* One buffer and the checked header, as a burst's frame: one copy. */
			const struct vnet_frame f = {.data = fw->flat, .len = (uint32_t)fw->len};

			if (vnet_dev_receive_checked(dst->dev, &f, fw->head))
				return;
		} else {
			cnt = sw_fwd_vec(fw, tmp, &iov);
			if (pair < 0 ? vnet_dev_receive_frame(dst->dev, NULL, iov, cnt, 0, fw->len)
				     : vnet_dev_receive_frame_on(dst->dev, (unsigned)pair, NULL, iov,
								 cnt, 0, fw->len))
				return;
		}
	}
	cnt = sw_fwd_vec(fw, tmp, &iov);
	swq_enqueue(dst, iov, cnt, 0, fw->len, pair);
}

/*
 * sw_deliver() - swq_deliver(), or an uplink's deliver() when dst is one: `guarded` (a
 * constant) is the guarded transmit's and the cross-worker queue's, the only ones that may meet
 * an uplink.
 */
static inline __attribute__((always_inline)) void sw_deliver(struct switch_port *dst,
							     const struct sw_fwd *fw,
							     const bool guarded)
{
	if (guarded && dst->up) {
		struct iovec tmp[2];
		const struct iovec *iov;
		unsigned cnt = sw_fwd_vec(fw, tmp, &iov);

		guest_race(GUEST_RACE_TX_FORWARD);
		if (fw->vh)
			stat_inc(&dst->offload_passed);
		/* with an offload: its frame_len bytes (a GSO frame's Ethernet padding dropped) */
		dst->up->deliver(dst->up_ctx, fw->vh, iov, cnt, 0,
				 fw->vh ? fw->off->frame_len : fw->len);
		return;
	}
	swq_deliver(dst, fw, -1);
}

/* ---- Frames for ports of other workers (switch_xworker.c) ---------------------------------- */

/* sw_port_tag() - the cross-worker tag of a frame for port p: slot, serial, a pair + 1 (or 0). */
static inline uint64_t sw_port_tag(const struct switch_port *p, unsigned pair_plus1)
{
	return (uint64_t)pair_plus1 << 48 | (uint64_t)p->serial << 16 | p->slot;
}

/* sw_sender_pair() - the pair of src's TX queue (a spread destination's pick), 0: an uplink. */
static inline unsigned sw_sender_pair(const struct switch_port *src)
{
	return src->dev ? vnet_dev_tx_pair(src->dev) : 0u;
}

/* sw_cross_flood() - queue src's flood for worker `to`'s ports: one copy, or a drop. */
void sw_cross_flood(struct switch_port *src, unsigned to, const struct sw_fwd *fw);

/* sw_cross_unicast() - queue a unicast frame for a port on worker `to`; -EAGAIN: ring full. */
int sw_cross_unicast(struct switch_port *src, unsigned to, uint64_t tag, const struct sw_fwd *fw);

/*
 * sw_spread_deliver() - a frame for a port spread over workers (dst its home), on worker
 * `worker`: to the pair its device picks, here or queued for that pair's worker.
 */
int sw_spread_deliver(struct switch_port *src, unsigned worker, unsigned from_pair,
		      struct switch_port *dst, const struct sw_fwd *fw);

/*
 * sw_xw_deliver() - sw_deliver() on a switch spread over workers: a spread port's pair may be
 * another worker's.
 */
static inline __attribute__((always_inline)) void
sw_xw_deliver(unsigned worker, unsigned from_pair, struct switch_port *dst,
	      const struct sw_fwd *fw, const bool guarded)
{
	if (__builtin_expect(dst->npairs != 0, 0))
		(void)sw_spread_deliver(NULL, worker, from_pair, dst, fw);
	else
		sw_deliver(dst, fw, guarded);
}

#endif

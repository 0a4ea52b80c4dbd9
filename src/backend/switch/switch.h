/* SPDX-License-Identifier: MIT */
/* switch.h - switch backend: an L2 learning switch between the ports of one vnetd. */
#ifndef VNETD_SWITCH_H
#define VNETD_SWITCH_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/dev.h"
#include "backend/switch/switch_ips.h"
#include "backend/switch/switch_limits.h"

struct vnet_dev;
struct vnet_switch; /* opaque */
struct virtio_net_hdr_v1;

/*
 * What a switch spread over several workers needs from its owner: wake worker `worker` (from
 * any thread), whose thread then calls switch_worker_rx() (the daemon: its wake eventfd).
 */
struct switch_owner_ops {
	void (*wake)(void *ctx, unsigned worker);
};

/*
 * switch_create() - an empty switch whose ports live on `nworkers` (1..SWITCH_MAX_WORKERS)
 * event-loop threads; ops (and ctx) may be NULL with one worker. NULL if out of memory
 * (logged). With one worker every frame is copied straight from the sender's guest into the
 * receiver's; with more, a frame for a port of another worker is copied into that worker's
 * bounded queue (switch_xq.h) and placed by that worker's thread (switch_worker_rx()).
 */
struct vnet_switch *switch_create(unsigned nworkers, const struct switch_owner_ops *ops,
				  void *ctx);

/*
 * switch_tick() - read the clock learning and aging use (CLOCK_MONOTONIC_COARSE) once, for
 * every frame worker `worker` forwards until its next tick: the daemon ticks at the start of
 * each event-loop round, so frames pay no clock read. switch_set_clock() sets every worker's
 * time explicitly (tests, one thread).
 */
void switch_tick(struct vnet_switch *sw, unsigned worker);
void switch_set_clock(struct vnet_switch *sw, uint64_t now_ns);

/*
 * switch_worker_rx() - on worker `worker`'s thread, after a wake-up: place the frames other
 * workers queued for its ports, at most one budget (VNET_BUDGET_*). True: frames are left,
 * call again (from the run queue) — no wake-up comes for them. False with one worker.
 */
bool switch_worker_rx(struct vnet_switch *sw, unsigned worker);

/*
 * switch_worker_round_end() - on worker `worker`'s thread, at the end of each round: wake the
 * workers it queued frames for in this round (once each). A no-op with one worker.
 */
void switch_worker_round_end(struct vnet_switch *sw, unsigned worker);

/* switch_destroy() - free the switch; ports still attached are detached first. */
void switch_destroy(struct vnet_switch *sw);

/*
 * switch_attach() - add a port delivering to `dev` (which must outlive the port), owned by
 * worker `worker` (its device is only used on that thread); `name` is for logs. Returns the
 * port's backend handle for switch_port_ops(), NULL if the switch is full, the worker out of
 * range or memory short (logged). With several workers, call it (and switch_detach()) only
 * while no other worker forwards (the daemon parks them).
 */
struct vnet_backend *switch_attach(struct vnet_switch *sw, struct vnet_dev *dev, const char *name,
				   unsigned worker);

/*
 * switch_detach() - remove a port: forget its MACs, drop its queued packets, free it. Frames
 * other workers queued for it are dropped when they come up (they name the port's serial).
 */
void switch_detach(struct vnet_backend *be);

/* switch_port_ops() - the ops table to attach the port with (workers, flood-rate, ips= or none). */
const struct vnet_backend_ops *switch_port_ops(const struct vnet_backend *be);

/*
 * switch_attach_lane() - run some of port be's queue pairs on worker `worker` (not its own),
 * through dev (vnet_dev_lane_create()): a lane, a switch port of that worker whose frames are
 * learnt as be's; switch_detach(be) detaches it too. NULL (logged) with one worker. With the
 * workers parked.
 */
struct vnet_backend *switch_attach_lane(struct vnet_backend *be, struct vnet_dev *dev,
					unsigned worker);

/*
 * switch_port_set_pairs() - runs[i] (be itself or one of its lanes) runs be's queue pair i:
 * frames for be go to the pair its device picks (vnet_dev_rx_pair()), on that handle's worker.
 * 0, or -1 for a bad handle or count. With the workers parked.
 */
int switch_port_set_pairs(struct vnet_backend *be, struct vnet_backend *const *runs,
			  unsigned npairs);

/*
 * switch_port_stats() - the port's counters (any pointer may be NULL):
 * forwarded - frames the port sent to one known port;
 * flooded   - frames the port sent to every other port (broadcast, multicast, unknown);
 * dropped   - frames the port sent that were malformed or that a full cross-worker queue
 *             could not take, plus frames for the port that its full queue could not take.
 */
void switch_port_stats(const struct vnet_backend *be, uint64_t *forwarded, uint64_t *flooded,
		       uint64_t *dropped);

/*
 * switch_port_set_limits() - what the port may teach the FDB: at most max_macs
 * (1..SWITCH_FDB_SIZE) MACs at once, learn_rate (0: any number, else up to
 * SWITCH_LEARN_RATE_MAX) new ones a second, with one second's worth at once. A port is
 * attached with SWITCH_FDB_PORT_MAX and SWITCH_LEARN_RATE. A MAC refused is not learned: its
 * frames are still forwarded, frames to it flood (and the refusal is counted). Call it right
 * after switch_attach() (with several workers, while they are parked).
 */
void switch_port_set_limits(struct vnet_backend *be, unsigned max_macs, unsigned learn_rate);

/*
 * Port security of a switch port (switch_port_set_security()): with `on`, the port's guest may
 * send only from the MAC its device had when attached, or, with mac_change, the one its driver
 * set since (CTRL_MAC_ADDR_SET), or one of allowed[n_allowed] (unicast). Other frames, and any
 * from a multicast source, are dropped and counted (spoofed) and never teach the FDB.
 */
struct switch_port_security {
	bool on;
	bool mac_change;
	unsigned n_allowed; /* 0..SWITCH_ALLOWED_MACS */
	const uint8_t (*allowed)[6];
};

/*
 * switch_port_set_security() - the port's port security (a port is attached without). 0, or -1
 * (nothing changed) for more than SWITCH_ALLOWED_MACS allowed MACs or a multicast one. Same
 * thread rules as switch_port_set_limits().
 */
int switch_port_set_security(struct vnet_backend *be, const struct switch_port_security *s);

/*
 * switch_port_set_flood_rate() - storm control: the port may flood (broadcast, multicast, unknown
 * unicast) at most `rate` frames a second (0: no limit, as attached; else up to
 * SWITCH_FLOOD_RATE_MAX), one second's worth at once; floods over it are dropped and counted
 * (storm_dropped). Frames to a known port are never limited. Same thread rules as
 * switch_port_set_limits(); the port's device takes switch_port_ops() after it (a port without a
 * limit runs an ops table without the check).
 */
void switch_port_set_flood_rate(struct vnet_backend *be, unsigned rate);

/*
 * switch_port_set_ips() - IP anti-spoofing: the port's guest may send IPv4 and IPv6 only from
 * the addresses of nets[n] (n 0: no list, no check, as attached), ARP only for them, neighbour
 * advertisements only for them (switch_ips.h has the rest: DHCP, duplicate address detection).
 * Frames outside are dropped and counted (ip_spoofed). 0, or -1 (nothing changed) for more than
 * SWITCH_IPS entries or a prefix too long. Same thread rules as switch_port_set_flood_rate(),
 * and the same switch_port_ops() after it (a port without a list runs no check).
 */
int switch_port_set_ips(struct vnet_backend *be, const struct switch_ip_net *nets, unsigned n);

/*
 * switch_port_set_access() - make the port an access port of a VLAN (vlan=N: the VLAN is the
 * segment itself, port_table.c): with `on`, frames its guest sends with an 802.1Q (0x8100),
 * 802.1ad (0x88a8) or old QinQ (0x9100) ethertype are dropped and counted (tagged_dropped):
 * no double tagging. Same thread rules as switch_port_set_flood_rate(), and the same need to
 * take switch_port_ops() after it.
 */
void switch_port_set_access(struct vnet_backend *be, bool on);

/*
 * An uplink of a switch (a tap trunk's side of one VLAN, port.c): a port without a device.
 * deliver() gets each frame the switch sends it (len bytes at byte off of iov, valid during
 * the call only) on the uplink's worker's thread; it sends it on or drops it, never queues.
 * The frame's first bytes (MACs, EtherType, what the sender's checks read) are the switch's
 * checked copy in its own memory, the rest may be the sending guest's buffer: deliver() copies
 * each byte once and decides nothing on the rest. hdr (NULL: none) is the header of a frame
 * that asks for an offload (a TCP segment of up to 64 KB, a checksum left to the receiver),
 * checked against the frame's headers: an uplink takes every offload (a tap: the kernel does
 * the work), with csum_start and hdr_len counted from the frame's first byte, untagged.
 */
struct switch_uplink_ops {
	void (*deliver)(void *ctx, const struct virtio_net_hdr_v1 *hdr, const struct iovec *iov,
			unsigned iovcnt, size_t off, size_t len);
};

/*
 * switch_attach_uplink() - add an uplink owned by worker `worker`: it learns and floods like a
 * port, without port security; only switches whose other ports are access ports
 * (switch_port_set_access()) may have one. Detach it with switch_detach(). NULL as
 * switch_attach().
 */
struct vnet_backend *switch_attach_uplink(struct vnet_switch *sw, const char *name,
					  unsigned worker, const struct switch_uplink_ops *ops,
					  void *ctx);

/*
 * switch_uplink_send() - a frame that came in on the uplink (len bytes, untagged): learnt,
 * forwarded or flooded to the switch's ports, on the uplink's worker's thread. hdr (NULL: an
 * all-zero one): the tap's virtio-net header of the frame, csum_start and hdr_len counted from
 * the untagged frame's first byte (an offload it asks for is checked as a guest's).
 */
void switch_uplink_send(struct vnet_backend *be, const struct virtio_net_hdr_v1 *hdr,
			const uint8_t *frame, size_t len);

/*
 * What the FDB holds for a switch port and refused it (switch_port_counters()). Not the
 * per-frame counters of switch_port_stats(): those stay plain increments of the port's thread
 * (an atomic store per frame costs the forwarding path instructions).
 */
struct switch_port_counters {
	uint64_t cache_misses;	  /* source or destination lookups the flow cache missed */
	uint64_t macs;		  /* MACs the FDB holds behind the port now */
	uint64_t max_macs, learn_rate; /* its limits */
	uint64_t mac_limit_hits;  /* new source MACs that found the port at max_macs */
	uint64_t learn_rate_hits; /* new source MACs not learned: over learn_rate */
	uint64_t spoofed;	  /* frames dropped by port security: a source MAC not the port's */
	uint64_t port_security;	  /* 1: on (a gauge) */
	uint64_t arp_nd_spoofed;  /* ARP / ND frames (port security) claiming a MAC not the port's */
	uint64_t flood_rate;	  /* storm control's limit, floods a second (0: none) */
	uint64_t storm_dropped;	  /* floods dropped over flood_rate */
	uint64_t ips;		  /* entries in its ips= list (0: no IP anti-spoofing) */
	uint64_t ip_spoofed;	  /* frames dropped by IP anti-spoofing */
	uint64_t access;	  /* 1: an access port (vlan=N; a gauge) */
	uint64_t tagged_dropped;  /* VLAN-tagged frames an access port's guest sent: dropped */
	uint64_t bad_offload_hdr; /* frames dropped: an offload header the frame contradicts */
	uint64_t offload_passed;  /* frames delivered to it with their offload (GSO, NEEDS_CSUM) */
	uint64_t soft_segments;	  /* segments made for it in software (it lacks the TSO asked) */
	uint64_t soft_csums;	  /* checksums completed for it in software (it lacks GUEST_CSUM) */
};

/*
 * switch_port_counters() - the port's counters, from any thread while its worker runs (each
 * value torn-free, stat_atomic.h); not while the port may be detached.
 */
void switch_port_counters(const struct vnet_backend *be, struct switch_port_counters *out);

/* switch_port_crossed() - copies of the port's frames queued for another worker's ports. */
uint64_t switch_port_crossed(const struct vnet_backend *be);

/* switch_port_queued() - packets waiting in the port's queue for guest RX buffers. */
unsigned switch_port_queued(const struct vnet_backend *be);

/* Ops table of the ports of a one-worker switch ("switch"); switch_port_ops() picks it. */
extern const struct vnet_backend_ops switch_backend_ops;

#endif

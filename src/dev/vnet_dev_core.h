/* SPDX-License-Identifier: MIT */
/* vnet_dev_core.h - struct vnet_dev and its inline helpers: the lowest header of the device model. */
#ifndef VNETD_VNET_DEV_CORE_H
#define VNETD_VNET_DEV_CORE_H

/*
 * Every file of the device model includes this; it declares no function of any of them (each
 * has its own header: net_rx.h, net_tx.h, net_ctrl.h, coal_policy.h, notify.h, queue_view.h,
 * migration_stream.h), so that including it never makes a file depend on a file above it.
 */

#include "dev/vnet_dev_types.h"
#include "virtq/virtq.h"
#include "lib/iov.h"
#include "dev/rss/rss_cmd.h"
#include "lib/stat_atomic.h"
#include "lib/virtio_net_defs.h"

/* One queue of the device. */
struct vnet_backend;

struct vnet_queue {
	struct virtqueue vq;
	enum vnet_queue_kind kind;
	bool enabled;
	struct coal_state coal;
	struct coal_adapt adapt;    /* adaptive coalescing (adapt.on: set_by "adaptive") */
	struct vnet_guard_state guard;
	uint64_t timer_deadline_ns; /* what the queue's timer is armed for; 0: disarmed */
	uint64_t coal_deadline_ns;  /* coalescing deadline; 0: none */
	uint64_t tx_deadline_ns;    /* VNET_TX_TIMER: when the waiting TX batch runs; 0: none */
	uint64_t rate_deadline_ns;  /* TX over its rate: when the bucket has refilled; 0: none */
	uint32_t rx_unflushed;      /* RX packets pushed but not yet published */
	bool tx_blocked;            /* backend said -EAGAIN (the chain went back): wait for resume */
	bool rx_waiting;            /* a packet waited for buffers: tell the backend on kick */
	bool scheduled;             /* waiting in the owner's run queue (env->schedule) */
	bool polling;               /* poll mode: scheduled to look again, kicks kept off */
	bool relook;                /* tx_relook: scheduled to look once more (not a yield) */
	uint64_t poll_until_ns;     /* poll mode: TX keeps polling until then (last work + window) */
	/* Adaptive poll mode (net_tx.c, --poll-us auto): the window now (grown by kicks that came
	 * soon after the queue asked for them, halved by ones that came late), when the queue last
	 * looked (poll mode), when it last asked for kicks (0: it polls, or was just kicked), and
	 * its credit for polling an empty ring (dev->poll_budget_ns for each packet it moved). */
	uint32_t poll_win_ns;
	uint64_t poll_look_ns;
	uint64_t idle_ns;
	int64_t poll_credit_ns;
	/* ... and when a run last found work, the average gap between such runs while it polled,
	 * and how many wake-ups until a kick may grow a window its long gaps closed (a probe). */
	uint64_t poll_found_ns;
	uint32_t poll_gap_ns;
	uint8_t poll_probe;
	bool reinit;                /* rings set up while disabled: virtio re-enable on enable */
	bool state_loaded;          /* coalescing came with a migration: kept at the next enable */
	bool resume_notify;         /* migrated with completions owed: notify once when enabled */
	struct vnet_queue_stats stats; /* written with stat_add() (stat_atomic.h) */
	struct vnet_view_pub pub;      /* settings for readers on other threads (queue_view.c) */
	/* Scratch for the chain being processed: the device's one (vnet_dev_create), shared by its
	 * queues, as a device works on one chain at a time and never keeps one across events. */
	struct vq_chain *chain;
	/* TX: the backend handle its packets go to: the device's, or the queue pair's own (a
	 * multi-queue tap's queue, vnet_dev_attach_queue_backend()). */
	struct vnet_backend *be;
};

#define VNET_HDR_LEN 12            /* struct virtio_net_hdr_v1 */
#define VNET_HDR_HASH_LEN 20       /* struct virtio_net_hdr_v1_hash (HASH_REPORT) */
#define VNET_MAX_FRAME (65536 + 14 + 4) /* largest frame (GSO) we move */
#define VNET_RX_MAX_BUFFERS 256    /* mergeable buffers one packet may use */
#define VNET_TX_BATCH 64           /* TX chains per used-index publication */
#define VNET_RX_PUBLISH_BATCH 64   /* RX packets published at once, at most */

/* Guest offload bits CTRL_GUEST_OFFLOADS may switch. */
#define VNET_GUEST_OFFLOAD_MASK                                                                    \
	(BIT_ULL(VIRTIO_NET_F_GUEST_CSUM) | BIT_ULL(VIRTIO_NET_F_GUEST_TSO4) |                     \
	 BIT_ULL(VIRTIO_NET_F_GUEST_TSO6) | BIT_ULL(VIRTIO_NET_F_GUEST_ECN) |                      \
	 BIT_ULL(VIRTIO_NET_F_GUEST_UFO) | BIT_ULL(VIRTIO_NET_F_GUEST_USO4) |                      \
	 BIT_ULL(VIRTIO_NET_F_GUEST_USO6))

/* A coalescing setting for every queue of one kind, and who made it. */
struct vnet_kind_coal {
	bool set;
	struct coal_params params;
	enum coal_setter who;
};

/* Where an RX packet's header lives while its buffers are being filled. */
struct vnet_rx_slot {
	uint16_t head;
	uint32_t len;
};

#define VNET_RX_CACHE_IOV 1024 /* writable iovecs reserved buffers may hold (IOV_MAX for readv) */

/*
 * RX buffers popped from queue 0 for a backend that reads straight into guest memory, not
 * used yet. They are always the last chains popped (a suffix), so a stop can give them back.
 */
struct vnet_rx_cache {
	unsigned first, n;       /* chains held: slots [first, first + n) */
	unsigned iov_first, niov; /* iovecs over them, in order: iov[iov_first, + niov) */
	size_t bytes;            /* their writable bytes */
	bool short_valid;        /* the last fill found too few buffers at avail index ... */
	uint16_t short_avail;    /* ... this one: fall back until the driver posts more */
	uint16_t head[VNET_RX_MAX_BUFFERS];
	uint32_t cap[VNET_RX_MAX_BUFFERS];
	uint16_t niov_of[VNET_RX_MAX_BUFFERS];
	struct iovec iov[VNET_RX_CACHE_IOV];
};

/* RSS and hash reporting: net_ctrl.c sets it (RSS_CONFIG, HASH_CONFIG), net_rx.c uses it. */
struct vnet_rss {
	struct rss_config cfg;
	bool steer;  /* RSS_CONFIG with hash types: the indirection table picks the RX queue */
	bool report; /* HASH_REPORT negotiated, hash types set: the header carries the hash */
	/* struct rss_view for readers on other threads: seqcount, words (net_ctrl.c) */
	uint32_t pub_seq;
	uint64_t pub_w[RSS_VIEW_WORDS];
	/* cfg.key unrolled (36 KB): last, as only RSS_CONFIG/HASH_CONFIG with a key write it, and
	 * every reset writes cfg and the view (struct vnet_dev says why that matters) */
	struct toeplitz_key key;
};

struct vnet_dev {
	struct vnet_dev_params params;
	const struct vnet_env_ops *env;
	void *env_ctx;
	const struct vnet_backend_ops *be_ops;
	struct vnet_backend *be;
	uint16_t be_pairs; /* active pairs the backend was last told (set_pairs; 0: not yet) */
	uint64_t offered;
	uint64_t features;
	uint64_t guest_offloads;   /* current GUEST_* offloads (CTRL_GUEST_OFFLOADS) */
	unsigned hdr_len;          /* guest header: 20 with HASH_REPORT, 12 with VERSION_1 or
				    * MRG_RXBUF, else 10 */
	uint8_t mac[6];
	uint16_t active_pairs;
	bool rss_on;               /* rss.steer || rss.report: the receive path hashes */
	unsigned nqueues;
	struct vnet_queue *queues; /* nqueues of them (before the device in its mapping) */
	bool rx_dirty;             /* env->rx_dirty() called, vnet_dev_rx_flush() not yet */
	struct dirty_log *dirty_log; /* live migration: log guest writes here; NULL: off */
	struct vnet_rx_filter filter;
	/* Last setting for all queues of a kind since reset (TX_SET/RX_SET or host), [0] RX [1] TX. */
	struct vnet_kind_coal last[2];
	/* Host defaults (command line, or vnetctl coalesce for all queues of a kind); they
	 * survive a reset only with params.coal_persist. */
	struct vnet_kind_coal host[2];
	bool adaptive[2];          /* adaptive mode for every queue of a kind, [0] RX [1] TX */
	struct vnet_stall_guard guard;
	/* Rate limits (net_rate.c): guest TX (shared by the TX queues) and RX; set on the device's
	 * thread or with it parked. */
	struct rate_bucket tx_rate, rx_rate;
	uint64_t poll_ns;          /* poll mode window (vnet_dev_set_poll()); 0: kicks only */
	bool poll_auto;            /* adaptive: poll_ns is the largest window (net_tx.c) */
	uint32_t poll_budget_ns;   /* adaptive: ns of polling an empty ring each packet pays for */
	/* The queues this device view runs (rx flush, TX resume): all, but for a port spread over
	 * workers, where each worker's view (vnet_dev_lane.c) runs its own pairs. */
	uint64_t qmask;
	uint16_t tx_pair;          /* the pair of the TX queue being processed (net_tx.c) */
	bool lane;                 /* a lane view (vnet_dev_lane_create()): shares dev's queues */
	/* RX: the header of the packet being placed (not on the stack: no stack-protector canary
	 * in the receive path); its hash fields are set only with rss_on, cleared at reset. */
	struct virtio_net_hdr_v1_hash rx_hdr;
	struct vnet_rss rss;       /* settings and view written at reset; the key is scratch */
	/*
	 * Scratch from rss.key to the end (~75 KB), written only by moving packets (or RSS_CONFIG).
	 * A device lives in fresh anonymous pages (vnet_dev_create()), and a page never written
	 * costs no memory: nothing written by creation, a reset, negotiation or a queue's start
	 * may come after rss.key, or every idle port pays a page for it. With one queue pair the
	 * queues and the fields before rss.key take two pages.
	 */
	struct vnet_rx_slot rx_slots[VNET_RX_MAX_BUFFERS];
	/* RX: the frame's Ethernet header (+ IPv4 addresses and ports to pick a queue) when it is
	 * not contiguous in the backend's buffers (not on the stack either). */
	uint8_t rx_eth[14 + 24];
	uint8_t rss_buf[TOEPLITZ_PARSE_MAX]; /* a frame's headers to hash, when not contiguous */
	struct vnet_rx_cache rx_cache;
	/* TX: the checked copy of the header of the packet being sent (not on the stack: no
	 * stack-protector canary in the TX loop). */
	struct virtio_net_hdr_v1 tx_hdr;
	/* TX burst (a backend with transmit_burst): the frames of one-buffer chains taken so far in
	 * this batch, and their heads, handed over and completed together (net_tx.c). */
	struct vnet_frame tx_burst[VNET_TX_BATCH];
	uint16_t tx_burst_head[VNET_TX_BATCH];
	/* ... and their checked headers, for a backend with burst_offloads */
	struct virtio_net_hdr_v1 tx_burst_hdr[VNET_TX_BATCH];
	struct vq_chain chain;     /* chain scratch of every queue (vnet_queue.chain points here) */
};

_Static_assert(VNET_MAX_QUEUES <= 64, "a queue mask fits 64 bits");

/* dev_now() - the injected clock. */
static inline uint64_t dev_now(const struct vnet_dev *dev)
{
	return dev->env->now_ns(dev->env_ctx);
}

/* queue_poll_forget() - the adaptive poll state (net_tx.c) starts afresh: no window, credit,
 * gap average or probe count (a reset, a stop, another poll mode). */
static inline void queue_poll_forget(struct vnet_queue *q)
{
	q->poll_win_ns = 0;
	q->poll_look_ns = q->idle_ns = q->poll_found_ns = 0;
	q->poll_credit_ns = 0;
	q->poll_gap_ns = q->poll_probe = 0;
}

/* dev_queue() - queue qidx, or NULL if out of range. */
static inline struct vnet_queue *dev_queue(struct vnet_dev *dev, unsigned qidx)
{
	return qidx < dev->nqueues ? &dev->queues[qidx] : NULL;
}

/* dev_has() - whether feature bit `bit` was negotiated. */
/*
 * mac_is_group() - a multicast or broadcast address (I/G bit set). The device's own address is a
 * station address: a group one would let a port-secured switch port (mac-change=on) send from,
 * and teach the FDB, a group address. Every way a MAC reaches dev->mac checks this.
 */
static inline bool mac_is_group(const uint8_t mac[6])
{
	return mac[0] & 1;
}

static inline bool dev_has(const struct vnet_dev *dev, unsigned bit)
{
	return dev->features & BIT_ULL(bit);
}

/* dev_adapt_counters() - what the adaptive controller of q looks at: its counters and the
 * packets and bytes of its pair's other queue (rx N <-> tx N+1). */
static inline struct coal_adapt_counters dev_adapt_counters(const struct vnet_dev *dev,
							    const struct vnet_queue *q)
{
	unsigned i = q->vq.index, peer = (i & 1u) ? i - 1u : i + 1u;
	struct coal_adapt_counters c = {q->stats.packets, q->stats.bytes, q->stats.notifications, 0,
					0};

	if (peer < dev->nqueues && dev->queues[peer].kind != VNET_QUEUE_CTRL) {
		c.peer_packets = dev->queues[peer].stats.packets;
		c.peer_bytes = dev->queues[peer].stats.bytes;
	}
	return c;
}

/*
 * Spread flows over the active queue pairs by a hash of the IPv4 addresses and ports. FNV-1a's
 * low bits depend only on the inputs' low bits, so without the final mix (murmur3's) every flow
 * whose ports share a parity - Linux gives connect() even ports - would land on one of 2 pairs.
 */
static inline __attribute__((always_inline)) unsigned rx_pick_pair(const struct vnet_dev *dev,
								    const uint8_t *frame, size_t len)
{
	uint32_t h = 2166136261u;

	if (dev->active_pairs <= 1 || len < 14 + 24 || frame[12] != 0x08 || frame[13] != 0x00)
		return 0;
	for (size_t i = 14 + 12; i < 14 + 24; i++)
		h = (h ^ frame[i]) * 16777619u;
	h ^= h >> 16;
	h *= 0x85ebca6bu;
	h ^= h >> 13;
	h *= 0xc2b2ae35u;
	h ^= h >> 16;
	return h % dev->active_pairs;
}

/* dev_queue_usable() - enabled, started and not broken. */
/*
 * dev_sync_pairs() - tell the backend the driver's active queue pairs if they changed since it
 * was last told (backend.h set_pairs); after every change of active_pairs, and when a queue is
 * enabled (a state load may have set them).
 */
static inline void dev_sync_pairs(struct vnet_dev *dev)
{
	if (dev->be_ops && dev->be_ops->set_pairs && dev->be_pairs != dev->active_pairs) {
		dev->be_pairs = dev->active_pairs;
		dev->be_ops->set_pairs(dev->be, dev->active_pairs);
	}
}

static inline bool dev_queue_usable(const struct vnet_queue *q)
{
	return q->enabled && q->vq.started && !q->vq.broken;
}

/*
 * vnet_dev_queue() - the live queue qidx (NULL if out of range): for the device model's own files
 * and white-box tests. Other layers use copies (vnet_dev_queue_snapshot(), vnet_dev_ring_info())
 * and the ring calls (vnet_dev_ring_set_*()).
 */
struct vnet_queue *vnet_dev_queue(struct vnet_dev *dev, unsigned qidx);

#endif

/* SPDX-License-Identifier: MIT */
/* vnet_dev_types.h - the device model's shared types: queues, parameters, environment ops. */
#ifndef VNETD_VNET_DEV_TYPES_H
#define VNETD_VNET_DEV_TYPES_H

/*
 * Types and constants only, no function: the lowest header of the device model, included by
 * its public header vnet_dev.h and by every file of the model (through vnet_dev_core.h), so
 * that those files never include the header of vnet_dev.c, the file above them.
 */

#include <stdbool.h>
#include <stdint.h>

#include "dev/backend.h"
#include "dev/coal/coal_adaptive.h"
#include "dev/coal/coalesce.h"
#include "lib/lat_hist.h"
#include "dev/rate_limit.h"

#define VNET_MAX_QUEUE_PAIRS 16
#define VNET_MAX_QUEUES (2 * VNET_MAX_QUEUE_PAIRS + 1)
#define VNET_LATENESS_BUCKETS 14 /* histogram upper bounds, vnet_lateness_bounds_us[] */
#define VNET_MAC_TABLE_SIZE 64   /* MAC filter entries kept per table (more: overflow) */
#define VNET_STATE_MAX 8192      /* bytes of serialised device state, at most (migration_stream.c) */

/* Receive filter set by CTRL_RX and CTRL_MAC (a table over the size: overflow, n 0). */
struct vnet_rx_filter {
	bool promisc, allmulti, alluni, nomulti, nouni, nobcast;
	unsigned n_uc, n_mc;
	bool uc_overflow, mc_overflow;
	uint8_t uc[VNET_MAC_TABLE_SIZE][6];
	uint8_t mc[VNET_MAC_TABLE_SIZE][6];
};

enum vnet_queue_kind { VNET_QUEUE_RX, VNET_QUEUE_TX, VNET_QUEUE_CTRL };

enum vnet_tx_mode {
	VNET_TX_KICK,  /* process TX as soon as the driver kicks */
	VNET_TX_TIMER, /* on a kick, wait tx_timer_usecs and then process the batch */
};

/* Counters of one queue, read by the control socket. */
struct vnet_queue_stats {
	uint64_t packets;
	uint64_t bytes;
	uint64_t kicks;
	uint64_t notifications;       /* calls signalled */
	uint64_t suppressed;          /* due, but the driver suppressed notifications */
	uint64_t held;                /* completions whose notification coalescing held back */
	uint64_t timer_notifications; /* notifications sent when a coalescing deadline fired */
	uint64_t dropped;             /* packets dropped (too big, broken chain, backend error) */
	uint64_t rx_no_buffers;       /* times a packet waited for guest RX buffers */
	uint64_t yields;              /* runs that stopped at the budget with work left */
	uint64_t polls;               /* poll mode: runs that found the ring empty and kept polling */
	uint64_t poll_ns;             /* poll mode: ns the queue spent polling (a window open) */
	uint64_t rx_direct;           /* packets the backend read straight into guest buffers */
	uint64_t stop_notifications;  /* held completions signalled because the queue stopped */
	/* Early notifications of the stall guard (where coalescing would have held), by reason. */
	uint64_t early_idle;          /* TX: the driver posted nothing for stall-idle-usecs */
	uint64_t early_ring;          /* the ring nearly exhausted (RX buffers, TX descriptors) */
	uint64_t early_bytes;         /* bytes held reached stall-bytes */
	/* Rate limits (net_rate.c): TX runs that stopped for tokens, RX packets dropped over it. */
	uint64_t rate_waits;
	uint64_t rate_dropped;
	/* Lateness of deadline-driven notifications (ns), since the last reset: log-spaced
	 * buckets for percentiles (read with lat_hist_bucket()), and the exporter's fixed
	 * buckets (vnet_queue_lateness(); last: above all) with the sum. */
	struct lat_hist lateness;
	uint64_t lateness_bucket[VNET_LATENESS_BUCKETS + 1];
	uint64_t lateness_sum_ns;
};

/* Cumulative lateness histogram of one queue (Prometheus semantics: bucket i counts <= bound). */
struct vnet_lateness_hist {
	uint64_t cumulative[VNET_LATENESS_BUCKETS]; /* samples <= vnet_lateness_bounds_us[i] */
	uint64_t count;                             /* every sample (the +Inf bucket) */
	uint64_t sum_ns;
};

/* Upper bounds of the lateness buckets, in microseconds, ascending (defined in notify.c). */
extern const uint32_t vnet_lateness_bounds_us[VNET_LATENESS_BUCKETS];

/* Host-side environment injected into the device: clock, timers, notifications. */
struct vnet_env_ops {
	uint64_t (*now_ns)(void *ctx);
	/* Signal the used-buffer notification (call fd) of queue qidx. */
	void (*notify)(void *ctx, unsigned qidx);
	/* Arm queue qidx's one-shot timer at absolute time deadline_ns (CLOCK_MONOTONIC); 0 disarms. */
	void (*arm_timer)(void *ctx, unsigned qidx, uint64_t deadline_ns);
	/*
	 * Queue qidx stopped after its budget with work left: call vnet_dev_queue_run() for it
	 * later, after everything else that is ready (fairness). Called at most once until then;
	 * false: it could not be queued (the work then waits for the next kick). NULL: likewise.
	 */
	bool (*schedule)(void *ctx, unsigned qidx);
	/* Queue qidx broke (the driver violated the ring format): signal its error fd. May be NULL. */
	void (*queue_error)(void *ctx, unsigned qidx);
	/*
	 * The device holds received packets the driver cannot see yet: call vnet_dev_rx_flush()
	 * before sleeping. Called once until that flush. NULL: the owner flushes after every event.
	 */
	void (*rx_dirty)(void *ctx);
};

/* Work one queue does before it yields (the kernel's vhost-net uses the same weights). */
#define VNET_BUDGET_PACKETS 256
#define VNET_BUDGET_BYTES (512u * 1024u)
/* ... and of descriptors walked: a chain of 1024 tiny pieces costs what 1024 packets cost. */
#define VNET_BUDGET_DESCS 1024u
#define VNET_BUDGET_CTRL 64 /* control commands per run */

/*
 * Stall guard: notify before coalescing's deadline when holding would stall the driver (the
 * spec lets a device notify more often than asked). A 0 threshold turns that reason off.
 */
struct vnet_stall_guard {
	bool on;
	uint32_t bytes;      /* bytes completed since the last notification */
	uint32_t idle_usecs; /* TX: the driver posted nothing for this long since a completion */
};

#define VNET_STALL_BYTES_DEFAULT 0u 
#define VNET_STALL_IDLE_USECS_DEFAULT 2000u

/* Static configuration of a device (from the command line). */
struct vnet_dev_params {
	uint8_t mac[6];
	uint16_t queue_pairs;    /* 1 .. VNET_MAX_QUEUE_PAIRS */
	uint16_t mtu;            /* 0: do not offer VIRTIO_NET_F_MTU */
	uint64_t features_mask;  /* feature bits the operator allows (all ones by default) */
	enum vnet_tx_mode tx_mode;
	uint32_t tx_timer_usecs;
	/*
	 * tx-mode kick: a TX run that moved packets looks at its ring once more, on the owner's
	 * next round, before it asks for kicks (net_tx.c). Port specs set it; off (and with
	 * tx-mode timer, which batches on its timer), every run that finds its ring drained asks
	 * for kicks at once.
	 */
	bool tx_relook;
	bool host_coal_rx_set, host_coal_tx_set; /* host defaults given on the command line */
	struct coal_params host_coal_rx, host_coal_tx;
	/*
	 * Host defaults survive a device reset (operator opt-in; the spec zeroes every parameter
	 * at reset, so this is off by default and the command line requires it with host values).
	 */
	bool coal_persist;
	struct vnet_stall_guard stall_guard; /* zero: off (the command line defaults it on) */
	bool rx_adaptive, tx_adaptive;       /* adaptive coalescing for every RX / TX queue */
	bool rss;                            /* offer VIRTIO_NET_F_RSS and HASH_REPORT */
	struct rate_params tx_rate, rx_rate; /* guest TX / RX rate limits (mbit 0: none) */
};

/* Per-queue state of the stall guard. */
struct vnet_guard_state {
	uint64_t descs;        /* TX: descriptors completed, ever (net_tx.c counts them) */
	uint64_t seen_bytes;   /* stats.bytes at the last completion */
	uint64_t seen_descs;   /* descs at the last completion */
	uint64_t held_bytes;   /* bytes completed since the last notification */
	uint64_t held_descs;   /* TX: descriptors completed since the last notification */
	uint64_t last_done_ns; /* when the last completion happened */
	uint64_t probe_ns;     /* a notification whose answer (the driver's next TX) is awaited */
	bool probe_early;      /* ... sent early by an idle rule (else at the deadline) */
	uint8_t backoff;       /* idle rules wait idle-usecs << backoff: unanswered early ones */
	uint8_t answered;      /* answers in a row since the last unanswered early notification */
};

/*
 * A queue's settings as a reader on another thread sees them (vnet_queue_view_read()): one
 * consistent set, published by the thread that changed them (queue_view.c).
 */
struct vnet_queue_view {
	enum vnet_queue_kind kind; /* changes with the negotiated features (CTRL_VQ, MQ) */
	bool enabled, started, broken;
	struct coal_params coal;
	enum coal_setter set_by;
	bool adaptive;                     /* adapt.on */
	enum coal_adapt_state adapt_state;
	unsigned adapt_level;
	uint64_t adapt_changes, adapt_windows;
};

#define VNET_VIEW_WORDS 4

/* The published view: packed words under a seqcount (odd while being written). */
struct vnet_view_pub {
	uint32_t seq;
	uint64_t w[VNET_VIEW_WORDS];
};

/* One queue of the device: defined in vnet_dev_core.h, private to src/dev/. */
struct vnet_queue;

#endif

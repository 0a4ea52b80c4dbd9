/* vnet_dev.h - the virtio-net device model: features, config space, queues, RX/TX, control queue. */
#ifndef VNETD_VNET_DEV_H
#define VNETD_VNET_DEV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "backend.h"
#include "coal_adaptive.h"
#include "coalesce.h"
#include "guest_mem.h"
#include "lat_hist.h"
#include "virtqueue.h"

#define VNET_MAX_QUEUE_PAIRS 16
#define VNET_MAX_QUEUES (2 * VNET_MAX_QUEUE_PAIRS + 1)
#define VNET_LATENESS_BUCKETS 14 /* histogram upper bounds, vnet_lateness_bounds_us[] */
#define VNET_MAC_TABLE_SIZE 64   /* MAC filter entries kept per table (more: overflow) */

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
	uint64_t rx_direct;           /* packets the backend read straight into guest buffers */
	uint64_t stop_notifications;  /* held completions signalled because the queue stopped */
	/* Early notifications of the stall guard (where coalescing would have held), by reason. */
	uint64_t early_idle;          /* TX: the driver posted nothing for stall-idle-usecs */
	uint64_t early_ring;          /* the ring nearly exhausted (RX buffers, TX descriptors) */
	uint64_t early_bytes;         /* bytes held reached stall-bytes */
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

/* Upper bounds of the lateness buckets, in microseconds, ascending. */
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
	bool host_coal_rx_set, host_coal_tx_set; /* host defaults given on the command line */
	struct coal_params host_coal_rx, host_coal_tx;
	/*
	 * Host defaults survive a device reset (operator opt-in; the spec zeroes every parameter
	 * at reset, so this is off by default and the command line requires it with host values).
	 */
	bool coal_persist;
	struct vnet_stall_guard stall_guard; /* zero: off (the command line defaults it on) */
	bool rx_adaptive, tx_adaptive;       /* adaptive coalescing for every RX / TX queue */
};

/* Per-queue state of the stall guard. */
struct vnet_guard_state {
	uint64_t descs;        /* TX: descriptors completed, ever (net_tx.c counts them) */
	uint64_t seen_bytes;   /* stats.bytes at the last completion */
	uint64_t seen_descs;   /* descs at the last completion */
	uint64_t held_bytes;   /* bytes completed since the last notification */
	uint64_t held_descs;   /* TX: descriptors completed since the last notification */
	uint64_t last_done_ns; /* when the last completion happened */
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

/* One queue of the device. */
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
	uint32_t rx_unflushed;      /* RX packets pushed but not yet published */
	bool tx_blocked;            /* backend said -EAGAIN (the chain went back): wait for resume */
	bool rx_waiting;            /* a packet waited for buffers: tell the backend on kick */
	bool scheduled;             /* waiting in the owner's run queue (env->schedule) */
	bool reinit;                /* rings set up while disabled: virtio re-enable on enable */
	bool state_loaded;          /* coalescing came with a migration: kept at the next enable */
	bool resume_notify;         /* migrated with completions owed: notify once when enabled */
	struct vnet_queue_stats stats; /* written with stat_add() (stat_atomic.h) */
	struct vnet_view_pub pub;      /* settings for readers on other threads (queue_view.c) */
	/* Scratch for the chain being processed: the device's one (vnet_dev_create), shared by its
	 * queues, as a device works on one chain at a time and never keeps one across events. */
	struct vq_chain *chain;
};

struct vnet_dev;
struct virtio_net_hdr_v1;

/* vnet_dev_create() - a device in reset state; NULL on bad params (logged). */
struct vnet_dev *vnet_dev_create(const struct vnet_dev_params *params, const struct vnet_env_ops *env,
				 void *env_ctx);

/* vnet_dev_destroy() - free the device (does not touch the backend). */
void vnet_dev_destroy(struct vnet_dev *dev);

/* vnet_dev_attach_backend() - set the packet backend (NULL detaches; link goes down). */
void vnet_dev_attach_backend(struct vnet_dev *dev, const struct vnet_backend_ops *ops,
			     struct vnet_backend *be);

/* vnet_dev_offered_features() - device feature bits offered to the driver. */
uint64_t vnet_dev_offered_features(const struct vnet_dev *dev);

/* vnet_dev_set_features() - driver's accepted features; -1 if not a valid subset. */
int vnet_dev_set_features(struct vnet_dev *dev, uint64_t features);

/* vnet_dev_features() - negotiated features. */
uint64_t vnet_dev_features(const struct vnet_dev *dev);

/* vnet_dev_num_queues() - queues the device has: 2 * pairs + 1 (control queue last). */
unsigned vnet_dev_num_queues(const struct vnet_dev *dev);

/* vnet_dev_ctrl_queue_index() - index of the control queue under the negotiated features. */
unsigned vnet_dev_ctrl_queue_index(const struct vnet_dev *dev);

/* vnet_dev_queue() - queue qidx (NULL if out of range); transports set vq.num/addrs/last_avail. */
struct vnet_queue *vnet_dev_queue(struct vnet_dev *dev, unsigned qidx);

/* vnet_dev_queue_start() - rings are configured: translate them; 0 or -1 (logged). */
int vnet_dev_queue_start(struct vnet_dev *dev, unsigned qidx, const struct guest_mem *mem);

/*
 * vnet_dev_queue_stop() - stop a queue (GET_VRING_BASE): publish and signal what the driver can
 * see, give back a chain popped but not sent; returns the next avail index.
 */
uint16_t vnet_dev_queue_stop(struct vnet_dev *dev, unsigned qidx);

/*
 * vnet_dev_queue_enable() - enable or disable a queue. Disabling signals held completions. A
 * queue whose rings were set up while disabled gets the last TX_SET/RX_SET (0 if none); one
 * re-enabled on the same rings keeps its own parameters.
 */
void vnet_dev_queue_enable(struct vnet_dev *dev, unsigned qidx, bool enable);

/* vnet_dev_kick() - the driver kicked queue qidx: process it. */
void vnet_dev_kick(struct vnet_dev *dev, unsigned qidx);

/* vnet_dev_queue_run() - continue queue qidx's work after env->schedule() (one budget). */
void vnet_dev_queue_run(struct vnet_dev *dev, unsigned qidx);

/* vnet_dev_timer_expired() - queue qidx's timer (coalescing deadline or TX batch) fired. */
void vnet_dev_timer_expired(struct vnet_dev *dev, unsigned qidx);

/*
 * vnet_dev_receive() - deliver one packet (12-byte virtio_net_hdr_v1 first) to the guest.
 * Returns 1 delivered (or dropped and counted), 0 no guest buffers now: keep the packet, the
 * backend's rx_resume() is called when the guest posts buffers. Delivered packets become
 * visible to the guest every VNET_RX_PUBLISH_BATCH packets and at vnet_dev_rx_flush() (the owner
 * flushes after each round of events when env->rx_dirty asked it to).
 */
int vnet_dev_receive(struct vnet_dev *dev, const struct iovec *iov, unsigned iovcnt);

/*
 * vnet_dev_receive_frame() - the same for a bare frame of frame_len bytes starting at byte off
 * of iov, with the header hdr (NULL: all zero — no checksum or GSO information).
 */
int vnet_dev_receive_frame(struct vnet_dev *dev, const struct virtio_net_hdr_v1 *hdr,
			   const struct iovec *iov, unsigned iovcnt, size_t off, size_t frame_len);

/*
 * vnet_dev_rx_reserve() - guest RX buffers for one packet the backend will write straight into
 * (12-byte virtio_net_hdr_v1 first, then the frame), holding at least max_len bytes. Returns
 * the iovec count (*iov points at them), 0 when the guest has no buffers (rx_resume() is
 * called once it posts some), or -1 when this device cannot take it that way now (legacy
 * header, several active queue pairs, too few buffers for max_len): use vnet_dev_receive().
 */
int vnet_dev_rx_reserve(struct vnet_dev *dev, size_t max_len, const struct iovec **iov);

/*
 * vnet_dev_rx_commit() - the backend wrote a packet of len bytes (header included) into the
 * reserved buffers: complete the ones it used; the rest stay reserved for the next packet. A
 * len larger than the reservation was truncated by the backend and is dropped (counted).
 */
void vnet_dev_rx_commit(struct vnet_dev *dev, size_t len);

/* vnet_dev_rx_flush() - publish received packets and decide notifications; call after a burst. */
void vnet_dev_rx_flush(struct vnet_dev *dev);

/* vnet_dev_tx_resume() - the backend can take packets again after -EAGAIN. */
void vnet_dev_tx_resume(struct vnet_dev *dev);

/* vnet_dev_config_read() - read device config space; returns bytes copied (rest zero-filled). */
uint32_t vnet_dev_config_read(const struct vnet_dev *dev, uint32_t offset, void *buf, uint32_t len);

/* vnet_dev_config_write() - driver config write: only mac (without CTRL_MAC_ADDR); 0 or -1. */
int vnet_dev_config_write(struct vnet_dev *dev, uint32_t offset, const void *buf, uint32_t len);

/*
 * vnet_dev_reset() - device reset: started queues stop (held completions signalled), features
 * and every coalescing parameter zeroed (host defaults come back only with coal_persist).
 */
void vnet_dev_reset(struct vnet_dev *dev);

/*
 * vnet_dev_ctrl_execute() - run one control command (class, command, payload in `in`); writes
 * command output (VQ_GET) into out[0..out_len) and sets *out_written. Returns the ack byte.
 */
uint8_t vnet_dev_ctrl_execute(struct vnet_dev *dev, const uint8_t *in, size_t in_len, uint8_t *out,
			      size_t out_len, size_t *out_written);

/*
 * vnet_dev_host_coalesce() - host-side coalescing for queue qidx, or every queue of `kind` when
 * qidx < 0. 0, or -1 for a bad queue.
 */
int vnet_dev_host_coalesce(struct vnet_dev *dev, int qidx, enum vnet_queue_kind kind,
			   const struct coal_params *params);

/*
 * vnet_dev_host_adaptive() - switch adaptive coalescing on or off for queue qidx, or for every
 * queue of `kind` when qidx < 0 (then also for queues after a reset or re-enable). Switching
 * off gives the queue the last setting for its kind since reset, else 0. 0 or -1.
 */
int vnet_dev_host_adaptive(struct vnet_dev *dev, int qidx, enum vnet_queue_kind kind, bool on);

/* vnet_dev_adaptive_mode() - whether every queue of kind starts adaptive (port setting). */
bool vnet_dev_adaptive_mode(const struct vnet_dev *dev, enum vnet_queue_kind kind);

/* vnet_dev_set_stall_guard() - the port's stall guard settings (take effect at once). */
void vnet_dev_set_stall_guard(struct vnet_dev *dev, const struct vnet_stall_guard *g);

/* vnet_dev_stall_guard() - the port's stall guard settings. */
const struct vnet_stall_guard *vnet_dev_stall_guard(const struct vnet_dev *dev);

/*
 * vnet_dev_set_dirty_log() - log every guest page the device writes into log from now on (live
 * migration: VHOST_F_LOG_ALL with a log base), or stop logging (NULL). The log stays the
 * caller's; it must outlive its use here.
 */
void vnet_dev_set_dirty_log(struct vnet_dev *dev, struct dirty_log *log);

/* ---- Live migration (dev_state.c) ---- */

#define VNET_STATE_MAX 8192 /* bytes of serialised device state, at most */

/*
 * vnet_dev_state_save() - serialise what the frontend cannot resend (coalescing per queue and
 * who set it, host defaults, the kind-wide settings, notifications still owed, MAC, receive
 * filter and RX mode, active queue pairs) into buf (cap >= VNET_STATE_MAX). Versioned format
 * (dev_state.c). Returns the bytes written.
 */
size_t vnet_dev_state_save(const struct vnet_dev *dev, uint8_t *buf, size_t cap);

/*
 * vnet_dev_state_load() - hostile input: validate the whole of buf (version, sizes, queue
 * count and kinds, every value) and only then apply it; the device must be stopped. Queues
 * keep the loaded coalescing through their first enable, and those that owed a notification
 * get one when they are enabled. 0, or -1 with *why set (nothing changed).
 */
int vnet_dev_state_load(struct vnet_dev *dev, const uint8_t *buf, size_t len, const char **why);

/*
 * vnet_dev_send_rarp() - announce mac (the migrated guest's) through the backend, as the guest
 * would: a broadcast RARP, so switches (vnetd's own, a bridge on a tap) learn its new port.
 * 0, or -1 without a backend.
 */
int vnet_dev_send_rarp(struct vnet_dev *dev, const uint8_t mac[6]);

/*
 * vnet_dev_restore_coal() - put back parameters queue qidx had before a vnetd restart, as set
 * by `who` (guest or host) — the driver still believes in its ethtool -C values. 0 or -1.
 */
int vnet_dev_restore_coal(struct vnet_dev *dev, unsigned qidx, const struct coal_params *params,
			  enum coal_setter who);

/* vnet_dev_rx_filter() - the receive filter and RX mode the driver set (reset: promisc only). */
const struct vnet_rx_filter *vnet_dev_rx_filter(const struct vnet_dev *dev);

/*
 * vnet_dev_restore_rx() - put back the receive filter and RX mode (f) and the MAC the driver set
 * with CTRL_MAC_ADDR_SET (mac; NULL: keep the current one) before a vnetd restart: the driver
 * does not send them again. Each applies only if the driver negotiated the feature that lets
 * it set them (CTRL_RX, CTRL_MAC_ADDR). -1 (nothing changed) for a table over
 * VNET_MAC_TABLE_SIZE or an overflowed one with entries; else 0.
 */
int vnet_dev_restore_rx(struct vnet_dev *dev, const struct vnet_rx_filter *f, const uint8_t *mac);

/* vnet_dev_coal_persist() - whether host coalescing defaults survive a device reset. */
bool vnet_dev_coal_persist(const struct vnet_dev *dev);

/* Read-only views for stats and the control socket. */
const uint8_t *vnet_dev_mac(const struct vnet_dev *dev);
bool vnet_dev_link_up(const struct vnet_dev *dev);
uint16_t vnet_dev_active_pairs(const struct vnet_dev *dev);
const char *vnet_queue_kind_name(enum vnet_queue_kind kind);

/*
 * vnet_queue_lateness() - the queue's deadline lateness as a histogram: the one reader of it.
 * Safe from any thread (relaxed loads of single-writer counters; count is the buckets' sum).
 */
void vnet_queue_lateness(const struct vnet_queue *q, struct vnet_lateness_hist *out);

/*
 * vnet_queue_view_read() - the queue's settings as last published, from any thread, without a
 * lock: a consistent set (seqcount), never a half-written one.
 */
void vnet_queue_view_read(const struct vnet_queue *q, struct vnet_queue_view *out);

/*
 * vnet_dev_publish() - publish every queue's settings view now. The device does this itself
 * whenever it changes them; for owners that changed the device by other means. Called by the
 * thread that owns the device (or while its worker is parked).
 */
void vnet_dev_publish(struct vnet_dev *dev);

#endif

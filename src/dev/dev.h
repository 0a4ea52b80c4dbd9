/* SPDX-License-Identifier: MIT */
/* dev.h - the virtio-net device model's API: features, config space, queues, RX/TX, control queue. */
#ifndef VNETD_DEV_H
#define VNETD_DEV_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/uio.h>

#include "mem/mem.h"
#include "dev/net_rate.h"
#include "dev/rss/net_rss.h"
#include "dev/net_rx.h"
#include "dev/rss/rss_cmd.h"
#include "dev/vnet_dev_queue.h"
#include "dev/vnet_dev_lane.h"
#include "dev/vnet_dev_types.h"

/*
 * The device's public API, defined in vnet_dev.c, and what the files below it define for
 * callers outside the model: the queues' lifecycle, kicks and timers (vnet_dev_queue.h), the
 * receive path's per-packet entry points (net_rx.h), the port's rate limits (net_rate.h) and
 * the lock-free settings view (queue_view.h).
 */

struct vnet_dev;
struct vnet_offload_stats;
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

#define VNET_POLL_AUTO 0xffffffffu   /* vnet_dev_set_poll(): the adaptive window */
#define VNET_POLL_AUTO_MAX_US 32u    /* its largest window: a kick's wake-up latency on a VM */
#define VNET_POLL_BUDGET_DEFAULT 2000u /* its default budget: ns of empty polling per packet */

/*
 * vnet_dev_set_poll() - poll mode: a TX queue that found work keeps polling its ring (kicks
 * off, run again through env->schedule()) until `us` microseconds pass without any; 0: off;
 * VNET_POLL_AUTO: a window each queue adapts to how soon kicks come after it asks for them, up
 * to VNET_POLL_AUTO_MAX_US, polling an empty ring for at most budget_ns per packet it moves.
 */
void vnet_dev_set_poll(struct vnet_dev *dev, unsigned us, unsigned budget_ns);

/* vnet_dev_stall_guard() - the port's stall guard settings. */
const struct vnet_stall_guard *vnet_dev_stall_guard(const struct vnet_dev *dev);

/*
 * vnet_dev_set_dirty_log() - log every guest page the device writes into log from now on (live
 * migration: VHOST_F_LOG_ALL with a log base), or stop logging (NULL). The log stays the
 * caller's; it must outlive its use here.
 */
void vnet_dev_set_dirty_log(struct vnet_dev *dev, struct dirty_log *log);

/* ---- Live migration (the format is migration_stream.c's) ---- */

/*
 * vnet_dev_state_save() - serialise what the frontend cannot resend (coalescing per queue and
 * who set it, host defaults, the kind-wide settings, notifications still owed, MAC, receive
 * filter and RX mode, active queue pairs) into buf (cap >= VNET_STATE_MAX). Versioned format
 * (migration_stream.c). Returns the bytes written.
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
/* vnet_dev_offload_stats() - the backend's offload counters; false: it keeps none. */
bool vnet_dev_offload_stats(const struct vnet_dev *dev, struct vnet_offload_stats *out);
/* vnet_dev_rss(), vnet_dev_restore_rss(): net_rss.h. */
/* (vnet_dev_rss_read(), the same from any thread without a lock: net_rss.h.) */
const char *vnet_queue_kind_name(enum vnet_queue_kind kind);

/*
 * vnet_queue_lateness() - the queue's deadline lateness as a histogram: the one reader of it.
 * Safe from any thread (relaxed loads of single-writer counters; count is the buckets' sum).
 */
void vnet_queue_lateness(const struct vnet_queue *q, struct vnet_lateness_hist *out);

/*
 * vnet_dev_publish() - publish every queue's settings view now. The device does this itself
 * whenever it changes them; for owners that changed the device by other means. Called by the
 * thread that owns the device (or while its worker is parked).
 */
void vnet_dev_publish(struct vnet_dev *dev);

/*
 * What the control plane (stats, metrics, vnetctl) reads of a queue: a copy, from any thread
 * (queue_snapshot.c). Counters each read once, torn-free; settings one consistent set.
 */
struct vnet_queue_counts {
	uint64_t packets, bytes, kicks, notifications, suppressed, held, timer_notifications;
	uint64_t dropped, rx_no_buffers, yields, polls, rx_direct, stop_notifications;
	uint64_t poll_ns; /* poll mode: time spent polling (a window open) */
	uint64_t early_idle, early_ring, early_bytes, rate_waits, rate_dropped;
};

struct vnet_queue_snapshot {
	struct vnet_queue_view view;        /* kind, enabled/started/broken, coalescing, adaptive */
	struct vnet_queue_counts counts;
	struct vnet_lateness_hist lateness; /* deadline lateness, cumulative buckets */
};

/* vnet_dev_queue_snapshot() - a copy of queue qidx; false if there is no such queue. */
bool vnet_dev_queue_snapshot(const struct vnet_dev *dev, unsigned qidx,
			     struct vnet_queue_snapshot *out);
/* vnet_dev_queue_lateness_fine() - a copy of queue qidx's fine lateness histogram. */
bool vnet_dev_queue_lateness_fine(const struct vnet_dev *dev, unsigned qidx, struct lat_hist *out);
/* vnet_dev_queue_reset_stats() - zero queue qidx's counters (workers parked, or its worker). */
void vnet_dev_queue_reset_stats(struct vnet_dev *dev, unsigned qidx);

/*
 * A queue's ring as its transport sets it up (queue_ring.c): size, addresses, layout and base
 * change only while the ring is stopped; readers get a copy.
 */
#define VNET_RING_MAX_SIZE 32768u /* the largest ring (virtq's VQ_MAX_SIZE; split: a power of 2) */

struct vnet_ring_info {
	enum vnet_queue_kind kind;
	bool enabled, started, broken;
	bool packed;                    /* the layout set for the next start */
	uint16_t num;                   /* the size set */
	uint64_t desc_addr, avail_addr, used_addr;
	bool log_used;
	uint64_t log_used_gpa;
	uint16_t run_num;               /* started: what the ring runs with (else 0 / false) */
	bool run_packed, run_in_order;
};

/* vnet_dev_ring_info() - a copy of queue qidx's ring settings and state; false: no such queue. */
bool vnet_dev_ring_info(const struct vnet_dev *dev, unsigned qidx, struct vnet_ring_info *out);
/* vnet_dev_ring_set_num() - SET_VRING_NUM for a stopped ring; -1: no such queue, or started. */
int vnet_dev_ring_set_num(struct vnet_dev *dev, unsigned qidx, uint16_t num);
/* vnet_dev_ring_set_addr() - SET_VRING_ADDR (user addresses, used-ring log) for a stopped ring. */
int vnet_dev_ring_set_addr(struct vnet_dev *dev, unsigned qidx, uint64_t desc, uint64_t avail,
			   uint64_t used, bool log_used, uint64_t log_gpa);
/* vnet_dev_ring_set_base() - where a stopped ring resumes, on layout `packed`; -1 if not. */
int vnet_dev_ring_set_base(struct vnet_dev *dev, unsigned qidx, bool packed, uint32_t base);
/* vnet_dev_ring_break() - NEEDS_RESET until set up again; false if broken already or none. */
bool vnet_dev_ring_break(struct vnet_dev *dev, unsigned qidx, const char *why);

#endif

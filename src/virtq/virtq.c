/* SPDX-License-Identifier: MIT */
/* virtq.c - the virtqueue API: starts, stops and bases, and each call handed to its ring's layout. */
#include "virtq/virtq.h"

#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "virtq/vq_packed_internal.h"
#include "virtq/vq_split_internal.h"

/*
 * The top of the folder: every function here takes the layout from vq->run (vq_start() sets it)
 * and calls the split (vq_split.c) or the packed (vq_packed.c) half; those call vq_ring.c, and
 * nothing below calls back up here.
 */

/* The ring's private memory back to the heap, and every pointer into it forgotten. */
static void vq_priv_free(struct virtqueue *vq)
{
	free(vq->priv);
	vq->priv = NULL;
	vq->pk.rec = NULL;
	vq->pk.in_flight = NULL;
	vq->pk.cap = 0;
}

/**
 * vq_start() - translate and check the ring addresses the transport set, and start the queue.
 * @vq: the queue: num, desc/avail/used_addr, ring_space and the layout flags set
 * @mem: the guest memory the rings and every later chain are translated in
 *
 * The size and layout flags are taken once, into vq->run: they are the ring's for this run,
 * whatever the transport's fields say later. A started ring is stopped first (vq_stop()); the
 * ring's private memory is allocated here for this run's layout, and only here. A base set for
 * the other layout (or kept by a stop of a run on it) does not apply: the ring starts from the
 * beginning (split: avail index 0; packed: slot 0, wrap counters 1), as after a reset.
 *
 * Split: see vq_split_start(); packed: see vq_packed_start(). Clears a broken state.
 *
 * Return: 0, or -1 (rate-limited log line) with the queue not started.
 */
int vq_start(struct virtqueue *vq, const struct guest_mem *mem)
{
	int rc;

	if (vq->started)
		vq_stop(vq);
	vq_priv_free(vq); /* nothing to free: a stopped ring has none (vq->priv) */
	vq->ready = VQ_FAST_NONE;
	vq->log_credit = 0;
	vq->run = (struct vq_run){.num = vq->num,
				  .packed = vq->packed,
				  .in_order = vq->in_order,
				  .batch_used = vq->batch_used,
				  .reads_only = vq->reads_only,
				  .event_idx = vq->event_idx,
				  .indirect = vq->indirect};
	if (vq->base_set && vq->base_packed != vq->run.packed) {
		log_guest("queue %u: the vring base 0x%x is a %s ring's; this %s ring starts from "
			  "the beginning", vq->index, vq->base,
			  vq->base_packed ? "packed" : "split", vq->run.packed ? "packed" : "split");
		vq->base_set = false;
		vq->last_avail = 0;
	}
	rc = vq->run.packed ? vq_packed_start(vq, mem) : vq_split_start(vq, mem);
	if (rc < 0)
		vq_priv_free(vq);
	return rc;
}

/**
 * vq_stop() - stop the queue, forget its ring pointers and free its private memory.
 * @vq: the queue; its position stays, for GET_VRING_BASE and the next start if on the same
 *      layout (split: last_avail; packed: a base for a packed ring)
 */
void vq_stop(struct virtqueue *vq)
{
	if (vq->ready == VQ_FAST_PACKED)
		vq->shadow_avail = vq->last_avail; /* kept from now (virtq.h) */
	if (vq->started && vq->run.packed) {
		/* A packed ring has no index in memory: the next start resumes from here, if it is
		 * a packed one (a split ring's position is last_avail). */
		vq->base = vq_packed_get_base(vq);
		vq->base_packed = true;
		vq->base_set = true;
	}
	vq->started = false;
	vq->ready = VQ_FAST_NONE;
	vq->desc = NULL;
	vq->avail = NULL;
	vq->used = vq->uring = NULL;
	vq->pk.dev_event = NULL;
	vq->pk.drv_event = NULL;
	vq_priv_free(vq);
}

/**
 * vq_avail_idx() - the driver's avail index now (acquire load; packed: its stand-in).
 * @vq: a started queue
 *
 * Return: the index, host order.
 */
uint16_t vq_avail_idx(struct virtqueue *vq)
{
	if (vq->run.packed)
		return vq_packed_avail_idx(vq);
	return vq_split_avail_idx(vq);
}

/**
 * vq_avail_at_least() - whether the driver made at least n chains available that have not been
 * popped (packed rings: counted as long as the longest popped so far).
 * @vq: a started queue
 * @n: how many
 *
 * An avail index more than the ring size ahead (hostile) counts as a full ring; the next pop
 * breaks the queue.
 *
 * Return: true if it did (always for n == 0).
 */
bool vq_avail_at_least(struct virtqueue *vq, unsigned n)
{
	if (n == 0)
		return true;
	if (vq->run.packed)
		return vq_packed_avail_at_least(vq, n);
	return vq_split_avail_at_least(vq, n);
}

/**
 * vq_has_avail() - whether the driver made chains available that have not been popped.
 * @vq: the queue
 *
 * Return: false as well for a queue not started or broken.
 */
bool vq_has_avail(struct virtqueue *vq)
{
	return vq->started && !vq->broken &&
	       (vq->run.packed ? vq_packed_has_avail(vq) : vq_split_has_avail(vq));
}

/**
 * vq_pop_slow() - take the next available chain: every case vq_pop()'s inline fast path does not
 * take.
 * @vq: the queue
 * @chain: the chain taken
 *
 * Reads the avail index only when what it last announced is used up; an index that moved by more
 * than the queue size, or a chain the walker refuses, breaks the queue. Prefetches the next
 * chain's first buffer when the batch announced one.
 *
 * Return: 1 with @chain filled, 0 when the ring is empty (or the queue not started), -1 when the
 * queue is broken.
 */
int vq_pop_slow(struct virtqueue *vq, struct vq_chain *chain)
{
	if (vq->run.packed)
		return vq_packed_pop(vq, chain);
	return vq_split_pop(vq, chain);
}

/**
 * vq_unpop() - give back the last chains popped; they will be popped again.
 * @vq: the queue
 * @n: how many
 */
void vq_unpop(struct virtqueue *vq, unsigned n)
{
	if (!vq->started)
		return; /* a stop gave every chain back already */
	if (vq->run.packed)
		vq_packed_unpop(vq, n);
	else
		vq_split_unpop(vq, n);
}

/**
 * vq_publish() - make every pushed used element visible to the driver with one index store.
 * @vq: the queue
 *
 * Release store: the elements are visible before the index. With dirty logging on, logs the
 * buffers the publication covers before the store, its used elements and index after it.
 */
void vq_publish(struct virtqueue *vq)
{
	if (vq->run.packed)
		vq_packed_publish(vq);
	else
		vq_split_publish(vq);
}

/* The driver's answer for what was published since the last decision, of either layout. */
static inline bool would_notify(const struct virtqueue *vq)
{
	return vq->run.packed ? vq_packed_would_notify(vq) : vq_split_would_notify(vq);
}

/**
 * vq_driver_wants_notify() - whether the driver accepts a notification for what was published
 * since the last decision, and record this decision point.
 * @vq: the queue
 *
 * Split: avail->flags, or used_event with EVENT_IDX; packed: the Driver Event Suppression
 * structure (vq_packed_would_notify()). Covers PUBLISHED entries only: deciding for
 * entries pushed but not yet published would let a driver that cannot see them be skipped.
 *
 * Return: true when a notification should be sent.
 */
bool vq_driver_wants_notify(struct virtqueue *vq)
{
	/* The fence inside orders the used index store before reading the suppression state. */
	bool wants = would_notify(vq);

	vq->signalled_used = vq->used_published;
	vq->pk.sig_lin = vq->pk.used_lin;
	vq->signalled_valid = true;
	vq->unsignalled = 0;
	return wants;
}

/**
 * vq_driver_would_notify() - what vq_driver_wants_notify() would answer now, without recording a
 * decision point (the stall guard asks before it forces an early notification).
 * @vq: the queue
 *
 * Return: true when the driver accepts a notification.
 */
bool vq_driver_would_notify(const struct virtqueue *vq)
{
	return would_notify(vq);
}

/**
 * vq_kick_enable() - ask the driver to kick when it adds chains after those available now.
 * @vq: the queue (nothing happens unless started and not broken)
 *
 * Writes avail_event (EVENT_IDX) or clears VRING_USED_F_NO_NOTIFY, then re-reads the avail index
 * after a full fence, so a kick cannot be lost.
 *
 * Return: true if there are chains not popped yet: process them before sleeping.
 */
bool vq_kick_enable(struct virtqueue *vq)
{
	return vq->started && !vq->broken &&
	       (vq->run.packed ? vq_packed_kick_enable(vq) : vq_split_kick_enable(vq));
}

/**
 * vq_kick_disable() - tell the driver kicks are not needed now (best effort).
 * @vq: the queue; only without EVENT_IDX (VRING_USED_F_NO_NOTIFY), and only started, not broken
 *
 * Writes only when the flag is not set yet: a polling queue disables kicks on every run, and a
 * store each time would take the cache line from the driver, which reads it before each kick.
 */
void vq_kick_disable(struct virtqueue *vq)
{
	if (vq->run.packed)
		vq_packed_kick_disable(vq);
	else
		vq_split_kick_disable(vq);
}

/**
 * vq_reset() - back to the state after a device reset: not started, not broken, indexes 0.
 * @vq: the queue; keeps its index and its on_broken hook with owner_ctx
 */
void vq_reset(struct virtqueue *vq)
{
	unsigned index = vq->index;
	void (*on_broken)(void *, unsigned) = vq->on_broken;
	void *owner_ctx = vq->owner_ctx;

	free(vq->priv);
	memset(vq, 0, sizeof(*vq));
	vq->index = index;
	vq->on_broken = on_broken;
	vq->owner_ctx = owner_ctx;
}

/**
 * vq_free() - release what a packed or IN_ORDER queue allocated (device teardown).
 * @vq: the queue; no longer usable until vq_reset()
 */
void vq_free(struct virtqueue *vq)
{
	vq_stop(vq); /* frees the ring's private memory */
}

/**
 * vq_set_base() - SET_VRING_BASE: where the next vq_start() resumes.
 * @vq: the queue, stopped; vq->packed must already say the layout of the next start
 * @base: split: the next avail index (16 bits); packed: bits 0-14 next avail slot, bit 15 its
 *        wrap counter, bits 16-30 next used slot, bit 31 its wrap counter (vhost-user spec;
 *        a zero top half, as DPDK sends, means used == avail)
 *
 * The base is for the layout vq->packed says: a start on the other one does not use it.
 *
 * Return: 0, or -1 for a started ring or a split base over 16 bits (nothing changed).
 */
int vq_set_base(struct virtqueue *vq, uint32_t base)
{
	if (vq->started || (!vq->packed && base > UINT16_MAX))
		return -1;
	vq->base = base;
	vq->base_set = true;
	vq->base_packed = vq->packed;
	if (!vq->packed) {
		vq->last_avail = (uint16_t)base;
		vq->used_idx = (uint16_t)base;
	}
	return 0;
}

/**
 * vq_get_base() - GET_VRING_BASE's value.
 * @vq: the queue (started or stopped)
 *
 * Started: where the ring is, in its run's layout. Stopped (GET_VRING_BASE answers after the
 * stop): where the last run stopped, in its layout, or what SET_VRING_BASE set since; a ring
 * that never ran: a fresh one of vq->packed's layout.
 *
 * Return: split: the next avail index; packed: as vq_set_base() takes it, both halves.
 */
uint32_t vq_get_base(const struct virtqueue *vq)
{
	if (vq->started)
		return vq->run.packed ? vq_packed_get_base(vq) : vq->last_avail;
	if (vq->base_set)
		return vq->base;
	return (vq->run.num ? vq->run.packed : vq->packed) ? 0x80008000u : vq->last_avail;
}

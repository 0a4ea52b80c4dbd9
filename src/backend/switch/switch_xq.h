/* SPDX-License-Identifier: MIT */
/* switch_xq.h - the switch's cross-worker frame queues: bounded lock-free rings with wake-ups. */
#ifndef VNETD_SWITCH_XQ_H
#define VNETD_SWITCH_XQ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

/*
 * A leaf (calls nothing of vnetd's but iov.h): frames one worker thread hands to another.
 * One single-producer single-consumer byte ring per (sending worker, receiving worker) pair,
 * so nothing is locked: the sender copies a frame into the ring (the only copy on its side)
 * and publishes it with a release store of the ring's tail; the receiver reads it in place and
 * gives the bytes back with release stores of the head (in steps, not per frame). A full ring refuses the frame (the
 * caller counts the drop, or for a unicast frame waits: xq_block()): memory is bounded by the
 * ring size, however fast a guest sends.
 *
 * Wake-ups: the sender marks the receiver in its round's dirty set and xq_flush() (at the end
 * of the sender's round) wakes each marked receiver once, through the owner's wake callback,
 * unless that receiver is already awake (its `pending` flag is set); a ring more than half
 * full wakes its receiver at once. The receiver clears `pending` only when it found every ring
 * empty, and then looks at the rings again (seq_cst on both sides, the store-load pattern of
 * an eventcount), so a frame is never left without a wake-up.
 */

#define XQ_MAX_WORKERS 16
#define XQ_RING_BYTES (512u * 1024u) /* per (sender, receiver) pair; a power of two */
#define XQ_MAX_FRAME (65536u + 64u) /* larger frames are refused (a 64 KB frame and its header) */
#define XQ_MIN_RING (256u * 1024u)    /* the smallest ring: room for three of the largest frames */

struct xq; /* opaque */

/* Wake worker `worker` (its thread then calls xq_drain()); any thread may call it. */
typedef void (*xq_wake_fn)(void *ctx, unsigned worker);

/*
 * One frame for receiving worker `worker`, in the ring (valid during the call only): tag as
 * given to xq_push(). Returns the deliveries it made (counted against the drain's budget).
 */
typedef unsigned (*xq_deliver_fn)(void *ctx, unsigned worker, uint64_t tag, const uint8_t *frame,
				  size_t len);

/*
 * xq_create() - rings for every ordered pair of nworkers (2..XQ_MAX_WORKERS) workers, of
 * ring_bytes each (a power of two, at least XQ_MIN_RING); NULL if out of memory. The
 * rings' pages are only touched as they are used.
 */
struct xq *xq_create(unsigned nworkers, size_t ring_bytes, xq_wake_fn wake, void *ctx);

/* xq_destroy() - free the rings (no thread may use them any more); NULL is fine. */
void xq_destroy(struct xq *q);

/*
 * xq_push() - from worker `from`'s thread: copy the frame (len bytes at byte off of iov) into
 * the ring to worker `to` with `tag`. 0 queued; -ENOSPC the ring is full, -EMSGSIZE the frame
 * is larger than XQ_MAX_FRAME (nothing queued: the caller counts the drop).
 */
int xq_push(struct xq *q, unsigned from, unsigned to, uint64_t tag, const struct iovec *iov,
	    unsigned iovcnt, size_t off, size_t len);

/*
 * xq_block() - after -ENOSPC from worker `from`'s thread: mark it waiting for room in the ring to
 * `to` (a frame of len bytes). true: it waits, the receiver wakes it (xq_wake_fn) once it gave
 * bytes back; false: room came meanwhile, push again.
 */
bool xq_block(struct xq *q, unsigned from, unsigned to, size_t len);

/* xq_blocked() - from worker `from`'s thread: whether it still waits for room (xq_block()). */
bool xq_blocked(const struct xq *q, unsigned from, unsigned to);

/* xq_flush() - from worker `from`'s thread, at the end of its round: wake whom it queued for. */
void xq_flush(struct xq *q, unsigned from);

/*
 * xq_drain() - from worker `to`'s thread: hand its frames to `deliver`, in order per sender,
 * senders taken in turn, at most max_frames deliveries and about max_bytes bytes. 1: the
 * budget ended with frames left (call again: no wake-up will come for them); 0: every ring to
 * `to` was empty (the next frame wakes it).
 */
int xq_drain(struct xq *q, unsigned to, unsigned max_frames, size_t max_bytes,
	     xq_deliver_fn deliver, void *ctx);

/* xq_queued_bytes() - bytes (records included) waiting from `from` to `to`; any thread. */
size_t xq_queued_bytes(const struct xq *q, unsigned from, unsigned to);

#endif

/* SPDX-License-Identifier: MIT */
/* switch_xq.c - the switch's cross-worker frame queues: one lock-free byte ring per worker pair. */
#include "backend/switch/switch_xq.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "lib/iov.h"

#define XQ_LINE 64
#define XQ_REC 16u	     /* a record's header; records start 16-byte aligned */
#define XQ_WRAP 0xffffffffu /* record length: the rest of the ring is skipped */
#define XQ_ALIGN(n) (((n) + (XQ_REC - 1)) & ~(size_t)(XQ_REC - 1))
/* The receiver gives bytes back in steps of size / XQ_HEAD_STEPS (and whenever it stops): one
 * store to the line the sender reads per step, not per frame. */
#define XQ_HEAD_STEPS 16u

/* A record in the ring: this header, then len frame bytes, padded to XQ_REC. */
struct xq_rec {
	uint32_t len;
	uint32_t unused;
	uint64_t tag;
};

/*
 * One (sender, receiver) ring. Positions are free-running byte counts (the ring offset is
 * pos & mask); each side writes only its own, on its own cache line, and reads the other's
 * with acquire loads: tail - head bytes are queued.
 */
struct xq_ring {
	_Alignas(XQ_LINE) uint64_t tail; /* the sender's: bytes published */
	uint64_t head_seen;		  /* the sender's last look at head (no line bouncing) */
	int blocked; /* the sender waits for room (xq_block()): the receiver wakes it and clears */
	_Alignas(XQ_LINE) uint64_t head; /* the receiver's: bytes given back */
	_Alignas(XQ_LINE) uint8_t *buf;  /* read-only after xq_create() */
};

/* Per worker: what it keeps as a receiver, and (on another line) as a sender. */
struct xq_worker {
	_Alignas(XQ_LINE) int pending; /* receiver awake or being woken: senders need not wake it */
	unsigned next;			/* receiver: the sender its next drain starts with */
	_Alignas(XQ_LINE) uint32_t dirty; /* sender: receivers it queued for in this round */
	uint32_t early;			  /* sender: receivers it looked at half full this round */
};

struct xq {
	unsigned n;
	size_t size, mask;
	xq_wake_fn wake;
	void *ctx;
	struct xq_worker w[XQ_MAX_WORKERS];
	struct xq_ring *ring[XQ_MAX_WORKERS][XQ_MAX_WORKERS]; /* [from][to]; NULL when from == to */
};

_Static_assert(XQ_MAX_WORKERS <= 32, "dirty is a 32-bit set of receivers");
_Static_assert(XQ_MIN_RING >= 3 * (XQ_MAX_FRAME + 64), "a ring holds the largest frames");
_Static_assert(sizeof(struct xq_rec) == XQ_REC, "record header size");

/**
 * xq_create() - the rings of every ordered pair of workers.
 * @nworkers: 2..XQ_MAX_WORKERS
 * @ring_bytes: bytes per ring: a power of two, at least XQ_MIN_RING
 * @wake: wakes a receiving worker (called from the sender's thread)
 * @ctx: passed to @wake
 *
 * The rings' pages cost memory only once frames used them.
 *
 * Return: the queues, or NULL for bad arguments or out of memory.
 */
struct xq *xq_create(unsigned nworkers, size_t ring_bytes, xq_wake_fn wake, void *ctx)
{
	struct xq *q = NULL;

	if (nworkers < 2 || nworkers > XQ_MAX_WORKERS || !wake || ring_bytes < XQ_MIN_RING ||
	    (ring_bytes & (ring_bytes - 1)))
		return NULL;
	if (posix_memalign((void **)&q, XQ_LINE, sizeof(*q)) != 0)
		return NULL;
	memset(q, 0, sizeof(*q));
	q->n = nworkers;
	q->size = ring_bytes;
	q->mask = ring_bytes - 1;
	q->wake = wake;
	q->ctx = ctx;
	for (unsigned f = 0; f < nworkers; f++)
		for (unsigned t = 0; t < nworkers; t++) {
			struct xq_ring *r = NULL;

			if (f == t)
				continue;
			if (posix_memalign((void **)&r, XQ_LINE, sizeof(*r)) != 0) {
				xq_destroy(q);
				return NULL;
			}
			memset(r, 0, sizeof(*r));
			q->ring[f][t] = r;
			/* Large: mmap'd by malloc, so a page costs memory only once a frame used it. */
			r->buf = malloc(ring_bytes);
			if (!r->buf) {
				xq_destroy(q);
				return NULL;
			}
		}
	return q;
}

/**
 * xq_destroy() - free the rings and the queues; no thread may use them any more.
 * @q: the queues, or NULL
 */
void xq_destroy(struct xq *q)
{
	if (!q)
		return;
	for (unsigned f = 0; f < q->n; f++)
		for (unsigned t = 0; t < q->n; t++)
			if (q->ring[f][t]) {
				free(q->ring[f][t]->buf);
				free(q->ring[f][t]);
			}
	free(q);
}

/*
 * Wake receiver `to` unless it is awake already. The ring's tail is first re-published with a
 * seq_cst read-modify-write (adding 0), so that it and our look at `pending` are ordered like
 * the receiver's store to `pending` and its look at the tails (all seq_cst: one total order,
 * without fences, which ThreadSanitizer does not model): either it sees our frames or we see
 * it idle. Once per receiver and round, not per frame.
 */
static void wake_idle(struct xq *q, struct xq_ring *r, unsigned to)
{
	int *pending = &q->w[to].pending;

	__atomic_fetch_add(&r->tail, 0, __ATOMIC_SEQ_CST);
	if (!__atomic_load_n(pending, __ATOMIC_SEQ_CST) &&
	    !__atomic_exchange_n(pending, 1, __ATOMIC_SEQ_CST))
		q->wake(q->ctx, to);
}

/**
 * xq_push() - copy one frame into the ring from one worker to another.
 * @q: the queues
 * @from: the sending worker; called on its thread only (single producer)
 * @to: the receiving worker
 * @tag: given back to the receiver's deliver callback
 * @iov: the frame, in the sender's guest memory
 * @iovcnt: entries of @iov
 * @off: byte offset of the frame in @iov
 * @len: the frame's length
 *
 * The only copy on the sender's side; published with a release store of the ring's tail. The
 * receiver is woken by xq_flush() at the end of the round, or at once when the ring is more than
 * half full.
 *
 * Return: 0 queued; -ENOSPC the ring is full, -EMSGSIZE the frame is larger than XQ_MAX_FRAME
 * (nothing queued: the caller counts the drop).
 */
int xq_push(struct xq *q, unsigned from, unsigned to, uint64_t tag, const struct iovec *iov,
	    unsigned iovcnt, size_t off, size_t len)
{
	struct xq_ring *r = q->ring[from][to];
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_RELAXED), head = r->head_seen;
	size_t need = XQ_REC + XQ_ALIGN(len), at = tail & q->mask, room = q->size - at;
	size_t total = need <= room ? need : room + need;
	struct xq_rec *rec;

	if (len > XQ_MAX_FRAME)
		return -EMSGSIZE;
	if (q->size - (tail - head) < total) {
		/* Looks full: see how far the receiver got (the only load of its line). */
		head = r->head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		if (q->size - (tail - head) < total)
			return -ENOSPC;
	}
	if (need > room) {
		/* Records do not straddle the end: mark the rest skipped and start at 0. */
		((struct xq_rec *)(r->buf + at))->len = XQ_WRAP;
		tail += room;
		at = 0;
	}
	rec = (struct xq_rec *)(r->buf + at);
	rec->tag = tag;
	rec->len = (uint32_t)iov_copy_from(iov, iovcnt, off, rec + 1, len);
	tail += XQ_REC + XQ_ALIGN(rec->len);
	__atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
	q->w[from].dirty |= 1u << to;
	if (tail - head > q->size / 2 && !(q->w[from].early & (1u << to))) {
		/* Half full by our stale view: look again; if it really is, do not wait for the end
		 * of the round to wake the receiver. Once per receiver and round: a ring that stays
		 * half full must not cost a look at the receiver's line (and a seq_cst RMW) per
		 * frame. */
		head = r->head_seen = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		if (tail - head > q->size / 2) {
			q->w[from].early |= 1u << to;
			wake_idle(q, r, to);
		}
	}
	return 0;
}

/**
 * xq_flush() - at the end of a sender's round, wake each receiver it queued frames for, once,
 * unless that receiver is awake already.
 * @q: the queues
 * @from: the sending worker; called on its thread only
 */
void xq_flush(struct xq *q, unsigned from)
{
	uint32_t dirty = q->w[from].dirty;

	if (!dirty)
		return;
	q->w[from].dirty = q->w[from].early = 0;
	for (unsigned to = 0; dirty; to++, dirty >>= 1)
		if (dirty & 1)
			wake_idle(q, q->ring[from][to], to);
}

/*
 * The receiver gave bytes back (stored head): wake the sender if it waits for room. The head
 * store and this look are seq_cst, as xq_block()'s store of `blocked` and its look at head (the
 * eventcount pattern once more): either the sender sees the room or we see it waiting.
 */
static void give_back(struct xq *q, struct xq_ring *r, unsigned from, uint64_t head,
		      uint64_t tail)
{
	__atomic_store_n(&r->head, head, __ATOMIC_SEQ_CST);
	/* Not before half the ring is free (tail as we last saw it): a sender woken at each step
	 * would block again after a few frames, a wake-up and a context switch per step. Every
	 * drain ends with a give-back of all it read, so a waiting sender is always woken. */
	if (__atomic_load_n(&r->blocked, __ATOMIC_SEQ_CST) && tail - head <= q->size / 2 &&
	    __atomic_exchange_n(&r->blocked, 0, __ATOMIC_SEQ_CST))
		q->wake(q->ctx, from);
}

/**
 * xq_block() - the ring from one worker to another refused a frame (-ENOSPC): mark the sender
 * waiting for room, so the receiver wakes it once it gave bytes back.
 * @q: the queues
 * @from: the sending worker; called on its thread only
 * @to: the receiving worker
 * @len: the frame's length
 *
 * The receiver always drains its rings (frames its guests have no buffers for are queued or
 * dropped there), so a sender never waits on a guest, only on the receiving worker's thread.
 *
 * Return: true when the sender waits (the receiver will wake it); false when room came meanwhile
 * (push again now).
 */
bool xq_block(struct xq *q, unsigned from, unsigned to, size_t len)
{
	struct xq_ring *r = q->ring[from][to];
	uint64_t tail = __atomic_load_n(&r->tail, __ATOMIC_RELAXED), head;
	size_t need = XQ_REC + XQ_ALIGN(len), room = q->size - (tail & q->mask);

	__atomic_store_n(&r->blocked, 1, __ATOMIC_SEQ_CST);
	head = r->head_seen = __atomic_load_n(&r->head, __ATOMIC_SEQ_CST);
	if (q->size - (tail - head) < (need <= room ? need : room + need))
		return true;
	__atomic_store_n(&r->blocked, 0, __ATOMIC_RELAXED);
	return false;
}

/**
 * xq_blocked() - whether the sender still waits for room in a ring (xq_block()).
 * @q: the queues
 * @from: the sending worker; called on its thread
 * @to: the receiving worker
 *
 * Return: true while the receiver has not given bytes back since xq_block().
 */
bool xq_blocked(const struct xq *q, unsigned from, unsigned to)
{
	return __atomic_load_n(&q->ring[from][to]->blocked, __ATOMIC_ACQUIRE) != 0;
}

/* Whether any ring to `to` holds a frame (seq_cst loads: see wake_idle()). */
static bool any_queued(const struct xq *q, unsigned to)
{
	for (unsigned f = 0; f < q->n; f++) {
		const struct xq_ring *r = q->ring[f][to];

		if (r && __atomic_load_n(&r->tail, __ATOMIC_SEQ_CST) !=
				 __atomic_load_n(&r->head, __ATOMIC_RELAXED))
			return true;
	}
	return false;
}

/**
 * xq_drain() - hand the frames queued for a worker to a callback.
 * @q: the queues
 * @to: the receiving worker; called on its thread only (single consumer)
 * @max_frames: budget: deliveries (a frame counts its callback's return value, at least 1)
 * @max_bytes: budget: about this many bytes
 * @deliver: gets each frame in place, valid during the call only
 * @ctx: passed to @deliver
 *
 * Frames come in order per sender, the senders taken in turn; the bytes go back to the sender
 * in steps of an XQ_HEAD_STEPS-th of the ring, and whenever the drain stops. When every ring
 * is empty, the worker is marked idle and the rings are looked at once more, so a frame is
 * never left without a wake-up.
 *
 * Return: 1 when the budget ended with frames left (call again: no wake-up will come for them),
 * 0 when every ring to @to was empty (the next frame wakes it).
 */
int xq_drain(struct xq *q, unsigned to, unsigned max_frames, size_t max_bytes,
	     xq_deliver_fn deliver, void *ctx)
{
	struct xq_worker *w = &q->w[to];
	unsigned frames = 0;
	size_t bytes = 0;

	for (;;) {
		for (unsigned k = 0; k < q->n; k++) {
			unsigned from = (w->next + k) % q->n;
			struct xq_ring *r = q->ring[from][to];
			uint64_t head, tail, given;

			if (!r)
				continue;
			given = head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);
			tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
			while (head != tail) {
				const struct xq_rec *rec;
				unsigned n;

				if (frames >= max_frames || bytes >= max_bytes) {
					/* Out of budget: the sender after this one goes first next. */
					give_back(q, r, from, head, tail);
					w->next = (from + 1) % q->n;
					return 1;
				}
				rec = (const struct xq_rec *)(r->buf + (head & q->mask));
				if (rec->len == XQ_WRAP) {
					head += q->size - (head & q->mask);
				} else {
					size_t next = XQ_REC + XQ_ALIGN(rec->len);

					/* The next record's header: its line comes while we copy. */
					__builtin_prefetch(r->buf + ((head + next) & q->mask));
					n = deliver(ctx, to, rec->tag, (const uint8_t *)(rec + 1),
						    rec->len);
					frames += n ? n : 1;
					bytes += rec->len;
					head += next;
				}
				/* Give the bytes back in steps (the sender may be short of room). */
				if (head - given >= q->size / XQ_HEAD_STEPS) {
					give_back(q, r, from, head, tail);
					given = head;
				}
				if (head == tail) /* what else came meanwhile, before we stop */
					tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
			}
			if (head != given)
				give_back(q, r, from, head, tail);
		}
		/* Every ring looked empty: go idle, then look again (wake_idle()'s mirror image:
		 * a frame published before our store is seen here, one after it wakes us). */
		__atomic_store_n(&w->pending, 0, __ATOMIC_SEQ_CST);
		if (!any_queued(q, to))
			return 0;
	}
}

/**
 * xq_queued_bytes() - bytes waiting in one ring, record headers included. Any thread; lock-free.
 * @q: the queues
 * @from: the sending worker
 * @to: the receiving worker
 *
 * Return: the bytes; 0 for @from == @to or out of range.
 */
size_t xq_queued_bytes(const struct xq *q, unsigned from, unsigned to)
{
	const struct xq_ring *r = from < q->n && to < q->n ? q->ring[from][to] : NULL;

	if (!r)
		return 0;
	return (size_t)(__atomic_load_n(&r->tail, __ATOMIC_ACQUIRE) -
			__atomic_load_n(&r->head, __ATOMIC_ACQUIRE));
}

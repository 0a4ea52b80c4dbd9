/* SPDX-License-Identifier: MIT */
/* queue_view.c - queue settings published under a seqcount, for readers on other threads. */

#include "dev/dev.h" /* the public functions defined here */
#include "dev/vnet_dev_core.h"
#include "dev/queue_view_internal.h"

/*
 * Why a seqcount here, and plain relaxed atomics for the counters (stat_atomic.h): these
 * settings belong together (a reader must not see the new max_packets with the old
 * max_usecs, or a setter that does not match them) and they change rarely — a control
 * command, a queue state change, an adaptive window (every 4 ms at most) — never per packet.
 * The writer (the queue's worker, or the main thread while that worker is parked) packs them
 * into a few words and stores them between two increments of seq; a reader retries while seq
 * is odd or changed under it. Every word is accessed atomically, so there is no data race for
 * the compiler or ThreadSanitizer, and ordered without standalone fences (which
 * ThreadSanitizer does not model): the writer stores the words with release after making seq
 * odd, so a reader that sees any new word also sees the odd seq at its second load; the reader
 * loads the words with acquire, so that second load of seq cannot move before them (one of
 * the correct C11 seqlocks in Boehm, "Can seqlocks get along with programming language memory
 * models?", 2012). On x86-64 all of these are plain movs.
 */

static void pack(const struct vnet_queue *q, uint64_t w[VNET_VIEW_WORDS])
{
	w[0] = (uint64_t)q->coal.params.max_packets | (uint64_t)q->coal.params.max_usecs << 32;
	w[1] = (uint64_t)(q->coal.setter & 0xff) | (uint64_t)q->adapt.level << 8 |
	       (uint64_t)(q->adapt.state & 0xff) << 16 | (uint64_t)q->enabled << 24 |
	       (uint64_t)q->vq.started << 25 | (uint64_t)q->vq.broken << 26 |
	       (uint64_t)q->adapt.on << 27 | (uint64_t)(q->kind & 3) << 28;
	w[2] = q->adapt.changes;
	w[3] = q->adapt.windows;
}

static void unpack(const uint64_t w[VNET_VIEW_WORDS], struct vnet_queue_view *v)
{
	v->coal.max_packets = (uint32_t)w[0];
	v->coal.max_usecs = (uint32_t)(w[0] >> 32);
	v->set_by = (enum coal_setter)(w[1] & 0xff);
	v->adapt_level = (unsigned)(w[1] >> 8 & 0xff);
	v->adapt_state = (enum coal_adapt_state)(w[1] >> 16 & 0xff);
	v->enabled = w[1] >> 24 & 1;
	v->started = w[1] >> 25 & 1;
	v->broken = w[1] >> 26 & 1;
	v->adaptive = w[1] >> 27 & 1;
	v->kind = (enum vnet_queue_kind)(w[1] >> 28 & 3);
	v->adapt_changes = w[2];
	v->adapt_windows = w[3];
}

/**
 * queue_view_publish() - publish the queue's settings view (a seqcount write)
 * @q: the queue whose settings changed
 *
 * Context: the thread that owns the device (or the main thread while its worker is parked);
 * one writer per queue.
 */
void queue_view_publish(struct vnet_queue *q)
{
	uint32_t seq = __atomic_load_n(&q->pub.seq, __ATOMIC_RELAXED);
	uint64_t w[VNET_VIEW_WORDS];

	pack(q, w);
	__atomic_store_n(&q->pub.seq, seq + 1, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < VNET_VIEW_WORDS; i++)
		__atomic_store_n(&q->pub.w[i], w[i], __ATOMIC_RELEASE);
	__atomic_store_n(&q->pub.seq, seq + 2, __ATOMIC_RELEASE);
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/**
 * vnet_queue_view_read() - the queue's settings as last published, lock-free
 * @q: the queue
 * @out: filled with one consistent set (retries while the writer is between its stores)
 *
 * Context: any thread.
 */
void vnet_queue_view_read(const struct vnet_queue *q, struct vnet_queue_view *out)
{
	uint64_t w[VNET_VIEW_WORDS];
	uint32_t s1, s2;

	/* The writer holds an odd seq for a few stores: a retry waits nanoseconds (longer only
	 * if the writer's thread is preempted between them). */
	for (;;) {
		s1 = __atomic_load_n(&q->pub.seq, __ATOMIC_ACQUIRE);
		if (s1 & 1) {
			cpu_relax();
			continue;
		}
		for (unsigned i = 0; i < VNET_VIEW_WORDS; i++)
			w[i] = __atomic_load_n(&q->pub.w[i], __ATOMIC_ACQUIRE);
		s2 = __atomic_load_n(&q->pub.seq, __ATOMIC_RELAXED);
		if (s1 == s2)
			break;
	}
	unpack(w, out);
}

/**
 * vnet_dev_publish() - publish every queue of the device
 * @dev: the device
 *
 * Context: as queue_view_publish().
 */
void vnet_dev_publish(struct vnet_dev *dev)
{
	for (unsigned i = 0; i < dev->nqueues; i++)
		queue_view_publish(&dev->queues[i]);
}

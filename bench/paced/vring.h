/* SPDX-License-Identifier: MIT */
/* vring.h - the paced driver's side of a split virtqueue: post, publish, kick only when asked, reap. */
#ifndef PACED_VRING_H
#define PACED_VRING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/eventfd.h>

#define VRING_DESC_F_WRITE 2
#define VRING_USED_F_NO_NOTIFY 1
#define VRING_AVAIL_F_NO_INTERRUPT 1

struct vring_desc {
	uint64_t addr;
	uint32_t len;
	uint16_t flags;
	uint16_t next;
};

struct vring_used_elem {
	uint32_t id;
	uint32_t len;
};

/**
 * struct vq - one split ring in guest memory, driven from one thread.
 * @num, @mask:		ring size and size - 1
 * @desc:		descriptor table; descriptor i always points at buffer i
 * @avail_flags .. @used_event:	the avail ring (flags, idx, ring[num], used_event)
 * @used_flags .. @avail_event:	the used ring (flags, idx, ring[num], avail_event)
 * @avail_shadow:	the next avail index to publish
 * @kick_old:		the avail index at the last kick decision (EVENT_IDX's "old")
 * @last_used:		the next used entry to reap
 * @event_idx:		VIRTIO_RING_F_EVENT_IDX negotiated
 * @irq:		calls wanted (a NAPI guest's re-enabled interrupt), else suppressed
 * @kick_fd, @call_fd:	the queue's eventfds
 * @buf, @buf_gpa, @buf_size:	buffer i is buf + i * buf_size here, buf_gpa + i * buf_size to
 *				the device
 * @free, @nfree:	TX: descriptor ids not in the device's hands (a stack)
 * @kicks, @calls:	kicks sent; calls received (the call eventfd's count, read by vq_calls())
 */
struct vq {
	uint16_t num, mask;
	struct vring_desc *desc;
	uint16_t *avail_flags, *avail_idx, *avail_ring, *used_event;
	uint16_t *used_flags, *used_idx;
	struct vring_used_elem *used_ring;
	uint16_t *avail_event;
	uint16_t avail_shadow, kick_old, last_used;
	bool event_idx, irq;
	int kick_fd, call_fd;
	uint8_t *buf;
	uint64_t buf_gpa;
	uint32_t buf_size;
	uint16_t *free;
	uint32_t nfree;
	uint64_t kicks, calls;
};

/* Bytes a ring of num entries takes with its buffers, each part page-aligned. */
size_t vq_bytes(uint16_t num, uint32_t buf_size);
int vq_init(struct vq *q, uint8_t *mem, uint64_t gpa, uint16_t num, uint32_t buf_size,
	    bool writable);
void vq_fini(struct vq *q);
void vq_irq_set(struct vq *q, bool on);
uint64_t vq_calls(struct vq *q);

/* Linux's vring_need_event(): has the index crossed event since old? */
static inline bool vq_need_event(uint16_t event, uint16_t new_idx, uint16_t old)
{
	return (uint16_t)(new_idx - event - 1) < (uint16_t)(new_idx - old);
}

/**
 * vq_publish() - make the posted slots visible, and kick if the device asks for it.
 * @q: the queue
 *
 * EVENT_IDX: a kick when avail_event was crossed since the last decision; else when the device
 * has not set NO_NOTIFY. The full fence orders the index store before the read of the device's
 * wish (the device's mirror image: it writes its wish, then re-reads the index).
 * Return: true if a kick was sent.
 */
static inline bool vq_publish(struct vq *q)
{
	uint16_t new_idx = q->avail_shadow, old = q->kick_old;
	bool kick;

	if (new_idx == old)
		return false;
	__atomic_store_n(q->avail_idx, new_idx, __ATOMIC_RELEASE);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	q->kick_old = new_idx;
	if (q->event_idx)
		kick = vq_need_event(__atomic_load_n(q->avail_event, __ATOMIC_RELAXED), new_idx, old);
	else
		kick = !(__atomic_load_n(q->used_flags, __ATOMIC_RELAXED) & VRING_USED_F_NO_NOTIFY);
	if (kick) {
		eventfd_write(q->kick_fd, 1);
		q->kicks++;
	}
	return kick;
}

/* Post descriptor id (its buffer, len bytes) in the next avail slot; vq_publish() shows it. */
static inline void vq_post(struct vq *q, uint16_t id, uint32_t len)
{
	q->desc[id].len = len;
	q->avail_ring[q->avail_shadow & q->mask] = id;
	q->avail_shadow++;
}

/* Used entries the device has published and we have not reaped. */
static inline uint16_t vq_pending(const struct vq *q)
{
	return (uint16_t)(__atomic_load_n(q->used_idx, __ATOMIC_ACQUIRE) - q->last_used);
}

/* The next used entry (call only when vq_pending() said there is one). */
static inline struct vring_used_elem vq_reap(struct vq *q)
{
	struct vring_used_elem e = q->used_ring[q->last_used & q->mask];

	q->last_used++;
	return e;
}

/* The buffer of descriptor id, as the driver sees it. */
static inline uint8_t *vq_buf(const struct vq *q, uint32_t id)
{
	return q->buf + (size_t)id * q->buf_size;
}

/**
 * vq_rearm() - after reaping: move used_event (EVENT_IDX) so that the device calls for the
 * next entry (irq on: a NAPI driver re-enabling its interrupt) or never (irq off: far ahead).
 * @q: the queue
 */
static inline void vq_rearm(struct vq *q)
{
	if (q->event_idx)
		__atomic_store_n(q->used_event, (uint16_t)(q->last_used + (q->irq ? 0 : 0x8000)),
				 __ATOMIC_RELAXED);
}

/* TX: reap every completed descriptor back onto the free stack. Returns how many. */
static inline uint32_t vq_reclaim(struct vq *q)
{
	uint16_t n = vq_pending(q);

	for (uint16_t i = 0; i < n; i++) {
		uint32_t id = vq_reap(q).id;

		if (id < q->num && q->nfree < q->num)	/* a bad id is not ours to free */
			q->free[q->nfree++] = (uint16_t)id;
	}
	if (n)
		vq_rearm(q);
	return n;
}

#endif

/* SPDX-License-Identifier: MIT */
/* vring.c - laying a split virtqueue and its buffers out in guest memory; its eventfds. */
#include "vring.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define PAGE 4096u

static size_t page_up(size_t v)
{
	return (v + PAGE - 1) & ~(size_t)(PAGE - 1);
}

/**
 * vq_bytes() - guest memory one queue takes.
 * @num:	ring size
 * @buf_size:	bytes of each of its num buffers
 *
 * Return: page-aligned descriptor table, avail ring, used ring and buffers, summed.
 */
size_t vq_bytes(uint16_t num, uint32_t buf_size)
{
	return page_up(16u * num) + page_up(6u + 2u * num) + page_up(6u + 8u * num) +
	       page_up((size_t)num * buf_size);
}

/**
 * vq_init() - lay a queue out at mem (guest-physical gpa) and give descriptor i buffer i.
 * @q:		the queue, filled in
 * @mem:	where its vq_bytes() start, mapped here (zeroed: a fresh memfd)
 * @gpa:	the guest-physical address of mem
 * @num:	ring size, a power of two
 * @buf_size:	bytes per buffer
 * @writable:	RX (the device writes the buffers): every descriptor posted at once; TX: every
 *		descriptor on the free stack
 *
 * Return: 0, or -errno (no eventfd, no memory).
 */
int vq_init(struct vq *q, uint8_t *mem, uint64_t gpa, uint16_t num, uint32_t buf_size,
	    bool writable)
{
	size_t off = 0;

	memset(q, 0, sizeof(*q));
	q->kick_fd = q->call_fd = -1;
	q->num = num;
	q->mask = (uint16_t)(num - 1);
	q->desc = (struct vring_desc *)mem;
	off += page_up(16u * num);
	q->avail_flags = (uint16_t *)(mem + off);
	q->avail_idx = q->avail_flags + 1;
	q->avail_ring = q->avail_flags + 2;
	q->used_event = q->avail_ring + num;
	off += page_up(6u + 2u * num);
	q->used_flags = (uint16_t *)(mem + off);
	q->used_idx = q->used_flags + 1;
	q->used_ring = (struct vring_used_elem *)(q->used_flags + 2);
	q->avail_event = (uint16_t *)(q->used_ring + num);
	off += page_up(6u + 8u * num);
	q->buf = mem + off;
	q->buf_gpa = gpa + off;
	q->buf_size = buf_size;
	q->kick_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	q->call_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	q->free = calloc(num, sizeof(*q->free));
	if (q->kick_fd < 0 || q->call_fd < 0 || !q->free) {
		int err = errno ? errno : ENOMEM;

		vq_fini(q);
		return -err;
	}
	for (uint32_t i = 0; i < num; i++) {
		q->desc[i].addr = q->buf_gpa + (uint64_t)i * buf_size;
		q->desc[i].len = buf_size;
		q->desc[i].flags = writable ? VRING_DESC_F_WRITE : 0;
		if (writable)
			vq_post(q, (uint16_t)i, buf_size);
		else
			q->free[q->nfree++] = (uint16_t)(num - 1 - i);
	}
	/* RX: the device finds every buffer when it starts; published before it knows the ring */
	__atomic_store_n(q->avail_idx, q->avail_shadow, __ATOMIC_RELEASE);
	q->kick_old = q->avail_shadow;
	return 0;
}

/* Close the eventfds and free the free stack (the memory is the device's owner's). */
void vq_fini(struct vq *q)
{
	if (q->kick_fd >= 0)
		close(q->kick_fd);
	if (q->call_fd >= 0)
		close(q->call_fd);
	free(q->free);
	q->kick_fd = q->call_fd = -1;
	q->free = NULL;
}

/**
 * vq_irq_set() - want calls from the device (a guest with its interrupt enabled), or not.
 * @q:	the queue
 * @on:	true: used_event follows the reaped entries (EVENT_IDX) or NO_INTERRUPT is clear
 */
void vq_irq_set(struct vq *q, bool on)
{
	q->irq = on;
	__atomic_store_n(q->avail_flags, (uint16_t)(on ? 0 : VRING_AVAIL_F_NO_INTERRUPT),
			 __ATOMIC_RELAXED);
	vq_rearm(q);
}

/**
 * vq_calls() - calls the device has made so far: the call eventfd's counter, drained.
 * @q:	the queue
 *
 * Every call is a write of 1 to the eventfd, so its counter is the number of calls since it
 * was last read; a read costs a system call: the loops call this rarely (phase changes).
 * Return: the running total.
 */
uint64_t vq_calls(struct vq *q)
{
	eventfd_t v;

	if (eventfd_read(q->call_fd, &v) == 0)
		q->calls += v;
	return q->calls;
}

/* SPDX-License-Identifier: MIT */
/* virtqueue.c - device side of a split virtqueue: ring setup, the one chain walker, used ring. */
#include "virtqueue.h"

#include <endian.h>
#include <stddef.h>
#include <string.h>

#include "log.h"

static const char *const walk_error_names[] = {
	[VQ_WALK_OK] = "ok",
	[VQ_WALK_BAD_HEAD] = "head index out of range",
	[VQ_WALK_BAD_NEXT] = "next index out of range",
	[VQ_WALK_TOO_LONG] = "chain too long (loop?)",
	[VQ_WALK_BAD_ADDR] = "buffer outside guest memory",
	[VQ_WALK_INDIRECT_DISALLOWED] = "indirect descriptor not negotiated",
	[VQ_WALK_BAD_INDIRECT] = "bad indirect table",
	[VQ_WALK_NESTED_INDIRECT] = "nested indirect or indirect with next",
	[VQ_WALK_READ_AFTER_WRITE] = "readable descriptor after writable one",
	[VQ_WALK_TOO_BIG] = "chain larger than 4 GiB",
	[VQ_WALK_TOO_MANY_IOV] = "chain split into more than 1024 pieces of guest memory",
};

/**
 * vq_walk_error_str() - short text for a walk error (log lines, tests).
 *
 * Return: a static string; "unknown" for a value outside the enum.
 */
const char *vq_walk_error_str(enum vq_walk_error err)
{
	if ((unsigned)err >= sizeof(walk_error_names) / sizeof(walk_error_names[0]))
		return "unknown";
	return walk_error_names[err];
}

/* Every chain vq_walk_chain()'s fast path does not take; d is the head descriptor's copy. */
static __attribute__((noinline)) enum vq_walk_error
walk_chain_slow(const struct guest_mem *mem, const struct vring_desc *desc, unsigned num,
		unsigned head, bool indirect_ok, struct vq_chain *out, struct vring_desc d)
{
	const struct vring_desc *table = desc;
	unsigned table_size = num, in_table = 0, total = 0, idx = head;
	bool indirect = false, seen_write = false;

	out->nread = out->nwrite = 0;
	out->read_len = out->write_len = 0;
	out->ndesc = 0;

	for (;;) {
		if (total)
			d = vq_desc_read(table, idx);

		/* A table of n entries can hold at most n descriptors of one chain. */
		if (++in_table > table_size || ++total > VQ_MAX_CHAIN)
			return VQ_WALK_TOO_LONG;
		out->ndesc = total;

		if (d.flags & VRING_DESC_F_INDIRECT) {
			if (!indirect_ok)
				return VQ_WALK_INDIRECT_DISALLOWED;
			if (indirect || (d.flags & VRING_DESC_F_NEXT))
				return VQ_WALK_NESTED_INDIRECT;
			if (d.len == 0 || d.len % sizeof(struct vring_desc) ||
			    d.len / sizeof(struct vring_desc) > VQ_MAX_CHAIN)
				return VQ_WALK_BAD_INDIRECT;
			/*
			 * The table is read in place through one pointer (desc_read()), so unlike
			 * a data buffer it must lie in ONE region: a table crossing a region boundary
			 * is refused (DPDK's vhost copies such a table into a bounce buffer instead).
			 */
			table = guest_mem_translate(mem, GUEST_ADDR_GPA, d.addr, d.len);
			if (!table)
				return VQ_WALK_BAD_INDIRECT;
			table_size = d.len / sizeof(struct vring_desc);
			indirect = true;
			in_table = 0;
			idx = 0;
			continue;
		}

		if (d.flags & VRING_DESC_F_WRITE)
			seen_write = true;
		else if (seen_write)
			return VQ_WALK_READ_AFTER_WRITE;

		if (d.len) {
			/* Data buffers may straddle adjacent regions: one iovec per region. */
			unsigned n = out->nread + out->nwrite;
			int got = guest_mem_translate_iov(mem, GUEST_ADDR_GPA, d.addr, d.len,
							  &out->iov[n], VQ_MAX_CHAIN - n);

			if (got == GUEST_MEM_IOV_FULL)
				return VQ_WALK_TOO_MANY_IOV;
			if (got < 0)
				return VQ_WALK_BAD_ADDR;
			if (d.flags & VRING_DESC_F_WRITE) {
				out->nwrite += (unsigned)got;
				out->write_len += d.len;
			} else {
				out->nread += (unsigned)got;
				out->read_len += d.len;
			}
			if (out->read_len > UINT32_MAX || out->write_len > UINT32_MAX)
				return VQ_WALK_TOO_BIG;
		}

		if (!(d.flags & VRING_DESC_F_NEXT))
			return VQ_WALK_OK;
		idx = d.next;
		if (idx >= table_size)
			return VQ_WALK_BAD_NEXT;
	}
}

static bool is_pow2(unsigned n)
{
	return n && !(n & (n - 1));
}

/**
 * vq_start() - translate and check the ring addresses the transport set, and start the queue.
 * @vq: the queue: num, desc/avail/used_addr and ring_space set
 * @mem: the guest memory the rings and every later chain are translated in
 *
 * The size must be a power of two up to VQ_MAX_SIZE, the rings aligned and each inside one
 * region. Starts at last_avail (kept across a stop) and the used index the ring holds; clears a
 * broken state.
 *
 * Return: 0, or -1 (rate-limited log line) with the queue not started.
 */
int vq_start(struct virtqueue *vq, const struct guest_mem *mem)
{
	uint64_t num = vq->num;

	vq->started = false;
	if (!is_pow2(vq->num) || vq->num > VQ_MAX_SIZE) {
		log_guest("queue %u: bad size %u", vq->index, vq->num);
		return -1;
	}
	if ((vq->desc_addr & 15) || (vq->avail_addr & 1) || (vq->used_addr & 3)) {
		log_guest("queue %u: misaligned ring addresses", vq->index);
		return -1;
	}
	/*
	 * Rings stay on the single-range translation: their fields are read and written in place
	 * (single atomic loads and stores, indexed arrays), so each ring must be contiguous in
	 * host memory, i.e. inside one region (DPDK's vhost refuses a split ring too).
	 */
	vq->desc = guest_mem_translate(mem, vq->ring_space, vq->desc_addr, 16 * num);
	vq->avail = guest_mem_translate(mem, vq->ring_space, vq->avail_addr, 6 + 2 * num);
	vq->used = guest_mem_translate(mem, vq->ring_space, vq->used_addr, 6 + 8 * num);
	if (!vq->desc || !vq->avail || !vq->used) {
		log_guest("queue %u: ring outside guest memory", vq->index);
		goto refuse;
	}
	/*
	 * A region's user address and its mmap offset need not agree modulo 16: a ring aligned in
	 * the frontend's addresses can be misaligned in ours, and its fields are accessed in place.
	 */
	if (((uintptr_t)vq->desc & 15) || ((uintptr_t)vq->avail & 1) || ((uintptr_t)vq->used & 3)) {
		log_guest("queue %u: rings misaligned in vnetd's mapping of their region", vq->index);
		goto refuse;
	}
	vq->mem = mem;
	vq->shadow_avail = vq->last_avail; /* forces a read of the index at the first pop */
	vq->used_idx = VQ_READ_ONCE_U16(&vq->used->idx);
	vq->used_published = vq->used_idx;
	vq->signalled_used = vq->used_idx;
	vq->signalled_valid = false;
	vq->unsignalled = 0;
	vq->broken = false;
	vq->started = true;
	return 0;

refuse:
	vq->desc = NULL;
	vq->avail = NULL;
	vq->used = NULL;
	return -1;
}

/**
 * vq_stop() - stop the queue and forget its ring pointers.
 * @vq: the queue; last_avail stays, for GET_VRING_BASE
 */
void vq_stop(struct virtqueue *vq)
{
	vq->started = false;
	vq->desc = NULL;
	vq->avail = NULL;
	vq->used = NULL;
}

/**
 * vq_mark_broken() - stop processing the queue after a guest error (NEEDS_RESET semantics).
 * @vq: the queue; stays broken until vq_start() or vq_reset()
 * @what: the error, for the one rate-limited log line
 *
 * The first call logs and calls vq->on_broken; later ones do nothing.
 */
void vq_mark_broken(struct virtqueue *vq, const char *what)
{
	if (vq->broken)
		return;
	log_guest("queue %u: %s; queue stopped until the device is reset", vq->index, what);
	vq->broken = true;
	if (vq->on_broken)
		vq->on_broken(vq->owner_ctx, vq->index);
}

/**
 * vq_walk_chain() - the one descriptor-chain walker.
 * @mem: guest memory the buffers are translated in
 * @desc: the descriptor table (host pointer already validated)
 * @num: its number of entries
 * @head: the chain's first descriptor
 * @indirect_ok: VIRTIO_RING_F_INDIRECT_DESC negotiated
 * @out: the chain: readable iovecs, then writable ones (at most VQ_MAX_CHAIN in all); out->head
 * is @head even on failure
 *
 * Each descriptor is copied to a local before it is checked. Pure: touches no queue state.
 *
 * Return: VQ_WALK_OK, or why the chain is invalid (@out then partial).
 */
enum vq_walk_error vq_walk_chain(const struct guest_mem *mem, const struct vring_desc *desc,
				 unsigned num, unsigned head, bool indirect_ok, struct vq_chain *out)
{
	struct vring_desc d;

	out->head = (uint16_t)head;
	if (head >= num) {
		out->nread = out->nwrite = 0;
		out->read_len = out->write_len = 0;
		out->ndesc = 0;
		return VQ_WALK_BAD_HEAD;
	}
	d = vq_desc_read(desc, head);
	if (vq_chain_one(mem, &d, out))
		return VQ_WALK_OK;
	return walk_chain_slow(mem, desc, num, head, indirect_ok, out, d);
}

/**
 * vq_avail_idx() - the driver's avail index now (acquire load).
 * @vq: a started queue
 *
 * Return: the index, host order.
 */
uint16_t vq_avail_idx(struct virtqueue *vq)
{
	return le16toh(__atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE));
}

/**
 * vq_has_avail() - whether the driver made chains available that have not been popped.
 * @vq: the queue
 *
 * Return: false as well for a queue not started or broken.
 */
bool vq_has_avail(struct virtqueue *vq)
{
	if (!vq->started || vq->broken)
		return false;
	return __atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE) != htole16(vq->last_avail);
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
	uint16_t head;
	enum vq_walk_error err;

	if (vq->broken)
		return -1;
	if (!vq->started)
		return 0;
	/* The avail index is read once per batch: again only when what it announced is used up. */
	if (vq->shadow_avail == vq->last_avail) {
		/* Acquire: ring entries and descriptors are read after the index. */
		vq->shadow_avail = le16toh(__atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE));
		if (vq->shadow_avail == vq->last_avail)
			return 0;
		if ((uint16_t)(vq->shadow_avail - vq->last_avail) > vq->num) {
			vq_mark_broken(vq, "avail index moved by more than the queue size");
			return -1;
		}
	}
	head = VQ_READ_ONCE_U16(&vq->avail->ring[vq->last_avail & (vq->num - 1)]);
	err = vq_walk_chain(vq->mem, vq->desc, vq->num, head, vq->indirect, chain);
	if (err != VQ_WALK_OK) {
		vq_mark_broken(vq, vq_walk_error_str(err));
		return -1;
	}
	vq->last_avail++;
	if (vq->shadow_avail != vq->last_avail)
		vq_prefetch_next(vq);
	return 1;
}

/**
 * vq_unpop() - give back the last chains popped; they will be popped again.
 * @vq: the queue
 * @n: how many
 */
void vq_unpop(struct virtqueue *vq, unsigned n)
{
	vq->last_avail = (uint16_t)(vq->last_avail - n);
}

/* Log a write of len bytes at byte off of the used ring (when the ring is logged). */
static void vq_log_used_range(struct virtqueue *vq, uint64_t off, uint64_t len)
{
	if (vq->log_used)
		dirty_log_gpa(vq->log, vq->log_used_gpa + off, len);
}

/*
 * Log the guest buffers the used elements [from, from + n) report written: the first `len`
 * bytes of each chain's writable part, found by walking the chain again (the walker's checks
 * apply; a chain the driver changed in flight is its own loss). Every device write into a
 * guest buffer ends in a used element, so this one place covers them all (RX copying and
 * direct, the control queue) and the data path pays nothing per packet; TX elements (len 0)
 * cost one read each.
 */
static void vq_log_buffers(struct virtqueue *vq, uint16_t from, unsigned n)
{
	static struct vq_chain chain; /* one event-loop thread; only used within this call */

	for (unsigned i = 0; i < n; i++) {
		const struct vring_used_elem *e = &vq->used->ring[(uint16_t)(from + i) & (vq->num - 1)];
		uint32_t id = VQ_READ_ONCE_U32(&e->id), len = VQ_READ_ONCE_U32(&e->len);

		if (!len ||
		    vq_walk_chain(vq->mem, vq->desc, vq->num, id, vq->indirect, &chain) != VQ_WALK_OK)
			continue;
		dirty_log_iov(vq->log, vq->mem, &chain.iov[chain.nread], chain.nwrite, len);
	}
}

/* Log what a publication covers: the buffers, the used elements and the index. */
static void vq_log_published(struct virtqueue *vq, uint16_t from)
{
	unsigned n = (uint16_t)(vq->used_idx - from), first = from & (vq->num - 1u);

	if (n > vq->num)
		n = vq->num;
	vq_log_buffers(vq, from, n);
	if (first + n > vq->num) { /* wraps: the tail of the ring, then its start */
		vq_log_used_range(vq, 4 + 8ull * first, 8ull * (vq->num - first));
		n -= vq->num - first;
		first = 0;
	}
	vq_log_used_range(vq, 4 + 8ull * first, 8ull * n);
	vq_log_used_range(vq, offsetof(struct vring_used, idx), sizeof(uint16_t));
}

/**
 * vq_publish() - make every pushed used element visible to the driver with one index store.
 * @vq: the queue
 *
 * Release store: the elements are visible before the index. With dirty logging on, logs the
 * buffers, used elements and index the publication covers.
 */
void vq_publish(struct virtqueue *vq)
{
	uint16_t from = vq->used_published;

	/* Release: the used elements are visible before the index that covers them. */
	__atomic_store_n(&vq->used->idx, htole16(vq->used_idx), __ATOMIC_RELEASE);
	vq->used_published = vq->used_idx;
	if (__builtin_expect(vq->log != NULL, 0))
		vq_log_published(vq, from);
}

/**
 * vq_driver_wants_notify() - whether the driver accepts a notification for what was published
 * since the last decision, and record this decision point.
 * @vq: the queue
 *
 * Looks at avail->flags, or used_event with EVENT_IDX. Covers PUBLISHED entries only: deciding for
 * entries pushed but not yet published would let a driver that cannot see them be skipped.
 *
 * Return: true when a notification should be sent.
 */
bool vq_driver_wants_notify(struct virtqueue *vq)
{
	/* The fence inside orders the used index store before reading the suppression state. */
	bool wants = vq_driver_would_notify(vq);

	vq->signalled_used = vq->used_published;
	vq->signalled_valid = true;
	vq->unsignalled = (uint16_t)(vq->used_idx - vq->used_published);
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
	uint16_t old = vq->signalled_used, new = vq->used_published, event;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!vq->event_idx)
		return !(VQ_READ_ONCE_U16(&vq->avail->flags) & VRING_AVAIL_F_NO_INTERRUPT);
	if (!vq->signalled_valid)
		return true;
	event = VQ_READ_ONCE_U16(&vq->avail->ring[vq->num]); /* used_event */
	return (uint16_t)(new - event - 1) < (uint16_t)(new - old);
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
	if (!vq->started || vq->broken)
		return false;
	/*
	 * avail_event = the driver's avail index now, not last_avail: when we stopped short of
	 * the end (a packet that needs more buffers than are there), the driver's next additions
	 * start at its avail index, and only an event inside them makes it kick.
	 */
	if (vq->event_idx)
		VQ_WRITE_ONCE_U16((uint16_t *)&vq->used->ring[vq->num], vq_avail_idx(vq));
	else
		VQ_WRITE_ONCE_U16(&vq->used->flags, 0);
	if (__builtin_expect(vq->log != NULL, 0))
		vq_log_used_range(vq, vq->event_idx ? 4 + 8ull * vq->num : 0, sizeof(uint16_t));
	/* Order our store before re-reading avail->idx, or a kick could be lost. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return vq_has_avail(vq);
}

/**
 * vq_kick_disable() - tell the driver kicks are not needed now (best effort).
 * @vq: the queue; only without EVENT_IDX (VRING_USED_F_NO_NOTIFY), and only started, not broken
 */
void vq_kick_disable(struct virtqueue *vq)
{
	if (vq->started && !vq->broken && !vq->event_idx) {
		VQ_WRITE_ONCE_U16(&vq->used->flags, VRING_USED_F_NO_NOTIFY);
		if (__builtin_expect(vq->log != NULL, 0))
			vq_log_used_range(vq, 0, sizeof(uint16_t));
	}
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

	memset(vq, 0, sizeof(*vq));
	vq->index = index;
	vq->on_broken = on_broken;
	vq->owner_ctx = owner_ctx;
}

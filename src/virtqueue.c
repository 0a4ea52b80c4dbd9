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
		vq->desc = NULL;
		vq->avail = NULL;
		vq->used = NULL;
		return -1;
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
}

void vq_stop(struct virtqueue *vq)
{
	vq->started = false;
	vq->desc = NULL;
	vq->avail = NULL;
	vq->used = NULL;
}

void vq_mark_broken(struct virtqueue *vq, const char *what)
{
	if (vq->broken)
		return;
	log_guest("queue %u: %s; queue stopped until the device is reset", vq->index, what);
	vq->broken = true;
	if (vq->on_broken)
		vq->on_broken(vq->owner_ctx, vq->index);
}

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

uint16_t vq_avail_idx(struct virtqueue *vq)
{
	return le16toh(__atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE));
}

bool vq_has_avail(struct virtqueue *vq)
{
	if (!vq->started || vq->broken)
		return false;
	return __atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE) != htole16(vq->last_avail);
}

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

void vq_publish(struct virtqueue *vq)
{
	uint16_t from = vq->used_published;

	/* Release: the used elements are visible before the index that covers them. */
	__atomic_store_n(&vq->used->idx, htole16(vq->used_idx), __ATOMIC_RELEASE);
	vq->used_published = vq->used_idx;
	if (__builtin_expect(vq->log != NULL, 0))
		vq_log_published(vq, from);
}

bool vq_driver_wants_notify(struct virtqueue *vq)
{
	/* The fence inside orders the used index store before reading the suppression state. */
	bool wants = vq_driver_would_notify(vq);

	vq->signalled_used = vq->used_published;
	vq->signalled_valid = true;
	vq->unsignalled = (uint16_t)(vq->used_idx - vq->used_published);
	return wants;
}

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

void vq_kick_disable(struct virtqueue *vq)
{
	if (vq->started && !vq->broken && !vq->event_idx) {
		VQ_WRITE_ONCE_U16(&vq->used->flags, VRING_USED_F_NO_NOTIFY);
		if (__builtin_expect(vq->log != NULL, 0))
			vq_log_used_range(vq, 0, sizeof(uint16_t));
	}
}

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

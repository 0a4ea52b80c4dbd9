/* SPDX-License-Identifier: MIT */
/* vq_split.c - a split virtqueue: ring setup, the chain walker, pops, the used ring, events. */
#include <endian.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "mem/mem.h"
#include "virtq/vq_ring_internal.h"
#include "virtq/vq_split_internal.h"

/*
 * vq_prefetch_next() - vq_prefetch_head() for the next announced chain's head (from the avail
 * ring). Call only when the batch announced a chain (shadow_avail != last_avail).
 */
static inline void vq_prefetch_next(const struct virtqueue *vq)
{
	vq_prefetch_head(vq, VQ_READ_ONCE_U16(&vq->avail->ring[vq->last_avail & (vq->run.num - 1)]),
			 false);
}

/*
 * Every chain vq_walk_chain()'s fast path does not take; d is the head descriptor's copy; at most
 * max_desc (<= VQ_MAX_CHAIN) descriptors, indirect ones included, are taken. With
 * `in_order` (a split IN_ORDER ring, num a power of 2) the walk checks IN_ORDER as it goes, on
 * the same copies: each top-level NEXT must name the slot right after its own (0 after num - 1),
 * and *last gets the chain's last top-level descriptor (the next chain must start after it).
 * Each descriptor is read once; between two reads the guest's other vCPU may run
 * (GUEST_RACE_RING_WALK), and nothing read before is read again.
 */
static __attribute__((noinline)) enum vq_walk_error
walk_chain_slow(const struct guest_mem *mem, const struct vring_desc *desc, unsigned num,
		unsigned head, bool indirect_ok, unsigned max_desc, struct vq_chain *out,
		struct vring_desc d, bool in_order, unsigned *last)
{
	const struct vring_desc *table = desc;
	unsigned table_size = num, in_table = 0, total = 0, idx = head;
	bool indirect = false, seen_write = false;

	out->nread = out->nwrite = 0;
	out->read_len = out->write_len = 0;
	out->ndesc = 0;
	*last = head;

	for (;;) {
		if (total) {
			guest_race(GUEST_RACE_RING_WALK);
			d = vq_desc_read(table, idx);
			if (!indirect)
				*last = idx;
		}

		/* A table of n entries can hold at most n descriptors of one chain. */
		if (++in_table > table_size || ++total > max_desc)
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

		enum vq_walk_error err = vq_chain_add_buf(mem, d.addr, d.len,
							  d.flags & VRING_DESC_F_WRITE,
							  &seen_write, out);
		if (err != VQ_WALK_OK)
			return err;

		if (!(d.flags & VRING_DESC_F_NEXT))
			return VQ_WALK_OK;
		if (in_order && !indirect && d.next != ((idx + 1) & (num - 1)))
			return VQ_WALK_IN_ORDER;
		idx = d.next;
		if (idx >= table_size)
			return VQ_WALK_BAD_NEXT;
	}
}

static bool is_pow2(unsigned n)
{
	return n && !(n & (n - 1));
}

/*
 * IN_ORDER batches (split): vq_push() writes into a private shadow of the used ring and
 * vq_publish() copies one element per batch. 0, or -1 (no memory).
 */
static int split_shadow_alloc(struct virtqueue *vq)
{
	if (!vq->run.batch_used)
		return 0;
	vq->priv = calloc(1, sizeof(struct vring_used) +
				 (size_t)vq->run.num * sizeof(struct vring_used_elem));
	return vq->priv ? 0 : -1;
}

/**
 * vq_split_start() - the split half of vq_start(): translate and check the rings, start the queue.
 * @vq: the queue (from vq_start(): vq->run set, no private memory)
 * @mem: the guest memory
 *
 * The size must be a power of two up to VQ_MAX_SIZE, the rings aligned and each inside one
 * region; starts at the split base vq_set_base() gave (if any), else at last_avail (kept across
 * a stop), and at the used index the ring holds.
 *
 * Return: 0, or -1 (logged) with the queue not started.
 */
int vq_split_start(struct virtqueue *vq, const struct guest_mem *mem)
{
	uint64_t num = vq->run.num;

	if (vq->base_set) {
		vq->last_avail = (uint16_t)vq->base;
		vq->base_set = false;
	}
	if (!is_pow2(vq->run.num) || vq->run.num > VQ_MAX_SIZE) {
		log_guest("queue %u: bad size %u", vq->index, vq->run.num);
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
	if (split_shadow_alloc(vq) < 0) {
		log_warn("queue %u: no memory for the IN_ORDER shadow", vq->index);
		goto refuse;
	}
	vq->uring = vq->used;
	if (vq->run.batch_used)
		vq->used = vq->priv;
	vq->mask = (uint16_t)(vq->run.num - 1);
	vq->mem = mem;
	vq->shadow_avail = vq->last_avail; /* forces a read of the index at the first pop */
	vq->used_idx = VQ_READ_ONCE_U16(&vq->uring->idx);
	vq->used_published = vq->used_idx;
	vq->signalled_used = vq->used_idx;
	vq->signalled_valid = false;
	vq->unsignalled = 0;
	vq->io_next = VQ_IO_ANY; /* IN_ORDER: the first head after a start may be any */
	vq->broken = false;
	vq->started = true;
	vq->ready = vq->run.in_order ? VQ_FAST_SPLIT_IN_ORDER : VQ_FAST_SPLIT;
	return 0;

refuse:
	vq->desc = NULL;
	vq->avail = NULL;
	vq->used = vq->uring = NULL;
	return -1;
}

/* vq_walk_chain() taking at most max_desc descriptors (a logging walk: vq_log_walk_max()). */
static enum vq_walk_error walk_chain_max(const struct guest_mem *mem, const struct vring_desc *desc,
					 unsigned num, unsigned head, bool indirect_ok,
					 unsigned max_desc, struct vq_chain *out)
{
	struct vring_desc d;
	unsigned last;

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
	return walk_chain_slow(mem, desc, num, head, indirect_ok, max_desc, out, d, false, &last);
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
	return walk_chain_max(mem, desc, num, head, indirect_ok, VQ_MAX_CHAIN, out);
}

/**
 * vq_split_avail_idx() - the driver's avail index now (acquire load).
 * @vq: a started split queue
 *
 * Return: the index, host order.
 */
uint16_t vq_split_avail_idx(struct virtqueue *vq)
{
	return le16toh(__atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE));
}

/**
 * vq_split_avail_at_least() - whether the driver made at least n chains available that have not
 * been popped.
 * @vq: a started split queue
 * @n: how many, at least 1
 *
 * An avail index more than the ring size ahead (hostile) counts as a full ring; the next pop
 * breaks the queue.
 *
 * Return: true if it did.
 */
bool vq_split_avail_at_least(struct virtqueue *vq, unsigned n)
{
	uint16_t unpopped = (uint16_t)(vq_split_avail_idx(vq) - vq->last_avail);

	if (unpopped > vq->run.num)
		unpopped = vq->run.num;
	return unpopped >= n;
}

/**
 * vq_split_has_avail() - whether the driver made chains available that have not been popped.
 * @vq: a started split queue, not broken
 *
 * Return: true if it did.
 */
bool vq_split_has_avail(struct virtqueue *vq)
{
	return __atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE) != htole16(vq->last_avail);
}

/*
 * The split pop's walk of the chain at head (below num): vq_walk_chain(), and on an IN_ORDER
 * ring its check in the same walk (walk_chain_slow()): the driver uses the descriptor table in
 * ring order, a chain's descriptors at head, head + 1, ... (0 after num - 1), the next chain
 * right after (io_next, moved past the chain). One read of each descriptor decides both, so a
 * pop costs the descriptors chain->ndesc counts, whatever the driver rewrites meanwhile.
 */
static enum vq_walk_error split_walk(struct virtqueue *vq, uint16_t head, struct vq_chain *chain)
{
	const bool in_order = vq->run.in_order;
	struct vring_desc d;
	enum vq_walk_error err;
	unsigned last = head;

	chain->head = head;
	if (in_order && vq->io_next != VQ_IO_ANY && head != vq->io_next)
		return VQ_WALK_IN_ORDER;
	d = vq_desc_read(vq->desc, head);
	if (!vq_chain_one(vq->mem, &d, chain)) {
		err = walk_chain_slow(vq->mem, vq->desc, vq->run.num, head, vq->run.indirect,
				      VQ_MAX_CHAIN, chain, d, in_order, &last);
		if (err != VQ_WALK_OK)
			return err;
	}
	if (in_order)
		vq->io_next = (last + 1) & (vq->run.num - 1u);
	return VQ_WALK_OK;
}

/**
 * vq_split_pop() - vq_pop_slow() of a split ring: every case vq_pop()'s inline fast path does
 * not take.
 * @vq: a split queue
 * @chain: the chain taken
 *
 * Reads the avail index only when what it last announced is used up; an index that moved by more
 * than the queue size, or a chain the walker refuses, breaks the queue. Prefetches the next
 * chain's first buffer when the batch announced one.
 *
 * Return: 1 with @chain filled, 0 when the ring is empty (or the queue not started), -1 when the
 * queue is broken.
 */
int vq_split_pop(struct virtqueue *vq, struct vq_chain *chain)
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
		if ((uint16_t)(vq->shadow_avail - vq->last_avail) > vq->run.num) {
			vq_mark_broken(vq, "avail index moved by more than the queue size");
			return -1;
		}
	}
	head = VQ_READ_ONCE_U16(&vq->avail->ring[vq->last_avail & (vq->run.num - 1)]);
	err = head < vq->run.num ? split_walk(vq, head, chain) : VQ_WALK_BAD_HEAD;
	guest_race(GUEST_RACE_RING_WALK); /* the chain is taken: nothing of it is read again */
	if (err != VQ_WALK_OK) {
		vq_mark_broken(vq, vq_walk_error_str(err));
		return -1;
	}
	vq->last_avail++;
	vq_log_credit_add(vq, chain->ndesc);
	if (vq->shadow_avail != vq->last_avail)
		vq_prefetch_next(vq);
	return 1;
}

/**
 * vq_split_unpop() - give back the last chains popped; they will be popped again.
 * @vq: a started split queue
 * @n: how many
 */
void vq_split_unpop(struct virtqueue *vq, unsigned n)
{
	if (vq->run.in_order && n) {
		/* The head to expect again is the first given back's, read again from the ring: a
		 * driver may have rewritten it, and vq_pop()'s fast path trusts io_next to be below
		 * num, so anything else expects no head in particular (the walker checks it). */
		uint16_t first = (uint16_t)(vq->last_avail - n);
		uint16_t head = VQ_READ_ONCE_U16(&vq->avail->ring[first & (vq->run.num - 1)]);

		vq->io_next = head < vq->run.num ? head : VQ_IO_ANY;
	}
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
 * bytes of each chain's writable part, found by walking the chain again. Every device write
 * into a guest buffer ends in a used element, so this one place covers them all (RX copying
 * and direct, the control queue) and the data path pays nothing per packet; TX elements (len 0)
 * cost one read each. Before the index that publishes them: once the driver sees an element it
 * may reuse the chain's descriptors for other buffers at once, and a walk after that would
 * log those instead of the ones written (a chain a driver changes in flight is its own loss).
 */
static __attribute__((noinline, cold)) void vq_log_buffers(struct virtqueue *vq, uint16_t from,
								  unsigned n)
{
	struct vq_chain chain; /* this call's own (16 KiB): queues log on several workers at once */

	if (n > vq->run.num) /* clamped here, off the path that does not log */
		n = vq->run.num;
	for (unsigned i = 0; i < n; i++) {
		const struct vring_used_elem *e = &vq->used->ring[(uint16_t)(from + i) & vq->mask];
		uint32_t id = VQ_READ_ONCE_U32(&e->id), len = VQ_READ_ONCE_U32(&e->len);
		enum vq_walk_error err;

		if (!len)
			continue;
		err = walk_chain_max(vq->mem, vq->desc, vq->run.num, id, vq->run.indirect,
				     vq_log_walk_max(vq), &chain);
		vq_log_credit_spend(vq, chain.ndesc);
		if (err == VQ_WALK_OK)
			dirty_log_iov(vq->log, vq->mem, &chain.iov[chain.nread], chain.nwrite, len);
	}
}

/* Log the ring's part of a publication, after its stores: n used elements and the index. */
static void vq_log_published(struct virtqueue *vq, uint16_t from, unsigned n)
{
	unsigned first = from & (vq->run.num - 1u);

	if (n > vq->run.num)
		n = vq->run.num;
	if (first + n > vq->run.num) { /* wraps: the tail of the ring, then its start */
		vq_log_used_range(vq, 4 + 8ull * first, 8ull * (vq->run.num - first));
		n -= vq->run.num - first;
		first = 0;
	}
	vq_log_used_range(vq, 4 + 8ull * first, 8ull * n);
	vq_log_used_range(vq, offsetof(struct vring_used, idx), sizeof(uint16_t));
}

/**
 * vq_split_publish() - make every pushed used element visible to the driver with one index
 * store.
 * @vq: a split queue
 *
 * Release store: the elements are visible before the index. With dirty logging on, logs the
 * buffers the publication covers before the store, its used elements and index after it.
 */
void vq_split_publish(struct virtqueue *vq)
{
	uint16_t from = vq->used_published;
	unsigned n;

	if (__builtin_expect(!vq->started, 0))
		return; /* no ring to publish to */
	if (vq->run.batch_used && from != vq->used_idx) {
		/* IN_ORDER: the batch's last element alone, where the driver looks next. */
		const struct vring_used_elem *e =
			&vq->used->ring[(uint16_t)(vq->used_idx - 1) & vq->mask];
		struct vring_used_elem *u = &vq->uring->ring[from & vq->mask];

		VQ_WRITE_ONCE_U32(&u->id, le32toh(e->id));
		VQ_WRITE_ONCE_U32(&u->len, le32toh(e->len));
	}
	n = (uint16_t)(vq->used_idx - from);
	if (__builtin_expect(vq->log != NULL, 0))
		vq_log_buffers(vq, from, n);
	/* Release: the used elements are visible before the index that covers them. */
	__atomic_store_n(&vq->uring->idx, htole16(vq->used_idx), __ATOMIC_RELEASE);
	vq->unsignalled += n;
	vq->used_published = vq->used_idx;
	if (__builtin_expect(vq->log != NULL, 0))
		vq_log_published(vq, from, n);
}

/**
 * vq_split_would_notify() - whether the driver accepts a notification for what was published
 * since the last decision (vq_driver_would_notify() of a split ring).
 * @vq: a split queue
 *
 * Looks at avail->flags, or used_event with EVENT_IDX.
 *
 * Return: true when the driver accepts a notification.
 */
bool vq_split_would_notify(const struct virtqueue *vq)
{
	uint16_t old = vq->signalled_used, new = vq->used_published, event;

	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!vq->run.event_idx)
		return !(VQ_READ_ONCE_U16(&vq->avail->flags) & VRING_AVAIL_F_NO_INTERRUPT);
	if (!vq->signalled_valid)
		return true;
	event = VQ_READ_ONCE_U16(&vq->avail->ring[vq->run.num]); /* used_event */
	return (uint16_t)(new - event - 1) < (uint16_t)(new - old);
}

/**
 * vq_split_kick_enable() - ask the driver to kick when it adds chains after those available now.
 * @vq: a started split queue, not broken
 *
 * Writes avail_event (EVENT_IDX) or clears VRING_USED_F_NO_NOTIFY, then re-reads the avail index
 * after a full fence, so a kick cannot be lost.
 *
 * Return: true if there are chains not popped yet: process them before sleeping.
 */
bool vq_split_kick_enable(struct virtqueue *vq)
{
	/*
	 * avail_event = the driver's avail index now, not last_avail: when we stopped short of
	 * the end (a packet that needs more buffers than are there), the driver's next additions
	 * start at its avail index, and only an event inside them makes it kick.
	 */
	if (vq->run.event_idx)
		VQ_WRITE_ONCE_U16((uint16_t *)&vq->uring->ring[vq->run.num], vq_split_avail_idx(vq));
	else
		VQ_WRITE_ONCE_U16(&vq->uring->flags, 0);
	if (__builtin_expect(vq->log != NULL, 0))
		vq_log_used_range(vq, vq->run.event_idx ? 4 + 8ull * vq->run.num : 0,
				  sizeof(uint16_t));
	/* Order our store before re-reading avail->idx, or a kick could be lost. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return vq_split_has_avail(vq);
}

/**
 * vq_split_kick_disable() - tell the driver kicks are not needed now (best effort).
 * @vq: a split queue; only without EVENT_IDX (VRING_USED_F_NO_NOTIFY), and only started, not broken
 *
 * Writes only when the flag is not set yet: a polling queue disables kicks on every run, and a
 * store each time would take the cache line from the driver, which reads it before each kick.
 */
void vq_split_kick_disable(struct virtqueue *vq)
{
	if (vq->started && !vq->broken && !vq->run.event_idx &&
	    VQ_READ_ONCE_U16(&vq->uring->flags) != VRING_USED_F_NO_NOTIFY) {
		VQ_WRITE_ONCE_U16(&vq->uring->flags, VRING_USED_F_NO_NOTIFY);
		if (__builtin_expect(vq->log != NULL, 0))
			vq_log_used_range(vq, 0, sizeof(uint16_t));
	}
}

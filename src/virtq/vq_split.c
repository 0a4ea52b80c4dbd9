/* SPDX-License-Identifier: MIT */
/* virtqueue.c - device side of a split virtqueue (ring setup, chain walker, used ring); dispatch. */
#include "virtq/virtq.h"

#include <endian.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "virtq/vq_ring_internal.h"

#include "mem/mem.h"
#include "lib/log.h"

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
	[VQ_WALK_NOT_AVAIL] = "descriptor in a list not made available",
	[VQ_WALK_BAD_ID] = "buffer id out of range",
	[VQ_WALK_ID_IN_FLIGHT] = "buffer id reused while in flight",
	[VQ_WALK_IN_ORDER] = "descriptors not used in ring order (IN_ORDER)",
	[VQ_WALK_TAKEN_BACK] = "available descriptor taken back",
	[VQ_WALK_OVERRUN] = "more descriptors in flight than the ring holds",
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

/**
 * vq_chain_add_buf() - append one data descriptor's buffer to a walked chain (both walkers).
 * @mem: guest memory the buffer is translated in
 * @addr: its GPA
 * @len: its bytes (0: nothing added)
 * @write: device-writable
 * @seen_write: a writable buffer came before (updated): a readable one after it is refused
 * @out: the chain, nread/nwrite/read_len/write_len updated
 *
 * Return: VQ_WALK_OK, or READ_AFTER_WRITE, TOO_MANY_IOV, BAD_ADDR, TOO_BIG.
 */
enum vq_walk_error vq_chain_add_buf(const struct guest_mem *mem, uint64_t addr, uint32_t len,
				    bool write, bool *seen_write, struct vq_chain *out)
{
	unsigned n = out->nread + out->nwrite;
	int got;

	if (write)
		*seen_write = true;
	else if (*seen_write)
		return VQ_WALK_READ_AFTER_WRITE;
	if (!len)
		return VQ_WALK_OK;
	if (n >= VQ_MAX_CHAIN) /* never within one walk; VQ_MAX_CHAIN - n must not wrap */
		return VQ_WALK_TOO_MANY_IOV;
	/* Data buffers may straddle adjacent regions: one iovec per region. */
	got = guest_mem_translate_iov(mem, GUEST_ADDR_GPA, addr, len, &out->iov[n],
				      VQ_MAX_CHAIN - n);
	if (got == GUEST_MEM_IOV_FULL)
		return VQ_WALK_TOO_MANY_IOV;
	if (got < 0)
		return VQ_WALK_BAD_ADDR;
	if (write) {
		out->nwrite += (unsigned)got;
		out->write_len += len;
	} else {
		out->nread += (unsigned)got;
		out->read_len += len;
	}
	if (out->read_len > UINT32_MAX || out->write_len > UINT32_MAX)
		return VQ_WALK_TOO_BIG;
	return VQ_WALK_OK;
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

/* The ring's private memory back to the heap, and every pointer into it forgotten. */
static void vq_priv_free(struct virtqueue *vq)
{
	free(vq->priv);
	vq->priv = NULL;
	vq->pk.rec = NULL;
	vq->pk.in_flight = NULL;
	vq->pk.cap = 0;
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

/*
 * The split half of vq_start(): the ring's size and layout are in vq->run, a base for a split
 * ring (if any) in last_avail.
 */
static int split_start(struct virtqueue *vq, const struct guest_mem *mem)
{
	uint64_t num = vq->run.num;

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
 * Split: the size must be a power of two up to VQ_MAX_SIZE, the rings aligned and each inside
 * one region; starts at last_avail (kept across a stop; vq_set_base() sets it) and the used
 * index the ring holds.
 * Packed: see vq_packed_start(). Clears a broken state.
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
	if (vq->run.packed) {
		rc = vq_packed_start(vq, mem);
	} else {
		if (vq->base_set) {
			vq->last_avail = (uint16_t)vq->base;
			vq->base_set = false;
		}
		rc = split_start(vq, mem);
	}
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
		vq->shadow_avail = vq->last_avail; /* kept from now (virtqueue.h) */
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
	if (vq->ready == VQ_FAST_PACKED)
		vq->shadow_avail = vq->last_avail; /* kept from now (virtqueue.h) */
	vq->broken = true;
	vq->ready = VQ_FAST_NONE;
	if (vq->on_broken)
		vq->on_broken(vq->owner_ctx, vq->index);
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
 * vq_avail_idx() - the driver's avail index now (acquire load).
 * @vq: a started queue
 *
 * Return: the index, host order.
 */
uint16_t vq_avail_idx(struct virtqueue *vq)
{
	if (vq->run.packed)
		return vq_packed_avail_idx(vq);
	return le16toh(__atomic_load_n(&vq->avail->idx, __ATOMIC_ACQUIRE));
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
	uint16_t unpopped;

	if (n == 0)
		return true;
	if (vq->run.packed)
		return vq_packed_avail_at_least(vq, n);
	unpopped = (uint16_t)(vq_avail_idx(vq) - vq->last_avail);
	if (unpopped > vq->run.num)
		unpopped = vq->run.num;
	return unpopped >= n;
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
	if (vq->run.packed)
		return vq_packed_has_avail(vq);
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

	if (vq->run.packed)
		return vq_packed_pop(vq, chain);
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
 * vq_unpop() - give back the last chains popped; they will be popped again.
 * @vq: the queue
 * @n: how many
 */
void vq_unpop(struct virtqueue *vq, unsigned n)
{
	if (!vq->started)
		return; /* a stop gave every chain back already */
	if (vq->run.packed) {
		vq_packed_unpop(vq, n);
		return;
	}
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
 * vq_publish() - make every pushed used element visible to the driver with one index store.
 * @vq: the queue
 *
 * Release store: the elements are visible before the index. With dirty logging on, logs the
 * buffers the publication covers before the store, its used elements and index after it.
 */
void vq_publish(struct virtqueue *vq)
{
	uint16_t from = vq->used_published;
	unsigned n;

	if (vq->run.packed) {
		vq_packed_publish(vq);
		return;
	}
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
	uint16_t old = vq->signalled_used, new = vq->used_published, event;

	if (vq->run.packed)
		return vq_packed_would_notify(vq);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	if (!vq->run.event_idx)
		return !(VQ_READ_ONCE_U16(&vq->avail->flags) & VRING_AVAIL_F_NO_INTERRUPT);
	if (!vq->signalled_valid)
		return true;
	event = VQ_READ_ONCE_U16(&vq->avail->ring[vq->run.num]); /* used_event */
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
	if (vq->run.packed)
		return vq_packed_kick_enable(vq);
	/*
	 * avail_event = the driver's avail index now, not last_avail: when we stopped short of
	 * the end (a packet that needs more buffers than are there), the driver's next additions
	 * start at its avail index, and only an event inside them makes it kick.
	 */
	if (vq->run.event_idx)
		VQ_WRITE_ONCE_U16((uint16_t *)&vq->uring->ring[vq->run.num], vq_avail_idx(vq));
	else
		VQ_WRITE_ONCE_U16(&vq->uring->flags, 0);
	if (__builtin_expect(vq->log != NULL, 0))
		vq_log_used_range(vq, vq->run.event_idx ? 4 + 8ull * vq->run.num : 0,
				  sizeof(uint16_t));
	/* Order our store before re-reading avail->idx, or a kick could be lost. */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return vq_has_avail(vq);
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
	if (vq->run.packed) {
		vq_packed_kick_disable(vq);
		return;
	}
	if (vq->started && !vq->broken && !vq->run.event_idx &&
	    VQ_READ_ONCE_U16(&vq->uring->flags) != VRING_USED_F_NO_NOTIFY) {
		VQ_WRITE_ONCE_U16(&vq->uring->flags, VRING_USED_F_NO_NOTIFY);
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

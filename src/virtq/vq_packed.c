/* SPDX-License-Identifier: MIT */
/* vq_packed.c - a packed virtqueue: ring setup, the list walker, pops, used write-back, events, base. */
#include <endian.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "mem/mem.h"
#include "virtq/vq_packed_internal.h"
#include "virtq/vq_ring_internal.h"

/*
 * The model (spec "Packed Virtqueues"): the driver makes a list available at slot s by
 * writing its descriptors, the first one's flags last, AVAIL = its wrap counter and USED = the
 * inverse. The device walks lists in ring order, keeps a record per popped buffer (id, slots),
 * and completes them in the order popped: the used descriptor of a buffer goes to its list's
 * first slot, with AVAIL = USED = that slot's wrap counter; the used position (used_slot,
 * used_wrap) is where the oldest unpublished buffer starts, each later one its predecessor's
 * slots further on. vq_push() writes (id, len) into a private shadow; vq_publish() turns a
 * batch into descriptors in one pass, the batch's first flags last. The buffer counters of
 * struct virtqueue mean what they mean on a split ring, so notify.c, coalescing and layer 4 do
 * not know the layout.
 */

/* The descriptor ring, as packed descriptors. */
static inline struct pvirtq_desc *pk_ring(const struct virtqueue *vq)
{
	return (struct pvirtq_desc *)(void *)vq->desc;
}

/* The record of the list that starts (or, of several slots, ends) at slot. */
static inline struct vq_packed_rec *pk_rec(const struct virtqueue *vq, unsigned slot)
{
	return &vq->pk.rec[slot];
}

/* Acquire load of a slot's flags: the rest of the descriptor is read after it. */
static inline uint16_t pk_flags(const struct pvirtq_desc *d)
{
	return le16toh(__atomic_load_n(&d->flags, __ATOMIC_ACQUIRE));
}

/* Advance a position by n slots (n <= num): an advance onto or past the end flips the wrap. */
static inline void pk_advance(uint16_t num, uint16_t *slot, bool *wrap, unsigned n)
{
	unsigned s = *slot + n;

	if (s >= num) {
		s -= num;
		*wrap = !*wrap;
	}
	*slot = (uint16_t)s;
}

/* The buffer count at the farthest position looked at (shadow_avail, see virtq.h). */
static inline uint16_t pk_seen(const struct virtqueue *vq)
{
	return vq->ready == VQ_FAST_PACKED ? vq->last_avail : vq->shadow_avail;
}

/* Available for the device at a position whose wrap counter is wrap: AVAIL == wrap != USED. */
static inline bool pk_is_avail(uint16_t flags, bool wrap)
{
	return (flags & (VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED)) ==
	       (wrap ? VRING_PACKED_DESC_F_AVAIL : VRING_PACKED_DESC_F_USED);
}

/* The descriptor's other fields, read once (the flags were read first). */
static inline struct pvirtq_desc pk_desc_read(const struct pvirtq_desc *p, uint16_t flags)
{
	struct pvirtq_desc d;

	memcpy(&d, p, sizeof(d));
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	d.addr = le64toh(d.addr);
	d.len = le32toh(d.len);
	d.id = le16toh(d.id);
	d.flags = flags;
	return d;
}

/* Move a position back by n slots (n <= num): the inverse of pk_advance(). */
static inline void pk_retreat(uint16_t num, uint16_t *slot, bool *wrap, unsigned n)
{
	if (*slot < n) {
		*slot = (uint16_t)(*slot + num - n);
		*wrap = !*wrap;
	} else {
		*slot = (uint16_t)(*slot - n);
	}
}

/* The AVAIL/USED bits of a descriptor available at a position whose wrap counter is wrap. */
static inline uint16_t pk_want(bool wrap)
{
	return wrap ? VRING_PACKED_DESC_F_AVAIL : VRING_PACKED_DESC_F_USED;
}

/* An indirect table of a packed ring: sequential entries, only WRITE valid, no nesting. */
static enum vq_walk_error pk_walk_indirect(const struct guest_mem *mem, const struct pvirtq_desc *d,
					   unsigned max_desc, struct vq_chain *out)
{
	const struct pvirtq_desc *table;
	unsigned n;
	bool seen_write = false;

	if (d->len == 0 || d->len % sizeof(struct pvirtq_desc) ||
	    d->len / sizeof(struct pvirtq_desc) > VQ_MAX_CHAIN)
		return VQ_WALK_BAD_INDIRECT;
	/* Read in place, so it must lie in one region (as on split rings). */
	table = guest_mem_translate(mem, GUEST_ADDR_GPA, d->addr, d->len);
	if (!table)
		return VQ_WALK_BAD_INDIRECT;
	n = d->len / sizeof(struct pvirtq_desc);
	for (unsigned i = 0; i < n; i++) {
		struct pvirtq_desc e;
		enum vq_walk_error err;

		if (i)
			guest_race(GUEST_RACE_RING_WALK); /* between two reads of the table */
		memcpy(&e, (const uint8_t *)table + (size_t)i * sizeof(e), sizeof(e));
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		e.flags = le16toh(e.flags);
		/* NEXT inside a table is ignored (early drivers set it), the ids too. */
		if (e.flags & VRING_DESC_F_INDIRECT)
			return VQ_WALK_NESTED_INDIRECT;
		if (++out->ndesc > max_desc)
			return VQ_WALK_TOO_LONG;
		err = vq_chain_add_buf(mem, le64toh(e.addr), le32toh(e.len),
				       e.flags & VRING_DESC_F_WRITE, &seen_write, out);
		if (err != VQ_WALK_OK)
			return err;
	}
	return VQ_WALK_OK;
}

/**
 * vq_walk_packed() - the one packed-ring list walker.
 * @mem: guest memory the buffers are translated in
 * @ring: the descriptor ring (host pointer already validated)
 * @num: its number of slots (any value 1..VQ_MAX_SIZE)
 * @slot: where the list starts; its head was seen available (flags passed as @head_flags)
 * @wrap: the wrap counter at @slot
 * @head_flags: the head's flags, read with acquire
 * @indirect_ok: VIRTIO_RING_F_INDIRECT_DESC negotiated
 * @max_desc: the most descriptors taken (VQ_MAX_CHAIN; less for a logging walk)
 * @out: the chain (out->head = the buffer id, from the list's last descriptor)
 * @nslots: ring slots the list takes (1 for an indirect one)
 *
 * Every later descriptor of a NEXT list must be available with the wrap counter of its own
 * slot; INDIRECT only alone in a list; at most num slots and max_desc descriptors; the id
 * must be below num. Pure: touches no queue state.
 *
 * Return: VQ_WALK_OK, or why the list is invalid (@out then partial).
 */
enum vq_walk_error vq_walk_packed(const struct guest_mem *mem, const struct pvirtq_desc *ring,
				  unsigned num, unsigned slot, bool wrap, uint16_t head_flags,
				  bool indirect_ok, unsigned max_desc, struct vq_chain *out,
				  unsigned *nslots)
{
	uint16_t s = (uint16_t)slot, flags = head_flags;
	bool w = wrap, seen_write = false;
	unsigned n = 0;

	out->nread = out->nwrite = 0;
	out->read_len = out->write_len = 0;
	out->ndesc = 0;
	*nslots = 0;
	for (;;) {
		struct pvirtq_desc d;
		enum vq_walk_error err;

		if (n) {
			guest_race(GUEST_RACE_RING_WALK); /* between two reads of the ring */
			flags = pk_flags(&ring[s]);
			if (!pk_is_avail(flags, w))
				return VQ_WALK_NOT_AVAIL;
		}
		d = pk_desc_read(&ring[s], flags);
		if (++n > num || ++out->ndesc > max_desc)
			return VQ_WALK_TOO_LONG;
		*nslots = n;
		if (d.flags & VRING_DESC_F_INDIRECT) {
			if (!indirect_ok)
				return VQ_WALK_INDIRECT_DISALLOWED;
			/* "A NEXT list must not contain INDIRECT descriptors." */
			if (n > 1 || (d.flags & VRING_DESC_F_NEXT))
				return VQ_WALK_NESTED_INDIRECT;
			out->ndesc = 0; /* the table's entries are what costs */
			err = pk_walk_indirect(mem, &d, max_desc, out);
			if (err != VQ_WALK_OK)
				return err;
			if (!out->ndesc)
				out->ndesc = 1;
		} else {
			err = vq_chain_add_buf(mem, d.addr, d.len, d.flags & VRING_DESC_F_WRITE,
					       &seen_write, out);
			if (err != VQ_WALK_OK)
				return err;
		}
		if (!(d.flags & VRING_DESC_F_NEXT) || (d.flags & VRING_DESC_F_INDIRECT)) {
			out->head = d.id; /* the Buffer ID is in the list's last descriptor */
			return d.id < num ? VQ_WALK_OK : VQ_WALK_BAD_ID;
		}
		pk_advance((uint16_t)num, &s, &w, 1);
	}
}

/**
 * vq_packed_start() - translate and check a packed ring and start the queue.
 * @vq: the queue (from vq_start(): vq->run set, no private memory): vq->run.num (1..VQ_MAX_SIZE,
 *      any value), desc_addr (16-aligned, 16 * num bytes), avail_addr (Driver Area) and
 *      used_addr (Device Area, both 4-aligned, 4 bytes), and a packed ring's base
 * @mem: the guest memory
 *
 * Resumes at the positions vq_set_base() (or the last stop) gave, else at slot 0 with both
 * wrap counters 1 (a reset ring; so is a base of 0 while the last descriptor has no USED bit).
 * When the used position is behind the avail one, the buffers
 * in between (the previous backend's, in flight) are walked again: none is lost.
 *
 * Return: 0, or -1 (logged) with the queue not started.
 */
int vq_packed_start(struct virtqueue *vq, const struct guest_mem *mem)
{
	struct vq_packed_state *pk = &vq->pk;
	uint16_t avail_slot = 0, used_slot = 0;
	bool avail_wrap = true, used_wrap = true;
	unsigned cap = 1;
	uint64_t off;
	const struct guest_mem_region *r;

	if (vq->run.num == 0 || vq->run.num > VQ_MAX_SIZE) {
		log_guest("queue %u: bad size %u", vq->index, vq->run.num);
		return -1;
	}
	if ((vq->desc_addr & 15) || (vq->avail_addr & 3) || (vq->used_addr & 3)) {
		log_guest("queue %u: misaligned ring addresses", vq->index);
		return -1;
	}
	if (vq->base_set) {
		avail_slot = vq->base & 0x7fff;
		avail_wrap = vq->base >> 15 & 1;
		used_slot = vq->base >> 16 & 0x7fff;
		used_wrap = vq->base >> 31;
		if (!(vq->base >> 16)) { /* DPDK-style: only the avail half */
			used_slot = avail_slot;
			used_wrap = avail_wrap;
		}
		if (avail_slot >= vq->run.num || used_slot >= vq->run.num) {
			log_guest("queue %u: packed base 0x%x outside a ring of %u", vq->index,
				  vq->base, vq->run.num);
			return -1;
		}
		if (avail_slot != used_slot || avail_wrap != used_wrap)
			log_guest("queue %u: %s: resuming at the used position", vq->index,
				  "buffers were in flight at the last stop");
	}
	vq->desc = guest_mem_translate(mem, vq->ring_space, vq->desc_addr, 16ull * vq->run.num);
	pk->drv_event = guest_mem_translate(mem, vq->ring_space, vq->avail_addr, 4);
	pk->dev_event = guest_mem_translate(mem, vq->ring_space, vq->used_addr, 4);
	if (!vq->desc || !pk->drv_event || !pk->dev_event) {
		log_guest("queue %u: ring outside guest memory", vq->index);
		goto refuse;
	}
	if (((uintptr_t)vq->desc & 15) || ((uintptr_t)pk->drv_event & 3) ||
	    ((uintptr_t)pk->dev_event & 3)) {
		log_guest("queue %u: rings misaligned in vnetd's mapping of their region", vq->index);
		goto refuse;
	}
	if (vq->base_set && vq->base == 0 &&
	    !(le16toh(__atomic_load_n(&pk_ring(vq)[vq->run.num - 1].flags, __ATOMIC_ACQUIRE)) &
	      VRING_PACKED_DESC_F_USED)) {
		/*
		 * Base 0 names slot 0 with both wrap counters 0: a ring after one lap, whose every
		 * slot the device marked used (USED = 1, as is the last one's). A last slot without
		 * USED is a ring in its first lap: frontends that send 0 for any fresh ring (User-Mode
		 * Linux's virtio_uml, written for split rings) mean slot 0 with wrap counters 1.
		 */
		avail_wrap = used_wrap = true;
	}
	while (cap < vq->run.num)
		cap <<= 1;
	{
		/* This run's own block (vq->priv; a stopped ring has none): nothing of another
		 * run, of either layout, is reused. */
		size_t rec = (size_t)cap * sizeof(struct vq_packed_rec);
		size_t shadow = sizeof(struct vring_used) + (size_t)cap * sizeof(struct vring_used_elem);

		vq->priv = calloc(1, rec + shadow + VQ_PACKED_IDS);
		if (!vq->priv) {
			log_warn("queue %u: no memory for the packed ring's records", vq->index);
			goto refuse;
		}
		pk->cap = cap;
		pk->rec = vq->priv;
		vq->used = (struct vring_used *)((uint8_t *)vq->priv + rec);
		pk->in_flight = (uint8_t *)vq->priv + rec + shadow;
	}
	/* calloc: ids below num free; those out of range never are */
	memset(pk->in_flight + vq->run.num, 1, VQ_PACKED_IDS - vq->run.num);
	r = guest_mem_find_host(mem, vq->desc, &off);
	pk->desc_gpa = r ? r->gpa + off : 0;
	vq->avail = NULL;
	vq->uring = NULL;
	vq->mask = (uint16_t)(cap - 1);
	vq->mem = mem;
	pk->next_slot = pk->far_slot = used_slot;
	pk->next_wrap = pk->far_wrap = used_wrap;
	pk->next_want = pk_want(used_wrap);
	pk->used_slot = used_slot;
	pk->used_wrap = used_wrap;
	pk->used_lin = pk->sig_lin = 0;
	pk->room = vq->run.num;
	pk->max_nslots = 1;
	vq->last_avail = vq->shadow_avail = 0;
	vq->used_idx = vq->used_published = vq->signalled_used = 0;
	vq->signalled_valid = false;
	vq->unsignalled = 0;
	vq->base_set = false;
	vq->broken = false;
	vq->started = true;
	vq->ready = VQ_FAST_PACKED; /* vq_pop() tries vq_packed_pop_one() first */
	return 0;

refuse:
	vq->desc = NULL;
	vq->used = NULL;
	pk->drv_event = NULL;
	pk->dev_event = NULL;
	return -1; /* vq_start() frees vq->priv */
}

/**
 * vq_packed_pop() - take the next available list of a packed ring.
 * @vq: a started, unbroken packed queue
 * @chain: the chain; chain->head is the buffer id
 *
 * Breaks the queue for a list the walker refuses, an id in flight, a descriptor seen
 * available before (and given back by vq_unpop()) that is not any more, and more slots in
 * flight than the ring has.
 *
 * Return: 1 with @chain, 0 nothing available, -1 queue broken.
 */
int vq_packed_pop(struct virtqueue *vq, struct vq_chain *chain)
{
	struct vq_packed_state *pk = &vq->pk;
	struct pvirtq_desc *ring = pk_ring(vq);
	struct vq_packed_rec *rec;
	enum vq_walk_error err;
	unsigned nslots = 1;
	uint16_t flags;
	bool fresh = vq->last_avail == pk_seen(vq);

	if (vq->broken)
		return -1;
	if (!vq->started)
		return 0;
	flags = pk_flags(&ring[pk->next_slot]);
	if (!pk_is_avail(flags, pk->next_wrap)) {
		if (fresh)
			return 0;
		err = VQ_WALK_TAKEN_BACK;
		goto broken;
	}
	if (!(flags & (VRING_DESC_F_NEXT | VRING_DESC_F_INDIRECT))) {
		/* The common case: one descriptor in the hot region (vq_chain_one()'s twin). */
		struct pvirtq_desc d = pk_desc_read(&ring[pk->next_slot], flags);
		const struct guest_mem_region *r = &vq->mem->hot;
		uint64_t off = d.addr - r->gpa;
		bool w = flags & VRING_DESC_F_WRITE;

		if (d.len && off < r->size && d.len <= r->size - off) {
			vq_chain_set_one(chain, r->host + off, d.len, w);
			chain->head = d.id;
			if (d.id >= vq->run.num) {
				err = VQ_WALK_BAD_ID;
				goto broken;
			}
			goto take;
		}
	}
	err = vq_walk_packed(vq->mem, ring, vq->run.num, pk->next_slot, pk->next_wrap, flags,
			     vq->run.indirect, VQ_MAX_CHAIN, chain, &nslots);
	if (err != VQ_WALK_OK)
		goto broken;
take:
	guest_race(GUEST_RACE_RING_WALK); /* the list is taken: nothing of it is read again */
	if (nslots > pk->room) {
		err = VQ_WALK_OVERRUN; /* a lie about the wrap made our own slots look new */
		goto broken;
	}
	if (pk->in_flight[chain->head]) {
		err = VQ_WALK_ID_IN_FLIGHT;
		goto broken;
	}
	pk->in_flight[chain->head] = 1;
	rec = pk_rec(vq, pk->next_slot);
	rec->nslots = (uint16_t)nslots;
	rec->id = chain->head;
	if (nslots > pk->max_nslots)
		pk->max_nslots = (uint16_t)nslots;
	pk_advance(vq->run.num, &pk->next_slot, &pk->next_wrap, nslots);
	if (nslots > 1) /* at the list's last slot too, for vq_packed_unpop() */
		*pk_rec(vq, pk->next_slot ? pk->next_slot - 1u : vq->run.num - 1u) = *rec;
	pk->next_want = pk_want(pk->next_wrap);
	pk->room -= nslots;
	vq->last_avail++;
	vq_log_credit_add(vq, chain->ndesc);
	if (fresh)
		vq->shadow_avail = vq->last_avail; /* the farthest position is next_slot again */
	else if (vq->last_avail == vq->shadow_avail && vq->ready == VQ_FAST_PACKED_BACK)
		vq->ready = VQ_FAST_PACKED; /* every buffer given back is popped again */
	return 1;

broken:
	vq_mark_broken(vq, vq_walk_error_str(err));
	return -1;
}

/**
 * vq_packed_unpop() - give back the last n popped buffers of a packed ring.
 * @vq: the queue
 * @n: how many (at most those popped and not pushed)
 */
void vq_packed_unpop(struct virtqueue *vq, unsigned n)
{
	struct vq_packed_state *pk = &vq->pk;

	if (vq->ready == VQ_FAST_PACKED)
		vq->shadow_avail = vq->last_avail; /* kept from now on */
	if (n && vq->last_avail == vq->shadow_avail) { /* the farthest position: kept from now */
		pk->far_slot = pk->next_slot;
		pk->far_wrap = pk->next_wrap;
	}
	while (n-- && vq->last_avail != vq->used_idx) {
		/* The last list given back ends right before next_slot. */
		const struct vq_packed_rec *rec =
			pk_rec(vq, pk->next_slot ? pk->next_slot - 1u : vq->run.num - 1u);

		vq->last_avail--;
		pk->in_flight[rec->id] = 0;
		pk_retreat(vq->run.num, &pk->next_slot, &pk->next_wrap, rec->nslots);
		pk->room += rec->nslots;
	}
	pk->next_want = pk_want(pk->next_wrap);
	if (vq->last_avail != vq->shadow_avail && vq->ready == VQ_FAST_PACKED)
		vq->ready = VQ_FAST_PACKED_BACK; /* vq_pop() takes the slow path until caught up */
}

/* The Driver Event Suppression structure as one 32-bit snapshot: off_wrap low, flags high. */
static inline void pk_read_event(const uint32_t *ev, uint16_t *off_wrap, uint16_t *flags)
{
	uint32_t v = le32toh(__atomic_load_n(ev, __ATOMIC_RELAXED));

	*off_wrap = (uint16_t)v;
	*flags = (uint16_t)(v >> 16) & 3u;
}

/**
 * vq_packed_would_notify() - whether the driver accepts a notification for the descriptors
 * published since the last decision (Driver Event Suppression).
 * @vq: a packed queue
 *
 * DISABLE: never. ENABLE (and the reserved value 3, and DESC without EVENT_IDX): always.
 * DESC with EVENT_IDX: when the slot off_wrap names, on the lap its wrap bit says, lies in
 * what was used since the last decision (free-running slot counts: exact across laps).
 *
 * Return: true when a notification should be sent.
 */
bool vq_packed_would_notify(const struct virtqueue *vq)
{
	const struct vq_packed_state *pk = &vq->pk;
	uint16_t off_wrap, flags;
	uint32_t lap, event;

	__atomic_thread_fence(__ATOMIC_SEQ_CST); /* descriptors stored before the event is read */
	if (!pk->drv_event)
		return false;
	pk_read_event(pk->drv_event, &off_wrap, &flags);
	if (flags == VRING_PACKED_EVENT_F_DISABLE)
		return false;
	if (flags != VRING_PACKED_EVENT_F_DESC || !vq->run.event_idx || !vq->signalled_valid)
		return true;
	lap = pk->used_lin - pk->used_slot; /* slot count where the current lap began */
	event = lap + (off_wrap & 0x7fffu);
	if ((bool)(off_wrap >> 15) != pk->used_wrap)
		event -= vq->run.num; /* the previous lap */
	return (uint32_t)(pk->used_lin - event - 1) < (uint32_t)(pk->used_lin - pk->sig_lin);
}

/* The farthest position looked at: next_slot unless buffers were given back. */
static inline void pk_far(const struct virtqueue *vq, uint16_t *slot, bool *wrap)
{
	bool back = vq->last_avail != pk_seen(vq);

	*slot = back ? vq->pk.far_slot : vq->pk.next_slot;
	*wrap = back ? vq->pk.far_wrap : vq->pk.next_wrap;
}

/* Whether the slot a position names holds an available descriptor. */
static inline bool pk_slot_avail(const struct virtqueue *vq, uint16_t slot, bool wrap)
{
	return pk_is_avail(pk_flags(&pk_ring(vq)[slot]), wrap);
}

/**
 * vq_packed_has_avail() - whether the driver made buffers available that are not popped.
 * @vq: a started packed queue
 *
 * Return: true for buffers given back by vq_unpop() or a new one at the farthest position.
 */
bool vq_packed_has_avail(struct virtqueue *vq)
{
	return vq->last_avail != pk_seen(vq) ||
	       pk_slot_avail(vq, vq->pk.next_slot, vq->pk.next_wrap);
}

/**
 * vq_packed_avail_idx() - a packed ring's stand-in for the split avail index.
 * @vq: a started packed queue
 *
 * The buffer count at the farthest position looked at (vq_avail_seen()), plus one when a
 * buffer is available there: differs from vq_avail_seen() exactly when the driver added one.
 *
 * Return: that count.
 */
uint16_t vq_packed_avail_idx(struct virtqueue *vq)
{
	uint16_t slot;
	bool wrap;

	pk_far(vq, &slot, &wrap);
	return (uint16_t)(pk_seen(vq) + pk_slot_avail(vq, slot, wrap));
}

/**
 * vq_packed_avail_at_least() - whether at least n buffers past the popped ones are available.
 * @vq: a started packed queue
 * @n: buffers wanted, at least 1
 *
 * Buffers given back by vq_unpop() count as they are; past the farthest position looked at, the
 * rest are taken to be as long as the longest list popped so far (max_nslots: one slot for
 * mergeable or indirect buffers, ~19 for Linux's "big packets"), so one descriptor is read, the
 * one that many slots on (the driver fills slots in ring order, so that one being available
 * means those before it are, up to a batch still being written). Slots in flight or used carry
 * the previous lap's flags and never look available. Lists of mixed lengths make the answer
 * err towards "not enough".
 *
 * Return: true if they are.
 */
bool vq_packed_avail_at_least(struct virtqueue *vq, unsigned n)
{
	unsigned known = (uint16_t)(pk_seen(vq) - vq->last_avail), s;
	uint64_t d;
	uint16_t slot;
	bool wrap;

	if (n <= known)
		return true;
	d = (uint64_t)(n - known) * vq->pk.max_nslots - 1u;
	if (d >= vq->run.num)
		return false;
	pk_far(vq, &slot, &wrap);
	s = slot + (unsigned)d;
	if (s >= vq->run.num) {
		s -= vq->run.num;
		wrap = !wrap;
	}
	return pk_slot_avail(vq, (uint16_t)s, wrap);
}

/**
 * vq_packed_kick_enable() - ask the driver to kick when it adds buffers (Device Event
 * Suppression).
 * @vq: a started packed queue, not broken
 *
 * EVENT_IDX: off_wrap = the farthest position looked at, a release fence, flags DESC;
 * else flags ENABLE. Then a full fence and a re-check, so no kick is lost.
 *
 * Return: true if there are buffers not popped yet.
 */
bool vq_packed_kick_enable(struct virtqueue *vq)
{
	struct vq_packed_state *pk = &vq->pk;
	uint16_t far_slot;
	bool far_wrap;

	pk_far(vq, &far_slot, &far_wrap);
	if (vq->run.event_idx) {
		__atomic_store_n(&pk->dev_event[0],
				 htole16((uint16_t)(far_slot | (far_wrap ? 0x8000u : 0))),
				 __ATOMIC_RELAXED);
		__atomic_store_n(&pk->dev_event[1], htole16(VRING_PACKED_EVENT_F_DESC),
				 __ATOMIC_RELEASE);
	} else {
		__atomic_store_n(&pk->dev_event[1], htole16(VRING_PACKED_EVENT_F_ENABLE),
				 __ATOMIC_RELAXED);
	}
	if (__builtin_expect(vq->log != NULL, 0) && vq->log_used)
		dirty_log_gpa(vq->log, vq->log_used_gpa, 4);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	return vq_packed_has_avail(vq);
}

/**
 * vq_packed_kick_disable() - tell the driver kicks are not needed now (flags DISABLE).
 * @vq: a packed queue; only without EVENT_IDX (with it, the event offset already suppresses
 *      kicks, as on split rings), and only started, not broken
 */
void vq_packed_kick_disable(struct virtqueue *vq)
{
	if (!vq->started || vq->broken || vq->run.event_idx)
		return;
	/* Only when it changes: a polling queue comes here on every run (see vq_kick_disable()). */
	if (__atomic_load_n(&vq->pk.dev_event[1], __ATOMIC_RELAXED) ==
	    htole16(VRING_PACKED_EVENT_F_DISABLE))
		return;
	__atomic_store_n(&vq->pk.dev_event[1], htole16(VRING_PACKED_EVENT_F_DISABLE),
			 __ATOMIC_RELAXED);
	if (__builtin_expect(vq->log != NULL, 0) && vq->log_used)
		dirty_log_gpa(vq->log, vq->log_used_gpa, 4);
}

/**
 * vq_packed_get_base() - a started packed queue's positions, vhost-user encoded.
 * @vq: the queue
 *
 * Buffers popped and not published (there are none after vnet_dev_queue_stop()) count as not
 * taken: the avail half is where the next start walks, the used half where it writes.
 *
 * Return: next avail slot | avail wrap << 15 | (used slot | used wrap << 15) << 16.
 */
uint32_t vq_packed_get_base(const struct virtqueue *vq)
{
	const struct vq_packed_state *pk = &vq->pk;
	uint16_t avail_slot = pk->next_slot;
	bool avail_wrap = pk->next_wrap;

	if (vq->last_avail != vq->used_published) {
		/* In flight: resume at the first one not completed, where the used position is. */
		avail_slot = pk->used_slot;
		avail_wrap = pk->used_wrap;
	}
	return (uint32_t)avail_slot | (avail_wrap ? 0x8000u : 0) |
	       ((uint32_t)pk->used_slot | (pk->used_wrap ? 0x8000u : 0)) << 16;
}

/* ---- The used side: used descriptors written back, dirty log ---- */

/*
 * Mark the buffers of the used elements [from, from + n) dirty: the first len bytes of each
 * list's writable part, found by walking the list again, which is still in the ring (its used
 * descriptor is not written yet). Lists start at the used position, one after the other.
 */
static __attribute__((noinline, cold)) void pk_log_buffers(struct virtqueue *vq, uint16_t from,
								  unsigned n)
{
	struct vq_chain chain; /* this call's own (16 KiB): queues log on several workers at once */
	const struct pvirtq_desc *ring = pk_ring(vq);
	uint16_t slot = vq->pk.used_slot;
	bool wrap = vq->pk.used_wrap;

	for (unsigned i = 0; i < n; i++) {
		const struct vq_packed_rec *rec = pk_rec(vq, slot);
		uint32_t len = le32toh(vq->used->ring[(uint16_t)(from + i) & vq->mask].len);
		unsigned nslots;

		if (len) {
			enum vq_walk_error err = vq_walk_packed(
				vq->mem, ring, vq->run.num, slot, wrap, pk_flags(&ring[slot]),
				vq->run.indirect, vq_log_walk_max(vq), &chain, &nslots);

			vq_log_credit_spend(vq, chain.ndesc);
			if (err == VQ_WALK_OK)
				dirty_log_iov(vq->log, vq->mem, &chain.iov[chain.nread], chain.nwrite,
					      len);
		}
		pk_advance(vq->run.num, &slot, &wrap, rec->nslots);
	}
}

/* Mark the descriptor slots of the used elements [from, from + n) dirty (just written). */
static void pk_log_slots(struct virtqueue *vq, unsigned n, bool batch)
{
	uint16_t slot = vq->pk.used_slot;
	bool wrap = vq->pk.used_wrap;

	if (!vq->pk.desc_gpa)
		return;
	for (unsigned i = 0; i < n; i++) {
		dirty_log_gpa(vq->log, vq->pk.desc_gpa + 16ull * slot, 16);
		if (batch)
			return; /* one descriptor covers the batch */
		pk_advance(vq->run.num, &slot, &wrap, pk_rec(vq, slot)->nslots);
	}
}

/* Write one used descriptor's id and len (its flags later). */
static inline void pk_write_used(struct pvirtq_desc *d, uint16_t id, uint32_t len)
{
	__atomic_store_n(&d->id, htole16(id), __ATOMIC_RELAXED);
	__atomic_store_n(&d->len, htole32(len), __ATOMIC_RELAXED);
}

/*
 * vq_packed_publish()'s common case: every buffer of the batch takes one slot, so their used
 * descriptors go to consecutive slots from the used position, lengths from the shadow vq_push()
 * wrote, or 0 on a reads_only queue (`reads`, a constant: TX, whose pushes write nothing:
 * vq_push_read_n()). A one-slot list's descriptor already holds its buffer id (the driver wrote
 * it there, the device read it there): only len and flags are written, and the ids in the
 * records at those slots (the ids popped) leave in_flight. All flags but the first's are stored;
 * that one is returned. The position after the batch goes to *slot and *wbits. Runs between the
 * ends of the shadow and of the ring need no wrap checks.
 */
static inline __attribute__((always_inline)) uint16_t
pk_publish_single(struct virtqueue *vq, uint16_t from, unsigned n, unsigned *slot, uint16_t *wbits,
		  const bool reads)
{
	struct pvirtq_desc *ring = pk_ring(vq), *d = ring + *slot, *dend = ring + vq->run.num;
	const struct vq_packed_rec *rec = vq->pk.rec + *slot;
	const struct vring_used_elem *e = &vq->used->ring[from & vq->mask];
	const struct vring_used_elem *eend = vq->used->ring + vq->pk.cap;
	uint8_t *in_flight = vq->pk.in_flight;
	uint16_t w = *wbits, first_flags;

	{
		uint32_t len = reads ? 0 : le32toh(e->len);

		__atomic_store_n(&d->len, htole32(len), __ATOMIC_RELAXED);
		first_flags = len ? (uint16_t)(w | VRING_DESC_F_WRITE) : w; /* stored last, by the caller */
		in_flight[rec->id] = 0;
		n--;
		rec++;
		if (!reads && ++e == eend)
			e = vq->used->ring;
		if (++d == dend) {
			d = ring;
			rec = vq->pk.rec;
			w ^= VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED;
		}
	}
	while (n) {
		unsigned m = n, room_d = (unsigned)(dend - d);
		const uint16_t wf = w | VRING_DESC_F_WRITE;

		if (!reads && m > (unsigned)(eend - e))
			m = (unsigned)(eend - e);
		if (m > room_d)
			m = room_d;
		for (unsigned j = 0; j < m; j++) {
			uint32_t len = reads ? 0 : le32toh(e[j].len);
			uint16_t f = len ? wf : w;

			__atomic_store_n(&d[j].len, htole32(len), __ATOMIC_RELAXED);
			__atomic_store_n(&d[j].flags, htole16(f), __ATOMIC_RELAXED);
			in_flight[rec[j].id] = 0;
		}
		n -= m;
		d += m;
		rec += m;
		if (!reads) {
			e += m;
			if (e == eend)
				e = vq->used->ring;
		}
		if (d == dend) {
			d = ring;
			rec = vq->pk.rec;
			w ^= VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED;
		}
	}
	*slot = (unsigned)(d - ring);
	*wbits = w;
	return first_flags;
}

/*
 * The batch_used (IN_ORDER, TX) publication's common case, as pk_publish_single()'s: every list
 * took one slot, so the ids leave in_flight from consecutive records and the used position
 * moves n slots at once. Returns the last buffer's id (its descriptor covers the batch); the
 * position after the batch goes to *slot and *wbits. Out of line: inlined, it made
 * vq_packed_publish()'s other paths dearer (callgrind, packed + IN_ORDER 478 -> 482).
 */
static __attribute__((noinline)) uint16_t
pk_publish_batch_single(struct virtqueue *vq, unsigned n, unsigned *slot, uint16_t *wbits)
{
	const struct vq_packed_rec *recs = vq->pk.rec;
	uint8_t *in_flight = vq->pk.in_flight;
	const unsigned num = vq->run.num;
	unsigned k = *slot, m = n;

	while (m) {
		unsigned run = num - k < m ? num - k : m;

		for (unsigned j = 0; j < run; j++)
			in_flight[recs[k + j].id] = 0;
		k += run;
		m -= run;
		if (k == num)
			k = 0;
	}
	if (*slot + n >= num)
		*wbits ^= VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED;
	*slot = k;
	return recs[k ? k - 1 : num - 1].id;
}

/**
 * vq_packed_publish() - turn the pushed elements into used descriptors the driver sees.
 * @vq: a packed queue
 *
 * One pass from the used position: each buffer's descriptor goes to its list's first slot
 * (the previous one's slots further on), id, len and flags, the batch's first flags held
 * back; then that one with a release store, so the driver, which looks at the first slot
 * first, never sees part of a batch. With batch_used (IN_ORDER, TX) one descriptor, the last
 * buffer's id at the batch's first slot, covers the batch. A reads_only queue (TX) has length
 * 0 everywhere and reads no length from the shadow. With dirty logging on, logs the buffers
 * written and every descriptor slot rewritten.
 */
void vq_packed_publish(struct virtqueue *vq)
{
	struct vq_packed_state *pk = &vq->pk;
	struct pvirtq_desc *ring = pk_ring(vq);
	uint16_t from = vq->used_published, to = vq->used_idx;
	unsigned n = (uint16_t)(to - from), popped = (uint16_t)(vq->last_avail - from);
	const bool logging = vq->log != NULL;
	const unsigned mask = vq->mask, num = vq->run.num;
	const struct vq_packed_rec *recs = pk->rec;
	const struct vring_used_elem *shadow = vq->used->ring;
	uint8_t *in_flight = pk->in_flight;
	struct pvirtq_desc *first;
	uint16_t first_flags, wbits;
	unsigned slot = pk->used_slot, slots = 0;
	bool single;

	if (!vq->started)
		return;
	if (n > popped) /* more pushed than popped: a caller bug, never the guest's */
		n = popped;
	if (!n)
		return;
	to = (uint16_t)(from + n);
	/* Every popped buffer is published and each took one slot: consecutive slots. */
	single = to == vq->last_avail && vq->run.num - pk->room == n;
	if (__builtin_expect(logging, 0) && !vq->run.reads_only) /* reads_only: nothing written */
		pk_log_buffers(vq, from, n);
	wbits = pk->used_wrap ? VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED : 0;
	first = &ring[slot];
	if (vq->run.batch_used) {
		const struct vring_used_elem *e = &shadow[(uint16_t)(to - 1) & mask];
		uint32_t len = le32toh(e->len);
		uint16_t last_id = 0;

		first_flags = wbits | (len ? VRING_DESC_F_WRITE : 0);
		if (single) {
			last_id = pk_publish_batch_single(vq, n, &slot, &wbits);
			slots = n;
		} else {
			for (unsigned i = 0; i < n; i++) {
				const struct vq_packed_rec rec = recs[slot];

				in_flight[rec.id] = 0;
				last_id = rec.id;
				slots += rec.nslots;
				slot += rec.nslots;
				if (slot >= num) {
					slot -= num;
					wbits ^= VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED;
				}
			}
		}
		pk_write_used(first, last_id, len);
	} else if (single) {
		first_flags = vq->run.reads_only ? pk_publish_single(vq, from, n, &slot, &wbits, true)
					     : pk_publish_single(vq, from, n, &slot, &wbits, false);
		slots = n;
	} else {
		for (uint16_t k = from;;) {
			const struct vq_packed_rec rec = recs[slot];
			uint32_t len = vq->run.reads_only ? 0 : le32toh(shadow[k & mask].len);
			struct pvirtq_desc *d = &ring[slot];
			uint16_t f = wbits | (len ? VRING_DESC_F_WRITE : 0);

			pk_write_used(d, rec.id, len);
			if (k == from)
				first_flags = f; /* stored last */
			else
				__atomic_store_n(&d->flags, htole16(f), __ATOMIC_RELAXED);
			in_flight[rec.id] = 0;
			slots += rec.nslots;
			slot += rec.nslots;
			if (slot >= num) {
				slot -= num;
				wbits ^= VRING_PACKED_DESC_F_AVAIL | VRING_PACKED_DESC_F_USED;
			}
			if (++k == to)
				break;
		}
	}
	/* Release: every store above is visible before the batch's first flags. */
	__atomic_store_n(&first->flags, htole16(first_flags), __ATOMIC_RELEASE);
	if (__builtin_expect(logging, 0))
		pk_log_slots(vq, n, vq->run.batch_used);
	pk->used_lin += slots;
	pk->room += slots;
	pk->used_slot = (uint16_t)slot;
	pk->used_wrap = wbits != 0;
	vq->unsignalled += n;
	vq->used_published = to;
	vq->used_idx = to;
}

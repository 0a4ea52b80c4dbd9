/* SPDX-License-Identifier: MIT */
/* virtqueue_packed_used.c - packed ring, used side: used-descriptor write-back, dirty log. */
#include <endian.h>
#include <stddef.h>

#include "virtq/vq_ring_internal.h"

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

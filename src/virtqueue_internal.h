/* SPDX-License-Identifier: MIT */
/* virtqueue_internal.h - what virtqueue.c and the packed files share: packed entry points, helpers. */
#ifndef VNETD_VIRTQUEUE_INTERNAL_H
#define VNETD_VIRTQUEUE_INTERNAL_H

#include "virtqueue.h"

/* vq_chain_add_buf() - one data descriptor's buffer appended to a walked chain (both walkers). */
enum vq_walk_error vq_chain_add_buf(const struct guest_mem *mem, uint64_t addr, uint32_t len,
				    bool write, bool *seen_write, struct vq_chain *out);

/* vq_walk_packed() - the one packed-ring list walker (see its definition). */
enum vq_walk_error vq_walk_packed(const struct guest_mem *mem, const struct pvirtq_desc *ring,
				  unsigned num, unsigned slot, bool wrap, uint16_t head_flags,
				  bool indirect_ok, struct vq_chain *out, unsigned *nslots);

/* The packed layout's half of the virtqueue API; virtqueue.c dispatches on vq->run.packed. */
int vq_packed_start(struct virtqueue *vq, const struct guest_mem *mem);
int vq_packed_pop(struct virtqueue *vq, struct vq_chain *chain);
void vq_packed_unpop(struct virtqueue *vq, unsigned n);
void vq_packed_publish(struct virtqueue *vq); /* virtqueue_packed_used.c */
bool vq_packed_would_notify(const struct virtqueue *vq);
bool vq_packed_has_avail(struct virtqueue *vq);
uint16_t vq_packed_avail_idx(struct virtqueue *vq);
bool vq_packed_avail_at_least(struct virtqueue *vq, unsigned n);
bool vq_packed_kick_enable(struct virtqueue *vq);
void vq_packed_kick_disable(struct virtqueue *vq);
uint32_t vq_packed_get_base(const struct virtqueue *vq);

/* ---- Packed-ring helpers both packed files use (virtqueue_packed.c, _used.c) ---- */

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

#endif

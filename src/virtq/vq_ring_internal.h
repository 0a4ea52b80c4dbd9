/* SPDX-License-Identifier: MIT */
/* virtqueue_internal.h - what virtqueue.c and the packed files share: packed entry points, helpers. */
#ifndef VNETD_VIRTQUEUE_INTERNAL_H
#define VNETD_VIRTQUEUE_INTERNAL_H

#include "virtq/virtq.h"

/* vq_chain_add_buf() - one data descriptor's buffer appended to a walked chain (both walkers). */
enum vq_walk_error vq_chain_add_buf(const struct guest_mem *mem, uint64_t addr, uint32_t len,
				    bool write, bool *seen_write, struct vq_chain *out);

/* vq_walk_packed() - the one packed-ring list walker (see its definition). */
enum vq_walk_error vq_walk_packed(const struct guest_mem *mem, const struct pvirtq_desc *ring,
				  unsigned num, unsigned slot, bool wrap, uint16_t head_flags,
				  bool indirect_ok, unsigned max_desc, struct vq_chain *out,
				  unsigned *nslots);

/*
 * The dirty log's walks read again the chains a publication covers (the pops' iovecs are gone
 * by then). A driver that rewrites a popped chain could make that walk far longer than the pop
 * (a one-descriptor chain, counted as 1, turned into a table of VQ_MAX_CHAIN): so a pop that
 * read k descriptors credits k - 1, and a logging walk may read one descriptor and the credit,
 * which it spends. A driver that leaves its chains alone is walked exactly as popped; one that
 * does not gets its pages unlogged (its own loss) and the worker no extra work. The cap is a
 * full ring of the longest chains: the credit of chains popped while nothing was logged.
 */
#define VQ_LOG_CREDIT_MAX (VQ_MAX_SIZE * VQ_MAX_CHAIN)

/* vq_log_credit_add() - a pop read ndesc (>= 1) descriptors. */
static inline void vq_log_credit_add(struct virtqueue *vq, unsigned ndesc)
{
	uint32_t c = vq->log_credit + (ndesc > 1 ? ndesc - 1u : 0u);

	vq->log_credit = c < VQ_LOG_CREDIT_MAX ? c : VQ_LOG_CREDIT_MAX;
}

/* vq_log_walk_max() - the most descriptors the next logging walk of one chain may read. */
static inline unsigned vq_log_walk_max(const struct virtqueue *vq)
{
	return vq->log_credit < VQ_MAX_CHAIN - 1u ? vq->log_credit + 1u : VQ_MAX_CHAIN;
}

/* vq_log_credit_spend() - a logging walk read ndesc descriptors (at most vq_log_walk_max()). */
static inline void vq_log_credit_spend(struct virtqueue *vq, unsigned ndesc)
{
	uint32_t extra = ndesc > 1 ? ndesc - 1u : 0u;

	vq->log_credit = extra < vq->log_credit ? vq->log_credit - extra : 0;
}

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

/* SPDX-License-Identifier: MIT */
/* vq_ring_internal.h - what both ring layouts share (vq_ring.c): a chain's buffers, the log credit. */
#ifndef VNETD_VQ_RING_INTERNAL_H
#define VNETD_VQ_RING_INTERNAL_H

#include "virtq/virtq.h"

/* vq_chain_add_buf() - one data descriptor's buffer appended to a walked chain (both walkers). */
enum vq_walk_error vq_chain_add_buf(const struct guest_mem *mem, uint64_t addr, uint32_t len,
				    bool write, bool *seen_write, struct vq_chain *out);

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

#endif

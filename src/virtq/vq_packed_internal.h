/* SPDX-License-Identifier: MIT */
/* vq_packed_internal.h - the packed layout's half of the virtqueue API (vq_packed.c), for virtq.c. */
#ifndef VNETD_VQ_PACKED_INTERNAL_H
#define VNETD_VQ_PACKED_INTERNAL_H

#include "virtq/virtq.h"

#define VQ_PACKED_IDS 65536u /* in_flight[] covers every 16-bit id: ids >= num stay marked */

/* vq_walk_packed() - the one packed-ring list walker (see its definition). */
enum vq_walk_error vq_walk_packed(const struct guest_mem *mem, const struct pvirtq_desc *ring,
				  unsigned num, unsigned slot, bool wrap, uint16_t head_flags,
				  bool indirect_ok, unsigned max_desc, struct vq_chain *out,
				  unsigned *nslots);

/*
 * Each is the function of virtq.h without "packed_" for a ring whose vq->run.packed is true;
 * virtq.c checks what its public one checks before it calls (see the definitions).
 */
int vq_packed_start(struct virtqueue *vq, const struct guest_mem *mem);
int vq_packed_pop(struct virtqueue *vq, struct vq_chain *chain);
void vq_packed_unpop(struct virtqueue *vq, unsigned n);
void vq_packed_publish(struct virtqueue *vq);
bool vq_packed_would_notify(const struct virtqueue *vq);
bool vq_packed_has_avail(struct virtqueue *vq);
uint16_t vq_packed_avail_idx(struct virtqueue *vq);
bool vq_packed_avail_at_least(struct virtqueue *vq, unsigned n);
bool vq_packed_kick_enable(struct virtqueue *vq);
void vq_packed_kick_disable(struct virtqueue *vq);
uint32_t vq_packed_get_base(const struct virtqueue *vq);

#endif

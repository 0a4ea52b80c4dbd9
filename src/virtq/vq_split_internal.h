/* SPDX-License-Identifier: MIT */
/* vq_split_internal.h - the split layout's half of the virtqueue API (vq_split.c), for virtq.c. */
#ifndef VNETD_VQ_SPLIT_INTERNAL_H
#define VNETD_VQ_SPLIT_INTERNAL_H

#include "virtq/virtq.h"

/* struct virtqueue's io_next when the head of the next IN_ORDER chain is unknown. */
#define VQ_IO_ANY 0x10000u

/*
 * Each is the function of virtq.h without "split_" for a ring whose vq->run.packed is false;
 * virtq.c checks what its public one checks before it calls (see the definitions).
 */
int vq_split_start(struct virtqueue *vq, const struct guest_mem *mem);
int vq_split_pop(struct virtqueue *vq, struct vq_chain *chain);
void vq_split_unpop(struct virtqueue *vq, unsigned n);
void vq_split_publish(struct virtqueue *vq);
bool vq_split_would_notify(const struct virtqueue *vq);
bool vq_split_has_avail(struct virtqueue *vq);
uint16_t vq_split_avail_idx(struct virtqueue *vq);
bool vq_split_avail_at_least(struct virtqueue *vq, unsigned n);
bool vq_split_kick_enable(struct virtqueue *vq);
void vq_split_kick_disable(struct virtqueue *vq);

#endif

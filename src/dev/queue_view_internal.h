/* SPDX-License-Identifier: MIT */
/* queue_view_internal.h - queue settings published under a seqcount (queue_view.c): writer and reader. */
#ifndef VNETD_QUEUE_VIEW_INTERNAL_H
#define VNETD_QUEUE_VIEW_INTERNAL_H

struct vnet_dev;
struct vnet_queue;
struct vnet_queue_view;

/*
 * queue_view_publish() - publish queue q's settings view: after each change of
 * enabled/started/broken, kind, coalescing parameters or their setter, or the adaptive controller.
 */
void queue_view_publish(struct vnet_queue *q);

/*
 * vnet_queue_view_read() - the queue's settings as last published, from any thread, without a
 * lock: a consistent set (seqcount), never a half-written one.
 */
void vnet_queue_view_read(const struct vnet_queue *q, struct vnet_queue_view *out);

#endif

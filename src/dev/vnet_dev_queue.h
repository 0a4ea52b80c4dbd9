/* SPDX-License-Identifier: MIT */
/* vnet_dev_queue.h - the device's queues (vnet_dev_queue.c): lifecycle, kicks, timers. */
#ifndef VNETD_VNET_DEV_QUEUE_H
#define VNETD_VNET_DEV_QUEUE_H

#include <stdbool.h>
#include <stdint.h>

#include "dev/vnet_dev_types.h"

/*
 * The vnet_dev_* queue functions of the device's public API are defined in vnet_dev_queue.c,
 * not in vnet_dev.c (every kick runs through them: no forwarding call); vnet_dev.h includes
 * this header for them.
 */

struct vnet_dev;
struct guest_mem;

/* vnet_dev_ctrl_queue_index() - index of the control queue under the negotiated features. */
unsigned vnet_dev_ctrl_queue_index(const struct vnet_dev *dev);

/* vnet_dev_queue_start() - rings are configured: translate them; 0 or -1 (logged). */
int vnet_dev_queue_start(struct vnet_dev *dev, unsigned qidx, const struct guest_mem *mem);

/*
 * vnet_dev_queue_stop() - stop a queue (GET_VRING_BASE): publish and signal what the driver can
 * see, give back a chain popped but not sent; returns the next avail index.
 */
uint32_t vnet_dev_queue_stop(struct vnet_dev *dev, unsigned qidx);

/*
 * vnet_dev_queue_enable() - enable or disable a queue. Disabling signals held completions. A
 * queue whose rings were set up while disabled gets the last TX_SET/RX_SET (0 if none); one
 * re-enabled on the same rings keeps its own parameters.
 */
void vnet_dev_queue_enable(struct vnet_dev *dev, unsigned qidx, bool enable);

/* vnet_dev_kick() - the driver kicked queue qidx: process it. */
void vnet_dev_kick(struct vnet_dev *dev, unsigned qidx);

/* vnet_dev_queue_run() - continue queue qidx's work after env->schedule() (one budget). */
void vnet_dev_queue_run(struct vnet_dev *dev, unsigned qidx);

/* vnet_dev_timer_expired() - queue qidx's timer (coalescing, TX batch or TX rate refill) fired. */
void vnet_dev_timer_expired(struct vnet_dev *dev, unsigned qidx);

/* vnet_dev_tx_resume() - the backend can take packets again after -EAGAIN. */
void vnet_dev_tx_resume(struct vnet_dev *dev);

/* vnet_dev_tx_resume_pair() - the same for queue pair `pair`'s TX queue only (its own handle). */
void vnet_dev_tx_resume_pair(struct vnet_dev *dev, unsigned pair);

/*
 * vnet_dev_attach_queue_backend() - queue pair `pair` transmits through its own handle `be`
 * (same ops as the device's backend, e.g. a multi-queue tap's queue) until the next
 * vnet_dev_attach_backend(). 0, or -1 for a bad pair or no backend attached.
 */
int vnet_dev_attach_queue_backend(struct vnet_dev *dev, unsigned pair, struct vnet_backend *be);

/* ---- For the device model's own files (vnet_dev.c) ---- */

#endif

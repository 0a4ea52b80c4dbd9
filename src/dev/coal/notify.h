/* SPDX-License-Identifier: MIT */
/* notify.h - the one used-buffer notification decision (notify.c), and the queue timer it arms. */
#ifndef VNETD_NOTIFY_H
#define VNETD_NOTIFY_H

#include <stdint.h>

struct vnet_dev;
struct vnet_queue;

/* What made notify_decide() run. */
enum notify_event {
	NOTIFY_COMPLETED,      /* packets were published to the used ring */
	NOTIFY_TIMER,          /* the coalescing deadline passed */
	NOTIFY_PARAMS_CHANGED, /* coalescing parameters changed */
	NOTIFY_STOP,           /* the queue stops or is disabled: held completions are due now */
	NOTIFY_RESUME,         /* forced: a migrated queue that owed a notification is enabled */
};

/*
 * notify_decide() - the one place deciding used-buffer notifications: combines coalescing with
 * the driver's suppression (flags / EVENT_IDX) and arms the deadline timer. NOTIFY_RESUME
 * signals unconditionally and decides nothing else.
 */
void notify_decide(struct vnet_dev *dev, struct vnet_queue *q, enum notify_event ev,
		   uint32_t packets);

/*
 * notify_rearm_timer() - arm the queue's one timer for the earliest of its deadlines: coalescing,
 * TX batch, TX rate refill.
 */
void notify_rearm_timer(struct vnet_dev *dev, struct vnet_queue *q);

#endif

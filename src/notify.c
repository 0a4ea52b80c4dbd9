/* notify.c - the one decision of whether a queue's used-buffer notification is sent now. */
#include "vnet_dev_internal.h"

/* More used entries than this since the last decision would confuse EVENT_IDX arithmetic. */
#define NOTIFY_WRAP_GUARD 0x4000u

const uint32_t vnet_lateness_bounds_us[VNET_LATENESS_BUCKETS] = {
	5, 10, 25, 50, 100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000,
};

static void record_lateness(struct vnet_queue *q, uint64_t now, uint64_t deadline)
{
	uint64_t late = now > deadline ? now - deadline : 0;
	unsigned b = 0;

	if (late > UINT32_MAX)
		late = UINT32_MAX;
	lat_hist_add(&q->stats.lateness, late); /* fine-grained: vnetctl's percentiles */
	while (b < VNET_LATENESS_BUCKETS && late > (uint64_t)vnet_lateness_bounds_us[b] * 1000u)
		b++;
	q->stats.lateness_bucket[b]++;
	q->stats.lateness_sum_ns += late;
}

void vnet_queue_lateness(const struct vnet_queue *q, struct vnet_lateness_hist *out)
{
	uint64_t sum = 0;

	for (unsigned b = 0; b < VNET_LATENESS_BUCKETS; b++) {
		sum += q->stats.lateness_bucket[b];
		out->cumulative[b] = sum;
	}
	out->count = sum + q->stats.lateness_bucket[VNET_LATENESS_BUCKETS];
	out->sum_ns = q->stats.lateness_sum_ns;
}

void queue_rearm_timer(struct vnet_dev *dev, struct vnet_queue *q)
{
	uint64_t want = q->coal_deadline_ns;

	if (q->tx_deadline_ns && (!want || q->tx_deadline_ns < want))
		want = q->tx_deadline_ns;
	if (want != q->timer_deadline_ns) {
		q->timer_deadline_ns = want;
		dev->env->arm_timer(dev->env_ctx, q->vq.index, want);
	}
}

void notify_decide(struct vnet_dev *dev, struct vnet_queue *q, enum notify_event ev,
		   uint32_t packets)
{
	uint64_t now = dev_now(dev), deadline = 0, fired = q->coal_deadline_ns;
	enum coal_verdict verdict;

	if (!q->vq.started || q->vq.broken) {
		q->coal_deadline_ns = 0; /* never re-armed for a queue that decides nothing */
		queue_rearm_timer(dev, q);
		return;
	}
	if (ev == NOTIFY_COMPLETED)
		coal_add_packets(&q->coal, packets, now);
	verdict = coal_evaluate(&q->coal, now, &deadline);
	if (verdict == COAL_HOLD && q->vq.unsignalled >= NOTIFY_WRAP_GUARD)
		verdict = COAL_DUE;
	if (verdict == COAL_HOLD && ev == NOTIFY_STOP)
		verdict = COAL_DUE; /* the queue stops: nothing may stay held */

	switch (verdict) {
	case COAL_IDLE:
		q->coal_deadline_ns = 0;
		break;
	case COAL_HOLD:
		if (ev == NOTIFY_COMPLETED)
			q->stats.held += packets;
		q->coal_deadline_ns = deadline;
		break;
	case COAL_DUE:
		q->coal_deadline_ns = 0;
		if (vq_driver_wants_notify(&q->vq)) {
			dev->env->notify(dev->env_ctx, q->vq.index);
			q->stats.notifications++;
			if (ev == NOTIFY_TIMER && fired) {
				q->stats.timer_notifications++;
				record_lateness(q, now, fired);
			} else if (ev == NOTIFY_COMPLETED && fired && now >= fired) {
				/* The packet path beat a late timer: just as late. */
				record_lateness(q, now, fired);
			}
		} else {
			q->stats.suppressed++;
		}
		coal_restart(&q->coal);
		break;
	}
	queue_rearm_timer(dev, q);
}

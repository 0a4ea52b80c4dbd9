/* SPDX-License-Identifier: MIT */
/* notify.c - the one decision of whether a queue's used-buffer notification is sent now. */
#include "dev/coal/notify.h"

#include "dev/vnet_dev_core.h"
#include "dev/queue_view_internal.h"

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
	stat_inc(&q->stats.lateness_bucket[b]);
	stat_add(&q->stats.lateness_sum_ns, late);
}

/**
 * notify_rearm_timer() - arm the queue's one timer for its earliest deadline
 * @dev: the device (its env arms the timer)
 * @q: the queue
 *
 * The deadlines are coalescing's, the TX batch's (tx-timer mode) and the TX rate refill's: one
 * timer, one wake-up, whose expiry (vnet_dev_timer_expired()) handles every one that is due.
 * Calls env->arm_timer only when the wanted deadline differs from the armed one (0 disarms).
 * Context: the thread that owns the device.
 */
void notify_rearm_timer(struct vnet_dev *dev, struct vnet_queue *q)
{
	uint64_t want = q->coal_deadline_ns;

	if (q->tx_deadline_ns && (!want || q->tx_deadline_ns < want))
		want = q->tx_deadline_ns;
	if (q->rate_deadline_ns && (!want || q->rate_deadline_ns < want))
		want = q->rate_deadline_ns;
	if (want != q->timer_deadline_ns) {
		q->timer_deadline_ns = want;
		dev->env->arm_timer(dev->env_ctx, q->vq.index, want);
	}
}

/* Why the stall guard wants a notification now. */
enum guard_reason { GUARD_NONE, GUARD_IDLE, GUARD_RING, GUARD_BYTES };

/* Counter growth since `seen`, which becomes `now`; 0 if the counter was reset (reset-stats). */
static uint64_t grown(uint64_t now, uint64_t *seen)
{
	uint64_t d = now >= *seen ? now - *seen : 0;

	*seen = now;
	return d;
}

/*
 * The idle rules learn whether the driver waits. It does if it transmits soon after a
 * notification sent while it was quiet (a TCP sender given its ACKs, a request its answer, TSQ
 * its completions): within a quarter of stall-idle-usecs. A paced sender transmits on its own
 * clock, not on our notification: an early notification it leaves unanswered multiplies the
 * quiet time the idle rules wait for by 2^GUARD_BACKOFF_MAX (beyond any max_usecs worth
 * holding: the idle rules are then off, and a paced flow keeps its reduction). Stepping up one
 * doubling at a time would stop where the quiet time equals the sender's period, and there
 * the next burst "answers" by coincidence. Answers in a row (GUARD_ANSWERS_TO_RETURN, to any
 * notification, the deadline's too) halve it again, down to stall-idle-usecs.
 */
#define GUARD_BACKOFF_MAX 6u
#define GUARD_ANSWERS_TO_RETURN 2u

static uint64_t guard_answer_ns(const struct vnet_dev *dev)
{
	return (uint64_t)dev->guard.idle_usecs * 250u;
}

/* Resolve q's awaited answer: the driver transmitted at now (answered) or has not by now. */
static void guard_probe_resolve(const struct vnet_dev *dev, struct vnet_queue *q, uint64_t now,
				bool transmitted)
{
	struct vnet_guard_state *g = &q->guard;

	if (!g->probe_ns || now < g->probe_ns)
		return;
	if (transmitted && now - g->probe_ns <= guard_answer_ns(dev)) {
		if (g->backoff && ++g->answered >= GUARD_ANSWERS_TO_RETURN) {
			g->backoff--;
			g->answered = 0;
		}
	} else if (now - g->probe_ns > guard_answer_ns(dev)) {
		if (g->probe_early) {
			g->backoff = GUARD_BACKOFF_MAX;
			g->answered = 0;
		}
	} else {
		return; /* still within the answer window */
	}
	g->probe_ns = 0;
}

/* A notification went out on q: await the driver's answer if the idle rules could use it. */
static void guard_probe_start(const struct vnet_dev *dev, struct vnet_queue *q, uint64_t now,
			      bool early_idle)
{
	if (!dev->guard.on || !dev->guard.idle_usecs || (!early_idle && !q->guard.backoff))
		return;
	q->guard.probe_ns = now;
	q->guard.probe_early = early_idle;
}

/*
 * Completions were published (before coal_add_packets() counts them): account what the guard
 * watches; a first completion after a notification starts the count afresh. A TX completion
 * is the driver's answer to its own queue's and its pair RX queue's notifications.
 */
static void guard_completed(const struct vnet_dev *dev, struct vnet_queue *q, uint64_t now)
{
	struct vnet_guard_state *g = &q->guard;
	uint64_t bytes = grown(q->stats.bytes, &g->seen_bytes);
	uint64_t descs = grown(g->descs, &g->seen_descs);

	if (q->kind == VNET_QUEUE_TX) {
		guard_probe_resolve(dev, q, now, true);
		if (q->vq.index > 0 && dev->queues[q->vq.index - 1].kind == VNET_QUEUE_RX)
			guard_probe_resolve(dev, &dev->queues[q->vq.index - 1], now, true);
	}

	if (q->coal.pending == 0)
		g->held_bytes = g->held_descs = 0;
	g->held_bytes += bytes;
	g->held_descs += descs;
	g->last_done_ns = now;
}

/*
 * Whether the driver is about to run dry of what only our notification gives back: RX buffers
 * left (posted, not used; reserved ones count as left) at most a quarter of those plus the
 * ones held; TX descriptors the driver has not got back (held, plus chains not yet popped, one
 * each at least) three quarters of the ring. Asked as "are enough posted", which a packed
 * ring answers by reading one descriptor (it has no avail index to count with).
 */
static bool guard_ring_low(const struct vnet_dev *dev, struct vnet_queue *q)
{
	if (q->kind == VNET_QUEUE_RX) {
		uint32_t cache = q == &dev->queues[0] ? dev->rx_cache.n : 0;
		/* left <= held / 3 is low: left * 4 <= left + held */
		uint32_t enough = vq_pending_since_decision(&q->vq) / 3u + 1u;

		return cache < enough && !vq_avail_at_least(&q->vq, enough - cache);
	}
	uint32_t limit = (3u * q->vq.run.num + 3u) / 4u; /* held + unpopped >= 3/4 of the ring */

	return q->guard.held_descs >= limit ||
	       vq_avail_at_least(&q->vq, limit - q->guard.held_descs);
}

/*
 * RX: the driver transmitted on this pair's TX queue until about when the hold began, and both
 * that queue and this one have been quiet since, for a quarter of stall-idle-usecs: it waits
 * for what we hold (a TCP sender for its ACKs, a request for its answer) and the peer waits
 * for it. While packets keep arriving nobody waits yet: a guest receiving a bulk flow stops
 * sending ACKs because its data is held, and its peer still has window; that hold ends at the
 * ring rule, the frame count, or when the peer's window runs out and arrivals stop. A paced
 * stream into a guest that sends nothing never fires this; nor does paced TX, which holds
 * nothing on RX.
 */
static enum guard_reason guard_rx_waited_for(const struct vnet_dev *dev, const struct vnet_queue *q,
					     uint64_t now, uint64_t *recheck_ns)
{
	const struct vnet_queue *tx = q->vq.index + 1 < dev->nqueues ? &dev->queues[q->vq.index + 1]
								      : NULL;
	uint64_t quiet = ((uint64_t)dev->guard.idle_usecs * 250u) << q->guard.backoff, last, due;

	if (!tx || tx->kind != VNET_QUEUE_TX || !dev_queue_usable(tx))
		return GUARD_NONE;
	last = tx->guard.last_done_ns;
	if (!last || last + quiet < q->coal.first_ns)
		return GUARD_NONE; /* not sending when the hold began */
	if (q->guard.last_done_ns > last)
		last = q->guard.last_done_ns; /* the latest arrival on this queue */
	due = (last > q->coal.first_ns ? last : q->coal.first_ns) + quiet;
	if (now >= due)
		return GUARD_IDLE;
	*recheck_ns = due;
	return GUARD_NONE;
}

/*
 * guard_check() - the stall guard's reason to notify now, or GUARD_NONE with *recheck_ns the
 * time (0: none) at which an idle driver would give one.
 */
static enum guard_reason guard_check(const struct vnet_dev *dev, struct vnet_queue *q,
				     uint64_t now, uint64_t *recheck_ns)
{
	const struct vnet_stall_guard *g = &dev->guard;

	*recheck_ns = 0;
	guard_probe_resolve(dev, q, now, false); /* an answer overdue: counted unanswered */
	if (guard_ring_low(dev, q))
		return GUARD_RING;
	/* Not for a queue the adaptive controller drives: its holds are short (at most the top
	 * level's max_usecs) and a level that costs rate is left by the controller's own check;
	 * bytes of a bulk flow's GSO frames would otherwise end every hold after two frames. */
	if (g->bytes && !q->adapt.on && q->guard.held_bytes >= g->bytes)
		return GUARD_BYTES;
	if (g->idle_usecs && q->kind == VNET_QUEUE_TX) {
		uint64_t due = q->guard.last_done_ns +
			       ((uint64_t)g->idle_usecs * 1000u << q->guard.backoff);

		if (now >= due)
			return GUARD_IDLE;
		*recheck_ns = due;
	} else if (g->idle_usecs && q->kind == VNET_QUEUE_RX) {
		return guard_rx_waited_for(dev, q, now, recheck_ns);
	}
	return GUARD_NONE;
}

static void guard_count(struct vnet_queue *q, enum guard_reason r)
{
	if (r == GUARD_IDLE)
		stat_inc(&q->stats.early_idle);
	else if (r == GUARD_RING)
		stat_inc(&q->stats.early_ring);
	else if (r == GUARD_BYTES)
		stat_inc(&q->stats.early_bytes);
}

/* Adaptive coalescing: let the controller see the queue; it may pick new parameters. */
static void adapt_tick(const struct vnet_dev *dev, struct vnet_queue *q, uint64_t now)
{
	const struct coal_adapt_counters c = dev_adapt_counters(dev, q);
	uint64_t windows = q->adapt.windows;

	q->adapt.deep = q->kind == VNET_QUEUE_RX; /* the kind changes with the features */
	if (coal_adapt_tick(&q->adapt, now, &c))
		coal_set_params(&q->coal, coal_adapt_profile(q->adapt.level), COAL_SET_ADAPTIVE);
	if (q->adapt.windows != windows)
		queue_view_publish(q); /* a window was evaluated: at most every COAL_ADAPT_WINDOW_NS */
}

/* Signal the queue's used-buffer notification (its call fd) and count it. */
static inline void notify_signal(struct vnet_dev *dev, struct vnet_queue *q)
{
	dev->env->notify(dev->env_ctx, q->vq.index);
	stat_inc(&q->stats.notifications);
}

/**
 * notify_decide() - decide (and send) the queue's used-buffer notification
 * @dev: the device
 * @q: the queue that completed work or whose deadline or parameters changed
 * @ev: what happened; NOTIFY_RESUME signals at once, whatever the coalescing and the driver's
 *      suppression say, and changes nothing else (a migrated queue owed one when it was saved)
 * @packets: used entries just published (NOTIFY_COMPLETED), else 0
 *
 * The one place that signals a used-buffer notification: coalescing (and the adaptive
 * controller and the stall guard) combined with the driver's suppression (flags / EVENT_IDX),
 * the wrap guard, and the queue's deadline timer, re-armed here.
 * Context: the thread that owns the device.
 */
void notify_decide(struct vnet_dev *dev, struct vnet_queue *q, enum notify_event ev,
		   uint32_t packets)
{
	uint64_t now, deadline = 0, fired = q->coal_deadline_ns, recheck = 0;
	enum guard_reason early = GUARD_NONE;
	enum coal_verdict verdict;

	if (__builtin_expect(ev == NOTIFY_RESUME, 0)) {
		notify_signal(dev, q);
		return;
	}
	now = dev_now(dev);
	if (!q->vq.started || q->vq.broken) {
		q->coal_deadline_ns = 0; /* never re-armed for a queue that decides nothing */
		notify_rearm_timer(dev, q);
		return;
	}
	if (q->adapt.on)
		adapt_tick(dev, q, now);
	if (ev == NOTIFY_COMPLETED) {
		guard_completed(dev, q, now);
		coal_add_packets(&q->coal, packets, now);
	}
	verdict = coal_evaluate(&q->coal, now, &deadline);
	if (verdict == COAL_HOLD && q->vq.unsignalled >= NOTIFY_WRAP_GUARD)
		verdict = COAL_DUE;
	if (verdict == COAL_HOLD && ev == NOTIFY_STOP)
		verdict = COAL_DUE; /* the queue stops: nothing may stay held */
	if (verdict == COAL_HOLD && dev->guard.on) {
		/* Early only where the driver takes a notification now: never against its
		 * suppression, which the deadline respects as well. */
		early = guard_check(dev, q, now, &recheck);
		if (early != GUARD_NONE && vq_driver_would_notify(&q->vq))
			verdict = COAL_DUE;
		else
			early = GUARD_NONE;
		if (recheck && recheck < deadline) {
			/* An earlier check already armed serves too (it re-checks then): one timer
			 * per idle period, not one per packet of a busy queue. */
			if (q->coal_deadline_ns > now && q->coal_deadline_ns < recheck)
				recheck = q->coal_deadline_ns;
			deadline = recheck;
		}
	}

	switch (verdict) {
	case COAL_IDLE:
		q->coal_deadline_ns = 0;
		break;
	case COAL_HOLD:
		if (ev == NOTIFY_COMPLETED)
			stat_add(&q->stats.held, packets);
		q->coal_deadline_ns = deadline;
		break;
	case COAL_DUE:
		q->coal_deadline_ns = 0;
		if (vq_driver_wants_notify(&q->vq)) {
			notify_signal(dev, q);
			guard_probe_start(dev, q, now, early == GUARD_IDLE);
			if (early != GUARD_NONE) {
				guard_count(q, early);
			} else if (ev == NOTIFY_TIMER && fired) {
				stat_inc(&q->stats.timer_notifications);
				record_lateness(q, now, fired);
			} else if (ev == NOTIFY_COMPLETED && fired && now >= fired) {
				/* The packet path beat a late timer: just as late. */
				record_lateness(q, now, fired);
			}
		} else {
			stat_inc(&q->stats.suppressed);
		}
		coal_restart(&q->coal);
		break;
	}
	notify_rearm_timer(dev, q);
}

/* SPDX-License-Identifier: MIT */
/* vnet_dev_queue.c - the device's queues: their roles, lifecycle, and running kicks and timers. */
#include "dev/vnet_dev_queue.h"

#include "dev/dev.h" /* vnet_dev_publish() */

#include "dev/coal/coal_policy.h"
#include "dev/net_ctrl.h"
#include "dev/net_rx.h"
#include "dev/net_tx.h"
#include "dev/coal/notify.h"
#include "dev/vnet_dev_core.h"
#include "dev/net_rx_internal.h"
#include "dev/queue_view_internal.h"
#include "dev/vnet_dev_queue_internal.h"

/*
 * Below vnet_dev.c, which calls down into it; it calls down into net_rx.c, net_tx.c,
 * net_ctrl.c, coal_policy.c, notify.c and queue_view.c only. The queue functions of the public
 * API are defined here, not behind forwarding calls in vnet_dev.c: a kick runs through them.
 */

/**
 * vnet_dev_ctrl_queue_index() - where the control queue is under the negotiated features
 * @dev: the device
 *
 * Return: 2 * queue pairs with MQ, else 2.
 */
unsigned vnet_dev_ctrl_queue_index(const struct vnet_dev *dev)
{
	return dev_has(dev, VIRTIO_NET_F_MQ) ? 2u * dev->params.queue_pairs : 2u;
}

/**
 * vnet_dev_queue() - one queue of the device
 * @dev: the device
 * @qidx: its index
 *
 * Transports set its vq.num, ring addresses and last_avail before vnet_dev_queue_start().
 * Return: the queue, or NULL if @qidx is out of range.
 */
struct vnet_queue *vnet_dev_queue(struct vnet_dev *dev, unsigned qidx)
{
	return qidx < dev->nqueues ? &dev->queues[qidx] : NULL;
}

/**
 * vnet_dev_queue_assign_kinds() - give every queue its role under the negotiated features
 * @dev: the device
 *
 * Without MQ the control queue sits at index 2: that slot gets the control role. The kinds are
 * part of the queues' views, which are published again.
 */
void vnet_dev_queue_assign_kinds(struct vnet_dev *dev)
{
	unsigned ctrl = vnet_dev_ctrl_queue_index(dev);

	for (unsigned i = 0; i < dev->nqueues; i++)
		dev->queues[i].kind = i == ctrl ? VNET_QUEUE_CTRL
				      : (i & 1) ? VNET_QUEUE_TX
						: VNET_QUEUE_RX;
	vnet_dev_publish(dev); /* the kinds are part of the queues' views */
}

/**
 * vnet_dev_queue_reset() - a queue back to its reset state (vnet_dev_reset(), after the stop)
 * @dev: the device
 * @q: one of its queues
 *
 * Disarms its timer, resets its rings and counts, gives it the default coalescing; a run
 * queue entry it has stays (the owner's run queue still holds it, and its run clears it).
 */
void vnet_dev_queue_reset(struct vnet_dev *dev, struct vnet_queue *q)
{
	if (q->timer_deadline_ns)
		dev->env->arm_timer(dev->env_ctx, q->vq.index, 0);
	vq_reset(&q->vq);
	q->vq.log = dev->dirty_log;
	q->enabled = false;
	q->timer_deadline_ns = q->coal_deadline_ns = q->tx_deadline_ns = q->rate_deadline_ns = 0;
	q->tx_blocked = q->rx_waiting = q->reinit = q->polling = false;
	q->poll_until_ns = 0;
	queue_poll_forget(q);
	q->state_loaded = q->resume_notify = false;
	/* q->scheduled stays: the owner's run queue still holds the entry, which clears it. */
	q->rx_unflushed = 0;
	coal_restart(&q->coal);
	coal_policy_queue_default(dev, q);
}

/*
 * The queue broke: vq_mark_broken() calls this once per break (a queue stays broken until it
 * is started again). Tell the transport, which signals its error fd.
 */
static void dev_queue_broken(void *ctx, unsigned qidx)
{
	struct vnet_dev *dev = ctx;
	struct vnet_queue *q = vnet_dev_queue(dev, qidx);

	if (!q)
		return;
	/* Nothing is decided for a broken queue any more: a pending deadline would re-fire. */
	q->coal_deadline_ns = q->tx_deadline_ns = q->rate_deadline_ns = 0;
	notify_rearm_timer(dev, q);
	queue_view_publish(q);
	if (dev->env->queue_error)
		dev->env->queue_error(dev->env_ctx, qidx);
}

/* The queue stopped at its budget with work left: ask the owner to run it again later. */
static void dev_schedule(struct vnet_dev *dev, struct vnet_queue *q)
{
	if (!q->relook) /* a look once more ends no budget and polls no window */
		stat_inc(q->polling ? &q->stats.polls : &q->stats.yields);
	if (q->scheduled || !dev->env->schedule)
		return;
	/* A full run queue (cannot happen: one entry per queue fits) must not strand the queue. */
	q->scheduled = dev->env->schedule(dev->env_ctx, q->vq.index);
}

/**
 * vnet_dev_queue_init_all() - set up the queues of a new device (vnet_dev_create())
 * @dev: the device, its queues zeroed
 *
 * Gives each queue its index, the device's chain scratch, the break callback and its kind
 * (the control queue last, until features say otherwise).
 */
void vnet_dev_queue_init_all(struct vnet_dev *dev)
{
	for (unsigned i = 0; i < dev->nqueues; i++) {
		struct vnet_queue *q = &dev->queues[i];

		q->vq.index = i;
		q->chain = &dev->chain;
		q->vq.on_broken = dev_queue_broken;
		q->vq.owner_ctx = dev;
		q->kind = i + 1 == dev->nqueues ? VNET_QUEUE_CTRL
			  : (i & 1)             ? VNET_QUEUE_TX
						: VNET_QUEUE_RX;
	}
}

/**
 * vnet_dev_queue_start() - the queue's rings are configured: translate and start them
 * @dev: the device
 * @qidx: the queue
 * @mem: the guest memory table the rings are in
 *
 * Return: 0, or -1 (logged) for a bad queue or rings that do not translate.
 */
int vnet_dev_queue_start(struct vnet_dev *dev, unsigned qidx, const struct guest_mem *mem)
{
	struct vnet_queue *q = vnet_dev_queue(dev, qidx);

	if (!q)
		return -1;
	vnet_dev_queue_assign_kinds(dev);
	q->vq.event_idx = dev_has(dev, VIRTIO_RING_F_EVENT_IDX);
	q->vq.indirect = dev_has(dev, VIRTIO_RING_F_INDIRECT_DESC);
	q->vq.packed = dev_has(dev, VIRTIO_F_RING_PACKED);
	q->vq.in_order = dev_has(dev, VIRTIO_F_IN_ORDER);
	/* One used entry per batch only where lengths mean nothing (TX: the notes on DPDK). */
	q->vq.reads_only = q->kind == VNET_QUEUE_TX;
	q->vq.batch_used = q->vq.in_order && q->vq.reads_only;
	if (vq_start(&q->vq, mem) < 0) {
		queue_view_publish(q);
		return -1;
	}
	/* Rings set up while the queue is disabled: the driver set the queue up anew. */
	if (!q->enabled)
		q->reinit = true;
	q->rx_waiting = q->kind == VNET_QUEUE_RX;
	queue_view_publish(q);
	return 0;
}

/*
 * Nothing the driver can see may wait for a notification that never comes once the queue stops
 * or is disabled: publish RX packets and signal held completions (the driver's suppression
 * still applies).
 */
static void queue_flush_held(struct vnet_dev *dev, struct vnet_queue *q)
{
	uint64_t before = q->stats.notifications;

	if (!q->vq.started || q->vq.broken)
		return;
	if (q->kind == VNET_QUEUE_RX && q->rx_unflushed)
		net_rx_flush_queue(dev, q);
	notify_decide(dev, q, NOTIFY_STOP, 0);
	stat_add(&q->stats.stop_notifications, q->stats.notifications - before);
}

/**
 * vnet_dev_queue_stop() - stop a queue (GET_VRING_BASE)
 * @dev: the device
 * @qidx: the queue
 *
 * Publishes and signals what the driver can see, gives back reserved RX buffers and a chain
 * the backend refused, disarms the timer.
 * Return: the vring base to resume from (vq_get_base(): split, the next avail index; packed,
 * both positions with their wrap counters), 0 for a bad queue.
 */
uint32_t vnet_dev_queue_stop(struct vnet_dev *dev, unsigned qidx)
{
	struct vnet_queue *q = vnet_dev_queue(dev, qidx);

	if (!q)
		return 0;
	queue_flush_held(dev, q);
	if (qidx == 0)
		net_rx_cache_release(dev, q); /* reserved, unused RX buffers go back to the ring */
	q->tx_blocked = false; /* the chain the backend refused was given back already */
	q->polling = false;    /* a run-queue entry may stay: its run finds the queue stopped */
	q->poll_until_ns = 0;
	queue_poll_forget(q);
	if (q->timer_deadline_ns)
		dev->env->arm_timer(dev->env_ctx, qidx, 0);
	q->timer_deadline_ns = q->coal_deadline_ns = q->tx_deadline_ns = q->rate_deadline_ns = 0;
	coal_restart(&q->coal);
	vq_stop(&q->vq);
	queue_view_publish(q);
	return vq_get_base(&q->vq);
}

/**
 * vnet_dev_queue_enable() - enable or disable a queue
 * @dev: the device
 * @qidx: the queue
 * @enable: the new state (no change: nothing happens)
 *
 * Disabling signals held completions. A queue whose rings were set up while disabled gets
 * the last TX_SET/RX_SET (0 if none); one re-enabled on the same rings, or loaded from a
 * migration, keeps its own parameters. Enabling then runs the queue as a kick would.
 */
void vnet_dev_queue_enable(struct vnet_dev *dev, unsigned qidx, bool enable)
{
	struct vnet_queue *q = vnet_dev_queue(dev, qidx);

	if (!q || q->enabled == enable)
		return;
	if (!enable) {
		queue_flush_held(dev, q);
		q->enabled = false;
		queue_view_publish(q);
		return;
	}
	q->enabled = true;
	dev_sync_pairs(dev); /* a state load (restart, migration) may have set the pairs */
	/*
	 * Virtio re-enable (rings set up anew while disabled): the last TX_SET / RX_SET, else 0.
	 * A vhost-user enable cycle on the same rings (e.g. QEMU switching queue pairs) keeps the
	 * queue's own values (VQ_SET). Either way counting starts afresh.
	 */
	if (q->reinit && !q->state_loaded)
		coal_policy_queue_default(dev, q);
	q->reinit = q->state_loaded = false;
	queue_view_publish(q);
	coal_restart(&q->coal);
	q->coal_deadline_ns = 0;
	notify_rearm_timer(dev, q);
	if (q->resume_notify) {
		/* Migrated while completions were held: the driver may be waiting for this. */
		q->resume_notify = false;
		notify_decide(dev, q, NOTIFY_RESUME, 0);
	}
	if (q->kind == VNET_QUEUE_RX)
		q->rx_waiting = true;
	vnet_dev_kick(dev, qidx);
}

/* One budget of TX work (whatever started it: kick, TX timer, resume); schedules the rest. */
static void tx_run(struct vnet_dev *dev, struct vnet_queue *q)
{
	if (net_tx_process(dev, q))
		dev_schedule(dev, q);
}

/* One budget of the queue's work; schedules the rest. */
static void queue_work(struct vnet_dev *dev, struct vnet_queue *q)
{
	bool more = false;

	switch (q->kind) {
	case VNET_QUEUE_RX:
		/* Waiting but nothing posted yet: re-arm the kick (avail_event), then re-check, or a
		 * run that found the ring empty would leave a stale event and lose the next kick. */
		if (q->rx_waiting && (vq_has_avail(&q->vq) || vq_kick_enable(&q->vq))) {
			q->rx_waiting = false;
			if (dev->be_ops && dev->be_ops->rx_resume)
				more = dev->be_ops->rx_resume(dev->be);
		}
		/* RX kicks only matter while a packet waits for buffers (rx_wait_for_buffers). */
		if (!q->rx_waiting && !more)
			vq_kick_disable(&q->vq);
		break;
	case VNET_QUEUE_TX:
		if (q->rate_deadline_ns)
			break; /* over the rate: its timer runs it when the bucket has refilled */
		if (dev->params.tx_mode == VNET_TX_TIMER && !q->tx_blocked) {
			if (!q->tx_deadline_ns) {
				q->tx_deadline_ns =
					dev_now(dev) + (uint64_t)dev->params.tx_timer_usecs * 1000u;
				vq_kick_disable(&q->vq);
				notify_rearm_timer(dev, q);
			}
			break;
		}
		more = net_tx_process(dev, q);
		break;
	case VNET_QUEUE_CTRL:
		more = net_ctrl_process(dev, q);
		break;
	}
	if (more) {
		if (q->kind == VNET_QUEUE_RX)
			q->rx_waiting = true; /* the backend continues on the next run */
		dev_schedule(dev, q);
	}
}

/**
 * vnet_dev_kick() - the driver kicked a queue: run one budget of its work
 * @dev: the device
 * @qidx: the queue
 *
 * Nothing runs for a queue that is unusable or already waits in the owner's run queue.
 * Context: the thread that owns the device.
 */
void vnet_dev_kick(struct vnet_dev *dev, unsigned qidx)
{
	struct vnet_queue *q = vnet_dev_queue(dev, qidx);

	if (!q)
		return;
	stat_inc(&q->stats.kicks);
	/* Already waiting in the run queue: that run sees whatever this kick announced. */
	if (q->scheduled || !dev_queue_usable(q))
		return;
	/* Another view's queue (vnet_dev_lane.c; a start or enable on the home's thread): it runs
	 * on its own thread, from that thread's run queue (the owner's schedule() routes it). */
	if (__builtin_expect(!(dev->qmask >> qidx & 1u), 0)) {
		if (dev->env->schedule)
			q->scheduled = dev->env->schedule(dev->env_ctx, qidx);
		return;
	}
	queue_work(dev, q);
}

/**
 * vnet_dev_queue_run() - continue a queue's work after env->schedule(), one budget
 * @dev: the device
 * @qidx: the queue the owner's run queue held
 *
 * Context: the thread that owns the device.
 */
void vnet_dev_queue_run(struct vnet_dev *dev, unsigned qidx)
{
	struct vnet_queue *q = vnet_dev_queue(dev, qidx);

	if (!q || !q->scheduled)
		return;
	q->scheduled = false;
	if (!dev_queue_usable(q))
		return;
	if (q->kind == VNET_QUEUE_TX)
		tx_run(dev, q); /* continue the batch that yielded, TX timer mode included */
	else
		queue_work(dev, q);
}

/**
 * vnet_dev_timer_expired() - the queue's timer fired
 * @dev: the device
 * @qidx: the queue
 *
 * The queue's one timer serves every deadline it has: runs TX that waited (tx-timer mode's
 * batch, or the refill of the port's TX rate) and decides a coalescing deadline, whichever are
 * due, then re-arms for what is left.
 * Context: the thread that owns the device.
 */
void vnet_dev_timer_expired(struct vnet_dev *dev, unsigned qidx)
{
	struct vnet_queue *q = vnet_dev_queue(dev, qidx);
	bool run = false;
	uint64_t now;

	if (!q)
		return;
	now = dev_now(dev);
	q->timer_deadline_ns = 0;
	if (q->tx_deadline_ns && now >= q->tx_deadline_ns) {
		q->tx_deadline_ns = 0;
		run = true;
	}
	if (q->rate_deadline_ns && now >= q->rate_deadline_ns) {
		q->rate_deadline_ns = 0;
		run = true;
	}
	if (run && dev_queue_usable(q) && !q->scheduled)
		tx_run(dev, q);
	if (q->coal_deadline_ns && now >= q->coal_deadline_ns)
		notify_decide(dev, q, NOTIFY_TIMER, 0);
	notify_rearm_timer(dev, q);
}

/**
 * vnet_dev_tx_resume() - the backend takes packets again after -EAGAIN: run blocked TX queues
 * @dev: the device
 *
 * Context: the thread that owns the device.
 */
void vnet_dev_tx_resume(struct vnet_dev *dev)
{
	for (unsigned i = 0; i < dev->nqueues; i++) {
		struct vnet_queue *q = &dev->queues[i];

		if ((dev->qmask >> i & 1u) && q->kind == VNET_QUEUE_TX && q->tx_blocked &&
		    dev_queue_usable(q) && !q->scheduled)
			tx_run(dev, q);
	}
}

/**
 * vnet_dev_tx_resume_pair() - the backend has room again on queue pair @pair's own handle:
 * resume that pair's blocked TX queue only
 * @dev: the device
 * @pair: the queue pair (out of range: nothing)
 *
 * Context: the thread that owns the pair.
 */
void vnet_dev_tx_resume_pair(struct vnet_dev *dev, unsigned pair)
{
	struct vnet_queue *q;

	if (2 * pair + 1 >= dev->nqueues)
		return;
	q = &dev->queues[2 * pair + 1];
	if (q->kind == VNET_QUEUE_TX && q->tx_blocked && dev_queue_usable(q) && !q->scheduled)
		tx_run(dev, q);
}

/**
 * vnet_dev_attach_queue_backend() - give queue pair @pair its own backend handle for TX
 * @dev: the device, its backend attached (vnet_dev_attach_backend())
 * @pair: the queue pair
 * @be: the handle, of the same ops as the device's backend (a multi-queue tap's queue
 *      @pair: tap_backend_queue())
 *
 * The pair's TX queue hands its packets to @be from now on, until the next
 * vnet_dev_attach_backend(). Main thread, the port's worker parked or not started.
 *
 * Return: 0, or -1 for a pair the device does not have (nothing changed).
 */
int vnet_dev_attach_queue_backend(struct vnet_dev *dev, unsigned pair, struct vnet_backend *be)
{
	if (2 * pair + 1 >= dev->nqueues || !be || !dev->be)
		return -1;
	dev->queues[2 * pair + 1].be = be;
	return 0;
}

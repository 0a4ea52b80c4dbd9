/* coal_policy.c - whose coalescing values a queue uses: guest, host, adaptive, defaults, reset and re-enable. */
#include "vnet_dev_internal.h"

static unsigned kind_slot(enum vnet_queue_kind kind)
{
	return kind == VNET_QUEUE_TX;
}

/*
 * Parameters a queue gets after reset or a virtio re-enable: the last setting for all queues of
 * its kind since reset (guest TX_SET/RX_SET or host), else zero (spec).
 */
void coal_policy_default(const struct vnet_dev *dev, const struct vnet_queue *q,
			       struct coal_params *p, enum coal_setter *who)
{
	const struct vnet_kind_coal *k = &dev->last[kind_slot(q->kind)];

	*p = (struct coal_params){0, 0};
	*who = COAL_SET_NONE;
	if (q->kind == VNET_QUEUE_CTRL || !k->set)
		return;
	*p = k->params;
	*who = k->who;
}

/* The controller takes the queue over at level 0 (notify every packet) from now. */
static void adapt_begin(struct vnet_dev *dev, struct vnet_queue *q)
{
	const struct coal_adapt_counters c = queue_adapt_counters(dev, q);

	coal_adapt_start(&q->adapt, dev_now(dev), &c);
	coal_set_params(&q->coal, coal_adapt_profile(0), COAL_SET_ADAPTIVE);
}

void coal_policy_queue_default(struct vnet_dev *dev, struct vnet_queue *q)
{
	struct coal_params p;
	enum coal_setter who;

	coal_policy_default(dev, q, &p, &who);
	coal_set_params(&q->coal, &p, who);
	coal_adapt_stop(&q->adapt);
	/* The port's adaptive mode, unless the guest set this kind since reset (it wins). */
	if (q->kind != VNET_QUEUE_CTRL && dev->adaptive[kind_slot(q->kind)] && who != COAL_SET_GUEST)
		adapt_begin(dev, q);
}

void coal_policy_reset(struct vnet_dev *dev)
{
	/* Spec: reset sets every coalescing parameter to 0; host defaults only on opt-in. */
	for (unsigned k = 0; k < 2; k++)
		dev->last[k] = dev->params.coal_persist ? dev->host[k] : (struct vnet_kind_coal){0};
}

void coal_policy_init(struct vnet_dev *dev)
{
	const struct vnet_dev_params *p = &dev->params;

	dev->host[0] = (struct vnet_kind_coal){p->host_coal_rx_set, p->host_coal_rx, COAL_SET_HOST};
	dev->host[1] = (struct vnet_kind_coal){p->host_coal_tx_set, p->host_coal_tx, COAL_SET_HOST};
	dev->adaptive[0] = p->rx_adaptive;
	dev->adaptive[1] = p->tx_adaptive;
	dev->guard = p->stall_guard;
}

void dev_set_kind_coal(struct vnet_dev *dev, enum vnet_queue_kind kind, const struct coal_params *p,
		       enum coal_setter who)
{
	dev->last[kind_slot(kind)] = (struct vnet_kind_coal){true, *p, who};
	for (unsigned i = 0; i < dev->nqueues; i++)
		if (dev->queues[i].kind == kind)
			dev_apply_coal(dev, &dev->queues[i], p, who);
}

void dev_apply_coal(struct vnet_dev *dev, struct vnet_queue *q, const struct coal_params *p,
		    enum coal_setter who)
{
	if (who != COAL_SET_ADAPTIVE)
		coal_adapt_stop(&q->adapt); /* the last setter wins: guest or host values now */
	coal_set_params(&q->coal, p, who);
	queue_publish(q);
	notify_decide(dev, q, NOTIFY_PARAMS_CHANGED, 0);
}

int vnet_dev_host_coalesce(struct vnet_dev *dev, int qidx, enum vnet_queue_kind kind,
			   const struct coal_params *params)
{
	if (qidx >= 0) {
		struct vnet_queue *q = dev_queue(dev, (unsigned)qidx);

		if (!q || q->kind == VNET_QUEUE_CTRL)
			return -1;
		dev_apply_coal(dev, q, params, COAL_SET_HOST);
		return 0;
	}
	if (kind != VNET_QUEUE_RX && kind != VNET_QUEUE_TX)
		return -1;
	/* The new host default (kept across resets only with coal_persist); it replaces the
	 * port's adaptive mode for this kind. */
	dev->host[kind_slot(kind)] = (struct vnet_kind_coal){true, *params, COAL_SET_HOST};
	dev->adaptive[kind_slot(kind)] = false;
	dev_set_kind_coal(dev, kind, params, COAL_SET_HOST);
	return 0;
}

bool vnet_dev_coal_persist(const struct vnet_dev *dev)
{
	return dev->params.coal_persist;
}

/* Adaptive on: the controller takes over; off: the values of the last setting for the kind. */
static void adapt_switch(struct vnet_dev *dev, struct vnet_queue *q, bool on)
{
	struct coal_params p;
	enum coal_setter who;

	if (on == q->adapt.on)
		return;
	if (on) {
		adapt_begin(dev, q);
	} else {
		coal_policy_default(dev, q, &p, &who);
		coal_set_params(&q->coal, &p, who);
		coal_adapt_stop(&q->adapt);
	}
	queue_publish(q);
	notify_decide(dev, q, NOTIFY_PARAMS_CHANGED, 0);
}

int vnet_dev_host_adaptive(struct vnet_dev *dev, int qidx, enum vnet_queue_kind kind, bool on)
{
	if (qidx >= 0) {
		struct vnet_queue *q = dev_queue(dev, (unsigned)qidx);

		if (!q || q->kind == VNET_QUEUE_CTRL)
			return -1;
		adapt_switch(dev, q, on);
		return 0;
	}
	if (kind != VNET_QUEUE_RX && kind != VNET_QUEUE_TX)
		return -1;
	dev->adaptive[kind_slot(kind)] = on;
	for (unsigned i = 0; i < dev->nqueues; i++)
		if (dev->queues[i].kind == kind)
			adapt_switch(dev, &dev->queues[i], on);
	return 0;
}

bool vnet_dev_adaptive_mode(const struct vnet_dev *dev, enum vnet_queue_kind kind)
{
	return kind != VNET_QUEUE_CTRL && dev->adaptive[kind_slot(kind)];
}

void vnet_dev_set_stall_guard(struct vnet_dev *dev, const struct vnet_stall_guard *g)
{
	dev->guard = *g;
	/* Held completions may be due under the new thresholds: re-check every queue. */
	for (unsigned i = 0; i < dev->nqueues; i++)
		if (dev->queues[i].kind != VNET_QUEUE_CTRL)
			notify_decide(dev, &dev->queues[i], NOTIFY_PARAMS_CHANGED, 0);
}

const struct vnet_stall_guard *vnet_dev_stall_guard(const struct vnet_dev *dev)
{
	return &dev->guard;
}

int vnet_dev_restore_coal(struct vnet_dev *dev, unsigned qidx, const struct coal_params *params,
			  enum coal_setter who)
{
	struct vnet_queue *q = dev_queue(dev, qidx);

	if (!q || q->kind == VNET_QUEUE_CTRL || (who != COAL_SET_GUEST && who != COAL_SET_HOST))
		return -1;
	dev_apply_coal(dev, q, params, who);
	return 0;
}
